"""The terminal summary of a capture report."""

from __future__ import annotations

import io

from rich.table import Table
from rich.text import Text

from cgplan.core.model.reports import CaptureReport
from cgplan.render._console import buffer_console

MIB = 1 << 20


def _mib(value: int | None) -> str:
    return "n/a" if value is None else f"{value / MIB:.1f}"


def render_capture(report: CaptureReport, *, width: int = 100, color: bool = False) -> str:
    """Per family/mode cost, vLLM's own figures, and the plan-vs-measured verdict."""
    buf = io.StringIO()
    console = buffer_console(buf, width, color)
    m = report.measured
    env = report.environment
    gpus = ", ".join(g.name for g in env.gpus) or "no GPU recorded"
    console.print(
        f"cgplan capture · backend {m.backend} · {gpus} · vLLM {env.vllm or '-'} · "
        f"torch {env.torch or '-'} · status {report.status}",
        soft_wrap=True,
    )
    if report.failure:
        console.print(Text(f"failure: {report.failure}", style="bold red"))
    if m.cudagraph_mode:
        console.print(
            f"engine: runner {str(m.model_runner or '-').upper()} · "
            f"cudagraph_mode {m.cudagraph_mode} · "
            f"{len(m.capture_sizes)} capture sizes, max {m.max_capture_size}",
            soft_wrap=True,
        )
    t = Table(show_edge=False, box=None, header_style="bold")
    for col in ("family", "mode", "graphs", "pieces", "NVML MiB", "capture s", "largest MiB", "smallest MiB"):
        t.add_column(col, justify="left" if col in ("family", "mode") else "right")
    for s in report.summary:
        t.add_row(
            s.family,
            s.mode,
            str(s.graphs),
            str(s.pieces),
            _mib(s.nvml_bytes),
            f"{s.capture_time_ms / 1000:.2f}",
            _mib(s.largest_nvml_bytes),
            _mib(s.smallest_nvml_bytes),
        )
    console.print()
    console.print(t)
    console.print(
        f"graphs total: NVML {_mib(m.graph_nvml_total_bytes)} MiB over the capture sections · "
        f"capture phase {m.capture_wall_s} s, NVML {_mib(m.capture_nvml_delta_bytes)} MiB "
        "(warmups included)",
        soft_wrap=True,
    )
    ranks = m.ranks
    if len(ranks) > 1:
        console.print()
        console.print(
            f"{len(ranks)} tensor-parallel ranks, each on its own GPU (the tables above and the comparison "
            "are rank 0's; the capture phase line sums the GPUs and takes the slowest rank's time):",
            soft_wrap=True,
        )
        rt = Table(show_edge=False, box=None, header_style="bold")
        cols = ("rank", "GPU", "graphs", "NVML MiB (graph sections)", "capture phase NVML MiB", "capture s")
        for col in cols:
            rt.add_column(col, justify="left" if col == "GPU" else "right")
        for r in ranks:
            gpu = r.device_name or "-"
            if r.nvml_index is not None:
                gpu += f" (NVML {r.nvml_index})"
            wall = r.capture_wall_s
            rt.add_row(
                str(r.rank),
                Text(gpu),
                str(len(r.graphs)),
                _mib(r.graph_nvml_total_bytes),
                _mib(r.capture_nvml_delta_bytes),
                "n/a" if wall is None else f"{wall:.2f}",
            )
        console.print(rt)
    v = m.vllm
    figures = (
        v.capture_finished_secs,
        v.capture_took_gib,
        v.capture_returned_bytes,
        v.estimated_cudagraph_gib,
        v.actual_vs_estimated,
        v.kv_cache_tokens,
        v.available_kv_cache_gib,
    )
    if any(figures):
        parts = []
        if v.capture_took_gib is not None:
            parts.append(f"capture took {v.capture_took_gib:.2f} GiB in {v.capture_finished_secs:.0f} s")
        if v.estimated_cudagraph_gib is not None:
            parts.append(f"its estimate {v.estimated_cudagraph_gib:.2f} GiB")
        if v.kv_cache_tokens is not None:
            parts.append(f"KV cache {v.kv_cache_tokens:,} tokens")
        console.print("vLLM says: " + "; ".join(parts), soft_wrap=True)
    c = report.comparison
    console.print()
    if c is None:
        console.print("no comparison (nothing was captured)")
        return buf.getvalue()
    for g in c.graphs:
        line = f"{g.family}: {g.matched} graphs as planned"
        if g.missing:
            line += f", {len(g.missing)} planned but not captured"
        if g.unexpected:
            line += f", {len(g.unexpected)} captured but not planned"
        console.print(line, style="" if not (g.missing or g.unexpected) else "yellow")
    mism = c.dispatch_mismatches
    console.print(
        f"dispatch: {c.dispatch_checked} batch shapes probed through the engine's dispatcher, "
        f"{len(mism)} run(s) differ from the plan"
    )
    for d in mism[:10]:
        console.print(
            f"  {d.family} q={d.query_len} {d.first}-{d.last}: planned {d.predicted}, measured {d.measured}",
            style="yellow",
        )
    eager = c.eager_uniform_decode_measured
    if eager:
        runs = ", ".join(f"{e.from_reqs}-{e.to_reqs} requests × {e.query_len}" for e in eager)
        # with LoRA the probe also ran with one active adapter; these runs are the batches without
        without = " (batches without a LoRA adapter)" if m.uniform_decode_lora1 else ""
        console.print(Text(f"measured eager uniform decode{without}: {runs}", style="red"))
    verdict = "plan matches the GPU" if c.matches else "plan and GPU disagree (see above)"
    console.print(Text(verdict, style="green" if c.matches else "bold yellow"))
    return buf.getvalue()
