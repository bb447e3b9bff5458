"""`cgplan gate TARGET...`: hold configs or reports against a policy; exit 0 pass, 1 fail, 2 bad input."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cgplan.cli._options import (
    FormatOpt,
    ModelConfigOpt,
    ModelRunnerOpt,
    NoColorOpt,
    PlatformOpt,
    QuietOpt,
    StrictOpt,
    VllmVersionOpt,
)


def gate(
    targets: Annotated[
        list[Path],
        typer.Argument(help="Configs (YAML; - reads stdin) or reports (JSON) to judge.", show_default=False),
    ],
    policy: Annotated[
        Path | None,
        typer.Option("--policy", help="Policy YAML (default: configs/gates/default.yaml's rules)."),
    ] = None,
    baseline: Annotated[
        Path | None, typer.Option("--baseline", help="Config or report to check for regressions against.")
    ] = None,
    allow_partial_baseline: Annotated[
        bool,
        typer.Option(
            "--allow-partial-baseline",
            help="Accept a partial or failed capture as the baseline (compare against what it has).",
        ),
    ] = False,
    vllm_version: VllmVersionOpt = None,
    fmt: FormatOpt = None,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write the verdict JSON here ('-' = stdout).")
    ] = None,
    markdown_path: Annotated[
        Path | None, typer.Option("--markdown", help="Write a markdown verdict here ('-' = stdout).")
    ] = None,
    junit_path: Annotated[
        Path | None, typer.Option("--junit", help="Write JUnit XML here ('-' = stdout).")
    ] = None,
    model_config: ModelConfigOpt = None,
    platform: PlatformOpt = None,
    model_runner: ModelRunnerOpt = None,
    no_color: NoColorOpt = False,
    quiet: QuietOpt = False,
    strict: StrictOpt = False,
    brief: Annotated[
        bool, typer.Option("--brief", help="The verdict line and one line per target, without the checks.")
    ] = False,
) -> None:
    """Judge targets against a policy: eager decode, FULL widest batches, graph/memory limits, regressions.

    Under GitHub Actions (GITHUB_ACTIONS=true) each failed check is also an `::error file=...::`
    annotation."""
    from cgplan.api.gate import annotation_line, gate_targets
    from cgplan.cli._console import github_annotations, note, output_format, use_color, width
    from cgplan.cli._output import is_stdout, one_stdout, write_artifacts
    from cgplan.errors import ExitCode
    from cgplan.io.schema import dumps_ascii
    from cgplan.io.schema.gate import gate_to_dict, policy_to_dict
    from cgplan.render.gate import render_gate, render_gate_markdown, render_junit

    chosen = output_format(fmt, ("table", "json", "markdown"))
    one_stdout(
        [("--json", json_path), ("--markdown", markdown_path), ("--junit", junit_path)],
        main_to_stdout=chosen != "table",
    )
    notes: list[str] = []
    results, pol = gate_targets(
        targets,
        policy,
        baseline,
        vllm_version,
        model_config,
        allow_partial_baseline=allow_partial_baseline,
        notes=notes,
        platform=platform,
        model_runner=model_runner,
        strict=strict,
    )
    for line in notes:
        note(f"note: {line}", quiet)
    verdict = gate_to_dict(results, policy_to_dict(pol))
    text = dumps_ascii(verdict)
    artifacts = [
        (text, json_path),
        (render_gate_markdown(results), markdown_path),
        (render_junit(results), junit_path),
    ]
    named: list[tuple[str, Path | None]] = [(t, p) for t, p in artifacts if p is not None]
    if chosen != "table":  # --format json|markdown: that verdict on stdout
        named.append((text if chosen == "json" else render_gate_markdown(results), None))
    to_stdout = chosen != "table" or any(is_stdout(p) for _, p in named)
    if to_stdout:  # stdout carries the machine-readable verdict; the human one goes to stderr
        if not quiet:
            err_color = use_color(no_color, stream=sys.stderr)
            sys.stderr.write(
                render_gate(results, width=width(err_color, sys.stderr), color=err_color, brief=brief)
            )
        write_artifacts(named)
    else:
        color = use_color(no_color)
        write_artifacts([(render_gate(results, width=width(color), color=color, brief=brief), None), *named])
    github_annotations(
        (
            (r.target, annotation_line(t, c.name, r.fix), f"cgplan gate: {c.name}", c.detail)
            for r, t in zip(results, targets, strict=True)
            for c in r.checks
            if not c.passed and not c.skipped
        ),
        to_stderr=to_stdout,
    )
    if not verdict["passed"]:
        raise typer.Exit(int(ExitCode.GATE_FAILED))
