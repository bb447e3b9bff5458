"""The `--set` grammar of `cgplan sweep`: KEY=FIRST..LAST[:STEP] or KEY=V1,V2,..., each value
checked against the bounds a config file has (`cgplan.io.config`), with located errors."""

from __future__ import annotations

from typing import Any

from cgplan.core.compare.sweep import INT_KEYS, MAX_SWEEP_POINTS, SETTERS
from cgplan.core.model.modes import Mode
from cgplan.core.model.spec import MODEL_RUNNERS, PERFORMANCE_MODES
from cgplan.errors import ConfigError
from cgplan.io.config import MAX_REASONABLE, parse_platform

_CHOICES: dict[str, tuple[str, ...]] = {
    "performance_mode": (*PERFORMANCE_MODES, "none"),
    "compilation_config.cudagraph_mode": tuple(m.value for m in Mode),
    "cgplan.model_runner": MODEL_RUNNERS,
}
"""The values each string-valued sweep key takes (case-insensitive)."""


def _q(text: str) -> str:
    """A string as a message quotes it: repr, at most 60 characters."""
    return repr(text) if len(text) <= 58 else repr(text[:55]) + "..."


def _floor(key: str) -> int:
    return (
        0
        if key.endswith(("num_speculative_tokens", "max_cudagraph_capture_size", "optimization_level"))
        else 1
    )


def _ceiling(key: str) -> int:
    return 3 if key == "optimization_level" else MAX_REASONABLE


def _check_ints(key: str, values: list[int]) -> None:
    lo, hi = _floor(key), _ceiling(key)
    bad = [v for v in values if not lo <= v <= hi]
    if bad:
        raise ConfigError("--set", f"{key}: values must be from {lo} to {hi:,} (got {bad[0]})")


def _to_int(text: str) -> int:
    """An integer in ASCII digits (`int` also takes "٣", "1_0" and 4,300-digit strings)."""
    t = text.strip()
    digits = t[1:] if t[:1] in "+-" else t
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 100:
        raise ValueError(text)
    return int(t)


def parse_set(text: str) -> tuple[str, list[Any]]:
    """`key=8..2048`, `key=8..2048:8` (step) or `key=0,1,3,5,16` → (key, values).

    Values are checked before a range is expanded: `max_num_seqs=1..10000000000` is
    refused, not materialised.

    >>> parse_set("max_num_seqs=8..32:8")
    ('max_num_seqs', [8, 16, 24, 32])
    """
    if "=" not in text:
        raise ConfigError("--set", f"expected KEY=VALUES (got {_q(text)}; e.g. max_num_seqs=8..2048)")
    key, spec = (s.strip() for s in text.split("=", 1))
    if key not in SETTERS:
        raise ConfigError("--set", f"cannot sweep {_q(key)} (expected one of {', '.join(SETTERS)})")
    if key in INT_KEYS and ".." in spec:
        rng, _, step_text = spec.partition(":")
        lo_text, _, hi_text = rng.partition("..")
        try:
            lo, hi, step = _to_int(lo_text), _to_int(hi_text), _to_int(step_text or "1")
        except ValueError:
            raise ConfigError(
                "--set", f"{key}: expected FIRST..LAST[:STEP] integers (got {_q(spec)})"
            ) from None
        if step < 1 or hi < lo:
            raise ConfigError("--set", f"{key}: empty range {_q(spec)} (expected FIRST <= LAST, STEP >= 1)")
        _check_ints(key, [lo, hi])
        points = (hi - lo) // step + 1
        if points > MAX_SWEEP_POINTS:
            raise ConfigError(
                "--set", f"{key}: {points:,} values; at most {MAX_SWEEP_POINTS:,} plans per sweep"
            )
        return key, list(range(lo, hi + 1, step))
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if not parts:
        raise ConfigError("--set", f"{key}: no values (got {_q(spec)})")
    if len(parts) > MAX_SWEEP_POINTS:
        raise ConfigError("--set", f"{key}: {len(parts):,} values; at most {MAX_SWEEP_POINTS:,}")
    if key in INT_KEYS:
        try:
            ints = [_to_int(p) for p in parts]
        except ValueError:
            raise ConfigError("--set", f"{key}: expected integers (got {_q(spec)})") from None
        _check_ints(key, ints)
        return key, list(ints)
    if key == "cgplan.platform":  # family names and GPU names, as in the config
        try:
            return key, [parse_platform(p, "--set").value for p in parts]
        except ConfigError as e:
            raise ConfigError("--set", f"{key}: {e.problem}") from None
    choices = _CHOICES[key]
    values: list[Any] = []
    for p in parts:
        match = [c for c in choices if c.lower() == p.lower()]
        if not match:
            raise ConfigError("--set", f"{key}: unknown value {_q(p)} (expected one of {', '.join(choices)})")
        values.append(match[0])
    return key, values
