"""What kind of model a config.json describes, read the way vLLM's registry and ModelConfig read
it, and what of it cgplan models (#27).

vLLM decides a model's kind from its config and its class: `is_encoder_decoder(hf_config)`
(vllm/transformers_utils/config.py), the runner from `--runner` or, for `auto`, the registry and
the architecture-suffix table `_SUFFIX_TO_DEFAULTS` (vllm/config/model.py, the same in
0.26-0.33), hybrid and attention-free models from the class (`IsHybrid`, `IsAttentionFree`),
whose configs name their non-attention layers. cgplan plans attention-only decoders, Whisper
(encoder-decoder) and a decoder under `--runner pooling`; any other kind is refused by name.
"""

from __future__ import annotations

from cgplan.core.model.spec import ModelShape
from cgplan.core.vllm.releases import VllmRules

MODELLED_ARCHITECTURES = frozenset(
    {
        "LlamaForCausalLM",
        "MistralForCausalLM",
        "Qwen2ForCausalLM",
        "Qwen3ForCausalLM",
        "Qwen2MoeForCausalLM",
        "Qwen3MoeForCausalLM",
        "DeepseekV2ForCausalLM",
        "DeepseekV3ForCausalLM",
        "Glm4MoeForCausalLM",
        "MixtralForCausalLM",
        "GraniteMoeForCausalLM",
        "WhisperForConditionalGeneration",
    }
)
"""Architectures whose vLLM classes carry `@support_torch_compile` (llama.py, mistral.py, qwen2.py,
qwen3.py, qwen2_moe.py, qwen3_moe.py, deepseek_v2.py, glm4_moe.py, mixtral.py, granitemoe.py,
whisper.py in 0.26-0.33) and whose configs cgplan reads: the memory figure and the KV bytes are
given for them. Another attention-only decoder is planned as compiled, with both withheld."""

HYBRID_ARCHITECTURES = frozenset(
    {
        "AliceAIForCausalLM",
        "BailingMoeV2_5ForCausalLM",
        "BailingMoeV3ForCausalLM",
        "BailingMoeV3VLForConditionalGeneration",
        "ClefFlashForJointSchema",
        "ColBERTLfm2Model",
        "ColQwen3_5",
        "FalconH1ForCausalLM",
        "Glm5NextForCausalLM",
        "Glm5NextForConditionalGeneration",
        "GraniteMoeHybridForCausalLM",
        "InternS2MobiusForConditionalGeneration",
        "InternS2PreviewForConditionalGeneration",
        "JambaForCausalLM",
        "JambaForSequenceClassification",
        "KimiK3ForConditionalGeneration",
        "KimiLinearForCausalLM",
        "Lfm2ForCausalLM",
        "Lfm2MoeForCausalLM",
        "Lfm2VlForConditionalGeneration",
        "MiniCPMOcrForConditionalGeneration",
        "MiniCPMV4_6ForConditionalGeneration",
        "MiniCPMV4_7ForConditionalGeneration",
        "NemotronHForCausalLM",
        "NemotronHPuzzleForCausalLM",
        "NemotronH_Nano_Omni_Reasoning_V3",
        "NemotronH_Nano_VL_V2",
        "NemotronH_Omni_Reasoning_V3",
        "NemotronH_Super_Omni_Reasoning_V3",
        "OlmoHybridForCausalLM",
        "Plamo2ForCausalLM",
        "Qwen3NextForCausalLM",
        "Qwen3_5ForCausalLM",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForCausalLM",
        "Qwen3_5MoeForConditionalGeneration",
        "Qwen4ExpForCausalLM",
        "Qwen4ExpForConditionalGeneration",
        "Zamba2ForCausalLM",
    }
)
"""Architectures whose vLLM class is an `IsHybrid` (attention beside Mamba, linear-attention,
short-conv or GDN state layers) in any of 0.26.0-0.33.0: the union of the registry read by
scripts/oracle/model_kinds.py (tests/data/oracle-model-kinds/). vLLM takes this from the class,
so a config.json whose keys do not show the state layers is one all the same."""

ATTENTION_FREE_ARCHITECTURES = frozenset(
    {
        "FalconMambaForCausalLM",
        "Mamba2ForCausalLM",
        "MambaForCausalLM",
        "PrithviGeoSpatialMAE",
        "Terratorch",
    }
)
"""Architectures whose vLLM class is an `IsAttentionFree` in any of 0.26.0-0.33.0 (the same files)."""

ENCODER_DECODER_ARCHITECTURES = frozenset({"WhisperForConditionalGeneration"})
"""Encoder-decoder architectures cgplan plans (checked against vLLM's code: corpus `encdec-*`)."""

_POOLING_SUFFIXES = (
    "ForTextEncoding",
    "EmbeddingModel",
    "ForSequenceClassification",
    "ForTokenClassification",
    "ForAudioClassification",
    "ForImageClassification",
    "ForVideoClassification",
    "ClassificationModel",
    "ForRewardModeling",
    "RewardModel",
    "Model",
)
_GENERATE_SUFFIXES = ("ForCausalLM", "ForConditionalGeneration", "ChatModel", "LMHeadModel")


def suffix_runner(architecture: str) -> str | None:
    """vLLM's `try_match_architecture_defaults` runner for `architecture` (first suffix that
    matches, generate suffixes first; `*Model` last), None when no suffix matches.

    >>> suffix_runner("Qwen3ForCausalLM"), suffix_runner("BertModel"), suffix_runner("Foo")
    ('generate', 'pooling', None)
    """
    for suffix in (*_GENERATE_SUFFIXES, *_POOLING_SUFFIXES):
        if architecture.endswith(suffix):
            return "generate" if suffix in _GENERATE_SUFFIXES else "pooling"
    return None


def refusal(shape: ModelShape, runner: str, rules: VllmRules | None = None) -> str | None:
    """Why cgplan does not plan this model under `runner` with `rules`' release, naming it; None
    when it does."""
    name = shape.architecture
    if shape.other_layer_kinds:
        kinds = " and ".join(shape.other_layer_kinds)
        if _attention_free(shape):
            return (
                f"{name} is not modelled yet: an attention-free model ({kinds} state layers only); "
                "vLLM sizes its state cache and CUDA-graph support by the Mamba backend, which cgplan "
                "does not model"
            )
        return (
            f"{name} is not modelled yet: a hybrid model ({kinds} layers beside attention); vLLM takes "
            "the CUDA-graph support as the minimum over its KV-cache groups (attention and the "
            f"{kinds} state), sizes the KV cache over the attention layers only and needs a state block "
            "per request for FULL decode graphs, none of which cgplan models"
        )
    archs = shape.all_architectures
    free = [a for a in archs if a in ATTENTION_FREE_ARCHITECTURES]
    if free:
        return (
            f"{free[0]} is not modelled yet: an attention-free model (vLLM's class is an "
            "IsAttentionFree); vLLM sizes its state cache and CUDA-graph support by its state "
            "backend, which cgplan does not model"
        )
    hybrid = [a for a in archs if a in HYBRID_ARCHITECTURES]
    attention = rules.hybrid_attention_layer_types if rules is not None else ("attention",)
    names = shape.layer_type_names
    if hybrid and not (names is not None and all(n in attention for n in names)):
        return (
            f"{hybrid[0]} is not modelled yet: a hybrid model (vLLM's class is an IsHybrid: state "
            "layers beside attention); vLLM takes the CUDA-graph support as the minimum over its "
            "KV-cache groups, sizes the KV cache over the attention layers only and needs a state "
            "block per request for FULL decode graphs, none of which cgplan models"
        )
    if shape.sparse_attention:
        return (
            f"{name} is not modelled yet: DeepSeek sparse attention (index_topk in config.json) runs "
            "on vLLM's sparse MLA backends, whose CUDA-graph support cgplan does not model"
        )
    if shape.is_encoder_decoder and name not in ENCODER_DECODER_ARCHITECTURES:
        return (
            f"{name} is not modelled yet: an encoder-decoder model (is_encoder_decoder in config.json); "
            f"cgplan plans {', '.join(sorted(ENCODER_DECODER_ARCHITECTURES))} only"
        )
    if shape.is_encoder_decoder and runner == "pooling":
        return f"{name} is not modelled yet under --runner pooling (an encoder-decoder model)"
    if suffix_runner(name) == "pooling":
        return (
            f"{name} is not modelled yet: vLLM runs it as a pooling model (its architecture suffix; "
            "its attention may be bidirectional); cgplan plans pooling only as --runner pooling on a "
            "decoder architecture"
        )
    return None


ATTENTION_FREE_MODEL_TYPES = ("mamba", "mamba2", "falcon_mamba")
"""model_type values of attention-free (pure state-space) models."""


def _attention_free(shape: ModelShape) -> bool:
    return shape.model_type in ATTENTION_FREE_MODEL_TYPES


def model_caveats(shape: ModelShape, rules: VllmRules) -> tuple[str, ...]:
    """What the cost model (and the KV bytes) cannot be given for: the reasons, loud."""
    out: list[str] = []
    archs = set(shape.all_architectures)
    if not archs & (MODELLED_ARCHITECTURES | rules.breakable_architectures):
        out.append(
            f"{shape.architecture} is an architecture cgplan does not know: planned as a compiled "
            "attention-only decoder (@support_torch_compile assumed; without it vLLM 0.30+ model "
            "runner V2 drops PIECEWISE graphs), no memory or KV figure"
        )
    if shape.is_encoder_decoder:
        out.append(
            f"{shape.architecture} is an encoder-decoder model: its cross-attention KV cache and encoder "
            "are not in the cost model, no memory or KV figure"
        )
    if shape.sliding_window_layers:
        out.append(
            f"{shape.sliding_window_layers} sliding-window layers: vLLM keeps them in a KV-cache group of "
            "their own, bounded by the window; no KV figure per token"
        )
    return tuple(out)


def kv_unknown(shape: ModelShape) -> bool:
    """The KV bytes per token cannot be read off the config (see `model_caveats`)."""
    return (
        shape.is_encoder_decoder
        or bool(shape.sliding_window_layers)
        or not set(shape.all_architectures) & MODELLED_ARCHITECTURES
    )
