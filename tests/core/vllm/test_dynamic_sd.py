"""Dynamic-SD lookups on ranges: the same answer as vLLM's dense table, at a cost that does not
grow with max_num_seqs."""

from __future__ import annotations

import dataclasses
import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from cgplan.core.plan.build import build_plan
from cgplan.core.vllm.dynamic_sd import (
    ScheduleError,
    build_lookup,
    compress_lookup,
    lookup_ranges,
    widest_batch_per_query_len,
    widest_per_query_len,
)
from cgplan.io.config import load_config
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR

entries = st.tuples(st.integers(-2, 60), st.integers(-2, 60), st.integers(-1, 20))


@settings(max_examples=800, deadline=None)
@given(st.lists(entries, max_size=6), st.integers(-1, 80), st.integers(-1, 20))
def test_ranges_equal_the_dense_lookup(schedule: list[tuple[int, int, int]], max_batch: int, k: int) -> None:
    """`lookup_ranges` is `compress_lookup(build_lookup(...))`, errors included."""
    try:
        dense = build_lookup(schedule, max_batch, k)
    except ScheduleError as e:
        try:
            lookup_ranges(schedule, max_batch, k)
        except ScheduleError as e2:
            assert str(e2) == str(e)
        else:
            raise AssertionError(f"lookup_ranges accepted what build_lookup refuses: {e}")
        return
    runs = lookup_ranges(schedule, max_batch, k)
    assert runs == compress_lookup(dense)
    assert widest_per_query_len(runs) == widest_batch_per_query_len(dense)


def test_plan_memory_does_not_follow_max_num_seqs() -> None:
    """A 4-range schedule at 10^7 requests: the dense table alone would be 80 MB of pointers."""
    inp = load_config(ROOT / "configs/examples/mns1024-eagle-k16-dyn4.yaml").input
    big = dataclasses.replace(inp, max_num_seqs=10**7, max_num_batched_tokens=10**7)
    tracemalloc.start()
    try:
        plan = build_plan(big, with_fixes=False)
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert plan.dynamic_sd_lookup == ((1, 8, 16), (9, 64, 7), (65, 256, 3), (257, 10**7, 1))
    assert peak_bytes < 8 * 2**20, peak_bytes
