"""Limiting spectrum of the nonlinear kernel matrix of paper B (free-convolution law).

Matrix and convention
---------------------
``X in R^{p x n}`` standard Gaussian, ``c = p / n``, ``f`` centred (``E f(xi) = 0``) with
``a1 = E[xi f(xi)]``, ``nu = E f(xi)^2``.  The ``n x n`` kernel

    K = f(X^T X / sqrt p) / sqrt p   with the diagonal removed (K_ii = 0)

has (Cheng–Singer 2013, Fan–Montanari 2019) the limiting law of ``a1 (X^T X / p - I_n) + sqrt((nu - a1^2) / p) W``,
``W`` a GOE matrix (unit off-diagonal variance) free from ``X``: a free additive convolution of a shifted, rescaled
Marchenko–Pastur law with a semicircle of variance ``(nu - a1^2) / c``.  Its R-transform is
``R(w) = a1^2 w / (c - a1 w) + (nu - a1^2) w / c`` (``X^T X/p = (1/c) Z^T Z/n`` has ``R(w) = c / (c - w)`` in the
convention of :mod:`theory.marchenko_pastur`), and with ``m(z) = lim 1/n tr (K - z)^{-1}`` the relation
``z = R(-m) - 1/m`` is the first reconstruction's equation

    m = -1 / ( z + a1^2 m / (c + a1 m) + (nu - a1^2) m / c ),

i.e. the cubic ``sf2 a1 m^3 + c (a1 z + a1^2 + sf2) m^2 + c (c z + a1) m + c^2 = 0``,
``sf2 = nu - a1^2``.  The normalisation is checked against simulation (tests/theory/test_marchenko_pastur.py,
slow; check B6); activations with an even part (``a2 != 0``: relu, cos) converge like ``p^{-1/2}``.

Branch selection: among the roots at ``z`` (``Im z > 0``; real ``z`` is moved to ``z + i eta``) the Stieltjes transform
is the root with ``Im m > 0`` that satisfies the Cauchy–Schwarz bound ``Im m >= Im z |m|^2`` (true for every Stieltjes
transform of a probability law); when several roots pass (not observed in tests), the root nearest a damped fixed-point
iteration started from ``-1/z`` is taken.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import sympy as sp

from .validation import ArgumentTypeError, as_array, as_float, finite_result, numeric_errors, to_sympy
from .marchenko_pastur import mp_density
from .symbolic import is_symbolic

__all__ = ["kernel_stieltjes", "kernel_density"]


#: bytes of intermediate arrays per ``z`` point of :func:`kernel_stieltjes` (companion matrices, roots, masks)
_BYTES_PER_POINT = 1024


def _validate(c: Any, a1: Any, nu: Any) -> tuple[float, float, float]:
    """Checked ``(c, a1, sf2)``: ``c > 0``, ``a1`` finite, ``nu > 0`` with ``nu >= a1^2`` (to ``1e-12``),
    ``sf2 = max(nu - a1^2, 0)``."""
    c = as_float("c", c, low=0, low_open=True)
    nu = as_float("nu", nu, low=0, low_open=True)
    a1 = as_float("a1", a1)
    sf2 = nu - a1**2
    if sf2 < -1e-12:
        raise ValueError(f"nu must be >= a1^2 (nu = E f^2 >= (E xi f)^2), got nu={nu!r}, a1={a1!r}")
    return c, a1, max(sf2, 0.0)


def _fixed_point(z: np.ndarray, c: float, a1: float, sf2: float, iters: int = 20000) -> np.ndarray:
    m = -1.0 / z
    for _ in range(iters):
        new = -1.0 / (z + a1**2 * m / (c + a1 * m) + sf2 * m / c)
        if np.all(np.abs(new - m) < 1e-13 * (1 + np.abs(m))):
            return new
        m = 0.5 * m + 0.5 * new
    return m


def kernel_stieltjes(z: Any, c: float, a1: float, nu: float, eta: float = 0.0) -> Any:
    """Stieltjes transform ``m(z) = lim 1/n tr (K - z)^{-1}`` of the kernel (see module doc).

    Parameters
    ----------
    z : complex number or array with ``Im z >= 0``; real ``z`` is evaluated at ``z + i eta``
        (``eta = 0``: at ``z + i 1e-12``, the boundary value).
    c : ``p / n > 0``.
    a1 : ``E[xi f(xi)]``.
    nu : ``E f(xi)^2 > 0`` of the centred activation (``nu >= a1^2``).
    eta : imaginary shift added to ``z``.

    Returns
    -------
    complex or complex ndarray (shape of ``z``).

    Raises
    ------
    ValueError
        Invalid parameters or ``Im z < 0``.
    RuntimeError
        No root passes the branch test (should not happen; reported rather than returning NaN).
    """
    c, a1, sf2 = _validate(c, a1, nu)
    eta = as_float("eta", eta, low=0)
    zin = np.asarray(as_array("z", z, complex_ok=True, bytes_per_element=_BYTES_PER_POINT), dtype=np.complex128)
    if np.any(zin.imag < 0):
        raise ValueError("z must have Im z >= 0 (the branch is defined on the upper half-plane)")
    with numeric_errors("kernel_stieltjes", z=z, c=c, a1=a1, nu=nu, eta=eta):
        out = _stieltjes_core(zin, c, a1, sf2, eta)  # overflow: refused by finite_result or numeric_errors
    return finite_result("kernel_stieltjes", out, z=z, c=c, a1=a1, nu=nu, eta=eta)


@np.errstate(over="ignore", invalid="ignore")
def _stieltjes_core(zin: np.ndarray, c: float, a1: float, sf2: float, eta: float = 0.0) -> Any:
    """:func:`kernel_stieltjes` on checked inputs (``zin`` complex128 with ``Im >= 0``; ``sf2 = max(nu - a1^2, 0)``);
    finite (a ``RuntimeError`` otherwise)."""
    zz = np.atleast_1d(zin + 1j * eta).ravel()
    zz = np.where(zz.imag <= 0, zz.real + 1e-12j, zz)
    if abs(a1) < 1e-7 * np.sqrt(sf2 + a1**2):
        # |a1| this small moves m by O(a1^2) ~ 1e-14, but its spurious root |m| ~ c / a1 spoils the cubic: semicircle
        a1 = 0.0
    if sf2 < 1e-14 * a1**2:
        sf2 = 0.0
    coeffs = _equation_coefficients(zz, c, a1, sf2)
    roots = _polished_roots(coeffs)
    out = _select_branch(roots, zz, c, a1, sf2)
    if not np.all(np.isfinite(out)):
        raise RuntimeError("kernel_stieltjes: branch selection failed")
    return out.reshape(zin.shape) if zin.ndim else out[0]


def _equation_coefficients(zz: np.ndarray, c: float, a1: float, sf2: float) -> np.ndarray:
    """Descending coefficients ``(N, deg+1)`` of the polynomial in ``m`` at each ``z`` (cubic or its limits)."""
    if a1 != 0.0 and sf2 > 0.0:
        coeffs = [
            np.full_like(zz, sf2 * a1),
            c * (a1 * zz + a1**2 + sf2),
            c * (c * zz + a1),
            np.full_like(zz, c**2),
        ]
    elif a1 == 0.0:  # semicircle of variance sf2 / c: (sf2/c) m^2 + z m + 1 = 0
        coeffs = [np.full_like(zz, sf2 / c), zz, np.ones_like(zz)]
    else:  # sf2 == 0: shifted MP, c (a1 z + a1^2) m^2 + c (c z + a1) m + c^2 = 0
        coeffs = [c * (a1 * zz + a1**2), c * (c * zz + a1), np.full_like(zz, c**2)]
    return np.stack(coeffs, axis=-1)  # (N, deg+1)


def _polished_roots(coeffs: np.ndarray) -> np.ndarray:
    """All roots ``(N, deg)``: companion-matrix eigenvalues, then two Newton steps on the polynomial."""
    deg = coeffs.shape[1] - 1
    comp = np.zeros((coeffs.shape[0], deg, deg), dtype=np.complex128)
    comp[:, 0, :] = -coeffs[:, 1:] / coeffs[:, :1]
    if deg > 1:
        comp[:, np.arange(1, deg), np.arange(deg - 1)] = 1.0
    roots = np.linalg.eigvals(comp)  # (N, deg)
    # two Newton polishing steps on the polynomial (companion eigenvalues are only backward stable)
    for _ in range(2):
        pv = np.zeros_like(roots)
        dp = np.zeros_like(roots)
        for k in range(deg + 1):
            dp = dp * roots + pv
            pv = pv * roots + coeffs[:, k : k + 1]
        safe = np.abs(dp) > 0
        roots = np.where(safe, roots - pv / np.where(safe, dp, 1.0), roots)
    return roots


def _select_branch(roots: np.ndarray, zz: np.ndarray, c: float, a1: float, sf2: float) -> np.ndarray:
    """The Stieltjes root at each ``z`` (module docstring, "Branch selection")."""
    im_z = zz.imag[:, None]
    margin = roots.imag / im_z - np.abs(roots) ** 2  # >= 0 for a Stieltjes transform
    ok = (roots.imag > 0) & (margin >= -1e-6 * (1 + np.abs(roots) ** 2))
    n_ok = ok.sum(axis=1)
    out = np.empty(zz.size, dtype=np.complex128)
    single = n_ok == 1
    out[single] = roots[single][ok[single]]
    rest = ~single
    if np.any(rest):
        # ambiguous (or no root passed): the root nearest a damped fixed-point solution
        ref = _fixed_point(zz[rest], c, a1, sf2)
        cand = np.where(ok[rest] | (n_ok[rest] == 0)[:, None], roots[rest], np.nan)
        dist = np.abs(cand - ref[:, None])
        dist = np.where(np.isnan(dist), np.inf, dist)
        out[rest] = cand[np.arange(cand.shape[0]), np.argmin(dist, axis=1)]
    return out


def kernel_density(x: Any, c: float, a1: float, nu: float, eta: float = 1e-9) -> Any:
    """Density of the kernel's limiting spectral law by Stieltjes inversion, ``Im m(x + i eta) / pi``.

    Numbers or arrays in; floats or float arrays out.  ``eta >= 0`` (``0``: the boundary value at ``+i 1e-12``).

    Symbolic input (any of ``x, c, a1, nu`` a sympy expression with free symbols): the closed form where the law
    has one, as a ``sympy.Piecewise`` of the boundary value (``eta`` is not used):

    * ``a1 = 0``: the semicircle of variance ``v = nu / c``, ``sqrt(4 v - x^2) / (2 pi v)`` on ``|x| < 2 sqrt v``;
    * ``nu = a1^2`` (``f`` linear): the law of ``a1 (lam / c - 1)``, ``lam ~ mu_c``, i.e.
      ``(c / |a1|) mp_density(c (x / a1 + 1), c)`` (continuous part; for ``c < 1`` the atom ``1 - c`` sits at
      ``x = -a1``).

    Otherwise (``a1 != 0`` and ``nu > a1^2``, or not decidable from the assumptions) ``m`` is a root of the cubic of
    the module docstring, with no closed form: :class:`theory.ArgumentTypeError` naming the symbolic arguments.

    Examples
    --------
    >>> x = sp.Symbol("x", real=True)
    >>> kernel_density(x, 2, 0, 1)
    Piecewise((sqrt(2 - x**2)/pi, x**2 < 2), (0, True))
    """
    if any(is_symbolic(v) for v in (x, c, a1, nu)):
        return _kernel_density_expr(x, c, a1, nu)
    xa = as_array("x", x, bytes_per_element=_BYTES_PER_POINT)
    eta = as_float("eta", eta, low=0)
    c, a1, sf2 = _validate(c, a1, nu)
    with numeric_errors("kernel_density", x=x, c=c, a1=a1, nu=nu, eta=eta):
        dens = _density(xa, c, a1, sf2, eta)
    return float(dens) if np.ndim(dens) == 0 else dens


def _density(xa: np.ndarray, c: float, a1: float, sf2: float, eta: float) -> Any:
    """:func:`kernel_density` of a checked float array ``xa`` (``sf2 = max(nu - a1^2, 0)``)."""
    m = _stieltjes_core(np.asarray(xa + 1j * eta, dtype=np.complex128), c, a1, sf2)
    return np.maximum(np.imag(m), 0.0) / np.pi


def _kernel_density_expr(x: Any, c: Any, a1: Any, nu: Any) -> sp.Expr:
    """The closed forms of :func:`kernel_density` for sympy input (see there)."""
    x = to_sympy("x", x)
    c = to_sympy("c", c, low=0, low_open=True)
    a1 = to_sympy("a1", a1)
    nu = to_sympy("nu", nu, low=0, low_open=True)
    sf2 = nu - a1**2
    if sf2.is_number and sf2 < -1e-12:
        raise ValueError(f"nu must be >= a1^2 (nu = E f^2 >= (E xi f)^2), got nu={nu}, a1={a1}")
    if a1.is_zero:
        v = nu / c
        return sp.Piecewise((sp.sqrt(4 * v - x**2) / (2 * sp.pi * v), x**2 < 4 * v), (0, True))
    linear = sf2.is_zero or (sf2.is_number and abs(sf2) <= 1e-14 * a1**2)  # the numeric path's rounding rule
    if linear and a1.is_zero is False:
        return c / sp.Abs(a1) * mp_density(c * (x / a1 + 1), c)
    names = ", ".join(n for n, v in (("x", x), ("c", c), ("a1", a1), ("nu", nu)) if v.free_symbols)
    raise ArgumentTypeError(
        f"{names} must be numbers here: kernel_density has no closed form for a1={a1}, nu={nu} (only a1 = 0, the "
        f"semicircle, and nu = a1^2, a shifted Marchenko-Pastur law, have one; otherwise the Stieltjes transform is "
        f"a root of a cubic, see theory.kernel_spectrum)")
