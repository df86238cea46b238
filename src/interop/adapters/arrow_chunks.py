"""List, tensor and extension-type columns in chunks: a ``ChunkedArray`` of a type that
:mod:`interop.adapters.arrow_nested` or :mod:`interop.adapters.arrow_extensions` reads (what
``table.column(name)``, ``table["emb"]`` and a data library's ``batch["emb"]`` return), as a
composite kind within pyarrow's own ``ChunkedArray`` type."""

from __future__ import annotations

from typing import Any

from . import arrow_extensions, arrow_nested
from .base import CompositeAdapter, Parts, instance_test

_chunked = instance_test("pyarrow", "ChunkedArray")


def _is_value(x: Any) -> bool:
    return _chunked(x) and (arrow_nested.nested_type(x.type) or arrow_extensions.ours(x.type))


def parts(x: Any, ragged: str | None = None, fill_value: Any = 0) -> Parts:
    """``x`` taken apart by the kind that reads its type: one chunk's parts (no copy), several
    chunks joined (a copy: said); an extension type interop does not know is refused by name."""
    if arrow_extensions.ours(x.type):
        return arrow_extensions.parts(x, ragged, fill_value)
    return arrow_nested.chunked_parts(x, ragged, fill_value)


ARROW_CHUNKS = CompositeAdapter(
    name="arrow-nested-chunks",
    modules=("pyarrow",),
    package="pyarrow",
    is_value=_is_value,
    parts=parts,
    buffers=arrow_nested.buffers,
    rebuild=arrow_extensions.rebuild,
    describe=arrow_extensions.describe,
    options=arrow_nested.OPTIONS,
    home="pyarrow",
    within=True,
    per_value_owner=True,  # the plans kept for ChunkedArray are those of its numbers
)
"""A ``ChunkedArray`` of a list, tensor or extension type, a value of pyarrow's own
``ChunkedArray`` type, which pyarrow's adapter owns, told apart by its type
(:attr:`~interop.adapters.base.CompositeAdapter.within`)."""
