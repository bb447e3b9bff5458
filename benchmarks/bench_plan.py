"""Plan-speed benchmark: cgplan against vLLM's own code, a bare interpreter, and itself at scale.

Measures, in one run on this machine (CPU time of each process and wall time, medians of
per-pair ratios where two things are compared):

  * `cgplan plan CONFIG --json` against vLLM 0.33.0's own config and dispatcher code asked the
    same question through the project's oracle (scripts/oracle/oracle.py), the two run back to back in
    each pair, alternating which goes first. The reference must have answered: the run fails
    (exit 1) when the oracle exits non-zero, prints no JSON, reports an `error`, or gives other
    capture sizes or another dynamic-SD lookup than cgplan's plan. Without a vLLM venv
    (--oracle-python / ORACLE_PYTHON; `make oracle-venvs` builds them) that side is "not measured";
  * `cgplan plan CONFIG --json` and the table output against `python -c pass` (pairs);
  * in-process: a 1,000-config sweep (CPU seconds), and planning with the fix search at
    max_num_seqs 4,096 / 65,536 / 10^6, with and without the dynamic-SD schedule;
  * `cgplan logs` parsing: ms of CPU per MB and peak traced memory, against the largest
    engine start-up in the file, on generated logs (many restarts; one start-up then serving
    lines; plain and gzip) made from the logs under tests/data/logs;
  * YAML: reading the optimiser's traffic files (what `optimize --traffic` reads).

The results JSON records the machine (CPU count, Python, platform) and its load (1-minute load
average before and after), and no machine paths.

Bytecode: an installed package has its modules compiled (pip compiles them at install), so the
timed processes run with Python's bytecode cache on, in a private PYTHONPYCACHEPREFIX filled by
a warm-up run, for cgplan and `python -c pass` alike. PYTHONDONTWRITEBYTECODE (which some
environments set) is removed for them: with it every start recompiles cgplan's modules, which
no installed copy does; that start is measured once as well (`cold_start_without_bytecode`).
In-process figures clear cgplan's memo caches before each timed call, so a repeat is not
served from the previous one (`clear_caches`).

Usage: python benchmarks/bench_plan.py --out benchmarks/results/plan-speed.json
       [--oracle-python .cache/venv-0.33.0/bin/python] [--oracle scripts/oracle/oracle.py] [--pairs 5]
       python benchmarks/bench_plan.py --only logs --out /tmp/logs.json   (the log and YAML figures alone)
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from cgplan.core.plan.build import build_plan  # noqa: E402
from cgplan.io.config import load_config  # noqa: E402
from cgplan.io.files import parse_json, parse_yaml  # noqa: E402
from cgplan.io.logs import parse_file  # noqa: E402

CONFIG = ROOT / "benchmarks" / "configs" / "eagle-k16-mns1024-dyn4.yaml"
MODEL = ROOT / "configs" / "models" / "tiny-llama"
LOGS = ROOT / "tests" / "data" / "logs"
TRAFFIC = sorted((ROOT / "configs" / "traffic").glob("*.json"))


@dataclasses.dataclass(frozen=True)
class Run:
    """One process: CPU seconds (user + system, its children included) and wall seconds."""

    cpu_s: float
    wall_s: float
    returncode: int
    stdout: str
    stderr: str


def run_process(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=cwd, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(cpu, wall, proc.returncode, proc.stdout, proc.stderr)


def bytecode_env(prefix: Path) -> dict[str, str]:
    """The environment of the timed processes: bytecode cached under `prefix` (see the docstring)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(prefix)
    return env


def clear_caches() -> None:
    """Empty cgplan's in-process memo caches (plans, V2 managers and their tables, interned ranges
    and graphs, latency keys)."""
    import cgplan.core.plan.build
    import cgplan.core.plan.gaps
    import cgplan.core.predict.latency
    import cgplan.core.vllm.graphs

    cgplan.core.plan.gaps._OUTCOMES.clear()
    cgplan.core.plan.build._AGAIN.clear()
    cgplan.core.plan.build._CAPTURED.clear()
    cgplan.core.plan.build._RANGES.clear()
    cgplan.core.vllm.graphs._GRAPHS.clear()
    cgplan.core.vllm.graphs._MANAGERS.clear()
    cgplan.core.predict.latency._MEMO.clear()


def _median(xs: list[float], digits: int = 4) -> float:
    return round(statistics.median(xs), digits)


def paired(
    name_a: str, a: Callable[[], Run], name_b: str, b: Callable[[], Run], pairs: int
) -> tuple[dict[str, Any], list[tuple[Run, Run]]]:
    """`pairs` pairs of (a, b) back to back, alternating the order; ratios b/a per pair."""
    runs: list[tuple[Run, Run]] = []
    for i in range(pairs):
        if i % 2:
            rb = b()
            ra = a()
        else:
            ra = a()
            rb = b()
        runs.append((ra, rb))
    summary = {
        "pairs": pairs,
        f"{name_a}_cpu_s": [round(r.cpu_s, 4) for r, _ in runs],
        f"{name_b}_cpu_s": [round(r.cpu_s, 4) for _, r in runs],
        f"{name_a}_wall_s": [round(r.wall_s, 4) for r, _ in runs],
        f"{name_b}_wall_s": [round(r.wall_s, 4) for _, r in runs],
        f"median_ratio_cpu_{name_b}_over_{name_a}": _median([rb.cpu_s / ra.cpu_s for ra, rb in runs], 2),
        f"median_ratio_wall_{name_b}_over_{name_a}": _median([rb.wall_s / ra.wall_s for ra, rb in runs], 2),
    }
    return summary, runs


def _check(run: Run, what: str) -> None:
    if run.returncode != 0:
        raise SystemExit(f"bench_plan: {what} exited {run.returncode}: {run.stderr.strip()[-400:]}")


# ------------------------------------------------------------------------------------ the oracle


def oracle_config() -> dict[str, Any]:
    """The benchmark config in the oracle's keys (the same values as CONFIG)."""
    doc = yaml.safe_load(CONFIG.read_text())
    spec = doc["speculative_config"]
    return {
        "model_dir": str(MODEL),
        "max_model_len": doc["max_model_len"],
        "max_num_seqs": doc["max_num_seqs"],
        "max_num_batched_tokens": doc["max_num_batched_tokens"],
        "platform": doc["cgplan"]["platform"],
        "speculative": {
            "method": spec["method"],
            "num_speculative_tokens": spec["num_speculative_tokens"],
            "num_speculative_tokens_per_batch_size": spec["num_speculative_tokens_per_batch_size"],
        },
    }


def check_reference(run: Run, plan: dict[str, Any]) -> str | None:
    """Why the oracle's run is no answer to the question cgplan answered (None: it answered)."""
    if run.returncode != 0:
        return f"the oracle exited {run.returncode}: {run.stderr.strip()[-300:]}"
    try:
        doc = json.loads(run.stdout)
    except ValueError:
        return "the oracle printed no JSON document"
    if not isinstance(doc, dict):
        return "the oracle printed no JSON object"
    if doc.get("error"):
        return f"vLLM refused the config: {str(doc['error'])[:300]}"
    sizes = (doc.get("config") or {}).get("cudagraph_capture_sizes")
    if sizes != plan["capture_sizes"]:
        return f"vLLM's capture sizes differ from the plan's ({sizes} vs {plan['capture_sizes']})"
    lookup = (doc.get("dynamic_sd") or {}).get("lookup_ranges")
    if lookup != (plan.get("dynamic_sd") or {}).get("lookup"):
        return f"vLLM's dynamic-SD lookup differs from the plan's ({lookup})"
    return None


def bench_reference(args: argparse.Namespace, cgplan_json: Callable[[], Run], plan: dict[str, Any]) -> Any:
    if not args.oracle_python or not args.oracle:
        return {"measured": False, "why": "not measured: no vLLM venv (--oracle-python / ORACLE_PYTHON)"}
    if not Path(args.oracle_python).exists() or not Path(args.oracle).is_file():
        return {"measured": False, "why": "not measured: --oracle-python or --oracle does not exist"}
    version = subprocess.run(
        [args.oracle_python, "-c", "import importlib.metadata as m; print(m.version('vllm'))"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "config.json"
        cfg.write_text(json.dumps(oracle_config()))
        env = {**os.environ, "ORACLE_CACHE_DIR": str(Path(tmp) / "vllm-cache")}

        def oracle() -> Run:
            cmd = [args.oracle_python, args.oracle, str(cfg), "--compact"]
            return run_process(cmd, cwd=Path(tmp), env=env)

        summary, runs = paired("cgplan", cgplan_json, "vllm", oracle, args.pairs)
    for i, (_, ref) in enumerate(runs):
        why = check_reference(ref, plan)
        if why is not None:
            raise SystemExit(f"bench_plan: the reference did not answer (pair {i + 1}): {why}")
    return {
        "measured": True,
        "vllm_version": version,
        "what": "oracle.py: EngineArgs.create_engine_config, the dynamic-SD lookup, the V2 "
        "CudaGraphManager and its dispatch tables, in a fresh process per pair",
        "answered": "every pair: exit 0, no error field, capture sizes and dynamic-SD lookup equal "
        "to the plan's",
        **summary,
    }


# ------------------------------------------------------------------------------------ planning


def cpu_median(fn: Callable[[], object], runs: int, cap_s: float = 3.0) -> float:
    """Median CPU seconds of `runs` calls (one call when a call takes more than `cap_s`)."""
    times = []
    for _ in range(runs):
        clear_caches()
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
        if times[-1] > cap_s:
            break
    return statistics.median(times)


def bench_sweep() -> dict[str, Any]:
    inp = load_config(CONFIG).input
    assert inp.speculative is not None
    sweep = [
        dataclasses.replace(
            inp,
            max_num_seqs=s,
            max_num_batched_tokens=max(s, 8192),
            speculative=dataclasses.replace(inp.speculative, num_speculative_tokens_per_batch_size=None),
        )
        for s in range(8, 1008)
    ]
    clear_caches()
    t0 = time.process_time()
    for x in sweep:
        build_plan(x, with_fixes=False)
    cpu = time.process_time() - t0
    return {
        "what": "build_plan of 1,000 configs (max_num_seqs 8..1007, K=16, no schedule), no fix search, "
        "in one process (memo caches cleared before the first)",
        "cpu_s": round(cpu, 3),
        "target_cpu_s": "< 1",
    }


def whole_plan(inp: Any) -> Any:
    """What `cgplan plan` computes for `inp` after reading it (api.plan.plan_file's steps)."""
    from cgplan.api.plan import _build, _timed, fix_search, shipped_coefficients_for
    from cgplan.core.plan.assess import with_cost
    from cgplan.core.plan.policies import UPSTREAM

    plan = _build(inp, True, UPSTREAM, fix_search(None))
    return _timed(with_cost(plan, inp, shipped_coefficients_for(inp)), inp, None, None)


def bench_growth() -> dict[str, Any]:
    inp = load_config(CONFIG).input
    assert inp.speculative is not None
    out: dict[str, Any] = {
        "what": "in-process build_plan with the fix search, max_num_batched_tokens = max(S, 16384); "
        "CPU seconds, median of 3 (one run above 3 s); cpu_s_as_cgplan_plan: what `cgplan plan` "
        "computes (the fix search, the cost model, the step-latency model pricing each fix)",
        "target": "max_num_seqs 10^6 within 2x of 4,096",
    }
    for label, schedule in (
        ("dynamic_sd", inp.speculative.num_speculative_tokens_per_batch_size),
        ("no_dynamic_sd", None),
    ):
        row: dict[str, Any] = {}
        for s in (4096, 65536, 10**6):
            x = dataclasses.replace(
                inp,
                max_num_seqs=s,
                max_num_batched_tokens=max(s, 16384),
                speculative=dataclasses.replace(
                    inp.speculative, num_speculative_tokens_per_batch_size=schedule
                ),
            )
            plan = build_plan(x)
            row[str(s)] = {
                "cpu_s": round(cpu_median(lambda x=x: build_plan(x), 3), 4),
                "cpu_s_without_fix_search": round(
                    cpu_median(lambda x=x: build_plan(x, with_fixes=False), 3), 4
                ),
                "cpu_s_as_cgplan_plan": round(cpu_median(lambda x=x: whole_plan(x), 3), 4),
                "gaps": len(plan.gaps),
                "fixes": len(plan.fixes),
            }
        row["ratio_1e6_over_4096"] = round(row[str(10**6)]["cpu_s"] / row["4096"]["cpu_s"], 1)
        row["ratio_1e6_over_4096_as_cgplan_plan"] = round(
            row[str(10**6)]["cpu_s_as_cgplan_plan"] / row["4096"]["cpu_s_as_cgplan_plan"], 1
        )
        row["ratio_1e6_over_4096_without_fix_search"] = round(
            row[str(10**6)]["cpu_s_without_fix_search"] / row["4096"]["cpu_s_without_fix_search"], 1
        )
        out[label] = row
    return out


# ------------------------------------------------------------------------------------ logs


_SERVING = (
    "INFO 11-30 05:20:SS [loggers.py:257] Engine 000: Avg prompt throughput: 1234.5 tokens/s, Avg "
    "generation throughput: 456.7 tokens/s, Running: 31 reqs, Waiting: 0 reqs, GPU KV cache usage: "
    "12.3%, Prefix cache hit rate: 45.6%\n"
    'INFO:     127.0.0.1:51234 - "POST /v1/completions HTTP/1.1" 200 OK\n'
)


def make_log(kind: str, size_bytes: int, seed: int = 0) -> tuple[str, int]:
    """A generated log and its largest engine start-up in bytes: `restarts` (start-ups of the
    test logs in turn, serving lines between) or `serving` (one start-up, then serving lines)."""
    starts = [gzip.decompress(p.read_bytes()).decode() for p in sorted(LOGS.glob("*-vllm*.log.gz"))]
    starts += [p.read_text() for p in sorted(LOGS.glob("synthetic-*.log"))]
    starts = [s if s.endswith("\n") else s + "\n" for s in starts]
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    largest = 0
    while size < size_bytes:
        if kind == "restarts" or not parts:
            start = starts[len(parts) % len(starts)] if kind == "restarts" else starts[0]
            parts.append(start)
            size += len(start)
            largest = max(largest, len(start.encode()))
        for _ in range(rng.randint(0, 50) if kind == "restarts" else 1000):
            line = _SERVING.replace("SS", f"{rng.randint(0, 59):02d}")
            parts.append(line)
            size += len(line)
    return "".join(parts), largest


def _parse_peak(path: Path) -> tuple[Any, int]:
    """The parse of `path` and the peak of Python's traced memory during it."""
    tracemalloc.start()
    try:
        parsed = parse_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return parsed, peak


def bench_logs(size_mb: int, runs: int = 5) -> dict[str, Any]:
    """ms/MB (median of `runs`) and peak traced memory on `size_mb` MB logs, and the peak again on
    a log 4x as long: a streamed parse's peak must not grow with the file."""
    out: dict[str, Any] = {
        "what": f"cgplan.io.logs.parse_file on generated {size_mb} MB logs (bench_plan.make_log): CPU ms per "
        f"MB of log text (median of {runs}) and the peak of Python's traced memory, also on a log of "
        f"{4 * size_mb} MB (the same kind, 4x the start-ups or serving lines)",
        "target": "<= 20 ms/MB; peak <= 2x the largest engine start-up + a constant, the same at 4x the file",
    }
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("restarts", "serving"):
            text, largest = make_log(kind, size_mb * 2**20)
            longer, _ = make_log(kind, 4 * size_mb * 2**20)
            mb = len(text.encode()) / 2**20
            for suffix in ("", ".gz"):
                path = Path(tmp) / f"{kind}.log{suffix}"
                path4 = Path(tmp) / f"{kind}-4x.log{suffix}"
                for p, t in ((path, text), (path4, longer)):
                    data = t.encode()
                    p.write_bytes(gzip.compress(data, compresslevel=6) if suffix else data)
                cpu = cpu_median(lambda path=path: parse_file(path), runs, cap_s=60)
                parsed, peak = _parse_peak(path)
                parsed4, peak4 = _parse_peak(path4)
                path4.unlink()
                out[f"{kind}{suffix}"] = {
                    "text_mb": round(mb, 2),
                    "engine_starts": parsed.engine_starts,
                    "largest_engine_start_kib": round(largest / 1024, 1),
                    "cpu_ms_per_mb": round(cpu * 1000 / mb, 1),
                    "peak_traced_kib": round(peak / 1024, 1),
                    "peak_over_largest_start": round(peak / largest, 2),
                    "peak_minus_2x_largest_start_kib": round((peak - 2 * largest) / 1024, 1),
                    "text_mb_4x": round(len(longer.encode()) / 2**20, 2),
                    "engine_starts_4x": parsed4.engine_starts,
                    "peak_traced_kib_4x": round(peak4 / 1024, 1),
                }
            del text, longer
    return out


def histogram_yaml(doc: dict[str, Any]) -> str:
    """A JSON traffic histogram as the YAML a person writes (a block sequence of flow mappings)."""
    lines = ["uniform_decode:"]
    lines += [f"  - {{num_reqs: {e['num_reqs']}, count: {e['count']}}}" for e in doc["uniform_decode"]]
    lines.append("mixed:")
    lines += [f"  - {{num_tokens: {e['num_tokens']}, count: {e['count']}}}" for e in doc["mixed"]]
    return "\n".join(lines) + "\n"


def bench_yaml() -> dict[str, Any]:
    out: dict[str, Any] = {
        "what": "configs/traffic/*.json read as JSON and as the YAML a person writes: CPU ms, median of 5"
    }
    for path in TRAFFIC:
        text = path.read_text()
        as_yaml = histogram_yaml(json.loads(text))
        out[path.name] = {
            "kib": round(len(text) / 1024, 1),
            "cgplan_json_load_ms": round(
                cpu_median(lambda text=text: parse_json(text, "bench"), 5) * 1000, 1
            ),
            "yaml_kib": round(len(as_yaml) / 1024, 1),
            "pyyaml_safe_load_ms": round(
                cpu_median(lambda as_yaml=as_yaml: yaml.safe_load(as_yaml), 5) * 1000, 1
            ),
            "cgplan_yaml_load_ms": round(
                cpu_median(lambda as_yaml=as_yaml: parse_yaml(as_yaml, "bench"), 5) * 1000, 1
            ),
        }
    return out


# ------------------------------------------------------------------------------------ main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--pairs", type=int, default=5, help="pairs against vLLM (default 5)")
    ap.add_argument("--baseline-pairs", type=int, default=15, help="pairs against `python -c pass`")
    ap.add_argument("--log-mb", type=int, default=20, help="size of each generated log")
    ap.add_argument(
        "--only",
        choices=("logs",),
        help="logs: only the log-parsing and traffic-YAML figures (no cgplan processes, no oracle)",
    )
    ap.add_argument("--oracle-python", default=os.environ.get("ORACLE_PYTHON"))
    ap.add_argument(
        "--oracle", default=os.environ.get("ORACLE_SCRIPT", str(ROOT / "scripts/oracle/oracle.py"))
    )
    args = ap.parse_args()

    load_before = os.getloadavg()
    started = time.time()
    if args.only == "logs":
        return write_result(
            args.out,
            {
                "command": "python benchmarks/bench_plan.py --only logs --out OUT"
                + f" --log-mb {args.log_mb}",
                "machine": machine(),
                "log_parsing": bench_logs(args.log_mb),
                "yaml_traffic_files": bench_yaml(),
            },
            load_before,
            started,
        )
    config_rel = str(CONFIG.relative_to(ROOT))
    cgplan = [sys.executable, "-m", "cgplan", "plan", config_rel]
    pycache = tempfile.TemporaryDirectory(prefix="bench-pycache-")
    env = bytecode_env(Path(pycache.name))

    def cgplan_json() -> Run:
        return run_process([*cgplan, "--json"], cwd=ROOT, env=env)

    def cgplan_table() -> Run:
        return run_process(cgplan, cwd=ROOT, env=env)

    def bare() -> Run:
        return run_process([sys.executable, "-c", "pass"], cwd=ROOT, env=env)

    with tempfile.TemporaryDirectory(prefix="bench-nopycache-") as empty:
        cold_env = {**bytecode_env(Path(empty)), "PYTHONDONTWRITEBYTECODE": "1"}
        cold = run_process([*cgplan, "--json"], cwd=ROOT, env=cold_env)
    _check(cold, "cgplan plan --json (no bytecode)")
    first = cgplan_json()  # the warm-up: writes the bytecode the timed runs read
    _check(first, "cgplan plan --json")
    _check(cgplan_table(), "cgplan plan")
    _check(bare(), "python -c pass")
    plan = json.loads(first.stdout)
    if plan != json.loads(cold.stdout):
        raise SystemExit("bench_plan: the plan differs with and without bytecode")

    reference = bench_reference(args, cgplan_json, plan)
    baseline_json, _ = paired("python_c_pass", bare, "cgplan_json", cgplan_json, args.baseline_pairs)
    baseline_table, _ = paired("python_c_pass", bare, "cgplan_table", cgplan_table, args.baseline_pairs)

    result: dict[str, Any] = {
        "command": "make bench  (python benchmarks/bench_plan.py --out benchmarks/results/plan-speed.json"
        + (" --oracle-python $ORACLE_PYTHON" if reference.get("measured") else "")
        + f" --pairs {args.pairs} --baseline-pairs {args.baseline_pairs} --log-mb {args.log_mb})",
        "machine": machine(),
        "config": config_rel,
        "bytecode": "timed processes: bytecode cached in a private PYTHONPYCACHEPREFIX (warm-up run "
        "first), PYTHONDONTWRITEBYTECODE removed, as for an installed package; both sides alike",
        "cold_start_without_bytecode": {
            "what": "one `cgplan plan CONFIG --json` with PYTHONDONTWRITEBYTECODE=1 and no bytecode "
            "(every module compiled at start-up: what no installed copy does)",
            "cpu_s": round(cold.cpu_s, 4),
            "wall_s": round(cold.wall_s, 4),
        },
        "plan_vs_vllm": reference,
        "plan_json_vs_bare_python": {**baseline_json, "target": "cgplan_json <= 6x python -c pass"},
        "plan_table_vs_bare_python": {**baseline_table, "target": "cgplan_table <= 8x python -c pass"},
        "sweep_1000_configs": bench_sweep(),
        "planning_growth_with_fix_search": bench_growth(),
        "log_parsing": bench_logs(args.log_mb),
        "yaml_traffic_files": bench_yaml(),
    }
    if reference.get("measured"):
        result["targets"] = {"speedup_vs_vllm": ">= 100x (median of per-pair CPU ratios)"}
    pycache.cleanup()
    return write_result(args.out, result, load_before, started)


def machine() -> dict[str, Any]:
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def write_result(out: Path, result: dict[str, Any], load_before: tuple[float, ...], started: float) -> int:
    """`result` with the machine's load added, written to `out` and printed."""
    result["load"] = {
        "loadavg_1m_before": round(load_before[0], 2),
        "loadavg_1m_after": round(os.getloadavg()[0], 2),
        "duration_s": round(time.time() - started, 1),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
