"""DFlash, DSpark and suffix decoding: what vLLM's config checks and speculators build, release by
release.

DFlash and DSpark draft a whole block in one parallel query pass. On model runner V2 their
speculator (`init_speculator`, vllm/v1/worker/gpu/spec_decode/dflash/ and dspark/) owns one
`DFlashCudaGraphManager`: FULL_DECODE_ONLY graphs at `num_query_per_req` tokens per request when
the target's decode mode is FULL and the draft attention reports at least UNIFORM_BATCH, none
otherwise (`DFlashSpeculator.init_cudagraph_manager`; PIECEWISE is not supported for dflash).
DFlash queries 1 + K tokens per request; DSpark K with its anchor-as-first layout, 1 + K with the
fill-in layout. On V1, DFlash runs `DFlashProposer` (llm_base_proposer: PIECEWISE keys like
EAGLE's), whose dummy run never drafts more than max_num_seqs x (1 + K) query tokens. Suffix
decoding drafts on the CPU (arctic-inference): V1 only, no drafter graphs.
"""

from __future__ import annotations

from cgplan.core.model.modes import CGSupport, Mode
from cgplan.core.model.spec import ParallelDraft, PlanInput, SpeculativeSpec
from cgplan.core.model.types import Rejected
from cgplan.core.vllm.attention import backend_refusal, cudagraph_support, default_backend
from cgplan.core.vllm.releases import VllmRules, first_release

PARALLEL_DRAFTERS = ("dflash", "dspark")
"""Methods whose V2 speculator captures one query graph family of its own."""

SUFFIX_DEFAULT_TREE_DEPTH = 24
"""SpeculativeConfig.suffix_decoding_max_tree_depth's default: suffix decoding's K when unset."""

# Draft architectures `init_speculator` (or VllmConfig) sends elsewhere than the plain DFlash /
# DSpark speculators: DFlash2 (0.28+), LiLiCorr (0.31+), XPress (0.33), DeepSeek-V4's built-in
# DSpark and the Gemma4 / Qwen3-Omni / MuseSpark / K3 DSpark drafts.
_PLAIN_DSPARK = ("Qwen3DSparkModel",)
_OTHER_DFLASH = {
    "DFlash2DraftModel": "DFlash2",
    "DFlash2BeamDraftModel": "DFlash2",
    "LiLiCorrDraftModel": "LiLiCorr",
    "Qwen3XPressModel": "XPress",
    "DFlashQwen3XPressModel": "XPress",
}


def _not_modelled(path: str, what: str) -> Rejected:
    return Rejected(path, f"{what}: cgplan does not model it yet")


def check_speculative(inp: PlanInput, rules: VllmRules) -> None:
    """SpeculativeConfig's checks of the three methods, and what cgplan does not model of them."""
    spec = inp.speculative
    if spec is None:
        return
    if spec.enable_adaptive_verification:
        if not rules.adaptive_verification:
            since = first_release(lambda r: r.adaptive_verification)
            raise Rejected(
                "speculative_config.enable_adaptive_verification",
                f"vLLM {rules.version} has no adaptive verification (added in {since}); "
                "SpeculativeConfig rejects 'enable_adaptive_verification' as an unexpected keyword argument",
            )
        if spec.method != "dspark":
            raise Rejected(
                "speculative_config.enable_adaptive_verification",
                "Adaptive verification only supported with DSpark",
            )
    if spec.method not in (*PARALLEL_DRAFTERS, "suffix"):
        return
    if spec.num_speculative_tokens_per_batch_size:
        raise _not_modelled(
            "speculative_config.num_speculative_tokens_per_batch_size",
            f"dynamic speculative decoding with method {spec.method}",
        )
    if spec.method == "suffix":
        if inp.async_scheduling:
            raise Rejected("async_scheduling", rules.async_spec_message.format(method=spec.method))
        return
    draft = spec.parallel_draft
    if draft is None:
        raise _not_modelled(
            "speculative_config.model",
            f"{spec.method} without a local draft folder (its config.json decides the speculator, "
            "the query length and the draft attention; DSpark without a model reuses DeepSeek-V4's "
            "own checkpoint)",
        )
    if inp.model.use_mla:
        raise _not_modelled("speculative_config.method", f"{spec.method} drafting for an MLA target")
    if inp.attention_backend is not None:
        # the draft's layers are built with the speculator's config: non-causal where DFlash's are
        refusal = backend_refusal(
            inp.attention_backend,
            inp.platform,
            draft.head_dim,
            inp.model.dtype,
            False,
            rules.version,
            non_causal=non_causal(draft, rules),
            dcp=inp.decode_context_parallel_size > 1,
        )
        if refusal is not None:
            raise Rejected("cgplan.attention_backend", refusal)
    if spec.method == "dflash":
        other = _OTHER_DFLASH.get(draft.architecture)
        if other is not None:
            raise _not_modelled(
                "speculative_config.model", f"a {other} draft ({draft.architecture}: its own speculator)"
            )
        sliding = sum(t == "sliding_attention" for t in draft.layer_types)
        if 0 < sliding < len(draft.layer_types):
            raise _not_modelled(
                "speculative_config.model",
                "a DFlash draft mixing sliding and full attention (several KV cache groups)",
            )
        return
    if draft.architecture not in _PLAIN_DSPARK:
        raise _not_modelled(
            "speculative_config.model",
            f"a {draft.architecture} DSpark draft (cgplan models Qwen3DSparkModel drafts)",
        )
    block = draft.dspark_block_size
    if rules.dspark_block_check and block is not None and spec.num_speculative_tokens < block:
        # vllm/config/speculative.py: a smaller block garbles the Markov head's layout
        raise Rejected(
            "speculative_config.num_speculative_tokens",
            f"DSpark requires num_speculative_tokens >= dspark_block_size ({block}); got "
            f"{spec.num_speculative_tokens}. Smaller values produce incorrect output. Use "
            f"num_speculative_tokens={block} or larger (e.g. 7).",
        )
    if spec.enable_adaptive_verification:
        raise _not_modelled(
            "speculative_config.enable_adaptive_verification",
            "DSpark's adaptive verification (the target's varlen decode graphs, its backend filter)",
        )


def query_len(spec: SpeculativeSpec, rules: VllmRules) -> int:
    """`num_query_per_req` of the speculator: DFlash 1 + K; DSpark K with its anchor-as-first
    layout, 1 + K with the fill-in one (the flag its release reads)."""
    k = spec.num_speculative_tokens
    if spec.method != "dspark":
        return 1 + k
    draft = spec.parallel_draft
    if rules.dspark_anchor_flag == "dspark_bonus_anchor":
        fill_in = bool(draft and draft.dspark_bonus_anchor)
    else:
        fill_in = draft is not None and draft.sample_from_anchor is False
    return 1 + k if fill_in else k


def non_causal(draft: ParallelDraft, rules: VllmRules) -> bool:
    """`dflash_has_any_non_causal` (qwen3_dflash.py): a layer is causal by `is_causal` (0.28+),
    then `dflash_config.causal`, then being a sliding-window layer."""

    def causal(i: int) -> bool:
        if rules.dflash_reads_is_causal and draft.is_causal is not None:
            return draft.is_causal
        if draft.dflash_causal is not None:
            return draft.dflash_causal
        types = draft.layer_types
        return i < len(types) and types[i] == "sliding_attention"

    return not all(causal(i) for i in range(draft.num_hidden_layers))


def draft_backend(inp: PlanInput, rules: VllmRules) -> str:
    """The backend of the draft's layers: the forced one, else the head of the platform's list
    for a dense draft (`_get_backend_priorities(use_non_causal=...)`: SM100 puts FLASH_ATTN
    before FlashInfer for a non-causal one, whose cutlass path has problems there)."""
    if inp.attention_backend:
        return inp.attention_backend
    spec = inp.speculative
    draft = spec.parallel_draft if spec else None
    if inp.platform.is_sm100_family and draft is not None and non_causal(draft, rules):
        return "FLASH_ATTN"
    return default_backend(inp.platform, False)


def draft_support(inp: PlanInput, rules: VllmRules, *, as_speculator: bool) -> CGSupport:
    """The level the draft layers' builder reports: for the runner's own attention groups (its
    config, causal) or, `as_speculator`, under the speculator's `attn_vllm_config`
    (`use_non_causal`), as `set_attn` gives it to `init_cudagraph_manager`."""
    spec = inp.speculative
    assert spec is not None and spec.parallel_draft is not None
    draft = spec.parallel_draft
    # DSparkSpeculator is a DFlashSpeculator: the same `dflash_has_any_non_causal` of its config
    nc = as_speculator and non_causal(draft, rules)
    return cudagraph_support(draft_backend(inp, rules), inp.platform, draft.head_dim, rules, non_causal=nc)


def drafter_mode(target_mode: Mode, support: CGSupport) -> Mode:
    """`DFlashSpeculator.init_cudagraph_manager`: FULL_DECODE_ONLY or nothing."""
    if target_mode.decode_mode() is Mode.FULL and support >= CGSupport.UNIFORM_BATCH:
        return Mode.FULL_DECODE_ONLY
    return Mode.NONE


def v1_query_tokens(inp: PlanInput) -> int:
    """`DFlashProposer.max_query_tokens`: its dummy run drafts at most this many query tokens."""
    return inp.max_num_seqs * inp.uniform_decode_query_len


def check_runner(inp: PlanInput, rules: VllmRules, runner: str) -> None:
    """What cgplan refuses of a method on a runner it cannot run on."""
    spec = inp.speculative
    if spec is not None and spec.method == "dspark" and runner == "v1":
        raise _not_modelled(
            "cgplan.model_runner",
            f"dspark on model runner V1 in vLLM {rules.version} (VLLM_USE_V2_MODEL_RUNNER=0: the V1 "
            "runner builds an EAGLE proposer for it; vLLM says V1 can't run dspark)",
        )
