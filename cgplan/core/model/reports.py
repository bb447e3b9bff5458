"""The report documents as types: a plan's JSON (`plan --json`, and the `plan` of a capture
report), a capture report and the aggregate of a multi-config capture (`fleet.json`).

Each type mirrors one JSON object of the contract, field for field (a field's JSON key is its
name unless its metadata names another), so a report read from a file is written back to the
same bytes (`cgplan/io/schema/reports.py` converts both ways; tests/io/test_report_roundtrip.py holds
every committed report to it). Reports of older cgplan releases lack some keys: a key the
document did not have reads as the field's default and its field name is kept in `absent`, so
it is written back absent too.

Pure: stdlib only. These are documents, not the core's working types: io/reports.py turns the
parts the comparisons need into `Side`s and measurements.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

NO_KEYS: frozenset[str] = frozenset()


# --------------------------------------------------------------------------- shared parts


@dataclass(frozen=True)
class ReqRange:
    """A run of uniform-decode batch sizes (request counts) and how they dispatch."""

    from_reqs: int
    to_reqs: int
    mode: str
    """FULL, PIECEWISE or NONE (eager)."""
    padded_tokens: int | None = None
    padded_reqs: int | None = None
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class TokenRange:
    """A run of mixed-batch token counts and how they dispatch."""

    from_tokens: int
    to_tokens: int
    mode: str
    padded_tokens: int | None = None
    padded_reqs: int | None = None
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class GraphShape:
    """A graph descriptor as a plan lists it (and as comparisons name one)."""

    mode: str
    """FULL or PIECEWISE."""
    num_tokens: int
    num_reqs: int | None = None
    query_len: int | None = None
    num_active_loras: int = 0
    num_ubatches: int = 1
    num_speculative_tokens: int | None = None
    """The dynamic-SD K a per-K drafter-decode graph was captured for (0.32+; absent otherwise)."""
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class EagerRun:
    """Uniform-decode batches that ran eager: `from_reqs`..`to_reqs` requests of `query_len`."""

    query_len: int
    from_reqs: int
    to_reqs: int
    absent: frozenset[str] = NO_KEYS


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class GraphCount:
    """Descriptors of one family by mode."""

    full: int = field(metadata={"key": "FULL"})
    piecewise: int = field(metadata={"key": "PIECEWISE"})
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class DynamicSd:
    """Dynamic speculative decoding: (first batch, last batch, K) rows."""

    lookup: tuple[tuple[int, int, int], ...]
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class CostDomain:
    """Where the cost model was fitted, and whether this plan is inside it."""

    fitted: str
    inside: bool
    outside: tuple[str, ...] = ()
    band_factor: float | None = None
    figure: bool = True
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class FamilyModeCost:
    """The predicted graph memory of one (family, mode)."""

    family: str
    mode: str
    graphs: int
    pool_mib: float | None
    """None where the prediction gives no figure (as its total)."""
    graph_state_mib: float | None
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class PredictedCost:
    """The cost model's prediction (`predicted_cost`)."""

    gpu: str
    total_mib: float | None
    """None outside the model's domain (no figure)."""
    low_mib: float | None
    high_mib: float | None
    warmup_mib: float | None
    """None with no figure, as `total_mib`."""
    capture_s: float | None
    by_family_mode: tuple[FamilyModeCost, ...] = ()
    caveats: tuple[str, ...] = ()
    domain: CostDomain | None = None
    capture_low_s: float | None = None
    capture_high_s: float | None = None
    """The capture time's band (None: no figure, or a set that records no band)."""
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class LatencyGap:
    """What one gap costs per step (`predicted_latency.gaps`)."""

    gap: int
    widest_batch: int
    step_ms: float
    graph_step_ms: float
    cost_ms_per_step: float
    tokens_per_s: float
    graph_tokens_per_s: float
    expected_cost_ms_per_step: float
    share_of_expected_step: float | None = None
    worth_closing: bool | None = None
    verdict: str | None = None
    """Whether the gap is worth closing at this traffic, in words (issue 30)."""
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class LatencyFixNotOffered:
    """A fix the search found but predicted slower than leaving the gaps (issue 30)."""

    flags: tuple[str, ...]
    expected_step_ms_after: float
    gain_ms_per_step: float
    why: str
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class LatencyFix:
    """What one fix gains per step (`predicted_latency.fixes`)."""

    fix: int
    expected_step_ms_after: float
    gain_ms_per_step: float
    widest_gap_gain_ms: float
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class PredictedLatency:
    """The latency model's prediction (`predicted_latency`)."""

    gpu: str
    traffic: str
    expected_step_ms: float
    expected_eager_share: float
    expected_tokens_per_s: float
    widest_step_ms: float
    widest_graph_step_ms: float
    widest_eager_step_ms: float
    eager_graph_ratio: float
    gaps: tuple[LatencyGap, ...] = ()
    fixes: tuple[LatencyFix, ...] = ()
    caveats: tuple[str, ...] = ()
    extrapolated: tuple[str, ...] = ()
    """The inputs outside the model's measured domain (issue 30)."""
    fix_order: str | None = None
    """How the fixes are ranked, and why (issue 30)."""
    fixes_not_offered: tuple[LatencyFixNotOffered, ...] = ()
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class StepPaddingDoc:
    """Per-step padding of graph-replayed uniform decode."""

    worst_pct: float
    worst_reqs: int | None
    worst_query_len: int | None
    mean_pct: float
    replayed_batches: int
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class AssumedValue:
    """A value the plan assumed because the config left it unset."""

    key: str
    value: str
    origin: str
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class PlanNote:
    """Something vLLM would log while resolving the config."""

    kind: str
    message: str
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class KvCache:
    """KV-cache figures of the plan."""

    bytes_per_token: int | None = None
    graph_memory_reserved: bool = True
    """False: V2 before 0.29 sizes the KV cache without the graphs (capture adds on top)."""
    graph_memory_tokens: int | None = None
    withheld: str = ""
    """Why bytes_per_token is null, in words (absent when it is given)."""
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class PlanGap:
    """Uniform-decode batches that do not replay a decode graph."""

    family: str
    query_len: int | None
    from_reqs: int
    to_reqs: int
    from_tokens: int
    to_tokens: int
    mode: str
    reason: str
    outcome: str | None = None
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class PlanFix:
    """A config change that closes gaps, and what it costs."""

    flags: tuple[str, ...]
    summary: str
    config_change: Mapping[str, object] = field(default_factory=dict)
    """Dotted vLLM keys to their new JSON values (lists read as tuples)."""
    closes_gaps: tuple[int, ...] = ()
    remaining_gaps: int | None = None
    graphs_before: int | None = None
    graphs_after: int | None = None
    num_capture_sizes_after: int | None = None
    decode_padding_before_tokens: int | None = None
    decode_padding_after_tokens: int | None = None
    command_line: str | None = None
    argv: tuple[tuple[str, ...], ...] = ()
    changes: tuple[str, ...] = ()
    complete: bool = True
    still_open: str = ""
    predicted_mib_before: float | None = None
    predicted_mib_after: float | None = None
    delta_predicted_mib: float | None = None
    predicted_mib_after_band: tuple[float, float] | None = None
    """The after figure's band (issue 29)."""
    predicted_mib_after_outside_domain: tuple[str, ...] = ()
    """Where the fixed config leaves the validated domain beyond the plan's own (issue 29)."""
    capture_s_before: float | None = None
    capture_s_after: float | None = None
    delta_capture_s: float | None = None
    delta_graphs: int | None = None
    step_padding_after: StepPaddingDoc | None = None
    over_budget: tuple[str, ...] = ()
    yaml: tuple[str, ...] = ()
    """The change as nested YAML lines (issue 30)."""
    config_lines: tuple[str, ...] = ()
    """The same change as lines of the YAML planned (issue 28); absent for a command line."""
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class PlanDocument:
    """A plan as JSON: `cgplan plan --json`, and the `plan` of a capture report."""

    schema_version: int
    vllm_version: str
    uniform_decode_query_len: int
    max_num_seqs: int
    graphs: Mapping[str, tuple[GraphShape, ...]]
    """Per family, in the plan's order."""
    uniform_decode: Mapping[int, tuple[ReqRange, ...]]
    """Per query length."""
    kind: str = "plan"
    cgplan_version: str | None = None
    source: str | None = None
    config_fingerprint: str | None = None
    platform: str = ""
    model_runner: str | None = None
    attention_backend: str = ""
    attention_cudagraph_support: str = ""
    requested_cudagraph_mode: str = ""
    cudagraph_mode: str = ""
    capture_sizes: tuple[int, ...] = ()
    max_capture_size: int | None = None
    max_num_batched_tokens: int | None = None
    dynamic_sd: DynamicSd | None = None
    graph_counts: Mapping[str, GraphCount] = field(default_factory=dict)
    total_graphs: int | None = None
    piecewise_pieces_per_graph: int | None = None
    predicted_cost: PredictedCost | None = None
    predicted_pool_bytes: int | None = None
    predicted_latency: PredictedLatency | None = None
    latency_withheld: tuple[str, ...] = ()
    """Why predicted_latency is null: the axes outside the latency model's measured domain
    (absent when a step time is given or no latency model was used)."""
    mixed: tuple[TokenRange, ...] = ()
    uniform_decode_lora1: Mapping[int, tuple[ReqRange, ...]] = field(default_factory=dict)
    """With LoRA: uniform decode with one active adapter, per query length."""
    decode_padding_tokens: int | None = None
    step_padding: StepPaddingDoc | None = None
    assumed: tuple[AssumedValue, ...] = ()
    piecewise_pieces: Mapping[str, int] = field(default_factory=dict)
    compilation_mode: str = "VLLM_COMPILE"
    breakable_cudagraphs: bool = False
    kv_cache: KvCache | None = None
    gaps: tuple[PlanGap, ...] = ()
    fixes: tuple[PlanFix, ...] = ()
    notes: tuple[PlanNote, ...] = ()
    ignored_keys: tuple[str, ...] = ()
    unmodelled: tuple[str, ...] = ()
    """Flags planned without (cgplan does not model them; issue 28); absent when none."""
    absent: frozenset[str] = NO_KEYS


# --------------------------------------------------------------------------- a capture


@dataclass(frozen=True)
class GpuInfo:
    """One GPU the capture ran on."""

    name: str
    index: int | None = None
    capability: tuple[int, ...] = ()
    total_memory_bytes: int | None = None
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class CaptureEnvironment:
    """What the capture ran with (None where unknown)."""

    cgplan: str | None = None
    python: str | None = None
    platform: str | None = None
    torch: str | None = None
    vllm: str | None = None
    nvidia_ml_py: str | None = None
    cuda: str | None = None
    gpus: tuple[GpuInfo, ...] = ()
    driver: str | None = None
    cuda_visible_devices: str | None = None
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class MeasuredGraph:
    """One captured descriptor and what it cost."""

    mode: str
    """FULL or PIECEWISE."""
    num_tokens: int
    torch_reserved_delta_bytes: int
    order: int
    """Position in capture order."""
    family: str
    pieces: int
    capture_time_ms: float
    window_time_ms: float
    num_reqs: int | None = None
    query_len: int | None = None
    nvml_delta_bytes: int | None = None
    num_active_loras: int = 0
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class VllmFiguresDoc:
    """What vLLM itself logged while starting (`measured.vllm`)."""

    capture_finished_secs: float | None = None
    capture_took_gib: float | None = None
    capture_returned_bytes: int | None = None
    estimated_cudagraph_gib: float | None = None
    actual_vs_estimated: str | None = None
    kv_cache_tokens: int | None = None
    available_kv_cache_gib: float | None = None
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class MeasuredRank:
    """One tensor-parallel rank's own measurement."""

    rank: int
    local_rank: int
    device_name: str | None = None
    nvml_index: int | None = None
    graphs: tuple[MeasuredGraph, ...] = ()
    capture_wall_s: float | None = None
    capture_nvml_delta_bytes: int | None = None
    graph_nvml_total_bytes: int | None = None
    graph_torch_reserved_total_bytes: int | None = None
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class MeasuredDocument:
    """What the capture measured (`measured`)."""

    backend: str = ""
    model_runner: str | None = None
    cudagraph_mode: str | None = None
    capture_sizes: tuple[int, ...] = ()
    max_capture_size: int | None = None
    graphs: tuple[MeasuredGraph, ...] = ()
    uniform_decode: Mapping[int, tuple[ReqRange, ...]] = field(default_factory=dict)
    mixed: tuple[TokenRange, ...] = ()
    uniform_decode_lora1: Mapping[int, tuple[ReqRange, ...]] = field(default_factory=dict)
    capture_wall_s: float | None = None
    capture_nvml_delta_bytes: int | None = None
    instrumentation_s: float | None = None
    instrumentation_nvml_s: float | None = None
    graph_nvml_total_bytes: int | None = None
    graph_torch_reserved_total_bytes: int | None = None
    vllm: VllmFiguresDoc = field(default_factory=VllmFiguresDoc)
    ranks: tuple[MeasuredRank, ...] = ()
    """Per rank, when the engine ran tensor parallel through workers (else empty and absent)."""
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class FamilyModeMeasured:
    """Measured cost of one (family, mode) (`summary`)."""

    family: str
    mode: str
    graphs: int
    pieces: int
    capture_time_ms: float
    nvml_bytes: int | None = None
    largest_nvml_bytes: int | None = None
    smallest_nvml_bytes: int | None = None
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class GraphsCompared:
    """Planned against captured descriptors of one family."""

    family: str
    matched: int
    missing: tuple[GraphShape, ...] = ()
    """Planned, not captured."""
    unexpected: tuple[GraphShape, ...] = ()
    """Captured, not planned."""
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class DispatchMismatch:
    """A run of batches whose measured dispatch differs from the plan."""

    family: str
    query_len: int | None
    first: int
    last: int
    predicted: str
    measured: str
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class CaptureComparison:
    """The plan against the GPU (`comparison`)."""

    matches: bool
    dispatch_checked: int
    graphs: tuple[GraphsCompared, ...] = ()
    dispatch_mismatches: tuple[DispatchMismatch, ...] = ()
    eager_uniform_decode_measured: tuple[EagerRun, ...] = ()
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class CaptureReport:
    """The report `cgplan capture` writes: the plan, what was measured, and the two compared."""

    schema_version: int
    plan: PlanDocument
    measured: MeasuredDocument
    status: str
    """complete, partial or failed."""
    kind: str = "capture"
    failure: str | None = None
    source: str | None = None
    config_fingerprint: str | None = None
    created_utc: str | None = None
    environment: CaptureEnvironment = field(default_factory=CaptureEnvironment)
    summary: tuple[FamilyModeMeasured, ...] = ()
    comparison: CaptureComparison | None = None
    """None when nothing was captured."""
    vllm_log: tuple[str, ...] = ()
    absent: frozenset[str] = NO_KEYS


# --------------------------------------------------------------------------- a fleet


@dataclass(frozen=True)
class FleetRow:
    """How one config of a multi-config capture ended, with its report's headline figures."""

    name: str
    status: str
    """complete | partial | failed | not run"""
    config: str = ""
    tensor_parallel_size: int = 1
    wall_s: float = 0.0
    config_fingerprint: str | None = None
    report: str | None = None
    """The report's path, relative to the aggregate's folder (None: no report of this run)."""
    log: str | None = None
    resumed: bool = False
    failure_class: str | None = None
    failure: str | None = None
    exit_code: int | None = None
    gpus: tuple[str, ...] = ()
    host: str | None = None
    attempts: int = 1
    plan_matches: bool | None = None
    graphs_planned: int | None = None
    graphs_measured: int | None = None
    dispatch_checked: int | None = None
    dispatch_mismatches: int | None = None
    eager_fallbacks_measured: tuple[EagerRun, ...] | None = None
    predicted_memory_mib: float | None = None
    predicted_memory_domain: str | None = None
    measured_memory_mib: float | None = None
    predicted_capture_s: float | None = None
    measured_capture_s: float | None = None
    vllm_took_gib: float | None = None
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class FleetTotals:
    """Counts over the configs."""

    configs: int = 0
    by_status: Mapping[str, int] = field(default_factory=dict)
    resumed: int = 0
    plans_matched: int = 0
    plans_differed: int = 0
    failed: int = 0
    absent: frozenset[str] = NO_KEYS


@dataclass(frozen=True)
class FleetReport:
    """The aggregate of a multi-config capture (`fleet.json`)."""

    schema_version: int
    configs: tuple[FleetRow, ...]
    runner: str = ""
    """local | ray"""
    totals: FleetTotals = field(default_factory=FleetTotals)
    kind: str = "fleet"
    cgplan_version: str | None = None
    created_utc: str | None = None
    gpus: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    interrupted: bool = False
    absent: frozenset[str] = NO_KEYS
