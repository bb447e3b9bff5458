"""A capture as JSON: the report `cgplan capture` writes (plan, measured, comparison)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from cgplan.core.compare.measure import (
    Comparison,
    GraphMeasurement,
    MeasuredCapture,
    RankMeasurement,
    summarize,
)
from cgplan.core.model.reports import CaptureReport
from cgplan.core.model.types import Plan
from cgplan.io.schema import SCHEMA_VERSION, graph_key_to_dict, range_to_dict
from cgplan.io.schema.plan import plan_to_dict
from cgplan.io.schema.reports import capture_from_json


def rank_to_dict(r: RankMeasurement) -> dict[str, Any]:
    """One rank of a tensor-parallel capture, as JSON."""
    return {
        "rank": r.rank,
        "local_rank": r.local_rank,
        "device_name": r.device_name,
        "nvml_index": r.nvml_index,
        "graphs": graph_measurements_to_list(r.graphs),
        "capture_wall_s": r.capture_wall_s,
        "capture_nvml_delta_bytes": r.capture_nvml_delta_bytes,
        "graph_nvml_total_bytes": r.graph_nvml_total_bytes,
        "graph_torch_reserved_total_bytes": sum(g.torch_reserved_delta_bytes for g in r.graphs),
    }


def measured_to_dict(m: MeasuredCapture) -> dict[str, Any]:
    """The measured part of a capture report (`ranks` only when the engine ran workers, so
    single-process reports keep their exact shape)."""
    out = _measured_dict(m)
    if m.ranks:
        out["ranks"] = [rank_to_dict(r) for r in m.ranks]
    return out


def graph_measurements_to_list(graphs: tuple[GraphMeasurement, ...]) -> list[dict[str, Any]]:
    """Measured graphs as JSON; `num_active_loras` only when a graph was captured with LoRA
    adapters (as in the plan's graphs), so captures without LoRA keep their shape."""
    rows = [asdict(g) for g in graphs]
    if not any(g.num_active_loras for g in graphs):
        for row in rows:
            del row["num_active_loras"]
    return rows


def _measured_dict(m: MeasuredCapture) -> dict[str, Any]:
    return {
        "backend": m.backend,
        "model_runner": m.model_runner,
        "cudagraph_mode": m.cudagraph_mode,
        "capture_sizes": list(m.capture_sizes),
        "max_capture_size": m.max_capture_size,
        "graphs": graph_measurements_to_list(m.graphs),
        "uniform_decode": {
            str(ql): [range_to_dict(x, "reqs") for x in r] for ql, r in sorted(m.uniform_decode.items())
        },
        "mixed": [range_to_dict(r, "tokens") for r in m.mixed],
        # the probe with one active LoRA adapter, named as the plan's table is
        **(
            {
                "uniform_decode_lora1": {
                    str(ql): [range_to_dict(x, "reqs") for x in r]
                    for ql, r in sorted(m.uniform_decode_lora.items())
                }
            }
            if m.uniform_decode_lora
            else {}
        ),
        "capture_wall_s": m.capture_wall_s,
        "capture_nvml_delta_bytes": m.capture_nvml_delta_bytes,
        "instrumentation_s": m.instrumentation_s,
        "instrumentation_nvml_s": m.instrumentation_nvml_s,
        "graph_nvml_total_bytes": sum(g.nvml_delta_bytes or 0 for g in m.graphs),
        "graph_torch_reserved_total_bytes": sum(g.torch_reserved_delta_bytes for g in m.graphs),
        "vllm": asdict(m.vllm),
    }


def comparison_to_dict(c: Comparison) -> dict[str, Any]:
    """Plan vs measured, as JSON."""

    return {
        "matches": c.matches,
        "graphs": [
            {
                "family": d.family,
                "matched": d.matched,
                "missing": [graph_key_to_dict(x) for x in d.missing],
                "unexpected": [graph_key_to_dict(x) for x in d.unexpected],
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
) -> CaptureReport:
    """The whole capture report (its JSON is `reports.to_json` of it: the document built here)."""
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
    doc = {
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
    return capture_from_json(doc, source, check=False)
