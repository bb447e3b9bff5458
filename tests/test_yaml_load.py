"""One YAML reader for every file cgplan reads (cgplan/io/files.py: libyaml's parser, PyYAML's
safe constructor, checked before construction). Was cgplan/yaml_load.py (speed-18); its
behaviour is kept: the same values, line and column in errors, deep nesting 'nested too deeply'."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from cgplan.io import files
from cgplan.io.files import ReadError, parse_yaml

ROOT = Path(__file__).resolve().parent.parent


def test_every_reader_goes_through_the_one_reader() -> None:
    offenders = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in sorted((ROOT / "cgplan").rglob("*.py"))
        if p.relative_to(ROOT / "cgplan").as_posix() != "io/files.py"
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"\byaml\.(safe_load|load|full_load|unsafe_load)\(|\b[A-Z]\w*Loader\(", line)
    ]
    assert not offenders, offenders


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")
def test_libyaml_parses() -> None:
    assert issubclass(files.yaml_loader(), yaml.CSafeLoader)


def test_same_values_as_safe_load() -> None:
    text = "a: 0o17\nb: 0x1F\nc: 1_000\nd: 1.5e3\ne: yes\nf: ~\ng: [1, {h: 2.5}]\ni: 2001-12-14\n<<: {j: 1}\n"
    assert parse_yaml(text, "x") == yaml.safe_load(text)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [("a: [1, 2\n", 2, 1), ("a: b: c\n", 1, 5), ("a:\n  - 1\n - 2\n", 3, 2), ("x: !foo 1\n", 1, 4)],
)
def test_errors_keep_line_and_column(text: str, line: int, column: int) -> None:
    with pytest.raises(ReadError, match=rf"line {line}, column {column}\b"):
        parse_yaml(text, "x")


def test_aliases_are_shared_not_expanded() -> None:
    doc = parse_yaml("a: &a [1, 2]\nb: [*a, *a, *a]\n", "x")
    assert all(x is doc["a"] for x in doc["b"])


@pytest.mark.parametrize("text", ["k: " + "[" * 5000 + "]" * 5000 + "\n", "- " * 3000 + "1\n"])
def test_deep_nesting_is_nested_too_deeply(text: str) -> None:
    with pytest.raises(ReadError, match="nested too deeply"):
        parse_yaml(text, "x")


# ---------------------------------------------------------------- the plain reader (#18)

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_KEYS = [
    "model",
    "max_num_seqs",
    "a",
    "x-y",
    "_k",
    "on",
    "No",
    "null",
    "true",
    "y",
    "n",
    "k1",
    "0",
    "a b",
    "'q'",
]
_SCALARS = [
    "1",
    "0",
    "-3",
    "+7",
    "007",
    "0o17",
    "0x1F",
    "1_000",
    "1.5",
    "1e3",
    ".5",
    "0.85",
    "-0.5",
    "-0.0",
    "+1.25",
    "1.",
    "12345678901234567.5",
    ".inf",
    "0.33.0",
    "1.2.3.4",
    "2001-12-14",
    "1:20",
    "12345678901234567890",
    "999999999999999999",
    "yes",
    "No",
    "OFF",
    "on",
    "null",
    "Null",
    "~",
    "FULL",
    "configs/models/tiny-llama",
    "meta-llama/Llama-3.1-8B",
    "/abs/path",
    "_x",
    "-",
    "-x",
    "a:b",
    "a #c",
    "a b",
    '"q"',
    "'s'",
    '"a\\"b"',
    "'it''s'",
    '"é"',
    "&a",
    "*a",
    "!!str x",
    "=",
    "<<",
    "[1, 8, 16]",
    "[[1, 8, 16], [9, 64, 7]]",
    "[]",
    "[ ]",
    "[1,2]",
    "[1, 2,]",
    "[a, null, yes]",
    "[1, [2",
    "{a: 1}",
    "|",
    ">",
    "%x",
    "@x",
    "`x`",
    "?x",
    "x:",
    "1.0.",
    "a\tb",
]
_COMMENTS = ["", "  # a comment", " #→ unicode", " #", "#no-space", "  # tab\there", " # \u2028"]


@st.composite
def _documents(draw: st.DrawFn, depth: int = 0) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        indent = " " * draw(st.sampled_from([0, 0, 0, 0, 1, 2]))
        key = draw(st.sampled_from(_KEYS))
        if depth < 2 and draw(st.integers(0, 3)) == 0:
            child = draw(_documents(depth + 1))
            pad = " " * draw(st.sampled_from([2, 2, 4, 0]))
            lines.append(f"{indent}{key}:{draw(st.sampled_from(_COMMENTS))}")
            lines += [pad + indent + c if c else c for c in child.split("\n")]
        else:
            sep = draw(st.sampled_from([": ", ": ", ":  ", ":", ":\t"]))
            value = draw(st.sampled_from(_SCALARS)) if sep != ":" else ""
            lines.append(f"{indent}{key}{sep}{value}{draw(st.sampled_from(_COMMENTS))}")
        if draw(st.integers(0, 4)) == 0:
            lines.append(draw(st.sampled_from(["", "# comment", "  # indented", "---", "- 1", "   "])))
    return "\n".join(lines)


def _typed(value: object) -> object:
    """The value with every scalar's type (True == 1 in Python; a reader must not swap them)."""
    if isinstance(value, dict):
        return ("map", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("seq", [_typed(v) for v in value])
    return (type(value).__name__, value)


@settings(max_examples=1500, deadline=None)
@given(_documents(), st.booleans())
def test_the_plain_reader_gives_pyyamls_value(text: str, newline: bool) -> None:
    """Every document the plain reader reads, PyYAML reads to the same value (types included);
    everything else (PyYAML's errors among it) is left to PyYAML."""
    text += "\n" if newline else ""
    try:
        plain = files._plain_yaml(text)
    except files._NotPlain:
        return
    assert _typed(plain) == _typed(files._pyyaml_document(text, "x")), text


@pytest.mark.parametrize(
    "text",
    [
        "model: a\nmax_num_seqs: 1024\n",
        "speculative_config:\n  method: eagle\n  per_batch: [[1, 8, 16], [9, 64, 7]]\n",
        "# comment\ncgplan:\n  vllm_version: 0.33.0   # the release\n  platform: hopper\nx:\ny: true\n",
        "a:\n  b:\n    c: 'quoted'\n  d: \"dq\"\ne: null\n",
    ],
)
def test_the_plain_reader_reads_configs(text: str) -> None:
    assert _typed(files._plain_yaml(text)) == _typed(yaml.safe_load(text))


def test_the_repositorys_configs_read_alike() -> None:
    """Every YAML file of configs/ reads to the same value through the plain reader or PyYAML; the
    plan benchmark's config and most configs are read without PyYAML."""
    plain = 0
    paths = sorted((ROOT / "configs").rglob("*.yaml"))
    for path in paths:
        text = path.read_text()
        try:
            value = files._plain_yaml(text)
        except files._NotPlain:
            continue
        plain += 1
        assert _typed(value) == _typed(files._pyyaml_document(text, str(path))), path
    files._plain_yaml((ROOT / "benchmarks/configs/eagle-k16-mns1024-dyn4.yaml").read_text())
    assert plain >= len(paths) // 2, (plain, len(paths))
