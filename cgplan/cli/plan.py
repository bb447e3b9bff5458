"""`cgplan plan CONFIG`: what vLLM will capture and how every batch dispatches, no GPU."""

from __future__ import annotations

import os
import shutil
import sys
from typing import Annotated

import typer

from cgplan.cli._options import (
    ConfigArg,
    JsonOpt,
    MarkdownOpt,
    ModelRunnerOpt,
    NoColorOpt,
    OutputOpt,
    PlatformOpt,
    VllmVersionOpt,
)
from cgplan.cli._output import write_artifact
from cgplan.config import Overrides
from cgplan.core.fingerprint import fingerprint
from cgplan.errors import ExitCode
from cgplan.planning import plan_file
from cgplan.render import OutputFormat, render


def plan(
    config: ConfigArg,
    vllm_version: VllmVersionOpt = None,
    platform: PlatformOpt = None,
    model_runner: ModelRunnerOpt = None,
    json_out: JsonOpt = False,
    markdown: MarkdownOpt = False,
    full: Annotated[bool, typer.Option("--full", help="One row per distinct graph, not ranges.")] = False,
    output: OutputOpt = None,
    no_color: NoColorOpt = False,
    fail_on_gap: Annotated[
        bool,
        typer.Option("--fail-on-gap", help="Exit 1 when a uniform-decode batch runs eager or below FULL."),
    ] = False,
) -> None:
    """Plan CUDA-graph capture for CONFIG exactly as the chosen vLLM release would."""
    if json_out and markdown:
        raise typer.BadParameter("give at most one of --json and --markdown")
    loaded, result = plan_file(config, Overrides(vllm_version, platform, model_runner))
    fmt = OutputFormat.json if json_out else OutputFormat.markdown if markdown else OutputFormat.table
    tty = sys.stdout.isatty() and output is None
    color = tty and not no_color and not os.environ.get("NO_COLOR")
    width = shutil.get_terminal_size((100, 24)).columns if tty else 100
    text = render(
        result,
        fmt,
        source=str(config),
        full=full,
        ignored_keys=loaded.ignored_keys,
        width=width,
        color=color,
        fingerprint=fingerprint(loaded.input),
    )
    write_artifact(text, output)
    if loaded.ignored_keys and fmt is OutputFormat.table:
        sys.stderr.write(
            f"cgplan: note: keys that do not change capture, ignored: {', '.join(loaded.ignored_keys)}\n"
        )
    if fail_on_gap and result.gaps:
        raise typer.Exit(int(ExitCode.GATE_FAILED))
