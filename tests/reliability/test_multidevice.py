"""JAX with several CPU devices: arrays placed on ``jax.devices("cpu")[k]``, sharded and
replicated over them, and ``device="cpu:N"`` (issue 41, issue 36 item 7).

Runs in its own pytest process (``pytest -m multidevice``; scripts/test.sh does it) with
``XLA_FLAGS=--xla_force_host_platform_device_count=4``, which must be set before JAX starts:
elsewhere (the core run, where JAX has one CPU device) these tests skip, saying so; in a
process that asked for four devices and got fewer they fail.

Truth comes from JAX's own accessors (``unsafe_buffer_pointer()`` of each shard,
``devices()``, ``sharding``), torch's ``data_ptr()`` and NumPy's ``ctypes.data``; a copy is
shown by a write through the result that no replica sees, a shared buffer by a write seen on
the other side.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import pytest
import test_reliability_properties as rp
from hypothesis import given, seed
from hypothesis import strategies as st

import interop
import oracles
from helpers import aligned
from interop.errors import DeviceError, InteropError, ZeroCopyError

COUNT = 4
ASKED = f"--xla_force_host_platform_device_count={COUNT}" in os.environ.get("XLA_FLAGS", "")

pytestmark = [
    pytest.mark.multidevice,
    pytest.mark.skipif(not ASKED, reason=f"needs JAX with {COUNT} CPU devices: run in its own "
                       f"process with XLA_FLAGS=--xla_force_host_platform_device_count="
                       f"{COUNT} (scripts/test.sh does)"),
]


@pytest.fixture(scope="module")
def cpus() -> list:
    """JAX's CPU devices (four of them, or the test fails: the flag did not take)."""
    import jax

    devs = jax.devices("cpu")
    assert len(devs) == COUNT, f"XLA_FLAGS asked for {COUNT} CPU devices, JAX has {devs}"
    return devs


def _mesh(cpus: list, shape: tuple[int, ...] = (COUNT,), axes: tuple[str, ...] = ("x",)):
    from jax.sharding import Mesh

    return Mesh(np.array(cpus).reshape(shape), axes)


def placed(cpus: list, kind: str, a: np.ndarray) -> Any:
    """``a`` on JAX's CPU devices: ``"dev<k>"`` (one device), ``"sharded"`` (rows over four),
    ``"replicated"`` (a copy on each of four), ``"mixed"`` (rows over two, each replicated
    on two)."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    if kind.startswith("dev"):
        return jax.device_put(a, cpus[int(kind[3:])])
    if kind == "sharded":
        return jax.device_put(a, NamedSharding(_mesh(cpus), P("x")))
    if kind == "replicated":
        return jax.device_put(a, NamedSharding(_mesh(cpus), P()))
    assert kind == "mixed"
    return jax.device_put(a, NamedSharding(_mesh(cpus, (2, 2), ("x", "y")), P("x")))


def shard_spans(x: Any) -> list[tuple[int, int]]:
    """Each shard's byte range, by JAX's own pointers."""
    return [(s.data.unsafe_buffer_pointer(), s.data.unsafe_buffer_pointer() + s.data.nbytes)
            for s in x.addressable_shards]


def replicas(x: Any) -> list[np.ndarray]:
    """Each shard's values, read through its own DLPack export now (no cached read)."""
    return [np.array(oracles.array(s.data.__dlpack__())) for s in x.addressable_shards]


def _aligned(n: int, dtype: Any = np.float32) -> np.ndarray:
    raw = np.empty(n * np.dtype(dtype).itemsize + 64, np.uint8)
    start = (-raw.ctypes.data) % 64
    out = raw[start:start + n * np.dtype(dtype).itemsize].view(dtype)
    out[...] = np.arange(n)
    return out


# ---- issue 41 item 1: a replicated array is gathered by a copy, as the plan says ------------

@pytest.mark.parametrize("tgt", ["torch", "numpy"])
def test_a_replicated_array_is_copied_not_a_writable_view_of_one_replica(cpus, tgt):
    import torch

    x = placed(cpus, "replicated", _aligned(8))
    plan = interop.explain(x, tgt)
    assert not plan.zero_copy and "replicated" in plan.reasons[0]
    assert not interop.can_convert(x, tgt, copy=False)
    with pytest.raises(ZeroCopyError):
        interop.to_framework(x, tgt, copy=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "not writable" warning from torch: nothing shared
        r = interop.to_framework(x, tgt)
    res = r.numpy() if tgt == "torch" else r
    lo = r.data_ptr() if tgt == "torch" else r.ctypes.data
    assert not any(a <= lo < b for a, b in shard_spans(x))
    assert not interop.shares_memory(x, r)
    res[0] = 99.0  # a write through the result reaches no replica
    assert all(rep[0] == 0.0 for rep in replicas(x))
    assert isinstance(r, torch.Tensor if tgt == "torch" else np.ndarray)


# ---- item 3: copy=True into JAX keeps the data where it is ----------------------------------

@pytest.mark.parametrize("kind", ["dev2", "sharded", "replicated", "mixed"])
def test_copy_true_into_jax_keeps_the_device_and_the_sharding(cpus, kind):
    x = placed(cpus, kind, _aligned(8))
    y = interop.to_framework(x, "jax", copy=True)
    assert y.sharding == x.sharding and y.devices() == x.devices()
    before = {a for a, _ in shard_spans(x)}
    assert not before & {a for a, _ in shard_spans(y)}
    assert not interop.shares_memory(x, y)
    np.testing.assert_array_equal(np.asarray(y), np.arange(8))
    assert interop.to_framework(x, "jax") is x  # copy=None: the array itself
    steps = [s.via for s in interop.explain(x, "jax", copy=True).steps]
    assert "onto the source's devices (its device or sharding)" in steps


# ---- item 5 and issue 36 item 7: shares_memory over shards and CPU indices ------------------

@pytest.mark.parametrize("kind", ["sharded", "replicated", "mixed"])
def test_shares_memory_reads_every_shard(cpus, kind):
    x = placed(cpus, kind, _aligned(8))
    assert interop.shares_memory(x, x)
    assert interop.shares_memory(x, interop.to_framework(x, "jax"))
    shard = x.addressable_shards[-1].data  # one device's buffer, of JAX's own making
    assert interop.shares_memory(x, shard) and interop.shares_memory(shard, x)
    assert not interop.shares_memory(x, np.arange(8.0))


def test_an_array_on_cpu_2_shares_memory_with_its_numpy_view(cpus):
    y = placed(cpus, "dev2", _aligned(8))
    n = interop.to_framework(y, "numpy")
    assert n.ctypes.data == y.unsafe_buffer_pointer()  # zero-copy, by both frameworks
    assert interop.shares_memory(y, n) and interop.shares_memory(n, y)
    assert interop.explain(y, "numpy").zero_copy


# ---- item 4 and issue 36 item 7: device="cpu:N" and JAX's CPU device objects -----------------

def test_a_jax_cpu_device_object_places_the_result_on_it(cpus):
    import torch

    t = torch.arange(8, dtype=torch.float32)
    y = interop.to_framework(t, "jax", device=cpus[3])
    assert y.devices() == {cpus[3]}
    assert y.unsafe_buffer_pointer() != t.data_ptr()  # a move between devices: a copy
    assert not interop.explain(t, "jax", device=cpus[3]).zero_copy
    np.testing.assert_array_equal(np.asarray(y), np.arange(8))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_cpu_n_into_jax_is_a_copy_onto_that_device(cpus, n):
    a = _aligned(8)
    a.flags.writeable = False
    plan = interop.explain(a, "jax", device=f"cpu:{n}")
    assert not plan.zero_copy and plan.steps[0].via == f"copy to cpu:{n}"
    y = interop.to_framework(a, "jax", device=f"cpu:{n}")
    assert y.devices() == {cpus[n]} and y.unsafe_buffer_pointer() != a.ctypes.data
    assert not interop.shares_memory(a, y)
    with pytest.raises(ZeroCopyError, match=f"cpu:{n}"):
        interop.to_framework(a, "jax", device=f"cpu:{n}", copy=False)
    assert not interop.can_convert(a, "jax", device=f"cpu:{n}", copy=False)


def test_cpu_n_of_the_device_the_array_is_on_keeps_it(cpus):
    x = placed(cpus, "dev2", _aligned(8))
    for dev in ("cpu:2", cpus[2], "cpu"):
        assert interop.explain(x, "jax", device=dev).zero_copy
        assert interop.to_framework(x, "jax", device=dev, copy=False) is x
    y = interop.to_framework(x, "jax", device="cpu:1")
    assert y.devices() == {cpus[1]} and y.unsafe_buffer_pointer() != x.unsafe_buffer_pointer()


def test_cpu_0_into_jax_from_numpy_is_zero_copy_on_cpu_0(cpus):
    a = _aligned(8)
    plan = interop.explain(a, "jax", device="cpu:0")
    y = interop.to_framework(a, "jax", device="cpu:0")
    assert plan.zero_copy and y.devices() == {cpus[0]}
    assert y.unsafe_buffer_pointer() == a.ctypes.data


@pytest.mark.parametrize("tgt", ["torch", "numpy", "pyarrow"])
def test_a_cpu_index_a_framework_of_one_cpu_does_not_have_is_refused(cpus, tgt):
    a = _aligned(8)
    for dev in ("cpu:2", cpus[3]):
        with pytest.raises(DeviceError, match="one CPU device"):
            interop.to_framework(a, tgt, device=dev)
        with pytest.raises(DeviceError, match="one CPU device"):
            interop.explain(a, tgt, device=dev)
        assert not interop.can_convert(a, tgt, device=dev)
    with pytest.raises(DeviceError, match="4 CPU devices"):
        interop.to_framework(a, "jax", device="cpu:4")


def test_cpu_0_to_torch_is_the_host_read_only_source_keeps_its_hazard(cpus):
    a = _aligned(8)
    a.flags.writeable = False
    plan = interop.explain(a, "torch", device="cpu:0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "not writable" warning (issue 36 item 1)
        t = interop.to_framework(a, "torch", device="cpu:0")
    assert plan.zero_copy and plan.hazards and t.data_ptr() == a.ctypes.data
    jx = placed(cpus, "dev3", _aligned(8))
    t = interop.to_framework(jx, "torch", device=cpus[0])  # JAX's cpu:0 is torch's host
    assert t.data_ptr() == jx.unsafe_buffer_pointer()


def test_plans_per_device_send_each_value_where_device_asks(cpus):
    """One kept plan (device="cpu:1") for values on every device: those on cpu:1 stay, the
    others are copied there."""
    for _ in range(2):  # the second round runs the kept plans
        for k in range(COUNT):
            x = placed(cpus, f"dev{k}", _aligned(8))
            y = interop.to_framework(x, "jax", device="cpu:1")
            assert y.devices() == {cpus[1]}
            assert (y.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()) == (k == 1)


# ---- issue 51 item 1: a move to cpu:N refuses what a copy refuses, reading the source once ---

def _agree(x: Any, device: Any, copy: bool | None, error: type | None) -> Any:
    """explain, can_convert and the conversion agree on ``x`` moved to ``device``: refused
    with ``error`` (``None``: converted, the result returned)."""
    plan = interop.explain(x, "jax", device=device, copy=copy)
    can = interop.can_convert(x, "jax", device=device, copy=copy)
    assert plan.supported == can == (error is None), (plan, can)
    if error is not None:
        with pytest.raises(error):
            interop.to_framework(x, "jax", device=device, copy=copy)
        return None
    return interop.to_framework(x, "jax", device=device, copy=copy)


def _with_nulls(kind: str, floats: bool) -> Any:
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    values = [1.0, None, 3.0] if floats else [1, None, 3]
    if kind == "pyarrow":
        return pa.array(values, pa.float32() if floats else pa.int32())
    if kind == "pandas":
        return pd.Series(values, dtype="Float32" if floats else "Int32")
    return pl.Series(values, dtype=pl.Float32 if floats else pl.Int32)


@pytest.mark.parametrize("kind", ["pyarrow", "pandas", "polars"])
@pytest.mark.parametrize("floats", [False, True])
@pytest.mark.parametrize("device", ["cpu:2", "object"])
def test_a_move_of_a_source_with_nulls_refuses_them_as_on_its_own_device(cpus, kind, floats,
                                                                         device):
    from interop.errors import NullsError

    x = _with_nulls(kind, floats)
    dev = cpus[2] if device == "object" else device
    for d in ("cpu:0", dev):  # cpu:0 (no move) and cpu:2 (a move) say the same
        _agree(x, d, None, NullsError)
        assert interop.explain(x, "jax", device=d).error == "nulls"
    y = _agree(x, dev, True, None if floats else NullsError)  # copy=True: floats get NaN
    if floats:
        assert y.devices() == {cpus[2]}
        want = [np.nan if v is None else v for v in pa_list(x)]
        np.testing.assert_array_equal(np.asarray(y), np.array(want, np.float32))


def pa_list(x: Any) -> list:
    """The values of an Arrow, pandas or polars column as the framework lists them (nulls
    ``None``): its own ``to_pylist``/``to_list``."""
    import pyarrow as pa

    return pa.array(x).to_pylist() if type(x).__module__.startswith("pandas") else (
        x.to_pylist() if hasattr(x, "to_pylist") else x.to_list())


@pytest.mark.parametrize("copy", [None, True])
def test_a_capsule_moved_to_cpu_n_is_read_once(cpus, copy):
    import torch

    t = torch.arange(6, dtype=torch.float32)
    plan = interop.explain(t.__dlpack__(), "jax", device="cpu:2", copy=copy)
    assert plan.supported and not plan.zero_copy
    assert interop.can_convert(t.__dlpack__(), "jax", device="cpu:2", copy=copy)
    y = interop.to_framework(t.__dlpack__(), "jax", device="cpu:2", copy=copy)
    assert y.devices() == {cpus[2]} and y.unsafe_buffer_pointer() != t.data_ptr()
    np.testing.assert_array_equal(np.asarray(y), t.numpy())


def test_a_structure_moved_to_cpu_n_names_the_leaf_that_fails(cpus):
    import pyarrow as pa

    from interop.errors import NullsError

    tree = {"a": np.arange(4, dtype=np.float32).__dlpack__(), "b": pa.array([1, None], pa.int32())}
    plan = interop.explain(tree, "jax", device="cpu:2", structure="tree")
    assert not plan.supported and plan.leaves["['a']"].supported
    assert plan.leaves["['b']"].error == "nulls"
    tree["a"] = np.arange(4, dtype=np.float32).__dlpack__()
    with pytest.raises(NullsError, match=r"leaf \['b'\]"):
        interop.to_framework(tree, "jax", device="cpu:2", structure="tree")


@pytest.mark.parametrize("value", ["datetime64", "str", "datetime64 scalar", "str scalar"])
@pytest.mark.parametrize("copy", [None, True])
def test_a_move_of_a_dtype_jax_has_not_is_refused(cpus, value, copy):
    from interop.errors import UnsupportedConversionError

    x = {"datetime64": np.array(["2020-01-01", "2021-01-01"], "datetime64[D]"),
         "str": np.array(["a", "b"]), "datetime64 scalar": np.datetime64("2020-01-01"),
         "str scalar": np.str_("a")}[value]
    for d in ("cpu:0", "cpu:2", cpus[3]):
        _agree(x, d, copy, UnsupportedConversionError)
    with pytest.raises(UnsupportedConversionError, match="datetime64|<U1"):
        interop.to_framework(x, "jax", device="cpu:2", copy=copy)


@pytest.mark.parametrize("copy", [None, True])
def test_a_typed_key_array_moved_to_another_cpu_is_refused(cpus, copy):
    import jax

    from interop.errors import UnsupportedConversionError

    k = jax.device_put(jax.random.key(0), cpus[1])
    for d in ("cpu:2", cpus[0]):
        _agree(k, d, copy, UnsupportedConversionError)
    with pytest.raises(UnsupportedConversionError, match="key_data"):
        interop.to_framework(k, "jax", device="cpu:2", copy=copy)
    assert interop.to_framework(k, "jax", device="cpu:1") is k  # no move: kept


def test_the_docs_examples_with_four_cpu_devices_run(cpus):
    from docs_examples import run_optional_blocks

    assert run_optional_blocks("multidevice") >= 1


# ---- the property search over multi-device values -------------------------------------------

KINDS = ("dev0", "dev1", "dev2", "dev3", "sharded", "replicated", "mixed")
TARGETS = ("numpy", "torch", "jax", "pyarrow", "dlpack")
DTYPES = ("float32", "int32", "int8", "bool", "float16", "complex64")


@st.composite
def multidevice_cases(draw) -> tuple:
    """(placement, dtype, rows, columns, target, copy, device); rows a multiple of four (two
    for "mixed"), so every sharding divides them."""
    kind = draw(st.sampled_from(KINDS))
    dtype = draw(st.sampled_from(DTYPES))
    rows = 4 * draw(st.integers(1, 3))
    cols = draw(st.sampled_from([None, 1, 3]))
    tgt = draw(st.sampled_from(TARGETS))
    copy = draw(st.sampled_from([None, False, True]))
    device = draw(st.sampled_from([None, "cpu", "cpu:0", "cpu:1", "cpu:3", "dev2"]))
    return kind, dtype, rows, cols, tgt, copy, device


def check_multidevice_case(cpus: list, case: tuple) -> None:
    """The contract for one multi-device value: explain, can_convert and the conversion
    agree; values, devices and sharding are right; zero-copy exactly when the plan says so,
    by JAX's shard pointers against the result's own; a zero-copy result shares memory by
    ``shares_memory`` and by a write; a copy is written without any replica seeing it."""
    kind, dtype, rows, cols, tgt, copy, device = case
    shape = (rows,) if cols is None else (rows, cols)
    a = rp.fill_values(np.dtype(dtype), int(np.prod(shape))).reshape(shape)
    x = placed(cpus, kind, a)
    dev = cpus[2] if device == "dev2" else device
    here = f"{case}"
    plan = err = None
    try:
        plan = interop.explain(x, tgt, device=dev, copy=copy)
    except InteropError as e:
        err = e
    can = interop.can_convert(x, tgt, device=dev, copy=copy)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = interop.to_framework(x, tgt, device=dev, copy=copy)
        got = None
    except InteropError as e:
        res, got = None, e
    if err is not None:  # explain refused the arguments themselves: so does everything else
        assert not can and got is not None, f"{here}\nexplain raised {err!r}, conversion {got}"
        rp._record(kind, tgt, rp.Outcome())
        return
    assert plan.supported == can == (got is None), f"{here}\n{plan}\n{got!r}"
    out = rp.Outcome(supported=plan.supported)
    if got is not None:
        rp._record(kind, tgt, out)
        return
    want = a.astype(rp.NARROWED.get(("jax", a.dtype.name), a.dtype))  # as JAX holds it
    values = rp.to_host(res) if not (tgt == "jax" and len(res.devices()) > 1) \
        else np.asarray(res)
    assert rp.same_values(values.reshape(shape), want), f"{here}\nwrong values"
    if tgt == "jax":
        index = {"cpu:0": 0, "cpu:1": 1, "cpu:3": 3, "dev2": 2}.get(device)
        if index is None:  # kept where it is, copy=True included
            assert res.sharding == x.sharding, f"{here}\n{res.sharding} != {x.sharding}"
        else:
            assert res.devices() == {cpus[index]}, f"{here}\n{res.devices()}"
    spans = shard_spans(x)
    res_spans = shard_spans(res) if tgt == "jax" else [rp.span(res)]
    shared = any(rp.overlaps(s, r) for s in spans for r in res_spans)
    assert shared == (plan.zero_copy and copy is not True), f"{here}\nshared {shared}\n{plan}"
    assert interop.shares_memory(x, res) == shared, f"{here}\nshares_memory"
    out.zero_copy = shared
    if not shared and tgt in ("numpy", "torch"):  # a copy: no replica sees a write through it
        writable = res if tgt == "numpy" else res.numpy()
        if writable.flags.writeable and writable.size and writable.dtype.kind != "b":
            before = replicas(x)
            writable.reshape(-1)[0] += 1
            assert all(np.array_equal(b, r) for b, r in zip(before, replicas(x))), here
    elif shared and tgt == "torch" and kind.startswith("dev") and dtype != "bool":
        res.view(-1)[0] += 1  # one buffer: JAX's own pointer reads the write
        assert replicas(x)[0].reshape(-1)[0] == res.view(-1)[0].item(), here
        out.wrote_through = True
    rp._record(kind, tgt, out)


def test_multidevice_values_keep_the_contract(cpus):
    @rp._settings()
    @given(multidevice_cases())
    def prop(case: tuple) -> None:
        check_multidevice_case(cpus, case)

    if rp.SEED is not None:
        prop = seed(int(rp.SEED))(prop)
    prop()


# ---- the property search over values moved to a CPU device (issue 51) -----------------------

MOVED = ("pyarrow", "pandas", "polars", "capsule", "datetime64", "str", "datetime64 scalar",
         "str scalar", "key", "numpy", "tree")
"""Sources moved to ``cpu:N``: columns of Arrow, pandas and polars (nulls or none), DLPack
capsules, dtypes JAX has not (arrays and scalars), typed PRNG keys on a device, plain arrays,
and a structure of two of them."""
DEVICES = (None, "cpu", "cpu:0", "cpu:1", "cpu:3", "dev2")


@st.composite
def moved_source(draw, tree: bool = True) -> tuple:
    """``(kind, dtype, n, nulls, where)``; a ``"tree"``: ``("tree", a, b)`` of two others."""
    kind = draw(st.sampled_from(MOVED if tree else MOVED[:-1]))
    if kind == "tree":
        return ("tree", draw(moved_source(False)), draw(moved_source(False)))
    return (kind, draw(st.sampled_from(["float32", "int32", "float64", "int8"])),
            draw(st.integers(0, 4)), draw(st.booleans()), draw(st.integers(0, COUNT - 1)))


def make_moved(cpus: list, spec: tuple) -> tuple[Any, Any]:
    """A fresh value of ``spec`` (a capsule is used once) and what it holds, read by its own
    framework: a NumPy array (nulls as NaN, or ``None`` where they have no NaN), a key's
    ``key_data``, or a dict of those for a tree."""
    import jax
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    if spec[0] == "tree":
        (a, want_a), (b, want_b) = make_moved(cpus, spec[1]), make_moved(cpus, spec[2])
        return {"a": a, "b": b}, {"a": want_a, "b": want_b}
    kind, dtype, n, nulls, where = spec
    values = aligned(rp.fill_values(np.dtype(dtype), n))  # 64-byte aligned: JAX aliases it
    if kind in ("pyarrow", "pandas", "polars"):
        items = [None if nulls and i % 2 else v for i, v in enumerate(values.tolist())]
        col = pa.array(items, pa.from_numpy_dtype(np.dtype(dtype)))
        x = col if kind == "pyarrow" else pl.from_arrow(col) if kind == "polars" else \
            col.to_pandas(types_mapper=pd.ArrowDtype) if dtype == "int8" else \
            pd.Series(pd.array(items, dtype=dtype.capitalize()))  # pandas' masked arrays
        listed = col.to_pylist()  # Arrow's own reading of the nulls
        holes = any(v is None for v in listed)
        want = None if holes and np.dtype(dtype).kind != "f" else np.array(
            [np.nan if v is None else v for v in listed], dtype)
        return x, (want, holes)
    if kind == "capsule":
        return values.__dlpack__(), (values, False)
    if kind == "key":
        k = jax.device_put(jax.random.key(n), cpus[where])
        return k, (np.asarray(jax.random.key_data(k)), False)
    if kind in ("datetime64", "str"):
        a = np.array(["2021-03-04"] * n, "datetime64[D]") if kind == "datetime64" \
            else np.array(["ab"] * n)
        return a, (a, False)
    if kind.endswith("scalar"):
        v = np.datetime64("2021-03-04") if kind.startswith("datetime64") else np.str_("ab")
        return v, (np.asarray(v), False)
    return values, (values, False)


def check_moved_case(cpus: list, spec: tuple, tgt: str, copy: bool | None,
                     device: str | None) -> None:
    """explain, can_convert and the conversion agree; a result holds the source's values as
    its own framework reads them, on the device asked for; values with nulls are refused
    unless ``copy=True`` (then NaN stands for them, or they are refused without a NaN);
    no raw framework error escapes."""
    dev = cpus[2] if device == "dev2" else device
    opts = {"structure": "tree"} if spec[0] == "tree" else {}
    here = f"{spec} -> {tgt}, copy={copy}, device={device}"
    plan = err = None
    try:
        plan = interop.explain(make_moved(cpus, spec)[0], tgt, device=dev, copy=copy, **opts)
    except InteropError as e:
        err = e
    can = interop.can_convert(make_moved(cpus, spec)[0], tgt, device=dev, copy=copy, **opts)
    x, want = make_moved(cpus, spec)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", interop.NarrowingWarning)
            res, got = interop.to_framework(x, tgt, device=dev, copy=copy, **opts), None
    except InteropError as e:
        res, got = None, e
    if err is not None:
        assert not can and got is not None, f"{here}\nexplain raised {err!r}, conversion {got}"
        rp._record("moved", tgt, rp.Outcome())
        return
    assert plan.supported == can == (got is None), f"{here}\n{plan}\n{got!r}"
    rp._record("moved", tgt, rp.Outcome(supported=got is None))
    if got is not None:
        return
    index = {"cpu:0": 0, "cpu:1": 1, "cpu:3": 3, "dev2": 2}.get(device)
    pairs = [(res, want, spec)] if spec[0] != "tree" else [
        (res["a"], want["a"], spec[1]), (res["b"], want["b"], spec[2])]
    for r, (values, holes), s in pairs:
        assert not holes or copy is True, f"{here}\nnulls converted without copy=True"
        assert values is not None, f"{here}\nnulls without a NaN converted"
        if s[0] == "key":  # kept as it is into JAX (no move, no copy asked for)
            assert tgt == "jax" and r is x if spec[0] != "tree" else True, here
            np.testing.assert_array_equal(np.asarray(jax_key_data(r)), values, err_msg=here)
            continue
        host = np.asarray(r) if tgt == "jax" else rp.to_host(r)
        wanted = values.astype(rp.NARROWED.get((tgt, values.dtype.name), values.dtype)) \
            if tgt == "jax" else values
        assert rp.same_values(host.reshape(wanted.shape), wanted) or (
            wanted.dtype.kind == "f" and np.allclose(host, wanted, equal_nan=True)), \
            f"{here}\n{host!r} != {wanted!r}"
        if tgt == "jax" and index is not None:
            assert r.devices() == {cpus[index]}, f"{here}\n{r.devices()}"


def jax_key_data(k: Any) -> Any:
    import jax

    return jax.random.key_data(k)


def test_values_moved_to_a_cpu_device_keep_the_contract(cpus):
    @rp._settings()
    @given(moved_source(), st.sampled_from(["jax", "jax", "numpy"]),
           st.sampled_from([None, False, True]), st.sampled_from(DEVICES))
    def prop(spec: tuple, tgt: str, copy: bool | None, device: str | None) -> None:
        check_moved_case(cpus, spec, tgt, copy, device)

    if rp.SEED is not None:
        prop = seed(int(rp.SEED))(prop)
    prop()


@pytest.mark.slow
def test_multidevice_random_search_with_a_fresh_seed(cpus):
    counts = rp.search("test_multidevice_values_keep_the_contract or "
                       "test_values_moved_to_a_cpu_device_keep_the_contract", "multidevice",
                       examples=rp.SLOW_EXAMPLES * 2, path=__file__, non_empty=0.0)
    assert counts["supported"] and counts["zero_copy"], counts
