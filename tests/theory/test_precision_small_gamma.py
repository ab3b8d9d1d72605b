"""Digits kept at small gamma: ``mp_delta`` near ``c = 1`` and the structured solver's Woodbury step for ``c < 1``.

References are evaluated with mpmath at 40-50 digits from the same float64 inputs, so that each test measures the
rounding of one computation, not the model.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

import theory._structured_symbolic as structured_symbolic
import theory._structured_traces as structured_traces
from theory import AttentionModel
from theory import mp_delta

EPS = np.finfo(float).eps


# ----------------------------------------------------------------------------------------------- mp_delta
def _delta_exact(g: float, c: float) -> mp.mpf:
    """The positive root of ``delta = 1 / (gamma + c / (1 + delta))`` at the exact binary values of ``g, c``."""
    with mp.workdps(50):
        g, c = mp.mpf(g), mp.mpf(c)
        b = g + c - 1
        return 2 / (mp.sqrt(b * b + 4 * g) + b) if b > 0 else (mp.sqrt(b * b + 4 * g) - b) / (2 * g)


@pytest.mark.parametrize("c", [1.0, 1 + 1e-9, 1 - 1e-9, 0.999, 1.001, 0.5, 2.0, 1e-4, 1e4])
def test_mp_delta_is_correct_to_a_few_ulps(c):
    """Rounding analysis: ``b = gamma + (c - 1)``, ``hypot(b, 2 sqrt(gamma))``, one sum and one quotient, all of
    positive terms (no cancellation): at most about 8 roundings of ``eps / 2`` each, so ``4 eps``.  Before, ``(gamma +
    c) - 1`` lost ``gamma``'s digits at ``c = 1`` (5e-9 relative at ``gamma = 1e-16``) and ``b^2`` overflowed above
    ``gamma = 1e154`` (``delta = 0``)."""
    g = 10.0 ** np.arange(-300, 300, 0.5)
    got = mp_delta(g, c)
    err = max(float(abs(x - _delta_exact(y, c)) / _delta_exact(y, c)) for x, y in zip(got, g))
    assert err <= 4 * EPS, f"c = {c}: {err / EPS:.1f} ulps"


# ----------------------------------------------------------------------------------------------- structured solver
def _capture_traces(monkeypatch) -> dict:
    """Record the arguments of every ``woodbury`` call (the trace matrices of the grid points)."""
    seen: dict = {}
    inner = structured_traces.woodbury

    def spy(T, dT, m, A, c):
        seen.update(T=T.copy(), dT=dT.copy(), m=m.copy(), A=A.copy(), c=c)
        return inner(T, dT, m, A, c)

    monkeypatch.setattr(structured_traces, "woodbury", spy)
    return seen


def _kron(a: mp.matrix, b: mp.matrix) -> mp.matrix:
    out = mp.matrix(a.rows * b.rows, a.cols * b.cols)
    for i in range(a.rows):
        for j in range(a.cols):
            for p in range(b.rows):
                for q in range(b.cols):
                    out[i * b.rows + p, j * b.cols + q] = a[i, j] * b[p, q]
    return out


def _error_exact(g: float, T: np.ndarray, dT: np.ndarray, m: np.ndarray, A: np.ndarray, c: float) -> float:
    """``E = -gamma^2 d(y^T Q y / n)/dgamma`` from the traces, by the direct Woodbury form in 40-digit arithmetic."""
    with mp.workdps(40):
        M = lambda a: mp.matrix(np.atleast_2d(a).tolist())  # noqa: E731
        Gam = np.outer(m, m) + np.eye(m.size)
        C, Tm, dTm, G, mm = M(structured_symbolic.low_rank_matrix(A, Gam, c)), M(T), M(dT), M(Gam), M(m)
        Om, dOm = _kron(Tm, G), _kron(dTm, G)
        b, db = _kron(Tm[0, :], mm), _kron(dTm[0, :], mm)
        CS = C * (mp.eye(Om.rows) + Om * C) ** -1
        dcorr = (db * CS * b.T + b * CS * db.T - b * CS * dOm * CS * b.T)[0]
        return float(-mp.mpf(g) ** 2 * (dTm[0, 0] - dcorr))


CONFIGS = [(0.25, "tanh", 4.0, None), (0.5, "relu", 1.0, (2.0, "orthogonal")), (0.5, "tanh", 100.0, (4.0, "aligned")),
           (0.1, "sin", 100.0, None), (2.0, "tanh", 4.0, None)]


@pytest.mark.parametrize("c, activation, snr, spike", CONFIGS)
def test_structured_error_keeps_the_digits_of_its_traces(monkeypatch, c, activation, snr, spike):
    """E agrees with the exact evaluation of the same traces to ``eps (8 + 1 / gamma)`` relative.

    Rounding analysis: for ``c < 1`` the traces ``T`` have entries of order ``1 / gamma`` while ``E`` is of order one,
    so their rounding alone moves ``E`` by up to about ``eps / gamma`` relative (measured by 1-ulp perturbations of
    ``T``: 0.02 ``eps / gamma`` in these configurations); a stable evaluation adds a few ulps to that.  The direct
    form ``T11 - b C (I + Omega C)^{-1} b^T`` exceeded it by up to 5e6 times (1.2e-3 relative at ``gamma = 1e-8``,
    c = 0.5, snr = 100, aligned spike), because ``I + Omega C`` adds ``I`` to entries of order ``1 / gamma``."""
    seen = _capture_traces(monkeypatch)
    for g in (1e-8, 1e-6, 1e-4, 1e-2, 1.0):
        e = AttentionModel(c, activation, snr=snr, spike=spike).error(g, check_quadrature=False)
        exact = _error_exact(g, seen["T"], seen["dT"], seen["m"], seen["A"], seen["c"])
        assert abs(e - exact) <= EPS * (8 + 1 / g) * abs(exact), (g, abs(e - exact) / abs(exact))


@pytest.mark.parametrize("snr, spike", [(4.0, None), (100.0, (4.0, "aligned")), (1.0, (2.0, "orthogonal"))])
def test_structured_error_is_monotone_in_small_gamma(snr, spike):
    """c = 0.9, gamma in [1e-7, 3e-6] (grid ratio 1.14): E grows by about 3e-9 relative per step, far above the
    evaluation's rounding (below 1e-11 relative there, previous test); the direct form's rounding (7e-5 relative with
    the aligned spike) made E fall at 11 of 24 steps."""
    g = np.geomspace(1e-7, 3e-6, 25)
    e = np.asarray(AttentionModel(0.9, "tanh", snr=snr, spike=spike).error(g))
    assert np.all(np.diff(e) > 0), np.diff(e) / e[1:]


def test_singular_traces_use_the_direct_form():
    """a1 = 0, sf2 = 0, d0 = 1 (K = I) makes two rows of T equal: the inverse form is not usable there, and the
    result is still the ridge error (the identity-kernel reduction)."""
    from theory import ridge_error_values

    e = AttentionModel(0.3, {"a1": 0.0, "sf2": 0.0, "d0": 1.0}, snr=1.0).error(2.0)
    assert e == pytest.approx(float(ridge_error_values(2.0, 0.3, 1.0)), rel=1e-12)
