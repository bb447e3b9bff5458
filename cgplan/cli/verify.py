"""`cgplan verify CONFIG... --python PY`: vLLM's own code as a second engine, beside cgplan's rules."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cgplan.cli._options import (
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
    VllmVersionOpt,
)


def verify(
    configs: Annotated[
        list[Path],
        typer.Argument(help="Configs (YAML), or folders of them (a corpus).", show_default=False),
    ],
    python: Annotated[
        Path,
        typer.Option(
            "--python",
            help="The python of an environment with vLLM: a release, a nightly, an editable checkout.",
            show_default=False,
        ),
    ],
    against: Annotated[
        Path | None,
        typer.Option("--against", help="A second vLLM build's python: before (--python) / after (this)."),
    ] = None,
    vllm_version: VllmVersionOpt = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds vLLM's code may take on one config (0: no limit).")
    ] = 600.0,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Configs vLLM answers at a time.", min=1)] = 1,
    policy: PolicyOpt = None,
    fail_on_change: Annotated[
        bool, typer.Option("--fail-on-change", help="With --against: exit 1 when any config changed.")
    ] = False,
    fmt: FormatOpt = None,
    json_out: JsonOpt = False,
    markdown: MarkdownOpt = False,
    output: OutputOpt = None,
    save: Annotated[
        list[Path] | None,
        typer.Option(
            "--save",
            help="Also write the result to this file, in the format its suffix names (.json, .md, else "
            "text); repeatable: one run of vLLM, several artifacts.",
        ),
    ] = None,
    model_config: ModelConfigOpt = None,
    platform: PlatformOpt = None,
    model_runner: ModelRunnerOpt = None,
    no_color: NoColorOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Run vLLM's own config, dispatcher and CUDA-graph-manager code (on this CPU, no GPU, no weights)
    for each config and compare it with cgplan's rules for the nearest release, field by field.

    Exit 1 when a config differs (with --against: when one changed and --fail-on-change is given),
    3 when the interpreter cannot answer (no vLLM, an import failure, a crash or a timeout).
    """
    from cgplan.api.verify import verify_paths
    from cgplan.cli._console import colorize, note, output_format, use_color, width
    from cgplan.cli._output import one_stdout, write_artifacts
    from cgplan.cli._progress import RichSteps
    from cgplan.core.compare.verify import BuildComparison
    from cgplan.errors import ExitCode
    from cgplan.io.config import Overrides
    from cgplan.io.policies import load_capture_policy
    from cgplan.io.schema import dumps_ascii
    from cgplan.io.schema.verify import comparison_to_dict, verify_to_dict
    from cgplan.render.verify import (
        render_against,
        render_against_markdown,
        render_verify,
        render_verify_markdown,
    )

    chosen = output_format(fmt, ("table", "json", "markdown"), json_flag=json_out, markdown_flag=markdown)
    one_stdout([("-o", output), *(("--save", p) for p in save or [])], main_to_stdout=output is None)
    if fail_on_change and against is None:
        raise typer.BadParameter(
            "needs --against (a second build to compare with)", param_hint="--fail-on-change"
        )
    overrides = Overrides(model_config=model_config, platform=platform, model_runner=model_runner)
    pol = load_capture_policy(policy) if policy is not None else None
    with RichSteps(quiet) as progress:
        result = verify_paths(
            configs,
            python,
            against=against,
            vllm_version=vllm_version,
            overrides=overrides,
            policy=pol,
            timeout_s=timeout,
            jobs=jobs,
            progress=progress,
        )
    color = use_color(no_color, output)

    def text_of(form: str, color: bool = False) -> str:
        if isinstance(result, BuildComparison):
            if form == "json":
                return dumps_ascii(comparison_to_dict(result))
            if form == "markdown":
                return render_against_markdown(result)
            return colorize(render_against(result, width=width(color), color=color), color)
        if form == "json":
            return dumps_ascii(verify_to_dict(result))
        if form == "markdown":
            return render_verify_markdown(result)
        return colorize(render_verify(result, width=width(color), color=color), color)

    suffixes = {".json": "json", ".md": "markdown"}
    artifacts = [(text_of(chosen, color), output)]
    artifacts += [(text_of(suffixes.get(p.suffix, "table")), p) for p in save or []]
    write_artifacts(artifacts)
    if isinstance(result, BuildComparison):
        reports = [result.before, result.after]
        failed = fail_on_change and any(c.changed for c in result.changes)
    else:
        reports = [result]
        failed = not result.agree
    for r in reports:
        if r.rules_note:
            note(f"note: {r.rules_note}", quiet)
    if not all(r.answered for r in reports):
        missing = sum(v.no_answer is not None for r in reports for v in r.verdicts)
        note(f"{missing} config(s) got no answer from vLLM's code (see the table)", quiet)
        raise typer.Exit(int(ExitCode.ENVIRONMENT))
    if failed:
        raise typer.Exit(int(ExitCode.GATE_FAILED))
