"""Artifact writing: stdout or an atomically replaced file, written only on success."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from cgplan.errors import CgplanError


def write_artifact(text: str, output: Path | None) -> None:
    """Write `text` to stdout, or atomically to `output` (never truncates it on failure)."""
    if output is None:
        sys.stdout.write(text)
        return
    target = output.expanduser()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or Path("."))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except OSError as e:
        raise CgplanError(f"{output}: cannot write: {e.strerror or e}") from None
