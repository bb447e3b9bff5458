"""Every `vllm serve` flag, per release, and what cgplan does with it: reads it, lists it as
neutral, or plans without it and says so (moved here from cgplan/vllm_args.py, which parses a
command line with them).

Keyed by the release list of `releases`: an entry only where vLLM added, removed or changed a flag,
from its `since` release on (`since_entry`). Each flag is spelled as vLLM's EngineArgs /
FrontendArgs field (`dest`), its long option derived the way vLLM's argparse derives it. The whole
parser of each release is recorded from vLLM's own code (tests/data/oracle-serve-flags/, by
scripts/oracle/serve_flags.py); tests/core/vllm/test_serve_flags_recorded.py holds this table to it: every
flag of every release is here, with vLLM's option strings and arity.

How a flag was classified (from vllm/engine/arg_utils.py and the vllm/config/ classes it fills):

* READ: cgplan models it; it changes the plan.
* IGNORED (neutral): it cannot change anything cgplan predicts (capture sizes and modes, dispatch,
  graph count, the capture phase's memory and time, the KV cache's bytes per token): the HTTP front
  end, logging and metrics, the tokenizer and chat rendering, where weights load from, hosts,
  ports and timeouts, request admission and order, the KV cache's total size (sized from what is
  left after capture). Planned, and listed as ignored.
* UNMODELLED: it can change one of those and cgplan does not model it (`affects` says which).
  Planned as if it were at vLLM's default, with a note naming it; `--strict` refuses it. At its
  default (`default`, or a value in `also_noop`) it changes nothing and is listed as ignored. When
  in doubt a flag is UNMODELLED, never IGNORED.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, replace

from cgplan.core.vllm.releases import closest_release, since_entry

READ, IGNORED, UNMODELLED = "read", "ignored", "unmodelled"
"""What cgplan does with a flag: reads it; accepts and lists it as neutral; plans without it, with a
note (refused under --strict) unless it is at vLLM's default."""

CAPTURE, MEMORY, KV, MODEL = "capture", "memory", "kv_cache", "model"
"""What an unmodelled flag can change (`ServeFlag.affects`)."""
AFFECTS: dict[str, str] = {
    CAPTURE: "what vLLM captures or how batches dispatch",
    MEMORY: "the capture phase's memory and time",
    KV: "the KV cache's bytes per token",
    MODEL: "the model's shape (cgplan reads config.json as it is)",
}
"""Each `affects` word in a sentence: how notes and --strict name it."""


@dataclass(frozen=True)
class ServeFlag:
    """One vllm serve flag: how many values it takes and what cgplan does with it."""

    dest: str
    names: tuple[str, ...]  # positive option strings, canonical long name first
    arity: str  # one | many | optional | none (store_true) | bool (with --no-/inverse forms)
    role: str  # READ | IGNORED | UNMODELLED
    default: str | None = None  # unmodelled: vLLM's default value (str() of it), a no-op
    negatives: tuple[str, ...] = ()
    affects: tuple[str, ...] = ()  # unmodelled: what it can change (CAPTURE, MEMORY, KV, MODEL)
    also_noop: tuple[str, ...] = ()  # unmodelled: values besides `default` that change nothing

    def at_default(self, positive: bool, raw: object) -> bool:
        """Whether the value given (`positive`: a boolean's positive form; `raw`: the value text)
        is one that changes nothing (an unmodelled flag's `default` or `also_noop`)."""
        if self.arity in ("bool", "none"):
            given = "True" if positive else "False"
        elif raw is None or isinstance(raw, list):
            return False
        else:
            given = str(raw).strip()
            if self.default is None and given in ("None", ""):
                return True  # vLLM's optional_type: `--x None` is the default, None
        return given == self.default or given in self.also_noop


def serve_flag(
    dest: str,
    *aliases: str,
    arity: str = "one",
    role: str,
    default: str | None = None,
    affects: tuple[str, ...] = (),
    also_noop: tuple[str, ...] = (),
) -> ServeFlag:
    """The flag of EngineArgs field `dest`: `--dest-with-dashes` plus `aliases`. A boolean's negative
    forms depend on the release: `serve_flags` adds them (`negative_forms`)."""
    return ServeFlag(
        dest, ("--" + dest.replace("_", "-"), *aliases), arity, role, default, (), affects, also_noop
    )


def negative_forms(flag: ServeFlag, *, inverse_forms: bool) -> tuple[str, ...]:
    """The option strings that set a boolean flag false: `--no-x` (argparse.BooleanOptionalAction),
    and with `inverse_forms` (vLLM's EnableDisableAction, 0.33+) `--disable-x` for `--enable-x` and
    the reverse (vllm/utils/argparse_utils.py; `--no-enable-x` stays accepted, hidden from help)."""
    if flag.arity != "bool":
        return ()
    long = flag.names[0]
    negatives: tuple[str, ...] = ("--no-" + long[2:],)
    if inverse_forms:
        for prefix, inverse in (("--enable-", "--disable-"), ("--disable-", "--enable-")):
            if long.startswith(prefix):
                negatives += (inverse + long.removeprefix(prefix),)
    return negatives


@dataclass(frozen=True)
class ServeFlags:
    """The flags of the releases from `since` on (until the next entry's `since`)."""

    since: str
    flags: tuple[ServeFlag, ...]
    inverse_forms: bool
    """Booleans named enable_x/disable_x also take the other word (EnableDisableAction)."""
    config_false_forms: bool = True
    """`key: false` in a --config file becomes `--no-key` where the parser has that option string
    (0.28+); before, a false boolean was dropped whatever the flag (`load_config_file`)."""

    def names(self, role: str) -> tuple[str, ...]:
        """The canonical long names of the flags with `role`."""
        return tuple(f.names[0] for f in self.flags if f.role == role)


def serve_flags(
    since: str, flags: Iterable[ServeFlag], *, inverse_forms: bool, config_false_forms: bool = True
) -> ServeFlags:
    """A table entry, each boolean given the negative forms of its release."""
    return ServeFlags(
        since,
        tuple(replace(f, negatives=negative_forms(f, inverse_forms=inverse_forms)) for f in flags),
        inverse_forms,
        config_false_forms,
    )


def _with_aliases(flags: Iterable[ServeFlag], dest: str, *aliases: str) -> tuple[ServeFlag, ...]:
    return tuple(replace(f, names=(*f.names, *aliases)) if f.dest == dest else f for f in flags)


def _changed(
    before: ServeFlags, added: Iterable[ServeFlag] = (), removed: Iterable[str] = ()
) -> tuple[ServeFlag, ...]:
    """`before`'s flags less the `removed` dests, plus `added`."""
    gone = set(removed)
    return (*(f for f in before.flags if f.dest not in gone), *added)


# vLLM 0.26.0's `vllm serve` parser (vllm/engine/arg_utils.py EngineArgs.add_cli_args,
# vllm/entrypoints/openai/cli_args.py), every flag of it.
_V0_26 = serve_flags(
    "0.26.0",
    (
        # what cgplan reads
        serve_flag("model", role=READ),
        serve_flag("hf_config_path", role=READ),
        serve_flag("max_model_len", role=READ),
        serve_flag("max_num_seqs", role=READ),
        serve_flag("max_num_batched_tokens", role=READ),
        serve_flag("tensor_parallel_size", "-tp", role=READ),
        serve_flag("enforce_eager", arity="bool", role=READ),
        serve_flag("performance_mode", role=READ),
        serve_flag("optimization_level", role=READ),
        serve_flag("speculative_config", "-sc", role=READ),
        serve_flag("spec_method", role=READ),
        serve_flag("spec_model", role=READ),
        serve_flag("spec_tokens", role=READ),
        serve_flag("compilation_config", "-cc", role=READ),
        serve_flag("cudagraph_capture_sizes", arity="many", role=READ),
        serve_flag("max_cudagraph_capture_size", role=READ),
        serve_flag("attention_backend", role=READ),
        serve_flag("attention_config", "-ac", role=READ),
        serve_flag("runner", role=READ),  # issue 27: generate or pooling (auto: from the model)
        serve_flag("kv_transfer_config", role=READ),  # issue 27: connectors that require PIECEWISE
        serve_flag("pipeline_parallel_size", "-pp", role=READ),
        serve_flag("data_parallel_size", "-dp", role=READ),
        serve_flag("decode_context_parallel_size", "-dcp", role=READ),
        serve_flag("enable_expert_parallel", "-ep", arity="bool", role=READ),
        serve_flag("enable_lora", arity="bool", role=READ),
        serve_flag("max_loras", role=READ),
        serve_flag("specialize_active_lora", arity="bool", role=READ),
        serve_flag("enable_dbo", arity="bool", role=READ),
        serve_flag("ubatch_size", role=READ),
        serve_flag("dbo_decode_token_threshold", role=READ),
        serve_flag("dbo_prefill_token_threshold", role=READ),
        serve_flag("async_scheduling", arity="bool", role=READ),
        serve_flag("all2all_backend", role=READ),
        serve_flag("kv_cache_dtype", role=READ),  # issue 29: KV bytes per token, the domain
        # neutral: nothing cgplan predicts depends on them (the module docstring says what that is)
        serve_flag("aggregate_engine_logging", arity="none", role=IGNORED),
        serve_flag("allow_credentials", arity="bool", role=IGNORED),
        serve_flag("allow_deprecated_quantization", arity="bool", role=IGNORED),
        serve_flag("allowed_headers", role=IGNORED),
        serve_flag("allowed_local_media_path", role=IGNORED),
        serve_flag("allowed_media_domains", arity="many", role=IGNORED),
        serve_flag("allowed_methods", role=IGNORED),
        serve_flag("allowed_origins", role=IGNORED),
        serve_flag("api_key", arity="many", role=IGNORED),
        serve_flag("api_server_count", "-asc", role=IGNORED),
        serve_flag("chat_template", role=IGNORED),
        serve_flag("chat_template_content_format", role=IGNORED),
        serve_flag("collect_detailed_traces", arity="many", role=IGNORED),
        serve_flag("cpu_distributed_timeout_seconds", role=IGNORED),
        serve_flag("cudagraph_metrics", arity="bool", role=IGNORED),
        serve_flag("data_parallel_address", "-dpa", role=IGNORED),
        serve_flag("data_parallel_backend", "-dpb", role=IGNORED),
        serve_flag("data_parallel_external_lb", "-dpe", arity="bool", role=IGNORED),
        serve_flag("data_parallel_hybrid_lb", "-dph", arity="bool", role=IGNORED),
        serve_flag("data_parallel_multi_port_external_lb", "-dpm", arity="none", role=IGNORED),
        serve_flag("data_parallel_rank", "-dpn", role=IGNORED),
        serve_flag("data_parallel_rpc_port", "-dpp", role=IGNORED),
        serve_flag("data_parallel_size_local", "-dpl", role=IGNORED),
        serve_flag("data_parallel_start_rank", "-dpr", role=IGNORED),
        serve_flag("data_parallel_supervisor_port", role=IGNORED),
        serve_flag("default_chat_template_kwargs", role=IGNORED),
        serve_flag("default_mm_loras", role=IGNORED),
        serve_flag("device_ids", role=IGNORED),
        serve_flag("disable_access_log_for_endpoints", role=IGNORED),
        serve_flag("disable_cascade_attn", arity="bool", role=IGNORED),
        serve_flag("disable_fastapi_docs", arity="bool", role=IGNORED),
        serve_flag("disable_log_stats", arity="none", role=IGNORED),
        serve_flag("disable_uvicorn_access_log", arity="bool", role=IGNORED),
        serve_flag("distributed_executor_backend", role=IGNORED),
        serve_flag("distributed_timeout_seconds", role=IGNORED),
        serve_flag("download_dir", role=IGNORED),
        serve_flag("dp_supervisor_probe_failure_threshold", role=IGNORED),
        serve_flag("dp_supervisor_probe_interval_s", role=IGNORED),
        serve_flag("dp_supervisor_probe_timeout_s", role=IGNORED),
        serve_flag("enable_auto_tool_choice", arity="bool", role=IGNORED),
        serve_flag("enable_flash_late_interaction", arity="bool", role=IGNORED),
        serve_flag("enable_force_include_usage", arity="bool", role=IGNORED),
        serve_flag("enable_log_deltas", arity="bool", role=IGNORED),
        serve_flag("enable_log_outputs", arity="bool", role=IGNORED),
        serve_flag("enable_log_requests", arity="bool", role=IGNORED),
        serve_flag("enable_logging_iteration_details", arity="bool", role=IGNORED),
        serve_flag("enable_mfu_metrics", arity="bool", role=IGNORED),
        serve_flag("enable_offline_docs", arity="bool", role=IGNORED),
        serve_flag("enable_per_request_metrics", arity="bool", role=IGNORED),
        serve_flag("enable_prefix_caching", arity="bool", role=IGNORED),
        serve_flag("enable_prompt_tokens_details", arity="bool", role=IGNORED),
        serve_flag("enable_request_id_headers", arity="bool", role=IGNORED),
        serve_flag("enable_server_load_tracking", arity="bool", role=IGNORED),
        serve_flag("enable_ssl_refresh", arity="bool", role=IGNORED),
        serve_flag("enable_tokenizer_info_endpoint", arity="bool", role=IGNORED),
        serve_flag("exclude_tools_when_tool_choice_none", arity="bool", role=IGNORED),
        serve_flag("expert_placement_strategy", role=IGNORED),
        serve_flag("fail_on_environ_validation", arity="bool", role=IGNORED),
        serve_flag("fingerprint_mode", role=IGNORED),
        serve_flag("fingerprint_value", role=IGNORED),
        serve_flag("generation_config", role=IGNORED),
        serve_flag("gpu_memory_utilization", role=IGNORED),
        serve_flag("grpc", arity="none", role=IGNORED),
        serve_flag("h11_max_header_count", role=IGNORED),
        serve_flag("h11_max_incomplete_event_size", role=IGNORED),
        serve_flag("headless", arity="none", role=IGNORED),
        serve_flag("hf_token", arity="optional", role=IGNORED),
        serve_flag("host", role=IGNORED),
        serve_flag("ignore_patterns", arity="many", role=IGNORED),
        serve_flag("interleave_mm_strings", arity="bool", role=IGNORED),
        serve_flag("io_processor_plugin", role=IGNORED),
        serve_flag("jit_monitor_mode", role=IGNORED),
        serve_flag("jit_monitor_verbose", arity="bool", role=IGNORED),
        serve_flag("kv_cache_memory_bytes", role=IGNORED),
        serve_flag("kv_cache_metrics", arity="bool", role=IGNORED),
        serve_flag("kv_cache_metrics_sample", role=IGNORED),
        serve_flag("kv_events_config", role=IGNORED),
        serve_flag("log_config_file", role=IGNORED),
        serve_flag("log_error_stack", arity="bool", role=IGNORED),
        serve_flag("logits_processors", arity="many", role=IGNORED),
        serve_flag("lora_modules", arity="many", role=IGNORED),
        serve_flag("master_addr", role=IGNORED),
        serve_flag("master_port", role=IGNORED),
        serve_flag("max_cpu_loras", role=IGNORED),
        serve_flag("max_log_len", role=IGNORED),
        serve_flag("max_logprobs", role=IGNORED),
        serve_flag("max_parallel_loading_workers", role=IGNORED),
        serve_flag("media_io_kwargs", role=IGNORED),
        serve_flag("middleware", role=IGNORED),
        serve_flag("mm_processor_cache_gb", role=IGNORED),
        serve_flag("mm_processor_cache_type", role=IGNORED),
        serve_flag("mm_processor_kwargs", role=IGNORED),
        serve_flag("mm_shm_cache_max_object_size_mb", role=IGNORED),
        serve_flag("model_loader_extra_config", role=IGNORED),
        serve_flag("node_rank", "-r", role=IGNORED),
        serve_flag("num_gpu_blocks_override", role=IGNORED),
        serve_flag("numa_bind", arity="bool", role=IGNORED),
        serve_flag("numa_bind_cpus", arity="many", role=IGNORED),
        serve_flag("numa_bind_nodes", arity="many", role=IGNORED),
        serve_flag("otlp_traces_endpoint", role=IGNORED),
        serve_flag("override_generation_config", role=IGNORED),
        serve_flag("port", role=IGNORED),
        serve_flag("prefill_schedule_interval", role=IGNORED),
        serve_flag("prefix_caching_hash_algo", role=IGNORED),
        serve_flag("pt_load_map_location", role=IGNORED),
        serve_flag("ray_workers_use_nsight", arity="bool", role=IGNORED),
        serve_flag("reasoning_config", role=IGNORED),
        serve_flag("reasoning_parser", role=IGNORED),
        serve_flag("reasoning_parser_plugin", role=IGNORED),
        serve_flag("renderer_num_workers", role=IGNORED),
        serve_flag("response_role", role=IGNORED),
        serve_flag("return_tokens_as_token_ids", arity="bool", role=IGNORED),
        serve_flag("root_path", role=IGNORED),
        serve_flag("safetensors_load_strategy", role=IGNORED),
        serve_flag("safetensors_prefetch_block_size", role=IGNORED),
        serve_flag("safetensors_prefetch_num_threads", role=IGNORED),
        serve_flag("scheduling_policy", role=IGNORED),
        serve_flag("seed", role=IGNORED),
        serve_flag("served_model_name", arity="many", role=IGNORED),
        serve_flag("show_hidden_metrics_for_version", role=IGNORED),
        serve_flag("shutdown_timeout", role=IGNORED),
        serve_flag("skip_tokenizer_init", arity="bool", role=IGNORED),
        serve_flag("ssl_ca_certs", role=IGNORED),
        serve_flag("ssl_cert_reqs", role=IGNORED),
        serve_flag("ssl_certfile", role=IGNORED),
        serve_flag("ssl_ciphers", role=IGNORED),
        serve_flag("ssl_keyfile", role=IGNORED),
        serve_flag("stream_interval", role=IGNORED),
        serve_flag("structured_outputs_config", role=IGNORED),
        serve_flag("tokenizer", role=IGNORED),
        serve_flag("tokenizer_mode", role=IGNORED),
        serve_flag("tokenizer_revision", role=IGNORED),
        serve_flag("tokens_only", arity="bool", role=IGNORED),
        serve_flag("tool_call_parser", role=IGNORED),
        serve_flag("tool_parser_plugin", role=IGNORED),
        serve_flag("tool_server", role=IGNORED),
        serve_flag("trust_remote_code", arity="bool", role=IGNORED),
        serve_flag("trust_request_chat_template", arity="bool", role=IGNORED),
        serve_flag("uds", role=IGNORED),
        serve_flag("use_tqdm_on_load", arity="bool", role=IGNORED),
        serve_flag("uvicorn_log_level", role=IGNORED),
        serve_flag("watermark", role=IGNORED),
        # can change what cgplan predicts (`affects`), not modelled: planned without, with a note
        serve_flag("additional_config", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("block_size", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag(
            "calculate_kv_scales", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE, KV)
        ),
        serve_flag("code_revision", role=UNMODELLED, affects=(MODEL,)),
        serve_flag("config_format", role=UNMODELLED, default="auto", affects=(MODEL,)),
        serve_flag("convert", role=UNMODELLED, default="auto", affects=(CAPTURE,)),
        serve_flag("cp_kv_cache_interleave_size", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("cpu_offload_gb", role=UNMODELLED, default="0", affects=(MEMORY,)),
        serve_flag("cpu_offload_params", arity="many", role=UNMODELLED, affects=(MEMORY,)),
        serve_flag("dcp_comm_backend", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("dcp_kv_cache_interleave_size", role=UNMODELLED, default="1", affects=(CAPTURE,)),
        serve_flag("diffusion_config", "-dc", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag(
            "disable_chunked_mm_input", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)
        ),
        serve_flag(
            "disable_custom_all_reduce", arity="bool", role=UNMODELLED, default="False", affects=(MEMORY,)
        ),
        serve_flag("disable_hybrid_kv_cache_manager", arity="bool", role=UNMODELLED, affects=(KV,)),
        serve_flag("disable_nccl_for_dp_synchronization", arity="bool", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag(
            "disable_sliding_window", arity="bool", role=UNMODELLED, default="False", affects=(MODEL, KV)
        ),
        serve_flag("dtype", role=READ),  # issue 29: the dtype the figures' domain and KV bytes use
        serve_flag("ec_transfer_config", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag(
            "enable_bf16x3_router_gemm", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)
        ),
        serve_flag(
            "enable_chunked_prefill", arity="bool", role=UNMODELLED, affects=(CAPTURE,), also_noop=("True",)
        ),
        serve_flag(
            "enable_cumem_allocator", arity="bool", role=UNMODELLED, default="False", affects=(MEMORY,)
        ),
        serve_flag("enable_elastic_ep", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)),
        serve_flag(
            "enable_ep_weight_filter", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)
        ),
        serve_flag("enable_eplb", arity="bool", role=UNMODELLED, default="False", affects=(MEMORY,)),
        serve_flag("enable_flashinfer_autotune", arity="bool", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag(
            "enable_layerwise_nvtx_tracing",
            arity="bool",
            role=UNMODELLED,
            default="False",
            affects=(CAPTURE,),
        ),
        serve_flag(
            "enable_mamba_cache_stochastic_rounding",
            arity="bool",
            role=UNMODELLED,
            default="False",
            affects=(CAPTURE,),
        ),
        serve_flag(
            "enable_mixed_moe_lora_format", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)
        ),
        serve_flag("enable_mm_embeds", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)),
        serve_flag(
            "enable_moe_shared_loras", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)
        ),
        serve_flag(
            "enable_prompt_embeds", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)
        ),
        serve_flag(
            "enable_return_routed_experts", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)
        ),
        serve_flag("enable_sleep_mode", arity="bool", role=UNMODELLED, default="False", affects=(MEMORY,)),
        serve_flag(
            "enable_tower_connector_lora", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)
        ),
        serve_flag("eplb_config", role=UNMODELLED, affects=(MEMORY,)),
        serve_flag("fully_sharded_loras", arity="bool", role=UNMODELLED, default="False", affects=(MEMORY,)),
        serve_flag("gdn_prefill_backend", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("hf_overrides", role=UNMODELLED, affects=(MODEL,)),
        serve_flag("ir_op_priority", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("kernel_config", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("kv_cache_dtype_skip_layers", arity="many", role=UNMODELLED, affects=(CAPTURE, KV)),
        serve_flag("kv_offloading_backend", role=UNMODELLED, default="native", affects=(CAPTURE,)),
        serve_flag("kv_offloading_size", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag(
            "kv_sharing_fast_prefill", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE, KV)
        ),
        serve_flag("language_model_only", arity="bool", role=UNMODELLED, default="False", affects=(MODEL,)),
        serve_flag("limit_mm_per_prompt", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("linear_backend", role=UNMODELLED, default="auto", affects=(CAPTURE,)),
        serve_flag("load_format", role=UNMODELLED, default="auto", affects=(CAPTURE, MEMORY)),
        serve_flag("logprobs_mode", role=UNMODELLED, default="raw_logprobs", affects=(CAPTURE,)),
        serve_flag("long_prefill_token_threshold", role=UNMODELLED, default="0", affects=(CAPTURE,)),
        serve_flag("lora_dtype", role=UNMODELLED, default="auto", affects=(MEMORY,)),
        serve_flag("lora_target_modules", arity="many", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("mamba_backend", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("mamba_block_size", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("mamba_cache_dtype", role=UNMODELLED, default="auto", affects=(KV,)),
        serve_flag("mamba_cache_mode", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("mamba_cache_philox_rounds", role=UNMODELLED, default="0", affects=(CAPTURE,)),
        serve_flag("mamba_ssm_cache_dtype", role=UNMODELLED, default="auto", affects=(KV,)),
        serve_flag("max_long_partial_prefills", role=UNMODELLED, default="1", affects=(CAPTURE,)),
        serve_flag("max_lora_rank", role=UNMODELLED, default="16", affects=(MEMORY,)),
        serve_flag("max_num_partial_prefills", role=UNMODELLED, default="1", affects=(CAPTURE,)),
        serve_flag("max_num_scheduled_tokens", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("mm_encoder_attn_backend", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("mm_encoder_attn_dtype", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("mm_encoder_fp8_scale_path", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("mm_encoder_fp8_scale_save_margin", role=UNMODELLED, default="1.5", affects=(CAPTURE,)),
        serve_flag("mm_encoder_fp8_scale_save_path", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("mm_encoder_only", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)),
        serve_flag("mm_encoder_tp_mode", role=UNMODELLED, default="weights", affects=(CAPTURE,)),
        serve_flag("mm_ipc_gpu_memory_gb", role=UNMODELLED, default="0", affects=(CAPTURE,)),
        serve_flag("mm_tensor_ipc", role=UNMODELLED, default="direct_rpc", affects=(CAPTURE,)),
        serve_flag("model_class_overrides", role=UNMODELLED, affects=(MODEL,)),
        serve_flag("model_impl", role=UNMODELLED, default="auto", affects=(MODEL,)),
        serve_flag("moe_backend", role=UNMODELLED, default="auto", affects=(CAPTURE,)),
        serve_flag("nnodes", "-n", role=UNMODELLED, default="1", affects=(MEMORY,)),
        serve_flag("offload_backend", role=UNMODELLED, default="auto", affects=(MEMORY,)),
        serve_flag("offload_group_size", role=UNMODELLED, default="0", affects=(MEMORY,)),
        serve_flag("offload_num_in_group", role=UNMODELLED, default="1", affects=(MEMORY,)),
        serve_flag("offload_params", arity="many", role=UNMODELLED, affects=(MEMORY,)),
        serve_flag("offload_prefetch_step", role=UNMODELLED, default="1", affects=(MEMORY,)),
        serve_flag("override_attention_dtype", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("pooler_config", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("prefill_context_parallel_size", "-pcp", role=UNMODELLED, default="1", affects=(CAPTURE,)),
        serve_flag("prefix_match_unit", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("profiler_config", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("quantization", "-q", role=READ),  # issue 29: quantised weights leave the domain
        serve_flag("quantization_config", role=UNMODELLED, affects=(CAPTURE, MEMORY, KV)),
        serve_flag("revision", role=UNMODELLED, affects=(MODEL,)),
        serve_flag("scheduler_cls", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag(
            "scheduler_reserve_full_isl", arity="bool", role=UNMODELLED, default="True", affects=(CAPTURE,)
        ),
        serve_flag("skip_mm_profiling", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)),
        serve_flag("use_fp64_gumbel", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)),
        serve_flag("video_pruning_rate", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("weight_transfer_config", role=UNMODELLED, affects=(CAPTURE,)),
        serve_flag("worker_cls", role=UNMODELLED, default="auto", affects=(CAPTURE,)),
        serve_flag("worker_extension_cls", role=UNMODELLED, default="", affects=(CAPTURE,)),
    ),
    inverse_forms=False,
    config_false_forms=False,
)

# 0.27.0 (0.27.1's parser is the same, recorded): fault tolerance, the Cohere front end, ReplaySSM,
# KDA prefill; the partial-prefill limits gone.
_V0_27 = serve_flags(
    "0.27.0",
    _changed(
        _V0_26,
        (
            serve_flag("cohere_format", role=IGNORED),
            serve_flag("cohere_is_reasoning_model", arity="bool", role=IGNORED),
            serve_flag("enable_fault_tolerance", arity="bool", role=IGNORED),
            serve_flag("fault_tolerance_config", role=IGNORED),
            serve_flag("mm_hasher_algorithm", role=IGNORED),
            serve_flag("kda_prefill_backend", role=UNMODELLED, affects=(CAPTURE,)),
            serve_flag("mamba_ssu_algorithm", role=UNMODELLED, affects=(CAPTURE,)),
            serve_flag("replayssm_buffer_len", role=UNMODELLED, default="16", affects=(CAPTURE,)),
            serve_flag("use_replayssm", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)),
            serve_flag("video_pruning_method", role=UNMODELLED, default="evs", affects=(CAPTURE,)),
        ),
        ("max_long_partial_prefills", "max_num_partial_prefills"),
    ),
    inverse_forms=False,
    config_false_forms=False,
)

# 0.28.0: `key: false` in a --config file becomes --no-key (load_config_file); the encoder-cache
# manager, sampling masks; --calculate-kv-scales and --override-attention-dtype gone.
_V0_28 = serve_flags(
    "0.28.0",
    _changed(
        _V0_27,
        (
            serve_flag("mm_device_do_normalize", arity="bool", role=IGNORED),
            serve_flag("mm_processor_device", role=IGNORED),
            serve_flag("ec_manager_config", role=UNMODELLED, affects=(CAPTURE,)),
            serve_flag(
                "return_sampling_mask", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)
            ),
        ),
        ("calculate_kv_scales", "override_attention_dtype"),
    ),
    inverse_forms=False,
)

# 0.29.0: request queue limits, DCP query replication, batch-sharded sampling, trace replay.
_V0_29 = serve_flags(
    "0.29.0",
    _changed(
        _V0_28,
        (
            serve_flag("max_num_queued_reqs", role=IGNORED),
            serve_flag("max_num_queued_tokens", role=IGNORED),
            serve_flag("per_request_spec_decode_metrics", role=IGNORED),
            serve_flag("prefix_cache_retention_interval", role=IGNORED),
            serve_flag("sse_keep_alive_interval", role=IGNORED),
            serve_flag("dcp_q_replicate", arity="bool", role=UNMODELLED, affects=(CAPTURE,)),
            serve_flag("enable_batch_sharded_sampling", arity="bool", role=UNMODELLED, affects=(CAPTURE,)),
            serve_flag(
                "enable_trace_replay", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)
            ),
        ),
        (),
    ),
    inverse_forms=False,
)

# 0.30.0: elastic EP's DP bound, Engram, watermarking, KDA decode; --enable-bf16x3-router-gemm gone.
_V0_30 = serve_flags(
    "0.30.0",
    _changed(
        _V0_29,
        (
            serve_flag("dp_sync_interval", role=IGNORED),
            serve_flag("enable_nccl_comm_suspend", arity="bool", role=IGNORED),
            serve_flag("enable_scale_out", arity="bool", role=IGNORED),
            serve_flag("elastic_ep_max_dp_size", role=UNMODELLED, affects=(CAPTURE,)),
            serve_flag(
                "enable_mamba_fine_grained_prefix_cache",
                arity="bool",
                role=UNMODELLED,
                default="False",
                affects=(CAPTURE,),
            ),
            serve_flag("engram_config", role=UNMODELLED, affects=(CAPTURE,)),
            serve_flag("kda_decode_backend", role=UNMODELLED, affects=(CAPTURE,)),
            serve_flag("sparse_indexer_topk_backend", role=UNMODELLED, default="auto", affects=(CAPTURE,)),
            serve_flag("watermark_config", role=UNMODELLED, affects=(CAPTURE,)),
        ),
        ("enable_bf16x3_router_gemm",),
    ),
    inverse_forms=False,
)

# 0.31.0: --device-memory-utilization (an alias of --gpu-memory-utilization), --log-level and
# --logging-config, max active sequences; --enable-mamba-fine-grained-prefix-cache gone.
_V0_31 = serve_flags(
    "0.31.0",
    _with_aliases(
        _changed(
            _V0_30,
            (
                serve_flag("anthropic_disabled_thinking_effort", role=IGNORED),
                serve_flag("log_level", role=IGNORED),
                serve_flag("logging_config", role=IGNORED),
                serve_flag("sleep_preserve_parameter_names", arity="many", role=IGNORED),
                serve_flag("tool_strict_level", role=IGNORED),
                serve_flag("trust_request_mm_kwargs", arity="bool", role=IGNORED),
                serve_flag("aux_output_config", role=UNMODELLED, affects=(CAPTURE,)),
                serve_flag(
                    "enable_mamba_shared_prefix_checkpoint",
                    arity="bool",
                    role=UNMODELLED,
                    default="False",
                    affects=(CAPTURE,),
                ),
                serve_flag(
                    "long_prefill_token_threshold_adaptive",
                    arity="bool",
                    role=UNMODELLED,
                    default="False",
                    affects=(CAPTURE,),
                ),
                serve_flag("max_lora_cls_labels", role=UNMODELLED, affects=(CAPTURE,)),
                serve_flag("max_num_active_seqs", role=UNMODELLED, affects=(CAPTURE,)),
                serve_flag(
                    "swa_bounded_replay", arity="bool", role=UNMODELLED, default="True", affects=(CAPTURE,)
                ),
            ),
            ("enable_mamba_fine_grained_prefix_cache",),
        ),
        "gpu_memory_utilization",
        "--device-memory-utilization",
    ),
    inverse_forms=False,
)

# 0.32.0: gRPC port, head-parallel SP, the shared-memory tensor arena, cudagraph offload in sleep.
_V0_32 = serve_flags(
    "0.32.0",
    _changed(
        _V0_31,
        (
            serve_flag("custom_histogram_buckets", role=IGNORED),
            serve_flag("enable_shm_tensor_arena", arity="bool", role=IGNORED),
            serve_flag("grpc_port", role=IGNORED),
            serve_flag("enable_hc_sp", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)),
            serve_flag(
                "sleep_mode_offload_cudagraph",
                arity="bool",
                role=UNMODELLED,
                default="False",
                affects=(MEMORY,),
            ),
        ),
        (),
    ),
    inverse_forms=False,
)

# 0.33.0: booleans are EnableDisableAction: --disable-x for --enable-x (and the reverse).
_V0_33 = serve_flags(
    "0.33.0",
    _changed(
        _V0_32,
        (
            serve_flag("reasoning_effort_map", role=IGNORED),
            serve_flag("watchdog_config", role=IGNORED),
            serve_flag("monokernel", arity="bool", role=UNMODELLED, default="False", affects=(CAPTURE,)),
            serve_flag("sleep_mode_backend", role=UNMODELLED, default="cumem", affects=(MEMORY,)),
        ),
        (),
    ),
    inverse_forms=True,
)

SERVE_FLAGS: tuple[ServeFlags, ...] = (_V0_26, _V0_27, _V0_28, _V0_29, _V0_30, _V0_31, _V0_32, _V0_33)
"""Oldest first; a release uses the last entry whose `since` is not newer than it."""

SPECIAL_DESTS = ("help", "config", "model_tag")
"""The parser's other actions: `--help` (prints and exits: refused, nothing to plan), `--config FILE`
(read by `FlexibleArgumentParser` before argparse) and the MODEL positional."""


@functools.cache
def serve_flags_for(version: str | None) -> ServeFlags:
    """The `SERVE_FLAGS` entry for `version` (`closest_release`: the newest one when None)."""
    return since_entry(SERVE_FLAGS, closest_release(version))


def unmodelled_problem(flag: ServeFlag) -> str:
    """What an unmodelled flag can change, in words: `changes X and Y, which cgplan does not model`."""
    parts = [AFFECTS[a] for a in flag.affects] or [AFFECTS[CAPTURE]]
    said = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"can change {said}, which cgplan does not model"
