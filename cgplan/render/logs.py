"""A parsed log and its checks as text (`cgplan logs`)."""

from __future__ import annotations

import io
from typing import Any

from cgplan.core.logs.check import Comparison, LogPlan, jsonable, sizes_text
from cgplan.core.logs.parse import ParsedLog


def _short(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list) and value and all(isinstance(x, int) for x in value):
        return sizes_text(value) if len(value) > 6 else str(value)
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, dict) and all(isinstance(v, dict) and "largest" in v for v in value.values()):
        return ", ".join(f"{k}={v['graphs']} (largest={v['largest']})" for k, v in value.items())
    if isinstance(value, dict):
        return ", ".join(f"{k} {_short(v)}" for k, v in value.items())
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        return ", ".join(str(v) for v in value)
    if isinstance(value, list):
        return "; ".join(_short(v) for v in value) if value else "[]"
    return str(value)


def _own_plan(say: Any, own: LogPlan, wrapped: Any) -> None:
    """The plan of the log's own engine arguments: its verdict, gaps and fixes, where it agrees
    with every figure the log states; what it assumed; why not, where it cannot be made."""
    from rich.text import Text

    from cgplan.render.summary import fix_details, gap_groups, gap_title, verdict_line

    say()
    if own.plan is not None and own.comparison is not None:
        head = f"plan of {own.comparison.config}, under vLLM {own.comparison.vllm_version} rules"
    else:
        head = "plan of the log's engine arguments"
    wrapped(head)
    for a in own.assumed:
        wrapped(f"  assumed: {a}")
    if own.left_out:
        wrapped(f"  not read (cgplan does not know these keys): {', '.join(own.left_out)}")
    if own.plan is None or own.comparison is None:
        wrapped(f"  not planned: {own.not_planned}", "bold red" if own.comparison else "yellow")
        return
    bad = own.comparison.disagreements
    if bad:
        wrapped(
            f"  the plan disagrees with the log on {len(bad)} figure(s): its gaps are withheld "
            "(the engine did not run this plan; --config CONFIG to compare one of yours)",
            "bold red",
        )
        for c in bad:
            wrapped(f"    - {c.name}: log {jsonable(c.log)}; plan {jsonable(c.plan)}")
        return
    plan = own.plan
    wrapped(f"  all {len(own.comparison.checks)} figures of the log agree with this plan")
    wrapped(verdict_line(plan), "bold")
    for g in gap_groups(plan):
        wrapped(f"  {gap_title(g)}", "red")
        wrapped(f"    why: {g.reason}")
    for i, f in enumerate(plan.fixes):
        title = ("fix" if i == 0 else "or") if f.complete else "partial fix"
        say(
            Text(f"{title}: {f.command_line}", style="bold green" if f.complete else "bold yellow"),
            soft_wrap=True,
        )
        for line in fix_details(f):
            wrapped(f"  {line}")


def render_logs(
    parsed: ParsedLog,
    comparison: Comparison | None = None,
    *,
    width: int = 100,
    color: bool = False,
    own: LogPlan | None = None,
) -> str:
    """The terminal report: what the log says, then the checks against the plan (with a config),
    or the plan of the log's own engine arguments (`own`, without one)."""
    from rich.table import Table
    from rich.text import Text

    from cgplan.render._console import buffer_console, print_wrapped

    buf = io.StringIO()
    console = buffer_console(buf, width, color)
    say = console.print

    def wrapped(text: str, style: str = "") -> None:
        print_wrapped(console, text, style)

    runner = f"model runner {parsed.model_runner.upper()}" if parsed.model_runner else "runner unknown"
    wrapped(f"cgplan logs {parsed.source} · vLLM {parsed.vllm_version or 'unknown'} · {runner}")
    if parsed.engine_starts > 1:
        say(f"{parsed.engine_starts} engine starts in this log: reading the last one", style="yellow")
    if parsed.speculative_method:
        sched = (
            f" · dynamic SD {_short(jsonable(parsed.dynamic_sd_schedule))}"
            if parsed.dynamic_sd_schedule
            else ""
        )
        say(f"speculative decoding: {parsed.speculative_method}, K={parsed.num_speculative_tokens}{sched}")
    if parsed.cudagraph_mode is not None:
        say(
            f"engine config: cudagraph_mode {parsed.cudagraph_mode} · capture sizes "
            f"{sizes_text(parsed.capture_sizes)} · max {parsed.max_capture_size}",
            soft_wrap=True,
        )
    if parsed.final_cudagraph_mode != parsed.cudagraph_mode:
        say(f"after the attention downgrade: cudagraph_mode {parsed.final_cudagraph_mode}")
    if parsed.events or parsed.negative_memory:
        say("warnings:")
        for e in parsed.events:
            say(f"  {e.message}", soft_wrap=True)
        for line in parsed.negative_memory:
            wrapped(f"  negative graph memory: {line}", "bold red")
    if parsed.profiling is not None:
        groups = ", ".join(f"{m}={n} (largest={t})" for m, n, t in parsed.profiling)
        est = (
            f" · estimate {parsed.estimated_cudagraph_gib:.2f} GiB"
            if parsed.estimated_cudagraph_gib is not None
            else ""
        )
        say(f"memory profiling: {groups}{est}")
    if parsed.profiling_capture is not None:
        secs, gib = parsed.profiling_capture
        say(f"memory profiling capture: {secs:.0f} s, {gib:.2f} GiB (graphs discarded)")
    if parsed.capture_took_gib is not None:
        line = (
            f"capture: finished in {parsed.capture_finished_secs:.0f} s, "
            f"took {parsed.capture_took_gib:.2f} GiB"
        )
        if parsed.pool_actual_gib is not None:
            line += (
                f" · pool {parsed.pool_actual_gib:.2f} GiB actual vs {parsed.pool_estimated_gib:.2f} GiB "
                f"estimated (difference {parsed.pool_difference_gib:.2f} GiB, {parsed.pool_difference_pct}%)"
            )
        say(line, soft_wrap=True)
    else:
        style = "bold red" if parsed.capture_status == "incomplete" else ""
        say(Text(f"capture: {parsed.capture_status} (no 'Graph capturing finished' line)", style=style))
    if parsed.available_kv_cache_gib is not None or parsed.kv_cache_tokens is not None:
        kv = []
        if parsed.available_kv_cache_gib is not None:
            kv.append(f"{parsed.available_kv_cache_gib:.2f} GiB")
        if parsed.kv_cache_tokens is not None:
            kv.append(f"{parsed.kv_cache_tokens:,} tokens")
        say("KV cache: " + ", ".join(kv))
    if parsed.bars:
        t = Table(show_edge=False, box=None, header_style="bold")
        for col in ("progress bar", "graphs", "phase"):
            t.add_column(col, justify="right" if col == "graphs" else "left")
        for b in parsed.bars:
            done = f"{b.done}/{b.total}"
            t.add_row(b.desc, done if b.done == b.total else Text(done, style="red"), b.phase)
        say()
        say(t)
    else:
        say("progress bars: none in this log (tqdm writes them to stderr: keep it with 2>&1)")
    for n, table in enumerate(parsed.metrics, start=1):
        say()
        say(
            f"cudagraph metrics {n}: mode {table.mode} · capture sizes {sizes_text(table.capture_sizes)} · "
            f"{sum(r.count for r in table.rows)} batches",
            soft_wrap=True,
        )
        mt = Table(show_edge=False, box=None, header_style="bold")
        for col in ("unpadded", "padded", "mode", "count"):
            mt.add_column(col, justify="left" if col == "mode" else "right")
        for r in table.rows:
            mt.add_row(str(r.unpadded_tokens), str(r.padded_tokens), r.runtime_mode, str(r.count))
        say(mt)
    if comparison is None:
        if own is not None:
            _own_plan(say, own, wrapped)
        return buf.getvalue()
    say()
    say(f"plan: {comparison.config} under vLLM {comparison.vllm_version} rules", soft_wrap=True)
    for note in comparison.notes:
        say(Text(f"note: {note}", style="dim"), soft_wrap=True)
    if comparison.refused is not None:
        say(Text(f"the plan refuses this config: {comparison.refused}", style="bold red"), soft_wrap=True)
        shows = f"capture {parsed.capture_status}"
        if parsed.last_capture_activity:
            shows += f", last capture line: {parsed.last_capture_activity!r}"
        verdict = (
            "consistent with the refusal"
            if parsed.capture_status != "finished"
            else "the engine finished capturing: disagreement"
        )
        say(f"the log: {shows} ({verdict})", soft_wrap=True)
    if comparison.checks:
        ct = Table(show_edge=False, box=None, header_style="bold")
        for col in ("check", "log", "plan", ""):
            ct.add_column(col, overflow="fold")
        for c in comparison.checks:
            ct.add_row(
                c.name,
                _short(c.log),
                _short(c.plan),
                Text("ok" if c.agrees else "DIFFERS", style="green" if c.agrees else "bold red"),
            )
        say(ct)
    bad = comparison.disagreements
    if bad:
        say(Text(f"{len(bad)} disagreement(s) with the plan:", style="bold red"))
        for c in bad:
            say(f"  - {c.name}: log {jsonable(c.log)}; plan {jsonable(c.plan)}", soft_wrap=True)
            if c.detail:
                say(f"    ({c.detail})", soft_wrap=True)
    elif comparison.refused is None:
        say(Text(f"all {len(comparison.checks)} checks agree with the plan", style="green"))
    return buf.getvalue()
