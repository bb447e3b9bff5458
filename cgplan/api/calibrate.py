"""`cgplan calibrate`: fit cost coefficients from capture reports, check them on held-out reports
(the reports read here; the result, core.calibrate.Calibration, is written by render/ and io/schema/)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from cgplan.core.predict.calibrate import Calibration, LatencyCalibration
from cgplan.core.predict.calibrate import calibrate_latency as fit_latency_runs
from cgplan.core.predict.cost_fit import CostObservation, FitError, check_coefficients, fit_coefficients
from cgplan.errors import ReportError
from cgplan.io.cost_coefficients import observation_from_report
from cgplan.io.reports import read_capture_report, read_fleet_report, read_report, report_kind

__all__ = ["Calibration", "LatencyCalibration", "calibrate", "calibrate_latency", "expand_reports"]


def expand_reports(paths: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """Capture reports from the paths given: a report as it is; an aggregate report of a
    multi-config capture (`fleet.json`) as the complete reports it lists; a folder as its
    aggregate if it has one, else its complete capture reports. Returns (reports, notes on what
    was left out of an aggregate or a folder).

    Raises:
        ReportError: a path that is missing, or not JSON.
    """
    from cgplan.api.fleet import AGGREGATE_NAME, iter_reports

    out: list[Path] = []
    notes: list[str] = []

    def from_aggregate(agg: Path) -> None:
        report = read_fleet_report(agg)
        listed = list(iter_reports(report, agg.parent))
        left = len(report.configs) - len(listed)
        if left:
            notes.append(f"{agg}: {left} config(s) without a complete report left out")
        out.extend(listed)

    for p in paths:
        if str(p) == "-":  # standard input: one capture report, as `-` is for every file read
            out.append(p)
        elif p.is_dir():
            agg = p / f"{AGGREGATE_NAME}.json"
            if agg.is_file():
                from_aggregate(agg)
                continue
            skipped = 0
            for q in sorted(p.glob("*.json")):
                try:
                    kind = report_kind(q)
                except ReportError:
                    skipped += 1
                    continue
                # a capture report that does not read is an error (as when named), not a skip
                report = read_capture_report(q) if kind == "capture" else None
                if report is not None and report.status == "complete" and report.measured.backend != "fake":
                    out.append(q)
                else:
                    skipped += 1
            if skipped:
                notes.append(f"{p}: {skipped} file(s) that are not complete capture reports left out")
        elif p.is_file():
            if report_kind(p) == "fleet":
                from_aggregate(p)
            else:
                out.append(p)
        else:
            raise ReportError(f"{p}: no such report or folder")
    return out, notes


def _observations(paths: Sequence[Path], configs: Path | None) -> list[CostObservation]:
    return [observation_from_report(read_report(p), p, configs) for p in paths]


def calibrate(
    fit_reports: Sequence[Path],
    test_reports: Sequence[Path],
    gpu: str,
    measured_with: str,
    configs: Path | None = None,
) -> Calibration:
    """Fit on `fit_reports`, then predict every `test_reports` capture with the result; each
    report's config (`source`) is read inside `configs` only (default: the working directory).

    Raises:
        ReportError: a report is unreadable, incomplete, or its config is not found; or the fit is
            underdetermined.
    """
    try:
        coeffs, fit = fit_coefficients(_observations(fit_reports, configs), gpu, measured_with)
    except FitError as e:
        names = ", ".join(str(p) for p in fit_reports[:3]) + (", ..." if len(fit_reports) > 3 else "")
        raise ReportError(f"{names}: cannot fit the cost model on these reports: {e}") from None
    held = check_coefficients(_observations(test_reports, configs), coeffs) if test_reports else ()
    return Calibration(coeffs, fit, held)


def calibrate_latency(
    runs: Sequence[Path], test: Sequence[Path], gpu: str, measured_with: str
) -> LatencyCalibration:
    """Fit the latency model to raw runs (scripts/latency/measure_step.py), starting from the shipped
    set; predict the held-out runs `test` (the fit is core.calibrate.calibrate_latency).

    Raises:
        ReportError: a run cannot be read or failed, or there is nothing to fit.
    """
    from cgplan.core.predict.calibrate import least_contended
    from cgplan.io.latency_coefficients import read_runs, shipped_latency

    obs = least_contended(read_runs(runs))
    if not obs:
        raise ReportError("no timed points in the given runs (expected lat-*.json from measure_step.py)")
    held = least_contended(read_runs(test)) if test else []
    start = dataclasses.replace(shipped_latency(), gpu=gpu, measured_with=measured_with)
    return fit_latency_runs(obs, held, start)
