"""``record``: a dataclass whose ``__init__``, ``__repr__`` and ``__eq__`` (and, if frozen,
``__hash__``, ``__setattr__``, ``__delattr__``) are shared functions instead of code that
``dataclasses`` writes and compiles for each class. That compilation was most of the cost of a
first ``to_framework`` (about 2.5 ms for the registry's three classes); construction is a
little slower, which does not matter for classes built while the registry loads."""

from __future__ import annotations

from dataclasses import MISSING, FrozenInstanceError, dataclass, fields
from typing import Any, TypeVar

T = TypeVar("T")


def record(cls: type[T] | None = None, *, frozen: bool = False) -> Any:
    """Like ``@dataclass`` / ``@dataclass(frozen=True)`` for classes of plain fields with
    defaults or ``field(default=...)`` (no ``default_factory`` needed, no ``__post_init__``);
    ``dataclasses.fields`` and ``dataclasses.replace`` work on them as on any dataclass."""

    def wrap(c: type[T]) -> type[T]:
        c = dataclass(init=False, repr=False, eq=False)(c)
        spec = tuple((f.name, f.default, f.default_factory) for f in fields(c))
        c.__record_spec__ = spec  # type: ignore[attr-defined]
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


def _init(self: Any, *args: Any, **kw: Any) -> None:
    spec = type(self).__record_spec__
    if len(args) > len(spec):
        raise TypeError(f"{type(self).__name__}() takes {len(spec)} positional arguments but "
                        f"{len(args)} were given")
    setattr_ = object.__setattr__
    for (name, _, _), value in zip(spec, args):
        if name in kw:
            raise TypeError(f"{type(self).__name__}() got multiple values for argument "
                            f"{name!r}")
        setattr_(self, name, value)
    for name, default, factory in spec[len(args):]:
        if name in kw:
            value = kw.pop(name)
        elif default is not MISSING:
            value = default
        elif factory is not MISSING:
            value = factory()
        else:
            raise TypeError(f"{type(self).__name__}() missing required argument: {name!r}")
        setattr_(self, name, value)
    if kw:  # what is left names no field
        raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument "
                        f"{sorted(kw)[0]!r}")


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
