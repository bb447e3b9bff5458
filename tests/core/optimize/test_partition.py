"""The optimiser's one dynamic programme (cgplan/core/optimize/partition.py): Knuth's bounds give
the plain recurrence's optimum, and both objectives (padding, step time) run through it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgplan.core.optimize import partition, search, timed
from cgplan.core.optimize.timed import TimedShape


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 300), st.floats(0.1, 50)), max_size=30),
    st.integers(0, 8),
    st.floats(0, 2000),
)
def test_knuth_bounds_give_the_plain_recurrences_optimum(
    shapes: list[tuple[int, float]], runs: int, eager: float
) -> None:
    ts = sorted({t for t, _ in shapes})
    ws = [sum(w for t, w in shapes if t == x) for x in ts]
    m = len(ts)

    def run(i: int, j: int) -> float:
        return sum(ws[x] * (ts[j - 1] - ts[x]) for x in range(i, j))

    def tail(j: int) -> float:
        return eager * sum(ws[j:])

    got = partition.best_partitions(m, runs, run, tail, 1e-9)
    assert len(got) == min(runs, m) + 1
    for r, (cost, ends) in enumerate(got):
        assert len(ends) <= r and list(ends) == sorted(set(ends))
        assert cost == pytest.approx(partition.brute_force(m, r, run, tail), rel=1e-9, abs=1e-6)
        assert r == 0 or cost <= got[r - 1][0]  # never rises with r


def test_both_objectives_run_the_one_programme(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = partition.best_partitions

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "best_partitions", spy)
    monkeypatch.setattr(timed, "best_partitions", spy)
    assert search.optimal_sizes([(3, 1.0), (4, 1.0), (8, 1.0)], 2, 8).sizes == (4, 8)
    shapes = [TimedShape(t, 1.0, "mixed", 10.0) for t in (3, 4, 8)]
    best = timed.optimal_timed_ladders(shapes, 2, 8, lambda _k, s: 1.0 + s / 100)[-1]
    assert len(best.sizes) == 2 and best.sizes[-1] == 8
    assert calls == [3, 3]
