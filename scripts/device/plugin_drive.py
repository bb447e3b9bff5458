"""One real vLLM engine with cgplan's general plugin enabled (issue 34), run by plugin_suite.sh.

usage: python3 scripts/device/plugin_drive.py NAME OUTDIR [--overhead-pairs N]

The engine (in-process: VLLM_ENABLE_V1_MULTIPROCESSING=0) is a tiny dummy-weight Llama with a
known gap: max_num_seqs 64 but max_cudagraph_capture_size 32, so a uniform-decode step of 33-64
requests runs eager. vLLM loads the plugin through its own entry-point lookup (group
vllm.general_plugins; plugin_suite.sh puts the wheel's entry point on the path). The driver:

1. serves 48 requests at once (their decode steps: 48 requests, in the gap) and then 16
   (FULL graphs), and writes the plugin's counters (OUTDIR/NAME-counters.json, its own file);
2. measures the plugin's overhead paired in this one engine: the same 16-request workload with
   the counting wrapper on and off (`DispatchHook.on/off`: off is vLLM's own dispatch method),
   alternating and in both orders, the median of the paired wall-time ratios; plus the wrapper's
   own cost per call on the engine's real dispatcher (ns), and the step time it is a share of;
3. writes OUTDIR/NAME-result.json (what the plugin logged, the counts, the overhead) and the
   Prometheus text of the plugin's counter (OUTDIR/NAME-metrics.txt).
The engine log (stdout/stderr, the plugin's block among vLLM's lines) is kept by the suite.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

NAME, OUTDIR = sys.argv[1], Path(sys.argv[2])
PAIRS = int(sys.argv[sys.argv.index("--overhead-pairs") + 1]) if "--overhead-pairs" in sys.argv else 0
ROOT = Path(__file__).resolve().parents[2]
MODEL = os.environ.get("CGPLAN_PLUGIN_MODEL", str(ROOT / "configs" / "models" / "tiny-llama-v512"))
MAX_NUM_SEQS, MAX_CAPTURE = 64, 32
GAP_REQS, FULL_REQS, DECODE_TOKENS = 48, 16, 64
T0 = time.perf_counter()
RES: dict[str, object] = {"name": NAME, "errors": []}


def log(*a: object) -> None:
    print(f"[drive {time.perf_counter() - T0:7.2f}s]", *a, flush=True)


def prompts(n: int, seed: int) -> list[dict[str, list[int]]]:
    import random

    rng = random.Random(seed)
    return [{"prompt_token_ids": [rng.randrange(3, 500) for _ in range(16)]} for _ in range(n)]


def main() -> None:
    import importlib.metadata as md

    eps = [f"{e.name} = {e.value}" for e in md.entry_points(group="vllm.general_plugins")]
    RES["entry_points"] = eps
    log("vllm.general_plugins entry points:", eps)
    import torch
    import vllm
    from vllm import LLM, SamplingParams

    RES["vllm_version"] = vllm.__version__
    RES["gpu"] = torch.cuda.get_device_name(0)
    kw = {
        "model": MODEL,
        "load_format": "dummy",
        "skip_tokenizer_init": True,
        "max_num_seqs": MAX_NUM_SEQS,
        "max_model_len": 2048,
        "dtype": "bfloat16",
        "seed": 0,
        "gpu_memory_utilization": 0.3,
        "compilation_config": {"max_cudagraph_capture_size": MAX_CAPTURE},
    }
    RES["llm_kwargs"] = kw
    log("LLM", json.dumps(kw))
    llm = LLM(**kw)
    from cgplan.plugin import engine as plugin_engine

    if not plugin_engine.ENGINES:
        RES["errors"].append("the plugin checked no engine (was it loaded? see the entry points above)")
        return
    eng = plugin_engine.ENGINES[-1]
    RES["startup_block"] = eng.startup
    RES["model_runner"] = type(eng.runner).__module__
    counter, hook = eng.counter, eng.hook
    sp = SamplingParams(max_tokens=DECODE_TOKENS, temperature=0.0, ignore_eos=True, detokenize=False)

    # 1. the gap, then a batch that replays FULL graphs
    phases = {}
    for label, n in (("gap", GAP_REQS), ("full", FULL_REQS)):
        t = time.perf_counter()
        llm.generate(prompts(n, seed=n), sp, use_tqdm=False)
        phases[label] = {"requests": n, "wall_s": round(time.perf_counter() - t, 4)}
    RES["phases"] = phases
    if counter is not None:
        counter.summarise()
        from cgplan.core.logs.plugin import counts_document

        counts = counts_document(counter.snapshot())
        RES["counts"] = counts
        (OUTDIR / f"{NAME}-counters.json").write_text(json.dumps(counts, indent=1) + "\n")
    try:
        import prometheus_client

        (OUTDIR / f"{NAME}-metrics.txt").write_bytes(prometheus_client.generate_latest())
    except Exception as e:
        RES["errors"].append(f"metrics text: {e!r}")

    # 2. overhead, paired in this engine
    if PAIRS and hook is not None and counter is not None:
        RES["overhead"] = overhead(llm, sp, hook, counter)


def overhead(llm, sp, hook, counter) -> dict[str, object]:  # type: ignore[no-untyped-def]
    work = prompts(FULL_REQS, seed=7)
    llm.generate(work, sp, use_tqdm=False)  # warm
    ratios, on_s, off_s = [], [], []
    steps_before = counter.steps
    for i in range(PAIRS):
        order = ("on", "off") if i % 2 == 0 else ("off", "on")
        t: dict[str, float] = {}
        for state in order:
            (hook.on if state == "on" else hook.off)()
            s = time.perf_counter()
            llm.generate(work, sp, use_tqdm=False)
            t[state] = time.perf_counter() - s
        ratios.append(t["on"] / t["off"])
        on_s.append(t["on"])
        off_s.append(t["off"])
    hook.on()
    steps_on = counter.steps - steps_before
    step_ms = statistics.median(off_s) * 1e3 / max(1, steps_on // PAIRS)
    # the wrapper's own cost on the engine's real dispatcher: a uniform 16-request decode step
    owner = hook.owner
    import timeit

    v2 = "gpu.cudagraph" in type(owner).__module__ or hasattr(owner, "_capture_descs")
    call = (
        (lambda: owner.dispatch(FULL_REQS, FULL_REQS, 1, 0))
        if v2
        else (
            lambda: owner.dispatch(
                num_tokens=FULL_REQS, uniform_decode=True, has_lora=False, num_active_loras=0
            )
        )
    )
    # the wrapper alone: no summary line falls inside the timed calls (their cost is in the paired
    # ratio above, one line every CGPLAN_PLUGIN_SUMMARY_STEPS steps)
    counter.paused = 0
    counter.summary_steps, counter.summary_s = 10**15, float("inf")
    n = 200_000
    per = {}
    for state in ("off", "on", "off", "on"):
        (hook.on if state == "on" else hook.off)()
        per.setdefault(state, []).append(min(timeit.repeat(call, number=n, repeat=3)) / n * 1e9)
    hook.on()
    wrapper_ns = min(per["on"]) - min(per["off"])
    return {
        "pairs": PAIRS,
        "workload": f"{FULL_REQS} requests x {DECODE_TOKENS} tokens (FULL graphs), one llm.generate per run",
        "median_ratio_on_over_off": round(statistics.median(ratios), 5),
        "ratios": [round(r, 5) for r in ratios],
        "on_s": [round(x, 5) for x in on_s],
        "off_s": [round(x, 5) for x in off_s],
        "steps_per_run": steps_on // PAIRS,
        "step_ms_off": round(step_ms, 4),
        "dispatch_ns_off": round(min(per["off"]), 1),
        "dispatch_ns_on": round(min(per["on"]), 1),
        "wrapper_ns_per_step": round(wrapper_ns, 1),
        "wrapper_share_of_step_pct": round(100 * wrapper_ns / (step_ms * 1e6), 5),
        "note": "the direct dispatch calls were counted too (they are not served steps)",
    }


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        import traceback

        traceback.print_exc()
        RES["errors"].append(repr(e)[:500])
    own = os.environ.get("CGPLAN_PLUGIN_COUNTERS")
    if own and os.path.isfile(own):  # the plugin's own file, as it last wrote it (overhead runs included)
        RES["plugin_counters_file"] = json.loads(Path(own).read_text())
    RES["wall_s"] = round(time.perf_counter() - T0, 2)
    (OUTDIR / f"{NAME}-result.json").write_text(json.dumps(RES, indent=1, default=str) + "\n")
    log("result written; errors:", RES["errors"])
    sys.stdout.flush()
    os._exit(0)  # vLLM's in-process engine can hang at interpreter exit; everything is written
