"""The shared finite-size rule of the paper-B checks, tested by simulation of its own hypothesis.

The rule (``verify.checks._finite_size``) is a 3-sigma test of "the gap decays at least like n^-1/2".
These tests draw Monte Carlo means around a known limit and check its error rates: a correct prediction
with the slowest allowed decay must fail rarely (3-sigma one-sided: ~0.1%), a constant offset of 30
standard errors must fail almost always, and the rule it replaced is shown to reject a correct prediction
far more often than 3 sigma allows (the reason for the change).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.checks._finite_size import finite_size_test

Q = 2**-0.5


def _draw(rng, n, gap_small, ratio, se_s, se_l):
    ms = 1.0 + gap_small + se_s * rng.standard_normal(n)
    ml = 1.0 + gap_small * ratio + se_l * rng.standard_normal(n)
    return ms, ml


def _fail_rate(ms, ml, se_s, se_l, rule):
    return float(np.mean([not rule(1.0, a, se_s, b, se_l) for a, b in zip(ms, ml)]))


def _new(pred, ms, ss, ml, sl):
    return finite_size_test(pred, ms, ss, ml, sl, 0.5).passed


def _old_noise_subtracted(pred, ms, ss, ml, sl):  # the B4/B7 rule before 2026-11-29
    allow = max(0.0, abs(ms - ml) - 2 * math.hypot(ss, sl)) / (math.sqrt(2) - 1)
    return abs(ml - pred) <= 3 * sl + allow and abs(ml - pred) <= abs(ms - pred) + 3 * math.hypot(ss, sl)


@pytest.mark.parametrize("gap_in_se", [0.0, 2.0, 10.0, 40.0])
def test_correct_prediction_with_slowest_decay_rarely_fails(gap_in_se):
    rng = np.random.default_rng(1)
    se_l, se_s = 1e-3, math.sqrt(2) * 1e-3
    ms, ml = _draw(rng, 20000, gap_in_se * se_l, Q, se_s, se_l)
    rate = _fail_rate(ms, ml, se_s, se_l, _new)
    # 3-sigma one-sided is 0.13% for a large gap; +5 binomial SE (20000 draws) of slack
    assert rate <= 0.0013 + 5 * math.sqrt(0.0013 / 20000)


def test_faster_decay_passes_and_constant_offset_fails():
    rng = np.random.default_rng(2)
    se_l, se_s = 1e-3, math.sqrt(2) * 1e-3
    ms, ml = _draw(rng, 5000, 40 * se_l, 0.5, se_s, se_l)  # 1/n decay
    assert _fail_rate(ms, ml, se_s, se_l, _new) < 0.002
    ms, ml = _draw(rng, 5000, 30 * se_l, 1.0, se_s, se_l)  # does not decay: 30 SE offset
    # T = |g_l| - q |g_s| = 30 (1 - q) = 8.79 SE against the bound 3 hypot(SE_l, q SE_s) = 4.24 SE; T has
    # SD hypot(1, 1) = 1.41 SE, so the offset is 3.2 SD beyond the bound: power ~99.9%
    assert _fail_rate(ms, ml, se_s, se_l, _new) > 0.99


def test_replaced_rule_rejected_correct_predictions():
    rng = np.random.default_rng(3)
    se_l, se_s = 1e-3, math.sqrt(2) * 1e-3
    ms, ml = _draw(rng, 5000, 40 * se_l, Q, se_s, se_l)
    assert _fail_rate(ms, ml, se_s, se_l, _old_noise_subtracted) > 0.5


@settings(max_examples=60, deadline=None)
@given(pred=st.floats(-10, 10), gs=st.floats(-1, 1), gl=st.floats(-1, 1), ss=st.floats(0, 0.1), sl=st.floats(0, 0.1),
       ratio=st.floats(0.05, 0.95))
def test_rule_is_the_stated_inequality(pred, gs, gl, ss, sl, ratio):
    t = finite_size_test(pred, pred + gs, ss, pred + gl, sl, ratio)
    q = math.sqrt(ratio)
    lhs = abs((pred + gl) - pred)
    rhs = q * abs((pred + gs) - pred) + 3 * math.hypot(sl, q * ss)
    assert t.passed == (lhs <= rhs) or math.isclose(lhs, rhs, rel_tol=1e-9, abs_tol=1e-12)
    assert t.bound == pytest.approx(t.allowance + t.noise)


def test_non_finite_inputs_do_not_pass():
    assert not finite_size_test(1.0, float("nan"), 0.1, 1.0, 0.1, 0.5).passed


def test_estimated_standard_errors_use_the_t_quantile():
    """SEs estimated from (8, 4) trials (B1b's paper sizes): with the t quantile the false-fail rate of a
    correct prediction at the slowest allowed decay stays at the 3-sigma level; with a plain 3 it does not."""
    rng = np.random.default_rng(4)
    sd, reps, ts, tl = 1.0, 20000, 8, 4
    gap = 40 * sd / math.sqrt(tl)
    xs = 1.0 + gap + sd * math.sqrt(2) * rng.standard_normal((reps, ts))  # small size: twice the variance
    xl = 1.0 + gap * Q + sd * rng.standard_normal((reps, tl))
    ms, ss = xs.mean(1), xs.std(1, ddof=1) / math.sqrt(ts)
    ml, sl = xl.mean(1), xl.std(1, ddof=1) / math.sqrt(tl)
    with_t = np.mean([not finite_size_test(1.0, a, b, c, d, 0.5, (ts, tl)).passed for a, b, c, d in zip(ms, ss, ml, sl)])
    plain = np.mean([not finite_size_test(1.0, a, b, c, d, 0.5).passed for a, b, c, d in zip(ms, ss, ml, sl)])
    # 0.13% one-sided target; the Welch df is itself estimated, so allow twice it plus 5 binomial SE
    assert with_t <= 2 * 0.0013 + 5 * math.sqrt(0.0013 / reps)
    assert plain > 3 * 0.0013  # the reason for the t quantile
