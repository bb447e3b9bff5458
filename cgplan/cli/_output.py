"""Artifact writing: stdout or an atomically replaced file, written only on success."""

from __future__ import annotations

import sys
from pathlib import Path

from cgplan.files import write_atomically


def write_artifact(text: str, output: Path | None) -> None:
    """Write `text` to stdout, or atomically to `output` (never truncates it on failure)."""
    if output is None:
        sys.stdout.write(text)
        return
    write_atomically(output, text)
