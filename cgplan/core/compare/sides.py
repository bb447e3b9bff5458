"""What diff, sweep and gate compare: a plan or a capture, reduced to the same shape (pure).

Every comparison walks sorted range lists in step (a merge), never request count by request
count or range against range: a report with many ranges costs time in proportion to its
ranges, not to their product or to max_num_seqs.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from cgplan.core.model.types import DispatchRange, Graph, Plan
from cgplan.core.plan.gaps import gap_batches, graph_count, padding_tokens

STATUSES = ("complete", "partial", "failed")
"""A capture report's status: all of it measured, part of it (out of memory, interrupted), nothing."""


@dataclass(frozen=True)
class GapCost:
    """What one uniform-decode gap of a plan costs in time (the latency model's figures)."""

    query_len: int
    first_reqs: int
    last_reqs: int
    mode: str
    cost_ms_per_step: float
    """At the gap's widest batch: as planned minus a FULL graph of its exact size."""
    expected_cost_ms: float
    """The gap's share of the expected step time at the traffic, in ms."""


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a plan (predicted) or a capture report (measured)."""

    label: str
    """How to name it to a person (a file, "config @ 0.33.0", ...)."""
    kind: str
    """plan or capture."""
    vllm_version: str
    fingerprint: str | None
    max_num_seqs: int
    uniform_decode_query_len: int
    graphs: dict[str, tuple[Graph, ...]]
    uniform_decode: dict[int, tuple[DispatchRange, ...]]
    lookup: tuple[tuple[int, int, int], ...] | None
    """Dynamic-SD lookup (first_batch, last_batch, K), None without a schedule."""
    pool_bytes: int | None = None
    """Graph memory, one definition everywhere: the capture phase on one rank (warmups included,
    what vLLM's "took X GiB" counts): measured (a capture report's `capture_nvml_delta_bytes`, rank
    0's under TP) or predicted (the cost model's total)."""
    pool_source: str | None = None
    """measured or predicted."""
    pool_band_bytes: tuple[int, int] | None = None
    """A prediction's band (the cost model's documented error), None for a measurement."""
    pool_caveats: tuple[str, ...] = ()
    """Why a prediction is outside the cost model's fitted domain (then the band does not hold)."""
    pool_withheld: str | None = None
    """Why a plan has no memory figure at all (outside every fitted domain, by the cost model's own
    words); None when it has one, or for a capture."""
    graph_sections_bytes: int | None = None
    """Detail: the sum over the graph sections alone (warmups excluded)."""
    capture_time_s: float | None = None
    rejected: str | None = None
    """The release refuses the config (then nothing else is meaningful)."""
    status: str = "complete"
    """complete, partial or failed (a capture that stopped half-way: what it lacks is unknown)."""
    failure: str | None = None
    """Why a partial or failed capture stopped (the report's own words)."""
    planned_graphs: dict[str, tuple[Graph, ...]] | None = None
    """A capture's plan: the graphs it should have captured (None for plans)."""
    expected_step_ms: float | None = None
    """Predicted expected step time (plan with a latency model); None for a capture."""
    eager_time_share: float | None = None
    """Predicted share of the expected step time spent in eager steps."""
    model_runner: str | None = None
    """v1 or v2 (None: not known)."""
    kv_bytes_per_token: int | None = None
    """A plan's KV-cache bytes per token on a rank (graph memory in KV tokens)."""
    vllm_kv_cache_tokens: int | None = None
    """vLLM's own "GPU KV cache size: N tokens" (a capture report's), for scale."""
    gap_costs: tuple[GapCost, ...] = ()
    """A plan's uniform-decode gaps in time (empty without a latency model, or for a capture)."""
    step_caveats: tuple[str, ...] = ()
    """Where the step-time figures are extrapolated (the latency model's caveats)."""

    def request_counts(self) -> int:
        """Uniform-decode request counts with an outcome, over every tier."""
        return sum(r.last - r.first + 1 for ql in self.query_lens for r in self.decode_runs(ql))

    def tier_batches(self, query_len: int) -> list[tuple[int, int]]:
        """Request-count runs that decode at `query_len` (sorted, not overlapping)."""
        if self.lookup is None:
            return [(1, self.max_num_seqs)] if query_len == self.uniform_decode_query_len else []
        return [(a, b) for a, b, k in self.lookup if k + 1 == query_len]

    def decode_runs(self, query_len: int) -> tuple[DispatchRange, ...]:
        """The tier's own batches with their outcome: the dispatch ranges clipped to the tier's
        request runs, sorted. One merge of two sorted lists: O(runs + ranges)."""
        return tuple(_clip(self.tier_batches(query_len), self.uniform_decode.get(query_len, ())))

    def decode_modes(self, query_len: int) -> dict[int, tuple[str, int | None]]:
        """request count → (mode, padded tokens) over the tier's own batches (one entry per
        request count: for display and tests; comparisons use `decode_runs`)."""
        return {
            n: (r.mode, r.padded_tokens)
            for r in self.decode_runs(query_len)
            for n in range(r.first, r.last + 1)
        }

    def missing_decode(self, query_len: int) -> list[tuple[int, int]]:
        """Request runs of the tier with no outcome at all (a capture that stopped before
        dispatching them, or a report whose table does not cover them)."""
        out: list[tuple[int, int]] = []
        covered = iter(self.decode_runs(query_len))
        nxt = next(covered, None)
        for lo, hi in self.tier_batches(query_len):
            n = lo
            while n <= hi:
                while nxt is not None and nxt.last < n:
                    nxt = next(covered, None)
                if nxt is None or nxt.first > hi:
                    out.append((n, hi))
                    break
                if nxt.first > n:
                    out.append((n, nxt.first - 1))
                n = nxt.last + 1
        return out

    def missing_graphs(self) -> dict[str, int]:
        """family → planned graphs a partial or failed capture did not capture (empty otherwise)."""
        if self.status == "complete" or self.planned_graphs is None:
            return {}
        out = {}
        for family, planned in self.planned_graphs.items():
            got = set(self.graphs.get(family, ()))
            lacking = sum(1 for g in set(planned) if g not in got)
            if lacking:
                out[family] = lacking
        return out

    @property
    def query_lens(self) -> list[int]:
        """Every decode tier's query length."""
        if self.lookup is None:
            return [self.uniform_decode_query_len]
        return sorted({k + 1 for _, _, k in self.lookup})


def _clip(runs: list[tuple[int, int]], ranges: tuple[DispatchRange, ...]) -> Iterator[DispatchRange]:
    """Intersect sorted request runs with sorted dispatch ranges (both non-overlapping)."""
    i = j = 0
    while i < len(runs) and j < len(ranges):
        lo, hi = runs[i]
        r = ranges[j]
        a, b = max(lo, r.first), min(hi, r.last)
        if a <= b:
            yield DispatchRange(a, b, r.mode, r.padded_tokens, r.padded_reqs)
        if hi < r.last:
            i += 1
        else:
            j += 1


def coverage_moves(a: Side, b: Side, query_len: int) -> Iterator[tuple[int, int, str, str]]:
    """(first, last, mode on A, mode on B) runs where the two sides differ at `query_len`
    ("-": that side has no such batch), adjacent runs with the same pair merged. One sweep
    over both sides' boundaries: O(ranges of A + ranges of B)."""
    ra, rb = a.decode_runs(query_len), b.decode_runs(query_len)
    cuts = sorted({r.first for r in (*ra, *rb)} | {r.last + 1 for r in (*ra, *rb)})
    i = j = 0
    pending: tuple[int, int, str, str] | None = None
    for lo, nxt in itertools.pairwise(cuts):
        while i < len(ra) and ra[i].last < lo:
            i += 1
        while j < len(rb) and rb[j].last < lo:
            j += 1
        xa = ra[i].mode if i < len(ra) and ra[i].first <= lo else "-"
        xb = rb[j].mode if j < len(rb) and rb[j].first <= lo else "-"
        hi = nxt - 1
        if xa == xb:
            continue
        if pending and pending[1] == lo - 1 and pending[2:] == (xa, xb):
            pending = (pending[0], hi, xa, xb)
            continue
        if pending:
            yield pending
        pending = (lo, hi, xa, xb)
    if pending:
        yield pending


@dataclass(frozen=True)
class RequestMove:
    """Request counts whose uniform-decode outcome differs between two sides, whatever tier
    (tokens per request) each side decodes them at."""

    first_reqs: int
    last_reqs: int
    query_len_a: int
    """Tokens per request on side A (0: A has no such batch)."""
    mode_a: str
    """FULL, PIECEWISE, NONE (eager) or "-" (no such batch on that side)."""
    query_len_b: int
    mode_b: str


def request_runs(side: Side) -> list[tuple[int, int, int, str]]:
    """(first, last, query_len, mode) runs of every tier's own batches, sorted by request count
    (the tiers partition the request counts, so the runs do not overlap)."""
    return sorted((r.first, r.last, ql, r.mode) for ql in side.query_lens for r in side.decode_runs(ql))


def request_moves(a: Side, b: Side) -> Iterator[RequestMove]:
    """Runs of request counts whose (tokens per request, outcome) differ from A to B, across
    tiers and K: a request count that decodes at 4 tokens on A and at 6 on B is compared as one
    batch. One sweep over both sides' boundaries: O(runs of A + runs of B)."""
    ra, rb = request_runs(a), request_runs(b)
    cuts = sorted({r[0] for r in (*ra, *rb)} | {r[1] + 1 for r in (*ra, *rb)})
    i = j = 0
    pending: RequestMove | None = None
    for lo, nxt in itertools.pairwise(cuts):
        while i < len(ra) and ra[i][1] < lo:
            i += 1
        while j < len(rb) and rb[j][1] < lo:
            j += 1
        xa = (ra[i][2], ra[i][3]) if i < len(ra) and ra[i][0] <= lo else (0, "-")
        xb = (rb[j][2], rb[j][3]) if j < len(rb) and rb[j][0] <= lo else (0, "-")
        if xa == xb:
            continue
        move = RequestMove(lo, nxt - 1, *xa, *xb)
        if (
            pending
            and pending.last_reqs == lo - 1
            and ((pending.query_len_a, pending.mode_a, pending.query_len_b, pending.mode_b) == (*xa, *xb))
        ):
            pending = RequestMove(pending.first_reqs, nxt - 1, *xa, *xb)
            continue
        if pending:
            yield pending
        pending = move
    if pending:
        yield pending


def side_from_plan(
    plan: Plan, label: str, fingerprint: str | None = None, pool_bytes: int | None = None
) -> Side:
    """A plan as a comparison side (its predicted cost, when it has one, as the pool and time)."""
    band = None
    sections = None
    caveats: tuple[str, ...] = ()
    withheld = None
    if pool_bytes is None and plan.cost is not None and plan.cost.graphs and not plan.cost.domain.figure:
        withheld = "no figure: outside the validated domain (" + "; ".join(plan.cost.domain.outside) + ")"
    costs: list[GapCost] = []
    if plan.latency is not None:
        for g in plan.latency.gaps:
            gap = plan.gaps[g.gap] if g.gap < len(plan.gaps) else None
            if gap is None or gap.family != "uniform_decode":
                continue
            q = gap.query_len or plan.uniform_decode_query_len
            costs.append(
                GapCost(q, gap.first, gap.last, gap.mode, g.cost_ms_per_step, g.expected_cost_ms_per_step)
            )
    if pool_bytes is None and plan.cost is not None and plan.cost.graphs and plan.cost.domain.figure:
        mib = 1 << 20
        pool_bytes = round(plan.cost.total_mib * mib)
        band = (round(plan.cost.low_mib * mib), round(plan.cost.high_mib * mib))
        sections = round(plan.cost.graphs_mib * mib)
        caveats = plan.cost.caveats
    return Side(
        label=label,
        kind="plan",
        vllm_version=plan.vllm_version,
        fingerprint=fingerprint,
        max_num_seqs=plan.max_num_seqs,
        uniform_decode_query_len=plan.uniform_decode_query_len,
        graphs=plan.graphs,
        uniform_decode=plan.uniform_decode,
        lookup=plan.dynamic_sd_lookup,
        pool_bytes=pool_bytes,
        pool_source="predicted" if pool_bytes is not None else None,
        pool_band_bytes=band,
        pool_caveats=caveats,
        pool_withheld=withheld,
        graph_sections_bytes=sections,
        model_runner=plan.model_runner,
        kv_bytes_per_token=plan.kv_bytes_per_token if plan.graph_memory_reserved else None,
        # withheld with the memory figure: the two share one domain (no figure, no gate on it)
        capture_time_s=round(plan.cost.capture_s, 2)
        if plan.cost is not None and plan.cost.graphs and plan.cost.domain.figure
        else None,
        expected_step_ms=plan.latency.expected_step_ms if plan.latency is not None else None,
        eager_time_share=plan.latency.expected_eager_share if plan.latency is not None else None,
        gap_costs=tuple(costs),
        step_caveats=plan.latency.caveats if plan.latency is not None else (),
    )


def rejected_side(label: str, version: str, reason: str) -> Side:
    """A config the release refuses."""
    return Side(label, "plan", version, None, 0, 1, {}, {}, None, rejected=reason)


def padding(side: Side, query_len: int) -> tuple[int, int]:
    """(padded tokens, real tokens) over the tier's batches that replay a graph."""
    padded = real = 0
    for r in side.decode_runs(query_len):
        if r.mode != "NONE" and r.padded_tokens is not None:
            count = r.last - r.first + 1
            padded += r.padded_tokens * count
            real += (r.first + r.last) * count // 2 * query_len  # Σ n for n in first..last
    return padded, real


def decode_gaps(side: Side) -> list[tuple[int, int, int, str]]:
    """(query_len, first, last, mode) runs of the tiers' own batches that are not FULL."""
    out: list[tuple[int, int, int, str]] = []
    for ql in side.query_lens:
        for r in side.decode_runs(ql):
            if r.mode == "FULL":
                continue
            if out and out[-1][0] == ql and out[-1][2] == r.first - 1 and out[-1][3] == r.mode:
                out[-1] = (ql, out[-1][1], r.last, r.mode)
            else:
                out.append((ql, r.first, r.last, r.mode))
    return out


__all__ = [
    "STATUSES",
    "GapCost",
    "RequestMove",
    "Side",
    "coverage_moves",
    "decode_gaps",
    "gap_batches",
    "graph_count",
    "padding",
    "padding_tokens",
    "request_moves",
    "request_runs",
    "side_from_plan",
]
