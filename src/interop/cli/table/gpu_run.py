"""A device run's record: the GPU cells of a probe on a CUDA machine, with the device and
the date. ``--save-gpu`` writes it; the GPU section of the table is rendered from it."""

from __future__ import annotations

import json
from typing import Any

from ...devices import count_cuda_devices
from .columns import RETIRED, is_gpu_pair


def device_info() -> dict[str, Any]:
    """The CUDA device the GPU cells are probed on (device 0): its name, the NVIDIA driver,
    and the CUDA versions of the driver and of CuPy's runtime."""
    import subprocess

    import cupy

    rt = cupy.cuda.runtime
    name = rt.getDeviceProperties(0)["name"]
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=60)
        driver = smi.stdout.split("\n")[0].strip() or None
    except (OSError, subprocess.SubprocessError):
        driver = None

    def cuda(v: int) -> str:
        return f"{v // 1000}.{v % 1000 // 10}"

    return {"name": name.decode() if isinstance(name, bytes) else str(name),
            "count": count_cuda_devices(), "driver": driver,
            "cuda_driver": cuda(rt.driverGetVersion()),
            "cuda_runtime": cuda(rt.runtimeGetVersion())}


def gpu_record(data: dict[str, Any], device: dict[str, Any], date: str) -> dict[str, Any]:
    """The GPU cells of ``data`` (a probe on a CUDA machine), with the device and date: what
    ``--save-gpu`` writes and :func:`~.render.gpu_markdown` renders."""
    names = [n for n in data["sources"] if n not in RETIRED]
    return {"generated_by": "python -m interop table --save-gpu", "date": date,
            "device": device, "versions": data["versions"], "sample": data["sample"],
            "skipped": data["skipped"], "names": names,
            "pairs": [c for c in data["pairs"] if is_gpu_pair(c)]}


def load_gpu_record(path: str) -> dict[str, Any] | None:
    """The recorded device run at ``path``; ``None`` when none is recorded there."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
