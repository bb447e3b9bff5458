"""`cgplan calibrate REPORTS... -o coefficients.yaml`: fit the cost model from capture reports."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cgplan.api.calibrate import Calibration, expand_reports
from cgplan.api.calibrate import calibrate as run_calibrate
from cgplan.cli._options import FormatOpt, JsonOpt, MarkdownOpt, QuietOpt, finite_non_negative
from cgplan.cli._output import is_stdout, write_artifact, write_artifacts
from cgplan.io.cost_coefficients import coefficients_text
from cgplan.io.schema import dumps_ascii
from cgplan.io.schema.calibrate import calibration_to_dict, latency_calibration_to_dict
from cgplan.render.calibrate import (
    calibration_markdown,
    calibration_table,
    latency_calibration_markdown,
    latency_calibration_text,
)


def calibrate(
    reports: Annotated[
        list[Path],
        typer.Argument(
            help="Complete capture reports (cgplan capture --gpu -o) to fit on; an aggregate report "
            "(fleet.json) or a folder stands for the complete reports in it."
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Write the fitted coefficients here (JSON for a .json name, else YAML)."
        ),
    ] = None,
    test: Annotated[
        list[Path] | None,
        typer.Option(
            "--test",
            help="Held-out capture reports (or an aggregate, or a folder) to predict with the fit "
            "(repeatable).",
        ),
    ] = None,
    gpu: Annotated[str, typer.Option("--gpu", help="GPU the reports were measured on.")] = "H200",
    measured_with: Annotated[
        str, typer.Option("--measured-with", help="Software the reports were measured with, in words.")
    ] = "vLLM 0.26.0, torch 2.11.0, FLASH_ATTN (FA3)",
    max_error: Annotated[
        float | None,
        typer.Option(
            "--max-error",
            callback=finite_non_negative,
            help="Exit 1 when a held-out report is off by more than this many %.",
        ),
    ] = None,
    configs: Annotated[
        Path | None,
        typer.Option(
            "--configs",
            help="Folder the reports' configs (their `source`) are read from, and only from "
            "(default: the working directory).",
        ),
    ] = None,
    latency: Annotated[
        bool,
        typer.Option(
            "--latency",
            help="Fit the step-latency model instead: REPORTS are raw latency runs "
            "(lat-*.json of scripts/latency/measure_step.py, or folders of them); -o writes JSON.",
        ),
    ] = False,
    fmt: FormatOpt = None,
    json_out: JsonOpt = False,
    markdown: MarkdownOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Fit predicted graph-pool memory and capture time to measured captures (or, with --latency,
    step times to measured steps); check held-out ones."""
    from cgplan.cli._console import note, output_format

    chosen = output_format(fmt, ("table", "json", "markdown"), json_flag=json_out, markdown_flag=markdown)
    if latency:
        _calibrate_latency(reports, output, test or [], gpu, measured_with, max_error, chosen, quiet)
        return
    fit_paths, notes = expand_reports(reports)
    test_paths, test_notes = expand_reports(test or [])
    for line in (*notes, *test_notes):
        note(line, quiet)
    cal = run_calibrate(fit_paths, test_paths, gpu, measured_with, configs)
    if chosen == "json":
        table = dumps_ascii(calibration_to_dict(cal))
    elif chosen == "markdown":
        table = calibration_markdown(cal)
    else:
        table = calibration_table(cal)
    if output is None:
        write_artifact(table, None)
    elif str(output) == "-":  # `-o -`: the coefficients are the output; the table goes to stderr
        write_artifact(coefficients_text(cal.coefficients, json_out), None)
        sys.stderr.write(table)
    else:
        as_json = output.suffix.lower() == ".json"
        if is_stdout(output):
            # `-o -`: stdout is the coefficients (a file a pipe can keep), the table goes to stderr.
            write_artifact(coefficients_text(cal.coefficients, as_json), output)
            if not quiet:
                sys.stderr.write(table)
            _check_held_out(cal, max_error)
            return
        write_artifacts([(coefficients_text(cal.coefficients, as_json), output), (table, None)])
        if str(output) != "-":
            note(f"coefficients written to {output}", quiet)
    _check_held_out(cal, max_error)


def _check_held_out(cal: Calibration, max_error: float | None) -> None:
    """--max-error: exit 1 when a held-out report is off by more than that many %."""
    if max_error is not None and any(abs(c.error) * 100 > max_error for c in cal.held_out):
        raise typer.Exit(1)


def _calibrate_latency(
    runs: list[Path],
    output: Path | None,
    test: list[Path],
    gpu: str,
    measured_with: str,
    max_error: float | None,
    chosen: str,
    quiet: bool,
) -> None:

    from cgplan.api.calibrate import calibrate_latency
    from cgplan.cli._console import note
    from cgplan.io.latency_coefficients import save_latency

    cal = calibrate_latency(runs, test, gpu, measured_with)
    if output is not None:
        save_latency(cal.coefficients, output)
        if str(output) != "-":
            note(f"latency coefficients written to {output}", quiet)
    if chosen == "json":
        text = dumps_ascii(latency_calibration_to_dict(cal))
    elif chosen == "markdown":
        text = latency_calibration_markdown(cal)
    else:
        text = latency_calibration_text(cal)
    if output is not None and is_stdout(output):
        if not quiet:  # stdout holds the coefficients (`-o -`): the summary goes to stderr
            sys.stderr.write(text)
    else:
        write_artifact(text, None)
    if max_error is not None and cal.held_out_points and cal.held_out_median_error * 100 > max_error:
        raise typer.Exit(1)
