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
    # every SM12x device has the same list (`_get_backend_priorities` reads the major version)
    (Platform.RTX_5090, False): "FLASH_ATTN",
    (Platform.RTX_5090, True): "TRITON_MLA",
    (Platform.GB10, False): "FLASH_ATTN",
    (Platform.GB10, True): "TRITON_MLA",
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
    "B12X",
)
"""Backends whose support level cgplan knows (`AttentionBackendEnum` names)."""

BACKEND_NAMES: dict[str, str] = {
    "FLASH_ATTN": "0.26.0",
    "FLASH_ATTN_DIFFKV": "0.26.0",
    "TRITON_ATTN": "0.26.0",
    "TRITON_ATTN_DIFFKV": "0.26.0",
    "TRITON_FLASH_ATTN": "0.30.0",
    "ROCM_ATTN": "0.26.0",
    "ROCM_SEGMENTED_ATTN": "0.32.0",
    "ROCM_AITER_MLA": "0.26.0",
    "ROCM_AITER_TRITON_MLA": "0.26.0",
    "ROCM_AITER_FA": "0.26.0",
    "ROCM_AITER_MLA_SPARSE": "0.26.0",
    "XPU_MLA_SPARSE": "0.26.0",
    "TORCH_SDPA": "0.26.0",
    "FLASHINFER": "0.26.0",
    "TRITON_FLASHINFER": "0.30.0",
    "FLASHINFER_MLA": "0.26.0",
    "TOKENSPEED_MLA": "0.26.0",
    "FLASHINFER_MLA_SPARSE": "0.26.0",
    "FLASHINFER_MLA_SPARSE_SM120": "0.26.0",
    "FLASHINFER_MLA_SPARSE_SM90": "0.30.0",
    "TRITON_MLA": "0.26.0",
    "CUTLASS_MLA": "0.26.0",
    "FLASHMLA": "0.26.0",
    "FLASHMLA_SPARSE": "0.26.0",
    "FLASHMLA_SPARSE_DSV4": "0.26.0",
    "FLASHINFER_MLA_SPARSE_DSV4": "0.26.0",
    "ROCM_FLASHMLA_SPARSE_DSV4": "0.26.0",
    "FLASHMLA_SPARSE_DSV41": "0.30.0",
    "FLASHINFER_MLA_SPARSE_DSV41": "0.30.0",
    "ROCM_FLASHMLA_SPARSE_DSV41": "0.33.0",
    "FLASHMLA_MEGA_ATTN_DSV41": "0.31.0",
    "B12X": "0.30.0",  # vLLM PR 52017
    "FLASH_ATTN_MLA": "0.26.0",
    "FLASH_ATTN_MLA_SPARSE": "0.26.0",
    "FLASH_ATTN_MLA_SPARSE_FA4": "0.33.0",
    "MINIMAX_M3_SPARSE": "0.26.0",
    "CUTLASS_MSA": "0.27.0",
    "TRITON_MSA": "0.27.0",
    "STEP5_DSA": "0.33.0",
    "NO_ATTENTION": "0.26.0",
    "FLEX_ATTENTION": "0.26.0",
    "HPC_ATTN": "0.26.0",
    "ROCM_AITER_UNIFIED_ATTN": "0.26.0",
    "CPU_ATTN": "0.26.0",
    "CPU_MLA": "0.28.0",
    "AMX_MLA": "0.29.0",
    "TURBOQUANT": "0.26.0",
    "ROCM_OCTAVE": "0.33.0",
    "ULTRAQUANT": "0.32.0",
    "CUSTOM": "0.26.0",
}
"""Every `AttentionBackendEnum` name (vllm/v1/attention/backends/registry.py), in the enum's order,
with the first release whose enum has it (none was removed up to 0.33.0, and each release's enum is
this order less the names it lacks): a name outside it is unknown; one a release lacks, or whose
support level cgplan does not know, is refused by name."""

# B12xPagedAttentionBackend (vllm/v1/attention/backends/b12x.py, 0.30+): paged causal attention of
# consumer Blackwell, bf16 queries, four head sizes; its builder reports UNIFORM_BATCH.
B12X_HEAD_SIZES = (64, 128, 192, 256)
B12X_CAPABILITIES = ((12, 0), (12, 1))


def backend_refusal(
    backend: str,
    platform: Platform,
    head_dim: int,
    dtype: str,
    use_mla: bool,
    version: str,
    *,
    non_causal: bool = False,
    dcp: bool = False,
) -> str | None:
    """Why the release refuses or cgplan cannot plan a forced backend; None when it plans.

    A name the release's `AttentionBackendEnum` lacks, a backend whose support level cgplan does
    not model, and B12X where its `validate_configuration` fails (in vLLM's words: the selector's
    "Selected backend ... is not valid for this configuration. Reason: [...]").
    """
    from cgplan.core.vllm.releases import SUPPORTED_VERSIONS

    at = SUPPORTED_VERSIONS.index(version)
    if at < SUPPORTED_VERSIONS.index(BACKEND_NAMES[backend]):
        # AttentionBackendEnum's lookup of the name (registry.py), in its words
        names = [n for n, since in BACKEND_NAMES.items() if SUPPORTED_VERSIONS.index(since) <= at]
        return f"Unknown attention backend: '{backend}'. Valid options are: {', '.join(names)}"
    if backend not in KNOWN_BACKENDS:
        return f"the {backend} attention backend's CUDA-graph support: cgplan does not model it yet"
    if backend == "B12X":
        reasons = []
        if head_dim not in B12X_HEAD_SIZES:
            reasons.append("head_size not supported")
        if dtype != "bfloat16":
            reasons.append("dtype not supported")
        if use_mla:
            reasons.append("MLA not supported")
        if platform.compute_capability not in B12X_CAPABILITIES:
            reasons.append("compute capability not supported")
        if non_causal:
            reasons.append("non-causal attention not supported")
        if dcp:
            reasons.append("DCP not supported")
        if dtype != "bfloat16":  # supports_combination's own reason comes last
            reasons.append("b12x currently requires bfloat16 queries")
        if reasons:
            return (
                "Selected backend AttentionBackendEnum.B12X is not valid for this configuration. "
                f"Reason: {reasons}"
            )
    return None


def default_backend(platform: Platform, use_mla: bool) -> str:
    """The backend vLLM's selector picks first on `platform`."""
    return DEFAULT_BACKEND[(platform, use_mla)]


def cudagraph_support(
    backend: str, platform: Platform, head_dim: int, rules: VllmRules, *, non_causal: bool = False
) -> CGSupport:
    """The support level `backend`'s metadata builder reports on `platform` under `rules`.

    FLASH_ATTN is FA3 on SM90 (ALWAYS), FA4 on SM10x (UNIFORM_BATCH, ALWAYS from 0.33.0)
    and FA2 elsewhere (UNIFORM_BATCH). FlashInfer reaches UNIFORM_BATCH through TRT-LLM
    decode kernels on SM100 (cgplan assumes the cubins are reachable, as on a normal GPU
    host) and, release by release, through XQA on SM12x and SM90; below SM90 (0.33+) its FA2
    decode graphs uniform batches of causal queries only (`non_causal`: a DFlash draft's layers
    under the speculator's `attn_vllm_config`).
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
            or (major < 9 and rules.flashinfer_fa2_native_below_sm90 and not non_causal)
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
    if backend == "B12X":
        return CGSupport.UNIFORM_BATCH
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
