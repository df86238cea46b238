"""``record``: a dataclass whose ``__init__``, ``__repr__`` and ``__eq__`` (and, if frozen,
``__hash__``, ``__setattr__``, ``__delattr__``) are shared functions instead of code that
``dataclasses`` writes and compiles for each class. That compilation was most of the cost of a
first ``to_framework``; construction is a little slower, which does not matter for classes
built while the registry loads."""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING, Field, FrozenInstanceError
from typing import Any, TypeVar

T = TypeVar("T")


def record(cls: type[T] | None = None, *, frozen: bool = False) -> Any:
    """Like ``@dataclass`` / ``@dataclass(frozen=True)`` for classes of plain fields with
    defaults or ``field(default=...)`` (no ``default_factory`` needed, no ``__post_init__``);
    ``dataclasses.fields`` and ``dataclasses.replace`` work on them as on any dataclass."""

    def wrap(c: type[T]) -> type[T]:
        spec = _fields(c)
        c.__record_spec__ = spec  # type: ignore[attr-defined]
        c.__record_names__ = tuple(name for name, _, _ in spec)  # type: ignore[attr-defined]
        c.__init__ = _init  # type: ignore[misc]
        c.__repr__ = _repr  # type: ignore[assignment]
        c.__eq__ = _eq  # type: ignore[assignment]
        if frozen:
            c.__hash__ = _hash  # type: ignore[assignment]
            c.__setattr__ = _frozen  # type: ignore[assignment]
            c.__delattr__ = _frozen  # type: ignore[assignment]
        else:
            c.__hash__ = None  # type: ignore[assignment]  # as @dataclass: eq, not frozen
        return c

    return wrap if cls is None else wrap(cls)


def _fields(c: type) -> tuple[tuple[str, Any, Any], ...]:
    """``(name, default, default_factory)`` of each annotated field of ``c``, in order; the
    class gets the ``__dataclass_fields__`` that ``dataclasses.fields`` and
    ``dataclasses.replace`` read (without ``dataclasses.dataclass``, which compiles code per
    class: most of what a first ``to_framework`` would spend on these classes)."""
    out = []
    found: dict[str, Field] = {}
    for name, annotation in c.__dict__.get("__annotations__", {}).items():
        value = c.__dict__.get(name, MISSING)
        f = value if isinstance(value, Field) else dataclasses.field(default=value)
        f.name, f.type = name, annotation
        f._field_type = dataclasses._FIELD  # type: ignore[attr-defined]  # what fields() reads
        if isinstance(value, Field):  # as dataclass leaves it: the default, or nothing
            if f.default is MISSING:
                delattr(c, name)
            else:
                setattr(c, name, f.default)
        found[name] = f
        out.append((name, f.default, f.default_factory))
    c.__dataclass_fields__ = found  # type: ignore[attr-defined]
    return tuple(out)


def _init(self: Any, *args: Any, **kw: Any) -> None:
    cls = type(self)
    spec = cls.__record_spec__
    if len(args) > len(spec):
        raise TypeError(f"{cls.__name__}() takes {len(spec)} positional arguments but "
                        f"{len(args)} were given")
    values = dict(zip(cls.__record_names__, args))
    for name, default, factory in spec[len(args):]:
        if name in kw:
            values[name] = kw.pop(name)
        elif default is not MISSING:
            values[name] = default
        elif factory is not MISSING:
            values[name] = factory()
        else:
            raise TypeError(f"{cls.__name__}() missing required argument: {name!r}")
    if kw:  # what is left names no field, or one given positionally too
        name = sorted(kw)[0]
        if name in values:
            raise TypeError(f"{cls.__name__}() got multiple values for argument {name!r}")
        raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {name!r}")
    self.__dict__.update(values)  # (a frozen record refuses attribute assignment, not this)


def _values(self: Any) -> tuple[Any, ...]:
    return tuple(getattr(self, name) for name, _, _ in type(self).__record_spec__)


def _repr(self: Any) -> str:
    body = ", ".join(f"{name}={getattr(self, name)!r}" for name, _, _ in
                     type(self).__record_spec__)
    return f"{type(self).__qualname__}({body})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self: Any) -> int:
    return hash(_values(self))


def _frozen(self: Any, name: str, *value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")
