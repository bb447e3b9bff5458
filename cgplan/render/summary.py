"""Facts every human-facing renderer shows, computed once (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from cgplan.core.gaps import graph_count, tier_batches
from cgplan.core.types import DispatchRange, Plan

FAMILY_LABELS = {
    "target": "target",
    "drafter": "drafter (V1, PIECEWISE)",
    "drafter_prefill": "drafter prefill",
    "drafter_decode": "drafter decode",
}


@dataclass(frozen=True)
class FamilyRow:
    """Graph counts of one family."""

    label: str
    piecewise: int
    full: int
    sizes: str


def family_rows(plan: Plan) -> list[FamilyRow]:
    """One row per graph family with its counts and size span."""
    rows = []
    for family, graphs in plan.graphs.items():
        pw = [g.num_tokens for g in graphs if g.mode == "PIECEWISE"]
        full = [g for g in graphs if g.mode == "FULL"]
        parts = []
        if pw:
            parts.append(f"PIECEWISE {min(pw)}..{max(pw)} tokens")
        if full:
            qls = sorted({g.query_len for g in full if g.query_len})
            lo, hi = min(g.num_tokens for g in full), max(g.num_tokens for g in full)
            parts.append(
                f"FULL {lo}..{hi} tokens" + (f" (query len {', '.join(map(str, qls))})" if qls else "")
            )
        rows.append(
            FamilyRow(FAMILY_LABELS.get(family, family), len(pw), len(full), "; ".join(parts) or "none")
        )
    return rows


def tier_rows(plan: Plan, ql: int, full: bool) -> list[tuple[str, str, str]]:
    """(requests, outcome, tokens) rows for one decode tier, compressed unless `full`."""
    rows: list[tuple[str, str, str]] = []
    ranges: list[DispatchRange] = []
    for lo, hi in tier_batches(plan, ql):
        for r in plan.uniform_decode.get(ql, ()):
            a, b = max(lo, r.first), min(hi, r.last)
            if a <= b:
                ranges.append(DispatchRange(a, b, r.mode, r.padded_tokens, r.padded_reqs))
    merged: list[tuple[int, int, str, int, int]] = []  # first, last, mode, padded_waste_total, max_pad
    for r in ranges:
        waste = (
            0
            if r.padded_tokens is None
            else sum(r.padded_tokens - n * ql for n in range(r.first, r.last + 1))
        )
        exact = r.padded_tokens is not None and r.padded_tokens == r.last * ql and r.first == r.last
        key = r.mode if not full else f"{r.mode}@{r.padded_tokens}"
        if merged and merged[-1][2] == key and merged[-1][1] == r.first - 1 and (not full):
            f0, _, m, w, _x = merged[-1]
            merged[-1] = (f0, r.last, m, w + waste, 0)
        else:
            merged.append((r.first, r.last, key, waste, int(exact)))
    for first, last, key, waste, _ in merged:
        reqs = f"{first}" if first == last else f"{first}-{last}"
        tokens = f"{first * ql}" if first == last else f"{first * ql}..{last * ql}"
        mode = key.split("@")[0]
        if mode == "NONE":
            outcome = "EAGER"
        elif full:
            outcome = f"{mode} @{key.split('@')[1]}"
        else:
            outcome = mode + (", exact fit" if waste == 0 else f", {waste} padded tokens in all")
        rows.append((reqs, outcome, tokens))
    return rows


def headline(plan: Plan, source: str | None) -> list[str]:
    """The two header lines."""
    from cgplan import __version__

    return [
        f"cgplan {__version__} · vLLM {plan.vllm_version} rules · {plan.platform} · model runner "
        f"{plan.model_runner.upper()} · attention {plan.attention_backend} (cudagraph support "
        f"{plan.attention_cudagraph_support})" + (f" · {source}" if source else ""),
        f"cudagraph_mode {plan.cudagraph_mode}"
        + (
            f" (requested {plan.requested_cudagraph_mode})"
            if plan.requested_cudagraph_mode != plan.cudagraph_mode
            else ""
        )
        + f" · {len(plan.capture_sizes)} capture sizes"
        + (f", {plan.capture_sizes[0]}..{plan.max_capture_size}" if plan.capture_sizes else "")
        + f" · uniform decode = {plan.uniform_decode_query_len} tokens per request"
        + f" · {graph_count(plan)} graphs",
    ]


def cost_lines(plan: Plan) -> list[str]:
    """The predicted memory and capture time, in a few lines (nothing without a prediction)."""
    c = plan.cost
    if c is None or not c.graphs:
        return []
    per_gpu = " per GPU" if plan.cost and any("tensor parallel" in x for x in c.caveats) else ""
    d = c.domain
    if not d.figure:
        return [
            f"predicted graph memory{per_gpu}: no figure · outside the validated domain: "
            + "; ".join(d.outside),
            f"  validated domain ({c.gpu} cost model): {d.fitted}",
        ]
    band = "" if d.inside else f", band x{d.band_factor:g} wider: outside the validated domain"
    lines = [
        f"predicted graph memory{per_gpu}: {c.total_mib:,.0f} MiB "
        f"({c.low_mib:,.0f}..{c.high_mib:,.0f}{band}) "
        f"taken from the KV cache · capture ~{c.capture_s:.1f} s · {c.gpu} cost model"
    ]
    if d.inside:
        lines.append(f"  inside the validated domain: {d.fitted}")
    else:
        lines.append(f"  outside the validated domain ({d.fitted}): " + "; ".join(d.outside))
    lines.extend(
        f"  {fm.family} {fm.mode}: {fm.graphs} graphs, pool {fm.pool_mib:,.0f} MiB + graph state "
        f"{fm.exec_mib:,.0f} MiB"
        for fm in c.by_family_mode
    )
    lines.append(f"  warmup runs during capture: {c.warmup_mib:,.0f} MiB")
    lines.extend(f"  caveat: {x}" for x in c.caveats)
    return lines


def latency_lines(plan: Plan) -> list[str]:
    """The predicted step times, each gap's cost and each fix's gain (nothing without a prediction)."""
    lat = plan.latency
    if lat is None or lat.expected_step_ms <= 0:
        return []
    widest, q = lat.widest_reqs, lat.widest_query_len
    traffic = (
        f"every uniform-decode batch 1..{widest} once"
        if lat.traffic == "uniform"
        else f"traffic {lat.traffic}"
    )
    lines = [
        f"predicted step time: {lat.expected_step_ms:.2f} ms expected ({traffic}) · eager "
        f"{lat.expected_eager_share:.0%} of it · {lat.expected_tokens_per_s:,.0f} tokens/s scheduled · "
        f"{lat.gpu} latency model",
        f"  widest batch {widest} × {q} tokens: {lat.widest_step_ms:.2f} ms as planned, "
        f"{lat.widest_graph_step_ms:.2f} ms on a FULL graph, {lat.widest_eager_step_ms:.2f} ms eager "
        f"(eager/graph {lat.eager_graph_ratio:.2f})",
    ]
    # The costliest gaps at the traffic first; a long tail of one-batch gaps is summed up.
    shown = sorted(lat.gaps, key=lambda x: (-x.expected_cost_ms_per_step, -x.cost_ms_per_step))[:3]
    for gl in sorted(shown, key=lambda x: x.gap):
        g = plan.gaps[gl.gap]
        unit = "requests" if g.family == "uniform_decode" else "tokens"
        lines.append(
            f"  gap {gl.gap + 1} ({unit} {g.first}-{g.last}): costs {gl.cost_ms_per_step:+.2f} ms per "
            f"step at {gl.widest_batch} {unit} ({gl.step_ms:.2f} vs {gl.graph_step_ms:.2f} ms; "
            f"{gl.tokens_per_s:,.0f} vs {gl.graph_tokens_per_s:,.0f} tokens/s scheduled), "
            f"{gl.expected_cost_ms_per_step:+.3f} ms on the expected step"
        )
    if len(lat.gaps) > len(shown):
        rest = [x for x in lat.gaps if x not in shown]
        lines.append(
            f"  {len(rest)} more gap(s): {sum(x.expected_cost_ms_per_step for x in rest):+.3f} ms on the "
            "expected step together"
        )
    for fl in lat.fixes:
        f = plan.fixes[fl.fix]
        flag = f.flags[0] if len(f.flags[0]) <= 48 else f.flags[0][:45] + "..."
        lines.append(
            f"  fix {fl.fix + 1} ({flag}): gains {fl.widest_gap_gain_ms:.2f} ms per step at the widest gap "
            f"batch; expected step {lat.expected_step_ms:.2f} → {fl.expected_step_ms_after:.2f} ms "
            f"({-fl.gain_ms_per_step:+.3f} ms)"
        )
    lines.extend(f"  caveat: {x}" for x in lat.caveats)
    return lines
