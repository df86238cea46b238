"""``python -m interop doctor``: what this machine has, and what to watch out for.

Reports the frameworks interop found (version, devices, protocols), the CUDA devices CuPy
sees, whether a ``mempool`` RMM pool is active, and the known pitfalls of the installed
framework versions. Each pitfall is checked by a harmless probe (or, for one that would
abort the interpreter, a probe in a child process) and says whether interop guards it.
Nothing here ever crashes: a failing probe is reported, not raised.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import warnings
from collections.abc import Callable
from typing import Any

from . import cuda_devices

PRESENT, ABSENT, UNKNOWN, SKIPPED = "present", "absent", "could not check", "not installed"


def _installed(pkg: str) -> bool:
    try:
        return pkg in sys.modules or importlib.util.find_spec(pkg) is not None
    except (ImportError, ValueError):
        return False


def _aligned(n: int, dtype: str = "float32") -> Any:
    import numpy as np

    from ..host import fresh_copy

    return fresh_copy(np.arange(n, dtype=dtype))


def _misaligned() -> Any:
    import numpy as np

    return _aligned(4096 + 64, "uint8")[4:4 + 4096].view(np.float32)


# ---- each pitfall: (id, framework, summary, probe -> (state, evidence), guard -> text) -----
def _torch_negative_strides() -> tuple[str, str]:
    code = "import numpy, torch; torch.from_dlpack(numpy.arange(4.0)[::-1])"
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        return UNKNOWN, "the child process probe timed out"
    if r.returncode < 0 or r.returncode == 134:
        return PRESENT, (f"a child process calling torch.from_dlpack on numpy.arange(4.0)[::-1] "
                         f"died (exit {r.returncode})")
    if r.returncode == 0:
        return ABSENT, "the child process probe returned normally"
    return ABSENT, f"the child process probe raised a Python error (exit {r.returncode})"


def _torch_negative_guard() -> str:
    import numpy as np

    import interop

    plan = interop.explain(np.arange(4.0)[::-1], "torch")
    if not plan.zero_copy and any("negative strides" in r for r in plan.reasons):
        return "guarded: interop copies instead (copy=False raises ZeroCopyError)"
    return "NOT guarded: interop would pass negative strides to torch"


def _torch_readonly() -> tuple[str, str]:
    import numpy as np
    import torch

    a = np.zeros(4, dtype=np.float32)
    a.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.from_dlpack(a)
    t[0] = 1.0  # writes into our own throw-away array
    if a[0] == 1.0:
        return PRESENT, "a write through torch.from_dlpack(read-only array) changed the array"
    return ABSENT, "the read-only array did not change"


def _torch_readonly_guard() -> str:
    import numpy as np

    import interop

    a = np.zeros(4, dtype=np.float32)
    a.flags.writeable = False
    plan = interop.explain(a, "torch")
    if plan.hazards:
        return "reported: the plan records it as a hazard (torch has no read-only tensors)"
    return "NOT reported by the plan"


def _jax_misaligned() -> tuple[str, str]:
    import jax

    a = _misaligned()
    j = jax.dlpack.from_dlpack(a)
    if j.unsafe_buffer_pointer() != a.ctypes.data:
        return PRESENT, ("jax.dlpack.from_dlpack of a CPU buffer 4 bytes off 64-byte alignment "
                         "returned an array with a different data pointer, without a warning")
    return ABSENT, "the misaligned buffer was imported in place"


def _jax_misaligned_guard() -> str:
    import interop

    plan = interop.explain(_misaligned(), "jax")
    if not plan.zero_copy and any("aligned" in r for r in plan.reasons):
        return "guarded: the plan says it copies and why; copy=False raises ZeroCopyError"
    return "NOT guarded: the plan claims zero-copy"


def _jax_strides() -> tuple[str, str]:
    import jax

    try:
        jax.dlpack.from_dlpack(_aligned(64)[::2])
    except Exception as e:
        return PRESENT, f"jax.dlpack.from_dlpack of a strided view raised {type(e).__name__}"
    return ABSENT, "a strided view was accepted"


def _jax_strides_guard() -> str:
    import interop

    plan = interop.explain(_aligned(64)[::2], "jax")
    if not plan.zero_copy and plan.supported:
        return "guarded: interop makes one compact copy (copy=False raises ZeroCopyError)"
    return "NOT guarded"


def _jax_x64() -> tuple[str, str]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    if jax.config.jax_enable_x64:
        return ABSENT, "jax_enable_x64 is on: 64-bit dtypes are kept"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = jnp.asarray(np.zeros(2, dtype=np.float64)).dtype
    if str(dt) != "float64":
        return PRESENT, f"jax_enable_x64 is off: jnp.asarray(float64 array) gave {dt}"
    return ABSENT, "float64 was kept"


def _jax_x64_guard() -> str:
    import numpy as np

    import interop

    plan = interop.explain(np.zeros(2, dtype=np.float64), "jax")
    if not plan.supported:
        return ("guarded: interop refuses (UnsupportedConversionError) instead of narrowing; "
                "enable jax_enable_x64 or cast first")
    return "converts: 64-bit types are enabled"


PITFALLS: list[tuple[str, str, str, Callable[[], tuple[str, str]], Callable[[], str]]] = [
    ("torch-negative-strides", "torch",
     "torch.from_dlpack aborts the whole interpreter on a buffer with negative strides",
     _torch_negative_strides, _torch_negative_guard),
    ("torch-readonly", "torch",
     "torch.from_dlpack of a read-only NumPy array returns a writable tensor",
     _torch_readonly, _torch_readonly_guard),
    ("jax-misaligned-copy", "jax",
     "JAX on the CPU silently copies a DLPack buffer that is not 64-byte aligned",
     _jax_misaligned, _jax_misaligned_guard),
    ("jax-non-compact", "jax",
     "JAX refuses DLPack buffers with non-compact strides (steps, broadcasting, Fortran order)",
     _jax_strides, _jax_strides_guard),
    ("jax-x64", "jax",
     "JAX narrows 64-bit dtypes to 32 bits while jax_enable_x64 is off (its default)",
     _jax_x64, _jax_x64_guard),
]


def check_pitfalls() -> list[dict[str, Any]]:
    out = []
    for pid, fw, summary, probe, guard in PITFALLS:
        entry: dict[str, Any] = {"id": pid, "framework": fw, "summary": summary}
        if not _installed(fw):
            entry.update(state=SKIPPED, evidence=f"{fw} is not installed", interop="")
            out.append(entry)
            continue
        try:
            entry["state"], entry["evidence"] = probe()
        except Exception as e:
            entry["state"], entry["evidence"] = UNKNOWN, f"probe failed: {type(e).__name__}: {e}"
        try:
            entry["interop"] = guard()
        except Exception as e:
            entry["interop"] = f"could not check: {type(e).__name__}: {e}"
        out.append(entry)
    return out


def pool_status() -> dict[str, Any]:
    """Whether a mempool RMM pool is active; never raises."""
    try:
        import mempool
    except Exception as e:
        why = f"mempool not importable: {e}"
        return {"available": False, "active": False, "detail": why, "error": why}
    status = getattr(mempool, "status", None)
    if status is None:
        why = "mempool has no status()"
        return {"available": True, "active": False, "detail": why, "error": why}
    try:
        s = status()
        d = s.to_dict() if hasattr(s, "to_dict") else {"detail": str(s)}
        active = bool(getattr(s, "active", d.get("active", False)))
        routed = list(s.routed()) if hasattr(s, "routed") else []
        return {"available": True, "active": active, "pool": d.get("pool"), "routed": routed,
                "detail": str(s)}
    except Exception as e:
        why = f"mempool.status() failed: {type(e).__name__}: {e}"
        return {"available": True, "active": False, "detail": why, "error": why}


def collect() -> dict[str, Any]:
    import platform

    import interop

    n, why = cuda_devices()
    return {
        "interop": interop.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "frameworks": interop.frameworks(),
        "gpus": {"count": n, "detail": why},
        "pool": pool_status(),
        "pitfalls": check_pitfalls(),
    }


def render(d: dict[str, Any]) -> str:
    lines = [f"interop {d['interop']} on Python {d['python']} ({d['platform']})", "",
             "frameworks:"]
    w = max([len(f["name"]) for f in d["frameworks"]] + [8])
    for f in d["frameworks"]:
        if not f["importable"]:
            lines.append(f"  {f['name']:<{w}} not installed")
            continue
        lines.append(f"  {f['name']:<{w}} {f['version'] or '?':<12} devices: "
                     f"{', '.join(f['devices']):<10} protocols: "
                     f"{', '.join(f['protocols']) or 'native calls only (no DLPack)'}")
    g = d["gpus"]
    lines += ["", f"GPUs: {g['count']}" + ("" if g["count"] else f" ({g['detail']})")]
    p = d["pool"]
    if p["active"]:
        lines.append(f"RMM pool: active ({p.get('pool')}); routed: "
                     f"{', '.join(p.get('routed') or []) or 'none'}")
    else:
        why = p.get("error") or "mempool.use_rmm_pool() has not been called"
        lines.append(f"RMM pool: not active ({why})")
    lines += ["", "known pitfalls of the installed versions:"]
    for q in d["pitfalls"]:
        mark = {PRESENT: "!", ABSENT: "ok", SKIPPED: "-", UNKNOWN: "?"}[q["state"]]
        lines.append(f"  [{mark}] {q['framework']}: {q['summary']}")
        lines.append(f"       {q['state']}: {q['evidence']}")
        if q["interop"]:
            lines.append(f"       interop: {q['interop']}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m interop doctor",
                                description="frameworks, GPUs, the pool, and known pitfalls")
    p.add_argument("--json", action="store_true", help="the report as JSON")
    args = p.parse_args(argv)
    d = collect()
    if args.json:
        print(json.dumps(d, indent=2))
    else:
        sys.stdout.write(render(d))
    return 0
