"""Tests of theory.minimax (paper A symbolic layer)."""

from __future__ import annotations

import doctest
import math

import mpmath
import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import theory.minimax as mm
from theory.minimax import (
    average_slope,
    beta_from_bspline_degree,
    finite_sample_slope,
    log_gap_exponent,
    low_rank_condition,
    lower_bound,
    min_samples,
    minimax_rate,
    num_intervals,
    parametric_term,
    rate_exponent,
    total_error_slope,
    upper_bound,
)
from theory.symbols import M, N, beta, d, r

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])

betas = st.fractions(min_value=sp.Rational(1, 16), max_value=12, max_denominator=16).map(
    lambda f: sp.Rational(f.numerator, f.denominator)).filter(lambda b: b > 0)
beta_floats = st.floats(min_value=1e-3, max_value=50.0, allow_nan=False)
Ms = st.floats(min_value=3.0, max_value=1e15, allow_nan=False)


@st.composite
def rank_dim(draw, dmax: int = 40):
    dd = draw(st.integers(1, dmax))
    rr = draw(st.integers(1, dd))
    return rr, dd


def _close(a, b, rel=1e-12):
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-300)


# ------------------------------------------------------------------------------------------- exponent
@SETTINGS
@given(beta_floats)
def test_exponent_in_unit_interval(b):
    e = float(rate_exponent(b))
    assert 0 < e < 1


@SETTINGS
@given(betas, betas)
def test_exponent_increasing_in_beta(b1, b2):
    if b1 == b2:
        return
    lo, hi = sorted((b1, b2))
    assert rate_exponent(lo) < rate_exponent(hi)


def test_exponent_symbolic_form_and_bspline():
    assert sp.simplify(rate_exponent(beta) - 2 * beta / (2 * beta + 1)) == 0
    assert rate_exponent(beta_from_bspline_degree(3)) == sp.Rational(4, 5)
    assert rate_exponent(beta_from_bspline_degree(8)) == sp.Rational(14, 15)
    assert beta_from_bspline_degree(sp.Symbol("P")) == sp.Symbol("P") - 1


@SETTINGS
@given(betas)
def test_log_gap_exponent_value(b):
    assert log_gap_exponent(b) == 2 * b / (2 * b + 1) + 4 * max(2 * b, 1)
    assert log_gap_exponent(b) > rate_exponent(b)


# ------------------------------------------------------------------------------------------- bounds
@SETTINGS
@given(Ms, Ms, beta_floats)
def test_minimax_rate_decreasing_in_M(m1, m2, b):
    if m1 == m2:
        return
    lo, hi = sorted((m1, m2))
    assert float(minimax_rate(lo, b)) >= float(minimax_rate(hi, b))


@SETTINGS
@given(Ms, st.integers(2, 10**6), betas)
def test_lower_below_upper(m, n, b):
    assert float(lower_bound(m, n, b)) <= float(upper_bound(m, b))


def test_lower_bound_constant_and_upper_convention():
    assert sp.simplify(lower_bound(M, N, beta, c0=7) / lower_bound(M, N, beta) - 7) == 0
    ratio = upper_bound(M, beta) / minimax_rate(M, beta)
    assert sp.simplify(ratio - sp.log(M) ** log_gap_exponent(beta)) == 0


# ------------------------------------------------------------------------------------------- symbolic vs numeric
_SYMBOLIC = {  # built once: symbolic expressions in the standard symbols
    "rate_exponent": rate_exponent(beta),
    "minimax_rate": minimax_rate(M, beta),
    "upper_bound": upper_bound(M, beta),
    "lower_bound": lower_bound(M, N, beta),
    "log_gap_exponent": log_gap_exponent(beta),
    "parametric_term": parametric_term(r, d, M),
    "slope_upper": finite_sample_slope(M, beta),
    "slope_rate": finite_sample_slope(M, beta, "rate"),
    "slope_lower": finite_sample_slope(M, beta, "lower"),
    "total_error_slope": total_error_slope(M, beta, r, d, 2, 3),
    "average_slope": average_slope(M, 10 * M, beta),
    "num_intervals": num_intervals(M, beta, 3),
}


@FEW
@given(Ms, st.integers(2, 1000), betas, rank_dim())
def test_symbolic_matches_numeric(m, n, b, rd):
    rr, dd = rd
    m = sp.Rational(m).limit_denominator(10**6) if m < 1e6 else sp.Integer(int(m))
    sub = {M: m, N: n, beta: b, r: rr, d: dd}
    numeric = {
        "rate_exponent": rate_exponent(b),
        "minimax_rate": minimax_rate(m, b),
        "upper_bound": upper_bound(m, b),
        "lower_bound": lower_bound(m, n, b),
        "log_gap_exponent": log_gap_exponent(b),
        "parametric_term": parametric_term(rr, dd, m),
        "slope_upper": finite_sample_slope(m, b),
        "slope_rate": finite_sample_slope(m, b, "rate"),
        "slope_lower": finite_sample_slope(m, b, "lower"),
        "total_error_slope": total_error_slope(m, b, rr, dd, 2, 3),
        "average_slope": average_slope(m, 10 * m, b),
        "num_intervals": num_intervals(m, b, 3),
    }
    for key, num in numeric.items():
        assert _close(_SYMBOLIC[key].subs(sub), num), (key, num)
    assert bool(low_rank_condition(r, d, M, beta).subs(sub)) == bool(low_rank_condition(rr, dd, m, b))


@FEW
@given(st.floats(min_value=1.5, max_value=40.0), betas, rank_dim())
def test_slopes_match_finite_differences(logm, b, rd):
    """d log(bound)/d log M against a central difference of log(bound) (independent of the sympy diff)."""
    rr, dd = rd
    h = mpmath.mpf("1e-6")
    mpmath.mp.dps = 40
    t = mpmath.mpf(logm)

    def fd(f):
        return (f(t + h) - f(t - h)) / (2 * h)

    def log_upper(tt):
        return mpmath.log(sp.N(upper_bound(sp.exp(sp.Float(tt, 40)), b), 40))

    def log_total(tt):
        mval = sp.exp(sp.Float(tt, 40))
        return mpmath.log(sp.N(minimax_rate(mval, b) + parametric_term(rr, dd, mval), 40))

    assert math.isclose(float(fd(log_upper)), float(finite_sample_slope(sp.exp(logm), b)),
                        rel_tol=1e-7, abs_tol=1e-8)
    assert math.isclose(float(fd(log_total)), float(total_error_slope(sp.exp(logm), b, rr, dd)),
                        rel_tol=1e-7, abs_tol=1e-8)
    mpmath.mp.dps = 15


def test_finite_sample_slope_closed_forms_and_limits():
    e, g = rate_exponent(beta), log_gap_exponent(beta)
    assert sp.simplify(finite_sample_slope(M, beta) - (-e + g / sp.log(M))) == 0
    assert finite_sample_slope(M, beta, "rate") == -e
    assert sp.limit(finite_sample_slope(M, 2), M, sp.oo) == sp.Rational(-4, 5)
    assert sp.limit(total_error_slope(M, 7, 1, 30), M, sp.oo) == sp.Rational(-14, 15)
    # secant slope of the plain rate is the exponent; secant of the upper bound is the mean of the local slope
    assert average_slope(10, 10**6, 2, bound="rate") == sp.Rational(-4, 5)
    lo, hi = sp.log(10**3), sp.log(10**5)
    local = sp.lambdify(M, finite_sample_slope(M, 2), "mpmath")
    mean_local = mpmath.quad(lambda tt: local(mpmath.exp(tt)), [float(lo), float(hi)])
    assert math.isclose(mean_local / float(hi - lo), float(average_slope(10**3, 10**5, 2)), rel_tol=1e-9)


def test_total_slope_small_M_parametric_dominates():
    # huge r d: the parametric term dominates and its local slope is -1 + 1/log M
    m = sp.Integer(10) ** 6
    s = float(total_error_slope(m, 2, 10**6, 10**6, c_np=1, c_p=10**6))
    assert math.isclose(s, -1 + 1 / math.log(1e6), rel_tol=1e-3)


# ------------------------------------------------------------------------------------------- condition, K_M, min_samples
@SETTINGS
@given(rank_dim(), betas, st.integers(3, 10**9), st.integers(1, 10**6))
def test_low_rank_condition_monotone_in_M(rd, b, m, dm):
    rr, dd = rd
    if bool(low_rank_condition(rr, dd, m, b)):
        assert bool(low_rank_condition(rr, dd, m + dm, b))


@SETTINGS
@given(rank_dim(), betas, st.integers(3, 10**12))
def test_condition_equivalent_to_parametric_below_nonparametric_times_log(rd, b, m):
    rr, dd = rd
    e = rate_exponent(b)
    lhs = bool(low_rank_condition(rr, dd, m, b))
    rhs = bool(sp.Le(parametric_term(rr, dd, m), minimax_rate(m, b) * sp.log(m) ** e))
    assert lhs == rhs


def _independent_ok(rr, dd, b, m):
    """k log m <= m with mpmath at the digits of m plus 30 (independent of the module's code path; a fixed 80 could
    not tell m from m - 1 when m itself has 80 digits: r = d = 35, beta = 12)."""
    with mpmath.workdps(len(str(int(m))) + 30):
        k = mpmath.mpf(rr * dd) ** (2 * mpmath.mpf(b.p) / b.q + 1)
        return mpmath.mpf(m) - k * mpmath.log(m) >= 0


@FEW
@given(rank_dim(), betas)
def test_min_samples_is_minimal(rd, b):
    rr, dd = rd
    m0 = min_samples(rr, dd, b)
    assert isinstance(m0, int) and m0 >= 3
    assert bool(low_rank_condition(rr, dd, m0, b)) and _independent_ok(rr, dd, b, m0)
    if m0 > 3:
        assert not bool(low_rank_condition(rr, dd, m0 - 1, b)) and not _independent_ok(rr, dd, b, m0 - 1)


@pytest.mark.parametrize("rr,dd,b", [(1, 30, 2), (1, 30, 7), (1, 1, 1), (40, 40, 5)])
def test_min_samples_known_cases(rr, dd, b):
    m0 = min_samples(rr, dd, b)
    assert bool(low_rank_condition(rr, dd, m0, b))
    assert m0 == 3 or not bool(low_rank_condition(rr, dd, m0 - 1, b))


def test_min_samples_float_beta_and_symbolic_rejected():
    assert min_samples(3, 3, 1 / 3) == min_samples(3, 3, sp.Rational(1, 3))
    with pytest.raises(ValueError, match="beta"):
        min_samples(1, 2, beta)


@SETTINGS
@given(st.integers(3, 10**12), st.integers(1, 10**6), betas, st.sampled_from([1, sp.Rational(1, 3), 5]))
def test_num_intervals_at_least_one_and_nondecreasing(m, dm, b, cst):
    k1, k2 = num_intervals(m, b, cst), num_intervals(m + dm, b, cst)
    assert k1.is_Integer and k1 >= 1
    assert k2 >= k1
    raw = float(cst * (m / math.log(m)) ** (1 / (2 * float(b) + 1)))
    if raw >= 1 and abs(raw - round(raw)) > 1e-9:
        assert int(k1) == math.floor(raw)


def test_num_intervals_examples():
    assert num_intervals(10**6, 2) == 9
    assert num_intervals(3, 100) == 1
    assert num_intervals(M, beta).has(sp.floor)


# ------------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: rate_exponent(0), "beta"),
        (lambda: rate_exponent(-1.5), "beta"),
        (lambda: minimax_rate(1.5, 2), "M"),
        (lambda: minimax_rate(100, 0), "beta"),
        (lambda: upper_bound(1, 2), "M"),
        (lambda: lower_bound(100, 1, 2), "N"),
        (lambda: lower_bound(100, 2.5, 2), "N"),
        (lambda: lower_bound(100, 4, 2, c0=0), "c0"),
        (lambda: log_gap_exponent(-2), "beta"),
        (lambda: low_rank_condition(3, 2, 100, 2), "r"),
        (lambda: low_rank_condition(0, 2, 100, 2), "r"),
        (lambda: low_rank_condition(1, 0, 100, 2), "d"),
        (lambda: low_rank_condition(1, 2, 1.9, 2), "M"),
        (lambda: low_rank_condition(1, 2, 100, 0), "beta"),
        (lambda: num_intervals(1, 2), "M"),
        (lambda: num_intervals(100, 2, constant=0), "constant"),
        (lambda: beta_from_bspline_degree(1), "P"),
        (lambda: beta_from_bspline_degree(2.5), "P"),
        (lambda: parametric_term(2, 1, 100), "r"),
        (lambda: parametric_term(1, 1, 0.5), "M"),
        (lambda: finite_sample_slope(1, 2), "M"),
        (lambda: finite_sample_slope(100, 2, bound="nope"), "bound"),
        (lambda: average_slope(100, 10, 2), "M_hi"),
        (lambda: average_slope(1, 10, 2), "M_lo"),
        (lambda: total_error_slope(100, 2, 5, 4), "r"),
        (lambda: total_error_slope(100, 2, 1, 4, c_np=-1), "c_np"),
        (lambda: total_error_slope(100, 2, 1, 4, c_p=0), "c_p"),
        (lambda: min_samples(0, 4, 2), "r"),
        (lambda: min_samples(1, 4, -2), "beta"),
        (lambda: rate_exponent(float("nan")), "beta"),
    ],
)
def test_invalid_inputs_name_the_argument(call, name):
    with pytest.raises(ValueError) as exc:
        call()
    assert str(exc.value).startswith(name + " ")


def test_symbols_pass_through():
    b, m = sp.Symbol("b"), sp.Symbol("m")  # no assumptions: cannot be validated, accepted
    assert rate_exponent(b) == 2 * b / (2 * b + 1)
    assert isinstance(low_rank_condition(r, d, m, b), sp.core.relational.Relational)
    assert upper_bound(m, b).has(sp.log)


def test_all_public_names_and_doctests():
    assert set(mm.__all__) == {
        "rate_exponent", "minimax_rate", "upper_bound", "lower_bound", "log_gap_exponent",
        "low_rank_condition", "low_rank_rhs", "num_intervals", "beta_from_bspline_degree", "parametric_term",
        "finite_sample_slope", "average_slope", "total_error_slope", "min_samples",
    }
    res = doctest.testmod(mm)
    assert res.failed == 0 and res.attempted >= 25


# ----------------------------------------------------------------------------- bad inputs refused
def test_infinities_bools_and_huge_answers_refused():
    for call, word in [(lambda: rate_exponent(float("inf")), "beta"), (lambda: upper_bound(float("inf"), 2), "M"),
                       (lambda: rate_exponent(True), "beta"), (lambda: min_samples(1, 5, 1e6), "beta"),
                       (lambda: min_samples(10**400, 10**400, 2), "r"), (lambda: lower_bound(100, 2.5, 1), "N"),
                       (lambda: finite_sample_slope(100, 2, bound=None), "bound"),
                       (lambda: rate_exponent("2"), "beta")]:
        with pytest.raises(ValueError) as exc:
            call()
        assert word in str(exc.value)


def test_exact_integers_beyond_float_range_accepted_symbolically():
    assert upper_bound(10**400, 2).is_positive
    assert bool(low_rank_condition(1, 5, 10**400, 2))


def test_min_samples_certifies_long_answers():
    """Answers of ~100 digits: sympy's default precision cannot decide the relational; explicit digits do."""
    m = min_samples(1, 10, 50.3)
    assert len(str(m)) == 104
    b = sp.Rational(50.3)
    k = 10 ** (2 * b + 1)
    assert (m - k * sp.log(m)).evalf(200) >= 0 > (m - 1 - k * sp.log(m - 1)).evalf(200)
