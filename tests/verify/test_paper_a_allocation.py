"""Paper A's replicate allocation: the pilot's counts reach the sweep, the seeds stay those of an equal design."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from numerics.allocation import allocate_replicates
from verify.checks import _paper_a_numerics as numerics_a
from verify.checks import paper_a_rates as rates
from verify.context import CheckContext


@pytest.fixture
def pilot(monkeypatch):
    """A smoke-profile pilot for A2 (noise falling across the levels, cost rising)."""
    design = rates.design_a2(CheckContext(profile="smoke", seed=0))
    data = {"A2": {"smoke": {g.label: {"M": list(g.M), "sd": [0.4, 0.2, 0.1], "cost": [1.0, 2.0, 8.0]}
                             for g in design.groups}}}
    monkeypatch.setattr(numerics_a, "_allocation_pilot", lambda: data)
    return data


def test_the_committed_pilot_matches_the_designs_it_allocates():
    """Every (check, profile) of verify/checks/allocation_pilot.json is on its design's M levels (else the
    design raises, naming the command that regenerates it)."""
    pilot = json.loads(numerics_a.ALLOCATION_PILOT.read_text())
    designs = {"A2": rates.design_a2, "A3": rates.design_a3, "A4": rates.design_a4}
    for check, by_profile in pilot.items():
        if check.startswith("_"):
            continue
        for profile in by_profile:
            design = designs[check](CheckContext(profile=profile, seed=0))
            assert all(g.reps is not None and min(g.reps) >= numerics_a.ALLOCATION_MIN for g in design.groups)


def test_design_takes_the_pilot_counts(pilot):
    design = rates.design_a2(CheckContext(profile="smoke", seed=0))
    for g in design.groups:
        p = pilot["A2"]["smoke"][g.label]
        assert list(g.reps) == allocate_replicates(list(g.M), p["sd"], p["cost"], design.reps, min(4, design.reps)).tolist()
    assert "allocated" in numerics_a.allocation_text(design.groups, design.reps)


def test_a_stale_pilot_is_refused(pilot):
    for p in pilot["A2"]["smoke"].values():
        p["M"] = [m + 1 for m in p["M"]]
    with pytest.raises(ValueError, match="regenerate"):
        rates.design_a2(CheckContext(profile="smoke", seed=0))


def test_sweep_runs_the_allocated_counts_with_the_equal_designs_seeds(tmp_path):
    """Per-level counts reach the sweep; the first n replicates of a level are those of an equal design."""
    ctx = CheckContext(profile="smoke", seed=0, cache_dir=tmp_path, n_jobs=1)
    design = rates.design_a2(ctx)
    g = design.groups[:1]
    equal = numerics_a.simulate_groups(ctx, g, 2, "A2", design.trial_extra).groups[g[0].label]
    g = [dataclasses.replace(g[0], reps=[3, 2, 4])]
    alloc = numerics_a.simulate_groups(ctx, g, 2, "A2", design.trial_extra).groups[g[0].label]
    assert [len(alloc.errors[m]) for m in g[0].M] == [3, 2, 4]
    for m in g[0].M:
        assert np.allclose(alloc.errors[m][:2], equal.errors[m], rtol=0, atol=0)
