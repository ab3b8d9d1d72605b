"""The verdict rules (verify/verdicts.py) on synthetic measurements with a known truth: error rates measured."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from verify.results import Comparison, Verdict
from verify.verdicts import (
    ALPHA_CHECK, ALPHA_PASS, ALPHA_REPORT, N_STOCHASTIC_CHECKS, equivalence_p, holm, judge, judged, scale_to_decide)


def _eq(delta, se, margin=0.03, df=None):
    return Comparison.equivalence("x", 0.0, delta, se, margin, df=df)


def test_stated_rates_are_consistent():
    assert ALPHA_CHECK * N_STOCHASTIC_CHECKS == pytest.approx(ALPHA_REPORT)
    from verify.claim import all_claims

    # the Bonferroni divisor counts every claim but the exact A1 (a new claim must update it)
    assert N_STOCHASTIC_CHECKS == len([c for c in all_claims() if c.id != "A1"])
    assert 0 < ALPHA_CHECK < ALPHA_PASS < 0.5


def test_holm_matches_definition_and_controls_fwer():
    assert holm([0.001, 0.2, 0.004], 0.01) == [True, False, True]
    assert holm([0.02, 0.02], 0.01) == [False, False]
    assert holm([], 0.01) == []
    rng = np.random.default_rng(0)
    # 20 true nulls, uniform p-values: family-wise rejection rate <= alpha
    p = rng.uniform(size=(20000, 20))
    rate = np.mean([any(holm(list(row), 0.05)) for row in p])
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 20000)


def test_equivalence_outcomes():
    assert judge([_eq(0.0, 0.005)]) == "PASS"          # interval well inside the margin
    assert judge([_eq(0.2, 0.005)]) == "FAIL"          # far beyond the margin
    assert judge([_eq(0.0, 0.05)]) == "INCONCLUSIVE"   # too noisy to say
    assert judge([_eq(0.04, 0.01)]) == "INCONCLUSIVE"  # beyond the margin but not significantly at ALPHA_CHECK


@pytest.mark.parametrize("margin_frac", [1.0])
def test_equivalence_false_fail_rate_at_the_margin(margin_frac):
    """True difference exactly at the margin (the least favourable truth for FAIL): one comparison fails
    with probability ALPHA_CHECK; simulated."""
    rng = np.random.default_rng(1)
    se, m = 0.01, 0.03
    est = m * margin_frac + se * rng.standard_normal(200_000)
    p_fail = np.array([equivalence_p(float(e), se, m)[1] for e in est[:20000]])
    rate = float(np.mean(p_fail <= ALPHA_CHECK))
    assert rate <= ALPHA_CHECK + 4 * math.sqrt(ALPHA_CHECK / 20000)


def test_equivalence_false_pass_rate_at_the_margin():
    """True difference at the margin: TOST says PASS with probability <= ALPHA_PASS."""
    rng = np.random.default_rng(2)
    se, m = 0.01, 0.03
    est = m + se * rng.standard_normal(20000)
    rate = float(np.mean([judge([_eq(float(e), se, m)]) == "PASS" for e in est]))
    assert rate <= ALPHA_PASS + 4 * math.sqrt(ALPHA_PASS / 20000)


def test_equivalence_power():
    """True difference 0 with SE = margin / 4: PASS in more than 90% of draws (TOST power)."""
    rng = np.random.default_rng(3)
    se, m = 0.0075, 0.03
    est = se * rng.standard_normal(5000)
    rate = float(np.mean([judge([_eq(float(e), se, m)]) == "PASS" for e in est]))
    assert rate > 0.9


def test_check_family_wise_false_fail_rate():
    """A check of 30 equivalence comparisons, every truth at its margin (worst case): the check FAILS with
    probability <= ALPHA_CHECK (Holm); measured on 4000 synthetic checks."""
    rng = np.random.default_rng(4)
    fails = 0
    n = 4000
    for _ in range(n):
        comps = [_eq(float(0.03 + 0.01 * z), 0.01) for z in rng.standard_normal(30)]
        fails += judge(comps) == "FAIL"
    assert fails / n <= ALPHA_CHECK + 4 * math.sqrt(ALPHA_CHECK / n)


def test_direction_and_bound_and_consistency():
    assert judge([Comparison.direction("d", ">0", 5.0, 1.0, +1)]) == "PASS"
    assert judge([Comparison.direction("d", ">0", -5.0, 1.0, +1)]) == "FAIL"
    assert judge([Comparison.direction("d", ">0", 0.5, 1.0, +1)]) == "INCONCLUSIVE"
    assert judge([Comparison.bound("b", "<=0", 0.0, 1.0, 0.5)]) == "PASS"    # not significant
    assert judge([Comparison.bound("b", "<=0", 0.0, 1.0, 6.0)]) == "FAIL"
    assert judge([Comparison.consistency("c", 1.0, 1.0 + 1e-3, 1e-3)]) == "PASS"
    assert judge([Comparison.consistency("c", 1.0, 1.1, 1e-3)]) == "FAIL"


def test_exact_and_nonfinite():
    ok = Comparison("e", 1, 1, None, "exact", True)
    bad = Comparison("e", 1, 2, None, "exact", False)
    assert judge([ok]) == "PASS" and judge([ok, bad]) == "FAIL"
    nan = Comparison.equivalence("n", 0.0, float("nan"), 0.01, 0.03)
    assert judge([nan]) == "FAIL"  # a non-finite measurement never passes silently


def test_judging_is_pure_and_returns_judged_copies():
    comps = [_eq(0.0, 0.005), _eq(0.0, 0.05), Comparison("e", 1, 1, None, "exact", True),
             Comparison.bound("b", "<=0", 0.0, 1.0, 6.0)]
    before = [c.to_json() for c in comps]
    first = judged(comps)
    assert [c.to_json() for c in comps] == before  # the table judged is left as it was
    assert [c.outcome for c in comps] == ["", "", "PASS", ""]  # stochastic rows carry no outcome until judged
    assert first.verdict == "FAIL" == judge(comps)
    assert [c.outcome for c in first.comparisons] == ["PASS", "INCONCLUSIVE", "PASS", "FAIL"]
    assert [c.passed for c in first.comparisons] == [True, False, True, False]
    assert judged(comps) == first  # the same table, the same judgement
    assert judged(list(first.comparisons)) == first  # judging judged rows again changes nothing
    with pytest.raises(dataclasses.FrozenInstanceError):
        comps[0].outcome = "PASS"  # a row is immutable
    assert judged([]).verdict == "FAIL" and judge([]) == "PASS"  # an empty check fails in verify.claim.run_check


def test_run_check_verdicts(monkeypatch):
    from conftest import fake_claims
    from verify.claim import claim_of, run_check
    from verify.context import CheckContext
    from verify.results import Outcome

    fake_claims(monkeypatch, {"A2": lambda ctx: Outcome([_eq(0.0, 0.05)]), "A3": lambda ctx: Outcome([])})
    verdicts = {cid: run_check(claim_of(cid), CheckContext()).verdict for cid in ("A2", "A3")}
    assert verdicts == {"A2": Verdict.INCONCLUSIVE, "A3": Verdict.FAIL}


def test_scale_to_decide():
    # delta 0, se 0.03: needed se = 0.03 / 1.645 -> factor (0.03 / 0.01824)^2 = 2.7
    f = scale_to_decide(0.0, 0.03, 0.03, "equivalence")
    assert f == pytest.approx((0.03 / (0.03 / 1.6448536269514722)) ** 2, rel=1e-6)
    assert scale_to_decide(0.03, 0.01, 0.03, "equivalence") is None  # on the boundary
    assert _eq(0.0, 0.05).decide_factor > 1


def test_exit_status_strict_counts_inconclusive():
    from verify.results import CheckResult
    from verify.claim import exit_status

    inc = CheckResult("A2", "A", "", Verdict.INCONCLUSIVE)
    assert exit_status([inc]) == 0 and exit_status([inc], strict=True) == 1
