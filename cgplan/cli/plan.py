"""`cgplan plan CONFIG` (or a `vllm serve` command line): what vLLM will capture and how every batch
dispatches, no GPU."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
    StrictOpt,
    VllmArgsOpt,
    VllmVersionOpt,
)
from cgplan.cli._plan_run import _vllm_argv, run_plan

__all__ = ["_vllm_argv", "plan"]


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
    brief: Annotated[
        bool,
        typer.Option("--brief", help="Only the verdict line (gaps, their cost, the best fix) and its flags."),
    ] = False,
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
    strict: StrictOpt = False,
) -> None:
    """Plan CUDA-graph capture for CONFIG (or a vllm serve command line) exactly as the chosen vLLM
    release would. CONFIG `-` reads the YAML from stdin."""
    run_plan(
        targets=targets,
        vllm_args=vllm_args,
        model_config=model_config,
        vllm_version=vllm_version,
        platform=platform,
        model_runner=model_runner,
        fmt=fmt,
        json_out=json_out,
        markdown=markdown,
        full=full,
        brief=brief,
        output=output,
        html=html,
        policy=policy,
        coefficients=coefficients,
        latency_coefficients=latency_coefficients,
        traffic=traffic,
        no_color=no_color,
        allow_over_budget=allow_over_budget,
        quiet=quiet,
        fail_on_gap=fail_on_gap,
        strict=strict,
    )
