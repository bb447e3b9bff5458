"""`cgplan logs FILE [--config CONFIG]`: what a vLLM startup log says was captured, held against the plan."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from cgplan.cli._options import JsonOpt, ModelConfigOpt, NoColorOpt, OutputOpt


def logs(
    file: Annotated[Path, typer.Argument(help="A vLLM startup log (plain or .gz).", show_default=False)],
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="Plan this config under the log's vLLM release and compare every figure the log states "
            "(exit 1 on a disagreement, or when the plan says vLLM refuses the config).",
        ),
    ] = None,
    vllm_version: Annotated[
        str | None,
        typer.Option(
            "--vllm-version", help="Plan under this release instead of the log's own (with --config)."
        ),
    ] = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    no_color: NoColorOpt = False,
    model_config: ModelConfigOpt = None,
) -> None:
    """Read a vLLM startup log: mode, sizes, graphs captured, capture time and memory, KV cache."""
    from cgplan.cli._output import write_artifact
    from cgplan.errors import ExitCode
    from cgplan.logs import compare_with_config, logs_to_dict, parse_file, render_logs

    parsed = parse_file(file)
    comparison = (
        compare_with_config(parsed, config, vllm_version, model_config) if config is not None else None
    )
    if json_out:
        text = json.dumps(logs_to_dict(parsed, comparison), indent=2, sort_keys=True) + "\n"
    else:
        tty = sys.stdout.isatty() and output is None
        color = tty and not no_color and not os.environ.get("NO_COLOR")
        width = shutil.get_terminal_size((100, 24)).columns if tty else 100
        text = render_logs(parsed, comparison, width=width, color=color)
    write_artifact(text, output)
    if comparison is not None and not comparison.agrees:
        raise typer.Exit(int(ExitCode.GATE_FAILED))
