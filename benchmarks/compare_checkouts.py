"""Two checkouts of cgplan side by side: `cgplan plan CONFIG --json`, the table, and `python -c pass`.

On a shared machine a process's CPU time moves with the load, so a figure from one run says
little against another from an earlier session; this runs both checkouts (each with its own
.venv, editable install) back to back in every pair, alternating which goes first, and reports
medians of per-pair ratios: branch / base, and each side over the bare interpreter (issue 18). Bytecode
is cached in a private PYTHONPYCACHEPREFIX per side (warm-up run first), as in bench_plan.py.

Usage: python benchmarks/compare_checkouts.py --base /work/main [--branch .] [--pairs 15] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import tempfile
from pathlib import Path

CONFIG = "benchmarks/configs/eagle-k16-mns1024-dyn4.yaml"
COMMANDS = {
    "bare": ["-c", "pass"],
    "json": ["-m", "cgplan", "plan", CONFIG, "--json"],
    "table": ["-m", "cgplan", "plan", CONFIG],
}


def cpu_s(root: Path, env: dict[str, str], args: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [str(root / ".venv/bin/python"), *args]
    subprocess.run(cmd, cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, required=True, help="the checkout compared against (e.g. main)")
    ap.add_argument("--branch", type=Path, default=Path("."))
    ap.add_argument("--pairs", type=int, default=15)
    ap.add_argument("--out", type=Path, help="also write the result here")
    args = ap.parse_args()
    sides = {"base": args.base.resolve(), "branch": args.branch.resolve()}
    caches = {s: tempfile.TemporaryDirectory(prefix=f"compare-{s}-") for s in sides}
    envs = {}
    for s in sides:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = caches[s].name
        envs[s] = env
    load_before = os.getloadavg()[0]
    for s, root in sides.items():  # warm-up: the bytecode the timed runs read
        for cmd in COMMANDS.values():
            cpu_s(root, envs[s], cmd)
    runs: dict[tuple[str, str], list[float]] = {(s, c): [] for s in sides for c in COMMANDS}
    for i in range(args.pairs):
        order = list(sides) if i % 2 == 0 else list(sides)[::-1]
        for s in order:
            for c, cmd in COMMANDS.items():
                runs[(s, c)].append(cpu_s(sides[s], envs[s], cmd))

    def ratio(a: list[float], b: list[float]) -> float:
        return round(statistics.median([y / x for x, y in zip(a, b, strict=True)]), 2)

    def commit(root: Path) -> str:
        git = ["git", "-C", str(root)]
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no", "--", "cgplan"],
            capture_output=True,
            text=True,
        )
        return head.strip() + (" (uncommitted changes in cgplan/)" if dirty.stdout.strip() else "")

    out = {
        "what": "CPU seconds (user + system) per process; medians of per-pair ratios",
        "commits": {s: commit(root) for s, root in sides.items()},
        "config": CONFIG,
        "pairs": args.pairs,
        "median_cpu_s": {f"{s}_{c}": round(statistics.median(v), 4) for (s, c), v in runs.items()},
        "branch_over_base": {c: ratio(runs[("base", c)], runs[("branch", c)]) for c in COMMANDS},
        "over_bare_python": {
            f"{s}_{c}": ratio(runs[(s, "bare")], runs[(s, c)]) for s in sides for c in ("json", "table")
        },
        "load": {
            "loadavg_1m_before": round(load_before, 2),
            "loadavg_1m_after": round(os.getloadavg()[0], 2),
        },
    }
    for cache in caches.values():
        cache.cleanup()
    text = json.dumps(out, indent=2) + "\n"
    if args.out is not None:
        args.out.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
