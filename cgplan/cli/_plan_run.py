"""The body of `cgplan plan`, without typer: the command (`cgplan/cli/plan.py`) and the start-up
fast path of `cgplan plan FILE [--json]` (`cgplan.cli.main`) both run it, so their output and
errors are one and the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

_ONE_INPUT = "give exactly one of CONFIG, --vllm-args '...' and -- serve MODEL [FLAGS...]"


def _vllm_argv(targets: list[str], vllm_args: str | None) -> tuple[Path | None, list[str] | None]:
    """CONFIG, or the `vllm serve` command line (from --vllm-args, or everything after `--`)."""
    if vllm_args is not None:
        from cgplan.io.vllm_args import split_vllm_args

        if targets:
            raise _bad(_ONE_INPUT)
        return None, split_vllm_args(vllm_args)
    if not targets:
        raise _bad(_ONE_INPUT)
    first = targets[0]
    if len(targets) == 1 and first not in ("serve", "vllm") and (first == "-" or not first.startswith("-")):
        return Path(first), None
    return None, targets


def _bad(message: str) -> Exception:
    import typer

    return typer.BadParameter(message)


def run_plan(
    targets: list[str] | None = None,
    vllm_args: str | None = None,
    model_config: Path | None = None,
    vllm_version: str | None = None,
    platform: str | None = None,
    model_runner: str | None = None,
    fmt: str | None = None,
    json_out: bool = False,
    markdown: bool = False,
    full: bool = False,
    output: Path | None = None,
    html: Path | None = None,
    policy: str | None = None,
    coefficients: Path | None = None,
    latency_coefficients: Path | None = None,
    traffic: Path | None = None,
    no_color: bool = False,
    allow_over_budget: bool = False,
    quiet: bool = False,
    fail_on_gap: bool = False,
    strict: bool = False,
    brief: bool = False,
) -> None:
    """`cgplan plan` with its options as values (see `cgplan.cli.plan.plan`).

    Raises:
        typer.BadParameter, typer.Exit: usage errors; exit 1 with --fail-on-gap and gaps.
        CgplanError: bad input.
    """
    # Imported here, not at module level: `cgplan --help` and the other commands do not pay for them.
    from cgplan.api.plan import plan as plan_config
    from cgplan.cli._console import note, output_format, use_color, width
    from cgplan.cli._output import one_stdout, write_artifacts
    from cgplan.errors import ExitCode
    from cgplan.io.config import Overrides

    chosen = output_format(
        fmt, ("table", "json", "markdown", "html"), json_flag=json_out, markdown_flag=markdown
    )
    if brief and chosen != "table":
        raise _bad(f"--brief is the text verdict; it has no {chosen} form (drop --brief or the format)")
    one_stdout([("-o", output), ("--html", html)], main_to_stdout=output is None)
    config, argv = _vllm_argv(list(targets or []), vllm_args)
    overrides = Overrides(
        vllm_version, platform, model_runner, model_config if argv is None else None, strict
    )
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
            r.plan,
            source=r.source,
            ignored_keys=r.loaded.ignored_keys,
            fingerprint=r.fingerprint,
            unmodelled=r.loaded.unmodelled,
        )

    def page() -> str:
        from cgplan.io.schema.reports import plan_from_json
        from cgplan.render.html import plan_html

        return plan_html(plan_from_json(doc(), str(r.source), check=False))

    if chosen == "json":
        from cgplan.io.schema import dumps

        text = dumps(doc())
    elif chosen == "html":
        text = page()
    elif brief:
        from cgplan.render.plan import render_brief

        text = render_brief(r.plan, width=width(color), color=color)
    else:
        from cgplan.render import OutputFormat, render

        text = render(
            r.plan, OutputFormat(chosen), source=r.source, full=full, width=width(color), color=color
        )
    artifacts = [(text, output)]
    if html is not None:
        artifacts.append((page(), html))
    write_artifacts(artifacts)
    pol, loaded = r.policy, r.loaded
    if pol.name != "upstream" and chosen == "table":
        note(f"policy {pol.name}: {pol.description}", quiet)
    for line in loaded.notes:
        note(f"note: {line}", quiet)
    if loaded.ignored_keys and chosen == "table":
        note(f"note: keys that do not change capture, ignored: {', '.join(loaded.ignored_keys)}", quiet)
    if fail_on_gap and r.plan.gaps:
        import typer

        raise typer.Exit(int(ExitCode.GATE_FAILED))
