"""The null system of paper B's attention (no signal, ``W = I``): its equations, integrators, solver and derivatives.

The one home of the corrected (symmetric kernel noise) null system; :mod:`theory.attention` and
:mod:`theory.structured` are built on it.  Derivation (the project's own; it *corrects* the first reconstruction's
system) and the simulations that decide between the two: ``docs/structured_attention.md``, section 4.

``X = Z`` standard Gaussian ``p x n``, ``c = p/n``, ``f`` centred with ``a1 = E[xi f]``, ``s_f^2 = nu - a1^2``,
kernel ``K = f(X^T X / sqrt p) / sqrt p``, ``Phi = X K``; for labels independent of ``X`` the interpolation error
is ``E = gamma^2 d/dz delta~(z)`` at ``z = -gamma``.  With ``A(l) = a1 (l - 1) + d0`` (``d0``: 0 with the diagonal
removed, ``lim f(t)/t`` kept, :func:`kept_diagonal` at a finite ``p``)::

    D(l)  = -z (1 + delta)(1 + delta~ s_f^2 l) + c l (A(l) - kappa)^2
    delta  = s_f^2 int l (1 + delta) / D dmu_G,     delta~ = int (1 + delta~ s_f^2 l) / D dmu_G,
    kappa  = s_f^2 int l (A(l) - kappa) / D dmu_G,

``mu_G``: Marchenko–Pastur of ratio ``1/c`` plus an atom ``1 - c`` at 0 when ``c < 1``.  ``kappa = 0`` is the first
reconstruction (``system="spec"``, exact for non-symmetric kernel noise).

Numerics: the equations are sympy expressions (:func:`null_system_equations`); integrals against ``mu_G`` are exact
partial fractions (``method="exact"``, default) or Gauss–Jacobi quadrature (``method="quadrature"``); damped Newton
in ``(log delta, log delta~, kappa)`` with continuation from large ``gamma``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.polynomial.polynomial as P_
import scipy.special
import scipy.stats
import sympy as sp

from ._mp_integrals import RepeatedRootError, gram_rational_integral, gram_support
from .validation import ArgumentTypeError, as_array, as_float, check_size, describe
from .activations import ActivationLike, activation_asymptotic_slope, check_activation, numpy_activation
from ._solver_domain import (C_RANGE, GAMMA_RANGE, KERNEL_CONSTANT_MAX, SolverOptions, check_grid,
                             checked_solver_options)

__all__ = ["solve_null_system", "solve_null_system_full", "null_system_equations", "kept_diagonal", "NullSolution"]

# symbols of the null system
_l = sp.Symbol("l", nonnegative=True)
_z = sp.Symbol("z")
_dl = sp.Symbol("delta", positive=True)
_dt = sp.Symbol("delta_tilde", positive=True)
_kp = sp.Symbol("kappa", real=True)
_c = sp.Symbol("c", positive=True)
_a1 = sp.Symbol("a1", real=True)
_sf2 = sp.Symbol("s_f2", nonnegative=True)
_d0 = sp.Symbol("d0", real=True)
SYSTEM_SYMBOLS = (_l, _z, _dl, _dt, _kp, _c, _a1, _sf2, _d0)
_VARS = (_dl, _dt, _kp, _z)  # order of the derivative blocks


@functools.lru_cache(maxsize=1)
def null_system_equations() -> dict[str, sp.Expr]:
    """Sympy expressions of the null system (see the module docstring).

    Returns
    -------
    dict with keys ``"A"`` (``A(l)``), ``"D"`` (common denominator), ``"t"``, ``"t_tilde"``, and the
    integrands ``"g1"`` (``s_f^2 l t``, integrated into ``delta``), ``"g2"`` (``t~``, into
    ``delta~``) and ``"g3"`` (``s_f^2 l (A - kappa)/D``, into ``kappa``), in the symbols
    ``l, z, delta, delta_tilde, kappa, c, a1, s_f2, d0``.  The first reconstruction's system is ``kappa = 0``.
    """
    A = _a1 * (_l - 1) + _d0
    Ae = A - _kp
    t = 1 / (-_z * (1 + _dt * _sf2 * _l) + _c * _l * Ae**2 / (1 + _dl))
    tt = 1 / (-_z * (1 + _dl) + _c * _l * Ae**2 / (1 + _dt * _sf2 * _l))
    D = -_z * (1 + _dl) * (1 + _dt * _sf2 * _l) + _c * _l * Ae**2
    return {"A": A, "D": D, "t": t, "t_tilde": tt, "g1": _sf2 * _l * t, "g2": tt, "g3": _sf2 * _l * Ae / D}


@functools.lru_cache(maxsize=1)
def _numeric_system():
    """Values ``g1, g2, g3`` then their derivatives in ``delta, delta~, kappa, z`` (15 expressions), lambdified."""
    eq = null_system_equations()
    gs = [eq["g1"], eq["g2"], eq["g3"]]
    out = list(gs)
    for var in _VARS:
        out += [sp.diff(g, var) for g in gs]
    return sp.lambdify(SYSTEM_SYMBOLS, out, modules="numpy", cse=True)


@functools.lru_cache(maxsize=64)
def _gram_law_quadrature(c: float, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights (summing to 1) of a quadrature rule for ``mu_G`` (law of ``G = Z^T Z / p``, ``c = p/n``).
    Continuous part: ``l = l_mid + l_half u``, density ``c l_half^2 sqrt(1-u^2) / (2 pi l)`` per ``du``; Gauss–Jacobi
    with weight ``(1-u)^{1/2}(1+u)^{-1/2}`` and the smooth factor ``c l_half^2 (1+u) / (2 pi l)`` (bounded, also at
    ``c = 1`` where ``l_- = 0``).  Atom ``1 - c`` at ``l = 0`` prepended when ``c < 1``.  ``c`` a checked float,
    ``n_nodes`` a checked int (SciPy's Gauss-Jacobi weights turn NaN above about 15 000 nodes).  The arrays are cached
    and shared: do not modify them."""
    lo, hi = gram_support(c)
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    u, w = scipy.special.roots_jacobi(int(n_nodes), 0.5, -0.5)
    nodes = mid + half * u
    with np.errstate(all="ignore"):  # degenerate c (outside the solvers' domain): non-finite weights
        weights = w * c * half**2 * (1 + u) / (2 * np.pi * nodes)
        weights *= min(c, 1.0) / weights.sum()  # exact mass of the continuous part (roundoff ~1e-12)
    if c < 1:
        nodes = np.concatenate([[0.0], nodes])
        weights = np.concatenate([[1.0 - c], weights])
    return nodes, weights


@dataclass
class NullSolution:
    """Solution of the null system at one real ``z < 0``.

    ``kappa`` is 0 for ``system="spec"``; derivatives are ``d/dz`` by implicit differentiation.
    """

    z: float
    delta: float
    delta_tilde: float
    kappa: float
    ddelta_dz: float
    ddelta_tilde_dz: float
    dkappa_dz: float
    iterations: int
    residual: float


# --------------------------------------------------------------------------- integrators
class QuadratureIntegrator:
    """Integrals of the 15 integrands against ``mu_G`` by Gauss–Jacobi quadrature."""

    precision = 1e-16

    def __init__(self, c: float, n_nodes: int):
        self.nodes, self.weights = _gram_law_quadrature(float(c), int(n_nodes))

    def __call__(self, z, dl, dt, kp, c, a1, sf2, d0):
        vals = _numeric_system()(self.nodes, z, dl, dt, kp, c, a1, sf2, d0)
        return np.array([np.dot(self.weights, np.broadcast_to(v, self.nodes.shape)) for v in vals], dtype=float)


@functools.lru_cache(maxsize=1)
def _rational_system():
    """The 15 integrands as rational functions of ``l``: lambdified ascending coefficient lists of
    a numerator ``P`` and a denominator ``D0`` with the power ``k`` (integrand ``P / D0^k``).
    Built from :func:`null_system_equations` by sympy (``together``, ``diff``, ``Poly``)."""
    eq = null_system_equations()
    others = SYSTEM_SYMBOLS[1:]
    parts = []
    for g in (eq["g1"], eq["g2"], eq["g3"]):
        N, D = sp.fraction(sp.together(g))
        parts.append((sp.expand(N), sp.expand(D)))
    items = [(N, D, 1) for N, D in parts]
    for var in _VARS:
        for N, D in parts:
            items.append((sp.expand(sp.diff(N, var) * D - N * sp.diff(D, var)), D, 2))
    out = []
    for P, D, k in items:
        pc = sp.Poly(P, _l).all_coeffs()[::-1] if P != 0 else [sp.Integer(0)]
        dc = sp.Poly(D, _l).all_coeffs()[::-1]
        out.append((sp.lambdify(others, pc, modules="numpy"), sp.lambdify(others, dc, modules="numpy"), k))
    return out


def null_denominator(gamma: float, c: float, a1: float, sf2: float, d0: float, delta: float, delta_tilde: float,
                      kappa: float) -> np.ndarray:
    """Ascending coefficients (in ``l``) of ``D(l) = gamma (1 + delta)(1 + s_f^2 delta~ l) + c l (A(l) - kappa)^2``.

    ``A(l) - kappa = a1 l + e`` with ``e = d0 - a1 - kappa``; ``z = -gamma``. Shared with :mod:`theory.structured`
    (trace integrals ``int l^k / D dmu_G``).
    """
    e = d0 - a1 - kappa
    g1 = gamma * (1 + delta)
    return np.array([g1, g1 * delta_tilde * sf2 + c * e * e, 2 * c * a1 * e, c * a1 * a1])


class _ExactIntegrator:
    """Exact integrals of the (rational) integrands against ``mu_G`` by partial fractions: every integrand and each of
    its derivatives is ``P(l) / D(l)^k`` (``k = 1`` for values, 2 for derivatives; :func:`_rational_system`), and ``D``
    (the module docstring's, up to a constant) is ``> 0`` on ``l >= 0`` for ``z < 0``, so its roots lie off the support
    of ``mu_G``.  Each integral is :func:`theory._mp_integrals.gram_rational_integral`: accurate at the hard edge of
    ``mu_G`` (``c = 1``) and for the sharply peaked integrands of ``gamma -> 0`` (width ``~gamma^{1/4}`` where
    ``A = kappa``)."""

    def __init__(self, c: float):
        self.c = float(c)
        self.precision = 1e-16  # relative precision estimate of the last evaluation

    def __call__(self, z, dl, dt, kp, c, a1, sf2, d0):
        args = (z, dl, dt, kp, c, a1, sf2, d0)
        self.precision = 1e-16
        out = np.empty(15)
        for i, (pfun, dfun, k) in enumerate(_rational_system()):
            P = np.array(np.broadcast_arrays(*pfun(*args)), dtype=float).ravel()
            D = np.array(np.broadcast_arrays(*dfun(*args)), dtype=float).ravel()
            try:
                out[i], precision = gram_rational_integral(P, D, self.c, k)
            except RepeatedRootError as exc:
                raise RuntimeError("null attention system: repeated root in the partial fractions") from exc
            self.precision = max(self.precision, precision)
        return out


class _HybridIntegrator:
    """Exact partial fractions, except where they lose precision.  Partial fractions cancel when ``D`` has nearly
    repeated roots; that happens when they sit far from the support of ``mu_G`` (e.g. ``A(l) = kappa`` at ``l < 0``,
    relu with the diagonal kept), where the integrands are smooth on the support and Gauss–Jacobi quadrature
    (``n_nodes``, at least 400) is accurate.  Nearly repeated roots *inside* or next to the support (``gamma -> 0`` with
    ``A = kappa`` on the support) are split by ``~gamma^{1/4}``: there the exact evaluation is kept (quadrature would be
    worse) and its precision estimate governs the Newton tolerance."""

    def __init__(self, c: float, n_nodes: int):
        self.exact = _ExactIntegrator(c)
        self.quad = QuadratureIntegrator(c, max(int(n_nodes), 400))
        self.lo, self.hi = gram_support(float(c))
        self.precision = 1e-16

    def __call__(self, z, dl, dt, kp, c, a1, sf2, d0):
        out = self.exact(z, dl, dt, kp, c, a1, sf2, d0)
        self.precision = self.exact.precision
        if self.precision > 1e-11:
            # distance of the nearly repeated roots of D from the continuous support [lo, hi]
            D = null_denominator(-z, c, a1, sf2, d0, dl, dt, kp)
            roots = P_.polyroots(P_.polytrim(D, 0.0)) if np.any(D[1:]) else np.array([])
            if roots.size < 2:
                return out
            gaps = np.abs(roots[:, None] - roots[None, :]) + np.diag(np.full(roots.size, np.inf))
            i, j = np.unravel_index(np.argmin(gaps), gaps.shape)
            pair = roots[[i, j]]  # the nearly repeated pair responsible for the cancellation
            dist = np.abs(pair - np.clip(pair.real, self.lo, self.hi))
            if np.min(dist) > 0.1 * (self.hi - self.lo):
                out = self.quad(z, dl, dt, kp, c, a1, sf2, d0)
                self.precision = 1e-14
        return out


# --------------------------------------------------------------------------- solver
class NullConstants(NamedTuple):
    """The constants of the null system: ``c = p / n`` and the kernel's ``a1``, ``s_f^2``, ``d0`` (floats)."""

    c: float
    a1: float
    sf2: float
    d0: float


def _newton(z, guess, consts: NullConstants, integ, tol, max_iter, full):
    """Damped Newton on ``R(x) = (log delta - log I1, log delta~ - log I2, kappa - I3)``.  ``full=False`` (the first
    reconstruction's system) keeps ``kappa = 0`` and solves the first two equations. Returns
    ``(delta, delta_tilde, kappa, iterations, max |R|)``."""
    c, a1, sf2, d0 = consts
    k = 3 if full else 2
    x = np.array([np.log(guess[0]), np.log(guess[1]), guess[2] if full else 0.0])

    def resid(xv):
        dl, dt, kp = np.exp(xv[0]), np.exp(xv[1]), xv[2]
        I = integ(z, dl, dt, kp, c, a1, sf2, d0)
        if I[0] <= 0 or I[1] <= 0 or not np.all(np.isfinite(I)):
            return None, I
        return np.array([xv[0] - np.log(I[0]), xv[1] - np.log(I[1]), xv[2] - I[2] if full else 0.0]), I

    R, I = resid(x)
    if R is None:
        raise RuntimeError(f"null attention system did not converge at gamma={-z:g}: non-positive or non-finite "
                           f"integrals at the initial guess (delta, delta~, kappa) = {tuple(guess)} (residual inf)")
    its = 0
    for its in range(1, max_iter + 1):
        norm = float(np.max(np.abs(R)))
        # the residual cannot go below the precision of the integrals (partial-fraction cancellation)
        if norm < max(tol, 100 * integ.precision):
            break
        dl, dt = np.exp(x[0]), np.exp(x[1])
        # dI_i/dx_j; I[3:6] d/ddelta, I[6:9] d/ddelta~, I[9:12] d/dkappa
        dI = np.array([I[3:6] * dl, I[6:9] * dt, I[9:12]]).T  # rows: I1, I2, I3; cols: log dl, log dt, kappa
        J = np.eye(3) - np.array([dI[0] / I[0], dI[1] / I[1], dI[2]])
        J, Rk = J[:k, :k], R[:k]
        try:
            step = np.linalg.solve(J, -Rk)
        except np.linalg.LinAlgError:
            step = -Rk
        if not np.all(np.isfinite(step)):
            step = -Rk
        step = np.concatenate([np.clip(step, -3.0, 3.0), np.zeros(3 - k)])
        lam = 1.0
        while lam >= 1.0 / 64:
            Rn, In = resid(x + lam * step)
            if Rn is not None and np.max(np.abs(Rn)) < norm:
                x = x + lam * step
                break
            lam /= 2
        else:  # no step accepted: fall back to a damped fixed-point step
            xn = x - 0.5 * R
            Rn, In = resid(xn)
            if Rn is None:
                break
            x = xn
        R, I = Rn, In
    res = float(np.max(np.abs(R))) if R is not None else np.inf
    if res < 100 * integ.precision:  # converged to the attainable precision
        res = min(res, tol / 2)
    return np.exp(x[0]), np.exp(x[1]), float(x[2]), its, res


def _solve_sorted(zs: np.ndarray, consts: NullConstants, options: SolverOptions) -> list[NullSolution]:
    """Solve at every ``z`` (all < 0) by continuation in ``log gamma`` from large ``gamma``.  Steps of at most a factor
    4 in ``gamma``, initial guesses by linear extrapolation of ``(log delta, log delta~, kappa)`` in ``log gamma``, step
    shrunk on a failed Newton solve."""
    c, a1, sf2, d0 = consts
    system, method, n_nodes, tol, max_iter = options
    integ = (QuadratureIntegrator if method == "quadrature" else _HybridIntegrator)(c, n_nodes)
    full = system == "symmetric"
    order = np.argsort(zs)  # z = -gamma: largest gamma (most negative z) first
    sols: dict[int, NullSolution] = {}
    g0 = max(10.0, 4 * float(-zs.min())) if zs.size else 10.0
    hist: list[np.ndarray] = []  # rows (log gamma, log delta, log delta~, kappa) along the path

    def guess_at(lg: float) -> tuple[float, float, float]:
        if not hist:
            g = np.exp(lg)
            return sf2 / g, 1.0 / g, 0.0
        h = hist[-1]
        if len(hist) > 1 and hist[-2][0] != h[0]:  # linear extrapolation from the last two path points
            h = h + (lg - h[0]) / (h[0] - hist[-2][0]) * (h - hist[-2])
        return float(np.exp(h[1])), float(np.exp(h[2])), float(h[3])

    def solve_at(lg: float):
        return _newton(-np.exp(lg), guess_at(lg), consts, integ, tol, max_iter, full)

    def fail(g, res, its, why=""):
        raise RuntimeError(f"null attention system did not converge at gamma={g:g} (c={c:g}, a1={a1:g}, "
                           f"s_f^2={sf2:g}, d0={d0:g}, system={system!r}): residual {res:.2e} after {its} Newton "
                           f"steps" + (f" ({why})" if why else ""))

    for idx in order:
        z = float(zs[idx])
        gamma = -z
        if sf2 == 0.0:
            # linear activation: delta = kappa = 0 and delta~ is an explicit integral
            I = integ(z, 0.0, 0.0, 0.0, c, a1, 0.0, d0)
            sols[idx] = _checked_solution(fail, z, 0.0, float(I[1]), 0.0, 0.0, float(I[13]), 0.0, 0, 0.0)
            continue
        lt = np.log(gamma)
        if not hist:
            lg0 = np.log(g0)
            dl, dt, kp, its, res = solve_at(lg0)
            if not res < tol:
                fail(g0, res, its)
            hist.append(np.array([lg0, np.log(dl), np.log(dt), kp]))
        lcur = hist[-1][0]
        step = np.log(4.0)
        while lcur > lt:
            lnext = max(lt, lcur - step)
            dl, dt, kp, its, res = solve_at(lnext)
            if res < tol and np.isfinite(dl) and np.isfinite(dt):
                hist.append(np.array([lnext, np.log(dl), np.log(dt), kp]))
                lcur = lnext
                step = min(step * 1.5, np.log(4.0))
            else:
                step /= 2
                if step < np.log(1.001):
                    fail(np.exp(lnext), res, its)
        if hist[-1][0] != lt:  # target above the last path point (duplicates in the grid)
            dl, dt, kp, its, res = solve_at(lt)
            if not res < tol:
                fail(gamma, res, its)
        else:
            dl, dt, kp = float(np.exp(hist[-1][1])), float(np.exp(hist[-1][2])), float(hist[-1][3])
            its, res = 0, 0.0
        I = integ(z, dl, dt, kp, c, a1, sf2, d0)
        res = max(abs(np.log(dl / I[0])), abs(np.log(dt / I[1])), abs(kp - I[2]) if full else 0.0)
        if not res < 1e3 * max(tol, integ.precision):
            fail(gamma, res, its)
        try:
            dx = _implicit_derivative(I, 3 if full else 2)
        except np.linalg.LinAlgError:  # singular Jacobian: reported with the residual reached
            fail(gamma, res, its, "singular Jacobian of the implicit differentiation")
        sols[idx] = _checked_solution(fail, z, dl, dt, kp, float(dx[0]), float(dx[1]), float(dx[2]), its, res)
    return [sols[i] for i in range(zs.size)]


def _implicit_derivative(I: np.ndarray, k: int) -> np.ndarray:
    """``dx/dz`` by implicit differentiation of ``F(x, z) = x - I(x, z)``, ``x = (delta, delta~, kappa)``
    (the first ``k`` unknowns; ``kappa``'s derivative stays 0 for the first reconstruction's system, ``k = 2``)."""
    dIdx = np.array([I[3:6], I[6:9], I[9:12]]).T  # rows: I1..I3; cols: delta, delta~, kappa
    dIdz = I[12:15]
    dx = np.zeros(3)
    dx[:k] = np.linalg.solve(np.eye(k) - dIdx[:k, :k], dIdz[:k])
    return dx


def _checked_solution(fail, z: float, *values: Any) -> NullSolution:
    """:class:`NullSolution` of finite solver values; ``fail(gamma, res, its, why)`` (a RuntimeError) otherwise."""
    if not all(np.isfinite(v) for v in values):
        fail(-z, values[-1], values[-2], "non-finite solution or derivative")
    return NullSolution(z, *values)


def _validate_system(z: Any, c: Any, a1: Any, sf2: Any, d0: Any) -> np.ndarray:
    """Checked ``z`` grid (float64) of the null solver; the solver domain of the module constants."""
    as_float("c", c, low=C_RANGE[0], high=C_RANGE[1])
    k = KERNEL_CONSTANT_MAX
    as_float("sf2", sf2, low=0, high=k * k)
    for name, v in (("a1", a1), ("d0", d0)):
        as_float(name, v, low=-k, high=k)
    zs = as_array("z", z, low=-GAMMA_RANGE[1], high=-GAMMA_RANGE[0])
    check_grid("z", zs.size)
    if float(a1) == 0.0 and float(d0) == 0.0 and float(sf2) == 0.0:
        raise ValueError("a1, d0 and sf2 are all zero: the kernel vanishes")
    return zs


#: the options of :func:`solve_null_system_full` and their defaults
_NULL_OPTIONS = {"system": "symmetric", "method": "exact", "n_nodes": 160, "tol": 1e-12, "max_iter": 100,
                 "maxiter": None}


def solve_null_system_full(z: Any, c: float, a1: float, sf2: float, d0: float = 0.0,
                           **options: Any) -> list[NullSolution]:
    """Solve the null system at real ``z < 0`` and return one :class:`NullSolution` per ``z``.

    Parameters
    ----------
    z : ``-gamma``; number or array of numbers in ``[-1e30, -1e-30]`` (flattened; at most
        ``Limits.max_grid_size`` points).
    c : ``p / n`` in ``[1e-4, 1e4]``.
    a1, sf2 : Hermite data of the centred activation (``sf2 = nu - a1^2 >= 0``); ``|a1| <= 1e6``, ``sf2 <= 1e12``.
    d0 : diagonal constant of ``A(l) = a1 (l - 1) + d0`` (0: diagonal removed); ``|d0| <= 1e6``.
    **options
        Keywords, checked (an unknown one is refused):
    system : ``"symmetric"`` (default: the corrected system, symmetric kernel noise; alias ``"corrected"``) or
        ``"spec"`` (the first reconstruction, ``kappa = 0``; exact for non-symmetric noise).
    method : ``"exact"`` (default: partial fractions against the exact Stieltjes transform of
        ``mu_G``) or ``"quadrature"`` (Gauss–Jacobi on the MP support plus the atom).  They agree to
        ~1e-13 for moderate ``gamma``; quadrature loses accuracy as ``gamma -> 0`` (peaks of width
        ``~gamma^{1/4}`` where ``A(l) = kappa``) and near ``c = 1`` (hard edge of ``mu_G``).
    n_nodes : Gauss–Jacobi nodes (quadrature; the hybrid fallback uses at least 400), an integer in
        ``[16, Limits.max_quadrature_nodes]``.
    tol : residual required of Newton, in ``(0, 1e-3]``.
    max_iter : Newton steps per continuation point, in ``[1, Limits.max_iterations]``; ``maxiter`` is an alias
        (it wins when given), the spelling of :meth:`theory.AttentionModel.solve`.

    Raises
    ------
    ValueError
        Invalid arguments (``ArgumentTypeError``, also a ``TypeError``, for a wrong type).
    RuntimeError
        No convergence; the message gives ``gamma`` and the residual reached.
    """
    unknown = sorted(set(options) - set(_NULL_OPTIONS))
    if unknown:
        raise ArgumentTypeError(f"{unknown[0]} is not an option of solve_null_system_full; the options are "
                                f"{tuple(_NULL_OPTIONS)}")
    o = {**_NULL_OPTIONS, **options}
    checked = checked_solver_options(o["system"], o["method"], o["n_nodes"], o["tol"], o["max_iter"], o["maxiter"],
                                     names=("max_iter", "maxiter"))
    zs = _validate_system(z, c, a1, sf2, d0)
    return _solve_sorted(np.atleast_1d(zs).ravel(), NullConstants(float(c), float(a1), float(sf2), float(d0)), checked)


def solve_null_system(z: Any, c: float, a1: float, sf2: float, d0: float = 0.0, **options: Any) -> tuple[Any, Any]:
    """``(delta, delta~)`` of the null system at real ``z < 0`` (scalar or array).

    Options as in :func:`solve_null_system_full` (``system``, ``method``, ``n_nodes``, ``tol``, ``max_iter`` /
    ``maxiter``). Returns floats, or arrays of the shape of ``z``.
    """
    return _solution_fields(z, c, a1, sf2, d0, ("delta", "delta_tilde"), options)


def _solution_fields(z: Any, c: float, a1: float, sf2: float, d0: float, names: tuple[str, str],
                     options: dict) -> tuple[Any, Any]:
    """Two fields of the :class:`NullSolution` at each ``z``: floats for a scalar ``z``, else arrays of its shape."""
    sols = solve_null_system_full(z, c, a1, sf2, d0, **options)
    zs = np.asarray(z)
    out = tuple(np.array([getattr(s, n) for s in sols]).reshape(zs.shape) for n in names)
    return (float(out[0]), float(out[1])) if zs.ndim == 0 else out


# --------------------------------------------------------------------------- kernel diagonal
def _null_kernel_diagonal(activation: ActivationLike, diagonal: Any) -> float:
    """``d0`` of ``A(l) = a1 (l - 1) + d0`` of a checked activation: 0 (``"removed"``), ``lim f(t)/t`` (``"kept"``)
    or the number (``diagonal`` checked by :func:`diagonal_constant`)."""
    return diagonal_constant(diagonal, lambda: activation_asymptotic_slope(activation))


def diagonal_constant(diagonal: Any, kept: Any) -> float:
    """``d0`` of a ``diagonal`` argument; ``kept()`` gives it for ``"kept"``."""
    what = "'removed', 'kept' or a finite real number"
    if isinstance(diagonal, str):
        key = diagonal.lower()
        if key == "removed":
            return 0.0
        if key == "kept":
            return kept()
        raise ValueError(f"diagonal must be {what}, got {describe(diagonal)}")
    if isinstance(diagonal, (bool, np.bool_)) or not isinstance(diagonal, (int, float, np.integer, np.floating)):
        raise ArgumentTypeError(f"diagonal must be {what}, got {describe(diagonal)} of type {type(diagonal).__name__}")
    return as_float("diagonal", diagonal, low=-KERNEL_CONSTANT_MAX, high=KERNEL_CONSTANT_MAX)


def kept_diagonal(activation: ActivationLike, p: int) -> float:
    """Finite-``p`` kept diagonal ``d0(p) = E f(||x||^2 / sqrt p) / sqrt p``, ``||x||^2 ~ chi^2_p``.

    ``f`` is the centred activation. Tends to ``lim f(t)/t`` (``diagonal="kept"`` of :class:`theory.AttentionModel`)
    like ``p^{-1/2}``: e.g. relu ``1 - a0/sqrt p``, tanh ``~1/sqrt p``. Pass the result as ``diagonal=`` to
    :class:`theory.AttentionModel` to compare with a simulation at that ``p``.
    """
    check_activation(activation, "activation")
    p = check_size("p", p, 1, "max_dimension")
    f = numpy_activation(activation, centered=True)
    u, w = np.polynomial.hermite_e.hermegauss(80)
    w = w / w.sum()
    # chi^2_p quantiles through a Gauss-Hermite rule on the normal scores (smooth in u)
    lower = scipy.stats.chi2.ppf(scipy.stats.norm.cdf(np.minimum(u, 0.0)), df=int(p))
    upper = scipy.stats.chi2.isf(scipy.stats.norm.sf(np.maximum(u, 0.0)), df=int(p))
    s = np.where(u < 0, lower, upper)
    return float(np.dot(w, f(s / np.sqrt(p))) / np.sqrt(p))
