"""How a shipped step-time set reads runs timed on another card (issue 29: the H200 set on an H100).

    .venv/bin/python scripts/latency/cross_card.py benchmarks/results/h100/latency \
        --coefficients cgplan/data/latency-h200.json -o benchmarks/results/h100/latency/h200-set-on-h100.json

Per forced mode: the points, the median signed and absolute error of the set's prediction.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from cgplan.core.predict.latency import step_ms
from cgplan.io.latency_coefficients import load_latency, read_runs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--coefficients", type=Path, required=True)
    ap.add_argument("-o", "--output", type=Path, required=True)
    a = ap.parse_args()
    c = load_latency(a.coefficients)
    obs = read_runs(a.runs)
    if not obs:
        print("no timed points read", file=sys.stderr)
        return 2
    by_mode: dict[str, list[float]] = {}
    for o in obs:
        by_mode.setdefault(o.step.target_mode, []).append(step_ms(c, o.target, o.step) / o.measured_ms - 1)
    doc = {
        "kind": "cgplan-latency-cross-card",
        "schema_version": 1,
        "command": "python scripts/latency/cross_card.py "
        + " ".join(str(r) for r in a.runs)
        + f" --coefficients {a.coefficients} -o {a.output}",
        "coefficients_gpu": c.gpu,
        "points": len(obs),
        "per_mode": {
            m: {
                "points": len(e),
                "median_error": round(statistics.median(e), 4),
                "median_abs_error": round(statistics.median(abs(x) for x in e), 4),
            }
            for m, e in sorted(by_mode.items())
        },
    }
    a.output.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
