"""theory.strong_alignment: the closed forms of the interpolation limit's split (docs/strong_alignment.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import theory
from theory import bayes_feature_limit, label_mmse, ridge_error_values, strong_alignment_margin

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
