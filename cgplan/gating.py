"""The library entry point behind `cgplan gate` and scripts/cgplan-gate."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from cgplan.config import Overrides
from cgplan.core.gate import DEFAULT_POLICY, GatePolicy, GateResult, evaluate_gate
from cgplan.policy import load_policy
from cgplan.sides import load_side


def gate_targets(
    targets: list[Path],
    policy_path: Path | None,
    baseline: Path | None,
    vllm_version: str | None,
    model_config: Path | None = None,
) -> tuple[list[GateResult], GatePolicy]:
    """Evaluate every target (config or report) against the policy (and the baseline);
    `model_config` is the shape for configs whose `model:` is a hub id."""
    policy = load_policy(policy_path) if policy_path is not None else DEFAULT_POLICY
    overrides = Overrides(vllm_version=vllm_version, model_config=model_config)
    base = load_side(baseline, overrides) if baseline is not None else None
    results = [evaluate_gate(policy, load_side(t, overrides), base) for t in targets]
    return results, policy


def policy_to_dict(policy: GatePolicy) -> dict[str, Any]:
    """The policy as JSON."""
    return dataclasses.asdict(policy)
