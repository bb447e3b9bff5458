"""Resource bounds: time and peak memory of plan, sweep, diff and gate on absurd but valid inputs.

Each case runs the real CLI entry point in a fresh subprocess and reports its wall time and
peak RSS (resource.getrusage(RUSAGE_SELF).ru_maxrss, measured in that subprocess), the exit
code and the error line. Cases just past a limit must be refused (exit 2, one line) at once;
cases at the limit are accepted and their cost is what the bound is.

Usage: python benchmarks/bench_bounds.py --out benchmarks/results/bounds.json [--quick]
  --quick skips the slowest cases (the 200,000-plan sweep, planning S=10^7 with fixes).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "configs" / "models" / "tiny-llama"
PR = ROOT / "configs" / "examples" / "pr50488-eagle-k16.yaml"
DYN = ROOT / "configs" / "examples" / "mns1024-eagle-k16-dyn4.yaml"

RUNNER = r"""
import json, resource, sys, time
out, args = sys.argv[1], sys.argv[2:]
sys.argv = ["cgplan", *args]
from cgplan.cli import main
t = time.perf_counter()
code = 0
try:
    main()
except SystemExit as e:
    code = e.code if isinstance(e.code, int) else (0 if e.code is None else -1)
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_SELF)
with open(out, "w") as fh:
    json.dump({"exit": code, "wall_s": round(wall, 3), "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
               "max_rss_mb": round(ru.ru_maxrss / 1024, 1)}, fh)
"""


def serve(folder: Path, name: str, body: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(f"model: {TINY}\ncgplan: {{vllm_version: 0.33.0, platform: hopper}}\n" + body)
    return path


def report(folder: Path, name: str, max_num_seqs: int, lookup_rows: int) -> Path:
    """A plan report at the report bounds: S = max_num_seqs, one range 1..S per tier."""
    rows = []
    step = max_num_seqs // lookup_rows
    for i in range(lookup_rows):
        last = max_num_seqs if i == lookup_rows - 1 else (i + 1) * step
        rows.append([i * step + 1, last, 1 + i % 3])
    doc = {
        "schema_version": 1,
        "kind": "plan",
        "vllm_version": "0.33.0",
        "config_fingerprint": "0123456789abcdef",
        "max_num_seqs": max_num_seqs,
        "uniform_decode_query_len": 4,
        "dynamic_sd": {"lookup": rows},
        "graphs": {
            "target": [{"mode": "FULL", "num_tokens": n, "num_reqs": None, "query_len": 4} for n in (4, 8)]
        },
        "uniform_decode": {
            str(q): [{"from_reqs": 1, "to_reqs": max_num_seqs, "mode": "FULL", "padded_tokens": q * 2}]
            for q in (2, 3, 4)
        },
    }
    path = folder / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


def cases(tmp: Path, quick: bool) -> list[tuple[str, str, list[str]]]:
    """(name, expectation, argv) for every measured case."""
    eagle3 = "speculative_config: {method: eagle, num_speculative_tokens: 3}\n"
    s1m = serve(tmp, "s1m", f"max_num_seqs: 1000000\nmax_num_batched_tokens: 10000000\n{eagle3}")
    s1m_plain = serve(tmp, "s1m-plain", "max_num_seqs: 1000000\nmax_num_batched_tokens: 10000000\n")
    s10m = serve(tmp, "s10m", f"max_num_seqs: 10000000\nmax_num_batched_tokens: 10000000\n{eagle3}")
    s10m1 = serve(tmp, "s10m1", "max_num_seqs: 10000001\n")
    sizes = ", ".join(str(i) for i in range(1, 10_001))
    sizes10k = serve(
        tmp,
        "sizes10k",
        f"max_num_batched_tokens: 10000\ncompilation_config: {{cudagraph_capture_sizes: [{sizes}]}}\n",
    )
    sizes10k1 = serve(
        tmp,
        "sizes10k1",
        f"max_num_batched_tokens: 10001\ncompilation_config: {{cudagraph_capture_sizes: [{sizes}, 10001]}}\n",
    )
    mbt10m = serve(
        tmp,
        "mbt10m",
        "max_num_seqs: 1024\nmax_num_batched_tokens: 10000000\n"
        "compilation_config: {max_cudagraph_capture_size: 10000000}\n" + eagle3,
    )
    mbt10m1 = serve(tmp, "mbt10m1", "max_num_batched_tokens: 10000001\n")
    sched = ", ".join(f"[{i}, {i}, {1 + i % 3}]" for i in range(1, 1_001))
    spec = (
        "speculative_config: {method: eagle, num_speculative_tokens: 3, "
        "num_speculative_tokens_per_batch_size: "
    )
    sched1k = serve(
        tmp, "sched1k", f"max_num_seqs: 1000\nmax_num_batched_tokens: 100000\n{spec}[{sched}]}}\n"
    )
    sched1k1 = serve(
        tmp,
        "sched1k1",
        f"max_num_seqs: 1001\nmax_num_batched_tokens: 100000\n{spec}[{sched}, [1001, 1001, 1]]}}\n",
    )
    sched10k = serve(
        tmp,
        "sched10k",
        f"max_num_seqs: 10000\nmax_num_batched_tokens: 100000\n{spec}"
        + "["
        + ", ".join(f"[{i}, {i}, {1 + i % 3}]" for i in range(1, 10_001))
        + "]}\n",
    )
    dyn1m = serve(
        tmp,
        "dyn1m",
        "max_num_seqs: 1000000\nmax_num_batched_tokens: 10000000\nspeculative_config: {method: eagle, "
        "num_speculative_tokens: 16, num_speculative_tokens_per_batch_size: "
        "[[1, 8, 16], [9, 64, 7], [65, 256, 3], [257, 1000000, 1]]}\n",
    )
    dyn10m = serve(
        tmp,
        "dyn10m",
        "max_num_seqs: 10000000\nmax_num_batched_tokens: 10000000\nspeculative_config: {method: eagle, "
        "num_speculative_tokens: 16, num_speculative_tokens_per_batch_size: "
        "[[1, 8, 16], [9, 10000000, 1]]}\n",
    )
    rep1m = report(tmp, "report-s1m", 1_000_000, 3)
    rep10m = report(tmp, "report-s10m", 10_000_000, 3)
    rep10m_rows = report(tmp, "report-s10m-rows", 10_000_000, 10_000)
    out: list[tuple[str, str, list[str]]] = [
        ("plan max_num_seqs 1,000,000 (K=3, with the fix search)", "accepted", ["plan", str(s1m), "--json"]),
        ("plan max_num_seqs 1,000,000 (no speculation)", "accepted", ["plan", str(s1m_plain), "--json"]),
        ("gate max_num_seqs 1,000,000 (K=3)", "accepted", ["gate", str(s1m)]),
        (
            "diff max_num_seqs 1,000,000 (K=3) under two releases",
            "accepted",
            ["diff", str(s1m), "--vllm-version", "0.26.0..0.33.0", "--json"],
        ),
        ("gate max_num_seqs 10,000,000 (K=3)", "accepted", ["gate", str(s10m)]),
        ("plan max_num_seqs 10,000,001", "refused", ["plan", str(s10m1)]),
        ("plan 10,000 cudagraph_capture_sizes", "accepted", ["plan", str(sizes10k), "--json"]),
        ("plan 10,001 cudagraph_capture_sizes", "refused", ["plan", str(sizes10k1)]),
        (
            "plan max_num_batched_tokens = max_cudagraph_capture_size = 10,000,000",
            "accepted",
            ["plan", str(mbt10m), "--json"],
        ),
        ("plan max_num_batched_tokens 10,000,001", "refused", ["plan", str(mbt10m1)]),
        ("plan a 1,000-range dynamic-SD schedule", "accepted", ["plan", str(sched1k), "--json"]),
        ("plan a 1,001-range dynamic-SD schedule", "refused", ["plan", str(sched1k1)]),
        ("plan a 10,000-range dynamic-SD schedule", "refused", ["plan", str(sched10k)]),
        ("plan dynamic SD at max_num_seqs 1,000,000", "accepted", ["plan", str(dyn1m), "--json"]),
        ("gate dynamic SD at max_num_seqs 10,000,000", "accepted", ["gate", str(dyn10m)]),
        (
            "sweep 20,000 plans (max_num_seqs 1..20000)",
            "accepted",
            ["sweep", str(PR), "--set", "max_num_seqs=1..20000", "--json"],
        ),
        (
            "sweep max_num_seqs=1..200001 (200,001 plans)",
            "refused",
            ["sweep", str(PR), "--set", "max_num_seqs=1..200001"],
        ),
        (
            "sweep 250,000 plans (500 x 500)",
            "refused",
            ["sweep", str(PR), "--set", "max_num_seqs=1..500", "--set", "max_model_len=1..500"],
        ),
        (
            "sweep max_num_seqs=1..10^20 (never expanded)",
            "refused",
            ["sweep", str(PR), "--set", "max_num_seqs=1..100000000000000000000"],
        ),
        (
            "sweep 100 dynamic-SD plans at max_num_seqs ~1,000,000",
            "accepted",
            [
                "sweep",
                str(DYN),
                "--set",
                "max_num_seqs=999901..1000000",
                "--set",
                "max_num_batched_tokens=10000000",
            ],
        ),
        (
            "sweep 20,000 dynamic-SD plans at max_num_batched_tokens 10^7 (2 x 10^8 request counts)",
            "refused",
            ["sweep", str(DYN), "--set", "max_num_seqs=1..20000", "--set", "max_num_batched_tokens=10000000"],
        ),
        (
            "diff two reports at max_num_seqs 1,000,000",
            "accepted",
            ["diff", str(rep1m), str(rep1m), "--json"],
        ),
        (
            "diff two reports at max_num_seqs 10,000,000",
            "accepted",
            ["diff", str(rep10m), str(rep10m), "--json"],
        ),
        (
            "gate a report at max_num_seqs 10,000,000 with 10,000 lookup rows",
            "accepted",
            ["gate", str(rep10m_rows)],
        ),
    ]
    if not quick:
        out += [
            (
                "sweep 200,000 plans (max_num_seqs 1..200000: vLLM refuses every point above 8,192)",
                "accepted",
                ["sweep", str(PR), "--set", "max_num_seqs=1..200000", "--json"],
            ),
            (
                "sweep 200,000 valid plans (max_model_len 1..200000, the largest grid accepted)",
                "accepted",
                ["sweep", str(PR), "--set", "max_model_len=1..200000", "--json"],
            ),
            (
                "plan max_num_seqs 10,000,000 (K=3, with the fix search)",
                "accepted",
                ["plan", str(s10m), "--json"],
            ),
        ]
    return out


def measure(args: list[str], tmp: Path, timeout_s: float) -> dict[str, Any]:
    result = tmp / "result.json"
    result.unlink(missing_ok=True)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", RUNNER, str(result), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=timeout_s,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    except subprocess.TimeoutExpired:
        return {
            "exit": None,
            "wall_s": None,
            "cpu_s": None,
            "max_rss_mb": None,
            "timed_out_after_s": timeout_s,
        }
    doc: dict[str, Any] = json.loads(result.read_text()) if result.exists() else {"exit": proc.returncode}
    lines = proc.stderr.strip().splitlines()
    if lines and lines[-1].startswith("cgplan: error: "):
        doc["error"] = lines[-1].replace(str(tmp), "<tmp>")[:300]
    if "Traceback" in proc.stderr:
        doc["traceback"] = lines[-1][:300]
    return doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per case")
    opts = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for name, expect, args in cases(tmp, opts.quick):
            got = measure(args, tmp, opts.timeout)
            ok = (
                (got.get("exit") in (0, 1))
                if expect == "accepted"
                else (got.get("exit") == 2 and "error" in got)
            )
            row = {
                "case": name,
                "expect": expect,
                "as_expected": ok and "traceback" not in got,
                "argv": [a.replace(str(tmp), "<tmp>").replace(str(ROOT) + "/", "") for a in args],
                **got,
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    doc = {
        "command": "python benchmarks/bench_bounds.py --out benchmarks/results/bounds.json"
        + (" --quick" if opts.quick else ""),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
        },
        "measure": "each case is one CLI invocation in a fresh subprocess; wall_s around main(); cpu_s "
        "= user + system time of that subprocess (imports included; steadier than wall on a shared "
        "machine); max_rss_mb = getrusage(RUSAGE_SELF).ru_maxrss (interpreter included)",
        "limits": {
            "any count or size in a config or report": 10_000_000,
            "entries of cudagraph_capture_sizes": 10_000,
            "ranges of a dynamic-SD schedule": 1_000,
            "plans per sweep (points x releases)": 200_000,
            "request counts walked per sweep (sum of max_num_seqs over its plans)": 200_000_000,
        },
        "cases": rows,
    }
    opts.out.write_text(json.dumps(doc, indent=2) + "\n")
    return 0 if all(r["as_expected"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
