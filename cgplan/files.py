"""Atomic file writing: a temporary file in the target's folder, then a rename (never a half file)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from cgplan.errors import CgplanError


def write_atomically(path: Path, text: str, what: str = "write") -> None:
    """Replace `path` with `text`; on any failure the old content stays and no temp file is left.

    Raises:
        CgplanError: `<path>: cannot <what>: <reason>` (one line).
    """
    tmp: str | None = None
    try:
        target = path.expanduser()
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or Path("."))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except (OSError, RuntimeError, UnicodeError) as e:  # RuntimeError: ~user with no such user
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        reason = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise CgplanError(f"{path}: cannot {what}: {reason}") from None
