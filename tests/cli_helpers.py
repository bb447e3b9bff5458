"""Run the real console entry point in-process: (exit code, stdout, stderr)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cgplan.cli import main


def run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str | Path
) -> tuple[int, str, str]:
    """`cgplan ARGS...` through `cgplan.cli.main`, as a user's shell would run it."""
    monkeypatch.setattr(sys, "argv", ["cgplan", *map(str, args)])
    with pytest.raises(SystemExit) as info:
        main()
    out = capsys.readouterr()
    code = info.value.code
    return (int(code) if isinstance(code, int) else 0), out.out, out.err
