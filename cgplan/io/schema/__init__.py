"""The JSON contract: typed results ↔ JSON documents, one schema version for every kind.

Every document cgplan writes (`--json` of each command, report files, the aggregate of a fleet
capture, coefficient files) carries `schema_version: SCHEMA_VERSION` and a `kind`. The
serialisers live here, one module per result (`plan`, `capture`, `compare` for diff/sweep/gate,
`logs`, `optimize`, `calibrate`), each written once; what two of them share (dispatch ranges,
graph keys) is below. Light on purpose: `--json` paths import this and their own module only.
"""

from __future__ import annotations

import json
from typing import Any

from cgplan.core.model.types import DispatchRange, Graph

SCHEMA_VERSION = 1
"""Bumped on any incompatible change of a document below; fields may be added freely. The one
version of every kind (plan, capture, diff, sweep, gate, logs, optimize, calibrate, fleet,
coefficients): readers check it against this."""


def range_to_dict(r: DispatchRange, unit: str) -> dict[str, Any]:
    """One dispatch range (`unit` is `reqs` for uniform decode, `tokens` for mixed batches)."""
    return {
        f"from_{unit}": r.first,
        f"to_{unit}": r.last,
        "mode": r.mode,
        "padded_tokens": r.padded_tokens,
        "padded_reqs": r.padded_reqs,
    }


def graph_key_to_dict(g: Graph) -> dict[str, Any]:
    """A graph as diff and plan-vs-measured comparisons name it (its dispatch key)."""
    out: dict[str, Any] = {
        "mode": g.mode,
        "num_tokens": g.num_tokens,
        "num_reqs": g.num_reqs,
        "query_len": g.query_len,
    }
    if g.num_active_loras:  # part of the key with LoRA only (graphs without adapters keep their shape)
        out["num_active_loras"] = g.num_active_loras
    return out


def dumps(doc: dict[str, Any]) -> str:
    """Stable JSON text: sorted keys, two-space indent, trailing newline, UTF-8 as is (the plan's
    document: `cgplan plan --json`)."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def dumps_ascii(doc: dict[str, Any]) -> str:
    """The same, with non-ASCII characters escaped: every other document (diff, sweep, gate,
    logs, capture and its reports, fleet, optimize, calibrate, env) has always been written so,
    and keeps its bytes; a value JSON has no type for (a Path) is written as its text."""
    return json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n"
