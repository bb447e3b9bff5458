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
        # V1 captures a FULL decode descriptor microbatched (DBO, DP > 1) instead of plain
        ubatches = block.get("num_ubatches") or [1] * len(block["num_tokens"])
        for t, r, la, ub in zip(block["num_tokens"], block["num_reqs"], loras, ubatches, strict=True):
            out.append(
                {
                    "mode": block["mode"],
                    "num_tokens": t,
                    "num_reqs": r,
                    "query_len": q if uniform else None,
                    "num_active_loras": la,
                    "num_ubatches": ub,
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


def _v2_speculator(side: dict[str, Any], k: int) -> dict[str, list[dict[str, Any]]]:
    """The graph families of the speculator vLLM's own `init_speculator` built: its managers as
    `init_cudagraph_manager` made them; the decode manager captures nothing at K = 1
    (target_dependent_ar `capture` returns first) and, where its `capture` specialises per
    dynamic-SD K (0.32+), one graph per descriptor and K."""
    out: dict[str, list[dict[str, Any]]] = {}
    for family in ("drafter_prefill", "drafter_decode", "drafter"):
        if family not in side:
            continue
        block = side[family]
        graphs = _v2_graphs(block["capture"])
        if family == "drafter_decode":
            per_k = block.get("specialize_spec_tokens") or {}
            if k <= 1:
                graphs = []
            elif per_k.get("dynamic_sd") and per_k.get("supports_decode_metadata_update") is None:
                raise AssertionError(
                    "the oracle could not tell whether the drafter's backend specialises decode graphs "
                    f"per K: {per_k.get('supports_decode_metadata_update_note')}"
                )
            elif per_k.get("specialize"):
                graphs = [
                    {
                        "mode": m,
                        "num_tokens": t,
                        "num_reqs": r,
                        "query_len": u,
                        "num_active_loras": 0,
                        "num_ubatches": 1,
                        "num_speculative_tokens": kk,
                    }
                    for m, t, r, u, kk in per_k["descs"]
                ]
        out[family] = graphs
    return out


def _contract_shape(graphs: dict[str, list[dict[str, Any]]]) -> None:
    """The JSON contract lists num_active_loras / num_ubatches / num_speculative_tokens only in
    plans that have such graphs."""
    every = [g for gs in graphs.values() for g in gs]
    loras = any(g["num_active_loras"] for g in every)
    ubatches = any(g["num_ubatches"] != 1 for g in every)
    per_k = any(g.get("num_speculative_tokens") is not None for g in every)
    for g in every:
        if not loras:
            del g["num_active_loras"]
        if not ubatches:
            del g["num_ubatches"]
        if per_k:
            g.setdefault("num_speculative_tokens", None)


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
            # what the engine printed there ("capture failed (engine error): AssertionError: ...")
            return {"error": "AssertionError: AssertionError"}
        if "speculator_error" in side:
            raise AssertionError(f"the oracle could not build vLLM's speculator: {side['speculator_error']}")
        if "speculator" in side:
            # DFlash / DSpark: the speculator's own query manager (oracle.v2_parallel_speculator)
            out["graphs"]["drafter_query"] = _v2_graphs(side["speculator"]["query"]["capture"])
        elif "speculator_class" in side:
            out["graphs"].update(_v2_speculator(side, cfg["num_speculative_tokens"]))
        elif "drafter_prefill" in side and cfg.get("speculative_method") != "draft_model":
            # Records made before the oracle built vLLM's own speculator (init_speculator): it
            # built EAGLE-style managers by hand, for draft_model too, whose V2
            # StandaloneARSpeculator.init_cudagraph_manager is `pass`.
            out["graphs"]["drafter_prefill"] = _v2_graphs(side["drafter_prefill"]["capture"])
            decode = _v2_graphs(side["drafter_decode"]["capture"])
            out["graphs"]["drafter_decode"] = decode if cfg["num_speculative_tokens"] > 1 else []
        ud = side["target"]["uniform_decode_dispatch"]
        out["uniform_decode"] = {k: _ranges(v, "reqs") for k, v in ud.items()}
        out["mixed"] = _ranges(side["target"]["mixed_dispatch"], "tokens")
    else:
        side = rt["v1"]
        out["graphs"] = {"target": _v1_graphs(side["target"]["capture"], q)}
        if "drafter" in side and "captured" in side["drafter"]:
            # What the capture loop captures (the oracle runs it over the proposer's own keys):
            # drafter graphs only beside target PIECEWISE graphs, none for LoRA cases when
            # cudagraph_specialize_lora is on (gpu_model_runner; H200 run: benchmarks/results/h200/lora/).
            out["graphs"]["drafter"] = [
                {
                    "mode": m,
                    "num_tokens": t,
                    "num_reqs": r,
                    "query_len": None,
                    "num_active_loras": la,
                    "num_ubatches": 1,
                }
                for m, t, r, la in side["drafter"]["captured"]
            ]
            if "dummy_run_tokens" in side["drafter"]:
                # DFlash: DFlashProposer.dummy_run drafts at most max_query_tokens, so keys above
                # what that pads to (the proposer's own dispatcher) are never captured
                top = max(side["drafter"]["dummy_run_tokens"], default=0)
                out["graphs"]["drafter"] = [g for g in out["graphs"]["drafter"] if g["num_tokens"] <= top]
        elif "drafter" in side:
            # Records made before the oracle ran the capture loop: it listed the V1 proposer's
            # dispatcher keys, one set per LoRA case; vLLM captures drafter graphs only through the
            # runner's `drafter.dummy_run`, which dispatches without LoRA and is run without graphs
            # for the adapter cases when cudagraph_specialize_lora is on (vllm#28334).
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
