"""`cgplan plan` as a library: a config file or a `vllm serve` line in, a plan out.

`plan()` is the command's one call (paths in, a `PlanResult` out); `plan_file` and
`plan_vllm_args` are its two halves for callers that already hold the coefficient, latency and
traffic objects (diff, gate, sweep, capture, logs)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from cgplan.core.model.spec import PlanInput
from cgplan.core.model.types import Note, Plan
from cgplan.core.plan.assess import coefficients_for, with_cost, with_latency
from cgplan.core.plan.build import build_plan
from cgplan.core.plan.gaps import FixSearch
from cgplan.core.plan.policies import UPSTREAM, CapturePolicy
from cgplan.core.predict.cost import CostCoefficients
from cgplan.core.predict.latency import LatencyCoefficients
from cgplan.errors import ConfigError, ConfigRejected
from cgplan.io.config import LoadedConfig, Overrides, load_config, parse_config
from cgplan.io.cost_coefficients import default_coefficients, moe_coefficients
from cgplan.io.latency_coefficients import shipped_latency_for

if TYPE_CHECKING:
    from cgplan.core.compare.gate import GatePolicy
    from cgplan.core.optimize.traffic import Traffic


@dataclass(frozen=True)
class PlanResult:
    """What `cgplan plan` computed: the loaded config, its plan and how outputs name them."""

    loaded: LoadedConfig
    plan: Plan
    policy: CapturePolicy
    source: str
    """The config's name in outputs (its path, `-`, or `vllm-args`)."""
    fingerprint: str
    """The config's fingerprint (`config_fingerprint` of the JSON)."""


def plan(
    config: Path | None,
    argv: Sequence[str] | None,
    overrides: Overrides,
    *,
    model_config: Path | None = None,
    policy: str | None = None,
    coefficients: Path | None = None,
    latency_coefficients: Path | None = None,
    traffic: Path | None = None,
    allow_over_budget: bool = False,
) -> PlanResult:
    """Plan `config` (a YAML path, `-` for stdin) or `argv` (a `vllm serve` command line): the
    files named by `policy` (a built-in name or a YAML), `coefficients`, `latency_coefficients`
    and `traffic` are read here.

    Raises:
        ConfigError: bad input, located in the file or at the flag; a config the release refuses.
    """
    from cgplan.core.plan.fingerprint import fingerprint
    from cgplan.io.cost_coefficients import load_coefficients
    from cgplan.io.policies import load_capture_policy

    pol = load_capture_policy(policy)
    coeffs = load_coefficients(coefficients) if coefficients is not None else None
    lat, hist = None, None
    if latency_coefficients is not None:
        from cgplan.io.latency_coefficients import load_latency

        lat = load_latency(latency_coefficients)
    if traffic is not None:
        from cgplan.io.traffic import load_traffic

        hist = load_traffic(traffic)
    if argv is not None:
        loaded, result = plan_vllm_args(
            argv,
            overrides,
            model_config=model_config,
            policy=pol,
            coefficients=coeffs,
            latency=lat,
            traffic=hist,
            allow_over_budget=allow_over_budget,
        )
        source = "vllm-args"  # vllm_args.SOURCE, not imported on the plan FILE path
    else:
        if config is None:
            raise ConfigError("<input>", "give a config file or a vllm serve command line")
        loaded, result = plan_file(
            config,
            overrides,
            policy=pol,
            coefficients=coeffs,
            latency=lat,
            traffic=hist,
            allow_over_budget=allow_over_budget,
        )
        source = loaded.source
    return PlanResult(loaded, result, pol, source, fingerprint(loaded.input))


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
        # the fixes are priced with the set the plan's own figure comes from (MoE/MLA: issue 16)
        search = fix_search(
            coefficients or shipped_coefficients_for(loaded.input), allow_over_budget=allow_over_budget
        )
        plan = _build(loaded.input, with_fixes, policy, search)
    except ConfigRejected as e:
        raise e.located(str(path)) from None
    plan = with_cost(plan, loaded.input, coefficients or shipped_coefficients_for(loaded.input))
    if plan.fixes and loaded.document is not None:
        from cgplan.io.config_fix import fix_config_lines, flags_beside

        doc = loaded.document
        flag_keys = {k.replace("-", "_") for k in doc if isinstance(k, str)}
        plan = replace(
            plan,
            fixes=tuple(
                replace(flags_beside(f, flag_keys), config_lines=fix_config_lines(doc, f.config_change))
                for f in plan.fixes
            ),
        )
    return loaded, _timed(plan, loaded.input, latency, traffic, policy)


FIX_SEARCH_WORK = 10**7
"""Upper bound on max_num_seqs x dynamic-SD ranges for the fix search: it re-plans and walks
every request count of every gap per candidate (10^7 plans in about 20 s on 2 cores; 2 x 10^7,
1,000 ranges at 20,000 requests, took 45 s and 10^8 five minutes). Above it the plan lists its
gaps without fixes and says why."""


def _build(inp: PlanInput, with_fixes: bool, policy: CapturePolicy, search: FixSearch) -> Plan:
    ranges = len(inp.speculative.num_speculative_tokens_per_batch_size or ()) if inp.speculative else 0
    work = inp.max_num_seqs * max(1, ranges)
    if not with_fixes or work <= FIX_SEARCH_WORK:
        return build_plan(inp, with_fixes=with_fixes, policy=policy, search=search)
    plan = build_plan(inp, with_fixes=False, policy=policy, search=search)
    if not plan.gaps:
        return plan
    why = Note(
        "fix_search_skipped",
        f"cgplan: no fix search: max_num_seqs x dynamic-SD ranges = {work:,} is above {FIX_SEARCH_WORK:,}, "
        "the bound that keeps a plan within a minute; the gaps are listed without fixes",
    )
    return replace(plan, notes=(*plan.notes, why))


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
    from cgplan.io.vllm_args import SOURCE, read_vllm_args

    base = base_dir if base_dir is not None else Path.cwd()
    release = overrides.vllm_version if overrides is not None else None
    strict = overrides.strict if overrides is not None else False
    parsed = read_vllm_args(
        argv, model_config=model_config, base_dir=base, vllm_version=release, strict=strict
    )
    try:
        notes: list[str] = [*parsed.notes]
        inp, ignored = parse_config(parsed.doc, base, overrides or Overrides(), notes)
        loaded = LoadedConfig(
            inp,
            SOURCE,
            tuple(parsed.ignored + ignored),
            (*notes, *(f"not modelled: {u}" for u in parsed.unmodelled)),
            tuple(parsed.unmodelled),
        )
        search = fix_search(
            coefficients or shipped_coefficients_for(inp), allow_over_budget=allow_over_budget
        )
        plan = _build(loaded.input, with_fixes, policy, search)
    except ConfigError as e:
        raise parsed.locate(e) from None
    plan = with_cost(plan, loaded.input, coefficients or shipped_coefficients_for(loaded.input))
    if plan.fixes and {"max_cudagraph_capture_size", "cudagraph_capture_sizes"} & parsed.given:
        from cgplan.io.config_fix import flags_beside

        plan = replace(plan, fixes=tuple(flags_beside(f, parsed.given) for f in plan.fixes))
    return loaded, _timed(plan, loaded.input, latency, traffic, policy)


def plan_doc(
    doc: dict[str, object], source: str, overrides: Overrides | None = None, base_dir: Path | None = None
) -> tuple[LoadedConfig, Plan]:
    """Plan a config document already in hand (a YAML's mapping: `cgplan logs` builds one from
    a log's engine arguments), with fixes, cost and step times as `plan_file` gives them.

    Raises:
        ConfigError: bad input, located at the key (not in a file), or a config the release
            refuses (ConfigRejected).
    """
    notes: list[str] = []
    inp, ignored = parse_config(doc, base_dir or Path.cwd(), overrides or Overrides(), notes)
    loaded = LoadedConfig(inp, source, tuple(ignored), tuple(notes))
    coefficients = shipped_coefficients_for(inp)
    plan = _build(inp, True, UPSTREAM, fix_search(coefficients))
    plan = with_cost(plan, inp, coefficients)
    return loaded, _timed(plan, inp, None, None)


def _timed(
    plan: Plan,
    inp: PlanInput,
    latency: LatencyCoefficients | None,
    traffic: Traffic | None,
    policy: CapturePolicy = UPSTREAM,
) -> Plan:
    """The plan with its predicted step times (`latency`, default: the shipped H200 set) at
    `traffic` (default: every uniform-decode batch size once); fixes priced under `policy`."""
    if traffic is None:
        return with_latency(plan, inp, latency or shipped_latency_for(inp.gpu_name), policy=policy)
    return with_latency(
        plan,
        inp,
        latency or shipped_latency_for(inp.gpu_name),
        traffic.uniform_decode,
        traffic.mixed,
        traffic.source,
        policy=policy,
    )


def fix_search(
    coefficients: CostCoefficients | None = None,
    *,
    allow_over_budget: bool = False,
    policy: GatePolicy | None = None,
) -> FixSearch:
    """The fix search `plan` runs: the default gate's budgets (or `policy`'s) and the cost model."""
    from cgplan.core.plan.budgets import DEFAULT_BUDGETS

    budgets = DEFAULT_BUDGETS
    if policy is not None:  # the gate's module only for a gate policy: `plan` has none (issue 18)
        from cgplan.core.compare.gate import budgets_of

        budgets = budgets_of(policy)
    return FixSearch(budgets, coefficients or shipped_coefficients(), allow_over_budget)


@functools.lru_cache(maxsize=1)
def shipped_coefficients() -> CostCoefficients:
    """The H200 coefficients shipped with cgplan (read once)."""
    return default_coefficients()


@functools.lru_cache(maxsize=1)
def _shipped_moe() -> CostCoefficients | None:
    return moe_coefficients()


def shipped_coefficients_for(inp: PlanInput) -> CostCoefficients:
    """The shipped set for this config's model: the MoE/MLA set where one is shipped (issue 16)."""
    return coefficients_for(inp, shipped_coefficients(), _shipped_moe())
