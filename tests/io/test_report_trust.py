"""Issue issue 21: reports are data to judge, never something that fools the gate, reads other
files or stalls a comparison."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgplan.core.compare.sides import Side, coverage_moves, decode_gaps, padding
from cgplan.core.model.types import DispatchRange
from cgplan.io.output import write_atomically
from tests.cli_helpers import run, unwrap
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
H200 = ROOT / "benchmarks/results/h200"
TINY_REPORT = H200 / "tiny-eagle-k16-vllm.json"


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc))
    return path


# --- 1. a report's status is data -------------------------------------------------------------

FAULTS = H200 / "faults"
DEFAULT_GATE = ROOT / "configs/gates/default.yaml"


@pytest.mark.parametrize(
    ("name", "failure", "missing"),
    [
        ("oom-eagle", "capture failed (out of memory)", "51 of 169 planned graphs captured"),
        ("oom-torch-8b", "out of memory during capture", "30 of 86 planned graphs captured"),
        ("sigint-tiny", "interrupted (SIGINT)", "8 of 18 planned graphs captured (missing target 10)"),
        ("sigterm-tiny", "terminated (SIGTERM)", "8 of 18 planned graphs captured (missing target 10)"),
    ],
)
def test_fault_reports_fail_the_default_gate_naming_the_failure(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, failure: str, missing: str
) -> None:
    # They passed with exit 0 ("gate passed: 1/1"): an empty dispatch table made every check true.
    report = FAULTS / f"{name}.json"
    code, out, err = run(monkeypatch, capsys, "gate", "--policy", str(DEFAULT_GATE), str(report))
    assert code == 1, (out, err)
    lines = unwrap(out)
    assert lines[0].startswith(f"gate failed: 0/1 targets pass · {report}: 4 checks fail (capture_complete")
    assert lines[1] == f"FAIL {report}"
    checks = lines[2:]
    assert len(checks) == 4 and all(line.startswith("  FAIL ") for line in checks)
    assert all(f"capture partial ({failure}" in line for line in checks)
    assert checks.pop(0).startswith("  FAIL capture_complete: capture partial (")
    assert "no uniform-decode outcome for 1-" in checks[0] and "no uniform-decode outcome" in checks[1]
    assert missing in checks[2]


def test_fault_reports_fail_the_gate_script(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHON": sys.executable, "PATH": "/usr/bin:/bin"}
    faults = sorted(str(p) for p in FAULTS.glob("*.json"))
    assert len(faults) == 4
    r = subprocess.run(
        [str(ROOT / "scripts/cgplan-gate"), "--policy", str(DEFAULT_GATE), *faults],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith("gate failed: 0/4 targets pass · ")


def plan_report(tmp_path: Path, **changes: Any) -> Path:
    code_doc = json.loads((H200 / "tiny-nospec-vllm.json").read_text())["plan"]
    code_doc.update(changes)
    return write(tmp_path / "plan.json", code_doc)


def test_checks_on_an_empty_dispatch_table_fail_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "no_piecewise_uniform_decode: true\nmax_decode_padding_ratio: 2\nmax_total_graphs: 500\n"
    )
    empty = plan_report(tmp_path, uniform_decode={}, graphs={})
    code, out, _ = run(monkeypatch, capsys, "gate", str(empty), "--policy", str(policy))
    assert code == 1
    fails = {line.split(":")[0].split()[-1]: line for line in out.splitlines() if line.startswith("  FAIL")}
    assert set(fails) == {
        "no_eager_uniform_decode",
        "no_piecewise_uniform_decode",
        "widest_decode_full",
        "max_total_graphs",
        "max_decode_padding_ratio",
    }
    assert fails["no_eager_uniform_decode"].endswith(
        "no uniform-decode outcome for 1-32 requests × 1 (1..32 tokens)"
    )
    assert "no graphs at all" in fails["max_total_graphs"]


def test_a_table_that_covers_part_of_the_tier_fails_naming_the_rest(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = json.loads((H200 / "tiny-nospec-vllm.json").read_text())["plan"]
    short = [r for r in doc["uniform_decode"]["1"] if r["to_reqs"] <= 8]
    report = plan_report(tmp_path, uniform_decode={"1": short})
    code, out, _ = run(monkeypatch, capsys, "gate", str(report))
    assert code == 1
    assert (
        "  FAIL no_eager_uniform_decode: no uniform-decode outcome for 9-32 requests × 1 (9..32 tokens)"
        in out
    )


def test_padding_check_with_no_replayed_batch_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    eager = [{"from_reqs": 1, "to_reqs": 32, "mode": "NONE", "padded_tokens": None, "padded_reqs": None}]
    report = plan_report(tmp_path, uniform_decode={"1": eager})
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "no_eager_uniform_decode: false\nwidest_decode_full: false\nmax_decode_padding_ratio: 2\n"
    )
    code, out, _ = run(monkeypatch, capsys, "gate", str(report), "--policy", str(policy))
    assert code == 1
    assert "  FAIL max_decode_padding_ratio: q=1: no graph-replayed decode batch to measure" in out


def test_partial_baseline_is_refused_unless_allowed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    base = FAULTS / "sigint-tiny.json"
    target = ROOT / "configs/gpu/tiny-nospec.yaml"
    code, out, err = run(
        monkeypatch, capsys, "gate", str(target), "--baseline", str(base), "--vllm-version", "0.26.0"
    )
    assert (code, out) == (2, "")
    assert err == (
        f"cgplan: error: {base}:status: the baseline is a partial capture (interrupted (SIGINT); the partial "
        "report was kept); give a complete one, or --allow-partial-baseline to compare against what it has\n"
    )
    code, out, _ = run(
        monkeypatch,
        capsys,
        "gate",
        str(target),
        "--baseline",
        str(base),
        "--vllm-version",
        "0.26.0",
        "--allow-partial-baseline",
    )
    # Allowed, but the regression checks still cannot hold for nothing: the baseline has no
    # decode outcome at all, and a graph count of a partial capture is only a lower bound.
    assert code == 1
    assert "  FAIL no_regression: baseline " in out and "nothing to compare" in out
    assert "  FAIL max_graph_growth_pct: 8 → 18 graphs (+125.0% > 10%)" in out


def test_diff_shows_a_partial_capture(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    args = (
        "diff",
        str(ROOT / "configs/gpu/tiny-nospec.yaml"),
        str(FAULTS / "sigint-tiny.json"),
        "--vllm-version",
        "0.26.0",
    )
    code, out, _ = run(monkeypatch, capsys, *args)
    assert code == 0
    assert out.splitlines()[1] == f"B: {FAULTS / 'sigint-tiny.json'} (capture, partial, vLLM 0.26.0)"
    assert out.splitlines()[2].startswith("B is a partial capture (interrupted (SIGINT)")
    code, out, _ = run(monkeypatch, capsys, *args, "--json")
    doc = json.loads(out)
    assert (doc["a"]["status"], doc["b"]["status"]) == ("complete", "partial")
    assert doc["b"]["failure"] == "interrupted (SIGINT); the partial report was kept"


@pytest.mark.parametrize("status", [None, "done", 3])
def test_capture_report_needs_a_known_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, status: Any
) -> None:
    doc = json.loads((FAULTS / "sigint-tiny.json").read_text())
    if status is None:
        del doc["status"]  # deleting it must not make a partial capture pass for complete
    else:
        doc["status"] = status
    report = write(tmp_path / "r.json", doc)
    code, out, err = run(monkeypatch, capsys, "gate", str(report))
    assert (code, out) == (2, "")
    assert err.startswith(f"cgplan: error: {report}:status: expected one of complete, partial, failed (got ")


# --- 3. comparisons in O(ranges) -------------------------------------------------------------


class CountingRanges(tuple):  # type: ignore[type-arg]
    """A range table that counts how often a comparison looks at one of its entries."""

    reads = 0

    def __getitem__(self, i: Any) -> Any:
        CountingRanges.reads += 1
        return super().__getitem__(i)

    def __iter__(self) -> Any:
        for i in range(len(self)):
            yield self[i]


def one_request_side(n: int, mode_of: Any = lambda i: "FULL") -> Side:
    ranges = tuple(DispatchRange(i, i, mode_of(i), 17 * i, i) for i in range(1, n + 1))
    return Side(
        "x",
        "capture",
        "0.26.0",
        None,
        n,
        17,
        {},
        {17: CountingRanges(ranges)},
        tuple((i, i, 16) for i in range(1, n + 1)),
    )


def test_decode_runs_reads_each_range_a_bounded_number_of_times() -> None:
    # 10,000 one-request ranges against 10,000 one-batch tier runs: the pairwise walk read
    # 10^8 entries (90 s); a merge reads each a constant number of times.
    n = 10_000
    side = one_request_side(n)
    CountingRanges.reads = 0
    runs = side.decode_runs(17)
    assert len(runs) == n
    assert CountingRanges.reads <= 3 * n


def test_report_with_10000_one_request_ranges_is_answered(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The report of the issue (under 1 MB of ranges took 90 s in gate and diff): it completes
    # here because every comparison is a merge (see the operation count above).
    doc = json.loads(TINY_REPORT.read_text())
    n = 10_000
    rows = [
        {
            "from_reqs": i,
            "to_reqs": i,
            "mode": "FULL" if i % 3 else "PIECEWISE",
            "padded_tokens": 17 * i,
            "padded_reqs": i,
        }
        for i in range(1, n + 1)
    ]
    doc["plan"]["uniform_decode"] = {"17": rows}
    doc["measured"]["uniform_decode"] = {"17": rows}
    doc["plan"]["max_num_seqs"] = n
    doc["plan"]["dynamic_sd"] = {"lookup": [[i, i, 16] for i in range(1, n + 1)]}
    big = write(tmp_path / "big.json", doc)
    code, out, _ = run(
        monkeypatch, capsys, "gate", str(big), "--policy", str(ROOT / "configs/gates/default.yaml")
    )
    assert code == 0 and out.startswith("gate passed: 1/1 targets pass\n")
    code, out, _ = run(monkeypatch, capsys, "diff", str(big), str(TINY_REPORT), "--json")
    assert code == 0
    moves = json.loads(out)["coverage_moves"]
    assert moves[0] == {
        "query_len": 17,
        "first_reqs": 3,
        "last_reqs": 3,
        "mode_a": "PIECEWISE",
        "mode_b": "FULL",
    }


def test_report_size_is_bounded_with_a_located_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("w") as fh:
        fh.write('{"schema_version": 1, "pad": "')
        fh.write("x" * (33 << 20))
        fh.write('"}')
    code, out, err = run(monkeypatch, capsys, "gate", str(huge))
    assert code == 2 and out == ""
    assert err == f"cgplan: error: {huge}: is 33 MiB, larger than a report may be (32 MiB)\n"


def _naive_modes(side: Side, ql: int) -> dict[int, tuple[str, int | None]]:
    out: dict[int, tuple[str, int | None]] = {}
    for lo, hi in side.tier_batches(ql):
        for r in side.uniform_decode.get(ql, ()):
            for n in range(max(lo, r.first), min(hi, r.last) + 1):
                out[n] = (r.mode, r.padded_tokens)
    return out


def _naive_moves(a: Side, b: Side, ql: int) -> list[tuple[int, int, str, str]]:
    ma, mb = _naive_modes(a, ql), _naive_modes(b, ql)
    out: list[tuple[int, int, str, str]] = []
    for n in sorted(set(ma) | set(mb)):
        xa = ma[n][0] if n in ma else "-"
        xb = mb[n][0] if n in mb else "-"
        if xa == xb:
            continue
        if out and out[-1][1] == n - 1 and out[-1][2:] == (xa, xb):
            out[-1] = (out[-1][0], n, xa, xb)
        else:
            out.append((n, n, xa, xb))
    return out


@st.composite
def sorted_runs(draw: st.DrawFn, limit: int = 60) -> list[tuple[int, int]]:
    cuts = sorted(draw(st.sets(st.integers(1, limit), max_size=16)))
    runs = []
    for lo, hi in zip(cuts[::2], cuts[1::2], strict=False):
        runs.append((lo, hi))
    return runs


@st.composite
def sides(draw: st.DrawFn) -> Side:
    ranges = tuple(
        DispatchRange(
            lo,
            hi,
            draw(st.sampled_from(["FULL", "PIECEWISE", "NONE"])),
            draw(st.sampled_from([None, 40, 99])),
        )
        for lo, hi in draw(sorted_runs())
    )
    lookup = None
    if draw(st.booleans()):
        lookup = tuple((lo, hi, draw(st.sampled_from([0, 2]))) for lo, hi in draw(sorted_runs()))
    return Side("s", "plan", "0.26.0", None, draw(st.integers(1, 60)), 3, {}, {3: ranges, 1: ranges}, lookup)


@settings(max_examples=300, deadline=None)
@given(sides(), sides())
def test_merged_comparisons_equal_the_request_by_request_walk(a: Side, b: Side) -> None:
    for ql in (1, 3):
        assert a.decode_modes(ql) == _naive_modes(a, ql)
        assert list(coverage_moves(a, b, ql)) == _naive_moves(a, b, ql)
        naive = _naive_modes(a, ql)
        padded = sum(t for m, t in naive.values() if m != "NONE" and t is not None)
        real = sum(n * ql for n, (m, t) in naive.items() if m != "NONE" and t is not None)
        assert padding(a, ql) == (padded, real)
        missing = [n for lo, hi in a.tier_batches(ql) for n in range(lo, hi + 1) if n not in naive]
        assert [n for lo, hi in a.missing_decode(ql) for n in range(lo, hi + 1)] == missing
    gaps = [
        (ql, n, m) for ql in a.query_lens for n, (m, _) in sorted(_naive_modes(a, ql).items()) if m != "FULL"
    ]
    assert [(ql, n, m) for ql, lo, hi, m in decode_gaps(a) for n in range(lo, hi + 1)] == gaps


# --- 2. a report never makes cgplan open another file -------------------------------------------

SECRET = "hunter2-TOKEN-do-not-print"
COST_REPORT = H200 / "cost/fit-llama3b-mns128-vllm.json"


def calibrate_with_source(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    source: str,
    *extra: str,
) -> tuple[int, str, str]:
    work = tmp_path / "work"
    (work / "reports").mkdir(parents=True, exist_ok=True)
    doc = json.loads(COST_REPORT.read_text())
    doc["source"] = source
    report = write(work / "reports/r.json", doc)
    monkeypatch.chdir(work)
    return run(monkeypatch, capsys, "calibrate", str(report), *extra)


@pytest.mark.parametrize("how", ["absolute", "dotdot", "parent-search", "link", "not-yaml"])
def test_calibrate_never_opens_a_file_outside_the_named_folder(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, how: str
) -> None:
    # A report's `source` was opened as given (absolute, `../`, or searched in every parent
    # folder of the report) and the error quoted its first characters into a CI log.
    secret = tmp_path / "secret.yaml"
    secret.write_text(f"{SECRET}: 1\n")
    (tmp_path / "work").mkdir()
    source = {
        "absolute": str(secret),
        "dotdot": "../secret.yaml",
        "parent-search": "secret.yaml",  # beside the report's grandparent, not in the working dir
        "link": "inside.yaml",
        "not-yaml": "secret.txt",
    }[how]
    if how == "link":
        (tmp_path / "work/inside.yaml").symlink_to(secret)
    if how == "not-yaml":
        (tmp_path / "work/secret.txt").write_text(SECRET)
    opened: list[str] = []
    real_open = Path.open

    def spy(self: Path, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", spy)
    code, out, err = calibrate_with_source(monkeypatch, capsys, tmp_path, source)
    assert (code, out) == (2, "")
    assert SECRET not in err and err.count("\n") == 1
    assert err.startswith("cgplan: error: ") and ":source: " in err
    assert not any("secret" in p for p in opened), opened


def test_calibrate_does_not_quote_the_config_a_report_names(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work/creds.yaml").write_text(f"aws_secret_access_key: {SECRET}\n")
    code, out, err = calibrate_with_source(monkeypatch, capsys, tmp_path, "creds.yaml")
    assert (code, out) == (2, "")
    assert SECRET not in err and "aws_secret_access_key" not in err
    report = tmp_path / "work/reports/r.json"
    assert err == (
        f"cgplan: error: {report}:source: its config creds.yaml does not load "
        f"(`cgplan plan creds.yaml` in {tmp_path / 'work'} says why)\n"
    )


def test_calibrate_reads_the_config_inside_the_named_folder(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = json.loads(COST_REPORT.read_text())["source"]
    code, out, err = calibrate_with_source(
        monkeypatch, capsys, tmp_path, source, "--configs", str(ROOT), "--json"
    )
    # One report reached the fit (its config was read from ROOT): too few to fit on.
    assert (code, out) == (2, "")
    assert err.startswith("cgplan: error: ") and ": cannot fit the cost model on these reports: " in err


# --- 4. output: streams, stdout, all or nothing ---------------------------------------------------

PR = ROOT / "configs/examples/pr50488-eagle-k16.yaml"


def _with_absolute_model(text: str) -> str:
    relative = "model: configs/models/tiny-llama"
    assert relative in text
    return text.replace(relative, f"model: {ROOT / 'configs/models/tiny-llama'}")


def cgplan_sh(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`cgplan` in a shell (for redirections the test harness cannot make), in `cwd`: the
    vllm#50488 config is copied there with its model folder made absolute, since a relative `model:`
    is read from the working directory, as vLLM reads it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if str(PR) in command:
        copy = cwd / PR.name
        copy.write_text(_with_absolute_model(PR.read_text()))
        command = command.replace(str(PR), str(copy))
    return subprocess.run(
        ["/bin/sh", "-c", command.replace("cgplan ", f"{shlex.quote(sys.executable)} -m cgplan ")],
        capture_output=True,
        text=True,
        errors="surrogateescape",
        env=env,
        cwd=cwd,
        check=False,
    )


def test_stdout_on_a_full_disk_is_one_line_exit_2(tmp_path: Path) -> None:
    # `--json > file` on a full disk exited 0 with a truncated file (the short write ignored).
    for args in (f"plan {PR}", f"plan {PR} --json", f"gate {PR} --json -", "plan --help"):
        r = cgplan_sh(f"cgplan {args} > /dev/full", tmp_path)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.endswith("cgplan: error: <stdout>: cannot write: No space left on device\n"), r.stderr
        assert "Traceback" not in r.stderr


def test_closed_stdout_is_one_line_exit_2(tmp_path: Path) -> None:
    r = cgplan_sh(f"cgplan plan {PR} >&-", tmp_path)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == "cgplan: error: <stdout>: cannot write: stdout is closed (give -o FILE)\n"
    # a command that writes only files does not need stdout
    r = cgplan_sh(f"cgplan plan {PR} -o plan.txt >&-", tmp_path)
    assert (r.returncode, r.stderr) == (0, "")
    assert (tmp_path / "plan.txt").read_text().startswith("verdict: ")


def test_a_reader_that_goes_away_is_silent(tmp_path: Path) -> None:
    r = cgplan_sh(f"cgplan plan {PR} --full | true; cgplan gate {PR} | true", tmp_path)
    assert r.stderr == ""


def test_o_dash_is_stdout_on_every_command(tmp_path: Path) -> None:
    commands = [
        f"plan {PR} -o -",
        f"plan {PR} -o plan.txt --html -",
        f"diff {PR} --vllm-version 0.26.0..0.33.0 -o -",
        f"sweep {PR} --set max_num_seqs=8..9 -o -",
        f"gate {PR} --markdown -",
        f"gate {PR} --junit -",
        f"gate {PR} --json -",
    ]
    if (ROOT / "tests/data/logs").is_dir():
        first = sorted((ROOT / "tests/data/logs").iterdir())[0]
        commands.append(f"logs {first} -o -")
    for c in commands:
        r = cgplan_sh(f"cgplan {c}", tmp_path)
        assert r.returncode in (0, 1), (c, r.stderr)
        assert len(r.stdout) > 50, c
        assert not (tmp_path / "-").exists(), c
    r = cgplan_sh(f"cgplan plan {PR} --html -", tmp_path)  # the plan's table is on stdout already
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == (
        "cgplan: error: -: more than one output goes to stdout (--html and the command's own output); "
        "name a file for all but one\n"
    )


def test_o_to_a_fifo_or_descriptor_writes_it_and_never_replaces_it(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = cgplan_sh(f"timeout 60 cat {fifo} > got.txt & cgplan plan {PR} -o {fifo}; wait", tmp_path)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert (tmp_path / "got.txt").read_text().startswith("verdict: ")
    r = cgplan_sh(f"cgplan plan {PR} -o /dev/fd/1 | head -c 8", tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (0, "verdict:", "")


def test_o_to_a_folder_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(monkeypatch, capsys, "plan", str(PR), "-o", str(tmp_path))
    assert (code, out) == (2, "")
    assert err == f"cgplan: error: {tmp_path}: cannot write: a folder; refusing to replace it (name a file)\n"


def test_undecodable_file_names_are_shown_escaped(tmp_path: Path) -> None:
    text = _with_absolute_model(PR.read_text())
    name = os.fsdecode(b"\xff-x.yaml")
    (tmp_path / name).write_text(text)
    r = cgplan_sh("cgplan plan \"$(printf '\\377-x.yaml')\" | grep -F x.yaml", tmp_path)
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.rstrip().endswith("\\udcff-x.yaml")


def test_a_failed_command_leaves_none_of_its_artifacts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good, bad = tmp_path / "verdict.json", tmp_path / "no-such-dir/junit.xml"
    code, _, err = run(monkeypatch, capsys, "gate", str(PR), "--json", str(good), "--junit", str(bad))
    assert code == 2 and "junit.xml: cannot write: No such file or directory" in err
    assert not good.exists()
    plan_txt = tmp_path / "plan.txt"
    code, _, _ = run(monkeypatch, capsys, "plan", str(PR), "-o", str(plan_txt), "--html", str(bad))
    assert code == 2 and not plan_txt.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_no_temporary_file_is_left_by_a_signal_during_a_write(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, how: str
) -> None:
    target = tmp_path / "plan.txt"
    target.write_text("old\n")

    def interrupted(fd: int) -> None:
        if how == "ctrl-c":
            raise KeyboardInterrupt
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomically(target, "new\n" * 100_000)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.txt"]


def test_a_replaced_file_keeps_its_mode_and_a_link_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    real.chmod(0o644)
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_atomically(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert stat.S_IMODE(real.stat().st_mode) == 0o644


# --- 5. the sweep's bound and the log patterns -------------------------------------------------


def test_a_repeated_sweep_axis_counts_in_the_walk_bound(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Repeating an axis skipped the bound: 199 × 1,001 plans of a million requests each (days).
    import cgplan.api.sweep

    def walked(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the grid was walked, not refused")

    monkeypatch.setattr(cgplan.api.sweep, "sweep", walked)
    code, out, err = run(
        monkeypatch,
        capsys,
        "sweep",
        str(PR),
        "--set",
        "max_num_seqs=1..199",
        "--set",
        "max_num_seqs=999000..1000000",
        "--set",
        "max_num_batched_tokens=10000000",
    )
    assert (code, out) == (2, "")
    assert err.startswith("cgplan: error: --set: 199,199 plans walking 199,099,400,500 request counts in all")


# Each line makes one of vLLM's log patterns work hard on every attempt (a prefix repeated
# without what must follow it): searched by a backtracking engine, quadratic in the line.
CRAFTED_LINES = {
    "runner_fallback": "Model Runner V2 does not yet support 1 ",
    "speculator_capture": "Capturing model for 1 ",
    "non_default_args": "non-default args: {",
    "profiling_group": "1",
    "bar": "Capturing ",
    "bar_paren": "Capturing CUDA graphs (",
    "mode_downgrade": "CUDAGraphMode.FULL is not supported with X backend (support: ",
}


@pytest.mark.parametrize("name", sorted(CRAFTED_LINES))
def test_log_patterns_are_linear_on_a_crafted_long_line(name: str, tmp_path: Path) -> None:
    # 500,000 characters: these took minutes to hours (profiling_group: 18 s at 20,000);
    # linear patterns take milliseconds. The alarm is a generous bound that turns a hang into
    # a failure, not a timing assertion.
    from cgplan.core.logs.parse import LogError
    from cgplan.core.vllm.log_formats import LOG_FORMATS
    from cgplan.io.logs import parse_file

    unit = CRAFTED_LINES[name]
    line = unit * (500_000 // len(unit))
    pattern = getattr(LOG_FORMATS[-1], name.removesuffix("_paren"))

    def too_slow(signum: int, frame: Any) -> None:
        raise TimeoutError(f"{name}: not linear on a crafted line")

    old = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(30)
    try:
        list(pattern.finditer(line))
        log = tmp_path / "vllm.log"
        log.write_text(f"INFO 01-01 00:00:00 [core.py:1] {line}\n")
        with contextlib.suppress(LogError):  # not a vLLM log: refused, once it was read
            parse_file(log)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# --- 6. fingerprints, model shapes, control characters, options that cannot apply ----------------

TINY_CONFIG = ROOT / "configs/gpu/tiny-eagle-k16.yaml"


def test_a_report_without_a_fingerprint_is_not_compared(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Deleting config_fingerprint bypassed the mismatch check (None matched anything).
    doc = json.loads(TINY_REPORT.read_text())
    del doc["config_fingerprint"]
    report = write(tmp_path / "r.json", doc)
    other = H200 / "tiny-eagle-k16-max544-vllm.json"
    expected = (
        f"cgplan: error: {report}:config_fingerprint: missing (expected the fingerprint of the config "
        "the report was made from, as plan --json and capture write it)\n"
    )
    code, out, err = run(monkeypatch, capsys, "diff", str(report), str(other))
    assert (code, out, err) == (2, "", expected)
    code, out, _ = run(monkeypatch, capsys, "diff", str(report), str(other), "--allow-mismatch")
    assert code == 0 and out.startswith("A: ")
    # gate --baseline compares too: both the baseline and the targets must say what they are
    code, out, err = run(monkeypatch, capsys, "gate", str(TINY_REPORT), "--baseline", str(report))
    assert (code, out, err) == (2, "", expected)
    code, out, err = run(monkeypatch, capsys, "gate", str(report), "--baseline", str(TINY_REPORT))
    assert (code, out, err) == (2, "", expected)


@pytest.mark.parametrize(
    ("key", "value", "got"),
    [
        ("hidden_size", 0, "0"),
        ("hidden_size", -1, "-1"),
        ("num_attention_heads", "32", "'32'"),
        ("num_hidden_layers", True, "true"),
    ],
)
def test_model_shape_fields_are_validated_where_read(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    key: str,
    value: Any,
    got: str,
) -> None:
    # hidden_size 0 or -1 silently became 4096, and the predictions with it were absurd.
    model = tmp_path / "model"
    model.mkdir()
    hf = json.loads((ROOT / "configs/models/tiny-llama/config.json").read_text())
    hf[key] = value
    write(model / "config.json", hf)
    config = tmp_path / "serve.yaml"
    config.write_text(f"model: {model}\nmax_num_seqs: 8\n")
    code, out, err = run(monkeypatch, capsys, "plan", str(config))
    assert (code, out) == (2, "")
    assert err == (
        f"cgplan: error: {config}:model: {model / 'config.json'}:{key}: not a usable model dimension "
        f"(got {got}; expected an integer from 1 to 10,000,000)\n"
    )


def test_a_bad_draft_model_config_is_refused_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    draft = tmp_path / "draft"
    draft.mkdir()
    hf = json.loads((ROOT / "configs/models/tiny-llama/config.json").read_text())
    hf["hidden_size"] = 0
    write(draft / "config.json", hf)
    config = tmp_path / "serve.yaml"
    config.write_text(
        f"model: {ROOT / 'configs/models/tiny-llama'}\nmax_num_seqs: 8\n"
        f"speculative_config: {{method: eagle, num_speculative_tokens: 3, model: {draft}}}\n"
    )
    code, _, err = run(monkeypatch, capsys, "plan", str(config))
    assert code == 2
    assert f":speculative_config.model: {draft / 'config.json'}:hidden_size: not a usable" in err


def test_control_characters_are_escaped_in_every_output_format(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Raw escape codes and newlines from a file name reached the terminal, JUnit and markdown.
    hostile = tmp_path / "x\x1b]0;owned\x07\x1b[2J\u202e.yaml"
    hostile.write_text(
        PR.read_text().replace("../models/tiny-llama", str(ROOT / "configs/models/tiny-llama"))
    )
    junit, md, html = tmp_path / "j.xml", tmp_path / "v.md", tmp_path / "p.html"
    outputs = []
    code, out, _ = run(
        monkeypatch, capsys, "gate", str(hostile), "--junit", str(junit), "--markdown", str(md)
    )
    assert code == 1
    outputs += [out, junit.read_text(), md.read_text()]
    code, out, _ = run(monkeypatch, capsys, "plan", str(hostile), "--html", str(html))
    outputs += [out, html.read_text()]
    code, out, _ = run(
        monkeypatch, capsys, "diff", str(hostile), "--vllm-version", "0.26.0..0.33.0", "--markdown"
    )
    outputs.append(out)
    for text in outputs:
        assert not any(c in text for c in "\x1b\x07\u202e"), text[:300]
    import xml.etree.ElementTree as ET

    ET.fromstring(junit.read_text())  # XML 1.0 cannot carry a raw ESC at all


def test_control_characters_from_a_log_do_not_reach_the_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    logs = sorted((ROOT / "tests/data/logs").glob("*.log"))
    text = logs[0].read_text()
    log = tmp_path / "vllm.log"
    log.write_text(text.replace("Graph capturing finished", "\x1b[2J\x1b]0;x\x07Graph capturing finished", 1))
    code, out, _ = run(monkeypatch, capsys, "logs", str(log))
    assert code in (0, 1)
    assert "\x1b" not in out and "\x07" not in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [str(TINY_REPORT), "--vllm-version", "0.26.0..0.33.0"],
            f"--vllm-version: {TINY_REPORT} is a report: it holds one release's plan under one policy, "
            "so --vllm-version cannot apply to it (compare two reports, or give the config)",
        ),
        (
            [str(TINY_REPORT), str(TINY_REPORT), "--vllm-version", "0.26.0"],
            f"--vllm-version: {TINY_REPORT} and {TINY_REPORT} are reports: "
            "--vllm-version applies to configs only",
        ),
        (
            [str(TINY_CONFIG), str(TINY_REPORT), "--vllm-version", "0.26.0..0.33.0"],
            f"--vllm-version: 0.33.0 is given for {TINY_REPORT}, a report: a release applies to configs only",
        ),
        (
            [str(TINY_REPORT), "--policy", "upstream", "--policy", "upstream"],
            f"--policy: {TINY_REPORT} is a report: it holds one release's plan under one policy, "
            "so --policy cannot apply to it (compare two reports, or give the config)",
        ),
    ],
)
def test_diff_refuses_options_that_cannot_apply_to_a_report(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    # `diff REPORT --vllm-version A..B` ignored the releases and said nothing changed.
    code, out, err = run(monkeypatch, capsys, "diff", *args)
    assert (code, out, err) == (2, "", f"cgplan: error: {message}\n")
