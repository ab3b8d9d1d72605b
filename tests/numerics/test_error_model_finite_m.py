"""The finite-M error model (:func:`numerics.error_model.predict_log_error`) against the estimator it describes.

Configurations here are used by no check (truth seed 123, 5 knots, N = 4), so the model is tested out of sample.
For d = 1 the model is the law of the estimator's error exactly (its fit is the least-squares fit the model
solves); for d > 1 it linearises the matrix at A*, tested where the optimiser reaches the global minimum.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numerics.error_model import (DesignStopping, EvalSet, _Features, _normal_equations, empirical_range,
                                  expected_log_quadratic, predict_error, predict_error_grid, predict_log_error,
                                  predict_log_errors, RANGE_Q)
from numerics.estimator import PairwiseInteractionEstimator
from numerics.ips import IPSModel
from verify.checks._paper_a_numerics import model_for, trial

CFG = {"d": 1, "N": 4, "r": 1, "P": 3, "n_knots": 5, "truth_seed": 123, "law": "uniform", "sigma": 0.01}


def test_expected_log_of_a_shifted_quadratic_form_matches_sampling():
    rng = np.random.default_rng(1)
    for b0, k in ((0.3, 5), (0.0, 3), (2.0, 40)):
        lam, mu = rng.uniform(0.01, 1.0, k), rng.normal(0.0, 1.0, k)
        w = rng.standard_normal((200_000, k))
        q = b0 + ((w + mu) ** 2) @ lam
        elog, mean = expected_log_quadratic(b0, lam, mu**2)
        se = np.log(q).std() / math.sqrt(q.size)
        assert abs(elog - np.log(q).mean()) < 4 * se
        assert mean == pytest.approx(b0 + np.sum(lam * (1 + mu**2)), rel=1e-12)


def test_d1_least_squares_fit_on_a_design_is_the_estimator():
    """Same data, same evaluation pairs: the model's fit and the estimator's have the same error (d = 1)."""
    model = model_for(CFG)
    K, M = 7, 150
    X, Y = model.sample(M, np.random.default_rng(4))
    ii, jj = np.nonzero(~np.eye(model.N, dtype=bool))
    lo, hi = empirical_range(model.pair_values(X)[:, ii, jj].reshape(-1))
    feats = _Features(model, lo, hi, K, 1, True)
    S, b = _normal_equations(model, feats, X, Y)
    c = np.linalg.solve(S, b)
    ev = EvalSet(model, 2**14, 9)
    eb, _, _ = ev.features(feats)
    mine = float(np.mean((eb @ c - ev.g) ** 2))
    est = PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=K, ridge=0.0, range_quantile=RANGE_Q).fit(X, Y)
    theirs, _ = est.l2_error(model, n_pairs=2**14, rng=np.random.default_rng([9, 11]))
    assert mine == pytest.approx(theirs, rel=1e-8)


def _simulated_log_error(cfg: dict, K: int, M: int, reps: int, ridge: float) -> tuple[float, float]:
    cell = {**cfg, "K": K, "M": M, "restarts": 2, "max_iter": 50, "n_pairs": 2**15, "ridge": ridge}
    le = np.log([trial(cell, 500 + i)["err"] for i in range(reps)])
    return float(le.mean()), float(le.std(ddof=1) / math.sqrt(reps))


@pytest.mark.parametrize("cfg, K, M, reps, ridge", [
    (CFG, 8, 200, 150, 0.0),  # d = 1: exact
    ({**CFG, "d": 2}, 13, 2000, 40, 1e-4),  # d = 2: linearised in A
])
def test_model_predicts_the_mean_log_error_of_the_estimator(cfg, K, M, reps, ridge):
    q = predict_log_error(model_for(cfg), K, 1, M, ridge=ridge, seed=5, stopping=DesignStopping(se_target=0.005))
    sim, se = _simulated_log_error(cfg, K, M, reps, ridge)
    assert abs(sim - q["log_error"]) < 4 * math.hypot(se, q["se"])


def test_predict_log_error_refuses_bad_input():
    model = model_for(CFG)
    with pytest.raises(ValueError):
        predict_log_error(model, 0, 1, 100)
    with pytest.raises(ValueError):
        predict_log_error(model, 4, 1, 100, ridge=-1.0)
    with pytest.raises(ValueError, match="Gaussian"):
        predict_log_error(IPSModel(d=1, N=4, noise_law="rademacher", n_knots=5), 4, 1, 100)


@pytest.mark.parametrize("d, N, r, ridge", [(1, 4, 1, 0.0), (3, 4, 1, 1e-4), (4, 3, 2, 0.0)])
def test_variants_on_shared_designs_are_the_single_models_bit_for_bit(d, N, r, ridge):
    """predict_log_errors shares the designs, the normal equations and the evaluation features between noise levels
    and with/without the A-tangent directions (a fit without them is the basis block of the fit with them): every
    variant's result equals its own predict_log_error exactly, stopping rule included."""
    cfg = {**CFG, "d": d, "N": N, "r": r}
    variants = [(True, 0.002), (True, 0.05), (False, 0.05), (False, 0.002)]
    for K, M in ((5, 40), (8, 120)):
        got = predict_log_errors(model_for(cfg), K, 1, M, variants, ridge=ridge, seed=7, n_eval=2**10,
                                 stopping=DesignStopping(se_target=0.03, max_designs=12))
        for (with_A, sigma), q in zip(variants, got):
            assert q == predict_log_error(model_for({**cfg, "sigma": sigma}), K, 1, M, ridge=ridge, with_A=with_A,
                                          seed=7, n_eval=2**10,
                                          stopping=DesignStopping(se_target=0.03, max_designs=12))


@pytest.mark.parametrize("d, r, with_A", [(1, 1, True), (3, 1, True), (4, 2, True), (3, 1, False)])
def test_prediction_grid_is_one_prediction_per_K_and_noise_bit_for_bit(d, r, with_A):
    """predict_error_grid draws the population once for every K and noise level: the numbers of predict_error."""
    cfg = {**CFG, "d": d, "r": r}
    Ks, noises = [4, 7, 11], [0.3, 1.0]
    grid = predict_error_grid(model_for(cfg), Ks, 1, noises=noises, n_pop=300, n_pairs=2**11, seed=2, with_A=with_A)
    for K, row in zip(Ks, grid):
        for sigma, q in zip(noises, row):
            assert q == predict_error(model_for({**cfg, "sigma": sigma}), K, 1, n_pop=300, n_pairs=2**11, seed=2,
                                      with_A=with_A)
