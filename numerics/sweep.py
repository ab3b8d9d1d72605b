"""Sweep runner: a grid of configurations x replicate seeds -> a results table.

``run_sweep(func, cells, ...)`` calls ``func(cell, seed) -> dict`` once per (cell, seed) pair.

- ``executor="local"``: joblib (loky processes) with ``n_jobs`` workers; ``n_jobs=1`` runs in-process.
- ``executor="dask"``: ``dask.distributed.Client(scheduler)``, ``submit`` / ``as_completed``;
  ``scheduler=None`` or ``"local"`` starts an in-process ``LocalCluster`` (threads, no dashboard).
- On-disk cache (``cache_dir``): one small JSON file per (func, cell, seed, version), keyed by a
  stable SHA-256 of those four; a rerun reuses finished pairs and an interrupted sweep resumes.
  The parent process writes each file as soon as its result arrives.
- ``progress(record)`` is called once per finished pair (cached ones included).

Results do not depend on the executor: every pair gets its own seed, ``func`` must draw all its
randomness from that seed, and torch is pinned to one intra-op thread while ``func`` runs (in
every executor, in-process too), so that floating-point reductions are the same everywhere.
``func`` must be a top-level (picklable) function returning a JSON-serialisable dict whose keys do
not collide with the cell's keys or ``"seed"``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

__all__ = ["SweepResults", "run_sweep", "cell_seed", "cache_key", "source_version", "to_jsonable"]

_EXECUTORS = ("local", "dask")


# ----------------------------------------------------------------------------------------- helpers
#: what :func:`to_jsonable` does with a NaN or an infinity: keep the float, write ``str(v)``, write ``None``
NONFINITE_POLICIES = ("keep", "str", "null")
#: what :func:`to_jsonable` does with a value of any other type: raise ``ValueError``, write ``str(v)``, keep it
UNKNOWN_POLICIES = ("raise", "str", "keep")


def to_jsonable(v: Any, nonfinite: str = "keep", unknown: str = "raise") -> Any:
    """Convert numpy scalars / arrays, mappings and tuples to plain JSON values (recursively).

    The project's one JSON conversion: the sweep cache and its keys (the defaults), the verify report
    (``nonfinite="str", unknown="str"``) and the benchmark summary (``nonfinite="null", unknown="keep"``).

    Parameters
    ----------
    v : any
        numpy scalars become Python scalars, arrays nested lists, mappings dicts with ``str`` keys, tuples lists;
        ``str``, ``int``, ``float``, ``bool`` and ``None`` stay as they are.
    nonfinite : {"keep", "str", "null"}
        A NaN or infinite float (numpy ones included): kept (``json.dumps`` writes ``NaN`` / ``Infinity``),
        written as ``str(v)`` (``"nan"``, ``"inf"``, ``"-inf"``) or as ``None``.
    unknown : {"raise", "str", "keep"}
        Any other value: ``ValueError``, ``str(v)``, or kept as it is (for a later ``json.dumps(default=...)``).

    Returns
    -------
    any
        A value made of dicts, lists, strings, numbers, booleans and ``None`` (and the kept values).

    Raises
    ------
    ValueError
        A bad policy, or (``unknown="raise"``) a value that is not JSON-serialisable.

    Examples
    --------
    >>> import numpy as np
    >>> to_jsonable({"a": np.float64(0.5), 1: (np.int64(2), np.array([1.0, np.nan]))})
    {'a': 0.5, '1': [2, [1.0, nan]]}
    >>> to_jsonable([float("inf"), np.nan], nonfinite="str"), to_jsonable([float("inf")], nonfinite="null")
    (['inf', 'nan'], [None])
    """
    if nonfinite not in NONFINITE_POLICIES:
        raise ValueError(f"nonfinite must be one of {NONFINITE_POLICIES}, got {nonfinite!r}")
    if unknown not in UNKNOWN_POLICIES:
        raise ValueError(f"unknown must be one of {UNKNOWN_POLICIES}, got {unknown!r}")
    return _to_json(v, nonfinite, unknown)


def _to_json(v: Any, nonfinite: str, unknown: str) -> Any:
    """:func:`to_jsonable` without the policy checks."""
    if isinstance(v, np.ndarray):
        return _array_to_json(v, nonfinite, unknown)
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return v if nonfinite == "keep" else (str(v) if nonfinite == "str" else None)
    if isinstance(v, Mapping):
        return {str(k): _to_json(x, nonfinite, unknown) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_to_json(x, nonfinite, unknown) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if unknown == "raise":
        raise ValueError(f"value {v!r} of type {type(v).__name__} is not JSON-serialisable")
    return str(v) if unknown == "str" else v


def _array_to_json(a: np.ndarray, nonfinite: str, unknown: str) -> Any:
    """An array as nested lists; element by element only where a policy can change an element."""
    out = a.tolist()
    if a.dtype.kind in "biu" or (a.dtype.kind == "f" and (nonfinite == "keep" or bool(np.isfinite(a).all()))):
        return out  # already plain bools / ints / floats, and no element to rewrite
    return _to_json(out, nonfinite, unknown)


def _canonical(obj: Any) -> str:
    return json.dumps(to_jsonable(obj), sort_keys=True, separators=(",", ":"), allow_nan=True)


def _qualname(func: Callable) -> str:
    mod = getattr(func, "__module__", None)
    qn = getattr(func, "__qualname__", None)
    if mod is None or qn is None or "<lambda>" in qn or "<locals>" in qn:
        raise ValueError(f"func must be a top-level (picklable) function, got {func!r}")
    return f"{mod}.{qn}"


def cache_key(func: Callable, cell: Mapping[str, Any], seed: int, version: str = "1") -> str:
    """Stable SHA-256 key of ``(qualified name of func, cell, seed, version)``.

    Parameters
    ----------
    func : callable
        Top-level function.
    cell : mapping
        JSON-serialisable configuration.
    seed : int
        Replicate seed.
    version : str
        Bump it when ``func``'s meaning changes, to invalidate old cache entries.

    Returns
    -------
    str
        64 hex digits.
    """
    text = _canonical({"func": _qualname(func), "cell": dict(cell), "seed": int(seed), "version": str(version)})
    return hashlib.sha256(text.encode()).hexdigest()


def source_version(prefix: str, *objects: Any) -> str:
    """A cache version that changes whenever the source of any of ``objects`` changes.

    Parameters
    ----------
    prefix : str
        Readable prefix (``"a-rates"``, ``"b-mc"``, ...).
    *objects : modules, classes or functions (hashed through :func:`inspect.getsource`), or plain values
        (module constants: hashed through ``repr``).

    Returns
    -------
    str
        ``"<prefix>-<12 hex digits>"``; use it as the ``version`` of :func:`cache_key` / :func:`run_sweep`
        so that an edit of the simulation code never returns a stale cache entry.
    """
    import inspect

    h = hashlib.sha256()
    for obj in objects:
        try:
            text = inspect.getsource(obj)
        except TypeError:  # a plain value
            text = repr(obj)
        h.update(text.encode())
    return f"{prefix}-{h.hexdigest()[:12]}"


#: cell keys that say WHERE a cell runs, not WHAT it simulates: left out of the replicate seeds (so that a
#: GPU run fits the same data as a CPU run and the two can be compared pair by pair), kept in the cache key
EXECUTION_KEYS = ("device",)
#: cell keys that only LABEL a cell (to find it in the results): left out of the replicate seeds as well
LABEL_KEYS = ("group",)


def _seed_part(v: Any) -> Any:
    """The part of a cell value that enters a seed: integers, strings, booleans (recursively); floats never."""
    if isinstance(v, (bool, str, int, np.integer)) or v is None:
        return v.item() if isinstance(v, np.generic) else v
    if isinstance(v, (list, tuple)):
        parts = [_seed_part(x) for x in v]
        return [x for x in parts if x is not _DROP]
    if isinstance(v, dict):
        parts = {str(k): _seed_part(x) for k, x in v.items()}
        return {k: x for k, x in parts.items() if x is not _DROP}
    return _DROP  # floats (computed values: their last bits depend on the BLAS code path) and anything else


_DROP = object()


def cell_seed(base_seed: int, cell: Mapping[str, Any], replicate: int) -> int:
    """Independent 32-bit seed for replicate ``replicate`` of ``cell`` (hash of all three).

    Only the integers, strings and booleans of the cell enter the seed: a float (a noise level computed by a
    pilot calculation, a ridge constant) never does, because its last bits can depend on the machine's BLAS
    code path, and a seed that hashes them would redraw every data set on another CPU.  Cells that differ
    only in float values therefore get the same replicate seeds (common random numbers, e.g. one design at
    two noise levels).  Keys of :data:`EXECUTION_KEYS` (``"device"``) and :data:`LABEL_KEYS` (``"group"``) are
    not part of the seed either: they do not change the data.  The cache key (:func:`cache_key`) still hashes the whole cell.

    Examples
    --------
    >>> cell_seed(0, {"M": 100}, 0) == cell_seed(0, {"M": 100}, 0)
    True
    >>> cell_seed(0, {"M": 100}, 0) != cell_seed(0, {"M": 100}, 1)
    True
    >>> cell_seed(0, {"M": 100, "sigma": 0.1}, 0) == cell_seed(0, {"M": 100, "sigma": 0.2}, 0)
    True
    """
    data_cell = _seed_part({k: v for k, v in cell.items() if k not in EXECUTION_KEYS + LABEL_KEYS})
    text = _canonical({"base": int(base_seed), "cell": data_cell, "rep": int(replicate)})
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")


_TT_LOCK = threading.Lock()
_TT_STATE = {"depth": 0, "old": None}


@contextlib.contextmanager
def _torch_threads(n: int | None) -> Iterator[None]:
    """Pin torch's intra-op threads while ``func`` runs (no-op without torch or with ``n=None``).

    Re-entrant across threads (the in-process Dask cluster runs tasks in threads of one process):
    the first task to enter saves torch's setting, the last to leave restores it.
    """
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
    """Worker entry point (top-level, picklable)."""
    with _torch_threads(torch_threads):
        out = func(dict(cell), int(seed))
    if not isinstance(out, Mapping):
        raise ValueError(f"func must return a dict, got {type(out).__name__}")
    return to_jsonable(out)


# ----------------------------------------------------------------------------------------- results
class SweepResults:
    """Results of :func:`run_sweep`: one record per (cell, seed), in grid order.

    A record is ``{**cell, "seed": seed, **result}``. ``n_computed`` / ``n_cached`` say how many
    records were computed in this call and how many came from the cache.
    """

    def __init__(self, records: list[dict], n_computed: int = 0, n_cached: int = 0) -> None:
        self.records = records
        self.n_computed = n_computed
        self.n_cached = n_cached

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[dict]:
        return iter(self.records)

    def __getitem__(self, i: int) -> dict:
        return self.records[i]

    def __repr__(self) -> str:
        return f"SweepResults({len(self)} records, computed={self.n_computed}, cached={self.n_cached})"

    def to_records(self) -> list[dict]:
        """A list of flat dicts (copies)."""
        return [dict(r) for r in self.records]

    def column(self, name: str) -> np.ndarray:
        """Values of ``name`` across records (numpy array)."""
        if not self.records or any(name not in r for r in self.records):
            raise ValueError(f"name must be a key of every record, got {name!r}")
        return np.asarray([r[name] for r in self.records])

    def groupby(self, *keys: str) -> "OrderedDict[tuple, SweepResults]":
        """Group records by the values of ``keys`` (first-appearance order)."""
        if not keys:
            raise ValueError("keys must name at least one column")
        groups: OrderedDict[tuple, list[dict]] = OrderedDict()
        for r in self.records:
            try:
                k = tuple(_hashable(r[key]) for key in keys)
            except KeyError as exc:
                raise ValueError(f"keys must be columns of the records, missing {exc.args[0]!r}") from None
            groups.setdefault(k, []).append(r)
        return OrderedDict((k, SweepResults(v)) for k, v in groups.items())

    def filter(self, **conditions: Any) -> "SweepResults":
        """Records whose columns equal the given values."""
        return SweepResults([r for r in self.records if all(r.get(k) == v for k, v in conditions.items())])


def _hashable(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v


# ----------------------------------------------------------------------------------------- cache
def _cache_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / key[:2] / f"{key}.json"


def _cache_read(path: Path) -> dict | None:
    try:
        with open(path) as fh:
            blob = json.load(fh)
        return blob["result"]
    except (OSError, ValueError, KeyError):
        return None  # missing or corrupt (e.g. interrupted write): recompute


def _cache_write(path: Path, func: str, cell: dict, seed: int, version: str, result: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    with open(tmp, "w") as fh:
        json.dump({"func": func, "cell": cell, "seed": seed, "version": version, "result": result}, fh)
    os.replace(tmp, path)  # atomic: a crash never leaves a half-written entry under the key


# ----------------------------------------------------------------------------------------- runner
def _resolve_seeds(cells: list[dict], seeds: Any, n_replicates: int | None, base_seed: int) -> list[list[int]]:
    if seeds is not None and n_replicates is not None:
        raise ValueError("give either seeds or n_replicates, not both")
    if seeds is None:
        if n_replicates is None or int(n_replicates) != n_replicates or n_replicates < 1:
            raise ValueError(f"n_replicates must be an integer >= 1 when seeds is None, got {n_replicates!r}")
        return [[cell_seed(base_seed, c, i) for i in range(int(n_replicates))] for c in cells]
    if callable(seeds):
        out = [list(seeds(i, c)) for i, c in enumerate(cells)]
    else:
        out = [list(seeds)] * len(cells)
    for s_list in out:
        if not s_list:
            raise ValueError("seeds must give at least one seed per cell")
        for s in s_list:
            if isinstance(s, bool) or int(s) != s or s < 0:
                raise ValueError(f"seeds must be non-negative integers, got {s!r}")
    return [[int(s) for s in s_list] for s_list in out]


def run_sweep(
    func: Callable[[dict, int], dict],
    cells: Iterable[Mapping[str, Any]],
    seeds: Sequence[int] | Callable[[int, dict], Sequence[int]] | None = None,
    n_replicates: int | None = None,
    *,
    base_seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    version: str = "1",
    n_jobs: int = 2,
    executor: str = "local",
    scheduler: Any = None,
    progress: Callable[[dict], None] | None = None,
    torch_threads: int | None = 1,
) -> SweepResults:
    """Run ``func(cell, seed)`` for every cell and replicate seed; return the results table.

    Parameters
    ----------
    func : callable
        Top-level function ``func(cell: dict, seed: int) -> dict`` (JSON-serialisable values);
        all its randomness must come from ``seed``.
    cells : iterable of mapping
        Configurations (JSON-serialisable dicts), e.g. ``[{"M": 100, "P": 3}, ...]``.
    seeds : sequence of int, or callable ``(cell_index, cell) -> sequence of int``, optional
        Replicate seeds: the same list for every cell, or one list per cell.
    n_replicates : int, optional
        Instead of ``seeds``: that many seeds per cell, ``cell_seed(base_seed, cell, i)``
        (independent across cells and replicates).
    base_seed : int
        Base of the derived seeds (only with ``n_replicates``).
    cache_dir : path, optional
        Directory of the on-disk cache; ``None`` disables caching.
    version : str
        Part of the cache key; change it when ``func``'s meaning changes.
    n_jobs : int
        Worker processes (``local``) or workers of the in-process cluster (``dask``); ``>= 1``.
    executor : {"local", "dask"}
        Backend.
    scheduler : str or distributed.Client or None
        Dask only: a scheduler address, an existing ``Client``, or ``None`` / ``"local"``
        (in-process ``LocalCluster``, threads, ``dashboard_address=None``).
    progress : callable, optional
        Called with each finished record (once per pair, cached ones included).
    torch_threads : int or None
        Intra-op threads of torch while ``func`` runs (default 1: identical results everywhere and
        no oversubscription with several workers); ``None`` leaves torch alone.

    Returns
    -------
    SweepResults
        Records ``{**cell, "seed": seed, **result}`` in grid order (cells outer, seeds inner).

    Raises
    ------
    ValueError
        Bad ``executor``, ``n_jobs``, seeds, non-picklable ``func``, result keys that collide with
        the cell's keys, non-serialisable values.

    Examples
    --------
    >>> from numerics.sweep import run_sweep
    >>> def _f(cell, seed):  # doctest: +SKIP
    ...     return {"y": cell["x"] * 2}
    """
    _check_backend(executor, n_jobs)
    fname = _qualname(func)
    cell_list = _check_cells(cells)
    seed_lists = _resolve_seeds(cell_list, seeds, n_replicates, base_seed)
    pairs = [(i, c, s) for i, (c, sl) in enumerate(zip(cell_list, seed_lists)) for s in sl]
    table = _Table(pairs, None if cache_dir is None else Path(cache_dir), fname, version, progress)
    todo = table.read_cache(func)
    if todo:
        if executor == "local":
            _run_local(func, pairs, todo, n_jobs, torch_threads, table.finish)
        else:
            _run_dask(func, pairs, todo, n_jobs, scheduler, torch_threads, table.finish)
    return SweepResults(table.records(), n_computed=len(todo), n_cached=table.n_cached)


def _check_backend(executor: str, n_jobs: Any) -> None:
    """``executor`` is one of :data:`_EXECUTORS` and ``n_jobs`` an integer ``>= 1``."""
    if executor not in _EXECUTORS:
        raise ValueError(f"executor must be one of {_EXECUTORS}, got {executor!r}")
    if isinstance(n_jobs, bool) or int(n_jobs) != n_jobs or n_jobs < 1:
        raise ValueError(f"n_jobs must be an integer >= 1, got {n_jobs!r}")


def _check_cells(cells: Iterable[Mapping[str, Any]]) -> list[dict]:
    """The cells as plain JSON dicts; at least one, none with the key ``"seed"``."""
    cell_list = [to_jsonable(dict(c)) for c in cells]
    if not cell_list:
        raise ValueError("cells must contain at least one configuration")
    for c in cell_list:
        if "seed" in c:
            raise ValueError("cells must not contain the key 'seed' (it is added by run_sweep)")
    return cell_list


class _Table:
    """The results of one :func:`run_sweep` call as they arrive: cache reads, cache writes, progress, records.

    ``pairs[j] = (cell_index, cell, seed)``; ``results[j]`` is ``None`` until pair ``j`` is finished.
    """

    def __init__(self, pairs: list[tuple[int, dict, int]], cdir: Path | None, fname: str, version: str,
                 progress: Callable[[dict], None] | None) -> None:
        self.pairs, self.cdir, self.fname, self.version, self.progress = pairs, cdir, fname, version, progress
        self.results: list[dict | None] = [None] * len(pairs)
        self.keys: list[str | None] = [None] * len(pairs)
        self.n_cached = 0

    def read_cache(self, func: Callable) -> list[int]:
        """Fill the results found in the cache, report them to ``progress``; return the pairs still to compute."""
        todo: list[int] = []
        for j, (_, c, s) in enumerate(self.pairs):
            if self.cdir is not None:
                self.keys[j] = cache_key(func, c, s, self.version)
                hit = _cache_read(_cache_path(self.cdir, self.keys[j]))
                if hit is not None:
                    self.results[j] = hit
                    self.n_cached += 1
                    continue
            todo.append(j)
        if self.progress is not None:
            for j in range(len(self.pairs)):
                if self.results[j] is not None:
                    self.progress(self.record(j))
        return todo

    def record(self, j: int) -> dict:
        """``{**cell, "seed": seed, **result}`` of pair ``j``."""
        _, c, s = self.pairs[j]
        res = self.results[j]
        clash = set(res) & (set(c) | {"seed"})
        if clash:
            raise ValueError(f"func's result keys collide with cell keys or 'seed': {sorted(clash)}")
        return {**c, "seed": s, **res}

    def finish(self, j: int, res: dict) -> None:
        """Store the result of pair ``j``, write it to the cache, report it to ``progress``."""
        self.results[j] = res
        if self.cdir is not None:
            _, c, s = self.pairs[j]
            _cache_write(_cache_path(self.cdir, self.keys[j]), self.fname, c, s, self.version, res)
        if self.progress is not None:
            self.progress(self.record(j))

    def records(self) -> list[dict]:
        """Every record, in grid order."""
        return [self.record(j) for j in range(len(self.pairs))]


def _run_local(func, pairs, todo, n_jobs, torch_threads, finish) -> None:
    if n_jobs == 1 or len(todo) == 1:
        for j in todo:
            _, c, s = pairs[j]
            finish(j, _call(func, c, s, torch_threads))
        return
    from joblib import Parallel, delayed

    par = Parallel(n_jobs=min(n_jobs, len(todo)), backend="loky", return_as="generator_unordered")
    gen = par(delayed(_indexed_call)(j, func, pairs[j][1], pairs[j][2], torch_threads) for j in todo)
    for j, res in gen:
        finish(j, res)


def _indexed_call(j: int, func, cell, seed, torch_threads) -> tuple[int, dict]:
    return j, _call(func, cell, seed, torch_threads)


def _run_dask(func, pairs, todo, n_jobs, scheduler, torch_threads, finish) -> None:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError as exc:  # pragma: no cover
        raise ValueError("executor='dask' needs dask[distributed] installed") from exc

    with contextlib.ExitStack() as stack:
        if isinstance(scheduler, Client):
            client = scheduler
        elif scheduler is None or scheduler == "local":
            cluster = stack.enter_context(
                LocalCluster(n_workers=n_jobs, threads_per_worker=1, processes=False, dashboard_address=None)
            )
            client = stack.enter_context(Client(cluster))
        elif isinstance(scheduler, str):
            client = stack.enter_context(Client(scheduler))
        else:
            raise ValueError(f"scheduler must be None, 'local', an address or a distributed.Client, got {scheduler!r}")
        futures = {
            client.submit(_indexed_call, j, func, pairs[j][1], pairs[j][2], torch_threads, pure=False): j
            for j in todo
        }
        for fut in as_completed(futures):
            j, res = fut.result()
            finish(j, res)
