"""Summary statistics shared by the checks: the mean of Monte Carlo trials and its standard error."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["mean_se", "scalar_mean_se"]


def mean_se(trials: Any) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error (sample SD, ``ddof = 1``, over ``sqrt(n)``) over the first axis (the trials).

    >>> m, se = mean_se([[1.0, 2.0], [3.0, 6.0]])
    >>> m.tolist(), se.tolist()
    ([2.0, 4.0], [1.0, 2.0])
    """
    x = np.asarray(trials, dtype=float)
    return x.mean(0), x.std(0, ddof=1) / math.sqrt(x.shape[0])


def scalar_mean_se(trials: Any) -> tuple[float, float]:
    """:func:`mean_se` of a 1-d array of trials, as two floats."""
    m, se = mean_se(trials)
    return float(m), float(se)
