"""Markdown for a PR comment: the summary, the ladder, dispatch, padding, the gaps and the fixes."""

from __future__ import annotations

from cgplan.core.types import Plan
from cgplan.render.summary import (
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
    padding_line,
    pieces_line,
    tier_rows,
)


def render_markdown(plan: Plan, *, source: str | None = None) -> str:
    """The plan as GitHub-flavoured markdown."""
    out = [f"### cgplan plan{f' · `{source}`' if source else ''}", ""]
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
        if not plan.fixes:
            out.append("- no flag change closes them within the default gate's budgets")
    else:
        out.append("No gaps: every uniform decode batch of every tier replays a graph of the decode mode.")
    return "\n".join(out) + "\n"
