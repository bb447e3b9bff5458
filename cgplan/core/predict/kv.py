"""KV-cache bytes per token: what graph memory costs in the operator's unit (pure).

vLLM sizes the KV cache from the memory left after profiling and CUDA-graph capture, so every
byte the capture phase takes is KV cache not allocated: pool bytes ÷ bytes per token = tokens of
context the graphs cost. Per rank: tensor parallelism shards the KV heads (at least one per rank).
"""

from __future__ import annotations

from cgplan.core.model.spec import ModelShape, PlanInput
from cgplan.core.predict.cost import DTYPE_BYTES, drafter_shape
from cgplan.core.vllm.models import kv_unknown


def _layer_bytes(shape: ModelShape, tp: int) -> int:
    heads = max(1, shape.num_key_value_heads // max(1, tp))
    return 2 * heads * shape.head_dim * DTYPE_BYTES.get(shape.dtype, 2)  # K and V


def kv_bytes_per_token(inp: PlanInput) -> int | None:
    """Bytes one token of KV cache takes on each rank (target layers plus the drafter's own
    layers under EAGLE/MTP/draft_model/DFlash/DSpark; ngram and suffix decoding draft without a
    model). None for MLA models (their latent cache is not modelled here) and where `kv_unknown`
    (an encoder-decoder's cross attention, sliding-window groups, an architecture cgplan does not
    know)."""
    if inp.model.use_mla or kv_unknown(inp.model):
        return None
    tp = inp.tensor_parallel_size
    total = inp.model.num_hidden_layers * _layer_bytes(inp.model, tp)
    spec = inp.speculative
    if spec is not None and spec.method not in ("ngram", "suffix"):
        d = drafter_shape(inp.model, spec.draft_model, spec.method)
        if d.use_mla:
            return None
        total += d.num_hidden_layers * _layer_bytes(d, tp)
    return total
