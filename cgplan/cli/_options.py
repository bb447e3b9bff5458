"""Option aliases shared by the commands (typer `Annotated` style)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ConfigArg = Annotated[
    Path,
    typer.Argument(
        help="vLLM serve config (YAML, as for `vllm serve --config`) with an optional cgplan: section.",
        show_default=False,
    ),
]
VllmVersionOpt = Annotated[
    str | None,
    typer.Option(
        "--vllm-version", help="vLLM release whose rules apply (default: the config's, else newest)."
    ),
]
PlatformOpt = Annotated[
    str | None,
    typer.Option(
        "--platform", help="hopper, blackwell, ampere, rtx-blackwell, or a GPU name (H200, B200...)."
    ),
]
ModelRunnerOpt = Annotated[
    str | None, typer.Option("--model-runner", help="auto, v1 or v2 (VLLM_USE_V2_MODEL_RUNNER).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (schema_version 1).")]
MarkdownOpt = Annotated[bool, typer.Option("--markdown", help="Print markdown for a PR comment.")]
OutputOpt = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Write the artifact to this file (atomically) instead of stdout."),
]
NoColorOpt = Annotated[
    bool, typer.Option("--no-color", help="Plain text, no colour (also NO_COLOR=1 or a non-TTY).")
]
ConfigOrVllmArgsArg = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="CONFIG | -- serve MODEL [FLAGS...]",
        help="vLLM serve config (YAML, as for `vllm serve --config`) with an optional cgplan: section; "
        "or, after `--`, a `vllm serve` command line read as vLLM reads it.",
        show_default=False,
    ),
]
VllmArgsOpt = Annotated[
    str | None,
    typer.Option(
        "--vllm-args",
        help="A `vllm serve` command line as one string (instead of CONFIG), "
        'e.g. "serve MODEL --max-num-seqs 32 -cc.cudagraph_mode=FULL_DECODE_ONLY".',
        show_default=False,
    ),
]
ModelConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--model-config",
        help="The model's Hugging Face config.json (or its folder), for a hub model id in the config's "
        "model: or MODEL (also cgplan.model_config in the YAML).",
        show_default=False,
    ),
]
HtmlOpt = Annotated[
    Path | None,
    typer.Option(
        "--html", help="Also write a self-contained HTML report (SVG coverage charts) to this file."
    ),
]
PolicyOpt = Annotated[
    str | None,
    typer.Option(
        "--policy",
        help="What-if capture policy: upstream (default), sparse-pow2-drafter-prefill, "
        "uncapped-uniform-decode, explicit-max-keeps-decode, or a policy YAML file.",
    ),
]
