"""Atomic file writing: a temporary file in the target's folder, then a rename (never a half file)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from cgplan.errors import CgplanError


def _umask() -> int:
    """The process umask (read by setting it, so set it straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomically(path: Path, text: str, what: str = "write") -> None:
    """Replace `path` with `text`; on any failure the old content stays and no temp file is left.

    Raises:
        CgplanError: `<path>: cannot <what>: <reason>` (one line).
    """
    tmp: str | None = None
    try:
        target = path.expanduser()
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or Path("."))
        # mkstemp creates 0600; an artifact gets the mode any new file gets (0666 less the umask)
        os.fchmod(fd, 0o666 & ~_umask())
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
