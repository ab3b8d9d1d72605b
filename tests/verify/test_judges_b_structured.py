"""The judges of B4 and B7 (verify/checks/paper_b_structured.py, paper_b_alignment.py) on synthetic measurements with a known truth.

``judge_b7`` / ``judge_b4`` are pure functions of (design, prediction, cells).  Here the prediction is a
hand-made "theory" (numbers of the size of the structured theory's, written down: the solver is not run)
and the cells are trial arrays in the structure ``simulate_b7`` / ``simulate_b4`` return, drawn around that
theory with a known per-trial SD at ``p`` and ``2p`` (variance halving with the size) and, for the
least favourable truth of the finite-size rule, a gap that decays exactly like ``p^{-1/2}``.

Measured: the check's FAIL rate when the theory is true (at most ``ALPHA_CHECK`` plus binomial slack, and,
more resolving with a few hundred runs, at most ``alpha`` when the same comparisons are judged at
``alpha = 0.05``), and its power when the theory is shifted or the claim is false.  At these least
favourable truths the family-wise FAIL rate at ``alpha = 0.05`` measured over 1500 runs was 4.5% (B7) and
3.3% (B4): the judges spend their stated alpha, no more.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import max_false_fails
from verify.checks import paper_b_alignment as alignment
from verify.checks import paper_b_structured as mod
from verify.checks import _structured as grid
from verify.verdicts import ALPHA_CHECK, judge, judged

NONE, AL4, OR4 = grid.SPIKE_NONE, (4.0, "aligned"), (4.0, "orthogonal")
TRIALS = 24
P1, P2 = 128, 256
Q = math.sqrt(P1 / P2)
RUNS = 300  # synthetic checks per rate

PROF = mod.StructuredProfile(
    p_sizes=(P1, P2), trials=TRIALS, gammas=(0.01,), snrs=(0.5,), spikes=(NONE, AL4, OR4), cs=(0.5, 2.0),
    b4_snrs=(0.5,), b4_gammas=(0.01, 1.0),
    b4_theory_grid=(-2.0, 1.0, 4), reversal_grid=(-3.0, 2.0, 11), figure_grid=(-3.0, 1.0, 5),
)




def _fail_counts(draw, judge_fn, design, prediction, rng, runs: int = RUNS) -> tuple[int, int]:
    """FAILs of ``runs`` synthetic checks at ALPHA_CHECK and at alpha = 0.05 (the same comparisons)."""
    at_check = at_05 = 0
    for _ in range(runs):
        comps = judge_fn(design, prediction, draw(rng))
        at_check += judge(comps) == "FAIL"
        at_05 += judge(comps, alpha=0.05) == "FAIL"
    return at_check, at_05


# ============================================================================ B7
B7_DESIGN = mod.B7Design(prof=PROF, gammas=np.array(PROF.gammas), sizes={c: mod.sizes_at(PROF, c) for c in PROF.cs})
_B7_THEORY = {  # E at gamma = 0.01 (the size of the structured theory's values at snr = 1/2)
    (0.5, 0.5, NONE): [0.366], (0.5, 0.5, AL4): [0.350], (0.5, 0.5, OR4): [0.366],
    (2.0, 0.5, NONE): [0.076], (2.0, 0.5, AL4): [0.058], (2.0, 0.5, OR4): [0.076],
}
#: the aligned spike at c = 2 is outside the declared regime (kappa > KAPPA_MAX): its true-kernel points are not judged
_B7_KAPPA = {(0.5, 0.5, NONE): 0.03, (0.5, 0.5, AL4): 0.41, (0.5, 0.5, OR4): 0.28,
             (2.0, 0.5, NONE): 0.03, (2.0, 0.5, AL4): 0.9, (2.0, 0.5, OR4): 0.28}
OUTSIDE = (2.0, 0.5, AL4)
SD = 0.02  # per-trial SD at 2p (sqrt 2 times that at p)
SE_L = SD / math.sqrt(TRIALS)


def _b7_prediction(shift: float = 0.0) -> mod.B7Prediction:
    th = {k: np.array(v) + shift for k, v in _B7_THEORY.items()}
    return mod.B7Prediction(theory=th, theory_spec={k: 1.01 * v for k, v in th.items()}, kappa=dict(_B7_KAPPA))


B7_TRUTH = _b7_prediction()


def _b7_cells(rng, gap_small: float = 0.0, extra: dict | None = None) -> dict:
    """Cells ``(c, snr, p) -> {"true", "linearised": (spikes, trials, gammas)}`` around the true theory.

    ``gap_small``: finite-size gap at ``p`` (``Q`` times it at ``2p``: the slowest decay the rule allows);
    ``extra``: ``{(config, kernel): offset}`` added at both sizes (a gap that does not decay).
    """
    extra = extra or {}
    cells = {}
    for c in PROF.cs:
        for snr in PROF.snrs:
            for p in (P1, P2):
                size = math.sqrt(P1 / p)  # 1 at p, Q at 2p
                sd = SD * math.sqrt(P2 / p)
                cell = {}
                for kern in ("true", "linearised"):
                    mean = np.array([[np.asarray(_B7_THEORY[(c, snr, s)]) + gap_small * size
                                      + extra.get(((c, snr, s), kern), 0.0)] for s in PROF.spikes])
                    cell[kern] = mean + sd * rng.standard_normal((len(PROF.spikes), TRIALS, len(PROF.gammas)))
                cells[(c, snr, p)] = cell
    return cells


def test_b7_judge_structure():
    comps = mod.judge_b7(B7_DESIGN, B7_TRUTH, _b7_cells(np.random.default_rng(0)))
    lin = [cp for cp in comps if cp.name.startswith("[linearised kernel]")]
    true = [cp for cp in comps if not cp.name.startswith("[linearised kernel]")]
    n_points = len(B7_DESIGN.configs) * len(PROF.gammas)
    assert len(lin) == n_points and len(true) == n_points - len(PROF.gammas)  # OUTSIDE is not judged
    assert all("kappa=" in cp.name for cp in true) and not any("kappa=0.90" in cp.name for cp in true)
    assert comps[0].headline and sum(cp.headline for cp in comps) == 1
    assert all(cp.kind == "bound" for cp in comps)


def test_b7_false_fail_rate_when_the_theory_is_true():
    """Theory true with a large gap decaying exactly like p^-1/2 (the least favourable truth of the finite-size
    rule; a smaller or faster-decaying gap fails less): FAIL rate <= alpha + slack."""
    draw = lambda rng: _b7_cells(rng, gap_small=10 * SE_L / Q)  # noqa: E731
    at_check, at_05 = _fail_counts(draw, mod.judge_b7, B7_DESIGN, B7_TRUTH, np.random.default_rng(1))
    assert at_check <= max_false_fails(ALPHA_CHECK, RUNS, tail=1e-4)
    assert at_05 <= max_false_fails(0.05, RUNS, tail=1e-4)


def test_b7_power_against_a_shifted_theory():
    """A prediction off by 30 SE at every point (gap that does not decay): the check FAILS almost always."""
    shifted = _b7_prediction(shift=30 * SE_L)
    rng = np.random.default_rng(2)
    fails = sum(judge(mod.judge_b7(B7_DESIGN, shifted, _b7_cells(rng))) == "FAIL" for _ in range(40))
    assert fails >= 38


def test_b7_outside_regime_is_reported_not_judged():
    """A true-kernel gap of 100 SE in the configuration outside the regime does not fail the check; the same
    gap in its linearised-kernel simulation (judged for every configuration) does."""
    rng = np.random.default_rng(3)
    big = 100 * SE_L
    comps = mod.judge_b7(B7_DESIGN, B7_TRUTH, _b7_cells(rng, extra={(OUTSIDE, "true"): big}))
    assert judge(comps) != "FAIL"
    comps = mod.judge_b7(B7_DESIGN, B7_TRUTH, _b7_cells(rng, extra={(OUTSIDE, "linearised"): big}))
    assert judge(comps) == "FAIL"
    failed = [cp.name for cp in judged(comps).comparisons if cp.outcome == "FAIL"]
    assert failed and all(cp.startswith("[linearised kernel] c=2 snr=0.5 spike=aligned 4") for cp in failed)


def test_b7_describe_reports_outside_points():
    cells = _b7_cells(np.random.default_rng(4))
    comps = mod.judge_b7(B7_DESIGN, B7_TRUTH, cells)
    notes, data = mod.describe_b7(B7_DESIGN, B7_TRUTH, cells, comps)
    assert len(data["grid"]) == len(B7_DESIGN.configs) * len(PROF.gammas)
    assert sum(not r["inside_regime"] for r in data["grid"]) == len(PROF.gammas)
    assert "c=2 snr=0.5 spike=aligned 4 gamma=0.01: kappa=0.90" in notes


# ============================================================================ B4
B4_DESIGN = alignment.B4Design(
    prof=PROF, theory_grid=np.logspace(*PROF.b4_theory_grid), reversal_grid=np.logspace(*PROF.reversal_grid),
    figure_grid=np.logspace(*PROF.figure_grid), gammas=np.array(PROF.b4_gammas),
    sizes={c: mod.sizes_at(PROF, c) for c in PROF.cs})
_B4_SIM = {  # theory on gammas (0.01, 1): sizes of the structured theory's values at snr = 1/2
    (0.5, 0.5): {"none": [0.366, 0.574], "al4": [0.350, 0.523], "ridge": [0.345, 0.497]},
    (2.0, 0.5): {"none": [0.076, 0.605], "al4": [0.058, 0.476], "ridge": [0.0001, 0.164]},
}
B4_OUTSIDE = (2.0, 0.5)  # kappa(2p) > KAPPA_MAX: attention vs ridge reported, not judged
SD4 = 0.01  # per-trial SD of every model at 2p
#: SE at 2p of a paired difference of two models (own parts 0.6 SD4 each)
SE_PAIRED = 0.6 * math.sqrt(2) * SD4 / math.sqrt(TRIALS)


def _scans(c: float, snr: float) -> list[dict]:
    return [dict(c=c, snr=snr, strength=s, gamma_star=g, min_ratio=0.9, gamma_at_min_ratio=1.0,
                 ratio_small_gamma=1.2 - 0.01 * s, gamma_small=1e-3)
            for s, g in zip(alignment.REVERSAL_STRENGTHS, (1.0, 0.8, 0.5, 0.2))]


def _b4_prediction(al4_shift: float = 0.0, alignment_effect: bool = True) -> alignment.B4Prediction:
    """Hand-made theory; ``alignment_effect=False``: aligned attention equal to no spike (the edge of B4's
    direction claim ``E(aligned 4) - E(none) < 0``)."""
    base = np.linspace(0.4, 0.7, B4_DESIGN.theory_grid.size)
    statements = {k: {"none": base, "aligned1": base - 0.01, "aligned4": base - 0.03, "orthogonal4": base.copy(),
                      "ridge": base - 0.1} for k in B4_DESIGN.theory_keys}
    simulation = {}
    for k, th in _B4_SIM.items():
        al4 = np.array(th["al4"] if alignment_effect else th["none"]) + al4_shift
        simulation[k] = {"none": np.array(th["none"]), "al4": al4, "or4": np.array(th["none"]),
                         "ridge": np.array(th["ridge"])}
    phase = {(c, st): dict(gamma_star=None, ratio_small_gamma=1.1) for c in PROF.phase_cs for st in PROF.phase_strengths}
    return alignment.B4Prediction(statements=statements, reversal={k: _scans(*k) for k in B4_DESIGN.theory_keys},
                                  simulation=simulation, kappa={(0.5, 0.5): 0.41, B4_OUTSIDE: 0.9}, figure={},
                                  phase=phase)


B4_TRUTH = _b4_prediction()


def _b4_cells(rng, truth: alignment.B4Prediction = B4_TRUTH, gap_small: float = 0.0, orth_gap_small: float = 0.0,
              offsets: dict | None = None) -> dict:
    """Cells ``(c, snr, p) -> {"none", "al4", "or4", "ridge": (trials, gammas)}`` around ``truth.simulation``.

    Every model of a trial shares a common draw (the same X): per-trial SD ``SD4`` at 2p (sqrt 2 times at p),
    of which 0.8 common, 0.6 own.  Finite-size gaps at ``p`` (``Q`` times them at ``2p``, the slowest decay
    allowed): ``gap_small`` of attention (every spike; ridge has none), ``-orth_gap_small`` of the orthogonal
    spike against no spike.  ``offsets``: ``{model: offset}`` at both sizes (a claim that is false).
    """
    offsets = offsets or {}
    cells = {}
    for (c, snr), th in truth.simulation.items():
        for p in (P1, P2):
            sd, size = SD4 * math.sqrt(P2 / p), math.sqrt(P1 / p)
            common = rng.standard_normal((TRIALS, B4_DESIGN.gammas.size))
            mean = {"none": th["none"] + gap_small * size, "al4": th["al4"] + gap_small * size,
                    "or4": th["or4"] + (gap_small - orth_gap_small) * size, "ridge": th["ridge"]}
            cells[(c, snr, p)] = {
                k: v + offsets.get(k, 0.0) + sd * (0.8 * common + 0.6 * rng.standard_normal(common.shape))
                for k, v in mean.items()}
    return cells


def test_b4_judge_structure():
    comps = alignment.judge_b4(B4_DESIGN, B4_TRUTH, _b4_cells(np.random.default_rng(10)))
    n_theory = len(B4_DESIGN.theory_keys)
    exact = comps[:3 * n_theory]
    assert all(cp.kind == "exact" and cp.passed for cp in exact)  # the statements hold for this theory
    mc = comps[3 * n_theory:]
    g = B4_DESIGN.gammas.size
    assert len(mc) == 3 * g + 2 * g  # attention vs ridge judged at the inside cell only
    assert not any("E_ridge" in cp.name and "c=2 " in cp.name for cp in mc)
    assert {cp.kind for cp in mc} == {"direction", "bound"}


def test_b4_false_fail_rate_at_the_edge_of_every_claim():
    """Every MC comparison of B4 at the least favourable truth of its null: no alignment effect (theory and
    measurement), an orthogonal-spike benefit and an attention gap both decaying exactly like p^-1/2
    (attention vs ridge falls in the finite-size branch or the sign branch at gamma = 0.01, the sign branch
    at gamma = 1): FAIL rate <= alpha + slack."""
    edge = _b4_prediction(alignment_effect=False)
    draw = lambda rng: _b4_cells(rng, edge, gap_small=6 * SE_PAIRED / Q, orth_gap_small=10 * SE_PAIRED / Q)  # noqa: E731
    at_check, at_05 = _fail_counts(draw, alignment.judge_b4, B4_DESIGN, edge, np.random.default_rng(11))
    assert at_check <= max_false_fails(ALPHA_CHECK, RUNS, tail=1e-4)
    assert at_05 <= max_false_fails(0.05, RUNS, tail=1e-4)


def test_b4_power_against_a_shifted_theory():
    """The predicted aligned attention 0.1 too low: attention-vs-ridge contradicts the theory's sign (or misses
    it by far more than the finite-size band): the check FAILS almost always."""
    shifted = _b4_prediction(al4_shift=-0.1)
    rng = np.random.default_rng(12)
    fails = sum(judge(alignment.judge_b4(B4_DESIGN, shifted, _b4_cells(rng))) == "FAIL" for _ in range(40))
    assert fails >= 38


@pytest.mark.parametrize("offsets", [{"al4": 0.05}, {"or4": -0.06}], ids=["alignment-hurts", "orthogonal-helps"])
def test_b4_power_against_a_false_claim(offsets):
    """Measurements where alignment raises the error, or an orthogonal spike lowers it (at both sizes): FAIL."""
    rng = np.random.default_rng(13)
    fails = sum(judge(alignment.judge_b4(B4_DESIGN, B4_TRUTH, _b4_cells(rng, offsets=offsets))) == "FAIL"
                for _ in range(40))
    assert fails >= 38


def test_b4_wrong_theory_statement_fails_exactly():
    bad = _b4_prediction()
    key = B4_DESIGN.theory_keys[0]
    bad.statements[key]["aligned4"] = bad.statements[key]["aligned1"] + 0.01  # strength 4 above strength 1
    bad.statements[key]["orthogonal4"] = bad.statements[key]["none"] + 1e-6
    bad.reversal[key][2]["gamma_star"] = None  # no reversal with the aligned spike
    comps = alignment.judge_b4(B4_DESIGN, bad, _b4_cells(np.random.default_rng(14)))
    failed = [cp.name for cp in comps if cp.kind == "exact" and not cp.passed]
    assert len(failed) == 3 and all(n.startswith("theory c=0.5 snr=0.5:") for n in failed)
    assert judge(comps) == "FAIL"


def test_b4_describe_reports_unjudged_points():
    cells = _b4_cells(np.random.default_rng(15))
    notes, data = alignment.describe_b4(B4_DESIGN, B4_TRUTH, cells, alignment.judge_b4(B4_DESIGN, B4_TRUTH, cells))
    assert len(data["simulation"]) == len(B4_DESIGN.cells) * B4_DESIGN.gammas.size
    assert len(data["reversal"]) == len(B4_DESIGN.theory_keys) * len(alignment.REVERSAL_STRENGTHS)
    assert "outside it (reported, not judged): MC c=2 snr=0.5 gamma=0.01" in notes
