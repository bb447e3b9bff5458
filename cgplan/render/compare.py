"""Text, markdown and JSON for diff, sweep and gate results."""

from __future__ import annotations

import io
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from rich.console import Console
from rich.table import Table

from cgplan.core.diff import Diff, TierPadding, shared_gaps, size_changes
from cgplan.core.gate import GateResult
from cgplan.core.memory import compare_memory
from cgplan.core.sides import Side
from cgplan.core.sweep import INT_KEYS, SweepResult
from cgplan.render._console import buffer_console

GIB = 1 << 30


def _console(buf: io.StringIO, width: int, color: bool) -> Console:
    return buffer_console(buf, width, color)


def _ratio(p: int, r: int) -> str:
    x = TierPadding.ratio(p, r)
    return "-" if x is None else f"{x:.3f}"


def _kind(side: Side) -> str:
    """plan, capture, or "capture, partial" / "capture, failed"."""
    return side.kind if side.status == "complete" else f"{side.kind}, {side.status}"


def _partial_line(side: Side, name: str) -> str:
    """What a partial or failed capture lacks: its batches without an outcome show as "-"."""
    why = f" ({side.failure})" if side.failure else ""
    return (
        f"{name} is a {side.status} capture{why}: what it did not capture or dispatch shows as "
        '"-", not as a change of the config'
    )


def step_time_line(d: Diff) -> str | None:
    """The change in expected step time (latency model), when a side has one."""
    a, b = d.a.expected_step_ms, d.b.expected_step_ms
    if a is None and b is None:
        return None

    def ms(x: float | None, share: float | None) -> str:
        return "-" if x is None else f"{x:.2f} ms ({share or 0:.0%} eager)"

    line = f"expected step time: A {ms(a, d.a.eager_time_share)} → B {ms(b, d.b.eager_time_share)}"
    if a is not None and b is not None and a > 0:
        line += f" · {b - a:+.3f} ms per step ({(b - a) / a:+.1%})"
    return line + " (latency model, every uniform-decode batch once)"


def _gap_text(g: tuple[int, int, int, str]) -> str:
    ql, a, b, mode = g
    span = f"{a}" if a == b else f"{a}-{b}"
    return f"{span} requests × {ql} → {'EAGER' if mode == 'NONE' else mode}"


def runner_change(d: Diff) -> str | None:
    """ "model runner: V1 → V2" when it changes."""
    ra, rb = d.a.model_runner, d.b.model_runner
    if ra and rb and ra != rb:
        return f"model runner: {ra.upper()} → {rb.upper()} (different dispatchers and graph sets)"
    return None


def render_diff(d: Diff, *, width: int = 100, color: bool = False) -> str:
    """Human diff: graphs per family/mode, coverage moves per tier, padding, memory, time."""
    buf = io.StringIO()
    c = _console(buf, width, color)
    c.print(f"A: {d.a.label} ({_kind(d.a)}, vLLM {d.a.vllm_version})", soft_wrap=True)
    c.print(f"B: {d.b.label} ({_kind(d.b)}, vLLM {d.b.vllm_version})", soft_wrap=True)
    for side, name in ((d.a, "A"), (d.b, "B")):
        if side.rejected:
            c.print(
                f"{name} is refused by vLLM {side.vllm_version}: {side.rejected}", style="red", soft_wrap=True
            )
        if side.status != "complete":
            c.print(_partial_line(side, name), style="red", soft_wrap=True)
    runner = runner_change(d)
    if runner:
        c.print(runner, style="yellow", soft_wrap=True)
    t = Table(show_edge=False, box=None, header_style="bold")
    for col in ("family", "mode", "A", "B", "added", "removed"):
        t.add_column(col, justify="left" if col in ("family", "mode") else "right")
    for f in d.families:
        t.add_row(f.family, f.mode, str(f.count_a), str(f.count_b), f"+{len(f.added)}", f"-{len(f.removed)}")
    c.print()
    c.print(t)
    for line in size_changes(d):
        c.print(f"  {line}", soft_wrap=True)
    c.print()
    if d.moves:
        m = Table(
            show_edge=False,
            box=None,
            header_style="bold",
            title="coverage moves (uniform decode)",
            title_justify="left",
        )
        for col in ("tokens/request", "requests", "A", "B"):
            m.add_column(col)
        for mv in d.moves:
            style = "red" if mv.mode_b == "NONE" else ("green" if mv.mode_b == "FULL" else "")
            m.add_row(
                str(mv.query_len),
                f"{mv.first_reqs}-{mv.last_reqs}",
                "EAGER" if mv.mode_a == "NONE" else mv.mode_a,
                "EAGER" if mv.mode_b == "NONE" else mv.mode_b,
                style=style,
            )
        c.print(m)
    shared = shared_gaps(d)
    if shared:
        c.print(
            f"gaps on both sides (unchanged, not all clear): {', '.join(_gap_text(g) for g in shared[:8])}"
            + (f" and {len(shared) - 8} more" if len(shared) > 8 else ""),
            style="red",
            soft_wrap=True,
        )
    elif not d.moves:
        c.print("coverage: every uniform-decode batch of every tier has the same outcome, and none is a gap")
    p = Table(show_edge=False, box=None, header_style="bold")
    for col in ("tokens/request", "A", "B"):
        p.add_column(col)
    for pad in d.padding:
        p.add_row(str(pad.query_len), _ratio(pad.padded_a, pad.real_a), _ratio(pad.padded_b, pad.real_b))
    c.print()
    c.print("padding: padded / real tokens of graph-replayed decode batches (1.000 = no padding)")
    c.print(p)
    if d.a.pool_bytes is not None or d.b.pool_bytes is not None:
        mem = compare_memory(d.a, d.b)
        c.print(mem.text(), soft_wrap=True)
        detail = mem.detail()
        if detail:
            c.print(detail, soft_wrap=True)
        kv = mem.kv_text()
        if kv:
            c.print(kv, soft_wrap=True)
    if d.a.capture_time_s is not None or d.b.capture_time_s is not None:
        c.print(f"capture time: A {d.a.capture_time_s} s → B {d.b.capture_time_s} s")
    timed = step_time_line(d)
    if timed:
        c.print(timed, soft_wrap=True)
    return buf.getvalue()


def render_diff_markdown(d: Diff) -> str:
    """Diff for a PR comment."""
    out = [
        "### cgplan diff",
        "",
        f"**A** `{d.a.label}` (vLLM {d.a.vllm_version}) → **B** `{d.b.label}` (vLLM {d.b.vllm_version})",
        "",
        *[f"**{_partial_line(x, n)}**\n" for x, n in ((d.a, "A"), (d.b, "B")) if x.status != "complete"],
        "| family | mode | A | B | added | removed |",
        "|---|---|---:|---:|---:|---:|",
    ]
    out += [
        f"| {f.family} | {f.mode} | {f.count_a} | {f.count_b} | +{len(f.added)} | -{len(f.removed)} |"
        for f in d.families
    ]
    out.append("")
    runner = runner_change(d)
    if runner:
        out += [f"**{runner}**", ""]
    out += [f"- {line}" for line in size_changes(d)]
    if size_changes(d):
        out.append("")
    if d.moves:
        out += ["| tokens/request | requests | A | B |", "|---:|---|---|---|"]
        out += [
            f"| {m.query_len} | {m.first_reqs}-{m.last_reqs} | "
            f"{'EAGER' if m.mode_a == 'NONE' else m.mode_a} | "
            f"{'**EAGER**' if m.mode_b == 'NONE' else m.mode_b} |"
            for m in d.moves
        ]
    shared = shared_gaps(d)
    if shared:
        out += [
            "",
            "**Gaps on both sides (unchanged, not all clear):** " + ", ".join(_gap_text(g) for g in shared),
        ]
    elif not d.moves:
        out.append("No coverage change for uniform decode, and no gap on either side.")
    if d.a.pool_bytes is not None or d.b.pool_bytes is not None:
        mem = compare_memory(d.a, d.b)
        out += ["", mem.text()]
        if mem.detail():
            out.append(f"({(mem.detail() or '').strip()})")
        if mem.kv_text():
            out.append((mem.kv_text() or "").strip())
    timed = step_time_line(d)
    if timed:
        out += ["", timed]
    out.append("")
    return "\n".join(out) + "\n"


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
    c = _console(buf, width, color)
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


def render_gate(results: list[GateResult], *, width: int = 100, color: bool = False) -> str:
    """Human verdict."""
    buf = io.StringIO()
    c = _console(buf, width, color)
    for r in results:
        c.print(
            f"{'PASS' if r.passed else 'FAIL'} {r.target}",
            style="green" if r.passed else "bold red",
            soft_wrap=True,
        )
        for ch in r.checks:
            mark = "skip" if ch.skipped else ("ok  " if ch.passed else "FAIL")
            c.print(
                f"  {mark} {ch.name}: {ch.detail}",
                style="" if ch.passed or ch.skipped else "red",
                soft_wrap=True,
            )
    ok = all(r.passed for r in results)
    c.print(
        f"gate {'passed' if ok else 'failed'}: {sum(r.passed for r in results)}/{len(results)} targets pass"
    )
    return buf.getvalue()


def render_gate_markdown(results: list[GateResult]) -> str:
    """Verdict for a PR comment."""
    ok = all(r.passed for r in results)
    out = [
        f"### cgplan gate: {'passed ✅' if ok else 'failed ❌'}",
        "",
        "| target | check | result | detail |",
        "|---|---|---|---|",
    ]
    for r in results:
        for ch in r.checks:
            res = "skipped" if ch.skipped else ("pass" if ch.passed else "**FAIL**")
            out.append(f"| `{r.target}` | {ch.name} | {res} | {ch.detail} |")
    return "\n".join(out) + "\n"


def render_junit(results: list[GateResult]) -> str:
    """JUnit XML: one test suite, one test case per (target, check)."""
    cases = []
    failures = skipped = 0
    for r in results:
        for ch in r.checks:
            body = ""
            if ch.skipped:
                skipped += 1
                body = f"<skipped message={quoteattr(ch.detail)}/>"
            elif not ch.passed:
                failures += 1
                body = f"<failure message={quoteattr(ch.detail)}>{escape(ch.detail)}</failure>"
            cases.append(
                f"  <testcase classname={quoteattr(r.target)} name={quoteattr(ch.name)}>{body}</testcase>"
            )
    head = (
        f'<testsuite name="cgplan gate" tests="{len(cases)}" failures="{failures}" errors="0" '
        f'skipped="{skipped}">'
    )
    return '<?xml version="1.0" encoding="utf-8"?>\n' + head + "\n" + "\n".join(cases) + "\n</testsuite>\n"
