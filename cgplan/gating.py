"""The library entry point behind `cgplan gate` and scripts/cgplan-gate."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from cgplan.config import Overrides
from cgplan.core.gate import DEFAULT_POLICY, GatePolicy, GateResult, evaluate_gate
from cgplan.errors import ReportError
from cgplan.policy import load_policy
from cgplan.sides import load_side


def gate_targets(
    targets: list[Path],
    policy_path: Path | None,
    baseline: Path | None,
    vllm_version: str | None,
    *,
    allow_partial_baseline: bool = False,
) -> tuple[list[GateResult], GatePolicy]:
    """Evaluate every target (config or report) against the policy (and the baseline).

    Raises:
        ReportError: the baseline is a partial or failed capture (unless allowed): what it
            lacks would make every regression check against it hold for nothing.
    """
    policy = load_policy(policy_path) if policy_path is not None else DEFAULT_POLICY
    overrides = Overrides(vllm_version=vllm_version)
    compared = baseline is not None  # then every report must say which config it describes
    base = load_side(baseline, overrides, require_fingerprint=True) if baseline is not None else None
    if base is not None and base.status != "complete" and not allow_partial_baseline:
        why = f" ({base.failure})" if base.failure else ""
        raise ReportError(
            f"{baseline}:status: the baseline is a {base.status} capture{why}; give a complete "
            "one, or --allow-partial-baseline to compare against what it has"
        )
    results = [
        evaluate_gate(policy, load_side(t, overrides, require_fingerprint=compared), base) for t in targets
    ]
    return results, policy


def policy_to_dict(policy: GatePolicy) -> dict[str, Any]:
    """The policy as JSON."""
    return dataclasses.asdict(policy)
