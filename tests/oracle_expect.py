"""Read a recorded oracle answer (tests/data/oracle/*.json) into the JSON contract's shape.

The oracle runs vLLM's own code; this only renames its fields. See
scripts/record_golden.py for how the files were made.
"""

from __future__ import annotations

from typing import Any


def _ranges(rows: list[dict[str, Any]], unit: str) -> list[dict[str, Any]]:
    return [
        {
            f"from_{unit}": r["from"],
            f"to_{unit}": r["to"],
            "mode": r["mode"],
            "padded_tokens": r["padded_tokens"],
            "padded_reqs": r["padded_reqs"],
        }
        for r in rows
    ]


def _v1_graphs(capture: list[dict[str, Any]], q: int) -> list[dict[str, Any]]:
    out = []
    for block in capture:
        uniform = True in block["uniform"]
        loras = block.get("num_active_loras") or [0] * len(block["num_tokens"])
        for t, r, la in zip(block["num_tokens"], block["num_reqs"], loras, strict=True):
            out.append(
                {
                    "mode": block["mode"],
                    "num_tokens": t,
                    "num_reqs": r,
                    "query_len": q if uniform else None,
                    "num_active_loras": la,
                    "num_ubatches": 1,
                }
            )
    return out


def _v2_graphs(capture: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for block in capture:
        n = len(block["descs"])
        loras = block.get("num_active_loras") or [0] * n
        ubatches = block.get("num_ubatches") or [1] * n
        for (t, r, u), la, ub in zip(block["descs"], loras, ubatches, strict=True):
            out.append(
                {
                    "mode": block["mode"],
                    "num_tokens": t,
                    "num_reqs": r,
                    "query_len": u,
                    "num_active_loras": la,
                    "num_ubatches": ub,
                }
            )
    return out


def _contract_shape(graphs: dict[str, list[dict[str, Any]]]) -> None:
    """The JSON contract lists num_active_loras / num_ubatches only in plans that have such graphs."""
    every = [g for gs in graphs.values() for g in gs]
    loras = any(g["num_active_loras"] for g in every)
    ubatches = any(g["num_ubatches"] != 1 for g in every)
    for g in every:
        if not loras:
            del g["num_active_loras"]
        if not ubatches:
            del g["num_ubatches"]


def expected(doc: dict[str, Any]) -> dict[str, Any]:
    """The contract fields vLLM's own code computed, or {"error": text} when it refused."""
    if doc.get("error"):
        return {"error": doc["error"]}
    if doc.get("runtime_error"):
        return {"error": doc["runtime_error"]}
    cfg, rt = doc["config"], doc["runtime"]
    q = cfg["uniform_decode_query_len"]
    v2 = bool(cfg["use_v2_model_runner"])
    if cfg.get("speculative_method") == "dspark" and not v2:
        # VLLM_USE_V2_MODEL_RUNNER=0 before 0.29 (0.29+ refuses it at config time): the V1 runner
        # takes dspark for an EAGLE proposer (use_eagle() includes it; vllm/config/vllm.py: "V1
        # can't run dspark"), which the oracle cannot run; cgplan refuses it as not modelled
        return {"error": "dspark on model runner V1 (not modelled)"}
    dyn = doc.get("dynamic_sd")
    out: dict[str, Any] = {
        "vllm_version": doc["_recorded"]["vllm_version"],
        "model_runner": "v2" if v2 else "v1",
        "cudagraph_mode": rt["resolved_cudagraph_mode"],
        "capture_sizes": rt["cudagraph_capture_sizes"],
        "max_capture_size": rt["max_cudagraph_capture_size"],
        "dynamic_sd": None if not dyn else {"lookup": dyn.get("lookup_ranges")},
        "attention_backend": doc.get("attention", {}).get("backend"),
        # the scheduler limits after vllm serve's defaults (the GPU's serve tier: GB10, RTX 5090)
        "max_num_seqs": cfg["max_num_seqs"],
        "max_num_batched_tokens": cfg["max_num_batched_tokens"],
        "attention_cudagraph_support": doc.get("attention", {}).get("cg_support"),
    }
    if v2:
        side = rt["v2"]
        out["graphs"] = {"target": _v2_graphs(side["target"]["capture"])}
        # vLLM 0.26-0.31 under dynamic SD give the drafter's decode manager query lengths
        # K_b + 1 - K; negative ones make descriptors with negative request counts, and the
        # engine fails an assertion capturing them (H200 run:
        # benchmarks/results/h200/tiny-eagle-dyn-v2-vllm.json). The oracle never captures.
        decode_descs = (side.get("drafter_decode") or {}).get("capture") or []
        if cfg["num_speculative_tokens"] > 1 and any(
            d[2] is not None and d[2] < 0 for block in decode_descs for d in block["descs"]
        ):
            return {"error": "AssertionError while capturing drafter decode graphs (GPU evidence)"}
        # The oracle builds EAGLE-style speculator managers for draft_model too, but
        # vLLM's V2 StandaloneARSpeculator.init_cudagraph_manager is `pass` ("CUDA
        # graph not yet supported for standalone AR speculator",
        # vllm/v1/worker/gpu/spec_decode/standalone_ar/speculator.py): no graphs.
        if "speculator" in side:
            # DFlash / DSpark: the speculator's own query manager (oracle.v2_parallel_speculator)
            out["graphs"]["drafter_query"] = _v2_graphs(side["speculator"]["query"]["capture"])
        if "drafter_prefill" in side and cfg.get("speculative_method") != "draft_model":
            out["graphs"]["drafter_prefill"] = _v2_graphs(side["drafter_prefill"]["capture"])
            decode = _v2_graphs(side["drafter_decode"]["capture"])
            out["graphs"]["drafter_decode"] = decode if cfg["num_speculative_tokens"] > 1 else []
        ud = side["target"]["uniform_decode_dispatch"]
        out["uniform_decode"] = {k: _ranges(v, "reqs") for k, v in ud.items()}
        out["mixed"] = _ranges(side["target"]["mixed_dispatch"], "tokens")
    else:
        side = rt["v1"]
        out["graphs"] = {"target": _v1_graphs(side["target"]["capture"], q)}
        if "drafter" in side:
            # The oracle lists the V1 proposer's dispatcher keys, one set per LoRA case. vLLM
            # captures drafter graphs only through the runner's `drafter.dummy_run`, which
            # dispatches without LoRA and is run without graphs for the adapter cases when
            # cudagraph_specialize_lora is on (gpu_model_runner, vLLM issue #28334): the
            # adapter keys are never captured (H200 run: benchmarks/results/h200/lora/).
            drafter = _v1_graphs(side["drafter"]["capture"], 1)
            out["graphs"]["drafter"] = [g for g in drafter if not g["num_active_loras"]]
            if "dummy_run_tokens" in side["drafter"]:
                # DFlash: keys above what max_query_tokens pads to are never captured
                top = max(side["drafter"]["dummy_run_tokens"], default=0)
                out["graphs"]["drafter"] = [g for g in out["graphs"]["drafter"] if g["num_tokens"] <= top]
        out["uniform_decode"] = {str(q): _ranges(side["target"]["uniform_decode_dispatch"], "reqs")}
        out["mixed"] = _ranges(side["target"]["mixed_dispatch"], "tokens")
        if "uniform_decode_dispatch_lora1" in side["target"]:
            lora1 = side["target"]["uniform_decode_dispatch_lora1"]
            out["uniform_decode_lora1"] = {str(q): _ranges(lora1, "reqs")}
    if v2 and "uniform_decode_dispatch_lora1" in side["target"]:
        lora1 = side["target"]["uniform_decode_dispatch_lora1"]
        out["uniform_decode_lora1"] = {k: _ranges(v, "reqs") for k, v in lora1.items()}
    _contract_shape(out["graphs"])
    return out
