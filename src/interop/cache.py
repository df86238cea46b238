"""The plans a registry has made, kept so that a pair's later calls are a lookup.

Three kinds, one object: the plans of calls without ``device=``/``copy=`` (what
``to_framework``'s lookup reads), those of other ``device``/``copy``, and the plans made per
structure. The dicts are made once and only ever cleared, never replaced: the registry's
converter binds them when it is made.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Convert = Callable[[Any], Any]


class PlanCache:
    """The plans kept by a registry: looked up per ``(source type, target as asked, device,
    copy)``; a plan kept under a framework's name is kept under each name it was asked by
    too (aliases share plans)."""

    __slots__ = ("_plain", "_other", "_structures", "composites")

    def __init__(self) -> None:
        self._plain: dict[str, dict[type, Convert]] = {}
        self._other: dict[tuple, Convert] = {}
        self._structures: dict[tuple, list[Convert]] = {}
        self.composites: dict[tuple, Convert] = {}
        """The plans of composite kinds within a framework's array type (torch's sparse
        tensors, pyarrow's chunked list columns), per ``(kind, target, device, copy)``."""

    @property
    def plain(self) -> dict[str, dict[type, Convert]]:
        """The plans for ``device=None, copy=None``: ``{target: {source type: plan}}``, the
        target as the framework's name and as each name it was asked by (one dict each)."""
        return self._plain

    @property
    def other(self) -> dict[tuple, Convert]:
        """The plans for other ``device``/``copy``: ``{(type, target, device, copy): plan}``."""
        return self._other

    def structures(self, key: tuple) -> list[Convert]:
        """The plans made for structures of one ``(root type, target, device, copy,
        structure option)``, newest first (:mod:`interop.structures`)."""
        return self._structures.setdefault(key, [])

    def get(self, tp: type, target: str, device: Any, copy: bool | None) -> Convert | None:
        """The plan kept for values of ``tp`` to ``target`` (as asked), or ``None``."""
        if device is None and copy is None:
            return self._plain.get(target, {}).get(tp)
        return self._other.get((tp, target, device, copy))

    def keep(self, tp: type, target: str, tgt: str, device: Any, copy: bool | None,
             fn: Convert) -> None:
        """Keep ``fn`` under the framework's name ``tgt`` and the name as asked (``target``,
        an alias such as ``"pt"``)."""
        if device is None and copy is None:
            per_type = self._plain.get(tgt)
            if per_type is None:
                per_type = self._plain[tgt] = {}
            if target != tgt:
                self._plain[target] = per_type
            per_type[tp] = fn
        else:
            self._other[(tp, tgt, device, copy)] = fn
            if target != tgt:
                self._other[(tp, target, device, copy)] = fn

    def alias(self, tp: type, target: str, tgt: str, device: Any,
              copy: bool | None) -> Convert | None:
        """The plan kept for ``tp`` under the framework's name ``tgt``, now also under the
        name as asked (``target``); ``None`` if there is none yet."""
        fn = self.get(tp, tgt, device, copy)
        if fn is not None:
            self.keep(tp, target, tgt, device, copy, fn)
        return fn

    def clear(self) -> None:
        """Forget every plan (the next call of each pair plans again)."""
        self._plain.clear()
        self._other.clear()
        self._structures.clear()
        self.composites.clear()

    def items(self) -> dict[tuple, Convert]:
        """Every plan kept but the structures', as ``{(source type, target as asked, device,
        copy): plan}``."""
        out = {(tp, target, None, None): fn for target, per_type in self._plain.items()
               for tp, fn in per_type.items()}
        out.update(self._other)
        return out

    def __len__(self) -> int:
        return len(self.items())
