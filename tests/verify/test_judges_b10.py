"""The judge of B10 (verify/checks/paper_b_strong_alignment_risk.py) on synthetic measurements with a known truth.

``judge_b10`` is a pure function of (design, prediction, cells).  The design is the quick profile's, the prediction is
hand-made (no Dyson solve) and the cells are drawn around the truth with per-trial SDs of the size measured at the quick
sizes (seed 0: T1 and T2 about 0.0015 at p = 512 and 0.0025 at 128, the bins 0.004-0.012); at ``gamma = 0`` the risk
gap is ``T1 - T2`` draw by draw (the leverages of both fits sum to ``p``), so the cells are built that way.

Measured: the FAIL rate when the truth is the prediction and the finite-size gaps decay exactly like ``p^(-1/2)``
(the rule's least favourable truth), at ``ALPHA_CHECK`` and, more resolving, at ``alpha = 0.05``; the power against a
part off by a gap that does not decay, and against the wrong sign of the risk gap; purity and the headline.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import max_false_fails
from verify.checks import paper_b_strong_alignment_risk as mod
from verify.checks._strong_alignment import LEVERAGE_BINS
from verify.verdicts import ALPHA_CHECK, judge, judged

DESIGN = mod.B10_PROFILES["quick"]
PS, PL = DESIGN.ps
SD = {PS: dict(part=0.0025, bins=0.012), PL: dict(part=0.0015, bins=0.006)}
RUNS = 200


def _truth() -> mod.B10Prediction:
    parts = {}
    for s in DESIGN.settings:
        act, c, t = s
        for p in DESIGN.ps:
            t1 = -0.025 if act != "gelu" else 0.0
            t2 = -0.03 * min(t, 1.5) if act != "gelu" else 0.002
            parts[(s, p)] = {"T1": t1, "T2": t2, "risk": t1 - t2,
                             "bins": c + 0.1 * t * np.linspace(0.5, -0.5, LEVERAGE_BINS)}
    return mod.B10Prediction(parts, {p: 0.03 for p in DESIGN.ps})


TRUTH = _truth()


def _cells(rng: np.random.Generator, gap_small: float = 0.0, extra: float = 0.0, flip: bool = False) -> dict:
    """Per-trial cells: the truth plus ``gap_small`` at ``PS`` decaying like ``p^(-1/2)`` plus ``extra`` at every size
    (added to T1 and every bin, subtracted from T2, so that the risk gap T1 - T2 carries twice it); ``flip`` reverses
    the sign of the risk gap (T1 and T2 swapped in sign)."""
    cells = {}
    for p, trials in zip(DESIGN.ps, DESIGN.trials):
        shift = gap_small * math.sqrt(PS / p) + extra
        for s in DESIGN.settings:
            key = (s, p)
            t1 = TRUTH.parts[key]["T1"] + shift + SD[p]["part"] * rng.standard_normal(trials)
            t2 = TRUTH.parts[key]["T2"] - shift + SD[p]["part"] * rng.standard_normal(trials)
            if flip:
                t1, t2 = -t1, -t2
            bins = TRUTH.parts[key]["bins"] + shift + SD[p]["bins"] * rng.standard_normal((trials, LEVERAGE_BINS))
            cells[key] = {"T1": t1, "T2": t2, "risk": t1 - t2, "bins": bins}
    for p, trials in zip(DESIGN.ps, DESIGN.trials):
        shift = gap_small * math.sqrt(DESIGN.ps[0] / p) + extra
        cells[("worst", p)] = TRUTH.worst[p] + shift + SD[PL]["part"] * rng.standard_normal(trials)
    return cells


def _verdicts(alpha: float, seed: int, **kw) -> list[str]:
    rng = np.random.default_rng(seed)
    return [judge(mod.judge_b10(DESIGN, TRUTH, _cells(rng, **kw)), alpha) for _ in range(RUNS)]


@pytest.mark.parametrize("gap_small", [0.0, -0.006, 0.006])
def test_false_fail_rate_when_the_theory_is_true(gap_small):
    """The truth is the prediction, the finite-size gap decaying at the slowest allowed rate (or absent): FAILs at
    most at the stated rate (Clopper-Pearson bound at the run count), at ALPHA_CHECK and at 5 %."""
    for alpha in (ALPHA_CHECK, 0.05):
        v = _verdicts(alpha, 31 + int(1000 * gap_small), gap_small=gap_small)
        assert sum(o == "FAIL" for o in v) <= max_false_fails(alpha, RUNS)


def test_passes_when_the_theory_is_true():
    """Without a finite-size gap the check PASSes (its sign rows are far from zero against the noise)."""
    v = _verdicts(ALPHA_CHECK, 3)
    assert sum(o == "PASS" for o in v) / RUNS > 0.95


def test_power_against_a_gap_that_does_not_decay():
    """T1, T2 and every bin off by 0.006 at both sizes, the risk gap by 0.012 (above the median detectable error of
    the parts at these SDs): FAILs in more than 90 % of runs."""
    v = _verdicts(ALPHA_CHECK, 5, extra=0.006)
    assert sum(o == "FAIL" for o in v) / RUNS > 0.9


def test_power_against_the_wrong_sign_of_the_risk_gap():
    rng = np.random.default_rng(7)
    for _ in range(30):
        rows = judged(mod.judge_b10(DESIGN, TRUTH, _cells(rng, flip=True)), ALPHA_CHECK).comparisons
        signs = [r for r in rows if "sign of the risk gap" in r.name]
        assert signs and {r.outcome for r in signs} == {"FAIL"}


def test_detectable_error_is_the_half_power_point():
    """One setting's T2 off by its detectable error (everything else true) FAILs the check in about half the runs."""
    rng = np.random.default_rng(13)
    comps = mod.judge_b10(DESIGN, TRUTH, _cells(rng))
    index = mod.judged_parts(DESIGN).index((mod.HEADLINE, "T2"))
    sd = math.hypot(SD[PL]["part"] / math.sqrt(DESIGN.trials[1]), 0.5 * SD[PS]["part"] / math.sqrt(DESIGN.trials[0]))
    shift = mod.detectable_error(comps[index], len(comps), 0.5) * sd / dict(comps[index].args)["excess_se"]
    fails = 0
    for _ in range(RUNS):
        cells = _cells(rng)
        for p in DESIGN.ps:
            cell = dict(cells[(mod.HEADLINE, p)])
            cell["T2"] = cell["T2"] + shift
            cell["risk"] = cell["T1"] - cell["T2"]
            cells[(mod.HEADLINE, p)] = cell
        fails += judge(mod.judge_b10(DESIGN, TRUTH, cells), ALPHA_CHECK) == "FAIL"
    assert 0.25 < fails / RUNS < 0.75


def test_judge_is_pure_and_names_one_headline():
    rng = np.random.default_rng(1)
    cells = _cells(rng)
    first = [r.to_json() for r in mod.judge_b10(DESIGN, TRUTH, cells)]
    again = mod.judge_b10(DESIGN, TRUTH, cells)
    assert [r.to_json() for r in again] == first
    heads = [r for r in again if r.headline]
    assert len(heads) == 1 and heads[0].name.startswith("erf c=0.5 t=1: risk")
    n_parts = len(mod.judged_parts(DESIGN))
    assert len(again) == n_parts + 1 + len(mod.sign_settings(DESIGN, TRUTH))
    assert again[n_parts].name.startswith("worst case erf c=2 t=2")


def test_borrowed_settings_are_b9s():
    from verify.checks._strong_alignment import B9_PROFILES

    for name, design in mod.B10_PROFILES.items():
        assert set(design.borrowed) <= set(B9_PROFILES[name].settings)
        assert (design.ps, design.trials) == (B9_PROFILES[name].ps, B9_PROFILES[name].trials)
        assert not set(design.own) & set(B9_PROFILES[name].settings)
        assert design.worst in B9_PROFILES[name].wide and design.worst_gamma in B9_PROFILES[name].gamma_wide
