"""Replicates per ``M`` level for a log-log slope: the cheapest allocation with a given precision.

The slope of :func:`numerics.slopes.fit_slope` is ``b = sum_k w_k ybar_k`` over the per-level means of ``log(error)``,
with ``w_k = (x_k - xbar) / Sxx`` and ``x_k = log M_k`` (equal weights per level, whatever the replicate counts).  With
``n_k`` replicates of standard deviation ``sd_k`` at level ``k``, ``Var b = sum_k w_k^2 sd_k^2 / n_k``, and a replicate
at level ``k`` costs ``c_k`` CPU-seconds.  Minimising the cost ``sum_k n_k c_k`` at fixed ``Var b`` gives (Lagrange;
Neyman's allocation) ``n_k = lambda |w_k| sd_k / sqrt(c_k)``: replicates go where the weight and the noise are large and
the cost is small (in paper A's sweeps, the cheap small-``M`` levels).  Derivation and numbers: ``docs/allocation.md``.

A floor ``n_min`` per level keeps every level's own variance estimated (``n_min - 1`` df; the SE of the verdicts uses
each level's variance) and every level in the figures; the middle level (``w_k ~ 0``) gets the floor.  Counts are
rounded up, so the variance never exceeds its target.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from theory.validation import as_array, as_int

from .slopes import level_weights

__all__ = ["allocate_replicates", "slope_variance"]


def slope_variance(M: Sequence[float] | np.ndarray, sd: Sequence[float] | np.ndarray,
                   counts: Sequence[int] | np.ndarray) -> float:
    """``sum_k w_k^2 sd_k^2 / n_k``: the variance of the per-level-means slope (module docstring).

    Examples
    --------
    >>> import math
    >>> v = slope_variance([100, 1000, 10000], [1.0, 1.0, 1.0], [2, 2, 2])  # Sxx = 2 log(10)^2
    >>> round(v * 4 * math.log(10) ** 2, 12)
    1.0
    """
    M, sd, n = _inputs(M, sd, counts, "counts")
    return float(np.sum(level_weights(np.log(M)) ** 2 * sd**2 / n))


def allocate_replicates(M: Sequence[float] | np.ndarray, sd: Sequence[float] | np.ndarray,
                        cost: Sequence[float] | np.ndarray, n_equal: int, n_min: int = 4) -> np.ndarray:
    """Replicates per level: the cheapest counts whose slope variance is at most that of ``n_equal`` everywhere.

    Parameters
    ----------
    M : array_like, shape (k,)
        Distinct sample sizes ``> 0`` (``k >= 3``).
    sd : array_like, shape (k,)
        Standard deviation of one replicate's ``log(error)`` at each level (``> 0``; a pilot's measurement).
    cost : array_like, shape (k,)
        CPU cost of one replicate at each level (``> 0``; any unit).
    n_equal : int
        The equal allocation whose variance is the target (``>= n_min``).
    n_min : int
        Floor per level (``>= 2``).

    Returns
    -------
    numpy.ndarray of int, shape (k,)
        Counts ``n_k >= n_min`` with ``slope_variance(M, sd, n) <= slope_variance(M, sd, n_equal)``.

    Raises
    ------
    ValueError
        Shapes differ, fewer than 3 distinct ``M``, ``sd`` or ``cost`` not positive, ``n_min < 2``, ``n_equal < n_min``.

    Examples
    --------
    >>> allocate_replicates([500, 1200, 2900, 7000, 17000], [0.4, 0.2, 0.12, 0.08, 0.05],
    ...                     [1, 2, 4, 9, 20], n_equal=10).tolist()
    [12, 4, 4, 4, 4]
    """
    M, sd, cost = _inputs(M, sd, cost, "cost")
    n_min = as_int("n_min", n_min, 2)
    n_equal = as_int("n_equal", n_equal, n_min)
    w = level_weights(np.log(M))
    target = float(np.sum(w**2 * sd**2)) / n_equal
    shape = np.abs(w) * sd / np.sqrt(cost)  # n_k = lambda * shape_k above the floor

    def counts(lam: float) -> np.ndarray:
        return np.maximum(float(n_min), lam * shape)

    lo, hi = 0.0, float(n_equal) / float(shape.max())  # hi: every level >= n_equal where it matters
    while float(np.sum(w**2 * sd**2 / counts(hi))) > target:
        hi *= 2.0
    for _ in range(200):  # bisection on the monotone variance(lambda)
        mid = 0.5 * (lo + hi)
        if float(np.sum(w**2 * sd**2 / counts(mid))) > target:
            lo = mid
        else:
            hi = mid
    return np.ceil(counts(hi) - 1e-9).astype(int)


def _inputs(M: Any, a: Any, b: Any, b_name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    M = as_array("M", M, low=0, low_open=True)
    a = as_array("sd", a, low=0, low_open=True)
    b = as_array(b_name, b, low=0, low_open=True)
    if not (M.ndim == a.ndim == b.ndim == 1 and M.size == a.size == b.size):
        raise ValueError(f"M, sd and {b_name} must be 1-d arrays of one length, got shapes {M.shape}, {a.shape}, "
                         f"{b.shape}")
    if np.unique(np.log(M)).size != M.size or M.size < 3:
        raise ValueError(f"M must hold at least 3 distinct values, none repeated, got {M.tolist()}")
    return M, a, b
