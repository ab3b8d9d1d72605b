"""The judges of A2, A3 and A4 on synthetic measurements with a known truth.

Each judge is a pure function of (design, prediction, measurement).  Here the a-priori model is an exact power law
built by hand (bias ``b K^-4`` and variance ``v K / M`` with ``K ~ M^(1/5)``: slope -4/5, the theory of ``P = 3``),
the finite-M model is that curve's log with a small Monte Carlo SE, and the "measured" errors are the curve times
log-normal replicate noise, fitted with the same :func:`numerics.slopes.fit_slope` the checks use.  Under the
truth a judge must FAIL at most at its stated rate (``ALPHA_CHECK``, Holm within the check); a slope off by
``WRONG_RATE_OFFSET`` must FAIL with the power the rule states; a model whose limit is not the rate must FAIL.
"""

from __future__ import annotations

import numpy as np
from numerics.slopes import fit_slope
from verify.checks._paper_a_limits import WRONG_RATE_OFFSET, consistency_power, limit_comparison
from verify.checks._paper_a_numerics import k_levels_to_M
from verify.checks.paper_a_rates import judge_a2, judge_a3, judge_a4
from verify.checks._paper_a_records import (LIMIT_WINDOWS, GroupDesign, GroupMeasurement, RateDesign, RateMeasurement,
                                           RatePrediction, apriori_curve, group_prediction, limit_window)
from conftest import max_false_fails
from verify.verdicts import ALPHA_CHECK, judge, judged

KS = [20, 23, 26, 30, 35, 40]
MS = k_levels_to_M(KS, 500, 2)
N_SYNTH = 200
SIGMA = 1e-3
#: variance constant balancing the bias at the middle level (an exact M^(-4/5) curve, n/(n-p) ~ 1 with p = 1)
V1 = 4e-2 * KS[3] ** -4.0 * MS[3] / KS[3]


def _pred(v_par: float = 0.0, Ks=KS, sigma: float = SIGMA, bias_exp: float = -4.0) -> list[dict]:
    s2 = (sigma / SIGMA) ** 2
    return [{"B": 4e-2 * K**bias_exp, "V_np": s2 * V1 * K, "V_par": s2 * v_par * 1e-6 * K, "p": 1} for K in Ks]


def _group(label: str, **cfg) -> GroupDesign:
    config = {"d": 1, "N": 5, "r": 1, "P": 3, "n_knots": 6, "sigma": SIGMA, "truth_seed": 0, "law": "uniform", **cfg}
    return GroupDesign(label=label, config=config, K=KS, M=MS)


def _finite(curve: np.ndarray, se: float = 0.004) -> list[dict]:
    return [{"log_error": float(np.log(c)), "se": se, "sd": se, "mean_error": float(c), "bias": 0.0,
             "n_designs": 1} for c in curve]


def _prediction(groups: list[GroupDesign], v_par: dict | None = None, bias_exp: float = -4.0,
                known: tuple[str, ...] = ()) -> RatePrediction:
    """The a-priori model per group, its finite-M model (the same curve) and its windows beyond the design."""
    out = {}
    for g in groups:
        vp = (v_par or {}).get(g.label, 0.0)
        pred = _pred(vp)
        known_curve = _finite(apriori_curve(pred, g.M, g.config["N"], parametric=False)) if g.label in known else []
        limit = [_pred(vp, limit_window(g, k)[0], sigma=1.0, bias_exp=bias_exp) for k in LIMIT_WINDOWS]
        out[g.label] = group_prediction(g, pred, _finite(apriori_curve(pred, g.M, g.config["N"])), known_curve, limit)
    return RatePrediction(groups=out)


def _measure(curve: np.ndarray, rng: np.random.Generator, reps: int, sd: float, tilt: float = 0.0) -> tuple:
    """Replicate errors ``curve * (M / M_0)^tilt * exp(sd z)`` per level; the OLS fit the checks use."""
    M = np.repeat(MS, reps)
    base = np.repeat(curve * (np.asarray(MS, float) / MS[0]) ** tilt, reps)
    E = base * np.exp(sd * rng.standard_normal(M.size))
    return M, E


def _gm(M, E, Ek=None) -> GroupMeasurement:
    known = {} if Ek is None else dict(errors_known={int(m): Ek[M == m].tolist() for m in MS},
                                       shift_fit=fit_slope(M, E / Ek, n_boot=0))
    return GroupMeasurement(errors={int(m): E[M == m].tolist() for m in MS}, fit=fit_slope(M, E, n_boot=0), **known)


def _a2(rng, sd=0.1, reps=12, tilt=0.0, bias_exp=-4.0):
    g = _group("P=3")
    pred = _prediction([g], bias_exp=bias_exp)
    design = RateDesign("A2", "quick", [g], reps, {})
    M, E = _measure(np.exp([q["log_error"] for q in pred.groups["P=3"].finite]), rng, reps, sd, tilt)
    return design, pred, RateMeasurement(groups={"P=3": _gm(M, E)})


def _rate(outcomes: list[str], what: str) -> float:
    return sum(o == what for o in outcomes) / len(outcomes)


def _under_truth(make) -> list[str]:
    """Verdicts at ALPHA_CHECK of N_SYNTH synthetic runs; also asserts the FAIL count at alpha = 0.05 on the same
    comparisons (the nominal level where a few hundred runs can see a miscalibrated judge)."""
    out, fails_05 = [], 0
    for _ in range(N_SYNTH):
        comps = make()
        fails_05 += judge(comps, alpha=0.05) == "FAIL"
        out.append(judge(comps))
    assert fails_05 <= max_false_fails(0.05, N_SYNTH)
    return out


def test_a2_judge_false_fail_rate_and_power():
    rng = np.random.default_rng(20261201)
    d, p, m = _a2(rng)
    comps = judge_a2(d, p, m)
    assert [c.kind for c in comps] == ["consistency", "consistency", "exact"]  # pooled, the group, its limit
    truth = _under_truth(lambda: judge_a2(*_a2(rng)))
    assert sum(o == "FAIL" for o in truth) <= max_false_fails(ALPHA_CHECK, N_SYNTH)
    assert _rate(truth, "PASS") >= 1 - max_false_fails(ALPHA_CHECK, N_SYNTH) / N_SYNTH
    # a slope off by WRONG_RATE_OFFSET: the stated power (SE ~ 0.0098 with the model's 0.0016: ~0.8 at the per-check
    # level 0.01 / 16), and the measured FAIL rate is that power
    power = consistency_power(comps[1].uncertainty, None, 3)
    wrong = [judge(judge_a2(*_a2(rng, tilt=-WRONG_RATE_OFFSET))) for _ in range(100)]
    assert power > 0.75
    assert abs(_rate(wrong, "FAIL") - power) < 0.12  # 100 runs: binomial SD <= 0.05


def test_a2_limit_fails_for_a_model_without_the_rate():
    """A bias ~ K^-3 continued beyond the design has slope -3/5 there: part (b) must FAIL whatever the data."""
    rng = np.random.default_rng(3)
    comps = judge_a2(*_a2(rng, bias_exp=-3.0))
    limit = [c for c in comps if c.kind == "exact"]
    assert limit and limit[0].outcome == "FAIL"
    assert judge(comps) == "FAIL"


def _a3(rng, shift_error: float = 0.0, sd: float = 0.08, reps: int = 12):
    ga = [_group(f"d={d}, sigma/10", d=d) for d in (1, 5, 10)]
    gb = [_group("d=10, balanced", d=10)]
    prediction = _prediction(ga + gb, v_par={gb[0].label: 3.0}, known=(gb[0].label,))
    meas = {}
    for g in ga:
        M, E = _measure(np.exp([q["log_error"] for q in prediction.groups[g.label].finite]), rng, reps, sd)
        meas[g.label] = _gm(M, E)
    lab = gb[0].label
    with_A = np.exp([q["log_error"] for q in prediction.groups[lab].finite])
    known = np.exp([q["log_error"] for q in prediction.groups[lab].finite_known])
    M, Ek = _measure(known, rng, reps, sd)
    E = Ek * np.repeat(with_A / known * (np.asarray(MS, float) / MS[0]) ** shift_error, reps) * np.exp(
        0.02 * rng.standard_normal(M.size))
    meas[lab] = _gm(M, E, Ek)
    design = RateDesign("A3", "quick", ga + gb, reps, {"known_A": True}, known=(lab,))
    return design, prediction, RateMeasurement(groups=meas)


def test_a3_judge_false_fail_rate_and_power():
    rng = np.random.default_rng(11)
    d, p, m = _a3(rng)
    comps = judge_a3(d, p, m)
    # pooled, then per group slope vs model and its limit (4 x 2); d = 10 balanced is outside the condition: its
    # shift is judged
    assert len(comps) == 10
    assert "shift" in comps[-1].name and comps[-1].kind == "consistency"
    truth = _under_truth(lambda: judge_a3(*_a3(rng)))
    assert sum(o == "FAIL" for o in truth) <= max_false_fails(ALPHA_CHECK, N_SYNTH)
    wrong = [judge(judge_a3(*_a3(rng, shift_error=-0.1))) for _ in range(50)]  # shift 0.1 beyond the model's
    assert _rate(wrong, "FAIL") > 0.9


def _a4(rng, tilt_n3: float = 0.0, sd: float = 0.08, reps: int = 12, tilt_all: float = 0.0):
    groups = [_group(f"N={N},r={r}", d=2, N=N, r=r) for N, r in ((3, 1), (5, 1), (10, 1), (5, 2))]
    prediction = _prediction(groups)
    meas = {}
    for g in groups:
        curve = np.exp([q["log_error"] for q in prediction.groups[g.label].finite])
        M, E = _measure(curve, rng, reps, sd, tilt_all + (tilt_n3 if g.config["N"] == 3 else 0.0))
        meas[g.label] = _gm(M, E)
    return RateDesign("A4", "quick", groups, reps, {}), prediction, RateMeasurement(groups=meas)


def test_a4_judges_every_group_against_its_model_and_the_limit():
    d, p, m = _a4(np.random.default_rng(3))
    names = [c.name for c in judge_a4(d, p, m)]
    assert len(names) == 9
    assert names[0] == "all groups: slope minus finite-M model (inverse-variance mean)"
    assert names[1] == "N=3,r=1: slope vs finite-M model"
    assert names[2] == "N=3,r=1: model slope beyond the design -> -2b/(2b+1)"


def test_a4_pooled_comparison_has_the_power_against_a_common_wrong_rate():
    """Every group 0.05 steeper: the pooled test finds it far more often than each group's own test."""
    rng = np.random.default_rng(8)
    pooled = group = 0
    for _ in range(60):
        comps = judged(judge_a4(*_a4(rng, tilt_all=-WRONG_RATE_OFFSET, sd=0.2))).comparisons
        pooled += comps[0].outcome == "FAIL"
        group += comps[1].outcome == "FAIL"
    assert pooled > 2 * group
    assert abs(pooled / 60 - consistency_power(comps[0].uncertainty, comps[0].df, 9)) < 0.2


def test_a4_judge_false_fail_rate_and_power():
    rng = np.random.default_rng(5)
    truth = _under_truth(lambda: judge_a4(*_a4(rng)))
    assert sum(o == "FAIL" for o in truth) <= max_false_fails(ALPHA_CHECK, N_SYNTH)  # 0.15 expected
    wrong = [judge(judge_a4(*_a4(rng, tilt_n3=-0.1))) for _ in range(50)]  # N = 3 slope 0.1 steeper
    assert _rate(wrong, "FAIL") > 0.9


def test_limit_rule_accepts_a_slow_but_correct_limit():
    """A large parametric term (V_par constant in K, as at d = 30) makes the model's slope approach the rate like 1/K:
    still more than 0.01 away at K x 4, it must PASS; the same curves with the bias ~ K^-3 must FAIL."""
    g = _group("slow", d=30)
    vp = 5 * V1 * KS[0]  # the parametric variance: 5x the non-parametric one at the first level
    design = [{"B": 4e-2 * K**-4.0, "V_np": V1 * K, "V_par": vp, "p": 1} for K in KS]

    def windows(bias_exp: float) -> list[list[dict]]:
        s2 = SIGMA**-2  # windows are predicted at sigma = 1
        return [[{"B": 4e-2 * K**bias_exp, "V_np": s2 * V1 * K, "V_par": s2 * vp, "p": 1}
                 for K in limit_window(g, k)[0]] for k in LIMIT_WINDOWS]

    slow = group_prediction(g, design, limit=windows(-4.0))
    assert abs(slow.window_slopes[-1] - g.theory_slope) > 0.01  # a fixed 0.01 at K x 4 would reject it
    assert limit_comparison(g, slow).outcome == "PASS"
    wrong = group_prediction(g, design, limit=windows(-3.0))
    assert limit_comparison(g, wrong).outcome == "FAIL"
