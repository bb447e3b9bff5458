"""CLI conventions of the field (#14): --format, `-` = stdin, -h/-V/--quiet, colour on a terminal
only, completion values, one-line usage errors, file modes, GitHub annotations, gate texts that
name the fix, make help. Each test failed before the change it names."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cgplan.core.vllm.releases import SUPPORTED_VERSIONS
from tests.cli_helpers import run

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "configs" / "examples" / "pr50488-eagle-k16.yaml"
PASSING = ROOT / "configs" / "gpu" / "tiny-nospec.yaml"
LOG = ROOT / "tests" / "data" / "logs" / "synthetic-v0.33.0-nospec-profiling.log"


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


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_dash_reads_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`kubectl logs POD | cgplan logs -` and `... | cgplan plan -` (before: "-: no such file")."""
    code, from_file, _ = run(monkeypatch, capsys, "logs", str(LOG), "--json")
    monkeypatch.setattr(sys, "stdin", _stdin(LOG.read_bytes()))
    code_s, from_stdin, err = run(monkeypatch, capsys, "logs", "-", "--json")
    assert code_s == code and not err
    a, b = json.loads(from_file), json.loads(from_stdin)
    assert b.pop("source") == "<stdin>" and a.pop("source") == str(LOG)
    assert a == b
    monkeypatch.setattr(sys, "stdin", _stdin(EXAMPLE.read_bytes()))
    code, out, _ = run(monkeypatch, capsys, "plan", "-", "--json")
    assert code == 0 and json.loads(out)["source"] == "<stdin>"
    monkeypatch.setattr(sys, "stdin", _stdin(EXAMPLE.read_bytes()))
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


# ------------------------------------------------------------------------------------- colour


@pytest.mark.parametrize(
    "args",
    [
        ("gate", str(EXAMPLE)),
        ("diff", str(EXAMPLE), "--vllm-version", "0.26.0..0.33.0"),
        ("sweep", str(EXAMPLE), "--set", "max_num_seqs=8,64"),
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


def test_gate_failure_names_the_fix_and_the_figures(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(monkeypatch, capsys, "gate", str(EXAMPLE))
    assert code == 1
    assert (
        "  FAIL no_eager_uniform_decode: eager: 31-32 requests × 17 (527..544 tokens); "
        "fix: --max-cudagraph-capture-size 544\n"
    ) in out
    assert (
        "  FAIL widest_decode_full: 32 requests × 17 (544 tokens) → NONE; "
        "fix: --max-cudagraph-capture-size 544\n"
    ) in out


def test_github_annotations(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    rel = str(EXAMPLE.relative_to(ROOT))
    code, out, _ = run(monkeypatch, capsys, "gate", rel, str(PASSING.relative_to(ROOT)))
    assert code == 1 and "::error" not in out
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, _ = run(monkeypatch, capsys, "gate", rel, str(PASSING.relative_to(ROOT)))
    lines = [x for x in out.splitlines() if x.startswith("::")]
    assert lines == [
        f"::error file={rel},title=cgplan gate%3A no_eager_uniform_decode::eager: 31-32 requests × 17 "
        "(527..544 tokens); fix: --max-cudagraph-capture-size 544",
        f"::error file={rel},title=cgplan gate%3A widest_decode_full::32 requests × 17 (544 tokens) → NONE; "
        "fix: --max-cudagraph-capture-size 544",
    ]
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


def _stdin(data: bytes) -> object:
    """A stdin with a real file descriptor (the reader reads `-` from the descriptor, with a
    time-out when it is a pipe)."""
    import io
    import tempfile

    f = tempfile.TemporaryFile()  # noqa: SIM115 (it is the stdin the test reads; closed with it)
    f.write(data)
    f.seek(0)
    return io.TextIOWrapper(f, encoding="utf-8")
