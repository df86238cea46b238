"""What a framework module declares: an :class:`ArrayAdapter` (its values, what it exports
and imports, its own edges) or, for values of several arrays (tables, batches), a
:class:`CompositeAdapter` (and, for nested structures, the one :class:`StructureAdapter`).

The names a framework module needs (verdicts, rules, edges) are importable from here.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..memo import ARROW_TYPE_ID, memo, memo_by  # noqa: F401 - for the adapters
from ..protocols import dlpack
from ..record import record
from ..view import BufferView
from .edge import ALIGNED, C_CONTIGUOUS, DLPACK, WRITEABLE, Accepts, Edge, fixed  # noqa: F401
from .rules import (  # noqa: F401 - for the adapters
    ConsumerRules,
    dtype_obstacle,
    itemsize_aligned,
    misaligned_complex,
    view_obstacle,
)
from .verdicts import NEEDS_COPY, NULLS, STEP_COPIES, UNSUPPORTED, Check, NeedsCopy  # noqa: F401

if TYPE_CHECKING:
    from ..plan import Plan


def _never(x: Any) -> bool:
    return False


def _host(x: Any) -> tuple[str, int]:
    return "cpu", 0


def _no_gpu() -> bool:
    return False


def _no_edges() -> list[Edge]:
    return []


@runtime_checkable
class RegistryLike(Protocol):
    """What an adapter, a composite kind, a table module or the route decision may use of
    the registry it is handed (the ``Registry`` of ``interop.registry`` is one; nothing below
    it imports it)."""

    adapters: dict[str, Any]
    """The adapters by name."""
    routes: Any
    """The edges between the frameworks (an ``interop.routing.Routes``, which imports this
    module)."""
    runner: Any
    """What compiles and runs routes, the copy route among them (an
    ``interop.runner.Runner``), for the explanations that describe them."""
    cache: Any
    """The plans kept (an ``interop.cache.PlanCache``), for the structures' plans."""

    def convert(self, x: Any, target: str, *, device: Any = None, copy: bool | None = None,
                stream: Any = None, **options: Any) -> Any:
        """``to_framework`` on this registry."""

    def explain(self, x: Any, target: str, device: Any = None, copy: bool | None = None,
                options: dict[str, Any] | None = None, stream: Any = None) -> Plan:
        """``explain`` on this registry."""

    def owner(self, x: Any) -> str:
        """The name of the adapter owning ``x``."""

    def find_owner(self, x: Any) -> str | None:
        """The name of the adapter owning ``x``, or ``None`` when none does."""

    def target(self, name: str) -> str:
        """The framework name for a target name or alias (case-insensitive)."""

    def composite(self, x: Any) -> CompositeAdapter | None:
        """The composite kind of ``x``, if any."""

    def inner(self, name: str, x: Any) -> CompositeAdapter | None:
        """The composite kind within framework ``name`` that ``x`` is a value of, if any."""

    def builder(self, target: str, layout: str) -> CompositeAdapter | None:
        """The kind that builds ``layout`` values of framework ``target``."""

    def layouts(self, target: str) -> list[str]:
        """The layouts ``target`` builds composite values of."""

    def leaf_plan(self, x: Any, target: str, device: Any, copy: bool | None, stream: Any,
                  options: dict[str, Any] | None = None) -> Callable[[Any], Any]:
        """The kept plan for values of ``type(x)`` (its fast form), or a call planning each."""

    def declared_options(self) -> dict[str, tuple[str, ...]]:
        """The options adapters declare for themselves, by adapter name."""


@record
class ArrayAdapter:
    """A framework of arrays as the registry sees it.

    ``modules`` are the top-level module names of its value types; detection reads
    ``type(x).__module__`` and ``sys.modules`` and never imports the framework.
    """

    name: str
    aliases: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    package: str = ""
    devices: tuple[str, ...] = ("cpu",)
    target: bool = True
    """Values can be converted to it; ``False`` for a source only (a bare DLPack or CUDA
    Array Interface producer, a buffer-protocol object)."""
    rules: ConsumerRules | None = None
    install: str = ""
    """How a user installs it (``pip install ...``); empty: its own extra,
    ``interop-mempool[<name>]``."""
    gpu_rules: ConsumerRules | None = None
    """What it needs to import a device buffer (DLPack or CUDA Array Interface) without
    copying or crashing; ``None``: it takes any layout there."""
    holds_read_only: bool = False
    """Its arrays can be read-only or immutable, so a read-only source stays read-only."""
    is_value: Callable[[Any], bool] = field(default=_never)
    view: Callable[[Any], BufferView] | None = None
    """The :class:`BufferView` of a value: the currency every consumer rule is judged on."""
    chunks: Callable[[Any], list[Any] | None] | None = None
    """The parts of a value held in several buffers (each a value with a view); ``None``
    from it when the value is one buffer."""
    buffers: Callable[[Any], list[BufferView]] | None = None
    """Every buffer a value's elements occupy (values, validity bitmap, offsets), for values
    that are more than one buffer (nulls, strings) or none a :attr:`view` can describe
    (bit-packed booleans); ``None``: the view is all of it. :func:`interop.shares_memory`
    reads it."""
    device: Callable[[Any], tuple[str, int]] = field(default=_host)
    on_host: Callable[[Any], bool] | None = None
    """A cheap test that a value lives on the host, for a framework whose values of one type
    live on host or GPU: on a GPU host a plan asks it per value before reading the device
    (``device`` costs more), so host values keep their host plan's cost; ``None``: the
    device is read."""
    to_numpy: Callable[[Any], Any] | None = None
    """Any value to a host NumPy array, copying if it must (the copy route's first half)."""
    export_dlpack: Callable[[Any], Any] | None = None
    """A value to an object with ``__dlpack__``, or ``None`` when it exports no DLPack."""
    export_check: Check | None = None
    """Why a value cannot be exported as it is, whatever the consumer (a lazy conjugate bit,
    a sparse layout, a dtype DLPack has no code for); its view is judged after this."""
    from_dlpack: Callable[[Any], Any] | None = None
    dlpack_call: str = ""
    """The consumer call named in plans, e.g. ``"torch.from_dlpack"``."""
    dlpack_hazard: Callable[[Any], str | None] | None = None
    export_hazard: Callable[[Any], str | None] | None = None
    """What any zero-copy result of a value risks, whatever the consumer (DALI writes later
    batches into its output buffers): named on every DLPack and CUDA Array Interface edge
    out of this framework; its own edges name it themselves."""
    export_stream: Callable[[Any, int], int] | None = None
    """``(value, stream)``: orders a device value's export for a consumer on ``stream`` (a
    DLPack stream number) where the framework's ``__dlpack__`` cannot (torch refuses the
    per-thread default stream, and a tensor off the current device), and returns the stream
    to pass instead (``-1`` once ordered); ``None``: ``__dlpack__`` orders it itself."""
    exports_versioned_only: bool = False
    hub: bool = False
    """Paths through this framework win ties (NumPy on the host, CuPy on a GPU)."""
    per_value_owner: bool = False
    """Values of one type may belong to this adapter or not (raw capsules): no type cache."""
    subclassed: bool = False
    """Subclasses of its classes defined in other modules are its values too (pyarrow's
    ``ExtensionArray``, subclassed by Ray and HF ``datasets``): their module is not one of
    ``modules``, so the type test reads the classes' bases."""
    consumable: bool = False
    """Converting a value uses it up (a capsule); ``preview`` gives a NumPy view to inspect."""
    refuse: Callable[[Any], str | None] | None = None
    """Why a value of this type goes to no other framework, whatever the route (a NumPy
    masked array would lose its mask); ``None``: it may. Judged before any plan."""
    preview: Callable[[Any], Any] | None = None
    export_cai: Callable[[Any], Any] | None = None
    """A device value to an object with ``__cuda_array_interface__`` (GPU only)."""
    from_cai: Callable[..., Any] | None = None
    """``(producer, stream=None)``: wrap a CUDA Array Interface producer without copying (GPU
    only), after the producer's ``stream``; ``stream`` is the consumer's (a DLPack/CAI stream
    number; ``None``: its current one). A consumer that waits for the producer's stream on
    the host (CuPy, Numba, cuDF) orders every stream of the consumer at once."""
    device_copy: Callable[[Any, str | None], Any] | None = None
    """``(value, dtype string or None)``: a fresh, compact row-major copy of a device value on
    its device, in this framework (cast to the dtype given); the GPU copy route's copy."""
    to_device: Callable[[Any, int], Any] | None = None
    """A host NumPy array copied onto CUDA device ``index`` as this framework's value."""
    cpu_devices: Callable[[], int] | None = None
    """How many CPU devices the framework has (JAX can run several); ``None``: one, the host.
    ``device="cpu:N"`` names one of them (``interop.devices.cpu_index``)."""
    place: Callable[[Any, Any], Any] | None = None
    """``(host NumPy array, where)``: the array as this framework's value on CPU device
    ``where`` (an int), or where a value ``where`` of this framework lives (its devices, its
    sharding); it may alias the array, so callers hand it a fresh one. ``None``: the
    framework has one CPU device and values go to it by its edges."""
    gpu_present: Callable[[], bool] = field(default=_no_gpu)
    """Whether this framework can see a GPU now (if not, its values are all on the host)."""
    edges: Callable[[], list[Edge]] = field(default=_no_edges)
    """Its own edges (to and from NumPy, mostly), besides the DLPack and CAI ones the
    registry makes from the capabilities above."""
    assemble: tuple[tuple[str, str, Callable[[Parts], Any]], ...] = ()
    """The composite layouts it has a type of its own for, as ``(layout, call, make)``:
    ``make(parts)`` builds its value from parts already converted to it (torch:
    ``("jagged", "torch.nested.nested_tensor_from_jagged", ...)``); a composite's rebuild
    finds it with :func:`assembly`."""

    def missing(self) -> str | None:
        """Why its package cannot be imported here, with the fix; ``None`` when it can."""
        return missing(self.name, self.package, self.install)

    def owns(self, x: Any) -> bool:
        return owns(self.modules, self.is_value, x, self.subclassed)


Adapter = ArrayAdapter
"""The name :func:`interop.register_framework` documents."""


@record(frozen=True)
class Parts:
    """A composite value taken apart: its dense ``arrays`` by role (a table's columns by
    name, a batch's samples by index, a sparse value's ``data``, ``indices``, ``indptr`` or
    ``coords``; next, a list column's ``values`` and ``offsets``), the ``layout`` they form
    together (``"table"``, ``"batch"``; ``"csr"``, ``"jagged"`` ...), and ``meta``: what
    rebuilding needs besides the arrays (a shape, a format's flags), as ``(key, value)``
    pairs."""

    layout: str
    arrays: tuple[tuple[Any, Any], ...]
    meta: tuple[tuple[str, Any], ...] = ()
    copied: tuple[str, ...] = ()
    """Why taking the value apart copied (joining chunks, rebasing offsets, padding): the
    plan is then no zero-copy one, and ``copy=False`` refuses it; empty: the arrays are views."""
    nulls: str = ""
    """Why the value holds nulls a dense buffer cannot show: ``copy=True`` takes the arrays
    (their null slots filled, NaN for floating types), any other ``copy=`` refuses it."""

    def with_arrays(self, arrays: tuple[tuple[Any, Any], ...]) -> Parts:
        """The same layout and meta over other arrays (the converted ones)."""
        return Parts(self.layout, arrays, self.meta, self.copied, self.nulls)

    def replace(self, arrays: dict[Any, Any] | None = None, **meta: Any) -> Parts:
        """These parts with some arrays (by role) and some meta keys replaced."""
        new = tuple((r, (arrays or {}).get(r, a)) for r, a in self.arrays)
        old = tuple((k, v) for k, v in self.meta if k not in meta)
        return Parts(self.layout, new, (*old, *meta.items()))

    def array(self, role: Any) -> Any:
        for r, a in self.arrays:
            if r == role:
                return a
        raise KeyError(role)

    def get(self, key: str, default: Any = None) -> Any:
        """The meta value of ``key`` (the last given, as a dict of the pairs would say)."""
        found = default
        for k, v in self.meta:
            if k == key:
                found = v
        return found


def _parts_init(self: Parts, layout: str, arrays: tuple[tuple[Any, Any], ...],
                meta: tuple[tuple[str, Any], ...] = (), copied: tuple[str, ...] = (),
                nulls: str = "") -> None:
    self.__dict__.update(layout=layout, arrays=arrays, meta=meta, copied=copied, nulls=nulls)


Parts.__init__ = _parts_init  # type: ignore[method-assign]  # built on every call: written out
# (the record's shared __init__ reads its field list per call)


@record(frozen=True)
class Fix:
    """A copy the rebuilding side needs of some parts before their dense route (a sparse
    value's unsorted indices sorted, int32 indices widened to int64): the ``roles`` it
    copies, ``why``, and ``apply`` (parts -> parts)."""

    roles: tuple[Any, ...]
    why: str
    apply: Callable[[Parts], Parts]


@record
class CompositeAdapter:
    """A kind of value made of several arrays, recognised like a framework: tables (pyarrow
    ``Table``, a DataFrame, a dict of arrays), DALI batches, each framework's sparse values;
    next, Arrow list and tensor columns. The contract is two functions: :attr:`parts` takes a value
    apart into dense arrays, each converted through the registry's own dense rules
    (devices, streams, read-only hazards, ``copy=``), and :attr:`rebuild` makes the value
    on the target side from the converted parts (:mod:`interop.composite` does the rest,
    and ``explain`` reports every part's plan). A kind whose parts need more than the dense
    rules (a table's nulls and chunks, a batch's padding) converts and explains itself:
    :attr:`convert`, :attr:`explain`."""

    name: str
    modules: tuple[str, ...] = ()
    package: str = ""
    devices: tuple[str, ...] = ("cpu",)
    is_value: Callable[[Any], bool] = field(default=_never)
    parts: Callable[..., Parts] | None = None
    """The value taken apart (:class:`Parts`), given the call's :attr:`options` as keywords
    when it declares some; :func:`interop.shares_memory` reads it too, unless
    :attr:`buffers` is given."""
    buffers: Callable[[Any], list[BufferView]] | None = None
    """Every buffer the value occupies, for :func:`interop.shares_memory`, where taking it
    apart may copy a part (rebased offsets); ``None``: its parts are views of all of it."""
    rebuild: Callable[[RegistryLike, Parts, str], Any] | None = None
    """``(registry, converted parts, target)`` -> the value on the target side."""
    rebuilder: Callable[[RegistryLike, Parts, str], Callable[[tuple[Any, ...]], Any]] | None \
        = None
    """``(registry, parts, target)`` -> :attr:`rebuild` bound to the layout and meta of
    ``parts``: a function of the converted arrays in their role order (what a kept plan's fast
    form calls per value, deciding nothing again); ``None``: :attr:`rebuild` over new parts."""
    convert: Callable[..., Any] | None = None
    """``(registry, x, target, copy=, device=, **options)`` -> the converted value, for a
    kind that converts itself; ``None``: its parts, converted, rebuilt."""
    explain: Callable[..., Plan] | None = None
    """``(registry, x, target, copy=, **options)`` -> its :class:`~interop.plan.Plan`, for a
    kind that converts itself; ``None``: its parts' plans."""
    aliases: tuple[str, ...] = ()
    install: str = ""
    target: bool = False
    """Composites are sources; their targets are the array frameworks (and table
    frameworks)."""
    per_value_owner: bool = False
    subclassed: bool = False
    """As :attr:`ArrayAdapter.subclassed`: values of its classes subclassed elsewhere are
    its values."""
    options: tuple[str, ...] | None = None
    """The options ``convert`` (or ``parts``) takes (``None``: the table options,
    :data:`interop.names.TABLE_OPTIONS`); a structure hands each leaf those it takes."""
    home: str = ""
    """The framework a value of this kind already is a value of, for the identity only:
    converted to it without ``copy=True``, ``device=`` or options, the value is returned as it
    is (Arrow's list columns: ``"pyarrow"``). Unlike :attr:`of`, it names no builder: the
    kind's own :attr:`rebuild` makes every other target's value."""
    describe: Callable[[RegistryLike, Parts, str], str] | None = None
    """``(registry, parts, target)`` -> the line ``explain`` gives on what the parts form and
    what the target receives (a shape, dimension names, the call rebuilding it)."""
    stream: bool = False
    """Whether ``convert`` takes ``stream=`` (a batch of GPU samples); otherwise the stream is
    not passed on."""
    of: str = ""
    """The framework whose values these are (``"torch"`` for torch's sparse tensors); its
    :attr:`rebuild` builds them when that framework is the target, from the parts of any
    kind of the same layout (the registry pairs layouts: :meth:`Registry.builder`). Empty:
    :attr:`rebuild` rebuilds this kind itself, whatever the target."""
    layouts: tuple[str, ...] = ()
    """The layouts :attr:`rebuild` makes (``"csr"``, ``"coo"`` ...), for a kind with :attr:`of`."""
    dense: str = ""
    """The framework each part is converted to before :attr:`rebuild` (default :attr:`of`;
    ``"numpy"`` for SciPy's sparse arrays)."""
    needs: Any = None
    """What :attr:`rebuild` requires of its parts, by layout (index dtypes, sorted
    indices ...), read by a source's :attr:`prepare`."""
    check: Callable[[RegistryLike, Parts], Parts] | None = None
    """``(registry, parts)`` -> the parts checked (an invalid value raises
    :class:`~interop.errors.MalformedError`), before any framework call on the value (its own
    layout change, ``format=``, included); ``None``: nothing to check."""
    reformat_bytes: Callable[[Parts, str], int] | None = None
    """``(parts, layout)`` -> the bytes the value in ``layout`` needs at least (its dense
    form, its index pointers), known before the layout change: one that cannot fit the
    memory available is refused, never attempted."""
    serves: tuple[str, ...] = ()
    """Targets besides :attr:`of` whose values of these layouts it builds (SciPy's sparse
    arrays are NumPy's sparse values: ``"numpy"``)."""
    prepare: Callable[[RegistryLike, Parts, CompositeAdapter],
                      tuple[Parts, tuple[Fix, ...]]] | None = None
    """``(registry, parts, the rebuilding kind)`` -> the parts checked (an invalid value
    raises) and described as the rebuilding side reads them, and the :class:`Fix` es its
    :attr:`needs` ask for; ``None``: the parts go as they are."""
    reformat: Callable[[Any, str], Any] | None = None
    """``(value, layout)`` -> the value in another layout by its framework's own call (the
    ``format=`` option; ``"dense"``: a dense array); ``None``: it has one layout."""
    reader: Callable[[Any, Parts], Callable[[Any], tuple[Any, ...] | None] | None] | None \
        = None
    """``(value, its parts)`` -> the fast reader of values of the value's kind, decided once
    from the value and the parts the walk took of it, checked (its type, layout, dtypes, shape
    parameters, what the checks found: nothing is read or checked twice): per call, a
    value's arrays in the order of its parts' roles, read as :attr:`parts` reads them, where
    the parts' layout and meta are the value's it was made from, the value's invariants
    checked (offsets, indices); ``None`` for any other value (another type, other meta, nulls,
    a copy to take it apart, a device, a fault), which the full walk then takes (and names).
    Asked only of a value converted without options. ``None``: no fast reader."""
    within: bool = False
    """Its values are values of :attr:`of`'s (else :attr:`home`'s) own type (a torch sparse
    tensor is a ``torch.Tensor``, a chunked list column a pyarrow ``ChunkedArray``): that
    framework's adapter owns the type, and :attr:`is_value` tells each value apart."""

    def missing(self) -> str | None:
        return missing(self.name, self.package, self.install)

    def owns(self, x: Any) -> bool:
        return not self.within and owns(self.modules, self.is_value, x, self.subclassed)


@record
class StructureAdapter:
    """Nested structures (dicts, lists, tuples, pytrees): recognised like a framework (after
    every other adapter, so whatever another owns is a leaf); each array leaf is converted by
    its own plan, through a plan made once per structure (:mod:`interop.structures`)."""

    name: str
    is_value: Callable[[Any], bool] = field(default=_never)
    plan: Callable[..., Callable[[Any], Any]] | None = None
    """``(registry, x, target as asked, target, device, copy, stream, options)`` -> the
    converter of structures of ``type(x)``."""
    explain: Callable[..., Plan] | None = None
    """``(registry, x, target, device, copy, options)`` -> its :class:`~interop.plan.Plan`."""
    leaves: Callable[[Any, Any], list[Any]] | None = None
    """``(registry, x)`` -> the array leaves of ``x``."""
    aliases: tuple[str, ...] = ()
    devices: tuple[str, ...] = ("cpu", "cuda")
    target: bool = False
    per_value_owner: bool = False

    def missing(self) -> str | None:
        return None

    def owns(self, x: Any) -> bool:
        return self.is_value(x)


def assembly(reg: RegistryLike, tgt: str, layout: str) -> tuple[str, Callable[[Parts], Any]] | None:
    """``(call, make)``: how framework ``tgt`` builds its own value of ``layout`` from parts
    converted to it (:attr:`ArrayAdapter.assemble`); ``None``: it has
    no type of that layout."""
    for name, call, make in getattr(reg.adapters[tgt], "assemble", ()):
        if name == layout:
            return call, make
    return None


def instance_test(module: str, *names: str) -> Callable[[Any], bool]:
    """The :attr:`ArrayAdapter.is_value` of values of the classes ``names`` of ``module``
    (``instance_test("torch", "Tensor")``): the one type test of every framework. It never
    imports ``module`` (no module imported: no value of it), reads the classes from it when
    a type is first seen, and keeps each type's answer (as array-api-compat's
    ``_issubclass_fast`` does); a module replaced in ``sys.modules`` is asked again."""
    seen: list[Any] = [None]  # the module the answers were read from
    verdicts: dict[type, bool] = {}

    def is_value(x: Any) -> bool:
        m = sys.modules.get(module)
        if m is None:
            return False
        if seen[0] is not m:
            seen[0] = m
            verdicts.clear()
        tp = type(x)
        verdict = verdicts.get(tp)
        if verdict is None:
            classes = tuple(c for c in (getattr(m, n, None) for n in names)
                            if isinstance(c, type))
            verdict = verdicts[tp] = bool(classes) and issubclass(tp, classes)
        return verdict

    return is_value


def owns(modules: tuple[str, ...], is_value: Callable[[Any], bool], x: Any,
         subclassed: bool = False) -> bool:
    """Whether ``x`` is a value of the framework of ``modules`` (no modules: any value
    ``is_value`` takes), importing nothing; ``subclassed``: a type defined elsewhere is
    the framework's when a base class of it is (read once per type: the registry keeps each
    type's owner)."""
    if not modules:
        return is_value(x)
    tp = type(x)
    if tp.__module__.partition(".")[0] in modules:
        return is_value(x)
    return subclassed and any(getattr(c, "__module__", "").partition(".")[0] in modules
                              for c in tp.__mro__[1:]) and is_value(x)


def missing(name: str, package: str, install: str) -> str | None:
    """Why ``package`` cannot be imported here, with the fix; ``None`` when it can."""
    if installed(package):
        return None
    fix = install or f'pip install "interop-mempool[{name}]"'
    return f"{name} is not installed: {fix} (no module {package!r} here)"


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


def gpu_probe(package: str, sees_gpu: Callable[[Any], Any]) -> Callable[[], bool]:
    """An :attr:`ArrayAdapter.gpu_present` asking ``sees_gpu(module)`` once, after
    ``package`` is imported (never importing it); an error from it counts as no GPU."""
    answer: list[bool] = []

    def present() -> bool:
        m = sys.modules.get(package)
        if m is None:
            return False
        if not answer:
            try:
                answer.append(bool(sees_gpu(m)))
            except Exception:  # a broken CUDA setup: host values only, as without a GPU
                return False
        return answer[0]

    return present


def module(name: str) -> Any:
    """The framework module ``name``, imported on first use (later calls: a dict lookup)."""
    m = sys.modules.get(name)
    return m if m is not None else importlib.import_module(name)


def series_check(what: str, dtype_verdict: Callable[[Any], tuple[str, str] | None],
                 strided: str | None = None,
                 misaligned: tuple[str, str] | None = None,
                 item_strides: bool = False) -> Check:
    """The check for a 1-D NumPy array becoming a ``what`` (an Arrow-like column).

    ``dtype_verdict``: the dtype's verdict (``None``, ``STEP_COPIES`` for bit-packed booleans,
    ``UNSUPPORTED``). ``strided``: for a target whose call copies a strided array into a
    dense buffer itself (``STEP_COPIES``), whose call it is; ``item_strides``: that call
    copies any array whose stride is not its itemsize (one element too), not only those
    NumPy calls non-contiguous. ``misaligned``: the verdict on an array not aligned to its
    itemsize, and what the call does with it.
    """
    def check(a: Any) -> tuple[str, str] | None:
        if a.ndim != 1:
            return UNSUPPORTED, (f"a {what} is one-dimensional; the array has shape {a.shape} "
                                 "(reshape it, or convert a table column by column)")
        v = dtype_verdict(a.dtype)
        if v is not None:
            return v
        flags = a.flags
        if misaligned and not flags.aligned:
            return misaligned[0], f"the array is not aligned to its itemsize: {misaligned[1]}"
        if strided and (not flags.c_contiguous or (
                item_strides and a.size and a.strides[0] != a.itemsize)):
            return STEP_COPIES, (f"strides {a.strides} are not contiguous: {strided} copies "
                                 "them into a dense buffer")
        return None

    return check


def handover_check(source: ArrayAdapter, rules: ConsumerRules | None,
                   immutable_target: bool = False) -> Check | None:
    """The check before a buffer of ``source`` reaches a consumer with ``rules`` (``None``: it
    takes any layout): the source's own export check, then its buffer view judged against
    the rules (:func:`view_obstacle`). Between two frameworks of immutable arrays (JAX,
    TensorFlow) a legacy capsule's missing read-only flag loses nothing. A consumer without
    rules still gets the source's export check: a lazy negative bit is lost whatever the
    consumer."""
    if rules is None:
        return source.export_check
    if immutable_target and source.holds_read_only and not rules.versioned:
        rules = replace(rules, versioned=True)
    export_check, view = source.export_check, source.view
    if view is None:
        raise TypeError(f"{source.name} has no buffer view to check hand-overs with")
    if export_check is None:
        return lambda x: view_obstacle(view(x), rules)
    return lambda x: export_check(x) or view_obstacle(view(x), rules)


def writable_source(consumer: str) -> str:
    """The hazard of a writable source handed to ``consumer``, whose arrays are immutable."""
    return (f"{consumer} treats its arrays as immutable, but the source stays writable: "
            f"writing to it changes the result behind {consumer}'s back")


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
