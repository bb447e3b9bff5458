"""`cgplan plan CONFIG [--json]` as its own process: it ends without the interpreter's teardown
(issue 18), with the same output and exit codes as the same command run in-process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cgplan.cli import main
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
CONFIG = "configs/examples/pr50488-eagle-k16.yaml"


def _process(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "cgplan", *args], cwd=ROOT, capture_output=True, check=False)


@pytest.mark.parametrize("args", [(CONFIG, "--json"), (CONFIG,), ("--json", CONFIG)])
def test_the_process_writes_what_the_in_process_command_writes(
    args: tuple[str, ...], capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as info:
        main(["plan", *args])
    inside = capsysbinary.readouterr()
    ran = _process("plan", *args)
    assert (ran.returncode, ran.stdout) == (info.value.code, inside.out)
    assert ran.stdout.endswith(b"\n") and len(ran.stdout) > 1000


def test_errors_and_a_full_disk_keep_their_exit_codes() -> None:
    bad = _process("plan", "no-such-config.yaml", "--json")
    assert bad.returncode == 2 and bad.stderr == b"cgplan: error: no-such-config.yaml: no such file\n"
    with open("/dev/full", "wb") as full:
        ran = subprocess.run(
            [sys.executable, "-m", "cgplan", "plan", CONFIG, "--json"],
            cwd=ROOT,
            stdout=full,
            stderr=subprocess.PIPE,
        )
    assert ran.returncode == 2 and b"cannot write" in ran.stderr and b"Traceback" not in ran.stderr


def test_the_console_script_is_the_process_entry_point() -> None:
    # (tomllib is 3.11+; the suite runs on 3.10 too)
    assert 'cgplan = "cgplan.cli:console_main"' in (ROOT / "pyproject.toml").read_text().splitlines()
