"""Renderers: a typed result → text, one module per result (plan, diff, sweep, gate, logs, capture,
fleet, env; html.py holds the HTML pages); `render()` picks the plan's text format."""

from __future__ import annotations

from enum import Enum
from typing import NoReturn

from cgplan.core.model.types import Plan


def assert_never(value: NoReturn) -> NoReturn:  # typing.assert_never is 3.11+
    """Fail loudly on a format no branch handles."""
    raise AssertionError(f"unhandled output format: {value!r}")


class OutputFormat(str, Enum):
    """The text formats of `cgplan plan` (its JSON is the contract: `cgplan.io.schema.plan`)."""

    table = "table"
    markdown = "markdown"


def render(
    plan: Plan,
    fmt: OutputFormat,
    *,
    source: str | None = None,
    full: bool = False,
    width: int = 100,
    color: bool = False,
) -> str:
    """Render `plan` in `fmt` (pure: model → string)."""
    match fmt:
        case OutputFormat.table:
            from cgplan.render.plan import render_table

            return render_table(plan, source=source, full=full, width=width, color=color)
        case OutputFormat.markdown:
            from cgplan.render.plan import render_markdown

            return render_markdown(plan, source=source)
        case _:
            assert_never(fmt)
