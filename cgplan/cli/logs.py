"""`cgplan logs FILE [--config CONFIG]`: what a vLLM startup log says was captured (stub)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def logs(
    file: Annotated[Path, typer.Argument(help="A vLLM startup log (plain or .gz).", show_default=False)],
) -> None:
    """Read a vLLM startup log: mode, sizes, graphs captured, capture time and memory, KV cache."""
    raise typer.BadParameter("not implemented yet")
