"""`cgplan calibrate`: fit cost coefficients from capture reports, check them on held-out reports."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cgplan.core.cost import CostCoefficients, FitCheck, FitError, check_coefficients, fit_coefficients
from cgplan.costs import observation_from_report
from cgplan.errors import ReportError
from cgplan.reports import read_report


@dataclass(frozen=True)
class Calibration:
    """Fitted coefficients with each report's prediction against its measurement."""

    coefficients: CostCoefficients
    fit: tuple[FitCheck, ...]
    held_out: tuple[FitCheck, ...]


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
        raise ReportError(f"cannot fit the cost model: {e}") from None
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


def calibration_json(cal: Calibration) -> str:
    """The calibration as JSON."""
    from cgplan.costs import coefficients_to_dict
    from cgplan.render.json import SCHEMA_VERSION

    doc = {
        "schema_version": SCHEMA_VERSION,
        "kind": "calibration",
        "coefficients": coefficients_to_dict(cal.coefficients),
        "fit": [check_to_dict(c) for c in cal.fit],
        "held_out": [check_to_dict(c) for c in cal.held_out],
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"
