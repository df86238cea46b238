"""One uniform description of a strided buffer, whatever protocol exported it."""

from __future__ import annotations

from typing import Any

from .record import record


@record(frozen=True)
class BufferView:
    """Pointer, shape, byte strides, dtype and device of a buffer, without owning it.

    ``dtype`` is a NumPy-style type string such as ``"<f4"``, ``"|b1"`` or ``"bfloat16"``.
    ``strides`` are in bytes. ``device`` is ``(kind, index)`` with kind ``"cpu"`` or ``"cuda"``.
    """

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    itemsize: int
    dtype: str
    device: tuple[str, int] = ("cpu", 0)
    readonly: bool = False
    owner: Any = None

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def extent(self) -> tuple[int, int]:
        """The half-open byte range ``[lo, hi)`` the elements occupy (empty if size 0)."""
        if self.size == 0:
            return (self.ptr, self.ptr)
        lo = hi = self.ptr
        for n, s in zip(self.shape, self.strides):
            if s < 0:
                lo += (n - 1) * s
            else:
                hi += (n - 1) * s
        return (lo, hi + self.itemsize)

    def layout_obstacles(self) -> list[str]:
        """Why this buffer is not compact row-major; empty when it is."""
        if self.size <= 1:
            return []
        out = []
        if any(s < 0 for n, s in zip(self.shape, self.strides) if n > 1):
            out.append(f"negative strides {self.strides}")
        if any(s == 0 for n, s in zip(self.shape, self.strides) if n > 1):
            out.append(f"broadcast (zero) strides {self.strides}")
        if not out and not self.is_c_contiguous():
            kind = "Fortran-order" if self.is_f_contiguous() else "non-contiguous"
            out.append(f"{kind} strides {self.strides} for shape {self.shape}")
        return out

    def is_c_contiguous(self) -> bool:
        return _dense(self.shape, self.strides, self.itemsize, reversed_order=True)

    def is_f_contiguous(self) -> bool:
        return _dense(self.shape, self.strides, self.itemsize, reversed_order=False)

    def has_negative_strides(self) -> bool:
        return any(s < 0 for n, s in zip(self.shape, self.strides) if n > 1)


def _dense(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int,
           reversed_order: bool) -> bool:
    if any(n == 0 for n in shape):
        return True
    pairs = list(zip(shape, strides))
    if reversed_order:
        pairs.reverse()
    expected = itemsize
    for n, s in pairs:
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Row-major byte strides for ``shape``."""
    out = []
    acc = itemsize
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))
