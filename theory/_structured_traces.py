"""The numerical core of the structured attention equivalent: the Marchenko-Pastur trace integrals of the null
model's resolvent (exact rational integrals or quadrature), the trace matrices of the spike and signal directions,
and the Woodbury step that turns them into the interpolation error on a gamma grid.

Private: :mod:`theory.structured` solves with it and re-exports :class:`StructuredConvergenceError`.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import numpy.polynomial.polynomial as P_

from ._mp_integrals import RepeatedRootError, gram_rational_integral, gram_support
from ._structured_symbolic import (low_rank_matrix)


class StructuredConvergenceError(RuntimeError):
    """The (delta, delta~) system or the quadrature did not converge."""


# ============================================================================ quadrature on mu_G
@functools.lru_cache(maxsize=64)
def mp_nodes(c: float, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes/weights for ``int g dmu_G``, ``mu_G`` = law of ``Z^T Z / p`` (``n x n``, ``p/n = c``).  Marchenko-Pastur of
    ratio ``r = 1/c``: density ``sqrt((b-l)(l-a)) / (2 pi r l)`` on ``[a, b]``, ``a, b = (1 -+ sqrt r)^2``, plus an atom
    ``1 - c`` at 0 when ``c < 1``.  Gauss-Chebyshev of the second kind (exact for the square-root edges)."""
    if abs(c - 1.0) < 1e-6:  # hard edge at 0 (density ~ l^{-1/2}): Gauss-Jacobi rule of theory.null_system
        from .null_system import _gram_law_quadrature

        return _gram_law_quadrature(c, n_nodes)
    r = 1.0 / c
    a, b = gram_support(c)
    i = np.arange(1, n_nodes + 1)
    th = i * np.pi / (n_nodes + 1)
    u = np.cos(th)
    w = np.pi / (n_nodes + 1) * np.sin(th) ** 2
    mid, half = (a + b) / 2, (b - a) / 2
    x = mid + half * u
    W = w * half**2 / (2 * np.pi * r * x)
    if c < 1:
        x = np.concatenate([[0.0], x])
        W = np.concatenate([[1.0 - c], W])
    return x, W


def denominator_polys(g: float, c: float, a1: float, sf2: float, d0: float, nul: np.ndarray):
    """Ascending coefficients (in ``l``) of ``D(l)`` and of its total ``gamma``-derivative ``D_gamma(l)``."""
    from .null_system import null_denominator

    dl, dt, kp, ddl, ddt, dkp = nul[:6]
    e, de = d0 - a1 - kp, -dkp  # A(l) - kappa = a1 l + e
    D = null_denominator(g, c, a1, sf2, d0, dl, dt, kp)
    Dg = np.array([
        (1 + dl) + g * ddl,
        sf2 * ((1 + dl) * dt + g * ddl * dt + g * (1 + dl) * ddt) + 2 * c * e * de,
        2 * c * a1 * de,
        0.0,
    ])
    return D, Dg


class GramRationalIntegrals:
    """``I_k = int l^k / D dmu_G`` and ``J_k = int l^k D_gamma / D^2 dmu_G`` (``k = 0, 1, 2``), exactly: each is
    :func:`theory._mp_integrals.gram_rational_integral` (shared with :mod:`theory.null_system`; the roots of ``D`` lie
    off the support of ``mu_G`` for ``gamma > 0``, since ``D > 0`` on ``l >= 0``).  ``precision``: its estimate
    (``inf``, with NaN results, for an exactly repeated root); the caller falls back to quadrature when it is poor."""

    def __init__(self, c: float):
        self.c = float(c)
        self.precision = 1e-16

    def __call__(self, D: np.ndarray, Dg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.precision = 1e-16
        I, J = np.empty(3), np.empty(3)
        try:
            for k in range(3):
                lk = np.zeros(k + 1)
                lk[k] = 1.0
                I[k], pI = gram_rational_integral(lk, D, self.c, 1)
                J[k], pJ = gram_rational_integral(P_.polymul(lk, Dg), D, self.c, 2)
                self.precision = max(self.precision, pI, pJ)
        except RepeatedRootError:
            self.precision = np.inf
            return np.full(3, np.nan), np.full(3, np.nan)
        return I, J


class GramQuadratureIntegrals:
    """The same ``I_k, J_k`` by Gauss–Chebyshev quadrature on ``mu_G`` (:func:`mp_nodes`)."""

    precision = 1e-14

    def __init__(self, c: float, n_nodes: int):
        self.l, self.w = mp_nodes(float(c), int(n_nodes))

    def __call__(self, D: np.ndarray, Dg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Dv, Dgv = P_.polyval(self.l, D), P_.polyval(self.l, Dg)
        pows = np.stack([np.ones_like(self.l), self.l, self.l**2])
        return pows / Dv @ self.w, pows * Dgv / Dv**2 @ self.w


#: relative precision of the exact integrals below which the quadrature fallback is used
EXACT_PRECISION_LIMIT = 1e-9


def trace_integrals(D, Dg, exact, quad):
    """``(I, dI/dgamma)`` from the exact integrator, or the quadrature one when partial fractions cancel."""
    if exact is not None:
        I, J = exact(D, Dg)
        if exact.precision <= EXACT_PRECISION_LIMIT and np.all(np.isfinite(I)) and np.all(np.isfinite(J)):
            return I, -J
    I, J = quad(D, Dg)
    return I, -J


def trace_matrix(g: float, c: float, a1: float, sf2: float, d0: float, nul: np.ndarray, I: np.ndarray,
                  dI: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Trace matrix ``T`` and ``dT/dgamma`` from the null unknowns and ``I_k = int l^k / D`` (Step 4).

    ``A(l) - kappa = a1 l + e``, ``e = d0 - a1 - kappa``::

        T11 = delta~,  T12 = a1 I1 + e I0,  T13 = a1 I2 + e I1,
        T22 = gamma (1 + delta) s_f^2 delta~ I0 / c + a1^2 I2 + 2 a1 e I1 + e^2 I0,
        T23 = (1 - gamma delta~) / c,  T33 = (1 - gamma (1 + delta) I1) / c.

    Derivatives by the product rule with the total derivatives of ``delta, delta~, kappa, I_k``.
    """
    dl, dt, kp, ddl, ddt, dkp = nul[:6]
    e, de = d0 - a1 - kp, -dkp
    I0, I1, I2 = I
    dI0, dI1, dI2 = dI
    T11, dT11 = dt, ddt
    T12, dT12 = a1 * I1 + e * I0, a1 * dI1 + e * dI0 + de * I0
    T13, dT13 = a1 * I2 + e * I1, a1 * dI2 + e * dI1 + de * I1
    h = g * (1 + dl) * dt * I0  # gamma (1 + delta) delta~ I0
    dh = (1 + dl) * dt * I0 + g * ddl * dt * I0 + g * (1 + dl) * ddt * I0 + g * (1 + dl) * dt * dI0
    T22 = sf2 * h / c + a1 * a1 * I2 + 2 * a1 * e * I1 + e * e * I0
    dT22 = sf2 * dh / c + a1 * a1 * dI2 + 2 * a1 * (de * I1 + e * dI1) + 2 * e * de * I0 + e * e * dI0
    T23, dT23 = (1 - g * dt) / c, -(dt + g * ddt) / c
    T33 = (1 - g * (1 + dl) * I1) / c
    dT33 = -((1 + dl) * I1 + g * ddl * I1 + g * (1 + dl) * dI1) / c
    T = np.array([[T11, T12, T13], [T12, T22, T23], [T13, T23, T33]])
    dT = np.array([[dT11, dT12, dT13], [dT12, dT22, dT23], [dT13, dT23, dT33]])
    return T, dT


#: condition number of the equilibrated trace matrix above which :func:`woodbury` uses the direct form (the inverse
#: form then loses more than about 1e-8 relative)
TRACE_COND_LIMIT = 1e8


def woodbury(T, dT, m, A, c):
    """``y^T Q y/n`` and its gamma-derivative from the trace matrix (Step 3).

    ``b = T[0] (x) m`` is ``w^T Omega`` with ``w = e_1 (x) Gamma^{-1} m`` (``Omega = T (x) Gamma``), so that
    ``Omega C (I + Omega C)^{-1} = I - (I + Omega C)^{-1}`` and ``(I + Omega C)^{-1} Omega = X = (Omega^{-1} + C)^{-1}``
    give::

        y^T Q y / n = T11 / (1 + |m|^2) + w^T X w,
        d/dgamma    = dT11 / (1 + |m|^2) + (X^T w)^T ((T^{-1} dT T^{-1}) (x) Gamma^{-1}) (X w).

    This form keeps the digits at small ``gamma`` (``c < 1``), where ``T`` has entries of order ``1 / gamma``: the
    direct form, :func:`woodbury_direct`, loses about ``1e-16 / gamma`` relative.  Where ``T`` is (nearly) singular
    (condition number of its equilibrated form above :data:`TRACE_COND_LIMIT`, e.g. ``a1 = 0``, where two of its rows
    are equal) the direct form is used.
    """
    if not np.any(m):  # no signal direction: y^T Q y / n = T11 exactly
        return T[0, 0], dT[0, 0]
    k = m.size
    Gam = np.outer(m, m) + np.eye(k)
    C = low_rank_matrix(A, Gam, c)
    scale = 1.0 / np.sqrt(np.where(np.diag(T) > 0, np.diag(T), 1.0))  # equilibration: T_n = D T D, unit diagonal
    Tn = T * np.outer(scale, scale)
    if not np.linalg.cond(Tn) <= TRACE_COND_LIMIT:  # T (nearly) singular, e.g. a1 = 0: T^{-1} is not usable
        return woodbury_direct(T, dT, m, Gam, C, A)
    Ti = np.linalg.inv(Tn) * np.outer(scale, scale)
    Gi = np.linalg.inv(Gam)  # Gamma = I + m m^T: eigenvalues >= 1
    Mx = np.kron(Ti, Gi) + C
    w = np.kron(np.eye(3)[0], Gi @ m)
    try:
        Xw, Xtw = np.linalg.solve(Mx, w), np.linalg.solve(Mx.T, w)
    except np.linalg.LinAlgError:  # then I + Omega C = Omega (Omega^{-1} + C) is singular too: the direct form says so
        return woodbury_direct(T, dT, m, Gam, C, A)
    s = 1.0 / (1.0 + m @ m)
    return T[0, 0] * s + w @ Xw, dT[0, 0] * s + Xtw @ np.kron(Ti @ dT @ Ti, Gi) @ Xw


def woodbury_direct(T, dT, m, Gam, C, A):
    """:func:`woodbury` as ``T11 - b C (I + Omega C)^{-1} b^T`` (and its derivative): the fallback."""
    k = m.size
    Om, dOm = np.kron(T, Gam), np.kron(dT, Gam)
    b, db = np.kron(T[0], m), np.kron(dT[0], m)
    try:
        S = np.linalg.inv(np.eye(3 * k) + Om @ C)
    except np.linalg.LinAlgError:
        raise StructuredConvergenceError("singular Woodbury matrix I + Omega C (degenerate kernel constants: "
                                         f"a1={A[0, 0]:g}, traces T11={T[0, 0]:g})") from None
    CS = C @ S
    corr = b @ CS @ b
    dcorr = 2 * db @ CS @ b - b @ CS @ dOm @ CS @ b
    return T[0, 0] - corr, dT[0, 0] - dcorr


def error_on_grid(gam: np.ndarray, consts: tuple[float, float, float, float], nul: np.ndarray, m: np.ndarray,
                   A: np.ndarray, integrator_exact: Any, quad: Any) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """``E``, ``yQy``, ``E0`` and the trace matrices on the ``gamma`` grid (Steps 3-5), one integrator."""
    c, a1, sf2, d0 = consts
    out = {k: np.empty(gam.size) for k in ("E", "yQy", "E0")}
    Ts = np.empty((gam.size, 3, 3))
    for i, g in enumerate(gam):
        D, Dg = denominator_polys(float(g), c, a1, sf2, d0, nul[i])
        I, dI = trace_integrals(D, Dg, integrator_exact, quad)
        T, dT = trace_matrix(float(g), c, a1, sf2, d0, nul[i], I, dI)
        yqy, dyqy = woodbury(T, dT, m, A, c)
        out["E"][i], out["yQy"][i], out["E0"][i] = -g * g * dyqy, yqy, -g * g * dT[0, 0]
        Ts[i] = T
    return out, Ts
