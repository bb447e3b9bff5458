"""`cgplan sweep` as a library: the `--set` axes (read by `cgplan.io.sweep_axes`) planned under
each release by the core sweep, its walk bounded first."""

from __future__ import annotations

import bisect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cgplan.core.compare.sweep import MAX_SWEEP_POINTS, SweepResult, sweep
from cgplan.core.model.spec import PlanInput
from cgplan.errors import ConfigError
from cgplan.io.config import (
    MAX_LADDER_TOKENS,
    Overrides,
    ladder_sizes_at_most,
    load_config,
    resolve_vllm_version,
)
from cgplan.io.policies import load_capture_policy
from cgplan.io.sweep_axes import parse_set

MAX_SWEEP_REQUESTS = 100_000_000
"""Bound on the request counts a sweep walks, summed over its plans: every plan walks each
request count 1..max_num_seqs once or more (the dynamic-SD lookup, the per-request decode
outcomes), about 0.5 µs each: 100 dynamic-SD plans at max_num_seqs 10^6 (10^8) take 45 s, within
the 60 s every accepted input must plan in (issue 20). The core's 200,000-plan cap alone does not
bound time."""
MAX_SWEEP_SIZES = 2_500_000
"""Bound on the capture sizes a sweep plans, summed over its plans, each plan counted as at
least SWEEP_PLAN_SIZES: planning costs 10 to 18 µs per size (500 plans of 530 sizes: 3 s; 4 of
62,500: 4.5 s), and a plan of a default ladder about 1.3 ms, so this is about 30 to 45 s of CPU.
200,000 plans of default ladders took 132 s (benchmarks/results/bounds.json)."""
SWEEP_PLAN_SIZES = 125
"""What one plan costs however short its ladder, in capture sizes (1.3 ms at ~10 µs a size)."""


def _check_walk(seqs: int, tokens: int, axes: list[tuple[str, list[Any]]], releases: int) -> None:
    """Refuse a sweep whose plans would walk more than MAX_SWEEP_REQUESTS request counts.

    A point with max_num_batched_tokens < max_num_seqs is refused by vLLM at once and walks
    nothing. Grids over the core's plan limit are left to the core. The grid is counted as
    the core walks it: every axis multiplies the plans, and an axis given twice is walked as
    the product of both, the later one's value winning at each point (the setters apply in
    axis order), so `dict(axes)` holds the values that are planned.
    """
    values = dict(axes)
    plans = releases
    for _, v in axes:
        plans *= len(v)
    if plans > MAX_SWEEP_POINTS:
        return
    s_values = values.get("max_num_seqs", [seqs])
    b_values = sorted(values.get("max_num_batched_tokens", [tokens]))
    others = plans // (len(s_values) * len(b_values))
    walked = others * sum(s * (len(b_values) - bisect.bisect_left(b_values, s)) for s in s_values)
    if walked > MAX_SWEEP_REQUESTS:
        raise ConfigError(
            "--set",
            f"{plans:,} plans walking {walked:,} request counts in all; at most "
            f"{MAX_SWEEP_REQUESTS:,} per sweep (take a coarser STEP, e.g. max_num_seqs=8..2048:8, "
            "smaller max_num_seqs values, or fewer releases)",
        )


def _check_ladders(inp: PlanInput, axes: list[tuple[str, list[Any]]], releases: int) -> None:
    """Refuse a sweep whose plans hold more than MAX_SWEEP_SIZES capture sizes in all, or a point
    whose ladder is over the config bound (MAX_LADDER_TOKENS): a ladder's length follows from its
    max capture size and max_num_batched_tokens, known before anything is planned."""
    values = dict(axes)
    plans = releases
    for _, v in axes:
        plans *= len(v)
    if plans > MAX_SWEEP_POINTS:
        return  # the core refuses it, naming its own limit
    max_key = "compilation_config.max_cudagraph_capture_size"
    maxes = values.get(max_key, [inp.max_cudagraph_capture_size])
    mbts = values.get("max_num_batched_tokens", [inp.max_num_batched_tokens])
    per_pair = 0
    for m in maxes:
        for b in mbts:
            if inp.cudagraph_capture_sizes is not None:
                sizes = len(inp.cudagraph_capture_sizes)
            elif m in (None, 0):  # vLLM infers a max of at most 1,024 tokens
                sizes = ladder_sizes_at_most(min(1024, b))
            else:
                tokens = min(m, b)
                if tokens > MAX_LADDER_TOKENS:
                    raise ConfigError(
                        "--set",
                        f"{max_key}={m} with max_num_batched_tokens={b}: a ladder up to {tokens:,} tokens "
                        f"holds about {ladder_sizes_at_most(tokens):,} capture sizes; at most "
                        f"{MAX_LADDER_TOKENS:,} tokens per plan",
                    )
                sizes = ladder_sizes_at_most(tokens)
            per_pair += max(SWEEP_PLAN_SIZES, sizes)
    total = per_pair * (plans // (len(maxes) * len(mbts)))
    if total > MAX_SWEEP_SIZES:
        raise ConfigError(
            "--set",
            f"{plans:,} plans of about {total:,} capture sizes in all (a plan counted as at least "
            f"{SWEEP_PLAN_SIZES}); at most {MAX_SWEEP_SIZES:,} per sweep (take a coarser STEP, "
            "smaller capture sizes, or fewer releases)",
        )


def sweep_config(
    path: Path,
    sets: list[str],
    versions: list[str],
    policy: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    model_config: Path | None = None,
    platform: str | None = None,
    model_runner: str | None = None,
) -> SweepResult:
    """Sweep `path` over the `--set` axes under each release (default: the config's)."""
    if not sets:
        raise ConfigError("--set", "give at least one axis, e.g. --set max_num_seqs=8..2048")
    # Read as plan and diff read a release (0.33, v0.33.0, a patch release 0.33.1): one lookup rule.
    versions = [resolve_vllm_version(v, "--vllm-version")[0] for v in versions]
    loaded = load_config(
        path, Overrides(platform=platform, model_runner=model_runner, model_config=model_config)
    )
    axes = [parse_set(s) for s in sets]
    _check_walk(loaded.input.max_num_seqs, loaded.input.max_num_batched_tokens, axes, max(1, len(versions)))
    _check_ladders(loaded.input, axes, max(1, len(versions)))
    try:
        return sweep(
            loaded.input, axes, versions or [loaded.input.vllm_version], load_capture_policy(policy), progress
        )
    except ValueError as e:
        raise ConfigError("--set", str(e)) from None
