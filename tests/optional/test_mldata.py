"""The ML data libraries' own tensor columns (Ray Data, Hugging Face ``datasets``, Daft; Lance's
canonical ones): made by each library, converted zero-copy, equal to the library's own reading.

Runs in its own pytest process (``pytest -m mldata``; scripts/test.sh does it): Ray and
``datasets`` register Arrow extension types process-wide and Daft starts its own threads, so
the core run imports none of them. Each library is imported inside a fixture and skips, with
the reason, where it is not installed (``pip install "interop-mempool[ray,datasets,daft]"``).

Oracles: the values each library reads itself (Ray's ``to_numpy``, ``datasets``'
``ArrayExtensionArray.to_numpy`` and ``with_format("numpy")``, Daft's ``to_pydict``), the
address of the values buffer by Arrow's own accessors against torch's ``data_ptr()`` and
NumPy's ``ctypes.data``, and a write through the result read back by the library.
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, seed, settings
from hypothesis import strategies as st

import interop
from docs_examples import run_optional_blocks
from helpers import assert_same_array, report_upstream, run_child
from interop.errors import MalformedError, NullsError, UnsupportedConversionError, ZeroCopyError

pytestmark = [pytest.mark.mldata]


@pytest.fixture(scope="module")
def pa():
    import pyarrow as pa

    return pa


@pytest.fixture(scope="module")
def ray_tensors():
    pytest.importorskip("ray", reason="Ray Data is not installed (the ray extra)")
    from ray.data.context import DataContext
    from ray.data.extensions import ArrowTensorArray

    return ArrowTensorArray, DataContext


@pytest.fixture(scope="module")
def datasets():
    return pytest.importorskip("datasets", reason="datasets is not installed (its extra)")


@pytest.fixture(scope="module")
def daft():
    return pytest.importorskip("daft", reason="Daft is not installed (the daft extra)")


def leaf_address(values) -> int:
    """The address of the first item of an Arrow primitive array, by Arrow's accessors."""
    return values.buffers()[1].address + values.offset * (values.type.bit_width // 8)


def ray_make(ray_tensors, a, fmt: str = "V2"):
    """``ArrowTensorArray.from_numpy(a)`` in Ray's tensor format ``fmt`` (V1, V2)."""
    from ray.data._internal.tensor_extensions.arrow import FixedShapeTensorFormat

    ArrowTensorArray, DataContext = ray_tensors
    ctx = DataContext.get_current()
    old = ctx.arrow_fixed_shape_tensor_format
    ctx.arrow_fixed_shape_tensor_format = getattr(FixedShapeTensorFormat, fmt)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Ray's notice on ragged lists: object arrays
            return ArrowTensorArray.from_numpy(a)
    finally:
        ctx.arrow_fixed_shape_tensor_format = old


# ---- Ray Data --------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt,name", [("V1", "ray.data.arrow_tensor"),
                                      ("V2", "ray.data.arrow_tensor_v2")])
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "float16"])
def test_ray_fixed_tensor_is_one_view(ray_tensors, fmt, name, dtype):
    a = np.arange(5 * 3 * 4).astype(dtype).reshape(5, 3, 4)
    arr = ray_make(ray_tensors, a, fmt)
    assert arr.type.extension_name == name
    want = arr.to_numpy()  # Ray's own reading
    t = interop.to_framework(arr, "torch")
    n = interop.to_framework(arr, "numpy", copy=False)
    assert_same_array(n, want)
    assert tuple(t.shape) == want.shape and np.array_equal(t.numpy(), want)
    addr = leaf_address(arr.storage.values) + int(arr.storage.offsets[0].as_py()) * a.itemsize
    assert t.data_ptr() == addr == n.ctypes.data
    assert interop.shares_memory(t, arr) and interop.explain(arr, "torch").zero_copy
    t[1, 2, 3] = 99  # a write through torch, read back by Ray
    assert arr.to_numpy()[1, 2, 3] == 99


def test_ray_native_format_is_the_canonical_tensor(ray_tensors):
    """Ray's ARROW_NATIVE format writes Arrow's own ``arrow.fixed_shape_tensor``: read as
    every canonical tensor column (kept working beside Ray's own types)."""
    a = np.arange(4 * 2 * 3, dtype=np.float32).reshape(4, 2, 3)
    arr = ray_make(ray_tensors, a, "ARROW_NATIVE")
    assert arr.type.extension_name == "arrow.fixed_shape_tensor"
    t = interop.to_framework(arr, "torch")
    assert t.data_ptr() == leaf_address(arr.storage.values)
    assert np.array_equal(t.numpy(), arr.to_numpy_ndarray())


@pytest.mark.parametrize("fmt", ["V1", "V2"])
def test_ray_fixed_tensor_slices_honour_every_offset(ray_tensors, fmt):
    a = np.arange(6 * 2 * 3, dtype=np.float64).reshape(6, 2, 3)
    arr = ray_make(ray_tensors, a, fmt)
    for part in (arr[2:], arr[1:4], arr[5:], arr[3:3]):
        got = interop.to_framework(part, "numpy", copy=False)
        off = int(part.storage.offsets[0].as_py()) if len(part) else 0
        want = a[part.offset:part.offset + len(part)]
        assert_same_array(got, want)
        if len(part):
            assert got.ctypes.data == leaf_address(part.storage.values) + off * 8


def test_ray_nulls_follow_the_null_contract(ray_tensors, pa):
    a = np.arange(4 * 2, dtype=np.float32).reshape(4, 2)
    arr = ray_make(ray_tensors, a).take(pa.array([0, None, 3]))
    assert arr.null_count == 1
    with pytest.raises(NullsError, match="ray.data.arrow_tensor_v2"):
        interop.to_framework(arr, "torch")
    assert not interop.can_convert(arr, "torch")
    assert interop.explain(arr, "torch").error == "nulls"
    got = interop.to_framework(arr, "numpy", copy=True)
    assert got.shape == (3, 2) and np.isnan(got[1]).all()
    assert_same_array(got[[0, 2]], a[[0, 3]])
    ints = ray_make(ray_tensors, a.astype(np.int32)).take(pa.array([None, 1]))
    with pytest.raises(NullsError):
        interop.to_framework(ints, "numpy", copy=True)


def test_ray_variable_shaped_rows_are_views(ray_tensors):
    rows = [np.arange(6, dtype=np.float32).reshape(2, 3) + i for i in range(3)]
    rows.append(np.arange(12, dtype=np.float32).reshape(4, 3))
    rows.append(np.arange(2, dtype=np.float32).reshape(1, 2))
    arr = ray_make(ray_tensors, rows)
    assert arr.type.extension_name == "ray.data.arrow_variable_shaped_tensor"
    want = list(arr.to_numpy())  # Ray's own: an object array of per-row arrays
    got = interop.to_framework(arr, "torch")
    assert isinstance(got, list) and len(got) == len(rows)
    data = arr.storage.field("data")
    base = leaf_address(data.values)
    offs = data.offsets.to_numpy()
    for g, w, o in zip(got, want, offs):
        assert tuple(g.shape) == w.shape and np.array_equal(g.numpy(), w)
        assert g.data_ptr() == base + int(o) * 4
    part = arr[1:4]
    got = interop.to_framework(part, "numpy", copy=False)
    for g, w in zip(got, list(part.to_numpy())):
        assert_same_array(g, w)
    assert "per row" in str(interop.explain(arr, "torch"))
    assert interop.to_framework(arr.slice(len(arr)), "numpy") == []  # no rows (a ValueError)
    with pytest.raises(interop.InteropError, match="ragged"):
        interop.to_framework(arr, "torch", ragged="pad")


def test_ray_table_column_and_chunks(ray_tensors, pa):
    a = np.arange(8 * 3, dtype=np.float32).reshape(8, 3)
    arr = ray_make(ray_tensors, a)
    table = pa.table({"t": arr, "y": pa.array(np.arange(8))})
    cols = interop.to_framework(table, "torch")
    assert cols["t"].data_ptr() == leaf_address(arr.storage.values)
    assert np.array_equal(cols["t"].numpy(), a)
    bare = table.column("t")  # a bare ChunkedArray of one chunk: its chunk's view
    assert interop.can_convert(bare, "torch", copy=False)
    got = interop.to_framework(bare, "torch", copy=False)
    assert got.data_ptr() == leaf_address(arr.storage.values)
    assert np.array_equal(got.numpy(), a)
    two = pa.chunked_array([arr[:3], arr[3:]])  # several: joined, one copy, said
    with pytest.raises(ZeroCopyError, match="2 chunks"):
        interop.to_framework(two, "torch", copy=False)
    assert "2 chunks" in " ".join(interop.explain(two, "torch").reasons)
    assert np.array_equal(interop.to_framework(two, "torch").numpy(), a)
    proc = run_child("""
        import warnings, numpy as np, pyarrow as pa, interop
        from ray.data.extensions import ArrowTensorArray
        warnings.simplefilter("ignore")
        interop.to_framework(pa.chunked_array([pa.array([1.0, 2.0])]), "torch")
        col = pa.chunked_array([ArrowTensorArray.from_numpy(np.ones((2, 3), np.float32))])
        print(tuple(interop.to_framework(col, "torch").shape))
    """)
    assert proc.stdout.strip().splitlines()[-1] == "(2, 3)", proc.stderr[-2000:]
    chunked = pa.table({"t": pa.chunked_array([arr[:3], arr[3:]])})
    with pytest.raises(ZeroCopyError):
        interop.to_framework(chunked, "torch", copy=False)
    assert np.array_equal(interop.to_framework(chunked, "torch")["t"].numpy(), a)


def test_ray_data_pipeline_batches(ray_tensors, pa):
    """Ray Data's own pipeline: ``iter_batches(batch_format="pyarrow")`` to torch, equal to
    ``iter_torch_batches``."""
    import ray

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False,
             ignore_reinit_error=True)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        a = np.arange(10 * 2 * 3, dtype=np.float32).reshape(10, 2, 3)
        ds = ray.data.from_numpy(a)
        ours = [interop.to_framework(b, "torch")["data"]
                for b in ds.iter_batches(batch_format="pyarrow", batch_size=5)]
        theirs = [b["data"] for b in ds.iter_torch_batches(batch_size=5)]
        assert len(ours) == len(theirs) == 2
        for o, t in zip(ours, theirs):
            assert o.shape == t.shape and bool((o == t).all())
    finally:
        ray.shutdown()


# ---- Hugging Face datasets ---------------------------------------------------------------------
def hf_column(datasets, rows, shape, dtype="float32"):
    """A ``datasets`` Dataset of one ``ArrayND`` column ``a`` and its Arrow table
    (``with_format("arrow")``)."""
    feature = getattr(datasets, f"Array{len(shape)}D")(shape, dtype)
    ds = datasets.Dataset.from_dict({"a": rows}, features=datasets.Features({"a": feature}))
    return ds, ds.with_format("arrow")[:]


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), (1, 2, 3, 2), (2, 1, 2, 1, 3)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_hf_array_nd_is_one_view(datasets, shape, dtype):
    rows = [(np.arange(np.prod(shape)) + 100 * i).astype(dtype).reshape(shape)
            for i in range(4)]
    ds, table = hf_column(datasets, rows, shape, dtype)
    arr = table["a"].chunk(0)
    assert arr.type.extension_name == f"datasets.features.features.Array{len(shape)}DExtensionType"
    want = arr.to_numpy()  # datasets' own reading
    assert_same_array(want, np.stack(rows))
    got = interop.to_framework(arr, "numpy", copy=False)
    assert_same_array(got, want)
    leaf = arr.storage
    for _ in shape:
        leaf = leaf.flatten()
    assert got.ctypes.data == leaf_address(leaf)
    t = interop.to_framework(arr, "torch")
    assert t.data_ptr() == got.ctypes.data
    t.view(-1)[0] = 7  # a write through torch, read back by datasets
    assert arr.to_numpy().reshape(-1)[0] == 7
    np_ds = ds.with_format("numpy")[:]["a"]  # the format's own NumPy, built by datasets
    assert np.array_equal(np_ds.reshape(-1)[1:], got.reshape(-1)[1:])


def test_hf_slices_and_table(datasets):
    rows = [np.full((2, 2), i, dtype=np.float32) for i in range(6)]
    ds, table = hf_column(datasets, rows, (2, 2))
    part = ds.with_format("arrow")[2:5]  # datasets' own slice of its table
    got = interop.to_framework(part, "torch")["a"]
    assert np.array_equal(got.numpy(), np.stack(rows[2:5]))
    arr = table["a"].chunk(0)  # (its [] slices give the storage: datasets' __getitem__)
    for s in (arr.slice(1), arr.slice(3, 1), arr.slice(6)):
        assert_same_array(interop.to_framework(s, "numpy", copy=False), s.to_numpy()
                          if len(s) else np.empty((0, 2, 2), np.float32))


def test_hf_dynamic_first_dimension_is_jagged(datasets):
    rows = [np.full((k, 3), k, dtype=np.float32) for k in (1, 3, 0, 2)]
    ds, table = hf_column(datasets, rows, (None, 3))
    arr = table["a"].chunk(0)
    want = arr.to_numpy()  # datasets' own: an object array of per-row arrays
    nt = interop.to_framework(arr, "torch")
    assert nt.is_nested and nt.size(0) == 4
    for got, w in zip(nt.unbind(), want):
        assert np.array_equal(got.numpy(), w) and tuple(got.shape) == w.shape
    leaf = arr.storage.flatten().flatten()
    assert nt.values().data_ptr() == leaf_address(leaf)
    views = interop.to_framework(arr, "numpy", ragged="list", copy=False)
    for v, w in zip(views, want):
        assert_same_array(v, w)
    padded = interop.to_framework(arr, "numpy", ragged="pad", fill_value=-1)
    assert padded.shape == (4, 3, 3) and padded[0, 1:].tolist() == [[-1] * 3] * 2
    part = arr.slice(1)  # a slice: its offsets are rebased (a copy of the offsets only)
    plan = interop.explain(part, "torch")
    assert not plan.zero_copy and any("rebased" in r for r in plan.reasons)
    for got, w in zip(interop.to_framework(part, "torch").unbind(), part.to_numpy()):
        assert np.array_equal(got.numpy(), w)


def test_hf_null_rows(datasets):
    rows = [np.ones((2, 2), np.float32), None, np.full((2, 2), 3, np.float32)]
    ds, table = hf_column(datasets, rows, (2, 2))
    arr = table["a"].chunk(0)
    assert arr.null_count == 1
    with pytest.raises(NullsError, match="Array2DExtensionType"):
        interop.to_framework(arr, "torch")
    got = interop.to_framework(arr, "numpy", copy=True)
    want = arr.to_numpy()  # datasets': NaN rows in a float64 copy
    assert np.isnan(got[1]).all() and np.array_equal(got[[0, 2]], want[[0, 2]])


# ---- Daft ------------------------------------------------------------------------------------
def daft_table(daft):
    """Daft's own columns, from ``to_arrow()``: an embedding, fixed-shape and variable-shape
    tensors, images of their own sizes and a fixed-size image column."""
    from daft import DataType as dt
    from daft import col
    from daft.functions import resize

    images = [np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3),
              np.full((2, 2, 3), 7, np.uint8), np.arange(27, dtype=np.uint8).reshape(3, 3, 3)]
    df = daft.from_pydict({
        "e": [np.arange(4, dtype=np.float32) + i for i in range(3)],
        "t": [np.arange(6, dtype=np.float32).reshape(2, 3) + i for i in range(3)],
        "v": [np.ones((1, 2)), np.full((2, 2), 2.0), np.full((3, 1), 3.0)],
        "img": images})
    df = (df.with_column("emb", col("e").cast(dt.embedding(dt.float32(), 4)))
          .with_column("ft", col("t").cast(dt.tensor(dt.float32(), (2, 3))))
          .with_column("im", col("img").cast(dt.image("RGB")))
          .with_column("fim", resize(col("im"), 4, 4)))
    return df, df.to_arrow()


def test_daft_columns(daft):
    df, table = daft_table(daft)
    theirs = df.to_pydict()  # Daft's own reading
    cols = interop.to_framework(table, "torch")
    for name in ("emb", "ft", "fim"):
        assert np.array_equal(cols[name].numpy(), np.stack(theirs[name])), name
    for name in ("v", "img", "im"):
        assert [tuple(r.shape) for r in cols[name]] == [np.shape(w) for w in theirs[name]]
        for got, want in zip(cols[name], theirs[name]):
            assert np.array_equal(got.numpy(), np.asarray(want)), name
    emb = table["emb"].chunk(0)
    assert emb.type.extension_name == "daft.super_extension"
    assert json.loads(emb.type.__arrow_ext_serialize__())["datatype"] == {
        "Embedding": ["Float32", 4]}
    assert cols["emb"].data_ptr() == leaf_address(emb.storage.values)
    im = table["im"].chunk(0)
    data = im.storage.field("data")
    for got, off in zip(cols["im"], data.offsets.to_numpy()):
        assert got.data_ptr() == leaf_address(data.values) + int(off)
    plan = interop.explain(table, "torch")
    assert plan.supported and plan.zero_copy


def test_daft_null_rows(daft):
    """A null row of a Daft tensor or image column has no shape (an empty shape list, null
    sizes): refused by default, an empty array under copy=True; an embedding's is NaN."""
    from daft import DataType as dt
    from daft import col

    rows = [np.ones((2, 2), np.float32), None, np.full((1, 3), 3, np.float32)]
    images = [np.zeros((2, 2, 3), np.uint8), None, np.ones((1, 1, 3), np.uint8)]
    embs = [np.ones(3, np.float32), None, np.zeros(3, np.float32)]
    df = daft.from_pydict({"t": rows, "e": embs, "im": images})
    df = (df.with_column("e", col("e").cast(dt.embedding(dt.float32(), 3)))
          .with_column("im", col("im").cast(dt.image("RGB"))))
    table, theirs = df.to_arrow(), df.to_pydict()
    for name in ("t", "e", "im"):
        chunk = table[name].chunk(0)
        with pytest.raises(NullsError, match="daft.super_extension"):
            interop.to_framework(chunk, "torch")
        got = interop.to_framework(chunk, "numpy", copy=True)
        for g, w in zip(got, theirs[name]):
            if w is None:
                assert g.size == 0 or np.isnan(g).all()
            else:
                assert np.array_equal(g, w)


def test_daft_to_arrow_iter_batches(daft):
    df, _ = daft_table(daft)
    got = [interop.to_framework(b, "torch", columns=["emb", "fim"])
           for b in df.to_arrow_iter()]
    emb = np.concatenate([g["emb"].numpy() for g in got])
    assert np.array_equal(emb, np.stack(df.to_pydict()["emb"]))


# ---- Lance (canonical types: kept working) ------------------------------------------------------
def test_lance_batches_stay_zero_copy(tmp_path, pa):
    lance = pytest.importorskip("lance", reason="pylance is not installed (the lance extra)")
    emb = np.arange(6 * 8, dtype=np.float32).reshape(6, 8)
    lance.write_dataset(pa.table({"emb": pa.FixedSizeListArray.from_arrays(
        pa.array(emb.reshape(-1)), 8), "y": pa.array(np.arange(6))}), tmp_path / "d.lance")
    ds = lance.dataset(tmp_path / "d.lance")
    for batch in ds.to_batches():
        cols = interop.to_framework(batch, "torch")
        col = batch.column(0)
        assert cols["emb"].data_ptr() == leaf_address(col.values) + col.offset * 8 * 4
        assert np.array_equal(cols["emb"].numpy(), emb[:len(batch)])


# ---- the reverse direction ---------------------------------------------------------------------
def test_reverse_tensor_column_read_back_by_ray_and_daft(datasets, daft, ray_tensors, pa):
    """An N-D array to pyarrow is an ``arrow.fixed_shape_tensor`` column (the same buffer),
    which Ray Data and Daft read back as tensors of the same values; ``datasets`` 5.2 has no
    feature for it (it reads a NumPy array, copying it into its own storage)."""
    a = np.arange(5 * 2 * 3, dtype=np.float32).reshape(5, 2, 3)
    col = interop.to_framework(a, "pyarrow")
    assert col.type.extension_name == "arrow.fixed_shape_tensor"
    assert col.storage.values.buffers()[1].address == a.ctypes.data
    table = pa.table({"x": col})
    df = daft.from_arrow(table)
    assert np.array_equal(np.stack(df.to_pydict()["x"]), a)
    from ray.data._internal.arrow_block import ArrowBlockAccessor

    assert np.array_equal(ArrowBlockAccessor(table).to_numpy()["x"], a)
    try:
        datasets.Dataset(table).features  # noqa: B018
        refused = False
    except ValueError:
        refused = True
    report_upstream("datasets reads an arrow.fixed_shape_tensor column", refused)
    feature = datasets.Features({"x": datasets.Array2D((2, 3), "float32")})
    back = datasets.Dataset.from_dict({"x": interop.to_framework(col, "numpy")},
                                      features=feature)
    assert np.array_equal(back.with_format("numpy")[:]["x"], a)


# ---- the same answer every time ---------------------------------------------------------------
def test_same_answer_after_other_conversions_and_in_a_fresh_process(ray_tensors, datasets, pa):
    code = """
        import warnings, numpy as np, pyarrow as pa, interop, datasets
        from ray.data.extensions import ArrowTensorArray
        warnings.simplefilter("ignore")
        a = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
        ray = ArrowTensorArray.from_numpy(a)
        ds = datasets.Dataset.from_dict({"a": list(a)}, features=datasets.Features(
            {"a": datasets.Array2D((2, 3), "float32")}))
        hf = ds.with_format("arrow")[:]["a"].chunk(0)
        tensor = interop.to_framework(a, "pyarrow")
        bool8 = pa.ExtensionArray.from_storage(pa.bool8(), pa.array([1, 0], pa.int8()))
        order = {order}
        out = []
        for name in order:
            x = dict(ray=ray, hf=hf, tensor=tensor, bool8=bool8)[name]
            for v in (x, pa.table(dict(c=x))):
                try:
                    r = interop.to_framework(v, "numpy")
                    r = r["c"] if isinstance(r, dict) else r
                    out.append((name, "ok", r.shape, float(r.sum())))
                except interop.InteropError as e:
                    out.append((name, type(e).__name__))
        print(sorted(out))
    """
    results = set()
    for order in (["ray", "hf", "tensor", "bool8"], ["bool8", "tensor", "hf", "ray"]):
        proc = run_child(code.replace("{order}", repr(order)))
        assert proc.returncode == 0, proc.stderr[-2000:]
        results.add(proc.stdout.strip().splitlines()[-1])
    assert len(results) == 1, results
    (line,) = results
    assert line.count("'ok'") == 6 and "UnsupportedConversionError" in line


def test_storage_that_contradicts_its_type_is_refused(ray_tensors, pa):
    from ray.data.extensions import ArrowTensorType

    bad = ArrowTensorType((2, 2), pa.float32()).wrap_array(
        pa.array([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0]], pa.list_(pa.float32())))
    with pytest.raises(MalformedError, match="contradicts"):
        interop.to_framework(bad, "numpy")
    assert not interop.can_convert(bad, "numpy")


def test_daft_type_without_tensors_is_refused_by_name(daft):
    chunk = daft.from_pydict({"p": [object(), object()]}).to_arrow()["p"].chunk(0)
    assert chunk.type.extension_name == "daft.super_extension"
    with pytest.raises(UnsupportedConversionError, match="Daft's 'Python' columns"):
        interop.to_framework(chunk, "numpy")
    plan = interop.explain(chunk, "torch")
    assert not plan.supported and "'Python'" in " ".join(plan.reasons)


def test_docs_pipelines_run(ray_tensors, datasets, daft):
    """docs/nested.md's Ray Data, datasets, Daft and Lance pipelines."""
    pytest.importorskip("lance", reason="pylance is not installed (the lance extra)")
    assert run_optional_blocks("mldata") >= 4


# ---- a random search over the libraries' own values --------------------------------------------
# Fast profile (every run): derandomized, RELIABILITY_EXAMPLES cases (12). Slow profile, by hand:
# RELIABILITY_SEED=<fresh> RELIABILITY_EXAMPLES=300 pytest -m mldata -k random tests/optional/...
EXAMPLES = int(os.environ.get("RELIABILITY_EXAMPLES", "12"))
SEED = os.environ.get("RELIABILITY_SEED")
DTYPES = ["float32", "float64", "float16", "int16", "uint8", "int64"]


CHECKED = [0]
"""How many values the search checked (printed under the slow profile: ``-s`` shows it)."""


def _search(prop):
    CHECKED[0] = 0
    prop = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    derandomize=SEED is None,
                    suppress_health_check=[HealthCheck.too_slow])(prop)
    (seed(int(SEED))(prop) if SEED is not None else prop)()
    if SEED is not None:
        print(f"random search (seed {SEED}): {CHECKED[0]} values checked")


def _check_rows(x, want_rows):
    """``x`` converted (NumPy, zero-copy unless it holds nulls) row by row against the rows
    the library itself reads (``None``: a null row, NaN under ``copy=True``)."""
    CHECKED[0] += 1
    nulls = any(w is None for w in want_rows)
    if nulls:
        with pytest.raises(NullsError):
            interop.to_framework(x, "numpy")
        assert interop.explain(x, "numpy").error == "nulls"
    else:  # zero-copy, but for a dynamic slice's offsets (rebased: a copy of them alone)
        plan = interop.explain(x, "numpy")
        assert plan.zero_copy or any("rebased" in r for r in plan.reasons), plan
    got = interop.to_framework(x, "numpy", copy=True if nulls else None)
    rows = list(got) if not isinstance(got, interop.Jagged) else [
        got.values[a:b] for a, b in zip(got.offsets[:-1], got.offsets[1:])]
    assert len(rows) == len(want_rows)
    for g, w in zip(rows, want_rows):
        if w is None:
            assert g.size == 0 or np.isnan(g).all()
        else:
            assert g.shape == np.shape(w) and np.array_equal(g, w)
    assert interop.can_convert(x, "torch", copy=True)


def test_random_ray_tensors_read_as_ray_reads_them(ray_tensors, pa):
    @given(st.sampled_from(["V1", "V2"]), st.sampled_from(DTYPES),
           st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(0, 7),
           st.data())
    def prop(fmt, dtype, shape, rows, data):
        a = (np.arange(rows * int(np.prod(shape))) % 100).astype(dtype).reshape(rows, *shape)
        arr = ray_make(ray_tensors, a, fmt) if rows else None
        if arr is None:
            return
        lo = data.draw(st.integers(0, rows))
        hi = data.draw(st.integers(lo, rows))
        part = arr.slice(lo, hi - lo)
        index = data.draw(st.lists(st.one_of(st.none(), st.integers(0, rows - 1)),
                                   max_size=5)) if data.draw(st.booleans()) else None
        if index is not None and dtype.startswith("float"):
            part = arr.take(pa.array(index, pa.int64()))
            want = [None if i is None else a[i] for i in index]
        elif index is not None:
            part = arr.take(pa.array([i for i in index if i is not None], pa.int64()))
            want = [a[i] for i in index if i is not None]
        else:
            want = list(a[lo:hi])
            assert np.array_equal(part.to_numpy(), a[lo:hi])  # Ray's own reading agrees
        _check_rows(part, want)

    _search(prop)


def test_random_ray_variable_shaped_tensors(ray_tensors):
    @given(st.sampled_from(DTYPES), st.integers(1, 3), st.integers(2, 6), st.data())
    def prop(dtype, ndim, rows, data):
        shapes = [tuple(data.draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim)))
                  for _ in range(rows)]
        arrays = [(np.arange(int(np.prod(s))) % 50).astype(dtype).reshape(s) for s in shapes]
        if len(set(shapes)) == 1:  # Ray stacks rows of one shape into a fixed-shape type
            return
        try:
            arr = ray_make(ray_tensors, arrays)
        except ValueError:  # Ray 2.60 cannot build rows of shapes (0, 0) and (0, 1) (NumPy
            reject()        # broadcasts them into its object array; found by this search)
        lo = data.draw(st.integers(0, rows))
        part = arr.slice(lo)
        _check_rows(part, [np.asarray(r) for r in part.to_numpy()] if len(part) else [])

    _search(prop)


def test_random_hf_arrays_read_as_datasets_reads_them(datasets):
    @given(st.integers(2, 5), st.sampled_from(["float32", "int32", "uint8"]),
           st.booleans(), st.integers(0, 5), st.data())
    def prop(ndims, dtype, dynamic, rows, data):
        dims = data.draw(st.lists(st.integers(1, 3), min_size=ndims, max_size=ndims))
        firsts = [data.draw(st.integers(0, 3)) if dynamic else dims[0] for _ in range(rows)]
        arrays = [(np.arange(f * int(np.prod(dims[1:]))) % 90).astype(dtype).reshape(
            f, *dims[1:]) for f in firsts]
        nulls = data.draw(st.lists(st.integers(0, max(rows - 1, 0)), max_size=2)) \
            if rows and dtype == "float32" else []
        values = [None if i in nulls else r for i, r in enumerate(arrays)]
        shape = (None if dynamic else dims[0], *dims[1:])
        if not rows:
            return
        _, table = hf_column(datasets, values, shape, dtype)
        arr = table["a"].chunk(0)
        lo = data.draw(st.integers(0, rows))
        part = arr.slice(lo)
        want = values[lo:]
        if not any(w is None for w in want) and len(part) and not dynamic:
            assert np.array_equal(part.to_numpy(), np.stack(want))  # datasets' own reading
        _check_rows(part, want)

    _search(prop)
