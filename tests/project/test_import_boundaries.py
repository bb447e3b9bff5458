"""The planning core stays pure; the CLI never needs torch, vLLM or NVML."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import run
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR

POISON = """
import sys
for name in {names!r}:
    sys.modules[name] = None  # any import of it raises ImportError
import {module}
"""


def _imports_cleanly(module: str, names: list[str]) -> None:
    code = POISON.format(names=names, module=module)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


CGPLAN = ROOT_DIR / "cgplan"


def module_name(path: Path) -> str:
    """cgplan/core/vllm/releases.py → cgplan.core.vllm.releases (a package: its folder's name)."""
    parts = path.relative_to(CGPLAN.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


CORE_FILES = sorted((CGPLAN / "core").rglob("*.py"))
"""Every module of the core, found on disk: a new one is checked without being listed."""
CORE_MAY_IMPORT = ("cgplan.errors",)
"""Outside the core, only errors.py (stdlib only), for `core.types.Rejected(ConfigRejected)`: issue 15's
design moves that mapping into errors.py, and this entry goes."""
NOT_PURE = frozenset(
    {
        # the file system, the environment, processes, the clock, randomness, the network, logging
        *("os", "sys", "io", "pathlib", "shutil", "tempfile", "glob", "fileinput", "filecmp", "mmap"),
        *("time", "datetime", "calendar", "zoneinfo", "random", "secrets", "uuid", "locale", "getpass"),
        *("subprocess", "signal", "threading", "multiprocessing", "concurrent", "asyncio", "selectors"),
        *("socket", "ssl", "select", "urllib", "http", "email", "ftplib", "smtplib", "logging", "warnings"),
        *("gzip", "bz2", "lzma", "zlib", "zipfile", "tarfile", "pickle", "shelve", "marshal", "sqlite3"),
        *("csv", "configparser", "tomllib", "platform", "resource", "ctypes", "importlib", "pkgutil"),
        *("atexit", "builtins", "site", "sysconfig", "webbrowser", "tkinter", "curses", "readline"),
    }
)
"""Standard-library modules that reach outside the process's own values."""
BUILTIN_HASHES = frozenset({"_sha2", "_sha256"})
"""The interpreter's built-in sha256 under its two names (3.12+ and before): each is stdlib on
the versions that have it, and not in the other's `sys.stdlib_module_names`."""
IMPURE_CALLS = frozenset({"open", "input", "print", "breakpoint", "exec", "eval", "compile", "__import__"})
IMPURE_ATTRIBUTES = frozenset({"environ", "getenv", "read_text", "read_bytes", "write_text", "write_bytes"})


def impurities(path: Path) -> list[str]:
    """What in one core module reaches past its inputs: a non-stdlib or I/O import (lazy ones too),
    a cgplan module outside the core, a builtin that does I/O, an environment or file attribute."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    package = module_name(path).rsplit(".", 0 if path.name == "__init__.py" else 1)[0]
    for node in ast.walk(tree):
        names: list[str] = []
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = node.module or ""
            if node.level:  # relative: resolved against the module's package
                up = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{up}.{base}" if base else up
            names = [f"{base}.{alias.name}" for alias in node.names]  # `from cgplan import config`
        for name in names:
            top = name.split(".")[0]
            if top == "cgplan":
                if not any(name.startswith(ok + ".") for ok in ("cgplan.core", *CORE_MAY_IMPORT)):
                    found.append(f"{path.name}:{line}: imports {name}, outside the core")
            elif top not in sys.stdlib_module_names and top not in BUILTIN_HASHES:
                found.append(f"{path.name}:{line}: imports {name}, not the standard library")
            elif top in NOT_PURE:
                found.append(f"{path.name}:{line}: imports {name} (file, environment or clock)")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in IMPURE_CALLS:
            found.append(f"{path.name}:{line}: calls {node.func.id}()")
        if isinstance(node, ast.Attribute) and node.attr in IMPURE_ATTRIBUTES:
            found.append(f"{path.name}:{line}: uses .{node.attr}")
    return found


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: module_name(p))
def test_core_module_is_pure(path: Path) -> None:
    """Stdlib only, nothing of cgplan outside the core, no file, environment or clock access."""
    assert impurities(path) == []


def test_the_purity_check_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "cgplan" / "core" / "vllm" / "bad.py"
    fake.parent.mkdir(parents=True)
    fake.write_text(
        "import json\nfrom . import releases\nfrom .. import plan\n"
        "def f():\n    import os, yaml\n    from cgplan import config\n"
        "    return open(os.environ['X']), print(), time\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "CGPLAN", tmp_path / "cgplan")
    assert sorted(impurities(fake)) == [
        "bad.py:5: imports os (file, environment or clock)",
        "bad.py:5: imports yaml, not the standard library",
        "bad.py:6: imports cgplan.config, outside the core",
        "bad.py:7: calls open()",
        "bad.py:7: calls print()",
        "bad.py:7: uses .environ",
    ]


CORE_IMPORTS_UNDER_POISON = """
import importlib, sys
for name in {poison!r}:
    sys.modules[name] = None  # any import of it raises ImportError
before = set(sys.modules)
for module in {modules!r}:
    importlib.import_module(module)
loaded = sorted(m for m in set(sys.modules) - before if sys.modules[m] is not None)
print(" ".join(loaded))
"""


def test_core_is_pure() -> None:
    """Every core module imports with the GPU stack, the file formats, the UI and every other
    cgplan module poisoned, and loads nothing but the standard library and the core."""
    core = {module_name(p) for p in CORE_FILES}
    outside = sorted({module_name(p) for p in CGPLAN.rglob("*.py")} - core - {"cgplan", *CORE_MAY_IMPORT})
    poison = ["torch", "vllm", "pynvml", "yaml", "rich", "typer", "ray", "pydantic", *outside]
    modules = [module_name(p) for p in CORE_FILES]
    code = CORE_IMPORTS_UNDER_POISON.format(poison=poison, modules=modules)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stdout.split()
    assert set(modules) <= set(loaded)
    strays = [
        m
        for m in loaded
        if m.split(".")[0] not in sys.stdlib_module_names
        and not m.startswith("cgplan.core")
        and m not in ("cgplan", *CORE_MAY_IMPORT)
        and not m.startswith("_")
    ]
    assert strays == []


def test_cli_without_gpu_stack() -> None:
    _imports_cleanly("cgplan.cli", ["torch", "vllm", "pynvml"])


FAST_PATH = """
import sys
from cgplan.cli import main
sys.argv = ["cgplan", *{argv!r}]
try:
    main()
except SystemExit as e:
    assert e.code in (0, None), e.code
print(" ".join(sorted(sys.modules)))
"""


def _modules_after(*argv: str) -> set[str]:
    code = FAST_PATH.format(argv=list(argv))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return set(proc.stdout.splitlines()[-1].split())  # the last line: what main() printed comes first


def test_plan_json_fast_path() -> None:
    """`cgplan plan FILE --json` imports neither rich nor pydantic, nor another command's code,
    nor the vllm serve flag table (start-up is most of its time: issue 18)."""
    mods = _modules_after("plan", "configs/examples/pr50488-eagle-k16.yaml", "--json")
    heavy = {m for m in mods if m.split(".")[0] in ("rich", "pydantic", "pydantic_core", "typer", "click")}
    assert not heavy, sorted(heavy)
    others = {f"cgplan.cli.{c}" for c in ("capture", "diff", "sweep", "gate", "logs", "optimize", "env")}
    assert not mods & others, sorted(mods & others)
    assert "cgplan.io.vllm_args" not in mods and "cgplan.core.vllm.serve_flags" not in mods
    assert "cgplan.core.logs.parse" not in mods and "cgplan.core.vllm.log_formats" not in mods
    assert "cgplan.core.vllm.gpus" not in mods  # the GPU table is read for a GPU name only
    # the gate (its policy and result types: dataclasses made at import) and the temp-file module
    # (an atomic -o write's) are not on this path either
    assert "cgplan.core.compare.gate" not in mods and "tempfile" not in mods
    # a config of block mappings and simple values is read without PyYAML (its import is a fifth
    # of a start-up)
    assert "yaml" not in mods


def test_plan_table_fast_path() -> None:
    """`cgplan plan FILE` (the table) does not import typer either (issue 18)."""
    mods = _modules_after("plan", "configs/examples/pr50488-eagle-k16.yaml")
    assert not {m for m in mods if m.split(".")[0] in ("typer", "click", "pydantic")}


def test_other_commands_do_not_import_plan() -> None:
    mods = _modules_after("env", "--json")
    assert "cgplan.cli.plan" not in mods
    assert "cgplan.api.plan" not in mods


@pytest.mark.parametrize(
    "config",
    [
        "configs/examples/pr50488-eagle-k16.yaml",
        "configs/examples/mns1024-eagle-k16-dyn4.yaml",
        "configs/gpu/tiny-eagle-dyn-v2.yaml",  # vLLM refuses it: exit 2, one located line
        "tests/data/no-such-config.yaml",
        "README.md",
        "configs",
    ],
)
def test_plan_json_fast_path_answers_as_typer_does(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], config: str
) -> None:
    """`plan CONFIG [--json]` (run without typer) and `plan CONFIG --format json|table` (through
    typer): the same exit code, stdout and stderr."""
    monkeypatch.chdir(ROOT)
    fast = run(monkeypatch, capsys, "plan", config, "--json")
    assert run(monkeypatch, capsys, "plan", "--json", config) == fast
    assert run(monkeypatch, capsys, "plan", config, "--format", "json") == fast
    table = run(monkeypatch, capsys, "plan", config)
    assert run(monkeypatch, capsys, "plan", config, "--format", "table") == table
