"""The JSON contract: typed results ↔ JSON documents, one schema version for every kind.

Every document cgplan writes (`--json` of each command, report files, the aggregate of a fleet
capture, coefficient files) carries `schema_version: SCHEMA_VERSION` and a `kind`. The
serialisers live here, one module per result (`plan`, `capture`, `compare` for diff/sweep/gate,
`logs`, `optimize`, `calibrate`), each written once; what two of them share (dispatch ranges,
graph keys) is below. Light on purpose: `--json` paths import this and their own module only.
"""

from __future__ import annotations

from collections.abc import Callable
from json.encoder import encode_basestring, encode_basestring_ascii
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


def _float_text(o: float) -> str:
    # json.encoder's floatstr (allow_nan): NaN and the infinities by name, else float's repr
    if o != o:
        return "NaN"
    if o == float("inf"):
        return "Infinity"
    if o == float("-inf"):
        return "-Infinity"
    return float.__repr__(o)


class _Indented:
    """`json.dumps(doc, indent=2, sort_keys=True, ...)`'s text, made by joining strings: with an
    indent the standard library encodes in Python through nested generators (a chunk passes
    every level it is inside), a few times slower than this for a plan's document (#18);
    tests/render/test_render.py holds the two equal over generated documents and every golden file."""

    def __init__(self, ensure_ascii: bool, default: Callable[[Any], Any] | None) -> None:
        self.string = encode_basestring_ascii if ensure_ascii else encode_basestring
        self.default = default
        self.keys: dict[str, str] = {}  # encoded str keys: documents repeat a few names
        # by a dict's keys (as inserted, all str): its keys sorted, each encoded with ": " (a
        # document repeats a few shapes of dict: ranges, graphs, fixes)
        self.layouts: dict[tuple[str, ...], tuple[tuple[str, str], ...]] = {}

    def key(self, k: object) -> str:
        if type(k) is str:
            got = self.keys.get(k)
            if got is None:
                if len(self.keys) >= 4096:
                    self.keys.clear()
                got = self.keys[k] = self.string(k)
            return got
        if isinstance(k, str):
            return self.string(k)
        if isinstance(k, float):
            return self.string(_float_text(k))
        if k is True:
            return '"true"'
        if k is False:
            return '"false"'
        if k is None:
            return '"null"'
        if isinstance(k, int):
            return self.string(int.__repr__(k))
        raise TypeError(f"keys must be str, int, float, bool or None, not {k.__class__.__name__}")

    def layout(self, keys: tuple[str, ...]) -> tuple[tuple[str, str], ...] | None:
        """`keys` sorted, each with its encoded text and ": " (None unless every key is a str)."""
        got = self.layouts.get(keys)
        if got is None:
            if any(type(k) is not str for k in keys):
                return None
            if len(self.layouts) >= 4096:
                self.layouts.clear()
            got = self.layouts[keys] = tuple((k, self.key(k) + ": ") for k in sorted(keys))
        return got

    def value(self, o: Any, indent: str) -> str:
        t = type(o)  # the common exact types first (the same text as the checks below give them)
        if t is int:
            return int.__repr__(o)
        if t is str:
            return self.string(o)
        if t is dict and o:
            shape = self.layout(tuple(o))
            if shape is not None:
                inner = indent + "  "
                value, string = self.value, self.string
                parts = []
                for k, head in shape:
                    v = o[k]
                    t = type(v)  # the common exact types here: most values are scalars of small dicts
                    if t is int:
                        parts.append(head + int.__repr__(v))
                    elif t is str:
                        parts.append(head + string(v))
                    elif v is None:
                        parts.append(head + "null")
                    else:
                        parts.append(head + value(v, inner))
                return "{" + inner + ("," + inner).join(parts) + indent + "}"
        if t is list and o:
            inner = indent + "  "
            value = self.value
            return "[" + inner + ("," + inner).join([value(v, inner) for v in o]) + indent + "]"
        if isinstance(o, str):
            return self.string(o)
        if o is None:
            return "null"
        if o is True:
            return "true"
        if o is False:
            return "false"
        if isinstance(o, int):
            return int.__repr__(o)
        if isinstance(o, float):
            return _float_text(o)
        inner = indent + "  "
        if isinstance(o, list | tuple):
            if not o:
                return "[]"
            value = self.value
            return "[" + inner + ("," + inner).join([value(v, inner) for v in o]) + indent + "]"
        if isinstance(o, dict):
            if not o:
                return "{}"
            key, value, string = self.key, self.value, self.string
            parts = []
            for k, v in sorted(o.items()):
                t = type(v)  # the common exact types here: most values are scalars of small dicts
                if t is int:
                    text = int.__repr__(v)
                elif t is str:
                    text = string(v)
                elif v is None:
                    text = "null"
                else:
                    text = value(v, inner)
                parts.append(key(k) + ": " + text)
            return "{" + inner + ("," + inner).join(parts) + indent + "}"
        if self.default is None:
            raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")
        return self.value(self.default(o), indent)


_UTF8 = _Indented(ensure_ascii=False, default=None)
_ASCII = _Indented(ensure_ascii=True, default=str)


def dumps(doc: dict[str, Any]) -> str:
    """Stable JSON text: sorted keys, two-space indent, trailing newline, UTF-8 as is (the plan's
    document: `cgplan plan --json`); `json.dumps(doc, indent=2, sort_keys=True,
    ensure_ascii=False)` to the byte."""
    return _UTF8.value(doc, "\n") + "\n"


def dumps_ascii(doc: dict[str, Any]) -> str:
    """The same, with non-ASCII characters escaped: every other document (diff, sweep, gate,
    logs, capture and its reports, fleet, optimize, calibrate, env) has always been written so,
    and keeps its bytes; a value JSON has no type for (a Path) is written as its text
    (`json.dumps(doc, indent=2, sort_keys=True, default=str)` to the byte)."""
    return _ASCII.value(doc, "\n") + "\n"
