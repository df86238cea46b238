"""Nested Arrow columns: embeddings (``fixed_size_list<float32>[768]``) and ragged token
sequences (``list<int32>``, lengths 1-512) to torch, against what users write without interop.

Embeddings, 1,000,000 x 768 float32 (3 GiB) in a pyarrow Table: ``interop.to_framework`` of
the table (column ``emb``) against ``column.to_numpy(zero_copy_only=False)`` + ``np.stack``
(the same rows), ``FixedShapeTensorArray.to_numpy_ndarray()`` (Arrow's own zero-copy view of a
tensor column over the same buffer) + ``torch.from_numpy``, and ``np.stack(column.to_pylist())``
(on fewer rows: a Python float per element; the rows it ran on are recorded). HuggingFace
``datasets`` formatting runs where ``datasets`` is installed.

Ragged tokens, 1,000,000 rows: interop to a jagged nested tensor against padding in Python
(``pad_sequence`` over ``torch.tensor`` of each row of ``to_pylist()``, on fewer rows) and
interop's own ``ragged="pad"``.

Scaling: interop's hand-over at 1k, 10k, 100k and 1M rows of each kind (each its own array),
to show it does not grow with the rows.
"""

from __future__ import annotations

import importlib.util
import statistics
import warnings
from typing import Any

from . import timer


def _times(fn: Any, repeat: int) -> dict[str, float]:
    """Median and best of ``repeat`` single calls, after one warm-up call."""
    fn()
    out = timer(fn).repeat(repeat, 1)
    return {"median_s": statistics.median(out), "min_s": min(out), "repeat": repeat}


def _embeddings(n: int, d: int, rng: Any) -> Any:
    import numpy as np
    import pyarrow as pa

    flat = rng.standard_normal(n * d, dtype=np.float32)
    return pa.table({"emb": pa.FixedSizeListArray.from_arrays(pa.array(flat), d)})


def _tokens(n: int, rng: Any) -> Any:
    import numpy as np
    import pyarrow as pa

    lengths = rng.integers(1, 513, n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    values = rng.integers(0, 30_000, int(offsets[-1]), dtype=np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values))


def run(quick: bool = False) -> dict[str, Any]:
    warnings.filterwarnings("ignore", message=".*not writable.*")
    warnings.filterwarnings("ignore", category=UserWarning, module="torch")
    import numpy as np

    rng = np.random.default_rng(0)
    rows = 10_000 if quick else 1_000_000
    small = 1_000 if quick else 10_000  # the Python baselines' rows
    out: dict[str, Any] = {"rows": rows, "dim": 64 if quick else 768,
                           "python_baseline_rows": small}
    out["embeddings"] = _embeddings_section(rows, out["dim"], small, quick, rng)
    out["ragged"] = _ragged_section(rows, small, rng)
    out["scaling"] = scale = _scaling([1_000, 10_000] if quick
                                      else [1_000, 10_000, 100_000, 1_000_000], rng)
    out["largest_over_smallest"] = {kind: points[-1]["median_us"] / points[0]["median_us"]
                                    for kind, points in scale.items()}
    return out


def _embeddings_section(rows: int, d: int, small: int, quick: bool, rng: Any) -> dict[str, Any]:
    import numpy as np
    import pyarrow as pa
    import torch

    import interop

    table = _embeddings(rows, d, rng)
    col = table.column("emb").chunk(0)
    tensor_col = pa.ExtensionArray.from_storage(pa.fixed_shape_tensor(pa.float32(), [d]), col)

    def interop_table() -> Any:
        return interop.to_framework(table, "torch")["emb"]

    def to_numpy_stack() -> Any:
        return torch.from_numpy(np.stack(col.to_numpy(zero_copy_only=False)))

    def arrow_tensor() -> Any:
        return torch.from_numpy(tensor_col.to_numpy_ndarray())

    t = interop_table()
    emb: dict[str, Any] = {
        "zero_copy": t.data_ptr() == col.values.buffers()[1].address,
        "shape": list(t.shape),
        "interop_to_framework": _times(interop_table, 51),
        "arrow_tensor_to_numpy_ndarray": _times(arrow_tensor, 51),
        "to_numpy_then_np_stack": _times(to_numpy_stack, 3),
    }
    head = col.slice(0, small)
    emb["np_stack_to_pylist_small"] = _times(
        lambda: torch.from_numpy(np.stack(head.to_pylist()).astype(np.float32)), 3)
    per_row = emb["np_stack_to_pylist_small"]["median_s"] / small
    emb["np_stack_to_pylist_estimated_full_s"] = per_row * rows
    if importlib.util.find_spec("datasets") is not None:  # pragma: no cover - not installed here
        import datasets

        ds = datasets.Dataset(pa.table({"emb": head})).with_format("torch")
        emb["huggingface_with_format_torch_small"] = _times(lambda: ds[:]["emb"], 3)
    else:
        emb["huggingface"] = "skipped: datasets is not installed"
    return emb


def _ragged_section(rows: int, small: int, rng: Any) -> dict[str, Any]:
    import torch

    import interop

    tokens = _tokens(rows, rng)
    nt = interop.to_framework(tokens, "torch")
    values, offsets = (torch.from_numpy(tokens.values.to_numpy()),
                       torch.from_numpy(tokens.offsets.to_numpy()))
    ragged: dict[str, Any] = {
        "tokens": int(len(tokens.values)),
        "zero_copy": (nt.values().data_ptr() == tokens.values.buffers()[1].address
                      and nt.offsets().data_ptr() == tokens.buffers()[1].address),
        "interop_jagged": _times(lambda: interop.to_framework(tokens, "torch"), 51),
        "native_nested_tensor_from_jagged": _times(
            lambda: torch.nested.nested_tensor_from_jagged(values, offsets), 51),
    }
    few = tokens.slice(0, small)

    def python_pad() -> Any:
        return torch.nn.utils.rnn.pad_sequence(
            [torch.tensor(r, dtype=torch.int32) for r in few.to_pylist()], batch_first=True)

    ragged["python_pad_small"] = _times(python_pad, 3)
    ragged["python_pad_estimated_full_s"] = ragged["python_pad_small"]["median_s"] / small * rows
    ragged["interop_pad_small"] = _times(
        lambda: interop.to_framework(few, "torch", ragged="pad"), 3)
    return ragged


def _scaling(sizes: list[int], rng: Any) -> dict[str, list[dict[str, Any]]]:
    import interop

    scale: dict[str, list[dict[str, Any]]] = {"embeddings_us": [], "ragged_us": []}
    for n in sizes:
        for kind, value in (("embeddings_us", _embeddings(n, 128, rng).column("emb").chunk(0)),
                            ("ragged_us", _tokens(n, rng))):
            got = _times(lambda v=value: interop.to_framework(v, "torch"), 201)
            scale[kind].append({"rows": n, "median_us": got["median_s"] * 1e6,
                                "min_us": got["min_s"] * 1e6})
    return scale
