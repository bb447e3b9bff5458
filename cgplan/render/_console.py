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
