"""`-` is standard input for every file a command reads, and `-o -` (or `--json -`, `--junit -`)
standard output for every file it writes; stdin is read once, bounded and with an idle timeout.

One test per command and file option: the input piped in gives the same answer as the file; a
silent pipe is refused by name within the timeout; two outputs to stdout are refused before
any work.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cgplan.io import files
from tests.fuzz.harness import EXAMPLES, H200, MODELS, ROOT, Run, problems, run_cli

PR = EXAMPLES / "pr50488-eagle-k16.yaml"
CAPTURE = H200 / "tiny-nospec-vllm.json"
LOG = ROOT / "tests" / "data" / "logs" / "synthetic-disagree-sizes.log"
TRAFFIC = ROOT / "configs" / "traffic" / "decode-heavy-mns32.json"
POLICY = ROOT / "configs" / "gates" / "default.yaml"
COEFFICIENTS = ROOT / "cgplan" / "data" / "cost-h200.json"
LATENCY = ROOT / "cgplan" / "data" / "latency-h200.json"
MODEL_JSON = MODELS / "tiny-llama" / "config.json"


class Pipe:
    """The write end of standard input; a feeding thread owns it once it is given data."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.feeder: threading.Thread | None = None


@pytest.fixture
def stdin(monkeypatch: pytest.MonkeyPatch) -> Iterator[Pipe]:
    """Standard input as a pipe whose write end the test holds."""
    r, w = os.pipe()
    reader = os.fdopen(r, "r")
    monkeypatch.setattr("sys.stdin", reader)
    monkeypatch.setattr(files, "STDIN_IDLE_TIMEOUT_S", 0.5)
    pipe = Pipe(w)
    yield pipe
    reader.close()  # a feeder still writing gets EPIPE and ends
    if pipe.feeder is not None:
        pipe.feeder.join(10)
    else:
        os.close(w)


def feed(pipe: Pipe, data: bytes) -> None:
    """Write `data` from a thread (a large input cannot fill the pipe before the command reads)."""

    def run() -> None:
        view = memoryview(data)
        with contextlib.suppress(OSError):
            while view:
                view = view[os.write(pipe.fd, view) :]
        os.close(pipe.fd)

    pipe.feeder = threading.Thread(target=run, daemon=True)
    pipe.feeder.start()


def plan_report(tmp_path: Path) -> Path:
    run = run_cli(["plan", str(PR), "--json"])
    assert run.code == 0, run.err
    path = tmp_path / "plan.json"
    path.write_text(run.out)
    return path


# (id, argv with "{-}" for the piped file, the file piped, exit codes it may end with)
CASES = [
    ("plan", ["plan", "-"], PR, (0,)),
    ("plan --coefficients", ["plan", str(PR), "--coefficients", "-"], COEFFICIENTS, (0,)),
    ("plan --model-config", ["plan", str(PR), "--model-config", "-"], MODEL_JSON, (0,)),
    ("sweep", ["sweep", "-", "--set", "max_num_seqs=8,16"], PR, (0,)),
    (
        "sweep --model-config",
        ["sweep", str(PR), "--model-config", "-", "--set", "max_num_seqs=8"],
        MODEL_JSON,
        (0,),
    ),
    ("gate config", ["gate", "-"], PR, (1,)),
    ("gate capture report", ["gate", "-"], CAPTURE, (0,)),
    ("gate --policy", ["gate", str(PR), "--policy", "-"], POLICY, (1,)),
    ("gate --baseline", ["gate", str(CAPTURE), "--baseline", "-"], CAPTURE, (0,)),
    ("diff report first", ["diff", "-", "{plan}"], None, (0,)),
    ("diff report second", ["diff", str(PR), "-"], None, (0,)),
    ("diff config", ["diff", "-", str(PR)], PR, (0,)),
    ("diff - -", ["diff", "-", "-"], PR, (0,)),
    ("logs", ["logs", "-"], LOG, (0, 1)),
    (
        "logs --config",
        ["logs", str(LOG), "--config", "-"],
        ROOT / "configs" / "gpu" / "tiny-nospec.yaml",
        (0, 1),
    ),
    ("optimize", ["optimize", "-", "--traffic", str(TRAFFIC), "--objective", "padding"], PR, (0,)),
    ("optimize --traffic", ["optimize", str(PR), "--traffic", "-", "--objective", "padding"], TRAFFIC, (0,)),
    (
        "optimize --latency-coefficients",
        [
            "optimize",
            str(PR),
            "--traffic",
            str(TRAFFIC),
            "--objective",
            "padding",
            "--latency-coefficients",
            "-",
        ],
        LATENCY,
        (0,),
    ),
    ("calibrate", ["calibrate", "-", "--gpu", "H200"], CAPTURE, (2,)),
]


@pytest.mark.parametrize(("argv", "piped", "codes"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_dash_reads_stdin(
    stdin: Pipe, tmp_path: Path, argv: list[str], piped: Path | None, codes: tuple[int, ...]
) -> None:
    report = plan_report(tmp_path)
    args = [a.replace("{plan}", str(report)) for a in argv]
    feed(stdin, (piped or report).read_bytes())
    run = run_cli(args)
    assert run.code in codes, (run.code, run.err)
    assert "standard input" not in run.err, run.err
    if run.code == 2:  # calibrate: one report cannot fit the model, but it was read
        assert problems(run, where=["-"]) == [] and "cannot fit the cost model" in run.err, run.err
    # the same exit as with the file named
    source = str(piped or report)
    named = run_cli([source if a == "-" else a for a in args])
    assert named.code == run.code, (named.err, run.err)


@pytest.mark.parametrize("argv", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_a_silent_stdin_is_refused_by_name(stdin: Pipe, tmp_path: Path, argv: list[str]) -> None:
    args = [a.replace("{plan}", str(tmp_path / "unused.json")) for a in argv]
    run = run_cli(args)
    assert run.code == 2, (run.code, run.err)
    assert problems(run, where=["-"]) == [], run.err
    assert "nothing on standard input for 0.5 s" in run.err, run.err
    assert run.seconds < 10


def test_stdin_is_bounded(stdin: Pipe) -> None:
    feed(stdin, b"model: x\n" + b"#" * (17 << 20))
    run = run_cli(["plan", "-"])
    assert run.code == 2 and problems(run, where=["-", "<stdin>"]) == [], run.err
    assert "larger than" in run.err, run.err


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", str(PR), "-o", "-"],
        ["plan", str(PR), "--json", "-o", "-"],
        ["sweep", str(PR), "--set", "max_num_seqs=8,16", "-o", "-"],
        ["diff", str(PR), str(PR), "-o", "-"],
        ["gate", str(PR), "--json", "-"],
        ["gate", str(PR), "--junit", "-"],
        ["gate", str(PR), "--markdown", "-"],
        ["logs", str(LOG), "-o", "-"],
        ["optimize", str(PR), "--traffic", str(TRAFFIC), "--objective", "padding", "-o", "-"],
    ],
    ids=lambda a: " ".join(x for x in a if x.startswith("-") and x != "-"),
)
def test_dash_o_writes_stdout(tmp_path: Path, argv: list[str]) -> None:
    run = run_cli(argv)
    assert run.code in (0, 1), run.err
    assert run.out.strip(), "nothing on stdout"
    assert not (Path.cwd() / "-").exists(), "wrote a file named '-'"
    if "--json" in argv:
        json.loads(run.out)


def test_calibrate_dash_o_writes_the_coefficients_to_stdout() -> None:
    fits = sorted((H200 / "cost").glob("fit-*.json"))
    run = run_cli(["calibrate", *map(str, fits), "--gpu", "H200", "-o", "-", "--json"])
    assert run.code == 0, run.err
    assert json.loads(run.out)["kind"] == "cgplan-cost-coefficients"  # only the coefficients on stdout
    assert json.loads(run.err)["kind"] == "calibration"  # the table (--json: as JSON) on stderr


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["gate", str(PR), "--json", "-", "--junit", "-"], "(--json, --junit)"),
        (["gate", str(PR), "--format", "json", "--junit", "-"], "(--junit and the command's own output)"),
        (["plan", str(PR), "--html", "-"], "(--html and the command's own output)"),
        (["plan", str(PR), "-o", "-", "--html", "-"], "(-o, --html)"),
        (["diff", str(PR), str(PR), "--html", "-"], "(--html and the command's own output)"),
    ],
)
def test_two_outputs_to_stdout_are_refused_before_any_work(argv: list[str], named: str) -> None:
    """gate found it only after the work, with its verdict already printed above the error."""
    run: Run = run_cli(argv)
    assert run.code == 2 and run.out == "", run.err
    assert (
        run.err
        == f"cgplan: error: -: more than one output goes to stdout {named}; name a file for all but one\n"
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_sweep_o_leaves_the_old_file_or_a_whole_new_one(tmp_path: Path, sig: int) -> None:
    """Whenever the signal lands (planning, rendering or writing), `-o FILE` holds either its old
    content or the complete new sweep, and no temporary file is left beside it."""
    for delay_s in (0.5, 1.5, 3.0):
        out = tmp_path / "sweep.json"
        out.write_text("old\n")
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cgplan",
                "sweep",
                str(PR),
                "--set",
                "max_model_len=1..2000",
                "--json",
                "-o",
                str(out),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(delay_s)
        child.send_signal(sig)
        _, err = child.communicate(timeout=120)
        if "init_import_site" not in err:  # else it landed in Python's own start-up, before cgplan
            assert child.returncode in (0, 130, -sig), (delay_s, child.returncode, err)
            assert "Traceback" not in err, err
        text = out.read_text()
        assert text == "old\n" or json.loads(text)["kind"] == "sweep", text[:200]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.json"], "a temporary file was left"
