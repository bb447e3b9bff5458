#!/usr/bin/env python3
"""Generate the synthetic traffic histograms under configs/traffic/ (seeded, reproducible), as JSON.

    python3 scripts/make_traffic.py configs/traffic

* decode-heavy-mns32.json — an EAGLE K=16 server with max_num_seqs 32 that is busy: the
  number of running requests per decode step follows a binomial(32, 0.8) (mean 25.6), 20,000
  decode steps; plus 2,000 chunked-prefill steps whose token counts are uniform in 64..4096.
* bursty-mns256.json — a 256-request server (no speculation) with bursty load: running
  requests per decode step are a 60/40 mixture of binomial(256, 0.15) (quiet) and
  binomial(256, 0.7) (busy), 50,000 steps; plus 5,000 mixed steps, log-uniform in 1..8192 tokens.
* dyn4-mns1024.json — the 4-tier dynamic-SD example (max_num_seqs 1024): running requests
  per decode step log-uniform in 1..1024, 100,000 steps (for the optimiser benchmark).
"""

from __future__ import annotations

import json
import math
import random
import sys
from collections import Counter
from pathlib import Path


def binomial(rng: random.Random, n: int, p: float) -> int:
    return sum(rng.random() < p for _ in range(n))


def write(path: Path, header: str, decode: Counter[int], mixed: Counter[int]) -> None:
    """The histogram as JSON (cgplan reads it with the C parser; YAML is for histograms written by
    hand), one shape a line so a diff of two runs reads."""
    rows = {
        "uniform_decode": [{"num_reqs": n, "count": c} for n, c in sorted(decode.items()) if n > 0],
        "mixed": [{"num_tokens": t, "count": c} for t, c in sorted(mixed.items())],
    }
    lines = ["{", f'  "description": {json.dumps(" ".join(header.split()))},']
    for i, (key, entries) in enumerate(rows.items()):
        body = ",\n".join(f"    {json.dumps(e)}" for e in entries)
        lines.append(f'  "{key}": [\n{body}\n  ]' if entries else f'  "{key}": []')
        lines[-1] += "," if i < len(rows) - 1 else ""
    lines.append("}")
    path.write_text("\n".join(lines) + "\n")


def main(out: Path) -> None:
    rng = random.Random(2026)
    out.mkdir(parents=True, exist_ok=True)
    decode = Counter(binomial(rng, 32, 0.8) for _ in range(20_000))
    mixed = Counter(rng.randint(64, 4096) for _ in range(2_000))
    write(
        out / "decode-heavy-mns32.json",
        "Synthetic (scripts/make_traffic.py, seed 2026): busy EAGLE K=16 server, max_num_seqs 32.\n"
        "Decode steps: running requests ~ binomial(32, 0.8); prefill steps: tokens uniform in 64..4096.",
        decode,
        mixed,
    )
    decode = Counter(binomial(rng, 256, 0.15 if rng.random() < 0.6 else 0.7) for _ in range(50_000))
    mixed = Counter(int(math.exp(rng.uniform(0, math.log(8192)))) for _ in range(5_000))
    write(
        out / "bursty-mns256.json",
        "Synthetic (scripts/make_traffic.py, seed 2026): bursty 256-request server, no speculation.\n"
        "Decode steps: 60% binomial(256, 0.15), 40% binomial(256, 0.7);\n"
        "mixed steps log-uniform 1..8192 tokens.",
        decode,
        mixed,
    )
    decode = Counter(min(1024, int(math.exp(rng.uniform(0, math.log(1024))))) for _ in range(100_000))
    write(
        out / "dyn4-mns1024.json",
        "Synthetic (scripts/make_traffic.py, seed 2026): 4-tier dynamic-SD server, max_num_seqs 1024.\n"
        "Decode steps: running requests log-uniform in 1..1024.",
        decode,
        Counter(),
    )


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "configs/traffic"))
