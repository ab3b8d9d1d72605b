"""The one shape of paper A's estimators (private): ``fit / predict / interaction / l2_error``.

:class:`numerics.PairwiseInteractionEstimator` (the project's estimator) and
:class:`numerics.baseline.PaperStyleEstimator` (the paper's pipeline) both derive from
:class:`InteractionEstimator`: one data check (:func:`_check_XY`), one fitted-state check and one Monte
Carlo ``L2(rho)`` error with the same argument names (``model, n_pairs, rng``), so a caller (benchmarks,
checks) can swap one for the other.
"""

from __future__ import annotations

import abc
import math
from typing import Any

import numpy as np

from theory._validation import require_integer

from .ips import as_generator

__all__ = ["InteractionEstimator", "ConvergenceWarning"]


class ConvergenceWarning(UserWarning):
    """The optimiser stopped on its iteration cap before its tolerances were met."""


def _check_XY(X: Any, Y: Any | None = None, min_samples: int = 1) -> tuple[np.ndarray, np.ndarray | None]:
    """``X`` of shape ``(M, N, d)`` and ``Y`` of shape ``(M, N)`` as finite float64 arrays.

    Parameters
    ----------
    X : array_like
        Tokens, ``M >= min_samples`` samples of ``N >= 2`` tokens in ``R^d`` (``d >= 1``).
    Y : array_like or None
        Outputs aligned with ``X``; ``None`` checks ``X`` alone (and returns ``None`` for ``Y``).
    min_samples : int
        Smallest accepted ``M``.

    Returns
    -------
    (X, Y) : tuple of ndarray (``Y`` may be None)

    Raises
    ------
    ValueError
        A wrong shape or a non-finite entry (the message names ``X`` or ``Y``).
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 3:
        raise ValueError(f"X must have shape (M, N, d), got shape {X.shape}")
    M, N, d = X.shape
    if M < min_samples or d < 1:
        raise ValueError(f"X must hold M >= {min_samples} samples and d >= 1, got shape {X.shape}")
    if N < 2:
        raise ValueError(f"X must hold N >= 2 tokens per sample, got N={N}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X must be finite (no NaN or inf)")
    if Y is None:
        return X, None
    Y = np.asarray(Y, dtype=np.float64)
    if Y.shape != (M, N):
        raise ValueError(f"Y must have shape (M, N) = {(M, N)} matching X, got {Y.shape}")
    if not np.all(np.isfinite(Y)):
        raise ValueError("Y must be finite (no NaN or inf)")
    return X, Y


class InteractionEstimator(abc.ABC):
    """Base class of the estimators of ``g*(x, y) = phi*(x^T A* y)`` from ``(X, Y)`` (paper A).

    A subclass implements :meth:`fit`, :meth:`predict` and :meth:`interaction`; it is fitted once it has
    ``coef_``. :meth:`l2_error` is common.
    """

    @abc.abstractmethod
    def fit(self, X: Any, Y: Any, **options: Any) -> "InteractionEstimator":
        """Fit on tokens ``X`` ``(M, N, d)`` and outputs ``Y`` ``(M, N)``; returns ``self``."""

    @abc.abstractmethod
    def predict(self, X: Any) -> np.ndarray:
        """``R_{g_hat}[X]_i = 1/(N-1) sum_{j != i} g_hat(X_i, X_j)``, shape ``(M, N)``."""

    @abc.abstractmethod
    def interaction(self, x: Any, y: Any) -> np.ndarray:
        """``g_hat(x, y) = phi_hat(x^T A_ y)`` for pairs ``x, y`` of shape ``(n, d)``."""

    def _check_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(X, Y) first")

    def l2_error(self, model: Any, n_pairs: int = 2**18, rng: Any = 0) -> tuple[float, float]:
        """Monte Carlo ``||g_hat - g*||^2_{L2(rho)}`` on fresh pairs, with its standard error.

        Parameters
        ----------
        model : IPSModel
            The truth; needs ``sample_pairs(n, rng) -> (x, y)`` and ``interaction(x, y)``.
        n_pairs : int
            Number of fresh pairs ``(x, y) ~ rho`` (``>= 2``).
        rng : numpy.random.Generator or int
            Randomness of the pairs (a fixed seed gives common random numbers across estimators).

        Returns
        -------
        (value, standard_error) : tuple of float
        """
        self._check_fitted()
        require_integer("n_pairs", n_pairs, 2)
        x, y = model.sample_pairs(int(n_pairs), as_generator(rng))
        e2 = (self.interaction(x, y) - np.asarray(model.interaction(x, y), dtype=np.float64)) ** 2
        return float(e2.mean()), float(e2.std(ddof=1) / math.sqrt(e2.size))
