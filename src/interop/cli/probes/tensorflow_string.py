"""Child probe: ``Tensor.__dlpack__`` of a ``tf.string`` tensor, which aborts the interpreter
where the pitfall is present."""

from __future__ import annotations


def main() -> None:
    import tensorflow as tf

    tf.constant(["a"]).__dlpack__()


if __name__ == "__main__":
    main()
