"""Cost of cgplan's capture hooks on the GPU (issue 18 item 3): alternating pairs in one engine.

One vLLM engine is started with cgplan's full hooks (its first capture is a normal instrumented
one). Then vLLM's own `capture_model()` is run again and again on that engine, alternately with
the full hooks (`--instrument full`: per-descriptor memory and time) and with the timing hook only
(`--instrument timing`: `capture_model` timed, nothing per graph), the order swapped every other
pair (timing,full / full,timing, ...). Before each cycle vLLM's graphs are dropped the way vLLM
itself drops them (`CUDAGraphWrapper.clear_all_graphs()`, the V2 managers' FULL graphs), so each
cycle captures every descriptor again. The figure is the median of per-pair ratios full / timing
of `capture_model`'s wall time.

Why one engine rather than one process per run: an engine start is 45-90 s and its capture
2-4 s, so five pairs of processes need ~10 minutes of GPU time and their capture times differ by
±20% from process to process (cold kernels, compile caches); repeated cycles in one engine pair
the two modes on the same warm process. A warm capture is shorter than a cold one, so the hooks'
share of it is an upper bound on their share of a first capture.

Usage (on the GPU host, vLLM importable):
  python3 scripts/device/hook_pairs.py CONFIG --pairs 5 --out pairs.json [--deadline-s 150]
Off the GPU, `summarize` and `pair_orders` are what the tests use.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MODES = ("timing", "full")


def pair_orders(pairs: int, start: int = 1) -> list[tuple[int, str]]:
    """(pair, mode) in run order: odd pairs timing then full, even pairs full then timing."""
    out = []
    for i in range(start, start + pairs):
        order = MODES if i % 2 == 1 else MODES[::-1]
        out.extend((i, m) for m in order)
    return out


@dataclasses.dataclass(frozen=True)
class Cycle:
    """One `capture_model()` run."""

    pair: int
    mode: str
    capture_wall_s: float | None
    hook_s: float | None
    """The recorder's own host time inside the cycle (full hooks only)."""
    nvml_s: float | None
    descriptors: int
    pieces: int
    graphs_after: int | None = None
    """vLLM's own count of graphs held after the cycle (FULL graphs of the managers plus piecewise
    entries with a graph), read outside the timed call: shows the timing cycles captured too."""


def summarize(cycles: list[Cycle]) -> dict[str, Any]:
    """Per-pair ratios full / timing and their median (pairs missing a side are left out)."""
    by_pair: dict[int, dict[str, Cycle]] = {}
    for c in cycles:
        by_pair.setdefault(c.pair, {})[c.mode] = c
    rows = []
    for i, sides in sorted(by_pair.items()):
        t, f = sides.get("timing"), sides.get("full")
        if not (t and f and t.capture_wall_s and f.capture_wall_s):
            continue
        rows.append(
            {
                "pair": i,
                "timing_s": t.capture_wall_s,
                "full_s": f.capture_wall_s,
                "ratio": round(f.capture_wall_s / t.capture_wall_s, 4),
                "hook_s": f.hook_s,
                "hook_share": round(f.hook_s / t.capture_wall_s, 4) if f.hook_s is not None else None,
            }
        )
    ratios = [r["ratio"] for r in rows]
    shares = [r["hook_share"] for r in rows if r["hook_share"] is not None]
    return {
        "pairs": rows,
        "pair_count": len(rows),
        "median_ratio": round(statistics.median(ratios), 4) if ratios else None,
        "median_overhead_pct": round((statistics.median(ratios) - 1) * 100, 2) if ratios else None,
        "median_hook_share_pct": round(statistics.median(shares) * 100, 2) if shares else None,
    }


def run_cycles(
    capture_once: Callable[[int, str], Cycle],
    pairs: int,
    time_left_s: Callable[[], float],
    on_cycle: Callable[[Cycle], None],
) -> list[Cycle]:
    """Run the pairs in order while two more cycles as long as the longest so far still fit."""
    cycles: list[Cycle] = []
    longest = 0.0
    for i, mode in pair_orders(pairs):
        first_of_pair = not any(c.pair == i for c in cycles)
        if first_of_pair and time_left_s() < 2 * longest + 5:
            break
        before = time_left_s()
        c = capture_once(i, mode)
        longest = max(longest, before - time_left_s())
        cycles.append(c)
        on_cycle(c)
    return cycles


# --------------------------------------------------------------------------- on the GPU


def drop_graphs(runner: Any) -> list[Any]:
    """Make vLLM forget every captured graph, as it does before it re-captures, and return the
    graphs it held: the caller keeps them until the next capture has run.

    Why they are kept: vLLM captures every graph into one pool whose id is only held by its
    graphs; once the last one is freed PyTorch retires the pool, and the next capture into the
    same id fails (`it->second->use_count > 0 INTERNAL ASSERT FAILED` in CUDACachingAllocator,
    seen on the H200 on 2026-12-01 when the graphs were simply dropped)."""
    from vllm.compilation.cuda_graph import CUDAGraphWrapper

    kept: list[Any] = []
    wrappers: list[Any] = [CUDAGraphWrapper]
    try:
        from vllm.compilation.breakable_cudagraph import BreakableCUDAGraphWrapper

        wrappers.append(BreakableCUDAGraphWrapper)
    except ImportError:
        pass
    for cls in wrappers:
        for w in list(getattr(cls, "_all_instances", ())):
            entries = getattr(w, "concrete_cudagraph_entries", None)
            if entries is None:
                entries = getattr(w, "entries", {})
            kept.extend(entries.values())
        cls.clear_all_graphs()
    try:
        from vllm.v1.worker.gpu.cudagraph_utils import CudaGraphManager
    except ImportError:
        CudaGraphManager = None  # V1 only
    if CudaGraphManager is not None:
        for owner in (runner, getattr(runner, "speculator", None)):
            for value in list(vars(owner).values()) if owner is not None else ():
                if isinstance(value, CudaGraphManager):
                    kept.extend(value.graphs.values())
                    value.graphs.clear()
                    value._graphs_captured = False
    try:
        from vllm.compilation.monitor import set_cudagraph_capturing_enabled

        set_cudagraph_capturing_enabled(True)
    except ImportError:
        pass
    return kept


def count_graphs(runner: Any) -> int | None:
    """Graphs the engine holds now, from vLLM's own structures (None where they are not found)."""
    total = 0
    found = False
    try:
        from vllm.compilation.cuda_graph import CUDAGraphWrapper

        for w in list(getattr(CUDAGraphWrapper, "_all_instances", ())):
            found = True
            total += sum(1 for e in w.concrete_cudagraph_entries.values() if e.cudagraph is not None)
    except (ImportError, AttributeError):
        pass
    try:
        from vllm.v1.worker.gpu.cudagraph_utils import CudaGraphManager

        for owner in (runner, getattr(runner, "speculator", None)):
            for value in list(vars(owner).values()) if owner is not None else ():
                if isinstance(value, CudaGraphManager):
                    found = True
                    total += len(value.graphs)
    except ImportError:
        pass
    return total if found else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("config")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--out", required=True)
    ap.add_argument("--deadline-s", type=float, default=1e9, help="stop starting pairs after this")
    args = ap.parse_args(argv)
    t_start = time.monotonic()
    root = Path(__file__).resolve().parent.parent.parent
    sys.path.insert(0, str(root))
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    for key, value in (
        ("VLLM_ENABLE_V1_MULTIPROCESSING", "0"),
        ("HF_HUB_OFFLINE", "1"),
        ("TRANSFORMERS_OFFLINE", "1"),
        ("VLLM_NO_USAGE_STATS", "1"),
    ):
        os.environ.setdefault(key, value)

    from cgplan.gpu.nvml import nvml_session
    from cgplan.gpu.recorder import GraphRecorder
    from cgplan.gpu.vllm_backend import _State, engine_kwargs, installed_vllm_version, instrument
    from cgplan.io.config import load_config
    from cgplan.io.files import read_yaml

    inp = load_config(args.config).input
    inp = dataclasses.replace(inp, vllm_version=installed_vllm_version())
    raw = read_yaml(args.config, what="config file")
    doc: dict[str, Any] = {
        "kind": "hook_pairs",
        "config": args.config,
        "command": " ".join(["python3", "scripts/device/hook_pairs.py", *sys.argv[1:]]),
        "method": "one engine, capture_model re-run alternately with full hooks and timing only",
        "cycles": [],
    }

    def write() -> None:
        tmp = args.out + ".tmp"
        Path(tmp).write_text(json.dumps(doc, indent=1) + "\n")
        os.replace(tmp, args.out)

    with nvml_session([0]) as nvml:
        from vllm import LLM

        recorder = GraphRecorder(nvml)
        recorder.armed = False  # as capture_vllm: capture_model arms it (no profiling captures)
        state = _State()
        t0 = time.monotonic()
        with instrument(recorder, nvml, state, per_graph=True):
            llm = LLM(**engine_kwargs(inp, raw, str(Path.cwd())))
        graphs = recorder.measurements()
        doc["engine"] = {
            "start_s": round(time.monotonic() - t0, 2),
            "first_capture_wall_s": state.capture_wall_s,
            "first_capture_hook_s": round(recorder.hook_s, 4),
            "first_capture_nvml_s": round(recorder.nvml_s, 4),
            "descriptors": len(graphs),
            "pieces": sum(g.pieces for g in graphs),
            "model_runner": "v2"
            if getattr(llm.llm_engine.vllm_config, "use_v2_model_runner", False)
            else "v1",
        }
        import torch

        doc["environment"] = {
            "gpu": torch.cuda.get_device_name(0),
            "torch": torch.__version__,
            "vllm": installed_vllm_version(),
            "driver": nvml.driver_version if nvml else None,
        }
        write()
        print("engine", json.dumps(doc["engine"]), flush=True)
        runner = state.runners[-1]

        def capture_once(pair: int, mode: str) -> Cycle:
            previous = drop_graphs(runner)
            rec = GraphRecorder(nvml)
            st = _State()
            with instrument(rec, nvml, st, per_graph=mode == "full"):
                runner.capture_model()
            ms = rec.measurements()
            # The previous cycle's graphs go now, outside the timed call (see drop_graphs).
            del previous[:]
            gc.collect()
            return Cycle(
                pair,
                mode,
                st.capture_wall_s,
                round(rec.hook_s, 4) if mode == "full" else None,
                round(rec.nvml_s, 4) if mode == "full" else None,
                len(ms),
                sum(g.pieces for g in ms),
                count_graphs(runner),
            )

        def on_cycle(c: Cycle) -> None:
            doc["cycles"].append(dataclasses.asdict(c))
            doc["summary"] = summarize([Cycle(**x) for x in doc["cycles"]])
            write()
            print("cycle", json.dumps(dataclasses.asdict(c)), flush=True)

        try:
            run_cycles(
                capture_once, args.pairs, lambda: args.deadline_s - (time.monotonic() - t_start), on_cycle
            )
        except Exception as e:  # keep what was measured, say what broke
            doc["error"] = f"{type(e).__name__}: {e}"
            write()
            print("error", doc["error"], flush=True)
            return 4
    print("summary", json.dumps(doc.get("summary")), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
