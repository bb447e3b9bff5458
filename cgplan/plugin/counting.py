"""The per-step counters: one dict increment per dispatch, a summary line every N steps or S
seconds, the Prometheus counter brought up to date at each summary (never per step)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

from cgplan.core.logs.plugin import METRIC, StepCounts, bucket_of, counters_line, mixed_bucket_bounds

SUMMARY_STEPS_ENV = "CGPLAN_PLUGIN_SUMMARY_STEPS"
SUMMARY_SECONDS_ENV = "CGPLAN_PLUGIN_SUMMARY_S"
DEFAULT_SUMMARY_STEPS = 10_000
DEFAULT_SUMMARY_S = 60.0
_CLOCK_EVERY = 64
"""Steps between clock readings (a reading is ~50 ns; a step is milliseconds, but the counter's own
cost stays one increment and one compare)."""


def _env_number(name: str, default: float, log: Callable[[str], None]) -> float:
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        value = float(text)
        if value > 0:
            return value
    except ValueError:
        pass
    log(f"{name}={text!r} is not a positive number; using {default:g}")
    return default


class StepCounter:
    """Counts (is_decode, mode, size) → steps. `record` is the hot path: an increment and a
    compare; everything else runs at a summary."""

    def __init__(
        self,
        query_len: int,
        emit: Callable[[str], None],
        *,
        summary_steps: int = DEFAULT_SUMMARY_STEPS,
        summary_s: float = DEFAULT_SUMMARY_S,
        clock: Callable[[], float] = time.monotonic,
        on_summary: Callable[[StepCounter], None] | None = None,
    ) -> None:
        self.query_len = query_len
        self.emit = emit
        self.summary_steps = max(1, int(summary_steps))
        self.summary_s = summary_s
        self.clock = clock
        self.on_summary = on_summary
        self.counts: dict[tuple[bool, Any, int], int] = {}
        self.paused = 0
        self.steps = 0
        self._last: tuple[bool, Any, int] | None = None
        self._next_check = min(self.summary_steps, _CLOCK_EVERY)
        self._last_summary_steps = 0
        self._started = clock()
        self._last_summary_t = self._started

    def record(self, is_decode: bool, mode: Any, size: int) -> None:
        key = (is_decode, mode, size)
        self.counts[key] = self.counts.get(key, 0) + 1
        self._last = key
        self.steps += 1
        if self.steps >= self._next_check:
            self._check()

    def replace_last(self, is_decode: bool, mode: Any, size: int) -> None:
        """The same step dispatched again (data parallelism): its outcome is the second one."""
        last = self._last
        if last is not None and self.counts.get(last, 0) > 0:
            self.counts[last] -= 1
            self.steps -= 1
        self.record(is_decode, mode, size)

    def _check(self) -> None:
        now = self.clock()
        due = (self.steps - self._last_summary_steps >= self.summary_steps) or (
            now - self._last_summary_t >= self.summary_s
        )
        self._next_check = self.steps + min(self.summary_steps, _CLOCK_EVERY)
        if due:
            self.summarise(now)

    def summarise(self, now: float | None = None) -> str:
        """Log the summary line now (and bring the metrics up to date); returns the line."""
        now = self.clock() if now is None else now
        self._last_summary_steps, self._last_summary_t = self.steps, now
        line = counters_line(self.snapshot(), now - self._started)
        self.emit(line)
        if self.on_summary is not None:
            self.on_summary(self)
        return line

    def snapshot(self) -> StepCounts:
        """The counts so far, by kind, mode name and size."""
        decode: dict[str, dict[int, int]] = {}
        mixed: dict[str, dict[int, int]] = {}
        for (is_decode, mode, size), n in list(self.counts.items()):
            if n <= 0:
                continue
            table = decode if is_decode else mixed
            row = table.setdefault(str(getattr(mode, "name", mode)), {})
            row[size] = row.get(size, 0) + n
        return StepCounts(decode, mixed, self.query_len)


class PrometheusExport:
    """`cgplan_dispatch_steps_total{kind, mode, num_reqs | num_tokens_le}` in prometheus_client's
    default registry (what vLLM's /metrics serves in its own process; with
    PROMETHEUS_MULTIPROC_DIR set, through its multiprocess files). Updated at each summary by the
    counts' growth since the last one."""

    def __init__(self, capture_sizes: list[int], max_num_batched_tokens: int) -> None:
        import prometheus_client  # a vLLM dependency; imported only in an enabled plugin

        self.bounds = mixed_bucket_bounds(capture_sizes, max_num_batched_tokens)
        try:
            self.counter: Any = prometheus_client.Counter(
                METRIC.removesuffix("_total"),
                "Engine steps counted by cgplan's vLLM plugin: kind (decode: vLLM's uniform decode; "
                "mixed), the dispatcher's outcome (FULL, PIECEWISE, NONE = eager), and the step's "
                "request count (decode) or token-count bucket (mixed, by capture size)",
                ["kind", "mode", "num_reqs", "num_tokens_le"],
            )
        except ValueError:  # registered already in this process (a second engine): reuse it
            self.counter = prometheus_client.REGISTRY._names_to_collectors[METRIC]
        self.sent: dict[tuple[str, str, str, str], int] = {}

    def update(self, counter: StepCounter) -> None:
        counts = counter.snapshot()
        totals: dict[tuple[str, str, str, str], int] = {}
        for mode, row in counts.decode.items():
            for n, c in row.items():
                key = ("decode", mode, str(n), "")
                totals[key] = totals.get(key, 0) + c
        for mode, row in counts.mixed.items():
            for n, c in row.items():
                key = ("mixed", mode, "", str(bucket_of(n, self.bounds)))
                totals[key] = totals.get(key, 0) + c
        for key, total in totals.items():
            grew = total - self.sent.get(key, 0)
            if grew > 0:
                self.counter.labels(*key).inc(grew)
                self.sent[key] = total


def summary_settings(log: Callable[[str], None]) -> tuple[int, float]:
    """(steps, seconds) between summaries, from the environment."""
    steps = int(_env_number(SUMMARY_STEPS_ENV, DEFAULT_SUMMARY_STEPS, log))
    return steps, _env_number(SUMMARY_SECONDS_ENV, DEFAULT_SUMMARY_S, log)


def emitter(logger: logging.Logger) -> Callable[[str], None]:
    return logger.info
