"""The cost model's fit: capture reports reduced to observations, least squares, and the check of
a coefficient set against them (`cgplan calibrate`).

Apart from cost.py so that `plan`, which only predicts, does not build these types (issue 26).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from cgplan.core.predict.cost import (
    MIB,
    SPLIT_KV_BACKENDS,
    CostCoefficients,
    CostInput,
    _capture_ms,
    _exec_mib,
    _full_alone,
    _piecewise_need,
    activation_mib,
    dense_mlp_mib,
    largest_graph_tokens,
    model_kinds,
    predict_cost,
    shared_expert_layers,
    small_piecewise_pool,
    split_kv_mib,
)


@dataclass(frozen=True)
class ObservedGraph:
    """One measured graph of a capture report."""

    family: str
    mode: str
    num_tokens: int
    pieces: int
    nvml_bytes: int
    torch_reserved_bytes: int
    capture_ms: float
    num_reqs: int | None = None
    """The requests the graph was captured for (None: any, or a report that does not say)."""
    window_ms: float | None = None
    """The graph's warmup runs and capture together (None: a report that does not say)."""


@dataclass(frozen=True)
class CostObservation:
    """One complete capture report, reduced to what the fit uses."""

    name: str
    inp: CostInput
    graphs: tuple[ObservedGraph, ...]
    capture_nvml_bytes: int
    capture_wall_s: float | None = None
    vllm_estimate_gib: float | None = None
    vllm_took_gib: float | None = None

    def plan_graphs(self) -> dict[str, list[tuple[str, int]]]:
        """The measured graphs as predict_cost takes them."""
        out: dict[str, list[tuple[str, int]]] = {}
        for g in self.graphs:
            out.setdefault(g.family, []).append((g.mode, g.num_tokens))
        return out


@dataclass(frozen=True)
class FitCheck:
    """Prediction against measurement for one report."""

    name: str
    measured_mib: float
    predicted_mib: float
    measured_capture_s: float | None
    predicted_capture_s: float
    vllm_estimate_gib: float | None

    @property
    def error(self) -> float:
        """Relative error of the predicted total."""
        return (self.predicted_mib - self.measured_mib) / self.measured_mib if self.measured_mib else 0.0


class FitError(ValueError):
    """The reports cannot determine the coefficients (too few, or the wrong kind)."""


def _lstsq(rows: Sequence[Sequence[float]], ys: Sequence[float]) -> list[float]:
    """Least squares through the normal equations (a handful of unknowns; stdlib only)."""
    n = len(rows[0])
    a = [[sum(r[i] * r[j] for r in rows) for j in range(n)] + [0.0] for i in range(n)]
    for i in range(n):
        a[i][n] = sum(r[i] * y for r, y in zip(rows, ys, strict=True))
    for i in range(n):
        pivot = max(range(i, n), key=lambda k: abs(a[k][i]))
        a[i], a[pivot] = a[pivot], a[i]
        if abs(a[i][i]) < 1e-12:
            raise FitError("the reports do not vary enough to separate the terms of the cost model")
        for k in range(n):
            if k != i:
                f = a[k][i] / a[i][i]
                a[k] = [x - f * y for x, y in zip(a[k], a[i], strict=True)]
    return [a[i][n] / a[i][i] for i in range(n)]


def _lstsq_non_negative(rows: Sequence[Sequence[float]], ys: Sequence[float]) -> list[float]:
    """Least squares with every coefficient >= 0: a term of memory (or time) a graph adds cannot
    be negative. Where the plain fit gives one below zero (two terms the reports cannot tell apart,
    such as per-graph and per-layer state over models of 4 and 6 layers measured in 2 MiB steps),
    that term is held at 0 and the rest refitted."""
    held: set[int] = set()
    while True:
        keep = [i for i in range(len(rows[0])) if i not in held]
        fitted = _lstsq([[r[i] for i in keep] for r in rows], ys)
        coef = [0.0] * len(rows[0])
        for i, v in zip(keep, fitted, strict=True):
            coef[i] = v
        worst = min(keep, key=lambda i: coef[i])
        if coef[worst] >= 0 or len(keep) == 1:
            return coef
        held.add(worst)


def _groups(obs: CostObservation) -> dict[tuple[str, str], list[ObservedGraph]]:
    out: dict[tuple[str, str], list[ObservedGraph]] = {}
    for g in obs.graphs:
        out.setdefault((g.family, g.mode), []).append(g)
    return out


def _layers(obs: CostObservation, family: str) -> int:
    return (obs.inp.target if family == "target" else obs.inp.drafter).num_hidden_layers


def _shared_layers(obs: CostObservation, family: str) -> int:
    return shared_expert_layers(obs.inp.target if family == "target" else obs.inp.drafter)


def _med(values: Iterable[float], what: str) -> float:
    from statistics import median  # here: fitting only (the module costs a plan's start-up, issue 18)

    vs = list(values)
    if not vs:
        raise FitError(f"no report shows {what}")
    return float(median(vs))


def fit_coefficients(
    observations: Sequence[CostObservation], gpu: str, measured_with: str
) -> tuple[CostCoefficients, tuple[FitCheck, ...]]:
    """Fit every coefficient from complete capture reports; returns them with each report's check.

    Term by term, so that each is pinned by the measurements that show it: graph state from the
    graphs after the first of each family and mode (their pool growth is ~0), pools from each
    family and mode's sum less that state, warmups from the capture phase less the graph sections.
    Medians where a term is one constant, so one allocator outlier does not move the rest.
    """
    if not observations:
        raise FitError("no capture reports to fit")
    ex_rows: list[list[float]] = []
    ex_y: list[float] = []
    t_rows: list[list[float]] = []
    t_y: list[float] = []
    w_y: list[float] = []  # the same graphs' windows (warmups and capture); -1: not reported
    # the shared-expert graph state is a term only where the fit saw such layers (else 0: the
    # column would make the least squares singular)
    with_shared = any(_shared_layers(o, g.family) for o in observations for g in o.graphs)
    for o in observations:
        for (family, mode), gs in _groups(o).items():
            layers = _layers(o, family)
            shared = [float(_shared_layers(o, family))] if with_shared else []
            for g in gs[1:]:
                row = [float(g.pieces), 0.0, 0.0] if mode == "PIECEWISE" else [0.0, 1.0, float(layers)]
                ex_rows.append(row + shared)
                ex_y.append((g.nvml_bytes - g.torch_reserved_bytes) / MIB)
            for g in gs:
                t_rows.append(
                    [float(g.pieces), 0.0, 0.0] if mode == "PIECEWISE" else [0.0, 1.0, float(layers)]
                )
                t_y.append(g.capture_ms)
                w_y.append(g.window_ms if g.window_ms is not None else -1.0)
    if not ex_rows:
        raise FitError("the reports hold no graph measurements")
    per_piece, per_full, per_layer, *per_shared = _lstsq_non_negative(ex_rows, ex_y)
    t_piece, t_full, t_layer = _lstsq_non_negative(t_rows, t_y)
    draft = CostCoefficients(
        gpu, measured_with, per_piece, per_full, per_layer, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        t_piece, t_full, t_layer, 0.0, (1.0, 1.0),
        exec_mib_per_shared_expert_layer=per_shared[0] if per_shared else 0.0,
    )  # fmt: skip

    def exec_of(o: CostObservation, family: str, mode: str, g: ObservedGraph) -> float:
        return _exec_mib(draft, mode, g.pieces, _layers(o, family), _shared_layers(o, family))

    # an MoE model's dense first layers: their gate_up output is a pool term only where seen
    with_dense_mlp = any(o.inp.target.moe_dense_layers for o in observations)

    pw_rows: list[list[float]] = []
    pw_y: list[float] = []
    dpw_rows: list[list[float]] = []
    dpw_y: list[float] = []
    full_base: dict[str, list[float]] = {"v1": [], "v2": []}
    warm: dict[str, list[float]] = {"v1": [], "v2": []}
    warm_drafter: list[tuple[str, float]] = []
    small_pw: list[float] = []  # target PIECEWISE pools of small allocations only
    warm_small_v2: list[float] = []  # V2 warmups of ladders in that regime
    full_small_v2: list[float] = []  # V2 FULL bases (pool - kv) of graphs in that regime
    alone_full: list[tuple[CostObservation, int, float]] = []  # V1 FULL without PIECEWISE: pool - kv
    for o in observations:
        groups = _groups(o)
        target_items = [(g.mode, g.num_tokens) for g in o.graphs if g.family == "target"]
        for (family, mode), gs in groups.items():
            pool = sum(g.nvml_bytes for g in gs) / MIB - sum(exec_of(o, family, mode, g) for g in gs)
            shape = o.inp.target if family == "target" else o.inp.drafter
            act = activation_mib(gs[0].num_tokens, shape)
            if (
                family == "target"
                and mode == "PIECEWISE"
                and small_piecewise_pool(gs[0].num_tokens, shape, o.inp.tensor_parallel_size)
            ):
                small_pw.append(pool)
            elif family == "target" and mode == "PIECEWISE":
                dense_mlp = dense_mlp_mib(gs[0].num_tokens, shape, o.inp.tensor_parallel_size)
                pw_rows.append([1.0, act] + ([dense_mlp] if with_dense_mlp else []))
                pw_y.append(pool)
            elif family == "target" and mode == "FULL":
                splits = 32 if o.inp.attention_backend in SPLIT_KV_BACKENDS else 0
                # the group's accumulators: its widest graph that FA3 splits (992 requests or fewer)
                split_tokens = [g.num_tokens for g in gs if (family, g.num_tokens) not in o.inp.unsplit_full]
                kv = split_kv_mib(max(split_tokens, default=0), shape, o.inp.tensor_parallel_size, splits)
                if _full_alone(target_items, o.inp):
                    alone_full.append((o, gs[0].num_tokens, pool - kv))
                elif o.inp.model_runner == "v2" and small_piecewise_pool(
                    gs[0].num_tokens, shape, o.inp.tensor_parallel_size
                ):
                    full_small_v2.append(pool - kv)
                else:
                    full_base[o.inp.model_runner].append(pool - kv)
            elif family != "target" and mode == "PIECEWISE":
                dpw_rows.append([1.0, act])
                dpw_y.append(pool)
        outside = (o.capture_nvml_bytes - sum(g.nvml_bytes for g in o.graphs)) / MIB
        target_sizes = [t for m, t in target_items if m == "PIECEWISE"] or [t for _, t in target_items]
        small_ladder = bool(target_sizes) and small_piecewise_pool(
            max(target_sizes), o.inp.target, o.inp.tensor_parallel_size
        )
        if set(groups) and {f for f, _ in groups} - {"target"}:
            warm_drafter.append((o.inp.model_runner, outside))
        elif small_ladder and o.inp.model_runner == "v2":
            warm_small_v2.append(outside)
        else:
            warm[o.inp.model_runner].append(outside)
    if len(pw_rows) < 2 or len(pw_rows) < len(pw_rows[0]):
        raise FitError("need at least two reports with target PIECEWISE graphs")
    pw_base, pw_slope, *pw_dense = _lstsq(pw_rows, pw_y)
    # no drafter measured: its graphs share the target's pool, as V1's global pool makes them
    in_target_pool = len(dpw_rows) < 2
    d_base, d_slope = (pw_base, pw_slope) if in_target_pool else _lstsq(dpw_rows, dpw_y)
    w = {r: _med(v, f"a runner {r} capture without a drafter") if v else None for r, v in warm.items()}
    known = [x for x in w.values() if x is not None]
    if not known:
        raise FitError("no report without a drafter: the warmup cannot be separated")
    w_v1 = w["v1"] if w["v1"] is not None else known[0]
    w_v2 = w["v2"] if w["v2"] is not None else known[0]
    w_d = _med(
        (x - (w_v1 if r == "v1" else w_v2) for r, x in warm_drafter), "a drafter's warmup"
    ) if warm_drafter else 0.0  # fmt: skip
    fb = {r: _med(v, f"target FULL graphs on runner {r}") if v else None for r, v in full_base.items()}
    fb_known = [x for x in fb.values() if x is not None]
    if not fb_known:
        raise FitError("no report with target FULL graphs beside PIECEWISE ones")
    regimes = tuple(
        name
        for name, seen in (("small_piecewise_pool", small_pw), ("full_without_piecewise_v1", alone_full))
        if seen
    )
    fb_v1 = fb["v1"] if fb["v1"] is not None else fb_known[0]
    pw_terms = replace(
        draft,
        piecewise_pool_base_mib=pw_base,
        piecewise_pool_per_activation=pw_slope,
        piecewise_pool_per_dense_mlp_activation=pw_dense[0] if pw_dense else 0.0,
        piecewise_pool_small_mib=_med(small_pw, "a small PIECEWISE pool") if small_pw else 0.0,
        fitted_regimes=regimes,
    )
    # the V1 FULL-alone extra, per MiB of the PIECEWISE pool its largest graph would have had
    alone_ratios = [
        (extra - fb_v1) / need
        for o, tokens, extra in alone_full
        if (need := _piecewise_need(pw_terms, tokens, o.inp.target, o.inp)) > 0
    ]
    widths = [o.inp.target.hidden_size for o in observations]
    largest = [largest_graph_tokens(o.plan_graphs()) for o in observations]
    kinds = sorted({k for o in observations for k in model_kinds(o.inp.target)})
    experts = [o.inp.target.num_routed_experts for o in observations if o.inp.target.is_moe]
    # The dense set's TP 2 was validated by held-out TP=2 captures (benchmarks/results/h200/tp2);
    # a set fitted on MoE/MLA layers states only the TP its captures ran at.
    tp_max = draft.validated_tensor_parallel_max
    if kinds != ["dense"]:
        tp_max = max(o.inp.tensor_parallel_size for o in observations)
    # the backends the fit saw: only there is the split-KV term measured (others: no figure)
    backends = tuple(b for b in SPLIT_KV_BACKENDS if any(o.inp.attention_backend == b for o in observations))
    coeffs = replace(
        draft,
        piecewise_pool_base_mib=pw_base,
        piecewise_pool_per_activation=pw_slope,
        full_pool_base_mib_v1=fb_v1,
        full_pool_base_mib_v2=fb["v2"] if fb["v2"] is not None else fb_known[0],
        drafter_piecewise_pool_base_mib=d_base,
        drafter_piecewise_pool_per_activation=d_slope,
        warmup_mib_v1=w_v1,
        warmup_mib_v2=w_v2,
        warmup_mib_drafter=w_d,
        hidden_size_range=(min(widths), max(widths)),
        largest_graph_tokens_range=(min(largest), max(largest)),
        fitted_on=tuple(o.name for o in observations),
        fitted_dtypes=tuple(sorted({o.inp.target.dtype for o in observations})),
        fitted_model_kinds=tuple(kinds),
        split_kv_backends=backends or draft.split_kv_backends,
        piecewise_pool_per_dense_mlp_activation=pw_dense[0] if pw_dense else 0.0,
        drafter_in_target_pool=in_target_pool,
        routed_experts_range=(min(experts), max(experts)) if experts else (0, 0),
        validated_tensor_parallel_max=tp_max,
        fitted_model_runners=tuple(sorted({o.inp.model_runner for o in observations})),
        piecewise_pool_small_mib=pw_terms.piecewise_pool_small_mib,
        full_alone_pool_per_piecewise=max(0.0, _med(alone_ratios, "a V1 FULL-alone pool"))
        if alone_ratios
        else 0.0,
        fitted_regimes=regimes,
        warmup_mib_small_v2=_med(warm_small_v2, "a small-ladder V2 warmup") if warm_small_v2 else 0.0,
        full_pool_base_mib_v2_small=_med(full_small_v2, "a small V2 FULL graph") if full_small_v2 else 0.0,
    )
    coeffs = _fit_capture_time(observations, coeffs, t_rows, t_y, w_y)
    checks = check_coefficients(observations, coeffs)
    ratios = [ch.measured_mib / ch.predicted_mib for ch in checks if ch.predicted_mib > 0]
    band = (round(min(1.0, *ratios), 4), round(max(1.0, *ratios), 4))
    return replace(coeffs, band_ratio=band), checks


def _fit_capture_time(
    observations: Sequence[CostObservation],
    coeffs: CostCoefficients,
    t_rows: Sequence[Sequence[float]],
    t_y: Sequence[float],
    w_y: Sequence[float],
) -> CostCoefficients:
    """The capture-time terms on each basis the reports allow (`CostCoefficients.capture_time_basis`),
    the overhead per runner (the median of each report's wall time less its graphs' terms), and
    the basis whose measured/predicted band over the reports is the narrower (by its widest ratio,
    either way, on a log scale)."""
    bases = [("capture", t_y)]
    if w_y and min(w_y) >= 0:
        bases.append(("window", w_y))
    timed = [o for o in observations if o.capture_wall_s is not None]
    best: tuple[float, CostCoefficients] | None = None
    for basis, ys in bases:
        t_piece, t_full, t_layer = _lstsq_non_negative(t_rows, ys)
        c = replace(
            coeffs,
            capture_time_basis=basis,
            capture_ms_per_piece=t_piece,
            capture_ms_per_full_graph=t_full,
            capture_ms_per_full_layer=t_layer,
        )
        rest: dict[str, list[float]] = {"v1": [], "v2": []}
        for o in timed:
            terms_s = sum(_capture_ms(c, g.mode, g.pieces, _layers(o, g.family)) for g in o.graphs) / 1000
            rest[o.inp.model_runner].append(o.capture_wall_s - terms_s)  # type: ignore[operator]
        both = [x for v in rest.values() for x in v]
        if not both:  # no report timed its capture phase: no time figure to fit
            return replace(
                c, capture_overhead_s=0.0, capture_overhead_s_v1=None, capture_band_ratio=(0.0, 0.0)
            )
        v2 = _med(rest["v2"], "a V2 capture-phase time") if rest["v2"] else _med(both, "a capture-phase time")
        v1 = _med(rest["v1"], "a V1 capture-phase time") if rest["v1"] else None
        c = replace(
            c, capture_overhead_s=max(0.0, v2), capture_overhead_s_v1=None if v1 is None else max(0.0, v1)
        )
        ratios = [
            o.capture_wall_s / p  # type: ignore[operator]
            for o in timed
            if (p := predict_cost(o.plan_graphs(), o.inp, c).capture_s) > 0
        ]
        if not ratios:
            continue
        c = replace(c, capture_band_ratio=(round(min(1.0, *ratios), 4), round(max(1.0, *ratios), 4)))
        spread = max(abs(math.log(r)) for r in ratios)
        if best is None or spread < best[0]:
            best = (spread, c)
    return best[1] if best is not None else coeffs


def check_coefficients(observations: Sequence[CostObservation], c: CostCoefficients) -> tuple[FitCheck, ...]:
    """Predict every report's capture from its own graphs and set it beside the measurement."""
    out = []
    for o in observations:
        p = predict_cost(o.plan_graphs(), o.inp, c)
        out.append(
            FitCheck(
                o.name,
                o.capture_nvml_bytes / MIB,
                p.total_mib,
                o.capture_wall_s,
                p.capture_s,
                o.vllm_estimate_gib,
            )
        )
    return tuple(out)
