"""Calibrations as JSON (`cgplan calibrate --json`): the fitted coefficients with each report's
prediction against its measurement; `--latency`'s fit of the step-latency model."""

from __future__ import annotations

from typing import Any

from cgplan.core.predict.calibrate import Calibration, LatencyCalibration, vllm_estimate
from cgplan.core.predict.cost_fit import FitCheck
from cgplan.io.cost_coefficients import coefficients_to_dict
from cgplan.io.latency_coefficients import latency_to_dict
from cgplan.io.schema import SCHEMA_VERSION


def check_to_dict(c: FitCheck) -> dict[str, object]:
    """One row of the calibration table as JSON."""
    est_mib, est_error = vllm_estimate(c)
    return {
        "report": c.name,
        "measured_mib": round(c.measured_mib, 1),
        "predicted_mib": round(c.predicted_mib, 1),
        "error": round(c.error, 4),
        "vllm_estimate_mib": est_mib,
        "vllm_estimate_error": est_error,
        "measured_capture_s": c.measured_capture_s,
        "predicted_capture_s": round(c.predicted_capture_s, 3),
    }


def calibration_to_dict(cal: Calibration) -> dict[str, Any]:
    """The calibration as JSON."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "calibration",
        "coefficients": coefficients_to_dict(cal.coefficients),
        "fit": [check_to_dict(c) for c in cal.fit],
        "held_out": [check_to_dict(c) for c in cal.held_out],
    }


def latency_calibration_to_dict(cal: LatencyCalibration) -> dict[str, Any]:
    """The latency model's fit as JSON (`cgplan calibrate --latency --json`)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "latency-calibration",
        "coefficients": latency_to_dict(cal.coefficients),
        "fit": {
            "points": cal.fit_points,
            "median_error": cal.fit_median_error,
            "within_10pct": cal.fit_within_10pct,
        },
        "held_out": {
            "points": cal.held_out_points,
            "median_error": cal.held_out_median_error,
            "within_10pct": cal.held_out_within_10pct,
        },
    }
