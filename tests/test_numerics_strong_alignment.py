"""numerics.strong_alignment_mc: the paired, label-averaged Monte Carlo behind claim B9.

Checked against an independent computation of the same numbers (the in-sample residual split ``T1 + T2`` from a QR
basis of the features, docs/strong_alignment.md step 2), for reproducibility, and for refused arguments.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from numerics import attention_features, sample_signal_plus_noise, strong_alignment_mc


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
    out = strong_alignment_mc(activation, c, t, p, [0.0], trials, seed)
    n = int(round(p / c))
    w = np.zeros(p)
    w[0] = math.sqrt(t * math.sqrt(p))
    for k, child in enumerate(np.random.SeedSequence(seed).spawn(trials)):
        X, _, _ = sample_signal_plus_noise(n, p, 1.0, np.random.default_rng(child), labels="iid")
        assert out["attention"][k, 0] == pytest.approx(_split_by_qr(attention_features(X, activation, w, w), X[0]),
                                                       abs=1e-10)
        assert out["ridge"][k, 0] == pytest.approx(_split_by_qr(X, X[0]), abs=1e-10)


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
