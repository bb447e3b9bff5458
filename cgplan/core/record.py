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

Nor does a record import `dataclasses` (with `inspect`, a tenth of `cgplan plan`'s imports):
`field`, `replace`, `fields`, `is_dataclass` and `MISSING` here do the same for records, and
`__dataclass_fields__` is made with the standard library's `Field`s on first use (`dataclasses.
fields(record)`, `asdict`); anything that is not a record goes to `dataclasses` itself.

A class using anything else (a base dataclass, `__post_init__`, InitVar, ClassVar, KW_ONLY or
`field(init=False / kw_only=True)`, its own `__eq__`/`__hash__`/`__repr__`/`__setattr__`,
`__slots__`, no `__annotations__` in the class `__dict__`) goes to `dataclasses.dataclass` itself.
mypy sees `dataclasses.dataclass` (the TYPE_CHECKING branch below), so every record's type is
checked as the dataclass it behaves as; tests/test_record.py holds the two equal at run time.
"""

from __future__ import annotations

import operator
import reprlib
import types
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

_T = TypeVar("_T")


class _MissingType:
    """`MISSING` here: no default (`dataclasses.MISSING` once the standard library's Fields are made)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


_MISSING: Any = _MissingType()
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
_EMPTY: Mapping[str, Any] = types.MappingProxyType({})


class RecordField:
    """A record's field: what `field(...)` gives and `fields(record)` lists, with the attributes
    of `dataclasses.Field` that cgplan reads."""

    __slots__ = (
        "compare",
        "default",
        "default_factory",
        "hash",
        "init",
        "kw_only",
        "metadata",
        "name",
        "repr",
        "type",
    )

    def __init__(
        self,
        default: Any = _MISSING,
        default_factory: Any = _MISSING,
        init: bool = True,
        repr: bool = True,  # dataclasses' own parameter names
        hash: bool | None = None,
        compare: bool = True,
        metadata: Mapping[str, Any] | None = None,
        kw_only: Any = _MISSING,
    ) -> None:
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name: str = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.hash = hash
        self.compare = compare
        self.metadata = _EMPTY if metadata is None else types.MappingProxyType(dict(metadata))
        self.kw_only = kw_only

    def __repr__(self) -> str:
        return f"RecordField(name={self.name!r}, default={self.default!r})"

    def standard(self) -> Any:
        """The same field as a `dataclasses.Field`, as `dataclasses.dataclass` would have made it."""
        import dataclasses

        def plain(v: Any) -> Any:
            return dataclasses.MISSING if v is _MISSING else v

        f = dataclasses.field(
            default=plain(self.default),
            default_factory=plain(self.default_factory),
            init=self.init,
            repr=self.repr,
            hash=self.hash,
            compare=self.compare,
            metadata=dict(self.metadata) or None,
            kw_only=plain(self.kw_only),
        )
        f.name = self.name
        f.type = self.type
        f.kw_only = False if self.kw_only is _MISSING else self.kw_only
        f._field_type = vars(dataclasses)["_FIELD"]  # the marker dataclasses.fields keeps (3.10-3.13)
        return f


def _runtime_field(**kwargs: Any) -> RecordField:
    """`dataclasses.field`, for records (the standard one works too)."""
    return RecordField(**kwargs)


class _StandardFields:
    """A record's `__dataclass_fields__`: the standard library's Fields, made on first use."""

    def __get__(self, obj: object, owner: type) -> dict[str, Any]:
        own: dict[str, RecordField] = owner.__dict__["__record_fields__"]
        real = {name: f.standard() for name, f in own.items()}
        type.__setattr__(owner, "__dataclass_fields__", real)
        return real


def _from_dataclasses(value: object, *names: str) -> bool:
    """`value`, or its type, is one of dataclasses' own objects of these names (told by name: a
    record never imports dataclasses to ask)."""
    for x in (value, type(value)):
        if getattr(x, "__module__", None) == "dataclasses" and getattr(x, "__name__", None) in names:
            return True
    return False


def _special_note(note: object) -> bool:
    """ClassVar, InitVar or KW_ONLY: a field dataclasses treats apart."""
    if isinstance(note, str):
        return note.split("[", 1)[0].strip().rsplit(".", 1)[-1] in ("ClassVar", "InitVar", "KW_ONLY")
    if note is ClassVar or getattr(note, "__origin__", None) is ClassVar:
        return True
    return _from_dataclasses(note, "InitVar", "_KW_ONLY_TYPE")


def _is_standard_field(value: object) -> bool:
    t = type(value)
    return t.__name__ == "Field" and t.__module__ == "dataclasses"


def _plain(cls: type) -> dict[str, object] | None:
    """The class's own annotations when every field is a plain one, else None."""
    if "__annotations__" not in cls.__dict__ or "__slots__" in cls.__dict__:
        return None
    if any(name in cls.__dict__ for name in _OWN):
        return None
    if any("__dataclass_fields__" in vars(b) for b in cls.__mro__[1:]):
        return None
    # the class's own, as dataclasses reads them (`inspect.get_annotations` would import inspect)
    notes: dict[str, object] = cls.__dict__["__annotations__"]  # noqa: RUF063
    if any(_special_note(note) for note in notes.values()):
        return None
    return notes


def _fields(cls: type, notes: dict[str, object]) -> dict[str, RecordField] | None:
    fields: dict[str, RecordField] = {}
    for name, note in notes.items():
        default = cls.__dict__.get(name, _MISSING)
        if isinstance(default, RecordField):
            f = default
        elif _is_standard_field(default):  # a `dataclasses.field(...)`: the same, MISSING translated
            std: Any = default

            def own(v: Any) -> Any:
                return _MISSING if _from_dataclasses(v, "_MISSING_TYPE") else v

            f = RecordField(
                default=own(std.default),
                default_factory=own(std.default_factory),
                init=std.init,
                repr=std.repr,
                hash=std.hash,
                compare=std.compare,
                metadata=std.metadata,
                kw_only=own(std.kw_only),
            )
        else:
            f = RecordField(default=default)
        if not f.init or f.kw_only is True:
            return None
        if f.default is not _MISSING and type(f.default).__hash__ is None:
            # dataclasses' own refusal of a shared mutable default
            raise ValueError(
                f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory"
            )
        f.name = name
        f.type = note
        f.kw_only = False  # what dataclasses sets on a plain field
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


def _make_init(cls: type, fields: dict[str, RecordField]) -> Callable[..., None]:
    names = tuple(fields)
    count = len(names)
    position = {n: i for i, n in enumerate(names)}
    defaults = {n: f.default for n, f in fields.items() if f.default is not _MISSING}
    factories: dict[str, Callable[[], Any]] = {
        n: f.default_factory  # not MISSING, so a factory
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
        made: type[_T] = _standard_dataclass(cls, {"frozen": True})
        return made
    for name, f in fields.items():  # the class attribute is the default, as dataclasses leaves it
        if isinstance(cls.__dict__.get(name), RecordField) or _is_standard_field(cls.__dict__.get(name)):
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
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in frozen_names:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    def __replace__(self: Any, /, **changes: Any) -> Any:
        return _runtime_replace(self, **changes)

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
    setattr(cls, "__record_fields__", fields)  # noqa: B010
    setattr(cls, "__record_names__", frozen_names)  # noqa: B010
    setattr(cls, "__dataclass_fields__", _StandardFields())  # noqa: B010
    setattr(cls, "__dataclass_params__", _PARAMS)  # noqa: B010
    if "__match_args__" not in cls.__dict__:
        setattr(cls, "__match_args__", tuple(names))  # noqa: B010
    if cls.__doc__ is None:
        cls.__doc__ = f"{cls.__name__}({', '.join(names)})"
    return cls


def _standard_dataclass(cls: Any, params: dict[str, Any]) -> Any:
    """`dataclasses.dataclass(**params)` of `cls` (or the decorator), record fields made standard."""
    import dataclasses

    def make(c: Any) -> Any:
        for name, value in list(vars(c).items()):
            if isinstance(value, RecordField):
                setattr(c, name, value.standard())
        return dataclasses.dataclass(c, **params)

    return make if cls is None else make(cls)


def _runtime_replace(obj: Any, /, **changes: Any) -> Any:
    """`dataclasses.replace`: for a record, its fields copied and `changes` set (every field is an
    init field without `__post_init__`, so this is what `__init__` would make); else the standard one."""
    cls = type(obj)
    names = cls.__dict__.get("__record_names__")
    if names is None:
        import dataclasses

        return dataclasses.replace(obj, **changes)
    for key in changes:
        if key not in names:
            raise TypeError(f"{cls.__qualname__}.__init__() got an unexpected keyword argument {key!r}")
    new = object.__new__(cls)
    d = new.__dict__
    d.update(obj.__dict__)
    d.update(changes)
    return new


def _runtime_fields(class_or_instance: Any) -> tuple[Any, ...]:
    """`dataclasses.fields`: a record's `RecordField`s (no import of dataclasses), else the standard."""
    cls = class_or_instance if isinstance(class_or_instance, type) else type(class_or_instance)
    own = cls.__dict__.get("__record_fields__")
    if own is not None:
        return tuple(own.values())
    import dataclasses

    return dataclasses.fields(class_or_instance)


def _runtime_is_dataclass(obj: Any) -> bool:
    """`dataclasses.is_dataclass`, without importing it for a record or a plain object."""
    cls = obj if isinstance(obj, type) else type(obj)
    return "__record_fields__" in cls.__dict__ or hasattr(cls, "__dataclass_fields__")


if TYPE_CHECKING:
    from dataclasses import MISSING as MISSING
    from dataclasses import dataclass as dataclass
    from dataclasses import field as field
    from dataclasses import fields as fields
    from dataclasses import is_dataclass as is_dataclass
    from dataclasses import replace as replace
else:
    MISSING = _MISSING
    field = _runtime_field
    fields = _runtime_fields
    is_dataclass = _runtime_is_dataclass
    replace = _runtime_replace

    def dataclass(cls=None, /, **params):
        """`dataclasses.dataclass`, with `frozen=True` alone made by `frozen_record`."""
        if params != {"frozen": True}:
            return _standard_dataclass(cls, params)
        return frozen_record if cls is None else frozen_record(cls)
