"""Plan-speed benchmark: cgplan against vLLM's own code (through the oracle) on one config.

Measures, in one run on this machine:
  * the whole `cgplan plan --json` process for max_num_seqs 1024, K=16 and a 4-range
    dynamic-SD schedule (configs/examples/mns1024-eagle-k16-dyn4.yaml), median of N;
  * in-process planning of that config (median of N), and of a 1,000-config sweep;
  * the same question asked of vLLM's own code through the oracle (one process),
    when --oracle-python points at a venv with vLLM (scripts/record_golden.py says how).

Usage: python benchmarks/bench_plan.py --out benchmarks/results/plan-speed.json
       [--oracle-python .cache/venv-0.33.0/bin/python]   (make oracle-venvs builds it; the oracle
       defaults to the project's scripts/oracle/oracle.py)
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cgplan.config import load_config  # noqa: E402
from cgplan.core.plan import build_plan  # noqa: E402

CONFIG = ROOT / "configs" / "examples" / "mns1024-eagle-k16-dyn4.yaml"


def _median_s(fn: object, n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--oracle-python", default=os.environ.get("ORACLE_PYTHON"))
    ap.add_argument(
        "--oracle", default=os.environ.get("ORACLE_SCRIPT", str(ROOT / "scripts/oracle/oracle.py"))
    )
    args = ap.parse_args()

    cgplan_exe = [sys.executable, "-m", "cgplan", "plan", str(CONFIG), "--json"]
    process_s = _median_s(lambda: subprocess.run(cgplan_exe, check=True, capture_output=True), args.runs)
    inp = load_config(CONFIG).input
    inproc_s = _median_s(lambda: build_plan(inp), args.runs * 3)
    inproc_nofix_s = _median_s(lambda: build_plan(inp, with_fixes=False), args.runs * 3)

    sweep = [
        dataclasses.replace(
            inp,
            max_num_seqs=s,
            max_num_batched_tokens=max(s, 8192),
            speculative=dataclasses.replace(inp.speculative, num_speculative_tokens_per_batch_size=None),
        )
        for s in range(8, 1008)
    ]
    t0 = time.perf_counter()
    for x in sweep:
        build_plan(x, with_fixes=False)
    sweep_s = time.perf_counter() - t0

    sweep_cmd = [
        sys.executable,
        "-m",
        "cgplan",
        "sweep",
        str(ROOT / "configs/examples/pr50488-eagle-k16.yaml"),
        "--set",
        "max_num_seqs=8..2048",
        "--vllm-version",
        "0.26.0",
        "--vllm-version",
        "0.33.0",
        "--json",
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(sweep_cmd, check=True, capture_output=True, text=True)
    sweep_process_s = time.perf_counter() - t0
    sweep_doc = json.loads(proc.stdout)

    result: dict[str, object] = {
        "command": "make bench  (python benchmarks/bench_plan.py --out benchmarks/results/plan-speed.json"
        + (f" --oracle-python {args.oracle_python}" if args.oracle_python else "")
        + ")",
        "machine": {
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
        },
        "config": str(CONFIG.relative_to(ROOT)),
        "cgplan_process_median_s": round(process_s, 4),
        "cgplan_in_process_plan_median_ms": round(inproc_s * 1000, 2),
        "cgplan_in_process_plan_without_fixes_median_ms": round(inproc_nofix_s * 1000, 2),
        "sweep_1000_configs_s": round(sweep_s, 3),
        "sweep_cli_max_num_seqs_8_to_2048_two_releases": {
            "command": "cgplan sweep configs/examples/pr50488-eagle-k16.yaml --set max_num_seqs=8..2048 "
            "--vllm-version 0.26.0 --vllm-version 0.33.0 --json",
            "plans": sweep_doc["plans"],
            "ranges": len(sweep_doc["ranges"]),
            "process_s": round(sweep_process_s, 3),
        },
        "targets": {
            "speedup_vs_vllm": ">= 20x",
            "in_process_ms": "< 20",
            "sweep_1000_s": "< 5",
            "sweep_8_2048_two_releases_s": "a few seconds",
        },
    }
    if args.oracle_python and Path(args.oracle_python).exists():
        cfg = {
            "model_dir": str(ROOT / "configs/models/tiny-llama"),
            "max_model_len": 8192,
            "max_num_seqs": 1024,
            "max_num_batched_tokens": 16384,
            "platform": "hopper",
            "speculative": {
                "method": "eagle",
                "num_speculative_tokens": 16,
                "num_speculative_tokens_per_batch_size": [
                    [1, 8, 16],
                    [9, 64, 7],
                    [65, 256, 3],
                    [257, 1024, 1],
                ],
            },
        }
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(cfg, fh)
        t0 = time.perf_counter()
        proc = subprocess.run(
            [args.oracle_python, args.oracle, fh.name, "--compact"],
            capture_output=True,
            text=True,
            check=False,
        )
        oracle_s = time.perf_counter() - t0
        result["vllm_oracle_process_s"] = round(oracle_s, 3)
        result["vllm_oracle_ok"] = proc.returncode == 0
        result["speedup_process_vs_vllm"] = round(oracle_s / process_s, 1)
        with contextlib.suppress(OSError):
            result["vllm_oracle_version"] = subprocess.run(
                [args.oracle_python, "-c", "import importlib.metadata as m; print(m.version('vllm'))"],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.strip()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
