"""The symbolic side of the structured (spiked) attention equivalent: the null model's trace integrands, its free
energy and closed forms, and the low-rank matrix of the spike and signal directions, as sympy expressions.

Private: :mod:`theory.structured` re-exports the public names and evaluates them numerically.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from .validation import as_array, as_float, finite_result
from .symbols import a1 as _a1
from .symbols import c as _c
from .symbols import delta as _delta
from .symbols import gamma as _gamma


# symbols local to the derivation
l_sym = sp.Symbol("l", nonnegative=True)  # eigenvalue of G = Z^T Z / p
delta_t = sp.Symbol("delta_t", positive=True)  # delta~ = tau(Q0)
sf2_sym = sp.Symbol("s_f2", nonnegative=True)  # s_f^2 = nu - a1^2
d0_sym = sp.Symbol("d0", real=True)  # diagonal constant of the kernel
kappa_sym = sp.Symbol("kappa", real=True)  # third unknown of the corrected (symmetric-noise) null system


# ============================================================================ symbolic layer
def _A(l: sp.Expr) -> sp.Expr:
    return _a1 * (l - 1) + d0_sym


def _den() -> sp.Expr:
    """``D(l) = gamma (1 + delta)(1 + s_f^2 l delta~) + c l (A(l) - kappa)^2`` (``kappa = 0``: first reconstruction)."""
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

    In particular ``kappa = s_f^2 tau(Q0 K0 G)``.  (The first reconstruction's system, ``kappa = 0``, does not close
    this way: its ``T13 = int l A / D`` needs ``I_2``.)  The numeric path integrates ``I_0, I_1, I_2`` instead, for
    both systems; the tests check it against these forms.

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
    return finite_result("structured_low_rank_matrix", low_rank_matrix(A, Gamma, c), A=A, Gamma=Gamma, c=c)


def low_rank_matrix(A: np.ndarray, Gamma: np.ndarray, c: float) -> np.ndarray:
    """:func:`structured_low_rank_matrix` of checked arguments."""
    N, Z, I = Gamma / c, np.zeros(A.shape), np.eye(A.shape[0])
    return np.block([[A.T @ N @ N @ A + A.T @ N @ A, A.T @ N, A.T], [N @ A, I, Z], [A, Z, Z]])


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
