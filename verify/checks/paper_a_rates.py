"""Claims A2, A3 and A4 of paper A: convergence slopes of the ERM estimator, as :class:`verify.claim.Claim` objects.

Each claim: ``design`` (groups of ``(configuration, K levels, M levels)`` per profile, truths and noise levels from
design seeds), ``predict`` (a-priori error model, :func:`~verify.checks._paper_a_numerics.predict_groups`),
``simulate`` (cached sweep and slope fits, :func:`~verify.checks._paper_a_numerics.simulate_groups`), a pure
``judge``, ``describe`` and ``figure``; shared machinery and design choices: :mod:`verify.checks._paper_a_numerics`.

The rule of all three: the paper's claim is a rate as M -> infinity, and at finite M the error also carries terms
that vanish in the limit, so each curve is tested twice. (a) Its measured log-log slope equals the finite-M model's
(the law of the least-squares fit given the design: exact for d = 1, linearised in A for d > 1; noise integrated in
closed form, designs by Monte Carlo): two-sided tests per curve and pooled over the curves (a wrong rate moves them
all), with their power against slopes off by ``WRONG_RATE_OFFSET`` stated. (b) The a-priori model B(K) + V(K)/M,
continued on the design's K_M law to K x 2 and K x 4, has a deviation from the rate -2b/(2b+1) that shrinks at
least like K^-1/2 (a finite-size rule in K): the finite-M slope tends to the rate."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from theory import RateSetting
from verify.claim import Claim, register
from verify.context import CheckContext
from verify import figures as F
from verify.results import Comparison, with_key
from verify.verdicts import Judgement

from ._paper_a_limits import WRONG_RATE_OFFSET, consistency_power, limit_comparison, pooled_vs_finite, slope_vs_finite
from ._paper_a_numerics import (  # noqa: F401  (FINITE_SE, RANGE_Q, model_for, trial: re-exported)
    ESTIMATOR_STARTS, FINITE_SE, LOW_RANK_CONSTANT, PAPER_GRID_NOTE, RANGE_Q, REPLICATES, RIDGE_D, STARTS_NOTE,
    SweepLevels, allocation_text, apply_allocation, balanced_truth, cache_text, condition_text, design_text,
    estimator_class, inside_share, k_levels_to_M, model_for, predict_groups, rate_base, ratio_text, round_design,
    simulate_groups, slopes_text, trial)
from ._paper_a_records import (  # noqa: F401  (limit_window: re-exported)
    GroupDesign, GroupEvidence, RateDesign, RateMeasurement, RatePrediction, evidence, limit_window)


def with_estimator(claim: Claim, estimator: str, **params: Any) -> Claim:
    """A copy of the rate claim ``claim`` (A2, A3 or A4) whose trials fit ``estimator`` instead.

    ``estimator``: a :class:`numerics.InteractionEstimator` subclass as ``"module:Class"`` (importable by the workers),
    built with ``rank``, ``degree``, ``n_intervals``, ``random_state`` and ``params`` (JSON values: part of the cache
    keys). The predictions are unchanged: part (a) asks whether its slope is the least-squares estimator's finite-M
    slope, part (b) is the model's limit (docs/architecture.md, "Adding an estimator").
    """
    estimator_class(estimator)  # an unknown name fails here, not in a worker

    def design(ctx: CheckContext) -> RateDesign:
        d = claim.design(ctx)
        return dataclasses.replace(d, trial_extra={**d.trial_extra, "estimator": estimator,
                                                   "estimator_params": dict(params)})

    return dataclasses.replace(claim, design=design)


def _predict(ctx: CheckContext, design: RateDesign) -> RatePrediction:
    return predict_groups(ctx, design.groups, design.check_id, design.trial_extra, known=design.known)


def _simulate(ctx: CheckContext, design: RateDesign) -> RateMeasurement:
    return simulate_groups(ctx, design.groups, design.reps, design.check_id, design.trial_extra)


def _cost_text(design: RateDesign, prediction: RatePrediction, measurement: RateMeasurement) -> str:
    """The notes' last sentences: runtime, replicate counts, cache counts."""
    cost = prediction.cost + measurement.cost
    return (f"Runtime {cost.runtime:.1f}s, {allocation_text(design.groups, design.reps)}. "
            + cache_text(dict(cost.counts)) + ".")


def _data(groups: list[GroupEvidence], prediction: RatePrediction, measurement: RateMeasurement) -> dict:
    return {**{e.label: e.to_data() for e in groups}, "sweep": dict((prediction.cost + measurement.cost).counts)}


# ============================================================================================ A2
#: A2 quick runs this many times the replicates of A3/A4 (d = 1 fits are cheap): a P = 3 slope SE of ~0.010, power
#: ~0.9 against a slope off by WRONG_RATE_OFFSET (at factor 1 the SE is ~0.017 and the power ~0.3)
A2_REPLICATE_FACTOR = 3

#: the paper's reported slopes and gaps to theory (A2's notes)
A2_PAPER_SLOPES = {"P=3": (-0.81, 0.01), "P=8": (-0.899, 0.034)}


#: A2's two sweeps per profile, by the degree P of the B-spline truth (why these levels: docs/design_notes.md)
A2_LEVELS = {
    "smoke": {3: SweepLevels((8, 10, 12), 60), 8: SweepLevels((10, 11, 12), 80, n_knots=8)},
    "quick": {3: SweepLevels((20, 23, 26, 30, 35, 40), 500), 8: SweepLevels((13, 14, 15, 16, 17), 997, n_knots=8)},
    "paper": {3: SweepLevels((32, 36, 40, 46, 54, 64, 76), 1400),
              8: SweepLevels((12, 13, 14, 15, 16, 17), 550, n_knots=8)},
}


def design_a2(ctx: CheckContext) -> RateDesign:
    """B-spline truths of degree P = 3 and P = 8, d = 1, K_M an exact power of M, sigma balanced a priori."""
    size = ctx.profile
    groups = []
    for P, levels in A2_LEVELS[size].items():
        Ms = k_levels_to_M(list(levels.Ks), levels.M_lo, P - 1)
        cfg = balanced_truth(ctx, P, levels.Ks, Ms, "sigma", P, n_knots=levels.n_knots)
        groups.append(GroupDesign(label=f"P={P}", config=cfg, K=levels.Ks, M=Ms))
    extra = {"restarts": 1, "max_iter": 50, "n_pairs": 2**16, "ridge": 0.0}
    if size == "smoke":  # tiny M: some intervals are nearly empty, keep the estimator's tiny ridge
        extra.update(ridge=1e-10, n_pairs=2**13)
    reps = REPLICATES[size] * (A2_REPLICATE_FACTOR if size == "quick" else 1)
    return RateDesign("A2", size, apply_allocation(groups, "A2", size, reps), reps, extra)


def _finite_and_limit(groups: list[GroupEvidence], n_extra: int = 0) -> list[Comparison]:
    """(a) all groups' slopes equal their finite-M models (pooled: the headline) and each group's does; (b) each
    group's model slope tends to the rate. ``n_extra``: further tests of the check (Holm family, for the power)."""
    n = 1 + 2 * len(groups) + n_extra
    comps = [pooled_vs_finite(groups, n)]
    for e in groups:
        comps += [slope_vs_finite(e, n), limit_comparison(e.design, e.prediction)]
    return comps


def judge_a2(design: RateDesign, prediction: RatePrediction, measurement: RateMeasurement) -> list[Comparison]:
    """Per group (A2: per P; A4: per (N, r)): (a) slope = finite-M model's; (b) the model's slope tends to the rate."""
    return _finite_and_limit(evidence(design, prediction, measurement))


def _a2_line(e: GroupEvidence) -> str:
    g, p, m = e
    f = m.fit
    ps, pg = A2_PAPER_SLOPES[g.label]
    se, df = f.se_replicate
    fs, fse = p.finite_slope
    return (f"{g.label}: slope {f.slope:.4f} +- {se:.4f} (replicate SE, df {df:.0f}; bootstrap "
            f"[{f.ci_boot[0]:.4f}, {f.ci_boot[1]:.4f}]); finite-M model {fs:.4f} +- {fse:.4f}; rate "
            f"{g.theory_slope:.4f} (paper's slope {ps}, gap {pg}); a-priori model on the design "
            f"{p.slope:.4f}" + (f", beyond it (K x 4) {p.window_slopes[-1]:.4f}" if p.limit else ""))


def describe_a2(design: RateDesign, prediction: RatePrediction, measurement: RateMeasurement,
                comparisons: list[Comparison]) -> tuple[str, dict]:
    groups = evidence(design, prediction, measurement)
    notes = ("Design: " + "; ".join(design_text(g) for g in design.groups) + " (K_M = K_lo (M/M_lo)^(1/(2b+1)) "
             "exactly; estimator degree s = P-2; range = central 99.9% quantile range of the observed u; "
             f"ridge {design.trial_extra['ridge']:g}; "
             "d = 1; sigma balanced a priori at the middle level; truth and sigma from design seeds). "
             + " | ".join(_a2_line(e) for e in groups) + ". " + ratio_text(groups) + ". "
             + _cost_text(design, prediction, measurement))
    return notes, _data(groups, prediction, measurement)


#: a panel's line for each quantity of a group's comparisons
_PART_LABELS = {"finite-M": "(a) model", "limit": "(b) limit", "shift": "shift"}


def _plot_group(ax, e: GroupEvidence, color: str, lines: tuple[str, ...], status: str | None) -> None:
    """One panel: replicates (faint), level geometric means (3-SE bars), OLS fit, a-priori model, theory rate."""
    g, p, meas = e
    Ms = np.array(g.M, dtype=float)
    for m in g.M:
        ax.scatter([m] * len(meas.errors[m]), meas.errors[m], s=7, alpha=0.3, color=color, lw=0, zorder=2)
    logs = [np.log(np.asarray(meas.errors[m], dtype=float)) for m in g.M]
    mu = np.array([v.mean() for v in logs])
    sem = np.array([v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else 0.0 for v in logs])
    centre = np.exp(mu)
    lo, hi = centre - np.exp(mu - F.ERRORBAR_SE * sem), np.exp(mu + F.ERRORBAR_SE * sem) - centre
    ax.errorbar(Ms, centre, yerr=[lo, hi], fmt="o", color=color, mec=color, ms=4.5, zorder=4,
                label="simulation: geometric mean per M, ±3 SE (faint: replicates)")
    if meas.errors_known and g.config["d"] > 1:
        known = np.array([math.exp(np.mean(np.log(meas.errors_known[m]))) for m in g.M])
        ax.plot(Ms, known, "s", color="#777777", mfc="white", ms=4, zorder=3, label=r"same data, $A = A^*$ known")
    xs = F.dense_grid(Ms, per_decade=20)
    fit = meas.fit
    ax.plot(xs, np.exp(fit.intercept) * xs**fit.slope, "-", color=color, lw=1.4, label="OLS fit")
    ax.plot(Ms, p.curve, "+--", color=F.THEORY, lw=0.9, ms=6, label="a-priori error model at the design's (K, M)")
    mc = math.exp(np.mean(np.log(Ms)))
    ec = math.exp(fit.intercept) * mc**fit.slope
    ax.plot(xs, ec * (xs / mc) ** g.theory_slope, ":", color=F.THEORY, lw=1.4,
            label=r"theory rate $M^{-2\beta/(2\beta+1)}$ (through the fit's centre)")
    ax.set(xscale="log", yscale="log", xlabel="sample size M", ylabel=r"$\|\hat g - g^*\|^2_{L^2(\rho)}$")
    ax.set_title(f"{g.label.replace('sigma', 'σ')}\nσ = {g.config['sigma']:.3g}, K = {g.K[0]}…{g.K[-1]}",
                 fontsize=F.FONT["note"] + 0.5)
    se, _ = fit.se_replicate
    lines = (f"slope {fit.slope:.3f} ± {se:.3f} (SE)", f"theory {g.theory_slope:.3f}, a-priori {p.slope:.3f}", *lines)
    F.headroom(ax, 0.075 * (len(lines) + bool(status)))
    F.key_numbers(ax, lines, verdict=status, loc="upper right")


def _rate_figure(design: RateDesign, prediction: RatePrediction, measurement: RateMeasurement, judgement: Judgement,
                 title: str, rule: str, ncols: int | None = None):
    """One log-log panel per group (the finite-M model's slope, the outcomes of (a), (b) and the shift, and the
    measured shift where it is judged), ``ncols`` a row; a shared legend under the panels."""
    comps, groups = list(judgement.comparisons), evidence(design, prediction, measurement)
    n = len(groups)
    ncols = ncols or n
    fig, axes = F.subplots(int(math.ceil(n / ncols)), ncols, panel=(3.6, 3.1), extra=1.3)
    panels = list(axes.flat)
    for i, (g, ax) in enumerate(zip(groups, panels)):
        mine = with_key(comps, group=g.label)
        lines = (f"finite-M model {g.prediction.finite_slope[0]:.3f}",) + tuple(
            f"{_PART_LABELS[dict(c.key)['quantity']]}: {c.outcome}" for c in mine) + tuple(
            f"shift (estimated A) {c.measured:+.3f} ± {c.uncertainty:.3f}"
            + (f" (pred. {c.predicted:+.3f})" if c.predicted else "") for c in with_key(mine, quantity="shift"))
        _plot_group(ax, g, F.COLORS[i % len(F.COLORS)], lines, F.worst_outcome(mine))
    for ax in panels[n:]:
        ax.set_visible(False)
    F.legend(panels[0], outside=True, axes=panels[:n], ncol=2 if ncols <= 2 else 3)  # >= 4 entries
    configs = [e.design.config for e in groups]  # the settings line: the keys every group shares
    common = F.settings(**{k: configs[0][k] for k in ("d", "N", "r", "P") if len({c[k] for c in configs}) == 1})
    counts = (allocation_text(design.groups, design.reps) if all(g.reps is None for g in design.groups)
              else f"replicates per M allocated (slope variance of {design.reps} per M)")
    setting = f"{counts}; bars: ±3 SE of the mean log error; {rule}"
    F.suptitle(fig, design.check_id, title, "; ".join(x for x in (common, setting) if x), judgement.verdict)
    return fig


@F.paper_figure
def figure_a2(design: RateDesign, prediction: RatePrediction, measurement: RateMeasurement, judgement: Judgement):
    """Per P: error vs M (log-log), the fit, the a-priori model and the theory rate; the outcomes per panel."""
    return _rate_figure(design, prediction, measurement, judgement,
                        "estimator error vs sample size (d = 1, B-spline truths)",
                        "rule: (a) slope = finite-M model, (b) model -> rate")


A2 = register(Claim(id="A2", paper="A", design=design_a2, predict=_predict, simulate=_simulate, judge=judge_a2,
                    describe=describe_a2, figure=figure_a2, figure_name="slopes_P",
                    statement="Empirical convergence slope matches -4/5 for B-spline degree P=3 and -14/15 for P=8 "
                              "(consistent with the finite-M model given the design, which tends to the rate)"))


# ============================================================================================ A3
#: A3 part (a): noise level relative to the balanced one (the parametric term, ~ sigma^2, is 100x smaller)
A3_LOW_NOISE = 0.1

#: A3 spends CPU where the pooled test (weights 1/SE^2) gains: the d = 1 group (70-80 % of the weight, 1/5 of a d > 1
#: replicate's cost) runs ``A3_D1_REPLICATE_FACTOR`` x the replicates (quick), its model to SE ``A3_D1_FINITE_SE``;
#: sigma/10 groups with d > 1 (5-11 % each; model SE a small part of theirs): twice the profile's SE,
#: ``A3_SIGMA10_FINITE_SE``; balanced: the profile's (their shift is judged)
A3_D1_REPLICATE_FACTOR = {"smoke": 1, "quick": 3, "paper": 1}
A3_D1_FINITE_SE = {"quick": 0.005}
A3_SIGMA10_FINITE_SE = {"quick": 0.02, "paper": 0.01}


def design_a3(ctx: CheckContext) -> RateDesign:
    """(a) sigma/10 groups for several d (parametric term negligible); (b) balanced sigma for d > 1, A* known too."""
    size = ctx.profile
    base, Ks, Ms = rate_base(ctx, "A3")
    ds = {"smoke": [1, 2], "quick": [1, 5, 10], "paper": [1, 5, 30]}[size]
    low = {**base, "sigma": round_design(base["sigma"] * A3_LOW_NOISE)}
    groups_a = [GroupDesign(label=f"d={d}, sigma/10", config={**low, "d": d}, K=Ks, M=Ms,
                            rep_factor=A3_D1_REPLICATE_FACTOR[size] if d == 1 else 1,
                            finite_se=(A3_D1_FINITE_SE if d == 1 else A3_SIGMA10_FINITE_SE).get(size))
                for d in ds]
    groups_b = [GroupDesign(label=f"d={d}, balanced", config={**base, "d": d}, K=Ks, M=Ms) for d in ds[1:]]
    extra = {"restarts": ESTIMATOR_STARTS[size], "max_iter": 50, "n_pairs": 2**16, "ridge": RIDGE_D, "known_A": True}
    groups = apply_allocation(groups_a + groups_b, "A3", size, REPLICATES[size])
    return RateDesign("A3", size, groups, REPLICATES[size], extra, known=tuple(g.label for g in groups_b))


def _a3_shift(e: GroupEvidence, n_tests: int) -> Comparison:
    """The paired slope shift from estimating A (same data) equals the finite-M model's shift."""
    g, p, m = e
    k, n = inside_share(g)
    pred, pse = p.finite_shift
    se, df = m.shift_fit.se_replicate
    tot = math.hypot(se, pse)
    return Comparison.consistency(
        f"{g.label}: slope shift from estimating A (estimated-A minus A*-known, same data)", round(pred, 4),
        round(m.shift_fit.slope, 4), tot, df=df, key={"group": g.label, "quantity": "shift"},
        rule=f"low-rank condition holds at {k}/{n} M levels; predicted shift = finite-M model with the A-tangent "
             f"directions minus without, same designs (model SE {pse:.4f}); paired replicate-level SE; power against "
             f"a shift off by {WRONG_RATE_OFFSET}: {consistency_power(tot, df, n_tests):.0%}")


def _a3_judged_shift(g: GroupDesign) -> bool:
    """Part (b) applies: the low-rank condition fails at most M levels of the group."""
    k, n = inside_share(g)
    return 2 * k < n


def _a3_unjudged(groups_b: list[GroupEvidence]) -> list[str]:
    """The shifts inside the condition (reported, not judged), from the groups' numbers."""
    out = []
    for e in groups_b:
        if not _a3_judged_shift(e.design):
            k, n = inside_share(e.design)
            c = _a3_shift(e, 1)
            out.append(f"{c.name}: {c.measured} +- {c.uncertainty:.3g} vs {c.predicted} (inside the condition at "
                       f"{k}/{n} levels: reported, not judged)")
    return out


def judge_a3(design: RateDesign, prediction: RatePrediction, measurement: RateMeasurement) -> list[Comparison]:
    """(a) every slope equals its finite-M model and the model tends to the rate, for every d; (b) the paired
    shift from estimating A equals the model's where the low-rank condition fails."""
    groups = evidence(design, prediction, measurement)  # part (a)'s groups (sigma/10), then part (b)'s (balanced)
    judged_b = [e for e in groups if e.label in design.known and _a3_judged_shift(e.design)]
    comps = _finite_and_limit(groups, n_extra=len(judged_b))
    return comps + [_a3_shift(e, len(comps) + len(judged_b)) for e in judged_b]


def _balance_text(design: RateDesign) -> str:
    """The groups whose replicates or finite-M model SE differ from the profile's (A3)."""
    odd = [g for g in design.groups if g.rep_factor != 1 or g.finite_se is not None]
    if not odd:
        return ""
    se = FINITE_SE[design.size]
    return ("CPU spent where it buys the pooled test's certainty (weights 1/SE^2): " + "; ".join(
        f"{g.label}: " + ", ".join(([f"replicates x{g.rep_factor}"] if g.rep_factor != 1 else [])
                                   + [f"finite-M model to SE {g.finite_se or se}"]) for g in odd)
        + f"; the other groups' models to SE {se} per level. ")


def describe_a3(design: RateDesign, prediction: RatePrediction, measurement: RateMeasurement,
                comparisons: list[Comparison]) -> tuple[str, dict]:
    all_g = evidence(design, prediction, measurement)  # part (a)'s groups (sigma/10), then part (b)'s (balanced)
    groups_a = [e for e in all_g if e.label not in design.known]
    groups_b = [e for e in all_g if e.label in design.known]
    unjudged = _a3_unjudged(groups_b)
    size, first = design.size, groups_a[0].design
    base = groups_b[0].design.config if groups_b else first.config
    shifts = " | ".join(f"{g.label}: A*-known slope {m.fit.slope - m.shift_fit.slope:.4f}, shift "
                        f"{m.shift_fit.slope:+.4f} +- {m.shift_fit.se_replicate[0]:.4f} (finite-M model "
                        f"{p.finite_shift[0]:+.4f})" for g, p, m in all_g if m.shift_fit and p.finite_known)
    notes = (
        f"d in {[e.design.config['d'] for e in groups_a]}" + (" (quick: d = 10, not 30)" if size == "quick" else "")
        + f"; N = 5, P = 3, s = 1, K levels {list(first.K)}, M levels {list(first.M)}, sigma balanced for d = 1 "
        f"({base['sigma']:.4g}) and kept for all d; sigma/10 = {first.config['sigma']:.4g}; rank-1 A* estimated with "
        f"{ESTIMATOR_STARTS[size]} starts, relative ridge {RIDGE_D} (also in the model). " + _balance_text(design)
        + (PAPER_GRID_NOTE + STARTS_NOTE + " " if size == "paper" else "") + slopes_text(all_g) + " | " + shifts
        + ". " + ("Not judged: " + "; ".join(unjudged) + ". " if unjudged else "")
        + "Parametric term: " + condition_text(all_g) + ". " + ratio_text(all_g) + ". "
        + _cost_text(design, prediction, measurement))
    return notes, _data(all_g, prediction, measurement)


@F.paper_figure
def figure_a3(design: RateDesign, prediction: RatePrediction, measurement: RateMeasurement, judgement: Judgement):
    """(a) sigma/10 for several d (top row); (b) balanced sigma, with the A*-known fits (bottom row)."""
    return _rate_figure(design, prediction, measurement, judgement,
                        "error vs M (P = 3): σ/10 for several d (top), balanced σ (bottom)",
                        "rule: (a) slope = finite-M model, (b) model -> rate, "
                        "shift = model's where the condition fails",
                        ncols=len(design.groups) - len(design.known))


A3 = register(Claim(id="A3", paper="A", design=design_a3, predict=_predict, simulate=_simulate, judge=judge_a3,
                    describe=describe_a3, figure=figure_a3, figure_name="slopes_d",
                    statement="Dimension-free slopes: (a) where the parametric term is negligible, the slope for "
                              "every d is consistent with the finite-M model, which tends to the same rate; (b) "
                              "outside the low-rank condition, estimating A shifts the slope by the predicted "
                              "parametric shift"))


# ============================================================================================ A4
#: A4 runs this many times A3's replicates per level: the pooled test's power against WRONG_RATE_OFFSET is then ~0.9
#: at quick (~0.3 at factor 1) and ~1 at paper
A4_REPLICATE_FACTOR = {"smoke": 1, "quick": 2, "paper": 2}

#: A4's reference number of tokens: its M levels are the grid's; groups with fewer tokens get as many pairs
A4_REFERENCE_N = 5


def pairs_matched_M(M_levels: list[int], N: int, N_ref: int = A4_REFERENCE_N) -> list[int]:
    """M levels holding as many token pairs ``M N (N - 1)`` as ``N_ref`` tokens at ``M_levels`` (rounded up): the
    pre-asymptotic excess (near-empty end intervals, a noisy range quantile) follows the pairs, not the samples
    (``docs/findings.md``, A4).

    Same K levels for every group: K_M stays an exact power of M.
    """
    f = N_ref * (N_ref - 1) / (N * (N - 1))
    return [int(math.ceil(m * f - 1e-9)) for m in M_levels]


def design_a4(ctx: CheckContext) -> RateDesign:
    """Groups (N, r) at d = 2, each on a grid with the pairs of N = 5 at the common grid (:func:`pairs_matched_M`)."""
    size = ctx.profile
    base, Ks, Ms = rate_base(ctx, "A4")
    base = {**base, "d": 2}
    combos = [(3, 1), (5, 1)] if size == "smoke" else [(3, 1), (5, 1), (10, 1), (5, 2)]
    groups = [GroupDesign(label=f"N={N},r={r}", config={**base, "N": N, "r": r}, K=Ks, M=pairs_matched_M(Ms, N))
              for N, r in combos]
    reps = REPLICATES[size] * A4_REPLICATE_FACTOR[size]
    extra = {"restarts": ESTIMATOR_STARTS[size], "max_iter": 50, "n_pairs": 2**16, "ridge": RIDGE_D}
    return RateDesign("A4", size, apply_allocation(groups, "A4", size, reps), reps, extra)


#: A4's judge is A2's, per (N, r) group: the rate does not depend on N or r
judge_a4 = judge_a2


def _a4_design_text(design: RateDesign) -> str:
    size, groups = design.size, design.groups
    ref = next(g for g in groups if g.config["N"] == A4_REFERENCE_N)  # its M levels are the grid's
    return (
        f"(N, r) in {[(g.config['N'], g.config['r']) for g in groups]}, d = 2, P = 3, K levels {list(ref.K)}, "
        f"M levels {list(ref.M)} (K_M exact power of M) for N = {A4_REFERENCE_N}; "
        + "; ".join(f"{g.label}: M levels {list(g.M)}" for g in groups if g.M != ref.M)
        + f" (equal token pairs M N (N-1) in every group), sigma {ref.config['sigma']:.4g} (balanced for d=1, N=5), "
        f"{ESTIMATOR_STARTS[size]} estimator starts, relative ridge {RIDGE_D}. "
        + (PAPER_GRID_NOTE + STARTS_NOTE + " " if size == "paper" else ""))


def describe_a4(design: RateDesign, prediction: RatePrediction, measurement: RateMeasurement,
                comparisons: list[Comparison]) -> tuple[str, dict]:
    groups = evidence(design, prediction, measurement)
    share = {e.label: inside_share(e.design) for e in groups}
    need = {g.label: int(RateSetting(beta=2, r=g.config["r"], d=g.config["d"]).min_samples()) for g in design.groups}
    status = "; ".join(f"{g.label} (r d = {g.config['r'] * g.config['d']}): inside at {share[g.label][0]}/"
                       f"{share[g.label][1]} M levels (condition holds for M >= {need[g.label]})"
                       for g in design.groups)
    ref = groups[1]
    diffs = "; ".join(f"slope({e.label}) - slope({ref.label}) = "
                      f"{e.measurement.fit.slope - ref.measurement.fit.slope:+.4f} (model "
                      f"{e.prediction.finite_slope[0] - ref.prediction.finite_slope[0]:+.4f})"
                      for e in groups if e is not ref)
    notes = (_a4_design_text(design) + f"Condition per group (constant {LOW_RANK_CONSTANT}): " + status + ". "
             + slopes_text(groups) + ". Slope differences: " + diffs + ". " + condition_text(groups) + ". "
             + ratio_text(groups) + ". " + _cost_text(design, prediction, measurement))
    data = _data(groups, prediction, measurement)
    data["inside_levels"] = {lab: list(v) for lab, v in share.items()}
    return notes, data


@F.paper_figure
def figure_a4(design: RateDesign, prediction: RatePrediction, measurement: RateMeasurement, judgement: Judgement):
    """Per (N, r): error vs M, the fit, the models; the outcomes of (a) and (b)."""
    return _rate_figure(design, prediction, measurement, judgement, "error vs M for several N and r (P = 3, d = 2)",
                        "rule: (a) slope = finite-M model, (b) model -> rate; M levels hold equal token pairs", ncols=2)


A4 = register(Claim(id="A4", paper="A", design=design_a4, predict=_predict, simulate=_simulate, judge=judge_a4,
                    describe=describe_a4, figure=figure_a4, figure_name="slopes_N_r",
                    statement="The rate does not depend on N or on r inside the low-rank condition (each slope "
                              "consistent with the finite-M model, which tends to the rate)"))
