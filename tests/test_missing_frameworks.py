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
