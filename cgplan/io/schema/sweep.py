"""Sweep results as JSON (`cgplan sweep --json`): ranges, not points."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from cgplan.core.compare.sweep import INT_KEYS, SweepResult
from cgplan.io.schema import SCHEMA_VERSION


def sweep_to_dict(r: SweepResult) -> dict[str, Any]:
    """The sweep as JSON (ranges, not points)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "sweep",
        "axes": [
            {"key": k, "values": len(v), "first": v[0] if v else None, "last": v[-1] if v else None}
            for k, v in r.axes
        ],
        "versions": list(r.versions),
        "plans": r.plans,
        "ranges": [
            {
                "fixed": dict(x.fixed),
                "axis": x.axis,
                "first": x.first,
                "last": x.last,
                "points": x.points,
                "values": list(x.values) if x.axis not in INT_KEYS else None,
                "versions_disagree": x.disagree,
                "worst_at": dict(zip(r.versions, x.worst_at, strict=False)),
                "detail_varies": dict(zip(r.versions, x.detail_varies, strict=False)),
                "outcomes": {v: asdict(o) for v, o in zip(r.versions, x.outcomes, strict=True)},
            }
            for x in r.ranges
        ],
    }
