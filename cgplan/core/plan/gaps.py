"""Gaps (uniform-decode batches that run eager or below the FULL mode they were
promised), why they happen, and the search for flag changes that close them.

The fix search plans every candidate again in full and keeps only changes that
(1) close gaps, (2) make no batch worse anywhere (no uniform-decode request count and no
mixed token count loses its graph mode), and (3) stay within the gate's budgets
(`FixBudgets`), unless the caller allows going over. Candidates that cannot close the gaps,
or whose capture ladder alone already exceeds the graph budget, are dropped before they are
planned (`_cheap_bound`), so the search costs a bounded number of plans whatever
max_num_seqs is.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from cgplan.core.model.modes import Mode
from cgplan.core.model.spec import VLLM_COMPILE, PlanInput
from cgplan.core.model.types import Fix, Gap, Graph, Plan, Rejected, StepPadding
from cgplan.core.plan.budgets import MIB_PER_GIB, FixBudgets
from cgplan.core.vllm.ladder import Ladder, capture_ladder, request_counts, token_grid
from cgplan.core.vllm.releases import DecodeSizes, VllmRules, first_release, rules_for
from cgplan.core.vllm.resolve import compile_off_cause

if TYPE_CHECKING:
    from cgplan.core.predict.cost import CostCoefficients, CostTotals

Replan = Callable[[PlanInput], Plan]
GraphsOf = Callable[[PlanInput], Mapping[str, Sequence[Graph]]]
"""A candidate's graph families without its dispatch tables (`cgplan.core.plan.build.captured_graphs`)."""
TargetFloor = Callable[[PlanInput], int]
"""At least how many target graphs a candidate captures, from its ladder and mode alone
(`cgplan.core.plan.build.target_graphs_floor`)."""

_RANK = {"FULL": 2, "PIECEWISE": 1, "NONE": 0}
HEAVY_PADDING_PCT = 25.0
"""A fix whose mean per-step padding exceeds this ranks after every fix whose padding does not,
whatever it saves in memory: padding is paid on every step, memory once. (vLLM's own grids pad
a few percent on average; their worst step, just above a power of two, can pad 78%, so the worst
step alone would rule out vLLM's own ladder.)"""
MAX_WORST_PADDING_PCT = 400.0
"""A fix whose worst per-step padding exceeds this (a graph more than five times the batch it
serves) is not offered, unless the plan pads as badly already: a single size far above a tier's
graphs (5,923% worst padding: 17 tokens replayed as a 1,024-token graph) closes a gap on paper
and makes the steps it serves slower than the eager gap it replaced."""
PADDING_TOLERANCE_PCT = 1.0
"""Fixes whose mean per-step padding is within this many percent of the least padded pad alike:
among them the cheaper in memory ranks first."""
MAX_EXACT_SIZES = 256
"""Most sizes the "exact token counts" candidate appends."""


@dataclass(frozen=True)
class FixSearch:
    """What the fix search takes besides the plan: the budgets and the cost model."""

    budgets: FixBudgets = field(default_factory=FixBudgets)
    """Limits a fix must stay within (the default gate's, `cgplan.core.compare.gate.budgets_of`)."""
    coefficients: CostCoefficients | None = None
    """Cost model for the memory and capture-time deltas (None: graph counts only)."""
    allow_over_budget: bool = False
    """Offer fixes that break a budget too (each says which)."""
    max_fixes: int = 4
    """Most fixes kept, best first."""


def tier_batches(plan: Plan, query_len: int) -> list[tuple[int, int]]:
    """Request-count runs that really decode at `query_len` (the dynamic-SD tier)."""
    if plan.dynamic_sd_lookup is None:
        return [(1, plan.max_num_seqs)] if query_len == plan.uniform_decode_query_len else []
    return [(a, b) for a, b, k in plan.dynamic_sd_lookup if k + 1 == query_len]


DecodeOutcome = tuple[int, int, int, str, int | None]
_OUTCOMES: dict[int, tuple[object, object, list[DecodeOutcome]]] = {}
"""`decode_outcomes` already listed, by the identity of the plan's uniform-decode tables (held, so
a reused id never matches) with what cuts them into tiers (the schedule, max_num_seqs, 1 + K): a
plan is read five or six times (gaps, padding, the fix search's comparisons), and its replaced
copies share the tables. A cache, not state."""


def decode_outcomes(plan: Plan) -> Iterator[DecodeOutcome]:
    """(query_len, first, last, mode, padded_tokens) over every tier's own batches."""
    tables = plan.uniform_decode
    cut = (plan.dynamic_sd_lookup, plan.max_num_seqs, plan.uniform_decode_query_len)
    hit = _OUTCOMES.get(id(tables))
    if hit is not None and hit[0] is tables and hit[1] == cut:
        return iter(hit[2])
    out: list[DecodeOutcome] = []
    for ql, ranges in sorted(tables.items()):
        ordered = all(x.last < y.first for x, y in itertools.pairwise(ranges))
        lasts = [r.last for r in ranges]
        for lo, hi in tier_batches(plan, ql):
            # sorted disjoint runs (a dispatch table's): only those from the first ending at or
            # after lo can overlap lo..hi
            i = bisect.bisect_left(lasts, lo) if ordered else 0
            for r in ranges[i:]:
                if ordered and r.first > hi:
                    break
                a, b = max(lo, r.first), min(hi, r.last)
                if a <= b:
                    out.append((ql, a, b, r.mode, r.padded_tokens))
    if len(_OUTCOMES) >= 256:
        _OUTCOMES.clear()
    _OUTCOMES[id(tables)] = (tables, cut, out)
    return iter(out)


_H_SMALL = [0.0]
for _k in range(1, 128):
    _H_SMALL.append(_H_SMALL[-1] + 1.0 / _k)


def _harmonic(n: int) -> float:
    """H(n) = 1 + 1/2 + ... + 1/n: a table below 128, else the asymptotic series (error < 1e-15)."""
    if n < 128:
        return _H_SMALL[n]
    inv = 1.0 / n
    return math.log(n) + 0.5772156649015329 + inv / 2 - inv**2 / 12 + inv**4 / 120


def range_padding(query_len: int, first: int, last: int, padded_tokens: int) -> tuple[int, float, float]:
    """(padded tokens summed, per-step padding % summed, worst per-step %) of the batches
    first..last × query_len that all replay a graph of `padded_tokens` tokens; O(1)."""
    count = last - first + 1
    excess = count * padded_tokens - query_len * (first + last) * count // 2
    pct_sum = 100.0 * (padded_tokens / query_len * (_harmonic(last) - _harmonic(first - 1)) - count)
    worst = 100.0 * (padded_tokens - first * query_len) / (first * query_len)
    return excess, pct_sum, worst


def padding_tokens(plan: Plan) -> int:
    """Padded tokens summed over every uniform-decode batch that replays a graph."""
    total = 0
    for ql, a, b, mode, padded in decode_outcomes(plan):
        if mode != "NONE" and padded is not None:
            count = b - a + 1  # range_padding's padded tokens (its percentages are not needed here)
            total += count * padded - ql * (a + b) * count // 2
    return total


def step_padding(plan: Plan) -> StepPadding:
    """Worst and mean per-step padding over the graph-replayed uniform-decode batches, each
    request count of each tier counted once (the domain: every batch size equally likely)."""
    worst, at, pct_sum, steps = 0.0, None, 0.0, 0
    for ql, a, b, mode, padded in decode_outcomes(plan):
        if mode == "NONE" or padded is None:
            continue
        _, s, w = range_padding(ql, a, b, padded)
        pct_sum += s
        steps += b - a + 1
        if at is None or w > worst:
            worst, at = w, (a, ql)
    return StepPadding(
        worst_pct=max(0.0, round(worst, 2)),
        worst_reqs=at[0] if at else None,
        worst_query_len=at[1] if at else None,
        mean_pct=max(0.0, round(pct_sum / steps, 2)) if steps else 0.0,
        replayed_batches=steps,
    )


def padding_ratio(plan: Plan, query_len: int) -> float | None:
    """Padded / real tokens over one tier's graph-replayed batches (the gate's ratio), O(ranges)."""
    padded = real = 0
    for ql, a, b, mode, p in decode_outcomes(plan):
        if ql != query_len or mode == "NONE" or p is None:
            continue
        n = b - a + 1
        padded += n * p
        real += ql * (a + b) * n // 2
    return padded / real if real else None


def gap_batches(plan: Plan) -> int:
    """(tier, request count) pairs inside a gap: what a fix must drive to zero."""
    return sum(g.last - g.first + 1 for g in plan.gaps)


def graph_count(plan: Plan) -> int:
    """Graph descriptors over every family."""
    return sum(len(g) for g in plan.graphs.values())


# ---- why: every origin of the maximum ---------------------------------------------------------


_DECODE_SIZES_FROM = first_release(lambda r: r.decode_sizes is not DecodeSizes.NONE)
_CEILING_1024_FROM = first_release(lambda r: r.sm100_ceiling_1024)


def max_origin(inp: PlanInput, ladder: Ladder, rules: VllmRules | None = None) -> str:
    """Where the maximum capture size came from, naming vLLM's rule and release (`rules`: those
    the ladder was made with, a what-if policy's included; default the release's)."""
    v = inp.vllm_version
    rules = rules or rules_for(v)
    final = ladder.max_size_tokens
    if inp.cudagraph_capture_sizes is not None:
        why = (
            f"your cudagraph_capture_sizes list ends at {max(inp.cudagraph_capture_sizes)}: vLLM {v} "
            "captures exactly the listed sizes and appends none (neither the token grid nor "
            "uniform-decode sizes)"
        )
        if final < max(inp.cudagraph_capture_sizes):
            why += f"; sizes above max_num_batched_tokens {inp.max_num_batched_tokens} are dropped"
        return why
    if inp.max_cudagraph_capture_size is not None:
        why = f"max_cudagraph_capture_size {inp.max_cudagraph_capture_size} is set explicitly"
        if rules.decode_sizes is DecodeSizes.NONE:
            why += f"; vLLM {v} appends no uniform-decode sizes (they arrive in {_DECODE_SIZES_FROM})"
        elif rules.decode_sizes_with_explicit_max:
            why += f"; vLLM {v} appends uniform-decode sizes only up to it"
        else:
            why += (
                f"; vLLM {v} appends no uniform-decode sizes to an explicit maximum "
                "(only an inferred one gets them, vllm#54933)"
            )
        if final < inp.max_cudagraph_capture_size:
            why += f", and it is capped by max_num_batched_tokens {inp.max_num_batched_tokens}"
        return why
    inferred = ladder.inferred_max_tokens
    q = inp.uniform_decode_query_len
    s = inp.max_num_seqs
    if inferred is None:  # no graphs
        return f"vLLM {v} captures no graphs for this config"
    ceiling_src = f"the {inp.platform.value} platform's default ceiling {ladder.ceiling_tokens}" + (
        f" (1024 on SM10x from vLLM {_CEILING_1024_FROM}, vllm#49390)"
        if ladder.ceiling_tokens == 512
        else " (SM10x, vllm#49390)"
    )
    if s * q * 2 < ladder.ceiling_tokens:
        why = (
            f"vLLM {v} infers the maximum from max_num_seqs: max_num_seqs×{q}×2 = {s * q * 2} "
            f"(below {ceiling_src})"
        )
    else:
        why = (
            f"vLLM {v} infers the maximum as min(max_num_seqs×{q}×2 = {s * q * 2}, {ladder.ceiling_tokens}) "
            f"= {inferred}: {ceiling_src}"
        )
    if rules.decode_sizes is DecodeSizes.NONE:
        why += f" and appends no uniform-decode sizes (they arrive in {_DECODE_SIZES_FROM})"
    elif q > 1:
        why += " and appends uniform-decode sizes only up to it (vllm#50488 capped by vllm#54418)"
    if final < inferred:
        why += f"; vLLM then caps it at max_num_batched_tokens {inp.max_num_batched_tokens} = {final}"
    return why


_COMPILE_OFF_NOTES = ("non_compile", "v2_stock_compile", "v1_stock_compile")
"""Notes of a config-time decision that turned CUDA graphs off because nothing is compiled."""


def _eager_reason(
    plan: Plan, ladder: Ladder | None, inp: PlanInput | None, rules: VllmRules | None, ql: int, a: int, b: int
) -> str:
    lo_tokens, hi_tokens = a * ql, b * ql
    span = f"{lo_tokens}" if a == b else f"{lo_tokens}..{hi_tokens}"
    if plan.cudagraph_mode == "NONE":
        if inp is not None and inp.enforce_eager:
            return "CUDA graphs are off: enforce_eager is set"
        if inp is not None and inp.cudagraph_mode is Mode.NONE:
            return "CUDA graphs are off: compilation_config.cudagraph_mode is NONE"
        if any(n.kind == "deepep_high_throughput" for n in plan.notes):
            return (
                "CUDA graphs are off: DeepEP high-throughput all-to-all with data_parallel_size > 1 "
                "on an MoE model (vLLM turns graphs off; use deepep_low_latency, nixl_ep or "
                "allgather_reducescatter for decode graphs)"
            )
        # the last of them turned graphs off (a non_compile override to FULL_DECODE_ONLY may come
        # before V2's stock-compile override to NONE)
        off = next((n for n in reversed(plan.notes) if n.kind in _COMPILE_OFF_NOTES), None)
        if inp is not None and off is not None:
            if off.kind == "non_compile":
                return (
                    f"CUDA graphs are off: {compile_off_cause(inp)} compiles nothing and vLLM "
                    f"{plan.vllm_version} turns a piecewise cudagraph_mode into NONE"
                )
            runner = plan.model_runner
            return f"CUDA graphs are off: compilation mode STOCK_TORCH_COMPILE on model runner {runner}"
        if inp is not None and inp.optimization_level == 0:
            return f"CUDA graphs are off: -O0 selects cudagraph_mode NONE in vLLM {plan.vllm_version}"
        return "CUDA graphs are off (enforce_eager, cudagraph_mode NONE or -O0)"
    if lo_tokens > plan.max_capture_size:
        why = f"{span} tokens exceed max_capture_size {plan.max_capture_size}"
        if ladder is not None and inp is not None:
            why += "; " + max_origin(inp, ladder, rules)
        return why
    return (
        f"no {plan.cudagraph_mode} graph serves a uniform batch of {span} tokens "
        f"(query length {ql}) in vLLM {plan.vllm_version}'s {plan.model_runner} runner"
    )


def find_gaps(
    plan: Plan, ladder: Ladder | None = None, inp: PlanInput | None = None, rules: VllmRules | None = None
) -> tuple[Gap, ...]:
    """Every tier's request counts that run eager, or PIECEWISE under a FULL decode mode (`rules`:
    those the plan was made with, for the reasons' wording)."""
    gaps: list[Gap] = []
    decode_full = Mode(plan.cudagraph_mode).decode_mode() is Mode.FULL
    downgraded = Mode(plan.requested_cudagraph_mode).decode_mode() is Mode.FULL and not decode_full
    for ql, a, b, mode, _ in decode_outcomes(plan):
        if mode == "NONE":
            gaps.append(
                Gap("uniform_decode", ql, a, b, "NONE", _eager_reason(plan, ladder, inp, rules, ql, a, b))
            )
        elif mode == "PIECEWISE" and decode_full:
            span = f"{a} request" if a == b else f"{a}..{b} requests"
            gaps.append(
                Gap(
                    "uniform_decode",
                    ql,
                    a,
                    b,
                    "PIECEWISE",
                    f"no FULL graph for {span} × {ql} tokens; the {plan.model_runner} "
                    "dispatcher falls back to a PIECEWISE graph",
                )
            )
        elif mode == "PIECEWISE" and downgraded:
            why = next((n.message for n in plan.notes if n.kind == "mode_downgrade"), "downgraded")
            gaps.append(Gap("uniform_decode", ql, a, b, "PIECEWISE", why))
    return tuple(gaps)


# ---- the fix search ---------------------------------------------------------------------------


def _runs(plan: Plan) -> list[tuple[int, int, int]]:
    """(first, last, rank) of every uniform-decode request count, over all tiers, sorted."""
    return sorted((a, b, _RANK[m]) for _, a, b, m, _ in decode_outcomes(plan))


def _mixed_runs(plan: Plan) -> list[tuple[int, int, int]]:
    return [(r.first, r.last, _RANK[r.mode]) for r in plan.mixed]


def worse_somewhere(before: Sequence[tuple[int, int, int]], after: Sequence[tuple[int, int, int]]) -> bool:
    """True when some point has a lower rank after than before (a point missing from a side is
    eager, rank 0). Both sides are sorted disjoint runs; O(runs)."""
    i = 0
    for a, b, rank in before:
        if rank == 0:
            continue
        # every point a..b must have rank >= `rank` in `after`
        while i < len(after) and after[i][1] < a:
            i += 1
        pos, j = a, i
        while pos <= b:
            if j >= len(after) or after[j][0] > pos:
                return True  # a hole: eager after
            if after[j][2] < rank:
                return True
            pos = after[j][1] + 1
            j += 1
    return False


def _opens_gaps(
    before: Plan,
    after: Plan,
    before_runs: Sequence[tuple[int, int, int]] | None = None,
    before_mixed: Sequence[tuple[int, int, int]] | None = None,
) -> bool:
    """Some batch of `before` is worse in `after` (`before`'s runs may be given: the search holds
    every candidate against the same plan)."""
    if worse_somewhere(_runs(before) if before_runs is None else before_runs, _runs(after)):
        return True
    if not before.mixed:
        return False
    return worse_somewhere(_mixed_runs(before) if before_mixed is None else before_mixed, _mixed_runs(after))


class _Candidate:
    """One change the search plans, in words (e.g. "raise the maximum to 544") and as the input
    (internal; a plain class: no dataclass or NamedTuple made at import, issue 18)."""

    __slots__ = ("inp", "what")

    def __init__(self, what: tuple[str, ...], inp: PlanInput) -> None:
        self.what = what
        self.inp = inp


def _sizes_change(base: PlanInput, sizes: Iterable[int]) -> PlanInput:
    """`base` with an explicit size list (and a matching explicit maximum where it had one)."""
    new = tuple(sorted(set(sizes)))
    return replace(
        base,
        cudagraph_capture_sizes=new,
        max_cudagraph_capture_size=new[-1] if base.max_cudagraph_capture_size is not None else None,
    )


def _multiples(step: int, lo: int, hi: int) -> int:
    """How many multiples of `step` lie in lo..hi."""
    return hi // step - (lo - 1) // step if hi >= lo else 0


def grid_count(lo: int, hi: int) -> int:
    """Entries of vLLM's 1, 2, 4, 8..248/8, 256../16 grid inside lo..hi, counted in O(1) (the
    token grid and the request-count grid share the shape; `token_grid`, `request_counts`)."""
    small = sum(1 for n in (1, 2, 4) if lo <= n <= hi)
    return small + _multiples(8, max(lo, 8), min(hi, 255)) + _multiples(16, max(lo, 256), hi)


def _tier(g: Gap) -> int:
    """A gap's tokens per request: every gap `find_gaps` makes is a uniform-decode tier's."""
    assert g.query_len is not None
    return g.query_len


def _size_candidates(plan: Plan, inp: PlanInput, limit: int | None = None) -> Iterator[_Candidate]:
    """Capture-size changes aimed at `plan`'s gaps (`plan` is `inp` planned). With `limit`, a
    change whose new sizes alone outnumber it is not even built: each new size is at least one
    graph (sizes on 8/16 grids stay distinct after V1's rounding to multiples of q ≤ 8)."""
    gaps = list(plan.gaps)
    q = inp.uniform_decode_query_len

    def too_many(count: int) -> bool:
        return limit is not None and count > limit

    if not gaps or plan.cudagraph_mode == "NONE":
        return
    # (a gap's widest batch fits max_num_batched_tokens: the dispatch tables stop there)
    widest = max(g.last * _tier(g) for g in gaps)
    beyond = [g for g in gaps if g.mode == "NONE" and g.last * _tier(g) > plan.max_capture_size]
    have = set(plan.capture_sizes)
    # 1. raise the maximum (vLLM fills the token grid up to it)
    # (V1 rounds sizes up to multiples of q: for q <= 8 the grid's multiples of 8 and 16 stay
    # distinct, while 1, 2 and 4 may all become q or 8; for a larger q at least
    # widest // max(16, q) sizes stay distinct)
    if beyond and not too_many(grid_count(8, widest) if q <= 8 else widest // max(16, q)):
        if inp.cudagraph_capture_sizes is None:
            yield _Candidate(
                (f"raise max_cudagraph_capture_size to {widest}",),
                replace(inp, max_cudagraph_capture_size=widest),
            )
        else:
            grid = [
                x
                for x in token_grid(widest, inp.performance_mode == "interactivity")
                if x > max(have, default=0)
            ]
            yield _Candidate(
                (f"extend the size list with vLLM's token grid up to {widest}",),
                _sizes_change(inp, have | set(grid) | {widest}),
            )
    # 2. append exact token counts: each gap's widest batch (and every batch of a short
    # PIECEWISE fallback, so that each gets a FULL graph of its own size)
    exact = {g.last * _tier(g) for g in gaps}
    for g in gaps:
        if g.mode == "PIECEWISE" and g.last - g.first < 8:
            exact |= {n * _tier(g) for n in range(g.first, g.last + 1)}
    if len(exact - have) <= MAX_EXACT_SIZES:
        yield _Candidate(
            (f"append {len(exact - have)} exact token count(s) to the capture sizes",),
            _sizes_change(inp, have | exact),
        )
    # 3. per-tier request grids (vllm#50488's shape: 1, 2, 4, 8, 16, ... requests × query length)
    grid_sizes: set[int] = set()
    # distinct request counts × one query length are distinct sizes, V1's rounding included
    if too_many(max(grid_count(g.first, g.last) for g in gaps)):
        return
    for g in gaps:
        q = _tier(g)
        counts = [n for n in request_counts(g.last, g.last) if n >= g.first]  # no ceiling
        grid_sizes |= {n * q for n in counts} | {g.last * q}
        if g.mode == "PIECEWISE" and g.last - g.first < 8:
            grid_sizes |= {n * q for n in range(g.first, g.last + 1)}
    added = grid_sizes - have
    if added and added != exact - have:
        yield _Candidate(
            (f"append per-tier request grids ({len(added)} sizes)",),
            _sizes_change(inp, have | grid_sizes),
        )
    # 4. both: the maximum raised and the grids
    if beyond and inp.cudagraph_capture_sizes is None:
        grid = token_grid(widest, inp.performance_mode == "interactivity")
        yield _Candidate(
            (f"raise the maximum to {widest} with vLLM's token grid", "append per-tier request grids"),
            _sizes_change(inp, have | set(grid) | grid_sizes),
        )


def _mode_candidates(plan: Plan, inp: PlanInput) -> Iterator[_Candidate]:
    """Changes that turn graphs on or change the mode: the bases the size changes build on."""
    if plan.cudagraph_mode == "NONE" and plan.requested_cudagraph_mode == "NONE":
        on = inp
        what: list[str] = []
        if inp.enforce_eager:
            on, what = replace(on, enforce_eager=False), [*what, "drop enforce_eager"]
        if inp.cudagraph_mode is Mode.NONE:
            on = replace(on, cudagraph_mode=Mode.FULL_AND_PIECEWISE)
            what.append("cudagraph_mode FULL_AND_PIECEWISE")
        if inp.optimization_level == 0:
            on, what = replace(on, optimization_level=2), [*what, "-O2"]
        if inp.compilation_mode is not None and inp.compilation_mode != VLLM_COMPILE:
            on, what = (
                replace(on, compilation_mode=VLLM_COMPILE),
                [*what, "compilation_config.mode VLLM_COMPILE"],
            )
        if what:
            yield _Candidate(tuple(what), on)
        return
    if not any(g.mode == "PIECEWISE" for g in plan.gaps) and plan.cudagraph_mode != "PIECEWISE":
        return
    mixed_now = Mode(plan.cudagraph_mode).mixed_mode()
    for m in (Mode.FULL_AND_PIECEWISE, Mode.FULL_DECODE_ONLY, Mode.FULL):
        # A mode without a mixed half would send every mixed batch eager: never a fix.
        if m.mixed_mode() is Mode.NONE and mixed_now is not Mode.NONE:
            continue
        if m.value != plan.requested_cudagraph_mode:
            yield _Candidate((f"cudagraph_mode {m.value}",), replace(inp, cudagraph_mode=m))


def _tier_candidates(plan: Plan, inp: PlanInput) -> Iterator[_Candidate]:
    """Narrow a dynamic-SD tier: speculate fewer tokens on the batches whose steps outgrow the
    maximum, so that they fit under it (drafting less, but on graphs)."""
    spec = inp.speculative
    if spec is None or not spec.num_speculative_tokens_per_batch_size:
        return
    cap = plan.max_capture_size  # 0 without graphs: then no tier fits at any K >= 1 (k2 < 1 below)
    out: list[tuple[int, int, int]] = []
    changed: list[str] = []
    for a, b, k in spec.num_speculative_tokens_per_batch_size:
        if b * (k + 1) <= cap or k <= 1:
            out.append((a, b, k))
            continue
        m = cap // (k + 1)  # widest batch that still fits at K
        k2 = cap // b - 1  # the K at which the tier's widest batch fits
        if k2 < 1:
            out.append((a, b, k))
            continue
        if m >= a:
            out += [(a, m, k), (m + 1, b, k2)]
            changed.append(f"K {k} → {k2} for batches {m + 1}-{b}")
        else:
            out.append((a, b, k2))
            changed.append(f"K {k} → {k2} for batches {a}-{b}")
    if changed:
        new_spec = replace(spec, num_speculative_tokens_per_batch_size=tuple(out))
        yield _Candidate(
            (f"narrow the dynamic-SD schedule: {'; '.join(changed)}",), replace(inp, speculative=new_spec)
        )


def _cheap_bound(
    cand: PlanInput, rules: VllmRules, base: Plan, plan: Plan, budgets: FixBudgets | None
) -> str | None:
    """Why `cand` need not be planned: its ladder alone cannot close the gaps of `base` (the plan
    it changes the sizes of), or, with `budgets` (over-budget fixes not asked for), already holds
    more sizes than a graph budget `plan` (the plan being fixed) keeps allows: each size is at least
    one graph of the target when the mode keeps a mixed half, so `_graph_breaks` would drop it
    after planning. None: plan it."""
    try:
        ladder = capture_ladder(cand, rules, True, cand.enable_sp and cand.tensor_parallel_size > 1)
    except Rejected:
        return "rejected"
    # Size changes keep the tiers, so every gap of `base` needs a graph at least this wide.
    needed = max((g.last * _tier(g) for g in base.gaps), default=0)
    if needed > ladder.max_size_tokens:
        return f"its largest size {ladder.max_size_tokens} < {needed} tokens"
    mode = cand.cudagraph_mode
    keeps_mixed = mode is None or mode.mixed_mode() is not Mode.NONE
    if budgets is not None and keeps_mixed:
        q = cand.uniform_decode_query_len
        # V1 rounds sizes up to multiples of q under a FULL decode mode: count what survives
        lower = min(len(ladder.sizes_tokens), len({-(-s // q) for s in ladder.sizes_tokens}))
        if _floor_breaks(plan, lower, budgets):
            return f"{lower} sizes: at least as many target graphs, over the graph budget"
    return None


def _graph_breaks(
    before: Mapping[str, Sequence[Graph]], after: Mapping[str, Sequence[Graph]], budgets: FixBudgets
) -> list[str]:
    """The graph-count budgets `after` (graph families) breaks that `before` did not break as badly."""
    out: list[str] = []
    for family, graphs in after.items():
        limit = budgets.graph_limit(family)
        n, n0 = len(graphs), len(before.get(family, ()))
        if limit is not None and n > limit and n > n0:
            out.append(f"{family}: {n} graphs > {limit}")
    total = sum(len(g) for g in after.values())
    total0 = sum(len(g) for g in before.values())
    if budgets.max_total_graphs is not None and total > budgets.max_total_graphs and total > total0:
        out.append(f"{total} graphs in all > {budgets.max_total_graphs}")
    return out


def _floor_breaks(before: Plan, target_floor: int, budgets: FixBudgets) -> bool:
    """True when a candidate with at least `target_floor` target graphs breaks a graph budget
    `before` did not break as badly: then `_graph_breaks` of its graphs is not empty either."""
    limit = budgets.graph_limit("target")
    n0 = len(before.graphs.get("target", ()))
    if limit is not None and target_floor > limit and target_floor > n0:
        return True
    total0 = graph_count(before)
    most = budgets.max_total_graphs
    return most is not None and target_floor > most and target_floor > total0


def _budget_breaks(
    before: Plan,
    after: Plan,
    costs: tuple[CostTotals, CostTotals] | None,
    budgets: FixBudgets,
) -> tuple[str, ...]:
    """Budgets `after` breaks (one already broken before may stay broken, no worse); `costs`:
    the predicted totals before and after (None without a cost model)."""
    out = _graph_breaks(before.graphs, after.graphs, budgets)
    if costs is not None and budgets.max_pool_mib is not None:
        mib, mib0 = costs[1].total_mib, costs[0].total_mib
        if mib > budgets.max_pool_mib and mib > mib0:
            out.append(f"{mib / MIB_PER_GIB:.2f} GiB predicted > {budgets.max_pool_mib / MIB_PER_GIB:g} GiB")
    if costs is not None and budgets.max_capture_s is not None:
        s, s0 = costs[1].capture_s, costs[0].capture_s
        if s > budgets.max_capture_s and s > s0:
            out.append(f"capture {s:.1f} s > {budgets.max_capture_s:g} s")
    if budgets.max_decode_padding_ratio is not None:
        for ql in sorted(after.uniform_decode):
            r, r0 = padding_ratio(after, ql), padding_ratio(before, ql)
            if r is not None and r > budgets.max_decode_padding_ratio and (r0 is None or r > r0):
                out.append(
                    f"padding ratio {r:.3f} at {ql} tokens/request > {budgets.max_decode_padding_ratio:g}"
                )
    return tuple(out)


def _compilation_json(inp: PlanInput) -> dict[str, object]:
    cc: dict[str, object] = {}
    if inp.compilation_mode is not None:
        cc["mode"] = inp.compilation_mode
    if inp.cudagraph_mode is not None:
        cc["cudagraph_mode"] = inp.cudagraph_mode.value
    if inp.cudagraph_capture_sizes is not None:
        cc["cudagraph_capture_sizes"] = list(inp.cudagraph_capture_sizes)
    if inp.max_cudagraph_capture_size is not None:
        cc["max_cudagraph_capture_size"] = inp.max_cudagraph_capture_size
    pc: dict[str, object] = {}
    if inp.enable_sp:
        pc["enable_sp"] = True
    if inp.sp_min_token_num is not None:
        pc["sp_min_token_num"] = inp.sp_min_token_num
    if pc:
        cc["pass_config"] = pc
    return cc


def fix_flags(
    before: PlanInput, after: PlanInput
) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...], tuple[tuple[str, object], ...]]:
    """(shell-quoted flags, the same as argv words per flag, dotted config changes) turning
    `before` into `after`.

    Each flag is one shell word group that pastes into bash and zsh (`shlex.quote`d). Where the
    config already sets compilation keys, the change is one whole `--compilation-config` JSON:
    vLLM lets a later `--compilation-config` (or `-cc.key=`) value replace an earlier one whole,
    and refuses `--cudagraph-capture-sizes` beside a JSON value that sets the same key.
    """
    words: list[tuple[str, ...]] = []
    change: list[tuple[str, object]] = []
    if before.enforce_eager and not after.enforce_eager:
        words.append(("--no-enforce-eager",))
        change.append(("enforce_eager", False))
    if before.optimization_level != after.optimization_level:
        words.append((f"-O{after.optimization_level}",))
        change.append(("optimization_level", after.optimization_level))
    if before.speculative != after.speculative and after.speculative is not None:
        s = after.speculative
        sc: dict[str, object] = {"method": s.method, "num_speculative_tokens": s.num_speculative_tokens}
        if s.num_speculative_tokens_per_batch_size is not None:
            sc["num_speculative_tokens_per_batch_size"] = [
                list(e) for e in s.num_speculative_tokens_per_batch_size
            ]
            change.append(
                (
                    "speculative_config.num_speculative_tokens_per_batch_size",
                    sc["num_speculative_tokens_per_batch_size"],
                )
            )
        if s.enforce_eager:
            sc["enforce_eager"] = True
        words.append(("--speculative-config", json.dumps(sc, separators=(",", ":"))))
    cc_before, cc_after = _compilation_json(before), _compilation_json(after)
    if cc_before != cc_after:
        keys = ("mode", "cudagraph_mode", "cudagraph_capture_sizes", "max_cudagraph_capture_size")
        change += [
            (f"compilation_config.{k}", cc_after.get(k)) for k in keys if cc_before.get(k) != cc_after.get(k)
        ]
        if cc_before:
            words.append(("--compilation-config", json.dumps(cc_after, separators=(",", ":"))))
        else:
            if "cudagraph_mode" in cc_after:
                words.append((f"-cc.cudagraph_mode={cc_after['cudagraph_mode']}",))
            sizes = cc_after.get("cudagraph_capture_sizes")
            if isinstance(sizes, list):
                words.append(("--cudagraph-capture-sizes", *map(str, sizes)))
            if "max_cudagraph_capture_size" in cc_after:
                words.append(("--max-cudagraph-capture-size", str(cc_after["max_cudagraph_capture_size"])))
    flags = tuple(" ".join(shlex.quote(w) for w in group) for group in words)
    return flags, tuple(words), tuple(change)


def _yaml_scalar(value: object) -> str:
    """A value as YAML reads it back: JSON's spelling (flow lists, true/false, quoted strings)
    except a plain word such as FULL_AND_PIECEWISE."""
    words = ("true", "false", "null", "yes", "no", "on", "off", "~")
    if isinstance(value, str) and value.replace("_", "").isalnum() and not value[0].isdigit():
        return value if value.lower() not in words else json.dumps(value)
    return json.dumps(value, separators=(", ", ": "))


def config_yaml(change: Sequence[tuple[str, object]]) -> tuple[str, ...]:
    """A fix's (dotted key, value) pairs as the lines of a `vllm serve --config` YAML, nested
    keys under their section, sections in first-seen order.

    >>> config_yaml([("compilation_config.max_cudagraph_capture_size", 544)])
    ('compilation_config:', '  max_cudagraph_capture_size: 544')
    >>> config_yaml([("enforce_eager", False), ("compilation_config.cudagraph_mode", "FULL")])
    ('enforce_eager: false', 'compilation_config:', '  cudagraph_mode: FULL')
    """
    tree: dict[str, object] = {}
    for key, value in change:
        node = tree
        *parents, leaf = key.split(".")
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):  # a fix's keys are never both a leaf and a section
                child = node[part] = {}
            node = child
        node[leaf] = value
    lines: list[str] = []

    def emit(node: dict[str, object], depth: int) -> None:
        for k, v in node.items():
            if isinstance(v, dict):
                lines.append(f"{'  ' * depth}{k}:")
                emit(v, depth + 1)
            else:
                lines.append(f"{'  ' * depth}{k}: {_yaml_scalar(v)}")

    emit(tree, 0)
    return tuple(lines)


def _closed(before: Plan, after: Plan) -> tuple[int, ...]:
    return tuple(
        i
        for i, g in enumerate(before.gaps)
        if not any(h.query_len == g.query_len and h.first <= g.last and g.first <= h.last for h in after.gaps)
    )


def _beyond(costs: tuple[CostTotals, CostTotals] | None) -> tuple[str, ...]:
    """The ways a fixed plan's memory figure leaves the validated domain that the plan's own does
    not (a ladder past the fit's largest graph): there it ranks no fix."""
    if costs is None:
        return ()
    return tuple(r for r in costs[1].domain.outside if r not in costs[0].domain.outside)


def _still_open(after: Plan) -> str:
    if not after.gaps:
        return ""
    parts = [f"{g.first}-{g.last}" if g.first != g.last else f"{g.first}" for g in after.gaps[:4]]
    tiers = sorted({g.query_len for g in after.gaps if g.query_len})
    more = f" and {len(after.gaps) - 4} more" if len(after.gaps) > 4 else ""
    return (
        f"{gap_batches(after)} batch sizes in {len(after.gaps)} gap(s) stay open "
        f"(requests {', '.join(parts)}{more}; {', '.join(map(str, tiers))} tokens/request)"
    )


_Key = tuple[int, bool, float, bool, int, int, float, float, float, int]
"""A fix's rank in the search: gap batches left, heavy padding, mean padding, memory outside the
validated domain, MiB (0 there), graphs, capture seconds, worst and mean padding, flag length."""


def rank_fixes(fixes: Sequence[tuple[Fix, _Key]]) -> list[Fix]:
    """The fixes in the search's order: by their keys, except that a mean padding within
    PADDING_TOLERANCE_PCT of the least padded fix's counts as the least (stable: ties keep the
    order found)."""
    least = min((k[2] for _, k in fixes), default=0.0)

    def rank(fk: tuple[Fix, _Key]) -> _Key:
        k = fk[1]
        return (k[0], k[1], 0.0 if k[2] <= least + PADDING_TOLERANCE_PCT else k[2], *k[3:])

    return [f for f, _ in sorted(fixes, key=rank)]


def propose_fixes(
    plan: Plan,
    inp: PlanInput,
    ladder: Ladder,
    replan: Replan,
    search: FixSearch | None = None,
    rules: VllmRules | None = None,
    graphs_of: GraphsOf | None = None,
    target_floor: TargetFloor | None = None,
) -> tuple[Fix, ...]:
    """Flag changes that close gaps, each planned again in full, best first.

    Stage one changes what captures at all (graphs on, the mode, a narrowed dynamic-SD tier);
    stage two, on the original and on every stage-one result, changes the capture sizes aimed at
    the gaps that remain. A change that makes any batch worse is never kept.

    `graphs_of` (optional) gives a candidate's graphs without planning its dispatch: a stage-two
    candidate whose graph counts break a budget (and over-budget fixes are not asked for) is
    dropped there, before `replan` plans its dispatch tables (most of a plan's cost), since it
    could only have been dropped for the same break after them. `target_floor` (optional, with
    `graphs_of`) drops one whose target graphs are over budget already by their lower bound,
    before its graphs are made.
    """
    from cgplan.core.predict.cost import plan_cost_totals

    search = search or FixSearch()
    rules = rules or rules_for(inp.vllm_version)
    budgets = search.budgets

    def cost(p: Plan, i: PlanInput) -> CostTotals | None:
        # the two totals a fix is held to and shows (plan_cost's, without its per-graph parts);
        # None where the model withholds the figure (no term for the config: MoE/MLA without its
        # set, an unmeasured attention backend): no budget, price or rank is read off it then
        assert search.coefficients is not None
        totals = plan_cost_totals(p, i, search.coefficients)
        return totals if totals.domain.figure else None

    cost0 = cost(plan, inp) if search.coefficients is not None else None  # None: graph counts only
    pad0 = step_padding(plan)
    before_graphs, before_pad = graph_count(plan), padding_tokens(plan)
    seen: set[PlanInput] = {inp}
    fixes: list[tuple[Fix, _Key]] = []
    runs0, mixed0 = _runs(plan), _mixed_runs(plan)  # what every candidate is held against

    def attempt(cand: _Candidate, bound_base: Plan | None) -> Plan | None:
        if cand.inp in seen:
            return None
        seen.add(cand.inp)
        bound_budgets = None if search.allow_over_budget else budgets
        if (
            bound_base is not None
            and _cheap_bound(cand.inp, rules, bound_base, plan, bound_budgets) is not None
        ):
            return None
        if bound_base is not None and graphs_of is not None and not search.allow_over_budget:
            try:
                if target_floor is not None and _floor_breaks(plan, target_floor(cand.inp), budgets):
                    return None  # the same break `_graph_breaks` finds below, from fewer graphs
                if _graph_breaks(plan.graphs, graphs_of(cand.inp), budgets):
                    return None  # over budget: never a fix (and stage two's results are no bases)
            except (Rejected, ValueError):
                return None
        try:
            after = replan(cand.inp)
        except (Rejected, ValueError):
            return None
        if _opens_gaps(plan, after, runs0, mixed0):
            return None
        if gap_batches(after) >= gap_batches(plan):
            return after  # no better on its own; it may still be a base for stage two
        cost1 = None if cost0 is None else cost(after, cand.inp)
        costs = None if cost0 is None or cost1 is None else (cost0, cost1)
        breaks = _budget_breaks(plan, after, costs, budgets)
        if breaks and not search.allow_over_budget:
            return after
        flags, argv, change = fix_flags(inp, cand.inp)
        if not flags:
            return after
        pad = step_padding(after)
        if pad.worst_pct > max(MAX_WORST_PADDING_PCT, pad0.worst_pct):
            return after  # absurd padding: never a fix (it may still be a base for stage two)
        after_pad = padding_tokens(after)
        remaining = len(after.gaps)
        parts = [
            f"graphs {before_graphs} → {graph_count(after)} ({graph_count(after) - before_graphs:+d})",
        ]
        if costs is not None:
            c0, c = costs
            # outside the validated domain the figure carries its wider band, and the ways the
            # fix leaves the domain that the plan's own figure (printed above it) does not
            new = _beyond(costs)
            where = (
                f"; {c.low_mib:,.0f}..{c.high_mib:,.0f} MiB outside the validated domain"
                + (f": {'; '.join(new)}" if new else "")
                if c.domain.outside
                else ""
            )
            delta = f"{c.total_mib - c0.total_mib:+,.0f}{where}"
            parts.append(f"predicted {c0.total_mib:,.0f} → {c.total_mib:,.0f} MiB ({delta})")
            parts.append(
                f"capture {c0.capture_s:.1f} → {c.capture_s:.1f} s ({c.capture_s - c0.capture_s:+.1f})"
            )
        parts.append(f"per-step padding worst {pad.worst_pct:.1f}%, mean {pad.mean_pct:.1f}%")
        parts.append(f"gaps {len(plan.gaps)} → {remaining}")
        fix = Fix(
            flags=flags,
            config_change=change,
            closes=_closed(plan, after),
            remaining_gaps=remaining,
            graphs_before=before_graphs,
            graphs_after=graph_count(after),
            num_capture_sizes_after=len(after.capture_sizes),
            padding_before_tokens=before_pad,
            padding_after_tokens=after_pad,
            summary=", ".join(parts),
            argv=argv,
            changes=cand.what,
            complete=remaining == 0,
            still_open=_still_open(after),
            pool_before_mib=round(costs[0].total_mib, 1) if costs else None,
            pool_after_mib=round(costs[1].total_mib, 1) if costs else None,
            pool_after_band_mib=(costs[1].low_mib, costs[1].high_mib) if costs else None,
            pool_after_outside=_beyond(costs),
            capture_before_s=round(costs[0].capture_s, 2) if costs else None,
            capture_after_s=round(costs[1].capture_s, 2) if costs else None,
            step_padding_before=pad0,
            step_padding_after=pad,
            over_budget=breaks,
        )
        # coverage, then padding (paid on every step), then memory (paid once): the order that
        # stands where the latency model cannot price the steps (`advice.rank_fixes`)
        key = (
            gap_batches(after),
            pad.mean_pct > max(HEAVY_PADDING_PCT, pad0.mean_pct),
            pad.mean_pct,  # compared within PADDING_TOLERANCE_PCT of the least padded below
            # memory ranks only on the plan's own footing: a fix whose figure leaves the
            # validated domain further than the plan's ranks after the rest, and not by it (issue 29)
            bool(_beyond(costs)),
            round(costs[1].total_mib) if costs and not _beyond(costs) else 0,
            fix.graphs_after,
            round(costs[1].capture_s, 1) if costs else 0.0,
            pad.worst_pct,
            pad.mean_pct,
            len(" ".join(flags)),
        )
        fixes.append((fix, key))
        return after

    bases: list[tuple[_Candidate, Plan]] = [(_Candidate((), inp), plan)]
    for cand in (*_mode_candidates(plan, inp), *_tier_candidates(plan, inp)):
        after = attempt(cand, None)
        if after is not None and after.gaps:
            bases.append((cand, after))
    for base_cand, base_plan in bases:
        limit = None if search.allow_over_budget else budgets.tightest_family_limit
        for size_cand in _size_candidates(base_plan, base_cand.inp, limit):
            attempt(_Candidate((*base_cand.what, *size_cand.what), size_cand.inp), base_plan)
    ranked = rank_fixes(fixes)

    # Drop a fix another beats on every figure the user pays (Pareto front).
    def figures(f: Fix) -> tuple[float, ...]:
        sp = f.step_padding_after
        return (
            float(f.remaining_gaps),
            # memory beyond the plan's own domain is unknown here: it never beats another figure,
            # and among such figures none is better
            (f.pool_after_mib or 0.0) if not f.pool_after_outside else math.inf,
            float(f.graphs_after),
            f.capture_after_s or 0.0,
            sp.worst_pct if sp else 0.0,
            sp.mean_pct if sp else 0.0,
        )

    front = [
        f
        for f in ranked
        if not any(
            o is not f
            and all(x <= y for x, y in zip(figures(o), figures(f), strict=True))
            and figures(o) != figures(f)
            for o in ranked
        )
    ]
    complete = [f for f in front if f.complete]
    if complete:
        return tuple(complete[: search.max_fixes])
    return tuple(front[:1])
