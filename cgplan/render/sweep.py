"""Sweep results as text and markdown (`cgplan sweep`): one row per range of the last axis."""

from __future__ import annotations

import io
from typing import Any

from rich.table import Table

from cgplan.core.compare.sweep import INT_KEYS, SweepResult
from cgplan.render._console import buffer_console


def _span(x: Any) -> str:
    """A range of the last axis: first..last for a numeric axis, the values for a categorical one."""
    if x.points == 1:
        return str(x.first)
    if x.axis not in INT_KEYS:
        return ", ".join(map(str, x.values)) if x.values else f"{x.first}, …, {x.last}"
    return f"{x.first}..{x.last}"


def _cell(x: Any, i: int, o: Any) -> str:
    text = o.status if not o.detail else f"{o.status}: {o.detail}"
    varies = bool(x.detail_varies) and x.detail_varies[i]
    if varies and o.detail:
        text = f"{o.status} (worst, at {x.worst_at[i]}): {o.detail}"
    return text


def render_sweep(r: SweepResult, *, width: int = 100, color: bool = False, markdown: bool = False) -> str:
    """One row per range of the last axis with the same outcome; where the points' detail differs
    the row shows the worst point and says where it is."""
    if markdown:
        head = ["fixed", r.ranges[0].axis if r.ranges else "value", *r.versions, "releases agree"]
        out = ["### cgplan sweep", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for x in r.ranges:
            fixed = ", ".join(f"{k}={v}" for k, v in x.fixed) or "-"
            cells = [_cell(x, i, o) for i, o in enumerate(x.outcomes)]
            out.append(
                f"| {fixed} | {_span(x)} | " + " | ".join(cells) + f" | {'no' if x.disagree else 'yes'} |"
            )
        return "\n".join(out) + "\n"
    buf = io.StringIO()
    c = buffer_console(buf, width, color)
    axes = ", ".join(f"{k} ({len(v)} values)" for k, v in r.axes)
    c.print(f"sweep over {axes} · vLLM {', '.join(r.versions)} · {r.plans:,} plans", soft_wrap=True)
    t = Table(show_edge=False, box=None, header_style="bold")
    t.add_column("fixed")
    t.add_column(r.ranges[0].axis if r.ranges else "value")
    for v in r.versions:
        t.add_column(f"vLLM {v}")
    if len(r.versions) > 1:
        t.add_column("releases")
    for x in r.ranges:
        fixed = ", ".join(f"{k}={v}" for k, v in x.fixed) or "-"
        cells = []
        for i, o in enumerate(x.outcomes):
            text = _cell(x, i, o)
            cells.append(text if len(text) < 80 else text[:77] + "...")
        row = [fixed, _span(x), *cells]
        if len(r.versions) > 1:
            row.append("differ" if x.disagree else "agree")
        t.add_row(*row, style="red" if any(o.status != "ok" for o in x.outcomes) else "")
    c.print(t)
    return buf.getvalue()
