"""``python -m interop table``: the live conversion matrix of this machine.

Every cell is a probe, never a guess: a deterministic sample (float32, 1024 elements,
64-byte aligned) is built in the source framework, converted with
:func:`interop.to_framework`, and a cell is zero-copy only when proved independently of
interop (:mod:`interop.cli.memory`): the result's bytes overlap the source's by each
framework's own accessor, and a write through one side is read back through the other's own
API (on a GPU, device cells are proved by the accessors' pointers and extents). The plan
(:func:`interop.explain`) gives the reason for every copy; the raised
:class:`~interop.errors.InteropError` gives the reason for every unsupported cell.
Frameworks that are not installed, and GPU rows and columns on a machine without a CUDA
device, say "not probed here". A retired framework interop has no adapter for (MXNet) has a
row and a column that say why.

The rendered table (``--markdown``) holds the CPU pairs of the machine that ran it and a GPU
section whose cells come only from a device run: this machine's probe when it has a CUDA
device (``--save-gpu FILE`` records it), else a recorded run (``--gpu-cells FILE``), else a
line saying that none is recorded.

TensorFlow and PaddlePaddle are probed in the same process: paddle is imported first,
because importing it after tensorflow segfaults (paddlepaddle 3.3.1, tensorflow 2.21).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from collections.abc import Callable
from typing import Any

from ..devices import cuda_devices
from ..frameworks.base import installed
from ..versions import package_version
from . import memory

CPU = ["numpy", "torch", "jax", "tensorflow", "paddle", "pyarrow", "pandas", "polars", "dlpack"]
GPU = ["cupy", "numba", "cudf", "torch-cuda", "jax-gpu", "tensorflow-gpu", "paddle-gpu"]
OPTIONAL = ("tensorflow", "paddle")
"""Frameworks whose tests run in their own pytest process (``-m tensorflow``, ``-m paddle``);
``--skip`` leaves them out of a probe."""
RETIRED = {"mxnet": "MXNet is retired upstream (Apache attic, 2023) and needs NumPy < 2"}
"""Frameworks interop deliberately has no adapter for, and why."""
N = 1024
SAMPLE = f"float32, {N} elements (0, 1, 2, ...), 64-byte aligned, C-contiguous"

PACKAGES = {"numpy": "numpy", "torch": "torch", "jax": "jax", "pyarrow": "pyarrow",
            "pandas": "pandas", "polars": "polars", "dlpack": "numpy", "cupy": "cupy",
            "numba": "numba", "cudf": "cudf", "torch-cuda": "torch", "jax-gpu": "jax",
            "tensorflow": "tensorflow", "paddle": "paddle", "tensorflow-gpu": "tensorflow",
            "paddle-gpu": "paddle"}

ZERO_COPY, COPY, UNSUPPORTED, NOT_PROBED = "zero-copy", "copy", "unsupported", "not probed"
NOT_SUPPORTED = "not supported"

Maker = Callable[[], "tuple[Any, Any]"]
"""Builds a fresh sample: ``(value, origin)``; ``origin`` is what the result is compared
with (the value itself, or the NumPy array behind a raw DLPack capsule)."""


# ---- samples ----------------------------------------------------------------------------
def _base(n: int = N, dtype: str = "float32") -> Any:
    import numpy as np

    from ..host import fresh_copy

    return fresh_copy(np.arange(n, dtype=dtype))


def _same(x: Any) -> tuple[Any, Any]:
    return x, x


def make_sample(name: str) -> tuple[Any, Any]:
    """The probe sample of framework ``name`` (CPU frameworks and, with a GPU, GPU ones)."""
    b = _base()
    if name == "numpy":
        return _same(b)
    if name == "torch":
        import torch

        return _same(torch.from_numpy(b))
    if name == "jax":  # on the CPU: on a GPU host JAX's default device is the GPU (jax-gpu)
        import jax
        import jax.numpy as jnp

        return _same(jnp.arange(N, dtype=jnp.float32, device=jax.devices("cpu")[0]))
    if name == "tensorflow":
        import tensorflow as tf

        with tf.device("/CPU:0"):
            return _same(tf.range(N, dtype=tf.float32))
    if name == "paddle":
        import paddle

        return _same(paddle.arange(N, dtype="float32").cpu())
    if name == "pyarrow":
        import pyarrow as pa

        return _same(pa.array(b))
    if name == "pandas":
        import pandas as pd

        return _same(pd.Series(b, copy=False))
    if name == "polars":
        import polars as pl
        import pyarrow as pa

        return _same(pl.Series("x", pa.array(b)))
    if name == "dlpack":
        return b.__dlpack__(), b
    if name == "cupy":
        import cupy

        return _same(cupy.arange(N, dtype=cupy.float32))
    if name == "numba":
        from numba import cuda

        return _same(cuda.to_device(b))
    if name == "cudf":
        import cudf

        return _same(cudf.Series(b))
    if name == "torch-cuda":
        import torch

        return _same(torch.arange(N, dtype=torch.float32, device="cuda"))
    if name == "jax-gpu":
        import jax

        return _same(jax.device_put(b, jax.devices("gpu")[0]))
    if name == "tensorflow-gpu":
        import tensorflow as tf

        with tf.device("/GPU:0"):
            return _same(tf.range(N, dtype=tf.float32))
    if name == "paddle-gpu":
        import paddle

        return _same(paddle.arange(N, dtype="float32").cuda(0))
    raise ValueError(f"no sample for {name!r}")


def _misaligned() -> tuple[Any, Any]:
    import numpy as np

    raw = _base(N * 4 + 64, "uint8")
    return _same(raw[4:4 + N * 4].view(np.float32))


def _readonly() -> tuple[Any, Any]:
    b = _base()
    b.flags.writeable = False
    return _same(b)


def _arrow(kind: str) -> Callable[[], tuple[Any, Any]]:
    def make() -> tuple[Any, Any]:
        import pyarrow as pa

        if kind == "nulls":
            return _same(pa.array([1.0, None] * (N // 2), type=pa.float32()))
        if kind == "chunked":
            return _same(pa.chunked_array([pa.array(_base(N // 2)), pa.array(_base(N // 2))]))
        return _same(pa.array(["a", "b"] * (N // 2)))

    return make


def _np(fn: Callable[[], Any]) -> Callable[[], tuple[Any, Any]]:
    return lambda: _same(fn())


def _fortran() -> Any:
    import numpy as np

    return np.asfortranarray(_base().reshape(32, 32))


def _paddle_reversed() -> tuple[Any, Any]:
    import paddle

    return _same(paddle.arange(N, dtype="float32").cpu()[::-1])


def _bool() -> Any:
    import numpy as np

    from ..host import fresh_copy

    return fresh_copy(np.arange(N) % 3 == 0)


LAYOUTS: list[tuple[str, str, Callable[[], tuple[Any, Any]]]] = [
    ("numpy strided [::2]", "numpy", _np(lambda: _base(2 * N)[::2])),
    ("numpy negative strides [::-1]", "numpy", _np(lambda: _base()[::-1])),
    ("numpy misaligned (+4 bytes)", "numpy", _misaligned),
    ("numpy read-only", "numpy", _readonly),
    ("numpy Fortran-order 32x32", "numpy", _np(_fortran)),
    ("numpy bool", "numpy", _np(_bool)),
    ("numpy float64", "numpy", _np(lambda: _base(dtype="float64"))),
    ("numpy complex64", "numpy", _np(lambda: _base(dtype="complex64"))),
    ("numpy uint16", "numpy", _np(lambda: _base(dtype="uint16"))),
    ("paddle negative strides [::-1]", "paddle", _paddle_reversed),
    ("pyarrow with nulls", "pyarrow", _arrow("nulls")),
    ("pyarrow ChunkedArray, 2 chunks", "pyarrow", _arrow("chunked")),
    ("pyarrow string", "pyarrow", _arrow("string")),
]


# ---- probing ----------------------------------------------------------------------------
def _clean(text: str) -> str:
    """A reason without run-specific details (addresses), on one line, without pipes."""
    text = re.sub(r"0x[0-9a-fA-F]+", "0x...", str(text))
    return " ".join(text.split()).replace("|", "/")


def _installed(name: str) -> bool:
    return installed(PACKAGES[name])


def _cell(source: str, target: str, status: str, reason: str | None = None,
          hazards: tuple[str, ...] = (), steps: tuple[str, ...] = (),
          plan_agrees: bool = True, proof: str | None = None) -> dict[str, Any]:
    return {"source": source, "target": target, "status": status, "reason": reason,
            "hazards": [_clean(h) for h in hazards], "steps": list(steps),
            "plan_agrees": plan_agrees, "proof": proof}


DEVICE_PROOF = "pointers and extents (device memory)"
NOT_SEEN = "the result's bytes overlap the source's, but a write through one was not seen " \
           "through the other"


def _shared(origin: Any, result: Any) -> tuple[bool, str | None]:
    """``(overlap, proof)`` for a host result: whether its bytes overlap the source's by the
    frameworks' own accessors, and how a write then proved the sharing (None: not seen)."""
    if result is origin:
        return True, "the same object"
    if not memory.overlap(origin, result):
        return False, None
    if not (memory.on_host(origin) and memory.on_host(result)):  # a JAX default GPU device
        return True, DEVICE_PROOF
    side = memory.write_proof(origin, memory.host_result(result))
    return True, side and {
        "result": "pointers; a write through the result read back through the source",
        "source": "pointers; a write through the source read back through the result",
        "raw": "pointers; neither side is writable: a raw write at the source's address "
               "read back through the result"}[side]


def probe(source: str, target: str, make: Callable[[], tuple[Any, Any]]) -> dict[str, Any]:
    """Convert a fresh sample of ``source`` to ``target`` and classify what happened."""
    import interop
    from interop.errors import InteropError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            plan = interop.explain(make()[0], target)
        except InteropError as e:
            return _cell(source, target, UNSUPPORTED, _clean(e))
        steps = tuple(str(s) for s in plan.steps)
        value, origin = make()
        try:
            result = interop.to_framework(value, target)
        except InteropError as e:
            return _cell(source, target, UNSUPPORTED, _clean(e), plan.hazards, steps,
                         plan_agrees=not plan.supported)
        except Exception as e:  # a framework error interop did not turn into its own
            return _cell(source, target, UNSUPPORTED,
                         _clean(f"the framework raised {type(e).__name__}: {e}"),
                         plan.hazards, steps, plan_agrees=False)
        overlapping, proof = _shared(origin, result)
    if overlapping and proof:
        return _cell(source, target, ZERO_COPY, None, plan.hazards, steps,
                     plan_agrees=plan.zero_copy, proof=proof)
    reason = "; ".join(_clean(r) for r in plan.reasons) or (
        NOT_SEEN if overlapping else
        "the plan claimed zero-copy, but the result has its own buffer")
    return _cell(source, target, COPY, reason, plan.hazards, steps,
                 plan_agrees=not plan.zero_copy)


def _import_order(skip: tuple[str, ...]) -> None:
    """Import paddle before tensorflow when both will be probed (the other order segfaults)."""
    if ("paddle" in skip or "tensorflow" in skip or "paddle" in sys.modules
            or "tensorflow" in sys.modules or not (_installed("paddle")
                                                   and _installed("tensorflow"))):
        return
    try:
        import paddle  # noqa: F401
    except Exception:  # a broken paddle: its cells report it
        pass


def build(gpu: tuple[int, str] | None = None, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """Probe every pair and every layout; a JSON-ready dict.

    ``skip``: frameworks (of :data:`OPTIONAL`) left unprobed, and never imported.
    """
    import interop

    n_gpu, gpu_reason = gpu if gpu is not None else cuda_devices()
    skip = tuple(skip)
    _import_order(skip)
    versions = {f["name"]: f["version"] or (package_version(f["name"]) if f["importable"]
                                            else None)
                for f in interop.frameworks()}
    names = CPU + list(RETIRED) + GPU
    pairs = []
    for s in names:
        for t in names:
            pairs.append(_pair(s, t, n_gpu, skip))
    layouts = []
    for label, source, make in LAYOUTS:
        for t in CPU:
            skipped = [n for n in (source, t) if PACKAGES[n] in skip]
            if skipped:
                cell = _cell(source, t, NOT_PROBED, f"not probed here (skipped: {skipped[0]})")
            elif not (_installed(source) and _installed(t)):
                missing = source if not _installed(source) else t
                cell = _cell(source, t, NOT_PROBED, f"{missing} is not installed")
            else:
                cell = probe(source, t, make)
            cell["label"] = label
            layouts.append(cell)
    return {"generated_by": "python -m interop table", "sample": SAMPLE,
            "versions": versions, "cuda": f"{n_gpu} device(s)" if n_gpu else "no CUDA device",
            "cuda_detail": gpu_reason, "skipped": list(skip),
            "sources": names, "targets": names, "pairs": pairs, "layouts": layouts}


_GPU_TARGET = {"cupy": ("cupy", None), "numba": ("numba", None), "cudf": ("cudf", None),
               "torch-cuda": ("torch", "cuda"), "jax-gpu": ("jax", "cuda"),
               "tensorflow-gpu": ("tensorflow", "cuda"), "paddle-gpu": ("paddle", "cuda")}


def _pair(s: str, t: str, n_gpu: int, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    for name in (s, t):
        if name in RETIRED:
            return _cell(s, t, NOT_SUPPORTED, RETIRED[name])
    if (s in GPU or t in GPU) and not n_gpu:
        return _cell(s, t, NOT_PROBED, "not probed here (no CUDA device)")
    for name in (s, t):
        if PACKAGES[name] in skip:
            return _cell(s, t, NOT_PROBED, f"not probed here (skipped: {PACKAGES[name]})")
        if not _installed(name):
            return _cell(s, t, NOT_PROBED, f"not probed here ({PACKAGES[name]} is not installed)")
    if t in GPU:  # with a GPU: ask interop for the GPU framework / device, live
        name, device = _GPU_TARGET[t]

        def to_gpu(x: Any) -> Any:
            import interop

            return interop.to_framework(x, name, device=device)

        return _probe_gpu(s, t, to_gpu)
    return probe(s, t, lambda: make_sample(s))


def _probe_gpu(s: str, t: str, convert: Callable[[Any], Any]) -> dict[str, Any]:
    try:
        value, origin = make_sample(s)
        result = convert(value)
    except Exception as e:
        return _cell(s, t, UNSUPPORTED, _clean(f"{type(e).__name__}: {e}"))
    if result is origin or memory.overlap(origin, result):  # device memory: by accessors
        return _cell(s, t, ZERO_COPY, proof=DEVICE_PROOF)
    return _cell(s, t, COPY, "the result has its own buffer (moving between devices copies)")


# ---- rendering --------------------------------------------------------------------------
LEGEND = [
    ("zero-copy", "the result uses the source's buffer, proved on a live sample without "
                  "interop: the bytes overlap by each framework's own accessor, and a write "
                  "through one side is read back through the other (device cells: accessors' "
                  "pointers and extents)"),
    ("copy", "the conversion works but copies once; the note says why (from `interop.explain`)"),
    ("unsupported", "`interop.to_framework` raises; the note is the error it raises"),
    ("not probed", "the framework is not installed or needs a CUDA device this machine lacks; "
                   "never a guess"),
    ("not supported", "a framework interop deliberately has no adapter for; the note says why"),
    ("hazard", "converts, but the plan records a hazard (a note says which)"),
]


class _Notes:
    def __init__(self, prefix: str = "") -> None:
        self.texts: list[str] = []
        self.prefix = prefix

    def ref(self, text: str) -> str:
        if text not in self.texts:
            self.texts.append(text)
        return f"[^{self.prefix}{self.texts.index(text) + 1}]"

    def lines(self) -> list[str]:
        return [f"[^{self.prefix}{i}]: {t}" for i, t in enumerate(self.texts, 1)]


def _label(cell: dict[str, Any], notes: _Notes) -> str:
    out = cell["status"]
    if cell["reason"]:
        out += " " + notes.ref(cell["reason"])
    for h in cell["hazards"]:
        out += " hazard " + notes.ref(h)
    if not cell.get("plan_agrees", True):
        out += " " + notes.ref("interop.explain predicted a different outcome for this cell "
                               "than the probe observed (a bug: please report it)")
    return out


def _grid(rows: list[str], cols: list[str], cells: dict[tuple[str, str], str],
          corner: str) -> list[str]:
    out = ["| " + corner + " | " + " | ".join(cols) + " |",
           "|" + "---|" * (len(cols) + 1)]
    for r in rows:
        out.append(f"| **{r}** | " + " | ".join(cells[(r, c)] for c in cols) + " |")
    return out


def markdown(data: dict[str, Any], gpu: dict[str, Any] | None = None) -> str:
    """The table as Markdown, with a legend and the reasons as footnotes: the CPU pairs of
    ``data``, then the GPU section rendered from ``gpu``, a device run's record
    (:func:`gpu_record`; ``None``: no device run is recorded)."""
    notes = _Notes()
    vers = ", ".join(f"{k} {v}" for k, v in sorted(data["versions"].items()) if v)
    lines = [
        "# Conversion table",
        "",
        f"<!-- Generated by `{REGENERATE}`. "
        "Do not edit by hand: tests/test_table.py compares it with a fresh probe. -->",
        "",
        "Generated by `python -m interop table --markdown` from live probes on the machine "
        "that ran it; run the command to see yours. Each cell converts a sample with "
        "`interop.to_framework(x, target)` (default `copy=None`) and checks the result "
        "against the source by each framework's own data pointers and a write read back on "
        "the other side.",
        "",
        f"- Sample: {data['sample']}.",
        f"- Probed with: {vers}.",
        f"- CUDA: {data['cuda']}.",
        "",
        "Legend:",
        "",
    ]
    lines += [f"- **{k}**: {v}" for k, v in LEGEND]
    lines += ["", "## Every pair", "",
              "Rows are sources, columns are targets; GPU pairs are in their own section "
              "below, probed on a CUDA machine.", ""]
    cells = {(c["source"], c["target"]): _label(c, notes) for c in data["pairs"]
             if c["source"] not in GPU and c["target"] not in GPU}
    lines += _grid(_host_side(data["sources"]), _host_side(data["targets"]), cells,
                   "source \\ target")
    lines += ["", "## Layouts and dtypes", "",
              "The same probe with samples that are not plain aligned float32 vectors.", ""]
    rows = list(dict.fromkeys(c["label"] for c in data["layouts"]))
    cells = {(c["label"], c["target"]): _label(c, notes) for c in data["layouts"]}
    lines += _grid(rows, CPU, cells, "sample \\ target")
    lines += ["", "## Notes", ""] + notes.lines()
    return "\n".join(lines) + "\n\n" + gpu_markdown(gpu)


def text(data: dict[str, Any]) -> str:
    """A plain-text grid for the terminal, notes numbered below it."""
    notes = _Notes()
    short = {ZERO_COPY: "zero-copy", COPY: "copy", UNSUPPORTED: "unsupported",
             NOT_PROBED: "-", NOT_SUPPORTED: "retired"}

    def lab(c: dict[str, Any]) -> str:
        s = short[c["status"]]
        if c["reason"] and c["status"] != NOT_PROBED:
            s += notes.ref(c["reason"]).replace("[^", "[")
        if c["hazards"]:
            s += "!"
        return s

    out = []
    for title, rows, cols, cells in (
        ("sources (rows) -> targets (columns)", data["sources"], data["targets"],
         {(c["source"], c["target"]): lab(c) for c in data["pairs"]}),
        ("layouts and dtypes", list(dict.fromkeys(c["label"] for c in data["layouts"])), CPU,
         {(c["label"], c["target"]): lab(c) for c in data["layouts"]}),
    ):
        w0 = max(len(r) for r in rows)
        ws = [max(len(col), *(len(cells[(r, col)]) for r in rows)) for col in cols]
        out += ["", title, " " * w0 + "  " + "  ".join(c.ljust(w) for c, w in zip(cols, ws))]
        for r in rows:
            out.append(r.ljust(w0) + "  "
                       + "  ".join(cells[(r, c)].ljust(w) for c, w in zip(cols, ws)))
    out += ["", f"CUDA: {data['cuda']} ('-' = not probed here). '!' = a hazard is recorded.",
            "notes:"]
    out += [f"  [{i}] {t}" for i, t in enumerate(notes.texts, 1)]
    return "\n".join(out).lstrip("\n") + "\n"


# ---- the GPU section: cells from a device run only ---------------------------------------
GPU_CELLS = "docs/gpu-cells.json"
"""Where a device run's GPU cells are recorded (written on a CUDA machine by ``--save-gpu``)."""
GPU_HEADING = "## On a GPU"
REGENERATE = f"python -m interop table --markdown --gpu-cells {GPU_CELLS} > conversion_table.md"


def _host_side(names: list[str]) -> list[str]:
    return [n for n in names if n not in GPU]


def _is_gpu_pair(cell: dict[str, Any]) -> bool:
    names = {cell["source"], cell["target"]}
    return bool(names & set(GPU)) and not names & set(RETIRED)


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
            "count": int(rt.getDeviceCount()), "driver": driver,
            "cuda_driver": cuda(rt.driverGetVersion()),
            "cuda_runtime": cuda(rt.runtimeGetVersion())}


def gpu_record(data: dict[str, Any], device: dict[str, Any], date: str) -> dict[str, Any]:
    """The GPU cells of ``data`` (a :func:`build` on a CUDA machine), with the device and date:
    what ``--save-gpu`` writes and :func:`gpu_markdown` renders."""
    names = [n for n in data["sources"] if n not in RETIRED]
    return {"generated_by": "python -m interop table --save-gpu", "date": date,
            "device": device, "versions": data["versions"], "sample": data["sample"],
            "skipped": data["skipped"], "names": names,
            "pairs": [c for c in data["pairs"] if _is_gpu_pair(c)]}


def load_gpu_record(path: str) -> dict[str, Any] | None:
    """The recorded device run at ``path``; ``None`` when none is recorded there."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def gpu_markdown(record: dict[str, Any] | None) -> str:
    """The GPU section: the device run's cells, or that none is recorded (never a guess)."""
    lines = [GPU_HEADING, ""]
    if record is None:
        lines += ["No device run is recorded: a GPU cell comes only from a probe on a CUDA "
                  "machine, never a guess. There, `./scripts/gpu-check.sh` probes every GPU "
                  f"pair, records them in `{GPU_CELLS}` and writes this section."]
        return "\n".join(lines) + "\n"
    dev = record["device"]
    vers = ", ".join(f"{k} {v}" for k, v in sorted(record["versions"].items()) if v)
    lines += [f"Verified on GPU: probed on {dev['name']} (NVIDIA driver {dev['driver'] or '?'}, "
              f"CUDA {dev['cuda_driver']}) on {record['date']} by `python -m interop table "
              f"--save-gpu {GPU_CELLS}` (run by `./scripts/gpu-check.sh`), with the same sample "
              "and checks as above.", "", f"- Probed with: {vers}.", ""]
    notes = _Notes("g")
    cells = {(c["source"], c["target"]): _label(c, notes) for c in record["pairs"]}
    names, gpu = record["names"], [n for n in record["names"] if n in GPU]
    lines += ["## GPU sources", "", "Rows are GPU sources, columns are every target.", ""]
    lines += _grid(gpu, names, cells, "source \\ target")
    lines += ["", "## Into GPU targets", "", "Rows are host sources, columns are GPU targets.", ""]
    lines += _grid(_host_side(names), gpu, cells, "source \\ target")
    lines += ["", "## GPU notes", ""] + notes.lines()
    return "\n".join(lines) + "\n"


def with_gpu_section(md: str, record: dict[str, Any] | None) -> str:
    """``md`` (a rendered table) with its GPU section replaced by one rendered from ``record``."""
    head = md.split(GPU_HEADING, 1)[0].rstrip("\n")
    return head + "\n\n" + gpu_markdown(record)


# ---- reading a rendered table back (for the test) ---------------------------------------
def frameworks_of(section: str, row: str, col: str) -> set[str]:
    """The packages a cell of :func:`parse_markdown` involves (its row's source, its column)."""
    if section.startswith("Layouts"):
        source = next((src for label, src, _ in LAYOUTS if label == row), row)
        names = (source, col)
    else:
        names = (row, col)
    return {PACKAGES.get(n, n) for n in names}



def parse_markdown(md: str) -> dict[tuple[str, str, str], str]:
    """``{(section, row, column): cell text with notes resolved}`` from :func:`markdown`."""
    notes = dict(re.findall(r"^\[\^(g?\d+)\]: (.*)$", md, flags=re.M))
    out: dict[tuple[str, str, str], str] = {}
    section, cols = "", []
    for line in md.splitlines():
        if line.startswith("## "):
            section, cols = line[3:].strip(), []
        elif line.startswith("|") and not line.startswith("|---"):
            parts = [p.strip() for p in line.strip().strip("|").split("|")]
            if not cols:
                cols = parts[1:]
                continue
            row = parts[0].strip("*")
            for col, cell in zip(cols, parts[1:]):
                out[(section, row, col)] = re.sub(
                    r"\[\^(g?\d+)\]", lambda m: "(" + notes.get(m.group(1), "?") + ")", cell)
    return out


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
