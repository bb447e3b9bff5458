"""`cgplan calibrate`: fit cost coefficients from capture reports, check them on held-out reports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cgplan.core.cost import CostCoefficients, FitCheck, FitError, check_coefficients, fit_coefficients
from cgplan.errors import ReportError
from cgplan.io.cost_coefficients import observation_from_report
from cgplan.io.reports import read_report


@dataclass(frozen=True)
class Calibration:
    """Fitted coefficients with each report's prediction against its measurement."""

    coefficients: CostCoefficients
    fit: tuple[FitCheck, ...]
    held_out: tuple[FitCheck, ...]


def expand_reports(paths: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """Capture reports from the paths given: a report as it is; an aggregate report of a
    multi-config capture (`fleet.json`) as the complete reports it lists; a folder as its
    aggregate if it has one, else its complete capture reports. Returns (reports, notes on what
    was left out of an aggregate or a folder).

    Raises:
        ReportError: a path that is missing, or not JSON.
    """
    from cgplan.api.fleet import AGGREGATE_NAME, iter_reports, read_json

    out: list[Path] = []
    notes: list[str] = []

    def from_aggregate(agg: Path, doc: dict[str, object]) -> None:
        listed = list(iter_reports(doc, agg.parent))
        rows = doc.get("configs")
        left = (len(rows) if isinstance(rows, list) else 0) - len(listed)
        if left:
            notes.append(f"{agg}: {left} config(s) without a complete report left out")
        out.extend(listed)

    for p in paths:
        if str(p) == "-":  # standard input: one capture report, as `-` is for every file read
            out.append(p)
        elif p.is_dir():
            agg = p / f"{AGGREGATE_NAME}.json"
            if agg.is_file():
                from_aggregate(agg, read_json(agg))
                continue
            skipped = 0
            for q in sorted(p.glob("*.json")):
                try:
                    doc = read_json(q)
                except ReportError:
                    skipped += 1
                    continue
                measured = doc.get("measured")
                backend = measured.get("backend") if isinstance(measured, dict) else None
                if doc.get("kind") == "capture" and doc.get("status") == "complete" and backend != "fake":
                    out.append(q)
                else:
                    skipped += 1
            if skipped:
                notes.append(f"{p}: {skipped} file(s) that are not complete capture reports left out")
        elif p.is_file():
            doc = read_json(p)
            if doc.get("kind") == "fleet":
                from_aggregate(p, doc)
            else:
                out.append(p)
        else:
            raise ReportError(f"{p}: no such report or folder")
    return out, notes


def _observations(paths: Sequence[Path], configs: Path | None) -> list:  # type: ignore[type-arg]
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


def check_to_dict(c: FitCheck) -> dict[str, object]:
    """One row of the calibration table as JSON."""
    est = c.vllm_estimate_gib
    return {
        "report": c.name,
        "measured_mib": round(c.measured_mib, 1),
        "predicted_mib": round(c.predicted_mib, 1),
        "error": round(c.error, 4),
        "vllm_estimate_mib": round(est * 1024, 1) if est is not None else None,
        "vllm_estimate_error": round((est * 1024 - c.measured_mib) / c.measured_mib, 4)
        if est is not None and c.measured_mib
        else None,
        "measured_capture_s": c.measured_capture_s,
        "predicted_capture_s": round(c.predicted_capture_s, 3),
    }


def calibration_table(cal: Calibration) -> str:
    """Plain-text table: each report's measured and predicted capture memory, and vLLM's estimate."""
    lines = [
        f"{'set':5} {'report':40} {'measured':>9} {'predicted':>10} {'error':>7} "
        f"{'vLLM est.':>10} {'its error':>9} {'capture s':>9} {'pred. s':>8}"
    ]
    for label, rows in (("fit", cal.fit), ("test", cal.held_out)):
        for c in rows:
            d = check_to_dict(c)
            est = d["vllm_estimate_mib"]
            est_err = d["vllm_estimate_error"]
            lines.append(
                f"{label:5} {c.name[:40]:40} {c.measured_mib:>6.0f} MiB {c.predicted_mib:>6.0f} MiB "
                f"{100 * c.error:>+6.1f}% "
                + (
                    f"{est:>6.0f} MiB {100 * est_err:>+8.1f}% "
                    if isinstance(est, float) and isinstance(est_err, float)
                    else f"{'-':>10} {'-':>9} "
                )
                + f"{c.measured_capture_s if c.measured_capture_s is not None else float('nan'):>9.2f} "
                f"{c.predicted_capture_s:>8.2f}"
            )
    if cal.held_out:
        worst = max(abs(c.error) for c in cal.held_out)
        lines.append(f"held-out: {len(cal.held_out)} reports, worst error {100 * worst:.1f}%")
    lo, hi = cal.coefficients.band_ratio
    lines.append(f"band shown with predictions: measured/predicted within {lo:.3f}..{hi:.3f} on the fit")
    return "\n".join(lines) + "\n"


def calibration_markdown(cal: Calibration) -> str:
    """The calibration table as markdown (a PR comment): the same rows and figures as the table."""

    def cell(x: object, fmt: str) -> str:
        return format(x, fmt) if isinstance(x, float) else "-"

    lines = [
        "| set | report | measured MiB | predicted MiB | error | vLLM est. MiB | its error "
        "| capture s | pred. s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, rows in (("fit", cal.fit), ("test", cal.held_out)):
        for c in rows:
            d = check_to_dict(c)
            est_err = d["vllm_estimate_error"]
            lines.append(
                f"| {label} | `{c.name}` | {c.measured_mib:.0f} | {c.predicted_mib:.0f} "
                f"| {100 * c.error:+.1f}% "
                f"| {cell(d['vllm_estimate_mib'], '.0f')} "
                f"| {format(100 * est_err, '+.1f') + '%' if isinstance(est_err, float) else '-'} "
                f"| {cell(c.measured_capture_s, '.2f')} | {c.predicted_capture_s:.2f} |"
            )
    lines.append("")
    if cal.held_out:
        worst = max(abs(c.error) for c in cal.held_out)
        lines.append(f"Held out: {len(cal.held_out)} reports, worst error {100 * worst:.1f}%.")
    lo, hi = cal.coefficients.band_ratio
    lines.append(f"Band shown with predictions: measured/predicted within {lo:.3f}..{hi:.3f} on the fit.")
    return "\n".join(lines) + "\n"


def calibration_json(cal: Calibration) -> str:
    """The calibration as JSON."""
    from cgplan.io.cost_coefficients import coefficients_to_dict
    from cgplan.io.schema import SCHEMA_VERSION, dumps_ascii

    doc = {
        "schema_version": SCHEMA_VERSION,
        "kind": "calibration",
        "coefficients": coefficients_to_dict(cal.coefficients),
        "fit": [check_to_dict(c) for c in cal.fit],
        "held_out": [check_to_dict(c) for c in cal.held_out],
    }
    return dumps_ascii(doc)
