"""The aggregate report of a multi-config capture (from its JSON document): table, markdown, HTML."""

from __future__ import annotations

from html import escape
from typing import Any

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


def _verdict(row: dict[str, Any]) -> str:
    m = row.get("plan_matches")
    return "-" if m is None else ("yes" if m else "NO")


def _eager(row: dict[str, Any]) -> str:
    eager = row.get("eager_fallbacks_measured")
    if eager is None:
        return "-"
    if not eager:
        return "none"
    return ", ".join(f"{e['from_reqs']}-{e['to_reqs']}×{e['query_len']}" for e in eager)


def _pair(pred: Any, meas: Any, digits: int) -> str:
    def f(x: Any) -> str:
        return "-" if x is None else f"{float(x):.{digits}f}"

    return f"{f(pred)} / {f(meas)}"


def _status(row: dict[str, Any]) -> str:
    return f"{row['status']} (resumed)" if row.get("resumed") else str(row["status"])


def _failure(row: dict[str, Any]) -> str:
    if not row.get("failure_class"):
        return ""
    msg = str(row.get("failure") or "")
    return f"{row['failure_class']}: {msg[:120]}" if msg else str(row["failure_class"])


INSIDE = "inside the fitted domain"


def _outside(row: dict[str, Any]) -> bool:
    domain = row.get("predicted_memory_domain")
    return domain is not None and domain != INSIDE


def _cells(row: dict[str, Any]) -> list[str]:
    mark = " †" if _outside(row) else ""
    return [
        str(row["name"]),
        _status(row),
        _verdict(row),
        _eager(row),
        _pair(row.get("predicted_memory_mib"), row.get("measured_memory_mib"), 0) + mark,
        _pair(row.get("predicted_capture_s"), row.get("measured_capture_s"), 2),
        ",".join(row.get("gpus") or []) or "-",
        _failure(row),
    ]


def _domain_notes(doc: dict[str, Any]) -> list[str]:
    """† rows: the prediction is outside the cost model's fitted domain, and why."""
    return [
        f"† {r['name']}: predicted outside the cost model's domain ({r['predicted_memory_domain']})"
        for r in doc["configs"]
        if _outside(r)
    ]


def _totals(doc: dict[str, Any]) -> str:
    t = doc["totals"]
    by = ", ".join(f"{n} {s}" for s, n in t["by_status"].items())
    return (
        f"{t['configs']} configs ({by}; {t['resumed']} resumed) · plan = GPU: {t['plans_matched']}, "
        f"differs: {t['plans_differed']} · failed: {t['failed']}"
        + (" · interrupted" if doc.get("interrupted") else "")
    )


def fleet_table(doc: dict[str, Any]) -> str:
    """Plain-text table, one row per config, then the totals."""
    rows = [list(COLUMNS), *(_cells(r) for r in doc["configs"])]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS) - 1)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + ("  " + r[-1] if r[-1] else "")
        for r in rows
    ]
    head = f"cgplan capture · {len(doc['configs'])} configs · {doc['runner']}"
    if doc.get("gpus"):
        head += f" · GPUs {','.join(doc['gpus'])}"
    note = (
        "memory: cgplan's predicted graph memory vs the NVML growth over vLLM's capture phase; "
        "capture: predicted vs measured capture_model seconds"
    )
    return "\n".join([head, "", *lines, "", _totals(doc), note, *_domain_notes(doc)]) + "\n"


def fleet_markdown(doc: dict[str, Any]) -> str:
    """A markdown table for a PR comment or a results folder."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    out = [
        f"## cgplan capture: {len(doc['configs'])} configs ({doc['runner']})",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    out += ["| " + " | ".join(cell(c) for c in _cells(r)) + " |" for r in doc["configs"]]
    out += ["", _totals(doc), ""]
    notes = _domain_notes(doc)
    if notes:
        out += [*(f"{n}  " for n in notes), ""]
    if doc.get("command"):
        out += ["Command: `" + " ".join(doc["command"]) + "`", ""]
    return "\n".join(out)


def fleet_html(doc: dict[str, Any]) -> str:
    """One self-contained page: the table with each config's report linked."""
    from cgplan.render.html import _page

    body = [f"<p>{escape(_totals(doc))}</p>", "<table><tr>"]
    body += [f"<th>{escape(c)}</th>" for c in COLUMNS]
    body.append("</tr>")
    for r in doc["configs"]:
        cells = _cells(r)
        name = escape(cells[0])
        if r.get("report"):
            name = f'<a href="{escape(str(r["report"]))}">{name}</a>'
        cls = ' class="gap"' if r.get("failure_class") or r.get("plan_matches") is False else ""
        body.append(
            f"<tr{cls}><td>{name}</td>" + "".join(f"<td>{escape(c)}</td>" for c in cells[1:]) + "</tr>"
        )
    body.append("</table>")
    body += [f"<p>{escape(n)}</p>" for n in _domain_notes(doc)]
    return _page(f"cgplan capture · {len(doc['configs'])} configs", body)
