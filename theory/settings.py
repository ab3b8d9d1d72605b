"""Frozen settings: the parameters of each paper as one validated, hashable object with the theory as methods.

In the spirit of scipy's frozen distributions (``scipy.stats.norm(loc, scale).pdf(x)``): the parameters are given
once, checked once, and the predictions are methods of the object.

- :class:`AttentionModel` -- paper B's model: ``c = p / n``, the activation, ``snr = ||mu||^2``, the spike of the
  attention weights (one canonical form, a :class:`Spike`) and the kernel's diagonal.  Its methods are the
  deterministic equivalents (:meth:`~AttentionModel.error`, :meth:`~AttentionModel.error_taylor`,
  :meth:`~AttentionModel.small_gamma_law`, :meth:`~AttentionModel.solve`), the ridge baseline on the same data
  (:meth:`~AttentionModel.ridge_error`), the linearisation control at a dimension ``p`` and the activation's
  Hermite moments.  The functions of :mod:`theory.attention` and :mod:`theory.structured` take a model in place
  of the parameters (``attention_error(gamma, model)``); their long signatures
  (``attention_error(gamma, c, activation, snr=...)``) still work for one release, with a ``DeprecationWarning``.
- :class:`RateSetting` -- paper A's setting: the smoothness ``beta``, the rank ``r`` and the dimension ``d`` (and the
  constant of the low-rank condition), with the rate ``M^(-2 beta/(2 beta + 1))`` and the low-rank condition
  ``r d <= C (M / log M)^(1/(2 beta + 1))`` at a sample size ``M`` as methods (:mod:`theory.minimax`, whose
  functions stay the symbolic layer).

Examples
--------
>>> model = AttentionModel(c=2.0, activation="tanh")
>>> model
AttentionModel(c=2.0, activation='tanh', snr=0.0, spike=None, diagonal='removed')
>>> round(model.error(1e-2), 4)
0.0856
>>> spiked = AttentionModel(2.0, "tanh", snr=1.0, spike=(4.0, "aligned"))
>>> spiked.spike
Spike(w_k=(2.0,), w_q=(2.0,))
>>> bool(spiked.error(0.1) < AttentionModel(2.0, "tanh", snr=1.0).error(0.1))
True
>>> setting = RateSetting(beta=2, r=1, d=5)
>>> setting.rate_exponent
4/5
>>> setting.low_rank_condition(10**6)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from . import minimax as _minimax
from ._attention_model import AttentionModelFields, Spike
from .validation import rank_and_dimension, require_positive, sympy_number
from .activations import HermiteMoments, hermite_moments
from .attention import attention_error, attention_error_taylor, attention_small_gamma_law
from .ridge import ridge_error_values
from .structured import StructuredSolution, linearisation_control, structured_attention_solve

__all__ = ["AttentionModel", "Spike", "RateSetting"]


# ============================================================================ paper B
@dataclass(frozen=True, repr=True, eq=True)
class AttentionModel(AttentionModelFields):
    """Paper B's attention model, frozen: ``K = f(X^T W X / sqrt p) / sqrt p``, ``X = mu y^T + Z``,
    ``W = I + w_k w_q^T``.

    Parameters
    ----------
    c : float
        ``p / n``, in ``[1e-4, 1e4]`` (an exact number, ``int`` or sympy ``Rational``, is kept exact, any other one
        is stored as a float), or a sympy expression (then :meth:`error` is a sympy function of ``c``).
    activation : str, sympy expression or dict
        Registry name (stored as its registry key, e.g. ``"TanH"`` -> ``"tanh"``), sympy expression in ``x``, or the
        kernel constants ``{"a1": .., "sf2": .., "d0": ..}`` (stored as a hashable mapping).
    snr : float
        ``||mu||^2``, in ``[0, 1e8]``; ``0`` (default) and no spike: the null model.
    spike : Spike, (strength, kind) or None
        The spike ``W = I + w_k w_q^T``: a :class:`Spike` (any vectors) or ``(strength, "aligned" | "orthogonal")``
        (:meth:`Spike.named`); stored as a :class:`Spike`.  :meth:`from_arguments` takes the vectors ``w_k, w_q``.
    diagonal : str or float
        ``"removed"`` (default), ``"kept"`` or an explicit ``d0``.

    Raises
    ------
    ValueError
        A parameter out of its domain (``ArgumentTypeError``, also a ``TypeError``, for a wrong type), with the
        messages of the functions that take it.

    Notes
    -----
    Frozen (assigning a field raises ``dataclasses.FrozenInstanceError``), hashable, equal when the canonical
    fields are equal (``spike=(4.0, "aligned")`` equals ``spike=Spike([2.0], [2.0])``).  Every method gives the
    numbers of the corresponding function with the same parameters, bit for bit (the function is called with the
    model).

    Examples
    --------
    >>> m = AttentionModel(2.0, "tanh", snr=1.0, spike=(4.0, "orthogonal"))
    >>> bool(abs(m.error(0.1) - AttentionModel(2.0, "tanh", snr=1.0).error(0.1)) < 1e-10)
    True
    >>> round(m.linearisation_control(256), 4)
    0.3125
    >>> round(m.hermite.a1, 4)
    0.6057
    """

    def error(self, gamma: Any, **solver_options: Any) -> Any:
        """Interpolation error ``E_A(gamma)``: :func:`theory.attention_error` (null system, or the structured
        equivalent with signal or a spike); ``gamma`` a number, an array or a sympy expression."""
        return attention_error(gamma, self, **solver_options)

    def error_taylor(self, gamma: float, *, order: int = 2, rtol: float = 1e-8, **solver_options: Any) -> np.ndarray:
        """Taylor coefficients of :meth:`error` at ``gamma`` (:func:`theory.attention_error_taylor`)."""
        return attention_error_taylor(gamma, self, order=order, rtol=rtol, **solver_options)

    def small_gamma_law(self, gammas: tuple[float, float] = (1e-13, 1e-11),
                        **solver_options: Any) -> tuple[float, float]:
        """``(e, C)`` of ``E_A ~ C gamma^e`` (:func:`theory.attention_small_gamma_law`; the null model only)."""
        return attention_small_gamma_law(self, gammas=gammas, **solver_options)

    def solve(self, gamma: Any, **solver_options: Any) -> StructuredSolution:
        """The structured equivalent with its diagnostics (:func:`theory.structured_attention_solve`)."""
        return structured_attention_solve(gamma, self, **solver_options)

    def ridge_error(self, gamma: Any) -> Any:
        """Ridge regression's error ``E_RR(gamma)`` on the same data ``(c, snr)`` (:func:`theory.ridge_error_values`):
        a float for a scalar ``gamma``, else an array."""
        out = ridge_error_values(gamma, self.c, self.snr)
        return float(out) if np.ndim(out) == 0 else out

    def linearisation_control(self, p: int) -> float:
        """``kappa_lin = (snr + sqrt(v_K v_Q)) / sqrt p`` at dimension ``p`` (:func:`theory.linearisation_control`)."""
        return linearisation_control(p, self)

    @property
    def hermite(self) -> HermiteMoments:
        """The activation's Gaussian moments ``a0, a1, a2, nu, sf2`` (:func:`theory.hermite_moments`); an
        activation given by its kernel constants has none (``ValueError``)."""
        if not isinstance(self.activation, (str, sp.Basic)):
            raise ValueError("an activation given by its kernel constants has no Hermite moments; the constants are "
                             f"{dict(self.activation)}")
        return hermite_moments(self.activation)


# ============================================================================ paper A
@dataclass(frozen=True)
class RateSetting:
    """Paper A's setting, frozen: smoothness ``beta``, rank ``r`` and dimension ``d`` of ``A*``, and the constant
    ``C`` of the low-rank condition; the rate and the condition at a sample size ``M`` are methods.

    Parameters
    ----------
    beta : number or sympy expression
        Hölder smoothness of ``phi*``, ``> 0``.
    r, d : int or sympy expression, optional
        Rank and token dimension, integers with ``1 <= r <= d`` (needed by the low-rank condition, the parametric
        term and :meth:`min_samples`; the rates need ``beta`` only).
    constant : number or sympy expression
        ``C > 0`` of the low-rank condition and of ``K_M`` (default 1, the condition as printed).

    The values are kept as sympy numbers (exact); each is checked by the validators of :mod:`theory.minimax`.

    Examples
    --------
    >>> s = RateSetting(beta=2, r=1, d=30)
    >>> s.rate(10**5)
    1/10000
    >>> s.low_rank_condition(10**6), s.min_samples()
    (False, 486043975)
    """

    beta: Any
    r: Any = None
    d: Any = None
    constant: Any = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "beta", sympy_number(require_positive("beta", self.beta)))
        if (self.r is None) != (self.d is None):
            raise ValueError("give the rank r and the dimension d together (or neither)")
        if self.r is not None:
            r, d = rank_and_dimension(self.r, self.d)
            object.__setattr__(self, "r", r)
            object.__setattr__(self, "d", d)
        object.__setattr__(self, "constant", sympy_number(require_positive("constant", self.constant)))

    def _rd(self, what: str) -> tuple[sp.Expr, sp.Expr]:
        if self.r is None:
            raise ValueError(f"{what} needs the rank r and the dimension d: RateSetting(beta, r=..., d=...)")
        return self.r, self.d

    @property
    def rate_exponent(self) -> sp.Expr:
        """``2 beta / (2 beta + 1)`` (:func:`theory.rate_exponent`)."""
        return _minimax.rate_exponent(self.beta)

    def rate(self, M: Any) -> sp.Expr:
        """Minimax rate ``M^(-2 beta / (2 beta + 1))`` (:func:`theory.minimax_rate`)."""
        return _minimax.minimax_rate(M, self.beta)

    def upper_bound(self, M: Any) -> sp.Expr:
        """Theorem 3.1's upper bound (:func:`theory.upper_bound`)."""
        return _minimax.upper_bound(M, self.beta)

    def low_rank_condition(self, M: Any) -> sp.Basic:
        """``r d <= C (M / log M)^(1/(2 beta + 1))`` (:func:`theory.low_rank_condition`); ``bool()`` of it for
        numbers."""
        r, d = self._rd("low_rank_condition")
        return _minimax.low_rank_condition(r, d, M, self.beta, self.constant)

    def low_rank_rhs(self, M: Any) -> sp.Expr:
        """``C (M / log M)^(1/(2 beta + 1))`` (:func:`theory.low_rank_rhs`)."""
        return _minimax.low_rank_rhs(M, self.beta, self.constant)

    def num_intervals(self, M: Any) -> sp.Expr:
        """``K_M = max(1, floor(C (M / log M)^(1/(2 beta + 1))))`` (:func:`theory.num_intervals`)."""
        return _minimax.num_intervals(M, self.beta, self.constant)

    def parametric_term(self, M: Any) -> sp.Expr:
        """``r d log M / M`` (:func:`theory.parametric_term`)."""
        r, d = self._rd("parametric_term")
        return _minimax.parametric_term(r, d, M)

    def min_samples(self) -> int:
        """Smallest ``M >= 3`` inside the low-rank condition with ``C = 1`` (:func:`theory.min_samples`)."""
        r, d = self._rd("min_samples")
        if self.constant != 1:
            raise ValueError(f"min_samples is the condition as printed (constant 1), got constant={self.constant}")
        return _minimax.min_samples(r, d, self.beta)
