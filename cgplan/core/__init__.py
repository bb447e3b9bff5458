"""The pure planning core: frozen inputs in, frozen plans out; stdlib only, no I/O.

Floors, each importing only its own and lower ones (tests/project/test_layers.py holds it):
`errors` < `model` < `vllm` < `predict` < `plan` < `compare` | `logs` < `optimize`.
Nothing is imported here until it is asked for (`cgplan.core.build_plan`), so importing one floor
loads only what that floor needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cgplan.core.model.spec import ModelShape, PlanInput, SpeculativeSpec
    from cgplan.core.model.types import Plan
    from cgplan.core.plan.build import build_plan
    from cgplan.core.vllm.releases import LATEST_VERSION, SUPPORTED_VERSIONS, rules_for


def __getattr__(name: str) -> Any:
    # Explicit imports rather than importlib (the core touches no import machinery: the purity test).
    if name in ("LATEST_VERSION", "SUPPORTED_VERSIONS", "rules_for"):
        from cgplan.core.vllm import releases

        return getattr(releases, name)
    if name in ("ModelShape", "PlanInput", "SpeculativeSpec"):
        from cgplan.core.model import spec

        return getattr(spec, name)
    if name == "Plan":
        from cgplan.core.model.types import Plan

        return Plan
    if name == "build_plan":
        from cgplan.core.plan.build import build_plan

        return build_plan
    raise AttributeError(f"module 'cgplan.core' has no attribute {name!r}")


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
