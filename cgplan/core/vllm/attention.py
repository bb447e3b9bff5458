"""Attention backend a GPU host picks, and the CUDA-graph support level it reports.

Mirrors the first entry of `vllm/platforms/cuda.py:_get_backend_priorities` and each
metadata builder's `get_cudagraph_support` (vllm/v1/attention/backends/*.py). The
support level decides the attention downgrade in `resolve_cudagraph_mode_and_sizes`.
"""

from __future__ import annotations

from cgplan.core.model.modes import CGSupport, Platform
from cgplan.core.vllm.releases import VllmRules

# Default backend by (platform, MLA?): the head of vLLM's priority list.
DEFAULT_BACKEND: dict[tuple[Platform, bool], str] = {
    (Platform.HOPPER, False): "FLASH_ATTN",
    (Platform.HOPPER, True): "FLASH_ATTN_MLA",
    (Platform.BLACKWELL, False): "FLASHINFER",
    (Platform.BLACKWELL, True): "FLASHINFER_MLA",
    (Platform.AMPERE, False): "FLASH_ATTN",
    (Platform.AMPERE, True): "TRITON_MLA",
    (Platform.RTX_BLACKWELL, False): "FLASH_ATTN",
    (Platform.RTX_BLACKWELL, True): "TRITON_MLA",
}

KNOWN_BACKENDS: tuple[str, ...] = (
    "FLASH_ATTN",
    "FLASHINFER",
    "TRITON_ATTN",
    "FLEX_ATTENTION",
    "FLASH_ATTN_MLA",
    "FLASHMLA",
    "FLASHINFER_MLA",
    "CUTLASS_MLA",
    "TRITON_MLA",
)
"""Backends whose support level cgplan knows (`AttentionBackendEnum` names)."""


def default_backend(platform: Platform, use_mla: bool) -> str:
    """The backend vLLM's selector picks first on `platform`."""
    return DEFAULT_BACKEND[(platform, use_mla)]


def cudagraph_support(backend: str, platform: Platform, head_dim: int, rules: VllmRules) -> CGSupport:
    """The support level `backend`'s metadata builder reports on `platform` under `rules`.

    FLASH_ATTN is FA3 on SM90 (ALWAYS), FA4 on SM10x (UNIFORM_BATCH, ALWAYS from 0.33.0)
    and FA2 elsewhere (UNIFORM_BATCH). FlashInfer reaches UNIFORM_BATCH through TRT-LLM
    decode kernels on SM100 (cgplan assumes the cubins are reachable, as on a normal GPU
    host) and, release by release, through XQA on SM12x and SM90.
    """
    major = platform.compute_capability[0]
    if backend == "FLASH_ATTN":
        if major == 9 or (major == 10 and rules.fa4_always):
            return CGSupport.ALWAYS
        return CGSupport.UNIFORM_BATCH
    if backend == "FLASHINFER":
        xqa_head = 16 <= head_dim <= 256 and head_dim % 16 == 0
        if (
            major == 10
            or (major == 12 and rules.flashinfer_xqa_sm12x)
            or (major == 9 and rules.flashinfer_xqa_sm90 and xqa_head)
            or (major < 9 and rules.flashinfer_fa2_native_below_sm90)
        ):
            return CGSupport.UNIFORM_BATCH
        return CGSupport.UNIFORM_SINGLE_TOKEN_DECODE
    if backend in ("TRITON_ATTN", "FLEX_ATTENTION"):
        return CGSupport.ALWAYS
    if backend == "FLASHINFER_MLA":
        return CGSupport.ALWAYS if rules.mla_uniform_levels_raised else CGSupport.UNIFORM_BATCH
    if backend == "TRITON_MLA":
        return (
            CGSupport.UNIFORM_BATCH
            if rules.mla_uniform_levels_raised
            else CGSupport.UNIFORM_SINGLE_TOKEN_DECODE
        )
    if backend in ("FLASH_ATTN_MLA", "FLASHMLA"):
        return CGSupport.UNIFORM_BATCH
    if backend == "CUTLASS_MLA":
        return CGSupport.UNIFORM_SINGLE_TOKEN_DECODE
    raise KeyError(backend)


def draft_decode_metadata_update(backend: str, platform: Platform, dcp: int) -> bool:
    """The metadata builder's `supports_draft_decode_metadata_update` (0.32+): whether the drafter's
    decode steps refresh attention metadata in place, so that V2 records the fused decode loop in
    one graph per dynamic-SD K (`SpeculatorCudaGraphManager.capture(specialize_spec_tokens=...)`).

    FLASH_ATTN and TRITON_MLA: without DCP (`dcp_world_size == 1`); TRITON_ATTN: always (its
    R-SWA window, set by no model cgplan reads, turns it off); FlashInfer: its TRT-LLM-gen decode
    kernel (SM10x, the cubins assumed reachable as for its support level) without DCP; every other
    backend keeps the base class's False.
    """
    if backend in ("FLASH_ATTN", "TRITON_MLA"):
        return dcp == 1
    if backend == "TRITON_ATTN":
        return True
    if backend == "FLASHINFER":
        return platform.compute_capability[0] == 10 and dcp == 1
    return False
