"""What `cgplan plan --json`'s imports spend creating dataclasses (issue 26's speed target).

    .venv/bin/python benchmarks/import_cost.py --out benchmarks/results/import-cost.json

Times `dataclasses._process_class` (the decorator's work: generated __init__/__eq__/__hash__/...) while
the plan path's modules import, in a fresh process per repetition; the median of 7.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = """
import time, dataclasses, json
orig = dataclasses._process_class
spent = [0.0, 0]
def timed(*a, **k):
    t = time.process_time(); r = orig(*a, **k); spent[0] += time.process_time() - t; spent[1] += 1; return r
dataclasses._process_class = timed
t = time.process_time()
import cgplan.api.plan, cgplan.cli, cgplan.io.schema.plan
print(json.dumps({"import_s": time.process_time() - t, "dataclass_s": spent[0], "classes": spent[1]}))
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("PYTHONPYCACHEPREFIX", "/tmp/cgplan-import-cost-pyc")
    subprocess.run([sys.executable, "-c", CHILD], env=env, check=True, capture_output=True)  # warm bytecode
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", CHILD], env=env, check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(a.reps)
    ]
    doc = {
        "kind": "cgplan-import-cost",
        "schema_version": 1,
        "command": f"python benchmarks/import_cost.py --out {a.out}",
        "python": sys.version.split()[0],
        "classes": runs[0]["classes"],
        "median_import_ms": round(1000 * statistics.median(r["import_s"] for r in runs), 1),
        "median_dataclass_ms": round(1000 * statistics.median(r["dataclass_s"] for r in runs), 1),
        "runs": runs,
    }
    a.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps({k: v for k, v in doc.items() if k != "runs"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
