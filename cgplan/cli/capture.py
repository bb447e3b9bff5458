"""`cgplan capture --gpu CONFIG_OR_FOLDER...`: capture every graph on this GPU, measure it, compare
with the plan; several configs (or a folder) run one engine process each, across the host's GPUs
or a Ray cluster, with one aggregate report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cgplan.cli._options import (
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
    configs: Annotated[
        list[Path],
        typer.Argument(
            metavar="CONFIG_OR_FOLDER...",
            help="vLLM serve configs (YAML with an optional cgplan: section), or folders of them "
            "(their *.yaml files). One config: today's single report. Several: one engine process "
            "each, their reports and an aggregate (fleet.json/.md/.html) in --out-dir.",
            show_default=False,
        ),
    ],
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
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out-dir",
            help="Several configs: the folder for each config's report and log and the aggregate "
            "(default: cgplan-capture).",
        ),
    ] = None,
    gpus: Annotated[
        str | None,
        typer.Option(
            "--gpus",
            help="Several configs: the GPUs to schedule them on, e.g. 0,1,2,3 (indices of the visible "
            "ones; default: all). A config with tensor_parallel_size N takes N of them.",
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="ADDRESS",
            help="Several configs: run each as a Ray task with the GPUs it needs on the cluster at "
            "ADDRESS (or auto); needs pip install 'cgplan[ray]'.",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Several configs: capture again even where a complete report of the same config, "
            "cgplan version and environment exists.",
        ),
    ] = False,
    model_config: ModelConfigOpt = None,
    no_color: NoColorOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Capture every CUDA graph of CONFIG on the GPU; per-graph memory (NVML) and time; dispatch probe."""
    # Imported here: the other commands (and `cgplan -h`) do not pay for the capture stack.
    from cgplan.api.capture import BACKENDS, run_capture
    from cgplan.cli._console import colorize, note, output_format, use_color
    from cgplan.cli._output import is_stdout, one_stdout, write_artifact
    from cgplan.cli._progress import RichProgress
    from cgplan.io.config import Overrides
    from cgplan.io.output import write_stdout
    from cgplan.io.reports import report_text
    from cgplan.render.capture import render_capture
    from cgplan.render.html import capture_html

    chosen = output_format(fmt, ("table", "json", "html"), json_flag=json_out)
    json_out = chosen == "json"
    if not gpu:
        raise typer.BadParameter(
            "capture runs on the GPU: pass --gpu (cgplan plan needs none)", param_hint="--gpu"
        )
    if backend not in BACKENDS:
        raise typer.BadParameter(
            f"expected one of {', '.join(b for b in BACKENDS if b != 'fake')}", param_hint="--backend"
        )
    # `-o -`: the report is stdout's one document (the summary goes to stderr, `--json` is that
    # same document); anything else for stdout beside it is refused before any work.
    dash_o = output is not None and is_stdout(output)
    one_stdout([("-o", output), ("--html", html)], main_to_stdout=chosen == "html" or not dash_o)
    if (
        len(configs) > 1
        or any(c.is_dir() for c in configs)
        or out_dir is not None
        or gpus is not None
        or ray_address is not None
    ):
        from cgplan.api.fleet import ChildOptions
        from cgplan.cli.capture_fleet import capture_fleet

        capture_fleet(
            configs,
            ChildOptions(backend, vllm_version, platform, model_runner, instrument, allow_unknown_vllm),
            out_dir=out_dir or Path("cgplan-capture"),
            gpus=gpus,
            ray_address=ray_address,
            force=force,
            output=output,
            json_out=json_out,
            html=html,
        )
        return
    config = configs[0]
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
    if dash_o:  # run_capture wrote the report to stdout
        if not quiet:
            sys.stderr.write(summary)
    elif json_out:
        write_artifact(report_text(outcome.report), None)
        if not quiet:
            sys.stderr.write(summary)
    elif chosen == "html":
        write_artifact(capture_html(outcome.report), None)
    else:
        write_stdout(colorize(summary, use_color(no_color)))
    if output is not None:
        note(f"report written to {output} ({outcome.report.status})", quiet)
    if html is not None:
        write_artifact(capture_html(outcome.report), html)
    if outcome.failure is not None:
        raise outcome.failure
