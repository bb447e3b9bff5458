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
from dataclasses import dataclass

from cgplan.core.modes import Mode
from cgplan.core.rules import V2Candidates
from cgplan.core.types import Graph


def round_up(x: int, y: int) -> int:
    """vllm.utils.math_utils.round_up, with Python's floor division as vLLM has it.

    >>> round_up(10, 4)
    12
    """
    return ((x + y - 1) // y) * y


@dataclass(frozen=True)
class Outcome:
    """What a dispatcher picks for one batch."""

    mode: Mode
    """FULL, PIECEWISE or NONE (eager)."""
    padded_tokens: int | None
    """Token count of the graph replayed."""
    padded_reqs: int | None
    """Request count of the graph replayed, where it fixes one."""


EAGER = Outcome(Mode.NONE, None, None)


class V1Dispatcher:
    """vLLM's V1 `CudagraphDispatcher`, keys and dispatch only."""

    def __init__(
        self, sizes: tuple[int, ...], max_size: int, mode: Mode, query_len: int, max_num_seqs: int
    ) -> None:
        self.sizes = sizes
        self.max_size = max_size
        self.mode = mode
        self.q = query_len
        self.s = max_num_seqs
        self.keys: dict[Mode, set[tuple[int, int | None, bool]]] = {
            Mode.PIECEWISE: set(),
            Mode.FULL: set(),
        }
        if mode is Mode.NONE:
            return
        mixed = mode.mixed_mode()
        if mixed is not Mode.NONE:
            for size in sizes:
                key = self._descriptor(size, uniform=False)
                if mixed is Mode.PIECEWISE:
                    key = (key[0], None, False)
                self.keys[mixed].add(key)
        if mode.decode_mode() is Mode.FULL and mode.separate_routine():
            widest = query_len * max_num_seqs
            for size in sizes:
                if query_len <= size <= widest:
                    self.keys[Mode.FULL].add(self._descriptor(size, uniform=True))

    def _padded(self, num_tokens: int) -> int:
        i = bisect.bisect_left(self.sizes, num_tokens)
        return self.sizes[i] if i < len(self.sizes) else self.max_size + 1

    def _descriptor(self, num_tokens: int, uniform: bool) -> tuple[int, int | None, bool]:
        padded = self._padded(num_tokens)
        if uniform and self.mode.has_full():
            return (padded, min(padded // self.q, self.s), True)
        return (padded, min(padded, self.s), False)

    def boundaries(self) -> list[int]:
        """Token counts where a dispatch outcome can change: the capture sizes."""
        return [*self.sizes, self.max_size]

    def graphs(self) -> tuple[Graph, ...]:
        """Capture descriptors in capture order: PIECEWISE then FULL, largest first."""
        out: list[Graph] = []
        for mode in (Mode.PIECEWISE, Mode.FULL):
            for tokens, reqs, uniform in sorted(self.keys[mode], key=lambda k: -k[0]):
                out.append(Graph(mode.value, tokens, reqs, self.q if uniform else None))
        return tuple(out)

    def dispatch(self, num_tokens: int, uniform_decode: bool) -> Outcome:
        """`CudagraphDispatcher.dispatch` with no LoRA and every mode allowed."""
        if self.mode is Mode.NONE or num_tokens > self.max_size:
            return EAGER
        desc = self._descriptor(num_tokens, uniform_decode and self.mode.separate_routine())
        if desc in self.keys[Mode.FULL]:
            return Outcome(Mode.FULL, desc[0], desc[1])
        if (desc[0], None, False) in self.keys[Mode.PIECEWISE]:
            return Outcome(Mode.PIECEWISE, desc[0], None)
        return EAGER


@dataclass(frozen=True)
class _Desc:
    """V2 `BatchExecutionDescriptor` (no LoRA, one microbatch, no varlen decode)."""

    mode: Mode
    num_tokens: int
    num_reqs: int | None
    query_len: int | None

    @property
    def outcome(self) -> Outcome:
        return Outcome(self.mode, self.num_tokens, self.num_reqs)


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
    ) -> None:
        self.mode = mode
        self.s = max_num_seqs
        self.by_mode: dict[Mode, list[_Desc]] = {}
        self._outcomes: dict[_Desc, Outcome] = {}
        self._groups: list[tuple[list[int], list[list[_Desc]]]] = []
        if mode is Mode.NONE or not sizes:
            return
        max_decode_tokens = max_num_seqs * decode_query_len
        decode_mode, mixed_mode = mode.decode_mode(), mode.mixed_mode()
        by_mode: dict[Mode, list[_Desc]] = {}
        by_token: dict[int, list[_Desc]] = {}
        seen: set[_Desc] = set()
        with_decode = mode.separate_routine() and decode_mode is not Mode.NONE
        for size in sorted(sizes):
            if with_decode:
                for ql in decode_query_lens:
                    tokens = round_up(size, ql)
                    reqs = tokens // ql
                    if tokens > max_decode_tokens or tokens > max_size or reqs > max_num_seqs:
                        continue
                    desc = _Desc(decode_mode, tokens, reqs, ql)
                    if desc not in seen:
                        seen.add(desc)
                        by_mode.setdefault(decode_mode, []).append(desc)
                        by_token.setdefault(tokens, []).append(desc)
            if mixed_mode is not Mode.NONE:
                reqs_or_none = min(size, max_num_seqs) if mixed_mode is Mode.FULL else None
                desc = _Desc(mixed_mode, size, reqs_or_none, None)
                by_mode.setdefault(mixed_mode, []).append(desc)
                by_token.setdefault(size, []).append(desc)
        for descs in by_mode.values():
            descs.sort(key=lambda d: d.num_tokens, reverse=True)
        self.by_mode = by_mode
        self._outcomes = {
            d: Outcome(d.mode, d.num_tokens, d.num_reqs) for descs in by_mode.values() for d in descs
        }
        if candidates is V2Candidates.SMALLEST_ANY_MODE:
            counts = sorted(by_token)
            self._groups = [(counts, [by_token[c] for c in counts])]
        else:
            for m in (Mode.FULL, Mode.PIECEWISE):
                ascending = list(reversed(by_mode.get(m, [])))
                counts_m: list[int] = []
                groups_m: list[list[_Desc]] = []
                for d in ascending:
                    if counts_m and counts_m[-1] == d.num_tokens:
                        groups_m[-1].append(d)
                    else:
                        counts_m.append(d.num_tokens)
                        groups_m.append([d])
                if counts_m:
                    self._groups.append((counts_m, groups_m))

    def boundaries(self) -> list[int]:
        """Token counts where a dispatch outcome can change: every descriptor's."""
        return [d.num_tokens for descs in self.by_mode.values() for d in descs]

    def graphs(self) -> tuple[Graph, ...]:
        """Capture descriptors in capture order: PIECEWISE then FULL, largest first."""
        return tuple(
            Graph(m.value, d.num_tokens, d.num_reqs, d.query_len)
            for m in (Mode.PIECEWISE, Mode.FULL)
            for d in self.by_mode.get(m, [])
        )

    def dispatch(self, num_reqs: int, num_tokens: int, uniform_query_len: int | None) -> Outcome:
        """`CudaGraphManager.dispatch` with no LoRA and one microbatch."""
        if num_tokens <= 0:
            return EAGER
        for counts, groups in self._groups:
            i = bisect.bisect_left(counts, num_tokens)
            if i == len(counts):
                continue
            for d in groups[i]:
                if (
                    (d.query_len is None or d.query_len == uniform_query_len)
                    and (d.num_reqs is None or d.num_reqs >= num_reqs)
                    and d.num_tokens >= num_tokens
                ):
                    return self._outcomes[d]
        return EAGER
