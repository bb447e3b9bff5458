"""`cgplan capture --gpu CONFIG`: capture every graph on this GPU, measure it, compare with the plan."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from cgplan.cli._options import (
    ConfigArg,
    FormatOpt,
    HtmlOpt,
    JsonOpt,
    ModelConfigOpt,
    ModelRunnerOpt,
    NoColorOpt,
    OutputOpt,
    PlatformOpt,
    QuietOpt,
    VllmVersionOpt,
)


def capture(
    config: ConfigArg,
    gpu: Annotated[
        bool, typer.Option("--gpu", help="Run on this machine's GPU (required: capture needs one).")
    ] = False,
    backend: Annotated[
        str,
        typer.Option("--backend", help="auto (vllm when importable), vllm, or torch (reference decoder)."),
    ] = "auto",
    device: Annotated[int, typer.Option("--device", help="First CUDA device index to use.")] = 0,
    output: OutputOpt = None,
    fmt: FormatOpt = None,
    json_out: JsonOpt = False,
    html: HtmlOpt = None,
    vllm_version: VllmVersionOpt = None,
    platform: PlatformOpt = None,
    model_runner: ModelRunnerOpt = None,
    instrument: Annotated[
        str,
        typer.Option(
            "--instrument",
            hidden=True,
            help="full (per graph) or timing (capture_model only: overhead baseline).",
        ),
    ] = "full",
    allow_unknown_vllm: Annotated[
        bool,
        typer.Option("--allow-unknown-vllm", help="Capture with a vLLM release cgplan has no rules for."),
    ] = False,
    model_config: ModelConfigOpt = None,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Capture every CUDA graph of CONFIG on the GPU; per-graph memory (NVML) and time; dispatch probe."""
    from cgplan.capture import BACKENDS, run_capture
    from cgplan.cli._console import colorize, note, output_format, use_color
    from cgplan.cli._output import write_artifact
    from cgplan.cli._progress import RichProgress
    from cgplan.config import Overrides
    from cgplan.render.capture import render_capture
    from cgplan.render.html import capture_html

    chosen = output_format(fmt, ("table", "json", "html"), json_flag=json_out)
    if not gpu:
        raise typer.BadParameter(
            "capture runs on the GPU: pass --gpu (cgplan plan needs none)", param_hint="--gpu"
        )
    if backend not in BACKENDS:
        raise typer.BadParameter(f"expected one of {', '.join(BACKENDS)}", param_hint="--backend")
    with RichProgress() as progress:
        outcome = run_capture(
            config,
            Overrides(vllm_version, platform, model_runner, model_config),
            backend=backend,
            device_index=device,
            progress=progress,
            output=output,
            allow_unknown_vllm=allow_unknown_vllm,
            per_graph=instrument != "timing",
        )
    summary = render_capture(outcome.report)
    if chosen == "json":
        write_artifact(json.dumps(outcome.report, indent=2, sort_keys=True, default=str) + "\n", None)
        if not quiet:
            sys.stderr.write(summary)
    elif chosen == "html":
        write_artifact(capture_html(outcome.report), None)
    else:
        sys.stdout.write(colorize(summary, use_color(no_color)))
    if output is not None:
        note(f"report written to {output} ({outcome.report['status']})", quiet)
    if html is not None:
        write_artifact(capture_html(outcome.report), html)
    if outcome.failure is not None:
        raise outcome.failure
