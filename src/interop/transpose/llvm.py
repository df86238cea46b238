"""The compiled AoS <-> SoA transpose: LLVM IR built with llvmlite, compiled for this CPU,
its machine code cached on disk.

Imported only by :mod:`interop.transpose.cpu` when a transpose is large enough to pay for
loading it; importing this module imports ``llvmlite`` (Numba's code generator, installed
with Numba), never Numba itself, whose first call costs seconds of registry set-up.

Two C-ABI functions, each over a range of rows ``[i0, i1)`` (the caller shares the ranges
among threads; the functions hold no Python state, so they run without the GIL):

- ``gather``: records -> columns. Rows of ``row_stride`` bytes at ``src``, field ``f`` at
  byte ``offsets[f]`` of ``sizes[f]`` bytes (packed or padded, mixed widths, unaligned),
  column ``f`` a contiguous buffer at ``columns[f]``. Per block of rows (a quarter MiB of
  records, which stays in the core's L2 cache), one field at a time: its values are copied
  into a small staging buffer in L1, then streamed to the column with non-temporal stores
  of whole 64-byte lines, so the column's memory is written once and never read.
- ``scatter``: columns -> records, the inverse: a staging buffer of whole records (in L1/L2)
  is filled field by field, then streamed to the records with non-temporal stores. Bytes
  of a record that no field covers (padding) are written as zeros.

Why so: a ``memcpy`` this size reads each byte once and writes it once with non-temporal
stores; a transpose with ordinary stores also reads every line it writes (write-allocate),
1.5 times the memory traffic, which capped the earlier kernel near 0.67 of ``memcpy``.
Non-temporal stores pay only when they fill whole lines back to back: the caller passes
``r0`` and ``line_rows`` so that every chunk of rows after the first starts on a line
boundary of the output (``r0`` rows from the first line boundary, ``line_rows`` rows per
line period); a chunk whose output does not start on a line boundary is written with
ordinary stores.

The machine code is cached in ``cache_dir()`` keyed by the IR, the CPU and the LLVM
version; a later process loads it (milliseconds) instead of compiling (about half a second).
The functions' arguments are declared once, in :mod:`interop.transpose.abi`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import llvmlite.binding as llvm
from llvmlite import ir

from . import abi

LINE = 64
UNIFORM = {"gather": (1, 2, 4, 8), "scatter": (2, 4, 8)}
"""Field widths with their own functions (``gather4``, ``scatter8``, ...) for records of
fields of one width packed back to back: 8 fields at a time transposed in registers (64 MiB
of 8 int16 fields, one thread: 12 ms against 21 ms field by field). Not scatter1: LLVM turns
its 256-byte shuffles into slow code (83 ms against 35 ms for 8 uint8 fields)."""

_MODULE = "interop_transpose"
_I1, _I8, _I32, _I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
_P8 = _I8.as_pointer()
_VEC = ir.VectorType(_I64, 4)  # 32 bytes: two stores fill a line
_WIDTHS = (1, 2, 4, 8, 16)  # field widths copied with one load and one store per value
_KINDS = {abi.BYTES: _P8, abi.INT: _I64, abi.INTS: _I64.as_pointer(),
          abi.POINTERS: _P8.as_pointer()}
"""The IR type of each kind of argument of :data:`interop.transpose.abi.ARGS`."""


def _i64(v: int) -> ir.Constant:
    return ir.Constant(_I64, v)


@contextmanager
def _steps(b: ir.IRBuilder, start: Any, stop: Any, following: Any,
           name: str) -> Iterator[tuple[Any, Any]]:
    """``i = start; while i < stop: body; i = following(i)`` around the body built in the
    block, yielding ``(i, following(i))`` (computed before the body)."""
    before = b.block
    head, body, end = (b.append_basic_block(f"{name}.{n}") for n in ("head", "body", "end"))
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(_I64, name)
    i.add_incoming(start, before)
    b.cbranch(b.icmp_signed("<", i, stop), body, end)
    b.position_at_end(body)
    nxt = following(i)
    yield i, nxt
    i.add_incoming(nxt, b.block)
    b.branch(head)
    b.position_at_end(end)


@contextmanager
def _loop(b: ir.IRBuilder, start: Any, stop: Any, step: Any, name: str) -> Iterator[Any]:
    """``for i in range(start, stop, step)`` (``step > 0``) around the body built in the block."""
    with _steps(b, start, stop, lambda i: b.add(i, step), name) as (i, _):
        yield i


def _min(b: ir.IRBuilder, x: Any, y: Any) -> Any:
    return b.select(b.icmp_signed("<", x, y), x, y)


class _Builder:
    """The module's IR: the strided copies, the stream, then the two exported functions."""

    def __init__(self) -> None:
        m = self.module = ir.Module(_MODULE)
        self.nontemporal = m.add_metadata([ir.Constant(_I32, 1)])
        self.memcpy = m.declare_intrinsic("llvm.memcpy", [_P8, _P8, _I64])
        self.memset = m.declare_intrinsic("llvm.memset", [_P8, _I64])
        self.prefetch = ir.Function(m, ir.FunctionType(ir.VoidType(), [_P8, _I32, _I32, _I32]),
                                    "llvm.prefetch.p0")
        self.strided = {(side, w): self._strided(side, w) for side in "gs" for w in _WIDTHS + (0,)}
        self.stream = self._stream()
        for w in (None, *UNIFORM["gather"]):
            self._gather(w)
        for w in (None, *UNIFORM["scatter"]):
            self._scatter(w)

    def _internal(self, name: str, args: list[Any]) -> ir.Function:
        f = ir.Function(self.module, ir.FunctionType(ir.VoidType(), args), name)
        f.linkage = "internal"
        f.attributes.add("alwaysinline")
        return f

    def _copy(self, b: ir.IRBuilder, dst: Any, src: Any, nbytes: Any) -> None:
        b.call(self.memcpy, [dst, src, nbytes, ir.Constant(_I1, 0)])

    def _copy_some(self, b: ir.IRBuilder, dst: Any, src: Any, nbytes: Any) -> None:
        """:meth:`_copy` where ``nbytes`` may be 0 (most often it is: no call then)."""
        with b.if_then(b.icmp_signed(">", nbytes, _i64(0))):
            self._copy(b, dst, src, nbytes)

    def _strided(self, side: str, w: int) -> ir.Function:
        """``count`` values of ``size`` bytes (``w``; 0: any size), the k-th from
        ``src + k*sstep`` to ``dst + k*dstep``, in unrolled groups of 8. ``side`` "g": the
        destination is contiguous (``dstep == w``), "s": the source is."""
        f = self._internal(f"strided_{side}{w}", [_P8, _I64, _P8, _I64, _I64, _I64])
        dst, dstep, src, sstep, count, size = f.args
        b = ir.IRBuilder(f.append_basic_block())
        if w:
            dstep, sstep = (_i64(w), sstep) if side == "g" else (dstep, _i64(w))
        ptr = ir.IntType(8 * w).as_pointer() if w else None

        def one(d: Any, s: Any, j: int) -> None:
            if j:
                d, s = b.gep(d, [b.mul(_i64(j), dstep)]), b.gep(s, [b.mul(_i64(j), sstep)])
            if ptr is None:
                self._copy(b, d, s, size)
            else:
                b.store(b.load(b.bitcast(s, ptr), align=1), b.bitcast(d, ptr), align=1)

        groups = b.and_(count, _i64(~7))
        before = b.block
        head, body, rest = (b.append_basic_block(n) for n in ("g.head", "g.body", "g.rest"))
        b.branch(head)
        b.position_at_end(head)
        k, d, s = b.phi(_I64), b.phi(_P8), b.phi(_P8)
        for phi, v in ((k, _i64(0)), (d, dst), (s, src)):
            phi.add_incoming(v, before)
        b.cbranch(b.icmp_signed("<", k, groups), body, rest)
        b.position_at_end(body)
        for j in range(8):
            one(d, s, j)
        k.add_incoming(b.add(k, _i64(8)), b.block)
        d.add_incoming(b.gep(d, [b.mul(_i64(8), dstep)]), b.block)
        s.add_incoming(b.gep(s, [b.mul(_i64(8), sstep)]), b.block)
        b.branch(head)
        b.position_at_end(rest)
        with _loop(b, groups, count, _i64(1), "r") as r:
            one(b.gep(dst, [b.mul(r, dstep)]), b.gep(src, [b.mul(r, sstep)]), 0)
        b.ret_void()
        return f

    def _stream(self) -> ir.Function:
        """``nbytes`` from ``src`` (in cache) to ``dst``: the whole 64-byte lines of ``dst``
        with non-temporal stores, the partial lines at either end with ordinary ones (a
        line is never written both ways); a line from ``ahead`` is prefetched per line
        written (the next chunk's input, so that reading it overlaps these writes)."""
        f = self._internal("stream", [_P8, _P8, _I64, _P8])
        dst, src, n, ahead = f.args
        b = ir.IRBuilder(f.append_basic_block())
        head = _min(b, b.and_(b.sub(_i64(0), b.ptrtoint(dst, _I64)), _i64(LINE - 1)), n)
        self._copy_some(b, dst, src, head)
        lines = b.add(head, b.and_(b.sub(n, head), _i64(-LINE)))
        vec = _VEC.as_pointer()
        with _loop(b, head, lines, _i64(LINE), "v") as i:
            b.call(self.prefetch, [b.gep(ahead, [i]), ir.Constant(_I32, 0),
                                   ir.Constant(_I32, 3), ir.Constant(_I32, 1)])
            for half in (0, 32):
                j = b.add(i, _i64(half))
                v = b.load(b.bitcast(b.gep(src, [j]), vec), align=1)
                st = b.store(v, b.bitcast(b.gep(dst, [j]), vec), align=32)
                st.set_metadata("nontemporal", self.nontemporal)
        self._copy_some(b, b.gep(dst, [lines]), b.gep(src, [lines]), b.sub(n, lines))
        b.ret_void()
        return f

    def _by_width(self, b: ir.IRBuilder, side: str, w: Any, args: list[Any]) -> None:
        """Call the strided copy for the run-time width ``w``."""
        end, other = b.append_basic_block("w.end"), b.append_basic_block("w.other")
        switch = b.switch(w, other)
        for k in _WIDTHS:
            case = b.append_basic_block(f"w{k}")
            switch.add_case(_i64(k), case)
            b.position_at_end(case)
            b.call(self.strided[side, k], args)
            b.branch(end)
        b.position_at_end(other)
        b.call(self.strided[side, 0], args)
        b.branch(end)
        b.position_at_end(end)

    def _function(self, name: str) -> tuple[ir.IRBuilder, Any]:
        """An exported function of the calling convention :mod:`interop.transpose.abi`
        declares, and its arguments by name (an :class:`~interop.transpose.abi.Call`)."""
        f = ir.Function(self.module, ir.FunctionType(ir.VoidType(), abi.ir_types(_KINDS)),
                        name)
        for (arg, _), a in zip(abi.ARGS, f.args):
            a.name = arg
            if arg in abi.NOALIAS:
                a.add_attribute("noalias")
        return ir.IRBuilder(f.append_basic_block()), abi.Call(*f.args)

    @staticmethod
    def _chunks(b: ir.IRBuilder, start: Any, stop: Any, size: Any, r0: Any, line_rows: Any,
                name: str) -> Any:
        """``for k0 in chunks of size rows of [start, stop)``, yielding ``(k0, k1)``: the first
        chunk is cut short so that, where ``size`` is a multiple of ``line_rows``, every later
        one starts ``r0`` modulo ``line_rows``: on a line boundary of the output."""
        def following(k0: Any) -> Any:
            phase = b.srem(b.add(b.srem(b.sub(k0, r0), line_rows), line_rows), line_rows)
            rows = b.select(b.icmp_signed(">", size, phase), b.sub(size, phase), size)
            return _min(b, b.add(k0, rows), stop)

        return _steps(b, start, stop, following, name)

    @staticmethod
    def _tile(b: ir.IRBuilder, rows: list[Any], store: Any) -> None:
        """The register tile of both directions: ``rows`` (a power of two of vectors of one
        type, ``n`` lanes each) transposed, ``store(k, vector)`` for each of the ``n``
        columns (lane ``k`` of every row, in order). Each column is one shuffle of a
        concatenation tree of the rows, which LLVM lowers to a few unpack/permute
        instructions."""
        width, count = rows[0].type.count, len(rows)
        size, joined = width, rows
        while len(joined) > 1:
            both = ir.Constant(ir.VectorType(_I32, 2 * size), list(range(2 * size)))
            joined = [b.shuffle_vector(x, y, both) for x, y in zip(joined[0::2], joined[1::2])]
            size *= 2
        for k in range(width):
            lanes = ir.Constant(ir.VectorType(_I32, count), [i * width + k for i in range(count)])
            store(k, b.shuffle_vector(joined[0], joined[0], lanes))

    def _rest(self, b: ir.IRBuilder, side: str, nf: Any, whole: Any, lo: Any, hi: Any,
              copy: Any) -> None:
        """The values the register transposes leave (``whole`` fields of ``[lo, hi)`` were
        done up to the last whole tile ``cut``): ``copy(f, first_row, count)`` per field."""
        with _loop(b, _i64(0), nf, _i64(1), side + "f") as f:
            first = b.select(b.icmp_signed("<", f, whole), lo, _i64(0))
            copy(f, first, b.sub(hi, first))

    def _gather(self, w: int | None) -> None:
        """Per block of ``block`` rows, tiles of ``tile`` rows (in L1): each field's values
        of the tile go to its part of the stage (``block`` values from byte ``places[f]``);
        then each field's part streams to its column. With ``w``, every field is ``w`` bytes
        at ``f*w``: 8 fields by ``32/w`` rows at a time are transposed in registers."""
        b, a = self._function(f"gather{w or ''}")
        src, stride, offsets, sizes, places = a.base, a.row_stride, a.offsets, a.sizes, a.places
        columns, nf, i0, i1, stage, tile, block = (a.columns, a.fields, a.i0, a.i1, a.stage,
                                                   a.tile, a.block)
        r0, line_rows = a.r0, a.line_rows
        with self._chunks(b, i0, i1, block, r0, line_rows, "b") as (b0, b1):
            with _loop(b, b0, b1, tile, "t") as t0:
                m = b.sub(_min(b, b.add(t0, tile), b1), t0)
                row = b.gep(src, [b.mul(t0, stride)])
                whole, cut = _i64(0), _i64(0)
                if w:
                    rows, vec = 32 // w, ir.IntType(8 * w)
                    whole, cut = b.and_(nf, _i64(-8)), b.and_(m, _i64(-rows))
                    fields = ir.VectorType(vec, 8).as_pointer()
                    with _loop(b, _i64(0), whole, _i64(8), "j") as j0:
                        with _loop(b, _i64(0), cut, _i64(rows), "r") as r:
                            at = b.gep(row, [b.add(b.mul(r, stride), b.mul(j0, _i64(w)))])
                            got = [b.load(b.bitcast(b.gep(at, [b.mul(_i64(i), stride)]),
                                                    fields), align=1) for i in range(rows)]

                            def to_stage(g: int, col: Any, j0: Any = j0, r: Any = r) -> None:
                                place = b.load(b.gep(places, [b.add(j0, _i64(g))]))
                                to = b.gep(stage, [b.add(place, b.mul(b.add(b.sub(t0, b0), r),
                                                                      _i64(w)))])
                                b.store(col, b.bitcast(to, col.type.as_pointer()), align=1)

                            self._tile(b, got, to_stage)

                def copy(f: Any, first: Any, count: Any) -> None:
                    off, size = b.load(b.gep(offsets, [f])), b.load(b.gep(sizes, [f]))
                    part = b.gep(stage, [b.add(b.load(b.gep(places, [f])),
                                               b.mul(b.add(b.sub(t0, b0), first), size))])
                    at = b.gep(row, [b.add(b.mul(first, stride), off)])
                    self._by_width(b, "g", size, [part, size, at, stride, count, size])

                self._rest(b, "g", nf, whole, cut, m, copy)
            with _loop(b, _i64(0), nf, _i64(1), "s") as f:
                size, col = b.load(b.gep(sizes, [f])), b.load(b.gep(columns, [f]))
                place = b.load(b.gep(places, [f]))
                b.call(self.stream, [b.gep(col, [b.mul(b0, size)]), b.gep(stage, [place]),
                                     b.mul(b.sub(b1, b0), size),
                                     b.gep(src, [b.add(b.mul(b1, stride), place)])])
        b.fence("seq_cst")  # the streamed lines are visible to every thread on return
        b.ret_void()

    def _scatter(self, w: int | None) -> None:
        """Per chunk of ``block`` records (the stage, zeroed once: padding stays zero), each
        field's values are written into their place in the staged records, which then
        stream to the output. With ``w``, every field is ``w`` bytes at ``f*w``: 8 fields by
        ``32/w`` rows at a time are transposed in registers."""
        b, a = self._function(f"scatter{w or ''}")
        dst, stride, offsets, sizes, columns = a.base, a.row_stride, a.offsets, a.sizes, a.columns
        nf, i0, i1, r0, line_rows, stage, block = (a.fields, a.i0, a.i1, a.r0, a.line_rows,
                                                   a.stage, a.block)
        b.call(self.memset, [stage, ir.Constant(_I8, 0), b.mul(block, stride),
                             ir.Constant(_I1, 0)])
        with self._chunks(b, i0, i1, block, r0, line_rows, "k") as (k0, k1):
            m = b.sub(k1, k0)
            whole, cut = _i64(0), _i64(0)
            if w:
                rows, vec = 32 // w, ir.IntType(8 * w)
                whole, cut = b.and_(nf, _i64(-8)), b.and_(m, _i64(-rows))
                values = ir.VectorType(vec, rows).as_pointer()
                with _loop(b, _i64(0), whole, _i64(8), "j") as j0:
                    off = b.load(b.gep(offsets, [j0]))
                    with _loop(b, _i64(0), cut, _i64(rows), "r") as r:
                        at = b.mul(b.add(k0, r), _i64(w))
                        got = [b.load(b.bitcast(b.gep(b.load(b.gep(columns, [b.add(j0, _i64(g))])),
                                                      [at]), values), align=1)
                               for g in range(8)]

                        def to_stage(i: int, rec: Any, r: Any = r, off: Any = off) -> None:
                            to = b.gep(stage, [b.add(b.mul(b.add(r, _i64(i)), stride), off)])
                            b.store(rec, b.bitcast(to, rec.type.as_pointer()), align=1)

                        self._tile(b, got, to_stage)

            def copy(f: Any, first: Any, count: Any) -> None:
                off, size = b.load(b.gep(offsets, [f])), b.load(b.gep(sizes, [f]))
                col = b.load(b.gep(columns, [f]))
                self._by_width(b, "s", size, [b.gep(stage, [b.add(b.mul(first, stride), off)]),
                                              stride, b.gep(col, [b.mul(b.add(k0, first), size)]),
                                              size, count, size])

            self._rest(b, "s", nf, whole, cut, m, copy)
            with _loop(b, _i64(0), nf, _i64(1), "p") as f:  # the next chunk's columns
                size, col = b.load(b.gep(sizes, [f])), b.load(b.gep(columns, [f]))
                nxt = b.gep(col, [b.mul(k1, size)])
                with _loop(b, _i64(0), b.mul(_min(b, m, b.sub(i1, k1)), size), _i64(LINE),
                           "q") as i:
                    b.call(self.prefetch, [b.gep(nxt, [i]), ir.Constant(_I32, 0),
                                           ir.Constant(_I32, 3), ir.Constant(_I32, 1)])
            b.call(self.stream, [b.gep(dst, [b.mul(k0, stride)]), stage, b.mul(m, stride),
                                 stage])
        b.fence("seq_cst")
        b.ret_void()


class Compiled(NamedTuple):
    """The functions (ctypes, callable without the GIL) by name, and how they were obtained:
    ``"cache"`` (machine code read from ``path``) or ``"compiled"`` (and saved there)."""

    functions: dict[str, Any]
    how: str
    path: str
    engine: Any  # owns the machine code: the functions live as long as it does

    def pick(self, direction: str, width: int | None) -> Any:
        """``gather`` or ``scatter`` for records of fields of one ``width`` packed back to
        back (``None``: any layout)."""
        return self.functions[direction + (str(width) if width in UNIFORM[direction] else "")]


def cache_dir() -> str:
    """Where the machine code is kept: ``INTEROP_CACHE_DIR``, else the user's cache
    directory (``$XDG_CACHE_HOME/interop`` or ``~/.cache/interop``)."""
    explicit = os.environ.get("INTEROP_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "interop")


def load() -> Compiled:
    """Load the machine code from the cache, or compile the module for this CPU (and save
    it). The cache key is the source that writes the IR (this file and
    :mod:`~interop.transpose.abi`), the CPU and the LLVM version, so a cached load does not
    even build the IR (80 ms in Python)."""
    engine, path, compiled = compiled_engine(_MODULE, (__file__, abi.__file__), "transpose",
                                             lambda: _Builder().module)
    proto = abi.prototype()
    names = [d + str(w or "") for d, widths in UNIFORM.items() for w in (None, *widths)]
    addresses = {n: engine.get_function_address(n) for n in names}
    if not all(addresses.values()):
        raise RuntimeError(f"the cached kernel {path} lacks a function: delete it to compile "
                           "it again")
    return Compiled({n: proto(a) for n, a in addresses.items()},
                    "compiled" if compiled else "cache", path, engine)


def compiled_engine(name: str, sources: tuple[str, ...], prefix: str, module: Any,
                    vectorize: bool = False) -> tuple[Any, str, bool]:
    """An MCJIT engine of the LLVM module ``name`` for this CPU, its machine code loaded from
    the cache directory (keyed on the ``sources`` files that write its IR, the CPU and the
    LLVM version) or compiled from ``module()`` (an ``ir.Module``), optimised at level 3
    (``vectorize``: loop and SLP vectorization on) and saved: ``(engine, cache file, whether
    it was compiled)``. The one cache of every compiled kernel of interop."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    triple = llvm.get_process_triple()
    cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    source = b""
    for path in sources:  # the code that writes the IR
        with open(path, "rb") as f:
            source += f.read()
    key = hashlib.sha256(b"\0".join([source, triple.encode(), cpu.encode(), features.encode(),
                                     ".".join(map(str, llvm.llvm_version_info)).encode()]))
    path = os.path.join(cache_dir(), f"{prefix}-{key.hexdigest()[:24]}.o")
    machine = llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu, features=features, opt=3, jit=True)
    cached = _read(path)
    if cached is None:
        built = module()
        built.triple = triple
        mod = llvm.parse_assembly(str(built))
        tuning = llvm.create_pipeline_tuning_options(3)
        if vectorize:
            tuning.loop_vectorization = tuning.slp_vectorization = True
        passes = llvm.create_pass_builder(machine, tuning)
        passes.getModulePassManager().run(mod, passes)
    else:  # an empty module of the same name: the engine loads the cached object for it
        mod = llvm.parse_assembly(f'; ModuleID = "{name}"\ntarget triple = "{triple}"\n')
    engine = llvm.create_mcjit_compiler(mod, machine)
    engine.set_object_cache(lambda _m, data: _write(path, data), lambda _m: cached)
    engine.finalize_object()
    return engine, path, cached is None


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _write(path: str, data: bytes) -> None:
    """Save the machine code atomically; a cache that cannot be written is skipped."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        try:  # a full disk: leave no partial file behind
            os.remove(tmp)
        except OSError:
            pass
