#!/usr/bin/env python3
"""Per-feature agreement of cgplan with vLLM's recorded answers for the issue 16 corpus.

    .venv/bin/python scripts/golden_agreement.py     # from the repository root

For every record under tests/data/oracle-deploy/ (see tests/core/vllm/test_golden_deploy.py for how they
are made) it plans the config as cgplan does and counts, per feature, the configs × releases
compared, how many agree on every field, and the fields compared.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cgplan.core.compare.oracle import field_agreement
from tests.core.vllm.test_golden_deploy import RECORDS, load

FEATURES = (
    ("lora", "LoRA"),
    ("dbo", "DBO/microbatching"),
    ("ubatch", "DBO/microbatching"),
    ("dp", "DP"),
    ("pp", "PP"),
    ("dcp", "DCP"),
    ("ep", "EP"),
    ("deploy", "MoE+MLA deployment"),
    ("valid", "validation"),
    ("a2a", "all-to-all backend (#27)"),
    ("mtp", "MTP layers (#27)"),
    ("budget", "validation"),
    ("off", "validation"),
    ("v1-drafter", "V1 drafter (#27)"),
    ("perk", "drafter decode per K (#27)"),
)


def feature(name: str) -> str:
    return next(label for prefix, label in FEATURES if name.startswith(prefix))


def main() -> int:
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])  # records, agree, fields, ok, rejects
    versions: dict[str, set[str]] = defaultdict(set)
    bad = []
    for path in RECORDS:
        name, version = path.name.removesuffix(".json.gz").split(".", 1)
        exp, got = load(path)
        fields = field_agreement(exp, got, reason=True)
        r = rows[feature(name)]
        r[0] += 1
        r[1] += all(fields.values())
        r[2] += len(fields)
        r[3] += sum(fields.values())
        r[4] += "error" in exp
        versions[feature(name)].add(version)
        if not all(fields.values()):
            bad.append(f"{name} {version}: " + ", ".join(k for k, ok in fields.items() if not ok))
    print("feature              records  agree  fields ok/compared  vLLM refuses  releases")
    for label, (n, agree, nf, ok, rej) in sorted(rows.items()):
        print(f"{label:<20} {n:>7}  {agree:>5}  {ok:>6}/{nf:<9}  {rej:>12}  {len(versions[label])}")
    for line in bad:
        print("DISAGREE", line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
