"""Facts every human-facing renderer shows, computed once (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from cgplan.core.model.modes import Mode
from cgplan.core.model.notation import ladder_text
from cgplan.core.model.predictions import CostPrediction
from cgplan.core.model.types import DispatchRange, Fix, Plan
from cgplan.core.plan.gaps import graph_count, range_padding, step_padding, tier_batches

FAMILY_LABELS = {
    "target": "target",
    "drafter": "drafter (V1, PIECEWISE)",
    "drafter_prefill": "drafter prefill",
    "drafter_decode": "drafter decode",
    "drafter_query": "drafter query (DFlash/DSpark)",
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
        per_k = sorted({g.num_speculative_tokens for g in full if g.num_speculative_tokens is not None})
        if per_k:
            parts.append(f"once per dynamic-SD K in {per_k}")
        label = FAMILY_LABELS.get(family, family)
        if family == "drafter" and plan.model_runner == "v2":
            label = "drafter (V2, one manager: multi-module MTP)"
        rows.append(FamilyRow(label, len(pw), len(full), "; ".join(parts) or "none"))
    return rows


EAGER = "EAGER"
"""The one name every human format gives a batch that runs without a CUDA graph (vLLM's
CUDAGraphMode NONE; the JSON keeps vLLM's `NONE` in `mode` fields)."""


def outcome_name(mode: str) -> str:
    """FULL, PIECEWISE or EAGER."""
    return EAGER if mode == "NONE" else mode


def _pct(x: float) -> str:
    return f"{x:.0f}%" if x >= 10 or x == 0 else f"{x:.1f}%"


def tier_rows(plan: Plan, ql: int, full: bool) -> list[tuple[str, str, str]]:
    """(requests, outcome, tokens) rows for one decode tier, compressed unless `full`; graph rows
    carry their per-step padding (worst and mean over the row's request counts)."""
    rows: list[tuple[str, str, str]] = []
    ranges: list[DispatchRange] = []
    for lo, hi in tier_batches(plan, ql):
        for r in plan.uniform_decode.get(ql, ()):
            a, b = max(lo, r.first), min(hi, r.last)
            if a <= b:
                ranges.append(DispatchRange(a, b, r.mode, r.padded_tokens, r.padded_reqs))
    merged: list[tuple[int, int, str, float, float]] = []  # first, last, key, pct_sum, worst_pct
    for r in ranges:
        pct_sum = worst = 0.0
        if r.padded_tokens is not None:
            _, pct_sum, worst = range_padding(ql, r.first, r.last, r.padded_tokens)
        key = r.mode if not full else f"{r.mode}@{r.padded_tokens}"
        if merged and merged[-1][2] == key and merged[-1][1] == r.first - 1 and not full:
            f0, _, k0, s0, w0 = merged[-1]
            merged[-1] = (f0, r.last, k0, s0 + pct_sum, max(w0, worst))
        else:
            merged.append((r.first, r.last, key, pct_sum, worst))
    for first, last, key, pct_sum, worst in merged:
        reqs = f"{first}" if first == last else f"{first}-{last}"
        tokens = f"{first * ql}" if first == last else f"{first * ql}..{last * ql}"
        mode = key.split("@")[0]
        if mode == "NONE":
            outcome = EAGER
        elif full:
            outcome = f"{mode} @{key.split('@')[1]}"
        else:
            mean = pct_sum / (last - first + 1)
            if worst < 0.005:
                outcome = mode + ", exact fit"
            elif first == last:
                outcome = f"{mode}, pads {_pct(worst)}"
            else:
                outcome = f"{mode}, pads ≤{_pct(worst)} (mean {_pct(mean)})"
        rows.append((reqs, outcome, tokens))
    return rows


def query_lens_text(plan: Plan) -> str:
    """ "17" or "2, 4, 8 or 17" (a dynamic-SD plan decodes at one length per tier)."""
    if plan.dynamic_sd_lookup is None:
        return str(plan.uniform_decode_query_len)
    qls = sorted({k + 1 for _, _, k in plan.dynamic_sd_lookup})
    if len(qls) == 1:
        return str(qls[0])
    return ", ".join(map(str, qls[:-1])) + f" or {qls[-1]}"


def headline(plan: Plan, source: str | None) -> list[str]:
    """The two header lines."""
    from cgplan import __version__

    tokens = query_lens_text(plan)
    unit = "token" if tokens == "1" else "tokens"  # a plain decode step: "1 token per request"
    per_request = f"uniform decode = {tokens} {unit} per request" + (
        " (dynamic SD: by batch size)" if plan.dynamic_sd_lookup and "or" in tokens else ""
    )
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
        + f" · {per_request}"
        + f" · {graph_count(plan)} graphs",
    ]


def pieces_line(plan: Plan) -> str | None:
    """What a PIECEWISE descriptor is in CUDA graphs, family by family."""
    if not plan.piecewise_pieces:
        return None
    if plan.breakable_cudagraphs:
        return (
            "(a PIECEWISE descriptor is one breakable capture: a CUDA graph per segment between "
            "attention and KV-cache ops, which run eager)"
        )
    if len(plan.piecewise_pieces) == 1:
        return (
            f"(a PIECEWISE descriptor is {plan.piecewise_pieces[0][1]} CUDA graphs: one per compiled piece)"
        )
    parts = [f"{n} CUDA graphs in the {FAMILY_LABELS.get(f, f)}" for f, n in plan.piecewise_pieces]
    return f"(a PIECEWISE descriptor is {', '.join(parts)}: one per compiled piece)"


def ladder_lines(plan: Plan) -> list[str]:
    """The capture ladder itself (sizes in tokens, largest = max_capture_size)."""
    if not plan.capture_sizes:
        return ["capture sizes: none (no CUDA graphs)"]
    return [f"capture sizes ({len(plan.capture_sizes)}, tokens): {ladder_text(sorted(plan.capture_sizes))}"]


def mixed_rows(plan: Plan) -> list[tuple[str, str, str]]:
    """(tokens, outcome, why) of mixed/prefill batches by token count, eager ranges first."""
    b = plan.max_num_batched_tokens
    rows: list[tuple[int, int, str, str]] = []
    covered = 0
    target = plan.graphs.get("target") or ()
    # V1 LoRA without cudagraph_specialize_lora captures the adapter set only
    adapters_only = bool(target) and all(g.num_active_loras > 0 for g in target)
    top = plan.max_capture_size or 0
    above = f"above the largest capture size {plan.max_capture_size}"
    for r in plan.mixed:
        covered = max(covered, r.last)
        if r.mode != "NONE":
            rows.append((r.first, r.last, outcome_name(r.mode), f"a {r.mode} graph of the next capture size"))
        elif Mode(plan.cudagraph_mode).mixed_mode() is Mode.NONE:
            rows.append((r.first, r.last, EAGER, "no mixed-batch graphs in " + plan.cudagraph_mode))
        else:
            # a range within the ladder has no graph for another reason than its size
            if r.first <= top:
                within = (
                    "no graph without a LoRA adapter (every graph is captured for adapters)"
                    if adapters_only
                    else "no graph of its size"
                )
                rows.append((r.first, min(r.last, top), EAGER, within))
            if r.last > top:
                rows.append((max(r.first, top + 1), r.last, EAGER, above))
    if covered < b:
        why = (
            "CUDA graphs are off"
            if plan.cudagraph_mode == "NONE"
            else "no mixed-batch graphs in " + plan.cudagraph_mode
            if Mode(plan.cudagraph_mode).mixed_mode() is Mode.NONE
            else above
        )
        rows.append((covered + 1, b, EAGER, why))
    merged: list[tuple[int, int, str, str]] = []
    for row in rows:
        same_why = not merged or not merged[-1][3] or not row[3] or merged[-1][3] == row[3]
        if merged and merged[-1][2] == row[2] and merged[-1][1] == row[0] - 1 and same_why:
            merged[-1] = (merged[-1][0], row[1], row[2], merged[-1][3] or row[3])
        else:
            merged.append(row)
    merged.sort(key=lambda r: (r[2] != EAGER, r[0]))
    return [(f"{a}" if a == z else f"{a}..{z}", o, w) for a, z, o, w in merged]


def padding_line(plan: Plan) -> str:
    """Worst and mean per-step padding of graph-replayed uniform-decode steps."""
    p = step_padding(plan)
    if not p.replayed_batches:
        return "per-step padding: no uniform-decode batch replays a graph"
    if p.worst_pct == 0:
        return (
            f"per-step padding: none (all {p.replayed_batches} graph-replayed batch sizes fit a graph "
            "exactly)"
        )
    return (
        f"per-step padding (uniform decode, graph-replayed): worst {_pct(p.worst_pct)} "
        f"({p.worst_reqs} requests × {p.worst_query_len} tokens), mean {_pct(p.mean_pct)} over "
        f"{p.replayed_batches} batch sizes, each counted once"
    )


def assumed_lines(plan: Plan) -> list[str]:
    """The defaults the plan assumed, with their origin."""
    return [f"{a.key} = {a.value}: {a.origin}" for a in plan.assumed]


def kv_tokens(plan: Plan) -> int | None:
    """KV-cache tokens the predicted capture-phase memory takes on each rank."""
    if (
        plan.cost is None
        or not plan.cost.graphs
        or not plan.kv_bytes_per_token
        or not plan.graph_memory_reserved
    ):
        return None
    return int(plan.cost.total_mib * (1 << 20) // plan.kv_bytes_per_token)


@dataclass(frozen=True)
class GapGroup:
    """Gaps of one tier and outcome shown as one line: one range, the request counts listed."""

    query_len: int
    outcome: str
    first: int
    last: int
    batches: int
    runs: tuple[tuple[int, int], ...]
    reason: str


def gap_groups(plan: Plan) -> list[GapGroup]:
    """Gaps grouped: every PIECEWISE fallback of a tier on one line (not N one-request gaps)."""
    out: list[GapGroup] = []
    for g in plan.gaps:
        q = g.query_len or 1
        last = out[-1] if out else None
        if last is not None and g.mode == "PIECEWISE" and last.outcome == "PIECEWISE" and last.query_len == q:
            out[-1] = GapGroup(
                q,
                "PIECEWISE",
                last.first,
                g.last,
                last.batches + g.last - g.first + 1,
                (*last.runs, (g.first, g.last)),
                f"no FULL graph for these request counts × {q} tokens; the {plan.model_runner} "
                "dispatcher falls back to a PIECEWISE graph",
            )
        else:
            out.append(
                GapGroup(
                    q,
                    outcome_name(g.mode),
                    g.first,
                    g.last,
                    g.last - g.first + 1,
                    ((g.first, g.last),),
                    g.reason,
                )
            )
    return out


def runs_text(runs: tuple[tuple[int, int], ...], limit: int = 12) -> str:
    """ "85, 89, 101-102, …" (one-request runs as one number)."""
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in runs]
    return ", ".join(parts[:limit]) + (f", … ({len(parts) - limit} more)" if len(parts) > limit else "")


def gap_title(g: GapGroup) -> str:
    """ "requests 31-32 × 17 tokens → EAGER" (a group: its span and how many request counts)."""
    span = f"{g.first}" if g.first == g.last else f"{g.first}-{g.last}"
    title = f"requests {span} × {g.query_len} tokens → {g.outcome}"
    if len(g.runs) > 1:
        title += f" at {g.batches} of {g.last - g.first + 1} request counts: {runs_text(g.runs)}"
    return title


def _short_flags(flags: tuple[str, ...]) -> str:
    """A fix's flags in a line that tells fixes apart: a long value list as its ends and count
    ("--cudagraph-capture-sizes 1 2 4 ... 2048 (104 sizes)"), not cut after the first flag (four
    fixes sharing `-cc.cudagraph_mode=FULL` read as one)."""
    out = []
    for flag in flags:
        words = flag.split()
        if len(flag) > 48 and len(words) > 5:
            unit = "sizes" if words[0].endswith("sizes") else "values"
            flag = f"{' '.join(words[:4])} ... {words[-1]} ({len(words) - 1} {unit})"
        out.append(flag)
    return " ".join(out)


def fix_title(plan: Plan, i: int) -> str:
    """ "fix", "or" or "partial fix" for the i-th fix."""
    f = plan.fixes[i]
    if not f.complete:
        return "partial fix"
    return "fix" if i == 0 else "or"


def _gap_span(plan: Plan, i: int) -> str:
    g = plan.gaps[i]
    span = f"{g.first}" if g.first == g.last else f"{g.first}-{g.last}"
    if g.family != "uniform_decode":
        return f"{span} tokens {outcome_name(g.mode)}"
    return f"{span} requests × {g.query_len} {outcome_name(g.mode)}"


def verdict_line(plan: Plan) -> str:
    """The plan in one line, first: its gaps, what they cost at the traffic, the best fix.

    `verdict: 2 gaps (86-256 requests × 6 EAGER, 84-85 requests × 6 PIECEWISE) cost 35.8% of the
    expected 2.76 ms step (extrapolated) · best fix: --max-cudagraph-capture-size 1536 (expected
    step 2.76 → 1.78 ms, graphs 239 → 301, +170 MiB)`."""
    if not plan.gaps:
        return "verdict: no gaps · every uniform-decode batch of every tier replays a decode-mode graph"
    lat = plan.latency
    # the costliest two by their share of the step (the plan's order without a latency model)
    order = list(range(len(plan.gaps)))
    if lat is not None and lat.gaps:
        cost = {g.gap: g.expected_cost_ms_per_step for g in lat.gaps}
        order.sort(key=lambda i: -cost.get(i, 0.0))
    named = ", ".join(_gap_span(plan, i) for i in order[:2])
    more = f" and {len(plan.gaps) - 2} more" if len(plan.gaps) > 2 else ""
    n = len(plan.gaps)
    line = f"verdict: {n} gap{'s' * (n != 1)} ({named}{more})"
    if lat is not None and lat.expected_step_ms > 0 and lat.gaps:
        share = sum(g.expected_cost_ms_per_step for g in lat.gaps) / lat.expected_step_ms
        line += f" cost {share:.1%} of the expected {lat.expected_step_ms:.2f} ms step"
        line += " (extrapolated)" if lat.extrapolated else ""
        if not any(g.worth_closing for g in lat.gaps):
            line += " · not worth closing"
    if not plan.fixes:
        offered = lat is not None and lat.not_offered
        return line + (" · no fix offered (every fix found is slower)" if offered else " · no fix found")
    f = plan.fixes[0]
    parts = []
    timed = {t.fix: t for t in lat.fixes} if lat is not None else {}
    if lat is not None and 0 in timed:
        parts.append(f"expected step {lat.expected_step_ms:.2f} → {timed[0].expected_step_ms_after:.2f} ms")
    parts.append(f"graphs {f.graphs_before} → {f.graphs_after}")
    if f.pool_before_mib is not None and f.pool_after_mib is not None:
        extrapolated = ", extrapolated" if f.pool_after_outside else ""
        parts.append(f"{f.pool_after_mib - f.pool_before_mib:+,.0f} MiB{extrapolated}")
    if not f.complete:
        parts.append(f"{f.remaining_gaps} gap(s) left")
    return line + f" · best fix: {_short_flags(f.flags)} ({', '.join(parts)})"


def no_fix_line(plan: Plan) -> str:
    """Why a plan with gaps offers no fix: none found within the budgets, or every one found is
    predicted slower than leaving the gaps."""
    lat = plan.latency
    if lat is not None and lat.not_offered:
        return (
            f"no fix offered: the {len(lat.not_offered)} found are predicted slower than leaving the gaps "
            "(listed under the predicted step time)"
        )
    return (
        "no flag change closes them within the default gate's budgets "
        "(every candidate was planned again or bounded; --allow-over-budget to see more)"
    )


def fix_details(f: Fix) -> list[str]:
    """The lines under a fix's flags: what it changes and what it costs."""
    lines = [f"changes: {'; '.join(f.changes)}"] if f.changes else []
    lines.append(
        "→ " + f.summary + (" (checked: the changed config was planned again)" if f.complete else "")
    )
    if not f.complete and f.still_open:
        lines.append(f"partial: {f.still_open}")
    if f.over_budget:
        lines.append(f"over the gate's budget: {'; '.join(f.over_budget)}")
    return lines


def _where(plan: Plan, high_mib: float) -> str:
    """Where the graph memory comes from: the KV cache, or on top of gpu_memory_utilization."""
    if plan.graph_memory_reserved:
        return "taken from the KV cache"
    return (
        "not reserved: capture adds on top of gpu_memory_utilization; lower --gpu-memory-utilization "
        f"by {high_mib / 1024:,.2f} GiB / the GPU's memory (see the notes)"
    )


CONFIG_LINES_TITLE = "in the YAML, set (paste at its end: each line replaces the key it names):"
"""What precedes a fix's config lines in the table and the markdown."""


def cost_lines(plan: Plan) -> list[str]:
    """The predicted memory and capture time, in a few lines (nothing without a prediction).

    Graph memory is the capture phase (warmups included): what vLLM's "Graph capturing finished
    in ... took X GiB" line counts and what `diff` and the gate hold against a capture report's
    `capture_nvml_delta_bytes`, on each rank."""
    c = plan.cost
    if c is None or not c.graphs:
        return []
    per_rank = " per rank" if any("tensor parallel" in x for x in c.caveats) else ""
    d = c.domain
    if not d.figure:
        return [
            f"predicted graph memory{per_rank}: no figure · outside the validated domain: "
            + "; ".join(d.outside),
            f"  validated domain ({c.gpu} cost model): {d.fitted}",
        ]
    band = "" if d.inside else f", band x{d.band_factor:g} wider: outside the validated domain"
    kv = kv_tokens(plan)
    kv_text = (
        f" = {kv:,} KV-cache tokens at {plan.kv_bytes_per_token:,} bytes/token"
        if kv is not None
        else (f" (KV-cache tokens not predicted: {plan.kv_withheld})" if plan.kv_withheld else "")
    )
    lines = [
        f'predicted graph memory{per_rank} (capture phase, as vLLM\'s "took X GiB"): {c.total_mib:,.0f} MiB '
        f"({c.low_mib:,.0f}..{c.high_mib:,.0f}{band}) {_where(plan, c.high_mib)}{kv_text} · "
        f"capture ~{c.capture_s:.1f} s ({capture_band_text(c)}) "
        f"· {c.gpu} cost model"
    ]
    if d.inside:
        lines.append(f"  inside the validated domain: {d.fitted}")
    else:
        lines.append(f"  outside the validated domain ({d.fitted}): " + "; ".join(d.outside))
    lines.append(f"  detail, graph sections ({c.graphs_mib:,.0f} MiB) and warmups ({c.warmup_mib:,.0f} MiB):")
    lines.extend(
        f"    {fm.family} {fm.mode}: {fm.graphs} graphs, pool {fm.pool_mib:,.0f} MiB + graph state "
        f"{fm.exec_mib:,.0f} MiB"
        for fm in c.by_family_mode
    )
    lines.append(f"    warmup runs during capture: {c.warmup_mib:,.0f} MiB")
    lines.extend(f"  caveat: {x}" for x in c.caveats)
    return lines


def capture_band_text(c: CostPrediction) -> str:
    """The capture time's band, as measured on the fitted reports (widened outside the domain)."""
    if c.capture_band_s is None:
        return "no band: the coefficient set records none"
    return f"{c.capture_band_s[0]:.1f}..{c.capture_band_s[1]:.1f} s"


def latency_withheld_line(plan: Plan) -> str:
    """The step-time line of a plan outside the latency model's measured domain."""
    return (
        "predicted step time: not predicted: outside the measured domain ("
        + "; ".join(plan.latency_withheld)
        + ")"
    )


def latency_lines(plan: Plan) -> list[str]:
    """The predicted step times, each gap's cost and each fix's gain (nothing without a prediction)."""
    lat = plan.latency
    if lat is None and plan.latency_withheld:
        return [latency_withheld_line(plan)]
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
        if gl.verdict:
            lines.append(f"    {gl.verdict}")
    if len(lat.gaps) > len(shown):
        rest = [x for x in lat.gaps if x not in shown]
        lines.append(
            f"  {len(rest)} more gap(s): {sum(x.expected_cost_ms_per_step for x in rest):+.3f} ms on the "
            "expected step together"
        )
    extrapolated = ", extrapolated" if lat.extrapolated else ""
    for fl in lat.fixes:
        f = plan.fixes[fl.fix]
        lines.append(
            f"  fix {fl.fix + 1} ({_short_flags(f.flags)}): gains {fl.widest_gap_gain_ms:.2f} ms per step "
            "at the widest gap "
            f"batch; expected step {lat.expected_step_ms:.2f} → {fl.expected_step_ms_after:.2f} ms "
            f"({-fl.gain_ms_per_step:+.3f} ms{extrapolated})"
        )
    lines.extend(
        f"  not offered ({_short_flags(sf.flags)}): predicted slower than leaving the gaps; expected "
        f"step {lat.expected_step_ms:.2f} → {sf.expected_step_ms_after:.2f} ms "
        f"({-sf.gain_ms_per_step:+.3f} ms)"
        for sf in lat.not_offered
    )
    if lat.fix_order and (plan.fixes or lat.not_offered):
        lines.append(f"  {lat.fix_order}")
    lines.extend(f"  caveat: {x}" for x in lat.caveats)
    return lines
