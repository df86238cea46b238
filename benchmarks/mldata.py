"""The ML data libraries' epochs to torch: each library's own torch route against its Arrow
route + ``interop.to_framework``.

An epoch over 100,000 rows of (``emb``: 768 float32, ``image``: 32x32x3 uint8, ``label``:
int64), in batches of 1,024 rows, per library, with the columns in its own tensor types:

- Ray Data (``ray.data.from_arrow`` of Ray's ``ArrowTensorArray`` columns, one CPU):
  ``iter_torch_batches`` against ``iter_batches(batch_format="pyarrow")`` + interop;
- Hugging Face ``datasets`` (``Array3D`` images, ``Sequence(float32, length=768)`` embeddings):
  ``with_format("torch").iter`` against ``with_format("arrow").iter`` + interop;
- Daft (``Embedding`` and fixed-shape ``Tensor`` columns): ``to_torch_dataloader`` against
  ``into_batches(...).to_arrow_iter()`` + interop.

Time per batch is the epoch's wall time over its batches (the best of ``repeat`` epochs).
Bytes copied, per epoch: the bytes of the torch tensors each route hands out that lie in no
buffer of the Arrow batch of the same rows (Arrow's own buffer addresses against torch's
``data_ptr()``), from one further epoch of both routes in step. A library absent here is
skipped, saying so.
"""

from __future__ import annotations

import importlib.util
import time
import warnings
from typing import Any

COLUMNS = ("emb", "image", "label")


def _arrow_ranges(batch: Any) -> list[tuple[int, int]]:
    """Every buffer of every column of an Arrow table or record batch, as address ranges."""
    out = []
    for column in batch.columns:
        for chunk in getattr(column, "chunks", [column]):
            stack = [chunk]
            while stack:
                arr = stack.pop()
                out += [(b.address, b.address + b.size) for b in arr.buffers()
                        if b is not None]
    return out


def _copied(tensors: dict[str, Any], batch: Any) -> int:
    """The bytes of ``tensors`` (a column each) lying in no buffer of ``batch``."""
    ranges = _arrow_ranges(batch)
    total = 0
    for name in COLUMNS:
        t = tensors[name]
        lo = t.data_ptr()
        hi = lo + t.numel() * t.element_size()
        if not any(a <= lo and hi <= b for a, b in ranges):
            total += t.numel() * t.element_size()
    return total


def _data(rows: int) -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(0)
    return {"emb": rng.standard_normal((rows, 768), dtype=np.float32),
            "image": rng.integers(0, 255, (rows, 32, 32, 3), dtype=np.uint8),
            "label": np.arange(rows, dtype=np.int64)}


def _epoch(batches: Any, convert: Any) -> tuple[float, int]:
    """Seconds for one pass over ``batches`` (each converted), and how many there were."""
    t0 = time.perf_counter()
    n = 0
    for b in batches:
        convert(b)
        n += 1
    return time.perf_counter() - t0, n


def _compare(own: Any, arrow: Any, to_torch: Any, repeat: int) -> dict[str, Any]:
    """``own()`` and ``arrow()`` each make an iterator over one epoch's batches (torch dicts;
    Arrow batches, converted by ``to_torch``): timings, then the bytes copied in step."""
    import interop

    out: dict[str, Any] = {}
    for route, make, convert in (("own_torch", own, lambda b: b),
                                 ("arrow_interop", arrow, to_torch)):
        convert(next(iter(make())))  # warm: imports, plans
        runs = [_epoch(make(), convert) for _ in range(repeat)]
        best, batches = min(runs)
        out[route] = {"epoch_s": best, "batches": batches,
                      "per_batch_ms": best / max(batches, 1) * 1e3,
                      "epochs_s": [r[0] for r in runs]}
    own_bytes = arrow_bytes = 0
    zero_copy = True
    for theirs, batch in zip(own(), arrow()):
        ours = to_torch(batch)
        own_bytes += _copied(theirs, batch)
        arrow_bytes += _copied(ours, batch)
        zero_copy = zero_copy and interop.explain(batch, "torch").zero_copy
    out["own_torch"]["bytes_copied"] = own_bytes
    out["arrow_interop"]["bytes_copied"] = arrow_bytes
    out["arrow_interop"]["explain_zero_copy"] = zero_copy
    out["ratio_per_batch"] = out["own_torch"]["per_batch_ms"] / out["arrow_interop"][
        "per_batch_ms"]
    return out


def _ray(data: dict[str, Any], batch: int, repeat: int) -> dict[str, Any]:
    import pyarrow as pa
    import ray
    from ray.data.extensions import ArrowTensorArray

    import interop

    table = pa.table({"emb": ArrowTensorArray.from_numpy(data["emb"]),
                      "image": ArrowTensorArray.from_numpy(data["image"]),
                      "label": pa.array(data["label"])})
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False,
             ignore_reinit_error=True)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        ds = ray.data.from_arrow(table).materialize()
        res = _compare(lambda: ds.iter_torch_batches(batch_size=batch),
                       lambda: ds.iter_batches(batch_format="pyarrow", batch_size=batch),
                       lambda b: interop.to_framework(b, "torch"), repeat)
    finally:
        ray.shutdown()
    res["types"] = {n: str(table.schema.field(n).type) for n in COLUMNS}
    return res


def _hf(data: dict[str, Any], batch: int, repeat: int) -> dict[str, Any]:
    import datasets

    import interop

    features = datasets.Features({
        "emb": datasets.Sequence(datasets.Value("float32"), length=768),
        "image": datasets.Array3D((32, 32, 3), "uint8"), "label": datasets.Value("int64")})
    ds = datasets.Dataset.from_dict(data, features=features)
    res = _compare(lambda: ds.with_format("torch").iter(batch_size=batch),
                   lambda: ds.with_format("arrow").iter(batch_size=batch),
                   lambda b: interop.to_framework(b, "torch"), repeat)
    res["types"] = {n: str(ds.data.schema.field(n).type) for n in COLUMNS}
    return res


def _daft(data: dict[str, Any], batch: int, repeat: int) -> dict[str, Any]:
    import daft
    from daft import DataType, col

    import interop

    df = daft.from_pydict({"emb": list(data["emb"]), "image": list(data["image"]),
                           "label": data["label"]})
    df = (df.with_column("emb", col("emb").cast(DataType.embedding(DataType.float32(), 768)))
          .with_column("image", col("image").cast(DataType.tensor(DataType.uint8(),
                                                                  (32, 32, 3))))
          .collect())
    res = _compare(lambda: iter(df.to_torch_dataloader(batch_size=batch)),
                   lambda: df.into_batches(batch).to_arrow_iter(),
                   lambda b: interop.to_framework(b, "torch"), repeat)
    res["types"] = {n: str(df.to_arrow().schema.field(n).type) for n in COLUMNS}
    return res


LIBRARIES = (("ray", "ray", _ray), ("datasets", "datasets", _hf), ("daft", "daft", _daft))


def run(quick: bool = False) -> dict[str, Any]:
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    rows, batch, repeat = (4_096, 512, 1) if quick else (100_000, 1_024, 3)
    out: dict[str, Any] = {"rows": rows, "batch_size": batch, "repeat": repeat,
                           "row": "emb 768 float32, image 32x32x3 uint8, label int64"}
    data = _data(rows)
    for name, module, fn in LIBRARIES:
        if importlib.util.find_spec(module) is None:
            out[name] = {"skipped": True, "reason": f"{module} is not installed"}
            continue
        out[name] = fn(data, batch, repeat)
    return out


def markdown(d: dict[str, Any]) -> list[str]:
    """The report's ML data section: one row per library and route."""
    lines = ["", f"## 9. ML data libraries: an epoch of {d['rows']:,} rows ({d['row']}) to "
             f"torch in batches of {d['batch_size']:,}", "",
             f"Best of {d['repeat']} epochs; bytes copied per epoch: the bytes of the tensors "
             "handed out lying in no buffer of the Arrow batch of the same rows.", "",
             "| library | route | per batch ms | epoch s | bytes copied | own / interop |",
             "|---|---|---|---|---|---|"]
    routes = {"ray": ("`iter_torch_batches`", "`iter_batches(batch_format='pyarrow')` + interop"),
              "datasets": ("`with_format('torch').iter`", "`with_format('arrow').iter` + interop"),
              "daft": ("`to_torch_dataloader`", "`into_batches(n).to_arrow_iter()` + interop")}
    for name, (own, arrow) in routes.items():
        r = d.get(name) or {}
        if r.get("skipped") or "own_torch" not in r:
            lines.append(f"| {name} | skipped: {r.get('reason', r.get('error', 'absent'))} "
                         "| | | | |")
            continue
        for label, key in ((own, "own_torch"), (arrow, "arrow_interop")):
            v = r[key]
            lines.append(f"| {name} | {label} | {v['per_batch_ms']:.3f} | {v['epoch_s']:.3f} | "
                         f"{v['bytes_copied'] / 2**20:,.1f} MiB | "
                         + (f"x{r['ratio_per_batch']:.2f} |" if key == "own_torch" else "|"))
    return lines
