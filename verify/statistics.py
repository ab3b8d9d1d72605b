"""Summary statistics shared by the checks: the mean of Monte Carlo trials with its SE, and a robust trend."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from numerics.model_simulation import mean_se


def scalar_mean_se(trials: Any) -> tuple[float, float]:
    """:func:`mean_se` of a 1-d array of trials, as two floats."""
    m, se = mean_se(trials)
    return float(m), float(se)


def robust_trend(x_levels: Sequence[float], errors: Sequence[Sequence[float]], n_boot: int = 2000,
                 rng: int = 0) -> tuple[float, float, float]:
    """Slope ``b`` of the per-configuration MEDIAN error against ``x`` (OLS), with a replicate-bootstrap SE.

    The median of each configuration's replicates cannot be moved far by one outlier replicate (an estimator
    fit in a bad basin), unlike the mean or an OLS fit through every replicate point; the bootstrap resamples
    replicates within each configuration and refits, and the SE is the interquartile range of the bootstrap
    slopes over 1.349 (the replicate-level variability of ``b``, robust to resamples that repeat an outlier).

    Returns
    -------
    (b, se, intercept)
    """
    x = np.asarray(x_levels, dtype=float)
    xc = x - x.mean()
    sxx = float(np.sum(xc**2))
    med = np.array([np.median(e) for e in errors])
    b = float(xc @ med / sxx)
    gen = np.random.default_rng(rng)
    boots = np.empty((n_boot, len(errors)))
    for j, e in enumerate(errors):
        e = np.asarray(e, dtype=float)
        boots[:, j] = np.median(e[gen.integers(0, e.size, size=(n_boot, e.size))], axis=1)
    bb = (boots - boots.mean(axis=1, keepdims=True)) @ xc / sxx
    q25, q75 = np.quantile(bb, [0.25, 0.75])
    return b, float((q75 - q25) / 1.3489795), float(med.mean() - b * x.mean())
