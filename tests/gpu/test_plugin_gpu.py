"""On a GPU host with vLLM: cgplan's general plugin in a real engine (issue 34). The driver
(scripts/device/plugin_drive.py) starts a tiny Llama whose decode steps of 33-64 requests run
eager (max_num_seqs 64, max_cudagraph_capture_size 32), serves 48 requests, and reports what the
plugin logged and counted; vLLM finds the plugin through the installed dist's entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT_DIR


@pytest.mark.gpu
@pytest.mark.parametrize("runner", ["0", "1"], ids=["v1", "v2"])
def test_plugin_names_the_gap_and_counts_its_eager_steps(tmp_path: Path, runner: str) -> None:
    env = {
        **os.environ,
        "CGPLAN_PLUGIN": "1",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "VLLM_USE_V2_MODEL_RUNNER": runner,
        "CGPLAN_PLUGIN_MODEL": str(ROOT_DIR / "configs/models/tiny-llama-v512"),
    }
    script = ROOT_DIR / "scripts/device/plugin_drive.py"
    subprocess.run([sys.executable, str(script), "t", str(tmp_path)], env=env, timeout=600, check=True)
    res = json.loads((tmp_path / "t-result.json").read_text())
    assert res["errors"] == [], res["errors"]
    assert "cgplan = cgplan.plugin:register" in res["entry_points"]
    block = res["startup_block"]
    assert any(line.startswith("gap: requests 33-64 × 1 tokens → EAGER") for line in block), block
    assert any(line.startswith("cgplan's plan agrees with the engine") for line in block), block
    assert any(line.startswith("graph pool: ") and "MiB measured" in line for line in block), block
    counts = res["counts"]
    assert counts["decode"]["NONE"]["48"] > 0  # the gap's decode steps, counted eager
    assert counts["decode"]["FULL"]["16"] > 0
