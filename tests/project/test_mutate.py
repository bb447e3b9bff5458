"""scripts/mutate.py (`make mutate`): the mutants it makes of a tiny module, and the file always put back."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.paths import ROOT_DIR

_spec = importlib.util.spec_from_file_location("mutate", ROOT_DIR / "scripts" / "mutate.py")
assert _spec is not None and _spec.loader is not None
mutate: Any = importlib.util.module_from_spec(_spec)
sys.modules["mutate"] = mutate
_spec.loader.exec_module(mutate)

TINY = '''def f(a: int, b: int) -> bool:
    """Doc 1 < 2."""
    if not a:
        return a < b and b == 3
    return a + b * 2 > 0 or True
'''


def test_the_mutants_of_a_tiny_module() -> None:
    got = {(m.line, m.operator, m.original, m.mutated) for m in mutate.mutants_of(TINY, "tiny.py")}
    assert got == {
        (3, "if condition->True", "not a", "True"),
        (3, "if condition->False", "not a", "False"),
        (3, "remove not", "not a", "(a)"),
        (4, "return->True", "a < b and b == 3", "True"),
        (4, "return->False", "a < b and b == 3", "False"),
        (4, "boolop And->Or", "a < b and b == 3", "(a < b or b == 3)"),
        (4, "compare Lt->LtE", "a < b", "(a <= b)"),
        (4, "compare Eq->NotEq", "b == 3", "(b != 3)"),
        (4, "int +1", "3", "4"),
        (4, "int -1", "3", "2"),
        (5, "return->True", "a + b * 2 > 0 or True", "True"),
        (5, "return->False", "a + b * 2 > 0 or True", "False"),
        (5, "boolop Or->And", "a + b * 2 > 0 or True", "(a + b * 2 > 0 and True)"),
        (5, "compare Gt->GtE", "a + b * 2 > 0", "(a + b * 2 >= 0)"),
        (5, "arith Add->Sub", "a + b * 2", "(a - b * 2)"),
        (5, "arith Mult->FloorDiv", "b * 2", "(b // 2)"),
        (5, "int +1", "2", "3"),
        (5, "int -1", "2", "1"),
        (5, "int +1", "0", "1"),
        (5, "int -1", "0", "-1"),
        (5, "bool True->False", "True", "False"),
    }
    for m in mutate.mutants_of(TINY, "tiny.py"):
        mutated = m.apply(TINY)
        assert mutated != TINY
        compile(mutated, "tiny.py", "exec")


def test_the_sample_is_seeded() -> None:
    every = mutate.mutants_of(TINY, "tiny.py")
    assert mutate.sample(every, 1, 5, "tiny.py") == mutate.sample(every, 1, 5, "tiny.py")
    assert len(mutate.sample(every, 1, 5, "tiny.py")) == 5
    assert mutate.sample(every, 1, 5, "tiny.py") != mutate.sample(every, 2, 5, "tiny.py")


def test_the_file_is_put_back_even_when_the_run_fails(tmp_path: Path) -> None:
    file = tmp_path / "tiny.py"
    file.write_text(TINY)
    mutant = next(m for m in mutate.mutants_of(TINY, "tiny.py") if m.operator == "compare Lt->LtE")
    with pytest.raises(KeyboardInterrupt), mutate.mutated_file(file, mutant):
        assert "a <= b" in file.read_text()
        raise KeyboardInterrupt
    assert file.read_text() == TINY


def test_equivalents_are_read_by_key(tmp_path: Path) -> None:
    path = tmp_path / "eq.json"
    path.write_text('{"equivalents": [{"key": "k", "reason": "why"}]}')
    assert mutate.load_equivalents(path) == {"k": "why"}
    assert mutate.load_equivalents(tmp_path / "none.json") == {}


def _mutants_on_line(source: str, path: str, line: int) -> set[str]:
    """The keys of the mutants of the innermost statement holding `line` (the whole module's take
    seconds: every candidate's source segment is cut from the whole text)."""
    holding = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno)
    ]
    innermost = min(holding, key=lambda n: (n.end_lineno or n.lineno) - n.lineno)
    module = ast.Module(body=[innermost], type_ignores=[])
    return {m.key() for m in mutate._candidates(source, module, path) if m.line == line}


def test_every_listed_equivalent_is_a_mutant_of_todays_source() -> None:
    # a key names its line: an edit that moves or removes the code leaves the entry stale, and the
    # runner would then count the (moved) mutant as a survivor and nothing as equivalent
    for key in mutate.load_equivalents():
        path, line = key.split(":", 2)[:2]
        source = (ROOT_DIR / path).read_text()
        assert key in _mutants_on_line(source, path, int(line)), key


def test_two_equal_constants_on_one_line_have_two_keys() -> None:
    # gaps.py's `grid_count(8, widest) if q <= 8 else ...`: one may be equivalent, the other not
    keys = [m.key() for m in mutate.mutants_of("x = (8, 8)\n", "t.py") if m.operator == "int +1"]
    assert keys == ["t.py:1:5:int +1:8 => 9", "t.py:1:8:int +1:8 => 9"]
