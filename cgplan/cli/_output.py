"""Artifact writing: stdout or an atomically replaced file, written only on success."""

from __future__ import annotations

import contextlib
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
    tmp: str | None = None
    try:
        target = output.expanduser()
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or Path("."))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except (OSError, RuntimeError, UnicodeError) as e:  # RuntimeError: ~user with no such user
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        reason = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise CgplanError(f"{output}: cannot write: {reason}") from None
