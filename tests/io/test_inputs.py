"""Inputs as operators write them (issue 14): dash-case keys, a hub model id with a model config,
patch releases, GPU names, the api_server entry point, one rule for relative paths.

Each test failed before the change it names. The vLLM behaviour each one follows is cited from
vLLM 0.33.0's code (vllm/utils/argparse_utils.py, vllm/engine/arg_utils.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cgplan.core.vllm.releases import LATEST_VERSION, SUPPORTED_VERSIONS
from tests.cli_helpers import run
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
MODEL = ROOT / "configs" / "models" / "tiny-llama"
EXAMPLE = ROOT / "configs" / "examples" / "pr50488-eagle-k16.yaml"

SNAKE = f"""\
model: {MODEL}
max_model_len: 4096
max_num_seqs: 32
max_num_batched_tokens: 8192
speculative_config:
  method: eagle
  num_speculative_tokens: 16
cgplan:
  vllm_version: 0.33.0
  platform: hopper
"""


def plan_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> dict[str, Any]:
    code, out, err = run(monkeypatch, capsys, "plan", "--json", *args)
    assert code == 0, err
    doc = json.loads(out)
    doc.pop("source")
    doc.pop("ignored_keys")
    doc.pop("fingerprint", None)
    for fix in doc["fixes"]:
        fix.pop("config_lines", None)  # the same fix as lines of the YAML: a YAML target only
    return dict(doc)


# ----------------------------------------------------------------------------- dash-case keys


def test_dash_case_keys_plan_like_snake_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """vLLM's `--config` turns each key into `--key` and argparse takes `--max-num-seqs` and
    `--max_num_seqs` alike; EngineArgs normalises speculative_config keys too."""
    snake = tmp_path / "snake.yaml"
    snake.write_text(SNAKE)
    dash = tmp_path / "dash.yaml"
    dash.write_text(
        SNAKE.replace("max_model_len", "max-model-len")
        .replace("max_num_seqs", "max-num-seqs")
        .replace("max_num_batched_tokens", "max-num-batched-tokens")
        .replace("speculative_config", "speculative-config")
        .replace("num_speculative_tokens", "num-speculative-tokens")
        .replace("vllm_version", "vllm-version")
    )
    assert plan_json(monkeypatch, capsys, str(dash)) == plan_json(monkeypatch, capsys, str(snake))


def test_a_key_in_both_spellings_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "both.yaml"
    path.write_text(SNAKE + "max-num-seqs: 64\n")
    code, out, err = run(monkeypatch, capsys, "plan", str(path))
    assert code == 2 and out == ""
    assert err == (
        f"cgplan: error: {path}:max_num_seqs: given twice (got 'max_num_seqs and max-num-seqs'; "
        "expected one spelling of the key)\n"
    )


# ------------------------------------------------------------------ a hub model id + its config


def test_hub_model_id_with_model_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`model: org/name` (a hub id) plans with the shape from cgplan.model_config or
    --model-config; the plan equals the local folder's."""
    expected = plan_json(monkeypatch, capsys, str(_write(tmp_path, "local.yaml", SNAKE)))
    hub = SNAKE.replace(f"model: {MODEL}", "model: meta-llama/Llama-3.1-8B-Instruct")
    in_yaml = _write(tmp_path, "in-yaml.yaml", hub + f"  model_config: {MODEL / 'config.json'}\n")
    assert plan_json(monkeypatch, capsys, str(in_yaml)) == expected
    on_cli = _write(tmp_path, "hub.yaml", hub)
    assert plan_json(monkeypatch, capsys, str(on_cli), "--model-config", str(MODEL)) == expected
    code, _, err = run(monkeypatch, capsys, "plan", str(on_cli))
    assert code == 2
    assert "model folder has no config.json; for a hub model id give the model's config.json as " in err


def test_gate_diff_sweep_logs_take_model_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every command that reads a config takes --model-config (the README's CI recipe with a hub id)."""
    hub = _write(tmp_path, "hub.yaml", SNAKE.replace(f"model: {MODEL}", "model: org/model"))
    mc = ("--model-config", str(MODEL))
    code, out, err = run(monkeypatch, capsys, "gate", str(hub), *mc)
    assert code == 1 and "FAIL" in out, err  # the vllm#50488 gap, judged, not a usage error
    code, _, err = run(monkeypatch, capsys, "diff", str(hub), str(hub), *mc)
    assert code == 0, err
    code, _, err = run(monkeypatch, capsys, "sweep", str(hub), "--set", "max_num_seqs=8,16", *mc)
    assert code == 0, err
    log = ROOT / "tests" / "data" / "logs" / "synthetic-v0.33.0-nospec-profiling.log"
    code, _, err = run(monkeypatch, capsys, "logs", str(log), "--config", str(hub), *mc)
    assert code in (0, 1) and "error" not in err, err


# -------------------------------------------------------------------------------- vLLM releases


@pytest.mark.parametrize(
    ("given", "rules", "note"),
    [
        ("0.33.1", "0.33.0", "vLLM 0.33.1 planned with 0.33.0's rules"),
        ("0.33", "0.33.0", "vLLM 0.33 read as 0.33.0"),
        ("v0.33.0", "0.33.0", None),
        ("0.27.5", "0.27.1", "vLLM 0.27.5 planned with 0.27.1's rules"),
        ("0.27.0", "0.27.0", None),
    ],
)
def test_release_spellings(
    given: str,
    rules: str,
    note: str | None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(monkeypatch, capsys, "plan", str(EXAMPLE), "--vllm-version", given, "--json")
    assert code == 0, err
    assert json.loads(out)["vllm_version"] == rules
    assert (note in err) if note else ("note: vLLM" not in err)


@pytest.mark.parametrize(("given", "near"), [("0.25.0", SUPPORTED_VERSIONS[0]), ("0.99", LATEST_VERSION)])
def test_unknown_release_suggests_the_next_by_version_order(
    given: str, near: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """0.27.0 (before it had an entry) suggested 0.32.0 by string similarity; the suggestion is
    the next release by version order (the nearest one where there is no next)."""
    code, _, err = run(monkeypatch, capsys, "plan", str(EXAMPLE), "--vllm-version", given)
    assert code == 2
    assert f"--vllm-version: no rules for vLLM {given}; did you mean '{near}'?" in err


# -------------------------------------------------------------------------------------- GPUs


@pytest.mark.parametrize(
    ("gpu", "family"),
    [
        ("L4", "ampere"),
        ("L40S", "ampere"),
        ("A10G", "ampere"),
        ("NVIDIA A100-SXM4-80GB", "ampere"),
        ("H100 80GB HBM3", "hopper"),
        ("H20", "hopper"),
        ("GH200", "hopper"),
        ("B200", "blackwell"),
        ("GB200", "blackwell"),
        ("RTX PRO 6000", "rtx-blackwell"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-blackwell"),
        ("NVIDIA GeForce RTX 5090", "rtx-5090"),
        ("RTX 5080", "rtx-5090"),
        ("NVIDIA GB10", "gb10"),
        ("DGX Spark", "gb10"),
    ],
)
def test_serving_gpus_by_name(
    gpu: str, family: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A GPU plans exactly as its family (same SM major version and serve-default memory tier).
    Issue 29: only the predictions' domain reads the name (a GPU other than the H200 by name has
    no step time and a wider memory band), so those are compared apart."""
    by_name = plan_json(monkeypatch, capsys, str(EXAMPLE), "--platform", gpu)
    by_family = plan_json(monkeypatch, capsys, str(EXAMPLE), "--platform", family)
    prediction_keys = ("predicted_latency", "latency_withheld", "predicted_cost", "predicted_pool_bytes")
    # a fix's memory figure states its domain too: its band and text follow the GPU's name
    fix_domain_keys = ("summary", "predicted_mib_after_band", "predicted_mib_after_outside_domain")

    def planned(doc: dict) -> dict:  # type: ignore[type-arg]
        out = {k: v for k, v in doc.items() if k not in prediction_keys}
        out["fixes"] = [{k: v for k, v in f.items() if k not in fix_domain_keys} for f in doc["fixes"]]
        return out

    assert planned(by_name) == planned(by_family)
    if family == "hopper" and "H200" not in gpu:
        assert by_name["predicted_latency"] is None and by_name["latency_withheld"]


def test_sm89_gpu_says_which_rules_it_follows(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(monkeypatch, capsys, "plan", str(EXAMPLE), "--platform", "L40S")
    assert code == 0
    assert "cgplan: note: L40S (SM89, 48 GiB) planned with the ampere rules" in err


@pytest.mark.parametrize(("gpu", "why"), [("A800", "H100-tier"), ("T4", "SM75"), ("V100", "SM70")])
def test_unmodelled_gpus_are_refused_by_name(
    gpu: str, why: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The RTX 5090 was planned as an RTX PRO 6000 (96 GiB: other serve defaults); it and GB10 have
    families of their own now (#31)."""
    code, _, err = run(monkeypatch, capsys, "plan", str(EXAMPLE), "--platform", gpu)
    assert code == 2 and f"--platform: {gpu} is not modelled: " in err and why in err


# ------------------------------------------------------------------------ the api_server module


def test_api_server_command_line_plans_like_serve(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = [
        "--max-num-seqs",
        "32",
        "--speculative-config",
        '{"method": "eagle", "num_speculative_tokens": 16}',
    ]
    pinned = ["--vllm-version", "0.33.0", "--platform", "hopper"]
    serve = plan_json(monkeypatch, capsys, *pinned, "--", "vllm", "serve", str(MODEL), *flags)
    api = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", str(MODEL)]
    assert plan_json(monkeypatch, capsys, *pinned, "--", *api, *flags) == serve


# ------------------------------------------------------------------------------ relative paths


def test_relative_model_path_starts_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As in vLLM (the string goes to Hugging Face's loader): the same for `plan FILE` and for
    `serve --config FILE`. Before, `plan FILE` started from the file's folder."""
    shutil.copytree(MODEL, tmp_path / "models" / "m")
    (tmp_path / "deploy").mkdir()
    cfg = _write(tmp_path / "deploy", "serve.yaml", SNAKE.replace(f"model: {MODEL}", "model: models/m"))
    monkeypatch.chdir(tmp_path)
    from_file = plan_json(monkeypatch, capsys, "deploy/serve.yaml")
    from_args = plan_json(monkeypatch, capsys, "--", "serve", "--config", "deploy/serve.yaml")
    assert from_file == from_args
    monkeypatch.chdir(tmp_path / "deploy")
    code, _, err = run(monkeypatch, capsys, "plan", str(cfg))
    assert code == 2 and "model folder has no config.json" in err


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path
