"""`cgplan diff A [B]`: graphs, coverage, padding, memory and time between two sides."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cgplan.cli._options import (
    FormatOpt,
    HtmlOpt,
    JsonOpt,
    MarkdownOpt,
    ModelConfigOpt,
    ModelRunnerOpt,
    NoColorOpt,
    OutputOpt,
    PlatformOpt,
    QuietOpt,
    _complete_versions,
)


def diff(
    a: Annotated[
        Path,
        typer.Argument(help="A config (YAML) or report (plan --json / capture JSON).", show_default=False),
    ],
    b: Annotated[
        Path | None, typer.Argument(help="The other side (omit to compare A under two releases).")
    ] = None,
    vllm_version: Annotated[
        list[str] | None,
        typer.Option(
            "--vllm-version",
            help="Release(s): one for both sides, two (or A..B) for A and B.",
            autocompletion=_complete_versions,
        ),
    ] = None,
    allow_mismatch: Annotated[
        bool, typer.Option("--allow-mismatch", help="Compare reports of different configs anyway.")
    ] = False,
    fmt: FormatOpt = None,
    json_out: JsonOpt = False,
    markdown: MarkdownOpt = False,
    output: OutputOpt = None,
    html: HtmlOpt = None,
    policy: Annotated[
        list[str] | None,
        typer.Option("--policy", help="Capture policy: one for both sides, or two (A then B)."),
    ] = None,
    fail_on_change: Annotated[
        bool, typer.Option("--fail-on-change", help="Exit 1 when anything differs.")
    ] = False,
    model_config: ModelConfigOpt = None,
    platform: PlatformOpt = None,
    model_runner: ModelRunnerOpt = None,
    no_color: NoColorOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Compare two configs, one config under two vLLM releases, a plan and a capture, or two captures."""
    from cgplan.api.diff import diff_paths
    from cgplan.cli._console import colorize, note, output_format, use_color
    from cgplan.cli._output import one_stdout, write_artifacts
    from cgplan.errors import ExitCode
    from cgplan.io.schema import dumps_ascii
    from cgplan.io.schema.diff import diff_to_dict
    from cgplan.render.diff import render_diff, render_diff_markdown

    chosen = output_format(
        fmt, ("table", "json", "markdown", "html"), json_flag=json_out, markdown_flag=markdown
    )
    one_stdout([("-o", output), ("--html", html)], main_to_stdout=output is None)
    notes: list[str] = []
    d = diff_paths(
        a,
        b,
        vllm_version or [],
        allow_mismatch=allow_mismatch,
        policies=policy,
        model_config=model_config,
        notes=notes,
        platform=platform,
        model_runner=model_runner,
    )
    for line in notes:
        note(f"note: {line}", quiet)
    if chosen == "json":
        text = dumps_ascii(diff_to_dict(d))
    elif chosen == "markdown":
        text = render_diff_markdown(d)
    elif chosen == "html":
        from cgplan.render.html import diff_html

        text = diff_html(diff_to_dict(d))
    else:
        text = colorize(render_diff(d), use_color(no_color, output))
    artifacts = [(text, output)]
    if html is not None:
        from cgplan.render.html import diff_html

        artifacts.append((diff_html(diff_to_dict(d)), html))
    write_artifacts(artifacts)
    if fail_on_change and not d.unchanged:
        raise typer.Exit(int(ExitCode.GATE_FAILED))
