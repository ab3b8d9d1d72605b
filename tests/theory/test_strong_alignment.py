"""theory.strong_alignment: the closed forms of the interpolation limit's split (docs/strong_alignment.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import theory
from theory import (bayes_feature_limit, captures_bayes_predictor, label_mmse, ridge_error_values, strong_alignment_gap,
                    strong_alignment_margin, strong_spike_attention_error)

SNR = st.floats(0.0, 50.0, allow_nan=False)
C = st.floats(0.01, 3.0, allow_nan=False)


def test_mmse_against_an_independent_quadrature():
    """The Nishimori form 1 - E tanh(snr + sqrt(snr) z) by Gauss-Hermite nodes: an independent route."""
    z, w = np.polynomial.hermite_e.hermegauss(200)
    for snr in (0.1, 1.0, 4.0):
        alt = 1 - float(np.sum(w * np.tanh(snr + math.sqrt(snr) * z)) / np.sum(w))
        assert label_mmse(snr) == pytest.approx(alt, abs=1e-8)  # Gauss-Hermite on tanh: ~1e-10 at snr = 4
    assert label_mmse(1.0) == pytest.approx(0.4495995, abs=1e-7)


@settings(max_examples=40, deadline=None)
@given(SNR, SNR)
def test_mmse_decreases_and_beats_the_linear_predictor(s1, s2):
    lo, hi = sorted((s1, s2))
    assert 0.0 <= label_mmse(hi) <= label_mmse(lo) + 1e-12 <= 1.0 + 1e-12
    assert label_mmse(lo) <= 1.0 / (1.0 + lo) + 1e-12


@settings(max_examples=40, deadline=None)
@given(C, SNR)
def test_margin_is_the_bayes_limit_minus_ridges_limit(c, snr):
    """Against theory.ridge's own gamma -> 0 limit (c < 1: (1 - c)/(1 + snr); c >= 1: 0)."""
    ridge0 = float(ridge_error_values([0.0], c, snr)[0])
    margin = strong_alignment_margin(c, snr)
    assert margin == pytest.approx(bayes_feature_limit(c, snr) - ridge0, abs=1e-9)
    assert margin <= 1e-12
    if c >= 1:
        assert margin == 0.0


def test_no_margin_without_signal_and_none_at_infinite_signal():
    assert strong_alignment_margin(0.5, 0.0) == 0.0
    assert abs(strong_alignment_margin(0.5, 400.0)) < 2e-3


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, "1"])
def test_bad_input_refused(bad):
    with pytest.raises((ValueError, TypeError), match="snr"):
        label_mmse(bad)
    with pytest.raises((ValueError, TypeError), match="c"):
        strong_alignment_margin(bad if bad != -1.0 else 0.0, 1.0)


def test_exported():
    assert {"label_mmse", "bayes_feature_limit", "strong_alignment_margin"} <= set(theory.__all__)


# ---------------------------------------------------------------- the leverage profile (matrix Dyson equation)
from theory import captures_bayes_predictor, strong_alignment_gap, strong_alignment_leverage  # noqa: E402


def _simulated_t2(t: float, c: float, n: int, trials: int, seed: int) -> tuple[float, float]:
    """T2 of the model the equation describes: K = h1(t a a') o S + r(t a a') o W / sqrt p (zero diagonal), F = K Xi."""
    from scipy.special import erf

    p = int(c * n)
    x, w = np.polynomial.hermite_e.hermegauss(80)
    w = w / w.sum()
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(trials):
        a = rng.choice([-1.0, 1.0], n) + rng.standard_normal(n)
        xi = rng.standard_normal((n, p))
        m = t * np.outer(a, a)
        vals = erf(x[None, :] + m.reshape(-1, 1))
        h0, h1 = vals @ w, vals @ (w * x)
        r = np.sqrt(np.maximum(vals**2 @ w - h0**2 - h1**2, 0)).reshape(n, n)
        noise = rng.standard_normal((n, n))
        K = h1.reshape(n, n) * (xi @ xi.T / p) + r * (noise + noise.T) / np.sqrt(2 * p)
        np.fill_diagonal(K, 0.0)
        basis, _ = np.linalg.qr(K @ xi)
        v = 1 - np.tanh(a) ** 2
        out.append(float(((1 - (basis**2).sum(1)) * v).mean() - (1 - c) * v.mean()))
    return float(np.mean(out)), float(np.std(out, ddof=1) / np.sqrt(trials))


@pytest.mark.parametrize("t", [0.5, 2.0])
def test_leverage_theory_against_simulation(t):
    """The equation's T2 against a simulation of its model (n = 512; finite-n gap measured <= 0.001 at n = 512)."""
    theory_t2 = strong_alignment_leverage(0.5, "erf", 1.0, t, nodes=20).t2
    mean, se = _simulated_t2(t, 0.5, 512, 4, seed=29)
    assert abs(mean - theory_t2) <= 4 * se + 0.0015, (mean, se, theory_t2)


def test_leverage_limits_and_sum_rule():
    """t = 0: every leverage c (the linearised regime); any t: E_a h = c (tr P = p, not imposed)."""
    flat = strong_alignment_leverage(0.4, "tanh", 1.0, 0.0, nodes=12)
    assert np.allclose(flat.leverage, 0.4, atol=1e-8) and abs(flat.t2) < 1e-9
    for t, c, act in [(0.7, 0.5, "erf"), (1.5, 0.25, "tanh"), (0.5, 0.6, "gelu")]:
        prof = strong_alignment_leverage(c, act, 1.0, t, nodes=12)
        assert prof.converged and float(prof.weights @ prof.leverage) == pytest.approx(c, abs=1e-7)


@pytest.mark.parametrize("t", [0.5, 1.0, 2.0])
def test_leverage_falls_with_the_labels_certainty_for_erf(t):
    """A saturating f puts leverage on tokens near the decision boundary: h decreases in |a|."""
    prof = strong_alignment_leverage(0.5, "erf", 1.0, t, nodes=16)
    order = np.argsort(np.abs(prof.a))
    assert np.all(np.diff(prof.leverage[order]) <= 1e-9)
    assert prof.t2 < 0


def test_small_t_is_second_order_and_gelu_reverses():
    """T2 = O(t^2) as t -> 0 (the linearised theory has no T2); gelu's profile runs the other way (T2 > 0)."""
    small, half = (strong_alignment_leverage(0.5, "erf", 1.0, t, nodes=12).t2 for t in (0.05, 0.1))
    assert small / half == pytest.approx(0.25, rel=0.1)
    assert strong_alignment_leverage(0.5, "gelu", 1.0, 0.5, nodes=12).t2 > 0


def test_gap_is_its_two_parts():
    erf_gap = strong_alignment_gap(0.5, "erf", 1.0, 1.0, nodes=12)
    assert erf_gap.t1 == pytest.approx(strong_alignment_margin(0.5, 1.0)) and erf_gap.total == erf_gap.t1 + erf_gap.t2
    gelu = strong_alignment_gap(0.5, "gelu", 1.0, 1.0, nodes=12)
    # no capture: the nonlinear part of tanh(a) is left with weight 1 - h(a); with uniform leverage (t -> 0) that is
    # ridge's own share, so the T1 part is small and vanishes with the leverage profile's slope
    assert gelu.t1 != 0.0 and abs(gelu.t1) < 0.1 * abs(strong_alignment_margin(0.5, 1.0))
    assert abs(strong_alignment_gap(0.5, "gelu", 1.0, 1e-3, nodes=12).t1) < 1e-6
    with pytest.raises(ValueError, match="t"):  # t -> 0 and p -> infinity do not commute (docstring)
        strong_alignment_gap(0.5, "erf", 1.0, 0.0, nodes=12)
    assert [captures_bayes_predictor(f) for f in ("erf", "tanh", "sign", "gelu", "relu", "softplus", "cos")] == [
        True, True, True, False, False, False, False]


@pytest.mark.parametrize("kwargs, match", [
    (dict(t=-0.1), "t"), (dict(c=1.0), "c"), (dict(c=0.0), "c"), (dict(activation={"a1": 0.5, "sf2": 0.1}), "activation"),
    (dict(activation="nope"), "activation"), (dict(snr=-1.0), "snr"), (dict(nodes=4), "nodes")])
def test_leverage_bad_input_refused(kwargs, match):
    args = dict(t=0.5, c=0.5, activation="erf", snr=1.0, nodes=12) | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        strong_alignment_leverage(**args)


# ------------------------------------------------------------------------- gamma > 0: strong_spike_attention_error
def test_gamma_zero_is_the_gap_plus_ridge():
    """At gamma = 0 (c < 1) the error is strong_alignment_gap's total plus ridge's (1 - c)/(1 + snr)."""
    for act, t, c, snr in [("erf", 1.0, 0.5, 1.0), ("gelu", 0.5, 1 / 3, 2.0)]:
        gap = strong_alignment_gap(c, act, snr, t, nodes=40)
        e = strong_spike_attention_error(0.0, c, act, snr, t, nodes=40)
        # equal but for the quadrature of mmse over a (the gap's T1 part integrates it adaptively)
        assert e == pytest.approx(gap.total + (1 - c) / (1 + snr), abs=2e-6)


@settings(max_examples=5, deadline=None)
@given(c=st.sampled_from([0.25, 0.5, 2.0]), gamma=st.floats(1e-2, 3.0), act=st.sampled_from(["erf", "tanh", "gelu"]))
def test_small_t_is_the_null_model_scaled(c, gamma, act):
    """As t -> 0+ the Bayes predictor (or its linear part) is captured and the rest meets the null kernel's features:
    E = mmse E_null(gamma) (capture) or E_null(gamma) / (1 + snr) (gelu), E_null from the project's null system."""
    from theory import AttentionModel

    null = float(AttentionModel(c, act).error(gamma))
    scale = label_mmse(1.0) if captures_bayes_predictor(act) else 0.5
    assert strong_spike_attention_error(gamma, c, act, 1.0, 1e-4, nodes=40) == pytest.approx(scale * null, rel=1e-4)


def test_error_grows_with_gamma_and_refuses_bad_input():
    e = strong_spike_attention_error([1e-3, 1e-2, 1e-1, 1.0], 0.5, "erf", 1.0, 1.0, nodes=12)
    assert e.shape == (4,) and np.all(np.diff(e) > 0)
    with pytest.raises(ValueError, match="gamma must be > 0 when c >= 1"):
        strong_spike_attention_error(0.0, 2.0, "erf", 1.0, 1.0)
    for bad in (dict(t=0.0), dict(gamma=-1.0), dict(c=0.0), dict(snr=float("nan"))):
        args = dict(gamma=0.1, c=0.5, activation="erf", snr=1.0, t=1.0) | bad
        with pytest.raises(ValueError):
            strong_spike_attention_error(**args)


# ------------------------------------------------------------------------- the settings object
def test_strong_alignment_object_is_the_functions():
    """Each method is its function called with the fields, bit for bit; the object is frozen, hashable, canonical."""
    import dataclasses

    from theory import (StrongAlignment, binned_leverage, label_coordinate_bins, ridge_prediction_risk,
                        strong_spike_prediction_risk)

    s = StrongAlignment(0.5, "ERF", 1, 1.0)
    assert s == StrongAlignment(c=0.5, activation="erf", snr=1.0, t=1.0) and hash(s) == hash(StrongAlignment(
        0.5, "erf", 1.0, 1.0)) and (s.activation, type(s.snr)) == ("erf", float)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.t = 2.0
    gammas = [0.0, 0.1]
    assert np.array_equal(s.error(gammas, nodes=12),
                          strong_spike_attention_error(gammas, 0.5, "erf", 1.0, 1.0, nodes=12))
    assert np.array_equal(s.prediction_risk(gammas, nodes=12),
                          strong_spike_prediction_risk(gammas, 0.5, "erf", 1.0, 1.0, nodes=12))
    assert np.array_equal(s.ridge_prediction_risk(gammas), ridge_prediction_risk(gammas, 0.5, 1.0))
    assert s.gap(nodes=12).total == strong_alignment_gap(0.5, "erf", 1.0, 1.0, nodes=12).total
    assert np.array_equal(s.leverage(nodes=12).leverage,
                          strong_alignment_leverage(0.5, "erf", 1.0, 1.0, nodes=12).leverage)
    edges = s.label_coordinate_bins(3)
    assert np.array_equal(edges, label_coordinate_bins(1.0, 3))
    assert s.binned_leverage(edges, per_bin=4).t2 == binned_leverage(edges, 0.5, "erf", 1.0, 1.0, per_bin=4).t2
    assert (s.label_mmse, s.bayes_feature_limit, s.margin, s.captures_bayes_predictor) == (
        label_mmse(1.0), bayes_feature_limit(0.5, 1.0), strong_alignment_margin(0.5, 1.0), True)


def test_strong_alignment_object_refuses_what_its_methods_need():
    from theory import StrongAlignment

    wide = StrongAlignment(2.0, "erf", 1.0, 1.0)  # c > 1: only gamma > 0
    assert float(wide.error(0.1, nodes=8)) > 0
    with pytest.raises(ValueError, match="c"):
        wide.gap()
    with pytest.raises(ValueError, match="t"):
        StrongAlignment(0.5, "erf", 1.0, 0.0).gap()
    for bad, match in ((dict(activation={"a1": 0.5, "sf2": 0.1}), "activation"), (dict(t=-1.0), "t"),
                       (dict(c=0.0), "c"), (dict(snr=math.inf), "snr")):
        with pytest.raises((ValueError, TypeError), match=match):
            StrongAlignment(**(dict(c=0.5, activation="erf", snr=1.0, t=1.0) | bad))
