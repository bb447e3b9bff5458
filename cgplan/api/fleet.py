"""`cgplan capture --gpu CONFIG_OR_FOLDER...`: many configs, one fresh engine process each.

vLLM keeps process-wide state (compilation caches, its platform, the CUDA context), so every
config is captured by its own child process (`cgplan capture --gpu CONFIG -o REPORT`), pinned
to the GPUs it needs with CUDA_VISIBLE_DEVICES. Each child writes its report atomically, so a
failed or interrupted config never touches the others' reports; the aggregate report is
rebuilt from whatever reports exist when the run ends, Ctrl-C included.

Scheduling on one host: configs start in the order given, each as soon as as many GPUs as its
tensor_parallel_size are free (a later, smaller config may start while an earlier, larger one
waits); with one GPU they run in turn. Ray (`cgplan.api.fleet_ray`) runs the same child command as
a Ray task instead.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cgplan import __version__
from cgplan.core.model.reports import CaptureReport, FleetReport, FleetRow, FleetTotals
from cgplan.core.plan.fingerprint import fingerprint
from cgplan.core.vllm.releases import release_for
from cgplan.errors import CgplanError, ConfigError, ExitCode, ReportError, one_line
from cgplan.io.config import Overrides, load_config
from cgplan.io.out_dir import open_log, prepare_out_dir, refuse_links
from cgplan.io.output import write_atomically
from cgplan.io.reports import read_capture_report, report_text

AGGREGATE_NAME = "fleet"
"""The aggregate report's files in the output folder: fleet.json, fleet.md, fleet.html."""
MANIFEST_NAME = "manifest.json"
"""Which report and log in the output folder is which config's (written before any child starts,
so a run killed outright still says what each file is)."""
LOCK_NAME = ".cgplan-fleet.lock"
"""Held (flock) by the run writing to the output folder; it holds that run's pid."""
RESERVED_NAMES = frozenset({AGGREGATE_NAME, "manifest", LOCK_NAME})
"""File stems of the output folder that are no config's: a config's report name always ends in
`-` and its hash (hex digits), which none of these does, so no config is named like them."""
NAME_HASH_HEX = 8
"""Hex digits of the path hash in a report name (more where two configs' first 8 agree)."""
_STEM_CHARS = 40

FAILURE_CLASSES = {
    int(ExitCode.USAGE): "config",
    int(ExitCode.ENVIRONMENT): "environment",
    int(ExitCode.CAPTURE_FAILED): "capture",
}
"""A child's exit code → the failure class shown per config (else `crashed`)."""

INTERRUPT_GRACE_S = 60.0
"""How long a child may take to write its partial report after SIGINT before it is killed."""


@dataclass(frozen=True)
class FleetJob:
    """One config to capture."""

    config: Path
    name: str
    """Unique by construction: the config's stem (readable) and a hash of its resolved path
    (`report_names`); the same config has the same name in every run."""
    gpus_needed: int
    """tensor_parallel_size: the child gets this many GPUs."""
    fingerprint: str | None
    """The planned config's fingerprint (None when the config does not load: the child says why)."""
    report: Path
    log: Path
    planned_vllm_version: str | None = None
    """The vLLM release whose rules the child plans with (the fingerprint leaves it out, so that
    `diff` can compare releases; a report planned under another one is not resumed)."""


@dataclass(frozen=True)
class JobResult:
    """How one config ended."""

    job: FleetJob
    status: str
    """complete | partial | failed | not run"""
    failure_class: str | None
    """None, or config | environment | capture | crashed | interrupted | worker lost | unschedulable"""
    message: str | None
    exit_code: int | None
    gpus: tuple[str, ...]
    """The CUDA_VISIBLE_DEVICES entries the child ran on (on `host`)."""
    wall_s: float
    resumed: bool = False
    """The report was already there for the same fingerprint, cgplan version and environment."""
    host: str | None = None
    attempts: int = 1
    has_report: bool = False
    """This run's child wrote the report (or it was resumed): only then is it read back."""


class FleetProgress(Protocol):
    """Where progress across configs goes (a rich bar on stderr in the CLI, a list in tests)."""

    def start(self, total: int) -> None:
        """`total` configs will be captured or skipped."""

    def started(self, job: FleetJob, gpus: tuple[str, ...]) -> None:
        """A child started on these GPUs."""

    def finished(self, result: JobResult) -> None:
        """A config is done (or skipped)."""


class NullFleetProgress:
    """Shows nothing."""

    def start(self, total: int) -> None:
        """Ignore."""

    def started(self, job: FleetJob, gpus: tuple[str, ...]) -> None:
        """Ignore."""

    def finished(self, result: JobResult) -> None:
        """Ignore."""


# --------------------------------------------------------------------------- configs and jobs


def discover_configs(paths: Sequence[Path]) -> list[Path]:
    """Files as given, folders as their `*.yaml`/`*.yml` files (sorted; sub-folders are not
    entered, so `configs/gpu/` does not pull in `configs/gpu/cost/`).

    Raises:
        ConfigError: a path does not exist, or a folder holds no config.
    """
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = sorted(q for q in p.iterdir() if q.suffix in (".yaml", ".yml"))
            for q in found:
                if q.is_symlink():
                    # Named by a folder, not by the user: where it points is not ours to read (or to
                    # quote in an error), so it is refused by its own name before any work.
                    raise ConfigError(
                        "",
                        "a symbolic link in a config folder; not followed (name the file it points "
                        "to, or copy it into the folder)",
                        source=str(q),
                    )
            found = [q for q in found if q.is_file()]
            if not found:
                raise ConfigError("", f"no *.yaml config in this folder (got {p})", source=str(p))
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise ConfigError("", "no such file or folder", source=str(p))
    seen: set[Path] = set()
    unique = []
    for p in out:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


def _path_hash(config: Path) -> str:
    import hashlib

    return hashlib.sha256(os.fsencode(str(config.resolve()))).hexdigest()


def report_names(configs: Sequence[Path]) -> list[str]:
    """One file name (no suffix) per config: `<stem>-<hash>`, the stem for the reader (characters
    outside [A-Za-z0-9._-] as `_`, at most 40) and the hash (sha256 of the resolved path, 8 hex
    digits, more while two of these configs' agree) for uniqueness. Distinct configs get distinct
    hashes of one length, so distinct names, whatever their stems or folders are called; no name
    is one of RESERVED_NAMES (they end in no `-` and hex digits).

    >>> [n.split("-")[0] for n in report_names([Path("/a/x.yaml"), Path("/b/x.yaml")])]
    ['x', 'x']
    """
    import re

    full = [_path_hash(c) for c in configs]
    n = NAME_HASH_HEX
    while len({h[:n] for h in full}) < len(set(full)):
        n += 4
    stems = [re.sub(r"[^A-Za-z0-9._-]", "_", c.stem)[:_STEM_CHARS] or "config" for c in configs]
    return [f"{stem}-{h[:n]}" for stem, h in zip(stems, full, strict=True)]


def planned_input_version(backend: str) -> str | None:
    """The vLLM release whose rules the child will plan with: the installed one for the vLLM
    backend when cgplan knows it (as `run_capture` does), else None (the config's own)."""
    if backend not in ("auto", "vllm"):
        return None
    version = _dist_version("vllm")
    return None if version is None else release_for(version)


def make_jobs(configs: Sequence[Path], out_dir: Path, overrides: Overrides, backend: str) -> list[FleetJob]:
    """One job per config, with the fingerprint the child's report will carry."""
    version = planned_input_version(backend)
    jobs = []
    for config, name in zip(configs, report_names(configs), strict=True):
        tp, fp, release = 1, None, None
        try:
            inp = load_config(config, overrides).input
            if version is not None:
                inp = dataclasses.replace(inp, vllm_version=version)
            tp, fp, release = inp.tensor_parallel_size, fingerprint(inp), inp.vllm_version
        except CgplanError:
            pass  # the child reports the error with its location (class `config`)
        report, log = out_dir / f"{name}.json", out_dir / f"{name}.log"
        jobs.append(FleetJob(config, name, tp, fp, report, log, release))
    return jobs


def manifest_text(jobs: Sequence[FleetJob], out_dir: Path) -> str:
    """The output folder's manifest: which report and log is which config's."""
    import json

    from cgplan.io.schema import SCHEMA_VERSION

    doc = {
        "kind": "fleet-manifest",
        "schema_version": SCHEMA_VERSION,
        "configs": [
            {
                "name": j.name,
                "config": str(j.config),
                "config_resolved": str(j.config.resolve()),
                "report": _rel(j.report, out_dir),
                "log": _rel(j.log, out_dir),
            }
            for j in jobs
        ],
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


# --------------------------------------------------------------------------- resume


def _dist_version(name: str) -> str | None:
    """An installed package's version without importing it (vLLM's import takes seconds): its
    metadata, else, for a copy without metadata (vLLM unpacked onto PYTHONPATH), the version
    file setuptools-scm writes into the package."""
    import importlib.metadata
    import importlib.util
    import re

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        version_file = Path(folder) / "_version.py"
        if version_file.is_file():
            m = re.search(
                r"""__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", version_file.read_text()
            )
            if m:
                return m.group(1)
    return None


@dataclass(frozen=True)
class EnvironmentKey:
    """What must not have changed for an existing report to stand: cgplan, torch, vLLM, the
    driver and the GPU model."""

    cgplan: str | None
    torch: str | None
    vllm: str | None
    driver: str | None
    gpu_names: frozenset[str]


def host_environment_key() -> EnvironmentKey:
    """This host's key, without starting CUDA (package metadata and NVML only)."""
    from cgplan.gpu.nvml import host_gpu_names_and_driver

    names, driver = host_gpu_names_and_driver()
    return EnvironmentKey(
        __version__, _dist_version("torch"), _dist_version("vllm"), driver, frozenset(names)
    )


def report_environment_key(report: CaptureReport) -> EnvironmentKey:
    """The key a capture report was made under."""
    env = report.environment
    return EnvironmentKey(env.cgplan, env.torch, env.vllm, env.driver, frozenset(g.name for g in env.gpus))


def same_environment(report: EnvironmentKey, host: EnvironmentKey) -> bool:
    """Same cgplan, torch, vLLM and driver, and the report's GPUs are of a model this host has."""
    if (report.cgplan, report.torch, report.vllm, report.driver) != (
        host.cgplan,
        host.torch,
        host.vllm,
        host.driver,
    ):
        return False
    return report.gpu_names <= host.gpu_names if host.gpu_names else not report.gpu_names


def stored_report(job: FleetJob, backend: str) -> tuple[CaptureReport | None, str | None]:
    """(the report in the output folder, why it does not stand for this job): None and None when
    there is none; the reason names the file and what differs. Everything that changes a report
    is checked here but the host (`same_environment`): it is this config's (its `source`), of the
    same fingerprint, planned under the same vLLM release, by the same backend, and complete."""
    path = job.report
    if not path.is_file() and not path.is_symlink():
        return None, None
    try:
        report = read_capture_report(path)
    except ReportError as e:
        return None, e.message
    problem = None
    try:  # a tampered `source` (a NUL, a name too long) is another config's, not an OS error
        own = report.source is not None and Path(report.source).resolve() == job.config.resolve()
    except (OSError, ValueError):
        own = False
    if not own:
        problem = f"the report of another config ({one_line(str(report.source))[:200]}), not of {job.config}"
    elif report.status != "complete":
        problem = f"a {report.status} report"
    elif job.fingerprint is None or report.config_fingerprint != job.fingerprint:
        problem = "made from another version of the config (its fingerprint differs)"
    elif report.plan.vllm_version != job.planned_vllm_version:
        problem = (
            f"planned under vLLM {report.plan.vllm_version} rules "
            f"(this run plans under {job.planned_vllm_version})"
        )
    elif backend != "auto" and report.measured.backend != backend:
        problem = f"measured by the {report.measured.backend} backend (this run: {backend})"
    elif backend == "auto" and report.measured.backend == "fake":
        problem = "measured by the fake backend (this run: a real one)"
    return report, None if problem is None else f"{one_line(str(path))}: {problem}"


def resume_problem(job: FleetJob, host: EnvironmentKey, backend: str = "auto") -> str | None:
    """Why the existing report does not stand (a located line), or None when it does: capturing
    it again would measure the same thing. No report at all is a problem too ("no report")."""
    report, problem = stored_report(job, backend)
    if problem is not None:
        return problem
    if report is None:
        return f"{job.report}: no report"
    if not same_environment(report_environment_key(report), host):
        return f"{one_line(str(job.report))}: made under another cgplan, torch, vLLM, driver or GPU"
    return None


def resumable(job: FleetJob, host: EnvironmentKey, backend: str = "auto") -> bool:
    """An existing, complete report of this config (source, fingerprint, release, backend) under
    the same environment."""
    return resume_problem(job, host, backend) is None


# --------------------------------------------------------------------------- the child command


@dataclass(frozen=True)
class ChildOptions:
    """The `cgplan capture` options every child gets."""

    backend: str = "auto"
    vllm_version: str | None = None
    platform: str | None = None
    model_runner: str | None = None
    instrument: str = "full"
    allow_unknown_vllm: bool = False

    def argv(self, config: Path, report: Path) -> list[str]:
        """The child's command line (this interpreter, this cgplan)."""
        cmd = [sys.executable, "-m", "cgplan", "capture", "--gpu", str(config), "-o", str(report)]
        cmd += ["--backend", self.backend]
        for flag, value in (
            ("--vllm-version", self.vllm_version),
            ("--platform", self.platform),
            ("--model-runner", self.model_runner),
        ):
            if value is not None:
                cmd += [flag, value]
        if self.instrument != "full":
            cmd += ["--instrument", self.instrument]
        if self.allow_unknown_vllm:
            cmd.append("--allow-unknown-vllm")
        return cmd


def report_stamp(path: Path) -> tuple[int, int] | None:
    """(mtime_ns, inode) of a report, to tell this run's report from an earlier run's."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_ino


def classify(
    job: FleetJob, rc: int | None, before: tuple[int, int] | None = None
) -> tuple[str, str | None, str | None]:
    """(status, failure class, message) from the child's exit code and its report; a report
    left unchanged since `before` (an earlier run's, when the child died first) is not this
    run's."""
    doc: CaptureReport | None = None
    fresh = before is None or report_stamp(job.report) != before
    if fresh and job.report.is_file():
        try:
            doc = read_capture_report(job.report)
        except ReportError:
            doc = None
    status = doc.status if doc else "failed"
    failure = doc.failure if doc else None
    if rc == 0 and doc is not None:
        return status, None, None
    if rc is not None and rc in FAILURE_CLASSES:
        cls = FAILURE_CLASSES[rc]
        if failure is None:
            failure = _last_error_line(job.log)
        if cls == "capture" and failure and ("SIGINT" in failure or "SIGTERM" in failure):
            cls = "interrupted"
        return status if doc else "failed", cls, failure
    how = f"killed by signal {-rc}" if rc is not None and rc < 0 else f"exit code {rc}"
    return (
        status if doc else "failed",
        "crashed",
        f"the engine process died ({how}) {'after writing a report' if doc else 'without a report'}; "
        f"see {job.log}",
    )


def _last_error_line(log: Path) -> str | None:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.startswith("cgplan: error:"):
            return line.removeprefix("cgplan: error:").strip()
    return lines[-1][:300] if lines else None


# --------------------------------------------------------------------------- local scheduling


class Handle(Protocol):
    """A running child (subprocess.Popen, or a fake in tests)."""

    def poll(self) -> int | None:
        """Exit code, or None while running."""

    def send_signal(self, sig: int) -> None:
        """Deliver a signal."""

    def kill(self) -> None:
        """Kill it."""

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the exit code."""


Launcher = Callable[[FleetJob, tuple[str, ...]], Handle]
"""Starts the child for a job on the given CUDA_VISIBLE_DEVICES entries."""


def subprocess_launcher(options: ChildOptions) -> Launcher:
    """Children as real processes: `cgplan capture --gpu CONFIG -o REPORT`, output to the log."""

    def launch(job: FleetJob, gpus: tuple[str, ...]) -> Handle:
        env = dict(os.environ)
        if gpus:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
        env.setdefault("PYTHONUNBUFFERED", "1")
        with open_log(job.log) as log:
            # A session of its own: the terminal's Ctrl-C reaches cgplan only, which passes one
            # SIGINT on (a second one could cut the child's partial report short).
            return subprocess.Popen(
                options.argv(job.config, job.report),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )

    return launch


def visible_gpus(requested: Sequence[int] | None) -> tuple[str, ...]:
    """CUDA_VISIBLE_DEVICES entries for the children: `--gpus` indexes what this process sees
    (CUDA_VISIBLE_DEVICES if set, else NVML's devices); none found → () (one slot, unpinned).

    Raises:
        ConfigError: a `--gpus` index that is not visible.
    """
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        seen = tuple(x.strip() for x in cvd.split(",") if x.strip())
    else:
        from cgplan.gpu.nvml import host_gpu_names_and_driver

        names, _ = host_gpu_names_and_driver()
        seen = tuple(str(i) for i in range(len(names)))
    if requested is None:
        return seen
    if not seen and cvd is None:
        # No NVML here (e.g. a fake backend on a CPU machine): take the indices as given.
        return tuple(str(i) for i in requested)
    bad = [i for i in requested if not 0 <= i < len(seen)]
    if bad:
        raise ConfigError(
            "--gpus", f"GPU {bad[0]} is not visible (got {bad[0]}; expected 0..{len(seen) - 1})"
        )
    return tuple(seen[i] for i in requested)


def run_local(
    jobs: Sequence[FleetJob],
    gpus: Sequence[str],
    launcher: Launcher,
    *,
    progress: FleetProgress | None = None,
    poll_s: float = 0.2,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[list[JobResult], bool]:
    """Run every job, as many at once as the GPUs allow; (results in job order, interrupted).

    `gpus` empty means one unpinned slot: the jobs run in turn. Ctrl-C (KeyboardInterrupt)
    sends one SIGINT to every running child, waits for their partial reports, and returns
    with the jobs not started marked `not run`."""
    progress = progress or NullFleetProgress()
    slots: list[str] = list(gpus)
    unpinned = not slots
    free: list[str] = list(slots)
    results: dict[str, JobResult] = {}
    pending = list(jobs)
    running: dict[str, tuple[FleetJob, Handle, tuple[str, ...], float]] = {}
    busy_unpinned = False
    stamps: dict[str, tuple[int, int] | None] = {}
    for job in list(pending):
        need = 1 if unpinned else job.gpus_needed
        if not unpinned and need > len(slots):
            pending.remove(job)
            results[job.name] = JobResult(
                job,
                "not run",
                "unschedulable",
                f"needs {need} GPUs (tensor_parallel_size {job.gpus_needed}); {len(slots)} given",
                None,
                (),
                0.0,
            )
            progress.finished(results[job.name])
    interrupted = False
    try:
        while pending or running:
            for job in list(pending):
                if unpinned:
                    if busy_unpinned:
                        break
                    take: tuple[str, ...] = ()
                    busy_unpinned = True
                else:
                    if job.gpus_needed > len(free):
                        continue
                    take = tuple(free[: job.gpus_needed])
                    del free[: job.gpus_needed]
                pending.remove(job)
                stamps[job.name] = report_stamp(job.report)
                handle = launcher(job, take)
                running[job.name] = (job, handle, take, clock())
                progress.started(job, take)
            done = [(n, r) for n, r in running.items() if r[1].poll() is not None]
            for name, (job, handle, take, t0) in done:
                del running[name]
                rc = handle.poll()
                status, cls, message = classify(job, rc, stamps[name])
                results[name] = JobResult(
                    job,
                    status,
                    cls,
                    message,
                    rc,
                    take,
                    round(clock() - t0, 3),
                    has_report=_written(job, stamps[name]),
                )
                progress.finished(results[name])
                if unpinned:
                    busy_unpinned = False
                else:
                    free.extend(take)
                    free.sort(key=slots.index)
            if running and not done:
                time.sleep(poll_s)
    except KeyboardInterrupt:
        interrupted = True
        for _job, handle, _, _ in running.values():
            if handle.poll() is None:
                handle.send_signal(signal.SIGINT)
        for name, (job, handle, take, t0) in running.items():
            try:
                rc = handle.wait(timeout=INTERRUPT_GRACE_S)
            except subprocess.TimeoutExpired:
                handle.kill()
                rc = handle.wait()
            status, cls, message = classify(job, rc, stamps[name])
            results[name] = JobResult(
                job,
                status,
                "interrupted",
                message or "interrupted (SIGINT)",
                rc,
                take,
                round(clock() - t0, 3),
                has_report=_written(job, stamps[name]),
            )
        for job in pending:
            results[job.name] = JobResult(
                job, "not run", "interrupted", "not started: the run was interrupted", None, (), 0.0
            )
    return [results[j.name] for j in jobs if j.name in results], interrupted


def _written(job: FleetJob, before: tuple[int, int] | None) -> bool:
    now = report_stamp(job.report)
    return now is not None and now != before


def skip_resumable(
    jobs: Sequence[FleetJob],
    force: bool,
    host: EnvironmentKey | None,
    progress: FleetProgress,
    backend: str = "auto",
    notes: list[str] | None = None,
) -> tuple[list[FleetJob], list[JobResult]]:
    """(jobs to run, results of the jobs whose reports stand); `notes` gets one located line per
    report that is there but does not stand (tampered, foreign, another release, ...)."""
    if force or host is None:
        return list(jobs), []
    todo, kept = [], []
    for job in jobs:
        problem = resume_problem(job, host, backend)
        if problem is None:
            r = JobResult(job, "complete", None, None, 0, (), 0.0, resumed=True, has_report=True)
            kept.append(r)
            progress.finished(r)
        else:
            if notes is not None and not problem.endswith(": no report"):
                notes.append(f"{problem}; captured again")
            todo.append(job)
    return todo, kept


# --------------------------------------------------------------------------- the aggregate


@dataclass(frozen=True)
class FleetRun:
    """What the aggregate is made of."""

    results: tuple[JobResult, ...]
    runner: str
    """local | ray"""
    gpus: tuple[str, ...]
    interrupted: bool
    command: tuple[str, ...]
    created_utc: str
    out_dir: Path


def _row(r: JobResult, out_dir: Path) -> FleetRow:
    job = r.job
    row = FleetRow(
        name=job.name,
        config=str(job.config),
        status=r.status,
        tensor_parallel_size=job.gpus_needed,
        wall_s=r.wall_s,
        config_fingerprint=job.fingerprint,
        report=_rel(job.report, out_dir) if r.has_report and job.report.is_file() else None,
        log=_rel(job.log, out_dir) if job.log.is_file() else None,
        resumed=r.resumed,
        failure_class=r.failure_class,
        failure=r.message,
        exit_code=r.exit_code,
        gpus=tuple(r.gpus),
        host=r.host,
        attempts=r.attempts,
    )
    if row.report is None:
        return row
    try:
        report = read_capture_report(job.report)
    except ReportError:
        return row
    measured, comparison, cost = report.measured, report.comparison, report.plan.predicted_cost
    nvml = measured.capture_nvml_delta_bytes
    return dataclasses.replace(
        row,
        plan_matches=comparison.matches if comparison else None,
        graphs_planned=report.plan.total_graphs,
        graphs_measured=len(measured.graphs),
        dispatch_checked=comparison.dispatch_checked if comparison else None,
        dispatch_mismatches=len(comparison.dispatch_mismatches) if comparison else None,
        eager_fallbacks_measured=comparison.eager_uniform_decode_measured if comparison else None,
        predicted_memory_mib=cost.total_mib if cost else None,
        predicted_memory_domain=("; ".join(cost.caveats) or "inside the fitted domain") if cost else None,
        measured_memory_mib=round(nvml / (1 << 20), 1) if nvml is not None else None,
        predicted_capture_s=cost.capture_s if cost else None,
        measured_capture_s=measured.capture_wall_s,
        vllm_took_gib=measured.vllm.capture_took_gib,
    )


def _rel(p: Path, base: Path) -> str:
    try:
        return str(p.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(p)


def aggregate(run: FleetRun) -> FleetReport:
    """The aggregate report (JSON, schema_version 1)."""
    from cgplan.io.schema import SCHEMA_VERSION

    rows = tuple(_row(r, run.out_dir) for r in run.results)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    return FleetReport(
        schema_version=SCHEMA_VERSION,
        runner=run.runner,
        configs=rows,
        totals=FleetTotals(
            configs=len(rows),
            by_status=dict(sorted(counts.items())),
            resumed=sum(1 for r in rows if r.resumed),
            plans_matched=sum(1 for r in rows if r.plan_matches is True),
            plans_differed=sum(1 for r in rows if r.plan_matches is False),
            failed=sum(1 for r in rows if r.failure_class is not None),
        ),
        cgplan_version=__version__,
        created_utc=run.created_utc,
        gpus=tuple(run.gpus),
        command=tuple(run.command),
        interrupted=run.interrupted,
    )


def open_out_dir(out_dir: Path, jobs: Sequence[FleetJob]) -> None:
    """Check the output folder before any child starts: a folder (made if missing), none of its
    reports, logs or the aggregate a symbolic link; then write its manifest.

    Raises:
        CgplanError: (exit 2) one line naming the path.
    """
    prepare_out_dir(out_dir)
    names = [out_dir / MANIFEST_NAME] + [out_dir / f"{AGGREGATE_NAME}.{s}" for s in ("json", "md", "html")]
    refuse_links(names + [p for j in jobs for p in (j.report, j.log)])
    write_atomically(out_dir / MANIFEST_NAME, manifest_text(jobs, out_dir))


def exit_code(report: FleetReport) -> int:
    """4 when a config failed to capture (crashed, interrupted, lost), else 3 for an
    environment that cannot capture, else 2 for a bad config, else 0."""
    classes = {r.failure_class for r in report.configs if r.failure_class}
    if classes - {"config", "environment"}:
        return int(ExitCode.CAPTURE_FAILED)
    if "environment" in classes:
        return int(ExitCode.ENVIRONMENT)
    if "config" in classes:
        return int(ExitCode.USAGE)
    return int(ExitCode.OK)


def write_aggregate(report: FleetReport, out_dir: Path, *, markdown: str, html: str) -> list[Path]:
    """fleet.json, fleet.md and fleet.html in `out_dir`, each written atomically; the pages come
    rendered (render/fleet.py, by the caller: the library does not render)."""
    prepare_out_dir(out_dir)
    refuse_links([out_dir / f"{AGGREGATE_NAME}.{suffix}" for suffix in ("json", "md", "html")])
    paths = []
    for suffix, text in (
        ("json", report_text(report)),
        ("md", markdown),
        ("html", html),
    ):
        path = out_dir / f"{AGGREGATE_NAME}.{suffix}"
        write_atomically(path, text)
        paths.append(path)
    return paths


def iter_reports(report: FleetReport, base: Path) -> Iterator[Path]:
    """The per-config reports an aggregate names (relative to its folder), complete ones only."""
    for row in report.configs:
        if row.report and row.status == "complete":
            yield base / row.report
