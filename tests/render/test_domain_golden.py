"""Issue 29: one domain rule for every figure, golden across formats (text, markdown, JSON).

Each case in tests/data/domain/ leaves the validated domain on one axis (or none): fp8 KV, a
float16 checkpoint, an fp8-quantised checkpoint, a GPU other than the H200 by name (H100, L40S),
B200 (memory abstains: no step time either), a quantised KV layout cgplan cannot model, a ladder
whose largest graph lies above the memory fit's (ladder-2048), a model run without torch.compile
(enforce-eager: no measured step ran uncompiled). Besides
the golden text, each rule is asserted on its own so a broken rule fails by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cgplan.api.plan import plan_file
from cgplan.core.plan.fingerprint import fingerprint
from cgplan.io.schema import dumps
from cgplan.io.schema.plan import plan_to_dict
from cgplan.render import OutputFormat, render
from tests.paths import ROOT_DIR, TESTS_DIR

DOMAIN = TESTS_DIR / "data" / "domain"
GOLDEN = TESTS_DIR / "golden" / "domain"
CASES = sorted(p.stem for p in DOMAIN.glob("*.yaml"))
SUFFIX = {OutputFormat.table: "table.txt", OutputFormat.markdown: "md"}
VLLM = json.loads((TESTS_DIR / "data" / "kv_cache_dtypes.json").read_text())
"""vLLM's own answers (scripts/oracle/kv_cache_dtypes.py)."""


def _check(path: Path, text: str, update_golden: bool) -> None:
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing {path}; run pytest --update-golden and review the diff"
    assert text == path.read_text()


def _source(case: str) -> str:
    return str((DOMAIN / f"{case}.yaml").relative_to(ROOT_DIR))


@pytest.mark.parametrize("fmt", [f for f in OutputFormat if f in SUFFIX])
@pytest.mark.parametrize("case", CASES)
def test_domain_golden_text(case: str, fmt: OutputFormat, update_golden: bool) -> None:
    _, plan = plan_file(DOMAIN / f"{case}.yaml")
    text = render(plan, fmt, source=_source(case), width=100)
    _check(GOLDEN / f"{case}.{SUFFIX[fmt]}", text, update_golden)


@pytest.mark.parametrize("case", CASES)
def test_domain_golden_json(case: str, update_golden: bool) -> None:
    cfg, plan = plan_file(DOMAIN / f"{case}.yaml")
    text = dumps(plan_to_dict(plan, source=_source(case), fingerprint=fingerprint(cfg.input)))
    _check(GOLDEN / f"{case}.json", text, update_golden)


def _doc(case: str) -> dict[str, object]:
    cfg, plan = plan_file(DOMAIN / f"{case}.yaml")
    out: dict[str, object] = json.loads(
        dumps(plan_to_dict(plan, source=_source(case), fingerprint=fingerprint(cfg.input)))
    )
    return out


def _text(case: str) -> str:
    _, plan = plan_file(DOMAIN / f"{case}.yaml")
    return render(plan, OutputFormat.table, source=_source(case), width=1000)


def test_fp8_kv_bytes_are_vllms_own() -> None:
    """fp8 KV: bytes per token are what vLLM 0.33.0's FullAttentionSpec gives (per layer, 8 KV heads
    x 128), times 32 layers: half of auto's."""
    per_layer = VLLM["0.33.0"]["bytes_per_token_per_layer"]
    auto, fp8 = _doc("in-domain")["kv_cache"], _doc("fp8-kv")["kv_cache"]
    assert isinstance(auto, dict) and isinstance(fp8, dict)
    assert fp8["bytes_per_token"] == 32 * per_layer["fp8"]["bfloat16/8x128"]
    assert auto["bytes_per_token"] == 32 * per_layer["auto"]["bfloat16/8x128"]
    assert 2 * fp8["bytes_per_token"] == auto["bytes_per_token"]
    assert "kv_cache_dtype fp8 (fitted: auto)" in _text("fp8-kv")
    assert "inside the validated domain" not in _text("fp8-kv")


def test_in_domain_says_so_and_times_the_step() -> None:
    text = _text("in-domain")
    assert "inside the validated domain: H200" in text
    assert "predicted step time: 5.72 ms" in text
    assert "latency_withheld" not in _doc("in-domain")


@pytest.mark.parametrize(("case", "axis"), [("h100", "GPU H100"), ("l40s", "GPU platform ampere")])
def test_another_gpu_has_no_step_time_and_a_wider_memory_band(case: str, axis: str) -> None:
    text, doc = _text(case), _doc(case)
    assert f"predicted step time: not predicted: outside the measured domain ({axis}" in text
    assert doc["predicted_latency"] is None
    assert isinstance(doc["latency_withheld"], list) and doc["latency_withheld"][0].startswith(axis)
    assert "band x2 wider: outside the validated domain" in text


def test_b200_abstains_on_memory_and_step_time() -> None:
    text, doc = _text("b200"), _doc("b200")
    assert "predicted graph memory: no figure" in text
    assert "predicted step time: not predicted" in text
    assert doc["predicted_latency"] is None and doc["predicted_pool_bytes"] is None


def test_float16_widens_and_caveats() -> None:
    text = _text("float16")
    assert "dtype float16" in text and "inside the validated domain" not in text
    assert "caveat: dtype float16 was not measured" in text


def test_quantised_weights_withhold_the_step_time() -> None:
    text, doc = _text("fp8-weights"), _doc("fp8-weights")
    assert "quantization fp8 (fitted: unquantised weights)" in text
    assert "predicted step time: not predicted: outside the measured domain (quantization fp8" in text
    assert doc["predicted_latency"] is None


def test_a_quantised_kv_layout_withholds_the_kv_figure_by_name() -> None:
    text, kv = _text("turboquant-kv"), _doc("turboquant-kv")["kv_cache"]
    assert isinstance(kv, dict)
    assert kv["bytes_per_token"] is None and kv["graph_memory_tokens"] is None
    assert kv["withheld"] == "kv_cache_dtype turboquant_k8v4's quantised layout is not modelled"
    assert "KV-cache tokens not predicted: kv_cache_dtype turboquant_k8v4" in text


@pytest.mark.parametrize("quant", [{"quant_method": 5}, {"bits": 4, "group_size": 128}])
def test_an_unreadable_quantization_config_is_outside_the_domain(quant: object, tmp_path: Path) -> None:
    """A quantization_config whose quant_method cgplan cannot read is still a quantised checkpoint:
    outside the validated domain with no step time, never planned as unquantised weights."""
    hf = json.loads((DOMAIN / "models" / "llama-8b-fp8-weights" / "config.json").read_text())
    hf["quantization_config"] = quant
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps(hf))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        f"model: {tmp_path / 'model'}\nmax_num_seqs: 64\n"
        "cgplan:\n  vllm_version: 0.33.0\n  platform: hopper\n"
    )
    _, plan = plan_file(cfg)
    text = render(plan, OutputFormat.table, source="c.yaml", width=1000)
    assert "inside the validated domain" not in text
    assert "quantization unreadable quantization_config (fitted: unquantised weights)" in text
    assert plan.latency is None


BF16_MODEL = ROOT_DIR / "configs" / "models" / "llama-3.1-8b"
"""A bf16 checkpoint (torch_dtype bfloat16), unquantised: inside the domain unless a flag moves it."""


@pytest.mark.parametrize(
    ("flags", "axis"),
    [
        ("dtype: half\n", "dtype float16"),
        ("dtype: float32\n", "dtype float32"),
        ("quantization: awq\n", "quantization awq (fitted: unquantised weights)"),
    ],
)
def test_dtype_and_quantization_flags_leave_the_domain(flags: str, axis: str, tmp_path: Path) -> None:
    """`--dtype` (vLLM's _STR_DTYPE_TO_TORCH_DTYPE names) and `--quantization` are what vLLM runs
    the weights in: off the fitted bf16 / unquantised domain, never "inside the validated domain"."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"model: {BF16_MODEL}\nmax_num_seqs: 64\n" + flags + "cgplan:\n  platform: H200\n")
    _, plan = plan_file(cfg)
    text = render(plan, OutputFormat.table, source="c.yaml", width=1000)
    assert "inside the validated domain" not in text and axis in text
    cfg.write_text(f"model: {BF16_MODEL}\nmax_num_seqs: 64\ncgplan:\n  platform: H200\n")
    _, plan = plan_file(cfg)
    assert "inside the validated domain" in render(plan, OutputFormat.table, source="c.yaml", width=1000)


def test_the_serve_command_line_reads_dtype_and_quantization(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cli_helpers import run

    argv = [
        "plan",
        "--json",
        "--",
        "serve",
        str(BF16_MODEL),
        "--dtype",
        "half",
        "-q",
        "fp8",
        "--max-num-seqs",
        "64",
    ]
    code, out, _ = run(monkeypatch, capsys, *argv)
    assert code == 0
    doc = json.loads(out)
    assert doc["predicted_latency"] is None
    assert any("quantization fp8" in r for r in doc["predicted_cost"]["domain"]["outside"])
    assert any(r.startswith("dtype float16") for r in doc["predicted_cost"]["domain"]["outside"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--dtype", "int8"],
            "--vllm-args:--dtype: must be one of auto, half, float16, float, float32, bfloat16",
        ),
        (["--quantization", " "], "--vllm-args:--quantization: must be a quantization method's name"),
    ],
)
def test_a_bad_dtype_or_quantization_is_one_located_line_and_exit_2(
    argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cli_helpers import run

    code, _, err = run(monkeypatch, capsys, "plan", "--", "serve", str(BF16_MODEL), *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert message in err and "Traceback" not in err


def test_a_bad_dtype_in_yaml_is_located(tmp_path: Path) -> None:
    from cgplan.errors import ConfigError

    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"model: {BF16_MODEL}\ndtype: 5\n")  # a list is read as vLLM reads it: --dtype X
    with pytest.raises(ConfigError, match=r"c\.yaml:.*dtype: must be one of auto"):
        plan_file(cfg)
