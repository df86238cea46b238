"""The copy route, described once (interop.copyroute): explain's steps are what the conversion
does. Each case converts on a registry whose edges record the steps that run; the cast is read
from the result's dtype by its framework, the fresh buffer from the frameworks' own pointers,
the placement from JAX's ``devices()``, the narrowing from the warning the conversion emits."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

import oracles
from helpers import aligned
from interop.default import build
from interop.errors import NarrowingWarning

ROUTE_INTERNAL = ("to host NumPy", "fresh aligned copy", "onto the source's devices")
"""The explained steps that are the copy route's own (its read, copy and placement), not
edges."""


def _spied() -> tuple[Any, list[tuple[str, str, str]]]:
    """A registry whose route edges record ``(source, target, via)`` when they convert."""
    reg = build()
    ran: list[tuple[str, str, str]] = []
    real = reg.routes.route

    def spy(e: Any) -> Any:
        def converter() -> Any:
            call = e.converter()

            def convert(x: Any) -> Any:
                ran.append((e.source, e.target, e.via))
                return call(x)

            return convert

        return replace(e, converter=converter)

    def route(source: str, target: str, device: str = "cpu") -> Any:
        edges = real(source, target, device)
        return None if edges is None else [spy(e) for e in edges]

    reg.routes.route = route  # type: ignore[method-assign]
    return reg, ran


def _dtype(y: Any) -> np.dtype:
    """``y``'s dtype as its framework says it (torch's ``torch.float32`` read as NumPy's)."""
    return np.dtype(str(y.dtype).removeprefix("torch."))


def _numpy(name: str) -> Any:
    return aligned(np.arange(12, dtype=name).reshape(3, 4))


def _torch(name: str, transposed: bool = False) -> Any:
    import torch

    t = torch.from_numpy(_numpy(name).copy())
    return t.T if transposed else t


def _jax(name: str) -> Any:
    import jax.numpy as jnp

    return jnp.arange(12, dtype=name).reshape(3, 4)


def _arrow(name: str) -> Any:
    import pyarrow as pa

    return pa.array(aligned(np.arange(12, dtype=name)))


CASES = [
    # (value, target, copy): narrowing casts into JAX (64-bit types off), a copy forced by a
    # layout, the same framework placed back on its devices, plain copies
    pytest.param(lambda: _numpy("float64"), "jax", True, id="numpy-f64-jax-copy"),
    pytest.param(lambda: _numpy("int64")[:, ::2], "jax", None, id="numpy-strided-i64-jax"),
    pytest.param(lambda: _torch("float64"), "jax", True, id="torch-f64-jax-copy"),
    pytest.param(lambda: _torch("float64", True), "jax", None, id="torch-transposed-f64-jax"),
    pytest.param(lambda: _arrow("float64"), "jax", True, id="arrow-f64-jax-copy"),
    pytest.param(lambda: _jax("float32"), "jax", True, id="jax-jax-copy-placed"),
    pytest.param(lambda: _jax("int32"), "torch", True, id="jax-torch-copy"),
    pytest.param(lambda: _torch("float64"), "torch", True, id="torch-torch-copy"),
    pytest.param(lambda: _numpy("float32"), "torch", True, id="numpy-torch-copy"),
    pytest.param(lambda: _torch("float32", True), "numpy", True, id="torch-numpy-copy"),
]


@pytest.mark.filterwarnings("ignore::interop.errors.NarrowingWarning")
@pytest.mark.parametrize(("make", "tgt", "copy"), CASES)
def test_explain_names_the_copy_route_the_conversion_takes(make, tgt, copy):
    reg, ran = _spied()
    x = make()
    plan = reg.explain(x, tgt, copy=copy)
    assert plan.supported and not plan.zero_copy, plan
    copies = [s for s in plan.steps if s.copies]
    assert len(copies) == 1 and copies[0].via.startswith("fresh aligned copy"), plan
    cast = copies[0].via.partition(", cast to ")[2] or None
    placed = any(s.via.startswith("onto the source's devices") for s in plan.steps)
    edges = [(s.source, s.target, s.via) for s in plan.steps
             if not s.via.startswith(ROUTE_INTERNAL)]
    ran.clear()  # explain itself converts a step's value for the next step's check

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = reg.convert(x, tgt, copy=copy)
    narrowed = [str(w.message) for w in caught if issubclass(w.category, NarrowingWarning)]

    assert ran == edges, (plan, ran)  # the steps after the copy, and no edge when placed
    assert _dtype(y) == np.dtype(cast if cast is not None else _dtype(x)), (plan, y.dtype)
    assert narrowed == ([next(r for r in plan.reasons if "jax_enable_x64" in r)]
                        if cast is not None else []), (plan, narrowed)
    assert oracles.pointer(y) != oracles.pointer(x) and not oracles.shares(x, y)
    assert placed == (tgt == "jax" and type(x) is type(y)), plan
    if placed:
        assert y.devices() == x.devices() and y.sharding == x.sharding


def test_the_cast_is_read_per_value_when_64_bit_types_are_turned_on():
    """A copy plan kept while JAX narrows (64-bit types off) casts no later value once they
    are on, and explain, asked then, names no cast either: the cast is the copy route's one
    value-dependent decision, read per value from JAX's rule by both."""
    code = textwrap.dedent("""
        import warnings
        import jax, numpy as np, interop
        from interop.host import fresh_copy
        a = fresh_copy(np.arange(4.0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", interop.NarrowingWarning)
            assert interop.to_framework(a, "jax", copy=True).dtype == np.float32
            assert "cast to float32" in str(interop.explain(a, "jax", copy=True))
        jax.config.update("jax_enable_x64", True)
        warnings.simplefilter("error", interop.NarrowingWarning)
        y = interop.to_framework(a, "jax", copy=True)
        assert y.dtype == np.float64 and y.unsafe_buffer_pointer() != a.ctypes.data
        plan = interop.explain(a, "jax", copy=True)
        assert "cast to" not in str(plan) and not any("x64" in r for r in plan.reasons)
        print("OK")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "OK" in out.stdout, out.stderr[-2000:]


class DeviceDataStandIn:
    """A stand-in for a device array: its values in ``a`` (host memory here), on CUDA device 0
    as its adapter says; its buffer view reads ``a``'s own dtype string."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a


@pytest.mark.parametrize("copy", [None, True])
def test_a_move_of_device_data_into_jax_names_the_cast_the_move_makes(copy):
    """Device data moved to the host for JAX is cast as JAX (64-bit types off) holds it, and
    explain says so, reading the dtype from the value's buffer view (a host read would copy
    device data). It named no cast: the move plan read the dtype of host data only."""
    from interop.adapters.base import ArrayAdapter
    from interop.view import BufferView

    reg = build()
    reg.add(ArrayAdapter(
        name="ondevice", devices=("cpu", "cuda"), target=False,
        is_value=lambda x: isinstance(x, DeviceDataStandIn), device=lambda x: ("cuda", 0),
        to_numpy=lambda x: np.array(x.a),
        view=lambda x: BufferView(0, x.a.shape, x.a.strides, x.a.itemsize, x.a.dtype.str,
                                  ("cuda", 0))))
    a = np.arange(4.0)
    plan = reg.explain(DeviceDataStandIn(a), "jax", "cpu", copy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = reg.convert(DeviceDataStandIn(a), "jax", device="cpu", copy=copy)
    narrowed = [str(w.message) for w in caught if issubclass(w.category, NarrowingWarning)]
    assert plan.supported and [s.via for s in plan.steps] == [
        f"copy to cpu:0, cast to {_dtype(y)}"], plan
    assert _dtype(y) == np.float32 and narrowed == [plan.reasons[-1]], (plan, narrowed)


class Sealed:
    """A value of a framework that only its own kind of source reaches (no edge from NumPy)."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a


class Feeder:
    """A value that converts to ``Sealed`` by its own edge, and reads to NumPy."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a


def test_a_copy_with_no_path_after_it_is_unsupported_as_the_conversion_raises():
    """copy=True copies with NumPy and goes on from there; where NumPy reaches no step to the
    target, the conversion raises UnsupportedConversionError, and explain says so (it listed
    the copy and no step after it, supported)."""
    from interop.adapters.base import ArrayAdapter, Edge, fixed
    from interop.errors import UnsupportedConversionError

    reg = build()
    reg.add(ArrayAdapter(name="sealed", package="numpy",  # importable: installed
                         is_value=lambda x: isinstance(x, Sealed),
                         to_numpy=lambda s: s.a, edges=lambda: []))
    reg.add(ArrayAdapter(name="feeder", target=False, is_value=lambda x: isinstance(x, Feeder),
                         to_numpy=lambda f: f.a,
                         edges=lambda: [Edge("feeder", "sealed", "Sealed(f.a)",
                                             fixed(lambda f: Sealed(f.a)))]))
    a = np.arange(3.0)
    assert isinstance(reg.convert(Feeder(a), "sealed"), Sealed)  # its own edge, no copy
    plan = reg.explain(Feeder(a), "sealed", copy=True)
    with pytest.raises(UnsupportedConversionError, match="no conversion path from numpy"):
        reg.convert(Feeder(a), "sealed", copy=True)
    assert not plan.supported and plan.error == "unsupported", plan
    assert "no conversion path from numpy to sealed" in plan.reasons[-1]
