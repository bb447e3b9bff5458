#!/usr/bin/env python3
"""One line per expected/<name>.<version>.json: error or mode, sizes, graph counts,
widest uniform decode batch and how it dispatches. Usage:
    python3 oracle/summarize.py oracle/corpus/expected [name-filter]
"""

import json
import sys
from pathlib import Path


def graphs(rt: dict) -> str:
    parts = []
    for side in ("v1", "v2"):
        for who, d in (rt.get(side) or {}).items():
            if isinstance(d, dict) and "capture" in d:
                c = "+".join(f"{x['count']}{x['mode'][0]}" for x in d["capture"]) or "0"
                parts.append(f"{who}:{c}")
    return " ".join(parts)


def widest(d: dict) -> str:
    rt = d.get("runtime") or {}
    cfg = d["config"]
    n = cfg["max_num_seqs"]
    q = cfg["uniform_decode_query_len"]
    tgt = (rt.get("v2") or rt.get("v1") or {}).get("target") or {}
    ud = tgt.get("uniform_decode_dispatch")
    if isinstance(ud, dict):
        ud = ud.get(str(q)) or []
    if not ud:
        return "-"
    last = ud[-1]
    if last["to"] < n:
        return f"n<={last['to']} only (mbt)"
    return f"{n}x{q}->{last['mode']}@{last['padded_tokens']}"


def main():
    root = Path(sys.argv[1])
    filt = sys.argv[2] if len(sys.argv) > 2 else ""
    for p in sorted(root.glob("*.json")):
        if filt not in p.name:
            continue
        d = json.loads(p.read_text())
        name = p.name[: -len(".json")]
        if d.get("error"):
            print(f"{name:50s} ERROR {d['error'][:150]}")
            continue
        cfg = d["config"]
        rt = d.get("runtime") or {}
        sizes = cfg["cudagraph_capture_sizes"]
        rsz = rt.get("cudagraph_capture_sizes", sizes)
        print(
            f"{name:50s} {'V2' if cfg['use_v2_model_runner'] else 'V1'} "
            f"mode={cfg['cudagraph_mode']}->{rt.get('resolved_cudagraph_mode')} "
            f"max={cfg['max_cudagraph_capture_size']}->{rt.get('max_cudagraph_capture_size')} "
            f"n={len(sizes)}->{len(rsz)} {graphs(rt)} widest={widest(d)}"
            + (f" RUNTIME_ERROR={d['runtime_error'][:100]}" if d.get("runtime_error") else "")
        )


if __name__ == "__main__":
    main()
