"""Planner inputs: a vLLM serve config, already parsed and typed, frozen.

Field names are vLLM's own (`max_num_seqs`, `cudagraph_capture_sizes`, ...), so a
cgplan YAML reads like the `vllm serve --config` file it predicts. `None` means
"not given": the chosen vLLM release's default applies, as it would on a GPU host.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cgplan.core.model.modes import CGSupport, Mode, Platform

SPEC_METHODS = ("eagle", "eagle3", "mtp", "ngram", "draft_model", "dflash", "dspark", "suffix")
"""Speculative methods cgplan models (vLLM's `speculative_config.method`)."""

MODEL_RUNNERS = ("auto", "v1", "v2")
"""Model-runner choices: `auto` lets the vLLM release decide (VLLM_USE_V2_MODEL_RUNNER unset)."""

PERFORMANCE_MODES = ("balanced", "interactivity", "throughput")
"""vLLM's `performance_mode` values."""

COMPILATION_MODES = ("NONE", "STOCK_TORCH_COMPILE", "DYNAMO_TRACE_ONCE", "VLLM_COMPILE")
"""vLLM's `CompilationMode` members by value (vllm/config/compilation.py, 0..3 in every release)."""
VLLM_COMPILE = 3
"""`CompilationMode.VLLM_COMPILE`: the only mode that compiles the model into pieces."""
STOCK_TORCH_COMPILE = 1
"""`CompilationMode.STOCK_TORCH_COMPILE`: `model.compile(fullgraph=True)`, no CUDA-graph wrapper."""

_IF_SET = {"fingerprint": "if_set"}
"""Field metadata: fingerprinted only when it differs from its default."""


@dataclass(frozen=True)
class ModelShape:
    """What cgplan needs to know about the model, read from its Hugging Face config.json."""

    architecture: str = "LlamaForCausalLM"
    """First entry of `architectures`."""
    hidden_size: int = 4096
    """Model width."""
    num_hidden_layers: int = 32
    """Decoder layers of the target model."""
    num_attention_heads: int = 32
    """Query heads."""
    num_key_value_heads: int = 32
    """KV heads (GQA)."""
    head_dim: int = 128
    """Per-head width."""
    intermediate_size: int = 11008
    """MLP width (dense layers)."""
    vocab_size: int = 32000
    """Vocabulary size."""
    dtype: str = "bfloat16"
    """`torch_dtype` of the checkpoint."""
    quantization: str = field(default="", metadata=_IF_SET)
    """`quantization_config.quant_method` of the checkpoint ("": not quantised)."""
    is_moe: bool = False
    """Mixture-of-experts layers present (n_routed_experts / num_local_experts > 0)."""
    use_mla: bool = False
    """Multi-head latent attention (DeepSeek-V2/V3 style, `kv_lora_rank` set)."""
    kv_lora_rank: int = field(default=0, metadata={"fingerprint": False})
    """MLA's latent width (`kv_lora_rank`; 0 without MLA): the value width of MLA decode, which
    sizes FlashAttnMLA's split-KV accumulators (cost model only; capture does not depend on it)."""
    moe_dense_layers: int = field(default=0, metadata={"fingerprint": False})
    """Layers of an MoE model that run a dense MLP instead of experts (`first_k_dense_replace`,
    Qwen-MoE's `mlp_only_layers`; 0 for a dense model): their gate_up output, 2 x
    intermediate_size wide, is the widest tensor of a piece (cost model only)."""
    num_routed_experts: int = field(default=0, metadata={"fingerprint": False})
    """Routed experts per MoE layer (0 for a dense model): the cost model's domain states the
    expert counts it was fitted on (cost model only)."""
    moe_shared_expert_layers: int = field(default=0, metadata={"fingerprint": False})
    """MoE layers that also run shared experts (`n_shared_experts`, Qwen2-MoE's
    `shared_expert_intermediate_size`): a second MLP per layer, more kernels in every graph
    (cost model only)."""
    num_nextn_predict_layers: int = 0
    """MTP layers shipped in the checkpoint (DeepSeek-V3 style)."""
    max_position_embeddings: int = 2048
    """Context length the checkpoint declares: vLLM's default max_model_len."""
    derived_max_model_len: int | None = field(default=None, metadata={"fingerprint": False})
    """vLLM's derived maximum when config.json states it plainly (max_position_embeddings, no rope
    scaling): a larger max_model_len is refused. None: not known here, not checked."""
    architectures: tuple[str, ...] = field(default=(), metadata=_IF_SET)
    """Every entry of config.json's `architectures` (vLLM checks any of them against its lists);
    empty: only `architecture`."""
    model_type: str = field(default="", metadata={"fingerprint": False})
    """config.json's `model_type` (for messages)."""
    is_encoder_decoder: bool = field(default=False, metadata=_IF_SET)
    """vLLM's `is_encoder_decoder(hf_config)`: `is_encoder_decoder` set in config.json or its
    text_config (Whisper)."""
    other_layer_kinds: tuple[str, ...] = field(default=(), metadata=_IF_SET)
    """Layer kinds besides attention the config names (`layer_types`, `layers_block_type`,
    `hybrid_override_pattern`, Mamba state keys): "linear_attention", "mamba", ... Empty for an
    attention-only model."""
    sliding_window_layers: int = field(default=0, metadata=_IF_SET)
    """Layers `layer_types` marks "sliding_attention" (a second KV-cache group of the same backend)."""
    layer_type_names: tuple[str, ...] | None = field(default=None, metadata=_IF_SET)
    """The distinct names in config.json's `layer_types` (None: no such list): vLLM's
    `ModelConfig.is_hybrid` calls an IsHybrid class no hybrid when they are all attention
    (granite-4.0-micro; VllmRules.hybrid_attention_layer_types)."""
    sparse_attention: bool = field(default=False, metadata=_IF_SET)
    """DeepSeek sparse attention (`index_topk` in config.json: DeepSeek-V3.2, GLM-5)."""

    @property
    def all_architectures(self) -> tuple[str, ...]:
        """`architectures`, or the one `architecture` when config.json listed no more."""
        return self.architectures or (self.architecture,)


@dataclass(frozen=True)
class ParallelDraft:
    """What vLLM's DFlash and DSpark speculators read from the draft's config.json to build their
    query graphs (the `speculative_config.model` folder; None where a field is absent)."""

    architecture: str
    """First entry of `architectures`: picks the speculator (`init_speculator`)."""
    model_type: str = ""
    """`model_type`."""
    head_dim: int = 128
    """Per-head width of the draft's attention layers (their KV spec: the backend's support)."""
    num_key_value_heads: int = 8
    """KV heads of the draft's attention layers."""
    num_hidden_layers: int = 1
    """Draft layers (DFlash's causality is resolved per layer)."""
    layer_types: tuple[str, ...] = ()
    """`layer_types` ("sliding_attention" / "full_attention"), empty when absent."""
    is_causal: bool | None = None
    """`is_causal`: overrides every layer's causality (read from vLLM 0.28)."""
    dflash_causal: bool | None = None
    """`dflash_config.causal`: overrides every layer's causality."""
    dspark_bonus_anchor: bool | None = None
    """`dspark_bonus_anchor`: DSpark's 1 + N fill-in block (vLLM 0.26's flag)."""
    sample_from_anchor: bool | None = None
    """`sample_from_anchor`: DSpark's anchor-as-first N-slot block (vLLM 0.27+'s flag)."""
    dspark_block_size: int | None = None
    """`dspark_block_size`: DSpark refuses a smaller num_speculative_tokens."""


@dataclass(frozen=True)
class SpeculativeSpec:
    """vLLM's `speculative_config`, the fields that shape capture."""

    method: str
    """One of SPEC_METHODS."""
    num_speculative_tokens: int
    """K: draft tokens per step; a uniform decode step is 1 + K tokens per request."""
    num_speculative_tokens_per_batch_size: tuple[tuple[int, int, int], ...] | None = None
    """Dynamic-SD schedule: inclusive (first_batch, last_batch, K) ranges."""
    enforce_eager: bool = False
    """Run the drafter without CUDA graphs."""
    draft_model: ModelShape | None = field(default=None, metadata={"fingerprint": False})
    """The draft model's shape when `speculative_config.model` is a local folder (cost model only;
    left out of the fingerprint so that reports made before it was read keep matching)."""
    parallel_draft: ParallelDraft | None = field(default=None, metadata=_IF_SET)
    """DFlash / DSpark: the draft's config.json fields their speculators read (None otherwise)."""
    enable_adaptive_verification: bool = field(default=False, metadata=_IF_SET)
    """`speculative_config.enable_adaptive_verification` (DSpark, vLLM 0.28+): the target verifies
    a variable number of drafts per request through varlen decode graphs."""


KV_ROLES = ("kv_producer", "kv_both", "kv_consumer")
"""vLLM's `KVRole` values (`get_args(KVRole)`, vllm/config/kv_transfer.py, 0.26-0.33)."""


@dataclass(frozen=True)
class KvConnector:
    """vLLM's `kv_transfer_config`, the fields its CUDA-graph rule reads."""

    name: str
    """`kv_connector`: a connector registered in vLLM's KVConnectorFactory."""
    role: str | None = None
    """`kv_role` (KV_ROLES); with it the config is a KV-transfer instance."""
    use_layerwise: bool = False
    """`kv_connector_extra_config.use_layerwise`, as vLLM tests it (truthiness): LMCache's
    layer-by-layer transfer."""
    children: tuple[KvConnector, ...] = ()
    """MultiConnector's `kv_connector_extra_config.connectors`, each read the same way."""


@dataclass(frozen=True)
class PlanInput:
    """One vLLM serve config plus what vLLM cannot infer off a GPU."""

    vllm_version: str
    """Release whose rules apply, e.g. "0.33.0"."""
    platform: Platform
    """GPU family."""
    model: ModelShape
    """Target model shape."""
    max_num_seqs: int
    """Scheduler's request limit per step (S)."""
    max_num_batched_tokens: int
    """Scheduler's token limit per step (B), after vLLM's defaulting."""
    max_model_len: int = 4096
    """Context length."""
    tensor_parallel_size: int = 1
    """TP degree."""
    enforce_eager: bool = False
    """No CUDA graphs at all."""
    performance_mode: str | None = None
    """vLLM's `performance_mode` (None = the release's default)."""
    optimization_level: int = 2
    """vLLM's -O level (0..3); picks the default cudagraph_mode."""
    speculative: SpeculativeSpec | None = None
    """Speculative decoding, or None."""
    cudagraph_mode: Mode | None = None
    """Requested `compilation_config.cudagraph_mode` (None = level default)."""
    max_cudagraph_capture_size: int | None = None
    """Requested scalar maximum (None = inferred)."""
    cudagraph_capture_sizes: tuple[int, ...] | None = None
    """Requested explicit size list (None = inferred)."""
    enable_sp: bool = False
    """`compilation_config.pass_config.enable_sp` (removed in vLLM 0.32)."""
    sp_min_token_num: int | None = None
    """`pass_config.sp_min_token_num`: disables vLLM's SP size heuristic when set."""
    model_runner: str = "auto"
    """One of MODEL_RUNNERS."""
    attention_backend: str | None = None
    """Force an attention backend by vLLM's `AttentionBackendEnum` name."""
    attention_cudagraph_support: CGSupport | None = None
    """Force the attention CUDA-graph support level."""
    # Parallelism, LoRA and microbatching (issue 16). Left out of the fingerprint at their defaults, so
    # that reports of configs without them keep the fingerprint they were made with.
    pipeline_parallel_size: int = field(default=1, metadata=_IF_SET)
    """PP degree: every stage captures the same descriptors (its own layers)."""
    data_parallel_size: int = field(default=1, metadata=_IF_SET)
    """DP degree: each rank plans alike; ranks pad to a common batch at run time."""
    decode_context_parallel_size: int = field(default=1, metadata=_IF_SET)
    """DCP degree (splits the KV cache of decode across the TP group)."""
    enable_expert_parallel: bool = field(default=False, metadata=_IF_SET)
    """Experts sharded across TP x DP ranks instead of tensor-parallel."""
    enable_lora: bool = field(default=False, metadata=_IF_SET)
    """LoRA adapters served: graphs per active-adapter count."""
    max_loras: int = field(default=1, metadata=_IF_SET)
    """Adapters active in one batch (vLLM's default 1)."""
    cudagraph_specialize_lora: bool = field(default=True, metadata=_IF_SET)
    """`compilation_config.cudagraph_specialize_lora`: separate graphs with and without LoRA."""
    specialize_active_lora: bool = field(default=False, metadata=_IF_SET)
    """LoRAConfig.specialize_active_lora: with cudagraph_specialize_lora, a graph set per active
    adapter count (powers of two up to max_loras, and max_loras + 1) instead of one LoRA set."""
    enable_dbo: bool = field(default=False, metadata=_IF_SET)
    """Dual-batch overlap (two microbatches)."""
    ubatch_size: int = field(default=0, metadata=_IF_SET)
    """Microbatches per step without DBO (0 or 1 = off)."""
    dbo_decode_token_threshold: int = field(default=32, metadata=_IF_SET)
    """Smallest uniform-decode batch (tokens) that is microbatched."""
    dbo_prefill_token_threshold: int = field(default=512, metadata=_IF_SET)
    """Smallest mixed batch (tokens) that is microbatched."""
    all2all_backend: str | None = field(default=None, metadata=_IF_SET)
    """`all2all_backend` as given (None = allgather_reducescatter); microbatching needs DeepEP/NIXL-EP."""
    async_scheduling: bool | None = field(default=None, metadata=_IF_SET)
    """`async_scheduling` as given (None = the release's default)."""
    kv_transfer: KvConnector | None = field(default=None, metadata=_IF_SET)
    """`kv_transfer_config`'s connector (None: no KV transfer)."""
    runner: str = field(default="generate", metadata=_IF_SET)
    """vLLM's resolved `runner`: "generate" or "pooling" (`--runner`, or its `auto` resolved from
    the model)."""
    # Compilation (#27): what decides whether vLLM compiles the model, and so which modes survive.
    compilation_mode: int | None = field(default=None, metadata=_IF_SET)
    """`compilation_config.mode` as given, a `CompilationMode` value (index into COMPILATION_MODES);
    None: vLLM's default (VLLM_COMPILE above -O0, NONE at -O0)."""
    gpu_name: str = field(default="", metadata={"fingerprint": False})
    """The GPU by name where the platform was given as one ("H100", "L40S"; "": a family name,
    which the predictors read as the GPU they were measured on). Not fingerprinted: what vLLM
    captures follows the platform (fingerprinted); the name only places the predictions' domain."""
    kv_cache_dtype: str = field(default="auto", metadata=_IF_SET)
    """vLLM's `cache_config.cache_dtype` (`--kv-cache-dtype`), one of the release's `CacheDType`
    values (`VllmRules.kv_cache_dtypes`); "auto" stores the KV cache in the model's dtype."""
    env: tuple[tuple[str, str], ...] = field(default=(), metadata=_IF_SET)
    """vLLM's environment variables that change capture, as set (name, value), sorted: the core
    reads them as vLLM does (`TORCH_COMPILE_DISABLE == "1"`, `VLLM_USE_BREAKABLE_CUDAGRAPH` set or
    not). VLLM_USE_V2_MODEL_RUNNER is `model_runner`."""

    @property
    def use_ubatching(self) -> bool:
        """vLLM's `ParallelConfig.use_ubatching`."""
        return self.enable_dbo or self.ubatch_size > 1

    @property
    def num_ubatches(self) -> int:
        """vLLM's `ParallelConfig.num_ubatches` (2 under DBO)."""
        return 2 if self.enable_dbo else self.ubatch_size

    defaulted: tuple[str, ...] = field(default=(), metadata={"fingerprint": False}, compare=False)
    """Names of the fields above the config left unset, filled with vLLM's (or cgplan's)
    default, so a report can say what it assumed (left out of the fingerprint and equality)."""

    @property
    def num_speculative_tokens(self) -> int:
        """K, or 0 without speculation."""
        return self.speculative.num_speculative_tokens if self.speculative else 0

    @property
    def uniform_decode_query_len(self) -> int:
        """Tokens per request in a uniform decode step: 1 + K."""
        return 1 + self.num_speculative_tokens

    def env_value(self, name: str) -> str | None:
        """The value of vLLM environment variable `name` in this config, None when it is unset."""
        return next((v for k, v in self.env if k == name), None)
