"""Gaps (uniform-decode batches that run eager or below the FULL mode they were
promised) and the smallest flag changes that close them, checked by planning again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from cgplan.core.ladder import Ladder
from cgplan.core.modes import Mode
from cgplan.core.rules import DecodeSizes, rules_for
from cgplan.core.spec import PlanInput
from cgplan.core.types import Fix, Gap, Plan

Replan = Callable[[PlanInput], Plan]


def tier_batches(plan: Plan, query_len: int) -> list[tuple[int, int]]:
    """Request-count runs that really decode at `query_len` (the dynamic-SD tier)."""
    if plan.dynamic_sd_lookup is None:
        return [(1, plan.max_num_seqs)] if query_len == plan.uniform_decode_query_len else []
    return [(a, b) for a, b, k in plan.dynamic_sd_lookup if k + 1 == query_len]


def decode_outcomes(plan: Plan) -> Iterator[tuple[int, int, int, str, int | None]]:
    """(query_len, first, last, mode, padded_tokens) over every tier's own batches."""
    for ql, ranges in sorted(plan.uniform_decode.items()):
        for lo, hi in tier_batches(plan, ql):
            for r in ranges:
                a, b = max(lo, r.first), min(hi, r.last)
                if a <= b:
                    yield ql, a, b, r.mode, r.padded_tokens


def padding_tokens(plan: Plan) -> int:
    """Padded tokens summed over every uniform-decode batch that replays a graph."""
    total = 0
    for ql, a, b, mode, padded in decode_outcomes(plan):
        if mode != "NONE" and padded is not None:
            # Σ_{n=a..b} (padded − n·ql) in closed form: O(ranges), not O(max_num_seqs).
            count = b - a + 1
            total += count * padded - ql * (a + b) * count // 2
    return total


def gap_batches(plan: Plan) -> int:
    """(tier, request count) pairs inside a gap: what a fix must drive to zero."""
    return sum(g.last - g.first + 1 for g in plan.gaps)


def graph_count(plan: Plan) -> int:
    """Graph descriptors over every family."""
    return sum(len(g) for g in plan.graphs.values())


def _eager_reason(plan: Plan, ladder: Ladder | None, ql: int, a: int, b: int) -> str:
    lo_tokens, hi_tokens = a * ql, b * ql
    span = f"{lo_tokens}" if a == b else f"{lo_tokens}..{hi_tokens}"
    if plan.cudagraph_mode == "NONE":
        return "CUDA graphs are off (enforce_eager, cudagraph_mode NONE or -O0)"
    if lo_tokens > plan.max_capture_size:
        why = f"{span} tokens exceed max_capture_size {plan.max_capture_size}"
        if ladder is not None and ladder.inferred_max_tokens is not None:
            rules = rules_for(plan.vllm_version)
            inferred = ladder.inferred_max_tokens
            why += (
                f"; vLLM {plan.vllm_version} infers the maximum as "
                f"min(max_num_seqs×{plan.uniform_decode_query_len}×2, "
                f"{ladder.ceiling_tokens}) = {inferred}"
            )
            if rules.decode_sizes is DecodeSizes.NONE:
                why += " and appends no uniform-decode sizes (they arrive in 0.29.0)"
            else:
                why += " and appends decode sizes only up to it (#50488 capped by #54418)"
            if plan.max_num_batched_tokens < inferred:
                why += f", capped by max_num_batched_tokens {plan.max_num_batched_tokens}"
        elif ladder is not None:
            why += (
                "; an explicit max_cudagraph_capture_size or cudagraph_capture_sizes gets no "
                "uniform-decode sizes appended (vLLM #54933)"
            )
        return why
    return (
        f"no {plan.cudagraph_mode} graph serves a uniform batch of {span} tokens "
        f"(query length {ql}) in vLLM {plan.vllm_version}'s {plan.model_runner} runner"
    )


def find_gaps(plan: Plan, ladder: Ladder | None = None) -> tuple[Gap, ...]:
    """Every tier's request counts that run eager, or PIECEWISE under a FULL decode mode."""
    gaps: list[Gap] = []
    decode_full = Mode(plan.cudagraph_mode).decode_mode() is Mode.FULL
    downgraded = Mode(plan.requested_cudagraph_mode).decode_mode() is Mode.FULL and not decode_full
    for ql, a, b, mode, _ in decode_outcomes(plan):
        if mode == "NONE":
            gaps.append(Gap("uniform_decode", ql, a, b, "NONE", _eager_reason(plan, ladder, ql, a, b)))
        elif mode == "PIECEWISE" and decode_full:
            gaps.append(
                Gap(
                    "uniform_decode",
                    ql,
                    a,
                    b,
                    "PIECEWISE",
                    f"no FULL graph for {a}..{b} requests × {ql} tokens; the {plan.model_runner} "
                    "dispatcher falls back to a PIECEWISE graph",
                )
            )
        elif mode == "PIECEWISE" and downgraded:
            why = next((n.message for n in plan.notes if n.kind == "mode_downgrade"), "downgraded")
            gaps.append(Gap("uniform_decode", ql, a, b, "PIECEWISE", why))
    return tuple(gaps)


def _candidates(
    plan: Plan, inp: PlanInput
) -> Iterator[tuple[tuple[str, ...], tuple[tuple[str, object], ...], PlanInput]]:
    needed = sorted({b * g.query_len for g in plan.gaps if g.query_len for b in (g.last,)})
    if not needed:
        return
    widest = max(needed)
    if inp.cudagraph_capture_sizes is None and widest > plan.max_capture_size:
        yield (
            (f"--max-cudagraph-capture-size {widest}",),
            (("compilation_config.max_cudagraph_capture_size", widest),),
            replace(inp, max_cudagraph_capture_size=widest),
        )
    sizes = sorted(set(plan.capture_sizes) | set(needed))
    user_max = inp.max_cudagraph_capture_size
    new_max = sizes[-1] if user_max is not None else None
    flag = "-cc.cudagraph_capture_sizes=" + "[" + ",".join(map(str, sizes)) + "]"
    flags: tuple[str, ...] = (flag,)
    change: tuple[tuple[str, object], ...] = (("compilation_config.cudagraph_capture_sizes", sizes),)
    if new_max is not None:
        flags += (f"-cc.max_cudagraph_capture_size={new_max}",)
        change += (("compilation_config.max_cudagraph_capture_size", new_max),)
    yield (
        flags,
        change,
        replace(inp, cudagraph_capture_sizes=tuple(sizes), max_cudagraph_capture_size=new_max),
    )


def propose_fixes(plan: Plan, inp: PlanInput, ladder: Ladder, replan: Replan) -> tuple[Fix, ...]:
    """Flag changes that close gaps, each verified by planning the changed config again."""
    fixes: list[Fix] = []
    before_graphs, before_pad = graph_count(plan), padding_tokens(plan)
    for flags, change, changed in _candidates(plan, inp):
        try:
            after = replan(changed)
        except ValueError:
            continue
        remaining = len(after.gaps)
        if gap_batches(after) >= gap_batches(plan):
            continue
        closed = tuple(
            i
            for i, g in enumerate(plan.gaps)
            if not any(
                h.query_len == g.query_len and h.first <= g.last and g.first <= h.last for h in after.gaps
            )
        )
        after_graphs, after_pad = graph_count(after), padding_tokens(after)
        fixes.append(
            Fix(
                flags=flags,
                config_change=change,
                closes=closed,
                remaining_gaps=remaining,
                graphs_before=before_graphs,
                graphs_after=after_graphs,
                num_capture_sizes_after=len(after.capture_sizes),
                padding_before_tokens=before_pad,
                padding_after_tokens=after_pad,
                summary=(
                    f"{len(after.capture_sizes)} capture sizes, graphs {before_graphs} → {after_graphs}, "
                    f"decode padding {before_pad} → {after_pad} tokens, gaps {len(plan.gaps)} → {remaining}"
                ),
            )
        )
    fixes.sort(
        key=lambda f: (f.remaining_gaps, f.padding_after_tokens, f.graphs_after, len(" ".join(f.flags)))
    )
    return tuple(fixes)
