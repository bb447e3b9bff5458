#!/usr/bin/env python3
"""A seeded AST mutation runner for cgplan's rule modules, fix search, gate and log parser (`make mutate`).

For each target module it lists every mutation site (stdlib `ast`), samples `--per-module` of them with
`--seed`, writes each mutant into one of `--jobs` private copies of the tree (cgplan/, tests/, configs/ under
a temporary folder, `PYTHONPATH` pointing there), runs the tests that cover that module with
`pytest -x -q -p no:cacheprovider` under a per-mutant timeout, restores the file (and checks its hash), and
records killed / survived / timeout. Survivors listed in benchmarks/mutation-equivalents.json (keyed by
module, line, column, operator, original and mutated source) count as "equivalent", with the reason given
there.
The result is benchmarks/results/mutation.json. docs/mutation.md says how to read it.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import contextlib
import dataclasses
import hashlib
import json
import os
import queue
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT_DIR = Path(__file__).resolve().parent.parent
SCHEMA_VERSION = 1
EQUIVALENTS_PATH = ROOT_DIR / "benchmarks" / "mutation-equivalents.json"
RESULT_PATH = ROOT_DIR / "benchmarks" / "results" / "mutation.json"

RULE_TESTS = (
    "tests/core/vllm",
    # a copy of the whole tree run twice (9 s): what it checks, the recording tests, is not a rule
    "--deselect=tests/core/vllm/test_new_release.py::test_only_the_recording_tests_fail",
    "tests/core/plan/test_properties.py",
    "tests/core/plan/test_graph_memory_reserve.py",
    # graphs.py's v2_graph_floor is exact without DBO (the fix search's graph-budget precheck)
    "tests/core/plan/test_fix_search.py::test_target_graphs_floor_bounds_the_target_graphs",
    # the rules through the other layers that test them: refusals in vLLM's words, the inputs the
    # rules read, each release's cache dtypes, LoRA capture cases (about 8 s in all)
    "tests/io/test_config_errors.py",
    "tests/io/test_inputs.py",
    "tests/core/predict/test_kv_cache_dtype.py",
    "tests/api/test_capture_lora.py",
    # the what-if policies' knobs (decode_sizes_capped and the rest) as plans (about 4 s without the
    # two optimizer runs, which time the search rather than test a knob)
    "tests/core/optimize/test_policies_optimize.py",
    "--deselect=tests/core/optimize/test_policies_optimize.py::test_optimize_cli",
    "--deselect=tests/core/optimize/test_policies_optimize.py::test_the_search_is_the_cores_from_values_alone",
)
GAPS_TESTS = (
    # the search against naive definitions on small generated configs (issue 35 item 3)
    "tests/core/plan/test_fix_definitions.py",
    # every figure, word and flag a fix prints against its naive definition; the budget breaks,
    # the padding sums and the "still open" text on generated inputs (about 10 s)
    "tests/core/plan/test_fix_claims.py",
    "tests/core/plan/test_fix_gap_reasons.py",
    "tests/core/plan/test_fix_search.py",
    "tests/core/plan/test_fix_ranking.py",
    "tests/core/plan/test_fix_pricing_policy.py",
    "tests/core/vllm/test_golden.py",
    "tests/io/test_yaml_fix_paste.py",
)
GATE_TESTS = (
    "tests/core/compare/test_diff_sweep_gate.py",
    "tests/core/compare/test_gate_request_counts.py",
    "tests/core/compare/test_gate_checks.py",
    # every check on both sides of its threshold, on real plans and capture reports (1 s)
    "tests/core/compare/test_gate_thresholds.py",
    # the gate on partial and failed captures, bad reports and its own wording (about 20 s)
    "tests/io/test_report_trust.py",
    # runs scripts/cgplan-gate, which the mutant's copy of the tree does not hold
    "--deselect=tests/io/test_report_trust.py::test_fault_reports_fail_the_gate_script",
    # its expected line is wrapped at the terminal width when the tree's path is as long as the copy's
    "--deselect=tests/io/test_report_trust.py::test_partial_baseline_is_refused_unless_allowed",
)
LOG_TESTS = (
    "tests/core/logs",
    # the module's own examples (`make test` runs them: pyproject's --doctest-modules, which the
    # runner's `-o addopts=` drops)
    "--doctest-modules",
    "cgplan/core/logs/parse.py",
)


@dataclasses.dataclass(frozen=True)
class Target:
    """One module to mutate: its path, its group (the score the issue sets) and the tests that cover it."""

    path: str
    group: str
    tests: tuple[str, ...]


TARGETS = (
    Target("cgplan/core/vllm/releases.py", "rules", RULE_TESTS),
    Target("cgplan/core/vllm/ladder.py", "rules", RULE_TESTS),
    Target("cgplan/core/vllm/graphs.py", "rules", RULE_TESTS),
    Target("cgplan/core/vllm/resolve.py", "rules", RULE_TESTS),
    Target("cgplan/core/vllm/dynamic_sd.py", "rules", RULE_TESTS),
    Target("cgplan/core/model/modes.py", "rules", RULE_TESTS),
    Target("cgplan/core/plan/gaps.py", "gaps", GAPS_TESTS),
    Target("cgplan/core/compare/gate.py", "gate", GATE_TESTS),
    Target("cgplan/core/logs/parse.py", "log_parse", LOG_TESTS),
)

_COMPARE_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_BINOP_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
}


@dataclasses.dataclass(frozen=True)
class Mutant:
    """One single change to a module's source: where, which operator, the old and new source of the node."""

    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    operator: str
    original: str
    mutated: str

    def key(self) -> str:
        """The key an equivalent mutant is listed under in benchmarks/mutation-equivalents.json (its
        column too: two equal constants on one line are two mutants)."""
        return f"{self.path}:{self.line}:{self.col}:{self.operator}:{self.original} => {self.mutated}"

    def apply(self, source: str) -> str:
        """The module's source with this node's text replaced."""
        lines = source.splitlines(keepends=True)
        offsets = [0]
        for text in lines:
            offsets.append(offsets[-1] + len(text.encode()))
        data = source.encode()
        start = offsets[self.line - 1] + self.col
        end = offsets[self.end_line - 1] + self.end_col
        return (data[:start] + self.mutated.encode() + data[end:]).decode()


def _skipped_nodes(tree: ast.Module) -> set[int]:
    """Nodes never mutated: annotations, decorators and `if TYPE_CHECKING:` blocks (no behaviour)."""
    skipped: set[int] = set()

    def skip(node: ast.AST | None) -> None:
        if node is not None:
            skipped.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            skip(node.returns)
            for dec in node.decorator_list:
                skip(dec)
            for arg in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs]:
                skip(arg.annotation)
            skip(node.args.vararg.annotation if node.args.vararg else None)
            skip(node.args.kwarg.annotation if node.args.kwarg else None)
        elif isinstance(node, ast.ClassDef):
            for dec in node.decorator_list:
                skip(dec)
        elif isinstance(node, ast.AnnAssign):
            skip(node.annotation)
        elif isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            skip(node)
    return skipped


def _segment(source: str, node: ast.AST) -> str | None:
    return ast.get_source_segment(source, node)


def _replaced(node: ast.expr, new: ast.expr) -> str:
    ast.copy_location(new, node)
    return ast.unparse(new)


def _candidates(source: str, tree: ast.Module, path: str) -> Iterator[Mutant]:
    skipped = _skipped_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skipped or not hasattr(node, "lineno"):
            continue
        changes: list[tuple[ast.AST, str, str]] = []  # (node replaced, operator, new source)
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                swap = _COMPARE_SWAPS.get(type(op))
                if swap is None:
                    continue
                ops = list(node.ops)
                ops[i] = swap()
                new = ast.Compare(left=node.left, ops=ops, comparators=node.comparators)
                name = f"compare {type(op).__name__}->{swap.__name__}"
                changes.append((node, name, ast.unparse(new)))
        elif isinstance(node, ast.BinOp):
            bswap = _BINOP_SWAPS.get(type(node.op))
            if bswap is not None and not _is_string_concat(node):
                new_bin = ast.BinOp(left=node.left, op=bswap(), right=node.right)
                name = f"arith {type(node.op).__name__}->{bswap.__name__}"
                changes.append((node, name, ast.unparse(new_bin)))
        elif isinstance(node, ast.BoolOp):
            other: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            new_bool = ast.BoolOp(op=other, values=node.values)
            changes.append(
                (node, f"boolop {type(node.op).__name__}->{type(other).__name__}", ast.unparse(new_bool))
            )
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            changes.append((node, "remove not", ast.unparse(node.operand)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            changes.append((node, f"bool {node.value}->{not node.value}", repr(not node.value)))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            changes.append((node, "int +1", repr(node.value + 1)))
            changes.append((node, "int -1", repr(node.value - 1)))
        elif isinstance(node, (ast.If, ast.While, ast.IfExp)) and not isinstance(node.test, ast.Constant):
            kind = type(node).__name__.lower()
            changes.append((node.test, f"{kind} condition->True", "True"))
            changes.append((node.test, f"{kind} condition->False", "False"))
        elif (
            isinstance(node, ast.Return)
            and isinstance(node.value, (ast.Compare, ast.BoolOp, ast.UnaryOp))
            and (not isinstance(node.value, ast.UnaryOp) or isinstance(node.value.op, ast.Not))
        ):
            changes.append((node.value, "return->True", "True"))
            changes.append((node.value, "return->False", "False"))
        for target, operator, new_source in changes:
            original = _segment(source, target)
            if original is None or target.end_lineno is None or target.end_col_offset is None:
                continue
            if new_source not in ("True", "False") and (
                isinstance(target, (ast.Compare, ast.BinOp, ast.BoolOp)) or operator == "remove not"
            ):
                new_source = f"({new_source})"
            yield Mutant(
                path=path,
                line=target.lineno,
                col=_byte_col(source, target.lineno, target.col_offset),
                end_line=target.end_lineno,
                end_col=_byte_col(source, target.end_lineno, target.end_col_offset),
                operator=operator,
                original=original,
                mutated=new_source,
            )


def _byte_col(source: str, line: int, col_bytes: int) -> int:
    # ast's col_offset is already in UTF-8 bytes.
    return col_bytes


def _is_string_concat(node: ast.BinOp) -> bool:
    return any(
        isinstance(side, (ast.Constant, ast.JoinedStr)) and isinstance(getattr(side, "value", ""), str)
        for side in (node.left, node.right)
    ) or isinstance(node.left, ast.JoinedStr)


def mutants_of(source: str, path: str, *, check: bool = True) -> list[Mutant]:
    """Every mutant of a module's source (with `check`, only those that still parse), in source order."""
    tree = ast.parse(source)
    out: list[Mutant] = []
    seen: set[str] = set()
    for mutant in _candidates(source, tree, path):
        key = f"{mutant.line}:{mutant.col}:{mutant.operator}:{mutant.mutated}"
        if key in seen:
            continue
        seen.add(key)
        mutated = mutant.apply(source)
        if mutated == source:
            continue
        if check and not parses(mutated):
            continue
        out.append(mutant)
    out.sort(key=lambda m: (m.line, m.col, m.operator))
    return out


def parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def sample(
    mutants: Sequence[Mutant], seed: int, per_module: int, path: str, source: str | None = None
) -> list[Mutant]:
    """`per_module` mutants drawn without replacement, reproducible from the seed and the module's path
    (with `source`, the first ones in the seeded order that still parse)."""
    rng = random.Random(f"{seed}:{path}")
    order = list(mutants)
    rng.shuffle(order)
    chosen = list(order[:per_module]) if source is None else []
    if source is not None:
        for m in order:
            if len(chosen) == per_module:
                break
            if parses(m.apply(source)):
                chosen.append(m)
    return sorted(chosen, key=lambda m: (m.line, m.col, m.operator))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextlib.contextmanager
def mutated_file(file: Path, mutant: Mutant) -> Iterator[None]:
    """The mutant written into `file` for the block; the original bytes always put back, hash checked."""
    original = file.read_bytes()
    digest = hashlib.sha256(original).hexdigest()
    try:
        file.write_text(mutant.apply(original.decode()))
        yield
    finally:
        file.write_bytes(original)
        if sha256(file) != digest:
            raise RuntimeError(f"{file}: not restored")


SKIPPED = {".venv", ".git", ".cache", ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


def make_tree(dest: Path) -> Path:
    """A private copy of the tree (no venv, git or caches: a stale .pyc would hide a mutant)."""
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", ".pytest_cache")
    for src in sorted(ROOT_DIR.iterdir()):
        name = src.name
        if name in SKIPPED:
            continue
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        elif src.exists():
            shutil.copy2(src, dest / name)
    return dest


def run_tests(tree: Path, tests: Sequence[str], timeout_s: float) -> tuple[str, float, str]:
    """('passed' | 'failed' | 'timeout', seconds, the last lines) for the tests in that tree."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        "not gpu and not fuzz",
        "--no-header",
        "-o",
        "addopts=",
        *tests,
    ]
    start = time.monotonic()
    try:
        proc = subprocess.run(
            cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - start, ""
    seconds = time.monotonic() - start
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
    return ("passed" if proc.returncode == 0 else "failed"), seconds, tail


def load_equivalents(path: Path = EQUIVALENTS_PATH) -> dict[str, str]:
    """key -> reason, from the committed list of survivors confirmed equivalent."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {entry["key"]: entry["reason"] for entry in data["equivalents"]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument("--per-module", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=max(1, os.cpu_count() or 1))
    parser.add_argument("--module", action="append", default=[], help="only these target paths (repeatable)")
    parser.add_argument("--out", type=Path, default=RESULT_PATH)
    parser.add_argument("--timeout-factor", type=float, default=3.0)
    parser.add_argument("--list", action="store_true", help="print the sampled mutants and stop")
    args = parser.parse_args(argv)

    targets = [t for t in TARGETS if not args.module or t.path in args.module]
    equivalents = load_equivalents()
    plan: list[tuple[Target, Mutant]] = []
    totals: dict[str, int] = {}
    for target in targets:
        source = (ROOT_DIR / target.path).read_text()
        every = mutants_of(source, target.path, check=False)
        totals[target.path] = len(every)
        plan.extend((target, m) for m in sample(every, args.seed, args.per_module, target.path, source))
    if args.list:
        for _target, m in plan:
            print(f"{m.path}:{m.line} {m.operator}: {m.original!r} -> {m.mutated!r}")
        return 0

    work = Path(tempfile.mkdtemp(prefix="cgplan-mutate-"))
    started = time.monotonic()
    try:
        trees: queue.Queue[Path] = queue.Queue()
        for i in range(args.jobs):
            trees.put(make_tree(work / f"w{i}"))
        # Baselines: each module's tests must pass unmutated; their time sets the per-mutant timeout.
        baseline_s: dict[str, float] = {}
        tree0 = trees.get()
        by_tests: dict[tuple[str, ...], float] = {}
        for target in targets:
            if target.tests not in by_tests:
                status, seconds, tail = run_tests(tree0, target.tests, timeout_s=900)
                if status != "passed":
                    print(f"baseline failed for {target.path}:\n{tail}", file=sys.stderr)
                    return 2
                by_tests[target.tests] = seconds
                print(f"baseline {target.group}: {seconds:.1f} s", flush=True)
            baseline_s[target.path] = by_tests[target.tests]
        trees.put(tree0)

        def one(item: tuple[Target, Mutant]) -> dict[str, object]:
            target, mutant = item
            tree = trees.get()
            try:
                with mutated_file(tree / mutant.path, mutant):
                    timeout_s = baseline_s[target.path] * args.timeout_factor + 30
                    status, seconds, tail = run_tests(tree, target.tests, timeout_s)
            finally:
                trees.put(tree)
            outcome = {"failed": "killed", "passed": "survived", "timeout": "timeout"}[status]
            if outcome == "survived" and mutant.key() in equivalents:
                outcome = "equivalent"
            print(
                f"{outcome:10} {mutant.path}:{mutant.line} {mutant.operator}: {mutant.original!r} -> "
                f"{mutant.mutated!r} ({seconds:.1f} s)",
                flush=True,
            )
            return {"mutant": mutant, "outcome": outcome, "seconds": seconds, "tail": tail}

        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(one, plan))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    modules: dict[str, dict[str, object]] = {}
    groups: dict[str, dict[str, int]] = {}
    for target in targets:
        rows = [r for r in results if r["mutant"].path == target.path]  # type: ignore[attr-defined]
        counts = {
            k: sum(1 for r in rows if r["outcome"] == k)
            for k in ("killed", "survived", "equivalent", "timeout")
        }
        judged = counts["killed"] + counts["survived"]
        modules[target.path] = {
            "group": target.group,
            "sites": totals[target.path],
            "sampled": len(rows),
            **counts,
            "score": round(counts["killed"] / judged, 4) if judged else None,
            "baseline_s": round(baseline_s[target.path], 1),
            "tests": list(target.tests),
            "survivors": [_row(r) for r in rows if r["outcome"] == "survived"],
            "equivalents": [
                {**_row(r), "reason": equivalents[r["mutant"].key()]}  # type: ignore[attr-defined]
                for r in rows
                if r["outcome"] == "equivalent"
            ],
            "timeouts": [_row(r) for r in rows if r["outcome"] == "timeout"],
        }
        group = groups.setdefault(target.group, {"killed": 0, "survived": 0, "equivalent": 0, "timeout": 0})
        for k, v in counts.items():
            group[k] += v
    document = {
        "kind": "cgplan-mutation",
        "schema_version": SCHEMA_VERSION,
        "seed": args.seed,
        "per_module": args.per_module,
        "command": "python scripts/mutate.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "jobs": args.jobs,
        "wall_s": round(time.monotonic() - started, 1),
        "score": "killed / (killed + survived); equivalent mutants (benchmarks/mutation-equivalents.json) "
        "and "
        "timeouts (counted as killed by most tools) are left out of it",
        "groups": {
            name: {
                **g,
                "score": round(g["killed"] / (g["killed"] + g["survived"]), 4)
                if g["killed"] + g["survived"]
                else None,
            }
            for name, g in groups.items()
        },
        "modules": modules,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    for name, g in document["groups"].items():  # type: ignore[attr-defined]
        print(f"{name}: {g}")
    print(f"wrote {args.out}")
    return 0


def _row(result: dict[str, object]) -> dict[str, object]:
    m = result["mutant"]
    assert isinstance(m, Mutant)
    return {
        "at": f"{m.path}:{m.line}",
        "operator": m.operator,
        "original": m.original,
        "mutated": m.mutated,
        "key": m.key(),
    }


if __name__ == "__main__":
    sys.exit(main())
