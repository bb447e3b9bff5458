"""Ctrl-C at any point of a run exits 130 with no traceback. Before: a Ctrl-C while typer built
the click command (inside the first `app(...)` call, before click's own handler is in place)
printed a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.paths import ROOT_DIR

ROOT = ROOT_DIR

INTERRUPTED = """
import sys
sys.path.insert(0, sys.argv.pop(1))
import typer.main

def interrupted(*args, **kwargs):
    raise KeyboardInterrupt  # what SIGINT raises in the main thread, at the moment it lands

typer.main.get_command = interrupted
from cgplan.cli import console_main
sys.argv = ["cgplan", *sys.argv[1:]]
console_main()
"""


@pytest.mark.parametrize("args", [("diff", "--help"), ("--version",), ("plan", "--vllm-args", "serve m")])
def test_ctrl_c_while_typer_builds_the_command_exits_130_quietly(args: tuple[str, ...]) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", INTERRUPTED, str(ROOT), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout) == (130, ""), proc.stderr
    assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr, proc.stderr
