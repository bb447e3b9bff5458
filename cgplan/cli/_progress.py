"""A rich progress bar behind the ProgressSink protocol (stderr, only on a terminal)."""

from __future__ import annotations

import sys
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn


class RichProgress:
    """graph i/N, family, size and MiB so far."""

    def __init__(self) -> None:
        self.console = Console(file=sys.stderr, emoji=False)
        self.tty = sys.stderr.isatty()
        self.bar = Progress(
            TextColumn("capturing"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=False,
            disable=not self.tty,
        )
        self.task: TaskID | None = None
        self.done = 0

    def __enter__(self) -> RichProgress:
        self.bar.__enter__()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.bar.__exit__(t, e, tb)

    def start(self, total: int | None) -> None:
        """Capture begins."""
        self.task = self.bar.add_task("", total=total)

    def advance(self, label: str, mib_so_far: float) -> None:
        """One more graph descriptor."""
        self.done += 1
        # Called from inside vLLM's capture loop: off a terminal the (disabled) bar is not updated.
        if self.task is not None and self.tty:
            self.bar.update(self.task, advance=1, description=f"{label} · {mib_so_far:.1f} MiB so far")
        if not self.tty and self.done % 25 == 0:
            self.console.print(f"captured {self.done} graphs ({label}; {mib_so_far:.1f} MiB so far)")

    def note(self, message: str) -> None:
        """A remark."""
        self.console.print(f"cgplan: {message}")


class RichSteps:
    """One bar per engine run of `cgplan verify` (configs answered i/N); off a terminal one line
    per config on stderr, none with --quiet."""

    def __init__(self, quiet: bool = False) -> None:
        self.console = Console(file=sys.stderr, emoji=False, markup=False, highlight=False)
        self.tty = sys.stderr.isatty() and not quiet
        self.quiet = quiet
        self.bar = Progress(
            TextColumn("{task.fields[engine]}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=False,
            disable=not self.tty,
        )
        self.task: TaskID | None = None
        self.label = ""
        self.done = 0
        self.total = 0

    def __enter__(self) -> RichSteps:
        self.bar.__enter__()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.bar.__exit__(t, e, tb)

    def start(self, total: int, label: str) -> None:
        """An engine is up: `total` configs follow."""
        self.label, self.done, self.total = label, 0, total
        self.task = self.bar.add_task("", total=total, engine=label)

    def advance(self, label: str) -> None:
        """One more config answered."""
        self.done += 1
        if self.task is not None and self.tty:
            self.bar.update(self.task, advance=1, description=label)
        elif not self.quiet and not self.tty:
            self.console.print(f"cgplan: {self.label} answered {self.done}/{self.total} ({label})")
