"""A parsed log and its checks as JSON (`cgplan logs --json`)."""

from __future__ import annotations

from typing import Any

from cgplan import __version__
from cgplan.core.logs.check import Comparison, LogPlan, jsonable
from cgplan.core.logs.parse import ParsedLog
from cgplan.core.logs.plugin import PluginLog, StepCounts, counts_document
from cgplan.io.schema import SCHEMA_VERSION

FIGURE_FIELDS = (
    "capture_finished_secs",
    "capture_took_gib",
    "estimated_cudagraph_gib",
    "actual_vs_estimated",
    "kv_cache_tokens",
    "available_kv_cache_gib",
)
"""vLLM's own figures, named as in a capture report's `measured.vllm`."""


def own_plan_to_dict(own: LogPlan) -> dict[str, Any]:
    """`cgplan logs LOG` without --config: the plan of the log's own engine arguments (its gaps
    and fixes only where it agrees with every figure the log states)."""
    from cgplan.io.schema.plan import plan_to_dict

    comparison = own.comparison
    return {
        "config": comparison.config if comparison else None,
        "vllm_version": comparison.vllm_version if comparison else None,
        "not_planned": own.not_planned,
        "assumed": list(own.assumed),
        "left_out": list(own.left_out),
        "agrees_with_log": own.trusted,
        "checks": []
        if comparison is None
        else [
            {"name": c.name, "log": c.log, "plan": c.plan, "agrees": c.agrees, "detail": c.detail}
            for c in comparison.checks
        ],
        "plan": plan_to_dict(own.plan, source=comparison.config)
        if own.trusted and own.plan and comparison
        else None,
    }


def plugin_to_dict(plugin: PluginLog) -> dict[str, Any]:
    """The plugin's lines of a log: its start-up block, and its last counters (or None)."""
    return {
        "startup": list(plugin.startup),
        "counters_lines": plugin.counters_lines,
        "counts": None if plugin.counts is None else counts_document(plugin.counts),
    }


def metrics_to_dict(source: str, counts: StepCounts) -> dict[str, Any]:
    """`cgplan logs METRICS --json` of a Prometheus text (kind "plugin_metrics")."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "plugin_metrics",
        "cgplan_version": __version__,
        "source": source,
        "mixed_exact": counts.mixed_exact,
        "counts": counts_document(counts),
    }


def logs_to_dict(
    parsed: ParsedLog,
    comparison: Comparison | None = None,
    own: LogPlan | None = None,
    plugin: PluginLog | None = None,
) -> dict[str, Any]:
    """The JSON document of `cgplan logs --json` (schema_version 1, kind "logs"; `plugin`: only
    where the log holds the plugin's lines)."""
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": "logs",
        "cgplan_version": __version__,
        "source": parsed.source,
        "log_format": parsed.log_format,
        "vllm_version": parsed.vllm_version,
        "engine_starts": parsed.engine_starts,
        "model_runner": parsed.model_runner,
        "model_runner_evidence": list(parsed.model_runner_evidence),
        "speculative": None
        if parsed.speculative_method is None
        else {
            "method": parsed.speculative_method,
            "num_speculative_tokens": parsed.num_speculative_tokens,
            "num_speculative_tokens_per_batch_size": jsonable(parsed.dynamic_sd_schedule),
        },
        "max_num_seqs": parsed.max_num_seqs,
        "max_num_batched_tokens": parsed.max_num_batched_tokens,
        "tensor_parallel_size": parsed.tensor_parallel_size,
        "enforce_eager": parsed.enforce_eager,
        "engine_config": {
            "cudagraph_mode": parsed.cudagraph_mode,
            "cudagraph_capture_sizes": jsonable(parsed.capture_sizes),
            "max_cudagraph_capture_size": parsed.max_capture_size,
            "compilation_mode": parsed.compilation_mode,
        },
        "cudagraph_mode": parsed.final_cudagraph_mode,
        "events": [
            {"kind": e.kind, "message": e.message, "values": {k: jsonable(v) for k, v in e.values}}
            for e in parsed.events
        ],
        "profiling": None
        if parsed.profiling is None
        else {mode: {"graphs": n, "largest_tokens": t} for mode, n, t in parsed.profiling},
        "profiling_capture": None
        if parsed.profiling_capture is None
        else {"secs": parsed.profiling_capture[0], "took_gib": parsed.profiling_capture[1]},
        "figures": {name: getattr(parsed, name) for name in FIGURE_FIELDS},
        "pool_memory": None
        if parsed.pool_actual_gib is None
        else {
            "actual_gib": parsed.pool_actual_gib,
            "estimated_gib": parsed.pool_estimated_gib,
            "difference_gib": parsed.pool_difference_gib,
            "difference_pct": parsed.pool_difference_pct,
        },
        "capture_status": parsed.capture_status,
        "last_capture_activity": parsed.last_capture_activity,
        "engine_ready": parsed.engine_ready,
        "progress_bars": [
            {
                "desc": b.desc,
                "manager": b.manager,
                "mode": b.mode,
                "done": b.done,
                "total": b.total,
                "phase": b.phase,
            }
            for b in parsed.bars
        ],
        "graphs": {
            manager: {mode: sum(totals) for mode, totals in modes.items()}
            for manager, modes in parsed.graph_counts().items()
        }
        or None,
        "cudagraph_metrics": [
            {
                "mode": t.mode,
                "capture_sizes": jsonable(t.capture_sizes),
                "rows": [
                    {
                        "unpadded_tokens": r.unpadded_tokens,
                        "padded_tokens": r.padded_tokens,
                        "num_paddings": r.num_paddings,
                        "runtime_mode": r.runtime_mode,
                        "count": r.count,
                    }
                    for r in t.rows
                ],
            }
            for t in parsed.metrics
        ],
        "negative_memory": list(parsed.negative_memory),
        "comparison": None,
        "own_plan": None if own is None else own_plan_to_dict(own),
    }
    if plugin is not None:
        doc["plugin"] = plugin_to_dict(plugin)
    if comparison is not None:
        doc["comparison"] = {
            "config": comparison.config,
            "vllm_version": comparison.vllm_version,
            "notes": list(comparison.notes),
            "plan_refused": comparison.refused,
            "agrees": comparison.agrees,
            "checks": [
                {"name": c.name, "log": c.log, "plan": c.plan, "agrees": c.agrees, "detail": c.detail}
                for c in comparison.checks
            ],
            "disagreements": [c.name for c in comparison.disagreements],
        }
    return doc
