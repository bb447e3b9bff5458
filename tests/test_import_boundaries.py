"""The planning core stays pure; the CLI never needs torch, vLLM or NVML."""

from __future__ import annotations

import subprocess
import sys

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


def test_core_is_pure() -> None:
    _imports_cleanly("cgplan.core", ["torch", "vllm", "pynvml", "yaml", "rich", "typer"])


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
    nor the vllm serve flag table (start-up is most of its time: #18)."""
    mods = _modules_after("plan", "configs/examples/pr50488-eagle-k16.yaml", "--json")
    heavy = {m for m in mods if m.split(".")[0] in ("rich", "pydantic", "pydantic_core")}
    assert not heavy, sorted(heavy)
    others = {f"cgplan.cli.{c}" for c in ("capture", "diff", "sweep", "gate", "logs", "optimize", "env")}
    assert not mods & others, sorted(mods & others)
    assert "cgplan.io.vllm_args" not in mods
    assert "cgplan.core.log_parse" not in mods
    assert "cgplan.core.gpus" not in mods  # the GPU table is read for a GPU name only


def test_other_commands_do_not_import_plan() -> None:
    mods = _modules_after("env", "--json")
    assert "cgplan.cli.plan" not in mods
    assert "cgplan.api.plan" not in mods
