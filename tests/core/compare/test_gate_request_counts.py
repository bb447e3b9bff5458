"""`no_regression` per request count, across tiers and K (issue 30), held to vLLM's recorded answers.

The expected regressions are not typed here: each case reads both configs' uniform-decode
dispatch as vLLM's own code recorded it (tests/data/oracle*/, scripts/record_golden.py), takes
each request count's tier from vLLM's dynamic-SD lookup, and lists the request counts that
replayed a FULL graph in the baseline and run PIECEWISE or eager in the target (or PIECEWISE
then eager). The gate must name exactly those.

tests/data/oracle-gate/ was recorded with
`python3 scripts/record_golden.py --venv-root DIR --out-dir tests/data/oracle-gate --versions 0.33.0
tests/data/corpus-gate/*.yaml`.
"""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from cgplan.api.sides import load_side
from cgplan.core.compare.gate import GatePolicy, evaluate_gate, regressions
from cgplan.core.compare.oracle import vllm_answer
from cgplan.core.compare.sides import RequestMove, request_moves
from tests.cli_helpers import run
from tests.paths import TESTS_DIR

DATA = TESTS_DIR / "data"
VERSION = "0.33.0"
RANK = {"FULL": 2, "PIECEWISE": 1, "NONE": 0}
ONLY_REGRESSION = GatePolicy(
    no_eager_uniform_decode=False,
    widest_decode_full=False,
    max_graphs_per_family={},
    max_graph_growth_pct=None,
)


def _where(stem: str) -> tuple[Path, Path]:
    for corpus, oracle in (("corpus", "oracle"), ("corpus-gate", "oracle-gate")):
        config = DATA / corpus / f"{stem}.yaml"
        if config.exists():
            return config, DATA / oracle / f"{stem}.{VERSION}.json.gz"
    raise AssertionError(stem)


def _vllm_outcomes(stem: str) -> dict[int, tuple[int, str]]:
    """request count -> (tokens per request, mode), from vLLM's recorded dispatch."""
    doc: dict[str, Any] = json.loads(gzip.decompress(_where(stem)[1].read_bytes()))
    exp = vllm_answer(doc)
    tiers = exp["uniform_decode"]
    if exp["dynamic_sd"]:
        ql_of = {n: k + 1 for a, b, k in exp["dynamic_sd"]["lookup"] for n in range(a, b + 1)}
    else:
        (only,) = tiers
        ql_of = {n: int(only) for n in range(1, doc["input"]["max_num_seqs"] + 1)}
    out = {}
    for n, ql in ql_of.items():
        (mode,) = [r["mode"] for r in tiers[str(ql)] if r["from_reqs"] <= n <= r["to_reqs"]]
        out[n] = (ql, mode)
    return out


def _vllm_regressions(base: str, head: str) -> set[int]:
    a, b = _vllm_outcomes(base), _vllm_outcomes(head)
    return {n for n in a.keys() & b.keys() if RANK[b[n][1]] < RANK[a[n][1]]}


def _named(base: str, head: str) -> set[int]:
    found = regressions(load_side(_where(base)[0]), load_side(_where(head)[0]))
    return {n for m in found for n in range(m.first_reqs, m.last_reqs + 1)}


CASES = {
    # the same tier, one outcome lost (vLLM PR #50488's widest batches)
    "same tier": ("maxcap544-eagle-k16-mns32", "eagle-k16-mns32", True),
    # K=3 -> K=5: every request count changes tier (4 -> 6 tokens per request)
    "static K up": ("eagle-k3-mns256-default-mnbt", "eagle-k5-mns256-default-mnbt", True),
    "static K up by one": ("eagle-k3-mns256-default-mnbt", "eagle-k4-mns256", True),
    # K down: the wider batches fit graphs again
    "static K down": ("eagle-k5-mns256-default-mnbt", "eagle-k3-mns256-default-mnbt", False),
    # static K=3 -> a dynamic schedule (1-16 at K=5, 17-64 at K=3)
    "static to dynamic": ("eagle-k3-mns64", "dyn-eagle-k16-mns64", True),
    "dynamic to static": ("dyn-eagle-k16-mns64", "eagle-k3-mns64", False),
    # two schedules: request counts move between tiers of different K
    "dynamic to dynamic": ("dyn-valid", "dyn-gap", True),
    # fewer requests: the batches the head cannot hold are no regression
    "max_num_seqs down": ("eagle-k4-mns256", "eagle-k3-mns64", False),
}


@pytest.mark.parametrize(("base", "head", "regresses"), CASES.values(), ids=CASES.keys())
def test_regressions_are_vllms_per_request_count(base: str, head: str, regresses: bool) -> None:
    want = _vllm_regressions(base, head)
    assert bool(want) == regresses  # the case is the kind it says
    assert _named(base, head) == want
    result = evaluate_gate(ONLY_REGRESSION, load_side(_where(head)[0]), load_side(_where(base)[0]))
    (check,) = [c for c in result.checks if not c.skipped]
    assert check.name == "no_regression" and check.passed == (not want)


def test_k3_to_k5_gate_fails_naming_the_requests(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The issue's case: K=3 -> K=5, EAGLE, 256 requests, Hopper, 0.33.0."""
    base, head = "eagle-k3-mns256-default-mnbt", "eagle-k5-mns256-default-mnbt"
    a, b = _vllm_outcomes(base), _vllm_outcomes(head)
    policy = tmp_path / "p.yaml"
    policy.write_text(
        "no_eager_uniform_decode: false\nwidest_decode_full: false\nmax_graphs_per_family: {}\n"
        "max_graph_growth_pct: null\n"
    )
    code, out, _ = run(
        monkeypatch,
        capsys,
        "gate",
        _where(head)[0],
        "--baseline",
        _where(base)[0],
        "--policy",
        policy,
        "--json",
        "-",
    )
    assert code == 1
    (check,) = [c for c in json.loads(out)["targets"][0]["checks"] if not c["skipped"]]
    # every run the gate names is vLLM's: FULL at 4 tokens/request, worse at 6
    runs: list[tuple[int, int, str]] = []
    for n in sorted(_vllm_regressions(base, head)):
        mode = b[n][1]
        if runs and runs[-1][1] == n - 1 and runs[-1][2] == mode:
            runs[-1] = (runs[-1][0], n, mode)
        else:
            runs.append((n, n, mode))
    assert [r[2] for r in runs] == ["PIECEWISE", "NONE"]
    for first, last, mode in runs:
        assert a[first] == a[last] == (4, "FULL")
        q = b[first][0]
        text = f"{first}-{last} requests × 4 → × {q}: FULL → {mode} ({first * 4}..{last * 4} tokens"
        assert text in check["detail"]
    assert not check["passed"]


def test_request_moves_merge_across_tiers() -> None:
    """Adjacent request counts with the same change are one run, whatever tier."""
    a = load_side(_where("eagle-k3-mns256-default-mnbt")[0])
    assert list(request_moves(a, a)) == []
    b = load_side(_where("eagle-k5-mns256-default-mnbt")[0])
    moves = list(request_moves(a, b))

    def key(m: RequestMove) -> tuple[int, str, int, str]:
        return (m.query_len_a, m.mode_a, m.query_len_b, m.mode_b)

    assert all(x.last_reqs < y.first_reqs for x, y in itertools.pairwise(moves))
    assert all(key(x) != key(y) for x, y in itertools.pairwise(moves) if x.last_reqs + 1 == y.first_reqs)
