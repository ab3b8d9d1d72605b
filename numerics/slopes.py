"""Log-log slopes of error-vs-sample-size curves, with honest uncertainty.

Model: ``log error = a + b log M + noise``; ``b`` is the convergence slope.

Decision (stated once, used everywhere): replicates are KEPT but the slope and its t interval are computed from the
**per-M means of log(error)** (one point per distinct ``M``, equal weights), with ``df = n_levels - 2``. Replicates at
the same ``M`` share every systematic deviation from an exact power law (integer ``K_M`` steps, finite-``M``
curvature), so treating all replicate points as independent (``df = n - 2``) would understate the slope uncertainty
whenever the power law is not exact; the per-level fit lets the lack of fit show up in the residuals. With a balanced
design the point estimate is the OLS slope through all replicate points. Also reported: the all-points ("pooled")
interval, a lack-of-fit F test and a bootstrap interval (resampling within each ``M``: noise, not lack of fit).

Replicate-level standard error (``se_rep``, used by the verdicts): the slope is a fixed linear combination
``sum_k w_k ybar_k`` of the per-level means, so its variance over independent replicate draws is
``sum_k w_k^2 s_k^2 / n_k`` with ``s_k^2`` the within-level variance of ``log(error)`` at level ``k`` (each level its
own: the replicate spread falls ~10x from the smallest to the largest ``M`` in paper A's sweeps, so one pooled
variance would misstate it, most of all with unequal counts, as in :func:`numerics.allocation.allocate_replicates`),
and ``df_rep`` is the Welch-Satterthwaite df of that sum (with a single-replicate level: the pooled within-level
variance, ``df_rep = n - n_levels``).  It is the variance over repetitions of the experiment with the same design
(truth, ``M`` levels, replicate counts), what ``python -m verify calibrate`` compares it with; a systematic lack of
fit is not noise but part of the design's finite-``M`` prediction (fitted with the same weights).

Inputs are validated by :mod:`theory.validation` (the bootstrap's arrays against the memory budget before they exist).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np
from scipy import stats

from theory.validation import as_array, as_int, check_array_memory, check_random_state, finite_result

__all__ = ["SlopeFit", "fit_slope", "design_slope"]


@dataclass(frozen=True)
class SlopeFit:
    """Result of :func:`fit_slope`.

    Attributes
    ----------
    slope : float
        OLS slope of the per-``M`` means of ``log(error)`` on ``log M``.
    se : float
        Its standard error (per-``M`` means regression, ``df = n_levels - 2``).
    ci_t : tuple of float
        95% t interval ``slope +- t_{0.975, df} se`` (same regression).
    ci_boot : tuple of float or None
        95% percentile bootstrap interval, replicates resampled within each ``M`` (``None``: no ``M`` has two).
    intercept : float
        Intercept of the same regression (``log`` scale).
    r2 : float
        Coefficient of determination of the per-``M`` means regression.
    n : int
        Number of (replicate) points used.
    n_levels : int
        Number of distinct ``M``.
    df : int
        Degrees of freedom of ``ci_t`` (``n_levels - 2``).
    se_pooled : float
        Standard error of the OLS slope through all points (``df = n - 2``; valid only if the power law is exact).
    ci_pooled : tuple of float
        The corresponding 95% t interval.
    lack_of_fit_p : float or None
        p-value of the lack-of-fit F test (needs replicates and ``n_levels >= 3``); small values say the log-log
        relation is not a straight line at this precision.
    se_rep : float or None
        Replicate-level standard error of ``slope`` (module docstring); ``None`` without replicates.
    df_rep : float or None
        Its degrees of freedom (Welch-Satterthwaite; ``n - n_levels`` when some level has one replicate).
    """

    slope: float
    se: float
    ci_t: tuple[float, float]
    ci_boot: tuple[float, float] | None
    intercept: float
    r2: float
    n: int
    n_levels: int
    df: int
    se_pooled: float
    ci_pooled: tuple[float, float]
    lack_of_fit_p: float | None
    se_rep: float | None = None
    df_rep: float | None = None

    @property
    def se_replicate(self) -> tuple[float, float]:
        """``(se_rep, df_rep)``, or ``(se, df)`` of the per-level fit when there are no replicates."""
        if self.se_rep is None or not self.df_rep:
            return self.se, float(self.df)
        return self.se_rep, float(self.df_rep)

    def to_dict(self) -> dict[str, Any]:
        """Plain-number dictionary (JSON-friendly; intervals as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def _as_1d(name: str, a: Any) -> np.ndarray:
    """A 1-D float64 array of finite real numbers ``> 0`` (one entry per replicate point)."""
    arr = as_array(name, a, low=0, low_open=True)
    if arr.ndim == 0:
        raise ValueError(f"{name} must be a 1-D array of numbers, got a scalar")
    if arr.ndim > 1:
        raise ValueError(f"{name} must be 1-D (one entry per replicate point), got shape {arr.shape}")
    return arr


def _ols(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    """Slope, intercept, residual sum of squares, Sxx of a simple regression."""
    xm, ym = x.mean(), y.mean()
    sxx = float(np.sum((x - xm) ** 2))
    b = float(np.sum((x - xm) * (y - ym)) / sxx)
    a = float(ym - b * xm)
    rss = float(np.sum((y - a - b * x) ** 2))
    return b, a, rss, sxx


def _validated_log_data(M: Any, errors: Any, errors_name: str = "errors") -> tuple[np.ndarray, np.ndarray]:
    """``(log M, log errors)`` after the input checks of :func:`fit_slope` (``errors_name`` in messages)."""
    m = _as_1d("M", M)
    e = _as_1d(errors_name, errors)
    if m.shape != e.shape:
        raise ValueError(f"M and {errors_name} must have the same length, got {m.size} and {e.size}")
    return np.log(m), np.log(e)


def level_weights(x: np.ndarray) -> np.ndarray:
    """``w_k = (x_k - xbar) / Sxx``: the per-level-means slope is ``sum_k w_k ybar_k`` (``x = log M`` levels)."""
    xc = x - x.mean()
    return xc / float(np.sum(xc**2))


def _replicate_se(levels: np.ndarray, inverse: np.ndarray, resid2: np.ndarray,
                  df_pe: int) -> tuple[float | None, float | None]:
    """Replicate-level SE of the per-level-means slope and its df (module docstring); ``resid2``: the squared
    deviations of each point from its level's mean."""
    if df_pe <= 0:
        return None, None
    counts = np.bincount(inverse)
    wts = level_weights(levels)
    ss = np.bincount(inverse, weights=resid2, minlength=levels.size)
    if np.all(counts >= 2):
        parts = wts**2 * (ss / (counts - 1)) / counts  # w_k^2 s_k^2 / n_k
        var = float(np.sum(parts))
        if var == 0.0:
            return 0.0, float(df_pe)
        df = var**2 / float(np.sum(parts**2 / (counts - 1)))
        return math.sqrt(var), max(1.0, df)
    return math.sqrt(float(ss.sum()) / df_pe * float(np.sum(wts**2 / counts))), float(df_pe)


def _bootstrap_ci(y: np.ndarray, levels: np.ndarray, inverse: np.ndarray, sxx: float, n_boot: int,
                  rng: np.random.Generator | None) -> tuple[float, float] | None:
    """Percentile 95% interval: replicates resampled within each level, the means regression refitted."""
    counts = np.bincount(inverse)
    if not (n_boot > 0 and np.any(counts >= 2)):
        return None
    k = levels.size
    order = np.argsort(inverse, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    ys = y[order]
    boot_means = np.empty((n_boot, k))
    for j in range(k):
        c, s0 = counts[j], starts[j]
        idx = rng.integers(0, c, size=(n_boot, c))
        boot_means[:, j] = ys[s0 + idx].mean(axis=1)
    xc = levels - levels.mean()
    slopes = (boot_means - boot_means.mean(axis=1, keepdims=True)) @ xc / sxx
    lo, hi = np.quantile(slopes, [0.025, 0.975])
    return (float(lo), float(hi))


def fit_slope(M: Sequence[float] | np.ndarray, errors: Sequence[float] | np.ndarray, n_boot: int = 2000,
              rng: np.random.Generator | int | None = None) -> SlopeFit:
    """Fit ``log(errors) = a + b log(M)``; replicates (repeated ``M``) are kept (module docstring: per-``M`` means).

    Parameters
    ----------
    M : array_like, shape (n,)
        Sample sizes, ``> 0``; repeat a value once per replicate.
    errors : array_like, shape (n,)
        Errors, ``> 0`` and finite, aligned with ``M``.
    n_boot : int
        Bootstrap resamples (``>= 0``; 0 skips it); its arrays (about ``8 n_boot (2 max_reps + n_levels)`` bytes) must
        fit the memory budget ``theory.get_limits()``.
    rng : numpy.random.Generator or int or None
        Randomness of the bootstrap (``None``: seed 0, reproducible; an int is a seed in ``[0, 2**63 - 1]``).

    Returns
    -------
    SlopeFit

    Raises
    ------
    ValueError
        Shapes differ, ``M <= 0``, ``errors <= 0`` or not finite (or complex), fewer than 3 distinct ``M``, ``n_boot``
        not an integer ``>= 0`` or its bootstrap over the memory budget, ``rng`` not a generator or seed (an
        :class:`theory.ArgumentTypeError`, also a ``TypeError``, for a wrong type).

    Examples
    --------
    >>> M = np.repeat([100, 300, 1000, 3000], 3)
    >>> f = fit_slope(M, 2.0 * M ** -0.8, n_boot=0)
    >>> round(f.slope, 12), f.n_levels, f.df
    (-0.8, 4, 2)
    """
    x, y = _validated_log_data(M, errors)
    n_boot = as_int("n_boot", n_boot, 0)
    rng = check_random_state("rng", 0 if rng is None else rng)
    return _fit(x, y, n_boot, rng, M=M, errors=errors)


def _fit(x: np.ndarray, y: np.ndarray, n_boot: int, rng: np.random.Generator | None, **args: Any) -> SlopeFit:
    """The fit of :func:`fit_slope` on validated ``x = log M``, ``y = log errors`` (``args``: inputs for messages)."""
    levels, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=y) / counts
    k = levels.size
    if k < 3:
        raise ValueError(f"M must contain at least 3 distinct values, got {k}")
    n = x.size
    if n_boot > 0:  # the bootstrap's index and mean arrays, before they exist
        check_array_memory("n_boot", n_boot, 8 * (2 * int(counts.max()) + k + 1))

    # per-level means regression (the reported slope and t interval)
    b, a, rss, sxx = _ols(levels, means)
    df = k - 2
    se = math.sqrt(rss / df / sxx)
    tq = float(stats.t.ppf(0.975, df))
    tss = float(np.sum((means - means.mean()) ** 2))
    r2 = 1.0 - rss / tss if tss > 0 else 1.0

    # all points (pooled) regression, for reference
    bp, _, rssp, sxxp = _ols(x, y)
    dfp = n - 2
    se_p = math.sqrt(rssp / dfp / sxxp)
    tqp = float(stats.t.ppf(0.975, dfp))

    resid2 = (y - means[inverse]) ** 2
    ss_pe = float(np.sum(resid2))  # pure error (replicates)
    df_pe = n - k
    se_rep, df_rep = _replicate_se(levels, inverse, resid2, df_pe)
    lof_p = None
    if df_pe > 0 and ss_pe > 0:  # lack-of-fit F test: pure error (replicates) vs lack of fit around the pooled line
        F = (max(rssp - ss_pe, 0.0) / (k - 2)) / (ss_pe / df_pe)
        lof_p = float(stats.f.sf(F, k - 2, df_pe))
    finite_result("fit_slope", (b, a, se, se_p, r2, ss_pe), **args)
    return SlopeFit(slope=b, se=se, ci_t=(b - tq * se, b + tq * se),
                    ci_boot=_bootstrap_ci(y, levels, inverse, sxx, n_boot, rng), intercept=a, r2=float(r2), n=int(n),
                    n_levels=int(k), df=int(df), se_pooled=se_p, ci_pooled=(bp - tqp * se_p, bp + tqp * se_p),
                    lack_of_fit_p=lof_p, se_rep=se_rep, df_rep=df_rep)


def design_slope(M: Sequence[float] | np.ndarray, values: Sequence[float] | np.ndarray) -> float:
    """Slope that :func:`fit_slope` would report for a deterministic curve on the same ``M`` design.

    The finite-``M`` prediction of a sweep: a predicted error curve at the sweep's ``M``, the same per-level slope.

    Parameters
    ----------
    M : array_like
        Distinct (or repeated) sample sizes ``> 0``; at least 3 distinct.
    values : array_like
        Predicted errors ``> 0`` aligned with ``M``.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        As :func:`fit_slope` (``values`` in place of ``errors``).

    Examples
    --------
    >>> round(design_slope([10, 100, 1000], [1e-1, 1e-2, 1e-3]), 12)
    -1.0
    """
    x, y = _validated_log_data(M, values, "values")
    return _fit(x, y, 0, None, M=M, values=values).slope
