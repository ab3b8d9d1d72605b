"""Exact integrals of rational functions against the Gram law ``mu_G`` (private helper).

``mu_G`` is the limiting spectral law of ``G = Z^T Z / p`` (``Z`` a ``p x n`` standard Gaussian matrix,
``c = p / n``): the Marchenko–Pastur law of ratio ``1/c`` and unit variance, i.e. the law ``mu_c`` of
:mod:`theory.marchenko_pastur` (that of ``Z^T Z / n``) scaled by ``1/c``.  It has a density on
``[(1 - c^{-1/2})^2, (1 + c^{-1/2})^2]`` (:func:`gram_support`) and an atom ``1 - c`` at 0 when ``c < 1``.

The null attention system (:mod:`theory.null_system`) and the structured traces (:mod:`theory.structured`) both need
``int P(l) / D(l)^k dmu_G(l)`` with a polynomial ``D > 0`` on ``l >= 0``; :func:`gram_rational_integral` is the one
implementation.  It is private: its law is ``mu_G``, not the ``mu_c`` of the public :mod:`theory.marchenko_pastur`
(rescaling the coefficients would change the floating-point arithmetic of both callers), and it returns an internal
precision estimate that the callers use to decide on a quadrature fallback.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import numpy.polynomial.polynomial as P_

from .marchenko_pastur import _stieltjes_branch, _support

#: number of moments of ``mu_G`` tabulated for the polynomial part (degree of ``P // D^k`` below this)
_N_MOMENTS = 16


class RepeatedRootError(ValueError):
    """The denominator has a repeated root: the simple-pole partial fractions do not apply."""


def gram_support(c: float) -> tuple[float, float]:
    """Edges ``((1 - c^{-1/2})^2, (1 + c^{-1/2})^2)`` of the continuous part of ``mu_G`` (floats): those of the
    Marchenko-Pastur law of ratio ``1/c``."""
    return _support(1.0 / c)


@functools.lru_cache(maxsize=64)
def _gram_moments(c: float) -> tuple[float, ...]:
    """``int l^j dmu_G = c^{-j} sum_i N(j, i) c^i`` (Narayana numbers ``N``), ``j < _N_MOMENTS``."""
    out = [1.0]
    for j in range(1, _N_MOMENTS):
        out.append(float(sum(math.comb(j, i) * math.comb(j, i - 1) / j * c ** (i - j) for i in range(1, j + 1))))
    return tuple(out)


def _gram_stieltjes_and_derivative(w: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray]:
    """``m_G(w) = int dmu_G / (l - w) = c m(c w)`` and ``m_G'(w) = c^2 m'(c w)`` (``m``: :func:`mp_stieltjes`).  ``m'``
    from differentiating ``z m^2 + (1 + z - c) m + 1 = 0``: ``m' = -(m^2 + m) / (2 z m + 1 + z - c)``."""
    zc = c * np.asarray(w, dtype=np.complex128)
    m = np.asarray(_stieltjes_branch(zc, c), dtype=np.complex128)
    dm = -(m * m + m) / (2 * zc * m + 1 + zc - c)
    return c * m, c * c * dm


def _polynomial_moment(coeffs: np.ndarray, c: float) -> float:
    """``int q(l) dmu_G`` for ascending coefficients ``q`` (degree ``< _N_MOMENTS``)."""
    moments = _gram_moments(c)
    if len(coeffs) > len(moments):
        raise ValueError(
            f"the polynomial part of the integrand has degree {len(coeffs) - 1}; "
            f"at most {len(moments) - 1} is supported"
        )
    return sum(qj * moments[j] for j, qj in enumerate(coeffs))


@functools.lru_cache(maxsize=32)
def _pole_data(den: tuple[float, ...], c: float):
    """Roots of ``D`` (ascending coefficients ``den``, degree >= 1) and what the partial fractions need there.  Returns
    ``(roots, D'(roots), D''(roots), m_G(roots), m_G'(roots), amp)``; ``amp`` estimates the error amplification of
    nearly repeated roots (``1 + max|root| / min gap``, a heuristic).  Cached: the callers integrate several numerators
    over one denominator."""
    D = np.asarray(den, dtype=float)
    roots = P_.polyroots(D).astype(np.complex128)
    dD1 = P_.polyder(D)
    for _ in range(2):  # Newton polish (companion-matrix eigenvalues are only backward stable)
        d = P_.polyval(roots, dD1)
        roots = np.where(d != 0, roots - P_.polyval(roots, D) / np.where(d != 0, d, 1.0), roots)
    gaps = np.abs(roots[:, None] - roots[None, :])[~np.eye(roots.size, dtype=bool)]
    if gaps.size and np.min(gaps) == 0:
        raise RepeatedRootError(f"denominator has a repeated root (coefficients {list(den)})")
    lo, hi = gram_support(c)
    real = roots[roots.imag == 0].real
    if np.any((real >= lo) & (real <= hi)) or (c < 1 and np.any(real == 0)):
        raise ValueError(
            f"denominator must have no root on the support of mu_G ([{lo:g}, {hi:g}]"
            f"{' and the atom at 0' if c < 1 else ''}), got roots {roots}"
        )
    mG, dmG = _gram_stieltjes_and_derivative(roots, c)
    amp = 1.0 + (np.max(np.abs(roots)) / np.min(gaps) if gaps.size else 0.0)
    return roots, P_.polyval(roots, dD1), P_.polyval(roots, P_.polyder(D, 2)), mG, dmG, amp


def gram_rational_integral(numerator: Any, denominator: Any, c: float, power: int = 1) -> tuple[float, float]:
    """Exact ``int P(l) / D(l)^power dmu_G(l)`` by partial fractions, with a precision estimate.

    The polynomial part ``q = P // D^power`` is integrated with the moments of ``mu_G`` (module docstring); the proper
    part ``r / D^power`` is expanded over the roots ``w_i`` of ``D``, which must be simple and lie off the support,
    using ``int dmu_G / (l - w) = m_G(w)`` and ``int dmu_G / (l - w)^2 = m_G'(w)``, ``m_G(w) = c m(c w)`` with ``m``
    of :func:`theory.mp_stieltjes` (its branch).  Complex roots come in conjugate pairs for real coefficients; the
    real part of the sum is returned.  No quadrature: accurate at the hard edge (``c = 1``) and for sharply peaked
    integrands (roots close to the support).

    Parameters
    ----------
    numerator : array_like of float
        Ascending coefficients of ``P`` (trailing zeros are trimmed).  ``deg P - power deg D`` must be
        below 16 (the tabulated moments).
    denominator : array_like of float
        Ascending coefficients of ``D`` (trailing zeros are trimmed); a nonzero constant is allowed
        (then the integral is a combination of moments).
    c : float, ``p / n > 0``.
    power : int, ``1`` (``P / D``) or ``2`` (``P / D^2``, via ``m_G'``).

    Returns
    -------
    value : float
        The integral.
    precision : float
        Estimated relative precision of ``value``: ``1e-15 amp (|q part| + sum_i |term_i|) / |value|``, with
        ``amp = 1 + max|w_i| / min_{i != j} |w_i - w_j|`` (cancellation between nearly repeated roots);
        ``1e-16`` when ``D`` is constant, ``0`` when ``P = 0``.  Callers fall back to quadrature when it is poor.

    Raises
    ------
    RepeatedRootError
        (a ``ValueError``) ``D`` has an exactly repeated root (after root polishing).
    ValueError
        ``c <= 0``; ``power`` not 1 or 2; ``D`` the zero polynomial; a real root of ``D`` on ``[l_-, l_+]`` or at the
        atom 0 (``c < 1``), where the integral diverges; a polynomial part of degree 16 or more.  Non-finite
        coefficients make the root finder raise :class:`numpy.linalg.LinAlgError` (also a ``ValueError``).

    Notes
    -----
    The roots' own rounding error (about ``u sum_j |D_j| |w_i|^j / |D'(w_i)|``) is not in ``precision``: for
    clustered roots next to an edge the true error can be one to two orders of magnitude larger.  The callers'
    stopping and fallback rules are calibrated on this estimate.
    """
    if not (c > 0):
        raise ValueError(f"c must be > 0, got {c!r}")
    if power not in (1, 2):
        raise ValueError(f"power must be 1 or 2, got {power!r}")
    c = float(c)
    P = P_.polytrim(np.asarray(numerator, dtype=float), 0.0)
    D = P_.polytrim(np.asarray(denominator, dtype=float), 0.0)
    # polytrim leaves [0.] for a zero polynomial
    if D.size == 1 and D[0] == 0:
        raise ValueError("denominator must not be the zero polynomial")
    if P.size == 1 and P[0] == 0:
        return 0.0, 0.0
    if D.size == 1:  # constant denominator: polynomial integrand
        return float(_polynomial_moment(P, c) / D[0] ** power), 1e-16
    return _partial_fraction_integral(P, D, c, power)


def _partial_fraction_integral(P: np.ndarray, D: np.ndarray, c: float, power: int) -> tuple[float, float]:
    """``(value, precision)`` of :func:`gram_rational_integral` for a trimmed nonzero ``P`` and ``deg D >= 1``."""
    roots, dD, ddD, mG, dmG, amp = _pole_data(tuple(D), c)
    DD = D if power == 1 else P_.polymul(D, D)
    val = 0.0
    if P.size >= DD.size:
        q, P = P_.polydiv(P, DD)
        val = _polynomial_moment(q, c)
    Pr = P_.polyval(roots, P)
    if power == 1:  # sum_i P(w_i) / D'(w_i) m_G(w_i)
        terms = Pr / dD * mG
    else:  # double poles: residue terms with m_G' and m_G
        dPr = P_.polyval(roots, P_.polyder(P)) if P.size > 1 else np.zeros_like(roots)
        terms = Pr / dD**2 * dmG + (dPr / dD**2 - Pr * ddD / dD**3) * mG
    total = val + np.sum(terms)
    scale = abs(val) + np.sum(np.abs(terms))
    precision = 1e-15 * amp * scale / max(abs(total), 1e-300)
    return float(np.real(total)), float(precision)
