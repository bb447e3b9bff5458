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
    assert issubclass(files._Loader, yaml.CSafeLoader)


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
