"""The library entry point behind `cgplan optimize`: traffic in, the best ladder's flags out."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from cgplan.config import Overrides, load_config
from cgplan.core.gaps import graph_count
from cgplan.core.modes import Mode
from cgplan.core.optimize import optimal_ladders
from cgplan.core.plan import build_plan
from cgplan.core.traffic_cost import TrafficCost, query_len_for, traffic_cost
from cgplan.core.types import Plan
from cgplan.errors import ConfigError, ConfigRejected
from cgplan.traffic import Traffic, load_traffic


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

    @property
    def flags(self) -> tuple[str, ...]:
        """The vLLM flag that sets this ladder."""
        return ("-cc.cudagraph_capture_sizes=[" + ",".join(map(str, self.sizes)) + "]",)


def optimize_config(
    config: Path,
    traffic_path: Path,
    overrides: Overrides,
    *,
    max_sizes: int | None = None,
    max_graphs: int | None = None,
    eager_step_cost: float = 1000.0,
    max_capture_size: int | None = None,
) -> Optimized:
    """Choose the capture sizes minimising expected padding + eager cost under a size budget
    (default: as many sizes as vLLM's default ladder), and verify them by planning again."""
    loaded = load_config(config, overrides)
    traffic = load_traffic(traffic_path)
    inp = loaded.input
    try:
        default_plan = build_plan(inp, with_fixes=False)
    except ConfigRejected as e:
        raise e.located(str(config)) from None
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
        raise ConfigError("", "the traffic file has no batch shapes", source=str(traffic_path))
    cap = (
        inp.max_num_batched_tokens
        if max_capture_size is None
        else min(max_capture_size, inp.max_num_batched_tokens)
    )
    graph_budget = max_graphs if max_graphs is not None else graph_count(default_plan)
    best: tuple[float, Plan] | None = None
    # Every size count's optimal ladder, re-planned through the dispatcher model; keep the
    # cheapest whose graph count fits the budget (descriptors, as vLLM captures them).
    for sol in reversed(optimal_ladders(shapes, budget, cap, eager_step_cost)):
        if not sol.sizes:
            continue
        changed = dataclasses.replace(inp, cudagraph_capture_sizes=sol.sizes, max_cudagraph_capture_size=None)
        try:
            candidate = build_plan(changed, with_fixes=False)
        except ConfigRejected:
            continue
        if graph_count(candidate) > graph_budget:
            continue
        cost = traffic_cost(candidate, traffic.uniform_decode, traffic.mixed).total(eager_step_cost)
        if best is None or cost < best[0]:
            best = (cost, candidate)
    if best is None:
        raise ConfigError("--max-graphs", f"no ladder fits {graph_budget} graphs for this traffic")
    plan = best[1]
    return Optimized(
        traffic=traffic,
        default_plan=default_plan,
        default_cost=traffic_cost(default_plan, traffic.uniform_decode, traffic.mixed),
        plan=plan,
        cost=traffic_cost(plan, traffic.uniform_decode, traffic.mixed),
        sizes=tuple(plan.capture_sizes),
        budget_sizes=budget,
        eager_step_cost=eager_step_cost,
    )
