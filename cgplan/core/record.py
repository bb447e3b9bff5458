"""`@dataclass(frozen=True)` without compiling code at import (#18).

`dataclasses.dataclass` writes six functions per frozen class as source text and compiles each
(`exec`): about 1.2 ms a class on this project's 2-core CI machine, 43 ms of the 72 ms that
`cgplan plan` spent importing its 36 records. `frozen_record` gives a frozen class the same
behaviour from functions built once here and closed over per class, compiling nothing:

- `__init__` with the dataclass's parameters (positional or keyword, defaults, default
  factories) and its TypeErrors for a missing, unexpected or repeated argument;
- `__eq__` over the compared fields of two instances of the same class (else NotImplemented),
  `__hash__` of the same tuple, the dataclass `__repr__`, `FrozenInstanceError` on assignment
  or deletion, `__match_args__`, `__replace__`;
- `__dataclass_fields__` with real `dataclasses.Field` objects, so `dataclasses.fields`,
  `replace`, `asdict` and `is_dataclass` work unchanged.

Not kept: `inspect.signature` of the class reads `(*args, **kwargs)` (nothing in cgplan asks).

A class using anything else (a base dataclass, `__post_init__`, InitVar, ClassVar, KW_ONLY or
`field(init=False / kw_only=True)`, its own `__eq__`/`__hash__`/`__repr__`/`__setattr__`,
`__slots__`, no `__annotations__` in the class `__dict__`) goes to `dataclasses.dataclass` itself.
mypy sees `dataclasses.dataclass` (the TYPE_CHECKING branch below), so every record's type is
checked as the dataclass it behaves as; tests/test_record.py holds the two equal at run time.
"""

from __future__ import annotations

import dataclasses
import operator
import reprlib
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

_T = TypeVar("_T")

_FIELD = vars(dataclasses)["_FIELD"]  # the marker `dataclasses.fields` keeps (3.10-3.13)
_MISSING: Any = dataclasses.MISSING
_OWN = ("__init__", "__eq__", "__hash__", "__repr__", "__setattr__", "__delattr__", "__post_init__")
"""Names a record must not define itself (the dataclass would keep or refuse them)."""
_PARAMS = types.SimpleNamespace(
    init=True,
    repr=True,
    eq=True,
    order=False,
    unsafe_hash=False,
    frozen=True,
    match_args=True,
    kw_only=False,
    slots=False,
    weakref_slot=False,
)
"""`__dataclass_params__`: what a dataclass deriving from a record reads (`frozen`)."""


def _plain(cls: type) -> dict[str, object] | None:
    """The class's own annotations when every field is a plain one, else None."""
    if "__annotations__" not in cls.__dict__ or "__slots__" in cls.__dict__:
        return None
    if any(name in cls.__dict__ for name in _OWN):
        return None
    if any(hasattr(b, "__dataclass_fields__") for b in cls.__mro__[1:]):
        return None
    # the class's own, as dataclasses reads them (`inspect.get_annotations` would import inspect)
    notes: dict[str, object] = cls.__dict__["__annotations__"]  # noqa: RUF063
    for note in notes.values():
        if isinstance(note, str):
            special = note.split("[", 1)[0].strip().rsplit(".", 1)[-1] in ("ClassVar", "InitVar", "KW_ONLY")
        else:
            special = (
                note is ClassVar
                or getattr(note, "__origin__", None) is ClassVar
                or note is dataclasses.InitVar
                or isinstance(note, dataclasses.InitVar)
                or note is dataclasses.KW_ONLY
            )
        if special:
            return None
    return notes


def _fields(cls: type, notes: dict[str, object]) -> dict[str, dataclasses.Field[Any]] | None:
    fields: dict[str, dataclasses.Field[Any]] = {}
    for name, note in notes.items():
        default = cls.__dict__.get(name, _MISSING)
        if isinstance(default, dataclasses.Field):
            f = default
            if not f.init or f.kw_only is True:
                return None
        else:
            f = dataclasses.field(default=default)
        if f.default is not _MISSING and type(f.default).__hash__ is None:
            # dataclasses' own refusal of a shared mutable default
            raise ValueError(
                f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory"
            )
        f.name = name
        f.type = note
        f.kw_only = False  # what dataclasses sets on a plain field
        f._field_type = _FIELD  # type: ignore[attr-defined]
        fields[name] = f
    required_after_default = False
    for f in fields.values():
        has_default = f.default is not _MISSING or f.default_factory is not _MISSING
        if required_after_default and not has_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
        required_after_default = required_after_default or has_default
    return fields


def _argument_list(names: list[str]) -> str:
    """Python's own wording: 'a', 'a' and 'b', 'a', 'b', and 'c'."""
    quoted = [repr(n) for n in names]
    if len(quoted) == 1:
        return quoted[0]
    if len(quoted) == 2:
        return f"{quoted[0]} and {quoted[1]}"
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}"


def _make_init(cls: type, fields: dict[str, dataclasses.Field[Any]]) -> Callable[..., None]:
    names = tuple(fields)
    count = len(names)
    position = {n: i for i, n in enumerate(names)}
    defaults = {n: f.default for n, f in fields.items() if f.default is not _MISSING}
    factories: dict[str, Callable[[], Any]] = {
        n: f.default_factory  # type: ignore[misc]  # not MISSING, so a factory
        for n, f in fields.items()
        if f.default_factory is not _MISSING
    }
    where = f"{cls.__qualname__}.__init__()"
    required = sum(1 for n in names if n not in defaults and n not in factories)
    takes = f"{count + 1}" if required == count else f"from {required + 1} to {count + 1}"

    # for each number of positional arguments, the plain defaults of the fields after them
    # (None where a later field is required or has a factory): the call without keywords
    tails: dict[int, dict[str, Any]] = {}
    for given in range(count, -1, -1):
        if given < count and names[given] not in defaults:
            break
        tails[given] = {n: defaults[n] for n in names[given:]}

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        given = len(args)
        if not kwargs:
            tail = tails.get(given)
            if tail is not None:  # the common calls: fields by position, the rest defaulted
                d = self.__dict__
                d.update(zip(names, args, strict=False))  # args may be fewer
                if tail:
                    d.update(tail)
                return
        if given > count:
            raise TypeError(f"{where} takes {takes} positional arguments but {given + 1} were given")
        values = dict(zip(names, args, strict=False))
        for key in kwargs:
            at = position.get(key)
            if at is None:
                raise TypeError(f"{where} got an unexpected keyword argument {key!r}")
            if at < given:
                raise TypeError(f"{where} got multiple values for argument {key!r}")
        missing: list[str] = []
        for name in names[given:]:
            if name in kwargs:
                values[name] = kwargs[name]
            elif name in defaults:
                values[name] = defaults[name]
            elif name in factories:
                values[name] = factories[name]()
            else:
                missing.append(name)
        if missing:
            s = "s" if len(missing) > 1 else ""
            raise TypeError(
                f"{where} missing {len(missing)} required positional argument{s}: {_argument_list(missing)}"
            )
        self.__dict__.update(values)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _key(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    if not names:
        return lambda self: ()
    if len(names) == 1:
        get_one = operator.attrgetter(names[0])
        return lambda self: (get_one(self),)
    return operator.attrgetter(*names)


def frozen_record(cls: type[_T]) -> type[_T]:
    """`cls` as `dataclasses.dataclass(frozen=True)` would make it (see the module)."""
    notes = _plain(cls)
    fields = _fields(cls, notes) if notes is not None else None
    if fields is None:
        return dataclasses.dataclass(frozen=True)(cls)
    for name, f in fields.items():  # the class attribute is the default, as dataclasses leaves it
        if isinstance(cls.__dict__.get(name), dataclasses.Field):
            if f.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
    names = list(fields)
    compared = [n for n, f in fields.items() if f.compare]
    hashed = [n for n, f in fields.items() if (f.compare if f.hash is None else f.hash)]
    shown = [n for n, f in fields.items() if f.repr]
    eq_key, hash_key = _key(compared), _key(hashed)
    frozen_names = frozenset(names)

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is self.__class__:
            return bool(eq_key(self) == eq_key(other))
        return NotImplemented

    def __hash__(self: Any) -> int:
        return hash(hash_key(self))

    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in shown)
        return f"{self.__class__.__qualname__}({inner})"

    def __setattr__(self: Any, name: str, value: object) -> None:
        if type(self) is cls or name in frozen_names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in frozen_names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    def __replace__(self: Any, /, **changes: Any) -> Any:
        return dataclasses.replace(self, **changes)

    methods: dict[str, Callable[..., Any]] = {
        "__init__": _make_init(cls, fields),
        "__eq__": __eq__,
        "__hash__": __hash__,
        "__repr__": __repr__,
        "__setattr__": __setattr__,
        "__delattr__": __delattr__,
    }
    for name, fn in methods.items():
        fn.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, fn)
    if "__replace__" not in cls.__dict__:
        setattr(cls, "__replace__", __replace__)  # noqa: B010
    setattr(cls, "__dataclass_fields__", fields)  # noqa: B010
    setattr(cls, "__dataclass_params__", _PARAMS)  # noqa: B010
    if "__match_args__" not in cls.__dict__:
        setattr(cls, "__match_args__", tuple(names))  # noqa: B010
    if cls.__doc__ is None:
        cls.__doc__ = f"{cls.__name__}({', '.join(names)})"
    return cls


if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:

    def dataclass(cls=None, /, **params):
        """`dataclasses.dataclass`, with `frozen=True` alone made by `frozen_record`."""
        if params != {"frozen": True}:
            return (
                dataclasses.dataclass(cls, **params) if cls is not None else dataclasses.dataclass(**params)
            )
        return frozen_record if cls is None else frozen_record(cls)
