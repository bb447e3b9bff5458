"""The capture phase's NVML baseline is read where vLLM reads its own.

vLLM's V1 `capture_model` (0.26.0) releases the allocator's cache, then reads free memory, and
its "took X GiB" is measured from there. On the H200 (2026-12-01, test-dsv3-mtp1-mns32: an MTP
drafter's profile run left blocks cached) a baseline read before that release made the capture
phase 94 MiB; read after it, 154 MiB (benchmarks/results/h200/moe/call2). These stand-ins model
the allocator that far.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from cgplan.gpu import vllm_backend as vb
from cgplan.gpu.recorder import GraphRecorder

MIB = 1 << 20


class _Allocator:
    def __init__(self) -> None:
        self.cached_bytes = 316 * MIB  # left by the profile run, freed but still reserved
        self.held_bytes = 0

    def empty_cache(self) -> None:
        self.cached_bytes = 0


class _Nvml:
    def __init__(self, alloc: _Allocator) -> None:
        self.alloc = alloc

    def memory_used_bytes(self) -> int:
        return 1024 * MIB + self.alloc.cached_bytes + self.alloc.held_bytes


def _stand_ins(monkeypatch: pytest.MonkeyPatch, alloc: _Allocator) -> None:
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        synchronize=lambda *a: None, empty_cache=alloc.empty_cache
    )
    monkeypatch.setitem(sys.modules, "torch", torch)
    names = ("vllm", "vllm.v1", "vllm.v1.worker", "vllm.v1.worker.gpu")
    mods = {n: types.ModuleType(n) for n in names}
    cgu = types.ModuleType("vllm.v1.worker.gpu.cudagraph_utils")
    runner_mod = types.ModuleType("vllm.v1.worker.gpu.model_runner")

    class Runner:
        def capture_model(self) -> int:
            # vLLM: empty_cache(), read the baseline, capture (the graphs hold 410 MiB).
            alloc.empty_cache()
            alloc.held_bytes += 410 * MIB
            return 410 * MIB

    runner_mod.GPUModelRunner = Runner  # type: ignore[attr-defined]
    mods["vllm.v1.worker.gpu"].cudagraph_utils = cgu  # type: ignore[attr-defined]
    for name, mod in {**mods, cgu.__name__: cgu, runner_mod.__name__: runner_mod}.items():
        monkeypatch.setitem(sys.modules, name, mod)


def test_capture_phase_counts_from_after_the_cache_release(monkeypatch: pytest.MonkeyPatch) -> None:
    alloc = _Allocator()
    _stand_ins(monkeypatch, alloc)
    nvml: Any = _Nvml(alloc)
    state = vb._State()
    with vb.instrument(GraphRecorder(nvml), nvml, state, per_graph=False):
        runner = sys.modules["vllm.v1.worker.gpu.model_runner"].GPUModelRunner()
        assert runner.capture_model() == 410 * MIB
    # Before the fix the baseline held the 316 MiB cache: 94 MiB.
    assert state.capture_nvml_delta == 410 * MIB
    assert state.capture_wall_s is not None
