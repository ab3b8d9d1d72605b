"""The one shape of paper A's estimators (private): ``fit / predict / interaction / l2_error``.

:class:`numerics.PairwiseInteractionEstimator` (the project's estimator) and
:class:`benchmarks.paper_style.PaperStyleEstimator` (the paper's pipeline, the benchmark's baseline) both derive from
:class:`InteractionEstimator`: one data check (:func:`check_XY`), one fitted-state check and one Monte Carlo
``L2(rho)`` error with the same argument names (``model, n_pairs, rng``), so a caller can swap one for the other; both
follow scikit-learn's conventions (randomness is ``random_state``: ``None``, a seed or a ``numpy.random.Generator``).
"""

from __future__ import annotations

import abc
import inspect
import math
from typing import Any

import numpy as np

from theory.validation import ArgumentTypeError, as_array, as_int, check_random_state, describe

from .ips import MAX_COUNT  # the estimators' largest count too (benchmarks.paper_style's as well)

__all__ = ["InteractionEstimator", "ConvergenceWarning"]


class ConvergenceWarning(UserWarning):
    """The optimiser stopped on its iteration cap before its tolerances were met."""


def check_XY(X: Any, Y: Any | None = None, min_samples: int = 1) -> tuple[np.ndarray, np.ndarray | None]:
    """``(X, Y)`` as finite float64 arrays: ``M >= min_samples`` samples of ``N >= 2`` tokens in ``R^d`` (``d >= 1``),
    ``X`` ``(M, N, d)``, outputs ``Y`` ``(M, N)`` (``None``: ``X`` alone is checked); ``ValueError`` (naming ``X`` or
    ``Y``) for a wrong shape or a non-finite entry."""
    X = as_array("X", X, allow_empty=True)
    if X.ndim != 3:
        raise ValueError(f"X must have shape (M, N, d), got shape {X.shape}")
    M, N, d = X.shape
    if M < min_samples or d < 1:
        raise ValueError(f"X must hold M >= {min_samples} samples and d >= 1, got shape {X.shape}")
    if N < 2:
        raise ValueError(f"X must hold N >= 2 tokens per sample, got N={N}")
    if Y is None:
        return X, None
    Y = as_array("Y", Y, allow_empty=True)
    if Y.shape != (M, N):
        raise ValueError(f"Y must have shape (M, N) = {(M, N)} matching X, got {Y.shape}")
    return X, Y


class InteractionEstimator(abc.ABC):
    """Base class of the estimators of ``g*(x, y) = phi*(x^T A* y)`` from ``(X, Y)`` (paper A).

    A subclass implements :meth:`fit`, :meth:`predict` and :meth:`interaction`; it is fitted once it has ``coef_``.
    :meth:`l2_error`, :meth:`score` and scikit-learn's parameter protocol (:meth:`get_params`, :meth:`set_params`;
    parameters are the keyword arguments of ``__init__``, stored as given, validated but converted only in ``fit``)
    are common, so ``sklearn.base.clone``, ``Pipeline`` and ``GridSearchCV`` accept both estimators on the 3-D ``X``
    of shape ``(M, N, d)`` with ``Y`` of shape ``(M, N)`` (scikit-learn is not a dependency).

    Examples
    --------
    >>> from numerics import PairwiseInteractionEstimator
    >>> est = PairwiseInteractionEstimator(n_intervals=6)
    >>> est.get_params()["n_intervals"]
    6
    >>> est.set_params(n_intervals=8, random_state=1)
    PairwiseInteractionEstimator(n_intervals=8, random_state=1)
    """

    # ------------------------------------------------------------------ scikit-learn's parameter protocol
    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The keyword arguments of ``__init__``, sorted (scikit-learn's rule)."""
        return sorted(name for name in inspect.signature(cls.__init__).parameters if name != "self")

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The parameters of this estimator, by name (scikit-learn's ``get_params``).

        Parameters
        ----------
        deep : bool
            scikit-learn's flag for parameters that are estimators themselves (there are none here).

        Returns
        -------
        dict
            Every keyword argument of ``__init__`` with its value as given (or as set by :meth:`set_params`).
        """
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params: Any) -> "InteractionEstimator":
        """Set parameters by name (scikit-learn's ``set_params``); returns ``self``.

        The values are checked by the next :meth:`fit`; a fitted estimator keeps its fitted attributes until then.

        Raises
        ------
        ValueError
            A name that is not a parameter of this estimator.
        """
        valid = self._get_param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"Invalid parameter {name!r} for estimator {type(self).__name__}; valid "
                                 f"parameters are {valid}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        """``ClassName(param=value, ...)`` with the parameters that differ from their defaults."""
        sig = inspect.signature(type(self).__init__).parameters
        shown = []
        for name in self._get_param_names():
            value, default = getattr(self, name), sig[name].default
            same = value is default
            if not same:
                try:
                    same = type(value) is type(default) and bool(value == default)
                except (TypeError, ValueError):  # arrays and other objects without a plain ==
                    same = False
            if not same:
                shown.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's tags: a regressor, 3-D ``X``, required 2-D ``Y`` (only scikit-learn calls it)."""
        from sklearn.utils import InputTags, RegressorTags, Tags, TargetTags

        return Tags(estimator_type="regressor", target_tags=TargetTags(required=True, multi_output=True),
                    regressor_tags=RegressorTags(), input_tags=InputTags(two_d_array=False, three_d_array=True),
                    non_deterministic=False)

    def score(self, X: Any, Y: Any, sample_weight: Any = None) -> float:
        """Coefficient of determination ``R^2`` of :meth:`predict` on ``(X, Y)`` (``GridSearchCV``'s default score).

        The same number as ``sklearn.metrics.r2_score(Y, self.predict(X), sample_weight=sample_weight)``: ``R^2`` of
        each token position (column of ``Y``), averaged; a constant column scores 1 if predicted exactly, else 0.

        Parameters
        ----------
        X : array_like (M, N, d)
        Y : array_like (M, N)
        sample_weight : array_like or None
            Non-negative weights of the ``M`` samples (not all zero).

        Returns
        -------
        float
            ``<= 1``; ``1`` is a perfect prediction, ``0`` that of the mean of each column.
        """
        X, Y = check_XY(X, Y)
        weights = None
        if sample_weight is not None:
            weights = np.asarray(sample_weight, dtype=np.float64)
            if weights.shape != (X.shape[0],) or not np.all(np.isfinite(weights)) or np.any(weights < 0) \
                    or not weights.sum() > 0:
                raise ValueError(f"sample_weight must hold M = {X.shape[0]} finite weights >= 0, not all zero, "
                                 f"got shape {weights.shape}")
        P = self.predict(X)
        w = np.ones(Y.shape[0]) if weights is None else weights
        num = (w[:, None] * (Y - P) ** 2).sum(axis=0)
        mean = (w[:, None] * Y).sum(axis=0) / w.sum()
        den = (w[:, None] * (Y - mean) ** 2).sum(axis=0)
        scores = np.ones(Y.shape[1])
        ok = den != 0
        scores[ok] = 1.0 - num[ok] / den[ok]
        scores[~ok & (num != 0)] = 0.0  # a constant column predicted wrongly: 0, as scikit-learn's force_finite
        return float(scores.mean())

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
        as_int("n_pairs", n_pairs, 2, MAX_COUNT)
        methods = ("sample_pairs", "interaction")
        if isinstance(model, type) or not all(callable(getattr(model, a, None)) for a in methods):
            raise ArgumentTypeError(f"model must be a model instance with sample_pairs and interaction methods (an "
                                    f"IPSModel), got {describe(model)} of type {type(model).__name__}")
        x, y = model.sample_pairs(int(n_pairs), check_random_state("rng", rng, none_ok=False))
        e2 = (self.interaction(x, y) - np.asarray(model.interaction(x, y), dtype=np.float64)) ** 2
        return float(e2.mean()), float(e2.std(ddof=1) / math.sqrt(e2.size))
