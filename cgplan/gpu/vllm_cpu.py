"""vLLM's own code on a CPU, as a second engine: cgplan/gpu/vllm_oracle.py run in an interpreter the
user names (a vLLM release, a nightly wheel, an editable checkout), its answers read back.

cgplan's own process imports no vLLM here: the engine file runs by path in the other interpreter
(`PY -c` + runpy, in a scratch folder, so neither cgplan/gpu/ nor the working directory shadows a
module vLLM imports) and talks back in `@cgplan-oracle` lines (see the engine's docstring).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from cgplan.errors import ConfigError, VllmEngineError, one_line
from cgplan.io.files import REPORT_LIMIT_BYTES, ReadError, read_json

ENGINE = Path(__file__).with_name("vllm_oracle.py")
"""The file that runs inside the other interpreter (stdlib and vLLM only)."""

EVENT = "@cgplan-oracle "
"""The engine's protocol prefix (`vllm_oracle.EVENT`; not imported: that module is the other side)."""

EXIT_NO_VLLM = 3
"""The engine's exit status when vLLM cannot be imported (`vllm_oracle.EXIT_NO_VLLM`)."""

IMPORT_TIMEOUT_S = 300.0
"""How long importing vLLM (once per run) may take before the run is given up."""

CPU_HOST_LIMITS = (
    "no GPU and no weights: vLLM's config, attention-backend choice, dispatcher and CUDA-graph "
    "manager code runs with a fake CUDA device of the platform's family (H200, B200, A100-80GB, "
    "RTX PRO 6000, RTX 5090, GB10); nothing is captured and no memory is measured",
    "the attention backend is the first importable one of the platform's priority list (a GPU host "
    "also checks its kernels): set cgplan.attention_backend where a host picks another",
    "the engine's Scheduler is not built: a dynamic-SD schedule vLLM's own lookup rejects counts as "
    "refused, as the Scheduler refuses it at start",
    "drafter graphs come from the release's own speculator code (V2: init_speculator and its "
    "managers; V1: the runner's capture loop over the proposer's keys); suffix decoding is taken to "
    "have Arctic Inference installed, B12X its kernels",
    "the model registry's class flags are a dense decoder's (hybrid and attention-free models are not "
    "exercised); per-step decisions of DP, DBO and LoRA, encoder-decoder, pooling and multimodal "
    "encoder graphs are not exercised; tensor-parallel configs rely on the engine's import-time "
    "kernel allowlist",
)
"""What vLLM's code on a CPU host cannot reach (scripts/oracle/README.md has the long form); every
verify answer states these."""


class EngineProgress(Protocol):
    """Where an engine run reports (a rich bar in the CLI, a list in tests)."""

    def start(self, total: int, label: str) -> None:
        """The engine is up (`label`: which vLLM); `total` configs follow."""

    def advance(self, label: str) -> None:
        """One more config answered."""


class NoProgress:
    """An EngineProgress that shows nothing."""

    def start(self, total: int, label: str) -> None:
        """Ignore."""

    def advance(self, label: str) -> None:
        """Ignore."""


@dataclass(frozen=True)
class EngineRun:
    """What one interpreter's vLLM answered for a list of configs."""

    python: str
    vllm_version: str
    answers: tuple[dict[str, Any] | None, ...]
    """The engine's JSON document per config (None: no answer, see `failures`)."""
    failures: tuple[str | None, ...]
    """Why a config got no answer (the engine crashed or timed out on it)."""
    vllm_location: str | None = None
    """The folder of the vLLM package that answered (None: not reported)."""
    import_s: float = 0.0
    """Seconds importing vLLM took (once per run)."""
    seconds: tuple[float, ...] = ()
    """Seconds each config took in its forked child."""


def check_python(python: Path) -> None:
    """Refuse, before any work, a `--python` that names no file.

    Raises:
        ConfigError: `--python: ... does not exist` (exit 2).
    """
    if not python.exists():
        raise ConfigError(
            "--python", f"{python} does not exist (expected the python of an environment with vLLM)"
        )
    if python.is_dir():
        raise ConfigError("--python", f"{python} is a folder (expected its bin/python)")


def _env() -> dict[str, str]:
    """The environment of the engine: this one, its PYTHONPATH made absolute (the engine runs in a
    scratch folder; a contributor's `PYTHONPATH=.` in a vLLM checkout must still find it)."""
    env = dict(os.environ)
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(
            str(Path(p).resolve()) if p else p for p in env["PYTHONPATH"].split(os.pathsep)
        )
    return env


def _reader(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _last_line(text: str) -> str:
    rows = [r.strip() for r in text.splitlines() if r.strip()]
    return one_line(rows[-1][:300]) if rows else "no output"


def _stop(proc: subprocess.Popen[str]) -> None:
    """End the engine and its forked children (their own process group)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
    proc.wait()


def ask_vllm(
    python: Path,
    configs: Sequence[dict[str, Any]],
    *,
    timeout_s: float = 600.0,
    jobs: int = 1,
    progress: EngineProgress | None = None,
    names: Sequence[str] | None = None,
    engine: Path = ENGINE,
) -> EngineRun:
    """Run vLLM's own code in `python` on every config (the oracle's config dicts,
    `cgplan.io.oracle_input`): vLLM is imported once, then each config is answered in a forked
    child (`jobs` at a time, each given up after `timeout_s` seconds; 0: no limit). `names` label
    the configs in the progress (default: their position).

    Raises:
        ConfigError: `python` names no file (exit 2).
        VllmEngineError: `python` cannot run, has no vLLM, vLLM fails to import, or the engine
            crashed or went silent (exit 3).
    """
    check_python(python)
    if not configs:
        raise ConfigError("", "no configs to ask vLLM about")
    sink = progress or NoProgress()
    labels = list(names) if names is not None else [f"config {i + 1}" for i in range(len(configs))]
    with tempfile.TemporaryDirectory(prefix="cgplan-verify-") as tmp:
        work = Path(tmp)
        files = []
        for i, cfg in enumerate(configs):
            f = work / f"config-{i:04d}.json"
            f.write_text(json.dumps(cfg))
            files.append(str(f))
        args = ["--out-dir", str(work / "out"), "--compact", "--no-log", "--timeout", str(timeout_s)]
        args += ["--jobs", str(max(1, jobs)), *files]
        boot = "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
        stderr_path = work / "stderr.txt"
        with open(stderr_path, "w") as err:
            try:
                proc = subprocess.Popen(
                    [str(python), "-c", boot, str(engine), *args],
                    cwd=work,
                    env=_env(),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    text=True,
                    start_new_session=True,
                )
            except OSError as e:
                raise VllmEngineError(f"--python {python}: cannot run it: {e.strerror or e}") from None
            assert proc.stdout is not None
            lines: queue.Queue[str | None] = queue.Queue()
            reader = threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True)
            reader.start()
            try:
                return _collect(python, proc, lines, stderr_path, labels, timeout_s, max(1, jobs), sink)
            finally:
                _stop(proc)
                reader.join(timeout=5)
                proc.stdout.close()


def _collect(
    python: Path,
    proc: subprocess.Popen[str],
    lines: queue.Queue[str | None],
    stderr_path: Path,
    labels: list[str],
    timeout_s: float,
    jobs: int,
    sink: EngineProgress,
) -> EngineRun:
    """Read the engine's events until every config is answered."""
    total = len(labels)
    version: str | None = None
    import_s = 0.0
    location: str | None = None
    answers: list[dict[str, Any] | None] = [None] * total
    failures: list[str | None] = [None] * total
    seconds = [0.0] * total
    done = 0
    # silence budget: the import, then a config's own limit (plus the time to fork and write it)
    deadline = time.monotonic() + IMPORT_TIMEOUT_S
    while done < total:
        try:
            wait = deadline - time.monotonic()
            line = lines.get(timeout=max(0.1, wait)) if wait != float("inf") else lines.get()
        except queue.Empty:
            what = "importing vLLM" if version is None else "answering a config"
            raise VllmEngineError(f"--python {python}: the engine went silent {what}; gave up") from None
        if line is None:  # the engine ended before answering everything
            code = proc.wait()
            tail = _last_line(stderr_path.read_text(errors="replace"))
            if version is None and code == EXIT_NO_VLLM:
                raise VllmEngineError(f"--python {python}: cannot import vLLM ({tail})")
            if version is None:
                raise VllmEngineError(
                    f"--python {python}: it ended (status {code}) before importing vLLM: {tail} "
                    "(expected the python of an environment with vLLM)"
                )
            raise VllmEngineError(f"--python {python}: the engine ended with status {code} ({tail})")
        if not line.startswith(EVENT):
            continue  # vLLM's own chatter
        event = json.loads(line[len(EVENT) :])
        if event["event"] == "fatal":
            raise VllmEngineError(f"--python {python}: cannot import vLLM: {one_line(str(event['error']))}")
        if event["event"] == "preloaded":
            version = str(event["vllm_version"])
            import_s = float(event.get("seconds") or 0.0)
            location = event.get("vllm_location")
            sink.start(total, f"vLLM {version}")
        elif event["event"] == "done":
            i = int(event["index"])
            if event["status"] == "ok":
                try:  # the answer file through the one bounded reader (the engine is the user's)
                    answers[i] = read_json(
                        Path(event["path"]), what="vLLM's answer", limit=REPORT_LIMIT_BYTES
                    )
                except ReadError as e:
                    failures[i] = f"the engine's answer cannot be read: {one_line(e.problem)}"
            elif event["status"] == "timeout":
                failures[i] = f"vLLM's code took more than {timeout_s:g} s on it (--timeout)"
            else:
                failures[i] = f"the engine crashed on it: {_last_line(str(event.get('error') or ''))}"
            seconds[i] = float(event.get("seconds") or 0.0)
            done += 1
            sink.advance(labels[i])
        # a config's own limit (the engine kills it), plus time to fork and write; no limit: none
        deadline = time.monotonic() + (timeout_s * jobs + 60.0 if timeout_s else float("inf"))
    assert version is not None
    return EngineRun(
        str(python), version, tuple(answers), tuple(failures), location, import_s, tuple(seconds)
    )
