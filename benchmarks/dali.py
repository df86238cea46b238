"""DALI: a CPU pipeline's dense batch handed to torch, JAX and NumPy, interop against DALI's ways.

For each batch (a small one and 64 x 3 x 224 x 224 float32), per target, paired in
interleaved rounds of one run, each starting from the ``TensorListCPU`` ``pipe.run()`` gives:

- interop: ``interop.to_framework(tl, target)``;
- DALI's copy: torch ``feed_ndarray(tl.as_tensor(), preallocated)`` (what its
  iterators do under the legacy executor), NumPy ``np.array(tl.as_tensor())``, JAX
  ``nvidia.dali.plugin.jax.integration._to_jax_array(tl.as_tensor(), copy=True)``;
- DALI's view: ``torch.from_dlpack(tl.as_tensor())`` (``to_torch_tensor(t, copy=False)``, what
  DALI 2.x iterators do under the default executor), ``np.asarray(tl.as_tensor())``,
  ``_to_jax_array(tl.as_tensor(), copy=False)``.

Bytes copied are read from the results' own pointers (0 when the result is DALI's buffer).
JAX runs on its CPU device. Skipped, with the reason, where DALI is not installed.
"""

from __future__ import annotations

import statistics
import time
import warnings
from typing import Any

SIZES = {"small": (8, 3, 32, 32), "large": (64, 3, 224, 224)}
QUICK_SIZES = {"small": (8, 3, 32, 32), "large": (8, 3, 64, 64)}


def _batch(shape: tuple[int, ...]) -> Any:
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=shape[0], num_threads=1, device_id=None, seed=0)
    def pipe() -> Any:
        return fn.random.uniform(range=[0, 1], shape=list(shape[1:]), dtype=types.FLOAT)

    p = pipe()
    p.build()
    (tl,) = p.run()
    return p, tl


def _per_call(fn: Any, budget: float) -> float:
    """Seconds per call of ``fn``, over as many calls as fit in about ``budget`` seconds."""
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    n = max(1, min(20_000, int(budget / once)))
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def _methods(tl: Any, target: str) -> dict[str, Any]:
    import numpy as np
    import torch
    from nvidia.dali.plugin.jax.integration import _to_jax_array
    from nvidia.dali.plugin.pytorch import feed_ndarray

    import interop

    if target == "torch":
        out = torch.empty(tuple(tl.as_tensor().shape()), dtype=torch.float32)
        return {"interop": lambda: interop.to_framework(tl, "torch"),
                "dali_copy": lambda: feed_ndarray(tl.as_tensor(), out),
                "dali_view": lambda: torch.from_dlpack(tl.as_tensor())}
    if target == "numpy":
        return {"interop": lambda: interop.to_framework(tl, "numpy"),
                "dali_copy": lambda: np.array(tl.as_tensor()),
                "dali_view": lambda: np.asarray(tl.as_tensor())}
    return {"interop": lambda: interop.to_framework(tl, "jax"),
            "dali_copy": lambda: _to_jax_array(tl.as_tensor(), True),
            "dali_view": lambda: _to_jax_array(tl.as_tensor(), False)}


def _pointer(x: Any) -> int:
    """The first element's address, by the result's own framework."""
    if hasattr(x, "data_ptr"):
        return x.data_ptr()
    if hasattr(x, "unsafe_buffer_pointer"):
        return x.unsafe_buffer_pointer()
    return x.ctypes.data


CALLS = {
    "torch": {"dali_copy": "feed_ndarray(tl.as_tensor(), preallocated)",
              "dali_view": "torch.from_dlpack(tl.as_tensor())"},
    "numpy": {"dali_copy": "np.array(tl.as_tensor())", "dali_view": "np.asarray(tl.as_tensor())"},
    "jax": {"dali_copy": "_to_jax_array(tl.as_tensor(), copy=True)",
            "dali_view": "_to_jax_array(tl.as_tensor(), copy=False)"},
}
"""DALI's own spelling of each method, as the report names it."""


def run(quick: bool = False) -> dict[str, Any]:
    try:
        import nvidia.dali  # noqa: F401
    except ImportError as e:
        return {"skipped": True, "reason": f"DALI is not installed ({e}): "
                "pip install 'interop[dali]'"}
    warnings.filterwarnings("ignore")
    import jax

    import interop

    rounds = 3 if quick else 7
    budget = 0.01 if quick else 0.05
    out: dict[str, Any] = {"rounds": rounds, "calls": CALLS, "batches": []}
    with jax.default_device(jax.devices("cpu")[0]):
        for label, shape in (QUICK_SIZES if quick else SIZES).items():
            pipe, tl = _batch(shape)
            nbytes = 4 * _volume(shape)
            row: dict[str, Any] = {"batch": label, "shape": list(shape), "dtype": "float32",
                                   "bytes": nbytes, "targets": {}}
            for target in ("torch", "numpy", "jax"):
                methods = _methods(tl, target)
                copied = {k: 0 if _pointer(f()) == tl.data_ptr() else nbytes
                          for k, f in methods.items()}
                samples: dict[str, list[float]] = {k: [] for k in methods}
                for _ in range(rounds):  # interleaved: each round times every method
                    for k, f in methods.items():
                        samples[k].append(_per_call(f, budget))
                med = {k: statistics.median(v) * 1e6 for k, v in samples.items()}
                row["targets"][target] = {
                    "us": med, "bytes_copied": copied,
                    "interop_vs_dali_copy": med["interop"] / med["dali_copy"],
                    "interop_vs_dali_view": med["interop"] / med["dali_view"],
                    "plan": str(interop.explain(tl, target)).splitlines()[0]}
            out["batches"].append(row)
            del pipe, tl
    return out


def _volume(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _size(n: int) -> str:
    return "0" if not n else f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def markdown(d: dict[str, Any]) -> list[str]:
    """The report's DALI section: one row per batch and target."""
    lines = ["", "## 8. DALI: a CPU pipeline's dense batch to torch, NumPy and JAX", ""]
    if d.get("skipped"):
        return lines + [f"Skipped: {d['reason']}"]
    lines += [f"Medians of {d['rounds']} interleaved rounds, per call, each from the "
              "`TensorListCPU` of `pipe.run()`; bytes copied read from the results' pointers. "
              "DALI's copy and view: " + "; ".join(
                  f"{t} `{c['dali_copy']}` / `{c['dali_view']}`" for t, c in d["calls"].items()),
              "", "| batch | target | interop us | DALI copy us | DALI view us | interop / copy "
              "| interop / view | bytes copied: interop, DALI copy, DALI view |",
              "|---|---|---|---|---|---|---|---|"]
    for row in d["batches"]:
        batch = f"{'x'.join(map(str, row['shape']))} {row['dtype']} ({_size(row['bytes'])})"
        for target, r in row["targets"].items():
            us, c = r["us"], r["bytes_copied"]
            lines.append(
                f"| {batch} | {target} | {us['interop']:.2f} | {us['dali_copy']:.2f} | "
                f"{us['dali_view']:.2f} | {r['interop_vs_dali_copy']:.3f} | "
                f"{r['interop_vs_dali_view']:.2f} | {_size(c['interop'])}, "
                f"{_size(c['dali_copy'])}, {_size(c['dali_view'])} |")
    return lines
