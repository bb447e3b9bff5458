"""Expected cost of a plan on a traffic histogram, through the plan's real dispatch tables (pure)."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from cgplan.core.model.types import DispatchRange, Plan


@dataclass(frozen=True)
class TrafficCost:
    """Padding and eager share of a plan on a histogram."""

    steps: float
    padded_tokens: float
    real_tokens: float
    eager_steps: float
    eager_tokens: float

    def total(self, eager_step_cost: float) -> float:
        """Padded tokens plus eager steps weighted as token-equivalents."""
        return self.padded_tokens + eager_step_cost * self.eager_steps


def query_len_for(plan: Plan, num_reqs: int) -> int:
    """The decode query length a batch of `num_reqs` runs at (dynamic SD aware)."""
    if plan.dynamic_sd_lookup is None:
        return plan.uniform_decode_query_len
    for a, b, k in plan.dynamic_sd_lookup:
        if a <= num_reqs <= b:
            return k + 1
    return plan.uniform_decode_query_len


def _lookup(ranges: tuple[DispatchRange, ...], n: int) -> DispatchRange | None:
    firsts = [r.first for r in ranges]
    i = bisect.bisect_right(firsts, n) - 1
    if i >= 0 and ranges[i].first <= n <= ranges[i].last:
        return ranges[i]
    return None


def traffic_cost(
    plan: Plan, uniform_decode: Sequence[tuple[int, float]], mixed: Sequence[tuple[int, float]]
) -> TrafficCost:
    """Expected padded and eager tokens of `plan` on the histogram (per its dispatch tables)."""
    steps = padded = real = eager_steps = eager_tokens = 0.0
    for n, w in uniform_decode:
        ql = query_len_for(plan, n)
        t = n * ql
        steps += w
        real += w * t
        r = _lookup(plan.uniform_decode.get(ql, ()), n)
        if r is None or r.mode == "NONE" or r.padded_tokens is None:
            eager_steps += w
            eager_tokens += w * t
        else:
            padded += w * (r.padded_tokens - t)
    for t, w in mixed:
        steps += w
        real += w * t
        r = _lookup(plan.mixed, t)
        if r is None or r.mode == "NONE" or r.padded_tokens is None:
            eager_steps += w
            eager_tokens += w * t
        else:
            padded += w * (r.padded_tokens - t)
    return TrafficCost(steps, padded, real, eager_steps, eager_tokens)
