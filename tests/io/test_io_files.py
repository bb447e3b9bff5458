"""The one hardened reader (cgplan/io/files.py), through every file kind that reads with it.

Each test is one minimal input of a class that used to hang, grow memory without bound, or
end in a traceback; each ends now in one located line and exit 2, within the fuzz bounds.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from cgplan.io import files
from cgplan.io.files import ReadError, parse_json, parse_yaml, read_bytes, read_text, read_yaml
from cgplan.io.numbers import human_readable_int
from tests.fuzz.harness import EXAMPLES, MODELS, Run, problems, run_cli
from tests.paths import ROOT_DIR, TESTS_DIR

PR = EXAMPLES / "pr50488-eagle-k16.yaml"
TINY = MODELS / "tiny-llama"
LOG = TESTS_DIR / "data" / "logs"
BOMB = (
    "a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
)


def refused(args: list[str], where: str | Path, pattern: str) -> Run:
    run = run_cli(args)
    assert problems(run, where=[str(where), "--vllm-args"]) == [], (run.escaped, run.err)
    assert run.code == 2, (run.code, run.err)
    assert re.search(pattern, run.err), run.err
    return run


def a_log() -> Path:
    return next(p for p in sorted(LOG.iterdir()) if p.suffix == ".log")


# ---------------------------------------------------------------- not a regular file


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A named pipe nobody writes to: open() would block forever."""
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    yield path


@pytest.mark.parametrize(
    "command",
    [
        ["plan", "{p}"],
        ["plan", "--vllm-args", "serve {model} --config {p}"],
        ["gate", str(PR), "--policy", "{p}"],
        ["plan", str(PR), "--policy", "{p}"],
        ["plan", str(PR), "--coefficients", "{p}"],
        ["optimize", str(PR), "--traffic", "{p}"],
        ["logs", "{p}"],
        ["diff", "{p}", str(PR)],
    ],
    ids=[
        "config",
        "vllm-args-config",
        "gate-policy",
        "capture-policy",
        "coefficients",
        "traffic",
        "log",
        "report",
    ],
)
def test_a_fifo_is_refused_by_name_without_blocking(fifo: Path, command: list[str]) -> None:
    args = [a.format(p=fifo, model=TINY) for a in command]
    refused(args, fifo, r"is a named pipe \(FIFO\), not a .*\(cgplan reads regular files only\)")


@pytest.mark.parametrize("command", [["plan", "{p}"], ["logs", "{p}"], ["gate", str(PR), "--policy", "{p}"]])
def test_a_device_is_refused_by_name(tmp_path: Path, command: list[str]) -> None:
    """A name that resolves to /dev/zero: read_text() would grow memory until killed."""
    link = tmp_path / "zero.yaml"
    link.symlink_to("/dev/zero")
    refused([a.format(p=link) for a in command], link, r"is a character device, not a")


def test_a_folder_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").mkdir()
    refused(["gate", str(PR), "--policy", str(tmp_path / "c.yaml")], tmp_path, r"c\.yaml: is a folder, not a")


# ---------------------------------------------------------------- bytes bounded


def _gzip_expanding_to(total_bytes: int, line: bytes = b"INFO 01-01 00:00:00 [x.py:1] hello\n") -> bytes:
    """A small gzip (one compressed 1 MiB member, repeated) that expands to `total_bytes`."""
    block = line * ((1 << 20) // len(line))
    member = gzip.compress(block, compresslevel=9)
    return member * (total_bytes // len(block) + 1)


def test_a_gzip_bomb_log_is_refused_at_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """2 GiB of log text in a few MiB of gzip: gzip.decompress() held all of it; streamed, it
    still took minutes. The limit (256 MiB, parsed in about 20 s) is lowered here to keep the
    test fast; benchmarks/bench_bounds.py times the real one."""
    monkeypatch.setattr("cgplan.io.logs.LOG_LIMIT_BYTES", 16 << 20)
    path = tmp_path / "big.log.gz"
    path.write_bytes(_gzip_expanding_to(2 << 30))
    run = refused(["logs", str(path)], path, r"larger than a log file may be once decompressed \(16 MiB\)")
    assert run.cpu_seconds < 10


def test_a_gzip_bomb_traffic_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.log.gz"
    path.write_bytes(_gzip_expanding_to(200 << 20))
    refused(["optimize", str(PR), "--traffic", str(path)], path, r"larger than a traffic file may be once")


def test_many_tiny_gzip_members_cost_no_more_than_one(tmp_path: Path) -> None:
    """200,000 members: slicing the rest after each member would be quadratic."""
    data = gzip.compress(b"x\n") * 200_000
    out = read_bytes(_write(tmp_path / "m.gz", data), gunzip=True, limit=8 << 20)
    assert out == b"x\n" * 200_000


def test_corrupt_gzip_is_one_line(tmp_path: Path) -> None:
    good = gzip.compress(b"INFO x\n" * 100)
    for i, data in enumerate([good[:20], good + b"garbage!", b"\x1f\x8b" + os.urandom(64)]):
        path = _write(tmp_path / f"c{i}.log.gz", data)
        refused(["logs", str(path)], path, r"corrupt gzip file")
    traffic = gzip.compress(b"uniform_decode: [{num_reqs: 1, count: 1}]\n")
    for i, (data, why) in enumerate(
        [
            (traffic[:20], r"it ends in the middle of the data"),
            (traffic + b"garbage!", r"Error -3 while decompressing data: incorrect header check"),
        ]
    ):
        path = _write(tmp_path / f"t{i}.yaml.gz", data)
        refused(["optimize", str(PR), "--traffic", str(path)], path, rf"corrupt gzip file \({why}")


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_a_huge_config_is_refused_from_its_size_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as fh:  # sparse: 3 GiB on paper, nothing on disk
        fh.truncate(3 << 30)
    run = refused(["plan", str(path)], path, r"is 3072 MiB, larger than a config file may be \(16 MiB\)")
    assert run.cpu_seconds < 1


def test_a_multi_gb_file_in_the_model_folder_is_never_read(tmp_path: Path) -> None:
    """`model:` naming a weights file read it whole as config.json (GiBs of RSS); a multi-GB
    config.json too. Weights next to a good config.json are not opened at all."""
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text((TINY / "config.json").read_text())
    with (model / "model.safetensors").open("wb") as fh:
        fh.truncate(4 << 30)
    cfg = tmp_path / "serve.yaml"
    cfg.write_text(f"model: {model}\n")
    run = run_cli(["plan", str(cfg), "--json"])
    assert run.code == 0 and problems(run, where=[str(cfg)]) == [], run.err
    cfg.write_text(f"model: {model / 'model.safetensors'}\n")
    refused(["plan", str(cfg)], cfg, r":model: cannot read .*model\.safetensors: is 4096 MiB, larger than")
    (model / "config.json").unlink()
    with (model / "config.json").open("wb") as fh:
        fh.truncate(4 << 30)
    cfg.write_text(f"model: {model}\n")
    refused(["plan", str(cfg)], cfg, r":model: cannot read .*config\.json: is 4096 MiB, larger than")


def test_an_alias_bomb_under_compilation_config_of_a_vllm_args_config(tmp_path: Path) -> None:
    """10^8 leaves under compilation_config, serialised as one flag value: 5 GiB of RSS."""
    bomb = "".join("  " + line + "\n" for line in BOMB.splitlines())
    path = tmp_path / "serve.yaml"
    path.write_text(f"compilation_config:\n{bomb}  cudagraph_capture_sizes: *h\n")
    run = refused(
        ["plan", "--vllm-args", f"serve {TINY} --config {path}"],
        "--vllm-args",
        r"^cgplan: error: --vllm-args:.*:compilation_config\.f: expands to more than 1,000,000 values",
    )
    assert run.cpu_seconds < 2


# ---------------------------------------------------------------- stdin


@pytest.fixture
def stdin_pipe(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """Standard input as a pipe whose write end the test holds."""
    r, w = os.pipe()
    reader = os.fdopen(r, "r")
    monkeypatch.setattr("sys.stdin", reader)
    monkeypatch.setattr(files, "STDIN_IDLE_TIMEOUT_S", 0.3)
    yield w
    reader.close()
    with contextlib.suppress(OSError):
        os.close(w)


def test_dash_reads_a_log_from_stdin(stdin_pipe: int) -> None:
    os.write(stdin_pipe, a_log().read_bytes()[:60_000])
    os.close(stdin_pipe)
    run = run_cli(["logs", "-"])
    assert run.code in (0, 1, 2) and "nothing on standard input" not in run.err, run.err
    assert problems(run, where=["-"]) == [], run.err


def test_a_silent_stdin_times_out(stdin_pipe: int) -> None:
    run = refused(["logs", "-"], "-", r"^cgplan: error: -: nothing on standard input for 0\.3 s")
    assert run.seconds < 5


def test_a_config_from_stdin_is_bounded_too(stdin_pipe: int) -> None:
    os.write(stdin_pipe, b"model: x\nmax_num_seqs: " + b"9" * 200 + b"\n")
    os.close(stdin_pipe)
    with pytest.raises(ReadError, match=r"^-:max_num_seqs: number out of range at line 2"):
        read_yaml("-")


# ---------------------------------------------------------------- the parsers, directly


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("a:\n  b: [1, 2, 1" + "0" * 30 + "]\n", r"^x:a\.b\[2\]: number out of range at line 2, column 13"),
        ("a: 1.0e+400\n", r"^x:a: not a finite number at line 1, column 4"),
        ("a: .nan\n", r"^x:a: not a finite number"),
        ("a: !!str 5\n", r"^x:a: YAML tags are not accepted, at line 1, column 4 \(got \"!!str\""),
        ("a: !!set {x}\n", r"^x:a: YAML tags are not accepted"),
        ("a: !custom 5\n", r"^x:a: YAML tags are not accepted"),
        (
            "a: " + "[" * 70 + "]" * 70 + "\n",
            r"^x:a\[0\].*: nested too deeply at line 1, column \d+ \(more than 64",
        ),
        ("a: 2001-13-45\n", r"^x:a: not a valid date at line 1, column 4"),
        ("a: &x [*x]\n", r"^x:a\[0\]: an alias refers to a node that contains it"),
        ("a: " + ":".join(["59"] * 60) + "\n", r"^x:a: number out of range"),  # sexagesimal, 10^106
        ("a: [1\n", r"^x: invalid YAML: line 2, column 1: "),
        ("? [a]\n: 1\n", r"^x: invalid YAML: "),  # unhashable key
    ],
)
def test_yaml_bounds_are_located(text: str, pattern: str) -> None:
    with pytest.raises(ReadError) as e:
        parse_yaml(text, "x")
    assert re.search(pattern, e.value.message), e.value.message


def test_yaml_plain_values_still_read() -> None:
    doc = parse_yaml(
        "a: 1\nb: 1.5\nc: x\nd: '5'\ne: [1, 2]\nf: null\ng: 2001-01-02\nh: 0x10\n<<: {i: 3}\n", "x"
    )
    assert doc["a"] == 1 and doc["d"] == "5" and doc["h"] == 16 and doc["i"] == 3
    assert parse_yaml("", "x") is None


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ('{"a": {"b": [1, 1e400]}}', r"^r:a\.b\[1\]: number out of range \(got 1e400"),
        ('{"a": 1' + "0" * 5000 + "}", r"^r:a: number out of range \(got a number of 5,001 characters"),
        ('{"a": 9223372036854775808}', r"^r:a: number out of range"),
        ('{"a": NaN}', r"^r:a: number out of range \(got NaN"),
        ("[" * 70 + "]" * 70, r"^r:\[0\].*: not JSON \(nested too deeply"),
        ("[" * 100_000 + "]" * 100_000, r"^r: not JSON \(nested too deeply"),
        ('{"a": 1,}', r"^r: not JSON \(line 1, column [89]: "),
    ],
)
def test_json_bounds_are_located(text: str, pattern: str) -> None:
    with pytest.raises(ReadError) as e:
        parse_json(text, "r")
    assert re.search(pattern, e.value.message), e.value.message


def test_utf8_errors_are_located(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.yaml", b"a: 1\nb: caf\xe9\n")
    with pytest.raises(
        ReadError, match=r"x\.yaml: not UTF-8 text: invalid continuation byte at line 2, column 7"
    ):
        read_yaml(path)
    assert read_text(path, errors="replace").endswith("caf\ufffd\n")
    assert read_yaml(_write(tmp_path / "bom.yaml", b"\xef\xbb\xbfa: 1\n")) == {"a": 1}


def test_the_c_loader_is_used_when_present() -> None:
    import yaml

    assert files.yaml_loader() is getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# ---------------------------------------------------------------- one human-readable integer


def test_human_readable_integers_agree_in_yaml_and_on_the_command_line(tmp_path: Path) -> None:
    """`1.5K` was 1536 in a YAML and refused on the command line; vLLM refuses both (its
    argparse reads a `--config` YAML value as it reads the flag)."""
    assert human_readable_int("25.6k") == 25600
    for bad in ("1.5K", "8_1k", "1e3k"):
        with pytest.raises(ValueError):
            human_readable_int(bad)
    path = tmp_path / "serve.yaml"
    path.write_text(f"model: {TINY}\nmax_num_batched_tokens: 1.5K\n")
    refused(
        ["plan", str(path)],
        path,
        r"serve\.yaml:max_num_batched_tokens: decimals are not allowed with binary suffixes; did you mean "
        r"1\.5k\? \(got '1\.5K'",
    )
    refused(
        ["plan", "--vllm-args", f"serve {TINY} --max-num-batched-tokens 1.5K"],
        "--vllm-args",
        r"--max-num-batched-tokens",
    )
    path.write_text(f"model: {TINY}\nmax_num_batched_tokens: 2K\n")
    run = run_cli(["plan", str(path), "--json"])
    assert run.code in (0, 1), run.err
    assert json.loads(run.out)["max_num_batched_tokens"] == 2048


def test_every_file_is_read_through_the_one_reader() -> None:
    """The reader bounds expansion itself; nothing else in cgplan decompresses."""
    root = ROOT_DIR / "cgplan"
    users = sorted(
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if re.search(
            r"^import (gzip|zlib)|gzip\.decompress|yaml\.safe_load|json\.loads?\(", p.read_text(), re.M
        )
    )
    # io/vllm_args and io/config_fix: JSON flag values, not files (io/logs streams a log through
    # io.files.gunzip_blocks); gpu/vllm_cpu: the engine's protocol lines on its stdout, not files
    # (its answer files go through io.files.read_json); gpu/vllm_oracle: runs inside the user's vLLM
    # interpreter with the standard library only, reading the configs cgplan wrote for it;
    # core/logs/plugin: the JSON inside one `[cgplan] counters:` line of a log io/logs already read
    assert users == [
        "core/logs/plugin.py",
        "gpu/vllm_cpu.py",
        "gpu/vllm_oracle.py",
        "io/config_fix.py",
        "io/files.py",
        "io/vllm_args.py",
    ], users
    # one gzip reader (io.files.gunzip_blocks): logs and traffic files both expand through it
    gzip_readers = sorted(
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if re.search(r"GzipFile|gzip\.open|decompressobj", p.read_text())
    )
    assert gzip_readers == ["io/files.py"], gzip_readers
