"""Report files: JSON with a schema version, written atomically, read back with checks.

The one reader of reports: a plan (`plan --json`), a capture report and the aggregate of a
multi-config capture, each read into its type (cgplan/core/model/reports.py) through
io/schema/reports.py, and written from it. Reading a report never executes anything from it:
it is parsed as JSON and its fields are checked; nothing is imported, evaluated or unpickled.
"""

from __future__ import annotations

from pathlib import Path

from cgplan.core.compare.measure import GraphMeasurement, RankMeasurement
from cgplan.core.compare.sides import Side
from cgplan.core.model.reports import (
    CaptureReport,
    FleetReport,
    GraphShape,
    MeasuredGraph,
    PlanDocument,
    PredictedCost,
    ReqRange,
)
from cgplan.core.model.types import DispatchRange, Graph
from cgplan.errors import ReportError, one_line, preview
from cgplan.io.files import ReadError, read_json
from cgplan.io.output import write_atomically
from cgplan.io.schema import SCHEMA_VERSION, dumps, dumps_ascii
from cgplan.io.schema.reports import capture_from_json, fleet_from_json, plan_from_json, to_json

REPORT_KINDS = ("plan", "capture")

MAX_REPORT_BYTES = 32 << 20
"""The largest report read: a capture of every graph of a TP=8 engine is a few MB; more is
not a cgplan report, and parsing it would only cost memory and time."""


def write_report(report: CaptureReport | PlanDocument | FleetReport, path: Path) -> None:
    """Write atomically: a temporary file in the same folder, then rename (never a half file)."""
    write_atomically(path, report_text(report), "write the report")


def report_text(report: CaptureReport | PlanDocument | FleetReport) -> str:
    """The report's JSON text, as each kind has always been written (sorted keys; a plan as
    `plan --json` writes it, UTF-8 as is, the others with non-ASCII characters escaped)."""
    doc = to_json(report)
    return dumps(doc) if isinstance(report, PlanDocument) else dumps_ascii(doc)


def _document(path: Path, kinds: tuple[str, ...] | None) -> tuple[dict[str, object], str]:
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
    if kinds is None and isinstance(kind, str):
        return doc, kind
    if kinds is None or kind not in kinds:
        kinds = kinds or REPORT_KINDS
        raise ReportError(
            f"{path}:kind: unknown report kind (got {preview(kind)}; expected one of {', '.join(kinds)})"
        )
    return doc, str(kind)


def read_report(path: Path) -> PlanDocument | CaptureReport:
    """Read and check a plan or capture report.

    Raises:
        ReportError: unreadable, larger than MAX_REPORT_BYTES, not JSON, an unknown schema, or a
            value of the wrong type or out of bounds (at its key path).
    """
    doc, kind = _document(path, REPORT_KINDS)
    label = one_line(str(path))
    return capture_from_json(doc, label) if kind == "capture" else plan_from_json(doc, label)


def read_capture_report(path: Path) -> CaptureReport:
    """Read and check a capture report.

    Raises:
        ReportError: as `read_report`, and for a report of another kind.
    """
    doc, _ = _document(path, ("capture",))
    return capture_from_json(doc, one_line(str(path)))


def read_fleet_report(path: Path) -> FleetReport:
    """Read and check the aggregate of a multi-config capture (`fleet.json`).

    Raises:
        ReportError: as `read_report`, and for a report of another kind.
    """
    doc, _ = _document(path, ("fleet",))
    return fleet_from_json(doc, one_line(str(path)))


def report_kind(path: Path) -> str:
    """The kind a JSON report says it is (plan, capture, fleet, ...), without checking the rest.

    Raises:
        ReportError: unreadable, not JSON, an unknown schema, or a kind that is not a string.
    """
    return _document(path, None)[1]


# --------------------------------------------------------------------------- reports as sides

_FAILURE_CHARS = 300
"""How much of a capture's failure message a comparison quotes (an OOM message is long)."""


def _graph(g: GraphShape | MeasuredGraph) -> Graph:
    return Graph(
        g.mode,  # type: ignore[arg-type]  # FULL or PIECEWISE: checked when read
        g.num_tokens,
        g.num_reqs,
        g.query_len,
        g.num_active_loras,
        g.num_ubatches if isinstance(g, GraphShape) else 1,
        g.num_speculative_tokens if isinstance(g, GraphShape) else None,
    )


def _ranges(rows: tuple[ReqRange, ...]) -> tuple[DispatchRange, ...]:
    return tuple(
        DispatchRange(r.from_reqs, r.to_reqs, r.mode, r.padded_tokens, r.padded_reqs)  # type: ignore[arg-type]
        for r in rows
    )


def measurements(graphs: tuple[MeasuredGraph, ...]) -> tuple[GraphMeasurement, ...]:
    """A report's measured graphs as the core's measurements."""
    return tuple(
        GraphMeasurement(
            order=g.order,
            family=g.family,
            mode=g.mode,
            num_tokens=g.num_tokens,
            num_reqs=g.num_reqs,
            query_len=g.query_len,
            pieces=g.pieces,
            capture_time_ms=g.capture_time_ms,
            window_time_ms=g.window_time_ms,
            nvml_delta_bytes=g.nvml_delta_bytes,
            torch_reserved_delta_bytes=g.torch_reserved_delta_bytes,
            num_active_loras=g.num_active_loras,
        )
        for g in graphs
    )


def ranks_from_report(report: CaptureReport) -> tuple[RankMeasurement, ...]:
    """The per-rank section of a capture report (empty when it has none: one process, or a
    report written before tensor-parallel captures)."""
    return tuple(
        RankMeasurement(
            rank=r.rank,
            local_rank=r.local_rank,
            device_name=r.device_name,
            nvml_index=r.nvml_index,
            graphs=measurements(r.graphs),
            capture_wall_s=r.capture_wall_s,
            capture_nvml_delta_bytes=r.capture_nvml_delta_bytes,
        )
        for r in report.measured.ranks
    )


def _is_bytes(v: int | None) -> bool:
    return v is not None and 0 <= v < 1 << 62


def side_from_report(report: PlanDocument | CaptureReport, label: str) -> Side:
    """A plan report or a capture report as a comparison side (measured figures for captures)."""
    plan = report.plan if isinstance(report, CaptureReport) else report
    lookup = None if plan.dynamic_sd is None else plan.dynamic_sd.lookup
    if isinstance(report, CaptureReport):
        m = report.measured
        families: dict[str, list[Graph]] = {}
        for g in m.graphs:
            families.setdefault(g.family, []).append(_graph(g))
        ranks = ranks_from_report(report)  # a side compares rank 0 only
        # Graph memory is the capture phase on one rank (what the cost model predicts and vLLM's
        # "took" counts); the graph sections' sum stays as a labelled detail.
        pool, sections = m.capture_nvml_delta_bytes, m.graph_nvml_total_bytes
        if ranks:
            pool, sections = ranks[0].capture_nvml_delta_bytes, ranks[0].graph_nvml_total_bytes
        wall = m.capture_wall_s
        kv = m.vllm.kv_cache_tokens
        failure = report.failure
        return Side(
            label,
            "capture",
            plan.vllm_version,
            report.config_fingerprint,
            plan.max_num_seqs,
            plan.uniform_decode_query_len,
            {f: tuple(g) for f, g in families.items()},
            {ql: _ranges(rows) for ql, rows in m.uniform_decode.items()},
            lookup,
            pool_bytes=pool if _is_bytes(pool) else None,
            pool_source="measured" if _is_bytes(pool) else None,
            graph_sections_bytes=sections if _is_bytes(sections) else None,
            model_runner=_runner(m.model_runner or plan.model_runner),
            vllm_kv_cache_tokens=kv if kv is not None and 0 <= kv < 1 << 50 else None,
            capture_time_s=None if wall is None or not 0 <= wall < 1e9 else float(wall),
            status=report.status,
            failure=None if failure is None else one_line(failure[:_FAILURE_CHARS]),
            planned_graphs={f: tuple(_graph(g) for g in gs) for f, gs in plan.graphs.items()},
        )
    pred = plan.predicted_pool_bytes
    pred_ok = _is_bytes(pred)
    return Side(
        label,
        "plan",
        plan.vllm_version,
        plan.config_fingerprint,
        plan.max_num_seqs,
        plan.uniform_decode_query_len,
        {f: tuple(_graph(g) for g in gs) for f, gs in plan.graphs.items()},
        {ql: _ranges(rows) for ql, rows in plan.uniform_decode.items()},
        lookup,
        pool_bytes=pred if pred_ok else None,
        pool_source="predicted" if pred_ok else None,
        pool_band_bytes=_band(plan.predicted_cost) if pred_ok else None,
        pool_caveats=_caveats(plan.predicted_cost),
        model_runner=_runner(plan.model_runner),
    )


def _runner(value: str | None) -> str | None:
    return value if value in ("v1", "v2") else None


def _band(cost: PredictedCost | None) -> tuple[int, int] | None:
    """A plan's predicted band in bytes (None when absent or out of bounds)."""
    if cost is None or cost.low_mib is None or cost.high_mib is None:
        return None
    lo, hi = cost.low_mib, cost.high_mib
    if not (0 <= lo < 1e12 and 0 <= hi < 1e12):
        return None
    return round(float(lo) * (1 << 20)), round(float(hi) * (1 << 20))


def _caveats(cost: PredictedCost | None) -> tuple[str, ...]:
    return () if cost is None else tuple(c[:200] for c in cost.caveats[:8])
