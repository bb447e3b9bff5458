"""`cgplan plan CONFIG`: what vLLM will capture and how every batch dispatches, no GPU."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import typer

from cgplan.cli._output import write_artifact
from cgplan.config import Overrides
from cgplan.errors import ExitCode
from cgplan.planning import plan_file
from cgplan.render import OutputFormat, render


def plan(
    config: Path = typer.Argument(..., help="vLLM serve config (YAML, as for `vllm serve --config`) with an optional cgplan: section."),
    vllm_version: str = typer.Option(None, "--vllm-version", help="vLLM release whose rules apply (default: the config's, else the newest)."),
    platform: str = typer.Option(None, "--platform", help="hopper, blackwell, ampere, rtx-blackwell, or a GPU name (H100, H200, B200, ...)."),
    model_runner: str = typer.Option(None, "--model-runner", help="auto, v1 or v2 (VLLM_USE_V2_MODEL_RUNNER)."),
    json_out: bool = typer.Option(False, "--json", help="Print the plan as JSON (schema_version 1)."),
    markdown: bool = typer.Option(False, "--markdown", help="Print markdown for a PR comment."),
    full: bool = typer.Option(False, "--full", help="One row per distinct graph instead of compressed ranges."),
    output: Path = typer.Option(None, "--output", "-o", help="Write the artifact to this file (atomically) instead of stdout."),
    no_color: bool = typer.Option(False, "--no-color", help="Plain text, no colour (also NO_COLOR=1 or a non-TTY)."),
    fail_on_gap: bool = typer.Option(False, "--fail-on-gap", help="Exit 1 when any uniform-decode batch runs eager or below FULL."),
) -> None:
    """Plan CUDA-graph capture for CONFIG exactly as the chosen vLLM release would."""
    if json_out and markdown:
        raise typer.BadParameter("give at most one of --json and --markdown")
    loaded, result = plan_file(config, Overrides(vllm_version, platform, model_runner))
    fmt = OutputFormat.json if json_out else OutputFormat.markdown if markdown else OutputFormat.table
    tty = sys.stdout.isatty() and output is None
    color = tty and not no_color and not os.environ.get("NO_COLOR")
    width = shutil.get_terminal_size((100, 24)).columns if tty else 100
    text = render(result, fmt, source=str(config), full=full, ignored_keys=loaded.ignored_keys,
                  width=width, color=color)
    write_artifact(text, output)
    if loaded.ignored_keys and fmt is OutputFormat.table:
        sys.stderr.write(f"cgplan: note: keys that do not change capture, ignored: {', '.join(loaded.ignored_keys)}\n")
    if fail_on_gap and result.gaps:
        raise typer.Exit(int(ExitCode.GATE_FAILED))
