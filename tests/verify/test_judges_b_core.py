"""The judges of B1, B2, B3, B5, B6 (verify/checks/paper_b_ridge.py ... paper_b_spectrum.py) on synthetic measurements with a known truth.

Each judge is a pure function of (design, prediction, measurement).  Here the designs are small and written
by hand with the module's own types (:class:`Panel`, :class:`Cell`, :class:`TwoSizes`, dicts of per-trial
arrays, a law with a ``cdf`` method), the prediction is a hand-made "theory", and the measurement is drawn
around it with a known per-trial SD, in the structure ``simulate`` returns:

* B1, B2 (finite-size rule): means and estimated SEs at ``n/2`` and ``n`` (per-trial variance halving with
  the size), with a gap that decays exactly like ``n^{-1/2}`` (the least favourable truth the rule allows)
  or no gap; the wrong prediction is shifted by a constant (a gap that does not decay).
* B3: per-trial power laws ``A gamma^(e + delta)`` with log-normal noise, the slope bias ``delta``
  decaying like ``n^{-1/2}``; wrong: the theory's attention exponent 0.7 instead of 0.5, or the wrong sign
  at ``p/n = 1/4``.
* B5: paired differences with true mean 0 (the boundary of the sign claim, its least favourable truth);
  wrong: the true difference negative.
* B6: eigenvalues of a known law (uniform) with an ECDF error ``~1/n`` (rigid spectra, what the theory
  says) and, at the rule's boundary, i.i.d. samples (``KS ~ n^{-1/2}``); wrong: a shifted law.

Measured: the check's FAIL rate when the theory is true (at most ``ALPHA_CHECK`` plus binomial slack and,
more resolving with a few hundred runs, at most ``alpha`` plus slack when the same comparisons are judged
at ``alpha = 0.05``), and its power against a wrong prediction.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import max_false_fails
from verify.checks import paper_b_attention_vs_ridge as avr
from verify.checks import paper_b_cosine as cosine
from verify.checks import paper_b_null as null
from verify.checks import paper_b_ridge as ridge
from verify.checks import paper_b_spectrum as spectrum
from verify.checks._paper_b import SIZE, Cell, Panel, TwoSizes
from verify.verdicts import ALPHA_CHECK, judge

RUNS = 200  # synthetic checks per false-FAIL rate (the truths of a claim alternate)
POWER_RUNS = 20  # synthetic checks per power
Q = 2**-0.5  # (n_s / n_l)^(1/2)




def _fail_counts(draws, judge_fn, design, prediction, seed: int, runs: int = RUNS) -> tuple[int, int]:
    """FAILs of ``runs`` synthetic checks at ALPHA_CHECK and at alpha = 0.05 (the same comparisons); run ``i``
    draws its measurement with ``draws[i % len(draws)]`` (several truths of the claim, each one where it holds)."""
    rng = np.random.default_rng(seed)
    at_check = at_05 = 0
    for i in range(runs):
        comps = judge_fn(design, prediction, draws[i % len(draws)](rng))
        at_check += judge(comps) == "FAIL"
        at_05 += judge(comps, alpha=0.05) == "FAIL"
    return at_check, at_05


def _assert_false_fail_rate(counts: tuple[int, int], runs: int = RUNS) -> None:
    at_check, at_05 = counts
    assert at_check <= max_false_fails(ALPHA_CHECK, runs, tail=1e-4), counts
    assert at_05 <= max_false_fails(0.05, runs, tail=1e-4), counts


def _power(draw, judge_fn, design, prediction, seed: int, runs: int = POWER_RUNS) -> float:
    rng = np.random.default_rng(seed)
    return float(np.mean([judge(judge_fn(design, prediction, draw(rng))) == "FAIL" for _ in range(runs)]))


# ============================================================================ B1, B2: the finite-size rule
def _mean_se(rng, mu: np.ndarray, sd: float, trials: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and estimated SE of ``trials`` normal draws per point (exact in distribution: independent)."""
    k = mu.size
    m = mu + sd / math.sqrt(trials) * rng.standard_normal(k)
    se = sd * np.sqrt(rng.chisquare(trials - 1, k) / (trials - 1)) / math.sqrt(trials)
    return m, se


def _two_sizes(rng, truth: np.ndarray, panel: Panel, sd_l: float, gap_se: float) -> TwoSizes:
    """Monte Carlo of ``panel`` around the limit ``truth``: per-trial SD ``sqrt2 sd_l`` at ``n/2``, ``sd_l`` at ``n``;
    gap ``gap_se`` SE_l at ``n/2`` and ``Q`` times it at ``n`` (the slowest decay the rule allows)."""
    ts, tl = panel.trials
    gap = gap_se * sd_l / math.sqrt(tl)
    m_s, se_s = _mean_se(rng, truth + gap, math.sqrt(2) * sd_l, ts)
    m_l, se_l = _mean_se(rng, truth + Q * gap, sd_l, tl)
    return TwoSizes(m_s, se_s, m_l, se_l)


def _b1_design() -> dict:
    """B1's three panels, fewer points: 1a over gamma, 1b over p/n, 1c over snr (quick-profile trials)."""
    g = np.logspace(-5, 1, 4)
    a = Panel("1a", "1a", 256, (80, 40), (Cell(4.0, 1.0, g, ("1a", SIZE)),),
              tuple(f"1a gamma={x:.3g}" for x in g))
    b = Panel("1b", "1b", 256, (60, 30), tuple(Cell(c, 1.0, np.array([1e-5]), ("1b", SIZE, c)) for c in (0.5, 2.0)),
              ("1b p/n=0.5", "1b p/n=2.0"), x_name="c", xs=(0.5, 2.0))
    c = Panel("1c", "1c", 512, (60, 30), tuple(Cell(0.25, s, np.array([1e-5]), ("1c", SIZE, s)) for s in (0.0, 4.0)),
              ("1c snr=0", "1c snr=4"), x_name="snr", xs=(0.0, 4.0))
    return dict(panels=(a, b, c), flags=[], profile="synthetic", a=dict(gammas=g, c=4.0, snr=1.0))


B1_DESIGN = _b1_design()
#: the "theory": ridge errors of the size of B1's (0.05 .. 0.9)
B1_THEORY = {"1a": np.array([0.75, 0.76, 0.8, 0.9]), "1b": np.array([0.55, 0.05]), "1c": np.array([0.75, 0.2])}
B1_SD = 0.02  # per-trial SD at n (sampled labels)


def _b1_draw(gap_se: float, shift: float = 0.0):
    """Measurement of B1 around the truth; ``shift``: the truth is the theory plus it (a wrong prediction)."""
    def draw(rng):
        return dict(panels={p.key: _two_sizes(rng, B1_THEORY[p.key] + shift, p, B1_SD, gap_se)
                            for p in B1_DESIGN["panels"]})
    return draw


def test_b1_false_fail_rate():
    # no finite-size gap, and a gap of 10 SE_l decaying exactly like n^-1/2 (the least favourable truth)
    counts = _fail_counts([_b1_draw(0.0), _b1_draw(10.0)], ridge.CLAIM_B1.judge, B1_DESIGN, dict(theory=B1_THEORY),
                          seed=11)
    _assert_false_fail_rate(counts)


def test_b1_power_against_a_constant_offset():
    # 30 SE_l that does not decay: T = 30 (1 - Q) SE_l = 8.8 SE_l against 3 hypot(SE_l, Q SE_s) = 4.2 SE_l (per point)
    se_l = B1_SD / math.sqrt(40)
    power = _power(_b1_draw(0.0, shift=30 * se_l), ridge.CLAIM_B1.judge, B1_DESIGN, dict(theory=B1_THEORY), seed=12)
    assert power > 0.9


def test_b1_judge_is_pure_and_describes_the_same_points():
    meas = _b1_draw(2.0)(np.random.default_rng(13))
    pred = dict(theory=B1_THEORY, curve=(np.ones(2), np.ones(2)))
    a, b = ridge.CLAIM_B1.judge(B1_DESIGN, pred, meas), ridge.CLAIM_B1.judge(B1_DESIGN, pred, meas)
    assert [(c.name, c.measured, c.p_fail) for c in a] == [(c.name, c.measured, c.p_fail) for c in b]
    assert [c.name for c in a][-1] == "1c finite-size gap shrinks" and len(a) == 8 + 3
    notes, data = ridge.CLAIM_B1.describe(B1_DESIGN, pred, meas, a)
    assert "profile synthetic" in notes
    np.testing.assert_array_equal(data["1b"]["rows"][:, 4], meas["panels"]["1b"].m_l)
    assert data["1c"]["columns"][0] == "snr" and data["1a"]["n"] == (128, 256)


def _b2_design() -> dict:
    cfg = null.B2Sizes(gammas=np.logspace(-3, 0, 3), ns={0.25: 1024, 2.0: 256}, trials={0.25: (48, 24), 2.0: (80, 40)})
    return dict(panels=tuple(null._b2_panel(cfg, c, "tanh") for c in null.B2_CS), ge=())


B2_DESIGN = _b2_design()
#: null-attention errors of the size of B2's (1 - c at small gamma for c < 1; small for c = 2)
B2_THEORY = {"tanh_c0.25": np.array([0.75, 0.76, 0.83]), "tanh_c2.0": np.array([0.013, 0.11, 0.5])}
B2_SD = 2e-5  # label-averaged estimator: tiny per-trial SD


def _b2_draw(gap_se: float, shift: float = 0.0):
    def draw(rng):
        return dict(panels={p.key: _two_sizes(rng, B2_THEORY[p.key] + shift, p, B2_SD, gap_se)
                            for p in B2_DESIGN["panels"]})
    return draw


def test_b2_false_fail_rate():
    counts = _fail_counts([_b2_draw(0.0), _b2_draw(10.0)], null.CLAIM_B2.judge, B2_DESIGN, dict(theory=B2_THEORY),
                          seed=21)
    _assert_false_fail_rate(counts)


def test_b2_power_against_a_relative_error_of_the_theory():
    # a fifth of the SPEC system's relative gap at p/n = 1/4 (1e-3): 2e-4 of 0.75 is 36 SE_l there
    wrong = {k: v * 1.0002 for k, v in B2_THEORY.items()}
    assert _power(_b2_draw(0.0), null.CLAIM_B2.judge, B2_DESIGN, dict(theory=wrong), seed=22) > 0.9


# ============================================================================ B3: signs, slopes and exponents
B3_GAMMAS, B3_FIT = np.logspace(-4, 0, 5), np.logspace(-4, -2.5, 4)


def _b3_design() -> dict:
    allg = np.unique(np.concatenate([B3_GAMMAS, B3_FIT]))
    return dict(gammas=B3_GAMMAS, fit=B3_FIT, allg=allg, idx=np.searchsorted(allg, B3_GAMMAS),
                fidx=np.searchsorted(allg, B3_FIT), n=512, ns=256, n4=1024, trials=(16, 8), act="tanh")


B3_DESIGN = _b3_design()
#: p/n = 1/4: attention minus ridge, with the sign reversal of the real theory (+ at 0.1, - at 1)
B3_DIFF4 = np.array([1e-5, 1e-4, 2e-4, 0.01, -0.02])


def _b3_prediction(att_exponent: float = 0.5, diff4: np.ndarray = B3_DIFF4) -> dict:
    allg = B3_DESIGN["allg"]
    return dict(att=0.3 * allg**att_exponent, rr=0.2 * allg**2.0, att4=0.75 + diff4, rr4=np.full(diff4.size, 0.75))


B3_TRUTH = _b3_prediction()
B3_NOISE = 0.05  # per-trial log-normal noise of each point


def _b3_trials(rng, amp: float, exponent: float, trials: int) -> np.ndarray:
    g = B3_DESIGN["allg"]
    return amp * g**exponent * np.exp(B3_NOISE * rng.standard_normal((trials, g.size)))


def _b3_draw(delta_small: float = 0.02, diff4: np.ndarray = B3_DIFF4):
    """Slopes ``e + delta`` (``delta_small`` at n/2, ``Q`` times it at n: the slowest allowed decay); paired
    differences at p/n = 1/4 around ``diff4`` with SD 0.002 per trial (SE 7e-4 over 8 trials)."""
    ts, tl = B3_DESIGN["trials"]

    def draw(rng):
        c2 = {kind: (_b3_trials(rng, amp, e + delta_small, ts), _b3_trials(rng, amp, e + Q * delta_small, tl))
              for kind, amp, e in (("att", 0.3, 0.5), ("rr", 0.2, 2.0))}
        diff = diff4 + 0.002 * rng.standard_normal((tl, diff4.size))
        zeros = np.full((tl, diff4.size), 0.75)
        return dict(c2=c2, c4=dict(att=zeros, rr=zeros, diff=diff))
    return draw


def test_b3_false_fail_rate():
    # slopes exact, and a slope bias 0.05 at n/2 decaying like n^-1/2
    counts = _fail_counts([_b3_draw(0.0), _b3_draw(0.05)], avr.judge_b3, B3_DESIGN, B3_TRUTH, seed=31)
    _assert_false_fail_rate(counts)


def test_b3_power_against_a_wrong_exponent():
    # theory's attention slope 0.8, measured 0.5 at both sizes: T = 0.3 (1 - Q) = 0.088, ~10 SD of T
    assert _power(_b3_draw(0.0), avr.judge_b3, B3_DESIGN, _b3_prediction(att_exponent=0.8), seed=32) > 0.9


def test_b3_power_against_a_wrong_sign_at_quarter():
    # the theory says + at gamma = 0.1 and - at 1; the data have the opposite signs (14 and 28 SE of the paired mean)
    assert _power(_b3_draw(0.0, diff4=-B3_DIFF4), avr.judge_b3, B3_DESIGN, B3_TRUTH, seed=33) > 0.9


def test_b3_comparison_order():
    names = [c.name for c in avr.judge_b3(B3_DESIGN, B3_TRUTH, _b3_draw()(np.random.default_rng(34)))]
    assert len(names) == 5 + 4 + 2
    assert "attention small-gamma slope" in names[5] and "ridge small-gamma exponent" in names[8]
    assert names[-1].startswith("c=1/4 gamma=1: sign of E_att - E_ridge as theory (-)")


# ============================================================================ B5: paired signs
B5_DESIGN = dict(configs=[(2.0, 0.0), (2.0, 4.0), (0.5, 4.0)], gammas=np.array([1e-3, 1e-2]))
B5_PRED = {"c2.0_snr0.0": (np.array([0.02, 0.1]), np.array([0.01, 0.09])), "c2.0_snr4.0": None, "c0.5_snr4.0": None}
B5_TRIALS = 16


def _b5_draw(delta_se: float):
    """Paired draws: E_cos - E_lin has mean ``delta_se`` SE of the paired mean at every point."""
    sd = 1e-3

    def draw(rng):
        out = {}
        for c, snr in B5_DESIGN["configs"]:
            lin = 0.1 + 0.01 * rng.standard_normal((B5_TRIALS, 2))
            cos = lin + delta_se * sd / math.sqrt(B5_TRIALS) + sd * rng.standard_normal((B5_TRIALS, 2))
            out[f"c{c}_snr{snr}"] = dict(cos=cos, lin=lin)
        return dict(configs=out)
    return draw


def test_b5_false_fail_rate_at_the_boundary():
    counts = _fail_counts([_b5_draw(0.0)], cosine.judge_b5, B5_DESIGN, B5_PRED, seed=51)
    _assert_false_fail_rate(counts)


def test_b5_power_and_evidence():
    assert _power(_b5_draw(-6.0), cosine.judge_b5, B5_DESIGN, B5_PRED, seed=52) > 0.9
    rng = np.random.default_rng(53)
    passes = np.mean([judge(cosine.judge_b5(B5_DESIGN, B5_PRED, _b5_draw(6.0)(rng))) == "PASS" for _ in range(POWER_RUNS)])
    assert passes > 0.9
    comps = cosine.judge_b5(B5_DESIGN, B5_PRED, _b5_draw(6.0)(rng))
    assert comps[0].predicted == pytest.approx(0.01) and comps[2].predicted == "E_cos > E_lin"


# ============================================================================ B6: KS ratio of a known law
class _Uniform:
    """A law with a ``cdf`` method as ``b6_reading`` uses it (``KernelLaw.cdf``): uniform on [shift, 1 + shift]."""

    def __init__(self, shift: float = 0.0, mass: float = 1.0):
        self.shift, self.mass = shift, mass

    def cdf(self, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray, float]:
        x = np.linspace(lo, hi, 4001)
        cdf = self.mass * np.clip(x - self.shift, 0.0, 1.0)
        return x, cdf, float(cdf[-1])


B6_N, B6_TRIALS = 128, (8, 4)
B6_DESIGN = dict(n=B6_N, trials=B6_TRIALS, configs=[("u", 2.0), ("u", 0.5)])


def _b6_pred(**kw) -> dict:
    return {f"u_c{c}": dict(law=_Uniform(**kw)) for _, c in B6_DESIGN["configs"]}


def _rigid(rng, n: int, trials: int) -> np.ndarray:
    """Uniform 'eigenvalues' whose ECDF error is O(1/n): quantiles moved by a random smooth field of size 1/n."""
    k = (np.arange(1, n + 1) - 0.5) / n
    z = rng.standard_normal((trials, 1))
    return np.sort(k + z * np.sin(np.pi * k) / n + 0.2 * rng.uniform(-1, 1, (trials, n)) / n, axis=1)


def _b6_draw(rigid: bool = True):
    def draw(rng):
        sp = {}
        for _, c in B6_DESIGN["configs"]:
            if rigid:
                sp[f"u_c{c}"] = (_rigid(rng, B6_N, B6_TRIALS[0]), _rigid(rng, 2 * B6_N, B6_TRIALS[1]))
            else:  # i.i.d. draws: KS ~ n^-1/2, the rule's boundary
                sp[f"u_c{c}"] = (rng.uniform(size=(B6_TRIALS[0], B6_N)), rng.uniform(size=(B6_TRIALS[1], 2 * B6_N)))
        return dict(spectra=sp)
    return draw


def _judge_b6(design, prediction, measurement):
    """B6's judge on what its read step gives it (as Claim.run composes them)."""
    return spectrum.judge_b6(design, prediction, spectrum.read_b6(design, prediction, measurement))


def test_b6_false_fail_rate():
    # rigid: what the theory says (ratio ~0.5); i.i.d.: ratio ~0.71 (the bound 2^-1/2 plus a finite-n excess)
    counts = _fail_counts([_b6_draw(True), _b6_draw(False)], _judge_b6, B6_DESIGN, _b6_pred(), seed=61)
    _assert_false_fail_rate(counts)


def test_b6_power_against_a_wrong_law():
    assert _power(_b6_draw(), _judge_b6, B6_DESIGN, _b6_pred(shift=0.1), seed=62) > 0.9
    # a density missing 2% of its mass fails the exact quadrature comparison
    comps = _judge_b6(B6_DESIGN, _b6_pred(mass=0.98), _b6_draw()(np.random.default_rng(63)))
    assert judge(comps) == "FAIL" and not comps[1].passed and comps[1].kind == "exact"


def test_b6_read_step_pairs_once_with_the_control():
    """read_b6 adds each configuration's reading (and the wrong law's KS ratio where predicted) to the measurement;
    the judge reads it and computes no KS distance of its own."""
    m = _b6_draw()(np.random.default_rng(65))
    pred = {k: dict(v, wrong=_Uniform(shift=0.1)) for k, v in _b6_pred().items()}
    ev = spectrum.read_b6(B6_DESIGN, pred, m)
    assert set(ev) == {"spectra", "readings"} and ev["spectra"] is m["spectra"]
    for key, r in ev["readings"].items():
        assert r["ratio"] == spectrum.b6_reading(_Uniform(), m["spectra"][key])["ratio"]
        assert r["control"] > r["ratio"]  # the wrong law does not shrink
    assert spectrum.read_b6(B6_DESIGN, _b6_pred(), m)["readings"]["u_c2.0"]["control"] is None
    bad = {k: dict(r, ratio=1.5, se_ratio=0.01) for k, r in ev["readings"].items()}
    assert judge(spectrum.judge_b6(B6_DESIGN, pred, dict(ev, readings=bad))) == "FAIL"


def test_b6_reading_matches_the_ks_helper():
    sp = _b6_draw()(np.random.default_rng(64))["spectra"]["u_c2.0"]
    r = spectrum.b6_reading(_Uniform(), sp)
    x, cdf, _ = _Uniform().cdf(r["lo"], r["hi"])
    assert r["ks_n"][0] == spectrum._ks(sp[0][0], x, cdf)
    assert r["ratio"] == pytest.approx(r["ks_2n"].mean() / r["ks_n"].mean())
    assert 0.3 < r["ratio"] < 0.7
