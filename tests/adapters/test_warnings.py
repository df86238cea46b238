"""Conversions are silent under ``-W error``: no framework's warning about what interop already
records (a read-only source reaching torch: the plan's hazard) reaches the caller.

torch warns once per process (``TORCH_WARN_ONCE``) when ``torch.from_numpy`` is handed a
read-only array, so the checks run in a fresh interpreter each, where that first warning has
not been spent yet; ``warnings.simplefilter("error")`` there turns any warning into an error,
as a project's ``filterwarnings = error`` does.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import run_child

pytest.importorskip("torch")
pytest.importorskip("jax")
pytest.importorskip("pyarrow")

HAZARD = "torch tensors cannot be read-only"


def test_read_only_sources_reach_torch_silently_from_several_threads():
    """Read-only NumPy (compact, strided, bfloat16), JAX, pyarrow, a sharded JAX array gathered
    to the host and a structure of them, converted to torch by several threads at once with
    every warning an error: each result is zero-copy where the source is one buffer (pointers
    by the frameworks' own accessors), and ``explain`` still names the hazard."""
    r = run_child("""
        import os, threading, warnings
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
        warnings.simplefilter("error")
        import numpy as np, ml_dtypes, torch, jax, jax.numpy as jnp, pyarrow as pa
        from jax.sharding import Mesh, NamedSharding, PartitionSpec
        import interop

        cpu = jax.devices("cpu")
        ro = np.arange(8.0); ro.flags.writeable = False
        strided = np.arange(16.0)[::2]; strided.flags.writeable = False
        bf = np.arange(8.0).astype(ml_dtypes.bfloat16); bf.flags.writeable = False
        with jax.default_device(cpu[0]):
            j = jnp.arange(8.0)
        sharded = jax.device_put(np.arange(8.0, dtype=np.float32), NamedSharding(
            Mesh(np.array(cpu[:2]), ("x",)), PartitionSpec("x")))
        arrow = pa.array(np.arange(8.0))
        sources = {  # name: (value, pointer by its own framework, or None: a copy)
            "numpy": (ro, ro.ctypes.data), "strided": (strided, strided.ctypes.data),
            "bfloat16": (bf, bf.ctypes.data), "jax": (j, j.unsafe_buffer_pointer()),
            "pyarrow": (arrow, arrow.buffers()[1].address), "sharded": (sharded, None)}
        errors = []
        start = threading.Barrier(len(sources) + 1)

        def run(name, x, ptr):
            start.wait()
            try:
                for _ in range(20):  # the first call runs the checked plan, later ones the fast
                    t = interop.to_framework(x, "torch")
                    if ptr is None:
                        assert t.tolist() == np.asarray(x).tolist(), name
                    else:
                        assert t.data_ptr() == ptr, name
                    if name != "sharded":
                        assert "torch tensors cannot be read-only" in " ".join(
                            interop.explain(x, "torch").hazards), name
                    assert interop.can_convert(x, "torch"), name
            except BaseException as e:
                errors.append(f"{name}: {type(e).__name__}: {e}")

        def tree():
            start.wait()
            try:
                for _ in range(20):
                    out = interop.to_framework({"w": ro, "k": [j, arrow]}, "torch")
                    assert out["w"].data_ptr() == ro.ctypes.data
                    assert out["k"][0].data_ptr() == j.unsafe_buffer_pointer()
            except BaseException as e:
                errors.append(f"structure: {type(e).__name__}: {e}")

        threads = [threading.Thread(target=run, args=(n, *v)) for n, v in sources.items()]
        threads.append(threading.Thread(target=tree))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("ERRORS", errors)
        assert not errors, errors
    """)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert r.stderr == "", r.stderr[-3000:]


def test_read_only_numpy_into_torch_is_zero_copy_and_the_hazard_is_real():
    """The tensor over a read-only array is the array's memory (a write through it is seen by
    the array: the hazard ``explain`` names is what happens), on the checked plan and on the
    fast form, and a writable array still goes through ``torch.from_numpy`` as it is."""
    import torch

    import interop

    for _ in range(2):  # the pair's first call (checked plan), then its fast form
        a = np.arange(4.0)
        a.flags.writeable = False
        t = interop.to_framework(a, "torch")
        assert t.data_ptr() == a.ctypes.data
        t[0] = 9.0
        assert a[0] == 9.0
        assert any(HAZARD in h for h in interop.explain(a, "torch").hazards)
    w = np.arange(4.0)
    assert interop.to_framework(w, "torch").data_ptr() == w.ctypes.data
    assert not any(HAZARD in h for h in interop.explain(w, "torch").hazards)
    assert isinstance(t, torch.Tensor)
