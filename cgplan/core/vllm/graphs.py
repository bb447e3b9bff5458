"""The graph sets and run-time dispatch of vLLM's two model runners, simulated.

V1: `CudagraphDispatcher` (vllm/v1/cudagraph_dispatcher.py) — a set of batch-descriptor
keys per runtime mode; a batch pads to the next capture size and looks itself up.
V2: `CudaGraphManager` (vllm/v1/worker/gpu/cudagraph_utils.py) — descriptors per mode
and a token-count → candidate list map; the first compatible candidate wins.
The data structures are mirrored rather than summarised, so that every corner
(dynamic-SD tiers sharing a token count, FULL groups without a matching tier) falls
out the same way it does in vLLM.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from operator import itemgetter
from typing import NamedTuple

from cgplan.core.model.modes import Mode
from cgplan.core.model.types import Graph, GraphMode
from cgplan.core.vllm.releases import V2Candidates


def round_up(x: int, y: int) -> int:
    """vllm.utils.math_utils.round_up, with Python's floor division as vLLM has it.

    >>> round_up(10, 4)
    12
    """
    return ((x + y - 1) // y) * y


class Outcome(NamedTuple):
    """What a dispatcher picks for one batch (a named tuple: one per dispatch of every plan)."""

    mode: Mode
    """FULL, PIECEWISE or NONE (eager)."""
    padded_tokens: int | None
    """Token count of the graph replayed."""
    padded_reqs: int | None
    """Request count of the graph replayed, where it fixes one."""


EAGER = Outcome(Mode.NONE, None, None)
_new_outcome: Callable[[tuple[Mode, int | None, int | None]], Outcome] = partial(tuple.__new__, Outcome)
"""An Outcome from its three fields as one tuple, made in C (a NamedTuple's own __new__ is Python)."""

NO_LORA: tuple[int, ...] = (0,)
"""LoRA capture cases without LoRA: one set of graphs, no adapter."""


def captured_lora_counts(max_loras: int, specialize_active: bool) -> list[int]:
    """vllm.lora.utils.get_captured_lora_counts: adapter counts captured with LoRA active.

    >>> captured_lora_counts(3, False), captured_lora_counts(3, True)
    ([4], [1, 2, 4])
    """
    if not specialize_active:
        return [max_loras + 1]
    return [n for n in range(1, max_loras + 2) if (n & (n - 1)) == 0 or n == max_loras + 1]


def lora_cases(
    runner: str, enable_lora: bool, max_loras: int, specialize_lora: bool, specialize_active: bool
) -> tuple[int, ...]:
    """The `num_active_loras` values each capture size is captured for.

    V1: `CudagraphDispatcher._get_lora_cases`; V2: `gpu/lora_utils.get_lora_capture_cases`.
    With `cudagraph_specialize_lora` both capture a no-LoRA set and a LoRA set (with
    `specialize_active_lora`, one set per captured adapter count); without it V1 captures the
    LoRA set only and V2 both (`[0, max_loras + 1]`), whatever `specialize_active_lora` says.

    >>> lora_cases("v2", True, 3, True, True), lora_cases("v1", True, 3, False, True)
    ((0, 1, 2, 4), (4,))
    """
    if not enable_lora:
        return NO_LORA
    if specialize_lora:
        return (0, *captured_lora_counts(max_loras, specialize_active))
    if runner == "v1":
        return (max_loras + 1,)
    return (0, max_loras + 1)


def effective_loras(cases: tuple[int, ...], num_active_loras: int) -> int:
    """The captured adapter count a batch with `num_active_loras` adapters dispatches to (0: none).
    With LoRA on, `lora_cases` always holds a LoRA set (max_loras + 1); plans ask for a LoRA batch
    only then (the no-LoRA case 0, below any count asked for, is never the one bisect finds)."""
    if num_active_loras <= 0:
        return 0
    captured = sorted(cases)
    i = bisect.bisect_left(captured, num_active_loras)
    return captured[i] if i < len(captured) else captured[-1]


class V1Dispatcher:
    """vLLM's V1 `CudagraphDispatcher`, keys and dispatch only."""

    def __init__(
        self,
        sizes: tuple[int, ...],
        max_size: int,
        mode: Mode,
        query_len: int,
        max_num_seqs: int,
        loras: tuple[int, ...] = NO_LORA,
    ) -> None:
        self.sizes = sizes
        self.max_size = max_size
        self.mode = mode
        self.q = query_len
        self.s = max_num_seqs
        self.loras = loras
        self.keys: dict[Mode, set[tuple[int, int | None, bool, int]]] = {
            Mode.PIECEWISE: set(),
            Mode.FULL: set(),
        }
        if mode is Mode.NONE:
            return
        mixed = mode.mixed_mode()
        if mixed is not Mode.NONE:
            for size in sizes:
                for lora in loras:
                    key = self._descriptor(size, uniform=False, lora=lora)
                    if mixed is Mode.PIECEWISE:
                        key = (key[0], None, False, lora)
                    self.keys[mixed].add(key)
        if mode.decode_mode() is Mode.FULL and mode.separate_routine():
            widest = query_len * max_num_seqs
            for size in sizes:
                if query_len <= size <= widest:
                    for lora in loras:
                        self.keys[Mode.FULL].add(self._descriptor(size, uniform=True, lora=lora))

    def _padded(self, num_tokens: int) -> int:
        i = bisect.bisect_left(self.sizes, num_tokens)
        return self.sizes[i] if i < len(self.sizes) else self.max_size + 1

    def _descriptor(self, num_tokens: int, uniform: bool, lora: int) -> tuple[int, int | None, bool, int]:
        padded = self._padded(num_tokens)
        if uniform and self.mode.has_full():
            return (padded, min(padded // self.q, self.s), True, lora)
        return (padded, min(padded, self.s), False, lora)

    def boundaries(self) -> list[int]:
        """Token counts where a dispatch outcome can change: the capture sizes."""
        return [*self.sizes, self.max_size]

    def graphs(self) -> tuple[Graph, ...]:
        """Capture descriptors in capture order: PIECEWISE then FULL, largest first."""
        out: list[Graph] = []
        for mode in (Mode.PIECEWISE, Mode.FULL):
            # get_capture_descs: sorted by (num_tokens, num_active_loras), largest first
            for tokens, reqs, uniform, lora in sorted(self.keys[mode], key=lambda k: (-k[0], -k[3])):
                out.append(Graph(mode.value, tokens, reqs, self.q if uniform else None, lora))
        return tuple(out)

    def dispatch(self, num_tokens: int, uniform_decode: bool, num_active_loras: int = 0) -> Outcome:
        """`CudagraphDispatcher.dispatch` with every mode allowed (`num_active_loras` > 0: a LoRA batch).

        No early exit for mode NONE or num_tokens > max_size: with mode NONE there are no keys,
        and above the last capture size `_padded` gives max_size + 1, which no key holds, so both
        fall through to eager (11 of a V1 corpus plan set's 617 dispatches: no measurable time)."""
        lora = effective_loras(self.loras, num_active_loras)
        desc = self._descriptor(num_tokens, uniform_decode and self.mode.separate_routine(), lora)
        if desc in self.keys[Mode.FULL]:
            return Outcome(Mode.FULL, desc[0], desc[1])
        if (desc[0], None, False, lora) in self.keys[Mode.PIECEWISE]:
            return Outcome(Mode.PIECEWISE, desc[0], None)
        return EAGER


class _Desc(NamedTuple):
    """V2 `BatchExecutionDescriptor` (no varlen decode). A named tuple,
    not a frozen dataclass: the managers build and hash thousands per plan, and a tuple's
    construction and hash run in C (a 1,000-config sweep spent a third of its time here)."""

    mode: Mode
    num_tokens: int
    num_reqs: int | None
    query_len: int | None
    num_active_loras: int
    num_ubatches: int
    """No defaults: the managers and `Microbatching.twin` always give all six fields."""


_TOKENS = itemgetter(1)
"""A descriptor's num_tokens (the sort key, in C)."""


@lru_cache(maxsize=1 << 16)
def _graph(mode: GraphMode, d: _Desc) -> Graph:
    """The Graph of a descriptor, made once (a Graph is frozen, so plans can share one): a sweep or a
    fix search makes the same few hundred thousands of times, and a frozen dataclass is slow to build."""
    return Graph(mode, d.num_tokens, d.num_reqs, d.query_len, d.num_active_loras, d.num_ubatches)


@dataclass(frozen=True)
class Microbatching:
    """What `CudaGraphManager._maybe_ubatch_twin` reads: DBO is on and a UBatchRunner exists."""

    num_ubatches: int
    """Microbatches per twin graph."""
    min_tokens: int
    """`dbo_decode_token_threshold`: twins are made for FULL graphs at least this large (vLLM
    checks the decode threshold for mixed FULL graphs too)."""

    def twin(self, d: _Desc) -> _Desc | None:
        """The microbatched twin of a FULL descriptor, when one is captured."""
        if d.mode is not Mode.FULL or d.num_reqs is None:
            return None
        per_req, rem = divmod(d.num_tokens, d.num_reqs)
        if rem or d.query_len not in (None, per_req):
            return None
        if d.num_tokens < self.num_ubatches or d.num_tokens < self.min_tokens:
            return None
        return _Desc(d.mode, d.num_tokens, d.num_reqs, per_req, d.num_active_loras, self.num_ubatches)


class V2Manager:
    """vLLM's V2 `CudaGraphManager`: candidates and dispatch."""

    def __init__(
        self,
        sizes: tuple[int, ...],
        max_size: int,
        mode: Mode,
        decode_query_len: int,
        decode_query_lens: list[int],
        max_num_seqs: int,
        candidates: V2Candidates,
        loras: tuple[int, ...] = NO_LORA,
        ubatch: Microbatching | None = None,
        pad_piecewise_reqs: bool = False,
    ) -> None:
        """`pad_piecewise_reqs`: PIECEWISE mixed descriptors pad requests like FULL ones,
        min(size, max_num_seqs) (0.26.0 under breakable CUDA graphs, `use_breakable_cg`)."""
        self.mode = mode
        self.s = max_num_seqs
        self.loras = loras
        self.by_mode: dict[Mode, list[_Desc]] = {}
        # per LoRA case: (ascending token counts, their candidate groups), one entry per mode
        self._groups: dict[int, list[tuple[list[int], list[list[_Desc]]]]] = {}
        self._boundaries: list[int] = []
        self._graphs: tuple[Graph, ...] | None = None
        self.tables: dict[tuple[object, ...], object] = {}
        """Dispatch tables made from this manager (`cgplan.core.plan.build`'s memo; it never changes)."""
        self._outcomes: dict[_Desc, Outcome] = {}
        # No early exit for mode NONE or no sizes: mode NONE has no decode or mixed mode and no
        # sizes no loop turn, so no descriptor is made and every dispatch is eager all the same.
        max_decode_tokens = max_num_seqs * decode_query_len
        decode_mode, mixed_mode = mode.decode_mode(), mode.mixed_mode()
        by_mode: dict[Mode, list[_Desc]] = {}
        # the decode descriptors made, by (tokens, query_len, lora, ubatches): within one manager
        # these fix a decode descriptor (its mode is the decode mode, its requests tokens // ql),
        # so a size rounding up to one already made makes no descriptor at all
        seen: set[tuple[int, int | None, int, int]] = set()
        with_decode = mode.separate_routine() and decode_mode is not Mode.NONE
        # 0.26-0.28 pick among every mode's descriptors of one token count, in the order added (no
        # microbatched twin joins them: twins come with 0.30.0, test_rule_edges holds releases to it)
        by_token: dict[tuple[int, int], list[_Desc]] | None = (
            {} if candidates is V2Candidates.SMALLEST_ANY_MODE else None
        )
        # The loops below run for every capture size x tier of every plan: the appends are bound
        # once and round_up is inlined (a 1,000-config sweep spends most of its time here).
        decode_list = by_mode.setdefault(decode_mode, []) if with_decode else []
        mixed_list = by_mode.setdefault(mixed_mode, []) if mixed_mode is not Mode.NONE else []
        add_decode, add_mixed, mark = decode_list.append, mixed_list.append, seen.add
        new_desc = partial(tuple.__new__, _Desc)  # a _Desc of all six fields, made in C
        # a decode graph at query length ql holds tokens = round_up(size, ql) <= limit tokens
        limit = min(max_decode_tokens, max_size)
        mixed_full = mixed_mode is Mode.FULL or (pad_piecewise_reqs and mixed_mode is Mode.PIECEWISE)
        for size in sorted(sizes):
            for lora in loras:
                if with_decode:
                    for ql in decode_query_lens:
                        tokens = ((size + ql - 1) // ql) * ql
                        if tokens > limit or tokens // ql > max_num_seqs:
                            continue
                        key = (tokens, ql, lora, 1)
                        if key in seen:
                            continue  # made already, and its twin with it
                        mark(key)
                        desc = new_desc((decode_mode, tokens, tokens // ql, ql, lora, 1))
                        add_decode(desc)
                        if by_token is not None:
                            by_token.setdefault((tokens, lora), []).append(desc)
                        twin = ubatch.twin(desc) if ubatch else None
                        if twin is not None:
                            twin_key = (twin.num_tokens, twin.query_len, lora, twin.num_ubatches)
                            if twin_key not in seen:
                                mark(twin_key)
                                add_decode(twin)
                if mixed_mode is not Mode.NONE:
                    desc = new_desc(
                        (mixed_mode, size, min(size, max_num_seqs) if mixed_full else None, None, lora, 1)
                    )
                    add_mixed(desc)
                    if by_token is not None:
                        by_token.setdefault((size, lora), []).append(desc)
                    twin = ubatch.twin(desc) if ubatch else None
                    if twin is not None:
                        add_mixed(twin)
        by_mode = {m: descs for m, descs in by_mode.items() if descs}
        for descs in by_mode.values():
            descs.sort(key=_TOKENS, reverse=True)
        self.by_mode = by_mode
        # Every LoRA case holds the same descriptors but for num_active_loras (the loops above make
        # them alike, size by size), and an Outcome is (mode, tokens, requests): the first match
        # among all cases' descriptors, taken in the same order, is the first match among one
        # case's. So the FULL-before-PIECEWISE groups are made once, for every case.
        if by_token is None:
            shared: list[tuple[list[int], list[list[_Desc]]]] = []
            for m in (Mode.FULL, Mode.PIECEWISE):
                counts_m: list[int] = []
                groups_m: list[list[_Desc]] = []
                last = None  # indexed, not by name: runs per descriptor
                for d in reversed(by_mode.get(m, [])):
                    if last == d[1]:
                        groups_m[-1].append(d)
                    else:
                        last = d[1]
                        counts_m.append(last)
                        groups_m.append([d])
                if counts_m:
                    shared.append((counts_m, groups_m))
            for lora in loras:
                self._groups[lora] = shared
        else:
            for lora in loras:
                counts = sorted(t for t, la in by_token if la == lora)
                self._groups[lora] = [(counts, [by_token[(c, lora)] for c in counts])]
        self._boundaries = sorted({d[1] for descs in by_mode.values() for d in descs if d[1] > 0})

    def boundaries(self) -> list[int]:
        """Token counts where a dispatch outcome can change: every descriptor's (ascending, once)."""
        return self._boundaries

    def graphs(self) -> tuple[Graph, ...]:
        """Capture descriptors in capture order: PIECEWISE then FULL, largest first."""
        if self._graphs is None:
            out: list[Graph] = []
            for m in (Mode.PIECEWISE, Mode.FULL):
                out.extend(_graph(m._value_, d) for d in self.by_mode.get(m, ()))
            self._graphs = tuple(out)
        return self._graphs

    def picker(
        self, uniform_query_len: int | None, num_active_loras: int, reqs_cap: int | None = None
    ) -> Callable[[int, int], Outcome]:
        """`CudaGraphManager.dispatch` for one microbatch (a batch DBO does not split), as
        `cgplan.core.plan.build.dispatch_table` asks it: (num_reqs, num_tokens) -> Outcome, a uniform
        decode at `uniform_query_len`, or with `reqs_cap` a mixed batch of min(num_tokens, reqs_cap)
        requests (as many as tokens up to max_num_seqs: the FULL worst case). Each descriptor's
        Outcome is made once (a plan asks thousands). The first candidate of the smallest token
        count at or above num_tokens (per mode on 0.29+: FULL groups before PIECEWISE ones) whose
        query length, request count and microbatch count fit wins."""
        lora = effective_loras(self.loras, num_active_loras)
        groups = self._groups.get(lora, ())
        outcomes = self._outcomes
        bisect_left = bisect.bisect_left

        def pick(num_reqs: int, num_tokens: int) -> Outcome:
            if reqs_cap is not None:
                num_reqs = min(num_tokens, reqs_cap)
            if num_tokens <= 0:
                return EAGER
            for counts, descs in groups:
                i = bisect_left(counts, num_tokens)
                if i == len(counts):
                    continue
                for d in descs[i]:
                    _, tokens, reqs, query_len, _, ubatches = d
                    if (
                        (query_len is None or query_len == uniform_query_len)
                        and (reqs is None or reqs >= num_reqs)
                        and tokens >= num_tokens
                        and ubatches == 1
                    ):
                        got = outcomes.get(d)
                        if got is None:
                            got = outcomes[d] = _new_outcome(d[:3])
                        return got
            return EAGER

        return pick


_MANAGERS: dict[tuple[object, ...], V2Manager] = {}


def v2_manager(
    sizes: tuple[int, ...],
    max_size: int,
    mode: Mode,
    decode_query_len: int,
    decode_query_lens: list[int],
    max_num_seqs: int,
    candidates: V2Candidates,
    loras: tuple[int, ...] = NO_LORA,
    ubatch: Microbatching | None = None,
    pad_piecewise_reqs: bool = False,
) -> V2Manager:
    """`V2Manager(...)`, shared by every plan that asks for the same one (a manager never changes
    once built): a plan's target and EAGLE drafter-prefill managers are often the same, and so
    are the managers of a sweep's configs.

    max_num_seqs enters the key only up to the largest capture size: it bounds decode graphs by
    request count (tokens // query_len <= max_num_seqs, with tokens <= max_size) and sets a FULL
    mixed graph's requests (min(size, max_num_seqs)), and both are the same for every
    max_num_seqs >= max(max_size, sizes)."""
    widest = max(max_size, *sizes) if sizes else max_size
    s = min(max_num_seqs, widest)
    key = (
        sizes,
        max_size,
        mode,
        decode_query_len,
        tuple(decode_query_lens),
        s,
        candidates,
        loras,
        ubatch,
        pad_piecewise_reqs,
    )
    got = _MANAGERS.get(key)
    if got is None:
        if len(_MANAGERS) >= 256:
            _MANAGERS.clear()
        got = _MANAGERS[key] = V2Manager(
            sizes,
            max_size,
            mode,
            decode_query_len,
            decode_query_lens,
            s,
            candidates,
            loras,
            ubatch,
            pad_piecewise_reqs,
        )
    return got


def v2_graph_floor(
    sizes: tuple[int, ...],
    max_size: int,
    mode: Mode,
    decode_query_len: int,
    decode_query_lens: list[int],
    max_num_seqs: int,
    loras: tuple[int, ...] = NO_LORA,
) -> int:
    """How many descriptors `v2_manager(...)` (the same arguments) makes before microbatched
    twins, counted without making them: a lower bound of its `graphs()` (twins only add), exact
    without DBO. The fix search holds a candidate's target against the graph budget with it."""
    if mode is Mode.NONE or not sizes:
        return 0
    widest = max(max_size, *sizes)
    s = min(max_num_seqs, widest)  # as v2_manager clips it
    decode_mode, mixed_mode = mode.decode_mode(), mode.mixed_mode()
    count = len(sizes) * len(loras) if mixed_mode is not Mode.NONE else 0  # one per size and case
    if mode.separate_routine() and decode_mode is not Mode.NONE:
        limit = min(s * decode_query_len, max_size)
        for ql in set(decode_query_lens):  # one descriptor per (tokens, query length, case)
            made = {((size + ql - 1) // ql) * ql for size in sizes}
            count += len(loras) * sum(1 for t in made if t <= limit and t // ql <= s)
    return count
