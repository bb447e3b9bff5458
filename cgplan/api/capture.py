"""The library entry point behind `cgplan capture --gpu`: config in, capture report out.

Whatever happens after the engine starts (out of memory, Ctrl-C, SIGTERM, an engine
error), the report written so far is kept: it is marked `partial` and carries the
failure, and the caller maps the failure class to an exit code.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from cgplan.core.compare.measure import MeasuredCapture, compare
from cgplan.core.model.reports import CaptureReport
from cgplan.core.plan.build import build_plan
from cgplan.core.plan.fingerprint import fingerprint
from cgplan.core.vllm.releases import SUPPORTED_VERSIONS, release_for
from cgplan.errors import CaptureError, ConfigError, ConfigRejected, GpuUnavailableError
from cgplan.gpu.probe import choose_backend, gpu_unavailable_reason, short_reason
from cgplan.gpu.recorder import GraphRecorder, NullProgress, ProgressSink
from cgplan.io.config import Overrides, load_config
from cgplan.io.reports import write_report
from cgplan.io.schema.capture import capture_report

BACKENDS = ("auto", "vllm", "torch", "fake")
"""`fake` is hidden: no GPU, for testing the scheduler around capture (cgplan/gpu/fake_backend.py)."""


class Terminated(BaseException):
    """SIGTERM arrived; raised in the main thread so the partial report is written."""


@contextmanager
def _sigterm_as_exception() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass(frozen=True)
class CaptureOutcome:
    """The report and how the capture ended."""

    report: CaptureReport
    failure: CaptureError | None


def run_capture(
    config: Path,
    overrides: Overrides,
    *,
    backend: str = "auto",
    device_index: int = 0,
    progress: ProgressSink | None = None,
    output: Path | None = None,
    allow_unknown_vllm: bool = False,
    per_graph: bool = True,
) -> CaptureOutcome:
    """Capture every graph of `config` on this GPU and compare with the plan.

    Raises:
        ConfigError: bad config (exit 2).
        GpuUnavailableError: this machine cannot capture (exit 3).
    """
    progress = progress or NullProgress()
    loaded = load_config(config, overrides)
    workers = loaded.input.tensor_parallel_size > 1
    if workers:
        # vLLM's workers are forked from this process and cannot use CUDA if it initialised the
        # driver first; asking NVML whether a GPU is there keeps it uninitialised (vLLM's import
        # sets the same, too late for the check below).
        os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    reason = None if backend == "fake" else gpu_unavailable_reason()
    if reason is not None:
        raise GpuUnavailableError(f"cannot capture here: {reason}")
    chosen = choose_backend(backend)
    inp = loaded.input
    if chosen == "vllm":
        from cgplan.gpu.vllm_backend import installed_vllm_version

        version = installed_vllm_version()
        release = release_for(version)  # a patch release plans with its release's rules
        if release is None and not allow_unknown_vllm:
            raise GpuUnavailableError(
                f"vLLM {version} is installed; cgplan knows the rules of {', '.join(SUPPORTED_VERSIONS)} "
                "(use --allow-unknown-vllm to capture anyway and compare with the newest rules)"
            )
        if release is not None and release != inp.vllm_version:
            rules = version if release == version else f"{release} (for {version})"
            progress.note(
                f"planning with the installed vLLM {rules}'s rules (config says {inp.vllm_version})"
            )
            inp = dataclasses.replace(inp, vllm_version=release)
    try:
        plan = build_plan(inp)
    except ConfigRejected as e:
        raise e.located(str(config)) from None
    from cgplan.api.plan import shipped_coefficients_for
    from cgplan.core.plan.assess import with_cost

    # The report carries the prediction next to the measurement (the aggregate of a
    # multi-config run shows both); the comparison does not look at it.
    plan = with_cost(plan, inp, shipped_coefficients_for(inp))
    # The config as load_config read it, in vLLM's snake_case (the engine's keyword arguments).
    document = loaded.document
    if document is None and chosen == "vllm":
        raise ConfigError(
            "",
            "the vllm capture backend takes a vLLM config YAML; a manifest or an args list is planned, "
            "not captured (write its flags as a config, or use --backend torch)",
            source=loaded.source,
        )
    raw = {str(k).replace("-", "_"): v for k, v in (document or {}).items()}
    from cgplan.gpu.environment import collect_environment
    from cgplan.gpu.nvml import NvmlSession, nvml_session

    log_lines: list[str] = []
    failure: CaptureError | None = None
    measured: MeasuredCapture | None = None
    total = (
        sum(len(g) for g in plan.graphs.values())
        if chosen in ("vllm", "fake")
        else len(plan.graphs.get("target", ()))
    )
    # With vLLM's workers, each opens NVML itself after the fork; the parent holds none across it.
    in_workers = workers and chosen == "vllm"
    if in_workers and device_index != 0:
        progress.note(
            f"--device {device_index} is not used with tensor_parallel_size > 1: vLLM's ranks take the "
            "first visible GPUs (choose them with CUDA_VISIBLE_DEVICES)"
        )
        device_index = 0
    session: AbstractContextManager[NvmlSession | None] = (
        nullcontext(None)
        if in_workers or chosen == "fake"
        else nvml_session([device_index + i for i in range(inp.tensor_parallel_size)])
    )
    with session as nvml:
        recorder = GraphRecorder(nvml, progress)
        progress.start(total)
        try:
            with _sigterm_as_exception():
                if chosen == "fake":
                    from cgplan.gpu.fake_backend import capture_fake

                    measured = capture_fake(plan, recorder, Path(config).stem)
                elif chosen == "vllm":
                    from cgplan.gpu.vllm_backend import capture_vllm

                    # relative paths start from the working directory, as in vLLM
                    measured = capture_vllm(inp, raw, str(Path.cwd()), recorder, nvml, log_lines, per_graph)
                else:
                    from cgplan.gpu.torch_backend import capture_plan_torch

                    measured, _ = capture_plan_torch(plan, inp.model, progress, device_index, recorder)
                    if measured.status != "complete":
                        failure = CaptureError(measured.failure or "capture failed")
        except KeyboardInterrupt:
            failure = CaptureError("interrupted (SIGINT); the partial report was kept")
        except Terminated:
            failure = CaptureError("terminated (SIGTERM); the partial report was kept")
        except Exception as e:  # the engine's own failure: keep what was measured
            text = short_reason(e)
            # The workers' records reach this process only once the engine is up.
            done = "an unknown number of" if in_workers else str(len(recorder.measurements()))
            if "out of memory" in text.lower() or "OutOfMemory" in type(e).__name__:
                failure = CaptureError(
                    f"capture failed (out of memory) after {done} graphs: {text}; the partial report was "
                    "kept (HINT: lower gpu_memory_utilization, or capture fewer sizes: cgplan optimize)"
                )
            else:
                failure = CaptureError(
                    f"capture failed (engine error) after {done} graphs: {type(e).__name__}: {text}"
                )
    if measured is None:
        graphs = recorder.measurements()
        measured = MeasuredCapture(
            backend=chosen,
            status="partial" if graphs else "failed",
            failure=failure.message if failure else None,
            graphs=graphs,
        )
    elif failure is not None and measured.failure is None:
        measured = dataclasses.replace(measured, status="partial", failure=failure.message)
    comparison = compare(plan, measured) if measured.status == "complete" or measured.graphs else None

    report = capture_report(
        source=str(config),
        fingerprint=fingerprint(inp),
        plan=plan,
        measured=measured,
        comparison=comparison,
        environment=collect_environment(
            None if chosen == "fake" else list(range(device_index, device_index + inp.tensor_parallel_size))
        ),
        log_lines=log_lines,
        created_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    if output is not None:
        write_report(report, output)
    return CaptureOutcome(report, failure)
