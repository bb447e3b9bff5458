"""gate: policy thresholds held against a plan or a capture (and an optional baseline)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cgplan.core.plan.budgets import MIB_PER_GIB, FixBudgets

if TYPE_CHECKING:
    from cgplan.core.compare.sides import RequestMove, Side

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


@dataclass(frozen=True)
class GateResult:
    """All checks of one target."""

    target: str
    checks: tuple[Check, ...]

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

_RANK = {"FULL": 2, "PIECEWISE": 1, "NONE": 0}


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


def evaluate_gate(policy: GatePolicy, side: Side, baseline: Side | None = None) -> GateResult:
    """Hold `side` against `policy` (and `baseline` for the regression checks).

    A check never holds for want of data: where the side lacks what the check needs (a
    partial or failed capture, an empty or short dispatch or graph table) it fails and says
    what is missing."""
    # here, not at import: diff and sweep read this module without gating (#18)
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
    if policy.no_eager_uniform_decode:
        eager = [g for g in gaps if g[3] == "NONE"]
        checks.append(
            Check(
                "no_eager_uniform_decode",
                not eager and not no_dispatch,
                f"eager: {_runs(eager)}" if eager else (no_dispatch or "no eager decode batch"),
            )
        )
    if policy.no_piecewise_uniform_decode:
        pw = [g for g in gaps if g[3] == "PIECEWISE"]
        checks.append(
            Check(
                "no_piecewise_uniform_decode",
                not pw and not no_dispatch,
                f"PIECEWISE: {_runs(pw)}" if pw else (no_dispatch or "all FULL"),
            )
        )
    if policy.widest_decode_full:
        bad = []
        for ql in side.query_lens:
            runs = side.decode_runs(ql)
            if runs and runs[-1].mode != "FULL":
                last = runs[-1].last
                bad.append(f"{last} requests × {ql} ({last * ql} tokens) → {runs[-1].mode}")
        checks.append(
            Check(
                "widest_decode_full",
                not bad and not no_dispatch,
                "; ".join(bad) or no_dispatch or "every tier's widest batch is FULL",
            )
        )
    counts = {f: len(g) for f, g in side.graphs.items()}
    for family, limit in sorted(policy.max_graphs_per_family.items()):
        fams = counts if family == "*" else {family: counts.get(family, 0)}
        over = {f: n for f, n in fams.items() if n > limit}
        checks.append(
            Check(
                f"max_graphs_per_family[{family}]",
                not over and not no_graphs,
                ", ".join(f"{f}: {n} > {limit}" for f, n in over.items()) or no_graphs or f"at most {limit}",
            )
        )
    if policy.max_total_graphs is not None:
        total = sum(counts.values())
        over_total = total > policy.max_total_graphs
        checks.append(
            Check(
                "max_total_graphs",
                not over_total and not no_graphs,
                f"{total} graphs (limit {policy.max_total_graphs})"
                + (f"; {no_graphs}" if no_graphs and not over_total else ""),
            )
        )
    if policy.max_pool_gib is not None:
        if side.pool_bytes is None:
            checks.append(
                Check("max_pool_gib", True, "no pool memory figure (plan without a cost model)", True)
            )
        else:
            gib = side.pool_bytes / GIB
            checks.append(
                Check(
                    "max_pool_gib",
                    gib <= policy.max_pool_gib and not incomplete,
                    f"{gib:.2f} GiB {side.pool_source}, capture phase per rank (limit {policy.max_pool_gib})"
                    + (f"; {incomplete}: the figure covers only what was captured" if incomplete else ""),
                )
            )
    if policy.max_capture_seconds is not None:
        if side.capture_time_s is None:
            checks.append(Check("max_capture_seconds", True, "no capture time (not a capture report)", True))
        else:
            checks.append(
                Check(
                    "max_capture_seconds",
                    side.capture_time_s <= policy.max_capture_seconds and not incomplete,
                    f"{side.capture_time_s:.1f} s (limit {policy.max_capture_seconds})"
                    + (f"; {incomplete}: the time covers only what was captured" if incomplete else ""),
                )
            )
    if policy.max_decode_padding_ratio is not None:
        worst = []
        for ql in side.query_lens:
            p, r = padding(side, ql)
            if not r:
                worst.append(f"q={ql}: no graph-replayed decode batch to measure")
            elif p / r > policy.max_decode_padding_ratio:
                worst.append(f"q={ql}: {p / r:.3f} (limit {policy.max_decode_padding_ratio})")
        checks.append(
            Check(
                "max_decode_padding_ratio",
                not worst and not no_dispatch,
                ", ".join(worst) or no_dispatch or f"every tier at most {policy.max_decode_padding_ratio}",
            )
        )
    if policy.max_eager_time_share is not None:
        if side.eager_time_share is None:
            checks.append(
                Check(
                    "max_eager_time_share",
                    True,
                    "no expected step time (not a plan with a latency model)",
                    True,
                )
            )
        else:
            checks.append(
                Check(
                    "max_eager_time_share",
                    side.eager_time_share <= policy.max_eager_time_share,
                    f"{side.eager_time_share:.1%} of the expected {side.expected_step_ms:.2f} ms step "
                    f"is eager (limit {policy.max_eager_time_share:.1%})",
                )
            )
    if baseline is not None and not baseline.rejected:
        checks += _baseline_checks(policy, side, baseline, no_dispatch, no_graphs)
    return GateResult(side.label, tuple(checks))


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
    `86-128 requests × 4 → × 6: FULL → NONE (344..512 → 516..768 tokens)`."""
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
            detail = f"no batch loses coverage against {baseline.label}" + (
                f" (not compared, baseline {base_lacks})" if base_lacks else ""
            )
        checks.append(Check("no_regression", not worse and not no_dispatch and compared, detail))
    if policy.max_graph_growth_pct is not None:
        before = sum(len(g) for g in baseline.graphs.values())
        after = sum(len(g) for g in side.graphs.values())
        growth = 100.0 * (after - before) / before if before else 0.0
        detail = f"{before} → {after} graphs ({growth:+.1f}%, limit {policy.max_graph_growth_pct}%)"
        base_graphs = _missing_graphs(baseline)
        ok = growth <= policy.max_graph_growth_pct
        if ok and no_graphs:
            detail += f"; {no_graphs}"
        elif ok and not before:
            detail = f"baseline {baseline.label}: {base_graphs}: no growth to measure"
        elif base_graphs:
            detail += f" (baseline {base_graphs}: its count is a lower bound)"
        checks.append(Check("max_graph_growth_pct", ok and not no_graphs and bool(before), detail))
    return checks
