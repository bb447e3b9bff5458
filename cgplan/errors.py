"""The exception tree: every failure a user can cause or meet maps to one exit code."""

from __future__ import annotations

import json
import math
from enum import IntEnum

_PREVIEW_CHARS = 60
_PREVIEW_DEPTH = 8


def preview(value: object, limit: int = _PREVIEW_CHARS) -> str:
    """A short JSON-like rendering of any parsed value, for an error message.

    Bounded work whatever the value: it stops after `limit` characters, so a YAML alias
    bomb, a self-referencing document or a 5,000-digit integer costs no more than a
    small value (json.dumps or repr would walk, or refuse, all of it).

    >>> preview([1, "a", {"b": None}])
    '[1, "a", {"b": null}]'
    >>> preview(10**5000)
    '<an integer of about 5000 digits>'
    """
    out: list[str] = []
    size = 0

    def emit(text: str) -> bool:
        nonlocal size
        out.append(text)
        size += len(text)
        return size <= limit

    def walk(v: object, depth: int) -> bool:
        if isinstance(v, str):
            return emit(json.dumps(v[: limit + 1], ensure_ascii=False))
        if v is None or isinstance(v, bool | float):
            return emit(json.dumps(v))
        if isinstance(v, int):
            if v.bit_length() > 3 * limit:
                return emit(f"<an integer of about {round(v.bit_length() * math.log10(2))} digits>")
            return emit(str(v))
        if isinstance(v, list | tuple | dict | set | frozenset):
            if depth >= _PREVIEW_DEPTH:
                return emit("...")
            is_map = isinstance(v, dict)
            if not emit("{" if is_map else "["):
                return False
            for i, item in enumerate(v.items() if isinstance(v, dict) else v):
                if i and not emit(", "):
                    return False
                if is_map:
                    key, item = item
                    if not walk(key if isinstance(key, str) else preview(key, limit), depth + 1):
                        return False
                    if not emit(": "):
                        return False
                if not walk(item, depth + 1):
                    return False
            return emit("}" if is_map else "]")
        if isinstance(v, bytes | bytearray):
            return emit(repr(bytes(v[: limit + 1])))
        return emit(f"<{type(v).__name__}>" if not hasattr(v, "isoformat") else str(v))

    walk(value, 0)
    text = "".join(out)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(text: str) -> str:
    r"""`text` with every character that is not printable (line breaks, NUL, lone
    surrogates, ...) escaped, so a message is exactly one terminal line.

    >>> print(one_line("a\nb\u2028c"))
    a\nb\u2028c
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class ExitCode(IntEnum):
    """Process exit codes, one per failure class (documented in README and --help)."""

    OK = 0
    GATE_FAILED = 1
    USAGE = 2
    ENVIRONMENT = 3
    CAPTURE_FAILED = 4


class CgplanError(Exception):
    """Root of every error cgplan reports as a one-line message instead of a traceback."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(CgplanError):
    """A config file or option is malformed: located as `file:dotted.path: problem`."""

    def __init__(self, path: str, problem: str, *, source: str | None = None) -> None:
        self.path = path
        self.problem = problem
        self.source = source
        where = f"{source}:{path}" if source and path else (source or path)
        super().__init__(f"{where}: {problem}" if where else problem)

    def located(self, source: str) -> ConfigError:
        """The same error (same class), with the file it came from in front."""
        err = self.__class__.__new__(self.__class__)
        err.__dict__.update(self.__dict__)
        if self.path in COMMAND_LINE_PATHS or self.path.startswith("--vllm-args"):
            return self  # a command-line option: the file is not where it went wrong
        err.source = source
        err.message = f"{source}:{self.path}: {self.problem}" if self.path else f"{source}: {self.problem}"
        err.args = (err.message,)
        return err


COMMAND_LINE_PATHS = frozenset(
    {
        "--vllm-version",
        "--platform",
        "--model-runner",
        "--set",
        "--policy",
        "--max-graphs",
        "--max-sizes",
        "--traffic",
    }
)
"""Error paths that name a cgplan option rather than a key of the file being read."""


class ConfigRejected(ConfigError):
    """A well-formed config that the chosen vLLM release refuses to start with."""


class ReportError(CgplanError):
    """A report file cannot be read (bad JSON, unknown or newer schema)."""


class GpuUnavailableError(CgplanError):
    """The environment cannot capture: no GPU, no NVML, no vLLM or an unsupported one."""

    exit_code = ExitCode.ENVIRONMENT


class CaptureError(CgplanError):
    """Capture started but failed (out of memory, interrupted, engine error)."""

    exit_code = ExitCode.CAPTURE_FAILED
