#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""vLLM's own dynamic-SD schedule lookup on generated schedules, recorded as JSON (issue 35).

Runs `validate_and_normalize_dynamic_sd_schedule` and `build_dynamic_sd_schedule_lookup` of an
installed vLLM (vllm/v1/spec_decode/dynamic/utils.py, loaded from its file: the module imports
nothing, so neither torch nor the rest of vLLM is imported) on schedules generated here:

* valid by construction: ranges starting at 1, sorted and disjoint, with and without gaps, K from 0
  to past num_speculative_tokens, and max_num_seqs one below, at and one above every range's end
  (and the start of every gap), so every tier width is on both sides of the batch-size cap;
* one schedule per refusal vLLM's code has (an empty list, an entry of 2 items, a range not
  positive, start after end, K below 0, overlapping ranges, a first range not starting at 1, a cap
  or K of 0).

Each case records the schedule, max_batch_size and num_speculative_tokens with what vLLM returned:
`normalized` (the sorted schedule) or `normalize_error`, and `lookup` (the dense batch -> K table
as [first_batch, last_batch, K] runs) with `tiers` (query length K + 1 -> the widest batch running
at it, read off the dense table as `VllmConfig._set_cudagraph_sizes` does in 0.29.0+) or
`lookup_error`. The generator is seeded: the same cases every run.

    VENV/bin/python scripts/oracle/dynamic_sd.py > tests/data/oracle-dynamic-sd/X.json
    python3 scripts/oracle/dynamic_sd.py /path/to/site-packages X

tests/core/vllm/test_dynamic_sd.py holds cgplan/core/vllm/dynamic_sd.py to these files.
"""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from pathlib import Path
from typing import Any

SEED = 35


def _utils(site_packages: Path) -> Any:
    path = site_packages / "vllm" / "v1" / "spec_decode" / "dynamic" / "utils.py"
    spec = importlib.util.spec_from_file_location("vllm_dynamic_sd_utils", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _valid_schedule(rng: random.Random) -> list[list[int]]:
    ranges = []
    start = 1
    for _ in range(rng.randint(1, 5)):
        end = start + rng.choice((0, 1, rng.randint(2, 9), rng.randint(10, 70)))
        ranges.append([start, end, rng.randint(0, 9)])
        start = end + 1 + rng.choice((0, 0, 1, rng.randint(2, 20)))  # a gap, or none
    if rng.random() < 0.3:
        rng.shuffle(ranges)  # vLLM sorts them
    return ranges


def _caps(schedule: list[list[int]]) -> list[int]:
    edges = {e for s, end, _ in schedule for e in (s, end, end + 1)}
    return sorted({c + d for c in edges for d in (-1, 0, 1) if c + d >= 1})


INVALID: list[tuple[object, int, int]] = [
    ([], 8, 3),
    ([[1, 8]], 8, 3),
    ([[0, 8, 3]], 8, 3),
    ([[1, 0, 3]], 8, 3),
    ([[-1, 8, 3]], 8, 3),
    ([[5, 4, 3]], 8, 3),
    ([[1, 8, -1]], 8, 3),
    ([[1, 8, 3], [8, 16, 1]], 16, 3),
    ([[1, 8, 3], [4, 16, 1]], 16, 3),
    ([[2, 8, 3]], 8, 3),
    ([[9, 16, 1], [2, 8, 3]], 16, 3),
    ([[1, 8, 3]], 0, 3),
    ([[1, 8, 3]], -1, 3),
    ([[1, 8, 3]], 8, 0),
    ([[2, 8, 3]], 0, 3),
]


def _cases() -> list[tuple[object, int, int]]:
    rng = random.Random(SEED)
    out = list(INVALID)
    for _ in range(60):
        schedule = _valid_schedule(rng)
        caps = _caps(schedule)
        out.extend((schedule, cap, rng.randint(1, 8)) for cap in rng.sample(caps, min(len(caps), 6)))
    return out


def _runs(dense: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for b, k in enumerate(dense[1:], start=1):
        if runs and runs[-1][2] == k:
            runs[-1][1] = b
        else:
            runs.append([b, b, k])
    return runs


def record(utils: Any, version: str) -> dict[str, Any]:
    cases = []
    for schedule, cap, k in _cases():
        case: dict[str, Any] = {"schedule": schedule, "max_batch_size": cap, "num_speculative_tokens": k}
        try:
            case["normalized"] = [list(e) for e in utils.validate_and_normalize_dynamic_sd_schedule(schedule)]
        except ValueError as e:
            case["normalize_error"] = str(e)
        try:
            dense = utils.build_dynamic_sd_schedule_lookup(schedule, cap, k)
        except ValueError as e:
            case["lookup_error"] = str(e)
        else:
            case["lookup"] = _runs(dense)
            # vllm/config/vllm.py, VllmConfig._set_cudagraph_sizes (0.29.0+): "Ascending batch
            # size, so the last write per query length is the widest batch running at it."
            widest: dict[int, int] = {}
            for batch_size, num_spec in enumerate(dense[1:], start=1):
                widest[num_spec + 1] = batch_size
            case["tiers"] = {str(q): b for q, b in sorted(widest.items())}
        cases.append(case)
    return {
        "vllm_version": version,
        "source": "vllm/v1/spec_decode/dynamic/utils.py",
        "command": f"python3 scripts/oracle/dynamic_sd.py SITE_PACKAGES {version}",
        "seed": SEED,
        "cases": cases,
    }


def main(argv: list[str]) -> int:
    if argv:
        site, version = Path(argv[0]), argv[1]
    else:
        import importlib.metadata

        import vllm

        site = Path(vllm.__file__).resolve().parent.parent
        version = importlib.metadata.version("vllm")
    doc = record(_utils(site), version)
    cases = doc.pop("cases")
    head = json.dumps(doc)[:-1]  # one case a line: diffs stay readable
    print(head + ', "cases": [\n' + ",\n".join(json.dumps(c) for c in cases) + "\n]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
