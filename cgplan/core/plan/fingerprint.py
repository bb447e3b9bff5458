"""A stable hash of the plan-relevant config, so reports of different configs are not compared by accident."""

from __future__ import annotations

import dataclasses
import json
from enum import Enum
from typing import Any

from cgplan.core.model.spec import PlanInput

# The interpreter's own sha256 (`_sha2` from 3.12, `_sha256` before; the one hashlib falls back
# to): importing hashlib starts OpenSSL, 5 ms of a 100 ms `cgplan plan` (issue 18).
try:
    from _sha2 import sha256 as _sha256  # type: ignore[import-not-found, unused-ignore]
except ImportError:
    try:
        from _sha256 import sha256 as _sha256  # type: ignore[import-not-found, no-redef, unused-ignore]
    except ImportError:
        from hashlib import sha256 as _sha256  # type: ignore[assignment, unused-ignore]

EXCLUDED_FIELDS = frozenset({"vllm_version"})
"""Left out so that one config under two releases keeps its fingerprint (diff compares releases)."""


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.metadata.get("fingerprint", True) is True
            or (f.metadata.get("fingerprint") == "if_set" and getattr(value, f.name) != f.default)
        }
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def fingerprint(inp: PlanInput) -> str:
    """sha256 over the canonical JSON of every field but EXCLUDED_FIELDS (first 16 hex digits)."""
    doc = {k: v for k, v in _plain(inp).items() if k not in EXCLUDED_FIELDS}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    digest: str = _sha256(text.encode()).hexdigest()
    return digest[:16]
