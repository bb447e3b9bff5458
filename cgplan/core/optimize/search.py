"""Ladder optimiser: the capture sizes that minimise expected padding plus eager cost for a
traffic histogram, under a size budget. Exact dynamic programming (pure).

Model. A batch of t tokens replays the smallest capture size s ≥ t and wastes s − t padded
tokens; a batch above the largest size runs eager, costing `eager_step_cost` token-equivalents
per step (the launch overhead a graph saves; a knob: it depends on the model and GPU).
Both vLLM dispatchers pad this way for mixed batches, and for uniform decode batches when
the size is a multiple of the tier's query length (every candidate is a shape's own token
count, so it is). With several dynamic-SD tiers a size also yields rounded graphs for the
other tiers; the result is therefore always re-planned through the real dispatcher model
before it is reported.

Search. Shapes sorted by tokens t_1 < … < t_m with weights w_i; choosing r sizes is
partitioning the sorted shapes into r runs, each padded to its last element:
    dp[r][j] = min_{i<j} dp[r-1][i] + t_j·(W_j − W_i) − (T_j − T_i)
The run cost is Monge (it satisfies the quadrangle inequality), so the optimal split points
are monotone (opt[r-1][j] ≤ opt[r][j] ≤ opt[r][j+1]) and Knuth's bounds give O(k·m) total,
not O(k·m²): the programme is core/optimize/partition.py, shared with the time objective.
`brute_force_sizes` is the O(k·m²) definition it is tested against.

Over plans. `optimize` runs the search behind `cgplan optimize`: every candidate ladder (this
DP's, or core/optimize/timed.py's for the step-time objective) is planned again through the real
dispatcher model and held to the graph, memory and capture-time budgets and the default gate;
the result is `Optimized`, the default ladder and the chosen one, both costed on the traffic.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cgplan.core.compare.gate import DEFAULT_POLICY, GatePolicy, evaluate_gate
from cgplan.core.compare.sides import side_from_plan
from cgplan.core.errors import ConfigError, ConfigRejected
from cgplan.core.model.modes import Mode
from cgplan.core.model.spec import PlanInput
from cgplan.core.model.types import Plan
from cgplan.core.optimize.partition import best_partitions, brute_force, sizes_of
from cgplan.core.optimize.timed import TimedShape, optimal_timed_ladders
from cgplan.core.optimize.traffic import Traffic
from cgplan.core.optimize.traffic_cost import TrafficCost, query_len_for, traffic_cost
from cgplan.core.plan.assess import with_cost
from cgplan.core.plan.build import build_plan
from cgplan.core.plan.gaps import graph_count
from cgplan.core.predict.cost import CostCoefficients
from cgplan.core.predict.latency import (
    LatencyCoefficients,
    StepShape,
    decode_step,
    domain_caveats,
    drafter_shape,
    expected,
    forward_ms,
    forward_shape,
    mixed_step,
    step_ms,
)


@dataclass(frozen=True)
class Solution:
    """Chosen sizes and their modelled cost."""

    sizes: tuple[int, ...]
    padded_tokens: float
    eager_steps: float
    cost: float


def _prepare(shapes: Sequence[tuple[int, float]], max_tokens: int) -> tuple[list[int], list[float], float]:
    weights: dict[int, float] = {}
    over = 0.0  # steps no graph may take (above the size cap): eager whatever we choose
    for t, w in shapes:
        if w <= 0 or t <= 0:
            continue
        if t > max_tokens:
            over += w
        else:
            weights[t] = weights.get(t, 0.0) + w
    ts = sorted(weights)
    return ts, [weights[t] for t in ts], over


def optimal_ladders(
    shapes: Sequence[tuple[int, float]], max_sizes: int, max_tokens: int, eager_step_cost: float = 1000.0
) -> list[Solution]:
    """For every size count r = 0..max_sizes, the best ladder of at most r sizes ≤ max_tokens.

    Index r of the result is optimal among ladders of ≤ r sizes (so costs never rise with r).
    """
    ts, ws, over = _prepare(shapes, max_tokens)
    m = len(ts)
    c = eager_step_cost
    big_w = [0.0] * (m + 1)
    big_t = [0.0] * (m + 1)
    for i in range(m):
        big_w[i + 1] = big_w[i] + ws[i]
        big_t[i + 1] = big_t[i] + ws[i] * ts[i]

    def run(i: int, j: int) -> float:  # shapes i+1..j (1-based) padded to t_j
        tj = ts[j - 1]
        return tj * (big_w[j] - big_w[i]) - (big_t[j] - big_t[i])

    def eager(j: int) -> float:
        return c * (big_w[m] - big_w[j])

    out = []
    for total, ends in best_partitions(m, max_sizes, run, eager, 1e-9):
        j_last = ends[-1] if ends else 0
        steps = (big_w[m] - big_w[j_last]) + over
        out.append(
            Solution(sizes_of(ends, ts), total - c * (big_w[m] - big_w[j_last]), steps, total + c * over)
        )
    return out


def optimal_sizes(
    shapes: Sequence[tuple[int, float]], max_sizes: int, max_tokens: int, eager_step_cost: float = 1000.0
) -> Solution:
    """The best ≤ max_sizes capture sizes ≤ max_tokens for (tokens, steps) shapes.

    >>> optimal_sizes([(3, 1.0), (4, 1.0), (8, 1.0)], max_sizes=2, max_tokens=8).sizes
    (4, 8)
    """
    return optimal_ladders(shapes, max_sizes, max_tokens, eager_step_cost)[-1]


def brute_force_sizes(
    shapes: Sequence[tuple[int, float]], max_sizes: int, max_tokens: int, eager_step_cost: float = 1000.0
) -> float:
    """The optimal cost by the plain O(k·m²) recurrence (for tests)."""
    ts, ws, over = _prepare(shapes, max_tokens)
    m = len(ts)
    c = eager_step_cost

    def run(i: int, j: int) -> float:
        return sum(ws[x] * (ts[j - 1] - ts[x]) for x in range(i, j))

    def tail(j: int) -> float:
        return c * sum(ws[x] for x in range(j, m))

    return brute_force(m, max_sizes, run, tail) + c * over


OBJECTIVES = ("time", "padding")


@dataclass(frozen=True)
class Optimized:
    """The default ladder and the optimised one, both re-planned and costed on the traffic."""

    traffic: Traffic
    default_plan: Plan
    default_cost: TrafficCost
    plan: Plan
    cost: TrafficCost
    sizes: tuple[int, ...]
    budget_sizes: int
    eager_step_cost: float
    objective: str = "padding"
    """time: expected step time (latency model); padding: padded tokens + eager steps (a proxy)."""
    default_step_ms: float = 0.0
    """Expected step time of the default ladder at the traffic (latency model)."""
    step_ms: float = 0.0
    default_memory_mib: float | None = None
    """Predicted graph memory of the default ladder (cost model)."""
    memory_mib: float | None = None
    memory_budget_mib: float | None = None
    default_capture_s: float | None = None
    capture_s: float | None = None
    latency_gpu: str = ""
    relaxed: tuple[str, ...] = ()
    """Default-gate checks the result was allowed to fail (asked for with --relax)."""
    gave_up: tuple[str, ...] = ()
    """Default-gate checks the result fails, each with why (empty: it passes the gate)."""
    notes: tuple[str, ...] = ()
    """How the config was read (a patch release planned with its release's rules, a GPU name)."""
    caveats: tuple[str, ...] = ()
    """Where the config lies outside the domain of the latency and cost models (their figures
    are extrapolations there), as `plan` states them."""

    @property
    def improved(self) -> bool:
        """The result is another ladder than the default and better by the objective (or as good
        and lighter in predicted memory): else there is no flag worth setting."""
        if self.sizes == tuple(self.default_plan.capture_sizes):
            return False
        if self.objective == "time":
            lighter = (
                self.memory_mib is not None
                and self.default_memory_mib is not None
                and self.memory_mib < self.default_memory_mib
            )
            return self.step_ms < self.default_step_ms or (self.step_ms <= self.default_step_ms and lighter)
        return self.cost.total(self.eager_step_cost) < self.default_cost.total(self.eager_step_cost)

    @property
    def flags(self) -> tuple[str, ...]:
        """The vLLM flag that sets this ladder."""
        return (shlex.quote("-cc.cudagraph_capture_sizes=[" + ",".join(map(str, self.sizes)) + "]"),)


def check_options(
    objective: str,
    relax: tuple[str, ...],
    max_memory_mib: float | None = None,
    max_capture_s: float | None = None,
) -> None:
    """The options `optimize` refuses before any file is read (an unknown objective or check, a
    budget the objective does not price)."""
    if objective not in OBJECTIVES:
        raise ConfigError("--objective", f"must be one of {', '.join(OBJECTIVES)} (got {objective!r})")
    if objective != "time":
        # the padding objective ranks ladders by padded tokens and eager steps alone: a memory or
        # capture-time budget given with it was silently not held
        for flag, value in (("--max-graph-memory-mib", max_memory_mib), ("--max-capture-s", max_capture_s)):
            if value is not None:
                raise ConfigError(
                    flag,
                    f"applies to --objective time (got --objective {objective}, which prices neither "
                    "memory nor capture time)",
                )
    unknown = [r for r in relax if r not in RELAXABLE]
    if unknown:
        raise ConfigError(
            "--relax", f"not a gate check (got {unknown[0]!r}; expected one of {', '.join(RELAXABLE)})"
        )


def optimize(
    inp: PlanInput,
    default_plan: Plan,
    traffic: Traffic,
    *,
    latency: LatencyCoefficients,
    coefficients: CostCoefficients,
    max_sizes: int | None = None,
    max_graphs: int | None = None,
    eager_step_cost: float = 1000.0,
    max_capture_size: int | None = None,
    objective: str = "padding",
    max_memory_mib: float | None = None,
    max_capture_s: float | None = None,
    relax: tuple[str, ...] = (),
    notes: tuple[str, ...] = (),
) -> Optimized:
    """Choose the capture sizes (see `_optimize`), then hold the result to the default gate
    (issue 13 item 6): it says which check it gave up and why, or that the gate was relaxed as asked.

    Raises:
        ConfigError: an option out of range, a config without CUDA graphs, no ladder within the
            budgets; a traffic without batch shapes has an empty key path (its file is the
            caller's to name).
    """
    check_options(objective, relax, max_memory_mib, max_capture_s)
    o = _optimize(
        inp,
        default_plan,
        traffic,
        latency,
        coefficients,
        max_sizes=max_sizes,
        max_graphs=max_graphs,
        eager_step_cost=eager_step_cost,
        max_capture_size=max_capture_size,
        objective=objective,
        max_memory_mib=max_memory_mib,
        max_capture_s=max_capture_s,
        relax=relax,
        notes=notes,
    )
    budget = max_sizes or o.budget_sizes
    checks = evaluate_gate(_relaxed(DEFAULT_POLICY, relax), side_from_plan(o.plan, "optimized")).checks
    gave_up = tuple(
        f"{c.name}: {c.detail} (no ladder within {budget} sizes and the graph budget passes it; "
        f"--relax {c.name} to accept that)"
        for c in checks
        if not (c.passed or c.skipped)
    )
    return dataclasses.replace(o, relaxed=relax, gave_up=gave_up)


def _optimize(
    inp: PlanInput,
    default_plan: Plan,
    traffic: Traffic,
    lat: LatencyCoefficients,
    coeffs: CostCoefficients,
    *,
    max_sizes: int | None,
    max_graphs: int | None,
    eager_step_cost: float,
    max_capture_size: int | None,
    objective: str,
    max_memory_mib: float | None,
    max_capture_s: float | None,
    relax: tuple[str, ...],
    notes: tuple[str, ...],
) -> Optimized:
    """Choose the capture sizes minimising expected padding + eager cost (objective "padding") or
    the expected step time (objective "time", under the predicted graph memory of the default ladder
    unless `max_memory_mib` says otherwise) under a size and graph budget (default: the default
    ladder's), and verify them by planning again."""
    gate_policy = _relaxed(DEFAULT_POLICY, relax)
    if Mode(default_plan.cudagraph_mode) is Mode.NONE:
        raise ConfigError(
            "compilation_config.cudagraph_mode", "CUDA graphs are off for this config: nothing to optimise"
        )
    budget = max_sizes if max_sizes is not None else len(default_plan.capture_sizes)
    if budget < 1:
        raise ConfigError("--max-sizes", f"must be >= 1 (got {budget})")
    shapes = [
        (n * query_len_for(default_plan, n), w) for n, w in traffic.uniform_decode if n <= inp.max_num_seqs
    ]
    shapes += list(traffic.mixed)
    if not shapes:
        raise ConfigError("", "the traffic file has no batch shapes")
    cap = (
        inp.max_num_batched_tokens
        if max_capture_size is None
        else min(max_capture_size, inp.max_num_batched_tokens)
    )
    graph_budget = max_graphs if max_graphs is not None else graph_count(default_plan)
    default_costed = with_cost(default_plan, inp, coeffs)
    default_mem = _memory_mib(default_costed)
    default_cap = _capture_s(default_costed)
    default_t = expected(lat, default_plan, inp, traffic.uniform_decode, traffic.mixed).step_ms
    if objective == "time":
        c = default_costed.cost
        why = (
            f"outside the validated domain: {'; '.join(c.domain.outside)}"
            if c is not None and c.graphs and not c.domain.figure
            else "no cost model figure"
        )
        # no candidate has a figure either: the budget would be silently not held
        if max_memory_mib is not None and default_mem is None:
            raise ConfigError(
                "--max-graph-memory-mib", f"cannot be held: no predicted graph memory for this config ({why})"
            )
        if max_capture_s is not None and default_cap is None:
            raise ConfigError(
                "--max-capture-s", f"cannot be held: no predicted capture time for this config ({why})"
            )
        mem_budget = max_memory_mib if max_memory_mib is not None else default_mem
        plan, mem, cap_s, t = _optimize_time(
            inp,
            default_plan,
            traffic,
            lat,
            coeffs,
            budget,
            cap,
            graph_budget,
            mem_budget,
            max_capture_s,
            gate_policy,
            () if "widest_decode_full" in relax else _widest_sizes(default_plan, cap),
        )
        return Optimized(
            traffic=traffic,
            default_plan=default_plan,
            default_cost=traffic_cost(default_plan, traffic.uniform_decode, traffic.mixed),
            plan=plan,
            cost=traffic_cost(plan, traffic.uniform_decode, traffic.mixed),
            sizes=tuple(plan.capture_sizes),
            budget_sizes=budget,
            eager_step_cost=eager_step_cost,
            objective="time",
            default_step_ms=default_t,
            step_ms=t,
            default_memory_mib=default_mem,
            memory_mib=mem,
            memory_budget_mib=mem_budget,
            default_capture_s=default_cap,
            capture_s=cap_s,
            latency_gpu=lat.gpu,
            notes=notes,
            caveats=_caveats(lat, inp, default_costed),
        )
    best: tuple[float, Plan] | None = None
    # Every size count's optimal ladder, re-planned through the dispatcher model; keep the
    # cheapest whose graph count fits the budget (descriptors, as vLLM captures them).
    # The default gate wants each tier's widest batch on a FULL graph: a FULL graph exists only for
    # a size that is the tier's exact widest token count, so those sizes are always kept (the rest
    # of the budget goes to the traffic). Candidates that fail the gate lose to ones that pass.
    must = (
        []
        if "widest_decode_full" in relax
        else sorted({last * ql for ql, last in _widest(default_plan) if last * ql <= cap})
    )
    fallback: tuple[float, Plan] | None = None
    for sol in reversed(optimal_ladders(shapes, max(1, budget - len(must)), cap, eager_step_cost)):
        sizes = tuple(sorted(set(sol.sizes) | set(must)))
        if not sizes:
            continue
        changed = dataclasses.replace(inp, cudagraph_capture_sizes=sizes, max_cudagraph_capture_size=None)
        try:
            candidate = build_plan(changed, with_fixes=False)
        except ConfigRejected:
            continue
        if graph_count(candidate) > graph_budget:
            continue
        cost = traffic_cost(candidate, traffic.uniform_decode, traffic.mixed).total(eager_step_cost)
        if evaluate_gate(gate_policy, side_from_plan(candidate, "optimized")).passed:
            if best is None or cost < best[0]:
                best = (cost, candidate)
        elif fallback is None or cost < fallback[0]:
            fallback = (cost, candidate)
    best = best or fallback
    if best is None:
        raise ConfigError("--max-graphs", f"no ladder fits {graph_budget} graphs for this traffic")
    plan = best[1]
    costed = with_cost(plan, inp, coeffs)
    return Optimized(
        traffic=traffic,
        default_plan=default_plan,
        default_cost=traffic_cost(default_plan, traffic.uniform_decode, traffic.mixed),
        plan=plan,
        cost=traffic_cost(plan, traffic.uniform_decode, traffic.mixed),
        sizes=tuple(plan.capture_sizes),
        budget_sizes=budget,
        eager_step_cost=eager_step_cost,
        default_step_ms=default_t,
        step_ms=expected(lat, plan, inp, traffic.uniform_decode, traffic.mixed).step_ms,
        default_memory_mib=default_mem,
        memory_mib=_memory_mib(costed),
        default_capture_s=default_cap,
        capture_s=_capture_s(costed),
        latency_gpu=lat.gpu,
        notes=notes,
        caveats=_caveats(lat, inp, default_costed),
    )


def _memory_mib(costed: Plan) -> float | None:
    """The predicted graph memory of a costed plan, None where `plan` gives no figure (no graphs,
    or outside every fitted domain: the number would be one the cost model disowns)."""
    c = costed.cost
    return c.total_mib if c is not None and c.graphs and c.domain.figure else None


def _capture_s(costed: Plan) -> float | None:
    """The predicted capture time of a costed plan, None where the memory figure is withheld (the
    two share one validated domain)."""
    c = costed.cost
    return c.capture_s if c is not None and c.graphs and c.domain.figure else None


def _caveats(lat: LatencyCoefficients, inp: PlanInput, costed: Plan) -> tuple[str, ...]:
    """The latency model's domain caveats, then the cost model's (memory), each labelled."""
    cost = tuple(costed.cost.caveats) if costed.cost is not None else ()
    if costed.cost is not None and costed.cost.graphs and not costed.cost.domain.figure:
        why = "; ".join(costed.cost.domain.outside)
        cost = (f"no figure · outside the validated domain: {why}", *cost)
    caveats = domain_caveats(lat, inp, costed.model_runner, costed.compilation_mode)
    return tuple(f"step time: {c}" for c in caveats) + tuple(f"graph memory: {c}" for c in cost)


def _timed_shapes(
    inp: PlanInput, plan: Plan, traffic: Traffic, lat: LatencyCoefficients
) -> tuple[list[TimedShape], dict[str, int]]:
    """The histogram as timed shapes (see core/optimize/timed.py), priced on `plan`'s drafter ladder."""
    target = forward_shape(inp.model)
    shapes: list[TimedShape] = []
    tiers: dict[str, int] = {}
    drafter = drafter_shape(target)
    for n, w in traffic.uniform_decode:
        if n > inp.max_num_seqs or w <= 0:
            continue
        q = query_len_for(plan, n)
        t = n * q
        kind = f"decode:{q}"
        tiers[kind] = q
        full = dataclasses.replace(decode_step(plan, inp, n, q, "FULL", t), draft_steps=0)
        eager = dataclasses.replace(decode_step(plan, inp, n, q, "NONE", t), draft_steps=0)
        fixed = step_ms(lat, target, full) - _graph_step(lat, inp, plan, kind, q, t)
        shapes.append(TimedShape(t, w, kind, step_ms(lat, target, eager) - fixed, fixed))
        steps = decode_step(plan, inp, n, q).draft_steps
        if steps:
            # The drafter's decode steps replay FULL graphs of n tokens from the same ladder
            # (sizes up to max_num_seqs): a ladder without small sizes runs them eager.
            eager_dec = forward_ms(lat, drafter, "NONE", n, n) + lat.draft_step_ms
            shapes.append(TimedShape(n, w * steps, "drafter_decode", eager_dec))
    for t, w in traffic.mixed:
        if w <= 0 or t > inp.max_num_batched_tokens:
            continue
        eager_ms = step_ms(lat, target, mixed_step(plan, inp, t, "NONE"))
        shapes.append(TimedShape(t, w, "mixed", eager_ms))
    return shapes, tiers


def _graph_step(lat: LatencyCoefficients, inp: PlanInput, plan: Plan, kind: str, q: int, s: int) -> float:
    """Modelled step time of a graph of s tokens for `kind`, as a function of s alone."""
    target = forward_shape(inp.model)
    if kind == "mixed":
        return step_ms(lat, target, mixed_step(plan, inp, s, "PIECEWISE"))
    if kind == "drafter_decode":
        return forward_ms(lat, drafter_shape(target), "FULL", s, s) + lat.draft_step_ms
    # A decode tier's FULL graph: vLLM rounds the size up to a multiple of the query length.
    tokens = -(-s // q) * q
    reqs = max(tokens // q, 1)
    full = decode_step(plan, inp, reqs, q, "FULL", tokens)
    return step_ms(
        lat,
        target,
        StepShape(full.target_mode, tokens, tokens, full.drafter_prefill_mode, tokens, reqs, reqs=reqs),
    )


def _optimize_time(
    inp: PlanInput,
    default_plan: Plan,
    traffic: Traffic,
    lat: LatencyCoefficients,
    coeffs: CostCoefficients,
    budget: int,
    cap: int,
    graph_budget: int,
    mem_budget: float | None,
    max_capture_s: float | None,
    gate_policy: GatePolicy = DEFAULT_POLICY,
    must: tuple[int, ...] = (),
) -> tuple[Plan, float | None, float | None, float]:
    """The ladder of least expected step time within the budgets; one that passes the (relaxed)
    default gate beats every one that fails it, and each DP ladder is tried also with the sizes
    the gate needs (`must`: each tier's widest batch, for its FULL graph)."""
    shapes, tiers = _timed_shapes(inp, default_plan, traffic, lat)

    def graph_ms(kind: str, s: int) -> float:
        return _graph_step(lat, inp, default_plan, kind, tiers.get(kind, 1), s)

    best: _Best | None = None
    # Graph memory grows mostly with the largest size (its pool), so a memory budget is met by
    # capping the ladder: try the full cap, then lower ones (shape sizes, about 10% apart); for
    # each, the DP's best ladders of the full size budget and of a few smaller ones.
    # Memory falls and time rises as the cap comes down, so the first cap with a candidate that
    # fits every budget holds the best one.
    tokens = sorted({x.tokens for x in shapes if x.tokens <= cap}, reverse=True)
    caps = [cap]
    for t in tokens:
        if t < caps[-1] * 0.9:
            caps.append(t)
        if len(caps) >= 16:
            break
    # Down to the default ladder's own top: below it a small config's budgets (the default's
    # memory) are met, and sixteen 10% steps from max_num_batched_tokens may not get there.
    top_default = max(default_plan.capture_sizes, default=0)
    if 0 < top_default < caps[-1]:
        caps.append(top_default)
    seen: set[tuple[int, ...]] = set()
    for c in caps:
        if best is not None and best[0][0] == 0:  # a ladder that passes the gate: caps only go down
            break
        ladders = optimal_timed_ladders(shapes, budget, c, graph_ms)
        top = len(ladders) - 1
        for r in sorted({top, top * 3 // 4, top // 2}, reverse=True):
            if r <= 0:
                continue
            sol = ladders[r]
            for sizes in (sol.sizes, tuple(sorted({*sol.sizes, *(m for m in must if m <= c)}))):
                if not sizes or sizes in seen:
                    continue
                seen.add(sizes)
                best = _consider(
                    sizes,
                    inp,
                    traffic,
                    lat,
                    coeffs,
                    graph_budget,
                    mem_budget,
                    max_capture_s,
                    best,
                    gate_policy,
                )
    # The default ladder itself meets its own budgets: the answer is never worse than it.
    best = _consider(
        tuple(default_plan.capture_sizes),
        inp,
        traffic,
        lat,
        coeffs,
        graph_budget,
        mem_budget,
        max_capture_s,
        best,
        gate_policy,
    )
    if best is None:
        raise ConfigError(
            "--max-graph-memory-mib",
            "no ladder fits the graph, memory and capture-time budgets for this traffic",
        )
    return best[1], best[2], best[3], best[0][1]


_Best = tuple[tuple[int, float], Plan, float | None, float | None]
"""((fails the gate, expected step ms), plan, MiB, capture s): the best ladder so far."""


def _widest_sizes(plan: Plan, cap: int) -> tuple[int, ...]:
    """The token counts of each tier's widest batch (within `cap`): a FULL graph serves that batch
    only at its exact size, which the default gate's widest_decode_full asks for."""
    return tuple(sorted({last * ql for ql, last in _widest(plan) if last * ql <= cap}))


def _consider(
    sizes: tuple[int, ...],
    inp: PlanInput,
    traffic: Traffic,
    lat: LatencyCoefficients,
    coeffs: CostCoefficients,
    graph_budget: int,
    mem_budget: float | None,
    max_capture_s: float | None,
    best: _Best | None,
    gate_policy: GatePolicy = DEFAULT_POLICY,
) -> _Best | None:
    """Re-plan a ladder; keep it if it fits the budgets and beats `best`: passing the gate first,
    then in expected step time."""
    for sol_sizes in (sizes,):
        changed = dataclasses.replace(inp, cudagraph_capture_sizes=sol_sizes, max_cudagraph_capture_size=None)
        try:
            candidate = build_plan(changed, with_fixes=False)
        except ConfigRejected:
            continue
        if graph_count(candidate) > graph_budget:
            continue
        costed = with_cost(candidate, changed, coeffs)
        mem = _memory_mib(costed)
        cap_s = _capture_s(costed)
        if mem_budget is not None and mem is not None and mem > mem_budget:
            continue
        if max_capture_s is not None and cap_s is not None and cap_s > max_capture_s:
            continue
        t = expected(lat, candidate, changed, traffic.uniform_decode, traffic.mixed).step_ms
        fails = 0 if evaluate_gate(gate_policy, side_from_plan(candidate, "optimized")).passed else 1
        if best is None or (fails, t) < best[0]:
            best = ((fails, t), candidate, mem, cap_s)
    return best


RELAXABLE = (
    "no_eager_uniform_decode",
    "widest_decode_full",
    "max_graphs_per_family",
    "no_piecewise_uniform_decode",
)
"""Default-gate checks `optimize --relax` may give up."""


def _relaxed(policy: GatePolicy, relax: tuple[str, ...]) -> GatePolicy:
    changes: dict[str, Any] = {r: ({} if r == "max_graphs_per_family" else False) for r in relax}
    return dataclasses.replace(policy, **changes)


def _widest(plan: Plan) -> list[tuple[int, int]]:
    """(query_len, widest batch) of every decode tier."""
    if plan.dynamic_sd_lookup is None:
        return [(plan.uniform_decode_query_len, plan.max_num_seqs)]
    out: dict[int, int] = {}
    for _, b, k in plan.dynamic_sd_lookup:
        out[k + 1] = max(out.get(k + 1, 0), b)
    return sorted(out.items())
