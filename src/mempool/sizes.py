"""Parse pool sizes: ``"8GiB"``, ``"512MB"``, ``"1.5 GB"``, ``"50%"``, ints and ``None``.

Sizes are rounded to multiples of 256 bytes, the alignment RMM's pool requires: byte
counts are rounded up, percentages of device memory are rounded down (so ``"100%"``
never exceeds the device).
"""

from __future__ import annotations

import math
import re

from .errors import ConfigError

__all__ = ["ALIGNMENT", "ACCEPTED_FORMS", "format_size", "is_percent", "parse_size"]

ALIGNMENT = 256

ACCEPTED_FORMS = (
    "an int number of bytes, None, or a string such as '8GiB', '512MiB', '512MB', "
    "'1.5 GB', '1024' or '50%' (of the device's total memory); units B, KB, MB, GB, TB "
    "(powers of 1000) and KiB, MiB, GiB, TiB (powers of 1024), case-insensitive"
)

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}

_SIZE_RE = re.compile(
    r"^\s*(?P<num>[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(?P<unit>[A-Za-z%]*)\s*$"
)


def _align_up(n: int) -> int:
    return -(-n // ALIGNMENT) * ALIGNMENT


def _align_down(n: int) -> int:
    return n // ALIGNMENT * ALIGNMENT


def _bad(value: object, what: str, why: str = "") -> ConfigError:
    detail = f" ({why})" if why else ""
    return ConfigError(f"{what}={value!r} is not a valid size{detail}; use {ACCEPTED_FORMS}")


def is_percent(value: object) -> bool:
    """True if *value* is a string like ``"50%"`` (a share of device memory)."""
    return isinstance(value, str) and value.strip().endswith("%")


def parse_size(value: object, *, total: int | None = None, what: str = "size") -> int | None:
    """Return *value* as a number of bytes (a multiple of 256), or ``None`` for ``None``.

    ``"50%"`` is half of *total*; when *total* is ``None`` it is the total memory of the
    current CUDA device, and without a device that raises
    :class:`~mempool.errors.NoDeviceError`. Anything unparsable raises
    :class:`~mempool.errors.ConfigError` naming the value and the accepted forms.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise _bad(value, what, "a bool is not a size")
    if isinstance(value, int):
        if value < 0:
            raise _bad(value, what, "negative")
        return _align_up(value)
    if isinstance(value, float):
        if not math.isfinite(value) or value < 0:
            raise _bad(value, what, "not a finite, non-negative number")
        return _align_up(math.ceil(value))
    if not isinstance(value, str):
        raise _bad(value, what, f"a {type(value).__name__} is not a size")
    match = _SIZE_RE.match(value)
    if match is None:
        raise _bad(value, what)
    number = float(match.group("num"))
    unit = match.group("unit").lower()
    if unit == "%":
        if not 0 < number <= 100:
            raise _bad(value, what, "a percentage must be in (0, 100]")
        if total is None:
            from .device import current_device_total_memory

            total = current_device_total_memory()
        return _align_down(int(total * number / 100))
    if unit not in _UNITS:
        raise _bad(value, what, f"unknown unit {match.group('unit')!r}")
    return _align_up(math.ceil(number * _UNITS[unit]))


def check_size_syntax(value: object, *, what: str = "size") -> None:
    """Raise :class:`ConfigError` if *value* cannot be a size; never touches a device."""
    parse_size(value, total=100 * ALIGNMENT, what=what)


def format_size(nbytes: int | None) -> str:
    """Human-readable bytes: ``8589934592`` -> ``"8.0 GiB"``; ``None`` -> ``"RMM default"``."""
    if nbytes is None:
        return "RMM default"
    size = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"
