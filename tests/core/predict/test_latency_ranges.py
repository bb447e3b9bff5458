"""The default traffic (every request count once) priced on runs: equal to the point-by-point sum,
and its cost follows the plan's graphs, not max_num_seqs (issue 18)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from cgplan.core.model.spec import PlanInput
from cgplan.core.model.types import Plan, Rejected
from cgplan.core.plan.build import build_plan
from cgplan.core.predict import latency as lat
from cgplan.io.config import Overrides, load_config
from cgplan.io.latency_coefficients import shipped_latency
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
CONFIGS = sorted(
    [
        *(ROOT / "configs/examples").glob("*.yaml"),
        *(ROOT / "configs/gpu").glob("*.yaml"),
        *(ROOT / "benchmarks/configs").glob("*.yaml"),
    ]
)


def _naive_widest(plan: Plan) -> tuple[int, int]:
    n = plan.max_num_seqs
    while n > 1 and n * lat._query_len_for(plan, n) > plan.max_num_batched_tokens:
        n -= 1
    return n, lat._query_len_for(plan, n)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-12)


def _same(c: lat.LatencyCoefficients, plan: Plan, inp: PlanInput) -> None:
    point = lat.expected(c, plan, inp, lat.uniform_traffic(plan))
    runs = lat._expected_ranges(c, plan, inp, lat.uniform_ranges(plan))
    assert _close(point.step_ms, runs.step_ms)
    assert _close(point.eager_share, runs.eager_share)
    assert _close(point.tokens_per_s, runs.tokens_per_s)
    assert lat.widest_batch(plan) == _naive_widest(plan)


def _inputs() -> list[PlanInput]:
    return [load_config(path, Overrides()).input for path in CONFIGS]


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_runs_equal_points_on_the_bundled_configs(path: Path) -> None:
    inp = load_config(path, Overrides()).input
    try:
        plan = build_plan(inp, with_fixes=False)
    except Rejected:
        pytest.skip("the release refuses this config (a GPU run's negative case)")
    _same(shipped_latency(), plan, inp)


def test_runs_equal_points_with_kinks_inside_the_runs() -> None:
    """Coefficients drawn so that host and GPU time cross, and the compute-bound knee falls,
    inside dispatch runs (where `forward_ms` bends): the run sums still equal the point sums."""
    rng = random.Random(18)
    base = shipped_latency()
    inputs = _inputs()
    for trial in range(60):
        inp = inputs[trial % len(inputs)]
        s = rng.choice([3, 17, 64, 300, 1024])
        spec = inp.speculative
        if spec is not None and spec.num_speculative_tokens_per_batch_size is not None:
            spec = dataclasses.replace(spec, num_speculative_tokens_per_batch_size=None)
        x = dataclasses.replace(inp, max_num_seqs=s, speculative=spec)
        try:
            plan = build_plan(x, with_fixes=False)
        except Rejected:  # a variant the release refuses is no case here
            continue
        c = dataclasses.replace(
            base,
            compute_bound_from_tokens=rng.uniform(16, 1024),
            host_ms_full=base.host_ms_full * rng.uniform(0.1, 40),
            host_ms_piecewise=base.host_ms_piecewise * rng.uniform(0.1, 40),
            host_ms_eager=base.host_ms_eager * rng.uniform(0.1, 40),
            gpu_ms_per_gflop=base.gpu_ms_per_gflop * rng.uniform(0.1, 10),
            eager_overlap_loss=rng.uniform(0, 1),
            piecewise_overlap_loss=rng.uniform(0, 1),
        )
        _same(c, plan, x)


def test_default_traffic_cost_does_not_follow_max_num_seqs(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 10^6 requests the default traffic is priced in a few thousand step evaluations (it was
    one per request count, per fix: 23 s of CPU for the benchmark's config)."""
    inp = load_config(ROOT / "benchmarks/configs/eagle-k16-mns1024-dyn4.yaml", Overrides()).input
    x = dataclasses.replace(inp, max_num_seqs=10**6, max_num_batched_tokens=10**6)
    plan = build_plan(x)
    calls = 0
    real = lat.step_ms

    def counted(*args: object) -> float:
        nonlocal calls
        calls += 1
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(lat, "step_ms", counted)

    def replan(j: int) -> tuple[Plan, PlanInput] | None:
        return None

    pred = lat.predict_latency(shipped_latency(), plan, x, replan=replan)
    assert pred.expected_step_ms > 0
    assert calls < 5_000


def test_bound_step_is_step_ms_to_the_bit() -> None:
    """`_Walk.step` (the latency walk's step time, constants bound once) gives `step_ms`'s float
    exactly, for every mode, with and without the drafter, across drawn coefficients (issue 18)."""
    rng = random.Random(1818)
    base = shipped_latency()
    inputs = _inputs()
    for trial in range(300):
        c = dataclasses.replace(
            base,
            compute_bound_from_tokens=rng.uniform(16, 1024),
            host_ms_full=base.host_ms_full * rng.uniform(0.1, 40),
            host_ms_piecewise=base.host_ms_piecewise * rng.uniform(0.1, 40),
            host_ms_eager=base.host_ms_eager * rng.uniform(0.1, 40),
            gpu_ms_per_gflop=base.gpu_ms_per_gflop * rng.uniform(0.1, 10),
            gpu_ms_per_request=base.gpu_ms_per_request * rng.uniform(0, 3),
            eager_overlap_loss=rng.uniform(0, 1),
            piecewise_overlap_loss=rng.uniform(0, 1),
        )
        target = lat.forward_shape(inputs[trial % len(inputs)].model)
        walk = lat._Walk(c, target)
        for _ in range(20):
            n, q = rng.randint(1, 4096), rng.randint(1, 17)
            mode, dec_mode = rng.choice(lat.MODES), rng.choice(("FULL", "NONE"))
            tokens, dec_tokens = rng.randint(n * q, n * q + 512), rng.randint(n, n + 64)
            steps = rng.choice([0, q])
            prefill = rng.choice([None, mode])
            shape = lat.StepShape(
                mode, tokens, n * q, prefill, tokens if prefill else 0, n if prefill else 0,
                dec_mode, dec_tokens if prefill else 0, steps if prefill else 0, n,
            )  # fmt: skip
            got = walk.step(mode, tokens, n * q, n, prefill, n, dec_mode, dec_tokens, steps)
            assert got == lat.step_ms(c, target, shape)


def test_fix_walks_reuse_the_plans_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pricing the benchmark config and its fixes sums each run of request counts once, whichever
    plan (the config's or a fix's) it belongs to: a fix's walk shares most runs with the plan's.
    It took 2,043 `decode_step` calls (one per point of every run of every walk); the JSON is the
    same (tests/golden)."""
    from cgplan.core.plan.assess import apply_change
    from cgplan.core.plan.build import plan_again

    inp = load_config(ROOT / "benchmarks/configs/eagle-k16-mns1024-dyn4.yaml", Overrides()).input
    plan = build_plan(inp)
    assert len(plan.fixes) >= 3
    calls = 0
    real = lat.decode_step

    def counted(*args: object) -> lat.StepShape:
        nonlocal calls
        calls += 1
        return real(*args)  # type: ignore[arg-type]

    def replan(j: int) -> tuple[Plan, PlanInput] | None:
        changed = apply_change(inp, plan.fixes[j].config_change)
        return None if changed is None else (plan_again(changed), changed)

    monkeypatch.setattr(lat, "decode_step", counted)
    pred = lat.predict_latency(shipped_latency(), plan, inp, replan=replan)
    assert len(pred.fixes) == len(plan.fixes)
    assert calls < 1_000
