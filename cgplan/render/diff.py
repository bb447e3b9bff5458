"""Diff results as text and markdown (`cgplan diff`; its HTML is in render/html.py)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from cgplan.core.compare.diff import Diff, TierPadding, shared_gaps, size_changes
from cgplan.core.compare.memory import compare_memory
from cgplan.core.compare.sides import Side
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
