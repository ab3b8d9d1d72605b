"""The judge of B8 (verify/checks/paper_b_softmax.py) on synthetic measurements with a known truth.

``judge_b8`` is a pure function of (design, prediction, measurement).  Here the design is a small
design (two aspect ratios, the null model and one input with signal and a spike on the same draws), the
prediction is hand-made (numbers of the size of softmax attention's errors, a finite-size prediction that moves
with ``n`` as the derived ``d0 = -1/sqrt p`` term makes it move; the solver is not run) and the cells are trial
arrays in the structure ``simulate_b8`` returns, drawn around the truth with a known per-trial SD (variance halving
with the size) and, for the least favourable truth of the finite-size rule, a gap to the prediction that decays
exactly like ``n^{-1/2}``.

Measured: the check's FAIL rate when the prediction is true (at most ``ALPHA_CHECK`` plus binomial slack and, more
resolving, at most ``alpha`` plus slack when the same comparisons are judged at ``alpha = 0.05``); its power against
a prediction off by a gap that does not decay; that the judge reads the gaps to the prediction *at each size*
(a measurement that follows the finite-size prediction passes, the same measurement judged against the limit
fails); that the reported ``beta`` beyond the claim is never judged; and that the judge is pure.
"""

from __future__ import annotations

import math

import numpy as np

from conftest import max_false_fails
from verify.checks import paper_b_softmax as mod
from verify.verdicts import ALPHA_CHECK, judge

SIZES = (64, 128, 256)
TRIALS = (24, 16, 12)
DESIGN = mod.B8Design(sizes=SIZES, trials_null=TRIALS, trials_signal=TRIALS, gammas=(0.01, 1.0), cs=(0.5, 2.0),
                      inputs=(mod.Inputs(0.0), mod.Inputs(1.0, (mod.NO_SPIKE, (1.0, "aligned")))), betas=(0.25, 1.0),
                      beyond=(2.0,))
NS, NL = DESIGN.pair
Q = math.sqrt(NS / NL)
RUNS = 250  # synthetic checks per rate (each truth)
SD = 0.01  # per-trial SD at the largest size (sqrt(NL / n) times it at size n)




def _limit(cfg) -> np.ndarray:
    """A made-up limit of the size of softmax's errors (0.05 .. 0.9), different for every configuration."""
    c, snr, spike, beta = cfg
    base = 0.55 if c < 1 else 0.15
    return np.array([base, base + 0.3]) - 0.05 * snr - 0.02 * spike[0] + 0.01 * beta


def _prediction(shift: float = 0.0) -> mod.B8Prediction:
    """Finite-size prediction = limit - 1.5 / sqrt p (a term like the d0 term of small beta), plus ``shift``."""
    finite, limit = {}, {}
    for cfg in DESIGN.configs():
        limit[cfg] = _limit(cfg) + shift
        for n in SIZES:
            finite[(cfg, n)] = limit[cfg] - 1.5 / math.sqrt(mod.p_of(n, cfg[0]))
    spread = {(c, b, n): 0.1 for c in DESIGN.cs for b in DESIGN.all_betas for n in SIZES}
    return mod.B8Prediction(finite=finite, limit=limit, spread=spread)


TRUTH = _prediction()


def _cells(rng, gap_small: float = 0.0, extra: float = 0.0, beyond_offset: float = 0.0) -> dict:
    """``simulate_b8``'s measurement around ``TRUTH``: per size the finite prediction plus a gap ``gap_small`` at
    ``NS`` decaying like ``n^{-1/2}`` (the slowest the rule allows), plus ``extra`` at every size (a gap that does
    not decay), plus ``beyond_offset`` for the betas beyond the claim."""
    cells = {}
    for c in DESIGN.cs:
        for inp in DESIGN.inputs:
            for n, trials in zip(SIZES, TRIALS):
                mean = np.empty((len(DESIGN.all_betas), len(inp.spikes), 1, len(DESIGN.gammas)))
                for b, beta in enumerate(DESIGN.all_betas):
                    for s, spike in enumerate(inp.spikes):
                        m = TRUTH.finite[((c, inp.snr, spike, beta), n)] + gap_small * math.sqrt(NS / n) + extra
                        mean[b, s, 0] = m + (beyond_offset if beta in DESIGN.beyond else 0.0)
                sd = SD * math.sqrt(NL / n)
                shape = (len(DESIGN.all_betas), len(inp.spikes), trials, len(DESIGN.gammas))
                soft = mean + sd * rng.standard_normal(shape)
                ew = soft + 0.3 * sd * rng.standard_normal(shape)
                cells[(c, inp.snr, n)] = {"softmax": soft, "entrywise": ew,
                                          "ridge": rng.standard_normal((trials, len(DESIGN.gammas)))}
    return dict(cells=cells, runtime_s=0.0)


def _fail_counts(draw, prediction, seed: int, runs: int = RUNS) -> tuple[int, int]:
    rng = np.random.default_rng(seed)
    at_check = at_05 = 0
    for _ in range(runs):
        comps = mod.judge_b8(DESIGN, prediction, draw(rng))
        at_check += judge(comps) == "FAIL"
        at_05 += judge(comps, alpha=0.05) == "FAIL"
    return at_check, at_05


def _power(draw, prediction, seed: int, runs: int = 30) -> float:
    rng = np.random.default_rng(seed)
    return float(np.mean([judge(mod.judge_b8(DESIGN, prediction, draw(rng))) == "FAIL" for _ in range(runs)]))


SE_L = SD / math.sqrt(TRIALS[-1])


def test_judge_structure():
    comps = mod.judge_b8(DESIGN, TRUTH, _cells(np.random.default_rng(0)))
    judged_configs = [cfg for cfg in DESIGN.configs() if cfg[3] in DESIGN.betas]
    n_judged = len(judged_configs) * len(DESIGN.gammas)
    assert len(comps) == n_judged == 2 * 3 * 2 * 2
    assert all(cp.kind == "bound" for cp in comps) and comps[0].headline and sum(cp.headline for cp in comps) == 1
    assert not any("beta=2 " in cp.name for cp in comps)
    assert all(f"n={NS}" in cp.tolerance and f"n={NL}" in cp.tolerance for cp in comps)
    cfg = judged_configs[0]
    assert comps[0].predicted == TRUTH.finite[(cfg, NL)][0]  # the prediction at the larger size


def test_false_fail_rate_when_the_prediction_is_true():
    """No gap, and a gap of 10 SE_l at NS decaying exactly like n^-1/2 (the least favourable truth)."""
    for k, gap in enumerate((0.0, 10 * SE_L / Q)):
        at_check, at_05 = _fail_counts(lambda rng, g=gap: _cells(rng, gap_small=g), TRUTH, seed=11 + k)
        assert at_check <= max_false_fails(ALPHA_CHECK, RUNS, tail=1e-4), (gap, at_check)
        assert at_05 <= max_false_fails(0.05, RUNS, tail=1e-4), (gap, at_05)


def test_power_against_a_gap_that_does_not_decay():
    """30 SE_l that does not decay: T = 30 (1 - Q) SE_l = 8.8 SE_l per point against ~4.2 SE_l (t quantile ~3.3 on
    hypot(SE_l, Q SE_s) = 1.2 SE_l): the check FAILS almost always; 10 SE_l (T = 2.9 SE_l) is below the rule's
    resolution at one point, and the check rarely FAILS."""
    assert _power(lambda rng: _cells(rng, extra=30 * SE_L), TRUTH, seed=12) > 0.9
    assert _power(lambda rng: _cells(rng, extra=10 * SE_L), TRUTH, seed=13) < 0.5


def test_gaps_are_read_against_the_prediction_at_each_size():
    """The data follow the finite-size prediction, which moves by 1.5 (p_s^-1/2 - p_l^-1/2) = 0.027-0.055 between
    the sizes (9-19 SE_l): judged as built, PASS; the same data against one size-independent prediction (the one
    at NS, at every size: gap 0 at NS, the whole move at NL), FAIL."""
    meas = _cells(np.random.default_rng(3))
    assert judge(mod.judge_b8(DESIGN, TRUTH, meas)) != "FAIL"
    flat = mod.B8Prediction(finite={(cfg, n): TRUTH.finite[(cfg, NS)] for cfg in DESIGN.configs() for n in SIZES},
                            limit=TRUTH.limit, spread=TRUTH.spread)
    assert judge(mod.judge_b8(DESIGN, flat, meas)) == "FAIL"


def test_beyond_the_claim_is_reported_not_judged():
    """beta = 2 off by 100 SE: no comparison, no FAIL; the notes and the table report the failing rule there."""
    meas = _cells(np.random.default_rng(4), beyond_offset=100 * SE_L)
    comps = mod.judge_b8(DESIGN, TRUTH, meas)
    assert judge(comps) != "FAIL"
    notes, data = mod.describe_b8(DESIGN, TRUTH, meas, comps)
    beyond = [r for r in data["rows"] if r["beta"] == 2.0]
    assert beyond and not any(r["judged"] for r in beyond) and not all(r["rule_passed"] for r in beyond)
    assert "beta=2 (not judged): rule fails at" in notes and "not judged (rule fails)" in data["table_md"]


def test_judge_is_pure_and_describe_reads_the_same_points():
    meas = _cells(np.random.default_rng(5), gap_small=3 * SE_L)
    a, b = mod.judge_b8(DESIGN, TRUTH, meas), mod.judge_b8(DESIGN, TRUTH, meas)
    assert [(c.name, c.measured, c.p_fail) for c in a] == [(c.name, c.measured, c.p_fail) for c in b]
    notes, data = mod.describe_b8(DESIGN, TRUTH, meas, a)
    assert len(data["rows"]) == len(DESIGN.configs()) * len(DESIGN.gammas)
    assert data["table_md"].count("\n") == len(data["rows"]) + 1
    row = next(r for r in data["rows"] if r["judged"])
    cfg = (row["c"], row["snr"], mod.NO_SPIKE, row["beta"])
    sm = meas["cells"][(row["c"], row["snr"], NL)]["softmax"][DESIGN.all_betas.index(row["beta"]), 0, :, 0]
    assert row["sizes"][str(NL)]["softmax"] == sm.mean()
    assert row["sizes"][str(NL)]["prediction"] == TRUTH.finite[(cfg, NL)][0]
    assert f"{len(a)} judged comparisons" in notes
