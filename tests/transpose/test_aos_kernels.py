"""The AoS <-> SoA kernels, value by value against NumPy's own field access, on random layouts.

Each property runs on both kernels (named by the public ``kernel=`` of the calls: ``llvm``
whatever the size, ``numpy`` always): field counts, field types, padding and offsets
(aligned, packed, explicit gaps),
row counts (0 and 1 included), strided and read-only sources, misaligned ``out=``. The truth
is NumPy's field access (``rows[name]``), compared byte for byte (NaN payloads included).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import interop
from helpers import run_child
from interop import transpose_kernel
from interop.errors import InteropError, UnsupportedConversionError
from interop.transpose import cpu as transpose

TYPES = ["i1", "u1", "?", "<i2", "<f2", "<i4", "<u4", "<f4", "<i8", "<u8", "<f8",
         "<M8[us]", "<m8[ns]", ">i4", ">f8"]
THREADED = {"kernel": "llvm", "threads": 3}
"""The compiled kernel, its rows shared among three threads (a block per piece)."""
PROPS = settings(max_examples=40, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture,
                                        HealthCheck.too_slow])


@pytest.fixture(params=["llvm", "numpy"])
def kernel(request):
    """The kernel every transpose of the test names (``kernel=``; ``transpose_kernel`` says
    that it runs)."""
    if request.param == "llvm":
        pytest.importorskip("llvmlite")
    assert transpose_kernel(1 << 10, kernel=request.param).name == request.param
    return request.param


def _random(dt: np.dtype, n: int, seed: int) -> np.ndarray:
    """``n`` records of ``dt`` with random bytes in every field (booleans 0 or 1)."""
    rng = np.random.default_rng(seed)
    a = np.frombuffer(rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).tobytes(),
                      dtype=dt).copy()
    for name in dt.names or ():
        if dt.fields[name][0].kind == "b":
            a[name] = rng.integers(0, 2, n).astype(bool)
    return a


def _same_bytes(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


@st.composite
def record_dtypes(draw, max_fields: int = 24):
    """A structured dtype: 1..max_fields fields of mixed types, packed, aligned or with gaps."""
    k = draw(st.integers(1, max_fields))
    types = [np.dtype(draw(st.sampled_from(TYPES))) for _ in range(k)]
    names = [f"f{i}" for i in range(k)]
    how = draw(st.sampled_from(["packed", "aligned", "gaps"]))
    if how != "gaps":
        return np.dtype({"names": names, "formats": types}, align=how == "aligned")
    offsets, at = [], 0
    for t in types:
        at += draw(st.integers(0, 9))
        offsets.append(at)
        at += t.itemsize
    return np.dtype({"names": names, "formats": types, "offsets": offsets,
                     "itemsize": at + draw(st.integers(0, 9))})


ROWS = st.sampled_from([0, 1, 2, 7, 8, 9, 63, 64, 65, 1000, 4099])


@PROPS
@given(dt=record_dtypes(), n=ROWS, step=st.sampled_from([1, 1, 2, -1]),
       read_only=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_records_to_columns_match_numpy_fields(kernel, dt, n, step, read_only, seed):
    base = _random(dt, n * abs(step), seed)
    rows = base[::step]
    rows.flags.writeable = not read_only
    cols = interop.aos_to_soa(rows, target="numpy", kernel=kernel)
    assert list(cols) == list(dt.names)
    for name in dt.names:
        _same_bytes(cols[name], rows[name])
        assert cols[name].flags.c_contiguous and cols[name].flags.writeable


@PROPS
@given(dt=record_dtypes(), n=ROWS, seed=st.integers(0, 2**32 - 1),
       misalign=st.integers(0, 7))
def test_columns_to_records_match_numpy_fields(kernel, dt, n, seed, misalign):
    want = _random(dt, n, seed)
    src = {name: np.ascontiguousarray(want[name]) for name in dt.names}
    got = interop.soa_to_aos(src, target="numpy", kernel=kernel, dtype=dt)
    assert got.dtype == dt and got.shape == (n,)
    for name in dt.names:
        _same_bytes(got[name], want[name])
    raw = np.zeros(n * dt.itemsize + 8, np.uint8)  # records starting at any byte
    out = raw[misalign:misalign + n * dt.itemsize].view(dt)
    res = interop.soa_to_aos(src, target="numpy", kernel=kernel, dtype=dt, out=out)
    assert res.ctypes.data == out.ctypes.data  # written in place
    assert n == 0 or out.ctypes.data == raw.ctypes.data + misalign
    for name in dt.names:
        _same_bytes(out[name], want[name])


@PROPS
@given(c=st.integers(1, 40), n=ROWS, t=st.sampled_from(TYPES), layout=st.sampled_from(
    ["c", "fortran", "sliced", "misaligned"]), read_only=st.booleans(),
    seed=st.integers(0, 2**32 - 1), out_misalign=st.integers(0, 7))
def test_two_d_rows_to_columns_and_back(kernel, c, n, t, layout, read_only, seed, out_misalign):
    dt = np.dtype(t)
    flat = _random(np.dtype([("x", dt)]), n * c * 2, seed)["x"]
    if layout == "c":
        a = flat[:n * c].reshape(n, c)
    elif layout == "fortran":
        a = np.asfortranarray(flat[:n * c].reshape(n, c))
    elif layout == "sliced":
        a = flat.reshape(n, 2 * c)[:, ::2] if n else flat[:0].reshape(0, c)
    else:  # every element at an odd address
        raw = np.zeros(n * c * dt.itemsize + 1, np.uint8)
        a = raw[1:].view(dt).reshape(n, c)
        a[...] = flat[:n * c].reshape(n, c)
    a.flags.writeable = not read_only
    want = a.T.copy()
    cols = interop.aos_to_soa(a, target="numpy", kernel=kernel)
    for j in range(c):
        _same_bytes(cols[f"c{j}"], want[j])
    raw = np.zeros(n * c * dt.itemsize + 8, np.uint8)
    out = raw[out_misalign:out_misalign + n * c * dt.itemsize].view(dt).reshape(c, n)
    interop.aos_to_soa(a, target="numpy", kernel=kernel, out=out)
    _same_bytes(out, want)
    # columns of one (C, N) buffer
    back = interop.soa_to_aos(cols, target="numpy", kernel=kernel, dtype=dt)
    _same_bytes(back, np.ascontiguousarray(a))
    separate = {k: v.copy() for k, v in cols.items()}  # columns anywhere in memory
    rows = np.zeros(n * c * dt.itemsize + 8, np.uint8)
    rows_out = rows[out_misalign:out_misalign + n * c * dt.itemsize].view(dt).reshape(n, c)
    interop.soa_to_aos(separate, target="numpy", kernel=kernel, dtype=dt, out=rows_out)
    _same_bytes(rows_out, np.ascontiguousarray(a))


@pytest.mark.parametrize("fields", [2, 100, 256])
def test_many_fields_mixed_and_homogeneous(kernel, fields):
    rng = np.random.default_rng(fields)
    mixed = np.dtype([(f"f{i}", TYPES[i % len(TYPES)]) for i in range(fields)], align=True)
    for dt in (mixed, np.dtype([(f"f{i}", "<f4") for i in range(fields)])):
        rows = _random(dt, 3001, int(rng.integers(1 << 30)))
        cols = interop.aos_to_soa(rows, target="numpy", kernel=kernel)
        for name in dt.names:
            _same_bytes(cols[name], rows[name])
        back = interop.soa_to_aos(cols, target="numpy", kernel=kernel, dtype=dt)
        for name in dt.names:
            _same_bytes(back[name], rows[name])


def test_columns_of_other_types_are_cast_by_numpy(kernel):
    cols = {"a": np.arange(5000, dtype=np.int32), "b": np.linspace(0, 1, 5000)[::-1]}
    assert transpose.kernel(1 << 30, cast=True).name == "numpy"
    got = interop.soa_to_aos(cols, target="numpy", kernel=kernel)
    np.testing.assert_array_equal(got, np.stack([cols["a"].astype(float), cols["b"]], 1))


def test_the_decision_names_its_reasons(monkeypatch):
    monkeypatch.setattr(transpose, "_llvm", {})  # not loaded yet in this process
    small = transpose.kernel(1 << 20)
    assert small.name == "numpy" and "loading it" in small.why
    big = transpose.kernel(1 << 30)
    assert big.name == "llvm" and "loading it now" in big.why
    wide = transpose.kernel(1 << 30, row_stride=transpose._RECORD_MAX + 1)
    assert wide.name == "numpy" and "bytes apart" in wide.why
    assert transpose.kernel(1 << 30, row_stride=-8).name == "numpy"
    assert transpose.kernel(1 << 30, row_stride=0).name == "numpy"
    assert transpose.kernel(1 << 30, row_stride=8, record_bytes=16).name == "numpy"  # overlap
    monkeypatch.setattr(transpose, "_llvm", {"error": "llvmlite is not installed (pip ...)"})
    absent = transpose_kernel(1 << 30)
    assert absent == ("numpy", "llvmlite is not installed (pip ...)")


def test_records_wider_than_the_kernel_takes_are_copied_by_numpy():
    wide = transpose._RECORD_MAX
    dt = np.dtype({"names": ["a", "b"], "formats": ["<f8", "<i4"], "offsets": [0, wide],
                   "itemsize": wide + 8})
    rows = _random(dt, 3, 0)
    asked = transpose.kernel(rows.nbytes, row_stride=dt.itemsize, choice="llvm")
    assert asked.name == "numpy" and "bytes apart" in asked.why
    cols = interop.aos_to_soa(rows, target="numpy", kernel="llvm")
    _same_bytes(cols["a"], rows["a"])
    _same_bytes(cols["b"], rows["b"])


def test_records_written_backwards_or_read_backwards_are_copied_by_numpy():
    """``out=`` and sources with a negative row stride (reversed views): the right values,
    by NumPy (the compiled kernel, though asked for, takes rows in order of address)."""
    dt = np.dtype([("a", "<f4"), ("b", "<i8")])
    cols = {"a": np.arange(1000, dtype=np.float32), "b": np.arange(1000, dtype=np.int64)}
    out = np.zeros(1000, dt)[::-1]
    interop.soa_to_aos(cols, target="numpy", kernel="llvm", dtype=dt, out=out)
    _same_bytes(out["a"], cols["a"])
    _same_bytes(out["b"], cols["b"])
    rows = np.zeros((1000, 8), np.float32)[::-1]
    src = {f"c{j}": np.arange(1000, dtype=np.float32) + j for j in range(8)}
    interop.soa_to_aos(src, target="numpy", kernel="llvm", out=rows)
    _same_bytes(rows, np.stack(list(src.values()), 1))
    back = interop.aos_to_soa(rows[::-1], target="numpy", kernel="llvm")  # read backwards
    _same_bytes(back["c3"], src["c3"][::-1].copy())
    raws = [np.zeros(999 * 4 + dt.itemsize, np.uint8) for _ in range(2)]
    got, want = (np.lib.stride_tricks.as_strided(r.view(dt), shape=(1000,), strides=(4,))
                 for r in raws)  # records overlapping each other
    interop.soa_to_aos(cols, target="numpy", kernel="llvm", dtype=dt, out=got)  # no overrun
    for name in dt.names:  # NumPy's own assignment, field by field, is the truth
        want[name] = cols[name]
    assert raws[0].tobytes() == raws[1].tobytes()


def test_an_empty_out_is_taken_whatever_its_strides():
    """NumPy gives ``np.zeros((0, 3))`` the strides ``(0, 0)``: no rows, nothing to check."""
    out = np.zeros((0, 3), np.int32)
    cols = {k: np.zeros(0, np.int32) for k in "abc"}
    got = interop.soa_to_aos(cols, target="numpy", out=out)
    assert got.shape == (0, 3) and got.ctypes.data == out.ctypes.data


def test_a_small_transpose_never_imports_llvmlite_a_large_one_does():
    """In a fresh interpreter: a transpose under the threshold leaves ``llvmlite`` out of
    ``sys.modules``; the first one over it loads it (never Numba) and says so."""
    pytest.importorskip("llvmlite")
    code = """
        import sys, numpy as np, interop
        from interop.transpose import cpu as transpose
        rows = np.ones((transpose.KERNEL_MIN_BYTES // 8 - 8, 2), np.float32)
        interop.aos_to_soa(rows, target="numpy")
        interop.soa_to_aos({"a": rows[:, 0].copy(), "b": rows[:, 1].copy()}, target="numpy")
        print("llvmlite" in sys.modules, transpose.kernel(rows.nbytes).name)
        big = np.ones((transpose.KERNEL_MIN_BYTES // 8, 2), np.float32)
        why = interop.transpose_kernel(big.nbytes)
        cols = interop.aos_to_soa(big, target="numpy")
        assert (cols["c1"] == 1).all()
        print("llvmlite" in sys.modules, why.name, "numba" in sys.modules)
    """
    out = run_child(code, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "numpy", "True", "llvm", "False"], out.stdout


def test_without_llvmlite_the_numpy_kernel_runs():
    """``import llvmlite`` fails (blocked in ``sys.modules``): large transposes use NumPy."""
    code = """
        import sys
        sys.modules["llvmlite"] = None
        import numpy as np, interop
        from interop.transpose import cpu as transpose
        big = np.arange(2 * (transpose.KERNEL_MIN_BYTES // 8), dtype=np.float32).reshape(-1, 2)
        k = transpose.kernel(big.nbytes)
        cols = interop.aos_to_soa(big, target="numpy")
        assert (cols["c1"] == big[:, 1]).all()
        print(k.name, k.why)
    """
    out = run_child(code, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("numpy llvmlite is not installed"), out.stdout


def test_bad_input_errors_name_the_value_and_the_fix():
    with pytest.raises(InteropError, match="structured array or a 2-D"):
        interop.aos_to_soa(np.arange(6.0))
    with pytest.raises(UnsupportedConversionError):
        interop.aos_to_soa("not records")
    rec = np.zeros(4, dtype=[("a", "<f4"), ("b", "<f4")])
    with pytest.raises(InteropError, match=r"shape \(2, 4\) and dtype float32; got shape \(4, 2\)"):
        interop.aos_to_soa(rec, out=np.empty((4, 2), np.float32))
    ro = np.empty((2, 4), np.float32)
    ro.flags.writeable = False
    with pytest.raises(InteropError, match="read-only"):
        interop.aos_to_soa(rec, out=ro)
    cols = {"a": np.zeros(4), "b": np.zeros(4)}
    with pytest.raises(InteropError, match="2 fields .* for 3 columns"):
        interop.soa_to_aos({**cols, "c": np.zeros(4)}, target="numpy",
                           dtype=[("x", "<f8"), ("y", "<f8")])
    with pytest.raises(InteropError, match=r"records array of shape \(4,\)"):
        interop.soa_to_aos(cols, target="numpy", dtype=[("x", "<f8"), ("y", "<f8")],
                           out=np.empty(3, [("x", "<f8"), ("y", "<f8")]))
    with pytest.raises(UnsupportedConversionError, match="cannot be columns"):
        interop.soa_to_aos(cols, target="numpy", dtype=[("x", "U3"), ("y", "<f8")])


def test_the_compiled_kernel_is_cached_on_disk_not_compiled_again(tmp_path):
    """Two fresh interpreters with one ``INTEROP_CACHE_DIR``: the first compiles the kernel and
    saves its machine code there, the second loads that file and compiles nothing."""
    pytest.importorskip("llvmlite")
    import os
    import subprocess

    code = ("import numpy as np, interop\n"
            "from interop.transpose import cpu as transpose\n"
            "a = np.arange(64, dtype=np.float32).reshape(32, 2)\n"
            "cols = interop.aos_to_soa(a, target='numpy', kernel='llvm')\n"
            "assert (cols['c1'] == a[:, 1]).all()\n"
            "k = transpose._llvm['kernels']\n"
            "print(k.how, k.path)\n")
    env = {**os.environ, "INTEROP_CACHE_DIR": str(tmp_path)}
    logs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=600) for _ in range(2)]
    for out in logs:
        assert out.returncode == 0, out.stderr
    (how0, path0), (how1, path1) = (out.stdout.split() for out in logs)
    assert (how0, how1) == ("compiled", "cache") and path0 == path1
    assert os.path.dirname(path0) == str(tmp_path) and os.path.getsize(path0) > 0


def test_the_compiled_kernel_shares_pieces_among_threads(monkeypatch):
    """With ``threads=3``, pieces of rows go to the pool's threads too (the kernel
    runs without the GIL): the same bytes as NumPy's field access, in both directions, on
    records (mixed, padded) and on a 2-D array whose columns start off a cache line."""
    pytest.importorskip("llvmlite")
    import threading

    seen: set[str] = set()
    run_pieces = transpose._run_pieces

    def spy(pieces, nbytes, copy, threads):
        caller, helped = threading.current_thread(), threading.Event()

        def traced(i, j):  # the caller waits for a pool thread to take a piece first
            me = threading.current_thread()
            if me is not caller:
                helped.set()
            elif len(pieces) > 1:
                helped.wait(10)
            seen.add(me.name)
            copy(i, j)

        run_pieces(pieces, nbytes, traced, threads)

    monkeypatch.setattr(transpose, "_run_pieces", spy)
    dt = np.dtype([("a", "<f8"), ("b", "i1"), ("c", "<u4"), ("d", "?"), ("e", "<i2")],
                  align=True)
    rows = _random(dt, 20011, 3)
    cols = interop.aos_to_soa(rows, target="numpy", **THREADED)
    for name in dt.names:
        _same_bytes(cols[name], rows[name])
    back = interop.soa_to_aos({k: cols[k] for k in dt.names}, target="numpy", **THREADED,
                              dtype=dt)
    for name in dt.names:
        _same_bytes(back[name], rows[name])
    a = np.random.default_rng(4).standard_normal((9973, 5)).astype(np.float32)
    out = np.zeros((5, 9973), np.float32)  # rows of 39,892 bytes: each starts elsewhere in a line
    interop.aos_to_soa(a, target="numpy", **THREADED, out=out)
    _same_bytes(out, np.ascontiguousarray(a.T))
    two = interop.soa_to_aos({f"c{j}": out[j] for j in range(5)}, target="numpy", **THREADED)
    _same_bytes(np.asarray(two), a)
    assert len(seen) > 1 and any(t.startswith("interop-aos") for t in seen), seen


def test_the_compiled_kernel_runs_in_a_forked_child():
    """A child forked after the kernel ran (its threads and stages made) transposes on its
    own threads: the engine's code is mapped in the child, the pool is made again."""
    pytest.importorskip("llvmlite")
    import multiprocessing

    a = np.arange(40000 * 9, dtype=np.float64).reshape(40000, 9)
    _same_bytes(interop.aos_to_soa(a, target="numpy", **THREADED)["c4"], a[:, 4].copy())
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        ok = pool.apply(_transpose_in_child, (a,))
    assert ok


def _transpose_in_child(a: np.ndarray) -> bool:
    cols = interop.aos_to_soa(a, target="numpy", **THREADED)
    back = interop.soa_to_aos(cols, target="numpy", **THREADED)
    ran = transpose.kernel(a.nbytes, choice="llvm").name
    return ran == "llvm" and bool(np.array_equal(back, a))


def test_the_compiled_kernel_serves_callers_on_several_threads_at_once():
    """The kernel keeps no state between calls (each thread stages in its own buffer): four
    threads transposing different arrays at once, each on pieces shared with the pool, all
    get their own values."""
    pytest.importorskip("llvmlite")
    from concurrent.futures import ThreadPoolExecutor

    inputs = [np.random.default_rng(i).standard_normal((30011, 8 + i)).astype(np.float32)
              for i in range(4)]

    def both_ways(a: np.ndarray) -> bool:
        ok = True
        for _ in range(5):
            cols = interop.aos_to_soa(a, target="numpy", **THREADED)
            ok &= bool(np.array_equal(interop.soa_to_aos(cols, target="numpy", **THREADED), a))
        return ok

    with ThreadPoolExecutor(4) as ex:
        assert all(ex.map(both_ways, inputs))


def test_an_unwritable_cache_is_skipped_and_the_kernel_still_runs(tmp_path):
    """``INTEROP_CACHE_DIR`` names a file, so no directory can be made there: the kernel is
    compiled, runs, and leaves nothing behind."""
    pytest.importorskip("llvmlite")
    import os
    import subprocess

    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    code = ("import numpy as np, interop\n"
            "from interop.transpose import cpu as transpose\n"
            "a = np.arange(64, dtype=np.float32).reshape(32, 2)\n"
            "assert (interop.aos_to_soa(a, target='numpy', kernel='llvm')['c1'] "
            "== a[:, 1]).all()\n"
            "print(transpose._llvm['kernels'].how)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "INTEROP_CACHE_DIR": str(blocked)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["compiled"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_the_calling_convention_is_declared_once_and_read_by_ir_and_ctypes():
    """The IR of every exported function, the ctypes prototype and the call's fields all
    come from ``abi.ARGS``: the same names, in the same order, of matching widths."""
    pytest.importorskip("llvmlite")
    import ctypes

    from interop.transpose import abi, llvm

    names = [name for name, _ in abi.ARGS]
    assert list(abi.Call._fields) == names
    module = llvm._Builder().module
    exported = [f for f in module.functions if f.name.startswith(("gather", "scatter"))]
    assert len(exported) == sum(1 + len(w) for w in llvm.UNIFORM.values())
    proto = abi.prototype()
    for f in exported:
        assert [a.name for a in f.args] == names, f.name
        for a, ctype in zip(f.args, proto._argtypes_):
            bits = 64 if str(a.type).endswith("*") else a.type.width
            assert ctypes.sizeof(ctype) * 8 == bits, (f.name, a.name)
        noalias = {a.name for a in f.args if "noalias" in a.attributes}
        assert noalias == set(abi.NOALIAS), f.name


def test_a_kernel_or_thread_count_no_transpose_takes_is_refused_by_name():
    rows = np.ones((4, 2), np.float32)
    with pytest.raises(InteropError, match=r"kernel='fast': use 'llvm'"):
        interop.aos_to_soa(rows, target="numpy", kernel="fast")
    with pytest.raises(InteropError, match=r"threads=0: give a number of threads"):
        interop.soa_to_aos({"a": rows[:, 0]}, target="numpy", threads=0)
    with pytest.raises(InteropError, match="kernel='fast'"):
        transpose_kernel(1 << 30, kernel="fast")
    assert transpose_kernel(1 << 10, kernel="numpy") == ("numpy", "kernel='numpy' asks for "
                                                         "NumPy's blocked copies")
