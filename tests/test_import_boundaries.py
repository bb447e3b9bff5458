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
