"""The plan as JSON: `cgplan plan --json`, and the `plan` of every report."""

from __future__ import annotations

from typing import Any

from cgplan import __version__
from cgplan.core.model.predictions import CostPrediction, LatencyPrediction
from cgplan.core.model.types import Fix, Graph, Plan, StepPadding
from cgplan.core.plan.gaps import config_yaml, graph_count, padding_tokens, step_padding
from cgplan.io.schema import SCHEMA_VERSION, range_to_dict


def _padding(p: StepPadding | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        "worst_pct": p.worst_pct,
        "worst_reqs": p.worst_reqs,
        "worst_query_len": p.worst_query_len,
        "mean_pct": p.mean_pct,
        "replayed_batches": p.replayed_batches,
    }


def cost_to_dict(c: CostPrediction | None) -> dict[str, Any] | None:
    """The cost model's prediction as JSON (None when no coefficients were used)."""
    if c is None:
        return None
    figure = c.domain.figure
    return {
        "gpu": c.gpu,
        # outside the domain where the model has no term (MoE/MLA, unmeasured attention): no figure
        "total_mib": round(c.total_mib, 1) if figure else None,
        "low_mib": round(c.low_mib, 1) if figure else None,
        "high_mib": round(c.high_mib, 1) if figure else None,
        "domain": {
            "fitted": c.domain.fitted,
            "inside": c.domain.inside,
            "outside": list(c.domain.outside),
            "band_factor": c.domain.band_factor,
            "figure": figure,
        },
        # no figure: none of its parts either (the table prints none; JSON gave the sections)
        "warmup_mib": round(c.warmup_mib, 1) if figure else None,
        "capture_s": round(c.capture_s, 2) if figure else None,
        "capture_low_s": round(c.capture_band_s[0], 2) if figure and c.capture_band_s else None,
        "capture_high_s": round(c.capture_band_s[1], 2) if figure and c.capture_band_s else None,
        "by_family_mode": [
            {
                "family": fm.family,
                "mode": fm.mode,
                "graphs": fm.graphs,
                "pool_mib": round(fm.pool_mib, 1) if figure else None,
                "graph_state_mib": round(fm.exec_mib, 1) if figure else None,
            }
            for fm in c.by_family_mode
        ],
        "caveats": list(c.caveats),
    }


def latency_to_dict(lat: LatencyPrediction | None) -> dict[str, Any] | None:
    """The latency model's prediction as JSON (None when no coefficients were used)."""
    if lat is None:
        return None
    return {
        "gpu": lat.gpu,
        "traffic": lat.traffic,
        "expected_step_ms": round(lat.expected_step_ms, 4),
        "expected_eager_share": round(lat.expected_eager_share, 4),
        "expected_tokens_per_s": round(lat.expected_tokens_per_s, 1),
        "widest_step_ms": round(lat.widest_step_ms, 4),
        "widest_graph_step_ms": round(lat.widest_graph_step_ms, 4),
        "widest_eager_step_ms": round(lat.widest_eager_step_ms, 4),
        "eager_graph_ratio": round(lat.eager_graph_ratio, 4),
        "gaps": [
            {
                "gap": g.gap,
                "widest_batch": g.widest_batch,
                "step_ms": round(g.step_ms, 4),
                "graph_step_ms": round(g.graph_step_ms, 4),
                "cost_ms_per_step": round(g.cost_ms_per_step, 4),
                "tokens_per_s": round(g.tokens_per_s, 1),
                "graph_tokens_per_s": round(g.graph_tokens_per_s, 1),
                "expected_cost_ms_per_step": round(g.expected_cost_ms_per_step, 5),
                "share_of_expected_step": round(g.share, 5),
                "worth_closing": g.worth_closing,
                "verdict": g.verdict,
            }
            for g in lat.gaps
        ],
        "fixes": [
            {
                "fix": f.fix,
                "expected_step_ms_after": round(f.expected_step_ms_after, 4),
                "gain_ms_per_step": round(f.gain_ms_per_step, 5),
                "widest_gap_gain_ms": round(f.widest_gap_gain_ms, 4),
            }
            for f in lat.fixes
        ],
        "caveats": list(lat.caveats),
        "extrapolated": list(lat.extrapolated),
        "fix_order": lat.fix_order,
        "fixes_not_offered": [
            {
                "flags": list(f.flags),
                "expected_step_ms_after": round(f.expected_step_ms_after, 4),
                "gain_ms_per_step": round(f.gain_ms_per_step, 5),
                "why": "predicted slower than leaving the gaps",
            }
            for f in lat.not_offered
        ],
    }


def _graph(g: Graph, loras: bool, ubatches: bool, per_k: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "mode": g.mode,
        "num_tokens": g.num_tokens,
        "num_reqs": g.num_reqs,
        "query_len": g.query_len,
    }
    if loras:
        out["num_active_loras"] = g.num_active_loras
    if ubatches:
        out["num_ubatches"] = g.num_ubatches
    if per_k:
        out["num_speculative_tokens"] = g.num_speculative_tokens
    return out


def plan_to_dict(
    plan: Plan,
    *,
    source: str | None = None,
    ignored_keys: tuple[str, ...] = (),
    fingerprint: str | None = None,
    unmodelled: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The plan as the JSON contract's dict (sorted keys when dumped)."""
    # LoRA, microbatch and per-K keys only in plans that have such graphs (others keep their shape)
    every = [g for gs in plan.graphs.values() for g in gs]
    loras = any(g.num_active_loras for g in every)
    ubatches = any(g.num_ubatches != 1 for g in every)
    per_k = any(g.num_speculative_tokens is not None for g in every)
    counts = {
        family: {
            "PIECEWISE": sum(1 for g in graphs if g.mode == "PIECEWISE"),
            "FULL": sum(1 for g in graphs if g.mode == "FULL"),
        }
        for family, graphs in plan.graphs.items()
    }
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "plan",
        "cgplan_version": __version__,
        "source": source,
        "config_fingerprint": fingerprint,
        "vllm_version": plan.vllm_version,
        "platform": plan.platform,
        "model_runner": plan.model_runner,
        "attention_backend": plan.attention_backend,
        "attention_cudagraph_support": plan.attention_cudagraph_support,
        "requested_cudagraph_mode": plan.requested_cudagraph_mode,
        "cudagraph_mode": plan.cudagraph_mode,
        "capture_sizes": list(plan.capture_sizes),
        "max_capture_size": plan.max_capture_size,
        "uniform_decode_query_len": plan.uniform_decode_query_len,
        "max_num_seqs": plan.max_num_seqs,
        "max_num_batched_tokens": plan.max_num_batched_tokens,
        "dynamic_sd": None
        if plan.dynamic_sd_lookup is None
        else {"lookup": [list(r) for r in plan.dynamic_sd_lookup]},
        "graphs": {
            family: [_graph(g, loras, ubatches, per_k) for g in graphs]
            for family, graphs in plan.graphs.items()
        },
        "graph_counts": counts,
        "total_graphs": graph_count(plan),
        "piecewise_pieces_per_graph": plan.piecewise_pieces_per_graph,
        "predicted_cost": cost_to_dict(plan.cost),
        "predicted_pool_bytes": round(plan.cost.total_mib * (1 << 20))
        if plan.cost and plan.cost.domain.figure
        else None,
        "predicted_latency": latency_to_dict(plan.latency),
        **({"latency_withheld": list(plan.latency_withheld)} if plan.latency_withheld else {}),
        "uniform_decode": {
            str(ql): [range_to_dict(r, "reqs") for r in ranges]
            for ql, ranges in sorted(plan.uniform_decode.items())
        },
        "mixed": [range_to_dict(r, "tokens") for r in plan.mixed],
        **(
            {
                "uniform_decode_lora1": {
                    str(ql): [range_to_dict(r, "reqs") for r in ranges]
                    for ql, ranges in sorted(plan.uniform_decode_lora.items())
                }
            }
            if plan.uniform_decode_lora
            else {}
        ),
        "decode_padding_tokens": padding_tokens(plan),
        "step_padding": _padding(step_padding(plan)),
        "assumed": [{"key": a.key, "value": a.value, "origin": a.origin} for a in plan.assumed],
        "piecewise_pieces": dict(plan.piecewise_pieces),
        **(
            {"compilation_mode": plan.compilation_mode, "breakable_cudagraphs": plan.breakable_cudagraphs}
            if plan.compilation_mode != "VLLM_COMPILE" or plan.breakable_cudagraphs
            else {}
        ),
        "kv_cache": {
            "bytes_per_token": plan.kv_bytes_per_token,
            **({} if plan.graph_memory_reserved else {"graph_memory_reserved": False}),
            "graph_memory_tokens": None
            if plan.kv_bytes_per_token is None
            or plan.cost is None
            or not plan.cost.graphs
            or not plan.graph_memory_reserved
            else int(plan.cost.total_mib * (1 << 20) // plan.kv_bytes_per_token),
            **({"withheld": plan.kv_withheld} if plan.kv_withheld else {}),
        },
        "gaps": [
            {
                "family": g.family,
                "query_len": g.query_len,
                "from_reqs": g.first,
                "to_reqs": g.last,
                "from_tokens": g.first * (g.query_len or 1),
                "to_tokens": g.last * (g.query_len or 1),
                "mode": g.mode,
                "outcome": "EAGER" if g.mode == "NONE" else g.mode,
                "reason": g.reason,
            }
            for g in plan.gaps
        ],
        "fixes": [fix_to_dict(f) for f in plan.fixes],
        "notes": [{"kind": n.kind, "message": n.message} for n in plan.notes],
        "ignored_keys": list(ignored_keys),
        # flags planned without (cgplan does not model them), only where there are some
        **({"unmodelled": list(unmodelled)} if unmodelled else {}),
    }


def fix_to_dict(f: Fix) -> dict[str, Any]:
    """One fix as JSON (a plan's `fixes`, the gate's `fix`): its flags, the same change as config
    keys and as YAML lines, and what it changes (graphs, memory, capture time, padding)."""
    return {
        "flags": list(f.flags),
        "config_change": dict(f.config_change),
        "closes_gaps": list(f.closes),
        "remaining_gaps": f.remaining_gaps,
        "graphs_before": f.graphs_before,
        "graphs_after": f.graphs_after,
        "num_capture_sizes_after": f.num_capture_sizes_after,
        "decode_padding_before_tokens": f.padding_before_tokens,
        "decode_padding_after_tokens": f.padding_after_tokens,
        "summary": f.summary,
        "command_line": f.command_line,
        "yaml": list(config_yaml(f.config_change)),
        "argv": [list(words) for words in f.argv],
        "changes": list(f.changes),
        "complete": f.complete,
        "still_open": f.still_open,
        "predicted_mib_before": f.pool_before_mib,
        "predicted_mib_after": f.pool_after_mib,
        "delta_predicted_mib": None
        if f.pool_after_mib is None or f.pool_before_mib is None
        else round(f.pool_after_mib - f.pool_before_mib, 1),
        "predicted_mib_after_band": None
        if f.pool_after_band_mib is None
        else [round(f.pool_after_band_mib[0], 1), round(f.pool_after_band_mib[1], 1)],
        "predicted_mib_after_outside_domain": list(f.pool_after_outside),
        "capture_s_before": f.capture_before_s,
        "capture_s_after": f.capture_after_s,
        "delta_capture_s": None
        if f.capture_after_s is None or f.capture_before_s is None
        else round(f.capture_after_s - f.capture_before_s, 2),
        "delta_graphs": f.graphs_after - f.graphs_before,
        "step_padding_after": _padding(f.step_padding_after),
        "over_budget": list(f.over_budget),
        # the change as lines of the YAML planned, spelled as the file spells it (issue 28)
        **({"config_lines": list(f.config_lines)} if f.config_lines else {}),
    }
