"""Values that can hold nulls, built from a JSON-able spec (so a child process builds the same
ones), and a conversion's outcome as a short string: the property search compares outcomes
of one value across plans, call orders and processes.

A spec is ``[kind, arrow type, length, null positions, offset]``: ``kind`` one of ``KINDS``
(a pyarrow Array or one-chunk ChunkedArray, a polars Series, a pandas Series backed by Arrow
or by a masked NumPy array), over an Arrow array of that type, sliced ``offset`` in.
"""

from __future__ import annotations

import datetime
import json
import sys
from typing import Any

KINDS = ("pyarrow", "pyarrow-chunked", "polars", "pandas-arrow", "pandas-masked")

ARROW_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "float32", "float64", "bool", "date32", "date64", "timestamp[us]",
               "duration[ns]", "time64[us]", "string", "large_string", "binary",
               "dictionary<string>", "list<int8>", "fixed_size_list<int8,2>",
               "fixed_size_list<fixed_size_list<int8,1>,1>", "fixed_size_list<string,1>",
               "struct<a:int8>", "decimal128(5,2)", "null")
"""Every Arrow type the search draws: numbers, booleans, dates, times, strings, nested."""

MASKED = {"int8": "Int8", "int16": "Int16", "int32": "Int32", "int64": "Int64", "uint8": "UInt8",
          "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "float32": "Float32",
          "float64": "Float64", "bool": "boolean"}
"""The pandas masked dtype of each Arrow type that has one."""


def _arrow_type(name: str) -> Any:
    import pyarrow as pa

    return {"bool": pa.bool_(), "date32": pa.date32(), "date64": pa.date64(),
            "timestamp[us]": pa.timestamp("us"), "duration[ns]": pa.duration("ns"),
            "time64[us]": pa.time64("us"), "string": pa.string(),
            "large_string": pa.large_string(), "binary": pa.binary(),
            "dictionary<string>": pa.dictionary(pa.int8(), pa.string()),
            "list<int8>": pa.list_(pa.int8()),
            "fixed_size_list<int8,2>": pa.list_(pa.int8(), 2),
            "fixed_size_list<fixed_size_list<int8,1>,1>": pa.list_(pa.list_(pa.int8(), 1), 1),
            "fixed_size_list<string,1>": pa.list_(pa.string(), 1),
            "struct<a:int8>": pa.struct([("a", pa.int8())]),
            "decimal128(5,2)": pa.decimal128(5, 2), "null": pa.null(),
            "float16": pa.float16()}.get(name) or pa.type_for_alias(name)


def _element(name: str, i: int) -> Any:
    import decimal

    if name == "bool":
        return i % 3 == 0
    if name.startswith(("int", "uint")):
        return i % 100
    if name.startswith("float"):
        return i * 0.5
    if name in ("date32", "date64"):
        return datetime.date(2024, 1, 1) + datetime.timedelta(days=i)
    if name == "timestamp[us]":
        return datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=i)
    if name == "duration[ns]":
        return datetime.timedelta(microseconds=i)
    if name == "time64[us]":
        return datetime.time(0, 0, i % 60)
    if name in ("string", "large_string", "dictionary<string>"):
        return f"s{i % 5}" * (i % 3)
    if name == "binary":
        return bytes([i % 256]) * (i % 3)
    if name == "list<int8>":
        return list(range(i % 3))
    if name == "fixed_size_list<int8,2>":
        return [i % 100, (i + 1) % 100]
    if name == "fixed_size_list<fixed_size_list<int8,1>,1>":
        return [[i % 100]]
    if name == "fixed_size_list<string,1>":
        return [f"s{i}"]
    if name == "struct<a:int8>":
        return {"a": i % 100}
    if name == "decimal128(5,2)":
        return decimal.Decimal(i % 100) / 4
    return None


def arrow_array(name: str, n: int, nulls: list[int], offset: int = 0) -> Any:
    """An Arrow array of type ``name``, ``n`` elements (null at ``nulls``), ``offset`` in."""
    import pyarrow as pa

    t = _arrow_type(name)
    values = [None if i - offset in nulls or name == "null" else _element(name, i)
              for i in range(n + offset)]
    if name == "float16":
        import numpy as np

        arr = pa.array(np.array([0.0 if v is None else v for v in values], np.float16),
                       mask=np.array([v is None for v in values], bool))
    elif name == "dictionary<string>":
        arr = pa.array(values, pa.string()).dictionary_encode()
    else:
        arr = pa.array(values, t)
    return arr.slice(offset, n) if offset else arr


def build(spec: list) -> Any:
    """The value a spec names, or ``None`` where the kind cannot hold the type."""
    kind, name, n, nulls, offset = spec
    arr = arrow_array(name, n, nulls, offset)
    if kind == "pyarrow":
        return arr
    import pyarrow as pa

    if kind == "pyarrow-chunked":
        return pa.chunked_array([arr], type=arr.type)
    if kind == "polars":
        import polars as pl

        try:
            return pl.from_arrow(arr)
        except Exception:  # a type polars cannot hold
            return None
    import pandas as pd

    if kind == "pandas-arrow":
        return pd.Series(pd.arrays.ArrowExtensionArray(arr), copy=False)
    if name not in MASKED:
        return None
    return pd.Series(arr.to_pylist(), dtype=MASKED[name])


def outcome(call: Any) -> str:
    """``"ok <type> <dtype>"`` or ``"error <class>"`` (an InteropError); any other exception
    propagates (a raw framework error is a bug)."""
    from interop.errors import InteropError

    try:
        r = call()
    except InteropError as e:
        return f"error {type(e).__name__}"
    return f"ok {type(r).__module__.partition('.')[0]}.{type(r).__name__} " \
           f"{getattr(r, 'dtype', None)}"


def run_in_order(cases: list[list]) -> list[list[str]]:
    """Each ``[spec, target]`` converted twice (the first call plans, the second makes the
    fast form), in order, in this process: the outcomes."""
    import interop

    out = []
    for spec, target in cases:
        x = build(spec)
        out.append([outcome(lambda x=x, target=target: interop.to_framework(x, target))
                    for _ in range(2)])
    return out


if __name__ == "__main__":  # the child: cases as JSON on stdin, outcomes as JSON on stdout
    json.dump(run_in_order(json.load(sys.stdin)), sys.stdout)
