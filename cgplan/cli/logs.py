"""`cgplan logs FILE [--config CONFIG]`: what a vLLM startup log says was captured, held against the plan."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cgplan.cli._options import (
    FormatOpt,
    JsonOpt,
    ModelConfigOpt,
    NoColorOpt,
    OutputOpt,
    PlatformOpt,
    _complete_versions,
)


def logs(
    file: Annotated[
        Path, typer.Argument(help="A vLLM startup log (plain or .gz; - reads stdin).", show_default=False)
    ],
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
            "--vllm-version",
            help="Plan under this release instead of the log's own (with --config).",
            autocompletion=_complete_versions,
        ),
    ] = None,
    fmt: FormatOpt = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    no_color: NoColorOpt = False,
    model_config: ModelConfigOpt = None,
    platform: PlatformOpt = None,
) -> None:
    """Read a vLLM startup log: mode, sizes, graphs captured, capture time and memory, KV cache.
    Without --config, plan the log's own engine arguments and print its gaps and fixes."""
    from cgplan.api.logs import check_log
    from cgplan.cli._console import output_format, use_color, width
    from cgplan.cli._output import write_artifact
    from cgplan.errors import ExitCode
    from cgplan.io.schema import dumps_ascii
    from cgplan.io.schema.logs import logs_to_dict
    from cgplan.render.logs import render_logs

    chosen = output_format(fmt, ("table", "json"), json_flag=json_out)
    r = check_log(file, config, vllm_version, model_config, platform)
    parsed, comparison = r.parsed, r.comparison
    if chosen == "json":
        text = dumps_ascii(logs_to_dict(parsed, comparison, r.own))
    else:
        color = use_color(no_color, output)
        text = render_logs(parsed, comparison, width=width(color), color=color, own=r.own)
    write_artifact(text, output)
    if comparison is not None and not comparison.agrees:
        raise typer.Exit(int(ExitCode.GATE_FAILED))
