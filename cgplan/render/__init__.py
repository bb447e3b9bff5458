"""Renderers: a typed result → text, one module per result (plan, diff, sweep, gate, logs, capture,
fleet, env; html.py holds the HTML pages); `render()` picks the plan's text format."""

from __future__ import annotations

from enum import Enum
from typing import NoReturn

from cgplan.core.types import Plan


def assert_never(value: NoReturn) -> NoReturn:  # typing.assert_never is 3.11+
    """Fail loudly on a format no branch handles."""
    raise AssertionError(f"unhandled output format: {value!r}")


class OutputFormat(str, Enum):
    """Output formats of `cgplan plan`."""

    table = "table"
    json = "json"
    markdown = "markdown"


def render(
    plan: Plan,
    fmt: OutputFormat,
    *,
    source: str | None = None,
    full: bool = False,
    ignored_keys: tuple[str, ...] = (),
    width: int = 100,
    color: bool = False,
    fingerprint: str | None = None,
) -> str:
    """Render `plan` in `fmt` (pure: model → string)."""
    match fmt:
        case OutputFormat.table:
            from cgplan.render.plan import render_table

            return render_table(plan, source=source, full=full, width=width, color=color)
        case OutputFormat.json:
            from cgplan.io.schema import dumps
            from cgplan.io.schema.plan import plan_to_dict

            return dumps(
                plan_to_dict(plan, source=source, ignored_keys=ignored_keys, fingerprint=fingerprint)
            )
        case OutputFormat.markdown:
            from cgplan.render.plan import render_markdown

            return render_markdown(plan, source=source)
        case _:
            assert_never(fmt)
