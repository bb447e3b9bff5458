"""vLLM backend: start a real engine in-process and instrument its own capture path.

Nothing of vLLM's capture logic is copied: cgplan wraps the functions vLLM calls for
each descriptor (V1 `GPUModelRunner._warmup_and_capture`, the V1 drafter's
`dummy_run`, V2 `CudaGraphManager.capture`'s forward factory) to know *which* graph is
being captured, and measures each `torch.cuda.graph` section. After start-up it drives
the engine's own dispatcher (V1 `CudagraphDispatcher` or V2 `CudaGraphManager`) with
every uniform-decode batch of every dynamic-SD tier and every mixed token count.

With tensor_parallel_size > 1 the engine runs vLLM's own MultiprocExecutor: its workers are
forked from this process after the hooks are in place, so they inherit them and each
measures its own rank on its own GPU; `collective_rpc` brings every rank's records back.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from typing import Any

from cgplan.core.compare.measure import GraphMeasurement, MeasuredCapture, RankMeasurement, VllmFigures
from cgplan.core.model.spec import PlanInput
from cgplan.core.model.types import DispatchRange, as_dispatch_mode
from cgplan.core.vllm.log_formats import log_format_for
from cgplan.errors import GpuUnavailableError
from cgplan.gpu.nvml import NvmlSession, nvml_session
from cgplan.gpu.recorder import GraphRecorder, NullProgress, hook_torch_graph_capture


class _LogTap(logging.Handler):
    """Keeps vLLM's log lines (for its own figures and for `cgplan logs` fixtures)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")
        except Exception:
            self.lines.append(str(record.msg))


def vllm_figures(
    lines: list[str], returned_bytes: int | None, vllm_version: str | None = None
) -> VllmFigures:
    """vLLM's own capture, estimate and KV-cache figures from its log lines, read with the log
    format of the release that printed them (`cgplan logs` reads them with the same table); the
    last of each wins (V2's profiling capture prints "Graph capturing finished" first)."""
    fmt = log_format_for(vllm_version)
    cap = est = kv_t = kv_g = None
    ave: str | None = None
    for line in lines:
        if m := fmt.capture_finished.search(line):
            cap = (float(m.group("secs")), float(m.group("gib")))
        if m := fmt.estimate.search(line):
            est = float(m.group("gib"))
        if m := fmt.pool_memory.search(line):
            ave = m.group(0)
        if m := fmt.kv_tokens.search(line):
            kv_t = int(m.group("tokens").replace(",", ""))
        if m := fmt.kv_memory.search(line):
            kv_g = float(m.group("gib"))
    return VllmFigures(
        capture_finished_secs=cap[0] if cap else None,
        capture_took_gib=cap[1] if cap else None,
        capture_returned_bytes=returned_bytes,
        estimated_cudagraph_gib=est,
        actual_vs_estimated=ave,
        kv_cache_tokens=kv_t,
        available_kv_cache_gib=kv_g,
    )


def installed_vllm_version() -> str:
    """The importable vLLM's version, or GpuUnavailableError."""
    try:
        import vllm
    except ImportError as e:
        raise GpuUnavailableError(
            f"vLLM is not importable ({e}); install it (pip install 'cgplan[gpu]') or use --backend torch"
        ) from None
    return str(getattr(vllm, "__version__", "unknown"))


def engine_kwargs(inp: PlanInput, raw: dict[str, Any], base_dir: str) -> dict[str, Any]:
    """LLM(...) keyword arguments for the config: dummy weights, no tokenizer, no hub."""
    model = (
        raw["model"]
        if os.path.isabs(raw["model"])
        else os.path.normpath(os.path.join(base_dir, raw["model"]))
    )
    kw: dict[str, Any] = {
        "model": model,
        "load_format": "dummy",
        "skip_tokenizer_init": True,
        "max_model_len": inp.max_model_len,
        "max_num_seqs": inp.max_num_seqs,
        "max_num_batched_tokens": inp.max_num_batched_tokens,
        "tensor_parallel_size": inp.tensor_parallel_size,
        "enforce_eager": inp.enforce_eager,
        "seed": 0,
    }
    if inp.tensor_parallel_size > 1:
        # Named rather than left to vLLM's default, which is Ray inside a Ray placement group:
        # Ray's workers are not forked from here and would not carry cgplan's hooks.
        kw["distributed_executor_backend"] = "mp"
    if inp.performance_mode is not None:
        kw["performance_mode"] = inp.performance_mode
    if inp.optimization_level != 2:
        kw["optimization_level"] = inp.optimization_level
    if inp.attention_backend is not None:
        kw["attention_backend"] = inp.attention_backend
    for key in ("gpu_memory_utilization", "dtype", "kv_cache_dtype", "block_size"):
        if key in raw:
            kw[key] = raw[key]
    spec = inp.speculative
    if spec is not None:
        sc: dict[str, Any] = {"method": spec.method, "num_speculative_tokens": spec.num_speculative_tokens}
        if spec.num_speculative_tokens_per_batch_size:
            sc["num_speculative_tokens_per_batch_size"] = [
                list(e) for e in spec.num_speculative_tokens_per_batch_size
            ]
        if spec.enforce_eager:
            sc["enforce_eager"] = True
        raw_spec = raw.get("speculative_config") or {}
        if raw_spec.get("model"):
            m = raw_spec["model"]
            sc["model"] = m if os.path.isabs(m) else os.path.normpath(os.path.join(base_dir, m))
        elif spec.method in ("eagle", "eagle3", "draft_model"):
            sc["model"] = model
        if spec.method == "ngram":
            sc["prompt_lookup_min"] = raw_spec.get("prompt_lookup_min", 1)
            sc["prompt_lookup_max"] = raw_spec.get("prompt_lookup_max", 1)
        kw["speculative_config"] = sc
    cc: dict[str, Any] = {}
    if inp.enable_lora:
        # No adapter is loaded: vLLM captures with its own dummy LoRAs (zero-initialised, rank
        # max_lora_rank), one per active-adapter count it captures for.
        kw["enable_lora"] = True
        kw["max_loras"] = inp.max_loras
        if inp.specialize_active_lora:
            kw["specialize_active_lora"] = True
        if "max_lora_rank" in raw:
            kw["max_lora_rank"] = raw["max_lora_rank"]
        # Named even at vLLM's default, so the engine captures the LoRA cases the plan was made for.
        cc["cudagraph_specialize_lora"] = inp.cudagraph_specialize_lora
    if inp.compilation_mode is not None:
        cc["mode"] = inp.compilation_mode
    if inp.cudagraph_mode is not None:
        cc["cudagraph_mode"] = inp.cudagraph_mode.value
    if inp.max_cudagraph_capture_size is not None:
        cc["max_cudagraph_capture_size"] = inp.max_cudagraph_capture_size
    if inp.cudagraph_capture_sizes is not None:
        cc["cudagraph_capture_sizes"] = list(inp.cudagraph_capture_sizes)
    if inp.enable_sp:
        cc["pass_config"] = {"enable_sp": True}
        if inp.sp_min_token_num is not None:
            cc["pass_config"]["sp_min_token_num"] = inp.sp_min_token_num
    if cc:
        kw["compilation_config"] = cc
    return kw


def _wrap(
    stack: ExitStack, owner: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]
) -> None:
    orig = owner.__dict__.get(name)
    if orig is None:
        return
    setattr(owner, name, make(orig))
    stack.callback(setattr, owner, name, orig)


def _subclasses(cls: type) -> Iterator[type]:
    yield cls
    child: type
    for child in cls.__subclasses__():
        yield from _subclasses(child)


class _State:
    runners: list[Any]
    returned_bytes: int | None
    capture_wall_s: float | None
    capture_nvml_delta: int | None
    in_worker: bool
    """True in a forked vLLM worker (set after the fork), where NVML is this rank's own."""
    worker_nvml: NvmlSession | None
    worker_nvml_stack: ExitStack | None

    def __init__(self) -> None:
        self.runners = []
        self.returned_bytes = None
        self.capture_wall_s = None
        self.capture_nvml_delta = None
        self.in_worker = False
        self.worker_nvml = None
        self.worker_nvml_stack = None


@dataclasses.dataclass
class _Handover:
    """What a forked worker takes over from the parent's capture (its own copies, after the fork)."""

    recorder: GraphRecorder
    state: _State
    log_lines: list[str]


_HANDOVER: _Handover | None = None
"""Set while the engine starts with worker processes; a forked worker keeps its copy for good."""


def _after_fork_in_child() -> None:
    handover = _HANDOVER
    if handover is None:
        return
    handover.state.in_worker = True
    # NVML handles opened before a fork are not safe to use after it; the worker opens its
    # own for its GPU when capture starts (the parent holds no NVML session across the fork).
    handover.recorder.nvml = None
    # The parent's progress bar lives in the parent; a copy here would print over it.
    handover.recorder.progress = NullProgress()
    # The lines logged before the fork are the parent's (it keeps them).
    del handover.log_lines[:]


os.register_at_fork(after_in_child=_after_fork_in_child)


@contextmanager
def _hand_over_to_workers(recorder: GraphRecorder, state: _State, log_lines: list[str]) -> Iterator[None]:
    global _HANDOVER
    _HANDOVER = _Handover(recorder, state, log_lines)
    try:
        yield
    finally:
        _HANDOVER = None


def _worker_nvml(runner: Any, recorder: GraphRecorder, state: _State) -> NvmlSession | None:
    """This worker's own NVML session on its GPU, opened once and kept for the worker's life."""
    if state.worker_nvml_stack is None:
        import torch

        device = getattr(runner, "device", None)
        index = getattr(device, "index", None)
        if index is None:
            index = torch.cuda.current_device()
        state.worker_nvml_stack = ExitStack()
        state.worker_nvml = state.worker_nvml_stack.enter_context(nvml_session([int(index)]))
        recorder.nvml = state.worker_nvml
    return state.worker_nvml


@contextmanager
def instrument(
    recorder: GraphRecorder, nvml: NvmlSession | None, state: _State, per_graph: bool = True
) -> Iterator[None]:
    """Hook vLLM's capture path (both runners) for the duration of the engine's start.

    `per_graph=False` keeps only the timing of `capture_model` (to measure the cost of
    the per-graph hooks themselves).
    """
    import torch

    with ExitStack() as stack:
        if per_graph:
            stack.enter_context(hook_torch_graph_capture(recorder))

        def capture_model_wrapper(orig: Callable[..., Any]) -> Callable[..., Any]:
            def capture_model(self: Any, *a: Any, **k: Any) -> Any:
                state.runners.append(self)
                nv = _worker_nvml(self, recorder, state) if state.in_worker else nvml
                recorder.armed = True
                torch.cuda.synchronize()
                # vLLM empties the allocator's cache before it reads its own baseline (V1
                # `capture_model`, 0.26.0: `empty_cache()` then `get_memory_info()`). Reading
                # NVML before that release counted blocks cached by the profile run in the
                # baseline: with an MTP drafter (test-dsv3-mtp1-mns32, H200, 2026-12-01) 60 MiB
                # were cached and the phase read 94 MiB; released first, 154 MiB (moe/call2).
                # Releasing first makes both baselines the same; vLLM releases them anyway a
                # moment later. (vLLM's own "took 0.40 GiB" there is read before its final
                # `empty_cache()`, so it also counts ~250 MiB of warmup blocks freed then; cgplan's
                # end reading is after it: what the graphs keep.)
                torch.cuda.empty_cache()
                used0 = nv.memory_used_bytes() if nv else None
                t0 = time.perf_counter()
                try:
                    out = orig(self, *a, **k)
                finally:
                    recorder.end()
                    recorder.armed = False
                    torch.cuda.synchronize()
                    state.capture_wall_s = round(time.perf_counter() - t0, 3)
                    used1 = nv.memory_used_bytes() if nv else None
                    if used0 is not None and used1 is not None:
                        state.capture_nvml_delta = used1 - used0
                state.returned_bytes = int(out) if isinstance(out, int) else None
                return out

            return capture_model

        # Model runner V1.
        try:
            from vllm.v1.worker.gpu_model_runner import GPUModelRunner as V1Runner

            _wrap(stack, V1Runner, "capture_model", capture_model_wrapper)
            if not per_graph:
                raise ImportError  # timing only: skip the descriptor hooks

            def warmup_and_capture_wrapper(orig: Callable[..., Any]) -> Callable[..., Any]:
                def warmup_and_capture(
                    self: Any, desc: Any, cudagraph_runtime_mode: Any, *a: Any, **k: Any
                ) -> Any:
                    q = getattr(self, "uniform_decode_query_len", None) or (
                        1 + self.vllm_config.num_speculative_tokens
                    )
                    recorder.begin(
                        "target",
                        cudagraph_runtime_mode.name,
                        int(desc.num_tokens),
                        desc.num_reqs if cudagraph_runtime_mode.name == "FULL" else None,
                        q if getattr(desc, "uniform", False) else None,
                        int(getattr(desc, "num_active_loras", 0) or 0),
                    )
                    try:
                        return orig(self, desc, cudagraph_runtime_mode, *a, **k)
                    finally:
                        recorder.end()

                return warmup_and_capture

            _wrap(stack, V1Runner, "_warmup_and_capture", warmup_and_capture_wrapper)
        except ImportError:
            pass
        try:
            if not per_graph:
                raise ImportError
            from vllm.v1.spec_decode.llm_base_proposer import SpecDecodeBaseProposer

            def dummy_run_wrapper(orig: Callable[..., Any]) -> Callable[..., Any]:
                def dummy_run(self: Any, *a: Any, **k: Any) -> Any:
                    with recorder.family("drafter"):
                        return orig(self, *a, **k)

                return dummy_run

            for cls in set(_subclasses(SpecDecodeBaseProposer)):
                _wrap(stack, cls, "dummy_run", dummy_run_wrapper)
        except ImportError:
            pass
        # Model runner V2.
        try:
            from vllm.v1.worker.gpu import cudagraph_utils as cgu
            from vllm.v1.worker.gpu.model_runner import GPUModelRunner as V2Runner

            _wrap(stack, V2Runner, "capture_model", capture_model_wrapper)
            if not per_graph:
                raise ImportError
            model_mgr = getattr(cgu, "ModelCudaGraphManager", None)

            def manager_capture_wrapper(orig: Callable[..., Any]) -> Callable[..., Any]:
                def capture(self: Any, create_forward_fn: Any, *a: Any, **k: Any) -> Any:
                    if (model_mgr is not None and isinstance(self, model_mgr)) or (
                        model_mgr is None and "Speculator" not in type(self).__name__
                    ):
                        family = "target"
                    else:
                        family = "drafter_decode" if self.decode_query_len == 1 else "drafter_prefill"

                    def forward_factory(desc: Any, warmup: bool, *fa: Any, **fk: Any) -> Any:
                        if warmup:
                            recorder.begin(
                                family,
                                desc.cg_mode.name,
                                int(desc.num_tokens),
                                desc.num_reqs,
                                getattr(desc, "uniform_token_count", None),
                                int(getattr(desc, "num_active_loras", 0) or 0),
                            )
                        return create_forward_fn(desc, warmup, *fa, **fk)

                    try:
                        return orig(self, forward_factory, *a, **k)
                    finally:
                        recorder.end()

                return capture

            _wrap(stack, cgu.CudaGraphManager, "capture", manager_capture_wrapper)
        except ImportError:
            pass
        yield


def _compress(rows: list[tuple[int, str, int | None, int | None]]) -> tuple[DispatchRange, ...]:
    out: list[DispatchRange] = []
    for n, mode, tokens, reqs in rows:
        if mode == "NONE":
            tokens = reqs = None
        last = out[-1] if out else None
        if (
            last
            and (last.mode, last.padded_tokens, last.padded_reqs) == (mode, tokens, reqs)
            and last.last == n - 1
        ):
            out[-1] = DispatchRange(last.first, n, as_dispatch_mode(mode), tokens, reqs)
        else:
            out.append(DispatchRange(n, n, as_dispatch_mode(mode), tokens, reqs))
    return tuple(out)


def probe_dispatch(
    runner: Any, vllm_config: Any, num_active_loras: int = 0
) -> tuple[dict[int, tuple[DispatchRange, ...]], tuple[DispatchRange, ...]]:
    """Drive the engine's own dispatcher with every uniform-decode and mixed batch.

    `num_active_loras` > 0: every batch carries that many active LoRA adapters (the dispatch
    key of an engine with LoRA includes the count; 0 is a batch without adapters)."""
    sched = vllm_config.scheduler_config
    s, b = sched.max_num_seqs, sched.max_num_batched_tokens
    k = vllm_config.num_speculative_tokens or 0
    q = 1 + k
    tiers = [q]
    sc = vllm_config.speculative_config
    sched_list = getattr(sc, "num_speculative_tokens_per_batch_size", None) if sc is not None else None
    if sched_list:
        from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup

        dense = build_dynamic_sd_schedule_lookup(
            sched_list, vllm_max_batch_size=s, vllm_num_speculative_tokens=k
        )
        tiers = sorted({x + 1 for x in dense[1:]})
    max_size = vllm_config.compilation_config.max_cudagraph_capture_size or 0
    mixed_hi = min(b, max_size + 1)
    uniform: dict[int, tuple[DispatchRange, ...]] = {}
    disp = getattr(runner, "cudagraph_dispatcher", None)
    mgr = getattr(runner, "cudagraph_manager", None)
    if disp is not None and mgr is None:
        # V1 `_determine_batch_execution_and_padding`: has_lora = num_active_loras > 0
        lora_kw: dict[str, Any] = (
            {"has_lora": True, "num_active_loras": num_active_loras} if num_active_loras > 0 else {}
        )
        for ql in tiers:
            rows = []
            for n in range(1, s + 1):
                if n * ql > b:
                    break
                mode, bd = disp.dispatch(num_tokens=n * ql, uniform_decode=(ql == q), **lora_kw)
                rows.append((n, mode.name, bd.num_tokens, bd.num_reqs if mode.name == "FULL" else None))
            uniform[ql] = _compress(rows)
        mixed_rows = []
        for t in range(1, mixed_hi + 1):
            mode, bd = disp.dispatch(num_tokens=t, uniform_decode=False, **lora_kw)
            mixed_rows.append((t, mode.name, bd.num_tokens, bd.num_reqs if mode.name == "FULL" else None))
        return uniform, _compress(mixed_rows)
    if mgr is None:
        return {}, ()
    params = inspect.signature(mgr.dispatch).parameters
    for ql in tiers:
        rows = []
        for n in range(1, s + 1):
            if n * ql > b:
                break
            extra = {"max_query_len": ql} if "max_query_len" in params else {}
            d = mgr.dispatch(n, n * ql, ql, num_active_loras, **extra)
            rows.append((n, d.cg_mode.name, d.num_tokens, d.num_reqs))
        uniform[ql] = _compress(rows)
    mixed_rows = []
    for t in range(1, mixed_hi + 1):
        mixed_extra: dict[str, Any] = {"max_query_len": None} if "max_query_len" in params else {}
        d = mgr.dispatch(min(t, s), t, None, num_active_loras, **mixed_extra)
        mixed_rows.append((t, d.cg_mode.name, d.num_tokens, d.num_reqs))
    return uniform, _compress(mixed_rows)


def probe_lora_dispatch(runner: Any, vllm_config: Any) -> dict[int, tuple[DispatchRange, ...]]:
    """With LoRA: the uniform-decode probe with one active adapter (the plan's
    `uniform_decode_lora`); empty for an engine without LoRA. The probe without adapters is
    `probe_dispatch`'s own."""
    if getattr(vllm_config, "lora_config", None) is None:
        return {}
    uniform, _ = probe_dispatch(runner, vllm_config, num_active_loras=1)
    return uniform


RANK_RPC_TIMEOUT_S = 300.0
"""How long the parent waits for the workers' records (the probe on rank 0 takes seconds)."""
_WORKER_LOG_LINES = 2000


def prepare_worker_environment() -> None:
    """Environment for an engine whose workers must carry cgplan's hooks (set before vLLM starts)."""
    # Forked workers are copies of this process, hooks included; spawned ones would import vLLM
    # afresh and capture unmeasured. vLLM itself switches to spawn if CUDA is already initialised
    # here, which capture_vllm refuses before starting the engine.
    os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "fork"
    # NVLink multicast (NVLS) stays off on the machines cgplan is run on; these are defaults only,
    # so a value set by whoever runs cgplan (the lent machines set them already) wins.
    for key, value in (
        ("NCCL_NVLS_ENABLE", "0"),
        ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
        ("NVSHMEM_DISABLE_NVLS", "1"),
    ):
        os.environ.setdefault(key, value)


@dataclasses.dataclass(frozen=True)
class RankPayload:
    """What one worker sends back through `collective_rpc` (pickled by vLLM's message queue)."""

    measurement: RankMeasurement
    error: str | None = None
    """Why this worker has no records (e.g. it was spawned, so it never had the hooks)."""
    returned_bytes: int | None = None
    """`capture_model()`'s return value in this worker."""
    log_lines: tuple[str, ...] = ()
    """vLLM's log lines in this worker since the fork (its capture figures are logged here)."""
    model_runner: str | None = None
    """Rank 0 only, from the worker's own config (the parent's copy does not see the worker's
    adjustments to mode and sizes): v1 or v2."""
    cudagraph_mode: str | None = None
    capture_sizes: tuple[int, ...] = ()
    max_capture_size: int | None = None
    uniform_decode: dict[int, tuple[DispatchRange, ...]] = dataclasses.field(default_factory=dict)
    """Rank 0 only: the dispatch probe on its runner."""
    mixed: tuple[DispatchRange, ...] = ()
    uniform_decode_lora: dict[int, tuple[DispatchRange, ...]] = dataclasses.field(default_factory=dict)
    """Rank 0 only, with LoRA: the probe with one active adapter."""


def rank_payload(worker: Any) -> RankPayload:
    """Runs inside each vLLM worker, sent there by `LLM.collective_rpc` (which calls it with the
    worker's WorkerWrapperBase; unknown attributes reach the GPU worker): this rank's records."""
    rank, local_rank = int(worker.rank), int(worker.local_rank)
    handover = _HANDOVER
    if handover is None or not handover.state.in_worker:
        return RankPayload(
            RankMeasurement(rank, local_rank, None, None),
            error=f"rank {rank}: cgplan's hooks are not in this worker (it was spawned, not forked: "
            "was CUDA initialised before the engine started?)",
        )
    state, recorder = handover.state, handover.recorder
    name: str | None = None
    index: int | None = None
    if state.worker_nvml is not None:
        with suppress(Exception):  # a name is nice to have; the measurements matter
            name, index = state.worker_nvml.names()[0], state.worker_nvml.indices()[0]
    measurement = RankMeasurement(
        rank,
        local_rank,
        name,
        index,
        recorder.measurements(),
        state.capture_wall_s,
        state.capture_nvml_delta,
    )
    payload = RankPayload(
        measurement,
        returned_bytes=state.returned_bytes,
        log_lines=tuple(handover.log_lines[-_WORKER_LOG_LINES:]),
    )
    runner = state.runners[-1] if state.runners else None
    if rank != 0 or runner is None:
        return payload
    vc = getattr(runner, "vllm_config", None) or worker.vllm_config
    uniform, mixed = probe_dispatch(runner, vc)
    cc = vc.compilation_config
    return dataclasses.replace(
        payload,
        model_runner="v2" if getattr(vc, "use_v2_model_runner", False) else "v1",
        cudagraph_mode=getattr(cc.cudagraph_mode, "name", str(cc.cudagraph_mode)),
        capture_sizes=tuple(cc.cudagraph_capture_sizes or ()),
        max_capture_size=cc.max_cudagraph_capture_size,
        uniform_decode=uniform,
        mixed=mixed,
        uniform_decode_lora=probe_lora_dispatch(runner, vc),
    )


def measured_from_ranks(
    payloads: list[RankPayload], vllm_config: Any, log_lines: list[str], recorder: GraphRecorder
) -> MeasuredCapture:
    """The capture of a tensor-parallel engine from its workers' payloads: rank 0's graphs and
    probe (what the plan is compared with), every rank's own cost in `ranks`."""
    errors = [p.error for p in payloads if p.error]
    if errors:
        raise RuntimeError("; ".join(errors))
    payloads = sorted(payloads, key=lambda p: p.measurement.rank)
    if not payloads or payloads[0].measurement.rank != 0:
        raise RuntimeError(f"no record from rank 0 (got ranks {[p.measurement.rank for p in payloads]})")
    first = payloads[0]
    log_lines.extend(f"(rank 0) {line}" for line in first.log_lines)
    ranks = tuple(p.measurement for p in payloads)
    graphs: tuple[GraphMeasurement, ...] = first.measurement.graphs
    # The workers had no way to the parent's progress bar while capturing; bring it up to date.
    mib = 0.0
    for g in graphs:
        mib += (g.nvml_delta_bytes or 0) / (1 << 20)
        recorder.progress.advance(f"{g.family} {g.mode} {g.num_tokens} tokens (rank 0)", mib)
    figures = vllm_figures(log_lines, first.returned_bytes, installed_vllm_version())
    kv_blocks = getattr(vllm_config.cache_config, "num_gpu_blocks", None)
    if figures.kv_cache_tokens is None and kv_blocks:
        tokens = kv_blocks * vllm_config.cache_config.block_size
        figures = dataclasses.replace(figures, kv_cache_tokens=tokens)
    walls = [r.capture_wall_s for r in ranks if r.capture_wall_s is not None]
    deltas = [r.capture_nvml_delta_bytes for r in ranks]
    return MeasuredCapture(
        backend="vllm",
        status="complete",
        model_runner=first.model_runner,
        cudagraph_mode=first.cudagraph_mode,
        capture_sizes=first.capture_sizes,
        max_capture_size=first.max_capture_size,
        graphs=graphs,
        uniform_decode=first.uniform_decode,
        mixed=first.mixed,
        uniform_decode_lora=first.uniform_decode_lora,
        # The ranks capture in lockstep (every graph's warmup runs collectives), so the phase
        # lasts as long as its slowest rank; memory adds up over the GPUs, as with one process.
        capture_wall_s=max(walls) if walls else None,
        capture_nvml_delta_bytes=sum(d for d in deltas if d is not None)
        if deltas and all(d is not None for d in deltas)
        else None,
        vllm=figures,
        ranks=ranks,
    )


def capture_vllm(
    inp: PlanInput,
    raw: dict[str, Any],
    base_dir: str,
    recorder: GraphRecorder,
    nvml: NvmlSession | None,
    log_lines: list[str],
    per_graph: bool = True,
) -> MeasuredCapture:
    """Start the engine (which captures), then probe its dispatcher. Raises on failure;
    the caller builds the partial report from `recorder`.

    With tensor_parallel_size > 1 the capture happens in vLLM's forked workers: `nvml` should
    then be None (each worker opens its own), and a failure leaves nothing in `recorder`."""
    workers = inp.tensor_parallel_size > 1
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    if workers:
        prepare_worker_environment()
    if inp.model_runner in ("v1", "v2"):
        os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "1" if inp.model_runner == "v2" else "0"
    for name, value in inp.env:  # the config's vLLM environment (cgplan.env), as planned with
        os.environ[name] = value
    recorder.armed = False
    tap = _LogTap()
    tap.lines = log_lines
    vllm_logger = logging.getLogger("vllm")
    vllm_logger.addHandler(tap)
    state = _State()
    try:
        from vllm import LLM

        if workers:
            import torch

            if torch.cuda.is_initialized():
                raise RuntimeError(
                    "CUDA is initialised in cgplan's process, so vLLM would spawn its workers "
                    "and they would capture without cgplan's hooks"
                )
        with ExitStack() as hooks:
            hooks.enter_context(instrument(recorder, nvml, state, per_graph))
            if workers:
                hooks.enter_context(_hand_over_to_workers(recorder, state, tap.lines))
            llm = LLM(**engine_kwargs(inp, raw, base_dir))
        vc = llm.llm_engine.vllm_config
        if workers:
            payloads = llm.collective_rpc(rank_payload, timeout=RANK_RPC_TIMEOUT_S)
            return measured_from_ranks(list(payloads), vc, tap.lines, recorder)
        runner = state.runners[-1] if state.runners else None
        uniform, mixed = probe_dispatch(runner, vc) if runner is not None else ({}, ())
        uniform_lora = probe_lora_dispatch(runner, vc) if runner is not None else {}
        cc = vc.compilation_config
        kv_blocks = getattr(vc.cache_config, "num_gpu_blocks", None)
        figures = vllm_figures(tap.lines, state.returned_bytes, installed_vllm_version())
        if figures.kv_cache_tokens is None and kv_blocks:
            figures = VllmFigures(
                **{**figures.__dict__, "kv_cache_tokens": kv_blocks * vc.cache_config.block_size}
            )
        return MeasuredCapture(
            backend="vllm",
            status="complete",
            model_runner="v2" if getattr(vc, "use_v2_model_runner", False) else "v1",
            cudagraph_mode=getattr(cc.cudagraph_mode, "name", str(cc.cudagraph_mode)),
            capture_sizes=tuple(cc.cudagraph_capture_sizes or ()),
            max_capture_size=cc.max_cudagraph_capture_size,
            graphs=recorder.measurements(),
            uniform_decode=uniform,
            mixed=mixed,
            uniform_decode_lora=uniform_lora,
            capture_wall_s=state.capture_wall_s,
            capture_nvml_delta_bytes=state.capture_nvml_delta,
            instrumentation_s=round(recorder.hook_s, 4) if per_graph else None,
            instrumentation_nvml_s=round(recorder.nvml_s, 4) if per_graph else None,
            vllm=figures,
        )
    finally:
        vllm_logger.removeHandler(tap)
