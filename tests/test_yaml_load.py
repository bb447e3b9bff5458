"""One YAML reader for every file cgplan reads (libyaml's parser, PyYAML's safe constructor)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from cgplan import yaml_load

ROOT = Path(__file__).resolve().parent.parent


def test_every_reader_goes_through_yaml_load() -> None:
    offenders = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in sorted((ROOT / "cgplan").rglob("*.py"))
        if p.name != "yaml_load.py"
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"\byaml\.(safe_load|load|full_load|unsafe_load)\(", line)
    ]
    assert not offenders, offenders


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")
def test_libyaml_parses() -> None:
    assert issubclass(yaml_load._LOADER, yaml.CSafeLoader)


def test_same_values_as_safe_load() -> None:
    text = "a: 0o17\nb: 0x1F\nc: 1_000\nd: .inf\ne: yes\nf: ~\ng: [1, {h: 2.5}]\ni: 2001-12-14\n"
    assert yaml_load.safe_load(text) == yaml.safe_load(text)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [("a: [1, 2\n", 2, 1), ("a: b: c\n", 1, 5), ("a:\n  - 1\n - 2\n", 3, 2), ("x: !foo 1\n", 1, 4)],
)
def test_errors_keep_line_and_column(text: str, line: int, column: int) -> None:
    with pytest.raises(yaml.MarkedYAMLError) as e:
        yaml_load.safe_load(text)
    assert e.value.problem_mark is not None
    assert (e.value.problem_mark.line + 1, e.value.problem_mark.column + 1) == (line, column)


def test_tags_are_refused() -> None:
    with pytest.raises(yaml.constructor.ConstructorError, match="could not determine a constructor"):
        yaml_load.safe_load("a: !!python/object/apply:os.system ['true']\n")


def test_aliases_are_shared_not_expanded() -> None:
    doc = yaml_load.safe_load("a: &a [1, 2]\nb: [*a, *a, *a]\n")
    assert all(x is doc["a"] for x in doc["b"])


@pytest.mark.parametrize("text", ["k: " + "[" * 5000 + "]" * 5000 + "\n", "- " * 3000 + "1\n"])
def test_deep_nesting_is_a_recursion_error(text: str) -> None:
    """What PyYAML's pure-Python parser raised, so every caller's 'nested too deeply' stays."""
    with pytest.raises(RecursionError):
        yaml_load.safe_load(text)
