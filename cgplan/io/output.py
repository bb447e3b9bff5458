"""Writing what cgplan produces: stdout, streams and atomically replaced files.

Three kinds of target, told apart before anything is written:
- stdout (`-`, or no file): written and flushed here, so a full disk or a closed stdout is
  one error line (exit 2) instead of a truncated file and exit 0, and a reader that went
  away (EPIPE, `| head`) ends the output silently, as with Unix tools;
- a stream that is not a regular file (`/dev/stdout`, `/dev/null`, a FIFO, a terminal):
  written to directly, never replaced by a regular file;
- a regular file (or a new one): a temporary file beside it, fsynced, then renamed over it,
  so a failure (or Ctrl-C, or SIGTERM) leaves the old content and no temporary file.
Anything else (a folder, a block device, a socket) is refused by name.

`write_all` stages every file first and renames them only once every one (and every stream)
was written: a command that fails leaves none of its artifacts written.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from cgplan.errors import CgplanError, one_line

STDOUT = "-"
"""The file name that means stdout, for every option that writes (`-o -`, `--json -`, ...)."""

_DIRECT_PREFIXES = ("/dev/std", "/dev/fd/", "/proc/")
"""Paths that name one of this process's descriptors (/dev/stdout, /dev/fd/N, /proc/self/fd/N):
written to as the descriptor, whatever it is open on (a file given with `>>` stays appended to)."""


_UNSAFE_PATTERN = (
    "\x1b(?!\\[[0-9;]*m)|[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
"""What must not reach a terminal, a JUnit file, markdown or HTML raw: control characters but
tab and newline, escape sequences other than the colour (SGR) ones cgplan's own terminal
output uses, and bidirectional overrides that reorder what a reader sees."""
_ASCII_SUSPECT = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
"""In ASCII text, every character `_UNSAFE_PATTERN` can match (ESC among them): text without any
is safe as it is. (A cheap pattern: the full one is compiled only for text that needs it.)"""


@functools.cache
def _unsafe() -> re.Pattern[str]:
    return re.compile(_UNSAFE_PATTERN)


def _escape(m: re.Match[str]) -> str:
    # \uXXXX: readable on a terminal, and inside a JSON string the same character again.
    return f"\\u{ord(m.group(0)):04x}"


def _safe(text: str) -> str:
    """`text` fit for any output: lone surrogates (undecodable bytes of a file name) and the
    characters of `_UNSAFE` (from inputs: file names, logs, reports) written as escapes. JSON
    has none (json.dumps escapes them), so this changes only what is broken."""
    if text.isascii() and _ASCII_SUSPECT.search(text) is None:
        return text  # nothing to escape, and ASCII encodes
    text = _unsafe().sub(_escape, text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _reason(e: BaseException) -> str:
    return e.strerror if isinstance(e, OSError) and e.strerror else str(e)


def silence_stdout() -> None:
    """Point fd 1 at /dev/null, so what is still buffered cannot fail again at exit."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


class ClosedStdout:
    """Stands in for sys.stdout when cgplan started with fd 1 closed (`cgplan ... >&-`): a
    command that writes only files works; one that writes to stdout fails with one line."""

    def write(self, text: str) -> int:
        """Fail: there is no stdout to write to."""
        raise OSError(9, "stdout is closed")

    def flush(self) -> None:
        """Nothing is ever buffered."""

    def isatty(self) -> bool:
        """Not a terminal."""
        return False


def _wait_writable(fd: int) -> None:
    """Wait until `fd` takes data again (a non-blocking pipe that was full: EAGAIN). No time limit,
    as for a blocking pipe; a reader that went away wakes it (POLLERR/POLLHUP) and the next write
    fails with EPIPE."""
    import select  # here: only a non-blocking descriptor that was full needs it

    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    poller.poll()


def write_fd(fd: int, data: bytes) -> None:
    """Write every byte of `data` to `fd`: a short write is continued, EAGAIN on a non-blocking
    descriptor (some CI runners and Node tools leave stdout so) waits until it drains.

    Raises:
        OSError: the write failed (EPIPE as BrokenPipeError, ENOSPC, EBADF, EIO, ...).
    """
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            _wait_writable(fd)
            continue
        view = view[n:]


class CheckedStream:
    """sys.stdout or sys.stderr for a CLI run: each write goes to the descriptor whole, at once
    (no buffer to lose: a TextIOWrapper over a non-blocking pipe drops what its buffer could not
    place when the pipe is full, and a failed flush at exit loses the rest). On stdout a failed
    write raises (one line, exit 2, from `write_stdout`); on stderr (`lossy`) it is dropped: with
    no stderr left the exit code is all a run can still say, and it must stay the command's."""

    def __init__(self, fd: int, encoding: str, errors: str, *, lossy: bool) -> None:
        self.fd = fd
        self.encoding = encoding
        self.errors = errors
        self.lossy = lossy
        self.lost = False
        """A write to a lossy stream failed (what it held is gone)."""

    def write(self, text: str) -> int:
        """Write `text` whole (str only: click tells text streams from binary ones by a bytes write)."""
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        try:
            write_fd(self.fd, text.encode(self.encoding, self.errors))
        except OSError:
            if not self.lossy:
                raise
            self.lost = True
        return len(text)

    def flush(self) -> None:
        """Nothing is ever buffered."""

    def isatty(self) -> bool:
        """Whether the descriptor is a terminal."""
        try:
            return os.isatty(self.fd)
        except OSError:
            return False

    def fileno(self) -> int:
        """The descriptor."""
        return self.fd

    def writable(self) -> bool:
        """Always."""
        return True

    @property
    def closed(self) -> bool:
        """Never: a closed descriptor fails the write, as said above."""
        return False


def _checked(stream: object, fd: int, *, lossy: bool) -> Any:
    encoding = getattr(stream, "encoding", None) or "utf-8"
    errors = getattr(stream, "errors", None) or ("backslashreplace" if lossy else "strict")
    return CheckedStream(fd, encoding, errors, lossy=lossy)


def install_checked_streams() -> Callable[[], None]:
    """Make sys.stdout and sys.stderr `CheckedStream`s for this run (when they are the process's
    own: a caller's captured streams are left alone); a stderr closed at start (`2>&-`) holds
    /dev/null, so no file cgplan opens becomes fd 2. Returns what puts the old ones back."""
    saved = (sys.stdout, sys.stderr)
    err: Any = sys.stderr  # Any: the stand-ins are not TextIOWrappers, only write-compatible
    out: Any = sys.stdout
    if err is None:
        with contextlib.suppress(OSError):
            fd = os.open(os.devnull, os.O_WRONLY)
            if fd != 2:
                os.close(fd)
        sys.stderr = _checked(None, 2, lossy=True)
    elif sys.__stderr__ is not None and err is sys.__stderr__:
        with contextlib.suppress(OSError, ValueError):
            sys.__stderr__.flush()
        with contextlib.suppress(OSError, ValueError):
            sys.stderr = _checked(err, sys.__stderr__.fileno(), lossy=True)
    if sys.__stdout__ is not None and out is sys.__stdout__:
        with contextlib.suppress(OSError, ValueError):
            sys.__stdout__.flush()
            sys.stdout = _checked(out, sys.__stdout__.fileno(), lossy=False)

    def restore() -> None:
        sys.stdout, sys.stderr = saved

    return restore


def guard_closed_stdout() -> None:
    """If fd 1 is closed, hold it with /dev/null (so no file cgplan opens becomes fd 1) and
    make sys.stdout a `ClosedStdout`."""
    if sys.stdout is not None:
        return
    with contextlib.suppress(OSError):
        fd = os.open(os.devnull, os.O_WRONLY)
        if fd != 1:
            os.close(fd)
    sys.stdout = ClosedStdout()


def write_stdout(text: str) -> None:
    """Write `text` to stdout and flush it, checked.

    Raises:
        CgplanError: `<stdout>: cannot write: <reason>` (full disk, closed stdout, ...).
    """
    out = sys.stdout
    if out is None:  # started with fd 1 closed (`cgplan ... >&-`)
        raise CgplanError("<stdout>: cannot write: stdout is closed")
    if isinstance(out, ClosedStdout):
        raise CgplanError("<stdout>: cannot write: stdout is closed (give -o FILE)")
    try:
        out.write(_safe(text))
        out.flush()
    except BrokenPipeError:
        silence_stdout()  # the reader is gone (`| head`): stop writing, as Unix tools do
        stdout_broken.append(True)
    except (OSError, ValueError) as e:  # ValueError: write to a closed file object
        silence_stdout()
        raise CgplanError(f"<stdout>: cannot write: {_reason(e)}") from None


stdout_broken: list[bool] = []
"""Set when the reader of stdout went away (EPIPE): later output is dropped, not an error."""


def flush_stdout() -> None:
    """Flush what is left on stdout at exit, checked like `write_stdout`.

    Raises:
        CgplanError: the flush failed for another reason than a reader that went away.
    """
    if sys.stdout is None or stdout_broken:
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
    except (OSError, ValueError) as e:
        silence_stdout()
        raise CgplanError(f"<stdout>: cannot write: {_reason(e)}") from None


def _kind(path: Path) -> str:
    """stdout, stream (write directly), file (replace atomically); refuses anything else."""
    if str(path) == STDOUT:
        return "stdout"
    if os.path.abspath(path).startswith(_DIRECT_PREFIXES):
        return "stream"
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "file"
    except OSError as e:
        raise CgplanError(f"{path}: cannot write: {_reason(e)}") from None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return "stream"
    what = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
    raise CgplanError(f"{path}: cannot write: {what}; refusing to replace it (name a file)")


class _Staged:
    """A file written beside its target, renamed into place once every output is written (a plain
    class: this module is imported by every command; no dataclass or NamedTuple made at import)."""

    __slots__ = ("path", "target", "tmp")

    def __init__(self, path: Path, target: Path, tmp: str) -> None:
        self.path = path
        self.target = target
        self.tmp = tmp


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """While temporary files exist, SIGTERM (and SIGHUP) raise like Ctrl-C does, so the
    clean-up below runs instead of the process dying with a full-size `.tmp` beside the target."""

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    saved: list[tuple[int, object]] = []
    try:
        for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
            if sig is not None:
                with contextlib.suppress(ValueError, OSError):  # not the main thread
                    saved.append((sig, signal.signal(sig, stop)))
        yield
    finally:
        for sig, old in saved:
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, old)  # type: ignore[arg-type]


def _stage(path: Path, text: str, what: str) -> _Staged:
    import tempfile  # here, not at import: only a write to a file needs it (start-up, issue 18)

    target = Path(os.path.realpath(path.expanduser()))  # a link to a file keeps being a link
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    staged = _Staged(path, target, tmp)
    try:
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)  # mkstemp makes 0600: keep the old file's mode, or the umask's
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(_safe(text))
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return staged


def _write_stream(path: Path, text: str, what: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(_safe(text))
            fh.flush()
    except BrokenPipeError:
        pass  # a FIFO's reader went away: as for stdout, not an error
    except OSError as e:
        raise CgplanError(f"{one_line(str(path))}: cannot {what}: {_reason(e)}") from None


def _stage_checked(path: Path, text: str, what: str) -> _Staged:
    try:
        return _stage(path, text, what)
    except (OSError, RuntimeError, UnicodeError) as e:  # RuntimeError: ~user with no such user
        raise CgplanError(f"{one_line(str(path))}: cannot {what}: {_reason(e)}") from None


def _commit(s: _Staged, what: str) -> None:
    try:
        os.replace(s.tmp, s.target)
    except OSError as e:
        raise CgplanError(f"{one_line(str(s.path))}: cannot {what}: {_reason(e)}") from None


def write_all(items: Sequence[tuple[Path | None, str]], what: str = "write") -> None:
    """Write every (target, text): None or `-` is stdout. All or nothing for files: each is
    staged beside its target, and only when every one and every stream was written are they
    renamed into place.

    Raises:
        CgplanError: `<path>: cannot <what>: <reason>` (one line); then no file was replaced.
    """
    kinds = [(p, text, "stdout" if p is None else _kind(p)) for p, text in items]
    if sum(k == "stdout" for _, _, k in kinds) > 1:
        raise CgplanError("-: more than one output goes to stdout; name a file for all but one")
    staged: list[_Staged] = []
    with _signals_raise():
        try:
            for p, text, k in kinds:
                if k == "file" and p is not None:
                    staged.append(_stage_checked(p, text, what))
            for p, text, k in kinds:
                if k == "stdout":
                    write_stdout(text)
                elif k == "stream" and p is not None:
                    _write_stream(p, text, what)
            for s in staged:
                _commit(s, what)
        finally:
            for s in staged:
                with contextlib.suppress(OSError):
                    os.unlink(s.tmp)  # renamed ones are gone already (ENOENT)


def write_atomically(path: Path, text: str, what: str = "write") -> None:
    """Replace `path` with `text` (or write the stream it names); on any failure the old content
    stays and no temporary file is left.

    Raises:
        CgplanError: `<path>: cannot <what>: <reason>` (one line).
    """
    write_all([(path, text)], what)


__all__ = [
    "STDOUT",
    "CheckedStream",
    "ClosedStdout",
    "flush_stdout",
    "guard_closed_stdout",
    "install_checked_streams",
    "silence_stdout",
    "write_all",
    "write_atomically",
    "write_fd",
    "write_stdout",
]
