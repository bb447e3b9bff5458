"""Record, from vLLM's own code, each release's accepted kv_cache_dtype values and the KV bytes per
token its FullAttentionSpec gives for each (tests/data/kv_cache_dtypes.json).

Run with every oracle venv (no GPU):
    for v in 0.26.0 0.27.0 0.28.0 0.29.0 0.30.0 0.31.0 0.32.0 0.33.0; do
        /work/oracle-venvs/venv-$v/bin/python scripts/oracle/kv_cache_dtypes.py; done | grep '^{' > out.jsonl
    python3 scripts/oracle/kv_cache_dtypes.py --merge out.jsonl > tests/data/kv_cache_dtypes.json

Per release: `CacheDType`'s members (vllm/config/cache.py), then, for each member and a few
(model dtype, KV heads, head size) shapes, `FullAttentionSpec(...).page_size_bytes // block_size`
with the torch dtype from `kv_cache_dtype_str_to_dtype` and `kv_quant_mode` from
`get_kv_quant_mode` (vllm/v1/kv_cache_interface.py) where the release has it. A backend may pad or
repack a quantised layout (turboquant, nvfp4, per-token-head scales, fp8_ds_mla); this records the
spec's own answer, and cgplan models only the members whose layout is dense K/V of one element size.
"""

from __future__ import annotations

import json
import sys
import typing

SHAPES = (("bfloat16", 8, 128), ("float16", 8, 128), ("bfloat16", 1, 64), ("float32", 4, 128))
BLOCK_SIZE = 16
INVALID = "fp4x"
"""A value no release accepts: CacheConfig's refusal of it is recorded."""


def record() -> dict[str, object]:
    """This venv's release: accepted values and bytes per token per layer for each shape."""
    import torch
    import vllm
    from vllm.config import cache
    from vllm.utils import torch_utils
    from vllm.v1 import kv_cache_interface as kvi

    accepted = list(typing.get_args(cache.CacheDType))
    table: dict[str, dict[str, int | str]] = {}
    for value in accepted:
        row: dict[str, int | str] = {}
        for model_dtype, heads, head_size in SHAPES:
            key = f"{model_dtype}/{heads}x{head_size}"
            try:
                dt = torch_utils.kv_cache_dtype_str_to_dtype(value, None)  # type: ignore[arg-type]
                if value == "auto":
                    dt = getattr(torch, model_dtype)
                kw: dict[str, object] = {}
                if hasattr(kvi, "get_kv_quant_mode"):
                    kw["kv_quant_mode"] = kvi.get_kv_quant_mode(value)
                spec = kvi.FullAttentionSpec(
                    block_size=BLOCK_SIZE, num_kv_heads=heads, head_size=head_size, dtype=dt, **kw
                )
                row[key] = spec.page_size_bytes // BLOCK_SIZE
            except Exception as e:  # recorded: the value has no spec of its own here
                row[key] = f"error: {type(e).__name__}"
        table[value] = row
    try:
        from vllm.config import CacheConfig

        CacheConfig(cache_dtype=INVALID)  # type: ignore[arg-type]
        refusal = ""
    except Exception as e:  # pydantic ValidationError: its per-field message
        errors = getattr(e, "errors", None)
        refusal = errors()[0]["msg"] if callable(errors) else str(e)
    return {
        "vllm_version": vllm.__version__,
        "accepted": accepted,
        "bytes_per_token_per_layer": table,
        "refusal": refusal,
        "invalid": INVALID,
    }


def merge(path: str) -> None:
    """One JSON document of the per-release lines."""
    with open(path) as f:
        # vLLM <= 0.30 logs to stdout: the document is each run's last line starting with "{"
        rows = [json.loads(line) for line in f if line.startswith("{")]
    print(json.dumps({r["vllm_version"]: r for r in rows}, indent=1, sort_keys=True))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--merge"]:
        merge(sys.argv[2])
    else:
        print(json.dumps(record(), sort_keys=True))
