"""`cgplan optimize CONFIG --traffic FILE`: the capture sizes that fit the traffic best."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cgplan.cli._options import (
    ConfigArg,
    FormatOpt,
    JsonOpt,
    ModelConfigOpt,
    ModelRunnerOpt,
    NoColorOpt,
    OutputOpt,
    PlatformOpt,
    QuietOpt,
    VllmVersionOpt,
)

if TYPE_CHECKING:
    from cgplan.core.traffic_cost import TrafficCost
    from cgplan.optimizing import Optimized


def _cost(c: TrafficCost) -> dict[str, Any]:
    return {
        "steps": c.steps,
        "padded_tokens": round(c.padded_tokens, 3),
        "padding_ratio": round(c.padded_tokens / c.real_tokens, 6) if c.real_tokens else None,
        "eager_steps": c.eager_steps,
        "eager_share": round(c.eager_steps / c.steps, 6) if c.steps else None,
    }


def _doc(o: Optimized) -> dict[str, Any]:
    from cgplan.core.gaps import graph_count
    from cgplan.render.json import SCHEMA_VERSION

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
    }


def _text(o: Optimized) -> str:
    from cgplan.core.gaps import graph_count

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
    lines = [
        f"traffic: {o.traffic.source} · {d.steps:,.0f} steps · vLLM {o.plan.vllm_version}",
        f"{'':10} {'sizes':>6} {'graphs':>7} {'padded tokens':>14} {'padding':>8} {'eager steps':>12}",
        f"{'default':10} {len(o.default_plan.capture_sizes):>6} {graph_count(o.default_plan):>7} "
        f"{dp} {dr:>8} {de:>12}",
        f"{'optimized':10} {len(o.sizes):>6} {graph_count(o.plan):>7} {cp} {cr:>8} {ce:>12}",
        "flags (checked: the ladder was planned again with these sizes):",
        "  " + " ".join(o.flags),
    ]
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
    vllm_version: VllmVersionOpt = None,
    platform: PlatformOpt = None,
    model_runner: ModelRunnerOpt = None,
    fmt: FormatOpt = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    model_config: ModelConfigOpt = None,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Choose capture sizes minimising expected padding plus eager steps for the traffic, under a budget."""
    from cgplan.cli._console import colorize, note, output_format, use_color
    from cgplan.cli._output import write_artifact
    from cgplan.config import Overrides
    from cgplan.optimizing import optimize_config

    chosen = output_format(fmt, ("table", "json"), json_flag=json_out)

    o = optimize_config(
        config,
        traffic,
        Overrides(vllm_version, platform, model_runner, model_config),
        max_sizes=max_sizes,
        max_graphs=max_graphs,
        eager_step_cost=eager_step_cost,
        max_capture_size=max_capture_size,
    )
    text = (
        json.dumps(_doc(o), indent=2, sort_keys=True) + "\n"
        if chosen == "json"
        else colorize(_text(o), use_color(no_color, output))
    )
    write_artifact(text, output)
    if output is not None:
        note(f"written to {output}", quiet)
