"""TensorFlow and PaddlePaddle from the core run's side: never imported, never an ImportError.

Their own suites (tests/optional/test_tensorflow.py, tests/optional/test_paddle.py) run in
separate processes.
These tests need neither framework: each runs a child process that imports interop alone,
or one where the frameworks are hidden as on a machine without them.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap

import pytest


def installed(*names: str) -> pytest.MarkDecorator:
    """Skip, saying which, unless every framework of ``names`` is installed (the GPU host of
    the first device run had neither)."""
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    return pytest.mark.skipif(bool(missing), reason=f"{', '.join(missing)} not installed")

HIDE = """
import importlib.machinery, sys

class _Hidden(importlib.machinery.PathFinder):
    # tensorflow and paddle are not installed, as far as this process can tell
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.partition(".")[0] in ("tensorflow", "paddle"):
            return None
        return super().find_spec(name, path, target)

sys.meta_path = [_Hidden if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
"""


def _run(code: str) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return r


@installed("tensorflow", "paddle")
def test_interop_never_imports_tensorflow_or_paddle():
    _run("""
        import sys
        import numpy as np, torch, jax, pyarrow as pa
        import interop
        from interop.cli import doctor, table
        from interop.host import fresh_copy
        rows = {r["name"]: r for r in interop.frameworks()}
        assert {"tensorflow", "paddle"} <= set(rows), rows
        assert not rows["tensorflow"]["imported"] and not rows["paddle"]["imported"]
        a = fresh_copy(np.zeros(4, np.float32))  # 64-byte aligned, as TensorFlow needs
        for tgt in ("numpy", "torch", "jax", "pyarrow", "dlpack"):
            interop.to_framework(a, tgt)
            interop.to_framework(interop.to_framework(a, tgt), "numpy")
        # explaining a conversion to them reads dtypes and layouts only
        assert interop.explain(a, "tensorflow").zero_copy
        assert interop.explain(a, "tf").target == "tensorflow"
        assert interop.explain(a, "paddle").zero_copy
        assert not interop.shares_memory(a, object())
        table.build(gpu=(0, "none"), skip=table.OPTIONAL)
        bad = [m for m in sys.modules if m.partition(".")[0] in ("tensorflow", "paddle")]
        assert not bad, bad
    """)


def test_without_tensorflow_and_paddle_they_are_listed_as_not_installed():
    r = _run(HIDE + """
import numpy as np
import interop
from interop.cli import doctor, pitfalls, table
from interop.errors import InteropError

rows = {r["name"]: r for r in interop.frameworks()}
for name in ("tensorflow", "paddle"):
    assert rows[name]["importable"] is False and rows[name]["version"] is None, rows[name]
    plan = interop.explain(np.zeros(3, np.float32), name)
    assert not plan.supported and "is not installed: pip install" in plan.reasons[0], plan
    try:
        interop.to_framework(np.zeros(3, np.float32), name)
    except InteropError as e:  # never a bare ImportError
        assert "not installed" in str(e), e
    else:
        raise AssertionError("converted without the framework")
    cell = table.pair(name, "numpy", 0)
    assert cell["status"] == "not probed" and "not installed" in cell["reason"], cell
pits = pitfalls.check_pitfalls((), [p for p in pitfalls.PITFALLS
                                    if p.framework in ("tensorflow", "paddle")])
assert pits and all(p["state"] == "not installed" for p in pits), pits
d = {"interop": "0", "python": "3", "platform": "x", "frameworks": interop.frameworks(),
     "gpus": {"count": 0, "detail": "none"}, "pool": {"active": False},
     "transpose": doctor.transpose_status(), "pitfalls": pits}
text = doctor.render(d)
for name in ("tensorflow", "paddle"):
    line = next(l for l in text.splitlines() if l.strip().startswith(name + " "))
    assert line.split()[-2:] == ["not", "installed"], line
print(text)
""")
    assert "tensorflow" in r.stdout and "paddle" in r.stdout


@installed("paddle")
def test_paddle_is_never_imported_after_tensorflow():
    """Importing paddle after tensorflow segfaults: with tensorflow loaded (a stand-in
    module here), interop refuses to import paddle and says why."""
    _run("""
        import sys, types
        import numpy as np
        sys.modules["tensorflow"] = types.ModuleType("tensorflow")
        import interop
        from interop.errors import UnsupportedConversionError
        a = np.zeros(4, np.float32)
        plan = interop.explain(a, "paddle")
        assert not plan.supported and "import paddle before tensorflow" in plan.reasons[0], plan
        try:
            interop.to_framework(a, "paddle")
        except UnsupportedConversionError as e:
            assert "segfaults" in str(e), e
        else:
            raise AssertionError("paddle was imported after tensorflow")
        assert "paddle" not in sys.modules
    """)


def test_detection_reads_the_module_name_only():
    _run("""
        import sys
        import interop
        from interop.api import REGISTRY
        Fake = type("EagerTensor", (), {"__module__": "tensorflow.python.framework.ops"})
        Pd = type("Tensor", (), {"__module__": "paddle"})
        for name, value in (("tensorflow", Fake()), ("paddle", Pd())):
            assert not REGISTRY.adapters[name].owns(value)  # not loaded: not theirs
        assert "tensorflow" not in sys.modules and "paddle" not in sys.modules
    """)


@installed("tensorflow", "paddle")
def test_versions_found_under_their_distribution_names():
    """tensorflow ships as tensorflow-cpu here and paddle as paddlepaddle: still versioned,
    still not imported."""
    import importlib.metadata as md
    import sys

    import interop

    info = {f["name"]: f for f in interop.frameworks()}
    assert info["tensorflow"]["version"] == md.version("tensorflow-cpu")
    assert info["paddle"]["version"] == md.version("paddlepaddle")
    assert "tensorflow" not in sys.modules and "paddle" not in sys.modules


def test_interop_never_imports_dali():
    """DALI's adapter is in the default registry, yet detecting and converting other values
    (and listing the frameworks) never imports DALI, installed or not."""
    _run("""
        import sys
        import numpy as np, torch
        import interop
        a = np.zeros(4, np.float32)
        for tgt in ("numpy", "torch", "jax", "pyarrow", "dlpack"):
            interop.to_framework(interop.to_framework(a, tgt), "numpy")
        interop.explain(a, "torch")
        interop.frameworks()
        assert "dali" in interop.api.REGISTRY.adapters
        bad = [m for m in sys.modules if m.startswith("nvidia.dali")]
        assert not bad, bad
    """)
