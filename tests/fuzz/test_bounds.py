"""The limits that keep plan, sweep, diff and gate bounded: at the limit accepted, past it refused.

Timings and memory at these limits: benchmarks/bench_bounds.py → benchmarks/results/bounds.json.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cgplan.api.sweep import MAX_SWEEP_REQUESTS, MAX_SWEEP_SIZES, _check_ladders
from cgplan.core.compare.sweep import MAX_SWEEP_POINTS
from cgplan.errors import ConfigError, ReportError
from cgplan.io.config import MAX_LADDER_TOKENS, MAX_LIST, MAX_REASONABLE, MAX_SCHEDULE, load_config
from cgplan.io.reports import side_from_report
from cgplan.io.schema.reports import plan_from_json
from cgplan.io.sweep_axes import parse_set
from tests.fuzz.harness import EXAMPLES, MODELS, problems, run_cli

PR = EXAMPLES / "pr50488-eagle-k16.yaml"


def serve(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "serve.yaml"
    path.write_text(f"model: {MODELS / 'tiny-llama'}\n{body}")
    return path


@pytest.mark.parametrize(
    ("key", "limit"),
    [
        ("max_num_seqs", MAX_REASONABLE),
        ("max_num_batched_tokens", MAX_REASONABLE),
        ("max_model_len", MAX_REASONABLE),
        ("compilation_config.max_cudagraph_capture_size", MAX_REASONABLE),
        ("speculative_config.num_speculative_tokens", MAX_REASONABLE),
    ],
)
def test_numbers_at_and_past_the_limit(tmp_path: Path, key: str, limit: int) -> None:
    section, _, name = key.rpartition(".")
    extra = "method: eagle, " if section == "speculative_config" else ""

    def body(n: int) -> str:
        return f"{section}: {{{extra}{name}: {n}}}\n" if section else f"{name}: {n}\n"

    assert limit == 10_000_000
    load_config(serve(tmp_path, body(limit)))
    with pytest.raises(
        ConfigError, match=rf"{key}: too large to plan \(got {limit + 1}; expected at most 10,000,000\)"
    ):
        load_config(serve(tmp_path, body(limit + 1)))


def test_capture_sizes_list(tmp_path: Path) -> None:
    assert MAX_LIST == 10_000
    sizes = list(range(1, MAX_LIST + 1))
    ok = serve(
        tmp_path, f"max_num_batched_tokens: 10000\ncompilation_config: {{cudagraph_capture_sizes: {sizes}}}\n"
    )
    run = run_cli(["plan", str(ok), "--json"])
    assert run.code == 0 and len(json.loads(run.out)["capture_sizes"]) == MAX_LIST
    bad = serve(tmp_path, f"compilation_config: {{cudagraph_capture_sizes: {[*sizes, 10_001]}}}\n")
    with pytest.raises(
        ConfigError,
        match=r"cudagraph_capture_sizes: too many sizes to plan \(got 10001; expected at most 10,000",
    ):
        load_config(bad)


def test_dynamic_sd_schedule(tmp_path: Path) -> None:
    assert MAX_SCHEDULE == 1_000

    def body(n: int) -> str:
        sched = [[i, i, 1 + i % 3] for i in range(1, n + 1)]
        return (
            f"max_num_seqs: {n}\nmax_num_batched_tokens: 100000\nspeculative_config: "
            f"{{method: eagle, num_speculative_tokens: 3, num_speculative_tokens_per_batch_size: {sched}}}\n"
        )

    loaded = load_config(serve(tmp_path, body(MAX_SCHEDULE)))
    assert loaded.input.speculative is not None
    assert len(loaded.input.speculative.num_speculative_tokens_per_batch_size or ()) == MAX_SCHEDULE
    with pytest.raises(
        ConfigError, match=r"num_speculative_tokens_per_batch_size: too many ranges to plan \(got 1001"
    ):
        load_config(serve(tmp_path, body(MAX_SCHEDULE + 1)))


def test_sweep_grid() -> None:
    assert MAX_SWEEP_POINTS == 200_000
    assert len(parse_set(f"max_num_seqs=1..{MAX_SWEEP_POINTS}")[1]) == MAX_SWEEP_POINTS
    with pytest.raises(ConfigError, match=r"200,001 values; at most 200,000 plans per sweep"):
        parse_set(f"max_num_seqs=1..{MAX_SWEEP_POINTS + 1}")
    with pytest.raises(ConfigError, match=r"values must be from 1 to 10,000,000"):
        parse_set("max_num_seqs=1..100000000000000000000")
    # within each axis, over the limit as a product (and times the releases): the core refuses
    for sets, versions in [
        (["max_num_seqs=1..500", "max_model_len=1..500"], []),
        (["max_num_seqs=1..100000"], ["0.26.0", "0.33.0", "0.32.0"]),
    ]:
        args = ["sweep", str(PR)] + [f"--set={s}" for s in sets]
        for v in versions:
            args += ["--vllm-version", v]
        run = run_cli(args)
        assert run.code == 2 and problems(run, where=["--set"]) == [], run.err
        assert "plans requested; at most 200,000 per sweep" in run.err


def test_sweep_request_walk() -> None:
    """Plans walk every request count: 200,000 plans at max_num_seqs 10^6 would take days."""
    assert MAX_SWEEP_REQUESTS == 100_000_000
    dyn = EXAMPLES / "mns1024-eagle-k16-dyn4.yaml"
    big = ["--set=max_num_batched_tokens=10000000"]
    run = run_cli(["sweep", str(dyn), "--set=max_num_seqs=1..20000", *big, "--vllm-version", "0.33.0"])
    assert run.code == 2 and problems(run, where=["--set"]) == [], run.err
    assert "20,000 plans walking 200,010,000 request counts in all; at most 100,000,000 per sweep" in run.err
    # points that vLLM refuses (max_num_batched_tokens < max_num_seqs) walk nothing
    run = run_cli(["sweep", str(PR), "--set=max_num_seqs=9000000..10000000:1000", "--json"])
    assert run.code == 0, run.err
    assert {o["status"] for r in json.loads(run.out)["ranges"] for o in r["outcomes"].values()} == {
        "rejected"
    }


def plan_report(max_num_seqs: int, rows: int = 1) -> dict[str, object]:
    return {
        "schema_version": 1,
        "kind": "plan",
        "vllm_version": "0.33.0",
        "max_num_seqs": max_num_seqs,
        "uniform_decode_query_len": 2,
        "dynamic_sd": {"lookup": [[i + 1, i + 1, 1] for i in range(rows)]},
        "graphs": {"target": []},
        "uniform_decode": {"2": [{"from_reqs": 1, "to_reqs": max_num_seqs, "mode": "FULL"}]},
    }


def test_report_limits() -> None:
    side_from_report(plan_from_json(plan_report(MAX_REASONABLE), "r.json"), "r.json")
    with pytest.raises(ReportError, match=r"r\.json:max_num_seqs: expected an integer from 1 to 10,000,000"):
        plan_from_json(plan_report(MAX_REASONABLE + 1), "r.json")
    side_from_report(plan_from_json(plan_report(MAX_REASONABLE, rows=10 * MAX_LIST), "r.json"), "r.json")
    with pytest.raises(ReportError, match=r"dynamic_sd\.lookup: 100,001 entries; at most 100,000"):
        plan_from_json(plan_report(MAX_REASONABLE, rows=10 * MAX_LIST + 1), "r.json")


def test_default_ladder_bound(tmp_path: Path) -> None:
    """max_cudagraph_capture_size = max_num_batched_tokens = 10^7: vLLM's default ladder of 625,000
    sizes took 17 s and 2.6 GiB to plan; refused up front, the limit named (bounds.json: 1,599,232
    tokens, 100,000 sizes, plan in about 8 s and 0.5 GB)."""
    assert MAX_LADDER_TOKENS == 1_599_232

    def body(tokens: int, mbt: int | None = None) -> str:
        return (
            f"max_num_batched_tokens: {mbt or tokens}\n"
            f"compilation_config: {{max_cudagraph_capture_size: {tokens}}}\n"
        )

    assert load_config(serve(tmp_path, body(MAX_LADDER_TOKENS))).input.max_cudagraph_capture_size
    # a larger max is truncated to max_num_batched_tokens by vLLM: the ladder stays short
    load_config(serve(tmp_path, body(10**7, mbt=8192)))
    load_config(serve(tmp_path, body(10**7) + "enforce_eager: true\n"))
    path = serve(tmp_path, body(10**7))
    run = run_cli(["plan", str(path)])
    assert run.code == 2 and problems(run, where=[str(path)]) == [], run.err
    assert run.err == (
        f"cgplan: error: {path}:compilation_config.max_cudagraph_capture_size: too large to plan: a ladder "
        "up to 10,000,000 tokens holds about 625,048 capture sizes (got 10000000; expected at most "
        "1,599,232 tokens, about 100,000 sizes, or max_num_batched_tokens at most that)\n"
    )
    assert run.cpu_seconds < 2


def test_sweep_ladder_bounds() -> None:
    """Sweeps are bounded by the capture sizes they plan (200,000 plans of default ladders took
    132 s; a point of 625,000 sizes 2.6 GiB), not only by their plan count."""
    assert MAX_SWEEP_SIZES == 2_500_000
    inp = load_config(PR).input
    _check_ladders(inp, [("max_num_seqs", list(range(1, 20_001)))], 1)  # 20,000 x 125: at the bound
    with pytest.raises(ConfigError, match=r"20,001 plans of about 2,500,125 capture sizes in all"):
        _check_ladders(inp, [("max_num_seqs", list(range(1, 20_002)))], 1)
    cases = [
        (
            [
                "--set=max_num_batched_tokens=10000000",
                "--set=compilation_config.max_cudagraph_capture_size=10000000",
            ],
            r"--set: compilation_config\.max_cudagraph_capture_size=10000000 with max_num_batched_tokens="
            r"10000000: a ladder up to 10,000,000 tokens holds about 625,048 capture sizes; "
            r"at most 1,599,232",
        ),
        (
            [
                "--set=max_num_batched_tokens=1000000",
                "--set=compilation_config.max_cudagraph_capture_size=1000000..1000099",
            ],
            r"--set: 100 plans of about 6,2\d\d,\d\d\d capture sizes in all",
        ),
        (["--set=max_model_len=1..200000"], r"--set: 200,000 plans of about 25,000,000 capture sizes in all"),
    ]
    for sets, pattern in cases:
        run = run_cli(["sweep", str(PR), *sets])
        assert run.code == 2 and problems(run, where=["--set"]) == [], run.err
        assert re.search(pattern, run.err), run.err
        assert run.cpu_seconds < 2


def test_latency_at_a_million_requests(tmp_path: Path) -> None:
    """The step-latency prediction prices every request count of the plan and of each fix: at
    max_num_seqs 10^6 plan, gate and a two-release diff took 24 to 91 s of CPU (bench_bounds,
    found by the full fuzz run as hangs); priced by runs of equal outcome now (speed-18), a plan
    there takes well under a second and keeps its step times."""
    path = serve(tmp_path, "max_num_seqs: 1000000\nmax_num_batched_tokens: 10000000\n")
    run = run_cli(["plan", str(path), "--json"])
    assert run.code == 0, run.err
    assert json.loads(run.out)["predicted_latency"] is not None
    assert run.cpu_seconds < 10
