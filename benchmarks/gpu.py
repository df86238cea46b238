"""GPU benchmarks: every pair among CuPy, Numba, torch (CUDA) and JAX (GPU).

Each pair's ``interop.to_framework`` is timed against the native call a user would write
(``torch.from_dlpack``, ``cupy.from_dlpack``, ``jax.dlpack.from_dlpack``,
``numba.cuda.as_cuda_array`` ...), interleaved in the same run (``benchmarks.interleaved``),
each call followed by a device synchronize so that work a conversion enqueues is counted;
medians of many samples. Both sides must be zero-copy (checked with the frameworks' own
pointers) for a pair to be timed. Without a CUDA device everything is skipped with the
reason. The pool (allocate/free per framework, memory a pipeline holds) is its own section,
``pool``.
"""

from __future__ import annotations

import statistics
import warnings
from collections.abc import Callable
from typing import Any

from . import calibrate, interleaved, summary, timer

FRAMEWORKS = ("cupy", "numba", "torch", "jax")
N_ELEMENTS = 1 << 20  # float32, 4 MiB on the device (the size does not matter: zero-copy)
SAMPLE_S, REPEAT, QUICK_REPEAT = 2e-3, 201, 21

# Native spellings per (source, target); the first that runs zero-copy is the baseline.
NATIVE: dict[tuple[str, str], list[str]] = {
    ("cupy", "torch"): ["torch.from_dlpack(x)"],
    ("jax", "torch"): ["torch.from_dlpack(x)"],
    ("numba", "torch"): ["torch.as_tensor(x, device='cuda')"],
    ("torch", "cupy"): ["cupy.from_dlpack(x)"],
    ("jax", "cupy"): ["cupy.from_dlpack(x)"],
    ("numba", "cupy"): ["cupy.asarray(x)"],
    ("cupy", "jax"): ["jax.dlpack.from_dlpack(x)"],
    ("torch", "jax"): ["jax.dlpack.from_dlpack(x)"],
    ("numba", "jax"): ["jax.dlpack.from_dlpack(cupy.asarray(x))"],
    ("cupy", "numba"): ["numba.cuda.as_cuda_array(x)"],
    ("torch", "numba"): ["numba.cuda.as_cuda_array(x)"],
    ("jax", "numba"): ["numba.cuda.as_cuda_array(x)",
                       "numba.cuda.as_cuda_array(cupy.from_dlpack(x))"],
}


def cuda_reason() -> str | None:
    """``None`` when CuPy (which makes every GPU sample) sees a CUDA device, else why not."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (it builds the GPU samples)"
    except Exception as e:  # installed but broken
        return f"CuPy fails to import: {type(e).__name__}: {e}"
    try:
        n = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as e:
        return f"no CUDA device: CuPy reports {type(e).__name__}: {e}"
    return None if n else "no CUDA device"


def run(quick: bool = False) -> dict[str, Any]:
    reason = cuda_reason()
    out: dict[str, Any] = {}
    if reason is not None:
        out["conversions"] = {"skipped": True, "reason": reason}
    else:  # pragma: no cover - needs a GPU
        out["conversions"] = _device_conversions(quick)
    return out


def pointer(x: Any) -> int:
    """The device address of ``x``'s first element, by its own framework's accessor."""
    mod = type(x).__module__.partition(".")[0]
    if mod == "cupy":
        return int(x.data.ptr)
    if mod == "torch":
        return int(x.data_ptr())
    if mod in ("jax", "jaxlib"):
        return int(x.unsafe_buffer_pointer())
    if mod == "numba":
        return int(x.device_ctypes_pointer.value)
    raise TypeError(f"no pointer accessor for {type(x)!r}")


def _unavailable(name: str) -> str | None:  # pragma: no cover - needs a GPU
    """Why ``name`` cannot hold GPU data here, or ``None``."""
    try:
        if name == "torch":
            import torch

            return None if torch.cuda.is_available() else f"torch {torch.__version__} sees no GPU"
        if name == "jax":
            import jax

            return None if jax.devices("gpu") else "JAX has no GPU device"
        if name == "numba":
            from numba import cuda

            return None if cuda.is_available() else "numba.cuda sees no GPU"
        import cupy  # noqa: F401
    except Exception as e:
        return f"{name}: {type(e).__name__}: {e}"
    return None


def samples(n: int = N_ELEMENTS) -> dict[str, Callable[[], Any]]:  # pragma: no cover - GPU
    """A maker of one float32 device value per framework (``n`` elements, on device 0)."""
    import cupy

    def make_cupy() -> Any:
        return cupy.arange(n, dtype=cupy.float32)

    def make_numba() -> Any:
        from numba import cuda

        return cuda.to_device(cupy.asnumpy(make_cupy()))

    def make_torch() -> Any:
        import torch

        return torch.arange(n, dtype=torch.float32, device="cuda")

    def make_jax() -> Any:
        import jax
        import jax.numpy as jnp

        return jnp.arange(n, dtype=jnp.float32, device=jax.devices("gpu")[0])

    return {"cupy": make_cupy, "numba": make_numba, "torch": make_torch, "jax": make_jax}


def _env() -> dict[str, Any]:  # pragma: no cover - needs a GPU
    """The names the native spellings use (frameworks missing here are left out)."""
    import importlib

    import cupy

    import interop

    env: dict[str, Any] = {"cupy": cupy, "f": interop.to_framework,
                           "sync": cupy.cuda.runtime.deviceSynchronize}
    for name, sub in (("torch", None), ("jax", "jax.dlpack"), ("numba", "numba.cuda")):
        try:
            env[name] = importlib.import_module(name)
            if sub:
                importlib.import_module(sub)
        except ImportError:
            pass
    return env


def _native(src: str, tgt: str, x: Any, env: dict[str, Any]) -> tuple[str | None, str]:
    """The first native spelling that converts ``x`` zero-copy, or ``None`` and why not."""
    why = "no native spelling"
    for stmt in NATIVE[(src, tgt)]:
        try:
            y = eval(stmt, {**env, "x": x})  # our own fixed spellings, never user input
        except Exception as e:
            why = f"{stmt}: {type(e).__name__}: {e}"
            continue
        if pointer(y) == pointer(x):
            return stmt, ""
        why = f"{stmt} copies"
    return None, why


def _pair(src: str, tgt: str, x: Any, env: dict[str, Any], repeat: int) -> dict[str, Any]:
    native, why = _native(src, tgt, x, env)
    if native is None:
        return {"pair": f"{src}->{tgt}", "skipped": True, "reason": why}
    y = env["f"](x, tgt)
    if pointer(y) != pointer(x):
        return {"pair": f"{src}->{tgt}", "skipped": True, "native": native,
                "reason": "interop copied (the table and the tests say why)"}
    g = {**env, "x": x, "tgt": tgt}
    timers = {"interop": timer("f(x, tgt); sync()", g), "native": timer(f"{native}; sync()", g)}
    number = calibrate(timers["native"], SAMPLE_S)
    got = interleaved(timers, number, repeat)
    diffs = [a - b for a, b in zip(got["interop"], got["native"])]
    ti, tn = summary(got["interop"]), summary(got["native"])
    return {"pair": f"{src}->{tgt}", "native": native, "zero_copy": True, "calls": number,
            "interop_us": ti, "native_us": tn, "overhead_us": ti["median"] - tn["median"],
            "overhead_paired_us": statistics.median(diffs) * 1e6}


def _device_conversions(quick: bool) -> dict[str, Any]:  # pragma: no cover - needs a GPU
    import cupy

    env = _env()
    makers = samples()
    missing = {n: r for n in FRAMEWORKS if (r := _unavailable(n))}
    repeat = QUICK_REPEAT if quick else REPEAT
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"]
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for src in FRAMEWORKS:
            for tgt in FRAMEWORKS:
                if src == tgt:
                    continue
                if src in missing or tgt in missing:
                    rows.append({"pair": f"{src}->{tgt}", "skipped": True,
                                 "reason": missing.get(src) or missing[tgt]})
                    continue
                try:
                    rows.append(_pair(src, tgt, makers[src](), env, repeat))
                except Exception as e:  # one broken pair must not lose the others
                    rows.append({"pair": f"{src}->{tgt}", "skipped": True,
                                 "reason": f"{type(e).__name__}: {e}"})
    return {"skipped": False, "device": name.decode() if isinstance(name, bytes) else name,
            "elements": N_ELEMENTS, "dtype": "float32", "repeat": repeat, "pairs": rows}
