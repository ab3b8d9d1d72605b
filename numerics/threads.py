"""Thread policy of the project: torch's intra-op thread count and the one thread-map helper.

Parallelism comes from independent work items (sweep cells, Monte Carlo trial batches: joblib / Dask workers), so
numerical kernels usually run with one intra-op thread: threaded LAPACK/BLAS on small or medium matrices collapses when
the cores are already busy.  :func:`torch_threads` pins the thread counts inside a block, :func:`thread_map` maps over
work items in threads of this process, and :func:`in_parallel` tells code inside one of its workers to leave the
process-wide setting alone (:mod:`numerics.sweep` keeps its own reference-counted pin for threads it does not own).

Thread and worker counts are integers in ``[1, MAX_THREADS]`` (:func:`check_n_jobs`); a torch device is ``"cpu"``,
``"cuda"`` or ``"cuda:<k>"`` and must exist (:func:`check_device`, the one device check of ``numerics``).
"""

from __future__ import annotations

import contextlib
import re
import threading
from typing import Any, Callable, ContextManager, Iterable, Iterator

import numpy as np
import torch

from theory.validation import ArgumentTypeError, as_int, describe, numeric_errors

__all__ = ["torch_threads", "in_parallel", "check_device", "MAX_THREADS"]

_IN_PARALLEL = threading.local()

#: largest thread / worker count accepted by :func:`torch_threads`, :func:`thread_map` and the ``n_jobs`` of
#: :mod:`numerics.rmt` (far above any core count; a larger value is a mistake, not a request)
MAX_THREADS = 1024

_DEVICE_RE = re.compile(r"cpu|cuda(?::([0-9]+))?")


def check_n_jobs(name: str, value: Any) -> int:
    """A thread / worker count: an integer in ``[1, MAX_THREADS]``; returns ``int(value)``.

    Examples
    --------
    >>> check_n_jobs("n_jobs", 2)
    2
    """
    return as_int(name, value, 1, MAX_THREADS)


def check_device(name: str, value: Any) -> str:
    """A torch device of this machine, ``"cpu"``, ``"cuda"`` or ``"cuda:<k>"`` (or such a ``torch.device``): its string.

    Raises
    ------
    ArgumentTypeError
        ``value`` is neither a string nor a ``torch.device``.
    ValueError
        Another string, or a CUDA device that this machine does not have.

    Examples
    --------
    >>> check_device("device", "cpu")
    'cpu'
    """
    if isinstance(value, torch.device):
        value = str(value)
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be 'cpu', 'cuda' or 'cuda:<k>', got {describe(value)} of type "
                                f"{type(value).__name__}")
    m = _DEVICE_RE.fullmatch(value)
    if m is None:
        raise ValueError(f"{name} must be 'cpu', 'cuda' or 'cuda:<k>', got {describe(value)}")
    if value != "cpu":
        if not torch.cuda.is_available():
            raise ValueError(f"{name} is {value!r} but CUDA is not available (torch {torch.__version__}, built with "
                             f"CUDA {torch.version.cuda}); use {name}='cpu'")
        k, count = int(m.group(1) or 0), torch.cuda.device_count()
        if k >= count:
            raise ValueError(f"{name} is {value!r} but this machine has {count} CUDA device(s) "
                             f"(cuda:0..cuda:{count - 1})")
    return value


@contextlib.contextmanager
def torch_numeric_errors(func: str, **args: Any) -> Iterator[None]:
    """:func:`theory.validation.numeric_errors` that also turns torch's ``LinAlgError`` (non-finite or singular
    matrices) into a ``ValueError`` listing the arguments (used by :mod:`numerics.rmt`, :mod:`numerics.error_model`)."""
    with numeric_errors(func, **args):
        try:
            yield
        except torch.linalg.LinAlgError as exc:
            raise np.linalg.LinAlgError(str(exc)) from exc


def torch_threads(n: int | None) -> ContextManager[None]:
    """Set the thread counts of torch (intra-op) and of numpy's / scipy's BLAS to ``n`` inside the block, then restore.

    Parameters
    ----------
    n : int or None
        Threads inside the block, in ``[1, MAX_THREADS]`` (checked before the block); ``None`` leaves them alone.

    Examples
    --------
    >>> import torch
    >>> before = torch.get_num_threads()
    >>> with torch_threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    return _pinned(None if n is None else check_n_jobs("n", n))


_BLAS_CONTROLLER: Any = None


def _blas_controller() -> Any:
    """threadpoolctl's controller of the BLAS libraries numpy and scipy load (OpenBLAS in their wheels), made once:
    scipy's LAPACK (the tridiagonal error path of :mod:`numerics.rmt`) runs on scipy's own OpenBLAS, whose idle
    threads spin and, unpinned, take the other worker's core (torch's MKL is pinned by ``set_num_threads``)."""
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None:
        import scipy.linalg  # noqa: F401  (loads scipy's BLAS before the controller lists the libraries)
        from threadpoolctl import ThreadpoolController

        _BLAS_CONTROLLER = ThreadpoolController()
    return _BLAS_CONTROLLER


@contextlib.contextmanager
def _pinned(n: int | None) -> Iterator[None]:
    """The block of :func:`torch_threads` (``n`` already checked): torch and the BLAS pools of numpy / scipy."""
    if n is None:
        yield
        return
    old = torch.get_num_threads()
    if n != old:
        torch.set_num_threads(n)
    try:
        with _blas_controller().limit(limits=n, user_api="blas"):
            yield
    finally:
        if n != old:
            torch.set_num_threads(old)


def in_parallel() -> bool:
    """Whether the calling thread is a worker of :func:`thread_map` (then leave torch's thread count alone).

    Returns
    -------
    bool

    Examples
    --------
    >>> in_parallel()
    False
    >>> thread_map(lambda _: in_parallel(), range(3), n_jobs=2)
    [True, True, True]
    """
    return bool(getattr(_IN_PARALLEL, "active", False))


def thread_map(func: Callable[[Any], Any], items: Iterable[Any], n_jobs: int) -> list:
    """``[func(x) for x in items]``, in ``n_jobs`` threads of this process (torch releases the GIL).

    With ``n_jobs = 1``, or a sized ``items`` of at most one element, the loop runs in the calling thread and changes
    nothing.  Otherwise torch is pinned to one intra-op thread for the whole map and every call runs with
    :func:`in_parallel` true.  ``items`` is consumed IN ORDER, at most ``2 n_jobs`` items ahead of the finished ones
    (joblib's ``pre_dispatch``): a generator drawing from one random stream yields the same items for any ``n_jobs``.

    Parameters
    ----------
    func : callable
        Applied to each item; must be thread-safe.
    items : iterable
    n_jobs : int in ``[1, MAX_THREADS]``

    Returns
    -------
    list
        ``func(x)`` for every item, in the order of ``items``.

    Examples
    --------
    >>> thread_map(lambda x: x * x, (i for i in range(5)), n_jobs=2)
    [0, 1, 4, 9, 16]
    """
    if n_jobs == 1 or (hasattr(items, "__len__") and len(items) <= 1):
        return [func(x) for x in items]
    from joblib import Parallel, delayed

    def run(item: Any) -> Any:  # func with the in-parallel flag of its worker thread set
        before = getattr(_IN_PARALLEL, "active", False)
        _IN_PARALLEL.active = True
        try:
            return func(item)
        finally:
            _IN_PARALLEL.active = before

    with torch_threads(1):
        return Parallel(n_jobs=n_jobs, prefer="threads", pre_dispatch="2*n_jobs")(delayed(run)(x) for x in items)
