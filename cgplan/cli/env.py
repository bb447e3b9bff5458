"""`cgplan env`: what cgplan can see on this machine (Python, torch, vLLM, CUDA, NVML, GPUs)."""

from __future__ import annotations

from typing import Annotated

import typer

from cgplan.cli._options import FormatOpt, NoColorOpt


def env(
    fmt: FormatOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON; = --format json.")] = False,
    no_color: NoColorOpt = False,
) -> None:
    """Show what cgplan can see: Python, torch, vLLM, CUDA, NVML and GPUs, and why anything is missing."""
    from cgplan.api.env import environment
    from cgplan.cli._console import colorize, output_format, use_color
    from cgplan.io.output import write_stdout
    from cgplan.io.schema import dumps_ascii
    from cgplan.render.env import env_text

    chosen = output_format(fmt, ("table", "json"), json_flag=json_out)
    info = environment()
    if chosen == "json":
        from cgplan.io.schema.env import env_to_dict

        write_stdout(dumps_ascii(env_to_dict(info)))
        return
    write_stdout(colorize(env_text(info), use_color(no_color)))
