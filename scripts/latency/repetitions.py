"""What the repetitions of the raw latency runs say about warm-up and contention (issue 17).

    python3 scripts/latency/repetitions.py benchmarks/results/h200/latency

Reads every point's repetitions (`event_ms`, in timing order) and prints:

1. warm-up: the first repetition, and the median of the first three, against the median of the
   rest, per forced outcome; and how far dropping the first k repetitions moves a point's median;
2. test-retest: the runs measured in two device calls (call1 and call3: the same engine, model and
   grid, an hour apart) give two figures per point; for each candidate statistic, how well the
   two calls agree (|log ratio|). Decided on the runs that are fitted (med-llama, tiny EAGLE), the
   held-out run (llama-3.1-8b) printed apart and not used for the choice;
3. the widest batch timed in several rounds of one engine: first and last in call 3, six rounds
   spread over the run in call 4 (per-round medians, in timing order);
4. how a point timed in several rounds is read: each candidate reading (the lowest per-round
   median, the median or mean over rounds, the median of all rounds' repetitions pooled) computed
   on split halves of call 4's six rounds (every split into 3 + 3), and how well the two halves
   agree. Decided on the fitted runs (3B, 32B), the held-out 14B printed apart.

Points are read as scripts/latency/fit.py --statistic reads them; the figures are in
docs/latency-model.md ("Repetitions").
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
import sys
from collections.abc import Callable, Sequence
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
    print("3. the widest batch timed in several rounds of one engine: per-round median ms, in timing order")
    for (call, name), doc in all_runs.items():
        s = doc["max_num_seqs"]
        at: dict[str, list[float]] = {}
        for p in timed(doc):
            if p["kind"] == "uniform" and p["size"] == s:
                at.setdefault(p["force"], []).append(float(p["median_ms"]))
        if max((len(v) for v in at.values()), default=0) < 2:
            continue
        print(f"   {call} {name} ({s} requests)")
        for force, v in at.items():
            print(f"     {force:10} {' '.join(f'{x:6.2f}' for x in v)}")


READINGS: dict[str, Callable[[list[list[float]]], float]] = {
    "lowest round": lambda rounds: min(statistics.median(r) for r in rounds),
    "median over rounds": lambda rounds: statistics.median(statistics.median(r) for r in rounds),
    "mean over rounds": lambda rounds: statistics.mean(statistics.median(r) for r in rounds),
    "pooled median": lambda rounds: statistics.median(x for r in rounds for x in r),
}
"""How a point timed in several rounds may be read (each round's figure is its median)."""


Rounds = dict[str, list[list[float]]]
"""Outcome → its rounds, each the repetitions of one round."""


def _read(fn: Callable[[list[list[float]]], float], by: Rounds, force: str, idx: Sequence[int]) -> float:
    """`fn`'s reading of the rounds `idx` of one outcome."""
    return float(fn([by[force][i] for i in idx]))


def rounds_reading(all_runs: dict[tuple[str, str], dict[str, Any]]) -> None:
    print("4. reading a point timed in rounds: split halves of call 4's rounds (every 3 + 3 split)")
    print("   median |log(half A / half B)| (worst split), per outcome and for the eager / FULL ratio")
    widest: dict[str, Rounds] = {}
    for (call, name), doc in all_runs.items():
        if call != "call4":
            continue
        s = doc["max_num_seqs"]
        for p in timed(doc):
            if p["kind"] == "uniform" and p["size"] == s:
                reps = [float(x) for x in p["event_ms"]]
                widest.setdefault(name, {}).setdefault(p["force"], []).append(reps)
    names = sorted(widest)
    for label, group in (
        ("fitted runs (the choice)", [n for n in names if n not in HELD_OUT_RUNS]),
        ("held-out run (not used for the choice)", [n for n in names if n in HELD_OUT_RUNS]),
    ):
        print(f"   {label}: {', '.join(group)}")
        cols = ("natural", "PIECEWISE", "NONE", "NONE/natural")
        print(f"   {'reading':20} " + " ".join(f"{c:>15}" for c in cols))
        for reading, fn in READINGS.items():
            cells = []
            for col in cols:
                logs = []
                for n in group:
                    by = widest[n]
                    k = len(by["natural"])
                    for half in itertools.combinations(range(k), k // 2):
                        if 0 not in half:
                            continue  # each split once
                        other = [i for i in range(k) if i not in half]
                        if col == "NONE/natural":
                            a = _read(fn, by, "NONE", half) / _read(fn, by, "natural", half)
                            b = _read(fn, by, "NONE", other) / _read(fn, by, "natural", other)
                        else:
                            a, b = _read(fn, by, col, half), _read(fn, by, col, other)
                        logs.append(abs(math.log(a / b)))
                cells.append(f"{statistics.median(logs):.4f} ({max(logs):.3f})")
            print(f"   {reading:20} " + " ".join(f"{c:>15}" for c in cells))


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/h200/latency")
    all_runs = runs(root)
    warmup(all_runs)
    retest(all_runs)
    widest_again(all_runs)
    rounds_reading(all_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
