"""Policy files (YAML), with located errors: gate policies (`gate --policy FILE`) → GatePolicy, and
capture policies (`--policy NAME|FILE.yaml` of diff and sweep) → CapturePolicy."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cgplan.core.plan.policies import BUILTIN_POLICIES, POLICY_KNOBS, CapturePolicy
from cgplan.errors import ConfigError, preview
from cgplan.io.files import ReadError, read_yaml

if TYPE_CHECKING:  # the gate's module is imported where a gate policy is read: `plan` never reads one
    from cgplan.core.compare.gate import GatePolicy

_BOOLS = ("no_eager_uniform_decode", "no_piecewise_uniform_decode", "widest_decode_full", "no_regression")
_NUMBERS = (
    "max_pool_gib",
    "max_capture_seconds",
    "max_decode_padding_ratio",
    "max_graph_growth_pct",
    "max_eager_time_share",
)
_INTS = ("max_total_graphs",)
KEYS = (*_BOOLS, *_NUMBERS, *_INTS, "max_graphs_per_family")
_FAMILY = re.compile(r"\*|[A-Za-z0-9_.-]{1,64}")
"""A graph family name (target, drafter, drafter_prefill, drafter_decode, ...) or "*"."""
_MAX_NUMBER = 1e15


def _name(key: object) -> str:
    """A key as it goes into a message: quoted unless it is a plain printable string."""
    if not isinstance(key, str):
        return preview(key)
    # quoted when it starts with "-": a path "--x" reads as a command-line option (ConfigError.located)
    if key and len(key) <= 80 and key.isprintable() and key.strip() == key and not key.startswith("-"):
        return key
    return repr(key) if len(key) <= 60 else repr(key[:57]) + "..."


def parse_policy(doc: Any) -> GatePolicy:
    """Validate a parsed policy document.

    Raises:
        ConfigError: located at the offending key.
    """
    from cgplan.core.compare.gate import GatePolicy

    if doc is None:
        return GatePolicy()
    if not isinstance(doc, dict):
        raise ConfigError("<root>", f"must be a mapping of policy keys (got {type(doc).__name__})")
    values: dict[str, Any] = {}
    for key, value in doc.items():
        if key not in KEYS:
            import difflib  # a misspelt key only

            close = difflib.get_close_matches(key[:80], KEYS, n=1, cutoff=0.6) if isinstance(key, str) else []
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise ConfigError(_name(key), f"unknown policy key{hint} (expected one of {', '.join(KEYS)})")
        if value is None:
            values[key] = None if key != "max_graphs_per_family" else {}
            continue
        if key in _BOOLS:
            if not isinstance(value, bool):
                raise ConfigError(key, f"must be true or false (got {preview(value)})")
        elif key in _NUMBERS:
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 <= value <= _MAX_NUMBER  # also refuses NaN
            ):
                raise ConfigError(key, f"must be a number >= 0, at most 1e15 (got {preview(value)})")
            value = float(value)
            if key == "max_eager_time_share" and value > 1:
                raise ConfigError(key, f"must be a share 0..1 (got {preview(value)})")
        elif key in _INTS:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(key, f"must be an integer >= 0 (got {preview(value)})")
        else:  # max_graphs_per_family
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                value = {"*": value}
            elif not isinstance(value, dict):
                raise ConfigError(
                    key, f"must be an integer or a mapping family → integer (got {preview(value)})"
                )
            for fam, n in value.items():
                if not isinstance(fam, str) or not _FAMILY.fullmatch(fam):
                    raise ConfigError(
                        f"{key}.{_name(fam)}",
                        "not a graph family name (expected e.g. target, drafter_decode or *)",
                    )
                if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                    raise ConfigError(f"{key}.{fam}", f"must be an integer >= 0 (got {preview(n)})")
            value = {str(k): int(v) for k, v in value.items()}
        values[key] = value
    return dataclasses.replace(GatePolicy(), **values)


def load_policy(path: Path) -> GatePolicy:
    """Read a policy YAML file."""
    try:
        doc = read_yaml(path, what="gate policy")
    except ReadError as e:
        raise e.as_config_error() from None
    try:
        return parse_policy(doc)
    except ConfigError as e:
        raise e.located(str(path)) from None


def load_capture_policy(spec: str | None) -> CapturePolicy:
    """A built-in policy by name, or a user-defined one from a small YAML file:

    name: my-policy
    description: why
    decode_sizes_capped: false
    decode_sizes_with_explicit_max: true
    drafter_prefill_full: pow2      # target | pow2 | none
    """
    if spec is None:
        return BUILTIN_POLICIES["upstream"]
    if spec in BUILTIN_POLICIES:
        return BUILTIN_POLICIES[spec]
    path = Path(spec)
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise ConfigError(
            "--policy",
            f"unknown policy {spec!r} (expected one of {', '.join(BUILTIN_POLICIES)} or a .yaml file)",
        )
    try:
        doc = read_yaml(path, what="capture policy", source=spec)
    except ReadError as e:
        raise e.as_config_error() from None
    if not isinstance(doc, dict):
        raise ConfigError("<root>", "a policy is a mapping of knobs", source=spec)
    overrides: dict[str, object] = {}
    for key, value in doc.items():
        if key in ("name", "description"):
            continue
        if key not in POLICY_KNOBS:
            raise ConfigError(
                str(key), f"unknown knob (expected name, description, {', '.join(POLICY_KNOBS)})", source=spec
            )
        kind, allowed = POLICY_KNOBS[key]
        if not isinstance(value, kind) or (allowed is not None and value not in allowed):
            want = " | ".join(map(str, allowed)) if allowed else kind.__name__
            raise ConfigError(str(key), f"got {value!r}; expected {want}", source=spec)
        overrides[key] = value
    return CapturePolicy(str(doc.get("name") or path.stem), str(doc.get("description") or ""), overrides)
