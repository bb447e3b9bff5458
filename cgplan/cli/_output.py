"""Artifact writing: stdout or an atomically replaced file, written only on success."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cgplan.io.output import STDOUT, write_all


def is_stdout(output: Path | None) -> bool:
    """No file, or `-`: the artifact goes to stdout."""
    return output is None or str(output) == STDOUT


def write_artifact(text: str, output: Path | None) -> None:
    """Write `text` to stdout (None or `-`), or atomically to `output` (never truncates it on
    failure; a stream such as a FIFO is written to, never replaced)."""
    write_all([(output, text)])


def write_artifacts(items: Sequence[tuple[str, Path | None]]) -> None:
    """Write several artifacts of one command, all or nothing (see `cgplan.io.output.write_all`)."""
    write_all([(p, text) for text, p in items])
