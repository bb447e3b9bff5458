"""The plan for people: the terminal report (rich tables, rendered to a string at a fixed width)
and markdown for a PR comment; its HTML page is in render/html.py, its JSON in io/schema/plan.py."""

from __future__ import annotations

import io

from cgplan.core.model.types import Plan
from cgplan.render.summary import (
    CONFIG_LINES_TITLE,
    EAGER,
    assumed_lines,
    cost_lines,
    family_rows,
    fix_details,
    fix_title,
    gap_groups,
    gap_title,
    headline,
    ladder_lines,
    latency_lines,
    mixed_rows,
    no_fix_line,
    padding_line,
    pieces_line,
    tier_rows,
    verdict_line,
)


def render_brief(plan: Plan, *, width: int = 100, color: bool = False) -> str:
    """`cgplan plan --brief`: the verdict line, and the best fix's flags whole (to paste)."""
    from rich.text import Text

    from cgplan.render._console import buffer_console, print_wrapped

    buf = io.StringIO()
    console = buffer_console(buf, width, color)
    print_wrapped(console, verdict_line(plan))
    if plan.fixes:
        f = plan.fixes[0]
        style = "bold green" if f.complete else "bold yellow"
        console.print(Text(f"{fix_title(plan, 0)}: {f.command_line}", style=style), soft_wrap=True)
    return buf.getvalue()


def render_table(
    plan: Plan, *, source: str | None = None, full: bool = False, width: int = 100, color: bool = False
) -> str:
    """The human report of `cgplan plan`: the verdict line first, the details after. Prose wraps at
    spaces, never inside a word; a fix's flags are one unbroken line, to paste whole."""
    # rich is imported here: the markdown report (and --json) do not pay for it
    from rich.table import Table
    from rich.text import Text

    from cgplan.render._console import buffer_console, print_wrapped

    buf = io.StringIO()
    console = buffer_console(buf, width, color)
    print_wrapped(console, verdict_line(plan), "bold")
    for line in headline(plan, source):
        print_wrapped(console, line)
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
    pieces = pieces_line(plan)
    if pieces and total_pw:
        print_wrapped(console, pieces)
    for line in ladder_lines(plan):
        print_wrapped(console, line)
    assumed = assumed_lines(plan)
    if assumed:
        console.print("assumed (not in the config):")
        for line in assumed:
            print_wrapped(console, f"  {line}")
    cost = cost_lines(plan)
    if cost:
        console.print()
        for line in cost:
            print_wrapped(console, line)
    timed = latency_lines(plan)
    if timed:
        console.print()
        for line in timed:
            print_wrapped(console, line)
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
            style = "bold red" if outcome == EAGER else ("yellow" if outcome.startswith("PIECEWISE") else "")
            u.add_row(reqs, Text(outcome, style=style), tokens)
        console.print(u)
    console.print()
    print_wrapped(console, padding_line(plan))
    console.print()
    console.print("mixed and prefill batches (by tokens, eager first)")
    mx = Table(show_edge=False, box=None, header_style="bold", show_header=True)
    mx.add_column("tokens", justify="right")
    mx.add_column("outcome")
    mx.add_column("why")
    for tokens, outcome, why in mixed_rows(plan):
        mx.add_row(tokens, Text(outcome, style="bold red" if outcome == EAGER else ""), why)
    console.print(mx)
    notes = [n for n in plan.notes if n.kind != "runner"]
    if notes:
        console.print()
        console.print("vLLM would log:")
        for n in notes:
            print_wrapped(console, f"  - {n.message}")
    console.print()
    if not plan.gaps:
        console.print(
            Text(
                "no gaps: every uniform decode batch of every tier replays a decode-mode graph", style="green"
            )
        )
    else:
        console.print(Text(f"{len(plan.gaps)} gap(s):", style="bold red"))
        for g in gap_groups(plan):
            print_wrapped(console, f"  {gap_title(g)}", "red")
            print_wrapped(console, f"    why: {g.reason}")
        # A fix's flags are one unbroken line whatever the width, so that they paste whole.
        for i, f in enumerate(plan.fixes):
            title = fix_title(plan, i)
            style = "bold green" if f.complete else "bold yellow"
            console.print(Text(f"{title}: ", style=style) + Text(f.command_line, style=style), soft_wrap=True)
            for line in fix_details(f):
                print_wrapped(console, f"  {line}")
            if f.config_lines:
                print_wrapped(console, f"  {CONFIG_LINES_TITLE}")
                for line in f.config_lines:  # unbroken, like the flags: they paste whole
                    console.print(Text(f"    {line}"), soft_wrap=True)
        if not plan.fixes:
            print_wrapped(console, no_fix_line(plan))
    return buf.getvalue()


def render_markdown(plan: Plan, *, source: str | None = None) -> str:
    """The plan as GitHub-flavoured markdown."""
    out = [f"### cgplan plan{f' · `{source}`' if source else ''}", "", f"**{verdict_line(plan)}**", ""]
    out += [f"{line}  " for line in headline(plan, None)]
    out += ["", "| graph family | PIECEWISE | FULL | sizes |", "|---|---:|---:|---|"]
    for r in family_rows(plan):
        out.append(f"| {r.label} | {r.piecewise} | {r.full} | {r.sizes} |")
    pieces = pieces_line(plan)
    out.append("")
    if pieces:
        out.append(f"{pieces}  ")
    out += [f"{line}  " for line in ladder_lines(plan)]
    assumed = assumed_lines(plan)
    if assumed:
        out += ["", "Assumed (not in the config):", ""] + [f"- {line}" for line in assumed]
    cost = cost_lines(plan)
    if cost:
        out += ["", f"{cost[0]}  "] + [f"- {line.strip()}" for line in cost[1:]]
    timed = latency_lines(plan)
    if timed:
        out += ["", f"{timed[0]}  "] + [f"- {line.strip()}" for line in timed[1:]]
    for ql in sorted(plan.uniform_decode):
        rows = tier_rows(plan, ql, full=False)
        if not rows:
            continue
        out += [
            "",
            f"**uniform decode, {ql} tokens/request**",
            "",
            "| requests | outcome | tokens |",
            "|---|---|---|",
        ]
        out += [f"| {a} | {'**EAGER**' if b == EAGER else b} | {c} |" for a, b, c in rows]
    out += ["", padding_line(plan), "", "**mixed and prefill batches** (by tokens, eager first)", ""]
    out += ["| tokens | outcome | why |", "|---|---|---|"]
    out += [f"| {t} | {'**EAGER**' if o == EAGER else o} | {w} |" for t, o, w in mixed_rows(plan)]
    out.append("")
    if plan.gaps:
        out.append(f"**{len(plan.gaps)} gap(s)**")
        out += [f"- {gap_title(g)} — {g.reason}" for g in gap_groups(plan)]
        for i, f in enumerate(plan.fixes):
            out.append(f"- {fix_title(plan, i)}: `{f.command_line}`")
            out += [f"  - {line}" for line in fix_details(f)]
            if f.config_lines:
                out += [f"  - {CONFIG_LINES_TITLE}", "", "    ```yaml", *(f"    {x}" for x in f.config_lines)]
                out += ["    ```"]
        if not plan.fixes:
            out.append(f"- {no_fix_line(plan)}")
    else:
        out.append("No gaps: every uniform decode batch of every tier replays a graph of the decode mode.")
    return "\n".join(out) + "\n"
