"""The known pitfalls of the installed framework versions, each probed, each with interop's
guard; ``python -m interop doctor`` reports them.

A :class:`Pitfall` is probed in this process by a harmless call. A :class:`ChildPitfall` is
probed in a child process (:mod:`interop.cli.probes`): it aborts the interpreter when
present, or it needs TensorFlow or paddle, which are never imported here (importing paddle
after tensorflow segfaults). Each check gives one entry ``{id, framework, summary, state,
evidence, interop}``; nothing here raises: a failing probe is reported.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..adapters.base import installed
from . import probes
from .buffers import aligned, misaligned
from .probes import ABSENT, PRESENT

UNKNOWN, NOT_INSTALLED, SKIPPED = "could not check", "not installed", "skipped"
"""The other states of an entry: the probe failed; a framework it needs is not installed;
``--skip`` left it out."""


@dataclass(frozen=True)
class Pitfall:
    """A pitfall probed in this process."""

    id: str
    framework: str
    summary: str
    probe: Callable[[], tuple[str, str]]
    """Whether the pitfall is present: ``(state, evidence)``."""
    guard: Callable[[], str]
    """What interop does about it."""

    @property
    def frameworks(self) -> tuple[str, ...]:
        return (self.framework,)


@dataclass(frozen=True)
class ChildPitfall:
    """A pitfall probed in a child process, by a module of :mod:`interop.cli.probes`."""

    id: str
    frameworks: tuple[str, ...]
    """The frameworks the probe needs; the pitfall is listed under the last one."""
    summary: str
    probe: str
    """The probe module's name."""
    fatal_call: str = ""
    """What the probe does that kills its process where the pitfall is present (the exit
    code is then the evidence); empty for a probe that reports the pitfall itself."""
    reported_by: str = ""
    """The probe whose report has interop's guard, when not :attr:`probe` (a probe that dies
    reports nothing)."""
    guard: Callable[[], str] | None = None
    """Checks interop's guard in this process instead of a report."""

    @property
    def framework(self) -> str:
        return self.frameworks[-1]


# ---- probes and guards run in this process ----------------------------------------------
def _died(rc: int | None, what: str) -> tuple[str, str]:
    """``(state, evidence)`` from the exit code of a child probe that dies doing ``what``
    where the pitfall is present (``None``: it timed out)."""
    if rc is None:
        return UNKNOWN, "the child process probe timed out"
    if rc < 0 or rc == 134:
        return PRESENT, f"a child process {what} died (exit {rc})"
    if rc == 0:
        return ABSENT, "the child process probe returned normally"
    return ABSENT, f"the child process probe raised a Python error (exit {rc})"


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

    a = misaligned()
    j = jax.dlpack.from_dlpack(a)
    if j.unsafe_buffer_pointer() != a.ctypes.data:
        return PRESENT, ("jax.dlpack.from_dlpack of a CPU buffer 4 bytes off 64-byte alignment "
                         "returned an array with a different data pointer, without a warning")
    return ABSENT, "the misaligned buffer was imported in place"


def _jax_misaligned_guard() -> str:
    import interop

    plan = interop.explain(misaligned(), "jax")
    if not plan.zero_copy and any("aligned" in r for r in plan.reasons):
        return "guarded: the plan says it copies and why; copy=False raises ZeroCopyError"
    return "NOT guarded: the plan claims zero-copy"


def _jax_strides() -> tuple[str, str]:
    import jax

    try:
        jax.dlpack.from_dlpack(aligned(64)[::2])
    except Exception as e:
        return PRESENT, f"jax.dlpack.from_dlpack of a strided view raised {type(e).__name__}"
    return ABSENT, "a strided view was accepted"


def _jax_strides_guard() -> str:
    import interop

    plan = interop.explain(aligned(64)[::2], "jax")
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


PITFALLS: list[Pitfall | ChildPitfall] = [
    ChildPitfall(
        id="torch-negative-strides", frameworks=("torch",),
        summary="torch.from_dlpack aborts the whole interpreter on a buffer with negative "
                "strides",
        probe="torch_negative_strides",
        fatal_call="calling torch.from_dlpack on numpy.arange(4.0)[::-1]",
        guard=_torch_negative_guard),
    Pitfall(
        id="torch-readonly", framework="torch",
        summary="torch.from_dlpack of a read-only NumPy array returns a writable tensor",
        probe=_torch_readonly, guard=_torch_readonly_guard),
    Pitfall(
        id="jax-misaligned-copy", framework="jax",
        summary="JAX on the CPU silently copies a DLPack buffer that is not 64-byte aligned",
        probe=_jax_misaligned, guard=_jax_misaligned_guard),
    Pitfall(
        id="jax-non-compact", framework="jax",
        summary="JAX refuses DLPack buffers with non-compact strides (steps, broadcasting, "
                "Fortran order)",
        probe=_jax_strides, guard=_jax_strides_guard),
    Pitfall(
        id="jax-x64", framework="jax",
        summary="JAX narrows 64-bit dtypes to 32 bits while jax_enable_x64 is off (its default)",
        probe=_jax_x64, guard=_jax_x64_guard),
    ChildPitfall(
        id="tensorflow-misaligned-abort", frameworks=("tensorflow",),
        summary="TensorFlow imports a DLPack buffer that is not 64-byte aligned in place, and "
                "its kernels then abort the interpreter (Check failed: IsAligned())",
        probe="tensorflow_misaligned",
        fatal_call="importing a buffer 4 bytes off 64-byte alignment and summing it",
        reported_by="tensorflow_batch"),
    ChildPitfall(
        id="tensorflow-string-dlpack", frameworks=("tensorflow",),
        summary="Tensor.__dlpack__ of a tf.string tensor aborts the interpreter",
        probe="tensorflow_string", fatal_call="calling tf.constant(['a']).__dlpack__()",
        reported_by="tensorflow_batch"),
    ChildPitfall(
        id="tensorflow-numpy-copies", frameworks=("tensorflow",),
        summary="Tensor.numpy() always copies", probe="tensorflow_batch"),
    ChildPitfall(
        id="tensorflow-bfloat16-writable", frameworks=("tensorflow",),
        summary="numpy.asarray of a bfloat16 tensor is writable (other dtypes give read-only "
                "views)",
        probe="tensorflow_batch"),
    ChildPitfall(
        id="tensorflow-non-compact", frameworks=("tensorflow",),
        summary="TensorFlow refuses DLPack buffers with non-compact strides (steps, Fortran "
                "order, negative strides)",
        probe="tensorflow_batch"),
    ChildPitfall(
        id="paddle-after-tensorflow", frameworks=("tensorflow", "paddle"),
        summary="importing paddle after tensorflow segfaults (both bundle protobuf)",
        probe="paddle_after_tensorflow",
        fatal_call="running `import tensorflow; import paddle`",
        reported_by="tensorflow_batch"),
    ChildPitfall(
        id="paddle-negative-strides", frameworks=("paddle",),
        summary="paddle.utils.dlpack.from_dlpack cannot import negative strides (it raises "
                "MemoryError for a ~16 EiB allocation, or reads outside the buffer and returns "
                "wrong values)",
        probe="paddle_batch"),
    ChildPitfall(
        id="paddle-readonly", frameworks=("paddle",),
        summary="paddle.utils.dlpack.from_dlpack ignores the read-only flag: the tensor is "
                "writable",
        probe="paddle_batch"),
    ChildPitfall(
        id="paddle-uint16-bfloat16", frameworks=("paddle",),
        summary="paddle.utils.dlpack.from_dlpack reads uint16 buffers as bfloat16",
        probe="paddle_batch"),
    ChildPitfall(
        id="paddle-dlpack-device", frameworks=("paddle",),
        summary="paddle's __dlpack_device__ gives the device id None on the CPU (the spec "
                "wants an int)",
        probe="paddle_batch"),
]


# ---- checking them ----------------------------------------------------------------------
def check_pitfalls(skip: tuple[str, ...] = (),
                   pitfalls: Sequence[Pitfall | ChildPitfall] = PITFALLS) -> list[dict[str, Any]]:
    """An entry for each of ``pitfalls``; those needing a framework of ``skip`` are not
    probed. The child probes run first, side by side."""
    left_out = {p.id: _left_out(p, skip) for p in pitfalls}
    children = {name for p in pitfalls if isinstance(p, ChildPitfall) and not left_out[p.id]
                for name in (p.probe, p.reported_by or p.probe)}
    ran = probes.run(children) if children else {}
    out = []
    for p in pitfalls:
        entry: dict[str, Any] = {"id": p.id, "framework": p.framework, "summary": p.summary}
        if left_out[p.id]:
            entry.update(left_out[p.id])
        elif isinstance(p, ChildPitfall):
            entry.update(_in_child(p, ran))
        else:
            entry.update(_in_process(p))
        out.append(entry)
    return out


def _left_out(p: Pitfall | ChildPitfall, skip: tuple[str, ...]) -> dict[str, str] | None:
    """The entry's state when a framework ``p`` needs is skipped or not installed."""
    skipped = [f for f in p.frameworks if f in skip]
    if skipped:
        return {"state": SKIPPED, "evidence": f"{skipped[0]} skipped (--skip)", "interop": ""}
    missing = [f for f in p.frameworks if not installed(f)]
    if missing:
        return {"state": NOT_INSTALLED, "evidence": f"{missing[0]} is not installed",
                "interop": ""}
    return None


def _guarded(guard: Callable[[], str]) -> str:
    try:
        return guard()
    except Exception as e:
        return f"could not check: {type(e).__name__}: {e}"


def _in_process(p: Pitfall) -> dict[str, str]:
    try:
        state, evidence = p.probe()
    except Exception as e:
        state, evidence = UNKNOWN, f"probe failed: {type(e).__name__}: {e}"
    return {"state": state, "evidence": evidence, "interop": _guarded(p.guard)}


def _in_child(p: ChildPitfall, ran: dict[str, tuple[int | None, str]]) -> dict[str, str]:
    rc, _ = ran[p.probe]
    reporter = p.reported_by or p.probe
    found = probes.read_report(ran[reporter][1]).get(p.id)
    if p.fatal_call:
        state, evidence = _died(rc, p.fatal_call)
    elif found is None:
        state, evidence = UNKNOWN, f"the child process probe failed (exit {rc})"
    else:
        state, evidence = found[0], found[1]
    if p.guard is not None:
        interop = _guarded(p.guard)
    elif found is not None:
        interop = found[2]
    else:
        interop = f"could not check: the {reporter} child probe failed (exit {ran[reporter][0]})"
    return {"state": state, "evidence": evidence, "interop": interop}
