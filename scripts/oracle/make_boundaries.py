#!/usr/bin/env python3
"""Write the corpus of configs on both sides of every capture-size boundary (issue 35).

    python3 scripts/oracle/make_boundaries.py     # writes tests/data/corpus-boundaries/<name>.yaml

cgplan/core/vllm/ladder.py mirrors `VllmConfig._set_cudagraph_sizes`: a token grid of 1, 2, 4 (1..32
under performance_mode interactivity), multiples of 8 below 256, multiples of 16 from 256; a
request-count grid per decode tier (1, 2, 4, multiples of 8 below 256, of 16 from 256, the tier's
widest batch, at most the 512 / 1024 ceiling); max_num_batched_tokens appended when it is the
maximum; the sizes sequence parallelism keeps (multiples of TP). Each config here sits at one side
of one of these boundaries: a value one below, at, and one above each multiple of 8 and 16, each
256 / 512 / 1024 ceiling, each dynamic-SD tier's widest batch. The configs are generated, not the
answers: those come from vLLM's own code, recorded with

    python3 scripts/record_golden.py --venv-root /work/oracle-venvs --versions 0.26.0 0.29.0 0.31.0 0.33.0 \\
        --out-dir tests/data/oracle-boundaries tests/data/corpus-boundaries/*.yaml

and tests/core/vllm/test_golden_boundaries.py holds cgplan's plans to them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent.parent
OUT = REPO / "tests" / "data" / "corpus-boundaries"
LLAMA = "configs/models/tiny-llama"
WHISPER = "configs/models/tiny-whisper"


def cfg(
    mns: int,
    mbt: int = 8192,
    platform: str = "hopper",
    runner: str = "auto",
    model: str = LLAMA,
    **kw: object,
) -> dict:
    doc: dict = {"model": model, "max_model_len": 4096, "max_num_seqs": mns, "max_num_batched_tokens": mbt}
    doc.update(kw)
    doc["cgplan"] = {"vllm_version": "0.33.0", "platform": platform, "model_runner": runner}
    return doc


def sides(*centres: int) -> list[int]:
    """One below, at and one above each value."""
    return sorted({c + d for c in centres for d in (-1, 0, 1) if c + d >= 1})


def corpus() -> dict[str, tuple[str, dict]]:
    out: dict[str, tuple[str, dict]] = {}
    # The request-count grid at query length 7: n * 7 is a multiple of 8 only where n is, so every
    # request count shows as its own capture size; above 256 tokens (n >= 37) the token grid steps
    # by 16, so a count of 8 * odd shows even where the token grid has that size below 256.
    for mns in sides(8, 16, 40, 56, 72, 248, 256):
        out[f"rc-eagle-k6-mns{mns}"] = (
            f"request-count grid, query length 7, max_num_seqs {mns}",
            cfg(mns, speculative_config={"method": "eagle", "num_speculative_tokens": 6}),
        )
    # Above 256 requests the grid steps by 16, up to the ceiling: query length 2 on SM100
    # (ceiling 1024), so n * 2 reaches past 512.
    for mns in sides(272, 512):
        out[f"rc-eagle-k1-mns{mns}-bw"] = (
            f"request-count grid past 256 requests, SM100 ceiling 1024, max_num_seqs {mns}",
            cfg(
                mns, platform="blackwell", speculative_config={"method": "eagle", "num_speculative_tokens": 1}
            ),
        )
    # A dynamic-SD tier's widest batch on both sides of a multiple of 8: the tier at K=6 ends at w.
    for w in sides(40, 56):
        out[f"dyn-tier-w{w}"] = (
            f"dynamic SD, the K=6 tier's widest batch {w}",
            cfg(
                256,
                speculative_config={
                    "method": "eagle",
                    "num_speculative_tokens": 6,
                    "num_speculative_tokens_per_batch_size": [[1, w, 6], [w + 1, 256, 1]],
                },
            ),
        )
    # The token grid on an explicit scalar maximum (no speculation: no request-count sizes).
    # (and the smallest: a maximum of 0, refused with graphs on, 1 and 2)
    for size in [0, *sides(1, 8, 256, 272, 512)]:
        out[f"grid-max{size}"] = (
            f"token grid up to an explicit max_cudagraph_capture_size {size}",
            cfg(512, compilation_config={"max_cudagraph_capture_size": size}),
        )
    # The inferred maximum min(2 * max_num_seqs, 512): max_num_seqs around 128 and 256.
    for mns in sides(128, 256):
        out[f"grid-mns{mns}"] = (f"inferred maximum at max_num_seqs {mns}", cfg(mns))
    # max_num_batched_tokens below the maximum: appended as a size where it is not on the grid.
    for mbt in sides(1, 256, 272):
        out[f"grid-mbt{mbt}"] = (
            f"max_num_batched_tokens {mbt} under the maximum 512",
            cfg(min(mbt, 256), mbt=mbt),
        )
    # performance_mode interactivity: every size 1..32, then the grid.
    for size in sides(32):
        out[f"interactivity-max{size}"] = (
            f"performance_mode interactivity up to max_cudagraph_capture_size {size}",
            cfg(
                256, performance_mode="interactivity", compilation_config={"max_cudagraph_capture_size": size}
            ),
        )
    # Sequence parallelism (<= 0.31): sizes not a multiple of TP are removed (and logged), none when
    # every size is one; with speculation the multiple is max(query length, TP).
    for tp, mns in ((2, 1), (2, 2), (2, 3), (4, 3), (4, 4), (4, 5)):
        out[f"sp-tp{tp}-mns{mns}"] = (
            f"sequence parallelism at TP {tp}, max_num_seqs {mns}",
            cfg(
                mns,
                tensor_parallel_size=tp,
                compilation_config={"pass_config": {"enable_sp": True, "sp_min_token_num": 1}},
            ),
        )
    out["sp-tp2-sizes-even"] = (
        "sequence parallelism at TP 2 over explicit sizes that are all multiples of 2 (nothing removed)",
        cfg(
            32,
            tensor_parallel_size=2,
            compilation_config={
                "cudagraph_capture_sizes": [2, 4, 8, 16],
                "pass_config": {"enable_sp": True, "sp_min_token_num": 1},
            },
        ),
    )
    # Parallel sizes at 1 and 2 beside the features V2 refuses them with (vllm/config/vllm.py
    # `_get_dbo_unsupported_features`, `_get_v2_model_runner_unsupported_features`).
    dbo = {"enable_dbo": True, "all2all_backend": "deepep_low_latency", "data_parallel_size": 2}
    for pp in (1, 2):
        out[f"dbo-v2-pp{pp}"] = (
            f"DBO on model runner V2 with pipeline_parallel_size {pp}",
            cfg(32, runner="v2", pipeline_parallel_size=pp, **dbo),
        )
        out[f"eagle3-v2-pp{pp}"] = (
            f"EAGLE3 on model runner V2 with pipeline_parallel_size {pp}",
            cfg(
                32,
                runner="v2",
                pipeline_parallel_size=pp,
                speculative_config={"method": "eagle3", "num_speculative_tokens": 3},
            ),
        )
    for dcp in (1, 2):
        out[f"dbo-v2-dcp{dcp}-mla"] = (
            f"DBO on model runner V2 with decode_context_parallel_size {dcp} (MLA, TP 2)",
            cfg(
                32,
                runner="v2",
                model="configs/models/tiny-deepseek-v3",
                tensor_parallel_size=2,
                decode_context_parallel_size=dcp,
                **dbo,
            ),
        )
    # Sequence parallelism's size heuristic (<= 0.31, pass_config.sp_min_token_num unset):
    # get_sequence_parallelism_threshold (vllm/compilation/passes/fusion/sequence_parallelism.py)
    # keeps SP on only on SM 9.0 and the SM10x family (SP_MIN_HIDDEN_SIZE and
    # SP_MIN_PER_GPU_SIZE_MB) and only for hidden_size >= 8192: each platform at hidden sizes 8128 and
    # 8192, at TP 2 and 8 (the per-GPU size MB times TP over hidden_size * 2 bytes puts the token
    # threshold below max_num_batched_tokens 8192 on Hopper at both and on Blackwell at TP 2, above
    # it on Blackwell at TP 8). max_num_seqs 32: the sizes 1, 2, 4 show whether SP removed them.
    sp_heur = {"pass_config": {"enable_sp": True}}
    for platform in ("hopper", "blackwell"):
        for hidden in (8128, 8192):
            for tp in (2, 8):
                out[f"sp-heur-{platform}-h{hidden}-tp{tp}"] = (
                    f"sequence parallelism's size heuristic on {platform}, hidden_size {hidden}, TP {tp}",
                    cfg(
                        32,
                        platform=platform,
                        model=f"configs/models/wide-llama-h{hidden}",
                        tensor_parallel_size=tp,
                        compilation_config=sp_heur,
                    ),
                )
    for platform in ("ampere", "rtx-blackwell"):  # no threshold for SM 8.0 and 12.0
        out[f"sp-heur-{platform}-h8192-tp2"] = (
            f"sequence parallelism's size heuristic on {platform}, hidden_size 8192, TP 2",
            cfg(
                32,
                platform=platform,
                model="configs/models/wide-llama-h8192",
                tensor_parallel_size=2,
                compilation_config=sp_heur,
            ),
        )
    # V1's `adjust_cudagraph_sizes_for_spec_decode`: sizes round up to multiples of the query length
    # (or of TP under sequence parallelism), those above the maximum dropped; when none is left
    # but the multiple itself fits under the maximum, the multiple is the one size ("round down"),
    # else vLLM refuses. Query length 4 (EAGLE K=3) and TP 4 with SP (no speculation) over explicit
    # sizes: all above the last multiple (5..7: round down to 4), the multiple among them, the next
    # multiple among them, and a maximum below the multiple (refused).
    v1_k3 = {"method": "eagle", "num_speculative_tokens": 3}
    for label, sizes in (("5-7", [5, 6, 7]), ("4-7", [4, 5, 6, 7]), ("5-8", [5, 6, 7, 8]), ("2-3", [2, 3])):
        out[f"v1-round-k3-sizes{label}"] = (
            f"V1 rounding to multiples of query length 4 over cudagraph_capture_sizes {sizes}",
            cfg(
                32,
                runner="v1",
                speculative_config=v1_k3,
                compilation_config={"cudagraph_capture_sizes": sizes},
            ),
        )
    for label, sizes in (("5-7", [5, 6, 7]), ("2-3", [2, 3])):
        out[f"sp-v1-round-tp4-sizes{label}"] = (
            f"V1 rounding to multiples of TP 4 under sequence parallelism, cudagraph_capture_sizes {sizes}",
            cfg(
                32,
                runner="v1",
                tensor_parallel_size=4,
                compilation_config={
                    "cudagraph_capture_sizes": sizes,
                    "pass_config": {"enable_sp": True, "sp_min_token_num": 1},
                },
            ),
        )
    # resolve_cudagraph_mode_and_sizes: a FULL decode mode with spec-decode (query length > 1) on an
    # attention backend below UNIFORM_BATCH is downgraded; query length 2 (EAGLE K=1) is the first
    # side past it (tests/data/corpus holds query lengths 1 and 4).
    for runner in ("auto", "v1"):
        out[f"attn-single-token-k1-{runner}"] = (
            f"attention support UNIFORM_SINGLE_TOKEN_DECODE with EAGLE K=1, runner {runner}",
            cfg(32, runner=runner, speculative_config={"method": "eagle", "num_speculative_tokens": 1}),
        )
        out[f"attn-single-token-k1-{runner}"][1]["cgplan"]["attention_cudagraph_support"] = (
            "UNIFORM_SINGLE_TOKEN_DECODE"
        )
    # resolve_cudagraph_mode_and_sizes's three downgrades on both sides of "attention is a splitting
    # op": compiled with VLLM_COMPILE (it is) or not compiled into pieces (compilation mode 0: it is
    # not), for a FULL mixed mode below ALWAYS (FULL_AND_PIECEWISE or FULL_DECODE_ONLY), a FULL
    # decode mode under NEVER (PIECEWISE or NONE) and a FULL decode mode with spec-decode below
    # UNIFORM_BATCH (PIECEWISE or NONE).
    downgrades = {
        "never-fdo": ("NEVER", "FULL_DECODE_ONLY", None),
        "never-full": ("NEVER", "FULL", None),
        "uniform-full": ("UNIFORM_BATCH", "FULL", None),
        "single-token-fdo-k1": ("UNIFORM_SINGLE_TOKEN_DECODE", "FULL_DECODE_ONLY", 1),
    }
    for name, (support, mode, k) in downgrades.items():
        for comp_name, comp in (("compiled", 3), ("compile-none", 0)):
            spec = (
                {} if k is None else {"speculative_config": {"method": "eagle", "num_speculative_tokens": k}}
            )
            key = f"attn-{name}-{comp_name}"
            out[key] = (
                f"attention support {support}, cudagraph_mode {mode}, compilation mode {comp}",
                cfg(32, runner="v1", compilation_config={"mode": comp, "cudagraph_mode": mode}, **spec),
            )
            out[key][1]["cgplan"]["attention_cudagraph_support"] = support
    # get_captured_lora_counts under specialize_active_lora: the powers of two in 1..max_loras + 1 and
    # max_loras + 1; max_loras 2 and 6 put a power of two (4, 8) just past max_loras + 1.
    for max_loras in (2, 6):
        for runner in ("auto", "v1"):
            out[f"lora-active-m{max_loras}-{runner}"] = (
                f"LoRA, max_loras {max_loras}, specialize_active_lora, runner {runner}",
                cfg(32, runner=runner, enable_lora=True, max_loras=max_loras, specialize_active_lora=True),
            )
    # DBO on model runner V2 with cudagraph_mode FULL (0.30.0+ `_maybe_ubatch_twin`): a FULL mixed
    # descriptor (num_tokens = size, num_reqs = min(size, max_num_seqs)) gets a microbatched twin
    # when its tokens split evenly over its requests and reach dbo_decode_token_threshold. Explicit
    # sizes at max_num_seqs 6 (8 does not split over 6 requests, 12, 18 and 24 do) and thresholds one
    # below, at and one above size 12; then the default ladder and threshold.
    for thr in (11, 12, 13):
        out[f"dbo-v2-full-mns6-thr{thr}"] = (
            f"DBO, model runner V2, cudagraph_mode FULL, max_num_seqs 6, dbo_decode_token_threshold {thr}",
            cfg(
                6,
                runner="v2",
                dbo_decode_token_threshold=thr,
                compilation_config={
                    "cudagraph_mode": "FULL",
                    "cudagraph_capture_sizes": [4, 6, 8, 12, 18, 24],
                },
                **dbo,
            ),
        )
    out["dbo-v2-full-mns32"] = (
        "DBO, model runner V2, cudagraph_mode FULL, max_num_seqs 32, the default ladder and threshold",
        cfg(32, runner="v2", compilation_config={"cudagraph_mode": "FULL"}, **dbo),
    )
    # The mode overrides that come after the compile-mode normalisation (0.30.0+ normalise again):
    # an encoder-decoder model, a layerwise KV connector, a forced-V2 drafter under each
    # compilation mode that compiles nothing into pieces.
    layerwise = {
        "kv_connector": "LMCacheConnectorV1",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {"use_layerwise": True},
    }
    dspark = {"method": "dspark", "model": "configs/models/tiny-dspark", "num_speculative_tokens": 3}
    for name, comp in (("none", 0), ("stock", 1), ("dynamo-once", 2)):
        out[f"compile-{name}-encdec"] = (
            f"compilation mode {comp} on an encoder-decoder model",
            cfg(16, model=WHISPER, max_model_len=448, compilation_config={"mode": comp}),
        )
        out[f"compile-{name}-kv-layerwise"] = (
            f"compilation mode {comp} with a layerwise KV connector",
            cfg(64, kv_transfer_config=layerwise, compilation_config={"mode": comp}),
        )
        out[f"compile-{name}-dspark"] = (
            f"compilation mode {comp} with DSpark (V2 before any other check, 0.26.0-0.28.0)",
            cfg(64, speculative_config=dspark, compilation_config={"mode": comp}),
        )
        # cudagraph_mode FULL (no piecewise half for the first normalisation to take) turned
        # PIECEWISE by the override: 0.30.0+ normalise that again, 0.26-0.29 keep it
        out[f"compile-{name}-kv-layerwise-full"] = (
            f"compilation mode {comp}, cudagraph_mode FULL, with a layerwise KV connector",
            cfg(
                64, kv_transfer_config=layerwise, compilation_config={"mode": comp, "cudagraph_mode": "FULL"}
            ),
        )
        out[f"compile-{name}-pooling-full"] = (
            f"compilation mode {comp}, cudagraph_mode FULL, --runner pooling",
            cfg(64, runner="auto", compilation_config={"mode": comp, "cudagraph_mode": "FULL"}),
        )
        out[f"compile-{name}-pooling-full"][1]["runner"] = "pooling"
    # The -O level's default compilation mode (VLLM_COMPILE above -O0, none at -O0) under an explicit
    # piecewise cudagraph_mode, which a mode that compiles nothing into pieces normalises.
    for level in (0, 1):
        out[f"o{level}-full-and-piecewise"] = (
            f"-O{level} with cudagraph_mode FULL_AND_PIECEWISE",
            cfg(64, optimization_level=level, compilation_config={"cudagraph_mode": "FULL_AND_PIECEWISE"}),
        )
    # DFlash's draft layers on SM100 (FLASH_ATTN for a non-causal one): a draft config's `is_causal`
    # read first from 0.28.0 (`_dflash_layer_causal`), the tiny draft otherwise non-causal
    out["dflash-is-causal-bw"] = (
        "DFlash K=3 on SM100 with a draft config that sets is_causal: true",
        cfg(
            64,
            platform="blackwell",
            speculative_config={
                "method": "dflash",
                "model": "configs/models/tiny-dflash-is-causal",
                "num_speculative_tokens": 3,
            },
        ),
    )
    # The runner's own checks on an explicit runner: V1 refuses DSpark (0.29+) and async scheduling
    # with pipeline parallelism (0.31+); V2 asked for by name takes both.
    dspark_k3 = {"method": "dspark", "model": "configs/models/tiny-dspark", "num_speculative_tokens": 3}
    for runner in ("v1", "v2"):
        out[f"runner-{runner}-dspark"] = (
            f"DSpark K=3 on model runner {runner.upper()} by name",
            cfg(64, runner=runner, speculative_config=dspark_k3),
        )
        out[f"runner-{runner}-pp2-async"] = (
            f"pipeline parallel 2 with async scheduling on model runner {runner.upper()} by name",
            cfg(64, runner=runner, pipeline_parallel_size=2, async_scheduling=True),
        )
    # Decode context parallelism on a GQA model (tiny-llama: 8 KV heads): TP must exceed the KV heads
    # (one below, at and one above 8), then DCP must be at most TP // KV heads.
    for tp in (4, 8, 16):
        out[f"dcp2-tp{tp}-gqa8"] = (
            f"decode context parallel 2 at TP {tp} on a model with 8 KV heads",
            cfg(32, tensor_parallel_size=tp, decode_context_parallel_size=2),
        )
    return out


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    docs = corpus()
    for name, (comment, doc) in docs.items():
        text = f"# {comment} (generated by scripts/oracle/make_boundaries.py)\n" + yaml.safe_dump(
            doc, sort_keys=False
        )
        (OUT / f"{name}.yaml").write_text(text)
    print(f"wrote {len(docs)} configs to {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
