"""Every figure and word a fix prints, against its naive definition (issue 35's mutation survivors
of the fix search, killed as classes).

tests/core/plan/test_fix_definitions.py holds the search's choices (what it closes, what it
misses, its order); here each printed claim is recomputed the obvious way: the gaps a fix closes
and the text of what stays open from generated gap sets, the fix's graphs, padding, memory and
capture time from the plan of the fixed config, the budget breaks from each budget's own
definition (over the limit and worse than before), the flags from the change they make, the
padding sums batch by batch, and the words of each change from the flags.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shlex
from collections.abc import Sequence

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cgplan.core.model.modes import Mode, Platform
from cgplan.core.model.spec import VLLM_COMPILE, ModelShape, PlanInput, SpeculativeSpec
from cgplan.core.model.types import Fix, Gap, Plan, Rejected
from cgplan.core.plan import gaps as gaps_mod
from cgplan.core.plan.budgets import FixBudgets
from cgplan.core.plan.build import build_plan
from cgplan.core.plan.gaps import (
    FixSearch,
    _budget_breaks,
    _closed,
    _floor_breaks,
    _graph_breaks,
    _harmonic,
    _size_candidates,
    _still_open,
    config_yaml,
    fix_flags,
    graph_count,
    padding_ratio,
    range_padding,
    step_padding,
)
from cgplan.core.plan.policies import BUILTIN_POLICIES, CapturePolicy
from cgplan.core.predict.cost import plan_cost_totals
from cgplan.core.vllm.ladder import request_counts, token_grid
from cgplan.io.config import load_config
from cgplan.io.cost_coefficients import default_coefficients
from tests.core.plan.test_fix_definitions import _batches, _closed_naively, _planned, small_configs
from tests.core.plan.test_fix_search import apply_fix
from tests.paths import ROOT_DIR

COEFFICIENTS = default_coefficients()

# ---- sums the search takes in O(1), batch by batch ----------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3000))
@example(127)
@example(128)
@example(129)
def test_harmonic_is_the_sum(n: int) -> None:
    # the table below 128 and the asymptotic series above it: both within 1e-15 of the sum
    exact = math.fsum(1.0 / k for k in range(1, n + 1))
    assert abs(_harmonic(n) - exact) <= 4e-14 * max(1.0, exact), n


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8), st.integers(1, 400), st.integers(0, 300), st.integers(0, 200))
def test_range_padding_is_the_sum_over_its_batches(ql: int, first: int, span: int, extra: int) -> None:
    last = first + span
    padded = last * ql + extra  # one graph wide enough for the widest batch
    excess, pct_sum, worst = range_padding(ql, first, last, padded)
    batches = range(first, last + 1)
    assert excess == sum(padded - n * ql for n in batches)
    assert math.isclose(
        pct_sum, math.fsum(100.0 * (padded - n * ql) / (n * ql) for n in batches), abs_tol=1e-6
    )
    assert math.isclose(worst, max(100.0 * (padded - n * ql) / (n * ql) for n in batches), abs_tol=1e-9)


# ---- closed and still open, on generated gap sets ------------------------------------------------


BASE_INPUT = PlanInput(
    vllm_version="0.33.0",
    platform=Platform.HOPPER,
    model=ModelShape(),
    max_num_seqs=16,
    max_num_batched_tokens=64,
    speculative=SpeculativeSpec("eagle", 3, None),
)
BASE = build_plan(BASE_INPUT, with_fixes=False)
# 4, 8, 9, 10 and 17 tokens a request: on both sides of the rounding bound (q <= 8, 16 // q)
BASES = {
    k: (i, build_plan(i, with_fixes=False))
    for k in (3, 7, 8, 9, 16)
    for i in [dataclasses.replace(BASE_INPUT, speculative=SpeculativeSpec("eagle", k, None))]
}


@st.composite
def gap_sets(draw: st.DrawFn) -> tuple[Gap, ...]:
    """Sorted disjoint request-count runs over 1..30 in one or two tiers (a run may touch the next)."""
    out: list[Gap] = []
    for ql in draw(st.sampled_from([(4,), (1, 4), (2, 5)])):
        n = draw(st.integers(0, 30))
        pos = 1
        while len(out) < 12:
            pos += draw(st.integers(0, 3))
            if pos > n:
                break
            end = pos + draw(st.sampled_from([0, 1, 2, 3, 6, 7, 8, 9]))  # a fallback of 8 batches is short
            out.append(
                Gap("uniform_decode", ql, pos, end, draw(st.sampled_from(["NONE", "PIECEWISE"])), "why")
            )
            pos = end + 1
    return tuple(out)


def _spans(gaps: tuple[Gap, ...]) -> list[str]:
    return [str(g.first) if g.first == g.last else f"{g.first}-{g.last}" for g in gaps]


@settings(max_examples=300, deadline=None)
@given(gap_sets(), gap_sets())
# one gap each, in one tier, meeting at one request count only: not closed
@example(
    (Gap("uniform_decode", 4, 1, 5, "NONE", "why"),),
    (Gap("uniform_decode", 4, 5, 9, "NONE", "why"),),
)
def test_closed_and_still_open_are_their_definitions(before: tuple[Gap, ...], after: tuple[Gap, ...]) -> None:
    p0, p1 = dataclasses.replace(BASE, gaps=before), dataclasses.replace(BASE, gaps=after)
    assert _closed(p0, p1) == _closed_naively(p0, p1)
    words = _still_open(p1)
    if not after:
        assert words == ""
        return
    m = re.fullmatch(
        r"(\d+) batch sizes in (\d+) gap\(s\) stay open "
        r"\(requests (.*?)( and (\d+) more)?; (.*) tokens/request\)",
        words,
    )
    assert m, words
    assert int(m[1]) == sum(g.last - g.first + 1 for g in after)
    assert int(m[2]) == len(after)
    assert m[3].split(", ") == _spans(after[:4])
    assert (int(m[5]) if m[5] else 0) == max(0, len(after) - 4)
    assert [int(x) for x in m[6].split(", ")] == sorted({g.query_len for g in after if g.query_len})


# ---- the size changes aimed at a plan's gaps, as their words define them --------------------------


def _short_fallback(g: Gap) -> set[int]:
    """Every batch of a PIECEWISE fallback of fewer than 8 extra request counts: each its own size."""
    q = g.query_len or 0
    return (
        {n * q for n in range(g.first, g.last + 1)}
        if g.mode == "PIECEWISE" and g.last - g.first < 8
        else set()
    )


@settings(max_examples=400, deadline=None)
@given(
    gap_sets(), st.sampled_from([None, 1, 2, 4, 8, 16, 1000]), st.booleans(), st.sampled_from(sorted(BASES))
)
# an eager gap whose widest batch is exactly the largest graph: not above it
@example((Gap("uniform_decode", 4, 1, 16, "NONE", "why"),), None, False, 3)
# 9 tokens a request, the grid up to 72: 64 and 72 both round up to 72 (8 graphs from 9 grid sizes
# from 8 on), so a limit of 8 must not leave the raised maximum out
@example((Gap("uniform_decode", 4, 1, 8, "NONE", "why"),), 8, False, 8)
# 4 tokens a request, the grid up to 16 holds 8 and 16 (2 sizes that stay distinct): over a limit of 1
@example((Gap("uniform_decode", 4, 1, 4, "NONE", "why"),), 1, False, 3)
def test_size_candidates_are_their_words(
    gaps: tuple[Gap, ...], limit: int | None, listed: bool, k: int
) -> None:
    base_inp, base = BASES[k]
    q = k + 1
    gaps = tuple(dataclasses.replace(g, query_len=q if g.query_len == 4 else g.query_len) for g in gaps)
    inp = dataclasses.replace(base_inp, cudagraph_capture_sizes=base.capture_sizes if listed else None)
    plan = dataclasses.replace(base, gaps=gaps)
    got = {c.what: c.inp for c in _size_candidates(plan, inp, limit)}
    if not gaps:
        assert not got
        return
    have = set(plan.capture_sizes)
    widest = max(g.last * (g.query_len or 0) for g in gaps)
    beyond = any(g.mode == "NONE" and g.last * (g.query_len or 0) > plan.max_capture_size for g in gaps)

    def fits(count: int) -> bool:
        return limit is None or count <= limit

    def sizes(c: PlanInput) -> set[int]:
        return set(c.cudagraph_capture_sizes or ())

    want: list[tuple[str, ...]] = []
    words: tuple[str, ...]
    # 1. the maximum raised (the token grid filled up to it), where an eager gap lies above it;
    # left out by the limit only where the grid holds more sizes than it even after V1 rounds
    # each up to a multiple of q
    raised = (f"raise max_cudagraph_capture_size to {widest}",) if not listed else None
    listed_words = (f"extend the size list with vLLM's token grid up to {widest}",)
    if beyond and (raised or listed_words) not in got:
        rounded = {-(-x // q) for x in token_grid(widest, False)}
        assert limit is not None and len(rounded) > limit, (q, widest, limit)
    if beyond and ((raised or listed_words) in got) and q <= 8:
        # built only where the grid's sizes from 8 on (multiples of 8: distinct after V1 rounds
        # them up to multiples of q <= 8) do not outnumber the limit
        assert fits(sum(1 for x in token_grid(widest, False) if x >= 8)), (q, widest, limit)
    if beyond and ((raised or listed_words) in got):
        if listed:
            words = (f"extend the size list with vLLM's token grid up to {widest}",)
            above = {x for x in token_grid(widest, False) if x > max(have)}
            assert sizes(got[words]) == have | above | {widest}
        else:
            words = (f"raise max_cudagraph_capture_size to {widest}",)
            assert got[words] == dataclasses.replace(inp, max_cudagraph_capture_size=widest)
        want.append(words)
    # 2. each gap's widest batch, and every batch of a short PIECEWISE fallback
    exact = {g.last * (g.query_len or 0) for g in gaps}.union(*map(_short_fallback, gaps))
    words = (f"append {len(exact - have)} exact token count(s) to the capture sizes",)
    assert sizes(got[words]) == have | exact
    want.append(words)
    # 3. each gap's request-count grid from its first request count; left out by the limit only
    # where some gap's grid alone holds more sizes than it
    grid_words = [
        w for w in got if w[0].startswith("append per-tier") or w[0].startswith("raise the maximum to")
    ]
    most = max(len({n for n in request_counts(g.last, g.last) if n >= g.first}) for g in gaps)
    if fits(most) or grid_words:  # (the search may build them past the limit: its bound is lower)
        grids = set().union(
            *(
                {n * (g.query_len or 0) for n in request_counts(g.last, g.last) if n >= g.first}
                | {g.last * (g.query_len or 0)}
                | _short_fallback(g)
                for g in gaps
            )
        )
        if grids - have and grids - have != exact - have:
            words = (f"append per-tier request grids ({len(grids - have)} sizes)",)
            assert sizes(got[words]) == have | grids
            want.append(words)
        # 4. both, where the maximum is not a list's
        if beyond and not listed:
            words = (f"raise the maximum to {widest} with vLLM's token grid", "append per-tier request grids")
            assert sizes(got[words]) == have | set(token_grid(widest, False)) | grids
            want.append(words)
    assert list(got) == want
    for c in got.values():  # an explicit maximum only where the config had one
        assert c.max_cudagraph_capture_size in (None, widest) or c.max_cudagraph_capture_size == max(sizes(c))


# ---- budgets: over the limit and worse than before ----------------------------------------------


def _near(draw: st.DrawFn, values: Sequence[float], integral: bool) -> float | None:
    """None (budget off) or a limit at, just below or just above one of the values."""
    if draw(st.booleans()):
        return None
    v = draw(st.sampled_from(values))
    step = 1 if integral else draw(st.sampled_from([0.001, 0.5]))
    return v + draw(st.sampled_from([-step, 0, step]))


def _naive_breaks(
    before: Plan, after: Plan, c0: tuple[float, float], c1: tuple[float, float], budgets: FixBudgets
) -> list[str]:
    """Which figures break: each over its limit and above the plan's own figure."""
    out = []
    for family, graphs in after.graphs.items():
        limit = budgets.graph_limit(family)
        if limit is not None and len(graphs) > limit and len(graphs) > len(before.graphs.get(family, ())):
            out.append(family)
    total = sum(len(g) for g in after.graphs.values())
    total0 = sum(len(g) for g in before.graphs.values())
    if budgets.max_total_graphs is not None and total > budgets.max_total_graphs and total > total0:
        out.append("total")
    if budgets.max_pool_mib is not None and c1[0] > budgets.max_pool_mib and c1[0] > c0[0]:
        out.append("mib")
    if budgets.max_capture_s is not None and c1[1] > budgets.max_capture_s and c1[1] > c0[1]:
        out.append("capture")
    for ql in after.uniform_decode:
        real = padded = 0
        for q, n, mode, p in _batches(after):
            if q == ql and mode != "NONE" and p is not None:
                real, padded = real + n * q, padded + p
        real0 = padded0 = 0
        for q, n, mode, p in _batches(before):
            if q == ql and mode != "NONE" and p is not None:
                real0, padded0 = real0 + n * q, padded0 + p
        r = padded / real if real else None
        r0 = padded0 / real0 if real0 else None
        limit_r = budgets.max_decode_padding_ratio
        if limit_r is not None and r is not None and r > limit_r and (r0 is None or r > r0):
            out.append(f"ratio {ql}")
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_configs(), small_configs(), st.data())
def test_budget_breaks_are_each_budgets_definition(a: PlanInput, b: PlanInput, data: st.DataObject) -> None:
    before, after = _planned(a), _planned(b)
    if before is None or after is None:
        return
    t0, t1 = plan_cost_totals(before, a, COEFFICIENTS), plan_cost_totals(after, b, COEFFICIENTS)
    c0, c1 = (t0.total_mib, t0.capture_s), (t1.total_mib, t1.capture_s)
    counts = [len(g) for p in (before, after) for g in p.graphs.values()] or [0]
    totals = [sum(len(g) for g in p.graphs.values()) for p in (before, after)]
    ratios = [
        r for p in (before, after) for ql in p.uniform_decode if (r := padding_ratio(p, ql)) is not None
    ]
    family = data.draw(_limit(counts, integral=True))
    budgets = FixBudgets(
        max_graphs_per_family=()
        if family is None
        else ((data.draw(st.sampled_from(["*", "target"])), int(family)),),
        max_total_graphs=_int(data.draw(_limit(totals, integral=True))),
        max_pool_mib=data.draw(_limit([c0[0], c1[0]], integral=False)),
        max_capture_s=data.draw(_limit([c0[1], c1[1]], integral=False)),
        max_decode_padding_ratio=data.draw(_limit(ratios or [1.0], integral=False)),
    )
    naive = _naive_breaks(before, after, c0, c1, budgets)
    assert len(_budget_breaks(before, after, (t0, t1), budgets)) == len(naive), naive
    assert len(_graph_breaks(before.graphs, after.graphs, budgets)) == sum(
        1 for x in naive if x in after.graphs or x == "total"
    )
    # without a cost model: the graph and padding budgets alone
    assert len(_budget_breaks(before, after, None, budgets)) == sum(
        1 for x in naive if x not in ("mib", "capture")
    )
    # a plan is never worse than itself
    assert _budget_breaks(after, after, (t1, t1), budgets) == ()
    # the floor: a candidate with at least this many target graphs breaks a graph budget
    floor = len(after.graphs.get("target", ()))
    limit = budgets.graph_limit("target")
    floor_breaks = (limit is not None and floor > limit and floor > len(before.graphs.get("target", ()))) or (
        budgets.max_total_graphs is not None and floor > budgets.max_total_graphs and floor > totals[0]
    )
    assert _floor_breaks(before, floor, budgets) == floor_breaks


def test_graph_budgets_hold_at_their_limit() -> None:
    """A budget is a maximum: a candidate with exactly `max_total_graphs` graphs (or a family's
    limit) keeps it; one graph more breaks it (the property test above draws limits at +-1 of the
    totals at random; this pins the limit itself)."""
    base = dataclasses.replace(
        load_config(ROOT_DIR / "configs/examples/pr50488-eagle-k16.yaml").input, max_num_seqs=16
    )
    before = build_plan(base)
    after_inp = dataclasses.replace(base, max_num_seqs=64)
    after = build_plan(after_inp)
    total, total0 = graph_count(after), graph_count(before)
    target = len(after.graphs["target"])
    assert total > total0
    assert _graph_breaks(before.graphs, after.graphs, FixBudgets(max_total_graphs=total)) == []
    assert _graph_breaks(before.graphs, after.graphs, FixBudgets(max_total_graphs=total - 1)) == [
        f"{total} graphs in all > {total - 1}"
    ]
    assert (
        _graph_breaks(before.graphs, after.graphs, FixBudgets(max_graphs_per_family=(("target", target),)))
        == []
    )
    assert _graph_breaks(
        before.graphs, after.graphs, FixBudgets(max_graphs_per_family=(("target", target - 1),))
    ) == [f"target: {target} graphs > {target - 1}"]
    # the floor precheck agrees with the count at the limit
    assert not _floor_breaks(before, total, FixBudgets(max_total_graphs=total))
    assert _floor_breaks(before, total, FixBudgets(max_total_graphs=total - 1))
    # the memory and capture-time budgets hold at their figure too, and break just under it
    costs = (plan_cost_totals(before, base, COEFFICIENTS), plan_cost_totals(after, after_inp, COEFFICIENTS))
    mib, secs = costs[1].total_mib, costs[1].capture_s
    assert mib > costs[0].total_mib and secs > costs[0].capture_s
    assert _budget_breaks(before, after, costs, FixBudgets(max_pool_mib=mib, max_capture_s=secs)) == ()
    under = _budget_breaks(
        before,
        after,
        costs,
        FixBudgets(max_pool_mib=math.nextafter(mib, 0), max_capture_s=math.nextafter(secs, 0)),
    )
    assert [b.split(" ")[-1] for b in under] == ["GiB", "s"], under


def _int(x: float | None) -> int | None:
    return None if x is None else int(x)


@st.composite
def _limit(draw: st.DrawFn, values: Sequence[float], integral: bool) -> float | None:
    return _near(draw, values, integral)


# ---- flags: the change they make ----------------------------------------------------------------


@st.composite
def flag_pairs(draw: st.DrawFn) -> tuple[PlanInput, PlanInput]:
    """A config and the same config with what a fix may change changed (or not)."""
    inp = draw(small_configs())
    inp = dataclasses.replace(
        inp,
        enforce_eager=draw(st.booleans()),
        optimization_level=draw(st.sampled_from([0, 1, 2, 3])),
        compilation_mode=draw(st.sampled_from([None, 0, 2, VLLM_COMPILE])),
    )
    out = inp
    if inp.enforce_eager and draw(st.booleans()):
        out = dataclasses.replace(out, enforce_eager=False)
    if draw(st.booleans()):
        out = dataclasses.replace(out, optimization_level=draw(st.sampled_from([1, 2, 3])))
    if draw(st.booleans()):
        out = dataclasses.replace(out, cudagraph_mode=draw(st.sampled_from(list(Mode))))
    if inp.compilation_mode is not None and draw(st.booleans()):  # the search sets a mode already set
        out = dataclasses.replace(out, compilation_mode=VLLM_COMPILE)
    if draw(st.booleans()):
        sizes = tuple(sorted(set(draw(st.lists(st.integers(1, 128), min_size=1, max_size=5)))))
        out = dataclasses.replace(
            out,
            cudagraph_capture_sizes=sizes,
            max_cudagraph_capture_size=sizes[-1] if out.max_cudagraph_capture_size is not None else None,
        )
    elif draw(st.booleans()):
        out = dataclasses.replace(out, max_cudagraph_capture_size=draw(st.integers(1, 128)))
    if out.speculative is not None and draw(st.booleans()):
        k = out.speculative.num_speculative_tokens
        sched = ((1, 2, k), (3, 3 + draw(st.integers(0, 5)), max(1, k - 1)))
        spec = dataclasses.replace(
            out.speculative, num_speculative_tokens_per_batch_size=sched, enforce_eager=draw(st.booleans())
        )
        out = dataclasses.replace(out, speculative=spec)
    return inp, out


def _applied(inp: PlanInput, change: tuple[tuple[str, object], ...]) -> PlanInput:
    fix = Fix((), change, (), 0, 0, 0, 0, 0, 0, "")  # apply_fix reads the config change only
    return apply_fix(inp, fix)


@settings(max_examples=300, deadline=None)
@given(flag_pairs())
def test_fix_flags_make_the_change(pair: tuple[PlanInput, PlanInput]) -> None:
    before, after = pair
    assert fix_flags(before, before) == ((), (), ())
    flags, argv, change = fix_flags(before, after)
    assert shlex.split(" ".join(flags)) == [w for words in argv for w in words]
    assert len(flags) == len(argv)
    # the dotted changes turn `before` into `after` (a speculative change beyond the schedule is
    # carried by --speculative-config alone)
    applied = _applied(before, change)
    assert dataclasses.replace(applied, speculative=after.speculative) == after
    if before.speculative is not None and after.speculative is not None:
        sched = after.speculative.num_speculative_tokens_per_batch_size
        want = (
            before.speculative
            if sched is None or before.speculative == after.speculative
            else (dataclasses.replace(before.speculative, num_speculative_tokens_per_batch_size=sched))
        )
        assert applied.speculative == want
    # every flag group changes something: none repeats what `before` already had
    words = [w for ws in argv for w in ws]
    assert ("--no-enforce-eager" in words) == (before.enforce_eager and not after.enforce_eager)
    assert any(w.startswith("-O") for w in words) == (before.optimization_level != after.optimization_level)
    assert ("--speculative-config" in words) == (
        before.speculative != after.speculative and after.speculative is not None
    )
    if "--speculative-config" in words:
        sc = json.loads(words[words.index("--speculative-config") + 1])
        s = after.speculative
        assert s is not None
        assert sc["method"] == s.method and sc["num_speculative_tokens"] == s.num_speculative_tokens
        assert sc.get("enforce_eager", False) == s.enforce_eager
        sched = s.num_speculative_tokens_per_batch_size
        assert sc.get("num_speculative_tokens_per_batch_size") == (
            None if sched is None else [list(e) for e in sched]
        )
    compilation = any(
        w.startswith(("-cc.", "--compilation-config", "--cudagraph-capture-sizes", "--max-cudagraph"))
        for w in words
    )
    keys = ("compilation_mode", "cudagraph_mode", "cudagraph_capture_sizes", "max_cudagraph_capture_size")
    assert compilation == any(getattr(before, k) != getattr(after, k) for k in keys)


# ---- a fix's figures: the plan of the fixed config's ----------------------------------------------


@st.composite
def serve_small_configs(draw: st.DrawFn) -> PlanInput:
    """small_configs with graphs switched off some way, -O levels, the interactivity grid, and
    dynamic-SD schedules (the stage-one changes' bases)."""
    inp = draw(small_configs())
    inp = dataclasses.replace(
        inp,
        enforce_eager=draw(st.integers(0, 5)) == 0,
        optimization_level=draw(st.sampled_from([0, 1, 2, 2, 3])),
        compilation_mode=draw(st.sampled_from([None, None, None, 0, 2])),
        performance_mode=draw(st.sampled_from([None, None, "interactivity"])),
        cudagraph_mode=draw(st.sampled_from([inp.cudagraph_mode, Mode.NONE]))
        if draw(st.booleans())
        else inp.cudagraph_mode,
    )
    if draw(st.booleans()):
        s = inp.max_num_seqs
        cut = draw(st.integers(1, s))
        k = draw(st.integers(1, 4))
        sched = (
            (1, cut, draw(st.integers(0, 4))),
            (cut + 1, cut + draw(st.integers(1, 12)), draw(st.integers(0, 4))),
        )
        inp = dataclasses.replace(inp, speculative=SpeculativeSpec("eagle", k, sched))
    return inp


SEARCH = FixSearch(FixBudgets(max_graphs_per_family=(("*", 40),)), COEFFICIENTS)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def check_claims(plan: Plan, inp: PlanInput, fix: Fix, search: FixSearch) -> None:
    """Each figure of `fix` is the figure of the fixed config's plan (and of `plan` before)."""
    fixed = apply_fix(inp, fix)
    after = build_plan(fixed, with_fixes=False)
    t0, t1 = plan_cost_totals(plan, inp, COEFFICIENTS), plan_cost_totals(after, fixed, COEFFICIENTS)
    graphs0, graphs1 = sum(map(len, plan.graphs.values())), sum(map(len, after.graphs.values()))
    assert (fix.graphs_before, fix.graphs_after) == (graphs0, graphs1)
    assert fix.num_capture_sizes_after == len(after.capture_sizes)
    assert (fix.pool_before_mib, fix.pool_after_mib) == (round(t0.total_mib, 1), round(t1.total_mib, 1))
    assert (fix.capture_before_s, fix.capture_after_s) == (round(t0.capture_s, 2), round(t1.capture_s, 2))

    def padded(p: Plan) -> int:
        return sum(pt - n * q for q, n, mode, pt in _batches(p) if mode != "NONE" and pt is not None)

    assert (fix.padding_before_tokens, fix.padding_after_tokens) == (padded(plan), padded(after))
    assert fix.step_padding_before == step_padding(plan) and fix.step_padding_after == step_padding(after)
    assert fix.remaining_gaps == len(after.gaps) and fix.complete == (not after.gaps)
    assert fix.still_open == _still_open(after)
    assert fix.closes == _closed_naively(plan, after)
    naive = _naive_breaks(
        plan, after, (t0.total_mib, t0.capture_s), (t1.total_mib, t1.capture_s), search.budgets
    )
    assert len(fix.over_budget) == len(naive)
    assert search.allow_over_budget or not fix.over_budget
    # the summary's numbers are the same figures
    m = re.search(r"graphs (\d+) → (\d+) \(([+-]\d+)\)", fix.summary)
    assert m and (int(m[1]), int(m[2]), int(m[3])) == (graphs0, graphs1, graphs1 - graphs0), fix.summary
    m = re.search(
        r"predicted ([\d,]+) → ([\d,]+) MiB \(([+-][\d,]+)"
        r"(?:; ([\d,]+)\.\.([\d,]+) MiB outside the validated domain(?:: (.*?))?)?\), capture",
        fix.summary,
    )
    assert m, fix.summary
    assert (_number(m[1]), _number(m[2])) == (round(t0.total_mib), round(t1.total_mib))
    assert _number(m[3]) == round(t1.total_mib - t0.total_mib)
    # outside the domain: the fixed plan's own band, and the reasons its plan does not already give
    assert bool(m[4]) == bool(t1.domain.outside)
    new = tuple(r for r in t1.domain.outside if r not in t0.domain.outside)
    assert fix.pool_after_outside == new
    assert fix.pool_after_band_mib == (t1.low_mib, t1.high_mib)
    if m[4]:
        assert (_number(m[4]), _number(m[5])) == (round(t1.low_mib), round(t1.high_mib))
        assert (m[6] or "") == "; ".join(new)
    m = re.search(r"capture ([\d.]+) → ([\d.]+) s \(([+-][\d.]+)\)", fix.summary)
    assert m and abs(float(m[3]) - (t1.capture_s - t0.capture_s)) <= 0.051, fix.summary
    assert (float(m[1]), float(m[2])) == (round(t0.capture_s, 1), round(t1.capture_s, 1))
    m = re.search(r"gaps (\d+) → (\d+)", fix.summary)
    assert m and (int(m[1]), int(m[2])) == (len(plan.gaps), len(after.gaps)), fix.summary
    _check_all_words(inp, fixed, fix)


_SCHEDULE_WORDS = re.compile(r"K (\d+) → (\d+) for batches (\d+)-(\d+)")


def _check_all_words(inp: PlanInput, fixed: PlanInput, fix: Fix) -> None:
    """Each change a fix names, in words, is a change its flags make (every kind of words)."""
    # the sizes are changed on the plan of the stage-one change (graphs on, the mode, the schedule)
    stage_one = dataclasses.replace(
        fixed,
        cudagraph_capture_sizes=inp.cudagraph_capture_sizes,
        max_cudagraph_capture_size=inp.max_cudagraph_capture_size,
    )
    before = set(build_plan(stage_one, with_fixes=False).capture_sizes)
    after = set(fixed.cudagraph_capture_sizes or ())
    for words in fix.changes:
        if words == "drop enforce_eager":
            assert inp.enforce_eager and not fixed.enforce_eager
        elif m := re.fullmatch(r"cudagraph_mode (\w+)", words):
            assert fixed.cudagraph_mode is Mode(m[1]) and inp.cudagraph_mode is not Mode(m[1]), words
        elif m := re.fullmatch(r"-O(\d)", words):
            assert fixed.optimization_level == int(m[1]) != inp.optimization_level, words
        elif words == "compilation_config.mode VLLM_COMPILE":
            assert fixed.compilation_mode == VLLM_COMPILE != inp.compilation_mode
        elif m := re.fullmatch(r"raise max_cudagraph_capture_size to (\d+)", words):
            assert fixed.max_cudagraph_capture_size == int(m[1]), words
        elif m := re.fullmatch(
            r"(?:extend the size list with|raise the maximum to \d+ with) vLLM's token grid(?: up to (\d+))?",
            words,
        ):
            top = int(m[1]) if m[1] else max(after)
            grid = set(token_grid(top, inp.performance_mode == "interactivity"))
            new = {x for x in grid if x > max(before, default=0)} if m[1] else grid
            assert new | {top} <= after and max(after) == top, words
        elif m := re.fullmatch(
            r"append (\d+) exact token count\(s\) to the capture sizes"
            r"|append per-tier request grids(?: \((\d+) sizes\))?",
            words,
        ):
            if m[1] or m[2]:
                assert len(after - before) == int(m[1] or m[2]), words
        elif words.startswith("narrow the dynamic-SD schedule: "):
            assert inp.speculative and fixed.speculative
            old = inp.speculative.num_speculative_tokens_per_batch_size or ()
            new_sched = fixed.speculative.num_speculative_tokens_per_batch_size or ()
            for part in words.removeprefix("narrow the dynamic-SD schedule: ").split("; "):
                k = _SCHEDULE_WORDS.fullmatch(part)
                assert k, part
                k_old, k_new, lo, hi = map(int, k.groups())
                assert any(a <= lo and hi <= b and kk == k_old for a, b, kk in old), part
                assert (lo, hi, k_new) in new_sched, (part, new_sched)
            # fewer tokens only on the batches whose steps outgrow the maximum: the rest keep K
            cap = build_plan(inp, with_fixes=False).max_capture_size
            for a, b, kk in old:
                for n in range(a, b + 1):
                    if n * (kk + 1) <= cap:
                        assert [k2 for a2, b2, k2 in new_sched if a2 <= n <= b2] == [kk], (n, new_sched)
        else:
            raise AssertionError(f"words no check knows: {words!r}")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(serve_small_configs(), st.sampled_from([40, 8]), st.booleans())
# a dynamic-SD tier split: batches 5-8 still fit the maximum of 40 at K=4 and keep it
@example(
    PlanInput(
        vllm_version="0.33.0",
        platform=Platform.HOPPER,
        model=ModelShape(),
        max_num_seqs=12,
        max_num_batched_tokens=64,
        speculative=SpeculativeSpec("eagle", 4, ((1, 4, 0), (5, 12, 4))),
        max_cudagraph_capture_size=40,
        model_runner="v1",
    ),
    8,
    False,
)
def test_every_figure_a_fix_prints_is_the_fixed_plans(inp: PlanInput, limit: int, over: bool) -> None:
    search = dataclasses.replace(
        SEARCH, budgets=FixBudgets(max_graphs_per_family=(("*", limit),)), allow_over_budget=over
    )
    plan = _planned(inp, search)
    if plan is None:
        return
    for fix in plan.fixes:
        check_claims(plan, inp, fix, search)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_configs())
def test_an_eager_gap_names_its_token_span(inp: PlanInput) -> None:
    # one batch reads as its token count, a run as first..last tokens
    plan = _planned(inp)
    if plan is None or plan.cudagraph_mode == "NONE":
        return
    for g in plan.gaps:
        q = g.query_len or 0
        span = f"{g.first * q}" if g.first == g.last else f"{g.first * q}..{g.last * q}"
        if g.mode == "NONE":
            assert (
                g.reason.startswith(f"{span} tokens exceed")
                or f"a uniform batch of {span} tokens" in g.reason
            )


# ---- the fix as YAML lines: what YAML reads back ------------------------------------------------

_values = st.one_of(
    st.integers(-5, 5000),
    st.booleans(),
    st.none(),
    st.lists(st.integers(1, 600), max_size=5),
    st.sampled_from([m.value for m in Mode]),
    st.sampled_from(["true", "No", "off", "null", "~", "1abc", "12", "1e5", "a b", "x_1", "_"]),
    st.from_regex(r"[A-Za-z0-9_]{1,8}", fullmatch=True),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["enforce_eager", "a.b", "a.c", "compilation_config.d"]), _values)))
def test_config_yaml_reads_back_as_the_change(change: list[tuple[str, object]]) -> None:
    lines = config_yaml(change)
    want: dict[str, object] = {}
    for key, value in change:  # a later value of a key wins, as in the YAML
        node = want
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})  # type: ignore[assignment]
        node[leaf] = value
    assert (yaml.safe_load("\n".join(lines)) or {}) == want, lines
    # pasted after a config's own top-level keys, they read back the same
    pasted = yaml.safe_load("\n".join(["max_num_seqs: 8", *lines]))
    assert pasted == {"max_num_seqs": 8, **want}, lines
    # a plain word (a mode name) is written as it is; anything YAML would read otherwise is quoted
    for key, value in dict(change).items():  # the last value of each key
        if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", value):
            continue
        if value.lower() not in ("true", "false", "null", "yes", "no", "on", "off"):
            assert f"{key.split('.')[-1]}: {value}" in [line.strip() for line in lines]


# ---- pruning: the graph-budget bound drops only what the budget would ---------------------------


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(serve_small_configs(), st.sampled_from([4, 8, 16, 40]))
def test_the_ladder_budget_bound_keeps_the_same_fixes(inp: PlanInput, limit: int) -> None:
    """`_cheap_bound` drops a candidate whose ladder alone holds more sizes than a graph budget
    allows (each size at least one target graph where the mode keeps a mixed half); without that
    bound the search, planning each such candidate, finds the same fixes."""
    search = dataclasses.replace(SEARCH, budgets=FixBudgets(max_graphs_per_family=(("*", limit),)))
    plan = _planned(inp, search)
    if plan is None or not plan.gaps:
        return
    real = gaps_mod._cheap_bound
    try:
        gaps_mod._cheap_bound = lambda cand, rules, base, p, budgets: real(cand, rules, base, p, None)  # type: ignore[assignment]
        unbounded = build_plan(inp, search=search)
    finally:
        gaps_mod._cheap_bound = real
    assert unbounded.fixes == plan.fixes


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_configs(), st.sampled_from([p for n, p in BUILTIN_POLICIES.items() if n != "upstream"]))
def test_the_bounds_read_the_policys_ladder(inp: PlanInput, policy: CapturePolicy) -> None:
    """Under a what-if policy the search's bounds (a candidate's largest size, its size count) are
    its ladder under that policy: without `_cheap_bound` at all, planning every candidate under
    the policy finds the same fixes."""
    try:
        plan = build_plan(inp, search=SEARCH, policy=policy)
    except (Rejected, ValueError):
        return
    if not plan.gaps:
        return
    real = gaps_mod._cheap_bound
    try:
        gaps_mod._cheap_bound = lambda cand, rules, base, p, budgets: None  # type: ignore[assignment]
        unbounded = build_plan(inp, search=SEARCH, policy=policy)
    finally:
        gaps_mod._cheap_bound = real
    assert unbounded.fixes == plan.fixes
