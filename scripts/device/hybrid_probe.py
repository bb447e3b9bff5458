"""What vLLM itself does with a hybrid or attention-free model on the GPU (issue 27): one engine
per process, dummy weights, vLLM's defaults, and a JSON record of what it resolved and captured.

cgplan refuses these models by name (their KV-cache groups and cudagraph support are not modelled
yet); this run is the evidence the model will be built against: the mode vLLM resolved (and the
log line that says why), the capture sizes, the graphs the runner captured (read as the plugin
reads them, cgplan/gpu/vllm_plugin.captured_graphs), the dispatcher's answer for every uniform
decode and mixed batch, and the KV-cache groups (spec type, block size, layers) and block counts.

usage (on the lent GPU, the vLLM payload on PYTHONPATH):
    python scripts/device/hybrid_probe.py --model configs/models/tiny-nemotron-h --out X.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

T0 = time.perf_counter()


def log(*a: object) -> None:
    print(f"[probe {time.perf_counter() - T0:7.2f}s]", *a, flush=True)


def _plain(x: Any) -> Any:
    """JSON-able copy of a vLLM object's fields (names of enums and classes, not reprs)."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: _plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [_plain(v) for v in x]
    if isinstance(x, (int, float, str, bool)) or x is None:
        return x
    name = getattr(x, "name", None)
    return name if isinstance(name, str) else type(x).__name__


def kv_groups(runner: Any) -> dict[str, Any]:
    kvc = getattr(runner, "kv_cache_config", None)
    if kvc is None:
        return {"error": "the runner holds no kv_cache_config"}
    groups = []
    for g in getattr(kvc, "kv_cache_groups", ()):
        spec = g.kv_cache_spec
        fields = {}
        for k in (
            "block_size",
            "page_size_bytes",
            "num_kv_heads",
            "head_size",
            "dtype",
            "shapes",
            "dtypes",
            "mamba_type",
            "num_speculative_blocks",
        ):
            if hasattr(spec, k):
                try:
                    fields[k] = _plain(getattr(spec, k))
                except Exception as e:  # a property that needs more than the spec
                    fields[k] = f"unreadable: {type(e).__name__}"
        groups.append(
            {
                "spec": type(spec).__name__,
                "layers": len(g.layer_names),
                "layer_names": list(g.layer_names)[:8],
                **fields,
            }
        )
    backends = []
    for per_group in getattr(runner, "attn_groups", None) or ():
        for ag in per_group:
            b = getattr(ag, "backend", None)
            mb = None
            try:
                mb = ag.get_metadata_builder()
            except Exception:
                mb = None
            backends.append(
                {
                    "backend": getattr(b, "__name__", str(b)),
                    "builder": type(mb).__name__ if mb is not None else None,
                    "cudagraph_support": _plain(
                        getattr(type(mb), "_cudagraph_support", None)
                        or getattr(mb, "cudagraph_support", None)
                    ),
                    "layers": len(getattr(ag, "layer_names", ()) or ()),
                }
            )
    return {"num_blocks": getattr(kvc, "num_blocks", None), "groups": groups, "attn_groups": backends}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-num-seqs", type=int, default=64)
    ap.add_argument("--engine-json", default="{}", help="more LLM(...) keywords as JSON")
    args = ap.parse_args()
    res: dict[str, Any] = {
        "kind": "cgplan-hybrid-probe",
        "schema_version": 1,
        "model": args.model,
        "errors": [],
    }
    try:
        import torch
        import vllm
        from vllm import LLM

        res["vllm_version"] = vllm.__version__
        res["gpu"] = torch.cuda.get_device_name(0)
        res["hf_config_file"] = json.loads((Path(args.model) / "config.json").read_text())
        runners: list[Any] = []
        for modname in ("vllm.v1.worker.gpu.model_runner", "vllm.v1.worker.gpu_model_runner"):
            try:
                mod = __import__(modname, fromlist=["GPUModelRunner"])
            except Exception:
                continue
            cls = mod.GPUModelRunner
            orig = cls.__init__

            def init(self_: Any, *a: Any, _orig: Any = orig, **k: Any) -> None:
                _orig(self_, *a, **k)
                runners.append(self_)

            cls.__init__ = init
        kw: dict[str, Any] = {
            "model": args.model,
            "load_format": "dummy",
            "skip_tokenizer_init": True,
            "dtype": "bfloat16",
            "max_model_len": 2048,
            "max_num_seqs": args.max_num_seqs,
            "max_num_batched_tokens": 8192,
            "seed": 0,
            "gpu_memory_utilization": 0.3,
        }
        kw.update(json.loads(args.engine_json))
        res["engine_kwargs"] = kw
        t = time.perf_counter()
        llm = LLM(**kw)
        res["engine_start_s"] = round(time.perf_counter() - t, 3)
        vc = llm.llm_engine.vllm_config
        cc = vc.compilation_config
        res["resolved"] = {
            "cudagraph_mode": _plain(cc.cudagraph_mode),
            "compilation_mode": _plain(cc.mode),
            "cudagraph_capture_sizes": list(cc.cudagraph_capture_sizes or []),
            "max_cudagraph_capture_size": cc.max_cudagraph_capture_size,
            "block_size": getattr(vc.cache_config, "block_size", None),
            "mamba_block_size": getattr(vc.cache_config, "mamba_block_size", None),
            "mamba_cache_mode": _plain(getattr(vc.cache_config, "mamba_cache_mode", None)),
            "enable_prefix_caching": getattr(vc.cache_config, "enable_prefix_caching", None),
            "max_num_batched_tokens": vc.scheduler_config.max_num_batched_tokens,
            "max_num_seqs": vc.scheduler_config.max_num_seqs,
            "is_hybrid": getattr(vc.model_config, "is_hybrid", None),
            "is_attention_free": getattr(vc.model_config, "is_attention_free", None),
            "architecture": vc.model_config.architecture,
        }
        if not runners:
            res["errors"].append("no model runner seen (engine in another process?)")
        else:
            runner = runners[-1]
            res["model_runner"] = type(runner).__module__
            res["kv_cache"] = kv_groups(runner)
            sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
            from cgplan.gpu import vllm_plugin

            mc = vllm_plugin.measured_capture(runner, vc)
            res["captured"] = _plain(mc) if mc is not None else None
        from vllm import SamplingParams

        t = time.perf_counter()
        outs = llm.generate(
            [{"prompt_token_ids": list(range(3, 19))}] * 8,
            SamplingParams(max_tokens=16, temperature=0.0, ignore_eos=True, detokenize=False),
            use_tqdm=False,
        )
        res["generate"] = {
            "requests": 8,
            "tokens_each": [len(o.outputs[0].token_ids) for o in outs],
            "wall_s": round(time.perf_counter() - t, 3),
        }
    except Exception as e:
        res["errors"].append(f"{type(e).__name__}: {e}")
        res["traceback"] = traceback.format_exc()[-4000:]
    Path(args.out).write_text(json.dumps(res, indent=1, default=str))
    log("wrote", args.out, "errors:", res["errors"])
    return 0 if not res["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
