"""Calibrations as text and markdown (`cgplan calibrate`): each report's measured and predicted
capture memory and time, and vLLM's own estimate; `--latency`'s fit in one or two lines."""

from __future__ import annotations

from cgplan.core.predict.calibrate import Calibration, LatencyCalibration, vllm_estimate


def calibration_table(cal: Calibration) -> str:
    """Plain-text table: each report's measured and predicted capture memory, and vLLM's estimate."""
    lines = [
        f"{'set':5} {'report':40} {'measured':>9} {'predicted':>10} {'error':>7} "
        f"{'vLLM est.':>10} {'its error':>9} {'capture s':>9} {'pred. s':>8}"
    ]
    for label, rows in (("fit", cal.fit), ("test", cal.held_out)):
        for c in rows:
            est, est_err = vllm_estimate(c)
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
    if (capture := capture_band_line(cal)) is not None:
        lines.append(capture)
    return "\n".join(lines) + "\n"


def capture_band_line(cal: Calibration) -> str | None:
    """The capture time's band and basis, and how many held-out reports fall inside it."""
    c = cal.coefficients
    lo, hi = c.capture_band_ratio
    if hi <= 0:
        return None
    held = [
        x.measured_capture_s / x.predicted_capture_s
        for x in cal.held_out
        if x.measured_capture_s is not None and x.predicted_capture_s > 0
    ]
    inside = sum(1 for r in held if lo <= r <= hi)
    return (
        f"capture time ({c.capture_time_basis} basis): measured/predicted within "
        f"{lo:.3f}..{hi:.3f} on the fit" + (f"; held out: {inside} of {len(held)} inside" if held else "")
    )


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
            est, est_err = vllm_estimate(c)
            lines.append(
                f"| {label} | `{c.name}` | {c.measured_mib:.0f} | {c.predicted_mib:.0f} "
                f"| {100 * c.error:+.1f}% "
                f"| {cell(est, '.0f')} "
                f"| {format(100 * est_err, '+.1f') + '%' if isinstance(est_err, float) else '-'} "
                f"| {cell(c.measured_capture_s, '.2f')} | {c.predicted_capture_s:.2f} |"
            )
    lines.append("")
    if cal.held_out:
        worst = max(abs(c.error) for c in cal.held_out)
        lines.append(f"Held out: {len(cal.held_out)} reports, worst error {100 * worst:.1f}%.")
    lo, hi = cal.coefficients.band_ratio
    lines.append(f"Band shown with predictions: measured/predicted within {lo:.3f}..{hi:.3f} on the fit.")
    if (capture := capture_band_line(cal)) is not None:
        lines.append(capture[0].upper() + capture[1:] + ".")
    return "\n".join(lines) + "\n"


def latency_calibration_text(cal: LatencyCalibration) -> str:
    """The latency model's fit and its held-out check, in words."""
    return (
        f"latency model fitted on {cal.fit_points} points: median error {cal.fit_median_error:.1%}, "
        f"{cal.fit_within_10pct:.0%} within 10%\n"
        + (
            f"held out {cal.held_out_points} points: median error {cal.held_out_median_error:.1%}, "
            f"{cal.held_out_within_10pct:.0%} within 10%\n"
            if cal.held_out_points
            else "no held-out runs (--test RUN)\n"
        )
    )


def latency_calibration_markdown(cal: LatencyCalibration) -> str:
    """The same as a markdown table."""
    rows = [("fit", cal.fit_points, cal.fit_median_error, cal.fit_within_10pct)]
    if cal.held_out_points:
        rows.append(("held out", cal.held_out_points, cal.held_out_median_error, cal.held_out_within_10pct))
    return (
        "| latency model | points | median error | within 10% |\n|---|---:|---:|---:|\n"
        + "".join(f"| {name} | {n} | {med:.1%} | {w10:.0%} |\n" for name, n, med, w10 in rows)
        + ("" if cal.held_out_points else "\nNo held-out runs (--test RUN).\n")
    )
