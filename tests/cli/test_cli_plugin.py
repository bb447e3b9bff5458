"""`cgplan logs` of what cgplan's vLLM plugin wrote (in a vLLM log, alone, a metrics text on
stdin), and `optimize --traffic` of its counts, through the console entry point."""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path

import pytest

from cgplan.core.logs.plugin import StepCounts, counters_line
from tests.cli_helpers import run
from tests.core.logs.test_plugin_lines import METRICS
from tests.paths import ROOT_DIR

COUNTS = StepCounts({"FULL": {16: 63}, "NONE": {31: 40}}, {"PIECEWISE": {100: 2}}, 1)
BLOCK = "INFO 12-06 03:10:00 [cgplan] start-up: gap: requests 33-64 × 1 tokens → EAGER (32 request counts)"


def _log_with_plugin_lines(tmp_path: Path) -> Path:
    real = gzip.decompress((ROOT_DIR / "tests/data/logs/tiny-nospec-vllm.log.gz").read_bytes()).decode()
    path = tmp_path / "server.log"
    path.write_text(real + f"\n{BLOCK}\nINFO 12-06 03:11:00 {counters_line(COUNTS)}\n")
    return path


def test_logs_of_a_vllm_log_adds_the_plugins_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _log_with_plugin_lines(tmp_path)
    code, out, _ = run(monkeypatch, capsys, "logs", log)
    assert code == 0
    assert out.startswith(f"cgplan logs {log}"), "vLLM's own report first"
    section = out[out.index("cgplan plugin (lines logged inside the engine):") :]
    assert "start-up: gap: requests 33-64 × 1 tokens → EAGER" in section
    assert "eager (NONE)" in section and "40 steps (38.8%) at 31 requests" in section
    code, out, _ = run(monkeypatch, capsys, "logs", "--json", log)
    doc = json.loads(out)
    assert doc["kind"] == "logs" and doc["plugin"]["counts"]["decode"] == {
        "FULL": {"16": 63},
        "NONE": {"31": 40},
    }


def test_logs_without_plugin_lines_has_no_plugin_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        monkeypatch, capsys, "logs", "--json", ROOT_DIR / "tests/data/logs/tiny-nospec-vllm.log.gz"
    )
    assert code == 0 and "plugin" not in json.loads(out)


def test_logs_of_a_metrics_text_on_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    r, w = os.pipe()  # standard input as a pipe (a small text fits its buffer at once)
    os.write(w, METRICS.encode())
    os.close(w)
    reader = os.fdopen(r, "r")
    monkeypatch.setattr(sys, "stdin", reader)
    try:
        code, out, err = run(monkeypatch, capsys, "logs", "--json", "-")
    finally:
        reader.close()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["kind"] == "plugin_metrics" and doc["schema_version"] >= 1
    assert doc["counts"]["per_mode"]["decode"] == {"FULL": 63, "PIECEWISE": 0, "NONE": 63}


def test_logs_of_the_plugins_lines_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "grep.txt"
    path.write_text(f"{BLOCK}\n{counters_line(COUNTS)}\n")
    code, out, _ = run(monkeypatch, capsys, "logs", path)
    assert code == 0 and "the plugin's lines only" in out and "103 steps" in out


def test_a_broken_metrics_line_is_exit_2_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.txt"
    path.write_text('cgplan_dispatch_steps_total{kind="decode",mode="EAGER",num_reqs="4"} 1.0\n')
    code, out, err = run(monkeypatch, capsys, "logs", path)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"cgplan: error: {path}:1: labels ")
    assert "Traceback" not in err


def test_optimize_takes_the_plugins_counts_as_traffic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """tiny-nospec (max_num_seqs 32): 40 of the counted decode steps ran at 31 requests."""
    log = _log_with_plugin_lines(tmp_path)
    code, out, err = run(
        monkeypatch, capsys, "optimize", ROOT_DIR / "configs/gpu/tiny-nospec.yaml", "--traffic", log, "--json"
    )
    assert code in (0, 1), err
    doc = json.loads(out)
    assert "cgplan plugin's counters" in json.dumps(doc)
