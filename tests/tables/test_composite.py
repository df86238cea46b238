"""The composite contract: a value of several arrays is its parts (dense arrays by role, a
layout, what rebuilding needs) and a rebuild from converted parts; each part takes the
registry's dense route. Tables and DALI batches are instances; a ragged batch of values and
offsets (the shape of Arrow list columns and of torch's jagged tensors) needs nothing else."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import torch

import interop
from helpers import aligned
from interop.adapters.base import CompositeAdapter, Parts
from interop.api import REGISTRY
from interop.default import build
from interop.errors import InteropError, ZeroCopyError


class Jagged:
    """Rows of different lengths: ``values`` and ``offsets`` (row ``i`` is
    ``values[offsets[i]:offsets[i + 1]]``)."""

    def __init__(self, values, offsets):
        self.values, self.offsets = values, offsets


def _rebuild(reg, parts: Parts, target: str):
    arrays = dict(parts.arrays)
    return Jagged(arrays["values"], arrays["offsets"]), dict(parts.meta)


JAGGED = CompositeAdapter(
    name="jagged",
    is_value=lambda x: isinstance(x, Jagged),
    parts=lambda j: Parts("jagged", (("values", j.values), ("offsets", j.offsets)),
                          (("rows", len(j.offsets) - 1),)),
    rebuild=_rebuild,
)


@pytest.fixture(scope="module")
def reg():
    r = build()
    r.add(JAGGED)
    return r


def _sample():
    return Jagged(aligned(np.arange(6, dtype=np.float32)), aligned(np.array([0, 2, 3, 6])))


def test_each_part_of_a_composite_takes_the_dense_route_zero_copy(reg):
    j = _sample()
    (out, meta) = reg.convert(j, "torch")
    assert isinstance(out.values, torch.Tensor) and isinstance(out.offsets, torch.Tensor)
    assert out.values.data_ptr() == j.values.ctypes.data
    assert out.offsets.data_ptr() == j.offsets.ctypes.data
    assert meta == {"rows": 3}
    j.values[4] = 40.0  # one buffer: the write through NumPy is seen by the tensor
    assert out.values[4].item() == 40.0
    plan = reg.explain(j, "torch")
    assert plan.supported and plan.zero_copy and plan.source == "jagged"


def test_a_part_that_must_copy_copies_alone_and_copy_false_refuses_naming_it(reg):
    j = Jagged(aligned(np.arange(6, dtype=np.float32))[::-1], aligned(np.array([0, 2, 6])))
    out, _ = reg.convert(j, "torch")  # torch takes no negative strides: that part copies
    assert out.values.data_ptr() != j.values.ctypes.data
    assert out.values.tolist() == j.values.tolist()
    assert out.offsets.data_ptr() == j.offsets.ctypes.data
    plan = reg.explain(j, "torch")
    assert plan.supported and not plan.zero_copy
    assert any(r.startswith("jagged values: ") for r in plan.reasons), plan.reasons
    assert not any(r.startswith("jagged offsets: ") for r in plan.reasons), plan.reasons
    with pytest.raises(ZeroCopyError):
        reg.convert(j, "torch", copy=False)
    assert reg.explain(j, "torch", copy=False).error == "zero-copy"
    fresh, _ = reg.convert(_sample(), "torch", copy=True)
    assert fresh.values.data_ptr() != _sample().values.ctypes.data


def test_an_option_no_part_takes_is_refused_by_convert_and_explain_alike(reg):
    with pytest.raises(InteropError, match="nulls"):
        reg.convert(_sample(), "torch", nulls="mask")
    with pytest.raises(InteropError, match="nulls"):
        reg.explain(_sample(), "torch", None, None, {"nulls": "mask"})


def test_tables_and_dali_batches_are_composites_whose_parts_are_their_columns_or_samples():
    from interop.adapters import dali_

    assert isinstance(dali_.BATCH, CompositeAdapter)
    t = pa.table({"a": np.arange(4.0), "b": np.arange(4, dtype=np.int32)})
    adapter = REGISTRY.adapters[REGISTRY.owner(t)]
    assert isinstance(adapter, CompositeAdapter)
    parts = adapter.parts(t)
    assert parts.layout == "table" and [name for name, _ in parts.arrays] == ["a", "b"]
    col = interop.to_framework(t, "numpy")["a"]  # zero-copy: the table shares its buffer
    assert col.ctypes.data == t.column("a").chunks[0].buffers()[1].address
    assert interop.shares_memory(t, col) and not interop.shares_memory(t, col.copy())
