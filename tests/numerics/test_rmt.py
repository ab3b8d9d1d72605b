"""Tests of numerics.rmt and its Monte Carlo (numerics.simulate_model): normalisation identities, shapes, W never
formed, seeds, invalid input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics import MonteCarloSettings, simulate_model
from numerics.rmt import (
    attention_features,
    interpolation_error,
    kernel_eigenvalues,
    ridge_features,
    sample_signal_plus_noise,
)
from theory import AttentionModel, Spike

GAMMAS = np.array([1e-4, 1e-2, 0.3, 1.0, 10.0])


def _tanh(t):
    return np.tanh(t)


# ---------------------------------------------------------------------------------------------
# sampler
# ---------------------------------------------------------------------------------------------
def test_sampler_shapes_and_model():
    X, y, mu = sample_signal_plus_noise(10, 6, 2.0, np.random.default_rng(0))
    assert X.shape == (6, 10) and y.shape == (10,) and mu.shape == (6,)
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert y.sum() == 0  # balanced
    assert math.isclose(mu @ mu, 2.0)
    assert np.count_nonzero(mu) == 1 and mu[0] > 0  # e_1 direction by default


def test_sampler_is_x_equals_mu_y_plus_z_bit_for_bit():
    """``X = mu y^T + Z`` with the labels drawn first, then ``Z`` (the draws every cached cell and seed rests on)."""
    for snr, labels, mu in ((2.0, "balanced", None), (0.7, "iid", None), (0.0, "balanced", None),
                            (0.0, "balanced", np.linspace(-1.0, 1.0, 6))):
        X, y, mu_out = sample_signal_plus_noise(9, 6, snr, 3, labels=labels, mu=mu)
        g = np.random.default_rng(3)
        y_ref = g.permutation(np.repeat([1.0, -1.0], [5, 4])) if labels == "balanced" else \
            g.choice(np.array([-1.0, 1.0]), size=9)
        X_ref = np.outer(mu_out, y_ref) + g.standard_normal((6, 9))
        assert np.array_equal(y, y_ref) and np.array_equal(X.view(np.uint64), X_ref.view(np.uint64))


def test_batch_draws_equal_the_per_trial_sampler_bit_for_bit():
    """``Draws.sample`` draws each trial into its slot of the batch: the numbers of one ``draw_sample`` per seed."""
    from numerics._mc import Draws, draw_sample

    seeds = np.random.SeedSequence(5).spawn(3)
    for snr, labels in ((1.5, "balanced"), (0.0, "iid")):
        X, y = Draws(n=7, p=4, snr=snr, labels=labels, device="cpu").sample(seeds)
        for t, ss in enumerate(seeds):
            X_t, y_t, _ = draw_sample(7, 4, snr, np.random.default_rng(ss), labels)
            assert np.array_equal(X[t].numpy(), X_t) and np.array_equal(y[t].numpy(), y_t)


def test_sampler_mean_override():
    m = np.arange(5.0)
    X, y, mu2 = sample_signal_plus_noise(8, 5, 0.0, 1, mu=m)
    assert np.array_equal(mu2, m)


def test_sampler_iid_labels_and_odd_n():
    _, y, _ = sample_signal_plus_noise(7, 3, 0.0, 2)
    assert abs(y.sum()) == 1
    _, y2, _ = sample_signal_plus_noise(1000, 2, 0.0, 2, labels="iid")
    assert abs(y2.mean()) < 0.2 and set(np.unique(y2)) == {-1.0, 1.0}


def test_sampler_reproducible():
    a = sample_signal_plus_noise(12, 4, 1.0, 123)
    b = sample_signal_plus_noise(12, 4, 1.0, np.random.default_rng(123))
    for u, v in zip(a, b):
        assert np.array_equal(u, v)


def test_sampler_signal_mean():
    X, y, mu = sample_signal_plus_noise(4000, 3, 4.0, 5)
    est = X @ y / 4000  # -> mu
    assert np.allclose(est, mu, atol=0.1)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(n=0, p=3, snr=1.0), "n"),
        (dict(n=3, p=0, snr=1.0), "p"),
        (dict(n=3, p=3, snr=-1.0), "snr"),
        (dict(n=3, p=3, snr=1.0, labels="bogus"), "labels"),
        (dict(n=3, p=3, snr=1.0, mu=np.ones(4)), "mu"),
        (dict(n=3, p=3, snr=1.0, mu=np.array([1.0, np.nan, 0.0])), "mu"),
    ],
)
def test_sampler_invalid(kwargs, name):
    with pytest.raises(ValueError, match=name):
        sample_signal_plus_noise(rng=0, **kwargs)


# ---------------------------------------------------------------------------------------------
# interpolation error: normalisation identities
# ---------------------------------------------------------------------------------------------
def _direct(Phi, y, gammas):
    """The reference: one linear solve per gamma, ``w = (Phi Phi^T + n gamma I_p)^{-1} Phi y``,
    ``E = 1/n ||y - Phi^T w||^2`` (SPEC normalisation)."""
    p, n = Phi.shape
    out = []
    for g in np.atleast_1d(np.asarray(gammas, dtype=float)):
        w = np.linalg.solve(Phi @ Phi.T + n * g * np.eye(p), Phi @ y)
        out.append(np.sum((y - Phi.T @ w) ** 2) / n)
    return np.array(out)


@pytest.mark.parametrize("p, n", [(30, 20), (20, 30), (25, 25), (1, 9), (9, 1)])
def test_eigen_path_equals_direct_solve_ridge(p, n):
    X, y, _ = sample_signal_plus_noise(n, p, 1.0, 7)
    a = interpolation_error(ridge_features(X), y, GAMMAS)
    b = _direct(X, y, GAMMAS)
    assert np.allclose(a, b, rtol=1e-8, atol=1e-14)


@pytest.mark.parametrize("p, n", [(40, 24), (24, 40)])
@pytest.mark.parametrize("diagonal", ["removed", "kept"])
def test_eigen_path_equals_direct_solve_attention(p, n, diagonal):
    X, y, _ = sample_signal_plus_noise(n, p, 1.0, 8)
    Phi = attention_features(X, _tanh, diagonal=diagonal)
    assert np.allclose(interpolation_error(Phi, y, GAMMAS), _direct(Phi, y, GAMMAS), rtol=1e-8)


def test_error_equals_gamma2_yQ2y():
    """E = gamma^2/n y^T Q^2 y with Q = (Phi^T Phi/n + gamma)^-1 (the SPEC identity)."""
    X, y, _ = sample_signal_plus_noise(15, 11, 0.5, 3)
    n = 15
    for g in (1e-3, 0.5):
        Q = np.linalg.inv(X.T @ X / n + g * np.eye(n))
        ref = g**2 / n * y @ Q @ Q @ y
        assert math.isclose(interpolation_error(X, y, g)[0], ref, rel_tol=1e-9)


def test_gamma_zero_limits():
    # p < n: E(0) = ||P_null y||^2 / n; p > n: E(0) = 0 (interpolation)
    X, y, _ = sample_signal_plus_noise(20, 8, 0.0, 4)
    P = X.T @ np.linalg.pinv(X.T)
    ref = np.sum((y - P @ y) ** 2) / 20
    e = interpolation_error(X, y, [0.0, 1e-12])
    assert math.isclose(e[0], ref, rel_tol=1e-8) and math.isclose(e[1], ref, rel_tol=1e-6)
    X2, y2, _ = sample_signal_plus_noise(8, 20, 0.0, 4)
    assert interpolation_error(X2, y2, [0.0])[0] == pytest.approx(0.0, abs=1e-20)


@settings(max_examples=25, deadline=None)
@given(
    p=st.integers(1, 12),
    n=st.integers(1, 12),
    g=st.floats(1e-6, 1e3),
    seed=st.integers(0, 2**31),
)
def test_property_eigen_equals_direct_and_bounds(p, n, g, seed):
    rng = np.random.default_rng(seed)
    Phi = rng.standard_normal((p, n))
    y = rng.standard_normal(n)
    e = interpolation_error(Phi, y, g)[0]
    assert e == pytest.approx(_direct(Phi, y, g)[0], rel=1e-6, abs=1e-12)
    assert -1e-12 <= e <= y @ y / n + 1e-12  # shrinkage factors lie in [0, 1]


def test_error_monotone_in_gamma():
    X, y, _ = sample_signal_plus_noise(30, 20, 1.0, 9)
    e = interpolation_error(attention_features(X, _tanh), y, np.logspace(-6, 3, 40))
    assert np.all(np.diff(e) >= -1e-14)


def test_invalid_inputs_interpolation_error():
    X, y, _ = sample_signal_plus_noise(6, 4, 1.0, 0)
    with pytest.raises(ValueError, match="gammas"):
        interpolation_error(X, y, [-1.0])
    with pytest.raises(ValueError, match="gammas"):
        interpolation_error(X, y, [np.nan])
    with pytest.raises(ValueError, match="y"):
        interpolation_error(X, y[:-1], [1.0])
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="features"):
        interpolation_error(Xn, y, [1.0])
    with pytest.raises(ValueError, match="X"):
        attention_features(Xn, _tanh)
    with pytest.raises(ValueError, match="X"):
        ridge_features(Xn)
    with pytest.raises(ValueError, match="features"):
        interpolation_error(X[0], y, [1.0])


# ---------------------------------------------------------------------------------------------
# attention features
# ---------------------------------------------------------------------------------------------
def _attention_reference(X, f, W, diagonal):
    p = X.shape[0]
    K = f(X.T @ W @ X / np.sqrt(p)) / np.sqrt(p)
    if diagonal == "removed":
        np.fill_diagonal(K, 0.0)
    return X @ K


@pytest.mark.parametrize("diagonal", ["removed", "kept"])
def test_w_never_formed_equals_formed_w(diagonal):
    rng = np.random.default_rng(11)
    X = rng.standard_normal((7, 9))
    wk, wq = rng.standard_normal(7), rng.standard_normal(7)
    W = np.eye(7) + np.outer(wk, wq)
    ref = _attention_reference(X, np.tanh, W, diagonal)
    got = attention_features(X, _tanh, w_k=wk, w_q=wq, diagonal=diagonal)
    assert np.allclose(got, ref, rtol=1e-12, atol=1e-12)


def test_diagonal_modes_differ_only_by_diagonal():
    X, _, _ = sample_signal_plus_noise(9, 6, 0.0, 12)
    f = lambda t: np.maximum(t, 0) - 1 / np.sqrt(2 * np.pi)  # noqa: E731 (centred ReLU)
    kept = attention_features(X, f, diagonal="kept")
    removed = attention_features(X, f, diagonal="removed")
    dvals = f(np.sum(X * X, axis=0) / np.sqrt(6)) / np.sqrt(6)
    assert np.allclose(kept - removed, X * dvals[None, :])


def test_registry_name_is_centred():
    X, _, _ = sample_signal_plus_noise(9, 6, 0.0, 12)
    f = lambda t: np.maximum(t, 0) - 1 / np.sqrt(2 * np.pi)  # noqa: E731
    assert np.allclose(attention_features(X, "relu"), attention_features(X, f), atol=1e-12)


def test_attention_invalid():
    X, _, _ = sample_signal_plus_noise(5, 4, 0.0, 0)
    with pytest.raises(ValueError, match="diagonal"):
        attention_features(X, _tanh, diagonal="zero")
    with pytest.raises(ValueError, match="w_k"):
        attention_features(X, _tanh, w_k=np.ones(4))
    with pytest.raises(ValueError, match="w_q"):
        attention_features(X, _tanh, w_k=np.ones(4), w_q=np.ones(3))
    with pytest.raises(ValueError, match="activation"):
        attention_features(X, None)


def test_kernel_eigenvalues_symmetric_kernel():
    X, _, _ = sample_signal_plus_noise(12, 8, 0.0, 2)
    ev = kernel_eigenvalues(X, _tanh)
    K = np.tanh(X.T @ X / np.sqrt(8)) / np.sqrt(8)
    np.fill_diagonal(K, 0.0)
    assert np.allclose(ev, np.linalg.eigvalsh(K))
    assert math.isclose(ev.sum(), 0.0, abs_tol=1e-12)  # trace 0 with the diagonal removed


# ---------------------------------------------------------------------------------------------
# Monte Carlo
# ---------------------------------------------------------------------------------------------
def test_mc_reproducible_and_batch_independent():
    g = [1e-3, 1.0]
    model = AttentionModel(0.625, "tanh", 1.0)  # p = 10, n = 16
    a = simulate_model(model, 10, g, MonteCarloSettings(5, 3, batch_size=2))
    b = simulate_model(model, 10, g, MonteCarloSettings(5, 3, batch_size=5, n_jobs=2))
    assert np.allclose(a[0], b[0], rtol=1e-12)
    c = simulate_model(model, 10, g, MonteCarloSettings(5, 4))
    assert not np.allclose(a[0], c[0])

def test_mc_matches_single_draw_pipeline():
    g = np.array([1e-2, 1.0])
    data = AttentionModel(2.0, "identity", 0.5)
    mean, se, trials = simulate_model(data, 24, g, MonteCarloSettings(3, 5), kind="ridge", return_trials=True)
    ss = np.random.SeedSequence(5).spawn(3)
    for t in range(3):
        X, y, _ = sample_signal_plus_noise(12, 24, 0.5, np.random.default_rng(ss[t]))
        assert np.allclose(trials[t], interpolation_error(X, y, g), rtol=1e-10)
    assert np.allclose(mean, trials.mean(0)) and np.allclose(se, trials.std(0, ddof=1) / np.sqrt(3))


def test_mc_of_a_spiked_model_matches_its_single_draw_pipeline():
    """Trial t: the draw of SeedSequence(seed).spawn(n_trials)[t], the model's kernel with its spike padded to p."""
    g = np.array([1e-2, 0.5])
    model = AttentionModel(c=0.5, activation="erf", snr=1.0, spike=(4.0, "aligned"), diagonal="kept")
    _, _, trials = simulate_model(model, 16, g, MonteCarloSettings(3, 5, labels="iid", n_jobs=2), return_trials=True)
    w = np.zeros(16)
    w[0] = 2.0
    for t, ss in enumerate(np.random.SeedSequence(5).spawn(3)):
        X, y, _ = sample_signal_plus_noise(32, 16, 1.0, np.random.default_rng(ss), labels="iid")
        want = interpolation_error(attention_features(X, "erf", w, w, diagonal="kept"), y, g)
        np.testing.assert_allclose(trials[t], want, rtol=1e-9)

def test_mc_invalid():
    data = AttentionModel(1.0, "identity")
    with pytest.raises(ValueError, match="kind"):
        simulate_model(data, 4, [1.0], MonteCarloSettings(2, 0), kind="lasso")
    with pytest.raises(ValueError, match="n_trials"):
        simulate_model(data, 4, [1.0], MonteCarloSettings(1, 0), kind="ridge")
    with pytest.raises(ValueError, match="gammas"):
        simulate_model(data, 4, [-1.0], MonteCarloSettings(2, 0), kind="ridge")

def test_mc_ridge_close_to_theory_small():
    """A cheap sanity check of the whole pipeline against the closed-form ridge error."""
    import theory

    g = np.array([1e-2, 1.0])
    mean, se = simulate_model(AttentionModel(2.0, "identity", 1.0), 400, g, MonteCarloSettings(8, 1), kind="ridge")
    pred = theory.ridge_error_values(g, 2.0, 1.0)
    assert np.all(np.abs(mean - pred) <= 4 * se + 0.05 * pred)

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.cuda
def test_mc_cuda_matches_cpu():
    g = [1e-2, 1.0]
    model = AttentionModel(0.75, "tanh", 1.0)  # p = 24, n = 32
    a = simulate_model(model, 24, g, MonteCarloSettings(3, 1))
    b = simulate_model(model, 24, g, MonteCarloSettings(3, 1, device="cuda"))
    assert np.allclose(a[0], b[0], rtol=1e-8)

def test_label_average_is_the_mean_over_labels():
    """gamma^2/n tr Q^2 equals the exact average of E over all 2^n Rademacher label vectors (n small)."""
    import itertools

    from numerics.rmt import interpolation_error_label_average

    rng = np.random.default_rng(3)
    for p, n in [(5, 7), (9, 6)]:
        Phi = rng.standard_normal((p, n))
        g = np.array([1e-3, 0.2, 2.0])
        ys = np.array(list(itertools.product([-1.0, 1.0], repeat=n)))
        avg = np.mean([interpolation_error(Phi, y, g) for y in ys], axis=0)
        assert np.allclose(interpolation_error_label_average(Phi, g), avg, rtol=1e-10)


def test_label_average_with_label_means_is_the_mean_over_labels():
    """With posterior means m, the label average equals the exact m-weighted average over all 2^n label vectors,
    and m = 0 is the null model's average."""
    import itertools

    from numerics import label_posterior_mean, sample_signal_plus_noise
    from numerics.rmt import interpolation_error_label_average

    rng = np.random.default_rng(4)
    for p, n in [(3, 7), (9, 6), (6, 6)]:
        X, _, mu = sample_signal_plus_noise(n, p, 2.0, rng, labels="iid")
        Phi = rng.standard_normal((p, n)) * np.linspace(0.5, 2.0, n)
        m = label_posterior_mean(X, mu)
        g = np.array([0.0, 1e-3, 0.3, 2.0])
        ys = np.array(list(itertools.product([-1.0, 1.0], repeat=n)))
        weights = np.prod((1 + ys * m) / 2, axis=1)
        avg = sum(w * interpolation_error(Phi, y, g) for w, y in zip(weights, ys))
        assert np.allclose(interpolation_error_label_average(Phi, g, m), avg, rtol=1e-10, atol=1e-14)
        assert np.allclose(interpolation_error_label_average(Phi, g, np.zeros(n)),
                           interpolation_error_label_average(Phi, g), rtol=1e-10, atol=1e-14)


def test_label_mean_refused_outside_its_range():
    from numerics.rmt import interpolation_error_label_average

    Phi = np.ones((2, 3))
    with pytest.raises(ValueError, match="label_mean"):
        interpolation_error_label_average(Phi, [1.0], np.array([0.0, 1.5, 0.0]))
    with pytest.raises(ValueError, match="label_mean"):
        interpolation_error_label_average(Phi, [1.0], np.zeros(4))


def test_label_average_mc_requires_null_model():
    with pytest.raises(ValueError, match="label_average"):
        simulate_model(AttentionModel(1.0, "identity", 1.0), 4, [1.0], MonteCarloSettings(2, 0), kind="ridge",
                       label_average=True)
    m, se = simulate_model(AttentionModel(0.75, "identity"), 6, [1.0], MonteCarloSettings(3, 0), kind="ridge",
                           label_average=True)
    assert m.shape == (1,) and se[0] >= 0

def test_gaussian_equivalent_kernel():
    from numerics.rmt import gaussian_equivalent_kernel

    X = np.random.default_rng(0).standard_normal((6, 9))
    K = gaussian_equivalent_kernel(X, 0.5, 0.5, 1, symmetric=True)
    assert np.allclose(K, K.T) and np.allclose(np.diag(K), 0.0)
    K2 = gaussian_equivalent_kernel(X, 0.5, 0.5, 1, symmetric=False, d0=1.0)
    assert not np.allclose(K2, K2.T) and np.allclose(np.diag(K2), 1.0)
    lin = gaussian_equivalent_kernel(X, 0.7, 0.49, 1)  # s_f = 0: purely linear part
    ref = 0.7 * X.T @ X / 6
    np.fill_diagonal(ref, 0.0)
    assert np.allclose(lin, ref)
    with pytest.raises(ValueError, match="nu"):
        gaussian_equivalent_kernel(X, 1.0, 0.5, 1)


def test_benchmark_runs_tiny_and_paths_agree():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "interpolation.py"
    spec = importlib.util.spec_from_file_location("bench_interpolation", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    r = mod.run(quick=True, n=64, p=16, n_gammas=5)
    assert r["max_rel_diff_vs_naive"] < 1e-8 and r["max_rel_diff_vs_cached"] < 1e-8
    assert r["speedup_vs_naive"] > 0 and r["gflops_XtX"] > 0


@pytest.mark.parametrize("p, n", [(30, 20), (20, 30), (25, 25)])
def test_cholesky_path_equals_eigen_path(p, n):
    """One or few gammas use per-gamma Cholesky solves; many use one eigh: both equal the direct solve."""
    X, y, _ = sample_signal_plus_noise(n, p, 1.0, 21)
    Phi = attention_features(X, _tanh)
    grid = np.array([1e-5, 1e-3, 0.1, 1.0, 5.0])  # > 3 gammas: eigen path
    many = interpolation_error(Phi, y, grid)
    few = np.concatenate([interpolation_error(Phi, y, [g]) for g in grid])  # Cholesky path
    assert np.allclose(many, few, rtol=1e-7, atol=1e-15)
    assert np.allclose(few, _direct(Phi, y, grid), rtol=1e-7, atol=1e-15)
    # gamma = 0 with few gammas falls back to the eigen path
    assert interpolation_error(Phi, y, [0.0, 1.0]).shape == (2,)


# ---------------------------------------------------------------------------------------------
# several models on shared draws
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p,n", [(12, 24), (24, 12)])
def test_shared_mc_equals_separate_runs(p, n):
    """Same seed -> the same X, y for every model of a sequence as for the model alone, and for ridge (n_jobs and
    batching irrelevant)."""
    models = [AttentionModel(p / n, "tanh", 1.5, spike=s) for s in (None, (4.0, "aligned"), (1.0, "orthogonal"))]
    out = simulate_model(models, p, GAMMAS, MonteCarloSettings(5, 9, n_jobs=2, batch_size=2), kind=("true", "ridge"))
    assert out["true"].shape == (3, 5, GAMMAS.size) and out["ridge"].shape == (5, GAMMAS.size)
    for k, model in enumerate(models):
        t = simulate_model(model, p, GAMMAS, MonteCarloSettings(5, 9), return_trials=True)[2]
        np.testing.assert_allclose(out["true"][k], t, rtol=1e-12)
    r = simulate_model(models[0], p, GAMMAS, MonteCarloSettings(5, 9), kind="ridge", return_trials=True)[2]
    np.testing.assert_allclose(out["ridge"], r, rtol=1e-12)

def test_shared_mc_linearised_identity_activation_is_the_true_kernel():
    """f = identity: a1 = 1 and s_f = 0, so the linearised kernel equals the true one on the same draws."""
    p, n = 10, 20
    models = [AttentionModel(0.5, "identity", 1.0, spike=s) for s in (None, (2.0, "aligned"))]
    out = simulate_model(models, p, GAMMAS, MonteCarloSettings(4, 2), kind=("true", "linearised"))
    np.testing.assert_allclose(out["linearised"], out["true"], rtol=1e-9)
    noisy_models = [AttentionModel(0.5, {"a1": 1.0, "sf2": 0.5}, 1.0, spike=m.spike) for m in models]
    noisy = simulate_model(noisy_models, p, GAMMAS, MonteCarloSettings(4, 2), kind=("linearised",))
    assert "true" not in noisy and not np.allclose(noisy["linearised"], out["true"])
    one = simulate_model(models[1], p, GAMMAS, MonteCarloSettings(4, 2), kind="linearised", return_trials=True)
    np.testing.assert_array_equal(one[2], out["linearised"][1])

def test_shared_mc_invalid_input():
    two = MonteCarloSettings(2, 0)
    tanh = AttentionModel(0.5, "tanh", 1.0)
    with pytest.raises(ValueError, match=r"^the models .* model\[1\]\.snr=2\.0"):
        simulate_model([tanh, AttentionModel(0.5, "tanh", 2.0)], 4, [0.1], two)
    with pytest.raises(ValueError, match=r"model\[1\]\.activation"):
        simulate_model([tanh, AttentionModel(0.5, "erf", 1.0)], 4, [0.1], two)
    with pytest.raises(TypeError, match=r"^model\[1\] must be a theory.AttentionModel"):
        simulate_model([tanh, "tanh"], 4, [0.1], two)
    with pytest.raises(TypeError, match="^model must be"):
        simulate_model([], 4, [0.1], two)
    with pytest.raises(ValueError, match="^kind must"):
        simulate_model([tanh], 4, [0.1], two, kind=("true", "true"))
    with pytest.raises(TypeError, match="^kind must"):
        simulate_model([tanh], 4, [0.1], two, kind=())
    with pytest.raises(ValueError, match="^return_trials applies"):
        simulate_model([tanh], 4, [0.1], two, return_trials=True)
    with pytest.raises(ValueError, match="kernel constants"):
        simulate_model([AttentionModel(0.5, {"a1": 0.5, "sf2": 0.1})], 4, [0.1], two, kind=("true", "linearised"))
    with pytest.raises(ValueError, match="coordinates"):
        simulate_model([tanh, AttentionModel(0.5, "tanh", 1.0, spike=Spike(np.ones(5), np.ones(5)))], 4, [0.1], two)
    with pytest.raises(ValueError, match="n_trials"):
        simulate_model([tanh], 4, [0.1], MonteCarloSettings(1, 0), kind=("ridge",))

def test_cholesky_and_eigh_paths_agree_up_to_the_threshold():
    """8 gammas (Cholesky path since the measured crossover) equal the eigendecomposition route."""
    from numerics import _ridge_solvers

    rng = np.random.default_rng(1)
    g = np.logspace(-3, 1, _ridge_solvers.CHOLESKY_MAX_GAMMAS)
    for p, n in [(15, 30), (30, 15)]:
        Phi, y = rng.standard_normal((p, n)), np.sign(rng.standard_normal(n))
        np.testing.assert_allclose(interpolation_error(Phi, y, g), _direct(Phi, y, g), rtol=1e-9)
        eig = _ridge_solvers.errors_batch(torch.from_numpy(Phi)[None], torch.from_numpy(y)[None], torch.from_numpy(np.append(g, 20.0)))
        np.testing.assert_allclose(interpolation_error(Phi, y, g), eig[0, :-1].numpy(), rtol=1e-9)


def _paths(Phi, y, g):
    """E(gamma) of one (Phi, y) by each of the three error paths (tridiagonal may decline: None)."""
    from numerics import _ridge_solvers

    args = torch.from_numpy(Phi)[None], torch.from_numpy(y)[None], torch.from_numpy(np.asarray(g, float))
    tri = _ridge_solvers.errors_tridiagonal(*args)
    return (None if tri is None else tri[0].numpy()), _ridge_solvers.errors_cholesky(*args)[0].numpy(), _ridge_solvers.errors_eigh(*args)[0].numpy()


@settings(max_examples=40, deadline=None)
@given(p=st.integers(2, 40), n=st.integers(2, 40), rank=st.integers(1, 40), lg=st.lists(st.floats(-6, 2), min_size=1,
       max_size=12), seed=st.integers(0, 2**31))
def test_property_tridiagonal_cholesky_and_eigh_paths_agree(p, n, rank, lg, seed):
    """One tridiagonalisation for the whole grid = per-gamma Cholesky = eigendecomposition = direct solves, on
    full-rank and rank-deficient features (rank < min(p, n)) and gammas from 1e-6 to 1e2."""
    rng = np.random.default_rng(seed)
    Phi = rng.standard_normal((p, rank)) @ rng.standard_normal((rank, n)) / math.sqrt(rank)
    y = np.sign(rng.standard_normal(n))
    g = 10.0 ** np.asarray(lg)
    tri, chol, eig = _paths(Phi, y, g)
    direct = _direct(Phi, y, g)
    np.testing.assert_allclose(eig, direct, rtol=1e-7, atol=1e-13)
    np.testing.assert_allclose(chol, direct, rtol=1e-7, atol=1e-13)
    if tri is not None:
        np.testing.assert_allclose(tri, direct, rtol=1e-7, atol=1e-13)


def test_tridiagonal_path_on_attention_sizes_and_its_edge_cases():
    """The path B4 / B7 take (p = 128, n = 256 and transposed), Phi y = 0, and where it declines."""
    from numerics import _ridge_solvers

    g = np.array([1e-3, 1e-2, 0.1, 1.0, 10.0])
    for p, n in [(128, 256), (256, 128)]:
        X, y, _ = sample_signal_plus_noise(n, p, 1.0, 3)
        Phi = attention_features(X, _tanh)
        tri, chol, eig = _paths(Phi, y, g)
        np.testing.assert_allclose(tri, eig, rtol=1e-10)
        np.testing.assert_allclose(chol, eig, rtol=1e-10)
    # p < n with Phi y = 0: w = 0 at every gamma, E = ||y||^2 / n
    Phi = np.ones((2, 6))
    y = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    tri, _, eig = _paths(Phi, y, g)
    np.testing.assert_allclose(tri, 1.0)
    np.testing.assert_allclose(eig, 1.0)
    # declines: a single row or column, and (p < n) an error below 1e-8 ||y||^2 / n, where the difference loses digits
    assert _ridge_solvers.errors_tridiagonal(torch.ones(1, 1, 5, dtype=torch.float64), torch.ones(1, 5, dtype=torch.float64),
                                   torch.tensor([0.1], dtype=torch.float64)) is None
    Phi = np.eye(3, 4)
    y = np.array([1.0, 1.0, 1.0, 1e-6])
    assert _paths(Phi, y, [1e-9])[0] is None
    np.testing.assert_allclose(interpolation_error(Phi, y, [1e-9] * 3), _direct(Phi, y, [1e-9] * 3),
                               rtol=1e-6)


def test_gram_blocks_equal_the_full_product_and_are_symmetric():
    from numerics import _ridge_solvers

    rng = np.random.default_rng(4)
    for m in (3, 255, 512, 1100):
        A = torch.from_numpy(rng.standard_normal((2, m, 7)))
        G = _ridge_solvers._gram_blocks(A)
        torch.testing.assert_close(G, A @ A.transpose(-1, -2), rtol=1e-12, atol=1e-12)
        assert torch.equal(G, G.transpose(-1, -2))


def test_gram_on_the_cpu_is_the_product_exactly_symmetric_for_every_layout_and_batch_shape():
    """numpy's syrk path: C-ordered rows, a transposed view (the p >= n Gram of features), float32, no batch axis,
    two batch axes and an empty batch; each matrix as the one-by-one product."""
    from numerics import _ridge_solvers

    rng = np.random.default_rng(5)
    wide = torch.from_numpy(rng.standard_normal((3, 40, 300)))
    cases = [torch.from_numpy(rng.standard_normal((3, 300, 40))), wide.transpose(-1, -2),
             torch.from_numpy(rng.standard_normal((2, 2, 50, 9)).astype(np.float32)),
             torch.from_numpy(rng.standard_normal((600, 5))), torch.zeros(0, 4, 3, dtype=torch.float64)]
    for A in cases:
        G = _ridge_solvers.gram(A)
        assert G.shape == A.shape[:-1] + (A.shape[-2],) and G.dtype == A.dtype
        assert torch.equal(G, G.transpose(-1, -2))
        tol = 1e-5 if A.dtype == torch.float32 else 1e-12
        torch.testing.assert_close(G, _ridge_solvers._gram_blocks(A), rtol=tol, atol=tol)
        flat = A.reshape((-1,) + A.shape[-2:])
        for i in range(flat.shape[0]):  # one matrix at a time: the batch does not change a number
            assert torch.equal(G.reshape((-1,) + G.shape[-2:])[i], _ridge_solvers.gram(flat[i]))


# ---------------------------------------------------------------------------------------------
# thread_map and the Monte Carlo core
# ---------------------------------------------------------------------------------------------
def test_thread_map_consumes_a_generator_in_order_with_bounded_look_ahead():
    """A generator drawing from one stream gives the same items for every n_jobs; at most 2 n_jobs items ahead."""
    import threading
    import time

    from numerics.threads import thread_map

    state = {"pulled": 0, "done": 0, "ahead": 0}
    lock = threading.Lock()

    def draws():
        rng = np.random.default_rng(0)
        for _ in range(24):
            state["pulled"] += 1
            yield rng.standard_normal(3)

    def work(x):
        with lock:
            state["ahead"] = max(state["ahead"], state["pulled"] - state["done"])
        time.sleep(0.002)
        with lock:
            state["done"] += 1
        return float(x @ x)

    serial = thread_map(work, draws(), 1)
    state.update(pulled=0, done=0, ahead=0)
    parallel = thread_map(work, draws(), 2)
    assert parallel == serial and len(serial) == 24
    # joblib keeps pre_dispatch = 2 n_jobs = 4 tasks outstanding; the counters here are read without joblib's own
    # bookkeeping, so one refill can be observed before a finished task is counted (measured 5 once under load):
    # the bound that matters is "a few items", not the whole generator (24)
    assert state["ahead"] <= 2 * 2 + 1


def test_thread_map_pins_torch_and_sets_the_in_parallel_flag_only_in_workers():
    from numerics.threads import in_parallel, thread_map

    before = torch.get_num_threads()
    seen = thread_map(lambda _: (in_parallel(), torch.get_num_threads()), range(6), 2)
    assert seen == [(True, 1)] * 6
    assert not in_parallel() and torch.get_num_threads() == before
    # serial paths (n_jobs = 1, or a single item) run in the calling thread and change nothing
    assert thread_map(lambda _: (in_parallel(), torch.get_num_threads()), range(3), 1) == [(False, before)] * 3
    assert thread_map(lambda _: in_parallel(), [0], 4) == [False]
    with pytest.raises(ZeroDivisionError):
        thread_map(lambda x: 1 / x, [1, 0, 2], 2)
    assert not in_parallel() and torch.get_num_threads() == before


def test_run_trials_gives_every_trial_its_spawned_seed_in_order():
    from numerics import MonteCarloSettings
    from numerics._mc import run_trials

    def batch(seeds, ids):
        return [(i, np.random.default_rng(ss).integers(1 << 30)) for ss, i in zip(seeds, ids)]

    want = [(t, np.random.default_rng(ss).integers(1 << 30)) for t, ss in enumerate(np.random.SeedSequence(4).spawn(7))]
    for batch_size, n_jobs in [(1, 1), (3, 1), (7, 2), (2, 3)]:
        parts = run_trials(batch, MonteCarloSettings(7, 4, n_jobs=n_jobs), batch_size)
        assert [x for part in parts for x in part] == want


def test_shared_mc_does_not_depend_on_batching_or_n_jobs():
    models = [AttentionModel(10 / 14, "tanh", 1.0, spike=s) for s in (None, (2.0, "aligned"))]
    kind = ("true", "linearised", "ridge")
    a = simulate_model(models, 10, GAMMAS, MonteCarloSettings(5, 3), kind=kind)
    b = simulate_model(models, 10, GAMMAS, MonteCarloSettings(5, 3, batch_size=2, n_jobs=2), kind=kind)
    assert sorted(a) == ["linearised", "ridge", "true"]
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-12)
    assert a["linearised"].shape == (2, 5, GAMMAS.size)

# ---------------------------------------------------------------------------------------------
# input validation: theory's layer, messages naming the argument, sizes refused before allocation
# ---------------------------------------------------------------------------------------------
def test_complex_input_is_refused_not_truncated():
    X, y, _ = sample_signal_plus_noise(6, 4, 1.0, 0)
    for call, name in [(lambda: ridge_features(X + 1j), "X"), (lambda: ridge_features(X.astype(complex)), "X"),
                       (lambda: interpolation_error(X + 0j, y, [0.1]), "features"),
                       (lambda: interpolation_error(X, y + 1j, [0.1]), "y"),
                       (lambda: interpolation_error(X, y, [0.1 + 1j]), "gammas"),
                       (lambda: attention_features(torch.from_numpy(X + 1j), _tanh), "X")]:
        with pytest.raises(TypeError, match=f"^{name} must be"):
            call()


def _refuse_huge_sizes() -> None:
    with pytest.raises(ValueError, match=r"^n, p \(X of shape \(100000, 100000\)\).*224 GiB.*memory budget"):
        sample_signal_plus_noise(10**5, 10**5, 1.0, 0)
    with pytest.raises(ValueError, match=r"^n_trials .*memory budget"):
        simulate_model(AttentionModel(0.5, "identity"), 4, [1.0], MonteCarloSettings(10**12, 0), kind="ridge")
    with pytest.raises(ValueError, match=r"^X \(n = 100000 tokens"):
        attention_features(np.zeros((1, 10**5)), _tanh)


def test_sizes_are_refused_before_any_allocation():
    import theory
    from fuzz_support import capped_memory

    with capped_memory():  # an allocation before the check would be a MemoryError, not the ValueError
        _refuse_huge_sizes()
    old = theory.set_limits(memory_budget_bytes=10_000)  # the budget is configurable
    try:
        with pytest.raises(ValueError, match="memory_budget_bytes"):
            sample_signal_plus_noise(100, 100, 1.0, 0)
    finally:
        theory.set_limits(memory_budget_bytes=old.memory_budget_bytes)
    assert sample_signal_plus_noise(100, 100, 1.0, 0)[0].shape == (100, 100)


@pytest.mark.parametrize("kwargs, match", [
    (dict(n=True), "^n must"), (dict(n=4.5), "^n must"), (dict(snr=float("inf")), "^snr must"),
    (dict(snr=1j), "^snr must"), (dict(rng=True), "^rng must"), (dict(rng=1.5), "^rng must"),
    (dict(rng=-1), "^rng must"), (dict(rng=None), "^rng must"), (dict(labels="IID"), "^labels must"),
    (dict(mu=np.ones(3) + 1j), "^mu must"),
])
def test_sampler_refuses_bad_types(kwargs, match):
    args = {**dict(n=4, p=3, snr=1.0, rng=0), **kwargs}
    with pytest.raises(ValueError, match=match):
        sample_signal_plus_noise(**args)


def test_mc_options_are_validated_once_by_the_settings_and_the_model():
    base = dict(n_trials=2, seed=0)
    for bad, match in [(dict(device="bogus"), "^device must be 'cpu', 'cuda' or 'cuda:<k>'"),
                       (dict(device="cuda:x"), "^device must"), (dict(n_jobs=0), "^n_jobs must"),
                       (dict(n_jobs=10**6), "^n_jobs must"), (dict(batch_size=0), "^batch_size must"),
                       (dict(batch_size=2**40), "^batch_size must"), (dict(seed=2**64), "^seed must"),
                       (dict(seed=1.5), "^seed must"), (dict(labels=1), "^labels must")]:
        with pytest.raises(ValueError, match=match):
            MonteCarloSettings(**{**base, **bad})
    with pytest.raises(ValueError, match="^diagonal must"):
        AttentionModel(0.5, "tanh", diagonal="zero")
    data, settings = AttentionModel(0.5, "identity"), MonteCarloSettings(**base)
    for model in (data, [data]):
        with pytest.raises(ValueError, match="^n_trials"):
            simulate_model(model, 4, [0.1], MonteCarloSettings(10**12, 0), kind="ridge")
    with pytest.raises(TypeError, match="^return_trials must be True or False"):
        simulate_model(data, 4, [0.1], settings, kind="ridge", return_trials=1)
    with pytest.raises(TypeError, match="^label_average must be True or False"):
        simulate_model([data], 4, [0.1], settings, kind=("ridge",), label_average="yes")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            MonteCarloSettings(**base, device="cuda")

def test_activation_callables_and_their_values_are_checked():
    X, _, _ = sample_signal_plus_noise(6, 4, 1.0, 0)
    for act, match in [(lambda t: np.full(t.shape, np.nan), "^activation must return finite real values"),
                       (lambda t: t + 1j, "^activation must return finite real values"),
                       (lambda t: np.ones(3), "^activation must return an array of the shape"),
                       (int, "^activation must be a registry name"), (1.0, "^activation must be a registry name"),
                       ("swishy", "^activation must be an activation")]:
        with pytest.raises(ValueError, match=match):
            attention_features(X, act)
    with pytest.raises(ValueError, match="^X .* too large"):
        attention_features(np.full((4, 6), 1e200), "tanh")


def test_non_finite_results_are_refused_with_the_arguments():
    X, y, _ = sample_signal_plus_noise(6, 4, 1.0, 0)
    with pytest.raises(ValueError, match="^interpolation_error cannot be evaluated at features="):
        interpolation_error(X * 1e200, y, [0.1])
    from numerics.rmt import gaussian_equivalent_kernel

    with pytest.raises(ValueError, match="^gaussian_equivalent_kernel cannot be evaluated at a1=1e\\+300"):
        gaussian_equivalent_kernel(X, 1e300, 1e301, 0)


def test_threads_validation_is_eager_and_no_string_is_evaluated():
    from numerics.threads import MAX_THREADS, check_device, thread_map, torch_threads

    with pytest.raises(ValueError, match="^n must be in"):
        torch_threads(0)  # refused when the context manager is made, not inside the block
    with pytest.raises(ValueError, match="^n must be in"):
        torch_threads(MAX_THREADS + 1)
    with pytest.raises(TypeError, match="^n must be in"):
        torch_threads("2")
    assert thread_map(abs, [1, -2, 3], 2) == [1, 2, 3]
    assert check_device("device", torch.device("cpu")) == "cpu"
    with pytest.raises(ValueError, match="^device must"):
        check_device("device", "cuda:")


def test_feature_basis_gives_every_error_path_the_same_errors():
    """p > n: the n x n basis R (R^T R = X^T X) in place of X changes no error (every path, label average too);
    p <= n: X itself."""
    import torch

    from numerics._ridge_solvers import errors_batch, errors_cholesky, errors_eigh, feature_basis
    from numerics.rmt import kernel_batch

    rng = np.random.default_rng(11)
    X = torch.from_numpy(rng.standard_normal((2, 40, 16)))
    y = torch.from_numpy(np.sign(rng.standard_normal((2, 16))))
    K = kernel_batch(X, _tanh, None, None, "removed")
    R = feature_basis(X, X.transpose(-1, -2) @ X)
    assert R.shape == (2, 16, 16)
    np.testing.assert_allclose(R.transpose(-1, -2) @ R, X.transpose(-1, -2) @ X, rtol=1e-12, atol=1e-12)
    g = torch.tensor([1e-3, 1e-2, 1e-1, 1.0, 10.0], dtype=torch.float64)
    for path in (errors_batch, errors_cholesky, errors_eigh):
        np.testing.assert_allclose(path(R @ K, y, g), path(X @ K, y, g), rtol=1e-10)
    np.testing.assert_allclose(errors_batch(R @ K, None, g), errors_batch(X @ K, None, g), rtol=1e-10)
    for narrow in (X[:, :16, :], X[:, :8, :]):  # p = n, p < n: no stand-in
        assert feature_basis(narrow, narrow.transpose(-1, -2) @ narrow) is narrow


def test_monte_carlo_settings_are_frozen_and_checked():
    import dataclasses

    from numerics import MonteCarloSettings

    s = MonteCarloSettings(np.int64(4), 7, batch_size=2)
    assert (s.n_trials, type(s.n_trials), s.batch_size, s.device, s.labels) == (4, int, 2, "cpu", "balanced")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.seed = 1
    assert s == MonteCarloSettings(4, 7, batch_size=2) and hash(s) == hash(MonteCarloSettings(4, 7, batch_size=2))
    for bad, match in [(dict(n_trials=0), "n_trials"), (dict(seed=-1), "seed"), (dict(n_jobs=0), "n_jobs"),
                       (dict(batch_size=0), "batch_size"), (dict(device="tpu"), "device"),
                       (dict(labels="signed"), "labels")]:
        with pytest.raises(ValueError, match=match):
            MonteCarloSettings(**{"n_trials": 2, "seed": 0, **bad})
    with pytest.raises(ValueError, match="n_trials"):
        MonteCarloSettings(2.5, 0)


def test_simulate_model_refuses_what_it_cannot_simulate():
    from numerics import MonteCarloSettings, simulate_model
    from theory import AttentionModel

    two = MonteCarloSettings(2, 0)
    model = AttentionModel(c=0.5, activation="tanh")
    with pytest.raises(ValueError, match="whole number"):
        simulate_model(AttentionModel(c=0.3, activation="tanh"), 16, [0.1], two)
    with pytest.raises(TypeError, match="MonteCarloSettings"):
        simulate_model(model, 16, [0.1], 2)
    with pytest.raises(ValueError, match="n_trials"):
        simulate_model(model, 16, [0.1], MonteCarloSettings(1, 0))
    with pytest.raises(ValueError, match="kernel constants"):
        simulate_model(AttentionModel(c=0.5, activation={"a1": 0.5, "sf2": 0.1}), 16, [0.1], two)
    with pytest.raises(ValueError, match="diagonal"):
        simulate_model(AttentionModel(c=0.5, activation="tanh", diagonal=0.3), 16, [0.1], two)
    with pytest.raises(TypeError, match="AttentionModel"):
        simulate_model("tanh", 16, [0.1], two)
    with pytest.raises(ValueError, match="coordinates"):
        simulate_model(AttentionModel(c=0.5, activation="tanh", spike=(1.0, "orthogonal")), 1, [0.1], two)


# ---------------------------------------------------------------------------------------------
# ridge from a Bartlett factor of X^T X (wishart=True)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p, labels", [(6, "balanced"), (15, "iid")])
def test_sample_gram_has_the_law_of_x_transpose_x(p, labels):
    """The Bartlett draw of X^T X against its exact moments (n = 6, snr = 2, 8000 draws, 5 SE): E S_ii = p + snr for
    every i, E S_ij^2 = p + snr^2 + 2 snr (i != j), E (y^T S y / n) = p + snr n, Var S_ii = 2 p + 4 snr; symmetric; the
    labels' law.  p = n: the Wishart part is singular (its first Bartlett degree of freedom is 0)."""
    from numerics._mc import Draws

    n, snr, trials = 6, 2.0, 8000
    S, y = Draws(n, p, snr, labels, "cpu").sample_gram(np.random.SeedSequence(3).spawn(trials))
    S, y = S.numpy(), y.numpy()
    assert S.shape == (trials, n, n) and np.array_equal(S, S.transpose(0, 2, 1)) and np.all(np.abs(y) == 1)
    checks = [(S[:, i, i], p + snr) for i in range(n)]  # each diagonal entry: the Bartlett degrees in their order
    checks += [(S[:, i, j] ** 2, p + snr**2 + 2 * snr) for i, j in ((0, 1), (2, 5), (4, 5))]
    checks += [(np.einsum("ti,tij,tj->t", y, S, y) / n, p + snr * n)]
    checks += [((S[:, i, i] - S[:, i, i].mean()) ** 2 * trials / (trials - 1), 2 * p + 4 * snr) for i in (0, n - 1)]
    for values, want in checks:
        assert abs(values.mean() - want) < 5 * values.std() / math.sqrt(values.size)
    if labels == "balanced":
        assert np.all(y.sum(axis=1) == 0)


def test_wishart_ridge_agrees_with_ridge_on_x_and_is_opt_in():
    """Same law: the mean errors of 400 trials agree within 4 joint SE (p > n and p = n); at p < n wishart draws X
    itself (bit for bit); any other kind refuses it."""
    g = np.array([1e-2, 1.0])
    for c, p in ((3.0, 30), (1.0, 12)):
        model = AttentionModel(c, "identity", 1.0)
        a = simulate_model(model, p, g, MonteCarloSettings(400, 1), kind="ridge")
        b = simulate_model(model, p, g, MonteCarloSettings(400, 2), kind="ridge", wishart=True)
        assert np.all(np.abs(a[0] - b[0]) < 4 * np.hypot(a[1], b[1]))
    narrow = AttentionModel(0.5, "identity", 1.0)
    np.testing.assert_array_equal(simulate_model(narrow, 12, g, MonteCarloSettings(3, 1), kind="ridge")[0],
                                  simulate_model(narrow, 12, g, MonteCarloSettings(3, 1), kind="ridge", wishart=True)[0])
    with pytest.raises(ValueError, match="wishart"):
        simulate_model(model, p, g, MonteCarloSettings(3, 1), wishart=True)
