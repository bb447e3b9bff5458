"""One input per failure the fuzzer found: each ended in a traceback, a multi-line error, or a hang."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.fuzz.harness import EXAMPLES, H200, MODELS, problems, run_cli

PR = EXAMPLES / "pr50488-eagle-k16.yaml"
TINY = MODELS / "tiny-llama"


def refused(args: list[str], where: Path | str, pattern: str) -> str:
    """Run `cgplan ARGS`: exit 2, one located line matching `pattern`, no traceback."""
    run = run_cli(args)
    assert problems(run, where=[str(where)]) == [], (run.escaped, run.err)
    assert run.code == 2, (run.code, run.err)
    assert re.search(pattern, run.err), run.err
    return run.err


def config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "serve.yaml"
    path.write_text(f"model: {TINY}\n" + body, encoding="utf-8", errors="surrogatepass")
    return path


# ---------------------------------------------------------------- configs


@pytest.mark.parametrize(
    ("body", "pattern"),
    [
        # a key with a line break (or another unprintable character) gave a two-line error
        ('"max_num_seqs\\nx": 1\n', r":'max_num_seqs\\nx': unknown key"),
        ('"\\x1c": 1\n', r":'\\x1c': unknown key"),
        ('cgplan: {"\\u2028": 1}\n', r":cgplan\.'\\u2028': unknown key"),
        # a key that starts with "--" was taken for a command-line option: the file was not named
        ("--max-graphs: 1\n", r"serve\.yaml:'--max-graphs': unknown key"),
        # int(float("inf")): OverflowError escaped
        ("max_num_seqs: infk\n", r":max_num_seqs: must be an integer \(got 'infk'"),
        ("max_num_seqs: 1e400k\n", r":max_num_seqs: must be an integer"),
        # "²".isdigit() is True but int("²") fails: ValueError escaped
        ("optimization_level: O²\n", r":optimization_level: out of range \(got 'O²'"),
        # a null entry or "8k" entry: int(None) / int("8k") escaped after the entry check
        (
            "compilation_config: {cudagraph_capture_sizes: [1, null]}\n",
            r"cudagraph_capture_sizes\[1\]: must be",
        ),
        # ~user with no such user: RuntimeError from expanduser escaped
        ("", None),
        # a folder name longer than the OS allows: OSError from is_dir escaped
        ("", None),
        # a self-referencing value: json.dumps raised ValueError while building the message
        ("max_num_seqs: &r [*r]\n", r":max_num_seqs\[0\]: an alias refers to a node that contains it"),
        # an alias bomb: json.dumps would expand 10^8 leaves to quote it
        (
            "a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
            "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
            "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
            "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]\n",
            None,
        ),
        # yaml.safe_load itself raises ValueError past 4,300 digits, and for a date like 2001-13-45
        (
            "max_num_seqs: " + "9" * 5000 + "\n",
            r"serve\.yaml:max_num_seqs: number out of range at line 2, column 15 \(got an integer of 5,000",
        ),
        (
            "max_num_seqs: 2001-13-45\n",
            r"serve\.yaml:max_num_seqs: not a valid date at line 2.*month must be",
        ),
        (
            "max_num_seqs: " + "9" * 4000 + "\n",
            r":max_num_seqs: number out of range at line 2, column 15 \(got an integer of 4,000 characters",
        ),
    ],
    ids=[
        "newline-key",
        "fs-key",
        "line-separator-key",
        "option-like-key",
        "infk",
        "1e400k",
        "superscript-level",
        "null-size",
        "unknown-home",
        "long-model-path",
        "cyclic-value",
        "alias-bomb",
        "5000-digit-int",
        "bad-date",
        "4000-digit-int",
    ],
)
def test_config_regression(
    tmp_path: Path, body: str, pattern: str | None, request: pytest.FixtureRequest
) -> None:
    name = request.node.callspec.id
    if name == "unknown-home":
        path = tmp_path / "serve.yaml"
        path.write_text("model: ~no-such-user-cgplan/models/x\n")
        pattern = r":model: cannot expand the home folder \(got '~no-such-user-cgplan"
    elif name == "long-model-path":
        path = tmp_path / "serve.yaml"
        path.write_text("model: " + "a" * 5000 + "\n")
        pattern = r":model: cannot use the model path: File name too long"
    elif name == "alias-bomb":
        path = tmp_path / "serve.yaml"
        bomb = "".join("  " + line + "\n" for line in body.splitlines())
        path.write_text(f"tokenizer:\n{bomb}model: {TINY}\nmax_num_seqs: *h\n")
        pattern = r":tokenizer\.f: expands to more than 1,000,000 values at line 7, column 6"
    else:
        path = config(tmp_path, body)
    assert pattern is not None
    refused(["plan", str(path)], path, pattern)


def test_size_entry_in_human_form_is_accepted(tmp_path: Path) -> None:
    """["8k"] passed the entry check, then int("8k") raised ValueError."""
    path = config(
        tmp_path, "max_num_batched_tokens: 16384\ncompilation_config: {cudagraph_capture_sizes: [1, 8k]}\n"
    )
    run = run_cli(["plan", str(path), "--json"])
    assert problems(run, where=[str(path)]) == [] and run.code == 0, run.err
    assert json.loads(run.out)["capture_sizes"] == [1, 8000]


@pytest.mark.parametrize(
    ("model_json", "pattern"),
    [
        # Located by its key path, or not at all where json.loads itself hits the recursion limit.
        ("[" * 3000 + "]" * 3000, r":model: cannot read .*config\.json:(\[0\].*: )? ?not JSON \(nested too"),
        (
            '{"hidden_size": ' + "9" * 5000 + "}",
            r":model: cannot read .*config\.json:hidden_size: number out of range \(got a number of 5,000",
        ),
    ],
    ids=["deep", "5000-digits"],
)
def test_model_config_json_regression(tmp_path: Path, model_json: str, pattern: str) -> None:
    """json.loads raised RecursionError / ValueError (not JSONDecodeError) and escaped."""
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(model_json)
    path = tmp_path / "serve.yaml"
    path.write_text(f"model: {tmp_path / 'm'}\n")
    refused(["plan", str(path)], path, pattern)


@pytest.mark.parametrize("archs", ["9", '{"a": 1}', "[]", "[7]"])
def test_model_architectures_of_any_shape(tmp_path: Path, archs: str) -> None:
    """`architectures: 9` raised TypeError ('int' object is not subscriptable)."""
    (tmp_path / "m").mkdir()
    hf = json.loads((TINY / "config.json").read_text())
    (tmp_path / "m" / "config.json").write_text(
        json.dumps(hf)[:-1] + f', "architectures": {archs}, "torch_dtype": [1]}}'
    )
    path = tmp_path / "serve.yaml"
    path.write_text(f"model: {tmp_path / 'm'}\n")
    run = run_cli(["plan", str(path), "--json"])
    assert problems(run, where=[str(path)]) == [] and run.code == 0, run.err


# ---------------------------------------------------------------- reports


def report(tmp_path: Path, edit: dict[str, object] | None = None, *, text: str | None = None) -> Path:
    path = tmp_path / "r.json"
    if text is None:
        doc = json.loads(run_cli(["plan", str(PR), "--json"]).out)
        doc.update(edit or {})
        text = json.dumps(doc)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("edit", "text", "pattern"),
    [
        # json.loads raises ValueError (not JSONDecodeError) past 4,300 digits
        (
            None,
            '{"schema_version": 1, "max_num_seqs": ' + "9" * 5000 + "}",
            r"r\.json:max_num_seqs: number out of range \(got a number of 5,000 characters",
        ),
        # int(float("inf")): OverflowError escaped
        ({"uniform_decode_query_len": float("inf")}, None, r"uniform_decode_query_len: number out of range"),
        # max_num_seqs 10^18 and a range to 10^18: the per-request walk (10^18 steps) never ended
        (
            {
                "max_num_seqs": 10**18,
                "uniform_decode": {
                    "17": [{"from_reqs": 1, "to_reqs": 10**18, "mode": "FULL", "padded_tokens": 1}]
                },
            },
            None,
            r"max_num_seqs: expected an integer from 1 to 10,000,000",
        ),
        # overlapping ranges or lookup rows multiply the walk
        (
            {"uniform_decode": {"17": [{"from_reqs": 1, "to_reqs": 9, "mode": "FULL"}] * 2}},
            None,
            r"uniform_decode\.17\[1\]: ranges must be sorted and must not overlap",
        ),
        (
            {
                "max_num_seqs": 10**7,
                "uniform_decode": {
                    "4": [{"from_reqs": 1, "to_reqs": 10**7, "mode": "FULL", "padded_tokens": 4}]
                },
                "dynamic_sd": {"lookup": [[1, 10**7, 3]] * 200},  # 200 x 10^7 steps
            },
            None,
            r"dynamic_sd\.lookup\[1\]: rows must be sorted",
        ),
        (
            {"dynamic_sd": {"lookup": [[1, 2, float("inf")]]}},
            None,
            r"dynamic_sd\.lookup\[0\]\[2\]: number out of range \(got Infinity",
        ),
        # names reach rich tables: "[/]" raised MarkupError
        ({"vllm_version": "x[/]"}, None, r"vllm_version: expected a name"),
        ({"graphs": {"x[/]": [{"mode": "FULL", "num_tokens": 8}]}}, None, r"graphs: expected a name"),
        ({"config_fingerprint": ["a"]}, None, r"config_fingerprint: expected a name"),
        ({"uniform_decode": {"٣": []}}, None, r"uniform_decode: keys must be query lengths"),
    ],
    ids=[
        "5000-digits",
        "inf-query-len",
        "huge-range",
        "overlapping-ranges",
        "overlapping-lookup",
        "inf-k",
        "markup-version",
        "markup-family",
        "list-fingerprint",
        "unicode-digit-key",
    ],
)
def test_report_regression(
    tmp_path: Path, edit: dict[str, object] | None, text: str | None, pattern: str
) -> None:
    path = report(tmp_path, edit, text=text)
    refused(["diff", str(path), str(path)], path, pattern)
    refused(["gate", str(path)], path, pattern)


def capture_report(tmp_path: Path, **measured: object) -> Path:
    doc = json.loads((H200 / "tiny-nospec-vllm.json").read_text())
    doc["measured"].update(measured)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    return path


def test_capture_report_uniform_decode_not_a_mapping(tmp_path: Path) -> None:
    """`measured.uniform_decode: [1]` raised AttributeError ('list' has no attribute 'items')."""
    path = capture_report(tmp_path, uniform_decode=[1])
    refused(["gate", str(path)], path, r"measured\.uniform_decode: expected \{query_len")


def test_capture_report_absurd_figures_are_refused(tmp_path: Path) -> None:
    """capture_wall_s 10^400 raised OverflowError in float(); a pool of 10^400 bytes in the GiB division.
    (They were dropped; the one reader now refuses any number past 64 bits where it stands.)"""
    doc = json.loads((H200 / "tiny-nospec-vllm.json").read_text())
    doc["measured"]["capture_wall_s"] = "HUGE"
    doc["measured"]["graph_nvml_total_bytes"] = "HUGE"
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc).replace('"HUGE"', "1" + "0" * 400))
    policy = tmp_path / "p.yaml"
    policy.write_text("max_capture_seconds: 10\nmax_pool_gib: 1\n")
    refused(["gate", str(path), "--policy", str(policy)], path, r"c\.json:measured\.\w+: number out of range")


# ---------------------------------------------------------------- gate policies


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        # RecursionError from the YAML composer escaped (config.py caught it, policy.py did not)
        (
            "max_pool_gib: " + "[" * 5000 + "]" * 5000 + "\n",
            r": invalid YAML: nested too deeply",
        ),
        # a key with a line break: a two-line error
        ('"\\x1c": 1\n', r":'\\x1c': unknown policy key"),
        ('"max_pool_gib\\n": 1\n', r":'max_pool_gib\\n': unknown policy key; did you mean 'max_pool_gib'"),
        ("--max_pool_gib: 1\n", r"policy\.yaml:'--max_pool_gib': unknown policy key"),
        # float(10**400): OverflowError escaped
        (
            "max_pool_gib: " + "1" + "0" * 400 + "\n",
            r":max_pool_gib: number out of range at line 1, column 15",
        ),
        # str() of a 5,000-digit key raised ValueError while looking for a close match
        ("? " + "9" * 4000 + "\n: 1\n", r"policy\.yaml:.*: number out of range at line 1, column 3"),
        ("? " + "9" * 5000 + "\n: 1\n", r"policy\.yaml:.*: number out of range at line 1, column 3"),
        # "[/]" in a family name reached a rich table as markup
        ("max_graphs_per_family: {'x[/]': 3}\n", r":max_graphs_per_family\.x\[/\]: not a graph family name"),
        # repr() of an alias bomb
        (
            "a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
            "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
            "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
            "no_eager_uniform_decode: *f\n",
            r":f: expands to more than 1,000,000 values",
        ),
        (
            "no_eager_uniform_decode: &r [*r]\n",
            r":no_eager_uniform_decode\[0\]: an alias refers to a node that contains it",
        ),
    ],
    ids=[
        "deep",
        "fs-key",
        "newline-key",
        "option-like-key",
        "huge-float",
        "4000-digit-key",
        "5000-digit-key",
        "markup-family",
        "alias-bomb",
        "cyclic",
    ],
)
def test_policy_regression(tmp_path: Path, text: str, pattern: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    refused(["gate", str(PR), "--policy", str(path)], path, pattern)


def test_policy_not_utf8(tmp_path: Path) -> None:
    """UnicodeDecodeError is not an OSError: it escaped load_policy."""
    path = tmp_path / "policy.yaml"
    path.write_bytes(b"max_pool_gib: \xff\xfe\n")
    refused(
        ["gate", str(PR), "--policy", str(path)],
        path,
        r": not UTF-8 text: invalid start byte at line 1, column 15",
    )


# ---------------------------------------------------------------- sweep --set


@pytest.mark.parametrize(
    ("spec", "pattern"),
    [
        # list(range(1, 10**20)) was built before the grid size was checked: MemoryError / hang
        ("max_num_seqs=1..99999999999999999999", r"--set: max_num_seqs: values must be from 1 to 10,000,000"),
        ("max_num_seqs=1..10000000", r"--set: max_num_seqs: 10,000,000 values; at most 200,000"),
        ("max_num_batched_tokens=1..10000000:1", r"10,000,000 values; at most 200,000"),
        # LEVEL_DEFAULT_MODE[5]: KeyError escaped from the core
        ("optimization_level=5", r"--set: optimization_level: values must be from 0 to 3 \(got 5\)"),
        # unknown strings reached the core (an unknown runner planned silently as auto)
        ("cgplan.model_runner=v3", r"--set: cgplan\.model_runner: unknown value 'v3'"),
        (
            "compilation_config.cudagraph_mode=FULLY",
            r"--set: compilation_config\.cudagraph_mode: unknown value",
        ),
        ("performance_mode=fast", r"--set: performance_mode: unknown value 'fast'"),
        ("cgplan.platform=tpu", r"--set: cgplan\.platform: unknown platform"),
        # int() takes "٣" and "1_0"; a 5,000-digit value raised inside int()
        ("max_num_seqs=٣", r"--set: max_num_seqs: expected integers"),
        ("max_num_seqs=" + "9" * 5000, r"--set: max_num_seqs: expected integers"),
        # a product of axes over the core's limit
        ("max_num_seqs=1..1000", None),
    ],
    ids=[
        "range-to-1e20",
        "range-10m",
        "range-10m-step",
        "level-5",
        "runner-v3",
        "mode-typo",
        "perf-typo",
        "platform-tpu",
        "arabic-digit",
        "5000-digits",
        "product",
    ],
)
def test_sweep_regression(spec: str, pattern: str | None) -> None:
    args = ["sweep", str(PR), f"--set={spec}"]
    if pattern is None:
        args.append("--set=max_model_len=1..1000")
        pattern = r"--set: 1,000,000 plans requested; at most 200,000 per sweep"
    run = run_cli(args)
    assert run.cpu_seconds < 2, run.cpu_seconds
    refused(args, "--set", pattern)


def test_sweep_platform_takes_gpu_names() -> None:
    run = run_cli(["sweep", str(PR), "--set=cgplan.platform=H200,B200", "--json"])
    assert run.code == 0, run.err
    assert [r["first"] for r in json.loads(run.out)["ranges"]] == ["hopper", "blackwell"]


# ---------------------------------------------------------------- --output


def test_output_into_a_folder_leaves_no_temporary_file(tmp_path: Path) -> None:
    """os.replace onto a folder failed after the temporary file was written; it stayed behind."""
    target = tmp_path / "out"
    target.mkdir()
    refused(["plan", str(PR), "--json", "-o", str(target)], target, r"cannot write")
    assert list(tmp_path.iterdir()) == [target] and list(target.iterdir()) == []


def test_output_to_unknown_home_is_one_line() -> None:
    """expanduser() raised RuntimeError for ~user with no such user."""
    refused(["plan", str(PR), "-o", "~no-such-user-cgplan/x.json"], "~no-such-user-cgplan", r"cannot write")


# ---------------------------------------------------------------- outside this change's files


@pytest.mark.parametrize("command", [["plan"], ["gate"], ["diff", "--vllm-version", "0.26.0..0.33.0"]])
def test_markup_in_a_file_name(tmp_path: Path, command: list[str]) -> None:
    """A config at `x[/]y.yaml` (a folder `x[` holding `]y.yaml`): rich.errors.MarkupError."""
    (tmp_path / "x[").mkdir()
    path = tmp_path / "x[/]y.yaml"
    path.write_text(PR.read_text().replace("../models", str(MODELS.parent / "models")))
    run = run_cli([command[0], str(path), *command[1:]])
    assert problems(run, where=[str(path)]) == [], run.escaped


def test_full_fuzz_hang_max_num_seqs_1m(tmp_path: Path) -> None:
    """The full fuzz run (FUZZ_SEED=2020, parts config:3 and config:4: 13 inputs) found plans still
    running after 30 s: max_num_seqs 1M priced the step latency of every request count (24 to 90 s
    of CPU); priced by runs now (speed-18's change, merged meanwhile). (`max_num_seqs: 1M` as found
    is refused now, as vLLM's int() refuses it (#28): the million is written out.)"""
    path = tmp_path / "serve.yaml"
    path.write_text(
        "max_num_seqs: 1000000\nmax_num_batched_tokens: 1M\ntensor_parallel_size: 1\nenforce_eager: false\n"
        "optimization_level: 2\ncompilation_config:\n  cudagraph_capture_sizes:\n  - 8k\n  - '2_048'\n"
        f"  pass_config:\n    enable_sp: false\n  mode: 3\ncgplan: 0\nmodel: {MODELS / 'med-llama'}\n"
    )
    run = run_cli(["plan", str(path)])
    assert run.code == 0 and problems(run, where=[str(path)]) == [], (run.escaped, run.err)
    assert run.cpu_seconds < 10


@pytest.mark.parametrize("version", ["0.²", "0.33.²", "٣.1"])
def test_full_fuzz_vllm_version_with_unicode_digits(version: str) -> None:
    """The full fuzz run (FUZZ_SEED=2020, config:4): `--vllm-version 0.²` escaped as a ValueError
    ("²".isdigit() is True, int("²") fails) in the release lookup."""
    run = run_cli(["plan", str(PR), "--vllm-version", version])
    assert run.code == 2 and problems(run, where=["--vllm-version"]) == [], (run.escaped, run.err)
