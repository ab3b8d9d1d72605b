"""Implicit derivatives of the null system of paper B's attention: Taylor coefficients in ``gamma``.

The null system (:mod:`theory.null_system`) is a fixed point ``x = I(x, z)``, ``x = (delta, delta~, kappa)``,
``z = -gamma``, with ``I`` the integrals of the integrands ``g1, g2, g3`` of :func:`theory.null_system_equations`
against ``mu_G``.  Along the solution ``x(gamma)`` write ``gamma = gamma0 + s`` and
``x(gamma0 + s) = sum_k x_k s^k`` (``x_k = x^(k)(gamma0) / k!``).  Differentiating the fixed point ``k`` times
(the implicit-function theorem, order by order)::

    (Id - d_x I) x_k = b_k,      b_k = [s^k] I(x_0 + x_1 s + ... + x_{k-1} s^{k-1}, -gamma0 - s),

where ``d_x I`` is the Jacobian at the solution: ``x_k`` enters ``[s^k] I`` only through the linear term
``d_x I x_k``, so ``b_k`` (everything else) is the coefficient of the integrals with ``x_k`` set to 0.  Order 1 is
the derivative the solver already returns (:class:`theory.NullSolution`, ``d/dgamma = -d/dz``); orders ``k >= 2``
evaluate the integrands on truncated Taylor series (``theory._jets``) at the nodes of the Gauss-Jacobi rule of
``mu_G`` (``theory.null_system._gram_law_quadrature``), refined (nodes doubled) until two successive rules agree to
``rtol``; the last difference is reported as the quadrature error.

``x_0`` and ``x_1`` come from :func:`theory.solve_null_system_full` unchanged (``method="exact"``: partial
fractions), so :meth:`theory.AttentionModel.error` is reproduced exactly by the coefficients of order 0 and 1.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import sympy as sp

from ._jets import Jet
from .validation import as_float, as_int, check_real, get_limits
from .null_system import (SYSTEM_SYMBOLS, QuadratureIntegrator, _gram_law_quadrature, null_system_equations,
                          solve_null_system_full)

__all__ = ["NullTaylor", "null_system_taylor"]

#: largest Taylor order (each order is one evaluation of the integrand series; 20 keeps the series exact enough
#: in float64: the coefficients of an analytic function fall like R^-k, R the distance to the nearest singularity)
MAX_TAYLOR_ORDER = 20
#: node counts of the first rule and the largest (the Gauss-Jacobi limit of theory.null_system._gram_law_quadrature)
_FIRST_NODES = 400


@dataclass(frozen=True)
class NullTaylor:
    """Taylor coefficients of the null unknowns in ``gamma`` at ``gamma0``: ``x(gamma0 + s) = sum_k x[k] s^k``.

    Attributes
    ----------
    gamma : the expansion point ``gamma0``.
    delta, delta_tilde, kappa : arrays of ``order + 1`` coefficients (``kappa`` is zero for ``system="spec"``).
    n_nodes : nodes of the quadrature rule of the orders ``>= 2`` (0 when ``order <= 1``).
    quadrature_error : largest change of a coefficient of order ``>= 2`` between the last two rules, relative to
        the largest coefficient of its order.
    """

    gamma: float
    delta: np.ndarray
    delta_tilde: np.ndarray
    kappa: np.ndarray
    n_nodes: int
    quadrature_error: float


@functools.lru_cache(maxsize=1)
def _integrand_series():
    """``g1, g2, g3`` of :func:`theory.null_system_equations` as a function of (jet) arguments: operators only."""
    eq = null_system_equations()
    return sp.lambdify(SYSTEM_SYMBOLS, [eq["g1"], eq["g2"], eq["g3"]], modules=[{}])


def _higher_orders(x: np.ndarray, gamma0: float, consts: tuple[float, float, float, float], n_unknowns: int,
                   n_nodes: int) -> np.ndarray:
    """``x`` (``(order + 1, 3)``, orders 0 and 1 filled) completed order by order with an ``n_nodes`` rule."""
    c, a1, sf2, d0 = consts
    nodes, weights = _gram_law_quadrature(c, n_nodes)
    order = x.shape[0] - 1
    x = x.copy()
    I = QuadratureIntegrator(c, n_nodes)(-gamma0, *x[0], c, a1, sf2, d0)  # Id - d_x I at the solution, same rule
    jac = np.eye(n_unknowns) - np.array([I[3:6], I[6:9], I[9:12]]).T[:n_unknowns, :n_unknowns]
    z = Jet(np.concatenate([[-gamma0, -1.0], np.zeros(order - 1)]))  # z = -gamma0 - s
    for k in range(2, order + 1):
        x[k] = 0.0
        unknowns = [Jet(x[:, i]) for i in range(3)]
        values = _integrand_series()(nodes, z, *unknowns, c, a1, sf2, d0)
        b = np.array([v.integrate(weights).coefficients[k] for v in values])
        x[k, :n_unknowns] = np.linalg.solve(jac, b[:n_unknowns])
    return x


def null_system_taylor(gamma: float, c: float, a1: float, sf2: float, d0: float = 0.0, order: int = 2, *,
                       rtol: float = 1e-8, **options: Any) -> NullTaylor:
    """Taylor coefficients of ``delta, delta~, kappa`` in ``gamma`` at ``gamma`` (implicit derivatives).

    Parameters
    ----------
    gamma : float, expansion point ``gamma0`` in ``[1e-30, 1e30]``.
    c, a1, sf2, d0 : float, as in :func:`theory.solve_null_system_full`.
    order : int, highest coefficient, in ``[0, 20]``.
    rtol : float
        Agreement, in ``[1e-14, 1e-3]``, of two successive quadrature rules (node counts 400, 800, ... up to
        ``Limits.max_quadrature_nodes``) required of the coefficients of order ``>= 2``, relative to the largest
        coefficient of the same order.  The default ``1e-8`` is above the accuracy of SciPy's Gauss-Jacobi weights
        at the hard edge ``c = 1`` (their moments drift by ``1e-11`` at 400 nodes, ``7e-9`` at 6 400); elsewhere two
        rules agree to ``1e-13``.
    **options
        Solver options of :func:`theory.solve_null_system_full` (``system``, ``method``, ``n_nodes``, ``tol``,
        ``max_iter`` / ``maxiter``), used for orders 0 and 1.

    Returns
    -------
    NullTaylor

    Raises
    ------
    ValueError
        Invalid arguments.
    RuntimeError
        The solver did not converge, or the largest rule did not reach ``rtol`` (the message gives the
        agreement reached).

    Examples
    --------
    >>> from theory import hermite_moments
    >>> hm = hermite_moments("tanh")
    >>> t = null_system_taylor(0.1, 2.0, float(hm.a1), float(hm.sf2), order=3)
    >>> t.delta_tilde.shape
    (4,)
    >>> bool(t.quadrature_error < 1e-8)
    True
    """
    gamma0 = as_float("gamma", gamma, low=1e-30, high=1e30)
    order = as_int("order", order, low=0, high=MAX_TAYLOR_ORDER)
    rtol = float(check_real("rtol", rtol, low=1e-14, high=1e-3))
    sol = solve_null_system_full(-gamma0, c, a1, sf2, d0, **options)[0]
    full = options.get("system", "symmetric") in ("symmetric", "corrected")
    x = np.zeros((order + 1, 3))
    x[0] = sol.delta, sol.delta_tilde, sol.kappa
    if order >= 1:
        x[1] = -sol.ddelta_dz, -sol.ddelta_tilde_dz, -sol.dkappa_dz
    consts, n_nodes, err = (float(c), float(a1), float(sf2), float(d0)), 0, 0.0
    if order >= 2:  # orders >= 2 on refined rules
        x[2:], n_nodes, err = refine_quadrature(lambda n: _higher_orders(x, gamma0, consts, 3 if full else 2, n)[2:],
                                                rtol, f"null_system_taylor at gamma={gamma0:g}")
    return NullTaylor(gamma0, x[:, 0].copy(), x[:, 1].copy(), x[:, 2].copy(), n_nodes, err)


def _relative_change(cur: np.ndarray, prev: np.ndarray) -> float:
    """Largest change of a coefficient relative to the largest coefficient of its order (rows: orders)."""
    scale = np.max(np.abs(cur), axis=1, keepdims=True)
    return float(np.max(np.abs(cur - prev) / np.where(scale > 0, scale, 1.0)))


def refine_quadrature(compute: Callable[[int], np.ndarray], rtol: float, where: str) -> tuple[np.ndarray, int, float]:
    """``compute(n_nodes)`` (rows: Taylor orders) on rules of 400, 800, ... nodes until two successive rules agree.

    Returns ``(result, n_nodes, relative change)``; raises ``RuntimeError`` naming ``where`` when the largest rule
    (``Limits.max_quadrature_nodes``) is reached first.
    """
    n, high = _FIRST_NODES, get_limits().max_quadrature_nodes
    prev = compute(n)
    err = np.inf
    while 2 * n <= high:
        n *= 2
        cur = compute(n)
        err = _relative_change(cur, prev)
        prev = cur
        if err <= rtol:
            return cur, n, err
    raise RuntimeError(f"{where}: the implicit derivatives are not resolved by the quadrature of mu_G: two rules of "
                       f"{n // 2} and {n} nodes differ by {err:.2e} (rtol={rtol:g}); small gamma sharpens the "
                       f"integrands")
