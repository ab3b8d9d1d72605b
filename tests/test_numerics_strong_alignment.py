"""numerics.strong_alignment_mc: the paired, label-averaged Monte Carlo behind claim B9.

Checked against an independent computation of the same numbers: the kernel built here from its definition
``f((X^T X + s a a^T) / sqrt p) / sqrt p`` with ``s = t sqrt p`` (scipy's erf and gelu), then at ``gamma = 0`` the
in-sample residual split ``T1 + T2`` from a QR basis (docs/strong_alignment.md step 2) and at ``gamma > 0`` the
label average ``gamma^2/n tr(Q^2 (m m^T + diag(1 - m^2)))`` by a dense solve; also reproducibility and refused
arguments.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from scipy import special

from numerics import sample_signal_plus_noise, strong_alignment_mc

#: centred activations, written out here (E f(xi) = 0 for xi ~ N(0, 1); gelu's mean E[xi Phi(xi)] = 1/(2 sqrt pi))
F = {"erf": special.erf, "gelu": lambda x: x * special.ndtr(x) - 1 / (2 * math.sqrt(math.pi))}


def _features(X: np.ndarray, activation: str, t: float) -> np.ndarray:
    """``Phi = X K`` with ``K = f((X^T X + t sqrt(p) a a^T) / sqrt p) / sqrt p``, zero diagonal."""
    p = X.shape[0]
    a = X[0]
    K = F[activation]((X.T @ X + t * math.sqrt(p) * np.outer(a, a)) / math.sqrt(p)) / math.sqrt(p)
    np.fill_diagonal(K, 0.0)
    return X @ K


def _label_average(features: np.ndarray, a: np.ndarray, gamma: float) -> float:
    n = a.size
    Q = np.linalg.inv(features.T @ features / n + gamma * np.eye(n))
    m = np.tanh(a)
    M = np.outer(m, m) + np.diag(1 - m * m)
    return float(gamma**2 * np.trace(Q @ Q @ M) / n)


def _split_by_qr(features: np.ndarray, a: np.ndarray) -> float:
    """``T1 + T2`` of one draw (``snr = 1``): the label average of the in-sample residual, from a QR basis."""
    basis, _ = np.linalg.qr(features.T)
    g = np.tanh(a)
    resid = g - basis @ (basis.T @ g)
    leverage = (basis**2).sum(axis=1)
    return float(resid @ resid + ((1 - leverage) * (1 - g * g)).sum()) / a.size


@pytest.mark.parametrize("activation,c,t", [("erf", 0.5, 1.0), ("gelu", 0.25, 0.5)])
def test_matches_the_residual_split(activation, c, t):
    p, trials, seed = 24, 2, 5
    out = strong_alignment_mc(activation, c, t, p, [0.0, 0.05], trials, seed)
    n = int(round(p / c))
    for k, child in enumerate(np.random.SeedSequence(seed).spawn(trials)):
        X, _, _ = sample_signal_plus_noise(n, p, 1.0, np.random.default_rng(child), labels="iid")
        phi = _features(X, activation, t)
        assert out["attention"][k, 0] == pytest.approx(_split_by_qr(phi, X[0]), abs=1e-9)
        assert out["ridge"][k, 0] == pytest.approx(_split_by_qr(X, X[0]), abs=1e-10)
        assert out["attention"][k, 1] == pytest.approx(_label_average(phi, X[0], 0.05), rel=1e-8)
        assert out["ridge"][k, 1] == pytest.approx(_label_average(X, X[0], 0.05), rel=1e-8)


def test_reproducible_and_interpolating_above_c_1():
    a = strong_alignment_mc("tanh", 2.0, 1.0, 16, [0.0, 1e-3], 3, 7)
    b = strong_alignment_mc("tanh", 2.0, 1.0, 16, [0.0, 1e-3], 3, 7)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert np.allclose(a["ridge"][:, 0], 0.0, atol=1e-10) and np.all(a["attention"][:, 1] > a["ridge"][:, 1])


@pytest.mark.parametrize("kw", [dict(c=0.0), dict(t=-1.0), dict(p=1), dict(n_trials=0), dict(seed=-1),
                                dict(gammas=[-1.0]), dict(snr=float("nan"))])
def test_refuses_bad_arguments(kw):
    args = dict(activation="erf", c=0.5, t=1.0, p=8, gammas=[0.0], n_trials=2, seed=0) | kw
    snr = args.pop("snr", 1.0)
    with pytest.raises((ValueError, TypeError)):
        strong_alignment_mc(**args, snr=snr)
