"""Optimiser benchmark: max_num_seqs 1024 with a 4-tier dynamic-SD schedule (must be < 1 s),
and the two traffic shapes of configs/traffic against vLLM's default ladder.

Usage: python benchmarks/bench_optimize.py --out benchmarks/results/optimize.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cgplan.api.optimize import optimize_config  # noqa: E402
from cgplan.core.optimize.search import optimal_ladders  # noqa: E402
from cgplan.core.optimize.traffic_cost import query_len_for  # noqa: E402
from cgplan.core.plan.build import build_plan  # noqa: E402
from cgplan.core.plan.gaps import graph_count  # noqa: E402
from cgplan.io.config import Overrides, load_config  # noqa: E402
from cgplan.io.traffic import load_traffic  # noqa: E402

CASES = [
    ("configs/examples/pr50488-eagle-k16.yaml", "configs/traffic/decode-heavy-mns32.json"),
    ("configs/gpu/med-llama-mns256.yaml", "configs/traffic/bursty-mns256.json"),
    ("configs/examples/mns1024-eagle-k16-dyn4.yaml", "configs/traffic/dyn4-mns1024.json"),
]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    cfg = ROOT / CASES[2][0]
    inp = load_config(cfg, Overrides(vllm_version="0.33.0")).input
    plan = build_plan(inp, with_fixes=False)
    traffic = load_traffic(ROOT / CASES[2][1])
    shapes = [(n * query_len_for(plan, n), w) for n, w in traffic.uniform_decode]
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        optimal_ladders(shapes, len(plan.capture_sizes), inp.max_num_batched_tokens)
        times.append(time.perf_counter() - t0)
    result: dict[str, object] = {
        "command": "make bench (python benchmarks/bench_optimize.py --out benchmarks/results/optimize.json)",
        "dp_search_mns1024_4_tiers": {
            "distinct_shapes": len({t for t, _ in shapes}),
            "sizes_budget": len(plan.capture_sizes),
            "median_s": round(statistics.median(times), 3),
            "target_s": 1.0,
        },
        "cases": [],
    }
    for config, traffic_file in CASES:
        for cap_name in ("default_coverage", "uncapped"):
            default = build_plan(load_config(ROOT / config, Overrides(vllm_version="0.33.0")).input)
            cap = default.max_capture_size if cap_name == "default_coverage" else None
            t0 = time.perf_counter()
            o = optimize_config(
                ROOT / config, ROOT / traffic_file, Overrides(vllm_version="0.33.0"), max_capture_size=cap
            )
            elapsed = time.perf_counter() - t0
            d, c = o.default_cost, o.cost
            result["cases"].append(
                {  # type: ignore[attr-defined]
                    "config": config,
                    "traffic": traffic_file,
                    "sizes_cap": cap,
                    "end_to_end_s": round(elapsed, 3),
                    "default": {
                        "sizes": len(o.default_plan.capture_sizes),
                        "graphs": graph_count(o.default_plan),
                        "padded_tokens": round(d.padded_tokens),
                        "padding_ratio": round(d.padded_tokens / d.real_tokens, 5),
                        "eager_share": round(d.eager_steps / d.steps, 5),
                    },
                    "optimized": {
                        "sizes": len(o.sizes),
                        "graphs": graph_count(o.plan),
                        "padded_tokens": round(c.padded_tokens),
                        "padding_ratio": round(c.padded_tokens / c.real_tokens, 5),
                        "eager_share": round(c.eager_steps / c.steps, 5),
                    },
                    "flags": o.flags[0],
                }
            )
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
