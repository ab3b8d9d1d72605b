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

from numerics import MonteCarloSettings, sample_signal_plus_noise, strong_alignment_mc

def _iid(trials: int, seed: int, **kw) -> MonteCarloSettings:
    return MonteCarloSettings(trials, seed, labels="iid", **kw)


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
    out = strong_alignment_mc(activation, c, t, p, [0.0, 0.05], _iid(trials, seed))
    n = int(round(p / c))
    for k, child in enumerate(np.random.SeedSequence(seed).spawn(trials)):
        X, _, _ = sample_signal_plus_noise(n, p, 1.0, np.random.default_rng(child), labels="iid")
        phi = _features(X, activation, t)
        assert out["attention"][k, 0] == pytest.approx(_split_by_qr(phi, X[0]), abs=1e-9)
        assert out["ridge"][k, 0] == pytest.approx(_split_by_qr(X, X[0]), abs=1e-10)
        assert out["attention"][k, 1] == pytest.approx(_label_average(phi, X[0], 0.05), rel=1e-8)
        assert out["ridge"][k, 1] == pytest.approx(_label_average(X, X[0], 0.05), rel=1e-8)


def test_reproducible_and_interpolating_above_c_1():
    a = strong_alignment_mc("tanh", 2.0, 1.0, 16, [0.0, 1e-3], _iid(3, 7))
    b = strong_alignment_mc("tanh", 2.0, 1.0, 16, [0.0, 1e-3], _iid(3, 7))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert np.allclose(a["ridge"][:, 0], 0.0, atol=1e-10) and np.all(a["attention"][:, 1] > a["ridge"][:, 1])


@pytest.mark.parametrize("kw", [dict(c=0.0), dict(t=-1.0), dict(p=1), dict(gammas=[-1.0]), dict(snr=float("nan")),
                                dict(settings=MonteCarloSettings(2, 0)), dict(settings=(2, 0)),
                                dict(settings=_iid(2**31, 0))])
def test_refuses_bad_arguments(kw):
    args = dict(activation="erf", c=0.5, t=1.0, p=8, gammas=[0.0], settings=_iid(2, 0)) | kw
    snr = args.pop("snr", 1.0)
    with pytest.raises((ValueError, TypeError)):
        strong_alignment_mc(**args, snr=snr)


def _smoother(features: np.ndarray, gamma: float) -> np.ndarray:
    n = features.shape[1]
    if gamma == 0.0:
        basis, _ = np.linalg.qr(features.T)
        return basis @ basis.T
    return features.T @ np.linalg.solve(features @ features.T + n * gamma * np.eye(features.shape[0]), features)


@pytest.mark.parametrize("gamma", [0.0, 0.05])
def test_parts_risk_and_leverage_against_a_dense_smoother(gamma):
    """Signal, noise, risk and the binned leverage of one draw from the hat matrix written out (``S``, ``R = I - S``)."""
    p, c, t, seed = 20, 0.5, 1.0, 3
    edges = np.array([0.0, 0.7, 1.5, np.inf])
    out = strong_alignment_mc("erf", c, t, p, [gamma], _iid(2, seed), bins=edges)
    for k, child in enumerate(np.random.SeedSequence(seed).spawn(2)):
        X, _, _ = sample_signal_plus_noise(int(p / c), p, 1.0, np.random.default_rng(child), labels="iid")
        g, v = np.tanh(X[0]), 1 - np.tanh(X[0]) ** 2
        for name, phi in (("attention", _features(X, "erf", t)), ("ridge", X)):
            S = _smoother(phi, gamma)
            R = np.eye(S.shape[0]) - S
            n = S.shape[0]
            signal, noise = g @ R @ R @ g / n, v @ np.diag(R @ R) / n
            assert out[f"{name}_signal"][k, 0] == pytest.approx(signal, abs=1e-9)
            assert out[f"{name}_noise"][k, 0] == pytest.approx(noise, abs=1e-9)
            assert out[f"{name}_risk"][k, 0] == pytest.approx(signal + noise + 2 * v @ np.diag(S) / n, abs=1e-9)
            if name == "attention":
                which = np.digitize(np.abs(X[0]), edges) - 1
                want = [np.diag(S)[which == b].mean() for b in range(3)]
                assert np.allclose(out["attention_leverage"][k, 0], want, atol=1e-9)


def test_risk_is_the_mean_error_on_drawn_fresh_labels():
    """Fresh labels drawn from the posterior at the same tokens, training labels drawn too: the mean squared error
    of the fit estimates the label-averaged risk (within 4 SE over 4000 pairs of label draws)."""
    p, c, seed = 12, 0.5, 9
    out = strong_alignment_mc("tanh", c, 1.0, p, [0.0], _iid(1, seed))
    X, _, _ = sample_signal_plus_noise(int(p / c), p, 1.0, np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0]),
                                       labels="iid")
    S = _smoother(_features_tanh(X, 1.0), 0.0)
    rng = np.random.default_rng(0)
    prob = (1 + np.tanh(X[0])) / 2
    y, fresh = (np.where(rng.random((2, 4000, X.shape[1])) < prob, 1.0, -1.0))
    losses = ((fresh - y @ S.T) ** 2).mean(axis=1)
    assert abs(losses.mean() - out["attention_risk"][0, 0]) < 4 * losses.std() / math.sqrt(losses.size)


def _features_tanh(X: np.ndarray, t: float) -> np.ndarray:
    p = X.shape[0]
    a = X[0]
    K = np.tanh((X.T @ X + t * math.sqrt(p) * np.outer(a, a)) / math.sqrt(p)) / math.sqrt(p)
    np.fill_diagonal(K, 0.0)
    return X @ K


def test_bins_refused_unless_increasing():
    with pytest.raises(ValueError, match="bins"):
        strong_alignment_mc("erf", 0.5, 1.0, 8, [0.0], _iid(1, 0), bins=[1.0, 0.5])


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs CUDA")
@pytest.mark.cuda
def test_cuda_gives_the_cpus_numbers():
    """The draws are made on the CPU; the kernel and the eigendecompositions on the GPU give every output to 1e-10."""
    kw = dict(bins=[0.0, 0.7, 1.5, 40.0])
    a = strong_alignment_mc("erf", 0.5, 1.0, 64, [0.0, 1e-3], _iid(2, 3), **kw)
    b = strong_alignment_mc("erf", 0.5, 1.0, 64, [0.0, 1e-3], _iid(2, 3, device="cuda"), **kw)
    assert a.keys() == b.keys()
    assert all(np.allclose(a[k], b[k], rtol=0, atol=1e-10, equal_nan=True) for k in a)


def test_projection_path_matches_the_eigendecomposition():
    """At gamma = 0 with p < n the smoother is a projection (Cholesky basis); it agrees with the eigenpairs' route,
    and a rank-deficient Phi goes to the eigendecomposition (which handles the null space)."""
    import torch

    import numerics._ridge_solvers as rs

    gen = torch.Generator().manual_seed(3)
    m = torch.tanh(torch.randn(3, 300, generator=gen, dtype=torch.float64))
    full = torch.randn(3, 120, 300, generator=gen, dtype=torch.float64)
    low = full.clone()
    low[:, 60:] = low[:, :60]  # rank 60
    for Phi in (full, low):
        g = torch.zeros(1, dtype=torch.float64)
        lam, V, positive = rs._positive_eigenpairs(Phi)
        kept = torch.where(positive, torch.ones_like(lam.unsqueeze(-1)), torch.zeros_like(lam.unsqueeze(-1)))
        leverage = (V**2) @ kept
        out = rs.smoother_parts(Phi, m, g)
        assert torch.allclose(out[3], leverage, atol=1e-10)
        v = 1 - m**2
        assert torch.allclose(out[2][:, 0], (v * leverage[..., 0]).sum(dim=1) / 300, atol=1e-12)
    assert rs._projection_parts(low, m, 1 - m**2, 1) is None
    assert rs._projection_parts(full, m, 1 - m**2, 1) is not None


def test_activations_and_strengths_on_shared_draws_are_each_pair_alone_bit_for_bit():
    """Lists of activations and strengths: every pair on the same draws, each equal to a call with that pair alone
    (the same seed), ridge repeated along the new axes; a one-entry list keeps its axis."""
    edges = [0.0, 0.5, 1.5, np.inf]
    grid = strong_alignment_mc(["erf", "gelu"], 2.0, [0.5, 2.0], 16, [1e-3, 1e-2], _iid(3, 11), bins=edges)
    assert grid["attention"].shape == (2, 2, 3, 2) and grid["attention_leverage"].shape == (2, 2, 3, 2, 3)
    for i, act in enumerate(["erf", "gelu"]):
        for j, t in enumerate([0.5, 2.0]):
            alone = strong_alignment_mc(act, 2.0, t, 16, [1e-3, 1e-2], _iid(3, 11), bins=edges)
            for key, value in alone.items():
                np.testing.assert_array_equal(grid[key][i, j], value)
    assert strong_alignment_mc(["erf"], 0.5, 1.0, 16, [0.0], _iid(2, 0))["ridge"].shape == (1, 2, 1)
    with pytest.raises(ValueError, match="t must not be an empty list"):
        strong_alignment_mc("erf", 0.5, [], 16, [0.0], _iid(2, 0))
