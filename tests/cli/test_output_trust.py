"""Issue 33: every byte cgplan writes to stdout or stderr gets there, or the run says so.

Real processes (the entry point as a user runs it), with stdout/stderr as a non-blocking pipe
(some CI runners and Node tools leave them so), a full device, a closed descriptor, or a reader
that goes away; `capture -o -` writes one document.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.api.test_fleet import write_config
from tests.paths import ROOT_DIR

BIG = ROOT_DIR / "configs" / "examples" / "mns1024-eagle-k16-dyn4.yaml"
"""A plan whose JSON (about 190 KB) is several times a pipe's 64 KiB buffer."""
GOOD = ROOT_DIR / "configs" / "examples" / "pr50488-eagle-k16.yaml"
CGPLAN = [sys.executable, "-m", "cgplan"]


def _nonblocking_stdout(argv: list[str], delay_s: float = 1.0) -> tuple[int, bytes, bytes]:
    """Run with stdout a non-blocking pipe that is read only after `delay_s`, then slowly."""
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
    proc = subprocess.Popen([*CGPLAN, *argv], stdout=w, stderr=subprocess.PIPE, cwd=ROOT_DIR)
    os.close(w)
    err: list[bytes] = []
    t = threading.Thread(target=lambda: err.append(proc.stderr.read() if proc.stderr else b""))
    t.start()
    time.sleep(delay_s)  # the writer meets a full pipe: EAGAIN
    data = bytearray()
    while chunk := os.read(r, 8192):
        data += chunk
        time.sleep(0.001)
    os.close(r)
    proc.wait(timeout=120)
    t.join(30)
    if proc.stderr is not None:
        proc.stderr.close()
    return proc.returncode, bytes(data), err[0] if err else b""


def _blocking(argv: list[str]) -> bytes:
    return subprocess.run([*CGPLAN, *argv], capture_output=True, check=True, cwd=ROOT_DIR).stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", str(BIG), "--json"],
        ["plan", str(BIG), "--format", "json"],
        ["diff", str(BIG), str(GOOD), "--json"],
    ],
    ids=["fast-path", "typer-path", "diff"],
)
def test_a_nonblocking_stdout_gets_every_byte(argv: list[str]) -> None:
    rc, out, err = _nonblocking_stdout(argv)
    assert rc == 0, err
    assert err == b""
    assert out == _blocking(argv) and len(out) > 65536


def test_a_nonblocking_stderr_gets_every_byte() -> None:
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
    # cgplan's stderr lines are short: the pipe is filled first, so its one line meets EAGAIN
    filler = b"x" * (65536 - 10)
    os.write(w, filler)
    proc = subprocess.Popen(
        [*CGPLAN, "plan", str(ROOT_DIR / "missing.yaml")], stdout=subprocess.DEVNULL, stderr=w
    )
    os.close(w)
    time.sleep(1.0)
    data = bytearray()
    while chunk := os.read(r, 8192):
        data += chunk
    os.close(r)
    proc.wait(timeout=60)
    assert proc.returncode == 2
    text = bytes(data[len(filler) :]).decode()
    assert text.startswith("cgplan: error: ") and text.endswith("\n") and text.count("\n") == 1


def _close_fd(fd: int) -> None:
    os.close(fd)


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["plan", str(GOOD)], 0),
        (["plan", str(GOOD), "--json"], 0),
        (["sweep", str(GOOD), "--set", "max_num_seqs=8,16"], 0),
        (["plan", "missing.yaml"], 2),
        (["optimize", str(GOOD)], 2),  # a usage error: typer's own message path
    ],
    ids=["plan", "plan-json", "sweep", "bad-config", "usage"],
)
@pytest.mark.parametrize("stderr", ["closed", "full"])
def test_a_closed_or_full_stderr_keeps_the_exit_code(argv: list[str], code: int, stderr: str) -> None:
    if stderr == "closed":
        r = subprocess.run(
            [*CGPLAN, *argv],
            stdout=subprocess.PIPE,
            preexec_fn=lambda: _close_fd(2),
            cwd=ROOT_DIR,
            timeout=120,
        )
    else:
        with open("/dev/full", "wb") as full:
            r = subprocess.run(
                [*CGPLAN, *argv], stdout=subprocess.PIPE, stderr=full, cwd=ROOT_DIR, timeout=120
            )
    assert r.returncode == code
    if code == 0:
        assert r.stdout == _blocking(argv)


@pytest.mark.parametrize("stdout", ["closed", "full"])
def test_a_closed_or_full_stdout_is_one_line_exit_2(stdout: str) -> None:
    argv = [*CGPLAN, "plan", str(BIG), "--json"]
    if stdout == "closed":
        r = subprocess.run(argv, stderr=subprocess.PIPE, preexec_fn=lambda: _close_fd(1), timeout=120)
    else:
        with open("/dev/full", "wb") as full:
            r = subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, timeout=120)
    assert r.returncode == 2
    err = r.stderr.decode()
    assert err.startswith("cgplan: error: <stdout>: cannot write") and err.count("\n") == 1


def test_a_reader_that_goes_away_ends_quietly() -> None:
    proc = subprocess.Popen(
        [*CGPLAN, "plan", str(BIG), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 0 and b"Traceback" not in err


@pytest.mark.parametrize("extra", [[], ["--json"]], ids=["table", "json"])
def test_capture_dash_o_writes_one_document(tmp_path: Path, extra: list[str]) -> None:
    cfg = write_config(tmp_path, "a")
    r = subprocess.run(
        [*CGPLAN, "capture", "--gpu", str(cfg), "--backend", "fake", "-o", "-", *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    doc, end = json.JSONDecoder().raw_decode(r.stdout)
    assert doc["kind"] == "capture" and r.stdout[end:].strip() == ""


@pytest.mark.parametrize("extra", [["--format", "html"], ["--html", "-"]], ids=["format-html", "html-dash"])
def test_capture_two_documents_to_stdout_are_refused_first(tmp_path: Path, extra: list[str]) -> None:
    cfg = write_config(tmp_path, "a")
    r = subprocess.run(
        [*CGPLAN, "capture", "--gpu", str(cfg), "--backend", "fake", "-o", "-", *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("cgplan: error: -: more than one output goes to stdout")
    assert r.stderr.count("\n") == 1
