"""The symbolic side of the structured (spiked) attention equivalent: the null model's trace integrands as sympy
expressions, and the low-rank matrix of the spike and signal directions.

Private: :mod:`theory.structured` re-exports :func:`null_trace_expressions` and evaluates it numerically.  The
derivation's cross-checks (the free energy, the traces' closed forms, step 3 in closed form for ``k = 1``) are
test helpers in ``tests/theory/test_structured.py``.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

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


def low_rank_matrix(A: np.ndarray, Gamma: np.ndarray, c: float) -> np.ndarray:
    """The ``3k x 3k`` matrix ``C`` of Step 2 (``N = R R^T / p -> Gamma / c``) of ``A = a1 (I + k_K k_Q^T)`` and
    ``Gamma = m m^T + I`` (``k x k``, ``1 <= k <= 3``: the span of ``mu, w_K, w_Q``) and ``c = p / n``."""
    N, Z, I = Gamma / c, np.zeros(A.shape), np.eye(A.shape[0])
    return np.block([[A.T @ N @ N @ A + A.T @ N @ A, A.T @ N, A.T], [N @ A, I, Z], [A, Z, Z]])
