"""Each kind of line `cgplan logs` reads, on its own and beside the others, from real vLLM logs
(issue 35: every rule of the parser is held by a test that fails when it breaks).

The lines are never typed here: each is the first line of its kind in the committed logs, the
console output of real H200 runs (tests/data/logs/*-vllm.log.gz, benchmarks/results/h200/latency,
plugin; vLLM 0.26.0) and the SYNTHETIC fixtures (tests/data/logs/synthetic-*.log: bars written by
tqdm with vLLM's descriptions, engine lines str(VllmConfig) of 0.26.0 and 0.33.0). What a line
must parse to is read off the line by vLLM's format string (0.33.0's source, file named per kind),
with string operations, not the parser's patterns. Variants are derived from real lines by a rule
(the speculative config of another run's engine line, vLLM's `SpeculativeConfig.__repr__` with no
method, a line cut short), and the deferral buffers are driven to `DEFERRED_CHARS` and one past it.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import gzip
import re
from pathlib import Path

import pytest

from cgplan.core.logs import parse as logs
from cgplan.core.logs.parse import GUARDS, LogError, LogEvent, ParsedLog, parse_lines, parse_log
from cgplan.core.vllm.log_formats import LOG_FORMATS
from tests.paths import ROOT_DIR, TESTS_DIR

LOGS = TESTS_DIR / "data" / "logs"
H200 = ROOT_DIR / "benchmarks" / "results" / "h200"
SOURCES = [
    *sorted(LOGS.glob("*-vllm.log.gz")),
    *sorted(H200.glob("latency/call*/*.log.gz")),
    *sorted(H200.glob("plugin/*.log")),
    *sorted(LOGS.glob("synthetic-*.log")),
]


def _text(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()


@functools.cache
def lines() -> tuple[str, ...]:
    """Every line of every source log, in order (synthetic headers left out)."""
    return tuple(line for p in SOURCES for line in _text(p).split("\n") if not line.startswith("#"))


def first(text: str, *, where: str | None = None, without: str | None = None) -> str:
    """The first real line holding `text` (and `where`, not `without`)."""
    for line in lines():
        if text in line and (where is None or where in line) and (without is None or without not in line):
            return line
    raise AssertionError(f"no line with {text!r}")


def message(line: str) -> str:
    """The message of a console line: vLLM's `LEVEL MM-DD HH:MM:SS [file.py:N] ` cut off."""
    return line.split("] ", 1)[1]


def between(line: str, before: str, after: str) -> str:
    """The text between `before` and the next `after` (a format string's %s)."""
    return line.split(before, 1)[1].split(after, 1)[0]


# ---------------------------------------------------------------- each line alone


def test_a_runner_fallback_warning_alone_is_a_vllm_log() -> None:
    """vllm/config/vllm.py (0.33.0 :761): "Model Runner V2 does not yet support %s; using the V1
    model runner instead." A log cut after it (the config failed next) is still vLLM's."""
    line = first("Model Runner V2 does not yet support")
    parsed = parse_log(line)
    unsupported = between(line, "does not yet support ", "; using the V1")
    assert unsupported == "ngram/ngram_gpu speculative decoding"
    assert parsed.events == (LogEvent("runner_fallback", message(line), (("unsupported", unsupported),)),)
    assert parsed.model_runner == "v1" and parsed.model_runner_evidence == (f"fallback: {message(line)}",)
    assert (parsed.capture_status, parsed.engine_starts, parsed.vllm_version) == ("not reached", 0, None)


def test_a_truncation_and_a_dynamic_sd_override_alone_are_vllm_logs() -> None:
    """vllm/config/vllm.py: "Truncating max_cudagraph_capture_size to %d" (:2627) and
    `_maybe_override_dynamic_sd_cudagraph_mode`'s "... Overriding cudagraph_mode from %s to %s"."""
    line = first("Truncating max_cudagraph_capture_size to ")
    size = int(line.rsplit(" ", 1)[1])
    assert parse_log(line).events == (LogEvent("truncated_max", message(line), (("size", size),)),)
    line = first("Overriding cudagraph_mode from ")
    a, b = between(line, "Overriding cudagraph_mode from ", " for").split(" to ")
    (event,) = parse_log(line).events
    assert (event.kind, event.message, event.value("from"), event.value("to")) == (
        "dynamic_sd_override",
        message(line),
        a,
        b,
    )


def test_an_explicit_sizes_override_alone_is_a_vllm_log() -> None:
    """vllm/config/vllm.py `_set_cudagraph_sizes` (0.33.0 :2639, a few lines after the truncation
    warning): "cudagraph_capture_sizes specified in compilation_config %s is overridden by config
    %s", two list reprs. No recorded run logged it: the line is made by that format string from
    the truncation warning's prefix and a real engine line's sizes, the larger ones dropped."""
    prefix = first("Truncating max_cudagraph_capture_size to ").split("] ", 1)[0] + "] "
    given = [
        int(x)
        for x in between(first("'cudagraph_capture_sizes': ["), "'cudagraph_capture_sizes': [", "]").split(
            ", "
        )
    ]
    final = given[:-2]
    line = f"{prefix}cudagraph_capture_sizes specified in compilation_config {given} is overridden by config "
    line += str(final)
    (event,) = parse_log(line).events
    assert (event.kind, event.message) == ("explicit_sizes_overridden", message(line))
    assert dict(event.values) == {"given": tuple(given), "final": tuple(final)}
    # before its engine line, as vLLM logs it: that engine's
    engine = first("Initializing a V1 LLM engine (v0.26.0)")
    assert parse_log(line + "\n" + engine).events == (event,)


def test_an_attention_downgrade_alone_is_a_vllm_log() -> None:
    """vllm/config/compilation.py: "CUDAGraphMode.%s is not supported with %s backend (support:
    %s); setting cudagraph_mode=%s"; the final mode is the downgrade's."""
    line = first("is not supported with ", where="setting cudagraph_mode=")
    parsed = parse_log(line)
    (event,) = parsed.events
    mode_from = between(line, "CUDAGraphMode.", " is not")
    backend = between(line, "is not supported with ", " backend")
    support = between(line, "(support: ", ")")
    mode_to = line.rsplit("setting cudagraph_mode=", 1)[1].strip()
    assert (event.kind, event.message) == ("mode_downgrade", message(line))
    assert dict(event.values) == {"from": mode_from, "to": mode_to, "backend": backend, "support": support}
    assert parsed.final_cudagraph_mode == mode_to and parsed.cudagraph_mode is None


def test_two_downgrades_in_turn_end_at_the_last() -> None:
    """vllm/config/compilation.py (0.33.0 :1395-1465) checks the mixed mode, then the decode mode,
    then spec-decode: FULL with a backend of UNIFORM_SINGLE_TOKEN_DECODE support and K > 0 logs
    "CUDAGraphMode.FULL is not supported with %s backend (support: %s); setting
    cudagraph_mode=FULL_AND_PIECEWISE", then "CUDAGraphMode.FULL_AND_PIECEWISE is not supported with
    spec-decode for attention backend %s (support: %s); setting cudagraph_mode=PIECEWISE". Both
    lines from the real one by those format strings (its prefix and backend)."""
    real = first("is not supported with ", where="setting cudagraph_mode=")
    prefix, backend = real.split("] ", 1)[0] + "] ", between(real, "is not supported with ", " backend")
    support = "AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE"
    mixed = (
        f"{prefix}CUDAGraphMode.FULL is not supported with {backend} backend (support: {support}); "
        "setting cudagraph_mode=FULL_AND_PIECEWISE"
    )
    spec = (
        f"{prefix}CUDAGraphMode.FULL_AND_PIECEWISE is not supported with spec-decode for attention backend "
        f"{backend} (support: {support}); setting cudagraph_mode=PIECEWISE"
    )
    parsed = parse_log(mixed + "\n" + spec)
    assert [(e.value("from"), e.value("to"), e.value("backend")) for e in parsed.events] == [
        ("FULL", "FULL_AND_PIECEWISE", backend),
        ("FULL_AND_PIECEWISE", "PIECEWISE", backend),
    ]
    assert parsed.final_cudagraph_mode == "PIECEWISE"
    assert parse_log(mixed).final_cudagraph_mode == "FULL_AND_PIECEWISE"


def test_the_worker_memory_lines_alone_are_vllm_logs() -> None:
    """gpu_worker.py (0.33.0): "Available KV cache memory: %s GiB" (:773), "CUDA graph pool memory:
    %s GiB (actual), %s GiB (estimated), difference: %s GiB (%.1f%%)." (:1004); gpu_model_runner.py:
    "Estimated CUDA graph memory: %.2f GiB total" (:6410); kv_cache_utils.py: "%s KV cache size:
    %s tokens" (:1148; "GPU KV cache size: {:,} tokens" in 0.26.0)."""
    kv = first("Available KV cache memory: ")
    parsed = parse_log(kv)
    assert parsed.available_kv_cache_gib == float(between(kv, "Available KV cache memory: ", " GiB"))
    # the KV cache is sized just before the capture: it started
    assert (parsed.capture_status, parsed.worker_started) == ("incomplete", True)
    assert parsed.last_capture_activity == message(kv)

    tokens = first("GPU KV cache size: ")
    parsed = parse_log(tokens)
    assert parsed.kv_cache_tokens == int(between(tokens, "KV cache size: ", " tokens").replace(",", ""))
    assert parsed.capture_status == "not reached"

    pool = first("CUDA graph pool memory: ")
    parsed = parse_log(pool)
    actual, estimated = between(pool, "memory: ", " GiB (actual)"), between(pool, "(actual), ", " GiB (est")
    diff, pct = between(pool, "difference: ", " GiB"), pool.rsplit("(", 1)[1].split("%)", 1)[0]
    assert parsed.actual_vs_estimated == message(pool)
    assert (parsed.pool_actual_gib, parsed.pool_estimated_gib) == (float(actual), float(estimated))
    assert (parsed.pool_difference_gib, parsed.pool_difference_pct) == (float(diff), float(pct))

    estimate = first("Estimated CUDA graph memory: ")
    assert parse_log(estimate).estimated_cudagraph_gib == float(between(estimate, "memory: ", " GiB total"))


def test_the_profiling_line_alone_is_a_vllm_log() -> None:
    """gpu_model_runner.py (0.33.0 :6304): "Profiling CUDA graph memory: %s", the groups
    "MODE=N (largest=T)" joined with ", "."""
    line = first("Profiling CUDA graph memory: ", where=", FULL=")
    groups = []
    for group in message(line).removeprefix("Profiling CUDA graph memory: ").split(", "):
        mode, rest = group.split("=", 1)
        count, largest = rest.removesuffix(")").split(" (largest=")
        groups.append((mode, int(count), int(largest)))
    assert len(groups) == 2
    assert parse_log(line).profiling == tuple(groups)


def test_a_capture_finished_line_alone_is_a_finished_capture() -> None:
    """gpu_model_runner.py :6517 and gpu/model_runner.py :1164: "Graph capturing finished in %.0f
    secs, took %.2f GiB"."""
    for where in ("[gpu_model_runner.py:", "[model_runner.py:"):
        line = first("Graph capturing finished in ", where=where)
        parsed = parse_log(line)
        secs, gib = between(line, "finished in ", " secs"), between(line, "took ", " GiB")
        assert (parsed.capture_finished_secs, parsed.capture_took_gib) == (float(secs), float(gib))
        assert parsed.capture_status == "finished" and parsed.last_capture_activity == message(line)
        assert parsed.profiling_capture is None
    # the V1 runner's file names it; the V2 runner's file (gpu/model_runner.py) names V2
    assert (
        parse_log(first("Graph capturing finished in ", where="[gpu_model_runner.py:")).model_runner == "v1"
    )
    assert parse_log(first("Graph capturing finished in ", where="[model_runner.py:")).model_runner == "v2"


def test_the_engine_ready_and_runner_lines_alone_are_vllm_logs() -> None:
    """core.py (0.33.0 :413) "init engine (profile, create kv cache, warmup model) took %.2f s";
    gpu_worker.py (:513) "Using V2 Model Runner"."""
    ready = parse_log(first("init engine (profile, create kv cache, warmup model) took"))
    assert ready.engine_ready and ready.capture_status == "incomplete"
    v2 = parse_log(first("Using V2 Model Runner"))
    assert (v2.model_runner, v2.model_runner_evidence, v2.worker_started) == (
        "v2",
        ("Using V2 Model Runner",),
        True,
    )
    assert v2.capture_status == "not reached" and not v2.engine_ready


def test_a_non_default_args_line_alone_is_a_vllm_log() -> None:
    """entrypoints (0.33.0 startup.py :96): "non-default args: %s", the dict repr."""
    line = first("non-default args: {")
    parsed = parse_log(line)
    args = ast.literal_eval(
        re.sub(r"<(\w+(?:\.\w+)+): [^<>]*>", r"'\1'", line.split("non-default args: ", 1)[1])
    )
    assert parsed.has_non_default_args and parsed.engine_args == args
    assert (parsed.max_num_seqs, parsed.max_num_batched_tokens) == (
        args["max_num_seqs"],
        args["max_num_batched_tokens"],
    )


@pytest.mark.parametrize("extra", [0, 1])
def test_a_non_default_args_dict_is_read_up_to_its_bound(extra: int) -> None:
    """The dict is read up to `NON_DEFAULT_ARGS_MAX_CHARS` (64 KiB) characters and refused, at its
    line, one past (issue 33: evaluating a 7.5 MB one took seconds and GBs). The real line with its
    model path made long enough that the dict is exactly the bound, and one more."""
    line = first("non-default args: {", where="'model': '")
    path = between(line, "'model': '", "'")
    dict_chars = len(line.split("non-default args: ", 1)[1])
    grow = logs.NON_DEFAULT_ARGS_MAX_CHARS - dict_chars + extra
    longer = line.replace(f"'model': '{path}'", f"'model': '{path}{'/m' * (grow // 2)}{'x' * (grow % 2)}'", 1)
    assert len(longer.split("non-default args: ", 1)[1]) == logs.NON_DEFAULT_ARGS_MAX_CHARS + extra
    if extra:
        with pytest.raises(
            LogError, match=r"^log: a 'non-default args' line of 65,537 characters \(more than 64 KiB"
        ):
            parse_log(longer, "log")
    else:
        parsed = parse_log(longer, "log")
        assert parsed.has_non_default_args and f"'{path}/m/m/m" in str(parsed.engine_args)


def test_the_chunked_prefill_line_wins_over_the_non_default_args() -> None:
    """scheduler.py (0.33.0 :311): "Chunked prefill is enabled with max_num_batched_tokens=%d." is
    what the scheduler runs with; the "non-default args" figure is what was asked for."""
    args = first("non-default args: {", where="'max_num_batched_tokens': 8192")
    chunked = first("Chunked prefill is enabled with max_num_batched_tokens=", without="=8192.")
    tokens = int(between(chunked, "max_num_batched_tokens=", "."))
    assert tokens != 8192
    assert parse_log(args + "\n" + chunked).max_num_batched_tokens == tokens
    # in vLLM's order: both before the engine line they configure
    engine = first("Initializing a V1 LLM engine (v0.26.0)")
    parsed = parse_log("\n".join([args, chunked, engine]))
    assert (parsed.max_num_batched_tokens, parsed.engine_starts, parsed.has_non_default_args) == (
        tokens,
        1,
        True,
    )
    assert parse_log("\n".join([args, engine])).max_num_batched_tokens == 8192
    assert parse_log(args).max_num_batched_tokens == 8192
    # alone it says nothing that makes a log vLLM's
    with pytest.raises(LogError, match="not a vLLM log"):
        parse_log(chunked)


def test_a_log_without_any_line_vllm_writes_is_refused() -> None:
    serving = first("Initial profiling/warmup run took")  # monitor.py: no line cgplan reads
    with pytest.raises(LogError, match=r"^x: not a vLLM log"):
        parse_log(serving + "\n" + serving, "x")


# ---------------------------------------------------------------- the engine line per release


ENGINES = {
    "0.26.0": first("Initializing a V1 LLM engine (v0.26.0)", where="speculative_config=None"),
    "0.33.0": first("Initializing a V1 LLM engine (v0.33.0)"),
}


def _engine_expected(line: str) -> dict[str, object]:
    """The engine line's capture fields, read off `str(VllmConfig)` (vllm/config/vllm.py __str__,
    0.33.0 :2809): `key=value, ` pairs, compilation_config a dict repr (enum members as
    `<Enum.NAME: value>`)."""
    config = line.split(" with config: ", 1)[1]
    cc_text = config.split("compilation_config=", 1)[1].rsplit(", kernel_config=", 1)[0]
    cc = ast.literal_eval(re.sub(r"<(\w+)\.(\w+): [^<>]*>", r"'\2'", cc_text))
    return {
        "vllm_version": between(line, "engine (v", ")"),
        "engine_model": between(config, "model='", "'"),
        "max_model_len": int(between(config, ", max_seq_len=", ",")),
        "tensor_parallel_size": int(between(config, ", tensor_parallel_size=", ",")),
        "enforce_eager": between(config, ", enforce_eager=", ",") == "True",
        "cudagraph_mode": cc["cudagraph_mode"],
        "capture_sizes": tuple(cc["cudagraph_capture_sizes"]),
        "max_capture_size": cc["max_cudagraph_capture_size"],
        "compilation_mode": cc["mode"],
        "final_cudagraph_mode": cc["cudagraph_mode"],
    }


@pytest.mark.parametrize("release", sorted(ENGINES))
def test_engine_line_of_each_release(release: str) -> None:
    line = ENGINES[release]
    parsed = parse_log(line)
    assert {k: getattr(parsed, k) for k in _engine_expected(line)} == _engine_expected(line)
    assert (parsed.speculative_method, parsed.num_speculative_tokens) == (None, None)
    assert (parsed.engine_starts, parsed.vllm_version, parsed.log_format) == (
        1,
        release,
        {"0.26.0": "0.26.0", "0.33.0": "0.30.0"}[release],
    )
    assert parsed.capture_status == "not reached" and not parsed.worker_started


SPECS = sorted(
    {
        between(line, "speculative_config=", "), tokenizer=") + ")"
        for line in lines()
        if "speculative_config=Spec" in line
    }
)
"""Every `SpeculativeConfig(method=..., model=..., num_spec_tokens=...)` the logs hold
(vllm/config/speculative.py __repr__, 0.33.0 :2196)."""


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("release", sorted(ENGINES))
def test_engine_line_with_each_speculative_config(release: str, spec: str) -> None:
    """A release's engine line with another run's speculative config in place of `None`: its
    method and K, the rest of the line read as before."""
    line = ENGINES[release].replace("speculative_config=None,", f"speculative_config={spec},", 1)
    parsed = parse_log(line)
    method = between(spec, "method='", "'")
    k = int(between(spec, "num_spec_tokens=", ")"))
    assert (parsed.speculative_method, parsed.num_speculative_tokens) == (method, k)
    assert {k: getattr(parsed, k) for k in _engine_expected(line)} == _engine_expected(line)
    # `SpeculativeConfig(f"{method=}")` of a config without a method: no method, the same K
    no_method = line.replace(f"method='{method}'", "method=None", 1)
    assert (parse_log(no_method).speculative_method, parse_log(no_method).num_speculative_tokens) == (None, k)


def test_spec_methods_of_the_logs() -> None:
    assert {between(s, "method='", "'") for s in SPECS} == {"eagle", "ngram"}
    assert any("model=None" in s for s in SPECS) and any("model='" in s for s in SPECS)


@pytest.mark.parametrize("release", sorted(ENGINES))
def test_an_engine_line_cut_short_reads_what_it_holds(release: str) -> None:
    """A log whose last line was cut while it was written: the fields before the cut are read, the
    rest are None, and the parse never fails."""
    line = ENGINES[release]
    whole = parse_log(line)
    for cut in range(line.index(" with config: ") + 14, len(line), 97):
        part = parse_log(line[:cut])
        assert part.vllm_version == release and part.engine_starts == 1
        if "compilation_config={" not in line[:cut]:
            assert (part.cudagraph_mode, part.capture_sizes, part.compilation_mode) == (None, None, None)
        if ", max_seq_len=" + str(whole.max_model_len) + "," in line[:cut]:
            assert part.max_model_len == whole.max_model_len


# ---------------------------------------------------------------- deferral at its bound


def _keyword_lines() -> list[str]:
    """Real keyword lines of one run after its engine line, none of which a pre-engine pattern
    reads (so `_Pending` defers each and, when tested, drops it)."""
    text = _text(LOGS / "tiny-nospec-vllm.log.gz").split("\n")
    at = next(n for n, line in enumerate(text) if GUARDS["engine"] in line)
    out = [
        line
        for line in text[at + 1 :]
        if line
        and logs._may_match(line)
        and not logs._pre_engine_outside_table(line)
        and GUARDS["metrics_header"] not in line
        and GUARDS["engine_ready"] not in line
        and GUARDS["non_default_args"] not in line
    ]
    assert len(out) >= 3
    return out


@pytest.mark.parametrize("start", ["log", "after a start-up"])
@pytest.mark.parametrize("extra", [0, 1])
def test_pending_segments_are_tested_once_past_the_bound(
    monkeypatch: pytest.MonkeyPatch, extra: int, start: str
) -> None:
    """`_Pending` holds at most `DEFERRED_CHARS` of keyword segments untested: at the bound they
    wait; one character past it they are tested (and these, read by no pre-engine pattern, dropped).
    From the start of the log, and from an engine's "init engine ... took" line (where the next
    engine's pending segments start afresh)."""
    kept = _keyword_lines()
    total = sum(map(len, kept))
    monkeypatch.setattr(logs, "DEFERRED_CHARS", total - extra)
    parser = logs._Parser()
    if start != "log":
        parser.line(ENGINES["0.26.0"])
        parser.line(kept[0])  # deferred, then dropped with the start-up
        parser.line(first("init engine (profile, create kv cache, warmup model) took"))
        assert (parser.pending.deferred, parser.pending.deferred_chars) == ([], 0)
    for line in kept:
        parser.line(line)
        assert parser.pending.deferred_chars <= logs.DEFERRED_CHARS
    pending = parser.pending
    if extra:
        assert (pending.deferred, pending.deferred_chars, pending.items) == ([], 0, [])
    else:
        assert [seg for _, seg, _ in pending.deferred] == kept and pending.deferred_chars == total


@pytest.mark.parametrize("extra", [0, 1])
def test_a_region_reads_as_it_goes_once_past_the_bound(monkeypatch: pytest.MonkeyPatch, extra: int) -> None:
    """A region defers at most `DEFERRED_CHARS` of segments: at the bound it still defers; one past
    it, it reads them and every later one as it comes. The parse is the same either way."""
    engine = ENGINES["0.26.0"]
    kept = _keyword_lines()
    total = len(engine) + sum(map(len, kept))
    text = "\n".join([engine, *kept])
    monkeypatch.setattr(logs, "DEFERRED_CHARS", total - extra)
    parser = logs._Parser()
    for line in [engine, *kept]:
        parser.line(line)
        assert parser.region.deferred_chars <= logs.DEFERRED_CHARS
    region = parser.region
    assert region.eager == bool(extra)
    assert len(region.deferred) == (0 if extra else 1 + len(kept))
    eager = parser.region.result("-", parser.engine_starts)
    monkeypatch.setattr(logs, "DEFERRED_CHARS", -1)
    assert eager == parse_log(text) and eager.available_kv_cache_gib is not None


# ---------------------------------------------------------------- segments and line ends


def test_crlf_and_carriage_returns_split_segments_not_lines() -> None:
    """A CRLF line end is a line end, not a redraw: the line reads as without it; a carriage
    return inside a line splits it into segments, each read (a tqdm redraw)."""
    kv = first("Available KV cache memory: ")
    finished = first("Graph capturing finished in ")
    assert parse_lines([kv + "\r", finished + "\r"]) == parse_lines([kv, finished])
    joined = parse_lines([kv + "\r" + finished])
    assert joined == parse_lines([kv, finished])
    assert joined.capture_status == "finished" and joined.available_kv_cache_gib is not None


def test_a_bar_split_by_its_redraws_is_one_bar() -> None:
    """tqdm redraws a bar after a carriage return; the last state of a bar is what it captured."""
    line = first("Capturing CUDA graphs (PIECEWISE):", where="\r")
    parts = [p for p in line.split("\r") if p]
    parsed = parse_log(line)
    (bar,) = [b for b in parsed.bars if b.desc == "Capturing CUDA graphs (PIECEWISE)"]
    total = int(parts[-1].split("/", 1)[1].split(" ", 1)[0])
    assert (bar.done, bar.total, bar.mode) == (total, total, "PIECEWISE")
    assert (bar.manager, bar.runner, bar.phase) == ("target", "v2", "capture")


def test_parse_results_are_frozen() -> None:
    parsed = parse_log(ENGINES["0.33.0"])
    assert isinstance(parsed, ParsedLog)
    with pytest.raises(dataclasses.FrozenInstanceError):
        parsed.engine_starts = 2  # type: ignore[misc]


def test_the_deferral_bound_is_a_few_start_ups() -> None:
    """`DEFERRED_CHARS` is 64 Ki characters (its docstring; the peak-memory budgets of
    test_logs_stream.py rest on it): several of the largest real start-ups' keyword lines."""
    assert logs.DEFERRED_CHARS == 64 * 1024
    largest = max(
        sum(len(s) for line in _text(p).split("\n") for s in line.split("\r") if s and logs._may_match(s))
        for p in sorted(LOGS.glob("*-vllm.log.gz"))
    )
    assert 4 * largest < logs.DEFERRED_CHARS < 16 * largest


def test_a_block_that_starts_with_an_empty_line_reads_its_keyword_lines() -> None:
    """`_Parser.block` finds each keyword line by the newline before it; a block may start with an
    empty line (a log cut at a blank line, a file that starts with one)."""
    text = _text(LOGS / "tiny-nospec-vllm.log.gz").rstrip("\n")
    whole = parse_log(text)
    assert whole.capture_status == "finished"
    assert logs.parse_blocks(["\n" + text]) == whole
    blocks = text.split("\n")
    assert logs.parse_blocks(["\n" + b for b in blocks]) == whole
    assert logs.parse_blocks(["\n\n" + "\n".join(blocks[:3]), "\n".join(blocks[3:])]) == whole


def _table() -> list[str]:
    """The first `--cudagraph-metrics` table of synthetic-v2-eagle-k16-bars.log (vLLM 0.26.0's
    CUDAGraphLogging, prefixed per line as vLLM's NewLineFormatter does), header to last row."""
    text = (LOGS / "synthetic-v2-eagle-k16-bars.log").read_text().split("\n")
    at = next(n for n, line in enumerate(text) if "CUDAGraph Config Settings:" in line)
    end = next(n for n in range(at + 1, len(text)) if "CUDAGraph Config Settings:" in text[n])
    return text[at:end]


@pytest.mark.parametrize("deferred", ["deferred", "read at once"])
@pytest.mark.parametrize("bare", [False, True], ids=["prefixed", "bare"])
def test_a_table_before_its_engine_line_reads_as_after_it(
    monkeypatch: pytest.MonkeyPatch, bare: bool, deferred: str
) -> None:
    """A metrics table logged before an engine line is that engine's (`_Pending` keeps what it can
    change), and reads as the same table logged after the engine line (`_Region`), whatever line
    falls into it: an empty segment, a bare log prefix, a message, another row (two processes
    logging to one stream). `bare`: the table without vLLM's per-line prefix (a handler of one's own)."""
    if deferred != "deferred":
        monkeypatch.setattr(logs, "DEFERRED_CHARS", -1)  # a region reads each segment as fed
    table = [message(line) if bare else line for line in _table()]
    assert sum(1 for line in table if "| FULL " in line or "| NONE " in line) >= 3
    engine = ENGINES["0.26.0"]
    prefix = _table()[1]  # a bare prefix: "INFO ... [cuda_graph.py:123] "
    strays = ["", prefix, first("Kernel JIT monitor activated"), table[-1]]
    seen = set()
    for k in range(1, len(table) + 1):
        for stray in strays:
            variant = [*table[:k], stray, *table[k:], stray]
            after = parse_log("\n".join([engine, *variant])).metrics
            before = parse_log("\n".join([*variant, engine])).metrics
            assert before == after, (k, stray)
            seen.add(tuple(len(t.rows) for t in after))
    assert len(seen) >= 3  # the strays end the table at different rows


def test_a_bar_of_a_manager_cgplan_does_not_plan_keeps_its_own_words() -> None:
    """vLLM 0.33.0's DecoderReplayCudaGraphManager (models/deepseek_v41/nvidia/
    decoder_replay_cudagraph.py:89) captures with "Capturing decoder replay CUDA graphs", which
    CudaGraphManager.capture shows as f"{progress_bar_desc} ({mode.name})" (gpu/cudagraph_utils.py
    :461). A real V2 bar line with that description: counted under the bar's own words, no runner."""
    line = first("Capturing CUDA graphs (FULL):", where="\r")
    replay = line.replace("Capturing CUDA graphs (FULL)", "Capturing decoder replay CUDA graphs (FULL)")
    parsed = parse_log(replay)
    (bar,) = parsed.bars
    assert (bar.desc, bar.manager, bar.mode, bar.runner, bar.phase) == (
        "Capturing decoder replay CUDA graphs (FULL)",
        "decoder replay",
        "FULL",
        None,
        "capture",
    )
    assert bar.done == bar.total > 0 and parsed.model_runner is None
    assert parsed.graph_counts() == {"decoder replay": {"FULL": [bar.total]}}


@pytest.mark.parametrize("figure", ["0.00", "-0.01"])
def test_a_negative_graph_memory_figure_is_flagged(figure: str) -> None:
    """vLLM's graph-memory figures are free-memory deltas printed with %.2f: "took -9.96 GiB"
    (vLLM #25683), an estimate of -20.50 GiB (#44740). Each real line with its figure set to 0.00
    (not flagged) or -0.01 (the first negative one %.2f prints: flagged)."""
    took = first("Graph capturing finished in ")
    estimate = first("Estimated CUDA graph memory: ")
    pool = first("CUDA graph pool memory: ")
    lines = [
        took.replace(f"took {between(took, 'took ', ' GiB')} GiB", f"took {figure} GiB"),
        estimate.replace(between(estimate, "memory: ", " GiB total"), figure),
        pool.replace(f"memory: {between(pool, 'memory: ', ' GiB (actual)')} GiB", f"memory: {figure} GiB"),
    ]
    for n, line in enumerate(lines):
        flags = parse_log(line).negative_memory
        if figure == "0.00":
            assert flags == (), line
        else:
            assert len(flags) == 1 and figure in flags[0], line
            assert ("#44740" in flags[0]) and (n != 0 or "#25683" in flags[0])
    assert len(parse_log("\n".join(lines)).negative_memory) == (3 if figure != "0.00" else 0)


@pytest.mark.parametrize(
    "cache_dir",
    ["/cache/run}", "/cache/it's}", "/cache/a\"b'c}", "/c\\d}(["],
    ids=["brace", "double-quoted", "escaped", "backslash"],
)
@pytest.mark.parametrize("release", sorted(ENGINES))
def test_brackets_inside_a_quoted_value_do_not_end_the_compilation_config(
    release: str, cache_dir: str
) -> None:
    """compilation_config is a dict repr: a string value holding brackets (a cache directory) is
    quoted as Python's repr quotes it (' or ", backslash escapes), and its brackets are not the
    dict's: a "}" there does not end the dict before its capture fields. The real engine line with
    its `'cache_dir': ''` given such a value."""
    line = ENGINES[release]
    assert "'cache_dir': ''" in line
    variant = line.replace("'cache_dir': ''", f"'cache_dir': {cache_dir!r}", 1)
    assert {k: getattr(parse_log(variant), k) for k in _engine_expected(line)} == _engine_expected(line)


def test_the_runner_is_the_v2_line_then_the_fallback_then_the_most_evidence() -> None:
    """`model_runner`: "Using V2 Model Runner" says V2 whatever else the log holds; else the V2 → V1
    fallback warning says V1; else the runner most lines come from (gpu_model_runner.py: V1,
    gpu/model_runner.py: V2)."""
    v2 = first("Using V2 Model Runner")
    fallback = first("Model Runner V2 does not yet support")
    v1_lines = [line for line in lines() if "[gpu_model_runner.py:" in line][:3]
    v2_lines = [line for line in lines() if "[model_runner.py:" in line][:3]
    assert len(v1_lines) == len(v2_lines) == 3

    def runner(*text: str) -> str | None:
        return parse_log("\n".join([ENGINES["0.26.0"], *text])).model_runner

    assert runner(v2, *v1_lines) == "v2"
    assert runner(fallback, *v2_lines) == "v1"
    assert runner(*v1_lines, v2_lines[0]) == "v1"
    assert runner(*v2_lines, v1_lines[0]) == "v2"
    assert runner(v1_lines[0], v2_lines[0]) == "v1"  # a tie reads as V1
    assert runner() is None


SKIPS = {
    "[gpu_model_runner.py:": "Skipping CUDA graph capture. To turn on CUDA graph capture, ensure "
    "`cudagraph_mode` was not manually set to `NONE`",
    "[model_runner.py:": "Skipping encoder and decoder CUDA graph capture. To enable encoder capture, ensure "
    "`cudagraph_mm_encoder` is enabled; to enable decoder capture, ensure `cudagraph_mode` is not `NONE`.",
}
"""vLLM 0.33.0's capture_model with cudagraph_mode NONE: V1 gpu_model_runner.py :6419, V2
gpu/model_runner.py :1094 (constant messages, logged with logger.warning)."""


@pytest.mark.parametrize("source", sorted(SKIPS))
def test_a_skipped_capture_is_skipped(source: str) -> None:
    """The message from vLLM's source, behind the prefix of a real line of the same file (WARNING,
    as logger.warning prints it)."""
    real = first(source)
    prefix = "WARNING" + real.split("] ", 1)[0].removeprefix("INFO") + "] "
    line = prefix + SKIPS[source]
    parsed = parse_log(ENGINES["0.26.0"] + "\n" + line)
    assert parsed.capture_status == "skipped" and parsed.last_capture_activity == SKIPS[source]
    assert parsed.events == (LogEvent("capture_skipped", SKIPS[source]),)
    # a later "Graph capturing finished" (another capture of the same engine) says it finished
    done = parse_log("\n".join([ENGINES["0.26.0"], line, first("Graph capturing finished in ")]))
    assert done.capture_status == "finished"


@pytest.mark.parametrize("release", sorted(ENGINES))
def test_the_balanced_span_of_the_engine_lines_configs(release: str) -> None:
    """`_balanced` gives the bracketed span opening at a position, quotes respected: on the real
    engine line, compilation_config's dict up to the ", kernel_config=" that follows it, and
    StructuredOutputsConfig(...) up to its ", observability_config="."""
    line = ENGINES[release]
    at = line.index("compilation_config={") + len("compilation_config=")
    assert logs._balanced(line, at) == line[at:].rsplit(", kernel_config=", 1)[0]
    at = line.index("StructuredOutputsConfig(")
    assert logs._balanced(line, at + len("StructuredOutputsConfig")) == between(
        line, "structured_outputs_config=StructuredOutputsConfig", ", observability_config="
    )
    assert logs._balanced("{'a': [1, 2]", 0) is None  # not closed


@pytest.mark.parametrize(
    "name",
    ["synthetic-v1-ngram-k16-bars.log", "synthetic-v2-eagle-k16-bars.log"],
)
def test_the_table_followed_ahead_is_the_table_read(name: str) -> None:
    """`_Region.in_table` (followed as segments are fed, to know which to feed) is whether `_read`
    has a metrics table open once every fed segment is read, after every line of a log with tables."""
    parser = logs._Parser()
    opened = 0
    # the log, then its first table ended by a message line, by an empty line after its rows, and cut
    table = [message(line) for line in _table()]
    text = [
        *_text(LOGS / name).split("\n"),
        *table,
        first("Kernel JIT monitor activated"),
        *table,
        "",
        table[-1],
        *table[:4],
    ]
    for line in text:
        parser.line(line)
        region = parser.region
        region.flush()
        assert region.in_table == (region.table is not None), line
        opened += region.in_table
    assert opened


def test_a_dynamic_sd_schedule_is_read_only_whole() -> None:
    """`num_speculative_tokens_per_batch_size` of the real dynamic-SD run's "non-default args" line:
    (first, last, K) triples. `_schedule` takes it only when every entry is three ints: an entry of
    another length, a bool or a bare number gives no schedule (the plan does not guess one)."""
    line = first("'num_speculative_tokens_per_batch_size': [[")
    parsed = parse_log(line)
    raw = parsed.engine_args["speculative_config"]["num_speculative_tokens_per_batch_size"]  # type: ignore[index]
    assert parsed.dynamic_sd_schedule == tuple(tuple(e) for e in raw) and len(raw) >= 2

    def schedule(entries: object) -> object:
        return logs._schedule({"speculative_config": {"num_speculative_tokens_per_batch_size": entries}})

    assert schedule(raw) == parsed.dynamic_sd_schedule
    assert schedule([*raw[:-1], raw[-1][:2]]) is None
    assert schedule([*raw[:-1], [*raw[-1], 1]]) is None
    assert schedule([*raw[:-1], [raw[-1][0], raw[-1][1], True]]) is None
    assert schedule([*raw[:-1], 5]) is None
    assert schedule(None) is None and logs._schedule({}) is None


# ---------------------------------------------------------------- issue 35: seed-8103 survivors


@pytest.mark.parametrize("spec", SPECS)
def test_an_engine_line_cut_inside_its_speculative_config_reads_what_it_holds(spec: str) -> None:
    """A log cut while its engine line was written, inside `SpeculativeConfig(...)`: the repr has
    no closing parenthesis, so the rest of the line is read. The method is read once its quotes
    are both there, K once its digits end the cut text (a cut inside them reads fewer: not
    asserted), and nothing else of the repr is taken for them."""
    line = first(f"speculative_config={spec},")
    opening = "speculative_config=SpeculativeConfig("
    at = line.index(opening) + len(opening)
    close = at + len(spec) - len("SpeculativeConfig(") - 1  # the repr's own ")"
    method = between(spec, "method='", "'")
    k = int(between(spec, "num_spec_tokens=", ")"))
    assert line[close] == ")" and line[:close].endswith(f"num_spec_tokens={k}")
    for cut in range(at, close + 1):
        part = parse_log(line[:cut])
        assert part.vllm_version is not None and part.engine_starts == 1
        assert part.speculative_method == (method if f"method='{method}'" in line[at:cut] else None), cut
        if "num_spec_tokens=" not in line[at:cut]:
            assert part.num_speculative_tokens is None
    assert parse_log(line[:close]).num_speculative_tokens == k
    assert parse_log(line[: close + 1]).speculative_method == method


def test_a_non_default_args_line_without_max_num_seqs_reads_none() -> None:
    """`vllm serve` without `--max-num-seqs`: vLLM's `get_non_default_args` lists only what differs
    from EngineArgs' defaults, so the dict has no max_num_seqs. The real line with that entry
    taken out: no max_num_seqs is read, the dict and the batched-token limit are as printed."""
    line = first("non-default args: {", where="'max_num_seqs': ")
    (entry,) = re.findall(r", 'max_num_seqs': \d+(?=[,}])", line)
    edited = line.replace(entry, "", 1)
    args = ast.literal_eval(
        re.sub(r"<(\w+(?:\.\w+)+): [^<>]*>", r"'\1'", edited.split("non-default args: ", 1)[1])
    )
    assert "max_num_seqs" not in args
    parsed = parse_log(edited)
    assert parsed.has_non_default_args and parsed.engine_args == args
    assert parsed.max_num_seqs is None
    assert parsed.max_num_batched_tokens == args.get("max_num_batched_tokens")


def test_a_table_ended_by_a_message_keeps_no_serving_line_for_the_next_engine() -> None:
    """After a start-up, `_Pending` keeps a metrics table's lines for the next engine; the message
    line that ends the table ends that too, so the serving lines after it (the real log's keyword
    lines no pre-engine pattern reads, and an empty line and a bare prefix between) are not held:
    the memory of a start-up, not of the hours of serving. The next engine still gets the table."""
    text = _text(LOGS / "tiny-nospec-vllm.log.gz").split("\n")
    startup = text[: 1 + next(n for n, line in enumerate(text) if GUARDS["engine_ready"] in line)]
    table = _table()
    ended_by = first("Kernel JIT monitor activated")
    serving = [*_keyword_lines(), ended_by, "", table[1]] * 50
    parser = logs._Parser()
    for line in [*startup, *table, ended_by]:
        parser.line(line)
    assert parser.engine_starts == 1 and not parser.pending.in_table
    held = list(parser.pending.items)
    assert [seg for _, seg, _ in held] == [line for line in table if message(line)]  # not its bare prefixes
    for line in serving:
        parser.line(line)
    parser.pending.flush()
    assert parser.pending.items == held and not parser.pending.in_table
    parser.line(ENGINES["0.26.0"])
    assert parser.region.result("-", parser.engine_starts).metrics == parse_log("\n".join(table)).metrics


def test_an_engine_line_is_no_other_line() -> None:
    """No line pattern of any log format but the engine's matches a real engine line (every one
    the logs hold): `_Region._read` reads the engine line's own segment (`i == engine_at`) as
    after the engine line, and reading it as one before (only the config-time patterns) gives
    the same, which benchmarks/mutation-equivalents.json relies on."""
    engines = {line for line in lines() if GUARDS["engine"] in line}
    assert len(engines) >= 20
    for fmt in LOG_FORMATS:
        for field in dataclasses.fields(fmt):
            pattern = getattr(fmt, field.name)
            if isinstance(pattern, re.Pattern) and field.name != "engine":
                assert not any(pattern.search(line) for line in engines), (fmt.since, field.name)


def test_a_restart_after_serving_tables_reads_from_its_non_default_args_line() -> None:
    """A start-up, a `--cudagraph-metrics` table while serving, then a restart (the same real log
    again, whose first line is its "non-default args" line): that line starts the next engine's
    region, so the table, logged before it, is not the restarted engine's, which reads as its
    own lines alone."""
    startup = _text(LOGS / "tiny-nospec-vllm.log.gz")
    assert GUARDS["non_default_args"] in startup.split("\n", 1)[0]
    serving = "\n".join([*_table(), first("Kernel JIT monitor activated")])
    parsed = parse_log("\n".join([startup, serving, startup]))
    alone = parse_log(startup)
    assert parsed.engine_starts == 2 and parsed.metrics == () == alone.metrics
    assert dataclasses.replace(parsed, engine_starts=1) == alone


ATTENTION_CONFIG = (
    "AttentionConfig(backend=<AttentionBackendEnum.FLASH_ATTN: "
    "'vllm.v1.attention.backends.flash_attn.FlashAttentionBackend'>, "
    "backend_per_kind={}, flash_attn_version=None, use_prefill_decode_attention=False, "
    "flash_attn_max_num_splits_for_cuda_graph=32, tq_max_kv_splits_for_cuda_graph=32, "
    "use_trtllm_attention=None, disable_flashinfer_q_quantization=False, "
    "mla_prefill_backend=None, use_prefill_query_quantization=False, "
    "use_fp4_indexer_cache=False, indexer_kv_dtype='bf16', use_non_causal=False, "
    "sparse_mla_force_mqa=False, flex_attn_block_m=None, flex_attn_block_n=None, "
    "flex_attn_q_block_size=None, flex_attn_kv_block_size=None)"
)
"""`repr(AttentionConfig(backend="FLASH_ATTN"))` as vLLM 0.26.0 prints it (its oracle venv): what
`vllm serve --attention-config '{"backend": "FLASH_ATTN"}'` puts in the "non-default args" dict
(arg_utils' `parse_dataclass` makes the config object), a repr that is no Python literal."""


def test_a_non_default_args_dict_with_a_config_object_reads_its_schedule_and_limits() -> None:
    """A dict holding a config object's repr is no literal: its capture-relevant keys are read one
    by one, the dynamic-SD schedule among them. The real dynamic-SD run's line with vLLM's repr
    of that config added as one more entry: the schedule and limits are the unedited line's."""
    line = first("'num_speculative_tokens_per_batch_size': [[").rstrip()
    whole = parse_log(line)
    assert line.endswith("}") and whole.dynamic_sd_schedule and whole.max_num_seqs is not None
    edited = f"{line[:-1]}, 'attention_config': {ATTENTION_CONFIG}}}"
    with pytest.raises(ValueError):
        ast.literal_eval(
            re.sub(r"<(\w+(?:\.\w+)+): [^<>]*>", r"'\1'", edited.split("non-default args: ", 1)[1])
        )
    parsed = parse_log(edited)
    assert parsed.has_non_default_args and parsed.dynamic_sd_schedule == whole.dynamic_sd_schedule
    assert (parsed.max_num_seqs, parsed.max_num_batched_tokens) == (
        whole.max_num_seqs,
        whole.max_num_batched_tokens,
    )


def test_a_carriage_return_ends_the_segment_before_it() -> None:
    """A 'non-default args' line then a tqdm redraw's carriage return and another message on the
    same line (stdout and stderr interleaved): the dict before the '\\r' is read whole, as on a
    line of its own (read as one segment, its literal ran into the next message and was lost)."""
    args = first("non-default args: ")
    kv = first("Available KV cache memory: ")
    alone = parse_lines([args, kv])
    joined = parse_lines([args + "\r" + kv])
    assert alone.max_num_seqs is not None and alone.has_non_default_args
    assert (joined.max_num_seqs, joined.has_non_default_args, joined.available_kv_cache_gib) == (
        alone.max_num_seqs,
        True,
        alone.available_kv_cache_gib,
    )
