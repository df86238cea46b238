"""What a consumer needs of a buffer, and the one judge of a buffer view against it."""

from __future__ import annotations

from collections.abc import Callable

from ..record import record
from ..view import BufferView
from .verdicts import NEEDS_COPY, UNSUPPORTED


@record(frozen=True)
class ConsumerRules:
    """What a DLPack (or CUDA Array Interface) consumer needs to import a buffer without
    copying or crashing."""

    negative_strides: bool = True
    c_contiguous: bool = False
    alignment: int = 1
    versioned: bool = True
    accepts: Callable[[str], str | None] | None = None
    """Given a dtype string, why the consumer cannot hold it (``None``: it can)."""
    narrows: Callable[[str], tuple[str, str] | None] | None = None
    """Given a dtype string, ``(the narrower dtype string the consumer would hold it as,
    why)`` (JAX with 64-bit types off), or ``None`` when it keeps the dtype. A narrowing is
    a ``NEEDS_COPY`` obstacle: the copy route casts, with a ``NarrowingWarning``."""
    name: str = ""
    own_stream: str = ""
    """Why the consumer orders an import after a stream of its own and takes none from the
    user (JAX: its ``from_dlpack`` passes its own stream to ``__dlpack__``); ``""``: it
    imports on the consumer's stream the user gives (``stream=``)."""
    negative_strides_why: str = ("cannot import them (handing them over could crash the "
                                 "interpreter)")
    """What the consumer does with negative strides (completes the copy reason)."""
    misaligned_why: str = "would copy it silently"
    """What the consumer does with a buffer below ``alignment`` (completes the copy reason)."""
    misaligned: str = NEEDS_COPY
    """The verdict on a buffer below ``alignment``: ``NEEDS_COPY``, or ``STEP_COPIES`` for a
    consumer that copies such a buffer itself (XLA on the CPU)."""
    ndim: int | None = None
    """The one number of dimensions the consumer holds (cuDF columns: 1); ``None``: any."""
    itemsize_aligned: frozenset[str] = frozenset()
    """Dtype strings whose data pointer and strides the consumer needs at multiples of the
    itemsize (torch's complex kernels load ``complex<double>`` as one 16-byte aligned unit)."""


def dtype_obstacle(rules: ConsumerRules, ts: str) -> tuple[str, str] | None:
    """Why a consumer with ``rules`` cannot take dtype string ``ts`` as it is: ``UNSUPPORTED``
    (it has no such dtype) or ``NEEDS_COPY`` (it would narrow it), else ``None``."""
    if rules.accepts is not None:
        why = rules.accepts(ts)
        if why:
            return UNSUPPORTED, why
    if rules.narrows is not None:
        narrow = rules.narrows(ts)
        if narrow is not None:
            return NEEDS_COPY, narrow[1]
    return None


def view_obstacle(view: BufferView, rules: ConsumerRules) -> tuple[str, str] | None:
    """The first reason ``view`` cannot be handed to a consumer with ``rules`` as it is."""
    verdict = dtype_obstacle(rules, view.dtype)
    if verdict is not None:
        return verdict
    if rules.ndim is not None and view.ndim != rules.ndim:
        return UNSUPPORTED, (f"{rules.name} holds {rules.ndim}-dimensional arrays only; the "
                             f"buffer has shape {view.shape} (reshape it first)")
    if not rules.negative_strides and view.has_negative_strides():
        return NEEDS_COPY, (f"negative strides {view.strides}: {rules.name} "
                            f"{rules.negative_strides_why}")
    if rules.c_contiguous:
        reasons = view.layout_obstacles()
        if reasons:
            return NEEDS_COPY, f"{reasons[0]}: {rules.name} needs compact row-major buffers"
    if view.dtype in rules.itemsize_aligned and view.size and not itemsize_aligned(
            view.ptr, view.shape, view.strides, view.itemsize):
        return NEEDS_COPY, misaligned_complex(view.ptr, view.strides, view.itemsize, rules.name)
    if not rules.versioned and view.readonly:
        return NEEDS_COPY, (f"the source is read-only and {rules.name} takes legacy DLPack "
                            "capsules only, which cannot carry the read-only flag")
    if rules.alignment > 1 and view.size and view.ptr % rules.alignment:
        return rules.misaligned, (f"data pointer {view.ptr:#x} is not {rules.alignment}-byte "
                                  f"aligned: {rules.name} {rules.misaligned_why}")
    return None


def itemsize_aligned(ptr: int, shape: tuple[int, ...], strides: tuple[int, ...],
                     itemsize: int) -> bool:
    """Whether every element of a (non-empty) strided buffer starts at a multiple of
    ``itemsize`` (NumPy's ``aligned`` flag asks for the component's alignment only)."""
    return not ptr % itemsize and all(
        not s % itemsize for n, s in zip(shape, strides) if n > 1)


def misaligned_complex(ptr: int, strides: tuple[int, ...], itemsize: int, who: str) -> str:
    """The copy reason for a complex buffer whose elements are not ``itemsize``-aligned."""
    return (f"data pointer {ptr:#x} or strides {strides} are not multiples of the "
            f"{itemsize}-byte complex itemsize: {who}'s complex kernels crash the interpreter "
            "on such buffers")
