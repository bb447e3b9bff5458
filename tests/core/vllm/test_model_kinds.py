"""Model kinds (#27): what a config.json says a model is, read the way vLLM reads it; a kind
cgplan does not model is refused by name (exit 2), an architecture it does not know is planned
with no memory or KV figure and a loud caveat, never as a validated dense decoder.

Encoder-decoder (Whisper) and `--runner pooling` plans are held to vLLM's own code by
tests/core/vllm/test_golden.py (corpus `encdec-*`, `pool-*`, every release)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from cgplan.api.plan import plan_file
from cgplan.cli import main
from cgplan.core.plan.build import build_plan
from cgplan.core.vllm.releases import SUPPORTED_VERSIONS, first_release
from cgplan.errors import ConfigError
from cgplan.io.config import Overrides, parse_config
from cgplan.io.vllm_args import read_vllm_args

MODELS = Path("configs/models")
DSV3 = json.loads((MODELS / "tiny-deepseek-v3" / "config.json").read_text())
LLAMA = json.loads((MODELS / "tiny-llama" / "config.json").read_text())


def _folder(tmp_path: Path, cfg: dict[str, Any], name: str = "m") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def _parse(model: Path | str, version: str | None = None, **doc: Any) -> Any:
    inp, _ = parse_config({"model": str(model), **doc}, Path.cwd(), Overrides(vllm_version=version))
    return inp


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            MODELS / "tiny-mamba",
            "MambaForCausalLM is not modelled yet: an attention-free model (mamba state layers only)",
        ),
        (
            MODELS / "tiny-qwen3-next",
            "Qwen3NextForCausalLM is not modelled yet: a hybrid model (linear_attention layers beside "
            "attention); vLLM takes the CUDA-graph support as the minimum over its KV-cache groups",
        ),
    ],
)
def test_unmodelled_kinds_are_refused_by_name(model: Path, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        _parse(model)
    assert info.value.path == "model"
    assert info.value.problem.startswith(message), info.value.problem


def test_refusal_is_exit_2_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"model: {(MODELS / 'tiny-mamba').resolve()}\n")
    monkeypatch.setattr(sys, "argv", ["cgplan", "plan", str(cfg)])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "c.yaml:model: MambaForCausalLM is not modelled yet" in err[0]


@pytest.mark.parametrize(
    ("patch", "word"),
    [
        ({"model_type": "qwen3_next", "layer_types": None}, "linear_attention"),  # the model type alone
        ({"model_type": "nemotron_h", "hybrid_override_pattern": "M-M*-"}, "mamba"),
        ({"layers_block_type": ["mamba", "attention"]}, "mamba"),
        ({"model_type": "jamba"}, "mamba"),
        ({"model_type": "lfm2"}, "short_conv"),
    ],
)
def test_hybrid_signals(tmp_path: Path, patch: dict[str, Any], word: str) -> None:
    cfg = {k: v for k, v in {**LLAMA, **patch}.items() if v is not None}
    with pytest.raises(ConfigError, match=f"a hybrid model \\({word} layers beside attention\\)"):
        _parse(_folder(tmp_path, cfg))


def test_all_attention_layer_types_are_no_hybrid(tmp_path: Path) -> None:
    """vLLM's `is_hybrid`: a hybrid class whose layer_types are all attention (granite-4.0-micro) is not."""
    cfg = {**LLAMA, "model_type": "granitemoehybrid", "layer_types": ["attention", "full_attention"]}
    inp = _parse(_folder(tmp_path, cfg))
    assert inp.model.other_layer_kinds == ()


def test_sparse_attention_and_other_encoder_decoders_are_refused(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match="DeepseekV32ForCausalLM is not modelled yet: DeepSeek sparse attention"
    ):
        _parse(_folder(tmp_path, {**DSV3, "architectures": ["DeepseekV32ForCausalLM"], "index_topk": 64}))
    t5 = {**LLAMA, "architectures": ["T5ForConditionalGeneration"], "is_encoder_decoder": True}
    with pytest.raises(
        ConfigError, match="T5ForConditionalGeneration is not modelled yet: an encoder-decoder"
    ):
        _parse(_folder(tmp_path, t5, "t5"))


def test_pooling_architectures_and_runners(tmp_path: Path) -> None:
    cls = {**LLAMA, "architectures": ["Qwen3ForSequenceClassification"]}
    with pytest.raises(
        ConfigError, match="Qwen3ForSequenceClassification is not modelled yet: vLLM runs it as a pooling"
    ):
        _parse(_folder(tmp_path, cls))
    with pytest.raises(ConfigError, match="runner: changes what vLLM captures"):
        _parse(MODELS / "tiny-llama", runner="draft")
    with pytest.raises(ConfigError, match="runner: unknown value"):
        _parse(MODELS / "tiny-llama", runner="embed")
    # --convert is a flag cgplan does not model (issue 28): planned without it, named in
    # `unmodelled`, refused by name under --strict
    unmodelled: list[str] = []
    doc = {"model": str(MODELS / "tiny-llama"), "convert": "embed"}
    parse_config(doc, Path.cwd(), Overrides(), None, unmodelled)
    assert len(unmodelled) == 1 and unmodelled[0].startswith("convert"), unmodelled
    with pytest.raises(ConfigError, match=r"convert.*--strict refuses it"):
        parse_config(doc, Path.cwd(), Overrides(strict=True))


def test_sentence_transformers_folder_pools(tmp_path: Path) -> None:
    folder = _folder(tmp_path, LLAMA)
    (folder / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.Pooling"}]))
    assert _parse(folder).runner == "pooling"
    assert _parse(MODELS / "tiny-llama").runner == "generate"


_V2_POOLING = first_release(lambda r: r.v2_default_moe_architectures is None)


def test_pooling_runner_boundary() -> None:
    """0.26-0.28: `_is_default_v2_model_runner_model` keeps non-generate runners on V1; 0.29+: V2.
    PIECEWISE in every release ("Pooling models do not support full cudagraphs")."""
    before = SUPPORTED_VERSIONS[SUPPORTED_VERSIONS.index(_V2_POOLING) - 1]
    for version, runner in ((before, "v1"), (_V2_POOLING, "v2")):
        plan = build_plan(_parse(MODELS / "tiny-llama", version, runner="pooling"), with_fixes=False)
        assert (plan.model_runner, plan.cudagraph_mode) == (runner, "PIECEWISE")
        assert "pooling_mode" in [n.kind for n in plan.notes]
    args = read_vllm_args(
        ["vllm", "serve", str(MODELS / "tiny-llama"), "--runner", "pooling"],
        model_config=None,
        base_dir=Path.cwd(),
    )
    assert args.doc["runner"] == "pooling"


def test_whisper_is_full_decode_only_with_no_kv_or_memory_figure() -> None:
    for version in SUPPORTED_VERSIONS:
        plan = build_plan(
            _parse(MODELS / "tiny-whisper", version, max_model_len=448, max_num_seqs=16), with_fixes=False
        )
        assert plan.cudagraph_mode == "FULL_DECODE_ONLY", version
        assert plan.kv_bytes_per_token is None
        assert any("encoder-decoder" in x for x in plan.cost_withheld)
    inp = _parse(MODELS / "tiny-whisper")
    assert inp.max_model_len == 448  # max_target_positions: vLLM's smallest max-length key
    assert (inp.model.hidden_size, inp.model.num_hidden_layers) == (256, 2)  # d_model, decoder_layers


def test_unknown_architecture_is_planned_with_a_loud_caveat(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {**LLAMA, "architectures": ["Phi3ForCausalLM"], "model_type": "phi3"})
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"model: {folder}\n")
    _, plan = plan_file(cfg)
    assert plan.kv_bytes_per_token is None
    assert plan.cost is not None and not plan.cost.domain.figure
    assert any("Phi3ForCausalLM is an architecture cgplan does not know" in n.message for n in plan.notes)
    # a known one keeps both figures
    _, known = plan_file(Path("tests/data/corpus/opt-level0.yaml"))
    assert known.kv_bytes_per_token and not any(n.kind == "model_kind" for n in known.notes)


# ---------------------------------------------- the classes vLLM's registry marks hybrid or attention-free

KINDS_DATA = Path(__file__).resolve().parents[2] / "data" / "oracle-model-kinds"


def _recorded(version: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((KINDS_DATA / f"{version}.json").read_text())
    assert doc["vllm_version"] == version
    return doc


def test_the_tables_are_the_union_of_every_release_registry() -> None:
    """cgplan's tables are what scripts/oracle/model_kinds.py read from each wheel's registry and
    model classes (IsHybrid / IsAttentionFree, directly or through a base class)."""
    from cgplan.core.vllm.models import ATTENTION_FREE_ARCHITECTURES, HYBRID_ARCHITECTURES

    hybrid = set().union(*(_recorded(v)["hybrid"] for v in SUPPORTED_VERSIONS))
    free = set().union(*(_recorded(v)["attention_free"] for v in SUPPORTED_VERSIONS))
    assert hybrid == HYBRID_ARCHITECTURES and free == ATTENTION_FREE_ARCHITECTURES
    assert {"NemotronHForCausalLM", "Qwen3NextForCausalLM", "GraniteMoeHybridForCausalLM"} <= hybrid
    assert "MambaForCausalLM" in free and not hybrid & free


@pytest.mark.parametrize(
    "arch", ["GraniteMoeHybridForCausalLM", "Zamba2ForCausalLM", "Plamo2ForCausalLM", "Mamba2ForCausalLM"]
)
def test_a_class_vllm_marks_is_refused_even_when_config_json_hides_its_state_layers(
    tmp_path: Path, arch: str
) -> None:
    """A config.json with none of the keys the layer reader knows (no layer_types, no mamba_*):
    vLLM still runs the class's state layers, so cgplan refuses it by name, never a dense plan."""
    folder = _folder(tmp_path, {**LLAMA, "architectures": [arch], "model_type": "custom"})
    with pytest.raises(ConfigError, match=f"{arch} is not modelled yet: an? (hybrid|attention-free) model"):
        build_plan(_parse(folder, "0.33.0", max_num_seqs=8))


def test_the_extractor_follows_base_classes(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts" / "oracle"))
    try:
        import model_kinds  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    models = tmp_path / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True)
    (models / "registry.py").write_text(
        '_TEXT_GENERATION_MODELS = {"AForCausalLM": ("a", "A"), "BForCausalLM": ("b", "B"),\n'
        '    "CForCausalLM": ("c", "C"), "DForCausalLM": ("d", "D")}\n'
    )
    (models / "a.py").write_text("class Base(nn.Module, IsHybrid):\n    pass\nclass A(Base):\n    pass\n")
    (models / "b.py").write_text("class B(nn.Module, interfaces.IsAttentionFree):\n    pass\n")
    (models / "c.py").write_text("class C(nn.Module):\n    is_hybrid: ClassVar = True\n")
    (models / "d.py").write_text("class D(nn.Module, SupportsPP):\n    is_hybrid = False\n")
    (tmp_path / "vllm" / "config").mkdir()
    (tmp_path / "vllm" / "config" / "model.py").write_text(
        "class ModelConfig:\n    @property\n    def is_hybrid(self):\n"
        "        return not all(layer in ('attention', 'x') for layer in self.layer_types)\n"
    )
    got = model_kinds.model_kinds(tmp_path / "vllm")
    assert got == {
        "hybrid": ["AForCausalLM", "CForCausalLM"],
        "attention_free": ["BForCausalLM"],
        "hybrid_attention_layer_types": ["attention", "x"],
    }


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_the_attention_layer_types_of_is_hybrid_are_the_wheels(version: str) -> None:
    from cgplan.core.vllm.releases import rules_for

    recorded = _recorded(version)["hybrid_attention_layer_types"]
    assert sorted(rules_for(version).hybrid_attention_layer_types) == recorded


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
@pytest.mark.parametrize(
    "layer_types", [["attention"], ["full_attention", "attention"], ["sliding_attention"]]
)
def test_an_ishybrid_class_with_attention_only_layer_types_is_no_hybrid(
    tmp_path: Path, version: str, layer_types: list[str]
) -> None:
    """vLLM's ModelConfig.is_hybrid, per release: `layer_types` all of the names it counts as
    attention (recorded from each wheel) make the IsHybrid class no hybrid; anything else
    (sliding_attention too) leaves it one, refused by name."""
    attention = _recorded(version)["hybrid_attention_layer_types"]
    cfg = {**LLAMA, "architectures": ["GraniteMoeHybridForCausalLM"], "layer_types": layer_types}
    folder = _folder(tmp_path, cfg)
    if all(t in attention for t in layer_types):
        assert _parse(folder, version).model.architecture == "GraniteMoeHybridForCausalLM"
    else:
        with pytest.raises(ConfigError, match="GraniteMoeHybridForCausalLM is not modelled yet"):
            _parse(folder, version)
