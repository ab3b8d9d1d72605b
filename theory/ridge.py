"""Ridge-regression interpolation error of paper B, derived in sympy (the derivation is code).

Model and normalisation
-----------------------
``X = mu y^T + Z in R^{p x n}``, ``y in {+-1}^n``, ``Z`` standard Gaussian, ``s = ||mu||^2`` (``snr``),
``c = p / n``.  The ridge probe ``w = (X X^T + n gamma I_p)^{-1} X y`` leaves the residual
``y - X^T w = n gamma (X^T X + n gamma I_n)^{-1} y = gamma Q y`` with
``Q = (X^T X / n + gamma I_n)^{-1}``, so (exact algebra, no limit)::

    E = ||y - X^T w||^2 / n = gamma^2 / n  y^T Q^2 y = -gamma^2 d/dgamma (y^T Q y / n).

Derivation (:func:`derive_ridge_error`, every step a sympy computation)
-----------------------------------------------------------------------
1. ``Q0 = (Z^T Z / n + gamma)^{-1}``; ``delta = lim tr Q0 / n`` solves the Marchenko–Pastur equation
   ``delta = 1 / (gamma + c / (1 + delta))`` (:mod:`theory.marchenko_pastur`).
2. ``X^T X / n = Z^T Z / n + U C U^T`` with ``U = [u, v]``, ``u = y / sqrt n``, ``v = Z^T mu / sqrt n``,
   ``C = [[s, 1], [1, 0]]`` (rank two).
3. Limits of the quadratic forms: ``u^T Q0 u -> delta`` (``y`` independent of ``Z``),
   ``u^T Q0 v -> 0``, ``v^T Q0 v = mu^T (I_p - gamma (Z Z^T/n + gamma)^{-1}) mu -> s (1 - gamma m~)``
   where ``m~ = tr (Z Z^T/n + gamma)^{-1} / p = delta / c - (1/c - 1) / gamma`` (the two Gram
   matrices share their nonzero eigenvalues); with the MP equation ``v^T Q0 v -> s delta / (1 + delta)``.
4. Woodbury: ``u^T Q u = u^T Q0 u - u^T Q0 U (C^{-1} + U^T Q0 U)^{-1} U^T Q0 u
   -> delta (1 + delta) / (1 + (1 + s) delta)``.
5. Implicit differentiation of the MP equation: ``d delta / d gamma = -delta^2 (1+delta)^2 /
   ((1+delta)^2 - c delta^2)``.
6. ``E = -gamma^2 (d/d delta)(u^T Q u) (d delta / d gamma)``, which simplifies to the first reconstruction

       E_RR = gamma^2 d^2 (1+d)^2 (1 + 2d + (1+s) d^2) / (((1+d)^2 - c d^2) (1 + (1+s) d)^2),  d = delta(gamma).

   The derivation *confirms* the first reconstruction's formula (``derive_ridge_error().matches_spec``).
7. Limits ``gamma -> 0``: eliminating ``gamma = 1/delta - c/(1+delta)`` makes ``E`` a function of
   ``delta`` alone; ``delta -> inf`` (``c <= 1``) gives ``(1 - c)/(1 + s)``, ``delta -> 1/(c-1)``
   (``c > 1``) gives 0, with ``E / gamma^2 -> d0^2 (1+d0)^2 (1 + 2 d0 + (1+s) d0^2) / ((c/(c-1)) (1 + (1+s) d0)^2)``,
   ``d0 = 1/(c-1)`` (interpolation, ``E = O(gamma^2)``).

>>> round(float(ridge_error(1e-3, 0.25, 1.0)), 4)
0.375
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from .validation import as_array, as_float, finite_result, to_sympy
from .marchenko_pastur import _delta, mp_delta_expr
from .symbols import c as c_sym
from .symbols import delta as d_sym
from .symbols import gamma as g_sym
from .symbols import snr as s_sym

__all__ = ["RidgeDerivation", "derive_ridge_error", "ridge_error", "ridge_error_values", "ridge_error_limit",
           "ridge_error_small_gamma_coefficient"]


@dataclass
class RidgeDerivation:
    """Result of :func:`derive_ridge_error`.

    Attributes
    ----------
    steps : list of ``(description, sympy expression)`` in order.
    quadratic_form : ``lim y^T Q y / n`` as a function of ``delta, snr``.
    ddelta_dgamma : ``d delta / d gamma`` as a function of ``delta, c``.
    error_in_delta : ``E`` as a function of ``delta, gamma, c, snr`` (simplified).
    error : ``E`` as a closed form in ``gamma, c, snr`` (``delta`` replaced by its closed form).
    limit_below : ``lim_{gamma->0} E`` for ``c < 1``.
    limit_above : ``lim_{gamma->0} E`` for ``c > 1``.
    matches_spec : whether ``error_in_delta`` equals the first reconstruction identically.
    """

    steps: list[tuple[str, sp.Expr]] = field(default_factory=list)
    quadratic_form: sp.Expr | None = None
    ddelta_dgamma: sp.Expr | None = None
    error_in_delta: sp.Expr | None = None
    error: sp.Expr | None = None
    limit_below: sp.Expr | None = None
    limit_above: sp.Expr | None = None
    matches_spec: bool = False


def _rat(expr: sp.Expr) -> sp.Expr:
    """Canonical form of a rational function (all expressions of the derivation are rational)."""
    return sp.factor(sp.cancel(sp.together(expr)))


@functools.lru_cache(maxsize=1)
def derive_ridge_error() -> RidgeDerivation:
    """Derive ``E_RR`` step by step in sympy (see the module docstring for the argument).

    Returns
    -------
    RidgeDerivation
    """
    d, g, c, s = d_sym, g_sym, c_sym, s_sym
    out = RidgeDerivation()
    add = out.steps.append

    # 1. Marchenko–Pastur fixed point and gamma as a function of delta on that curve
    mp_eq = sp.Eq(d, 1 / (g + c / (1 + d)))
    add(("MP fixed point for delta = lim tr(Z^T Z/n + gamma)^{-1}/n", mp_eq))
    gamma_of_delta = _rat(sp.solve(d * (g + c / (1 + d)) - 1, g)[0])
    add(("gamma on the MP curve, as a function of delta", sp.Eq(g, gamma_of_delta)))

    # 3. limits of the quadratic forms of Q0
    m_tilde = d / c - (1 / c - 1) / g  # tr(ZZ^T/n + gamma)^{-1}/p from the shared nonzero spectrum
    vQv = _rat((s * (1 - g * m_tilde)).subs(g, gamma_of_delta))
    add(("v^T Q0 v -> s (1 - gamma m~), m~ = delta/c - (1/c - 1)/gamma, on the MP curve",
         sp.Eq(sp.Symbol("vQ0v"), vQv)))
    D = sp.Matrix([[d, 0], [0, vQv]])  # U^T Q0 U, cross term u^T Q0 v -> 0
    C = sp.Matrix([[s, 1], [1, 0]])
    add(("rank-two update X^T X/n = Z^T Z/n + U C U^T, C", C))
    add(("U^T Q0 U (limits)", D))

    # 4. Woodbury for u^T Q u
    e1 = sp.Matrix([1, 0])
    inner = (C.inv() + D).inv()
    qf = _rat(d - (e1.T * D * inner * D * e1)[0, 0])
    out.quadratic_form = qf
    add(("Woodbury: y^T Q y / n -> ", qf))

    # 5. implicit differentiation of F(delta, gamma) = delta (gamma + c/(1+delta)) - 1 = 0
    F = d * (g + c / (1 + d)) - 1
    dd = _rat((-sp.diff(F, g) / sp.diff(F, d)).subs(g, gamma_of_delta))
    out.ddelta_dgamma = dd
    add(("implicit differentiation: d delta / d gamma", dd))

    # 6. E = -gamma^2 d/dgamma (y^T Q y / n)
    err = _rat(-(g**2) * sp.diff(qf, d) * dd)
    out.error_in_delta = err
    add(("E = -gamma^2 (d qf / d delta)(d delta / d gamma)", err))
    spec = g**2 * d**2 * (1 + d) ** 2 * (1 + 2 * d + (1 + s) * d**2) / (((1 + d) ** 2 - c * d**2)
                                                                 * (1 + (1 + s) * d) ** 2)  # the first reconstruction
    diff = _rat(err - spec)
    out.matches_spec = diff == 0
    add(("E - E_RR(reconstruction) (simplified)", diff))
    out.error = err.subs(d, mp_delta_expr(g, c))
    add(("closed form with delta = delta(gamma)", out.error))

    # 7. gamma -> 0 limits, through delta (gamma eliminated)
    err_delta_only = _rat(err.subs(g, gamma_of_delta))
    add(("E on the MP curve, a function of delta only", err_delta_only))
    out.limit_below = _rat(sp.limit(err_delta_only, d, sp.oo))
    add(("c < 1: gamma -> 0 <=> delta -> oo; lim E", out.limit_below))
    out.limit_above = _rat(err_delta_only.subs(d, 1 / (c - 1)))
    add(("c > 1: gamma -> 0 <=> delta -> 1/(c-1); lim E", out.limit_above))
    return out


def _inexact_error(gamma: sp.Expr, c: sp.Expr, snr: sp.Expr) -> sp.Expr | None:
    """``E_RR`` of numbers of which at least one is a float (``sympy.Float``), correctly rounded to 15 digits.  Float
    arithmetic on the closed form loses digits: ``(sqrt(b^2 + 4 gamma) - b) / (2 gamma)``, ``b = gamma + c - 1``,
    cancels for ``b > 0`` at small ``gamma`` (6e-3 relative at ``gamma = 1e-12``, ``c = 12``), and so does
    ``(c - 1) delta^2`` at ``c = 1``.  The floats are taken as the exact binary fractions they are, ``delta`` in the
    cancellation-free form ``2 / (sqrt(b^2 + 4 gamma) + b)`` when ``b > 0``, and the exact value is evaluated to 15
    digits (sympy's adaptive ``evalf``).  ``None`` for exact or symbolic input (kept exact / symbolic)."""
    vals = (gamma, c, snr)
    if not all(v.is_number for v in vals) or not any(v.has(sp.Float) for v in vals):
        return None
    g, cc, s = (v.xreplace({f: sp.Rational(f) for f in v.atoms(sp.Float)}) for v in vals)
    b = g + cc - 1
    d = 2 / (sp.sqrt(b**2 + 4 * g) + b) if bool(b > 0) else (sp.sqrt(b**2 + 4 * g) - b) / (2 * g)
    err = derive_ridge_error().error_in_delta
    return err.subs({d_sym: d, g_sym: g, c_sym: cc, s_sym: s}, simultaneous=True).evalf(15)


def ridge_error(gamma: Any, c: Any, snr: Any) -> sp.Expr:
    """Limiting ridge interpolation error ``E_RR(gamma, c, snr)`` as a sympy expression.

    Parameters
    ----------
    gamma : ridge parameter (``>= 0``; number or sympy symbol). ``gamma = 0`` (also ``0.0``) returns the
        ridgeless limit :func:`ridge_error_limit`.  Floats are evaluated exactly (as the binary fractions they are) and
        rounded to 15 digits, so no digits are lost to cancellation at small ``gamma`` (``1e-300 <= gamma``, any ``c``).
    c : ``p / n > 0``.
    snr : ``||mu||^2 >= 0``.

    Returns
    -------
    sympy.Expr (a number when all arguments are numbers).

    Examples
    --------
    >>> from theory.symbols import gamma, c, snr
    >>> ridge_error(gamma, c, snr).has(gamma)
    True
    """
    gamma = to_sympy("gamma", gamma, low=0)
    c = to_sympy("c", c, low=0, low_open=True)
    snr = to_sympy("snr", snr, low=0)
    if gamma.is_zero:  # also the Float 0.0 (sympy: Float(0.0) == 0 is False)
        return ridge_error_limit(c, snr)
    expr = _inexact_error(gamma, c, snr)
    if expr is None:
        expr = derive_ridge_error().error.subs({g_sym: gamma, c_sym: c, s_sym: snr}, simultaneous=True)
        expr = sp.nsimplify(expr) if expr.is_Rational else expr
    return expr if expr.free_symbols else finite_result("ridge_error", expr, gamma=gamma, c=c, snr=snr)


@functools.lru_cache(maxsize=1)
def _error_fn():
    return sp.lambdify((d_sym, g_sym, c_sym, s_sym), derive_ridge_error().error_in_delta, modules="numpy")


def ridge_error_values(gammas: Any, c: float, snr: float) -> np.ndarray:
    """Fast vectorised numeric ``E_RR`` on an array of ``gamma >= 0`` (``0``: the ridgeless limit).

    Returns
    -------
    numpy.ndarray of the same shape as ``gammas`` (float64).

    Raises
    ------
    ValueError
        Invalid arguments, or a value float64 cannot hold (e.g. ``c < 1`` with ``gamma < ~1e-75``, where
        ``delta^4`` overflows): use :func:`ridge_error` there.
    """
    g = as_array("gammas", gammas, low=0, bytes_per_element=256)
    c = as_float("c", c, low=0, low_open=True)
    snr = as_float("snr", snr, low=0)
    return finite_result("ridge_error_values", _error_values(g, c, snr), gammas=gammas, c=c, snr=snr)


def _error_values(g: np.ndarray, c: float, snr: float) -> np.ndarray:
    """:func:`ridge_error_values` of a float array ``g >= 0`` and floats ``c > 0``, ``snr >= 0``, not checked finite
    (``gamma ~ 0`` with ``c < 1`` overflows)."""
    gpos = np.where(g == 0, 1.0, g)
    d = _delta(np.where(g == 0, 0.0, g) if c > 1 else gpos, c)
    with np.errstate(over="ignore", invalid="ignore"):
        vals = np.asarray(_error_fn()(d, g, c, snr), dtype=np.float64)
    if np.any(g == 0):
        vals = np.where(g == 0, float(ridge_error_limit(c, snr)), vals)
    return vals


def ridge_error_limit(c: Any, snr: Any) -> sp.Expr:
    """``lim_{gamma -> 0+} E_RR``: ``(1 - c)/(1 + snr)`` for ``c < 1`` and 0 for ``c >= 1``.

    Taken from :func:`derive_ridge_error` (limits along the MP curve). Symbolic ``c`` gives a ``Piecewise``.
    """
    c = to_sympy("c", c, low=0, low_open=True)
    snr = to_sympy("snr", snr, low=0)
    der = derive_ridge_error()
    below = der.limit_below.subs({c_sym: c, s_sym: snr}, simultaneous=True)
    above = der.limit_above.subs({c_sym: c, s_sym: snr}, simultaneous=True)
    if c.is_number:
        return sp.simplify(below) if c < 1 else (sp.Integer(0) if c == 1 else sp.simplify(above))
    return sp.Piecewise((below, c < 1), (sp.Integer(0), sp.Eq(c, 1)), (above, True))


def ridge_error_small_gamma_coefficient(c: Any, snr: Any) -> sp.Expr:
    """``lim_{gamma->0} E_RR / gamma^2`` for ``c > 1`` (interpolation: ``E_RR = O(gamma^2)``).

    ``c > 1`` and ``snr >= 0``: numbers or sympy expressions.
    """
    c = to_sympy("c", c, low=1, low_open=True)
    snr = to_sympy("snr", snr, low=0)
    e = (derive_ridge_error().error_in_delta / g_sym**2).subs(d_sym, 1 / (c_sym - 1))
    return sp.simplify(e.subs({c_sym: c, s_sym: snr}, simultaneous=True))
