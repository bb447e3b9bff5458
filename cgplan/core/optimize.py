"""Ladder optimiser: the capture sizes that minimise expected padding plus eager cost for a
traffic histogram, under a size budget. Exact dynamic programming (pure).

Model. A batch of t tokens replays the smallest capture size s ≥ t and wastes s − t padded
tokens; a batch above the largest size runs eager, costing `eager_step_cost` token-equivalents
per step (the launch overhead a graph saves; a knob: it depends on the model and GPU).
Both vLLM dispatchers pad this way for mixed batches, and for uniform decode batches when
the size is a multiple of the tier's query length (every candidate is a shape's own token
count, so it is). With several dynamic-SD tiers a size also yields rounded graphs for the
other tiers; the result is therefore always re-planned through the real dispatcher model
before it is reported.

Search. Shapes sorted by tokens t_1 < … < t_m with weights w_i; choosing r sizes is
partitioning the sorted shapes into r runs, each padded to its last element:
    dp[r][j] = min_{i<j} dp[r-1][i] + t_j·(W_j − W_i) − (T_j − T_i)
The run cost is Monge (it satisfies the quadrangle inequality), so the optimal split points
are monotone (opt[r-1][j] ≤ opt[r][j] ≤ opt[r][j+1]) and Knuth's bounds give O(k·m) total,
not O(k·m²). `brute_force_sizes` is the O(k·m²) definition it is tested against.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Solution:
    """Chosen sizes and their modelled cost."""

    sizes: tuple[int, ...]
    padded_tokens: float
    eager_steps: float
    cost: float


def _prepare(shapes: Sequence[tuple[int, float]], max_tokens: int) -> tuple[list[int], list[float], float]:
    weights: dict[int, float] = {}
    over = 0.0  # steps no graph may take (above the size cap): eager whatever we choose
    for t, w in shapes:
        if w <= 0 or t <= 0:
            continue
        if t > max_tokens:
            over += w
        else:
            weights[t] = weights.get(t, 0.0) + w
    ts = sorted(weights)
    return ts, [weights[t] for t in ts], over


def optimal_ladders(
    shapes: Sequence[tuple[int, float]], max_sizes: int, max_tokens: int, eager_step_cost: float = 1000.0
) -> list[Solution]:
    """For every size count r = 0..max_sizes, the best ladder of at most r sizes ≤ max_tokens.

    Index r of the result is optimal among ladders of ≤ r sizes (so costs never rise with r).
    """
    ts, ws, over = _prepare(shapes, max_tokens)
    m = len(ts)
    c = eager_step_cost
    big_w = [0.0] * (m + 1)
    big_t = [0.0] * (m + 1)
    for i in range(m):
        big_w[i + 1] = big_w[i] + ws[i]
        big_t[i + 1] = big_t[i] + ws[i] * ts[i]
    k = min(max_sizes, m)
    inf = math.inf

    def run(i: int, j: int) -> float:  # shapes i+1..j (1-based) padded to t_j
        tj = ts[j - 1]
        return tj * (big_w[j] - big_w[i]) - (big_t[j] - big_t[i])

    def eager(j: int) -> float:
        return c * (big_w[m] - big_w[j])

    best: list[tuple[float, int, int]] = [(eager(0), 0, 0)]  # per r: (cost, r used, last index)
    prev = [0.0] + [inf] * m  # dp[r-1][·]
    splits: list[list[int]] = []
    prev_opt = [0] * (m + 2)
    for r in range(1, k + 1):
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
            total = cur[j] + eager(j)
            if total < here[0] - 1e-9:
                here = (total, r, j)
        best.append(here)
        prev, prev_opt = cur, opt
    out = []
    for total, r_used, j_last in best:
        sizes: list[int] = []
        j = j_last
        for r in range(r_used, 0, -1):
            sizes.append(ts[j - 1])
            j = splits[r - 1][j]
        sizes.reverse()
        steps = (big_w[m] - big_w[j_last]) + over
        out.append(Solution(tuple(sizes), total - c * (big_w[m] - big_w[j_last]), steps, total + c * over))
    return out


def optimal_sizes(
    shapes: Sequence[tuple[int, float]], max_sizes: int, max_tokens: int, eager_step_cost: float = 1000.0
) -> Solution:
    """The best ≤ max_sizes capture sizes ≤ max_tokens for (tokens, steps) shapes.

    >>> optimal_sizes([(3, 1.0), (4, 1.0), (8, 1.0)], max_sizes=2, max_tokens=8).sizes
    (4, 8)
    """
    return optimal_ladders(shapes, max_sizes, max_tokens, eager_step_cost)[-1]


def brute_force_sizes(
    shapes: Sequence[tuple[int, float]], max_sizes: int, max_tokens: int, eager_step_cost: float = 1000.0
) -> float:
    """The optimal cost by the plain O(k·m²) recurrence (for tests)."""
    ts, ws, over = _prepare(shapes, max_tokens)
    m = len(ts)
    c = eager_step_cost
    total_w = sum(ws)

    def run(i: int, j: int) -> float:
        return sum(ws[x] * (ts[j - 1] - ts[x]) for x in range(i, j))

    def tail(j: int) -> float:
        return c * sum(ws[x] for x in range(j, m))

    best = c * total_w
    prev = [0.0] + [math.inf] * m
    for _ in range(min(max_sizes, m)):
        cur = [math.inf] * (m + 1)
        for j in range(1, m + 1):
            cur[j] = min(prev[i] + run(i, j) for i in range(j))
        best = min(best, *(cur[j] + tail(j) for j in range(1, m + 1)))
        prev = cur
    return best + c * over
