"""`cgplan sweep CONFIG --set KEY=VALUES`: plan a grid, report gaps and release disagreements as ranges."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from cgplan.cli._options import ConfigArg, JsonOpt, MarkdownOpt, ModelConfigOpt, OutputOpt, PolicyOpt


def sweep(
    config: ConfigArg,
    set_: Annotated[
        list[str],
        typer.Option("--set", help="KEY=FIRST..LAST[:STEP] or KEY=V1,V2,... (repeat for more axes)."),
    ],
    vllm_version: Annotated[
        list[str] | None,
        typer.Option("--vllm-version", help="Release to plan with (repeat to compare releases)."),
    ] = None,
    policy: PolicyOpt = None,
    json_out: JsonOpt = False,
    markdown: MarkdownOpt = False,
    output: OutputOpt = None,
    model_config: ModelConfigOpt = None,
) -> None:
    """Plan every point of a parameter grid; show where coverage has gaps or releases disagree."""
    from cgplan.cli._output import write_artifact
    from cgplan.render.compare import render_sweep, sweep_to_dict
    from cgplan.sweeping import sweep_config

    result = sweep_config(config, set_, vllm_version or [], policy, model_config)
    if json_out:
        text = json.dumps(sweep_to_dict(result), indent=2, sort_keys=True, default=str) + "\n"
    else:
        text = render_sweep(result, markdown=markdown)
    write_artifact(text, output)
