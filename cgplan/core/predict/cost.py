"""Predicted graph-pool memory and capture time (the cost model), and its fit from capture reports.

What a capture costs, as measured through NVML on an H200 (docs/cost-model.md has the evidence):

- every CUDA graph instantiates driver-side state: about 0.13 MiB per PIECEWISE piece (a dense
  model's PIECEWISE descriptor is layers + 1 graphs) and a per-layer amount for a FULL graph;
- the graphs of one family and mode share the pool, captured largest first, so only the first
  (largest) graph of each grows the pool; the rest reuse it;
- a FULL graph's pool is dominated by FlashAttention's split-KV accumulators, which vLLM sizes for
  `max_num_splits` (32) splits during capture: 32 x tokens x query width x 4 bytes (fp32);
- the capture phase adds warmup runs' allocations (what vLLM's "took X GiB" also counts).

Coefficients are data (CostCoefficients), fitted by `cost_fit.fit_coefficients` from capture reports and
shipped for the H200; a user can fit their own (`cgplan calibrate`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from cgplan.core.model.modes import GPU_NAME_TO_PLATFORM
from cgplan.core.model.predictions import CostDomain, CostPrediction, FamilyModeCost, GraphCost
from cgplan.core.model.spec import ModelShape, PlanInput

if TYPE_CHECKING:
    from cgplan.core.model.types import Plan

MIB = 1 << 20
SPLIT_KV_BACKENDS = ("FLASH_ATTN", "FLASH_ATTN_MLA")
"""Backends whose FULL graphs allocate FlashAttention's split-KV accumulators during capture: vLLM's
FlashAttention and FlashAttnMLA metadata builders both set `max_num_splits` to
`flash_attn_max_num_splits_for_cuda_graph` (32) for batches a FULL graph covers, and FA3 then
holds [splits, heads, tokens, value width] fp32 partial outputs (vllm/v1/attention/backends/
flash_attn.py, mla/flashattn_mla.py). A fit measures the term only on these backends."""
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4, "auto": 2}
SPLIT_KV_ACCUM_BYTES = 4
"""FlashAttention's split-KV partial outputs are fp32."""
FA3_SPLIT_MAX_REQS = 992
"""FA3's `mha_fwd` (hopper/flash_api.cpp, `PREPARE_VARLEN_MAX_BATCHES_1CTA`): "disable split for
varlen and >992 batches", so a FULL graph of more requests runs one split and allocates no
accumulator whatever `num_splits` vLLM passes. The batch is requests, not tokens: 1,024 tokens of
1,024 requests hold none, of 256 requests × 4 tokens they hold 32 splits. Measured on the H100
(memory29/fit-llama8b-mns1024-max1024: the 1,024- and 1,008-request graphs add 172 and 0 MiB, the
992-request one 498 MiB); docs/notes/v2-full-accumulator.md reads the source."""


def unsplit_full_graphs(graphs: Iterable[tuple[str, str, int, int | None]]) -> frozenset[tuple[str, int]]:
    """(family, tokens) of the FULL token counts whose every graph has more than
    FA3_SPLIT_MAX_REQS requests, from (family, mode, tokens, requests) per graph: their
    accumulators are never allocated (`CostInput.unsplit_full`)."""
    over: set[tuple[str, int]] = set()
    under: set[tuple[str, int]] = set()
    for family, mode, tokens, reqs in graphs:
        if mode == "FULL":
            (over if reqs is not None and reqs > FA3_SPLIT_MAX_REQS else under).add((family, tokens))
    return frozenset(over - under)


@dataclass(frozen=True)
class CostCoefficients:
    """The fitted constants of the cost model for one GPU kind (all memory in MiB)."""

    gpu: str
    """GPU the coefficients were measured on, e.g. "H200"."""
    measured_with: str
    """Software they were measured with, in words (vLLM release, torch, attention backend)."""
    exec_mib_per_piece: float
    """Driver-side memory of one PIECEWISE piece (one instantiated graph of a compiled piece)."""
    exec_mib_per_full_graph: float
    exec_mib_per_full_layer: float
    piecewise_pool_base_mib: float
    piecewise_pool_per_activation: float
    """Pool of the largest target PIECEWISE graph per MiB of its activation (tokens x hidden x dtype)."""
    full_pool_base_mib_v1: float
    full_pool_base_mib_v2: float
    """Pool of the largest target FULL graph beyond the split-KV accumulators, per model runner."""
    drafter_piecewise_pool_base_mib: float
    drafter_piecewise_pool_per_activation: float
    warmup_mib_v1: float
    warmup_mib_v2: float
    warmup_mib_drafter: float
    """Capture-phase allocations outside the graph sections (warmup runs), per runner, plus a drafter."""
    capture_ms_per_piece: float
    capture_ms_per_full_graph: float
    capture_ms_per_full_layer: float
    capture_overhead_s: float
    """Capture-phase wall time outside the graph sections (warmups, synchronisation)."""
    band_ratio: tuple[float, float]
    """Lowest and highest measured/predicted ratio over the fitted reports: a prediction P is shown
    with the band [P x low, P x high] (asymmetric: the allocator can only ever add segments)."""
    split_kv_splits: int = 32
    """vLLM's FlashAttention `max_num_splits` during CUDA-graph capture."""
    split_kv_backends: tuple[str, ...] = ("FLASH_ATTN",)
    """Attention backends whose FULL graphs carry the split-KV accumulators (what was measured)."""
    hidden_size_range: tuple[int, int] = (2048, 5120)
    """Target widths the fit saw; outside them the prediction is flagged as an extrapolation."""
    fitted_on: tuple[str, ...] = ()
    """Names of the capture reports the coefficients were fitted on."""
    fitted_dtypes: tuple[str, ...] = ("bfloat16",)
    """Checkpoint dtypes of the fitted targets (no quantised model was measured)."""
    fitted_model_kinds: tuple[str, ...] = ("dense",)
    """Layer kinds of the fitted targets: "dense", "moe", "mla"."""
    validated_tensor_parallel_max: int = 2
    """Largest TP whose per-rank figures were checked against captures (held-out TP=2 runs,
    benchmarks/results/h200/tp2); above it the attention-only TP scaling is an extrapolation."""
    exec_mib_per_shared_expert_layer: float = 0.0
    """Extra graph state per MoE layer with shared experts, in every graph that holds the layer:
    the shared MLP's kernels (gate_up GEMM, SiLU-and-mul, down GEMM, add) are more graph nodes.
    0 where the fit saw no such layer (the dense set)."""
    piecewise_pool_per_dense_mlp_activation: float = 0.0
    """Largest target PIECEWISE pool per MiB of an MoE model's dense-layer gate_up output (tokens x
    2 x intermediate_size / TP x dtype): the widest tensor of its first pieces. 0 where the fit
    saw no MoE model with dense layers."""
    drafter_in_target_pool: bool = False
    """The fit saw no drafter: on the V1 runner a drafter's PIECEWISE graphs are predicted as
    sharing the target's pool (V1 captures every graph into one global pool,
    compilation/cuda_graph.py), growing it only beyond what the target's largest PIECEWISE graph
    reserved; on V2 they keep a pool of their own with the target's terms."""
    routed_experts_range: tuple[int, int] = (0, 0)
    """Routed-expert counts of the fitted MoE targets ((0, 0): no MoE target was fitted)."""
    fitted_model_runners: tuple[str, ...] = ("v1", "v2")
    """Model runners the fit measured (the other's FULL-pool base and warmups are then copies)."""
    piecewise_pool_small_mib: float = 0.0
    """Pool of the largest target PIECEWISE graph when every tensor of its pieces is a small
    allocation (`SMALL_ALLOCATION_MIB`): PyTorch's caching allocator serves those from
    2 MiB blocks, not the 20 MiB segments behind `piecewise_pool_base_mib` (measured 2-4 MiB at
    16-32 tokens, benchmarks/results/h200/memory29). Used only where `fitted_regimes` names
    "small_piecewise_pool"."""
    full_alone_pool_per_piecewise: float = 0.0
    """V1 with no target PIECEWISE graph (cudagraph_mode FULL_DECODE_ONLY or FULL): V1 captures
    into one global pool, and in FULL_AND_PIECEWISE the FULL graphs reuse the intermediates the
    PIECEWISE graphs reserved; alone, the first FULL graph reserves them itself. This is that
    extra, per MiB of what the PIECEWISE pool of its size would be. Used only where
    `fitted_regimes` names "full_without_piecewise_v1"."""
    full_pool_base_mib_v2_small: float = 0.0
    """The V2 FULL base (`full_pool_base_mib_v2`) when the largest target batch holds only small
    allocations (the `small_piecewise_pool` regime: measured 48-50 MiB where 56-61 is the rule); 0:
    not measured (the V2 base is used)."""
    warmup_mib_small_v2: float = 0.0
    """V2's capture-phase allocations outside the graph sections when the largest target batch
    holds only small allocations (the `small_piecewise_pool` regime); 0: not measured (the V2
    figure is used)."""
    fitted_regimes: tuple[str, ...] = ()
    """Allocator regimes the fit measured (REGIMES); a plan in a regime not named here keeps the
    other terms and gets the wider band."""
    largest_graph_tokens_range: tuple[int, int] = (0, 0)
    """The smallest and the largest of the fitted reports' largest graphs, in tokens: the pool
    terms (activations, split-KV accumulators) are read off each ladder's largest graphs, so a plan
    whose largest graph lies outside extrapolates them (an 8B ladder to 2,048 tokens from fits that
    reach 1,024). (0, 0): not recorded (a set fitted before the range was kept): every plan is
    outside."""
    capture_time_basis: str = "capture"
    """What the per-graph capture-time terms (`capture_ms_per_*`) were fitted on: "capture", the
    graph's capture call alone, the warmup runs before it left to `capture_overhead_s`; or
    "window", the graph's warmup runs and capture together (what each capture size adds to the
    capture phase), `capture_overhead_s` then being the phase's fixed rest. The fit keeps the basis
    with the narrower measured/predicted band over its reports: on the dense set the window (a
    constant overhead priced an 8-graph ladder at 2.8 s where it took 0.95 s), on the MoE/MLA set the
    capture call (Triton's fused-MoE JIT compiles in whichever warmup first meets a token count:
    a fixed cost, not a per-graph one)."""
    capture_overhead_s_v1: float | None = None
    """`capture_overhead_s` of model runner V1 where the fit measured it apart (None: the same)."""
    capture_band_ratio: tuple[float, float] = (0.0, 0.0)
    """Lowest and highest measured/predicted capture-phase wall time over the fitted reports: the
    capture-time figure's band, as `band_ratio` is the memory figure's. (0, 0): not recorded (a set
    fitted before it was kept): the figure is shown without a band and says so."""


CAPTURE_TIME_BASES = ("capture", "window")
"""`CostCoefficients.capture_time_basis`'s values."""
SMALL_ALLOCATION_MIB = 0.5
"""The widest activation (bf16) of a piece at which its graph still held only small allocations.
PyTorch's caching allocator serves requests up to 1 MiB (kSmallSize) from 2 MiB blocks and larger
ones from 20 MiB segments; measured, a piece whose widest activation is 0.5 MiB or less (3B at 16
tokens, 8B at 8, a 256-wide model at 64, MoE at 16-32) held 0-4 MiB, and one at 1.0 MiB (the
256-wide model at 510 tokens) already a 20 MiB segment: its intermediates reach past the widest
activation (benchmarks/results/h200/memory29, tiny-*-vllm.json)."""
REGIMES = {
    "small_piecewise_pool": "a ladder whose largest graph holds only small allocations (8-64 tokens)",
    "full_without_piecewise_v1": "V1 FULL graphs without PIECEWISE graphs (FULL_DECODE_ONLY / FULL)",
}
"""Regimes the cost model has a term for only once a fit measured them (CostCoefficients.fitted_regimes)."""


OUTSIDE_BAND_FACTOR = 2.0
"""How much wider the band gets outside the fitted domain, each way: [P x low / 2, P x high x 2]
(docs/cost-model.md). Used where the model's terms still apply but were not measured: another
GPU, dtype, TP above the validated maximum, a width outside the fitted range, PP/DP/DCP/EP/LoRA/
DBO (per-rank shards are modelled, their allocator behaviour was not measured)."""
UNMEASURED_METHODS = ("dflash", "dspark", "suffix")
"""Speculative methods no capture of which was measured: the band is widened (their graphs are
FULL/PIECEWISE graphs of the draft's or the target's shape, as the terms assume)."""
NO_FIGURE_KINDS = ("moe", "mla")
"""Model kinds the model has no term for: the figure is withheld. An MoE+MLA deployment reported a
9.64 GiB pool where the dense terms give 478 MiB (issue 16): no band would be honest."""


def model_kinds(shape: ModelShape) -> tuple[str, ...]:
    """The layer kinds of a model: dense, or its MoE / MLA parts."""
    kinds = tuple(k for k, on in (("moe", shape.is_moe), ("mla", shape.use_mla)) if on)
    return kinds or ("dense",)


def _experts_text(c: CostCoefficients) -> str:
    lo, hi = c.routed_experts_range
    if not hi:
        return ""
    return f", {lo} routed experts" if lo == hi else f", {lo}..{hi} routed experts"


def largest_graph_tokens(graphs: Mapping[str, Sequence[tuple[str, int]]]) -> int:
    """The widest graph of a plan or report, in tokens, over every family and mode (0: none)."""
    return max((tokens for items in graphs.values() for _, tokens in items), default=0)


def _graphs_text(c: CostCoefficients) -> str:
    lo, hi = c.largest_graph_tokens_range
    return f", largest graph {lo}..{hi} tokens" if hi else ", largest graph: range not recorded"


def cost_domain(
    inp: CostInput, c: CostCoefficients, regimes: tuple[str, ...] = (), largest_tokens: int | None = None
) -> CostDomain:
    """The domain check of one prediction (every dimension the fit fixed); `regimes`: the
    allocator regimes (REGIMES) the plan's graphs are in; `largest_tokens`: its widest graph
    (`largest_graph_tokens`; None: not checked)."""
    lo, hi = c.hidden_size_range
    fitted = (
        f"{c.gpu}, {'/'.join(c.fitted_dtypes)}, {'/'.join(c.split_kv_backends)}, "
        f"TP <= {c.validated_tensor_parallel_max}, {'/'.join(c.fitted_model_kinds)} models, "
        f"hidden size {lo}..{hi}{_experts_text(c)}{_graphs_text(c)}, PP/DP/DCP 1, no EP/LoRA/DBO, "
        "unquantised weights, kv_cache_dtype auto"
    )
    widen: list[str] = []
    withhold: list[str] = []
    fitted_platform = GPU_NAME_TO_PLATFORM.get(c.gpu.lower())
    if inp.gpu is not None and (fitted_platform is None or inp.gpu != fitted_platform.value):
        # a platform family: H100 and H200 both read "hopper" and count as the fitted GPU's family
        widen.append(f"GPU platform {inp.gpu} (fitted on {c.gpu})")
    elif inp.gpu_name and inp.gpu_name != c.gpu:
        widen.append(f"GPU {inp.gpu_name} (fitted on {c.gpu})")
    if inp.target.dtype not in c.fitted_dtypes:
        widen.append(f"dtype {inp.target.dtype}")
    if inp.target.quantization:
        widen.append(f"quantization {inp.target.quantization} (fitted: unquantised weights)")
    if inp.kv_cache_dtype not in ("auto", inp.target.dtype):
        widen.append(f"kv_cache_dtype {inp.kv_cache_dtype} (fitted: auto)")
    if inp.tensor_parallel_size > c.validated_tensor_parallel_max:
        widen.append(f"TP {inp.tensor_parallel_size} > {c.validated_tensor_parallel_max}")
    if not lo <= inp.target.hidden_size <= hi:
        widen.append(f"hidden size {inp.target.hidden_size} outside {lo}..{hi}")
    if inp.model_runner not in c.fitted_model_runners:
        widen.append(f"model runner {inp.model_runner} (fitted: {'/'.join(c.fitted_model_runners)})")
    e_lo, e_hi = c.routed_experts_range
    experts = inp.target.num_routed_experts
    if e_hi and inp.target.is_moe and not e_lo <= experts <= e_hi:
        widen.append(f"{experts} routed experts outside {e_lo}..{e_hi}")
    for name, size in (("PP", inp.pipeline_parallel_size), ("DP", inp.data_parallel_size)):
        if size > 1:
            widen.append(f"{name} {size}")
    if inp.decode_context_parallel_size > 1:
        widen.append(f"DCP {inp.decode_context_parallel_size}")
    widen += [name for name, on in inp.features if on]
    widen += [f"{REGIMES[r]}: not measured" for r in regimes if r not in c.fitted_regimes]
    g_lo, g_hi = c.largest_graph_tokens_range
    if largest_tokens is not None and not g_lo <= largest_tokens <= g_hi:
        fitted_graphs = f"fitted: {g_lo}..{g_hi}" if g_hi else "the fitted range is not recorded"
        widen.append(f"largest graph {largest_tokens} tokens ({fitted_graphs})")
    kinds = [k for k in model_kinds(inp.target) if k not in c.fitted_model_kinds]
    if kinds:
        withhold.append(f"{'+'.join(kinds).upper()} layers (fitted: {'/'.join(c.fitted_model_kinds)} only)")
    withhold += inp.withheld
    if inp.attention_backend not in c.split_kv_backends:
        withhold.append(
            f"attention backend {inp.attention_backend} (measured: {'/'.join(c.split_kv_backends)})"
        )
    outside = tuple(withhold + widen)
    return CostDomain(
        fitted=fitted,
        outside=outside,
        band_factor=OUTSIDE_BAND_FACTOR if outside else 1.0,
        figure=not withhold,
    )


def activation_mib(num_tokens: int, shape: ModelShape) -> float:
    """Size of one hidden-state activation of `num_tokens` tokens."""
    return num_tokens * shape.hidden_size * DTYPE_BYTES.get(shape.dtype, 2) / MIB


def shared_expert_layers(shape: ModelShape) -> int:
    """MoE layers with shared experts among the shape's layers (a PP stage or an MTP head holds
    fewer layers than the checkpoint)."""
    return max(0, min(shape.moe_shared_expert_layers, shape.num_hidden_layers))


def dense_mlp_mib(num_tokens: int, shape: ModelShape, tensor_parallel_size: int) -> float:
    """An MoE model's dense-layer gate_up output of `num_tokens` tokens (merged gate and up
    projections, 2 x intermediate_size, column-sharded by TP); 0 without dense layers. The routed
    experts' own intermediates (fused_moe's workspace13/workspace2/output) are not in any graph
    pool: vLLM 0.26.0 takes them from its WorkspaceManager, grown by the profile run and locked
    before capture (fused_moe/modular_kernel.py, v1/worker/workspace.py)."""
    if shape.moe_dense_layers <= 0:
        return 0.0
    width = 2 * shape.intermediate_size // max(1, tensor_parallel_size)
    return num_tokens * width * DTYPE_BYTES.get(shape.dtype, 2) / MIB


def largest_piece_tensor_mib(num_tokens: int, shape: ModelShape, tensor_parallel_size: int) -> float:
    """The widest tensor a compiled piece of `num_tokens` tokens allocates: the hidden state, the
    fused QKV output, or a dense MLP's gate_up output (a dense model's, or an MoE model's dense
    layers'; routed experts work in vLLM's WorkspaceManager, outside the pool)."""
    tp = max(1, tensor_parallel_size)
    qkv = (shape.num_attention_heads + 2 * shape.num_key_value_heads) * shape.head_dim // tp
    mlp = 0 if shape.is_moe else 2 * shape.intermediate_size // tp
    width = max(shape.hidden_size, qkv, mlp)
    return max(
        num_tokens * width * DTYPE_BYTES.get(shape.dtype, 2) / MIB, dense_mlp_mib(num_tokens, shape, tp)
    )


def small_piecewise_pool(num_tokens: int, shape: ModelShape, tensor_parallel_size: int) -> bool:
    """Whether a PIECEWISE graph of `num_tokens` holds only small allocations (its widest activation
    at most SMALL_ALLOCATION_MIB)."""
    return largest_piece_tensor_mib(num_tokens, shape, tensor_parallel_size) <= SMALL_ALLOCATION_MIB


def accumulator_width(shape: ModelShape) -> int:
    """Width of one token's split-KV partial output over all query heads: heads x head_dim, or for
    MLA decode (FlashAttnMLA: the latent value, `headdim_v = kv_lora_rank`) heads x kv_lora_rank."""
    value_width = shape.kv_lora_rank if shape.use_mla and shape.kv_lora_rank else shape.head_dim
    return shape.num_attention_heads * value_width


def split_kv_mib(num_tokens: int, shape: ModelShape, tensor_parallel_size: int, splits: int) -> float:
    """FlashAttention's split-KV accumulators for a FULL graph of `num_tokens` (query heads are
    sharded across tensor-parallel ranks)."""
    query_width = accumulator_width(shape) // max(1, tensor_parallel_size)
    return splits * num_tokens * query_width * SPLIT_KV_ACCUM_BYTES / MIB


def drafter_shape(target: ModelShape, draft: ModelShape | None, method: str | None) -> ModelShape:
    """The model whose graphs the drafter families capture: the draft model when known, else a
    one-layer head of the target's width (EAGLE and MTP heads are one layer each)."""
    if draft is not None:
        return draft
    layers = target.num_nextn_predict_layers if method == "mtp" and target.num_nextn_predict_layers else 1
    # an MTP layer is a routed-expert layer (DeepSeek-V3's MTP block), never a dense first layer
    return replace(target, num_hidden_layers=layers, moe_dense_layers=0)


def _exec_mib(c: CostCoefficients, mode: str, pieces: int, layers: int, shared_layers: int = 0) -> float:
    shared = c.exec_mib_per_shared_expert_layer * shared_layers
    if mode == "PIECEWISE":
        return c.exec_mib_per_piece * pieces + shared
    return c.exec_mib_per_full_graph + c.exec_mib_per_full_layer * layers + shared


def capture_overhead_s(c: CostCoefficients, model_runner: str) -> float:
    """The capture phase's time outside the per-graph terms, for this runner."""
    if model_runner == "v1" and c.capture_overhead_s_v1 is not None:
        return c.capture_overhead_s_v1
    return c.capture_overhead_s


def capture_band_s(c: CostCoefficients, capture_s: float, band_factor: float) -> tuple[float, float] | None:
    """The capture-time figure's band (None where the set recorded none), widened as the memory
    band is outside the validated domain."""
    low, high = c.capture_band_ratio
    if high <= 0:
        return None
    return (capture_s * low / band_factor, capture_s * high * band_factor)


def _capture_ms(c: CostCoefficients, mode: str, pieces: int, layers: int) -> float:
    if mode == "PIECEWISE":
        return c.capture_ms_per_piece * pieces
    return c.capture_ms_per_full_graph + c.capture_ms_per_full_layer * layers


@dataclass(frozen=True)
class CostInput:
    """What the cost model needs besides the graphs: shapes, parallelism, runner, backend."""

    target: ModelShape
    drafter: ModelShape
    model_runner: str
    tensor_parallel_size: int = 1
    attention_backend: str = "FLASH_ATTN"
    gpu: str | None = None
    """The GPU platform family the config is planned for ("hopper", ...; None: the coefficients')."""
    pipeline_parallel_size: int = 1
    """Each stage holds layers / PP of the target: per-rank graphs have that many pieces."""
    data_parallel_size: int = 1
    decode_context_parallel_size: int = 1
    features: tuple[tuple[str, bool], ...] = ()
    """Other features the fit did not see (name, on): EP, LoRA, DBO."""
    withheld: tuple[str, ...] = ()
    """What the model has no term for in this plan (Plan.cost_withheld): no figure."""
    gpu_name: str = ""
    """The GPU by name where one was given ("": the platform family only)."""
    kv_cache_dtype: str = "auto"
    """`cache_config.cache_dtype`: a KV cache in another dtype than the model's runs other
    attention kernels (fp8 KV: FA3's fp8 path, a descale per layer), which no capture measured."""
    unsplit_full: frozenset[tuple[str, int]] = frozenset()
    """(family, tokens) of FULL graphs FA3 runs without split-KV accumulators: more than
    FA3_SPLIT_MAX_REQS requests (`unsplit_full_graphs`)."""


def predict_cost(
    graphs: Mapping[str, Sequence[tuple[str, int]]],
    inp: CostInput,
    c: CostCoefficients,
) -> CostPrediction:
    """Predict the capture cost of `graphs` (family → (mode, num_tokens) in capture order).

    >>> from cgplan.core.model.spec import ModelShape
    >>> c = CostCoefficients("H200", "test", 0.1, 0.0, 0.05, 10.0, 1.0, 0.0, 50.0, 5.0, 1.0,
    ...                      30.0, 50.0, 60.0, 1.0, 10.0, 0.5, 1.0, (0.95, 1.1))
    >>> p = predict_cost({"target": [("FULL", 8), ("FULL", 4)]}, CostInput(
    ...     ModelShape(num_hidden_layers=2, hidden_size=64, num_attention_heads=1, head_dim=64),
    ...     ModelShape(), "v2"), c)
    >>> [round(g.pool_mib, 3) for g in p.graphs], round(p.total_mib, 3)
    ([50.062, 0.0], 100.263)
    """
    costs = [GraphCost(*g) for g in _graph_costs(graphs, inp, c)]
    groups: dict[tuple[str, str], list[GraphCost]] = {}
    for g in costs:
        groups.setdefault((g.family, g.mode), []).append(g)
    by_fm = tuple(
        FamilyModeCost(
            f,
            m,
            len(gs),
            sum(g.pool_mib for g in gs),
            sum(g.exec_mib for g in gs),
            sum(g.capture_ms for g in gs),
        )
        for (f, m), gs in groups.items()
    )
    families = set(graphs) if costs else set()
    warmup = 0.0
    if costs:
        warmup = _warmup(graphs, inp, c)
        if families - {"target"}:
            warmup += c.warmup_mib_drafter
    total = warmup + sum(g.pool_mib + g.exec_mib for g in costs)
    capture_s = (
        (capture_overhead_s(c, inp.model_runner) + sum(g.capture_ms for g in costs) / 1000) if costs else 0.0
    )
    domain = (
        cost_domain(inp, c, graph_regimes(graphs, inp), largest_graph_tokens(graphs))
        if costs
        else CostDomain(fitted="")
    )
    return CostPrediction(
        graphs=tuple(costs),
        by_family_mode=by_fm,
        warmup_mib=warmup,
        total_mib=total,
        low_mib=total * c.band_ratio[0] / domain.band_factor,
        high_mib=total * c.band_ratio[1] * domain.band_factor,
        capture_s=capture_s,
        capture_band_s=capture_band_s(c, capture_s, domain.band_factor) if costs else None,
        gpu=c.gpu,
        caveats=_caveats(inp, c, bool(costs)),
        domain=domain,
    )


def _graph_costs(
    graphs: Mapping[str, Sequence[tuple[str, int]]], inp: CostInput, c: CostCoefficients
) -> Iterator[tuple[str, str, int, float, float, float]]:
    """`GraphCost`'s fields of every graph of `graphs`, in capture order (`predict_cost`)."""
    full_pool_tokens = 0
    any_full = False  # a FULL graph was captured before (its accumulators may be none: > 992 requests)
    target_piecewise_mib = 0.0
    for family, items in graphs.items():
        shape = inp.target if family == "target" else inp.drafter
        if family == "target" and inp.pipeline_parallel_size > 1:
            # each PP stage compiles and captures only its own layers (per-rank shard)
            layers = -(-shape.num_hidden_layers // inp.pipeline_parallel_size)
            shape = replace(shape, num_hidden_layers=layers)
        pieces = shape.num_hidden_layers + 1
        alone = family == "target" and _full_alone(items, inp)
        seen: set[str] = set()
        per_mode: dict[str, tuple[float, float]] = {}  # execution and capture cost: the mode's alone
        for mode, tokens in items:
            pool = 0.0
            if mode == "FULL" and mode in seen and inp.unsplit_full:
                # a later FULL graph with accumulators (992 requests or fewer) after ones without:
                # the pool grows by what its accumulators exceed of those held so far
                pool = _pool_mib(
                    c, family, mode, tokens, shape, inp, full_pool_tokens, 0.0, alone, later=True
                )
                full_pool_tokens = max(full_pool_tokens, _split_kv_equivalent(tokens, shape, inp, family))
            elif mode not in seen:
                seen.add(mode)
                # a drafter's first FULL graph comes after the target's FULL graphs, if any
                later = mode == "FULL" and family != "target" and any_full
                pool = _pool_mib(
                    c, family, mode, tokens, shape, inp, full_pool_tokens, target_piecewise_mib, alone, later
                )
                if mode == "FULL":
                    any_full = True
                    full_pool_tokens = max(full_pool_tokens, _split_kv_equivalent(tokens, shape, inp, family))
                elif family == "target":
                    target_piecewise_mib = max(target_piecewise_mib, pool)
            costs = per_mode.get(mode)
            if costs is None:
                costs = per_mode[mode] = (
                    _exec_mib(c, mode, pieces, shape.num_hidden_layers, shared_expert_layers(shape)),
                    _capture_ms(c, mode, pieces, shape.num_hidden_layers),
                )
            yield family, mode, tokens, pool, costs[0], costs[1]


class CostTotals:
    """A prediction's two totals (`predict_cost`'s `total_mib` and `capture_s`, the same floats)
    and its domain, without its per-graph and per-section parts: what the fix search holds a
    candidate to and prints of it."""

    __slots__ = ("capture_s", "domain", "high_mib", "low_mib", "total_mib")

    def __init__(
        self,
        total_mib: float,
        capture_s: float,
        domain: CostDomain | None = None,
        low_mib: float | None = None,
        high_mib: float | None = None,
    ) -> None:
        self.total_mib = total_mib
        self.capture_s = capture_s
        self.domain = domain if domain is not None else CostDomain(fitted="")
        self.low_mib = total_mib if low_mib is None else low_mib
        self.high_mib = total_mib if high_mib is None else high_mib


def predict_totals(
    graphs: Mapping[str, Sequence[tuple[str, int]]], inp: CostInput, c: CostCoefficients
) -> CostTotals:
    """`predict_cost(graphs, inp, c)`'s total_mib, capture_s, band and domain: the same sums in
    the same order, without building a GraphCost per graph (a fix search prices every candidate,
    issue 18)."""
    parts = list(_graph_costs(graphs, inp, c))
    if not parts:
        return CostTotals(0.0, 0.0)
    warmup = _warmup(graphs, inp, c)
    if set(graphs) - {"target"}:
        warmup += c.warmup_mib_drafter
    total = warmup + sum(g[3] + g[4] for g in parts)
    domain = cost_domain(inp, c, graph_regimes(graphs, inp), largest_graph_tokens(graphs))
    return CostTotals(
        total,
        capture_overhead_s(c, inp.model_runner) + sum(g[5] for g in parts) / 1000,
        domain,
        total * c.band_ratio[0] / domain.band_factor,
        total * c.band_ratio[1] * domain.band_factor,
    )


def _warmup(graphs: Mapping[str, Sequence[tuple[str, int]]], inp: CostInput, c: CostCoefficients) -> float:
    # capture-phase allocations outside the graph sections: V2's warmups hold a 20 MiB segment
    # unless every tensor of its largest batch is a small allocation (a ladder to 8-64 tokens:
    # 34 MiB measured where 56 is the rule; V1 measured 34-36 either way)
    if inp.model_runner == "v1":
        return c.warmup_mib_v1
    sizes = [t for m, t in graphs.get("target", ()) if m == "PIECEWISE"] or [
        t for _, t in graphs.get("target", ())
    ]
    small = (
        "small_piecewise_pool" in c.fitted_regimes
        and c.warmup_mib_small_v2 > 0
        and bool(sizes)
        and small_piecewise_pool(max(sizes), inp.target, inp.tensor_parallel_size)
    )
    return c.warmup_mib_small_v2 if small else c.warmup_mib_v2


def _full_alone(items: Sequence[tuple[str, int]], inp: CostInput) -> bool:
    # V1's one global pool without a PIECEWISE graph of the target to share intermediates with
    return inp.model_runner == "v1" and not any(m == "PIECEWISE" for m, _ in items)


def graph_regimes(graphs: Mapping[str, Sequence[tuple[str, int]]], inp: CostInput) -> tuple[str, ...]:
    """The allocator regimes (REGIMES) the target's graphs are in."""
    items = graphs.get("target", ())
    out = []
    pw = [t for m, t in items if m == "PIECEWISE"]
    if pw and small_piecewise_pool(max(pw), inp.target, inp.tensor_parallel_size):
        out.append("small_piecewise_pool")
    if any(m == "FULL" for m, _ in items) and _full_alone(items, inp):
        out.append("full_without_piecewise_v1")
    return tuple(out)


def _piecewise_need(c: CostCoefficients, tokens: int, shape: ModelShape, inp: CostInput) -> float:
    # the largest target PIECEWISE graph's pool: small allocations only, or 20 MiB segments on
    if "small_piecewise_pool" in c.fitted_regimes and small_piecewise_pool(
        tokens, shape, inp.tensor_parallel_size
    ):
        return c.piecewise_pool_small_mib
    return (
        c.piecewise_pool_base_mib
        + c.piecewise_pool_per_activation * activation_mib(tokens, shape)
        + c.piecewise_pool_per_dense_mlp_activation * dense_mlp_mib(tokens, shape, inp.tensor_parallel_size)
    )


def _split_kv_equivalent(tokens: int, shape: ModelShape, inp: CostInput, family: str) -> int:
    # Token-width product of a FULL graph's accumulators: a later FULL graph fits in the freed
    # accumulators of an earlier one when this is no larger. None above 992 requests.
    if (family, tokens) in inp.unsplit_full:
        return 0
    return tokens * accumulator_width(shape)


def _pool_mib(
    c: CostCoefficients,
    family: str,
    mode: str,
    tokens: int,
    shape: ModelShape,
    inp: CostInput,
    earlier_full: int,
    target_piecewise_mib: float = 0.0,
    alone: bool = False,
    later: bool = False,
) -> float:
    if mode == "PIECEWISE":
        # V1's one global pool (the V2 runner's drafters measured their own pools: dense set)
        shared_pool = c.drafter_in_target_pool and inp.model_runner == "v1"
        if family == "target" or shared_pool:
            need = _piecewise_need(c, tokens, shape, inp)
            # one pool: a drafter's graphs reuse what the target's largest graph reserved
            return need if family == "target" else max(0.0, need - target_piecewise_mib)
        return c.drafter_piecewise_pool_base_mib + c.drafter_piecewise_pool_per_activation * activation_mib(
            tokens, shape
        )
    splits = c.split_kv_splits if inp.attention_backend in c.split_kv_backends else 0
    if (family, tokens) in inp.unsplit_full:
        splits = 0
    if not later:
        base = c.full_pool_base_mib_v1 if inp.model_runner == "v1" else c.full_pool_base_mib_v2
        if (
            inp.model_runner == "v2"
            and family == "target"
            and c.full_pool_base_mib_v2_small > 0
            and "small_piecewise_pool" in c.fitted_regimes
            and small_piecewise_pool(tokens, shape, inp.tensor_parallel_size)
        ):
            base = c.full_pool_base_mib_v2_small
        if alone and family == "target" and "full_without_piecewise_v1" in c.fitted_regimes:
            base += c.full_alone_pool_per_piecewise * _piecewise_need(c, tokens, shape, inp)
        return base + split_kv_mib(tokens, shape, inp.tensor_parallel_size, splits)
    # A drafter's FULL graphs come after the target's: the pool already holds accumulators
    # that large, freed at the end of the target's capture, and only an excess grows it.
    excess = _split_kv_equivalent(tokens, shape, inp, family) - earlier_full
    if excess <= 0:
        return 0.0
    return splits * excess * SPLIT_KV_ACCUM_BYTES / max(1, inp.tensor_parallel_size) / MIB


def _caveats(inp: CostInput, c: CostCoefficients, any_graphs: bool) -> tuple[str, ...]:
    if not any_graphs:
        return ()
    out = []
    lo, hi = c.hidden_size_range
    if not lo <= inp.target.hidden_size <= hi:
        out.append(f"hidden size {inp.target.hidden_size} is outside the fitted {lo}..{hi}")
    unfitted = [k for k in model_kinds(inp.target) if k != "dense" and k not in c.fitted_model_kinds]
    if unfitted:
        names = {"moe": "MoE", "mla": "MLA"}
        out.append(
            f"{'/'.join(names[k] for k in unfitted)} layers were not in the fit (dense-layer terms used)"
        )
    if inp.attention_backend not in c.split_kv_backends:
        out.append(f"attention backend {inp.attention_backend} was not measured (FULL pools are a guess)")
    if inp.tensor_parallel_size > 1:
        out.append("tensor parallel: per-rank figures scale the attention term only")
    return tuple(out)


def cost_input_for(
    inp: PlanInput,
    model_runner: str,
    attention_backend: str,
    gpu: str | None = None,
    withheld: tuple[str, ...] = (),
) -> CostInput:
    """The cost model's view of a planned config."""
    spec = inp.speculative
    method = spec.method if spec else ""
    return CostInput(
        target=inp.model,
        drafter=drafter_shape(inp.model, spec.draft_model if spec else None, spec.method if spec else None),
        model_runner=model_runner,
        tensor_parallel_size=inp.tensor_parallel_size,
        attention_backend=attention_backend,
        gpu=gpu,
        pipeline_parallel_size=inp.pipeline_parallel_size,
        data_parallel_size=inp.data_parallel_size,
        decode_context_parallel_size=inp.decode_context_parallel_size,
        features=(
            ("EP", inp.enable_expert_parallel),
            ("LoRA", inp.enable_lora),
            ("DBO/microbatching", inp.use_ubatching),
            # no capture of these drafters (DFlash/DSpark query graphs) or of suffix decoding was measured
            (f"speculative method {method}", method in UNMEASURED_METHODS),
        ),
        withheld=withheld,
        kv_cache_dtype=inp.kv_cache_dtype,
        gpu_name=inp.gpu_name,
    )


def plan_cost(plan: Plan, inp: PlanInput, c: CostCoefficients) -> CostPrediction:
    """Predict the capture cost of `plan` (made from `inp`) on each rank."""
    graphs = {family: [(g.mode, g.num_tokens) for g in gs] for family, gs in plan.graphs.items()}
    return predict_cost(graphs, _plan_cost_input(plan, inp), c)


def plan_cost_totals(plan: Plan, inp: PlanInput, c: CostCoefficients) -> CostTotals:
    """`plan_cost(plan, inp, c)`'s total_mib and capture_s (`predict_totals`)."""
    graphs = {family: [(g.mode, g.num_tokens) for g in gs] for family, gs in plan.graphs.items()}
    return predict_totals(graphs, _plan_cost_input(plan, inp), c)


def _plan_cost_input(plan: Plan, inp: PlanInput) -> CostInput:
    ci = cost_input_for(inp, plan.model_runner, plan.attention_backend, plan.platform, plan.cost_withheld)
    if inp.max_num_seqs <= FA3_SPLIT_MAX_REQS:
        return ci  # no graph can hold more requests
    unsplit = unsplit_full_graphs(
        (family, g.mode, g.num_tokens, g.num_reqs) for family, gs in plan.graphs.items() for g in gs
    )
    return replace(ci, unsplit_full=unsplit) if unsplit else ci
