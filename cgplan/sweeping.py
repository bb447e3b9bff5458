"""The library entry point behind `cgplan sweep`: parse `--set` ranges, run the core sweep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cgplan.config import Overrides, load_config
from cgplan.core.rules import SUPPORTED_VERSIONS
from cgplan.core.sweep import INT_KEYS, SETTERS, SweepResult, sweep
from cgplan.errors import ConfigError


def parse_set(text: str) -> tuple[str, list[Any]]:
    """`key=8..2048`, `key=8..2048:8` (step) or `key=0,1,3,5,16` → (key, values).

    >>> parse_set("max_num_seqs=8..32:8")
    ('max_num_seqs', [8, 16, 24, 32])
    """
    if "=" not in text:
        raise ConfigError("--set", f"expected KEY=VALUES (got {text!r}; e.g. max_num_seqs=8..2048)")
    key, spec = (s.strip() for s in text.split("=", 1))
    if key not in SETTERS:
        raise ConfigError("--set", f"cannot sweep {key!r} (expected one of {', '.join(SETTERS)})")
    if key in INT_KEYS and ".." in spec:
        rng, _, step_text = spec.partition(":")
        lo_text, _, hi_text = rng.partition("..")
        try:
            lo, hi, step = int(lo_text), int(hi_text), int(step_text or 1)
        except ValueError:
            raise ConfigError(
                "--set", f"{key}: expected FIRST..LAST[:STEP] integers (got {spec!r})"
            ) from None
        if step < 1 or hi < lo:
            raise ConfigError("--set", f"{key}: empty range {spec!r} (expected FIRST <= LAST, STEP >= 1)")
        values: list[Any] = list(range(lo, hi + 1, step))
    else:
        parts = [p.strip() for p in spec.split(",") if p.strip()]
        if not parts:
            raise ConfigError("--set", f"{key}: no values (got {spec!r})")
        if key in INT_KEYS:
            try:
                values = [int(p) for p in parts]
            except ValueError:
                raise ConfigError("--set", f"{key}: expected integers (got {spec!r})") from None
        else:
            values = parts
    if key in INT_KEYS:
        floor = (
            0
            if key.endswith(("num_speculative_tokens", "max_cudagraph_capture_size", "optimization_level"))
            else 1
        )
        bad = [v for v in values if v < floor]
        if bad:
            raise ConfigError("--set", f"{key}: values must be >= {floor} (got {bad[0]})")
    return key, values


def sweep_config(path: Path, sets: list[str], versions: list[str]) -> SweepResult:
    """Sweep `path` over the `--set` axes under each release (default: the config's)."""
    if not sets:
        raise ConfigError("--set", "give at least one axis, e.g. --set max_num_seqs=8..2048")
    for v in versions:
        if v not in SUPPORTED_VERSIONS:
            raise ConfigError(
                "--vllm-version", f"unknown release {v!r} (expected one of {', '.join(SUPPORTED_VERSIONS)})"
            )
    loaded = load_config(path, Overrides())
    axes = [parse_set(s) for s in sets]
    try:
        return sweep(loaded.input, axes, versions or [loaded.input.vllm_version])
    except ValueError as e:
        raise ConfigError("--set", str(e)) from None
