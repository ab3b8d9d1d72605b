"""Smoke tests of the paper-B core checks (B1, B2, B3, B5, B6) at tiny sizes, and of their tolerance rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

from verify.checks import _paper_b as core
from verify.checks import paper_b_attention_vs_ridge as avr
from verify.checks import paper_b_spectrum as spectrum
from verify.claim import claim_of
from verify.context import CheckContext
from verify.results import Comparison, Verdict
from verify.claim import run_check
from verify.verdicts import judged


def _run(cid: str, tmp_path):
    spec = claim_of(cid)
    ctx = CheckContext(profile="smoke", report_dir=tmp_path, seed=1)
    return run_check(spec, ctx)


def _run_nofig(cid: str, seed: int = 1):
    spec = claim_of(cid)
    return run_check(spec, CheckContext(profile="smoke", report_dir=None, seed=seed))


def _assert_well_formed(res):
    assert res.verdict in (Verdict.PASS, Verdict.FAIL), res.error
    assert res.comparisons, "a check must produce comparisons"
    for c in res.comparisons:
        assert isinstance(c, Comparison)
        assert isinstance(c.tolerance, str) and c.tolerance
        assert isinstance(c.passed, bool)
    assert res.seeds, "seeds must be recorded"
    assert res.figures and all(f.endswith(".png") for f in res.figures)
    assert res.notes


@pytest.mark.parametrize("cid", ["B1", "B2", "B3", "B5", "B6"])
def test_check_smoke_tiny(cid, tmp_path):
    res = _run(cid, tmp_path)
    _assert_well_formed(res)
    if cid == "B1":
        names = [c.name for c in res.comparisons]
        assert any(n.startswith("1a") for n in names)
        assert any(n.startswith("1b") for n in names)
        assert any(n.startswith("1c") for n in names)
        assert sum("shrinks" in n for n in names) == 3
        assert "1a" in res.data and "1b" in res.data and "1c" in res.data
    names = [c.name for c in res.comparisons]
    if cid == "B3":  # the gamma -> 0 identity at p/n = 1/4 is reported, not judged
        assert not any("= 0 (both" in n for n in names)
        assert "small_gamma_identity" in res.data["c0.25"] and "Not judged" in res.notes
    if cid == "B5":  # equal nu holds by construction: data, not a comparison
        assert not any("equal nu" in n for n in names) and "equal_nu_rel_diff" in res.data
    if cid == "B6":  # the quadrature mass is its own comparison
        assert any("mass of theory.kernel_density" in n for n in names)
        assert not any("mass" in c.tolerance and "KS" in c.name for c in res.comparisons)


def test_check_reproducible_seeds():
    a = _run_nofig("B5")
    b = _run_nofig("B5")
    assert a.seeds == b.seeds
    assert [c.measured for c in a.comparisons] == [c.measured for c in b.comparisons]
    c = _run_nofig("B5", seed=2)
    assert c.seeds != a.seeds


# ---------------------------------------------------------------------------------------------
# the tolerance rules can fail
# ---------------------------------------------------------------------------------------------
def _alone(c):
    """``c`` judged on its own (a check of one comparison: Holm over one test)."""
    return judged([c]).comparisons[0]


def test_fs_rule_passes_shrinking_gap_and_fails_constant_offset():
    ok, q = core.fs_comparison("x", 1.0, (1.02, 0.001), (1.01, 0.001), (100, 200))
    assert _alone(ok).passed and math.isclose(q["allowance"], 0.02 / math.sqrt(2))
    bad, _ = core.fs_comparison("x", 1.0, (1.05, 0.001), (1.05, 0.001), (100, 200))
    assert not _alone(bad).passed
    assert "3 hypot(SE_l, q SE_s)" in bad.tolerance


def test_shrink_rule_fails_when_gap_grows():
    pts_grow = [dict(pred=1.0, m_s=1.01, se_s=0.001, m_l=1.05, se_l=0.001)]
    assert not _alone(core.shrink_comparison("s", pts_grow, 100, 200)).passed
    pts_ok = [dict(pred=1.0, m_s=1.05, se_s=0.001, m_l=1.02, se_l=0.001)]
    assert _alone(core.shrink_comparison("s", pts_ok, 100, 200)).passed
    # a constant gap does not decay like n^-1/2: fails
    pts_const = [dict(pred=1.0, m_s=1.05, se_s=0.001, m_l=1.05, se_l=0.001)]
    assert not _alone(core.shrink_comparison("s", pts_const, 100, 200)).passed
    # a gap decaying exactly like n^-1/2 passes
    pts_half = [dict(pred=1.0, m_s=1.05, se_s=0.001, m_l=1.0 + 0.05 / math.sqrt(2), se_l=0.001)]
    assert _alone(core.shrink_comparison("s", pts_half, 100, 200)).passed


def test_paired_rule():
    rng = np.random.default_rng(0)
    assert _alone(core.paired_positive("d", 0.1, 0.1 + 0.01 * rng.standard_normal(20))).passed
    assert not _alone(core.paired_positive("d", 0.0, 0.01 * rng.standard_normal(20))).passed


def test_per_trial_slopes_exact_power_law():
    g = np.logspace(-4, -2, 5)
    tr = np.vstack([2.0 * g**0.5, 3.0 * g**2])
    assert np.allclose(avr._per_trial_slopes(g, tr), [0.5, 2.0])


def test_ks_distance_uniform():
    x = np.linspace(0, 1, 1001)
    ev = (np.arange(1, 101) - 0.5) / 100
    assert spectrum._ks(ev, x, x) == pytest.approx(0.005, abs=1e-9)


def test_edge_flag():
    assert "NEAR c=1" in core.edge_flag(1.0, 1e-5, 256)
    assert core.edge_flag(4.0, 1e-5, 256) == ""


def test_kernel_spectra_do_not_depend_on_n_jobs():
    a = spectrum._kernel_spectra(7, 24, 48, 3, "tanh", 1)
    b = spectrum._kernel_spectra(7, 24, 48, 3, "tanh", 2)
    assert a.shape == (3, 24)
    np.testing.assert_array_equal(a, b)
