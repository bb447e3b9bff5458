"""`cgplan.core.record`: a frozen record behaves as `dataclasses.dataclass(frozen=True)` (#18).

Each case defines the same class twice, once through `frozen_record` and once through the
standard library, and holds every observable behaviour cgplan relies on equal between them."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any, ClassVar

import pytest

import cgplan.core.cost
import cgplan.core.latency
import cgplan.core.spec
import cgplan.core.types
from cgplan.core import record
from cgplan.core.record import frozen_record


def _twins(make: Callable[[], type]) -> tuple[Any, Any]:
    """(record class, dataclass class) of the same definition."""
    return frozen_record(make()), dataclasses.dataclass(frozen=True)(make())


def _graph() -> type:
    class Graph:
        """A graph."""

        family: str
        mode: str
        num_tokens: int
        loras: int = 0
        ubatches: int = 1
        sizes: tuple[int, ...] = field(default=(), compare=False)
        notes: list[str] = field(default_factory=list, repr=False, compare=False)

    return Graph


def _outcome(fn: Callable[[], object]) -> tuple[str, str]:
    try:
        value = fn()
    except Exception as e:  # the exception type and message are the behaviour under test
        return type(e).__name__, str(e)
    return "ok", repr(value)


CALLS: list[tuple[tuple[object, ...], dict[str, object]]] = [
    (("target", "FULL", 8), {}),
    (("target", "FULL", 8, 2), {}),
    (("target", "FULL", 8, 2, 1, (1, 2), ["n"]), {}),
    (("target",), {"mode": "FULL", "num_tokens": 8}),
    ((), {"num_tokens": 8, "family": "t", "mode": "P", "ubatches": 2}),
    ((), {}),
    (("target",), {}),
    (("target", "FULL", 8, 2, 1, (), [], "extra"), {}),
    (("target", "FULL"), {"num_token": 8}),
    (("target", "FULL", 8), {"family": "again"}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_init_accepts_and_refuses_as_a_dataclass(args: tuple[object, ...], kwargs: dict[str, object]) -> None:
    rec, dc = _twins(_graph)
    got, want = _outcome(lambda: rec(*args, **kwargs)), _outcome(lambda: dc(*args, **kwargs))
    assert got[0] == want[0]
    # the message names the same problem (Python's own wording for a missing/extra argument;
    # 3.13 appends a "Did you mean ...?" to a compiled __init__'s unknown keyword)
    assert (
        got[1].replace(rec.__qualname__, "C")
        == want[1].replace(dc.__qualname__, "C").split(". Did you mean")[0]
    )


def test_fields_defaults_and_factories_are_a_dataclasss() -> None:
    rec, dc = _twins(_graph)
    a, b = rec("t", "FULL", 8), dc("t", "FULL", 8)
    assert vars(a) == vars(b)
    assert list(vars(a)) == list(vars(b))  # field order, as dataclasses writes them
    assert a.notes == [] and a.notes is not rec("t", "FULL", 8).notes  # a fresh list each time
    assert [(f.name, f.type, f.default, f.compare, f.repr, f.kw_only) for f in dataclasses.fields(rec)] == [
        (f.name, f.type, f.default, f.compare, f.repr, f.kw_only) for f in dataclasses.fields(dc)
    ]
    both = dataclasses.is_dataclass(rec) and dataclasses.is_dataclass(a)  # (no narrowing)
    assert both
    assert rec.loras == dc.loras == 0 and not hasattr(rec, "notes") and not hasattr(dc, "notes")
    assert rec.__match_args__ == dc.__match_args__


def test_eq_hash_repr_are_a_dataclasss() -> None:
    rec, dc = _twins(_graph)
    a, a2, other = rec("t", "FULL", 8, sizes=(1,)), rec("t", "FULL", 8, sizes=(2,)), rec("t", "PW", 8)
    b, b2 = dc("t", "FULL", 8, sizes=(1,)), dc("t", "FULL", 8, sizes=(2,))
    assert (a == a2) == (b == b2) is True  # `sizes` is not compared
    assert a != other and (a == b) is False  # another class is never equal
    assert a.__eq__(b) is NotImplemented
    assert hash(a) == hash(a2) == hash(b) == hash(b2)  # the same tuple of compared fields
    assert repr(a).replace(rec.__qualname__, "C") == repr(b).replace(dc.__qualname__, "C")
    assert "notes" not in repr(a)  # repr=False
    assert len({a, a2, other}) == 2


def test_one_and_no_compared_field_hash_as_a_dataclass() -> None:
    def one() -> type:
        class One:
            x: int

        return One

    def none() -> type:
        class NoneCompared:
            x: int = field(default=0, compare=False)

        return NoneCompared

    for make in (one, none):
        rec, dc = _twins(make)
        assert hash(rec(3)) == hash(dc(3))
        assert (rec(3) == rec(4)) == (dc(3) == dc(4))


def test_frozen_replace_asdict_pickle_copy() -> None:
    rec, _ = _twins(_graph)
    a = rec("t", "FULL", 8, notes=["x"])
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'mode'"):
        a.mode = "PIECEWISE"
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'new'"):
        a.new = 1
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'mode'"):
        del a.mode
    b = dataclasses.replace(a, num_tokens=16)
    assert (b.num_tokens, b.mode, type(b)) == (16, "FULL", rec)
    assert dataclasses.asdict(a) == {
        "family": "t",
        "mode": "FULL",
        "num_tokens": 8,
        "loras": 0,
        "ubatches": 1,
        "sizes": (),
        "notes": ["x"],
    }
    assert copy.copy(a) == a and copy.deepcopy(a) == a
    if sys.version_info >= (3, 13):
        assert copy.replace(a, mode="P").mode == "P"  # type: ignore[attr-defined]


_PICKLED: Any = frozen_record(_graph())
_PICKLED.__qualname__ = _PICKLED.__name__ = "_PICKLED"


def test_pickle_round_trip() -> None:
    a = _PICKLED("t", "FULL", 8, sizes=(1, 2))
    assert pickle.loads(pickle.dumps(a)) == a


def test_nested_records_asdict_and_replace() -> None:
    inner: Any = frozen_record(type("Inner", (), {"__annotations__": {"x": "int"}}))
    outer: Any = frozen_record(type("Outer", (), {"__annotations__": {"i": "Inner", "n": "int"}, "n": 1}))
    o = outer(inner(2))
    assert dataclasses.asdict(o) == {"i": {"x": 2}, "n": 1}
    assert dataclasses.replace(o, n=5) == outer(inner(2), 5)


def test_what_it_does_not_make_goes_to_dataclasses() -> None:
    """Features outside the plain frozen record are made by the standard library itself."""

    class WithPost:
        x: int

        def __post_init__(self) -> None:
            object.__setattr__(self, "x", self.x * 2)

    class WithClassVar:
        x: int
        k: ClassVar[int] = 3

    class WithInitFalse:
        x: int
        y: int = field(default=0, init=False)

    base: Any = frozen_record(type("Base", (), {"__annotations__": {"x": "int"}}))

    class Derived(base):  # type: ignore[misc]  # a base of type Any
        y: int = 0

    made: dict[str, Any] = {
        cls.__name__: frozen_record(cls) for cls in (WithPost, WithClassVar, WithInitFalse, Derived)
    }
    for cls in made.values():
        assert vars(cls)["__dataclass_params__"] is not record._PARAMS, cls
    assert made["WithPost"](2).x == 4
    assert [f.name for f in dataclasses.fields(made["WithClassVar"])] == ["x"]
    assert made["Derived"](1, 2).y == 2
    assert [f.name for f in dataclasses.fields(made["Derived"])] == ["x", "y"]


def test_a_shared_mutable_default_is_refused_as_dataclasses_does() -> None:
    def bad() -> type:
        class Bad:
            xs: list[int] = []  # noqa: RUF012  # the refusal under test

        return Bad

    with pytest.raises(ValueError, match="mutable default"):
        frozen_record(bad())
    with pytest.raises(ValueError, match="mutable default"):
        dataclasses.dataclass(frozen=True)(bad())


def test_the_records_on_the_plan_path_are_made_without_compiling() -> None:
    """The point of the module: cgplan's frozen records are `frozen_record`s (a stdlib dataclass
    would have compiled six functions each at import)."""
    for module in (cgplan.core.types, cgplan.core.spec, cgplan.core.cost, cgplan.core.latency):
        records = [
            v
            for v in vars(module).values()
            if isinstance(v, type) and v.__module__ == module.__name__ and dataclasses.is_dataclass(v)
        ]
        assert records, module
        for cls in records:
            assert vars(cls)["__dataclass_params__"] is record._PARAMS, cls


def _rec_graph() -> Any:
    class Graph:
        """A graph made with the record module's own `field`."""

        family: str
        mode: str = "FULL"
        sizes: tuple[int, ...] = record.field(default=(), compare=False, metadata={"fingerprint": False})
        notes: list[str] = record.field(default_factory=list, repr=False, compare=False)

    return frozen_record(Graph)


def test_the_modules_field_replace_fields_and_is_dataclass() -> None:
    """`record.field/replace/fields/is_dataclass` do for records what dataclasses' do, without
    importing it; the standard library's own functions still work on records."""
    g: Any = _rec_graph()
    a = g("target", sizes=(1, 2))
    answers = (
        record.is_dataclass(a),
        record.is_dataclass(g),
        record.is_dataclass(object()),
    )  # (no narrowing)
    assert answers == (True, True, False)
    names = [f.name for f in record.fields(g)]
    assert names == [f.name for f in dataclasses.fields(g)] == ["family", "mode", "sizes", "notes"]
    own, std = record.fields(a)[2], dataclasses.fields(a)[2]
    assert (own.default, own.compare, dict(own.metadata)) == (std.default, std.compare, dict(std.metadata))
    assert (
        record.fields(g)[3].default is record.MISSING
        and dataclasses.fields(g)[3].default is dataclasses.MISSING
    )
    b = record.replace(a, mode="PIECEWISE")
    assert (type(b), b.family, b.mode, b.sizes) == (g, "target", "PIECEWISE", (1, 2))
    assert b == dataclasses.replace(a, mode="PIECEWISE") and list(vars(b)) == list(vars(a))
    with pytest.raises(TypeError, match="unexpected keyword argument 'moed'"):
        record.replace(a, moed="x")
    assert dataclasses.asdict(a) == {"family": "target", "mode": "FULL", "sizes": (1, 2), "notes": []}
    # not a record: the standard functions answer
    plain = dataclasses.make_dataclass("Plain", [("x", int)])
    assert record.replace(plain(1), x=2) == plain(2)
    assert [f.name for f in record.fields(plain)] == ["x"]


def test_planning_imports_neither_dataclasses_nor_inspect() -> None:
    """Their import was a tenth of `cgplan plan`'s start-up, hashlib's (OpenSSL) a twentieth
    (#18); the plan --json path has no use for them, nor for typer, rich or PyYAML."""
    code = (
        "import sys, io, contextlib\n"
        "from cgplan.cli._plan_run import run_plan\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    run_plan(targets=['configs/examples/mns1024-eagle-k16-dyn4.yaml'], json_out=True)\n"
        "heavy = ('dataclasses', 'inspect', 'typer', 'rich', 'yaml', 'hashlib')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_fingerprints_sha256_is_hashlibs() -> None:
    """The fingerprint hashes with the interpreter's built-in sha256, not hashlib's (#18)."""
    import hashlib
    import random

    from cgplan.core import fingerprint

    rng = random.Random(18)
    for n in (0, 1, 55, 56, 64, 1000):
        data = bytes(rng.randrange(256) for _ in range(n))
        assert vars(fingerprint)["_sha256"](data).hexdigest() == hashlib.sha256(data).hexdigest()
