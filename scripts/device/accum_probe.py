"""FlashAttention-3 split-KV accumulators during CUDA-graph capture, without a vLLM engine.

Checks the rule in docs/notes/v2-full-accumulator.md on the GPU by calling vLLM 0.26.0's own FA3
entry points (`vllm.vllm_flash_attn.get_scheduler_metadata` and `flash_attn_varlen_func`) the way
vLLM's FlashAttention backend calls them for a V2 FULL capture (decode batch, paged KV, block
size 16, causal, max_seqlen_k = max_model_len, num_splits = 32, scheduler metadata computed
outside the graph), and reading PyTorch's allocator:

part A  per case, eager: the peak bytes one FA3 call allocates beyond its preallocated output
        (softmax_lse + out_accum + softmax_lse_accum), against the rule
        splits = 32 if num_reqs <= 992 else 1 (0 accumulators), out_accum = splits*H*T*dv*4,
        lse_accum = splits*H*T*4. Cases with num_splits=0 record FA3's own heuristic (eager).
part B  per case, captured: L attention calls inside one torch.cuda.graph with a fresh private
        pool, three ways -- B1 nothing else allocated (expect one accumulator), B2 a tensor that
        lives across the next attention call allocated right after each call while the pool
        holds no other free block that fits (expect two), B3 as B2 but with a free block of
        that size in the pool beforehand (expect one), B4 as B3 but that free block was left by
        an earlier capture into the same pool on another stream, as vLLM's PIECEWISE graphs leave
        theirs (expect two: the allocator keeps free blocks per stream). Segments are listed from
        torch.cuda.memory_snapshot(). B2/B3 show the best-fit mechanism proposed for the
        second accumulator; they do not show which vLLM tensor does it.

usage (on the lent GPU, vLLM 0.26.0 on PYTHONPATH, e.g. after `bash .devx/scripts/dev.sh setup`):
    PYTHONPATH=/tmp/site python3 scripts/device/accum_probe.py --out $OUT/accum_probe.json
CPU check of the flow (no torch needed):
    python3 scripts/device/accum_probe.py --dry-run
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from typing import Any

MiB = 1 << 20
SPLITS_CAP = 32  # vllm/config/attention.py:42 flash_attn_max_num_splits_for_cuda_graph
MAX_BATCHES_1CTA = 992  # FA3 hopper/flash_api.cpp PREPARE_VARLEN_MAX_BATCHES_1CTA
BLOCK_SIZE = 16
T0 = time.perf_counter()


def log(*a: object) -> None:
    print(f"[accum_probe {time.perf_counter() - T0:6.1f}s]", *a, flush=True)


@dataclass(frozen=True)
class Case:
    name: str
    heads: int  # query heads per rank
    kv_heads: int
    head_dim: int
    num_reqs: int
    query_len: int = 1
    max_model_len: int = 4096
    num_splits: int = SPLITS_CAP  # what vLLM passes during capture; 0 = FA3 heuristic
    capture: bool = False  # also run part B

    @property
    def tokens(self) -> int:
        return self.num_reqs * self.query_len


CASES = (
    # the measured first V2 FULL graphs (benchmarks/results/h200/**), one call each
    Case("llama8b-r512", 32, 8, 128, 512, capture=True),  # fit-llama8b-mns1024: 566 MiB = 2 x 256 + 54
    Case("llama8b-r992", 32, 8, 128, 992),  # fit-llama8b-mns1024-max1024, second FULL: 496
    Case("llama8b-r993", 32, 8, 128, 993),  # just past FA3's 992-batch limit: no split
    Case("llama8b-r1024", 32, 8, 128, 1024, capture=True),  # ...-max1024 first FULL: 170, none
    Case("llama8b-r256", 32, 8, 128, 256),  # llama8b-mns256: 182 = 128 + 54
    Case("qwen14b-r256", 40, 8, 128, 256, capture=True),  # fit-qwen14b-mns256: 374 = 2 x 160 + 54
    Case("qwen14b-r512", 40, 8, 128, 512),  # test-qwen14b-mns1024-mbt16k: 396 = 320 + 76
    Case("llama3b-r768", 24, 8, 128, 768),  # test-llama3b-mns768: 362 = 288 + 74
    Case("llama3b-r128", 24, 8, 128, 128),  # ctl-llama3b-mns128: 106 = 48 + 58
    Case("medllama-r256-hd64", 32, 8, 64, 256, max_model_len=2048),  # med-llama-mns256: 124
    Case("llama8b-r64-q4", 32, 8, 128, 64, query_len=4),  # EAGLE k3 target: 256 tokens, 182
    Case("llama8b-tp2-r128", 16, 4, 128, 128),  # tp2/llama8b-tp2-mns128: 72
    # predictions the rule makes where nothing was measured
    Case("llama8b-r256-q4", 32, 8, 128, 256, query_len=4),  # 1024 tokens but 256 reqs: 512 MiB
    Case("llama8b-r992-mml32k", 32, 8, 128, 992, max_model_len=32768),  # max_model_len plays no part
    # FA3's own heuristic (eager batches above max_cudagraph_size get num_splits=0)
    Case("llama8b-r512-heur", 32, 8, 128, 512, num_splits=0),
    Case("llama8b-r1-heur", 32, 8, 128, 1, num_splits=0),
    Case("llama8b-r1024-heur", 32, 8, 128, 1024, num_splits=0),
)


def rule(c: Case) -> dict[str, Any]:
    """The rule of docs/notes/v2-full-accumulator.md for one FA3 call (None where FA3's heuristic
    decides)."""
    capped = 1 if c.num_reqs > MAX_BATCHES_1CTA else c.num_splits  # FA3 mha_fwd: no split past 992
    splits = None if c.num_splits <= 0 else capped
    if splits is None:
        return {"splits": None, "out_accum_bytes": None, "lse_accum_bytes": None}
    n = splits if splits > 1 else 0
    return {
        "splits": splits,
        "out_accum_bytes": n * c.heads * c.tokens * c.head_dim * 4,
        "lse_accum_bytes": n * c.heads * c.tokens * 4,
    }


# ----------------------------------------------------------------------------------- GPU side


class Gpu:
    def __init__(self) -> None:
        import torch

        self.torch = torch
        from vllm.vllm_flash_attn import flash_attn_varlen_func, get_scheduler_metadata

        self.fa = flash_attn_varlen_func
        self.sched = get_scheduler_metadata
        self.dev = torch.device("cuda")
        p = torch.cuda.get_device_properties(0)
        self.info = {
            "gpu": p.name,
            "sms": p.multi_processor_count,
            "capability": list(torch.cuda.get_device_capability(0)),
            "torch": torch.__version__,
        }
        try:
            import vllm

            self.info["vllm"] = vllm.__version__
        except Exception as e:
            self.info["vllm"] = f"? {e}"

    def inputs(self, c: Case) -> dict[str, Any]:
        """What vLLM's V2 capture hands FA3 for a uniform decode batch (make_dummy: seq_len =
        query_len; max_seq_len = max_model_len; dummy block table)."""
        t = self.torch
        T = c.tokens
        q = t.randn(T, c.heads, c.head_dim, device=self.dev, dtype=t.bfloat16)
        nblk = 64
        k = t.randn(nblk, BLOCK_SIZE, c.kv_heads, c.head_dim, device=self.dev, dtype=t.bfloat16)
        v = t.randn_like(k)
        width = -(-c.max_model_len // BLOCK_SIZE)
        block_table = t.zeros(c.num_reqs, width, dtype=t.int32, device=self.dev)
        seqused_k = t.full((c.num_reqs,), c.query_len, dtype=t.int32, device=self.dev)
        cu = t.arange(0, T + 1, c.query_len, dtype=t.int32, device=self.dev)
        out = t.empty_like(q)
        sm = self.sched(
            batch_size=c.num_reqs,
            max_seqlen_q=c.query_len,
            max_seqlen_k=c.max_model_len,
            num_heads_q=c.heads,
            num_heads_kv=c.kv_heads,
            headdim=c.head_dim,
            cache_seqlens=seqused_k,
            qkv_dtype=t.bfloat16,
            cu_seqlens_q=cu,
            page_size=BLOCK_SIZE,
            causal=True,
            window_size=(-1, -1),
            num_splits=c.num_splits,
        )
        return {
            "q": q,
            "k": k,
            "v": v,
            "out": out,
            "cu": cu,
            "seqused_k": seqused_k,
            "block_table": block_table,
            "sm": sm,
        }

    def call(self, c: Case, x: dict[str, Any]) -> None:
        self.fa(
            q=x["q"],
            k=x["k"],
            v=x["v"],
            out=x["out"],
            cu_seqlens_q=x["cu"],
            max_seqlen_q=c.query_len,
            seqused_k=x["seqused_k"],
            max_seqlen_k=c.max_model_len,
            softmax_scale=c.head_dim**-0.5,
            causal=True,
            window_size=[-1, -1],
            block_table=x["block_table"],
            softcap=0.0,
            scheduler_metadata=x["sm"],
            fa_version=3,
            num_splits=c.num_splits,
        )

    def eager(self, c: Case) -> dict[str, Any]:
        t = self.torch
        x = self.inputs(c)
        self.call(c, x)  # first call: kernels load, nothing cached that matters
        t.cuda.synchronize()
        t.cuda.empty_cache()
        base = t.cuda.memory_allocated()
        t.cuda.reset_peak_memory_stats()
        self.call(c, x)
        t.cuda.synchronize()
        peak = t.cuda.max_memory_allocated() - base
        lse = c.heads * c.tokens * 4  # softmax_lse, always allocated
        extra = peak - lse
        return {
            "peak_extra_bytes": peak,
            "softmax_lse_bytes": lse,
            "accum_bytes_measured": extra,
            "accum_mib_measured": round(extra / MiB, 3),
            "scheduler_metadata_len": int(x["sm"].numel()) if x["sm"] is not None else None,
        }

    def pool_segments(self, pool: Any) -> list[dict[str, Any]]:
        segs = []
        for s in self.torch.cuda.memory_snapshot():
            if tuple(s.get("segment_pool_id", ())) != tuple(pool):
                continue
            segs.append(
                {
                    "size_mib": round(s["total_size"] / MiB, 3),
                    "allocated_mib": round(s["allocated_size"] / MiB, 3),
                    "blocks": [
                        (round(b["size"] / MiB, 3), b["state"]) for b in s["blocks"] if b["size"] >= MiB // 2
                    ],
                }
            )
        return sorted(segs, key=lambda s: -s["size_mib"])

    def captured(self, c: Case, variant: str, layers: int = 6) -> dict[str, Any]:
        """L attention calls in one capture into a fresh private pool."""
        t = self.torch
        x = self.inputs(c)
        self.call(c, x)  # warmup outside the pool, as vLLM's V2 manager does (cudagraph_utils.py:325)
        t.cuda.synchronize()
        # A tensor that lives across the next attention call (as a residual stream tensor does).
        # 24 MiB: larger than the 20 MiB segment that lse_accum's first allocation (< 10 MiB)
        # creates, so in a fresh pool the only free block that fits it is the freed out_accum.
        live_bytes = 24 * MiB
        pool = t.cuda.graph_pool_handle()
        g = t.cuda.CUDAGraph()
        t.cuda.synchronize()
        t.cuda.empty_cache()
        r0 = t.cuda.memory_reserved()
        if variant == "B4":
            # the spare block comes from an earlier capture into the same pool on another stream,
            # as vLLM's PIECEWISE graphs capture with stream=current_stream()
            # (vllm/compilation/cuda_graph.py:313-316) while V2's FULL graphs take torch's
            # default capture stream (vllm/v1/worker/gpu/cudagraph_utils.py:349)
            g0 = t.cuda.CUDAGraph()
            s_pw = t.cuda.Stream()
            with t.cuda.graph(g0, pool=pool, stream=s_pw):
                spare = t.empty(live_bytes, dtype=t.uint8, device=self.dev)
                spare.zero_()
                del spare
            t.cuda.synchronize()
            self._keep_g0 = g0
        with t.cuda.graph(g, pool=pool):
            if variant == "B3":
                # a free block that fits the live tensor waits in the pool (as PIECEWISE leftovers would)
                spare = t.empty(live_bytes, dtype=t.uint8, device=self.dev)
                del spare
            live: list[Any] = []
            for _ in range(layers):
                self.call(c, x)  # its out_accum/lse_accum are freed when it returns
                if variant in ("B2", "B3", "B4"):
                    live.clear()  # the previous one lived across this call; now it dies
                    live.append(t.empty(live_bytes, dtype=t.uint8, device=self.dev))
            live.clear()
        t.cuda.synchronize()
        r1 = t.cuda.memory_reserved()
        try:
            segs: Any = self.pool_segments(pool)
        except Exception as e:
            segs = f"snapshot failed: {e}"
        del g
        self._keep_g0 = None
        return {
            "variant": variant,
            "layers": layers,
            "live_tensor_mib": round(live_bytes / MiB, 3),
            "reserved_delta_mib": round((r1 - r0) / MiB, 3),
            "pool_segments": segs,
        }


# ----------------------------------------------------------------------------------- dry run


class Dry:
    """Stands in for the GPU: answers with the rule's numbers so the flow and JSON can be checked."""

    def __init__(self) -> None:
        self.info = {"gpu": "dry-run (no GPU)", "sms": 132, "capability": [9, 0], "torch": None, "vllm": None}

    def eager(self, c: Case) -> dict[str, Any]:
        r = rule(c)
        acc = (r["out_accum_bytes"] or 0) + (r["lse_accum_bytes"] or 0)
        lse = c.heads * c.tokens * 4
        return {
            "peak_extra_bytes": acc + lse,
            "softmax_lse_bytes": lse,
            "accum_bytes_measured": acc,
            "accum_mib_measured": round(acc / MiB, 3),
            "scheduler_metadata_len": None,
        }

    def captured(self, c: Case, variant: str, layers: int = 6) -> dict[str, Any]:
        acc = (rule(c)["out_accum_bytes"] or 0) / MiB
        n = 2 if variant in ("B2", "B4") and acc else 1
        return {
            "variant": variant,
            "layers": layers,
            "live_tensor_mib": 24.0,
            "reserved_delta_mib": round(n * acc, 3),
            "pool_segments": [],
            "expect": "B1: one accumulator; B2: two; B3: one (+ the 24 MiB block); "
            "B4: two if blocks are per stream",
        }


# ------------------------------------------------------------------- part C (optional, --engine)


def engine_trace(model: str, max_num_seqs: int, max_model_len: int, out_dir: str) -> dict[str, Any]:
    """Start one in-process vLLM engine (V2 runner, dummy weights) and record PyTorch's allocator
    history during its first V2 FULL capture only (the first torch.cuda.graph section without an
    explicit stream). Reports which allocations sat inside an accumulator segment while the next
    FA3 call needed a fresh one: the tensor behind a second accumulator, if there is one."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_USE_V2_MODEL_RUNNER", "1")
    os.environ.setdefault("VLLM_USE_FLASHINFER_SAMPLER", "0")
    import torch

    with open(os.path.join(model, "config.json")) as f:
        cfg = json.load(f)
    heads = cfg["num_attention_heads"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // heads
    state: dict[str, Any] = {"done": False, "snapshot": None, "capture_stream": None}
    cls = torch.cuda.graph
    orig_enter, orig_exit = cls.__enter__, cls.__exit__

    def enter(self: Any) -> Any:
        # V2's FULL graphs are the sections without an explicit stream (cudagraph_utils.py:349);
        # recording starts before torch's own empty_cache and capture_begin
        first_full = (
            not state["done"]
            and state["capture_stream"] is None
            and self.capture_stream is cls.default_capture_stream
        )
        if first_full:
            state["capture_stream"] = self.capture_stream
            torch.cuda.memory._record_memory_history(
                enabled="all", context="alloc", stacks="python", max_entries=400_000
            )
        out = orig_enter(self)
        if first_full:
            state["reserved0"] = torch.cuda.memory_reserved()
        return out

    def exit_(self: Any, *exc: Any) -> Any:
        out = orig_exit(self, *exc)
        if state["capture_stream"] is not None and not state["done"]:
            state["snapshot"] = torch.cuda.memory._snapshot()
            torch.cuda.memory._record_memory_history(enabled=None)
            state["reserved1"] = torch.cuda.memory_reserved()
            state["done"] = True
        return out

    cls.__enter__, cls.__exit__ = enter, exit_
    t0 = time.perf_counter()
    try:
        from vllm import LLM

        llm = LLM(
            model=model,
            load_format="dummy",
            skip_tokenizer_init=True,
            max_num_seqs=max_num_seqs,
            max_model_len=max_model_len,
            max_num_batched_tokens=8192,
            gpu_memory_utilization=0.85,
            dtype="bfloat16",
        )
        del llm
    finally:
        cls.__enter__, cls.__exit__ = orig_enter, orig_exit
    res: dict[str, Any] = {
        "model": model,
        "max_num_seqs": max_num_seqs,
        "engine_s": round(time.perf_counter() - t0, 1),
        "reserved_delta_mib": round((state.get("reserved1", 0) - state.get("reserved0", 0)) / MiB, 3),
    }
    snap = state["snapshot"]
    if snap is None:
        res["error"] = "no V2 FULL capture seen"
        return res
    try:
        import pickle

        with open(os.path.join(out_dir, "first_full_snapshot.pickle"), "wb") as f:
            pickle.dump(snap, f)
    except Exception as e:
        res["snapshot_write_error"] = str(e)
    res.update(analyse_trace(snap, heads, hd))
    return res


def _frames(ev: dict[str, Any], n: int = 8) -> list[str]:
    out = []
    for fr in ev.get("frames", []):
        fn = str(fr.get("filename", ""))
        if "torch/cuda/memory" in fn or fn.endswith("accum_probe.py"):
            continue
        out.append(f"{fn.split('site-packages/')[-1]}:{fr.get('line')} {fr.get('name')}")
        if len(out) >= n:
            break
    return out


def analyse_trace(snap: dict[str, Any], heads: int, hd: int) -> dict[str, Any]:
    """Walk the allocator trace of one capture: segments created, the out_accum allocations
    (the allocations of splits*heads*T*hd*4 bytes for some T), and what was alive inside an
    accumulator segment when the next out_accum needed a segment of its own."""
    trace = [ev for dev in snap.get("device_traces", []) for ev in dev]
    segs: list[tuple[int, int]] = []  # (addr, size) of segments created during the capture
    live: dict[int, dict[str, Any]] = {}
    acc_size = None
    acc_segments: list[int] = []
    blockers: list[dict[str, Any]] = []
    seg_allocs = []

    def seg_of(addr: int) -> int | None:
        for i, (a, z) in enumerate(segs):
            if a <= addr < a + z:
                return i
        return None

    for k, ev in enumerate(trace):
        act, addr, size = ev.get("action"), int(ev.get("addr", 0)), int(ev.get("size", 0))
        if act == "segment_alloc":
            segs.append((addr, size))
            seg_allocs.append({"index": k, "size_mib": round(size / MiB, 3)})
        elif act == "alloc":
            # FA3 allocates out_accum [splits, H, T, dv] and then at once softmax_lse_accum
            # [splits, H, T]: an allocation followed by one hd times smaller is an out_accum
            nxt = next((e for e in trace[k + 1 : k + 4] if e.get("action") == "alloc"), None)
            is_acc = size >= 4 * MiB and nxt is not None and int(nxt.get("size", 0)) * hd == size
            if is_acc and (acc_size is None or size == acc_size):
                acc_size = size
                si = seg_of(addr)
                if si is not None and si not in acc_segments:
                    # a new segment for the accumulator: who blocked the old ones?
                    for old in acc_segments:
                        a0, z0 = segs[old]
                        for la, info in live.items():
                            if a0 <= la < a0 + z0:
                                blockers.append(
                                    {
                                        "at_event": k,
                                        "in_segment_mib": round(z0 / MiB, 3),
                                        "size_mib": round(info["size"] / MiB, 4),
                                        "offset_mib": round((la - a0) / MiB, 3),
                                        "allocated_at_event": info["k"],
                                        "frames": info["frames"],
                                    }
                                )
                    acc_segments.append(si)
            live[addr] = {"size": size, "k": k, "frames": _frames(ev)}
        elif act in ("free_requested", "free_completed", "free"):
            live.pop(addr, None)
    return {
        "events": len(trace),
        "segments_created": seg_allocs[:200],
        "out_accum_bytes": acc_size,
        "accumulator_segments": len(acc_segments),
        "blockers": blockers[:40],
    }


def verdict(c: Case, r: dict[str, Any], m: dict[str, Any]) -> str | None:
    if r["splits"] is None:
        return None
    want = (r["out_accum_bytes"] or 0) + (r["lse_accum_bytes"] or 0)
    got = m.get("accum_bytes_measured")
    if got is None:
        return "no reading"
    return "match" if abs(got - want) <= MiB else f"differs by {(got - want) / MiB:+.2f} MiB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "/tmp"), "accum_probe.json"))
    ap.add_argument("--dry-run", action="store_true", help="no GPU, no torch: check the flow and the JSON")
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--no-capture", action="store_true", help="skip part B")
    ap.add_argument("--budget-s", type=float, default=200.0, help="stop starting cases after this")
    ap.add_argument(
        "--engine",
        default="",
        help="part C: also start one vLLM engine on this model folder (e.g. configs/models/llama-3.1-8b) "
        "and trace the allocator during its first V2 FULL capture (about 2.5 min for the 8B)",
    )
    ap.add_argument("--engine-mns", type=int, default=1024, help="max_num_seqs for --engine")
    ap.add_argument("--engine-mml", type=int, default=4096, help="max_model_len for --engine")
    a = ap.parse_args()

    backend: Any = Dry() if a.dry_run else Gpu()
    log("backend", backend.info)
    cases = [c for c in CASES if not a.only or c.name in a.only.split(",")]
    result: dict[str, Any] = {
        "probe": "accum_probe",
        "dry_run": a.dry_run,
        "device": backend.info,
        "rule": f"splits = {SPLITS_CAP} if num_reqs <= {MAX_BATCHES_1CTA} else 1 (no accumulator); "
        "out_accum = splits*H*T*dv*4, lse_accum = splits*H*T*4",
        "cases": [],
    }

    def flush() -> None:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)

    for c in cases:
        if time.perf_counter() - T0 > a.budget_s:
            log("budget spent, stopping before", c.name)
            result["stopped_before"] = c.name
            break
        entry: dict[str, Any] = {"case": asdict(c), "tokens": c.tokens, "rule": rule(c)}
        try:
            entry["eager"] = backend.eager(c)
            entry["verdict"] = verdict(c, entry["rule"], entry["eager"])
            if c.capture and not a.no_capture:
                entry["captured"] = [backend.captured(c, v) for v in ("B1", "B2", "B3", "B4")]
        except Exception as e:
            entry["error"] = f"{type(e).__name__}: {e}"
            entry["traceback"] = traceback.format_exc()[-2000:]
        result["cases"].append(entry)
        msg = entry.get("error") or (
            f"accum {entry['eager']['accum_mib_measured']} MiB (rule "
            f"{(entry['rule']['out_accum_bytes'] or 0) / MiB if entry['rule']['splits'] else 'heuristic'}"
            f") {entry.get('verdict')}"
        )
        if "captured" in entry:
            msg += " | captured " + ", ".join(
                f"{x['variant']}={x['reserved_delta_mib']}" for x in entry["captured"]
            )
        log(c.name, msg)
        flush()
    if a.engine and not a.dry_run:
        log("part C: engine", a.engine, "max_num_seqs", a.engine_mns)
        try:
            result["engine"] = engine_trace(
                a.engine, a.engine_mns, a.engine_mml, os.path.dirname(os.path.abspath(a.out))
            )
        except Exception as e:
            result["engine"] = {
                "error": f"{type(e).__name__}: {e}",
                "traceback": traceback.format_exc()[-3000:],
            }
        eng = result["engine"]
        log("engine:", {k: eng.get(k) for k in ("reserved_delta_mib", "accumulator_segments", "error")})
        for b in eng.get("blockers", [])[:5]:
            log("  blocker", b["size_mib"], "MiB at", b["offset_mib"], "MiB:", " <- ".join(b["frames"][:4]))
        flush()
    elif a.engine:
        # dry run: exercise the trace analysis on a made-up trace (two accumulators, one blocker)
        A = SPLITS_CAP * 32 * 512 * 128 * 4
        fake = {
            "device_traces": [
                [
                    {"action": "segment_alloc", "addr": 0, "size": A},
                    {"action": "alloc", "addr": 0, "size": A},
                    {"action": "alloc", "addr": A + A, "size": A // 128},
                    {"action": "free_requested", "addr": 0, "size": A},
                    {"action": "free_requested", "addr": A + A, "size": A // 128},
                    {
                        "action": "alloc",
                        "addr": 0,
                        "size": 4 * MiB,
                        "frames": [{"filename": "x.py", "line": 1, "name": "f"}],
                    },
                    {"action": "segment_alloc", "addr": A, "size": A},
                    {"action": "alloc", "addr": A, "size": A},
                    {"action": "alloc", "addr": A + A, "size": A // 128},
                ]
            ]
        }
        result["engine"] = analyse_trace(fake, 32, 128)
        log(
            "engine (dry):",
            result["engine"]["accumulator_segments"],
            "segments,",
            result["engine"]["blockers"],
        )
    result["elapsed_s"] = round(time.perf_counter() - T0, 1)
    flush()
    log("wrote", a.out)
    bad = [
        e["case"]["name"]
        for e in result["cases"]
        if e.get("error") or (e.get("verdict") not in (None, "match"))
    ]
    if bad:
        log("not as the rule says:", bad)
    return 0


if __name__ == "__main__":
    sys.exit(main())
