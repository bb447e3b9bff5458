"""Artifact writing: stdout or an atomically replaced file, written only on success."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cgplan.io.output import STDOUT, write_all


def is_stdout(output: Path | None) -> bool:
    """No file, or `-`: the artifact goes to stdout."""
    return output is None or str(output) == STDOUT


def one_stdout(outputs: Sequence[tuple[str, Path | None]], *, main_to_stdout: bool = False) -> None:
    """Refuse, before any work, two outputs to stdout: `outputs` are (option, path) of the
    optional outputs given (`-` is stdout); `main_to_stdout`: the command's own output goes there
    too. (Found after the work, gate had printed its verdict to stderr above the error.)

    Raises:
        CgplanError: `-: more than one output goes to stdout (OPTIONS); ...` (exit 2).
    """
    from cgplan.errors import CgplanError

    names = [name for name, p in outputs if p is not None and is_stdout(p)]
    if len(names) + main_to_stdout > 1:
        also = " and the command's own output" if main_to_stdout else ""
        raise CgplanError(
            f"-: more than one output goes to stdout ({', '.join(names)}{also}); name a file for all but one"
        )


def write_artifact(text: str, output: Path | None) -> None:
    """Write `text` to stdout (None or `-`), or atomically to `output` (never truncates it on
    failure; a stream such as a FIFO is written to, never replaced)."""
    write_all([(output, text)])


def write_artifacts(items: Sequence[tuple[str, Path | None]]) -> None:
    """Write several artifacts of one command, all or nothing (see `cgplan.io.output.write_all`)."""
    write_all([(p, text) for text, p in items])
