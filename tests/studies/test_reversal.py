"""Study B4-rev (studies/reversal.py, its fits in studies/decay_fits.py): the decay fit, the pure readings on
synthetic trials, the command line.

The judge reads trial arrays in the structure ``simulate_reversal`` returns; here they are drawn around a
hand-made theory (numbers of the size of the measured ones, the solver is not run) with a known truth
``E_att - E_RR = limit + A p^-beta`` and a per-trial SD that shrinks with ``p``.  Measured: the FAIL rate when
the truth is the one the comparisons state (the reversal at the largest ``p`` is real, the decay exponent is 1):
at most ``ALPHA_CHECK`` (and, more resolving, 0.05) plus binomial slack; the power when the exponent is 0.35
(what the strength-8 erf setting shows).  The study is not a claim of ``python -m verify``; the rates say
what its per-comparison readings mean.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from conftest import max_false_fails
from studies import reversal as mod
from studies.reversal import main as cli_main
from verify.verdicts import ALPHA_CHECK, judge, judged

PS = (128, 256, 512, 1024)
TRIALS = (96, 48, 24, 12)
SD = {128: 0.014, 256: 0.011, 512: 0.007, 1024: 0.0045}  # per-trial SD of the paired difference (measured size)
RUNS = 300
DESIGN = mod.RevDesign(activations=("erf",), cs=(1 / 3,), snrs=(1.0,), strengths=(2.0,), gammas=(1e-3,),
                       ps=PS, trials=TRIALS, linearised=True)
SETTING = ("erf", 1 / 3, 1.0, 2.0)
LIMIT, E_RR = 0.0009, 1 / 3


def _prediction(limit: float = LIMIT) -> mod.RevPrediction:
    return mod.RevPrediction(att={SETTING: np.array([E_RR + limit])}, ridge={(1 / 3, 1.0): np.array([E_RR])},
                             kappa={(1.0, 2.0, p): 5.0 / math.sqrt(p) for p in PS})


def _draw(rng: np.random.Generator, amp: float = -2.8, beta: float = 1.0, limit: float = LIMIT) -> dict:
    """Cells ``(act, c, snr, p) -> {"true", "linearised", "ridge"}`` with ``E_att - E_RR = limit + amp p^-beta``."""
    cells = {}
    for p, t in zip(PS, TRIALS):
        rr = E_RR + 0.01 * rng.standard_normal((t, 1))
        d = limit + amp * p ** (-beta) + SD[p] * rng.standard_normal((t, 1))
        lin = rr + limit + SD[p] * rng.standard_normal((t, 1))
        cells[("erf", 1 / 3, 1.0, p)] = {"true": (rr + d)[None], "linearised": lin[None], "ridge": rr}
    return cells




# ============================================================================ the fit
def test_fit_recovers_an_exact_power_law():
    f = mod.fit_power_law([100, 200, 400, 800], [-0.01, -0.005, -0.0025, -0.00125], [1e-4] * 4)
    assert f.exponent == pytest.approx(1.0, abs=1e-4) and f.amplitude == pytest.approx(-1.0, rel=1e-3)
    assert f.lo < 1.0 < f.hi and f.bounded and f.chi2 < 1e-6 and f.dof == 2
    assert np.allclose(f.at([100, 800]), [-0.01, -0.00125], rtol=1e-3)


def test_fit_interval_covers_the_true_exponent():
    """The 95 % profile interval covers the true exponent in about 95 % of noisy draws (measured-size truth)."""
    rng = np.random.default_rng(1)
    ps = np.array(PS, float)
    se = np.array([SD[p] / math.sqrt(t) for p, t in zip(PS, TRIALS)])
    runs = 600
    cover = 0
    for _ in range(runs):
        f = mod.fit_power_law(ps, -2.8 / ps + se * rng.standard_normal(4), se)
        cover += f.lo <= 1.0 <= f.hi
    lo_ok = stats.binom.ppf(1e-4, runs, 0.95)
    assert cover >= lo_ok, f"coverage {cover / runs:.3f}"


def test_fit_needs_three_sizes_and_flags_an_unbounded_interval():
    with pytest.raises(ValueError, match="at least 3"):
        mod.fit_power_law([1, 2], [1, 2], [1, 1])
    f = mod.fit_power_law([128, 256, 512], [1e-4, -1e-4, 1e-4], [1e-3] * 3)  # pure noise: any exponent fits
    assert not f.bounded


def test_crossing_size():
    f = mod.PowerFit(amplitude=-1.0, exponent=1.0, lo=0.8, hi=1.2, chi2=0.0, dof=2, bounded=True)
    assert mod.crossing_size(f, 0.001) == pytest.approx(1000.0)
    assert mod.crossing_size(f, -0.001) == math.inf  # the limit itself is a reversal
    assert mod.crossing_size(replace_amp(f, 1.0), 0.001) is None  # attention worse at finite p: no reversal
    assert mod.crossing_size(replace_amp(f, -1e-4), 0.001) is None  # below zero nowhere for p > 1


def replace_amp(f: mod.PowerFit, amp: float) -> mod.PowerFit:
    from dataclasses import replace

    return replace(f, amplitude=amp)


# ============================================================================ the judge
def test_judge_structure_and_readings():
    comps = mod.judge_reversal(DESIGN, _prediction(), _draw(np.random.default_rng(0)))
    assert [c.kind for c in comps] == ["direction", "consistency"]
    assert "p=1024" in comps[0].name and comps[0].predicted == pytest.approx(LIMIT)
    assert comps[1].predicted == 1.0 and "profile interval" in comps[1].tolerance
    r = mod.read_setting(DESIGN, _prediction(), _draw(np.random.default_rng(0)), SETTING)
    assert set(r.stats) == set(PS) and r.fit_lin is not None and r.fit_linerr is not None
    assert r.stats[128]["var_gain"][0] > 1.0


def test_judge_false_fail_rate_when_the_readings_are_true():
    """Truth: the reversal at p = 1024 is real (d = 0.0009 - 4.0/1024 = -0.003) and the decay exponent is 1."""
    rng = np.random.default_rng(2)
    pred = _prediction()
    at_check = at_05 = 0
    for _ in range(RUNS):
        comps = mod.judge_reversal(DESIGN, pred, _draw(rng, amp=-4.0, beta=1.0))
        at_check += judge(comps) == "FAIL"
        at_05 += judge(comps, alpha=0.05) == "FAIL"
    assert at_check <= max_false_fails(ALPHA_CHECK, RUNS, tail=1e-4)
    assert at_05 <= max_false_fails(0.05, RUNS, tail=1e-4)


def test_judge_power_against_a_slow_decay():
    """Truth: exponent 0.35 (the erf, strength-8 shape): the exponent comparison FAILs in most draws."""
    rng = np.random.default_rng(3)
    pred = _prediction(limit=0.0001)
    fails = sum(judged(mod.judge_reversal(DESIGN, pred, _draw(rng, amp=-0.336, beta=0.35, limit=0.0001)))
                .comparisons[1].outcome == "FAIL" for _ in range(100))
    assert fails >= 90


def test_describe_and_tables():
    cells = _draw(np.random.default_rng(4))
    comps = mod.judge_reversal(DESIGN, _prediction(), cells)
    notes, data = mod.describe_reversal(DESIGN, _prediction(), cells, comps)
    assert "Study B4-rev" in notes and "p*" in notes
    assert data["table_md"].count("\n") == 2 and "p=1024" in data["table_md"]
    assert "att-lin" in data["table_linearisation_md"]
    assert len(data["rows"]) == len(PS) and {"d", "se_d", "b_opt", "var_gain", "lin_err"} <= set(data["rows"][0])
    assert [row["trials"] for row in data["rows"]] == list(TRIALS)
    assert data["fits"][0]["fit"]["dof"] == 2


def test_design_validation():
    with pytest.raises(ValueError, match="same length"):
        mod.RevDesign(activations=("erf",), cs=(0.5,), snrs=(1.0,), strengths=(2.0,), gammas=(1e-3,),
                      ps=(16, 32), trials=(3,))
    with pytest.raises(ValueError, match="gamma_ref"):
        mod.RevDesign(activations=("erf",), cs=(0.5,), snrs=(1.0,), strengths=(2.0,), gammas=(1e-2,),
                      ps=(16, 32, 64), trials=(3, 3, 3))


# ============================================================================ the run
def test_study_runs_at_tiny_size(tmp_path, capsys):
    args = ["--base", "smoke", "--cache-dir", "none", "--jobs", "1", "--json", str(tmp_path / "out.json"),
            "--figure", str(tmp_path / "fig.png")]
    assert cli_main(args) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert len(out["readings"]) == 2 * len(mod.REVERSAL_DESIGNS["smoke"].settings)
    assert out["seeds"] and (tmp_path / "fig.png").stat().st_size > 0
    assert {"rows", "fits", "table_md", "design"} <= set(out["data"])
    assert "| reading |" in capsys.readouterr().out


def test_command_line_takes_a_custom_grid(tmp_path, capsys):
    args = ["--base", "smoke", "--ps", "16", "32", "48", "--trials", "3", "3", "3", "--no-linearised",
            "--cache-dir", str(tmp_path / "c"), "--json", str(tmp_path / "out.json"), "--jobs", "1"]
    assert cli_main(args) == 0
    out = capsys.readouterr().out
    assert "| setting |" in out and "p=48" in out
    assert (tmp_path / "out.json").exists()


def test_command_line_runs_without_a_cache(tmp_path, monkeypatch, capsys):
    """``python -m studies.reversal --base smoke --cache-dir none``: tables printed, nothing written."""
    monkeypatch.chdir(tmp_path)
    assert cli_main(["--base", "smoke", "--cache-dir", "none", "--jobs", "1"]) == 0
    assert "| setting |" in capsys.readouterr().out
    assert not any(tmp_path.iterdir())  # "none" is no cache, not a directory named none
