"""One self-contained HTML page (no network, no script) for a plan, a capture report or a diff,
with an SVG coverage chart per decode tier."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from html import escape
from typing import Any

from cgplan.core.model.reports import CaptureReport, PlanDocument, ReqRange
from cgplan.render.summary import CONFIG_LINES_TITLE

COLORS = {"FULL": "#2e7d32", "PIECEWISE": "#f9a825", "NONE": "#c62828", "-": "#bdbdbd"}
LABELS = {"FULL": "FULL graph", "PIECEWISE": "PIECEWISE graph", "NONE": "EAGER", "-": "other tier"}
CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:20px} h2{font-size:16px;margin-top:28px} table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ddd;padding:4px 8px;font-size:13px;text-align:right} th{background:#f5f5f5}
td:first-child,th:first-child{text-align:left} .gap{color:#c62828;font-weight:600} .fix{color:#2e7d32}
.legend span{display:inline-block;margin-right:14px;font-size:12px}
.sw{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}
code{background:#f5f5f5;padding:1px 4px;word-break:break-all}
.muted{color:#666;font-size:12px}
pre.flags{background:#f5f5f5;padding:6px 8px;white-space:pre;overflow-x:auto;font-size:12px}
"""


def _name(mode: str) -> str:
    return "EAGER" if mode == "NONE" else mode


def _pct(x: float) -> str:
    return f"{x:.0f}%" if x >= 10 or x == 0 else f"{x:.1f}%"


def _query_lens(plan: PlanDocument) -> str:
    dyn = plan.dynamic_sd
    if not dyn:
        return str(plan.uniform_decode_query_len)
    qls = sorted({k + 1 for _, _, k in dyn.lookup})
    return ", ".join(map(str, qls[:-1])) + f" or {qls[-1]}" if len(qls) > 1 else str(qls[0])


def _mixed_rows(plan: PlanDocument) -> list[tuple[str, str]]:
    """(tokens, outcome) of mixed/prefill batches, eager first (above the last range: eager)."""
    rows = [(r.from_tokens, r.to_tokens, r.mode) for r in plan.mixed]
    covered = max((b for _, b, _ in rows), default=0)
    limit = plan.max_num_batched_tokens or 0
    if covered < limit:
        rows.append((covered + 1, limit, "NONE"))
    merged: list[tuple[int, int, str]] = []
    for a, b, m in rows:
        if merged and merged[-1][2] == m and merged[-1][1] == a - 1:
            merged[-1] = (merged[-1][0], b, m)
        else:
            merged.append((a, b, m))
    merged.sort(key=lambda r: (r[2] != "NONE", r[0]))
    return [(f"{a}" if a == b else f"{a}..{b}", "EAGER" if m == "NONE" else m) for a, b, m in merged]


def _gap_groups(plan: PlanDocument) -> list[tuple[str, str]]:
    """(title, reason): a tier's PIECEWISE fallbacks as one line, one-request runs as one number."""
    out: list[list[Any]] = []  # query_len, outcome, first, last, runs, reason
    for g in plan.gaps:
        outcome = "EAGER" if g.mode == "NONE" else g.mode
        if out and outcome == "PIECEWISE" and out[-1][1] == "PIECEWISE" and out[-1][0] == g.query_len:
            out[-1][3] = g.to_reqs
            out[-1][4].append((g.from_reqs, g.to_reqs))
            out[-1][5] = f"no FULL graph for these request counts × {g.query_len} tokens: PIECEWISE fallback"
        else:
            out.append([g.query_len, outcome, g.from_reqs, g.to_reqs, [(g.from_reqs, g.to_reqs)], g.reason])
    titles = []
    for ql, outcome, a, b, runs, reason in out:
        span = f"{a}" if a == b else f"{a}-{b}"
        title = f"requests {span} × {ql} tokens → {outcome}"
        if len(runs) > 1:
            listed = ", ".join(f"{x}" if x == y else f"{x}-{y}" for x, y in runs)
            title += f" at {sum(y - x + 1 for x, y in runs)} of {b - a + 1} request counts: {listed}"
        titles.append((title, reason))
    return titles


def _legend() -> str:
    return (
        '<div class="legend">'
        + "".join(
            f'<span><i class="sw" style="background:{COLORS[m]}"></i>{LABELS[m]}</span>'
            for m in ("FULL", "PIECEWISE", "NONE")
        )
        + '<span><i class="sw" style="background:#1565c0;height:2px"></i>padded tokens</span>'
        + '<span><i class="sw" style="background:#000;height:2px"></i>real tokens</span></div>'
    )


def _segments(rows: Sequence[ReqRange], in_tier: set[int]) -> list[tuple[int, int, str, int | None]]:
    """(first, last, mode or "-", padded) runs, split where tier membership changes."""
    out: list[tuple[int, int, str, int | None]] = []
    for r in rows:
        for n in range(r.from_reqs, r.to_reqs + 1):
            mode = r.mode if n in in_tier else "-"
            padded = r.padded_tokens
            if (
                out
                and out[-1][1] == n - 1
                and out[-1][2] == mode
                and (mode != "FULL" or out[-1][3] == padded)
            ):
                out[-1] = (out[-1][0], n, mode, padded)
            else:
                out.append((n, n, mode, padded))
    return out


def tier_chart(
    query_len: int,
    rows: Sequence[ReqRange],
    batches: list[tuple[int, int]],
    *,
    width: int = 960,
    height: int = 220,
) -> str:
    """SVG: request count on x; bands coloured by outcome; padded and real tokens as lines."""
    if not rows or not batches:
        return ""
    n_lo = min(a for a, _ in batches)
    n_hi = min(max(b for _, b in batches), max(r.to_reqs for r in rows))
    rows = [
        replace(r, from_reqs=max(r.from_reqs, n_lo), to_reqs=min(r.to_reqs, n_hi))
        for r in rows
        if r.to_reqs >= n_lo and r.from_reqs <= n_hi
    ]
    if not rows:
        return ""
    in_tier = {n for a, b in batches for n in range(a, b + 1)}
    y_max: int = max([n_hi * query_len] + [r.padded_tokens or 0 for r in rows]) or 1
    left, bottom, top, right = 56, 28, 10, 28
    pw, ph = width - left - right, height - top - bottom
    span = n_hi - n_lo + 1

    def x(n: float) -> float:
        return left + (n - n_lo) / span * pw

    def y(t: float) -> float:
        return top + ph - t / y_max * ph

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="tier-chart" data-query-len="{query_len}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="uniform decode coverage, {query_len} tokens per request">'
    ]
    for a, b, mode, padded in _segments(rows, in_tier):
        cls = {"NONE": "eager", "-": "other"}.get(mode, mode.lower())
        at = "" if padded is None or mode in ("NONE", "-") else f" (pads to {padded} tokens at the start)"
        opacity = 0.85 if mode == "NONE" else 0.35
        parts.append(
            f'<rect class="band {cls}" x="{x(a):.2f}" y="{top}" width="{max(x(b + 1) - x(a), 0.6):.2f}" '
            f'height="{ph}" fill="{COLORS[mode]}" fill-opacity="{opacity}">'
            f"<title>requests {a if a == b else f'{a}-{b}'} × {query_len}: "
            f"{LABELS[mode]}{at}</title></rect>"
        )
    padded_pts = [
        f"{x(n + 0.5):.2f},{y(r.padded_tokens):.2f}"
        for r in rows
        if r.padded_tokens is not None and r.mode != "NONE"
        for n in (r.from_reqs, r.to_reqs)
    ]
    real_pts = [
        f"{x(n_lo + 0.5):.2f},{y(n_lo * query_len):.2f}",
        f"{x(n_hi + 0.5):.2f},{y(n_hi * query_len):.2f}",
    ]
    if padded_pts:
        parts.append(
            f'<polyline class="padded" points="{" ".join(padded_pts)}" fill="none" stroke="#1565c0" '
            'stroke-width="1.5"/>'
        )
    parts.append(
        f'<polyline class="real" points="{" ".join(real_pts)}" fill="none" stroke="#000" stroke-width="1"/>'
    )
    parts.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#444"/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#444"/>')
    for frac in (0, 0.5, 1):
        n = n_lo + round((n_hi - n_lo) * frac)
        parts.append(
            f'<text x="{x(n + 0.5):.1f}" y="{height - 8}" font-size="11" text-anchor="middle">{n}</text>'
        )
        t = round(y_max * frac)
        parts.append(f'<text x="{left - 4}" y="{y(t) + 4:.1f}" font-size="11" text-anchor="end">{t}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _tier_batches(plan: PlanDocument, ql: int) -> list[tuple[int, int]]:
    dyn = plan.dynamic_sd
    if not dyn:
        return [(1, plan.max_num_seqs)] if ql == plan.uniform_decode_query_len else []
    return [(a, b) for a, b, k in dyn.lookup if k + 1 == ql]


def _plan_body(plan: PlanDocument, uniform: Mapping[int, tuple[ReqRange, ...]] | None = None) -> list[str]:
    uniform = uniform if uniform is not None else plan.uniform_decode
    out = [
        f"<p>vLLM {escape(plan.vllm_version)} rules · {escape(plan.platform)} · model runner "
        f"{escape((plan.model_runner or '').upper())} · attention {escape(plan.attention_backend)} "
        f"({escape(plan.attention_cudagraph_support)}) · "
        f"cudagraph_mode <b>{escape(plan.cudagraph_mode)}</b> · "
        f"{len(plan.capture_sizes)} capture sizes, max {plan.max_capture_size} · uniform decode = "
        f"{_query_lens(plan)} {'token' if _query_lens(plan) == '1' else 'tokens'} per request</p>",
        "<h2>Graphs</h2><table><tr><th>family</th><th>PIECEWISE</th><th>FULL</th></tr>",
    ]
    for fam, c in plan.graph_counts.items():
        out.append(f"<tr><td>{escape(fam)}</td><td>{c.piecewise}</td><td>{c.full}</td></tr>")
    out.append(f"<tr><th>total</th><th colspan=2>{plan.total_graphs}</th></tr></table>")
    pieces = plan.piecewise_pieces
    if pieces and plan.breakable_cudagraphs:
        out.append(
            '<p class="muted">a PIECEWISE descriptor is one breakable capture: a CUDA graph per '
            "segment between attention and KV-cache ops, which run eager</p>"
        )
    elif pieces:
        out.append(
            '<p class="muted">a PIECEWISE descriptor is '
            + ", ".join(f"{n} CUDA graphs in the {escape(f)}" for f, n in pieces.items())
            + " (one per compiled piece)</p>"
        )
    cost = plan.predicted_cost
    if cost and cost.total_mib is None:
        # outside the cost model's domain there is no figure (as in the table: the domain says why)
        domain = cost.domain
        out.append(
            "<h2>Predicted graph memory</h2><p>no figure · outside the validated domain: "
            + escape("; ".join(domain.outside if domain else ()))
            + f'</p><p class="muted">validated domain ({escape(cost.gpu)} cost model): '
            + escape(domain.fitted if domain else "")
            + "</p>"
        )
    elif cost:
        kv = plan.kv_cache.graph_memory_tokens if plan.kv_cache else None
        per_token = plan.kv_cache.bytes_per_token if plan.kv_cache else None
        out.append(
            "<h2>Predicted graph memory</h2><p>capture phase (what vLLM's “took X GiB” counts), per rank: "
            f"<b>{cost.total_mib:,.0f} MiB</b> ({cost.low_mib:,.0f}..{cost.high_mib:,.0f}) "
            + (
                "taken from the KV cache"
                if plan.kv_cache is None or plan.kv_cache.graph_memory_reserved
                else "<b>not reserved</b>: capture adds on top of gpu_memory_utilization "
                f"(lower --gpu-memory-utilization by {(cost.high_mib or cost.total_mib or 0.0) / 1024:,.2f} "
                "GiB / the GPU's memory)"
            )
            + (f" = <b>{kv:,} KV-cache tokens</b> at {per_token:,} bytes/token" if kv is not None else "")
            + (
                f" (KV-cache tokens not predicted: {escape(plan.kv_cache.withheld)})"
                if kv is None and plan.kv_cache is not None and plan.kv_cache.withheld
                else ""
            )
            + f" · capture ~{cost.capture_s:.1f} s"
            + (
                f" ({cost.capture_low_s:.1f}..{cost.capture_high_s:.1f} s)"
                if cost.capture_low_s is not None and cost.capture_high_s is not None
                else " (no band)"
            )
            + f" · {escape(cost.gpu)} cost model</p>"
        )
        domain = cost.domain
        if domain is not None and domain.outside:
            out.append(
                f'<p class="muted">outside the validated domain ({escape(domain.fitted)}): '
                + escape("; ".join(domain.outside))
                + "</p>"
            )
        out.append(
            "<table><tr><th>detail: graph sections</th><th>mode</th><th>graphs</th><th>pool MiB</th>"
            "<th>graph state MiB</th></tr>"
        )
        out += [
            f"<tr><td>{escape(fm.family)}</td><td>{fm.mode}</td><td>{fm.graphs}</td>"
            f"<td>{fm.pool_mib:,.0f}</td><td>{fm.graph_state_mib:,.0f}</td></tr>"
            for fm in cost.by_family_mode
        ]
        out.append(
            "<tr><td>warmup runs</td><td></td><td></td>"
            f"<td colspan=2>{cost.warmup_mib:,.0f}</td></tr></table>"
        )
        out += [f'<p class="muted">caveat: {escape(c)}</p>' for c in cost.caveats]
    out += _step_time(plan)
    if plan.assumed:
        out.append("<h2>Assumed (not in the config)</h2><ul>")
        out += [
            f"<li><code>{escape(a.key)} = {escape(a.value)}</code>: {escape(a.origin)}</li>"
            for a in plan.assumed
        ]
        out.append("</ul>")
    if plan.dynamic_sd:
        out.append(
            "<h2>Dynamic speculative decoding</h2><table><tr><th>batch sizes</th><th>K</th>"
            "<th>tokens/request</th></tr>"
        )
        out += [
            f"<tr><td>{a}-{b}</td><td>{k}</td><td>{k + 1}</td></tr>" for a, b, k in plan.dynamic_sd.lookup
        ]
        out.append("</table>")
    out.append("<h2>Uniform decode coverage</h2>" + _legend())
    for ql, rows in sorted(uniform.items()):
        batches = _tier_batches(plan, ql)
        if not batches:
            continue
        out.append(
            f'<h3 style="font-size:14px">{ql} tokens per request (requests '
            + ", ".join(f"{a}-{b}" for a, b in batches)
            + ")</h3>"
        )
        out.append(tier_chart(ql, rows, batches))
    pad = plan.step_padding
    if pad and pad.replayed_batches:
        out.append(
            f"<p>per-step padding (uniform decode, graph-replayed): worst <b>{_pct(pad.worst_pct)}</b> "
            f"({pad.worst_reqs} requests × {pad.worst_query_len} tokens), "
            f"mean <b>{_pct(pad.mean_pct)}</b> "
            f"over {pad.replayed_batches} batch sizes, each counted once</p>"
        )
    out.append("<h2>Mixed and prefill batches</h2><table><tr><th>tokens</th><th>outcome</th></tr>")
    out += [
        f'<tr><td>{t}</td><td style="color:{COLORS["NONE" if o == "EAGER" else o]}">{o}</td></tr>'
        for t, o in _mixed_rows(plan)
    ]
    out.append("</table>")
    out.append(
        f"<h2>Capture sizes ({len(plan.capture_sizes)}, tokens)</h2><p><code>"
        + ", ".join(map(str, plan.capture_sizes))
        + "</code></p>"
    )
    out.append("<h2>Gaps and fixes</h2>")
    if not plan.gaps:
        out.append(
            '<p class="fix">No gaps: every uniform-decode batch of every tier replays a decode-mode '
            "graph.</p>"
        )
    for title, reason in _gap_groups(plan):
        out.append(f'<p class="gap">{escape(title)}</p><p class="muted">{escape(reason)}</p>')
    for i, f in enumerate(plan.fixes):
        label = "partial fix" if not f.complete else ("fix" if i == 0 else "or")
        out.append(
            f'<p class="{"fix" if f.complete else "gap"}">{label}: '
            f"{escape('; '.join(f.changes))}</p>"
            f'<pre class="flags">{escape(f.command_line or " ".join(f.flags))}</pre>'
            + (
                f'<p class="muted">{escape(CONFIG_LINES_TITLE)}</p>'
                f'<pre class="flags">{escape(chr(10).join(f.config_lines))}</pre>'
                if f.config_lines
                else ""
            )
            + f'<p class="muted">{escape(f.summary)}'
            + (f" — partial: {escape(f.still_open)}" if f.still_open else "")
            + "</p>"
        )
    return out


def _step_time(plan: PlanDocument) -> list[str]:
    """The predicted step time, each gap's cost and each fix's gain, or why none is given (as the
    table's "predicted step time" lines)."""
    lat = plan.predicted_latency
    if lat is None:
        if not plan.latency_withheld:
            return []
        return [
            "<h2>Predicted step time</h2><p>not predicted: outside the measured domain ("
            + escape("; ".join(plan.latency_withheld))
            + ")</p>"
        ]
    traffic = (
        "every uniform-decode batch once" if lat.traffic == "uniform" else escape(f"traffic {lat.traffic}")
    )
    out = [
        f"<h2>Predicted step time</h2><p><b>{lat.expected_step_ms:.2f} ms</b> expected ({traffic})"
        f" · eager {lat.expected_eager_share:.0%} of it · "
        f"{lat.expected_tokens_per_s:,.0f} tokens/s scheduled · {escape(lat.gpu)} latency model</p>"
    ]
    if lat.gaps:
        out.append(
            "<table><tr><th>gap</th><th>widest batch</th><th>step ms (graph)</th><th>cost per step</th>"
            "<th>on the expected step</th><th>verdict</th></tr>"
        )
        out += [
            f"<tr><td>{g.gap + 1}</td><td>{g.widest_batch}</td>"
            f"<td>{g.step_ms:.2f} ({g.graph_step_ms:.2f})</td>"
            f"<td>+{g.cost_ms_per_step:.2f} ms</td><td>+{g.expected_cost_ms_per_step:.3f} ms</td>"
            f"<td>{escape(g.verdict or '')}</td></tr>"
            for g in lat.gaps
        ]
        out.append("</table>")
    if lat.fixes:
        out.append("<table><tr><th>fix</th><th>expected step after</th><th>gain at the widest gap</th></tr>")
        out += [
            f"<tr><td>{f.fix + 1}</td><td>{f.expected_step_ms_after:.2f} ms</td>"
            f"<td>{f.widest_gap_gain_ms:.2f} ms</td></tr>"
            for f in lat.fixes
        ]
        out.append("</table>")
    if lat.fix_order:
        out.append(f'<p class="muted">{escape(lat.fix_order)}</p>')
    out += [f'<p class="muted">extrapolated: {escape(x)}</p>' for x in lat.extrapolated]
    out += [f'<p class="muted">caveat: {escape(c)}</p>' for c in lat.caveats if c not in lat.extrapolated]
    return out


def _page(title: str, body: list[str]) -> str:
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<style>{CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1>" + "\n".join(body) + "</body></html>\n"
    )


def plan_html(plan: PlanDocument) -> str:
    """A plan (its `--json` document) as a page."""
    return _page(f"cgplan plan · {plan.source or ''}", _plan_body(plan))


def capture_html(report: CaptureReport) -> str:
    """A capture report as a page: measured coverage, memory per family, the verdict."""
    m, plan = report.measured, report.plan
    body = [
        f"<p>status <b>{escape(report.status)}</b>"
        + (f" — {escape(report.failure)}" if report.failure else "")
        + "</p>",
        "<h2>Memory and time per family</h2><table><tr><th>family</th><th>mode</th><th>graphs</th>"
        "<th>NVML MiB</th><th>capture s</th></tr>",
    ]
    for s in report.summary:
        mib = "n/a" if s.nvml_bytes is None else f"{s.nvml_bytes / 2**20:.1f}"
        body.append(
            f"<tr><td>{escape(s.family)}</td><td>{s.mode}</td><td>{s.graphs}</td><td>{mib}</td>"
            f"<td>{s.capture_time_ms / 1000:.2f}</td></tr>"
        )
    body.append("</table>")
    c = report.comparison
    if c:
        verdict = "plan matches the GPU" if c.matches else "plan and GPU disagree"
        body.append(
            f'<p class="{"fix" if c.matches else "gap"}">{verdict}: {c.dispatch_checked} batch shapes '
            f"probed, {len(c.dispatch_mismatches)} runs differ</p>"
        )
    body += _plan_body(plan, m.uniform_decode or plan.uniform_decode)
    return _page(f"cgplan capture · {report.source or ''}", body)


def diff_html(d: dict[str, Any]) -> str:
    """A diff as a page (tables; coverage moves coloured)."""
    body = [
        f"<p>A: <code>{escape(d['a']['label'])}</code> (vLLM {escape(d['a']['vllm_version'])}) → "
        f"B: <code>{escape(d['b']['label'])}</code> (vLLM {escape(d['b']['vllm_version'])})</p>",
        "<h2>Graphs</h2><table><tr><th>family</th><th>mode</th><th>A</th><th>B</th><th>added</th>"
        "<th>removed</th></tr>",
    ]
    body += [
        f"<tr><td>{escape(g['family'])}</td><td>{g['mode']}</td><td>{g['count_a']}</td><td>{g['count_b']}</td>"
        f"<td>+{len(g['added'])}</td><td>-{len(g['removed'])}</td></tr>"
        for g in d["graphs"]
    ]
    body.append("</table>")
    if d.get("model_runner") and d["model_runner"]["a"] and d["model_runner"]["a"] != d["model_runner"]["b"]:
        body.append(
            f'<p class="gap">model runner: {escape(str(d["model_runner"]["a"]).upper())} → '
            f"{escape(str(d['model_runner']['b']).upper())}</p>"
        )
    body += [f'<p class="muted">{escape(line)}</p>' for line in d.get("size_changes", [])]
    mem = d.get("memory") or {}
    if mem.get("a_mib") is not None or mem.get("b_mib") is not None:
        body.append(f"<h2>Graph memory</h2><p>{escape(mem['text'])}</p>")
        if mem.get("kv_text"):
            body.append(f"<p>{escape(mem['kv_text'].strip())}</p>")
        det = mem.get("detail_graph_sections_mib") or {}
        if det.get("a") is not None or det.get("b") is not None:
            body.append(
                f'<p class="muted">detail, graph sections only (warmups excluded): A {det.get("a")} MiB → '
                f"B {det.get('b')} MiB</p>"
            )
    cov = d.get("uniform_decode") or {}
    if cov:
        body.append("<h2>Uniform decode coverage</h2>" + _legend())
        for ql in sorted({*cov.get("a", {}), *cov.get("b", {})}, key=int):
            for side in ("a", "b"):
                tier = cov.get(side, {}).get(ql)
                if not tier:
                    continue
                batches = [(int(x), int(y)) for x, y in tier["batches"]]
                rows = [
                    ReqRange(r["from_reqs"], r["to_reqs"], r["mode"], r["padded_tokens"])
                    for r in tier["rows"]
                ]
                body.append(
                    f'<h3 style="font-size:14px">{side.upper()}: {ql} tokens per request</h3>'
                    + tier_chart(int(ql), rows, batches)
                )
    if d.get("shared_gaps"):
        body.append(
            '<p class="gap">gaps on both sides (unchanged, not all clear): '
            + escape(
                ", ".join(
                    f"{g['from_reqs']}-{g['to_reqs']} requests × {g['query_len']} → "
                    + ("EAGER" if g["mode"] == "NONE" else g["mode"])
                    for g in d["shared_gaps"]
                )
            )
            + "</p>"
        )
    body.append("<h2>Coverage moves</h2>")
    if not d["coverage_moves"]:
        body.append("<p>No uniform-decode batch changes outcome.</p>")
    else:
        body.append("<table><tr><th>tokens/request</th><th>requests</th><th>A</th><th>B</th></tr>")
        body += [
            f"<tr><td>{m['query_len']}</td><td>{m['first_reqs']}-{m['last_reqs']}</td>"
            f'<td style="color:{COLORS.get(m["mode_a"], "#000")}">{_name(m["mode_a"])}</td>'
            f'<td style="color:{COLORS.get(m["mode_b"], "#000")}">{_name(m["mode_b"])}</td></tr>'
            for m in d["coverage_moves"]
        ]
        body.append("</table>")
    return _page("cgplan diff", body)
