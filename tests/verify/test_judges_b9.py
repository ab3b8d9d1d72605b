"""The judge of B9 (verify/checks/paper_b_strong_alignment.py) on synthetic measurements with a known truth.

``judge_b9`` is a pure function of (design, prediction, cells).  The design is the quick profile's, the prediction is
hand-made (limits of the size of the measured gaps; the Dyson solver is not run) and the cells are paired differences
drawn around the truth with the per-trial SDs measured at the quick sizes (0.004 at ``p = 128``, 0.0025 at 512).

Measured: the FAIL rate when the limit is true and the finite-size gap decays exactly like ``p^(-1/2)`` (the least
favourable truth of the rule), at ``ALPHA_CHECK`` and, more resolving, at ``alpha = 0.05``; the power against a limit
off by a gap that does not decay, and against a wrong sign; and that the no-win comparisons read the ``c > 1`` cells.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import max_false_fails
from verify.checks import paper_b_strong_alignment as mod
from verify.results import with_key
from verify.verdicts import ALPHA_CHECK, judge, judged

DESIGN = mod.B9_PROFILES["quick"]
PS, PL = DESIGN.ps
SD = {PS: 0.004, PL: 0.0025}  # per-trial SD of the paired difference (measured at the quick sizes, seed 0)
RUNS = 300


def _limit(point) -> float:
    (act, c, t), gamma = point
    if c > 1:
        return 0.012 + 0.2 * gamma
    return 0.006 if act == "gelu" else -0.03 - 0.03 * t


def _prediction() -> mod.B9Prediction:
    pts = mod.points(DESIGN)
    zeros = {s: 0.0 for s in DESIGN.settings}
    at_p = {(pt, p): _limit(pt) for pt in mod.limit_points(DESIGN) for p in DESIGN.ps}
    return mod.B9Prediction(limit={pt: _limit(pt) for pt in pts}, t1=zeros, t2=zeros, at_p=at_p)


TRUTH = _prediction()


def _cells(rng: np.random.Generator, gap_small: float = 0.0, extra: float = 0.0, flip: bool = False) -> dict:
    """Paired differences at every point: the limit, plus ``gap_small`` at ``PS`` decaying like ``p^(-1/2)``, plus
    ``extra`` at every size; ``flip`` reverses the sign of every ``c < 1`` mean."""
    cells = {}
    for p, trials in zip(DESIGN.ps, DESIGN.trials):
        for pt in mod.points(DESIGN):
            mean = TRUTH.limit[pt] + gap_small * math.sqrt(PS / p) + extra
            flipped = flip and pt[0][1] < 1
            cells[(pt, p)] = (-mean if flipped else mean) + SD[p] * rng.standard_normal(trials)
    return cells


def _verdicts(alpha: float, seed: int, **kw) -> list[str]:
    rng = np.random.default_rng(seed)
    return [judge(mod.judge_b9(DESIGN, TRUTH, _cells(rng, **kw)), alpha) for _ in range(RUNS)]


@pytest.mark.parametrize("gap_small", [0.0, -0.006, 0.006])
def test_false_fail_rate_when_the_limit_is_true(gap_small):
    """A true limit, the finite-size gap decaying at the slowest allowed rate (or absent): FAILs at most at the
    stated rate, checked at ALPHA_CHECK and at 5 % (where a few hundred runs resolve the rate)."""
    for alpha in (ALPHA_CHECK, 0.05):
        v = _verdicts(alpha, 11 + int(1000 * gap_small), gap_small=gap_small)
        assert sum(o == "FAIL" for o in v) <= max_false_fails(alpha, RUNS)


def test_passes_when_the_limit_is_true():
    """Without a finite-size gap the check PASSes (the sign comparisons need evidence, |z| > 6 here)."""
    v = _verdicts(ALPHA_CHECK, 3)
    assert sum(o == "PASS" for o in v) / RUNS > 0.95


def test_power_against_a_gap_that_does_not_decay():
    """A limit off by 0.008 in every setting (about the per-point detectable error at the quick SDs, 0.0055-0.0082)
    FAILs in more than 90 % of runs: one of twelve settings suffices."""
    v = _verdicts(ALPHA_CHECK, 5, extra=0.008)
    assert sum(o == "FAIL" for o in v) / RUNS > 0.9


def test_power_against_the_wrong_sign():
    """Attention losing where the theory has it winning (and gelu the reverse): every sign row FAILs, every time."""
    rng = np.random.default_rng(7)
    for _ in range(50):
        rows = judged(mod.judge_b9(DESIGN, TRUTH, _cells(rng, flip=True)), ALPHA_CHECK).comparisons
        assert {r.outcome for r in rows if r.name.startswith("sign")} == {"FAIL"}


def test_detectable_error_is_the_half_power_point():
    """One limit off by its own detectable_error (the others true) FAILs the check in about half of the runs."""
    rng = np.random.default_rng(13)
    point = (mod.HEADLINE, 0.0)
    n = len(mod.judge_b9(DESIGN, TRUTH, _cells(rng)))
    # the SD of the statistic at the synthetic SDs (its estimate in a run scatters around it)
    sd = math.hypot(SD[PL] / math.sqrt(DESIGN.trials[1]), 0.5 * SD[PS] / math.sqrt(DESIGN.trials[0]))
    probe = with_key(mod.judge_b9(DESIGN, TRUTH, _cells(rng)), **mod._key(mod.HEADLINE, "gap"))[0]
    shift = mod.detectable_error(probe, n, 0.5) * sd / dict(probe.args)["excess_se"]
    fails = 0
    for _ in range(RUNS):
        cells = _cells(rng)
        for p in DESIGN.ps:
            cells[(point, p)] = cells[(point, p)] + shift
        fails += judge(mod.judge_b9(DESIGN, TRUTH, cells), ALPHA_CHECK) == "FAIL"
    assert 0.3 < fails / RUNS < 0.7


def test_no_win_reads_the_wide_cells():
    rng = np.random.default_rng(9)
    cells = _cells(rng)
    for s in DESIGN.wide:
        key = ((s, DESIGN.gamma_wide[0]), PL)
        cells[key] = -np.abs(cells[key])
    rows = judged(mod.judge_b9(DESIGN, TRUTH, cells), ALPHA_CHECK).comparisons
    assert [r.outcome for r in rows if r.name.startswith("no win")] == ["FAIL"] * len(DESIGN.wide)
    assert sum(r.headline for r in rows) == 1 and rows[0].headline and "erf c=0.5 t=1" in rows[0].name


def test_judge_is_pure():
    rng = np.random.default_rng(1)
    cells = _cells(rng)
    copy = {k: v.copy() for k, v in cells.items()}
    first = [r.to_json() for r in mod.judge_b9(DESIGN, TRUTH, cells)]
    assert [r.to_json() for r in mod.judge_b9(DESIGN, TRUTH, cells)] == first
    assert all(np.array_equal(cells[k], copy[k]) for k in cells)


def test_power_against_a_constant_offset():
    """A limit off by 0.004 in every setting at both sizes (a finite-size gap that does not decay, of the size the
    docs measure for the kernel's mean part plus the spike's shift) FAILs in about half of the runs."""
    v = _verdicts(ALPHA_CHECK, 21, extra=-0.004)
    assert 0.3 < sum(o == "FAIL" for o in v) / RUNS < 0.7


#: the offsets (measured - theory at p, the mean over 30 quick seeds) at p = 128 / 512 of every limit point, averaged over quick seeds 0 and 1 (the B9
#: report's notes; `python -m verify --only B9 --seed S`): non-monotone in places (erf t = 2: +0.0029 then -0.0012)
MEASURED_OFFSETS = {
    ("erf", 0.5, 1.0): (-0.0004, 0.0), ("erf", 0.5, 0.5): (0.0009, 0.0004), ("erf", 0.5, 2.0): (0.0006, 0.0003),
    ("erf", 1 / 3, 0.5): (0.0010, 0.0006), ("erf", 1 / 3, 1.0): (0.0, 0.0), ("erf", 1 / 3, 2.0): (0.0005, 0.0001),
    ("tanh", 0.5, 0.5): (0.0003, 0.0005), ("tanh", 0.5, 1.0): (-0.0004, 0.0), ("tanh", 0.5, 2.0): (0.0002, 0.0),
    ("gelu", 0.5, 0.5): (-0.0011, -0.0002), ("gelu", 0.5, 1.0): (-0.0013, -0.0001), ("gelu", 0.5, 2.0): (-0.0013, 0.0002),
    ("erf", 2.0, 0.5): (0.0018, 0.0006), ("erf", 2.0, 1.0): (0.0014, 0.0006), ("erf", 2.0, 2.0): (0.0020, 0.0009),
}


def test_false_fail_rate_with_the_measured_offsets():
    """B9's real error rate: the true finite-size gaps set to the offsets measured at quick seeds 0 and 1 (not a
    p^(-1/2) law: the kernel's mean part does not halve from p = 128 to 512 in several settings), the Monte Carlo
    noise drawn as in the other tests, 1000 runs.  Measured (docs/strong_alignment.md, "B9's real false-FAIL rate"):
    0.4 % at ALPHA_CHECK (the stated rate is 0.067 %), 4.5 % at 1 %, 11 % at 5 %.  The offsets are themselves
    estimates (SE about 0.0005), so this overstates the rate somewhat; the bounds below hold what was measured."""
    rng = np.random.default_rng(41)
    runs = 1000
    fails = {ALPHA_CHECK: 0, 0.05: 0}
    for _ in range(runs):
        cells = _cells(rng)
        for (s, g) in mod.points(DESIGN):
            small, large = MEASURED_OFFSETS[s]
            cells[((s, g), PS)] = cells[((s, g), PS)] + small
            cells[((s, g), PL)] = cells[((s, g), PL)] + large
        rows = mod.judge_b9(DESIGN, TRUTH, cells)
        for alpha in fails:
            fails[alpha] += judge(rows, alpha) == "FAIL"
    assert fails[ALPHA_CHECK] <= 0.01 * runs
    assert fails[0.05] <= 0.15 * runs
