"""Prediction risk on fresh labels under strong alignment, and the leverage profile by bins of ``|a|``.

*Derived by the project* (docs/strong_alignment.md, "Prediction risk").  Both fits are linear smoothers
``yhat = S y`` with ``S = I - R`` (``R = gamma Q``) that depend on the tokens only, and the labels are independent
given the tokens, with means ``g_i = tanh(sqrt(snr) a_i)`` and variances ``v_i = 1 - g_i^2``.  Fresh labels ``y'`` at
the same tokens (fixed-design prediction risk, label noise included) give, exactly at every size,

    ``E||y' - S y||^2 / n = E(gamma) + (2/n) sum_i v_i S_ii``

(the training residual plus twice the label noise that each token's own fit absorbs: Mallows' ``C_p`` with a
variance per token).  So the leverage part ``T2`` of the training gap (:func:`theory.strong_alignment_gap`) enters the
risk gap with the opposite sign: as ``gamma -> 0`` with ``c < 1``, ``R_att - R_RR = T1 - T2``.

* :func:`ridge_prediction_risk`: ``E_RR(gamma) + 2 mmse (1 - gamma delta(gamma))`` (ridge's leverage is uniform,
  ``tr S / n -> 1 - gamma delta``, ``delta`` of Marchenko–Pastur);
* :func:`strong_spike_prediction_risk`: attention's, ``E_att(gamma) + 2 E_a[v(a) (1 - R(a))]`` with ``R(a)`` from
  the leverage equation (:func:`theory.strong_spike_attention_error`);
* :func:`label_coordinate_bins` and :func:`binned_leverage`: equal-probability bins of
  ``|a|`` and the theory's mean leverage ``h(a)`` in each (the leverage equation solved on nodes inside the bins),
  with the training gap's parts from the same solve.

>>> round(float(ridge_prediction_risk(0.0, 0.5, 1.0)), 4)
0.6996
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special

from ._leverage_dyson import COORDINATE_REACH, binned_coordinate_nodes, solve_leverage
from .validation import as_array, as_float, as_int, finite_result
from .activations import ActivationLike, numpy_activation
from .marchenko_pastur import _delta
from .ridge import _error_values
from .strong_alignment import (_label_variance, _solver_options, captures_bayes_predictor, check_dimension,
                               check_setting, expectation_over_gammas, label_mmse, leverage_part, predictor_part,
                               require_ridge_term, residual_weight)

__all__ = ["ridge_prediction_risk", "strong_spike_prediction_risk", "label_coordinate_bins",
           "binned_leverage"]


def ridge_prediction_risk(gamma: Any, c: Any, snr: Any) -> Any:
    """Ridge's fixed-design prediction risk on fresh labels at the training tokens, label noise included.

    ``E_RR(gamma) + 2 mmse (1 - gamma delta(gamma))``: ridge's training error (:func:`theory.ridge_error_values`)
    plus twice the label noise its fit absorbs; every token has the same leverage ``1 - gamma delta`` in the limit
    (the signal is of rank one).  At ``gamma = 0`` and ``c < 1``: ``(1 - c)/(1 + snr) + 2 c mmse``.

    Parameters
    ----------
    gamma : float or array, finite, ``>= 0``; ``> 0`` when ``c >= 1``.
    c, snr : float, ``c = p / n > 0`` and ``snr = ||mu||^2 >= 0``, finite.

    Returns
    -------
    float or ndarray
        The shape of ``gamma``.

    Examples
    --------
    >>> round(float(ridge_prediction_risk(1.0, 2.0, 1.0)), 4)
    0.6613
    """
    gammas = as_array("gamma", gamma, low=0)
    cv = as_float("c", c, low=0, low_open=True)
    s = as_float("snr", snr, low=0)
    require_ridge_term(gammas, cv)
    positive = np.where(gammas == 0.0, 1.0, gammas)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow (gamma ~ 0, c < 1) is refused just below
        leverage = np.where(gammas == 0.0, cv, 1.0 - positive * _delta(positive, cv))
        out = _error_values(gammas, cv, s) + 2.0 * label_mmse(s) * leverage
    out = finite_result("ridge_prediction_risk", out, gamma=gamma, c=c, snr=snr)
    return float(out) if out.ndim == 0 else out


def strong_spike_prediction_risk(gamma: Any, c: Any, activation: ActivationLike, snr: Any, t: Any, *,
                                 nodes: int = 40, tol: float = 1e-12, maxiter: int = 5000, p: Any = None) -> Any:
    """Attention's fixed-design prediction risk on fresh labels under strong alignment, label noise included.

    ``E_att(gamma) + 2 E_a[v(a) h_gamma(a)]``, with ``E_att`` of :func:`theory.strong_spike_attention_error` and the
    leverage ``h_gamma = 1 - R(a)`` from the same leverage equation (module docstring).  At ``gamma = 0`` and
    ``c < 1`` it is ``E[w (1 - h)] + 2 E[v h]``; minus :func:`ridge_prediction_risk` it is ``T1 - T2`` of
    :func:`theory.strong_alignment_gap`.

    Parameters
    ----------
    gamma, c, activation, snr, t, nodes, tol, maxiter, p
        As :func:`theory.strong_spike_attention_error` (the same validation).

    Returns
    -------
    float or ndarray
        The shape of ``gamma``.

    Examples
    --------
    >>> risk = strong_spike_prediction_risk(0.0, 0.5, "erf", 1.0, 2.0, nodes=20)
    >>> round(risk - float(ridge_prediction_risk(0.0, 0.5, 1.0)), 3)
    0.043
    """
    return expectation_over_gammas(
        gamma, c, activation, snr, t, (nodes, tol, maxiter),
        lambda a, s, capture, r, r2: residual_weight(a, s, capture) * r2 + 2.0 * _label_variance(a, s) * (1.0 - r),
        p=p)


def _abs_coordinate_cdf(u: np.ndarray, snr: float) -> np.ndarray:
    """``P(|a| <= u)`` for ``a = sqrt(snr) y + z``."""
    root = math.sqrt(snr)
    return 0.5 * (special.erf((u - root) / math.sqrt(2)) + special.erf((u + root) / math.sqrt(2)))


def label_coordinate_bins(snr: Any, n_bins: Any) -> np.ndarray:
    """Edges ``0 = e_0 < ... < e_B`` of ``B`` bins of ``|a|`` of equal probability, ``a = sqrt(snr) y + z``.

    The last edge is ``sqrt(snr) + 40``, beyond which ``|a|`` has probability below ``1e-300`` (finite, so that
    the edges are plain numbers).

    Parameters
    ----------
    snr : float, finite, ``>= 0``.
    n_bins : int, 1 to 50.

    Returns
    -------
    ndarray (n_bins + 1,)

    Examples
    --------
    >>> np.round(label_coordinate_bins(0.0, 2), 4)
    array([ 0.    ,  0.6745, 40.    ])
    """
    s = as_float("snr", snr, low=0)
    k = as_int("n_bins", n_bins, 1, 50)
    inner = [optimize.brentq(lambda u, q=q: float(_abs_coordinate_cdf(np.asarray(u), s)) - q, 0.0,
                             math.sqrt(s) + 40.0, xtol=1e-13) for q in np.arange(1, k) / k]
    return np.array([0.0, *inner, math.sqrt(s) + 40.0])


@dataclass(frozen=True)
class BinnedLeverage:
    """One solve of the leverage equation on a grid inside bins of ``|a|``: the bin means, ``T2`` and ``T1``."""

    bin_means: np.ndarray = field(repr=False)
    t1: float
    t2: float
    converged: bool


def binned_leverage(edges: Any, c: Any, activation: ActivationLike, snr: Any, t: Any, *, per_bin: int = 10,
                    tol: float = 1e-12, maxiter: int = 5000, p: Any = None) -> BinnedLeverage:
    """The theory's mean leverage ``E[h(a) | e_k <= |a| < e_(k+1)]`` in each bin of ``|a|`` (``gamma -> 0``,
    ``c < 1``), with the parts of the training gap from the same solve (``t1``, ``t2`` as
    :func:`theory.strong_alignment_gap`): one Dyson solve for everything a check judges at one ``t``.

    The leverage equation of :func:`theory.strong_alignment_leverage` solved on nodes inside the bins (the last bin cut
    at ``sqrt(snr) + 9``), so each bin's mean is a quadrature of its own nodes.

    Parameters
    ----------
    edges : array (B + 1,)
        Increasing from ``edges[0] = 0`` (:func:`label_coordinate_bins`); the inner edges below ``sqrt(snr) + 9``, the
        last at or beyond it (``inf`` allowed): the bins cover ``|a|``.
    c, activation, snr, t, tol, maxiter, p
        As :func:`theory.strong_alignment_leverage` (``p``: the finite-size equation; ``t > 0``).
    per_bin : int, nodes per bin and sign, 4 to 40.

    Returns
    -------
    BinnedLeverage
        ``bin_means`` (B,), ``t1``, ``t2``, ``converged``.

    Examples
    --------
    >>> e = label_coordinate_bins(1.0, 4)
    >>> h = binned_leverage(e, 0.5, "erf", 1.0, 1.0, per_bin=6).bin_means
    >>> bool(h[0] > h[-1]), round(float(h.mean()), 3)
    (True, 0.5)
    """
    cv, act, s, tv = check_setting(c, activation, snr, t, t_positive=True)
    e = _check_edges(edges, s)
    k = as_int("per_bin", per_bin, 4, 40)
    options = _solver_options(8, tol, maxiter)  # its nodes unused: the grid is given
    a, w, which = binned_coordinate_nodes(s, e, k)
    sol = solve_leverage(numpy_activation(act), cv, s, tv, options, grid=(a, w), p=check_dimension(p))
    if not sol.converged:
        warnings.warn(f"binned_leverage: no convergence in {options.maxiter} iterations (t={tv}, c={cv})",
                      RuntimeWarning, stacklevel=2)
    h = sol.leverage
    means = np.array([w[which == b] @ h[which == b] / w[which == b].sum() for b in range(e.size - 1)])
    t1 = predictor_part(a, w, h, cv, s, captures_bayes_predictor(act))
    return BinnedLeverage(means, t1, leverage_part(a, w, h, cv, s), sol.converged)


def _check_edges(edges: Any, snr: float) -> np.ndarray:
    """Edges of bins that cover ``|a|`` from 0 to the quadrature's end: ``e_0 = 0``, increasing, inner edges below
    ``sqrt(snr) + COORDINATE_REACH`` and the last at or beyond it (``inf`` allowed)."""
    message = (f"edges must be an increasing 1-d array from 0, its inner edges below sqrt(snr) + "
               f"{COORDINATE_REACH:g} and its last at or beyond that (or inf), got {edges!r}")
    try:
        e = np.asarray(edges, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(message) from None
    end = math.sqrt(snr) + COORDINATE_REACH
    if (e.ndim != 1 or e.size < 2 or np.any(np.isnan(e)) or e[0] != 0 or not np.all(e[1:] > e[:-1])
            or np.any(e[1:-1] >= end) or e[-1] < end):
        raise ValueError(message)
    return e
