"""`cgplan verify --json`: vLLM's own code beside cgplan's rules (kind `verify`), and two builds
beside each other (kind `verify-against`)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from cgplan import __version__
from cgplan.core.compare.verify import BuildAnswer, BuildComparison, ConfigChange, Verdict, VerifyReport
from cgplan.io.schema import SCHEMA_VERSION


def answer_to_dict(a: BuildAnswer) -> dict[str, Any]:
    """One build's answer for one config, summarised."""
    if a.refused is not None:
        return {"refused": a.refused}
    return {
        "model_runner": a.model_runner,
        "cudagraph_mode": a.cudagraph_mode,
        "num_capture_sizes": len(a.capture_sizes),
        "capture_sizes": list(a.capture_sizes),
        "max_capture_size": a.max_capture_size,
        "graph_counts": {f: dict(m) for f, m in a.graph_counts.items()},
        "total_graphs": a.total_graphs,
        "gaps": [asdict(g) for g in a.gaps],
        "uniform_decode": {
            q: [
                {"from_reqs": lo, "to_reqs": hi, "mode": mode, "padded_tokens": pad}
                for lo, hi, mode, pad in runs
            ]
            for q, runs in a.decode.items()
        },
    }


def verdict_to_dict(v: Verdict) -> dict[str, Any]:
    """One config's verdict."""
    out: dict[str, Any] = {
        "config": v.config,
        "agree": v.agree,
        "compared": list(v.compared),
        "differing": [asdict(d) for d in v.differing],
        "vllm": None if v.no_answer is not None else answer_to_dict(v.vllm),
        "cgplan_refused": v.cgplan_refused,
        "no_answer": v.no_answer,
        "notes": list(v.notes),
    }
    return out


def _report(r: VerifyReport) -> dict[str, Any]:
    return {
        "python": r.python,
        "vllm_version": r.vllm_version,
        "vllm_location": r.vllm_location,
        "rules_release": r.rules_release,
        "rules_note": r.rules_note,
        "policy": r.policy,
        "agree": r.agree,
        "answered": r.answered,
        "configs": [verdict_to_dict(v) for v in r.verdicts],
        "drift": [asdict(d) for d in r.drift],
        "import_s": round(r.import_s, 1),
        "seconds": [round(s, 1) for s in r.seconds],
        "limits": list(r.limits),
    }


def verify_to_dict(r: VerifyReport) -> dict[str, Any]:
    """`cgplan verify CONFIG... --python PY --json`."""
    return {"schema_version": SCHEMA_VERSION, "kind": "verify", "cgplan_version": __version__, **_report(r)}


def _change(c: ConfigChange) -> dict[str, Any]:
    return {
        "config": c.config,
        "changed": c.changed,
        "no_answer": c.no_answer,
        "before": answer_to_dict(c.before),
        "after": answer_to_dict(c.after),
        "dispatch_changes": [asdict(d) for d in c.dispatch_changes],
        "gaps_opened": [asdict(g) for g in c.gaps_opened],
        "gaps_closed": [asdict(g) for g in c.gaps_closed],
    }


def comparison_to_dict(c: BuildComparison) -> dict[str, Any]:
    """`cgplan verify CONFIG... --python A --against B --json`: the before/after, and each build
    beside cgplan's rules."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "verify-against",
        "cgplan_version": __version__,
        "before": _report(c.before),
        "after": _report(c.after),
        "changes": [_change(x) for x in c.changes],
    }
