"""Markdown for a PR comment: the summary, the gaps and the fixes."""

from __future__ import annotations

from cgplan.core.types import Plan
from cgplan.render.summary import cost_lines, family_rows, headline, latency_lines, tier_rows


def render_markdown(plan: Plan, *, source: str | None = None) -> str:
    """The plan as GitHub-flavoured markdown."""
    out = [f"### cgplan plan{f' · `{source}`' if source else ''}", ""]
    out += [f"{line}  " for line in headline(plan, None)]
    out += ["", "| graph family | PIECEWISE | FULL | sizes |", "|---|---:|---:|---|"]
    for r in family_rows(plan):
        out.append(f"| {r.label} | {r.piecewise} | {r.full} | {r.sizes} |")
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
        out += [f"| {a} | {'**EAGER**' if b == 'EAGER' else b} | {c} |" for a, b, c in rows]
    out.append("")
    if plan.gaps:
        out.append(f"**{len(plan.gaps)} gap(s)**")
        out += [
            f"- {g.first}-{g.last} requests × {g.query_len} tokens: {g.mode} — {g.reason}" for g in plan.gaps
        ]
        for f in plan.fixes[:2]:
            out.append(f"- fix: `{' '.join(f.flags)}` → {f.summary}")
    else:
        out.append("No gaps: every uniform decode batch of every tier replays a graph of the decode mode.")
    return "\n".join(out) + "\n"
