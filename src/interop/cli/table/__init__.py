"""``python -m interop table``: the live conversion matrix of this machine.

Every cell is a probe, never a guess: a deterministic sample (float32, 1024 elements,
64-byte aligned) is built in the source framework (:mod:`.samples`), converted with
:func:`interop.to_framework`, and a cell is zero-copy only when proved independently of
interop (:mod:`.probing`, by :mod:`interop.cli.memory`): the result's bytes overlap the
source's by each framework's own accessor, and a write through one side is read back
through the other's own API (on a GPU, device cells are proved by the accessors' pointers
and extents). The plan (:func:`interop.explain`) gives the reason for every copy; the raised
:class:`~interop.errors.InteropError` gives the reason for every unsupported cell.
Frameworks that are not installed, and GPU rows and columns on a machine without a CUDA
device, say "not probed here". A retired framework interop has no adapter for (MXNet) has a
row and a column that say why (:mod:`.columns`).

The rendered table (``--markdown``, :mod:`.render`) holds the CPU pairs of the machine that
ran it and a GPU section whose cells come only from a device run (:mod:`.gpu_run`): this
machine's probe when it has a CUDA device (``--save-gpu FILE`` records it), else a recorded
run (``--gpu-cells FILE``), else a line saying that none is recorded. :mod:`.parse` reads a
rendered table back.

TensorFlow and PaddlePaddle are probed in the same process: paddle is imported first,
because importing it after tensorflow segfaults (paddlepaddle 3.3.1, tensorflow 2.21).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ...devices import cuda_devices
from .cells import COPY, NOT_PROBED, NOT_SUPPORTED, UNSUPPORTED, ZERO_COPY
from .columns import (
    CPU,
    GPU,
    OPTIONAL,
    PACKAGES,
    RETIRED,
    host_side,
    is_gpu_pair,
    package_installed,
)
from .gpu_run import device_info, gpu_record, load_gpu_record
from .parse import frameworks_of, parse_markdown
from .probing import NOT_SEEN, build, pair, probe
from .render import (
    GPU_CELLS,
    GPU_HEADING,
    REGENERATE,
    gpu_markdown,
    markdown,
    text,
    with_gpu_section,
)
from .samples import LAYOUTS, make_sample

__all__ = ["COPY", "CPU", "GPU", "GPU_CELLS", "GPU_HEADING", "LAYOUTS", "NOT_PROBED",
           "NOT_SEEN", "NOT_SUPPORTED", "OPTIONAL", "PACKAGES", "REGENERATE", "RETIRED",
           "UNSUPPORTED", "ZERO_COPY", "build", "cuda_devices", "device_info", "frameworks_of",
           "gpu_markdown", "gpu_record", "host_side", "is_gpu_pair", "load_gpu_record", "main",
           "make_sample", "markdown", "package_installed", "pair", "parse_markdown", "probe",
           "text", "with_gpu_section"]


def _device_run(data: dict[str, Any], n_gpu: int, recorded: str | None) -> dict[str, Any] | None:
    """The GPU section's run: this probe's on a CUDA machine, else the one ``recorded``."""
    if n_gpu:
        import datetime

        today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
        return gpu_record(data, device_info(), today)
    return load_gpu_record(recorded) if recorded else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m interop table", description=__doc__.split("\n")[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--markdown", action="store_true", help="Markdown with a legend and notes")
    g.add_argument("--json", action="store_true", help="every cell as JSON")
    p.add_argument("--skip", default="", metavar="NAMES",
                   help=f"comma-separated frameworks to leave unprobed (of {', '.join(OPTIONAL)})")
    p.add_argument("--gpu-cells", metavar="FILE",
                   help="on a machine without a CUDA device, render the GPU section from this "
                        f"recorded device run (e.g. {GPU_CELLS}; a missing file: none recorded)")
    p.add_argument("--save-gpu", metavar="FILE",
                   help="record this machine's GPU cells and device in FILE (needs a CUDA device)")
    args = p.parse_args(argv)
    skip = tuple(n.strip() for n in args.skip.split(",") if n.strip())
    unknown = [n for n in skip if n not in OPTIONAL]
    if unknown:
        p.error(f"--skip takes {', '.join(OPTIONAL)}; got {', '.join(unknown)}")
    n_gpu, why = cuda_devices()
    if args.save_gpu and not n_gpu:
        p.error(f"--save-gpu needs a CUDA device: {why}")
    data = build(gpu=(n_gpu, why), skip=skip)
    if args.save_gpu or args.markdown:
        record = _device_run(data, n_gpu, args.gpu_cells)
    if args.save_gpu:
        with open(args.save_gpu, "w") as f:
            json.dump(record, f, indent=1)
            f.write("\n")
    if args.json:
        print(json.dumps(data, indent=2))
    elif args.markdown:
        sys.stdout.write(markdown(data, record))
    else:
        sys.stdout.write(text(data))
    return 0
