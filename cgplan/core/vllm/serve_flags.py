"""The `vllm serve` flags cgplan knows, per release: read, capture-neutral or refused (moved here
from cgplan/vllm_args.py, which parses a command line with them).

Keyed by the release list of `releases`: an entry only where vLLM added, removed or changed a flag,
from its `since` release on (`since_entry`). Each flag is spelled as vLLM's EngineArgs /
FrontendArgs field (`dest`), its long option derived the way vLLM's argparse derives it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, replace

from cgplan.core.vllm.releases import closest_release, since_entry

READ, IGNORED, UNMODELLED = "read", "ignored", "unmodelled"
"""What cgplan does with a flag: reads it; accepts and lists it as capture-neutral; refuses it unless at
vLLM's default (it changes capture in a way cgplan does not model yet)."""


@dataclass(frozen=True)
class ServeFlag:
    """One vllm serve flag: how many values it takes and what cgplan does with it."""

    dest: str
    names: tuple[str, ...]  # positive option strings, canonical long name first
    arity: str  # one | many | optional | none (store_true) | bool (with --no-/inverse forms)
    role: str  # READ | IGNORED | UNMODELLED
    default: str | None = None  # unmodelled: vLLM's default value, accepted as a no-op
    negatives: tuple[str, ...] = ()


def serve_flag(
    dest: str, *aliases: str, arity: str = "one", role: str, default: str | None = None
) -> ServeFlag:
    """The flag of EngineArgs field `dest`: `--dest-with-dashes` plus `aliases`. A boolean's negative
    forms depend on the release: `serve_flags` adds them (`negative_forms`)."""
    return ServeFlag(dest, ("--" + dest.replace("_", "-"), *aliases), arity, role, default)


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

    def names(self, role: str) -> tuple[str, ...]:
        """The canonical long names of the flags with `role`."""
        return tuple(f.names[0] for f in self.flags if f.role == role)


def serve_flags(since: str, flags: Iterable[ServeFlag], *, inverse_forms: bool) -> ServeFlags:
    """A table entry, each boolean given the negative forms of its release."""
    return ServeFlags(
        since,
        tuple(replace(f, negatives=negative_forms(f, inverse_forms=inverse_forms)) for f in flags),
        inverse_forms,
    )


def _with_aliases(flags: Iterable[ServeFlag], dest: str, *aliases: str) -> tuple[ServeFlag, ...]:
    return tuple(replace(f, names=(*f.names, *aliases)) if f.dest == dest else f for f in flags)


# vLLM 0.26.0's EngineArgs / FrontendArgs (vllm/engine/arg_utils.py, vllm/entrypoints/openai/cli_args.py).
# Each release's accepted option strings are recorded from vLLM's own parser by
# scripts/oracle/serve_flags.py (tests/data/oracle-serve-flags/, make golden) and held to this table.
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
        # parallelism, LoRA, microbatching (issue 16)
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
        # capture-neutral: the keys cgplan.io.config ignores in a YAML, plus front-end (HTTP server) flags
        serve_flag("host", role=IGNORED),
        serve_flag("port", role=IGNORED),
        serve_flag("uds", role=IGNORED),
        serve_flag("served_model_name", arity="many", role=IGNORED),
        serve_flag("dtype", role=IGNORED),
        serve_flag("gpu_memory_utilization", role=IGNORED),
        serve_flag("kv_cache_dtype", role=IGNORED),
        serve_flag("enable_prefix_caching", arity="bool", role=IGNORED),
        serve_flag("trust_remote_code", arity="bool", role=IGNORED),
        serve_flag("tokenizer", role=IGNORED),
        serve_flag("tokenizer_mode", role=IGNORED),
        serve_flag("tokenizer_revision", role=IGNORED),
        serve_flag("load_format", role=IGNORED),
        serve_flag("seed", role=IGNORED),
        serve_flag("block_size", role=IGNORED),
        serve_flag("disable_log_stats", arity="none", role=IGNORED),
        serve_flag("enable_log_requests", arity="bool", role=IGNORED),
        serve_flag("enable_chunked_prefill", arity="bool", role=IGNORED),
        serve_flag("api_key", arity="many", role=IGNORED),
        serve_flag("uvicorn_log_level", role=IGNORED),
        serve_flag("download_dir", role=IGNORED),
        serve_flag("revision", role=IGNORED),
        serve_flag("code_revision", role=IGNORED),
        serve_flag("hf_token", arity="optional", role=IGNORED),
        serve_flag("max_logprobs", role=IGNORED),
        serve_flag("generation_config", role=IGNORED),
        serve_flag("chat_template", role=IGNORED),
        serve_flag("chat_template_content_format", role=IGNORED),
        serve_flag("response_role", role=IGNORED),
        serve_flag("enable_auto_tool_choice", arity="bool", role=IGNORED),
        serve_flag("tool_call_parser", role=IGNORED),
        serve_flag("tool_parser_plugin", role=IGNORED),
        serve_flag("reasoning_parser", role=IGNORED),
        serve_flag("quantization", "-q", role=IGNORED),
        serve_flag("skip_tokenizer_init", arity="bool", role=IGNORED),
        serve_flag("distributed_executor_backend", role=IGNORED),
        serve_flag("cudagraph_metrics", arity="bool", role=IGNORED),
        serve_flag("kv_transfer_config", role=READ),  # #27: connectors that require PIECEWISE
        serve_flag("api_server_count", "-asc", role=IGNORED),
        serve_flag("headless", arity="none", role=IGNORED),
        serve_flag("aggregate_engine_logging", arity="none", role=IGNORED),
        serve_flag("max_log_len", role=IGNORED),
        serve_flag("enable_log_outputs", arity="bool", role=IGNORED),
        serve_flag("disable_uvicorn_access_log", arity="bool", role=IGNORED),
        serve_flag("allow_credentials", arity="bool", role=IGNORED),
        serve_flag("allowed_origins", role=IGNORED),
        serve_flag("allowed_methods", role=IGNORED),
        serve_flag("allowed_headers", role=IGNORED),
        serve_flag("ssl_keyfile", role=IGNORED),
        serve_flag("ssl_certfile", role=IGNORED),
        serve_flag("ssl_ca_certs", role=IGNORED),
        serve_flag("ssl_cert_reqs", role=IGNORED),
        serve_flag("root_path", role=IGNORED),
        serve_flag("middleware", role=IGNORED),
        serve_flag("enable_request_id_headers", arity="bool", role=IGNORED),
        serve_flag("disable_fastapi_docs", arity="bool", role=IGNORED),
        serve_flag("enable_prompt_tokens_details", arity="bool", role=IGNORED),
        serve_flag("enable_server_load_tracking", arity="bool", role=IGNORED),
        serve_flag("enable_force_include_usage", arity="bool", role=IGNORED),
        serve_flag("return_tokens_as_token_ids", arity="bool", role=IGNORED),
        # change what vLLM captures, not modelled by cgplan yet: refused unless left at vLLM's default
        serve_flag("prefill_context_parallel_size", "-pcp", role=UNMODELLED, default="1"),
        serve_flag("convert", role=UNMODELLED, default="auto"),
        # which adapters and which all-to-all kernels: capture-neutral at config time
        serve_flag("lora_modules", arity="many", role=IGNORED),
        serve_flag("max_lora_rank", role=IGNORED),
        serve_flag("data_parallel_size_local", "-dpl", role=IGNORED),
        serve_flag("data_parallel_address", "-dpa", role=IGNORED),
        serve_flag("data_parallel_rpc_port", "-dpp", role=IGNORED),
    ),
    inverse_forms=False,
)

# 0.31.0: --device-memory-utilization, an alias of --gpu-memory-utilization.
_V0_31 = serve_flags(
    "0.31.0",
    _with_aliases(_V0_26.flags, "gpu_memory_utilization", "--device-memory-utilization"),
    inverse_forms=False,
)
# 0.33.0: booleans are EnableDisableAction: --disable-x for --enable-x (and the reverse).
_V0_33 = serve_flags("0.33.0", _V0_31.flags, inverse_forms=True)

SERVE_FLAGS: tuple[ServeFlags, ...] = (_V0_26, _V0_31, _V0_33)
"""Oldest first; a release uses the last entry whose `since` is not newer than it."""


@functools.cache
def serve_flags_for(version: str | None) -> ServeFlags:
    """The `SERVE_FLAGS` entry for `version` (`closest_release`: the newest one when None)."""
    return since_entry(SERVE_FLAGS, closest_release(version))
