"""What the predictors say of a plan: graph-pool memory and capture time (`CostPrediction`), step
time (`LatencyPrediction`). Result types live on the bottom floor so that `types.Plan` can hold them
without importing the predictors (cgplan.core.predict imports these, never the other way)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CostDomain:
    """Where a prediction's figure was validated, and how far this config is from it."""

    fitted: str
    """The fitted domain in words: GPU, dtype, attention backends, TP, model kinds, widths."""
    outside: tuple[str, ...] = ()
    """Each way this config leaves the domain (empty: inside)."""
    band_factor: float = 1.0
    """Extra widening applied to the band each way (1.0 inside the domain)."""
    figure: bool = True
    """False: no figure is given (the model has no term for this config)."""

    @property
    def inside(self) -> bool:
        """The config is inside the validated domain."""
        return not self.outside


@dataclass(frozen=True)
class GraphCost:
    """Predicted marginal cost of one graph in capture order."""

    family: str
    mode: str
    num_tokens: int
    pool_mib: float
    """Pool growth this graph causes (non-zero for the first graph of a family and mode)."""
    exec_mib: float
    """The graph's own instantiated state."""
    capture_ms: float


@dataclass(frozen=True)
class FamilyModeCost:
    """Predicted cost of one graph family and mode."""

    family: str
    mode: str
    graphs: int
    pool_mib: float
    exec_mib: float
    capture_ms: float

    @property
    def total_mib(self) -> float:
        """Pool plus graph state."""
        return self.pool_mib + self.exec_mib


@dataclass(frozen=True)
class CostPrediction:
    """What the cost model predicts for one plan, per rank."""

    graphs: tuple[GraphCost, ...]
    by_family_mode: tuple[FamilyModeCost, ...]
    warmup_mib: float
    """Capture-phase allocations outside the graphs (counted in vLLM's "took")."""
    total_mib: float
    """Everything the capture phase takes from the KV cache, on each rank."""
    low_mib: float
    high_mib: float
    capture_s: float
    """Predicted capture-phase wall time."""
    gpu: str
    capture_band_s: tuple[float, float] | None = None
    """The capture time's band (low, high) in seconds; None where the coefficients record none."""
    caveats: tuple[str, ...] = ()
    """Why this prediction may be less trustworthy than the band says."""
    domain: CostDomain = field(default_factory=lambda: CostDomain(fitted=""))
    """The validated domain and this config's place in it (outside: wider band, or no figure)."""

    @property
    def has_figure(self) -> bool:
        """A figure is given (the config is inside the domain or near enough to widen the band)."""
        return self.domain.figure

    @property
    def graphs_mib(self) -> float:
        """Sum over the graph sections (without the warmups)."""
        return self.total_mib - self.warmup_mib


@dataclass(frozen=True)
class GapLatency:
    """What one gap costs in time."""

    gap: int
    """Index into the plan's `gaps`."""
    widest_batch: int
    """The gap's last (widest) batch: requests (uniform decode) or tokens (mixed)."""
    step_ms: float
    """Predicted step time of that batch as planned (its gap outcome)."""
    graph_step_ms: float
    """The same batch replaying a FULL graph of its exact size (PIECEWISE for mixed)."""
    cost_ms_per_step: float
    """step_ms - graph_step_ms: what each such step loses."""
    tokens_per_s: float
    """Scheduled tokens per second of that batch as planned."""
    graph_tokens_per_s: float
    expected_cost_ms_per_step: float
    """The gap's contribution to the expected step time at the traffic (0 if no traffic hits it)."""
    share: float = 0.0
    """expected_cost_ms_per_step over the expected step time: the gap's share of the step."""
    worth_closing: bool | None = None
    """The verdict of `cgplan.core.plan.advice.rank_fixes` (None: not judged)."""
    verdict: str = ""
    """The same in words, with its reason ("worth closing: 4.8% of the expected step ...")."""


@dataclass(frozen=True)
class FixLatency:
    """A fix in time: the plan re-planned with it, then predicted again."""

    fix: int
    """Index into the plan's `fixes`."""
    expected_step_ms_after: float
    gain_ms_per_step: float
    """Expected step time before minus after, at the traffic."""
    widest_gap_gain_ms: float
    """Per-step gain at the widest batch of the first gap it closes."""
    eager_share_after: float = 0.0
    """Share of the expected step spent eager once the fix is applied (for the gate's
    max_eager_time_share: a fix is named there only when it brings the share within the limit)."""


@dataclass(frozen=True)
class SlowerFix:
    """A fix the search found that the latency model says is slower than leaving its gaps:
    not offered (`LatencyPrediction.not_offered`), named with its figures."""

    flags: tuple[str, ...]
    expected_step_ms_after: float
    gain_ms_per_step: float
    """Negative: the expected step grows by this much."""


@dataclass(frozen=True)
class LatencyPrediction:
    """A plan's predicted step times at a traffic shape."""

    gpu: str
    traffic: str
    """"uniform" (every uniform-decode batch size once) or the traffic file."""
    expected_step_ms: float
    expected_eager_share: float
    """Share of the expected step time spent in steps that run eager."""
    expected_tokens_per_s: float
    """Scheduled tokens per second at the traffic (accepted tokens depend on the acceptance rate)."""
    widest_reqs: int
    """The widest uniform-decode batch that fits max_num_batched_tokens: its requests..."""
    widest_query_len: int
    """...and its tokens per request (its dynamic-SD tier)."""
    widest_step_ms: float
    """That batch as planned."""
    widest_graph_step_ms: float
    """The same batch on a FULL graph of its exact size."""
    widest_eager_step_ms: float
    """The same batch eager."""
    gaps: tuple[GapLatency, ...] = ()
    fixes: tuple[FixLatency, ...] = ()
    caveats: tuple[str, ...] = ()
    """Where the config is outside the measured domain (figures are extrapolations there)."""
    extrapolated: tuple[str, ...] = ()
    """Why the step times of the traffic's batches are extrapolated (outside the measured shapes
    or ranges); empty where every batch of the traffic lies in the measured domain. The release
    the model was measured with and short-context attention, caveats of every plan, are not here."""
    model_error: float = 0.0
    """The coefficients' held-out median |predicted / measured - 1| (their resolution)."""
    fix_order: str = ""
    """How the plan's fixes are ranked, in words (set by `rank_fixes`)."""
    not_offered: tuple[SlowerFix, ...] = ()
    """Fixes dropped for being predicted slower than the gaps they close."""

    @property
    def eager_graph_ratio(self) -> float:
        """Widest batch: eager / FULL graph step time."""
        return self.widest_eager_step_ms / self.widest_graph_step_ms
