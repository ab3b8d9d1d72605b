"""Tests of numerics.slopes: fit_slope, design_slope."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.slopes import SlopeFit, design_slope, fit_slope

M_LEVELS = np.array([100, 250, 630, 1600, 4000, 10000], dtype=float)


def _synthetic(rng, slope=-0.8, reps=8, sd=0.15, levels=M_LEVELS):
    M = np.repeat(levels, reps)
    err = 3.0 * M**slope * np.exp(sd * rng.standard_normal(M.size))
    return M, err


def test_exact_power_law_is_recovered():
    M = np.repeat(M_LEVELS, 3)
    f = fit_slope(M, 0.5 * M**-0.93, n_boot=200)
    assert f.slope == pytest.approx(-0.93, abs=1e-12)
    assert f.intercept == pytest.approx(np.log(0.5), abs=1e-10)
    assert f.r2 == pytest.approx(1.0)
    assert f.n == 18 and f.n_levels == 6 and f.df == 4
    assert f.se == pytest.approx(0.0, abs=1e-12)


def test_t_interval_coverage_over_repeated_draws():
    """The 95% t interval (per-M means, df = levels - 2) covers the true slope about 95% of the time."""
    rng = np.random.default_rng(12345)
    hits_t = hits_pooled = hits_boot = 0
    n_rep = 200
    for _ in range(n_rep):
        M, err = _synthetic(rng)
        f = fit_slope(M, err, n_boot=200, rng=rng)
        hits_t += f.ci_t[0] <= -0.8 <= f.ci_t[1]
        hits_pooled += f.ci_pooled[0] <= -0.8 <= f.ci_pooled[1]
        hits_boot += f.ci_boot[0] <= -0.8 <= f.ci_boot[1]
    # binomial(200, 0.95): mean 190, sd 3.1; 180 is > 3 sd below, 199 > 2.9 sd above
    assert 180 <= hits_t <= 199
    assert 180 <= hits_pooled <= 199
    assert hits_boot >= 170  # percentile bootstrap with 8 replicates per level is a bit liberal


def test_t_interval_wider_than_pooled_under_lack_of_fit():
    """A curved log-log relation: the per-M interval widens, the lack-of-fit test fires."""
    rng = np.random.default_rng(1)
    M = np.repeat(M_LEVELS, 10)
    x = np.log(M)
    err = np.exp(-0.8 * x + 0.08 * (x - x.mean()) ** 2 + 0.02 * rng.standard_normal(M.size))
    f = fit_slope(M, err, n_boot=0)
    assert f.lack_of_fit_p is not None and f.lack_of_fit_p < 1e-6
    assert (f.ci_t[1] - f.ci_t[0]) > 2 * (f.ci_pooled[1] - f.ci_pooled[0])


def test_bootstrap_reproducible_with_seed():
    rng = np.random.default_rng(3)
    M, err = _synthetic(rng)
    a = fit_slope(M, err, n_boot=300, rng=7)
    b = fit_slope(M, err, n_boot=300, rng=7)
    assert a.ci_boot == b.ci_boot
    assert a.ci_boot[0] < a.slope < a.ci_boot[1]


def test_no_replicates_gives_no_bootstrap():
    f = fit_slope(M_LEVELS, M_LEVELS**-0.5 * np.array([1, 1.1, 0.9, 1.05, 1.0, 0.97]))
    assert f.ci_boot is None and f.lack_of_fit_p is None


@pytest.mark.parametrize(
    "M, errors, match",
    [
        ([1, 2, 3], [1, 1], "same length"),
        ([1, 2, -3], [1, 1, 1], "M must"),
        ([1, 2, 3], [1, 0, 1], "errors must"),
        ([1, 2, 3], [1, np.nan, 1], "errors must"),
        ([1, 1, 2, 2], [1, 1, 1, 1], "at least 3 distinct"),
        ([[1, 2, 3]], [[1, 1, 1]], "M must be 1-D"),
        (1.0, 1.0, "M must be a 1-D"),
    ],
)
def test_invalid_input(M, errors, match):
    with pytest.raises(ValueError, match=match):
        fit_slope(M, errors)


def test_invalid_n_boot():
    with pytest.raises(ValueError, match="n_boot"):
        fit_slope([1, 2, 3], [1, 2, 3], n_boot=-1)


@settings(max_examples=30, deadline=None)
@given(
    slope=st.floats(-3, 3),
    logc=st.floats(-5, 5),
    levels=st.lists(st.floats(1, 1e6), min_size=3, max_size=8, unique=True),
)
def test_design_slope_exact_for_power_laws(slope, logc, levels):
    M = np.asarray(levels)
    if np.ptp(np.log(M)) < 1e-3 or np.unique(np.log(M)).size < 3:  # distinct M, equal logs: a ValueError
        return
    assert design_slope(M, np.exp(logc) * M**slope) == pytest.approx(slope, abs=1e-7)


def test_to_dict_is_plain():
    f = fit_slope(np.repeat(M_LEVELS, 2), np.repeat(M_LEVELS, 2) ** -1.0 * np.tile([1, 1.2], 6))
    d = f.to_dict()
    assert isinstance(f, SlopeFit) and set(d) >= {"slope", "se", "ci_t", "ci_boot", "r2", "df"}


# ---------------------------------------------------------------- the parts of fit_slope
def test_replicate_se_is_the_variance_of_the_weighted_level_means():
    """Unequal counts: se_rep^2 = sum_k w_k^2 s_k^2 / n_k (own variance per level), Satterthwaite df."""
    rng = np.random.default_rng(3)
    levels = np.log([100.0, 300.0, 1000.0, 3000.0])
    counts = np.array([9, 4, 3, 5])
    M = np.repeat(np.exp(levels), counts)
    e = np.exp(-0.5 * np.log(M) + rng.normal(0, 1, M.size) * np.repeat([0.4, 0.2, 0.1, 0.05], counts))
    f = fit_slope(M, e, n_boot=0)
    groups = np.split(np.log(e), np.cumsum(counts)[:-1])
    w = (levels - levels.mean()) / np.sum((levels - levels.mean()) ** 2)
    parts = np.array([wk**2 * np.var(g, ddof=1) / g.size for wk, g in zip(w, groups)])
    assert f.se_rep == pytest.approx(np.sqrt(parts.sum()), rel=1e-12)
    assert f.df_rep == pytest.approx(parts.sum() ** 2 / np.sum(parts**2 / (counts - 1)), rel=1e-12)


def test_replicate_se_with_a_single_replicate_level_falls_back_to_the_pooled_variance():
    rng = np.random.default_rng(4)
    levels = np.log([100.0, 300.0, 1000.0, 3000.0])
    counts = np.array([4, 1, 4, 4])
    M = np.repeat(np.exp(levels), counts)
    e = np.exp(-0.5 * np.log(M) + rng.normal(0, 0.2, M.size))
    f = fit_slope(M, e, n_boot=0)
    y = np.log(e)
    means = np.repeat([g.mean() for g in np.split(y, np.cumsum(counts)[:-1])], counts)
    s2 = float(np.sum((y - means) ** 2)) / (M.size - levels.size)
    w = (levels - levels.mean()) / np.sum((levels - levels.mean()) ** 2)
    assert f.df_rep == M.size - levels.size
    assert f.se_rep == pytest.approx(np.sqrt(s2 * np.sum(w**2 / counts)), rel=1e-12)


def test_replicate_se_matches_the_spread_of_slopes_under_a_cost_optimal_allocation():
    """The verdicts' SE is calibrated where a pooled variance is not: noise falling 8x across levels and
    replicates concentrated where it is large (the allocation of paper A's paper profile).  Over 4000
    experiments the root-mean-square se_rep equals the slopes' SD within 3 % (the SD's own relative SE is
    1.1 %); the pooled formula states 2.3x the SD (measured)."""
    rng = np.random.default_rng(5)
    levels = np.log([500.0, 1200.0, 2900.0, 7000.0, 17000.0])
    counts = np.array([30, 10, 4, 4, 4])
    sd = np.array([0.4, 0.2, 0.12, 0.08, 0.05])
    M = np.repeat(np.exp(levels), counts)
    w = (levels - levels.mean()) / np.sum((levels - levels.mean()) ** 2)
    slopes, ses, pooled = [], [], []
    for _ in range(4000):
        e = np.exp(-0.8 * np.log(M) + rng.normal(0, 1, M.size) * np.repeat(sd, counts))
        f = fit_slope(M, e, n_boot=0)
        slopes.append(f.slope)
        ses.append(f.se_rep)
        y = np.log(e)
        means = np.repeat([g.mean() for g in np.split(y, np.cumsum(counts)[:-1])], counts)
        pooled.append(np.sqrt(np.sum((y - means) ** 2) / (M.size - levels.size) * np.sum(w**2 / counts)))
    sd_slope = np.std(slopes, ddof=1)
    assert np.sqrt(np.mean(np.square(ses))) == pytest.approx(sd_slope, rel=0.03)
    assert np.sqrt(np.mean(np.square(pooled))) / sd_slope > 1.5


def test_without_replicates_the_replicate_parts_are_absent():
    M = np.array([10.0, 100.0, 1000.0, 10000.0])
    f = fit_slope(M, M**-0.6 * np.array([1.0, 1.1, 0.9, 1.05]), n_boot=500)
    assert f.ci_boot is None and f.lack_of_fit_p is None and f.se_rep is None and f.df_rep is None
    assert f.se_replicate == (f.se, float(f.df))


def test_lack_of_fit_flags_a_curved_log_log_relation():
    """A bent curve with small replicate noise: the F test rejects the straight line; a straight one passes."""
    rng = np.random.default_rng(5)
    M = np.repeat(np.logspace(2, 5, 6), 3)
    x = np.log(M)
    noise = rng.normal(0, 0.01, M.size)
    bent = fit_slope(M, np.exp(-0.5 * x + 0.05 * (x - x.mean()) ** 2 + noise), n_boot=0)
    straight = fit_slope(M, np.exp(-0.5 * x + noise), n_boot=0)
    assert bent.lack_of_fit_p < 1e-6 < straight.lack_of_fit_p


def test_bootstrap_interval_is_seeded_and_covers_the_true_slope():
    M = np.repeat([100.0, 1000.0, 10000.0], 5)
    e = M**-0.8 * np.exp(np.random.default_rng(1).normal(0, 0.1, M.size))
    a, b = fit_slope(M, e, n_boot=400, rng=7), fit_slope(M, e, n_boot=400, rng=7)
    assert a.ci_boot == b.ci_boot and a.ci_boot[0] < -0.8 < a.ci_boot[1]  # the true slope
    assert fit_slope(M, e, n_boot=400).ci_boot == fit_slope(M, e, n_boot=400, rng=0).ci_boot  # None -> seed 0


# ---------------------------------------------------------------------------------------------
# input validation
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(M=np.array([1, 2, 3]) + 1j), TypeError, "^M must"),
    (dict(errors=np.array([1.0, 2.0, 3.0]) + 0j), TypeError, "^errors must"),
    (dict(errors=["1", "2", "3"]), TypeError, "^errors must"),
    (dict(M=[1, 2, np.inf]), ValueError, "^M must"),
    (dict(n_boot=2.5), ValueError, "^n_boot must"),
    (dict(n_boot=True), TypeError, "^n_boot must"),
    (dict(n_boot=10**12), ValueError, "^n_boot has .* memory budget"),
    (dict(rng=True), TypeError, "^rng must"),
    (dict(rng=-1), ValueError, "^rng must"),
    (dict(rng="seed"), TypeError, "^rng must"),
])
def test_fit_slope_refuses_bad_input_by_name(kwargs, exc, match):
    args = dict(M=[1, 1, 2, 2, 3, 3], errors=[1.0, 1.1, 0.5, 0.6, 0.3, 0.35], n_boot=10, rng=0)
    args.update(kwargs)
    if len(np.atleast_1d(args["M"])) != len(np.atleast_1d(args["errors"])):
        args["errors" if "M" in kwargs else "M"] = [1, 2, 3]
    with pytest.raises(exc, match=match):
        fit_slope(**args)


def test_design_slope_names_values_and_results_are_checked():
    with pytest.raises(ValueError, match="^values must"):
        design_slope([10, 100, 1000], [1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="^M and values must have the same length"):
        design_slope([10, 100, 1000], [1.0, 1.0])
