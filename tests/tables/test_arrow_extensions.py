"""Arrow extension types interop does not read are refused by name, whatever the process did
before (:mod:`interop.adapters.arrow_extensions`).

The ML data libraries' own types (Ray Data, Hugging Face ``datasets``, Daft) are read in
``tests/optional/test_mldata.py``, in its own process, from values those libraries make; here,
without them: pyarrow's own canonical types interop has no reading of (``arrow.bool8``,
``arrow.uuid``) and extension types defined in this module, with an ``ExtensionArray``
subclass of their own (as Ray and ``datasets`` define theirs).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import interop
from helpers import run_child
from interop.errors import UnsupportedConversionError


class Vectors(pa.ExtensionType):
    """An extension type of this module over ``list<float>``, with its own array class."""

    def __init__(self, storage: pa.DataType | None = None) -> None:
        super().__init__(storage or pa.list_(pa.float32()), "example.vectors")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls(storage_type)

    def __arrow_ext_class__(self):
        return VectorsArray


class VectorsArray(pa.ExtensionArray):
    """Defined outside pyarrow, as Ray's ``ArrowTensorArray`` and ``datasets``'
    ``ArrayExtensionArray`` are."""


def samples() -> dict[str, pa.Array]:
    return {
        "list storage": pa.ExtensionArray.from_storage(
            Vectors(), pa.array([[1.0, 2.0], [3.0]], pa.list_(pa.float32()))),
        "struct storage": pa.ExtensionArray.from_storage(
            Vectors(pa.struct([("data", pa.large_list(pa.float32()))])),
            pa.array([{"data": [1.0]}], pa.struct([("data", pa.large_list(pa.float32()))]))),
        "arrow.bool8": pa.ExtensionArray.from_storage(pa.bool8(), pa.array([1, 0], pa.int8())),
        "arrow.uuid": pa.ExtensionArray.from_storage(pa.uuid(),
                                                     pa.array([b"0" * 16], pa.binary(16))),
    }


@pytest.mark.parametrize("name", list(samples()))
@pytest.mark.parametrize("holder", ["array", "chunked array", "table column",
                                    "chunked table column"])
def test_unknown_extension_is_refused_naming_its_name_and_storage(name, holder):
    arr = samples()[name]
    value = {"array": arr, "chunked array": pa.chunked_array([arr]),
             "table column": pa.table({"c": arr}),
             "chunked table column": pa.table({"c": pa.chunked_array([arr, arr])})}[holder]
    words = (arr.type.extension_name, str(arr.type.storage_type))
    for target in ("torch", "numpy"):
        with pytest.raises(UnsupportedConversionError) as err:
            interop.to_framework(value, target, copy=True)
        assert all(w in str(err.value) for w in words), str(err.value)
        plan = interop.explain(value, target, copy=True)
        assert not plan.supported and all(w in str(plan) for w in words), str(plan)
        assert not interop.can_convert(value, target, copy=True)


def test_a_tensor_table_converts_after_a_table_of_another_extension_type():
    """Every extension type shares one Arrow type id: a column's reading is decided by its
    extension name, never by what the process read before."""
    code = """
        import numpy as np, pyarrow as pa, interop
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        bool8 = pa.ExtensionArray.from_storage(pa.bool8(), pa.array([1, 0, 1], pa.int8()))
        tensor = interop.to_framework(a, "pyarrow")
        order = {order}
        out = []
        for name in order:
            col = dict(bool8=bool8, tensor=tensor)[name]
            try:
                got = interop.to_framework(pa.table(dict(c=col)), "numpy")["c"]
                out.append((name, got.tolist()))
            except interop.InteropError as e:
                out.append((name, type(e).__name__, col.type.extension_name in str(e)))
        print(sorted(out))
    """
    seen = set()
    for order in (["bool8", "tensor"], ["tensor", "bool8"]):
        proc = run_child(code.replace("{order}", repr(order)))
        assert proc.returncode == 0, proc.stderr[-2000:]
        seen.add(proc.stdout.strip().splitlines()[-1])
    assert len(seen) == 1, seen
    want = np.arange(12, dtype=np.float32).reshape(3, 4).tolist()
    assert seen.pop() == str(sorted([("bool8", "UnsupportedConversionError", True),
                                     ("tensor", want)]))
