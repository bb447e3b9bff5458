"""The terminal report: rich tables, rendered to a string at a fixed width."""

from __future__ import annotations

import io

from rich.table import Table
from rich.text import Text

from cgplan.core.types import Plan
from cgplan.render._console import buffer_console
from cgplan.render.summary import cost_lines, family_rows, headline, latency_lines, tier_rows


def render_table(
    plan: Plan, *, source: str | None = None, full: bool = False, width: int = 100, color: bool = False
) -> str:
    """The human report of `cgplan plan`."""
    buf = io.StringIO()
    console = buffer_console(buf, width, color)
    for line in headline(plan, source):
        console.print(line, soft_wrap=True)
    console.print()
    t = Table(title=None, show_edge=False, pad_edge=False, box=None, header_style="bold")
    t.add_column("graphs")
    t.add_column("PIECEWISE", justify="right")
    t.add_column("FULL", justify="right")
    t.add_column("sizes")
    total_pw = total_full = 0
    for r in family_rows(plan):
        t.add_row(r.label, str(r.piecewise), str(r.full), r.sizes)
        total_pw += r.piecewise
        total_full += r.full
    t.add_row("total", str(total_pw), str(total_full), f"{total_pw + total_full} graph descriptors")
    console.print(t)
    if total_pw:
        console.print(
            f"(a PIECEWISE descriptor is {plan.piecewise_pieces_per_graph} CUDA graphs: "
            "one per compiled piece)"
        )
    cost = cost_lines(plan)
    if cost:
        console.print()
        for line in cost:
            console.print(line, soft_wrap=True)
    timed = latency_lines(plan)
    if timed:
        console.print()
        for line in timed:
            console.print(line, soft_wrap=True)
    if plan.dynamic_sd_lookup:
        console.print()
        d = Table(show_edge=False, box=None, header_style="bold", title_justify="left")
        d.add_column("dynamic SD batch sizes")
        d.add_column("K", justify="right")
        d.add_column("tokens/request", justify="right")
        for a, b, k in plan.dynamic_sd_lookup:
            d.add_row(f"{a}-{b}", str(k), str(k + 1))
        console.print(d)
    for ql in sorted(plan.uniform_decode):
        rows = tier_rows(plan, ql, full)
        if not rows:
            continue
        console.print()
        console.print(f"uniform decode ({ql} tokens/request)")
        u = Table(show_edge=False, box=None, header_style="bold", show_header=True)
        u.add_column("requests", justify="right")
        u.add_column("outcome")
        u.add_column("tokens")
        for reqs, outcome, tokens in rows:
            style = (
                "bold red" if outcome == "EAGER" else ("yellow" if outcome.startswith("PIECEWISE") else "")
            )
            u.add_row(reqs, Text(outcome, style=style), tokens)
        console.print(u)
    notes = [n for n in plan.notes if n.kind != "runner"]
    if notes:
        console.print()
        console.print("vLLM would log:")
        for n in notes:
            console.print(f"  - {n.message}", overflow="fold")
    console.print()
    if not plan.gaps:
        console.print(
            Text(
                "no gaps: every uniform decode batch of every tier replays a decode-mode graph", style="green"
            )
        )
    else:
        console.print(Text(f"{len(plan.gaps)} gap(s):", style="bold red"))
        for g in plan.gaps:
            what = "EAGER" if g.mode == "NONE" else g.mode
            console.print(f"  requests {g.first}-{g.last} × {g.query_len} tokens → {what}", style="red")
            console.print(f"    why: {g.reason}", overflow="fold")
        if plan.fixes:
            best = plan.fixes[0]
            console.print(Text(f"fix: {' '.join(best.flags)}", style="bold green"), overflow="fold")
            console.print(
                f"  → {best.summary} (checked: the changed config was planned again)", overflow="fold"
            )
            for other in plan.fixes[1:]:
                console.print(f"or:  {' '.join(other.flags)}", overflow="fold")
                console.print(f"  → {other.summary}", overflow="fold")
        else:
            console.print("no flag change found that closes them")
    return buf.getvalue()
