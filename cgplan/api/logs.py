"""`cgplan logs` as a library: a vLLM log (and optionally the config it ran) in, its parse and
its checks against the plan out."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cgplan.api.plan import plan_doc, plan_file
from cgplan.core.logs.check import Comparison, LogPlan, compare, refused_checks
from cgplan.core.logs.parse import LogError, ParsedLog
from cgplan.core.logs.plugin import (
    MARK,
    METRIC,
    PluginLog,
    StepCounts,
    parse_metrics_text,
    parse_plugin_lines,
)
from cgplan.core.vllm.releases import SUPPORTED_VERSIONS, release_for
from cgplan.errors import ConfigError, ConfigRejected
from cgplan.io.config import Overrides, doc_from_engine_args


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
    version, release = _release(parsed, vllm_version)
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


def _release(parsed: ParsedLog, vllm_version: str | None) -> tuple[str, str | None]:
    """(the version to plan under, its release): the log's own unless `vllm_version` is given.

    Raises:
        LogError: the log names no version, or one cgplan has no rules for.
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
    return version, release


LOG_CONFIG = "the log's engine arguments"
"""How a plan made from a log (no --config) names its config."""


def _engine_doc(parsed: ParsedLog) -> tuple[dict[str, Any], list[str], list[str]]:
    """(config document, keys left out, assumptions) from what the log says the engine ran."""
    assumed: list[str] = []
    if parsed.engine_args is not None:
        doc, left_out = doc_from_engine_args(parsed.engine_args)
    else:
        doc, left_out = {}, []
        assumed.append(
            "no 'non-default args' line: planned from the engine line (max_num_seqs and what it does "
            "not print are vLLM's defaults)"
        )
        if parsed.max_num_batched_tokens is not None:
            doc["max_num_batched_tokens"] = parsed.max_num_batched_tokens
    # the engine line states what vLLM resolved: it fills what the arguments left to defaults
    for key, value in (
        ("model", parsed.engine_model),
        ("max_model_len", parsed.max_model_len),
        ("tensor_parallel_size", parsed.tensor_parallel_size),
        ("enforce_eager", parsed.enforce_eager),
    ):
        if value is not None and key not in doc:
            doc[key] = value
    if parsed.speculative_method and "speculative_config" not in doc:
        doc["speculative_config"] = {
            "method": parsed.speculative_method,
            "num_speculative_tokens": parsed.num_speculative_tokens,
        }
    return doc, left_out, assumed


def plan_from_log(parsed: ParsedLog, overrides: Overrides) -> LogPlan:
    """Plan the engine arguments the log states (its "non-default args", else its engine line)
    under its release, runner and `overrides` (the GPU, which a vLLM log does not name; the
    model's config.json for a hub model), then hold the plan against the log's own figures."""
    try:
        version, _ = _release(parsed, overrides.vllm_version)
    except LogError as e:
        return LogPlan(None, None, e.message)
    doc, left_out, assumed = _engine_doc(parsed)
    model = doc.get("model")
    if model is None:
        return LogPlan(None, None, "the log names no model (no engine or 'non-default args' line)")
    if overrides.model_config is None and not (Path(str(model)).expanduser() / "config.json").is_file():
        return LogPlan(
            None,
            None,
            f"the log's model {str(model)!r} is no folder with a config.json here: give --model-config "
            "(the model's config.json or its folder) to plan it",
        )
    doc["cgplan"] = {"vllm_version": version, "model_runner": parsed.model_runner or "auto"}
    if overrides.platform is None:
        assumed.append("the GPU: a vLLM log does not name it; planned as hopper (H100/H200; --platform)")
    if parsed.model_runner is None:
        assumed.append("the model runner: the log does not show it (runner unknown); vLLM's choice")
    try:
        loaded, plan = plan_doc(doc, LOG_CONFIG, overrides)
    except ConfigRejected as e:
        refused = Comparison(LOG_CONFIG, version, e.message, refused_checks(parsed))
        return LogPlan(None, refused, f"vLLM {version} refuses these arguments: {e.message}", tuple(assumed))
    except ConfigError as e:
        return LogPlan(None, None, f"cannot plan them: {e.message}", tuple(assumed), tuple(left_out))
    comparison = Comparison(
        LOG_CONFIG, loaded.input.vllm_version, None, compare(parsed, loaded.input, plan), loaded.notes
    )
    return LogPlan(plan, comparison, None, tuple(assumed), tuple(left_out))


@dataclass(frozen=True)
class LogCheck:
    """What `cgplan logs` computed: the parse, and its checks against the config's plan (None
    without a config)."""

    parsed: ParsedLog
    comparison: Comparison | None
    own: LogPlan | None = None
    """Without a config: the plan of the log's own engine arguments."""
    plugin: PluginLog | None = None
    """The lines cgplan's vLLM plugin logged there (None: it logged none)."""


@dataclass(frozen=True)
class MetricsCheck:
    """`cgplan logs` of a Prometheus text (an endpoint's /metrics body): the plugin's counter."""

    source: str
    counts: StepCounts


class _Collect:
    """Passes a log's blocks on to the parser and keeps the plugin's lines of them (the log is
    read once: `-` cannot be read twice)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def blocks(self, blocks: Iterable[str]) -> Iterator[str]:
        for block in blocks:
            if MARK in block or METRIC in block:
                self.lines += [line for line in block.split("\n") if MARK in line or METRIC in line]
            yield block


def check_log(
    path: str | Path,
    config: str | Path | None = None,
    vllm_version: str | None = None,
    model_config: Path | None = None,
    platform: str | None = None,
) -> LogCheck:
    """`read_logs` of a vLLM log (LogError for a metrics text or the plugin's lines alone)."""
    r = read_logs(path, config, vllm_version, model_config, platform)
    if not isinstance(r, LogCheck):
        raise LogError(f"{r.source}: no vLLM start-up lines, only what cgplan's plugin wrote")
    return r


def read_logs(
    path: str | Path,
    config: str | Path | None = None,
    vllm_version: str | None = None,
    model_config: Path | None = None,
    platform: str | None = None,
) -> LogCheck | MetricsCheck | PluginOnly:
    """Read and parse the log at `path` (plain or gzip, `-` for stdin); with `config`, plan it
    under the log's release and check every figure the log states; without, plan the log's own
    engine arguments (`plan_from_log`). The lines cgplan's vLLM plugin logged come back with it
    (`LogCheck.plugin`); a Prometheus text with the plugin's counter, or the plugin's lines alone,
    come back as `MetricsCheck` / `PluginOnly`.

    Raises:
        LogError: the file cannot be read or is not a vLLM log; its release is unknown.
        PluginLogError: the plugin's lines or the metrics' samples are malformed.
        ConfigError: the config file is malformed.
    """
    from cgplan.core.logs.parse import parse_blocks
    from cgplan.io.logs import log_blocks

    source = "<stdin>" if str(path) == "-" else str(path)
    kept = _Collect()
    try:
        parsed = parse_blocks(kept.blocks(log_blocks(path)), source)
    except LogError:
        if any(line.lstrip().startswith(METRIC + "{") for line in kept.lines):
            return MetricsCheck(source, parse_metrics_text("\n".join(kept.lines), source))
        if any(MARK in line for line in kept.lines):  # the plugin's lines alone (grep's output)
            return _plugin_only(kept.lines, source)
        raise
    plugin = parse_plugin_lines(kept.lines, source) if any(MARK in line for line in kept.lines) else None
    if config is None:
        own = plan_from_log(parsed, Overrides(vllm_version, platform, None, model_config))
        return LogCheck(parsed, None, own, plugin)
    comparison = compare_with_config(parsed, config, vllm_version, model_config, platform)
    return LogCheck(parsed, comparison, None, plugin)


@dataclass(frozen=True)
class PluginOnly:
    """`cgplan logs` of the plugin's lines without vLLM's (e.g. `grep '[cgplan]' server.log`)."""

    source: str
    plugin: PluginLog


def _plugin_only(lines: list[str], source: str) -> PluginOnly:
    return PluginOnly(source, parse_plugin_lines(lines, source))
