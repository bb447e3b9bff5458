"""Planner results: frozen, unit-suffixed, JSON-ready."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cgplan.errors import ConfigRejected

if TYPE_CHECKING:
    from cgplan.core.cost import CostPrediction
    from cgplan.core.latency import LatencyPrediction


class Rejected(ConfigRejected):
    """The chosen vLLM release refuses the config; `problem` carries vLLM's reason."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(path, problem)


@dataclass(frozen=True)
class Note:
    """Something vLLM would log while resolving the config (a warning or a decision)."""

    kind: str
    """Stable machine name, e.g. `truncated_max`, `mode_downgrade`, `runner_fallback`."""
    message: str
    """vLLM's words where vLLM logs it."""


@dataclass(frozen=True)
class Graph:
    """One CUDA graph vLLM captures (one batch descriptor)."""

    mode: str
    """"FULL" or "PIECEWISE"."""
    num_tokens: int
    """Padded token count the graph is captured at."""
    num_reqs: int | None
    """Request count the graph is specialised for (None: any)."""
    query_len: int | None
    """Uniform tokens per request the graph requires (None: any)."""
    num_active_loras: int = 0
    """LoRA adapters the graph is captured for (0: none; max_loras + 1: any number)."""
    num_ubatches: int = 1
    """Microbatches the graph runs (2 under DBO)."""


@dataclass(frozen=True)
class DispatchRange:
    """Consecutive batches (by request count or token count) with the same outcome."""

    first: int
    """First request count (uniform decode) or token count (mixed) of the run."""
    last: int
    """Last one, inclusive."""
    mode: str
    """"FULL", "PIECEWISE" or "NONE" (eager)."""
    padded_tokens: int | None
    """Token count of the graph replayed (None when eager)."""
    padded_reqs: int | None = None
    """Request count of the graph replayed, where the graph fixes one."""


@dataclass(frozen=True)
class Gap:
    """A range of batches that runs eager (or a downgraded mode), and why."""

    family: str
    """"uniform_decode" or "mixed"."""
    query_len: int | None
    """Decode tier (tokens per request) for uniform decode; None for mixed."""
    first: int
    """First request count (decode) or token count (mixed)."""
    last: int
    """Last one, inclusive."""
    mode: str
    """What runs there: "NONE" (eager) or "PIECEWISE" where FULL was expected."""
    reason: str
    """Why, in words, naming the vLLM rule."""


@dataclass(frozen=True)
class Fix:
    """A flag change that closes gaps, verified by planning the changed config again."""

    flags: tuple[str, ...]
    """vLLM command-line flags, e.g. ("--max-cudagraph-capture-size 544",)."""
    config_change: tuple[tuple[str, object], ...]
    """The same change as (dotted config key, value) pairs."""
    closes: tuple[int, ...]
    """Indexes into the plan's `gaps` it closes."""
    remaining_gaps: int
    """Gaps left after the fix (0 = all closed)."""
    graphs_before: int
    """Graph descriptors captured before."""
    graphs_after: int
    """And after."""
    num_capture_sizes_after: int
    """Capture sizes after the fix."""
    padding_before_tokens: int
    """Padded tokens summed over every uniform-decode batch of every tier, before."""
    padding_after_tokens: int
    """The same after the fix."""
    summary: str
    """One line for humans."""


@dataclass(frozen=True)
class Plan:
    """Everything `cgplan plan` computes for one config under one vLLM release."""

    vllm_version: str
    platform: str
    model_runner: str
    """"v1" or "v2"."""
    requested_cudagraph_mode: str
    """Mode after config-time defaults and overrides, before the attention downgrade."""
    cudagraph_mode: str
    """Mode after every downgrade."""
    attention_backend: str
    attention_cudagraph_support: str
    capture_sizes: tuple[int, ...]
    """Final capture sizes (after V1 rounding)."""
    max_capture_size: int
    uniform_decode_query_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    dynamic_sd_lookup: tuple[tuple[int, int, int], ...] | None
    """Dense lookup, equal-K runs merged: (first_batch, last_batch, K)."""
    graphs: dict[str, tuple[Graph, ...]]
    """family → graphs in capture order (PIECEWISE then FULL, largest first)."""
    uniform_decode: dict[int, tuple[DispatchRange, ...]]
    """query_len → dispatch of uniform decode batches by request count."""
    mixed: tuple[DispatchRange, ...]
    """Dispatch of non-uniform batches by token count."""
    notes: tuple[Note, ...]
    gaps: tuple[Gap, ...] = ()
    fixes: tuple[Fix, ...] = ()
    piecewise_pieces_per_graph: int = 1
    """CUDA graphs per PIECEWISE descriptor (compiled pieces: layers + 1 for a dense model)."""
    cost: CostPrediction | None = None
    """Predicted memory and capture time (None: no cost coefficients were given)."""
    latency: LatencyPrediction | None = None
    """Predicted step times, gap costs and fix gains (None: no latency coefficients were given)."""
    uniform_decode_lora: dict[int, tuple[DispatchRange, ...]] = field(default_factory=dict)
    """With LoRA: query_len → dispatch of uniform decode batches carrying one active adapter."""
