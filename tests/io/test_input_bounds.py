"""Every number that reaches the planner or the cost model is bounded where it enters.

One minimal input per side-file kind that used to end in a traceback (exit 1, the "gate failed"
code) or to reach the cost model unbounded; each is now one located line and exit 2.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.fuzz.harness import EXAMPLES, H200, MODELS, problems, run_cli
from tests.paths import ROOT_DIR

PR = EXAMPLES / "pr50488-eagle-k16.yaml"
TINY = MODELS / "tiny-llama"
COEFFICIENTS = ROOT_DIR / "cgplan" / "data" / "cost-h200.json"


def refused(args: list[str], where: Path, pattern: str) -> None:
    run = run_cli(args)
    assert problems(run, where=[str(where)]) == [], (run.escaped, run.err)
    assert run.code == 2, (run.code, run.err)
    assert re.search(pattern, run.err), run.err


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("hidden_size", 10**18),
        ("num_hidden_layers", 10**9),
        ("vocab_size", 2**62),
        ("intermediate_size", 10**17),
        ("head_dim", 10**15),
        ("max_position_embeddings", 10**18),
    ],
)
def test_model_config_json_shape_numbers_are_bounded(tmp_path: Path, key: str, value: int) -> None:
    """A shape of 10^18 reached the cost model (predicted pools of 10^30 MiB, or an overflow)."""
    hf = json.loads((TINY / "config.json").read_text())
    hf[key] = value
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(hf))
    cfg = tmp_path / "serve.yaml"
    cfg.write_text(f"model: {tmp_path / 'm'}\n")  # relative models start from the working directory
    refused(
        ["plan", str(cfg)], cfg, rf":model: .*config\.json:{key}: not a usable model dimension \(got {value};"
    )


def _coefficients(tmp_path: Path, edit: dict[object, object]) -> Path:
    doc = yaml.safe_load(COEFFICIENTS.read_text())
    doc.update(edit)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize(
    ("edit", "pattern"),
    [
        ({"band_ratio": ["a", "b"]}, r":band_ratio: expected \[low, high\]"),
        ({"band_ratio": [1]}, r":band_ratio: expected \[low, high\]"),
        ({"band_ratio": [1e300, 1e300]}, r":band_ratio: expected \[low, high\] with 0 < low <= high <= 1000"),
        ({"hidden_size_range": [{"a": 1}, 2]}, r":hidden_size_range: expected \[lowest, highest\]"),
        (
            {"largest_graph_tokens_range": [1024, 16]},
            r":largest_graph_tokens_range: expected \[lowest, highest\]",
        ),
        (
            {"largest_graph_tokens_range": [-1, 16]},
            r":largest_graph_tokens_range: expected \[lowest, highest\]",
        ),
        ({"split_kv_backends": [1, [2]]}, r":split_kv_backends: expected a list of names"),
        (
            {"capture_band_ratio": [0, 1.5]},
            r":capture_band_ratio: expected \[low, high\].*\[0, 0\]: not recorded",
        ),
        ({"capture_band_ratio": [1.2, 0.9]}, r":capture_band_ratio: expected \[low, high\]"),
        ({"capture_time_basis": "wall"}, r":capture_time_basis: expected one of capture, window"),
        ({"capture_overhead_s_v1": "1"}, r":capture_overhead_s_v1: expected a number"),
        ({"fitted_on": "x"}, r":fitted_on: expected a list"),
        ({5: 1}, r":5: unknown key"),
    ],
)
def test_coefficient_lists_are_checked_entry_by_entry(
    tmp_path: Path, edit: dict[object, object], pattern: str
) -> None:
    """`band_ratio: [a, b]` was multiplied into the prediction: TypeError, exit 1."""
    path = _coefficients(tmp_path, dict(edit))
    refused(["plan", str(PR), "--coefficients", str(path)], path, pattern)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        (
            'vllm:iteration_tokens_total_bucket{le="1e400"} 5\n',
            r":line 1: must be a number in 0\.\.10,000,000",
        ),
        ('vllm:iteration_tokens_total_bucket{le="nan"} 5\n', r":line 1: must be a number"),
        ('vllm:iteration_tokens_total_bucket{le="8"} 1.2.3\n', r":line 1: must be a number"),
        (
            "Unpadded Tokens\n| " + "9" * 5000 + " | 1 | 1 | FULL | 3 |\n",
            r":line 2: must be a number in 0\.\.10,000,000",
        ),
        (
            "Unpadded Tokens\n| 8 | 1 | 1 | FULL | " + "9" * 400 + " |\n",
            r":line 2: must be a number in 0\.\.",
        ),
        (
            "mixed: [{num_tokens: 5, count: 1.0e+300}]\n",
            r":mixed\[0\]\.count: must be a count in 0\.\.1e\+15",
        ),
    ],
)
def test_traffic_numbers_are_bounded(tmp_path: Path, text: str, pattern: str) -> None:
    """int(float("1e400")) raised OverflowError, int() of 5,000 digits ValueError: exit 1."""
    path = tmp_path / "traffic.txt"
    path.write_text(text)
    refused(["optimize", str(PR), "--traffic", str(path)], path, pattern)


def _capture(tmp_path: Path, edit: object) -> Path:
    doc = json.loads((H200 / "tiny-nospec-vllm.json").read_text())
    edit(doc)  # type: ignore[operator]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("edit", "pattern"),
    [
        (
            lambda d: d["measured"]["graphs"][0].update(num_tokens="abc"),
            r":measured\.graphs\[0\]\.num_tokens: ",
        ),
        (
            lambda d: d.update(measured=[1]),
            r":measured: missing",
        ),
        (
            lambda d: d["measured"].update(capture_nvml_delta_bytes="x"),
            r":measured\.capture_nvml_delta_bytes: ",
        ),
        (lambda d: d["measured"].update(graphs=[7]), r":measured\.graphs\[0\]: expected"),
        (
            lambda d: d["measured"].update(vllm={"capture_took_gib": "x"}),
            r":measured\.vllm\.capture_took_gib: ",
        ),
        (lambda d: d["measured"]["graphs"][0].update(pieces=10**12), r":measured\.graphs\[0\]\.pieces: "),
    ],
)
def test_calibrate_report_fields_are_checked(tmp_path: Path, edit: object, pattern: str) -> None:
    """int("abc"), `[1].get`: tracebacks with exit 1 from `cgplan calibrate` (fix-21 validated
    these fields too; the cases stay as minimal inputs of the class)."""
    path = _capture(tmp_path, edit)
    refused(["calibrate", str(path), "--gpu", "H200"], path, pattern)


def _dynamic_sd(tmp_path: Path, max_num_seqs: int, ranges: int) -> Path:
    step = max_num_seqs // ranges
    rows = [
        [i * step + 1, max_num_seqs if i == ranges - 1 else (i + 1) * step, 1 + i % 16] for i in range(ranges)
    ]
    path = tmp_path / "dyn.yaml"
    path.write_text(
        f"model: {TINY}\nmax_num_seqs: {max_num_seqs}\nmax_num_batched_tokens: 10000000\n"
        "speculative_config: {method: eagle, num_speculative_tokens: 16, "
        f"num_speculative_tokens_per_batch_size: {rows}}}\n"
        "cgplan: {vllm_version: 0.33.0, platform: hopper}\n"
    )
    return path


@pytest.mark.parametrize("command", ["plan", "gate"])
def test_a_dynamic_sd_schedule_too_large_to_plan_is_refused_up_front(tmp_path: Path, command: str) -> None:
    """1,000 ranges at the largest max_num_seqs (10^7): killed for memory after minutes (5.8 GiB)."""
    path = _dynamic_sd(tmp_path, 10_000_000, 1000)
    refused(
        [command, str(path)],
        path,
        r":speculative_config\.num_speculative_tokens_per_batch_size: too large to plan: 1,000 ranges at "
        r"max_num_seqs 10,000,000 \(got 10000000000; expected ranges x max_num_seqs at most 100,000,000\)",
    )


def test_the_fix_search_is_skipped_above_its_bound_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below the refusal bound the plan is made, but the fix search (which re-plans per candidate)
    is skipped above FIX_SEARCH_WORK; the plan says so instead of taking minutes."""
    path = _dynamic_sd(tmp_path, 4096, 64)
    searched = run_cli(["plan", str(path), "--json"])
    assert searched.code in (0, 1), searched.err
    assert json.loads(searched.out)["fixes"], "the example must have fixes for this test to mean anything"
    monkeypatch.setattr("cgplan.api.plan.FIX_SEARCH_WORK", 4096 * 63)
    run = run_cli(["plan", str(path), "--json"])
    assert run.code in (0, 1), run.err
    doc = json.loads(run.out)
    assert doc["fixes"] == [] and doc["gaps"]
    note = [n for n in doc["notes"] if n["kind"] == "fix_search_skipped"]
    assert note and "262,144 is above 258,048" in note[0]["message"], doc["notes"]
