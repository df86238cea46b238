"""Child probe: TensorFlow imports a DLPack buffer 4 bytes off 64-byte alignment, then sums
it. Where the pitfall is present its kernels abort the interpreter (``IsAligned()``)."""

from __future__ import annotations


def main() -> None:
    import numpy as np
    import tensorflow as tf

    raw = np.zeros(4096 + 128, np.uint8)
    off = (-raw.ctypes.data) % 64 + 4
    t = tf.experimental.dlpack.from_dlpack(raw[off:off + 4096].view(np.float32).__dlpack__())
    tf.reduce_sum(t).numpy()


if __name__ == "__main__":
    main()
