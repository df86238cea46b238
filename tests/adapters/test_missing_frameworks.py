"""A target framework that is not installed: a FrameworkMissingError naming the fix, never a
bare ModuleNotFoundError from deep inside a conversion (seen on the first GPU host, which had
no polars). Run in a child interpreter where the packages cannot be imported."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CODE = textwrap.dedent("""
    import json, sys
    for name in ("polars", "jax", "tensorflow", "cudf"):
        sys.modules[name] = None  # as if not installed: import raises ModuleNotFoundError
    import numpy as np
    import interop
    from interop.errors import FrameworkMissingError

    out = {}
    cases = {"numpy->polars": (np.arange(3.0), "polars"),
             "dict->polars": ({"a": np.arange(3.0)}, "polars"),
             "numpy->jax": (np.arange(3.0), "jax"),
             "numpy->tensorflow": (np.arange(3.0), "tensorflow"),
             "numpy->cudf": (np.arange(3.0), "cudf")}
    for case, (x, target) in cases.items():
        try:
            interop.to_framework(x, target)
            result = "converted"
        except FrameworkMissingError as e:
            result = "FrameworkMissingError: " + str(e)
        except Exception as e:
            result = type(e).__name__ + ": " + str(e)
        plan = interop.explain(x, target)
        out[case] = [result, plan.supported, plan.error, list(plan.reasons),
                     interop.can_convert(x, target)]
    print(json.dumps(out))
""")


def test_missing_targets_are_named_with_the_install_command():
    r = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    fixes = {"polars": 'pip install "interop-mempool[polars]"',
             "jax": 'pip install "interop-mempool[jax]"',
             "tensorflow": "pip install tensorflow", "cudf": "cudf-cu12 or cudf-cu13"}
    for case, (result, supported, error, reasons, can) in out.items():
        target = case.split("->")[1]
        assert result.startswith("FrameworkMissingError: "), (case, result)
        assert f"{target} is not installed" in result and fixes[target] in result, result
        assert (supported, error, can) == (False, "missing", False), case
        assert fixes[target] in reasons[0], reasons


OPTREE = textwrap.dedent("""
    import collections, json, sys
    for name in ("optree", "jax"):
        sys.modules[name] = None  # the lent GPU image has no optree (and JAX's registry off)
    import numpy as np, pyarrow as pa, torch
    import interop
    from interop.errors import FrameworkMissingError

    a, b = np.arange(3.0), np.arange(4.0)
    out = {}
    cols = interop.to_framework({"a": a, "b": b}, "torch")  # a flat dict: each leaf
    cols["a"][0] = 7.0  # zero-copy: a write through the tensor reads back in the array
    out["flat"] = [a[0], cols["a"].data_ptr() == a.ctypes.data, sorted(cols)]
    table = interop.to_framework({"a": a, "b": np.arange(3)}, "pyarrow")  # a table
    out["table"] = [type(table).__name__, table.column("a").to_pylist()]
    nested = interop.to_framework({"x": [a, (b,)]}, "torch")
    out["nested"] = [type(nested["x"]).__name__, type(nested["x"][1]).__name__,
                     nested["x"][1][0].data_ptr() == b.ctypes.data]
    Pair = collections.namedtuple("Pair", "p q")
    try:
        interop.to_framework(Pair(a, b), "torch")
        out["namedtuple"] = "converted"
    except FrameworkMissingError as e:
        out["namedtuple"] = str(e)
    out["can"] = interop.can_convert(Pair(a, b), "torch")
    print(json.dumps(out))
""")


def test_without_optree_dicts_lists_and_tables_work_and_other_structures_name_the_install():
    """Issue 35, item 2: without optree (the lent GPU image), a flat dict, a table and
    nested dicts/lists/tuples still convert; a named tuple, which only a pytree registry takes
    apart, is a FrameworkMissingError naming the install. Before: a raw
    ``ModuleNotFoundError: No module named 'optree'`` for every dict."""
    done = subprocess.run([sys.executable, "-c", OPTREE], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["flat"] == [7.0, True, ["a", "b"]]
    assert out["table"] == ["Table", [7.0, 1.0, 2.0]]
    assert out["nested"] == ["list", "tuple", True]
    assert out["namedtuple"].startswith("a __main__.Pair (a tuple subclass) is read as a "
                                        "structure through optree, which is not installed: "
                                        "pip install optree")
    assert out["can"] is False


def test_without_rmm_the_pool_gpu_tests_skip_saying_why(tmp_path):
    """Issue 35, item 2: RMM missing (the lent GPU image) skips the pool's GPU tests with the
    reason, before the device check, instead of failing each of them."""
    code = textwrap.dedent(f"""
        import sys
        sys.modules["rmm"] = None
        import pytest
        sys.exit(pytest.main(["-q", "-rs", "-p", "no:cacheprovider", "--rootdir",
                              {str(tmp_path)!r}, "tests/mempool/test_mempool_gpu.py"]))
    """)
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rmm is not installed: pip install rmm-cu13" in done.stdout
    assert "passed" not in done.stdout and "failed" not in done.stdout
