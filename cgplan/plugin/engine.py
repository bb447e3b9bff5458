"""The enabled plugin's hooks on vLLM's worker: the start-up check after
`Worker.compile_or_warm_up_model`, the memory window around `capture_model`, and the per-step
counters (cgplan.gpu.vllm_plugin reads the engine; this module composes it with the planner)."""

from __future__ import annotations

import atexit
import importlib.util
import logging
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

from cgplan.gpu import vllm_plugin as vp
from cgplan.plugin import LOGGER, log_error
from cgplan.plugin.counting import PrometheusExport, StepCounter, summary_settings

COUNTERS_FILE_ENV = "CGPLAN_PLUGIN_COUNTERS"
"""A path: the counters are also written there as JSON at each summary and at exit."""
METRICS_PORT_ENV = "CGPLAN_PLUGIN_METRICS_PORT"
"""A port: serve the plugin's Prometheus counter there too (for an engine core in its own
process, whose metrics vLLM's /metrics does not show unless PROMETHEUS_MULTIPROC_DIR is set)."""

_windows: dict[int, vp.MemoryWindow] = {}
"""id(runner) → its capture window (a process holds one runner per worker)."""
ENGINES: list[Engine] = []
"""The engines this process checked (tests and the GPU driver read them)."""


class Engine:
    """One checked runner: its counter and the dispatch hook (on while serving)."""

    def __init__(self, runner: Any, counter: StepCounter | None, hook: vp.DispatchHook | None) -> None:
        self.runner = runner
        self.counter = counter
        self.hook = hook
        self.startup: list[str] = []


def _logger() -> logging.Logger:
    return logging.getLogger(LOGGER)


def guarded(where: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as e:
        log_error(where, e)
        return None


def _wrap_capture_model(orig: Callable[..., Any]) -> Callable[..., Any]:
    def capture_model(self: Any, *args: Any, **kwargs: Any) -> Any:
        window = vp.MemoryWindow()
        guarded("the memory reading before capture", lambda: vp.before_capture(window))
        out = orig(self, *args, **kwargs)
        guarded("the memory reading after capture", lambda: vp.after_capture(window, out))
        _windows[id(self)] = window
        return out

    return capture_model


def _wrap_compile_or_warm_up(orig: Callable[..., Any]) -> Callable[..., Any]:
    def compile_or_warm_up_model(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = orig(self, *args, **kwargs)
        guarded("the start-up check", lambda: after_start(self))
        return out

    return compile_or_warm_up_model


def after_start(worker: Any) -> Engine | None:
    """The start-up block, then counting on (called once the engine is ready to serve)."""
    if not vp.first_tp_rank(worker):
        return None
    runner = worker.model_runner
    vc = getattr(runner, "vllm_config", None) or worker.vllm_config
    platform = guarded("reading the GPU's name", vp.gpu_name)
    started = guarded("starting the counters", lambda: start_counting(runner, vc))
    counter, hook, counting = started or (
        None,
        None,
        "counters: off (they failed to start: see the error above)",
    )
    engine = Engine(runner, counter, hook)
    ENGINES.append(engine)
    try:
        from cgplan.plugin.startup import block, startup_lines

        engine.startup = startup_lines(runner, vc, _windows.get(id(runner)), platform, counting)
        _logger().info("%s", block(engine.startup))
    finally:  # counting goes on even where the check failed (its error is logged by the caller)
        if hook is not None:
            hook.on()
    return engine


def start_counting(runner: Any, vc: Any) -> tuple[StepCounter | None, vp.DispatchHook | None, str]:
    """The counter and its (not yet on) hook, and the block's line about them."""
    log = _logger()
    steps, seconds = summary_settings(lambda m: log.warning("[cgplan] error: %s", m))
    counter = StepCounter(vp.decode_query_len(runner, vc), log.info, summary_steps=steps, summary_s=seconds)
    hook, why = vp.dispatch_hook(runner, vc, counter)
    if hook is None:
        return None, None, f"counters: off ({why})"
    vp.pause_in_dummy_runs(runner, counter)
    words = (
        "counters: on: decode and mixed steps per outcome and size, a line every "
        f"{steps:,} steps or {seconds:g} s"
    )
    exports: list[Callable[[StepCounter], None]] = []
    prom: PrometheusExport | None = None
    if importlib.util.find_spec("prometheus_client") is None:  # a vLLM dependency: rarely missing
        words += "; Prometheus: not exported (prometheus_client is not importable here)"
    else:
        prom = guarded(
            "the Prometheus counter",
            lambda: PrometheusExport(
                list(vc.compilation_config.cudagraph_capture_sizes or ()),
                int(vc.scheduler_config.max_num_batched_tokens),
            ),
        )
    if prom is not None:
        exports.append(prom.update)
        words += "; Prometheus cgplan_dispatch_steps_total (updated at each line)"
        port = os.environ.get(METRICS_PORT_ENV)
        if port:
            served = guarded(f"serving metrics on port {port}", lambda: _serve(int(port)))
            words += f", served on port {port}" if served else ""
        elif os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "1") != "0" and not os.environ.get(
            "PROMETHEUS_MULTIPROC_DIR"
        ):
            words += (
                " (this engine core runs in its own process: vLLM's /metrics shows it only with "
                f"PROMETHEUS_MULTIPROC_DIR set; or set {METRICS_PORT_ENV})"
            )
    path = os.environ.get(COUNTERS_FILE_ENV)
    if path:
        exports.append(lambda c: _write_counts(c, path))
        atexit.register(lambda: guarded("writing the counters file", lambda: _write_counts(counter, path)))
        words += f"; counters file {path}"

    def on_summary(c: StepCounter) -> None:
        for export in exports:
            guarded("exporting the counters", lambda e=export: e(c))  # type: ignore[misc]

    counter.on_summary = on_summary
    return counter, hook, words


def _serve(port: int) -> bool:
    import prometheus_client

    prometheus_client.start_http_server(port)
    return True


def _write_counts(counter: StepCounter, path: str) -> None:
    import json

    from cgplan.core.logs.plugin import counts_document

    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(counts_document(counter.snapshot()), f, indent=1)
    os.replace(tmp, path)


def _patch_worker(module: ModuleType) -> None:
    vp.wrap_method(module.Worker, "compile_or_warm_up_model", _wrap_compile_or_warm_up)


def _patch_runner(module: ModuleType) -> None:
    vp.wrap_method(module.GPUModelRunner, "capture_model", _wrap_capture_model)


def install() -> None:
    """Hook vLLM's worker and runners as their modules are imported."""
    vp.on_import(
        {
            vp.WORKER_MODULE: lambda m: guarded("hooking the worker", lambda: _patch_worker(m)),
            vp.V1_RUNNER_MODULE: lambda m: guarded("hooking model runner V1", lambda: _patch_runner(m)),
            vp.V2_RUNNER_MODULE: lambda m: guarded("hooking model runner V2", lambda: _patch_runner(m)),
        }
    )
