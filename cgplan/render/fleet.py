"""The aggregate report of a multi-config capture: table, markdown, HTML."""

from __future__ import annotations

from html import escape

from cgplan.core.model.reports import FleetReport, FleetRow

COLUMNS = (
    "config",
    "status",
    "plan = GPU",
    "eager measured",
    "memory pred/meas MiB",
    "capture pred/meas s",
    "GPUs",
    "failure",
)


def _verdict(row: FleetRow) -> str:
    m = row.plan_matches
    return "-" if m is None else ("yes" if m else "NO")


def _eager(row: FleetRow) -> str:
    eager = row.eager_fallbacks_measured
    if eager is None:
        return "-"
    if not eager:
        return "none"
    return ", ".join(f"{e.from_reqs}-{e.to_reqs}×{e.query_len}" for e in eager)


def _pair(pred: float | None, meas: float | None, digits: int) -> str:
    def f(x: float | None) -> str:
        return "-" if x is None else f"{float(x):.{digits}f}"

    return f"{f(pred)} / {f(meas)}"


def _status(row: FleetRow) -> str:
    return f"{row.status} (resumed)" if row.resumed else row.status


def _failure(row: FleetRow) -> str:
    if not row.failure_class:
        return ""
    msg = row.failure or ""
    return f"{row.failure_class}: {msg[:120]}" if msg else row.failure_class


INSIDE = "inside the fitted domain"


def _outside(row: FleetRow) -> bool:
    domain = row.predicted_memory_domain
    return domain is not None and domain != INSIDE


def _cells(row: FleetRow) -> list[str]:
    mark = " †" if _outside(row) else ""
    return [
        row.name,
        _status(row),
        _verdict(row),
        _eager(row),
        _pair(row.predicted_memory_mib, row.measured_memory_mib, 0) + mark,
        _pair(row.predicted_capture_s, row.measured_capture_s, 2),
        ",".join(row.gpus) or "-",
        _failure(row),
    ]


def _domain_notes(report: FleetReport) -> list[str]:
    """† rows: the prediction is outside the cost model's fitted domain, and why."""
    return [
        f"† {r.name}: predicted outside the cost model's domain ({r.predicted_memory_domain})"
        for r in report.configs
        if _outside(r)
    ]


def _totals(report: FleetReport) -> str:
    t = report.totals
    by = ", ".join(f"{n} {s}" for s, n in t.by_status.items())
    return (
        f"{t.configs} configs ({by}; {t.resumed} resumed) · plan = GPU: {t.plans_matched}, "
        f"differs: {t.plans_differed} · failed: {t.failed}" + (" · interrupted" if report.interrupted else "")
    )


def fleet_table(report: FleetReport) -> str:
    """Plain-text table, one row per config, then the totals."""
    rows = [list(COLUMNS), *(_cells(r) for r in report.configs)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS) - 1)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + ("  " + r[-1] if r[-1] else "")
        for r in rows
    ]
    head = f"cgplan capture · {len(report.configs)} configs · {report.runner}"
    if report.gpus:
        head += f" · GPUs {','.join(report.gpus)}"
    note = (
        "memory: cgplan's predicted graph memory vs the NVML growth over vLLM's capture phase; "
        "capture: predicted vs measured capture_model seconds"
    )
    return "\n".join([head, "", *lines, "", _totals(report), note, *_domain_notes(report)]) + "\n"


def fleet_markdown(report: FleetReport) -> str:
    """A markdown table for a PR comment or a results folder."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    out = [
        f"## cgplan capture: {len(report.configs)} configs ({report.runner})",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    out += ["| " + " | ".join(cell(c) for c in _cells(r)) + " |" for r in report.configs]
    out += ["", _totals(report), ""]
    notes = _domain_notes(report)
    if notes:
        out += [*(f"{n}  " for n in notes), ""]
    if report.command:
        out += ["Command: `" + " ".join(report.command) + "`", ""]
    return "\n".join(out)


def fleet_html(report: FleetReport) -> str:
    """One self-contained page: the table with each config's report linked."""
    from cgplan.render.html import _page

    body = [f"<p>{escape(_totals(report))}</p>", "<table><tr>"]
    body += [f"<th>{escape(c)}</th>" for c in COLUMNS]
    body.append("</tr>")
    for r in report.configs:
        cells = _cells(r)
        name = escape(cells[0])
        if r.report:
            name = f'<a href="{escape(r.report)}">{name}</a>'
        cls = ' class="gap"' if r.failure_class or r.plan_matches is False else ""
        body.append(
            f"<tr{cls}><td>{name}</td>" + "".join(f"<td>{escape(c)}</td>" for c in cells[1:]) + "</tr>"
        )
    body.append("</table>")
    body += [f"<p>{escape(n)}</p>" for n in _domain_notes(report)]
    return _page(f"cgplan capture · {len(report.configs)} configs", body)
