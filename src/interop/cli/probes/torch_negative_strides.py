"""Child probe: ``torch.from_dlpack`` of a NumPy array with negative strides.

Where the pitfall is present this aborts the interpreter; otherwise it exits normally (or
with a Python error, when torch refuses the buffer).
"""

from __future__ import annotations


def main() -> None:
    import numpy
    import torch

    torch.from_dlpack(numpy.arange(4.0)[::-1])


if __name__ == "__main__":
    main()
