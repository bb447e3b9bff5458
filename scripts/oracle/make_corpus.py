#!/usr/bin/env python3
"""Write the corpus of configs around the parallel, LoRA, DBO and validation rules (issue 16).

    python3 scripts/oracle/make_corpus.py            # writes tests/data/corpus-deploy/<name>.yaml

Each config sits on one side of one of vLLM's rules (the comment in the file names it); the
answers come from vLLM's own code through `make golden` (scripts/record_golden.py). The
configs are generated, not the answers: nothing here says what vLLM does.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent.parent
OUT = REPO / "tests" / "data" / "corpus-deploy"
LLAMA = "configs/models/tiny-llama"
DSV3 = "configs/models/tiny-deepseek-v3"
DSV3_MTP2 = "configs/models/tiny-deepseek-v3-mtp2"  # two MTP layers (num_nextn_predict_layers)
DSV3_MTP3 = "configs/models/tiny-deepseek-v3-mtp3"
GQA3 = "configs/models/tiny-gqa3"  # 6 query heads, 2 KV heads: 3 query heads per KV head
GLM45 = "configs/models/moe-glm45"  # num_nextn_predict_layers: 0


def cfg(model: str = LLAMA, mns: int = 32, mbt: int = 8192, **kw: object) -> dict:
    doc: dict = {"model": model, "max_model_len": 4096, "max_num_seqs": mns, "max_num_batched_tokens": mbt}
    cg = kw.pop("cgplan", {})
    doc.update(kw)
    doc["cgplan"] = {"vllm_version": "0.33.0", "platform": "hopper", "model_runner": "auto", **cg}
    return doc


EAGLE3 = {"method": "eagle", "num_speculative_tokens": 3}
DYN = {
    "method": "eagle",
    "num_speculative_tokens": 3,
    "num_speculative_tokens_per_batch_size": [[1, 8, 3], [9, 32, 1]],
}
MTP5 = {"method": "mtp", "num_speculative_tokens": 5}
# vLLM refuses microbatching with the default all-to-all backend (allgather_reducescatter)
A2A = "deepep_low_latency"
HT = "deepep_high_throughput"
DYN_K4 = {
    "method": "eagle",
    "num_speculative_tokens": 4,
    "num_speculative_tokens_per_batch_size": [[1, 8, 4], [9, 16, 2], [17, 32, 1]],
}


def mtp(k: int) -> dict:
    return {"method": "mtp", "num_speculative_tokens": k}


CORPUS: dict[str, tuple[str, dict]] = {
    # LoRA: CudagraphDispatcher._get_lora_cases / V2 get_lora_capture_cases
    "lora-m1": ("LoRA, max_loras 1 (cudagraph_specialize_lora default)", cfg(enable_lora=True, max_loras=1)),
    "lora-m3": ("LoRA, max_loras 3", cfg(enable_lora=True, max_loras=3)),
    "lora-m4-v1": (
        "LoRA, max_loras 4, runner V1",
        cfg(enable_lora=True, max_loras=4, cgplan={"model_runner": "v1"}),
    ),
    "lora-m3-nospec-v1": (
        "LoRA, cudagraph_specialize_lora false, runner V1",
        cfg(
            enable_lora=True,
            max_loras=3,
            compilation_config={"cudagraph_specialize_lora": False},
            cgplan={"model_runner": "v1"},
        ),
    ),
    "lora-m3-nospec-v2": (
        "LoRA, cudagraph_specialize_lora false, runner V2",
        cfg(
            enable_lora=True,
            max_loras=3,
            compilation_config={"cudagraph_specialize_lora": False},
            cgplan={"model_runner": "v2"},
        ),
    ),
    "lora-m2-eagle-k3": (
        "LoRA with EAGLE K=3",
        cfg(enable_lora=True, max_loras=2, speculative_config=EAGLE3),
    ),
    "lora-m2-eagle-k3-v1": (
        "LoRA with EAGLE K=3, runner V1",
        cfg(enable_lora=True, max_loras=2, speculative_config=EAGLE3, cgplan={"model_runner": "v1"}),
    ),
    "lora-m3-active": (
        "LoRA, max_loras 3, specialize_active_lora (a graph set per adapter count 1, 2, 4)",
        cfg(enable_lora=True, max_loras=3, specialize_active_lora=True),
    ),
    "lora-m3-active-v1": (
        "LoRA, max_loras 3, specialize_active_lora, runner V1",
        cfg(enable_lora=True, max_loras=3, specialize_active_lora=True, cgplan={"model_runner": "v1"}),
    ),
    "lora-m3-active-nospec-v1": (
        "LoRA, specialize_active_lora without cudagraph_specialize_lora (no effect), runner V1",
        cfg(
            enable_lora=True,
            max_loras=3,
            specialize_active_lora=True,
            compilation_config={"cudagraph_specialize_lora": False},
            cgplan={"model_runner": "v1"},
        ),
    ),
    # DBO / microbatching: ParallelConfig.use_ubatching, V2 _maybe_ubatch_twin, runner choice
    "dbo-auto": ("enable_dbo, runner auto, default all2all backend", cfg(enable_dbo=True)),
    "dbo-a2a-auto": ("enable_dbo, runner auto", cfg(enable_dbo=True, all2all_backend=A2A)),
    "dbo-dp2-auto": (
        "enable_dbo, DP 2, runner auto",
        cfg(enable_dbo=True, all2all_backend=A2A, data_parallel_size=2),
    ),
    "dbo-dp2-v2": (
        "enable_dbo, DP 2, V2 forced",
        cfg(enable_dbo=True, all2all_backend=A2A, data_parallel_size=2, cgplan={"model_runner": "v2"}),
    ),
    "dbo-dp2-v2-thr8": (
        "enable_dbo, DP 2, V2, dbo_decode_token_threshold 8",
        cfg(
            enable_dbo=True,
            all2all_backend=A2A,
            data_parallel_size=2,
            dbo_decode_token_threshold=8,
            cgplan={"model_runner": "v2"},
        ),
    ),
    "dbo-dp1-v2": (
        "enable_dbo, DP 1, V2 forced",
        cfg(enable_dbo=True, all2all_backend=A2A, cgplan={"model_runner": "v2"}),
    ),
    "dbo-dp2-v1": (
        "enable_dbo, DP 2, V1",
        cfg(enable_dbo=True, all2all_backend=A2A, data_parallel_size=2, cgplan={"model_runner": "v1"}),
    ),
    "dbo-thr1": (
        "enable_dbo with dbo_decode_token_threshold 1 (below 2 microbatches)",
        cfg(enable_dbo=True, all2all_backend=A2A, dbo_decode_token_threshold=1),
    ),
    "dbo-dp2-v2-eagle": (
        "enable_dbo, DP 2, V2, EAGLE K=3",
        cfg(
            enable_dbo=True,
            all2all_backend=A2A,
            data_parallel_size=2,
            speculative_config=EAGLE3,
            cgplan={"model_runner": "v2"},
        ),
    ),
    "dbo-dp2-v2-lora": (
        "enable_dbo, DP 2, V2, LoRA",
        cfg(
            enable_dbo=True,
            all2all_backend=A2A,
            data_parallel_size=2,
            enable_lora=True,
            max_loras=2,
            cgplan={"model_runner": "v2"},
        ),
    ),
    "dbo-dp2-v2-piecewise": (
        "enable_dbo, DP 2, V2, PIECEWISE",
        cfg(
            enable_dbo=True,
            all2all_backend=A2A,
            data_parallel_size=2,
            compilation_config={"cudagraph_mode": "PIECEWISE"},
            cgplan={"model_runner": "v2"},
        ),
    ),
    "ubatch3-dp2-v2": (
        "ubatch_size 3, DP 2, V2",
        cfg(ubatch_size=3, all2all_backend=A2A, data_parallel_size=2, cgplan={"model_runner": "v2"}),
    ),
    # DP: _maybe_disable_dynamic_sd_for_data_parallel; ladders per rank
    "dp2-nospec": ("DP 2", cfg(data_parallel_size=2)),
    "dp4-eagle-k3": ("DP 4, EAGLE K=3", cfg(data_parallel_size=4, speculative_config=EAGLE3)),
    "dp2-dyn": (
        "DP 2 with a dynamic-SD schedule (disabled by DP)",
        cfg(data_parallel_size=2, speculative_config=DYN),
    ),
    # PP: runner choice (V1 + async scheduling), per-stage managers
    "pp2": ("PP 2", cfg(pipeline_parallel_size=2)),
    "pp2-async": ("PP 2, async scheduling", cfg(pipeline_parallel_size=2, async_scheduling=True)),
    "pp2-async-v1": (
        "PP 2, async scheduling, V1 forced",
        cfg(pipeline_parallel_size=2, async_scheduling=True, cgplan={"model_runner": "v1"}),
    ),
    "pp2-eagle-k3": ("PP 2, EAGLE K=3", cfg(pipeline_parallel_size=2, speculative_config=EAGLE3)),
    # DCP: decode_context_parallel_size against TP and the attention backend
    "dcp2-tp2-mla": (
        "DCP 2, TP 2, MLA model",
        cfg(model=DSV3, tensor_parallel_size=2, decode_context_parallel_size=2),
    ),
    "dcp4-tp4-mla-mtp": (
        "DCP 4, TP 4, MLA, MTP K=1",
        cfg(
            model=DSV3,
            tensor_parallel_size=4,
            decode_context_parallel_size=4,
            speculative_config={"method": "mtp", "num_speculative_tokens": 1},
        ),
    ),
    "dcp2-tp2-llama": (
        "DCP 2, TP 2, dense model",
        cfg(tensor_parallel_size=2, decode_context_parallel_size=2),
    ),
    "dcp4-tp2": ("DCP 4 above TP 2", cfg(model=DSV3, tensor_parallel_size=2, decode_context_parallel_size=4)),
    # EP: enable_expert_parallel on an MoE model
    "ep-tp2-moe": ("EP, TP 2, MoE", cfg(model=DSV3, tensor_parallel_size=2, enable_expert_parallel=True)),
    "ep-dp2-moe-mtp": (
        "EP, DP 2, MoE, MTP K=1",
        cfg(
            model=DSV3,
            data_parallel_size=2,
            enable_expert_parallel=True,
            speculative_config={"method": "mtp", "num_speculative_tokens": 1},
        ),
    ),
    "ep-dense": ("EP on a dense model", cfg(enable_expert_parallel=True, tensor_parallel_size=2)),
    # The MoE+MLA deployment shape of issue 16 (MTP K=5, 32 requests, 4096 batched tokens, TP4, DCP4, SM120)
    "deploy-mla-mtp5-tp4-dcp4-sm120": (
        "issue 16's deployment: MoE+MLA, MTP K=5, 32 requests, 4096 batched tokens, TP 4, DCP 4, SM120",
        cfg(
            model=DSV3,
            mns=32,
            mbt=4096,
            tensor_parallel_size=4,
            decode_context_parallel_size=4,
            speculative_config=MTP5,
            cgplan={"platform": "rtx-blackwell"},
        ),
    ),
    # Validation: what vLLM accepts and refuses
    "valid-eager-with-sizes": (
        "enforce_eager with capture sizes set (graph-only values, graphs off)",
        cfg(
            enforce_eager=True,
            compilation_config={"cudagraph_capture_sizes": [1, 2, 4], "max_cudagraph_capture_size": 4},
        ),
    ),
    "valid-eager-inconsistent-max": (
        "enforce_eager with a list and a max that disagree (vLLM checks them only with graphs on)",
        cfg(
            enforce_eager=True,
            compilation_config={"cudagraph_capture_sizes": [1, 2, 4], "max_cudagraph_capture_size": 64},
        ),
    ),
    "valid-none-inconsistent-max": (
        "cudagraph_mode NONE with a list and a max that disagree",
        cfg(
            compilation_config={
                "cudagraph_mode": "NONE",
                "cudagraph_capture_sizes": [1, 2, 4],
                "max_cudagraph_capture_size": 64,
            }
        ),
    ),
    "valid-o0-inconsistent-max": (
        "-O0 with a list and a max that disagree",
        cfg(
            optimization_level=0,
            compilation_config={"cudagraph_capture_sizes": [1, 2, 4], "max_cudagraph_capture_size": 64},
        ),
    ),
    "valid-none-with-max": (
        "cudagraph_mode NONE with max_cudagraph_capture_size",
        cfg(compilation_config={"cudagraph_mode": "NONE", "max_cudagraph_capture_size": 64}),
    ),
    "valid-mbt-below-spec-slots": (
        "max_num_batched_tokens 128 < 64 requests x (1+3) speculative slots",
        cfg(mns=64, mbt=128, speculative_config=EAGLE3),
    ),
    "valid-mbt-equal-spec-slots": (
        "max_num_batched_tokens = 64 x (1+3)",
        cfg(mns=64, mbt=256, speculative_config=EAGLE3),
    ),
    "valid-mbt-one-below-spec-slots": (
        "max_num_batched_tokens = 64 x (1+3) - 1",
        cfg(mns=64, mbt=255, speculative_config=EAGLE3),
    ),
    "valid-mbt-below-mtp5": (
        "max_num_batched_tokens 100 < 32 x 6, MTP",
        cfg(model=DSV3, mns=32, mbt=100, speculative_config=MTP5),
    ),
    "valid-mml-above-model": (
        "max_model_len 8192 above max_position_embeddings 4096",
        {**cfg(), "max_model_len": 8192},
    ),
    "valid-mbt-below-mml": ("max_num_batched_tokens 2048 below max_model_len 4096", cfg(mbt=2048)),
    "valid-mns-above-mbt": ("max_num_seqs 64 above max_num_batched_tokens 32", cfg(mns=64, mbt=32)),
    # #27 (a): set_splitting_ops_for_v1: DeepEP high-throughput with DP > 1 (the MoE DP size;
    # 1 for a dense model) turns CUDA graphs off, under VLLM_COMPILE only
    "a2a-ht-dp2-moe": (
        "DeepEP high-throughput, DP 2, MoE",
        cfg(model=DSV3, data_parallel_size=2, all2all_backend=HT),
    ),
    "a2a-ht-dp2-moe-ep": (
        "DeepEP high-throughput, DP 2, EP, MoE",
        cfg(model=DSV3, data_parallel_size=2, enable_expert_parallel=True, all2all_backend=HT),
    ),
    "a2a-ht-dp1-moe": ("DeepEP high-throughput, DP 1, MoE", cfg(model=DSV3, all2all_backend=HT)),
    "a2a-ht-dp2-dense": (
        "DeepEP high-throughput, DP 2, dense model",
        cfg(data_parallel_size=2, all2all_backend=HT),
    ),
    "a2a-ll-dp2-moe": (
        "DeepEP low-latency, DP 2, MoE",
        cfg(model=DSV3, data_parallel_size=2, all2all_backend=A2A),
    ),
    "a2a-ht-dp2-moe-o0": (
        "DeepEP high-throughput, DP 2, MoE, -O0 (no VLLM_COMPILE)",
        cfg(model=DSV3, data_parallel_size=2, all2all_backend=HT, optimization_level=0),
    ),
    "a2a-ht-dp2-moe-mtp": (
        "DeepEP high-throughput, DP 2, MoE, MTP K=1",
        cfg(model=DSV3, data_parallel_size=2, all2all_backend=HT, speculative_config=mtp(1)),
    ),
    "a2a-ht-dp2-moe-v1": (
        "DeepEP high-throughput, DP 2, MoE, V1",
        cfg(model=DSV3, data_parallel_size=2, all2all_backend=HT, cgplan={"model_runner": "v1"}),
    ),
    # #27 (b): ModelConfig.verify_with_parallel_config: heads by TP; DCP on GQA needs the query
    # heads per KV head divisible by DCP
    "dcp-gqa-tp6-dcp2": (
        "DCP 2, TP 6, 3 query heads per KV head",
        cfg(model=GQA3, tensor_parallel_size=6, decode_context_parallel_size=2),
    ),
    "dcp-gqa-tp6-dcp3": (
        "DCP 3, TP 6, 3 query heads per KV head",
        cfg(model=GQA3, tensor_parallel_size=6, decode_context_parallel_size=3),
    ),
    "dcp-gqa-tp6-dcp6": (
        "DCP 6 above TP 6 // 2 KV heads",
        cfg(model=GQA3, tensor_parallel_size=6, decode_context_parallel_size=6),
    ),
    "dcp-gqa-tp3": ("TP 3, 6 heads (no DCP)", cfg(model=GQA3, tensor_parallel_size=3)),
    "dcp-gqa-tp4-heads6": ("TP 4 does not divide 6 attention heads", cfg(model=GQA3, tensor_parallel_size=4)),
    # #27 (c), (d): SpeculativeConfig: K above n_predict must be a multiple of it; init_speculator:
    # min(MTP layers, K) > 1 builds the multi-module MTP speculator (0.28+), one manager
    "mtp-layers2-k1": ("2 MTP layers, K=1", cfg(model=DSV3_MTP2, speculative_config=mtp(1))),
    "mtp-layers2-k2": ("2 MTP layers, K=2", cfg(model=DSV3_MTP2, speculative_config=mtp(2))),
    "mtp-layers2-k3": ("2 MTP layers, K=3 (not a multiple)", cfg(model=DSV3_MTP2, speculative_config=mtp(3))),
    "mtp-layers2-k4": ("2 MTP layers, K=4 (a multiple)", cfg(model=DSV3_MTP2, speculative_config=mtp(4))),
    "mtp-layers3-k2": (
        "3 MTP layers, K=2 (below the layers)",
        cfg(model=DSV3_MTP3, speculative_config=mtp(2)),
    ),
    "mtp-layers3-k5": ("3 MTP layers, K=5 (not a multiple)", cfg(model=DSV3_MTP3, speculative_config=mtp(5))),
    "mtp-layers3-k6": ("3 MTP layers, K=6 (a multiple)", cfg(model=DSV3_MTP3, speculative_config=mtp(6))),
    "mtp-layers1-k3": ("1 MTP layer, K=3", cfg(model=DSV3, speculative_config=mtp(3))),
    "mtp-layers0-glm-k1": (
        "num_nextn_predict_layers 0, MTP K=1",
        cfg(model=GLM45, speculative_config=mtp(1)),
    ),
    "mtp-layers2-k2-v2": (
        "2 MTP layers, K=2, V2 forced",
        cfg(model=DSV3_MTP2, speculative_config=mtp(2), cgplan={"model_runner": "v2"}),
    ),
    "mtp-layers2-k2-v1": (
        "2 MTP layers, K=2, V1",
        cfg(model=DSV3_MTP2, speculative_config=mtp(2), cgplan={"model_runner": "v1"}),
    ),
    "mtp-layers2-k2-piecewise": (
        "2 MTP layers, K=2, PIECEWISE, V2",
        cfg(
            model=DSV3_MTP2,
            speculative_config=mtp(2),
            compilation_config={"cudagraph_mode": "PIECEWISE"},
            cgplan={"model_runner": "v2"},
        ),
    ),
    "mtp-layers2-k2-full": (
        "2 MTP layers, K=2, FULL, V2",
        cfg(
            model=DSV3_MTP2,
            speculative_config=mtp(2),
            compilation_config={"cudagraph_mode": "FULL"},
            cgplan={"model_runner": "v2"},
        ),
    ),
    "mtp-layers2-k2-fdo": (
        "2 MTP layers, K=2, FULL_DECODE_ONLY, V2",
        cfg(
            model=DSV3_MTP2,
            speculative_config=mtp(2),
            compilation_config={"cudagraph_mode": "FULL_DECODE_ONLY"},
            cgplan={"model_runner": "v2"},
        ),
    ),
    "mtp-layers3-k3-mns64-v2": (
        "3 MTP layers, K=3, 64 requests, V2",
        cfg(model=DSV3_MTP3, mns=64, speculative_config=mtp(3), cgplan={"model_runner": "v2"}),
    ),
    "mtp-layers2-k2-dyn-v2": (
        "2 MTP layers, K=2, dynamic SD, V2",
        cfg(
            model=DSV3_MTP2,
            speculative_config={**mtp(2), "num_speculative_tokens_per_batch_size": [[1, 8, 2], [9, 32, 1]]},
            cgplan={"model_runner": "v2"},
        ),
    ),
    # #27 (e), (i): VllmConfig._set_max_num_scheduled_tokens, release by release
    "budget-eagle-k3-mbt3": (
        "EAGLE K=3, 1 request, 3 batched tokens",
        cfg(mns=1, mbt=3, speculative_config=EAGLE3),
    ),
    "budget-eagle-k3-mbt4": (
        "EAGLE K=3, 1 request, 4 batched tokens",
        cfg(mns=1, mbt=4, speculative_config=EAGLE3),
    ),
    "budget-mtp-k2-mbt2": (
        "MTP K=2, 1 request, 2 batched tokens",
        cfg(model=DSV3, mns=1, mbt=2, speculative_config=mtp(2)),
    ),
    "budget-ngram-k3-mbt2": (
        "ngram K=3, 1 request, 2 batched tokens",
        cfg(mns=1, mbt=2, speculative_config={"method": "ngram", "num_speculative_tokens": 3}),
    ),
    "budget-draft-k1-mbt1": (
        "draft model K=1, 1 request, 1 batched token",
        cfg(
            mns=1,
            mbt=1,
            speculative_config={"method": "draft_model", "num_speculative_tokens": 1, "model": LLAMA},
        ),
    ),
    "budget-draft-k3-mbt-eq-mns": (
        "draft model K=3, 8 requests, 8 batched tokens",
        cfg(
            mns=8,
            mbt=8,
            speculative_config={"method": "draft_model", "num_speculative_tokens": 3, "model": LLAMA},
        ),
    ),
    "budget-draft-k3-mbt9-mns8": (
        "draft model K=3, 8 requests, 9 batched tokens",
        cfg(
            mns=8,
            mbt=9,
            speculative_config={"method": "draft_model", "num_speculative_tokens": 3, "model": LLAMA},
        ),
    ),
    # #27 (i): _set_cudagraph_sizes: graphs-off configs take an empty list and a zero maximum;
    # with graphs on both are refused (its assertions)
    "off-none-empty-sizes": (
        "cudagraph_mode NONE, cudagraph_capture_sizes []",
        cfg(compilation_config={"cudagraph_mode": "NONE", "cudagraph_capture_sizes": []}),
    ),
    "off-none-max0": (
        "cudagraph_mode NONE, max_cudagraph_capture_size 0",
        cfg(compilation_config={"cudagraph_mode": "NONE", "max_cudagraph_capture_size": 0}),
    ),
    "off-none-empty-max0": (
        "cudagraph_mode NONE, [] and 0",
        cfg(
            compilation_config={
                "cudagraph_mode": "NONE",
                "cudagraph_capture_sizes": [],
                "max_cudagraph_capture_size": 0,
            }
        ),
    ),
    "off-eager-max0": (
        "enforce_eager, max_cudagraph_capture_size 0",
        cfg(enforce_eager=True, compilation_config={"max_cudagraph_capture_size": 0}),
    ),
    "off-o0-empty-sizes": (
        "-O0, cudagraph_capture_sizes []",
        cfg(optimization_level=0, compilation_config={"cudagraph_capture_sizes": []}),
    ),
    "off-on-empty-sizes": (
        "graphs on, cudagraph_capture_sizes []",
        cfg(compilation_config={"cudagraph_capture_sizes": []}),
    ),
    "off-on-max0": (
        "graphs on, max_cudagraph_capture_size 0",
        cfg(compilation_config={"max_cudagraph_capture_size": 0}),
    ),
    "off-piecewise-empty-max0": (
        "PIECEWISE, [] and 0",
        cfg(
            compilation_config={
                "cudagraph_mode": "PIECEWISE",
                "cudagraph_capture_sizes": [],
                "max_cudagraph_capture_size": 0,
            }
        ),
    ),
    "off-none-eagle-empty-sizes": (
        "cudagraph_mode NONE, EAGLE K=3, cudagraph_capture_sizes []",
        cfg(
            speculative_config=EAGLE3,
            compilation_config={"cudagraph_mode": "NONE", "cudagraph_capture_sizes": []},
        ),
    ),
    # #27 (f): V1 captures drafter graphs only beside target PIECEWISE captures
    "v1-drafter-full-eagle": (
        "V1, FULL, EAGLE K=3",
        cfg(
            speculative_config=EAGLE3,
            compilation_config={"cudagraph_mode": "FULL"},
            cgplan={"model_runner": "v1"},
        ),
    ),
    "v1-drafter-fap-eagle": (
        "V1, FULL_AND_PIECEWISE, EAGLE K=3",
        cfg(
            speculative_config=EAGLE3,
            compilation_config={"cudagraph_mode": "FULL_AND_PIECEWISE"},
            cgplan={"model_runner": "v1"},
        ),
    ),
    "v1-drafter-full-mtp": (
        "V1, FULL, MTP K=1",
        cfg(
            model=DSV3,
            speculative_config=mtp(1),
            compilation_config={"cudagraph_mode": "FULL"},
            cgplan={"model_runner": "v1"},
        ),
    ),
    "v1-drafter-full-lora": (
        "V1, FULL, EAGLE K=3, LoRA",
        cfg(
            speculative_config=EAGLE3,
            enable_lora=True,
            max_loras=2,
            compilation_config={"cudagraph_mode": "FULL"},
            cgplan={"model_runner": "v1"},
        ),
    ),
    # #27 (g): V2 drafter decode graphs once per dynamic-SD K (0.32+) where the backend refreshes
    # decode metadata in place
    "perk-dyn-k4-v2": (
        "dynamic SD K 4/2/1, V2",
        cfg(speculative_config=DYN_K4, cgplan={"model_runner": "v2"}),
    ),
    "perk-dyn-k4-triton": (
        "dynamic SD K 4/2/1, V2, TRITON_ATTN",
        cfg(speculative_config=DYN_K4, cgplan={"model_runner": "v2", "attention_backend": "TRITON_ATTN"}),
    ),
    "perk-dyn-k4-flashinfer-hopper": (
        "dynamic SD K 4/2/1, V2, FlashInfer on Hopper (XQA decode)",
        cfg(speculative_config=DYN_K4, cgplan={"model_runner": "v2", "attention_backend": "FLASHINFER"}),
    ),
    "perk-dyn-k4-flashinfer-bw": (
        "dynamic SD K 4/2/1, V2, FlashInfer on Blackwell (TRT-LLM gen decode)",
        cfg(speculative_config=DYN_K4, cgplan={"model_runner": "v2", "platform": "blackwell"}),
    ),
    "perk-dyn-k4-dcp3": (
        "dynamic SD K 4/2/1, V2, DCP 3, TP 6",
        cfg(
            model=GQA3,
            tensor_parallel_size=6,
            decode_context_parallel_size=3,
            speculative_config=DYN_K4,
            cgplan={"model_runner": "v2"},
        ),
    ),
    "perk-dyn-mtp-mla": (
        "dynamic SD, MTP K=2 on one MTP layer, V2, MLA (FLASH_ATTN_MLA)",
        cfg(
            model=DSV3,
            speculative_config={**mtp(2), "num_speculative_tokens_per_batch_size": [[1, 8, 2], [9, 32, 1]]},
            cgplan={"model_runner": "v2"},
        ),
    ),
    "perk-dyn-k2-only": (
        "dynamic SD whose only K above 1 is 2, V2",
        cfg(
            speculative_config={
                "method": "eagle",
                "num_speculative_tokens": 2,
                "num_speculative_tokens_per_batch_size": [[1, 32, 2]],
            },
            cgplan={"model_runner": "v2"},
        ),
    ),
    # #27 (h): V1 captures FULL uniform-decode graphs over the DBO decode threshold microbatched
    # when DP > 1 (gpu_model_runner._capture_cudagraphs)
    "dbo-v1-dp2-fdo": (
        "enable_dbo, DP 2, V1, FULL_DECODE_ONLY",
        cfg(
            enable_dbo=True,
            all2all_backend=A2A,
            data_parallel_size=2,
            compilation_config={"cudagraph_mode": "FULL_DECODE_ONLY"},
            cgplan={"model_runner": "v1"},
        ),
    ),
    "dbo-v1-dp2-full": (
        "enable_dbo, DP 2, V1, FULL",
        cfg(
            enable_dbo=True,
            all2all_backend=A2A,
            data_parallel_size=2,
            compilation_config={"cudagraph_mode": "FULL"},
            cgplan={"model_runner": "v1"},
        ),
    ),
    "dbo-v1-dp2-thr8": (
        "enable_dbo, DP 2, V1, decode threshold 8",
        cfg(
            enable_dbo=True,
            all2all_backend=A2A,
            data_parallel_size=2,
            dbo_decode_token_threshold=8,
            cgplan={"model_runner": "v1"},
        ),
    ),
    "dbo-v1-dp1": (
        "enable_dbo, DP 1, V1",
        cfg(enable_dbo=True, all2all_backend=A2A, cgplan={"model_runner": "v1"}),
    ),
    "dbo-v1-dp2-eagle": (
        "enable_dbo, DP 2, V1, EAGLE K=3",
        cfg(
            enable_dbo=True,
            all2all_backend=A2A,
            data_parallel_size=2,
            speculative_config=EAGLE3,
            cgplan={"model_runner": "v1"},
        ),
    ),
    "dbo-v1-dp2-moe": (
        "enable_dbo, DP 2, V1, MoE",
        cfg(
            model=DSV3,
            enable_dbo=True,
            all2all_backend=A2A,
            data_parallel_size=2,
            cgplan={"model_runner": "v1"},
        ),
    ),
}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (comment, doc) in CORPUS.items():
        text = f"# {comment} (generated by scripts/oracle/make_corpus.py)\n" + yaml.safe_dump(
            doc, sort_keys=False
        )
        (OUT / f"{name}.yaml").write_text(text)
    print(f"wrote {len(CORPUS)} configs to {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
