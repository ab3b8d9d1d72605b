"""Smoke and logic tests of checks B4 and B7 (verify/checks/paper_b_structured.py, paper_b_alignment.py) at tiny size."""

from __future__ import annotations

import math

import numpy as np
import pytest

from verify.checks import paper_b_alignment as alignment
from verify.checks import paper_b_structured as mod
from verify.checks import _structured as grid
from verify.claim import claim_of
from verify.context import CheckContext
from verify.results import Verdict
from verify.claim import run_check

_spec = claim_of


@pytest.mark.parametrize("cid", ["B4", "B7"])
def test_check_runs_at_tiny_size(tmp_path, cid):
    res = run_check(_spec(cid), CheckContext(profile="smoke", report_dir=tmp_path, n_jobs=1))
    assert res.verdict in (Verdict.PASS, Verdict.FAIL, Verdict.INCONCLUSIVE), res.error
    assert res.comparisons
    assert res.seeds
    assert res.figures and all(tmp_path.joinpath(p).exists() or __import__("os").path.exists(p) for p in res.figures)
    for cp in res.comparisons:
        assert cp.tolerance
    if cid == "B7":
        assert {"grid", "kappa_max"} <= set(res.data)
        # at p = 32 every strong aligned spike is outside the declared regime: reported, not judged
        assert any(not r["inside_regime"] for r in res.data["grid"])
        true_k = [cp for cp in res.comparisons if not cp.name.startswith("[linearised kernel]")]
        lin_k = [cp for cp in res.comparisons if cp.name.startswith("[linearised kernel]")]
        assert all("kappa=" in cp.name for cp in true_k)
        # every grid configuration is judged against the linearised-kernel simulation
        assert len(lin_k) == len(res.data["grid"])
        assert len(true_k) == sum(r["inside_regime"] for r in res.data["grid"])
        assert "INFORMATIONAL" in res.notes
        # the corrected null system is the one judged; SPEC's is reported alongside
        assert all(r["theory"] != r["theory_spec"] for r in res.data["grid"])
        assert set(res.data["null_systems"]) == {"true_inside", "linearised_all"}
        assert "kappa" in res.notes and "SPEC" in res.notes
    else:
        assert {"theory", "reversal", "simulation"} <= set(res.data)


def test_finite_size_rule_logic():
    """B7's points read the shared finite-size rule at p = 256 vs 2p = 512."""
    from verify.checks._finite_size import finite_size_test

    # converging towards the prediction like p^-1/2 or faster: passes
    t = finite_size_test(1.0, 1.10, 0.001, 1.05, 0.001, 256 / 512)
    rule = t.rule("p=256", "p=512")
    assert t.passed and t.allowance == pytest.approx(0.10 / math.sqrt(2))
    assert "hypot(SE_l, q SE_s)" in rule and "p=256" in rule and "p=512" in rule
    assert t.comparison("g", 1.0, 1.05, 0.001).p_fail > 0.5  # the verdict reads the bound test's p-value (Holm)
    # stable gap far outside the noise, not shrinking: fails
    t = finite_size_test(1.0, 1.10, 0.001, 1.10, 0.001, 256 / 512)
    assert not t.passed and t.comparison("g", 1.0, 1.10, 0.001).p_fail < 1e-12
    # gap growing with size: fails
    assert not finite_size_test(1.0, 1.01, 0.001, 1.20, 0.001, 256 / 512).passed


def test_reversal_scan_finds_crossing():
    grid = np.logspace(-3, 2, 41)
    r = alignment._reversal_scan(0.5, 1.0, 4.0, grid)
    assert r["gamma_star"] is not None and 0.1 < r["gamma_star"] < 10
    assert r["min_ratio"] < 1 < r["ratio_small_gamma"]


def test_linearised_mc_shares_x_with_true_mc():
    """With f = identity the true kernel IS the linearised one (a1 = 1, s_f = 0): same seeds -> same errors."""
    from numerics import MonteCarloSettings, simulate_model

    g, settings = np.array([0.1, 1.0]), MonteCarloSettings(3, 11)
    for spike in (grid.SPIKE_NONE, (4.0, "aligned")):
        model = mod.attention_model(2.0, 1.0, spike, activation="identity")
        lin = simulate_model([model], 16, g, settings, kind=("linearised",))["linearised"][0]
        _, _, true = simulate_model(model, 16, g, settings, return_trials=True)
        np.testing.assert_allclose(lin, true, rtol=1e-9)


def test_paper_profile_sizes_keep_the_finite_size_pair():
    prof = grid.STRUCTURED_PROFILES["paper"]
    assert mod.sizes_at(prof, 0.5) == ((512, 1024), 24)
    assert mod.sizes_at(prof, 2.0) == ((512, 1024), 32)
    for c in prof.cs:
        (p1, p2), tr = mod.sizes_at(prof, c)
        assert p2 == 2 * p1 and tr >= 16  # the p vs 2p rule of the module docstring
    assert (4.0, "orthogonal") in prof.spikes and (4.0, "aligned") in prof.spikes and grid.SPIKE_NONE in prof.spikes
    assert "c=0.5: 24 trials at p=512 and p=1024" in mod.sizes_text(prof)
