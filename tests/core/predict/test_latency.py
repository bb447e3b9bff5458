"""The step-latency model: its shipped data, its accuracy on the held-out H200 runs, and plans,
diffs, the gate and the optimiser in time."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest

from cgplan.api.optimize import optimize_config
from cgplan.api.plan import plan_file
from cgplan.api.sides import load_side
from cgplan.core.compare.gate import GatePolicy, evaluate_gate
from cgplan.core.model.spec import ModelShape
from cgplan.core.optimize.timed import TimedShape, brute_force_time, optimal_timed_ladders
from cgplan.core.predict.calibrate import least_contended
from cgplan.core.predict.latency import (
    LatencyObservation,
    StepShape,
    errors,
    fit_latency,
    forward_ms,
    forward_shape,
    step_ms,
)
from cgplan.errors import ConfigError
from cgplan.io.config import Overrides, load_config
from cgplan.io.latency_coefficients import (
    latency_to_dict,
    load_latency,
    read_runs,
    save_latency,
    shipped_latency,
)
from cgplan.io.policies import parse_policy
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
RUNS = ROOT / "benchmarks/results/h200/latency"
PR = ROOT / "configs/examples/pr50488-eagle-k16.yaml"
TRAFFIC = ROOT / "configs/traffic"


def test_shipped_coefficients_round_trip(tmp_path: Path) -> None:
    c = shipped_latency()
    assert c.gpu == "H200" and c.fitted_on and c.held_out
    out = tmp_path / "lat.json"
    save_latency(c, out)
    assert latency_to_dict(load_latency(out)) == latency_to_dict(c)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"kind": "other"}, r"lat\.json:kind: not a latency-coefficient file"),
        ({"step_ms": -1}, r"lat\.json:step_ms: must be >= 0"),
        ({"step_ms": "fast"}, r"lat\.json:step_ms: expected a number"),
        ({"bogus": 1}, r"lat\.json:bogus: unknown key"),
        ({"eager_layer_factor": {"LlamaForCausalLM": 0}}, r"lat\.json:eager_layer_factor: expected"),
        ({"layers_range": [64, 4]}, r"lat\.json:layers_range: expected \[lowest, highest\]"),
    ],
)
def test_bad_coefficient_file_is_located(tmp_path: Path, edit: dict[str, object], message: str) -> None:
    doc = {**latency_to_dict(shipped_latency()), **edit}
    path = tmp_path / "lat.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match=message):
        load_latency(path)


def _held(run: str, batch: str) -> bool:
    c = shipped_latency()
    return run in c.held_out or f"batch {batch} of every run" in c.held_out


def test_held_out_runs_are_predicted_within_the_stated_error() -> None:
    """The shipped figures come from the committed H200 runs: the held-out points (runs and batch
    sizes the fit never saw) are predicted as the data file says, and well."""
    c = shipped_latency()
    obs = least_contended(read_runs([RUNS]))
    held = [o for o in obs if _held(o.run, o.batch)]
    assert len(held) > 200
    med, within = errors(c, held)
    assert med == pytest.approx(c.held_out_median_error, abs=1e-3)
    assert within == pytest.approx(c.held_out_within_10pct, abs=1e-3)
    assert med < 0.06
    assert within > 0.8


def test_pr50488_widest_batch_eager_over_graph_ratio() -> None:
    """32 requests × 17 tokens (EAGLE K=16) on the 8B run held out of the fit: predicted
    eager / FULL ratio within 10% of the measured one."""
    c = shipped_latency()
    obs = [
        o
        for o in least_contended(read_runs([RUNS]))
        if o.run.startswith("llama-3.1-8b-eagle-k16") and o.batch == "uniform:32"
    ]
    eager = next(o for o in obs if o.step.target_mode == "NONE")
    graph = next(o for o in obs if o.step.target_mode == "FULL")
    measured = eager.measured_ms / graph.measured_ms
    predicted = step_ms(c, eager.target, eager.step) / step_ms(c, graph.target, graph.step)
    assert predicted == pytest.approx(measured, rel=0.10)


def test_widest_batch_rounds_are_read_as_the_lowest_round_and_held_out_runs_stay_out() -> None:
    """Call 4 timed the widest batch of the 3B, 14B and 32B in six rounds each: a point timed in
    several rounds is read as its lowest per-round median (docs/latency-model.md, "Repetitions"),
    and the held-out 14B's rounds never reach the fit."""
    c = shipped_latency()
    every = [o for o in read_runs([RUNS]) if o.batch == "uniform:256" and o.step.target_mode == "NONE"]
    by_run: dict[str, list[float]] = {}
    for o in every:
        by_run.setdefault(o.run, []).append(o.measured_ms)
    # call 1's single timing and call 4's six rounds
    assert {r: len(v) for r, v in by_run.items() if len(v) == 7} == {
        "llama-3.2-3b-mns256": 7,
        "qwen2.5-14b-mns256": 7,
        "qwen2.5-32b-mns256": 7,
    }
    read = {
        o.run: o.measured_ms
        for o in least_contended(read_runs([RUNS]))
        if o.batch == "uniform:256" and o.step.target_mode == "NONE"
    }
    assert read["llama-3.2-3b-mns256"] == min(by_run["llama-3.2-3b-mns256"]) == pytest.approx(10.4532)
    assert read["qwen2.5-14b-mns256"] == min(by_run["qwen2.5-14b-mns256"]) == pytest.approx(22.816)
    assert "qwen2.5-14b-mns256" in c.held_out and "qwen2.5-14b-mns256" not in c.fitted_on
    report = json.loads((RUNS / "fit-report.json").read_text())
    assert report["sources"]["call4"] == ["llama-3.2-3b-mns256", "qwen2.5-14b-mns256", "qwen2.5-32b-mns256"]
    assert report["rounds"] == "lowest"
    widest = report["runs"]["qwen2.5-14b-mns256"]["widest"]
    assert [call for call, _ in widest["eager_rounds"]] == ["call1"] + ["call4"] * 6
    assert widest["measured_eager_ms"] == min(ms for _, ms in widest["eager_rounds"])
    assert not any(
        p["batch"] == "uniform:256" and not p["held_out"]
        for p in report["runs"]["qwen2.5-14b-mns256"]["points"]
    )


def test_per_request_time_is_gpu_time_hidden_behind_host_bound_eager() -> None:
    """Before: the per-request time was added outside the forward, as host time, so a host-bound
    eager step grew by it (5.7 us per request: +1.5 ms from 1 to 256 requests) while the
    fitted runs' eager steps do not grow with requests (scripts/latency/slopes.py: a median of
    -2.2 us per request over the fitted runs' 1..128 requests). It is GPU time of the forward now:
    it adds to a FULL replay and hides behind host-bound eager launches."""
    c = shipped_latency()
    shape = forward_shape(load_config(ROOT / "configs/gpu/med-llama-mns256.yaml").input.model)

    def step(mode: str, n: int) -> float:
        return step_ms(c, shape, StepShape(mode, n, n, reqs=n))

    per_req_us = {m: 1000 * (step(m, 128) - step(m, 1)) / 127 for m in ("NONE", "FULL")}
    assert per_req_us["NONE"] < 2.0
    assert per_req_us["FULL"] > 5.0
    assert c.gpu_ms_per_request > 0


def test_a_coefficient_file_of_the_earlier_model_is_refused_with_the_way_out(tmp_path: Path) -> None:
    doc = latency_to_dict(shipped_latency())
    doc["step_ms_per_request"] = doc.pop("gpu_ms_per_request")
    path = tmp_path / "lat.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(
        ConfigError, match=r"lat\.json:step_ms_per_request: .*refit the file with cgplan calibrate --latency"
    ):
        load_latency(path)


def test_a_plan_above_the_measured_requests_per_step_says_so() -> None:
    """Before: max_num_seqs 1024 was priced without a caveat, though no measured step had more
    than 256 requests and the per-request GPU time (6.9 us each) is then a straight-line
    extrapolation (7 ms of a 1024-request step)."""
    from cgplan.core.predict.latency import domain_caveats

    c = shipped_latency()
    assert c.max_reqs == 256
    inp = load_config(ROOT / "configs/examples/mns1024-eagle-k16-dyn4.yaml").input
    assert inp.max_num_seqs == 1024
    assert any("steps above 256 requests were not measured" in x for x in domain_caveats(c, inp))
    med = load_config(ROOT / "configs/gpu/med-llama-mns256.yaml").input
    assert not any("requests were not measured" in x for x in domain_caveats(c, med))


def test_fit_recovers_known_coefficients() -> None:
    """Synthetic points from a known set: the fit finds it again (pure, no GPU data)."""
    truth = shipped_latency()
    rng = random.Random(3)
    obs = []
    for arch, h, layers in (
        ("LlamaForCausalLM", 2048, 16),
        ("LlamaForCausalLM", 4096, 32),
        ("Qwen2ForCausalLM", 5120, 48),
    ):
        shape = forward_shape(ModelShape(arch, h, layers, h // 128, 8, 128, h * 3, 32000))
        for mode in ("FULL", "PIECEWISE", "NONE"):
            for t in (1, 8, 64, 256, 512, 1024, 2048):
                s = StepShape(mode, t, t)
                obs.append(
                    LatencyObservation(
                        "synthetic", shape, s, step_ms(truth, shape, s) * rng.uniform(0.99, 1.01)
                    )
                )
    start = dataclasses.replace(
        truth, host_ms_eager_per_layer=truth.host_ms_eager_per_layer * 1.5, step_ms=1.0
    )
    got = fit_latency(obs, start)
    assert errors(got, obs)[0] < 0.02
    assert errors(start, obs)[0] > 0.1


def test_larger_graph_never_faster() -> None:
    """Padding costs time: the modelled forward does not decrease with tokens (what the time
    optimiser's exactness needs)."""
    c = shipped_latency()
    shape = forward_shape(load_config(ROOT / "configs/gpu/llama8b-mns256.yaml").input.model)
    for mode in ("FULL", "PIECEWISE", "NONE"):
        times = [forward_ms(c, shape, mode, t, t) for t in range(1, 2049, 7)]
        assert times == sorted(times)


def test_pr50488_plan_prices_the_gap_and_the_fix() -> None:
    _, plan = plan_file(PR)
    lat = plan.latency
    assert lat is not None and len(lat.gaps) == len(plan.gaps) == 1
    gap = lat.gaps[0]
    assert gap.widest_batch == 32 and gap.cost_ms_per_step > 0.5
    assert gap.step_ms == pytest.approx(lat.widest_eager_step_ms)
    assert lat.fixes and all(f.gain_ms_per_step > 0 for f in lat.fixes)
    assert lat.fixes[0].widest_gap_gain_ms == pytest.approx(gap.cost_ms_per_step)
    assert 0 < lat.expected_eager_share < 1
    assert any("outside the measured" in x for x in lat.caveats)  # tiny-llama: 2 layers


def test_plan_cli_prints_gap_cost_and_fix_gain(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cli_helpers import run

    code, out, _ = run(monkeypatch, capsys, "plan", str(PR))
    assert code == 0
    assert "gap 1 (requests 31-32): costs +" in out and "ms per step at 32 requests" in out
    assert "fix 1 (--max-cudagraph-capture-size 544): gains" in out


def test_gate_bounds_the_eager_time_share() -> None:
    side = load_side(PR, Overrides())
    assert side.eager_time_share is not None and side.eager_time_share > 0
    fail = evaluate_gate(GatePolicy(max_eager_time_share=0.01), side)
    ok = evaluate_gate(GatePolicy(max_eager_time_share=0.99), side)
    assert not next(c for c in fail.checks if c.name == "max_eager_time_share").passed
    assert next(c for c in ok.checks if c.name == "max_eager_time_share").passed
    with pytest.raises(ConfigError, match=r"max_eager_time_share: must be a share 0\.\.1"):
        parse_policy({"max_eager_time_share": 1.5})


def test_diff_shows_the_change_in_expected_step_time() -> None:
    from cgplan.core.compare.diff import diff_sides
    from cgplan.io.schema.diff import diff_to_dict
    from cgplan.render.diff import step_time_line

    a = load_side(ROOT / "configs/gpu/tiny-eagle-k16.yaml", Overrides())
    b = load_side(ROOT / "configs/gpu/tiny-eagle-k16-max544.yaml", Overrides())
    d = diff_sides(a, b)
    line = step_time_line(d)
    assert line is not None and "expected step time" in line
    doc = diff_to_dict(d)
    assert doc["expected_step_ms"]["change"] < 0  # the fix makes the step faster


def test_time_dp_matches_brute_force() -> None:
    rng = random.Random(11)
    for _ in range(25):
        shapes = [
            TimedShape(
                rng.randint(1, 60), rng.uniform(0.1, 5), rng.choice(("decode:1", "mixed")), rng.uniform(5, 9)
            )
            for _ in range(rng.randint(1, 12))
        ]

        def graph_ms(kind: str, s: int) -> float:
            return (1.0 if kind == "decode:1" else 2.0) + 0.01 * s

        for k in range(0, 6):
            dp = optimal_timed_ladders(shapes, k, 50, graph_ms)[-1].total_ms
            assert dp == pytest.approx(brute_force_time(shapes, k, 50, graph_ms))


def test_optimize_in_time_beats_the_default_ladder_at_its_memory() -> None:
    o = optimize_config(PR, TRAFFIC / "decode-heavy-mns32.json", Overrides(), objective="time")
    assert o.objective == "time"
    assert o.step_ms < o.default_step_ms
    assert o.memory_mib is not None and o.default_memory_mib is not None
    assert o.memory_mib <= o.default_memory_mib


def test_calibrate_latency_and_plan_with_the_users_coefficients(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tests.cli_helpers import run

    out = tmp_path / "lat.json"
    code, text, _ = run(
        monkeypatch,
        capsys,
        "calibrate",
        "--latency",
        str(RUNS / "call1"),
        "--test",
        str(RUNS / "call2"),
        "-o",
        str(out),
        "--json",
    )
    assert code == 0
    doc = json.loads(text)
    assert doc["held_out"]["points"] > 100 and doc["held_out"]["median_error"] < 0.10
    mine = load_latency(out)
    assert "qwen2.5-32b-mns256" in mine.fitted_on and "qwen3-4b-mns256" in mine.held_out
    # A slower GPU's coefficients: the plan's figures follow the file given.
    slow = tmp_path / "slow.json"
    d = latency_to_dict(mine)
    d["host_ms_eager_per_layer"] *= 3
    slow.write_text(json.dumps(d))
    _, base = run(monkeypatch, capsys, "plan", str(PR), "--json")[:2]
    _, slower = run(monkeypatch, capsys, "plan", str(PR), "--json", "--latency-coefficients", str(slow))[:2]
    a = json.loads(base)["predicted_latency"]["widest_eager_step_ms"]
    b = json.loads(slower)["predicted_latency"]["widest_eager_step_ms"]
    assert b > a


def test_plan_traffic_histogram_weights_the_expected_step(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cli_helpers import run

    code, text, _ = run(
        monkeypatch, capsys, "plan", str(PR), "--json", "--traffic", str(TRAFFIC / "decode-heavy-mns32.json")
    )
    assert code == 0
    lat = json.loads(text)["predicted_latency"]
    assert lat["traffic"].endswith("decode-heavy-mns32.json")
    assert lat["expected_step_ms"] > 0 and lat["gaps"][0]["expected_cost_ms_per_step"] > 0


def test_the_shipped_latency_data_is_what_fit_py_writes(tmp_path: Path) -> None:
    """The shipped coefficients and fit report come from the committed raw runs by the command in
    docs/latency-model.md (the median of each point's repetitions); the comparison statistics of
    --statistic (docs, "Repetitions") read the same repetitions."""
    import subprocess
    import sys

    out, report = tmp_path / "lat.json", tmp_path / "report.json"
    cmd = [
        sys.executable,
        str(ROOT / "scripts/latency/fit.py"),
        str(RUNS),
        "-o",
        str(out),
        "--report",
        str(report),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == (ROOT / "cgplan/data/latency-h200.json").read_text()
    # The report keeps unrounded errors: their last bits differ between Python versions (3.12's
    # floating-point sums), so it is compared at 9 decimals; the coefficients above are exact.
    assert _rounded(json.loads(report.read_text())) == _rounded(
        json.loads((RUNS / "fit-report.json").read_text())
    )
    assert "widest batch eager/graph within 10%: 8 of 11 runs (3 of 3 held-out runs)" in proc.stdout


def _rounded(x: object) -> object:
    if isinstance(x, float):
        return round(x, 9)
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return x


def test_point_statistics_of_fit_py() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("fit", ROOT / "scripts/latency/fit.py")
    assert spec is not None and spec.loader is not None
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    reps = [9.0, 5.0, 4.0, 1.0, 2.0, 3.0, 8.0]
    assert fit.point_ms(reps, "median") == 4.0
    assert fit.point_ms(reps, "drop3") == 2.5  # median of 1, 2, 3, 8
    assert (
        fit.point_ms(reps, "min") == 1.0
        and fit.point_ms(reps, "p10") == 2.0
        and fit.point_ms(reps, "p25") == 3.0
    )
    assert fit.point_ms([3.0, 1.0, 2.0], "drop3") == 2.0  # too few: all of them


def test_measure_step_spreads_the_widest_batch_over_the_run(tmp_path: Path) -> None:
    """The measurement script's CPU self-test (fake runner and clock): the widest batch is timed
    --widest-repeats times spread over the run, or alone (--only-widest); every point carries its
    start time and the host's load (before: one timing first and one last, no timestamps)."""
    import subprocess
    import sys

    script = ROOT / "scripts/latency/measure_step.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--self-test", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads((tmp_path / "lat-selftest.json").read_text())
    assert all(isinstance(p["t_unix"], float) for p in doc["points"] if "median_ms" in p)


def test_optimize_states_the_domain_of_its_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every figure a prediction prints states its domain: before, optimize printed expected step
    times and graph MiB for a 2-layer, 256-wide model without saying that both are outside what
    the latency and cost models were measured on (plan said so for the same config)."""
    from tests.cli_helpers import run

    config = tmp_path / "small.yaml"
    config.write_text(f"model: {ROOT / 'configs/models/tiny-llama'}\nmax_num_seqs: 32\n")
    traffic = TRAFFIC / "decode-heavy-mns32.json"
    code, out, _ = run(monkeypatch, capsys, "optimize", str(config), "--traffic", str(traffic))
    assert code == 0
    assert "  caveat: step time: hidden size 256 is outside the measured 512..5120\n" in out
    assert "  caveat: step time: 2 layers is outside the measured 4..64\n" in out
    assert "  caveat: graph memory: hidden size 256 is outside the fitted" in out
    code, out, _ = run(monkeypatch, capsys, "optimize", str(config), "--traffic", str(traffic), "--json")
    assert "step time: 2 layers is outside the measured 4..64" in json.loads(out)["caveats"]


def test_a_v1_plan_says_the_latency_model_was_measured_on_v2() -> None:
    """The runners dispatch differently (V1: one PIECEWISE drafter family, no drafter decode
    graphs); before, a V1 plan's step times carried no caveat though only V2 steps were fitted."""
    _, plan = plan_file(ROOT / "configs/examples/ngram-k16-v1.yaml")
    assert plan.model_runner == "v1" and plan.latency is not None
    assert "model runner V1 was not measured (only model runner V2)" in plan.latency.caveats
    _, v2 = plan_file(PR)
    assert v2.latency is not None and not any("model runner" in c for c in v2.latency.caveats)


@pytest.mark.parametrize(
    "setting",
    ["enforce_eager: true", "compilation_config: {mode: 0}"],
    ids=["enforce_eager", "mode-0"],
)
def test_an_uncompiled_plan_says_its_steps_were_not_measured(tmp_path: Path, setting: str) -> None:
    """Issue 29: enforce_eager and the compiled fallback were priced the same, though every
    measured step ran the compiled model; the uncompiled plan's figures are extrapolated, so its
    fixes are not ranked by them and none is withheld."""
    from cgplan.core.predict.latency import UNCOMPILED_CAVEAT

    def planned(name: str, extra: str):  # type: ignore[no-untyped-def]
        config = tmp_path / f"{name}.yaml"
        config.write_text(
            f"model: {ROOT / 'configs/models/llama-3.1-8b'}\nmax_num_seqs: 256\n{extra}"
            "cgplan: {vllm_version: 0.33.0, platform: H200}\n"
        )
        return plan_file(config)[1]

    plan = planned("eager", f"{setting}\n")
    assert plan.compilation_mode == "NONE" and plan.latency is not None
    assert UNCOMPILED_CAVEAT in plan.latency.caveats
    assert UNCOMPILED_CAVEAT in plan.latency.extrapolated
    assert plan.latency.not_offered == ()
    plan = planned("compiled", "")
    assert plan.compilation_mode == "VLLM_COMPILE" and plan.latency is not None
    assert UNCOMPILED_CAVEAT not in plan.latency.caveats and not plan.latency.extrapolated
