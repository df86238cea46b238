"""Memoised verdicts: per value (a dtype, a sharding) or per key of a value (an Arrow type's
id, an extension type's name and storage, a polars dtype's class)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def memo(compute: Callable[[Any], Any], bound: int = 256) -> Callable[[Any], Any]:
    """``compute`` memoised per argument (a dtype, an Arrow type, a sharding: the few that
    values share). Unhashable arguments are computed every time; at most ``bound`` kept."""
    cache: dict[Any, Any] = {}

    def cached(key: Any) -> Any:
        try:
            return cache[key]
        except KeyError:
            pass
        except TypeError:  # unhashable
            return compute(key)
        v = compute(key)
        if len(cache) < bound:
            cache[key] = v
        return v

    return cached


def memo_by(key: Callable[[Any], Any],
            compute: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``compute(x)`` memoised per ``key(x)``, for a verdict that depends on a small fixed
    set of keys only (an Arrow type's id, a polars dtype's class); ``key`` is best a C
    callable (``operator.attrgetter``, ``type``), as it runs on every call."""
    cache: dict[Any, Any] = {}

    def cached(x: Any) -> Any:
        k = key(x)
        try:
            return cache[k]
        except KeyError:
            v = cache[k] = compute(x)
            return v

    return cached


def extension_name(t: Any) -> str | None:
    """The registered name of an Arrow extension type (``"arrow.fixed_shape_tensor"``,
    ``"arrow.bool8"``, a library's own), ``None`` for any other Arrow type: the one reading
    of what extension a type is, by name, never by its Python class."""
    return getattr(t, "extension_name", None)


def arrow_type_key(t: Any) -> Any:
    """The key of :func:`memo_by` for Arrow types: what a verdict on an Arrow type reads.
    Its id, except for extension types, which all share one id: theirs is the extension
    name and the storage type (a memo keyed on the id alone answered for every extension
    type what it had found for the first one seen)."""
    i = t.id
    return i if i != EXTENSION_ID else (t.extension_name, t.storage_type)


EXTENSION_ID = 31
"""The id all Arrow extension types share (``arrow::Type::EXTENSION``, fixed in Arrow's C++
type enum): read first, as a plain type's key is its id alone (one attribute read)."""


ARROW_TYPE_ID = arrow_type_key
"""The key of :func:`memo_by` for Arrow types (:func:`arrow_type_key`): the kind of an Arrow
type depends on its id alone (not on its unit, time zone or width parameters), and an
extension type's on its name and storage type."""
