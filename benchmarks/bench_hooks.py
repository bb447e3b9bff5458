"""Host cost of cgplan's capture hooks, off the GPU: the descriptor and piece sequence of a real
H200 capture (med-llama-mns256: 86 descriptors, 902 torch.cuda.graph sections) replayed through
the GraphRecorder, with NVML and PyTorch's reserved-bytes reading stubbed (their measured cost on
the H200 is added from the report: `measured.instrumentation_nvml_s`).

What it bounds: the recorder's own Python work per capture, against 2% of vLLM's capture_model on
the H200 (issue 18). It is not the GPU measurement (scripts/device/fleet_suite.sh makes that).

Usage: python benchmarks/bench_hooks.py --out benchmarks/results/hooks.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cgplan.gpu.recorder import GraphRecorder  # noqa: E402

# Today's hooks on the H200 (fleet call 3, 2026-12-01): the descriptor sequence replayed and the
# NVML cost per query; the pairs run's engine measured the same hooks once more (ENGINE).
REPORT = ROOT / "benchmarks/results/h200/fleet/call3/med-llama-mns256.json"
ENGINE = ROOT / "benchmarks/results/h200/overhead/med-llama-mns256-engine-pairs-call3.json"
# The only capture of this config on record without the per-graph hooks.
TIMING = ROOT / "benchmarks/results/h200/overhead/med-llama-mns256-desc-timing2.json"
BEFORE = ROOT / "benchmarks/results/h200/overhead/med-llama-mns256-desc-full2.json"


class _Nvml:
    def __init__(self) -> None:
        self.queries = 0

    def memory_used_bytes(self) -> int:
        self.queries += 1
        return self.queries << 21


def replay(graphs: list[dict[str, object]]) -> tuple[float, int, int]:
    """(seconds, NVML queries, sections) for one capture's worth of hook calls."""
    nvml = _Nvml()
    rec = GraphRecorder(nvml)  # type: ignore[arg-type]
    rec.reserved_bytes = lambda: 0
    sections = 0
    t0 = time.perf_counter()
    for g in graphs:
        rec.begin(str(g["family"]), str(g["mode"]), int(g["num_tokens"]), None, None)  # type: ignore[call-overload]
        for _ in range(int(g["pieces"])):  # type: ignore[call-overload]
            rec.piece_started()
            rec.piece_ended(None, time.perf_counter())
            sections += 1
    rec.end()
    return time.perf_counter() - t0, nvml.queries, sections


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=21)
    args = ap.parse_args()
    doc = json.loads(REPORT.read_text())
    graphs = sorted(doc["measured"]["graphs"], key=lambda g: g["order"])
    runs = [replay(graphs) for _ in range(args.repeats)]
    median_s = statistics.median(r[0] for r in runs)
    _, queries, sections = runs[0]
    m = doc["measured"]
    nvml_per_query_s = m["instrumentation_nvml_s"] / queries
    timing_capture_s = json.loads(TIMING.read_text())["measured"]["capture_wall_s"]
    engine = json.loads(ENGINE.read_text())["engine"]
    total_s = median_s + nvml_per_query_s * queries
    result = {
        "command": "python benchmarks/bench_hooks.py --out benchmarks/results/hooks.json",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()},
        "replayed": str(REPORT.relative_to(ROOT)),
        "descriptors": len(graphs),
        "sections": sections,
        "nvml_queries": queries,
        "recorder_host_s_median": round(median_s, 5),
        "nvml_s_per_query_on_h200": round(nvml_per_query_s, 7),
        "estimated_hook_s": round(total_s, 5),
        "capture_model_s_without_hooks_on_h200": timing_capture_s,
        "estimated_share": round(total_s / timing_capture_s, 4),
        "target_share": 0.02,
        "measured_on_h200_s": {
            "fleet_call3": {"hook_s": m["instrumentation_s"], "capture_model_s": m["capture_wall_s"]},
            "pairs_engine_call3": {
                "hook_s": engine["first_capture_hook_s"],
                "capture_model_s": engine["first_capture_wall_s"],
            },
            "before_the_last_cuts": json.loads(BEFORE.read_text())["measured"]["instrumentation_s"],
        },
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if result["estimated_share"] <= 0.02 else 1


if __name__ == "__main__":
    raise SystemExit(main())
