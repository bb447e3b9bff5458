"""`cgplan logs` as a library: a vLLM log (and optionally the config it ran) in, its parse and
its checks against the plan out."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cgplan.api.plan import plan_file
from cgplan.core.logs.check import Comparison, compare, refused_checks
from cgplan.core.logs.parse import LogError, ParsedLog
from cgplan.core.vllm.releases import SUPPORTED_VERSIONS, release_for
from cgplan.errors import ConfigRejected
from cgplan.io.config import Overrides


def compare_with_config(
    parsed: ParsedLog,
    config: str | Path,
    vllm_version: str | None = None,
    model_config: Path | None = None,
    platform: str | None = None,
) -> Comparison:
    """Plan `config` under the log's vLLM release (or `vllm_version`) and compare.

    Raises:
        LogError: the release is unknown to cgplan (name one with `vllm_version`).
        ConfigError: the config file is malformed.
    """
    version = vllm_version or parsed.vllm_version
    if version is None:
        raise LogError(
            f"{parsed.source}: the log names no vLLM version (no engine line); pass --vllm-version"
        )
    # a patch release of a known one (0.33.1) is planned with that release's rules; the config
    # reader says so in a note, as `plan` does
    release = release_for(version) if vllm_version is None else version
    if vllm_version is None and (release is None or release not in SUPPORTED_VERSIONS):
        raise LogError(
            f"{parsed.source}: the log is from vLLM {version}; cgplan has rules for "
            f"{', '.join(SUPPORTED_VERSIONS)} (pass --vllm-version to plan under one of them)"
        )
    overrides = Overrides(vllm_version=version, platform=platform, model_config=model_config)
    try:
        loaded, plan = plan_file(config, overrides, with_fixes=False)
    except ConfigRejected as e:
        return Comparison(str(config), release or version, e.message, refused_checks(parsed))
    return Comparison(
        str(config),
        loaded.input.vllm_version,
        None,
        compare(parsed, loaded.input, plan),
        loaded.notes,
    )


@dataclass(frozen=True)
class LogCheck:
    """What `cgplan logs` computed: the parse, and its checks against the config's plan (None
    without a config)."""

    parsed: ParsedLog
    comparison: Comparison | None


def check_log(
    path: str | Path,
    config: str | Path | None = None,
    vllm_version: str | None = None,
    model_config: Path | None = None,
    platform: str | None = None,
) -> LogCheck:
    """Read and parse the log at `path` (plain or gzip, `-` for stdin); with `config`, plan it
    under the log's release and check every figure the log states.

    Raises:
        LogError: the file cannot be read or is not a vLLM log; its release is unknown.
        ConfigError: the config file is malformed.
    """
    from cgplan.io.logs import parse_file

    parsed = parse_file(path)
    comparison = (
        compare_with_config(parsed, config, vllm_version, model_config, platform)
        if config is not None
        else None
    )
    return LogCheck(parsed, comparison)
