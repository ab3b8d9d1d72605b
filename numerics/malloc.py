"""Keep freed large blocks in the process heap (glibc ``mallopt``) instead of returning them to the kernel.

The Monte Carlo of paper B allocates and frees arrays of tens of MB per trial (``n x n`` kernels, ``p x n`` features,
Gram matrices), and paper A's fits at large ``M`` design matrices of the same order.  glibc serves blocks above its
mmap threshold (dynamic, at most 32 MB by default) with fresh ``mmap`` pages and unmaps them on ``free``: every trial
then faults its pages in again and the kernel zeroes them (measurements: ``docs/performance.md``).

``children=True`` also hands the settings to the sweep workers started later (paper A's fits), through an environment
variable that :func:`apply_inherited` reads in each worker.  A no-op where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

__all__ = ["INHERIT_ENV", "apply_inherited", "keep_freed_memory"]

#: mallopt parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

#: the environment variable that hands the settings to worker processes (``keep_freed_memory(children=True)``)
INHERIT_ENV = "NUMERICS_KEEP_FREED_MEMORY"

_APPLIED: dict[int, bool] = {}  # pid -> apply_inherited's result (a forked child starts afresh)


def keep_freed_memory(mmap_threshold: int = 2**30, trim_threshold: int = 2**31 - 1, *,
                      children: bool = False) -> bool:
    """Serve blocks below ``mmap_threshold`` bytes from the heap and keep up to ``trim_threshold`` free bytes.

    Parameters
    ----------
    mmap_threshold : int
        Blocks at least this large still get their own ``mmap`` (default 1 GiB).
    trim_threshold : int
        Free memory at the top of the heap beyond this is returned to the kernel (default ~2 GiB).
    children : bool
        Also hand the settings (once accepted here) to worker processes started later (``os.environ[INHERIT_ENV]``).

    Returns
    -------
    bool
        True if glibc accepted both settings; False elsewhere (other C libraries, other systems).
    """
    for name, value in (("mmap_threshold", mmap_threshold), ("trim_threshold", trim_threshold)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**31:
            raise ValueError(f"{name} must be an int in (0, 2**31), got {value!r}")
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = bool(mallopt(_M_MMAP_THRESHOLD, mmap_threshold)) and bool(mallopt(_M_TRIM_THRESHOLD, trim_threshold))
    if ok and children:
        os.environ[INHERIT_ENV] = f"{mmap_threshold},{trim_threshold}"
    return ok


def apply_inherited() -> bool:
    """In a worker process: the settings of a parent's ``keep_freed_memory(children=True)``, once per process.

    Reads :data:`INHERIT_ENV` (``"<mmap_threshold>,<trim_threshold>"``; a malformed value is ignored); the sweep
    runner (:func:`numerics.sweep.run_sweep`) calls this at the start of every task.

    Returns
    -------
    bool
        True if this process now runs with inherited settings.
    """
    pid = os.getpid()
    if pid not in _APPLIED:
        try:
            mmap_threshold, trim_threshold = (int(v) for v in os.environ.get(INHERIT_ENV, "").split(","))
            ok = keep_freed_memory(mmap_threshold, trim_threshold)
        except ValueError:
            ok = False
        loky_worker = sys.modules.get("joblib.externals.loky.process_executor")
        if ok and loky_worker is not None and hasattr(loky_worker, "_MAX_MEMORY_LEAK_SIZE"):
            # in a loky worker (joblib's processes), stop loky from restarting it when its memory grows by 300 MB
            # (a constant of its worker loop, read after each task): the heap kept here is not a leak, and each
            # restart costs a fresh interpreter, torch's import and cold caches (timings: CHANGELOG)
            loky_worker._MAX_MEMORY_LEAK_SIZE = sys.maxsize
        _APPLIED[pid] = ok
    return _APPLIED[pid]
