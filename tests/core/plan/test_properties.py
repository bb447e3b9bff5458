"""Invariants of every plan over random valid configs (hypothesis)."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cgplan.core.model.modes import Mode, Platform
from cgplan.core.model.spec import ModelShape, PlanInput, SpeculativeSpec
from cgplan.core.model.types import Rejected
from cgplan.core.plan.build import build_plan
from cgplan.core.vllm.releases import SUPPORTED_VERSIONS


@st.composite
def plan_inputs(draw: st.DrawFn) -> PlanInput:
    s = draw(st.integers(1, 300))
    spec = None
    if draw(st.booleans()):
        k = draw(st.integers(1, 16))
        method = draw(st.sampled_from(["eagle", "eagle3", "mtp", "ngram", "draft_model"]))
        sched = None
        if draw(st.booleans()):
            cut = draw(st.integers(1, max(1, s)))
            sched = (
                (1, cut, draw(st.integers(0, 20))),
                (cut + 1, cut + draw(st.integers(1, 400)), draw(st.integers(0, 20))),
            )
        spec = SpeculativeSpec(method, k, sched)
    explicit = None
    if draw(st.integers(0, 4)) == 0:
        explicit = tuple(draw(st.lists(st.integers(1, 2048), min_size=1, max_size=40)))
    max_size = None if explicit is not None or draw(st.booleans()) else draw(st.integers(1, 2048))
    return PlanInput(
        vllm_version=draw(st.sampled_from(SUPPORTED_VERSIONS)),
        platform=draw(st.sampled_from(list(Platform))),
        model=ModelShape(is_moe=draw(st.booleans()), use_mla=draw(st.booleans())),
        max_num_seqs=s,
        max_num_batched_tokens=draw(st.integers(s, 16384)),
        speculative=spec,
        cudagraph_mode=draw(st.sampled_from([None, *Mode])),
        max_cudagraph_capture_size=max_size,
        cudagraph_capture_sizes=explicit,
        performance_mode=draw(st.sampled_from([None, "interactivity"])),
        model_runner=draw(st.sampled_from(["auto", "v1", "v2"])),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan_inputs())
def test_plan_invariants(inp: PlanInput) -> None:
    try:
        plan = build_plan(inp, with_fixes=False)
    except Rejected:
        return
    sizes = list(plan.capture_sizes)
    assert sizes == sorted(set(sizes))
    assert all(1 <= x <= inp.max_num_batched_tokens for x in sizes)
    assert plan.max_capture_size == (sizes[-1] if sizes else 0)
    for graphs in plan.graphs.values():
        for g in graphs:
            assert g.num_tokens <= max(plan.max_capture_size, 0)
            assert g.num_reqs is None or g.num_reqs <= inp.max_num_seqs
    gap_cover = {(g.query_len, n) for g in plan.gaps for n in range(g.first, g.last + 1)}
    for ql, ranges in plan.uniform_decode.items():
        for r in ranges:
            for n in range(r.first, r.last + 1):
                if r.mode == "NONE":
                    in_tier = plan.dynamic_sd_lookup is None or any(
                        a <= n <= b and k + 1 == ql for a, b, k in plan.dynamic_sd_lookup
                    )
                    if in_tier and plan.cudagraph_mode != "NONE":
                        assert (ql, n) in gap_cover, (ql, n)
                else:
                    assert r.padded_tokens is not None and r.padded_tokens >= n * ql
                    assert r.padded_tokens in plan.capture_sizes or plan.model_runner == "v2"
    for r in plan.mixed:
        if r.mode != "NONE":
            assert r.padded_tokens is not None and r.padded_tokens >= r.last


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan_inputs())
def test_interval_dispatch_equals_per_batch_dispatch(inp: PlanInput) -> None:
    """The O(graphs) dispatch table is exactly the O(max_num_seqs) per-batch definition."""
    from unittest import mock

    from cgplan.core.plan import build as plan_mod
    from cgplan.core.vllm import graphs as graphs_mod

    fast = plan_mod.dispatch_table
    checked: list[int] = []

    def both(query_len: int, max_batches: int, max_tokens: int, pick: Any, boundaries: list[int]) -> Any:
        got = fast(query_len, max_batches, max_tokens, pick, boundaries)
        assert got == plan_mod.naive_dispatch_table(query_len, max_batches, max_tokens, pick)
        checked.append(1)
        return got

    graphs_mod._MANAGERS.clear()  # tables are made once per manager: make them here
    with mock.patch.object(plan_mod, "dispatch_table", both):
        try:
            build_plan(inp, with_fixes=False)
        except Rejected:
            return
    assert checked


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan_inputs(), st.integers(min_value=1, max_value=5000))
def test_shared_managers_and_tables_change_no_plan(inp: PlanInput, other_seqs: int) -> None:
    """A plan made after another config filled the manager and table memo (issue 18) is the plan made
    without the memo: max_num_seqs enters the memo's keys only as far as it changes the answer."""
    import dataclasses
    from unittest import mock

    from cgplan.core.plan import build as plan_mod
    from cgplan.core.vllm import graphs as graphs_mod

    def planned() -> object:
        try:
            return build_plan(inp, with_fixes=False)
        except Rejected as e:
            return str(e)

    with mock.patch.object(plan_mod, "v2_manager", graphs_mod.V2Manager):  # no memo at all
        alone = planned()
    graphs_mod._MANAGERS.clear()
    with contextlib.suppress(Rejected, ValueError):
        build_plan(dataclasses.replace(inp, max_num_seqs=other_seqs), with_fixes=False)
    assert planned() == alone
