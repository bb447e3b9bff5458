"""Ladder optimiser in time: the capture sizes that minimise the expected step time of a traffic
histogram under the step-latency model (core/predict/latency.py). Exact dynamic programming (pure).

A shape x (a uniform-decode batch of one tier, or a mixed batch) of t_x tokens and weight w_x
replays the smallest capture size s ≥ t_x; its step then costs f_k(s) + d_x, where f_k is the
modelled step time of a graph of s tokens for the shape's kind k (FULL for a decode tier,
PIECEWISE for mixed batches) and d_x is what does not depend on s (the drafter's decode steps).
Above the largest size it runs eager and costs e_x. With sorted shapes, a run i+1..j padded to
t_j costs Σ_k f_k(t_j)·(W_k,j − W_k,i): each term is Monge when f_k does not decrease with s
(a larger graph is never faster), so a sum of them is too, and Knuth's monotone split points
apply: the programme is core/optimize/partition.py, shared with the padding objective
(search.py). `brute_force_time` is the O(k·m²) definition it is tested against.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cgplan.core.optimize.partition import best_partitions, brute_force, sizes_of


@dataclass(frozen=True)
class TimedShape:
    """One batch shape of the histogram."""

    tokens: int
    weight: float
    kind: str
    """Which graph it replays: e.g. "decode:17" (FULL, that tier) or "mixed" (PIECEWISE)."""
    eager_ms: float
    """Its step time eager (past the ladder), less `fixed_ms`."""
    fixed_ms: float = 0.0
    """Its step time that no capture size changes (added to every outcome)."""


@dataclass(frozen=True)
class TimedSolution:
    """Chosen sizes and the modelled total time (Σ weight × step ms)."""

    sizes: tuple[int, ...]
    total_ms: float


def _prepare(
    shapes: Sequence[TimedShape], max_tokens: int
) -> tuple[list[int], list[str], dict[str, list[float]], list[float], float]:
    ts = sorted({s.tokens for s in shapes if s.weight > 0 and 0 < s.tokens <= max_tokens})
    kinds = sorted({s.kind for s in shapes})
    index = {t: i for i, t in enumerate(ts)}
    w = {k: [0.0] * len(ts) for k in kinds}
    eager = [0.0] * len(ts)
    const = 0.0
    for s in shapes:
        if s.weight <= 0:
            continue
        const += s.weight * s.fixed_ms
        if s.tokens in index:
            i = index[s.tokens]
            w[s.kind][i] += s.weight
            eager[i] += s.weight * s.eager_ms
        else:  # above the cap: eager whatever the ladder
            const += s.weight * s.eager_ms
    return ts, kinds, w, eager, const


def optimal_timed_ladders(
    shapes: Sequence[TimedShape],
    max_sizes: int,
    max_tokens: int,
    graph_ms: Callable[[str, int], float],
) -> list[TimedSolution]:
    """For every size count r = 0..max_sizes, the ladder of ≤ r sizes (each a shape's own token
    count ≤ max_tokens) minimising Σ w × step time. `graph_ms(kind, s)` must not decrease in s."""
    ts, kinds, w, eager, const = _prepare(shapes, max_tokens)
    m = len(ts)
    cum = {k: [0.0] * (m + 1) for k in kinds}
    for k in kinds:
        for i in range(m):
            cum[k][i + 1] = cum[k][i] + w[k][i]
    f = {k: [graph_ms(k, t) for t in ts] for k in kinds}
    tail = [0.0] * (m + 1)  # eager cost of shapes j+1..m
    for j in range(m - 1, -1, -1):
        tail[j] = tail[j + 1] + eager[j]

    def run(i: int, j: int) -> float:  # shapes i+1..j (1-based) padded to t_j
        return sum(f[k][j - 1] * (cum[k][j] - cum[k][i]) for k in kinds)

    return [
        TimedSolution(sizes_of(ends, ts), total + const)
        for total, ends in best_partitions(m, max_sizes, run, tail.__getitem__, 1e-12)
    ]


def brute_force_time(
    shapes: Sequence[TimedShape], max_sizes: int, max_tokens: int, graph_ms: Callable[[str, int], float]
) -> float:
    """The optimal total by the plain O(k·m²) recurrence (for tests)."""
    ts, kinds, w, eager, const = _prepare(shapes, max_tokens)
    m = len(ts)

    def run(i: int, j: int) -> float:
        return sum(w[k][x] * graph_ms(k, ts[j - 1]) for k in kinds for x in range(i, j))

    def tail(j: int) -> float:
        return sum(eager[x] for x in range(j, m))

    return brute_force(m, max_sizes, run, tail) + const
