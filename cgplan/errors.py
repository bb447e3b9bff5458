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


# The core's errors are the root of the tree: re-exported here, given exit codes below.
from cgplan.core.errors import COMMAND_LINE_PATHS, CgplanError, ConfigError, ConfigRejected  # noqa: E402


class ReportError(CgplanError):
    """A report file cannot be read (bad JSON, unknown or newer schema)."""


class GpuUnavailableError(CgplanError):
    """The environment cannot capture: no GPU, no NVML, no vLLM or an unsupported one."""


class VllmEngineError(CgplanError):
    """The interpreter given to `cgplan verify` cannot answer: no vLLM, vLLM fails to import, or the
    engine process crashed or timed out."""


class CaptureError(CgplanError):
    """Capture started but failed (out of memory, interrupted, engine error)."""


_EXIT_CODES: dict[type[CgplanError], ExitCode] = {
    GpuUnavailableError: ExitCode.ENVIRONMENT,
    VllmEngineError: ExitCode.ENVIRONMENT,
    CaptureError: ExitCode.CAPTURE_FAILED,
}
"""Error class → exit code; every other error (bad input, a refused config, an unreadable report or
log) is a usage error."""


def exit_code_of(err: CgplanError) -> ExitCode:
    """The exit code of `err`: its nearest class in `_EXIT_CODES`, else USAGE."""
    return next((_EXIT_CODES[c] for c in type(err).__mro__ if c in _EXIT_CODES), ExitCode.USAGE)


__all__ = [
    "COMMAND_LINE_PATHS",
    "CaptureError",
    "CgplanError",
    "ConfigError",
    "ConfigRejected",
    "ExitCode",
    "GpuUnavailableError",
    "ReportError",
    "VllmEngineError",
    "exit_code_of",
    "one_line",
    "preview",
]
