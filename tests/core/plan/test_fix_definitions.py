"""The fix search against naive definitions, on small generated configs (issue 35 item 3).

tests/core/plan/test_fix_search.py holds every fix to the budgets and its paste; here each claim
the search makes is recomputed the slow, obvious way: "worse somewhere" point by point, the gaps a
fix closes by overlap, "no acceptable fix missed" by brute force over one more capture size on
small ladders, and the order of the fixes by the objective `propose_fixes` states (coverage, then
heavy padding, then mean padding beyond PADDING_TOLERANCE_PCT of the least padded, then memory;
no fix another beats on every figure the user pays).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Sequence
from typing import cast

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cgplan.core.model.modes import CGSupport, Mode, Platform
from cgplan.core.model.spec import ModelShape, PlanInput, SpeculativeSpec
from cgplan.core.model.types import Fix, Gap, Plan, Rejected
from cgplan.core.plan.budgets import FixBudgets
from cgplan.core.plan.build import build_plan
from cgplan.core.plan.gaps import (
    HEAVY_PADDING_PCT,
    MAX_WORST_PADDING_PCT,
    PADDING_TOLERANCE_PCT,
    FixSearch,
    _mixed_runs,
    _opens_gaps,
    _runs,
    _still_open,
    decode_outcomes,
    gap_batches,
    grid_count,
    padding_ratio,
    padding_tokens,
    rank_fixes,
    step_padding,
    tier_batches,
    worse_somewhere,
)
from cgplan.core.vllm.ladder import token_grid
from cgplan.core.vllm.releases import SUPPORTED_VERSIONS
from cgplan.errors import CgplanError
from cgplan.io.cost_coefficients import default_coefficients
from tests.core.plan.test_fix_search import apply_fix

Runs = Sequence[tuple[int, int, int]]


def _points(runs: Runs) -> dict[int, int]:
    return {p: rank for a, b, rank in runs for p in range(a, b + 1)}


def naive_worse(before: Runs, after: Runs) -> bool:
    """Some point has a lower rank after than before (a point missing from `after` is eager, 0)."""
    later = _points(after)
    return any(later.get(p, 0) < rank for p, rank in _points(before).items())


@st.composite
def runs(draw: st.DrawFn) -> list[tuple[int, int, int]]:
    """Sorted disjoint (first, last, rank) runs over 1..40, with holes (points in no run)."""
    ranks = draw(st.lists(st.sampled_from([None, 0, 1, 2]), min_size=1, max_size=40))
    out: list[tuple[int, int, int]] = []
    for p, rank in enumerate(ranks, start=1):
        if rank is None:
            continue
        if out and out[-1][1] == p - 1 and out[-1][2] == rank and draw(st.booleans()):
            out[-1] = (out[-1][0], p, rank)
        else:
            out.append((p, p, rank))
    return out


@settings(max_examples=250, deadline=None)
@given(runs(), runs())
def test_worse_somewhere_is_the_pointwise_definition(before: Runs, after: Runs) -> None:
    assert worse_somewhere(before, after) == naive_worse(before, after), (before, after)


def test_worse_somewhere_sees_a_one_point_hole_between_runs() -> None:
    # the boundary the run walk steps over: request 6 eager between two FULL runs
    assert naive_worse([(1, 10, 2)], [(1, 5, 2), (7, 10, 2)])
    assert worse_somewhere([(1, 10, 2)], [(1, 5, 2), (7, 10, 2)])


@st.composite
def small_configs(draw: st.DrawFn) -> PlanInput:
    """Small ladders with gaps likely: few explicit sizes, or a small maximum."""
    s = draw(st.integers(1, 12))
    b = draw(st.integers(s, 64))
    k = draw(st.sampled_from([None, 1, 2, 3]))
    spec = None if k is None else SpeculativeSpec(draw(st.sampled_from(["eagle", "eagle", "ngram"])), k, None)
    sizes = None
    max_size = None
    shape = draw(st.sampled_from(["list", "list", "max", "default"]))
    if shape == "list":  # sizes above max_num_batched_tokens too (vLLM drops them)
        sizes = tuple(sorted(set(draw(st.lists(st.integers(1, 2 * b), min_size=1, max_size=4)))))
    elif shape == "max":
        max_size = draw(st.integers(1, b))
    return PlanInput(
        vllm_version=draw(st.sampled_from(SUPPORTED_VERSIONS)),
        platform=Platform.HOPPER,
        model=ModelShape(),
        max_num_seqs=s,
        max_num_batched_tokens=b,
        speculative=spec,
        cudagraph_mode=draw(
            st.sampled_from([None, Mode.FULL_AND_PIECEWISE, Mode.FULL, Mode.FULL_DECODE_ONLY, Mode.PIECEWISE])
        ),
        max_cudagraph_capture_size=max_size,
        cudagraph_capture_sizes=sizes,
        model_runner=draw(st.sampled_from(["auto", "v1", "v2"])),
        # a backend below FULL support downgrades the mode: PIECEWISE gaps under a FULL request
        attention_cudagraph_support=draw(st.sampled_from([None, None, *CGSupport])),
    )


BUDGETS = FixBudgets(max_graphs_per_family=(("*", 40),))
SEARCH = FixSearch(BUDGETS, default_coefficients())


def _planned(inp: PlanInput, search: FixSearch | None = None) -> Plan | None:
    try:
        return build_plan(inp, search=search) if search else build_plan(inp, with_fixes=False)
    except (Rejected, ValueError):
        return None


def _acceptable(plan: Plan, after: Plan, budgets: bool = True) -> bool:
    """What every fix must be, by definition: no batch worse (decode or mixed), no graph budget
    broken that the plan kept (with `budgets`), no padding absurder than MAX_WORST_PADDING_PCT (or
    the plan's)."""
    if naive_worse(_runs(plan), _runs(after)) or naive_worse(_mixed_runs(plan), _mixed_runs(after)):
        return False
    # the same, batch by batch from the dispatch tables, FULL above PIECEWISE above eager
    rank = {"FULL": 2, "PIECEWISE": 1, "NONE": 0}
    decode = {(q, n): rank[m] for q, n, m, _ in _batches(after)}
    mixed = {n: rank[r.mode] for r in after.mixed for n in range(r.first, r.last + 1)}
    if any(decode.get((q, n), 0) < rank[m] for q, n, m, _ in _batches(plan)):
        return False
    if any(mixed.get(n, 0) < rank[r.mode] for r in plan.mixed for n in range(r.first, r.last + 1)):
        return False
    for family, graphs in after.graphs.items() if budgets else ():
        limit = BUDGETS.graph_limit(family)
        if limit is not None and len(graphs) > max(limit, len(plan.graphs.get(family, ()))):
            return False
    return step_padding(after).worst_pct <= max(MAX_WORST_PADDING_PCT, step_padding(plan).worst_pct)


def _closed_naively(plan: Plan, after: Plan) -> tuple[int, ...]:
    """The gaps of `plan` no gap of `after` overlaps (same tier, a request count in common)."""
    return tuple(
        i
        for i, g in enumerate(plan.gaps)
        if all(
            h.query_len != g.query_len
            or not set(range(g.first, g.last + 1)) & set(range(h.first, h.last + 1))
            for h in after.gaps
        )
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_configs())
@example(
    PlanInput(
        vllm_version="0.26.0",
        platform=Platform.HOPPER,
        model=ModelShape(num_key_value_heads=32),
        max_num_seqs=5,
        max_num_batched_tokens=10,
        speculative=SpeculativeSpec("eagle", 1, None),
        cudagraph_mode=Mode.PIECEWISE,
        cudagraph_capture_sizes=(1, 4),
        model_runner="v1",
    )
)  # found on Python 3.12: FULL on V1 rounds the list's 1 to 2, then one exact count (10) is appended
def test_every_fix_closes_what_it_claims(inp: PlanInput) -> None:
    plan = _planned(inp, SEARCH)
    if plan is None:
        return
    for fix in plan.fixes:
        after = build_plan(apply_fix(inp, fix), with_fixes=False)
        assert _acceptable(plan, after), fix.command_line
        assert fix.closes == _closed_naively(plan, after), fix.command_line
        assert fix.remaining_gaps == len(after.gaps) and fix.complete == (not after.gaps)
        assert gap_batches(after) < gap_batches(plan)  # a fix closes something
        _check_words(plan, inp, fix)


def _check_words(plan: Plan, inp: PlanInput, fix: Fix) -> None:
    """Each change a fix names is the change its flags make."""
    fixed = apply_fix(inp, fix)
    # what the config captures with the fix's other changes (a mode a stage-one change sets: V1
    # rounds an explicit list to multiples of the query length under FULL, 1 -> 2 at K = 1)
    base = dataclasses.replace(
        fixed,
        cudagraph_capture_sizes=inp.cudagraph_capture_sizes,
        max_cudagraph_capture_size=inp.max_cudagraph_capture_size,
    )
    try:
        before = set(build_plan(base, with_fixes=False).capture_sizes)
    except CgplanError:
        before = set(plan.capture_sizes)
    after = set(fixed.cudagraph_capture_sizes or ())
    for words in fix.changes:
        if m := re.fullmatch(r"raise max_cudagraph_capture_size to (\d+)", words):
            assert fixed.max_cudagraph_capture_size == int(m[1]), words
        elif m := re.fullmatch(r"extend the size list with vLLM's token grid up to (\d+)", words):
            top = int(m[1])
            grid = {
                x
                for x in token_grid(top, inp.performance_mode == "interactivity")
                if x > max(before, default=0)
            }
            assert grid | {top} <= after and max(after) == top, words
        elif m := re.fullmatch(
            r"append (\d+) exact token count\(s\) to the capture sizes"
            r"|append per-tier request grids \((\d+) sizes\)",
            words,
        ):
            assert len(after - before) == int(m[1] or m[2]), words


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_configs(), st.booleans())
# (found by the generator) no change closes request 5 of the K=0 tier: the partial fix must be offered
@example(
    PlanInput(
        vllm_version="0.32.0",
        platform=Platform.HOPPER,
        model=ModelShape(),
        max_num_seqs=7,
        max_num_batched_tokens=38,
        speculative=SpeculativeSpec("eagle", 4, ((1, 6, 0), (7, 9, 4))),
        max_cudagraph_capture_size=5,
        model_runner="v2",
    ),
    False,
)
def test_no_one_size_fix_is_missed(inp: PlanInput, over: bool) -> None:
    """Brute force over the capture list with one more size (every size up to
    max_num_batched_tokens): where one of them closes every gap acceptably (within the graph
    budget, or with over-budget fixes asked for at any graph count), the search offers a complete
    fix; and its first fix leaves no more gap batches than the best of them."""
    search = dataclasses.replace(SEARCH, allow_over_budget=over)
    plan = _planned(inp)
    if plan is None or not plan.gaps:
        return
    best = gap_batches(plan)
    complete_exists = False
    base = set(plan.capture_sizes)
    for x in range(1, inp.max_num_batched_tokens + 1):
        if x in base:
            continue
        sizes = tuple(sorted(base | {x}))
        cand = dataclasses.replace(
            inp,
            cudagraph_capture_sizes=sizes,
            max_cudagraph_capture_size=sizes[-1] if inp.max_cudagraph_capture_size is not None else None,
        )
        after = _planned(cand)
        if after is None or not _acceptable(plan, after, budgets=not over):
            continue
        best = min(best, gap_batches(after))
        complete_exists = complete_exists or not after.gaps
    fixes = build_plan(inp, search=search).fixes
    if best < gap_batches(plan):
        assert fixes, f"a one-size change leaves {best} gap batches, the search offers nothing"
        first = build_plan(apply_fix(inp, fixes[0]), with_fixes=False)
        assert gap_batches(first) <= best, fixes[0].command_line
    if complete_exists:
        assert fixes[0].complete, fixes[0].command_line


def _figures(f: Fix) -> tuple[float, ...]:
    sp = f.step_padding_after
    assert sp is not None and f.pool_after_mib is not None and f.capture_after_s is not None
    return (
        float(f.remaining_gaps),
        f.pool_after_mib,
        float(f.graphs_after),
        f.capture_after_s,
        sp.worst_pct,
        sp.mean_pct,
    )


def _mean(f: Fix) -> float:
    assert f.step_padding_after is not None
    return f.step_padding_after.mean_pct


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_configs())
def test_fixes_are_ranked_by_the_stated_objective(inp: PlanInput) -> None:
    plan = _planned(inp, SEARCH)
    if plan is None or not plan.fixes:
        return
    fixes = plan.fixes
    assert len(fixes) <= SEARCH.max_fixes
    assert len({f.command_line for f in fixes}) == len(fixes)  # no change offered twice
    assert all(f.complete for f in fixes) or len(fixes) == 1  # a partial fix only alone
    pad0 = step_padding(plan).mean_pct
    least = min(_mean(f) for f in fixes)  # the least padded found is at most this one

    def heavy(f: Fix) -> bool:
        return _mean(f) > max(HEAVY_PADDING_PCT, pad0)

    for f, g in itertools.combinations(fixes, 2):  # f is offered before g
        # no offered fix beats another on every figure (the Pareto front)
        assert not (
            all(x <= y for x, y in zip(_figures(g), _figures(f), strict=True)) and _figures(g) != _figures(f)
        )
        assert (f.remaining_gaps, heavy(f)) <= (g.remaining_gaps, heavy(g))
        if (f.remaining_gaps, heavy(f)) == (g.remaining_gaps, heavy(g)) and _mean(
            f
        ) > least + PADDING_TOLERANCE_PCT:
            # f is padded beyond the tolerance of the least padded: only padding can put it first
            assert _mean(f) <= _mean(g), (f.command_line, g.command_line)


def _batches(plan: Plan) -> list[tuple[int, int, str, int | None]]:
    """(query_len, requests, mode, padded tokens) of every uniform-decode batch of every tier that
    fits max_num_batched_tokens (the scheduler never forms a wider one), looked up one by one in the
    plan's dispatch tables (a batch in no run is eager)."""
    out: list[tuple[int, int, str, int | None]] = []
    for ql, ranges in sorted(plan.uniform_decode.items()):
        if plan.dynamic_sd_lookup is None:
            tiers = [(1, plan.max_num_seqs)] if ql == plan.uniform_decode_query_len else []
        else:
            tiers = [(a, b) for a, b, k in plan.dynamic_sd_lookup if k + 1 == ql]
        for a, b in tiers:
            for n in range(a, min(b, plan.max_num_batched_tokens // ql) + 1):
                hit = [r for r in ranges if r.first <= n <= r.last]
                assert len(hit) <= 1
                out.append((ql, n, hit[0].mode, hit[0].padded_tokens) if hit else (ql, n, "NONE", None))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_configs())
def test_gaps_and_padding_are_their_definitions(inp: PlanInput) -> None:
    plan = _planned(inp)
    if plan is None:
        return
    batches = _batches(plan)
    # a gap: a batch that runs eager, or PIECEWISE where FULL decode was resolved or asked for
    full = Mode.FULL in (
        Mode(plan.cudagraph_mode).decode_mode(),
        Mode(plan.requested_cudagraph_mode).decode_mode(),
    )
    in_gaps = {
        (ql, n): mode for ql, n, mode, _ in batches if mode == "NONE" or (mode == "PIECEWISE" and full)
    }
    assert {(g.query_len, n): g.mode for g in plan.gaps for n in range(g.first, g.last + 1)} == in_gaps
    assert gap_batches(plan) == len(in_gaps)
    # padding over the graph-replayed batches, each batch once
    replayed = [(ql, n, p) for ql, n, mode, p in batches if mode != "NONE" and p is not None]
    pcts = [100.0 * (p - n * ql) / (n * ql) for ql, n, p in replayed]
    sp = step_padding(plan)
    assert sp.replayed_batches == len(replayed)
    assert padding_tokens(plan) == sum(p - n * ql for ql, n, p in replayed)
    if not replayed:
        assert (sp.worst_pct, sp.mean_pct, sp.worst_reqs, sp.worst_query_len) == (0.0, 0.0, None, None)
        return
    assert abs(sp.mean_pct - max(0.0, sum(pcts) / len(pcts))) < 0.011
    assert abs(sp.worst_pct - max(0.0, max(pcts))) < 0.011
    # the worst batch it names is one: its request count and its tier
    at = [
        pct
        for (ql, n, _), pct in zip(replayed, pcts, strict=True)
        if (n, ql) == (sp.worst_reqs, sp.worst_query_len)
    ]
    assert at and abs(at[0] - max(pcts)) < 1e-6, (sp, max(pcts))
    for ql in {ql for ql, _, _ in replayed}:
        tier = [(n, p) for q, n, p in replayed if q == ql]
        ratio = padding_ratio(plan, ql)
        assert (
            ratio is not None and abs(ratio - sum(p for _, p in tier) / sum(n * ql for n, _ in tier)) < 1e-9
        )


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 600), st.integers(1, 600))
def test_grid_count_counts_vllms_grid(lo: int, hi: int) -> None:
    # the token grid and the request-count grid share vLLM's shape (token_grid, request_counts)
    assert grid_count(lo, hi) == sum(1 for n in token_grid(hi, interactivity=False) if lo <= n <= hi)


@pytest.mark.parametrize(
    ("spans", "words"),
    [
        ([(3, 3)], "1 batch sizes in 1 gap(s) stay open (requests 3; 4 tokens/request)"),
        ([(3, 9)], "7 batch sizes in 1 gap(s) stay open (requests 3-9; 4 tokens/request)"),
        (
            [(1, 1), (3, 4), (6, 6), (8, 10), (12, 12)],
            "8 batch sizes in 5 gap(s) stay open (requests 1, 3-4, 6, 8-10 and 1 more; 4 tokens/request)",
        ),
    ],
)
def test_a_partial_fix_names_what_stays_open(spans: list[tuple[int, int]], words: str) -> None:
    # a single request count reads as one number, a run as first-last; four named, the rest counted
    plan = build_plan(
        PlanInput(
            vllm_version="0.33.0",
            platform=Platform.HOPPER,
            model=ModelShape(),
            max_num_seqs=16,
            max_num_batched_tokens=64,
            speculative=SpeculativeSpec("eagle", 3, None),
        ),
        with_fixes=False,
    )
    gaps = tuple(Gap("uniform_decode", 4, a, b, "NONE", "why") for a, b in spans)
    assert _still_open(dataclasses.replace(plan, gaps=gaps)) == words
    assert _still_open(dataclasses.replace(plan, gaps=())) == ""


_keys = st.tuples(
    st.integers(0, 1),  # gap batches left
    st.booleans(),  # heavily padded
    st.integers(0, 12).map(lambda x: x / 4),  # mean padding %: 0.25 steps, the tolerance's edge hit
    st.booleans(),  # memory beyond the plan's validated domain
    st.integers(0, 5),  # MiB
    st.integers(0, 5),  # graphs
    st.floats(0, 3, allow_nan=False).map(lambda x: round(x, 1)),  # capture s
    st.floats(0, 100, allow_nan=False).map(lambda x: round(x, 1)),  # worst padding %
    st.integers(0, 3),  # flag length
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_keys, max_size=8))
# exactly PADDING_TOLERANCE_PCT above the least padded is within it: memory decides
@example([(0, False, 1.0, False, 1, 0, 0.0, 0.0, 0), (0, False, 0.0, False, 2, 0, 0.0, 0.0, 0)])
def test_rank_fixes_follows_the_stated_objective(keys: list[tuple]) -> None:  # type: ignore[type-arg]
    """Coverage, then heavy padding, then mean padding where it is more than PADDING_TOLERANCE_PCT
    above the least padded fix's (within it, as padded as the least), then memory beyond the
    plan's validated domain last, then memory, graphs, capture time, worst and mean padding, flag
    length; ties keep the order found."""
    found = [
        (gaps, heavy, mean, beyond, mib, graphs, cap, worst, mean, flags)
        for gaps, heavy, mean, beyond, mib, graphs, cap, worst, flags in keys
    ]
    least = min((k[2] for k in found), default=0.0)

    def objective(i: int) -> tuple:  # type: ignore[type-arg]
        k = found[i]
        padding = least if k[2] <= least + PADDING_TOLERANCE_PCT else k[2]
        return (k[0], k[1], padding, *k[3:], i)

    fixes = [(cast(Fix, i), k) for i, k in enumerate(found)]
    assert [cast(int, f) for f in rank_fixes(fixes)] == sorted(range(len(found)), key=objective)


def _naive_opens(before: Plan, after: Plan) -> bool:
    """Some batch of `before` has a lower graph mode in `after`, FULL above PIECEWISE above eager:
    each uniform-decode request count of each tier, and each mixed token count, looked up one by
    one (a batch in no run is eager)."""
    rank = {"FULL": 2, "PIECEWISE": 1, "NONE": 0}
    decode = {(q, n): rank[m] for q, n, m, _ in _batches(after)}
    mixed = {n: rank[r.mode] for r in after.mixed for n in range(r.first, r.last + 1)}
    return any(decode.get((q, n), 0) < rank[m] for q, n, m, _ in _batches(before)) or any(
        mixed.get(n, 0) < rank[r.mode] for r in before.mixed for n in range(r.first, r.last + 1)
    )


_MODES = st.sampled_from(
    [None, Mode.FULL_AND_PIECEWISE, Mode.FULL, Mode.FULL_DECODE_ONLY, Mode.PIECEWISE, Mode.NONE]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    small_configs(),
    _MODES,
    st.none() | st.integers(1, 64) | st.lists(st.integers(1, 128), min_size=1, max_size=5).map(tuple),
)
# a FULL plan against its FULL_AND_PIECEWISE twin: every mixed batch FULL -> PIECEWISE, decode kept
@example(
    PlanInput(
        vllm_version="0.33.0",
        platform=Platform.HOPPER,
        model=ModelShape(),
        max_num_seqs=4,
        max_num_batched_tokens=16,
        cudagraph_mode=Mode.FULL,
        model_runner="v1",
    ),
    Mode.FULL_AND_PIECEWISE,
    None,
)
def test_opens_gaps_is_the_batch_by_batch_definition(
    inp: PlanInput, mode: Mode | None, sizes: int | tuple[int, ...] | None
) -> None:
    """`_opens_gaps` (what keeps a candidate out of the fixes) against the batch-by-batch
    comparison, on the same config under another mode and other capture sizes (an explicit list,
    or an explicit maximum; the same tiers)."""
    other = dataclasses.replace(inp, cudagraph_mode=mode)
    if isinstance(sizes, tuple):
        listed = tuple(sorted(set(sizes)))
        other = dataclasses.replace(other, cudagraph_capture_sizes=listed, max_cudagraph_capture_size=None)
    elif sizes is not None:
        top = min(sizes, inp.max_num_batched_tokens)
        other = dataclasses.replace(other, cudagraph_capture_sizes=None, max_cudagraph_capture_size=top)
    before, after = _planned(inp), _planned(other)
    if before is None or after is None:
        return
    for x, y in ((before, after), (after, before)):
        assert _opens_gaps(x, y) == _naive_opens(x, y), (x.cudagraph_mode, y.cudagraph_mode)
        assert _opens_gaps(x, y, _runs(x), _mixed_runs(x)) == _naive_opens(x, y)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_configs())
def test_tier_batches_split_the_request_counts(inp: PlanInput) -> None:
    """Without a dynamic-SD schedule every request count 1..max_num_seqs decodes at the one query
    length; with one, the tiers are its runs at 1 + K, disjoint, from request 1."""
    plan = _planned(inp)
    if plan is None:
        return
    tiers = {ql: tier_batches(plan, ql) for ql in range(1, 10)}
    points = [n for spans in tiers.values() for a, b in spans for n in range(a, b + 1)]
    assert len(points) == len(set(points)) and min(points) == 1
    if plan.dynamic_sd_lookup is None:
        assert sorted(points) == list(range(1, plan.max_num_seqs + 1))
        assert [ql for ql, spans in tiers.items() if spans] == [plan.uniform_decode_query_len]
    else:
        assert tiers == {
            ql: [(a, b) for a, b, k in plan.dynamic_sd_lookup if k + 1 == ql] for ql in range(1, 10)
        }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_configs())
# a dynamic-SD schedule: each tier's span is part of its table, whose other runs it does not meet
@example(
    PlanInput(
        vllm_version="0.32.0",
        platform=Platform.HOPPER,
        model=ModelShape(),
        max_num_seqs=9,
        max_num_batched_tokens=38,
        speculative=SpeculativeSpec("eagle", 4, ((1, 6, 0), (7, 9, 4))),
        cudagraph_capture_sizes=(2, 5, 9, 30),
        model_runner="v2",
    )
)
def test_decode_outcomes_do_not_depend_on_the_tables_order(inp: PlanInput) -> None:
    """`decode_outcomes` over a plan whose dispatch tables list their runs backwards: the same
    (tier, requests, mode, padded tokens) batch by batch as the lookup one by one, each batch once,
    in the same runs."""
    plan = _planned(inp)
    if plan is None:
        return
    shuffled = {ql: ranges[::-1] for ql, ranges in plan.uniform_decode.items()}
    other = dataclasses.replace(plan, uniform_decode=shuffled)
    for p in (plan, other):
        batches = [
            (ql, n, mode, padded) for ql, a, b, mode, padded in decode_outcomes(p) for n in range(a, b + 1)
        ]
        assert sorted(batches, key=str) == sorted(_batches(plan), key=str)
    # the same runs, each a tier's span cut by one dispatch run (never empty)
    assert sorted(decode_outcomes(other), key=str) == sorted(decode_outcomes(plan), key=str)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_configs(), st.integers(1, 12))
def test_decode_outcomes_follow_the_cut_of_a_copy_sharing_the_tables(inp: PlanInput, seqs: int) -> None:
    """A replaced copy of a plan shares its dispatch tables: read after the plan, under another
    max_num_seqs (another tier cut), its outcomes are its own cut's, batch by batch, and the plan's
    stay the plan's (decode_outcomes' memo is keyed by the tables and the cut)."""
    plan = _planned(inp)
    if plan is None:
        return
    copy = dataclasses.replace(plan, max_num_seqs=min(seqs, plan.max_num_seqs))
    for p in (plan, copy, plan):
        batches = [
            (ql, n, mode, padded) for ql, a, b, mode, padded in decode_outcomes(p) for n in range(a, b + 1)
        ]
        assert sorted(batches, key=str) == sorted(_batches(p), key=str)
