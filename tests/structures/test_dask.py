"""``interop.dask``: dask arrays and dataframes converted block by block, lazily.

Most tests run on a real local cluster of two CPU worker *processes*, so every conversion
and every zero-copy proof happens inside a worker, not in the test process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")

import dask  # noqa: E402
import pandas as pd  # noqa: E402
from dask.delayed import Delayed  # noqa: E402

import interop  # noqa: E402
import interop.dask as idask  # noqa: E402
from interop.errors import (  # noqa: E402
    DeviceError,
    UnknownFrameworkError,
    UnsupportedConversionError,
    ZeroCopyError,
)


@pytest.fixture(scope="module")
def client():
    import cloudpickle

    # The check functions below run in the workers: ship them by value, not by module name.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cluster = distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
        worker_dashboard_address=None, memory_limit=0,
    )
    try:
        with cluster, distributed.Client(cluster) as c:
            c.wait_for_workers(2, timeout=60)
            yield c
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _workers(client) -> list[str]:
    return sorted(client.scheduler_info()["workers"])


def _random(shape=(6, 8), chunks=(3, 4), dtype=np.float32, seed=0):
    """A dask array whose blocks are made by tasks (on the workers), each C-contiguous."""
    return da.random.default_rng(seed).random(shape, chunks=chunks, dtype=dtype)


def _frame(n=12, npartitions=3) -> pd.DataFrame:
    return pd.DataFrame({"a": np.arange(n, dtype=np.float64),
                         "b": np.arange(n, dtype=np.int64) * 10})


def _assemble(blocks: np.ndarray, cat):
    """Join a grid of computed 2-D blocks with ``cat(list, axis)``."""
    rows = [cat(list(blocks[i]), 1) for i in range(blocks.shape[0])]
    return cat(rows, 0)


def _compute_grid(client, grid: np.ndarray) -> np.ndarray:
    values = client.gather(client.compute(list(grid.ravel())))
    out = np.empty(grid.shape, dtype=object)
    for idx, v in zip(np.ndindex(grid.shape), values):
        out[idx] = v
    return out


# ---- arrays ---------------------------------------------------------------------------------
def test_array_to_torch_blocks_equal_the_direct_conversion(client) -> None:
    torch = pytest.importorskip("torch")
    dx = _random()
    parts = idask.to_framework(dx, "torch")
    assert isinstance(parts, np.ndarray) and parts.shape == dx.numblocks
    assert all(isinstance(p, Delayed) for p in parts.ravel())
    blocks = _compute_grid(client, parts)
    for idx in np.ndindex(blocks.shape):
        b = blocks[idx]
        assert isinstance(b, torch.Tensor) and b.dtype == torch.float32
        assert tuple(b.shape) == tuple(c[i] for c, i in zip(dx.chunks, idx))
    whole = dx.compute()
    direct = interop.to_framework(whole, "torch")
    assert torch.equal(_assemble(blocks, lambda xs, ax: torch.cat(xs, dim=ax)), direct)


def test_array_to_jax_blocks_equal_the_direct_conversion(client) -> None:
    jnp = pytest.importorskip("jax.numpy")
    dx = _random(chunks=(2, 8))
    blocks = _compute_grid(client, idask.to_delayed(dx, "jax"))
    assert blocks.shape == (3, 1)
    for b in blocks.ravel():
        assert type(b).__module__.startswith("jax") and b.dtype == jnp.float32
    got = np.asarray(_assemble(blocks, lambda xs, ax: jnp.concatenate(xs, axis=ax)))
    direct = interop.to_framework(dx.compute(), "jax")
    np.testing.assert_array_equal(got, np.asarray(direct))


def _torch_block_check(block: np.ndarray, tensor) -> dict:
    """In the worker: the tensor is the block's memory (pointer, plan, a write seen back)."""
    import interop

    same_ptr = block.__array_interface__["data"][0] == tensor.data_ptr()
    plan = interop.explain(block, "torch")
    tensor.view(-1)[0] = -7.0
    return {"pid": os.getpid(), "ptr": same_ptr, "plan": plan.zero_copy,
            "shares": np.shares_memory(block, tensor.numpy()),  # NumPy's own overlap test
            "write": float(block.flat[0])}


def test_zero_copy_per_block_inside_each_worker(client) -> None:
    pytest.importorskip("torch")
    seen = set()
    for seed, worker in enumerate(_workers(client)):  # all blocks on each worker in turn
        dx = _random(seed=seed)  # new keys: nothing left in memory from the other round
        src, conv = dx.to_delayed(), idask.to_delayed(dx, "torch")
        checks = [dask.delayed(_torch_block_check)(s, c)
                  for s, c in zip(src.ravel(), conv.ravel())]
        futures = client.compute(checks, workers=[worker], allow_other_workers=False)
        results = client.gather(futures)
        assert len(results) == 4
        for r in results:
            assert r == {"pid": r["pid"], "ptr": True, "plan": True, "shares": True,
                         "write": -7.0}
            seen.add(r["pid"])
    assert len(seen) == 2 and os.getpid() not in seen


def test_array_to_numpy_stays_a_dask_array_with_chunks_and_dtype(client) -> None:
    dx = _random(dtype=np.float64)
    out = idask.to_framework(dx, "numpy", copy=True)
    assert isinstance(out, da.Array)
    assert out.chunks == dx.chunks and out.dtype == dx.dtype
    assert type(out._meta) is np.ndarray
    assert out.name.startswith("interop-to-numpy-")
    np.testing.assert_array_equal(out.compute(), dx.compute())


def _fresh_check(block: np.ndarray, copied: np.ndarray) -> bool:
    return not np.shares_memory(block, copied) and np.array_equal(block, copied)


def test_copy_true_gives_fresh_blocks_in_the_workers(client) -> None:
    dx = _random()
    out = idask.to_framework(dx, "numpy", copy=True)
    checks = [dask.delayed(_fresh_check)(s, c)
              for s, c in zip(dx.to_delayed().ravel(), out.to_delayed().ravel())]
    futures = client.compute(checks, workers=_workers(client)[:1], allow_other_workers=False)
    assert client.gather(futures) == [True] * 4


def _reverse(b: np.ndarray) -> np.ndarray:
    return b[:, ::-1]


def test_copy_false_refusal_reaches_the_client_from_the_worker(client) -> None:
    pytest.importorskip("torch")
    dx = _random().map_blocks(_reverse, meta=np.empty((0, 0), np.float32))
    parts = idask.to_framework(dx, "torch", copy=False)  # the empty meta is fine: builds
    with pytest.raises(ZeroCopyError, match="negative strides"):
        client.gather(client.compute(list(parts.ravel())))
    parts = idask.to_framework(dx, "torch")  # copy=None: one copy per block, same values
    blocks = _compute_grid(client, parts)
    np.testing.assert_array_equal(blocks[0, 0].numpy(), dx.blocks[0, 0].compute())


# ---- dataframes -----------------------------------------------------------------------------
def test_dataframe_partitions_to_torch_columns(client) -> None:
    torch = pytest.importorskip("torch")
    df = _frame()
    ddf = dd.from_pandas(df, npartitions=3)
    parts = idask.to_framework(ddf, "torch")
    assert isinstance(parts, list) and len(parts) == 3
    got = client.gather(client.compute(parts))
    assert [sorted(p) for p in got] == [["a", "b"]] * 3
    direct = interop.to_framework(df, "torch")
    for name in ("a", "b"):
        joined = torch.cat([p[name] for p in got])
        assert joined.dtype == direct[name].dtype and torch.equal(joined, direct[name])


def _column_check(part: pd.DataFrame, cols: dict) -> list[str]:
    """Per column: "shared", or "copied: misaligned" when dask unpickled the partition into
    memory that is not aligned to the itemsize (torch must not get such a buffer), or "bad"."""
    import interop

    out = []
    for n in part.columns:
        if np.shares_memory(part[n].to_numpy(), cols[n].numpy()):  # NumPy's own test
            out.append("shared")
        elif (not part[n].values.flags.aligned
              and not interop.explain(part[n], "torch").zero_copy):
            out.append("copied: misaligned")
        else:
            out.append("bad")
    return out


def test_dataframe_partitions_zero_copy_inside_a_worker(client) -> None:
    pytest.importorskip("torch")
    # persisted on one worker first: both graphs below then read the same partition objects
    # (unpersisted, dask may rebuild a partition separately inside each fused task)
    one = _workers(client)[-1:]
    ddf = client.persist(dd.from_pandas(_frame(), npartitions=3), workers=one,
                         allow_other_workers=False)
    checks = [dask.delayed(_column_check)(p, c)
              for p, c in zip(ddf.to_delayed(), idask.to_delayed(ddf, "torch"))]
    futures = client.compute(checks, workers=one, allow_other_workers=False)
    got = [c for part in client.gather(futures) for c in part]
    assert "bad" not in got and got.count("shared") >= len(got) // 2, got


def test_dataframe_to_polars_and_pandas(client) -> None:
    pl = pytest.importorskip("polars")
    df = _frame()
    ddf = dd.from_pandas(df, npartitions=3)
    frames = client.gather(client.compute(idask.to_framework(ddf, "polars")))
    assert all(isinstance(f, pl.DataFrame) for f in frames)
    assert pl.concat(frames).to_pandas().equals(df)
    same = idask.to_framework(ddf, "pandas", copy=True)
    assert isinstance(same, dd.DataFrame) and same.npartitions == 3
    assert same.divisions == ddf.divisions  # each partition keeps its index
    pd.testing.assert_frame_equal(same.compute(), df)
    pd.testing.assert_frame_equal(same.partitions[1].compute(), df.iloc[4:8])


def test_dataframe_columns_option_and_series(client) -> None:
    torch = pytest.importorskip("torch")
    df = _frame().assign(s=[str(i) for i in range(12)])
    ddf = dd.from_pandas(df, npartitions=2)
    got = client.gather(client.compute(idask.to_framework(ddf, "torch", columns=["b"])))
    assert [list(p) for p in got] == [["b"], ["b"]]
    series = client.gather(client.compute(idask.to_framework(ddf["a"], "torch")))
    assert torch.equal(torch.cat(series), torch.tensor(df["a"].to_numpy()))
    same = idask.to_framework(ddf["b"], "pandas", copy=True)
    assert isinstance(same, dd.Series) and same.divisions == ddf.divisions
    pd.testing.assert_series_equal(same.partitions[1].compute(), df["b"].iloc[6:])


# ---- laziness -------------------------------------------------------------------------------
CALLS: list[tuple] = []


def _counted(b):
    CALLS.append(b.shape)
    return b


@pytest.fixture
def counted(monkeypatch):
    """A source whose blocks record when they are made, and a recording converter."""
    CALLS.clear()
    converted: list[tuple] = []
    real = idask._convert

    def convert(block, *args):
        converted.append(block.shape)
        return real(block, *args)

    monkeypatch.setattr(idask, "_convert", convert)
    dx = da.from_array(np.arange(12, dtype=np.float32), chunks=4).map_blocks(
        _counted, meta=np.empty((0,), np.float32))
    return dx, converted


def test_nothing_is_computed_until_compute(counted) -> None:
    pytest.importorskip("torch")
    dx, converted = counted
    lazy = [idask.to_framework(dx, "torch"), idask.to_framework(dx, "numpy"),
            idask.to_delayed(dx, "jax")]
    plan = idask.explain(dx, "torch")
    assert CALLS == [] and converted == []
    assert plan.zero_copy and "planned on the collection's _meta" in plan.reasons[-1]
    assert all(dask.is_dask_collection(p) for p in [*lazy[0].ravel(), lazy[1]])
    out = dask.compute(*lazy[0].ravel(), scheduler="sync")
    assert CALLS == [(4,)] * 3 and converted == [(4,)] * 3
    assert [o.tolist() for o in out] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]


def test_dataframe_conversion_is_lazy(monkeypatch) -> None:
    pytest.importorskip("torch")
    made: list[int] = []

    def counted(p):
        made.append(len(p))
        return p

    ddf = dd.from_pandas(_frame(), npartitions=3).map_partitions(counted, meta=_frame(0))
    parts = idask.to_framework(ddf, "torch")
    frame = idask.to_framework(ddf, "pandas")
    idask.explain(ddf, "torch")
    assert made == []
    dask.compute(*parts, scheduler="sync")
    assert made == [4, 4, 4]
    assert len(frame.compute(scheduler="sync")) == 12


def test_explain_a_real_block_computes_only_that_block(counted) -> None:
    jnp = pytest.importorskip("jax.numpy")  # noqa: F841 - JAX plans need JAX
    dx, converted = counted
    with dask.config.set(scheduler="sync"):  # in this process, where CALLS is
        plan = idask.explain(dx, "jax", block=1)
    assert CALLS == [(4,)] and converted == []
    assert plan.target == "jax" and not any("_meta" in r for r in plan.reasons)


# ---- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("call", [idask.to_framework, idask.to_delayed, idask.explain])
def test_not_a_dask_collection(call) -> None:
    with pytest.raises(UnsupportedConversionError,
                       match=r"got a numpy.ndarray, which is not a dask collection: "
                             r"call interop.to_framework\(x, 'torch'\)"):
        call(np.arange(3), "torch")


def test_other_dask_collections_say_how_to_map() -> None:
    import dask.bag as db

    with pytest.raises(UnsupportedConversionError, match=r"bag.map\(interop.to_framework"):
        idask.to_framework(db.from_sequence([1, 2]), "torch")
    with pytest.raises(UnsupportedConversionError,
                       match=r"dask.delayed\(interop.to_framework\)\(value, 'torch'\)"):
        idask.to_framework(dask.delayed(np.arange)(3), "torch")


def test_unknown_target_raises_before_any_graph_is_built(counted) -> None:
    dx, _ = counted
    with pytest.raises(UnknownFrameworkError, match="unknown target framework 'tourch'"):
        idask.to_framework(dx, "tourch")
    with pytest.raises(UnknownFrameworkError):
        idask.explain(dx, 42)
    assert CALLS == []


def test_dtype_problems_raise_on_the_client_from_the_meta() -> None:
    pytest.importorskip("jax")
    with pytest.raises(ZeroCopyError,  # JAX would narrow float64 (64-bit types off): a copy
                       match=r"checked on this client with the collection's _meta.*jax_enable_x64"):
        idask.to_framework(_random(dtype=np.float64), "jax", copy=False)
    ddf = dd.from_pandas(_frame().assign(s=list("abcdefghijkl")), npartitions=2)
    with pytest.raises(UnsupportedConversionError, match=r"column 's'.*columns=\['a', 'b'\]"):
        idask.to_delayed(ddf, "torch")


@pytest.mark.cpu_only
def test_device_without_gpu_names_meta_escape(counted) -> None:
    dx, _ = counted
    with pytest.raises(DeviceError, match=r"no CUDA device.*pass meta="):
        idask.to_framework(dx, "torch", device="cuda")


def test_bad_copy_value() -> None:
    with pytest.raises(interop.InteropError, match="copy must be None, True or False"):
        idask.to_framework(_random(), "numpy", copy="yes")


# ---- the package --------------------------------------------------------------------------
def test_import_interop_does_not_import_dask() -> None:
    code = ("import sys, interop; assert 'dask' not in sys.modules, 'dask imported'; "
            "assert 'dask' in dir(interop); m = interop.dask; "
            "assert 'dask' in sys.modules and 'dask.dataframe' not in sys.modules; "
            "print(sorted(m.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "['explain', 'to_delayed', 'to_framework']"


# ---- GPU: a cupy-backed dask array on workers that share one RMM pool -----------------------
def _cuda_check(block, tensor) -> dict:
    return {"ptr": block.data.ptr == tensor.data_ptr(), "device": str(tensor.device)}


@pytest.mark.gpu
def test_cupy_blocks_to_torch_on_pooled_gpu_workers() -> None:
    cupy = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("this torch build has no CUDA")
    from mempool.dask import RMMPoolPlugin, worker_outcomes

    cluster = distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1,
                                       dashboard_address=None, memory_limit=0)
    with cluster, distributed.Client(cluster) as c, warnings.catch_warnings():
        c.register_plugin(RMMPoolPlugin("256MiB", frameworks=["cupy", "torch"]))
        assert all(o["ok"] for o in worker_outcomes(c).values())
        host = np.arange(64, dtype=np.float32).reshape(8, 8)
        dx = da.from_array(host, chunks=(4, 8)).map_blocks(
            cupy.asarray, meta=cupy.empty((0, 0), np.float32))
        tensors = idask.to_delayed(dx, "torch")
        checks = [dask.delayed(_cuda_check)(s, t)
                  for s, t in zip(dx.to_delayed().ravel(), tensors.ravel())]
        assert c.gather(c.compute(checks)) == [{"ptr": True, "device": "cuda:0"}] * 2
        back = idask.to_framework(dx, "numpy", device="cpu")
        assert isinstance(back, da.Array) and type(back._meta) is np.ndarray
        np.testing.assert_array_equal(back.compute(), host)
        on_gpu = idask.to_framework(da.from_array(host, chunks=4), "cupy", device="cuda")
        assert type(on_gpu._meta) is cupy.ndarray
        np.testing.assert_array_equal(cupy.asnumpy(on_gpu.compute()), host)
