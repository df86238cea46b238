"""The invariant checks of compressed sparse indices and list offsets in one pass each, as a
small compiled kernel: LLVM IR written with llvmlite (Numba's code generator, never Numba),
its machine code cached on disk beside the transpose's (:func:`interop.transpose.llvm.cache_dir`).

Two C-ABI functions per pair of index dtypes (``int32``/``int64``), each one loop over the
arrays, reading every element once, stopping at the first fault:

- ``csr_<p><i>(indptr, rows, indices, nnz, cols, out)``: ``indptr`` of ``rows + 1`` pointers
  from 0 to ``nnz``, never decreasing, never past ``nnz``; every index in ``[0, cols)``. Writes
  ``out[0]``: 1 where the indices rise strictly within each row (sorted and distinct), and
  ``out[1]``: the largest index (-1: none). Returns 0, or the fault's code (1: the first
  pointer is not 0; 2: the last is not ``nnz``; 3: a pointer decreases or passes ``nnz``;
  4: an index outside ``[0, cols)``).
- ``offsets_<o>(offsets, n, items)``: ``n`` offsets, the first at least 0, the last at most
  ``items``, never decreasing. Returns 0, or 1.

The callers (:mod:`interop.adapters.sparse_parts`, :mod:`interop.adapters.ragged`) call it
on host NumPy arrays of those dtypes, compact and aligned, and, on a fault, run their NumPy
check, which names it: the kernel decides nothing the NumPy check would not, and a message
is written once. The kernel is loaded by the second check of a process (the first takes
NumPy's passes, so a first conversion never waits for LLVM), and never where llvmlite is
absent; ``INTEROP_INDEX_KERNEL=0`` turns it off.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable
from typing import Any

from .base import installed

WIDTHS = (32, 64)
"""The widths of the index dtypes the kernel reads (``int32``, ``int64``)."""
_MODULE = "interop_index_checks"
_state: dict[str, Any] = {"asked": 0, "functions": None, "widths": None}
_lock = threading.Lock()


def _build(ir: Any) -> Any:
    """The IR module of every function."""
    i64 = ir.IntType(64)
    mod = ir.Module(name=_MODULE)

    def load(b: Any, ptr: Any, k: Any) -> Any:
        v = b.load(b.gep(ptr, [k]))
        return v if v.type == i64 else b.sext(v, i64)

    for pw in (32, 64):
        pt = ir.IntType(pw).as_pointer()
        for iw in (32, 64):
            it = ir.IntType(iw).as_pointer()
            fn = ir.Function(mod, ir.FunctionType(i64, [pt, i64, it, i64, i64,
                                                        i64.as_pointer()]), f"csr_{pw}_{iw}")
            _csr(ir, fn, load)
    for ow in (32, 64):
        ot = ir.IntType(ow).as_pointer()
        fn = ir.Function(mod, ir.FunctionType(i64, [ot, i64, i64]), f"offsets_{ow}")
        offsets, n, items = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        fail = fn.append_basic_block("fail")
        ir.IRBuilder(fail).ret(ir.Constant(i64, 1))
        ok0, head, body, done = (fn.append_basic_block(x) for x in ("ok0", "head", "body", "done"))
        first = load(b, offsets, ir.Constant(i64, 0))
        last = load(b, offsets, b.sub(n, ir.Constant(i64, 1)))
        b.cbranch(b.or_(b.icmp_signed("<", first, ir.Constant(i64, 0)),
                        b.icmp_signed(">", last, items)), fail, ok0)
        b.position_at_end(ok0)
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(i64, "i")
        i.add_incoming(ir.Constant(i64, 1), ok0)
        b.cbranch(b.icmp_signed("<", i, n), body, done)
        b.position_at_end(body)
        step = fn.append_basic_block("step")
        b.cbranch(b.icmp_signed("<", load(b, offsets, i), load(b, offsets, b.sub(
            i, ir.Constant(i64, 1)))), fail, step)
        b.position_at_end(step)
        i.add_incoming(b.add(i, ir.Constant(i64, 1)), step)
        b.branch(head)
        b.position_at_end(done)
        b.ret(ir.Constant(i64, 0))
    return mod


def _csr(ir: Any, fn: Any, load: Any) -> None:
    """The body of ``csr_<p><i>``: a pass over the pointers (each row's bounds, and the rows
    that start within the entries: a descent there is no fault), then one branch-free pass
    over the indices (out of range, descents, the largest), which LLVM vectorises."""
    i64 = ir.IntType(64)
    zero, one = ir.Constant(i64, 0), ir.Constant(i64, 1)
    indptr, rows, indices, nnz, cols, out = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    fail = {c: fn.append_basic_block(f"fail{c}") for c in (1, 2, 3, 4)}
    for c, blk in fail.items():
        ir.IRBuilder(blk).ret(ir.Constant(i64, c))

    def block(name: str) -> Any:
        return fn.append_basic_block(name)

    first_ok, last_ok = block("first_ok"), block("last_ok")
    b.cbranch(b.icmp_signed("!=", load(b, indptr, zero), zero), fail[1], first_ok)
    b.position_at_end(first_ok)
    b.cbranch(b.icmp_signed("!=", load(b, indptr, rows), nnz), fail[2], last_ok)
    b.position_at_end(last_ok)
    # pointers: a = indptr[r] <= e = indptr[r + 1] <= nnz; starts of non-empty rows inside
    rhead, rbody, rok, rstart, rnext, rdone = (block(n) for n in (
        "rhead", "rbody", "rok", "rstart", "rnext", "rdone"))
    b.branch(rhead)
    b.position_at_end(rhead)
    r, starts = b.phi(i64, "r"), b.phi(i64, "starts")
    r.add_incoming(zero, last_ok)
    starts.add_incoming(zero, last_ok)
    b.cbranch(b.icmp_signed("<", r, rows), rbody, rdone)
    b.position_at_end(rbody)
    a = load(b, indptr, r)
    r1 = b.add(r, one)
    e = load(b, indptr, r1)
    b.cbranch(b.or_(b.icmp_signed("<", e, a), b.icmp_signed(">", e, nnz)), fail[3], rok)
    b.position_at_end(rok)
    inside = b.and_(b.icmp_signed(">", a, zero), b.icmp_signed(">", e, a))
    b.cbranch(inside, rstart, rnext)
    b.position_at_end(rstart)  # a descent at a row's first entry is no fault: counted back
    down = b.icmp_signed("<=", load(b, indices, a), load(b, indices, b.sub(a, one)))
    counted = b.add(starts, b.zext(down, i64))
    b.branch(rnext)
    b.position_at_end(rnext)
    after = b.phi(i64, "after")
    after.add_incoming(starts, rok)
    after.add_incoming(counted, rstart)
    r.add_incoming(r1, rnext)
    starts.add_incoming(after, rnext)
    b.branch(rhead)
    b.position_at_end(rdone)
    # indices: one pass, no branch inside
    empty, some, khead, kbody, kdone, ok = (block(n) for n in (
        "empty", "some", "khead", "kbody", "kdone", "ok"))
    b.cbranch(b.icmp_signed(">", nnz, zero), some, empty)
    b.position_at_end(empty)
    b.store(one, out)
    b.store(ir.Constant(i64, -1), b.gep(out, [one]))
    b.ret(zero)
    b.position_at_end(some)
    v0 = load(b, indices, zero)
    bad0 = b.zext(b.icmp_unsigned(">=", v0, cols), i64)
    b.branch(khead)
    b.position_at_end(khead)
    k, bad, desc, top = (b.phi(i64, n) for n in ("k", "bad", "desc", "top"))
    k.add_incoming(one, some)
    bad.add_incoming(bad0, some)
    desc.add_incoming(zero, some)
    top.add_incoming(v0, some)
    b.cbranch(b.icmp_signed("<", k, nnz), kbody, kdone)
    b.position_at_end(kbody)
    v = load(b, indices, k)
    before = load(b, indices, b.sub(k, one))
    k.add_incoming(b.add(k, one), kbody)
    bad.add_incoming(b.or_(bad, b.zext(b.icmp_unsigned(">=", v, cols), i64)), kbody)
    desc.add_incoming(b.add(desc, b.zext(b.icmp_signed("<=", v, before), i64)), kbody)
    top.add_incoming(b.select(b.icmp_signed(">", v, top), v, top), kbody)
    b.branch(khead)
    b.position_at_end(kdone)
    b.cbranch(b.icmp_unsigned("!=", bad, zero), fail[4], ok)
    b.position_at_end(ok)
    b.store(b.zext(b.icmp_signed("==", desc, starts), i64), out)
    b.store(top, b.gep(out, [one]))
    b.ret(zero)


def _load() -> dict[str, Any]:
    """The functions (ctypes) by name: machine code from the cache, or compiled (and saved)."""
    from llvmlite import ir

    from ..transpose.llvm import compiled_engine

    engine, _, _ = compiled_engine(_MODULE, (__file__,), "index-checks", lambda: _build(ir),
                                   vectorize=True)
    p, i64 = ctypes.c_void_p, ctypes.c_int64
    csr = ctypes.CFUNCTYPE(i64, p, i64, p, i64, i64, p)
    offs = ctypes.CFUNCTYPE(i64, p, i64, i64)
    out: dict[str, Any] = {"engine": engine}
    for pw in (32, 64):
        for iw in (32, 64):
            out[f"csr_{pw}_{iw}"] = csr(engine.get_function_address(f"csr_{pw}_{iw}"))
        out[f"offsets_{pw}"] = offs(engine.get_function_address(f"offsets_{pw}"))
    return out


def functions() -> dict[str, Any] | None:
    """The kernel's functions, or ``None`` (the first check of the process, llvmlite absent,
    turned off, or failed to load: the NumPy check runs)."""
    got = _state["functions"]
    if got is not None:
        return got or None
    with _lock:
        if _state["functions"] is not None:
            return _state["functions"] or None
        _state["asked"] += 1
        if _state["asked"] < 2:
            return None
        if os.environ.get("INTEROP_INDEX_KERNEL") == "0" or not installed("llvmlite"):
            _state["functions"] = {}
            return None
        try:
            _state["functions"] = _load()
        except Exception:  # noqa: BLE001 - no kernel: the NumPy check runs, as without llvmlite
            _state["functions"] = {}
        return _state["functions"] or None


def _width(a: Any) -> int | None:
    """The index width the kernel reads ``a`` as: a host NumPy array of int32/int64 of native
    byte order, compact and aligned; ``None``: it cannot."""
    widths = _state["widths"]
    if widths is None:
        import numpy as np

        widths = _state["widths"] = {np.dtype(f"int{w}"): w for w in WIDTHS}
        _state["ndarray"] = np.ndarray
    w = widths.get(a.dtype) if _laid_out(a) else None
    return w


def _laid_out(a: Any) -> bool:
    """Whether ``a`` is a host NumPy array (no subclass: it may hold no host buffer of its
    own), compact and aligned."""
    if type(a) is not _state["ndarray"]:
        return False
    flags = a.flags
    return flags.c_contiguous and flags.aligned


def check_csr(indptr: Any, indices: Any, cols: int) -> tuple[bool, int] | None:
    """``(sorted and distinct, largest index or -1)`` of a valid 2-D compressed value whose
    ``indptr`` has ``rows + 1`` pointers; ``None`` where the kernel does not run or finds a
    fault (the caller's NumPy check then runs, and names it)."""
    check = csr_checker(indptr, indices)
    return None if check is None else check(indptr, indices, cols)


def csr_checker(indptr: Any, indices: Any) -> Callable[[Any, Any, int], Any] | None:
    """:func:`check_csr` for arrays of the dtypes of ``indptr`` and ``indices`` (the caller
    hands it no others), its kernel function chosen once; ``None`` where it does not run."""
    fns = functions()
    if fns is None:
        return None
    pw, iw = _width(indptr), _width(indices)
    if pw is None or iw is None:
        return None
    fn, laid_out, address = fns[f"csr_{pw}_{iw}"], _laid_out, _address
    pair, at = ctypes.c_int64 * 2, ctypes.addressof

    def check(indptr: Any, indices: Any, cols: int) -> tuple[bool, int] | None:
        if not (laid_out(indptr) and laid_out(indices)):
            return None
        out = pair()
        if fn(address(indptr), indptr.shape[0] - 1, address(indices), indices.shape[0], cols,
              at(out)):
            return None
        return bool(out[0]), out[1]

    return check


def _address(a: Any) -> int:
    """The address of a compact host NumPy array's first element: through the buffer protocol
    (a quarter of what NumPy's ``ctypes.data`` costs), or, for a read-only or empty array
    (which ctypes does not take), ``ctypes.data``."""
    try:
        return ctypes.addressof(_BYTE.from_buffer(a))
    except (TypeError, ValueError):  # read-only, or no bytes
        return a.ctypes.data


_BYTE = ctypes.c_char


def offsets_ok(offsets: Any, items: int) -> bool | None:
    """Whether one dimension of ``offsets`` (at least one) runs from 0 or more to at most
    ``items`` never decreasing; ``None`` where the kernel does not run (the caller checks)."""
    fns = functions()
    w = _width(offsets) if fns is not None else None
    if w is None or offsets.ndim != 1 or not offsets.shape[0]:
        return None
    return offsets_ok_at(_address(offsets), offsets.shape[0], w, items)


def offsets_ok_at(address: int, n: int, width: int, items: int) -> bool | None:
    """:func:`offsets_ok` of ``n`` (at least one) compact, aligned offsets of ``width`` bits at
    ``address`` in host memory (an Arrow offsets buffer, read by its address: NumPy's
    ``ctypes.data`` costs more than the check of a batch's offsets)."""
    fns = functions()
    if fns is None or n < 1:
        return None
    return not fns[f"offsets_{width}"](address, n, items)
