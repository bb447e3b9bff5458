"""A plan assessed: priced with cost coefficients (`with_cost`), timed with latency coefficients
(`with_latency`, each fix re-planned through `apply_change` to price its gain), and the shipped
cost set a model is priced with (`coefficients_for`). The coefficient files are read by
io/cost_coefficients.py and io/latency_coefficients.py; this is what is done with them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from cgplan.core.errors import ConfigError
from cgplan.core.model.modes import Mode
from cgplan.core.model.predictions import LatencyPrediction
from cgplan.core.model.spec import PlanInput
from cgplan.core.model.types import Plan
from cgplan.core.plan.policies import UPSTREAM, CapturePolicy
from cgplan.core.predict.cost import CostCoefficients, plan_cost
from cgplan.core.predict.latency import LatencyCoefficients, latency_withheld, predict_latency


def coefficients_for(
    inp: PlanInput, dense: CostCoefficients, moe: CostCoefficients | None
) -> CostCoefficients:
    """The shipped set a model is predicted with: the MoE/MLA set for a model with MoE or MLA
    layers when one is shipped, else the dense set (whose domain then withholds the figure)."""
    if moe is not None and (inp.model.is_moe or inp.model.use_mla):
        return moe
    return dense


def with_cost(plan: Plan, inp: PlanInput, coefficients: CostCoefficients | None) -> Plan:
    """`plan` with its predicted cost (unchanged when no coefficients are given)."""
    if coefficients is None:
        return plan
    return dataclasses.replace(plan, cost=plan_cost(plan, inp, coefficients))


def with_latency(
    plan: Plan,
    inp: PlanInput,
    coefficients: LatencyCoefficients | None,
    uniform: Sequence[tuple[int, float]] | None = None,
    mixed: Sequence[tuple[int, float]] = (),
    traffic: str = "uniform",
    policy: CapturePolicy = UPSTREAM,
) -> Plan:
    """`plan` with its predicted step times (unchanged without coefficients); each fix is re-planned
    to price its gain, under the capture policy the plan was made with (a fix found under a
    what-if policy priced under vLLM's own would price another ladder)."""
    if coefficients is None:
        return plan
    withheld = latency_withheld(coefficients, inp)
    if withheld:
        # outside the measured domain on an axis no band covers: no step time, and the fixes keep
        # their coverage order (none is ranked on a figure that is not given)
        return dataclasses.replace(plan, latency_withheld=withheld)
    from cgplan.core.plan.build import plan_again

    def replan(j: int) -> tuple[Plan, PlanInput] | None:
        changed = apply_change(inp, plan.fixes[j].config_change)
        if changed is None:
            return None
        try:
            return plan_again(changed, policy), changed  # the fix search planned it already
        except ConfigError:
            return None

    from cgplan.core.plan.advice import rank_fixes

    pred: LatencyPrediction = predict_latency(coefficients, plan, inp, uniform, mixed, traffic, replan)
    # the fixes ranked by what they buy at this traffic (each priced on its own re-plan above)
    return rank_fixes(dataclasses.replace(plan, latency=pred))


def apply_change(inp: PlanInput, change: Sequence[tuple[str, object]]) -> PlanInput | None:
    """`inp` with a fix's (dotted key, value) pairs applied (None if a key is not a PlanInput field)."""
    names = {f.name for f in dataclasses.fields(PlanInput)}
    kw: dict[str, Any] = {}
    for key, value in change:
        leaf = key.rsplit(".", 1)[-1]
        if leaf == "num_speculative_tokens_per_batch_size" and inp.speculative is not None:
            # the fix search narrows a dynamic-SD tier: a change inside speculative_config
            sched = None if value is None else tuple(tuple(e) for e in value)  # type: ignore[attr-defined]
            kw["speculative"] = dataclasses.replace(
                kw.get("speculative", inp.speculative), num_speculative_tokens_per_batch_size=sched
            )
            continue
        if leaf not in names:
            return None
        if leaf == "cudagraph_mode":
            kw[leaf] = None if value is None else Mode(str(value))
            continue
        kw[leaf] = tuple(value) if isinstance(value, list) else value
    return dataclasses.replace(inp, **kw)
