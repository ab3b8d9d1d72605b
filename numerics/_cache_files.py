"""The sweep cache's files: one JSON entry per (function, cell, seed, version) with its key and the SHA-256 of its
result, verified on every read; file locks that keep two runs from computing one cell; an unwritable cache warns once.

Private: :mod:`numerics.sweep` re-exports the public names; :mod:`verify.context` shares the lock with its own cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import warnings
from pathlib import Path
from typing import Any, Mapping

from ._cache_keys import canonical


# ----------------------------------------------------------------------------------------- cache
class CacheIntegrityWarning(UserWarning):
    """A cache entry failed its checks (foreign key, checksum mismatch, malformed, unreadable): it is recomputed."""


class CacheWriteWarning(UserWarning):
    """The cache directory cannot be written (a full disk, a read-only directory): the run goes on without storing
    its cells there (a later run computes them again).  Warned once per directory."""


#: cache directories already warned about (:func:`cache_unwritable`)
UNWRITABLE: set[str] = set()


def cache_unwritable(directory: str | os.PathLike, exc: OSError) -> None:
    """Warn once per ``directory`` that the cache cannot be written there (:class:`CacheWriteWarning`)."""
    key = str(directory)
    if key not in UNWRITABLE:
        UNWRITABLE.add(key)
        warnings.warn(f"cache directory {key} cannot be written ({type(exc).__name__}: {exc}); the run goes on "
                      "without storing its cells there", CacheWriteWarning, stacklevel=3)


def cell_lock(path: str | os.PathLike) -> Any:
    """An exclusive inter-process lock on the file ``path`` (a ``filelock.FileLock``, not thread-local; created on
    demand): the claim of one cache cell, held while it is computed and written, so that a second run on the same
    directory waits for the entry; released by the operating system when the holder dies.  ``acquire(timeout=0)``
    raises ``filelock.Timeout`` when it is held elsewhere."""
    from filelock import FileLock

    return FileLock(os.fspath(path), thread_local=False)


def result_checksum(result: Mapping[str, Any]) -> str:
    """SHA-256 (64 hex digits) of a sweep result's canonical JSON (a str-keyed mapping, after :func:`to_jsonable`),
    the ``sha256`` of a cache entry; key order and a JSON round trip do not change it."""
    return hashlib.sha256(canonical(dict(result)).encode()).hexdigest()


def cache_path(cache_dir: Path, key: str, suffix: str = ".json") -> Path:
    """The entry (``.json``) or the claim (``.lock``) of ``key`` in ``cache_dir``."""
    return cache_dir / key[:2] / f"{key}{suffix}"


KEY_FIELDS = ("func", "cell", "seed", "version")


def cache_read(path: Path, expect: Mapping[str, Any], reserved: set[str] | frozenset = frozenset()) -> dict | None:
    """The verified result stored at ``path``, or ``None`` (missing, or rejected with a warning): the stored key fields
    must equal ``expect``'s (func, cell, seed, version), ``sha256`` the checksum of the stored result, a non-empty
    mapping whose keys avoid ``reserved`` (the cell's keys and ``"seed"``).  An entry without ``sha256`` (written before
    checksums) is accepted when its key and result pass, and rewritten with one."""
    try:
        with open(path) as fh:
            blob = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return reject(path, f"unreadable ({type(exc).__name__}: truncated or not JSON)")
    problem = entry_problem(blob, expect, reserved)
    if problem:
        return reject(path, problem)
    if "sha256" not in blob:  # no checksum: key verified, add one in place if we can
        cache_write(path, *(blob[k] for k in KEY_FIELDS), blob["result"], warn=False)
    return blob["result"]


def entry_problem(blob: Any, expect: Mapping[str, Any], reserved: set[str] | frozenset) -> str:
    """Why a parsed cache entry cannot be trusted (``""`` when it can)."""
    if not isinstance(blob, dict) or any(k not in blob for k in (*KEY_FIELDS, "result")):
        return "malformed (not an entry with func, cell, seed, version and result)"
    stored = {k: blob[k] for k in KEY_FIELDS}
    if canonical(stored) != canonical(dict(expect)):
        diff = [k for k in KEY_FIELDS if canonical(stored[k]) != canonical(expect[k])]
        return f"foreign entry: its {', '.join(diff)} differ from the key's (another cell's file)"
    res = blob["result"]
    if not isinstance(res, dict) or not res:
        return f"malformed result (a non-empty mapping is required, got {short(res)})"
    clash = set(res) & set(reserved)
    if clash:
        return f"malformed result (keys collide with the cell's keys or 'seed': {sorted(clash)})"
    if "sha256" in blob and blob["sha256"] != result_checksum(res):
        return "checksum mismatch (the stored result was altered)"
    return ""


def short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def reject(path: Path, why: str) -> None:
    warnings.warn(f"cache entry {path} ignored: {why}; recomputing it", CacheIntegrityWarning, stacklevel=3)
    return None


def cache_write(path: Path, func: str, cell: dict, seed: int, version: str, result: dict, *,
                 warn: bool = True) -> bool:
    """Write one entry atomically; ``False`` (and, with ``warn``, one :class:`CacheWriteWarning` per directory) when
    the cache cannot be written: a cache is an optimisation, never a reason to lose a computed result."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    blob = {"func": func, "cell": cell, "seed": seed, "version": version, "result": result,
            "sha256": result_checksum(result)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w") as fh:
            json.dump(blob, fh)
        os.replace(tmp, path)  # atomic: a crash never leaves a half-written entry under the key
        return True
    except OSError as exc:
        if warn:
            cache_unwritable(path.parent.parent, exc)
        return False
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
