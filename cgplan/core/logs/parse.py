"""The parse of a vLLM startup log (pure: text in, a frozen `ParsedLog` out).

A log is read line by line (tqdm progress bars are split at their carriage returns) against a
table of vLLM's own log format strings per release (`cgplan.core.vllm.log_formats`). The
file is read by `cgplan.io.logs`; `cgplan.core.logs.check` holds the parse against a plan
(`Comparison`), which `cgplan.api.logs` makes for a config; `io.schema.logs` and `render.logs`
write it out.

What vLLM prints during start-up, and when (vllm/v1/engine/core.py, vllm/config/vllm.py,
vllm/config/compilation.py, vllm/v1/worker/gpu_worker.py, gpu_model_runner.py (V1),
gpu/model_runner.py and gpu/cudagraph_utils.py (V2), vllm/compilation/cuda_graph.py):

* config time, before the engine line: the dynamic-SD mode override, the V2 → V1 runner
  fallback, "Truncating max_cudagraph_capture_size", "... is overridden by config ...";
* "Initializing a V1 LLM engine (vX) with config: ... compilation_config={...}": the mode and
  sizes *before* the attention downgrade and before model runner V1's rounding to multiples
  of 1 + K;
* in the worker: the attention downgrade, V1's "Profiling CUDA graph memory" and estimate,
  (V2 from 0.29.0: a profiling capture with progress bars and its own "Graph capturing
  finished"), "Available KV cache memory", the KV cache size, the capture progress bars
  (tqdm, stderr), "Graph capturing finished", "CUDA graph pool memory";
* while serving, with `--cudagraph-metrics`: the CUDAGraph settings and stats tables.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cgplan.core.errors import CgplanError
from cgplan.core.vllm.log_formats import LOG_FORMATS, LogFormat, log_format_for


class LogError(CgplanError):
    """The log cannot be read, or is not a vLLM log (exit 2)."""


NON_DEFAULT_ARGS_MAX_CHARS = 64 << 10
"""The longest "non-default args" dict read: vLLM's is a few KiB. Reading one is a literal_eval
whose cost grows with its size (an 8 KB .log.gz holding one 7.5 MB line took 7-30 s and 2.4-4 GB,
issue 33), so a longer one is refused, at its line, before it is evaluated."""


# --------------------------------------------------------------------------------------------
# The parse
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogEvent:
    """A capture-relevant warning vLLM logged (the planner's `Note` kinds)."""

    kind: str
    """truncated_max, explicit_sizes_overridden, runner_fallback, dynamic_sd_override,
    mode_downgrade or capture_skipped."""
    message: str
    """vLLM's words, from the log."""
    values: tuple[tuple[str, Any], ...] = ()
    """What the message says, parsed (e.g. (("size", 592),))."""

    def value(self, name: str) -> Any:
        """One parsed value (None when absent)."""
        return dict(self.values).get(name)


@dataclass(frozen=True)
class ProgressBar:
    """One tqdm capture progress bar, at its last state in the log."""

    desc: str
    """vLLM's bar description, e.g. "Capturing CUDA graphs (decode, FULL)"."""
    manager: str
    """Plan family it counts (target, drafter_prefill, drafter_decode), else the bar's own words."""
    mode: str | None
    """PIECEWISE or FULL (None when the description names no mode)."""
    runner: str | None
    """Model runner that prints such a bar (v1, v2), None for an unknown kind of bar."""
    done: int
    """Descriptors captured when the bar last updated (N of N/M)."""
    total: int
    """Descriptors the manager meant to capture (M)."""
    phase: str
    """"capture", or "profiling" (V2's memory-profiling capture, before the KV cache is sized)."""


@dataclass(frozen=True)
class MetricsRow:
    """One row of the `--cudagraph-metrics` stats table."""

    unpadded_tokens: int
    """Tokens of the batch."""
    padded_tokens: int
    """Tokens of the graph replayed (the batch's tokens when eager)."""
    num_paddings: int
    """Padded minus unpadded."""
    runtime_mode: str
    """NONE, PIECEWISE or FULL."""
    count: int
    """Batches of this shape in the logging interval."""


@dataclass(frozen=True)
class MetricsTable:
    """One `--cudagraph-metrics` table (vLLM logs one per logging interval)."""

    mode: str | None
    """"- Mode:" (the cudagraph_mode of the front end's config)."""
    capture_sizes: tuple[int, ...] | None
    """"- Capture sizes:"."""
    rows: tuple[MetricsRow, ...]
    """The stats rows, most frequent first."""


@dataclass(frozen=True)
class ParsedLog:
    """Everything `cgplan logs` reads from a vLLM startup log."""

    source: str
    """The file read."""
    log_format: str
    """`since` of the `LOG_FORMATS` entry used."""
    vllm_version: str | None
    """From the engine line ("Initializing a V1 LLM engine (vX)")."""
    engine_starts: int
    """Engine lines in the file (the last engine is read)."""
    model_runner: str | None
    """v1 or v2, as the log shows it (None: not shown)."""
    model_runner_evidence: tuple[str, ...]
    """Why: the lines or bars that show the runner."""
    speculative_method: str | None
    """speculative_config.method from the engine line (None: no speculation)."""
    num_speculative_tokens: int | None
    """num_spec_tokens from the engine line (None: no speculation)."""
    dynamic_sd_schedule: tuple[tuple[int, int, int], ...] | None
    """num_speculative_tokens_per_batch_size from the "non-default args" line."""
    max_num_seqs: int | None
    """From the "non-default args" line, when set there."""
    max_num_batched_tokens: int | None
    """From the scheduler's chunked-prefill line, else the "non-default args" line."""
    tensor_parallel_size: int | None
    """From the engine line."""
    enforce_eager: bool | None
    """From the engine line."""
    has_non_default_args: bool
    """Whether the "non-default args" line was found (settings absent there are vLLM defaults)."""
    cudagraph_mode: str | None
    """compilation_config cudagraph_mode on the engine line (before the attention downgrade)."""
    capture_sizes: tuple[int, ...] | None
    """compilation_config cudagraph_capture_sizes on the engine line (before V1's rounding)."""
    max_capture_size: int | None
    """compilation_config max_cudagraph_capture_size on the engine line."""
    compilation_mode: str | None
    """compilation_config mode on the engine line (e.g. VLLM_COMPILE)."""
    final_cudagraph_mode: str | None
    """The mode after the attention downgrade the log shows (the engine line's when none)."""
    events: tuple[LogEvent, ...]
    """Capture-relevant warnings, in log order, duplicates dropped."""
    profiling: tuple[tuple[str, int, int], ...] | None
    """V1 "Profiling CUDA graph memory": (mode, descriptors, largest token count)."""
    estimated_cudagraph_gib: float | None
    """V1 "Estimated CUDA graph memory: X GiB total"."""
    profiling_capture: tuple[float, float] | None
    """V2 (0.29.0+) profiling capture's "Graph capturing finished": (secs, GiB)."""
    capture_finished_secs: float | None
    """"Graph capturing finished in X secs" of the capture."""
    capture_took_gib: float | None
    """"..., took Y GiB" of the capture (free-memory delta around it)."""
    actual_vs_estimated: str | None
    """The "CUDA graph pool memory: ..." line."""
    pool_actual_gib: float | None
    """Its actual GiB."""
    pool_estimated_gib: float | None
    """Its estimated GiB."""
    pool_difference_gib: float | None
    """Its difference in GiB."""
    pool_difference_pct: float | None
    """Its difference in percent of the actual."""
    available_kv_cache_gib: float | None
    """"Available KV cache memory: X GiB"."""
    kv_cache_tokens: int | None
    """The KV cache size in tokens."""
    capture_status: str
    """"finished", "incomplete" (capture or KV sizing started, no "Graph capturing finished"),
    "skipped" (vLLM logged that it skips capture) or "not reached"."""
    engine_ready: bool
    """The engine logged "init engine (profile, create kv cache, warmup model) took"."""
    last_capture_activity: str | None
    """The last line of the capture path the log reaches (KV sizing, a bar, the speculator's
    "Capturing model for speculator...", "Graph capturing finished"): where a crash happened."""
    worker_started: bool
    """The log reaches the model runner (its lines, the KV cache sizing or capture): the attention
    downgrade, when there is one, has been logged."""
    bars: tuple[ProgressBar, ...]
    """Every capture progress bar, in log order."""
    metrics: tuple[MetricsTable, ...]
    """`--cudagraph-metrics` tables, in log order."""
    engine_args: dict[str, Any] | None = None
    """The "non-default args" dict as vLLM printed it (the serve arguments the engine was started
    with; None without that line): what `cgplan logs` plans when no config is given."""
    engine_model: str | None = None
    """The engine line's `model='...'`."""
    max_model_len: int | None = None
    """The engine line's `max_seq_len`."""

    @property
    def negative_memory(self) -> tuple[str, ...]:
        """vLLM's graph-memory figures that are negative, each in words: a free-memory delta that
        went the wrong way (vLLM #44740: an estimate of -20.50 GiB sized the KV cache past the
        memory there is; #25683: "took -9.96 GiB")."""
        out = []
        if self.estimated_cudagraph_gib is not None and self.estimated_cudagraph_gib < 0:
            out.append(
                f"estimated CUDA graph memory {self.estimated_cudagraph_gib:.2f} GiB is negative: vLLM "
                "added it to the KV cache budget instead of taking it away (vLLM #44740); the KV cache "
                "is sized past the memory there is"
            )
        if self.capture_took_gib is not None and self.capture_took_gib < 0:
            out.append(
                f"the capture 'took {self.capture_took_gib:.2f} GiB': a negative free-memory delta "
                "(vLLM #25683, #44740), not the graphs' memory"
            )
        if self.pool_actual_gib is not None and self.pool_actual_gib < 0:
            out.append(f"the graph pool's actual {self.pool_actual_gib:.2f} GiB is negative (vLLM #44740)")
        return tuple(out)

    @property
    def capture_bars(self) -> tuple[ProgressBar, ...]:
        """The bars of the real capture (profiling captures left out)."""
        return tuple(b for b in self.bars if b.phase == "capture")

    def graph_counts(self) -> dict[str, dict[str, list[int]]]:
        """manager → mode → the M of every capture bar (one per bar; usually one)."""
        out: dict[str, dict[str, list[int]]] = {}
        for b in self.capture_bars:
            out.setdefault(b.manager, {}).setdefault(b.mode or "-", []).append(b.total)
        return out


def _int_list(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"-?\d+", text))


def _balanced(text: str, start: int) -> str | None:
    """The bracketed span opening at text[start] ("{", "[" or "("), quotes respected."""
    pairs = {"{": "}", "[": "]", "(": ")"}
    stack: list[str] = []
    quote: str | None = None
    i = start
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return text[start : i + 1]
        i += 1
    return None


def _compilation_config(config: str) -> dict[str, Any]:
    """The capture fields of the engine line's `compilation_config={...}` (a Python repr)."""
    out: dict[str, Any] = {}
    at = config.find("compilation_config={")
    if at < 0:
        return out
    cc = _balanced(config, at + len("compilation_config=")) or config[at:]
    # As every release read prints them (0.26.0's, 0.33.0's engine lines): enums as their repr (a
    # pydantic dump in Python mode), the sizes and maximum always set ([] and 0 without graphs:
    # vllm/config/vllm.py `_set_cudagraph_sizes`).
    if m := re.search(r"'cudagraph_mode': <CUDAGraphMode\.(\w+)[^>]*>", cc):
        out["cudagraph_mode"] = m.group(1)
    if m := re.search(r"'cudagraph_capture_sizes': (\[[\d, ]*\])", cc):
        out["cudagraph_capture_sizes"] = _int_list(m.group(1))
    if m := re.search(r"'max_cudagraph_capture_size': (\d+)", cc):
        out["max_cudagraph_capture_size"] = int(m.group(1))
    if m := re.search(r"'mode': <CompilationMode\.(\w+)[^>]*>", cc):
        out["compilation_mode"] = m.group(1)
    return out


def _engine_fields(config: str) -> dict[str, Any]:
    out = _compilation_config(config)
    # `speculative_config=None` without speculation (VllmConfig.__str__)
    if spec := re.search(r"speculative_config=SpeculativeConfig(?=\()", config):
        # the repr's span from its "("; on a line cut inside it, the rest of the line
        body = _balanced(config, spec.end()) or config[spec.end() :]
        if m := re.search(r"method=(['\"])(.*?)\1", body):
            out["speculative_method"] = m.group(2)
        if m := re.search(r"num_spec_tokens=(\d+)", body):
            out["num_speculative_tokens"] = int(m.group(1))
    if m := re.search(r"^model=(['\"])(.*?)\1", config):
        out["model"] = m.group(2)
    if m := re.search(r"\bmax_seq_len=(\d+)", config):
        out["max_model_len"] = int(m.group(1))
    if m := re.search(r"\btensor_parallel_size=(\d+)", config):
        out["tensor_parallel_size"] = int(m.group(1))
    if m := re.search(r"\benforce_eager=(True|False)\b", config):
        out["enforce_eager"] = m.group(1) == "True"
    return out


def _non_default_args(text: str) -> dict[str, Any]:
    """The "non-default args" dict repr; enum reprs (`<X.Y: v>`) become strings.

    >>> _non_default_args("{'max_num_seqs': 32, 'c': {'t': <DynamicShapesType.BACKED: 'backed'>}}")
    {'max_num_seqs': 32, 'c': {'t': 'DynamicShapesType.BACKED'}}
    >>> _non_default_args("{'max_num_seqs': 8, 'x': SomeConfig(a=1), 'max_num_batched_tokens': 64}")
    {'max_num_seqs': 8, 'max_num_batched_tokens': 64}
    """
    cleaned = re.sub(r"<(\w+(?:\.\w+)+): [^<>]*>", r"'\1'", text)
    try:
        value = ast.literal_eval(cleaned)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = None
    if isinstance(value, dict):
        return value
    # Not a literal (an object repr inside): the capture-relevant keys one by one.
    out: dict[str, Any] = {}
    for key in ("max_num_seqs", "max_num_batched_tokens"):
        if m := re.search(rf"'{key}': (\d+)", text):
            out[key] = int(m.group(1))
    if m := re.search(r"'num_speculative_tokens_per_batch_size': (?=\[)", text):
        listed = _balanced(text, m.end()) or ""  # not closed: "" is no literal either
        try:
            schedule = ast.literal_eval(listed)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            schedule = None
        out["speculative_config"] = {"num_speculative_tokens_per_batch_size": schedule}
    return out


def _schedule(args: dict[str, Any]) -> tuple[tuple[int, int, int], ...] | None:
    spec = args.get("speculative_config")
    if not isinstance(spec, dict):
        return None
    raw = spec.get("num_speculative_tokens_per_batch_size")
    if not isinstance(raw, (list, tuple)):
        return None
    out = []
    for entry in raw:
        if not (isinstance(entry, (list, tuple)) and len(entry) == 3):
            return None
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in entry):
            return None
        out.append((entry[0], entry[1], entry[2]))
    return tuple(out)


def _mode_name(text: str | None) -> str | None:
    if text is None:
        return None
    return text.removeprefix("CUDAGraphMode.")


class _BarTracker:
    """Folds tqdm's redraws into one `ProgressBar` per bar."""

    def __init__(self, fmt: LogFormat) -> None:
        self.fmt = fmt
        self.bars: list[dict[str, Any]] = []
        self.current: dict[str, int] = {}
        """desc → index into bars of its open bar."""
        self.closed: set[str] = set()

    def see(self, desc: str, n: int, total: int, index: int) -> None:
        i = self.current.get(desc)
        bar = self.bars[i] if i is not None else None
        if (
            bar is None
            or total != bar["total"]
            or n < bar["done"]
            or (desc in self.closed and bar["done"] == bar["total"])
        ):
            self.current[desc] = len(self.bars)
            self.bars.append({"desc": desc, "done": n, "total": total, "index": index})
        else:
            bar["done"] = n
        self.closed.discard(desc)

    def newline(self, desc_in_segment: str | None) -> None:
        # tqdm ends a closed bar with a newline; a later bar of the same description is a new one.
        if desc_in_segment is not None:
            self.closed.add(desc_in_segment)

    def result(self, profiling_before: int) -> tuple[ProgressBar, ...]:
        out = []
        for b in self.bars:
            desc = b["desc"]
            manager, mode, runner = desc, None, None
            for fam in self.fmt.bar_families:
                if m := fam.pattern.match(desc):
                    manager, mode, runner = fam.manager, m.group("mode"), fam.runner
                    break
            else:
                if m := re.match(r"^Capturing (.+?) CUDA graphs \((\w+)\)$", desc):
                    manager, mode = m.group(1), m.group(2)
            phase = (
                "profiling"
                if self.fmt.v2_profiling_capture and runner == "v2" and b["index"] < profiling_before
                else "capture"
            )
            out.append(ProgressBar(desc, manager, mode, runner, b["done"], b["total"], phase))
        return tuple(out)


def _event(kind: str, message: str, **values: Any) -> LogEvent:
    return LogEvent(kind, message.strip(), tuple(sorted(values.items())))


DEFERRED_CHARS = 1 << 16
"""Most text a region (or `_Pending`) defers before it reads it (64 Ki characters: a few engine
start-ups' worth of the lines that hold a keyword)."""


class _Region:
    """The parse state of one engine's lines: the last engine's region is the `ParsedLog`.

    `feed` is the per-segment step of the parse; segments before the engine line (the config
    warnings vLLM logs first) are fed with `i < engine_at`, where only the config-time lines,
    progress bars and metrics tables count.
    """

    def __init__(
        self, fmt: LogFormat, engine_at: int, version: str | None, engine_config: str | None
    ) -> None:
        self.fmt = fmt
        self.engine_at = engine_at
        self.version = version
        self.engine_config = engine_config
        """The engine line's config text; read in `result` (only the last region's is needed)."""
        self.recognised = engine_at >= 0
        self.events: list[LogEvent] = []
        self.runner_evidence: list[tuple[str, str]] = []
        self.non_default: str | None = None
        """The last "non-default args" dict text; read in `result`."""
        self.chunked_tokens: int | None = None
        self.profiling: tuple[tuple[str, int, int], ...] | None = None
        self.estimate: float | None = None
        self.finishes: list[tuple[int, float, float]] = []
        self.pool: re.Match[str] | None = None
        self.kv_gib: float | None = None
        self.kv_tokens: int | None = None
        self.kv_at = -1
        self.skipped = self.ready = self.speculator = self.worker = False
        self.last_activity: str | None = None
        self.tables: list[dict[str, Any]] = []
        self.table: dict[str, Any] | None = None
        self.tracker = _BarTracker(fmt)

        self.deferred: list[tuple[int, str, bool]] = []
        """Segments fed but not read yet, in order (see `feed`)."""
        self.deferred_chars = 0
        self.eager = False
        """Read each segment as it is fed: the region outlived `DEFERRED_CHARS` of deferred text
        (it is likely the last, whose every segment is read)."""
        self.in_table = False
        """A metrics table is open once every segment fed is read (`_read`'s `table`, known
        before the segments are read: see `_follow_table`)."""
        self.table_rows: bool
        """That table has rows: set with every table `_follow_table` opens and read only while one
        is open (`in_table` first), so it has no value before the first."""

    def feed(self, i: int, seg: str, ends_line: bool) -> None:
        """One segment (a line, or a part of it between tqdm's carriage returns), number `i`.

        Read later, in order (`flush`): only the last engine's region is the result, so in a log
        of many restarts most regions are dropped unread when the next engine line comes. What
        the parse needs at once (whether a metrics table is open, for which every line is
        read) is followed as it is fed, and at most `DEFERRED_CHARS` wait, so memory stays
        bounded; a region that outlives them reads each segment as it comes from then on.
        """
        if self.in_table or _HEADER_GUARD in seg:
            self._follow_table(seg)
        if self.eager:
            self._read(i, seg, ends_line)
            return
        self.deferred.append((i, seg, ends_line))
        self.deferred_chars += len(seg)
        if self.deferred_chars > DEFERRED_CHARS:
            self.flush()
            self.eager = True

    def _follow_table(self, seg: str) -> None:
        """What `_read` will do with `seg` to the open metrics table, told now: the same tests
        in the same order (`tests/core/logs/test_logs_stream.py` reads logs with and without deferral)."""
        if not seg:
            if self.in_table and self.table_rows:
                self.in_table = False
            return
        fmt = self.fmt
        if self.in_table:
            if fmt.metrics_mode.search(seg) or fmt.metrics_sizes.search(seg):
                return
            if fmt.metrics_row.search(seg):
                self.table_rows = True
                return
            if fmt.metrics_other.search(seg) or not _message(seg):
                return
            self.in_table = False
        if _HEADER_GUARD in seg and fmt.metrics_header.search(seg):
            self.in_table = True
            self.table_rows = False

    def flush(self) -> None:
        """Read the deferred segments."""
        deferred, self.deferred, self.deferred_chars = self.deferred, [], 0
        for item in deferred:
            self._read(*item)

    def _read(self, i: int, seg: str, ends_line: bool) -> None:
        """`feed`'s work on one segment."""
        fmt, g = self.fmt, GUARDS  # each pattern is searched only where its GUARDS text is
        if not seg:
            if self.table is not None and self.table["rows"]:
                self.table = None
            return
        bar_desc: str | None = None
        for bm in fmt.bar.finditer(seg) if g["bar"] in seg else ():
            bar_desc = bm.group("desc")
            self.tracker.see(bar_desc, int(bm.group("n")), int(bm.group("total")), i)
            self.recognised = True
            self.last_activity = f"{bar_desc}: {bm.group('n')}/{bm.group('total')}"
        if ends_line:
            self.tracker.newline(bar_desc)
        if self.table is not None:
            if m := fmt.metrics_mode.search(seg):
                self.table["mode"] = m.group("mode")
                return
            if m := fmt.metrics_sizes.search(seg):
                self.table["sizes"] = _int_list(m.group("sizes"))
                return
            if m := fmt.metrics_row.search(seg):
                self.table["rows"].append(
                    MetricsRow(
                        int(m.group("unpadded")),
                        int(m.group("padded")),
                        int(m.group("paddings")),
                        m.group("mode"),
                        int(m.group("count")),
                    )
                )
                return
            if fmt.metrics_other.search(seg) or not _message(seg):
                return
            self.table = None
        if fmt.metrics_header.search(seg) if g["metrics_header"] in seg else None:
            self.table = {"mode": None, "sizes": None, "rows": []}
            self.tables.append(self.table)
            self.recognised = True
            return
        if i < self.engine_at and not (
            (fmt.runner_fallback.search(seg) if g["runner_fallback"] in seg else None)
            or (fmt.dynamic_sd_override.search(seg) if g["dynamic_sd_override"] in seg else None)
            or (fmt.truncated_max.search(seg) if g["truncated_max"] in seg else None)
            or (fmt.sizes_overridden.search(seg) if g["sizes_overridden"] in seg else None)
            or (fmt.non_default_args.search(seg) if g["non_default_args"] in seg else None)
            or (fmt.chunked_prefill.search(seg) if g["chunked_prefill"] in seg else None)
        ):
            return
        if m := (fmt.non_default_args.search(seg) if g["non_default_args"] in seg else None):
            self.non_default = m.group("args")
            self.recognised = True
        if m := (fmt.chunked_prefill.search(seg) if g["chunked_prefill"] in seg else None):
            self.chunked_tokens = int(m.group("tokens"))
        if fmt.v2_runner.search(seg) if g["v2_runner"] in seg else None:
            self.runner_evidence.append(("v2", "Using V2 Model Runner"))
            self.recognised = self.worker = True
        if m := (fmt.runner_fallback.search(seg) if g["runner_fallback"] in seg else None):
            self.runner_evidence.append(("v1", "fallback: " + m.group(0)))
            self.events.append(_event("runner_fallback", m.group(0), unsupported=m.group("what")))
            self.recognised = True
        if fmt.v1_source.search(seg) if g["v1_source"] in seg else None:
            self.runner_evidence.append(("v1", "lines from vllm/v1/worker/gpu_model_runner.py"))
            self.worker = True
        if fmt.v2_source.search(seg) if g["v2_source"] in seg else None:
            self.runner_evidence.append(("v2", "lines from vllm/v1/worker/gpu/model_runner.py"))
            self.worker = True
        if m := (fmt.dynamic_sd_override.search(seg) if g["dynamic_sd_override"] in seg else None):
            self.events.append(
                _event(
                    "dynamic_sd_override",
                    _message(seg),
                    **{"from": m.group("from"), "to": m.group("to")},
                )
            )
            self.recognised = True
        if m := (fmt.truncated_max.search(seg) if g["truncated_max"] in seg else None):
            self.events.append(_event("truncated_max", m.group(0), size=int(m.group("size"))))
            self.recognised = True
        if m := (fmt.sizes_overridden.search(seg) if g["sizes_overridden"] in seg else None):
            self.events.append(
                _event(
                    "explicit_sizes_overridden",
                    m.group(0),
                    given=_int_list(m.group("given")),
                    final=_int_list(m.group("final")),
                )
            )
            self.recognised = True
        if m := (fmt.mode_downgrade.search(seg) if g["mode_downgrade"] in seg else None):
            self.events.append(
                _event(
                    "mode_downgrade",
                    _message(seg),
                    backend=m.group("backend") or m.group("spec_backend"),
                    support=m.group("support").strip(),
                    **{"from": m.group("from"), "to": m.group("to")},
                )
            )
            self.recognised = True
        if m := (fmt.profiling.search(seg) if g["profiling"] in seg else None):
            groups = tuple(
                (g.group("mode"), int(g.group("count")), int(g.group("largest")))
                for g in fmt.profiling_group.finditer(m.group("groups"))
            )
            self.profiling = groups or self.profiling
            self.recognised = True
        if m := (fmt.estimate.search(seg) if g["estimate"] in seg else None):
            self.estimate = float(m.group("gib"))
            self.recognised = True
        if m := (fmt.kv_memory.search(seg) if g["kv_memory"] in seg else None):
            self.kv_gib = float(m.group("gib"))
            self.kv_at = i
            self.recognised = True
            self.last_activity = m.group(0)
        if m := (fmt.kv_tokens.search(seg) if g["kv_tokens"] in seg else None):
            self.kv_tokens = int(m.group("tokens").replace(",", ""))
            self.recognised = True
        if m := (fmt.capture_finished.search(seg) if g["capture_finished"] in seg else None):
            self.finishes.append((i, float(m.group("secs")), float(m.group("gib"))))
            self.recognised = True
            self.last_activity = m.group(0)
        if m := (fmt.pool_memory.search(seg) if g["pool_memory"] in seg else None):
            self.pool = m
            self.recognised = True
        if m := (fmt.speculator_capture.search(seg) if g["speculator_capture"] in seg else None):
            self.speculator = True
            self.last_activity = m.group(0)
        if fmt.capture_skipped.search(seg) if g["capture_skipped"] in seg else None:
            self.skipped = True
            self.last_activity = _message(seg)
            self.events.append(_event("capture_skipped", _message(seg)))
        if fmt.engine_ready.search(seg) if g["engine_ready"] in seg else None:
            self.ready = True
            self.recognised = True

    def result(self, source: str, engine_starts: int) -> ParsedLog:
        """The `ParsedLog` of this region.

        Raises:
            LogError: no line of it is one vLLM writes.
        """
        self.flush()
        recognised = self.recognised
        events = self.events
        runner_evidence = self.runner_evidence
        if self.non_default is not None and len(self.non_default) > NON_DEFAULT_ARGS_MAX_CHARS:
            raise LogError(
                f"{source}: a 'non-default args' line of "
                f"{len(self.non_default):,} characters (more than {NON_DEFAULT_ARGS_MAX_CHARS >> 10} KiB; "
                "vLLM's is a few KiB): not read"
            )
        non_default = None if self.non_default is None else _non_default_args(self.non_default)
        chunked_tokens = self.chunked_tokens
        profiling = self.profiling
        estimate = self.estimate
        finishes = self.finishes
        pool = self.pool
        kv_gib = self.kv_gib
        kv_tokens = self.kv_tokens
        kv_at = self.kv_at
        skipped = self.skipped
        ready = self.ready
        speculator = self.speculator
        worker = self.worker
        last_activity = self.last_activity
        tables = self.tables
        tracker = self.tracker
        fmt = self.fmt
        version = self.version
        engine = {} if self.engine_config is None else _engine_fields(self.engine_config)
        if not recognised:
            raise LogError(
                f"{source}: not a vLLM log (no engine line 'Initializing a V1 LLM engine (vX) with config', "
                "no capture, memory or KV-cache line)"
            )

        bars = tracker.result(kv_at)
        profiling_capture: tuple[float, float] | None = None
        capture: tuple[float, float] | None = None
        for idx, secs, gib in finishes:
            if fmt.v2_profiling_capture and idx < kv_at and _runner_of(runner_evidence) == "v2":
                profiling_capture = (secs, gib)
            else:
                capture = (secs, gib)
        capture_bars = [b for b in bars if b.phase == "capture"]
        if capture is not None:
            status = "finished"
        elif skipped:
            status = "skipped"
        elif capture_bars or speculator or kv_at >= 0 or ready:
            status = "incomplete"
        else:
            status = "not reached"

        evidence = _dedupe(e for _, e in runner_evidence)
        runner_evidence.extend((b.runner, f"progress bar '{b.desc}'") for b in bars if b.runner is not None)
        runner = _runner_of(runner_evidence)
        evidence = _dedupe([*evidence, *(e for r, e in runner_evidence if e.startswith("progress bar"))])

        downgrades = [e for e in events if e.kind == "mode_downgrade"]
        mode = engine.get("cudagraph_mode")
        final_mode = downgrades[-1].value("to") if downgrades else mode
        max_tokens = chunked_tokens
        max_seqs: int | None = None
        schedule = None
        if non_default is not None:
            if max_tokens is None and isinstance(non_default.get("max_num_batched_tokens"), int):
                max_tokens = non_default["max_num_batched_tokens"]
            if isinstance(non_default.get("max_num_seqs"), int):
                max_seqs = non_default["max_num_seqs"]
            schedule = _schedule(non_default)

        return ParsedLog(
            source=source,
            log_format=fmt.since,
            vllm_version=version,
            engine_starts=engine_starts,
            model_runner=runner,
            model_runner_evidence=tuple(evidence),
            speculative_method=engine.get("speculative_method"),
            num_speculative_tokens=engine.get("num_speculative_tokens"),
            dynamic_sd_schedule=schedule,
            max_num_seqs=max_seqs,
            max_num_batched_tokens=max_tokens,
            tensor_parallel_size=engine.get("tensor_parallel_size"),
            enforce_eager=engine.get("enforce_eager"),
            has_non_default_args=non_default is not None,
            cudagraph_mode=mode,
            capture_sizes=engine.get("cudagraph_capture_sizes"),
            max_capture_size=engine.get("max_cudagraph_capture_size"),
            compilation_mode=engine.get("compilation_mode"),
            final_cudagraph_mode=final_mode,
            events=tuple(_dedupe(events)),
            profiling=profiling,
            estimated_cudagraph_gib=estimate,
            profiling_capture=profiling_capture,
            capture_finished_secs=capture[0] if capture else None,
            capture_took_gib=capture[1] if capture else None,
            actual_vs_estimated=pool.group(0) if pool else None,
            pool_actual_gib=float(pool.group("actual")) if pool else None,
            pool_estimated_gib=float(pool.group("estimated")) if pool else None,
            pool_difference_gib=float(pool.group("diff")) if pool else None,
            pool_difference_pct=float(pool.group("pct")) if pool else None,
            available_kv_cache_gib=kv_gib,
            kv_cache_tokens=kv_tokens,
            capture_status=status,
            engine_ready=ready,
            last_capture_activity=last_activity,
            worker_started=worker or kv_at >= 0 or bool(bars) or status != "not reached",
            bars=bars,
            metrics=tuple(MetricsTable(_mode_name(t["mode"]), t["sizes"], tuple(t["rows"])) for t in tables),
            engine_args=non_default,
            engine_model=engine.get("model"),
            max_model_len=engine.get("max_model_len"),
        )


GUARDS: dict[str, str] = {
    "engine": "Initializing a V1 LLM engine",
    "non_default_args": "non-default args",
    "chunked_prefill": "Chunked prefill",
    "v2_runner": "Using V2 Model Runner",
    "runner_fallback": "Model Runner V2 does not yet support",
    "v1_source": "gpu_model_runner",
    "v2_source": "model_runner",
    "dynamic_sd_override": "Dynamic speculative decoding",
    "truncated_max": "Truncating max_cudagraph_capture_size",
    "sizes_overridden": "cudagraph_capture_sizes specified",
    "mode_downgrade": "CUDAGraphMode.",
    "profiling": "Profiling CUDA graph memory",
    "estimate": "Estimated CUDA graph memory",
    "kv_memory": "Available KV cache memory",
    "kv_tokens": "KV cache size",
    "capture_finished": "Graph capturing finished",
    "pool_memory": "CUDA graph pool memory",
    "speculator_capture": "speculator...",
    "capture_skipped": "CUDA graph capture",
    "engine_ready": "init engine (profile",
    "bar": "CUDA graphs",
    "metrics_header": "CUDAGraph Config Settings:",
}
"""LogFormat field → a text every match of its pattern contains, in every log format (the
metrics-table lines aside, read only inside a table). A pattern is searched only in a segment
that holds its text, and a segment that holds none is skipped after a few substring tests
instead of thirty regular expressions. `tests/core/logs/test_logs_stream.py` proves it from the patterns
themselves, so a new pattern needs its entry here."""

_HEADER_GUARD = GUARDS["metrics_header"]
"""A segment without it cannot open a metrics table (what `_Region.feed` may defer)."""

KEYWORDS = (
    "engine",
    "non-default args",
    "Chunked prefill",
    "unner",
    "speculat",
    "captur",
    "CUDA",
    "KV cache memory",
    "KV cache size",
)
"""Texts one of which every `GUARDS` text contains: what a segment must hold to be read. Each is
searched for through every block of the log (`_Parser.block`), so they are few: a text shared by
several guards ("CUDA" for the seven of CUDA graph and CUDAGraph, "captur", "unner", "speculat")
replaces theirs; the few lines it finds that no guard holds cost a line's substring tests. Not "KV
cache" (every serving line's "GPU KV cache usage" holds it)."""


_TABLE_ONLY_FIELDS = ("metrics_mode", "metrics_sizes", "metrics_row", "metrics_other", "profiling_group")
"""LogFormat patterns never searched outside a metrics table (or outside another match)."""


def _may_match(seg: str) -> bool:
    """Whether a pattern outside a metrics table can match `seg` (see `GUARDS`)."""
    # A plain loop: on the per-line path it costs half of any() over a generator.
    for k in KEYWORDS:  # noqa: SIM110
        if k in seg:
            return True
    return False


class _Pending:
    """The segments since the last engine line that the next engine line would claim.

    vLLM logs an engine's config warnings before its engine line, so each engine's region starts
    after the previous engine's start-up: at its last "non-default args" line, else after its
    "init engine ... took" line, else right after the previous engine line. Only what a
    pre-engine segment can change is kept: segments some log format reads there (config
    warnings, bars, metrics lines) verbatim, and inside a possible metrics table its empty
    segments too (they end a table that has rows); of the others, nothing. So the memory is that
    of one engine's start-up, not the file.

    Outside a table, a keyword segment that cannot open one is only kept or not: it is deferred
    (as `_Region.feed` defers) and tested when the next engine line replays it, so the segments
    that the next "non-default args" or "init engine" line clears are never tested.
    """

    def __init__(self) -> None:
        self.items: list[tuple[int, str, bool]] = []
        """(i, segment, ends_line) of each segment kept."""
        self.in_table = False
        """A metrics-table header was kept and no message line has ended that table since."""
        self.deferred: list[tuple[int, str, bool]] = []
        """Keyword segments, outside a table and without a metrics-table header, not tested yet."""
        self.deferred_chars = 0

    def clear(self) -> None:
        self.items = []
        self.in_table = False
        self.deferred = []
        self.deferred_chars = 0

    def add(self, i: int, seg: str, ends_line: bool) -> None:
        """Segment `i`: a keyword segment, or while a table is open any other (outside one only
        keyword lines count before the engine line, and `_Parser.other_segment` gives no other)."""
        if self.in_table:
            self._add_in_table(i, seg, ends_line)
            return
        if _HEADER_GUARD not in seg:
            # it cannot open a table: it is only kept or not, which `flush` tests
            self.deferred.append((i, seg, ends_line))
            self.deferred_chars += len(seg)
            if self.deferred_chars > DEFERRED_CHARS:
                self.flush()
            return
        # A metrics-table header (every log format's metrics_header pattern is the guard's text:
        # tests/core/logs/test_logs_stream.py): kept after the segments deferred before it, and
        # the table it opens followed from here.
        self.flush()
        self.items.append((i, seg, ends_line))
        self.in_table = True

    def flush(self) -> None:
        """Test the deferred segments: kept where a pattern read outside a table matches."""
        deferred, self.deferred, self.deferred_chars = self.deferred, [], 0
        for item in deferred:
            if _pre_engine_outside_table(item[1]):
                self.items.append(item)

    def _add_in_table(self, i: int, seg: str, ends_line: bool) -> None:
        """A segment inside a possible metrics table (`items` ends at its header or after it;
        nothing is deferred, as the header flushed what was)."""
        if not seg or _PRE_ENGINE.search(seg):
            # a metrics-table line, or an empty segment (it ends a table that has rows)
            self.items.append((i, seg, ends_line))
        elif _message(seg):
            # A message ends the table and is not kept: the next segment the replay feeds (a kept
            # config warning, bar or header, or the engine line itself) is a message no
            # metrics-line pattern matches, and ends it there. A bare log prefix does nothing.
            self.in_table = False

    def replay(self, region: _Region) -> None:
        self.flush()
        for item in self.items:
            region.feed(*item)


def _union(fields: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern matching where a pattern of `fields` of any log format matches."""
    sources = dict.fromkeys(getattr(fmt, f).pattern for fmt in LOG_FORMATS for f in fields)
    # Named groups repeat across the patterns; only whether one matches counts here.
    unnamed = (re.sub(r"[(][?]P<\w+>", "(?:", source) for source in sources)
    return re.compile("|".join(f"(?:{source})" for source in unnamed))


_PRE_ENGINE = _union(
    (
        "bar",
        "metrics_header",
        "metrics_mode",
        "metrics_sizes",
        "metrics_row",
        "metrics_other",
        "runner_fallback",
        "dynamic_sd_override",
        "truncated_max",
        "sizes_overridden",
        "non_default_args",
        "chunked_prefill",
    )
)
"""What a segment before the engine line is read with, in any log format."""

_PRE_ENGINE_OUTSIDE_TABLE = tuple(
    (GUARDS[f], _union((f,)))
    for f in (
        "non_default_args",
        "chunked_prefill",
        "bar",
        "metrics_header",
        "runner_fallback",
        "dynamic_sd_override",
        "truncated_max",
        "sizes_overridden",
    )
)
"""`_PRE_ENGINE`'s fields that count outside a metrics table, each with its `GUARDS` text. Outside
a table, a segment only a metrics-table pattern matches does nothing when the next engine
replays it (its region has no open table then either), so it need not be kept; and searching
one field's pattern where its text is beats the union of twelve (a restart-dense log spent a
third of its parse there)."""


def _pre_engine_outside_table(seg: str) -> bool:
    for text, pattern in _PRE_ENGINE_OUTSIDE_TABLE:  # noqa: SIM110 - a loop is cheaper than any()
        if text in seg and pattern.search(seg):
            return True
    return False


class _Parser:
    """The one-pass parse: the current engine's `_Region` and the next one's `_Pending`."""

    def __init__(self) -> None:
        self.region = _Region(log_format_for(None), -1, None, None)  # the log, if no engine line comes
        self.pending = _Pending()
        self.engine_starts = 0
        self.i = 0
        """Number of the next segment read (only their order counts: lines stepped over by
        `block` are not numbered)."""

    def line(self, line: str) -> None:
        """One line, without its newline."""
        if line.endswith("\r"):
            # CRLF: the line break, not a progress bar redrawn (a segment of its own, empty, closed
            # a metrics table after its first row and ran the bars of two lines into one)
            line = line[:-1]
        if "\r" not in line:
            if _may_match(line):  # an empty line holds no keyword
                self.keyword_segment(line, True)
            else:
                self.other_segment(line, True)
            return
        parts = line.split("\r")
        last_part = len(parts) - 1
        for n, seg in enumerate(parts):
            if _may_match(seg):
                self.keyword_segment(seg, n == last_part)
            else:
                self.other_segment(seg, n == last_part)

    def other_segment(self, seg: str, ends_line: bool) -> None:
        """A segment without `KEYWORDS`: outside a metrics table no pattern can match it."""
        i = self.i
        self.i += 1
        if self.region.in_table:
            self.region.feed(i, seg, ends_line)
        if self.pending.in_table:
            self.pending.add(i, seg, ends_line)

    def keyword_segment(self, seg: str, ends_line: bool) -> None:
        """A segment that holds one of `KEYWORDS`."""
        i = self.i
        self.i += 1
        if GUARDS["engine"] in seg and (m := LOG_FORMATS[0].engine.search(seg)) is not None:
            self.engine_starts += 1
            version = m.group("version")
            region = self.region = _Region(log_format_for(version), i, version, m.group("config"))
            self.pending.replay(region)
            self.pending.clear()
            region.feed(i, seg, ends_line)
            return
        self.region.feed(i, seg, ends_line)
        fmt, g = LOG_FORMATS[0], GUARDS  # as in `_Region._read`: a pattern only where its text is
        if not self.engine_starts:
            self.pending.add(i, seg, ends_line)
        elif fmt.non_default_args.search(seg) if g["non_default_args"] in seg else None:
            self.pending.clear()
            self.pending.add(i, seg, ends_line)
        elif fmt.engine_ready.search(seg) if g["engine_ready"] in seg else None:
            self.pending.clear()
        else:
            self.pending.add(i, seg, ends_line)

    def block(self, text: str) -> None:
        """Lines joined by newlines (no trailing one). Only the lines that hold a `KEYWORDS`
        text are read while no metrics table is open (`line` would do nothing with the others):
        each keyword is searched for through the block with C string searches, once per line
        it is on, and the lines found are read in order."""
        find = text.find
        rfind = text.rfind
        found: set[int] = set()
        for k in KEYWORDS:
            at = find(k)
            while at >= 0:
                found.add(rfind("\n", 0, at) + 1)  # the line's start
                at = find("\n", at)
                if at < 0:
                    break
                at = find(k, at)
        starts = sorted(found)
        region, pending = self.region, self.pending
        n = 0
        pos = 0
        while True:
            if region.in_table or pending.in_table:
                stop = find("\n", pos)  # in a table every line counts
                if stop < 0:
                    self.line(text[pos:])
                    return
                self.line(text[pos:stop])
                pos = stop + 1
                region = self.region
                continue
            while n < len(starts) and starts[n] < pos:
                n += 1  # read already, in a table
            if n == len(starts):
                return
            start = starts[n]
            n += 1
            stop = find("\n", start)
            seg = text[start:stop] if stop >= 0 else text[start:]
            if "\r" in seg:
                self.line(seg)
            else:
                self.keyword_segment(seg, True)
            if stop < 0:
                return
            pos = stop + 1
            region = self.region


def parse_blocks(blocks: Iterable[str], source: str = "-") -> ParsedLog:
    """Parse a vLLM startup log given as blocks of lines (`log_blocks`: the text cut at some of
    its newlines), in one pass: memory for the last engine's lines and one engine start-up.

    Raises:
        LogError: no line of it is one vLLM writes.
    """
    parser = _Parser()
    for block in blocks:
        parser.block(block)
        del block  # before the next is made: a block is never held twice
    return parser.region.result(source, parser.engine_starts)


def parse_lines(lines: Iterable[str], source: str = "-") -> ParsedLog:
    """`parse_blocks` of lines given one by one, without their newlines (`text.split("\n")`).

    Raises:
        LogError: no line of it is one vLLM writes.
    """
    parser = _Parser()
    for line in lines:
        parser.line(line)
    return parser.region.result(source, parser.engine_starts)


def parse_log(text: str, source: str = "-") -> ParsedLog:
    """Parse a vLLM startup log (its console output, or `LEVEL logger: message` lines).

    Raises:
        LogError: no line of it is one vLLM writes.
    """
    return parse_blocks((text,), source)


_PREFIX = re.compile(
    r"^(?:\([^)]*\)\s*)?(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+(?:\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? )?"
    r"(?:\[[^\]]*\]\s?|[\w.]+: ))?"
)


def _message(segment: str) -> str:
    """The message of a log line, vLLM's "LEVEL date [file:line] " or "LEVEL logger: " cut off."""
    return _PREFIX.sub("", segment, count=1).strip()


def _runner_of(evidence: list[tuple[str, str]]) -> str | None:
    kinds = [r for r, _ in evidence]
    if "v2" in kinds and any(e == "Using V2 Model Runner" for _, e in evidence):
        return "v2"
    if any(e.startswith("fallback: ") for _, e in evidence):
        return "v1"
    if kinds:
        return max(("v1", "v2"), key=kinds.count)
    return None


def _dedupe(items: Iterable[Any]) -> list[Any]:
    seen: set[Any] = set()
    out = []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out
