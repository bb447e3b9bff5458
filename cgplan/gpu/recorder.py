"""Per-graph measurement: time and memory of every torch.cuda.graph capture, grouped by descriptor.

Backends tell the recorder which descriptor (family, mode, tokens, requests, query length)
is being captured; a hook on `torch.cuda.graph` times each capture section. A PIECEWISE
descriptor is several sections (one per compiled piece); they add up into one record.

Memory is read per descriptor, not per piece: NVML's used memory and PyTorch's reserved bytes
are read when a descriptor's first section begins and when its last one is over (the next
descriptor begins, or capture ends), so a 16-layer PIECEWISE graph costs two NVML queries, not
34. (An NVML query is a driver call of a few hundred microseconds on the H200; per piece they
made the hooks cost 17% of vLLM's capture time.) The window holds the sections and whatever
runs between them (the eager attention of a PIECEWISE graph), not the descriptor's warmup runs.
Nothing here knows vLLM.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from cgplan.core.compare.measure import GraphMeasurement
from cgplan.gpu.nvml import NvmlSession


class ProgressSink(Protocol):
    """Where capture progress goes (a rich bar in the CLI, a list in tests)."""

    def start(self, total: int | None) -> None:
        """Capture begins; `total` descriptors are expected (None if unknown)."""

    def advance(self, label: str, mib_so_far: float) -> None:
        """One more descriptor finished."""

    def note(self, message: str) -> None:
        """A remark worth showing (backend choices, vLLM's figures)."""


class NullProgress:
    """A ProgressSink that shows nothing."""

    def start(self, total: int | None) -> None:
        """Ignore."""

    def advance(self, label: str, mib_so_far: float) -> None:
        """Ignore."""

    def note(self, message: str) -> None:
        """Ignore."""


@dataclass
class _Open:
    order: int
    family: str
    mode: str
    num_tokens: int
    num_reqs: int | None
    query_len: int | None
    started_s: float
    num_active_loras: int = 0
    pieces: int = 0
    capture_s: float = 0.0
    nvml: int | None = 0
    reserved: int = 0
    ended_s: float | None = None


@dataclass
class _Segment:
    """Consecutive sections of one record, with the memory readings at their start."""

    record: _Open
    used0: int | None
    reserved0: int | None


P = ParamSpec("P")
T = TypeVar("T")


def _timed(fn: Callable[Concatenate[GraphRecorder, P], T]) -> Callable[Concatenate[GraphRecorder, P], T]:
    """Adds the call's host time to `hook_s` (outermost call only: begin() calls end())."""

    def inner(self: GraphRecorder, /, *a: P.args, **k: P.kwargs) -> T:
        if self._depth:
            return fn(self, *a, **k)
        self._depth += 1
        t0 = time.perf_counter()
        try:
            return fn(self, *a, **k)
        finally:
            self.hook_s += time.perf_counter() - t0
            self._depth -= 1

    inner.__doc__, inner.__name__ = fn.__doc__, fn.__name__
    return inner


@dataclass
class GraphRecorder:
    """Collects GraphMeasurements; safe to read at any time (partial reports)."""

    nvml: NvmlSession | None
    progress: Any = field(default_factory=NullProgress)
    _records: list[_Open] = field(default_factory=list)
    _open: list[_Open] = field(default_factory=list)
    """The records of the current descriptor (one per family seen in it), not yet ended."""
    _current: dict[str, Any] | None = None
    _family_stack: list[str] = field(default_factory=list)
    _piece: _Open | None = None
    _segment: _Segment | None = None
    _last_reserved: int | None = None
    reserved_bytes: Callable[[], int] | None = None
    """PyTorch's reserved bytes now (set by the torch hook); read at segment boundaries only."""
    _total_nvml: int = 0
    hook_s: float = 0.0
    """Host time spent in this recorder's hooks so far (what instrumenting costs)."""
    nvml_s: float = 0.0
    """The part of `hook_s` spent in NVML queries."""
    _depth: int = 0
    armed: bool = True
    """Descriptors are recorded only while armed (vLLM's memory-profiling captures are not)."""
    _fault_done: bool = False
    _ballast: list[Any] = field(default_factory=list)

    @_timed
    def begin(
        self,
        family: str,
        mode: str,
        num_tokens: int,
        num_reqs: int | None,
        query_len: int | None,
        num_active_loras: int = 0,
    ) -> None:
        """A new descriptor starts (closes the previous one); `num_active_loras` is the LoRA
        adapter count of vLLM's descriptor (0 without LoRA)."""
        self.end()
        if not self.armed:
            return
        self._current = {
            "family": family,
            "mode": mode,
            "num_tokens": num_tokens,
            "num_reqs": num_reqs,
            "query_len": query_len,
            "num_active_loras": num_active_loras,
            "started_s": time.perf_counter(),
        }

    @_timed
    def end(self) -> None:
        """The current descriptor is done."""
        self._close_segment()
        if self._current is None:
            return
        now = time.perf_counter()
        for r in self._open:
            r.ended_s = now
            self._total_nvml += r.nvml or 0
            self.progress.advance(f"{r.family} {r.mode} {r.num_tokens} tokens", self._total_nvml / (1 << 20))
        self._open.clear()
        self._current = None
        self._maybe_inject_fault()

    def _maybe_inject_fault(self) -> None:
        """Fault rehearsal on a real GPU: CGPLAN_FAULT_AT_GRAPH="N:SIGINT|SIGTERM|OOM" delivers a
        real signal to this process, or fills the GPU so the next capture runs out of memory,
        once N descriptors are done (how the reliability tests reach "half-way" deterministically)."""
        spec = os.environ.get("CGPLAN_FAULT_AT_GRAPH")
        if not spec or self._fault_done:
            return
        at, _, what = spec.partition(":")
        if not at.isdigit() or sum(1 for r in self._records if r.ended_s is not None) < int(at):
            return
        self._fault_done = True
        if what in ("SIGINT", "SIGTERM"):
            os.kill(os.getpid(), getattr(signal, what))
        elif what == "OOM":
            import torch

            free, _ = torch.cuda.mem_get_info()
            self._ballast.append(torch.empty(max(free - (64 << 20), 0), dtype=torch.uint8, device="cuda"))

    @contextmanager
    def family(self, name: str) -> Iterator[None]:
        """Attribute the pieces captured inside to `name` (e.g. the V1 drafter inside a target run)."""
        self._family_stack.append(name)
        try:
            yield
        finally:
            self._family_stack.pop()

    def _record(self) -> _Open | None:
        cur = self._current
        if cur is None:
            return None
        family = self._family_stack[-1] if self._family_stack else cur["family"]
        for r in self._open:
            if r.family == family:
                return r
        rec = _Open(
            order=len(self._records),
            family=family,
            mode=cur["mode"],
            num_tokens=cur["num_tokens"],
            num_reqs=cur["num_reqs"] if family == cur["family"] else None,
            query_len=cur["query_len"] if family == cur["family"] else None,
            started_s=cur["started_s"],
            # The adapters are set for the whole dummy run, a drafter's pieces inside it included.
            num_active_loras=cur["num_active_loras"],
        )
        self._records.append(rec)
        self._open.append(rec)
        return rec

    def _read(self, reserved: int | None) -> tuple[int | None, int | None]:
        t0 = time.perf_counter()
        used = self.nvml.memory_used_bytes() if self.nvml else None
        self.nvml_s += time.perf_counter() - t0
        if reserved is None and self.reserved_bytes is not None:
            reserved = self.reserved_bytes()
        return used, reserved

    def _segment_delta(self, seg: _Segment) -> tuple[int | None, int]:
        used1, reserved1 = self._read(self._last_reserved)
        nvml = None if seg.used0 is None or used1 is None else used1 - seg.used0
        reserved = 0 if seg.reserved0 is None or reserved1 is None else reserved1 - seg.reserved0
        return nvml, reserved

    @_timed
    def close_window(self) -> None:
        """Close the current memory window (the sections captured so far are measured)."""
        self._close_segment()

    def _close_segment(self) -> None:
        seg = self._segment
        if seg is None:
            return
        self._segment = None
        nvml, reserved = self._segment_delta(seg)
        self._last_reserved = None
        rec = seg.record
        rec.nvml = None if nvml is None or rec.nvml is None else rec.nvml + nvml
        rec.reserved += reserved

    @_timed
    def piece_started(self, reserved_bytes: int | None = None) -> None:
        """Called right after a graph capture began (baseline after torch's own empty_cache).

        Memory is read only when this section starts a new segment (the first section of a
        descriptor, or the first after a family switch); `reserved_bytes` is that reading when the
        caller has it, else `self.reserved_bytes()` is asked."""
        rec = self._record()
        self._piece = rec
        if rec is None:
            return
        seg = self._segment
        if seg is not None and seg.record is rec:
            return
        self._close_segment()
        used0, reserved0 = self._read(reserved_bytes)
        self._segment = _Segment(rec, used0, reserved0)

    @_timed
    def piece_ended(self, reserved_bytes: int | None = None, t_before_enter: float | None = None) -> None:
        """Called right after the capture ended (the graph is instantiated); host-side only."""
        rec = self._piece
        if rec is None:
            return
        self._piece = None
        rec.pieces += 1
        if t_before_enter is not None:
            rec.capture_s += time.perf_counter() - t_before_enter
        if reserved_bytes is not None:
            self._last_reserved = reserved_bytes

    def measurements(self) -> tuple[GraphMeasurement, ...]:
        """Everything recorded so far (open records included, as partial)."""
        now = time.perf_counter()
        seg = self._segment
        # An open segment (a failure half-way) counts what it took up to now.
        open_delta = self._segment_delta(seg) if seg is not None else (0, 0)

        def memory(r: _Open) -> tuple[int | None, int]:
            if seg is None or seg.record is not r:
                return r.nvml, r.reserved
            nv = None if r.nvml is None or open_delta[0] is None else r.nvml + open_delta[0]
            return nv, r.reserved + open_delta[1]

        out = []
        for r in self._records:
            if r.pieces == 0:
                continue
            nvml, reserved = memory(r)
            out.append(
                GraphMeasurement(
                    order=r.order,
                    family=r.family,
                    mode=r.mode,
                    num_tokens=r.num_tokens,
                    num_reqs=r.num_reqs,
                    query_len=r.query_len,
                    pieces=r.pieces,
                    capture_time_ms=round(r.capture_s * 1e3, 3),
                    window_time_ms=round(((r.ended_s or now) - r.started_s) * 1e3, 3),
                    nvml_delta_bytes=nvml,
                    torch_reserved_delta_bytes=reserved,
                    num_active_loras=r.num_active_loras,
                )
            )
        return tuple(out)


@contextmanager
def hook_torch_graph_capture(recorder: GraphRecorder) -> Iterator[None]:
    """Measure every `torch.cuda.graph` section (vLLM V1 and V2 both capture through it)."""
    import torch

    cls = torch.cuda.graph
    orig_enter: Callable[..., Any] = cls.__enter__
    orig_exit: Callable[..., Any] = cls.__exit__

    def enter(self: Any) -> Any:
        self._cgplan_t0 = time.perf_counter()
        out = orig_enter(self)
        # No synchronisation while the stream captures, and no query here unless this section
        # starts a descriptor's window (the recorder decides; see the module's docstring).
        recorder.piece_started()
        return out

    def exit_(self: Any, *exc: Any) -> Any:
        out = orig_exit(self, *exc)
        # capture_end instantiates the graph on the host; the pool's and the executable
        # graph's allocations are made synchronously, so the next NVML reading already shows
        # them and no device synchronisation (which would slow capture down) is needed.
        recorder.piece_ended(None, getattr(self, "_cgplan_t0", None))
        return out

    previous_reserved = recorder.reserved_bytes
    # torch.cuda.memory_reserved() flattens the allocator's whole statistics tree into a new
    # dict on every call; the nested form skips that (the same counter).
    recorder.reserved_bytes = lambda: int(
        torch.cuda.memory_stats_as_nested_dict()["reserved_bytes"]["all"]["current"]
    )
    cls.__enter__ = enter
    cls.__exit__ = exit_
    try:
        yield
    finally:
        cls.__enter__ = orig_enter
        cls.__exit__ = orig_exit
        # The last window closes while PyTorch's reading is still at hand.
        recorder.close_window()
        recorder.reserved_bytes = previous_reserved
