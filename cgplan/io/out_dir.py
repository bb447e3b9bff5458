"""The output folder of a multi-config capture: checked before any work, locked while a run writes
to it, and its files never written through a symbolic link (issue 33)."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from cgplan.errors import CgplanError, one_line


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a folder"


def prepare_out_dir(path: Path, option: str = "--out-dir") -> None:
    """Make `path` (and its parents) a folder, or refuse it in one line: a file, a device or
    anything else that is not a folder is never written into or replaced.

    Raises:
        CgplanError: `<path>: <option> is not a folder (<what it is>); name a folder` (exit 2).
    """
    shown = one_line(str(path))
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as e:
        raise CgplanError(f"{shown}: {option}: cannot use it: {e.strerror or e}") from None
    if mode is not None and not stat.S_ISDIR(mode):
        raise CgplanError(f"{shown}: {option} is not a folder ({_kind(mode)}); name a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # a parent that is a file, no permission, a full disk
        raise CgplanError(f"{shown}: {option}: cannot make the folder: {e.strerror or e}") from None


@contextlib.contextmanager
def lock_folder(folder: Path, name: str, what: str = "cgplan capture") -> Iterator[None]:
    """Hold `folder/name` locked (flock, exclusive) for the block, with this process's pid in it;
    a second holder is refused at once. The kernel drops the lock with its holder (Ctrl-C,
    SIGKILL, a crash), so a stale file never blocks a later run.

    Raises:
        CgplanError: `<folder>: another <what> (pid N) is writing to this folder ...` (exit 2).
    """
    import fcntl

    path = folder / name
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        raise CgplanError(f"{one_line(str(path))}: cannot lock the folder: {e.strerror or e}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            pid = f" (pid {holder})" if holder.isdigit() else ""
            raise CgplanError(
                f"{one_line(str(folder))}: another {what}{pid} is writing to this folder; "
                "wait for it, or give another --out-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock; the file stays (removing it would race a new holder)


def refuse_links(paths: list[Path]) -> None:
    """Refuse, by name, any of `paths` that is a symbolic link: a report or log written there
    would land wherever it points (a run as root once replaced /etc/passwd that way).

    Raises:
        CgplanError: `<path>: a symbolic link in the output folder; ...` (exit 2).
    """
    for p in paths:
        if p.is_symlink():
            raise CgplanError(
                f"{one_line(str(p))}: a symbolic link in the output folder; refusing to write "
                "through it (remove it, or give another --out-dir)"
            )


def open_log(path: Path) -> BinaryIO:
    """A child's log, created or truncated, never through a symbolic link (O_NOFOLLOW).

    Raises:
        OSError: as os.open (ELOOP for a link).
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o644)
    return os.fdopen(fd, "wb")
