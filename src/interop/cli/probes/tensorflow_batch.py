"""Child probe: TensorFlow's pitfalls that leave the interpreter alive, in one process.

Prints a :class:`~interop.cli.probes.Report` of ``tensorflow-numpy-copies``,
``tensorflow-bfloat16-writable``, ``tensorflow-non-compact``, and interop's guards for
``tensorflow-misaligned-abort``, ``tensorflow-string-dlpack`` and ``paddle-after-tensorflow``
(whose own probes kill their process; explaining a conversion to TensorFlow may import it,
so these guards are checked here, not in the doctor's process).
"""

from __future__ import annotations

import sys
from typing import Any

from . import Report, report_checks


def numpy_copies(report: Report, tf: Any) -> None:
    import interop
    from interop.protocols import dlpack

    t = tf.range(1024, dtype=tf.float32)
    ptr = dlpack.inspect_capsule(tf.experimental.dlpack.to_dlpack(t)).view.ptr
    a = t.numpy()
    r = interop.to_framework(t, "numpy")
    report.add("tensorflow-numpy-copies", a.ctypes.data != ptr,
               "Tensor.numpy() returned an array at another address than the tensor's buffer",
               "avoided: interop uses numpy.asarray, a zero-copy read-only view"
               if r.ctypes.data == ptr and not r.flags.writeable else "NOT avoided")


def bfloat16_writable(report: Report, tf: Any) -> None:
    import numpy as np

    import interop

    b = tf.cast(tf.range(1024, dtype=tf.float32), tf.bfloat16)
    report.add("tensorflow-bfloat16-writable", np.asarray(b).flags.writeable,
               "numpy.asarray(bfloat16 tensor) is a writable view of the immutable tensor",
               "guarded: interop marks the view read-only"
               if not interop.to_framework(b, "numpy").flags.writeable else "NOT guarded")


def non_compact(report: Report, tf: Any) -> None:
    import interop
    from interop.cli.buffers import aligned

    try:
        tf.experimental.dlpack.from_dlpack(aligned(64, "float64")[::2].__dlpack__())
        refused = ""
    except Exception as e:
        refused = type(e).__name__
    plan = interop.explain(aligned(64, "float64")[::2], "tensorflow")
    report.add("tensorflow-non-compact", bool(refused),
               f"tf.experimental.dlpack.from_dlpack of a strided view raised {refused}"
               if refused else "a strided view was accepted",
               "guarded: interop makes one compact copy (copy=False raises ZeroCopyError)"
               if plan.supported and not plan.zero_copy else "NOT guarded")


def misaligned_guard(report: Report, tf: Any) -> None:
    import interop
    from interop.cli.buffers import misaligned

    plan = interop.explain(misaligned(), "tensorflow")
    report.add("tensorflow-misaligned-abort", True, "",
               "guarded: interop copies such buffers (copy=False raises ZeroCopyError)"
               if not plan.zero_copy and any("aligned" in r for r in plan.reasons)
               else "NOT guarded: the plan claims zero-copy")


def string_guard(report: Report, tf: Any) -> None:
    import interop
    from interop.errors import UnsupportedConversionError

    try:
        interop.to_framework(tf.constant(["a"]), "torch")
        guard = "NOT guarded: interop handed a string tensor on"
    except UnsupportedConversionError:
        guard = "guarded: interop refuses string tensors before calling __dlpack__"
    report.add("tensorflow-string-dlpack", True, "", guard)


def paddle_after_tensorflow_guard(report: Report, tf: Any) -> None:
    import interop
    from interop.cli.buffers import aligned
    from interop.errors import UnsupportedConversionError

    try:
        interop.to_framework(aligned(4, "float64"), "paddle")
        guard = "NOT guarded: interop imported paddle after tensorflow"
    except UnsupportedConversionError:
        guard = ("guarded: interop refuses (UnsupportedConversionError) instead of importing "
                 "paddle" if "paddle" not in sys.modules else "NOT guarded")
    report.add("paddle-after-tensorflow", True, "", guard)


CHECKS = (numpy_copies, bfloat16_writable, non_compact, misaligned_guard, string_guard,
          paddle_after_tensorflow_guard)


def main() -> None:
    report_checks("tensorflow", CHECKS)


if __name__ == "__main__":
    main()
