"""Thread policy of the project: torch's intra-op thread count and the one thread-map helper.

Parallelism comes from independent work items (sweep cells, Monte Carlo trial batches: joblib / Dask
workers), so numerical kernels usually run with one intra-op thread: threaded LAPACK/BLAS on small or
medium matrices collapses when the cores are already busy (measured on the 2-core development machine:
eight 200 x 200 ``eigh`` took 0.09 s with 1 thread vs 6 s with 2 under load; see ``numerics.rmt``).

- :func:`torch_threads` pins torch's intra-op thread count inside a block and restores it afterwards;
- :func:`thread_map` maps a function over work items in threads of this process (torch at one intra-op
  thread), and :func:`in_parallel` tells code running inside one of its workers not to touch the
  process-wide thread setting (the eigensolver wrappers of :mod:`numerics.rmt` read it).

(:mod:`numerics.sweep` keeps its own reference-counted pin for tasks that run in threads it does not own,
e.g. an in-process Dask cluster: the first task to enter saves torch's setting, the last to leave restores it.)
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterable, Iterator

import torch

__all__ = ["torch_threads", "thread_map", "in_parallel"]

_IN_PARALLEL = threading.local()


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Set torch's intra-op thread count to ``n`` inside the block and restore it afterwards.

    Parameters
    ----------
    n : int or None
        Threads inside the block; ``None`` (or the current count) leaves the setting alone.

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
    if n is None or int(n) == torch.get_num_threads():
        yield
        return
    if int(n) < 1:
        raise ValueError(f"n must be a positive integer or None, got {n!r}")
    old = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
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


def _flagged(func: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``func`` with the in-parallel flag of its (worker) thread set while it runs."""

    def run(item: Any) -> Any:
        before = getattr(_IN_PARALLEL, "active", False)
        _IN_PARALLEL.active = True
        try:
            return func(item)
        finally:
            _IN_PARALLEL.active = before

    return run


def thread_map(
    func: Callable[[Any], Any],
    items: Iterable[Any],
    n_jobs: int,
    *,
    pre_dispatch: str | int = "2*n_jobs",
) -> list:
    """``[func(x) for x in items]``, in ``n_jobs`` threads of this process (torch releases the GIL).

    With ``n_jobs <= 1``, or a sized ``items`` of at most one element, the loop runs in the calling thread and
    changes nothing.  Otherwise torch is pinned to one intra-op thread for the whole map (parallelism comes from
    the items) and every call runs with :func:`in_parallel` true, so that the eigensolver wrappers of
    :mod:`numerics.rmt` do not change the process-wide thread setting from inside a worker.  ``items`` is
    consumed IN ORDER, at most ``pre_dispatch`` items ahead of the finished ones, so a generator that draws
    each item from one random stream yields the same items whatever ``n_jobs`` is.

    Parameters
    ----------
    func : callable
        Applied to each item; must be thread-safe.
    items : iterable
        Work items (a list or a generator).
    n_jobs : int
        Worker threads.
    pre_dispatch : str or int
        joblib's bound on the items taken from ``items`` ahead of time (default ``"2*n_jobs"``).

    Returns
    -------
    list
        ``func(x)`` for every item, in the order of ``items``.

    Examples
    --------
    >>> thread_map(lambda x: x * x, (i for i in range(5)), n_jobs=2)
    [0, 1, 4, 9, 16]
    """
    if n_jobs <= 1 or (hasattr(items, "__len__") and len(items) <= 1):
        return [func(x) for x in items]
    from joblib import Parallel, delayed

    run = _flagged(func)
    with torch_threads(1):
        return Parallel(n_jobs=int(n_jobs), prefer="threads", pre_dispatch=pre_dispatch)(delayed(run)(x) for x in items)
