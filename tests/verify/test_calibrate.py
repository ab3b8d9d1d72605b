"""The calibration summary (verify/calibrate.py) on synthetic per-seed records with a known truth."""

from __future__ import annotations

import numpy as np
import pytest

from verify.calibrate import clopper_pearson, summarise
from verify.claim import rejudge_stored
from verify.results import Comparison
from verify.verdicts import ALPHA_CHECK


def _records(measured, se, verdicts, predicted=0.0):
    out = []
    for k, (m, v) in enumerate(zip(measured, verdicts)):
        c = Comparison.equivalence("slope", predicted, float(m), se, 0.03, headline=True)
        out.append({"id": "A2", "seed": k, "verdict": v, "runtime_s": 1.0, "error": None,
                    "comparisons": [c.to_json()]})
    return out


def test_clopper_pearson_known_values():
    assert clopper_pearson(0, 30)[0] == 0.0
    assert clopper_pearson(0, 30)[1] == pytest.approx(1 - 0.025 ** (1 / 30))
    lo, hi = clopper_pearson(15, 30)
    assert lo < 0.5 < hi
    assert clopper_pearson(30, 30)[1] == 1.0


def test_correct_standard_errors_are_not_flagged():
    rng = np.random.default_rng(0)
    se = 0.01
    m = se * rng.standard_normal(60)
    row = summarise("A2", _records(m, se, ["PASS"] * 60))
    assert row.sd_se == pytest.approx(np.std(m, ddof=1) / se)
    assert 0.8 <= row.sd_se <= 1.25 and not row.flags
    assert row.sd_se_ci[0] < 1 < row.sd_se_ci[1]
    assert abs(row.mean_z) < 3 / np.sqrt(60) * 1.5


def test_understated_standard_errors_are_flagged():
    rng = np.random.default_rng(1)
    m = 0.02 * rng.standard_normal(40)  # true spread 2x the reported SE
    row = summarise("A2", _records(m, 0.01, ["PASS"] * 40))
    assert row.sd_se > 1.25 and any("SD/SE" in f for f in row.flags)


def test_too_many_fails_are_flagged_and_few_seeds_skip_the_sd_rule():
    rng = np.random.default_rng(2)
    m = 0.01 * rng.standard_normal(10)
    row = summarise("A2", _records(m, 0.01, ["FAIL"] * 2 + ["PASS"] * 8))
    assert row.fail_ci[0] > ALPHA_CHECK and row.flags
    row = summarise("A2", _records(3 * m, 0.01, ["PASS"] * 10))  # SD/SE 3, but N < 30: not a flag
    assert row.sd_se > 2 and not row.flags


def test_a_stored_study_stays_info():
    """A report written while verify ran informational studies (verdict INFO) still loads: judged again, the
    study's comparisons get their outcomes and its verdict stays INFO, whatever they say."""
    rec = dict(_records([0.5], 0.005, ["PASS"])[0], id="B4-rev", verdict="INFO")  # its comparison fails
    verdict, rows = rejudge_stored(rec)
    assert verdict.value == "INFO" and rows[0].outcome == "FAIL"
    assert rejudge_stored(dict(rec, comparisons=[]))[0].value == "INFO"


def test_rejudge_round_trip():
    rec = _records([0.0], 0.005, ["PASS"])[0]
    assert rejudge_stored(rec)[0].value == "PASS"
    c = Comparison.from_json(rec["comparisons"][0])
    assert c.kind == "equivalence" and c.p_pass == pytest.approx(rec["comparisons"][0]["p_pass"])
