"""Predicted step latency: what a batch costs in milliseconds when it replays a FULL graph, a
PIECEWISE graph, or runs eager, and what a plan's gaps and fixes are worth in time (pure).

The model, fitted on an H200 from real vLLM 0.26.0 engines (docs/latency-model.md has the evidence):

- the GPU's time for one forward pass over T tokens is the weights read once (bytes / bandwidth),
  a fixed time per layer, a per-token cost proportional to the FLOPs per token (with a steeper
  slope once T passes the compute-bound knee) and to the layers' width, the logits rows, and a
  time per request (per-sequence work: GPU time, so a host-bound eager step hides it);
- the host's time to launch it depends on the mode: a FULL graph is one replay; a PIECEWISE graph
  launches one graph per compiled piece and the attention between them (per layer); eager
  launches every kernel (per layer, with a factor per architecture: more kernels per layer);
- host and GPU overlap: a forward takes max(host, GPU), plus a fitted share of the smaller one
  (what the overlap loses);
- a step is the target forward plus, with EAGLE, the drafter's prefill (same tokens, same mode) and
  its K-1 decode steps (FULL graphs of their own, per request count), plus a fixed step overhead.

Padding is priced by running the model at the padded token count; a gap by the difference between
its outcome and a FULL graph of the exact size. Coefficients are data (LatencyCoefficients),
shipped for the H200 and replaceable by a user's own fit (`fit_latency`).
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

from cgplan.core.model.modes import GPU_NAME_TO_PLATFORM
from cgplan.core.model.predictions import FixLatency, GapLatency, LatencyPrediction
from cgplan.core.model.spec import ModelShape, PlanInput

if TYPE_CHECKING:
    from cgplan.core.model.types import DispatchRange, Plan

MODES = ("FULL", "PIECEWISE", "NONE")
DRAFTER_METHODS = ("eagle", "eagle3")
"""Speculative methods whose drafter is a 1-layer head of the target's width (what was measured)."""
MIXED_LOGIT_ROWS = 3
"""Requests in a mixed batch whose logits are computed (the measured mixed batches had 3)."""


@dataclass(frozen=True)
class LatencyCoefficients:
    """The fitted constants of the step-latency model for one GPU kind (times in ms)."""

    gpu: str
    measured_with: str
    gpu_ms_per_layer: float
    """Fixed GPU time per decoder layer and forward (small kernels)."""
    gpu_ms_per_weight_gb: float
    """GPU time per GB of weights read once per forward (1 / effective bandwidth)."""
    gpu_ms_per_gflop: float
    """GPU time per GFLOP of per-token matmul work (below the knee)."""
    gpu_ms_per_token_width: float
    """GPU time per token × layer × 1000 of hidden width (elementwise and attention work)."""
    gpu_ms_per_gflop_compute_bound: float
    """Extra GPU time per GFLOP for the tokens past `compute_bound_from_tokens`."""
    compute_bound_from_tokens: float
    host_ms_full: float
    """Host time of one FULL graph replay (one launch)."""
    host_ms_piecewise: float
    host_ms_piecewise_per_layer: float
    host_ms_eager: float
    host_ms_eager_per_layer: float
    """Per-layer launch time of the reference architecture (LlamaForCausalLM)."""
    eager_overlap_loss: float
    """Share of the smaller of host and GPU time that eager does not hide."""
    piecewise_overlap_loss: float
    step_ms: float
    """Fixed time of a step outside the forward passes (input preparation)."""
    draft_step_ms: float
    """Host time of each drafter decode step beyond its forward (metadata, sampling)."""
    eager_layer_factor: tuple[tuple[str, float], ...]
    """Per-architecture factor on the eager per-layer time (measured architectures)."""
    gpu_ms_per_request: float = 0.0
    """GPU time per request of the target forward (per-sequence work beside the per-token cost):
    like the rest of the forward's GPU time it overlaps the host's launches, so it adds to a FULL
    replay but hides behind a host-bound eager step (whose measured time does not grow with
    requests: docs/latency-model.md, "The model")."""
    hidden_size_range: tuple[int, int] = (512, 5120)
    layers_range: tuple[int, int] = (4, 64)
    max_tokens: int = 2048
    """Largest batch measured (tokens per forward)."""
    max_reqs: int = 256
    """Most requests in one measured step (the per-request time is fitted up to there)."""
    max_speculative_tokens: int = 16
    fitted_on: tuple[str, ...] = ()
    held_out: tuple[str, ...] = ()
    held_out_median_error: float = 0.0
    """Median |predicted / measured - 1| over the held-out runs and batch sizes."""
    held_out_within_10pct: float = 0.0
    """Share of held-out points predicted within 10%."""


@dataclass(frozen=True)
class ForwardShape:
    """What a forward pass's time depends on."""

    architecture: str
    layers: int
    hidden_size: int
    body_params: int
    """Matmul parameters of the decoder layers (attention and MLP)."""
    head_params: int
    """LM-head parameters (vocab × hidden)."""


def forward_shape(m: ModelShape) -> ForwardShape:
    """The target model's forward shape from its config.json figures."""
    h, nh, kv, hd = m.hidden_size, m.num_attention_heads, m.num_key_value_heads, m.head_dim
    per_layer = h * (nh + 2 * kv) * hd + nh * hd * h + 3 * h * m.intermediate_size
    return ForwardShape(
        m.architecture, m.num_hidden_layers, h, per_layer * m.num_hidden_layers, m.vocab_size * h
    )


@functools.lru_cache(maxsize=64)
def drafter_shape(target: ForwardShape) -> ForwardShape:
    """An EAGLE drafter: one decoder layer of the target's width, with the target's vocabulary
    (remembered: every step of a latency walk asks for it, and a frozen dataclass is slow to make)."""
    return ForwardShape(
        "drafter", 1, target.hidden_size, target.body_params // max(target.layers, 1), target.head_params
    )


def _arch_factor(c: LatencyCoefficients, arch: str) -> float:
    for name, f in c.eager_layer_factor:
        if name == arch:
            return f
    return 1.0


def gpu_ms(c: LatencyCoefficients, s: ForwardShape, tokens: int, logit_rows: int, reqs: int = 0) -> float:
    """Modelled GPU time of one forward over `tokens` (padded) tokens of `reqs` requests."""
    gflop_tok = 2.0 * s.body_params / 1e9
    weights_gb = 2.0 * (s.body_params + s.head_params) / 1e9
    return (
        s.layers * c.gpu_ms_per_layer
        + weights_gb * c.gpu_ms_per_weight_gb
        + tokens
        * (gflop_tok * c.gpu_ms_per_gflop + s.layers * s.hidden_size / 1e3 * c.gpu_ms_per_token_width)
        + logit_rows * 2.0 * s.head_params / 1e9 * c.gpu_ms_per_gflop
        + max(0.0, tokens - c.compute_bound_from_tokens) * gflop_tok * c.gpu_ms_per_gflop_compute_bound
        + reqs * c.gpu_ms_per_request
    )


def host_ms(c: LatencyCoefficients, s: ForwardShape, mode: str) -> float:
    """Modelled host time to launch one forward in `mode`."""
    if mode == "FULL":
        return c.host_ms_full
    if mode == "PIECEWISE":
        return c.host_ms_piecewise + s.layers * c.host_ms_piecewise_per_layer
    return c.host_ms_eager + s.layers * c.host_ms_eager_per_layer * _arch_factor(c, s.architecture)


def forward_ms(
    c: LatencyCoefficients, s: ForwardShape, mode: str, tokens: int, logit_rows: int, reqs: int = 0
) -> float:
    """One forward pass: host and GPU overlap, less what the overlap loses."""
    g = gpu_ms(c, s, tokens, logit_rows, reqs)
    h = host_ms(c, s, mode)
    loss = (
        c.eager_overlap_loss if mode == "NONE" else c.piecewise_overlap_loss if mode == "PIECEWISE" else 0.0
    )
    return max(h, g) + loss * min(h, g)


@dataclass(frozen=True)
class StepShape:
    """One step as dispatched: the forwards it runs, in which mode, at how many (padded) tokens."""

    target_mode: str
    target_tokens: int
    logit_rows: int
    drafter_prefill_mode: str | None = None
    drafter_prefill_tokens: int = 0
    drafter_reqs: int = 0
    drafter_decode_mode: str = "FULL"
    drafter_decode_tokens: int = 0
    draft_steps: int = 0
    """K - 1 drafter decode steps (0 without EAGLE)."""
    reqs: int = 0
    """Requests in the step (input preparation is per request)."""


def step_ms(c: LatencyCoefficients, target: ForwardShape, step: StepShape) -> float:
    """Modelled time of one step."""
    t = c.step_ms
    t += forward_ms(c, target, step.target_mode, step.target_tokens, step.logit_rows, step.reqs)
    if step.drafter_prefill_mode is not None:
        d = drafter_shape(target)
        t += forward_ms(c, d, step.drafter_prefill_mode, step.drafter_prefill_tokens, step.drafter_reqs)
        if step.draft_steps:
            dec = forward_ms(c, d, step.drafter_decode_mode, step.drafter_decode_tokens, step.drafter_reqs)
            t += step.draft_steps * (dec + c.draft_step_ms)
    return t


# ---------------------------------------------------------------- plans in time


_MEMO: dict[tuple[str, int], tuple[object, list[int]]] = {}
"""Per-table sorted keys (first batch of each range, a drafter ladder), keyed by the table's identity
and holding the table itself so a reused id can never match: a cache, not state."""


def _memo(kind: str, table: object, make: Callable[[], list[int]]) -> list[int]:
    hit = _MEMO.get((kind, id(table)))
    if hit is not None and hit[0] is table:
        return hit[1]
    if len(_MEMO) > 256:
        _MEMO.clear()
    keys = make()
    _MEMO[(kind, id(table))] = (table, keys)
    return keys


def _lookup(ranges: tuple[DispatchRange, ...], n: int) -> DispatchRange | None:
    firsts = _memo("firsts", ranges, lambda: [r.first for r in ranges])
    i = bisect.bisect_right(firsts, n) - 1
    if i >= 0 and ranges[i].first <= n <= ranges[i].last:
        return ranges[i]
    return None


def _decode_ladder(plan: Plan) -> list[int]:
    fam = plan.graphs.get("drafter_decode") or ()
    return _memo("ladder", fam, lambda: sorted({g.num_tokens for g in fam if g.mode == "FULL"}))


def _has_drafter(inp: PlanInput) -> bool:
    return inp.speculative is not None and inp.speculative.method in DRAFTER_METHODS


def decode_step(
    plan: Plan, inp: PlanInput, n: int, q: int, mode: str | None = None, tokens: int | None = None
) -> StepShape:
    """A uniform-decode step of n requests × q tokens: as planned, or forced to `mode` at `tokens`."""
    if mode is None:
        r = _lookup(plan.uniform_decode.get(q, ()), n)
        mode = "NONE" if r is None or r.mode == "NONE" or r.padded_tokens is None else r.mode
        tokens = n * q if mode == "NONE" or r is None or r.padded_tokens is None else r.padded_tokens
    t = tokens if tokens is not None else n * q
    if not _has_drafter(inp):
        return StepShape(mode, t, n * q, reqs=n)
    ladder = _decode_ladder(plan)
    i = bisect.bisect_left(ladder, n)
    dec_mode, dec_tokens = ("FULL", ladder[i]) if i < len(ladder) else ("NONE", n)
    return StepShape(mode, t, n * q, mode, t, n, dec_mode, dec_tokens, max(q - 2, 0), n)


def mixed_step(plan: Plan, inp: PlanInput, tokens: int, mode: str | None = None) -> StepShape:
    """A mixed batch of `tokens` tokens: as planned, or forced to `mode` at its exact size."""
    if mode is None:
        r = _lookup(plan.mixed, tokens)
        mode = "NONE" if r is None or r.mode == "NONE" or r.padded_tokens is None else r.mode
        t = tokens if mode == "NONE" or r is None or r.padded_tokens is None else r.padded_tokens
    else:
        t = tokens
    rows = min(tokens, MIXED_LOGIT_ROWS)
    if not _has_drafter(inp):
        return StepShape(mode, t, rows, reqs=rows)
    q = plan.uniform_decode_query_len
    ladder = _decode_ladder(plan)
    i = bisect.bisect_left(ladder, rows)
    dec_mode, dec_tokens = ("FULL", ladder[i]) if i < len(ladder) else ("NONE", rows)
    return StepShape(mode, t, rows, mode, t, rows, dec_mode, dec_tokens, max(q - 2, 0), rows)


def _query_len_for(plan: Plan, n: int) -> int:
    if plan.dynamic_sd_lookup is None:
        return plan.uniform_decode_query_len
    for a, b, k in plan.dynamic_sd_lookup:
        if a <= n <= b:
            return k + 1
    return plan.uniform_decode_query_len


def latency_withheld(c: LatencyCoefficients, inp: PlanInput) -> tuple[str, ...]:
    """The axes of the measured domain `inp` is outside of where no step time is given: a step
    time is the measured GPU's (another platform or GPU by name has other bandwidth and launch
    costs: H100, L40S, A10G, RTX PRO 6000 and B200 would all read H200's figures) and the measured
    weights' (a quantised checkpoint reads fewer bytes per weight through other GEMM kernels).
    Empty: the figure is given, with `domain_caveats` for what widens it."""
    out: list[str] = []
    measured_on = GPU_NAME_TO_PLATFORM.get(c.gpu.lower())
    if measured_on is None or inp.platform is not measured_on:
        out.append(f"GPU platform {inp.platform.value} (measured on {c.gpu})")
    elif inp.gpu_name and inp.gpu_name != c.gpu:
        out.append(f"GPU {inp.gpu_name} (measured on {c.gpu})")
    if inp.model.quantization:
        out.append(f"quantization {inp.model.quantization} (measured: unquantised {c.gpu} weights)")
    return tuple(out)


UNCOMPILED_CAVEAT = (
    "steps without torch.compile were not measured (compilation mode NONE: enforce_eager, -O0, "
    "TORCH_COMPILE_DISABLE; priced as the compiled model's)"
)
"""Every measured step ran vLLM's compiled model (docs/latency-model.md: NONE is the compiled
model without graphs, what vLLM runs past the ladder). enforce_eager runs PyTorch eager: other
kernels, no fusion; on an H100 its forward read 0.93-2.78x the compiled one's across three calls
(benchmarks/results/h200/latency-large), so no fitted term prices it."""


def _shape_caveats(
    c: LatencyCoefficients, inp: PlanInput, model_runner: str | None, compilation_mode: str = "VLLM_COMPILE"
) -> list[str]:
    """Where the model, runner, compilation or parallelism of `inp` lies outside what was measured
    (`compilation_mode`: the plan's resolved `CompilationMode` name)."""
    m = inp.model
    out: list[str] = []
    if compilation_mode != "VLLM_COMPILE":
        out.append(UNCOMPILED_CAVEAT)
    measured_on = GPU_NAME_TO_PLATFORM.get(c.gpu.lower())
    if measured_on is None or inp.platform is not measured_on:
        # a step time is the measured GPU's: another platform (GB10, an RTX 5090, B200...) differs
        out.append(f"GPU platform {inp.platform.value} was not measured (the step times are {c.gpu}'s)")
    # The runners dispatch differently (V1: one PIECEWISE drafter family, no drafter decode
    # graphs), so a fit on one runner's steps says little about the other's.
    measured = c.measured_with.lower()
    if model_runner and "model runner" in measured and f"model runner {model_runner.lower()}" not in measured:
        fitted = c.measured_with[measured.index("model runner") :].split(",")[0]
        out.append(f"model runner {model_runner.upper()} was not measured (only {fitted})")
    archs = {a for a, _ in c.eager_layer_factor}
    if m.architecture not in archs:
        out.append(f"architecture {m.architecture} was not measured (eager launch time assumed as for Llama)")
    lo, hi = c.hidden_size_range
    if not lo <= m.hidden_size <= hi:
        out.append(f"hidden size {m.hidden_size} is outside the measured {lo}..{hi}")
    lo, hi = c.layers_range
    if not lo <= m.num_hidden_layers <= hi:
        out.append(f"{m.num_hidden_layers} layers is outside the measured {lo}..{hi}")
    if m.is_moe or m.use_mla:
        out.append("MoE / MLA models were not measured (the model is for dense attention)")
    if inp.tensor_parallel_size > 1:
        out.append("tensor parallel was not measured (the model is for one GPU)")
    if inp.model.dtype not in ("bfloat16", "auto"):
        out.append(f"dtype {inp.model.dtype} was not measured (bfloat16 only)")
    if inp.kv_cache_dtype not in ("auto", inp.model.dtype):
        out.append(
            f"kv_cache_dtype {inp.kv_cache_dtype} was not measured (auto only: other attention kernels)"
        )
    spec = inp.speculative
    if spec is not None and spec.method not in DRAFTER_METHODS:
        out.append(f"speculative method {spec.method} was not measured (its proposer is not modelled)")
    if spec is not None and spec.num_speculative_tokens > c.max_speculative_tokens:
        out.append(f"K={spec.num_speculative_tokens} is above the measured {c.max_speculative_tokens}")
    return out


def _range_caveats(c: LatencyCoefficients, widest_tokens: int, most_reqs: int, reqs_what: str) -> list[str]:
    out: list[str] = []
    if widest_tokens > c.max_tokens:
        out.append(f"batches above {c.max_tokens} tokens were not measured (widest here: {widest_tokens})")
    if most_reqs > c.max_reqs:
        # the per-request GPU time is a straight line fitted on steps of up to max_reqs requests
        out.append(
            f"steps above {c.max_reqs} requests were not measured ({reqs_what}: {most_reqs}; "
            "the per-request time is extrapolated)"
        )
    return out


def domain_caveats(
    c: LatencyCoefficients,
    inp: PlanInput,
    model_runner: str | None = None,
    compilation_mode: str = "VLLM_COMPILE",
) -> tuple[str, ...]:
    """Where `inp` lies outside what the coefficients were measured on; `model_runner` is the
    plan's resolved runner ("v1" / "v2"), checked against the one the coefficients name, and
    `compilation_mode` its resolved compilation."""
    out = _shape_caveats(c, inp, model_runner, compilation_mode)
    widest = inp.max_num_seqs * inp.uniform_decode_query_len
    out += _range_caveats(c, widest, inp.max_num_seqs, "max_num_seqs here")
    if f"vLLM {inp.vllm_version}" not in c.measured_with:
        out.append(
            f"measured with {c.measured_with.split(',')[0]}; vLLM {inp.vllm_version}'s step may differ"
        )
    out.append("attention over short contexts (KV reads of long contexts are not in the model)")
    return tuple(out)


def traffic_extrapolated(
    c: LatencyCoefficients,
    plan: Plan,
    inp: PlanInput,
    uniform: Sequence[tuple[int, float]] | None = None,
    mixed: Sequence[tuple[int, float]] = (),
) -> tuple[str, ...]:
    """Why the step times of the traffic's own batches are extrapolated: the model's shape, runner
    or parallelism outside what was measured, or a batch of the traffic (default: every
    uniform-decode batch size that fits the token budget) wider in tokens or requests than the
    measured steps. Empty: every step the expected step time sums was inside the measured domain.

    The release the coefficients were measured with is not a reason here: every plan of another
    release carries that caveat, and what differs by release (which batches get which graph) is
    what cgplan plans from the release's own rules; the time of a FULL, PIECEWISE or eager step
    of a shape is what was measured."""
    out = _shape_caveats(c, inp, plan.model_runner, plan.compilation_mode)
    if uniform is None:
        runs = [(a, min(b, plan.max_num_batched_tokens // q), q) for a, b, q in _tier_runs(plan)]
        runs = [(a, b, q) for a, b, q in runs if b >= a]
        tokens = max((b * q for _, b, q in runs), default=0)
        reqs = max((b for _, b, _ in runs), default=0)
    else:
        hit = [(n, _query_len_for(plan, n)) for n, w in uniform if w > 0 and n <= plan.max_num_seqs]
        tokens = max((n * q for n, q in hit), default=0)
        reqs = max((n for n, _ in hit), default=0)
    tokens = max(tokens, *(t for t, w in mixed if w > 0 and t <= plan.max_num_batched_tokens), 0)
    return tuple(out + _range_caveats(c, tokens, reqs, "the traffic's widest step"))


def _tier_runs(plan: Plan) -> list[tuple[int, int, int]]:
    """(first, last, query_len) runs covering 1..max_num_seqs: what `_query_len_for` answers for
    each request count, as runs (O(schedule), not O(max_num_seqs))."""
    s, q0 = plan.max_num_seqs, plan.uniform_decode_query_len
    if plan.dynamic_sd_lookup is None:
        return [(1, s, q0)] if s >= 1 else []
    claimed: list[tuple[int, int, int]] = []  # first match wins, as in _query_len_for
    for a, b, k in plan.dynamic_sd_lookup:
        pieces = [(max(a, 1), min(b, s))]
        for ca, cb, _ in claimed:
            pieces = [
                part
                for lo, hi in pieces
                for part in ((lo, min(hi, ca - 1)), (max(lo, cb + 1), hi))
                if part[0] <= part[1]
            ]
        claimed.extend((lo, hi, k + 1) for lo, hi in pieces if lo <= hi)
    out: list[tuple[int, int, int]] = []
    pos = 1
    for a, b, q in sorted(claimed):
        if a > pos:
            out.append((pos, a - 1, q0))
        out.append((a, b, q))
        pos = b + 1
    if pos <= s:
        out.append((pos, s, q0))
    return out


def uniform_ranges(plan: Plan) -> tuple[tuple[int, int], ...]:
    """`uniform_traffic`'s request counts as runs (first, last): the default traffic shape in
    O(schedule)."""
    out: list[tuple[int, int]] = []
    for a, b, q in _tier_runs(plan):
        hi = min(b, plan.max_num_batched_tokens // q)
        if hi < a:
            continue
        if out and out[-1][1] == a - 1:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((a, hi))
    return tuple(out)


Linear = tuple[int, int, int, int, int, int]
"""(tokens at `lo`, tokens per request, rows at `lo`, rows per request, requests at `lo`, requests
per request) of a forward over lo..hi (its requests: those whose per-request GPU time it carries)."""


SHORT_RUN = 6
"""Runs shorter than this are summed point by point (`_segment_sum`)."""


class _Walk:
    """`step_ms` of one (coefficients, target model) pair with its constants bound once, and the
    run sums already made (a plain class: nothing made at import, issue 18).

    The latency walk of a plan and of each fix re-planned evaluates thousands of steps: building
    a StepShape per step and recomputing every constant per forward were most of a plan's
    latency pricing. `step` is `step_ms` of the same shape to the bit (the same operations in
    the same order: tests/core/predict/test_latency_ranges.py); `sums` holds each run's sum by what fixes it
    (tier, requests, modes and graphs), so a fix's walk reuses the runs it shares with the plan's."""

    __slots__ = ("c", "cuts", "gpu_d", "gpu_t", "host_d", "host_t", "step", "sums", "target")

    def __init__(self, c: LatencyCoefficients, target: ForwardShape) -> None:
        self.c = c
        self.target = target
        d = drafter_shape(target)
        self.gpu_t, self.host_t, fwd_t = _forward_fn(c, target)
        self.gpu_d, self.host_d, fwd_d = _forward_fn(c, d)
        base_ms, draft_step_ms = c.step_ms, c.draft_step_ms

        def step(
            mode: str,
            tokens: int,
            rows: int,
            reqs: int,
            prefill_mode: str | None,
            drafter_reqs: int,
            dec_mode: str,
            dec_tokens: int,
            draft_steps: int,
        ) -> float:
            # step_ms: the drafter's prefill runs the target's tokens; its forwards carry no
            # per-request time (reqs 0)
            t = base_ms
            t += fwd_t(mode, tokens, rows, reqs)
            if prefill_mode is not None:
                t += fwd_d(prefill_mode, tokens, drafter_reqs, 0)
                if draft_steps:
                    dec = fwd_d(dec_mode, dec_tokens, drafter_reqs, 0)
                    t += draft_steps * (dec + draft_step_ms)
            return t

        self.step = step
        self.sums: dict[tuple[object, ...], tuple[float, str]] = {}
        self.cuts: dict[tuple[int, int, bool, bool], tuple[Plan, list[int]]] = {}


def _forward_fn(
    c: LatencyCoefficients, s: ForwardShape
) -> tuple[Callable[[int, int, int], float], dict[str, float], Callable[[str, int, int, int], float]]:
    """(gpu_ms, host_ms by mode, forward_ms) of `s` under `c` with the constants bound: each the
    same operations as `gpu_ms`, `host_ms` and `forward_ms`, in the same order (the same floats)."""
    gflop_tok = 2.0 * s.body_params / 1e9
    weights_gb = 2.0 * (s.body_params + s.head_params) / 1e9
    fixed = s.layers * c.gpu_ms_per_layer + weights_gb * c.gpu_ms_per_weight_gb
    per_token = gflop_tok * c.gpu_ms_per_gflop + s.layers * s.hidden_size / 1e3 * c.gpu_ms_per_token_width
    head, per_gflop, per_req = s.head_params, c.gpu_ms_per_gflop, c.gpu_ms_per_request
    knee, bound = c.compute_bound_from_tokens, c.gpu_ms_per_gflop_compute_bound

    def gpu(tokens: int, rows: int, reqs: int) -> float:
        over = tokens - knee
        return (
            fixed
            + tokens * per_token
            + rows * 2.0 * head / 1e9 * per_gflop
            + (over if over > 0.0 else 0.0) * gflop_tok * bound
            + reqs * per_req
        )

    hosts = {m: host_ms(c, s, m) for m in MODES}
    # (host time, overlap loss) by mode, as forward_ms picks them
    launch = {
        "FULL": (hosts["FULL"], 0.0),
        "PIECEWISE": (hosts["PIECEWISE"], c.piecewise_overlap_loss),
        "NONE": (hosts["NONE"], c.eager_overlap_loss),
    }
    other = (hosts["NONE"], 0.0)

    def forward(mode: str, tokens: int, rows: int, reqs: int) -> float:
        over = tokens - knee
        g = (
            fixed
            + tokens * per_token
            + rows * 2.0 * head / 1e9 * per_gflop
            + (over if over > 0.0 else 0.0) * gflop_tok * bound
            + reqs * per_req
        )
        h, loss = launch.get(mode, other)
        # max(h, g) + loss * min(h, g), as max/min pick on a tie
        return g + loss * h if g > h else h + loss * g

    return gpu, hosts, forward


def _walk_for(walk: _Walk | None, c: LatencyCoefficients, target: ForwardShape) -> _Walk:
    if walk is not None and walk.c is c and (walk.target is target or walk.target == target):
        return walk
    return _Walk(c, target)


def _forward_kinks(
    c: LatencyCoefficients,
    s: ForwardShape,
    mode: str,
    lo: int,
    hi: int,
    lin: Linear,
    gpu_fn: Callable[[int, int, int], float] | None = None,
    host: float | None = None,
) -> list[float]:
    """Where `forward_ms` of a forward whose (tokens, rows) are linear in n on lo..hi may bend: the
    compute-bound knee of `gpu_ms` and the points where host and GPU time cross (`forward_ms`
    takes their max and a share of their min). Between two such points it is linear in n.
    (`gpu_fn` and `host`: `gpu_ms` and `host_ms` of `s` bound already, `_Walk`.)"""
    t0, t1, r0, r1, q0, q1 = lin

    def gpu(n: int) -> float:
        if gpu_fn is not None:
            return gpu_fn(t0 + t1 * (n - lo), r0 + r1 * (n - lo), q0 + q1 * (n - lo))
        return gpu_ms(c, s, t0 + t1 * (n - lo), r0 + r1 * (n - lo), q0 + q1 * (n - lo))

    kinks: list[float] = []
    pieces = [(lo, hi)]
    if t1:
        x = lo + (c.compute_bound_from_tokens - t0) / t1
        kinks.append(x)
        if lo < x < hi:
            # each side's slope from points a whole step away from the knee
            pieces = [(lo, math.floor(x) - 1), (math.floor(x) + 2, hi)]
    h = host_ms(c, s, mode) if host is None else host
    for u, v in pieces:
        if v > u:
            gu, gv = gpu(u), gpu(v)
            if gv != gu:
                kinks.append(u + (h - gu) * (v - u) / (gv - gu))
    return kinks


def _sum_piecewise_linear(f: Callable[[int], float], a: int, b: int, kinks: Sequence[float]) -> float:
    """f(a) + ... + f(b) for an f that is linear in n between `kinks`: each kink's neighbours
    (floor - 1 .. floor + 1, so a kink computed a little off still falls among them) point by
    point, every run between them from its two ends (exact for a linear run)."""
    points = sorted(
        {
            p
            for k in kinks
            if a - 2 <= k <= b + 2
            for p in range(math.floor(k) - 1, math.floor(k) + 2)
            if a <= p <= b
        }
    )
    total, pos = 0.0, a
    for p in [*points, b + 1]:
        if p > pos:
            last = p - 1
            total += f(pos) if last == pos else (last - pos + 1) * (f(pos) + f(last)) / 2
        if p <= b:
            total += f(p)
        pos = p + 1
    return total


def _segment_sum(
    c: LatencyCoefficients,
    target: ForwardShape,
    plan: Plan,
    inp: PlanInput,
    q: int,
    lo: int,
    hi: int,
    mode: str | None,
    walk: _Walk | None = None,
) -> tuple[float, str]:
    """Step time summed over n = lo..hi, a run where every forward's mode and graph are fixed
    (so its tokens and rows are linear in n), and the target's mode there.

    `decode_step` of every n of the run, from its first: the target replays one graph (`padded`
    tokens) or runs its n x q tokens, the drafter's decode replays one graph (`dec_tokens`) or
    runs eager at n; so the sum depends on those, q, lo and hi only (`_Walk.sums`' key)."""
    w = _walk_for(walk, c, target)
    # decode_step(plan, inp, lo, q, mode, ...)'s modes and graphs, without its StepShape
    padded: int | None = None
    t_mode: str
    if mode is None:
        r = _lookup(plan.uniform_decode.get(q, ()), lo)
        t_mode = "NONE" if r is None or r.mode == "NONE" or r.padded_tokens is None else r.mode
        if t_mode != "NONE" and r is not None:
            padded = r.padded_tokens
    else:
        t_mode = mode
    drafter = _has_drafter(inp)
    dec_fixed: int | None = None
    dec_mode, steps = "FULL", 0
    if drafter:
        ladder = _decode_ladder(plan)
        i = bisect.bisect_left(ladder, lo)
        dec_fixed = ladder[i] if i < len(ladder) else None
        dec_mode, steps = ("FULL" if dec_fixed is not None else "NONE"), max(q - 2, 0)
    key = (q, lo, hi, t_mode, padded, drafter, dec_fixed)
    got = w.sums.get(key)
    if got is not None:
        return got
    step = w.step
    prefill_mode = t_mode if drafter else None

    def f(n: int) -> float:
        tokens = n * q if padded is None else padded
        return step(
            t_mode, tokens, n * q, n, prefill_mode, n, dec_mode, n if dec_fixed is None else dec_fixed, steps
        )

    if hi - lo < SHORT_RUN:
        # a short run point by point: fewer evaluations than finding its kinks
        got = f(lo) + sum([f(n) for n in range(lo + 1, hi + 1)]), t_mode
        w.sums[key] = got
        return got
    # tokens, rows and requests of each forward at lo and per request (`decode_step` at lo, lo + 1)
    t0, t1 = (lo * q, q) if padded is None else (padded, 0)
    kinks = _forward_kinks(c, target, t_mode, lo, hi, (t0, t1, lo * q, q, lo, 1), w.gpu_t, w.host_t[t_mode])
    if drafter:
        d = drafter_shape(target)
        kinks += _forward_kinks(c, d, t_mode, lo, hi, (t0, t1, lo, 1, 0, 0), w.gpu_d, w.host_d[t_mode])
        if steps:
            dec = (lo, 1) if dec_fixed is None else (dec_fixed, 0)
            kinks += _forward_kinks(c, d, dec_mode, lo, hi, (*dec, lo, 1, 0, 0), w.gpu_d, w.host_d[dec_mode])
    got = _sum_piecewise_linear(f, lo, hi, kinks), t_mode
    w.sums[key] = got
    return got


def _decode_sum(
    c: LatencyCoefficients,
    target: ForwardShape,
    plan: Plan,
    inp: PlanInput,
    q: int,
    a: int,
    b: int,
    mode: str | None = None,
    walk: _Walk | None = None,
) -> tuple[float, float]:
    """(sum, sum over eager steps) of `decode_step(plan, inp, n, q, mode)`'s step time over n = a..b
    (forced `mode` at n x q tokens, or as planned): O(graphs), the sum point by point up to float
    rounding (tests/core/predict/test_latency_ranges.py). `walk` keeps each run's sum for later calls on the
    same `c` and `target` (a gap's runs are runs of the plan's whole walk, and a fix's walk
    shares most of its runs with the plan's)."""
    w = _walk_for(walk, c, target)
    target = w.target  # the walk's own: `_walk_for` below matches it by identity
    drafter = _has_drafter(inp)
    ck = (id(plan), q, mode is None, drafter)
    held = w.cuts.get(ck)
    if held is None or held[0] is not plan:
        cuts: set[int] = set()
        if mode is None:
            for r in plan.uniform_decode.get(q, ()):
                cuts.update((r.first, r.last + 1))
        if drafter:
            cuts.update(t + 1 for t in _decode_ladder(plan))
        held = w.cuts[ck] = (plan, sorted(cuts))
    every = held[1]
    inner = every[bisect.bisect_right(every, a) : bisect.bisect_left(every, b + 1)]
    total = eager = 0.0
    lo = a
    for end in (*inner, b + 1):
        part, target_mode = _segment_sum(c, target, plan, inp, q, lo, end - 1, mode, w)
        total += part
        if target_mode == "NONE":
            eager += part
        lo = end
    return total, eager


def _expected_ranges(
    c: LatencyCoefficients,
    plan: Plan,
    inp: PlanInput,
    counts: Sequence[tuple[int, int]],
    mixed: Sequence[tuple[int, float]] = (),
    walk: _Walk | None = None,
) -> _Expected:
    """`expected` at weight 1 for every request count in the runs `counts` (the default traffic),
    in O(runs x graphs) instead of O(max_num_seqs)."""
    w = _walk_for(walk, c, forward_shape(inp.model))
    target = w.target
    total_w = total_ms = eager_ms = tokens = 0.0
    for lo, hi in counts:
        for a, b, q in _tier_runs(plan):
            a, b = max(a, lo), min(b, hi)
            if a > b:
                continue
            ms, eager = _decode_sum(c, target, plan, inp, q, a, b, walk=w)
            total_w += b - a + 1
            total_ms += ms
            eager_ms += eager
            tokens += q * (a + b) * (b - a + 1) // 2
    more = _mixed_sums(c, plan, inp, target, mixed)
    total_w, total_ms, eager_ms, tokens = (
        total_w + more[0],
        total_ms + more[1],
        eager_ms + more[2],
        tokens + more[3],
    )
    if total_w == 0 or total_ms == 0:
        return _Expected(0.0, 0.0, 0.0)
    return _Expected(total_ms / total_w, eager_ms / total_ms, tokens / (total_ms / 1e3))


def _mixed_sums(
    c: LatencyCoefficients,
    plan: Plan,
    inp: PlanInput,
    target: ForwardShape,
    mixed: Sequence[tuple[int, float]],
) -> tuple[float, float, float, float]:
    total_w = total_ms = eager_ms = tokens = 0.0
    for t, w in mixed:
        if w <= 0 or t > plan.max_num_batched_tokens:
            continue
        s = mixed_step(plan, inp, t)
        ms = step_ms(c, target, s)
        total_w += w
        total_ms += w * ms
        tokens += w * t
        if s.target_mode == "NONE":
            eager_ms += w * ms
    return total_w, total_ms, eager_ms, tokens


def uniform_traffic(plan: Plan) -> tuple[tuple[int, float], ...]:
    """Every uniform-decode batch size 1..max_num_seqs that fits the token budget, once (the
    default traffic shape)."""
    return tuple(
        (n, 1.0)
        for n in range(1, plan.max_num_seqs + 1)
        if n * _query_len_for(plan, n) <= plan.max_num_batched_tokens
    )


def widest_batch(plan: Plan) -> tuple[int, int]:
    """(requests, tokens per request) of the widest uniform-decode batch that fits the token budget."""
    # from the widest tier down: the largest n of a tier that fits is min(last, budget // q)
    for a, b, q in reversed(_tier_runs(plan)):
        n = min(b, plan.max_num_batched_tokens // q)
        if n >= a and n >= 1:
            return n, q
    return 1, _query_len_for(plan, 1)


class _Expected:
    """An internal sum (a plain class: no dataclass or NamedTuple made at import, issue 18)."""

    __slots__ = ("eager_share", "step_ms", "tokens_per_s")

    def __init__(self, step_ms: float, eager_share: float, tokens_per_s: float) -> None:
        self.step_ms = step_ms
        self.eager_share = eager_share
        self.tokens_per_s = tokens_per_s


def expected(
    c: LatencyCoefficients,
    plan: Plan,
    inp: PlanInput,
    uniform: Sequence[tuple[int, float]],
    mixed: Sequence[tuple[int, float]] = (),
) -> _Expected:
    """Expected step time, eager share and scheduled tokens per second at a histogram."""
    target = forward_shape(inp.model)
    total_w = total_ms = eager_ms = tokens = 0.0
    for n, w in uniform:
        if w <= 0 or n > plan.max_num_seqs:
            continue
        q = _query_len_for(plan, n)
        s = decode_step(plan, inp, n, q)
        ms = step_ms(c, target, s)
        total_w += w
        total_ms += w * ms
        tokens += w * n * q
        if s.target_mode == "NONE":
            eager_ms += w * ms
    for t, w in mixed:
        if w <= 0 or t > plan.max_num_batched_tokens:
            continue
        s = mixed_step(plan, inp, t)
        ms = step_ms(c, target, s)
        total_w += w
        total_ms += w * ms
        tokens += w * t
        if s.target_mode == "NONE":
            eager_ms += w * ms
    if total_w == 0 or total_ms == 0:
        return _Expected(0.0, 0.0, 0.0)
    return _Expected(total_ms / total_w, eager_ms / total_ms, tokens / (total_ms / 1e3))


def predict_latency(
    c: LatencyCoefficients,
    plan: Plan,
    inp: PlanInput,
    uniform: Sequence[tuple[int, float]] | None = None,
    mixed: Sequence[tuple[int, float]] = (),
    traffic: str = "uniform",
    replan: Callable[[int], tuple[Plan, PlanInput] | None] | None = None,
) -> LatencyPrediction:
    """`plan`'s step times at a traffic shape (default: every uniform-decode batch size once),
    each gap's cost and, with `replan` (fix index → the re-planned config), each fix's gain."""
    # The default traffic (every request count once) as runs: O(graphs), not O(max_num_seqs).
    counts = uniform_ranges(plan) if uniform is None else None
    hist = tuple(uniform) if uniform is not None else ()
    target = forward_shape(inp.model)

    # the runs summed once: each gap's sum below is over runs of the plan's whole walk, and each
    # fix's walk shares most of its runs with the plan's
    walk = _Walk(c, target)

    def at_traffic(p: Plan, i: PlanInput) -> _Expected:
        if counts is not None:
            return _expected_ranges(c, p, i, counts, mixed, walk)
        return expected(c, p, i, hist, mixed)

    base = at_traffic(plan, inp)
    memo: dict[tuple[int, int, str | None], float] = {}

    def dec(n: int, q: int, mode: str | None = None) -> float:
        key = (n, q, mode)
        v = memo.get(key)
        if v is None:
            v = memo[key] = step_ms(c, target, decode_step(plan, inp, n, q, mode, n * q if mode else None))
        return v

    weights: dict[int, float] = {}
    for n, w in hist:
        weights[n] = weights.get(n, 0.0) + w
    mixed_w: dict[int, float] = {}
    for t, w in mixed:
        mixed_w[t] = mixed_w.get(t, 0.0) + w
    uniform_w = sum(b - a + 1 for a, b in counts) if counts is not None else 0
    total_w = uniform_w + sum(w for n, w in hist if n <= plan.max_num_seqs) + sum(mixed_w.values()) or 1.0
    gaps: list[GapLatency] = []
    for i, g in enumerate(plan.gaps):
        if g.family == "uniform_decode":
            q = g.query_len or plan.uniform_decode_query_len
            last = g.last
            while last > g.first and last * q > plan.max_num_batched_tokens:
                last -= 1
            as_planned = step_ms(c, target, decode_step(plan, inp, last, q))
            graph = step_ms(c, target, decode_step(plan, inp, last, q, "FULL", last * q))
            if counts is not None:
                exp_cost = 0.0
                for a, b in counts:
                    a, b = max(a, g.first), min(b, g.last)
                    if a <= b:
                        planned = _decode_sum(c, target, plan, inp, q, a, b, walk=walk)[0]
                        exp_cost += planned - _decode_sum(c, target, plan, inp, q, a, b, "FULL", walk)[0]
            else:
                exp_cost = sum(
                    w * (dec(n, q) - dec(n, q, "FULL"))
                    for n, w in weights.items()
                    if g.first <= n <= g.last and w
                )
            tokens = last * q
        else:
            last = g.last
            as_planned = step_ms(c, target, mixed_step(plan, inp, g.last))
            graph = step_ms(c, target, mixed_step(plan, inp, g.last, "PIECEWISE"))
            exp_cost = sum(
                w
                * (
                    step_ms(c, target, mixed_step(plan, inp, t))
                    - step_ms(c, target, mixed_step(plan, inp, t, "PIECEWISE"))
                )
                for t, w in mixed_w.items()
                if g.first <= t <= g.last
            )
            tokens = g.last
        gaps.append(
            GapLatency(
                i,
                last,
                as_planned,
                graph,
                as_planned - graph,
                tokens / (as_planned / 1e3),
                tokens / (graph / 1e3),
                exp_cost / total_w,
            )
        )
    fixes: list[FixLatency] = []
    if replan is not None:
        for j, f in enumerate(plan.fixes):
            got = replan(j)
            if got is None:
                continue
            p2, inp2 = got
            after = at_traffic(p2, inp2)
            first = f.closes[0] if f.closes else None
            widest_gain = 0.0
            if first is not None and first < len(plan.gaps):
                g = plan.gaps[first]
                if g.family == "uniform_decode":
                    q = g.query_len or plan.uniform_decode_query_len
                    widest_gain = step_ms(c, target, decode_step(plan, inp, g.last, q)) - step_ms(
                        c, forward_shape(inp2.model), decode_step(p2, inp2, g.last, q)
                    )
                else:
                    widest_gain = step_ms(c, target, mixed_step(plan, inp, g.last)) - step_ms(
                        c, forward_shape(inp2.model), mixed_step(p2, inp2, g.last)
                    )
            fixes.append(
                FixLatency(j, after.step_ms, base.step_ms - after.step_ms, widest_gain, after.eager_share)
            )
    s0, q0 = widest_batch(plan)
    widest = step_ms(c, target, decode_step(plan, inp, s0, q0))
    widest_graph = step_ms(c, target, decode_step(plan, inp, s0, q0, "FULL", s0 * q0))
    widest_eager = step_ms(c, target, decode_step(plan, inp, s0, q0, "NONE", s0 * q0))
    return LatencyPrediction(
        gpu=c.gpu,
        traffic=traffic,
        expected_step_ms=base.step_ms,
        expected_eager_share=base.eager_share,
        expected_tokens_per_s=base.tokens_per_s,
        widest_reqs=s0,
        widest_query_len=q0,
        widest_step_ms=widest,
        widest_graph_step_ms=widest_graph,
        widest_eager_step_ms=widest_eager,
        gaps=tuple(gaps),
        fixes=tuple(fixes),
        caveats=domain_caveats(c, inp, plan.model_runner, plan.compilation_mode),
        extrapolated=traffic_extrapolated(c, plan, inp, uniform, mixed),
        model_error=c.held_out_median_error,
    )


# ---------------------------------------------------------------- fitting
@dataclass(frozen=True)
class LatencyObservation:
    """One measured point: a step as dispatched and its median time."""

    run: str
    target: ForwardShape
    step: StepShape
    measured_ms: float
    batch: str = ""
    """"uniform:N" or "mixed:T", for held-out selection."""


_FREE = (
    "gpu_ms_per_layer",
    "gpu_ms_per_weight_gb",
    "gpu_ms_per_gflop",
    "gpu_ms_per_token_width",
    "gpu_ms_per_gflop_compute_bound",
    "compute_bound_from_tokens",
    "host_ms_full",
    "host_ms_piecewise",
    "host_ms_piecewise_per_layer",
    "host_ms_eager",
    "host_ms_eager_per_layer",
    "eager_overlap_loss",
    "piecewise_overlap_loss",
    "step_ms",
    "draft_step_ms",
    "gpu_ms_per_request",
)
_BOUNDS = {
    "compute_bound_from_tokens": (16.0, 1024.0),
    "eager_overlap_loss": (0.0, 1.0),
    "piecewise_overlap_loss": (0.0, 1.0),
}
REFERENCE_ARCH = "LlamaForCausalLM"


def _pack(c: LatencyCoefficients, archs: Sequence[str]) -> list[float]:
    return [getattr(c, n) for n in _FREE] + [_arch_factor(c, a) for a in archs]


def _unpack(c: LatencyCoefficients, x: Sequence[float], archs: Sequence[str]) -> LatencyCoefficients:
    vals: dict[str, float] = {}
    for n, v in zip(_FREE, x, strict=False):
        lo, hi = _BOUNDS.get(n, (0.0, 1e6))
        vals[n] = min(max(v, lo), hi)
    factors = tuple((a, min(max(x[len(_FREE) + i], 0.2), 5.0)) for i, a in enumerate(archs))
    factors = ((REFERENCE_ARCH, 1.0), *factors)
    return replace(c, eager_layer_factor=factors, **vals)  # type: ignore[arg-type]


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (small dense systems)."""
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[piv][col]) < 1e-300:
            continue
        m[col], m[piv] = m[piv], m[col]
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            if f:
                for k in range(col, n + 1):
                    m[r][k] -= f * m[col][k]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        if abs(m[r][r]) < 1e-300:
            continue
        x[r] = (m[r][n] - sum(m[r][k] * x[k] for k in range(r + 1, n))) / m[r][r]
    return x


def residuals(c: LatencyCoefficients, obs: Sequence[LatencyObservation]) -> list[float]:
    """log(predicted / measured) per observation."""
    return [math.log(max(step_ms(c, o.target, o.step), 1e-9) / o.measured_ms) for o in obs]


def fit_latency(
    obs: Sequence[LatencyObservation], start: LatencyCoefficients, iterations: int = 60, scale: float = 0.05
) -> LatencyCoefficients:
    """Levenberg-Marquardt on log(predicted / measured) with a soft-L1 loss (robust to the odd
    noisy point), numeric Jacobian; the eager factor of every non-reference architecture is fitted
    with the rest. Pure Python: a few seconds for a thousand points."""
    archs = sorted({o.target.architecture for o in obs} - {REFERENCE_ARCH})
    x = _pack(start, archs)
    lam = 1e-2

    def loss(xv: list[float]) -> tuple[float, list[float], LatencyCoefficients]:
        c = _unpack(start, xv, archs)
        r = residuals(c, obs)
        return sum(2 * scale**2 * (math.sqrt(1 + (ri / scale) ** 2) - 1) for ri in r), r, c

    cur, r, _ = loss(x)
    for _ in range(iterations):
        # IRLS weights of the soft-L1 loss.
        w = [1.0 / math.sqrt(1 + (ri / scale) ** 2) for ri in r]
        jac: list[list[float]] = []
        for k in range(len(x)):
            h = max(abs(x[k]) * 1e-4, 1e-7)
            xk = x[:]
            xk[k] += h
            rk = residuals(_unpack(start, xk, archs), obs)
            jac.append([(a - b) / h for a, b in zip(rk, r, strict=True)])
        p = len(x)
        jtj = [[sum(w[i] * jac[a][i] * jac[b][i] for i in range(len(r))) for b in range(p)] for a in range(p)]
        jtr = [sum(w[i] * jac[a][i] * r[i] for i in range(len(r))) for a in range(p)]
        improved = False
        for _try in range(8):
            a = [[jtj[i][j] + (lam * jtj[i][i] if i == j else 0.0) for j in range(p)] for i in range(p)]
            step = _solve(a, [-v for v in jtr])
            xn = [xi + si for xi, si in zip(x, step, strict=True)]
            new, rn, _ = loss(xn)
            if new < cur:
                x, cur, r = xn, new, rn
                lam = max(lam / 3, 1e-7)
                improved = True
                break
            lam *= 4
        if not improved:
            break
    return _unpack(start, x, archs)


def errors(c: LatencyCoefficients, obs: Sequence[LatencyObservation]) -> tuple[float, float]:
    """(median |predicted/measured - 1|, share within 10%) over `obs`."""
    from statistics import median  # here: fitting only (the module costs a plan's start-up, issue 18)

    if not obs:
        return 0.0, 0.0
    e = [abs(math.exp(r) - 1) for r in residuals(c, obs)]
    return median(e), sum(1 for x in e if x <= 0.10) / len(e)


def field_names() -> tuple[str, ...]:
    """Every field of LatencyCoefficients (for the data file)."""
    return tuple(f.name for f in fields(LatencyCoefficients))
