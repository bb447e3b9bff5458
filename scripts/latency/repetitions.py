"""What the repetitions of the raw latency runs say about warm-up and contention (#17).

    python3 scripts/latency/repetitions.py benchmarks/results/h200/latency

Reads every point's repetitions (`event_ms`, in timing order) and prints:

1. warm-up: the first repetition, and the median of the first three, against the median of the
   rest, per forced outcome; and how far dropping the first k repetitions moves a point's median;
2. test-retest: the runs measured in two device calls (call1 and call3: the same engine, model and
   grid, an hour apart) give two figures per point; for each candidate statistic, how well the
   two calls agree (|log ratio|). Decided on the runs that are fitted (med-llama, tiny EAGLE), the
   held-out run (llama-3.1-8b) printed apart and not used for the choice;
3. the widest batch, timed first and again last in call 3: the same engine, minutes apart.

Points are read as scripts/latency/fit.py --statistic reads them; the figures are in
docs/latency-model.md ("Repetitions").
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fit import HELD_OUT_RUNS, STATISTICS, point_ms  # the fit's own reading of a point


def runs(root: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(device call, run name) → the raw run."""
    return {
        (f.parent.name, json.loads(f.read_text())["name"]): json.loads(f.read_text())
        for f in sorted(root.glob("*/lat-*.json"))
    }


def timed(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in doc["points"] if p.get("event_ms")]


def warmup(all_runs: dict[tuple[str, str], dict[str, Any]]) -> None:
    print("1. warm-up (every point with >= 8 repetitions; 3 warm-up calls were already untimed)")
    rows = []
    for doc in all_runs.values():
        for p in timed(doc):
            ev = [float(x) for x in p["event_ms"]]
            if len(ev) >= 8:
                rest = statistics.median(ev[3:])
                rows.append((p["force"], ev[0] / rest, statistics.median(ev[:3]) / rest, ev))
    print(f"   {'outcome':10} {'points':>6} {'rep 1 / rest':>13} {'reps 1-3 / rest':>16}  (medians)")
    for force in ("natural", "PIECEWISE", "NONE"):
        r = [x for x in rows if x[0] == force]
        first = statistics.median(x[1] for x in r)
        three = statistics.median(x[2] for x in r)
        print(f"   {force:10} {len(r):>6} {first:>13.4f} {three:>16.4f}")
    for k in (1, 3, 5):
        moved = [abs(point_ms(x[3], f"drop{k}") / statistics.median(x[3]) - 1) for x in rows]
        over1, over5 = sum(m > 0.01 for m in moved), sum(m > 0.05 for m in moved)
        print(
            f"   dropping the first {k}: the point's median moves by a median "
            f"{statistics.median(moved):.2%}; > 1% in {over1}, > 5% in {over5} of {len(moved)} points"
        )


def retest(all_runs: dict[tuple[str, str], dict[str, Any]]) -> None:
    print("2. test-retest: call1 against call3, the same point of the same engine config")
    names = sorted({n for c, n in all_runs if c == "call3"})
    for label, group in (
        ("fitted runs (the choice)", [n for n in names if n not in HELD_OUT_RUNS]),
        ("held-out run (not used for the choice)", [n for n in names if n in HELD_OUT_RUNS]),
    ):
        print(f"   {label}: {', '.join(group)}")
        print(
            f"   {'statistic':12} {'points':>6} {'median |log|':>13} {'mean |log|':>11} "
            f"{'within 5%':>10} {'within 10%':>11}"
        )
        for st in STATISTICS:
            logs = []
            for n in group:
                first = {
                    (p["kind"], p["size"], p["force"]): p
                    for p in timed(all_runs[("call1", n)])
                    if not p.get("repeat")
                }
                for p in timed(all_runs[("call3", n)]):
                    key = (p["kind"], p["size"], p["force"])
                    if p.get("repeat") or key not in first:
                        continue
                    a = point_ms([float(x) for x in first[key]["event_ms"]], st)
                    b = point_ms([float(x) for x in p["event_ms"]], st)
                    logs.append(abs(math.log(a / b)))
            print(
                f"   {st:12} {len(logs):>6} {statistics.median(logs):>13.4f} {statistics.mean(logs):>11.4f} "
                f"{sum(x < math.log(1.05) for x in logs) / len(logs):>10.0%} "
                f"{sum(x < math.log(1.10) for x in logs) / len(logs):>11.0%}"
            )


def widest_again(all_runs: dict[tuple[str, str], dict[str, Any]]) -> None:
    print("3. the widest batch timed first and last in one engine (call3): median ms (first -> last)")
    for (call, name), doc in all_runs.items():
        if call != "call3":
            continue
        s = doc["max_num_seqs"]
        at: dict[str, list[float]] = {}
        for p in timed(doc):
            if p["kind"] == "uniform" and p["size"] == s:
                at.setdefault(p["force"], []).append(float(p["median_ms"]))
        cells = [f"{f} {' -> '.join(f'{x:.2f}' for x in v)}" for f, v in at.items()]
        print(f"   {name:30} {s:>4} requests: " + "; ".join(cells))


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/h200/latency")
    all_runs = runs(root)
    warmup(all_runs)
    retest(all_runs)
    widest_again(all_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
