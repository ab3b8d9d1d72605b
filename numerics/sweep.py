"""Sweep runner: a grid of configurations x replicate seeds -> a results table.

``run_sweep(func, cells, ...)`` calls ``func(cell, seed) -> dict`` once per (cell, seed) pair, on the workers that a
:class:`Workers` names:

- ``executor="local"``: joblib (loky processes) with ``n_jobs`` workers; ``n_jobs=1`` runs in-process.
- ``executor="dask"``: ``dask.distributed.Client(scheduler)``, ``submit`` / ``as_completed``; ``scheduler=None`` or
  ``"local"`` starts an in-process ``LocalCluster`` (threads, no dashboard).
- On-disk cache (``cache_dir``): one JSON file per (func, cell, seed, version), keyed by a stable SHA-256 of those four
  and of func's code (:func:`cache_key`: a function redefined with another body gets new keys); a rerun reuses
  finished pairs and an interrupted sweep resumes.  The parent writes each file as its result arrives, with its key
  and the SHA-256 of its result; a read verifies both, and an entry that fails (another cell's file, an edited or
  truncated one, a malformed result) is recomputed with a :class:`CacheIntegrityWarning`.  Concurrent sweeps on one
  directory claim each pair with a file lock (:func:`cell_lock`), so no pair is computed twice.
- ``progress(record)`` is called once per finished pair (cached ones included).

Results do not depend on the executor: every pair gets its own seed, ``func`` must draw all its randomness from it, and
torch is pinned to one intra-op thread while ``func`` runs (in every executor, in-process too), so that floating-point
reductions are the same everywhere.  ``func`` must be a top-level (picklable) function returning a JSON-serialisable
dict whose keys do not collide with the cell's keys or ``"seed"``.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from numerics.malloc import apply_inherited
from theory.validation import MAX_SEED, ArgumentTypeError, as_int, check_choice, check_seed, check_text, describe
from ._cache_files import (CacheIntegrityWarning, CacheWriteWarning, cache_path, cache_read, cache_unwritable,
                           cache_write, cell_lock)
from ._cache_keys import cache_key, cell_seed, qualname, source_version, to_jsonable  # noqa: F401 (for verify)

__all__ = ["SweepResults", "Workers", "run_sweep", "cell_seed", "cache_key", "to_jsonable", "CacheIntegrityWarning",
           "CacheWriteWarning"]

#: the modules whose source decides each simulation's draws and values (:func:`simulation_modules`)
_SIMULATION_MODULES = {"paper-b-mc": ("numerics.rmt", "numerics._mc", "numerics._ridge_solvers",
                                      "numerics.model_simulation"),
                       "paper-a-estimator": ("numerics.ips", "numerics.estimator", "numerics._piecewise")}


def simulation_modules(kind: str) -> tuple:
    """The modules, private ones included, whose source decides a simulation's draws and values, for a caller's
    cache version (:func:`source_version`): ``"paper-b-mc"`` (paper B's Monte Carlo: samplers, kernels, solvers) or
    ``"paper-a-estimator"`` (paper A's sampler and estimator with its basis)."""
    import importlib

    return tuple(importlib.import_module(name) for name in _SIMULATION_MODULES[kind])

_EXECUTORS = ("local", "dask")


@dataclass(frozen=True)
class Workers:
    """Where :func:`run_sweep` computes: backend, worker count and torch's intra-op threads per task.

    Attributes
    ----------
    n_jobs : int
        Worker processes (``"local"``) or workers of the in-process cluster (``"dask"``); ``>= 1``.
    executor : {"local", "dask"}
    scheduler : str or distributed.Client or None
        Dask only: a scheduler address, an existing ``Client``, or ``None`` / ``"local"`` (in-process ``LocalCluster``).
    torch_threads : int or None
        Intra-op threads of torch while a task runs (default 1: identical results everywhere and no oversubscription
        with several workers); ``None`` leaves torch alone.
    """

    n_jobs: int = 2
    executor: str = "local"
    scheduler: Any = None
    torch_threads: int | None = 1

    def __post_init__(self) -> None:
        from numerics.threads import check_n_jobs

        check_choice("executor", self.executor, _EXECUTORS)
        check_n_jobs("n_jobs", self.n_jobs)
        if self.torch_threads is not None:
            check_n_jobs("torch_threads", self.torch_threads)

#: largest ``n_replicates`` of :func:`run_sweep` (the seeds are derived up front, one hash each)
MAX_REPLICATES = 10**6


_TT_LOCK = threading.Lock()
_TT_STATE = {"depth": 0, "old": None}


@contextlib.contextmanager
def _torch_threads(n: int | None) -> Iterator[None]:
    """Pin torch's intra-op threads while ``func`` runs (no-op without torch or with ``n=None``); re-entrant across
    the threads of an in-process Dask cluster: the first task to enter saves torch's setting, the last restores it."""
    if n is None:
        yield
        return
    try:
        import torch
    except ImportError:  # pragma: no cover
        yield
        return
    with _TT_LOCK:
        if _TT_STATE["depth"] == 0:
            _TT_STATE["old"] = torch.get_num_threads()
        _TT_STATE["depth"] += 1
        torch.set_num_threads(n)
    try:
        yield
    finally:
        with _TT_LOCK:
            _TT_STATE["depth"] -= 1
            if _TT_STATE["depth"] == 0:
                torch.set_num_threads(_TT_STATE["old"])


def _call(func: Callable, cell: dict, seed: int, torch_threads: int | None) -> dict:
    """Worker entry point (top-level, picklable); a worker process first takes its parent's heap settings
    (:func:`numerics.malloc.apply_inherited`)."""
    apply_inherited()
    with _torch_threads(torch_threads):
        out = func(dict(cell), int(seed))
    if not isinstance(out, Mapping):
        raise ValueError(f"func must return a dict, got {type(out).__name__}")
    return to_jsonable(out)


# ----------------------------------------------------------------------------------------- results
class SweepResults:
    """Results of :func:`run_sweep`: one record ``{**cell, "seed": seed, **result}`` per (cell, seed), in grid order;
    ``n_computed`` / ``n_cached``: how many were computed in this call / came from the cache."""

    def __init__(self, records: list[dict], n_computed: int = 0, n_cached: int = 0) -> None:
        self.records, self.n_computed, self.n_cached = records, n_computed, n_cached

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[dict]:
        return iter(self.records)

    def __getitem__(self, i: int) -> dict:
        return self.records[i]

    def __repr__(self) -> str:
        return f"SweepResults({len(self)} records, computed={self.n_computed}, cached={self.n_cached})"

    def column(self, name: str) -> np.ndarray:
        """Values of ``name`` across records (numpy array)."""
        if not self.records or any(name not in r for r in self.records):
            raise ValueError(f"name must be a key of every record, got {name!r}")
        return np.asarray([r[name] for r in self.records])

    def filter(self, **conditions: Any) -> "SweepResults":
        """Records whose columns equal the given values."""
        return SweepResults([r for r in self.records if all(r.get(k) == v for k, v in conditions.items())])


# ----------------------------------------------------------------------------------------- runner
def _resolve_seeds(cells: list[dict], seeds: Any, n_replicates: int | None, base_seed: int) -> list[list[int]]:
    if seeds is not None and n_replicates is not None:
        raise ValueError("give either seeds or n_replicates, not both")
    if seeds is None:
        if n_replicates is None:
            raise ValueError("n_replicates must be an integer >= 1 when seeds is None, got None")
        n = as_int("n_replicates", n_replicates, 1, MAX_REPLICATES)
        base_seed = check_seed("base_seed", base_seed)
        return [[cell_seed(base_seed, c, i) for i in range(n)] for c in cells]
    if callable(seeds):
        out = [_seed_list(seeds(i, c)) for i, c in enumerate(cells)]
    else:
        out = [_seed_list(seeds)] * len(cells)
    checked: dict[int, list[int]] = {}  # a fixed seed list is one object repeated per cell: check it once
    for s_list in out:
        if id(s_list) not in checked:
            if not s_list:
                raise ValueError("seeds must give at least one seed per cell")
            checked[id(s_list)] = [int(check_seed("seeds", s)) for s in s_list]
    return [list(checked[id(s_list)]) for s_list in out]


def _seed_list(seeds: Any) -> list:
    """``list(seeds)`` of a sequence (not a string, bytes, mapping or set) of at most MAX_REPLICATES seeds."""
    if isinstance(seeds, (str, bytes, Mapping, set, frozenset)) or not isinstance(seeds, Iterable):
        raise ArgumentTypeError(f"seeds must be a sequence of integers in [0, {MAX_SEED}], got {describe(seeds)} "
                                f"of type {type(seeds).__name__}")
    out = list(seeds) if len(getattr(seeds, "shape", ())) <= 1 else None
    if out is None or len(out) > MAX_REPLICATES:
        raise ValueError(f"seeds must be a flat sequence of at most {MAX_REPLICATES} seeds, got {describe(seeds)}")
    return out


def run_sweep(func: Callable[[dict, int], dict], cells: Iterable[Mapping[str, Any]],
              seeds: Sequence[int] | Callable[[int, dict], Sequence[int]] | None = None,
              n_replicates: int | None = None, *, base_seed: int = 0, cache_dir: str | os.PathLike | None = None,
              version: str = "1", workers: Workers = Workers(),
              progress: Callable[[dict], None] | None = None) -> SweepResults:
    """Run ``func(cell, seed)`` for every cell and replicate seed; return the results table.

    Parameters
    ----------
    func : callable
        Top-level ``func(cell: dict, seed: int) -> dict`` (JSON-serialisable values; all randomness from ``seed``).
    cells : iterable of mapping
        Configurations (JSON-serialisable dicts), e.g. ``[{"M": 100, "P": 3}, ...]``.
    seeds : sequence of int, or callable ``(cell_index, cell) -> sequence of int``, optional
        Replicate seeds: the same list for every cell, or one list per cell.
    n_replicates : int, optional
        Instead of ``seeds``: that many seeds per cell, ``cell_seed(base_seed, cell, i)`` (all independent).
    base_seed : int
        Base of the derived seeds (only with ``n_replicates``).
    cache_dir : path, optional
        Directory of the on-disk cache (module docstring); ``None`` disables caching.  With a cache, the same (cell,
        seed) twice in one call is computed once.
    version : str
        Part of the cache key; change it when ``func``'s meaning changes.
    workers : Workers
        Backend, worker count and torch threads (default: two local processes, torch at one thread).
    progress : callable, optional
        Called with each finished record (once per pair, cached ones included).

    Returns
    -------
    SweepResults
        Records ``{**cell, "seed": seed, **result}`` in grid order (cells outer, seeds inner).

    Raises
    ------
    ValueError
        Bad seeds, non-picklable ``func``, result keys that collide with the cell's keys, non-serialisable values.

    Examples
    --------
    >>> from numerics.sweep import run_sweep
    >>> def _f(cell, seed):  # doctest: +SKIP
    ...     return {"y": cell["x"] * 2}
    """
    if not isinstance(workers, Workers):
        raise ArgumentTypeError(f"workers must be a numerics.Workers, got {describe(workers)}")
    check_text("version", version, empty=False)
    fname = qualname(func)
    cell_list = _check_cells(cells)
    seed_lists = _resolve_seeds(cell_list, seeds, n_replicates, base_seed)
    pairs = [(i, c, s) for i, (c, sl) in enumerate(zip(cell_list, seed_lists)) for s in sl]
    table = _Table(pairs, None if cache_dir is None else Path(cache_dir), fname, version, progress)
    run = _run_local if workers.executor == "local" else _run_dask
    todo = table.read_cache(func)
    try:
        while todo:  # a second round only for pairs another run had claimed and then did not finish
            run(func, table, table.claimed(todo), len(todo), workers)
            todo = table.wait_for_others()
    finally:
        table.release_all()  # an error or an interrupt: the claims of unfinished pairs go back
    return SweepResults(table.records(), n_computed=len(pairs) - table.n_cached, n_cached=table.n_cached)


def _check_cells(cells: Iterable[Mapping[str, Any]]) -> list[dict]:
    """The cells as plain JSON dicts; at least one, none with the key ``"seed"``."""
    if isinstance(cells, (str, bytes, Mapping)) or not isinstance(cells, Iterable):
        raise ArgumentTypeError(f"cells must be an iterable of mappings, got {describe(cells)} of type "
                                f"{type(cells).__name__}")
    cell_list = []
    for c in cells:
        if not isinstance(c, Mapping):
            raise ArgumentTypeError(f"cells must be an iterable of mappings, got an element {describe(c)} of type "
                                    f"{type(c).__name__}")
        cell_list.append(to_jsonable(dict(c)))
        if "seed" in cell_list[-1]:
            raise ValueError("cells must not contain the key 'seed' (it is added by run_sweep)")
    if not cell_list:
        raise ValueError("cells must contain at least one configuration")
    return cell_list


class _Table:
    """The results of one :func:`run_sweep` call as they arrive: cache reads, claims, cache writes, progress.

    ``pairs[j] = (cell_index, cell, seed)``; ``results[j]`` is ``None`` until pair ``j`` is finished.  With a cache,
    pairs with the same key are computed once (by the first, the leader, for its followers), and a pair only under
    its claim (:func:`cell_lock`); one claimed by another run is deferred and read back once that run releases it.
    """

    def __init__(self, pairs: list[tuple[int, dict, int]], cdir: Path | None, fname: str, version: str,
                 progress: Callable[[dict], None] | None) -> None:
        self.pairs, self.cdir, self.fname, self.version, self.progress = pairs, cdir, fname, version, progress
        self.results: list[dict | None] = [None] * len(pairs)
        self.keys: list[str | None] = [None] * len(pairs)
        self.followers: dict[int, list[int]] = {}
        self.locks: dict[int, Any] = {}
        self.deferred: list[int] = []  # claimed elsewhere (appended from joblib's dispatch thread too)
        self.late: list[tuple[int, dict]] = []  # found in the cache once claimed
        self.n_cached = 0

    def read_cache(self, func: Callable) -> list[int]:
        """Fill the results found in the cache, report them to ``progress``; return the pairs still to compute."""
        todo: list[int] = []
        leader: dict[str, int] = {}
        for j, (_, c, s) in enumerate(self.pairs):
            if self.cdir is not None:
                self.keys[j] = k = cache_key(func, c, s, self.version)
                if k in leader:  # the same (func, cell, seed, version) twice: computed once, by the first
                    self.followers.setdefault(leader[k], []).append(j)
                    if self.results[leader[k]] is not None:
                        self.results[j] = self.results[leader[k]]
                        self.n_cached += 1
                    continue
                leader[k] = j
                hit = self._read(j)
                if hit is not None:
                    self._fill(j, hit, cached=True, report=False)
                    continue
            todo.append(j)
        if self.progress is not None:
            for j in range(len(self.pairs)):
                if self.results[j] is not None:
                    self.progress(self.record(j))
        return todo

    def _read(self, j: int, warn: bool = True) -> dict | None:
        _, c, s = self.pairs[j]
        expect = {"func": self.fname, "cell": c, "seed": s, "version": self.version}
        path = cache_path(self.cdir, self.keys[j])
        with warnings.catch_warnings():
            if not warn:
                warnings.simplefilter("ignore", CacheIntegrityWarning)
            return cache_read(path, expect, set(c) | {"seed"})

    def _try_lock(self, j: int) -> bool:
        """Claim pair ``j`` without waiting; ``False`` when another run holds it."""
        from filelock import Timeout

        path = cache_path(self.cdir, self.keys[j], ".lock")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            lock = cell_lock(path)
            lock.acquire(timeout=0)
        except Timeout:
            return False
        except OSError as exc:  # a directory that cannot be written: no claim (nor entry) there
            cache_unwritable(path.parent.parent, exc)
            return True
        self.locks[j] = lock
        return True

    def _unlock(self, j: int) -> None:
        lock = self.locks.pop(j, None)
        if lock is not None:
            lock.release()

    def release_all(self) -> None:
        """Give back every claim still held."""
        for j in list(self.locks):
            self._unlock(j)

    def claimed(self, todo: list[int]) -> Iterator[int]:
        """The pairs of ``todo`` this run computes, claimed one by one as the executor asks for them (so only
        the pairs in flight hold a lock); the others are deferred to :meth:`wait_for_others`."""
        for j in todo:
            if self.cdir is None:
                yield j
                continue
            if j not in self.locks:
                if not self._try_lock(j):
                    self.deferred.append(j)
                    continue
                hit = self._read(j, warn=False)  # finished by another run since read_cache
                if hit is not None:
                    self._unlock(j)
                    self.late.append((j, hit))
                    continue
            yield j

    def wait_for_others(self) -> list[int]:
        """Wait until every deferred pair is released by the run that claimed it; fill the ones it finished and
        return (claimed by this run) the ones it left unfinished."""
        for j, hit in self.late:
            self._fill(j, hit, cached=True)
        self.late = []
        pending, self.deferred, ready, delay = self.deferred, [], [], 0.02
        while pending:
            still = []
            for j in pending:
                if not self._try_lock(j):
                    still.append(j)
                    continue
                hit = self._read(j)
                if hit is None:
                    ready.append(j)  # its claimant stopped: compute it here (the claim is kept)
                else:
                    self._unlock(j)
                    self._fill(j, hit, cached=True)
            pending = still
            if pending:
                time.sleep(delay)
                delay = min(2 * delay, 0.5)
        return ready

    def _fill(self, j: int, res: dict, cached: bool, report: bool = True) -> None:
        """Result of pair ``j`` and of its followers; count and report them."""
        group = [j, *self.followers.get(j, [])]
        for i in group:
            self.results[i] = res
        if cached:
            self.n_cached += len(group)
        if report and self.progress is not None:
            for i in group:
                self.progress(self.record(i))

    def record(self, j: int) -> dict:
        """``{**cell, "seed": seed, **result}`` of pair ``j``."""
        _, c, s = self.pairs[j]
        res = self.results[j]
        clash = set(res) & (set(c) | {"seed"})
        if clash:
            raise ValueError(f"func's result keys collide with cell keys or 'seed': {sorted(clash)}")
        return {**c, "seed": s, **res}

    def finish(self, j: int, res: dict) -> None:
        """Store the result of pair ``j``, write it to the cache, release its claim, report it to ``progress``."""
        if self.cdir is not None:
            _, c, s = self.pairs[j]
            try:
                cache_write(cache_path(self.cdir, self.keys[j]), self.fname, c, s, self.version, res)
            finally:
                self._unlock(j)
        self._fill(j, res, cached=False)

    def records(self) -> list[dict]:
        """Every record, in grid order."""
        return [self.record(j) for j in range(len(self.pairs))]


def _run_local(func: Callable, table: "_Table", work: Iterable[int], n: int, workers: Workers) -> None:
    """The pairs of ``work`` (``n`` of them at most) in this process or in ``n_jobs`` loky workers; joblib takes
    them from ``work`` lazily (``pre_dispatch``), so only the pairs in flight are claimed."""
    pairs, threads = table.pairs, workers.torch_threads
    if workers.n_jobs == 1 or n == 1:
        for j in work:
            table.finish(j, _call(func, pairs[j][1], pairs[j][2], threads))
        return
    from joblib import Parallel, delayed

    par = Parallel(n_jobs=min(workers.n_jobs, n), backend="loky", return_as="generator_unordered")
    for j, res in par(delayed(_indexed_call)(j, func, pairs[j][1], pairs[j][2], threads) for j in work):
        table.finish(j, res)


def _indexed_call(j: int, func, cell, seed, torch_threads) -> tuple[int, dict]:
    return j, _call(func, cell, seed, torch_threads)


def _run_dask(func: Callable, table: "_Table", work: Iterable[int], n: int, workers: Workers) -> None:
    """The pairs of ``work`` on a Dask cluster, in a window of twice its threads (only those in flight are claimed)."""
    pairs, n_jobs, scheduler = table.pairs, workers.n_jobs, workers.scheduler
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError as exc:  # pragma: no cover
        raise ValueError("executor='dask' needs dask[distributed] installed") from exc

    with contextlib.ExitStack() as stack:
        if isinstance(scheduler, Client):
            client = scheduler
        elif scheduler is None or scheduler == "local":
            cluster = stack.enter_context(LocalCluster(n_workers=n_jobs, threads_per_worker=1, processes=False,
                                                       dashboard_address=None))
            client = stack.enter_context(Client(cluster))
        elif isinstance(scheduler, str):
            client = stack.enter_context(Client(scheduler))
        else:
            raise ValueError(f"scheduler must be None, 'local', an address or a distributed.Client, got {scheduler!r}")
        window = max(2 * n_jobs, 2 * sum(client.nthreads().values()), 2)
        todo, running = iter(work), as_completed()

        def submit() -> None:
            j = next(todo, None)
            if j is not None:
                running.add(client.submit(_indexed_call, j, func, pairs[j][1], pairs[j][2], workers.torch_threads,
                                          pure=False))

        for _ in range(window):
            submit()
        for fut in running:
            table.finish(*fut.result())
            submit()
