"""Option aliases shared by the commands (typer `Annotated` style)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def _complete_versions(incomplete: str) -> list[str]:
    """Shell completion for --vllm-version: the releases cgplan has rules for."""
    from cgplan.core.vllm.releases import SUPPORTED_VERSIONS

    return [v for v in SUPPORTED_VERSIONS if v.startswith(incomplete)]


def _complete_platforms(incomplete: str) -> list[str]:
    """Shell completion for --platform: the families, then the GPU names cgplan maps to them."""
    from cgplan.core.model.modes import Platform
    from cgplan.core.vllm.gpus import GPUS

    names = [p.value for p in Platform] + [g.name.replace(" ", "-") for g in GPUS if g.platform is not None]
    return [n for n in names if n.lower().startswith(incomplete.lower())]


def finite_non_negative(value: float | None) -> float | None:
    """typer callback for a number option: NaN, infinity and negative numbers are refused by the
    option's name (click reads `nan` and `inf` as floats; NaN compares false with everything, so
    `--max-error nan` could never fail and `--eager-step-cost nan` priced every ladder alike)."""
    import math

    if value is not None and (not math.isfinite(value) or value < 0):
        raise typer.BadParameter(f"expected a finite number >= 0 (got {value})")
    return value


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
        "--vllm-version",
        help="vLLM release whose rules apply (default: the config's, else newest); 0.33, v0.33.0 and "
        "patch releases (0.33.1) are read as their release.",
        autocompletion=_complete_versions,
    ),
]
PlatformOpt = Annotated[
    str | None,
    typer.Option(
        "--platform",
        help="hopper, blackwell, ampere, rtx-blackwell, rtx-5090, gb10, or a GPU name (H200, B200, L40S, "
        "RTX PRO 6000, RTX 5090, GB10...).",
        autocompletion=_complete_platforms,
    ),
]
ModelRunnerOpt = Annotated[
    str | None, typer.Option("--model-runner", help="auto, v1 or v2 (VLLM_USE_V2_MODEL_RUNNER).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (schema_version 1); = --format json.")]
MarkdownOpt = Annotated[
    bool, typer.Option("--markdown", help="Print markdown for a PR comment; = --format markdown.")
]


def _complete_formats(incomplete: str) -> list[str]:
    return [f for f in ("table", "json", "markdown", "html") if f.startswith(incomplete)]


FormatOpt = Annotated[
    str | None,
    typer.Option(
        "--format",
        help="Output format: table (default), json, markdown or html (those this command has).",
        autocompletion=_complete_formats,
        show_default=False,
    ),
]
StrictOpt = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Refuse a vllm serve flag or key cgplan does not model (set away from vLLM's default) "
        "instead of planning without it with a note.",
    ),
]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="No informational lines on stderr (notes, files written).")
]
OutputOpt = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Write the artifact to this file (atomically) instead of stdout."),
]
NoColorOpt = Annotated[
    bool, typer.Option("--no-color", help="Plain text, no colour (also NO_COLOR=1 or when not a terminal).")
]
ConfigOrVllmArgsArg = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="CONFIG | -- serve MODEL [FLAGS...]",
        help="vLLM serve config (YAML, as for `vllm serve --config`) with an optional cgplan: section, "
        "a Kubernetes manifest of a vLLM container, or a list of its args; or, after `--`, a `vllm serve` "
        "(or `docker run ... vllm/vllm-openai ...`) command line read as vLLM reads it.",
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
