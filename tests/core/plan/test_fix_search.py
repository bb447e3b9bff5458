"""The fix search (issue 13): every printed fix, planned again, closes every gap or says it is partial;
none opens a gap or breaks the default gate's budgets; each states its memory and time deltas; its
flags are one shell-quoted line that pastes into bash (issue 14 item 1)."""

from __future__ import annotations

import dataclasses
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cgplan.api.plan import plan_file, plan_vllm_args, shipped_coefficients_for
from cgplan.core.compare.gate import DEFAULT_BUDGETS, DEFAULT_POLICY
from cgplan.core.model.modes import Mode, Platform
from cgplan.core.model.spec import ModelShape, PlanInput
from cgplan.core.model.types import Fix, Plan, Rejected
from cgplan.core.plan import build as plan_mod
from cgplan.core.plan.budgets import FixBudgets
from cgplan.core.plan.build import build_plan
from cgplan.core.plan.gaps import FixSearch, _mixed_runs, _runs, worse_somewhere
from cgplan.core.plan.policies import UPSTREAM
from cgplan.core.predict.cost import CostCoefficients
from cgplan.io.config import load_config
from cgplan.io.cost_coefficients import default_coefficients
from tests.core.plan.test_properties import plan_inputs
from tests.paths import ROOT_DIR, TESTS_DIR

ROOT = ROOT_DIR
DATA = TESTS_DIR / "data" / "fixes"
CONFIGS = sorted(
    p
    for p in [*(ROOT / "configs").rglob("*.yaml"), *DATA.glob("*.yaml")]
    # configs/deploy/ holds Kubernetes manifests, not `vllm serve --config` files: their plans are
    # held to the same command line's in tests/io/test_deploy_inputs.py
    if p.parent.name not in ("gates", "traffic", "cost", "deploy") and "models" not in p.parts
)
SEARCH = FixSearch(DEFAULT_BUDGETS, default_coefficients())
LIMIT = DEFAULT_POLICY.max_graphs_per_family["*"]


def apply_fix(inp: PlanInput, fix: Fix) -> PlanInput:
    """The fix's dotted config changes applied to the planner input."""
    out = inp
    for key, value in fix.config_change:
        name = key.split(".")[-1]
        if name == "cudagraph_mode":
            out = dataclasses.replace(out, cudagraph_mode=None if value is None else Mode(value))
        elif name == "cudagraph_capture_sizes":
            assert value is None or isinstance(value, (list, tuple))
            sizes = None if value is None else tuple(int(v) for v in value)
            out = dataclasses.replace(out, cudagraph_capture_sizes=sizes)
        elif key == "compilation_config.mode":  # the PlanInput field is compilation_mode
            assert value is None or isinstance(value, int)
            out = dataclasses.replace(out, compilation_mode=value)
        elif name == "num_speculative_tokens_per_batch_size":
            assert out.speculative is not None and isinstance(value, list)
            sched = tuple(tuple(e) for e in value)
            out = dataclasses.replace(
                out,
                speculative=dataclasses.replace(out.speculative, num_speculative_tokens_per_batch_size=sched),
            )
        else:
            out = dataclasses.replace(out, **{name: value})  # type: ignore[arg-type]
    return out


def check_fix(plan: Plan, inp: PlanInput, fix: Fix, coefficients: CostCoefficients | None = None) -> None:
    """`coefficients`: the cost set the plan was priced with (SEARCH's by default)."""
    after = build_plan(apply_fix(inp, fix), with_fixes=False)
    assert len(after.gaps) == fix.remaining_gaps
    if fix.complete:
        assert not after.gaps, fix
    else:
        assert after.gaps and fix.still_open, fix  # labelled partial, saying what stays open
    assert not worse_somewhere(_runs(plan), _runs(after)), f"{fix.command_line} makes a decode batch worse"
    assert not worse_somewhere(_mixed_runs(plan), _mixed_runs(after)), f"{fix.command_line}: a mixed batch"
    for family, graphs in after.graphs.items():
        assert len(graphs) <= max(LIMIT, len(plan.graphs.get(family, ()))), (family, len(graphs))
    assert not fix.over_budget
    assert sum(len(g) for g in after.graphs.values()) == fix.graphs_after
    assert fix.step_padding_after is not None and "padding" in fix.summary
    # memory and capture time are priced where the cost model gives both plans a figure, and
    # only there (an attention backend or model kind it has no term for: none, issue 29)
    from cgplan.core.predict.cost import plan_cost_totals

    c = coefficients or SEARCH.coefficients
    assert c is not None
    priced = all(
        plan_cost_totals(p, i, c).domain.figure for p, i in ((plan, inp), (after, apply_fix(inp, fix)))
    )
    assert (fix.pool_after_mib is not None) == (fix.capture_after_s is not None) == priced, fix
    assert ("MiB" in fix.summary and " s (" in fix.summary) == priced, fix.summary
    line = fix.command_line
    assert "\n" not in line
    assert shlex.split(line) == [w for words in fix.argv for w in words]


@st.composite
def serve_configs(draw: st.DrawFn) -> PlanInput:
    inp = draw(plan_inputs())
    return dataclasses.replace(
        inp,
        enforce_eager=draw(st.integers(0, 9)) == 0,
        optimization_level=draw(st.sampled_from([0, 1, 2, 2, 2, 3])),
    )


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(serve_configs())
def test_every_fix_closes_or_is_partial(inp: PlanInput) -> None:
    try:
        plan = build_plan(inp, search=SEARCH)
    except Rejected:
        return
    for fix in plan.fixes:
        check_fix(plan, inp, fix)
    if plan.fixes and not plan.fixes[0].complete:
        assert len(plan.fixes) == 1  # a partial fix only where no complete one exists


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(serve_configs(), st.booleans())
def test_budget_precheck_keeps_the_same_fixes(inp: PlanInput, over: bool) -> None:
    """Dropping over-budget stage-two candidates from their graphs alone (before their dispatch
    tables) gives the same fixes as planning every candidate in full (issue 18)."""
    from cgplan.core.plan.gaps import propose_fixes
    from cgplan.core.vllm.ladder import capture_ladder
    from cgplan.core.vllm.releases import rules_for

    search = dataclasses.replace(SEARCH, allow_over_budget=over)
    try:
        plan = build_plan(inp, with_fixes=False)
    except Rejected:
        return
    if not plan.gaps:
        return
    rules = rules_for(inp.vllm_version)
    ladder = capture_ladder(inp, rules, plan.requested_cudagraph_mode != "NONE", False)

    def replan(i: PlanInput) -> Plan:
        return build_plan(i, with_fixes=False)

    full = propose_fixes(plan, inp, ladder, replan, search, rules)
    checked = propose_fixes(plan, inp, ladder, replan, search, rules, plan_mod.captured_graphs)
    assert checked == full
    # without `rules`, the release's own (what build_plan passes under vLLM's policy)
    assert propose_fixes(plan, inp, ladder, replan, search) == full


def test_over_budget_candidates_plan_no_dispatch() -> None:
    """The issue's config (EAGLE K=16, 1,024 requests, 4-range dynamic SD): its six stage-two
    candidates over the graph budget are dropped from their graphs, before any dispatch table."""
    inp = load_config(ROOT / "benchmarks/configs/eagle-k16-mns1024-dyn4.yaml").input
    calls = [0]
    real = plan_mod.build_plan

    def counting(*a: Any, **k: Any) -> Plan:
        calls[0] += 1
        plan: Plan = real(*a, **k)
        return plan

    plan_mod._AGAIN.clear()
    plan_mod._CAPTURED.clear()
    plan_mod.build_plan = counting
    try:
        plan = real(inp, search=SEARCH)
    finally:
        plan_mod.build_plan = real
    assert len(plan.fixes) == 4 and all(f.complete for f in plan.fixes)
    assert calls[0] == 8, calls  # 14 candidates, 6 of them over 400 graphs in a family


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan_inputs())
def test_target_graphs_floor_bounds_the_target_graphs(inp: PlanInput) -> None:
    """`target_graphs_floor` (the ladder and mode alone) never exceeds the target graphs a config
    captures, and equals them without DBO's microbatched twins (issue 18)."""
    plan_mod._CAPTURED.clear()
    try:
        floor = plan_mod.target_graphs_floor(inp)
        graphs = plan_mod.captured_graphs(inp)["target"]
    except Rejected:
        return
    assert floor <= len(graphs)
    if plan_mod._captured(inp, UPSTREAM, complete=True).runner == "v2":
        assert floor == len(graphs) - sum(1 for g in graphs if g.num_ubatches > 1)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(serve_configs(), st.booleans())
def test_floor_precheck_keeps_the_same_fixes(inp: PlanInput, over: bool) -> None:
    """Dropping stage-two candidates whose target graphs' lower bound is over budget (before any
    dispatcher is built) gives the same fixes as the graph precheck alone and as planning every
    candidate in full (issue 18)."""
    from cgplan.core.plan.gaps import propose_fixes
    from cgplan.core.vllm.ladder import capture_ladder
    from cgplan.core.vllm.releases import rules_for

    search = dataclasses.replace(SEARCH, allow_over_budget=over)
    try:
        plan = build_plan(inp, with_fixes=False)
    except Rejected:
        return
    if not plan.gaps:
        return
    rules = rules_for(inp.vllm_version)
    ladder = capture_ladder(inp, rules, plan.requested_cudagraph_mode != "NONE", False)

    def replan(i: PlanInput) -> Plan:
        return build_plan(i, with_fixes=False)

    full = propose_fixes(plan, inp, ladder, replan, search, rules)
    graphs_of, floor_of = plan_mod.captured_graphs, plan_mod.target_graphs_floor
    assert propose_fixes(plan, inp, ladder, replan, search, rules, graphs_of, floor_of) == full


def test_the_ladder_bound_plans_no_candidate_whose_sizes_are_over_budget() -> None:
    """`propose_fixes` with a bare `replan` (no `graphs_of` or `target_floor` precheck): a
    candidate whose ladder alone holds more sizes than the graph budget allows (here the request
    grid 8..64 added to a 36-size list, 44 sizes against 40 graphs a family) is never planned, and
    the fixes are those of the search that plans it (issue 18's bound, `_cheap_bound`)."""
    from cgplan.core.plan.gaps import propose_fixes
    from cgplan.core.vllm.ladder import capture_ladder
    from cgplan.core.vllm.releases import rules_for

    inp = PlanInput(
        vllm_version="0.33.0",
        platform=Platform.HOPPER,
        model=ModelShape(),
        max_num_seqs=64,
        max_num_batched_tokens=256,
        cudagraph_capture_sizes=(1, 2, 4, *range(100, 133)),
        model_runner="v1",
    )
    search = FixSearch(FixBudgets(max_graphs_per_family=(("*", 40),)))
    plan = build_plan(inp, with_fixes=False)
    assert len(plan.graphs["target"]) <= 40 and plan.gaps
    rules = rules_for(inp.vllm_version)
    planned: list[PlanInput] = []

    def replan(i: PlanInput) -> Plan:
        planned.append(i)
        return build_plan(i, with_fixes=False)

    fixes = propose_fixes(plan, inp, capture_ladder(inp, rules, True, False), replan, search, rules)
    assert fixes == build_plan(inp, search=search).fixes and fixes
    assert planned
    for cand in planned:
        sizes = capture_ladder(cand, rules, True, False).sizes_tokens
        assert len(sizes) <= 40, (len(sizes), cand.cudagraph_mode)


@pytest.mark.parametrize("runner", ["v1", "v2"])
def test_a_decode_only_mode_is_not_bounded_by_its_size_count(runner: str) -> None:
    """FULL_DECODE_ONLY captures no graph for a size above the widest decode step: a list of 43
    sizes, 41 of them above it, holds 2 target graphs, and the fix that appends decode sizes stays
    within 40 graphs a family although its list is longer (the ladder bound counts sizes only
    where the mode keeps a mixed half)."""
    inp = PlanInput(
        vllm_version="0.33.0",
        platform=Platform.HOPPER,
        model=ModelShape(),
        max_num_seqs=8,
        max_num_batched_tokens=128,
        cudagraph_mode=Mode.FULL_DECODE_ONLY,
        cudagraph_capture_sizes=(1, 2, *range(80, 121)),
        model_runner=runner,
    )
    search = FixSearch(FixBudgets(max_graphs_per_family=(("*", 40),)))
    plan = build_plan(inp, search=search)
    assert plan.gaps and plan.fixes and plan.fixes[0].complete
    for fix in plan.fixes:
        fixed = apply_fix(inp, fix)
        after = build_plan(fixed, with_fixes=False)
        assert not after.gaps and len(fixed.cudagraph_capture_sizes or ()) > 40
        assert all(len(g) <= 40 for g in after.graphs.values()), fix.command_line


def test_over_budget_candidates_build_no_dispatcher() -> None:
    """The issue's config: its six stage-two candidates over the graph budget are dropped from
    their ladders, before their V2 managers and graphs are made (15 family stages before, one
    per plan and candidate; the JSON is the same, tests/golden)."""
    inp = load_config(ROOT / "benchmarks/configs/eagle-k16-mns1024-dyn4.yaml").input
    calls = [0]
    real = plan_mod._families

    def counting(cap: Any) -> Any:
        calls[0] += 1
        return real(cap)

    plan_mod._AGAIN.clear()
    plan_mod._CAPTURED.clear()
    plan_mod._families = counting
    try:
        plan = plan_mod.build_plan(inp, search=SEARCH)
    finally:
        plan_mod._families = real
    assert len(plan.fixes) == 4 and all(f.complete for f in plan.fixes)
    assert calls[0] == 9, calls  # the config and the 8 candidates planned


def _bash_words(line: str) -> list[str]:
    out = subprocess.run(
        ["bash", "-c", "printf '%s\\0' " + line], capture_output=True, check=True, text=True
    ).stdout
    return out.split("\0")[:-1]


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_every_config_fix_pastes_and_closes(path: Path) -> None:
    """For every config under configs/: the printed flags, pasted into a shell after
    `vllm serve --config FILE`, plan to what the fix promised."""
    try:
        loaded, plan = plan_file(path)
    except Rejected:
        return
    for fix in plan.fixes:
        check_fix(plan, loaded.input, fix, shipped_coefficients_for(loaded.input))
        words = _bash_words(fix.command_line) if shutil.which("bash") else shlex.split(fix.command_line)
        assert words == [w for ws in fix.argv for w in ws]
        if shutil.which("zsh"):
            zsh = subprocess.run(
                ["zsh", "-c", "printf '%s\\0' " + fix.command_line],
                capture_output=True,
                check=True,
                text=True,
            ).stdout.split("\0")[:-1]
            assert zsh == words
        _, pasted = plan_vllm_args(["serve", "--config", str(path), *words], base_dir=ROOT, with_fixes=False)
        assert len(pasted.gaps) == fix.remaining_gaps, fix.command_line
        assert sum(len(g) for g in pasted.graphs.values()) == fix.graphs_after


def test_issue_dyn4_fixes_close_every_gap_within_budget() -> None:
    """Before: the first fix left 7 of 20 gaps open and the alternative took gaps 20 → 118 and
    graphs 528 → 1,487, over the default gate's 400 per family; both printed as fixes."""
    _, plan = plan_file(ROOT / "configs/examples/mns1024-eagle-k16-dyn4.yaml")
    assert len(plan.gaps) == 20
    assert plan.fixes
    for fix in plan.fixes:
        assert fix.complete and fix.remaining_gaps == 0
        assert fix.graphs_after <= 3 * LIMIT


def test_issue_fdo_explicit_list_why_and_fix() -> None:
    """Before: "infers the maximum as min(max_num_seqs×1×2, 512) = 512" though the list set it to 8,
    and the only fix padded every batch 9..1024 to 1024 tokens."""
    _, plan = plan_file(DATA / "fdo-1248-8b.yaml")
    assert plan.gaps and "infers" not in plan.gaps[0].reason
    assert "cudagraph_capture_sizes list ends at 8" in plan.gaps[0].reason
    best = plan.fixes[0]
    assert best.complete and best.step_padding_after is not None
    assert best.step_padding_after.mean_pct < 25
    # the list is replaced whole: vLLM refuses --cudagraph-capture-sizes beside a JSON that sets it
    assert best.command_line.startswith("--compilation-config '{")


def test_issue_enforce_eager_offers_dropping_it() -> None:
    """Before: "no flag change found that closes them"."""
    _, plan = plan_file(DATA / "eager-8b.yaml")
    assert plan.fixes and plan.fixes[0].command_line == "--no-enforce-eager"
    assert plan.fixes[0].complete


@pytest.mark.parametrize("reason_has", ["explicitly", "max_num_seqs×", "ceiling", "max_num_batched_tokens"])
def test_why_names_the_origin_of_the_maximum(reason_has: str) -> None:
    base = load_config(ROOT / "configs/examples/pr50488-eagle-k16.yaml").input
    inp = {
        "explicitly": dataclasses.replace(base, max_cudagraph_capture_size=256),
        "max_num_seqs×": dataclasses.replace(base, max_num_seqs=8, max_num_batched_tokens=8192),
        "ceiling": base,
        "max_num_batched_tokens": dataclasses.replace(base, max_num_batched_tokens=300),
    }[reason_has]
    if reason_has in ("max_num_seqs×", "max_num_batched_tokens"):
        # 8 × 17 × 2 = 272 < 512 (inferred from max_num_seqs), or capped by B = 300: no batch is
        # then eager, so the maximum's origin is checked directly
        from cgplan.core.plan.gaps import max_origin
        from cgplan.core.vllm.ladder import capture_ladder
        from cgplan.core.vllm.releases import rules_for

        text = max_origin(inp, capture_ladder(inp, rules_for(inp.vllm_version), True, False))
        if reason_has == "max_num_seqs×":
            assert "infers the maximum from max_num_seqs" in text and "= 272" in text
        else:
            assert "caps it at max_num_batched_tokens 300" in text
        return
    plan = build_plan(inp)
    assert plan.gaps
    assert reason_has in plan.gaps[0].reason, plan.gaps[0].reason
    assert f"vLLM {inp.vllm_version}" in plan.gaps[0].reason


def test_search_replans_a_bounded_number_of_candidates() -> None:
    """The search costs the same number of plans at max_num_seqs 4,096 and 10^6: candidates whose
    ladder alone exceeds the graph budget are never planned."""
    base = load_config(ROOT / "configs/gpu/llama8b-mns256.yaml").input
    counts = []
    for s in (4096, 1_000_000):
        calls = [0]
        real = plan_mod.build_plan

        def counting(*a: Any, _real: Any = real, _calls: list[int] = calls, **k: Any) -> Plan:
            _calls[0] += 1
            plan: Plan = _real(*a, **k)
            return plan

        inp = dataclasses.replace(base, max_num_seqs=s, max_num_batched_tokens=s)
        plan_mod.build_plan = counting
        try:
            plan = real(inp, search=SEARCH)
        finally:
            plan_mod.build_plan = real
        assert plan.gaps
        counts.append(calls[0])
    assert counts[1] <= counts[0] + 2 and counts[1] <= 16, counts


def test_allow_over_budget_flag(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cli_helpers import run

    path = str(ROOT / "configs/examples/pr50488-eagle-k16.yaml")
    code, out, _ = run(monkeypatch, capsys, "plan", "--allow-over-budget", path)
    assert code == 0 and "fix: --max-cudagraph-capture-size 544" in out


def test_fix_line_is_unbroken_at_any_width(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: long flags were folded with newlines in the middle of numbers (…,128,136,1⏎44,…)."""
    from cgplan.render.plan import render_table

    _, plan = plan_file(ROOT / "configs/examples/mns1024-eagle-k16-dyn4.yaml")
    for width in (40, 80, 100, 200):
        text = render_table(plan, width=width)
        for fix in plan.fixes:
            assert fix.command_line in text.replace("fix: ", "\n").replace("or: ", "\n").splitlines() or any(
                line.endswith(fix.command_line) for line in text.splitlines()
            ), width
