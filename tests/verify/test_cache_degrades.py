"""A cache that cannot be written (a full disk, a read-only directory) costs a warning, never a result.

Every cache write ends in ``os.replace`` (an atomic rename); the tests make it raise ``ENOSPC`` as a full disk
does, so they run as any user (a read-only directory does not stop root).  A2 stores its sweep pairs through
:mod:`numerics.sweep`, B2 its Monte Carlo cells through :meth:`verify.registry.CheckContext.cached`: both runs
end with the verdict and the values of a run without a cache, and each directory is warned about once.
"""

from __future__ import annotations

import errno
import os
import warnings

import pytest

from conftest import run_smoke
from numerics import _cache_files, sweep
from numerics.sweep import CacheWriteWarning


def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def full_disk(monkeypatch):
    monkeypatch.setattr(_cache_files, "UNWRITABLE", set())  # the warn-once memory of this test alone
    monkeypatch.setattr(os, "replace", _full_disk)


@pytest.mark.parametrize("cid", ["A2", "B2"])
def test_run_goes_on_when_the_cache_cannot_be_written(cid, tmp_path, full_disk):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = run_smoke(cid, cache_dir=tmp_path / "cache", memo={})
    assert res.error is None, res.error
    written = [w for w in caught if issubclass(w.category, CacheWriteWarning)]
    assert written and len({str(w.message) for w in written}) == len(written)  # once per directory
    assert "No space left on device" in str(written[0].message)
    assert not list((tmp_path / "cache").rglob("*.npz")) and not list((tmp_path / "cache").rglob("*.json"))
    reference = run_smoke(cid, cache_dir=None, memo={})
    assert res.verdict is reference.verdict
    assert [c.to_json() for c in res.comparisons] == [c.to_json() for c in reference.comparisons]


def test_cache_write_reports_failure_instead_of_raising(tmp_path, full_disk):
    with pytest.warns(CacheWriteWarning, match="cannot be written"):
        ok = _cache_files.cache_write(tmp_path / "ab" / "entry.json", "f", {"a": 1}, 0, "1", {"x": 1.0})
    assert ok is False and not list(tmp_path.rglob("*.json"))


class _DeniedLock:
    """A lock file that cannot be created (``EACCES``, as in a read-only directory for a user who is not root)."""

    def __init__(self, *args, **kwargs):
        pass

    def acquire(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    def release(self):
        pass


@pytest.mark.parametrize("cid", ["A2", "B5"])
def test_run_goes_on_when_a_cell_cannot_be_claimed(cid, tmp_path, monkeypatch):
    """The claim of a cell (its lock file) cannot be taken: no lock, no wait for others, the same results."""
    monkeypatch.setattr(sweep, "cell_lock", _DeniedLock)
    monkeypatch.setattr(_cache_files, "UNWRITABLE", set())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheWriteWarning)
        res = run_smoke(cid, cache_dir=tmp_path / "cache", memo={})
    assert res.error is None, res.error
    reference = run_smoke(cid, cache_dir=None, memo={})
    assert [c.to_json() for c in res.comparisons] == [c.to_json() for c in reference.comparisons]
