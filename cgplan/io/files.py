"""The one hardened reader: every file (or stdin) cgplan reads goes through here.

What it guarantees, whatever the input:
- bounded bytes: a file over its kind's limit is refused from its size before it is read, a
  stream is cut at the limit, and a gzip file is refused as soon as its expansion passes the
  limit (a 1 MiB bomb never becomes gigabytes);
- regular files only: a folder, a FIFO, a device (`/dev/zero`) or a socket is refused by name
  from `os.stat`, before anything opens it (a FIFO with no writer would block the open), and
  the file is opened with O_NONBLOCK so a swap between the stat and the open cannot hang;
- `-` is standard input, read with an idle timeout (a forgotten pipe fails, it does not hang);
- UTF-8 errors located at line and column;
- YAML: block mappings and sequences of plain keys, simple values and one-line flow lists and
  mappings (what a config or a traffic histogram is) read directly, else
  the C loader when present (PyYAML is imported only then: its import is a fifth of a `plan`
  start-up, issue 18); nesting depth, alias expansion (a billion-laughs document)
  and cycles bounded; tags refused (a config has no use for `!!python/...` or `!!set`); integers
  beyond 64 bits and floats that overflow (1.0e+400, .inf) refused at their line and column;
- JSON: the same number and depth bounds, each refusal at its key path.

Every refusal is a ReadError (`source[:key.path]: problem`, exit 2); callers turn it into
their own error class with `as_config_error()` or its message.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import json
import math
import os
import re
import select
import stat
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from cgplan.errors import CgplanError, ConfigError, preview

MIB = 1 << 20
DOCUMENT_LIMIT_BYTES = 16 * MIB
"""A config, a policy, a coefficient set, a traffic histogram, a model's config.json: the
largest real one is a few KiB."""
REPORT_LIMIT_BYTES = 32 * MIB
"""A plan or capture report (JSON): the largest real one is a few MiB (reports.MAX_REPORT_BYTES)."""
LOG_LIMIT_BYTES = 256 * MIB
"""A vLLM log or a metrics dump, after gzip expansion: a day of a busy server's log is tens of MiB."""
MAX_DEPTH = 64
"""Nesting levels of a YAML/JSON document (real files have fewer than 10)."""
MAX_NODES = 1_000_000
"""Values a YAML document may expand to, aliases counted each time they are used: the largest
real one (a capture-size list) has a few thousand."""
MAX_YAML_TOKENS = 100_000
"""Lines plus commas a YAML document may have, counted before it is parsed (two C-speed counts):
every value of a document but the first starts a line or follows a comma, nesting aside (bounded
by MAX_DEPTH), so this bounds what parsing could build before the parse starts; a 16 MiB list
took 46-98 s and 3 GB to compose before MAX_NODES refused it (issue 33). The largest real input
(a Helm-rendered manifest, a capture-size list) has a few thousand."""
MAX_INT = 2**63 - 1
"""No number of any cgplan file needs more than 64 bits; larger ones are refused where read."""
STDIN_IDLE_TIMEOUT_S = 10.0
"""`-` fails when standard input sends nothing for this long."""

_CHUNK_BYTES = 1 << 20
_INT_TEXT_CHARS = 100  # a YAML int's text beyond this is refused before int() sees it
_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MAP_TAG = "tag:yaml.org,2002:map"

if TYPE_CHECKING:
    import yaml


def yaml_loader(*, exact: bool = False) -> type[yaml.SafeLoader]:
    """libyaml's loader when PyYAML was built with it (several times faster), else the pure one;
    with `exact`, PyYAML's own `SafeLoader`, which is what `yaml.safe_load` (and so `vllm serve
    --config`) uses: libyaml accepts documents it refuses (a tab before a comment, `key:<TAB>value`)."""
    import yaml

    if exact:
        return yaml.SafeLoader
    loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return loader


class ReadError(CgplanError):
    """A file cannot be read as what it should be: `source[:key.path]: problem` (exit 2)."""

    def __init__(self, source: str, problem: str, key_path: str = "") -> None:
        self.source = source
        self.problem = problem
        self.key_path = key_path
        where = f"{source}:{key_path}" if key_path else source
        super().__init__(f"{where}: {problem}")

    def as_config_error(self) -> ConfigError:
        """The same message as a ConfigError (for the readers of config-like files)."""
        return ConfigError(self.key_path, self.problem, source=self.source)


def _size(n: int) -> str:
    return f"{n / MIB:g} MiB" if n >= MIB else f"{n:,} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _os_reason(e: BaseException) -> str:
    return (e.strerror if isinstance(e, OSError) and e.strerror else str(e)) or type(e).__name__


def _open_regular(path: Path, shown: str, what: str, limit: int) -> int:
    """A read-only descriptor of a regular file no larger than `limit`, checked before opening."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise ReadError(shown, "no such file") from None
    except ValueError:  # a NUL byte in the name
        raise ReadError(shown, "cannot read: the name holds a NUL byte") from None
    except (OSError, RuntimeError) as e:  # RuntimeError: ~user with no such user
        raise ReadError(shown, f"cannot read: {_os_reason(e)}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ReadError(shown, f"is a folder, not a {what}")
    if not stat.S_ISREG(st.st_mode):
        raise ReadError(shown, f"is {_kind(st.st_mode)}, not a {what} (cgplan reads regular files only)")
    if st.st_size > limit:
        raise ReadError(shown, f"is {_size(st.st_size)}, larger than a {what} may be ({_size(limit)})")
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    flags |= getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in after the stat must not block the open
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise ReadError(shown, f"cannot read: {_os_reason(e)}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced between the stat and the open
        os.close(fd)
        raise ReadError(shown, f"is not a regular file, not a {what}")
    return fd


def _too_large(shown: str, what: str, limit: int, expanded: bool = False) -> ReadError:
    how = " once decompressed" if expanded else ""
    return ReadError(shown, f"larger than a {what} may be{how} ({_size(limit)})")


def _read_fd(fd: int, shown: str, what: str, limit: int, *, timeout_s: float | None) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        if timeout_s is not None:
            ready, _, _ = select.select([fd], [], [], timeout_s)
            if not ready:
                raise ReadError(
                    shown,
                    f"nothing on standard input for {timeout_s:g} s (pipe the {what} in, or name a file)",
                )
        try:
            chunk = os.read(fd, min(_CHUNK_BYTES, limit + 1 - total))
        except BlockingIOError:  # a non-blocking stream with nothing yet
            if timeout_s is None:
                raise ReadError(shown, f"cannot read: not a {what} (no data)") from None
            continue
        except OSError as e:
            raise ReadError(shown, f"cannot read: {_os_reason(e)}") from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise _too_large(shown, what, limit)


_STDIN_READ: list[tuple[weakref.ref[TextIO] | None, bytes]] = []
"""What `-` read from standard input, with (a weak reference to) the stream it came from: standard
input can be read once, and a command may look at `-` twice (diff and gate tell a report from a
config by its content, then read it), or take it for two inputs (`diff - -` compares it with
itself). Weak, so that the cache never keeps a caller's stream open after the caller let it go."""


def _stdin_bytes(what: str, limit: int) -> bytes:
    stream = sys.stdin
    if _STDIN_READ and stream is not None and (ref := _STDIN_READ[0][0]) is not None and ref() is stream:
        data = _STDIN_READ[0][1]
        if len(data) > limit:
            raise _too_large("-", what, limit)
        return data
    data = _read_stdin(stream, what, limit)
    _STDIN_READ[:] = [(weakref.ref(stream) if stream is not None else None, data)]
    return data


def stdin_bytes(what: str, limit: int) -> bytes:
    """Standard input, read once (within `limit` and the idle timeout), as `-` reads it."""
    return _stdin_bytes(what, limit)


def _read_stdin(stream: TextIO | None, what: str, limit: int) -> bytes:
    try:
        fd = stream.fileno() if stream is not None else -1
    except (OSError, ValueError, AttributeError):
        fd = -1
    if fd < 0:
        raise ReadError("-", f"standard input cannot be read (name the {what} instead)")
    try:
        mode = os.fstat(fd).st_mode
    except OSError as e:
        raise ReadError("-", f"cannot read standard input: {_os_reason(e)}") from None
    if stat.S_ISDIR(mode):
        raise ReadError("-", f"standard input is a folder, not a {what}")
    timeout = None if stat.S_ISREG(mode) else STDIN_IDLE_TIMEOUT_S
    return _read_fd(fd, "-", what, limit, timeout_s=timeout)


GZIP_BLOCK_BYTES = 1 << 14
"""How much `gunzip_blocks` reads and gives at a time by default (16 KiB)."""


def gunzip_blocks(raw: BinaryIO, block_bytes: int = GZIP_BLOCK_BYTES) -> Iterator[bytes]:
    """The gzip members of `raw` decompressed, at most `block_bytes` in and out at a time: the
    project's one gzip reader (io/logs.py streams a log through it, `read_bytes` a traffic file),
    with memory that is the same on every Python (3.12's GzipFile reads 128 KiB at a time and
    buffers as much again decompressed). zlib checks each member's CRC and length (zlib.error,
    EOFError for a file cut short: `GZIP_ERRORS`); zero bytes after a member are padding, as for
    GzipFile."""
    import zlib  # a .gz file only (not on a config's path)

    wbits = 16 + zlib.MAX_WBITS
    d = zlib.decompressobj(wbits)
    pending = b""
    while True:
        if not pending:
            if not d.eof:  # output zlib still holds (a block filled in the middle of a match)
                out = d.decompress(b"", block_bytes)
                if out:
                    yield out
                    continue
            pending = raw.read(block_bytes)
            if not pending:
                if not d.eof:
                    raise EOFError("Compressed file ended before the end-of-stream marker was reached")
                return
        if d.eof:  # the next member, or the zero padding after the last
            if not pending.strip(b"\x00"):
                pending = b""
                continue
            d = zlib.decompressobj(wbits)
        out = d.decompress(pending, block_bytes)
        pending = d.unused_data if d.eof else d.unconsumed_tail
        if out:
            yield out


def gzip_errors() -> tuple[type[Exception], ...]:
    """What reading `gunzip_blocks` raises for a corrupt or cut file (with a read's OSError)."""
    import zlib

    return (OSError, EOFError, zlib.error)


def _gunzip(data: bytes, shown: str, what: str, limit: int) -> bytes:
    """Every member of a gzip stream, stopped as soon as the output passes `limit`."""
    out: list[bytes] = []
    size = 0
    try:
        for block in gunzip_blocks(io.BytesIO(data)):
            size += len(block)
            if size > limit:
                raise _too_large(shown, what, limit, expanded=True)
            out.append(block)
    except gzip_errors() as e:
        reason = (
            "it ends in the middle of the data" if isinstance(e, EOFError) else str(e) or type(e).__name__
        )
        raise ReadError(shown, f"corrupt gzip file ({reason})") from None
    return b"".join(out)


def read_bytes(
    path: str | Path,
    *,
    what: str = "file",
    limit: int = DOCUMENT_LIMIT_BYTES,
    gunzip: bool = False,
    source: str | None = None,
) -> bytes:
    """The bytes of a regular file (or of stdin for `-`), gzip-expanded when `gunzip` and the data
    starts with gzip's magic number; at most `limit` bytes either way.

    Raises:
        ReadError: no such file, not a regular file, too large, corrupt gzip, stdin silent.
    """
    shown = source if source is not None else str(path)
    if str(path) == "-":
        data = _stdin_bytes(what, limit)
    else:
        fd = _open_regular(Path(path).expanduser(), shown, what, limit)
        try:
            data = _read_fd(fd, shown, what, limit, timeout_s=None)
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
    if gunzip and data[:2] == b"\x1f\x8b":
        data = _gunzip(data, shown, what, limit)
    return data


def open_binary(
    path: str | Path, *, what: str = "file", limit: int = DOCUMENT_LIMIT_BYTES, source: str | None = None
) -> BinaryIO:
    """A regular file opened for streaming (or stdin for `-`, read whole within `limit` and the
    idle timeout), after the same checks as `read_bytes`. The caller bounds what it expands.

    Raises:
        ReadError: no such file, not a regular file, larger than `limit`, stdin silent.
    """
    shown = source if source is not None else str(path)
    if str(path) == "-":
        return io.BytesIO(_stdin_bytes(what, limit))
    fd = _open_regular(Path(path).expanduser(), shown, what, limit)
    return os.fdopen(fd, "rb")


def decode_text(data: bytes, shown: str, errors: str = "strict", *, keep_bom: bool = False) -> str:
    """UTF-8 (a leading byte-order mark dropped, unless `keep_bom`: Python's `open()` keeps it, and
    `yaml.safe_load` then skips one at the start, not two); a bad byte located at line and column."""
    if data.startswith(codecs.BOM_UTF8) and not keep_bom:
        data = data[len(codecs.BOM_UTF8) :]
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise ReadError(
            shown, f"not UTF-8 text: {e.reason} at line {line}, column {column} (byte {e.start})"
        ) from None


def read_text(
    path: str | Path,
    *,
    what: str = "file",
    limit: int = DOCUMENT_LIMIT_BYTES,
    gunzip: bool = False,
    errors: str = "strict",
    source: str | None = None,
    keep_bom: bool = False,
) -> str:
    """`read_bytes` decoded as UTF-8 (`errors="replace"` for logs, which may hold any bytes)."""
    shown = source if source is not None else str(path)
    data = read_bytes(path, what=what, limit=limit, gunzip=gunzip, source=shown)
    return decode_text(data, shown, errors, keep_bom=keep_bom)


# ---------------------------------------------------------------- YAML


def _tag(node: yaml.Node) -> str:
    tag = str(node.tag)
    return "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org,2002:") else tag


def _at(node: yaml.Node) -> str:
    mark = node.start_mark
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _key_text(node: yaml.Node) -> str:
    import yaml

    if isinstance(node, yaml.ScalarNode) and isinstance(node.value, str):
        text = node.value
        if text and len(text) <= 80 and text.isprintable() and "." not in text and "[" not in text:
            return text
        return preview(text)
    return "<key>"


def _short_path(path: str, limit: int = 100) -> str:
    """A key path short enough for one line (a 64-level path is mostly repetition)."""
    return path if len(path) <= limit else f"{path[: limit // 2 - 2]}...{path[-(limit // 2 - 2) :]}"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class _Checker:
    """One pass over a composed YAML graph, before anything is constructed from it."""

    def __init__(self, loader: yaml.SafeLoader, source: str) -> None:
        self.loader = loader
        self.source = source
        self.sizes: dict[int, int] = {}  # id(node) → values it expands to (aliases share nodes)
        self.open: set[int] = set()

    def fail(self, path: str, problem: str) -> ReadError:
        return ReadError(self.source, problem, _short_path(path))

    def scalar(self, node: yaml.ScalarNode, path: str) -> None:
        import yaml

        implicit = (
            self.loader.resolve(yaml.ScalarNode, node.value, (True, False))  # type: ignore[no-untyped-call]
            if node.style in (None, "")
            else _STR_TAG
        )
        if node.tag != implicit:
            raise self.fail(
                path,
                f"YAML tags are not accepted, at {_at(node)} "
                f"(got {preview(_tag(node))}; expected a plain value)",
            )
        if node.tag == _INT_TAG:
            if len(node.value) > _INT_TEXT_CHARS:
                raise self.fail(
                    path,
                    f"number out of range at {_at(node)} (got an integer of {len(node.value):,} characters; "
                    f"expected at most {MAX_INT:,})",
                )
            value = self.loader.construct_yaml_int(node)
            if abs(value) > MAX_INT:
                raise self.fail(
                    path,
                    f"number out of range at {_at(node)} "
                    f"(got {preview(value)}; expected at most {MAX_INT:,})",
                )
        elif node.tag == _FLOAT_TAG:
            number = self.loader.construct_yaml_float(node)
            if not math.isfinite(number):
                raise self.fail(
                    path,
                    f"not a finite number at {_at(node)} "
                    f"(got {preview(node.value)}; expected a finite number)",
                )
        elif node.tag == _TIMESTAMP_TAG:
            try:
                self.loader.construct_yaml_timestamp(node)
            except (ValueError, OverflowError) as e:  # 2001-13-45
                problem = f"not a valid date at {_at(node)} (got {preview(node.value)}: {e})"
                raise self.fail(path, problem) from None

    def walk(self, node: yaml.Node, path: str, depth: int) -> int:
        import yaml

        key = id(node)
        if key in self.sizes:
            return self.sizes[key]
        if key in self.open:
            raise self.fail(path, f"an alias refers to a node that contains it, at {_at(node)} (a cycle)")
        if depth > MAX_DEPTH:
            raise self.fail(path, f"nested too deeply at {_at(node)} (more than {MAX_DEPTH} levels)")
        self.open.add(key)
        count = 1
        if isinstance(node, yaml.ScalarNode):
            self.scalar(node, path)
        elif isinstance(node, yaml.SequenceNode):
            if node.tag != _SEQ_TAG:
                raise self.fail(
                    path, f"YAML tags are not accepted, at {_at(node)} (got {preview(_tag(node))})"
                )
            for i, child in enumerate(node.value):
                count += self.walk(child, f"{path}[{i}]", depth + 1)
        elif isinstance(node, yaml.MappingNode):
            if node.tag != _MAP_TAG:
                raise self.fail(
                    path, f"YAML tags are not accepted, at {_at(node)} (got {preview(_tag(node))})"
                )
            for k, v in node.value:
                name = _join(path, _key_text(k))
                count += self.walk(k, name, depth + 1) + self.walk(v, name, depth + 1)
        self.open.discard(key)
        if count > MAX_NODES:
            raise self.fail(
                path,
                f"expands to more than {MAX_NODES:,} values at {_at(node)} "
                "(aliases repeating aliases, or a list too long to plan)",
            )
        self.sizes[key] = count
        return count


def _yaml_problem(e: yaml.YAMLError) -> str:
    mark = getattr(e, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    problem = getattr(e, "problem", None) or str(e).splitlines()[0]
    return f"invalid YAML: {where}{problem}"


class _NotPlain(Exception):
    """The text is outside what `_plain_yaml` reads: PyYAML reads it."""


_TOKEN = re.compile(r"[A-Za-z0-9_./+-]+")
"""A plain scalar of the characters `_plain_scalar` reads (a flow indicator, space or `#` ends it)."""
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?= |$)")
_PAIR = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*): +([A-Za-z0-9_./+-]+)")
_SIMPLE_PAIR = r"[A-Za-z_][A-Za-z0-9_-]*: +[A-Za-z0-9_./+-]+"
_SIMPLE_MAP = re.compile(rf"\{{ *(?:{_SIMPLE_PAIR} *, *)*{_SIMPLE_PAIR} *\}}")
"""A flow mapping of plain keys and plain scalars (`{num_reqs: 18, count: 4}`, a traffic file's
row): read with one match and one findall instead of a character loop."""
_SIMPLE_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]{0,17})")
_SIMPLE_FLOAT = re.compile(r"[-+]?[0-9]{1,15}\.[0-9]{1,15}")
_VERSION = re.compile(r"[0-9]+(?:\.[0-9]+){2,}")
_TRUE = frozenset(("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"))
_FALSE = frozenset(("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"))
_NULL = frozenset(("null", "Null", "NULL"))
_NOT_KEYS = _TRUE | _FALSE | _NULL
"""Plain keys PyYAML reads as a bool or None, not a string: left to it."""
_MAX_SIMPLE_KEY = 1000
"""Longer keys go to PyYAML: its scanner drops a simple key whose `:` is more than 1,024
characters past its start (`stale_possible_simple_keys`), which refuses the document."""
_PLAIN_MAX_DEPTH = 16
"""Nested collections the plain reader reads (a config has three or four); deeper goes to PyYAML."""


class _Nodes:
    """The nodes read so far, counted as `_Checker` counts them (keys, values, collections), so a
    document that expands past MAX_NODES goes to PyYAML, which refuses it."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 1  # the root mapping

    def add(self, k: int) -> None:
        self.n += k
        if self.n > MAX_NODES:
            raise _NotPlain


def _plain_scalar(token: str) -> Any:
    """A plain scalar's value as PyYAML's resolver gives it, for the tokens whose value is plain
    to see: a decimal integer of at most 18 digits, a decimal fraction (0.85; PyYAML's float() of
    the same text), a dotted version (0.33.0: no int, float or timestamp pattern matches two dots
    without a colon), and words that start with a letter,
    `_` or `/` (a string unless PyYAML's bool or null word; no other resolver starts there)."""
    first = token[0]
    if first.isalpha() or first in "_/":
        if token in _TRUE:
            return True
        if token in _FALSE:
            return False
        return None if token in _NULL else token
    if _SIMPLE_INT.fullmatch(token):
        return int(token)
    if _SIMPLE_FLOAT.fullmatch(token):
        return float(token)
    if _VERSION.fullmatch(token):
        return token
    raise _NotPlain  # 0o17, 1_000, 1.5, .inf, 2001-12-14, 1:20 ...: PyYAML's resolver decides


def _quoted(line: str, i: int) -> tuple[str, int]:
    """A quoted string at line[i] (a quote) that ends on the line: no escapes, no doubled quotes,
    printable ASCII, so its text is its value."""
    end = line.find(line[i], i + 1)
    text = line[i + 1 : end]
    if end < 0 or not (text.isascii() and text.isprintable()) or "\\" in text or "'" in text:
        raise _NotPlain
    return text, end + 1


def _flow(line: str, i: int, depth: int, nodes: _Nodes, scalars: dict[str, Any]) -> tuple[Any, int]:
    """`[a, [b, c]]` or `{k: a, m: [b]}` from line[i] ('[' or '{'): plain scalars, simple quoted
    strings and flow collections of them, on one line; `scalars` memoises `_plain_scalar`."""
    if depth > _PLAIN_MAX_DEPTH:
        raise _NotPlain
    nodes.add(1)
    value: Any
    if m := _SIMPLE_MAP.match(line, i):
        pairs: dict[str, Any] = {}
        for name, token in _PAIR.findall(line, i, m.end()):
            if name in pairs or name in _NOT_KEYS or len(name) > _MAX_SIMPLE_KEY:
                raise _NotPlain
            value = scalars.get(token, _NotPlain)
            if value is _NotPlain:
                value = scalars[token] = _plain_scalar(token)
            pairs[name] = value
        nodes.add(2 * len(pairs))
        return pairs, m.end()
    is_map = line[i] == "{"
    close = "}" if is_map else "]"
    out: Any = {} if is_map else []
    key = ""
    i += 1
    try:
        while line[i] == " ":
            i += 1
        if line[i] == close:
            return out, i + 1
        while True:
            while line[i] == " ":
                i += 1
            if is_map:
                m = _KEY.match(line, i)
                if m is None:
                    raise _NotPlain
                key = m.group(1)
                if key in out or key in _NOT_KEYS or len(key) > _MAX_SIMPLE_KEY:
                    raise _NotPlain
                i = m.end() + 1  # the space after the colon (none: the map goes on past the line)
                while line[i] == " ":
                    i += 1
            ch = line[i]
            if ch == "[" or ch == "{":
                value, i = _flow(line, i, depth + 1, nodes, scalars)
            elif ch == '"' or ch == "'":
                value, i = _quoted(line, i)
            else:
                value, i = _token(line, i, scalars)
            if is_map:
                out[key] = value
                nodes.add(2)
            else:
                out.append(value)
                nodes.add(1)
            while line[i] == " ":
                i += 1
            if line[i] == close:
                return out, i + 1
            if line[i] != ",":
                raise _NotPlain
            i += 1
    except IndexError:  # the collection goes on past the line
        raise _NotPlain from None


def _token(line: str, i: int, scalars: dict[str, Any]) -> tuple[Any, int]:
    """The plain scalar at line[i] (remembered by its text: documents repeat a few) and its end."""
    m = _TOKEN.match(line, i)
    if m is None:
        raise _NotPlain
    token = m.group()
    value = scalars.get(token, _NotPlain)
    if value is _NotPlain:
        value = scalars[token] = _plain_scalar(token)
    return value, m.end()


def _value(line: str, i: int, nodes: _Nodes, scalars: dict[str, Any]) -> Any:
    """The value at line[i] (its first character, after `key: ` or `- `), then at most a comment."""
    ch = line[i]
    value: Any
    if ch == "[" or ch == "{":
        value, i = _flow(line, i, 1, nodes, scalars)
    elif ch == '"' or ch == "'":
        value, i = _quoted(line, i)
        nodes.add(1)
    else:
        value, i = _token(line, i, scalars)
        nodes.add(1)
    if i != len(line):
        _rest_is_comment(line, i)
    return value


def _rest_is_comment(line: str, i: int) -> None:
    """line[i:] is nothing, spaces, or spaces and a `#` comment of printable characters."""
    if i == len(line):
        return
    if line[i] != " ":
        raise _NotPlain
    rest = line[i:].lstrip(" ")
    if rest and (rest[0] != "#" or not rest.isprintable()):
        raise _NotPlain


def _is_entry(body: str) -> bool:
    """`body` (a line without its indentation) is a block sequence entry: `-` then a space."""
    return body[0] == "-" and (len(body) == 1 or body[1] == " ")


def _plain_yaml(text: str) -> Any:
    """A YAML document read without PyYAML when it is block mappings and block sequences (plain
    keys, spaces for indentation, `- ` entries, sequences indented or not, `- - x` and `- key: v`
    on one line) of plain scalars, simple quoted strings and one-line flow lists and mappings of
    them, and comments: what a cgplan config or traffic histogram is. The value is PyYAML's
    (tests/io/test_yaml_load.py compares them over generated documents and every YAML file of the
    repository). Raises _NotPlain for anything else, for PyYAML to read (and locate its errors)."""
    if text[:1] == "\ufeff":  # PyYAML's scanner skips one byte-order mark at the start (not two)
        text = text[1:]
    root: dict[str, Any] = {}
    stack: list[tuple[int, Any]] = [(0, root)]
    """(indent, collection) of every block collection open, the innermost last."""
    open_key: tuple[dict[str, Any], str, int] | None = None  # `key:` with its value on later lines
    nodes = _Nodes()
    scalars: dict[str, Any] = {}
    for line in text.split("\n"):
        body = line.lstrip(" ")
        if not body or body[0] == "#":
            if body and not body.isprintable():
                raise _NotPlain
            continue
        indent = len(line) - len(body)
        entry = body[0] == "-" and (len(body) == 1 or body[1] == " ")  # `_is_entry`, inline
        if open_key is not None:
            parent, key, key_indent = open_key
            open_key = None
            # a deeper line, or a sequence entry at the key's own indent ("indentless")
            if indent > key_indent or (entry and indent == key_indent):
                if len(stack) >= _PLAIN_MAX_DEPTH:
                    raise _NotPlain
                child: Any = [] if entry else {}
                parent[key] = child
                stack.append((indent, child))
        while stack[-1][0] > indent:
            stack.pop()
        top_indent, top = stack[-1]
        if not entry and top_indent == indent and type(top) is list:
            stack.pop()  # a key after an indentless sequence: the sequence has ended
            top_indent, top = stack[-1]
        if top_indent != indent:
            raise _NotPlain
        while entry:
            if type(top) is not list or len(body) == 1:
                raise _NotPlain  # an entry in a mapping; an empty entry (None) is left to PyYAML
            j = 2
            while j < len(body) and body[j] == " ":
                j += 1
            body = body[j:]
            if not body or body[0] == "#":
                raise _NotPlain
            indent += j
            entry = _is_entry(body)
            if entry or _KEY.match(body):  # `- - x` or `- key: ...`: a collection opens in the entry
                if len(stack) >= _PLAIN_MAX_DEPTH:
                    raise _NotPlain
                child = [] if entry else {}
                top.append(child)
                nodes.add(1)
                stack.append((indent, child))
                top = child
                continue
            top.append(_value(body, 0, nodes, scalars))
            body = ""
        if not body:
            continue
        if type(top) is not dict:
            raise _NotPlain
        m = _KEY.match(body)
        if m is None:
            raise _NotPlain
        key = m.group(1)
        if key in top or key in _NOT_KEYS or len(key) > _MAX_SIMPLE_KEY:
            raise _NotPlain
        nodes.add(1)
        i = m.end()
        while i < len(body) and body[i] == " ":
            i += 1
        if i == len(body) or body[i] == "#":
            _rest_is_comment(body, m.end())
            top[key] = None
            nodes.add(1)
            open_key = (top, key, indent)
        else:
            top[key] = _value(body, i, nodes, scalars)
    if not root:
        raise _NotPlain  # nothing but comments: PyYAML's None
    return root


def _check_tokens(text: str, source: str) -> None:
    """Refuse, before parsing, a document with more than MAX_YAML_TOKENS lines and commas."""
    n = text.count("\n") + text.count(",")
    if n > MAX_YAML_TOKENS:
        raise ReadError(
            source,
            f"too large to read as YAML: {n:,} lines and list items (more than {MAX_YAML_TOKENS:,} "
            "values; a serve config has a few thousand)",
        )


def parse_yaml(text: str, source: str, *, exact: bool = False) -> Any:
    """One YAML document, checked (size, depth, expansion, tags, numbers) before it is constructed;
    with `exact` (a file `vllm serve --config` reads) accepted exactly when `yaml.safe_load` accepts
    it, but for the bounds named above (tests/io/test_yaml_exact.py)."""
    _check_tokens(text, source)
    try:
        return _plain_yaml(text)
    except _NotPlain:
        return _pyyaml_document(text, source, exact=exact)


def _pyyaml_document(text: str, source: str, *, exact: bool = False) -> Any:
    """`parse_yaml` through PyYAML (every document `_plain_yaml` does not read)."""
    import yaml

    try:
        loader = yaml_loader(exact=exact)(text)
    except yaml.YAMLError as e:  # the pure reader checks every character first (a control character)
        raise ReadError(source, _yaml_problem(e)) from None
    try:
        try:
            node = loader.get_single_node()
        except yaml.YAMLError as e:
            if getattr(e, "problem", None) == "exceeded maximum nesting depth":  # libyaml's 1,000 levels
                raise ReadError(
                    source, f"invalid YAML: nested too deeply (more than {MAX_DEPTH} levels)"
                ) from None
            raise ReadError(source, _yaml_problem(e)) from None
        except RecursionError:  # the pure loader's recursive composer
            problem = f"invalid YAML: nested too deeply (more than {MAX_DEPTH} levels)"
            raise ReadError(source, problem) from None
        if node is None:
            return None
        _Checker(loader, source).walk(node, "", 0)
        try:
            return loader.construct_document(node)
        except yaml.YAMLError as e:  # an unhashable key such as `? [a]`
            raise ReadError(source, _yaml_problem(e)) from None
        except (ValueError, OverflowError, TypeError, RecursionError) as e:
            raise ReadError(source, f"invalid YAML: {str(e).split(';')[0] or type(e).__name__}") from None
    finally:
        loader.dispose()


def parse_yaml_stream(text: str, source: str) -> list[Any]:
    """Every document of a YAML stream (`yaml.safe_load_all`: a Helm-rendered manifest), each
    checked as `parse_yaml` checks one."""
    import yaml

    _check_tokens(text, source)
    try:
        loader = yaml_loader()(text)
    except yaml.YAMLError as e:
        raise ReadError(source, _yaml_problem(e)) from None
    docs: list[Any] = []
    try:
        while True:
            try:
                if not loader.check_node():
                    break
                node = loader.get_node()
            except yaml.YAMLError as e:
                raise ReadError(source, _yaml_problem(e)) from None
            except RecursionError:
                raise ReadError(
                    source, f"invalid YAML: nested too deeply (more than {MAX_DEPTH} levels)"
                ) from None
            if node is None:
                continue
            prefix = f"[{len(docs)}]"
            _Checker(loader, source).walk(node, prefix, 0)
            try:
                docs.append(loader.construct_document(node))
            except yaml.YAMLError as e:
                raise ReadError(source, _yaml_problem(e)) from None
            except (ValueError, OverflowError, TypeError, RecursionError) as e:
                raise ReadError(source, f"invalid YAML: {str(e).split(';')[0] or type(e).__name__}") from None
    finally:
        loader.dispose()
    return docs


def another_document(err: ReadError) -> bool:
    """`err` is `parse_yaml` refusing a stream of several documents (`---` between them)."""
    return err.problem.endswith(("but found another document", "expected a single document in the stream"))


def read_yaml(
    path: str | Path,
    *,
    what: str = "YAML file",
    limit: int = DOCUMENT_LIMIT_BYTES,
    source: str | None = None,
) -> Any:
    """A YAML file (or `-`) read, decoded and parsed with every bound of this module.

    Raises:
        ReadError: located at the file, and at the key path or line:column where it can be.
    """
    shown = source if source is not None else str(path)
    return parse_yaml(read_text(path, what=what, limit=limit, source=shown), shown)


# ---------------------------------------------------------------- JSON


class _BadNumber:
    """A number refused by the JSON hooks, kept as text so the check can name its key path."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _json_int(text: str) -> int | _BadNumber:
    if len(text) > 20:
        return _BadNumber(text)
    value = int(text)
    return value if abs(value) <= MAX_INT else _BadNumber(text)


def _json_float(text: str) -> float | _BadNumber:
    value = float(text)
    return value if math.isfinite(value) else _BadNumber(text)


def _check_json(doc: Any, source: str) -> None:
    stack: list[tuple[Any, str, int]] = [(doc, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, _BadNumber):
            digits = f"a number of {len(value.text):,} characters" if len(value.text) > 40 else value.text
            raise ReadError(
                source,
                f"number out of range (got {digits}; expected a finite number within ±{MAX_INT:,})",
                _short_path(path),
            )
        if isinstance(value, dict | list):
            if depth >= MAX_DEPTH:
                raise ReadError(
                    source, f"not JSON (nested too deeply: more than {MAX_DEPTH} levels)", _short_path(path)
                )
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for k, v in items:
                sub = f"{path}[{k}]" if isinstance(value, list) else _join(path, str(k) if str(k) else '""')
                stack.append((v, sub, depth + 1))


def parse_json(text: str, source: str) -> Any:
    """One JSON document with the number and depth bounds of this module."""
    try:
        doc = json.loads(text, parse_int=_json_int, parse_float=_json_float, parse_constant=_BadNumber)
    except json.JSONDecodeError as e:
        raise ReadError(source, f"not JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except RecursionError:
        raise ReadError(source, f"not JSON (nested too deeply: more than {MAX_DEPTH} levels)") from None
    except ValueError as e:  # defensive: a hook's int()/float() on text json let through
        raise ReadError(source, f"not JSON ({e})") from None
    _check_json(doc, source)
    return doc


def read_json(
    path: str | Path,
    *,
    what: str = "JSON file",
    limit: int = DOCUMENT_LIMIT_BYTES,
    source: str | None = None,
) -> Any:
    """A JSON file (or `-`) read, decoded and parsed with every bound of this module.

    Raises:
        ReadError: located at the file, and at the key path or line:column where it can be.
    """
    shown = source if source is not None else str(path)
    return parse_json(read_text(path, what=what, limit=limit, source=shown), shown)
