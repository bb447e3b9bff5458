"""Issue 33: resource bounds before the work, and numbers refused by name.

A 16 MiB YAML list is refused before PyYAML composes it (it cost 46-72 s and 3.2 GB); an 8 KB
gzip log holding one huge `non-default args` line costs bounded time and memory (it cost 13-30 s
and 4 GB); a report's `source` with a NUL or an over-long name is a located refusal, not a
traceback; NaN, infinite or negative numeric options are refused by their option's name.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.paths import ROOT_DIR

CGPLAN = [sys.executable, "-m", "cgplan"]
GOOD = ROOT_DIR / "configs" / "examples" / "pr50488-eagle-k16.yaml"
CAPTURE = ROOT_DIR / "benchmarks" / "results" / "h200" / "tiny-nospec-vllm.json"
TRAFFIC = ROOT_DIR / "configs" / "traffic" / "decode-heavy-mns32.json"


def _bounded(
    argv: list[str], cwd: Path | None = None
) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """Run cgplan as its own process: (result, its CPU seconds, its peak resident MiB)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([*CGPLAN, *argv], stdout=out, stderr=err, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own usage, not every child's
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        r = subprocess.CompletedProcess(argv, proc.returncode, out.read().decode(), err.read().decode())
    return r, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # ru_maxrss: KiB on Linux


def _one_located_line(r: subprocess.CompletedProcess[str], where: str) -> None:
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1, r.stderr[-2000:]
    assert r.stderr.startswith(f"cgplan: error: {where}"), r.stderr[:300]


def test_a_16_mib_yaml_list_is_refused_fast_and_small(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("w") as f:
        f.write(f"model: {ROOT_DIR}/configs/models/tiny-llama\ncudagraph_capture_sizes:\n")
        f.write("- 1\n" * (4 * (1 << 20) - 64))
    assert big.stat().st_size < 16 << 20
    r, cpu_s, peak_mib = _bounded(["plan", str(big)])
    _one_located_line(r, f"{big}: too large to read as YAML")
    assert cpu_s < 5.0 and peak_mib < 400, (cpu_s, peak_mib)


def test_a_small_real_config_still_reads(tmp_path: Path) -> None:
    r, _, _ = _bounded(["plan", str(GOOD), "--json"])
    assert r.returncode == 0 and json.loads(r.stdout)["kind"] == "plan"


def test_a_log_gz_with_one_huge_non_default_args_line_is_bounded(tmp_path: Path) -> None:
    log = tmp_path / "huge.log.gz"
    line = (
        "INFO 11-30 05:17:26 [api_utils.py:273] non-default args: {'max_num_seqs': 256, 'x': ["
        + "0, " * (2_500_000)
        + "0]}\n"
    )
    with gzip.open(log, "wt") as f:
        f.write("INFO 11-30 05:17:20 [utils.py:1] vLLM API server version 0.26.0\n")
        f.write(line)
    assert log.stat().st_size < 64 << 10
    r, cpu_s, peak_mib = _bounded(["logs", str(log)])
    _one_located_line(r, f"{log}: ")
    assert "non-default args" in r.stderr
    assert cpu_s < 5.0 and peak_mib < 400, (cpu_s, peak_mib)


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("a\x00b.yaml", "NUL"),
        ("x" * 5000 + ".yaml", "longer than"),
        ("d/" + "y" * 300 + ".yaml", "longer than"),
    ],
    ids=["nul", "long-path", "long-name"],
)
def test_a_report_source_with_a_nul_or_an_overlong_name_is_located(
    tmp_path: Path, source: str, problem: str
) -> None:
    doc = json.loads(CAPTURE.read_text())
    doc["source"] = source
    report = tmp_path / "r.json"
    report.write_text(json.dumps(doc))
    r, _, _ = _bounded(["calibrate", str(report)], cwd=tmp_path)
    _one_located_line(r, f"{report}:source: ")
    assert problem in r.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1"])
@pytest.mark.parametrize(
    "argv",
    [
        ["optimize", str(GOOD), "--traffic", str(TRAFFIC), "--eager-step-cost"],
        ["optimize", str(GOOD), "--traffic", str(TRAFFIC), "--max-graph-memory-mib"],
        ["optimize", str(GOOD), "--traffic", str(TRAFFIC), "--max-capture-s"],
        ["calibrate", str(CAPTURE), "--max-error"],
    ],
    ids=["eager-step-cost", "max-graph-memory-mib", "max-capture-s", "max-error"],
)
def test_nan_inf_and_negative_numbers_are_refused_by_name(argv: list[str], value: str) -> None:
    r = subprocess.run([*CGPLAN, *argv, value], capture_output=True, text=True, timeout=120, cwd=ROOT_DIR)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert argv[-1] in r.stderr and "finite" in r.stderr
