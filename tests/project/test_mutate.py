"""scripts/mutate.py (`make mutate`): the mutants it makes of a tiny module, and the file always put back."""

from __future__ import annotations

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
