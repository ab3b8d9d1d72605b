"""Paper B, structured case: attention interpolation error with signal and spiked weights.

*Derived by the project* (the paper's 9x9 system was not recovered); full derivation, step by step,
in ``docs/structured_attention.md``. Summary:

Model and scaling
-----------------
``X = mu y^T + Z`` (``p x n``, ``p/n -> c``), ``K = f(X^T W X/sqrt p)/sqrt p``, ``W = I + w_K w_Q^T``,
``Phi = X K``, ``Q = (Phi^T Phi/n + gamma)^{-1}``, ``E = gamma^2/n y^T Q^2 y = -gamma^2 d/dgamma (y^T Q y/n)``.
``||mu||^2 = snr``, ``||w_K||``, ``||w_Q||`` are ``O(1)`` (do not grow with ``p``): every signal/spike term
of ``X^T W X / p`` is then a rank-``<= 3`` matrix of ``O(1)`` operator norm.

Step 1 (linearised kernel, as first reconstructed; Gaussian equivalence, checked by simulation)::

    K ~ a1 (X^T W X / p - diag) + (s_f / sqrt p) Xi + d0 I,   s_f^2 = nu - a1^2,

``Xi`` symmetric, standard Gaussian, independent of ``X``; ``d0 = 0`` (diagonal removed) or the
asymptotic slope of ``f`` (diagonal kept).  Valid when every entry correction is small:
``|w_K^T x_i| |w_Q^T x_j| / sqrt p << 1`` and ``snr / sqrt p << 1``, i.e. roughly
``||w_K|| ||w_Q|| (1 + snr) / sqrt p << 1`` (aligned spikes) -- the informational part of check B7
shows where it breaks.

Step 2 (finite-rank split). ``E`` = orthonormal basis (``p x k``, ``k <= 3``) of span(mu, w_K, w_Q);
``R = E^T X = m y^T + H^T`` (``k x n``; ``m = E^T mu``, ``H = Z^T E`` standard Gaussian);
``Z_perp = (I - E E^T) Z`` is independent of ``H``.  With ``G = Z_perp^T Z_perp / p``,
``K0 = a1 (G - I) + s_f Xi / sqrt p + d0 I`` (the *null* kernel) and ``A = a1 (I_k + k_K k_Q^T)``
(``k_K = E^T w_K``, ``k_Q = E^T w_Q``)::

    K = K0 + R^T A R / p,      Phi^T Phi / n = c K0 G K0 + U C U^T / n,
    U = [R^T, K0 R^T, K0 G R^T]   (n x 3k),
    C = [[A^T N^2 A + A^T N A, A^T N, A^T], [N A, I, 0], [A, 0, 0]],   N = R R^T / p -> Gamma / c,
    Gamma = m m^T + I_k.

Step 3 (Woodbury)::

    y^T Q y / n = y^T Q0 y/n - b^T C (I + Omega C)^{-1} b,   b = U^T Q0 y / n,  Omega = U^T Q0 U / n,

``Q0 = (c K0 G K0 + gamma)^{-1}``. ``y`` and ``H`` are independent of the orthogonally invariant
pair ``(G, Xi)``, so each quadratic form tends to a normalised trace times a Gram entry:
``b -> (T11, T12, T13) (x) m``, ``Omega -> T (x) Gamma`` with the 3x3 matrix of traces
``T = tau[[Q0, Q0 K0, Q0 K0 G], [., K0 Q0 K0, K0 Q0 K0 G], [., ., G K0 Q0 K0 G]]``.

Step 4 (null traces; corrected null system).  In the eigenbasis of ``G`` (law ``mu_G``: Marchenko-Pastur of
ratio ``1/c``, atom ``1-c`` at 0 if ``c < 1``), ``A(l) = a1 (l - 1) + d0``, ``z = -gamma``.  The nonlinear
part ``Xi`` of the kernel is *symmetric*, so the null system has a third unknown ``kappa`` (the project's correction of
the first reconstruction, :mod:`theory.attention`; ``E[W B W] = (B^T + tr(B) I)/p`` for a GOE feeds the off-diagonal blocks of
the Dyson equation)::

    D(l)   = gamma (1 + delta)(1 + s_f^2 l delta~) + c l (A(l) - kappa)^2,
    delta  = s_f^2 int l (1 + delta) / D,   delta~ = int (1 + s_f^2 l delta~) / D,
    kappa  = s_f^2 int l (A(l) - kappa) / D          (kappa = 0: the first reconstruction's i.i.d.-entries system).

The log-determinant equivalent ``V = int log D dmu_G - gamma delta delta~ + c kappa^2 / s_f^2`` is stationary
in ``(delta, delta~, kappa)`` with ``dV/dgamma = delta~``; differentiating it with respect to shifts of
``K0`` and of ``c K0 G K0`` at fixed unknowns gives (envelope theorem)::

    T11 = delta~,              T12 = int (A - kappa)/D,       T13 = int l (A - kappa)/D = kappa / s_f^2,
    T22 = int (gamma (1+delta) s_f^2 delta~ + c (A - kappa)^2) / (c D),
    T23 = (1 - gamma T11) / c,                                 T33 = (1 - gamma (1+delta) int l/D) / c,

all algebraic in the unknowns (:func:`null_trace_closed_forms`).  the first reconstruction's system (``system="spec"``) misses
the real, symmetric kernel by ``O(1 %)`` (tanh, ``c = 2``, ``gamma = 1e-2``, null model: first reconstruction 0.08392,
corrected 0.08558, simulation 0.08569); with it, the structured error moves by up to ~2 % at ``c = 2``.

Step 5: ``E = -gamma^2 d/dgamma (y^T Q y / n)`` by implicit differentiation of the null system.

Numerics: the null unknowns and their ``gamma``-derivatives come from :func:`theory.solve_null_system_full`
(the project's single null solver; ``snr = 0`` reduces *exactly* to :func:`theory.attention_error`); the
trace integrals ``int l^k / D`` (``k = 0, 1, 2``) are evaluated exactly by partial fractions against the
Stieltjes transform of ``mu_G`` (Gauss-Chebyshev fallback where they cancel; quadrature cross-check).

Consequences (exact in the limit): an *orthogonal* spike (``w_K = w_Q`` orthogonal to ``mu``) decouples
and leaves ``E`` unchanged; with ``f`` linear-like (``a1 = 0, d0 = 1, s_f = 0``, i.e. ``K = I``) the
system reduces to the ridge formula (tested).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.polynomial.polynomial as P_
import sympy as sp

from ._mp_integrals import RepeatedRootError, gram_rational_integral, gram_support
from ._validation import (
    ArgumentTypeError,
    as_array,
    as_float,
    as_int,
    check_choice,
    check_flag,
    check_real,
    check_size,
    describe,
    finite_result,
)
from ._jets import Jet
from .activations import check_activation
from .implicit import MAX_TAYLOR_ORDER, null_system_taylor, refine_quadrature
from ._solver_domain import C_RANGE, GAMMA_RANGE, KERNEL_CONSTANT_MAX, check_grid, checked_solver_options
from .null_system import diagonal_constant, gram_law_quadrature
from .symbolic import NumericSpec, is_symbolic, numeric_function, symbolic_arguments
from .symbols import a1 as _a1
from .symbols import c as _c
from .symbols import delta as _delta
from .symbols import gamma as _gamma

__all__ = [
    "structured_attention_error",
    "structured_attention_error_taylor",
    "structured_attention_solve",
    "StructuredSolution",
    "StructuredConvergenceError",
    "spike_vectors",
    "null_trace_expressions",
    "null_free_energy_expression",
    "null_trace_closed_forms",
    "structured_low_rank_matrix",
    "linearisation_control",
    "rank_one_quadratic_form_expression",
]

# symbols local to the derivation
l_sym = sp.Symbol("l", nonnegative=True)  # eigenvalue of G = Z^T Z / p
delta_t = sp.Symbol("delta_t", positive=True)  # delta~ = tau(Q0)
sf2_sym = sp.Symbol("s_f2", nonnegative=True)  # s_f^2 = nu - a1^2
d0_sym = sp.Symbol("d0", real=True)  # diagonal constant of the kernel
kappa_sym = sp.Symbol("kappa", real=True)  # third unknown of the corrected (symmetric-noise) null system

_DIAGONALS = ("removed", "kept")
_SPIKE_KINDS = ("aligned", "orthogonal")
#: largest ``snr = ||mu||^2`` and spike strength ``||w||^2`` (far beyond the linearised regime already)
_SNR_MAX = _STRENGTH_MAX = 1e8


class StructuredConvergenceError(RuntimeError):
    """The (delta, delta~) system or the quadrature did not converge."""


# ============================================================================ symbolic layer
def _A(l: sp.Expr) -> sp.Expr:
    return _a1 * (l - 1) + d0_sym


def _den() -> sp.Expr:
    """``D(l) = gamma (1 + delta)(1 + s_f^2 l delta~) + c l (A(l) - kappa)^2`` (``kappa = 0``: the first reconstruction)."""
    return _gamma * (1 + _delta) * (1 + sf2_sym * l_sym * delta_t) + _c * l_sym * (_A(l_sym) - kappa_sym) ** 2


@functools.lru_cache(maxsize=None)
def null_trace_expressions() -> dict[str, sp.Expr]:
    """Integrands (in ``l``, against ``mu_G``) of the corrected null system and of the traces ``T``.

    Returns
    -------
    dict of sympy expressions in ``l, delta, delta_t, kappa, gamma, c, a1, s_f2, d0``:
    ``"den"`` (``D(l)``), ``"eq_delta"``, ``"eq_delta_t"``, ``"eq_kappa"`` (``delta = int eq_delta``,
    ``delta~ = int eq_delta_t``, ``kappa = int eq_kappa``), ``"T12", "T13", "T22", "L"``
    (``T33 = (1 - gamma (1 + delta) int L) / c``).  Substituting ``kappa = 0`` (and dropping
    ``eq_kappa``) gives the first reconstruction's independent-entries system and its traces.

    Examples
    --------
    >>> e = null_trace_expressions()
    >>> sorted(e)
    ['L', 'T12', 'T13', 'T22', 'den', 'eq_delta', 'eq_delta_t', 'eq_kappa']
    """
    den = _den()
    Ak = _A(l_sym) - kappa_sym
    return {
        "den": den,
        "eq_delta": sf2_sym * l_sym * (1 + _delta) / den,
        "eq_delta_t": (1 + sf2_sym * l_sym * delta_t) / den,
        "eq_kappa": sf2_sym * l_sym * Ak / den,
        "T12": Ak / den,
        "T13": l_sym * Ak / den,
        "T22": (_gamma * (1 + _delta) * sf2_sym * delta_t + _c * Ak**2) / (_c * den),
        "L": l_sym / den,
    }


def null_free_energy_expression() -> sp.Expr:
    """Integrand-level log-determinant equivalent of the corrected null system.

    ``V = int log D dmu_G - gamma delta delta~ + c kappa^2 / s_f^2`` (``s_f > 0``; for ``s_f = 0``,
    ``kappa = 0`` and the last term is absent).  ``(1/n) log det(c K0 G K0 + gamma) -> V`` at the
    solution; ``dV/d delta = dV/d delta~ = dV/d kappa = 0`` are the three null equations and
    ``dV/dgamma = delta~``.  Returned as ``log(D) - gamma delta delta_t + c kappa^2 / s_f2``, to be
    integrated against ``mu_G`` (the constant terms integrate to themselves: ``mu_G`` has mass 1).
    """
    return sp.log(_den()) - _gamma * _delta * delta_t + _c * kappa_sym**2 / sf2_sym


@functools.lru_cache(maxsize=None)
def null_trace_closed_forms() -> dict[str, sp.Expr]:
    """The six traces ``T_ij`` as algebraic functions of ``(delta, delta~, kappa)`` (corrected system, ``s_f > 0``).

    With ``e = d0 - a1 - kappa`` (so ``A(l) - kappa = a1 l + e``) and ``I_k = int l^k / D dmu_G``, the
    null equations give ``I_0 = delta~ / (1 + delta)``, ``I_1 = delta / (s_f^2 (1 + delta))`` and
    ``a1 I_2 + e I_1 = kappa / s_f^2``; every trace is a combination of these::

        T11 = delta~,                       T12 = a1 I_1 + e I_0,           T13 = kappa / s_f^2,
        T22 = gamma s_f^2 delta~^2 / c + a1 T13 + e T12,
        T23 = (1 - gamma delta~) / c,       T33 = (1 - gamma delta / s_f^2) / c.

    In particular ``kappa = s_f^2 tau(Q0 K0 G)``.  (the first reconstruction's system, ``kappa = 0``, does not close this
    way: its ``T13 = int l A / D`` needs ``I_2``.)  The numeric path integrates ``I_0, I_1, I_2``
    instead, for both systems; the tests check it against these forms.

    Returns
    -------
    dict ``"T11" .. "T33"`` of sympy expressions in ``delta, delta_t, kappa, gamma, c, a1, s_f2, d0``.
    """
    e = d0_sym - _a1 - kappa_sym
    I0 = delta_t / (1 + _delta)
    I1 = _delta / (sf2_sym * (1 + _delta))
    T12 = _a1 * I1 + e * I0
    T13 = kappa_sym / sf2_sym
    return {
        "T11": delta_t,
        "T12": T12,
        "T13": T13,
        "T22": _gamma * sf2_sym * delta_t**2 / _c + _a1 * T13 + e * T12,
        "T23": (1 - _gamma * delta_t) / _c,
        "T33": (1 - _gamma * _delta / sf2_sym) / _c,
    }


def structured_low_rank_matrix(A: np.ndarray, Gamma: np.ndarray, c: float) -> np.ndarray:
    """The ``3k x 3k`` matrix ``C`` of Step 2 (``N = R R^T / p -> Gamma / c``).

    Parameters
    ----------
    A : (k, k) array, ``a1 (I + k_K k_Q^T)``, finite real, ``1 <= k <= 3``.
    Gamma : (k, k) array, ``m m^T + I``, finite real, same shape as ``A``.
    c : float, ``p / n > 0``.
    """
    A = as_array("A", A, ndim=2)
    Gamma = as_array("Gamma", Gamma, ndim=2)
    c = as_float("c", c, low=0, low_open=True)
    k = A.shape[0]
    if A.shape != (k, k) or not 1 <= k <= 3:
        raise ValueError(f"A must be a square k x k array with 1 <= k <= 3 (span of mu, w_K, w_Q), got shape {A.shape}")
    if Gamma.shape != A.shape:
        raise ValueError(f"Gamma must have the shape of A {A.shape}, got shape {Gamma.shape}")
    return finite_result("structured_low_rank_matrix", _low_rank_matrix(A, Gamma, c), A=A, Gamma=Gamma, c=c)


def _low_rank_matrix(A: np.ndarray, Gamma: np.ndarray, c: float) -> np.ndarray:
    """:func:`structured_low_rank_matrix` of checked arguments."""
    k = A.shape[0]
    N = Gamma / c
    Z = np.zeros((k, k))
    I = np.eye(k)
    return np.block(
        [
            [A.T @ N @ N @ A + A.T @ N @ A, A.T @ N, A.T],
            [N @ A, I, Z],
            [A, Z, Z],
        ]
    )


@functools.lru_cache(maxsize=1)
def rank_one_quadratic_form_expression() -> tuple[sp.Expr, tuple[sp.Symbol, ...]]:
    """Closed form of ``y^T Q y / n`` when ``k = 1`` (no spike, or a spike along ``mu``), as sympy.

    Step 3 with ``k = 1``: ``Gamma = 1 + snr``, ``m = sqrt(snr)``, ``A`` a scalar (``a1 (1 + strength)``
    for an aligned spike, ``a1`` without spike), ``C`` and ``Omega = T Gamma`` are 3 x 3.

    Returns
    -------
    (expr, symbols) with ``symbols = (T11, T12, T13, T22, T23, T33, snr, A, c)``.

    Examples
    --------
    >>> expr, syms = rank_one_quadratic_form_expression()
    >>> sp.simplify(expr.subs(syms[6], 0) - syms[0])
    0
    """
    T11, T12, T13, T22, T23, T33 = sp.symbols("T11 T12 T13 T22 T23 T33", real=True)
    s, A = sp.Symbol("snr", nonnegative=True), sp.Symbol("A", real=True)
    Tm = sp.Matrix([[T11, T12, T13], [T12, T22, T23], [T13, T23, T33]])
    Gam = 1 + s
    N = Gam / _c
    Cm = sp.Matrix([[A**2 * N**2 + A**2 * N, A * N, A], [N * A, 1, 0], [A, 0, 0]])
    b = sp.sqrt(s) * Tm[:, 0]
    Om = Gam * Tm
    corr = (b.T * Cm * (sp.eye(3) + Om * Cm).inv() * b)[0, 0]
    return sp.together(T11 - corr), (T11, T12, T13, T22, T23, T33, s, A, _c)


# ============================================================================ quadrature on mu_G
@functools.lru_cache(maxsize=64)
def _mp_nodes(c: float, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes/weights for ``int g dmu_G``, ``mu_G`` = law of ``Z^T Z / p`` (``n x n``, ``p/n = c``).

    Marchenko-Pastur of ratio ``r = 1/c``: density ``sqrt((b-l)(l-a)) / (2 pi r l)`` on ``[a, b]``,
    ``a, b = (1 -+ sqrt r)^2``, plus an atom ``1 - c`` at 0 when ``c < 1``.  Gauss-Chebyshev of the
    second kind (exact for the square-root edges).
    """
    if abs(c - 1.0) < 1e-6:  # hard edge at 0 (density ~ l^{-1/2}): Gauss-Jacobi rule of theory.attention
        from .null_system import gram_law_quadrature

        return gram_law_quadrature(c, n_nodes)
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


# ============================================================================ spikes
def spike_vectors(strength: float, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """``(w_K, w_Q)`` for a symmetric rank-one spike ``W = I + strength * u u^T``.

    Coordinates: ``mu`` points along ``e_1`` (the convention of :func:`numerics.sample_signal_plus_noise`).

    Parameters
    ----------
    strength : float in ``[0, 1e8]``; ``||w_K||^2 = ||w_Q||^2 = strength``.
    kind : ``"aligned"`` (``u = e_1 = mu/||mu||``) or ``"orthogonal"`` (``u = e_2``).

    Returns
    -------
    w_k, w_q : arrays of length 2 (pad with zeros to length ``p`` for simulation).

    Examples
    --------
    >>> spike_vectors(4.0, "aligned")[0]
    array([2., 0.])
    """
    strength = as_float("strength", strength, low=0, high=_STRENGTH_MAX)
    check_choice("spike kind", kind, _SPIKE_KINDS)
    w = np.zeros(2)
    w[0 if kind == "aligned" else 1] = math.sqrt(strength)
    return w, w.copy()


def _finite_dims(snr: float, w_k: Any, w_q: Any) -> tuple[np.ndarray, np.ndarray]:
    """``m = E^T mu`` and ``A / a1 = I + k_K k_Q^T`` in an orthonormal basis of span(e1, w_K, w_Q)."""
    wk, wq = _spike_arrays(w_k, w_q)
    if wk is not None:
        dim = max(wk.size, wq.size)
        wk = np.pad(wk, (0, dim - wk.size))
        wq = np.pad(wq, (0, dim - wq.size))
        e1 = np.zeros(dim)
        e1[0] = 1.0
        basis = [e1]
        for v in (wk, wq):  # Gram-Schmidt in the order e1, w_K, w_Q
            r = v - sum((b @ v) * b for b in basis)
            r = r - sum((b @ r) * b for b in basis)
            nr = float(np.linalg.norm(r))
            if nr > 1e-12 * max(1.0, float(np.linalg.norm(v))):
                basis.append(r / nr)
        E = np.stack(basis, axis=1)
        m = math.sqrt(snr) * (E.T @ e1)
        kK, kQ = E.T @ wk, E.T @ wq
        return m, np.eye(E.shape[1]) + np.outer(kK, kQ)
    return np.array([math.sqrt(snr)]), np.eye(1)


def _spike_arrays(w_k: Any, w_q: Any) -> tuple[np.ndarray, np.ndarray]:
    """Checked ``(w_k, w_q)``: both or neither, non-empty finite real 1-d arrays (a scalar is one coordinate) with
    ``||w||^2 <= 1e8``; ``(None, None)`` when neither is given."""
    if (w_k is None) != (w_q is None):
        raise ValueError("w_k and w_q must be given together (W = I + w_k w_q^T) or both be None")
    if w_k is None:
        return None, None
    out = []
    for name, w in (("w_k", w_k), ("w_q", w_q)):
        arr = np.atleast_1d(as_array(name, w, ndim=(0, 1), bytes_per_element=64))
        with np.errstate(over="ignore"):
            norm2 = float(arr @ arr)
        if norm2 > _STRENGTH_MAX:
            raise ValueError(f"{name} must have ||{name}||^2 <= {_STRENGTH_MAX:g}, got {norm2:g}")
        out.append(arr)
    return out[0], out[1]


def linearisation_control(p: int, snr: float, w_k: Any = None, w_q: Any = None, *, spike: Any = None) -> float:
    """Size of the signal/spike correction to a kernel entry: ``kappa = (snr + sqrt(v_K v_Q)) / sqrt p``.

    ``v_K = E (w_K^T x)^2 = ||w_K||^2 + snr (w_K)_1^2`` (``mu = sqrt(snr) e_1``), likewise ``v_Q``.  The
    structured equivalent linearises ``f`` around ``z_i^T z_j / sqrt p``; the correction to its argument
    is ``(snr y_i y_j + (w_K^T x_i)(w_Q^T x_j) + ...) / sqrt p``, of typical size ``kappa``.  The
    linearisation error of ``E`` is ``O(kappa^2)`` (measured in check B7: about ``0.4 kappa^2`` relative
    for tanh); the project declares the regime of validity as ``kappa <= 0.5``.  (This ``kappa`` -- called
    ``kappa_lin`` in ``docs/structured_attention.md`` -- is unrelated to the unknown ``kappa`` of the
    corrected null system.)

    ``p``: an integer in ``[1, Limits.max_dimension]``; ``snr`` in ``[0, 1e8]``; ``spike=(strength, kind)`` or
    ``w_k, w_q`` (both or neither, not with ``spike``).

    Examples
    --------
    >>> round(linearisation_control(256, 2.0, spike=(4.0, "aligned")), 3)
    0.875
    """
    check_size("p", p, 1, "max_dimension")
    check_real("snr", snr, low=0, high=_SNR_MAX)
    w_k, w_q = _resolve_spike(spike, w_k, w_q)
    if w_k is None and w_q is None:
        return float(snr) / math.sqrt(p)
    wk, wq = _spike_arrays(w_k, w_q)
    vk = float(wk @ wk + snr * wk[0] ** 2)
    vq = float(wq @ wq + snr * wq[0] ** 2)
    return (float(snr) + math.sqrt(vk * vq)) / math.sqrt(p)


# ============================================================================ numeric solve
@dataclass
class StructuredSolution:
    """Result of :func:`structured_attention_solve` (arrays indexed like ``gamma``).

    Attributes
    ----------
    gamma, error : ridge parameters and the interpolation error ``E``.
    yQy : ``y^T Q y / n`` (deterministic equivalent).
    null_error : ``E`` of the null model at the same ``gamma`` (``= -gamma^2 d delta~/d gamma``).
    delta, delta_t, kappa : solution of the null system (``kappa = 0`` for ``system="spec"``).
    traces : (G, 3, 3) trace matrices ``T``.
    residual : residual of the null system per gamma (from :func:`theory.solve_null_system_full`).
    quadrature_change : |E(exact traces) - E(quadrature traces, n_nodes)| per gamma (cross-check of the
        trace integrals; zeros when ``check_quadrature=False``).
    a1, sf2, d0 : kernel constants used. m, A : finite-rank data (``A`` includes ``a1``).
    system : null system used (``"symmetric"``: corrected, default; ``"spec"``: the first reconstruction's).
    """

    gamma: np.ndarray
    error: np.ndarray
    yQy: np.ndarray
    null_error: np.ndarray
    delta: np.ndarray
    delta_t: np.ndarray
    kappa: np.ndarray
    traces: np.ndarray
    residual: np.ndarray
    quadrature_change: np.ndarray
    a1: float
    sf2: float
    d0: float
    m: np.ndarray
    A: np.ndarray
    system: str = "symmetric"
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        g = as_array("gamma", self.gamma, ndim=1, low=GAMMA_RANGE[0], high=GAMMA_RANGE[1])
        for name in ("error", "yQy", "null_error", "delta", "delta_t", "kappa", "residual", "quadrature_change"):
            v = as_array(name, getattr(self, name), ndim=1)
            if v.shape != g.shape:
                raise ValueError(f"{name} must have the shape of gamma {g.shape}, got {v.shape}")
        for name in ("residual", "quadrature_change"):
            as_array(name, getattr(self, name), low=0)
        if as_array("traces", self.traces, ndim=3).shape != (g.size, 3, 3):
            raise ValueError(f"traces must have shape {(g.size, 3, 3)}, got {np.shape(self.traces)}")
        for name in ("a1", "d0"):
            as_float(name, getattr(self, name))
        as_float("sf2", self.sf2, low=0)
        m = as_array("m", self.m, ndim=1)
        if as_array("A", self.A, ndim=2).shape != (m.size, m.size):
            raise ValueError(f"A must have shape {(m.size, m.size)} (that of m m^T), got {np.shape(self.A)}")
        check_choice("system", self.system, ("symmetric", "spec"))
        if not isinstance(self.notes, list) or not all(isinstance(t, str) for t in self.notes):
            raise ArgumentTypeError(f"notes must be a list of strings, got {describe(self.notes)}")


def _kernel_constants(activation: Any, diagonal: Any) -> tuple[float, float, float]:
    """``(a1, s_f^2, d0)``; ``diagonal`` is ``"removed"``, ``"kept"`` or an explicit number ``d0``."""
    if isinstance(activation, dict):  # explicit constants {"a1":..., "sf2":..., "d0":...}
        return _dict_constants(activation, diagonal)
    from .activations import hermite_moments
    from .null_system import null_kernel_diagonal

    check_activation(activation, "activation")
    d0 = null_kernel_diagonal(activation, diagonal)
    hm = hermite_moments(activation)
    return float(hm.a1), float(hm.sf2), float(d0)


def _dict_constants(activation: dict, diagonal: Any) -> tuple[float, float, float]:
    """``(a1, s_f^2, d0)`` of an activation given by its constants ``{"a1": .., "sf2": .., "d0": ..}``."""
    unknown = sorted(set(activation) - {"a1", "sf2", "d0"}, key=str)
    if unknown or not {"a1", "sf2"} <= set(activation):
        raise ValueError("activation given as a dict needs keys 'a1' and 'sf2' (and optionally 'd0'), got keys "
                         f"{sorted(map(str, activation))}")
    k = KERNEL_CONSTANT_MAX
    a1 = as_float("activation['a1']", activation["a1"], low=-k, high=k)
    sf2 = as_float("activation['sf2']", activation["sf2"], low=0, high=k * k)
    if "d0" not in activation:
        return a1, sf2, diagonal_constant(diagonal, _refuse_kept)
    diagonal_constant(diagonal, lambda: 0.0)  # checked; the dict's d0 is used whatever the diagonal
    return a1, sf2, as_float("activation['d0']", activation["d0"], low=-k, high=k)


def _refuse_kept() -> float:
    raise ValueError("diagonal='kept' with an activation dict needs the key 'd0'")


def _null_solutions(gam: np.ndarray, c: float, a1: float, sf2: float, d0: float, system: str, method: str,
                    n_nodes: int, tol: float, max_iter: int) -> np.ndarray:
    """Null unknowns and their ``gamma``-derivatives, rows ``(delta, delta~, kappa, d/dgamma of each, residual)``.

    Solved by :func:`theory.null_system.solve_null_system_full` (the single implementation of the null
    system in the project, so that ``snr = 0`` reduces *exactly* to :func:`theory.attention_error`);
    ``d/dgamma = -d/dz``.  The null system does not involve the signal or the spike, so every ``snr`` and spike
    on one ``(gamma grid, c, activation, solver)`` shares one solve (memoised; a fresh copy per call).
    """
    gam = np.ascontiguousarray(gam, dtype=float)
    return _null_solutions_memo(gam.tobytes(), gam.shape, float(c), float(a1), float(sf2), float(d0), str(system),
                                str(method), int(n_nodes), float(tol), int(max_iter)).copy()


@functools.lru_cache(maxsize=256)
def _null_solutions_memo(gam_bytes: bytes, shape: tuple, c: float, a1: float, sf2: float, d0: float, system: str,
                         method: str, n_nodes: int, tol: float, max_iter: int) -> np.ndarray:
    """:func:`_null_solutions` on hashable arguments (``gam`` as its bytes and shape)."""
    from .null_system import solve_null_system_full

    gam = np.frombuffer(gam_bytes, dtype=float).reshape(shape)
    try:
        sols = solve_null_system_full(-gam, c, a1, sf2, d0, system=system, method=method, n_nodes=max(int(n_nodes), 16),
                                      tol=tol, max_iter=max_iter)
    except RuntimeError as exc:
        raise StructuredConvergenceError(f"null system did not converge: {exc}") from exc
    out = np.array([[s.delta, s.delta_tilde, s.kappa, -s.ddelta_dz, -s.ddelta_tilde_dz, -s.dkappa_dz, s.residual]
                    for s in sols], dtype=float)
    if not np.all(np.isfinite(out)):
        raise StructuredConvergenceError(f"null system returned non-finite values at gamma={gam}")
    return out


def _denominator_polys(g: float, c: float, a1: float, sf2: float, d0: float, nul: np.ndarray):
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


class _GramRationalIntegrals:
    """``I_k = int l^k / D dmu_G`` and ``J_k = int l^k D_gamma / D^2 dmu_G`` (``k = 0, 1, 2``), exactly.

    Each is :func:`theory._mp_integrals.gram_rational_integral` (the project's one implementation, shared with
    the null solver of :mod:`theory.attention`): partial fractions over the roots of ``D`` (off the support
    of ``mu_G`` for ``gamma > 0``, since ``D > 0`` on ``l >= 0``) against the Stieltjes transform of
    ``mu_G`` and its derivative; polynomial parts from the moments of ``mu_G``.  ``precision`` estimates the
    relative precision (cancellation between nearly repeated roots; ``inf`` with NaN results for an exactly
    repeated root); the caller falls back to quadrature when it is poor.
    """

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


class _GramQuadratureIntegrals:
    """The same ``I_k, J_k`` by Gauss–Chebyshev quadrature on ``mu_G`` (:func:`_mp_nodes`)."""

    precision = 1e-14

    def __init__(self, c: float, n_nodes: int):
        self.l, self.w = _mp_nodes(float(c), int(n_nodes))

    def __call__(self, D: np.ndarray, Dg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Dv, Dgv = P_.polyval(self.l, D), P_.polyval(self.l, Dg)
        pows = np.stack([np.ones_like(self.l), self.l, self.l**2])
        return pows / Dv @ self.w, pows * Dgv / Dv**2 @ self.w


#: relative precision of the exact integrals below which the quadrature fallback is used
_EXACT_PRECISION_LIMIT = 1e-9


def _trace_integrals(D, Dg, exact, quad):
    """``(I, dI/dgamma)`` from the exact integrator, or the quadrature one when partial fractions cancel."""
    if exact is not None:
        I, J = exact(D, Dg)
        if exact.precision <= _EXACT_PRECISION_LIMIT and np.all(np.isfinite(I)) and np.all(np.isfinite(J)):
            return I, -J
    I, J = quad(D, Dg)
    return I, -J


def _trace_matrix(g: float, c: float, a1: float, sf2: float, d0: float, nul: np.ndarray, I: np.ndarray,
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


#: condition number of the equilibrated trace matrix above which :func:`_woodbury` uses the direct form (the inverse
#: form then loses more than about 1e-8 relative; measured: below 1e3 for every nonsingular case, 1e15 and more for
#: the singular ones of ``a1 = 0``)
_TRACE_COND_LIMIT = 1e8


def _woodbury(T, dT, m, A, c):
    """``y^T Q y/n`` and its gamma-derivative from the trace matrix (Step 3).

    ``b = T[0] (x) m`` is ``w^T Omega`` with ``w = e_1 (x) Gamma^{-1} m`` (``Omega = T (x) Gamma``), so that
    ``Omega C (I + Omega C)^{-1} = I - (I + Omega C)^{-1}`` and ``(I + Omega C)^{-1} Omega = X = (Omega^{-1} + C)^{-1}``
    give::

        y^T Q y / n = T11 / (1 + |m|^2) + w^T X w,
        d/dgamma    = dT11 / (1 + |m|^2) + (X^T w)^T ((T^{-1} dT T^{-1}) (x) Gamma^{-1}) (X w).

    This form is used because it keeps the digits: at small ``gamma`` (``c < 1``) ``T`` has entries of order
    ``1 / gamma``, and ``I + Omega C`` adds ``I`` to them (the direct form, :func:`_woodbury_direct`, loses about
    ``1e-16 / gamma`` relative: 3e-7 at ``gamma = 1e-9``, and E was not monotone in ``gamma`` below 3e-6), while
    ``T^{-1}`` has entries of order ``gamma`` next to ``C``'s of order one (about 1e-9 relative at ``gamma = 1e-9``).
    Where ``T`` is (nearly) singular (condition number of its equilibrated form above :data:`_TRACE_COND_LIMIT`,
    e.g. ``a1 = 0``, where two of its rows are equal) the direct form is used.
    """
    if not np.any(m):  # no signal direction: y^T Q y / n = T11 exactly
        return T[0, 0], dT[0, 0]
    k = m.size
    Gam = np.outer(m, m) + np.eye(k)
    C = _low_rank_matrix(A, Gam, c)
    scale = 1.0 / np.sqrt(np.where(np.diag(T) > 0, np.diag(T), 1.0))  # equilibration: T_n = D T D, unit diagonal
    Tn = T * np.outer(scale, scale)
    if not np.linalg.cond(Tn) <= _TRACE_COND_LIMIT:  # T (nearly) singular, e.g. a1 = 0: T^{-1} is not usable
        return _woodbury_direct(T, dT, m, Gam, C, A)
    Ti = np.linalg.inv(Tn) * np.outer(scale, scale)
    Gi = np.linalg.inv(Gam)  # Gamma = I + m m^T: eigenvalues >= 1
    Mx = np.kron(Ti, Gi) + C
    w = np.kron(np.eye(3)[0], Gi @ m)
    try:
        Xw, Xtw = np.linalg.solve(Mx, w), np.linalg.solve(Mx.T, w)
    except np.linalg.LinAlgError:  # then I + Omega C = Omega (Omega^{-1} + C) is singular too: the direct form says so
        return _woodbury_direct(T, dT, m, Gam, C, A)
    s = 1.0 / (1.0 + m @ m)
    return T[0, 0] * s + w @ Xw, dT[0, 0] * s + Xtw @ np.kron(Ti @ dT @ Ti, Gi) @ Xw


def _woodbury_direct(T, dT, m, Gam, C, A):
    """:func:`_woodbury` as ``T11 - b C (I + Omega C)^{-1} b^T`` (and its derivative): the fallback."""
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


def _validate_common(c: Any, snr: Any) -> tuple[float, float]:
    """``(float(c), float(snr))`` in the solver domain: ``c`` in ``[1e-4, 1e4]``, ``snr`` in ``[0, 1e8]``."""
    c = as_float("c", c, low=C_RANGE[0], high=C_RANGE[1])
    snr = as_float("snr", snr, low=0, high=_SNR_MAX)
    return c, snr


def structured_attention_solve(
    gamma: Any,
    c: float,
    activation: Any,
    snr: float,
    w_k: Any = None,
    w_q: Any = None,
    diagonal: str = "removed",
    *,
    spike: tuple[float, str] | None = None,
    system: str = "symmetric",
    method: str = "exact",
    n_nodes: int = 800,
    tol: float = 1e-12,
    maxiter: int = 100,
    max_iter: int | None = None,
    check_quadrature: bool = True,
) -> StructuredSolution:
    """Solve the structured deterministic equivalent on a ``gamma`` grid (all diagnostics).

    Parameters
    ----------
    gamma : float or 1-d array of floats in ``[1e-30, 1e30]`` (at most ``Limits.max_grid_size``).
    c : float in ``[1e-4, 1e4]`` (``p / n``).
    activation : registry name / sympy expression (see :func:`theory.hermite_moments`), or a dict
        ``{"a1": .., "sf2": .., "d0": ..}`` of kernel constants (``|a1|, |d0| <= 1e6``, ``0 <= sf2 <= 1e12``).
    snr : float in ``[0, 1e8]`` (``||mu||^2``).
    w_k, w_q : arrays (coordinates with ``mu`` along ``e_1``; any length, ``||w||^2 <= 1e8``), optional, both or
        neither.
    diagonal : ``"removed"`` (``d0 = 0``), ``"kept"`` (``d0`` = asymptotic slope of ``f``) or a number ``d0``.
    spike : ``(strength, "aligned" | "orthogonal")``, alternative to ``w_k, w_q`` (see :func:`spike_vectors`).
    system : ``"symmetric"`` (default; alias ``"corrected"``): the null system of a symmetric kernel
        (unknowns ``delta, delta~, kappa``); ``"spec"``: the first reconstruction's independent-entries system (``kappa = 0``),
        kept for comparison.
    method : ``"exact"`` (default) or ``"quadrature"``: how the null system is integrated
        (:func:`theory.solve_null_system_full`) and the trace integrals ``I_k`` (partial fractions, with a
        Gauss–Chebyshev fallback where they cancel, or Gauss–Chebyshev with ``n_nodes``).
    n_nodes : quadrature nodes, an integer in ``[16, Limits.max_quadrature_nodes]``: trace integrals for
        ``method="quadrature"`` and the cross-check.
    tol : residual tolerance of the null system, in ``(0, 1e-3]``.
    maxiter : Newton steps per continuation point of the null solver, in ``[1, Limits.max_iterations]``
        (``max_iter`` is an alias that wins when given, as in :func:`theory.solve_null_system`).
    check_quadrature : also evaluate the traces by Gauss–Chebyshev quadrature and report the change of ``E``.

    The options follow the rules of the null solver (:func:`theory.solve_null_system_full`), so that
    :func:`theory.attention_error` checks them the same way with and without signal.

    Raises
    ------
    ValueError : invalid input (``ArgumentTypeError``, also a ``TypeError``, for a wrong type).
    StructuredConvergenceError : no convergence (the message gives the residual reached).
    """
    c, snr = _validate_common(c, snr)
    maxiter, system, gam = _validate_solver_options(gamma, system, method, n_nodes, tol, maxiter, max_iter)
    check_flag("check_quadrature", check_quadrature)
    w_k, w_q = _resolve_spike(spike, w_k, w_q)
    a1, sf2, d0 = _kernel_constants(activation, diagonal)
    m, Aunit = _finite_dims(snr, w_k, w_q)
    A = a1 * Aunit

    nul = _null_solutions(gam, c, a1, sf2, d0, system, method, n_nodes, tol, maxiter)
    quad = _GramQuadratureIntegrals(c, n_nodes)
    exact = _GramRationalIntegrals(c) if method == "exact" else None
    consts = (c, a1, sf2, d0)
    out, Ts = _error_on_grid(gam, consts, nul, m, A, exact, quad)
    qchange = np.zeros(gam.size)
    if check_quadrature:
        alt, _ = _error_on_grid(gam, consts, nul, m, A, None, quad)
        qchange = np.abs(out["E"] - alt["E"])
    if not np.all(np.isfinite(out["E"])):
        bad = ~np.isfinite(out["E"])
        raise StructuredConvergenceError(f"non-finite error at gamma={gam[bad]} (null-system residual reached: "
                                         f"{nul[bad, 6]})")
    return StructuredSolution(
        gamma=gam, error=out["E"], yQy=out["yQy"], null_error=out["E0"], delta=nul[:, 0], delta_t=nul[:, 1],
        kappa=nul[:, 2], traces=Ts, residual=nul[:, 6], quadrature_change=qchange, a1=a1, sf2=sf2, d0=d0, m=m, A=A,
        system=system,
    )


def _validate_solver_options(gamma: Any, system: str, method: str, n_nodes: int, tol: float, maxiter: int,
                             max_iter: int | None) -> tuple[int, str, np.ndarray]:
    """Checked ``(maxiter, canonical system name, gamma grid)`` of :func:`structured_attention_solve`.

    ``max_iter``, when not None, replaces ``maxiter``; the rules are those of the null solver.
    """
    system, method, n_nodes, tol, maxiter = checked_solver_options(system, method, n_nodes, tol, maxiter, max_iter)
    gam = np.atleast_1d(as_array("gamma", gamma, ndim=(0, 1), low=GAMMA_RANGE[0], high=GAMMA_RANGE[1]))
    check_grid("gamma", gam.size)
    return maxiter, system, gam


def _resolve_spike(spike: tuple[float, str] | None, w_k: Any, w_q: Any) -> tuple[Any, Any]:
    """``(w_k, w_q)``, from ``spike=(strength, kind)`` when given (exclusive with ``w_k, w_q``)."""
    if spike is None:
        return w_k, w_q
    if w_k is not None or w_q is not None:
        raise ValueError("give either spike=(strength, kind) or w_k, w_q, not both")
    if not (isinstance(spike, (tuple, list)) and len(spike) == 2):
        raise ValueError(f"spike must be a pair (strength >= 0, 'aligned' | 'orthogonal'), got {describe(spike)}")
    try:
        return spike_vectors(spike[0], spike[1])
    except ArgumentTypeError as exc:
        raise ArgumentTypeError(f"spike=(strength, kind): {exc}") from None
    except ValueError as exc:
        raise ValueError(f"spike=(strength, kind): {exc}") from None


def _error_on_grid(gam: np.ndarray, consts: tuple[float, float, float, float], nul: np.ndarray, m: np.ndarray,
                   A: np.ndarray, integrator_exact: Any, quad: Any) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """``E``, ``yQy``, ``E0`` and the trace matrices on the ``gamma`` grid (Steps 3-5), one integrator."""
    c, a1, sf2, d0 = consts
    out = {k: np.empty(gam.size) for k in ("E", "yQy", "E0")}
    Ts = np.empty((gam.size, 3, 3))
    for i, g in enumerate(gam):
        D, Dg = _denominator_polys(float(g), c, a1, sf2, d0, nul[i])
        I, dI = _trace_integrals(D, Dg, integrator_exact, quad)
        T, dT = _trace_matrix(float(g), c, a1, sf2, d0, nul[i], I, dI)
        yqy, dyqy = _woodbury(T, dT, m, A, c)
        out["E"][i], out["yQy"][i], out["E0"][i] = -g * g * dyqy, yqy, -g * g * dT[0, 0]
        Ts[i] = T
    return out, Ts


def structured_attention_error(
    gamma: Any,
    c: float,
    activation: Any,
    snr: float,
    w_k: Any = None,
    w_q: Any = None,
    diagonal: str = "removed",
    **solver_options: Any,
) -> Any:
    """Deterministic equivalent of the attention interpolation error with signal and spiked weights.

    Project's own derivation (module docstring, ``docs/structured_attention.md``); valid in the
    regime where the linearised kernel holds (``||w_K|| ||w_Q|| (1 + snr) / sqrt p`` small).

    Parameters
    ----------
    gamma : float or array, ``> 0``.
    c : float ``> 0``.
    activation : name, sympy expression or dict of constants (see :func:`structured_attention_solve`).
    snr : ``||mu||^2 >= 0``.
    w_k, w_q : spike vectors in coordinates where ``mu = sqrt(snr) e_1`` (the numerics convention).
    diagonal : ``"removed"`` or ``"kept"``.
    **solver_options : ``spike=(strength, kind)``, ``system`` (``"symmetric"`` default, ``"spec"``),
        ``method``, ``n_nodes``, ``tol``, ``maxiter``/``max_iter``, ``check_quadrature``.

    Returns
    -------
    float (scalar ``gamma``), ndarray, or theory.symbolic.NumericFunction
        For a sympy ``gamma`` or ``c`` with free symbols, a sympy function of ``(gamma, c)`` with the other
        arguments fixed, as for :func:`theory.attention_error`: ``evalf`` calls this function with numbers,
        ``sympy.diff`` in ``gamma`` gives the implicit derivatives (:func:`structured_attention_error_taylor`),
        ``sympy.lambdify`` a vectorised call (the ``_numpycode`` hook).

    Examples
    --------
    >>> e0 = structured_attention_error(0.1, 2.0, "tanh", 1.0)
    >>> e4 = structured_attention_error(0.1, 2.0, "tanh", 1.0, spike=(4.0, "aligned"))
    >>> bool(e4 < e0)
    True
    >>> eo = structured_attention_error(0.1, 2.0, "tanh", 1.0, spike=(4.0, "orthogonal"))
    >>> bool(abs(eo - e0) < 1e-10)
    True
    >>> from theory.symbols import gamma
    >>> E = structured_attention_error(gamma, 2, "tanh", 1.0)
    >>> E
    structured_attention_error(gamma, 2, 'tanh', 1.0)
    >>> E.subs(gamma, 0.1) == e0
    True
    """
    if (is_symbolic(gamma) or is_symbolic(c)) and not isinstance(gamma, (list, tuple, np.ndarray)):
        return _symbolic_structured_error(gamma, c, activation, snr, w_k, w_q, diagonal, solver_options)
    solver_options.setdefault("check_quadrature", False)
    sol = structured_attention_solve(gamma, c, activation, snr, w_k, w_q, diagonal, **solver_options)
    if np.ndim(gamma) == 0:
        return float(sol.error[0])
    return sol.error


# ============================================================================ symbolic input and Taylor coefficients
def _symbolic_structured_error(gamma: Any, c: Any, activation: Any, snr: Any, w_k: Any, w_q: Any, diagonal: Any,
                               solver_options: dict[str, Any]) -> Any:
    """:func:`structured_attention_error` of a symbolic ``gamma`` or ``c``: every other argument checked as on the
    numeric path (:func:`structured_attention_solve`), then the :class:`theory.symbolic.NumericFunction`."""
    g, cc = symbolic_arguments(gamma, c, C_RANGE)
    _check_structured_options(snr, w_k, w_q, activation, diagonal, solver_options)
    act, options = _hashable(activation), {k: _hashable(v) for k, v in sorted(solver_options.items())}
    fixed = [(None, act), (None, snr)]
    if w_k is not None:
        w_k, w_q = _hashable(w_k), _hashable(w_q)
        fixed += [("w_k", w_k), ("w_q", w_q)]
    if not (isinstance(diagonal, str) and diagonal == "removed"):
        fixed.append(("diagonal", diagonal))
    fixed += list(options.items())
    act = dict(act) if isinstance(act, _FrozenDict) else act  # the numeric path takes the frozen forms
    spec = NumericSpec(
        "structured_attention_error", tuple(fixed),
        values=lambda gv, cv: structured_attention_error(gv, cv, act, snr, w_k, w_q, diagonal, **options),
        taylor=lambda g0, cv, order: structured_attention_error_taylor(g0, cv, act, snr, w_k, w_q, diagonal,
                                                                       order=order, **options),
    )
    return numeric_function(spec)(g, cc)


class _FrozenDict(tuple):
    """A dict argument as a hashable, sorted tuple of pairs that prints as the dict."""

    def __repr__(self) -> str:
        return repr(dict(self))


def _hashable(value: Any) -> Any:
    """A hashable stand-in of an argument for the identity of a symbolic function: a dict as a
    :class:`_FrozenDict`, an array or list as a tuple of floats (both accepted by the numeric path)."""
    if isinstance(value, dict):
        return _FrozenDict(sorted((str(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, np.ndarray)):
        return tuple(np.asarray(value, dtype=float).ravel().tolist())
    if isinstance(value, tuple):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _check_structured_options(snr: Any, w_k: Any, w_q: Any, activation: Any, diagonal: Any,
                              solver_options: dict[str, Any]) -> None:
    """The checks of :func:`structured_attention_solve` on everything but ``gamma`` and ``c``."""
    as_float("snr", snr, low=0, high=_SNR_MAX)
    opts = {"spike": None, "system": "symmetric", "method": "exact", "n_nodes": 800, "tol": 1e-12, "maxiter": 100,
            "max_iter": None, "check_quadrature": False}
    unknown = sorted(set(solver_options) - set(opts))
    if unknown:
        raise ArgumentTypeError(f"{unknown[0]} is not an option of structured_attention_error; the options are "
                                f"{tuple(opts)}")
    opts.update(solver_options)
    _validate_solver_options(1.0, opts["system"], opts["method"], opts["n_nodes"], opts["tol"], opts["maxiter"],
                             opts["max_iter"])
    check_flag("check_quadrature", opts["check_quadrature"])
    w_k, w_q = _resolve_spike(opts["spike"], w_k, w_q)
    _kernel_constants(activation, diagonal)
    _finite_dims(float(snr), w_k, w_q)


def structured_attention_error_taylor(
    gamma: float,
    c: float,
    activation: Any,
    snr: float,
    w_k: Any = None,
    w_q: Any = None,
    diagonal: str = "removed",
    *,
    order: int = 2,
    rtol: float = 1e-8,
    spike: tuple[float, str] | None = None,
    system: str = "symmetric",
    method: str = "exact",
    n_nodes: int = 800,
    tol: float = 1e-12,
    maxiter: int = 100,
    max_iter: int | None = None,
    check_quadrature: bool = False,
) -> np.ndarray:
    """Taylor coefficients of :func:`structured_attention_error` in ``gamma``: ``E(gamma + s) = sum_k e[k] s^k``.

    Implicit derivatives, no finite differences: the null unknowns' coefficients of order ``order + 1``
    (:func:`theory.null_system_taylor`), the trace integrals of Step 4 (the integrands of
    :func:`null_trace_expressions`) evaluated on those truncated series at the nodes of the Gauss-Jacobi rule of
    ``mu_G``, the Woodbury formula of Step 3 in series arithmetic, and ``E = -gamma^2 d/dgamma (y^T Q y / n)``.
    The rule is refined (400, 800, ... nodes) until two successive rules agree to ``rtol``.  ``e[0]`` agrees with
    :func:`structured_attention_error` (which integrates the traces exactly) to the quadrature's accuracy.

    Parameters
    ----------
    gamma : float
        Expansion point, in ``[1e-30, 1e30]``.
    c, activation, snr, w_k, w_q, diagonal, spike, system, method, n_nodes, tol, maxiter, max_iter
        As in :func:`structured_attention_solve` (``n_nodes`` and ``method`` act on the null solve of orders 0
        and 1 only).
    order : int
        Highest coefficient, in ``[0, 19]``.
    rtol : float
        Agreement of two successive quadrature rules, relative to the largest coefficient of an order, in
        ``[1e-14, 1e-3]``.
    check_quadrature : bool
        Accepted for symmetry with :func:`structured_attention_error`; the refinement is the check here.

    Returns
    -------
    numpy.ndarray
        ``order + 1`` coefficients (``e[k] = E^(k)(gamma) / k!``).

    Raises
    ------
    ValueError
        Invalid arguments.
    StructuredConvergenceError, RuntimeError
        No convergence of the null solver, or of the quadrature.

    Examples
    --------
    >>> e = structured_attention_error_taylor(0.1, 2.0, "tanh", 1.0, order=1)
    >>> bool(abs(e[0] - structured_attention_error(0.1, 2.0, "tanh", 1.0)) < 1e-9)
    True
    """
    c, snr = _validate_common(c, snr)
    g0 = as_float("gamma", gamma, low=GAMMA_RANGE[0], high=GAMMA_RANGE[1])
    maxiter, system, _ = _validate_solver_options(g0, system, method, n_nodes, tol, maxiter, max_iter)
    check_flag("check_quadrature", check_quadrature)
    order = as_int("order", order, low=0, high=MAX_TAYLOR_ORDER - 1)
    w_k, w_q = _resolve_spike(spike, w_k, w_q)
    a1, sf2, d0 = _kernel_constants(activation, diagonal)
    m, Aunit = _finite_dims(snr, w_k, w_q)
    try:
        nul = null_system_taylor(g0, c, a1, sf2, d0, order + 1, rtol=rtol, system=system, method=method,
                                 n_nodes=max(int(n_nodes), 16), tol=tol, max_iter=maxiter)
    except RuntimeError as exc:
        raise StructuredConvergenceError(f"null system did not converge: {exc}") from exc
    consts = (c, a1, sf2, d0)
    out, _, _ = refine_quadrature(lambda n: _error_series(nul, consts, m, a1 * Aunit, n).coefficients[:, None],
                                  rtol, f"structured_attention_error_taylor at gamma={g0:g}")
    return finite_result("structured_attention_error_taylor", out[:, 0], gamma=gamma, c=c, snr=snr)


@functools.lru_cache(maxsize=1)
def _trace_integrand_series():
    """The trace integrands ``T12, T13, T22, L`` of :func:`null_trace_expressions` as a function of series."""
    e = null_trace_expressions()
    args = (l_sym, _delta, delta_t, kappa_sym, _gamma, _c, _a1, sf2_sym, d0_sym)
    return sp.lambdify(args, [e["T12"], e["T13"], e["T22"], e["L"]], modules=[{}])


def _error_series(nul: Any, consts: tuple[float, float, float, float], m: np.ndarray, A: np.ndarray,
                  n_nodes: int) -> Jet:
    """Series of ``E`` (order ``len(nul.delta) - 2``) from the null unknowns' series, on an ``n_nodes`` rule."""
    c, a1, sf2, d0 = consts
    nodes, weights = gram_law_quadrature(c, n_nodes)
    dl, dt, kp = Jet(nul.delta), Jet(nul.delta_tilde), Jet(nul.kappa)
    gam = Jet.variable(nul.gamma, dl.order)
    T12, T13, T22, L = (v.integrate(weights) for v in _trace_integrand_series()(nodes, dl, dt, kp, gam, *consts))
    T23, T33 = (1 - gam * dt) / c, (1 - gam * (1 + dl) * L) / c
    rows = [[dt, T12, T13], [T12, T22, T23], [T13, T23, T33]]
    T = Jet(np.stack([np.stack([e.coefficients for e in row], axis=-1) for row in rows], axis=-2))
    k = m.size
    Gam = np.outer(m, m) + np.eye(k)
    C = _low_rank_matrix(A, Gam, c)
    Om = Jet(np.stack([np.kron(Tk, Gam) for Tk in T.coefficients]))
    b = Jet(np.stack([np.kron(Tk[0], m) for Tk in T.coefficients]))
    S = (np.eye(3 * k) + Om @ C).inverse()
    yqy = dt - b @ ((C @ S) @ b)
    return -(gam * gam).truncate(dl.order - 1) * yqy.derivative()
