"""One YAML reader for every file cgplan reads (cgplan/io/files.py: libyaml's parser, PyYAML's
safe constructor, checked before construction). Was cgplan/yaml_load.py (speed-18); its
behaviour is kept: the same values, line and column in errors, deep nesting 'nested too deeply'."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from cgplan.io import files
from cgplan.io.files import ReadError, parse_yaml
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR


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


# ---------------------------------------------------------------- the plain reader (issue 18)

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


# ---------------------------------------------------------------- block sequences and flow maps (issue 18)

_ENTRIES = [
    "1",
    "-1",
    "- 1",
    "-  2",
    "x",
    "yes",
    "'q'",
    "[1, 2]",
    "[{a: 1}, {b: [2, 3]}]",
    "{num_reqs: 18, count: 4}",
    "{num_tokens: 1, count: 369}",
    "{a: 1,b: 2}",
    "{a:  1 ,  b: x}",
    "{ a: 1 }",
    "{}",
    "{ }",
    "{a: [1, {b: c}]}",
    "{a: 'x', b: \"y\"}",
    "{a: 0.85, b: -0.5, c: 0.33.0}",
    "{a: {b: {c: 1}}}",
    "a: 1",
    "a:",
    "a: [1, 2]",
    "k1: {x: 1}",
]
"""Entries the plain reader reads (alone)."""
_ODD_ENTRIES = [
    "- -",
    "-",
    "- # c",
    "{a: 1, a: 2}",
    "{on: 1}",
    "{null: 1}",
    "{a: 1,}",
    "{a: 1 2}",
    "{a: 1}, {b: 2}",
    "{'a': 1}",
    "{a:1}",
    "{a: }",
    "{a: 1.5e3}",
    "{a: 1",
    "{a: 1} x",
    "{a: 1}#c",
    "{a: 1.0}",
    "{a: 2001-12-14}",
    "{a: 0x1F, b: ~}",
    "[a: 1]",
    "a b",
    "&x 1",
    "!!str 1",
]
"""Entries PyYAML reads otherwise, or refuses."""


def _entry(draw: st.DrawFn) -> str:
    return draw(st.sampled_from(_ODD_ENTRIES if draw(st.integers(0, 7)) == 0 else _ENTRIES))


@st.composite
def _sequences(draw: st.DrawFn, depth: int = 0) -> list[str]:
    """A block sequence's lines at indent 0 (entries of `_ENTRIES`, nested sequences and compact
    mappings, continuation keys, odd indents and comments)."""
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        entry = _entry(draw)
        comment = draw(st.sampled_from(_COMMENTS)) if draw(st.integers(0, 3)) == 0 else ""
        lines.append(f"-{draw(st.sampled_from([' ', ' ', '  ']))}{entry}{comment}")
        width = len(lines[-1]) - len(lines[-1].lstrip("- ")) if entry[:1].isalpha() else 2
        if entry.endswith(":") and depth < 2 and draw(st.booleans()):
            lines += [" " * width + c for c in draw(_sequences(depth + 1))]
        elif ":" in entry and not entry.startswith(("{", "[", "'")) and draw(st.booleans()):
            key = draw(st.sampled_from(["b", "c", "a", "on"]))
            lines.append(" " * draw(st.sampled_from([width, width, width + 1, 0])) + f"{key}: 2")
        if draw(st.integers(0, 7)) == 0:
            lines.append(draw(st.sampled_from(["", "# comment", "  - 9", " - 9", "x: 1", "   "])))
    return lines


@st.composite
def _sequence_documents(draw: st.DrawFn) -> str:
    lines = []
    keys = ["uniform_decode", "mixed", "a", "x-y", "on", "b"]
    for key in draw(st.lists(st.sampled_from(keys), min_size=1, max_size=3, unique=True)):
        if draw(st.integers(0, 3)) == 0:
            lines.append(f"{key}: {_entry(draw)}")
            continue
        lines.append(f"{key}:{draw(st.sampled_from(_COMMENTS)) if draw(st.integers(0, 3)) == 0 else ''}")
        pad = " " * draw(st.sampled_from([0, 0, 2, 2, 4, 1]))
        lines += [pad + line if line else line for line in draw(_sequences())]
    return "\n".join(lines)


@settings(max_examples=1000, deadline=None)
@given(_sequence_documents(), st.booleans())
def test_the_plain_reader_gives_pyyamls_value_for_sequences(text: str, newline: bool) -> None:
    """Block sequences (indented or not, `- - x`, `- key: v`) of flow mappings and lists: every
    document the plain reader reads, PyYAML reads to the same value; the rest is left to it."""
    text += "\n" if newline else ""
    try:
        plain = files._plain_yaml(text)
    except files._NotPlain:
        return
    assert _typed(plain) == _typed(files._pyyaml_document(text, "x")), text


@pytest.mark.parametrize(
    "text",
    [
        "mixed:\n  - {num_tokens: 1, count: 369}\n  - {num_tokens: 2, count: 218}\n",
        "uniform_decode:\n- {num_reqs: 18, count: 4}\nmixed:\n- {num_tokens: 1, count: 2}\n",
        "a:\n  b:\n  - 1\n  - [2, 3]\n  c: x\nd: 1\n",
        "s:\n  - - 1\n    - 8\n    - 3\n  - - 9\n    - 32\n    - 1\n",
        "s:\n- - 1\n  - 8\n- - 9\n  - 1\n",
        "s:\n- x: 1\n  y: [1, 2]\n- x: 3\n  z:\n    w: 1\n  v:\n  - 5\nt: 2\n",
        "speculative_config: {method: eagle, num_speculative_tokens: 3}\n",
        "m: {a: [1, {b: c}], d: 'q', e: \"r\", f: {}}  # c\n",
        "l: [{a: 1}, {b: [2, 3]}]\n",
    ],
)
def test_the_plain_reader_reads_sequences_and_flow_maps(text: str) -> None:
    assert _typed(files._plain_yaml(text)) == _typed(yaml.safe_load(text))


@pytest.mark.parametrize(
    "text",
    [
        "a:\n  - 1\n  b: 2\n",  # a key at a sequence's own (deeper) indent: PyYAML's error
        "a:\n- 1\n  - 2\n",  # a deeper entry: a plain scalar's continuation in PyYAML
        "a:\n- \n",  # an empty entry: None
        "a: 1\n- 2\n",  # an entry in a mapping
        "a:\n- {x: 1, x: 2}\n",  # a repeated key: PyYAML keeps the last
        "a:\n- {x: 1,\n   y: 2}\n",  # a flow mapping over two lines
        "a:\n- {x: 1}\n" * 1 + "- " + "[" * 20 + "]" * 20 + "\n",  # deeper than the plain reader goes
    ],
)
def test_the_plain_reader_leaves_the_rest_to_pyyaml(text: str) -> None:
    with pytest.raises(files._NotPlain):
        files._plain_yaml(text)


def test_the_plain_reader_counts_nodes_as_the_checker(monkeypatch: pytest.MonkeyPatch) -> None:
    """A document past MAX_NODES goes to PyYAML, which refuses it: the plain reader never reads a
    document the checked reader refuses for its size."""
    text = "mixed:\n" + "  - {num_tokens: 1, count: 2}\n" * 4  # 1 + 1 + 1 + 4 * 5 = 23 nodes
    monkeypatch.setattr(files, "MAX_NODES", 23)
    assert files._plain_yaml(text)
    monkeypatch.setattr(files, "MAX_NODES", 22)
    with pytest.raises(files._NotPlain):
        files._plain_yaml(text)
    with pytest.raises(ReadError, match="expands to more than 22 values"):
        parse_yaml(text, "x")


def _yaml_files() -> list[Path]:
    return sorted(
        p
        for top in ("configs", "tests", "benchmarks", "scripts")
        for p in (ROOT / top).rglob("*")
        if p.suffix in (".yaml", ".yml") and p.is_file()
    )


def test_every_yaml_file_reads_as_safe_load() -> None:
    """Every YAML file of the repository (configs, test fixtures, benchmarks) reads through
    `parse_yaml` to yaml.safe_load's value, types included, or is refused where safe_load fails."""
    paths = _yaml_files()
    assert len(paths) > 250, len(paths)
    for path in paths:
        text = path.read_text()
        try:
            expected = yaml.safe_load(text)
        except yaml.YAMLError:
            with pytest.raises(ReadError):
                parse_yaml(text, str(path))
            continue
        assert _typed(parse_yaml(text, str(path))) == _typed(expected), path


def test_traffic_files_are_read_without_pyyaml() -> None:
    """The optimiser's traffic histograms (block sequences of flow mappings) are read by the plain
    reader: PyYAML's constructor took 36-112 ms for 31-59 KiB of them (issue 18). The shipped ones are
    JSON (scripts/make_traffic.py); each is read here as the YAML a person writes."""
    paths = sorted((ROOT / "configs" / "traffic").glob("*.json"))
    assert paths
    for path in paths:
        doc = json.loads(path.read_text())
        text = "uniform_decode:\n" + "".join(
            f"  - {{num_reqs: {e['num_reqs']}, count: {e['count']}}}\n" for e in doc["uniform_decode"]
        )
        text += "mixed:\n" + "".join(
            f"  - {{num_tokens: {e['num_tokens']}, count: {e['count']}}}\n" for e in doc["mixed"]
        )
        assert _typed(files._plain_yaml(text)) == _typed(yaml.safe_load(text)), path
        assert yaml.safe_load(text)["uniform_decode"] == doc["uniform_decode"], path
