"""Planner results: frozen, unit-suffixed, JSON-ready."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from cgplan.core.errors import ConfigRejected

if TYPE_CHECKING:
    from cgplan.core.model.predictions import CostPrediction, LatencyPrediction


GraphMode = Literal["FULL", "PIECEWISE"]
"""The mode a CUDA graph is captured in (vLLM's CUDAGraphMode member names)."""
DispatchMode = Literal["FULL", "PIECEWISE", "NONE"]
"""What a batch runs: a FULL or a PIECEWISE graph, or eager ("NONE", as vLLM names it)."""
ModelRunner = Literal["v1", "v2"]
"""vLLM's two GPU model runners."""
GapFamily = Literal["uniform_decode", "mixed"]
"""The two kinds of batch a gap is found in."""


_GRAPH_MODES: dict[str, GraphMode] = {"FULL": "FULL", "PIECEWISE": "PIECEWISE"}
_DISPATCH_MODES: dict[str, DispatchMode] = {**_GRAPH_MODES, "NONE": "NONE"}
_RUNNERS: dict[str, ModelRunner] = {"v1": "v1", "v2": "v2"}


def as_graph_mode(name: str) -> GraphMode:
    """`name` as a GraphMode (ValueError for anything else: a mode vLLM does not capture in)."""
    try:
        return _GRAPH_MODES[name]
    except KeyError:
        raise ValueError(f"not a graph mode: {name!r} (expected FULL or PIECEWISE)") from None


def as_dispatch_mode(name: str) -> DispatchMode:
    """`name` as a DispatchMode (ValueError for anything else)."""
    try:
        return _DISPATCH_MODES[name]
    except KeyError:
        raise ValueError(f"not a dispatch mode: {name!r} (expected FULL, PIECEWISE or NONE)") from None


def as_model_runner(name: str) -> ModelRunner:
    """`name` as a ModelRunner (ValueError for anything else)."""
    try:
        return _RUNNERS[name]
    except KeyError:
        raise ValueError(f"not a model runner: {name!r} (expected v1 or v2)") from None


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
class Assumed:
    """A value the plan assumed because the config left it unset."""

    key: str
    """vLLM's field name."""
    value: str
    """The value assumed."""
    origin: str
    """Where it comes from (vLLM's rule and release, or cgplan's default)."""


@dataclass(frozen=True)
class Graph:
    """One CUDA graph vLLM captures (one batch descriptor)."""

    mode: GraphMode
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
    num_speculative_tokens: int | None = None
    """The draft steps a drafter-decode graph is specialised for (one graph per dynamic-SD K,
    0.32+); None: not specialised."""


@dataclass(frozen=True)
class DispatchRange:
    """Consecutive batches (by request count or token count) with the same outcome."""

    first: int
    """First request count (uniform decode) or token count (mixed) of the run."""
    last: int
    """Last one, inclusive."""
    mode: DispatchMode
    padded_tokens: int | None
    """Token count of the graph replayed (None when eager)."""
    padded_reqs: int | None = None
    """Request count of the graph replayed, where the graph fixes one."""


@dataclass(frozen=True)
class Gap:
    """A range of batches that runs eager (or a downgraded mode), and why."""

    family: GapFamily
    query_len: int | None
    """Decode tier (tokens per request) for uniform decode; None for mixed."""
    first: int
    """First request count (decode) or token count (mixed)."""
    last: int
    """Last one, inclusive."""
    mode: DispatchMode
    """What runs there: "NONE" (eager) or "PIECEWISE" where FULL was expected."""
    reason: str
    """Why, in words, naming the vLLM rule."""


@dataclass(frozen=True)
class StepPadding:
    """Per-step padding of the graph-replayed uniform-decode batches: (padded − real) / real
    tokens of one step, each request count of each tier counted once."""

    worst_pct: float
    """The worst step's padding, percent."""
    worst_reqs: int | None
    """Request count of that step (None: no batch replays a graph)."""
    worst_query_len: int | None
    """Its tier (tokens per request)."""
    mean_pct: float
    """Mean over the replayed request counts, percent."""
    replayed_batches: int
    """Request counts (over all tiers) that replay a graph."""


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
    argv: tuple[tuple[str, ...], ...] = ()
    """`flags` unquoted: each flag's command-line words."""
    changes: tuple[str, ...] = ()
    """What the fix changes, in words."""
    complete: bool = True
    """It closes every gap (False: partial, see `still_open`)."""
    still_open: str = ""
    """What a partial fix leaves open, in words."""
    pool_before_mib: float | None = None
    """Predicted capture-phase memory per rank before (None: no cost model)."""
    pool_after_mib: float | None = None
    """And after."""
    pool_after_band_mib: tuple[float, float] | None = None
    """The after figure's band (low, high), wider outside the validated domain."""
    pool_after_outside: tuple[str, ...] = ()
    """Each way the fixed config leaves the cost model's validated domain that the plan's own
    figure does not (a ladder past the fit's largest graph; empty: none): its memory figure then
    ranks no fix (issue 29). The band is `pool_after_band_mib`."""
    capture_before_s: float | None = None
    """Predicted capture time before."""
    capture_after_s: float | None = None
    """And after."""
    step_padding_before: StepPadding | None = None
    """Per-step padding before."""
    step_padding_after: StepPadding | None = None
    """And after."""
    over_budget: tuple[str, ...] = ()
    """Gate budgets the fix breaks (only offered with --allow-over-budget)."""
    config_lines: tuple[str, ...] = ()
    """The same change as lines of the YAML config planned (top-level keys spelled as the file
    spells them, each replacing the file's own); empty for a command line."""

    @property
    def command_line(self) -> str:
        """The flags as one line to paste after `vllm serve ...`."""
        return " ".join(self.flags)


@dataclass(frozen=True)
class Plan:
    """Everything `cgplan plan` computes for one config under one vLLM release."""

    vllm_version: str
    platform: str
    model_runner: ModelRunner
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
    piecewise_pieces: tuple[tuple[str, int], ...] = ()
    """family → CUDA graphs per PIECEWISE descriptor of that family (its compiled pieces)."""
    assumed: tuple[Assumed, ...] = ()
    """Defaults the plan assumed, with their origin."""
    kv_bytes_per_token: int | None = None
    """KV-cache bytes one token takes on each rank, over the target's and the drafter's layers
    (None: not known for this attention kind, e.g. MLA, or for this kv_cache_dtype)."""
    kv_withheld: str = ""
    """Why `kv_bytes_per_token` is None, in words ("" when it is given)."""
    compilation_mode: str = "VLLM_COMPILE"
    """vLLM's `CompilationMode` after its config-time overrides (NONE under TORCH_COMPILE_DISABLE,
    breakable CUDA graphs, -O0, ...)."""
    breakable_cudagraphs: bool = False
    """VLLM_USE_BREAKABLE_CUDAGRAPH is on: a PIECEWISE descriptor is one stream capture broken at
    every attention/KV-cache op, not torch.compile pieces."""
    graph_memory_reserved: bool = True
    """vLLM subtracts its estimate of the graph memory before sizing the KV cache (False: model
    runner V2 before 0.29, whose estimate is 0: capture adds on top of gpu_memory_utilization)."""
    cost_withheld: tuple[str, ...] = ()
    """Why no memory figure can be given for this plan whatever the coefficients (model kinds and
    capture kinds the cost model has no term for)."""
    latency_withheld: tuple[str, ...] = ()
    """Why no step time is given for this plan: the axes of the latency model's measured domain
    this config is outside of where no band would be honest (another GPU platform)."""
