"""Report documents: JSON <-> the types of cgplan/core/model/reports.py, both ways.

`to_json` writes a report type as the JSON object it mirrors (the keys its `absent` names left
out), and the `*_from_json` readers build one from a parsed document. A reader checks every
value against its field's type, and, where a report is read back from a file (`check=True`),
what cgplan relies on before it walks the report: counts and token numbers as the config bounds
them, sorted non-overlapping ranges (walking a tier costs at most max_num_seqs steps), names
that are plain words (they reach terminal tables). A bad value is one located line,
`FILE:key.path: problem (got X)`. A document cgplan builds itself is converted unchecked.

Reading never executes anything: the document is parsed JSON, its fields are checked; nothing
is imported, evaluated or unpickled.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard, TypeVar

from cgplan.core.compare.sides import STATUSES
from cgplan.core.model.reports import (
    CaptureReport,
    DynamicSd,
    FleetReport,
    GraphShape,
    MeasuredDocument,
    MeasuredGraph,
    MeasuredRank,
    PlanDocument,
    ReqRange,
)
from cgplan.errors import ReportError, preview
from cgplan.io.config import MAX_LIST, MAX_REASONABLE

T = TypeVar("T")
Parse = Callable[[Any, str], Any]
MAX_ENTRIES = MAX_LIST * 10
"""The longest list a report may hold (a capture of every graph of a large engine has a few
thousand descriptors)."""


def to_json(value: object) -> Any:
    """A report type (or any part of one) as its JSON value: objects as dicts, tuples as lists,
    mapping keys as strings; the fields an object's `absent` names are left out."""
    plan = _FIELDS.get(type(value))
    if plan is None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        plan = _fields(type(value))
    if plan is not None:
        absent = getattr(value, "absent", ())
        return {f.key: to_json(getattr(value, f.name)) for f in plan if f.name not in absent}
    if isinstance(value, tuple | list):
        return [to_json(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


def plan_from_json(doc: object, label: str, *, check: bool = True) -> PlanDocument:
    """A plan document (`plan --json`).

    Raises:
        ReportError: a value of the wrong type, missing or out of bounds, at its key path.
    """
    plan = _parse(PlanDocument, doc, f"{label}:", check)
    if check:
        _unsigned_graphs(plan, f"{label}:graphs")
    return plan


def capture_from_json(doc: object, label: str, *, check: bool = True) -> CaptureReport:
    """A capture report (`cgplan capture`).

    Raises:
        ReportError: a value of the wrong type, missing or out of bounds, at its key path.
    """
    return _parse(CaptureReport, doc, f"{label}:", check)


def fleet_from_json(doc: object, label: str) -> FleetReport:
    """The aggregate of a multi-config capture (`fleet.json`).

    Raises:
        ReportError: a value of the wrong type or missing, at its key path.
    """
    return _parse(FleetReport, doc, f"{label}:", True)


# --------------------------------------------------------------------------- the generic reader

_MISSING: Any = object()


def _join(at: str, key: str) -> str:
    return at + key if at.endswith(":") else f"{at}.{key}"


def _bad(at: str, expected: str, value: object) -> ReportError:
    return ReportError(f"{at}: expected {expected} (got {preview(value)})")


def _is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _p_int(v: Any, at: str) -> int:
    if not _is_int(v):
        raise _bad(at, "an integer", v)
    return v


def _p_float(v: Any, at: str) -> float:
    if not isinstance(v, int | float) or isinstance(v, bool):
        raise _bad(at, "a number", v)
    return v  # an int stays an int: it is written back as it was read


def _p_str(v: Any, at: str) -> str:
    if not isinstance(v, str):
        raise _bad(at, "a string", v)
    return v


def _p_bool(v: Any, at: str) -> bool:
    if not isinstance(v, bool):
        raise _bad(at, "true or false", v)
    return v


def _p_none(v: Any, at: str) -> None:
    if v is not None:
        raise _bad(at, "null", v)


def _p_json(v: Any, at: str) -> object:
    """Any JSON value, lists frozen as tuples."""
    if isinstance(v, list):
        return tuple(_p_json(x, f"{at}[{i}]") for i, x in enumerate(v))
    if isinstance(v, dict):
        return {k: _p_json(x, _join(at, k)) for k, x in v.items()}
    return v


def _entries(v: Any, at: str, what: str) -> list[Any]:
    if not isinstance(v, list):
        raise _bad(at, f"a list of {what}", v)
    if len(v) > MAX_ENTRIES:
        raise ReportError(f"{at}: {len(v):,} entries; at most {MAX_ENTRIES:,}")
    return v


_SCALARS: dict[object, Parse] = {
    int: _p_int,
    float: _p_float,
    str: _p_str,
    bool: _p_bool,
    type(None): _p_none,
    object: _p_json,
}
_NOUNS = {
    "MeasuredGraph": "graphs",
    "GraphShape": "graphs",
    "MeasuredRank": "ranks",
    "ReqRange": "ranges",
    "TokenRange": "ranges",
}


def _noun(tp: object) -> str:
    name = getattr(tp, "__name__", "")
    return _NOUNS.get(name, "objects" if dataclasses.is_dataclass(tp) else "values")


def parser_for(tp: object, check: bool) -> Parse:
    """The reader of a value of type `tp` (a field's resolved annotation)."""
    if tp in _SCALARS:
        return _SCALARS[tp]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1 or len(args) != 2:
            raise TypeError(f"unsupported union {tp}")
        inner = parser_for(rest[0], check)
        return lambda v, at: None if v is None else inner(v, at)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item, what = parser_for(args[0], check), _noun(args[0])
            return lambda v, at: tuple(item(x, f"{at}[{i}]") for i, x in enumerate(_entries(v, at, what)))
        items = [parser_for(a, check) for a in args]
        n = len(items)

        def fixed(v: Any, at: str) -> tuple[Any, ...]:
            if not isinstance(v, list) or len(v) != n:
                raise _bad(at, f"a list of {n} values", v)
            return tuple(p(x, f"{at}[{i}]") for i, (p, x) in enumerate(zip(items, v, strict=True)))

        return fixed
    if origin is Mapping or origin is dict:
        key_type, value_type = args
        value = parser_for(value_type, check)

        def mapping(v: Any, at: str) -> dict[Any, Any]:
            if not isinstance(v, dict):
                raise _bad(at, "an object", v)
            if key_type is str:
                return {k: value(x, _join(at, k)) for k, x in v.items()}
            return {_int_key(k, at): value(x, _join(at, k)) for k, x in v.items()}

        return mapping
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        cls = tp
        return lambda v, at: _parse(cls, v, at, check)
    raise TypeError(f"no reader for {tp!r}")


def _int_key(k: str, at: str) -> int:
    if not (k.isascii() and k.isdigit()):
        raise ReportError(f"{at}: keys must be integers (got {preview(k)})")
    return int(k)


class _Field(typing.NamedTuple):
    name: str
    key: str
    hint: object
    default: Any
    """The default value, a factory (`factory`), or _MISSING (required)."""
    factory: bool


_FIELDS: dict[type, tuple[_Field, ...]] = {}
_PARSERS: dict[tuple[type, bool], tuple[tuple[_Field, Parse], ...]] = {}


def _fields(cls: type) -> tuple[_Field, ...]:
    got = _FIELDS.get(cls)
    if got is None:
        hints = typing.get_type_hints(cls)
        out = []
        for f in dataclasses.fields(cls):
            if f.name == "absent":
                continue
            if f.default is not dataclasses.MISSING:
                default, factory = f.default, False
            elif f.default_factory is not dataclasses.MISSING:
                default, factory = f.default_factory, True
            else:
                default, factory = _MISSING, False
            out.append(_Field(f.name, f.metadata.get("key", f.name), hints[f.name], default, factory))
        got = _FIELDS[cls] = tuple(out)
    return got


def _parse(cls: type[T], v: Any, at: str, check: bool) -> T:
    plan = _PARSERS.get((cls, check))
    if plan is None:
        plan = _PARSERS[(cls, check)] = tuple(
            (f, (_HOOKS.get((cls.__name__, f.name)) if check else None) or parser_for(f.hint, check))
            for f in _fields(cls)
        )
    if not isinstance(v, dict):
        raise _bad(at.removesuffix(":") if at.endswith(":") else at, "an object", v)
    kw: dict[str, Any] = {}
    absent: list[str] = []
    for f, parse in plan:
        raw = v.get(f.key, _MISSING)
        where = _join(at, f.key)
        if raw is _MISSING:
            if f.default is not _MISSING:
                kw[f.name] = f.default() if f.factory else f.default
                absent.append(f.name)
                continue
            if check and (cls.__name__, f.name) in _HOOKS:
                raw = None  # the field's own check says what it expects
            else:
                raise ReportError(f"{where}: missing")
        kw[f.name] = parse(raw, where)
    if absent:
        kw["absent"] = frozenset(absent)
    return cls(**kw)


# --------------------------------------------------------------------------- what is checked

_NAME = re.compile(r"[A-Za-z0-9_.+-]{1,64}")
_MODES = ("FULL", "PIECEWISE", "NONE")
_DEVICE_NAME = re.compile(r"[ -~]{1,128}")


def bounded_int(v: Any, where: str, *, minimum: int = 0) -> int:
    """A count or token number as the config bounds them."""
    if not _is_int(v) or not minimum <= v <= MAX_REASONABLE:
        raise ReportError(
            f"{where}: expected an integer from {minimum} to {MAX_REASONABLE:,} (got {preview(v)})"
        )
    return v


def _opt_int(v: Any, where: str) -> int | None:
    return None if v is None else bounded_int(v, where)


def _signed(v: Any, where: str) -> int:
    # A plan's own descriptors may carry vLLM's negative placeholders (V2 drafter decode
    # wrote -1 / -30 placeholders in early cgplan reports); they are only compared.
    return bounded_int(v, where, minimum=-MAX_REASONABLE)


def _opt_signed(v: Any, where: str) -> int | None:
    return None if v is None else _signed(v, where)


def name(v: Any, where: str) -> str:
    """A plain word: a family, a release, a fingerprint."""
    if not isinstance(v, str) or not _NAME.fullmatch(v):
        raise ReportError(f"{where}: expected a name of letters, digits and ._+- (got {preview(v)})")
    return v


def _opt_name(v: Any, where: str) -> str | None:
    return None if v is None else name(v, where)


def number(v: Any, where: str) -> float:
    """A duration (seconds or milliseconds): not negative, not absurd."""
    if not isinstance(v, int | float) or isinstance(v, bool) or not 0 <= v < 1e9:
        raise ReportError(f"{where}: expected a number from 0 to 1e9 (got {preview(v)})")
    return v


def _opt_number(v: Any, where: str) -> float | None:
    return None if v is None else number(v, where)


def byte_count(v: Any, where: str) -> int | None:
    """A memory delta, or None: NVML's can be negative (another process freed memory meanwhile)."""
    if v is None:
        return None
    if not _is_int(v) or not -(1 << 62) <= v < 1 << 62:
        raise ReportError(f"{where}: expected a byte count (got {preview(v)})")
    return v


def _required_bytes(v: Any, where: str) -> int:
    got = byte_count(v, where)
    if got is None:
        raise ReportError(f"{where}: missing")
    return got


def _graph_mode(v: Any, where: str) -> str:
    if v not in ("FULL", "PIECEWISE"):
        raise ReportError(f"{where}: expected FULL or PIECEWISE (got {preview(v)})")
    return str(v)


def _loras(v: Any, where: str) -> int:
    return _opt_int(v, where) or 0


def _ubatches(v: Any, where: str) -> int:
    return _opt_int(v, where) or 1


def _ranges(rows: Any, where: str) -> tuple[ReqRange, ...]:
    out: list[ReqRange] = []
    for i, r in enumerate(_entries(rows, where, "ranges")):
        at = f"{where}[{i}]"
        if not isinstance(r, dict):
            raise ReportError(
                f"{at}: expected {{from_reqs, to_reqs, mode, padded_tokens}} (got {preview(r)})"
            )
        first = bounded_int(r.get("from_reqs"), f"{at}.from_reqs", minimum=1)
        last = bounded_int(r.get("to_reqs"), f"{at}.to_reqs", minimum=first)
        if out and first <= out[-1].to_reqs:
            raise ReportError(f"{at}: ranges must be sorted and must not overlap (from_reqs {first})")
        mode = r.get("mode")
        if mode not in _MODES:
            raise ReportError(f"{at}.mode: expected FULL, PIECEWISE or NONE (got {preview(mode)})")
        missing = frozenset(k for k in ("padded_tokens", "padded_reqs") if k not in r)
        out.append(
            ReqRange(
                first,
                last,
                mode,
                _opt_int(r.get("padded_tokens"), f"{at}.padded_tokens"),
                _opt_int(r.get("padded_reqs"), f"{at}.padded_reqs"),
                missing,
            )
        )
    return tuple(out)


def _uniform(raw: Any, where: str) -> dict[int, tuple[ReqRange, ...]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ReportError(f"{where}: expected {{query_len: [ranges]}} (got {preview(raw)})")
    out = {}
    for k, v in raw.items():
        if not (isinstance(k, str) and k.isascii() and k.isdigit()):
            raise ReportError(f"{where}: keys must be query lengths (got {preview(k)})")
        out[bounded_int(int(k), f"{where}.{k}", minimum=1)] = _ranges(v, f"{where}.{k}")
    return out


def _required_uniform(raw: Any, where: str) -> dict[int, tuple[ReqRange, ...]]:
    if raw is None:
        raise ReportError(f"{where}: missing")
    return _uniform(raw, where)


def _lookup(raw: Any, where: str) -> tuple[tuple[int, int, int], ...]:
    rows: list[tuple[int, int, int]] = []
    for i, row in enumerate(_entries(raw, where, "[first_batch, last_batch, K] rows")):
        at = f"{where}[{i}]"
        if not isinstance(row, list) or len(row) != 3:
            raise ReportError(f"{at}: expected [first_batch, last_batch, K] (got {preview(row)})")
        a = bounded_int(row[0], f"{at}[0]", minimum=1)
        b = bounded_int(row[1], f"{at}[1]", minimum=a)
        k = bounded_int(row[2], f"{at}[2]")
        if rows and a <= rows[-1][1]:
            raise ReportError(f"{at}: rows must be sorted and must not overlap (first_batch {a})")
        rows.append((a, b, k))
    return tuple(rows)


def _dynamic_sd(raw: Any, where: str) -> DynamicSd | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ReportError(f"{where}: expected {{lookup: [...]}} or null (got {preview(raw)})")
    return DynamicSd(_lookup(raw.get("lookup"), f"{where}.lookup"))


def _families(raw: Any, where: str) -> dict[str, tuple[GraphShape, ...]]:
    if not isinstance(raw, dict):
        raise ReportError(f"{where}: missing (expected {{family: [graphs]}})")
    shapes = parser_for(tuple[GraphShape, ...], True)
    return {name(f, where): shapes(v, f"{where}.{f}") for f, v in raw.items()}


def _measured_graphs(raw: Any, where: str) -> tuple[MeasuredGraph, ...]:
    graphs = parser_for(tuple[MeasuredGraph, ...], True)
    return () if raw is None else typing.cast("tuple[MeasuredGraph, ...]", graphs(raw, where))


def _ranks(raw: Any, where: str) -> tuple[MeasuredRank, ...]:
    if raw is None:
        return ()
    out: list[MeasuredRank] = []
    for i, r in enumerate(_entries(raw, where, "ranks")):
        at = f"{where}[{i}]"
        if not isinstance(r, dict):
            raise ReportError(f"{at}: expected {{rank, local_rank, graphs, ...}} (got {preview(r)})")
        rank = _parse(MeasuredRank, r, at, True)
        if out and rank.rank <= out[-1].rank:
            raise ReportError(f"{at}.rank: ranks must be sorted and unique (rank {rank.rank})")
        out.append(rank)
    return tuple(out)


def _device_name(v: Any, where: str) -> str | None:
    if v is not None and not (isinstance(v, str) and _DEVICE_NAME.fullmatch(v)):
        raise ReportError(f"{where}: expected a GPU name or null (got {preview(v)})")
    return v


def _status(v: Any, where: str) -> str:
    if v not in STATUSES:
        raise ReportError(f"{where}: expected one of {', '.join(STATUSES)} (got {preview(v)})")
    return str(v)


def _failure(v: Any, where: str) -> str | None:
    if v is not None and not isinstance(v, str):
        raise ReportError(f"{where}: expected a message or null (got {preview(v)})")
    return v


def _section(cls: type[T], what: str) -> Parse:
    def parse(v: Any, where: str) -> T:
        if not isinstance(v, dict):
            raise ReportError(f"{where}: missing{what}")
        return _parse(cls, v, where, True)

    return parse


_HOOKS: dict[tuple[str, str], Parse] = {
    ("PlanDocument", "vllm_version"): name,
    ("PlanDocument", "uniform_decode_query_len"): lambda v, at: bounded_int(v, at, minimum=1),
    ("PlanDocument", "max_num_seqs"): lambda v, at: bounded_int(v, at, minimum=1),
    ("PlanDocument", "config_fingerprint"): _opt_name,
    ("PlanDocument", "dynamic_sd"): _dynamic_sd,
    ("PlanDocument", "graphs"): _families,
    ("PlanDocument", "uniform_decode"): _required_uniform,
    ("PlanDocument", "uniform_decode_lora1"): _uniform,
    ("GraphShape", "mode"): _graph_mode,
    ("GraphShape", "num_tokens"): _signed,
    ("GraphShape", "num_reqs"): _opt_signed,
    ("GraphShape", "query_len"): _opt_signed,
    ("GraphShape", "num_active_loras"): _loras,
    ("GraphShape", "num_ubatches"): _ubatches,
    ("GraphShape", "num_speculative_tokens"): lambda v, at: (
        None if v is None else bounded_int(v, at, minimum=1)
    ),
    ("CaptureReport", "status"): _status,
    ("CaptureReport", "failure"): _failure,
    ("CaptureReport", "config_fingerprint"): _opt_name,
    ("CaptureReport", "plan"): _section(PlanDocument, " (expected the plan the report was made against)"),
    ("CaptureReport", "measured"): _section(MeasuredDocument, ""),
    ("MeasuredDocument", "graphs"): _measured_graphs,
    ("MeasuredDocument", "uniform_decode"): _uniform,
    ("MeasuredDocument", "uniform_decode_lora1"): _uniform,
    ("MeasuredDocument", "capture_wall_s"): _opt_number,
    ("MeasuredDocument", "capture_nvml_delta_bytes"): byte_count,
    ("MeasuredDocument", "graph_nvml_total_bytes"): byte_count,
    ("MeasuredDocument", "ranks"): _ranks,
    ("MeasuredGraph", "order"): bounded_int,
    ("MeasuredGraph", "family"): name,
    ("MeasuredGraph", "mode"): _graph_mode,
    ("MeasuredGraph", "num_tokens"): bounded_int,
    ("MeasuredGraph", "num_reqs"): _opt_int,
    ("MeasuredGraph", "query_len"): _opt_int,
    ("MeasuredGraph", "pieces"): bounded_int,
    ("MeasuredGraph", "capture_time_ms"): number,
    ("MeasuredGraph", "window_time_ms"): number,
    ("MeasuredGraph", "nvml_delta_bytes"): byte_count,
    ("MeasuredGraph", "torch_reserved_delta_bytes"): _required_bytes,
    ("MeasuredGraph", "num_active_loras"): _loras,
    ("MeasuredRank", "rank"): bounded_int,
    ("MeasuredRank", "local_rank"): bounded_int,
    ("MeasuredRank", "device_name"): _device_name,
    ("MeasuredRank", "nvml_index"): _opt_int,
    ("MeasuredRank", "graphs"): _measured_graphs,
    ("MeasuredRank", "capture_wall_s"): _opt_number,
    ("MeasuredRank", "capture_nvml_delta_bytes"): byte_count,
    ("MeasuredRank", "graph_nvml_total_bytes"): byte_count,
}
"""The checks of a report read back from a file, by (type, field): each replaces the field's
type check and keeps the message the reader has always given."""


def _unsigned_graphs(plan: PlanDocument, where: str) -> None:
    """A plan report's own graphs are planned now: no negative numbers (a capture's plan may
    carry vLLM's placeholders)."""
    for family, graphs in plan.graphs.items():
        for i, g in enumerate(graphs):
            at = f"{where}.{family}[{i}]"
            bounded_int(g.num_tokens, f"{at}.num_tokens")
            _opt_int(g.num_reqs, f"{at}.num_reqs")
            _opt_int(g.query_len, f"{at}.query_len")
