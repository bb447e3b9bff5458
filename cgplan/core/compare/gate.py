"""gate: policy thresholds held against a plan or a capture (and an optional baseline)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cgplan.core.plan.budgets import MIB_PER_GIB, FixBudgets

if TYPE_CHECKING:
    from cgplan.core.compare.sides import RequestMove, Side
    from cgplan.core.model.predictions import FixLatency
    from cgplan.core.model.types import Fix

GIB = 1 << 30


@dataclass(frozen=True)
class GatePolicy:
    """Thresholds; None switches a check off."""

    no_eager_uniform_decode: bool = True
    """No uniform-decode batch of any dynamic-SD tier runs eager."""
    no_piecewise_uniform_decode: bool = False
    """No uniform-decode batch replays a PIECEWISE graph (FULL everywhere)."""
    widest_decode_full: bool = True
    """The widest batch of each tier replays a FULL graph."""
    max_graphs_per_family: dict[str, int] = field(default_factory=dict)
    """family → most graph descriptors allowed ("*" for every family)."""
    max_total_graphs: int | None = None
    """Most graph descriptors over all families."""
    max_pool_gib: float | None = None
    """Most graph-pool memory (measured from a capture report, or predicted)."""
    max_capture_seconds: float | None = None
    """Longest capture phase (capture reports)."""
    max_decode_padding_ratio: float | None = None
    """Most padded/real tokens over any tier's graph-replayed decode batches."""
    max_eager_time_share: float | None = None
    """Most share of the expected step time (latency model, default traffic) spent in eager steps."""
    no_regression: bool = True
    """With a baseline: no request count loses coverage (FULL → PIECEWISE/eager, PIECEWISE → eager),
    compared per request count across tiers and K."""
    max_graph_growth_pct: float | None = 10.0
    """With a baseline: most growth of the total graph count, in percent."""


@dataclass(frozen=True)
class Check:
    """One policy check's verdict."""

    name: str
    passed: bool
    detail: str
    skipped: bool = False
    value: float | None = None
    """The figure the check judged (eager request counts, graphs, GiB, s, a share...)."""
    limit: float | None = None
    """The policy's limit it was held to (None: a yes/no check, or no limit set)."""


@dataclass(frozen=True)
class GateResult:
    """All checks of one target."""

    target: str
    checks: tuple[Check, ...]
    fix: Fix | None = None
    """The flag change that closes the failed coverage checks (a config's best fix, planned
    again), None where none was found or none was needed."""
    fix_timing: FixLatency | None = None
    """That fix in time (the latency model's expected step after it)."""
    gap_share: float | None = None
    """What the target's uniform-decode gaps cost, as a share of its expected step (a plan with a
    latency model and gaps; None otherwise)."""

    @property
    def passed(self) -> bool:
        """Every check passed or was skipped."""
        return all(c.passed or c.skipped for c in self.checks)


DEFAULT_POLICY = GatePolicy(max_graphs_per_family={"*": 400})
"""The policy `cgplan gate` applies without --policy (configs/gates/default.yaml says the same)."""


def budgets_of(policy: GatePolicy) -> FixBudgets:
    """The budgets of `policy` a proposed fix must stay within (graphs, memory, time, padding)."""
    return FixBudgets(
        max_graphs_per_family=tuple(sorted(policy.max_graphs_per_family.items())),
        max_total_graphs=policy.max_total_graphs,
        max_pool_mib=None if policy.max_pool_gib is None else policy.max_pool_gib * MIB_PER_GIB,
        max_capture_s=policy.max_capture_seconds,
        max_decode_padding_ratio=policy.max_decode_padding_ratio,
    )


DEFAULT_BUDGETS = budgets_of(DEFAULT_POLICY)
"""The default gate's budgets: what every printed fix stays within unless --allow-over-budget."""

_RANK = {mode: rank for rank, mode in enumerate(("NONE", "PIECEWISE", "FULL"))}
"""Coverage, lowest first: a move down this order loses coverage."""


def _runs(gaps: list[tuple[int, int, int, str]]) -> str:
    """Request runs with their token counts: `31-32 requests × 17 (527..544 tokens)`."""
    return ", ".join(
        f"{a}-{b} requests × {ql} ({a * ql}..{b * ql} tokens)"
        if a != b
        else f"{a} requests × {ql} ({a * ql} tokens)"
        for ql, a, b, _ in gaps
    )


_LISTED = 6
"""How many missing request runs a check's detail names before it counts the rest."""
_FAILURE_CHARS = 100
"""How much of a capture's failure message a check quotes (an OOM message runs on)."""


def _incomplete(side: Side) -> str | None:
    """A partial or failed capture, in words (None for a complete one or a plan)."""
    if side.status == "complete":
        return None
    why = side.failure or ""
    why = why if len(why) <= _FAILURE_CHARS else why[: _FAILURE_CHARS - 3].rstrip() + "..."
    return f"capture {side.status}" + (f" ({why})" if why else "")


def _missing_shapes(side: Side) -> str | None:
    """Which uniform-decode batches have no outcome at all (None when every tier is covered):
    a check on an empty or partial dispatch table would hold vacuously, so it fails instead."""
    miss = [(ql, a, b, "-") for ql in side.query_lens for a, b in side.missing_decode(ql)]
    if not miss:
        return None
    listed = _runs(miss[:_LISTED]) + (f" and {len(miss) - _LISTED} more runs" if len(miss) > _LISTED else "")
    why = _incomplete(side)
    return f"{why}: " * bool(why) + f"no uniform-decode outcome for {listed}"


def _missing_graphs(side: Side) -> str | None:
    """What a partial capture did not capture, or an empty graph table (None when complete)."""
    lacking = side.missing_graphs()
    if lacking:
        planned = sum(len(set(g)) for g in (side.planned_graphs or {}).values())
        got = sum(len(g) for g in side.graphs.values())
        fams = ", ".join(f"{f} {n}" for f, n in sorted(lacking.items()))
        return f"{_incomplete(side)}: {got} of {planned} planned graphs captured (missing {fams})"
    if not any(side.graphs.values()):
        why = _incomplete(side)
        return f"{why}: " * bool(why) + "no graphs at all (an empty graph table proves nothing)"
    return None


def _le(value: float, limit: float, text: str) -> str:
    """`235 ≤ 400` or `420 > 400`: the figure beside its limit, `text` formatting both."""
    return f"{text.format(value)} {'≤' if value <= limit else '>'} {text.format(limit)}"


def _time_cost(side: Side, gaps: list[tuple[int, int, int, str]]) -> str:
    """What the batches of `gaps` cost on the expected step, from the plan's latency model:
    `; they cost +0.674 ms of the expected 2.10 ms step (32%)` ('' without the figures)."""
    step = side.expected_step_ms
    if not side.gap_costs or not step:
        return ""
    want = {(ql, mode) for ql, _, _, mode in gaps}
    spans = [(ql, a, b) for ql, a, b, _ in gaps]
    cost = sum(
        c.expected_cost_ms
        for c in side.gap_costs
        if (c.query_len, c.mode) in want
        and any(ql == c.query_len and a <= c.last_reqs and c.first_reqs <= b for ql, a, b in spans)
    )
    outside = extrapolated(side)
    why = f" (extrapolated: {outside[0].partition(' (')[0]})" if outside else ""
    return f"; they cost +{cost:.3f} ms of the expected {step:.2f} ms step ({cost / step:.1%}){why}"


def extrapolated(side: Side) -> list[str]:
    """Where the step-time figures lie outside the latency model's measured domain (beyond the
    two caveats every plan carries: the release it was measured with, short-context attention)."""
    return [
        c
        for c in side.step_caveats
        if not (c.startswith("measured with ") or c.startswith("attention over short contexts"))
    ]


def _count(gaps: list[tuple[int, int, int, str]]) -> int:
    return sum(b - a + 1 for _, a, b, _ in gaps)


def evaluate_gate(policy: GatePolicy, side: Side, baseline: Side | None = None) -> GateResult:
    """Hold `side` against `policy` (and `baseline` for the regression checks).

    Every check states its figure beside its limit (`235 ≤ 400`), passed or not. A check never
    holds for want of data: where the side lacks what the check needs (a partial or failed
    capture, an empty or short dispatch or graph table) it fails and says what is missing."""
    # here, not at import: diff and sweep read this module without gating (issue 18)
    from cgplan.core.compare.sides import decode_gaps, padding

    checks: list[Check] = []
    if side.rejected:
        return GateResult(side.label, (Check("config_accepted", False, side.rejected),))
    no_dispatch = _missing_shapes(side)
    no_graphs = _missing_graphs(side)
    incomplete = _incomplete(side)
    if incomplete:
        # By its own account the capture stopped early: even where its tables look whole, what
        # it did not get to (mixed batches, memory, the rest of the engine) is unknown.
        checks.append(Check("capture_complete", False, f"{incomplete}: gate a complete capture"))
    gaps = decode_gaps(side)
    total = side.request_counts()
    if policy.no_eager_uniform_decode:
        eager = [g for g in gaps if g[3] == "NONE"]
        n = _count(eager)
        checks.append(
            Check(
                "no_eager_uniform_decode",
                not eager and not no_dispatch,
                f"eager: {_runs(eager)}: {n} of {total} request counts" + _time_cost(side, eager)
                if eager
                else (no_dispatch or f"0 of {total} request counts eager"),
                value=n,
                limit=0,
            )
        )
    if policy.no_piecewise_uniform_decode:
        pw = [g for g in gaps if g[3] == "PIECEWISE"]
        n = _count(pw)
        checks.append(
            Check(
                "no_piecewise_uniform_decode",
                not pw and not no_dispatch,
                f"PIECEWISE: {_runs(pw)}: {n} of {total} request counts" + _time_cost(side, pw)
                if pw
                else (no_dispatch or f"0 of {total} request counts PIECEWISE (all FULL)"),
                value=n,
                limit=0,
            )
        )
    if policy.widest_decode_full:
        bad, good = [], []
        for ql in side.query_lens:
            runs = side.decode_runs(ql)
            if not runs:
                continue
            last, mode = runs[-1].last, runs[-1].mode
            text = f"{last} requests × {ql} ({last * ql} tokens) → {mode}"
            if mode == "FULL":
                good.append(text)
                continue
            cost = next(
                (
                    c.cost_ms_per_step
                    for c in side.gap_costs
                    if c.query_len == ql and c.first_reqs <= last <= c.last_reqs
                ),
                None,
            )
            bad.append(text + ("" if cost is None else f" (+{cost:.2f} ms per such step vs a FULL graph)"))
        checks.append(
            Check(
                "widest_decode_full",
                not bad and not no_dispatch,
                "; ".join(bad) or no_dispatch or "; ".join(good) or "no uniform-decode batch",
                value=len(bad),
                limit=0,
            )
        )
    counts = {f: len(g) for f, g in side.graphs.items()}
    for family, limit in sorted(policy.max_graphs_per_family.items()):
        fams = counts if family == "*" else {family: counts.get(family, 0)}
        over = {f: n for f, n in fams.items() if n > limit}
        widest = max(fams.values(), default=0)
        if over:
            detail = ", ".join(f"{f}: {n} > {limit}" for f, n in over.items())
        elif len(fams) > 1:
            top = max(fams, key=lambda f: fams[f])
            detail = f"{_le(widest, limit, '{}')} ({top}, the largest of {len(fams)} families)"
        else:
            detail = f"{', '.join(fams) or family}: {_le(widest, limit, '{}')}"
        checks.append(
            Check(
                f"max_graphs_per_family[{family}]",
                not over and not no_graphs,
                detail if over or not no_graphs else no_graphs,
                value=widest,
                limit=limit,
            )
        )
    if policy.max_total_graphs is not None:
        n_graphs = sum(counts.values())
        over_total = n_graphs > policy.max_total_graphs
        checks.append(
            Check(
                "max_total_graphs",
                not over_total and not no_graphs,
                f"{_le(n_graphs, policy.max_total_graphs, '{}')} graphs"
                + (f"; {no_graphs}" if no_graphs and not over_total else ""),
                value=n_graphs,
                limit=policy.max_total_graphs,
            )
        )
    if policy.max_pool_gib is not None:
        if side.pool_bytes is None:
            checks.append(
                Check(
                    "max_pool_gib",
                    True,
                    f"no pool memory figure ({side.pool_withheld or 'plan without a cost model'})",
                    True,
                    limit=policy.max_pool_gib,
                )
            )
        else:
            gib = side.pool_bytes / GIB
            checks.append(
                Check(
                    "max_pool_gib",
                    gib <= policy.max_pool_gib and not incomplete,
                    f"{gib:.2f} {'≤' if gib <= policy.max_pool_gib else '>'} {policy.max_pool_gib:g} GiB "
                    f"{side.pool_source}, capture phase per rank"
                    + (f"; {incomplete}: the figure covers only what was captured" if incomplete else ""),
                    value=round(gib, 4),
                    limit=policy.max_pool_gib,
                )
            )
    if policy.max_capture_seconds is not None:
        if side.capture_time_s is None:
            checks.append(
                Check(
                    "max_capture_seconds",
                    True,
                    "no capture time ("
                    + (
                        (side.pool_withheld or "plan without a cost model")
                        if side.kind == "plan"
                        else "not a capture report"
                    )
                    + ")",
                    True,
                    limit=policy.max_capture_seconds,
                )
            )
        else:
            secs = side.capture_time_s
            checks.append(
                Check(
                    "max_capture_seconds",
                    secs <= policy.max_capture_seconds and not incomplete,
                    f"{secs:.1f} {'≤' if secs <= policy.max_capture_seconds else '>'} "
                    f"{policy.max_capture_seconds:g} s"
                    + (f"; {incomplete}: the time covers only what was captured" if incomplete else ""),
                    value=secs,
                    limit=policy.max_capture_seconds,
                )
            )
    if policy.max_decode_padding_ratio is not None:
        worst: list[str] = []
        each: list[str] = []
        top_ratio = 0.0
        lim = policy.max_decode_padding_ratio
        for ql in side.query_lens:
            p, r = padding(side, ql)
            if not r:
                worst.append(f"q={ql}: no graph-replayed decode batch to measure")
                continue
            top_ratio = max(top_ratio, p / r)
            (worst if p / r > lim else each).append(f"q={ql}: {_le(p / r, lim, '{:.3f}')}")
        checks.append(
            Check(
                "max_decode_padding_ratio",
                not worst and not no_dispatch,
                ", ".join(worst) or no_dispatch or ", ".join(each),
                value=round(top_ratio, 4),
                limit=lim,
            )
        )
    if side.eager_time_share is not None and side.expected_step_ms is not None:
        share, lim_share = side.eager_time_share, policy.max_eager_time_share
        what = f"of the expected {side.expected_step_ms:.2f} ms step is eager"
        if lim_share is None:
            # Stated even without a limit: a gap's verdict reads differently at 2% and at 70%.
            checks.append(
                Check(
                    "max_eager_time_share",
                    True,
                    f"{share:.1%} {what} (no limit set: max_eager_time_share is null)",
                    True,
                    value=round(share, 4),
                )
            )
        else:
            checks.append(
                Check(
                    "max_eager_time_share",
                    share <= lim_share,
                    f"{share:.1%} {'≤' if share <= lim_share else '>'} {lim_share:.1%} {what}",
                    value=round(share, 4),
                    limit=lim_share,
                )
            )
    elif policy.max_eager_time_share is not None:
        checks.append(
            Check(
                "max_eager_time_share",
                True,
                "no expected step time (not a plan with a latency model)",
                True,
                limit=policy.max_eager_time_share,
            )
        )
    if baseline is not None and not baseline.rejected:
        checks += _baseline_checks(policy, side, baseline, no_dispatch, no_graphs)
    step = side.expected_step_ms
    gap_share = sum(c.expected_cost_ms for c in side.gap_costs) / step if side.gap_costs and step else None
    return GateResult(side.label, tuple(checks), gap_share=gap_share)


def regressions(baseline: Side, side: Side) -> list[RequestMove]:
    """Request counts that lose coverage from `baseline` to `side` (FULL → PIECEWISE or eager,
    PIECEWISE → eager), compared per request count across tiers and K: K=3 → K=5 moves every
    request count from the 4-token tier to the 6-token one, so a per-tier comparison would see
    no common batch at all. A request count one side lacks (max_num_seqs changed) is no move."""
    from cgplan.core.compare.sides import request_moves

    return [
        m
        for m in request_moves(baseline, side)
        if m.mode_a in _RANK and m.mode_b in _RANK and _RANK[m.mode_b] < _RANK[m.mode_a]
    ]


def _reqs(first: int, last: int) -> str:
    return f"{first}-{last} requests" if first != last else f"{first} requests"


def _tokens(first: int, last: int, query_len: int) -> str:
    a, b = first * query_len, last * query_len
    return f"{a}..{b} tokens" if a != b else f"{a} tokens"


def _move_text(m: RequestMove) -> str:
    """`31-32 requests × 17: FULL → NONE` within a tier; across tiers, both token counts:
    `86-128 requests × 4 → × 6: FULL → NONE (344..512 tokens → 516..768 tokens)`."""
    n = _reqs(m.first_reqs, m.last_reqs)
    if m.query_len_a == m.query_len_b:
        return f"{n} × {m.query_len_a}: {m.mode_a} → {m.mode_b}"
    ta = _tokens(m.first_reqs, m.last_reqs, m.query_len_a)
    tb = _tokens(m.first_reqs, m.last_reqs, m.query_len_b)
    return f"{n} × {m.query_len_a} → × {m.query_len_b}: {m.mode_a} → {m.mode_b} ({ta} → {tb})"


def _baseline_checks(
    policy: GatePolicy, side: Side, baseline: Side, no_dispatch: str | None, no_graphs: str | None
) -> list[Check]:
    checks: list[Check] = []
    if policy.no_regression:
        worse = regressions(baseline, side)
        base_lacks = _missing_shapes(baseline)
        compared = any(baseline.decode_runs(ql) for ql in baseline.query_lens)
        if worse:
            detail = "; ".join(map(_move_text, worse))
        elif no_dispatch:
            detail = no_dispatch
        elif not compared:
            detail = (
                f"baseline {baseline.label}: {base_lacks or 'no uniform-decode outcome'}: nothing to compare"
            )
        else:
            detail = (
                f"0 of {baseline.request_counts()} request counts lose coverage against {baseline.label}"
                + (f" (not compared, baseline {base_lacks})" if base_lacks else "")
            )
        lost = sum(m.last_reqs - m.first_reqs + 1 for m in worse)
        if worse:
            detail = f"{lost} request counts lose coverage: {detail}"
        checks.append(
            Check("no_regression", not worse and not no_dispatch and compared, detail, value=lost, limit=0)
        )
    if policy.max_graph_growth_pct is not None:
        before = sum(len(g) for g in baseline.graphs.values())
        after = sum(len(g) for g in side.graphs.values())
        growth = 100.0 * (after - before) / before if before else 0.0
        lim_growth = policy.max_graph_growth_pct
        sign = "≤" if growth <= lim_growth else ">"
        detail = f"{before} → {after} graphs ({growth:+.1f}% {sign} {lim_growth:g}%)"
        base_graphs = _missing_graphs(baseline)
        ok = growth <= policy.max_graph_growth_pct
        if ok and no_graphs:
            detail += f"; {no_graphs}"
        elif ok and not before:
            detail = f"baseline {baseline.label}: {base_graphs}: no growth to measure"
        elif base_graphs:
            detail += f" (baseline {base_graphs}: its count is a lower bound)"
        checks.append(
            Check(
                "max_graph_growth_pct",
                ok and not no_graphs and bool(before),
                detail,
                value=round(growth, 2),
                limit=lim_growth,
            )
        )
    return checks
