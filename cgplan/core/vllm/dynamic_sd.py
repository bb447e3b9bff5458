"""Dynamic speculative decoding: the batch-size → K schedule, as vLLM expands it.

Mirrors vllm/v1/spec_decode/dynamic/utils.py, byte-identical in 0.26.0–0.33.0:
`validate_and_normalize_dynamic_sd_schedule` and `build_dynamic_sd_schedule_lookup`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence


class ScheduleError(ValueError):
    """vLLM's ValueError for an invalid schedule, with vLLM's own words."""


def normalize_schedule(schedule: Sequence[Sequence[int]]) -> list[tuple[int, int, int]]:
    """Validate and sort a schedule exactly as vLLM does.

    >>> normalize_schedule([(32, 128, 2), (1, 16, 5)])
    [(1, 16, 5), (32, 128, 2)]
    """
    if not schedule:
        raise ScheduleError("num_speculative_tokens_per_batch_size must not be empty.")
    parsed: list[tuple[int, int, int]] = []
    for entry in schedule:
        if len(entry) != 3:
            raise ScheduleError(
                "Each num_speculative_tokens_per_batch_size entry must be a 3-item "
                "sequence: (range_start, range_end, num_speculative_tokens)."
            )
        start, end, k = (int(x) for x in entry)
        if start <= 0 or end <= 0:
            raise ScheduleError(f"Batch-size range ({start}, {end}) must be positive.")
        if start > end:
            raise ScheduleError(f"Batch-size range start must be <= end for ({start}, {end}, {k}).")
        if k < 0:
            raise ScheduleError("num_speculative_tokens_per_batch_size values must be >= 0.")
        parsed.append((start, end, k))
    parsed.sort(key=lambda e: e[0])
    previous_end = 0
    for start, end, _ in parsed:
        if start <= previous_end:
            raise ScheduleError("Batch-size ranges must be non-overlapping and sorted.")
        previous_end = end
    if parsed[0][0] != 1:
        raise ScheduleError(
            "The first batch-size range must start at 1 so every runtime batch size has a defined schedule."
        )
    return parsed


def lookup_ranges(
    schedule: Sequence[Sequence[int]], max_batch_size: int, num_speculative_tokens: int
) -> list[tuple[int, int, int]]:
    """vLLM's dense `build_dynamic_sd_schedule_lookup` (batch size -> K) as equal-K runs
    (first_batch, last_batch, K), computed on the schedule's ranges: O(ranges), not
    O(max_batch_size), so planning costs the same at 10^6 requests as at 1,024.

    Same validation and the same errors as vLLM's; the segments it walks are the ones vLLM's dense
    table fills (a gap carries the previous K, the tail the last K, all clamped to
    `num_speculative_tokens`), merged where consecutive segments have the same K
    (tests/core/vllm/test_dynamic_sd.py holds it to vLLM's recorded tables).

    >>> lookup_ranges([(1, 2, 5), (4, 4, 1)], max_batch_size=5, num_speculative_tokens=3)
    [(1, 3, 3), (4, 5, 1)]
    """
    if max_batch_size <= 0:
        raise ScheduleError("vllm_max_batch_size must be > 0.")
    if num_speculative_tokens <= 0:
        raise ScheduleError("vllm_num_speculative_tokens must be > 0.")
    parsed = normalize_schedule(schedule)
    runs: list[tuple[int, int, int]] = []

    def fill(first: int, last: int, k: int) -> None:
        last = min(last, max_batch_size)
        if first > last:
            return
        k = min(num_speculative_tokens, k)
        if runs and runs[-1][2] == k:
            runs[-1] = (runs[-1][0], last, k)
        else:
            runs.append((first, last, k))

    # normalize_schedule: sorted, disjoint, the first range starting at 1 (so no gap before it)
    for (start, end, k), (after, _, _) in itertools.pairwise(parsed):
        fill(start, end, k)
        fill(end + 1, after - 1, k)  # a gap carries the previous K
    last_start, last_end, last_k = parsed[-1]
    fill(last_start, last_end, last_k)
    fill(last_end + 1, max_batch_size, last_k)  # the tail carries the last K
    return runs


def widest_per_query_len(runs: Sequence[tuple[int, int, int]]) -> dict[int, int]:
    """query_len (K+1) → the largest batch size that runs at it, from `lookup_ranges`' runs.

    >>> widest_per_query_len([(1, 2, 3), (3, 3, 1)])
    {2: 3, 4: 2}
    """
    widest: dict[int, int] = {}
    for _, last, k in runs:
        widest[k + 1] = last
    return dict(sorted(widest.items()))
