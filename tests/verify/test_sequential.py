"""Sequential verdicts (verify.sequential): spending, replicate seeds, pooling, and the error rates under optional
stopping, simulated with the real pooling and judging (>= 2000 sequences per rule)."""

from __future__ import annotations

import functools
import math

import pytest

from conftest import max_false_fails
from verify.results import Comparison
from verify.sequential import (boundaries, judge_look, look_levels, pooled, replicate_seed, replicates_after,
                               replicates_to_decide, round_of, spend)

import importlib.util as _ilu
from pathlib import Path as _Path

_spec = _ilu.spec_from_file_location("make_sequential_rates",
                                     _Path(__file__).resolve().parents[2] / "docs" / "make_sequential_rates.py")
_rates = _ilu.module_from_spec(_spec)
_spec.loader.exec_module(_rates)
simulate_optional_stopping = _rates.simulate_optional_stopping
from verify.verdicts import N_STOCHASTIC_CHECKS, judged

N_SEQUENCES = 2000
LAST_ROUND = 4  # up to 16 replicates per sequence
ALPHA = 0.05  # the levels of the simulation (large, so that 2000 sequences measure them)


def test_spending_sums_to_one_and_rounds_double():
    assert math.fsum(spend(j) for j in range(20)) == pytest.approx(1 - 1 / 21)
    assert look_levels(0) == pytest.approx((0.01 / N_STOCHASTIC_CHECKS / 2, 0.05 / 2))
    assert [replicates_after(j) for j in range(4)] == [1, 2, 4, 8]
    assert [round_of(n) for n in (1, 2, 3, 4, 8, 9)] == [0, 1, None, 2, 3, None]


def test_replicate_seeds_are_the_run_seed_then_distinct():
    assert replicate_seed(5, 0) == 5
    seeds = {replicate_seed(5, r) for r in range(1, 2000)}
    assert len(seeds) == 1999 and 5 not in seeds
    assert replicate_seed(5, 3) != replicate_seed(6, 3)


def test_pooling_is_the_equal_weight_mean():
    rows = [Comparison.equivalence("s", -0.8, -0.8 + d, se, 0.03, df=9.0) for d, se in ((0.01, 0.01), (0.03, 0.02))]
    p = pooled([[rows[0]], [rows[1]]])[0]
    assert p.measured == pytest.approx(-0.8 + 0.02)
    assert p.uncertainty == pytest.approx(math.hypot(0.01, 0.02) / 2)
    assert p.df == 18.0 and p.margin == 0.03 and p.outcome == ""
    b = [Comparison.bound("b", "<= 0", 1.0 + x, 0.1, x, excess_se=0.2) for x in (-0.1, 0.3)]
    pb = pooled([[b[0]], [b[1]]])[0]
    assert dict(pb.args)["excess"] == pytest.approx(0.1) and dict(pb.args)["excess_se"] == pytest.approx(0.2 / 2 ** 0.5)
    assert pb.measured == pytest.approx(1.1) and pb.uncertainty == pytest.approx(0.1 / 2 ** 0.5)


def test_pooling_rows_by_name_exact_rows_and_failed_measurements():
    ok = Comparison("solver", 0, 0, None, "exact", True)
    bad = Comparison("solver", 0, 1, None, "exact", False)
    d = [Comparison.direction("gap", "> 0", x, 0.01, +1) for x in (0.05, 0.07)]
    nan = Comparison.direction("gap", "> 0", math.nan, 0.01, +1)
    only0 = Comparison.consistency("extra", 0.0, 0.001, 0.01)
    out = pooled([[ok, d[0], only0], [bad, d[1]]])
    assert [c.name for c in out] == ["solver", "gap", "extra"]
    assert out[0].passed is False  # exact: must hold in every replicate
    assert out[1].measured == pytest.approx(0.06)
    assert out[2].measured == 0.001  # present in replicate 0 only
    failed = pooled([[d[0]], [nan]])[0]
    assert judged([failed]).verdict == "FAIL"  # a failed measurement is never averaged away


def test_pooled_rows_survive_the_json_round_trip():
    rows = [Comparison.direction("gap", "> 0", x, 0.01, -1, reference=0.5, df=20) for x in (0.45, 0.47)]
    back = [Comparison.from_json(r.to_json()) for r in rows]
    assert back[0].args == rows[0].args
    assert pooled([[back[0]], [back[1]]])[0] == pooled([[rows[0]], [rows[1]]])[0]


def test_replicates_to_decide_follows_the_standard_error():
    rows = [Comparison.direction("gap", "> 0", 0.01, 0.01, +1)]  # z = 1: undecided at round 0
    j = judge_look(rows, 0)
    assert j.verdict == "INCONCLUSIVE"
    need = replicates_to_decide(j, 1)
    assert need in (8, 16)  # z grows like sqrt(n); round 3's PASS level is 0.05/20 (z 2.81): 8 replicates
    z_need = 2.81 / math.sqrt(need)
    assert z_need <= 1.0
    assert replicates_to_decide(judge_look([Comparison.direction("g", "> 0", 0.0, 0.01, +1)], 0), 1) is None


# ------------------------------------------------------------------------------------------ optional stopping
@functools.lru_cache(maxsize=None)
def _paths(kind: str, t_df: int | None) -> dict[str, int]:
    return simulate_optional_stopping(kind, t_df=t_df, n_sequences=N_SEQUENCES, last_round=LAST_ROUND, alpha=ALPHA)


@pytest.mark.parametrize("kind,t_df", [("equivalence", None), ("equivalence", 9), ("direction", None),
                                        ("direction", 9), ("bound", None), ("consistency", None)])
def test_false_fail_rate_under_optional_stopping(kind, t_df):
    """Continue until a FAIL, the claim on its boundary: at most alpha, with 2000 sequences of 16 replicates."""
    fails = _paths(kind, t_df)["FAIL"]
    assert fails <= max_false_fails(ALPHA, N_SEQUENCES), (kind, t_df, fails)


@pytest.mark.parametrize("kind,t_df", [("equivalence", None), ("equivalence", 9), ("direction", None),
                                        ("direction", 9)])
def test_false_pass_rate_under_optional_stopping(kind, t_df):
    """Continue until a PASS, the claim just false (on its boundary): at most alpha_pass."""
    passes = _paths(kind, t_df)["PASS"]
    assert passes <= max_false_fails(ALPHA, N_SEQUENCES), (kind, t_df, passes)


def test_the_simulation_detects_optional_stopping_with_fixed_levels():
    """The same sequences judged at the fixed design's level at every look FAIL too often: the tests above can
    fail."""
    counts = _paths("direction", None)
    assert counts["naive FAIL"] > max_false_fails(ALPHA, N_SEQUENCES), counts


def test_boundaries_are_in_the_units_of_the_estimate():
    c = Comparison.direction("gap", "> 0", 0.01, 0.01, +1)
    assert boundaries(c, 0) == "PASS if > +0.0196, FAIL if < -0.0342"  # 16 checks: 0.01 / 16 / 2 at look 0
    assert boundaries(Comparison.consistency("c", 0.0, 0.1, 0.1), 0) == ""
    assert "FAIL if > 0.0" in boundaries(Comparison.equivalence("s", 0.0, 0.0, 0.01, 0.03), 3)
