"""Sweep runner: a grid of configurations x replicate seeds -> a results table.

``run_sweep(func, cells, ...)`` calls ``func(cell, seed) -> dict`` once per (cell, seed) pair.

- ``executor="local"``: joblib (loky processes) with ``n_jobs`` workers; ``n_jobs=1`` runs in-process.
- ``executor="dask"``: ``dask.distributed.Client(scheduler)``, ``submit`` / ``as_completed``;
  ``scheduler=None`` or ``"local"`` starts an in-process ``LocalCluster`` (threads, no dashboard).
- On-disk cache (``cache_dir``): one small JSON file per (func, cell, seed, version), keyed by a
  stable SHA-256 of those four and of func's code (:func:`cache_key`: a function redefined with another
  body gets new keys); a rerun reuses finished pairs and an interrupted sweep resumes.
  The parent process writes each file as soon as its result arrives.  Every entry stores its key
  (func, cell, seed, version) and the SHA-256 of its result; a read verifies both, and an entry that
  fails (another cell's file, an edited or truncated one, a malformed result) is recomputed with a
  :class:`CacheIntegrityWarning`.  Concurrent sweeps on one cache directory claim each pair with a
  file lock (:func:`cell_lock`) before computing it, so no pair is computed twice.
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
import time
import warnings
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from numerics.malloc import apply_inherited
from theory._validation import ArgumentTypeError, as_int, check_choice, check_flag, describe

__all__ = ["SweepResults", "run_sweep", "cell_seed", "cache_key", "source_version", "to_jsonable",
           "CacheIntegrityWarning", "CacheWriteWarning", "cell_lock", "result_checksum"]

_EXECUTORS = ("local", "dask")
#: largest seed (``base_seed``, ``seed``, the elements of ``seeds``): a non-negative 63-bit integer
MAX_SEED = 2**63 - 1
#: largest ``n_replicates`` of :func:`run_sweep` (the seeds are derived up front, one hash each)
MAX_REPLICATES = 10**6


def _check_seed(name: str, value: Any) -> int:
    """A seed: an integer in ``[0, MAX_SEED]`` (not a bool); returns ``int(value)``."""
    return as_int(name, value, 0, MAX_SEED)


def _check_text(name: str, value: Any) -> str:
    """A non-empty string."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be a non-empty string, got {describe(value)} of type "
                                f"{type(value).__name__}")
    if not value:
        raise ValueError(f"{name} must be a non-empty string, got ''")
    return value


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


def cache_key(func: Callable, cell: Mapping[str, Any], seed: int, version: str = "1", *,
              source: bool = True) -> str:
    """Stable SHA-256 key of ``(qualified name of func, its code, cell, seed, version)``.

    Parameters
    ----------
    func : callable
        Top-level function.
    cell : mapping
        JSON-serialisable configuration.
    seed : int
        Replicate seed.
    version : str
        Bump it when ``func``'s meaning changes in a way its code does not show (data files, other libraries),
        to invalidate old cache entries.
    source : bool
        Hash the code of ``func`` and of the project functions it calls into the key (:func:`_code_digest`), so
        that a function redefined with another body (an edited notebook cell) gets new keys and is computed
        again instead of returning the old cached values.  ``False``: only the qualified name (for callers whose
        ``version`` already hashes the code, or whose ``func`` only names a kind of cell).

    Returns
    -------
    str
        64 hex digits.

    Examples
    --------
    >>> def f(cell, seed):
    ...     return {"x": cell["a"] + seed}
    >>> k = cache_key(f, {"a": 1}, 0)
    >>> def f(cell, seed):  # the same name, another body
    ...     return {"x": 2 * cell["a"] + seed}
    >>> cache_key(f, {"a": 1}, 0) != k
    True
    """
    seed = _check_seed("seed", seed)
    name = _qualname(func)
    fields = {"func": name, "cell": dict(cell), "seed": seed, "version": str(version)}
    if check_flag("source", source):
        fields["code"] = _code_digest(func)
    text = _canonical(fields)
    return hashlib.sha256(text.encode()).hexdigest()


#: top-level packages whose functions count as "the project" for :func:`_code_digest` (with ``func``'s module)
_PROJECT_PACKAGES = ("theory", "numerics", "verify")
#: most functions :func:`_code_digest` hashes for one ``func`` (itself and the project functions it reaches)
_MAX_CODE_FUNCTIONS = 500


def _code_digest(func: Callable) -> str:
    """SHA-256 of the code of ``func`` and of the project functions it calls (by global name, recursively).

    Each function contributes its source, parsed and dumped by :mod:`ast` without docstrings (so comments,
    layout and docstrings do not matter; :func:`inspect.getsource` finds the source of files and of IPython /
    Jupyter cells), or, when no source is available (``exec``'d code), its code object: bytecode, constants
    and names.  The functions it calls are those its code names as globals that resolve, in its module's
    namespace, to Python functions of its own module, of ``__main__`` or of :data:`_PROJECT_PACKAGES`
    (attribute calls such as ``module.f`` and library functions are not followed).

    Parameters
    ----------
    func : callable
        A function (or a bound method: its function); any other callable contributes nothing.

    Returns
    -------
    str
        64 hex digits, the same in every process running the same code.

    Notes
    -----
    The source is read from the file when the key is made: a file edited after its module was imported
    gives the digest of the edited text while the imported code still runs (restart, or reload the module).
    """
    if not callable(func):
        raise ArgumentTypeError(f"func must be a callable, got {describe(func)} of type {type(func).__name__}")
    h = hashlib.sha256()
    for name, digest in sorted(_reachable_digests(func)):
        h.update(f"{name}|{digest}|".encode())
    return h.hexdigest()


def _python_function(obj: Any) -> Any:
    """The plain Python function behind ``obj`` (itself, a method's ``__func__``, a wrapper's ``__wrapped__``)."""
    import inspect
    import types

    obj = getattr(obj, "__func__", obj)
    with contextlib.suppress(ValueError):  # a cycle of __wrapped__
        obj = inspect.unwrap(obj)
    return obj if isinstance(obj, types.FunctionType) else None


def _reachable_digests(func: Callable) -> set[tuple[str, str]]:
    """``(qualified name, own digest)`` of ``func`` and of the project functions it reaches (:func:`_code_digest`)."""
    root = _python_function(func)
    if root is None:
        return set()
    seen: dict[int, Any] = {}
    stack = [root]
    out: set[tuple[str, str]] = set()
    while stack and len(seen) < _MAX_CODE_FUNCTIONS:
        f = stack.pop()
        if id(f) in seen:
            continue
        seen[id(f)] = f
        out.add((f"{f.__module__}.{f.__qualname__}", _own_digest(f)))
        stack.extend(_called_project_functions(f, root.__module__))
    return out


def _called_project_functions(f: Any, home: str) -> list[Any]:
    """The Python functions of the project (``home`` module, ``__main__``, :data:`_PROJECT_PACKAGES`) that the code
    of ``f`` names as globals, and the functions held in its closure."""
    names: list[str] = []
    for code in _code_objects(f.__code__):
        names.extend(code.co_names)
    candidates = [f.__globals__.get(n) for n in dict.fromkeys(names)]
    candidates += [c.cell_contents for c in (f.__closure__ or ()) if _cell_filled(c)]
    out = []
    for obj in candidates:
        g = _python_function(obj) if callable(obj) else None
        if g is not None and _is_project_module(g.__module__, home):
            out.append(g)
    return out


def _cell_filled(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty closure cell
        return False
    return True


def _is_project_module(module: Any, home: str) -> bool:
    if not isinstance(module, str):
        return False
    return module in (home, "__main__") or module.split(".")[0] in _PROJECT_PACKAGES


def _code_objects(code: Any) -> Iterator[Any]:
    """``code`` and the code objects nested in its constants (inner functions, lambdas, comprehensions)."""
    yield code
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            yield from _code_objects(c)


#: memo of :func:`_own_digest`: function -> (its code object when hashed, digest)
_OWN_DIGESTS: "weakref.WeakKeyDictionary[Any, tuple[Any, str]]" = weakref.WeakKeyDictionary()


def _own_digest(f: Any) -> str:
    """Digest of one function's own code: its source without docstrings through :mod:`ast`, else its code object."""
    memo = _OWN_DIGESTS.get(f)
    if memo is not None and memo[0] is f.__code__:
        return memo[1]
    text = _source_text(f)
    digest = hashlib.sha256((text if text is not None else _code_text(f.__code__)).encode()).hexdigest()
    _OWN_DIGESTS[f] = (f.__code__, digest)
    return digest


def _source_text(f: Any) -> str | None:
    """``ast.dump`` of the source of ``f`` without docstrings, or ``None`` when its source is not available."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(f)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return "source:" + ast.dump(tree, annotate_fields=False, include_attributes=False)


def _code_text(code: Any) -> str:
    """A process-independent text of a code object: bytecode, names and constants (nested code recursively)."""
    consts = [_code_text(c) if hasattr(c, "co_code") else repr(c) for c in code.co_consts]
    return "code:" + "|".join([code.co_code.hex(), ",".join(code.co_names), ",".join(code.co_varnames), *consts])


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

    _check_text("prefix", prefix)
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
    >>> cell_seed(0, {"M": 100}, 0)  # pinned: a change of the seed derivation shows here
    1446433724
    >>> cell_seed(0, {"M": 100}, 0) != cell_seed(0, {"M": 100}, 1)
    True
    >>> cell_seed(0, {"M": 100, "sigma": 0.1}, 0) == cell_seed(0, {"M": 100, "sigma": 0.2}, 0)
    True
    """
    data_cell = _seed_part({k: v for k, v in cell.items() if k not in EXECUTION_KEYS + LABEL_KEYS})
    base_seed = _check_seed("base_seed", base_seed)
    replicate = as_int("replicate", replicate, 0, MAX_SEED)
    text = _canonical({"base": base_seed, "cell": data_cell, "rep": replicate})
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
    """Results of :func:`run_sweep`: one record per (cell, seed), in grid order.

    A record is ``{**cell, "seed": seed, **result}``. ``n_computed`` / ``n_cached`` say how many
    records were computed in this call and how many came from the cache.
    """

    def __init__(self, records: list[dict], n_computed: int = 0, n_cached: int = 0) -> None:
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise ArgumentTypeError(f"records must be a list of dicts, got {describe(records)} of type "
                                    f"{type(records).__name__}")
        self.records = records
        self.n_computed = as_int("n_computed", n_computed, 0, MAX_SEED)
        self.n_cached = as_int("n_cached", n_cached, 0, MAX_SEED)

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
class CacheIntegrityWarning(UserWarning):
    """A cache entry failed its checks (foreign key, checksum mismatch, malformed or unreadable): it is
    ignored and the cell recomputed (and rewritten)."""


class CacheWriteWarning(UserWarning):
    """The cache directory cannot be written (a full disk, a read-only directory): the run goes on without
    storing its cells there (results are the same; a later run computes them again).  Warned once per directory."""


#: cache directories already warned about (:func:`cache_unwritable`)
_UNWRITABLE: set[str] = set()


def cache_unwritable(directory: str | os.PathLike, exc: OSError) -> None:
    """Warn once per ``directory`` that the cache cannot be written there (:class:`CacheWriteWarning`)."""
    key = str(directory)
    if key not in _UNWRITABLE:
        _UNWRITABLE.add(key)
        warnings.warn(f"cache directory {key} cannot be written ({type(exc).__name__}: {exc}); the run goes on "
                      "without storing its cells there", CacheWriteWarning, stacklevel=3)


def cell_lock(path: str | os.PathLike) -> Any:
    """An exclusive inter-process lock on ``path`` (a ``filelock.FileLock``, not thread-local).

    The claim of one cache cell: held while the cell is computed and written, so that a second run on the
    same cache directory waits for the entry instead of computing it again.  The operating system releases
    it when the holder dies (no stale claims after a crash).

    Parameters
    ----------
    path : path-like
        The lock file (created on demand; its directory must exist).

    Returns
    -------
    filelock.FileLock
        Use ``acquire(timeout=0)`` (raises ``filelock.Timeout`` when held elsewhere), ``acquire()``
        (waits) and ``release()``, or ``with``.
    """
    from filelock import FileLock

    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise ArgumentTypeError(f"path must be a str or os.PathLike path, got {describe(path)} of type "
                                f"{type(path).__name__}")
    text = os.fspath(path)
    if not isinstance(text, str) or not text:
        raise ValueError(f"path must be a non-empty text path, got {describe(path)}")
    parent = Path(text).parent
    if not parent.is_dir():
        raise ValueError(f"path {text!r}: its directory {str(parent)!r} does not exist")
    return FileLock(text, thread_local=False)


def result_checksum(result: Mapping[str, Any]) -> str:
    """SHA-256 (64 hex digits) of a sweep result's canonical JSON: what a cache entry stores as ``sha256``.

    Parameters
    ----------
    result : mapping
        A JSON-serialisable result (as returned by ``func``, after :func:`to_jsonable`).

    Returns
    -------
    str
        Key order does not matter; a JSON round trip gives the same checksum (floats are written exactly).
    """
    if not isinstance(result, Mapping):
        raise ArgumentTypeError(f"result must be a mapping, got {describe(result)} of type {type(result).__name__}")
    bad = [k for k in result if not isinstance(k, str)]
    if bad:
        raise ArgumentTypeError(f"result must have str keys, got the key {bad[0]!r}")
    try:
        text = _canonical(dict(result))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"result must be JSON-serialisable: {exc}") from None
    return hashlib.sha256(text.encode()).hexdigest()


def _cache_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / key[:2] / f"{key}.json"


def _lock_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / key[:2] / f"{key}.lock"


_KEY_FIELDS = ("func", "cell", "seed", "version")


def _cache_read(path: Path, expect: Mapping[str, Any], reserved: set[str] | frozenset = frozenset()) -> dict | None:
    """The verified result stored at ``path``, or ``None`` (missing, or rejected with a warning).

    ``expect`` holds the entry's key fields (func, cell, seed, version); the stored ones must equal them, the
    stored ``sha256`` must be the checksum of the stored result, and the result must be a non-empty mapping
    whose keys avoid ``reserved`` (the cell's keys and ``"seed"``).  Entries written before checksums were
    stored (no ``sha256``) are accepted when their key and result pass, and rewritten with a checksum.
    """
    try:
        with open(path) as fh:
            blob = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return _reject(path, f"unreadable ({type(exc).__name__}: truncated or not JSON)")
    problem = _entry_problem(blob, expect, reserved)
    if problem:
        return _reject(path, problem)
    if "sha256" not in blob:  # written by the code before checksums: key verified, upgrade it in place if we can
        _cache_write(path, *(blob[k] for k in _KEY_FIELDS), blob["result"], warn=False)
    return blob["result"]


def _entry_problem(blob: Any, expect: Mapping[str, Any], reserved: set[str] | frozenset) -> str:
    """Why a parsed cache entry cannot be trusted (``""`` when it can)."""
    if not isinstance(blob, dict) or any(k not in blob for k in (*_KEY_FIELDS, "result")):
        return "malformed (not an entry with func, cell, seed, version and result)"
    stored = {k: blob[k] for k in _KEY_FIELDS}
    if _canonical(stored) != _canonical(dict(expect)):
        diff = [k for k in _KEY_FIELDS if _canonical(stored[k]) != _canonical(expect[k])]
        return f"foreign entry: its {', '.join(diff)} differ from the key's (another cell's file)"
    res = blob["result"]
    if not isinstance(res, dict) or not res:
        return f"malformed result (a non-empty mapping is required, got {_short(res)})"
    clash = set(res) & set(reserved)
    if clash:
        return f"malformed result (keys collide with the cell's keys or 'seed': {sorted(clash)})"
    if "sha256" in blob and blob["sha256"] != result_checksum(res):
        return "checksum mismatch (the stored result was altered)"
    return ""


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _reject(path: Path, why: str) -> None:
    warnings.warn(f"cache entry {path} ignored: {why}; recomputing it", CacheIntegrityWarning, stacklevel=3)
    return None


def _cache_write(path: Path, func: str, cell: dict, seed: int, version: str, result: dict, *,
                 warn: bool = True) -> bool:
    """Write one entry atomically; ``False`` (and, with ``warn``, one :class:`CacheWriteWarning` per directory)
    when the cache cannot be written: a cache is an optimisation, never a reason to lose a computed result."""
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


# ----------------------------------------------------------------------------------------- runner
def _resolve_seeds(cells: list[dict], seeds: Any, n_replicates: int | None, base_seed: int) -> list[list[int]]:
    if seeds is not None and n_replicates is not None:
        raise ValueError("give either seeds or n_replicates, not both")
    if seeds is None:
        if n_replicates is None:
            raise ValueError("n_replicates must be an integer >= 1 when seeds is None, got None")
        n = as_int("n_replicates", n_replicates, 1, MAX_REPLICATES)
        base_seed = _check_seed("base_seed", base_seed)
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
            checked[id(s_list)] = [int(_check_seed("seeds", s)) for s in s_list]
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
        Directory of the on-disk cache; ``None`` disables caching.  Entries are verified on read (key and
        checksum; a failing one is recomputed with a :class:`CacheIntegrityWarning`), and each pair is computed
        under a file lock, so that concurrent sweeps on one directory compute it once (the other waits for it).
        With a cache, the same (cell, seed) twice in one call is computed once.
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
    _check_backend(executor, n_jobs, torch_threads)
    _check_text("version", version)
    fname = _qualname(func)
    cell_list = _check_cells(cells)
    seed_lists = _resolve_seeds(cell_list, seeds, n_replicates, base_seed)
    pairs = [(i, c, s) for i, (c, sl) in enumerate(zip(cell_list, seed_lists)) for s in sl]
    table = _Table(pairs, None if cache_dir is None else Path(cache_dir), fname, version, progress)
    _execute(func, table, table.read_cache(func), executor, n_jobs, scheduler, torch_threads)
    return SweepResults(table.records(), n_computed=len(pairs) - table.n_cached, n_cached=table.n_cached)


def _execute(func: Callable, table: "_Table", todo: list[int], executor: str, n_jobs: int, scheduler: Any,
             torch_threads: int | None) -> None:
    """Compute the pairs ``todo`` of ``table`` that no other run claims; then those that other runs left."""
    try:
        while todo:  # a second round only for pairs another run had claimed and then did not finish
            work = table.claimed(todo)
            if executor == "local":
                _run_local(func, table.pairs, work, len(todo), n_jobs, torch_threads, table.finish)
            else:
                _run_dask(func, table.pairs, work, n_jobs, scheduler, torch_threads, table.finish)
            todo = table.wait_for_others()
    finally:
        table.release_all()  # an error or an interrupt: the claims of unfinished pairs go back


def _check_backend(executor: str, n_jobs: Any, torch_threads: Any = None) -> None:
    """``executor`` is one of :data:`_EXECUTORS`; ``n_jobs`` and ``torch_threads`` (unless None) thread counts."""
    from numerics.threads import check_n_jobs

    check_choice("executor", executor, _EXECUTORS)
    check_n_jobs("n_jobs", n_jobs)
    if torch_threads is not None:
        check_n_jobs("torch_threads", torch_threads)


def _check_cells(cells: Iterable[Mapping[str, Any]]) -> list[dict]:
    """The cells as plain JSON dicts; at least one, none with the key ``"seed"``."""
    if isinstance(cells, (str, bytes, Mapping)) or not isinstance(cells, Iterable):
        raise ArgumentTypeError(f"cells must be an iterable of mappings, got {describe(cells)} of type "
                                f"{type(cells).__name__}")
    cell_list = list(cells)
    for c in cell_list:
        if not isinstance(c, Mapping):
            raise ArgumentTypeError(f"cells must be an iterable of mappings, got an element {describe(c)} of type "
                                    f"{type(c).__name__}")
    cell_list = [to_jsonable(dict(c)) for c in cell_list]
    if not cell_list:
        raise ValueError("cells must contain at least one configuration")
    for c in cell_list:
        if "seed" in c:
            raise ValueError("cells must not contain the key 'seed' (it is added by run_sweep)")
    return cell_list


class _Table:
    """The results of one :func:`run_sweep` call as they arrive: cache reads, claims, cache writes, progress.

    ``pairs[j] = (cell_index, cell, seed)``; ``results[j]`` is ``None`` until pair ``j`` is finished.  With a
    cache, pairs with the same key are computed once (the first is the leader, the others its followers), and
    a pair is computed only under its claim (:func:`cell_lock`); a pair claimed by another run is deferred and
    read back once that run releases it (:meth:`wait_for_others`).
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
                if k in leader:  # the same (func, cell, seed, version) twice: computed once
                    self._follow(leader[k], j)
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

    def _follow(self, lead: int, j: int) -> None:
        self.followers.setdefault(lead, []).append(j)
        if self.results[lead] is not None:
            self.results[j] = self.results[lead]
            self.n_cached += 1

    def _read(self, j: int, warn: bool = True) -> dict | None:
        _, c, s = self.pairs[j]
        expect = {"func": self.fname, "cell": c, "seed": s, "version": self.version}
        path = _cache_path(self.cdir, self.keys[j])
        if warn:
            return _cache_read(path, expect, set(c) | {"seed"})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CacheIntegrityWarning)
            return _cache_read(path, expect, set(c) | {"seed"})

    def _try_lock(self, j: int) -> bool:
        """Claim pair ``j`` without waiting; ``False`` when another run holds it."""
        from filelock import Timeout

        path = _lock_path(self.cdir, self.keys[j])
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
                _cache_write(_cache_path(self.cdir, self.keys[j]), self.fname, c, s, self.version, res)
            finally:
                self._unlock(j)
        self._fill(j, res, cached=False)

    def records(self) -> list[dict]:
        """Every record, in grid order."""
        return [self.record(j) for j in range(len(self.pairs))]


def _run_local(func, pairs, work: Iterable[int], n: int, n_jobs, torch_threads, finish) -> None:
    """The pairs of ``work`` (``n`` of them at most) in this process or in ``n_jobs`` loky workers; joblib takes
    them from ``work`` lazily (``pre_dispatch``), so only the pairs in flight are claimed."""
    if n_jobs == 1 or n == 1:
        for j in work:
            _, c, s = pairs[j]
            finish(j, _call(func, c, s, torch_threads))
        return
    from joblib import Parallel, delayed

    par = Parallel(n_jobs=min(n_jobs, n), backend="loky", return_as="generator_unordered")
    gen = par(delayed(_indexed_call)(j, func, pairs[j][1], pairs[j][2], torch_threads) for j in work)
    for j, res in gen:
        finish(j, res)


def _indexed_call(j: int, func, cell, seed, torch_threads) -> tuple[int, dict]:
    return j, _call(func, cell, seed, torch_threads)


def _run_dask(func, pairs, work: Iterable[int], n_jobs, scheduler, torch_threads, finish) -> None:
    """The pairs of ``work`` on a Dask cluster, submitted in a window of twice the cluster's threads (so only
    the pairs in flight are claimed)."""
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
        window = max(2 * n_jobs, 2 * sum(client.nthreads().values()), 2)
        todo, running = iter(work), as_completed()

        def submit() -> None:
            j = next(todo, None)
            if j is not None:
                running.add(client.submit(_indexed_call, j, func, pairs[j][1], pairs[j][2], torch_threads, pure=False))

        for _ in range(window):
            submit()
        for fut in running:
            j, res = fut.result()
            finish(j, res)
            submit()
