"""Which layer may import which library, and which layer (issue 15): a lint that `make lint` runs.

Every import in cgplan/ counts, lazy ones inside functions too (`import torch` in a probe) and
`importlib.import_module("...")` with a literal name. ruff's `banned-api` holds one list for the
whole tree and `per-file-ignores` can only switch it off for a file wholesale, so "pynvml only in
gpu/nvml.py, and rich not there either" needs this table rather than ruff configuration.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
CGPLAN = ROOT / "cgplan"

LIBRARIES: dict[str, tuple[str, ...]] = {
    # the GPU stack: only the capture backends and their probes
    "torch": ("cgplan/gpu/",),
    "vllm": ("cgplan/gpu/",),
    "pynvml": ("cgplan/gpu/nvml.py",),
    "ray": ("cgplan/api/fleet_ray.py",),
    # the user interface
    "typer": ("cgplan/cli/",),
    "click": ("cgplan/cli/",),
    "rich": ("cgplan/cli/", "cgplan/render/"),
    # file formats: every byte read or written goes through cgplan/io/
    "yaml": ("cgplan/io/",),
    # the vLLM plugin's metrics (a vLLM dependency), imported only once the plugin is enabled
    "prometheus_client": ("cgplan/plugin/",),
}
"""Library → the files (a path, or a folder ending in /) that may import it. The core imports none:
tests/project/test_import_boundaries.py holds it to the standard library."""

LAYERS: dict[str, tuple[str, ...]] = {
    "cgplan/core/": ("cgplan.core", "cgplan.errors"),
    # documents are stamped with the cgplan version that wrote them
    "cgplan/io/": ("cgplan.__version__", "cgplan.core", "cgplan.errors", "cgplan.io"),
    # JSON is not rendered: it is the contract, io/schema/ (the CLI writes it from there)
    "cgplan/render/": ("cgplan.__version__", "cgplan.core", "cgplan.errors", "cgplan.render"),
    "cgplan/gpu/": ("cgplan.__version__", "cgplan.core", "cgplan.errors", "cgplan.gpu", "cgplan.io"),
    # the library: files in, typed results out; rendering is the CLI's (render/ is not imported)
    "cgplan/api/": (
        "cgplan.__version__",
        "cgplan.api",
        "cgplan.core",
        "cgplan.errors",
        "cgplan.gpu",
        "cgplan.io",
    ),
    # the vLLM plugin: composes like the CLI (the planner through api/, the engine through gpu/),
    # with the plan's words from render/summary.py (plain text: no rich)
    "cgplan/plugin/": (
        "cgplan.__version__",
        "cgplan.api",
        "cgplan.core",
        "cgplan.errors",
        "cgplan.gpu",
        "cgplan.plugin",
        "cgplan.render.summary",
    ),
}
"""Layer folder → the cgplan modules its files may import (architecture.md, "Allowed imports")."""

FLOORS: dict[str, int] = {
    "errors": 0,
    "model": 1,
    "vllm": 2,
    "predict": 3,
    "plan": 4,
    "compare": 5,
    "logs": 5,
    "optimize": 6,
}
"""The core's floors (cgplan/core/<floor>/ or cgplan/core/<floor>.py) and their height: a core module
imports its own floor and lower ones only; two floors of one height (compare, logs) not each other.
`cgplan/core/__init__.py` stands above them all (its names are loaded lazily)."""


def _floor(module: str) -> str | None:
    """The floor of a dotted cgplan.core module or name (None: the core package itself)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["cgplan", "core"] else None


def floor_problem(rel: str, name: str) -> str | None:
    """Why the core file at `rel` may not import `name` (None: it may)."""
    own = _floor(".".join(Path(rel).with_suffix("").parts))
    target = _floor(name)
    if own is None or own == "__init__" or target is None or target == own:
        return None
    if own not in FLOORS or target not in FLOORS:
        return f"{own if own not in FLOORS else target} is not a floor of cgplan/core ({', '.join(FLOORS)})"
    if FLOORS[target] < FLOORS[own]:
        return None
    return f"the {own} floor imports only lower floors, not {target}"


NOT_YET: dict[tuple[str, str], str] = {}
"""Imports where the tree does not follow the table yet, each with where it goes. An entry that is
no longer needed fails the lint, so the list only shrinks."""


def _allowed(rel: str, places: tuple[str, ...]) -> bool:
    return any(rel.startswith(p) if p.endswith("/") else rel == p for p in places)


def imports(path: Path, rel: str) -> list[tuple[int, str]]:
    """(line, module) of every import in the file at `rel` (cgplan/...): `from a.b import c` is a.b.c
    (a module or a name), a relative import resolved against the file's package."""
    tree = ast.parse(path.read_text(), str(path))
    package = ".".join(Path(rel).with_suffix("").parts[: -1 if path.name != "__init__.py" else None])
    package = package.removesuffix(".__init__")
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = node.module or ""
            if node.level:
                up = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{up}.{base}" if base else up
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def violations(root: Path = CGPLAN) -> tuple[list[str], set[tuple[str, str]]]:
    """Every import against the tables: (problems, the NOT_YET entries that were used)."""
    problems: list[str] = []
    used: set[tuple[str, str]] = set()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        layer = next((folder for folder in LAYERS if rel.startswith(folder)), None)
        for line, name in imports(path, rel):
            top = name.split(".")[0]
            if top in LIBRARIES and not _allowed(rel, LIBRARIES[top]):
                if (rel, top) in NOT_YET:
                    used.add((rel, top))
                    continue
                places = " or ".join(LIBRARIES[top])
                problems.append(f"{rel}:{line}: imports {name}; {top} belongs in {places}")
            if top == "cgplan" and layer == "cgplan/core/" and (why := floor_problem(rel, name)):
                problems.append(f"{rel}:{line}: imports {name}; {why}")
                continue
            if top == "cgplan" and layer is not None:
                ok = LAYERS[layer]
                if any(name == m or name.startswith(m + ".") for m in ok):
                    continue
                owner = next((k for (f, k) in NOT_YET if f == rel and name.startswith(k)), None)
                if owner is not None:
                    used.add((rel, owner))
                    continue
                problems.append(f"{rel}:{line}: imports {name}; {layer} imports only {', '.join(ok)}")
    return problems, used


def test_every_import_is_where_it_belongs() -> None:
    problems, used = violations()
    assert problems == []
    stale = [f"{f} ({k}): {why}" for (f, k), why in NOT_YET.items() if (f, k) not in used]
    assert stale == [], "no longer needed: remove these NOT_YET entries"


@pytest.mark.parametrize(
    ("rel", "code", "problem"),
    [
        ("cgplan/core/x.py", "import yaml", "imports yaml; yaml belongs in cgplan/io/"),
        (
            "cgplan/core/vllm/ladder.py",
            "from cgplan.core.plan.gaps import find_gaps",
            "the vllm floor imports only lower floors, not plan",
        ),
        (
            "cgplan/core/logs/check.py",
            "def f():\n    from cgplan.core.compare import sides",
            "the logs floor imports only lower floors, not compare",
        ),
        ("cgplan/core/model/types.py", "from ..predict import cost", "the model floor imports only lower"),
        ("cgplan/core/stray.py", "from cgplan.core.model import spec", "stray is not a floor of cgplan/core"),
        ("cgplan/gpu/environment.py", "def f():\n    import pynvml", "pynvml belongs in cgplan/gpu/nvml.py"),
        (
            "cgplan/gpu/nvml.py",
            "from rich.table import Table",
            "rich belongs in cgplan/cli/ or cgplan/render/",
        ),
        ("cgplan/render/x.py", "import importlib\nimportlib.import_module('typer')", "typer belongs in"),
        ("cgplan/render/x.py", "from cgplan.cli import main", "cgplan/render/ imports only"),
        (
            "cgplan/io/x.py",
            "from ..render import table",
            "imports cgplan.render.table; cgplan/io/ imports only",
        ),
        (
            "cgplan/api/x.py",
            "def f():\n    from cgplan.render.fleet import fleet_html",
            "imports cgplan.render.fleet.fleet_html; cgplan/api/ imports only",
        ),
    ],
)
def test_the_lint_can_fail(rel: str, code: str, problem: str, tmp_path: Path) -> None:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(code + "\n")
    problems, _ = violations(tmp_path / "cgplan")
    assert len(problems) == 1 and problem in problems[0], problems


# ------------------------------------------------------------- one place knows a release number

RELEASE_NUMBER = re.compile(r"\b0\.\d{2}(?:\.\d+)?\b")
SPELLED_ELSEWHERE: dict[str, str] = {
    "cgplan/cli/_options.py": "--vllm-version's help: how a release may be spelled (0.33, v0.33.0, 0.33.1)",
    "cgplan/cli/calibrate.py": "what the shipped coefficients were measured with (vLLM 0.26.0 on the H200)",
}
"""Files outside cgplan/core/vllm/ whose code (not docstrings) spells a release, and why that is not
a rule; every other release number a message needs comes from the tables (`first_release`,
`SUPPORTED_VERSIONS`)."""


def _docstrings(tree: ast.Module) -> set[int]:
    """The string statements of every body: module, class, function and attribute docstrings."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            for stmt in node.body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    ids.add(id(stmt.value))
    return ids


def test_only_core_vllm_spells_a_release() -> None:
    """Adding or dropping a release changes cgplan/core/vllm/ only, not a message somewhere else."""
    spelled: dict[str, list[str]] = {}
    for path in sorted(CGPLAN.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("cgplan/core/vllm/"):
            continue
        tree = ast.parse(path.read_text(), rel)
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) and id(node) not in docs else None
            if isinstance(text, str) and RELEASE_NUMBER.search(text):
                spelled.setdefault(rel, []).append(f"{rel}:{getattr(node, 'lineno', 0)}: {text[:60]!r}")
    assert sorted(spelled) == sorted(SPELLED_ELSEWHERE), [s for f in spelled for s in spelled[f]]
