"""Keep freed large blocks in the process heap (glibc ``mallopt``) instead of returning them to the kernel.

The Monte Carlo of paper B allocates and frees arrays of tens of MB per trial (``n x n`` kernels, ``p x n``
features, Gram matrices).  glibc serves blocks above its mmap threshold (dynamic, at most 32 MB by default)
with fresh ``mmap`` pages and unmaps them on ``free``: every trial then faults its pages in again and the
kernel zeroes them.  Measured on the 2-core development machine (one B7-sized cell, ``p = 1024``,
``n = 2048``, 8 trials, three models and ridge, 2 threads, two runs each): 0.79-0.80 M minor page faults and
2.0-2.5 s system time by default, 0.27-0.34 M and 0.8-1.0 s with the thresholds below; the cell's wall time
8.8-9.4 s -> 8.0-8.2 s.  On the paper profile the process had 69 M minor faults and 187 s of system time
in 1808 CPU seconds before this setting.

Only the calling process is affected (worker processes started later keep glibc's defaults: paper A's
fits allocate small blocks and showed no gain).  A no-op where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["keep_freed_memory"]

#: mallopt parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def keep_freed_memory(mmap_threshold: int = 2**30, trim_threshold: int = 2**31 - 1) -> bool:
    """Serve blocks below ``mmap_threshold`` bytes from the heap and keep up to ``trim_threshold`` free bytes.

    Parameters
    ----------
    mmap_threshold : int
        Blocks at least this large still get their own ``mmap`` (default 1 GiB).
    trim_threshold : int
        Free memory at the top of the heap beyond this is returned to the kernel (default ~2 GiB).

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
    return bool(mallopt(_M_MMAP_THRESHOLD, mmap_threshold)) and bool(mallopt(_M_TRIM_THRESHOLD, trim_threshold))
