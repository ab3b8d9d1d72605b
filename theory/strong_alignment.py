"""The interpolation limit under strong alignment: its exact split, closed forms and leverage equation.

*Derived by the project* (derivation and checks: docs/strong_alignment.md, "Mechanism").  Model of paper B:
``x_i = mu y_i + z_i`` with balanced labels ``y_i = +-1`` and ``||mu||^2 = snr``; ``c = p/n``.  As ``gamma -> 0``
with ``c < 1`` the interpolation error is the in-sample residual of the labels on the ``p`` features, and given the
data it splits exactly into ``T1`` (the part of the Bayes predictor ``tanh(mu^T x)`` the features miss) and ``T2``
(the label noise left, weighted by one minus each token's leverage).  The functions: the Bayes error
:func:`label_mmse`; the limit :func:`bayes_feature_limit` of features that hold the Bayes predictor and its margin
over ridge :func:`strong_alignment_margin` (``T1``); the leverage profile :func:`strong_alignment_leverage` (a matrix
Dyson equation, ``T2``); both parts, :func:`strong_alignment_gap`; attention's error at any ``gamma``,
:func:`strong_spike_attention_error`.

The functions are the functional form of :class:`theory.StrongAlignment`: the call's own argument (``gamma``) first,
then ``c, activation, snr, t``.

>>> round(label_mmse(1.0), 4)
0.4496
>>> round(strong_alignment_margin(0.5, 1.0), 4)
-0.0252
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import integrate

from ._leverage_dyson import DysonOptions, solve_leverage
from .validation import ArgumentTypeError, as_array, as_float, as_int
from .activations import ActivationLike, check_activation, hermite_coefficients, numpy_activation

__all__ = ["label_mmse", "bayes_feature_limit", "strong_alignment_margin", "strong_alignment_leverage",
           "strong_alignment_gap", "captures_bayes_predictor", "strong_spike_attention_error"]


def label_mmse(snr: Any) -> float:
    """Bayes error of a balanced label ``y = +-1`` from ``a = sqrt(snr) y + z``, ``z ~ N(0, 1)``.

    ``E[y | a] = tanh(sqrt(snr) a)``, so the error is ``1 - E tanh(sqrt(snr) a)^2 = 1 - E tanh(snr + sqrt(snr) z)``
    (the second form by the Nishimori identity of this channel); computed by adaptive quadrature of the first form.

    Parameters
    ----------
    snr : float, ``||mu||^2``, finite, ``>= 0``.

    Returns
    -------
    float
        In ``[0, 1]``; 1 at ``snr = 0``, decreasing in ``snr``, and at most ``1/(1 + snr)`` (the error of the best
        linear predictor).

    Examples
    --------
    >>> label_mmse(0.0)
    1.0
    """
    s = as_float("snr", snr, low=0)
    if s == 0.0:
        return 1.0
    root = math.sqrt(s)

    def integrand(z: float) -> float:
        return math.tanh(root * (root + z)) ** 2 * math.exp(-z * z / 2) / math.sqrt(2 * math.pi)

    # y = +1 and y = -1 give the same integral (tanh^2 is even); split at the mode for accuracy
    lower, _ = integrate.quad(integrand, -math.inf, -root, epsabs=1e-14, epsrel=1e-12, limit=200)
    upper, _ = integrate.quad(integrand, -root, math.inf, epsabs=1e-14, epsrel=1e-12, limit=200)
    return 1.0 - (lower + upper)


def bayes_feature_limit(c: Any, snr: Any) -> float:
    """``E(0)`` of ``p = c n`` features that hold the Bayes predictor and give every token leverage ``c``.

    ``(1 - c) label_mmse(snr)`` for ``c < 1``; 0 for ``c >= 1`` (the features interpolate).

    Parameters
    ----------
    c, snr : float, ``c = p / n > 0`` and ``snr = ||mu||^2 >= 0``, finite.

    Returns
    -------
    float
    """
    cv, s = as_float("c", c, low=0, low_open=True), as_float("snr", snr, low=0)
    return (1.0 - cv) * label_mmse(s) if cv < 1.0 else 0.0


def strong_alignment_margin(c: Any, snr: Any) -> float:
    """Attention minus ridge at ``gamma -> 0`` from the Bayes predictor alone: ``(1 - c)(mmse - 1/(1 + snr))``.

    The ``T1`` part of docs/strong_alignment.md in its limit: ridge's features hold only the linear part of the
    Bayes predictor, leaving ``(1 - c)(1/(1 + snr) - mmse)``; attention's, under strong alignment with an odd
    activation, hold all of it.  Not the whole gap: the leverage part (``T2``, negative for erf and tanh, positive
    for gelu, measured) comes on top.  0 for ``c >= 1``.

    Parameters
    ----------
    c, snr : float, ``c = p / n > 0`` and ``snr = ||mu||^2 >= 0``, finite.

    Returns
    -------
    float
        ``<= 0``.
    """
    cv, s = as_float("c", c, low=0, low_open=True), as_float("snr", snr, low=0)
    return bayes_feature_limit(cv, s) - (1.0 - cv) / (1.0 + s) if cv < 1.0 else 0.0


@dataclass(frozen=True)
class LeverageProfile:
    """The leverage ``h(a)`` of attention's features on quadrature nodes of ``a``, and the ``T2`` part it gives.

    ``t2 = E_a[(1 - h(a)) v(a)] - (1 - c) E_a v(a)`` with ``v(a) = 1 - tanh(sqrt(snr) a)^2``: the label noise left by
    attention minus ridge's (whose leverage is ``c`` everywhere).
    """

    a: np.ndarray = field(repr=False)
    weights: np.ndarray = field(repr=False)
    leverage: np.ndarray = field(repr=False)
    t2: float
    iterations: int
    converged: bool


def check_setting(c: Any, activation: Any, snr: Any, t: Any, *, c_below_one: bool = True,
                  t_positive: bool = False) -> tuple[float, Any, float, float]:
    """``(c, activation, snr, t)`` checked: ``c`` in ``(0, 1)`` (``c > 0`` unless ``c_below_one``), ``activation`` a
    name or a sympy expression, ``snr`` finite and ``>= 0``, ``t`` finite and ``>= 0`` (``> 0`` with ``t_positive``)."""
    cv = (as_float("c", c, low=0, high=1, low_open=True, high_open=True) if c_below_one
          else as_float("c", c, low=0, low_open=True))
    if isinstance(activation, dict):
        raise ArgumentTypeError("activation must be a name or a sympy expression (its function is needed, not only "
                                "its kernel constants)")
    return (cv, check_activation(activation, "activation"), as_float("snr", snr, low=0),
            as_float("t", t, low=0, low_open=t_positive))


def strong_alignment_leverage(c: Any, activation: ActivationLike, snr: Any, t: Any, *, nodes: int = 40,
                              tol: float = 1e-12, maxiter: int = 5000, p: Any = None) -> LeverageProfile:
    """Leverage profile of attention's features under strong alignment at fixed ``t``: the limit, or at ``p``.

    *Derived by the project* (docs/strong_alignment.md, step 5): the leverage is a diagonal entry of the inverse of a
    symmetric linear pencil in the data, the kernel noise and diagonal matrices of ``a``; its limit solves a matrix
    Dyson equation (standard theory for Gaussian matrices with a variance profile, applied at spectral parameter 0:
    assumed, and checked against simulation to 1-3 standard errors).  In the limit the kernel's mean part drops out (its
    effect is ``O(rank / n)``); at finite ``p`` it does not (measured in the docs), and ``p`` puts it in.

    Parameters
    ----------
    c : float, ``p / n`` in ``(0, 1)`` (at ``c >= 1`` the features interpolate and every leverage is 1).
    activation : str or sympy expression, the kernel's ``f`` (not a dict of kernel constants).
    snr, t : float, ``||mu||^2`` and ``||w_K|| ||w_Q|| / sqrt p`` (aligned spikes along ``mu``), finite, ``>= 0``.
    nodes : int, Gauss-Hermite nodes per label (the grid has ``2 nodes`` points), 8 to 200.
    tol, maxiter : convergence of the damped fixed-point iteration (a ``RuntimeWarning`` when not reached).
    p : int, optional
        The dimension: the finite-size equation at ``t + 1/sqrt(p)`` and ``n = round(p / c)`` tokens, with the
        kernel's mean part as a low-rank block (derived by the project; docs/strong_alignment.md, "The kernel's mean
        part at finite p").  ``None``: the limit ``p -> infinity``.

    Returns
    -------
    LeverageProfile

    Examples
    --------
    >>> prof = strong_alignment_leverage(0.5, "erf", 1.0, 1.0, nodes=20)
    >>> round(float(prof.weights @ prof.leverage), 6), round(prof.t2, 3)
    (0.5, -0.036)
    """
    cv, act, s, tv = check_setting(c, activation, snr, t)
    return _leverage_profile(act, cv, s, tv, _solver_options(nodes, tol, maxiter), check_dimension(p))


def _leverage_profile(act: Any, c: float, s: float, t: float, options: DysonOptions,
                      p: int | None) -> LeverageProfile:
    """:func:`strong_alignment_leverage` of checked arguments."""
    sol = solve_leverage(numpy_activation(act), c, s, t, options, p=p)
    if not sol.converged:
        warnings.warn(f"strong_alignment_leverage: no convergence in {options.maxiter} iterations (t={t}, c={c})",
                      RuntimeWarning, stacklevel=3)
    t2 = leverage_part(sol.a, sol.weights, sol.leverage, c, s)
    return LeverageProfile(sol.a, sol.weights, sol.leverage, t2, sol.iterations, sol.converged)


def leverage_part(a: np.ndarray, weights: np.ndarray, leverage: np.ndarray, c: float, snr: float) -> float:
    """``T2 = E[(1 - h(a)) v(a)] - (1 - c) E[v(a)]`` on quadrature nodes: attention's label noise left minus ridge's."""
    v = _label_variance(a, snr)
    return float(weights @ ((1.0 - leverage) * v) - (1.0 - c) * (weights @ v))


def predictor_part(a: np.ndarray, weights: np.ndarray, leverage: np.ndarray, c: float, snr: float,
                   capture: bool) -> float:
    """``T1``: :func:`strong_alignment_margin` with capture, else ``E[g_perp(a)^2 (c - h(a))]`` on quadrature nodes."""
    if capture:
        return strong_alignment_margin(c, snr)
    return float(weights @ (_nonlinear_bayes_part(a, snr) ** 2 * (c - leverage)))


def captures_bayes_predictor(activation: ActivationLike) -> bool:
    """Whether the mean kernel ``E f(xi + m)`` has a nonlinear odd part (``E[f He_k] != 0`` for ``k = 3, 5`` or 7).

    Then, under strong alignment, attention's features span nonlinear odd functions of ``a``, and the ``T1`` part
    of the win is :func:`strong_alignment_margin` in the limit (argued and measured, docs/strong_alignment.md step
    4).  False for ``x Phi(x)``-type gates (gelu, silu), relu and softplus, whose odd part is ``x/2``.

    >>> captures_bayes_predictor("erf"), captures_bayes_predictor("gelu")
    (True, False)
    """
    coefficients = hermite_coefficients(check_activation(activation, "activation"), 7)
    return any(abs(float(coefficients[k])) > 1e-12 for k in (3, 5, 7))


@dataclass(frozen=True)
class StrongAlignmentGap:
    """``E_att(0) - E_RR(0)`` under strong alignment in the limit, as its two parts: ``t1 + t2 = total``."""

    t1: float
    t2: float
    total: float
    leverage: LeverageProfile = field(repr=False)


def strong_alignment_gap(c: Any, activation: ActivationLike, snr: Any, t: Any, *, nodes: int = 40,
                         p: Any = None) -> StrongAlignmentGap:
    """Attention minus ridge as ``gamma -> 0`` under strong alignment at fixed ``t > 0``: the limit, or at ``p``.

    ``t1``: :func:`strong_alignment_margin` when :func:`captures_bayes_predictor`.  Otherwise the features hold only
    the linear part of ``tanh(a)``, as ridge's do, and the nonlinear rest ``g_perp(a)`` is left with weight one minus
    the leverage: ``t1 = E[g_perp(a)^2 (c - h(a))]`` (the same approximation as ``T2``: a function of ``a`` meets
    the projection through its diagonal).  ``t2``: :func:`strong_alignment_leverage`'s.  At finite ``p``
    the capture of ``T1`` is partial while ``sqrt(p) t^3`` is small (measured in the docs: complete from
    ``t = 0.35``), and ``T2`` is given by the finite-size equation (``p``).

    Parameters
    ----------
    c, activation, snr, nodes, p : as :func:`strong_alignment_leverage` (``t1`` is the limit's either way when the
        features capture the Bayes predictor).
    t : float
        ``> 0``.  The limits do not commute: at ``t = 0`` (an order-one spike, paper B's scaling) attention's features
        do not even hold ``a`` cleanly and the structured theory's gap is positive (+0.0143 at ``c = 1/2``,
        ``snr = 1``, ``AttentionModel.error``), while any fixed ``t > 0`` puts a copy of a function of ``a`` of size
        ``sqrt(p) t`` into the features.

    Returns
    -------
    StrongAlignmentGap

    Examples
    --------
    >>> gap = strong_alignment_gap(0.5, "erf", 1.0, 2.0, nodes=20)
    >>> round(gap.t1, 4), round(gap.t2, 3), round(gap.total, 3)
    (-0.0252, -0.068, -0.093)
    """
    cv, act, s, tv = check_setting(c, activation, snr, t, t_positive=True)
    prof = _leverage_profile(act, cv, s, tv, _solver_options(nodes, 1e-12, 5000), check_dimension(p))
    t1 = predictor_part(prof.a, prof.weights, prof.leverage, cv, s, captures_bayes_predictor(act))
    return StrongAlignmentGap(t1, prof.t2, t1 + prof.t2, prof)


def _solver_options(nodes: Any, tol: Any, maxiter: Any) -> DysonOptions:
    """The Dyson solver's quadrature nodes, tolerance and iteration cap, checked."""
    return DysonOptions(as_int("nodes", nodes, 8, 200), as_float("tol", tol, low=0, low_open=True),
                        as_int("maxiter", maxiter, 1, 10**6))


def check_dimension(p: Any) -> int | None:
    """``p`` of the finite-size equation: ``None`` (the limit) or an integer ``>= 2``."""
    return None if p is None else as_int("p", p, 2, 2**31 - 1)


def _label_variance(a: np.ndarray, snr: float) -> np.ndarray:
    """``v(a) = Var(y | a) = 1 - tanh(sqrt(snr) a)^2``."""
    return 1.0 - np.tanh(np.sqrt(snr) * a) ** 2


def _nonlinear_bayes_part(a: np.ndarray, snr: float) -> np.ndarray:
    """``tanh(sqrt(snr) a)`` minus its best linear predictor ``beta a``: ``beta = E[a y] / E a^2 = sqrt(snr)/(1 + snr)``
    (``E[a tanh(sqrt(snr) a)] = E[a y]`` because ``tanh(sqrt(snr) a) = E[y | a]``)."""
    root = np.sqrt(snr)
    return np.tanh(root * a) - root / (1.0 + snr) * a


def strong_spike_attention_error(gamma: Any, c: Any, activation: ActivationLike, snr: Any, t: Any, *,
                                 nodes: int = 40, tol: float = 1e-12, maxiter: int = 5000, p: Any = None) -> Any:
    """Attention's interpolation error under strong alignment at fixed ``t > 0``, any ``gamma``: the limit, or at ``p``.

    *Derived by the project* (docs/strong_alignment.md, "At gamma > 0"): with ``R = gamma Q`` (``n x n``) and labels
    independent given the data, ``E(gamma) = (g^T R^2 g + sum_i v(a_i) (R^2)_ii) / n``.  The Bayes predictor
    ``g = tanh(sqrt(snr) a)`` (when :func:`captures_bayes_predictor`; else its linear part) lies in directions of the
    features whose eigenvalues grow without bound, where ``R`` vanishes; the rest enters through the diagonal of
    ``R^2 = R - gamma dR/dgamma``, whose profile in ``a`` solves the leverage equation of
    :func:`strong_alignment_leverage` with ``-gamma/c`` in the pencil's feature block.  So

        ``E = E_a[w(a) (R(a) - gamma R'(a))]``, ``w = v`` (or ``v + g_perp^2`` without capture),

    with ``gamma R'`` by a central difference.  At ``gamma = 0`` and ``c < 1`` it is ``E[w (1 - h)]``
    (:func:`strong_alignment_gap` plus ridge's ``(1 - c)/(1 + snr)``).  As ``t -> 0+`` it tends to ``mmse`` times the
    null-model error (:meth:`theory.AttentionModel.error` at ``snr = 0``; ``1/(1 + snr)`` times it without capture):
    not paper B's structured equivalent, whose spike is of order one (the limits do not commute).  Checked against
    paired Monte Carlo (same section of the docs).

    Parameters
    ----------
    gamma : float or array, ridge parameter(s), finite, ``>= 0``; ``> 0`` when ``c >= 1``.
    c, activation, snr, t, nodes, tol, maxiter, p
        As :func:`strong_alignment_leverage`, but any finite ``c > 0`` and ``t > 0`` (a ``RuntimeWarning`` when the
        iteration does not converge).

    Returns
    -------
    float or ndarray
        The shape of ``gamma``.

    Examples
    --------
    >>> round(strong_spike_attention_error(0.0, 0.5, "erf", 1.0, 1.0, nodes=20) - 0.25, 3)
    -0.062
    >>> round(float(strong_spike_attention_error(0.1, 2.0, "erf", 1.0, 1.0, nodes=20)), 3)
    0.14
    """
    return expectation_over_gammas(gamma, c, activation, snr, t, (nodes, tol, maxiter),
                                   lambda a, s, capture, r, r2: residual_weight(a, s, capture) * r2, p=p)


def expectation_over_gammas(gamma: Any, c: Any, activation: Any, snr: Any, t: Any, options: tuple,
                            integrand: Any, p: Any = None) -> Any:
    """``E_a[integrand(a, snr, capture, R(a), diag(R^2)(a))]`` at each ``gamma``, with the validation of
    :func:`strong_spike_attention_error` (``options``: nodes, tol, maxiter; ``p``: the finite-size equation); the
    shape of ``gamma``."""
    gammas = as_array("gamma", gamma, low=0)
    cv, act, s, tv = check_setting(c, activation, snr, t, c_below_one=False, t_positive=True)
    checked = _solver_options(*options)
    size = check_dimension(p)
    require_ridge_term(gammas, cv)
    f = numpy_activation(act)
    capture = captures_bayes_predictor(act)
    out = np.empty(gammas.shape)
    for idx, g in np.ndenumerate(gammas):
        a, w, r, r2 = resolvent_diagonals(f, cv, s, tv, float(g), checked, p=size)
        out[idx] = float(w @ integrand(a, s, capture, r, r2))
    return float(out) if out.ndim == 0 else out


def require_ridge_term(gammas: np.ndarray, c: float) -> None:
    """Refuse ``gamma = 0`` when ``c >= 1``: the features interpolate and the limit ``gamma -> 0`` is 0."""
    if c >= 1.0 and np.any(gammas == 0.0):
        raise ValueError(f"gamma must be > 0 when c >= 1 (the features interpolate: E(0) = 0), got c={c}")


def residual_weight(a: np.ndarray, snr: float, capture: bool) -> np.ndarray:
    """What each token's residual carries besides the captured Bayes predictor: ``v(a)``, plus ``g_perp(a)^2`` when
    the features do not capture the Bayes predictor (the nonlinear rest, met through the diagonal like noise)."""
    return _label_variance(a, snr) + (0.0 if capture else _nonlinear_bayes_part(a, snr) ** 2)


def resolvent_diagonals(f: Any, c: float, snr: float, t: float, gamma: float, options: DysonOptions,
                        p: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Nodes, weights, ``R(a)`` and ``diag(R^2)(a) = R(a) - gamma R'(a)``, ``R = gamma Q`` (both ``1 - h`` at ``gamma =
    0``); ``1 - R(a)`` is the smoother's diagonal, the leverage at ``gamma``.

    ``R`` solves the leverage equation with ``-gamma/c`` in the feature block; ``gamma R'``: central difference in ``log
    gamma`` (step 1e-3).
    """

    def diagonal(delta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        sol = solve_leverage(f, c, snr, t, options, delta, p=p)
        if not sol.converged:
            warnings.warn(f"strong alignment resolvent: no convergence in {options.maxiter} iterations (t={t}, c={c}, "
                          f"gamma={c * delta})", RuntimeWarning, stacklevel=5)
        return sol.a, sol.weights, 1.0 - sol.leverage

    delta, step = gamma / c, 1e-3
    a, w, r = diagonal(delta)
    r2 = r
    if gamma > 0:
        r2 = r - (diagonal(delta * (1 + step))[2] - diagonal(delta * (1 - step))[2]) / (2 * step)
    return a, w, r, r2
