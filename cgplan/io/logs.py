"""Reading a vLLM log: a plain or gzip-compressed file, as blocks of whole decoded lines, bounded
(the parse itself is `cgplan.core.logs.parse`, pure)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from cgplan.core.logs.parse import LogError, ParsedLog, parse_blocks
from cgplan.io.files import LOG_LIMIT_BYTES, ReadError, gunzip_blocks, gzip_errors, open_binary

_SNIFF_BYTES = 65536
"""How far into the (decompressed) file a NUL byte means binary data."""


_MAX_LINE_BYTES = 8 << 20
"""The longest line read (vLLM's longest, its non-default args, is a few KiB): the streamed
parser holds one line, so one line of gigabytes must not be."""


_BLOCK_BYTES = 1 << 14
"""How much of the file is read (and, gzip-compressed, decompressed: io.files.gunzip_blocks) at a
time (16 KiB: the parse's cost per block is a few string searches, and a block is held about three
times over, as read, decoded and parsed)."""


def log_blocks(path: str | Path) -> Iterator[str]:
    """A plain or gzip-compressed log, decoded, as blocks of whole lines: "\n".join(blocks) is
    the text (memory: about two blocks, or the longest line, as bytes and as text; the caller
    drops each block before it asks for the next).

    Raises:
        LogError: (exit 2) the file cannot be read, is corrupt gzip, binary, empty, larger than
            LOG_LIMIT_BYTES once decompressed, or has a line longer than _MAX_LINE_BYTES.
    """
    try:  # a regular file (or `-`), refused by name otherwise: a FIFO or /dev/zero never blocks
        raw = open_binary(path, what="log file", limit=LOG_LIMIT_BYTES)
    except ReadError as e:
        raise LogError(e.message) from None
    with raw:
        try:
            if hasattr(raw, "peek"):  # a pipe cannot seek back: look at the first bytes in place
                gzipped = raw.peek(2)[:2] == b"\x1f\x8b"
            else:
                gzipped = raw.read(2) == b"\x1f\x8b"
                raw.seek(0)
        except OSError as e:
            raise LogError(f"{path}: cannot read: {e.strerror or e}") from None
        blocks = gunzip_blocks(raw, _BLOCK_BYTES) if gzipped else None
        errors = gzip_errors()  # a read's OSError, and a corrupt or cut gzip file's

        def read() -> bytes:
            try:
                if blocks is not None:
                    return next(blocks, b"")
                data: bytes = raw.read(_BLOCK_BYTES)
                return data
            except errors as e:
                if gzipped:
                    raise LogError(f"{path}: corrupt gzip file ({e})") from None
                raise LogError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None

        offset = 0
        has_text = False
        rest: list[bytes] = []
        """The start of the line the last block ended in, as read (no newline in it yet)."""
        rest_bytes = 0
        while chunk := read():
            if offset < _SNIFF_BYTES and chunk.find(b"\x00", 0, _SNIFF_BYTES - offset) >= 0:
                while gzipped and read():
                    pass  # a corrupt gzip file is reported as such, whatever it holds
                raise LogError(f"{path}: binary data, not a vLLM log")
            offset += len(chunk)
            if offset > LOG_LIMIT_BYTES:  # a small gzip expanding to gigabytes stops here
                limit = LOG_LIMIT_BYTES >> 20
                raise LogError(f"{path}: larger than a log file may be once decompressed ({limit} MiB)")
            has_text = has_text or not chunk.isspace()
            cut = chunk.rfind(b"\n")
            if cut < 0:
                rest_bytes += len(chunk)
                if rest_bytes > _MAX_LINE_BYTES:
                    raise LogError(f"{path}: a line longer than {_MAX_LINE_BYTES >> 20} MiB, not a vLLM log")
                rest.append(chunk)  # a line longer than a block: read on (joined once, below)
                del chunk
                continue
            with memoryview(chunk) as view:
                # decoded from the block itself: no copy of it as bytes, but for the line the last
                # block left over
                if rest:
                    text = b"".join([*rest, view[:cut]]).decode("utf-8", errors="replace")
                else:
                    text = str(view[:cut], "utf-8", "replace")
            rest_bytes = len(chunk) - cut - 1
            rest = [chunk[cut + 1 :]] if rest_bytes else []
            del chunk
            yield text
            del text
        if not has_text:
            raise LogError(f"{path}: empty file, not a vLLM log")
        yield b"".join(rest).decode("utf-8", errors="replace")


def read_log(path: str | Path) -> str:
    """The text of a plain or gzip-compressed log; LogError (exit 2) when it cannot be one."""
    return "\n".join(log_blocks(path))


def parse_file(path: str | Path) -> ParsedLog:
    """`parse_log` of the file, streamed: the file is never held in memory whole."""
    return parse_blocks(log_blocks(path), "<stdin>" if str(path) == "-" else str(path))
