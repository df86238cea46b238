"""The exceptions interop raises: every one is an InteropError and the builtin that fits;
and the one warning it emits, :class:`NarrowingWarning`."""

from __future__ import annotations


class InteropError(Exception):
    """Base class of every error raised by interop."""


class UnknownFrameworkError(InteropError, ValueError):
    """A target name that no registered framework answers to."""


class ArgumentError(InteropError, TypeError):
    """An argument of a public call that is not one of the values it takes (``copy=``)."""


class UnsupportedConversionError(InteropError, TypeError):
    """No path exists between the source and the target (dtype, rank or kind unsupported)."""


class ZeroCopyError(InteropError, BufferError):
    """``copy=False`` was asked but the conversion needs a copy; the message says why."""


class NullsError(InteropError, ValueError):
    """An Arrow array or column holds nulls, which a dense buffer cannot represent."""


class MalformedError(InteropError, ValueError):
    """A value breaks its own format's invariants (a sparse index out of range, index
    pointers that decrease): no framework is handed it."""


class TooLargeError(InteropError, MemoryError):
    """The result would need more memory than can be allocated (``format=`` densifying, or
    compressing the rows of, a sparse value of a huge shape)."""


class DeviceError(InteropError, ValueError):
    """The requested device does not exist here or cannot be reached by the target."""


class ProtocolError(InteropError, ValueError):
    """A producer broke its protocol (DLPack, array interface, CUDA Array Interface, Arrow)."""


class CapsuleConsumedError(ProtocolError, BufferError):
    """A DLPack capsule was already consumed; a capsule can be imported once only."""


class FrameworkMissingError(InteropError, ImportError):
    """The target framework is not installed."""


class NarrowingWarning(UserWarning):
    """A conversion narrowed a dtype as the target itself would (JAX with 64-bit types off:
    float64 -> float32, int64 -> int32, ...), with a copy. Turn it into an error with
    ``warnings.simplefilter("error", interop.NarrowingWarning)``."""
