"""What the fixes buy: the plan's fixes ranked by predicted step time where that figure holds, and
each gap's share of the expected step with a verdict on closing it (pure).

The fix search (`gaps.propose_fixes`) ranks by what it can see without a latency model: coverage,
then per-step padding, then memory. Once the latency model has priced every fix at the traffic
(`cgplan.core.predict.latency.predict_latency`), `rank_fixes` re-ranks them:

- where every step of the traffic lies in the model's measured domain, a fix the model predicts
  slower than leaving its gaps is not offered at all (it is named, with its figures, in
  `not_offered`), whatever else it has for it;
- where every step of the traffic lies in the model's measured domain, the rest are ranked by
  the expected step time (fixes within the model's held-out median error of the fastest count as
  equally fast), then by predicted memory;
- elsewhere (the step times are extrapolations) the search's order stands, coverage and padding,
  then memory, every fix is offered, and the plan says so: an extrapolated "slower" is no reason
  to withhold a fix (issue 29: the one padded size to 1,024 that the H200 set, fitted to 256
  requests, priced 13% slower than the compiled gap beat it at 520 requests on the GPU,
  benchmarks/results/h200/latency-large).
"""

from __future__ import annotations

from dataclasses import replace

from cgplan.core.model.predictions import FixLatency, GapLatency, LatencyPrediction, SlowerFix
from cgplan.core.model.types import Fix, Plan

WORTH_CLOSING_SHARE = 0.01
"""A gap whose cost is below this share of the expected step is not worth closing: under 1% of
the step, at the traffic, is under the latency model's own resolution (its held-out median error
per step is 2.9%, docs/latency-model.md) and under what the graphs that close it take from the
KV cache in any but the smallest deployments."""

SLOWER_MS = 1e-6
"""A fix is slower than its gaps when the expected step grows by more than this (rounding)."""


def short_reason(reason: str) -> str:
    """A caveat without its parenthesised detail, to quote inside parentheses.

    >>> short_reason("steps above 256 requests were not measured (max_num_seqs here: 1024)")
    'steps above 256 requests were not measured'
    """
    return reason.split(" (", 1)[0]


def _time_key(fix: Fix, timing: FixLatency | None, fastest: float, tolerance: float) -> tuple[float, float]:
    """(step time, memory): a step within `tolerance` of the fastest counts as the fastest."""
    if timing is None:  # not priced (its re-plan failed): after every priced fix
        return (float("inf"), fix.pool_after_mib or 0.0)
    step = timing.expected_step_ms_after
    return (fastest if step <= fastest + tolerance else step, fix.pool_after_mib or 0.0)


def _verdict(
    lat: LatencyPrediction, gap: GapLatency, offered: list[Fix], dropped: list[Fix], index: int
) -> tuple[bool | None, str]:
    share = gap.share
    what = f"{share:.1%} of the expected {lat.expected_step_ms:.2f} ms step"
    how = f" (extrapolated: {short_reason(lat.extrapolated[0])})" if lat.extrapolated else ""
    if share < WORTH_CLOSING_SHARE:
        return False, f"not worth closing: it costs {what}, under {WORTH_CLOSING_SHARE:.0%}{how}"
    if not any(index in f.closes for f in offered) and any(index in f.closes for f in dropped):
        return False, f"not worth closing: it costs {what}, but every fix found is predicted slower{how}"
    return True, f"worth closing: it costs {what}{how}"


def rank_fixes(plan: Plan) -> Plan:
    """`plan` with its fixes ranked by what they buy at the traffic (see the module docstring),
    its latency prediction's fix indexes following them, and each gap's share and verdict."""
    lat = plan.latency
    if lat is None:
        return plan
    base = lat.expected_step_ms
    timing = {f.fix: f for f in lat.fixes}
    kept: list[int] = []
    slower: list[int] = []
    for i in range(len(plan.fixes)):
        t = timing.get(i)
        is_slower = t is not None and t.expected_step_ms_after > base + SLOWER_MS
        (slower if is_slower and not lat.extrapolated else kept).append(i)
    if lat.extrapolated:
        order = kept  # the search's order: coverage and padding, then memory
        how = (
            "fixes ranked by coverage and per-step padding, then predicted memory: the step-time "
            f"figures are extrapolated here ({short_reason(lat.extrapolated[0])})"
        )
    else:
        priced = [timing[i].expected_step_ms_after for i in kept if i in timing]
        fastest = min(priced, default=0.0)
        tolerance = lat.model_error * base
        order = sorted(kept, key=lambda i: (*_time_key(plan.fixes[i], timing.get(i), fastest, tolerance), i))
        how = (
            "fixes ranked by the expected step time at the traffic (within the model's "
            f"{lat.model_error:.1%} median error of the fastest: as fast), then predicted memory"
        )
    if slower:
        how += f"; {len(slower)} fix(es) predicted slower than leaving the gaps are not offered"
    new_index = {old: new for new, old in enumerate(order)}
    fixes = tuple(plan.fixes[i] for i in order)
    timed = tuple(
        sorted(
            (replace(t, fix=new_index[t.fix]) for t in lat.fixes if t.fix in new_index),
            key=lambda t: t.fix,
        )
    )
    not_offered = tuple(
        SlowerFix(plan.fixes[i].flags, timing[i].expected_step_ms_after, timing[i].gain_ms_per_step)
        for i in slower
    )
    dropped = [plan.fixes[i] for i in slower]
    gaps = []
    for g in lat.gaps:
        share = g.expected_cost_ms_per_step / base if base > 0 else 0.0
        g = replace(g, share=share)
        worth, words = _verdict(lat, g, list(fixes), dropped, g.gap)
        gaps.append(replace(g, worth_closing=worth, verdict=words))
    lat = replace(lat, fixes=timed, gaps=tuple(gaps), fix_order=how, not_offered=not_offered)
    return replace(plan, fixes=fixes, latency=lat)
