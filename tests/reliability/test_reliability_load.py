"""Load: leaks over many conversions per pair, and 8 threads converting mixed pairs.

``RELIABILITY_N`` conversions per pair (full run: 100000) and ``RELIABILITY_SECONDS`` of
threaded load (default 10). Memory must stay flat: after a warm-up, RSS (``/proc/self/statm``)
may grow by at most ``RSS_BOUND`` bytes and tracemalloc's traced Python memory by at most
``TRACED_BOUND`` bytes, whatever N is (so the per-call leak they catch is the bound over N,
spelled out beside the bounds); the plan cache stays bounded.
"""

from __future__ import annotations

import gc
import json
import os
import threading
import time
import tracemalloc

import numpy as np
import pytest

import interop
from interop.api import REGISTRY
from machine import jax_on_cpu

pytestmark = pytest.mark.slow

N = int(os.environ.get("RELIABILITY_N", "10000"))
SECONDS = float(os.environ.get("RELIABILITY_SECONDS", "10"))
THREADS = 8
RSS_BOUND = 8 * 2**20      # 8 MiB, independent of N (page-granular RSS noise needs the margin)
TRACED_BOUND = 256 * 2**10  # 256 KiB of Python objects
# What the bounds enforce, per call: RSS catches a native leak above RSS_BOUND / N bytes per
# conversion (about 84 B at N=100000, 839 B at the default N=10000); tracemalloc catches a
# Python-object leak above TRACED_BOUND / N (about 2.6 B per call at 100000, 26 B at 10000).
# A leak of one byte per call passes both at these N: only the traced bound comes near it.
PLAN_BOUND = 2048  # (type, target, device, copy) keys: finite, far below this
MEASURED: dict = {}


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _sources() -> dict:
    import jax.numpy as jnp
    import pandas as pd
    import polars as pl
    import pyarrow as pa
    import torch

    base = np.arange(256, dtype=np.float32)
    with jax_on_cpu():  # a JAX value on the CPU, as the CPU pairs need, on any machine
        j = jnp.asarray(base)
    t, a = torch.from_numpy(base.copy()), pa.array(base)
    ps, ls = pd.Series(base.copy()), pl.Series(values=base.copy())
    return {
        "numpy": lambda: base,
        "torch": lambda: t,
        "jax": lambda: j,
        "pyarrow": lambda: a,
        "pandas": lambda: ps,
        "polars": lambda: ls,
        "dlpack": lambda: base.__dlpack__(max_version=(1, 1)),
    }


PAIRS = [("numpy", "torch"), ("torch", "numpy"), ("numpy", "jax"), ("jax", "numpy"),
         ("numpy", "pyarrow"), ("pyarrow", "torch"), ("pandas", "jax"), ("polars", "numpy"),
         ("dlpack", "torch"), ("torch", "dlpack"), ("numpy", "polars"), ("jax", "torch")]


def _read(x) -> float:
    from interop.protocols import dlpack

    if dlpack.is_capsule(x):
        return float(dlpack.to_numpy(x)[255])
    mod = type(x).__module__.partition(".")[0]
    if mod == "pyarrow":
        return float(x[255].as_py())
    if mod in ("pandas", "polars"):
        return float(x[255])
    return float(x[255])


@pytest.mark.parametrize(("src", "tgt"), PAIRS, ids=[f"{s}->{t}" for s, t in PAIRS])
def test_no_leak_over_many_conversions(src, tgt):
    make = _sources()[src]
    for _ in range(200):                      # warm-up: caches, allocator pools
        _read(interop.to_framework(make(), tgt))
    gc.collect()
    tracemalloc.start()
    t0, r0 = tracemalloc.get_traced_memory()[0], rss()
    for i in range(N):
        out = interop.to_framework(make(), tgt)
        if i % 997 == 0:
            assert _read(out) == 255.0
        del out
    gc.collect()
    t1, r1 = tracemalloc.get_traced_memory()[0], rss()
    tracemalloc.stop()
    MEASURED[f"{src}->{tgt}"] = {"n": N, "rss_growth": r1 - r0, "traced_growth": t1 - t0}
    assert r1 - r0 <= RSS_BOUND, (f"RSS grew {r1 - r0} bytes over {N} conversions (bound "
                                  f"{RSS_BOUND / N:.0f} B per call)")
    assert t1 - t0 <= TRACED_BOUND, (f"traced memory grew {t1 - t0} bytes over {N} conversions "
                                     f"(bound {TRACED_BOUND / N:.1f} B per call)")
    assert len(REGISTRY.cache) <= PLAN_BOUND


def test_plan_cache_bounded():
    """Plans are per (type, target, device, copy): repeating the same pairs adds none."""
    sizes = []
    for _ in range(3):
        for make in _sources().values():
            for tgt in ("numpy", "torch", "jax", "pyarrow", "pandas", "polars", "dlpack"):
                for copy in (None, False, True):
                    try:
                        interop.to_framework(make(), tgt, copy=copy)
                    except interop.InteropError:
                        pass
        sizes.append(len(REGISTRY.cache))
    assert sizes[0] == sizes[1] == sizes[2], f"the plan cache grew on repeats: {sizes}"
    assert sizes[-1] <= PLAN_BOUND, f"{sizes[-1]} plans cached"
    MEASURED["plans"] = sizes[-1]


def test_threads_convert_mixed_pairs_correctly():
    sources = _sources()
    errors: list[str] = []
    counts = [0] * THREADS
    stop = time.monotonic() + SECONDS

    def worker(k: int) -> None:
        i = k
        while time.monotonic() < stop and not errors:
            src, tgt = PAIRS[i % len(PAIRS)]
            i += 1
            try:
                out = interop.to_framework(sources[src](), tgt)
                got = _read(out)
                if got != 255.0:
                    errors.append(f"{src}->{tgt}: read {got}")
            except Exception as e:  # noqa: BLE001 - any error is a failure
                errors.append(f"{src}->{tgt}: {type(e).__name__}: {e}")
            counts[k] += 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:5]
    # the plan cache is consistent: every entry of the pairs converted here still converts
    # its own pair correctly (entries other tests left, such as NumPy -> CuPy on a machine
    # without a GPU, are not this test's)
    targets = {tgt for _, tgt in PAIRS}
    for (tp, target, device, copy), fn in list(REGISTRY.cache.items().items()):
        for make in sources.values():
            x = make()
            if type(x) is tp and target in targets and device is None and copy is None:
                assert _read(fn(x)) == 255.0
    MEASURED["threads"] = {"threads": THREADS, "seconds": SECONDS, "conversions": sum(counts)}
    assert sum(counts) > THREADS


@pytest.fixture(scope="module", autouse=True)
def _write_measurements():
    yield
    path = os.environ.get("RELIABILITY_JSON")
    if path:
        with open(path, "w") as f:
            json.dump({"bounds": {"rss": RSS_BOUND, "traced": TRACED_BOUND, "plans": PLAN_BOUND},
                       **MEASURED}, f, indent=1)
