"""The one way renderers build a rich Console: into a buffer, fixed width, no markup parsing
(file names and vLLM messages contain brackets), no emoji codes (rich turned a config named
`a:fire:b.yaml` into `a🔥b.yaml`), colour only when asked."""

from __future__ import annotations

import io

from rich.console import Console


def buffer_console(buf: io.StringIO, width: int, color: bool) -> Console:
    """A Console writing to `buf`; styles come only from style= arguments."""
    return Console(
        file=buf,
        width=width,
        color_system="standard" if color else None,
        force_terminal=color,
        highlight=False,
        soft_wrap=False,
        markup=False,
        emoji=False,
    )


def wrap_words(text: str, width: int) -> list[str]:
    """`text` wrapped at spaces to `width` columns, continuation lines indented four more than the
    first (deeper than any next item, so a reader, or a script, tells them apart): never inside a
    word (a flag, a path, `1..512`), so a word longer than the width stands whole on its own line.
    (rich's wrapping folds such a word, or crops it.)

    >>> wrap_words("  why: --max-cudagraph-capture-size 544 is set", 26)
    ['  why:', '      --max-cudagraph-capture-size', '      544 is set']
    """
    import textwrap

    lead = text[: len(text) - len(text.lstrip(" "))]
    return textwrap.wrap(
        text,
        width,
        initial_indent="",
        subsequent_indent=lead + "    ",
        break_long_words=False,
        break_on_hyphens=False,
        drop_whitespace=True,
    ) or [text]


def print_wrapped(console: Console, text: str, style: str = "") -> None:
    """Print `text` wrapped at spaces to the console's width (`wrap_words`)."""
    for line in text.split("\n"):
        for part in wrap_words(line, console.width):
            console.print(part, style=style, soft_wrap=True)
