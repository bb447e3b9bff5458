"""`cgplan optimize` (issue 30): exit 1 when its result fails the default gate unless --relax gives
the check up; "no improvement" instead of a flag equal to the default ladder; the time objective
keeps each tier's widest size so that its result can pass the gate."""

from __future__ import annotations

import json

import pytest

from tests.cli_helpers import run
from tests.paths import ROOT_DIR

GPU = ROOT_DIR / "configs/gpu"
TRAFFIC = ROOT_DIR / "configs/traffic"


def test_a_result_that_fails_the_gate_exits_1_unless_relaxed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """EAGLE K=16, 32 requests (the PR #50488 gap): within the default ladder's 51 sizes no ladder
    gives the 544-token widest batch a graph."""
    args = ("optimize", GPU / "tiny-eagle-k16.yaml", "--traffic", TRAFFIC / "bursty-mns256.json")
    code, out, _ = run(monkeypatch, capsys, *args, "--json")
    doc = json.loads(out)
    assert code == 1 and not doc["passes_gate"] and doc["gate"]["gave_up"]
    relax = ("--relax", "no_eager_uniform_decode", "--relax", "widest_decode_full")
    code, out, _ = run(monkeypatch, capsys, *args, *relax, "--json")
    assert code == 0 and json.loads(out)["passes_gate"]


def test_no_improvement_prints_no_flag(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default ladder is already the best found: no flag equal to it is printed."""
    args = ("optimize", GPU / "tiny-eagle-k16-max544.yaml", "--traffic", TRAFFIC / "dyn4-mns1024.json")
    code, out, _ = run(monkeypatch, capsys, *args)
    assert code == 0
    assert "no improvement: no ladder within these budgets beats the default's expected step time" in out
    assert "-cc.cudagraph_capture_sizes" not in out and "flags (checked" not in out
    code, out, _ = run(monkeypatch, capsys, *args, "--json")
    doc = json.loads(out)
    assert (
        doc["improved"] is False
        and doc["expected_step_ms"]["optimized"] >= doc["expected_step_ms"]["default"]
    )
    code, out, _ = run(monkeypatch, capsys, *args, "--format", "markdown")
    assert "No improvement:" in out and "```bash" not in out


def test_the_time_objective_keeps_the_widest_size(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's example: the time-optimal ladder dropped 256 (the widest batch's FULL size),
    failed widest_decode_full and exited 0; it now keeps 256 and passes."""
    code, out, _ = run(
        monkeypatch,
        capsys,
        "optimize",
        GPU / "med-llama-mns256.yaml",
        "--traffic",
        TRAFFIC / "bursty-mns256.json",
        "--max-capture-size",
        "512",
        "--json",
    )
    doc = json.loads(out)
    assert code == 0 and doc["passes_gate"] and doc["improved"] and 256 in doc["capture_sizes"]
    assert doc["expected_step_ms"]["optimized"] < doc["expected_step_ms"]["default"]
