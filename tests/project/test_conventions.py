"""CLI conventions of the field (issue 14): --format, `-` = stdin, -h/-V/--quiet, colour on a terminal
only, completion values, one-line usage errors, file modes, GitHub annotations, gate texts that
name the fix, make help. Each test failed before the change it names."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from cgplan.core.vllm.releases import SUPPORTED_VERSIONS
from cgplan.io.cost_coefficients import default_coefficients
from tests.cli_helpers import run, unwrap
from tests.paths import ROOT_DIR, capture_report

ROOT = ROOT_DIR
EXAMPLE = ROOT / "configs" / "examples" / "pr50488-eagle-k16.yaml"
PASSING = ROOT / "configs" / "gpu" / "tiny-nospec.yaml"
LOG = ROOT / "tests" / "data" / "logs" / "synthetic-v0.33.0-nospec-profiling.log"
SMALL = ROOT / "configs" / "gpu" / "tiny-nospec.yaml"  # a small ladder: optimize runs in a second
TRAFFIC = ROOT / "configs" / "traffic" / "decode-heavy-mns32.json"
LATENCY_RUN = ROOT / "benchmarks/results/h200/latency/call2/lat-llama-3.1-8b-eagle-k16-mns32-max544.json"
COST_REPORTS = tuple(capture_report(n) for n in default_coefficients().fitted_on)
"""The reports the shipped cost model was fitted on."""


@pytest.fixture(autouse=True)
def _from_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the bundled configs' relative model paths start from the root
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


# ------------------------------------------------------------------------------------ --format


@pytest.mark.parametrize(
    ("args", "alias"),
    [
        (("plan", str(EXAMPLE)), "--json"),
        (("plan", str(EXAMPLE)), "--markdown"),
        (("diff", str(EXAMPLE), "--vllm-version", "0.26.0..0.33.0"), "--json"),
        (("diff", str(EXAMPLE), "--vllm-version", "0.26.0..0.33.0"), "--markdown"),
        (("sweep", str(EXAMPLE), "--set", "max_num_seqs=8,16"), "--json"),
        (("logs", str(LOG)), "--json"),
        (("env",), "--json"),
        (("optimize", str(SMALL), "--traffic", str(TRAFFIC)), "--json"),
        (("optimize", str(SMALL), "--traffic", str(TRAFFIC)), "--markdown"),
        (("calibrate", *map(str, COST_REPORTS)), "--json"),
        (("calibrate", *map(str, COST_REPORTS)), "--markdown"),
        (("calibrate", "--latency", str(LATENCY_RUN)), "--json"),
        (("calibrate", "--latency", str(LATENCY_RUN)), "--markdown"),
    ],
)
def test_format_equals_its_alias(
    args: tuple[str, ...], alias: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code_a, by_alias, _ = run(monkeypatch, capsys, *args, alias)
    code_f, by_format, _ = run(monkeypatch, capsys, *args, "--format", alias.removeprefix("--"))
    assert code_a == code_f and code_a in (0, 1)
    assert by_format == by_alias


def test_format_html_and_gate_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(monkeypatch, capsys, "plan", str(EXAMPLE), "--format", "html")
    assert code == 0 and out.startswith("<!DOCTYPE html>")
    code, out, err = run(monkeypatch, capsys, "gate", str(EXAMPLE), "--format", "json")
    assert code == 1 and json.loads(out)["passed"] is False and "FAIL" in err


def test_optimize_and_calibrate_formats(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `No such option: --format` on both (and no markdown at all)."""
    code, table, _ = run(monkeypatch, capsys, "optimize", str(SMALL), "--traffic", str(TRAFFIC))
    code_t, by_format, _ = run(
        monkeypatch, capsys, "optimize", str(SMALL), "--traffic", str(TRAFFIC), "--format", "table"
    )
    assert (code, code_t) == (0, 0) and table == by_format and "expected step time" in table
    _, md, _ = run(
        monkeypatch, capsys, "optimize", str(SMALL), "--traffic", str(TRAFFIC), "--format", "markdown"
    )
    assert "| ladder | sizes | graphs | padded tokens | padding | eager steps | step ms | graph MiB |" in md
    assert "\n```bash\n'-cc.cudagraph_capture_sizes=[" in md
    _, js, _ = run(monkeypatch, capsys, "optimize", str(SMALL), "--traffic", str(TRAFFIC), "--format", "json")
    assert json.loads(js)["kind"] == "optimize"
    _, md, _ = run(monkeypatch, capsys, "calibrate", *map(str, COST_REPORTS), "--format", "markdown")
    assert (
        md.startswith("| set | report | measured MiB | predicted MiB |")
        and "| fit | `llama8b-mns256-vllm` |" in md
    )
    _, md, _ = run(monkeypatch, capsys, "calibrate", "--latency", str(LATENCY_RUN), "--format", "markdown")
    assert md.startswith(
        "| latency model | points | median error | within 10% |\n|---|---:|---:|---:|\n| fit | 46 |"
    )
    for cmd in (("optimize", str(SMALL), "--traffic", str(TRAFFIC)), ("calibrate", *map(str, COST_REPORTS))):
        code, out, err = run(monkeypatch, capsys, *cmd, "--format", "html")
        assert (code, out) == (
            2,
            "",
        ) and "this command has no html output (expected one of table, json, markdown)" in err


def test_optimize_and_calibrate_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `No such option: -q`; the "written to" line was always on stderr."""
    out_file = tmp_path / "o.json"
    code, _, err = run(
        monkeypatch, capsys, "optimize", str(SMALL), "--traffic", str(TRAFFIC), "-o", str(out_file)
    )
    assert code == 0 and err == f"cgplan: written to {out_file}\n"
    code, _, err = run(
        monkeypatch, capsys, "optimize", str(SMALL), "--traffic", str(TRAFFIC), "-o", str(out_file), "-q"
    )
    assert code == 0 and err == ""
    code, _, err = run(
        monkeypatch, capsys, "calibrate", *map(str, COST_REPORTS), "-o", str(tmp_path / "c.yaml"), "-q"
    )
    assert code == 0 and err == ""


def test_calibrate_dash_o_is_the_coefficients_on_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-o -` = stdout: before, `calibrate REPORTS -o -` was refused ("more than one output goes
    to stdout") and `calibrate --latency RUN -o -` printed its summary after the JSON, so neither
    could be piped into a file."""
    import yaml

    code, out, err = run(monkeypatch, capsys, "calibrate", *map(str, COST_REPORTS), "-o", "-")
    assert code == 0, err
    assert yaml.safe_load(out)["kind"] == "cgplan-cost-coefficients"
    assert "band shown with predictions" in err
    code, out, err = run(monkeypatch, capsys, "calibrate", "--latency", str(LATENCY_RUN), "-o", "-")
    assert code == 0 and json.loads(out)["kind"] == "cgplan-latency-coefficients"
    assert "latency model fitted on 46 points" in err
    code, out, err = run(monkeypatch, capsys, "calibrate", "--latency", str(LATENCY_RUN), "-o", "-", "-q")
    assert code == 0 and json.loads(out) and err == ""


def test_format_a_command_does_not_have(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(monkeypatch, capsys, "logs", str(LOG), "--format", "html")
    assert (code, out) == (2, "")
    assert err == (
        "cgplan logs: error: Invalid value for --format: this command has no html output "
        "(expected one of table, json) (see cgplan logs -h)\n"
    )


# --------------------------------------------------------------------------------- - = stdin


def test_dash_reads_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`kubectl logs POD | cgplan logs -` and `... | cgplan plan -` (before: "-: no such file")."""
    code, from_file, _ = run(monkeypatch, capsys, "logs", str(LOG), "--json")
    with contextlib.ExitStack() as streams:

        def stdin(data: bytes) -> None:
            monkeypatch.setattr(sys, "stdin", streams.enter_context(_stdin(data)))

        stdin(LOG.read_bytes())
        code_s, from_stdin, err = run(monkeypatch, capsys, "logs", "-", "--json")
        assert code_s == code and not err
        a, b = json.loads(from_file), json.loads(from_stdin)
        assert b.pop("source") == "<stdin>" and a.pop("source") == str(LOG)
        assert a == b
        stdin(EXAMPLE.read_bytes())
        code, out, _ = run(monkeypatch, capsys, "plan", "-", "--json")
        assert code == 0 and json.loads(out)["source"] == "<stdin>"
        stdin(EXAMPLE.read_bytes())
        code, out, _ = run(monkeypatch, capsys, "gate", "-")
        assert code == 1 and "FAIL <stdin>" in out


# ---------------------------------------------------------------------------- -h, -V, --quiet


def test_short_help_and_version(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(monkeypatch, capsys, "-V")
    assert code == 0 and re.fullmatch(r"cgplan \d+\.\d+\.\d+\n", out)
    for args in (("-h",), ("plan", "-h"), ("gate", "-h")):
        code, out, _ = run(monkeypatch, capsys, *args)
        assert code == 0 and "Usage: cgplan" in out, args


def test_quiet_drops_notes(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(monkeypatch, capsys, "plan", str(EXAMPLE), "--vllm-version", "0.33.1")
    assert code == 0 and "note: vLLM 0.33.1 planned with 0.33.0's rules" in err
    code, _, err = run(monkeypatch, capsys, "plan", str(EXAMPLE), "--vllm-version", "0.33.1", "--quiet")
    assert code == 0 and err == ""


@pytest.mark.parametrize(
    "args",
    [
        ("diff", str(EXAMPLE), str(PASSING)),
        ("gate", str(EXAMPLE)),
        ("optimize", str(SMALL), "--traffic", str(TRAFFIC)),
    ],
)
def test_patch_release_note_on_every_command(
    args: tuple[str, ...], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: only `plan` said that 0.33.1 was planned with 0.33.0's rules; diff, gate and
    optimize planned it silently."""
    _, _, err = run(monkeypatch, capsys, *args, "--vllm-version", "0.33.1")
    assert "cgplan: note: vLLM 0.33.1 planned with 0.33.0's rules" in err
    _, _, err = run(monkeypatch, capsys, *args, "--vllm-version", "0.33.1", "--quiet")
    assert "note:" not in err


def test_sweep_reads_releases_as_every_command_does(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: sweep refused v0.33.0, 0.33 and 0.33.1 ("unknown release") and had no did-you-mean."""
    base = ("sweep", str(EXAMPLE), "--set", "max_num_seqs=8,16", "--json")
    _, want, _ = run(monkeypatch, capsys, *base, "--vllm-version", "0.33.0")
    for spelled in ("v0.33.0", "0.33", "0.33.1"):
        code, out, err = run(monkeypatch, capsys, *base, "--vllm-version", spelled)
        assert code == 0 and json.loads(out) == json.loads(want), (spelled, err)
    _, _, err = run(monkeypatch, capsys, *base, "--vllm-version", "0.33.1")
    assert "note: vLLM 0.33.1 planned with 0.33.0's rules" in err
    code, _, err = run(monkeypatch, capsys, *base, "--vllm-version", "0.25.0")
    assert code == 2 and f"did you mean '{SUPPORTED_VERSIONS[0]}'?" in err


@pytest.mark.parametrize(
    "args",
    [
        ("gate", str(EXAMPLE), "--json", "-"),
        ("sweep", str(EXAMPLE), "--set", "max_num_seqs=16,32", "--json"),
        ("diff", str(EXAMPLE), "--vllm-version", "0.26.0..0.33.0", "--json"),
    ],
)
def test_platform_and_runner_on_every_command_that_plans(
    args: tuple[str, ...], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README says every command that reads a config takes --platform and --model-runner;
    before, diff, sweep and gate had neither ("No such option: --platform"). On a B200 the
    example's ceiling is 1024 (SM10x), so its gap at 31-32 requests closes."""
    code, hopper, _ = run(monkeypatch, capsys, *args)
    code_b, blackwell, err = run(monkeypatch, capsys, *args, "--platform", "B200", "--model-runner", "v2")
    assert code_b in (0, 1) and code in (0, 1), err
    assert json.loads(blackwell) != json.loads(hopper)
    assert "527..544" not in blackwell


def test_optimize_takes_model_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: optimize had no --model-config, though its own error told the user to give it."""
    hub = tmp_path / "hub.yaml"
    hub.write_text("model: meta-llama/Llama-3.2-1B\nmax_num_seqs: 32\n")
    code, _, err = run(monkeypatch, capsys, "optimize", str(hub), "--traffic", str(TRAFFIC))
    assert code == 2 and "--model-config" in err
    code, out, err = run(
        monkeypatch,
        capsys,
        "optimize",
        str(hub),
        "--traffic",
        str(TRAFFIC),
        "--model-config",
        str(ROOT / "configs/models/tiny-llama"),
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["expected_step_ms"]["optimized"] > 0


# ------------------------------------------------------------------------------------- colour


@pytest.mark.parametrize(
    "args",
    [
        ("gate", str(EXAMPLE)),
        ("diff", str(EXAMPLE), "--vllm-version", "0.26.0..0.33.0"),
        ("sweep", str(EXAMPLE), "--set", "max_num_seqs=8,64"),
        ("optimize", str(SMALL), "--traffic", str(TRAFFIC)),
    ],
)
def test_colour_on_a_terminal_only(
    args: tuple[str, ...], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, only plan and logs had colour."""
    _, plain, _ = run(monkeypatch, capsys, *args)
    assert "\x1b[" not in plain
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    _, coloured, _ = run(monkeypatch, capsys, *args)
    assert "\x1b[" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured).split() == plain.split()
    _, no_color, _ = run(monkeypatch, capsys, *args, "--no-color")
    monkeypatch.setenv("NO_COLOR", "1")
    _, env_off, _ = run(monkeypatch, capsys, *args)
    assert "\x1b[" not in no_color and "\x1b[" not in env_off


# --------------------------------------------------------------------------------- completion


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("cgplan plan --vllm-version 0.3", {v for v in SUPPORTED_VERSIONS if v.startswith("0.3")}),
        ("cgplan plan --platform h", {"hopper"}),
        ("cgplan plan --platform H", {"H100", "H100-NVL", "H200", "H800", "H20"}),
        ("cgplan gate --format j", {"json"}),
        # before: no values for diff's, sweep's and logs' own --vllm-version; gate had no --platform
        ("cgplan diff --vllm-version 0.3", {v for v in SUPPORTED_VERSIONS if v.startswith("0.3")}),
        ("cgplan sweep --vllm-version 0.3", {v for v in SUPPORTED_VERSIONS if v.startswith("0.3")}),
        ("cgplan logs --vllm-version 0.3", {v for v in SUPPORTED_VERSIONS if v.startswith("0.3")}),
        ("cgplan gate --platform H", {"H100", "H100-NVL", "H200", "H800", "H20"}),
        ("cgplan optimize --format m", {"markdown"}),
    ],
)
def test_completion_values(words: str, expected: set[str]) -> None:
    env = {
        **os.environ,
        "_CGPLAN_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - 1),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "cgplan"], env=env, capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert set(proc.stdout.split()) == expected


# ------------------------------------------------------------------------- one-line usage errors


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ("plan", "--jsn"),
            "cgplan plan: error: No such option: --jsn (Possible options: --json) (see cgplan plan -h)",
        ),
        (("gate",), "cgplan gate: error: Missing argument 'targets'. (see cgplan gate -h)"),
        (("bogus",), "cgplan: error: No such command 'bogus'. Did you mean 'logs'? (see cgplan -h)"),
        (("plan", str(EXAMPLE), "--max-num-seqs", "3"), None),
    ],
)
def test_usage_errors_are_one_line(
    args: tuple[str, ...],
    line: str | None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before: typer's rich box of 5+ lines."""
    code, out, err = run(monkeypatch, capsys, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "╭" not in err
    if line is not None:
        assert err == line + "\n"


# ---------------------------------------------------------------------------------- file modes


def test_artifacts_get_the_umask_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: 0600 whatever the umask (mkstemp's mode)."""
    old = os.umask(0o022)
    try:
        code, _, _ = run(monkeypatch, capsys, "plan", str(EXAMPLE), "--json", "-o", str(tmp_path / "p.json"))
        os.umask(0o027)
        code2, _, _ = run(monkeypatch, capsys, "plan", str(EXAMPLE), "--html", str(tmp_path / "p.html"))
    finally:
        os.umask(old)
    assert (code, code2) == (0, 0)
    assert (tmp_path / "p.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "p.html").stat().st_mode & 0o777 == 0o640


# --------------------------------------------------------------------------------------- gate


IN_YAML = "; in the YAML: max_cudagraph_capture_size: 544"
"""A YAML target's fix also as the line to paste into it (#28)."""


def test_gate_failure_names_the_fix_and_the_figures(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, wrapped, _ = run(monkeypatch, capsys, "gate", str(EXAMPLE))
    assert code == 1
    out = "\n".join(unwrap(wrapped)) + "\n"  # lines wrap at spaces: compared unwrapped
    # the MiB are the cost model's (they move with its fit); the rest is the gate's own wording
    mib = re.search(r"predicted (\d+) → (\d+) MiB, expected step 3\.02", out)
    assert mib is not None and int(mib.group(2)) - int(mib.group(1)) in (0, 1)
    fix = (
        "fix: --max-cudagraph-capture-size 544 "
        f"(graphs 178 → 177, predicted {mib.group(1)} → {mib.group(2)} MiB, "
        f"expected step 3.02 → 2.88 ms{IN_YAML})\n"
    )
    assert (
        "  FAIL no_eager_uniform_decode: eager: 31-32 requests × 17 (527..544 tokens): 2 of 32 request "
        "counts; they cost +0.146 ms of the expected 3.02 ms step (4.8%) (extrapolated: hidden size 256 "
        "is outside the measured 512..5120); " + fix
    ) in out
    assert (
        "  FAIL widest_decode_full: 32 requests × 17 (544 tokens) → NONE "
        "(+2.33 ms per such step vs a FULL graph); " + fix in out
    )
    # a passing check states its figure beside its limit; the eager share is stated without a limit
    assert "  ok   max_graphs_per_family[*]: 85 ≤ 400 (target, the largest of 3 families)\n" in out
    assert "  info max_eager_time_share: 11.0% of the expected 3.02 ms step is eager (no limit set" in out


def test_gate_eager_time_failure_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the max_eager_time_share failure gave the figures but not the flag that fixes it
    (the coverage checks did); the fix is named once its re-planned share is within the limit."""
    policy = tmp_path / "p.yaml"
    policy.write_text("max_eager_time_share: 0.05\n")
    code, wrapped, _ = run(monkeypatch, capsys, "gate", str(EXAMPLE), "--policy", str(policy))
    assert code == 1
    out = "\n".join(unwrap(wrapped)) + "\n"
    assert (
        "  FAIL max_eager_time_share: 11.0% > 5.0% of the expected 3.02 ms step is eager; "
        f"fix: --max-cudagraph-capture-size 544 (0.0% eager after it{IN_YAML})\n"
    ) in out


def test_github_annotations(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    rel = str(EXAMPLE.relative_to(ROOT))
    code, out, _ = run(monkeypatch, capsys, "gate", rel, str(PASSING.relative_to(ROOT)))
    assert code == 1 and "::error" not in out
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, _ = run(monkeypatch, capsys, "gate", rel, str(PASSING.relative_to(ROOT)))
    lines = [x for x in out.splitlines() if x.startswith("::")]
    # line 9: num_speculative_tokens (the fix's key, compilation_config, is not in the file)
    assert [x.split("::")[1] for x in lines] == [
        f"error file={rel},line=9,title=cgplan gate%3A no_eager_uniform_decode",
        f"error file={rel},line=9,title=cgplan gate%3A widest_decode_full",
    ]
    assert "(4.8%25)" in lines[0]  # GitHub's escaping of %
    code, out, err = run(monkeypatch, capsys, "gate", rel, "--json", "-")
    assert json.loads(out)["passed"] is False and err.count("::error file=") == 2  # stdout stays JSON


# ---------------------------------------------------------------------------------- make help


def test_make_help_lists_every_target() -> None:
    makefile = (ROOT / "Makefile").read_text()
    phony = re.search(r"^\.PHONY: (.*)$", makefile, re.M)
    assert phony is not None
    documented = set(re.findall(r"^## ([\w-]+):", makefile, re.M))
    assert set(phony.group(1).split()) <= documented
    proc = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and all(t in proc.stdout for t in documented)


def _stdin(data: bytes) -> io.TextIOWrapper:
    """A stdin with a real file descriptor (the reader reads `-` from the descriptor, with a
    time-out when it is a pipe); the caller closes it."""
    f = tempfile.TemporaryFile()  # noqa: SIM115 (it is the stdin the test reads; closed with it)
    f.write(data)
    f.seek(0)
    return io.TextIOWrapper(f, encoding="utf-8")


def test_one_token_per_request_headline(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "uniform decode = 1 tokens per request" on every plan without speculation."""
    code, out, _ = run(monkeypatch, capsys, "plan", str(PASSING))
    assert code == 0 and "· uniform decode = 1 token per request ·" in unwrap(out)[2]
