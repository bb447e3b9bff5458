"""What every command shares about the terminal: the output format, colour, notes, annotations."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer

FORMATS = ("table", "json", "markdown", "html")


def _bad_parameter(message: str, param_hint: str | None = None) -> typer.BadParameter:
    """typer's usage error, typer imported only then: `plan FILE --json` runs without typer
    (the fast path of `cgplan.cli.main`)."""
    import typer

    return typer.BadParameter(message, param_hint=param_hint)


def output_format(
    fmt: str | None,
    allowed: tuple[str, ...],
    *,
    json_flag: bool = False,
    markdown_flag: bool = False,
) -> str:
    """The format from `--format` and its aliases (`--json`, `--markdown`): one of `allowed`.

    Raises:
        typer.BadParameter: an unknown or unavailable format, or two that disagree.
    """
    given = [f for f, on in (("json", json_flag), ("markdown", markdown_flag)) if on]
    if fmt is not None:
        fmt = fmt.strip().lower()
        if fmt not in FORMATS:
            raise _bad_parameter(f"unknown format {fmt!r} (expected one of {', '.join(allowed)})")
        given.append(fmt)
    if len(set(given)) > 1:
        raise _bad_parameter(f"give one output format (got {' and '.join(dict.fromkeys(given))})")
    chosen = given[0] if given else "table"
    if chosen not in allowed:
        raise _bad_parameter(
            f"this command has no {chosen} output (expected one of {', '.join(allowed)})", "--format"
        )
    return chosen


def use_color(no_color: bool, output: Path | None = None, stream: object = None) -> bool:
    """Colour only on a terminal, never with --no-color or NO_COLOR (https://no-color.org)."""
    s = stream if stream is not None else sys.stdout
    isatty = getattr(s, "isatty", None)
    to_stream = output is None or str(output) == "-"  # `-o -` is stdout
    return bool(isatty and isatty()) and to_stream and not no_color and not os.environ.get("NO_COLOR")


def width(color: bool, stream: object = None) -> int:
    """The terminal's width on a terminal (coloured or not: NO_COLOR on an 80-column terminal
    still wraps at 80), else 100 columns."""
    s = stream if stream is not None else sys.stdout
    isatty = getattr(s, "isatty", None)
    if not color and not (isatty and isatty()):
        return 100
    import shutil  # a terminal only (its import is a few ms of every start-up)

    return shutil.get_terminal_size((100, 24)).columns


_RED, _GREEN, _YELLOW, _RESET = "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[0m"
_WORDS = re.compile(r"\b(FAIL|EAGER|NONE|gap\(s\)|PASS|ok|FULL|PIECEWISE)\b")
_COLOURS = {
    "FAIL": _RED,
    "EAGER": _RED,
    "NONE": _RED,
    "gap(s)": _RED,
    "PASS": _GREEN,
    "ok": _GREEN,
    "FULL": _GREEN,
    "PIECEWISE": _YELLOW,
}


def colorize(text: str, color: bool) -> str:
    """Outcome words in colour (red eager and failures, green FULL and passes): for the commands
    whose renderers write plain text; the words stay, so colour is never the only signal."""
    if not color:
        return text
    return _WORDS.sub(lambda m: f"{_COLOURS[m.group(1)]}{m.group(1)}{_RESET}", text)


def note(message: str, quiet: bool) -> None:
    """An informational line on stderr (`cgplan: ...`), left out with --quiet."""
    if not quiet:
        sys.stderr.write(f"cgplan: {message}\n")


def _escape(text: str, *, prop: bool = False) -> str:
    """GitHub workflow-command escaping (data: % CR LF; properties also : and ,)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def github_annotations(failures: Iterable[tuple[str, int, str, str]], *, to_stderr: bool) -> None:
    """`::error file=...,line=...,title=...::message` lines for GitHub Actions (GITHUB_ACTIONS=true):
    each failed check shows on its line of the file in the pull request. `failures` holds
    (file, line, title, message)."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return
    stream = sys.stderr if to_stderr else sys.stdout
    for file, line, title, message in failures:
        stream.write(
            f"::error file={_escape(file, prop=True)},line={line},title={_escape(title, prop=True)}"
            f"::{_escape(message)}\n"
        )
