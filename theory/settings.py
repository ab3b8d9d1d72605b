"""Frozen settings: the parameters of each paper as one validated, hashable object with the theory as methods.

In the spirit of scipy's frozen distributions (``scipy.stats.norm(loc, scale).pdf(x)``): the parameters are given
once, checked once, and the predictions are methods of the object.

- :class:`AttentionModel` -- paper B's model (``c``, the activation, ``snr``, a :class:`Spike`, the kernel's diagonal);
  its methods are the deterministic equivalents, computed in :mod:`theory.attention` and :mod:`theory.structured`.
- :class:`StrongAlignment` -- paper B's model under strong alignment; its methods are the functions of
  :mod:`theory.strong_alignment` and :mod:`theory.strong_alignment_risk`, which are its functional form
  (``strong_alignment_gap(c, activation, snr, t)`` is ``StrongAlignment(c, activation, snr, t).gap()``).
- :class:`RateSetting` -- paper A's setting (``beta``, ``r``, ``d``, the constant ``C``); its methods are the
  functions of :mod:`theory.minimax` (which stay the symbolic layer) at a sample size ``M``.

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
>>> strong = StrongAlignment(c=0.5, activation="erf", snr=1.0, t=2.0)
>>> round(strong.gap(nodes=20).total, 3)
-0.093
>>> setting = RateSetting(beta=2, r=1, d=5)
>>> setting.rate_exponent
4/5
>>> setting.low_rank_condition(10**6)
True
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from . import minimax as _minimax
from . import strong_alignment as _strong
from . import strong_alignment_risk as _strong_risk
from ._kernel_constants import FrozenDict, kernel_constants
from ._solver_domain import C_RANGE
from ._spikes import SNR_MAX, resolve_spike, spike_arrays
from ._spikes import linearisation_control as _linearisation_control
from .validation import ArgumentTypeError, as_float, check_real, rank_and_dimension, to_sympy
from .activations import HermiteMoments, check_activation, hermite_moments
from .attention import _attention_error, _attention_error_taylor, _small_gamma_law
from .ridge import ridge_error_values
from .structured import StructuredSolution, _structured_solve
from .symbolic import is_symbolic

__all__ = ["AttentionModel", "Spike", "StrongAlignment", "RateSetting"]


# ============================================================================ paper B
@dataclass(frozen=True)
class Spike:
    """A spike of the attention weights, ``W = I + w_k w_q^T``, in coordinates where ``mu`` points along ``e_1``.

    The one form the model stores: the two vectors, as tuples of floats, padded to a common length with the
    trailing coordinates that are zero in both removed (at least one coordinate is kept), so that equal spikes
    compare equal however they were spelt.  :meth:`named` builds the symmetric spikes of the papers.

    Parameters
    ----------
    w_k, w_q : sequences of finite reals (a scalar is one coordinate), non-empty, ``||w||^2 <= 1e8``.

    Examples
    --------
    >>> Spike.named(4.0, "aligned")
    Spike(w_k=(2.0,), w_q=(2.0,))
    >>> Spike.named(4.0, "aligned") == Spike([2.0, 0.0], [2.0, 0.0])
    True
    """

    w_k: tuple[float, ...]
    w_q: tuple[float, ...]

    def __post_init__(self) -> None:
        wk, wq = spike_arrays(self.w_k, self.w_q)
        if wk is None:
            raise ValueError("a Spike needs the two vectors w_k and w_q, got None")
        dim = max(wk.size, wq.size)
        wk, wq = np.pad(wk, (0, dim - wk.size)), np.pad(wq, (0, dim - wq.size))
        nonzero = np.flatnonzero((wk != 0) | (wq != 0))
        keep = int(nonzero[-1]) + 1 if nonzero.size else 1
        object.__setattr__(self, "w_k", tuple(float(v) for v in wk[:keep]))
        object.__setattr__(self, "w_q", tuple(float(v) for v in wq[:keep]))

    @classmethod
    def named(cls, strength: float, kind: str) -> Spike:
        """The symmetric spike ``w_k = w_q = sqrt(strength) u`` (:func:`theory.structured.spike_vectors`).

        Parameters
        ----------
        strength : float in ``[0, 1e8]``.
        kind : ``"aligned"`` (``u = e_1``, along ``mu``) or ``"orthogonal"`` (``u = e_2``).
        """
        return cls(*resolve_spike((strength, kind), None, None))

    @classmethod
    def of(cls, spike: Any) -> Spike | None:
        """A spike from any spelling the model accepts: ``None``, a :class:`Spike` or ``(strength, kind)``."""
        if spike is None or isinstance(spike, Spike):
            return spike
        return cls(*resolve_spike(spike, None, None))  # refuses a bad pair with the solvers' message

    def vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """``(w_k, w_q)`` as float arrays (the form the solvers take)."""
        return np.array(self.w_k, dtype=float), np.array(self.w_q, dtype=float)


#: the model's fields: a solver option of one of these names is refused (it belongs to the model)
_MODEL_FIELDS = ("c", "activation", "snr", "spike", "diagonal", "w_k", "w_q")


@dataclass(frozen=True)
class AttentionModel:
    """Paper B's attention model, frozen: ``K = f(X^T W X / sqrt p) / sqrt p``, ``X = mu y^T + Z``,
    ``W = I + w_k w_q^T``.

    Parameters
    ----------
    c : float
        ``p / n``, in ``[1e-4, 1e4]`` (an exact number, ``int`` or sympy ``Rational``, is kept exact, any other one
        is stored as a float), or a sympy expression (then :meth:`error` is a sympy function of ``c``).
    activation : str, sympy expression or dict
        Registry name (stored as its registry key, e.g. ``"TanH"`` -> ``"tanh"``), sympy expression in ``x``
        (centred internally), or the kernel constants ``{"a1": .., "sf2": .., "d0": ..}`` (``|a1|, |d0| <= 1e6``,
        ``0 <= sf2 <= 1e12``; stored as a hashable mapping).
    snr : float, ``||mu||^2``, in ``[0, 1e8]``; ``0`` (default) and no spike: the null model.
    spike : Spike, (strength, kind) or None
        The spike ``W = I + w_k w_q^T``: a :class:`Spike` (any vectors, coordinates with ``mu`` along ``e_1``) or
        ``(strength, "aligned" | "orthogonal")`` (:meth:`Spike.named`); stored as a :class:`Spike`.
    diagonal : str or float
        ``"removed"`` (default, ``d0 = 0``), ``"kept"`` (``d0`` = the asymptotic slope of ``f``) or an explicit
        ``d0`` (e.g. :func:`theory.kept_diagonal` at a finite ``p``).

    Raises
    ------
    ValueError
        A parameter out of its domain (``ArgumentTypeError``, also a ``TypeError``, for a wrong type), with the
        messages of the solvers that take it.

    Notes
    -----
    Frozen (assigning a field raises ``dataclasses.FrozenInstanceError``), hashable, equal when the canonical
    fields are equal (``spike=(4.0, "aligned")`` equals ``spike=Spike([2.0], [2.0])``).  The methods take solver
    options as keywords; a keyword naming a field of the model is refused.

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

    c: Any
    activation: Any
    snr: float = 0.0
    spike: Spike | None = None
    diagonal: Any = "removed"

    def __post_init__(self) -> None:
        set_ = functools.partial(object.__setattr__, self)
        if is_symbolic(self.c):
            check_real("c", self.c, low=C_RANGE[0], high=C_RANGE[1], symbolic=True)
        else:  # exact numbers stay exact (a sympy function of gamma keeps them unevaluated)
            c = as_float("c", self.c, low=C_RANGE[0], high=C_RANGE[1])
            exact = isinstance(self.c, (int, np.integer, sp.Rational))
            set_("c", (int(self.c) if isinstance(self.c, (int, np.integer)) else self.c) if exact else c)
        activation = self.activation
        if isinstance(activation, FrozenDict):
            activation = dict(activation)
        if not isinstance(activation, dict):
            set_("activation", check_activation(activation, "activation"))
        kernel_constants(activation, self.diagonal)  # activation (a dict of constants too) and diagonal
        if isinstance(activation, dict):
            set_("activation", FrozenDict(sorted((str(k), float(v)) for k, v in activation.items())))
        set_("diagonal", self.diagonal.lower() if isinstance(self.diagonal, str) else float(self.diagonal))
        set_("snr", as_float("snr", self.snr, low=0, high=SNR_MAX))
        set_("spike", Spike.of(self.spike))

    def _arguments(self) -> tuple[Any, Any, float, Any, Any]:
        """``(c, activation, snr, spike, diagonal)``: the model as the solvers take it (the spike as its vectors
        ``(w_k, w_q)``, arrays, or None; a dict of constants as a dict)."""
        spike = self.spike.vectors() if self.spike is not None else None
        activation = dict(self.activation) if isinstance(self.activation, FrozenDict) else self.activation
        return self.c, activation, self.snr, spike, self.diagonal

    @staticmethod
    def _options(where: str, options: dict[str, Any]) -> dict[str, Any]:
        """The solver options given to ``where``, refused if one names a field of the model."""
        clash = sorted(set(options) & set(_MODEL_FIELDS))
        if clash:
            raise ArgumentTypeError(f"{clash[0]} is part of the model: give it to AttentionModel, not to {where}")
        return options

    def error(self, gamma: Any, **solver_options: Any) -> Any:
        """Limiting interpolation error ``E_A(gamma)`` of nonlinear attention.

        The null model (``snr = 0``, no spike) by the corrected null system (:mod:`theory.null_system`); with
        signal or a spike, the structured equivalent (:meth:`solve`, :mod:`theory.structured`).

        Parameters
        ----------
        gamma : float, array or sympy expression
            Ridge parameter in ``[1e-30, 1e30]`` (at most ``Limits.max_grid_size`` values), or a sympy expression.
        **solver_options
            Those of :func:`theory.solve_null_system_full` (``system``, ``method``, ``n_nodes``, ``tol``, ``maxiter``
            / ``max_iter``), same rules on both paths; ``check_quadrature`` (a bool) acts on the structured path only.

        Returns
        -------
        float, numpy.ndarray or theory.symbolic.NumericFunction
            A float (an array) for numeric ``gamma`` and ``c``.  When either is a sympy expression with free
            symbols, a sympy function of ``(gamma, c)`` with the rest fixed, which ``evalf``, ``subs``, ``diff`` (by
            :meth:`error_taylor`), ``series``, ``lambdify`` and ``plot`` evaluate through the solver
            (:mod:`theory.symbolic`).

        Raises
        ------
        ValueError
            Invalid arguments (``ArgumentTypeError``, also a ``TypeError``, for a wrong type or option).
        RuntimeError
            No convergence (the message gives ``gamma`` and the residual reached).

        Examples
        --------
        >>> model = AttentionModel(2.0, "tanh")
        >>> round(model.error(1e-2), 4), round(model.error(1e-2, system="spec"), 4)
        (0.0856, 0.0839)
        >>> from theory.symbols import gamma
        >>> AttentionModel(2, "tanh", 1.0).error(gamma)
        structured_attention_error(gamma, 2, 'tanh', 1.0)
        """
        return _attention_error(gamma, *self._arguments(), **self._options("AttentionModel.error", solver_options))

    def error_taylor(self, gamma: float, *, order: int = 2, rtol: float = 1e-8, **solver_options: Any) -> np.ndarray:
        """Taylor coefficients of :meth:`error` at ``gamma``: ``E(gamma + s) = sum_k e[k] s^k + O(s^(order+1))``.

        Implicit-function derivatives of the fixed-point system, no finite differences
        (:func:`theory.null_system_taylor`; with signal or a spike, the trace integrals by a refined Gauss-Jacobi rule).
        ``e[k] = E^(k)(gamma) / k!``; ``e[0]`` is :meth:`error` (the structured one to the quadrature's accuracy).

        Parameters
        ----------
        gamma : float, expansion point, in ``[1e-30, 1e30]``.
        order : int, highest coefficient, in ``[0, 19]``.
        rtol : float
            Agreement required of two successive quadrature rules for the coefficients of order ``>= 1``, in
            ``[1e-14, 1e-3]``.
        **solver_options
            As in :meth:`error` (numbers only).

        Returns
        -------
        numpy.ndarray
            ``order + 1`` coefficients.

        Raises
        ------
        ValueError
            Invalid arguments.
        RuntimeError
            No convergence of the solver, or of the quadrature of the higher orders.

        Examples
        --------
        >>> model = AttentionModel(2.0, "tanh")
        >>> e = model.error_taylor(0.1, order=2)
        >>> bool(e[0] == model.error(0.1)), round(float(e[1]), 4)
        (True, 1.6232)
        """
        return _attention_error_taylor(gamma, *self._arguments(), order=order, rtol=rtol,
                                       **self._options("AttentionModel.error_taylor", solver_options))

    def small_gamma_law(self, gammas: tuple[float, float] = (1e-13, 1e-11),
                        **solver_options: Any) -> tuple[float, float]:
        """``(e, C)`` of the small-``gamma`` law ``E_A ~ C gamma^e`` of the null model, read off :meth:`error`.

        ``e`` is the log-log slope between the two ``gammas``, ``C = E_A(gamma_0) / gamma_0^e`` at the smaller one.
        Expected: ``e = 1/2`` for ``c > 1`` whenever ``A(l) - kappa`` vanishes inside the support of ``mu_G`` (e.g.
        tanh with the diagonal removed), ``e = 2`` when it does not (interpolation, like ridge), ``e = 0`` for
        ``c < 1`` (``E_A -> 1 - c``).  A numerical reading, not a closed form.  The model must be the null model
        (``snr = 0``, no spike); ``solver_options`` as in :meth:`error`.

        Examples
        --------
        >>> e, C = AttentionModel(2.0, "tanh").small_gamma_law()
        >>> round(e, 3)
        0.5
        """
        for name, value, default in (("snr", self.snr, 0.0), ("spike", self.spike, None)):
            if value != default:
                raise ValueError(f"small_gamma_law does not take {name}: it needs a model with {name}={default!r}, "
                                 f"got {name}={value!r}")
        c, activation, _, _, diagonal = self._arguments()
        return _small_gamma_law(c, activation, diagonal, gammas=gammas,
                                **self._options("AttentionModel.small_gamma_law", solver_options))

    def solve(self, gamma: Any, **solver_options: Any) -> StructuredSolution:
        """The structured deterministic equivalent on a ``gamma`` grid, with all its diagnostics
        (:mod:`theory.structured`; the null model too: ``model.solve(gammas, check_quadrature=False).error`` is the
        structured solver's error, bit for bit the :meth:`error` of a model with signal or a spike).

        Parameters
        ----------
        gamma : float or 1-d array of floats in ``[1e-30, 1e30]`` (at most ``Limits.max_grid_size``).
        system, tol, maxiter : as :func:`theory.solve_null_system_full` (``max_iter``: an alias that wins).
        method : ``"exact"`` (default) or ``"quadrature"``: the null system's integrals as there, and the trace
            integrals ``I_k`` (partial fractions with a Gauss–Chebyshev fallback where they cancel, or Gauss–Chebyshev).
        n_nodes : quadrature nodes, an integer in ``[16, Limits.max_quadrature_nodes]`` (default 800): trace
            integrals for ``method="quadrature"`` and the cross-check.
        check_quadrature : also evaluate the traces by Gauss–Chebyshev quadrature and report the change of ``E``
            (default ``True``).

        Returns
        -------
        StructuredSolution
            Arrays indexed like the (1-d) ``gamma`` grid.

        Raises
        ------
        ValueError
            Invalid input (``ArgumentTypeError``, also a ``TypeError``, for a wrong type).
        theory.StructuredConvergenceError
            No convergence (the message gives the residual reached).

        Examples
        --------
        >>> sol = AttentionModel(2.0, "tanh", 1.0, spike=(4.0, "aligned")).solve([0.01, 0.1])
        >>> sol.error.round(4), bool(sol.quadrature_change.max() < 1e-8)
        (array([0.0437, 0.1602]), True)
        """
        return _structured_solve(gamma, *self._arguments(), **self._options("AttentionModel.solve", solver_options))

    def ridge_error(self, gamma: Any) -> Any:
        """Ridge regression's error ``E_RR(gamma)`` on the same data ``(c, snr)`` (:func:`theory.ridge_error_values`):
        a float for a scalar ``gamma``, else an array."""
        out = ridge_error_values(gamma, self.c, self.snr)
        return float(out) if np.ndim(out) == 0 else out

    def linearisation_control(self, p: int) -> float:
        """``kappa_lin = (snr + sqrt(v_K v_Q)) / sqrt p``, ``v = ||w||^2 + snr w_1^2``, at the dimension ``p`` (an
        integer in ``[1, Limits.max_dimension]``): the linearisation control of the structured equivalent (valid for
        ``kappa_lin <= 0.5``; ``docs/structured_attention.md``)."""
        _, _, snr, spike, _ = self._arguments()
        return _linearisation_control(p, snr, *(spike or ()))

    @property
    def hermite(self) -> HermiteMoments:
        """The activation's Gaussian moments ``a0, a1, a2, nu, sf2`` (:func:`theory.hermite_moments`); an
        activation given by its kernel constants has none (``ValueError``)."""
        if not isinstance(self.activation, (str, sp.Basic)):
            raise ValueError("an activation given by its kernel constants has no Hermite moments; the constants are "
                             f"{dict(self.activation)}")
        return hermite_moments(self.activation)


@dataclass(frozen=True)
class StrongAlignment:
    """Paper B's model under strong alignment, frozen: aligned spikes along ``mu`` with
    ``||w_K|| ||w_Q|| = t sqrt p`` as ``p -> infinity`` (docs/strong_alignment.md).

    Parameters
    ----------
    c : float, ``p / n``, finite, ``> 0`` (the methods at ``gamma -> 0`` need ``c < 1``).
    activation : str or sympy expression
        The kernel's ``f`` (stored as its registry key or its expression in ``x``; not a dict of kernel constants).
    snr : float, ``||mu||^2``, finite, ``>= 0``.
    t : float, ``||w_K|| ||w_Q|| / sqrt p``, finite, ``>= 0`` (all but :meth:`leverage` need ``t > 0``).

    Notes
    -----
    Frozen, hashable, equal when the checked fields are equal.  Each method is the function of
    :mod:`theory.strong_alignment` or :mod:`theory.strong_alignment_risk` named in its docstring, called with the
    fields; solver options (``nodes``, ``tol``, ``maxiter``, ``per_bin``, ``p``) are keywords, as there.

    Examples
    --------
    >>> s = StrongAlignment(0.5, "erf", 1.0, 1.0)
    >>> round(s.error(0.0, nodes=20), 3), s.captures_bayes_predictor
    (0.188, True)
    """

    c: float
    activation: Any
    snr: float
    t: float

    def __post_init__(self) -> None:
        fields = _strong.check_setting(self.c, self.activation, self.snr, self.t, c_below_one=False)
        for name, value in zip(("c", "activation", "snr", "t"), fields):
            object.__setattr__(self, name, value)

    def error(self, gamma: Any, **options: Any) -> Any:
        """Attention's interpolation error at ``gamma`` (:func:`theory.strong_spike_attention_error`)."""
        return _strong.strong_spike_attention_error(gamma, self.c, self.activation, self.snr, self.t, **options)

    def prediction_risk(self, gamma: Any, **options: Any) -> Any:
        """Attention's prediction risk on fresh labels at ``gamma`` (:func:`theory.strong_spike_prediction_risk`)."""
        return _strong_risk.strong_spike_prediction_risk(gamma, self.c, self.activation, self.snr, self.t, **options)

    def ridge_prediction_risk(self, gamma: Any) -> Any:
        """Ridge's prediction risk on fresh labels (:func:`theory.ridge_prediction_risk`)."""
        return _strong_risk.ridge_prediction_risk(gamma, self.c, self.snr)

    def leverage(self, **options: Any) -> _strong.LeverageProfile:
        """Leverage profile ``h(a)`` at ``gamma -> 0``, its ``T2`` part (:func:`theory.strong_alignment_leverage`)."""
        return _strong.strong_alignment_leverage(self.c, self.activation, self.snr, self.t, **options)

    def gap(self, **options: Any) -> _strong.StrongAlignmentGap:
        """``E_att(0) - E_RR(0)`` and its parts ``t1``, ``t2`` (:func:`theory.strong_alignment_gap`)."""
        return _strong.strong_alignment_gap(self.c, self.activation, self.snr, self.t, **options)

    def binned_leverage(self, edges: Any, **options: Any) -> _strong_risk.BinnedLeverage:
        """Mean leverage in bins of ``|a|``, the gap's parts from the same solve (:func:`theory.binned_leverage`)."""
        return _strong_risk.binned_leverage(edges, self.c, self.activation, self.snr, self.t, **options)

    def label_coordinate_bins(self, n_bins: Any) -> np.ndarray:
        """Edges of ``n_bins`` equal-probability bins of ``|a|`` (:func:`theory.label_coordinate_bins`)."""
        return _strong_risk.label_coordinate_bins(self.snr, n_bins)

    @property
    def label_mmse(self) -> float:
        """The Bayes error of a label from its token (:func:`theory.label_mmse`)."""
        return _strong.label_mmse(self.snr)

    @property
    def bayes_feature_limit(self) -> float:
        """``E(0)`` of features holding the Bayes predictor, uniform leverage (:func:`theory.bayes_feature_limit`)."""
        return _strong.bayes_feature_limit(self.c, self.snr)

    @property
    def margin(self) -> float:
        """The gap's ``T1`` part if features capture the Bayes predictor (:func:`theory.strong_alignment_margin`)."""
        return _strong.strong_alignment_margin(self.c, self.snr)

    @property
    def captures_bayes_predictor(self) -> bool:
        """Whether the mean kernel has a nonlinear odd part (:func:`theory.captures_bayes_predictor`)."""
        return _strong.captures_bayes_predictor(self.activation)


# ============================================================================ paper A
@dataclass(frozen=True)
class RateSetting:
    """Paper A's setting, frozen: smoothness ``beta``, rank ``r`` and dimension ``d`` of ``A*``, and the constant
    ``C`` of the low-rank condition; the rate and the condition at a sample size ``M`` are methods.

    Parameters
    ----------
    beta : number or sympy expression, Hölder smoothness of ``phi*``, ``> 0``.
    r, d : int or sympy expression, optional
        Rank and token dimension, integers with ``1 <= r <= d`` (needed by the low-rank condition, the parametric
        term and :meth:`min_samples`; the rates need ``beta`` only).
    constant : number or sympy expression
        ``C > 0`` of the low-rank condition and of ``K_M`` (default 1, the condition as printed).  All values are kept
        as exact sympy numbers.

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
        object.__setattr__(self, "beta", to_sympy("beta", self.beta, low=0, low_open=True))
        if (self.r is None) != (self.d is None):
            raise ValueError("give the rank r and the dimension d together (or neither)")
        if self.r is not None:
            r, d = rank_and_dimension(self.r, self.d)
            object.__setattr__(self, "r", r)
            object.__setattr__(self, "d", d)
        object.__setattr__(self, "constant", to_sympy("constant", self.constant, low=0, low_open=True))

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
