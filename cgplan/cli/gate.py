"""`cgplan gate TARGET...`: hold configs or reports against a policy; exit 0 pass, 1 fail, 2 bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from cgplan.cli._output import is_stdout, write_artifacts
from cgplan.errors import ExitCode
from cgplan.gating import gate_targets, policy_to_dict
from cgplan.render.compare import gate_to_dict, render_gate, render_gate_markdown, render_junit


def gate(
    targets: Annotated[
        list[Path], typer.Argument(help="Configs (YAML) or reports (JSON) to judge.", show_default=False)
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
    vllm_version: Annotated[str | None, typer.Option("--vllm-version", help="Release for configs.")] = None,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write the verdict JSON here ('-' = stdout).")
    ] = None,
    markdown_path: Annotated[
        Path | None, typer.Option("--markdown", help="Write a markdown verdict here ('-' = stdout).")
    ] = None,
    junit_path: Annotated[
        Path | None, typer.Option("--junit", help="Write JUnit XML here ('-' = stdout).")
    ] = None,
) -> None:
    """Judge targets against a policy: eager decode, FULL widest batches, graph/memory limits, regressions."""
    results, pol = gate_targets(
        targets, policy, baseline, vllm_version, allow_partial_baseline=allow_partial_baseline
    )
    verdict = gate_to_dict(results, policy_to_dict(pol))
    text = json.dumps(verdict, indent=2, sort_keys=True) + "\n"
    artifacts = [
        (text, json_path),
        (render_gate_markdown(results), markdown_path),
        (render_junit(results), junit_path),
    ]
    named = [(t, p) for t, p in artifacts if p is not None]
    human = render_gate(results)
    if any(is_stdout(p) for _, p in named):
        sys.stderr.write(human)  # stdout carries the artifact given as '-'
        write_artifacts(named)
    else:
        write_artifacts([(human, None), *named])
    if not verdict["passed"]:
        raise typer.Exit(int(ExitCode.GATE_FAILED))
