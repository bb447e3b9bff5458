"""Run the real CLI entry point in-process on one input and judge how it ended.

A run must end in exit 0/1 (a plan, a diff, a verdict) or exit 2 with exactly one stderr
line `cgplan: error: ...` that names where the problem is (the file, or the option), never
an escaped exception, never another exit code, and within a time bound.
"""

from __future__ import annotations

import io
import os
import resource
import signal
import sys
import time
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from cgplan.cli import main

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "configs" / "models"
EXAMPLES = ROOT / "configs" / "examples"
H200 = ROOT / "benchmarks" / "results" / "h200"

TIME_LIMIT_S = 2.0
"""Per-input bound on CPU time (one CLI invocation, in-process): CPU, not wall, so a loaded
machine does not fail the bound; the wall time is reported next to it."""
HARD_STOP_S = 30.0
"""A run still going after this is interrupted and counted as a hang."""
MEMORY_HEADROOM = 3 << 30
"""Address space a run may add on top of the test process (a runaway allocation fails fast)."""


class _Hang(BaseException):
    """Raised by the alarm inside a run that exceeds HARD_STOP_S."""


@dataclass
class Run:
    """What one CLI invocation did."""

    argv: list[str]
    code: int | None
    out: str
    err: str
    seconds: float
    """Wall time."""
    cpu_seconds: float
    """CPU time of this process during the run (what TIME_LIMIT_S bounds)."""
    escaped: str | None = None
    """The traceback of an exception that escaped `main()` (None when it exited cleanly)."""
    peak_rss_mb: float = 0.0
    """Peak resident memory of the test process during the run (VmHWM after a reset), MiB."""


def _reset_peak_rss() -> None:
    """Linux: writing 5 to clear_refs resets VmHWM, so the next reading is this run's peak."""
    with suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _peak_rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


def _vm_bytes() -> int:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


@contextmanager
def _bounded() -> Iterator[None]:
    """Cap address space and wall time for the duration of one run."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    vm = _vm_bytes()
    if vm:
        cap = vm + MEMORY_HEADROOM
        resource.setrlimit(
            resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard)
        )

    def _alarm(signum: int, frame: FrameType | None) -> None:
        raise _Hang()

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, HARD_STOP_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def run_cli(args: Sequence[str]) -> Run:
    """`cgplan ARGS` through `cgplan.cli.main`, with stdout (strict UTF-8, like a pipe) and
    stderr (UTF-8, backslashreplace, like Python's own) captured."""
    out_b, err_b = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_b, encoding="utf-8", errors="strict", newline="", write_through=True)
    err = io.TextIOWrapper(err_b, encoding="utf-8", errors="backslashreplace", newline="", write_through=True)
    argv = ["cgplan", *args]
    saved = sys.argv, sys.stdout, sys.stderr
    code: int | None = None
    escaped: str | None = None
    _reset_peak_rss()
    start, cpu_start = time.perf_counter(), time.process_time()
    sys.argv, sys.stdout, sys.stderr = argv, out, err
    try:
        with _bounded():
            try:
                main()
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else -1)
                if e.code is not None and not isinstance(e.code, int):
                    escaped = f"SystemExit with a non-integer code: {e.code!r}"
    except _Hang:
        escaped = f"hang: still running after {HARD_STOP_S} s"
    except BaseException:
        escaped = traceback.format_exc()
    finally:
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
        sys.argv, sys.stdout, sys.stderr = saved
    return Run(
        argv,
        code,
        out_b.getvalue().decode("utf-8", "replace"),
        err_b.getvalue().decode("utf-8", "replace"),
        seconds,
        cpu_seconds,
        escaped,
        _peak_rss_mb(),
    )


def problems(
    run: Run, *, where: Sequence[str], time_limit_s: float = TIME_LIMIT_S, codes: Sequence[int] = (0, 1, 2)
) -> list[str]:
    """Everything wrong with how `run` ended ([] when it ended well).

    `where`: strings of which a refusal must name at least one (file paths, option names).
    """
    found: list[str] = []
    if run.escaped is not None:
        found.append("escaped: " + run.escaped.strip().splitlines()[-1])
    elif run.code not in codes:
        found.append(f"exit code {run.code}")
    elif run.code == 2:
        lines = run.err.splitlines()
        if len(lines) != 1:
            found.append(f"exit 2 with {len(lines)} stderr lines: {run.err[:300]!r}")
        elif not lines[0].startswith("cgplan: error: "):
            found.append(f"exit 2 without 'cgplan: error: ': {lines[0][:300]!r}")
        elif not any(w in lines[0] for w in where):
            found.append(f"exit 2 message names no location ({', '.join(where)}): {lines[0][:300]!r}")
        if run.out:
            found.append(f"exit 2 with stdout output: {run.out[:200]!r}")
    if "Traceback" in run.err:
        found.append("traceback on stderr")
    if run.cpu_seconds > time_limit_s:
        found.append(f"took {run.cpu_seconds:.2f} s of CPU (limit {time_limit_s} s)")
    return found


@dataclass
class Tally:
    """Counts for one input kind over a fuzz run."""

    tried: int = 0
    exits: dict[str, int] = field(default_factory=dict)
    failures: list[dict[str, object]] = field(default_factory=list)
    slowest_s: float = 0.0
    slowest_cpu_s: float = 0.0
    slowest_argv: list[str] = field(default_factory=list)
    cpu_s_total: float = 0.0
    peak_rss_mb: float = 0.0
    """The largest per-run peak RSS of the test process (its own heap included)."""
    peak_rss_argv: list[str] = field(default_factory=list)
    core_slow: list[dict[str, object]] = field(default_factory=list)
    """Runs over the time bound only because the core plans a huge valid config slowly."""
    processes: int = 0
    """Inputs also run as their own process (the sample: every PROCESS_EVERY-th input)."""
    process_exits: dict[str, int] = field(default_factory=dict)
    process_peak_rss_mb: float = 0.0
    process_peak_rss_argv: list[str] = field(default_factory=list)
    process_slowest_s: float = 0.0
    process_s_total: float = 0.0

    def add_process(self, proc: ProcessRun, found: list[str], sample: str) -> None:
        """Count one child process of the sample; keep its failure with the input."""
        self.processes += 1
        key = "hung" if proc.hung else str(proc.code)
        self.process_exits[key] = self.process_exits.get(key, 0) + 1
        if proc.peak_rss_mb > self.process_peak_rss_mb:
            self.process_peak_rss_mb, self.process_peak_rss_argv = proc.peak_rss_mb, proc.argv
        self.process_slowest_s = max(self.process_slowest_s, proc.seconds)
        self.process_s_total += proc.seconds
        if found:
            self.failures.append({"argv": proc.argv, "problems": found, "input": sample[:2000]})

    def add(self, run: Run, found: list[str], sample: str, core_slow: str | None = None) -> None:
        """Count one run; keep the failure with a sample of its input."""
        self.tried += 1
        if core_slow is not None:
            self.core_slow.append(
                {
                    "argv": run.argv[1:],
                    "cpu_s": round(run.cpu_seconds, 3),
                    "why": core_slow,
                    "input": sample[:600],
                }
            )
        self.cpu_s_total += run.cpu_seconds
        if run.peak_rss_mb > self.peak_rss_mb:
            self.peak_rss_mb, self.peak_rss_argv = run.peak_rss_mb, run.argv[1:]
        key = "escaped" if run.escaped else str(run.code)
        self.exits[key] = self.exits.get(key, 0) + 1
        if core_slow is not None:  # timed apart: the slowest figures are for everything else
            return
        self.slowest_s = max(self.slowest_s, run.seconds)
        if run.cpu_seconds > self.slowest_cpu_s:
            self.slowest_cpu_s, self.slowest_argv = run.cpu_seconds, run.argv[1:]
        if found:
            self.failures.append({"argv": run.argv[1:], "problems": found, "input": sample[:2000]})


def materialize(files: Sequence[tuple[str, bytes]], args: Sequence[str], folder: Path) -> list[str]:
    """Write `files` under `folder` (fresh each call) and put their paths into `args`."""
    import shutil

    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    paths: dict[str, str] = {}
    for name, data in files:
        file = folder / name
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(data)
        paths[name] = str(file)
    out = []
    for a in args:
        for name, p in paths.items():
            a = a.replace("{" + name + "}", p)
        out.append(a)
    return out


DOCUMENTED_EXITS = (0, 1, 2, 3, 4)
"""Every exit code cgplan documents (0 ok, 1 gate failed, 2 bad input, 3 environment, 4 capture)."""


@dataclass
class ProcessRun:
    """What one `python -m cgplan ARGS` child process did (the sample the in-process run cannot show)."""

    argv: list[str]
    code: int
    """The exit status; minus the signal number when a signal ended it (os.waitstatus_to_exitcode)."""
    err: str
    seconds: float
    peak_rss_mb: float
    """The child's own peak resident memory (ru_maxrss from wait4): interpreter, imports and the input."""
    hung: bool = False


def passable(args: Sequence[str]) -> bool:
    """Whether `args` can be a process's argv: a lone surrogate ("\\ud800" in a drawn --set string)
    has no bytes, so no shell or exec can pass it (the full run's sweep part crashed on one)."""
    try:
        for a in args:
            os.fsencode(a)
    except UnicodeEncodeError:
        return False
    return True


def run_process(args: Sequence[str], *, timeout_s: float = HARD_STOP_S) -> ProcessRun:
    """`python -m cgplan ARGS` as its own process, stdin closed off, reaped with wait4 so its own
    peak RSS is known (getrusage(RUSAGE_CHILDREN) only gives the largest child so far)."""
    import subprocess
    import tempfile

    argv = [sys.executable, "-m", "cgplan", *args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        hung = False
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout_s:
                hung = True
                child.kill()
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.005)
        seconds = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        child.returncode = code  # reaped here: Popen must not wait for it again
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    return ProcessRun(list(args), code, text, seconds, usage.ru_maxrss / 1024, hung)


def process_problems(proc: ProcessRun, run: Run, *, memory_limit_mb: float) -> list[str]:
    """What is wrong with how the child ended, next to the in-process run of the same input."""
    found: list[str] = []
    if proc.hung:
        found.append(f"process: still running after {HARD_STOP_S} s")
    elif proc.code < 0:
        found.append(f"process: killed by signal {-proc.code}")
    elif proc.code not in DOCUMENTED_EXITS:
        found.append(f"process: exit code {proc.code} (documented: {DOCUMENTED_EXITS})")
    elif run.escaped is None and proc.code != run.code:
        found.append(f"process: exit {proc.code}, in-process exit {run.code} (the harness is not faithful)")
    if "Traceback" in proc.err:
        found.append("process: traceback on stderr: " + proc.err.strip().splitlines()[-1][:300])
    if proc.peak_rss_mb > memory_limit_mb:
        found.append(f"process: peak RSS {proc.peak_rss_mb:.0f} MiB (limit {memory_limit_mb:.0f} MiB)")
    return found
