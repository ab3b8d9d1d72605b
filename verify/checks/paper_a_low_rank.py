"""Paper A, claim A6: the low-rank condition marks where the rate holds (the parametric term at fixed M).
The rule: :func:`judge_a6`'s docstring (the judge is unit-tested in ``tests/verify/test_judges_paper_a_ca.py``)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy import stats

from theory.minimax import num_intervals, parametric_term
from verify.checks._paper_a_numerics import (ESTIMATOR_STARTS, LOW_RANK_CONSTANT, RIDGE_D, STARTS_NOTE, balanced_truth,
                                             cache_text, inside_condition, predictions, run_trials)
from verify.checks._paper_a_records import GroupDesign, apriori_curve
from verify.claim import Claim, register
from verify.context import CheckContext
from verify import figures as F
from verify.results import Comparison
from verify.statistics import robust_trend
from verify.verdicts import Judgement


#: replicates per (d, r) configuration of A6 by size; paper: at 10 the weakest comparison has a power of about
#: 98 % against the one-sided 5 % Welch test
A6_REPLICATES = {"smoke": 2, "quick": 8, "paper": 10}


#: A6's (d, r) configurations by profile; the first, (1, 1), is the reference of the excesses
A6_COMBOS = {"smoke": [(1, 1), (4, 1), (4, 2)],
             "quick": [(1, 1), (2, 1), (4, 1), (8, 1), (4, 2), (8, 2), (16, 1), (16, 2)],
             "paper": [(1, 1), (2, 1), (4, 1), (8, 1), (4, 2), (8, 2), (16, 1), (16, 2), (30, 1), (30, 2)]}


@dataclass(frozen=True)
class A6Design:
    """Fixed ``M`` and ``K``, the ``(d, r)`` configurations and their regressor ``x = r d log M / M``; ``configs``:
    the sweep's model configurations; ``K_coarse``: ``K_M`` with interval constant 1 (quoted in the notes)."""

    size: str
    M: int
    K: int
    combos: list[tuple[int, int]]
    reps: int
    x: list[float]
    sigma: float
    configs: list[dict] = field(default_factory=list)
    beta: int = 2
    C_K: int = 4
    K_coarse: int = 0


@dataclass(frozen=True)
class A6Prediction:
    """A-priori errors ``B + (V_np + V_par)/M`` (with ``n/(n-p)``), their parametric share, and whether each
    configuration is inside the low-rank condition; ``cache``: the prediction sweep's counts."""

    errors: list[float]
    parametric_share: list[float]
    inside: list[bool]
    cache: dict = field(default_factory=dict)


@dataclass(frozen=True)
class A6Measurement:
    """Replicate errors per configuration, refitted stalled fits, the bootstrap's seed, the sweep's counts."""

    errors: list[list[float]]
    boot_seed: int
    refits: int = 0
    cache: dict = field(default_factory=dict)
    runtime_s: float = 0.0


def design_a6(ctx: CheckContext) -> A6Design:
    """Fixed M by profile, K_M with interval constant 4, P = 3, sigma balanced for d = 1 (a pilot)."""
    size = ctx.profile
    M, beta, C_K = {"smoke": 500, "quick": 2000, "paper": 10000}[size], 2, 4
    K = int(num_intervals(M, beta, constant=C_K))  # K_M = floor(C (M/log M)^(1/(2b+1))), C = 4
    combos = A6_COMBOS[size]
    base = balanced_truth(ctx, 3, [K], [M], "sigma")
    return A6Design(size=size, M=M, K=K, combos=combos, reps=A6_REPLICATES[size],
                    x=[float(parametric_term(r, d, M)) for d, r in combos], sigma=base["sigma"],
                    configs=[{**base, "d": d, "r": r} for d, r in combos], beta=beta, C_K=C_K,
                    K_coarse=int(num_intervals(M, beta)))


def predict_a6(ctx: CheckContext, design: A6Design) -> A6Prediction:
    """The error model's a-priori error per configuration and the low-rank condition (constant 1, as A3 / A4)."""
    info: dict = {}
    preds, shares, M, pseed = [], [], design.M, ctx.design_seed("predict")
    for c, q in zip(design.configs, predictions(ctx, [(c, design.K, pseed) for c in design.configs], "A6", info)):
        n = M * c["N"]
        preds.append(float(apriori_curve([q], [M], c["N"])[0]))  # B + (V_np + V_par) / M n / (n - p)
        shares.append(q["V_par"] / M * n / (n - q["p"]) / preds[-1])
    inside = [inside_condition(r, d, M, design.beta) for d, r in design.combos]
    return A6Prediction(errors=preds, parametric_share=shares, inside=inside, cache=info)


def simulate_a6(ctx: CheckContext, design: A6Design) -> A6Measurement:
    """The sweep: ``reps`` replicate fits per configuration at the one ``(K, M)``."""
    t0 = time.perf_counter()
    info: dict = {}
    groups = [GroupDesign(f"cfg{i}", c, (design.K,), (design.M,)) for i, c in enumerate(design.configs)]
    extra = {"restarts": ESTIMATOR_STARTS[ctx.profile], "max_iter": 50, "n_pairs": 2**16, "ridge": RIDGE_D}
    res = run_trials(ctx, groups, design.reps, "A6", extra, info)
    return A6Measurement(errors=[res.filter(group=g.label).column("err").tolist() for g in groups],
                         boot_seed=ctx.seed_for("bootstrap"), refits=int(np.sum(res.column("refits"))), cache=info,
                         runtime_s=time.perf_counter() - t0)


def _trend(design: A6Design, m: A6Measurement) -> tuple[float, float, float, Any]:
    """``(b, b_se, intercept)`` of the median trend and the OLS fit through every replicate point."""
    b, b_se, icpt = robust_trend(design.x, m.errors, rng=m.boot_seed)
    ols = stats.linregress(np.repeat(design.x, [len(e) for e in m.errors]), np.concatenate(m.errors))
    return b, b_se, icpt, ols


def _mean_var(e: Sequence[float]) -> tuple[float, float, int]:
    """Mean, squared standard error and size of one configuration's replicates."""
    e = np.asarray(e)
    return float(e.mean()), float(e.var(ddof=1) / e.size), e.size


def _excesses(design: A6Design, prediction: A6Prediction, m: A6Measurement) -> list[dict[str, Any]]:
    """Excess of each configuration's mean error over (1, 1): value, SE, relative (the report's data)."""
    m0, v0, _ = _mean_var(m.errors[0])
    out = []
    for combo, e, ins in zip(design.combos[1:], m.errors[1:], prediction.inside[1:]):
        mi, vi, _ = _mean_var(e)
        out.append({"combo": combo, "inside": ins, "excess": mi - m0, "se": math.sqrt(vi + v0),
                    "rel": (mi - m0) / m0})
    return out


def _excess_comparison(combo: tuple[int, int], inside: bool, e0: Sequence[float], e: Sequence[float]) -> Comparison:
    """Inside the condition: ``2 mean(1,1) - mean_i > 0`` (dominated); outside: ``mean_i - mean(1,1) > 0``."""
    d, r = combo
    m0, v0, n0 = _mean_var(e0)
    mi, vi, ni = _mean_var(e)
    exc = mi - m0
    cond = f"r d = {r * d} {'<=' if inside else '>'} {LOW_RANK_CONSTANT} (M/log M)^(1/5)"
    w0 = 4 * v0 if inside else v0  # the variance of mean(1,1)'s share: 2 mean(1,1) inside, mean(1,1) outside
    dv = vi + w0
    df = dv**2 / (vi**2 / (ni - 1) + w0**2 / (n0 - 1)) if dv > 0 else None  # Welch
    if inside:  # dominated: mean_0 - (mean_i - mean_0) = 2 mean_0 - mean_i > 0
        return Comparison.direction(
            f"inside ({cond}): excess of (d, r) = ({d}, {r}) over (1, 1) below the non-parametric error",
            "excess < err(1,1)", float(2 * m0 - mi), math.sqrt(dv), +1, df=df,
            rule=f"2 mean(1,1) - mean({d},{r}) > 0, Welch; relative excess {exc / m0:.2f}")
    return Comparison.direction(
        f"outside ({cond}): excess of (d, r) = ({d}, {r}) over (1, 1)", "> 0 (parametric term shows)",
        exc, math.sqrt(dv), +1, df=df, rule="independent replicates, Welch")


def judge_a6(design: A6Design, prediction: A6Prediction, measurement: A6Measurement) -> list[Comparison]:
    """Crossing the low-rank condition at fixed M: the parametric term is dominated inside, shows outside.

    At fixed ``M`` the token dimension ``d`` and rank ``r`` are varied across the condition of
    :func:`theory.low_rank_condition` with the constant :data:`verify.checks._paper_a_numerics.LOW_RANK_CONSTANT`
    (shared with A3 and A4). Tested (verdict): (i) the error grows with the parametric term ``r d log M / M``: ``b > 0``
    for the per-configuration medians (robust to one outlier replicate; replicate-bootstrap SE); (ii) inside the
    condition the excess error over ``(d, r) = (1, 1)`` is below the non-parametric error itself (``2 mean(1,1) - mean_i
    > 0``: the parametric term is dominated); (iii) outside the condition the excess over ``(1, 1)`` is positive. All
    are direction tests (PASS when significant at 5%, FAIL when the opposite is significant at the check's Holm level,
    INCONCLUSIVE otherwise). Pure (the bootstrap's seed is part of the measurement).
    """
    b, b_se, _, ols = _trend(design, measurement)
    comps = [Comparison.direction(
        "error = a + b * r d log M / M at fixed M: b > 0 (per-configuration medians)", "> 0", b, b_se, +1,
        headline=True, rule=f"replicate-bootstrap SE; OLS through every replicate point gives {ols.slope:.3g} +- "
                            f"{ols.stderr:.2g}")]
    return comps + [_excess_comparison(combo, ins, measurement.errors[0], e)
                    for combo, e, ins in zip(design.combos[1:], measurement.errors[1:], prediction.inside[1:])]


def describe_a6(design: A6Design, prediction: A6Prediction, measurement: A6Measurement,
                comparisons: list[Comparison]) -> tuple[str, dict]:
    """Notes (design, condition, errors against predictions, the fit, the excesses, Spearman) and data."""
    b, b_se, b_icpt, ols = _trend(design, measurement)
    b_pred = stats.linregress(design.x, prediction.errors).slope
    means = [float(np.mean(e)) for e in measurement.errors]
    excess = _excesses(design, prediction, measurement)
    combos, inside, preds = design.combos, prediction.inside, prediction.errors
    ratio = [mv / pv for mv, pv in zip(means, preds)]
    npar = [r * (2 * d - r) for d, r in combos]
    rho_sp = stats.spearmanr(npar, ratio) if len(set(npar)) > 2 else None
    notes = (
        f"Fixed M = {design.M}, P = 3 (beta = 2), s = 1, K = K_M = floor({design.C_K} (M/log M)^(1/5)) = {design.K} "
        f"(with constant 1, K_M = {design.K_coarse}), sigma = {design.sigma:.4g} (balanced for d = 1), N = 5, "
        f"{design.reps} replicates; (d, r) in {combos}. Inside the low-rank condition (constant {LOW_RANK_CONSTANT}): "
        f"{[c for c, i in zip(combos, inside) if i]}; predicted parametric share of the error "
        f"{[round(v, 2) for v in prediction.parametric_share]}. Measured mean errors {[f'{m:.3g}' for m in means]}; "
        f"a-priori predictions B + (V_np + V_par(d, r))/M {[f'{p:.3g}' for p in preds]}; ratios "
        f"{[round(q, 3) for q in ratio]}. Median fit error = a + b x, x = r d log M / M: a = {b_icpt:.3g}, "
        f"b = {b:.3g} +- {b_se:.2g} (replicate bootstrap; predicted {b_pred:.3g}); the parametric term grows like "
        f"r (2d - r) (manifold dimension), the paper's form is linear in r d. Refitted stalled fits: "
        f"{measurement.refits}. " + (STARTS_NOTE + " " if design.size == "paper" else "")
        + "Excesses over (1, 1) (value, SE, relative): "
        + "; ".join(f"{x['combo']} {'in' if x['inside'] else 'OUT'}: {x['excess']:.3g} +- {x['se']:.2g} "
                    f"({x['rel']:.2f})" for x in excess)
        + ". Not judged: measured/predicted ratio vs the number r (2d - r) of matrix parameters: "
        + (f"Spearman rho = {rho_sp.statistic:.2f} (p = {rho_sp.pvalue:.2g})" if rho_sp is not None else "n/a")
        + f". Runtime {measurement.runtime_s:.1f}s. " + cache_text({**prediction.cache, **measurement.cache}) + "."
    )
    data = {"sweep": {**prediction.cache, **measurement.cache}, "M": design.M, "K": design.K, "combos": design.combos,
            "x": design.x, "errors": [list(e) for e in measurement.errors], "pred": prediction.errors,
            "inside": prediction.inside, "parametric_share": prediction.parametric_share, "b": b, "b_se": b_se,
            "b_ols": ols.slope, "b_pred": b_pred, "sigma": design.sigma, "excess": excess}
    return notes, data


def _a6_errors_panel(ax, design: A6Design, prediction: A6Prediction, measurement: A6Measurement) -> None:
    """Error vs the parametric term: replicates, means with 3-SE bars (inside blue, outside vermillion; r = 2
    squares, shifted right), the a-priori predictions, the median fit and the condition's boundary."""
    b, b_se, b_icpt, _ = _trend(design, measurement)
    colour = {True: F.OKABE_ITO["blue"], False: F.OKABE_ITO["vermillion"]}
    for xi, (d, r), e, ins, pv in zip(design.x, design.combos, measurement.errors, prediction.inside,
                                      prediction.errors):
        xs = xi * (1.06 if r == 2 else 1.0)
        e = np.asarray(e, dtype=float)
        ax.scatter([xs] * e.size, e, s=7, alpha=0.3, color=colour[ins], lw=0, zorder=2)
        F.mc_points(ax, [xs], [e.mean()], [e.std(ddof=1) / math.sqrt(e.size)], label="_nolegend_", color=colour[ins],
                    marker="o" if r == 1 else "s")
        ax.plot([xs], [pv], "^", mfc="none", mec=F.THEORY, ms=6, zorder=4)
    xd = F.dense_grid(design.x, per_decade=40, pad=0.05)
    ax.plot(xd, b_icpt + b * xd, "-", color="#555555", lw=1.2, zorder=1)
    M = design.M  # the edge of the condition, r d = C (M/log M)^(1/(2b+1)), in x = r d log M / M
    ax.axvline(LOW_RANK_CONSTANT * (M / math.log(M)) ** (1 / (2 * design.beta + 1)) * math.log(M) / M,
               color=F.THEORY, ls=":", lw=1.2)
    ax.set(xscale="log", title="error against the parametric term", xlabel=r"parametric term  $r\,d\,\log M / M$",
           ylabel=r"$\|\hat g - g^*\|^2_{L^2(\rho)}$")
    from matplotlib import ticker

    top = ax.secondary_xaxis("top", functions=(lambda x: x * design.M / math.log(design.M),
                                               lambda v: v * math.log(design.M) / design.M))
    top.set_xlabel("r d")
    top.xaxis.set_major_locator(ticker.FixedLocator(sorted({r * d for d, r in design.combos})))
    top.xaxis.set_major_formatter(ticker.FormatStrFormatter("%d"))
    top.xaxis.set_minor_locator(ticker.NullLocator())
    top.tick_params(labelsize=F.FONT["tick"])
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    F.headroom(ax, 0.22)
    F.key_numbers(ax, [f"median fit b = {b:.3g} ± {b_se:.2g} (SE)"], loc="upper left")


def _a6_excess_panel(ax, design: A6Design, prediction: A6Prediction, measurement: A6Measurement,
                     comps: list) -> None:
    """The judged excesses over (1, 1), relative, with 3-SE bars, each with its threshold and outcome."""
    ex = _excesses(design, prediction, measurement)
    m0 = float(np.mean(measurement.errors[0]))
    y = np.arange(len(ex))[::-1]
    for yy, x, c in zip(y, ex, comps[1:]):
        col = F.OKABE_ITO["blue" if x["inside"] else "vermillion"]
        F.mc_points(ax, [x["rel"]], [yy], None, xse=[x["se"] / m0], label="_nolegend_", color=col,
                    marker="o" if x["combo"][1] == 1 else "s")
        ax.plot([1.0 if x["inside"] else 0.0], [yy], "|", color=F.THEORY, ms=14, mew=1.6)
        ax.annotate(c.outcome, (1.0, yy), xycoords=("axes fraction", "data"), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=F.FONT["note"], color=F.VERDICT_COLORS.get(c.outcome, "#555555"))
    ax.set_yticks(y, [f"(d, r) = {x['combo']}" for x in ex])
    ax.set(xlabel="excess error over (1, 1), relative to err(1, 1)", ylabel="configuration",
           title="the judged excesses over (d, r) = (1, 1), ±3 SE")
    ax.axvline(0.0, color="#bbbbbb", lw=0.8, zorder=0)


@F.paper_figure
def figure_a6(design: A6Design, prediction: A6Prediction, measurement: A6Measurement, judgement: Judgement) -> Any:
    """Left: error against the parametric term, predictions, the median fit.  Right: the judged excesses."""
    verdict, comps = judgement.verdict, list(judgement.comparisons)
    fig, axes = F.subplots(1, 2, panel=(4.6, 3.9), extra=1.4, width_ratios=(1.25, 1.0))
    _a6_errors_panel(axes[0, 0], design, prediction, measurement)
    _a6_excess_panel(axes[0, 1], design, prediction, measurement, comps)
    legend = [F.proxy(r"inside the low-rank condition $r d \leq (M/\log M)^{1/5}$", color=F.OKABE_ITO["blue"]),
              F.proxy("outside the condition", color=F.OKABE_ITO["vermillion"]),
              F.proxy("r = 1: circles; r = 2: squares (shifted right)", marker="s", mfc="white"),
              F.proxy("mean of the replicates ±3 SE (faint: replicates)", marker="o"),
              F.proxy(r"a-priori prediction $B + (V_{np} + V_{par})/M$", color=F.THEORY, marker="^", mfc="none"),
              F.proxy("median fit a + b x", color="#555555", marker=None, ls="-"),
              F.proxy("edge of the low-rank condition", color=F.THEORY, marker=None, ls=":"),
              F.proxy("right: threshold of the row's test (inside: excess < err(1,1); outside: excess > 0)",
                      color=F.THEORY, marker="|", ms=10, mew=1.6)]
    F.legend(axes[0, 0], extra=legend, outside=True, ncol=3)
    F.suptitle(fig, "A6", "the low-rank condition at fixed M: the parametric term shows only outside",
               F.settings(M=design.M, K=design.K, sigma=design.sigma, N=5, P=3)
               + f", {design.reps} replicates per (d, r); comparisons: {F.outcome_text(comps)}", verdict)
    return fig


A6_CLAIM = register(Claim(id="A6", paper="A", design=design_a6, predict=predict_a6, simulate=simulate_a6,
                          judge=judge_a6, describe=describe_a6, figure=figure_a6, figure_name="parametric_term",
                          statement="The low-rank condition marks where the rate holds: the error grows with r d "
                                    "log M / M, the parametric term is dominated inside the condition and shows "
                                    "outside it"))
