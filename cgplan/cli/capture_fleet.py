"""The several-configs half of `cgplan capture --gpu`: schedule, gather, aggregate."""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType, TracebackType

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from cgplan.api.fleet import (
    LOCK_NAME,
    ChildOptions,
    FleetJob,
    FleetRun,
    JobResult,
    aggregate,
    discover_configs,
    exit_code,
    host_environment_key,
    make_jobs,
    open_out_dir,
    run_local,
    skip_resumable,
    subprocess_launcher,
    visible_gpus,
    write_aggregate,
)
from cgplan.cli._output import is_stdout, write_artifact
from cgplan.errors import CaptureError
from cgplan.io.config import Overrides
from cgplan.io.out_dir import lock_folder, prepare_out_dir
from cgplan.io.output import write_stdout
from cgplan.render.fleet import fleet_html, fleet_markdown, fleet_table


class FleetBar:
    """configs i/N and what runs where (stderr); one line per finished config off a terminal."""

    def __init__(self) -> None:
        self.console = Console(file=sys.stderr, emoji=False)
        self.tty = sys.stderr.isatty()
        self.bar = Progress(
            TextColumn("configs"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=self.console,
            disable=not self.tty,
        )
        self.task: TaskID | None = None
        self.total = 0
        self.done = 0
        self.running: dict[str, str] = {}

    def __enter__(self) -> FleetBar:
        self.bar.__enter__()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.bar.__exit__(t, e, tb)

    def _describe(self) -> str:
        return " · ".join(f"{n} on {w}" for n, w in self.running.items()) or ""

    def start(self, total: int) -> None:
        """`total` configs."""
        self.total = total
        self.task = self.bar.add_task("", total=total)

    def started(self, job: FleetJob, gpus: tuple[str, ...]) -> None:
        """A child started."""
        self.running[job.name] = f"GPU {','.join(gpus)}" if gpus else "the GPU"
        if self.task is not None:
            self.bar.update(self.task, description=self._describe())

    def finished(self, result: JobResult) -> None:
        """A config is done."""
        self.done += 1
        self.running.pop(result.job.name, None)
        if self.task is not None:
            self.bar.update(self.task, advance=1, description=self._describe())
        if not self.tty:
            how = "resumed (report kept)" if result.resumed else result.status
            if result.failure_class:
                how += f", {result.failure_class}"
            where = f" on GPU {','.join(result.gpus)}" if result.gpus else ""
            host = f" ({result.host})" if result.host else ""
            self.console.print(
                f"cgplan: [{self.done}/{self.total}] {result.job.name}: {how}{where}{host}, "
                f"{result.wall_s:.1f} s",
                soft_wrap=True,
                markup=False,
                highlight=False,
            )


_TERMINATED: list[bool] = []


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a job scheduler, `timeout`, `kill`) stops the run as Ctrl-C does: the engines get
    one SIGINT and write partial reports; none is left running without its parent."""

    def handler(signum: int, frame: FrameType | None) -> None:
        _TERMINATED.append(True)
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _signal_name() -> str:
    return "SIGTERM" if _TERMINATED else "SIGINT"


def _parse_gpus(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise typer.BadParameter(
            f"expected GPU indices like 0,1,2 (got {text!r})", param_hint="--gpus"
        ) from None
    if not out or any(i < 0 for i in out) or len(set(out)) != len(out):
        raise typer.BadParameter(
            f"expected distinct GPU indices like 0,1,2 (got {text!r})", param_hint="--gpus"
        )
    return out


def capture_fleet(
    configs: list[Path],
    options: ChildOptions,
    *,
    out_dir: Path,
    gpus: str | None,
    ray_address: str | None,
    force: bool,
    output: Path | None,
    json_out: bool,
    html: Path | None,
) -> None:
    """Capture every config, one engine process each; write the reports and the aggregate. The
    output folder is checked and locked before any work (a second run on it is refused)."""
    requested = _parse_gpus(gpus)
    if ray_address is not None and requested is not None:
        raise typer.BadParameter("--gpus is for this host; Ray assigns its GPUs itself", param_hint="--gpus")
    paths = discover_configs(configs)
    prepare_out_dir(out_dir)
    with lock_folder(out_dir, LOCK_NAME):
        _capture_locked(paths, options, out_dir, requested, ray_address, force, output, json_out, html)


def _capture_locked(
    paths: list[Path],
    options: ChildOptions,
    out_dir: Path,
    requested: list[int] | None,
    ray_address: str | None,
    force: bool,
    output: Path | None,
    json_out: bool,
    html: Path | None,
) -> None:
    """`capture_fleet` once the output folder is this run's (locked)."""
    from cgplan.io.reports import report_text

    overrides = Overrides(options.vllm_version, options.platform, options.model_runner)
    jobs = make_jobs(paths, out_dir, overrides, options.backend)
    open_out_dir(out_dir, jobs)
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with FleetBar() as progress, _sigterm_as_interrupt():
        progress.start(len(jobs))
        if ray_address is not None:
            from cgplan.api.fleet_ray import run_ray

            results, interrupted = run_ray(jobs, ray_address, options, force=force, progress=progress)
            slots: tuple[str, ...] = ()
            runner = "ray"
        else:
            slots = visible_gpus(requested)
            notes: list[str] = []
            todo, kept = skip_resumable(jobs, force, host_environment_key(), progress, options.backend, notes)
            for line in notes:  # a report there that does not stand: said by name, then replaced
                progress.console.print(f"cgplan: {line}", soft_wrap=True, markup=False, highlight=False)
            ran, interrupted = run_local(todo, slots, subprocess_launcher(options), progress=progress)
            by_name = {r.job.name: r for r in (*kept, *ran)}
            results = [by_name[j.name] for j in jobs if j.name in by_name]
            runner = "local"
    doc = aggregate(
        FleetRun(
            tuple(results),
            runner,
            slots,
            interrupted,
            ("cgplan", *sys.argv[1:]),
            created,
            out_dir,
        )
    )
    written = write_aggregate(doc, out_dir, markdown=fleet_markdown(doc), html=fleet_html(doc))
    if is_stdout(output) and output is not None:  # `-o -`: the report is stdout's one document
        sys.stderr.write(fleet_table(doc))
    elif json_out:
        write_artifact(report_text(doc), None)
    else:
        write_stdout(fleet_table(doc))
    if output is not None:
        write_artifact(report_text(doc), output)
    if html is not None:
        write_artifact(fleet_html(doc), html)
    sys.stderr.write(f"cgplan: {len(jobs)} reports and the aggregate ({written[0].name}) in {out_dir}\n")
    if interrupted:
        done = sum(1 for r in results if r.status == "complete")
        raise CaptureError(
            f"interrupted ({_signal_name()}); {done} complete report(s) kept in {out_dir} "
            "(run the same command again to capture the rest)"
        )
    code = exit_code(doc)
    if code:
        raise typer.Exit(code)
