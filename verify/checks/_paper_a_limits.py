"""The finite-M and limit comparisons of paper A's rate claims (A2-A4), from each group's records.

(a) A measured slope against the finite-M model's (:func:`slope_vs_finite`), and all groups' deviations pooled
(:func:`pooled_vs_finite`); (b) the a-priori model's slope beyond the design tends to the rate (a finite-size rule in
``K``, :func:`limit_comparison`). The derivation of the model: ``docs/paper_a_estimator.md``."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from verify.results import Comparison
from verify.verdicts import ALPHA_CHECK

from ._paper_a_records import LIMIT_WINDOWS, GroupDesign, GroupEvidence, GroupPrediction, limit_window


#: a wrong rate the judges must detect: a slope off by this much (stated power of every finite-M comparison)
WRONG_RATE_OFFSET = 0.05

#: part (b), a finite-size rule in K: between the windows K x 2 and K x 4 the model's deviation from the rate must
#: shrink at least like K^-LIMIT_DECAY (its leading corrections, the parametric share V_par / (V_np K) and the
#: bias's next order, decay like 1/K; 1/2 is the slowest declared, as paper B's rule in n), up to 3 numerical SDs
LIMIT_DECAY = 0.5
#: numerical SD of a window slope of the a-priori model (measured 0.0008-0.0018 over prediction seeds, d = 1, 2, 10,
#: K = 80..160; docs/paper_a_finite_m.md)
WINDOW_SD = 0.002


def consistency_power(se: float, df: float | None, n_tests: int) -> float:
    """Power of a two-sided consistency test (level ``ALPHA_CHECK / n_tests``, Holm's first step: the least
    favourable) against a slope off by :data:`WRONG_RATE_OFFSET`, with standard error ``se``."""
    dist = stats.norm if df is None or not math.isfinite(df) else stats.t(df)
    c = float(dist.isf(ALPHA_CHECK / max(n_tests, 1) / 2))
    z = WRONG_RATE_OFFSET / se if se > 0 else math.inf
    return float(dist.sf(c - z) + dist.cdf(-c - z))


def slope_vs_finite(e: GroupEvidence, n_tests: int) -> Comparison:
    """The measured slope equals the finite-M model's (an identity for d = 1; linearised in A for d > 1)."""
    g = e.design
    _, tot, df = deviation(e)
    pred, pse = e.prediction.finite_slope
    what = ("exact law of the least-squares fit given the design, d = 1" if g.config["d"] == 1
            else "least squares linearised in A at A*, given the design")
    return Comparison.consistency(
        f"{g.label}: slope vs finite-M model", round(pred, 4), round(e.measurement.fit.slope, 4), tot, df=df,
        key={"group": g.label, "quantity": "finite-M"},
        rule=f"finite-M model E log err ({what}; model SE {pse:.4f}); replicate-level SE; power against a slope "
             f"off by {WRONG_RATE_OFFSET}: {consistency_power(tot, df, n_tests):.0%}")


def deviation(e: GroupEvidence) -> tuple[float, float, float]:
    """Measured slope minus the finite-M model's, its SE (replicate and model in quadrature) and df."""
    se, df = e.measurement.fit.se_replicate
    pred, pse = e.prediction.finite_slope
    return e.measurement.fit.slope - pred, math.hypot(se, pse), df


def pooled_vs_finite(groups: list[GroupEvidence], n_tests: int) -> Comparison:
    """All groups at once (the check's headline): the inverse-variance mean of (slope - finite-M model) is 0.  The
    alternative it is built for is a wrong rate, which moves every group's slope the same way; pooling the
    groups' deviations weighted by their inverse variances is the most powerful test of such a common offset.
    The weights are estimated (each SE has its replicate df), which makes ``1 / sum w`` too small: the SE carries
    Meier's (1953) first-order correction ``1 + 4 sum_g (w_g/W)(1 - w_g/W) / df_g``; ``df``: Welch-Satterthwaite."""
    dev = [deviation(g) for g in groups]
    w = np.array([1.0 / s**2 for _, s, _ in dev])
    dfs = np.array([f for _, _, f in dev])
    share = w / w.sum()
    mean = float(np.sum(w * [d for d, _, _ in dev]) / w.sum())
    se = float(math.sqrt((1.0 + 4.0 * np.sum(share * (1.0 - share) / dfs)) / w.sum()))
    parts = share**2 * np.array([s**2 for _, s, _ in dev])
    df = float(parts.sum() ** 2 / np.sum(parts**2 / dfs))
    return Comparison.consistency(
        "all groups: slope minus finite-M model (inverse-variance mean)", 0.0, round(mean, 4), se, df=df,
        headline=True, key={"group": "all", "quantity": "finite-M pooled"},
        rule=f"a wrong rate moves every slope the same way: weights 1/SE^2 over {len(groups)} groups; power "
             f"against every slope off by {WRONG_RATE_OFFSET}: {consistency_power(se, df, n_tests):.0%}")


def limit_comparison(g: GroupDesign, p: GroupPrediction) -> Comparison:
    """Part (b): the a-priori model's deviation from the rate shrinks beyond the design like a finite-size effect:
    with ``D1, D2`` the deviations of the model's slope on the windows ``K x 2`` and ``K x 4`` (the design's ``K_M`` law
    continued), ``q = 2^-LIMIT_DECAY``: PASS iff ``|D2| <= q |D1| + 3 WINDOW_SD hypot(1, q)``. A model whose slope tends
    to another limit at distance ``D`` fails once ``D (1 - q) > 3 WINDOW_SD hypot(1, q)``, i.e. from ``D ~ 0.025``."""
    slopes = p.window_slopes
    dev = [x - g.theory_slope for x in slopes]
    q = 2.0 ** -LIMIT_DECAY
    allowed = q * abs(dev[-2]) + 3 * WINDOW_SD * math.hypot(1.0, q)
    Ks, Ms = limit_window(g, LIMIT_WINDOWS[-1])
    return Comparison(
        name=f"{g.label}: model slope beyond the design -> -2b/(2b+1)", predicted=round(g.theory_slope, 4),
        measured=round(slopes[-1], 4), uncertainty=None, passed=abs(dev[-1]) <= allowed, kind="exact",
        key={"group": g.label, "quantity": "limit"},
        tolerance=(f"limit (finite-size rule in K): |deviation at K x 4| = {abs(dev[-1]):.4f} <= {q:.3f} |deviation at "
                   f"K x 2| + 3 x {WINDOW_SD} x {math.hypot(1.0, q):.3f} = {allowed:.4f} (K {Ks}, M {Ms}); deviation "
                   "from the rate on the design, K x 2, K x 4: " + ", ".join(f"{d:+.4f}" for d in dev)))
