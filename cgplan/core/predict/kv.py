"""KV-cache bytes per token: what graph memory costs in the operator's unit (pure).

vLLM sizes the KV cache from the memory left after profiling and CUDA-graph capture, so every
byte the capture phase takes is KV cache not allocated: pool bytes ÷ bytes per token = tokens of
context the graphs cost. Per rank: tensor parallelism shards the KV heads (at least one per rank).

The element size follows `kv_cache_dtype` as vLLM's `AttentionSpec.page_size_bytes` computes it
(vllm/v1/kv_cache_interface.py): 2 × KV heads × head size × `get_dtype_size(dtype)` per layer,
with `dtype` from `kv_cache_dtype_str_to_dtype` (vllm/utils/torch_utils.py): "auto" is the
model's dtype, the fp8 family is one byte (uint8 / float8_e4m3fn). The quantised layouts
(turboquant, nvfp4, int4/int8/fp8 per-token-head scales, MLA's fp8_ds_mla) pack or pad per
backend: their bytes per token are withheld, by name (tests/data/kv_cache_dtypes.json, recorded
from vLLM 0.26.0-0.33.0 by scripts/oracle/kv_cache_dtypes.py, holds vLLM's own answers).
"""

from __future__ import annotations

from cgplan.core.model.spec import ModelShape, PlanInput
from cgplan.core.predict.cost import DTYPE_BYTES, drafter_shape
from cgplan.core.vllm.models import kv_unknown

KV_DTYPE_BYTES: dict[str, int] = {
    "float16": 2,
    "bfloat16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_inc": 1,
}
"""`kv_cache_dtype` values whose layout is dense K and V of one element size, and that size in
bytes (`STR_DTYPE_TO_TORCH_DTYPE`: torch.uint8 for fp8/fp8_e4m3/fp8_e5m2, float8_e4m3fn for
fp8_inc; their `KVQuantMode` FP8_PER_TENSOR keeps the dense layout). "auto" is the model dtype."""


def kv_element_bytes(kv_cache_dtype: str, model_dtype: str) -> int | None:
    """Bytes of one K or V element (None: a quantised layout cgplan does not model).

    >>> kv_element_bytes("auto", "bfloat16"), kv_element_bytes("fp8", "bfloat16")
    (2, 1)
    >>> kv_element_bytes("auto", "float32"), kv_element_bytes("turboquant_k8v4", "bfloat16") is None
    (4, True)
    """
    if kv_cache_dtype == "auto":
        return DTYPE_BYTES.get(model_dtype, 2)
    return KV_DTYPE_BYTES.get(kv_cache_dtype)


def kv_withheld(inp: PlanInput) -> str:
    """Why `kv_bytes_per_token(inp)` is None, in words ("" when it is given)."""
    if inp.model.use_mla:
        return "MLA's latent KV cache is not modelled"
    if kv_unknown(inp.model):
        return "this architecture's KV cache groups are not modelled"
    if kv_element_bytes(inp.kv_cache_dtype, inp.model.dtype) is None:
        return f"kv_cache_dtype {inp.kv_cache_dtype}'s quantised layout is not modelled"
    spec = inp.speculative
    if (
        spec is not None
        and spec.method not in ("ngram", "suffix")
        and drafter_shape(inp.model, spec.draft_model, spec.method).use_mla
    ):
        return "the drafter's MLA latent KV cache is not modelled"
    return ""


def _layer_bytes(shape: ModelShape, tp: int, element_bytes: int) -> int:
    heads = max(1, shape.num_key_value_heads // max(1, tp))
    return 2 * heads * shape.head_dim * element_bytes  # K and V


def kv_bytes_per_token(inp: PlanInput) -> int | None:
    """Bytes one token of KV cache takes on each rank (target layers plus the drafter's own
    layers under EAGLE/MTP/draft_model/DFlash/DSpark; ngram and suffix decoding draft without a
    model), in the element size `kv_cache_dtype` gives. None where `kv_withheld` says why: MLA
    models (their latent cache is not modelled here), `kv_unknown` (an encoder-decoder's cross
    attention, sliding-window groups, an architecture cgplan does not know), a quantised
    kv_cache_dtype layout."""
    if kv_withheld(inp):
        return None
    tp = inp.tensor_parallel_size
    target_bytes = kv_element_bytes(inp.kv_cache_dtype, inp.model.dtype) or 2
    total = inp.model.num_hidden_layers * _layer_bytes(inp.model, tp, target_bytes)
    spec = inp.speculative
    if spec is not None and spec.method not in ("ngram", "suffix"):
        d = drafter_shape(inp.model, spec.draft_model, spec.method)
        # one cache_config.cache_dtype for every layer, the drafter's included
        total += d.num_hidden_layers * _layer_bytes(d, tp, kv_element_bytes(inp.kv_cache_dtype, d.dtype) or 2)
    return total
