"""Dynamic-SD lookups on ranges: vLLM's own dense table, at a cost that does not grow with max_num_seqs.

tests/data/oracle-dynamic-sd/<release>.json hold what vLLM's `validate_and_normalize_dynamic_sd_schedule`
and `build_dynamic_sd_schedule_lookup` (vllm/v1/spec_decode/dynamic/utils.py) returned on generated
schedules, valid by construction with max_num_seqs on both sides of every range's end, and one per
refusal (scripts/oracle/dynamic_sd.py, the command in each file). The property test compares with
the same function of vLLM's, quoted below, on schedules hypothesis builds valid.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgplan.core.plan.build import build_plan
from cgplan.core.vllm.dynamic_sd import ScheduleError, lookup_ranges, normalize_schedule, widest_per_query_len
from cgplan.io.config import load_config
from tests.paths import ROOT_DIR, TESTS_DIR

RECORDS = sorted((TESTS_DIR / "data" / "oracle-dynamic-sd").glob("*.json"))


def _cases(path: Path) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(path.read_text())["cases"]
    return cases


@pytest.mark.parametrize("record", RECORDS, ids=[p.stem for p in RECORDS])
def test_lookup_is_vllms_on_every_recorded_schedule(record: Path) -> None:
    cases = _cases(record)
    valid = [c for c in cases if "lookup" in c]
    # the generator's schedules are valid by construction; the refusals are one per vLLM error
    assert len(valid) >= 300 and len(cases) - len(valid) >= 10, (len(valid), len(cases))
    for c in cases:
        args = (c["schedule"], c["max_batch_size"], c["num_speculative_tokens"])
        if "normalize_error" in c:
            with pytest.raises(ScheduleError) as normalize_refusal:
                normalize_schedule(c["schedule"])
            assert str(normalize_refusal.value) == c["normalize_error"], c
        else:
            assert [list(e) for e in normalize_schedule(c["schedule"])] == c["normalized"], c
        if "lookup_error" in c:
            with pytest.raises(ScheduleError) as lookup_refusal:
                lookup_ranges(*args)
            assert str(lookup_refusal.value) == c["lookup_error"], c
            continue
        runs = lookup_ranges(*args)
        assert [list(r) for r in runs] == c["lookup"], c
        assert {str(q): b for q, b in widest_per_query_len(runs).items()} == c["tiers"], c


def test_every_refusal_of_vllms_code_is_recorded() -> None:
    # each `raise ValueError` of vllm/v1/spec_decode/dynamic/utils.py (0.33.0) that a list can reach
    for record in RECORDS:
        errors = [c["lookup_error"] for c in _cases(record) if "lookup_error" in c]
        for start in (
            "num_speculative_tokens_per_batch_size must not be empty",
            "Each num_speculative_tokens_per_batch_size entry",
            "Batch-size range (",
            "Batch-size range start must be <= end",
            "num_speculative_tokens_per_batch_size values must be",
            "Batch-size ranges must be non-overlapping",
            "The first batch-size range must start at 1",
            "vllm_max_batch_size must be > 0.",
            "vllm_num_speculative_tokens must be > 0.",
        ):
            assert any(e.startswith(start) for e in errors), (record.name, start)


def _vllm_dense_lookup(schedule: list[tuple[int, int, int]], max_batch: int, num_spec: int) -> list[int]:
    """vllm/v1/spec_decode/dynamic/utils.py (0.33.0, byte-identical since 0.26.0),
    `build_dynamic_sd_schedule_lookup` after validation, variables renamed:

        dense_schedule = [0] * (vllm_max_batch_size + 1)
        next_batch_size = 1
        last_num_speculative_tokens: int | None = None
        for range_start, range_end, num_speculative_tokens in parsed_schedule:
            if range_start > next_batch_size and last_num_speculative_tokens is not None:
                for batch_size in range(next_batch_size, min(range_start, vllm_max_batch_size + 1)):
                    dense_schedule[batch_size] = min(vllm_num_speculative_tokens, last_num_speculative_tokens)
            for batch_size in range(max(range_start, next_batch_size),
                                    min(range_end, vllm_max_batch_size) + 1):
                dense_schedule[batch_size] = min(vllm_num_speculative_tokens, num_speculative_tokens)
            next_batch_size = max(next_batch_size, range_end + 1)
            last_num_speculative_tokens = num_speculative_tokens
            if next_batch_size > vllm_max_batch_size:
                break
        for batch_size in range(next_batch_size, vllm_max_batch_size + 1):
            dense_schedule[batch_size] = min(vllm_num_speculative_tokens, last_num_speculative_tokens)
    """
    dense = [0] * (max_batch + 1)
    nxt, last_k = 1, None
    for start, end, k in sorted(schedule):
        if start > nxt and last_k is not None:
            for b in range(nxt, min(start, max_batch + 1)):
                dense[b] = min(num_spec, last_k)
        for b in range(max(start, nxt), min(end, max_batch) + 1):
            dense[b] = min(num_spec, k)
        nxt = max(nxt, end + 1)
        last_k = k
        if nxt > max_batch:
            break
    assert last_k is not None
    for b in range(nxt, max_batch + 1):
        dense[b] = min(num_spec, last_k)
    return dense


@st.composite
def valid_schedules(draw: st.DrawFn) -> tuple[list[tuple[int, int, int]], int]:
    """A schedule vLLM accepts, by construction (sorted, disjoint, starting at 1; gaps or none),
    and a max_num_seqs one below, at or one above one of its edges, or anywhere up to past the end."""
    ranges, start = [], 1
    for _ in range(draw(st.integers(1, 5))):
        end = start + draw(st.integers(0, 40))
        ranges.append((start, end, draw(st.integers(0, 9))))
        start = end + 1 + draw(st.sampled_from([0, 0, 1, 2, 17]))
    edges = sorted({e for s, end, _ in ranges for e in (s, end)})
    cap = draw(
        st.one_of(
            st.builds(lambda e, d: max(1, e + d), st.sampled_from(edges), st.integers(-1, 1)),
            st.integers(1, ranges[-1][1] + 30),
        )
    )
    return draw(st.permutations(ranges)), cap


@settings(max_examples=300, deadline=None)
@given(valid_schedules(), st.integers(1, 8))
def test_ranges_are_vllms_dense_lookup(
    schedule_and_cap: tuple[list[tuple[int, int, int]], int], k: int
) -> None:
    schedule, cap = schedule_and_cap
    dense = _vllm_dense_lookup(schedule, cap, k)
    runs = lookup_ranges(schedule, cap, k)  # every example is valid: none is skipped
    assert [k for first, last, k in runs for _ in range(first, last + 1)] == dense[1:]
    assert all(a[2] != b[2] for a, b in itertools.pairwise(runs))  # equal-K runs are merged
    # vllm/config/vllm.py (0.33.0) `_set_cudagraph_sizes`: "the last write per query length is the
    # widest batch running at it"
    widest: dict[int, int] = {}
    for batch_size, num_spec in enumerate(dense[1:], start=1):
        widest[num_spec + 1] = batch_size
    assert widest_per_query_len(runs) == dict(sorted(widest.items()))


def test_plan_memory_does_not_follow_max_num_seqs() -> None:
    """A 4-range schedule at 10^7 requests: the dense table alone would be 80 MB of pointers."""
    inp = load_config(ROOT_DIR / "configs/examples/mns1024-eagle-k16-dyn4.yaml").input
    big = dataclasses.replace(inp, max_num_seqs=10**7, max_num_batched_tokens=10**7)
    tracemalloc.start()
    try:
        plan = build_plan(big, with_fixes=False)
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert plan.dynamic_sd_lookup == ((1, 8, 16), (9, 64, 7), (65, 256, 3), (257, 10**7, 1))
    assert peak_bytes < 8 * 2**20, peak_bytes
