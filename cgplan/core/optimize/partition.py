"""The ladder optimiser's dynamic programme, shared by its two objectives: padding (`search`,
`optimal_ladders`) and step time (`timed`, `optimal_timed_ladders`).

Both sort the histogram's shapes by tokens, t_1 < … < t_m, and choose r capture sizes among them:
a ladder of r sizes partitions the shapes below its largest size into r runs, each replaying the
graph of its last shape, and the shapes above it run eager. With `run(i, j)` the cost of shapes
i+1..j (1-based) padded to t_j and `tail(j)` the eager cost of shapes j+1..m,
    dp[r][j] = min_{i<j} dp[r-1][i] + run(i, j)
and the ladder of at most r sizes costs min(best of r-1, min_j dp[r][j] + tail(j)). Both run
costs are Monge (they satisfy the quadrangle inequality: search.py and timed.py say why), so
the optimal split points are monotone (opt[r-1][j] ≤ opt[r][j] ≤ opt[r][j+1]) and Knuth's bounds
give O(k·m) evaluations of `run`, not O(k·m²). `brute_force` is the O(k·m²) definition the
tests hold it to.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence


def best_partitions(
    m: int,
    max_runs: int,
    run: Callable[[int, int], float],
    tail: Callable[[int], float],
    tolerance: float,
) -> list[tuple[float, tuple[int, ...]]]:
    """For every r = 0..min(max_runs, m): the best partition into at most r runs, as its cost
    (runs plus tail) and the (1-based) index of each run's last shape, ascending. A partition of
    more runs is taken only where it costs less by more than `tolerance` (so ties keep the
    smaller ladder, and index r of the result is optimal among ≤ r runs: costs never rise)."""
    inf = math.inf
    best: list[tuple[float, int, int]] = [(tail(0), 0, 0)]  # per r: (cost, runs used, last index)
    prev = [0.0] + [inf] * m  # dp[r-1][·]
    splits: list[list[int]] = []
    prev_opt = [0] * (m + 2)
    for r in range(1, min(max_runs, m) + 1):
        cur = [inf] * (m + 1)
        opt = [0] * (m + 2)
        opt[m + 1] = m
        for j in range(m, r - 1, -1):
            lo = max(prev_opt[j] if r > 1 else 0, r - 1)
            hi = min(opt[j + 1], j - 1)
            b, arg = inf, lo
            for i in range(lo, hi + 1):
                v = prev[i] + run(i, j)
                if v < b:
                    b, arg = v, i
            cur[j] = b
            opt[j] = arg
        splits.append(opt)
        here = best[-1]
        for j in range(r, m + 1):
            total = cur[j] + tail(j)
            if total < here[0] - tolerance:
                here = (total, r, j)
        best.append(here)
        prev, prev_opt = cur, opt
    out = []
    for total, r_used, j_last in best:
        ends: list[int] = []
        j = j_last
        for r in range(r_used, 0, -1):
            ends.append(j)
            j = splits[r - 1][j]
        ends.reverse()
        out.append((total, tuple(ends)))
    return out


def brute_force(
    m: int, max_runs: int, run: Callable[[int, int], float], tail: Callable[[int], float]
) -> float:
    """The optimal cost of at most `max_runs` runs by the plain O(k·m²) recurrence (for tests)."""
    best = tail(0)
    prev = [0.0] + [math.inf] * m
    for _ in range(min(max_runs, m)):
        cur = [math.inf] * (m + 1)
        for j in range(1, m + 1):
            cur[j] = min(prev[i] + run(i, j) for i in range(j))
        best = min(best, *(cur[j] + tail(j) for j in range(1, m + 1)))
        prev = cur
    return best


def sizes_of(ends: Sequence[int], tokens: Sequence[int]) -> tuple[int, ...]:
    """The capture sizes of a partition: each run's last shape's tokens."""
    return tuple(tokens[j - 1] for j in ends)
