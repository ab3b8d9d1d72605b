"""The judge of B11 (verify/checks/paper_b_multi_head.py) on synthetic measurements with a known truth.

``judge_b11`` is a pure function of (design, prediction, cells).  The design is the quick profile's, the prediction is
hand-made (gaps of the size of the measured ones; the Dyson equation is not solved) and the cells are paired gaps
drawn around the truth with the per-trial SDs measured at the quick sizes (quick seed 0, median over the points:
0.039 at the small size, 0.019 at the large one; the largest, 0.053 and 0.029, in the power tests).

Measured: the FAIL rate when the theory is the limit and the finite-size gap decays exactly like ``p^(-1/2)`` (the
least favourable truth of the rule), at ``ALPHA_CHECK`` and, more resolving, at ``alpha = 0.05``, also with the
offsets measured at quick seeds 0 and 1 as that finite-size gap and with heavy-tailed (Student-t, 4 df) trials; the
power against a theory off by a gap that does not decay; and that the detectable error of the notes is the half-power
point.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import max_false_fails
from verify.checks import paper_b_multi_head as mod
from verify.results import with_key
from verify.verdicts import ALPHA_CHECK, judge, judged

DESIGN = mod.B11_PROFILES["quick"]
SD = (0.039, 0.019)  # per-trial SD of the paired gap at the small and the large size (quick seeds 0 and 1)
RUNS = 300


def _truth() -> mod.B11Prediction:
    gap = {}
    for k, s in enumerate(DESIGN.settings):
        for g in DESIGN.gammas:
            gap[(s, g)] = 0.02 * (k + 1) * (1 + 10 * g) * (-1 if s[3] == "concat" and s[0] < 1 else 1)
    return mod.B11Prediction(gap=gap, attention=dict(gap), ridge={k: 0.0 for k in gap})


TRUTH = _truth()


def _cells(rng: np.random.Generator, gap_small: float | dict = 0.0, extra: float = 0.0, sd=SD,
           tails: float | None = None) -> dict:
    """Paired gaps: the truth, plus ``gap_small`` at the small size (a number, or by ``(setting, gamma)``) decaying
    like ``p^(-1/2)``, plus ``extra`` at both sizes; ``tails``: Student-t noise of that df (same SD)."""
    cells = {}
    for s in DESIGN.settings:
        ps = DESIGN.ps(s[0])
        for k, (p, trials) in enumerate(zip(ps, DESIGN.trials)):
            cols = []
            for g in DESIGN.gammas:
                small = gap_small.get((s, g), 0.0) if isinstance(gap_small, dict) else gap_small
                mean = TRUTH.gap[(s, g)] + small * math.sqrt(ps[0] / p) + extra
                if tails is None:
                    noise = rng.standard_normal(trials)
                else:
                    noise = rng.standard_t(tails, trials) / math.sqrt(tails / (tails - 2))
                cols.append(mean + sd[k] * noise)
            cells[(s, p)] = np.stack(cols, axis=1)
    return cells


def _verdicts(alpha: float, seed: int, **kw) -> list[str]:
    rng = np.random.default_rng(seed)
    return [judge(mod.judge_b11(DESIGN, TRUTH, _cells(rng, **kw)), alpha) for _ in range(RUNS)]


@pytest.mark.parametrize("gap_small", [0.0, -0.02, 0.02])
def test_false_fail_rate_when_the_theory_is_the_limit(gap_small):
    """The theory true, the finite-size gap decaying at the slowest allowed rate (or absent): FAILs at most at the
    stated rate, at ALPHA_CHECK and at 5 % (where a few hundred runs resolve the rate)."""
    for alpha in (ALPHA_CHECK, 0.05):
        v = _verdicts(alpha, 11 + int(1000 * abs(gap_small)) + (gap_small < 0), gap_small=gap_small)
        assert sum(o == "FAIL" for o in v) <= max_false_fails(alpha, RUNS)


#: measured - theory at the small size, mean of quick seeds 0 and 1 (the B11 notes), by (setting index, gamma)
MEASURED_SMALL = {(0, 0.01): 0.0036, (0, 0.1): 0.0048, (1, 0.01): 0.0048, (1, 0.1): 0.0057, (2, 0.01): 0.0005,
                  (2, 0.1): 0.0018, (3, 0.01): 0.0009, (3, 0.1): 0.0017, (4, 0.01): -0.0052, (4, 0.1): -0.0084,
                  (5, 0.01): -0.0024, (5, 0.1): -0.0054, (6, 0.01): -0.0030, (6, 0.1): -0.0014, (7, 0.01): 0.0093,
                  (7, 0.1): 0.0093}


def test_false_fail_rate_with_the_measured_offsets_and_heavy_tails():
    """The offsets measured at the small size as the finite-size gap (decaying like p^(-1/2)), normal and Student-t
    (4 df) trials: the false-FAIL rate stays within the stated one."""
    gaps = {(DESIGN.settings[k], g): v for (k, g), v in MEASURED_SMALL.items()}
    for tails in (None, 4.0):
        for alpha in (ALPHA_CHECK, 0.05):
            v = _verdicts(alpha, 17, gap_small=gaps, tails=tails)
            assert sum(o == "FAIL" for o in v) <= max_false_fails(alpha, RUNS)


def test_passes_when_the_theory_is_the_limit():
    v = _verdicts(ALPHA_CHECK, 3)
    assert sum(o == "PASS" for o in v) / RUNS > 0.99


def test_power_against_a_gap_that_does_not_decay():
    """A theory off by 0.05 at every point (about the largest detectable error of the quick notes) FAILs in more than
    90 % of runs, even at the largest measured SDs."""
    v = _verdicts(ALPHA_CHECK, 5, extra=0.05, sd=(0.053, 0.029))
    assert sum(o == "FAIL" for o in v) / RUNS > 0.9


def test_detectable_error_is_the_half_power_point():
    """One point off by its own detectable_error (the others true) FAILs the check in about half of the runs."""
    rng = np.random.default_rng(13)
    point = (mod.HEADLINE, mod.HEADLINE_GAMMA)
    rows = mod.judge_b11(DESIGN, TRUTH, _cells(rng))
    probe = with_key(rows, **mod._key(*point))[0]
    ps, pl = DESIGN.ps(point[0][0])
    q = math.sqrt(ps / pl)
    sd = math.hypot(SD[1] / math.sqrt(DESIGN.trials[1]), q * SD[0] / math.sqrt(DESIGN.trials[0]))
    shift = mod.detectable_error(probe, len(rows), DESIGN, point[0][0]) * sd / dict(probe.args)["excess_se"]
    j = list(DESIGN.gammas).index(point[1])
    fails = 0
    for _ in range(RUNS):
        cells = _cells(rng)
        for p in (ps, pl):
            cells[(point[0], p)][:, j] += shift
        fails += judge(mod.judge_b11(DESIGN, TRUTH, cells), ALPHA_CHECK) == "FAIL"
    assert 0.3 < fails / RUNS < 0.7


def test_one_headline_first_and_every_point_judged():
    rows = judged(mod.judge_b11(DESIGN, TRUTH, _cells(np.random.default_rng(2))), ALPHA_CHECK).comparisons
    assert len(rows) == len(DESIGN.settings) * len(DESIGN.gammas)
    assert sum(r.headline for r in rows) == 1 and rows[0].headline and "random concat, v=0.5" in rows[0].name
    assert all(r.kind == "bound" for r in rows)


def test_judge_is_pure():
    cells = _cells(np.random.default_rng(1))
    copy = {k: v.copy() for k, v in cells.items()}
    first = [r.to_json() for r in mod.judge_b11(DESIGN, TRUTH, cells)]
    assert [r.to_json() for r in mod.judge_b11(DESIGN, TRUTH, cells)] == first
    assert all(np.array_equal(cells[k], copy[k]) for k in cells)
