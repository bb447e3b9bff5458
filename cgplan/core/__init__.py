"""The pure planning core: frozen inputs in, frozen plans out; stdlib only, no I/O."""

from __future__ import annotations

from cgplan.core.plan import build_plan
from cgplan.core.spec import ModelShape, PlanInput, SpeculativeSpec
from cgplan.core.types import Plan
from cgplan.core.vllm.releases import LATEST_VERSION, SUPPORTED_VERSIONS, rules_for

__all__ = [
    "LATEST_VERSION",
    "SUPPORTED_VERSIONS",
    "ModelShape",
    "Plan",
    "PlanInput",
    "SpeculativeSpec",
    "build_plan",
    "rules_for",
]
