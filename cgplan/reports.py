"""Report files: JSON with a schema version, written atomically, read back with checks.

Reading a report never executes anything from it: it is parsed as JSON and its fields
are checked; nothing is imported, evaluated or unpickled.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cgplan.core.compare_sides import Side
from cgplan.core.measure import Comparison, MeasuredCapture, summarize
from cgplan.core.types import DispatchRange, Graph, Plan
from cgplan.errors import CgplanError, ReportError
from cgplan.render.json import SCHEMA_VERSION, plan_to_dict

REPORT_KINDS = ("plan", "capture")


def _ranges(ranges: tuple[DispatchRange, ...], unit: str) -> list[dict[str, Any]]:
    return [
        {
            f"from_{unit}": r.first,
            f"to_{unit}": r.last,
            "mode": r.mode,
            "padded_tokens": r.padded_tokens,
            "padded_reqs": r.padded_reqs,
        }
        for r in ranges
    ]


def measured_to_dict(m: MeasuredCapture) -> dict[str, Any]:
    """The measured part of a capture report."""
    return {
        "backend": m.backend,
        "model_runner": m.model_runner,
        "cudagraph_mode": m.cudagraph_mode,
        "capture_sizes": list(m.capture_sizes),
        "max_capture_size": m.max_capture_size,
        "graphs": [asdict(g) for g in m.graphs],
        "uniform_decode": {str(ql): _ranges(r, "reqs") for ql, r in sorted(m.uniform_decode.items())},
        "mixed": _ranges(m.mixed, "tokens"),
        "capture_wall_s": m.capture_wall_s,
        "capture_nvml_delta_bytes": m.capture_nvml_delta_bytes,
        "graph_nvml_total_bytes": sum(g.nvml_delta_bytes or 0 for g in m.graphs),
        "graph_torch_reserved_total_bytes": sum(g.torch_reserved_delta_bytes for g in m.graphs),
        "vllm": asdict(m.vllm),
    }


def comparison_to_dict(c: Comparison) -> dict[str, Any]:
    """Plan vs measured, as JSON."""

    def g(x: Any) -> dict[str, Any]:
        return {"mode": x.mode, "num_tokens": x.num_tokens, "num_reqs": x.num_reqs, "query_len": x.query_len}

    return {
        "matches": c.matches,
        "graphs": [
            {
                "family": d.family,
                "matched": d.matched,
                "missing": [g(x) for x in d.missing],
                "unexpected": [g(x) for x in d.unexpected],
            }
            for d in c.graphs
        ],
        "dispatch_checked": c.dispatch_checked,
        "dispatch_mismatches": [asdict(d) for d in c.dispatch],
        "eager_uniform_decode_measured": [
            {"query_len": ql, "from_reqs": a, "to_reqs": b} for ql, a, b in c.eager_measured
        ],
    }


def capture_report(
    *,
    source: str,
    fingerprint: str,
    plan: Plan,
    measured: MeasuredCapture,
    comparison: Comparison | None,
    environment: dict[str, Any],
    log_lines: list[str],
    created_utc: str,
) -> dict[str, Any]:
    """The whole capture report document."""
    keep = (
        "Capturing",
        "capturing",
        "CUDA graph",
        "cudagraph",
        "KV cache",
        "Graph capturing",
        "Truncating",
        "not supported",
        "Overriding",
        "model runner",
        "Model Runner",
    )
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "capture",
        "status": measured.status,
        "failure": measured.failure,
        "source": source,
        "config_fingerprint": fingerprint,
        "created_utc": created_utc,
        "environment": environment,
        "plan": plan_to_dict(plan, source=source),
        "measured": measured_to_dict(measured),
        "summary": [asdict(s) for s in summarize(measured.graphs)],
        "comparison": comparison_to_dict(comparison) if comparison is not None else None,
        "vllm_log": [line for line in log_lines if any(k in line for k in keep)][-400:],
    }


def write_report(doc: dict[str, Any], path: Path) -> None:
    """Write atomically: a temporary file in the same folder, then rename (never a half file)."""
    text = json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n"
    target = path.expanduser()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or Path("."))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as e:
        raise CgplanError(f"{path}: cannot write the report: {e.strerror or e}") from None


def read_report(path: Path) -> dict[str, Any]:
    """Parse and check a report (plan or capture JSON)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: cannot read: {e}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ReportError(f"{path}: not JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except RecursionError:
        raise ReportError(f"{path}: not JSON (nested too deeply)") from None
    if not isinstance(doc, dict):
        raise ReportError(f"{path}: not a cgplan report (expected a JSON object)")
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ReportError(f"{path}:schema_version: missing or not an integer (got {version!r}; expected 1)")
    if version > SCHEMA_VERSION:
        raise ReportError(
            f"{path}:schema_version: {version} is newer than this cgplan reads "
            f"(supports 1..{SCHEMA_VERSION}); upgrade cgplan"
        )
    if version < 1:
        raise ReportError(
            f"{path}:schema_version: {version} is not a valid version (expected 1..{SCHEMA_VERSION})"
        )
    kind = doc.get("kind", "plan")
    if kind not in REPORT_KINDS:
        raise ReportError(
            f"{path}:kind: unknown report kind (got {kind!r}; expected one of {', '.join(REPORT_KINDS)})"
        )
    return doc


def _graph_list(items: Any, where: str) -> tuple[Graph, ...]:
    if not isinstance(items, list):
        raise ReportError(f"{where}: expected a list of graphs")
    out = []
    for i, g in enumerate(items):
        if not isinstance(g, dict) or not isinstance(g.get("mode"), str) or not _is_int(g.get("num_tokens")):
            raise ReportError(f"{where}[{i}]: expected {{mode, num_tokens, num_reqs, query_len}}")
        out.append(
            Graph(g["mode"], g["num_tokens"], _opt_int(g.get("num_reqs")), _opt_int(g.get("query_len")))
        )
    return tuple(out)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _opt_int(v: Any) -> int | None:
    return v if _is_int(v) else None


def _dispatch(rows: Any, unit: str, where: str) -> tuple[DispatchRange, ...]:
    if not isinstance(rows, list):
        raise ReportError(f"{where}: expected a list of ranges")
    out = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not _is_int(r.get(f"from_{unit}")) or not _is_int(r.get(f"to_{unit}")):
            raise ReportError(f"{where}[{i}]: expected from_{unit}/to_{unit}/mode/padded_tokens")
        mode = r.get("mode")
        if mode not in ("FULL", "PIECEWISE", "NONE"):
            raise ReportError(f"{where}[{i}].mode: expected FULL, PIECEWISE or NONE (got {mode!r})")
        out.append(
            DispatchRange(
                r[f"from_{unit}"],
                r[f"to_{unit}"],
                mode,
                _opt_int(r.get("padded_tokens")),
                _opt_int(r.get("padded_reqs")),
            )
        )
    return tuple(out)


def side_from_report(doc: dict[str, Any], label: str) -> Side:
    """A plan JSON or capture report as a comparison side (measured figures for captures).

    Raises:
        ReportError: a field is missing or of the wrong type.
    """
    plan = doc if doc.get("kind", "plan") == "plan" else doc.get("plan")
    if not isinstance(plan, dict):
        raise ReportError(f"{label}: plan: missing (expected the plan the report was made against)")
    try:
        q = int(plan["uniform_decode_query_len"])
        s = int(plan["max_num_seqs"])
        version = str(plan["vllm_version"])
    except (KeyError, TypeError, ValueError) as e:
        raise ReportError(f"{label}: plan: missing or malformed field {e}") from None
    dyn = plan.get("dynamic_sd")
    lookup: tuple[tuple[int, int, int], ...] | None = None
    if isinstance(dyn, dict) and isinstance(dyn.get("lookup"), list):
        try:
            lookup = tuple((int(a), int(b), int(k)) for a, b, k in dyn["lookup"])
        except (TypeError, ValueError):
            raise ReportError(
                f"{label}: dynamic_sd.lookup: expected [first_batch, last_batch, K] rows"
            ) from None
    if doc.get("kind") == "capture":
        m = doc.get("measured")
        if not isinstance(m, dict):
            raise ReportError(f"{label}: measured: missing")
        graphs_raw = m.get("graphs") or []
        families: dict[str, list[Graph]] = {}
        for i, g in enumerate(graphs_raw if isinstance(graphs_raw, list) else []):
            fam = g.get("family") if isinstance(g, dict) else None
            if not isinstance(fam, str):
                raise ReportError(f"{label}: measured.graphs[{i}].family: missing")
            families.setdefault(fam, []).extend(_graph_list([g], f"{label}: measured.graphs[{i}]"))
        uniform_raw = m.get("uniform_decode") or {}
        uniform = {
            int(k): _dispatch(v, "reqs", f"{label}: measured.uniform_decode.{k}")
            for k, v in uniform_raw.items()
        }
        pool = m.get("graph_nvml_total_bytes")
        wall = m.get("capture_wall_s")
        return Side(
            label,
            "capture",
            version,
            doc.get("config_fingerprint"),
            s,
            q,
            {f: tuple(g) for f, g in families.items()},
            uniform,
            lookup,
            pool_bytes=pool if _is_int(pool) else None,
            pool_source="measured" if _is_int(pool) else None,
            capture_time_s=float(wall)
            if isinstance(wall, int | float) and not isinstance(wall, bool)
            else None,
        )
    graphs_raw = plan.get("graphs")
    if not isinstance(graphs_raw, dict):
        raise ReportError(f"{label}: graphs: missing (expected {{family: [graphs]}})")
    graphs = {f: _graph_list(v, f"{label}: graphs.{f}") for f, v in graphs_raw.items()}
    ud_raw = plan.get("uniform_decode")
    if not isinstance(ud_raw, dict):
        raise ReportError(f"{label}: uniform_decode: missing")
    try:
        uniform = {int(k): _dispatch(v, "reqs", f"{label}: uniform_decode.{k}") for k, v in ud_raw.items()}
    except ValueError:
        raise ReportError(f"{label}: uniform_decode: keys must be query lengths") from None
    pred = plan.get("predicted_pool_bytes")
    return Side(
        label,
        "plan",
        version,
        doc.get("config_fingerprint"),
        s,
        q,
        graphs,
        uniform,
        lookup,
        pool_bytes=pred if _is_int(pred) else None,
        pool_source="predicted" if _is_int(pred) else None,
    )
