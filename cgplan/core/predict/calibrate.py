"""Calibration results: the cost model fitted on capture reports and checked on held-out ones
(`Calibration`), and the latency model fitted on timed runs (`LatencyCalibration`). api/calibrate.py
reads the reports; render/calibrate.py and io/schema/calibrate.py write these out."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from cgplan.core.predict.cost import CostCoefficients, FitCheck
from cgplan.core.predict.latency import LatencyCoefficients, LatencyObservation, errors, fit_latency


@dataclass(frozen=True)
class Calibration:
    """Fitted coefficients with each report's prediction against its measurement."""

    coefficients: CostCoefficients
    fit: tuple[FitCheck, ...]
    held_out: tuple[FitCheck, ...]


@dataclass(frozen=True)
class LatencyCalibration:
    """A user's fit of the latency model and how well it predicts."""

    coefficients: LatencyCoefficients
    fit_points: int
    fit_median_error: float
    fit_within_10pct: float
    held_out_points: int
    held_out_median_error: float
    held_out_within_10pct: float


def vllm_estimate(c: FitCheck) -> tuple[float | None, float | None]:
    """vLLM's own estimate of the graph memory of one report (MiB, rounded to 0.1) and its relative
    error against the measurement (rounded to 1e-4), as the JSON states them: the table prints
    these rounded figures too, so the two never disagree in a last digit."""
    est = c.vllm_estimate_gib
    if est is None:
        return None, None
    mib = round(est * 1024, 1)
    error = round((est * 1024 - c.measured_mib) / c.measured_mib, 4) if c.measured_mib else None
    return mib, error


def calibrate_latency(
    fit: Sequence[LatencyObservation], held_out: Sequence[LatencyObservation], start: LatencyCoefficients
) -> LatencyCalibration:
    """Fit the latency model to `fit` (at least one point), starting from `start`; predict the
    held-out points with the result. The coefficients state the domain they were fitted on (the
    hidden sizes, layer counts and token counts of the runs) and their held-out error."""
    c = fit_latency(fit, start)
    hidden = [o.target.hidden_size for o in fit]
    layers = [o.target.layers for o in fit]
    fmed, fw = errors(c, fit)
    hmed, hw = errors(c, held_out)
    c = dataclasses.replace(
        c,
        hidden_size_range=(min(hidden), max(hidden)),
        layers_range=(min(layers), max(layers)),
        max_tokens=max(o.step.target_tokens for o in fit),
        fitted_on=tuple(sorted({o.run for o in fit})),
        held_out=tuple(sorted({o.run for o in held_out})),
        held_out_median_error=round(hmed, 4),
        held_out_within_10pct=round(hw, 4),
    )
    return LatencyCalibration(c, len(fit), fmed, fw, len(held_out), hmed, hw)
