"""The library entry point behind `cgplan gate` and scripts/cgplan-gate."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cgplan.api.plan import plan_file
from cgplan.api.sides import is_report, load_side
from cgplan.core.compare.gate import DEFAULT_POLICY, GatePolicy, GateResult, evaluate_gate
from cgplan.core.model.predictions import FixLatency, LatencyPrediction
from cgplan.core.model.types import Fix
from cgplan.errors import CgplanError, ReportError
from cgplan.io.config import STDIN, Overrides, key_lines
from cgplan.io.policies import load_policy


def gate_targets(
    targets: list[Path],
    policy_path: Path | None,
    baseline: Path | None,
    vllm_version: str | None,
    model_config: Path | None = None,
    *,
    allow_partial_baseline: bool = False,
    notes: list[str] | None = None,
    platform: str | None = None,
    model_runner: str | None = None,
    strict: bool = False,
) -> tuple[list[GateResult], GatePolicy]:
    """Evaluate every target (config or report) against the policy (and the baseline);
    `model_config` is the shape for configs whose `model:` is a hub id.

    Raises:
        ReportError: the baseline is a partial or failed capture (unless allowed): what it
            lacks would make every regression check against it hold for nothing.
    """
    policy = load_policy(policy_path) if policy_path is not None else DEFAULT_POLICY
    overrides = Overrides(vllm_version, platform, model_runner, model_config, strict)
    compared = baseline is not None  # then every report must say which config it describes
    base = (
        load_side(baseline, overrides, require_fingerprint=True, notes=notes)
        if baseline is not None
        else None
    )
    if base is not None and base.status != "complete" and not allow_partial_baseline:
        why = f" ({base.failure})" if base.failure else ""
        raise ReportError(
            f"{baseline}:status: the baseline is a {base.status} capture{why}; give a complete "
            "one, or --allow-partial-baseline to compare against what it has"
        )
    results = [
        evaluate_gate(
            policy,
            load_side(
                t, overrides, STDIN if str(t) == "-" else None, require_fingerprint=compared, notes=notes
            ),
            base,
        )
        for t in targets
    ]
    limit = policy.max_eager_time_share
    return [_with_fix(r, t, overrides, limit) for r, t in zip(results, targets, strict=True)], policy


_FIXABLE = ("no_eager_uniform_decode", "no_piecewise_uniform_decode", "widest_decode_full")


def _with_fix(
    result: GateResult, target: Path, overrides: Overrides, policy_limit: float | None = None
) -> GateResult:
    """A failed coverage check of a config names the flag that closes it (planned again, with the
    fix search, only when such a check failed: the gate itself plans without it)."""
    failed = [c for c in result.checks if c.name in _FIXABLE and not c.passed and not c.skipped]
    eager_time = [
        c for c in result.checks if c.name == "max_eager_time_share" and not c.passed and not c.skipped
    ]
    if not (failed or eager_time) or is_report(target):
        return result
    try:
        _, plan = plan_file(target, overrides)
    except CgplanError:
        return result
    if not plan.fixes:
        return result
    fix = plan.fixes[0]
    timed = {f.fix: f for f in plan.latency.fixes} if plan.latency is not None else {}
    hint = f"; fix: {' '.join(fix.flags)}" + _deltas(fix, timed.get(0), plan.latency)
    # The eager time share falls with the gaps a fix closes: name the fix there only when the
    # re-planned share is within the policy's limit.
    if eager_time and 0 in timed and policy_limit is not None and timed[0].eager_share_after <= policy_limit:
        failed += eager_time
        eager_hint = (
            f"; fix: {' '.join(fix.flags)} ({timed[0].eager_share_after:.1%} eager after it{_in_yaml(fix)})"
        )
    else:
        eager_hint = ""
    checks = tuple(
        dataclasses.replace(c, detail=c.detail + (eager_hint if c in eager_time else hint))
        if c in failed
        else c
        for c in result.checks
    )
    return dataclasses.replace(result, checks=checks, fix=fix, fix_timing=timed.get(0))


def _deltas(fix: Fix, timing: FixLatency | None, latency: LatencyPrediction | None) -> str:
    """` (graphs 178 → 177, predicted 296 → 297 MiB, expected step 3.02 → 2.88 ms)`: what the fix
    changes, with the gaps it leaves open."""
    parts = [f"graphs {fix.graphs_before} → {fix.graphs_after}"]
    if fix.pool_before_mib is not None and fix.pool_after_mib is not None:
        parts.append(f"predicted {fix.pool_before_mib:,.0f} → {fix.pool_after_mib:,.0f} MiB")
    if timing is not None and latency is not None:
        parts.append(f"expected step {latency.expected_step_ms:.2f} → {timing.expected_step_ms_after:.2f} ms")
    if fix.remaining_gaps:
        parts.append(f"{fix.remaining_gaps} gap(s) left")
    return f" ({', '.join(parts)}{_in_yaml(fix)})"


def _in_yaml(fix: Fix) -> str:
    """`; in the YAML: max_cudagraph_capture_size: 544`: a YAML target's fix as the lines to paste
    into it (issue 28), empty for a command line."""
    return f"; in the YAML: {'; '.join(fix.config_lines)}" if fix.config_lines else ""


_LINE_KEYS: dict[str, tuple[str, ...]] = {
    "no_regression": (
        "speculative_config.num_speculative_tokens_per_batch_size",
        "speculative_config.num_speculative_tokens",
        "speculative_config",
        "compilation_config",
        "max_num_seqs",
    ),
    "max_graph_growth_pct": (
        "compilation_config.cudagraph_capture_sizes",
        "compilation_config",
        "max_num_seqs",
    ),
    "max_graphs_per_family": (
        "compilation_config.cudagraph_capture_sizes",
        "compilation_config",
        "max_num_seqs",
    ),
    "max_total_graphs": ("compilation_config.cudagraph_capture_sizes", "compilation_config", "max_num_seqs"),
}
_COVERAGE_KEYS = (
    "compilation_config.max_cudagraph_capture_size",
    "compilation_config.cudagraph_capture_sizes",
    "compilation_config.cudagraph_mode",
    "compilation_config",
    "speculative_config.num_speculative_tokens",
    "max_num_seqs",
)
"""Where a coverage gap's cause usually sits in a config (after the fix's own keys)."""


def annotation_line(target: Path, check: str, fix: Fix | None = None) -> int:
    """The line of `target` (a config YAML) a failed check points at: the key the fix changes,
    else the key the check is about, else line 1 (reports, standard input, unreadable files)."""
    if str(target) == "-" or target.suffix == ".json":
        return 1
    try:
        lines = key_lines(target.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return 1
    base = check.split("[", 1)[0]
    coverage = base in (*_FIXABLE, "max_eager_time_share")
    wanted = [k for k, _ in fix.config_change] if fix is not None and coverage else []
    wanted += _LINE_KEYS.get(base, _COVERAGE_KEYS if coverage else ())
    # a key the file sets, else the section it would go in
    found = [lines[k] for k in wanted if k in lines] or [
        lines[k.split(".")[0]] for k in wanted if k.split(".")[0] in lines
    ]
    return found[0] if found else 1
