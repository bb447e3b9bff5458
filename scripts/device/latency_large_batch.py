"""Decode step time at large request counts (issue 29): the serving step beside the forward alone.

One engine per case (dummy weights, bf16, vLLM's own model runner choice), all started at once,
timed one at a time (scripts/latency/measure_step.py's barrier and GPU lock):

- ``default``: FULL_AND_PIECEWISE with vLLM's default ladder (max_num_seqs 1024: capture sizes
  up to min(2 x 1024, 512) = 512), so a uniform decode of 520..1024 requests has no graph and
  runs the compiled pieces eagerly ("compiled, no graph for this shape");
- ``ladder1024``: FULL_AND_PIECEWISE, ``max_cudagraph_capture_size`` 1024 (the fix cgplan prints):
  every request count up to 1024 replays a FULL graph, padded (520 -> 528);
- ``eager``: ``enforce_eager=True`` (no torch.compile, no graphs).

Per request count n (256, 384, 512, 520, 640, 768, 896, 1024), per round:

- serving step: ``LLM.generate`` of n prompts (random token ids, ``prompt_len`` each) with
  ``min_tokens = max_tokens`` and ``ignore_eos``, so that after the prefill every step is a
  uniform decode of exactly n requests; the scheduler's ``schedule`` calls are timestamped and
  the step time is the interval between consecutive pure-decode steps (n requests, n tokens, no
  new request): scheduler, forward, sampler and output processing, what a user's tokens/s sees.
  The dispatch vLLM chose for each of those steps is recorded (FULL 528, NONE 520, ...);
- forward alone: the model runner's own ``_dummy_run(n, uniform_decode=True)`` plus the logits
  (measure_step.py's uniform point with vLLM's own dispatch), CUDA events, warm, medians.

Round 1 walks n upward, round 2 downward (host contention comes in episodes: the fit reads the
lowest per-round median, as scripts/latency/fit.py does).

usage (one engine; scripts/device/latency_large_batch.sh starts the three):
  python3 scripts/device/latency_large_batch.py --case default|ladder1024|eager --model DIR \\
      --out OUTDIR [--sync-dir D --engines N]
  python3 scripts/device/latency_large_batch.py --dry-run OUTDIR   # CPU: fake engine, same flow
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "latency"))
import measure_step as ms

SCHEMA = "cgplan-latency-large/1"
REQUEST_COUNTS = (256, 384, 512, 520, 640, 768, 896, 1024)
CASES: dict[str, dict[str, Any]] = {
    "default": {"compilation_config": {"cudagraph_mode": "FULL_AND_PIECEWISE"}},
    "ladder1024": {
        "compilation_config": {"cudagraph_mode": "FULL_AND_PIECEWISE", "max_cudagraph_capture_size": 1024}
    },
    "eager": {"enforce_eager": True},
}


@dataclass
class SchedStep:
    """One `Scheduler.schedule` call: when it began and what it scheduled."""

    t: float
    tokens: int
    reqs: int
    new_reqs: int


def decode_intervals(steps: list[SchedStep], n: int, skip: int = 2) -> list[float]:
    """Step periods (ms) of the pure-decode stretch for n requests: the time from one pure-decode
    step's schedule to the next one's, when both schedule exactly n requests of one token and no
    new request. The first `skip` intervals are dropped: the first decode steps follow the
    prefill (whose outputs are still being processed) and are not steady state."""
    pure = [s.tokens == n and s.reqs == n and s.new_reqs == 0 for s in steps]
    out = [(steps[i + 1].t - steps[i].t) * 1e3 for i in range(len(steps) - 1) if pure[i] and pure[i + 1]]
    return out[skip:]


def summarize(xs: list[float]) -> dict[str, Any]:
    if not xs:
        return {"steps": 0}
    ys = sorted(xs)
    return {
        "steps": len(xs),
        "median_ms": round(statistics.median(xs), 4),
        "min_ms": round(ys[0], 4),
        "p90_ms": round(ys[int(0.9 * (len(ys) - 1))], 4),
        "step_ms": [round(x, 4) for x in xs],
    }


class Engine(Protocol):
    """What the timing loop needs from an engine (vLLM's, or the dry run's fake)."""

    steps: list[SchedStep]

    def generate(self, prompts: list[list[int]], max_tokens: int) -> int: ...
    def forward(self, n: int) -> None: ...
    def dispatch_log(self) -> list[tuple[str, str, int, int | None]]: ...
    def clear_dispatch(self) -> None: ...
    def sync(self) -> None: ...
    def event(self) -> Any: ...


@dataclass
class Settings:
    request_counts: tuple[int, ...] = REQUEST_COUNTS
    rounds: int = 2
    prompt_len: int = 32
    max_tokens: int = 48
    vocab: int = 128256
    warm: int = 3
    reps: int = 20
    point_budget_s: float = 1.5
    deadline: float = float("inf")
    seed: int = 0
    notes: list[str] = field(default_factory=list)


def target_dispatch(log: list[tuple[str, str, int, int | None]], n: int) -> dict[str, int]:
    """How often the target forward of an n-request uniform decode (n tokens asked, one per
    request) was dispatched to each outcome ("FULL 528", "NONE 520", ...): vLLM's own decision,
    as the steps saw it. Empty: the runner never asked (no graph manager)."""
    return dict(
        Counter(f"{mode} {tokens}" for fam, mode, tokens, asked in log if fam == "target" and asked == n)
    )


def run_points(eng: Engine, st: Settings) -> list[dict[str, Any]]:
    """Every request count, serving step then forward alone, `st.rounds` rounds (up, down, ...)."""
    rng = random.Random(st.seed)
    points: list[dict[str, Any]] = []
    for r in range(st.rounds):
        order = list(st.request_counts) if r % 2 == 0 else list(reversed(st.request_counts))
        for n in order:
            if time.perf_counter() > st.deadline:
                st.notes.append(f"deadline reached before round {r} n={n}")
                return points
            # distinct random prompts: no prefix-cache hit, the same length for every request
            prompts = [[rng.randrange(st.vocab) for _ in range(st.prompt_len)] for _ in range(n)]
            eng.steps.clear()
            eng.clear_dispatch()
            t0 = time.perf_counter()
            try:
                out_tokens = eng.generate(prompts, st.max_tokens)
            except Exception as e:  # a failed point is kept, by name, not the whole run
                points.append(
                    {"kind": "serve", "reqs": n, "round": r, "error": f"{type(e).__name__}: {e}"[:400]}
                )
                ms.log("serve failed", n, repr(e)[:200])
                continue
            wall_s = time.perf_counter() - t0
            iv = decode_intervals(eng.steps, n)
            p = {
                "kind": "serve",
                "reqs": n,
                "round": r,
                "t_unix": round(time.time(), 3),
                "wall_s": round(wall_s, 4),
                "output_tokens": out_tokens,
                "sched_steps": len(eng.steps),
                "dispatch": target_dispatch(eng.dispatch_log(), n),
                **summarize(iv),
            }
            if "median_ms" in p:
                p["decode_tokens_per_s"] = round(n / p["median_ms"] * 1e3, 1)
            points.append(p)
            ms.log(f"serve   n={n:5d} r{r} {p.get('median_ms', float('nan')):9.3f} ms  {p['dispatch']}")
            eng.clear_dispatch()
            try:
                eng.forward(n)
                eng.sync()
                t = ms.time_call(
                    lambda n=n: eng.forward(n), eng.sync, eng.event, st.warm, st.reps, st.point_budget_s
                )
            except Exception as e:
                points.append(
                    {"kind": "forward", "reqs": n, "round": r, "error": f"{type(e).__name__}: {e}"[:400]}
                )
                ms.log("forward failed", n, repr(e)[:200])
                continue
            points.append(
                {
                    "kind": "forward",
                    "reqs": n,
                    "round": r,
                    "t_unix": round(time.time(), 3),
                    "dispatch": target_dispatch(eng.dispatch_log(), n),
                    **t,
                }
            )
            ms.log(f"forward n={n:5d} r{r} {t['median_ms']:9.3f} ms")
    return points


# ---------------------------------------------------------------- the real engine (vLLM)
class VllmEngine:
    def __init__(self, args: argparse.Namespace, res: dict[str, Any]) -> None:
        import torch
        import vllm
        from vllm import LLM, SamplingParams
        from vllm.v1.core.sched import scheduler as sched_mod

        self.torch = torch
        self.SamplingParams = SamplingParams
        self.steps: list[SchedStep] = []
        res["vllm_version"] = vllm.__version__
        res["torch_version"] = torch.__version__
        res["gpu_name"] = torch.cuda.get_device_name(0)
        res["gpu_total_bytes"] = int(torch.cuda.get_device_properties(0).total_memory)
        steps = self.steps
        orig_schedule = sched_mod.Scheduler.schedule

        def schedule(sched: Any, *a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            so = orig_schedule(sched, *a, **k)
            steps.append(
                SchedStep(
                    t,
                    int(so.total_num_scheduled_tokens),
                    len(so.num_scheduled_tokens),
                    len(getattr(so, "scheduled_new_reqs", ()) or ()),
                )
            )
            return so

        sched_mod.Scheduler.schedule = schedule  # AsyncScheduler inherits it
        runners: list[Any] = []
        for modname in ("vllm.v1.worker.gpu.model_runner", "vllm.v1.worker.gpu_model_runner"):
            try:
                mod = __import__(modname, fromlist=["GPUModelRunner"])
            except Exception:  # the V1 runner module may not import without its kernels
                continue
            cls = mod.GPUModelRunner
            orig_init = cls.__init__

            def init(self_: Any, *a: Any, _orig: Any = orig_init, _m: str = modname, **k: Any) -> None:
                _orig(self_, *a, **k)
                runners.append((_m, self_))

            cls.__init__ = init
        # vLLM's own dispatch, logged, never forced: (family, outcome, padded tokens, the tokens
        # asked for); a uniform decode of n requests asks for n tokens with uniform count 1.
        from vllm.v1.worker.gpu import cudagraph_utils as cgu

        self.families: dict[int, str] = {}
        self.log: list[tuple[str, str, int, int | None]] = []
        log, families = self.log, self.families

        def wrap(orig: Any) -> Any:
            def dispatch(mgr: Any, num_reqs: int, num_tokens: int, uniform: Any, *a: Any, **k: Any) -> Any:
                d = orig(mgr, num_reqs, num_tokens, uniform, *a, **k)
                asked = int(num_tokens) if uniform == 1 else None
                log.append((families.get(id(mgr), "other"), d.cg_mode.name, int(d.num_tokens), asked))
                return d

            return dispatch

        seen = set()
        for c in [cgu.CudaGraphManager, *cgu.CudaGraphManager.__subclasses__()]:
            if "dispatch" in c.__dict__ and c not in seen:
                seen.add(c)
                c.dispatch = wrap(c.__dict__["dispatch"])
        kw: dict[str, Any] = dict(
            model=args.model,
            load_format="dummy",
            skip_tokenizer_init=True,
            dtype="bfloat16",
            max_model_len=args.max_model_len,
            max_num_seqs=args.max_num_seqs,
            max_num_batched_tokens=args.max_num_batched_tokens,
            seed=0,
            gpu_memory_utilization=args.gpu_memory_utilization,
            kv_cache_memory_bytes=int(args.kv_cache_gib * (1 << 30)),
            **CASES[args.case],
        )
        res["engine_kwargs"] = kw
        t = time.perf_counter()
        self.llm = LLM(**kw)
        res["phases"]["engine_start_s"] = round(time.perf_counter() - t, 3)
        vc = self.llm.llm_engine.vllm_config
        cc = vc.compilation_config
        res["cudagraph_mode"] = cc.cudagraph_mode.name
        res["compilation_mode"] = str(cc.mode)
        res["capture_sizes"] = list(cc.cudagraph_capture_sizes or [])
        res["max_capture_size"] = cc.max_cudagraph_capture_size
        res["enforce_eager"] = bool(vc.model_config.enforce_eager)
        res["async_scheduling"] = bool(getattr(vc.scheduler_config, "async_scheduling", False))
        res["hf_config"] = vc.model_config.hf_config.to_dict()
        res["attention_backend"] = str(getattr(getattr(vc, "attention_config", None), "backend", None))
        self.runner_module, self.runner = runners[-1]
        res["model_runner"] = "v2" if ".gpu.model_runner" in self.runner_module else "v1"
        mgr = getattr(self.runner, "cudagraph_manager", None)
        if mgr is not None:
            self.families[id(mgr)] = "target"
        self.steps.clear()

    def generate(self, prompts: list[list[int]], max_tokens: int) -> int:
        sp = self.SamplingParams(
            max_tokens=max_tokens,
            min_tokens=max_tokens,
            ignore_eos=True,
            temperature=0.0,
            detokenize=False,
        )
        outs = self.llm.generate([{"prompt_token_ids": p} for p in prompts], sp, use_tqdm=False)
        return sum(len(o.outputs[0].token_ids) for o in outs)

    def forward(self, n: int) -> None:
        hidden, _ = self.runner._dummy_run(n, uniform_decode=True)
        if hidden is not None:
            self.runner.model.compute_logits(hidden[:n])

    def dispatch_log(self) -> list[tuple[str, str, int, int | None]]:
        return list(self.log)

    def clear_dispatch(self) -> None:
        del self.log[:]

    def sync(self) -> None:
        self.torch.cuda.synchronize()

    def event(self) -> Any:
        return self.torch.cuda.Event(enable_timing=True)


# ---------------------------------------------------------------- the dry run's fake engine (CPU)
class FakeEngine:
    """A scheduler and runner that behave like the three cases (a clock, no GPU): the same loop,
    records and JSON as on the device, to check the flow and the fit on the CPU. Its numbers are
    invented; the output says so (`dry_run`)."""

    def __init__(self, case: str) -> None:
        self.case = case
        self.steps: list[SchedStep] = []
        self.log: list[tuple[str, str, int, int | None]] = []
        self.clock_ms = 0.0
        self.ladder = [
            1,
            2,
            4,
            *range(8, 256, 8),
            *range(256, (1024 if case == "ladder1024" else 512) + 1, 16),
        ]

    def _outcome(self, n: int) -> tuple[str, int]:
        if self.case == "eager":
            return "NONE", n
        for t in self.ladder:
            if t >= n:
                return "FULL", t
        return "NONE", n

    def _step_ms(self, n: int) -> float:
        mode, t = self._outcome(n)
        base = 8.0 + 0.012 * t
        return base * (1.0 if mode == "FULL" else 1.3 if self.case == "default" else 1.6)

    def generate(self, prompts: list[list[int]], max_tokens: int) -> int:
        n = len(prompts)
        t = 0.0
        for i in range(0, n, 128):  # prefill in chunks of 128 requests (new requests each)
            self.steps.append(
                SchedStep(t, min(128, n - i) * len(prompts[0]), min(128, n - i), min(128, n - i))
            )
            t += 0.02
        for _ in range(max_tokens - 1):
            self.steps.append(SchedStep(t, n, n, 0))
            mode, tok = self._outcome(n)
            self.log.append(("target", mode, tok, n))
            t += self._step_ms(n) / 1e3
        return n * max_tokens

    def forward(self, n: int) -> None:
        mode, tok = self._outcome(n)
        self.log.append(("target", mode, tok, n))
        self.clock_ms += self._step_ms(n) - 1.5

    def dispatch_log(self) -> list[tuple[str, str, int, int | None]]:
        return list(self.log)

    def clear_dispatch(self) -> None:
        del self.log[:]

    def sync(self) -> None:
        pass

    def event(self) -> Any:
        eng = self

        class Ev:
            def record(self) -> None:
                self.t = eng.clock_ms

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, other: Any) -> float:
                return float(other.t - self.t)

        return Ev()


# ---------------------------------------------------------------- main
def engine_main(args: argparse.Namespace) -> int:
    import json

    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CACHE_ROOT", f"/tmp/vllm-cache-large-{args.case}")
    res: dict[str, Any] = {
        "schema": SCHEMA,
        "case": args.case,
        "name": f"llama-8b-mns{args.max_num_seqs}-{args.case}",
        "argv": sys.argv,
        "model_dir": args.model,
        "max_num_seqs": args.max_num_seqs,
        "max_num_batched_tokens": args.max_num_batched_tokens,
        "prompt_len": args.prompt_len,
        "max_tokens": args.max_tokens,
        "points": [],
        "notes": [],
        "phases": {},
    }
    out = os.path.join(args.out, f"large-{args.case}.json")
    ok = False
    eng: Any = None
    try:
        eng = VllmEngine(args, res)
        ok = True
    except Exception:
        res["error"] = traceback.format_exc()[-3000:]
        ms.log("engine failed:\n" + res["error"])
    ms.barrier(args.sync_dir, args.engines, args.case, ok, args.barrier_wait_s)
    if ok:
        vocab = int(res["hf_config"].get("vocab_size") or 32000)
        st = Settings(
            prompt_len=args.prompt_len,
            max_tokens=args.max_tokens,
            vocab=vocab,
            rounds=args.rounds,
            reps=args.reps,
            point_budget_s=args.point_budget_s,
        )
        with ms.gpu_lock(args.sync_dir, args.settle_s), eng.torch.inference_mode():
            t = time.perf_counter()
            res["phases"]["timing_started_unix"] = time.time()
            # burn-in, untimed: the widest batch served once (clocks, allocator, sampler buffers)
            try:
                eng.generate([[1 + i % 1000] * args.prompt_len for i in range(max(REQUEST_COUNTS))], 8)
            except Exception as e:
                res["notes"].append(f"burn-in failed: {type(e).__name__}: {e}"[:300])
            st.deadline = time.perf_counter() + args.timing_budget_s
            res["points"] = run_points(eng, st)
            res["notes"] += st.notes
            res["phases"]["timing_s"] = round(time.perf_counter() - t, 3)
    res["phases"]["total_s"] = round(time.perf_counter() - ms.T0, 3)
    os.makedirs(args.out, exist_ok=True)
    with open(out + ".tmp", "w") as f:
        json.dump(res, f, indent=1, default=str)
    os.replace(out + ".tmp", out)
    ms.log("wrote", out, "points", len(res["points"]))
    os._exit(0 if ok else 1)  # skip vLLM's slow teardown; the GPU is released with the process


def dry_run(outdir: str) -> int:
    """The whole flow on fake engines: one large-CASE.json per case, marked dry_run."""
    import json

    os.makedirs(outdir, exist_ok=True)
    for case in CASES:
        eng = FakeEngine(case)
        st = Settings(vocab=512, reps=5, warm=1, max_tokens=12)
        pts = run_points(eng, st)
        res = {
            "schema": SCHEMA,
            "case": case,
            "name": f"dry-run-{case}",
            "dry_run": True,
            "max_num_seqs": 1024,
            "vllm_version": "dry-run",
            "capture_sizes": eng.ladder if case != "eager" else [],
            "max_capture_size": 0 if case == "eager" else eng.ladder[-1],
            "enforce_eager": case == "eager",
            "cudagraph_mode": "NONE" if case == "eager" else "FULL_AND_PIECEWISE",
            "hf_config": json.loads(
                (Path(__file__).resolve().parents[2] / "configs/models/llama-3.1-8b/config.json").read_text()
            ),
            "points": pts,
            "notes": st.notes,
        }
        with open(os.path.join(outdir, f"large-{case}.json"), "w") as f:
            json.dump(res, f, indent=1)
        print(f"dry run {case}: {len(pts)} points")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dry-run", metavar="OUTDIR")
    p.add_argument("--case", choices=sorted(CASES))
    p.add_argument("--model")
    p.add_argument("--out")
    p.add_argument("--max-num-seqs", type=int, default=1024)
    p.add_argument("--max-num-batched-tokens", type=int, default=8192)
    p.add_argument("--max-model-len", type=int, default=1024)
    p.add_argument("--prompt-len", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=48)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--point-budget-s", type=float, default=1.5)
    p.add_argument("--timing-budget-s", type=float, default=75.0)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.02)
    p.add_argument("--kv-cache-gib", type=float, default=12.0)
    p.add_argument("--sync-dir")
    p.add_argument("--engines", type=int, default=1)
    p.add_argument("--barrier-wait-s", type=float, default=330.0)
    p.add_argument("--settle-s", type=float, default=2.0)
    a = p.parse_args()
    if a.dry_run:
        return dry_run(a.dry_run)
    if not (a.case and a.model and a.out):
        p.error("--case, --model and --out are required (or --dry-run OUTDIR)")
    return engine_main(a)


if __name__ == "__main__":
    sys.exit(main())
