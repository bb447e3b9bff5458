"""Fuzz kinds "fleet" and "streams" (issue 33): what cgplan writes is never lost, mixed up or cut.

fleet: drawn config folders (stems that look like the aggregate's or like numbered names, the
same stem in several folders, broken configs, symbolic links), drawn --gpus and --vllm-version,
and a drawn state of --out-dir (fresh, a rerun, a tampered report, a link planted where a report
or log goes, a file); `capture --gpu --backend fake` as its own process (its children are). The
aggregate lists each config exactly once with its own report, a rerun resumes every complete one,
nothing outside --out-dir is written, and every refusal is one located line.

streams: drawn commands with stdout/stderr a non-blocking pipe read late, a full device, a closed
descriptor, or a reader that leaves early: every byte arrives (the same bytes as a plain run) or
the run says so in one line (exit 2), and stderr trouble never changes the exit code.

`make test` runs a few of each (derandomized); `make fuzz` runs FUZZ_FLEET and FUZZ_STREAMS of
them with the run's seed and records them in benchmarks/results/fuzz.json.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import hypothesis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.harness import Run, Tally
from tests.fuzz.test_fuzz import COMMON, SEED, _record
from tests.paths import ROOT_DIR

CGPLAN = [sys.executable, "-m", "cgplan"]
MODEL = ROOT_DIR / "configs" / "models" / "tiny-llama-v512"
BIG = str(ROOT_DIR / "configs" / "examples" / "mns1024-eagle-k16-dyn4.yaml")
GOOD = str(ROOT_DIR / "configs" / "examples" / "pr50488-eagle-k16.yaml")
VICTIM_TEXT = "precious: never written by cgplan\n"

FAST = {"fleet": 3, "streams": 8}
FULL = {
    "fleet": int(os.environ.get("FUZZ_FLEET", "150")),
    "streams": int(os.environ.get("FUZZ_STREAMS", "300")),
}


@dataclass(frozen=True)
class Entry:
    """One file of a drawn config folder."""

    folder: str
    stem: str
    kind: str
    """good | bad-yaml | bad-key | link"""
    max_num_seqs: int


@dataclass(frozen=True)
class FleetInput:
    """A drawn multi-config capture."""

    entries: tuple[Entry, ...]
    by_folder: bool
    out_state: str
    gpus: str | None
    vllm_version: str | None

    def sample(self) -> str:
        """What the failure report shows."""
        return repr(self)


STEMS = (
    "fleet",
    "manifest",
    "a",
    "x",
    "p-x",
    "p-x-1",
    "x-1",
    "fleet-0123abcd",
    "sp ace",
    "ünï",
    "a" * 60,
    "-d",
)
FOLDERS = ("", "p", "q/p", "r", "p/p")


@st.composite
def fleet_inputs(draw: st.DrawFn) -> FleetInput:
    """A folder tree of 1-4 configs and the state of --out-dir."""
    entries: dict[tuple[str, str], Entry] = {}
    for _ in range(draw(st.integers(1, 4))):
        folder, stem = draw(st.sampled_from(FOLDERS)), draw(st.sampled_from(STEMS))
        kind = draw(st.sampled_from(("good", "good", "good", "good", "bad-yaml", "bad-key", "link")))
        entries.setdefault((folder, stem), Entry(folder, stem, kind, draw(st.sampled_from((8, 16, 24, 32)))))
    return FleetInput(
        tuple(entries.values()),
        draw(st.booleans()),
        draw(st.sampled_from(("fresh", "rerun", "tampered", "linked-report", "linked-log", "file"))),
        draw(st.sampled_from((None, "0", "0,1", "0,1,2"))),
        draw(st.sampled_from((None, "0.26.0", "0.27.0"))),
    )


def _config_text(e: Entry) -> str:
    if e.kind == "bad-yaml":
        return "model: [unclosed\n"
    extra = "not_a_vllm_key: 1\n" if e.kind == "bad-key" else ""
    return (
        f"model: {MODEL}\nmax_model_len: 2048\nmax_num_seqs: {e.max_num_seqs}\n"
        f"max_num_batched_tokens: 2048\n{extra}cgplan:\n  vllm_version: 0.26.0\n  platform: H200\n"
    )


def _lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln]


def _one_line_refusal(r: subprocess.CompletedProcess[str], needle: str) -> list[str]:
    if r.returncode != 2 or len(_lines(r.stderr)) != 1 or not r.stderr.startswith("cgplan: error: "):
        return [f"expected one error line and exit 2 (got exit {r.returncode}: {r.stderr[-500:]!r})"]
    return [] if needle in r.stderr else [f"the error does not name {needle!r}: {r.stderr!r}"]


def judge_fleet(inp: FleetInput, root: Path) -> tuple[Run, list[str]]:
    """Lay the input out under `root`, run it, and list what went wrong."""
    cfg, out, victim = root / "cfg", root / "out", root / "victim.txt"
    victim.write_text(VICTIM_TEXT)
    configs: list[Path] = []
    for i, e in enumerate(inp.entries):
        path = cfg / e.folder / f"{e.stem}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        if e.kind == "link":
            target = root / f"target-{i}.yaml"
            target.write_text(_config_text(Entry(e.folder, e.stem, "good", e.max_num_seqs)))
            path.symlink_to(target)
        else:
            path.write_text(_config_text(e))
        configs.append(path)
    folders = sorted({str(c.parent) for c in configs})
    targets = folders if inp.by_folder else [str(c) for c in configs]
    argv = ["capture", "--gpu", *targets, "--backend", "fake", "--out-dir", str(out)]
    argv += ["--gpus", inp.gpus] if inp.gpus else []
    argv += ["--vllm-version", inp.vllm_version] if inp.vllm_version else []

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CGPLAN, *argv], capture_output=True, text=True, timeout=600, cwd=root)

    links_in_folders = inp.by_folder and any(e.kind == "link" for e in inp.entries)
    if inp.out_state == "file":
        out.write_text(VICTIM_TEXT)
    elif inp.out_state != "fresh" and not links_in_folders:
        run()  # the earlier run whose folder this one finds
        reports = sorted(out.glob("*-*.json"))
        if inp.out_state == "tampered" and reports:
            reports[0].write_bytes(b'{"kind": "capture", "schema_version": 1')
        elif inp.out_state in ("linked-report", "linked-log") and reports:
            planted = reports[0] if inp.out_state == "linked-report" else reports[0].with_suffix(".log")
            planted.unlink(missing_ok=True)
            planted.symlink_to(victim)
    start = time.perf_counter()
    r = run()
    seconds = time.perf_counter() - start
    found: list[str] = []
    if "Traceback" in r.stderr:
        found.append("a traceback")
    if victim.read_text() != VICTIM_TEXT:
        found.append("wrote through a link to a file outside --out-dir")
    if r.returncode not in (0, 2, 4):
        found.append(f"exit {r.returncode}")
    planted_link = [p for p in out.glob("*") if p.is_symlink()] if out.is_dir() else []
    if links_in_folders:
        found += _one_line_refusal(r, "a symbolic link in a config folder")
        if any(str(root / f"target-{i}") in r.stderr for i in range(len(inp.entries))):
            found.append("quoted where a link in the config folder points")
    elif inp.out_state == "file":
        found += _one_line_refusal(r, "is not a folder")
    elif planted_link:
        found += _one_line_refusal(r, f"{planted_link[0]}: a symbolic link")
    else:
        found += _check_aggregate(inp, configs, out, r)
    return Run(argv, r.returncode, r.stdout, r.stderr, seconds, seconds), found


def _check_aggregate(
    inp: FleetInput, configs: list[Path], out: Path, r: subprocess.CompletedProcess[str]
) -> list[str]:
    found: list[str] = []
    try:
        rows = json.loads((out / "fleet.json").read_text())["configs"]
    except (OSError, ValueError, KeyError) as why:
        return [f"no aggregate ({why}): {r.stderr[-500:]!r}"]
    listed = sorted(os.path.realpath(row["config"]) for row in rows)
    expected = sorted({os.path.realpath(c) for c in configs})
    if listed != expected:
        found.append(f"the aggregate lists {listed}, expected each config once: {expected}")
    if len({row["report"] for row in rows if row["report"]}) != sum(1 for row in rows if row["report"]):
        found.append("two rows name one report")
    by_path = {os.path.realpath(c): e for c, e in zip(configs, inp.entries, strict=True)}
    for row in rows:
        e = by_path.get(os.path.realpath(row["config"]))
        if e is None:
            continue
        good = e.kind in ("good", "link")
        if good and row["status"] != "complete":
            found.append(f"{row['config']}: {row['status']} ({row.get('failure')})")
        if not good and row["failure_class"] != "config":
            found.append(f"{row['config']}: a broken config ended as {row['failure_class']}")
        if row["report"]:
            doc = json.loads((out / row["report"]).read_text())
            if doc["source"] != row["config"]:
                found.append(f"{row['config']}: its row holds the report of {doc['source']}")
            elif doc["plan"]["max_num_seqs"] != e.max_num_seqs:
                found.append(f"{row['config']}: its report measured another config")
            if inp.vllm_version and doc["plan"]["vllm_version"] != inp.vllm_version:
                found.append(f"{row['config']}: resumed a report planned under {doc['plan']['vllm_version']}")
    want = 2 if any(e.kind in ("bad-yaml", "bad-key") for e in inp.entries) else 0
    if r.returncode != want:
        found.append(f"exit {r.returncode}, expected {want}")
    if inp.out_state == "rerun" and want == 0 and not all(row["resumed"] for row in rows):
        found.append("a rerun did not resume every complete report")
    if any(not ln.startswith("cgplan: ") for ln in _lines(r.stderr)):
        found.append(f"a stderr line that is not cgplan's: {r.stderr[-300:]!r}")
    return found


# ----------------------------------------------------------------------------- streams

COMMANDS = (
    ("plan", BIG, "--json"),
    ("plan", BIG),
    ("plan", BIG, "--format", "json"),
    ("diff", BIG, GOOD, "--json"),
    ("plan", "missing.yaml"),
    ("sweep", GOOD, "--set", "max_num_seqs=8,16", "--json"),
    ("plan", GOOD, "--json", "-o", "-"),
    ("optimize", GOOD),
)
SETUPS = (
    "nonblocking-stdout",
    "nonblocking-both",
    "nearly-full-nonblocking-stderr",
    "full-stdout",
    "closed-stdout",
    "closed-stderr",
    "full-stderr",
    "early-reader",
)


@dataclass(frozen=True)
class StreamInput:
    """A command and what its stdout and stderr are."""

    argv: tuple[str, ...]
    setup: str
    delay_s: float
    early_bytes: int

    def sample(self) -> str:
        """What the failure report shows."""
        return repr(self)


@st.composite
def stream_inputs(draw: st.DrawFn) -> StreamInput:
    """One command under one stream setup."""
    return StreamInput(
        draw(st.sampled_from(COMMANDS)),
        draw(st.sampled_from(SETUPS)),
        draw(st.sampled_from((0.0, 0.2, 0.8))),
        draw(st.sampled_from((0, 1, 4096, 70000))),
    )


_REFERENCE: dict[tuple[str, ...], subprocess.CompletedProcess[bytes]] = {}


def _reference(argv: tuple[str, ...]) -> subprocess.CompletedProcess[bytes]:
    """The command with plain blocking pipes (once per command)."""
    if argv not in _REFERENCE:
        _REFERENCE[argv] = subprocess.run([*CGPLAN, *argv], capture_output=True, timeout=120, cwd=ROOT_DIR)
    return _REFERENCE[argv]


def _nonblocking(fd: int) -> None:
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)


def _drain(fd: int, delay_s: float, out: bytearray, stop_after: int | None = None) -> None:
    time.sleep(delay_s)
    while chunk := os.read(fd, 8192):
        out += chunk
        if stop_after is not None and len(out) >= stop_after:
            break
    os.close(fd)


def _close_all(fds: list[int]) -> None:
    """In the child, before exec: the descriptors the setup wants closed."""
    for fd in fds:
        os.close(fd)


def _read_all(pipe: IO[bytes], out: bytearray) -> None:
    out += pipe.read()


def run_streams(inp: StreamInput) -> tuple[int, bytes, bytes, float]:
    """(exit code, stdout, stderr, seconds) of the command under the input's setup."""
    out, err = bytearray(), bytearray()
    threads, close_in_child, files = [], [], []
    o_r = o_w = e_r = e_w = -1
    stdout: int | IO[bytes] = subprocess.PIPE
    stderr: int | IO[bytes] = subprocess.PIPE
    if inp.setup in ("nonblocking-stdout", "nonblocking-both", "early-reader"):
        o_r, o_w = os.pipe()
        if inp.setup != "early-reader":
            _nonblocking(o_w)
        stdout = o_w
    if inp.setup in ("nonblocking-both", "nearly-full-nonblocking-stderr"):
        e_r, e_w = os.pipe()
        _nonblocking(e_w)
        os.write(e_w, b"x" * 65000)  # nearly full: the command's own lines meet EAGAIN
        stderr = e_w
    if inp.setup in ("full-stdout", "full-stderr"):
        full = open("/dev/full", "wb")  # noqa: SIM115 (closed below, after the run)
        files.append(full)
        if inp.setup == "full-stdout":
            stdout = full
        else:
            stderr = full
    if inp.setup == "closed-stdout":
        close_in_child.append(1)
    if inp.setup == "closed-stderr":
        close_in_child.append(2)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*CGPLAN, *inp.argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL if 1 in close_in_child else stdout,
        stderr=subprocess.DEVNULL if 2 in close_in_child else stderr,
        cwd=ROOT_DIR,
        preexec_fn=(lambda: _close_all(close_in_child)) if close_in_child else None,
    )
    for fd in (o_w, e_w):
        if fd >= 0:
            os.close(fd)
    if o_r >= 0:
        stop = inp.early_bytes if inp.setup == "early-reader" else None
        threads.append(threading.Thread(target=_drain, args=(o_r, inp.delay_s, out, stop)))
    elif proc.stdout is not None:
        threads.append(
            threading.Thread(target=lambda: out.extend(proc.stdout.read() if proc.stdout else b""))
        )
    if e_r >= 0:
        threads.append(threading.Thread(target=_drain, args=(e_r, inp.delay_s, err)))
    elif proc.stderr is not None:
        threads.append(
            threading.Thread(target=lambda: err.extend(proc.stderr.read() if proc.stderr else b""))
        )
    for t in threads:
        t.start()
    code = proc.wait(timeout=120)
    for t in threads:
        t.join(60)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    for f in files:
        f.close()
    if e_r >= 0:
        err = err[65000:]
    return code, bytes(out), bytes(err), time.perf_counter() - start


def judge_streams(inp: StreamInput) -> tuple[Run, list[str]]:
    """Run the input and compare with the plain run of the same command."""
    ref = _reference(inp.argv)
    code, out, err, seconds = run_streams(inp)
    text = err.decode("utf-8", "replace")
    found = ["a traceback"] if "Traceback" in text else []
    writes_stdout = bool(ref.stdout)
    if inp.setup in ("full-stdout", "closed-stdout") and writes_stdout:
        if code != 2 or len(_lines(text)) != 1 or "<stdout>: cannot write" not in text:
            found.append(f"stdout {inp.setup}: exit {code}, stderr {text[-300:]!r}")
    elif inp.setup == "early-reader":
        if code != ref.returncode:
            found.append(f"a reader that left: exit {code}, a plain run exits {ref.returncode}")
        if not ref.stdout.startswith(out[: len(ref.stdout)]):
            found.append("the bytes read differ from a plain run's")
    else:
        if code != ref.returncode:
            found.append(f"exit {code}, a plain run exits {ref.returncode}")
        if out != ref.stdout and inp.setup not in ("full-stdout", "closed-stdout"):
            found.append(f"stdout: {len(out)} bytes, a plain run writes {len(ref.stdout)} (or others)")
        if inp.setup in ("nonblocking-both", "nearly-full-nonblocking-stderr") and err != ref.stderr:
            found.append(f"stderr: {err[-200:]!r}, a plain run writes {ref.stderr[-200:]!r}")
    return Run([*inp.argv, f"<{inp.setup}>"], code, "", text, seconds, seconds), found


# ----------------------------------------------------------------------------- the runs


BASE = Path(tempfile.gettempdir()) / "cgplan-fuzz-outputs"
"""Where each fleet input's folder is made (named in fuzz.json as <tmp>)."""


def _check(kind: str, inp: FleetInput | StreamInput) -> tuple[Run, list[str]]:
    if isinstance(inp, FleetInput):
        BASE.mkdir(exist_ok=True)
        with tempfile.TemporaryDirectory(dir=BASE) as tmp:
            return judge_fleet(inp, Path(tmp))
    return judge_streams(inp)


STRATEGIES = {"fleet": fleet_inputs, "streams": stream_inputs}


@pytest.mark.parametrize("kind", sorted(FAST))
def test_fuzz_outputs_fast(kind: str) -> None:
    @settings(COMMON, max_examples=FAST[kind], derandomize=True)
    @given(STRATEGIES[kind]())
    def check(inp: FleetInput | StreamInput) -> None:
        run, found = _check(kind, inp)
        assert not found, f"{found}\n{run.argv}\n{inp.sample()}\n{run.err[-2000:]}"

    check()


@pytest.mark.fuzz
@pytest.mark.parametrize("kind", sorted(FULL))
def test_fuzz_outputs_full(kind: str) -> None:
    index, _, total = os.environ.get("FUZZ_SHARD", "0/1").partition("/")
    if sorted(FULL).index(kind) % max(1, int(total or 1)) != int(index or 0):
        pytest.skip(f"{kind} runs in another shard (FUZZ_SHARD={os.environ.get('FUZZ_SHARD')})")
    tally = Tally()
    start = time.perf_counter()

    @settings(COMMON, max_examples=FULL[kind], derandomize=False)
    @hypothesis.seed(SEED + 7919 * (1 + sorted(FULL).index(kind)))
    @given(STRATEGIES[kind]())
    def check(inp: FleetInput | StreamInput) -> None:
        run, found = _check(kind, inp)
        tally.add(run, found, inp.sample())
        if found:
            sys.stderr.write(f"\nFUZZ FAILURE ({kind}): {found}\n{inp.sample()[:1500]}\n")

    check()
    _record(kind, tally, time.perf_counter() - start, str(BASE))
    assert not tally.failures, json.dumps(tally.failures[:5], indent=1)[:5000]
