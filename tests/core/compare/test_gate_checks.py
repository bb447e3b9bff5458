"""The gate's checks held to the rules docs/policies.md states (issue 35: each one a mutant that
survived `make mutate`): a figure within its limit passes, a plan without gaps states no gap cost,
a baseline with nothing to compare says so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import run
from tests.paths import ROOT_DIR

TARGET = ROOT_DIR / "configs/gpu/tiny-nospec.yaml"
PARTIAL_BASELINE = ROOT_DIR / "benchmarks/results/h200/faults/sigint-tiny.json"


def _checks(out: str) -> dict[str, Any]:
    doc = json.loads(out)
    (target,) = doc["targets"]
    return {c["name"]: c for c in target["checks"]}


def test_padding_ratio_within_its_limit_passes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "no_eager_uniform_decode: false\nwidest_decode_full: false\nmax_decode_padding_ratio: 100\n"
    )
    code, out, _ = run(monkeypatch, capsys, "gate", TARGET, "--policy", policy)
    assert code == 0
    assert "  ok   max_decode_padding_ratio: q=1: " in out and "≤ 100.000" in out


def test_a_plan_without_gaps_passes_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(monkeypatch, capsys, "gate", TARGET)
    assert code == 0
    assert (
        out.splitlines()[1] == f"PASS {TARGET.relative_to(ROOT_DIR)}"
        or out.splitlines()[1] == f"PASS {TARGET}"
    )


def test_no_regression_against_itself_counts_every_request(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(monkeypatch, capsys, "gate", TARGET, "--baseline", TARGET, "--format", "json")
    assert code == 0
    detail = _checks(out)["no_regression"]["detail"]
    assert detail.startswith("0 of 32 request counts lose coverage against ")  # max_num_seqs: 32


def test_partial_baseline_without_decode_outcomes_has_nothing_to_compare(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        monkeypatch,
        capsys,
        "gate",
        TARGET,
        "--baseline",
        PARTIAL_BASELINE,
        "--vllm-version",
        "0.26.0",
        "--allow-partial-baseline",
        "--format",
        "json",
    )
    assert code == 1
    check = _checks(out)["no_regression"]
    assert not check["passed"] and check["detail"].endswith(": nothing to compare")


@pytest.mark.parametrize("missing", [5, 6, 7])
def test_a_missing_outcome_list_names_six_runs_then_counts_the_rest(missing: int) -> None:
    """The gate's detail names up to `_LISTED` (6) runs without an outcome and counts the others:
    exactly six are all named, with no "and 0 more"."""
    from types import SimpleNamespace

    from cgplan.core.compare import gate

    runs = [(2 * i + 1, 2 * i + 1) for i in range(missing)]
    side = SimpleNamespace(query_lens=(1,), missing_decode=lambda ql: runs, status="complete", failure=None)
    detail = gate._missing_shapes(side)  # type: ignore[arg-type]
    assert detail is not None
    assert detail.count("requests × 1") == min(missing, 6)
    assert detail.endswith(f" and {missing - 6} more runs") == (missing > 6)
    assert "more runs" not in detail or missing > 6


def test_a_long_failure_is_cut_to_its_budget_with_an_ellipsis() -> None:
    """A capture's failure text in a check is at most `_FAILURE_CHARS` characters, the last three
    an ellipsis; one that fits is kept whole."""
    from types import SimpleNamespace

    from cgplan.core.compare import gate as gate_mod

    limit = gate_mod._FAILURE_CHARS
    words = "CUDA out of memory. Tried to allocate 2.00 GiB " * 10
    cut = gate_mod._incomplete(SimpleNamespace(status="partial", failure=words))  # type: ignore[arg-type]
    assert cut is not None and cut.startswith("capture partial (") and cut.endswith("...)")
    inside = cut.removeprefix("capture partial (").removesuffix(")")
    assert len(inside) <= limit and inside == words[: limit - 3].rstrip() + "..."
    whole = "x" * limit
    failed = SimpleNamespace(status="failed", failure=whole)
    assert gate_mod._incomplete(failed) == f"capture failed ({whole})"  # type: ignore[arg-type]
