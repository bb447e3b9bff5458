"""Gate verdicts as JSON (`cgplan gate --json`), with the policy they were judged by."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from cgplan.core.compare.gate import GatePolicy, GateResult
from cgplan.io.schema import SCHEMA_VERSION


def gate_to_dict(results: list[GateResult], policy: dict[str, Any]) -> dict[str, Any]:
    """The verdict as JSON."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "gate",
        "passed": all(r.passed for r in results),
        "policy": policy,
        "targets": [
            {"target": r.target, "passed": r.passed, "checks": [asdict(c) for c in r.checks]} for r in results
        ],
    }


def policy_to_dict(policy: GatePolicy) -> dict[str, Any]:
    """The policy as JSON."""
    return asdict(policy)
