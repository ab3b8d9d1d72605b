"""Tests of the speed-oriented parts of numerics.estimator (the statistical stopping rule and the cheaper,
algebraically equal computations): each compares with the direct computation it replaces."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from numerics import IPSModel, PairwiseInteractionEstimator


def _data(M=3000, N=4, d=5, seed=0, noise=0.1):
    m = IPSModel(d=d, N=N, rank=1, degree=3, noise=noise, seed=seed)
    X, Y = m.sample(M, seed + 1)
    return m, X, Y


def test_stat_tol_is_validated():
    with pytest.raises(ValueError, match="stat_tol"):
        PairwiseInteractionEstimator(stat_tol=-0.1)


def test_range_from_partial_selection_equals_kthvalue():
    u = torch.randn(7, 20, dtype=torch.float64)
    e = PairwiseInteractionEstimator(range_quantile=0.05)
    lo, hi, ilo, ihi = e._range(u)
    flat = u.reshape(-1)
    k = max(1, int(np.floor(0.05 * flat.numel())))
    assert float(lo) == float(torch.kthvalue(flat, k).values)
    assert float(hi) == float(torch.kthvalue(flat, flat.numel() - k + 1).values)
    assert float(flat[ilo]) == float(lo) and float(flat[ihi]) == float(hi)


def test_moment_starts_equal_the_direct_formulas():
    m, X, Y = _data(M=500, N=4, d=4)
    e = PairwiseInteractionEstimator(rank=1)
    e._setup(X, Y)
    (U1, V1), (U2, V2) = e._moment_starts(X, Y)
    M, N, d = X.shape
    Xf = X.reshape(-1, d)
    Sinv = np.linalg.inv(np.cov(Xf, rowvar=False) + 1e-10 * np.eye(d))
    Yc = Y - Y.mean()
    S = (X.sum(axis=1, keepdims=True) - X) / (N - 1)  # mean of the other tokens
    C1 = np.einsum("mi,mik,mil->kl", Yc, X, S) / (M * N)
    Uu, sv, Vt = np.linalg.svd(Sinv @ C1 @ Sinv)
    np.testing.assert_allclose(U1 @ V1.T, sv[0] * np.outer(Uu[:, 0], Vt[0]), rtol=1e-9, atol=1e-12)
    C2 = np.einsum("mi,mik,mil->kl", Yc, X, X) / (M * N)
    w = Yc.sum(axis=1)
    C3 = (np.einsum("m,mjk,mjl->kl", w, X, X) / (M * N) - C2) / (N - 1)
    for E, C in ((U2, C2), (V2, C3)):
        ev, vec = np.linalg.eigh(Sinv @ (0.5 * (C + C.T)) @ Sinv)
        top = vec[:, np.argmax(np.abs(ev))]
        assert abs(abs(float(E[:, 0] @ top)) - 1.0) < 1e-9


def test_kaufman_gradient_uses_the_same_Bt_resid():
    m, X, Y = _data(M=200)
    e = PairwiseInteractionEstimator(rank=1, degree=2, n_intervals=4, ridge=1e-6)
    e._setup(X, Y)
    U, V = e._balance(torch.randn(5, 1, dtype=torch.float64), torch.randn(5, 1, dtype=torch.float64))
    B, lo, hi = e._design(U, V)
    loss, c, sol = e._solve(B, full=True)
    np.testing.assert_allclose(sol["Bt_resid"].numpy(), (B.T @ sol["resid"]).numpy(), rtol=1e-7, atol=1e-10)


def test_statistical_stopping_costs_no_accuracy():
    """The rule at 100x its default strength (stat_tol = 1, so that it fires on a small problem) against
    tol alone (stat_tol = 0): it ends the fit earlier, the objective stays within its statistical
    resolution sigma^2 q / (M N) of the longer fit's, and the L2 error within 5 % (measured: 1.6 %)."""
    m = IPSModel(d=10, N=5, rank=1, truth="bspline", degree=3, token_law="uniform", noise=0.1, seed=1)
    X, Y = m.sample(2000, 2)
    kw = dict(rank=1, degree=1, n_intervals=16)
    a = PairwiseInteractionEstimator(stat_tol=1.0, **kw).fit(X, Y)
    b = PairwiseInteractionEstimator(stat_tol=0.0, **kw).fit(X, Y)
    M, N, d = X.shape
    resolution = b.objective_ * (2 * d - 1) / (M * N)
    assert a.n_iter_ < b.n_iter_  # the rule fired
    assert a.objective_ - b.objective_ <= resolution  # measured 0.12 x resolution
    assert abs(float(np.sum(a.A_ * b.A_))) > 1 - 1e-3  # the same minimum
    ea, _ = a.l2_error(m, n_pairs=2**15, rng=5)
    eb, _ = b.l2_error(m, n_pairs=2**15, rng=5)
    assert abs(ea - eb) <= 0.05 * eb
