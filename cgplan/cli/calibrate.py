"""`cgplan calibrate REPORTS... -o coefficients.yaml`: fit the cost model from capture reports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cgplan.cli._options import FormatOpt, JsonOpt, QuietOpt


def calibrate(
    reports: Annotated[
        list[Path], typer.Argument(help="Complete capture reports (cgplan capture --gpu -o) to fit on.")
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Write the fitted coefficients here (JSON for a .json name, else YAML)."
        ),
    ] = None,
    test: Annotated[
        list[Path] | None,
        typer.Option("--test", help="Held-out capture reports to predict with the fit (repeatable)."),
    ] = None,
    gpu: Annotated[str, typer.Option("--gpu", help="GPU the reports were measured on.")] = "H200",
    measured_with: Annotated[
        str, typer.Option("--measured-with", help="Software the reports were measured with, in words.")
    ] = "vLLM 0.26.0, torch 2.11.0, FLASH_ATTN (FA3)",
    max_error: Annotated[
        float | None,
        typer.Option("--max-error", help="Exit 1 when a held-out report is off by more than this many %."),
    ] = None,
    configs: Annotated[
        Path | None,
        typer.Option(
            "--configs",
            help="Folder the reports' configs (their `source`) are read from, and only from "
            "(default: the working directory).",
        ),
    ] = None,
    fmt: FormatOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Fit predicted graph-pool memory and capture time to measured captures; check held-out ones."""
    from cgplan.calibrating import calibrate as run_calibrate
    from cgplan.calibrating import calibration_json, calibration_table
    from cgplan.cli._console import note, output_format
    from cgplan.cli._output import write_artifact, write_artifacts
    from cgplan.costs import coefficients_text

    chosen = output_format(fmt, ("table", "json"), json_flag=json_out)
    cal = run_calibrate(reports, test or [], gpu, measured_with, configs)
    table = calibration_json(cal) if chosen == "json" else calibration_table(cal)
    if output is None:
        write_artifact(table, None)
    else:
        as_json = output.suffix.lower() == ".json"
        write_artifacts([(coefficients_text(cal.coefficients, as_json), output), (table, None)])
        note(f"coefficients written to {output}", quiet)
    if max_error is not None and any(abs(c.error) * 100 > max_error for c in cal.held_out):
        raise typer.Exit(1)
