"""`cgplan plan CONFIG` (or a `vllm serve` command line): what vLLM will capture and how every batch
dispatches, no GPU."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cgplan.cli._options import (
    ConfigOrVllmArgsArg,
    FormatOpt,
    HtmlOpt,
    JsonOpt,
    MarkdownOpt,
    ModelConfigOpt,
    ModelRunnerOpt,
    NoColorOpt,
    OutputOpt,
    PlatformOpt,
    PolicyOpt,
    QuietOpt,
    VllmArgsOpt,
    VllmVersionOpt,
)

_ONE_INPUT = "give exactly one of CONFIG, --vllm-args '...' and -- serve MODEL [FLAGS...]"


def _vllm_argv(targets: list[str], vllm_args: str | None) -> tuple[Path | None, list[str] | None]:
    """CONFIG, or the `vllm serve` command line (from --vllm-args, or everything after `--`)."""
    if vllm_args is not None:
        from cgplan.io.vllm_args import split_vllm_args

        if targets:
            raise typer.BadParameter(_ONE_INPUT)
        return None, split_vllm_args(vllm_args)
    if not targets:
        raise typer.BadParameter(_ONE_INPUT)
    first = targets[0]
    if len(targets) == 1 and first not in ("serve", "vllm") and (first == "-" or not first.startswith("-")):
        return Path(first), None
    return None, targets


def plan(
    targets: ConfigOrVllmArgsArg = None,
    vllm_args: VllmArgsOpt = None,
    model_config: ModelConfigOpt = None,
    vllm_version: VllmVersionOpt = None,
    platform: PlatformOpt = None,
    model_runner: ModelRunnerOpt = None,
    fmt: FormatOpt = None,
    json_out: JsonOpt = False,
    markdown: MarkdownOpt = False,
    full: Annotated[bool, typer.Option("--full", help="One row per distinct graph, not ranges.")] = False,
    output: OutputOpt = None,
    html: HtmlOpt = None,
    policy: PolicyOpt = None,
    coefficients: Annotated[
        Path | None,
        typer.Option(
            "--coefficients",
            help="Cost-model coefficients (cgplan calibrate -o; default: the shipped H200 set).",
        ),
    ] = None,
    latency_coefficients: Annotated[
        Path | None,
        typer.Option(
            "--latency-coefficients",
            help="Step-latency coefficients (cgplan calibrate --latency -o; default: the shipped H200 set).",
        ),
    ] = None,
    traffic: Annotated[
        Path | None,
        typer.Option(
            "--traffic",
            help="Traffic histogram for the expected step time (default: every decode batch size once).",
        ),
    ] = None,
    no_color: NoColorOpt = False,
    allow_over_budget: Annotated[
        bool,
        typer.Option(
            "--allow-over-budget",
            help="Also offer fixes that break the default gate's budgets (each says which).",
        ),
    ] = False,
    quiet: QuietOpt = False,
    fail_on_gap: Annotated[
        bool,
        typer.Option("--fail-on-gap", help="Exit 1 when a uniform-decode batch runs eager or below FULL."),
    ] = False,
) -> None:
    """Plan CUDA-graph capture for CONFIG (or a vllm serve command line) exactly as the chosen vLLM
    release would. CONFIG `-` reads the YAML from stdin."""
    # Imported here, not at module level: `cgplan --help` and the other commands do not pay for them.
    from cgplan.api.plan import plan as plan_config
    from cgplan.cli._console import note, output_format, use_color, width
    from cgplan.cli._output import one_stdout, write_artifacts
    from cgplan.errors import ExitCode
    from cgplan.io.config import Overrides

    chosen = output_format(
        fmt, ("table", "json", "markdown", "html"), json_flag=json_out, markdown_flag=markdown
    )
    one_stdout([("-o", output), ("--html", html)], main_to_stdout=output is None)
    config, argv = _vllm_argv(list(targets or []), vllm_args)
    overrides = Overrides(vllm_version, platform, model_runner, model_config if argv is None else None)
    r = plan_config(
        config,
        argv,
        overrides,
        model_config=model_config,
        policy=policy,
        coefficients=coefficients,
        latency_coefficients=latency_coefficients,
        traffic=traffic,
        allow_over_budget=allow_over_budget,
    )
    color = use_color(no_color, output)

    def doc() -> dict[str, Any]:
        from cgplan.io.schema.plan import plan_to_dict

        return plan_to_dict(
            r.plan, source=r.source, ignored_keys=r.loaded.ignored_keys, fingerprint=r.fingerprint
        )

    if chosen == "json":
        from cgplan.io.schema import dumps

        text = dumps(doc())
    elif chosen == "html":
        from cgplan.render.html import plan_html

        text = plan_html(doc())
    else:
        from cgplan.render import OutputFormat, render

        text = render(
            r.plan, OutputFormat(chosen), source=r.source, full=full, width=width(color), color=color
        )
    artifacts = [(text, output)]
    if html is not None:
        from cgplan.render.html import plan_html

        artifacts.append((plan_html(doc()), html))
    write_artifacts(artifacts)
    pol, loaded = r.policy, r.loaded
    if pol.name != "upstream" and chosen == "table":
        note(f"policy {pol.name}: {pol.description}", quiet)
    for line in loaded.notes:
        note(f"note: {line}", quiet)
    if loaded.ignored_keys and chosen == "table":
        note(f"note: keys that do not change capture, ignored: {', '.join(loaded.ignored_keys)}", quiet)
    if fail_on_gap and r.plan.gaps:
        raise typer.Exit(int(ExitCode.GATE_FAILED))
