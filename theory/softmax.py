"""Softmax attention on paper B's data model: the prediction of paper B's entrywise theory.

*Derived by the project* (paper B, Remark 5, argues the difference between softmax and an entrywise ``f`` "is not
important"; the derivation below is this project's; step by step, with the simulations that check each step, in
``docs/softmax.md``).  Summary:

Model.  ``X = mu y^T + Z`` (``p x n``, ``p/n = c``), scores ``S = X^T W X / sqrt p``, softmax over the keys with
the self score masked, ``K_ij = exp(beta S_ij) [i != j] / D_j``, ``D_j = sum_{k != j} exp(beta S_kj)``,
features ``Phi = X K`` (:mod:`numerics.softmax`).

Step 1 (the normalisers concentrate).  Given the query ``x_j``, the other scores are independent with
``S_ij ~ N(y_i mu^T W x_j / sqrt p, ||W x_j||^2 / p)``, ``||W x_j||^2 / p = 1 + O(p^{-1/2})``, so
``D_j = (n - 1) exp(beta^2 / 2) (1 + eps_j)`` with ``eps_j = O(sqrt(nu / n) + beta^2 / sqrt(2 p))``
(:func:`softmax_normaliser_spread`).

Step 2 (the entrywise exponential).  Hence ``K = (1 / (n - 1)) (exp(beta S - beta^2/2))_{i != j} (1 + O(eps))``
and ``exp(beta x - beta^2/2) = 1 + f_beta(x)``,

    ``f_beta(x) = exp(beta x - beta^2 / 2) - 1 = sum_{k >= 1} beta^k He_k(x) / k!``

(the generating function of the Hermite polynomials): ``f_beta`` is centred under ``N(0, 1)``, its normalised
Hermite coefficients are ``a_k = beta^k / sqrt(k!)``, so ``a1 = beta`` and ``nu = E f_beta^2 = exp(beta^2) - 1``
(:func:`softmax_hermite_moments`).  So ``K ~ (1 / (n - 1)) (1 1^T - I + F)``, ``F = f_beta(S)`` off the diagonal.

Step 3 (the scale).  Paper B's kernel of ``f_beta`` is ``K_B = F / sqrt p``; hence
``K = s (K_B + (1 1^T - I) / sqrt p)`` with ``s = sqrt(p) / (n - 1)``, and ``Phi = s Phi'`` with ``Phi' = X K_B +
u 1^T - X / sqrt p``, ``u = X 1 / sqrt p``.  Since ``E(gamma; s Phi') = E(gamma / s^2; Phi')`` exactly, softmax's
error at ``gamma`` is the rescaled features' error at ``gamma / s^2``: a ridge parameter ``gamma`` of paper B's
kernel corresponds to ``gamma s^2 = gamma p / (n - 1)^2`` for softmax (:func:`softmax_gamma_scale`; it tends to
zero like ``c / n``: softmax's ``1/n`` against the kernel's ``1/sqrt p``).

Step 4 (the rank-one mean term).  ``u 1^T`` is rank one in token space with ``||u||^2 ~ n``: by the Woodbury
identity for ``Phi'^T Phi' / n = Phi_B^T Phi_B / n + [1, v] [[||u||^2, 1], [1, 0]] [1, v]^T / n``
(``v = Phi_B^T u``), as ``||u||^2 -> oo`` it acts as a free intercept: ``y^T Q y / n`` loses
``(1^T Q_B y)^2 / (n 1^T Q_B 1)``, and ``E`` loses ``(1^T r / n)^2`` (``r = gamma Q_B y``, the residual).  The law of
the null features is invariant under orthogonal maps of token space, the signal's part of ``Q_B`` is finite rank
in the directions of ``y`` and of Gaussian vectors independent of ``1``, and ``1^T y / n -> 0`` (balanced labels: exactly
0; i.i.d. labels: ``O(n^{-1/2})``), so ``1^T r / n = O(n^{-1/2})`` and the mean term moves ``E`` by ``O(1/n)``.  The
``-X / sqrt p`` term is a diagonal constant ``d0 = -1 / sqrt p -> 0``.

Prediction.  Softmax attention's error at ``gamma * softmax_gamma_scale(n, p)`` equals, in the limit, paper B's
error of the kernel ``f_beta`` at ``gamma`` (diagonal removed): :func:`softmax_attention_error`, the null system
(:meth:`theory.AttentionModel.error`) or, with signal or spikes, the project's structured equivalent
(:meth:`theory.AttentionModel.solve`, the finite-rank machinery) fed with ``a1 = beta``,
``s_f^2 = exp(beta^2) - 1 - beta^2``, ``d0 = 0``.  Finite-size corrections: ``O(1/n)`` from the mean term and from
``E eps^2`` (:func:`softmax_normaliser_spread`), ``O(p^{-1/2})`` from ``d0``; they grow like ``exp(beta^2)``:
where ``beta`` is large the normalisers stop concentrating at a given ``n`` (measured in claim B8).

Diagonal kept: the self score ``||W^{1/2} x_j||^2 / sqrt p ~ sqrt p`` dominates (:func:`softmax_self_weight`):
``K -> I`` and the error tends to ridge's, not to paper B's (the extreme-token effect).
"""

from __future__ import annotations

import math
from typing import Any

import sympy as sp

from .validation import as_float, check_size
from .activations import HermiteMoments
from .symbols import x

__all__ = ["BETA_MAX", "softmax_activation", "softmax_hermite_moments", "softmax_kernel_constants",
           "softmax_gamma_scale", "softmax_diagonal_shift", "softmax_attention_error", "softmax_normaliser_spread",
           "softmax_self_weight"]

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


def softmax_hermite_moments(beta: float) -> HermiteMoments:
    """Hermite data of ``f_beta`` in closed form: ``a_k = beta^k / sqrt(k!)``, ``nu = exp(beta^2) - 1``.

    ``a0 = 0`` (``E exp(beta xi - beta^2/2) = 1``), ``a1 = beta``, ``a2 = beta^2 / sqrt 2``,
    ``sf2 = nu - beta^2`` (what :func:`theory.hermite_moments` of :func:`softmax_activation` gives by quadrature).

    Examples
    --------
    >>> m = softmax_hermite_moments(1.0)
    >>> m.a1, round(m.nu, 6), round(m.sf2, 6)
    (1.0, 1.718282, 0.718282)
    """
    b = _check_beta(beta)
    nu = math.expm1(b * b)
    return HermiteMoments(a0=0.0, a1=b, a2=b * b / math.sqrt(2.0), nu=nu, sf2=max(nu - b * b, 0.0))


def softmax_kernel_constants(beta: float) -> dict[str, float]:
    """The constants ``{"a1", "sf2", "d0"}`` of paper B's kernel of ``f_beta`` (diagonal removed: ``d0 = 0``), in
    the form :class:`theory.AttentionModel` takes an activation."""
    m = softmax_hermite_moments(beta)
    return {"a1": m.a1, "sf2": m.sf2, "d0": 0.0}


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


def softmax_diagonal_shift(p: int) -> float:
    """``d0 = -1 / sqrt p``: the diagonal that the masked mean term ``(1 1^T - I) / sqrt p`` leaves (Step 4).

    It vanishes in the limit; at finite ``p`` it is the derived ``O(p^{-1/2})`` term of the prediction
    (:func:`softmax_attention_error` with ``p``).

    Examples
    --------
    >>> softmax_diagonal_shift(256)
    -0.0625
    """
    return -1.0 / math.sqrt(check_size("p", p, 1, "max_dimension"))


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

    Paper B's error of the kernel ``f_beta`` (diagonal removed): the structured equivalent
    (:meth:`theory.AttentionModel.solve`) with the constants :func:`softmax_kernel_constants` (the null system of
    :meth:`theory.AttentionModel.error` when ``snr = 0`` and no spike, exactly).  Softmax's own ridge parameter is
    ``gamma * softmax_gamma_scale(n, p)`` (module docstring).

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
        ``d0 = -1 / sqrt p`` of the masked mean term (:func:`softmax_diagonal_shift`), the finite-``p`` prediction.
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

    consts = softmax_kernel_constants(beta)
    if p is not None:
        consts["d0"] = softmax_diagonal_shift(p)
    model = AttentionModel(c, consts, snr, spike=spike, diagonal="removed")
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
