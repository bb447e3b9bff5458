"""The first V2 FULL graph's pool of every V2 report under benchmarks/results/h200, against the rule
of docs/notes/v2-full-accumulator.md: a best-fit replay of PyTorch's caching allocator over the
FULL graph's own allocations (it cannot reuse the PIECEWISE graphs' blocks: another stream), with
FA3's split-KV accumulator only where num_reqs <= 992.

An analysis aid, not part of cgplan's model: the per-layer allocation order is a guess (Llama-type
decoder, Inductor freeing every temporary after its last use, rope writing new q/k, the residual
written into the o_proj / down_proj output), the 32 MiB block is taken to be cuBLAS's workspace for
torch's capture stream (a hypothesis; the probe's part C reads it off the GPU).

usage: python3 scripts/v2_full_pool_sim.py [--markdown]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
from typing import Any

MiB = 1 << 20
SPLITS = 32  # flash_attn_max_num_splits_for_cuda_graph
MAX_BATCHES_1CTA = 992  # FA3: no split for varlen batches above this
SMALL = 1 << 20  # kSmallSize: <= 1 MiB from 2 MiB blocks
MIN_LARGE_ALLOC = 10 << 20  # kMinLargeAlloc: below, a new large segment is 20 MiB
LARGE_BUFFER = 20 << 20
ROUND_LARGE = 2 << 20
CUBLAS_WS = 32 << 20


class Allocator:
    """Best-fit, split, coalesce: PyTorch's CUDACachingAllocator for one stream of one pool."""

    def __init__(self) -> None:
        self.segments: list[dict[str, Any]] = []
        self.reserved = 0
        self.where: dict[str, dict[str, Any]] = {}

    def alloc(self, name: str, size: int) -> None:
        size = max(512, (size + 511) // 512 * 512)
        small = size <= SMALL
        best = None
        for si, seg in enumerate(self.segments):
            if seg["small"] != small:
                continue
            for bi, (off, bsize, owner) in enumerate(seg["blocks"]):
                if owner is None and bsize >= size and (best is None or (bsize, si, off) < best[0]):
                    best = ((bsize, si, off), seg, bi)
        if best is None:
            if small:
                ss = 2 * SMALL
            elif size < MIN_LARGE_ALLOC:
                ss = LARGE_BUFFER
            else:
                ss = (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE
            seg = {"small": small, "size": ss, "blocks": [[0, ss, None]]}
            self.segments.append(seg)
            self.reserved += ss
            bi = 0
        else:
            _, seg, bi = best
        off, bsize, _ = seg["blocks"][bi]
        rest = bsize - size
        if (rest >= 512) if small else (rest > SMALL):
            seg["blocks"][bi : bi + 1] = [[off, size, name], [off + size, rest, None]]
        else:
            seg["blocks"][bi][2] = name
        self.where[name] = seg

    def free(self, name: str) -> None:
        seg = self.where.pop(name)
        merged: list[list[Any]] = []
        for b in seg["blocks"]:
            if b[2] == name:
                b[2] = None
            if merged and merged[-1][2] is None and b[2] is None:
                merged[-1][1] += b[1]
            else:
                merged.append(b)
        seg["blocks"] = merged


def first_full_pool(
    tokens: int, reqs: int, hidden: int, heads: int, kv: int, hd: int, inter: int, layers: int
) -> tuple[float, float]:
    """(simulated reserved MiB of the first V2 FULL graph, one accumulator's MiB)."""
    a = Allocator()
    a.alloc("cublas_workspace", CUBLAS_WS)
    T = tokens
    R, QKV, ATT = T * hidden * 2, T * (heads + 2 * kv) * hd * 2, T * heads * hd * 2
    K, GU, ACT = T * kv * hd * 2, T * 2 * inter * 2, T * inter * 2
    acc = SPLITS * heads * T * hd * 4 if reqs <= MAX_BATCHES_1CTA else 0
    a.alloc("emb", R)
    res, h = "emb", "norm0"
    a.alloc(h, R)
    for i in range(layers):
        p = f"{i}."
        a.alloc(p + "qkv", QKV)
        a.free(h)
        a.alloc(p + "q", ATT)
        a.alloc(p + "k", K)
        a.alloc(p + "attn_out", ATT)
        a.alloc(p + "softmax_lse", heads * T * 4)
        if acc:
            a.alloc(p + "out_accum", acc)
            a.alloc(p + "lse_accum", acc // hd)
            a.free(p + "out_accum")
            a.free(p + "lse_accum")
        for n in ("softmax_lse", "qkv", "q", "k"):
            a.free(p + n)
        a.alloc(p + "o_proj", R)
        a.free(p + "attn_out")
        a.free(res)
        res = p + "o_proj"
        a.alloc(p + "norm", R)
        a.alloc(p + "gate_up", GU)
        a.free(p + "norm")
        a.alloc(p + "act", ACT)
        a.free(p + "gate_up")
        a.alloc(p + "down", R)
        a.free(p + "act")
        a.free(res)
        res, h = p + "down", p + "norm2"
        a.alloc(h, R)
    return a.reserved / MiB, acc / MiB


def v2_rows(root: str) -> list[dict[str, Any]]:
    rows = []
    for f in sorted(glob.glob(os.path.join(root, "**", "*-vllm.json"), recursive=True)):
        with open(f) as fh:
            d = json.load(fh)
        m = d.get("measured") or {}
        if m.get("model_runner") != "v2":
            continue
        full = sorted(
            (g for g in m.get("graphs") or [] if g["family"] == "target" and g["mode"] == "FULL"),
            key=lambda g: g["order"],
        )
        if not full:
            continue
        with open(os.path.join(d["source"])) as fh:
            import yaml

            cfg = yaml.safe_load(fh)
        with open(os.path.join(cfg["model"], "config.json")) as fh:
            mc = json.load(fh)
        log = " ".join(d.get("vllm_log") or [])
        tp_m = re.search(r"tensor_parallel_size=(\d+)", log)
        tp = int(tp_m.group(1)) if tp_m else 1
        heads = mc["num_attention_heads"]
        hd = mc.get("head_dim") or mc["hidden_size"] // heads
        g = full[0]
        rows.append(
            {
                "report": os.path.relpath(f, root),
                "model": os.path.basename(cfg["model"]),
                "tp": tp,
                "max_num_seqs": d["plan"]["max_num_seqs"],
                "tokens": g["num_tokens"],
                "reqs": g["num_reqs"],
                "heads": heads // tp,
                "kv": max(1, mc["num_key_value_heads"] // tp),
                "hd": hd,
                "hidden": mc["hidden_size"],
                "inter": mc["intermediate_size"] // tp,
                "layers": mc["num_hidden_layers"],
                "measured_mib": g["torch_reserved_delta_bytes"] / MiB,
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="benchmarks/results/h200")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    rows = v2_rows(a.root)
    if a.markdown:
        print(
            "| report | model | TP | mns | tokens | reqs | A (MiB) | measured | 54+A | sim "
            "| sim resid | accums |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        sim, acc = first_full_pool(
            r["tokens"], r["reqs"], r["hidden"], r["heads"], r["kv"], r["hd"], r["inter"], r["layers"]
        )
        meas = r["measured_mib"]
        n = (round((meas - sim) / acc) + 1) if acc else 0
        if a.markdown:
            print(
                f"| {r['report']} | {r['model']} | {r['tp']} | {r['max_num_seqs']} | {r['tokens']} | "
                f"{r['reqs']} | {acc:.1f} | {meas:.0f} | {54 + acc:.0f} | {sim:.0f} | "
                f"{meas - sim:+.0f} | {n} |"
            )
        else:
            print(
                f"{r['report']:55s} T={r['tokens']:5d} reqs={r['reqs']:5d} A={acc:6.1f} "
                f"measured={meas:6.1f} sim={sim:6.1f} ({meas - sim:+6.1f}) accumulators={n}"
            )


if __name__ == "__main__":
    main()
