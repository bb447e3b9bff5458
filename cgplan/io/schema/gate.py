"""Gate verdicts as JSON (`cgplan gate --json`), with the policy they were judged by."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from cgplan.core.compare.gate import GatePolicy, GateResult
from cgplan.io.schema import SCHEMA_VERSION


def _fix(r: GateResult) -> dict[str, Any] | None:
    """The target's fix as data (flags, argv, YAML lines, config change, deltas), None without one."""
    if r.fix is None:
        return None
    from cgplan.io.schema.plan import fix_to_dict

    out = fix_to_dict(r.fix)
    t = r.fix_timing
    out["expected_step_ms_after"] = None if t is None else round(t.expected_step_ms_after, 4)
    out["delta_expected_step_ms"] = None if t is None else round(-t.gain_ms_per_step, 5)
    out["eager_share_after"] = None if t is None else round(t.eager_share_after, 4)
    return out


def gate_to_dict(results: list[GateResult], policy: dict[str, Any]) -> dict[str, Any]:
    """The verdict as JSON."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "gate",
        "passed": all(r.passed for r in results),
        "policy": policy,
        "targets": [
            {
                "target": r.target,
                "passed": r.passed,
                "checks": [asdict(c) for c in r.checks],
                "fix": _fix(r),
            }
            for r in results
        ],
    }


def policy_to_dict(policy: GatePolicy) -> dict[str, Any]:
    """The policy as JSON."""
    return asdict(policy)
