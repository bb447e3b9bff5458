"""The hook-overhead pairs (issue 18 item 3, scripts/device/hook_pairs.py): run order, the summary, and
the whole script against stand-ins for torch and vLLM's V2 runner (no GPU, no vLLM): every cycle
must capture every descriptor again (graphs dropped between cycles), the full cycles measured per
descriptor, the timing cycles not."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
SCRIPT = ROOT / "scripts/device/hook_pairs.py"


def load_script() -> Any:
    spec = importlib.util.spec_from_file_location("hook_pairs", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["hook_pairs"] = mod
    spec.loader.exec_module(mod)
    return mod


hp = load_script()


def test_pairs_alternate_their_order() -> None:
    assert hp.pair_orders(3) == [
        (1, "timing"),
        (1, "full"),
        (2, "full"),
        (2, "timing"),
        (3, "timing"),
        (3, "full"),
    ]


def test_summary_is_the_median_of_per_pair_ratios() -> None:
    cycles = [
        hp.Cycle(1, "timing", 2.0, None, None, 86, 0),
        hp.Cycle(1, "full", 2.2, 0.02, 0.01, 86, 902),
        hp.Cycle(2, "full", 2.0, 0.02, 0.01, 86, 902),
        hp.Cycle(2, "timing", 2.0, None, None, 86, 0),
        hp.Cycle(3, "timing", 1.0, None, None, 86, 0),
        hp.Cycle(3, "full", 1.03, 0.02, 0.01, 86, 902),
        hp.Cycle(4, "full", 9.0, 0.02, 0.01, 86, 902),  # no timing side: left out
    ]
    s = hp.summarize(cycles)
    assert s["pair_count"] == 3
    assert [r["ratio"] for r in s["pairs"]] == [1.1, 1.0, 1.03]
    assert s["median_ratio"] == 1.03
    assert s["median_overhead_pct"] == 3.0
    assert s["median_hook_share_pct"] == 1.0


def test_cycles_stop_when_a_pair_no_longer_fits() -> None:
    clock = {"left": 100.0}

    def once(pair: int, mode: str) -> Any:
        clock["left"] -= 30
        return hp.Cycle(pair, mode, 1.0, None, None, 1, 1)

    got = hp.run_cycles(once, 5, lambda: clock["left"], lambda c: None)
    # 100 s: pair 1 (two cycles, 40 s left); a second pair needs 2 x the longest cycle.
    assert [(c.pair, c.mode) for c in got] == [(1, "timing"), (1, "full")]


# --------------------------------------------------------------------------- stand-ins


class _Graph:
    """torch.cuda.graph: a context manager per captured piece."""

    entered = 0

    def __init__(self, *a: Any, **k: Any) -> None:
        pass

    def __enter__(self) -> _Graph:
        _Graph.entered += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def _fake_torch() -> types.ModuleType:
    torch = types.ModuleType("torch")
    cuda = types.ModuleType("torch.cuda")
    cuda.synchronize = lambda *a: None  # type: ignore[attr-defined]
    cuda.empty_cache = lambda: None  # type: ignore[attr-defined]
    cuda.graph = _Graph  # type: ignore[attr-defined]
    cuda.memory_stats_as_nested_dict = lambda: {"reserved_bytes": {"all": {"current": 0}}}  # type: ignore[attr-defined]
    cuda.get_device_name = lambda i: "Fake H200"  # type: ignore[attr-defined]
    torch.cuda = cuda  # type: ignore[attr-defined]
    torch.__version__ = "2.11.0"  # type: ignore[attr-defined]
    return torch


class _Pool:
    """PyTorch's graph pool as far as it matters here: held by its graphs; once the last one is
    freed the pool is retired and a capture into the same id fails, as on the H200."""

    def __init__(self) -> None:
        self.use_count = 0
        self.retired = False


class _CapturedGraph:
    def __init__(self, pool: _Pool) -> None:
        if pool.retired:
            raise RuntimeError("it->second->use_count > 0 INTERNAL ASSERT FAILED")
        self.pool = pool
        pool.use_count += 1

    def __del__(self) -> None:
        if not hasattr(self, "pool"):
            return  # never held the pool (its capture failed)
        self.pool.use_count -= 1
        if self.pool.use_count == 0:
            self.pool.retired = True


def _fake_vllm(pieces_per_desc: int, descs: list[tuple[str, int, int | None]]) -> dict[str, types.ModuleType]:
    """vLLM's V2 runner as far as the hooks and the script touch it: a manager that captures only
    descriptors it has no graph for, and a piecewise wrapper that keeps its graphs until cleared,
    all in one pool."""
    mods = {
        name: types.ModuleType(name)
        for name in (
            "vllm",
            "vllm.compilation",
            "vllm.compilation.cuda_graph",
            "vllm.compilation.monitor",
            "vllm.v1",
            "vllm.v1.worker",
            "vllm.v1.worker.gpu",
            "vllm.v1.worker.gpu.cudagraph_utils",
            "vllm.v1.worker.gpu.model_runner",
        )
    }
    import torch  # the stand-in, put in sys.modules by the test

    pool = _Pool()

    class Entry:
        def __init__(self) -> None:
            self.cudagraph: _CapturedGraph | None = None

    class Wrapper:
        _all_instances: ClassVar[list[Wrapper]] = []

        def __init__(self) -> None:
            self.concrete_cudagraph_entries: dict[tuple[int, int], Entry] = {}
            Wrapper._all_instances.append(self)

        @classmethod
        def clear_all_graphs(cls) -> None:
            for w in cls._all_instances:
                w.concrete_cudagraph_entries.clear()

        def run(self, desc_index: int) -> None:
            for piece in range(pieces_per_desc):
                entry = self.concrete_cudagraph_entries.setdefault((desc_index, piece), Entry())
                if entry.cudagraph is None:
                    with torch.cuda.graph():
                        entry.cudagraph = _CapturedGraph(pool)

    piecewise = Wrapper()

    class Mode:
        def __init__(self, name: str) -> None:
            self.name = name

    class Desc:
        def __init__(self, mode: str, tokens: int, reqs: int | None) -> None:
            self.cg_mode, self.num_tokens, self.num_reqs = Mode(mode), tokens, reqs
            self.uniform_token_count = 1 if mode == "FULL" else None

    class CudaGraphManager:
        def __init__(self) -> None:
            self.graphs: dict[int, _CapturedGraph] = {}
            self._graphs_captured = False

        def capture(self, create_forward_fn: Any) -> None:
            for i, (mode, tokens, reqs) in enumerate(descs):
                create_forward_fn(Desc(mode, tokens, reqs), True)
                if mode == "FULL":
                    assert i not in self.graphs, "Graph already captured"
                    with torch.cuda.graph():
                        self.graphs[i] = _CapturedGraph(pool)
                else:
                    piecewise.run(i)
            self._graphs_captured = True

    class ModelCudaGraphManager(CudaGraphManager):
        pass

    class Runner:
        def __init__(self) -> None:
            self.cudagraph_manager = ModelCudaGraphManager()
            self.speculator = None

        def capture_model(self) -> int:
            time.sleep(0.002)  # a time the timing hook can see (it keeps milliseconds)
            self.cudagraph_manager.capture(lambda desc, warmup: None)
            return 1 << 20

    runners: list[Runner] = []

    class LLM:
        def __init__(self, **kw: Any) -> None:
            self.kw = kw
            runners.append(Runner())  # the engine keeps its runner
            runners[-1].capture_model()
            cfg = types.SimpleNamespace(use_v2_model_runner=True)
            self.llm_engine = types.SimpleNamespace(vllm_config=cfg)

    mods["vllm"].__version__ = "0.26.0"  # type: ignore[attr-defined]
    mods["vllm"].LLM = LLM  # type: ignore[attr-defined]
    mods["vllm.compilation.cuda_graph"].CUDAGraphWrapper = Wrapper  # type: ignore[attr-defined]
    mods["vllm.compilation.monitor"].set_cudagraph_capturing_enabled = lambda on: None  # type: ignore[attr-defined]
    cgu = mods["vllm.v1.worker.gpu.cudagraph_utils"]
    cgu.CudaGraphManager = CudaGraphManager  # type: ignore[attr-defined]
    cgu.ModelCudaGraphManager = ModelCudaGraphManager  # type: ignore[attr-defined]
    mods["vllm.v1.worker.gpu.model_runner"].GPUModelRunner = Runner  # type: ignore[attr-defined]
    mods["vllm.v1.worker.gpu"].cudagraph_utils = cgu  # type: ignore[attr-defined]
    return mods


def test_script_recaptures_every_cycle_with_stand_ins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", _fake_torch())
    monkeypatch.setitem(sys.modules, "pynvml", None)  # NVML absent
    descs = [("PIECEWISE", 512, None), ("PIECEWISE", 256, None), ("FULL", 256, 256), ("FULL", 1, 1)]
    for name, mod in _fake_vllm(5, descs).items():
        monkeypatch.setitem(sys.modules, name, mod)
    out = tmp_path / "pairs.json"
    rc = hp.main([str(ROOT / "configs/gpu/tiny-nospec.yaml"), "--pairs", "5", "--out", str(out)])
    assert rc == 0
    doc = json.loads(out.read_text())
    assert doc["engine"]["descriptors"] == 4 and doc["engine"]["pieces"] == 12
    assert [(c["pair"], c["mode"]) for c in doc["cycles"]] == hp.pair_orders(5)
    full = [c for c in doc["cycles"] if c["mode"] == "full"]
    timing = [c for c in doc["cycles"] if c["mode"] == "timing"]
    # Every full cycle captured all four descriptors again (5 + 5 pieces + 2 FULL graphs).
    assert all(c["descriptors"] == 4 and c["pieces"] == 12 and c["hook_s"] is not None for c in full)
    # Timing cycles record nothing per graph, and report no hook time; vLLM's own count shows
    # they captured too (2 x 5 pieces and 2 FULL graphs held after every cycle).
    assert all(c["descriptors"] == 0 and c["hook_s"] is None for c in timing)
    assert all(c["graphs_after"] == 12 for c in doc["cycles"])
    assert doc["summary"]["pair_count"] == 5
    assert "error" not in doc


def test_committed_h200_hooks_own_time_is_under_two_percent_of_capture() -> None:
    """The hooks' own host time in the committed H200 captures with today's per-descriptor hooks
    (fleet call 3's med-llama, the engine of the pairs run): under 2% of vLLM's capture_model.
    This is the recorder's time measured inside the process, not the paired wall-time figure
    issue 18 asks for (the pairs run stopped at its second capture: see "Cost of the instrumentation"
    in benchmarks/results/h200/README.md)."""
    h200 = ROOT / "benchmarks/results/h200"
    fleet = json.loads((h200 / "fleet/call3/med-llama-mns256.json").read_text())["measured"]
    pairs = json.loads((h200 / "overhead/med-llama-mns256-engine-pairs-call3.json").read_text())
    engine = pairs["engine"]
    assert (engine["descriptors"], engine["pieces"]) == (86, 902)
    assert len(fleet["graphs"]) == 86 and sum(g["pieces"] for g in fleet["graphs"]) == 902
    shares = [
        fleet["instrumentation_s"] / fleet["capture_wall_s"],
        engine["first_capture_hook_s"] / engine["first_capture_wall_s"],
    ]
    assert all(0 < s < 0.02 for s in shares), shares
    # The pairs themselves did not run: the committed file says why (fixed since in drop_graphs).
    assert pairs["cycles"] == [] and "use_count > 0" in pairs["error"]
