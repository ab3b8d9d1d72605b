"""The context of a check (:class:`CheckContext`): profile, seeds, workers, progress, the cell cache and figures.

The cache stores each Monte Carlo cell as ``<cache_dir>/<check_id>/<key>.npz`` (:meth:`CheckContext.cached`)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from numerics import sweep, torch_threads
from numerics.sweep import CacheIntegrityWarning, to_jsonable
from theory.validation import ArgumentTypeError, check_choice, check_int, describe

from .validation import MAX_SEED, check_dir, check_mapping, check_n_jobs, check_text, seed_text

__all__ = ["CACHE_VERSION", "EXECUTORS", "PROFILES", "CheckContext"]


#: the profiles of every check: ``smoke`` (tests only: tiny sizes, verdicts meaningless), ``quick`` (the default
#: report, minutes), ``paper`` (the papers' scale).  :class:`CheckContext` refuses any other name.
PROFILES = ("smoke", "quick", "paper")

#: part of every :meth:`CheckContext.cached` key; bump it when the numerics behind cached cells change
#: meaning (not for rounding-level changes), to invalidate every stored cell at once.
CACHE_VERSION = "1"


#: where sweep cells run (:attr:`CheckContext.executor`, :func:`numerics.sweep.run_sweep`)
EXECUTORS = ("local", "dask")


@dataclass
class CheckContext:
    """What a check gets: profile, seeds, where to write figures, progress reporting.

    ``seed_for(*keys)`` derives a reproducible integer seed from the run's base seed and the keys and records it (every
    report lists the seeds used).  Fields are validated on construction (``ValueError`` / ``TypeError`` naming the
    field): ``profile`` one of :data:`PROFILES`; ``seed`` an integer ``>= 0`` (not a bool, not a float); ``n_jobs`` an
    integer ``>= 1``, or ``-1`` for all cores (stored as ``os.cpu_count()``, so that every check sees the same positive
    count); ``device`` ``"cpu"``, ``"cuda"`` or ``"cuda:<k>"``; ``executor`` one of :data:`EXECUTORS`; ``scheduler``
    ``None`` or an address; ``report_dir`` / ``cache_dir`` ``None`` or a path (stored as :class:`~pathlib.Path`)."""

    profile: str = "quick"
    seed: int = 0
    report_dir: Path | None = None
    cache_dir: Path | None = None
    device: str = "cpu"
    n_jobs: int = 2
    executor: str = "local"
    scheduler: str | None = None
    check_id: str = ""
    seeds_used: list[int] = field(default_factory=list)
    _progress_factory: Callable[[str, int], Any] | None = None
    #: the run's in-memory cells without a cache directory (:meth:`cached`), shared by its checks; None: none kept
    memo: dict | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_choice("profile", self.profile, PROFILES)
        self.seed = check_int("seed", self.seed, 0, MAX_SEED)
        self.n_jobs = check_n_jobs(self.n_jobs)
        # the format only (a string or not: both TypeError and ValueError); the CLI checks availability
        if not isinstance(self.device, str) or not re.fullmatch(r"cpu|cuda(:[0-9]+)?", self.device):
            raise ArgumentTypeError(f"device must be 'cpu', 'cuda' or 'cuda:<k>', got {describe(self.device)}")
        check_choice("executor", self.executor, EXECUTORS)
        check_text("scheduler", self.scheduler, none_ok=True)
        self.report_dir = check_dir("report_dir", self.report_dir)
        self.cache_dir = check_dir("cache_dir", self.cache_dir)
        check_text("check_id", self.check_id)

    def seed_for(self, *keys: Any) -> int:
        """Seed of one random draw of this run: hash of the base seed, the check id and ``keys`` (integers, strings or
        literal design constants; never a computed float, whose last bits may depend on the machine)."""
        return self._seed(str(self.seed), keys)

    def borrowing(self, lender: str) -> "CheckContext":
        """This context with the seeds and the cache entries of check ``lender`` (``seed_for`` and ``cached`` hash
        ``lender``'s id), so two checks that simulate the same cells draw them once (B4 reads B7's structured Monte
        Carlo).

        The seeds are still recorded in this check's report; progress stays this check's.
        """
        check_text("lender", lender, empty=False)
        out = dataclasses.replace(self, check_id=lender)
        out.seeds_used = self.seeds_used
        return out

    def design_seed(self, *keys: Any) -> int:
        """Seed of a part of the DESIGN (a ground truth, a pilot calculation): the same for every base seed, so runs at
        different seeds are replicates of one experiment whose spread is the data's noise only (``calibrate``)."""
        return self._seed("design", keys)

    def _seed(self, head: str, keys: tuple) -> int:
        """The hash of ``head``, the check id and ``keys`` as a seed, recorded in :attr:`seeds_used`."""
        text = "|".join([head, self.check_id, *map(seed_text, keys)])
        s = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
        self.seeds_used.append(s)
        return s

    def map(self, func: Callable[..., Any], calls: Sequence[tuple]) -> list[Any]:
        """``[func(*args) for args in calls]``, on ``n_jobs`` local worker processes when there are several calls (a
        check's deterministic theory; ``func`` top-level).

        Every call runs torch and BLAS at one thread, so the numbers do not depend on ``n_jobs`` or the core count
        (tests/verify/test_context_map.py).
        """
        if self.n_jobs == 1 or len(calls) < 2:
            return [_at_one_thread(func, args) for args in calls]
        from joblib import Parallel, delayed

        return Parallel(n_jobs=min(self.n_jobs, len(calls)), backend="loky")(
            delayed(_at_one_thread)(func, args) for args in calls)

    @contextlib.contextmanager
    def progress(self, description: str, total: int) -> Iterator[Any]:
        """Context manager yielding an object with ``advance(n=1)``, over ``total >= 0`` steps named ``description``."""
        check_text("description", description)
        total = check_int("total", total, 0, MAX_SEED)
        factory = self._progress_factory or (
            lambda d, t: contextlib.nullcontext(SimpleNamespace(advance=lambda n=1: None)))
        with factory(f"{self.check_id}: {description}", total) as p:
            yield p

    def cache_key(self, name: str, key: Mapping[str, Any], version: str = "") -> str:
        """Stable SHA-256 key (64 hex digits) of one cell of :meth:`cached`: :func:`numerics.sweep.cache_key` of the
        check id, ``name``, the key dict, the base seed, the profile, the device and ``CACHE_VERSION`` + ``version``."""
        check_text("name", name, empty=False)
        key = check_mapping("key", key)
        try:
            to_jsonable(key)
        except ValueError as exc:
            raise ValueError(f"key must be JSON-serialisable: {exc}") from None
        check_text("version", version)
        cell = {"check": self.check_id, "name": name, "key": dict(key), "profile": self.profile, "device": self.device}
        # the entry kind is a fixed name (:data:`_ENTRY_KIND`), not ``compute``'s code: keys survive a wrapped method
        return sweep.cache_key(_ENTRY_KIND, cell, self.seed, version=f"{CACHE_VERSION}/{version}", source=False)

    def cached(self, name: str, key: Mapping[str, Any], compute: Callable[[], Mapping[str, Any]],
               version: str = "") -> dict[str, Any]:
        """Disk memo of one Monte Carlo cell: ``compute()`` once, later runs read it back, bit for bit.

        Stored atomically as ``<cache_dir>/<check_id>/<key>.npz`` (``key``: :meth:`cache_key`; the ``key`` dict must
        name everything the cell depends on) with its key fields and the SHA-256 of its arrays, both verified on
        read; an entry that fails is recomputed with a :class:`numerics.sweep.CacheIntegrityWarning`.  The cell is
        computed under a file lock, so two runs on one cache compute it once.  ``cache_dir=None``: computed every
        time, or once per run when the run shares a ``memo`` (a cell borrowed by another check, :meth:`borrowing`).

        Parameters
        ----------
        name : short name of the cell kind (e.g. ``"mc"``).
        key : JSON-serialisable mapping (numbers, strings, lists, numpy scalars / arrays).
        compute : zero-argument callable returning a mapping of names to numeric array-likes (no objects).
        version : extra version string for this cell kind.

        Returns
        -------
        dict of name -> ndarray
        """
        if not callable(compute):
            raise ArgumentTypeError(f"compute must be a callable, got {describe(compute)} ({type(compute).__name__})")
        h = self.cache_key(name, key, version)  # checks name, key and version
        if self.cache_dir is None and self.memo is None:
            return _computed(compute)
        if self.cache_dir is None and h not in self.memo:
            self.memo[h] = _computed(compute)
        if self.memo is not None and h in self.memo:  # copies: a caller cannot alter what the next reader gets
            return {k: v.copy() for k, v in self.memo[h].items()}
        path = self.cache_dir / (self.check_id or "_") / f"{h}.npz"
        meta = json.dumps({"check": self.check_id, "name": name, "key": to_jsonable(dict(key)), "profile": self.profile,
                           "device": self.device, "seed": self.seed, "version": f"{CACHE_VERSION}/{version}"},
                          sort_keys=True, separators=(",", ":"), allow_nan=True)  # stored, compared on read
        hit = _npz_read(path, h, meta)
        if hit is not None:
            return hit
        with _claim(path):
            hit = _npz_read(path, h, meta, warn=False)  # another run may have computed it meanwhile
            if hit is not None:
                return hit
            out = _computed(compute)
            try:
                _npz_write(path, h, meta, out)
            except OSError as exc:  # a full disk, a read-only directory: warn once, keep the cell in memory
                sweep.cache_unwritable(self.cache_dir, exc)
                if self.memo is not None:
                    self.memo[h] = out
                    return {k: v.copy() for k, v in out.items()}
        return out

    def save_figure(self, fig: Any, name: str) -> str | None:
        """Save a matplotlib figure as ``<report_dir>/<check_id>_<name>.png``; return the path or None."""
        import matplotlib.pyplot as plt
        from matplotlib.figure import Figure

        if not isinstance(fig, Figure):
            raise ArgumentTypeError(f"fig must be a matplotlib Figure, got {describe(fig)} ({type(fig).__name__})")
        check_text("name", name, empty=False)
        if any(ch in name for ch in "/\\\x00") or name in (".", ".."):
            raise ValueError(f"name must be a file name without '/', '\\' or NUL (a stem), got {name!r}")
        try:
            if self.report_dir is None:
                return None
            self.report_dir.mkdir(parents=True, exist_ok=True)
            path = self.report_dir / f"{self.check_id}_{name}.png"
            fig.savefig(path, dpi=110, bbox_inches="tight")
            return str(path)
        finally:
            plt.close(fig)


def _at_one_thread(func: Callable[..., Any], args: tuple) -> Any:
    with torch_threads(1):
        return func(*args)


def _entry_kind() -> None:
    """Names a cache entry in its key as ``verify.registry.CheckContext.cached``: fixed, stored cells stay readable."""


_entry_kind.__module__, _entry_kind.__qualname__ = "verify.registry", "CheckContext.cached"
#: what names a report cache entry in its key (fixed, whatever wraps or moves the method)
_ENTRY_KIND = _entry_kind


def _computed(compute: Callable[[], Mapping[str, Any]]) -> dict[str, Any]:
    """``compute()`` of :meth:`CheckContext.cached` as a dict of numeric arrays (names not starting with ``__``)."""
    out = compute()
    if not isinstance(out, Mapping):
        raise ArgumentTypeError(f"compute must return a mapping of names to numeric arrays, got {describe(out)}")
    arrays = {}
    for k, v in out.items():
        a = np.asarray(v) if isinstance(k, str) and not k.startswith("__") else None
        if a is None or a.dtype.kind not in "biufc":
            raise ValueError(f"compute must return numeric arrays under names (strings) not starting with '__', got "
                             f"{describe(k)}: {describe(v)}")
        arrays[k] = a
    return arrays


# ----------------------------------------------------------------------------------------- cache entries
def _arrays_checksum(arrays: Mapping[str, Any]) -> str:
    """SHA-256 of named arrays: names, dtypes, shapes and bytes, in name order."""
    h = hashlib.sha256()
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        h.update(f"{k}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _npz_read(path: Path, h: str, meta: str, warn: bool = True) -> dict | None:
    """The verified arrays of the entry at ``path`` (key hash ``h``, key fields ``meta``), or ``None``: missing,
    or rejected (with a :class:`numerics.sweep.CacheIntegrityWarning` when ``warn``)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            stored = {k: z[k] for k in z.files}
    except FileNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001 - truncated, not a zip, object arrays: never trusted
        problem = f"unreadable ({type(exc).__name__}: truncated or not an .npz)"
    else:
        problem = _npz_problem(stored, h, meta)
    if problem:
        if warn:
            warnings.warn(f"cache entry {path} ignored: {problem}; recomputing it", CacheIntegrityWarning, stacklevel=3)
        return None
    out = {k: v for k, v in stored.items() if not k.startswith("__")}
    if "__sha256__" not in stored:  # written before checksums: key verified, upgrade it in place
        with contextlib.suppress(OSError):
            _npz_write(path, h, meta, out)
    return out


def _npz_problem(stored: Mapping[str, Any], h: str, meta: str) -> str:
    """Why a loaded ``.npz`` entry cannot be trusted (``""`` when it can)."""
    if "__key__" not in stored or str(stored["__key__"]) != h:
        return "foreign entry (its stored key is not the key of this cell: another cell's file)"
    if "__meta__" in stored and str(stored["__meta__"]) != meta:
        return "foreign entry (its stored check, name, key, version, profile, device or seed differ)"
    out = {k: v for k, v in stored.items() if not k.startswith("__")}
    if not out or any(v.dtype == object for v in out.values()):
        return "malformed (no numeric arrays)"
    if "__sha256__" in stored and str(stored["__sha256__"]) != _arrays_checksum(out):
        return "checksum mismatch (the stored values were altered)"
    if ("__sha256__" in stored) != ("__meta__" in stored):
        return "malformed (a checksum without its key fields, or the reverse)"
    return ""


def _npz_write(path: Path, h: str, meta: str, out: Mapping[str, Any]) -> None:
    """Write an entry atomically (temporary file, then rename): key hash, key fields, checksum, arrays."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{h}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, __key__=np.array(h), __meta__=np.array(meta), __sha256__=np.array(_arrays_checksum(out)),
                     **out)
        os.replace(tmp, path)  # atomic: never a half-written entry under the key
    finally:
        if tmp.exists():
            tmp.unlink()


def _claim(path: Path) -> contextlib.AbstractContextManager:
    """Hold the inter-process lock of the cache entry ``path`` (waits while another run holds it); without a
    writable directory, no lock (the entry cannot be written either)."""
    held = contextlib.ExitStack()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = sweep.cell_lock(path.with_suffix(".lock"))
        lock.acquire()
        held.callback(lock.release)
    return held


