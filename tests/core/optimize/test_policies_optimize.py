"""What-if capture policies and the ladder optimiser."""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
import shlex
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgplan.api.optimize import optimize_config
from cgplan.cli import main
from cgplan.core.compare.gate import DEFAULT_POLICY, evaluate_gate
from cgplan.core.compare.sides import side_from_plan
from cgplan.core.model.types import Plan
from cgplan.core.optimize.search import brute_force_sizes, optimal_ladders, optimal_sizes
from cgplan.core.optimize.traffic_cost import traffic_cost
from cgplan.core.plan.build import build_plan
from cgplan.core.plan.gaps import graph_count
from cgplan.core.plan.policies import BUILTIN_POLICIES
from cgplan.errors import ConfigError
from cgplan.io.config import Overrides, load_config
from cgplan.io.traffic import load_traffic
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
PR = ROOT / "configs/examples/pr50488-eagle-k16.yaml"
MTP = ROOT / "configs/examples/mtp-dsv3-k3.yaml"
TRAFFIC = ROOT / "configs/traffic"


def full(plan: object, family: str) -> list[int]:
    return [g.num_tokens for g in plan.graphs[family] if g.mode == "FULL"]  # type: ignore[attr-defined]


def test_seed_policy_mtp5_mns32_drafter_prefill_pow2() -> None:
    base = load_config(MTP).input
    assert base.speculative is not None
    inp = dataclasses.replace(
        base, max_num_seqs=32, speculative=dataclasses.replace(base.speculative, num_speculative_tokens=5)
    )
    up = build_plan(inp)
    pow2 = build_plan(inp, policy=BUILTIN_POLICIES["sparse-pow2-drafter-prefill"])
    q = 6
    assert sorted(full(pow2, "drafter_prefill")) == [n * q for n in (1, 2, 4, 8, 16, 32)]
    # PIECEWISE prefill graphs and the target are untouched; the drafter decode too
    assert [g for g in pow2.graphs["drafter_prefill"] if g.mode == "PIECEWISE"] == [
        g for g in up.graphs["drafter_prefill"] if g.mode == "PIECEWISE"
    ]
    assert pow2.graphs["target"] == up.graphs["target"]
    assert len(full(up, "drafter_prefill")) == len(full(up, "target")) > 6


def _mtp(max_num_seqs: int, k: int) -> object:
    base = load_config(MTP).input
    assert base.speculative is not None
    return dataclasses.replace(
        base,
        max_num_seqs=max_num_seqs,
        speculative=dataclasses.replace(base.speculative, num_speculative_tokens=k),
    )


def test_pow2_drafter_prefill_is_bounded_by_the_capture_maximum() -> None:
    # issue 16: 128 requests × 6 tokens = 768 is above the 512 maximum; vLLM never pads a batch past
    # max_cudagraph_capture_size, so such a graph would be captured and never replayed.
    plan = build_plan(_mtp(128, 5), policy=BUILTIN_POLICIES["sparse-pow2-drafter-prefill"])  # type: ignore[arg-type]
    assert plan.max_capture_size == 512
    drafter = sorted(full(plan, "drafter_prefill"))
    assert max(drafter) <= plan.max_capture_size
    # powers of two up to 64, then the widest request count that fits: 512 // 6 = 85
    assert drafter == [n * 6 for n in (1, 2, 4, 8, 16, 32, 64, 85)]


def test_pow2_drafter_prefill_keeps_max_num_seqs_when_not_a_power_of_two() -> None:
    plan = build_plan(_mtp(48, 5), policy=BUILTIN_POLICIES["sparse-pow2-drafter-prefill"])  # type: ignore[arg-type]
    graphs = [g for g in plan.graphs["drafter_prefill"] if g.mode == "FULL"]
    assert sorted(g.num_reqs or 0 for g in graphs) == [1, 2, 4, 8, 16, 32, 48]
    assert {g.num_tokens for g in graphs if g.num_reqs == 48} == {288}


def test_predicted_memory_per_policy() -> None:
    from cgplan.api.plan import plan_file

    eagle = ROOT / "configs/gpu/llama8b-eagle-k3-mns64.yaml"  # dense, inside the cost model's domain
    _, up = plan_file(eagle)
    _, pow2 = plan_file(eagle, policy=BUILTIN_POLICIES["sparse-pow2-drafter-prefill"])
    assert up.cost is not None and pow2.cost is not None
    assert up.cost.domain.inside and pow2.cost.domain.inside
    # fewer drafter FULL graphs: less graph state, never more
    assert len(full(pow2, "drafter_prefill")) < len(full(up, "drafter_prefill"))
    assert pow2.cost.total_mib < up.cost.total_mib


def test_uncapped_policy_closes_the_hopper_gap_and_costs_graphs() -> None:
    inp = load_config(PR).input
    up = build_plan(inp)
    unc = build_plan(inp, policy=BUILTIN_POLICIES["uncapped-uniform-decode"])
    assert up.gaps and not unc.gaps
    q = inp.uniform_decode_query_len
    assert unc.max_capture_size == inp.max_num_seqs * q
    assert graph_count(unc) > graph_count(up)


def test_explicit_max_keeps_decode_sizes() -> None:
    """vllm#54933: with an explicit maximum, max_num_seqs 100 (off the 8-stride) loses its exact
    size upstream (batches 97-100 pad to 104); the policy keeps it."""
    inp = dataclasses.replace(
        load_config(PR).input, speculative=None, max_num_seqs=100, max_cudagraph_capture_size=128
    )
    up = build_plan(inp)
    pol = build_plan(inp, policy=BUILTIN_POLICIES["explicit-max-keeps-decode"])
    assert 100 not in up.capture_sizes and 100 in pol.capture_sizes

    def padding(p: Plan) -> int:
        return sum(
            (r.padded_tokens or 0) - n for r in p.uniform_decode[1] for n in range(r.first, r.last + 1)
        )

    assert padding(pol) < padding(up)
    assert graph_count(pol) > graph_count(up)


def test_explicit_max_keeps_the_widest_decode_size_at_the_maximum(tmp_path: Path) -> None:
    """vllm#54933's reproducer (max_num_seqs 6, six speculative tokens, explicit maximum 42 = 6 x 7):
    upstream ends the list at 40 and truncates the maximum to it; vllm#55004 bounds the uniform decode
    sizes by the explicit maximum, inclusively, so the 42-token verify graph stays (ladder.py's
    `n * ql <= cap`: 42 is off the 8-stride, only the decode sizes can bring it)."""
    cfg = tmp_path / "issue54933.yaml"
    cfg.write_text(
        "model: configs/models/tiny-llama\nmax_num_seqs: 6\nmax_cudagraph_capture_size: 42\n"
        "speculative_config:\n  method: eagle\n  num_speculative_tokens: 6\n"
        "cgplan:\n  vllm_version: 0.33.0\n  platform: hopper\n"
    )
    inp = load_config(cfg).input
    up = build_plan(inp)
    pol = build_plan(inp, policy=BUILTIN_POLICIES["explicit-max-keeps-decode"])
    assert up.capture_sizes == (1, 2, 4, 8, 16, 24, 32, 40) and up.max_capture_size == 40
    assert 42 in pol.capture_sizes and pol.max_capture_size == 42


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 80), st.sampled_from([0.5, 1.0, 3.0, 10.0])), min_size=1, max_size=20),
    st.integers(0, 8),
    st.sampled_from([0.5, 5.0, 1000.0]),
)
def test_dp_is_exact(shapes: list[tuple[int, float]], k: int, eager: float) -> None:
    assert optimal_sizes(shapes, k, 64, eager).cost == pytest.approx(brute_force_sizes(shapes, k, 64, eager))
    costs = [s.cost for s in optimal_ladders(shapes, k, 64, eager)]
    assert all(b <= a + 1e-9 for a, b in itertools_pairwise(costs))


def itertools_pairwise(xs: list[float]) -> list[tuple[float, float]]:
    return list(itertools.pairwise(xs))


@pytest.mark.parametrize(
    ("config", "traffic"),
    [
        (PR, "decode-heavy-mns32.json"),
        (ROOT / "configs/gpu/med-llama-mns256.yaml", "bursty-mns256.json"),
    ],
)
def test_optimizer_beats_default_ladder_at_equal_graph_budget(config: Path, traffic: str) -> None:
    default = build_plan(load_config(config, Overrides(vllm_version="0.33.0")).input)
    o = optimize_config(
        config, TRAFFIC / traffic, Overrides(vllm_version="0.33.0"), max_capture_size=default.max_capture_size
    )
    assert graph_count(o.plan) <= graph_count(o.default_plan)
    assert len(o.sizes) <= len(o.default_plan.capture_sizes)
    assert o.cost.padded_tokens < o.default_cost.padded_tokens
    assert o.cost.eager_steps <= o.default_cost.eager_steps
    # verified by planning the emitted flag again
    sizes = json.loads(shlex.split(o.flags[0])[0].split("=", 1)[1])
    # issue 13 item 6: the result passes the default gate, or says which check it gave up (here only where
    # --max-capture-size 512 leaves the vllm#50488 batches 31-32 × 17 = 527..544 tokens no graph)
    passes = evaluate_gate(DEFAULT_POLICY, side_from_plan(o.plan, "o")).passed
    assert passes == (not o.gave_up)
    if config != PR:
        assert passes
    again = build_plan(
        dataclasses.replace(
            load_config(config, Overrides(vllm_version="0.33.0")).input, cudagraph_capture_sizes=tuple(sizes)
        )
    )
    t = load_traffic(TRAFFIC / traffic)
    assert traffic_cost(again, t.uniform_decode, t.mixed) == o.cost


def test_traffic_formats(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.log"
    metrics.write_text(
        "**CUDAGraph Config Settings:**\n- Mode: FULL_AND_PIECEWISE\n- Capture sizes: [1, 2, 4]\n\n"
        "| Unpadded Tokens | Padded Tokens | Num Paddings | Runtime Mode | Count |\n"
        "|-----------------|---------------|--------------|--------------|-------|\n"
        "| 3 | 4 | 1 | FULL | 10 |\n| 100 | 104 | 4 | PIECEWISE | 2 |\n| 3 | 4 | 1 | FULL | 5 |\n"
    )
    assert load_traffic(metrics).mixed == ((3, 15.0), (100, 2.0))
    prom = tmp_path / "metrics.prom"
    prom.write_text(
        'vllm:iteration_tokens_total_bucket{le="1.0",model_name="m"} 5\n'
        'vllm:iteration_tokens_total_bucket{le="8.0",model_name="m"} 12\n'
        'vllm:iteration_tokens_total_bucket{le="+Inf",model_name="m"} 12\n'
    )
    # issue 13 item 6: a bucket is spread over its token counts, not piled at its upper bound
    assert load_traffic(prom).mixed == ((1, 5.0), *((t, 1.0) for t in range(2, 9)))
    bad = tmp_path / "bad.yaml"
    bad.write_text("uniform_decode:\n  - {num_reqs: -3, count: 1}\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml:uniform_decode\[0\]\.num_reqs: must be an integer"):
        load_traffic(bad)


def test_optimize_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(
        sys,
        "argv",
        ["cgplan", "optimize", str(PR), "--traffic", str(TRAFFIC / "decode-heavy-mns32.json"), "--json"],
    )
    with pytest.raises(SystemExit) as info:
        main()
    doc = json.loads(capsys.readouterr().out)
    assert info.value.code in (0, None)
    assert doc["optimized"]["graphs"] <= doc["default"]["graphs"]
    assert doc["flags"][0].startswith("'-cc.cudagraph_capture_sizes=[")  # shell-quoted: [ is a glob
    assert doc["gate"]["gave_up"] == []
    assert doc["optimized"]["eager_steps"] <= doc["default"]["eager_steps"]


def test_random_traffic_never_worse_than_default_within_coverage() -> None:
    rng = random.Random(7)
    config = ROOT / "configs/gpu/med-llama-mns256.yaml"
    inp = load_config(config).input
    default = build_plan(inp)
    for _ in range(3):
        decode = [(n, float(rng.randint(1, 50))) for n in rng.sample(range(1, 257), 40)]
        shapes = [(n, w) for n, w in decode]
        sol = optimal_sizes(shapes, len(default.capture_sizes), default.max_capture_size)
        again = build_plan(dataclasses.replace(inp, cudagraph_capture_sizes=sol.sizes))
        assert (
            traffic_cost(again, decode, []).padded_tokens <= traffic_cost(default, decode, []).padded_tokens
        )


def test_policy_cli_plan_diff_sweep(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["cgplan", *args])
        with pytest.raises(SystemExit) as info:
            main()
        out = capsys.readouterr()
        code = info.value.code
        return (int(code) if isinstance(code, int) else 0), out.out, out.err

    code, out, _ = run("plan", str(PR), "--policy", "uncapped-uniform-decode", "--json")
    assert code == 0 and json.loads(out)["gaps"] == []
    code, out, _ = run(
        "diff", str(MTP), "--policy", "upstream", "--policy", "sparse-pow2-drafter-prefill", "--json"
    )
    rows = {(g["family"], g["mode"]): g for g in json.loads(out)["graphs"]}
    assert (
        code == 0
        and rows[("drafter_prefill", "FULL")]["count_b"] < rows[("drafter_prefill", "FULL")]["count_a"]
    )
    assert "(policy sparse-pow2-drafter-prefill)" in json.loads(out)["b"]["label"]
    code, out, _ = run(
        "sweep", str(PR), "--set", "max_num_seqs=8..40", "--policy", "uncapped-uniform-decode", "--json"
    )
    assert code == 0 and all(r["outcomes"]["0.33.0"]["status"] == "ok" for r in json.loads(out)["ranges"])
    custom = tmp_path / "mine.yaml"
    custom.write_text("name: mine\ndrafter_prefill_full: none\n")
    code, out, _ = run("plan", str(MTP), "--policy", str(custom), "--json")
    assert code == 0 and json.loads(out)["graph_counts"]["drafter_prefill"]["FULL"] == 0
    custom.write_text("drafter_prefill_full: sometimes\n")
    code, _, err = run("plan", str(MTP), "--policy", str(custom))
    assert code == 2 and "drafter_prefill_full: got 'sometimes'; expected target | pow2 | none" in err
    code, _, err = run("plan", str(MTP), "--policy", "nope")
    assert code == 2 and "--policy: unknown policy 'nope'" in err


def test_optimize_says_which_check_it_gave_up() -> None:
    """A budget too small for the gate: the result says what it gave up; --relax accepts it."""
    config = ROOT / "configs/gpu/med-llama-mns256.yaml"
    o = optimize_config(
        config, TRAFFIC / "bursty-mns256.json", Overrides(vllm_version="0.26.0"), max_capture_size=200
    )
    assert o.gave_up and any(g.startswith("no_eager_uniform_decode") for g in o.gave_up)
    assert "--relax no_eager_uniform_decode" in o.gave_up[0]
    r = optimize_config(
        config,
        TRAFFIC / "bursty-mns256.json",
        Overrides(vllm_version="0.26.0"),
        max_capture_size=200,
        relax=("no_eager_uniform_decode", "widest_decode_full"),
    )
    assert not r.gave_up and r.relaxed == ("no_eager_uniform_decode", "widest_decode_full")


def test_checked_in_optimized_config_passes_the_default_gate() -> None:
    """Before: configs/gpu/med-llama-mns256-optimized.yaml failed it (256 requests × 1 → PIECEWISE)."""
    plan = build_plan(load_config(ROOT / "configs/gpu/med-llama-mns256-optimized.yaml").input)
    assert evaluate_gate(DEFAULT_POLICY, side_from_plan(plan, "o")).passed
    o = optimize_config(
        ROOT / "configs/gpu/med-llama-mns256.yaml",
        TRAFFIC / "bursty-mns256.json",
        Overrides(vllm_version="0.26.0"),
        max_capture_size=512,
    )
    assert o.sizes == plan.capture_sizes  # regenerated with the command in its header


def test_optimize_in_time_always_has_the_default_ladder(tmp_path: Path) -> None:
    """A small config (no speculation, max_num_seqs 32: a default ladder up to 64 tokens) under a
    traffic with prefills up to 4,096 tokens: before, the time objective only tried ladders capped
    16 steps of 10% below max_num_batched_tokens (8192 → 1,647), all above the default's memory,
    and failed with "no ladder fits the graph, memory and capture-time budgets"."""
    config = tmp_path / "small.yaml"
    config.write_text(f"model: {ROOT / 'configs/models/tiny-llama'}\nmax_num_seqs: 32\n")
    o = optimize_config(config, TRAFFIC / "decode-heavy-mns32.json", Overrides(), objective="time")
    assert o.memory_mib is not None and o.memory_budget_mib is not None
    assert o.memory_mib <= o.memory_budget_mib
    assert o.step_ms <= o.default_step_ms  # never worse than the default ladder it may fall back to
    assert graph_count(o.plan) <= graph_count(o.default_plan)


def test_the_search_is_the_cores_from_values_alone() -> None:
    """issue 15: optimize's search over ladders is core.optimize.optimize, pure: given the parsed config,
    its default plan, the traffic values and the coefficient sets, it returns what the library call
    on the files returns, and a traffic without shapes is named by its file only in the api."""
    from cgplan.core.optimize.search import optimize
    from cgplan.core.optimize.traffic import Traffic
    from cgplan.io.cost_coefficients import default_coefficients
    from cgplan.io.latency_coefficients import shipped_latency

    config = ROOT / "configs/gpu/tiny-nospec.yaml"
    traffic_path = TRAFFIC / "decode-heavy-mns32.json"
    loaded = load_config(config, Overrides())
    inp = loaded.input
    default_plan = build_plan(inp, with_fixes=False)
    traffic = load_traffic(traffic_path)
    for objective in ("time", "padding"):
        from_files = optimize_config(config, traffic_path, Overrides(), objective=objective)
        from_values = optimize(
            inp,
            default_plan,
            traffic,
            latency=shipped_latency(),
            coefficients=default_coefficients(),
            objective=objective,
            notes=tuple(loaded.notes),
        )
        assert from_values == from_files
        assert from_values.sizes and from_values.objective == objective
    empty = Traffic((), (), "nothing")
    with pytest.raises(ConfigError) as core_err:
        optimize(inp, default_plan, empty, latency=shipped_latency(), coefficients=default_coefficients())
    assert str(core_err.value) == "the traffic file has no batch shapes"
