"""What a framework module declares: how to recognise its values and which edges it adds."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable
from dataclasses import field
from typing import Any

from ..memo import ARROW_TYPE_ID, memo, memo_by  # noqa: F401 - for the adapters
from ..protocols import dlpack
from ..record import record
from ..view import BufferView

Check = Callable[[Any], "tuple[str, str] | None"]
"""A per-value check before an edge runs: ``None`` (zero-copy) or ``(verdict, reason)``.

Verdicts: ``COPY_ROUTE`` (a fresh compact buffer avoids the obstacle), ``COPIES`` (the edge
itself copies, e.g. bit-packing booleans) and ``UNSUPPORTED`` (no conversion exists).
"""


class NeedsCopy(Exception):
    """Raised by a converter that found, while converting, that it cannot stay zero-copy."""

    def __init__(self, verdict: str, reason: str) -> None:
        super().__init__(reason)
        self.verdict = verdict
        self.reason = reason


COPY_ROUTE = "copy"
COPIES = "copies"
UNSUPPORTED = "unsupported"
NULLS = "nulls"


@record(frozen=True)
class Edge:
    """One conversion step from framework ``source`` to framework ``target``."""

    source: str
    target: str
    via: str
    convert: Callable[[Any], Any]
    check: Check | None = None
    hazard: Callable[[Any], str | tuple[str, ...] | None] | None = None
    cost: float = 1.0
    eafp: bool = False
    """The converter tries the zero-copy call first and raises ``NeedsCopy`` itself on an
    obstacle (doing a ``COPIES`` conversion itself), so with ``copy=None`` ``check`` is skipped;
    with ``copy=False`` it still runs first, so a ``COPIES`` step raises ``ZeroCopyError``."""
    device: str = "cpu"
    """Where the step runs: ``"cpu"`` or ``"cuda"`` (both sides stay on that device)."""
    fast: Callable[..., Callable[[Any], Any]] | None = None
    """For ``copy=None``: makes (once per plan, the frameworks imported by then) the step
    without the registry's per-value check. It returns what the checked step would return
    (zero-copy, or a ``COPIES`` conversion it does itself) or raises (``NeedsCopy``, or the
    framework's own refusal), and the checked plan then converts the value again from the
    start, or says why it cannot. An ``eafp`` edge or one without a check needs none: its
    ``convert`` is that step. A factory with a ``before`` parameter is given the plan's
    previous step, to run first in the same call (one Python call less per conversion)."""


@record(frozen=True)
class ConsumerRules:
    """What a DLPack consumer needs to import a buffer without copying or crashing."""

    negative_strides: bool = True
    c_contiguous: bool = False
    alignment: int = 1
    versioned: bool = True
    accepts: Callable[[str], str | None] | None = None
    """Given a dtype string, why the consumer cannot hold it (``None``: it can)."""
    narrows: Callable[[str], tuple[str, str] | None] | None = None
    """Given a dtype string, ``(the narrower dtype string the consumer would hold it as,
    why)`` (JAX with 64-bit types off), or ``None`` when it keeps the dtype. A narrowing is
    a ``COPY_ROUTE`` obstacle: the copy route casts, with a ``NarrowingWarning``."""
    name: str = ""
    negative_strides_why: str = ("cannot import them (handing them over could crash the "
                                 "interpreter)")
    """What the consumer does with negative strides (completes the copy reason)."""
    misaligned_why: str = "would copy it silently"
    """What the consumer does with a buffer below ``alignment`` (completes the copy reason)."""
    itemsize_aligned: frozenset[str] = frozenset()
    """Dtype strings whose data pointer and strides the consumer needs at multiples of the
    itemsize (torch's complex kernels load ``complex<double>`` as one 16-byte aligned unit)."""


def dtype_obstacle(rules: ConsumerRules, ts: str) -> tuple[str, str] | None:
    """Why a consumer with ``rules`` cannot take dtype string ``ts`` as it is: ``UNSUPPORTED``
    (it has no such dtype) or ``COPY_ROUTE`` (it would narrow it), else ``None``."""
    if rules.accepts is not None:
        why = rules.accepts(ts)
        if why:
            return UNSUPPORTED, why
    if rules.narrows is not None:
        narrow = rules.narrows(ts)
        if narrow is not None:
            return COPY_ROUTE, narrow[1]
    return None


def view_obstacle(view: BufferView, rules: ConsumerRules) -> tuple[str, str] | None:
    """The first reason ``view`` cannot be handed to a consumer with ``rules`` as it is."""
    verdict = dtype_obstacle(rules, view.dtype)
    if verdict is not None:
        return verdict
    if not rules.negative_strides and view.has_negative_strides():
        return COPY_ROUTE, (f"negative strides {view.strides}: {rules.name} "
                            f"{rules.negative_strides_why}")
    if rules.c_contiguous:
        reasons = view.layout_obstacles()
        if reasons:
            return COPY_ROUTE, f"{reasons[0]}: {rules.name} needs compact row-major buffers"
    if rules.alignment > 1 and view.size and view.ptr % rules.alignment:
        return COPY_ROUTE, (f"data pointer {view.ptr:#x} is not {rules.alignment}-byte aligned: "
                            f"{rules.name} {rules.misaligned_why}")
    if view.dtype in rules.itemsize_aligned and view.size and not itemsize_aligned(
            view.ptr, view.shape, view.strides, view.itemsize):
        return COPY_ROUTE, misaligned_complex(view.ptr, view.strides, view.itemsize, rules.name)
    if not rules.versioned and view.readonly:
        return COPY_ROUTE, (f"the source is read-only and {rules.name} takes legacy DLPack "
                            "capsules only, which cannot carry the read-only flag")
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


@record
class Adapter:
    """A framework as the registry sees it.

    ``modules`` are the top-level module names of its value types; detection reads
    ``type(x).__module__`` and ``sys.modules`` and never imports the framework.
    """

    name: str
    aliases: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    package: str = ""
    kind: str = "array"
    devices: tuple[str, ...] = ("cpu",)
    rules: ConsumerRules | None = None
    install: str = ""
    """How a user installs it (``pip install ...``); empty: its own ``interop[<name>]`` extra."""
    gpu_rules: ConsumerRules | None = None
    """What it needs to import a device buffer (DLPack or CUDA Array Interface) without
    copying or crashing; ``None``: it takes any layout there."""
    holds_read_only: bool = False
    """Its arrays can be read-only or immutable, so a read-only source stays read-only."""
    is_value: Callable[[Any], bool] = field(default=lambda x: False)
    view: Callable[[Any], BufferView] | None = None
    chunks: Callable[[Any], list[Any] | None] | None = None
    """The parts of a value held in several buffers (each a value with a view); ``None``
    from it when the value is one buffer."""
    device: Callable[[Any], tuple[str, int]] = field(default=lambda x: ("cpu", 0))
    to_numpy: Callable[[Any], Any] | None = None
    """Any value to a host NumPy array, copying if it must (the copy route's first half)."""
    export_dlpack: Callable[[Any], Any] | None = None
    """A value to an object with ``__dlpack__``, or ``None`` when it exports no DLPack."""
    dlpack_check: Callable[[Any, ConsumerRules], tuple[str, str] | None] | None = None
    from_dlpack: Callable[[Any], Any] | None = None
    dlpack_call: str = ""
    """The consumer call named in plans, e.g. ``"torch.from_dlpack"``."""
    dlpack_hazard: Callable[[Any], str | None] | None = None
    exports_versioned_only: bool = False
    hub: bool = False
    """Paths through this framework win ties (NumPy on the host, CuPy on a GPU)."""
    per_value_kind: bool = False
    """Values of one type may belong to this adapter or not (raw capsules): no type cache."""
    consumable: bool = False
    """Converting a value uses it up (a capsule); ``preview`` gives a NumPy view to inspect."""
    refuse: Callable[[Any], str | None] | None = None
    """Why a value of this type goes to no other framework, whatever the route (a NumPy
    masked array would lose its mask); ``None``: it may. Judged before any plan."""
    preview: Callable[[Any], Any] | None = None
    export_cai: Callable[[Any], Any] | None = None
    """A device value to an object with ``__cuda_array_interface__`` (GPU only)."""
    from_cai: Callable[[Any], Any] | None = None
    """Wrap a CUDA Array Interface producer without copying (GPU only)."""
    to_device: Callable[[Any, int], Any] | None = None
    """A host NumPy array copied onto CUDA device ``index`` as this framework's value."""
    gpu_present: Callable[[], bool] = field(default=lambda: False)
    """Whether this framework can see a GPU now (if not, its values are all on the host)."""
    convert_table: Callable[..., Any] | None = None
    """For table kinds (``kind="table"``): ``(x, target, copy=, device=, **options)`` -> result.
    Tables convert column by column, so they bypass the edge graph."""
    explain_table: Callable[..., Any] | None = None
    """For table kinds: ``(x, target, copy=, **options)`` -> :class:`~interop.plan.Plan`."""
    edges: Callable[[], list[Edge]] = field(default=list)

    def missing(self) -> str | None:
        """Why its package cannot be imported here, with the fix; ``None`` when it can."""
        if installed(self.package):
            return None
        fix = self.install or f'pip install "interop[{self.name}]"'
        return f"{self.name} is not installed: {fix} (no module {self.package!r} here)"

    def owns(self, x: Any) -> bool:
        if not self.modules:
            return self.is_value(x)
        mod = type(x).__module__.partition(".")[0]
        return mod in self.modules and self.is_value(x)


def installed(package: str) -> bool:
    """Whether ``package`` can be imported here (imported already, or found), importing
    nothing; ``False`` for a package set to ``None`` in ``sys.modules`` (imports refused)."""
    if sys.modules.get(package) is not None:
        return True
    if package in sys.modules:
        return False
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def module(name: str) -> Any:
    """The framework module ``name``, imported on first use (later calls: a dict lookup)."""
    m = sys.modules.get(name)
    return m if m is not None else importlib.import_module(name)


def left_to_check() -> NeedsCopy:
    """What a fast step (:attr:`Edge.fast`) raises for a value it does not decide."""
    return NeedsCopy(COPY_ROUTE, "not a value for the fast step: the checked plan decides")


def read_only_1d(step: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Mark fast step ``step`` as returning only read-only 1-D ``numpy.ndarray`` values
    (never a subclass): a NumPy-side fast step fused after it (taking it as ``before``) need
    not test those again."""
    step.read_only_1d = True  # type: ignore[attr-defined]
    return step


def series_fast(chars: Iterable[str], make: Callable[[], Callable[[Any], Any]],
                dense: bool) -> Callable[[], Callable[[Any], Any]]:
    """The :attr:`Edge.fast` (taking ``before``) of a NumPy -> column edge checked by
    :func:`series_check`: a
    1-D ``numpy.ndarray`` of a native dtype in ``chars`` (and, if ``dense``, C-contiguous and
    aligned) goes straight to ``make()``, the framework's call; the rest to the check."""
    def factory(before: Callable[[Any], Any] | None = None) -> Callable[[Any], Any]:
        np = module("numpy")
        ndarray, call = np.ndarray, make()
        ok = frozenset(np.dtype(c) for c in chars)

        def fast(a: Any) -> Any:
            if before is not None:
                a = before(a)
            if type(a) is ndarray and a.ndim == 1 and a.dtype in ok:
                if not dense:
                    return call(a)
                flags = a.flags  # 1-D: C-contiguous means compact, but for one element
                if flags.c_contiguous and flags.aligned and (
                        len(a) > 1 or a.strides[0] == a.itemsize):
                    return call(a)
            raise left_to_check()

        def fast_1d(x: Any) -> Any:  # ``fast`` after a step that hands out 1-D ndarrays only
            a = before(x)
            if a.dtype in ok:
                if not dense:
                    return call(a)
                flags = a.flags
                if flags.c_contiguous and flags.aligned and (
                        len(a) > 1 or a.strides[0] == a.itemsize):
                    return call(a)
            raise left_to_check()

        if getattr(before, "read_only_1d", False):
            return fast_1d
        return fast

    return factory


def series_check(what: str, dtype_verdict: Callable[[Any], tuple[str, str] | None],
                 dense: tuple[str, str] | None = None) -> Check:
    """The check for a 1-D NumPy array becoming a ``what`` (an Arrow-like column).

    ``dtype_verdict``: the dtype's verdict (``None``, ``COPIES`` for bit-packed booleans,
    ``UNSUPPORTED``). ``dense``: if set, ``(whose buffers, what its call would do with a
    misaligned array)`` for a target that needs dense, aligned buffers (other arrays then
    take the copy route).
    """
    def check(a: Any) -> tuple[str, str] | None:
        if a.ndim != 1:
            return UNSUPPORTED, (f"a {what} is one-dimensional; the array has shape {a.shape} "
                                 "(reshape it, or convert a table column by column)")
        v = dtype_verdict(a.dtype)
        if v is not None or not dense:
            return v
        flags = a.flags
        if not flags.c_contiguous or (a.size and a.strides[0] != a.itemsize):
            return COPY_ROUTE, (f"strides {a.strides} are not contiguous: {dense[0]} buffers "
                                "are dense")
        if not flags.aligned:
            return COPY_ROUTE, f"the array is not aligned to its itemsize: {dense[1]}"
        return None

    return check


def handover_check(source: Adapter, rules: ConsumerRules | None) -> Check | None:
    """The check before a buffer of ``source`` reaches a consumer with ``rules`` (``None``: it
    takes any layout): the source's own DLPack check where it has one (it knows its flags,
    such as torch's lazy conjugate bit), else its buffer view judged against the rules."""
    if rules is None:
        return None
    dlpack_check, view = source.dlpack_check, source.view
    if dlpack_check is not None:
        return lambda x: dlpack_check(x, rules)
    if view is None:
        raise TypeError(f"{source.name} has no buffer view to check hand-overs with")
    return lambda x: view_obstacle(view(x), rules)


def readonly_source(x: Any) -> bool:
    """Whether ``x`` is memory its owner treats as read-only or immutable: a read-only NumPy
    array, a JAX or TensorFlow array, or a DLPack 1.x capsule flagged read-only."""
    np = sys.modules.get("numpy")
    if (np is not None and isinstance(x, np.ndarray) and not x.flags.writeable) or (
            type(x).__module__.startswith(("jax", "jaxlib", "tensorflow"))):
        return True
    if dlpack.is_capsule(x):
        try:
            return dlpack.inspect_capsule(x).view.readonly
        except Exception:  # a consumed or foreign capsule: the conversion reports it
            return False
    return False
