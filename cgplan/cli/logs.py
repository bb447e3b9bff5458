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
        Path,
        typer.Argument(
            help="A vLLM startup log (plain or .gz; - reads stdin), with or without the lines of cgplan's "
            "vLLM plugin; or a metrics endpoint's text holding the plugin's counter.",
            show_default=False,
        ),
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
    Without --config, plan the log's own engine arguments and print its gaps and fixes. The lines
    of cgplan's vLLM plugin (CGPLAN_PLUGIN=1) are read too: its start-up block and its step counts
    per dispatch outcome; so is a Prometheus text (a file or -) with its counter."""
    from cgplan.api.logs import MetricsCheck, PluginOnly, read_logs
    from cgplan.cli._console import output_format, use_color, width
    from cgplan.cli._output import write_artifact
    from cgplan.errors import ExitCode
    from cgplan.io.schema import dumps_ascii
    from cgplan.io.schema.logs import logs_to_dict
    from cgplan.render.logs import render_logs

    chosen = output_format(fmt, ("table", "json"), json_flag=json_out)
    from cgplan.render.plugin import metrics_text, plugin_text

    r = read_logs(file, config, vllm_version, model_config, platform)
    if isinstance(r, MetricsCheck | PluginOnly):
        if isinstance(r, MetricsCheck):
            from cgplan.io.schema.logs import metrics_to_dict

            doc, words = metrics_to_dict(r.source, r.counts), metrics_text(r.source, r.counts)
        else:
            from cgplan.io.schema import SCHEMA_VERSION
            from cgplan.io.schema.logs import plugin_to_dict

            doc = {"schema_version": SCHEMA_VERSION, "kind": "plugin_log", "source": r.source}
            doc.update(plugin_to_dict(r.plugin))
            words = f"cgplan logs {r.source} · the plugin's lines only (no vLLM start-up lines)\n"
            words += plugin_text(r.plugin)
        write_artifact(dumps_ascii(doc) if chosen == "json" else words, output)
        return
    parsed, comparison = r.parsed, r.comparison
    if chosen == "json":
        text = dumps_ascii(logs_to_dict(parsed, comparison, r.own, r.plugin))
    else:
        color = use_color(no_color, output)
        text = render_logs(parsed, comparison, width=width(color), color=color, own=r.own)
        if r.plugin is not None:
            text += "\n" + plugin_text(r.plugin)
    write_artifact(text, output)
    if comparison is not None and not comparison.agrees:
        raise typer.Exit(int(ExitCode.GATE_FAILED))
