"""Diff results as JSON (`cgplan diff --json`, and the document its HTML page draws)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from cgplan.core.compare.diff import Diff, TierPadding, shared_gaps, size_changes
from cgplan.core.compare.memory import compare_memory
from cgplan.io.schema import SCHEMA_VERSION, graph_key_to_dict


def diff_to_dict(d: Diff) -> dict[str, Any]:
    """The diff as JSON."""

    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "diff",
        "a": {
            "label": d.a.label,
            "kind": d.a.kind,
            "vllm_version": d.a.vllm_version,
            "fingerprint": d.a.fingerprint,
            "rejected": d.a.rejected,
            "status": d.a.status,
            "failure": d.a.failure,
        },
        "b": {
            "label": d.b.label,
            "kind": d.b.kind,
            "vllm_version": d.b.vllm_version,
            "fingerprint": d.b.fingerprint,
            "rejected": d.b.rejected,
            "status": d.b.status,
            "failure": d.b.failure,
        },
        "fingerprints_match": d.fingerprints_match,
        "unchanged": d.unchanged,
        "graphs": [
            {
                "family": f.family,
                "mode": f.mode,
                "count_a": f.count_a,
                "count_b": f.count_b,
                "added": [graph_key_to_dict(x) for x in f.added],
                "removed": [graph_key_to_dict(x) for x in f.removed],
            }
            for f in d.families
        ],
        "coverage_moves": [asdict(m) for m in d.moves],
        "padding": [
            {
                **asdict(p),
                "ratio_a": TierPadding.ratio(p.padded_a, p.real_a),
                "ratio_b": TierPadding.ratio(p.padded_b, p.real_b),
            }
            for p in d.padding
        ],
        "pool_bytes": {
            "a": d.a.pool_bytes,
            "b": d.b.pool_bytes,
            "source_a": d.a.pool_source,
            "source_b": d.b.pool_source,
        },
        "memory": _memory_dict(d),
        "uniform_decode": {"a": _coverage(d.a), "b": _coverage(d.b)},
        "model_runner": {"a": d.a.model_runner, "b": d.b.model_runner},
        "size_changes": size_changes(d),
        "shared_gaps": [
            {"query_len": ql, "from_reqs": a, "to_reqs": b, "mode": m} for ql, a, b, m in shared_gaps(d)
        ],
        "capture_time_s": {"a": d.a.capture_time_s, "b": d.b.capture_time_s},
        "expected_step_ms": {
            "a": _round(d.a.expected_step_ms),
            "b": _round(d.b.expected_step_ms),
            "change": _round(_change(d.a.expected_step_ms, d.b.expected_step_ms)),
        },
        "eager_time_share": {"a": _round(d.a.eager_time_share), "b": _round(d.b.eager_time_share)},
    }


def _coverage(side: Any) -> dict[str, Any]:
    """Per tier: its request-count runs and its dispatch rows (what the HTML chart draws)."""
    out: dict[str, Any] = {}
    if side.rejected:
        return out
    for ql in side.query_lens:
        out[str(ql)] = {
            "batches": [list(b) for b in side.tier_batches(ql)],
            "rows": [
                {"from_reqs": r.first, "to_reqs": r.last, "mode": r.mode, "padded_tokens": r.padded_tokens}
                for r in side.uniform_decode.get(ql, ())
            ],
        }
    return out


def _memory_dict(d: Diff) -> dict[str, Any]:
    m = compare_memory(d.a, d.b)
    return {
        "definition": "capture phase per rank (warmups included), as vLLM's 'took X GiB'",
        "a_mib": None if m.a_mib is None else round(m.a_mib, 1),
        "b_mib": None if m.b_mib is None else round(m.b_mib, 1),
        "source_a": m.a_source,
        "source_b": m.b_source,
        "measured_over_predicted": None
        if m.measured_over_predicted is None
        else round(m.measured_over_predicted, 4),
        "band": None if m.band is None else [round(x, 4) for x in m.band],
        "within_band": m.within_band,
        "caveats": list(m.caveats),
        "withheld": {"a": m.a_withheld, "b": m.b_withheld},
        "detail_graph_sections_mib": {
            "a": None if m.a_sections_mib is None else round(m.a_sections_mib, 1),
            "b": None if m.b_sections_mib is None else round(m.b_sections_mib, 1),
        },
        "text": m.text(),
        "kv_tokens": m.kv_tokens,
        "vllm_kv_cache_tokens": m.vllm_kv_cache_tokens,
        "kv_text": m.kv_text(),
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _change(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a
