"""`cgplan sweep CONFIG --set KEY=VALUES`: plan a grid, report gaps and release disagreements as ranges."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

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
    PolicyOpt,
    QuietOpt,
    _complete_versions,
)


class SweepProgress:
    """A progress bar on stderr for long sweeps (a terminal only: rich is not even imported else)."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.task: Any = None
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("planning"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(file=sys.stderr, emoji=False),
                transient=True,
            )
            self.task = self.bar.add_task("", total=None)

    def __enter__(self) -> SweepProgress:
        if self.bar is not None:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)

    def update(self, done: int, total: int) -> None:
        """`done` of `total` plans made."""
        if self.bar is not None and (done % 16 == 0 or done == total):
            self.bar.update(self.task, completed=done, total=total)


def sweep(
    config: ConfigArg,
    set_: Annotated[
        list[str],
        typer.Option("--set", help="KEY=FIRST..LAST[:STEP] or KEY=V1,V2,... (repeat for more axes)."),
    ],
    vllm_version: Annotated[
        list[str] | None,
        typer.Option(
            "--vllm-version",
            help="Release to plan with (repeat to compare releases).",
            autocompletion=_complete_versions,
        ),
    ] = None,
    policy: PolicyOpt = None,
    fmt: FormatOpt = None,
    json_out: JsonOpt = False,
    markdown: MarkdownOpt = False,
    output: OutputOpt = None,
    model_config: ModelConfigOpt = None,
    platform: PlatformOpt = None,
    model_runner: ModelRunnerOpt = None,
    no_color: NoColorOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Plan every point of a parameter grid; show where coverage has gaps or releases disagree."""
    from cgplan.api.sweep import sweep_config
    from cgplan.cli._console import colorize, note, output_format, use_color
    from cgplan.cli._output import write_artifact
    from cgplan.io.config import resolve_vllm_version
    from cgplan.io.schema import dumps_ascii
    from cgplan.io.schema.sweep import sweep_to_dict
    from cgplan.render.sweep import render_sweep

    chosen = output_format(fmt, ("table", "json", "markdown"), json_flag=json_out, markdown_flag=markdown)
    # As every other command reads --vllm-version: v0.33.0, 0.33 and patch releases (with a note).
    versions = []
    for v in vllm_version or []:
        release, why = resolve_vllm_version(v, "--vllm-version")
        versions.append(release)
        if why:
            note(f"note: {why}", quiet)
    with SweepProgress() as bar:
        result = sweep_config(
            config, set_, versions, policy, bar.update, model_config, platform, model_runner
        )
    if chosen == "json":
        text = dumps_ascii(sweep_to_dict(result))
    elif chosen == "markdown":
        text = render_sweep(result, markdown=True)
    else:
        text = colorize(render_sweep(result, markdown=False), use_color(no_color, output))
    write_artifact(text, output)
