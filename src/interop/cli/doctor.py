"""``python -m interop doctor``: what this machine has, and what to watch out for.

Reports the frameworks interop found (version, devices, protocols), the CUDA devices CuPy
sees, whether a ``mempool`` RMM pool is active, and the known pitfalls of the installed
framework versions. Each pitfall is checked by a harmless probe (or, for one that would
abort the interpreter, a probe in a child process) and says whether interop guards it.
Nothing here ever crashes: a failing probe is reported, not raised.

TensorFlow and PaddlePaddle are probed only in child processes (several of their pitfalls
abort the interpreter, and importing paddle after tensorflow segfaults), run side by side.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import warnings
from collections.abc import Callable
from typing import Any

from ..adapters.base import installed
from . import cuda_devices, package_version

PRESENT, ABSENT, UNKNOWN, SKIPPED = "present", "absent", "could not check", "not installed"
NOT_RUN = "skipped"


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
    if plan.zero_copy:
        return "converts: 64-bit types are enabled"
    if any("jax_enable_x64" in r for r in plan.reasons):
        return ("guarded: interop narrows as JAX would, with one copy that explain shows and "
                "an interop.NarrowingWarning (copy=False raises ZeroCopyError); enable "
                "jax_enable_x64 to keep 64 bits")
    return "NOT guarded"


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


# ---- TensorFlow and PaddlePaddle: probed in child processes ------------------------------
# A child prints one JSON object {pitfall id: [state, evidence, interop]} on its last line, or
# dies: for those, the exit code is the evidence and the guard is checked here, import-free.
_PRELUDE = """
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
from interop.host import fresh_copy
out = {}
def report(pid, present, evidence, guard):
    out[pid] = ["present" if present else "absent", evidence, guard]
"""

_TF_BATCH = _PRELUDE + r"""
import tensorflow as tf
import interop
from interop.errors import UnsupportedConversionError
from interop.protocols import dlpack
t = tf.range(1024, dtype=tf.float32)
ptr = dlpack.inspect_capsule(tf.experimental.dlpack.to_dlpack(t)).view.ptr
a = t.numpy()
r = interop.to_framework(t, "numpy")
report("tensorflow-numpy-copies", a.ctypes.data != ptr,
       "Tensor.numpy() returned an array at another address than the tensor's buffer",
       "avoided: interop uses numpy.asarray, a zero-copy read-only view" if
       r.ctypes.data == ptr and not r.flags.writeable else "NOT avoided")
b = tf.cast(t, tf.bfloat16)
report("tensorflow-bfloat16-writable", np.asarray(b).flags.writeable,
       "numpy.asarray(bfloat16 tensor) is a writable view of the immutable tensor",
       "guarded: interop marks the view read-only" if
       not interop.to_framework(b, "numpy").flags.writeable else "NOT guarded")
try:
    tf.experimental.dlpack.from_dlpack(fresh_copy(np.arange(64.0))[::2].__dlpack__())
    refused = ""
except Exception as e:
    refused = type(e).__name__
plan = interop.explain(fresh_copy(np.arange(64.0))[::2], "tensorflow")
report("tensorflow-non-compact", bool(refused),
       f"tf.experimental.dlpack.from_dlpack of a strided view raised {refused}" if refused
       else "a strided view was accepted",
       "guarded: interop makes one compact copy (copy=False raises ZeroCopyError)"
       if plan.supported and not plan.zero_copy else "NOT guarded")
s = tf.constant(["a"])
try:
    interop.to_framework(s, "torch")
    guard = "NOT guarded: interop handed a string tensor on"
except UnsupportedConversionError:
    guard = "guarded: interop refuses string tensors before calling __dlpack__"
report("tensorflow-string-dlpack", True, "", guard)
try:
    interop.to_framework(fresh_copy(np.arange(4.0)), "paddle")
    guard = "NOT guarded: interop imported paddle after tensorflow"
except UnsupportedConversionError as e:
    guard = ("guarded: interop refuses (UnsupportedConversionError) instead of importing "
             "paddle" if "paddle" not in sys.modules else "NOT guarded")
report("paddle-after-tensorflow", True, "", guard)
print(json.dumps(out))
"""

_PADDLE_BATCH = _PRELUDE + r"""
import paddle
import interop
fd = paddle.utils.dlpack.from_dlpack
seen = []
for n in (2, 4):
    src = fresh_copy(np.arange(float(n)))[::-1]
    try:
        got = fd(src).numpy()
        if not np.array_equal(got, src):
            seen.append(f"numpy.arange({n}.0)[::-1] came back as {got.tolist()}")
    except Exception as e:
        seen.append(f"numpy.arange({n}.0)[::-1] raised {type(e).__name__}")
plan = interop.explain(fresh_copy(np.arange(4.0))[::-1], "paddle")
report("paddle-negative-strides", bool(seen),
       "paddle.utils.dlpack.from_dlpack of " + "; of ".join(seen) if seen
       else "negative strides were imported correctly",
       "guarded: interop copies instead (copy=False raises ZeroCopyError)"
       if plan.supported and not plan.zero_copy else "NOT guarded")
a = fresh_copy(np.zeros(4, dtype=np.float32))
a.flags.writeable = False
t = fd(a)
t[0] = 1.0
report("paddle-readonly", a[0] == 1.0,
       "a write through paddle.utils.dlpack.from_dlpack(read-only array) changed the array",
       "reported: the plan records it as a hazard" if interop.explain(a, "paddle").hazards
       else "NOT reported by the plan")
u = fd(fresh_copy(np.arange(4, dtype=np.uint16)))
plan = interop.explain(fresh_copy(np.arange(4, dtype=np.uint16)), "paddle")
report("paddle-uint16-bfloat16", "bfloat16" in str(u.dtype),
       f"paddle.utils.dlpack.from_dlpack(uint16 array) gave a {u.dtype} tensor",
       "guarded: interop refuses uint16 targets (UnsupportedConversionError)"
       if not plan.supported else "NOT guarded")
dev = paddle.arange(4, dtype="float32").__dlpack_device__()
ours = interop.api.REGISTRY.adapters["paddle"].export_dlpack(paddle.arange(4, dtype="float32"))
report("paddle-dlpack-device", not isinstance(dev[1], int),
       f"Tensor.__dlpack_device__() returned {tuple(dev)!r} (jax.dlpack.from_dlpack fails on it)",
       "guarded: interop's producer reports " + repr(ours.__dlpack_device__()))
print(json.dumps(out))
"""

_TF_MISALIGNED = """
import numpy as np, tensorflow as tf
raw = np.zeros(4096 + 128, np.uint8)
off = (-raw.ctypes.data) % 64 + 4
t = tf.experimental.dlpack.from_dlpack(raw[off:off + 4096].view(np.float32).__dlpack__())
tf.reduce_sum(t).numpy()
"""
_TF_STRING = "import tensorflow as tf; tf.constant(['a']).__dlpack__()"
_PADDLE_AFTER_TF = "import tensorflow; import paddle"

_CHILDREN: dict[str, tuple[tuple[str, ...], str]] = {
    "tf-batch": (("tensorflow",), _TF_BATCH),
    "paddle-batch": (("paddle",), _PADDLE_BATCH),
    "tf-misaligned": (("tensorflow",), _TF_MISALIGNED),
    "tf-string": (("tensorflow",), _TF_STRING),
    "paddle-after-tf": (("tensorflow", "paddle"), _PADDLE_AFTER_TF),
}


def _tf_misaligned_guard() -> str:
    import interop

    plan = interop.explain(_misaligned(), "tensorflow")
    if not plan.zero_copy and any("aligned" in r for r in plan.reasons):
        return "guarded: interop copies such buffers (copy=False raises ZeroCopyError)"
    return "NOT guarded: the plan claims zero-copy"


def _died(rc: int | None, what: str) -> tuple[str, str]:
    if rc is None:
        return UNKNOWN, "the child process probe timed out"
    if rc < 0 or rc == 134:
        return PRESENT, f"a child process {what} died (exit {rc})"
    if rc == 0:
        return ABSENT, "the child process probe returned normally"
    return ABSENT, f"the child process probe raised a Python error (exit {rc})"


# id, frameworks, summary, child, how to read it (state, evidence) when the child dies
CHILD_PITFALLS: list[tuple[str, tuple[str, ...], str, str, str]] = [
    ("tensorflow-misaligned-abort", ("tensorflow",),
     "TensorFlow imports a DLPack buffer that is not 64-byte aligned in place, and its kernels "
     "then abort the interpreter (Check failed: IsAligned())",
     "tf-misaligned", "importing a buffer 4 bytes off 64-byte alignment and summing it"),
    ("tensorflow-string-dlpack", ("tensorflow",),
     "Tensor.__dlpack__ of a tf.string tensor aborts the interpreter",
     "tf-string", "calling tf.constant(['a']).__dlpack__()"),
    ("tensorflow-numpy-copies", ("tensorflow",), "Tensor.numpy() always copies", "tf-batch", ""),
    ("tensorflow-bfloat16-writable", ("tensorflow",),
     "numpy.asarray of a bfloat16 tensor is writable (other dtypes give read-only views)",
     "tf-batch", ""),
    ("tensorflow-non-compact", ("tensorflow",),
     "TensorFlow refuses DLPack buffers with non-compact strides (steps, Fortran order, "
     "negative strides)", "tf-batch", ""),
    ("paddle-after-tensorflow", ("tensorflow", "paddle"),
     "importing paddle after tensorflow segfaults (both bundle protobuf)",
     "paddle-after-tf", "running `import tensorflow; import paddle`"),
    ("paddle-negative-strides", ("paddle",),
     "paddle.utils.dlpack.from_dlpack cannot import negative strides (it raises MemoryError "
     "for a ~16 EiB allocation, or reads outside the buffer and returns wrong values)",
     "paddle-batch", ""),
    ("paddle-readonly", ("paddle",),
     "paddle.utils.dlpack.from_dlpack ignores the read-only flag: the tensor is writable",
     "paddle-batch", ""),
    ("paddle-uint16-bfloat16", ("paddle",),
     "paddle.utils.dlpack.from_dlpack reads uint16 buffers as bfloat16", "paddle-batch", ""),
    ("paddle-dlpack-device", ("paddle",),
     "paddle's __dlpack_device__ gives the device id None on the CPU (the spec wants an int)",
     "paddle-batch", ""),
]


def _run_children(names: set[str]) -> dict[str, tuple[int | None, str]]:
    """Run the child probes ``names`` side by side: ``{name: (exit code, last stdout line)}``."""
    procs = {}
    for name in sorted(names):
        procs[name] = subprocess.Popen([sys.executable, "-c", _CHILDREN[name][1]],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                       text=True)
    out: dict[str, tuple[int | None, str]] = {}
    for name, proc in procs.items():
        try:
            stdout, _ = proc.communicate(timeout=300)
            lines = stdout.strip().splitlines()
            out[name] = (proc.returncode, lines[-1] if lines else "")
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            out[name] = (None, "")
    return out


def _child_pitfalls(skip: tuple[str, ...]) -> list[dict[str, Any]]:
    entries, wanted = [], set()
    for pid, fws, summary, child, _ in CHILD_PITFALLS:
        entry: dict[str, Any] = {"id": pid, "framework": fws[-1], "summary": summary}
        gone = [f for f in fws if f in skip]
        missing = [f for f in fws if not installed(f)]
        if gone:
            entry.update(state=NOT_RUN, evidence=f"{gone[0]} skipped (--skip)", interop="")
        elif missing:
            entry.update(state=SKIPPED, evidence=f"{missing[0]} is not installed", interop="")
        else:
            wanted.add(child)
        entries.append(entry)
    results = _run_children(wanted) if wanted else {}
    for entry, (pid, _, _, child, what) in zip(entries, CHILD_PITFALLS):
        if "state" in entry:
            continue
        rc, line = results[child]
        if what:  # a probe that kills its process when the pitfall is present
            entry["state"], entry["evidence"] = _died(rc, what)
        try:
            found = json.loads(line)[pid] if line.startswith("{") else None
        except (ValueError, KeyError):
            found = None
        if not what:
            if found is None:
                entry["state"], entry["evidence"] = UNKNOWN, (
                    f"the child process probe failed (exit {rc})")
            else:
                entry["state"], entry["evidence"] = found[0], found[1]
        entry["interop"] = found[2] if found else ""
        entries[entries.index(entry)] = entry
    _guards_for_dying(entries, results)
    return entries


def _guards_for_dying(entries: list[dict[str, Any]],
                      results: dict[str, tuple[int | None, str]]) -> None:
    """The guards of probes that kill their child: from the batch child, or checked here."""
    batch = results.get("tf-batch", (None, ""))[1]
    try:
        found = json.loads(batch) if batch.startswith("{") else {}
    except ValueError:
        found = {}
    for entry in entries:
        if entry.get("state") in (SKIPPED, NOT_RUN) or entry.get("interop"):
            continue
        if entry["id"] == "tensorflow-misaligned-abort":
            try:
                entry["interop"] = _tf_misaligned_guard()
            except Exception as e:
                entry["interop"] = f"could not check: {type(e).__name__}: {e}"
        elif entry["id"] in found:
            entry["interop"] = found[entry["id"]][2]
        else:
            entry["interop"] = "could not check: the TensorFlow child probe failed"


def check_pitfalls(skip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    out = []
    for pid, fw, summary, probe, guard in PITFALLS:
        entry: dict[str, Any] = {"id": pid, "framework": fw, "summary": summary}
        if not installed(fw):
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
    return out + _child_pitfalls(skip)


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


def collect(skip: tuple[str, ...] = ()) -> dict[str, Any]:
    import platform

    import interop

    n, why = cuda_devices()
    fws = interop.frameworks()
    for f in fws:  # a distribution named unlike its package (tensorflow-cpu, paddlepaddle)
        if f["importable"] and not f["version"]:
            f["version"] = package_version(f["name"])
    return {
        "interop": interop.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "frameworks": fws,
        "gpus": {"count": n, "detail": why},
        "pool": pool_status(),
        "pitfalls": check_pitfalls(skip),
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
        mark = {PRESENT: "!", ABSENT: "ok", SKIPPED: "-", NOT_RUN: "-", UNKNOWN: "?"}[q["state"]]
        lines.append(f"  [{mark}] {q['framework']}: {q['summary']}")
        lines.append(f"       {q['state']}: {q['evidence']}")
        if q["interop"]:
            lines.append(f"       interop: {q['interop']}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m interop doctor",
                                description="frameworks, GPUs, the pool, and known pitfalls")
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.add_argument("--skip", default="", metavar="NAMES",
                   help="comma-separated frameworks whose pitfalls are not probed "
                        "(tensorflow, paddle)")
    args = p.parse_args(argv)
    skip = tuple(n.strip() for n in args.skip.split(",") if n.strip())
    unknown = [n for n in skip if n not in ("tensorflow", "paddle")]
    if unknown:
        p.error(f"--skip takes tensorflow, paddle; got {', '.join(unknown)}")
    d = collect(skip)
    if args.json:
        print(json.dumps(d, indent=2))
    else:
        sys.stdout.write(render(d))
    return 0
