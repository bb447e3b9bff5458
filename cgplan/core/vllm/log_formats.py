"""vLLM's log lines that cgplan reads, per release: the table `cgplan logs` parses a start-up log
with, and the capture backend reads vLLM's own figures with (moved here from cgplan/logs.py).

Keyed by the release list of `releases`: an entry only where vLLM changed a line, from its `since`
release on (`since_entry`); a build no release covers reads with its `closest_release`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace

from cgplan.core.vllm.releases import closest_release, since_entry


def _re(pattern: str) -> re.Pattern[str]:
    # Every pattern is searched on lines a log's author controls: each keeps a failed attempt's
    # work bounded (bounded repeats, word boundaries, a prefix that may not repeat), so a
    # crafted long line costs linear time (tests/io/test_report_trust.py times none; it counts).
    return re.compile(pattern)


@dataclass(frozen=True)
class BarFamily:
    """One kind of tqdm capture progress bar: its description, whose graphs it counts."""

    pattern: re.Pattern[str]
    """Matches the whole bar description; group `mode` is the CUDA-graph runtime mode."""
    manager: str
    """Plan family the bar counts: target, drafter_prefill, drafter_decode, drafter, drafter_query."""
    runner: str
    """Model runner that prints it: v1 or v2."""


@dataclass(frozen=True)
class LogFormat:
    """vLLM's log lines that `cgplan logs` reads, for the releases from `since` on."""

    since: str
    """First vLLM release this entry applies to (until the next entry's `since`)."""
    engine: re.Pattern[str]
    """vllm/v1/engine/core.py: "Initializing a V1 LLM engine (v%s) with config: %s"."""
    non_default_args: re.Pattern[str]
    """The serve/LLM entry point: "non-default args: %s" (a dict repr)."""
    chunked_prefill: re.Pattern[str]
    """vllm/config/scheduler.py: "Chunked prefill is enabled with max_num_batched_tokens=%d."."""
    v2_runner: re.Pattern[str]
    """vllm/v1/worker/gpu_worker.py: "Using V2 Model Runner"."""
    runner_fallback: re.Pattern[str]
    """vllm/config/vllm.py: "Model Runner V2 does not yet support %s; using the V1 model runner"."""
    v1_source: re.Pattern[str]
    """A line logged from vllm/v1/worker/gpu_model_runner.py (console or logger-name format)."""
    v2_source: re.Pattern[str]
    """A line logged from vllm/v1/worker/gpu/model_runner.py."""
    dynamic_sd_override: re.Pattern[str]
    """vllm/config/vllm.py `_maybe_override_dynamic_sd_cudagraph_mode` (V1 only)."""
    truncated_max: re.Pattern[str]
    """vllm/config/vllm.py `_set_cudagraph_sizes`: "Truncating max_cudagraph_capture_size to %d"."""
    sizes_overridden: re.Pattern[str]
    """vllm/config/vllm.py: "cudagraph_capture_sizes specified in compilation_config %s is
    overridden by config %s"."""
    mode_downgrade: re.Pattern[str]
    """vllm/config/compilation.py `resolve_cudagraph_mode_and_sizes`: the attention downgrade."""
    profiling: re.Pattern[str]
    """V1 gpu_model_runner.py: "Profiling CUDA graph memory: %s" ("MODE=N (largest=T)", ...)."""
    profiling_group: re.Pattern[str]
    """One "MODE=N (largest=T)" group of the profiling line."""
    estimate: re.Pattern[str]
    """V1: "Estimated CUDA graph memory: %.2f GiB total"."""
    kv_memory: re.Pattern[str]
    """gpu_worker.py: "Available KV cache memory: %s GiB"."""
    kv_tokens: re.Pattern[str]
    """vllm/v1/core/kv_cache_utils.py: the KV cache size in tokens."""
    capture_finished: re.Pattern[str]
    """Both runners' capture_model: "Graph capturing finished in %.0f secs, took %.2f GiB"."""
    pool_memory: re.Pattern[str]
    """gpu_worker.py: "CUDA graph pool memory: %s GiB (actual), %s GiB (estimated), difference:
    %s GiB (%.1f%%)."."""
    speculator_capture: re.Pattern[str]
    """V2 speculators: "Capturing model for speculator..."."""
    capture_skipped: re.Pattern[str]
    """V1/V2 capture_model with mode NONE: "Skipping ... CUDA graph capture"."""
    engine_ready: re.Pattern[str]
    """core.py: "init engine (profile, create kv cache, warmup model) took %.2f s"."""
    bar: re.Pattern[str]
    """A tqdm bar state: "DESC: PCT%|BAR| N/M [...]" (tqdm's default format)."""
    bar_families: tuple[BarFamily, ...]
    """Known bar descriptions, first match wins."""
    metrics_header: re.Pattern[str]
    """vllm/compilation/cuda_graph.py CUDAGraphLogging: "**CUDAGraph Config Settings:**"."""
    metrics_mode: re.Pattern[str]
    """"- Mode: %s" (str(CUDAGraphMode): the member name)."""
    metrics_sizes: re.Pattern[str]
    """"- Capture sizes: %s" (a list repr)."""
    metrics_row: re.Pattern[str]
    """"| unpadded | padded | paddings | runtime mode | count |" (left-justified cells)."""
    metrics_other: re.Pattern[str]
    """The table's other lines: "**CUDAGraph Stats:**", the column header, the separator."""
    v2_profiling_capture: bool
    """V2's memory profiling runs a capture (bars and a "Graph capturing finished" line of its
    own) before the KV cache is sized (vllm/v1/worker/gpu/cudagraph_utils.py
    `profile_cudagraph_memory`, from 0.29.0)."""


_MODE = r"(?:CUDAGraphMode\.)?(?P<mode>NONE|PIECEWISE|FULL_DECODE_ONLY|FULL_AND_PIECEWISE|FULL)"

# vLLM 0.26.0 (the strings below are unchanged through 0.33.0 unless an entry says otherwise).
_V0_26 = LogFormat(
    since="0.26.0",
    engine=_re(r"Initializing a V1 LLM engine \(v(?P<version>[^)\s]+)\) with config: (?P<config>.*)"),
    # The dict runs to the end of the line; it may not contain the prefix again, so a line of
    # repeated prefixes is scanned once, not once per prefix (quadratic). The lazy lookahead
    # stops at the next prefix; its single-character repeats keep no per-character state, where
    # a repeated group `(?:(?!prefix).)*` kept ~70 bytes per character of the line (issue 18).
    non_default_args=_re(r"non-default args: (?!.*?non-default args: )(?P<args>\{.*\})\s*$"),
    chunked_prefill=_re(r"Chunked prefill is enabled with max_num_batched_tokens=(?P<tokens>\d+)"),
    v2_runner=_re(r"Using V2 Model Runner"),
    runner_fallback=_re(
        r"Model Runner V2 does not yet support (?P<what>.{1,300}?); using the V1 model runner instead\.?"
    ),
    v1_source=_re(r"\[gpu_model_runner\.py:\d+\]|\bvllm\.v1\.worker\.gpu_model_runner\b"),
    v2_source=_re(r"\[model_runner\.py:\d+\]|\bvllm\.v1\.worker\.gpu\.model_runner\b"),
    dynamic_sd_override=_re(
        r"Dynamic speculative decoding changes the target verification length at runtime\. "
        r"Overriding cudagraph_mode from (?P<from>\w+) to (?P<to>\w+)"
    ),
    truncated_max=_re(r"Truncating max_cudagraph_capture_size to (?P<size>\d+)"),
    sizes_overridden=_re(
        r"cudagraph_capture_sizes specified in compilation_config (?P<given>\[[\d, ]*\]) "
        r"is overridden by config (?P<final>\[[\d, ]*\])"
    ),
    mode_downgrade=_re(
        r"CUDAGraphMode\.(?P<from>\w+) is not supported (?:with spec-decode for attention backend "
        r"(?P<spec_backend>\S+)|with (?P<backend>\S+) backend) \(support: ?(?P<support>[^)]{0,300})\); "
        r"setting cudagraph_mode=(?P<to>\w+)"
    ),
    profiling=_re(r"Profiling CUDA graph memory: (?P<groups>.*)"),
    profiling_group=_re(r"\b(?P<mode>\w+)=(?P<count>\d+) \(largest=(?P<largest>\d+)\)"),
    # "%.2f": negative where the free-memory deltas went the wrong way (vLLM #44740: -20.50 GiB
    # on a GB10 with MTP, which sized the KV cache past the memory there is)
    estimate=_re(r"Estimated CUDA graph memory: (?P<gib>-?[\d.]+) GiB total"),
    kv_memory=_re(r"Available KV cache memory: (?P<gib>[\d.]+) GiB"),
    kv_tokens=_re(r"GPU KV cache size: (?P<tokens>[\d,]+) tokens"),
    capture_finished=_re(r"Graph capturing finished in (?P<secs>[\d.]+) secs, took (?P<gib>-?[\d.]+) GiB"),
    pool_memory=_re(
        r"CUDA graph pool memory: (?P<actual>-?[\d.]+) GiB \(actual\), (?P<estimated>-?[\d.]+) GiB "
        r"\(estimated\), difference: (?P<diff>[\d.]+) GiB \((?P<pct>[\d.]+)%\).*"
    ),
    speculator_capture=_re(r"Capturing model for (?:[\w-]+ ){0,8}speculator\.\.\."),
    capture_skipped=_re(r"Skipping (?:encoder and decoder )?CUDA graph capture"),
    engine_ready=_re(r"init engine \(profile, create kv cache, warmup model\) took"),
    bar=_re(
        r"(?P<desc>Capturing [^\r\n:|]{0,64}?CUDA graphs(?: \([^)\r\n]{0,128}\))?): *\d+%\|[^|\r\n]*\| *"
        r"(?P<n>\d+)/(?P<total>\d+)"
    ),
    bar_families=(
        # V1 gpu_model_runner._capture_cudagraphs: one bar per runtime mode, labelled by the
        # first (largest) descriptor's `uniform` flag.
        BarFamily(
            _re(r"^Capturing CUDA graphs \((?:decode|mixed prefill-decode), (?P<mode>PIECEWISE|FULL)\)$"),
            "target",
            "v1",
        ),
        # V2 CudaGraphManager.capture: f"{progress_bar_desc} ({mode.name})".
        BarFamily(_re(r"^Capturing CUDA graphs \((?P<mode>PIECEWISE|FULL)\)$"), "target", "v2"),
        BarFamily(
            _re(r"^Capturing prefill CUDA graphs \((?P<mode>PIECEWISE|FULL)\)$"), "drafter_prefill", "v2"
        ),
        BarFamily(
            _re(r"^Capturing decode CUDA graphs \((?P<mode>PIECEWISE|FULL)\)$"), "drafter_decode", "v2"
        ),
        # multi_module_mtp/speculator.py `capture` (0.28+): the one manager of a multi-layer MTP draft
        BarFamily(
            _re(r"^Capturing multi-module MTP CUDA graphs \((?P<mode>PIECEWISE|FULL)\)$"), "drafter", "v2"
        ),
        # DFlashSpeculator.capture: f"Capturing {self._speculator_name.lower()} CUDA graphs" (DSpark's too)
        BarFamily(
            _re(r"^Capturing (?:dflash|dspark) CUDA graphs \((?P<mode>PIECEWISE|FULL)\)$"),
            "drafter_query",
            "v2",
        ),
    ),
    metrics_header=_re(r"CUDAGraph Config Settings:"),
    metrics_mode=_re(r"- Mode: " + _MODE + r"\s*$"),
    metrics_sizes=_re(r"- Capture sizes: (?P<sizes>\[[\d, ]*\])"),
    metrics_row=_re(
        r"\|\s*(?P<unpadded>\d+)\s*\|\s*(?P<padded>\d+)\s*\|\s*(?P<paddings>-?\d+)\s*\|\s*"
        + _MODE
        + r"\s*\|\s*(?P<count>\d+)\s*\|"
    ),
    metrics_other=_re(r"CUDAGraph Stats:|\| Unpadded Tokens \||^[^|]*\|-+\|"),
    v2_profiling_capture=False,
)
# 0.29.0: V2 estimates graph memory by capturing (vllm/v1/worker/gpu/cudagraph_utils.py
# `profile_cudagraph_memory` runs `capture_model()` against a throwaway pool, FULL graphs
# sampled), so its bars and "Graph capturing finished" line come twice.
_V0_29 = replace(_V0_26, since="0.29.0", v2_profiling_capture=True)
# 0.30.0: kv_cache_utils.update_kv_cache_capacity logs "%s KV cache size: %s tokens, ..." with
# the device name ("GPU", "XPU"; " + host" with hisparse) in front.
_V0_30 = replace(
    _V0_29,
    since="0.30.0",
    kv_tokens=_re(r"\b[A-Z]+(?: \+ host)? KV cache size: (?P<tokens>[\d,]+) tokens"),
)

LOG_FORMATS: tuple[LogFormat, ...] = (_V0_26, _V0_29, _V0_30)
"""Oldest first; a release uses the last entry whose `since` is not newer than it."""


@functools.cache
def log_format_for(version: str | None) -> LogFormat:
    """The `LOG_FORMATS` entry for the release a build `version` prints like (`closest_release`:
    the newest entry when the version is unknown).

    >>> log_format_for(None) is LOG_FORMATS[-1], log_format_for("0.0.1") is LOG_FORMATS[0]
    (True, True)
    """
    return since_entry(LOG_FORMATS, closest_release(version))
