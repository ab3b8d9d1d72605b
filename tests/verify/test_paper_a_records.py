"""Paper A's rate records: frozen, and every number predict derives is the one the judge and the notes read."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from numerics.slopes import design_slope
from verify.checks._paper_a_numerics import k_levels_to_M
from verify.checks._paper_a_records import (GroupDesign, GroupMeasurement, RateDesign, RateMeasurement, RatePrediction,
                                           SweepCost, apriori_curve, evidence, group_prediction, weighted_slope)

KS = (20, 23, 26, 30)
MS = tuple(k_levels_to_M(list(KS), 500, 2))
CFG = {"d": 2, "N": 5, "r": 1, "P": 3, "n_knots": 6, "sigma": 1e-2, "truth_seed": 0, "law": "uniform"}


def _levels(slope: float, se: float = 0.01) -> list[dict]:
    return [{"log_error": slope * math.log(m), "se": se} for m in MS]


def test_design_is_frozen_and_owns_its_configuration():
    cfg = dict(CFG)
    g = GroupDesign("g", cfg, list(KS), list(MS))
    cfg["sigma"] = 1.0
    assert g.config["sigma"] == 1e-2 and g.K == KS and g.M == MS
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.label = "h"  # type: ignore[misc]
    assert GroupDesign("g", CFG, KS, MS, reps=[4, 4, 5, 6]).replicates(3) == [4, 4, 5, 6]


def test_prediction_derives_each_number_once():
    g = GroupDesign("g", CFG, KS, MS)
    apriori = [{"B": 1e-2 * K**-4.0, "V_np": 1e-6 * K, "V_par": 1e-7, "p": 3} for K in KS]
    p = group_prediction(g, apriori, _levels(-0.8), _levels(-0.78))
    curve = apriori_curve(apriori, MS, 5)
    assert np.allclose(p.curve, curve) and p.slope == pytest.approx(design_slope(list(MS), curve))
    assert p.slope_np == pytest.approx(design_slope(list(MS), apriori_curve(apriori, MS, 5, parametric=False)))
    assert p.finite_slope[0] == pytest.approx(-0.8)
    assert p.finite_shift[0] == pytest.approx(-0.02)
    assert p.finite_shift[1] == pytest.approx(math.sqrt(2) * weighted_slope(MS, _levels(-0.8))[1])
    assert p.window_slopes == (p.slope,)  # no windows predicted: the design's slope only


def test_evidence_pairs_the_records_by_label_in_design_order():
    ga, gb = GroupDesign("a", CFG, KS, MS), GroupDesign("b", CFG, KS, MS)
    design = RateDesign("A3", "quick", [ga, gb], 4, {}, known=("b",))
    fit = type("Fit", (), {})()
    pred = RatePrediction({"b": group_prediction(gb, [{"B": 1.0, "V_np": 1.0, "V_par": 0.0, "p": 1}] * 4),
                           "a": group_prediction(ga, [{"B": 2.0, "V_np": 1.0, "V_par": 0.0, "p": 1}] * 4)})
    meas = RateMeasurement({"a": GroupMeasurement({}, fit), "b": GroupMeasurement({}, fit)}, SweepCost(1.0, {}))
    rows = evidence(design, pred, meas)
    assert [e.label for e in rows] == ["a", "b"]
    assert rows[0].prediction is pred.groups["a"] and rows[1].measurement is meas.groups["b"]
    assert (SweepCost(1.0, {"x": {"n_computed": 1}}) + SweepCost(2.0, {"y": {}})).runtime == 3.0
