"""vLLM's capture rules, release by release, as data; the release list and its one lookup rule.

Each release is the previous one plus the changes it shipped (`dataclasses.replace`),
each change commented with the vLLM file and PR it mirrors. Adding a release is one
entry at the bottom of `RELEASES` (CONTRIBUTING.md).

`SUPPORTED_VERSIONS` keys every other table of `cgplan.core.vllm` (log formats, serve flags):
those are `since`-keyed, an entry only where vLLM changed something, looked up by `since_entry`.
Any version string people or logs give reaches a release through `release_for` (strict: plan with
these rules) or `closest_release` (lenient: read what a build printed).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Protocol, TypeVar


class DecodeSizes(Enum):
    """Which uniform-decode sizes `_set_cudagraph_sizes` appends to the token grid."""

    NONE = "none"
    """Nothing appended (≤ 0.28)."""
    SPEC = "spec"
    """Request-count grid × query length per tier, with speculation only (vllm#50488 + vllm#54418)."""
    SPEC_AND_MAX_NUM_SEQS = "spec_and_max_num_seqs"
    """Also max_num_seqs itself without speculation (vllm#57355)."""


class V2Tiers(Enum):
    """How the V2 CudaGraphManager derives decode query lengths under dynamic SD."""

    RAW_SCHEDULE = "raw_schedule"
    """K_entry + 1 of each schedule tuple, unclamped (0.26–0.28)."""
    DENSE_LOOKUP = "dense_lookup"
    """Distinct lookup[b] + 1 over the dense lookup (0.29–0.31)."""
    DENSE_LOOKUP_IF_Q_GT_K = "dense_lookup_if_q_gt_k"
    """As DENSE_LOOKUP, only when decode_query_len > K (0.32+)."""


class V2Candidates(Enum):
    """How the V2 manager maps a token count to candidate graphs."""

    SMALLEST_ANY_MODE = "smallest_any_mode"
    """Descriptors of the smallest captured token count ≥ t over all modes (0.26–0.28)."""
    PER_MODE = "per_mode"
    """Next FULL group, then next PIECEWISE group (0.29+)."""


@dataclass(frozen=True)
class VllmRules:
    """The capture-relevant behaviour of one vLLM release."""

    version: str
    """Release, e.g. "0.33.0"."""
    sm100_ceiling_1024: bool
    """Default max capture size ceiling is 1024 on SM10x (vllm#49390) instead of 512."""
    decode_sizes: DecodeSizes
    """Uniform-decode sizes appended to an inferred ladder."""
    sequence_parallel: bool
    """The SP pass (and `pass_config.enable_sp`) exists."""
    v2_tiers: V2Tiers
    """V2 decode query lengths under dynamic SD."""
    v2_candidates: V2Candidates
    """V2 dispatch candidate map."""
    v2_default_moe_architectures: tuple[str, ...] | None
    """`_is_default_v2_model_runner_model` (0.26–0.28): MoE models run V2 only when listed.
    None: the check is gone (0.29+), every model defaults to V2."""
    v2_runner_unsupported_methods: dict[str, str]
    """Speculative methods V2 lacks → vLLM's feature text: `auto` falls back to V1, `v2` is refused."""
    drafter_decode_per_k: bool
    """V2 drafter decode graphs are specialised per dynamic-SD K (`target_dependent_ar`)."""
    v2_drafter_methods: tuple[str, ...]
    """Methods whose V2 speculator captures prefill/decode graphs."""
    flashinfer_xqa_sm12x: bool = False
    """FlashInfer counts SM12x XQA decode as TRT-LLM support: UNIFORM_BATCH there (0.28+)."""
    flashinfer_xqa_sm90: bool = False
    """FlashInfer's SM90 XQA decode reaches UNIFORM_BATCH for head_dim 16..256, %16 (0.30+)."""
    flashinfer_fa2_native_below_sm90: bool = False
    """FlashInfer below SM90 decodes natively with FA2: UNIFORM_BATCH (0.33+)."""
    fa4_always: bool = False
    """FLASH_ATTN with FA4 (SM10x) reports ALWAYS, not UNIFORM_BATCH (0.33+)."""
    mla_uniform_levels_raised: bool = False
    """FLASHINFER_MLA reports ALWAYS and TRITON_MLA UNIFORM_BATCH (0.31+)."""
    non_compile_keeps_full_decode: bool = False
    """Without VLLM_COMPILE (-O0), FULL_AND_PIECEWISE becomes FULL_DECODE_ONLY instead of NONE
    (`_normalize_piecewise_cudagraph_mode`, 0.30+)."""
    serve_b200_batched_tokens: int = 8192
    """`vllm serve`'s default max_num_batched_tokens on a B200-class (≥160 GiB) GPU."""
    # Parallelism, LoRA, microbatching (issue 16): vllm/config/vllm.py, parallel.py, model.py.
    v2_dbo_check: str = "enable_dbo"
    """How V2 refuses microbatching: "enable_dbo" (`enable_dbo` alone, "dual batch overlap",
    0.26–0.29) or "ubatching" (`_get_dbo_unsupported_features` on `use_ubatching`, 0.30+)."""
    v2_eagle3_pp_unsupported: bool = True
    """V2 lacks "EAGLE3 with pipeline parallelism" (0.26–0.29)."""
    v1_pp_async_unsupported: bool = False
    """V1 refuses "pipeline parallelism with async scheduling" (`_validate_v1_model_runner`, 0.31+)."""
    ubatch_threshold_check: bool = False
    """ParallelConfig refuses DBO thresholds below the microbatch count (0.30+)."""
    dcp_gqa_check: str = "assert"
    """ModelConfig refuses DCP on a non-MLA model unless TP exceeds its KV heads: as an assertion
    (0.26.0) or a ValueError with flag advice (0.27.0+)."""
    ubatch_backend_platform_words: bool = False
    """VllmConfig's microbatching assertion names "the X, Y, Z all2all backends on this platform" and
    says "use one of" (0.33.0, per-platform lists); before, "the X, Y, and Z all2all backends" and
    "use A, B, or C" (vllm/config/vllm.py)."""
    v1_pp_async_message: str = "unsupported"
    """V1 + PP + async scheduling: "unsupported" (`_validate_v1_model_runner`, 0.31–0.32) or
    "async" (the async-scheduling check fails first, 0.33)."""
    v2_ubatch_twins: bool = False
    """V2 CudaGraphManager captures microbatched twins of FULL graphs (`_maybe_ubatch_twin`, 0.30+)."""
    v2_multi_module_mtp: bool = False
    """V2's `init_speculator` builds MultiModuleMTPSpeculator when min(MTP layers, K) > 1: one
    manager at query length K + 1 without PIECEWISE (0.28+; 0.27 has the class, unrouted)."""
    spec_budget_check: str = "scheduled"
    """`VllmConfig._set_max_num_scheduled_tokens` with speculation: "scheduled" (0.26–0.27: the
    scheduled budget max_num_batched_tokens − drafting slots × max_num_seqs must stay above 0),
    "delta" (0.28–0.32: max_num_batched_tokens must exceed the drafting slots per request) or
    "lookahead" (0.33+: it must exceed `num_lookahead_tokens`, K for EAGLE, MTP and draft models)."""
    # Compilation and breakable CUDA graphs (issue 27): vllm/config/vllm.py `__post_init__`.
    breakable_architectures: frozenset[str] = frozenset()
    """Architectures for which vLLM sets VLLM_USE_BREAKABLE_CUDAGRAPH=1 unless the variable is set
    (their classes carry no `@support_torch_compile`): inline in `__post_init__` (0.26-0.28), then
    `DEFAULT_BREAKABLE_CUDAGRAPH_ARCHITECTURES` (0.29+). Recorded from each wheel's code by
    scripts/oracle/breakable_archs.py into tests/data/oracle-breakable/."""
    hybrid_attention_layer_types: tuple[str, ...] = ("attention",)
    """`ModelConfig.is_hybrid` (vllm/config/model.py): an IsHybrid class whose config's
    `layer_types` are all of these is no hybrid ("attention" in 0.26-0.28, "full_attention" too
    from 0.29)."""
    breakable_logs_compile_off: bool = True
    """Breakable CUDA graphs log "VLLM_USE_BREAKABLE_CUDAGRAPH is set, disabling vLLM's
    torch.compile pipeline. Equivalent to -cc.mode=none." (0.26-0.27; 0.28+ switch silently)."""
    breakable_full_is_full: bool = False
    """V1 with breakable CUDA graphs captures FULL descriptors as real full graphs; before 0.30 the
    BreakableCUDAGraphWrapper took every non-NONE descriptor, FULL ones too, and broke them at
    attention (gpu_model_runner.py `load_model`)."""
    kv_connectors: frozenset[str] = frozenset()
    """Connectors registered in `KVConnectorFactory` (vllm/distributed/kv_transfer/kv_connector/
    factory.py). Only LMCacheConnectorV1 (`use_layerwise`) and MultiConnector (any child that
    does) override `requires_piecewise_for_cudagraph` in 0.26-0.33."""
    v2_reserves_cudagraph_memory: bool = False
    """V2's `profile_cudagraph_memory` estimates graph memory before the KV cache is sized; before
    0.29 it returned 0, so capture adds on top of gpu_memory_utilization (vLLM issue #49224,
    fixed by #49233: gpu/model_runner.py `_profile_cudagraph_memory`)."""
    v2_breakable_pads_piecewise_reqs: bool = False
    """V2 under breakable CUDA graphs gives PIECEWISE descriptors num_reqs = min(size,
    max_num_seqs), as FULL ones (`_init_candidates`, 0.26.0; None again from 0.27.1)."""
    v2_stock_compile_unsupported: bool = True
    """V2 lacks "stock torch.compile" (`_get_v2_model_runner_unsupported_features`, 0.26-0.31):
    `auto` falls back to V1, `v2` is refused."""
    v2_stock_compile_no_graphs: bool = False
    """V2 with STOCK_TORCH_COMPILE turns CUDA graphs off at config time
    (`_disable_cudagraphs_for_v2_stock_torch_compile`, 0.32+)."""
    # What-if knobs (cgplan.core.plan.policies): upstream values in every release.
    decode_sizes_capped: bool = True
    """Uniform-decode sizes are kept only up to the inferred maximum (vllm#54418's cap)."""
    decode_sizes_with_explicit_max: bool = False
    """An explicit scalar max_cudagraph_capture_size still gets uniform-decode sizes (vllm#54933)."""
    drafter_prefill_full: str = "target"
    """V2 drafter-prefill FULL graphs: "target" (the target's set), "pow2" or "none"."""
    # DFlash, DSpark, suffix decoding (#31): vllm/config/vllm.py, v1/worker/gpu/spec_decode/.
    mtp_model_types: tuple[str, ...] = ()
    """vllm/config/speculative.py `MTPModelTypes`: method names `SpeculativeConfig.__post_init__`
    replaces by "mtp", warning "method `X` is deprecated and replaced with mtp." (recorded:
    tests/data/oracle-spec-methods/methods.json, scripts/oracle/spec_methods.py)."""
    unmodelled_speculative_methods: tuple[str, ...] = ()
    """The rest of `SpeculativeMethod` beside cgplan's SPEC_METHODS and the MTP model types: names
    vLLM accepts that cgplan refuses as not modelled (not as unknown)."""
    v2_forced_methods: tuple[str, ...] = ("dspark",)
    """Methods `use_v2_model_runner` sends to V2 before any other check (DSpark, 0.26–0.28: "V1
    can't run dspark"); V2's unsupported features then refuse instead of falling back."""
    v1_unsupported_methods: tuple[tuple[str, str], ...] = ()
    """Methods `_get_v1_model_runner_unsupported_features` names (0.29+): V1 refuses them."""
    dspark_anchor_flag: str = "dspark_bonus_anchor"
    """The draft config flag DSpark's speculator reads for its block layout: "dspark_bonus_anchor"
    (0.26: true = 1 + N queries) or "sample_from_anchor" (0.27+: false = 1 + N queries)."""
    dspark_block_check: bool = True
    """SpeculativeConfig refuses a DSpark num_speculative_tokens below `dspark_block_size` (0.26–0.27)."""
    dflash_reads_is_causal: bool = False
    """`_dflash_layer_causal` reads the draft config's `is_causal` first (0.28+)."""
    adaptive_verification: bool = False
    """`speculative_config.enable_adaptive_verification` exists (DSpark's varlen decode graphs, 0.28+)."""
    gb10_small_tier: bool = False
    """`get_batch_defaults` keeps GB10 (SM121) on the small serve tier (`is_gb10`, 0.33+) instead of
    the H100 tier its 128 GiB would give."""
    async_spec_message: str = (
        "Currently, async scheduling is only supported with EAGLE/MTP/Draft Model/NGram GPU/DSpark "
        "kind of speculative decoding"
    )
    """VllmConfig's refusal of an explicit async_scheduling with a method it does not overlap (suffix
    decoding); `{method}` is the method (0.33 words it for the V1 runner)."""
    kv_cache_dtypes: tuple[str, ...] = (
        "auto",
        "float16",
        "bfloat16",
        "fp8",
        "fp8_e4m3",
        "fp8_e5m2",
        "fp8_inc",
        "fp8_ds_mla",
        "turboquant_k8v4",
        "turboquant_4bit_nc",
        "turboquant_k3v4_nc",
        "turboquant_3bit_nc",
        "int4_per_token_head",
        "int8_per_token_head",
        "fp8_per_token_head",
        "nvfp4",
    )
    """vllm/config/cache.py `CacheDType`'s members, in vLLM's order (`typing.get_args`, recorded by
    scripts/oracle/kv_cache_dtypes.py into tests/data/kv_cache_dtypes.json); any other
    `kv_cache_dtype` is refused by CacheConfig."""
    kv_cache_dtype_validator: bool = False
    """CacheConfig refuses an unknown cache_dtype through its own validator ("Invalid kv_cache_dtype:
    ... Valid values are: [...]", 0.33+) instead of pydantic's Literal check ("Input should be ...")."""


def _insert_after(values: tuple[str, ...], anchor: str, *new: str) -> tuple[str, ...]:
    """`values` with `new` inserted after `anchor` (vLLM's order of a Literal's members)."""
    i = values.index(anchor) + 1
    return (*values[:i], *new, *values[i:])


def kv_cache_dtype_message(value: str, rules: VllmRules) -> str:
    """CacheConfig's refusal of a `cache_dtype` outside the release's `CacheDType`, in vLLM's words
    (pydantic's Literal error up to 0.32, CacheConfig's own validator from 0.33).

    >>> kv_cache_dtype_message("fp4x", rules_for("0.26.0"))[:40]
    "Input should be 'auto', 'float16', 'bflo"
    """
    names = rules.kv_cache_dtypes
    if rules.kv_cache_dtype_validator:
        return f"Value error, Invalid kv_cache_dtype: {value!r}. Valid values are: {list(names)}"
    return "Input should be " + ", ".join(f"'{n}'" for n in names[:-1]) + f" or '{names[-1]}'"


_V0_26 = VllmRules(
    version="0.26.0",
    sm100_ceiling_1024=False,
    decode_sizes=DecodeSizes.NONE,
    sequence_parallel=True,
    v2_tiers=V2Tiers.RAW_SCHEDULE,
    v2_candidates=V2Candidates.SMALLEST_ANY_MODE,
    # vllm/config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES.
    v2_default_moe_architectures=(
        "DeepseekV2ForCausalLM",
        "GraniteMoeForCausalLM",
        "InklingForCausalLM",
        "InklingForConditionalGeneration",
        "LongcatFlashNgramForCausalLM",
        "Qwen2MoeForCausalLM",
    ),
    v2_runner_unsupported_methods={
        "ngram": "ngram/ngram_gpu speculative decoding",
        "draft_model": "speculative method 'draft_model'",
        "suffix": "speculative method 'suffix'",
    },
    drafter_decode_per_k=False,
    mtp_model_types=(
        "bailing_hybrid_mtp",
        "deepseek_mtp",
        "ernie_mtp",
        "exaone4_5_mtp",
        "exaone_moe_mtp",
        "gemma4_mtp",
        "glm4_moe_lite_mtp",
        "glm4_moe_mtp",
        "glm_ocr_mtp",
        "hy_v3_mtp",
        "inkling_mtp",
        "longcat_flash_mtp",
        "mimo_mtp",
        "mimo_v2_mtp",
        "minimax_m3_mtp",
        "mtp",
        "nemotron_h_mtp",
        "pangu_ultra_moe_mtp",
        "qwen3_5_mtp",
        "qwen3_next_mtp",
        "step3p5_mtp",
    ),
    unmodelled_speculative_methods=(
        "custom_class",
        "extract_hidden_states",
        "medusa",
        "mlp_speculator",
        "ngram_gpu",
    ),
    # vllm/v1/worker/gpu/spec_decode/autoregressive/: EAGLE, EAGLE3 and MTP.
    v2_drafter_methods=("eagle", "eagle3", "mtp"),
    v2_breakable_pads_piecewise_reqs=True,
    kv_connectors=frozenset(
        {
            "ExampleConnector",
            "ExampleHiddenStatesConnector",
            "LMCacheConnectorV1",
            "LMCacheMPConnector",
            "NixlConnector",
            "NixlPullConnector",
            "NixlPushConnector",
            "MultiConnector",
            "MoRIIOConnector",
            "OffloadingConnector",
            "DecodeBenchConnector",
            "MooncakeConnector",
            "MooncakeStoreConnector",
            "FlexKVConnectorV1",
            "SimpleCPUOffloadConnector",
            "HF3FSKVConnector",
        }
    ),
    # vllm/config/vllm.py `__post_init__`: the inline list of non-compiled classes.
    breakable_architectures=frozenset(
        {
            "DeepSeekV4MTPModel",
            "DeepseekV4ForCausalLM",
            "InklingForCausalLM",
            "InklingForConditionalGeneration",
            "MiniMaxM3SparseForCausalLM",
            "MiniMaxM3SparseForConditionalGeneration",
        }
    ),
)

RELEASES: dict[str, VllmRules] = {}


def _release(rules: VllmRules) -> VllmRules:
    RELEASES[rules.version] = rules
    return rules


_r = _release(_V0_26)
# vllm/config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES: Kimi K3 joins the default-V2 MoE list;
# config/model.py: DCP on a GQA model is refused with a ValueError and flag advice.
_r = _release(
    replace(
        _r,
        version="0.27.0",
        mtp_model_types=(*_r.mtp_model_types, *("kimi_k3_mtp",)),
        v2_default_moe_architectures=(
            *(_r.v2_default_moe_architectures or ()),
            "KimiK3ForConditionalGeneration",
        ),
        dcp_gqa_check="error",
        v2_breakable_pads_piecewise_reqs=False,
        breakable_architectures=_r.breakable_architectures
        | {"KimiK3ForConditionalGeneration", "KimiK3MTPModel", "KimiLinearForCausalLM"},
        # v1/worker/gpu/spec_decode/dspark/speculator.py: `sample_from_anchor` (default true)
        dspark_anchor_flag="sample_from_anchor",
    )
)
# 0.27.1 changes no capture rule: against 0.27.0 its config/, compilation/, v1/worker/ and
# v1/cudagraph_dispatcher.py are byte-identical (only _version.py and qwen3_dspark.py's
# quant_config pass-through differ).
_r = _release(replace(_r, version="0.27.1"))
# vllm/config/vllm.py `_set_cudagraph_sizes`: 1024 on SM10x (vllm#49390); a ≥160 GiB serve tier;
# FlashInfer's SM12x XQA decode; `_set_max_num_scheduled_tokens` no longer subtracts the drafting
# slots of every request, it refuses a budget at or below one request's; V2's init_speculator routes
# multi-layer MTP to MultiModuleMTPSpeculator (vllm/v1/worker/gpu/spec_decode/__init__.py);
# breakable CUDA graphs switch compilation off without a warning.
_r = _release(
    replace(
        _r,
        version="0.28.0",
        mtp_model_types=(*_r.mtp_model_types, *("bailing_hybrid_v3_mtp", "dots3_note_mtp")),
        # vllm/config/cache.py CacheDType gains nvfp4_4over6
        kv_cache_dtypes=(*_r.kv_cache_dtypes, "nvfp4_4over6"),
        sm100_ceiling_1024=True,
        spec_budget_check="delta",
        v2_multi_module_mtp=True,
        serve_b200_batched_tokens=16384,
        flashinfer_xqa_sm12x=True,
        # qwen3_dflash.py `_dflash_layer_causal` reads `is_causal`; DSpark's adaptive verification
        dflash_reads_is_causal=True,
        adaptive_verification=True,
        dspark_block_check=False,
        v2_default_moe_architectures=(*(_r.v2_default_moe_architectures or ()), "DeepseekV4ForCausalLM"),
        breakable_logs_compile_off=False,
    )
)
# vllm#50488 + vllm#54418: request-count decode sizes capped at the ceiling; V2 manager reads
# the dense lookup and keeps per-mode candidate ranges; V2 is the default runner;
# DEFAULT_BREAKABLE_CUDAGRAPH_ARCHITECTURES (vllm/config/vllm.py) replaces the inline list.
_r = _release(
    replace(
        _r,
        version="0.29.0",
        mtp_model_types=(*_r.mtp_model_types, *("hy_v4_mtp", "qwen4_exp_mtp")),
        hybrid_attention_layer_types=("attention", "full_attention"),
        decode_sizes=DecodeSizes.SPEC,
        v2_tiers=V2Tiers.DENSE_LOOKUP,
        v2_candidates=V2Candidates.PER_MODE,
        v2_default_moe_architectures=None,
        v2_reserves_cudagraph_memory=True,
        breakable_architectures=_r.breakable_architectures
        | {
            "DeepseekV32ForCausalLM",
            "DeepseekV32MTPModel",
            "Dots3NoteForCausalLM",
            "Dots3NoteMTPModel",
            "GlmMoeDsaForCausalLM",
            "HYV4ForCausalLM",
            "HYV4MTPModel",
        },
        # use_v2_model_runner no longer forces V2 for dspark; V1 refuses it instead
        v2_forced_methods=(),
        v1_unsupported_methods=(("dspark", "dspark speculative decoding"),),
    )
)
# `_normalize_piecewise_cudagraph_mode` uses without_piecewise(); FlashInfer SM90 XQA.
# DBO on V2: `_get_dbo_unsupported_features` and microbatched twins; the threshold check.
# V2's `piecewise_capture_available` (no flag: V2 drops PIECEWISE at load time for a model with
# neither a compiled submodule nor breakable CUDA graphs; cgplan plans the model as compiled, one of
# docs/planner.md's assumptions);
# V1's breakable wrapper takes PIECEWISE only.
_r = _release(
    replace(
        _r,
        version="0.30.0",
        mtp_model_types=(*_r.mtp_model_types, *("glm5_next_mtp",)),
        # _get_v2_model_runner_unsupported_features names ngram as "speculative method 'ngram'"
        # (vllm#40704's list; 0.29.0 said "ngram/ngram_gpu speculative decoding")
        v2_runner_unsupported_methods={
            "ngram": "speculative method 'ngram'",
            "draft_model": "speculative method 'draft_model'",
            "suffix": "speculative method 'suffix'",
        },
        # CacheDType gains nvfp4_ds_mla (after fp8_ds_mla)
        kv_cache_dtypes=_insert_after(_r.kv_cache_dtypes, "fp8_ds_mla", "nvfp4_ds_mla"),
        non_compile_keeps_full_decode=True,
        breakable_full_is_full=True,
        kv_connectors=_r.kv_connectors | {"HiSparseConnector"},  # factory.py
        breakable_architectures=_r.breakable_architectures
        | {
            "DeepseekV41ForCausalLM",
            "DeepseekV4ForConditionalGeneration",
            "Glm5NextForCausalLM",
            "Glm5NextForConditionalGeneration",
            "Glm5NextMTPModel",
            "Qwen4ExpForCausalLM",
            "Qwen4ExpForConditionalGeneration",
            "Qwen4ExpMTP",
        },
        flashinfer_xqa_sm90=True,
        v2_dbo_check="ubatching",
        v2_eagle3_pp_unsupported=False,
        ubatch_threshold_check=True,
        v2_ubatch_twins=True,
    )
)
# vllm#57355: a non-speculative max_num_seqs gets its own exact size. draft_model runs on V2
# (its speculator captures nothing); MLA builders report higher support.
_r = _release(
    replace(
        _r,
        version="0.31.0",
        decode_sizes=DecodeSizes.SPEC_AND_MAX_NUM_SEQS,
        v2_runner_unsupported_methods={
            "ngram": "speculative method 'ngram'",
            "suffix": "speculative method 'suffix'",
        },
        mla_uniform_levels_raised=True,
        v1_pp_async_unsupported=True,
        async_spec_message=(
            "Currently, async scheduling is only supported with EAGLE/MTP/Draft Model/NGram GPU/"
            "DSpark/DFlash kind of speculative decoding"
        ),
    )
)
# The SP pass is removed; ngram runs on V2; V2 tiers only when q > K; drafter decode per K.
# `_disable_cudagraphs_for_v2_stock_torch_compile`.
_r = _release(
    replace(
        _r,
        version="0.32.0",
        # CacheDType gains ultraquant_4bit (after turboquant_3bit_nc)
        kv_cache_dtypes=_insert_after(_r.kv_cache_dtypes, "turboquant_3bit_nc", "ultraquant_4bit"),
        v2_stock_compile_no_graphs=True,
        v2_stock_compile_unsupported=False,
        sequence_parallel=False,
        v2_tiers=V2Tiers.DENSE_LOOKUP_IF_Q_GT_K,
        drafter_decode_per_k=True,
        v2_runner_unsupported_methods={"suffix": "speculative method 'suffix'"},
    )
)
# FA4 on SM10x reports ALWAYS; FlashInfer below SM90 decodes with FA2; the speculative budget is
# held against `num_lookahead_tokens` (vllm/config/vllm.py `_set_max_num_scheduled_tokens`).
_r = _release(
    replace(
        _r,
        version="0.33.0",
        mtp_model_types=(*_r.mtp_model_types, *("step5_mtp",)),
        # medusa and mlp_speculator leave SpeculativeMethod
        unmodelled_speculative_methods=("custom_class", "extract_hidden_states", "ngram_gpu"),
        # CacheDType gains the octave layouts; CacheConfig validates cache_dtype itself
        kv_cache_dtypes=_insert_after(
            _r.kv_cache_dtypes, "turboquant_3bit_nc", "octave_k3v4", "octave_k3v3", "octave_k3v3_compact"
        ),
        kv_cache_dtype_validator=True,
        fa4_always=True,
        flashinfer_fa2_native_below_sm90=True,
        v1_pp_async_message="async",
        ubatch_backend_platform_words=True,
        spec_budget_check="lookahead",
        breakable_architectures=_r.breakable_architectures
        | {
            "AliceAIForCausalLM",
            "BeamForCausalLM",
            "MuseSpark1xForCausalLM",
            "MuseSparkForConditionalGeneration",
            "Step5ForCausalLM",
            "Step5ForConditionalGeneration",
        },
        # vllm/engine/arg_utils.py get_batch_defaults: `is_gb10` keeps GB10 on the small tier
        gb10_small_tier=True,
        async_spec_message="Async scheduling is not supported by the V1 model runner with {method}-based "
        "speculative decoding.",
    )
)

SUPPORTED_VERSIONS: tuple[str, ...] = tuple(RELEASES)
"""Every release cgplan knows, oldest first."""
LATEST_VERSION: str = SUPPORTED_VERSIONS[-1]
"""The default `vllm_version`."""


def rules_for(version: str) -> VllmRules:
    """The rules of `version`; KeyError for an unknown release (callers validate first)."""
    return RELEASES[version]


def first_release(has: Callable[[VllmRules], bool]) -> str:
    """The oldest supported release whose rules `has` a behaviour: how a message names the release
    that brought or removed one without spelling a release number outside this package.

    >>> first_release(lambda r: not r.sequence_parallel) > first_release(lambda r: r.sm100_ceiling_1024)
    True
    """
    return next(version for version, rules in RELEASES.items() if has(rules))


# ------------------------------------------------------------------------------- the lookup rule


def numeric_release(text: str) -> tuple[int, ...] | None:
    """`X.Y` or `X.Y.Z` as numbers; None for anything else (a dev, rc or local build, a word, or a
    part of six digits or more: no release number is that long, and none is read as one).

    >>> numeric_release("0.33.1"), numeric_release("0.33"), numeric_release("0.33.1.dev5+gabc")
    ((0, 33, 1), (0, 33), None)
    """
    parts = text.split(".")
    # isascii: "²".isdigit() is True, int("²") a ValueError (the full fuzz run: --vllm-version 0.²)
    if len(parts) in (2, 3) and all(p.isascii() and p.isdigit() and len(p) < 6 for p in parts):
        return tuple(int(p) for p in parts)
    return None


def _known() -> list[tuple[tuple[int, ...], str]]:
    return [(tuple(int(x) for x in v.split(".")), v) for v in SUPPORTED_VERSIONS]


def release_for(version: str) -> str | None:
    """The supported release whose rules apply to `version`, or None: the one rule by which a
    version string reaches the tables of `cgplan.core.vllm`.

    A supported release is itself; a minor (`0.33`) is the newest supported release of that minor;
    a patch release without an entry (`0.33.1`) is the newest supported release of its minor at or
    below it (cgplan knows no change of capture between patch releases). Another minor, a dev, rc or
    local build is None: its code may differ from every release cgplan knows (a `0.33.1.devN` build
    is main on its way to the next minor).

    >>> release_for(SUPPORTED_VERSIONS[-1]) == SUPPORTED_VERSIONS[-1], release_for("0.1"), release_for("x")
    (True, None, None)
    """
    if version in RELEASES:
        return version
    nums = numeric_release(version)
    if nums is None:
        return None
    same_minor = [v for n, v in _known() if n[:2] == nums[:2] and (len(nums) == 2 or n <= nums)]
    return same_minor[-1] if same_minor else None


def version_key(version: str) -> tuple[int, ...]:
    """The numeric release of any version string (dev and local suffixes dropped).

    >>> version_key("0.26.1.dev5+gabc"), version_key("0.33.0")
    ((0, 26, 1), (0, 33, 0))
    """
    parts: list[int] = []
    for piece in version.split("+")[0].split("."):
        m = re.match(r"\d+", piece)
        if m is None:
            break
        parts.append(int(m.group(0)))
        if m.group(0) != piece:
            break
    return tuple(parts)


def closest_release(version: str | None) -> str:
    """The release whose formats to read a build's own output with (a log): `release_for`'s, else
    the newest supported release not newer than the build's numbers (a dev build reads like the
    release it grew from), the oldest for an older one, the newest when there are no numbers.
    Never for planning: a plan needs `release_for`.

    >>> closest_release(None) == LATEST_VERSION, closest_release("0.0.1") == SUPPORTED_VERSIONS[0]
    (True, True)
    """
    if version is None:
        return LATEST_VERSION
    strict = release_for(version)
    if strict is not None:
        return strict
    key = version_key(version)
    if not key:
        return LATEST_VERSION
    below = [v for n, v in _known() if n <= key]
    return below[-1] if below else SUPPORTED_VERSIONS[0]


class _Since(Protocol):
    @property
    def since(self) -> str: ...


_E = TypeVar("_E", bound=_Since)


def since_entry(table: Sequence[_E], release: str) -> _E:
    """The entry of a `since`-keyed table (oldest first, each `since` a supported release) that
    applies to the supported `release`: the last one whose `since` is not newer. Every table
    starts at the oldest supported release, so one always applies."""
    at = SUPPORTED_VERSIONS.index(release)
    return [entry for entry in table if SUPPORTED_VERSIONS.index(entry.since) <= at][-1]
