"""The plan-speed benchmark refuses a reference that did not answer (benchmarks/bench_plan.py)."""

from __future__ import annotations

import importlib.util
import json
import sys
from typing import Any

from tests.paths import ROOT_DIR

ROOT = ROOT_DIR


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_plan", ROOT / "benchmarks" / "bench_plan.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_plan"] = module
    spec.loader.exec_module(module)
    return module


PLAN = {"capture_sizes": [1, 2, 4], "dynamic_sd": {"lookup": [[1, 8, 16], [9, 1024, 1]]}}
ANSWER = {
    "config": {"cudagraph_capture_sizes": [1, 2, 4]},
    "dynamic_sd": {"lookup_ranges": [[1, 8, 16], [9, 1024, 1]]},
}


def _run(doc: object, code: int = 0) -> Any:
    return _bench().Run(1.0, 1.0, code, json.dumps(doc), "boom")


def test_an_answer_is_accepted() -> None:
    assert _bench().check_reference(_run(ANSWER), PLAN) is None


def test_a_refusal_is_not_an_answer() -> None:
    """vLLM's refusal exits 0 with an `error` field: the old benchmark timed exactly that."""
    why = _bench().check_reference(_run({**ANSWER, "error": "ValueError: max_model_len too long"}), PLAN)
    assert why is not None and "refused" in why


def test_other_answers_are_not_answers() -> None:
    bench = _bench()
    assert "exited 1" in bench.check_reference(_run(ANSWER, code=1), PLAN)
    assert "no JSON" in bench.check_reference(bench.Run(1.0, 1.0, 0, "Traceback", ""), PLAN)
    other = {**ANSWER, "config": {"cudagraph_capture_sizes": [1, 2]}}
    assert "capture sizes differ" in bench.check_reference(_run(other), PLAN)
    assert "lookup differs" in bench.check_reference(_run({**ANSWER, "dynamic_sd": None}), PLAN)


def test_the_oracle_gets_the_benchmarks_config() -> None:
    cfg = _bench().oracle_config()
    assert cfg["max_model_len"] == 4096  # the tiny model's limit: vLLM accepts it
    assert (
        json.loads((ROOT / "configs/models/tiny-llama/config.json").read_text())["max_position_embeddings"]
        == 4096
    )
    assert cfg["speculative"]["num_speculative_tokens_per_batch_size"] == [
        [1, 8, 16],
        [9, 64, 7],
        [65, 256, 3],
        [257, 1024, 1],
    ]
