"""Optimize results as text and markdown (`cgplan optimize`): the default ladder against the
chosen one, on the traffic, with the flags that set it and the gate's verdict."""

from __future__ import annotations

from cgplan.core.optimize.search import Optimized
from cgplan.core.plan.gaps import graph_count


def no_improvement(o: Optimized) -> str:
    """What `optimize` says where its best ladder is the default one (or no better): no flag."""
    what = "expected step time" if o.objective == "time" else "padded tokens and eager steps"
    return (
        f"no improvement: no ladder within these budgets beats the default's {what} on this traffic; "
        "keep the default (no flag to set)"
    )


def render_optimize(o: Optimized) -> str:
    """The comparison as a plain-text table (colour is the CLI's)."""
    d, c = o.default_cost, o.cost

    def pct(x: float, total: float) -> str:
        return f"{100 * x / total:.2f}%" if total else "-"

    dp, dr, de = (
        f"{d.padded_tokens:>14,.0f}",
        pct(d.padded_tokens, d.real_tokens),
        pct(d.eager_steps, d.steps),
    )
    cp, cr, ce = (
        f"{c.padded_tokens:>14,.0f}",
        pct(c.padded_tokens, c.real_tokens),
        pct(c.eager_steps, c.steps),
    )

    def mib(x: float | None) -> str:
        return "-" if x is None else f"{x:,.0f}"

    lines = [
        f"traffic: {o.traffic.source} · {d.steps:,.0f} steps · vLLM {o.plan.vllm_version} · objective: "
        + ("expected step time" if o.objective == "time" else "padded tokens + eager steps"),
        f"{'':10} {'sizes':>6} {'graphs':>7} {'padded tokens':>14} {'padding':>8} {'eager steps':>12} "
        f"{'step ms':>8} {'graph MiB':>9}",
        f"{'default':10} {len(o.default_plan.capture_sizes):>6} {graph_count(o.default_plan):>7} "
        f"{dp} {dr:>8} {de:>12} {o.default_step_ms:>8.3f} {mib(o.default_memory_mib):>9}",
        f"{'optimized':10} {len(o.sizes):>6} {graph_count(o.plan):>7} {cp} {cr:>8} {ce:>12} "
        f"{o.step_ms:>8.3f} {mib(o.memory_mib):>9}",
        f"expected step time {o.default_step_ms:.3f} → {o.step_ms:.3f} ms "
        f"({(o.step_ms - o.default_step_ms) / o.default_step_ms:+.1%}) at "
        + (
            f"a graph-memory budget of {o.memory_budget_mib:,.0f} MiB (the default ladder's, predicted)"
            if o.memory_budget_mib is not None
            else "no memory budget"
        )
        + f" · {o.latency_gpu} latency model, H200 cost model",
        *(f"  caveat: {c}" for c in o.caveats),
        *(
            ["flags (checked: the ladder was planned again with these sizes):", "  " + " ".join(o.flags)]
            if o.improved
            else [no_improvement(o)]
        ),
    ]
    if o.relaxed:
        lines.append(f"gate: the default gate, relaxed as asked: {', '.join(o.relaxed)}")
    if o.gave_up:
        lines += ["gate: FAIL, the result fails the default gate; it gave up:"] + [
            f"  - {g}" for g in o.gave_up
        ]
    else:
        lines.append("gate: ok, the result passes the default gate (configs/gates/default.yaml)")
    return "\n".join(lines) + "\n"


def optimize_markdown(o: Optimized) -> str:
    """The comparison as a markdown table, for a PR comment (same figures as the table)."""
    d, c = o.default_cost, o.cost

    def pct(x: float, total: float) -> str:
        return f"{100 * x / total:.2f}%" if total else "-"

    def mib(x: float | None) -> str:
        return "-" if x is None else f"{x:,.0f}"

    objective = "expected step time" if o.objective == "time" else "padded tokens + eager steps"
    rows = [
        (
            "default",
            len(o.default_plan.capture_sizes),
            graph_count(o.default_plan),
            d,
            o.default_step_ms,
            o.default_memory_mib,
        ),
        ("optimized", len(o.sizes), graph_count(o.plan), c, o.step_ms, o.memory_mib),
    ]
    lines = [
        f"**cgplan optimize** · traffic `{o.traffic.source}` · {d.steps:,.0f} steps · "
        f"vLLM {o.plan.vllm_version} · objective: {objective}",
        "",
        "| ladder | sizes | graphs | padded tokens | padding | eager steps | step ms | graph MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, sizes, graphs, cost, ms, mem in rows:
        lines.append(
            f"| {name} | {sizes} | {graphs} | {cost.padded_tokens:,.0f} "
            f"| {pct(cost.padded_tokens, cost.real_tokens)} | {pct(cost.eager_steps, cost.steps)} "
            f"| {ms:.3f} | {mib(mem)} |"
        )
    budget = (
        f"a graph-memory budget of {o.memory_budget_mib:,.0f} MiB (the default ladder's, predicted)"
        if o.memory_budget_mib is not None
        else "no memory budget"
    )
    lines += [
        "",
        f"Expected step time {o.default_step_ms:.3f} → {o.step_ms:.3f} ms "
        f"({(o.step_ms - o.default_step_ms) / o.default_step_ms:+.1%}) at {budget} · {o.latency_gpu} "
        "latency model, H200 cost model.",
        *(["", *(f"- caveat: {c}" for c in o.caveats)] if o.caveats else []),
        "",
        *(
            [
                "Flags (checked: the ladder was planned again with these sizes):",
                "",
                "```bash",
                " ".join(o.flags),
                "```",
            ]
            if o.improved
            else [no_improvement(o).capitalize()]
        ),
    ]
    if o.relaxed:
        lines.append(f"\nGate: the default gate, relaxed as asked: {', '.join(o.relaxed)}.")
    if o.gave_up:
        lines += ["", "Gate: **FAIL**, the result fails the default gate; it gave up:", ""]
        lines += [f"- {g}" for g in o.gave_up]
    else:
        lines.append("\nGate: the result passes the default gate (configs/gates/default.yaml).")
    return "\n".join(lines) + "\n"
