"""Softmax attention on paper B's model: its Monte Carlo (numerics.softmax), the prediction (theory.softmax), and
claim B8's run and figure at the smoke profile.

What is tested, and why each test can fail:

* the kernel, written out here with numpy (:func:`_kernel`, :func:`_entrywise`: the oracles): the extreme-token
  effect of a kept diagonal (its self weight against :func:`theory.softmax.softmax_self_weight`; attention then
  collapses to ridge, which the masked kernel does not);
* the Monte Carlo is paper B's machinery on the same draws: its ridge column is
  :func:`numerics.simulate_model`'s, its entrywise column :func:`numerics.simulate_model`'s true kernel
  for the activation :func:`theory.softmax.softmax_activation`, its softmax column the error of the written-out
  kernel's features at ``gamma p/(n-1)^2`` on the draw of each trial (masked and kept diagonal, keys and rows
  normalisation, a spike whose keys carry ``w_k``); batching and threads change nothing;
* the theory: closed-form Hermite data against quadrature, the null prediction against
  :meth:`theory.AttentionModel.error`, the quadrature solver of B8 against the exact one, the normalisers' spread and
  the diagonal term ``d0 = -1/sqrt p`` against simulation (the derivation's steps 1 and 4);
* bad input is refused, naming the argument.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import theory
from theory import AttentionModel, Spike
from conftest import assert_well_formed, run_smoke
from figure_lint import figure_problems
from numerics import MonteCarloSettings, interpolation_error, sample_signal_plus_noise, simulate_model
from numerics.softmax import softmax_error_mc
from theory.softmax import (
    softmax_activation,
    softmax_attention_error,
    softmax_gamma_scale,
    softmax_normaliser_spread,
    softmax_self_weight,
)

GAMMAS = np.array([1e-2, 1e-1, 1.0])


def _x(p: int, n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((p, n))


# ---------------------------------------------------------------------------------------------- the kernel
# written out with numpy: the oracles of softmax_error_mc's softmax and entrywise columns
def _scores(X: np.ndarray, w_k=None, w_q=None) -> np.ndarray:
    """``S_ij = x_i^T W x_j / sqrt p``, ``W = I + w_k w_q^T``: key ``i`` (the side of ``w_k``), query ``j``."""
    p = X.shape[0]
    W = np.eye(p) if w_k is None else np.eye(p) + np.outer(w_k, w_q)
    return X.T @ W @ X / math.sqrt(p)


def _kernel(X, beta, w_k=None, w_q=None, diagonal="removed", normalise="keys") -> np.ndarray:
    """Softmax attention's kernel of one sample: ``exp(beta S)``, self scores masked (``diagonal="removed"``),
    each query's column (``"keys"``) or each row (``"rows"``) normalised to one."""
    E = np.exp(beta * _scores(X, w_k, w_q))
    if diagonal == "removed":
        np.fill_diagonal(E, 0.0)
    return E / E.sum(axis=0 if normalise == "keys" else 1, keepdims=True)


def _entrywise(X, beta, w_k=None, w_q=None) -> np.ndarray:
    """Paper B's kernel ``f_beta(S) / sqrt p``, ``f_beta(x) = exp(beta x - beta^2 / 2) - 1``, diagonal removed."""
    F = np.expm1(beta * _scores(X, w_k, w_q) - beta**2 / 2) / math.sqrt(X.shape[0])
    np.fill_diagonal(F, 0.0)
    return F


def test_kept_diagonal_self_weight_is_the_extreme_token_effect():
    """Median self weight of 4 x 256 queries against theory.softmax_self_weight, at a size where it is 1/2.

    The self logit beta ||x||^2 / sqrt p has SD ~ beta sqrt 2 ~ 1, so the weights spread with SD ~ 0.25 and the
    median of 1024 has SE ~ 1.25 x 0.25 / 32 = 0.01: tolerance 0.03.  Dropping the beta^2/2 of the normaliser
    would move the formula to 0.44.
    """
    n, p, beta = 256, 64, 0.72
    w = np.concatenate([np.diag(_kernel(_x(p, n, s), beta, diagonal="kept")) for s in range(4)])
    assert softmax_self_weight(beta, n, p) == pytest.approx(0.5, abs=0.02)
    assert abs(np.median(w) - softmax_self_weight(beta, n, p)) < 0.03


def test_kept_diagonal_collapses_to_ridge_and_the_mask_does_not():
    n, p, beta = 96, 128, 2.0  # self weight 1 - 6e-8
    X, y, _ = sample_signal_plus_noise(n, p, 1.0, 3)
    g = GAMMAS * softmax_gamma_scale(n, p)
    ridge = interpolation_error(X, y, g)
    kept = interpolation_error(X @ _kernel(X, beta, diagonal="kept"), y, g)
    masked = interpolation_error(X @ _kernel(X, beta), y, g)
    np.testing.assert_allclose(kept, ridge, rtol=1e-4)
    assert np.all(np.abs(masked - ridge) > 0.05 * ridge)


# ---------------------------------------------------------------------------------------------- Monte Carlo
def test_monte_carlo_is_paper_b_machinery_on_the_same_draws():
    n, p, snr, T, seed, beta = 24, 12, 1.0, 3, 5, 0.5
    data, settings = AttentionModel(0.5, "identity", snr), MonteCarloSettings(T, seed)
    out = softmax_error_mc(data, p, GAMMAS, [beta, 1.0], settings)
    assert out["softmax"].shape == (2, 1, T, 3) and out["entrywise"].shape == (2, 1, T, 3)
    _, _, ridge = simulate_model(data, p, GAMMAS, settings, kind="ridge", return_trials=True)
    np.testing.assert_allclose(out["ridge"], ridge, rtol=1e-12)
    shared = simulate_model([AttentionModel(0.5, softmax_activation(beta), snr)], p, GAMMAS, settings, kind=("true",))
    np.testing.assert_allclose(out["entrywise"][0, 0], shared["true"][0], rtol=1e-9)
    seeds = np.random.SeedSequence(seed).spawn(T)
    for t in range(T):
        X, y, _ = sample_signal_plus_noise(n, p, snr, np.random.default_rng(seeds[t]))
        e = interpolation_error(X @ _kernel(X, beta), y, GAMMAS * softmax_gamma_scale(n, p))
        np.testing.assert_allclose(out["softmax"][0, 0, t], e, rtol=1e-9)


@pytest.mark.parametrize("spike, diagonal, normalise", [
    (None, "removed", "rows"),
    (Spike([2.0, 0.0], [0.0, 0.5]), "removed", "keys"),  # w_k != w_q: the keys carry w_k
    (Spike([0.0, 1.0], [1.5, 0.0]), "kept", "keys"),
])
def test_monte_carlo_kernels_are_the_written_out_ones(spike, diagonal, normalise):
    """Each trial's softmax and entrywise errors are those of the kernels written out above, on the trial's draw."""
    n, p, snr, T, seed, beta = 16, 8, 1.0, 2, 7, 0.8
    data = AttentionModel(0.5, "identity", snr, spike=spike, diagonal=diagonal)
    out = softmax_error_mc(data, p, GAMMAS, beta, MonteCarloSettings(T, seed), normalise=normalise)
    wk, wq = (None, None) if spike is None else (np.pad(w, (0, p - w.size)) for w in spike.vectors())
    for t, ss in enumerate(np.random.SeedSequence(seed).spawn(T)):
        X, y, _ = sample_signal_plus_noise(n, p, snr, np.random.default_rng(ss))
        soft = interpolation_error(X @ _kernel(X, beta, wk, wq, diagonal, normalise), y,
                                   GAMMAS * softmax_gamma_scale(n, p))
        np.testing.assert_allclose(out["softmax"][0, 0, t], soft, rtol=1e-9)
        np.testing.assert_allclose(out["entrywise"][0, 0, t], interpolation_error(X @ _entrywise(X, beta, wk, wq), y,
                                                                                  GAMMAS), rtol=1e-9)


def test_monte_carlo_does_not_depend_on_batching_or_threads():
    models = [AttentionModel(0.5, "identity", 1.0, spike=s) for s in (None, (1.0, "aligned"))]
    a = softmax_error_mc(models, 10, GAMMAS, [0.25, 1.0], MonteCarloSettings(5, 9))
    b = softmax_error_mc(models, 10, GAMMAS, [0.25, 1.0], MonteCarloSettings(5, 9, batch_size=2, n_jobs=2))
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-12)
    la = softmax_error_mc(AttentionModel(0.5, "identity"), 10, GAMMAS, 1.0, MonteCarloSettings(4, 9), kind="softmax",
                          label_average=True)
    assert set(la) == {"softmax"} and np.all((la["softmax"] > 0) & (la["softmax"] <= 1))


def test_gamma_scale_is_an_exact_rescaling():
    """E(gamma s^2; Phi) = E(gamma; Phi / s): the softmax error at s^2 gamma is the rescaled features' error."""
    n, p = 40, 30
    X, y, _ = sample_signal_plus_noise(n, p, 0.5, 2)
    s2 = softmax_gamma_scale(n, p)
    Phi = X @ _kernel(X, 1.0)
    np.testing.assert_allclose(interpolation_error(Phi, y, GAMMAS * s2), interpolation_error(Phi / math.sqrt(s2), y,
                                                                                              GAMMAS), rtol=1e-9)
    assert s2 == p / (n - 1) ** 2


_DATA, _TWO = AttentionModel(0.5, "identity"), MonteCarloSettings(2, 0)


@pytest.mark.parametrize("call, name", [
    (lambda: softmax_error_mc(_DATA, 4, GAMMAS, [], _TWO), "betas"),
    (lambda: softmax_error_mc(_DATA, 4, GAMMAS, [1.0, 9.0], _TWO), "betas"),
    (lambda: softmax_error_mc(AttentionModel(0.5, "identity", 1.0), 4, GAMMAS, 1.0, _TWO, label_average=True),
     "label_average"),
    (lambda: softmax_error_mc([], 4, GAMMAS, 1.0, _TWO), "model"),
    (lambda: softmax_error_mc(_DATA, 4, GAMMAS, 1.0, _TWO, kind=("softmax", "lasso")), "kind"),
    (lambda: softmax_error_mc(_DATA, 4, GAMMAS, 1.0, _TWO, normalise="cols"), "normalise"),
    (lambda: softmax_error_mc(_DATA, 4, -GAMMAS, 1.0, _TWO), "gammas"),
    (lambda: softmax_error_mc(_DATA, 4, GAMMAS, 1.0, MonteCarloSettings(1, 0)), "settings.n_trials"),
    (lambda: softmax_error_mc(AttentionModel(4.0, "identity"), 4, GAMMAS, 1.0, _TWO), "n"),
    (lambda: softmax_attention_error(0.1, 2.0, 0.0), "beta"),
    (lambda: softmax_attention_error(0.1, 2.0, 1.0, p=0), "p"),
    (lambda: softmax_gamma_scale(1, 4), "n"),
    (lambda: softmax_normaliser_spread(1.0, 8, 2.5), "p"),
])
def test_bad_input_is_refused_naming_the_argument(call, name):
    with pytest.raises(ValueError) as exc:
        call()
    assert str(exc.value).startswith(name + " "), exc.value  # the validation layer's messages start with the name


# ---------------------------------------------------------------------------------------------- theory
@pytest.mark.parametrize("beta", [0.25, 1.0, 2.0])
def test_hermite_data_in_closed_form(beta):
    # the closed form softmax_attention_error uses (a_k = beta^k / sqrt(k!), nu = exp(beta^2) - 1) against quadrature
    nu = math.expm1(beta**2)
    m = dict(a0=0.0, a1=beta, a2=beta**2 / math.sqrt(2.0), nu=nu, sf2=nu - beta**2)
    q = theory.hermite_moments(softmax_activation(beta))
    for k, v in m.items():
        assert v == pytest.approx(getattr(q, k), rel=1e-9, abs=1e-12), k


def test_null_prediction_is_paper_b_null_system():
    for c, beta in ((0.5, 0.5), (2.0, 1.0)):
        np.testing.assert_allclose(softmax_attention_error(GAMMAS, c, beta),
                                   AttentionModel(c, softmax_activation(beta)).error(GAMMAS),
                                   rtol=1e-8)
    constants = {"a1": 0.5, "sf2": math.expm1(0.25) - 0.25, "d0": -1 / 16}
    d0 = AttentionModel(2.0, constants, snr=0.0).solve(GAMMAS, check_quadrature=False).error
    np.testing.assert_allclose(softmax_attention_error(GAMMAS, 2.0, 0.5, p=256), d0, rtol=1e-12)


def test_b8_quadrature_solver_equals_the_exact_one():
    from verify.checks.paper_b_softmax import SOLVER

    for c, beta, snr, spike, p in ((0.5, 0.25, 0.0, None, 32), (2.0, 1.0, 1.0, (1.0, "aligned"), 2048),
                                   (0.5, 2.0, 1.0, None, None), (2.0, 0.5, 0.0, None, 512)):
        np.testing.assert_allclose(softmax_attention_error(GAMMAS, c, beta, snr, spike, p=p, **SOLVER),
                                   softmax_attention_error(GAMMAS, c, beta, snr, spike, p=p), rtol=1e-9)


def test_normaliser_spread_matches_simulation():
    """Step 1: SD of D_j / ((n-1) e^{beta^2/2}) over 4 x 512 queries within 10% of the formula (sampling SE of an
    SD from 2048 values: 1.6%; the formula drops O(1/n) terms)."""
    n, p, beta = 512, 256, 1.0
    vals = []
    for s in range(4):
        X = _x(p, n, 10 + s)
        E = np.exp(beta * X.T @ X / math.sqrt(p))
        np.fill_diagonal(E, 0.0)
        vals.append(E.sum(axis=0) / ((n - 1) * math.exp(beta**2 / 2)))
    assert np.std(np.concatenate(vals)) == pytest.approx(softmax_normaliser_spread(beta, n, p), rel=0.1)


def test_diagonal_term_is_what_softmax_shows_at_small_beta():
    """Step 4: at beta = 1/4 the masked mean term's d0 = -1/sqrt p moves E by ~5% at p = 256 (c = 2, gamma = 0.01);
    label-averaged softmax sits on the finite-p prediction, far from the limit (measured: 0.191 vs 0.191 / 0.238)."""
    n, p, beta, g = 128, 256, 0.25, np.array([1e-2])
    out = softmax_error_mc(AttentionModel(2.0, "identity"), p, g, beta, MonteCarloSettings(6, 4), kind="softmax",
                           label_average=True)["softmax"]
    m, se = out[0, 0, :, 0].mean(), out[0, 0, :, 0].std(ddof=1) / math.sqrt(6)
    finite, limit = softmax_attention_error(g, 2.0, beta, p=p)[0], softmax_attention_error(g, 2.0, beta)[0]
    assert abs(limit - finite) > 20 * se
    assert abs(m - finite) < 0.25 * abs(m - limit)


def test_self_weight_and_scale_formulas():
    assert softmax_self_weight(1.0, 256, 128) == pytest.approx(1 / (1 + 255 * math.exp(0.5 - math.sqrt(128))))
    assert softmax_self_weight(0.01, 10**6, 1) < 1e-5
    assert softmax_gamma_scale(257, 128) == 128 / 256**2


# ---------------------------------------------------------------------------------------------- claim B8
def test_b8_smoke_run_is_well_formed():
    res = run_smoke("B8")
    assert_well_formed(res)
    assert res.data["table_md"].count("\n") == len(res.data["rows"]) + 1
    assert "beta=2 (not judged)" in res.notes


def test_b8_figure_reads_at_a_glance():
    from verify import figures as F
    from verify.claim import claim_of
    from verify.context import CheckContext
    from verify.verdicts import judged

    claim = claim_of("B8")
    ctx = CheckContext(profile="smoke", report_dir=None, n_jobs=1, check_id="B8")
    design = claim.design(ctx)
    prediction = claim.predict(ctx, design)
    measurement = claim.simulate(ctx, design)
    fig = claim.figure(design, prediction, measurement, judged(claim.judge(design, prediction, measurement)))
    try:
        assert figure_problems(fig) == []
        title = fig._suptitle.get_text()
        assert title.startswith("B8:") and any(v in title for v in ("PASS", "FAIL", "INCONCLUSIVE"))
    finally:
        F.pyplot().close(fig)
