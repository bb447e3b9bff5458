"""No traceback for any input: drawn configs, reports, policies and --set strings through the CLI.

The "trust" kind (issue 21) holds more than that: capture reports with drawn statuses, failures,
partial tables and hostile `source` fields never pass the gate while partial or failed, are
never taken as a baseline unless allowed, and never get a file outside the folder printed.

`make test` runs a fast, derandomized subset (about 300 inputs). `make fuzz` (`pytest -m fuzz`)
runs the full set (10,000 config documents and thousands of the rest) with a fresh seed
(FUZZ_SEED to replay one) and writes benchmarks/results/fuzz.json.
"""

from __future__ import annotations

import datetime
import gc
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import hypothesis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cgplan.errors import CgplanError
from cgplan.io.config import load_config
from cgplan.io.sweep_axes import parse_set
from tests.fuzz.file_kinds import FILE_KINDS
from tests.fuzz.harness import (
    DOCUMENTED_EXITS,
    ROOT,
    TIME_LIMIT_S,
    Run,
    Tally,
    materialize,
    passable,
    problems,
    process_problems,
    run_cli,
    run_process,
)
from tests.fuzz.strategies import (
    SECRET,
    Input,
    plan_inputs,
    policy_inputs,
    report_inputs,
    sweep_inputs,
    trust_inputs,
)

SWEEP_S_PER_PLAN = 0.005
SWEEP_S_PER_REQUEST = 1e-6
"""A sweep may take TIME_LIMIT_S plus SWEEP_S_PER_PLAN per planned (point × release) plus
SWEEP_S_PER_REQUEST per request count its plans walk (plans × the largest max_num_seqs)."""
FAST = {"config": 130, "report": 80, "policy": 40, "sweep": 50, "trust": 40, **dict.fromkeys(FILE_KINDS, 25)}
_SIDE = int(os.environ.get("FUZZ_FILES", "2000"))
"""Inputs per side-file kind (capture policy, coefficients, traffic, calibrate, log, --config
through --vllm-args, model config.json) in the full run."""
FULL = {
    "config": int(os.environ.get("FUZZ_CONFIGS", "10000")),
    "report": int(os.environ.get("FUZZ_REPORTS", "3000")),
    "policy": int(os.environ.get("FUZZ_POLICIES", "1000")),
    "sweep": int(os.environ.get("FUZZ_SWEEPS", "2000")),
    "trust": int(os.environ.get("FUZZ_TRUST", "2000")),
    **dict.fromkeys(FILE_KINDS, _SIDE),
}
STRATEGIES: dict[str, Callable[[], st.SearchStrategy[Input]]] = {
    "config": plan_inputs,
    "report": report_inputs,
    "policy": policy_inputs,
    "sweep": sweep_inputs,
    "trust": trust_inputs,
    **FILE_KINDS,
}
RESULTS = ROOT / "benchmarks" / "results" / "fuzz.json"
PROCESS_EVERY = int(os.environ.get("FUZZ_PROCESS_EVERY", "100"))
"""One input in this many is run a second time as its own `python -m cgplan` process
(docs/fuzzing.md: what only a process shows: its own peak RSS, death by a signal, a traceback the
interpreter prints after main() returned, the exit status the shell sees)."""
PROCESS_MEMORY_LIMIT_MB = 2048.0
"""Issue issue 20's bound: every accepted input plans within 2 GiB (the child's own peak RSS)."""
COMMON = settings(
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    print_blob=True,
)


def sweep_budget_s(args: tuple[str, ...] | list[str]) -> float:
    """The CPU time a sweep command line may take: more plans and wider ones, more time."""
    plans = max(1, sum(1 for a in args if a == "--vllm-version"))
    widest = 1024  # the base configs' max_num_seqs is at most this
    for a in args:
        if a.startswith("--set="):
            try:
                key, values = parse_set(a[len("--set=") :])
            except CgplanError:
                return TIME_LIMIT_S
            plans *= len(values)
            if key == "max_num_seqs":
                widest = max(values)
    return TIME_LIMIT_S + SWEEP_S_PER_PLAN * plans + SWEEP_S_PER_REQUEST * plans * widest


CORE_SLOW_ABOVE = 100_000
"""max_num_seqs, or capture-size tokens, above which the core's own cost exceeds the per-input
bound for a valid config: the fix search re-plans, the dynamic-SD lookup and the per-request
walks are O(max_num_seqs), the graph tables O(capture sizes). Measured and reported in
benchmarks/results/bounds.json (S = 10^6: 7.5 s; S = 10^7: 22 s); counted apart, not failed."""


def core_slow(args: list[str], run: Run, found: list[str]) -> str | None:
    """Why a run that broke only the time bound is the core's known cost (None if it is not)."""
    if not found or run.code not in (0, 1) or any(not f.startswith("took ") for f in found):
        return None
    if args[0] != "plan":
        return None
    try:
        inp = load_config(args[1]).input
    except CgplanError:
        return None
    tokens = max([inp.max_cudagraph_capture_size or 0, *(inp.cudagraph_capture_sizes or ())])
    if inp.max_num_seqs > CORE_SLOW_ABOVE:
        return f"max_num_seqs {inp.max_num_seqs:,}"
    if tokens > CORE_SLOW_ABOVE and inp.max_num_batched_tokens > CORE_SLOW_ABOVE:
        return f"capture sizes up to {tokens:,} tokens"
    return None


def trust_problems(inp: Input, args: list[str], run: Run) -> list[str]:
    """What a report's status or `source` must never achieve (the "trust" kind, issue 21)."""
    found = []
    if SECRET in run.out or SECRET in run.err:
        found.append("printed the content of a file outside the folder named (the planted secret)")
    try:
        status = json.loads(dict(inp.files)["r.json"]).get("status")
    except (ValueError, AttributeError):
        status = None
    lacking = status in ("partial", "failed")
    if lacking and args[0] == "gate" and "--baseline" not in args and run.code == 0:
        found.append(f"a {status} capture passed the gate")
    baseline_is_r = (
        args[0] == "gate" and args[args.index("--baseline") + 1].endswith("r.json")
        if ("--baseline" in args)
        else False
    )
    if lacking and baseline_is_r and "--allow-partial-baseline" not in args and run.code != 2:
        found.append(f"a {status} capture was taken as the baseline (exit {run.code})")
    return found


def judge(
    inp: Input, folder: Path, tally: Tally | None = None, *, as_process: bool = False
) -> tuple[Run, list[str], str | None]:
    """Write the input's files, run it, and list what went wrong (and whether it is known core cost).

    `as_process`: run it a second time as its own process too, counted in `tally`."""
    args = [a.replace("{folder}", str(folder)) for a in materialize(inp.files, inp.args, folder)]
    run = run_cli(args)
    if as_process and tally is not None and passable(args):
        proc = run_process(args)
        tally.add_process(
            proc, process_problems(proc, run, memory_limit_mb=PROCESS_MEMORY_LIMIT_MB), inp.sample()
        )
    limit = sweep_budget_s(args) if inp.kind == "sweep" else TIME_LIMIT_S
    found = problems(run, where=[str(folder), *inp.options], time_limit_s=limit)
    if any(f.startswith("took ") for f in found):
        # Once more after a full collection: a garbage-collector pause over the test's own
        # heap (thousands of drawn inputs) is not the input's cost.
        gc.collect()
        again = run_cli(
            [a.replace("{folder}", str(folder)) for a in materialize(inp.files, inp.args, folder)]
        )
        if again.cpu_seconds < run.cpu_seconds:
            run = again
            found = problems(run, where=[str(folder), *inp.options], time_limit_s=limit)
    if inp.kind == "trust":
        found += trust_problems(inp, args, run)
    slow = core_slow(args, run, found)
    if slow is not None:
        return run, [], slow
    if run.code in (0, 1) and not found:
        json_out = "--json" in args and args[0] in ("plan", "diff", "sweep")
        if json_out or args[-2:] == ["--json", "-"]:
            try:
                json.loads(run.out)
            except ValueError as e:
                found.append(f"--json printed something that is not JSON: {e}")
    return run, found, None


# ---------------------------------------------------------------- the fast subset (make test)


@pytest.mark.parametrize("kind", sorted(FAST))
def test_fuzz_fast(kind: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "case"

        @settings(COMMON, max_examples=FAST[kind], derandomize=True)
        @given(STRATEGIES[kind]())
        def check(inp: Input) -> None:
            run, found, _ = judge(inp, folder)
            assert not found, f"{found}\n{run.argv}\n{inp.sample()[:3000]}\n{run.err[-3000:]}"

        check()


# ---------------------------------------------------------------- the full run (make fuzz)

SEED = int(os.environ.get("FUZZ_SEED") or random.randrange(2**32))


def _record(kind: str, tally: Tally, wall_s: float, tmp: str) -> None:
    """Merge this kind's tally into benchmarks/results/fuzz.json (locked: `make fuzz` runs its
    kinds in FUZZ_JOBS processes that merge into the one file)."""
    import fcntl

    lock_path = ROOT / ".cache" / "fuzz.lock"
    lock_path.parent.mkdir(exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _merge(kind, tally, wall_s, tmp)


def _merge(kind: str, tally: Tally, wall_s: float, tmp: str) -> None:
    try:
        doc = json.loads(RESULTS.read_text())
        if not isinstance(doc, dict) or doc.get("seed") != SEED:
            doc = {}
    except (OSError, ValueError):
        doc = {}

    def _seq(x: object) -> list[object]:
        return list(x) if isinstance(x, list | tuple) else [x]

    def scrub(x: object) -> object:
        return x.replace(tmp, "<tmp>").replace(str(ROOT), "<repo>") if isinstance(x, str) else x

    kinds = doc.get("kinds", {})
    kinds[kind] = {
        "tried": tally.tried,
        "exits": dict(sorted(tally.exits.items())),
        "failures": len(tally.failures),
        "slowest_cpu_s": round(tally.slowest_cpu_s, 3),
        "slowest_argv": [scrub(a) for a in tally.slowest_argv],
        "slowest_wall_s": round(tally.slowest_s, 3),
        "mean_cpu_s": round(tally.cpu_s_total / max(1, tally.tried), 4),
        "peak_rss_mb": round(tally.peak_rss_mb, 1),
        "peak_rss_argv": [scrub(a) for a in tally.peak_rss_argv],
        "wall_s": round(wall_s, 1),
        "core_slow": {
            "count": len(tally.core_slow),
            "why": f"valid configs above {CORE_SLOW_ABOVE:,} requests or capture-size tokens: the core's "
            "cost, over the bound but reported (bounds.json), not failed",
            "slowest_cpu_s": max((float(str(c["cpu_s"])) for c in tally.core_slow), default=0.0),
            "samples": [
                {k: scrub(v) if isinstance(v, str) else v for k, v in c.items()} for c in tally.core_slow[:3]
            ],
        },
        "process_sample": {
            "every": PROCESS_EVERY,
            "runs": tally.processes,
            "exits": dict(sorted(tally.process_exits.items())),
            "peak_rss_mb": round(tally.process_peak_rss_mb, 1),
            "peak_rss_argv": [scrub(a) for a in tally.process_peak_rss_argv],
            "slowest_wall_s": round(tally.process_slowest_s, 3),
            "mean_wall_s": round(tally.process_s_total / max(1, tally.processes), 3),
        },
        "cpu_time_limit_s": TIME_LIMIT_S
        if kind.split(":")[0] != "sweep"
        else f"{TIME_LIMIT_S} + {SWEEP_S_PER_PLAN} per plan + {SWEEP_S_PER_REQUEST} per request count walked",
    }
    failures = [f for f in doc.get("failure_samples", []) if f.get("kind") != kind]
    failures += [
        {"kind": kind, **{k: scrub(v) if k != "argv" else [scrub(a) for a in _seq(v)] for k, v in f.items()}}
        for f in tally.failures[:20]
    ]
    doc.update(
        {
            "command": f"FUZZ_SEED={SEED} FUZZ_JOBS={os.environ.get('FUZZ_JOBS', '1')} nice make fuzz"
            + "".join(
                f" {k}={os.environ[k]}"
                for k in sorted(os.environ)
                if k.startswith("FUZZ_") and k not in ("FUZZ_SEED", "FUZZ_JOBS", "FUZZ_SHARD", "FUZZ_SKIP")
            ),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "seed": SEED,
            "python": platform.python_version(),
            "hypothesis": hypothesis.__version__,
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "kinds": dict(sorted(kinds.items())),
            "inputs_tried": sum(k["tried"] for k in kinds.values()),
            "failures_found": sum(k["failures"] for k in kinds.values()),
            "slowest_cpu_s": max(k["slowest_cpu_s"] for k in kinds.values()),
            "slowest_wall_s": max(k["slowest_wall_s"] for k in kinds.values()),
            "peak_rss_mb": max(k.get("peak_rss_mb", 0.0) for k in kinds.values()),
            "peak_rss_measure": "VmHWM of the test process after resetting it (/proc/self/clear_refs) "
            "before each input: that input's peak, the test process's own heap included",
            "process_sample_runs": sum(k.get("process_sample", {}).get("runs", 0) for k in kinds.values()),
            "process_peak_rss_mb": max(
                k.get("process_sample", {}).get("peak_rss_mb", 0.0) for k in kinds.values()
            ),
            "process_peak_rss_measure": "ru_maxrss from wait4 of a `python -m cgplan` child run on every "
            f"{PROCESS_EVERY}th input: the child's own peak (interpreter and imports included)",
            "exit_codes_seen": sorted(
                {
                    c
                    for k in kinds.values()
                    for c in [*k["exits"], *k.get("process_sample", {}).get("exits", {})]
                }
            ),
            "documented_exit_codes": list(DOCUMENTED_EXITS),
            "harness": "docs/fuzzing.md: every input in-process through cgplan.cli.main "
            "(tests/fuzz/harness.py run_cli), one in FUZZ_PROCESS_EVERY also as its own process "
            "(run_process)",
            "failure_samples": failures,
        }
    )
    RESULTS.write_text(json.dumps(doc, indent=2, ensure_ascii=True) + "\n")


PART = int(os.environ.get("FUZZ_PART", "2000"))
"""A kind's inputs run in parts of at most this many (each its own test and seed), so FUZZ_JOBS
processes share even the 10,000 configs."""
PARTS = {
    (kind if part == 0 else f"{kind}:{part}"): (kind, part, min(PART, count - part * PART))
    for kind, count in sorted(FULL.items())
    for part in range(max(1, -(-count // PART)))
}
"""Record key → (kind, part, inputs)."""


def shard(parts: dict[str, int], spec: str) -> set[str]:
    """The parts shard `spec` ("I/N") runs: dealt largest first to the lightest shard (configs
    weigh twice: they cost about twice the CPU per input), so N processes (FUZZ_JOBS) take
    about the same time each."""
    index, _, total = spec.partition("/")
    n = max(1, int(total or 1))
    loads = [0.0] * n
    mine: set[str] = set()
    weight = {k: count * (2.0 if k.split(":")[0] == "config" else 1.0) for k, count in parts.items()}
    for key, load in sorted(weight.items(), key=lambda kv: (-kv[1], kv[0])):
        lightest = loads.index(min(loads))
        loads[lightest] += load
        if lightest == int(index or 0):
            mine.add(key)
    return mine


SHARD = shard({k: n for k, (_, _, n) in PARTS.items()}, os.environ.get("FUZZ_SHARD", "0/1"))
SKIP = set(filter(None, os.environ.get("FUZZ_SKIP", "").split(",")))
"""Parts already recorded in fuzz.json under this seed (a time-boxed run resumed)."""


@pytest.mark.fuzz
@pytest.mark.parametrize("key", sorted(PARTS))
def test_fuzz_full(key: str) -> None:
    if key not in SHARD:
        pytest.skip(f"{key} runs in another shard (FUZZ_SHARD={os.environ.get('FUZZ_SHARD')})")
    if key in SKIP:
        pytest.skip(f"{key} is recorded already (FUZZ_SKIP)")
    kind, part, count = PARTS[key]
    tally = Tally()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "case"

        @settings(COMMON, max_examples=count, derandomize=False)
        @hypothesis.seed(SEED + sorted(FULL).index(kind) + 1000 * part)
        @given(STRATEGIES[kind]())
        def check(inp: Input) -> None:
            as_process = PROCESS_EVERY > 0 and tally.tried % PROCESS_EVERY == 0
            run, found, slow = judge(inp, folder, tally, as_process=as_process)
            tally.add(run, found, inp.sample(), slow)
            if found:
                sys.stderr.write(f"\nFUZZ FAILURE ({key}): {found}\n{inp.sample()[:1500]}\n")

        check()
        _record(key, tally, time.perf_counter() - start, tmp)
    assert not tally.failures, json.dumps(tally.failures[:5], indent=1)[:5000]
