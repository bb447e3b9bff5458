"""sweep: plan a grid of configs under one or more releases and report it as ranges (pure)."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cgplan.core.compare_sides import decode_gaps, side_from_plan
from cgplan.core.modes import Mode, Platform
from cgplan.core.plan import build_plan
from cgplan.core.policies import UPSTREAM, CapturePolicy
from cgplan.core.spec import PlanInput, SpeculativeSpec
from cgplan.core.types import Plan, Rejected

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
    """Per release, of the range's first point."""
    disagree: bool
    """The releases plan different graphs or dispatch at these points."""


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
    return PointOutcome("gaps", detail, tuple(sorted({m for *_, m in gaps})), graphs)


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
) -> SweepResult:
    """Plan every point of the grid under every release; group the last axis into ranges.

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
            sig = (tuple((o.status, o.kinds) for o in outcomes), disagree)
            if cur is not None and sig == cur_sig:
                cur = dataclasses.replace(cur, last=value, points=cur.points + 1)
            else:
                if cur is not None:
                    ranges.append(cur)
                cur = SweepRange(fixed, last_key, value, value, 1, outcomes, disagree)
                cur_sig = sig
        if cur is not None:
            ranges.append(cur)
    return SweepResult(tuple((k, tuple(v)) for k, v in axes), tuple(versions), total, tuple(ranges))
