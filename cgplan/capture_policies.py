"""`--policy NAME` or `--policy FILE.yaml` → CapturePolicy, with located errors."""

from __future__ import annotations

from pathlib import Path

from cgplan.core.policies import BUILTIN_POLICIES, POLICY_KNOBS, CapturePolicy
from cgplan.errors import ConfigError
from cgplan.io.files import ReadError, read_yaml


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
