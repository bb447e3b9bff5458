# SPDX-License-Identifier: Apache-2.0
"""vLLM's own config, dispatcher and CUDA-graph-manager code on a CPU: the engine `cgplan verify` runs.

This file runs INSIDE the interpreter the user names (`cgplan verify --python PY`: a venv with a vLLM
release, a nightly wheel or an editable source checkout), by path, never imported by cgplan's own
process: it needs the standard library and vLLM only, not cgplan, so PY needs nothing but vLLM.

    PY cgplan/gpu/vllm_oracle.py CONFIG.json                    # one config -> one JSON document on stdout
    PY cgplan/gpu/vllm_oracle.py --out-dir D --timeout 120 -j 2 A.json B.json   # batch: imports once

Nothing here needs a GPU: the CUDA platform is replaced by a fake one with a chosen device
capability, the compiled vLLM extensions are stubbed out, and only vLLM's pure-Python config,
dispatcher and graph-manager code runs (what it cannot reach: `CPU_HOST_LIMITS` in
cgplan/gpu/vllm_cpu.py, and scripts/oracle/README.md). Like `vllm serve`, it builds the config with
`usage_context=OPENAI_API_SERVER` (vllm/entrypoints/openai/api_server.py), which decides the default
max_num_batched_tokens / max_num_seqs. The config is the oracle's JSON dict (cgplan/io/oracle_input.py
translates a cgplan YAML into it; scripts/oracle/README.md lists its keys).

Batch mode talks to its caller in lines on stdout that start with `@cgplan-oracle ` and carry one
JSON object (`{"event": "preloaded", "vllm_version": ...}`, `{"event": "done", "index": i,
"status": "ok" | "failed" | "timeout", "path": ...}`, `{"event": "fatal", "error": ...}`); anything
else on stdout or stderr is vLLM's own chatter. Exit 3 when vLLM cannot be imported at all.

The module is linted and type-checked with cgplan (vLLM is untyped here: its objects are `Any`).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import signal
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any, TextIO

EVENT = "@cgplan-oracle "
"""The prefix of every protocol line in batch mode."""

EXIT_NO_VLLM = 3
"""Exit status when vLLM (or something it imports) cannot be imported in this interpreter."""

USAGE_CONTEXTS = ("OPENAI_API_SERVER", "none")
"""`--usage-context`: as `vllm serve` (the default), or EngineArgs' own default (None)."""

_SETTINGS: dict[str, Any] = {"models_dir": None, "usage_context": "OPENAI_API_SERVER"}
"""Set by `main`: where a relative `model_dir` starts (None: the working directory), and the usage
context `create_engine_config` is called with."""

PLATFORMS = {
    # name: (capability, device name, total memory bytes)
    "hopper": ((9, 0), "NVIDIA H200", 141 * (1 << 30)),
    "blackwell": ((10, 0), "NVIDIA B200", 180 * (1 << 30)),
    "ampere": ((8, 0), "NVIDIA A100-SXM4-80GB", 80 * (1 << 30)),
    "rtx-blackwell": ((12, 0), "NVIDIA RTX PRO 6000 Blackwell", 96 * (1 << 30)),
    "rtx-5090": ((12, 0), "NVIDIA GeForce RTX 5090", 32 * (1 << 30)),
    "gb10": ((12, 1), "NVIDIA GB10", 128 * (1 << 30)),
}


# --------------------------------------------------------------------------
# config loading
# --------------------------------------------------------------------------
def load_config(path: str) -> dict[str, Any]:
    """A JSON config dict from a file, or from stdin for `-`."""
    text = Path(path).read_text() if path != "-" else sys.stdin.read()
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: the oracle's config is a JSON object")
    return doc


def _model_path(text: str) -> str:
    """An absolute model folder: relative ones start at --models-dir (else the working directory)."""
    if os.path.isabs(text):
        return text
    base = _SETTINGS["models_dir"] or os.getcwd()
    return str((Path(base) / text).resolve())


# --------------------------------------------------------------------------
# environment preparation (must run before vllm is imported)
# --------------------------------------------------------------------------
_STUB_MODULES = [
    "vllm._C",
    "vllm._C_stable_libtorch",
    "vllm._moe_C",
    "vllm._rocm_C",
    "vllm._flashmla_C",
    "vllm._flashmla_extension_C",
    "vllm.cumem_allocator",
    # flash-attention kernels: present on every CUDA install of vLLM. Stubbing
    # them makes vllm.vllm_flash_attn report FA2/FA3 as available, so the
    # attention selector and FlashAttention's CUDA-graph support level follow
    # the GPU code path (FA3 on 9.x, FA4/FA2 elsewhere).
    "vllm.vllm_flash_attn._vllm_fa2_C",
    "vllm.vllm_flash_attn._vllm_fa3_C",
]


def prepare_env(cfg: dict[str, Any]) -> None:
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "INFO")
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    os.environ.setdefault("VLLM_DO_NOT_TRACK", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault(
        "VLLM_CACHE_ROOT",
        os.environ.get("ORACLE_CACHE_DIR", str(Path.home() / ".cache" / "vllm-oracle")),
    )
    runner = str(cfg.get("model_runner", "auto")).lower()
    if runner in ("v1", "v2"):
        os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "1" if runner == "v2" else "0"
    else:
        os.environ.pop("VLLM_USE_V2_MODEL_RUNNER", None)
    for k, v in (cfg.get("env") or {}).items():
        os.environ[str(k)] = str(v)
    for name in _STUB_MODULES:
        if name not in sys.modules:
            sys.modules[name] = types.ModuleType(name)
    _pretend_triton_gpu_driver()


def _pretend_triton_gpu_driver() -> None:
    """vLLM only treats Triton as usable when a GPU driver is active; without
    it, Triton is replaced by placeholders that some modules cannot import
    with. Make Triton's NVIDIA driver report itself active (no kernel is ever
    compiled or launched here)."""
    try:
        from triton.backends import backends  # type: ignore[import-not-found]
    except Exception:
        return
    for name, b in backends.items():
        if name == "nvidia" and b.driver is not None:
            try:
                b.driver.is_active = staticmethod(lambda: True)
            except Exception:
                pass


# Kernels that some modules reference at import time without a hasattr()
# guard (e.g. compilation/passes/fusion/matcher_utils.py, pulled in by the
# TP>1 all-reduce fusion sizing). They are never called here.
_UNGUARDED_OPS = {
    "rotary_embedding",
    "static_scaled_fp8_quant",
    "dynamic_scaled_fp8_quant",
    "dynamic_per_token_scaled_fp8_quant",
    "rms_norm",
    "fused_add_rms_norm",
    "rms_norm_static_fp8_quant",
    "fused_add_rms_norm_static_fp8_quant",
    "rms_norm_dynamic_per_token_quant",
    "silu_and_mul",
    "silu_and_mul_quant",
    "gelu_and_mul",
    "gelu_tanh_and_mul",
    "mul_and_silu",
    "fused_qk_norm_rope",
    "silu_and_mul_per_block_quant",
}


class _FakeOpNamespace:
    """Stand-in for torch.ops._C & co (the compiled kernels are stubbed)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, item: str) -> Any:
        # Only capability queries called at import time are answered (False);
        # every real kernel stays absent so `hasattr(torch.ops._C, op)`
        # guards behave as on a build without that kernel.
        if item.startswith("__") or not (
            any(w in item for w in ("supports", "supported", "is_available")) or item in _UNGUARDED_OPS
        ):
            raise AttributeError(item)

        def _op(*args: Any, **kwargs: Any) -> bool:
            return False

        _op.__name__ = item
        _op.default = _op  # type: ignore[attr-defined]
        return _op


def _install_fake_torch_ops() -> None:
    import torch

    for ns in (
        "_C",
        "_moe_C",
        "_C_cache_ops",
        "_C_custom_ar",
        "_C_utils",
        "_rocm_C",
        "_vllm_fa2_C",
        "_vllm_fa3_C",
        "_qutlass_C",
        "_flashmla_C",
        "_flashmla_extension_C",
    ):
        try:
            setattr(torch.ops, ns, _FakeOpNamespace(ns))
        except Exception:
            pass


PARALLEL_KEYS = (
    "pipeline_parallel_size",
    "data_parallel_size",
    "decode_context_parallel_size",
    "enable_expert_parallel",
    "enable_lora",
    "max_loras",
    "max_lora_rank",
    "specialize_active_lora",
    "enable_dbo",
    "ubatch_size",
    "dbo_decode_token_threshold",
    "dbo_prefill_token_threshold",
)
"""EngineArgs fields for the parallel, LoRA and DBO configs (cgplan issue 16)."""


# What the fake platform reports; set_platform() changes it per config (the
# batch mode forks one child per config after the heavy imports).
_FAKE_STATE: dict[str, Any] = {"name": "hopper", "tp": 1}


def set_platform(platform_name: str, tp: int = 1) -> None:
    if platform_name not in PLATFORMS:
        raise ValueError(f"unknown platform {platform_name!r}; use one of {list(PLATFORMS)}")
    _FAKE_STATE["name"] = platform_name
    _FAKE_STATE["tp"] = tp


def _cap() -> tuple[int, int]:
    cap: tuple[int, int] = PLATFORMS[_FAKE_STATE["name"]][0]
    return cap


def install_fake_platform(platform_name: str, tp: int) -> Any:
    """Replace vllm's current_platform by a CUDA platform without a device."""
    set_platform(platform_name, tp)
    import torch
    import vllm.platforms as vp
    from vllm.platforms import cuda as vcuda
    from vllm.platforms.interface import DeviceCapability

    base = vcuda.CudaPlatformBase

    class FakeCudaPlatform(base):  # type: ignore[misc, valid-type]
        @classmethod
        def get_device_capability(cls, device_id: int = 0) -> Any:
            cap = _cap()
            return DeviceCapability(major=cap[0], minor=cap[1])

        @classmethod
        def has_device_capability(cls, capability: Any, device_id: int = 0) -> bool:
            cur = cls.get_device_capability(device_id)
            if isinstance(capability, tuple):
                return bool(cur >= capability)
            return bool(cur.to_int() >= capability)

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return PLATFORMS[_FAKE_STATE["name"]][1]

        @classmethod
        def get_device_uuid(cls, device_id: int = 0) -> str:
            return f"GPU-fake-{device_id}"

        @classmethod
        def get_device_total_memory(cls, device_id: int = 0) -> int:
            return PLATFORMS[_FAKE_STATE["name"]][2]

        @classmethod
        def is_fully_connected(cls, physical_device_ids: Any) -> bool:
            return True

        @classmethod
        def device_count(cls) -> int:
            return max(8, int(_FAKE_STATE["tp"]))

        @classmethod
        def log_warnings(cls) -> None:
            pass

        @classmethod
        def get_device_numa_node(cls, device_id: int = 0) -> None:
            return None

        @classmethod
        def get_all_device_numa_nodes(cls) -> None:
            return None

        @classmethod
        def is_pin_memory_available(cls) -> bool:
            return False

        @classmethod
        def get_global_graph_pool(cls) -> None:
            return None

        @classmethod
        def graph_pool_handle(cls) -> None:
            return None

    vp._current_platform = FakeCudaPlatform()
    _install_fake_torch_ops()
    # The model registry inspects model classes in a subprocess (to avoid
    # touching CUDA); that subprocess would not have our stubs, so run the
    # inspection in-process instead.
    import vllm.model_executor.models.registry as vreg

    def _synth_model_info(self: Any) -> Any:
        # Importing the real model module needs CUDA kernels; the config
        # code only reads these interface flags. Values are those of a plain
        # dense decoder-only text model such as LlamaForCausalLM.
        import dataclasses

        known = {
            "architecture": self.class_name,
            "is_text_generation_model": True,
            "is_pooling_model": False,
            "attn_type": "decoder",
            "default_seq_pooling_type": "LAST",
            "default_tok_pooling_type": "ALL",
            "score_type": "bi-encoder",
            "supports_pp": True,
            "supports_lora": True,
            "supported_video_pruning_methods": (),
        }
        kw: dict[str, Any] = {}
        for f in dataclasses.fields(vreg._ModelInfo):
            kw[f.name] = known.get(f.name, False)
        return vreg._ModelInfo(**kw)

    vreg._LazyRegisteredModel.inspect_model_cls = _synth_model_info
    # torch.cuda.device_count() is used by a few config checks (e.g. TP).
    torch.cuda.device_count = lambda: max(8, _FAKE_STATE["tp"])
    torch.cuda.is_available = lambda: True
    # Some kernel packages (flashinfer) ask torch for the capability at import.
    torch.cuda.get_device_capability = lambda device=None: tuple(_cap())
    torch.cuda.get_device_name = lambda device=None: PLATFORMS[_FAKE_STATE["name"]][1]
    return vp._current_platform


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
def compress_ranges(values: list[int], start: int = 1) -> list[list[int]]:
    """[(first_index, last_index, value), ...] for a dense 1-indexed list."""
    out: list[list[int]] = []
    for i, v in enumerate(values, start=start):
        if out and out[-1][2] == v and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i, v])
    return out


def mode_name(m: Any) -> str | None:
    if m is None:
        return None
    return getattr(m, "name", str(m))


def desc_to_dict(d: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in (
        "cg_mode",
        "num_tokens",
        "num_reqs",
        "uniform_token_count",
        "max_query_len",
        "num_active_loras",
        "num_ubatches",
        "num_speculative_tokens",
        "uniform",
        "has_lora",
    ):
        if hasattr(d, k):
            v = getattr(d, k)
            out[k] = mode_name(v) if k == "cg_mode" else v
    return out


class LogCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:
            msg = str(record.msg)
        if record.levelno >= logging.WARNING or "cudagraph" in msg.lower() or ("cuda graph" in msg.lower()):
            self.records.append(f"{record.levelname}: {msg}")


# --------------------------------------------------------------------------
# main oracle
# --------------------------------------------------------------------------
def build_engine_args(cfg: dict[str, Any], out: dict[str, Any] | None = None) -> Any:
    """vLLM's EngineArgs for the oracle config; `out` gets the `engine_args` keys this vLLM's
    EngineArgs has no field for (front-end options of `vllm serve` such as host or port: they do
    not reach the engine config), as `not_engine_args`."""
    import dataclasses

    from vllm.engine.arg_utils import EngineArgs

    if not cfg.get("model_dir") and not _SETTINGS["models_dir"]:
        raise ValueError("the config names no model_dir (a folder with the model's config.json)")
    model_dir = _model_path(str(cfg.get("model_dir") or "tiny-llama"))
    kwargs: dict[str, Any] = dict(
        model=model_dir,
        skip_tokenizer_init=True,
        load_format="dummy",
        max_model_len=cfg.get("max_model_len", 4096),
        max_num_seqs=cfg.get("max_num_seqs", 256),
        tensor_parallel_size=cfg.get("tensor_parallel_size", 1),
        enforce_eager=bool(cfg.get("enforce_eager", False)),
    )
    if cfg.get("max_num_batched_tokens") is not None:
        kwargs["max_num_batched_tokens"] = cfg["max_num_batched_tokens"]
    if cfg.get("performance_mode") is not None:
        kwargs["performance_mode"] = cfg["performance_mode"]
    if cfg.get("optimization_level") is not None:
        kwargs["optimization_level"] = cfg["optimization_level"]
    if cfg.get("async_scheduling") is not None:
        kwargs["async_scheduling"] = cfg["async_scheduling"]
    # Parallelism, LoRA and microbatching: EngineArgs fields of the same name. The fake
    # platform reports enough devices for TP x PP x DP (set in run()).
    for key in PARALLEL_KEYS:
        if cfg.get(key) is not None:
            kwargs[key] = cfg[key]

    cc: dict[str, Any] = dict(cfg.get("compilation_config") or {})
    if cfg.get("cudagraph_mode") is not None:
        cc["cudagraph_mode"] = cfg["cudagraph_mode"]
    if cfg.get("max_cudagraph_capture_size") is not None:
        cc["max_cudagraph_capture_size"] = cfg["max_cudagraph_capture_size"]
    if cfg.get("cudagraph_capture_sizes") is not None:
        cc["cudagraph_capture_sizes"] = cfg["cudagraph_capture_sizes"]
    if cfg.get("sequence_parallel"):
        pc = dict(cc.get("pass_config") or {})
        pc["enable_sp"] = True
        # vLLM disables SP when its size heuristic finds the hidden size too
        # small (true for the tiny test models); a threshold forces it on.
        pc.setdefault("sp_min_token_num", cfg.get("sp_min_token_num", 1))
        cc["pass_config"] = pc
    if cc:
        kwargs["compilation_config"] = cc

    spec = cfg.get("speculative")
    if spec:
        sc = dict(spec)
        method = sc.get("method", "ngram")
        if method == "ngram":
            sc.setdefault("prompt_lookup_max", 4)
            sc.setdefault("prompt_lookup_min", 2)
        elif method in ("draft_model", "eagle", "eagle3") and "model" not in sc:
            sc["model"] = model_dir
        if sc.get("model"):
            sc["model"] = _model_path(str(sc["model"]))
        sched = sc.get("num_speculative_tokens_per_batch_size")
        if sched is not None:
            sc["num_speculative_tokens_per_batch_size"] = [
                tuple(e) if isinstance(e, list) else e for e in sched
            ]
        kwargs["speculative_config"] = sc
    fields = {f.name for f in dataclasses.fields(EngineArgs)}
    dropped = []
    for k, v in (cfg.get("engine_args") or {}).items():
        if k in fields:
            kwargs[k] = v
        else:
            dropped.append(k)
    if dropped and out is not None:
        out["not_engine_args"] = sorted(dropped)
    return EngineArgs(**kwargs)


def dynamic_lookup(vllm_config: Any, out: dict[str, Any]) -> None:
    sc = vllm_config.speculative_config
    if sc is None or not sc.uses_dynamic_speculative_decoding():
        out["dynamic_sd"] = None
        return
    from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup

    d: dict[str, Any] = {"schedule": [list(e) for e in sc.num_speculative_tokens_per_batch_size]}
    try:
        dense = build_dynamic_sd_schedule_lookup(
            sc.num_speculative_tokens_per_batch_size,
            vllm_max_batch_size=vllm_config.scheduler_config.max_num_seqs,
            vllm_num_speculative_tokens=vllm_config.num_speculative_tokens,
        )
        d["lookup_ranges"] = compress_ranges(dense[1:])
        d["tiers_query_len_to_widest_batch"] = {}
        for bs, k in enumerate(dense[1:], start=1):
            d["tiers_query_len_to_widest_batch"][str(k + 1)] = bs
    except Exception as e:
        d["error"] = f"{type(e).__name__}: {e}"
    out["dynamic_sd"] = d


def _backend_support(backend_cls: Any, vllm_config: Any, use_mla: bool) -> tuple[Any, str | None]:
    """CUDA-graph support level that the backend's metadata builder reports."""
    from vllm.config import set_current_vllm_config
    from vllm.v1 import kv_cache_interface as kvi

    builder = backend_cls.get_builder_cls()
    mc = vllm_config.model_config
    spec_cls = kvi.MLAAttentionSpec if use_mla else kvi.FullAttentionSpec
    try:
        spec = spec_cls(
            block_size=vllm_config.cache_config.block_size or 16,
            num_kv_heads=mc.get_num_kv_heads(vllm_config.parallel_config),
            head_size=mc.get_head_size(),
            dtype=mc.dtype,
        )
        with set_current_vllm_config(vllm_config):
            return builder.get_cudagraph_support(vllm_config, spec), None
    except Exception as e:
        from vllm.v1.attention.backend import AttentionCGSupport

        return (
            getattr(builder, "_cudagraph_support", AttentionCGSupport.ALWAYS),
            f"get_cudagraph_support failed ({type(e).__name__}: {e}); used the "
            "builder's _cudagraph_support class attribute",
        )


_CHOSEN_BACKEND: dict[str, Any] = {}
"""The attention backend class `resolve_attention_cg_support` chose (read by the speculator)."""
_CHOSEN: dict[str, Any] = {}
"""The backend class resolve_attention_cg_support chose (the parallel drafters' layers use it too)."""

PARALLEL_DRAFTERS = ("dflash", "dspark")
"""Methods whose V2 speculator is built by `init_speculator` and captures its own query graphs."""


def _draft_backend_cls(vllm_config: Any, cfg: dict[str, Any]) -> tuple[Any, bool]:
    """The backend of a parallel drafter's layers: the forced one, else the first importable of
    the platform's priority list for a dense, possibly non-causal draft (`_get_backend_priorities`
    with `use_non_causal`, which the draft's `attn_vllm_config` sets from
    `dflash_has_any_non_causal`: SM100 prefers FLASH_ATTN then)."""
    from vllm.model_executor.models.qwen3_dflash import dflash_has_any_non_causal
    from vllm.platforms import cuda as vcuda
    from vllm.platforms import current_platform
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    sc = vllm_config.speculative_config
    non_causal = bool(dflash_has_any_non_causal(sc.draft_model_config.hf_config))
    if cfg.get("attention_backend"):
        if cfg["attention_backend"] in VALIDATED_BACKENDS:
            # the draft's layers go through the selector with the draft's head size, non-causal
            validate_selected_backend(
                cfg["attention_backend"], vllm_config, sc.draft_model_config, False, non_causal
            )
        return AttentionBackendEnum[cfg["attention_backend"]].get_class(), non_causal
    pri = vcuda._get_backend_priorities(
        False, current_platform.get_device_capability(), use_non_causal=non_causal
    )
    for b in pri:
        try:
            return b.get_class(), non_causal
        except Exception:
            continue
    return _CHOSEN.get("backend_cls"), non_causal


VALIDATED_BACKENDS = ("B12X",)
"""Forced backends the oracle holds to vLLM's own `validate_configuration` (the selector's check of
a selected backend, `CudaPlatform.get_attn_backend_cls`): those cgplan learned after the corpus of
the older ones was recorded without it."""


def _stub_b12x_kernels() -> None:
    """B12X's `supports_combination` asks for the b12x kernels (`pip install vllm[b12x]`): a GPU
    host serving with it has them; answer as that host does."""
    try:
        import vllm.v1.attention.backends.b12x as vb12x
    except Exception:
        return

    class _Kernels:
        @staticmethod
        def is_supported() -> bool:
            return True

    vb12x.get_b12x_paged_attention = lambda: _Kernels()


def validate_selected_backend(
    name: str, vllm_config: Any, model_config: Any, use_mla: bool, non_causal: bool
) -> None:
    """The selector's check of a selected backend, in its words (ValueError)."""
    import inspect

    from vllm.platforms import current_platform
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    selected = AttentionBackendEnum[name]
    cls = selected.get_class()
    if name == "B12X":
        _stub_b12x_kernels()
    cache = vllm_config.cache_config
    args = dict(
        head_size=model_config.get_head_size(),
        dtype=model_config.dtype,
        kv_cache_dtype=cache.cache_dtype,
        block_size=cache.block_size if getattr(cache, "user_specified_block_size", False) else None,
        use_mla=use_mla,
        has_sink=False,
        use_sparse=False,
        use_mm_prefix=False,
        use_per_head_quant_scales=False,
        device_capability=current_platform.get_device_capability(),
        attn_type="decoder",
        has_sliding_window=False,
        use_non_causal=non_causal,
        use_dcp=vllm_config.parallel_config.decode_context_parallel_size > 1,
        use_pcp=vllm_config.parallel_config.prefill_context_parallel_size > 1,
    )
    params = inspect.signature(cls.validate_configuration).parameters
    reasons = cls.validate_configuration(**{k: v for k, v in args.items() if k in params})
    if reasons:
        raise ValueError(
            f"Selected backend {selected} is not valid for this configuration. Reason: {reasons}"
        )


def _draft_spec_support(backend_cls: Any, vllm_config: Any, draft_model_config: Any) -> Any:
    """The support level `backend_cls`'s builder reports for a draft layer: the KV spec of the
    draft model (its heads, head size), `vllm_config` as the caller passes it to the builder (the
    runner's own for its attention groups, the speculator's `attn_vllm_config` in `set_attn`)."""
    from vllm.config import set_current_vllm_config
    from vllm.v1 import kv_cache_interface as kvi

    builder = backend_cls.get_builder_cls()
    spec = kvi.FullAttentionSpec(
        block_size=vllm_config.cache_config.block_size or 16,
        num_kv_heads=draft_model_config.get_num_kv_heads(vllm_config.parallel_config),
        head_size=draft_model_config.get_head_size(),
        dtype=draft_model_config.dtype,
    )
    with set_current_vllm_config(vllm_config):
        return builder.get_cudagraph_support(vllm_config, spec)


def resolve_attention_cg_support(
    vllm_config: Any, cfg: dict[str, Any], out: dict[str, Any]
) -> tuple[Any, str | None]:
    """Pick the attention backend and read its CUDA-graph support level.

    policy (cfg["attention_policy"]):
      first_priority (default): the first backend of the platform's priority
        list (vllm/platforms/cuda.py:_get_backend_priorities) whose module
        imports here. On a GPU host the selector walks the same list but also
        validates kernel availability, which cannot pass on a CPU machine.
      selector: vLLM's own selector as it runs on this CPU machine.
    cfg["attention_backend"] forces a backend by AttentionBackendEnum name;
    cfg["attn_cg_support"] forces the support level
    (ALWAYS|UNIFORM_BATCH|UNIFORM_SINGLE_TOKEN_DECODE|NEVER).
    """
    from vllm.config import set_current_vllm_config
    from vllm.platforms import current_platform
    from vllm.v1.attention.backend import AttentionCGSupport
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    info: dict[str, Any] = {}
    out["attention"] = info
    # FlashInfer's TRT-LLM kernels need cubins from NVIDIA's artifactory, which
    # a GPU host normally reaches; this machine cannot. Assume reachable
    # unless the config says otherwise (flashinfer_trtllm: false).
    try:
        import vllm.utils.flashinfer as vfi

        reachable = bool(cfg.get("flashinfer_trtllm", True))
        vfi.has_nvidia_artifactory = lambda: reachable
        info["assumed_nvidia_artifactory_reachable"] = reachable
    except Exception:
        pass
    model_config = vllm_config.model_config
    use_mla = bool(getattr(model_config, "use_mla", False))
    info["use_mla"] = use_mla
    forced = cfg.get("attn_cg_support")
    if forced:
        info["forced_cg_support"] = forced
        info["cg_support"] = forced
        return AttentionCGSupport[forced], f"forced:{forced}"

    try:
        from vllm.platforms import cuda as vcuda

        pri = vcuda._get_backend_priorities(use_mla, current_platform.get_device_capability())
        info["platform_priority"] = [b.name for b in pri]
    except Exception as e:
        pri = []
        info["platform_priority_error"] = f"{type(e).__name__}: {e}"

    # vLLM's selector, as it runs here.
    selector_cls = None
    try:
        from vllm.v1.attention.selector import get_attn_backend

        with set_current_vllm_config(vllm_config):
            selector_cls = get_attn_backend(
                model_config.get_head_size(),
                model_config.dtype,
                vllm_config.cache_config.cache_dtype,
                use_mla=use_mla,
                num_heads=model_config.get_num_attention_heads(vllm_config.parallel_config),
            )
        info["cpu_selector_backend"] = selector_cls.get_name()
    except Exception as e:
        info["cpu_selector_error"] = f"{type(e).__name__}: {e}"

    backend_cls = None
    policy = cfg.get("attention_policy", "first_priority")
    if cfg.get("attention_backend"):
        backend_cls = AttentionBackendEnum[cfg["attention_backend"]].get_class()
        info["chosen_by"] = "config attention_backend"
        if cfg["attention_backend"] in VALIDATED_BACKENDS:
            validate_selected_backend(cfg["attention_backend"], vllm_config, model_config, use_mla, False)
            info["validated"] = True
    elif policy == "first_priority":
        skipped = []
        for b in pri:
            try:
                backend_cls = b.get_class()
                break
            except Exception as e:
                skipped.append(f"{b.name}: {type(e).__name__}: {str(e)[:120]}")
        if skipped:
            info["skipped_unimportable"] = skipped
        info["chosen_by"] = "first importable backend of the platform priority list"
    if backend_cls is None:
        backend_cls = selector_cls
        info["chosen_by"] = "vLLM selector on this CPU machine"
    if backend_cls is None:
        info["cg_support"] = "ALWAYS"
        info["note"] = "no backend resolved; assumed ALWAYS"
        return AttentionCGSupport.ALWAYS, None
    info["backend"] = backend_cls.get_name()
    _CHOSEN_BACKEND["cls"] = backend_cls
    _CHOSEN["backend_cls"] = backend_cls
    support, err = _backend_support(backend_cls, vllm_config, use_mla)
    if err:
        info["cg_support_note"] = err
    info["cg_support"] = support.name
    return support, backend_cls.__name__


def _usage_context() -> dict[str, Any]:
    """`create_engine_config`'s usage context: `vllm serve` passes OPENAI_API_SERVER
    (vllm/entrypoints/openai/api_server.py); it decides the default max_num_batched_tokens and
    max_num_seqs (EngineArgs `_set_default_max_num_seqs_and_batched_tokens_args`)."""
    name = _SETTINGS["usage_context"]
    if name == "none":
        return {}
    from vllm.usage.usage_lib import UsageContext

    return {"usage_context": UsageContext[name]}


_SETUP_DONE = False


def setup_process() -> None:
    """Stubs, fake platform and registry patch; once per process."""
    global _SETUP_DONE
    if _SETUP_DONE:
        return
    prepare_env({})
    import vllm  # noqa: F401

    install_fake_platform("hopper", 1)
    # Model Runner V2 requires Triton; a GPU install has it. Pretend so
    # that use_v2_model_runner follows the GPU decision.
    import vllm.config.vllm as vcv

    if hasattr(vcv, "HAS_TRITON"):
        vcv.HAS_TRITON = True
    # Suffix decoding needs Arctic Inference (`_validate_suffix_decoding`); plan as on a GPU host
    # that has it installed (cgplan notes the assumption).
    import vllm.config.speculative as vcs

    vcs.has_arctic_inference = lambda: True
    _SETUP_DONE = True


def preload() -> None:
    """Import the heavy, platform-independent modules once (batch mode)."""
    import importlib

    for name in (
        "vllm.engine.arg_utils",
        "vllm.v1.cudagraph_dispatcher",
        "vllm.v1.spec_decode.dynamic.utils",
        "vllm.v1.attention.selector",
    ):
        try:
            importlib.import_module(name)
        except Exception:
            pass


def _keep_handler_through_dict_config(handler: logging.Handler) -> None:
    """vLLM 0.31+ reconfigures its loggers with `logging.config.dictConfig` while building the
    config (`configure_logging`), which drops handlers added before: put the capture back after
    every reconfiguration (the log lines of 0.31+ recorded before this were empty)."""
    import logging.config as lc

    orig = getattr(lc.dictConfig, "_oracle_orig", lc.dictConfig)

    def dict_config(config: Any) -> None:
        orig(config)
        logger = logging.getLogger("vllm")
        if handler not in logger.handlers:
            logger.addHandler(handler)

    dict_config._oracle_orig = orig  # type: ignore[attr-defined]
    lc.dictConfig = dict_config
    vlog = sys.modules.get("vllm.logger")
    if vlog is not None and hasattr(vlog, "dictConfig"):  # `from logging.config import dictConfig`
        setattr(vlog, "dictConfig", dict_config)  # noqa: B010 (a module attribute mypy does not know)


def run(cfg: dict[str, Any]) -> dict[str, Any]:
    prepare_env(cfg)
    platform_name = cfg.get("platform", "hopper")
    tp = int(cfg.get("tensor_parallel_size", 1))
    # every rank of TP x PP x DP needs a (fake) device
    tp *= int(cfg.get("pipeline_parallel_size") or 1) * int(cfg.get("data_parallel_size") or 1)
    out: dict[str, Any] = {"input": cfg}

    t0 = time.perf_counter()
    cap = LogCapture()
    logging.getLogger("vllm").addHandler(cap)
    _keep_handler_through_dict_config(cap)
    stderr_buf = io.StringIO()
    try:
        setup_process()
        set_platform(platform_name, tp)
        import vllm

        out["vllm_version"] = vllm.__version__
        out["platform"] = {
            "name": platform_name,
            "device_capability": ".".join(map(str, PLATFORMS[platform_name][0])),
            "device_name": PLATFORMS[platform_name][1],
        }
        with contextlib.redirect_stderr(stderr_buf):
            engine_args = build_engine_args(cfg, out)
            vllm_config = engine_args.create_engine_config(**_usage_context())
    except Exception as e:
        out["error"] = f"{type(e).__name__}: {e}"
        out["error_trace_tail"] = traceback.format_exc().splitlines()[-4:]
        out["log"] = cap.records
        if cfg.get("debug"):
            out["stderr"] = stderr_buf.getvalue()[-5000:]
        out["elapsed_s"] = round(time.perf_counter() - t0, 3)
        return out

    cc = vllm_config.compilation_config
    sched = vllm_config.scheduler_config
    cfgout: dict[str, Any] = {
        "cudagraph_mode": mode_name(cc.cudagraph_mode),
        "compilation_mode": mode_name(cc.mode),
        "cudagraph_capture_sizes": list(cc.cudagraph_capture_sizes or []),
        "max_cudagraph_capture_size": cc.max_cudagraph_capture_size,
        "num_capture_sizes": len(cc.cudagraph_capture_sizes or []),
        "max_num_seqs": sched.max_num_seqs,
        "max_num_batched_tokens": sched.max_num_batched_tokens,
        "max_num_scheduled_tokens": getattr(sched, "max_num_scheduled_tokens", None),
        "num_speculative_tokens": vllm_config.num_speculative_tokens,
        "uniform_decode_query_len": getattr(
            vllm_config,
            "uniform_decode_query_len",
            1 + vllm_config.num_speculative_tokens,
        ),
        "widest_uniform_decode_tokens": sched.max_num_seqs * (1 + vllm_config.num_speculative_tokens),
        "use_v2_model_runner": bool(vllm_config.use_v2_model_runner),
        "async_scheduling": sched.async_scheduling,
        "performance_mode": getattr(vllm_config, "performance_mode", None),
        "optimization_level": mode_name(getattr(vllm_config, "optimization_level", None)),
        "compile_sizes": list(cc.compile_sizes or []),
        "cudagraph_num_of_warmups": cc.cudagraph_num_of_warmups,
        "tensor_parallel_size": vllm_config.parallel_config.tensor_parallel_size,
    }
    cfgout["parallel"] = parallel_summary(vllm_config)
    pc = getattr(cc, "pass_config", None)
    if pc is not None and hasattr(pc, "enable_sp"):
        cfgout["enable_sp"] = pc.enable_sp
    if vllm_config.speculative_config is not None:
        scfg = vllm_config.speculative_config
        cfgout["speculative_method"] = scfg.method
        cfgout["speculative_enforce_eager"] = getattr(scfg, "enforce_eager", None)
        cfgout["num_speculative_tokens_per_batch_size"] = (
            [list(e) for e in scfg.num_speculative_tokens_per_batch_size]
            if scfg.num_speculative_tokens_per_batch_size
            else None
        )
    out["config"] = cfgout
    dynamic_lookup(vllm_config, out)

    # --- runtime resolution against the attention backend -----------------
    if not cfg.get("skip_runtime"):
        try:
            with contextlib.redirect_stderr(stderr_buf):
                out["runtime"] = resolve_runtime(vllm_config, cfg, out)
        except Exception as e:
            out["runtime_error"] = f"{type(e).__name__}: {e}"
            out["runtime_error_trace_tail"] = traceback.format_exc().splitlines()[-6:]
    out["log"] = cap.records
    if cfg.get("debug"):
        out["stderr"] = stderr_buf.getvalue()[-5000:]
    out["elapsed_s"] = round(time.perf_counter() - t0, 3)
    return out


def parallel_summary(vllm_config: Any) -> dict[str, Any]:
    """What the parallel, LoRA and microbatching settings became after VllmConfig's checks."""
    par = vllm_config.parallel_config
    out: dict[str, Any] = {}
    for name in (
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "data_parallel_size",
        "decode_context_parallel_size",
        "enable_expert_parallel",
        "enable_dbo",
        "ubatch_size",
        "dbo_decode_token_threshold",
        "dbo_prefill_token_threshold",
        "world_size",
    ):
        if hasattr(par, name):
            out[name] = getattr(par, name)
    for name in ("use_ubatching", "num_ubatches"):
        try:
            out[name] = getattr(par, name)
        except Exception:
            pass
    lora = vllm_config.lora_config
    out["lora"] = None
    if lora is not None:
        out["lora"] = {
            "max_loras": lora.max_loras,
            "specialize_active_lora": getattr(lora, "specialize_active_lora", None),
        }
    out["cudagraph_specialize_lora"] = getattr(
        vllm_config.compilation_config, "cudagraph_specialize_lora", None
    )
    return out


def resolve_runtime(vllm_config: Any, cfg: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:

    from vllm.config import set_current_vllm_config

    rt: dict[str, Any] = {}
    support, backend_name = resolve_attention_cg_support(vllm_config, cfg, out)
    cc = vllm_config.compilation_config
    q = 1 + vllm_config.num_speculative_tokens
    use_v2 = bool(vllm_config.use_v2_model_runner)
    kwargs = dict(use_v2_model_runner=use_v2)
    import inspect

    sig = inspect.signature(cc.resolve_cudagraph_mode_and_sizes)
    if "tensor_parallel_size" in sig.parameters:
        kwargs["tensor_parallel_size"] = vllm_config.parallel_config.tensor_parallel_size
    if "max_num_reqs" in sig.parameters:
        kwargs["max_num_reqs"] = vllm_config.scheduler_config.max_num_seqs
    sc = vllm_config.speculative_config
    if sc is not None and sc.method in PARALLEL_DRAFTERS and _CHOSEN.get("backend_cls"):
        # init_attn_backend takes the minimum over every attention group of the runner's KV
        # cache config, the parallel drafter's layers included (built with the runner's config)
        draft_cls, non_causal = _draft_backend_cls(vllm_config, cfg)
        _CHOSEN["draft_backend_cls"] = draft_cls
        draft = _draft_spec_support(draft_cls, vllm_config, sc.draft_model_config)
        out["attention"]["draft_layers_backend"] = draft_cls.get_name()
        out["attention"]["draft_non_causal"] = non_causal
        out["attention"]["draft_layers_cg_support"] = draft.name
        if not cfg.get("attn_cg_support") and draft.value < support.value:
            support = draft
            out["attention"]["cg_support_with_draft_layers"] = draft.name
    with set_current_vllm_config(vllm_config):
        mode = cc.resolve_cudagraph_mode_and_sizes(support, backend_name, q, **kwargs)
    rt["resolved_cudagraph_mode"] = mode_name(mode)
    rt["cudagraph_capture_sizes"] = list(cc.cudagraph_capture_sizes or [])
    rt["max_cudagraph_capture_size"] = cc.max_cudagraph_capture_size
    if use_v2:
        rt["v2"] = v2_managers(vllm_config, mode, q, cfg)
    else:
        rt["v1"] = v1_dispatchers(vllm_config, mode, q, cfg)
    return rt


# ----------------------------- V1 -----------------------------------------
def v1_dispatchers(vllm_config: Any, mode: Any, q: int, cfg: dict[str, Any]) -> dict[str, Any]:
    from vllm.v1.cudagraph_dispatcher import CudagraphDispatcher

    res: dict[str, Any] = {}
    disp = CudagraphDispatcher(vllm_config)
    disp.initialize_cudagraph_keys(mode, q)
    res["target"] = summarize_v1(disp, vllm_config, q, cfg)

    sc = vllm_config.speculative_config
    if sc is not None and (
        sc.use_eagle() or sc.uses_draft_model() or getattr(sc, "uses_extract_hidden_states", lambda: False)()
    ):
        # The proposer's own initialize_cudagraph_keys (gpu_model_runner calls it with the
        # resolved mode), run on a stand-in that holds the two attributes it reads.
        from vllm.v1.spec_decode.llm_base_proposer import SpecDecodeBaseProposer

        proposer = types.SimpleNamespace(
            speculative_config=sc, cudagraph_dispatcher=CudagraphDispatcher(vllm_config)
        )
        SpecDecodeBaseProposer.initialize_cudagraph_keys(proposer, mode)
        ddisp = proposer.cudagraph_dispatcher
        d = summarize_v1(ddisp, vllm_config, 1, cfg, drafter=True)
        d["mode"] = mode_name(ddisp.cudagraph_mode)
        d["captured"] = v1_drafter_captured(disp, ddisp, vllm_config)
        if sc.method == "dflash":
            # DFlashProposer.dummy_run drafts min(num_tokens, max_query_tokens) query tokens,
            # max_query_tokens = max_batch_size * (1 + num_speculative_tokens) (v1/spec_decode/
            # dflash.py); the graphs the runner's capture loop makes through it are what its own
            # dispatcher pads those counts to
            most = vllm_config.scheduler_config.max_num_seqs * (1 + sc.num_speculative_tokens)
            d["max_query_tokens"] = most
            padded = set()
            for size in vllm_config.compilation_config.cudagraph_capture_sizes or []:
                m, bd = ddisp.dispatch(min(size, most), uniform_decode=False)
                if mode_name(m) != "NONE":
                    padded.add(bd.num_tokens)
            d["dummy_run_tokens"] = sorted(padded)
        res["drafter"] = d
    return res


def v1_drafter_captured(disp: Any, ddisp: Any, vllm_config: Any) -> list[list[Any]]:
    """The drafter graphs V1 captures: gpu_model_runner's capture loop runs `drafter.dummy_run`
    once per target capture descriptor with use_cudagraphs only where the target captures
    PIECEWISE ("Eagle currently only supports PIECEWISE cudagraphs"), and not for the LoRA cases
    when cudagraph_specialize_lora is on (issue #28334); the drafter dispatches each such
    num_tokens through its own dispatcher (`_determine_batch_execution_and_padding`).
    [[mode, num_tokens, num_reqs, num_active_loras], ...] of the drafter graphs captured, in
    capture order."""
    from vllm.config import CUDAGraphMode

    sc = vllm_config.speculative_config
    specialize_lora = bool(getattr(vllm_config.compilation_config, "cudagraph_specialize_lora", False))
    out: list[list[Any]] = []
    seen = set()
    for rmode, descs in disp.get_capture_descs():
        for desc in descs:
            use = rmode == CUDAGraphMode.PIECEWISE and not sc.enforce_eager
            loras = getattr(desc, "num_active_loras", 1 if getattr(desc, "has_lora", False) else 0)
            if specialize_lora and loras > 0:
                use = False
            m, bd = ddisp.dispatch(desc.num_tokens, valid_modes=({CUDAGraphMode.NONE} if not use else None))
            if m == CUDAGraphMode.NONE:
                continue
            key = (mode_name(m), bd.num_tokens, bd.num_reqs, getattr(bd, "num_active_loras", 0))
            if key not in seen:
                seen.add(key)
                out.append(list(key))
    return out


def summarize_v1(
    disp: Any, vllm_config: Any, q: int, cfg: dict[str, Any], drafter: bool = False
) -> dict[str, Any]:

    out: dict[str, Any] = {"cudagraph_mode": mode_name(disp.cudagraph_mode)}
    capture = []
    for rmode, descs in disp.get_capture_descs():
        block = {
            "mode": mode_name(rmode),
            "count": len(descs),
            "uniform": sorted({bool(getattr(d, "uniform", False)) for d in descs}),
            "num_tokens": [d.num_tokens for d in descs],
            "num_reqs": [d.num_reqs for d in descs],
        }
        if any(getattr(d, "uniform", False) for d in descs):
            block["uniform_per_desc"] = [bool(getattr(d, "uniform", False)) for d in descs]
        if vllm_config.lora_config is not None:
            block["num_active_loras"] = [
                getattr(d, "num_active_loras", 1 if getattr(d, "has_lora", False) else 0) for d in descs
            ]
        if not drafter and descs:
            ubatches = v1_capture_ubatches(vllm_config, rmode, descs)
            if ubatches is not None:
                block["num_ubatches"] = ubatches
        capture.append(block)
    out["capture"] = capture
    out["num_graphs"] = sum(c["count"] for c in capture)
    max_num_seqs = vllm_config.scheduler_config.max_num_seqs
    max_tokens = vllm_config.scheduler_config.max_num_batched_tokens
    # uniform decode dispatch, one entry per request count
    if not drafter:
        dec = []
        for n in range(1, max_num_seqs + 1):
            nt = n * q
            if nt > max_tokens:
                break
            m, bd = disp.dispatch(nt, uniform_decode=True)
            dec.append((n, nt, mode_name(m), bd.num_tokens, bd.num_reqs))
        out["uniform_decode_dispatch"] = compress_dispatch(dec)
        if vllm_config.lora_config is not None:
            # one active adapter: the dispatch a LoRA request's decode batch gets
            dec = []
            for n in range(1, max_num_seqs + 1):
                nt = n * q
                if nt > max_tokens:
                    break
                m, bd = _v1_dispatch_lora(disp, nt, True)
                dec.append((n, nt, mode_name(m), bd.num_tokens, bd.num_reqs))
            out["uniform_decode_dispatch_lora1"] = compress_dispatch(dec)
    mixed = []
    hi = min(max_tokens, (disp.compilation_config.max_cudagraph_capture_size or 0) + 1)
    for nt in range(1, max(hi, 1) + 1):
        m, bd = disp.dispatch(nt, uniform_decode=False)
        mixed.append((nt, nt, mode_name(m), bd.num_tokens, bd.num_reqs))
    out["mixed_dispatch"] = compress_dispatch(mixed, by_tokens=True)
    return out


def v1_capture_ubatches(vllm_config: Any, rmode: Any, descs: Any) -> list[int] | None:
    """Microbatches each V1 capture descriptor is captured with: gpu_model_runner's
    `_capture_cudagraphs` allows microbatching for a FULL block whose first descriptor is uniform
    and a descriptor over the decode threshold (`check_ubatch_thresholds`), and the DP
    coordination (more than one DP rank) splits it unless the last microbatch would be empty
    (`is_last_ubatch_empty`; every rank captures the same size). None: no microbatching."""
    from vllm.config import CUDAGraphMode

    pc = vllm_config.parallel_config
    if not getattr(pc, "use_ubatching", False) or pc.data_parallel_size <= 1:
        return None
    from vllm.v1.worker.ubatch_utils import check_ubatch_thresholds, is_last_ubatch_empty

    n = pc.num_ubatches
    uniform = bool(getattr(descs[0], "uniform", False))
    out = []
    for d in descs:
        split = (
            rmode == CUDAGraphMode.FULL
            and uniform
            and check_ubatch_thresholds(config=pc, num_tokens=d.num_tokens, uniform_decode=uniform)
            and not is_last_ubatch_empty(d.num_tokens, d.num_tokens, n)
        )
        out.append(n if split else 1)
    return out


def _v1_dispatch_lora(disp: Any, nt: int, uniform: bool) -> Any:
    import inspect

    params = inspect.signature(disp.dispatch).parameters
    kw: dict[str, Any] = {"uniform_decode": uniform, "has_lora": True}
    if "num_active_loras" in params:
        kw["num_active_loras"] = 1
    return disp.dispatch(nt, **kw)


def compress_dispatch(rows: list[tuple[Any, ...]], by_tokens: bool = False) -> list[dict[str, Any]]:
    """Group consecutive rows that land on the same (mode, padded tokens)."""
    out: list[dict[str, Any]] = []
    for n, nt, m, pt, pr in rows:
        key = (m, pt if m != "NONE" else None, pr if m != "NONE" else None)
        if out and out[-1]["_key"] == key:
            out[-1]["to"] = n if not by_tokens else nt
        else:
            out.append(
                {
                    "_key": key,
                    "from": n if not by_tokens else nt,
                    "to": n if not by_tokens else nt,
                    "mode": m,
                    "padded_tokens": pt if m != "NONE" else None,
                    "padded_reqs": pr if m != "NONE" else None,
                }
            )
    for r in out:
        del r["_key"]
    return out


# ----------------------------- V2 -----------------------------------------
def _patch_v2_module(mod: Any) -> None:
    class _PP:
        is_first_rank = True
        is_last_rank = True

    if hasattr(mod, "get_pp_group"):
        mod.get_pp_group = lambda: _PP()


def make_manager(cls: Any, vllm_config: Any, mode: Any, q: int, target: bool = False) -> Any:
    import inspect

    import torch

    sig = inspect.signature(cls.__init__)
    kwargs: dict[str, Any] = {}
    if "decode_query_len" in sig.parameters:
        kwargs["decode_query_len"] = q
    if target and "lora_capture_cases" in sig.parameters:
        kwargs["lora_capture_cases"] = v2_lora_capture_cases(vllm_config)
    if target and "ubatch_runner" in sig.parameters:
        kwargs["ubatch_runner"] = v2_ubatch_runner(vllm_config)
    return cls(vllm_config, torch.device("cpu"), mode, **kwargs)


def v2_lora_capture_cases(vllm_config: Any) -> list[int]:
    """GPUModelRunner's `lora_capture_cases` (V2), from vLLM's own helper."""
    if vllm_config.lora_config is None:
        return [0]
    from vllm.v1.worker.gpu.lora_utils import get_lora_capture_cases

    return list(get_lora_capture_cases(vllm_config.lora_config, vllm_config.compilation_config))


class _UBatchRunnerStandIn:
    """Stands for the UBatchRunner vLLM builds (it needs a loaded model); the manager only
    checks that one exists when it adds microbatch twins."""

    capture_stream = None


def v2_ubatch_runner(vllm_config: Any) -> Any:
    """vLLM's `maybe_build_ubatch_runner` decision, with the runner itself stubbed."""
    try:
        import vllm.v1.worker.gpu.ubatch_utils as uu
    except Exception:
        return None
    build = getattr(uu, "maybe_build_ubatch_runner", None)
    if build is None:
        return None
    saved = uu.UBatchRunner
    uu.UBatchRunner = lambda *a, **k: _UBatchRunnerStandIn()
    try:
        import inspect

        n = len(inspect.signature(build).parameters)
        args = [vllm_config, None] + [None] * (n - 3) + [vllm_config.scheduler_config.max_num_seqs]
        return build(*args)
    finally:
        uu.UBatchRunner = saved


def summarize_v2(mgr: Any, vllm_config: Any, q_list: list[int], dispatch: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"cudagraph_mode": mode_name(mgr.cudagraph_mode)}
    descs = getattr(mgr, "_capture_descs", None)
    capture = []
    if isinstance(descs, dict):
        from vllm.config import CUDAGraphMode

        for m in (CUDAGraphMode.PIECEWISE, CUDAGraphMode.FULL):
            if m in descs:
                ds = descs[m]
                block: dict[str, Any] = {
                    "mode": mode_name(m),
                    "count": len(ds),
                    "descs": [
                        [d.num_tokens, d.num_reqs, getattr(d, "uniform_token_count", None)] for d in ds
                    ],
                }
                if any(getattr(d, "num_active_loras", 0) for d in ds) or (
                    vllm_config.lora_config is not None
                ):
                    block["num_active_loras"] = [getattr(d, "num_active_loras", 0) for d in ds]
                if any(getattr(d, "num_ubatches", 1) != 1 for d in ds):
                    block["num_ubatches"] = [getattr(d, "num_ubatches", 1) for d in ds]
                capture.append(block)
    out["capture"] = capture
    out["num_graphs"] = sum(c["count"] for c in capture)
    if not dispatch:
        return out
    mgr._graphs_captured = True
    max_num_seqs = vllm_config.scheduler_config.max_num_seqs
    max_tokens = vllm_config.scheduler_config.max_num_batched_tokens
    import inspect

    dsig = inspect.signature(mgr.dispatch)
    out["uniform_decode_dispatch"] = {}
    for q in q_list:
        rows = []
        for n in range(1, max_num_seqs + 1):
            nt = n * q
            if nt > max_tokens:
                break
            kw: dict[str, Any] = {}
            if "max_query_len" in dsig.parameters:
                kw["max_query_len"] = q
            d = mgr.dispatch(n, nt, q, 0, **kw)
            rows.append((n, nt, mode_name(d.cg_mode), d.num_tokens, d.num_reqs))
        out["uniform_decode_dispatch"][str(q)] = compress_dispatch(rows)
        if vllm_config.lora_config is not None:
            rows = []
            for n in range(1, max_num_seqs + 1):
                nt = n * q
                if nt > max_tokens:
                    break
                kw = {}
                if "max_query_len" in dsig.parameters:
                    kw["max_query_len"] = q
                d = mgr.dispatch(n, nt, q, 1, **kw)
                rows.append((n, nt, mode_name(d.cg_mode), d.num_tokens, d.num_reqs))
            out.setdefault("uniform_decode_dispatch_lora1", {})[str(q)] = compress_dispatch(rows)
    # mixed batches: num_reqs = 1 prefill with everything (worst case for FULL)
    rows = []
    hi = min(max_tokens, (vllm_config.compilation_config.max_cudagraph_capture_size or 0) + 1)
    for nt in range(1, max(hi, 1) + 1):
        kw = {}
        if "max_query_len" in dsig.parameters:
            kw["max_query_len"] = None
        d = mgr.dispatch(min(nt, max_num_seqs), nt, None, 0, **kw)
        rows.append((nt, nt, mode_name(d.cg_mode), d.num_tokens, d.num_reqs))
    out["mixed_dispatch"] = compress_dispatch(rows, by_tokens=True)
    return out


def v2_managers(vllm_config: Any, mode: Any, q: int, cfg: dict[str, Any]) -> dict[str, Any]:
    import importlib

    from vllm.config import set_current_vllm_config

    res: dict[str, Any] = {}
    cu = importlib.import_module("vllm.v1.worker.gpu.cudagraph_utils")
    _patch_v2_module(cu)
    # decode query lengths the target can see
    sc = vllm_config.speculative_config
    q_list = [q]
    if sc is not None and sc.uses_dynamic_speculative_decoding():
        from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup

        try:
            dense = build_dynamic_sd_schedule_lookup(
                sc.num_speculative_tokens_per_batch_size,
                vllm_max_batch_size=vllm_config.scheduler_config.max_num_seqs,
                vllm_num_speculative_tokens=vllm_config.num_speculative_tokens,
            )
            q_list = sorted({k + 1 for k in dense[1:]})
        except Exception:
            pass
    with set_current_vllm_config(vllm_config):
        cls = getattr(cu, "ModelCudaGraphManager", None) or cu.CudaGraphManager
        mgr = make_manager(cls, vllm_config, mode, q, target=True)
        res["target"] = summarize_v2(mgr, vllm_config, q_list)
        res["target"]["lora_capture_cases"] = list(getattr(mgr, "lora_capture_cases", [0]))
        res["target"]["ubatch_runner"] = getattr(mgr, "ubatch_runner", None) is not None
        res["target"]["manager_class"] = cls.__name__

        # The speculator vLLM's own init_speculator builds, and its own init_cudagraph_manager
        # (model_runner calls it with the target's resolved mode); DFlash and DSpark with the
        # draft attention's support level set as `set_attn` sets it.
        if sc is not None and sc.method in PARALLEL_DRAFTERS:
            res["speculator"] = v2_parallel_speculator(vllm_config, mode)
        elif sc is not None:
            res.update(v2_speculator(vllm_config, mode))
    return res


_SPECULATOR_MANAGERS = (
    ("prefill_cudagraph_manager", "drafter_prefill"),
    ("decode_cudagraph_manager", "drafter_decode"),
    ("cudagraph_manager", "drafter"),
)
"""Speculator attribute -> family: prefill/decode (EAGLE, MTP with one layer), one manager
(multi-module MTP, DFlash)."""


def v2_speculator(vllm_config: Any, mode: Any) -> dict[str, Any]:
    """`init_speculator(...)` and its `init_cudagraph_manager(mode)`: the managers the speculator
    holds, and (0.32+) the decode descriptors its `capture` specialises per dynamic-SD K."""
    import importlib
    import inspect

    import torch
    from vllm.v1.worker.gpu.spec_decode import init_speculator

    res: dict[str, Any] = {}
    n = len(inspect.signature(init_speculator).parameters)
    try:
        spec = init_speculator(vllm_config, torch.device("cpu"), *([None] * (n - 2)))
    except Exception as e:
        # not vLLM refusing the config: the oracle could not build the speculator here
        res["speculator_error"] = f"{type(e).__name__}: {e}"
        res["speculator_error_trace_tail"] = traceback.format_exc().splitlines()[-4:]
        return res
    res["speculator_class"] = f"{type(spec).__module__}.{type(spec).__name__}"
    for modname in {type(spec).__module__, *(c.__module__ for c in type(spec).__mro__)}:
        with contextlib.suppress(Exception):
            _patch_v2_module(importlib.import_module(modname))
    spec.init_cudagraph_manager(mode)
    sc = vllm_config.speculative_config
    k = vllm_config.num_speculative_tokens
    for attr, family in _SPECULATOR_MANAGERS:
        mgr = getattr(spec, attr, None)
        if mgr is None:
            continue
        q = getattr(mgr, "decode_query_len", None) or 1
        summary = summarize_v2(mgr, vllm_config, [q], dispatch=False)
        summary["decode_query_len"] = q
        if family == "drafter_decode":
            # target_dependent_ar `capture`: returns before the decode manager when K == 1
            summary["captured_only_if_num_speculative_tokens_gt_1"] = True
            per_k = v2_decode_per_k(spec, mgr, vllm_config)
            if per_k is not None:
                summary["specialize_spec_tokens"] = per_k
        res[family] = summary
    res["num_speculative_tokens"] = k
    res["dynamic_sd"] = bool(sc.uses_dynamic_speculative_decoding())
    return res


def v2_decode_per_k(spec: Any, mgr: Any, vllm_config: Any) -> dict[str, Any] | None:
    """What the decode manager's `capture(..., specialize_spec_tokens=...)` does (0.32+): with
    dynamic SD and a drafter attention backend that refreshes decode metadata in place, one
    descriptor per K of the dense schedule (0 and 1 excluded). The flag comes from the backend's
    own metadata builder (`supports_draft_decode_metadata_update`, read by the speculator's
    `_configure_decode_metadata_update`); the expansion runs the manager's own `capture` with the
    base class's graph capture stubbed."""
    import inspect

    if "specialize_spec_tokens" not in inspect.signature(mgr.capture).parameters:
        return None
    sc = vllm_config.speculative_config
    out: dict[str, Any] = {"dynamic_sd": bool(sc.uses_dynamic_speculative_decoding())}
    if not out["dynamic_sd"]:
        return out
    flag, why = _draft_decode_metadata_update(vllm_config)
    out["supports_decode_metadata_update"] = flag
    if why:
        out["supports_decode_metadata_update_note"] = why
    if getattr(spec, "num_speculative_steps", None) == 1:
        flag = False
    specialize = bool(flag)
    out["specialize"] = specialize
    if not specialize or flag is None:
        return out
    import vllm.v1.worker.gpu.cudagraph_utils as cu

    saved = cu.CudaGraphManager.capture
    cu.CudaGraphManager.capture = lambda self, *a, **k: None
    try:
        mgr.capture(None, None, None, None, None, None, specialize_spec_tokens=True)
    finally:
        cu.CudaGraphManager.capture = saved
    from vllm.config import CUDAGraphMode

    out["descs"] = [
        [
            mode_name(m),
            d.num_tokens,
            d.num_reqs,
            getattr(d, "uniform_token_count", None),
            getattr(d, "num_speculative_tokens", None),
        ]
        for m in (CUDAGraphMode.PIECEWISE, CUDAGraphMode.FULL)
        for d in mgr._capture_descs.get(m, [])
    ]
    return out


def _draft_decode_metadata_update(vllm_config: Any) -> tuple[bool | None, str | None]:
    """The chosen attention backend's metadata builder, built for one layer, and its
    `supports_draft_decode_metadata_update` (None where the builder cannot be built here)."""
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1 import kv_cache_interface as kvi

    backend_cls = _CHOSEN_BACKEND.get("cls")
    if backend_cls is None:
        return None, "no backend class resolved"
    builder_cls = backend_cls.get_builder_cls()
    if not _init_sets_flag(builder_cls):
        # no builder __init__ in the class's MRO assigns it: the class attribute is the answer
        return bool(getattr(builder_cls, "supports_draft_decode_metadata_update", False)), None
    mc = vllm_config.model_config
    use_mla = bool(getattr(mc, "use_mla", False))
    spec_cls = kvi.MLAAttentionSpec if use_mla else kvi.FullAttentionSpec
    name = "model.layers.0.self_attn.attn"
    ctx = vllm_config.compilation_config.static_forward_context
    added = name not in ctx
    if added:
        ctx[name] = _fake_attention_layer(vllm_config, backend_cls)
    try:
        kv_spec = spec_cls(
            block_size=vllm_config.cache_config.block_size or 16,
            num_kv_heads=mc.get_num_kv_heads(vllm_config.parallel_config),
            head_size=mc.get_head_size(),
            dtype=mc.dtype,
        )
        # The builder reads its DCP group's size (get_dcp_world_size_and_rank: (1, 0) while the
        # group is uninitialised, as here): one rank's group of the configured DCP size. The
        # speculator's cache is DCP-sharded as the target's (its dcp_size is the target's).
        import vllm.distributed.parallel_state as ps

        saved_dcp = getattr(ps, "_DCP", None)
        dcp = vllm_config.parallel_config.decode_context_parallel_size
        if dcp > 1 and hasattr(ps, "_DCP"):
            ps._DCP = types.SimpleNamespace(world_size=dcp, rank_in_group=0, rank=0, device_group=None)
        try:
            with set_current_vllm_config(vllm_config):
                builder = builder_cls(kv_spec, [name], vllm_config, torch.device("cpu"))
        finally:
            if hasattr(ps, "_DCP"):
                ps._DCP = saved_dcp
        return bool(getattr(builder, "supports_draft_decode_metadata_update", False)), None
    except Exception as e:
        return None, f"{backend_cls.get_name()} builder not built here ({type(e).__name__}: {str(e)[:160]})"
    finally:
        if added:
            ctx.pop(name, None)


def _init_sets_flag(builder_cls: Any) -> bool:
    """Whether some `__init__` in the builder's MRO assigns supports_draft_decode_metadata_update."""
    import inspect

    for cls in builder_cls.__mro__:
        init = cls.__dict__.get("__init__")
        if init is None:
            continue
        try:
            src = inspect.getsource(init)
        except (OSError, TypeError):
            continue
        if "supports_draft_decode_metadata_update =" in src:
            return True
    return False


def _fake_attention_layer(vllm_config: Any, backend_cls: Any) -> Any:
    """One attention layer as the builders read it from the static forward context: an
    AttentionLayerBase whose impl is the backend's impl class (no weights, nothing runs)."""
    from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase

    mc = vllm_config.model_config
    hf = mc.hf_text_config

    class _Layer(AttentionLayerBase):  # type: ignore[misc]
        def get_attn_backend(self) -> Any:
            return backend_cls

        def get_kv_cache_spec(self, vllm_config: Any) -> None:
            return None

    layer = _Layer.__new__(_Layer)
    impl_cls = backend_cls.get_impl_cls()
    impl = impl_cls.__new__(impl_cls)
    impl_attrs = dict(
        sliding_window=None,
        logits_soft_cap=None,
        sinks=None,
        scale=mc.get_head_size() ** -0.5,
        num_heads=mc.get_num_attention_heads(vllm_config.parallel_config),
        num_kv_heads=mc.get_num_kv_heads(vllm_config.parallel_config),
        head_size=mc.get_head_size(),
        kv_cache_dtype=vllm_config.cache_config.cache_dtype,
    )
    for k, v in impl_attrs.items():
        with contextlib.suppress(Exception):
            object.__setattr__(impl, k, v)
    attrs = dict(
        impl=impl,
        q_lora_rank=getattr(hf, "q_lora_rank", None),
        kv_lora_rank=getattr(hf, "kv_lora_rank", None),
        qk_nope_head_dim=getattr(hf, "qk_nope_head_dim", None),
        qk_rope_head_dim=getattr(hf, "qk_rope_head_dim", None),
        v_head_dim=getattr(hf, "v_head_dim", None),
        num_heads=mc.get_num_attention_heads(vllm_config.parallel_config),
        num_kv_heads=mc.get_num_kv_heads(vllm_config.parallel_config),
        head_size=mc.get_head_size(),
        non_causal_multi_token_decode=False,
    )
    for k, v in attrs.items():
        object.__setattr__(layer, k, v)
    return layer


def v2_parallel_speculator(vllm_config: Any, mode: Any) -> dict[str, Any]:
    """The V2 speculator vLLM's own `init_speculator` builds (DFlash, DSpark), its cudagraph
    manager made by its own `init_cudagraph_manager(mode)` after the draft attention's support
    level is set as `set_attn` sets it (the chosen backend's builder on the draft's KV spec, under
    the speculator's `attn_vllm_config`)."""
    import inspect

    import torch
    from vllm.v1.worker.gpu.attn_utils import AttentionCGSupportInfo
    from vllm.v1.worker.gpu.spec_decode import init_speculator

    args = [vllm_config, torch.device("cpu")]
    if "req_states" in inspect.signature(init_speculator).parameters:
        args.append(None)  # the ngram speculator's; the parallel drafters do not read it
    sp = init_speculator(*args)
    out: dict[str, Any] = {
        "class": type(sp).__name__,
        "num_query_per_req": sp.num_query_per_req,
        "enable_adaptive_verification": bool(getattr(sp, "enable_adaptive_verification", False)),
    }
    backend_cls: Any = _CHOSEN.get("draft_backend_cls") or _CHOSEN.get("backend_cls")
    attn_vc = getattr(sp, "attn_vllm_config", vllm_config)
    support = _draft_spec_support(backend_cls, attn_vc, sp.draft_model_config)
    out["draft_attention"] = {
        "backend": backend_cls.get_name(),
        "use_non_causal": bool(getattr(attn_vc.attention_config, "use_non_causal", False)),
        "cg_support": support.name,
    }
    sp.attn_cg_support = AttentionCGSupportInfo(support, backend_cls.get_name())
    sp.init_cudagraph_manager(mode)
    mgr = sp.query_cudagraph_manager
    out["manager_class"] = type(mgr).__name__
    out["decode_query_len"] = mgr.decode_query_len
    out["query"] = summarize_v2(mgr, vllm_config, [mgr.decode_query_len], dispatch=False)
    return out


def _dump(out: dict[str, Any], fh: TextIO, compact: bool) -> None:
    json.dump(out, fh, indent=None if compact else 1, default=str)
    fh.write("\n")


def _event(**fields: Any) -> None:
    """One protocol line on the real stdout (batch mode)."""
    sys.__stdout__.write(EVENT + json.dumps(fields, default=str) + "\n")  # type: ignore[union-attr]
    sys.__stdout__.flush()  # type: ignore[union-attr]


def _import_vllm() -> str:
    """Stubs, fake platform, the heavy imports; vLLM's version. Raises what the import raised."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        setup_process()
        preload()
    import vllm

    return str(vllm.__version__)


def _vllm_location() -> str | None:
    """The folder of the vLLM package that answers (a release's site-packages, or a checkout on
    PYTHONPATH or installed editable): which code gave the answer."""
    module = sys.modules.get("vllm")
    where = getattr(module, "__file__", None)
    return str(Path(where).parent) if where else None


def _child(path: str, target: Path, compact: bool, no_log: bool) -> None:
    """A forked child: one config, its answer written to `target` (the error to `target`.error)."""
    code = 0
    try:
        cfg = load_config(path)
        with contextlib.redirect_stdout(io.StringIO()):
            out = run(cfg)
        if no_log:
            out.pop("log", None)
        with open(target, "w") as fh:
            _dump(out, fh, compact)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(f"{target}.error").write_text(traceback.format_exc()[-4000:])
        code = 1
    finally:
        os._exit(code)


def _finished(pid: int) -> int | None:
    """The exit status of child `pid` when it has ended (reaped), else None."""
    done, status = os.waitpid(pid, os.WNOHANG)
    return None if done == 0 else status


def batch(
    paths: list[str], out_dir: Path, *, compact: bool, no_log: bool, timeout_s: float, jobs: int
) -> int:
    """Import vLLM once, then one forked child per config (`jobs` at a time, each killed after
    `timeout_s` seconds; 0: no limit); a protocol event per config as it ends."""
    t0 = time.perf_counter()
    try:
        version = _import_vllm()
    except Exception as e:
        _event(event="fatal", error=f"{type(e).__name__}: {e}".strip())
        return EXIT_NO_VLLM
    _event(
        event="preloaded",
        vllm_version=version,
        vllm_location=_vllm_location(),
        seconds=round(time.perf_counter() - t0, 1),
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    pending = list(enumerate(paths))
    running: dict[int, tuple[int, str, Path, float]] = {}
    while pending or running:
        while pending and len(running) < max(1, jobs):
            index, path = pending.pop(0)
            target = out_dir / f"{Path(path).stem}.{version}.json"
            pid = os.fork()
            if pid == 0:
                _child(path, target, compact, no_log)
            running[pid] = (index, path, target, time.monotonic())
        ended = False
        for pid, (index, path, target, started) in list(running.items()):
            seconds = round(time.monotonic() - started, 1)
            status = _finished(pid)
            if status is None and timeout_s and seconds > timeout_s:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                _event(event="done", index=index, config=path, status="timeout", seconds=seconds)
            elif status is None:
                continue
            elif os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
                _event(event="done", index=index, config=path, status="ok", path=str(target), seconds=seconds)
            else:
                err = Path(f"{target}.error")
                text = err.read_text() if err.exists() else f"the child ended with status {status}"
                _event(event="done", index=index, config=path, status="failed", error=text, seconds=seconds)
            del running[pid]
            ended = True
        if not ended:
            time.sleep(0.05)
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configs", nargs="+", help="JSON config files ('-' = stdin)")
    ap.add_argument("--compact", action="store_true", help="single-line JSON")
    ap.add_argument("--no-log", action="store_true", help="omit captured log lines")
    ap.add_argument(
        "--out-dir",
        help="batch mode: write OUT_DIR/<config stem>.<vllm version>.json for "
        "each config (heavy imports happen once; one forked child per config)",
    )
    ap.add_argument("--timeout", type=float, default=0.0, help="batch mode: seconds a config may take")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="batch mode: configs at a time")
    ap.add_argument("--models-dir", help="where a relative model_dir starts (default: the working directory)")
    ap.add_argument("--usage-context", choices=USAGE_CONTEXTS, default="OPENAI_API_SERVER")
    args = ap.parse_args(argv)
    _SETTINGS["models_dir"] = args.models_dir
    _SETTINGS["usage_context"] = args.usage_context
    if args.out_dir:
        return batch(
            args.configs,
            Path(args.out_dir),
            compact=args.compact,
            no_log=args.no_log,
            timeout_s=args.timeout,
            jobs=args.jobs,
        )
    if len(args.configs) != 1:
        ap.error("several configs need --out-dir")
    try:
        _import_vllm()
    except Exception as e:
        sys.stderr.write(f"vllm_oracle: cannot import vLLM: {type(e).__name__}: {e}\n")
        return EXIT_NO_VLLM
    cfg = load_config(args.configs[0])
    with contextlib.redirect_stdout(io.StringIO()):
        out = run(cfg)
    if args.no_log:
        out.pop("log", None)
    _dump(out, sys.stdout, args.compact)
    return 0


if __name__ == "__main__":
    sys.exit(main())
