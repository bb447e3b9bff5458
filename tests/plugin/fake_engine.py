"""A fake vLLM engine for the plugin's CPU tests: objects with the attribute names of vLLM 0.26.0
and 0.33.0 (vllm/config/*.py, vllm/v1/cudagraph_dispatcher.py, vllm/v1/worker/gpu_model_runner.py,
vllm/v1/worker/gpu/cudagraph_utils.py), and a V1 dispatcher whose keys and `dispatch` follow
`CudagraphDispatcher` for a model without LoRA (FULL_AND_PIECEWISE: PIECEWISE keys at every
capture size, FULL uniform-decode keys up to max_num_seqs × (1 + K)). Nothing here is evidence
about vLLM: the engine's answers are checked on the GPU (tests/gpu/test_plugin_gpu.py)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

from tests.paths import ROOT_DIR

TINY_MODEL = ROOT_DIR / "configs" / "models" / "tiny-llama-v512"


class CUDAGraphMode(enum.Enum):
    """vLLM's enum members the plugin reads (`.name`)."""

    NONE = 0
    PIECEWISE = 1
    FULL = 2
    FULL_AND_PIECEWISE = (2, 1)


@dataclass(frozen=True)
class BatchDescriptor:
    num_tokens: int
    num_reqs: int | None = None
    uniform: bool = False
    has_lora: bool = False
    num_active_loras: int = 0


def vllm_config(
    *, max_num_seqs: int = 64, max_size: int = 32, sizes: list[int] | None = None, batched: int = 8192
) -> Any:
    sizes = sizes or [s for s in [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64] if s <= max_size]
    return SimpleNamespace(
        model_config=SimpleNamespace(model=str(TINY_MODEL), max_model_len=2048, enforce_eager=False),
        scheduler_config=SimpleNamespace(max_num_seqs=max_num_seqs, max_num_batched_tokens=batched),
        parallel_config=SimpleNamespace(
            tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1
        ),
        compilation_config=SimpleNamespace(
            cudagraph_mode=CUDAGraphMode.FULL_AND_PIECEWISE,
            cudagraph_capture_sizes=sizes,
            max_cudagraph_capture_size=max(sizes),
        ),
        speculative_config=None,
        lora_config=None,
        num_speculative_tokens=0,
    )


@dataclass
class FakeDispatcher:
    """V1 `CudagraphDispatcher` for FULL_AND_PIECEWISE without LoRA (vLLM 0.26.0's rules)."""

    vllm_config: Any
    cudagraph_keys: dict[CUDAGraphMode, set[BatchDescriptor]] = field(default_factory=dict)
    calls: int = 0

    def __post_init__(self) -> None:
        cc, s = self.vllm_config.compilation_config, self.vllm_config.scheduler_config.max_num_seqs
        self.cudagraph_keys = {
            CUDAGraphMode.PIECEWISE: {BatchDescriptor(n) for n in cc.cudagraph_capture_sizes},
            CUDAGraphMode.FULL: {
                BatchDescriptor(n, min(n, s), True) for n in cc.cudagraph_capture_sizes if n <= s
            },
        }

    def _pad(self, n: int) -> int:
        return int(min(x for x in self.vllm_config.compilation_config.cudagraph_capture_sizes if x >= n))

    def dispatch(
        self,
        num_tokens: int,
        uniform_decode: bool = False,
        has_lora: bool = False,
        num_active_loras: int = 0,
        valid_modes: Any = None,
        invalid_modes: Any = None,
    ) -> tuple[CUDAGraphMode, BatchDescriptor]:
        self.calls += 1
        if num_tokens > self.vllm_config.compilation_config.max_cudagraph_capture_size:
            return CUDAGraphMode.NONE, BatchDescriptor(num_tokens)
        padded = self._pad(num_tokens)
        s = self.vllm_config.scheduler_config.max_num_seqs
        desc = BatchDescriptor(padded, min(padded, s), uniform_decode)
        if desc in self.cudagraph_keys[CUDAGraphMode.FULL] and (not invalid_modes):
            return CUDAGraphMode.FULL, desc
        relaxed = replace(desc, num_reqs=None, uniform=False)
        if relaxed in self.cudagraph_keys[CUDAGraphMode.PIECEWISE]:
            return CUDAGraphMode.PIECEWISE, relaxed
        return CUDAGraphMode.NONE, BatchDescriptor(num_tokens)


class GPUModelRunner:
    """V1 runner: `cudagraph_dispatcher`, `uniform_decode_query_len`, `_dummy_run`, `capture_model`,
    and the step's call into the dispatcher as `_determine_batch_execution_and_padding` makes it."""

    __module__ = "vllm.v1.worker.gpu_model_runner"

    def __init__(self, vc: Any) -> None:
        self.vllm_config = vc
        self.uniform_decode_query_len = 1 + vc.num_speculative_tokens
        self.cudagraph_dispatcher = FakeDispatcher(vc)

    def capture_model(self) -> int:
        return 96 << 20

    def _dummy_run(self, num_tokens: int) -> None:
        self.step(num_tokens, num_tokens, uniform=True)

    def step(self, num_reqs: int, num_tokens: int, uniform: bool) -> str:
        mode, _ = self.cudagraph_dispatcher.dispatch(
            num_tokens=num_tokens,
            has_lora=False,
            uniform_decode=uniform,
            num_active_loras=0,
            valid_modes=None,
            invalid_modes=None,
        )
        return mode.name


class Worker:
    """`vllm.v1.worker.gpu_worker.Worker`: compile_or_warm_up_model calls capture_model."""

    def __init__(self, runner: GPUModelRunner) -> None:
        self.model_runner = runner
        self.vllm_config = runner.vllm_config
        self.rank = 0

    def compile_or_warm_up_model(self) -> int:
        out = self.model_runner.capture_model()
        self.model_runner._dummy_run(1)  # the sampler warmup: not a served step
        return out


@dataclass(frozen=True)
class BatchExecutionDescriptor:
    """V2's descriptor (vllm/v1/worker/gpu/cudagraph_utils.py)."""

    cg_mode: CUDAGraphMode
    num_tokens: int
    num_reqs: int | None = None
    uniform_token_count: int | None = None
    num_active_loras: int = 0


class CudaGraphManager:
    """V2 `CudaGraphManager` for FULL_AND_PIECEWISE without LoRA: `_capture_descs`,
    `decode_query_len` and `dispatch` as `_init_candidates` and `dispatch` build them (a uniform
    batch of `decode_query_len` tokens per request replays the FULL graph of its padded size when
    its requests fit, any other a PIECEWISE one). `with_max_query_len`: 0.33's signature."""

    __module__ = "vllm.v1.worker.gpu.cudagraph_utils"

    def __init__(self, vc: Any, decode_query_len: int, with_max_query_len: bool) -> None:
        cc, s = vc.compilation_config, vc.scheduler_config.max_num_seqs
        self.decode_query_len = q = decode_query_len
        self.sizes = sorted(cc.cudagraph_capture_sizes)
        full = []
        for n in self.sizes:
            t = -(-n // q) * q
            if t <= s * q and t <= cc.max_cudagraph_capture_size:
                d = BatchExecutionDescriptor(CUDAGraphMode.FULL, t, t // q, q)
                if d not in full:
                    full.append(d)
        pw = [BatchExecutionDescriptor(CUDAGraphMode.PIECEWISE, n) for n in self.sizes]
        self._capture_descs = {
            CUDAGraphMode.FULL: sorted(full, key=lambda d: -d.num_tokens),
            CUDAGraphMode.PIECEWISE: sorted(pw, key=lambda d: -d.num_tokens),
        }
        self.with_max_query_len = with_max_query_len

    def dispatch(
        self,
        num_reqs: int,
        num_tokens: int,
        uniform_token_count: int | None,
        num_active_loras: int,
        *rest: Any,
    ) -> BatchExecutionDescriptor:
        fits = [x for x in self.sizes if x >= num_tokens]
        if fits:
            for d in self._capture_descs[CUDAGraphMode.FULL]:
                if (
                    d.num_tokens == -(-fits[0] // self.decode_query_len) * self.decode_query_len
                    and uniform_token_count == d.uniform_token_count
                    and num_reqs <= (d.num_reqs or 0)
                ):
                    return d
            return BatchExecutionDescriptor(CUDAGraphMode.PIECEWISE, fits[0])
        return BatchExecutionDescriptor(CUDAGraphMode.NONE, num_tokens, num_reqs)


class V2GPUModelRunner:
    """V2 runner (`vllm.v1.worker.gpu.model_runner.GPUModelRunner`): `cudagraph_manager`, and the
    step's call as `dispatch_cg_and_sync_dp` makes it (positional)."""

    __module__ = "vllm.v1.worker.gpu.model_runner"

    def __init__(self, vc: Any, release: str = "0.33.0") -> None:
        self.vllm_config = vc
        self.cudagraph_manager = CudaGraphManager(vc, 1 + vc.num_speculative_tokens, release >= "0.33")

    def capture_model(self) -> int:
        return 96 << 20

    def _dummy_run(self, num_tokens: int) -> None:
        self.step(num_tokens, num_tokens, uniform=True)

    def step(self, num_reqs: int, num_tokens: int, uniform: bool) -> str:
        q = self.cudagraph_manager.decode_query_len
        return self.cudagraph_manager.dispatch(num_reqs, num_tokens, q if uniform else None, 0).cg_mode.name
