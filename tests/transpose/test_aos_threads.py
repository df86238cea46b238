"""AoS <-> SoA on several threads (the NumPy kernel): the same bytes as on one thread, written
into ``out=``.

The calls name the NumPy kernel and three threads (the public ``kernel=`` and ``threads=``),
so a few blocks of a small input take the threaded path on any machine (even with one CPU);
``threads=1`` gives the single-thread reference.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import interop
from interop.transpose import cpu as transpose

THREADS = {"kernel": "numpy", "threads": 3}
ONE = {"kernel": "numpy", "threads": 1}


@pytest.fixture
def threaded(monkeypatch):
    """The set of names of the threads that copied blocks.

    The calling thread waits (up to 10 s) for a helper to take a block before it copies its
    own first one, so a pool thread takes part however fast the caller is."""
    seen: set[str] = set()
    run_blocks = transpose._run_blocks

    def spy(n, row_bytes, copy, threads):
        caller, helped = threading.current_thread(), threading.Event()

        def traced(i, j):
            me = threading.current_thread()
            if me is not caller:
                helped.set()
            elif (threads or 1) > 1:
                helped.wait(10)
            seen.add(me.name)
            copy(i, j)

        run_blocks(n, row_bytes, traced, threads)

    monkeypatch.setattr(transpose, "_run_blocks", spy)
    return seen


def _single(threaded, fn):
    """``fn()`` (which names ``threads=1``): every block on the calling thread."""
    res = fn()
    assert threaded == {threading.current_thread().name}
    threaded.clear()
    return res


def test_threaded_aos_to_soa_matches_single_thread_and_writes_out(threaded):
    n = 5 * 1024 + 17  # six blocks, the last one short
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((n, 6)).astype(np.float32)
    ref = np.zeros((6, n), np.float32)
    _single(threaded, lambda: interop.aos_to_soa(rows, target="numpy", out=ref, **ONE))
    out = np.zeros((6, n), np.float32)
    cols = interop.aos_to_soa(rows, target="numpy", out=out, **THREADS)
    assert any(t.startswith("interop-aos") for t in threaded)  # the pool copied blocks
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(out, rows.T)
    for j, col in enumerate(cols.values()):  # the columns are out's rows, not copies
        assert col.ctypes.data == out[j].ctypes.data
    fresh = interop.aos_to_soa(rows, target="numpy", **THREADS)  # a fresh buffer, threaded too
    np.testing.assert_array_equal(np.stack(list(fresh.values())), ref)


def test_threaded_soa_to_aos_matches_single_thread_and_writes_out(threaded):
    n = 4 * 1024 + 3
    cols = {"a": np.arange(n, dtype=np.int32), "b": np.linspace(0, 1, n),
            "c": np.arange(n, 0, -1, dtype=np.float32)}  # promoted to float64
    ref = _single(threaded, lambda: interop.soa_to_aos(cols, target="numpy", **ONE))
    out = np.full((n, 3), np.nan)
    res = interop.soa_to_aos(cols, target="numpy", out=out, **THREADS)
    assert any(t.startswith("interop-aos") for t in threaded)
    assert res.ctypes.data == out.ctypes.data
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(out, np.stack([cols[k].astype(np.float64) for k in "abc"], 1))
    np.testing.assert_array_equal(interop.soa_to_aos(cols, target="numpy", **THREADS), ref)


def test_threaded_mixed_fields_match_single_thread(threaded):
    n = 3 * 1024 + 1
    rec = np.zeros(n, dtype=[("i", "<i8"), ("f", "<f4")])
    rec["i"] = np.arange(n)
    rec["f"] = np.arange(n) / 7
    ref = _single(threaded, lambda: interop.aos_to_soa(rec, target="numpy", **ONE))
    got = interop.aos_to_soa(rec, target="numpy", **THREADS)
    assert any(t.startswith("interop-aos") for t in threaded)
    for k in ("i", "f"):
        np.testing.assert_array_equal(got[k], ref[k])
        np.testing.assert_array_equal(got[k], rec[k])


def test_the_pool_is_made_again_after_a_fork(threaded):
    """A forked child inherits the pool object but not its threads: a new pool is made."""
    stale = (-1, 8, object())  # another process's pool: submitting to it would fail
    transpose._pool = stale
    try:
        n = 2 * 1024
        rows = np.ones((n, 2), np.float32)
        out = np.zeros((2, n), np.float32)
        interop.aos_to_soa(rows, target="numpy", out=out, **THREADS)
        np.testing.assert_array_equal(out, 1)
        assert transpose._pool is not stale and transpose._pool[0] != -1
    finally:
        if transpose._pool is stale:
            transpose._pool = None
