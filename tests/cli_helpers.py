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


def unwrap(text: str) -> list[str]:
    """Text output's logical lines: a line indented four or more past the line before it
    continues that line (`cgplan.render._console.wrap_words`), joined back with one space."""
    out: list[str] = []
    indent = 0
    for line in text.splitlines():
        lead = len(line) - len(line.lstrip(" "))
        if out and line.strip() and lead >= indent + 4:
            out[-1] += " " + line.strip()
            continue
        out.append(line)
        indent = lead
    return out
