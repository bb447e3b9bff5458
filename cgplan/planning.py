"""The library entry point behind `cgplan plan`: a config file or a `vllm serve` line in, a plan out."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from cgplan.config import LoadedConfig, Overrides, load_config, parse_config
from cgplan.core.cost import CostCoefficients
from cgplan.core.gaps import FixSearch
from cgplan.core.gate import DEFAULT_BUDGETS, GatePolicy, budgets_of
from cgplan.core.latency import LatencyCoefficients
from cgplan.core.plan import build_plan
from cgplan.core.policies import UPSTREAM, CapturePolicy
from cgplan.core.spec import PlanInput
from cgplan.core.types import Plan
from cgplan.costs import default_coefficients, with_cost
from cgplan.errors import ConfigError, ConfigRejected
from cgplan.latency import shipped_latency, with_latency
from cgplan.traffic import Traffic


def plan_file(
    path: str | Path,
    overrides: Overrides | None = None,
    *,
    with_fixes: bool = True,
    policy: CapturePolicy = UPSTREAM,
    coefficients: CostCoefficients | None = None,
    latency: LatencyCoefficients | None = None,
    traffic: Traffic | None = None,
    allow_over_budget: bool = False,
) -> tuple[LoadedConfig, Plan]:
    """Load `path` and plan it, with its predicted cost (`coefficients`, default: the shipped H200
    set); vLLM's refusals come back located in that file.

    Raises:
        ConfigError: bad input, or a config the chosen release refuses (ConfigRejected).
    """
    loaded = load_config(path, overrides or Overrides())
    try:
        search = fix_search(coefficients, allow_over_budget=allow_over_budget)
        plan = build_plan(loaded.input, with_fixes=with_fixes, policy=policy, search=search)
    except ConfigRejected as e:
        raise e.located(str(path)) from None
    plan = with_cost(plan, loaded.input, coefficients or shipped_coefficients())
    return loaded, _timed(plan, loaded.input, latency, traffic)


def plan_vllm_args(
    argv: Sequence[str],
    overrides: Overrides | None = None,
    *,
    model_config: Path | None = None,
    base_dir: Path | None = None,
    with_fixes: bool = True,
    policy: CapturePolicy = UPSTREAM,
    coefficients: CostCoefficients | None = None,
    latency: LatencyCoefficients | None = None,
    traffic: Traffic | None = None,
    allow_over_budget: bool = False,
) -> tuple[LoadedConfig, Plan]:
    """Read a `vllm serve` command line as vLLM would, then plan it like the equivalent YAML.

    `base_dir` (default: the working directory) is where a relative MODEL or --config FILE starts;
    `model_config` gives the shape (config.json or its folder) of a hub model.

    Raises:
        ConfigError: located at the flag that set the offending value (`--vllm-args:<flag>: ...`),
            also for a config the chosen release refuses (ConfigRejected).
    """
    # Imported here: plan FILE (the common path) does not pay for vLLM's flag table.
    from cgplan.vllm_args import SOURCE, read_vllm_args

    base = base_dir if base_dir is not None else Path.cwd()
    parsed = read_vllm_args(argv, model_config=model_config, base_dir=base)
    try:
        notes: list[str] = []
        inp, ignored = parse_config(parsed.doc, base, overrides or Overrides(), notes)
        loaded = LoadedConfig(inp, SOURCE, tuple(parsed.ignored + ignored), tuple(notes))
        search = fix_search(coefficients, allow_over_budget=allow_over_budget)
        plan = build_plan(loaded.input, with_fixes=with_fixes, policy=policy, search=search)
    except ConfigError as e:
        raise parsed.locate(e) from None
    plan = with_cost(plan, loaded.input, coefficients or shipped_coefficients())
    return loaded, _timed(plan, loaded.input, latency, traffic)


def _timed(plan: Plan, inp: PlanInput, latency: LatencyCoefficients | None, traffic: Traffic | None) -> Plan:
    """The plan with its predicted step times (`latency`, default: the shipped H200 set) at
    `traffic` (default: every uniform-decode batch size once)."""
    if traffic is None:
        return with_latency(plan, inp, latency or shipped_latency())
    return with_latency(
        plan, inp, latency or shipped_latency(), traffic.uniform_decode, traffic.mixed, traffic.source
    )


def fix_search(
    coefficients: CostCoefficients | None = None,
    *,
    allow_over_budget: bool = False,
    policy: GatePolicy | None = None,
) -> FixSearch:
    """The fix search `plan` runs: the default gate's budgets (or `policy`'s) and the cost model."""
    return FixSearch(
        budgets_of(policy) if policy is not None else DEFAULT_BUDGETS,
        coefficients or shipped_coefficients(),
        allow_over_budget,
    )


@functools.lru_cache(maxsize=1)
def shipped_coefficients() -> CostCoefficients:
    """The H200 coefficients shipped with cgplan (read once)."""
    return default_coefficients()
