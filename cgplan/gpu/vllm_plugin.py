"""What cgplan's vLLM general plugin reads and hooks inside a running engine (cgplan.plugin
composes it with the planner).

Nothing here changes what the engine does: the hooks call vLLM's own function first and then
only read. Names are vLLM's, checked in the sources of 0.26.0 and 0.33.0:

* `vllm.v1.worker.gpu_worker.Worker.compile_or_warm_up_model` (both releases, both runners): it
  compiles, captures (`model_runner.capture_model()`, unless enforce_eager) and warms up; after
  it returns the engine is ready to serve, so the start-up check runs then and counting starts;
* `GPUModelRunner.capture_model` of model runner V1 (`vllm.v1.worker.gpu_model_runner`) and V2
  (`vllm.v1.worker.gpu.model_runner`): the device's free memory around it is the graph pool
  (what vLLM's own "took X GiB" measures);
* V1: `runner.cudagraph_dispatcher` (`CudagraphDispatcher`): `cudagraph_keys` (mode → the
  `BatchDescriptor`s captured: `get_capture_descs` is exactly these), `dispatch(num_tokens=,
  uniform_decode=, has_lora=, num_active_loras=, valid_modes=, invalid_modes=)` → (mode, desc);
* V2: `runner.cudagraph_manager` (`CudaGraphManager` / 0.33 `ModelCudaGraphManager`):
  `_capture_descs` (mode → the `BatchExecutionDescriptor`s it captures) and `dispatch(num_reqs,
  num_tokens, uniform_token_count, num_active_loras, ...)` → desc (`desc.cg_mode`).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from cgplan.core.compare.measure import GraphMeasurement, MeasuredCapture
from cgplan.core.model.types import DispatchRange
from cgplan.gpu.vllm_backend import probe_dispatch

WORKER_MODULE = "vllm.v1.worker.gpu_worker"
V1_RUNNER_MODULE = "vllm.v1.worker.gpu_model_runner"
V2_RUNNER_MODULE = "vllm.v1.worker.gpu.model_runner"
_MARK = "_cgplan_plugin_wrapped"


# --------------------------------------------------------------------------------------------
# Patching vLLM's classes when (and only when) their modules are imported
# --------------------------------------------------------------------------------------------


def wrap_method(cls: type, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> bool:
    """Replace `cls.name` by `make(original)` once (vLLM may load a plugin several times)."""
    orig = cls.__dict__.get(name)
    if orig is None or getattr(orig, _MARK, False):
        return False
    new = make(orig)
    setattr(new, _MARK, True)
    new.__wrapped__ = orig  # type: ignore[attr-defined]
    setattr(cls, name, new)
    return True


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `patch(module)` right after one of `names` is imported. The API server process of
    `vllm serve` loads general plugins too but never imports the worker: nothing heavy is
    imported on its behalf."""

    def __init__(self, patches: dict[str, Callable[[ModuleType], None]]) -> None:
        self.patches = patches

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        patch = self.patches.get(fullname)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                loader = spec.loader
                orig_exec = loader.exec_module

                def exec_module(module: ModuleType, _orig: Any = orig_exec, _patch: Any = patch) -> None:
                    _orig(module)
                    _patch(module)

                loader.exec_module = exec_module  # type: ignore[method-assign]
                return spec
            if spec is not None:
                return spec
        return None


def on_import(patches: dict[str, Callable[[ModuleType], None]]) -> None:
    """Apply each patch now if its module is loaded, else when it is imported."""
    pending = {}
    for name, patch in patches.items():
        module = sys.modules.get(name)
        if module is not None:
            patch(module)
        else:
            pending[name] = patch
    if pending and not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(pending))


# --------------------------------------------------------------------------------------------
# Reading the engine
# --------------------------------------------------------------------------------------------


def first_tp_rank(worker: Any) -> bool:
    """Whether `worker` is the one whose runner is checked and counted: tensor-parallel rank 0 of
    its data-parallel rank (the ranks of one TP group run the same steps)."""
    try:
        from vllm.distributed.parallel_state import get_tp_group

        return int(get_tp_group().rank_in_group) == 0
    except Exception:  # no TP group (a test's fake engine): the worker's own rank
        return int(getattr(worker, "rank", 0) or 0) == 0


def runner_kind(runner: Any) -> str:
    """v1 or v2, by the runner's class."""
    return "v2" if type(runner).__module__.startswith("vllm.v1.worker.gpu.") else "v1"


def _mode_name(mode: Any) -> str:
    return str(getattr(mode, "name", mode))


def decode_query_len(runner: Any, vllm_config: Any) -> int:
    """Tokens per request of a uniform-decode step (1 + K)."""
    q = getattr(runner, "uniform_decode_query_len", None) or getattr(
        getattr(runner, "cudagraph_manager", None), "decode_query_len", None
    )
    return int(q or 1 + (getattr(vllm_config, "num_speculative_tokens", 0) or 0))


def captured_graphs(runner: Any, vllm_config: Any) -> tuple[GraphMeasurement, ...] | None:
    """The target model's graphs the engine captured, as cgplan's capture backend records them
    (FULL: its request count; uniform: its query length); None when the runner holds neither a
    dispatcher nor a manager cgplan knows."""
    q = decode_query_len(runner, vllm_config)
    rows: list[tuple[str, int, int | None, int | None, int]] = []
    mgr = getattr(runner, "cudagraph_manager", None)
    disp = getattr(runner, "cudagraph_dispatcher", None)
    if runner_kind(runner) == "v2":
        if mgr is None:
            return ()  # V2 builds no manager without graphs (enforce_eager, mode NONE)
        descs = getattr(mgr, "_capture_descs", None)
        if not isinstance(descs, dict):
            return None
        rows += [
            (
                _mode_name(mode),
                int(d.num_tokens),
                d.num_reqs,
                getattr(d, "uniform_token_count", None),
                int(getattr(d, "num_active_loras", 0) or 0),
            )
            for mode, items in descs.items()
            for d in items
        ]
    else:
        keys = getattr(disp, "cudagraph_keys", None)
        if not isinstance(keys, dict):
            return None
        rows += [
            (
                _mode_name(mode),
                int(d.num_tokens),
                d.num_reqs if _mode_name(mode) == "FULL" else None,
                q if getattr(d, "uniform", False) else None,
                int(getattr(d, "num_active_loras", 0) or 0),
            )
            for mode, items in keys.items()
            for d in items
        ]
    rows.sort(key=lambda r: (r[0] != "PIECEWISE", -r[1]))
    return tuple(
        GraphMeasurement(i, "target", mode, n, reqs, ql, 0, 0.0, 0.0, None, 0, loras)
        for i, (mode, n, reqs, ql, loras) in enumerate(rows)
    )


def measured_capture(runner: Any, vllm_config: Any) -> MeasuredCapture | None:
    """The engine's captured set and its dispatcher's answer for every uniform-decode and mixed
    batch (vLLM's own dispatch, driven as `cgplan capture` drives it: a pure lookup)."""
    graphs = captured_graphs(runner, vllm_config)
    if graphs is None:
        return None
    uniform: dict[int, tuple[DispatchRange, ...]] = {}
    mixed: tuple[DispatchRange, ...] = ()
    if graphs:
        uniform, mixed = probe_dispatch(runner, vllm_config)
    cc = vllm_config.compilation_config
    return MeasuredCapture(
        backend="vllm",
        status="complete",
        model_runner=runner_kind(runner),
        cudagraph_mode=_mode_name(cc.cudagraph_mode),
        capture_sizes=tuple(cc.cudagraph_capture_sizes or ()),
        max_capture_size=cc.max_cudagraph_capture_size,
        graphs=graphs,
        uniform_decode=uniform,
        mixed=mixed,
    )


def engine_doc(vllm_config: Any, runner: Any, platform: str | None) -> tuple[dict[str, Any], list[str]]:
    """A cgplan config document of the engine's resolved config (the keys `vllm serve` takes),
    and what it leaves out by name. The capture sizes and mode are the resolved ones: the engine
    no longer holds what its flags said, so the check is of the captured set and the dispatch
    against cgplan's rules for these sizes, not of the ladder the flags derived."""
    mc, sc, pc = vllm_config.model_config, vllm_config.scheduler_config, vllm_config.parallel_config
    cc = vllm_config.compilation_config
    doc: dict[str, Any] = {
        "model": str(mc.model),
        "max_model_len": int(mc.max_model_len),
        "max_num_seqs": int(sc.max_num_seqs),
        "max_num_batched_tokens": int(sc.max_num_batched_tokens),
        "tensor_parallel_size": int(pc.tensor_parallel_size),
        "enforce_eager": bool(mc.enforce_eager),
    }
    left_out: list[str] = []
    for key in ("pipeline_parallel_size", "data_parallel_size"):
        value = int(getattr(pc, key, 1) or 1)
        if value != 1:
            doc[key] = value
    cc_doc: dict[str, Any] = {"cudagraph_mode": _mode_name(cc.cudagraph_mode)}
    if cc.cudagraph_capture_sizes:
        cc_doc["cudagraph_capture_sizes"] = [int(s) for s in cc.cudagraph_capture_sizes]
        cc_doc["max_cudagraph_capture_size"] = int(cc.max_cudagraph_capture_size)
    doc["compilation_config"] = cc_doc
    spec = getattr(vllm_config, "speculative_config", None)
    if spec is not None:
        sd: dict[str, Any] = {
            "method": str(spec.method),
            "num_speculative_tokens": int(spec.num_speculative_tokens),
        }
        draft = getattr(getattr(spec, "draft_model_config", None), "model", None)
        if draft is not None and spec.method not in ("ngram", "suffix"):
            sd["model"] = str(draft)
        for key in ("prompt_lookup_min", "prompt_lookup_max", "num_speculative_tokens_per_batch_size"):
            given = getattr(spec, key, None)
            if given is not None:  # the dynamic-SD schedule: (start, end, K) tuples, as YAML lists
                sd[key] = [list(e) for e in given] if isinstance(given, list | tuple) else given
        doc["speculative_config"] = sd
    lora = getattr(vllm_config, "lora_config", None)
    if lora is not None:
        doc["enable_lora"] = True
        doc["max_loras"] = int(lora.max_loras)
    cg: dict[str, Any] = {"vllm_version": _vllm_version(), "model_runner": runner_kind(runner)}
    if platform is not None:
        cg["platform"] = platform
    doc["cgplan"] = cg
    return doc, left_out


def _vllm_version() -> str:
    import vllm

    return str(getattr(vllm, "__version__", "unknown"))


def gpu_name() -> str | None:
    """The device's name as cgplan's GPU table spells it: `NVIDIA H100 80GB HBM3` → `H100` (the
    longest table name the device's name starts with, as a word); another name as the device
    gives it (planning then refuses it by name)."""
    import torch

    name = str(torch.cuda.get_device_name(torch.cuda.current_device())).removeprefix("NVIDIA ").strip()
    return platform_name(name)


def platform_name(device_name: str) -> str | None:
    """The device's name (without `NVIDIA `) as cgplan's GPU table spells it.

    >>> platform_name("H100 80GB HBM3"), platform_name("H100 NVL"), platform_name("H200")
    ('H100', 'H100 NVL', 'H200')
    """
    from cgplan.core.vllm.gpus import GPUS

    for g in sorted(GPUS, key=lambda g: -len(g.name)):
        if device_name == g.name or device_name.startswith(g.name + " "):
            return g.name
    return device_name or None


@dataclass
class MemoryWindow:
    """Device memory around `capture_model` (bytes)."""

    free_before: int | None = None
    free_after: int | None = None
    reserved_before: int | None = None
    reserved_after: int | None = None
    returned: int | None = None
    """`capture_model()`'s return value (V1 and V2 return the graph memory in bytes)."""
    capture_s: float | None = None

    @property
    def pool_bytes(self) -> int | None:
        if self.free_before is None or self.free_after is None:
            return None
        return self.free_before - self.free_after

    @property
    def reserved_delta_bytes(self) -> int | None:
        if self.reserved_before is None or self.reserved_after is None:
            return None
        return self.reserved_after - self.reserved_before


def read_memory() -> tuple[int, int]:
    """(free device bytes, PyTorch reserved bytes) after the device is idle."""
    import torch

    torch.cuda.synchronize()
    return int(torch.cuda.mem_get_info()[0]), int(torch.cuda.memory_reserved())


def before_capture(window: MemoryWindow) -> None:
    """The baseline. vLLM empties the allocator's cache itself before it reads its own (V1
    `capture_model`, 0.26.0-0.33.0): releasing it first here makes both baselines the same, and
    changes nothing the engine would not do a moment later."""
    import torch

    torch.cuda.empty_cache()
    window.free_before, window.reserved_before = read_memory()
    window.capture_s = time.perf_counter()


def after_capture(window: MemoryWindow, returned: object) -> None:
    window.free_after, window.reserved_after = read_memory()
    if window.capture_s is not None:
        window.capture_s = time.perf_counter() - window.capture_s
    window.returned = int(returned) if isinstance(returned, int) and not isinstance(returned, bool) else None


# --------------------------------------------------------------------------------------------
# Counting dispatch outcomes while serving
# --------------------------------------------------------------------------------------------


class Recorder(Protocol):
    """What a dispatch wrapper calls: `record(is_decode, mode, size)` (mode: vLLM's enum member),
    `replace_last(...)` for a data-parallel re-dispatch of the same step; `paused` while vLLM runs
    a dummy batch (warmup, an idle data-parallel rank)."""

    paused: int

    def record(self, is_decode: bool, mode: Any, size: int) -> None: ...

    def replace_last(self, is_decode: bool, mode: Any, size: int) -> None: ...


@dataclass
class DispatchHook:
    """The counting wrapper of one engine's dispatcher, on or off (off: vLLM's own method, as
    if the plugin were not there: what the overhead is measured against)."""

    owner: Any
    """The dispatcher (V1) or manager (V2) instance."""
    wrapper: Callable[..., Any]

    def on(self) -> None:
        self.owner.dispatch = self.wrapper  # an instance attribute shadows the class's method

    def off(self) -> None:
        self.owner.__dict__.pop("dispatch", None)

    @property
    def is_on(self) -> bool:
        return self.owner.__dict__.get("dispatch") is self.wrapper


def v1_wrapper(orig: Callable[..., Any], rec: Recorder, query_len: int) -> Callable[..., Any]:
    """V1 `CudagraphDispatcher.dispatch`, counting one step per call made by the step's own
    `_determine_batch_execution_and_padding` (it passes `uniform_decode=` by keyword; the
    kv-sharing fast-prefill call for the decoder portion does not, and is not a step). A call with
    `valid_modes` while serving is the data-parallel re-dispatch of the same step: it replaces
    the step's first count."""

    def dispatch(*args: Any, **kwargs: Any) -> Any:
        out = orig(*args, **kwargs)
        if rec.paused or "uniform_decode" not in kwargs:
            return out
        try:
            num_tokens = kwargs["num_tokens"] if "num_tokens" in kwargs else args[0]
            decode = bool(kwargs["uniform_decode"])
            size = num_tokens // query_len if decode else num_tokens
            if kwargs.get("valid_modes") is None:
                rec.record(decode, out[0], size)
            else:
                rec.replace_last(decode, out[0], size)
        except Exception:  # counting must never break a step
            pass
        return out

    return dispatch


def v2_wrapper(orig: Callable[..., Any], rec: Recorder, query_len: int) -> Callable[..., Any]:
    """V2 `CudaGraphManager.dispatch(num_reqs, num_tokens, uniform_token_count, ...)`: one step
    per positional call (the step's `dispatch_cg_and_sync_dp`; 0.33's fast-prefill logits call
    passes keywords and is not a step). Decode: `uniform_token_count` == 1 + K."""

    def dispatch(*args: Any, **kwargs: Any) -> Any:
        out = orig(*args, **kwargs)
        if rec.paused or len(args) < 3:
            return out
        try:
            decode = args[2] == query_len
            rec.record(decode, out.cg_mode, args[0] if decode else args[1])
        except Exception:
            pass
        return out

    return dispatch


def dispatch_hook(runner: Any, vllm_config: Any, rec: Recorder) -> tuple[DispatchHook | None, str | None]:
    """The counting hook for this runner (not yet on), or why there is none, in words."""
    q = decode_query_len(runner, vllm_config)
    dp = int(getattr(vllm_config.parallel_config, "data_parallel_size", 1) or 1)
    if runner_kind(runner) == "v2":
        mgr = getattr(runner, "cudagraph_manager", None)
        if mgr is None:
            return None, "model runner V2 built no CUDA-graph manager (no graphs): every step runs eager"
        if dp > 1:
            return None, (
                "model runner V2 with data_parallel_size > 1 dispatches twice per step (before and after "
                "the ranks agree): per-step counts are not modelled there"
            )
        return DispatchHook(mgr, v2_wrapper(type(mgr).dispatch.__get__(mgr), rec, q)), None
    disp = getattr(runner, "cudagraph_dispatcher", None)
    if disp is None:
        return None, "the V1 runner has no cudagraph_dispatcher"
    return DispatchHook(disp, v1_wrapper(type(disp).dispatch.__get__(disp), rec, q)), None


def pause_in_dummy_runs(runner: Any, rec: Recorder) -> None:
    """Dummy batches (warmup, an idle data-parallel rank's step) are not served steps: the
    runner's `_dummy_run` pauses counting while it runs."""
    orig = getattr(runner, "_dummy_run", None)
    if orig is None or getattr(orig, _MARK, False):
        return

    def _dummy_run(*args: Any, **kwargs: Any) -> Any:
        rec.paused += 1
        try:
            return orig(*args, **kwargs)
        finally:
            rec.paused -= 1

    setattr(_dummy_run, _MARK, True)
    runner._dummy_run = _dummy_run
