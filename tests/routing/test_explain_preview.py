"""explain's preview of a copy converts a fresh buffer along the route: a buffer whose bytes
are left unset may hold values a consumer validates (pandas refuses out-of-range datetimes),
so the preview must never leak such a consumer's raw error (found by a fresh-seed search)."""

import pytest

import interop
import interop.host as host

pd = pytest.importorskip("pandas")
_fresh = host.fresh_buffer


def _garbage(shape, dtype):
    """What an unset buffer may hold: every byte 0x7F (a date far out of pandas' range;
    0xFF would read as NaT)."""
    arr = _fresh(shape, dtype)
    arr.reshape(-1).view("u1").fill(0x7F)
    return arr


def test_a_date_copy_into_pandas_is_explained_whatever_the_fresh_bytes(monkeypatch):
    pa = pytest.importorskip("pyarrow")
    monkeypatch.setattr(host, "fresh_buffer", _garbage)
    days = pa.array([19723, 19724, 19725], pa.date32())  # 2024-01-01 ... 2024-01-03
    plan = interop.explain(days, "pandas", copy=True)
    assert not plan.zero_copy
    monkeypatch.undo()
    out = interop.to_framework(days, "pandas", copy=True)
    assert [str(d)[:10] for d in out] == ["2024-01-01", "2024-01-02", "2024-01-03"]
