"""Thread policy of the project: one context manager for torch's intra-op thread count.

Parallelism comes from independent work items (sweep cells, Monte Carlo trial batches: joblib / Dask
workers), so numerical kernels usually run with one intra-op thread: threaded LAPACK/BLAS on small or
medium matrices collapses when the cores are already busy (measured on the 2-core development machine:
eight 200 x 200 ``eigh`` took 0.09 s with 1 thread vs 6 s with 2 under load; see ``numerics.rmt``).
Every place that pins the thread count goes through :func:`torch_threads`, so the policy has one
mechanism.  (:mod:`numerics.sweep` keeps a reference-counted variant on top of it for tasks that run in
threads of one process, e.g. an in-process Dask cluster.)
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch

__all__ = ["torch_threads"]


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
