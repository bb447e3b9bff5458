"""A capture backend without a GPU, for testing what runs around capture (the multi-config
scheduler, resume, Ray, failure handling) on a CPU machine. Hidden from help: `--backend fake`.

It "captures" exactly the planned graphs through the same GraphRecorder as the real backends
(so CGPLAN_FAULT_AT_GRAPH works), with made-up time and memory, and answers the dispatch probe
with the plan's own dispatch: its reports always match their plan. Nothing it writes is
evidence about vLLM.

CGPLAN_FAKE_CAPTURE="STEM=BEHAVIOUR,..." picks a behaviour per config (by file stem):
`fail` (an engine error after half the graphs: a partial report, exit 4), `crash` (the
process dies without a report), `sleep:S` (takes S seconds first), `oom` (out of memory half-way).
"""

from __future__ import annotations

import os
import sys
import time

from cgplan.core.compare.measure import MeasuredCapture
from cgplan.core.model.types import Plan
from cgplan.gpu.recorder import GraphRecorder

_MIB = 1 << 20


class _CountingNvml:
    """Used memory that grows by 2 MiB per reading (NVML's granularity on the H200)."""

    def __init__(self) -> None:
        self.used = 1 << 30

    def memory_used_bytes(self) -> int:
        self.used += 2 * _MIB
        return self.used


def behaviour(stem: str) -> str:
    """This config's behaviour from CGPLAN_FAKE_CAPTURE ('' when none)."""
    for item in os.environ.get("CGPLAN_FAKE_CAPTURE", "").split(","):
        name, _, what = item.partition("=")
        if name.strip() == stem:
            return what.strip()
    return ""


def capture_fake(plan: Plan, recorder: GraphRecorder, stem: str) -> MeasuredCapture:
    """Record every planned graph (as vLLM orders them: per family, largest first)."""
    what = behaviour(stem)
    if what.startswith("sleep:"):
        # Said first, so a test knows the capture has begun (and a SIGINT lands inside it).
        sys.stderr.write(f"cgplan fake backend: {stem} captures for {what.removeprefix('sleep:')} s\n")
        sys.stderr.flush()
        time.sleep(float(what.removeprefix("sleep:")))
    if what == "crash":
        os._exit(9)  # as an engine killed by the kernel's OOM killer would
    nvml = _CountingNvml()
    recorder.nvml = nvml  # type: ignore[assignment]
    recorder.armed = True
    t0 = time.perf_counter()
    order = [(family, g) for family, gs in plan.graphs.items() for g in gs]
    for i, (family, g) in enumerate(order):
        if what in ("fail", "oom") and i == len(order) // 2:
            raise RuntimeError(
                "CUDA out of memory. Tried to allocate 2.00 GiB" if what == "oom" else "engine exploded"
            )
        recorder.begin(family, g.mode, g.num_tokens, g.num_reqs, g.query_len, g.num_active_loras)
        recorder.piece_started(0)
        recorder.piece_ended(2 * _MIB, time.perf_counter())
        recorder.end()
    return MeasuredCapture(
        backend="fake",
        status="complete",
        model_runner=plan.model_runner,
        cudagraph_mode=plan.cudagraph_mode,
        capture_sizes=plan.capture_sizes,
        max_capture_size=plan.max_capture_size,
        graphs=recorder.measurements(),
        uniform_decode=dict(plan.uniform_decode),
        mixed=plan.mixed,
        uniform_decode_lora=dict(plan.uniform_decode_lora),
        capture_wall_s=round(time.perf_counter() - t0, 3),
        capture_nvml_delta_bytes=2 * _MIB * len(order),
    )
