"""Probing: convert a fresh sample of each source to each target and classify the outcome.

A cell is zero-copy only when proved independently of interop (:mod:`interop.cli.memory`):
the result's bytes overlap the source's by each framework's own accessor, and a write
through one side is read back through the other's own API (on a GPU, device cells are
proved by the accessors' pointers and extents). The plan (:func:`interop.explain`) gives the
reason for every copy; the raised :class:`~interop.errors.InteropError` gives the reason for
every unsupported cell.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any

from ...devices import cuda_devices
from .. import memory
from .cells import COPY, NOT_PROBED, NOT_SUPPORTED, UNSUPPORTED, ZERO_COPY, cell, clean
from .columns import CPU, GPU, ON_GPU, PACKAGES, RETIRED, package_installed
from .samples import LAYOUTS, SAMPLE, Maker, make_sample
from .sparse import SPARSE_SAMPLE, sparse_cells

DEVICE_PROOF = "pointers and extents (device memory)"
NOT_SEEN = "the result's bytes overlap the source's, but a write through one was not seen " \
           "through the other"


def _shared(origin: Any, result: Any) -> tuple[bool, str | None]:
    """``(overlap, proof)`` for a host result: whether its bytes overlap the source's by the
    frameworks' own accessors, and how a write then proved the sharing (None: not seen)."""
    if result is origin:
        return True, "the same object"
    if not memory.overlap(origin, result):
        return False, None
    if not (memory.on_host(origin) and memory.on_host(result)):  # a JAX default GPU device
        return True, DEVICE_PROOF
    side = memory.write_proof(origin, memory.host_result(result))
    return True, side and {
        "result": "pointers; a write through the result read back through the source",
        "source": "pointers; a write through the source read back through the result",
        "raw": "pointers; neither side is writable: a raw write at the source's address "
               "read back through the result"}[side]


def probe(source: str, target: str, make: Maker) -> dict[str, Any]:
    """Convert a fresh sample of ``source`` to ``target`` and classify what happened."""
    import interop
    from interop.errors import InteropError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            plan = interop.explain(make()[0], target)
        except InteropError as e:
            return cell(source, target, UNSUPPORTED, clean(e))
        steps = tuple(str(s) for s in plan.steps)
        value, origin = make()
        try:
            result = interop.to_framework(value, target)
        except InteropError as e:
            return cell(source, target, UNSUPPORTED, clean(e), plan.hazards, steps,
                        plan_agrees=not plan.supported)
        except Exception as e:  # a framework error interop did not turn into its own
            return cell(source, target, UNSUPPORTED,
                        clean(f"the framework raised {type(e).__name__}: {e}"),
                        plan.hazards, steps, plan_agrees=False)
        overlapping, proof = _shared(origin, result)
    if overlapping and proof:
        return cell(source, target, ZERO_COPY, None, plan.hazards, steps,
                    plan_agrees=plan.zero_copy, proof=proof)
    reason = "; ".join(clean(r) for r in plan.reasons) or (
        NOT_SEEN if overlapping else
        "the plan claimed zero-copy, but the result has its own buffer")
    return cell(source, target, COPY, reason, plan.hazards, steps,
                plan_agrees=not plan.zero_copy)


def _import_order(skip: tuple[str, ...]) -> None:
    """Import paddle before tensorflow when both will be probed (the other order segfaults)."""
    if ("paddle" in skip or "tensorflow" in skip or "paddle" in sys.modules
            or "tensorflow" in sys.modules or not (package_installed("paddle")
                                                   and package_installed("tensorflow"))):
        return
    try:
        import paddle  # noqa: F401
    except Exception:  # a broken paddle: its cells report it
        pass


def build(gpu: tuple[int, str] | None = None, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """Probe every pair and every layout; a JSON-ready dict.

    ``gpu``: ``(CUDA devices, why)`` (asked of :mod:`interop.devices` when ``None``).
    ``skip``: frameworks (of :data:`~.columns.OPTIONAL`) left unprobed, and never imported.
    """
    import interop

    n_gpu, gpu_reason = gpu if gpu is not None else cuda_devices()
    skip = tuple(skip)
    _import_order(skip)
    versions = {f["name"]: f["version"] for f in interop.frameworks()}
    names = CPU + list(RETIRED) + GPU
    pairs = []
    for s in names:
        for t in names:
            pairs.append(pair(s, t, n_gpu, skip))
    layouts = []
    for label, source, make in LAYOUTS:
        for t in CPU:
            skipped = [n for n in (source, t) if n in skip or PACKAGES[n] in skip]
            if skipped:
                c = cell(source, t, NOT_PROBED, f"not probed here (skipped: {skipped[0]})")
            elif not (package_installed(source) and package_installed(t)):
                missing = source if not package_installed(source) else t
                c = cell(source, t, NOT_PROBED, f"{missing} is not installed")
            else:
                c = probe(source, t, make)
            c["label"] = label
            layouts.append(c)
    return {"generated_by": "python -m interop table", "sample": SAMPLE,
            "versions": versions, "cuda": f"{n_gpu} device(s)" if n_gpu else "no CUDA device",
            "cuda_detail": gpu_reason, "skipped": list(skip),
            "sources": names, "targets": names, "pairs": pairs, "layouts": layouts,
            "sparse_sample": SPARSE_SAMPLE, "sparse": sparse_cells(skip)}


_GPU_TARGET = {name: (ON_GPU.get(name, name), "cuda" if name in ON_GPU else None)
               for name in GPU}
"""The ``to_framework`` target and device of each GPU table name."""


def pair(s: str, t: str, n_gpu: int, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The cell of ``s`` -> ``t`` on a machine with ``n_gpu`` CUDA devices: probed, or why
    not."""
    for name in (s, t):
        if name in RETIRED:
            return cell(s, t, NOT_SUPPORTED, RETIRED[name])
    if (s in GPU or t in GPU) and not n_gpu:
        return cell(s, t, NOT_PROBED, "not probed here (no CUDA device)")
    for name in (s, t):
        if PACKAGES[name] in skip:
            return cell(s, t, NOT_PROBED, f"not probed here (skipped: {PACKAGES[name]})")
        if not package_installed(name):
            return cell(s, t, NOT_PROBED, f"not probed here ({PACKAGES[name]} is not installed)")
    if t in GPU:  # with a GPU: ask interop for the GPU framework / device, live
        name, device = _GPU_TARGET[t]

        def to_gpu(x: Any) -> Any:
            import interop

            return interop.to_framework(x, name, device=device)

        return _probe_gpu(s, t, to_gpu)
    return probe(s, t, lambda: make_sample(s))


def _probe_gpu(s: str, t: str, convert: Callable[[Any], Any]) -> dict[str, Any]:
    try:
        value, origin = make_sample(s)
        result = convert(value)
    except Exception as e:
        return cell(s, t, UNSUPPORTED, clean(f"{type(e).__name__}: {e}"))
    if result is origin or memory.overlap(origin, result):  # device memory: by accessors
        return cell(s, t, ZERO_COPY, proof=DEVICE_PROOF)
    return cell(s, t, COPY, "the result has its own buffer (moving between devices copies)")
