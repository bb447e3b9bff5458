"""Config-time decisions: model runner, sequence parallelism, the cudagraph mode, and
the attention downgrade with V1's rounding (vLLM's `resolve_cudagraph_mode_and_sizes`)."""

from __future__ import annotations

from dataclasses import dataclass

from cgplan.core.model.modes import CGSupport, Mode
from cgplan.core.model.spec import (
    COMPILATION_MODES,
    STOCK_TORCH_COMPILE,
    VLLM_COMPILE,
    KvConnector,
    PlanInput,
)
from cgplan.core.model.types import Note, Rejected
from cgplan.core.vllm.attention import backend_refusal, cudagraph_support, default_backend
from cgplan.core.vllm.graphs import round_up
from cgplan.core.vllm.releases import VllmRules, first_release

# vllm/compilation/passes/fusion/sequence_parallelism.py: SP_MIN_HIDDEN_SIZE and
# SP_MIN_PER_GPU_SIZE_MB, keyed by SM major (SM10x collapsed to 100).
_SP_MIN_HIDDEN_SIZE = {9: 8192, 10: 8192}

# vllm/config/vllm.py OPTIMIZATION_LEVEL_TO_CONFIG: the default cudagraph_mode per -O level.
LEVEL_DEFAULT_MODE = {0: Mode.NONE, 1: Mode.PIECEWISE, 2: Mode.FULL_AND_PIECEWISE, 3: Mode.FULL_AND_PIECEWISE}


def uses_dynamic_sd(inp: PlanInput) -> bool:
    """A dynamic-SD schedule is configured (vLLM's `uses_dynamic_speculative_decoding`)."""
    return inp.speculative is not None and bool(inp.speculative.num_speculative_tokens_per_batch_size)


_SP_REMOVED = first_release(lambda r: not r.sequence_parallel)


def sequence_parallel_on(inp: PlanInput, rules: VllmRules, notes: list[Note]) -> bool:
    """Whether `pass_config.enable_sp` survives vLLM's checks (≤ 0.31 only)."""
    if not inp.enable_sp:
        return False
    if not rules.sequence_parallel:
        raise Rejected(
            "compilation_config.pass_config.enable_sp",
            f"vLLM {rules.version} has no sequence-parallelism pass (removed in {_SP_REMOVED}); "
            "PassConfig rejects 'enable_sp' as an unexpected keyword argument",
        )
    if inp.tensor_parallel_size == 1:
        notes.append(Note("sp_disabled", "Sequence Parallelism requires TP>1, disabling"))
        return False
    if inp.sp_min_token_num is None:
        min_hidden = _SP_MIN_HIDDEN_SIZE.get(inp.platform.compute_capability[0])
        if min_hidden is None or inp.model.hidden_size < min_hidden:
            notes.append(
                Note(
                    "sp_disabled",
                    "Model hidden_size too small for the SP threshold heuristic, disabling. "
                    "To force SP, set pass_config.sp_min_token_num manually.",
                )
            )
            return False
    return True


# vllm/config/vllm.py: the all-to-all backends microbatching runs with on CUDA.
UBATCH_ALL2ALL_BACKENDS = ("deepep_low_latency", "deepep_high_throughput", "nixl_ep")
DEFAULT_ALL2ALL_BACKEND = "allgather_reducescatter"
"""ParallelConfig.all2all_backend's default."""


def _dbo_unsupported(inp: PlanInput, rules: VllmRules) -> list[str]:
    """What V2 lacks for DBO/microbatching (`_get_dbo_unsupported_features`, 0.30+)."""
    if rules.v2_dbo_check == "enable_dbo":
        return ["dual batch overlap"] if inp.enable_dbo else []
    if not inp.use_ubatching:
        return []
    if inp.model_runner != "v2":
        # "under development": V2 takes DBO only when VLLM_USE_V2_MODEL_RUNNER is set
        return ["dual batch overlap"]
    out = []
    if inp.enable_lora:
        out.append("dual batch overlap with LoRA")
    if inp.speculative is not None:
        out.append("dual batch overlap with speculative decoding")
    if inp.pipeline_parallel_size > 1:
        out.append("dual batch overlap with pipeline parallelism")
    if inp.decode_context_parallel_size > 1:
        out.append("dual batch overlap with context parallelism")
    mode = (
        Mode.NONE if inp.enforce_eager else inp.cudagraph_mode or LEVEL_DEFAULT_MODE[inp.optimization_level]
    )
    if mode is Mode.PIECEWISE:
        out.append("dual batch overlap with PIECEWISE CUDA graphs")
    return out


def validate_parallel(inp: PlanInput, rules: VllmRules) -> None:
    """ParallelConfig's and ModelConfig's checks of DCP, EP and microbatching, in vLLM's order."""
    tp, dcp = inp.tensor_parallel_size, inp.decode_context_parallel_size
    if (
        rules.ubatch_threshold_check
        and inp.use_ubatching
        and min(inp.dbo_decode_token_threshold, inp.dbo_prefill_token_threshold) < inp.num_ubatches
    ):
        raise Rejected(
            "dbo_decode_token_threshold",
            "dbo_decode_token_threshold and dbo_prefill_token_threshold must be at least the "
            f"number of microbatches ({inp.num_ubatches}).",
        )
    if tp % dcp:
        raise Rejected("decode_context_parallel_size", f"tp_size={tp} must be divisible by dcp_size={dcp}.")
    heads = inp.model.num_attention_heads
    if heads % tp:
        # ModelConfig.verify_with_parallel_config, every release
        raise Rejected(
            "tensor_parallel_size",
            f"Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp}).",
        )
    if inp.enable_expert_parallel and not inp.model.is_moe:
        raise Rejected(
            "enable_expert_parallel",
            "Number of experts in the model must be greater than 0 when expert parallelism is enabled.",
        )
    if dcp > 1 and not inp.model.use_mla:
        kv_heads = inp.model.num_key_value_heads
        q_per_kv = heads // kv_heads
        if rules.dcp_gqa_check == "assert":
            if tp <= kv_heads:
                raise Rejected(
                    "decode_context_parallel_size",
                    f"tensor parallel size {tp} must be greater than total num kv heads {kv_heads} "
                    "when enable decode context parallel for GQA/MQA",
                )
            if dcp > tp // kv_heads:
                raise Rejected(
                    "decode_context_parallel_size",
                    "decode context parallel size must less than or equal to (tensor parallel size "
                    f"{tp} // total num kv heads {kv_heads}) = {tp // kv_heads}, but got {dcp}",
                )
            if q_per_kv % dcp:
                raise Rejected(
                    "decode_context_parallel_size",
                    f"Total number of q per kv attn heads ({q_per_kv}) must be divisible by dcp world "
                    f"size when enable decode context parallel for GQA ({dcp}).",
                )
            return
        if tp <= kv_heads:
            raise Rejected(
                "decode_context_parallel_size",
                "Decode context parallelism for GQA/MQA requires `--tensor-parallel-size` "
                f"({tp}) to be greater than the model's total number of KV heads ({kv_heads}). "
                "Increase `--tensor-parallel-size` or set `--decode-context-parallel-size 1`.",
            )
        if dcp > tp // kv_heads:
            raise Rejected(
                "decode_context_parallel_size",
                f"`--decode-context-parallel-size` ({dcp}) exceeds the maximum supported value "
                f"({tp // kv_heads}) for `--tensor-parallel-size` ({tp}) and {kv_heads} model KV heads.",
            )
        if q_per_kv % dcp:
            raise Rejected(
                "decode_context_parallel_size",
                f"The model's number of query heads per KV head ({q_per_kv}) must be divisible by "
                f"`--decode-context-parallel-size` ({dcp}) for GQA/MQA.",
            )


def validate_speculative(inp: PlanInput) -> None:
    """SpeculativeConfig's check of an MTP draft against its layers (every release): a K above the
    draft's `n_predict` (the model's `num_nextn_predict_layers`) must reuse the layers whole."""
    spec = inp.speculative
    if spec is None or spec.method != "mtp":
        return
    layers, k = inp.model.num_nextn_predict_layers, spec.num_speculative_tokens
    if layers == 0:
        raise Rejected(
            "speculative_config.method",
            f"MTP drafts with the model's own MTP layers, and {inp.model.architecture}'s config.json "
            "gives num_nextn_predict_layers 0 (or none): vLLM's SpeculativeConfig takes it as the "
            "draft's n_predict and fails checking num_speculative_tokens against it "
            "(ZeroDivisionError: integer modulo by zero)",
        )
    if k > layers and k % layers:
        raise Rejected(
            "speculative_config.num_speculative_tokens",
            f"num_speculative_tokens:{k} must be divisible by n_predict={layers}",
        )


def validate_ubatching_backend(inp: PlanInput, rules: VllmRules) -> None:
    """VllmConfig's microbatching assertion: only DeepEP/NIXL-EP all-to-all kernels split a batch."""
    backend = inp.all2all_backend or DEFAULT_ALL2ALL_BACKEND
    if inp.use_ubatching and backend not in UBATCH_ALL2ALL_BACKENDS:
        *first, last = UBATCH_ALL2ALL_BACKENDS
        flags = ["--all2all-backend=" + b for b in UBATCH_ALL2ALL_BACKENDS]
        if rules.ubatch_backend_platform_words:
            listed = f"{', '.join(UBATCH_ALL2ALL_BACKENDS)} all2all backends on this platform"
            fix = "one of " + ", ".join(flags)
        else:
            listed = f"{', '.join(first)}, and {last} all2all backends"
            fix = ", ".join(flags[:-1]) + ", or " + flags[-1]
        raise Rejected(
            "all2all_backend",
            f"Microbatching currently only supports the {listed}. {backend} is not supported. "
            f"To fix use {fix} and install the matching kernels.",
        )


def model_runner(inp: PlanInput, rules: VllmRules, sp_on: bool, notes: list[Note], comp: Compilation) -> str:
    """ "v1" or "v2", as `VllmConfig.use_v2_model_runner` decides (`comp`: the compilation mode
    after `__post_init__`'s overrides)."""
    unsupported: list[str] = []
    if rules.v2_stock_compile_unsupported and comp.mode == STOCK_TORCH_COMPILE:
        unsupported.append("stock torch.compile")
    method = inp.speculative.method if inp.speculative else None
    if method in rules.v2_runner_unsupported_methods:
        unsupported.append(rules.v2_runner_unsupported_methods[method])
    if sp_on:
        unsupported.append("sequence parallelism")
    if rules.v2_eagle3_pp_unsupported and method == "eagle3" and inp.pipeline_parallel_size > 1:
        unsupported.append("EAGLE3 with pipeline parallelism")
    unsupported += _dbo_unsupported(inp, rules)
    forced_v2 = method in rules.v2_forced_methods and inp.model_runner == "auto"
    if (inp.model_runner == "v2" or forced_v2) and unsupported:
        # _validate_v2_model_runner: forcing V2 with a feature it lacks is an error.
        raise Rejected(
            "cgplan.model_runner",
            f"Model Runner V2 does not yet support: {', '.join(unsupported)}",
        )
    if inp.model_runner in ("v1", "v2"):
        if inp.model_runner == "v1":
            _check_v1(inp, rules)
        return inp.model_runner
    if forced_v2:
        # use_v2_model_runner returns True for it before the default-model and feature checks
        return "v2"
    default_moe = rules.v2_default_moe_architectures
    if default_moe is not None and inp.runner != "generate":
        # _is_default_v2_model_runner_model (0.26-0.28): only the generate runner defaults to V2
        notes.append(Note("runner", f"the {inp.runner} runner is not a default Model Runner V2 model"))
        return "v1"
    if default_moe is not None and inp.model.is_moe and inp.model.architecture not in default_moe:
        notes.append(Note("runner", f"{inp.model.architecture} is not a default Model Runner V2 model"))
        return "v1"
    if unsupported:
        notes.append(
            Note(
                "runner_fallback",
                f"Model Runner V2 does not yet support {', '.join(unsupported)}; "
                "using the V1 model runner instead.",
            )
        )
        _check_v1(inp, rules)
        return "v1"
    return "v2"


def _check_v1(inp: PlanInput, rules: VllmRules) -> None:
    """What V1 refuses: a method only V2 runs (`_validate_v1_model_runner`, 0.29+); an explicit
    async_scheduling with pipeline parallelism (0.31+)."""
    method = inp.speculative.method if inp.speculative else None
    v1_lacks = [text for m, text in rules.v1_unsupported_methods if m == method]
    if v1_lacks:
        raise Rejected(
            "speculative_config.method", f"Model Runner V1 does not support: {', '.join(v1_lacks)}"
        )
    if rules.v1_pp_async_unsupported and inp.pipeline_parallel_size > 1 and inp.async_scheduling:
        raise Rejected(
            "async_scheduling",
            "Async scheduling is not supported by the V1 model runner with pipeline parallelism."
            if rules.v1_pp_async_message == "async"
            else "Model Runner V1 does not support: pipeline parallelism with async scheduling",
        )


@dataclass(frozen=True)
class Compilation:
    """How vLLM compiles the model: its `CompilationMode` after `VllmConfig.__post_init__`."""

    mode: int
    """`CompilationMode` value (COMPILATION_MODES)."""
    breakable: bool
    """Breakable CUDA graphs are on (VLLM_USE_BREAKABLE_CUDAGRAPH=1, given or auto-enabled)."""

    @property
    def name(self) -> str:
        """vLLM's member name."""
        return COMPILATION_MODES[self.mode]


def compilation(inp: PlanInput, rules: VllmRules, notes: list[Note]) -> Compilation:
    """`VllmConfig.__post_init__`'s compilation mode, in vLLM's order: enforce_eager,
    TORCH_COMPILE_DISABLE, breakable CUDA graphs (auto-enabled for the release's non-compiled
    architectures unless the variable is set), then the -O level's default (vllm/config/vllm.py)."""
    mode = inp.compilation_mode
    if inp.enforce_eager:
        mode = 0
    if inp.env_value("TORCH_COMPILE_DISABLE") == "1":
        notes.append(
            Note(
                "torch_compile_disable",
                "TORCH_COMPILE_DISABLE is set, disabling torch.compile. "
                "This is equivalent to setting -cc.mode=none",
            )
        )
        mode = 0
    breakable_env = inp.env_value("VLLM_USE_BREAKABLE_CUDAGRAPH")
    archs = rules.breakable_architectures.intersection(inp.model.all_architectures)
    if breakable_env is None and archs:
        notes.append(
            Note(
                "breakable_auto",
                "Auto-enabling VLLM_USE_BREAKABLE_CUDAGRAPH=1. Set VLLM_USE_BREAKABLE_CUDAGRAPH=0 "
                f"to opt out. ({', '.join(sorted(archs))} carries no @support_torch_compile in "
                f"vLLM {rules.version})",
            )
        )
        breakable_env = "1"
    breakable = breakable_env == "1"  # envs.py: os.environ.get(..., "0") == "1"
    if breakable:
        if rules.breakable_logs_compile_off:
            notes.append(
                Note(
                    "breakable_compile_off",
                    "VLLM_USE_BREAKABLE_CUDAGRAPH is set, disabling vLLM's torch.compile pipeline. "
                    "Equivalent to -cc.mode=none.",
                )
            )
        mode = 0
    if mode is None:
        mode = VLLM_COMPILE if inp.optimization_level > 0 else 0
    return Compilation(mode, breakable)


def breakable_note(mode: Mode, rules: VllmRules, runner: str) -> Note:
    """What breakable CUDA graphs capture (vllm/compilation/breakable_cudagraph.py): one stream
    capture per descriptor, ended at every attention/KV-cache op, which runs eager between the
    segments; V1 before 0.30 captured its FULL descriptors that way too (gpu_model_runner.py
    `load_model`), V2 and V1 0.30+ capture FULL graphs whole."""
    text = (
        "breakable CUDA graphs (VLLM_USE_BREAKABLE_CUDAGRAPH=1, compilation mode NONE): each PIECEWISE "
        "descriptor is one stream capture broken at every attention and KV-cache op, which runs eager "
        "between the graph segments, not torch.compile pieces"
    )
    if runner == "v1" and not rules.breakable_full_is_full and mode.has_full():
        text += (
            f"; model runner V1 in vLLM {rules.version} captures its FULL descriptors the same way "
            "(the BreakableCUDAGraphWrapper takes every non-NONE descriptor), so no FULL graph is "
            "whole"
        )
    return Note("breakable", text)


def cost_withheld(comp: Compilation) -> tuple[str, ...]:
    """What the cost model has no term for in how the graphs are captured."""
    return ("breakable CUDA graphs (fitted on torch.compile pieces only)",) if comp.breakable else ()


@dataclass(frozen=True)
class ModeDecision:
    """The config-time mode and whether attention is a splitting op."""

    mode: Mode
    attention_splits: bool
    compilation: Compilation
    """The compilation mode the decision was made under."""


def normalize_piecewise(
    mode: Mode, comp: Compilation, rules: VllmRules, notes: list[Note], cause: str
) -> Mode:
    """`_normalize_piecewise_cudagraph_mode` (0.30+; inline before): a piecewise mode without
    VLLM_COMPILE and without breakable CUDA graphs becomes NONE (0.26-0.29) or loses its piecewise
    half (`without_piecewise()`, 0.30+), in vLLM's own words."""
    if comp.mode == VLLM_COMPILE or comp.breakable or not mode.has_piecewise():
        return mode
    if rules.non_compile_keeps_full_decode:
        new = mode.without_piecewise()
        text = (
            f"Cudagraph mode {mode.value} is not compatible with compilation mode {comp.mode}. "
            f"Overriding to {new.value}."
        )
    else:
        new = Mode.NONE
        # sic: vLLM 0.26-0.29 print no space after the period
        text = (
            f"Cudagraph mode {mode.value} is not compatible with compilation mode {comp.mode}."
            "Overriding to NONE."
        )
    notes.append(Note("non_compile", f"{text} ({cause}: nothing is compiled into pieces)"))
    return new


def compile_off_cause(inp: PlanInput) -> str:
    """Why vLLM compiles nothing, in the config's own terms (the compilation mode is not VLLM_COMPILE)."""
    if inp.env_value("TORCH_COMPILE_DISABLE") == "1":
        return "TORCH_COMPILE_DISABLE=1"
    if inp.compilation_mode is not None:
        return f"compilation_config.mode {COMPILATION_MODES[inp.compilation_mode]}"
    return "-O0"


def config_time_mode(
    inp: PlanInput,
    rules: VllmRules,
    runner_before_sp: str,
    sp_on: bool,
    notes: list[Note],
    comp: Compilation,
) -> ModeDecision:
    """`VllmConfig.__post_init__`'s mode, in vLLM's order: level default, dynamic-SD
    override, the non-VLLM_COMPILE normalisation, then SP's full-graph forcing.

    `runner_before_sp` is the runner as the dynamic-SD override sees it: vLLM evaluates
    `use_v2_model_runner` there before the SP heuristic may switch `enable_sp` off.
    """
    if inp.enforce_eager:
        return ModeDecision(Mode.NONE, True, comp)
    mode = inp.cudagraph_mode or LEVEL_DEFAULT_MODE[inp.optimization_level]
    if uses_dynamic_sd(inp) and mode.has_full() and runner_before_sp == "v1":
        notes.append(
            Note(
                "dynamic_sd_override",
                "Dynamic speculative decoding changes the target verification length at "
                f"runtime. Overriding cudagraph_mode from {mode.value} to PIECEWISE for "
                "reliability. Use VLLM_USE_V2_MODEL_RUNNER=1 if you want to use full CUDA graphs.",
            )
        )
        mode = Mode.PIECEWISE
    if comp.mode != VLLM_COMPILE:
        # Nothing is compiled into pieces: set_splitting_ops_for_v1 leaves splitting_ops empty, so
        # attention is no splitting op (breakable graphs break at attention at run time instead).
        mode = normalize_piecewise(mode, comp, rules, notes, compile_off_cause(inp))
        mode = connector_mode(model_kind_mode(mode, inp, notes), inp, notes)
        if rules.non_compile_keeps_full_decode:  # 0.30+ normalises again after these overrides
            mode = normalize_piecewise(mode, comp, rules, notes, compile_off_cause(inp))
        elif mode.has_piecewise() and not comp.breakable:
            # 0.26-0.29: an override's PIECEWISE meets __post_init__'s final check (an assert every
            # release has; from 0.30.0 the second normalisation leaves it nothing to catch)
            raise Rejected(
                "compilation_config.cudagraph_mode",
                "Compilation mode should be CompilationMode.VLLM_COMPILE when cudagraph_mode piecewise "
                f"cudagraphs is used, cudagraph_mode={mode.value} ({compile_off_cause(inp)}: nothing "
                "is compiled into pieces)",
            )
        return ModeDecision(mode, False, comp)
    mode = connector_mode(model_kind_mode(mode, inp, notes), inp, notes)
    attention_splits = True
    if sp_on:
        # set_splitting_ops_for_v1: SP needs full-graph compilation.
        attention_splits = False
        notes.append(
            Note(
                "sp_full_graph",
                "Sequence parallelism requires full-graph compilation when "
                "use_inductor_graph_partition is off. Setting splitting_ops to an empty list "
                "to preserve SP and async TP.",
            )
        )
        if mode.has_piecewise():
            notes.append(
                Note(
                    "sp_mode",
                    "Sequence parallelism is incompatible with piecewise cudagraph when "
                    "use_inductor_graph_partition is off. Setting cudagraph_mode to FULL.",
                )
            )
            mode = Mode.FULL
    return ModeDecision(mode, attention_splits, comp)


def model_kind_mode(mode: Mode, inp: PlanInput, notes: list[Note]) -> Mode:
    """`__post_init__`'s overrides by model kind (vllm/config/vllm.py, every release 0.26-0.33):
    a pooling model (`pooler_config`, i.e. `--runner pooling`) with full graphs → PIECEWISE; an
    encoder-decoder model in any mode but NONE and FULL_DECODE_ONLY → FULL_DECODE_ONLY."""
    if inp.runner == "pooling" and mode.has_full():
        notes.append(
            Note(
                "pooling_mode",
                "Pooling models do not support full cudagraphs. Overriding cudagraph_mode to PIECEWISE.",
            )
        )
        return Mode.PIECEWISE
    if inp.model.is_encoder_decoder and mode not in (Mode.NONE, Mode.FULL_DECODE_ONLY):
        notes.append(
            Note(
                "encoder_decoder_mode",
                f"Encoder-decoder models do not support {mode.value}. "
                "Overriding cudagraph_mode to FULL_DECODE_ONLY.",
            )
        )
        return Mode.FULL_DECODE_ONLY
    return mode


def connector_requires_piecewise(conn: KvConnector) -> bool:
    """`requires_piecewise_for_cudagraph(kv_connector_extra_config)`: LMCacheConnectorV1 with
    `use_layerwise`, a MultiConnector with such a child (lmcache_connector.py, multi_connector.py;
    every other connector keeps the base class's False, 0.26-0.33)."""
    if conn.name == "LMCacheConnectorV1":
        return conn.use_layerwise
    # a MultiConnector's children; no other connector has any (cgplan.io.config reads them for it alone)
    return any(connector_requires_piecewise(c) for c in conn.children)


def validate_connector(inp: PlanInput, rules: VllmRules) -> None:
    """`KVConnectorFactory.get_connector_class`: a connector must be registered in the release."""
    todo = [inp.kv_transfer] if inp.kv_transfer is not None else []
    while todo:
        conn = todo.pop()
        if conn.name not in rules.kv_connectors:
            raise Rejected("kv_transfer_config.kv_connector", f"Unsupported connector type: {conn.name}")
        todo.extend(conn.children)


def connector_mode(mode: Mode, inp: PlanInput, notes: list[Note]) -> Mode:
    """`__post_init__`: a KV-transfer instance whose connector requires PIECEWISE turns full modes
    into PIECEWISE (vllm/config/vllm.py, every release 0.26-0.33), in vLLM's words."""
    conn = inp.kv_transfer
    if conn is None or conn.role is None or not mode.has_full() or not connector_requires_piecewise(conn):
        return mode
    notes.append(
        Note(
            "kv_connector_mode",
            f"KV connector {conn.name} requires PIECEWISE CUDA graph mode due to layerwise async "
            "operations that cannot be captured in CUDA graphs. "
            f"Overriding cudagraph_mode from {mode.value} to PIECEWISE.",
        )
    )
    return Mode.PIECEWISE


def runner_time_mode(
    decision: ModeDecision, inp: PlanInput, rules: VllmRules, runner: str, notes: list[Note]
) -> ModeDecision:
    """What the model runner does with the config-time mode before any graph exists: V2 turns
    CUDA graphs off under STOCK_TORCH_COMPILE (`_disable_cudagraphs_for_v2_stock_torch_compile`,
    0.32+); V1 under STOCK_TORCH_COMPILE compiles with `model.compile(fullgraph=True)` and returns
    from `load_model` before any CUDA-graph wrapper (gpu_model_runner.py, every release), so its
    dispatcher's keys are never captured."""
    mode, comp = decision.mode, decision.compilation
    if comp.mode != STOCK_TORCH_COMPILE or mode is Mode.NONE:
        return decision
    if runner == "v2" and rules.v2_stock_compile_no_graphs:
        notes.append(
            Note(
                "v2_stock_compile",
                "CUDA graphs are not supported with stock torch.compile in Model Runner V2. "
                f"Overriding cudagraph_mode {mode.value} to NONE.",
            )
        )
        return ModeDecision(Mode.NONE, decision.attention_splits, comp)
    if runner == "v1":
        notes.append(
            Note(
                "v1_stock_compile",
                f"compilation mode STOCK_TORCH_COMPILE on model runner V1: vLLM keeps cudagraph_mode "
                f"{mode.value} in its config, but `load_model` compiles the model with "
                "model.compile(fullgraph=True) and returns before wrapping it in a CUDA-graph wrapper "
                "(vllm/v1/worker/gpu_model_runner.py): no CUDA graph is captured, every batch runs "
                'eager (docs/planner.md, "Compilation off")',
            )
        )
        return ModeDecision(Mode.NONE, decision.attention_splits, comp)
    return decision


def deepep_high_throughput_off(inp: PlanInput, decision: ModeDecision, notes: list[Note]) -> ModeDecision:
    """`CompilationConfig.set_splitting_ops_for_v1`'s last step (every release): DeepEP's
    high-throughput kernels with more than one DP rank of an MoE model (VllmConfig passes DP 1 for
    a dense model) turn CUDA graphs off. Only under VLLM_COMPILE (the method returns first
    otherwise), and after the capture sizes are set (they stay as computed)."""
    if (
        decision.mode is Mode.NONE
        # `if self.mode != CompilationMode.VLLM_COMPILE: return` comes first: -O0, mode none,
        # TORCH_COMPILE_DISABLE or breakable graphs keep the mode (0.30+: FULL_DECODE_ONLY)
        or decision.compilation.mode != VLLM_COMPILE
        or (inp.all2all_backend or DEFAULT_ALL2ALL_BACKEND) != "deepep_high_throughput"
        or inp.data_parallel_size <= 1
        or not inp.model.is_moe
    ):
        return decision
    notes.append(
        Note(
            "deepep_high_throughput",
            "DeepEP: Disabling CUDA Graphs since DeepEP high-throughput kernels are optimized for "
            "prefill and are incompatible with CUDA Graphs. In order to use CUDA Graphs for "
            "decode-optimized workloads, use --all2all-backend with another option, such as "
            "deepep_low_latency, nixl_ep, or allgather_reducescatter.",
        )
    )
    return ModeDecision(Mode.NONE, decision.attention_splits, decision.compilation)


@dataclass(frozen=True)
class Attention:
    """The attention backend and its support level."""

    backend: str
    support: CGSupport


def attention(inp: PlanInput, rules: VllmRules) -> Attention:
    """Backend and support level: the user's override, else the platform default."""
    if inp.attention_backend is not None:
        m = inp.model
        refusal = backend_refusal(
            inp.attention_backend,
            inp.platform,
            m.head_dim,
            m.dtype,
            m.use_mla,
            rules.version,
            dcp=inp.decode_context_parallel_size > 1,
        )
        if refusal is not None:
            raise Rejected("cgplan.attention_backend", refusal)
    backend = inp.attention_backend or default_backend(inp.platform, inp.model.use_mla)
    support = inp.attention_cudagraph_support
    if support is None:
        support = cudagraph_support(backend, inp.platform, inp.model.head_dim, rules)
    return Attention(backend, support)


def _unsupported(mode: Mode, attn: Attention) -> str:
    return (
        f"CUDAGraphMode.{mode.value} is not supported with {attn.backend} backend "
        f"(support: {attn.support.name})"
    )


def resolve_mode(decision: ModeDecision, attn: Attention, query_len: int, notes: list[Note]) -> Mode:
    """The attention downgrade of `CompilationConfig.resolve_cudagraph_mode_and_sizes`."""
    mode = decision.mode
    if mode is Mode.NONE:
        return mode
    support = attn.support
    head = (
        f"CUDAGraphMode.{mode.value} is not supported with {attn.backend} backend (support: {support.name})"
    )
    if mode.mixed_mode() is Mode.FULL and support is not CGSupport.ALWAYS:
        if support is CGSupport.NEVER:
            raise Rejected(
                "compilation_config.cudagraph_mode",
                f"{head}; please try cudagraph_mode=PIECEWISE, and make sure compilation "
                "mode is VLLM_COMPILE",
            )
        mode = Mode.FULL_AND_PIECEWISE if decision.attention_splits else Mode.FULL_DECODE_ONLY
        notes.append(Note("mode_downgrade", f"{head}; setting cudagraph_mode={mode.value}"))
    if mode.decode_mode() is Mode.FULL and support is CGSupport.NEVER:
        head = _unsupported(mode, attn)
        if decision.attention_splits:
            mode = Mode.PIECEWISE
            why = "because attention is compiled piecewise"
        else:
            mode = Mode.NONE
            why = "because attention is not compiled piecewise"
        notes.append(Note("mode_downgrade", f"{head}; setting cudagraph_mode={mode.value} {why}"))
    if mode.decode_mode() is Mode.FULL and query_len > 1 and support < CGSupport.UNIFORM_BATCH:
        head = (
            f"CUDAGraphMode.{mode.value} is not supported with spec-decode for attention "
            f"backend {attn.backend} (support: {support.name})"
        )
        mode = Mode.PIECEWISE if decision.attention_splits else Mode.NONE
        notes.append(Note("mode_downgrade", f"{head}; setting cudagraph_mode={mode.value}"))
    # vLLM's last check (has_full() under NEVER: refused) is not mirrored: under NEVER a FULL mixed
    # mode was refused above and a FULL decode mode made PIECEWISE or NONE, so no FULL mode is left
    return mode


def v1_round_sizes(
    sizes: tuple[int, ...],
    max_size: int,
    query_len: int,
    tp: int,
    sp_on: bool,
    notes: list[Note],
    *,
    sp_pass: bool,
) -> tuple[tuple[int, ...], int]:
    """V1's `adjust_cudagraph_sizes_for_spec_decode`: sizes rounded up to multiples of q.

    `sp_pass`: the release has the sequence-parallelism pass (`VllmRules.sequence_parallel`), whose
    multiple of TP its refusal names. vLLM's early return (no sizes, or a multiple of 1) is not
    mirrored: the plan rounds only where query_len > 1 (so the multiple is too) and the mode has a
    FULL decode half, whose ladder holds at least one size (an empty one is refused with graphs on)."""
    multiple = query_len
    if sp_on:  # (at TP 1 the multiple stays query_len)
        multiple = max(query_len, tp)
        if multiple % query_len or multiple % tp:
            raise Rejected(
                "speculative_config.num_speculative_tokens",
                f"Can't determine cudagraph shapes that are both a multiple of {query_len} "
                f"(num_speculative_tokens + 1) required by spec-decode and {tp} "
                "(tensor_parallel_size) required by sequence parallelism please adjust "
                "num_speculative_tokens or disable sequence parallelism",
            )
    rounded = sorted({round_up(x, multiple) for x in sizes if round_up(x, multiple) <= max_size})
    if not rounded and multiple <= max_size:
        rounded = [multiple]
    if not rounded:
        raise Rejected(
            "compilation_config.cudagraph_capture_sizes",
            f"No valid cudagraph sizes after rounding to multiple of {multiple} "
            # vllm/config/compilation.py, adjust_cudagraph_sizes_for_spec_decode: 0.26.0-0.31.0
            # name both multiples, 0.32.0+ (no SP pass) only the spec-decode one
            + (
                "(num_speculative_tokens + 1 or tp if sequence parallelism is enabled)"
                if sp_pass
                else "(num_speculative_tokens + 1)"
            )
            + f" please adjust num_speculative_tokens "
            f"({query_len - 1}) or max_cudagraph_capture_size ({max_size}) or "
            f"cudagraph_capture_sizes ({list(sizes)})",
        )
    if tuple(rounded) != sizes:
        notes.append(
            Note(
                "v1_rounding",
                f"Model runner V1 rounds capture sizes up to multiples of {multiple}: "
                f"{len(sizes)} sizes → {len(rounded)}, max {max_size} → {rounded[-1]}",
            )
        )
    return tuple(rounded), rounded[-1]
