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
"""EngineArgs fields for the parallel, LoRA and DBO configs (cgplan #16)."""


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
    from vllm.config import CUDAGraphMode
    from vllm.v1.cudagraph_dispatcher import CudagraphDispatcher

    res: dict[str, Any] = {}
    disp = CudagraphDispatcher(vllm_config)
    disp.initialize_cudagraph_keys(mode, q)
    res["target"] = summarize_v1(disp, vllm_config, q, cfg)

    sc = vllm_config.speculative_config
    if sc is not None and (
        sc.use_eagle() or sc.uses_draft_model() or getattr(sc, "uses_extract_hidden_states", lambda: False)()
    ):
        # Mirrors llm_base_proposer.initialize_cudagraph_keys: PIECEWISE only.
        if not sc.enforce_eager and mode.mixed_mode() in (
            CUDAGraphMode.PIECEWISE,
            CUDAGraphMode.FULL,
        ):
            dmode = CUDAGraphMode.PIECEWISE
        else:
            dmode = CUDAGraphMode.NONE
        ddisp = CudagraphDispatcher(vllm_config)
        ddisp.initialize_cudagraph_keys(dmode)
        d = summarize_v1(ddisp, vllm_config, 1, cfg, drafter=True)
        d["mode"] = mode_name(dmode)
        res["drafter"] = d
    return res


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

    from vllm.config import CUDAGraphMode, set_current_vllm_config

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

        # Drafter (EAGLE / MTP / draft model): autoregressive speculator.
        if sc is not None and (sc.use_eagle() or sc.uses_draft_model()):
            spec_cls = None
            for modname in (
                "vllm.v1.worker.gpu.spec_decode.target_dependent_ar.cudagraph_utils",
                "vllm.v1.worker.gpu.spec_decode.autoregressive.cudagraph_utils",
            ):
                try:
                    m = importlib.import_module(modname)
                    spec_cls = m.SpeculatorCudaGraphManager
                    res["drafter_manager_module"] = modname
                    break
                except Exception:
                    continue
            if spec_cls is not None:
                k = vllm_config.num_speculative_tokens
                pre = make_manager(spec_cls, vllm_config, mode, k + 1)
                res["drafter_prefill"] = summarize_v2(pre, vllm_config, [k + 1], dispatch=False)
                dmode = (
                    CUDAGraphMode.FULL_DECODE_ONLY
                    if mode.decode_mode() == CUDAGraphMode.FULL
                    else CUDAGraphMode.NONE
                )
                dec = make_manager(spec_cls, vllm_config, dmode, 1)
                res["drafter_decode"] = summarize_v2(dec, vllm_config, [1], dispatch=False)
                res["drafter_decode"]["captured_only_if_num_speculative_tokens_gt_1"] = True
    return res


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
