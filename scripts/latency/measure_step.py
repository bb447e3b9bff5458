"""Measure vLLM step latency per dispatch outcome (FULL, PIECEWISE, eager) on a real engine.

One engine per model shape (dummy weights), its own captured ladder, then the model runner's
own dummy step (`GPUModelRunner._dummy_run` of model runner V2, which runs the target forward
and, with EAGLE, the drafter's propose) with every CudaGraphManager's dispatch forced to one
outcome. Timed with CUDA events around the whole call (host launch included: the GPU waits for
the host when the host is the bottleneck), synchronised before each repetition as a serving
step is, warm, many repetitions, medians.

Forcing: vLLM's own dispatch picks the descriptor ("natural"); "PIECEWISE" picks the smallest
captured PIECEWISE graph that holds the batch (what vLLM replays for a mixed batch of that size);
"NONE" runs the compiled model without graphs (what vLLM does past the ladder). The forced mode
applies to the target and the drafter prefill (both see the step's tokens); the drafter's
decode steps (n tokens each) keep vLLM's own dispatch, as they do in a served step.

Several engines may run at once on one GPU: they start in parallel, wait at a barrier until all
are ready (or failed), then time one at a time under a file lock, so no timing overlaps another
engine's start-up or timing.

Usage (one engine):
  python3 measure_step.py --name NAME --model DIR [--draft DIR --k K] --max-num-seqs S
      [--max-capture M] --out OUTDIR [--sync-dir D --engines N]
  python3 measure_step.py --self-test OUTDIR     # CPU, fake runner: checks the forcing and output
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import statistics
import sys
import time
import traceback
from typing import Any

T0 = time.perf_counter()


def log(*a: Any) -> None:
    print(f"[lat {time.perf_counter() - T0:8.2f}s]", *a, flush=True)


# ---------------------------------------------------------------- forcing (engine-independent)
class Forcer:
    """Wraps CudaGraphManager.dispatch: forces the outcome for target and drafter prefill."""

    def __init__(self, none_mode: Any, piecewise_mode: Any, full_mode: Any, make_desc: Any) -> None:
        self.none, self.pw, self.full = none_mode, piecewise_mode, full_mode
        self.make_desc = make_desc
        self.want: str | None = None  # None: vLLM's own; "NONE" | "PIECEWISE" | "FULL"
        self.families: dict[int, str] = {}
        self.log: list[tuple[str, str, int, int | None]] = []
        self.unavailable = False

    def wrap(self, orig: Any) -> Any:
        forcer = self

        def dispatch(
            mgr: Any,
            num_reqs: int,
            num_tokens: int,
            uniform_token_count: Any,
            num_active_loras: int = 0,
            *a: Any,
            **k: Any,
        ) -> Any:
            d = orig(mgr, num_reqs, num_tokens, uniform_token_count, num_active_loras, *a, **k)
            fam = forcer.families.get(id(mgr), "other")
            want = forcer.want
            if want is not None and fam != "drafter_decode":
                d = forcer.forced(mgr, d, want, num_reqs, num_tokens)
            forcer.log.append(
                (fam, d.cg_mode.name, int(d.num_tokens), None if d.num_reqs is None else int(d.num_reqs))
            )
            return d

        return dispatch

    def forced(self, mgr: Any, d: Any, want: str, num_reqs: int, num_tokens: int) -> Any:
        if want == "NONE":
            return self.make_desc(self.none, num_tokens, num_reqs, getattr(d, "num_active_loras", 0))
        if want == "FULL":
            if d.cg_mode.name != "FULL":
                self.unavailable = True
            return d
        # PIECEWISE: the smallest captured PIECEWISE graph that holds the batch.
        descs = getattr(mgr, "_capture_descs", {}).get(self.pw, [])
        fits = [x for x in descs if x.num_tokens >= num_tokens]
        if not fits:
            self.unavailable = True
            return d
        return min(fits, key=lambda x: x.num_tokens)


def time_call(fn: Any, sync: Any, event: Any, warm: int, reps: int, budget_s: float) -> dict[str, Any]:
    for _ in range(warm):
        fn()
    sync()
    ev_ms: list[float] = []
    wall_ms: list[float] = []
    t_start = time.perf_counter()
    for _ in range(reps):
        sync()
        s, e = event(), event()
        w0 = time.perf_counter()
        s.record()
        fn()
        e.record()
        e.synchronize()
        wall_ms.append((time.perf_counter() - w0) * 1e3)
        ev_ms.append(s.elapsed_time(e))
        if time.perf_counter() - t_start > budget_s and len(ev_ms) >= 5:
            break
    return {
        "median_ms": round(statistics.median(ev_ms), 4),
        "min_ms": round(min(ev_ms), 4),
        "p90_ms": round(sorted(ev_ms)[int(0.9 * (len(ev_ms) - 1))], 4),
        "wall_median_ms": round(statistics.median(wall_ms), 4),
        "reps": len(ev_ms),
        "event_ms": [round(x, 4) for x in ev_ms],
    }


def grid(s: int, q: int, max_tokens: int, max_capture: int) -> tuple[list[int], list[int]]:
    """Uniform-decode request counts (exact ladder sizes, padded ones, the widest) and mixed sizes."""
    ns = sorted(
        {
            n
            for n in (1, 2, 3, 4, 6, 8, 12, 16, 24, 31, 32, 40, 48, 64, 96, 128, 200, 256)
            if n <= s and n * q <= max_tokens
        }
        | {s}
    )
    ts = sorted(
        {t for t in (7, 31, 100, 256, max_capture, max_capture + 1, 1000, 2048) if 5 <= t <= max_tokens}
    )
    return ns, ts


# ---------------------------------------------------------------- engine side
def barrier(sync_dir: str | None, engines: int, name: str, ok: bool, wait_s: float) -> None:
    if not sync_dir:
        return
    os.makedirs(sync_dir, exist_ok=True)
    with open(os.path.join(sync_dir, f"{'ready' if ok else 'failed'}-{name}"), "w") as f:
        f.write(str(time.time()))
    t0 = time.time()
    while time.time() - t0 < wait_s:
        if (
            len(os.listdir(sync_dir)) - (1 if os.path.exists(os.path.join(sync_dir, "lock")) else 0)
            >= engines
        ):
            return
        time.sleep(0.5)
    log(f"barrier: gave up waiting after {wait_s:.0f} s ({os.listdir(sync_dir)})")


_LOCK_FILES: list[Any] = []


@contextlib.contextmanager
def gpu_lock(sync_dir: str | None, settle_s: float):
    """Exclusive GPU time until this process exits: the lock is never released by hand, so the
    next engine starts timing only once this one is gone (an exiting engine frees tens of GB and
    its CUDA context, which slowed the first seconds of the next engine's timing otherwise);
    then `settle_s` of quiet before timing."""
    if sync_dir:
        f = open(os.path.join(sync_dir, "lock"), "a")  # noqa: SIM115 - held until exit
        _LOCK_FILES.append(f)
        fcntl.flock(f, fcntl.LOCK_EX)
        time.sleep(settle_s)
    yield


def mixed_step(runner: Any, per_req: list[int]) -> None:
    """Model runner V2's `_dummy_run` with given per-request token counts (a mixed batch):
    the same calls in the same order as vLLM 0.26.0's own, which only spreads tokens evenly."""
    import numpy as np
    import torch
    from vllm.v1.core.sched.output import SchedulerOutput

    num_tokens = sum(per_req)
    so = SchedulerOutput.make_empty()
    so.total_num_scheduled_tokens = num_tokens
    so.num_scheduled_tokens = {f"_dummy_req_{i}": n for i, n in enumerate(per_req)}
    runner.kv_connector.set_disabled(True)
    with runner.maybe_dummy_run_with_lora(
        runner.lora_config,
        num_scheduled_tokens=np.array(per_req, dtype=np.int32),
        num_sampled_tokens=None,
        remove_lora=True,
        num_active_loras=0,
    ):
        runner.execute_model(so, intermediate_tensors=None, dummy_run=True)
    runner.kv_connector.set_disabled(False)
    st = runner.execute_model_state
    runner.execute_model_state = None
    # The target's logits, one row per request (mode-independent, eager in every outcome).
    runner.model.compute_logits(st.hidden_states[st.input_batch.logits_indices])
    if runner.speculator is not None:
        runner.speculator.propose(
            input_batch=st.input_batch,
            attn_metadata=st.attn_metadata,
            slot_mappings=st.slot_mappings_by_layer,
            last_hidden_states=st.hidden_states,
            aux_hidden_states=st.aux_hidden_states,
            num_sampled=torch.ones(st.input_batch.num_reqs, dtype=torch.int32, device=runner.device),
            num_rejected=torch.zeros(st.input_batch.num_reqs, dtype=torch.int32, device=runner.device),
            last_sampled=runner.req_states.last_sampled_tokens,
            next_prefill_tokens=runner.req_states.next_prefill_tokens,
            temperature=runner.sampler.sampling_states.temperature.gpu,
            seeds=runner.sampler.sampling_states.seeds.gpu,
            dummy_run=True,
        )


def run_points(
    res: dict[str, Any],
    forcer: Forcer,
    step_uniform: Any,
    step_mixed: Any,
    sync: Any,
    event: Any,
    s: int,
    q: int,
    max_tokens: int,
    max_capture: int,
    warm: int,
    reps: int,
    point_budget_s: float,
    deadline: float,
    *,
    widest_repeats: int = 2,
    only_widest: bool = False,
    pause_s: float = 0.0,
) -> None:
    """Time every point of the grid (or, with `only_widest`, only the widest batch's outcomes).

    The widest batch is timed `widest_repeats` times, spread evenly through the run (first,
    ..., last): host contention comes in episodes of seconds (docs/latency-model.md,
    "Repetitions"), so one timing of it can sit in an episode, and the fit takes the lowest of its
    medians. With `only_widest`, the rounds are `pause_s` apart instead."""
    ns, ts = grid(s, q, max_tokens, max_capture)
    res["grid"] = {"uniform_reqs": ns, "mixed_tokens": ts}
    plan: list[tuple[str, int, str | None]] = []

    # The widest batch and the vllm#50488-like points first, so a deadline keeps what matters.
    def uniform(n: int) -> None:
        for want in (None, "NONE", "PIECEWISE"):
            plan.append(("uniform", n, want))  # noqa: PERF401 - order matters, kept explicit

    rest: list[tuple[str, int, str | None]] = []
    if not only_widest:
        # A mixed batch's own outcome is PIECEWISE up to the ladder's top and eager past it: both
        # forced outcomes are timed, so "natural" would only repeat one of them.
        for t in ts:
            for want in ("NONE", "PIECEWISE"):
                rest.append(("mixed", t, want))  # noqa: PERF401
        for n in ns:
            if n != s:
                for want in (None, "NONE", "PIECEWISE"):
                    rest.append(("uniform", n, want))  # noqa: PERF401
    # The widest batch first, then again at evenly spaced places and at the end (a repeat is kept,
    # marked by "repeat"): the first timing of an engine is where contention was worst.
    rounds = max(1, widest_repeats)
    for r in range(rounds):
        uniform(s)
        if r + 1 < rounds:
            lo, hi = len(rest) * r // (rounds - 1), len(rest) * (r + 1) // (rounds - 1)
            plan.extend(rest[lo:hi] if rounds > 1 else rest)
            if only_widest:
                plan.append(("pause", 0, None))
    if rounds == 1:
        plan.extend(rest)
    seen: set[tuple[str, int, str | None]] = set()
    for kind, size, want in plan:
        if kind == "pause":
            time.sleep(pause_s)
            continue
        repeat = (kind, size, want) in seen
        seen.add((kind, size, want))
        if time.perf_counter() > deadline:
            res["notes"].append(f"deadline reached before {kind} {size} {want}")
            break
        forcer.want, forcer.unavailable = want, False
        del forcer.log[:]
        if kind == "uniform":
            fn = lambda n=size: step_uniform(n)  # noqa: E731
            tokens = size * q
        else:
            # One chunked prefill plus decodes: 3 requests, uneven, never a uniform batch.
            r = 3 if size >= 5 else 1
            per = [1] * (r - 1) + [size - (r - 1)]
            fn = lambda p=per: step_mixed(p)  # noqa: E731
            tokens = size
        try:
            fn()
            sync()
        except Exception as e:
            res["points"].append(
                {
                    "kind": kind,
                    "size": size,
                    "force": want or "natural",
                    "error": f"{type(e).__name__}: {e}"[:400],
                }
            )
            log("point failed", kind, size, want, repr(e)[:200])
            continue
        dispatched = sorted(set(forcer.log))
        if forcer.unavailable:
            res["points"].append(
                {
                    "kind": kind,
                    "size": size,
                    "force": want or "natural",
                    "unavailable": True,
                    "dispatch": dispatched,
                }
            )
            continue
        started_unix = time.time()  # to line contention up with other processes afterwards
        load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        t = time_call(fn, sync, event, warm, reps, point_budget_s)
        res["points"].append(
            {
                "t_unix": round(started_unix, 3),
                "load1": load1,
                "kind": kind,
                "size": size,
                "q": q if kind == "uniform" else None,
                "tokens": tokens,
                "force": want or "natural",
                "dispatch": dispatched,
                "repeat": repeat,
                **t,
            }
        )
        log(f"{kind:7s} {size:5d} {want or 'natural':9s} {t['median_ms']:9.3f} ms  {dispatched[:3]}")
    forcer.want = None


def engine_main(args: argparse.Namespace) -> int:
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "1"
    os.environ.setdefault("VLLM_CACHE_ROOT", f"/tmp/vllm-cache-{args.name}")
    res: dict[str, Any] = {
        "schema": "cgplan-latency-raw/1",
        "name": args.name,
        "argv": sys.argv,
        "points": [],
        "notes": [],
        "phases": {},
    }
    out = os.path.join(args.out, f"lat-{args.name}.json")
    ok = False
    try:
        import torch
        import vllm
        from vllm import LLM
        from vllm.config.compilation import CUDAGraphMode
        from vllm.v1.worker.gpu import cudagraph_utils as cgu
        from vllm.v1.worker.gpu.model_runner import GPUModelRunner

        res["vllm_version"] = vllm.__version__
        res["torch_version"] = torch.__version__
        runners: list[Any] = []
        orig_cap = GPUModelRunner.capture_model

        def capture_model(self: Any, *a: Any, **k: Any) -> Any:
            runners.append(self)
            t = time.perf_counter()
            r = orig_cap(self, *a, **k)
            res["phases"]["capture_s"] = round(time.perf_counter() - t, 3)
            return r

        GPUModelRunner.capture_model = capture_model

        def make_desc(mode: Any, num_tokens: int, num_reqs: int, loras: int) -> Any:
            return cgu.BatchExecutionDescriptor(
                cg_mode=mode, num_tokens=num_tokens, num_reqs=num_reqs, num_active_loras=loras
            )

        forcer = Forcer(CUDAGraphMode.NONE, CUDAGraphMode.PIECEWISE, CUDAGraphMode.FULL, make_desc)
        seen = set()
        for cls in [cgu.CudaGraphManager, *cgu.CudaGraphManager.__subclasses__()]:
            if "dispatch" in cls.__dict__ and cls not in seen:
                seen.add(cls)
                cls.dispatch = forcer.wrap(cls.__dict__["dispatch"])
        kw: dict[str, Any] = dict(  # noqa: C408 - reads as the LLM(...) call
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
        )
        if args.draft:
            kw["speculative_config"] = {
                "method": "eagle",
                "model": args.draft,
                "num_speculative_tokens": args.k,
            }
        if args.max_capture:
            kw["compilation_config"] = {"max_cudagraph_capture_size": args.max_capture}
        res["engine_kwargs"] = kw
        t = time.perf_counter()
        llm = LLM(**kw)
        res["phases"]["engine_start_s"] = round(time.perf_counter() - t, 3)
        vc = llm.llm_engine.vllm_config
        cc = vc.compilation_config
        runner = runners[-1]
        res["cudagraph_mode"] = cc.cudagraph_mode.name
        res["capture_sizes"] = list(cc.cudagraph_capture_sizes or [])
        res["max_capture_size"] = cc.max_cudagraph_capture_size
        res["max_num_seqs"] = args.max_num_seqs
        res["num_speculative_tokens"] = args.k if args.draft else 0
        res["hf_config"] = vc.model_config.hf_config.to_dict()
        if args.draft:
            res["draft_hf_config"] = vc.speculative_config.draft_model_config.hf_config.to_dict()
        res["attention_backend"] = str(getattr(getattr(vc, "attention_config", None), "backend", None))
        forcer.families[id(runner.cudagraph_manager)] = "target"
        spec = getattr(runner, "speculator", None)
        if spec is not None:
            forcer.families[id(getattr(spec, "prefill_cudagraph_manager", None))] = "drafter_prefill"
            forcer.families[id(getattr(spec, "decode_cudagraph_manager", None))] = "drafter_decode"
        res["model_weight_bytes"] = int(getattr(runner, "model_memory_usage", 0) or 0)
        ok = True
    except Exception:
        res["error"] = traceback.format_exc()[-3000:]
        log("engine failed:\n" + res["error"])
    barrier(args.sync_dir, args.engines, args.name, ok, args.barrier_wait_s)
    if ok:
        q = 1 + (args.k if args.draft else 0)

        def step_uniform(n: int) -> None:
            hidden, _ = runner._dummy_run(n * q, uniform_decode=True)
            # The target's logits over every verified position (n x q rows), as a served step
            # computes them for the rejection sampler; eager in every outcome.
            runner.model.compute_logits(hidden[: n * q])

        def step_mixed(per: list[int]) -> None:
            mixed_step(runner, per)

        with gpu_lock(args.sync_dir, args.settle_s), torch.inference_mode():
            # Burn-in: the widest batch, untimed, so clocks and caches are in their serving state.
            b0 = time.perf_counter()
            while time.perf_counter() - b0 < args.burn_in_s:
                step_uniform(args.max_num_seqs)
                torch.cuda.synchronize()
            t = time.perf_counter()
            res["phases"]["timing_started_unix"] = time.time()
            deadline = time.perf_counter() + args.timing_budget_s
            run_points(
                res,
                forcer,
                step_uniform,
                step_mixed,
                torch.cuda.synchronize,
                lambda: torch.cuda.Event(enable_timing=True),
                args.max_num_seqs,
                q,
                args.max_num_batched_tokens,
                res["max_capture_size"] or 0,
                args.warm,
                args.reps,
                args.point_budget_s,
                deadline,
                widest_repeats=args.widest_repeats,
                only_widest=args.only_widest,
                pause_s=args.pause_s,
            )
            res["phases"]["timing_s"] = round(time.perf_counter() - t, 3)
    res["phases"]["total_s"] = round(time.perf_counter() - T0, 3)
    os.makedirs(args.out, exist_ok=True)
    with open(out + ".tmp", "w") as f:
        json.dump(res, f, indent=1, default=str)
    os.replace(out + ".tmp", out)
    log("wrote", out, "points", len(res["points"]))
    os._exit(0 if ok else 1)  # skip vLLM's slow teardown; the GPU is released with the process


# ---------------------------------------------------------------- CPU self-test (fakes)
def self_test(outdir: str) -> int:
    """Fake managers and a fake clock: checks forcing, grid, point records and the JSON."""
    from dataclasses import dataclass
    from enum import Enum

    class Mode(Enum):
        NONE = 0
        PIECEWISE = 1
        FULL = 2

    @dataclass(frozen=True)
    class Desc:
        cg_mode: Mode
        num_tokens: int
        num_reqs: int | None
        num_active_loras: int = 0

    sizes = [1, 2, 4, 8, 16, 24, 32, 48, 64]

    class Mgr:
        def __init__(self, q: int) -> None:
            self.q = q
            self._capture_descs = {Mode.PIECEWISE: [Desc(Mode.PIECEWISE, t, None) for t in sizes]}

        def dispatch(self, num_reqs: int, num_tokens: int, uniform: Any, loras: int = 0) -> Desc:
            for t in sizes:
                if t >= num_tokens:
                    if uniform == self.q and t % self.q == 0:
                        return Desc(Mode.FULL, t, t // self.q)
                    return Desc(Mode.PIECEWISE, t, None)
            return Desc(Mode.NONE, num_tokens, num_reqs)

    forcer = Forcer(Mode.NONE, Mode.PIECEWISE, Mode.FULL, lambda m, t, r, lo: Desc(m, t, r, lo))
    Mgr.dispatch = forcer.wrap(Mgr.__dict__["dispatch"])  # type: ignore[method-assign]
    target, dec = Mgr(1), Mgr(1)
    forcer.families[id(target)] = "target"
    forcer.families[id(dec)] = "drafter_decode"
    clock = {"ms": 0.0}

    class Ev:
        def record(self) -> None:
            self.t = clock["ms"]

        def synchronize(self) -> None:
            pass

        def elapsed_time(self, other: Ev) -> float:
            return other.t - self.t

    def cost(d: Desc) -> float:
        return {Mode.FULL: 1.0, Mode.PIECEWISE: 2.0, Mode.NONE: 5.0}[d.cg_mode] + 0.01 * d.num_tokens

    def step_uniform(n: int) -> None:
        clock["ms"] += cost(target.dispatch(n, n, 1)) + cost(dec.dispatch(n, n, 1))

    def step_mixed(per: list[int]) -> None:
        clock["ms"] += cost(target.dispatch(len(per), sum(per), None))

    res: dict[str, Any] = {"points": [], "notes": []}
    run_points(
        res,
        forcer,
        step_uniform,
        step_mixed,
        lambda: None,
        Ev,
        64,
        1,
        2048,
        64,
        1,
        3,
        10.0,
        time.perf_counter() + 60,
    )
    by = {(p["kind"], p["size"], p["force"]): p for p in res["points"]}
    assert by[("uniform", 3, "natural")]["dispatch"][-1][1:3] == ("FULL", 4), by[("uniform", 3, "natural")]
    assert by[("uniform", 3, "NONE")]["median_ms"] == 5.03 + 1.04, by[("uniform", 3, "NONE")]
    assert ("target", "PIECEWISE", 4, None) in by[("uniform", 3, "PIECEWISE")]["dispatch"]
    assert by[("mixed", 65, "PIECEWISE")].get("unavailable"), by[("mixed", 65, "PIECEWISE")]
    assert by[("mixed", 65, "NONE")]["median_ms"] == 5.65
    assert res["points"][0]["size"] == 64  # the widest batch first, and again at the end
    assert res["points"][-1]["size"] == 64 and res["points"][-1]["repeat"]
    assert all("t_unix" in p for p in res["points"] if "median_ms" in p)
    # Four timings of the widest batch, spread through the run; every other point once.
    spread: dict[str, Any] = {"points": [], "notes": []}
    args = (forcer, step_uniform, step_mixed, lambda: None, Ev, 64, 1, 2048, 64, 1, 3, 10.0)
    run_points(spread, *args, time.perf_counter() + 60, widest_repeats=4)
    at = [i for i, p in enumerate(spread["points"]) if p["kind"] == "uniform" and p["size"] == 64]
    assert len(at) == 12 and at[:3] == [0, 1, 2] and at[-1] == len(spread["points"]) - 1, at
    assert 0.2 < at[3] / len(spread["points"]) < 0.45 and 0.55 < at[6] / len(spread["points"]) < 0.8, at
    others = [(p["kind"], p["size"], p["force"]) for p in spread["points"] if p["size"] != 64]
    assert len(others) == len(set(others)) == len([p for p in res["points"] if p["size"] != 64])
    widest: dict[str, Any] = {"points": [], "notes": []}
    run_points(widest, *args, time.perf_counter() + 60, widest_repeats=3, only_widest=True, pause_s=0.0)
    assert [(p["size"], p["force"]) for p in widest["points"]] == [
        (64, "natural"),
        (64, "NONE"),
        (64, "PIECEWISE"),
    ] * 3
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "lat-selftest.json"), "w") as f:
        json.dump(res, f, indent=1)
    print("self-test ok:", len(res["points"]), "points")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--self-test", metavar="OUTDIR")
    p.add_argument("--name")
    p.add_argument("--model")
    p.add_argument("--draft")
    p.add_argument("--k", type=int, default=0)
    p.add_argument("--max-num-seqs", type=int, default=64)
    p.add_argument("--max-num-batched-tokens", type=int, default=2048)
    p.add_argument("--max-model-len", type=int, default=2048)
    p.add_argument("--max-capture", type=int)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.02)
    p.add_argument("--kv-cache-gib", type=float, default=1.0)
    p.add_argument("--out")
    p.add_argument("--sync-dir")
    p.add_argument("--engines", type=int, default=1)
    p.add_argument("--barrier-wait-s", type=float, default=300.0)
    p.add_argument("--warm", type=int, default=3)
    p.add_argument("--reps", type=int, default=25)
    p.add_argument("--point-budget-s", type=float, default=2.0)
    p.add_argument("--timing-budget-s", type=float, default=60.0)
    p.add_argument("--settle-s", type=float, default=3.0)
    p.add_argument("--burn-in-s", type=float, default=2.0)
    p.add_argument(
        "--widest-repeats", type=int, default=2, help="times the widest batch is timed, spread over the run"
    )
    p.add_argument("--only-widest", action="store_true", help="time only the widest batch's outcomes")
    p.add_argument("--pause-s", type=float, default=1.0, help="--only-widest: seconds between rounds")
    a = p.parse_args()
    if a.self_test:
        return self_test(a.self_test)
    return engine_main(a)


if __name__ == "__main__":
    sys.exit(main())
