"""gate: policy thresholds held against a plan or a capture (and an optional baseline)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cgplan.core.compare_sides import Side, decode_gaps, padding
from cgplan.core.diff import diff_sides

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
    no_regression: bool = True
    """With a baseline: no request count loses coverage (FULL → PIECEWISE/eager, PIECEWISE → eager)."""
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

_RANK = {"FULL": 2, "PIECEWISE": 1, "NONE": 0}


def _runs(gaps: list[tuple[int, int, int, str]]) -> str:
    """Request runs with their token counts: `31-32 requests × 17 (527..544 tokens)`."""
    return ", ".join(
        f"{a}-{b} requests × {ql} ({a * ql}..{b * ql} tokens)"
        if a != b
        else f"{a} requests × {ql} ({a * ql} tokens)"
        for ql, a, b, _ in gaps
    )


def evaluate_gate(policy: GatePolicy, side: Side, baseline: Side | None = None) -> GateResult:
    """Hold `side` against `policy` (and `baseline` for the regression checks)."""
    checks: list[Check] = []
    if side.rejected:
        return GateResult(side.label, (Check("config_accepted", False, side.rejected),))
    gaps = decode_gaps(side)
    if policy.no_eager_uniform_decode:
        eager = [g for g in gaps if g[3] == "NONE"]
        checks.append(
            Check(
                "no_eager_uniform_decode",
                not eager,
                f"eager: {_runs(eager)}" if eager else "no eager decode batch",
            )
        )
    if policy.no_piecewise_uniform_decode:
        pw = [g for g in gaps if g[3] == "PIECEWISE"]
        checks.append(
            Check("no_piecewise_uniform_decode", not pw, f"PIECEWISE: {_runs(pw)}" if pw else "all FULL")
        )
    if policy.widest_decode_full:
        bad = []
        for ql in side.query_lens:
            modes = side.decode_modes(ql)
            if modes:
                widest = max(modes)
                if modes[widest][0] != "FULL":
                    bad.append(f"{widest} requests × {ql} ({widest * ql} tokens) → {modes[widest][0]}")
        checks.append(
            Check("widest_decode_full", not bad, "; ".join(bad) or "every tier's widest batch is FULL")
        )
    counts = {f: len(g) for f, g in side.graphs.items()}
    for family, limit in sorted(policy.max_graphs_per_family.items()):
        fams = counts if family == "*" else {family: counts.get(family, 0)}
        over = {f: n for f, n in fams.items() if n > limit}
        checks.append(
            Check(
                f"max_graphs_per_family[{family}]",
                not over,
                ", ".join(f"{f}: {n} > {limit}" for f, n in over.items()) or f"at most {limit}",
            )
        )
    if policy.max_total_graphs is not None:
        total = sum(counts.values())
        checks.append(
            Check(
                "max_total_graphs",
                total <= policy.max_total_graphs,
                f"{total} graphs (limit {policy.max_total_graphs})",
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
                    gib <= policy.max_pool_gib,
                    f"{gib:.2f} GiB {side.pool_source} (limit {policy.max_pool_gib})",
                )
            )
    if policy.max_capture_seconds is not None:
        if side.capture_time_s is None:
            checks.append(Check("max_capture_seconds", True, "no capture time (not a capture report)", True))
        else:
            checks.append(
                Check(
                    "max_capture_seconds",
                    side.capture_time_s <= policy.max_capture_seconds,
                    f"{side.capture_time_s:.1f} s (limit {policy.max_capture_seconds})",
                )
            )
    if policy.max_decode_padding_ratio is not None:
        worst = []
        for ql in side.query_lens:
            p, r = padding(side, ql)
            if r and p / r > policy.max_decode_padding_ratio:
                worst.append(f"q={ql}: {p / r:.3f} (limit {policy.max_decode_padding_ratio})")
        checks.append(
            Check(
                "max_decode_padding_ratio",
                not worst,
                ", ".join(worst) or f"every tier at most {policy.max_decode_padding_ratio}",
            )
        )
    if baseline is not None and not baseline.rejected:
        d = diff_sides(baseline, side)
        if policy.no_regression:
            worse = [
                m
                for m in d.moves
                if m.mode_a in _RANK and m.mode_b in _RANK and _RANK[m.mode_b] < _RANK[m.mode_a]
            ]
            checks.append(
                Check(
                    "no_regression",
                    not worse,
                    "; ".join(
                        f"{m.first_reqs}-{m.last_reqs} requests × {m.query_len}: {m.mode_a} → {m.mode_b}"
                        for m in worse
                    )
                    or f"no batch loses coverage against {baseline.label}",
                )
            )
        if policy.max_graph_growth_pct is not None:
            before = sum(len(g) for g in baseline.graphs.values())
            after = sum(counts.values())
            growth = 100.0 * (after - before) / before if before else 0.0
            checks.append(
                Check(
                    "max_graph_growth_pct",
                    growth <= policy.max_graph_growth_pct,
                    f"{before} → {after} graphs ({growth:+.1f}%, limit {policy.max_graph_growth_pct}%)",
                )
            )
    return GateResult(side.label, tuple(checks))
