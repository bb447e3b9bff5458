"""`cgplan optimize CONFIG --traffic FILE`: the capture sizes that fit the traffic best."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cgplan.api.optimize import Optimized, optimize_config
from cgplan.cli._options import (
    ConfigArg,
    FormatOpt,
    JsonOpt,
    MarkdownOpt,
    ModelConfigOpt,
    ModelRunnerOpt,
    NoColorOpt,
    OutputOpt,
    PlatformOpt,
    QuietOpt,
    VllmVersionOpt,
)
from cgplan.cli._output import write_artifact
from cgplan.core.gaps import graph_count
from cgplan.core.traffic_cost import TrafficCost
from cgplan.io.config import Overrides
from cgplan.io.schema import SCHEMA_VERSION, dumps_ascii


def _cost(c: TrafficCost) -> dict[str, Any]:
    return {
        "steps": c.steps,
        "padded_tokens": round(c.padded_tokens, 3),
        "padding_ratio": round(c.padded_tokens / c.real_tokens, 6) if c.real_tokens else None,
        "eager_steps": c.eager_steps,
        "eager_share": round(c.eager_steps / c.steps, 6) if c.steps else None,
    }


def _doc(o: Optimized) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "optimize",
        "vllm_version": o.plan.vllm_version,
        "traffic": o.traffic.source,
        "flags": list(o.flags),
        "capture_sizes": list(o.sizes),
        "eager_step_cost": o.eager_step_cost,
        "default": {
            "capture_sizes": len(o.default_plan.capture_sizes),
            "graphs": graph_count(o.default_plan),
            **_cost(o.default_cost),
        },
        "optimized": {"capture_sizes": len(o.sizes), "graphs": graph_count(o.plan), **_cost(o.cost)},
        "objective": o.objective,
        "expected_step_ms": {"default": round(o.default_step_ms, 4), "optimized": round(o.step_ms, 4)},
        "predicted_memory_mib": {
            "default": None if o.default_memory_mib is None else round(o.default_memory_mib, 1),
            "optimized": None if o.memory_mib is None else round(o.memory_mib, 1),
            "budget": None if o.memory_budget_mib is None else round(o.memory_budget_mib, 1),
        },
        "predicted_capture_s": {"default": o.default_capture_s, "optimized": o.capture_s},
        "gate": {"policy": "default", "relaxed": list(o.relaxed), "gave_up": list(o.gave_up)},
        "caveats": list(o.caveats),
    }


def _text(o: Optimized) -> str:
    d, c = o.default_cost, o.cost

    def pct(x: float, total: float) -> str:
        return f"{100 * x / total:.2f}%" if total else "-"

    dp, dr, de = (
        f"{d.padded_tokens:>14,.0f}",
        pct(d.padded_tokens, d.real_tokens),
        pct(d.eager_steps, d.steps),
    )
    cp, cr, ce = (
        f"{c.padded_tokens:>14,.0f}",
        pct(c.padded_tokens, c.real_tokens),
        pct(c.eager_steps, c.steps),
    )

    def mib(x: float | None) -> str:
        return "-" if x is None else f"{x:,.0f}"

    lines = [
        f"traffic: {o.traffic.source} · {d.steps:,.0f} steps · vLLM {o.plan.vllm_version} · objective: "
        + ("expected step time" if o.objective == "time" else "padded tokens + eager steps"),
        f"{'':10} {'sizes':>6} {'graphs':>7} {'padded tokens':>14} {'padding':>8} {'eager steps':>12} "
        f"{'step ms':>8} {'graph MiB':>9}",
        f"{'default':10} {len(o.default_plan.capture_sizes):>6} {graph_count(o.default_plan):>7} "
        f"{dp} {dr:>8} {de:>12} {o.default_step_ms:>8.3f} {mib(o.default_memory_mib):>9}",
        f"{'optimized':10} {len(o.sizes):>6} {graph_count(o.plan):>7} {cp} {cr:>8} {ce:>12} "
        f"{o.step_ms:>8.3f} {mib(o.memory_mib):>9}",
        f"expected step time {o.default_step_ms:.3f} → {o.step_ms:.3f} ms "
        f"({(o.step_ms - o.default_step_ms) / o.default_step_ms:+.1%}) at "
        + (
            f"a graph-memory budget of {o.memory_budget_mib:,.0f} MiB (the default ladder's, predicted)"
            if o.memory_budget_mib is not None
            else "no memory budget"
        )
        + f" · {o.latency_gpu} latency model, H200 cost model",
        *(f"  caveat: {c}" for c in o.caveats),
        "flags (checked: the ladder was planned again with these sizes):",
        "  " + " ".join(o.flags),
    ]
    if o.relaxed:
        lines.append(f"gate: the default gate, relaxed as asked: {', '.join(o.relaxed)}")
    if o.gave_up:
        lines += ["gate: FAIL, the result fails the default gate; it gave up:"] + [
            f"  - {g}" for g in o.gave_up
        ]
    else:
        lines.append("gate: ok, the result passes the default gate (configs/gates/default.yaml)")
    return "\n".join(lines) + "\n"


def _markdown(o: Optimized) -> str:
    """The comparison as a markdown table, for a PR comment (same figures as the table)."""
    d, c = o.default_cost, o.cost

    def pct(x: float, total: float) -> str:
        return f"{100 * x / total:.2f}%" if total else "-"

    def mib(x: float | None) -> str:
        return "-" if x is None else f"{x:,.0f}"

    objective = "expected step time" if o.objective == "time" else "padded tokens + eager steps"
    rows = [
        (
            "default",
            len(o.default_plan.capture_sizes),
            graph_count(o.default_plan),
            d,
            o.default_step_ms,
            o.default_memory_mib,
        ),
        ("optimized", len(o.sizes), graph_count(o.plan), c, o.step_ms, o.memory_mib),
    ]
    lines = [
        f"**cgplan optimize** · traffic `{o.traffic.source}` · {d.steps:,.0f} steps · "
        f"vLLM {o.plan.vllm_version} · objective: {objective}",
        "",
        "| ladder | sizes | graphs | padded tokens | padding | eager steps | step ms | graph MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, sizes, graphs, cost, ms, mem in rows:
        lines.append(
            f"| {name} | {sizes} | {graphs} | {cost.padded_tokens:,.0f} "
            f"| {pct(cost.padded_tokens, cost.real_tokens)} | {pct(cost.eager_steps, cost.steps)} "
            f"| {ms:.3f} | {mib(mem)} |"
        )
    budget = (
        f"a graph-memory budget of {o.memory_budget_mib:,.0f} MiB (the default ladder's, predicted)"
        if o.memory_budget_mib is not None
        else "no memory budget"
    )
    lines += [
        "",
        f"Expected step time {o.default_step_ms:.3f} → {o.step_ms:.3f} ms "
        f"({(o.step_ms - o.default_step_ms) / o.default_step_ms:+.1%}) at {budget} · {o.latency_gpu} "
        "latency model, H200 cost model.",
        *(["", *(f"- caveat: {c}" for c in o.caveats)] if o.caveats else []),
        "",
        "Flags (checked: the ladder was planned again with these sizes):",
        "",
        "```bash",
        " ".join(o.flags),
        "```",
    ]
    if o.relaxed:
        lines.append(f"\nGate: the default gate, relaxed as asked: {', '.join(o.relaxed)}.")
    if o.gave_up:
        lines += ["", "Gate: **FAIL**, the result fails the default gate; it gave up:", ""]
        lines += [f"- {g}" for g in o.gave_up]
    else:
        lines.append("\nGate: the result passes the default gate (configs/gates/default.yaml).")
    return "\n".join(lines) + "\n"


def optimize(
    config: ConfigArg,
    traffic: Annotated[
        Path, typer.Option("--traffic", help="Histogram YAML, --cudagraph-metrics log or Prometheus dump.")
    ],
    max_graphs: Annotated[
        int | None,
        typer.Option("--max-graphs", help="Most graph descriptors (default: the default ladder's)."),
    ] = None,
    max_sizes: Annotated[
        int | None, typer.Option("--max-sizes", help="Most capture sizes (default: the default ladder's).")
    ] = None,
    max_capture_size: Annotated[
        int | None,
        typer.Option(
            "--max-capture-size", help="Largest size allowed (e.g. the default's, to keep its coverage)."
        ),
    ] = None,
    eager_step_cost: Annotated[
        float, typer.Option("--eager-step-cost", help="Cost of one eager step, in padded-token equivalents.")
    ] = 1000.0,
    objective: Annotated[
        str,
        typer.Option(
            "--objective",
            help="time: expected step time (latency model); padding: padded tokens + eager steps.",
        ),
    ] = "time",
    max_graph_memory_mib: Annotated[
        float | None,
        typer.Option(
            "--max-graph-memory-mib",
            help="Most predicted graph memory (objective time; default: the default ladder's).",
        ),
    ] = None,
    max_capture_s: Annotated[
        float | None,
        typer.Option("--max-capture-s", help="Longest predicted capture phase (objective time)."),
    ] = None,
    latency_coefficients: Annotated[
        Path | None,
        typer.Option(
            "--latency-coefficients", help="Latency-model coefficients (default: the shipped H200 set)."
        ),
    ] = None,
    relax: Annotated[
        list[str] | None,
        typer.Option(
            "--relax",
            help="A default-gate check the result may fail (repeatable): widest_decode_full, "
            "no_eager_uniform_decode, no_piecewise_uniform_decode, max_graphs_per_family.",
        ),
    ] = None,
    vllm_version: VllmVersionOpt = None,
    platform: PlatformOpt = None,
    model_runner: ModelRunnerOpt = None,
    model_config: ModelConfigOpt = None,
    fmt: FormatOpt = None,
    json_out: JsonOpt = False,
    markdown: MarkdownOpt = False,
    output: OutputOpt = None,
    no_color: NoColorOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Choose capture sizes minimising the expected step time (or padding plus eager steps) for the
    traffic, under size, graph, memory and capture-time budgets."""
    from cgplan.cli._console import colorize, note, output_format, use_color
    from cgplan.io.latency_coefficients import load_latency

    chosen = output_format(fmt, ("table", "json", "markdown"), json_flag=json_out, markdown_flag=markdown)
    o = optimize_config(
        config,
        traffic,
        Overrides(vllm_version, platform, model_runner, model_config),
        max_sizes=max_sizes,
        max_graphs=max_graphs,
        eager_step_cost=eager_step_cost,
        max_capture_size=max_capture_size,
        objective=objective,
        latency=load_latency(latency_coefficients) if latency_coefficients is not None else None,
        max_memory_mib=max_graph_memory_mib,
        max_capture_s=max_capture_s,
        relax=tuple(relax or ()),
    )
    for line in o.notes:
        note(f"note: {line}", quiet)
    if chosen == "json":
        text = dumps_ascii(_doc(o))
    elif chosen == "markdown":
        text = _markdown(o)
    else:
        text = colorize(_text(o), use_color(no_color, output))
    write_artifact(text, output)
    if output is not None and str(output) != "-":
        note(f"written to {output}", quiet)
