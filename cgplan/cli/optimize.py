"""`cgplan optimize CONFIG --traffic FILE`: the capture sizes that fit the traffic best."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cgplan.api.optimize import optimize_config
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
    finite_non_negative,
)
from cgplan.cli._output import write_artifact
from cgplan.io.config import Overrides
from cgplan.io.schema import dumps_ascii
from cgplan.io.schema.optimize import optimize_to_dict
from cgplan.render.optimize import optimize_markdown, render_optimize


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
        float,
        typer.Option(
            "--eager-step-cost",
            callback=finite_non_negative,
            help="Cost of one eager step, in padded-token equivalents.",
        ),
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
            callback=finite_non_negative,
            help="Most predicted graph memory (objective time; default: the default ladder's).",
        ),
    ] = None,
    max_capture_s: Annotated[
        float | None,
        typer.Option(
            "--max-capture-s",
            callback=finite_non_negative,
            help="Longest predicted capture phase (objective time).",
        ),
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
    traffic, under size, graph, memory and capture-time budgets. Exit 1 when the result fails the
    default gate (--relax CHECK accepts a check it fails)."""
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
        text = dumps_ascii(optimize_to_dict(o))
    elif chosen == "markdown":
        text = optimize_markdown(o)
    else:
        text = colorize(render_optimize(o), use_color(no_color, output))
    write_artifact(text, output)
    if output is not None and str(output) != "-":
        note(f"written to {output}", quiet)
    if o.gave_up:  # the result fails the default gate (the checks --relax did not give up)
        from cgplan.errors import ExitCode

        raise typer.Exit(int(ExitCode.GATE_FAILED))
