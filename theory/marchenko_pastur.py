"""Marchenko–Pastur law of paper B (the ridge-regression resolvent).

Convention
----------
``Z in R^{p x n}`` has i.i.d. standard Gaussian entries, ``c = p / n``, and the matrix studied is
the ``n x n`` Gram matrix ``Z^T Z / n``.  Its limiting spectral law ``mu_c`` has

* a continuous part with density ``sqrt((lam_+ - x)(x - lam_-)) / (2 pi x)`` on
  ``[lam_-, lam_+]``, ``lam_{+-} = (1 +- sqrt c)^2`` (:func:`mp_density`, :func:`mp_support`);
* an atom of mass ``1 - c`` at 0 when ``c < 1`` (:func:`mp_atom`; ``Z^T Z`` has rank ``p < n``);
* moments ``int x^k dmu_c = sum_{j=1}^k N(k, j) c^j`` with the Narayana numbers
  ``N(k, j) = C(k, j) C(k, j-1) / k`` (:func:`mp_moment`);
* Stieltjes transform ``m(z) = lim 1/n tr (Z^T Z / n - z I_n)^{-1} = int dmu_c(x) / (x - z)`` (:func:`mp_stieltjes`),
  the root of ``m = 1 / (-z + c / (1 + m))``, i.e. ``z m^2 + (1 + z - c) m + 1 = 0``, on the branch
  ``m(z) = (-(1 + z - c) + R(z)) / (2 z)``, ``R(z) = sqrt(z - lam_-) sqrt(z - lam_+)`` (principal square roots: ``R`` is
  analytic off the support and ``R(z) ~ z`` at infinity).  This branch has ``Im m > 0`` for ``Im z > 0``, ``m > 0`` for
  real ``z < 0`` and ``m ~ -1/z`` at infinity.

The ridge quantity of the claims (docs/claims.md) is ``delta(gamma) = mp_stieltjes(-gamma, c)``, the positive root of
``delta = 1 / (gamma + c / (1 + delta))``, i.e.
``delta = (sqrt((gamma + c - 1)^2 + 4 gamma) - (gamma + c - 1)) / (2 gamma)`` (:func:`mp_delta`).

>>> round(float(mp_stieltjes(-1.0, 0.5)), 6)
0.780776
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from .validation import (as_array, as_float, check_complex, check_real, check_size, finite_result, numeric_errors,
                         to_sympy)
from .symbolic import is_symbolic

__all__ = ["mp_stieltjes", "mp_stieltjes_expr", "mp_delta", "mp_delta_expr", "mp_equation", "mp_density", "mp_atom",
           "mp_support", "mp_moment"]


#: bytes of intermediate arrays per input element of the vectorised functions (for the memory budget)
_BYTES_PER_POINT = 256


def _float_c(c: Any) -> float:
    """``float(c)`` of a number ``c > 0`` (symbolic ``c`` refused)."""
    return as_float("c", c, low=0, low_open=True)


def mp_support(c: float) -> tuple[float, float]:
    """Edges ``((1 - sqrt c)^2, (1 + sqrt c)^2)`` of the continuous part of ``mu_c``.

    Works for numbers (floats out) and sympy expressions (sympy out).
    """
    if isinstance(check_real("c", c, low=0, low_open=True, symbolic=True), sp.Basic):
        return (1 - sp.sqrt(c)) ** 2, (1 + sp.sqrt(c)) ** 2
    return _support(_float_c(c))


def _support(c: float) -> tuple[float, float]:
    """:func:`mp_support` of a float ``c > 0``."""
    rc = float(np.sqrt(c))
    return (1.0 - rc) ** 2, (1.0 + rc) ** 2


def mp_atom(c: Any) -> Any:
    """Mass of the atom of ``mu_c`` at 0: ``max(1 - c, 0)``."""
    if isinstance(check_real("c", c, low=0, low_open=True, symbolic=True), sp.Basic):
        return sp.Max(1 - c, 0)
    return max(1.0 - _float_c(c), 0.0)


def mp_equation(m: Any, z: Any, c: Any) -> Any:
    """Residual ``m - 1 / (-z + c / (1 + m))`` of the fixed-point equation (numbers, arrays or sympy).

    ``m`` and ``z`` may be complex, ``c > 0``; the poles ``m = -1`` and ``-z + c / (1 + m) = 0`` are refused.
    """
    m, z = (_complex_operand(name, v) for name, v in (("m", m), ("z", z)))
    if isinstance(c, (list, tuple, np.ndarray)):
        c = as_array("c", c, low=0, low_open=True)
    else:
        check_real("c", c, low=0, low_open=True, symbolic=True)
    symbolic = any(isinstance(v, sp.Basic) for v in (m, z, c))
    if not symbolic:
        if np.any(np.asarray(1 + m) == 0):
            raise ValueError("m = -1 is a pole of the equation (1 + m = 0)")
        with np.errstate(divide="ignore", invalid="ignore"):
            if np.any(np.asarray(-z + c / (1 + m)) == 0):
                raise ValueError(f"m, z and c make -z + c / (1 + m) vanish (a pole), got m={m!r}, z={z!r}, c={c!r}")
    with numeric_errors("mp_equation", m=m, z=z, c=c):
        out = m - 1 / (-z + c / (1 + m))
    return out if symbolic else finite_result("mp_equation", out, m=m, z=z, c=c)


def _complex_operand(name: str, v: Any) -> Any:
    """A checked number, sympy expression or (complex) array operand of :func:`mp_equation`."""
    if isinstance(v, (list, tuple, np.ndarray)):
        return as_array(name, v, complex_ok=True, bytes_per_element=_BYTES_PER_POINT)
    return check_complex(name, v, symbolic=True)


def mp_stieltjes(z: Any, c: float) -> Any:
    """Stieltjes transform ``m(z) = int dmu_c(x) / (x - z)`` of ``Z^T Z / n`` (see module doc).

    Parameters
    ----------
    z : complex number or array; real ``z`` on the support returns the limit from ``Im z -> 0+``; or a sympy
        expression.
    c : aspect ratio ``p / n > 0``, or a sympy expression.

    Returns
    -------
    complex (or complex ndarray); for real ``z`` off the support, a float (or float ndarray).  When ``z`` or
    ``c`` is a sympy expression with free symbols: the closed form :func:`mp_stieltjes_expr` (same branch).

    Raises
    ------
    ValueError
        ``c <= 0``, or ``z = 0`` where ``m`` is infinite (``c <= 1``).

    Examples
    --------
    >>> round(mp_stieltjes(-1.0, 0.5), 6)
    0.780776
    >>> z = sp.Symbol("z")
    >>> mp_stieltjes(z, sp.Rational(1, 2))
    (-z + sqrt(z - (1 - sqrt(2)/2)**2)*sqrt(z - (sqrt(2)/2 + 1)**2) - 1/2)/(2*z)
    """
    if is_symbolic(z) or is_symbolic(c):
        return mp_stieltjes_expr(z, c)
    c = _float_c(c)
    z_in = as_array("z", z, complex_ok=True, bytes_per_element=_BYTES_PER_POINT)
    with numeric_errors("mp_stieltjes", z=z, c=c):
        m = _stieltjes_branch(z_in, c)
    return finite_result("mp_stieltjes", m, z=z, c=c)


def _stieltjes_branch(z_in: np.ndarray, c: float) -> Any:
    """:func:`mp_stieltjes` on a checked array ``z_in`` (float64 or complex128) and a float ``c > 0``."""
    real_input = not np.iscomplexobj(z_in)
    zc = z_in.astype(np.complex128) + 0j  # +0j turns -0.0 imaginary parts into +0.0
    lo, hi = _support(c)
    zero = zc == 0
    if np.any(zero) and c <= 1:
        raise ValueError(f"z = 0 is a pole of the Marchenko-Pastur Stieltjes transform for c = {c} <= 1")
    zs = np.where(zero, 1.0, zc)
    r = np.sqrt(zs - lo) * np.sqrt(zs - hi)
    b = 1 + zs - c
    num = -b + r
    alt = -b - r  # the other root m2 = alt / (2 z) and m m2 = 1/z, so m = 2 / alt (no cancellation)
    m = np.where(np.abs(num) >= np.abs(alt), num / (2 * zs), 2 / np.where(alt == 0, 1.0, alt))
    if np.any(zero):
        m = np.where(zero, 1.0 / (c - 1.0), m)
    if real_input:
        zr = z_in.astype(np.float64)
        off = (zr < lo) | (zr > hi) | ((zr == 0) & (c > 1))
        if np.all(off):
            m = m.real
    return m.item() if m.ndim == 0 else m


def mp_delta(gamma: Any, c: float) -> Any:
    """``delta(gamma) = mp_stieltjes(-gamma, c)``, the positive root of ``delta = 1/(gamma + c/(1+delta))``.

    Numerically stable form ``2 / (sqrt((gamma+c-1)^2 + 4 gamma) + gamma + c - 1)`` when ``gamma + c - 1 > 0``, with
    ``gamma + (c - 1)`` (exact near ``c = 1``) and ``hypot(b, 2 sqrt(gamma))`` (no overflow of ``b^2``): correct to a
    few ulps for every ``gamma`` and ``c``. ``gamma = 0`` is allowed when ``c > 1`` (``delta(0) = 1 / (c - 1)``).
    """
    c = _float_c(c)
    g = as_array("gamma", gamma, low=0, bytes_per_element=_BYTES_PER_POINT)
    if np.any(g == 0) and c <= 1:
        raise ValueError(f"gamma must be > 0 when c <= 1 (delta(0) is infinite), got {gamma!r}")
    out = finite_result("mp_delta", _delta(g, c), gamma=gamma, c=c)
    return float(out) if out.ndim == 0 else out


def _delta(g: np.ndarray, c: float) -> np.ndarray:
    """:func:`mp_delta` of a float array ``g >= 0`` (``> 0`` when ``c <= 1``) and a float ``c > 0``."""
    b = g + (float(c) - 1.0)  # not (g + c) - 1: that cancels the digits of a small g at c near 1
    root = np.hypot(b, 2.0 * np.sqrt(g))  # sqrt(b^2 + 4 gamma) without overflow of b^2 (gamma > 1e154)
    with np.errstate(divide="ignore", invalid="ignore"):
        pos = 2.0 / (root + b)
        neg = (root - b) / (2.0 * np.where(g == 0, 1.0, g))
    return np.where(b > 0, pos, neg)


def mp_stieltjes_expr(z: Any, c: Any) -> sp.Expr:
    """Sympy closed form of :func:`mp_stieltjes` (same branch): ``(-(1+z-c) + R(z)) / (2z)``.

    ``z``: a nonzero real or complex number or a sympy expression (the form is ``0/0`` at ``z = 0``); ``c > 0``.
    """
    z = to_sympy("z", z, complex_ok=True)
    c = to_sympy("c", c, low=0, low_open=True)
    if z.is_zero:
        raise ValueError("z must be nonzero: the closed form is 0/0 at z = 0 (mp_stieltjes gives the limit)")
    lo, hi = (1 - sp.sqrt(c)) ** 2, (1 + sp.sqrt(c)) ** 2
    return (-(1 + z - c) + sp.sqrt(z - lo) * sp.sqrt(z - hi)) / (2 * z)


def mp_delta_expr(gamma: Any, c: Any) -> sp.Expr:
    """Sympy closed form of ``delta(gamma)``: ``(sqrt((gamma+c-1)^2 + 4 gamma) - (gamma+c-1)) / (2 gamma)``.

    Equal to ``mp_stieltjes_expr(-gamma, c)`` for ``gamma > 0`` (the product of the two square roots of ``R(-gamma)`` is
    ``-sqrt((gamma + lam_-)(gamma + lam_+))``). ``gamma > 0``, ``c > 0``: numbers or sympy objects.
    """
    gamma = to_sympy("gamma", gamma, low=0, low_open=True)
    c = to_sympy("c", c, low=0, low_open=True)
    b = gamma + c - 1
    return (sp.sqrt(b**2 + 4 * gamma) - b) / (2 * gamma)


def mp_density(x: Any, c: float) -> Any:
    """Density of the continuous part of ``mu_c``: ``sqrt((lam_+ - x)(x - lam_-)) / (2 pi x)``.

    It integrates to ``min(c, 1)``; the atom ``1 - c`` at 0 (``c < 1``) is :func:`mp_atom`. Zero outside
    ``[lam_-, lam_+]``.  Numbers or arrays (floats out); when ``x`` or ``c`` is a sympy expression with free symbols,
    the closed form as a ``sympy.Piecewise`` (the same expression on ``lam_- < x < lam_+``, 0 elsewhere).

    Examples
    --------
    >>> round(mp_density(1.0, 0.5), 4)
    0.2105
    >>> x = sp.Symbol("x", positive=True)
    >>> f = mp_density(x, sp.Symbol("c", positive=True))
    >>> f.args[0][0]
    sqrt(-x + (sqrt(c) + 1)**2)*sqrt(x - (1 - sqrt(c))**2)/(2*pi*x)
    >>> sp.N(sp.Integral(mp_density(x, 4), (x, 1, 9)), 12)
    1.00000000000
    """
    if is_symbolic(x) or is_symbolic(c):
        return _mp_density_expr(x, c)
    c = _float_c(c)
    dens = _density(as_array("x", x, bytes_per_element=_BYTES_PER_POINT), c)
    return float(dens) if dens.ndim == 0 else dens


def _density(xa: np.ndarray, c: float) -> np.ndarray:
    """:func:`mp_density` of a float array ``xa`` and a float ``c > 0``."""
    lo, hi = _support(c)
    inside = (xa > lo) & (xa < hi) & (xa > 0)
    xs = np.where(inside, xa, 1.0)
    return np.where(inside, np.sqrt(np.clip((hi - xs) * (xs - lo), 0.0, None)) / (2 * np.pi * xs), 0.0)


def _mp_density_expr(x: Any, c: Any) -> sp.Expr:
    """The closed form of :func:`mp_density` for sympy input (``x`` real, ``c > 0``)."""
    x = to_sympy("x", x)
    c = to_sympy("c", c, low=0, low_open=True)
    lo, hi = (1 - sp.sqrt(c)) ** 2, (1 + sp.sqrt(c)) ** 2
    inside = sp.And(x > lo, x < hi)
    return sp.Piecewise((sp.sqrt(hi - x) * sp.sqrt(x - lo) / (2 * sp.pi * x), inside), (0, True))


def mp_moment(k: int, c: Any) -> sp.Expr:
    """``int x^k dmu_c = lim 1/n tr (Z^T Z / n)^k = sum_{j=1}^k N(k, j) c^j`` (``1`` for ``k = 0``).

    ``N(k, j) = binomial(k, j) binomial(k, j - 1) / k`` (Narayana).  Sympy in, sympy out.  ``k`` is at most
    ``theory.get_limits().max_moment_order`` (1000 by default).

    >>> mp_moment(2, sp.Symbol("c"))
    c**2 + c
    """
    k = check_size("k", k, 0, "max_moment_order")
    c = to_sympy("c", c, low=0, low_open=True)
    if k == 0:
        return sp.Integer(1)
    return sp.expand(sum(sp.binomial(k, j) * sp.binomial(k, j - 1) / k * c**j for j in range(1, k + 1)))
