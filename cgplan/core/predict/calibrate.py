"""Calibration results: the cost model fitted on capture reports and checked on held-out ones
(`Calibration`), and the latency model fitted on timed runs (`LatencyCalibration`), each point read
as its least contended round (`least_contended`). api/calibrate.py reads the reports;
render/calibrate.py and io/schema/calibrate.py write these out."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from cgplan.core.predict.cost import CostCoefficients
from cgplan.core.predict.cost_fit import FitCheck
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


def least_contended(obs: Sequence[LatencyObservation]) -> list[LatencyObservation]:
    """One observation per (run, batch, outcome): the lowest of its per-round medians.

    The same point measured in several rounds (a run repeated in a later device call, the widest
    batch timed again at the end of a run or six times through it) can differ by 20-90% where the
    host was contended for a few seconds: the widest batch's eager step of Llama 3.2 3B read 10.45
    to 20.53 ms over six rounds 2.6 s apart (call4), its FULL graph 6.00 to 6.80 ms. Contention
    only ever adds time, so the lowest round is the measurement of the uncontended step; on
    split halves of those rounds it is also the reading that reproduces best (median |log| of
    0.037 between halves for eager, against 0.27 for the median over rounds:
    docs/latency-model.md, "Repetitions", and scripts/latency/repetitions.py)."""
    best: dict[tuple[str, str, str, int], LatencyObservation] = {}
    for o in obs:
        key = (o.run, o.batch, o.step.target_mode, o.step.target_tokens)
        if key not in best or o.measured_ms < best[key].measured_ms:
            best[key] = o
    return list(best.values())
