"""vLLM's own answer beside cgplan's plan, field by field: the one comparison (pure, JSON in and out).

The answer is what the engine (cgplan/gpu/vllm_oracle.py: vLLM's config, dispatcher and
graph-manager code on a CPU) printed for a config; `vllm_answer` renames its fields into the plan's
JSON contract (cgplan/io/schema/plan.py), and `field_agreement` compares the two. `cgplan verify`,
the golden tests (tests/core/vllm/test_golden*.py) and scripts/golden_agreement.py all go through
here, so a rule that stops matching vLLM fails them alike.
"""

from __future__ import annotations

import re
from typing import Any

FIELDS = (
    "vllm_version",
    "model_runner",
    "cudagraph_mode",
    "compilation_mode",
    "capture_sizes",
    "max_capture_size",
    "dynamic_sd",
    "max_num_seqs",
    "max_num_batched_tokens",
    "attention_backend",
    "attention_cudagraph_support",
    "graphs",
    "uniform_decode",
    "mixed",
    "uniform_decode_lora1",
)
"""The plan's fields vLLM's code answers too, in the order they are compared."""

RULES: dict[str, str] = {
    "accept": "which configs vLLM starts with (cgplan/io/config.py, core/vllm/resolve.py)",
    "reason": "vLLM's reason for refusing a config (its first clause, in cgplan's message)",
    "vllm_version": "the release whose rules were applied",
    "model_runner": "V1 or V2 model runner (core/vllm/resolve.py)",
    "cudagraph_mode": "the cudagraph mode after the attention backend (core/vllm/resolve.py)",
    "compilation_mode": "the compilation mode (enforce_eager, TORCH_COMPILE_DISABLE; core/vllm/resolve.py)",
    "capture_sizes": "the capture-size ladder (core/vllm/ladder.py)",
    "max_capture_size": "max_cudagraph_capture_size (core/vllm/ladder.py)",
    "dynamic_sd": "the dynamic-SD schedule lookup (core/vllm/dynamic_sd.py)",
    "max_num_seqs": "vllm serve's default max_num_seqs for the GPU's tier (core/vllm/defaults.py)",
    "max_num_batched_tokens": "vllm serve's default max_num_batched_tokens (core/vllm/defaults.py)",
    "attention_backend": "the attention backend a GPU host picks (core/vllm/attention.py)",
    "attention_cudagraph_support": "its CUDA-graph support level (core/vllm/attention.py)",
    "graphs": "the graph sets per family (core/vllm/graphs.py)",
    "uniform_decode": "uniform-decode dispatch per request count (core/vllm/graphs.py)",
    "mixed": "mixed-batch dispatch per token count (core/vllm/graphs.py)",
    "uniform_decode_lora1": "decode dispatch with one LoRA adapter (core/vllm/graphs.py)",
}
"""Each compared field → the rule of cgplan that computes it (what drifts when the field differs)."""


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


def vllm_answer(doc: dict[str, Any]) -> dict[str, Any]:
    """The contract fields vLLM's own code computed for one config, or {"error": text} when vLLM
    refuses it. `doc` is the engine's JSON document; its release is `doc["_recorded"]
    ["vllm_version"]` when recorded, else the `vllm_version` the engine printed."""
    if doc.get("error"):
        return {"error": doc["error"]}
    # The engine's Scheduler validates the dynamic-SD schedule at start in every release, so a
    # schedule vLLM's own lookup rejects means vLLM refuses to start even where the config stage
    # (all the oracle reaches) let it through.
    dyn = doc.get("dynamic_sd")
    if dyn and dyn.get("error"):
        return {"error": dyn["error"]}
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
    version = (doc.get("_recorded") or {}).get("vllm_version") or doc.get("vllm_version")
    out: dict[str, Any] = {
        "vllm_version": version,
        "model_runner": "v2" if v2 else "v1",
        "cudagraph_mode": rt["resolved_cudagraph_mode"],
        "compilation_mode": cfg.get("compilation_mode"),
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
            # what the engine printed there ("capture failed (engine error): AssertionError: ..."),
            # and where: seen on a GPU run, not worded by vLLM's config code (its reason is not
            # compared)
            return {
                "error": "AssertionError: AssertionError (an H200 run, capturing the drafter's decode "
                "graphs)",
                "error_source": "gpu-run",
            }
        if "speculator_error" in side:
            raise AssertionError(f"the oracle could not build vLLM's speculator: {side['speculator_error']}")
        if "speculator" in side:
            # DFlash / DSpark: the speculator's own query manager (vllm_oracle.v2_parallel_speculator)
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
        if "uniform_decode_dispatch_lora1" in side["target"]:
            lora1 = side["target"]["uniform_decode_dispatch_lora1"]
            out["uniform_decode_lora1"] = {k: _ranges(v, "reqs") for k, v in lora1.items()}
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
    _contract_shape(out["graphs"])
    return out


def vllm_reason(error: str) -> str:
    """The sentence vLLM raised, without pydantic's wrapping ("1 validation error for X ...").

    >>> vllm_reason("ValueError: 1 validation error for VllmConfig\\n Value error, too big [type=x]")
    'too big'
    """
    text = " ".join(error.split())
    text = re.sub(r"^\w+Error: \d+ validation errors? for \w+ ", "", text)
    text = re.sub(r"^(Value error|Assertion failed), ", "", text)
    text = re.sub(r"^\w+Error: ", "", text)
    return text.split(" [type=")[0].strip()


REASON_CHARS = 60
"""How much of vLLM's reason (its first clause) cgplan's refusal must contain."""


def reason_agrees(vllm_error: str, cgplan_error: str) -> bool:
    """cgplan's refusal carries vLLM's reason (its first `REASON_CHARS` characters)."""
    reason = vllm_reason(vllm_error)[:REASON_CHARS]
    return reason in " ".join(cgplan_error.split())


DISPATCH_BY_QUERY_LEN = ("uniform_decode", "uniform_decode_lora1")
"""Dispatch tables keyed by decode query length: compared at the lengths vLLM's answer lists."""


def field_agreement(exp: dict[str, Any], got: dict[str, Any], *, reason: bool = False) -> dict[str, bool]:
    """Each compared field → whether cgplan's plan (`got`, the JSON contract or {"error": ...})
    agrees with vLLM's answer (`exp`, from `vllm_answer`). "accept": both start the config, or
    both refuse it; with `reason`, a refusal on both sides also compares vLLM's reason. A field
    vLLM's answer lacks is not compared; nor the attention fields where the engine resolved none,
    nor decode query lengths it did not dispatch.

    >>> field_agreement({"error": "x"}, {"capture_sizes": [1]})
    {'accept': False}
    """
    if "error" in exp or "error" in got:
        out = {"accept": ("error" in exp) == ("error" in got)}
        # a refusal seen on a GPU run is not worded by vLLM's code: its reason is not compared
        if reason and out["accept"] and exp.get("error_source") != "gpu-run":
            out["reason"] = reason_agrees(exp["error"], got["error"])
        return out
    out = {"accept": True}
    for key in FIELDS:
        if key not in exp:
            continue
        if key.startswith("attention") and exp[key] is None:
            continue
        if key in DISPATCH_BY_QUERY_LEN and isinstance(exp[key], dict):
            # per decode query length the engine dispatched (V1 dispatches one, the uniform
            # decode length; cgplan also lists the dynamic-SD tiers' own): those are compared
            mine = got.get(key)
            out[key] = isinstance(mine, dict) and all(mine.get(q) == rows for q, rows in exp[key].items())
            continue
        if key == "compilation_mode":
            # the plan's JSON names the mode only where it is not VLLM_COMPILE
            out[key] = exp[key] is None or got.get(key, "VLLM_COMPILE") == exp[key]
            continue
        out[key] = got.get(key) == exp[key]
    return out


def _sizes(value: object) -> str:
    if not isinstance(value, list) or not value:
        return "no sizes" if isinstance(value, list) else str(value)
    return f"{len(value)} sizes, {min(value)}..{max(value)}"


def _graph_counts(value: object) -> str:
    if not isinstance(value, dict):
        return str(value)
    parts = []
    for family, graphs in value.items():
        modes: dict[str, int] = {}
        for g in graphs:
            modes[g["mode"]] = modes.get(g["mode"], 0) + 1
        inner = " + ".join(f"{n} {m}" for m, n in sorted(modes.items(), key=lambda kv: kv[0] != "PIECEWISE"))
        parts.append(f"{family} {inner or 'none'}")
    return "; ".join(parts) or "no graphs"


def _row_of(rows: list[dict[str, Any]], unit: str, n: int) -> dict[str, Any] | None:
    return next((r for r in rows if r[f"from_{unit}"] <= n <= r[f"to_{unit}"]), None)


def _first_dispatch_difference(exp: list[dict[str, Any]], got: object, unit: str) -> tuple[str, str] | None:
    """(vLLM's, cgplan's) dispatch at the first request or token count where they differ."""
    rows = got if isinstance(got, list) else []
    last = max([r[f"to_{unit}"] for r in exp + rows] or [0])
    word = "requests" if unit == "reqs" else "tokens"
    for n in range(1, last + 1):
        a, b = _row_of(exp, unit, n), _row_of(rows, unit, n)
        ka = None if a is None else (a["mode"], a["padded_tokens"], a["padded_reqs"])
        kb = None if b is None else (b["mode"], b["padded_tokens"], b["padded_reqs"])
        if ka != kb:
            return f"{n} {word}: {_dispatch(a)}", f"{n} {word}: {_dispatch(b)}"
    return None


def _dispatch(row: dict[str, Any] | None) -> str:
    if row is None:
        return "not listed"
    if row["mode"] == "NONE":
        return "eager"
    return f"{row['mode']} padded to {row['padded_tokens']} tokens"


def describe_difference(key: str, exp: object, got: object) -> tuple[str, str]:
    """(vLLM's side, cgplan's side) of one differing field, in a few words each.

    >>> describe_difference("capture_sizes", [1, 2, 4], [1, 2])
    ('3 sizes, 1..4', '2 sizes, 1..2')
    """
    if key == "capture_sizes":
        return _sizes(exp), _sizes(got)
    if key == "graphs":
        return _graph_counts(exp), _graph_counts(got)
    if key == "mixed" and isinstance(exp, list):
        first = _first_dispatch_difference(exp, got, "tokens")
        if first is not None:
            return first
    if key in ("uniform_decode", "uniform_decode_lora1") and isinstance(exp, dict):
        other = got if isinstance(got, dict) else {}
        for q in sorted(exp, key=int):
            if q not in other:
                return f"query length {q} dispatched", f"query length {q} not listed"
            first = _first_dispatch_difference(exp[q], other[q], "reqs")
            if first is not None:
                return f"query length {q}, {first[0]}", f"query length {q}, {first[1]}"
    return _short(exp), _short(got)


def _short(value: object, limit: int = 80) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
