"""Sparse values on a GPU are checked and fixed where they live (issue 47, item 1).

No device here: ``DeviceArrayStandIn`` plays a CuPy array (its type says ``cupy``, so interop
takes it as one), and the ``cupy`` module is a stand-in namespace, ``RecordingCupyStandIn``,
that runs each function NumPy's way on the stand-in arrays and records its name: CuPy's
API is NumPy's (``cupy.argsort``, ``cupy.lexsort``, ``cupy.add.reduceat``,
``cupy.searchsorted``, ``cupy.ravel_multi_index`` ... as cupy v14 ``cupy/_sorting``,
``cupy/_core/_kernel.pyx`` define them). A NumPy function called on a stand-in array outside
that namespace (a host computation on device data), a host copy (``reg.convert(...,
"numpy")``) or a host buffer (``interop.host.fresh_copy``) fails the test. Before, every
check and fix read a host copy (``sparse_parts._host``) and the fixed buffers came back as
host NumPy arrays: torch then refused CPU indices beside CUDA values. The results are
compared with SciPy's own ``sum_duplicates`` / dtypes.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
import scipy.sparse as sp

from interop.adapters import sparse_parts as sparse
from interop.api import REGISTRY

OPS: list[str] = []
HOST: list[str] = []
_INSIDE = [False]


class DeviceArrayStandIn(np.ndarray):
    """A CuPy array as sparse_parts reads it: NumPy's API, its type from ``cupy``."""

    __module__ = "cupy"

    def __array_function__(self, func, types_, args, kwargs):
        if not _INSIDE[0]:
            HOST.append(func.__name__)  # a NumPy (host) function on device data
        return super().__array_function__(func, types_, args, kwargs)


def _device(a):
    return np.asarray(a).view(DeviceArrayStandIn)


def _wrap(name, fn):
    def call(*args, **kwargs):
        for a in (*args, *kwargs.values()):
            if isinstance(a, np.ndarray) and not isinstance(a, DeviceArrayStandIn):
                HOST.append(f"{name}: a host array")
        OPS.append(name)
        _INSIDE[0] = True
        try:
            out = fn(*args, **kwargs)
        finally:
            _INSIDE[0] = False
        return out.view(DeviceArrayStandIn) if isinstance(out, np.ndarray) else out
    return call


class _Ufunc:
    def __init__(self, name, uf):
        self.name, self.uf = name, uf

    def __call__(self, *a, **k):
        return _wrap(self.name, self.uf)(*a, **k)

    def __getattr__(self, attr):
        return _wrap(f"{self.name}.{attr}", getattr(self.uf, attr))


class RecordingCupyStandIn(types.ModuleType):
    """``cupy`` as a namespace: NumPy's functions on the stand-in arrays, each recorded."""

    ndarray = DeviceArrayStandIn

    def __getattr__(self, name):
        obj = getattr(np, name)
        if isinstance(obj, np.ufunc):
            return _Ufunc(name, obj)
        if isinstance(obj, type) or not callable(obj):
            return obj
        return _wrap(name, obj)


@pytest.fixture
def on_device(monkeypatch):
    """The stand-in CuPy installed; host copies of device data fail the test."""
    from interop import host

    monkeypatch.setitem(sys.modules, "cupy", RecordingCupyStandIn("cupy"))
    OPS.clear()
    HOST.clear()
    real_convert, real_fresh = REGISTRY.convert, host.fresh_copy

    def convert(x, target, **kw):
        if isinstance(x, DeviceArrayStandIn):
            HOST.append(f"reg.convert(device array, {target!r})")
        return real_convert(x, target, **kw)

    def fresh(a, *args):
        if isinstance(a, DeviceArrayStandIn):
            HOST.append("host.fresh_copy(device array)")
        return real_fresh(a, *args)

    monkeypatch.setattr(REGISTRY, "convert", convert)
    monkeypatch.setattr(host, "fresh_copy", fresh)
    yield
    assert not HOST, f"host round trips: {HOST}"


def _fixed(parts, target, layout):
    parts, fixes = sparse.prepare(REGISTRY, parts, REGISTRY.builder(target, layout))
    for f in fixes:
        parts = f.apply(parts)
    return parts, fixes


def test_an_unsorted_csr_with_duplicates_is_sorted_and_summed_on_the_device(on_device):
    m = sp.csr_array((np.array([1.0, 2.0, 3.0, 4.0]), np.array([2, 0, 2, 1], np.int32),
                      np.array([0, 3, 4], np.int32)), shape=(2, 3))
    parts = sparse.compressed("csr", *(_device(a) for a in (m.data, m.indices, m.indptr)),
                              m.shape)
    fixed, fixes = _fixed(parts, "torch", "csr")  # torch's CSR needs canonical indices
    assert fixes and OPS, "fixed where it lives"
    a = dict(fixed.arrays)
    assert all(isinstance(v, DeviceArrayStandIn) for v in a.values()), a
    want = m.copy()
    want.sum_duplicates()  # SciPy's own canonical form is the oracle
    np.testing.assert_array_equal(np.asarray(a["indices"]), want.indices)
    np.testing.assert_array_equal(np.asarray(a["indptr"]), want.indptr)
    np.testing.assert_array_equal(np.asarray(a["data"]), want.data)
    assert sparse.canonical(fixed)


def test_int32_coo_coordinates_are_widened_on_the_device(on_device):
    """cupyx keeps int32 coordinates; torch's COO takes int64 only."""
    coords = np.array([[0, 1, 1], [2, 0, 1]], np.int32)
    parts = sparse.coo(_device(np.array([1.0, 2.0, 3.0])), _device(coords), (2, 3))
    fixed, fixes = _fixed(parts, "torch", "coo")
    c = fixed.array("coords")
    assert isinstance(c, DeviceArrayStandIn) and c.dtype == np.int64
    np.testing.assert_array_equal(np.asarray(c), coords)
    assert fixes and "array" in OPS  # the widened copy made by CuPy's cupy.array


def test_coo_coordinates_laid_out_for_jax_stay_a_view_on_the_device(on_device):
    """JAX lays COO coordinates out (nnz, ndim): the other layout is a transposed view of
    the device array, not a host copy."""
    coords = np.array([[1, 0, 1], [0, 2, 1]], np.int32)
    parts = sparse.coo(_device(np.array([1.0, 2.0, 5.0])), _device(coords), (2, 3))
    fixed, _ = _fixed(parts, "jax", "coo")
    c = fixed.array("coords")
    assert isinstance(c, DeviceArrayStandIn) and c.shape == (3, 2)
    np.testing.assert_array_equal(np.asarray(c), coords.T)


def test_the_invariant_check_of_a_device_value_runs_on_the_device(on_device):
    """Every conversion and every ``explain`` checks a value: the index arrays stay where
    they are (before: each was copied to the host, 150 MiB for 10M entries)."""
    from interop.errors import MalformedError

    m = sp.csr_array(np.eye(3))
    parts = sparse.compressed("csr", *(_device(a) for a in (m.data, m.indices, m.indptr)),
                              m.shape)
    checked = sparse.check(REGISTRY, parts)
    assert checked.get("canonical") is True and OPS
    bad = sparse.compressed("csr", _device(m.data), _device(np.array([0, 5, 2], np.int32)),
                            _device(m.indptr), m.shape)
    with pytest.raises(MalformedError, match=r"indices from 0 to 5"):
        sparse.check(REGISTRY, bad)


def test_without_cupy_a_device_value_is_checked_through_a_host_copy_and_not_fixed():
    """A registry where torch tensors say they live on a CUDA device and CuPy is not
    installed (its package named ``not-cupy``): the check reads a host copy; a fix, which must
    stay on the device, is a FrameworkMissingError naming CuPy."""
    from dataclasses import replace

    import torch

    from interop.default import build
    from interop.errors import FrameworkMissingError

    reg = build()
    reg.add(replace(reg.adapters["torch"], device=lambda t: ("cuda", 0)))
    reg.add(replace(reg.adapters["cupy"], package="not_cupy_installed_here"))
    parts = sparse.coo(torch.tensor([1.0, 2.0]), torch.tensor([[0, 1], [1, 0]],
                                                               dtype=torch.int32), (2, 2))
    assert sparse.check(reg, parts).get("canonical") is True
    with pytest.raises(FrameworkMissingError, match="with CuPy, which is not installed"):
        _fixed_in(reg, parts, "torch", "coo")  # torch's COO takes int64: a widening


def _fixed_in(reg, parts, target, layout):
    parts, fixes = sparse.prepare(reg, parts, reg.builder(target, layout))
    for f in fixes:
        parts = f.apply(parts)
    return parts
