"""How step time grows with requests, measured and modelled, per run and outcome (issue 17).

    .venv/bin/python scripts/latency/slopes.py benchmarks/results/h200/latency [COEFFICIENTS.json]

For every run without speculation, the Theil-Sen slope (the median of the pairwise slopes: robust
to the odd contended point) of the step time over the uniform-decode batches of 1..128 requests,
per forced outcome, measured (each point read as the fit reads it:
`least_contended`) and predicted by
the coefficients (default: the shipped cgplan/data/latency-h200.json). Below the compute knee the
per-token matmul cost is small, so the slope is the per-request and per-token work; whether an
outcome's step grows with requests says where that work runs: on the GPU, where a host-bound
eager step hides it, or on the host before the launch, where every outcome pays it. Fitted runs
and held-out runs are printed apart (docs/latency-model.md, "The model").
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fit import HELD_OUT_RUNS  # the fit's own held-out runs

from cgplan.core.predict.calibrate import least_contended
from cgplan.core.predict.latency import LatencyObservation, step_ms
from cgplan.io.latency_coefficients import DEFAULT_LATENCY, load_latency, read_runs

MAX_REQS = 128
OUTCOMES = (("NONE", "eager"), ("PIECEWISE", "PIECEWISE"), ("FULL", "FULL"))


def theil_sen(points: list[tuple[int, float]]) -> float:
    """The median of the pairwise slopes."""
    return statistics.median(
        (b[1] - a[1]) / (b[0] - a[0]) for i, a in enumerate(points) for b in points[i + 1 :] if b[0] != a[0]
    )


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/h200/latency")
    c = load_latency(sys.argv[2] if len(sys.argv) > 2 else DEFAULT_LATENCY)
    obs = [
        o
        for o in least_contended(read_runs([root]))
        if o.batch.startswith("uniform:") and o.step.drafter_prefill_mode is None
    ]
    runs = sorted({o.run for o in obs})
    print(f"slope of the step over 1..{MAX_REQS} requests, us per request: measured / predicted")
    for label, group in (
        ("fitted runs", [r for r in runs if r not in HELD_OUT_RUNS]),
        ("held-out runs", [r for r in runs if r in HELD_OUT_RUNS]),
    ):
        print(f"  {label}")
        print(f"  {'run':28} " + " ".join(f"{name:>17}" for _, name in OUTCOMES))
        measured: dict[str, list[float]] = {m: [] for m, _ in OUTCOMES}
        for r in group:
            cells = []
            for mode, _ in OUTCOMES:
                pts: list[LatencyObservation] = [
                    o
                    for o in obs
                    if o.run == r and o.step.target_mode == mode and int(o.batch.split(":")[1]) <= MAX_REQS
                ]
                n = [int(o.batch.split(":")[1]) for o in pts]
                m = 1000 * theil_sen(list(zip(n, (o.measured_ms for o in pts), strict=True)))
                p = 1000 * theil_sen(list(zip(n, (step_ms(c, o.target, o.step) for o in pts), strict=True)))
                measured[mode].append(m)
                cells.append(f"{m:7.1f} / {p:7.1f}")
            print(f"  {r:28} " + " ".join(f"{x:>17}" for x in cells))
        medians = [f"{statistics.median(measured[m]):7.1f}" for m, _ in OUTCOMES]
        print(f"  {'median of the runs':28} " + " ".join(f"{x:>7}{'':10}" for x in medians))
    return 0


if __name__ == "__main__":
    sys.exit(main())
