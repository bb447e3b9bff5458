"""Model runner V2 before 0.29 reserves no CUDA-graph memory (#27, vLLM issue #49224): its
`profile_cudagraph_memory()` returns 0 (vllm/v1/worker/gpu/model_runner.py in 0.26.0, 0.27.1 and
0.28.0; a real estimate from 0.29.0), so the KV cache takes the whole gpu_memory_utilization budget
and capture adds on top. The plan must say so, and what to set instead, not "taken from the KV
cache"."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgplan.api.plan import plan_file
from cgplan.core.model.types import Plan
from cgplan.core.vllm.releases import SUPPORTED_VERSIONS, first_release
from cgplan.io.config import Overrides
from cgplan.io.schema.plan import plan_to_dict
from cgplan.render.summary import cost_lines

CONFIG = Path("configs/examples/pr50488-eagle-k16.yaml")
_RESERVES = first_release(lambda r: r.v2_reserves_cudagraph_memory)
_BEFORE = SUPPORTED_VERSIONS[SUPPORTED_VERSIONS.index(_RESERVES) - 1]


def _plan(version: str, runner: str | None = None) -> Plan:
    return plan_file(CONFIG, Overrides(vllm_version=version, model_runner=runner))[1]


def test_v2_before_the_fix_says_not_reserved() -> None:
    plan = _plan(_BEFORE)
    assert plan.model_runner == "v2" and not plan.graph_memory_reserved
    text = "\n".join(cost_lines(plan))
    assert "not reserved: capture adds on top of gpu_memory_utilization" in text
    assert "lower --gpu-memory-utilization by" in text
    assert "taken from the KV cache" not in text and "KV-cache tokens" not in text
    note = next(n.message for n in plan.notes if n.kind == "graph_memory_not_reserved")
    assert "profile_cudagraph_memory() returns 0" in note and "VLLM_USE_V2_MODEL_RUNNER=0" in note
    kv = plan_to_dict(plan)["kv_cache"]
    assert kv["graph_memory_reserved"] is False and kv["graph_memory_tokens"] is None


@pytest.mark.parametrize(("version", "runner"), [(_RESERVES, None), (_BEFORE, "v1")])
def test_reserved_elsewhere(version: str, runner: str | None) -> None:
    plan = _plan(version, runner)
    assert plan.graph_memory_reserved
    assert "taken from the KV cache" in "\n".join(cost_lines(plan))
    assert "graph_memory_reserved" not in plan_to_dict(plan)["kv_cache"]
    assert not any(n.kind == "graph_memory_not_reserved" for n in plan.notes)


def test_a_real_v2_capture_put_the_graphs_on_top() -> None:
    """H200 run, vLLM 0.26.0, model runner V2 (tests/data/logs/llama8b-eagle-k3-mns64-vllm.log.gz):
    weights + activation peak + non-torch memory + KV cache fill the whole budget, and the CUDA
    graphs come on top of it."""
    import gzip
    import re

    log = gzip.decompress(Path("tests/data/logs/llama8b-eagle-k3-mns64-vllm.log.gz").read_bytes()).decode()
    assert "Using V2 Model Runner" in log and "(v0.26.0)" in log
    m = re.search(
        r"Desired GPU memory utilization is \(0\.8, ([\d.]+) GiB\)\. Actual usage is ([\d.]+) GiB for "
        r"weight, ([\d.]+) GiB for peak activation, ([\d.]+) GiB for non-torch memory, and ([\d.]+) GiB "
        r"for CUDAGraph memory\..* Current kv cache memory in use is ([\d.]+) GiB",
        log,
    )
    assert m is not None
    budget, weights, act, non_torch, graphs, kv = map(float, m.groups())
    assert abs(weights + act + non_torch + kv - budget) < 0.02  # the KV cache took the whole budget
    assert graphs > 0.5 and weights + act + non_torch + kv + graphs > budget + 0.5
    assert not _plan("0.26.0").graph_memory_reserved
