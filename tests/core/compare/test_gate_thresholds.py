"""Every gate check on both sides of its threshold (issue 35), held to the contract the gate states
(cgplan/core/compare/gate.py `GatePolicy` and `evaluate_gate`, configs/gates/default.yaml, README
"Diff, sweep and the CI gate"): a figure at its limit passes and one over it fails, each check
states its figure beside its limit (`235 ≤ 400`), a check never holds for want of data, a skipped
check counts as passed, and `cgplan gate` exits 0 when every target passes, 1 when one fails and
2 on a bad policy.

The sides are real: the bundled example configs planned with vLLM 0.33.0's rules and the H200
capture reports under benchmarks/results/h200 (complete and partial). Only the limits vary, set
from each side's own figure (at it, one graph / one byte / a hair under it)."""

from __future__ import annotations

import dataclasses
import functools
import math
from pathlib import Path

import pytest

from cgplan.api.sides import load_side
from cgplan.core.compare import gate
from cgplan.core.compare.gate import (
    Check,
    GatePolicy,
    GateResult,
    budgets_of,
    evaluate_gate,
    extrapolated,
    regressions,
)
from cgplan.core.compare.sides import Side, decode_gaps, padding
from cgplan.core.plan.budgets import FixBudgets
from tests.cli_helpers import run
from tests.paths import ROOT_DIR

PR50488 = ROOT_DIR / "configs/examples/pr50488-eagle-k16.yaml"
"""EAGLE K=16, 32 requests: three graph families (85 + 85 + 8), 31-32 requests eager."""
DYN4 = ROOT_DIR / "configs/examples/mns1024-eagle-k16-dyn4.yaml"
"""Four dynamic-SD tiers: eager and PIECEWISE runs, a tier with no replayed batch."""
NOSPEC = ROOT_DIR / "configs/gpu/tiny-nospec.yaml"
"""One family (18 target graphs), every uniform-decode batch FULL."""
EAGLE = ROOT_DIR / "configs/gpu/tiny-eagle-k16.yaml"
EAGLE_MAX544 = ROOT_DIR / "configs/gpu/tiny-eagle-k16-max544.yaml"
"""tiny-eagle-k16 with the fix for its gap: more graphs, 31-32 requests FULL."""
H200 = ROOT_DIR / "benchmarks/results/h200"
EAGLE_REPORT = H200 / "tiny-eagle-k16-vllm.json"
MED_REPORT = H200 / "med-llama-mns256-vllm.json"
OOM_REPORT = H200 / "faults/oom-torch-8b.json"
"""A partial capture (out of memory) with a pool figure and a capture time."""

NOTHING = GatePolicy(
    no_eager_uniform_decode=False,
    widest_decode_full=False,
    max_graphs_per_family={},
    no_regression=False,
    max_graph_growth_pct=None,
)
"""Every check off: each test switches on the one it holds."""
GIB = 2**30
"""The gate's GiB: `max_pool_gib` is in units of 2^30 bytes."""


@functools.cache
def side(path: Path) -> Side:
    return load_side(path)


def only(
    policy_changes: dict[str, object], target: Path | Side, baseline: Path | Side | None = None
) -> Check:
    """The one check `policy_changes` switches on, for `target` (a path or a side)."""
    tside = target if isinstance(target, Side) else side(target)
    bside = baseline if baseline is None or isinstance(baseline, Side) else side(baseline)
    result = evaluate_gate(dataclasses.replace(NOTHING, **policy_changes), tside, bside)  # type: ignore[arg-type]
    # the two checks no policy switches off: the eager share (stated without a limit) and a
    # partial capture's capture_complete
    always = {"max_eager_time_share", "capture_complete"} - set(policy_changes)
    checks = [c for c in result.checks if c.name not in always]
    assert len(checks) == 1, checks
    return checks[0]


def graphs_of(s: Side) -> dict[str, int]:
    return {f: len(g) for f, g in s.graphs.items()}


# ---------------------------------------------------------------------------- graph counts


def test_per_family_limit_holds_at_the_widest_family_and_fails_one_under() -> None:
    counts = graphs_of(side(PR50488))
    assert counts == {"target": 85, "drafter_prefill": 85, "drafter_decode": 8}
    at = only({"max_graphs_per_family": {"*": 85}}, PR50488)
    assert (at.name, at.passed, at.value, at.limit) == ("max_graphs_per_family[*]", True, 85, 85)
    # several families under "*": the largest named (the first of equals), and how many there are
    assert at.detail == "85 ≤ 85 (target, the largest of 3 families)"
    over = only({"max_graphs_per_family": {"*": 84}}, PR50488)
    assert (over.passed, over.value, over.limit) == (False, 85, 84)
    assert over.detail == "target: 85 > 84, drafter_prefill: 85 > 84"  # every family over it, none under


def test_one_family_under_star_is_named_beside_its_figure() -> None:
    assert graphs_of(side(NOSPEC)) == {"target": 18}
    at = only({"max_graphs_per_family": {"*": 18}}, NOSPEC)
    assert (at.passed, at.detail, at.value) == (True, "target: 18 ≤ 18", 18)
    over = only({"max_graphs_per_family": {"*": 17}}, NOSPEC)
    assert (over.passed, over.detail) == (False, "target: 18 > 17")


def test_a_named_family_is_held_alone() -> None:
    at = only({"max_graphs_per_family": {"drafter_decode": 8}}, PR50488)
    assert (at.name, at.passed, at.detail, at.value) == (
        "max_graphs_per_family[drafter_decode]",
        True,
        "drafter_decode: 8 ≤ 8",
        8,
    )
    over = only({"max_graphs_per_family": {"drafter_decode": 7}}, PR50488)
    assert (over.passed, over.detail) == (False, "drafter_decode: 8 > 7")
    # a family the plan does not have holds 0 graphs
    absent = only({"max_graphs_per_family": {"drafter_query": 0}}, PR50488)
    assert (absent.passed, absent.detail, absent.value) == (True, "drafter_query: 0 ≤ 0", 0)


def test_each_family_limit_is_its_own_check_in_name_order() -> None:
    policy = dataclasses.replace(NOTHING, max_graphs_per_family={"target": 85, "*": 84, "drafter_decode": 7})
    result = evaluate_gate(policy, side(PR50488))
    assert [(c.name, c.passed) for c in result.checks] == [
        ("max_graphs_per_family[*]", False),
        ("max_graphs_per_family[drafter_decode]", False),
        ("max_graphs_per_family[target]", True),
        ("max_eager_time_share", True),  # stated without a limit
    ]
    assert not result.passed


def test_total_limit_holds_at_the_sum_of_the_families_and_fails_one_under() -> None:
    total = sum(graphs_of(side(PR50488)).values())
    assert total == 178
    at = only({"max_total_graphs": total}, PR50488)
    assert (at.name, at.passed, at.detail, at.value, at.limit) == (
        "max_total_graphs",
        True,
        "178 ≤ 178 graphs",
        178,
        178,
    )
    over = only({"max_total_graphs": total - 1}, PR50488)
    assert (over.passed, over.detail, over.value, over.limit) == (False, "178 > 177 graphs", 178, 177)


def test_total_and_per_family_limits_are_separate() -> None:
    """No family over its limit, the total over: only the total fails (and the other way round)."""
    policy = dataclasses.replace(NOTHING, max_graphs_per_family={"*": 85}, max_total_graphs=177)
    checks = {c.name: c.passed for c in evaluate_gate(policy, side(PR50488)).checks}
    assert checks == {
        "max_graphs_per_family[*]": True,
        "max_total_graphs": False,
        "max_eager_time_share": True,
    }
    policy = dataclasses.replace(NOTHING, max_graphs_per_family={"*": 84}, max_total_graphs=178)
    checks = {c.name: c.passed for c in evaluate_gate(policy, side(PR50488)).checks}
    assert checks == {
        "max_graphs_per_family[*]": False,
        "max_total_graphs": True,
        "max_eager_time_share": True,
    }


def test_graph_limits_fail_on_a_partial_capture_even_under_the_limit() -> None:
    s = side(OOM_REPORT)
    assert s.status == "partial" and graphs_of(s) == {"target": 30}
    fam = only({"max_graphs_per_family": {"*": 400}}, s)
    assert not fam.passed and fam.value == 30
    assert fam.detail.startswith("capture partial (out of memory during capture: ")
    assert fam.detail.endswith(": 30 of 86 planned graphs captured (missing target 56)")
    total = only({"max_total_graphs": 500}, s)
    assert not total.passed
    assert total.detail.startswith("30 ≤ 500 graphs; capture partial (")
    assert total.detail.endswith("30 of 86 planned graphs captured (missing target 56)")
    # over the limit as well: the figure alone says why
    over = only({"max_total_graphs": 29}, s)
    assert (over.passed, over.detail) == (False, "30 > 29 graphs")
    over_fam = only({"max_graphs_per_family": {"*": 29}}, s)
    assert (over_fam.passed, over_fam.detail) == (False, "target: 30 > 29")


def test_an_empty_graph_table_fails_the_graph_limits() -> None:
    s = dataclasses.replace(side(NOSPEC), graphs={})
    fam = only({"max_graphs_per_family": {"*": 400}}, s)
    total = only({"max_total_graphs": 400}, s)
    why = "no graphs at all (an empty graph table proves nothing)"
    assert (fam.passed, fam.detail, fam.value) == (False, why, 0)
    assert (total.passed, total.detail) == (False, f"0 ≤ 400 graphs; {why}")


# ---------------------------------------------------------------------------- memory and time


def test_pool_limit_holds_at_the_figure_and_fails_one_byte_under() -> None:
    for path, source in ((PR50488, "predicted"), (EAGLE_REPORT, "measured")):
        s = side(path)
        assert s.pool_bytes is not None
        gib = s.pool_bytes / GIB
        at = only({"max_pool_gib": gib}, s)
        assert at.passed and at.value == round(gib, 4) and at.limit == gib
        assert at.detail == f"{gib:.2f} ≤ {gib:g} GiB {source}, capture phase per rank"
        under = (s.pool_bytes - 1) / GIB
        over = only({"max_pool_gib": under}, s)
        assert not over.passed
        assert over.detail == f"{gib:.2f} > {under:g} GiB {source}, capture phase per rank"


def test_pool_limit_without_a_figure_is_skipped_and_passes() -> None:
    s = dataclasses.replace(side(NOSPEC), pool_bytes=None)
    check = only({"max_pool_gib": 0.001}, s)
    assert (check.passed, check.skipped, check.value, check.limit) == (True, True, None, 0.001)
    assert check.detail == "no pool memory figure (plan without a cost model)"
    assert evaluate_gate(dataclasses.replace(NOTHING, max_pool_gib=0.001), s).passed


def test_capture_time_limit_holds_at_the_figure_and_fails_a_hair_under() -> None:
    s = side(EAGLE_REPORT)
    secs = s.capture_time_s
    assert secs is not None
    at = only({"max_capture_seconds": secs}, s)
    assert (at.passed, at.value, at.limit) == (True, secs, secs)
    assert at.detail == f"{secs:.1f} ≤ {secs:g} s"
    lower = math.nextafter(secs, 0.0)
    over = only({"max_capture_seconds": lower}, s)
    assert (over.passed, over.detail) == (False, f"{secs:.1f} > {lower:g} s")
    none = only({"max_capture_seconds": 1.0}, dataclasses.replace(s, capture_time_s=None))
    assert (none.passed, none.skipped, none.detail) == (True, True, "no capture time (not a capture report)")


def test_a_withheld_figure_gates_neither_memory_nor_capture_time() -> None:
    """B200 is outside the cost model's domain with no figure: the plan printed none, but its
    capture time still reached the gate (1.6 s held to max_capture_seconds) as though validated."""
    s = side(ROOT_DIR / "tests/data/domain/b200.yaml")
    assert s.pool_bytes is None and s.capture_time_s is None
    assert s.pool_withheld is not None and s.pool_withheld.startswith(
        "no figure: outside the validated domain ("
    )
    pool = only({"max_pool_gib": 0.001}, s)
    secs = only({"max_capture_seconds": 0.001}, s)
    for check in (pool, secs):
        assert (check.passed, check.skipped) == (True, True)
    assert pool.detail == f"no pool memory figure ({s.pool_withheld})"
    assert secs.detail == f"no capture time ({s.pool_withheld})"


def test_memory_and_time_of_a_partial_capture_fail_under_their_limits() -> None:
    s = side(OOM_REPORT)
    assert s.pool_bytes is not None and s.capture_time_s is not None
    pool = only({"max_pool_gib": 1000.0}, s)
    assert not pool.passed
    assert pool.detail.startswith(f"{s.pool_bytes / GIB:.2f} ≤ 1000 GiB measured, capture phase per rank; ")
    assert pool.detail.endswith(": the figure covers only what was captured")
    secs = only({"max_capture_seconds": 1000.0}, s)
    assert not secs.passed
    assert secs.detail.startswith(f"{s.capture_time_s:.1f} ≤ 1000 s; capture partial (")
    assert secs.detail.endswith(": the time covers only what was captured")
    result = evaluate_gate(NOTHING, s)
    assert [c.name for c in result.checks] == ["capture_complete"]
    assert result.checks[0].detail.endswith(": gate a complete capture") and not result.passed


# ---------------------------------------------------------------------------- padding and eager time


def test_padding_ratio_holds_at_the_worst_tier_and_fails_a_hair_under() -> None:
    s = side(MED_REPORT)
    (ql,) = s.query_lens
    p, r = padding(s, ql)
    ratio = p / r
    assert (p, r) == (33771, 32896)  # 256 requests, one token each
    at = only({"max_decode_padding_ratio": ratio}, s)
    assert (at.passed, at.value, at.limit) == (True, round(ratio, 4), ratio)
    assert at.detail == f"q=1: {ratio:.3f} ≤ {ratio:.3f}"
    lower = math.nextafter(ratio, 0.0)
    over = only({"max_decode_padding_ratio": lower}, s)
    assert (over.passed, over.detail) == (False, f"q=1: {ratio:.3f} > {lower:.3f}")


def test_padding_ratio_over_several_tiers_names_the_tiers_over_it() -> None:
    s = side(DYN4)
    ratios = {ql: padding(s, ql) for ql in s.query_lens}
    assert ratios[2] == (0, 0)  # the 2-token tier's batches all run eager: nothing to measure
    measured = {ql: p / r for ql, (p, r) in ratios.items() if r}
    worst = max(measured.values())
    check = only({"max_decode_padding_ratio": worst}, s)
    assert not check.passed and check.value == round(worst, 4)
    assert check.detail == "q=2: no graph-replayed decode batch to measure"
    # without the unmeasurable tier, the same limit passes and every tier is stated
    no_q2 = dataclasses.replace(s, lookup=tuple(t for t in s.lookup or () if t[2] + 1 != 2))
    passed = only({"max_decode_padding_ratio": worst}, no_q2)
    assert passed.passed
    assert passed.detail == ", ".join(f"q={ql}: {v:.3f} ≤ {worst:.3f}" for ql, v in measured.items())
    # a limit between two tiers' ratios fails only the tier over it
    lo, hi = sorted(set(measured.values()))[-2:]
    mid = only({"max_decode_padding_ratio": (lo + hi) / 2}, no_q2)
    (over_ql,) = [ql for ql, v in measured.items() if v == hi]
    assert not mid.passed and mid.detail == f"q={over_ql}: {hi:.3f} > {(lo + hi) / 2:.3f}"


def test_eager_time_share_holds_at_the_share_and_fails_a_hair_under() -> None:
    s = side(PR50488)
    share, step = s.eager_time_share, s.expected_step_ms
    assert share is not None and step is not None and share > 0
    what = f"of the expected {step:.2f} ms step is eager"
    at = only({"max_eager_time_share": share}, s)
    assert (at.passed, at.skipped, at.value, at.limit) == (True, False, round(share, 4), share)
    assert at.detail == f"{share:.1%} ≤ {share:.1%} {what}"
    lower = math.nextafter(share, 0.0)
    over = only({"max_eager_time_share": lower}, s)
    assert (over.passed, over.detail) == (False, f"{share:.1%} > {lower:.1%} {what}")
    # no limit: stated, skipped, passed
    free = evaluate_gate(NOTHING, s).checks
    assert [(c.name, c.passed, c.skipped, c.limit) for c in free] == [
        ("max_eager_time_share", True, True, None)
    ]
    assert free[0].detail == f"{share:.1%} {what} (no limit set: max_eager_time_share is null)"


def test_eager_time_share_limit_without_a_step_time_is_skipped() -> None:
    s = side(EAGLE_REPORT)
    assert s.expected_step_ms is None
    check = only({"max_eager_time_share": 0.0}, s)
    assert (check.passed, check.skipped, check.limit) == (True, True, 0.0)
    assert check.detail == "no expected step time (not a plan with a latency model)"
    assert evaluate_gate(NOTHING, s).checks == ()


# ---------------------------------------------------------------------------- coverage


def test_eager_batches_are_counted_priced_and_named() -> None:
    s = side(DYN4)
    step = s.expected_step_ms
    assert step is not None
    eager_cost = sum(c.expected_cost_ms for c in s.gap_costs if c.mode == "NONE")
    check = only({"no_eager_uniform_decode": True}, s)
    assert (check.passed, check.value, check.limit) == (False, 768 + 128, 0)
    assert check.detail == (
        "eager: 257-1024 requests × 2 (514..2048 tokens), 129-256 requests × 4 (516..1024 tokens): "
        f"896 of 1024 request counts; they cost +{eager_cost:.3f} ms of the expected {step:.2f} ms step "
        f"({eager_cost / step:.1%}) (extrapolated: hidden size 256 is outside the measured 512..5120)"
    )


def test_piecewise_batches_are_counted_priced_and_named() -> None:
    s = side(DYN4)
    step = s.expected_step_ms
    assert step is not None
    runs = [(c.query_len, c.first_reqs, c.last_reqs) for c in s.gap_costs if c.mode == "PIECEWISE"]
    cost = sum(c.expected_cost_ms for c in s.gap_costs if c.mode == "PIECEWISE")
    check = only({"no_piecewise_uniform_decode": True}, s)
    assert (check.passed, check.value, check.limit) == (False, sum(b - a + 1 for _, a, b in runs), 0)
    assert check.detail.startswith(
        "PIECEWISE: 85 requests × 4 (340 tokens), 89 requests × 4 (356 tokens), "
        "93 requests × 4 (372 tokens), 97 requests × 4 (388 tokens), 101-102 requests × 4 (404..408 tokens), "
    )
    priced = (
        f"; they cost +{cost:.3f} ms of the expected {step:.2f} ms step ({cost / step:.1%}) (extrapolated: "
    )
    assert f": {check.value} of 1024 request counts{priced}" in check.detail
    assert "63 requests × 8 (504 tokens): " in check.detail


def test_covered_tiers_pass_with_their_counts() -> None:
    eager = only({"no_eager_uniform_decode": True}, NOSPEC)
    assert (eager.passed, eager.value, eager.detail) == (True, 0, "0 of 32 request counts eager")
    pw = only({"no_piecewise_uniform_decode": True}, NOSPEC)
    assert (pw.passed, pw.value, pw.detail) == (True, 0, "0 of 32 request counts PIECEWISE (all FULL)")
    widest = only({"widest_decode_full": True}, NOSPEC)
    assert (widest.passed, widest.value, widest.detail) == (True, 0, "32 requests × 1 (32 tokens) → FULL")


def test_a_gap_inside_the_measured_domain_is_priced_without_a_caveat() -> None:
    s = side(EAGLE)
    assert extrapolated(s) == []  # its caveats: only the one every plan carries
    (gap,) = s.gap_costs
    step = s.expected_step_ms
    assert step is not None
    check = only({"no_eager_uniform_decode": True}, s)
    assert check.detail == (
        "eager: 31-32 requests × 17 (527..544 tokens): 2 of 32 request counts; they cost "
        f"+{gap.expected_cost_ms:.3f} ms of the expected {step:.2f} ms step "
        f"({gap.expected_cost_ms / step:.1%})"
    )
    widest = only({"widest_decode_full": True}, s)
    assert (widest.passed, widest.value) == (False, 1)
    assert widest.detail == (
        f"32 requests × 17 (544 tokens) → NONE (+{gap.cost_ms_per_step:.2f} ms per such step vs a FULL graph)"
    )


def test_a_capture_report_has_no_prices() -> None:
    eager = only({"no_eager_uniform_decode": True}, EAGLE_REPORT)
    assert eager.detail == "eager: 31-32 requests × 17 (527..544 tokens): 2 of 32 request counts"
    widest = only({"widest_decode_full": True}, EAGLE_REPORT)
    assert widest.detail == "32 requests × 17 (544 tokens) → NONE"


def test_the_extrapolation_named_is_the_first_without_its_detail() -> None:
    """`(extrapolated: ...)` quotes the first caveat outside the measured domain, cut before its
    parenthesised detail; the two caveats every plan carries are never quoted."""
    s = side(DYN4)
    outside = extrapolated(s)
    assert len(outside) == 4 and "measured with vLLM 0.26.0; vLLM 0.33.0's step may differ" in s.step_caveats
    first = next(c for c in outside if " (" in c)  # "batches above 2048 tokens were not measured (...)"
    rest = tuple(c for c in s.step_caveats if c != first)
    moved = dataclasses.replace(s, step_caveats=(first, *rest))
    detail = only({"no_eager_uniform_decode": True}, moved).detail
    assert detail.endswith(f"(extrapolated: {first.split(' (')[0]})")
    assert first.split(" (")[0] == "batches above 2048 tokens were not measured"
    # only the carried caveats: no extrapolation named
    carried = tuple(c for c in s.step_caveats if c not in outside)
    assert len(carried) == 2
    plain = only({"no_eager_uniform_decode": True}, dataclasses.replace(s, step_caveats=carried)).detail
    assert "extrapolated" not in plain and plain.endswith("%)")


def test_each_tiers_widest_batch_is_named() -> None:
    s = side(DYN4)
    check = only({"widest_decode_full": True}, s)
    cost = {(c.query_len, c.last_reqs): c.cost_ms_per_step for c in s.gap_costs}
    assert (check.passed, check.value) == (False, 2)
    assert check.detail == (
        f"1024 requests × 2 (2048 tokens) → NONE (+{cost[2, 1024]:.2f} ms per such step vs a FULL graph); "
        f"256 requests × 4 (1024 tokens) → NONE (+{cost[4, 256]:.2f} ms per such step vs a FULL graph)"
    )


def test_coverage_checks_fail_where_the_dispatch_table_is_short() -> None:
    """A table that stops early holds no eager batch, yet the checks fail naming what is missing."""
    s = side(NOSPEC)
    (ql,) = s.query_lens
    ranges = s.uniform_decode[ql]
    short = dataclasses.replace(s, uniform_decode={ql: ranges[:-1]})
    lost = short.missing_decode(ql)
    assert lost and lost[-1][1] == 32
    for name in ("no_eager_uniform_decode", "no_piecewise_uniform_decode", "widest_decode_full"):
        check = only({name: True}, short)
        assert not check.passed, name
        assert check.detail.startswith("no uniform-decode outcome for "), (name, check.detail)
        assert check.detail.endswith(f"-32 requests × 1 ({lost[-1][0]}..32 tokens)") or check.detail.endswith(
            "32 requests × 1 (32 tokens)"
        )


def test_a_rejected_config_is_one_failed_check() -> None:
    s = dataclasses.replace(side(NOSPEC), rejected="configs/x.yaml:max_num_seqs: refused")
    result = evaluate_gate(dataclasses.replace(NOTHING, no_eager_uniform_decode=True), s, side(NOSPEC))
    assert result.checks == (Check("config_accepted", False, "configs/x.yaml:max_num_seqs: refused"),)
    assert not result.passed


def test_result_passes_when_every_check_passed_or_was_skipped() -> None:
    ok = Check("a", True, "")
    skipped = Check("b", False, "", skipped=True)
    failed = Check("c", False, "")
    assert GateResult("t", (ok, skipped)).passed
    assert not GateResult("t", (ok, skipped, failed)).passed
    assert GateResult("t", ()).passed


def test_gap_share_is_the_gaps_cost_over_the_expected_step() -> None:
    s = side(DYN4)
    step = s.expected_step_ms
    assert step is not None
    share = evaluate_gate(NOTHING, s).gap_share
    assert share == pytest.approx(sum(c.expected_cost_ms for c in s.gap_costs) / step, rel=1e-12)
    assert evaluate_gate(NOTHING, side(NOSPEC)).gap_share is None  # no gaps
    assert evaluate_gate(NOTHING, side(EAGLE_REPORT)).gap_share is None  # no latency model


# ---------------------------------------------------------------------------- against a baseline


def test_regression_names_the_request_counts_that_lose_their_graph() -> None:
    worse = only({"no_regression": True}, EAGLE, baseline=EAGLE_MAX544)
    assert (worse.passed, worse.value, worse.limit) == (False, 2, 0)
    assert worse.detail == "2 request counts lose coverage: 31-32 requests × 17: FULL → NONE"
    better = only({"no_regression": True}, EAGLE_MAX544, baseline=EAGLE)
    assert (better.passed, better.value) == (True, 0)
    assert better.detail == f"0 of 32 request counts lose coverage against {side(EAGLE).label}"


def test_regression_against_a_short_baseline_says_what_was_not_compared() -> None:
    base = side(NOSPEC)
    (ql,) = base.query_lens
    short = dataclasses.replace(base, uniform_decode={ql: base.uniform_decode[ql][:-1]}, label="short")
    check = only({"no_regression": True}, NOSPEC, baseline=short)
    assert check.passed
    assert check.detail.startswith(
        f"0 of {short.request_counts()} request counts lose coverage against short"
    )
    assert " (not compared, baseline no uniform-decode outcome for " in check.detail
    # a target whose table is short fails, whatever the baseline
    target_short = only({"no_regression": True}, short, baseline=NOSPEC)
    assert not target_short.passed and target_short.detail.startswith("no uniform-decode outcome for ")


def test_graph_growth_holds_at_the_limit_and_fails_over_it() -> None:
    before, after = sum(graphs_of(side(EAGLE)).values()), sum(graphs_of(side(EAGLE_MAX544)).values())
    assert (before, after) == (169, 177)
    growth = 100.0 * (after - before) / before
    grown = only({"max_graph_growth_pct": 0.0}, EAGLE_MAX544, baseline=EAGLE)
    assert (grown.passed, grown.value, grown.limit) == (False, round(growth, 2), 0.0)
    assert grown.detail == f"169 → 177 graphs (+{growth:.1f}% > 0%)"
    at = only({"max_graph_growth_pct": growth}, EAGLE_MAX544, baseline=EAGLE)
    assert at.passed and at.detail == f"169 → 177 graphs (+{growth:.1f}% ≤ {growth:g}%)"
    same = only({"max_graph_growth_pct": 0.0}, EAGLE, baseline=EAGLE)
    assert (same.passed, same.detail) == (True, "169 → 169 graphs (+0.0% ≤ 0%)")
    shrunk = only({"max_graph_growth_pct": 0.0}, EAGLE, baseline=EAGLE_MAX544)
    assert shrunk.passed and shrunk.value == round(100.0 * (before - after) / after, 2) < 0
    assert shrunk.detail.startswith("177 → 169 graphs (-")


def test_graph_growth_from_an_empty_or_partial_baseline() -> None:
    empty = dataclasses.replace(side(NOSPEC), graphs={}, label="empty")
    check = only({"max_graph_growth_pct": 10.0}, NOSPEC, baseline=empty)
    assert (check.passed, check.value) == (False, 0.0)
    assert (
        check.detail
        == "baseline empty: no graphs at all (an empty graph table proves nothing): no growth to measure"
    )
    partial = side(OOM_REPORT)
    lower = only({"max_graph_growth_pct": 1000.0}, MED_REPORT, baseline=partial)
    assert lower.passed
    assert lower.detail.startswith("30 → 86 graphs (+186.7% ≤ 1000%) (baseline capture partial (")
    assert lower.detail.endswith(": its count is a lower bound)")
    # a target without graphs fails, the figure beside its reason
    target_empty = only(
        {"max_graph_growth_pct": 10.0}, dataclasses.replace(side(NOSPEC), graphs={}), baseline=NOSPEC
    )
    assert not target_empty.passed
    assert (
        target_empty.detail
        == "18 → 0 graphs (-100.0% ≤ 10%); no graphs at all (an empty graph table proves nothing)"
    )


def test_a_rejected_baseline_adds_no_baseline_check() -> None:
    base = dataclasses.replace(side(NOSPEC), rejected="refused")
    policy = dataclasses.replace(NOTHING, no_regression=True, max_graph_growth_pct=10.0)
    assert [c.name for c in evaluate_gate(policy, side(NOSPEC), base).checks] == ["max_eager_time_share"]


# ---------------------------------------------------------------------------- the command


@pytest.mark.parametrize(("limit", "code"), [(18, 0), (17, 1)])
def test_gate_exits_0_at_the_limit_and_1_one_over(
    limit: int,
    code: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"max_total_graphs: {limit}\nmax_graphs_per_family: {limit}\n")
    got, out, _ = run(monkeypatch, capsys, "gate", NOSPEC, "--policy", policy)
    assert got == code
    mark = "ok  " if code == 0 else "FAIL"
    sign = "≤" if code == 0 else ">"
    assert f"  {mark} max_total_graphs: 18 {sign} {limit} graphs" in out
    assert f"  {mark} max_graphs_per_family[*]: target: 18 {sign} {limit}" in out


def test_gate_exits_2_on_a_bad_policy(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("max_total_graphs: many\n")
    code, _, err = run(monkeypatch, capsys, "gate", NOSPEC, "--policy", policy)
    assert code == 2 and "max_total_graphs" in err


# ---------------------------------------------------------------------------- what the checks rest on


def test_the_budgets_of_a_policy_are_its_limits() -> None:
    """A proposed fix must stay within the policy's graphs, memory (GiB → MiB), time and padding."""
    policy = GatePolicy(
        max_graphs_per_family={"target": 85, "*": 400},
        max_total_graphs=178,
        max_pool_gib=0.5,
        max_capture_seconds=3.0,
        max_decode_padding_ratio=1.25,
    )
    assert budgets_of(policy) == FixBudgets(
        max_graphs_per_family=(("*", 400), ("target", 85)),
        max_total_graphs=178,
        max_pool_mib=512.0,
        max_capture_s=3.0,
        max_decode_padding_ratio=1.25,
    )
    assert budgets_of(NOTHING) == FixBudgets(max_graphs_per_family=())


@pytest.mark.parametrize("length", [99, 100, 101])
def test_a_partial_captures_failure_is_quoted_up_to_100_characters(length: int) -> None:
    """The failure message (an OOM message runs on) is quoted whole up to 100 characters; a longer
    one is cut to 97 and "..."."""
    s = side(OOM_REPORT)
    assert s.failure is not None and len(s.failure) > 101
    failure = s.failure[:length]
    check = evaluate_gate(NOTHING, dataclasses.replace(s, failure=failure)).checks[0]
    quoted = failure if length <= 100 else failure[:97].rstrip() + "..."
    assert check.detail == f"capture partial ({quoted}): gate a complete capture"
    bare = evaluate_gate(NOTHING, dataclasses.replace(s, failure=None)).checks[0]
    assert bare.detail == "capture partial: gate a complete capture"
    failed = evaluate_gate(NOTHING, dataclasses.replace(s, status="failed", failure="")).checks[0]
    assert (failed.name, failed.passed, failed.detail) == (
        "capture_complete",
        False,
        "capture failed: gate a complete capture",
    )


def test_gaps_are_priced_by_the_request_counts_they_cover() -> None:
    """A run's cost is that of the latency model's gaps of its tier and mode that it overlaps."""
    s = side(DYN4)
    step = s.expected_step_ms
    assert step is not None
    pw4 = {
        (c.first_reqs, c.last_reqs): c.expected_cost_ms
        for c in s.gap_costs
        if c.query_len == 4 and c.mode == "PIECEWISE"
    }
    assert pw4[85, 85] and pw4[89, 89] and pw4[101, 102]

    def priced(gaps: list[tuple[int, int, int, str]], cost: float) -> None:
        assert gate._time_cost(s, gaps).startswith(
            f"; they cost +{cost:.3f} ms of the expected {step:.2f} ms step"
        )

    priced([(4, 85, 85, "PIECEWISE")], pw4[85, 85])
    priced([(4, 85, 89, "PIECEWISE")], pw4[85, 85] + pw4[89, 89])
    priced([(4, 101, 101, "PIECEWISE")], pw4[101, 102])
    priced([(4, 86, 88, "PIECEWISE")], 0.0)
    priced([(8, 85, 85, "PIECEWISE")], 0.0)  # another tier
    priced([(4, 85, 85, "NONE")], 0.0)  # another mode
    assert gate._time_cost(dataclasses.replace(s, gap_costs=()), [(4, 85, 85, "PIECEWISE")]) == ""
    assert gate._time_cost(dataclasses.replace(s, expected_step_ms=None), [(4, 85, 85, "PIECEWISE")]) == ""
    # the gate's own runs: every one of its mode
    assert next(g for g in decode_gaps(s) if g[3] == "PIECEWISE") == (4, 85, 85, "PIECEWISE")


def test_a_one_request_gap_at_the_widest_batch_is_priced(tmp_path: Path) -> None:
    """vllm#50488's case at 31 requests: 31 × 17 = 527 tokens is past the 512 maximum, so the
    widest batch alone runs eager, a gap of one request count."""
    config = tmp_path / "mns31.yaml"
    config.write_text(
        PR50488.read_text()
        .replace("max_num_seqs: 32", "max_num_seqs: 31")
        .replace("model: configs/", f"model: {ROOT_DIR}/configs/")
    )
    s = load_side(config)
    (gap,) = s.gap_costs
    assert (gap.first_reqs, gap.last_reqs, gap.mode) == (31, 31, "NONE")
    widest = only({"widest_decode_full": True}, s)
    assert widest.detail == (
        f"31 requests × 17 (527 tokens) → NONE (+{gap.cost_ms_per_step:.2f} ms per such step vs a FULL graph)"
    )
    eager = only({"no_eager_uniform_decode": True}, s)
    assert eager.detail.startswith("eager: 31 requests × 17 (527 tokens): 1 of 31 request counts; they cost ")
    assert eager.value == 1


def test_an_empty_dispatch_table_fails_every_coverage_check() -> None:
    s = dataclasses.replace(side(NOSPEC), uniform_decode={})
    why = "no uniform-decode outcome for 1-32 requests × 1 (1..32 tokens)"
    for name in ("no_eager_uniform_decode", "no_piecewise_uniform_decode", "widest_decode_full"):
        check = only({name: True}, s)
        assert (check.passed, check.detail, check.value) == (False, why, 0), name
    padded = only({"max_decode_padding_ratio": 10.0}, s)
    assert (padded.passed, padded.detail) == (False, "q=1: no graph-replayed decode batch to measure")


def _mode(tmp_path: Path, mode: str) -> Side:
    """tiny-nospec planned with `compilation_config.cudagraph_mode: mode`."""
    config = tmp_path / f"{mode}.yaml"
    config.write_text(
        NOSPEC.read_text().replace("model: configs/", f"model: {ROOT_DIR}/configs/")
        + f"compilation_config:\n  cudagraph_mode: {mode}\n"
    )
    return load_side(config, label=mode)


def test_coverage_is_lost_down_full_piecewise_eager(tmp_path: Path) -> None:
    """FULL → PIECEWISE, FULL → eager and PIECEWISE → eager lose coverage; the other way gains it."""
    full, pw, none = _mode(tmp_path, "FULL"), _mode(tmp_path, "PIECEWISE"), _mode(tmp_path, "NONE")
    assert {r.mode for r in full.decode_runs(1)} == {"FULL"} and {r.mode for r in pw.decode_runs(1)} == {
        "PIECEWISE"
    }
    assert {r.mode for r in none.decode_runs(1)} == {"NONE"}
    order = [full, pw, none]
    for i, better in enumerate(order):
        for worse in order[i + 1 :]:
            moves = regressions(better, worse)
            assert [(m.first_reqs, m.last_reqs, m.mode_a, m.mode_b) for m in moves] == [
                (1, 32, better.label, worse.label)
            ], (better.label, worse.label)
            assert regressions(worse, better) == []
            check = only({"no_regression": True}, worse, baseline=better)
            assert (
                check.detail
                == f"32 request counts lose coverage: 1-32 requests × 1: {better.label} → {worse.label}"
            )
        assert regressions(better, better) == []
    pw_check = only({"no_piecewise_uniform_decode": True}, pw)
    assert (pw_check.passed, pw_check.value) == (False, 32)
    assert pw_check.detail.startswith("PIECEWISE: 1-32 requests × 1 (1..32 tokens): 32 of 32 request counts")
    widest = only({"widest_decode_full": True}, pw)
    assert widest.detail.startswith("32 requests × 1 (32 tokens) → PIECEWISE") and not widest.passed


MTP = ROOT_DIR / "configs/gpu/moe/test-dsv3-mtp1-mns32.yaml"
"""MTP K=1: two graph families (target and drafter)."""


def test_two_families_under_star_name_the_larger() -> None:
    assert graphs_of(side(MTP)) == {"target": 28, "drafter": 18}
    at = only({"max_graphs_per_family": {"*": 28}}, MTP)
    assert (at.passed, at.detail) == (True, "28 ≤ 28 (target, the largest of 2 families)")
    over = only({"max_graphs_per_family": {"*": 18}}, MTP)
    assert (over.passed, over.detail, over.value) == (False, "target: 28 > 18", 28)


def test_every_coverage_check_is_held_to_zero() -> None:
    for name in ("no_eager_uniform_decode", "no_piecewise_uniform_decode", "widest_decode_full"):
        check = only({name: True}, DYN4)
        assert (check.passed, check.limit) == (False, 0), name
        assert only({name: True}, NOSPEC).limit == 0


def test_the_eager_share_is_stated_to_four_places() -> None:
    s = side(DYN4)
    share = s.eager_time_share
    assert share is not None and round(share, 3) != round(share, 4)
    assert only({"max_eager_time_share": 1.0}, s).value == round(share, 4)
    (free,) = evaluate_gate(NOTHING, s).checks
    assert (free.value, free.limit, free.skipped) == (round(share, 4), None, True)


def test_an_eager_share_without_a_step_time_is_not_stated() -> None:
    """The share is stated beside the expected step it is a share of: without the step (or without
    the share), no such check unless a limit asks for it, then skipped."""
    s = side(PR50488)
    for partial in (
        dataclasses.replace(s, expected_step_ms=None),
        dataclasses.replace(s, eager_time_share=None),
    ):
        assert evaluate_gate(NOTHING, partial).checks == ()
        check = only({"max_eager_time_share": 0.5}, partial)
        assert (check.passed, check.skipped, check.detail) == (
            True,
            True,
            "no expected step time (not a plan with a latency model)",
        )


def _mns31(tmp_path: Path, extra: str = "") -> Side:
    config = tmp_path / f"mns31{len(extra)}.yaml"
    config.write_text(
        PR50488.read_text()
        .replace("max_num_seqs: 32", "max_num_seqs: 31")
        .replace("model: configs/", f"model: {ROOT_DIR}/configs/")
        + extra
    )
    return load_side(config, label="mns31" + ("-fixed" if extra else ""))


def test_a_one_request_regression_within_and_across_tiers(tmp_path: Path) -> None:
    """One request count that loses its graph is named alone (`31 requests`, not `31-31`); across
    tiers (K changed) with both token counts."""
    gap, fixed = (
        _mns31(tmp_path),
        _mns31(tmp_path, "compilation_config:\n  max_cudagraph_capture_size: 544\n"),
    )
    assert [(r.first, r.last, r.mode) for r in fixed.decode_runs(17)][-1][2] == "FULL"
    within = only({"no_regression": True}, gap, baseline=fixed)
    assert within.detail == "1 request counts lose coverage: 31 requests × 17: FULL → NONE"
    nospec = dataclasses.replace(side(NOSPEC), max_num_seqs=31, label="nospec")
    nospec = dataclasses.replace(
        nospec, uniform_decode={1: tuple(r for r in nospec.uniform_decode[1] if r.first <= 31)}
    )
    across = only({"no_regression": True}, gap, baseline=nospec)
    assert (across.passed, across.value) == (False, 1)
    assert (
        across.detail
        == "1 request counts lose coverage: 31 requests × 1 → × 17: FULL → NONE (31 tokens → 527 tokens)"
    )


def test_a_regression_across_tiers_names_both_token_counts() -> None:
    """No speculation (1 token per request) → EAGLE K=16 (17): 1-30 requests stay FULL in another
    tier (no loss), 31-32 lose their graph."""
    check = only({"no_regression": True}, PR50488, baseline=NOSPEC)
    assert (check.passed, check.value) == (False, 2)
    assert check.detail == (
        "2 request counts lose coverage: 31-32 requests × 1 → × 17: FULL → NONE "
        "(31..32 tokens → 527..544 tokens)"
    )
    assert [(m.first_reqs, m.last_reqs) for m in regressions(side(NOSPEC), side(PR50488))] == [(31, 32)]


def test_a_baseline_with_no_outcome_says_what_it_lacks() -> None:
    base = dataclasses.replace(side(NOSPEC), uniform_decode={}, label="empty")
    check = only({"no_regression": True}, NOSPEC, baseline=base)
    assert (check.passed, check.value) == (False, 0)
    assert check.detail == (
        "baseline empty: no uniform-decode outcome for 1-32 requests × 1 (1..32 tokens): nothing to compare"
    )
