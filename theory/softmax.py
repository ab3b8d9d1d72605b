"""Softmax attention on paper B's data model: the prediction of paper B's entrywise theory.

*Derived by the project* (paper B, Remark 5, argues the difference between softmax and an entrywise ``f`` "is not
important"); the derivation, step by step, with the simulations that check each step, is ``docs/softmax.md``.
Softmax over the keys with the self score masked, ``K_ij = exp(beta S_ij) [i != j] / D_j``, features ``Phi = X K``
(:mod:`numerics.softmax`):

* Step 1: the normalisers concentrate, ``D_j = (n - 1) exp(beta^2 / 2) (1 + eps_j)``
  (:func:`softmax_normaliser_spread`);
* Step 2: ``K ~ (1 / (n - 1)) (1 1^T - I + F)``, ``F = f_beta(S)`` off the diagonal with
  ``f_beta(x) = exp(beta x - beta^2 / 2) - 1``: ``a_k = beta^k / sqrt(k!)``, ``nu = exp(beta^2) - 1`` (in closed
  form in :func:`softmax_attention_error`; :func:`theory.hermite_moments` of :func:`softmax_activation` gives the
  same by quadrature);
* Step 3: ``K = s (K_B + (1 1^T - I) / sqrt p)``, ``s = sqrt(p) / (n - 1)``: softmax at ``gamma s^2`` is paper B's
  kernel at ``gamma`` (:func:`softmax_gamma_scale`);
* Step 4: the rank-one mean term moves ``E`` by ``O(1/n)``; it leaves the diagonal ``d0 = -1 / sqrt p``
  (:func:`softmax_attention_error` with ``p``).

Prediction: :func:`softmax_attention_error`, paper B's error of the kernel ``f_beta`` (diagonal removed) with
``a1 = beta``, ``s_f^2 = exp(beta^2) - 1 - beta^2``.  Finite-size corrections grow like ``exp(beta^2)`` (measured
in claim B8).  With the diagonal kept the self score dominates (:func:`softmax_self_weight`): ``K -> I``, ridge.
"""

from __future__ import annotations

import math
from typing import Any

import sympy as sp

from .validation import as_float, check_size
from .symbols import x

__all__ = ["BETA_MAX", "softmax_activation", "softmax_gamma_scale", "softmax_attention_error",
           "softmax_normaliser_spread", "softmax_self_weight"]

#: largest inverse temperature: ``nu = exp(beta^2) - 1`` stays below the kernel-constant bound 1e12 of the solvers
BETA_MAX = 5.0


def _check_beta(beta: Any) -> float:
    """``beta`` as a float in ``(0, BETA_MAX]`` (``beta = 0`` is uniform attention: ``f = 0``, no kernel left)."""
    return as_float("beta", beta, low=0, low_open=True, high=BETA_MAX)


def _check_sizes(n: Any, p: Any) -> tuple[int, int]:
    """``(n, p)``: ``n >= 2`` tokens (a query needs another key) and ``p >= 1``, both within the size limits."""
    return check_size("n", n, 2, "max_dimension"), check_size("p", p, 1, "max_dimension")


def softmax_activation(beta: float) -> sp.Expr:
    """The entrywise function softmax acts like: ``f_beta(x) = exp(beta x - beta^2 / 2) - 1`` (sympy, in ``x``).

    Parameters
    ----------
    beta : inverse temperature, a float in ``(0, BETA_MAX]``.

    Examples
    --------
    >>> from theory.symbols import x
    >>> round(float(softmax_activation(0.5).subs(x, 1.0)), 6)  # exp(0.5 - 0.125) - 1
    0.454991
    """
    b = sp.Float(_check_beta(beta))
    return sp.exp(b * x - b**2 / 2) - 1


def softmax_gamma_scale(n: int, p: int) -> float:
    """``s^2 = p / (n - 1)^2``: softmax's ridge parameter for paper B's ``gamma`` is ``gamma s^2`` (Step 3).

    The masked softmax averages each query over ``n - 1`` keys (weight ``~ 1/(n - 1)``) where paper B's kernel
    has ``1 / sqrt p``; ``s = sqrt(p) / (n - 1)``.

    Examples
    --------
    >>> softmax_gamma_scale(257, 128)
    0.001953125
    """
    n, p = _check_sizes(n, p)
    return p / (n - 1) ** 2


def softmax_attention_error(
    gamma: Any,
    c: float,
    beta: float,
    snr: float = 0.0,
    spike: tuple[float, str] | None = None,
    p: int | None = None,
    **solver_options: Any,
) -> Any:
    """Softmax attention's interpolation error predicted by paper B's theory, ``gamma`` in paper B's units.

    The module docstring's prediction: the structured equivalent (:meth:`theory.AttentionModel.solve`) with
    ``a1 = beta``, ``sf2 = exp(beta^2) - 1 - beta^2`` and ``d0`` (exactly the null system of
    :meth:`theory.AttentionModel.error` when ``snr = 0`` and no spike); softmax's own ridge parameter is
    ``gamma * softmax_gamma_scale(n, p)``.

    Parameters
    ----------
    gamma : float or array in ``[1e-30, 1e30]``.
    c : ``p / n`` in ``[1e-4, 1e4]``.
    beta : inverse temperature in ``(0, BETA_MAX]``.
    snr : ``||mu||^2`` in ``[0, 1e8]``.
    spike : ``(strength, "aligned" | "orthogonal")``, optional: ``W = I + strength u u^T`` (see
        :func:`theory.structured.spike_vectors`).
    p : int, optional
        ``None``: the limit (``d0 = 0``).  A dimension: the same deterministic equivalent with the diagonal
        ``d0 = -1 / sqrt p`` that the masked mean term ``(1 1^T - I) / sqrt p`` leaves (Step 4), the finite-``p``
        prediction.
    **solver_options : as :meth:`theory.AttentionModel.solve` (``system``, ``method``, ``n_nodes``, ...;
        ``check_quadrature`` defaults to ``False``).

    Returns
    -------
    float (scalar ``gamma``) or ndarray

    Examples
    --------
    >>> round(softmax_attention_error(0.1, 2.0, 0.5), 4)
    0.3693
    >>> round(softmax_attention_error(0.1, 2.0, 0.5, p=1024), 4)
    0.3528
    """
    from .settings import AttentionModel
    from .structured import _structured_error

    b = _check_beta(beta)
    d0 = 0.0 if p is None else -1.0 / math.sqrt(check_size("p", p, 1, "max_dimension"))
    nu = math.expm1(b * b)  # f_beta's Hermite data in closed form: a1 = beta, nu = exp(beta^2) - 1 (Step 2)
    model = AttentionModel(c, {"a1": b, "sf2": max(nu - b * b, 0.0), "d0": d0}, snr, spike=spike, diagonal="removed")
    return _structured_error(gamma, *model._arguments(), **model._options("softmax_attention_error", solver_options))


def softmax_normaliser_spread(beta: float, n: int, p: int) -> float:
    """Predicted relative standard deviation of the normalisers ``D_j`` (Step 1): ``sqrt(nu/(n-1) + beta^4/(2p))``.

    ``nu / (n - 1)``: the average of ``n - 1`` scores' ``f_beta`` (variance ``nu = exp(beta^2) - 1``);
    ``beta^4 / (2 p)``: the query's norm, ``D_j ~ exp(beta^2 ||x_j||^2 / (2 p))`` with ``Var ||x_j||^2 / p = 2 / p``.
    The finite-size corrections of the prediction are ``O`` of its square.

    Examples
    --------
    >>> round(softmax_normaliser_spread(1.0, 257, 128), 4)
    0.103
    """
    b = _check_beta(beta)
    n, p = _check_sizes(n, p)
    return math.sqrt(math.expm1(b * b) / (n - 1) + b**4 / (2 * p))


def softmax_self_weight(beta: float, n: int, p: int) -> float:
    """Typical self weight of softmax with the diagonal KEPT: ``1 / (1 + (n - 1) exp(beta^2/2 - beta sqrt p))``.

    The self score ``||x_j||^2 / sqrt p ~ sqrt p`` (``W = I``, ``snr = 0``) against ``n - 1`` scores of typical
    weight ``exp(beta^2 / 2)``: the extreme-token effect.  It tends to one as ``p`` grows for every ``beta > 0``
    (then ``K -> I`` and ``Phi -> X``: ridge); the self score fluctuates by ``beta sqrt 2`` from token to token, so
    at intermediate sizes the weight is log-normally spread around this value.

    Examples
    --------
    >>> round(softmax_self_weight(1.0, 256, 128), 3)
    0.995
    """
    b = _check_beta(beta)
    n, p = _check_sizes(n, p)
    t = 0.5 * b * b - b * math.sqrt(p) + math.log(n - 1)
    return 1.0 / (1.0 + math.exp(t)) if t < 700 else 0.0
