"""Optimize results as JSON (`cgplan optimize --json`): the default and the chosen ladder."""

from __future__ import annotations

from typing import Any

from cgplan.core.optimize.search import Optimized
from cgplan.core.optimize.traffic_cost import TrafficCost
from cgplan.core.plan.gaps import graph_count
from cgplan.io.schema import SCHEMA_VERSION


def _cost(c: TrafficCost) -> dict[str, Any]:
    return {
        "steps": c.steps,
        "padded_tokens": round(c.padded_tokens, 3),
        "padding_ratio": round(c.padded_tokens / c.real_tokens, 6) if c.real_tokens else None,
        "eager_steps": c.eager_steps,
        "eager_share": round(c.eager_steps / c.steps, 6) if c.steps else None,
    }


def optimize_to_dict(o: Optimized) -> dict[str, Any]:
    """The comparison as JSON."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "optimize",
        "vllm_version": o.plan.vllm_version,
        "traffic": o.traffic.source,
        "flags": list(o.flags),
        "improved": o.improved,
        "passes_gate": not o.gave_up,
        "capture_sizes": list(o.sizes),
        "eager_step_cost": o.eager_step_cost,
        "default": {
            "capture_sizes": len(o.default_plan.capture_sizes),
            "graphs": graph_count(o.default_plan),
            **_cost(o.default_cost),
        },
        "optimized": {"capture_sizes": len(o.sizes), "graphs": graph_count(o.plan), **_cost(o.cost)},
        "objective": o.objective,
        "expected_step_ms": {"default": round(o.default_step_ms, 4), "optimized": round(o.step_ms, 4)},
        "predicted_memory_mib": {
            "default": None if o.default_memory_mib is None else round(o.default_memory_mib, 1),
            "optimized": None if o.memory_mib is None else round(o.memory_mib, 1),
            "budget": None if o.memory_budget_mib is None else round(o.memory_budget_mib, 1),
        },
        "predicted_capture_s": {"default": o.default_capture_s, "optimized": o.capture_s},
        "gate": {"policy": "default", "relaxed": list(o.relaxed), "gave_up": list(o.gave_up)},
        "caveats": list(o.caveats),
    }
