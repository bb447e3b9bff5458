"""sweep: plan a grid of configs under one or more releases and report it as ranges (pure)."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cgplan.core.compare.sides import decode_gaps, side_from_plan
from cgplan.core.model.modes import Mode, Platform
from cgplan.core.model.spec import PlanInput, SpeculativeSpec
from cgplan.core.model.types import Plan, Rejected
from cgplan.core.plan.build import build_plan
from cgplan.core.plan.policies import UPSTREAM, CapturePolicy

MAX_SWEEP_POINTS = 200_000
"""Refused above this many (point × release) plans: a bound on time and memory."""


def _spec_k(inp: PlanInput, k: int) -> PlanInput:
    if k == 0:
        return dataclasses.replace(inp, speculative=None)
    base = inp.speculative or SpeculativeSpec("eagle", k)
    return dataclasses.replace(inp, speculative=dataclasses.replace(base, num_speculative_tokens=k))


SETTERS: dict[str, Callable[[PlanInput, Any], PlanInput]] = {
    "max_num_seqs": lambda i, v: dataclasses.replace(i, max_num_seqs=int(v)),
    "max_num_batched_tokens": lambda i, v: dataclasses.replace(i, max_num_batched_tokens=int(v)),
    "max_model_len": lambda i, v: dataclasses.replace(i, max_model_len=int(v)),
    "tensor_parallel_size": lambda i, v: dataclasses.replace(i, tensor_parallel_size=int(v)),
    "optimization_level": lambda i, v: dataclasses.replace(i, optimization_level=int(v)),
    "performance_mode": lambda i, v: dataclasses.replace(i, performance_mode=None if v == "none" else str(v)),
    "speculative_config.num_speculative_tokens": lambda i, v: _spec_k(i, int(v)),
    "compilation_config.max_cudagraph_capture_size": lambda i, v: dataclasses.replace(
        i, max_cudagraph_capture_size=None if v in (0, "none") else int(v)
    ),
    "compilation_config.cudagraph_mode": lambda i, v: dataclasses.replace(
        i, cudagraph_mode=Mode(str(v).upper())
    ),
    "cgplan.platform": lambda i, v: dataclasses.replace(i, platform=Platform(str(v))),
    "cgplan.model_runner": lambda i, v: dataclasses.replace(i, model_runner=str(v)),
}
"""Sweepable keys (the config's dotted names) and how each changes the planner input."""

INT_KEYS = {
    k
    for k in SETTERS
    if k
    not in ("performance_mode", "compilation_config.cudagraph_mode", "cgplan.platform", "cgplan.model_runner")
}


@dataclass(frozen=True)
class PointOutcome:
    """One point under one release, reduced to what a sweep reports."""

    status: str
    """ok, gaps or rejected."""
    detail: str
    """Gap runs or the rejection reason."""
    kinds: tuple[str, ...]
    """Sorted gap modes (NONE, PIECEWISE): the part of the signature that groups ranges."""
    graphs: int
    gap_batches: int = 0
    """(tier, request count) pairs in a gap: how bad the point is (the worst one is shown)."""


@dataclass(frozen=True)
class SweepRange:
    """Consecutive values of the last axis (the other axes fixed) with the same outcome."""

    fixed: tuple[tuple[str, Any], ...]
    """The other axes' values."""
    axis: str
    first: Any
    last: Any
    points: int
    outcomes: tuple[PointOutcome, ...]
    """Per release, the range's worst point (most gap batches; the first such point)."""
    disagree: bool
    """The releases plan different graphs or dispatch at these points."""
    worst_at: tuple[Any, ...] = ()
    """Per release, the axis value of that worst point."""
    detail_varies: tuple[bool, ...] = ()
    """Per release, whether the points of the range differ in detail (then `outcomes` is the worst)."""
    values: tuple[Any, ...] = ()
    """Every axis value in the range (a categorical axis is listed, not written first..last)."""


@dataclass(frozen=True)
class SweepResult:
    """A whole sweep."""

    axes: tuple[tuple[str, tuple[Any, ...]], ...]
    versions: tuple[str, ...]
    plans: int
    ranges: tuple[SweepRange, ...]


def _outcome(plan: Plan | None, reason: str | None) -> PointOutcome:
    if plan is None:
        return PointOutcome("rejected", reason or "", (), 0)
    gaps = decode_gaps(side_from_plan(plan, ""))
    graphs = sum(len(g) for g in plan.graphs.values())
    if not gaps:
        return PointOutcome("ok", "", (), graphs)
    detail = ", ".join(
        f"{a}-{b}×{ql} {'eager' if m == 'NONE' else m}"
        if a != b
        else f"{a}×{ql} {'eager' if m == 'NONE' else m}"
        for ql, a, b, m in gaps[:4]
    ) + (" …" if len(gaps) > 4 else "")
    batches = sum(b - a + 1 for _, a, b, _ in gaps)
    return PointOutcome("gaps", detail, tuple(sorted({m for *_, m in gaps})), graphs, batches)


def _plan(inp: PlanInput, policy: CapturePolicy) -> tuple[Plan | None, str | None]:
    try:
        return build_plan(inp, with_fixes=False, with_mixed=False, policy=policy), None
    except Rejected as e:
        return None, e.problem


def sweep(
    base: PlanInput,
    axes: Sequence[tuple[str, Sequence[Any]]],
    versions: Sequence[str],
    policy: CapturePolicy = UPSTREAM,
    progress: Callable[[int, int], None] | None = None,
) -> SweepResult:
    """Plan every point of the grid under every release; group the last axis into ranges.

    Points merge into a range while their status and gap kinds agree; where their detail differs,
    the range shows its worst point (most gap batches) and says where it is. `progress(done, total)`
    is called after every point (a progress bar for long sweeps).

    Raises:
        ValueError: too many points (MAX_SWEEP_POINTS) or an unknown key.
    """
    for key, _ in axes:
        if key not in SETTERS:
            raise ValueError(f"cannot sweep {key!r} (sweepable: {', '.join(SETTERS)})")
    total = len(versions)
    for _, values in axes:
        total *= len(values)
    if total > MAX_SWEEP_POINTS:
        raise ValueError(f"{total:,} plans requested; at most {MAX_SWEEP_POINTS:,} per sweep")
    *outer, (last_key, last_values) = axes
    ranges: list[SweepRange] = []
    done = 0
    for fixed_values in itertools.product(*(v for _, v in outer)):
        fixed = tuple(zip((k for k, _ in outer), fixed_values, strict=True))
        cur: SweepRange | None = None
        cur_sig: Any = None
        for value in last_values:
            inp = base
            for k, v in (*fixed, (last_key, value)):
                inp = SETTERS[k](inp, v)
            plans = [_plan(dataclasses.replace(inp, vllm_version=ver), policy) for ver in versions]
            outcomes = tuple(_outcome(p, r) for p, r in plans)
            disagree = len(versions) > 1 and any(
                (a[0] is None) != (b[0] is None)
                or (
                    a[0] is not None
                    and b[0] is not None
                    and (a[0].graphs != b[0].graphs or a[0].uniform_decode != b[0].uniform_decode)
                )
                for a, b in itertools.pairwise(plans)
            )
            done += len(versions)
            if progress is not None:
                progress(done, total)
            sig = (tuple((o.status, o.kinds) for o in outcomes), disagree)
            if cur is not None and sig == cur_sig:
                worst = []
                at = []
                varies = []
                for i, o in enumerate(outcomes):
                    old = cur.outcomes[i]
                    varies.append(cur.detail_varies[i] or o.detail != old.detail)
                    if o.gap_batches > old.gap_batches:
                        worst.append(o)
                        at.append(value)
                    else:
                        worst.append(old)
                        at.append(cur.worst_at[i])
                cur = dataclasses.replace(
                    cur,
                    last=value,
                    points=cur.points + 1,
                    outcomes=tuple(worst),
                    worst_at=tuple(at),
                    detail_varies=tuple(varies),
                    values=(*cur.values, value),
                )
            else:
                if cur is not None:
                    ranges.append(cur)
                cur = SweepRange(
                    fixed,
                    last_key,
                    value,
                    value,
                    1,
                    outcomes,
                    disagree,
                    worst_at=tuple(value for _ in outcomes),
                    detail_varies=tuple(False for _ in outcomes),
                    values=(value,),
                )
                cur_sig = sig
        if cur is not None:
            ranges.append(cur)
    return SweepResult(tuple((k, tuple(v)) for k, v in axes), tuple(versions), total, tuple(ranges))
