"""Child probe: paddle's pitfalls, in one process.

Prints a :class:`~interop.cli.probes.Report` of ``paddle-negative-strides``,
``paddle-readonly``, ``paddle-uint16-bfloat16`` and ``paddle-dlpack-device``.
"""

from __future__ import annotations

from typing import Any

from . import Report, report_checks


def negative_strides(report: Report, paddle: Any) -> None:
    import numpy as np

    import interop
    from interop.cli.buffers import aligned

    seen = []
    for n in (2, 4):
        src = aligned(n, "float64")[::-1]
        try:
            got = paddle.utils.dlpack.from_dlpack(src).numpy()
            if not np.array_equal(got, src):
                seen.append(f"numpy.arange({n}.0)[::-1] came back as {got.tolist()}")
        except Exception as e:
            seen.append(f"numpy.arange({n}.0)[::-1] raised {type(e).__name__}")
    plan = interop.explain(aligned(4, "float64")[::-1], "paddle")
    report.add("paddle-negative-strides", bool(seen),
               "paddle.utils.dlpack.from_dlpack of " + "; of ".join(seen) if seen
               else "negative strides were imported correctly",
               "guarded: interop copies instead (copy=False raises ZeroCopyError)"
               if plan.supported and not plan.zero_copy else "NOT guarded")


def readonly(report: Report, paddle: Any) -> None:
    import interop
    from interop.cli.buffers import aligned

    a = aligned(4)
    a.flags.writeable = False
    t = paddle.utils.dlpack.from_dlpack(a)
    t[0] = 1.0  # writes into our own throw-away array
    report.add("paddle-readonly", a[0] == 1.0,
               "a write through paddle.utils.dlpack.from_dlpack(read-only array) changed the "
               "array",
               "reported: the plan records it as a hazard" if interop.explain(a, "paddle").hazards
               else "NOT reported by the plan")


def uint16_bfloat16(report: Report, paddle: Any) -> None:
    import interop
    from interop.cli.buffers import aligned

    u = paddle.utils.dlpack.from_dlpack(aligned(4, "uint16"))
    plan = interop.explain(aligned(4, "uint16"), "paddle")
    report.add("paddle-uint16-bfloat16", "bfloat16" in str(u.dtype),
               f"paddle.utils.dlpack.from_dlpack(uint16 array) gave a {u.dtype} tensor",
               "guarded: interop refuses uint16 targets (UnsupportedConversionError)"
               if not plan.supported else "NOT guarded")


def dlpack_device(report: Report, paddle: Any) -> None:
    from interop.api import REGISTRY

    dev = paddle.arange(4, dtype="float32").__dlpack_device__()
    ours = REGISTRY.adapters["paddle"].export_dlpack(paddle.arange(4, dtype="float32"))
    report.add("paddle-dlpack-device", not isinstance(dev[1], int),
               f"Tensor.__dlpack_device__() returned {tuple(dev)!r} (jax.dlpack.from_dlpack "
               "fails on it)",
               "guarded: interop's producer reports " + repr(ours.__dlpack_device__()))


CHECKS = (negative_strides, readonly, uint16_bfloat16, dlpack_device)


def main() -> None:
    report_checks("paddle", CHECKS)


if __name__ == "__main__":
    main()
