"""theory.strong_alignment_risk: prediction risk on fresh labels and the leverage by bins of |a|.

The identities are checked against independent routes: ridge's risk at gamma = 0 in closed form, attention's risk
gap against the training gap's parts (``R_att - R_RR = T1 - T2``), the bins' quadrature against the Gauss-Hermite
solve of ``strong_alignment_leverage``, and the risk identity ``R = E + 2/n sum v_i S_ii`` against drawn labels.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theory import (binned_leverage, label_coordinate_bins, label_mmse, mp_delta,
                    ridge_error_values, ridge_prediction_risk, strong_alignment_gap, strong_spike_attention_error,
                    strong_spike_prediction_risk)
from theory.strong_alignment_risk import _abs_coordinate_cdf


@settings(max_examples=30, deadline=None)
@given(st.floats(0.02, 0.98), st.floats(0.0, 20.0))
def test_ridge_risk_at_interpolation_in_closed_form(c, snr):
    assert ridge_prediction_risk(0.0, c, snr) == pytest.approx((1 - c) / (1 + snr) + 2 * c * label_mmse(snr),
                                                               abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.floats(1e-4, 10.0), st.floats(0.05, 4.0), st.floats(0.0, 10.0))
def test_ridge_risk_is_training_error_plus_twice_the_absorbed_noise(gamma, c, snr):
    absorbed = label_mmse(snr) * (1 - gamma * mp_delta(gamma, c))
    assert ridge_prediction_risk(gamma, c, snr) == pytest.approx(
        float(ridge_error_values(gamma, c, snr)) + 2 * absorbed, rel=1e-10)
    assert ridge_prediction_risk(gamma, c, snr) >= float(ridge_error_values(gamma, c, snr))


@pytest.mark.parametrize("c,gamma", [(0.5, 0.1), (0.5, 1.0), (2.0, 0.3)])
def test_ridge_leverage_against_a_sampled_hat_matrix(c, gamma):
    """The absorbed-noise term's ``1 - gamma delta`` against ``tr S / n`` of one sampled ridge fit (``n = 600``): an
    independent route to the formula above (the trace fluctuates by O(1/n), the rank-one signal moves it by <= 1/n)."""
    from numerics import sample_signal_plus_noise

    n = 600
    p = int(c * n)
    X, _, _ = sample_signal_plus_noise(n, p, 1.0, 4, labels="iid")
    S = X.T @ np.linalg.solve(X @ X.T + n * gamma * np.eye(p), X)
    assert np.trace(S) / n == pytest.approx(1 - gamma * mp_delta(gamma, c), abs=4 / n)


@pytest.mark.parametrize("activation,c,t", [("erf", 0.5, 1.0), ("tanh", 1 / 3, 2.0), ("gelu", 0.5, 0.5)])
def test_attention_risk_gap_is_t1_minus_t2(activation, c, t):
    """At gamma = 0 the fresh-label gap is T1 - T2 of the training gap's split (T2 changes sign)."""
    gap = strong_alignment_gap(c, activation, 1.0, t, nodes=20)
    risk = strong_spike_prediction_risk(0.0, c, activation, 1.0, t, nodes=20) - ridge_prediction_risk(0.0, c, 1.0)
    assert risk == pytest.approx(gap.t1 - gap.t2, abs=3e-5)  # mmse: adaptive quadrature vs 20 Gauss-Hermite nodes


def test_risk_exceeds_training_error_by_twice_the_absorbed_noise():
    gammas = np.array([1e-3, 0.1, 1.0])
    for c in (0.5, 2.0):
        train = strong_spike_attention_error(gammas, c, "erf", 1.0, 1.0, nodes=20)
        risk = strong_spike_prediction_risk(gammas, c, "erf", 1.0, 1.0, nodes=20)
        assert risk.shape == gammas.shape and np.all(risk > train)
        assert np.all(risk - train <= 2 * label_mmse(1.0) + 1e-9)  # leverages are at most 1


def test_risk_reverses_with_t_for_erf():
    """The predictive win exists at small t only: R_att - R_RR < 0 at t = 1/2, > 0 at t = 1 and 2 (c = 1/2)."""
    gaps = [strong_spike_prediction_risk(0.0, 0.5, "erf", 1.0, t, nodes=20) - ridge_prediction_risk(0.0, 0.5, 1.0)
            for t in (0.5, 1.0, 2.0)]
    assert gaps[0] < 0 < gaps[1] < gaps[2]


@pytest.mark.parametrize("call", [lambda: ridge_prediction_risk(0.0, 2.0, 1.0),
                                  lambda: strong_spike_prediction_risk(0.0, 1.5, "erf", 1.0, 1.0),
                                  lambda: strong_spike_prediction_risk(0.1, 0.5, "erf", 1.0, 0.0),
                                  lambda: strong_spike_prediction_risk(-1.0, 0.5, "erf", 1.0, 1.0),
                                  lambda: ridge_prediction_risk(0.1, 0.5, math.nan),
                                  lambda: strong_spike_prediction_risk(0.1, 0.5, {"a1": 1}, 1.0, 1.0)])
def test_refuses_bad_arguments(call):
    with pytest.raises((ValueError, TypeError)):
        call()


@settings(max_examples=20, deadline=None)
@given(st.floats(0.0, 9.0), st.integers(1, 12))
def test_bins_have_equal_probability(snr, k):
    edges = label_coordinate_bins(snr, k)
    probs = np.diff(_abs_coordinate_cdf(edges, snr))
    assert edges[0] == 0 and edges[-1] == math.sqrt(snr) + 40 and np.all(np.diff(edges) > 0)
    assert np.allclose(probs, 1 / k, atol=1e-10)


def test_binned_solve_agrees_with_the_gauss_hermite_solve():
    """Two quadratures of one equation: T1, T2 agree; the bins average to c (the mean leverage), h falls with |a|."""
    edges = label_coordinate_bins(1.0, 6)
    for act, c, t in (("erf", 0.5, 2.0), ("gelu", 0.25, 1.0)):
        b = binned_leverage(edges, c, act, 1.0, t)
        g = strong_alignment_gap(c, act, 1.0, t, nodes=80)
        assert b.converged and b.t2 == pytest.approx(g.t2, abs=2e-5) and b.t1 == pytest.approx(g.t1, abs=2e-5)
        assert b.bin_means.mean() == pytest.approx(c, abs=1e-6)
    h = binned_leverage(edges, 0.5, "erf", 1.0, 1.0, per_bin=6).bin_means
    assert np.all(np.diff(h) < 0)


@pytest.mark.parametrize("edges", [[1.0], [0.0, 0.0, 1.0], [-1.0, 1.0], [[0.0, 1.0]], [0.0, math.nan], [0.0, 1.05],
                                   [0.5, 40.0], [0.0, 1.0, 20.0, 30.0], [0.0, 1.0, math.inf, math.inf], ["a", "b"]])
def test_bins_refuse_edges_that_do_not_cover_the_coordinate(edges):
    """Bins must start at 0 and reach past the quadrature's end: otherwise the solve would be of another model."""
    with pytest.raises(ValueError, match="edges"):
        binned_leverage(edges, 0.5, "erf", 1.0, 1.0)
    assert binned_leverage([0.0, 1.0, math.inf], 0.5, "erf", 1.0, 1.0, per_bin=4).bin_means.shape == (2,)


def test_anderson_mixing_changes_no_value(monkeypatch):
    """The accelerated iteration and the plain damped one reach the same leverage (to 1e-10) in fewer iterations."""
    import theory._leverage_dyson as dyson
    from theory.activations import numpy_activation

    f = numpy_activation("erf")
    options = dyson.DysonOptions(20, 1e-12, 5000)
    fast = dyson.solve_leverage(f, 0.5, 1.0, 1.0, options)
    monkeypatch.setattr(dyson, "ANDERSON_DEPTH", 0)
    slow = dyson.solve_leverage(f, 0.5, 1.0, 1.0, options)
    assert fast.converged and slow.converged and fast.iterations < slow.iterations
    assert np.allclose(fast.leverage, slow.leverage, atol=1e-10, rtol=0)


def test_bins_cover_large_snr():
    edges = label_coordinate_bins(2000.0, 3)
    assert np.all(np.diff(edges) > 0) and edges[-1] == math.sqrt(2000.0) + 40
