"""verify's pure half: vLLM's answer summarised (sizes, graphs per family, gaps per decode tier), one
config under two builds, and the drift per rule (cgplan/core/compare/verify.py, oracle.py)."""

from __future__ import annotations

import gzip
import json
from typing import Any

from cgplan.core.compare.oracle import describe_difference, field_agreement, vllm_answer
from cgplan.core.compare.verify import DecodeGap, change, drift, summarize, verdict
from tests.paths import TESTS_DIR

ORACLE = TESTS_DIR / "data" / "oracle"


def recorded(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(gzip.decompress((ORACLE / f"{name}.json.gz").read_bytes()))
    return vllm_answer(doc)


def _rows(*runs: tuple[int, int, str, int]) -> list[dict[str, Any]]:
    return [
        {"from_reqs": a, "to_reqs": b, "mode": m, "padded_tokens": t, "padded_reqs": None}
        for a, b, m, t in runs
    ]


def test_gaps_are_eager_steps_and_piecewise_ones_under_a_full_mode() -> None:
    ans = {
        "cudagraph_mode": "FULL_AND_PIECEWISE",
        "uniform_decode": {"4": _rows((1, 2, "FULL", 4), (3, 3, "PIECEWISE", 16), (4, 5, "NONE", 0))},
    }
    assert summarize(ans).gaps == (DecodeGap(4, 3, 3, "PIECEWISE"), DecodeGap(4, 4, 5, "NONE"))
    piecewise = {**ans, "cudagraph_mode": "PIECEWISE"}
    assert summarize(piecewise).gaps == (DecodeGap(4, 4, 5, "NONE"),)


def test_dynamic_sd_tiers_cut_the_decode_tables() -> None:
    """Under dynamic SD a request count decodes at one query length only (its tier)."""
    ans = {
        "cudagraph_mode": "FULL_AND_PIECEWISE",
        "dynamic_sd": {"lookup": [[1, 8, 3], [9, 64, 1]]},
        "uniform_decode": {
            "2": _rows((1, 40, "FULL", 80), (41, 64, "NONE", 0)),
            "4": _rows((1, 8, "FULL", 32), (9, 64, "NONE", 0)),
        },
    }
    s = summarize(ans)
    assert s.decode == {"2": ((9, 40, "FULL", 80), (41, 64, "NONE", None)), "4": ((1, 8, "FULL", 32),)}
    assert s.gaps == (DecodeGap(2, 41, 64, "NONE"),)


def test_the_example_under_0_28_and_0_33() -> None:
    """Real answers of vLLM's code (corpus eagle-k16-mns32 is #50488's case)."""
    a, b = summarize(recorded("eagle-k16-mns32.0.28.0")), summarize(recorded("eagle-k16-mns32.0.33.0"))
    assert a.gaps == b.gaps == (DecodeGap(17, 31, 32, "NONE"),)
    assert len(a.capture_sizes) < len(b.capture_sizes)
    c = change("x", a, b)
    assert c.changed and c.gaps_opened == c.gaps_closed == ()
    assert change("x", b, b).changed is False


def test_dispatch_changes_run_together() -> None:
    full = "FULL_AND_PIECEWISE"
    before = summarize({"cudagraph_mode": full, "uniform_decode": {"2": _rows((1, 4, "NONE", 0))}})
    after = summarize(
        {
            "cudagraph_mode": full,
            "uniform_decode": {"2": _rows((1, 1, "FULL", 2), (2, 2, "FULL", 4), (3, 4, "FULL", 8))},
        }
    )
    c = change("x", before, after)
    assert [(d.from_reqs, d.to_reqs, d.before, d.after) for d in c.dispatch_changes] == [
        (1, 2, "eager", "FULL exact"),
        (3, 3, "eager", "FULL padded"),
        (4, 4, "eager", "FULL exact"),
    ]
    assert c.gaps_closed == (DecodeGap(2, 1, 4, "NONE"),) and c.gaps_opened == ()


def test_runs_cut_apart_are_no_change() -> None:
    full = "FULL_AND_PIECEWISE"
    one = summarize({"cudagraph_mode": full, "uniform_decode": {"1": _rows((1, 4, "NONE", 0))}})
    other = summarize(
        {"cudagraph_mode": full, "uniform_decode": {"1": _rows((1, 2, "NONE", 0), (3, 4, "NONE", 0))}}
    )
    assert change("x", one, other).dispatch_changes == ()


def test_verdict_and_drift() -> None:
    exp = recorded("eagle-k16-mns32.0.33.0")
    got = {**exp, "capture_sizes": exp["capture_sizes"][:-1], "vllm_version": "other"}
    v = verdict("a.yaml", exp, got, vllm_version="0.33.0", rules_release="0.33.0")
    assert [d.field for d in v.differing] == ["capture_sizes"]  # the release fields are not compared
    ok = verdict("b.yaml", exp, exp, vllm_version="0.33.0", rules_release="0.33.0")
    d = drift([v, ok])
    assert (d[0].field, d[0].differ, d[0].compared, d[0].configs) == ("capture_sizes", 1, 2, ("a.yaml",))
    assert all(x.differ == 0 for x in d[1:])


def test_a_refusal_both_sides_compares_vllms_reason() -> None:
    exp = {"error": "ValueError: 1 validation error for X\n  Value error, max_num_seqs is too big [type=v]"}
    assert field_agreement(exp, {"error": "a.yaml:max_num_seqs: max_num_seqs is too big"}, reason=True) == {
        "accept": True,
        "reason": True,
    }
    v = verdict("a", exp, {"error": "something else"}, vllm_version="x", rules_release="x")
    assert [(d.field, d.vllm) for d in v.differing] == [("reason", "max_num_seqs is too big")]
    # a refusal seen on a GPU run carries no words of vLLM's code to compare
    gpu = {"error": "AssertionError while capturing", "error_source": "gpu-run"}
    assert field_agreement(gpu, {"error": "other words"}, reason=True) == {"accept": True}


def test_decode_tables_are_compared_at_the_lengths_vllm_dispatched() -> None:
    rows = _rows((1, 4, "FULL", 8))
    exp = {"uniform_decode": {"2": rows}}
    assert field_agreement(exp, {"uniform_decode": {"2": rows, "4": rows}})["uniform_decode"]
    assert not field_agreement(exp, {"uniform_decode": {"4": rows}})["uniform_decode"]
    assert describe_difference("uniform_decode", exp["uniform_decode"], {}) == (
        "query length 2 dispatched",
        "query length 2 not listed",
    )
    other = _rows((1, 3, "FULL", 8), (4, 4, "NONE", 0))
    assert describe_difference("uniform_decode", exp["uniform_decode"], {"2": other}) == (
        "query length 2, 4 requests: FULL padded to 8 tokens",
        "query length 2, 4 requests: eager",
    )
