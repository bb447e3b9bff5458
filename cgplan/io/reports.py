"""Report files: JSON with a schema version, written atomically, read back with checks.

Reading a report never executes anything from it: it is parsed as JSON and its fields
are checked; nothing is imported, evaluated or unpickled.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypeGuard

from cgplan.core.compare.measure import GraphMeasurement, RankMeasurement
from cgplan.core.compare.sides import STATUSES, Side
from cgplan.core.model.types import DispatchRange, Graph
from cgplan.errors import ReportError, one_line, preview
from cgplan.io.config import MAX_LIST, MAX_REASONABLE
from cgplan.io.files import ReadError, read_json
from cgplan.io.output import write_atomically
from cgplan.io.schema import SCHEMA_VERSION, dumps_ascii

REPORT_KINDS = ("plan", "capture")


def write_report(doc: dict[str, Any], path: Path) -> None:
    """Write atomically: a temporary file in the same folder, then rename (never a half file)."""
    text = dumps_ascii(doc)
    write_atomically(path, text, "write the report")


MAX_REPORT_BYTES = 32 << 20
"""The largest report read: a capture of every graph of a TP=8 engine is a few MB; more is
not a cgplan report, and parsing it would only cost memory and time."""


def read_report(path: Path) -> dict[str, Any]:
    """Parse and check a report (plan or capture JSON).

    Raises:
        ReportError: unreadable, larger than MAX_REPORT_BYTES, not JSON, or an unknown schema.
    """
    try:
        doc = read_json(path, what="report", limit=MAX_REPORT_BYTES)
    except ReadError as e:
        raise ReportError(e.message) from None
    if not isinstance(doc, dict):
        raise ReportError(f"{path}: not a cgplan report (expected a JSON object)")
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ReportError(
            f"{path}:schema_version: missing or not an integer (got {preview(version)}; expected 1)"
        )
    if version > SCHEMA_VERSION:
        raise ReportError(
            f"{path}:schema_version: {preview(version)} is newer than this cgplan reads "
            f"(supports 1..{SCHEMA_VERSION}); upgrade cgplan"
        )
    if version < 1:
        raise ReportError(
            f"{path}:schema_version: {preview(version)} is not a valid version (expected 1..{SCHEMA_VERSION})"
        )
    kind = doc.get("kind", "plan")
    if kind not in REPORT_KINDS:
        raise ReportError(
            f"{path}:kind: unknown report kind (got {preview(kind)}; "
            f"expected one of {', '.join(REPORT_KINDS)})"
        )
    return doc


# What a report may hold, checked before anything iterates over it: counts and token
# numbers as the config bounds them, sorted non-overlapping ranges (so walking a tier costs
# at most max_num_seqs steps), and names that are plain words (they reach terminal tables).
_NAME = re.compile(r"[A-Za-z0-9_.+-]{1,64}")
_MODES = ("FULL", "PIECEWISE", "NONE")


def _is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _int(v: Any, where: str, *, minimum: int = 0) -> int:
    if not _is_int(v) or not minimum <= v <= MAX_REASONABLE:
        raise ReportError(
            f"{where}: expected an integer from {minimum} to {MAX_REASONABLE:,} (got {preview(v)})"
        )
    return int(v)


def _opt_int(v: Any, where: str) -> int | None:
    return None if v is None else _int(v, where)


def _name(v: Any, where: str) -> str:
    if not isinstance(v, str) or not _NAME.fullmatch(v):
        raise ReportError(f"{where}: expected a name of letters, digits and ._+- (got {preview(v)})")
    return v


def _list(v: Any, where: str, what: str) -> list[Any]:
    if not isinstance(v, list):
        raise ReportError(f"{where}: expected a list of {what} (got {preview(v)})")
    if len(v) > MAX_LIST * 10:
        raise ReportError(f"{where}: {len(v):,} entries; at most {MAX_LIST * 10:,}")
    return v


def _graph(g: Any, at: str, *, signed: bool = False) -> Graph:
    if not isinstance(g, dict):
        raise ReportError(f"{at}: expected {{mode, num_tokens, num_reqs, query_len}} (got {preview(g)})")
    mode = g.get("mode")
    if mode not in ("FULL", "PIECEWISE"):
        raise ReportError(f"{at}.mode: expected FULL or PIECEWISE (got {preview(mode)})")
    # A plan's own descriptors may carry vLLM's negative placeholders (V2 drafter decode
    # wrote -1 / -30 placeholders in early cgplan reports); they are only compared.
    low = -MAX_REASONABLE if signed else 0
    return Graph(
        mode,
        _int(g.get("num_tokens"), f"{at}.num_tokens", minimum=low),
        None if g.get("num_reqs") is None else _int(g.get("num_reqs"), f"{at}.num_reqs", minimum=low),
        None if g.get("query_len") is None else _int(g.get("query_len"), f"{at}.query_len", minimum=low),
        _opt_int(g.get("num_active_loras"), f"{at}.num_active_loras") or 0,
        _opt_int(g.get("num_ubatches"), f"{at}.num_ubatches") or 1,
        _opt_int(g.get("num_speculative_tokens"), f"{at}.num_speculative_tokens"),
    )


def _graph_list(items: Any, where: str, *, signed: bool = False) -> tuple[Graph, ...]:
    return tuple(
        _graph(g, f"{where}[{i}]", signed=signed) for i, g in enumerate(_list(items, where, "graphs"))
    )


def _dispatch(rows: Any, unit: str, where: str) -> tuple[DispatchRange, ...]:
    out: list[DispatchRange] = []
    for i, r in enumerate(_list(rows, where, "ranges")):
        at = f"{where}[{i}]"
        if not isinstance(r, dict):
            raise ReportError(
                f"{at}: expected {{from_{unit}, to_{unit}, mode, padded_tokens}} (got {preview(r)})"
            )
        first = _int(r.get(f"from_{unit}"), f"{at}.from_{unit}", minimum=1)
        last = _int(r.get(f"to_{unit}"), f"{at}.to_{unit}", minimum=first)
        if out and first <= out[-1].last:
            raise ReportError(f"{at}: ranges must be sorted and must not overlap (from_{unit} {first})")
        mode = r.get("mode")
        if mode not in _MODES:
            raise ReportError(f"{at}.mode: expected FULL, PIECEWISE or NONE (got {preview(mode)})")
        out.append(
            DispatchRange(
                first,
                last,
                mode,
                _opt_int(r.get("padded_tokens"), f"{at}.padded_tokens"),
                _opt_int(r.get("padded_reqs"), f"{at}.padded_reqs"),
            )
        )
    return tuple(out)


def _uniform(raw: Any, where: str) -> dict[int, tuple[DispatchRange, ...]]:
    if not isinstance(raw, dict):
        raise ReportError(f"{where}: expected {{query_len: [ranges]}} (got {preview(raw)})")
    out = {}
    for k, v in raw.items():
        if not (isinstance(k, str) and k.isascii() and k.isdigit()):
            raise ReportError(f"{where}: keys must be query lengths (got {preview(k)})")
        out[_int(int(k), f"{where}.{k}", minimum=1)] = _dispatch(v, "reqs", f"{where}.{k}")
    return out


def _lookup(raw: Any, where: str) -> tuple[tuple[int, int, int], ...]:
    rows: list[tuple[int, int, int]] = []
    for i, row in enumerate(_list(raw, where, "[first_batch, last_batch, K] rows")):
        at = f"{where}[{i}]"
        if not isinstance(row, list) or len(row) != 3:
            raise ReportError(f"{at}: expected [first_batch, last_batch, K] (got {preview(row)})")
        a = _int(row[0], f"{at}[0]", minimum=1)
        b = _int(row[1], f"{at}[1]", minimum=a)
        k = _int(row[2], f"{at}[2]")
        if rows and a <= rows[-1][1]:
            raise ReportError(f"{at}: rows must be sorted and must not overlap (first_batch {a})")
        rows.append((a, b, k))
    return tuple(rows)


def _fingerprint(v: Any, where: str) -> str | None:
    return None if v is None else _name(v, where)


def _number(v: Any, where: str) -> float:
    """A duration (seconds or milliseconds): not negative, not absurd."""
    if not isinstance(v, int | float) or isinstance(v, bool) or not 0 <= v < 1e9:
        raise ReportError(f"{where}: expected a number from 0 to 1e9 (got {preview(v)})")
    return float(v)


def _bytes(v: Any, where: str) -> int | None:
    """A memory delta, or None: NVML's can be negative (another process freed memory meanwhile)."""
    if v is None:
        return None
    if not _is_int(v) or not -(1 << 62) <= v < 1 << 62:
        raise ReportError(f"{where}: expected a byte count (got {preview(v)})")
    return int(v)


def _measurements(items: Any, where: str) -> tuple[GraphMeasurement, ...]:
    out = []
    for i, g in enumerate(_list(items, where, "graphs")):
        at = f"{where}[{i}]"
        shape = _graph(g, at)
        reserved = _bytes(g.get("torch_reserved_delta_bytes"), f"{at}.torch_reserved_delta_bytes")
        if reserved is None:
            raise ReportError(f"{at}.torch_reserved_delta_bytes: missing")
        out.append(
            GraphMeasurement(
                order=_int(g.get("order"), f"{at}.order"),
                family=_name(g.get("family"), f"{at}.family"),
                mode=shape.mode,
                num_tokens=shape.num_tokens,
                num_reqs=shape.num_reqs,
                query_len=shape.query_len,
                pieces=_int(g.get("pieces"), f"{at}.pieces"),
                capture_time_ms=_number(g.get("capture_time_ms"), f"{at}.capture_time_ms"),
                window_time_ms=_number(g.get("window_time_ms"), f"{at}.window_time_ms"),
                nvml_delta_bytes=_bytes(g.get("nvml_delta_bytes"), f"{at}.nvml_delta_bytes"),
                torch_reserved_delta_bytes=reserved,
                num_active_loras=shape.num_active_loras,
            )
        )
    return tuple(out)


_FAILURE_CHARS = 300
"""How much of a capture's failure message a comparison quotes (an OOM message is long)."""
_DEVICE_NAME = re.compile(r"[ -~]{1,128}")


def ranks_from_report(doc: dict[str, Any], label: str) -> tuple[RankMeasurement, ...]:
    """The per-rank section of a capture report (empty when it has none: one process, or a
    report written before tensor-parallel captures).

    Raises:
        ReportError: a field is missing, of the wrong type or out of bounds.
    """
    m = doc.get("measured")
    raw = m.get("ranks") if isinstance(m, dict) else None
    if raw is None:
        return ()
    out: list[RankMeasurement] = []
    for i, r in enumerate(_list(raw, f"{label}: measured.ranks", "ranks")):
        at = f"{label}: measured.ranks[{i}]"
        if not isinstance(r, dict):
            raise ReportError(f"{at}: expected {{rank, local_rank, graphs, ...}} (got {preview(r)})")
        rank = _int(r.get("rank"), f"{at}.rank")
        if out and rank <= out[-1].rank:
            raise ReportError(f"{at}.rank: ranks must be sorted and unique (rank {rank})")
        name, wall = r.get("device_name"), r.get("capture_wall_s")
        if name is not None and not (isinstance(name, str) and _DEVICE_NAME.fullmatch(name)):
            raise ReportError(f"{at}.device_name: expected a GPU name or null (got {preview(name)})")
        out.append(
            RankMeasurement(
                rank=rank,
                local_rank=_int(r.get("local_rank"), f"{at}.local_rank"),
                device_name=name,
                nvml_index=_opt_int(r.get("nvml_index"), f"{at}.nvml_index"),
                graphs=_measurements(r.get("graphs", []), f"{at}.graphs"),
                capture_wall_s=None if wall is None else _number(wall, f"{at}.capture_wall_s"),
                capture_nvml_delta_bytes=_bytes(
                    r.get("capture_nvml_delta_bytes"), f"{at}.capture_nvml_delta_bytes"
                ),
            )
        )
    return tuple(out)


def side_from_report(doc: dict[str, Any], label: str) -> Side:
    """A plan JSON or capture report as a comparison side (measured figures for captures).

    Raises:
        ReportError: a field is missing, of the wrong type or out of bounds.
    """
    plan = doc if doc.get("kind", "plan") == "plan" else doc.get("plan")
    if not isinstance(plan, dict):
        raise ReportError(f"{label}: plan: missing (expected the plan the report was made against)")
    q = _int(plan.get("uniform_decode_query_len"), f"{label}: uniform_decode_query_len", minimum=1)
    s = _int(plan.get("max_num_seqs"), f"{label}: max_num_seqs", minimum=1)
    version = _name(plan.get("vllm_version"), f"{label}: vllm_version")
    fingerprint = _fingerprint(doc.get("config_fingerprint"), f"{label}: config_fingerprint")
    dyn = plan.get("dynamic_sd")
    lookup: tuple[tuple[int, int, int], ...] | None = None
    if dyn is not None:
        if not isinstance(dyn, dict):
            raise ReportError(f"{label}: dynamic_sd: expected {{lookup: [...]}} or null (got {preview(dyn)})")
        lookup = _lookup(dyn.get("lookup"), f"{label}: dynamic_sd.lookup")
    if doc.get("kind") == "capture":
        m = doc.get("measured")
        if not isinstance(m, dict):
            raise ReportError(f"{label}: measured: missing")
        status = doc.get("status")
        if status not in STATUSES:
            raise ReportError(
                f"{label}: status: expected one of {', '.join(STATUSES)} (got {preview(status)})"
            )
        failure = doc.get("failure")
        if failure is not None and not isinstance(failure, str):
            raise ReportError(f"{label}: failure: expected a message or null (got {preview(failure)})")
        planned_raw = plan.get("graphs")
        if not isinstance(planned_raw, dict):
            raise ReportError(f"{label}: plan.graphs: missing (expected {{family: [graphs]}})")
        planned = {
            _name(f, f"{label}: plan.graphs"): _graph_list(v, f"{label}: plan.graphs.{f}", signed=True)
            for f, v in planned_raw.items()
        }
        families: dict[str, list[Graph]] = {}
        graphs_raw = m.get("graphs")
        for i, g in enumerate(
            _list([] if graphs_raw is None else graphs_raw, f"{label}: measured.graphs", "graphs")
        ):
            at = f"{label}: measured.graphs[{i}]"
            fam = _name(g.get("family") if isinstance(g, dict) else None, f"{at}.family")
            families.setdefault(fam, []).extend(_graph_list([g], at))
        ud = m.get("uniform_decode")
        uniform = _uniform({} if ud is None else ud, f"{label}: measured.uniform_decode")
        ranks = ranks_from_report(doc, label)  # checked like the rest; a side compares rank 0 only
        # Graph memory is the capture phase on one rank (what the cost model predicts and vLLM's
        # "took" counts); the graph sections' sum stays as a labelled detail.
        pool = m.get("capture_nvml_delta_bytes")
        sections = m.get("graph_nvml_total_bytes")
        if ranks:
            pool = ranks[0].capture_nvml_delta_bytes
            sections = ranks[0].graph_nvml_total_bytes
        wall = m.get("capture_wall_s")
        pool_ok = _is_int(pool) and 0 <= pool < 1 << 62
        wall_ok = isinstance(wall, int | float) and not isinstance(wall, bool) and 0 <= wall < 1e9
        return Side(
            label,
            "capture",
            version,
            fingerprint,
            s,
            q,
            {f: tuple(g) for f, g in families.items()},
            uniform,
            lookup,
            pool_bytes=pool if pool_ok else None,
            pool_source="measured" if pool_ok else None,
            graph_sections_bytes=sections if _is_int(sections) and 0 <= sections < 1 << 62 else None,
            model_runner=_runner(m.get("model_runner") or plan.get("model_runner")),
            vllm_kv_cache_tokens=_kv_tokens(m.get("vllm")),
            capture_time_s=float(wall) if wall_ok and wall is not None else None,
            status=status,
            failure=None if failure is None else one_line(failure[:_FAILURE_CHARS]),
            planned_graphs=planned,
        )
    graphs_raw = plan.get("graphs")
    if not isinstance(graphs_raw, dict):
        raise ReportError(f"{label}: graphs: missing (expected {{family: [graphs]}})")
    graphs = {
        _name(f, f"{label}: graphs"): _graph_list(v, f"{label}: graphs.{f}") for f, v in graphs_raw.items()
    }
    ud_raw = plan.get("uniform_decode")
    if ud_raw is None:
        raise ReportError(f"{label}: uniform_decode: missing")
    uniform = _uniform(ud_raw, f"{label}: uniform_decode")
    pred = plan.get("predicted_pool_bytes")
    pred_ok = _is_int(pred) and 0 <= pred < 1 << 62
    return Side(
        label,
        "plan",
        version,
        fingerprint,
        s,
        q,
        graphs,
        uniform,
        lookup,
        pool_bytes=pred if pred_ok else None,
        pool_source="predicted" if pred_ok else None,
        pool_band_bytes=_band(plan.get("predicted_cost")) if pred_ok else None,
        pool_caveats=_caveats(plan.get("predicted_cost")),
        model_runner=_runner(plan.get("model_runner")),
    )


def _kv_tokens(figures: object) -> int | None:
    v = figures.get("kv_cache_tokens") if isinstance(figures, dict) else None
    return v if _is_int(v) and 0 <= v < 1 << 50 else None


def _runner(value: object) -> str | None:
    return value if isinstance(value, str) and value in ("v1", "v2") else None


def _band(cost: object) -> tuple[int, int] | None:
    """A plan JSON's predicted band in bytes (None when absent or malformed)."""
    if not isinstance(cost, dict):
        return None
    lo, hi = cost.get("low_mib"), cost.get("high_mib")
    ok = all(isinstance(x, int | float) and not isinstance(x, bool) and 0 <= x < 1e12 for x in (lo, hi))
    return (round(float(lo) * (1 << 20)), round(float(hi) * (1 << 20))) if ok else None  # type: ignore[arg-type]


def _caveats(cost: object) -> tuple[str, ...]:
    if not isinstance(cost, dict) or not isinstance(cost.get("caveats"), list):
        return ()
    return tuple(str(c)[:200] for c in cost["caveats"][:8] if isinstance(c, str))
