"""build_plan: one config under one vLLM release → graphs, dispatch, gaps and fixes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

from cgplan.core.model.modes import Mode
from cgplan.core.model.spec import PlanInput
from cgplan.core.model.types import (
    DispatchMode,
    DispatchRange,
    Graph,
    Note,
    Plan,
    Rejected,
    as_dispatch_mode,
    as_model_runner,
)
from cgplan.core.plan.gaps import FixSearch, find_gaps, propose_fixes
from cgplan.core.plan.policies import UPSTREAM, CapturePolicy
from cgplan.core.predict.cost import drafter_shape
from cgplan.core.predict.kv import kv_bytes_per_token, kv_withheld
from cgplan.core.vllm import parallel_draft
from cgplan.core.vllm.attention import draft_decode_metadata_update
from cgplan.core.vllm.defaults import assumed_defaults
from cgplan.core.vllm.dynamic_sd import ScheduleError, lookup_ranges
from cgplan.core.vllm.graphs import (
    Microbatching,
    Outcome,
    V1Dispatcher,
    V2Manager,
    lora_cases,
    v2_graph_floor,
    v2_manager,
)
from cgplan.core.vllm.ladder import Ladder, capture_ladder
from cgplan.core.vllm.models import model_caveats
from cgplan.core.vllm.releases import V2Tiers, VllmRules, first_release, kv_cache_dtype_message, rules_for
from cgplan.core.vllm.resolve import (
    Attention,
    ModeDecision,
    attention,
    breakable_note,
    compilation,
    config_time_mode,
    cost_withheld,
    deepep_high_throughput_off,
    model_runner,
    resolve_mode,
    runner_time_mode,
    sequence_parallel_on,
    uses_dynamic_sd,
    v1_round_sizes,
    validate_connector,
    validate_parallel,
    validate_speculative,
    validate_ubatching_backend,
)

_RESERVES = first_release(lambda r: r.v2_reserves_cudagraph_memory)


def graph_memory_not_reserved(rules: VllmRules) -> str:
    """What model runner V2 before 0.29 does with CUDA-graph memory, and what to set instead."""
    return (
        f"graph memory is not reserved: model runner V2 in vLLM {rules.version} estimates CUDA-graph "
        "memory as 0 before sizing the KV cache (gpu/model_runner.py profile_cudagraph_memory() "
        "returns 0; vLLM issue #49224), so the KV cache takes the whole gpu_memory_utilization budget "
        "and capture adds on top of it (an OOM in capture_model() when the GPU is full); lower "
        "--gpu-memory-utilization by the graph memory's share of the GPU (or give "
        "--kv-cache-memory-bytes), run model runner V1 (VLLM_USE_V2_MODEL_RUNNER=0), or use vLLM "
        f"{_RESERVES}+, which reserves it (#49233)"
    )


def _lookup_runs(inp: PlanInput) -> list[tuple[int, int, int]] | None:
    """The scheduler's batch → K table as (first, last, K) runs; vLLM's scheduler refuses an
    invalid schedule. Runs, not vLLM's dense list: the plan's cost follows the schedule's size,
    not max_num_seqs."""
    if not uses_dynamic_sd(inp):
        return None
    spec = inp.speculative
    assert spec is not None and spec.num_speculative_tokens_per_batch_size is not None
    try:
        return lookup_ranges(
            spec.num_speculative_tokens_per_batch_size, inp.max_num_seqs, spec.num_speculative_tokens
        )
    except ScheduleError as e:
        raise Rejected("speculative_config.num_speculative_tokens_per_batch_size", str(e)) from e


def validate_limits(inp: PlanInput, rules: VllmRules) -> None:
    """ModelConfig's max_model_len check (`_get_and_verify_max_len`), SchedulerConfig's own
    checks (vllm/config/scheduler.py `_verify_args`) and VllmConfig's speculative token budget
    (`_set_max_num_scheduled_tokens`), and CacheConfig's `cache_dtype` literal (the release's
    `CacheDType`)."""
    if inp.kv_cache_dtype not in rules.kv_cache_dtypes:
        raise Rejected("kv_cache_dtype", kv_cache_dtype_message(inp.kv_cache_dtype, rules))
    derived = inp.model.derived_max_model_len
    if derived is not None and inp.max_model_len > derived:
        raise Rejected(
            "max_model_len",
            f"User-specified max_model_len ({inp.max_model_len}) is greater than the derived "
            f"max_model_len (max_position_embeddings={float(derived)} or model_max_length=None in "
            "model's config.json). To allow overriding this maximum, set the env var "
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme "
            "caution. If the model uses relative position encoding (RoPE), positions exceeding "
            "derived_max_model_len lead to nan. If the model uses absolute position encoding, positions "
            "exceeding derived_max_model_len will cause a CUDA array out-of-bounds error.",
        )
    if inp.max_num_batched_tokens < inp.max_num_seqs:
        raise Rejected(
            "max_num_batched_tokens",
            f"max_num_batched_tokens ({inp.max_num_batched_tokens}) must be greater than or "
            f"equal to max_num_seqs ({inp.max_num_seqs})",
        )
    validate_spec_budget(inp, rules)


def validate_spec_budget(inp: PlanInput, rules: VllmRules) -> None:
    """`VllmConfig._set_max_num_scheduled_tokens`: the tokens left to schedule once the drafter's
    own slots are set aside, release by release (the drafter's slots: one per request for a draft
    model, none for EAGLE, MTP and n-gram; 0.33+ holds the budget against num_lookahead_tokens)."""
    spec = inp.speculative
    if spec is None:
        return
    mbt = inp.max_num_batched_tokens
    slots = 1 if spec.method == "draft_model" else 0
    if rules.spec_budget_check == "scheduled":
        scheduled = mbt - slots * inp.max_num_seqs
        if scheduled <= 0:
            raise Rejected(
                "max_num_batched_tokens",
                f"max_num_scheduled_tokens is set to {scheduled} based on the speculative decoding "
                "settings, which does not allow any tokens to be scheduled. Increase "
                "max_num_batched_tokens to accommodate the additional draft token slots, or decrease "
                "num_speculative_tokens or max_num_seqs.",
            )
    elif rules.spec_budget_check == "delta":
        if mbt <= slots:
            raise Rejected(
                "max_num_batched_tokens",
                "VllmConfig does not have enough slots to schedule a token and support the "
                f"speculative decoding settings. Got max_num_batched_tokens={mbt} and "
                f"scheduled_token_delta={slots}.",
            )
    else:
        lookahead = 0 if spec.method == "ngram" else spec.num_speculative_tokens
        if mbt <= lookahead:
            raise Rejected(
                "max_num_batched_tokens",
                "VllmConfig does not have enough slots to schedule a token and support the "
                f"speculative decoding settings. Got max_num_batched_tokens={mbt} and "
                f"num_lookahead_tokens={lookahead}.",
            )


def _v2_query_lens(
    inp: PlanInput, rules: VllmRules, decode_query_len: int, runs: list[tuple[int, int, int]] | None
) -> list[int]:
    """`CudaGraphManager._init_candidates`' decode query lengths, release by release."""
    k = inp.num_speculative_tokens
    if runs is None or inp.speculative is None:
        return [decode_query_len]
    sampled_per_step = decode_query_len - k
    if rules.v2_tiers is V2Tiers.RAW_SCHEDULE:
        schedule = inp.speculative.num_speculative_tokens_per_batch_size or ()
        return [entry[2] + sampled_per_step for entry in schedule]
    if rules.v2_tiers is V2Tiers.DENSE_LOOKUP_IF_Q_GT_K and decode_query_len <= k:
        return [decode_query_len]
    return sorted({kb + sampled_per_step for _, _, kb in runs})


def _without_dynamic_sd_under_dp(inp: PlanInput, notes: list[Note]) -> PlanInput:
    """`_maybe_disable_dynamic_sd_for_data_parallel` (every release): DP ranks could pick different
    K per step and deadlock, so the schedule is dropped for the static K."""
    if inp.data_parallel_size <= 1 or not uses_dynamic_sd(inp) or inp.speculative is None:
        return inp
    notes.append(
        Note(
            "dynamic_sd_dp",
            "Dynamic speculative decoding is not supported with data parallelism because "
            "data-parallel ranks can select different speculative-token counts, causing DP "
            "divergence and deadlocks. Disabling num_speculative_tokens_per_batch_size and falling "
            f"back to static num_speculative_tokens={inp.speculative.num_speculative_tokens}.",
        )
    )
    return replace(inp, speculative=replace(inp.speculative, num_speculative_tokens_per_batch_size=None))


def _compress(rows: list[tuple[int, Outcome]]) -> tuple[DispatchRange, ...]:
    """Merge consecutive rows with the same outcome (Outcome objects are shared per graph)."""
    firsts: list[int] = []
    lasts: list[int] = []
    outcomes: list[Outcome] = []
    for n, o in rows:
        if outcomes and outcomes[-1] == o and lasts[-1] == n - 1:
            lasts[-1] = n
        else:
            firsts.append(n)
            lasts.append(n)
            outcomes.append(o)
    return tuple(
        DispatchRange(a, b, as_dispatch_mode(o.mode.value), o.padded_tokens, o.padded_reqs)
        for a, b, o in zip(firsts, lasts, outcomes, strict=True)
    )


def dispatch_table(
    query_len: int,
    max_batches: int,
    max_tokens: int,
    pick: Callable[[int, int], Outcome],
    boundaries_tokens: list[int],
) -> tuple[DispatchRange, ...]:
    """Outcome of every batch n = 1..max_batches of n × query_len tokens (≤ max_tokens).

    Both dispatchers decide from the smallest captured token count ≥ the batch's tokens,
    and every compatibility test they make is monotone inside one interval between
    consecutive captured token counts (a graph at t tokens and query length q holds t/q ≥ n
    requests). So one dispatch per interval gives the whole table: O(graphs), not
    O(max_num_seqs); `naive_dispatch_table` is the per-batch definition it is tested against.
    """
    n_max = min(max_batches, max_tokens // query_len)
    out: list[DispatchRange] = []
    # consecutive intervals with the same outcome merge into one run (pickers share Outcomes)
    run_lo = run_hi = 0
    run: Outcome | None = None
    prev = 0
    for cut in [*sorted({b for b in boundaries_tokens if b > 0}), None]:
        lo = prev // query_len + 1
        hi = n_max if cut is None else min(n_max, cut // query_len)
        if lo <= hi:
            o = pick(lo, lo * query_len)
            if run is not None and run_hi == lo - 1 and (o is run or o == run):
                run_hi = hi
            else:
                if run is not None:
                    out.append(_run(run_lo, run_hi, run))
                run_lo, run_hi, run = lo, hi, o
        if cut is None or hi >= n_max:
            break
        prev = cut
    if run is not None:
        out.append(_run(run_lo, run_hi, run))
    return tuple(out)


def _run(first: int, last: int, o: Outcome) -> DispatchRange:
    """`_dispatch_range` of a merged run, inlined (it runs per run of every table)."""
    mode, tokens, reqs = o
    key = (first, last, mode._value_, tokens, reqs)  # Enum's .value is a slow descriptor
    r = _RANGES.get(key)
    if r is None:
        if len(_RANGES) >= 1 << 16:
            _RANGES.clear()
        r = _RANGES[key] = DispatchRange(first, last, as_dispatch_mode(mode._value_), tokens, reqs)
    return r


_RANGES: dict[tuple[int, int, str, int | None, int | None], DispatchRange] = {}
"""Dispatch runs already made (frozen, so plans share them): the plans of a sweep or of a fix
search repeat most of their runs, and a frozen dataclass is slow to build."""


def _dispatch_range(
    first: int, last: int, mode: DispatchMode, tokens: int | None, reqs: int | None
) -> DispatchRange:
    key = (first, last, mode, tokens, reqs)
    r = _RANGES.get(key)
    if r is None:
        if len(_RANGES) >= 1 << 16:
            _RANGES.clear()
        r = _RANGES[key] = DispatchRange(first, last, mode, tokens, reqs)
    return r


def naive_dispatch_table(
    query_len: int, max_batches: int, max_tokens: int, pick: Callable[[int, int], Outcome]
) -> tuple[DispatchRange, ...]:
    """The per-batch definition of `dispatch_table` (used by the tests)."""
    rows = []
    for n in range(1, max_batches + 1):
        if n * query_len > max_tokens:
            break
        rows.append((n, pick(n, n * query_len)))
    return _compress(rows)


def _drafter_prefill(
    graphs: tuple[Graph, ...], full: str, k: int, max_num_seqs: int, max_size_tokens: int
) -> tuple[Graph, ...]:
    """The drafter-prefill set under a policy: the target's FULL set, powers of two, or none.

    "pow2": request counts 1, 2, 4, ... × (1+K) tokens, bounded by the capture maximum (a graph
    above it is never dispatched to: vLLM pads nothing past max_cudagraph_capture_size), plus the
    widest request count that fits (max_num_seqs itself when it is not a power of two), so the
    widest uniform prefill keeps a FULL graph.
    """
    if full == "target" or not any(g.mode == "FULL" for g in graphs):
        return graphs
    piecewise = tuple(g for g in graphs if g.mode == "PIECEWISE")
    if full == "none":
        return piecewise
    q = k + 1
    widest = min(max_num_seqs, max_size_tokens // q)
    counts, n = [], 1
    while n <= widest:
        counts.append(n)
        n *= 2
    if widest >= 1 and counts[-1] != widest:
        counts.append(widest)
    return piecewise + tuple(Graph("FULL", n * q, n, q) for n in reversed(counts))


_TIERS_FIXED = first_release(lambda r: r.v2_tiers is V2Tiers.DENSE_LOOKUP_IF_Q_GT_K)
"""The release whose drafter decode tiers are only those with q > K (no negative lengths)."""


def _check_drafter_decode_lens(inp: PlanInput, k: int, decode_lens: list[int]) -> None:
    """vLLM 0.26–0.31's drafter decode manager under dynamic SD: the engine does not start.

    It recovers "sampled tokens per step" as 1 − K and adds it to each tier's K, so a tier
    below K gives a query length of 0 or less. 0: `round_up` divides by zero when the
    manager is built (even for K = 1). Negative: descriptors with negative request
    counts, and capturing the first one fails an assertion (seen on the H200:
    benchmarks/results/h200/tiny-eagle-dyn-v2-vllm.json).
    """
    path = "speculative_config.num_speculative_tokens_per_batch_size"
    if 0 in decode_lens:
        raise Rejected(
            path,
            f"vLLM {inp.vllm_version} crashes building the drafter's decode CUDA-graph manager "
            "(round_up: ZeroDivisionError: integer division or modulo by zero): a dynamic-SD tier "
            f"at K = {k - 1} = num_speculative_tokens − 1 gives decode query length 0",
        )
    if k > 1 and any(ql < 0 for ql in decode_lens):
        bad = sorted(ql + k - 1 for ql in decode_lens if ql < 0)
        raise Rejected(
            path,
            f"vLLM {inp.vllm_version} fails an assertion (AssertionError) while capturing the drafter's "
            f"decode CUDA graphs: dynamic-SD tiers at K = {bad} (below num_speculative_tokens − 1) give "
            f"negative decode query lengths and request counts (fixed in vLLM {_TIERS_FIXED})",
        )


def _v1_decode(
    dispatcher: V1Dispatcher, uniform: bool, num_reqs: int, num_tokens: int, loras: int = 0
) -> Outcome:
    # V1's runner flags a batch uniform only at the configured query length 1 + K.
    return dispatcher.dispatch(num_tokens, uniform, loras)


def _v1_mixed(dispatcher: V1Dispatcher, _n: int, num_tokens: int) -> Outcome:
    return dispatcher.dispatch(num_tokens, False)


def _v1_microbatched(inp: PlanInput, graphs: tuple[Graph, ...], notes: list[Note]) -> tuple[Graph, ...]:
    """V1's `_capture_cudagraphs` under DBO: a FULL uniform-decode descriptor of at least
    `dbo_decode_token_threshold` tokens is captured with microbatching allowed, and with more than
    one DP rank the DP coordination splits it (its last microbatch is never empty at capture): that
    graph runs `num_ubatches` microbatches. One graph per descriptor (V2 adds twins instead)."""
    if not inp.use_ubatching or inp.data_parallel_size <= 1:
        return graphs
    n, threshold = inp.num_ubatches, inp.dbo_decode_token_threshold
    out = tuple(
        replace(g, num_ubatches=n)
        if g.mode == "FULL"
        and g.query_len is not None
        and g.num_tokens >= threshold
        and (g.num_tokens // n) * (n - 1) < g.num_tokens
        else g
        for g in graphs
    )
    split = sum(1 for a, b in zip(graphs, out, strict=True) if a is not b)
    if split:
        notes.append(
            Note(
                "v1_ubatched",
                f"DBO on model runner V1 (DP {inp.data_parallel_size}): the {split} FULL uniform-decode "
                f"graphs of at least {threshold} tokens are captured split into {n} microbatches",
            )
        )
    return out


def _v2_table(manager: V2Manager, ql: int, s: int, b: int, loras: int) -> tuple[DispatchRange, ...]:
    """`dispatch_table` of the uniform decode at `ql`, made once per manager: it depends on the
    manager, `ql`, the LoRA case and the number of batches only."""
    key = ("decode", ql, min(s, b // ql), loras)
    got = manager.tables.get(key)
    if got is None:
        got = manager.tables[key] = dispatch_table(ql, s, b, manager.picker(ql, loras), manager.boundaries())
    return got  # type: ignore[return-value]


def _v2_mixed_table(manager: V2Manager, mixed_hi: int, s: int, b: int) -> tuple[DispatchRange, ...]:
    """`dispatch_table` of the mixed batches, made once per manager, token bound and the request
    count a mixed batch has (min(tokens, max_num_seqs), the same above mixed_hi: `V2Manager.picker`'s
    reqs_cap)."""
    key = ("mixed", min(mixed_hi, b), min(s, mixed_hi))
    got = manager.tables.get(key)
    if got is None:
        got = manager.tables[key] = dispatch_table(
            1, mixed_hi, b, manager.picker(None, 0, reqs_cap=s), manager.boundaries()
        )
    return got  # type: ignore[return-value]


class _Captured:
    """What a config captures, before any dispatch table: `build_plan`'s first stage (the fix
    search reads a candidate's graph counts here and plans no dispatch for one over budget). A
    plain class: a NamedTuple's fields are compiled at import, a dataclass's methods too (issue 18).

    Made in two steps: `_setup` (the release's checks, the ladder, the mode), then `_families`
    (the dispatchers and every family's graphs, `target` None until then): a candidate whose
    ladder alone shows it over the graph budget never gets the second (`target_graphs_floor`)."""

    __slots__ = (
        "attn",
        "decision",
        "graphs",
        "inp",
        "ladder",
        "loras",
        "max_size",
        "mode",
        "notes",
        "rules",
        "runner",
        "runs",
        "sizes",
        "target",
        "ubatch",
    )

    def __init__(
        self,
        inp: PlanInput,
        rules: VllmRules,
        notes: tuple[Note, ...],
        runs: list[tuple[int, int, int]] | None,
        runner: str,
        decision: ModeDecision,
        mode: Mode,
        attn: Attention,
        ladder: Ladder,
        sizes: tuple[int, ...],
        max_size: int,
        loras: tuple[int, ...],
        ubatch: Microbatching | None,
    ) -> None:
        self.inp = inp
        self.rules = rules
        self.notes = notes
        self.runs = runs
        self.runner = runner
        self.decision = decision
        self.mode = mode
        self.attn = attn
        self.ladder = ladder
        self.sizes = sizes
        self.max_size = max_size
        self.loras = loras
        self.ubatch = ubatch
        self.graphs: dict[str, tuple[Graph, ...]] = {}
        self.target: V1Dispatcher | V2Manager | None = None


def _capture(inp: PlanInput, policy: CapturePolicy) -> _Captured:
    """The release's checks, the capture ladder, the mode and every family's graphs.

    Raises:
        Rejected: the release refuses to start with this config.
    """
    return _families(_setup(inp, policy))


def _setup(inp: PlanInput, policy: CapturePolicy) -> _Captured:
    """`_capture` up to the dispatchers: the release's checks, the capture ladder and the mode.

    Raises:
        Rejected: the release refuses to start with this config.
    """
    rules = policy.apply(rules_for(inp.vllm_version))
    notes: list[Note] = []
    validate_parallel(inp, rules)
    validate_speculative(inp)
    parallel_draft.check_speculative(inp, rules)
    validate_connector(inp, rules)
    validate_limits(inp, rules)
    inp = _without_dynamic_sd_under_dp(inp, notes)
    runs = _lookup_runs(inp)
    comp = compilation(inp, rules, notes)
    sp_on = sequence_parallel_on(inp, rules, notes)
    runner = model_runner(inp, rules, sp_on, notes, comp)
    parallel_draft.check_runner(inp, rules, runner)
    if inp.speculative is not None and inp.speculative.method == "suffix":
        notes.append(
            Note(
                "suffix_arctic_inference",
                "suffix decoding drafts on the CPU through Arctic Inference (`pip install "
                "arctic-inference==0.1.1`, which vLLM requires for it): planned as on a host that has "
                "it; no drafter graphs",
            )
        )
    sp_requested = rules.sequence_parallel and inp.enable_sp and inp.tensor_parallel_size > 1
    runner_before_sp = model_runner(inp, rules, sp_requested, [], comp) if sp_requested != sp_on else runner
    decision = config_time_mode(inp, rules, runner_before_sp, sp_on, notes, comp)
    decision = runner_time_mode(decision, inp, rules, runner, notes)
    if comp.breakable and decision.mode is not Mode.NONE:
        notes.append(breakable_note(decision.mode, rules, runner))
    notes.extend(Note("model_kind", text) for text in model_caveats(inp.model, rules))
    if runner == "v2" and not rules.v2_reserves_cudagraph_memory and decision.mode is not Mode.NONE:
        notes.append(Note("graph_memory_not_reserved", graph_memory_not_reserved(rules)))
    validate_ubatching_backend(inp, rules)
    loras = lora_cases(
        runner, inp.enable_lora, inp.max_loras, inp.cudagraph_specialize_lora, inp.specialize_active_lora
    )
    ubatch = None
    if rules.v2_ubatch_twins and inp.use_ubatching and inp.data_parallel_size > 1:
        # maybe_build_ubatch_runner: microbatching needs the DP handshake (more than one DP rank)
        ubatch = Microbatching(inp.num_ubatches, inp.dbo_decode_token_threshold)
    if inp.enable_lora:
        notes.append(
            Note(
                "lora_cases",
                f"LoRA: every capture size is captured for num_active_loras in {list(loras)} "
                f"(model runner {runner.upper()}, cudagraph_specialize_lora="
                f"{inp.cudagraph_specialize_lora}"
                + (", specialize_active_lora" if inp.specialize_active_lora else "")
                + "); "
                + (
                    "a batch with n adapters replays the graphs of the smallest captured count >= n"
                    if sum(1 for n in loras if n) > 1
                    else f"a batch with adapters replays the {loras[-1]}-adapter graphs"
                ),
            )
        )
    q_slots = inp.max_num_seqs * inp.uniform_decode_query_len
    if inp.speculative is not None and not runs and inp.max_num_batched_tokens < q_slots:
        # vLLM accepts it (no release checks it at config time); the scheduler's budget caps decode
        notes.append(
            Note(
                "decode_budget",
                f"max_num_batched_tokens {inp.max_num_batched_tokens} < max_num_seqs x (1+K) = "
                f"{q_slots}: at most {inp.max_num_batched_tokens // inp.uniform_decode_query_len} "
                "requests decode in one step",
            )
        )
    q = inp.uniform_decode_query_len
    ladder = capture_ladder(inp, rules, decision.mode is not Mode.NONE, sp_on)
    notes.extend(ladder.notes)
    decision = deepep_high_throughput_off(inp, decision, notes)
    attn = attention(inp, rules)
    spec = inp.speculative
    resolve_attn = attn
    parallel = spec is not None and spec.method in parallel_draft.PARALLEL_DRAFTERS
    if spec is not None and parallel and inp.attention_cudagraph_support is None:
        # init_attn_backend's level is the minimum over the runner's attention groups, the draft's
        # layers (their own head size) among them
        draft = parallel_draft.draft_support(inp, rules, as_speculator=False)
        if draft < attn.support:
            resolve_attn = Attention(attn.backend, draft)
            notes.append(
                Note(
                    "draft_layers_support",
                    f"the {spec.method} draft's attention layers report {draft.name} "
                    f"({parallel_draft.draft_backend(inp, rules)}, their own head size): "
                    "the runner's cudagraph mode is resolved with the lower level",
                )
            )
    mode = resolve_mode(decision, resolve_attn, q, notes)
    sizes, max_size = ladder.sizes_tokens, ladder.max_size_tokens
    if runner == "v1" and mode.decode_mode() is Mode.FULL and q > 1:
        sizes, max_size = v1_round_sizes(
            sizes, max_size, q, inp.tensor_parallel_size, sp_on, notes, sp_pass=rules.sequence_parallel
        )
    return _Captured(
        inp, rules, tuple(notes), runs, runner, decision, mode, attn, ladder, sizes, max_size, loras, ubatch
    )


def _families(cap: _Captured) -> _Captured:
    """`cap` (from `_setup`) with its dispatchers and every family's graphs (filled in place)."""
    inp, rules, runs, runner, mode = cap.inp, cap.rules, cap.runs, cap.runner, cap.mode
    sizes, max_size, loras, ubatch = cap.sizes, cap.max_size, cap.loras, cap.ubatch
    notes = list(cap.notes)
    q = inp.uniform_decode_query_len
    s = inp.max_num_seqs
    graphs: dict[str, tuple[Graph, ...]] = {}
    spec = inp.speculative
    target: V1Dispatcher | V2Manager
    if runner == "v1":
        target = V1Dispatcher(sizes, max_size, mode, q, s, loras)
        graphs["target"] = _v1_microbatched(inp, target.graphs(), notes)
        if spec is not None and spec.method not in ("ngram", "suffix"):
            drafter_mode = (
                Mode.PIECEWISE
                if not spec.enforce_eager and mode.mixed_mode() in (Mode.PIECEWISE, Mode.FULL)
                else Mode.NONE
            )
            # The proposer's own CudagraphDispatcher has a key per LoRA case, but vLLM captures
            # drafter graphs only inside the runner's dummy runs, through `drafter.dummy_run`,
            # whose dispatch never says has_lora (llm_base_proposer), and the runner turns the
            # drafter's graphs off for the adapter cases when cudagraph_specialize_lora is on
            # (its mitigation of vllm#28334): only the no-adapter keys are ever captured
            # or dispatched. Without a no-adapter case (specialize_lora off) the drafter is eager.
            drafter_loras = tuple(n for n in loras if n == 0)
            # The runner's capture loop runs the drafter with graphs only beside a target PIECEWISE
            # capture ("Eagle currently only supports PIECEWISE cudagraphs"): a target that
            # captures no PIECEWISE graph (FULL, also when sequence parallelism forces it) leaves
            # the drafter with no graph captured.
            target_piecewise = mode.mixed_mode() is Mode.PIECEWISE
            graphs["drafter"] = (
                V1Dispatcher(sizes, max_size, drafter_mode, 1, s, drafter_loras).graphs()
                if drafter_loras and target_piecewise
                else ()
            )
            if drafter_mode is not Mode.NONE and not target_piecewise:
                notes.append(
                    Note(
                        "v1_drafter_no_graphs",
                        f"cudagraph_mode {mode.value} on model runner V1: the target captures no "
                        "PIECEWISE graph, and V1 captures drafter graphs only beside the target's "
                        "PIECEWISE ones (gpu_model_runner: 'Eagle currently only supports PIECEWISE "
                        "cudagraphs'), so no drafter graph is captured",
                    )
                )
            if spec.method == "dflash" and graphs["drafter"]:
                # DFlashProposer.dummy_run drafts min(num_tokens, max_query_tokens) query tokens:
                # a key above the size that many tokens pad to is never captured nor replayed
                most = parallel_draft.v1_query_tokens(inp)
                pad = next((x for x in sorted(sizes) if x >= most), None)
                if pad is not None:
                    kept = tuple(g for g in graphs["drafter"] if g.num_tokens <= pad)
                    if len(kept) < len(graphs["drafter"]):
                        notes.append(
                            Note(
                                "dflash_v1_query_cap",
                                f"DFlash on model runner V1 drafts at most max_num_seqs x (1+K) = {most} "
                                f"query tokens: drafter graphs above {pad} tokens are never captured",
                            )
                        )
                    graphs["drafter"] = kept
            if inp.enable_lora and not drafter_loras and drafter_mode is not Mode.NONE:
                notes.append(
                    Note(
                        "v1_drafter_eager_with_lora",
                        "LoRA without cudagraph_specialize_lora on model runner V1: the drafter's "
                        "CUDA-graph keys all carry the adapter count, its dispatch never does, so "
                        "every drafter forward runs eager (no drafter graphs are captured)",
                    )
                )
    else:
        pad = rules.v2_breakable_pads_piecewise_reqs and cap.decision.compilation.breakable
        target = v2_manager(
            sizes,
            max_size,
            mode,
            q,
            _v2_query_lens(inp, rules, q, runs),
            s,
            rules.v2_candidates,
            loras,
            ubatch,
            pad,
        )
        graphs["target"] = target.graphs()
        twins = sum(1 for g in graphs["target"] if g.num_ubatches > 1)
        if twins:
            notes.append(
                Note(
                    "ubatch_twins",
                    f"DBO: {twins} FULL graphs of at least {inp.dbo_decode_token_threshold} tokens are "
                    f"also captured split into {inp.num_ubatches} microbatches (DP {inp.data_parallel_size})",
                )
            )
        k_spec = spec.num_speculative_tokens if spec is not None else 0
        if (
            spec is not None
            and spec.method == "mtp"
            and rules.v2_multi_module_mtp
            and min(inp.model.num_nextn_predict_layers, k_spec) > 1
        ):
            # init_speculator: use_multi_module_mtp() (min(MTP layers, K) > 1) builds
            # MultiModuleMTPSpeculator, one SpeculatorCudaGraphManager at query length K + 1 whose
            # mode drops PIECEWISE (compiled pieces cannot select the module): FULL_DECODE_ONLY
            # when the mode had FULL graphs, else NONE.
            mm_mode = mode
            if mode.has_piecewise():
                mm_mode = Mode.FULL_DECODE_ONLY if mode.has_full() else Mode.NONE
            drafter = v2_manager(
                sizes,
                max_size,
                mm_mode,
                k_spec + 1,
                _v2_query_lens(inp, rules, k_spec + 1, runs),
                s,
                rules.v2_candidates,
            )
            graphs["drafter"] = drafter.graphs()
            notes.append(
                Note(
                    "multi_module_mtp",
                    f"MTP with {inp.model.num_nextn_predict_layers} MTP layers and K = {k_spec}: vLLM's "
                    f"multi-module MTP speculator captures its whole draft in one {mm_mode.value} "
                    f"manager at query length {k_spec + 1} ({len(graphs['drafter'])} graphs)",
                )
            )
        elif spec is not None and spec.method in parallel_draft.PARALLEL_DRAFTERS:
            dq = parallel_draft.query_len(spec, rules)
            support = parallel_draft.draft_support(inp, rules, as_speculator=True)
            dmode = parallel_draft.drafter_mode(mode, support)
            if mode.decode_mode() is Mode.FULL and dmode is Mode.NONE:
                notes.append(
                    Note(
                        "drafter_eager",
                        # vLLM's words (dflash/speculator.py `init_cudagraph_manager`): the backend
                        # alone, its support level (below UNIFORM_BATCH) is the reason
                        f"{'DFlash' if spec.method == 'dflash' else 'DSpark'} draft attention "
                        f"({parallel_draft.draft_backend(inp, rules)}) does not support full "
                        "CUDA graphs; running the draft eagerly.",
                    )
                )
            graphs["drafter_query"] = (
                v2_manager(sizes, max_size, dmode, dq, [dq], s, rules.v2_candidates).graphs()
                if dmode is not Mode.NONE
                else ()
            )
        elif spec is not None and spec.method in rules.v2_drafter_methods:
            k = spec.num_speculative_tokens
            prefill = v2_manager(
                sizes,
                max_size,
                mode,
                k + 1,
                _v2_query_lens(inp, rules, k + 1, runs),
                s,
                rules.v2_candidates,
                pad_piecewise_reqs=pad,
            )
            graphs["drafter_prefill"] = _drafter_prefill(
                prefill.graphs(), rules.drafter_prefill_full, k, s, max_size
            )
            decode_graphs: tuple[Graph, ...] = ()
            decode_lens = _v2_query_lens(inp, rules, 1, runs)
            if mode.decode_mode() is Mode.FULL:
                _check_drafter_decode_lens(inp, k, decode_lens)
            if k > 1 and mode.decode_mode() is Mode.FULL:
                decode = v2_manager(
                    sizes, max_size, Mode.FULL_DECODE_ONLY, 1, decode_lens, s, rules.v2_candidates
                )
                decode_graphs = decode.graphs()
            per_k = sorted({kb for _, _, kb in runs or []} - {0, 1}, reverse=True)
            fused = draft_decode_metadata_update(
                cap.attn.backend, inp.platform, inp.decode_context_parallel_size
            )
            if rules.drafter_decode_per_k and decode_graphs and per_k and fused:
                # SpeculatorCudaGraphManager.capture(specialize_spec_tokens=...): each decode
                # descriptor once per K of the dense schedule (0 and 1 left out), largest K first
                plain = len(decode_graphs)
                # the constructor, not dataclasses.replace: ~1,900 graphs per plan and fix candidate
                decode_graphs = tuple(
                    Graph(
                        mode=g.mode,
                        num_tokens=g.num_tokens,
                        num_reqs=g.num_reqs,
                        query_len=g.query_len,
                        num_active_loras=g.num_active_loras,
                        num_ubatches=g.num_ubatches,
                        num_speculative_tokens=kk,
                    )
                    for g in decode_graphs
                    for kk in per_k
                )
                notes.append(
                    Note(
                        "drafter_decode_per_k",
                        f"vLLM {inp.vllm_version} captures the {plain} drafter decode graphs once per "
                        f"dynamic-SD K in {sorted(per_k)} ({cap.attn.backend} refreshes decode metadata "
                        f"in place, so the fused decode loop is one graph per K): {len(decode_graphs)} "
                        "graphs",
                    )
                )
            graphs["drafter_decode"] = decode_graphs
    cap.notes, cap.graphs, cap.target = tuple(notes), graphs, target
    return cap


_CAPTURED: dict[tuple[PlanInput, str, tuple[tuple[str, object], ...]], _Captured] = {}
"""The last `captured_graphs` stages (pure, frozen inputs: a cache): the fix search asks for a
candidate's graphs, then plans the candidate in full when they are within budget."""


def _policy_key(policy: CapturePolicy) -> tuple[str, tuple[tuple[str, object], ...]]:
    return policy.name, tuple(sorted(policy.overrides.items()))  # a policy holds a dict


def captured_graphs(inp: PlanInput, policy: CapturePolicy = UPSTREAM) -> dict[str, tuple[Graph, ...]]:
    """The graph families `build_plan(inp, policy=policy)` gives, without its dispatch tables (the
    fix search holds a candidate's graph counts against the budget before it plans dispatch).

    Raises:
        Rejected: the release refuses to start with this config.
    """
    return _captured(inp, policy, complete=True).graphs


def _captured(inp: PlanInput, policy: CapturePolicy, *, complete: bool) -> _Captured:
    """The cached `_capture` stage of `inp` (`complete=False`: `_setup`'s part may do)."""
    key = (inp, *_policy_key(policy))
    got = _CAPTURED.get(key)
    if got is None:
        if len(_CAPTURED) >= 64:
            _CAPTURED.clear()
        got = _CAPTURED[key] = _setup(inp, policy)
    if complete and got.target is None:
        _families(got)
    return got


def target_graphs_floor(inp: PlanInput, policy: CapturePolicy = UPSTREAM) -> int:
    """At least how many graphs `captured_graphs(inp, policy)["target"]` holds, from the ladder and
    the mode alone (V2: its descriptors before microbatched twins, `v2_graph_floor`; V1: 0, its
    dispatcher is cheap to build): the fix search drops a candidate over the graph budget here,
    before any dispatcher is built.

    Raises:
        Rejected: the release refuses to start with this config.
    """
    cap = _captured(inp, policy, complete=False)
    if cap.target is not None:
        return len(cap.graphs["target"])
    if cap.runner == "v1":
        return 0
    q = cap.inp.uniform_decode_query_len
    lens = _v2_query_lens(cap.inp, cap.rules, q, cap.runs)
    return v2_graph_floor(cap.sizes, cap.max_size, cap.mode, q, lens, cap.inp.max_num_seqs, cap.loras)


def build_plan(
    inp: PlanInput,
    *,
    with_fixes: bool = True,
    with_mixed: bool = True,
    policy: CapturePolicy = UPSTREAM,
    search: FixSearch | None = None,
) -> Plan:
    """Plan `inp` exactly as its vLLM release would, with gaps and (optionally) fixes.

    `with_mixed=False` skips the mixed-batch dispatch table. `search` gives the fix search its
    budgets and cost model (default: the default gate's budgets, no cost model).

    Raises:
        Rejected: the release refuses to start with this config.
    """
    cap = _CAPTURED.get((inp, *_policy_key(policy))) if _CAPTURED else None
    if cap is None:
        cap = _capture(inp, policy)
    elif cap.target is None:
        _families(cap)
    inp, rules, notes, runs, runner = cap.inp, cap.rules, cap.notes, cap.runs, cap.runner
    mode, sizes, max_size, graphs, ladder = cap.mode, cap.sizes, cap.max_size, cap.graphs, cap.ladder
    q = inp.uniform_decode_query_len
    s, b = inp.max_num_seqs, inp.max_num_batched_tokens
    mixed_hi = min(b, max_size + 1) if with_mixed else 0
    uniform: dict[int, tuple[DispatchRange, ...]] = {}
    uniform_lora: dict[int, tuple[DispatchRange, ...]] = {}
    tiers = sorted({kb + 1 for _, _, kb in runs}) if runs else [q]
    target = cap.target
    assert target is not None  # _families ran
    if isinstance(target, V1Dispatcher):
        for ql in tiers:
            uniform[ql] = dispatch_table(ql, s, b, partial(_v1_decode, target, ql == q), target.boundaries())
            if inp.enable_lora:
                pick = partial(_v1_decode, target, ql == q, loras=1)
                uniform_lora[ql] = dispatch_table(ql, s, b, pick, target.boundaries())
        mixed = dispatch_table(1, mixed_hi, b, partial(_v1_mixed, target), target.boundaries())
    else:
        for ql in tiers:
            uniform[ql] = _v2_table(target, ql, s, b, 0)
            if inp.enable_lora:
                uniform_lora[ql] = _v2_table(target, ql, s, b, 1)
        mixed = _v2_mixed_table(target, mixed_hi, s, b)

    plan = Plan(
        vllm_version=inp.vllm_version,
        platform=inp.platform.value,
        model_runner=as_model_runner(runner),
        requested_cudagraph_mode=cap.decision.mode.value,
        cudagraph_mode=mode.value,
        attention_backend=cap.attn.backend,
        attention_cudagraph_support=cap.attn.support.name,
        capture_sizes=sizes,
        max_capture_size=max_size,
        uniform_decode_query_len=q,
        max_num_seqs=s,
        max_num_batched_tokens=b,
        dynamic_sd_lookup=tuple(runs) if runs else None,
        graphs=graphs,
        uniform_decode=uniform,
        mixed=mixed,
        notes=tuple(notes),
        piecewise_pieces_per_graph=inp.model.num_hidden_layers + 1,
        uniform_decode_lora=uniform_lora,
        piecewise_pieces=_pieces(inp, graphs),
        assumed=assumed_defaults(inp, rules, mode.value, runner),
        kv_bytes_per_token=kv_bytes_per_token(inp),
        kv_withheld=kv_withheld(inp),
        graph_memory_reserved=runner != "v2" or rules.v2_reserves_cudagraph_memory or mode is Mode.NONE,
        compilation_mode=cap.decision.compilation.name,
        breakable_cudagraphs=cap.decision.compilation.breakable,
        cost_withheld=cost_withheld(cap.decision.compilation) + model_caveats(inp.model, rules),
    )
    gaps = find_gaps(plan, ladder, inp, rules)
    plan = replace(plan, gaps=gaps)
    if with_fixes and gaps:
        if search is None:
            from cgplan.core.plan.budgets import DEFAULT_BUDGETS

            search = FixSearch(DEFAULT_BUDGETS)
        fixes = propose_fixes(
            plan,
            inp,
            ladder,
            partial(_replan, policy=policy),
            search,
            rules,
            partial(captured_graphs, policy=policy),
            partial(target_graphs_floor, policy=policy),
        )
        plan = replace(plan, fixes=fixes)
    return plan


def _pieces(inp: PlanInput, graphs: dict[str, tuple[Graph, ...]]) -> tuple[tuple[str, int], ...]:
    """CUDA graphs per PIECEWISE descriptor, family by family: a dense model's compiled pieces are
    its layers + 1 (the drafter's are its own: an EAGLE head's one layer gives 2)."""
    spec = inp.speculative
    drafter = drafter_shape(inp.model, spec.draft_model if spec else None, spec.method if spec else None)
    return tuple(
        (f, (inp.model if f == "target" else drafter).num_hidden_layers + 1)
        for f, gs in graphs.items()
        if any(g.mode == "PIECEWISE" for g in gs)
    )


def _replan(inp: PlanInput, policy: CapturePolicy) -> Plan:
    # The mixed table too: a fix must not make any mixed batch worse either.
    return plan_again(inp, policy)


_AGAIN: dict[tuple[PlanInput, str, tuple[tuple[str, object], ...]], Plan] = {}
"""The last plans `plan_again` made (a pure function of its arguments, so a cache; a Plan is
frozen): the fix search plans every candidate, then pricing its fixes in time plans the kept
ones again."""


def plan_again(inp: PlanInput, policy: CapturePolicy = UPSTREAM) -> Plan:
    """`build_plan(inp, with_fixes=False, policy=policy)`, remembered for the last few inputs.

    Raises:
        Rejected: the release refuses to start with this config.
    """
    key = (inp, *_policy_key(policy))
    got = _AGAIN.get(key)
    if got is None:
        got = build_plan(inp, with_fixes=False, with_mixed=True, policy=policy)
        if len(_AGAIN) >= 64:
            _AGAIN.clear()
        _AGAIN[key] = got
    return got
