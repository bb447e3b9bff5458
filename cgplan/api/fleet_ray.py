"""`cgplan capture --gpu ... --ray ADDRESS`: each config as a Ray task with the GPUs it needs.

A task runs the same child command as a local run (`cgplan capture --gpu CONFIG -o REPORT`, a
fresh engine process: Ray reuses its worker processes, vLLM must not be), on the GPUs Ray gave
it (Ray sets CUDA_VISIBLE_DEVICES), and returns the report's text and the log's tail; the
caller writes them into its output folder as they arrive, so an interrupted or failed run keeps
every report already gathered. A task whose worker dies (the node lost, the process killed) is
retried once by Ray (`max_retries=1`), then reported as `worker lost`. The configs and their
model folders must be at the same paths on the workers (a shared file system or the same
checkout). Ray is an optional extra: `pip install 'cgplan[ray]'`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cgplan.api.fleet import (
    INTERRUPT_GRACE_S,
    ChildOptions,
    EnvironmentKey,
    FleetJob,
    FleetProgress,
    JobResult,
    NullFleetProgress,
    classify,
    host_environment_key,
    report_environment_key,
    report_stamp,
    same_environment,
    stored_report,
)
from cgplan.errors import GpuUnavailableError
from cgplan.io.output import write_atomically

LOG_TAIL_BYTES = 256 << 10
"""How much of a child's console log comes back to the caller."""


@dataclass(frozen=True)
class TaskSpec:
    """What a Ray task needs (pickled to the worker)."""

    config: str
    """As the caller named it: the report's `source` stays relative, as in a local run."""
    cwd: str
    """The caller's working directory, where the child runs (the same path on the worker)."""
    name: str
    options: ChildOptions
    fingerprint: str | None
    existing: tuple[str, EnvironmentKey] | None
    """(fingerprint, environment) of a complete report the caller already has, for resume."""
    env: dict[str, str]
    """The caller's CGPLAN_* variables (fault rehearsal, the fake backend's behaviours)."""


@dataclass(frozen=True)
class TaskResult:
    """What a Ray task sends back."""

    rc: int | None
    host: str
    gpus: tuple[str, ...]
    report_text: str | None = None
    log_text: str = ""
    resumed: bool = False
    message: str | None = None
    run_s: float | None = None
    """The capture process's own time on the worker. The caller's clock starts at submission, so
    on a cluster with fewer GPUs than configs it also counts the wait for a GPU (on the H200's
    one-GPU cluster the six configs read 38, 71, 101, 133, 165, 193 s: cumulative)."""


def _lose_worker_if_asked(spec: TaskSpec) -> None:
    """Fault rehearsal: CGPLAN_FAULT_LOSE_WORKER="NAME" kills this Ray worker process whenever it
    runs NAME (the config's file stem, as CGPLAN_FAKE_CAPTURE names it, or its fleet name);
    "NAME:once:MARKER" only the first time (MARKER is a file it creates), so the retry succeeds."""
    fault = spec.env.get("CGPLAN_FAULT_LOSE_WORKER", "")
    name, _, rest = fault.partition(":")
    # fleet names carry a hash of the path (they cannot collide), so the stem is what a person types
    if name not in (spec.name, Path(spec.config).stem):
        return
    once, _, marker = rest.partition(":")
    if once == "once" and marker:
        if Path(marker).exists():
            return
        Path(marker).write_text("lost once\n")
    os.kill(os.getpid(), signal.SIGKILL)


def capture_task(spec: TaskSpec) -> TaskResult:
    """The body of a Ray task: one fresh `cgplan capture --gpu` process on this worker's GPUs."""
    _lose_worker_if_asked(spec)
    host = socket.gethostname()
    gpus = tuple(x for x in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if x)
    cwd = spec.cwd if Path(spec.cwd).is_dir() else None
    if not (Path(cwd or ".") / spec.config).is_file():
        return TaskResult(
            2,
            host,
            gpus,
            message=f"{spec.config}: not found on {host} (Ray workers need the configs and their "
            "model folders at the same paths: a shared file system or the same checkout)",
        )
    if (
        spec.existing is not None
        and spec.existing[0] == spec.fingerprint
        and same_environment(spec.existing[1], host_environment_key())
    ):
        return TaskResult(0, host, gpus, resumed=True)
    env = {**os.environ, **spec.env, "PYTHONUNBUFFERED": "1"}
    with tempfile.TemporaryDirectory(prefix="cgplan-ray-") as tmp:
        report, log = Path(tmp) / f"{spec.name}.json", Path(tmp) / f"{spec.name}.log"
        started_s = time.monotonic()
        with open(log, "wb") as out:
            child = subprocess.Popen(
                spec.options.argv(Path(spec.config), report),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
            try:
                rc: int | None = child.wait()
            except KeyboardInterrupt:  # ray.cancel: let the child write its partial report
                child.send_signal(signal.SIGINT)
                try:
                    rc = child.wait(timeout=INTERRUPT_GRACE_S)
                except subprocess.TimeoutExpired:
                    child.kill()
                    rc = child.wait()
        data = log.read_bytes()[-LOG_TAIL_BYTES:]
        text = report.read_text(encoding="utf-8") if report.is_file() else None
    run_s = round(time.monotonic() - started_s, 3)
    return TaskResult(rc, host, gpus, text, data.decode("utf-8", errors="replace"), run_s=run_s)


def _existing(job: FleetJob, backend: str) -> tuple[str, EnvironmentKey] | None:
    """(fingerprint, environment) of the report already there when everything but the host
    (checked on the worker) says it stands for this job (`fleet.stored_report`)."""
    report, problem = stored_report(job, backend)
    if report is None or problem is not None or not report.config_fingerprint:
        return None
    return report.config_fingerprint, report_environment_key(report)


def _max_gpus_per_node(ray: Any) -> int:
    best = 0
    for node in ray.nodes():
        if node.get("Alive"):
            best = max(best, int(node.get("Resources", {}).get("GPU", 0)))
    return best


def connect(address: str) -> Any:
    """The `ray` module, connected: ADDRESS, `auto` (a running cluster), or `local` (start one
    on this machine); a session the caller already started is used as it is.

    Raises:
        GpuUnavailableError: Ray is not installed or the cluster cannot be reached (exit 3).
    """
    try:
        import ray
    except ImportError:
        raise GpuUnavailableError("--ray needs Ray: pip install 'cgplan[ray]'") from None
    if not ray.is_initialized():
        try:
            ray.init(
                address=None if address == "local" else address,
                log_to_driver=False,
                include_dashboard=False,
            )
        except Exception as e:
            raise GpuUnavailableError(
                f"--ray {address}: cannot connect to Ray ({type(e).__name__}: {e})"
            ) from None
    return ray


def run_ray(
    jobs: list[FleetJob],
    address: str,
    options: ChildOptions,
    *,
    force: bool = False,
    progress: FleetProgress | None = None,
    poll_s: float = 1.0,
) -> tuple[list[JobResult], bool]:
    """Every job as a Ray task; (results in job order, interrupted)."""
    progress = progress or NullFleetProgress()
    ray = connect(address)
    task = ray.remote(capture_task)
    env = {k: v for k, v in os.environ.items() if k.startswith("CGPLAN_")}
    per_node = _max_gpus_per_node(ray)
    results: dict[str, JobResult] = {}
    refs: dict[Any, tuple[FleetJob, float]] = {}
    for job in jobs:
        if job.gpus_needed > per_node:
            results[job.name] = JobResult(
                job,
                "not run",
                "unschedulable",
                f"needs {job.gpus_needed} GPUs on one node (tensor_parallel_size); the cluster's "
                f"largest node has {per_node}",
                None,
                (),
                0.0,
            )
            progress.finished(results[job.name])
            continue
        spec = TaskSpec(
            str(job.config),
            os.getcwd(),
            job.name,
            options,
            job.fingerprint,
            None if force else _existing(job, options.backend),
            env,
        )
        ref = task.options(num_gpus=job.gpus_needed, max_retries=1, retry_exceptions=False).remote(spec)
        refs[ref] = (job, time.monotonic())
    interrupted = False
    try:
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1, timeout=poll_s)
            for ref in ready:
                job, t0 = refs.pop(ref)
                results[job.name] = _gather(ray, ref, job, round(time.monotonic() - t0, 3))
                progress.finished(results[job.name])
    except KeyboardInterrupt:
        interrupted = True
        for ref, (job, t0) in refs.items():
            ray.cancel(ref)
            results[job.name] = JobResult(
                job,
                "not run",
                "interrupted",
                "interrupted (SIGINT): the Ray task was cancelled",
                None,
                (),
                round(time.monotonic() - t0, 3),
            )
    return [results[j.name] for j in jobs if j.name in results], interrupted


def _gather(ray: Any, ref: Any, job: FleetJob, wall_s: float) -> JobResult:
    from ray.exceptions import RayTaskError

    try:
        got: TaskResult = ray.get(ref)
    except RayTaskError as e:
        return JobResult(
            job, "failed", "crashed", f"the Ray task failed: {str(e).splitlines()[0]}", None, (), wall_s
        )
    except Exception as e:  # the worker or its node died, on the retry too
        return JobResult(
            job,
            "failed",
            "worker lost",
            f"the Ray worker was lost, on the retry too ({type(e).__name__})",
            None,
            (),
            wall_s,
            attempts=2,
        )
    if got.run_s is not None:
        wall_s = got.run_s  # the config's own run, not its wait for a GPU
    if got.resumed:
        return JobResult(job, "complete", None, None, 0, got.gpus, wall_s, True, got.host, has_report=True)
    if got.message is not None:
        return JobResult(job, "failed", "config", got.message, got.rc, got.gpus, wall_s, host=got.host)
    job.log.parent.mkdir(parents=True, exist_ok=True)
    before = report_stamp(job.report)
    write_atomically(job.log, got.log_text)
    if got.report_text is not None:
        write_atomically(job.report, got.report_text)
    # Without a new report, an earlier run's (left in place) is not this run's result.
    status, cls, message = classify(job, got.rc, before if got.report_text is None else None)
    return JobResult(
        job,
        status,
        cls,
        message,
        got.rc,
        got.gpus,
        wall_s,
        host=got.host,
        has_report=got.report_text is not None,
    )
