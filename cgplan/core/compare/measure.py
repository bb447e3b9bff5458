"""Capture measurements and their comparison with a plan (pure: data in, data out)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from cgplan.core.model.types import DispatchRange, Graph, GraphMode, Plan


@dataclass(frozen=True)
class GraphMeasurement:
    """One captured graph descriptor and what it cost."""

    order: int
    """Position in capture order (0 = first captured)."""
    family: str
    """target | drafter | drafter_prefill | drafter_decode | unknown."""
    mode: str
    """FULL or PIECEWISE."""
    num_tokens: int
    """Token count the descriptor was captured at."""
    num_reqs: int | None
    """Request count it is specialised for (None: any)."""
    query_len: int | None
    """Uniform tokens per request it requires (None: any)."""
    pieces: int
    """torch.cuda.graph captures made for it (a PIECEWISE descriptor is one per compiled piece)."""
    capture_time_ms: float
    """Wall time inside its graph-capture sections (synchronised)."""
    window_time_ms: float
    """Wall time of the whole descriptor: input preparation, warmup runs and capture."""
    nvml_delta_bytes: int | None
    """NVML used-memory growth over its capture sections, summed over the GPUs used (None: no NVML)."""
    torch_reserved_delta_bytes: int
    """Growth of PyTorch's reserved bytes over its capture sections (the graph pool's segments)."""
    num_active_loras: int = 0
    """LoRA adapters it was captured for (vLLM's descriptor field; 0: none or no LoRA)."""


@dataclass(frozen=True)
class VllmFigures:
    """What vLLM itself reported while starting."""

    capture_finished_secs: float | None = None
    """From "Graph capturing finished in X secs"."""
    capture_took_gib: float | None = None
    """From "..., took Y GiB" (free-memory delta around capture)."""
    capture_returned_bytes: int | None = None
    """`capture_model()`'s return value, in bytes."""
    estimated_cudagraph_gib: float | None = None
    """From "Estimated CUDA graph memory: X GiB total", when printed."""
    actual_vs_estimated: str | None = None
    """The "CUDA graph pool memory: ... (actual), ... (estimated)" line, when printed."""
    kv_cache_tokens: int | None = None
    """From "GPU KV cache size: N tokens"."""
    available_kv_cache_gib: float | None = None
    """From "Available KV cache memory: X GiB"."""


@dataclass(frozen=True)
class RankMeasurement:
    """What one tensor-parallel rank measured on its own GPU (captures through vLLM's workers)."""

    rank: int
    """The worker's global rank (0 is the one whose graphs are compared with the plan)."""
    local_rank: int
    """The worker's CUDA device, as the CUDA runtime numbers the visible GPUs."""
    device_name: str | None
    """NVML's product name of that GPU (None: no NVML in the worker)."""
    nvml_index: int | None
    """NVML's index of that GPU (NVML numbers every GPU of the host, CUDA_VISIBLE_DEVICES aside)."""
    graphs: tuple[GraphMeasurement, ...] = ()
    """Per descriptor, in capture order, NVML on this rank's GPU only."""
    capture_wall_s: float | None = None
    """Wall time of this rank's capture phase."""
    capture_nvml_delta_bytes: int | None = None
    """NVML used-memory growth of this rank's GPU over its capture phase."""

    @property
    def graph_nvml_total_bytes(self) -> int:
        """NVML growth summed over this rank's capture sections (its graph pool and graphs)."""
        return sum(g.nvml_delta_bytes or 0 for g in self.graphs)


@dataclass(frozen=True)
class MeasuredCapture:
    """Everything a capture backend measured (possibly partial)."""

    backend: str
    """vllm or torch."""
    status: str
    """complete, partial (failed or interrupted half-way) or failed (nothing captured)."""
    failure: str | None = None
    """What stopped it, in words."""
    model_runner: str | None = None
    """v1 or v2, as the engine ran (vllm backend)."""
    cudagraph_mode: str | None = None
    """The engine's resolved mode."""
    capture_sizes: tuple[int, ...] = ()
    """The engine's final capture sizes."""
    max_capture_size: int | None = None
    """The engine's final maximum."""
    graphs: tuple[GraphMeasurement, ...] = ()
    """Per descriptor, in capture order."""
    uniform_decode: dict[int, tuple[DispatchRange, ...]] = field(default_factory=dict)
    """Dispatch probe of uniform decode batches, by query length."""
    mixed: tuple[DispatchRange, ...] = ()
    """Dispatch probe of mixed batches by token count."""
    uniform_decode_lora: dict[int, tuple[DispatchRange, ...]] = field(default_factory=dict)
    """With LoRA: dispatch probe of uniform decode batches carrying one active adapter, by query
    length (what the plan's `uniform_decode_lora` predicts; the probe without adapters is
    `uniform_decode`)."""
    capture_wall_s: float | None = None
    """Wall time of the whole capture phase."""
    capture_nvml_delta_bytes: int | None = None
    """NVML used-memory growth over the whole capture phase, all GPUs used."""
    instrumentation_s: float | None = None
    """Host time spent inside cgplan's per-graph hooks (their own cost, within capture_wall_s)."""
    instrumentation_nvml_s: float | None = None
    """The part of instrumentation_s spent in NVML queries."""
    vllm: VllmFigures = field(default_factory=VllmFigures)
    """vLLM's own figures."""
    ranks: tuple[RankMeasurement, ...] = ()
    """Per rank, when the engine ran tensor parallel through worker processes (empty otherwise).
    Then `graphs` are rank 0's, `capture_wall_s` is the slowest rank's and
    `capture_nvml_delta_bytes` the ranks' sum."""


@dataclass(frozen=True)
class FamilyModeSummary:
    """Measured cost of one (family, mode)."""

    family: str
    mode: str
    graphs: int
    pieces: int
    nvml_bytes: int | None
    capture_time_ms: float
    largest_nvml_bytes: int | None
    smallest_nvml_bytes: int | None


def summarize(graphs: tuple[GraphMeasurement, ...]) -> list[FamilyModeSummary]:
    """Per (family, mode): counts, memory and time, in first-capture order."""
    order: list[tuple[str, str]] = []
    groups: dict[tuple[str, str], list[GraphMeasurement]] = {}
    for g in graphs:
        key = (g.family, g.mode)
        if key not in groups:
            order.append(key)
            groups[key] = []
        groups[key].append(g)
    out = []
    for key in order:
        gs = groups[key]
        mems = [g.nvml_delta_bytes for g in gs if g.nvml_delta_bytes is not None]
        out.append(
            FamilyModeSummary(
                family=key[0],
                mode=key[1],
                graphs=len(gs),
                pieces=sum(g.pieces for g in gs),
                nvml_bytes=sum(mems) if mems else None,
                capture_time_ms=round(sum(g.capture_time_ms for g in gs), 3),
                largest_nvml_bytes=max(mems) if mems else None,
                smallest_nvml_bytes=min(mems) if mems else None,
            )
        )
    return out


@dataclass(frozen=True)
class GraphDiff:
    """Predicted vs captured descriptors of one family."""

    family: str
    matched: int
    missing: tuple[Graph, ...]
    """Predicted, not captured."""
    unexpected: tuple[Graph, ...]
    """Captured, not predicted."""


@dataclass(frozen=True)
class DispatchDiff:
    """A run of batches whose measured dispatch differs from the plan."""

    family: str
    """uniform_decode, uniform_decode_lora1 (one active LoRA adapter) or mixed."""
    query_len: int | None
    first: int
    last: int
    predicted: str
    """mode@padded_tokens predicted."""
    measured: str
    """mode@padded_tokens measured."""


@dataclass(frozen=True)
class Comparison:
    """Plan against measurement."""

    graphs: tuple[GraphDiff, ...]
    dispatch: tuple[DispatchDiff, ...]
    dispatch_checked: int
    """Batches whose dispatch was compared."""
    eager_measured: tuple[tuple[int, int, int], ...]
    """(query_len, first, last) uniform-decode runs measured eager."""

    @property
    def matches(self) -> bool:
        """Every predicted graph captured, nothing extra, every dispatch as predicted."""
        return not self.dispatch and all(not d.missing and not d.unexpected for d in self.graphs)


def _outcomes(ranges: tuple[DispatchRange, ...]) -> dict[int, str]:
    return {
        n: f"{r.mode}@{r.padded_tokens}" if r.mode != "NONE" else "NONE"
        for r in ranges
        for n in range(r.first, r.last + 1)
    }


def _diff_runs(family: str, ql: int | None, pred: dict[int, str], meas: dict[int, str]) -> list[DispatchDiff]:
    out: list[DispatchDiff] = []
    for n in sorted(set(pred) & set(meas)):
        p, m = pred[n], meas[n]
        if p == m:
            continue
        last = out[-1] if out else None
        if (
            last
            and last.last == n - 1
            and last.predicted == p
            and last.measured == m
            and last.query_len == ql
        ):
            out[-1] = DispatchDiff(family, ql, last.first, n, p, m)
        else:
            out.append(DispatchDiff(family, ql, n, n, p, m))
    return out


def compare(plan: Plan, measured: MeasuredCapture) -> Comparison:
    """Match every predicted graph and dispatch decision against what was measured."""
    diffs = []
    families = list(plan.graphs) + [f for f in {g.family for g in measured.graphs} if f not in plan.graphs]
    for family in families:
        predicted = list(plan.graphs.get(family, ()))
        captured = [
            # what the GPU reported, not narrowed: a mode other than FULL/PIECEWISE (a new vLLM)
            # shows as an unexpected graph below rather than failing the comparison
            Graph(cast(GraphMode, g.mode), g.num_tokens, g.num_reqs, g.query_len, g.num_active_loras)
            for g in measured.graphs
            if g.family == family
        ]
        remaining = list(captured)
        missing = []
        for g in predicted:
            if g in remaining:
                remaining.remove(g)
            else:
                missing.append(g)
        diffs.append(GraphDiff(family, len(predicted) - len(missing), tuple(missing), tuple(remaining)))
    dispatch: list[DispatchDiff] = []
    checked = 0
    for ql, ranges in measured.uniform_decode.items():
        pred = _outcomes(plan.uniform_decode.get(ql, ()))
        meas = _outcomes(ranges)
        checked += len(set(pred) & set(meas))
        dispatch += _diff_runs("uniform_decode", ql, pred, meas)
    # With LoRA the engine was also probed with one active adapter (its own dispatch key).
    for ql, ranges in measured.uniform_decode_lora.items():
        pred = _outcomes(plan.uniform_decode_lora.get(ql, ()))
        meas = _outcomes(ranges)
        checked += len(set(pred) & set(meas))
        dispatch += _diff_runs("uniform_decode_lora1", ql, pred, meas)
    pred_m, meas_m = _outcomes(plan.mixed), _outcomes(measured.mixed)
    checked += len(set(pred_m) & set(meas_m))
    dispatch += _diff_runs("mixed", None, pred_m, meas_m)
    eager = tuple(
        (ql, r.first, r.last)
        for ql, ranges in sorted(measured.uniform_decode.items())
        for r in ranges
        if r.mode == "NONE"
    )
    return Comparison(tuple(diffs), tuple(dispatch), checked, eager)
