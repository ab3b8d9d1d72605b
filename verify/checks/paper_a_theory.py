"""Check A1: the symbolic layer of paper A (rate exponent, bounds, low-rank condition).

Every comparison is a statement decided by sympy: an identity (``simplify(lhs - rhs) == 0``), a limit, or a sign
under the symbols' assumptions, plus exact integer searches (``min_samples``) and an equivalence tested at seeded
random points; nothing is a noisy measurement. The *measurement* (:class:`A1Measurement`) is what ``theory.minimax``
returns, the *prediction* the paper's printed values and the finite-M numbers the report quotes; the judge
(:func:`judge_a1`) decides each statement with sympy (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from theory.minimax import (average_slope, beta_from_bspline_degree, finite_sample_slope, log_gap_exponent,
                            low_rank_condition, lower_bound, min_samples, minimax_rate, num_intervals, parametric_term,
                            rate_exponent, total_error_slope, upper_bound)
from theory.symbols import M, N, beta, d, r
from verify.claim import Claim, register
from verify import figures as F
from verify.verdicts import Judgement
from verify.context import CheckContext
from verify.results import Comparison


_SIGN = "exact sign (sympy assumptions: beta > 0)"

_L = sp.Symbol("L", positive=True)  # M = exp(L), L > 0 <=> M > 1 (so that log M > 0 is known to sympy)
_A = sp.Symbol("a", nonnegative=True)  # N = exp(a): a >= 0 <=> N >= 1
_B = sp.Symbol("b", positive=True)  # M = exp(exp(b)): b > 0 <=> M > e (M >= 3 included)
_T = sp.Symbol("t", positive=True)  # M = exp(1 + t): t > 0 <=> M > e

#: u = (M / log M)^(1/(2b+1)): the low-rank condition reads r d <= u
_U = (M / sp.log(M)) ** (1 / (2 * beta + 1))


# ------------------------------------------------------------------------------------- design / predict
@dataclass(frozen=True)
class A1Design:
    """The exact statements' inputs: threshold cases, the secant's end points, the seeded-point sizes."""

    min_samples_cases: tuple = ((1, 30, 2), (1, 30, 7), (1, 5, 2), (2, 5, 3), (1, 1, sp.Rational(1, 2)),
                                (3, 4, sp.Rational(5, 4)))
    #: cases whose threshold pair (min_samples, min_samples - 1) joins the random points (both sides of the edge)
    edge_cases: tuple = ((1, 30, 2), (1, 5, 2), (2, 5, 3), (3, 4, sp.Rational(5, 4)))
    n_random_points: int = 60
    secant_M: tuple = (sp.Integer(10) ** 3, sp.Integer(10) ** 5)
    secant_beta: int = 2
    bspline_degrees: tuple = (3, 8)
    finite_M_betas: tuple = (2, 7)


def design_a1(ctx: CheckContext) -> A1Design:
    """The same statements in every profile (nothing here scales)."""
    return A1Design()


def _finite_m_numbers(bb: int) -> dict[str, Any]:
    """Finite-M numbers of the upper bound and the rate + parametric model at one ``beta`` (quoted by A2 / A6)."""
    eb, gb = rate_exponent(bb), log_gap_exponent(bb)
    return {"rate_slope": float(-eb), "upper_slope_at_M=1e4": float(finite_sample_slope(10**4, bb)),
            "upper_average_slope_1e2_1e5": float(average_slope(10**2, 10**5, bb)),
            "M_where_upper_slope_turns_negative": float(sp.exp(gb / eb)),
            "total_slope_at_M=1e4_r=1_d=30": float(total_error_slope(10**4, bb, 1, 30)),
            "K_M_at_1e4": int(num_intervals(10**4, bb))}


def predict_a1(ctx: CheckContext, design: A1Design) -> dict[str, Any]:
    """The paper's printed values (exponent limits, B-spline exponents) and the theory's finite-M numbers."""
    return {"exponent_limit_oo": sp.Integer(1), "exponent_limit_0": sp.Integer(0),
            "bspline_exponent": {3: sp.Rational(4, 5), 8: sp.Rational(14, 15)},
            "finite_M": {f"beta={bb}": _finite_m_numbers(bb) for bb in design.finite_M_betas}}


# ------------------------------------------------------------------------------------- simulate
@dataclass(frozen=True)
class A1Measurement:
    """What ``theory.minimax`` returns for the statements.

    ``expr``: symbolic expressions by name (``e`` rate exponent, ``g`` log-gap exponent, ``fs`` / ``fs_rate``
    finite-sample slopes, ``total``, ``rate``, ``lower``, ``upper``, ``lowrank_rhs``, ``parametric``); ``secant``:
    ``upper_lo``, ``upper_hi`` (upper bound at the secant's ends) and ``average`` (average_slope); ``min_samples``: per
    case ``(m0, cond(m0), cond(m0 - 1) or None when m0 = 3)``; ``points``: per point ``(low-rank condition, parametric
    <= rate x log factor)``; ``bspline``: rate exponent per degree.
    """

    expr: dict[str, Any]
    secant: dict[str, Any] = field(default_factory=dict)
    min_samples: list[tuple] = field(default_factory=list)
    points: list[tuple[bool, bool]] = field(default_factory=list)
    bspline: dict[int, Any] = field(default_factory=dict)


def _threshold(rr, dd, bb) -> tuple:
    """``(m0, cond(m0), cond(m0 - 1))`` of ``min_samples``; the last is None at the floor ``m0 = 3``."""
    m0 = min_samples(rr, dd, bb)
    prev = None if m0 == 3 else bool(low_rank_condition(rr, dd, m0 - 1, bb))
    return m0, bool(low_rank_condition(rr, dd, m0, bb)), prev


def _points(design: A1Design, seed: int) -> list[tuple]:
    """Seeded random points ``(r, d, beta, M)`` (every M >= 3: 10^0.5 > 3) plus the threshold pairs."""
    rng = np.random.default_rng(seed)
    points = []
    for _ in range(design.n_random_points):
        dd = int(rng.integers(1, 41))
        rr = int(rng.integers(1, dd + 1))
        bb = sp.Rational(int(rng.integers(1, 41)), 8)  # beta in (0, 5]
        points.append((rr, dd, bb, sp.Integer(int(10 ** rng.uniform(0.5, 14.0)))))
    for rr, dd, bb in design.edge_cases:
        m0 = min_samples(rr, dd, bb)
        points += [(rr, dd, bb, sp.Integer(m0)), (rr, dd, bb, sp.Integer(max(m0 - 1, 3)))]
    return points


def _point_verdicts(rr, dd, bb, mm) -> tuple[bool, bool]:
    """The low-rank condition and 'parametric term <= rate x (log M)^e' at one point (exact)."""
    cond = bool(low_rank_condition(rr, dd, mm, bb))
    par = bool(sp.Le(parametric_term(rr, dd, mm), minimax_rate(mm, bb) * sp.log(mm) ** rate_exponent(bb)))
    return cond, par


def simulate_a1(ctx: CheckContext, design: A1Design) -> A1Measurement:
    """Evaluate ``theory.minimax``: expressions, exact thresholds, verdicts at seeded random points."""
    m_lo, m_hi = design.secant_M
    bb = design.secant_beta
    secant = {"upper_lo": upper_bound(m_lo, bb), "upper_hi": upper_bound(m_hi, bb),
              "average": average_slope(m_lo, m_hi, bb)}
    thresholds = [_threshold(*case) for case in design.min_samples_cases]
    points = [_point_verdicts(*p) for p in _points(design, ctx.seed_for("parametric-vs-nonparametric"))]
    bspline = {P: rate_exponent(beta_from_bspline_degree(P)) for P in design.bspline_degrees}
    expr = {"e": rate_exponent(beta), "g": log_gap_exponent(beta), "fs": finite_sample_slope(M, beta),
            "fs_rate": finite_sample_slope(M, beta, "rate"), "total": total_error_slope(M, beta, r, d),
            "rate": minimax_rate(M, beta), "lower": lower_bound(M, N, beta), "upper": upper_bound(M, beta),
            "lowrank_rhs": low_rank_condition(r, d, M, beta).rhs, "parametric": parametric_term(r, d, M)}
    return A1Measurement(expr=expr, secant=secant, min_samples=thresholds, points=points, bspline=bspline)


# ------------------------------------------------------------------------------------- statement kinds
def _identity(name: str, lhs: sp.Expr, rhs: sp.Expr, m_gt_1: bool = False) -> Comparison:
    """``simplify(lhs - rhs) == 0``; with ``m_gt_1`` after substituting ``M = exp(L)``, ``L > 0``."""
    diff = lhs - rhs
    tol = "exact (sympy simplify == 0)"
    if m_gt_1:
        diff = sp.expand_power_base(diff.subs(M, sp.exp(_L)))
        tol += " after M = exp(L), L > 0"
    diff = sp.simplify(diff)
    return Comparison(name=name, predicted=str(rhs), measured=str(sp.simplify(lhs)), uncertainty=None,
                      tolerance=tol, passed=bool(diff == 0))


def _limit(name: str, expr: sp.Expr, var: sp.Symbol, point, expected: sp.Expr) -> Comparison:
    """The limit of ``expr`` as ``var -> point`` (from above: sympy's default) is ``expected``."""
    got = sp.limit(expr, var, point)
    return Comparison(name=name, predicted=str(expected), measured=str(sp.simplify(got)), uncertainty=None,
                      tolerance="exact limit", passed=bool(sp.simplify(got - expected) == 0))


def _sign(name: str, predicted: str, expr: sp.Expr, prop: str, tolerance: str = _SIGN) -> Comparison:
    """``expr.<prop>`` (``is_positive``, ``is_negative``, ``is_nonpositive``) is known to be True."""
    value = getattr(expr, prop)
    return Comparison(name=name, predicted=predicted, measured=f"{expr}; {prop}={value}", uncertainty=None,
                      tolerance=tolerance, passed=value is True)


# ------------------------------------------------------------------------------------- the statements
def _average_slope_secant(D: A1Design, m: A1Measurement) -> Comparison:
    """The secant slope of the upper bound = the exact secant of log(upper_bound), checked at numbers."""
    m_lo, m_hi = D.secant_M
    s = m.secant
    secant = (sp.log(s["upper_hi"]) - sp.log(s["upper_lo"])) / (sp.log(m_hi) - sp.log(m_lo))
    return Comparison(name="average_slope(1e3, 1e5, beta=2) == secant of log upper_bound",
                      predicted=float(secant), measured=float(s["average"]), uncertainty=None,
                      tolerance="exact sympy expressions; rule: |difference| evaluated at 30 significant digits "
                                "< 1e-25",
                      passed=abs(sp.N(s["average"] - secant, 30)) < sp.Float("1e-25"))


def _lower_below_upper(m: A1Measurement) -> Comparison:
    """lower <= upper for N >= 1, M >= 3: with N = exp(a), M = exp(exp(b)), log(lower/upper) = -e a - g b <= 0."""
    ratio = m.expr["lower"] / m.expr["upper"]
    log_ratio = sp.expand_log(sp.log(ratio.subs({N: sp.exp(_A), M: sp.exp(sp.exp(_B))})), force=True)
    return _sign("lower_bound <= upper_bound for N >= 1, M > e (c0 = 1)", "log(lower/upper) <= 0", log_ratio,
                 "is_nonpositive", _SIGN + ", N = exp(a), a >= 0; M = exp(exp(b)), b > 0")


def _low_rank_monotone(m: A1Measurement) -> Comparison:
    """The low-rank condition's right-hand side is increasing in M for M > e."""
    rhs = m.expr["lowrank_rhs"]
    dlog = sp.simplify(sp.diff(sp.expand_log(sp.log(rhs), force=True), M).subs(M, sp.exp(1 + _T)))
    return _sign("low_rank_condition monotone in M (d log RHS / dM > 0 for M = e^(1+t), t > 0)", "> 0", dlog,
                 "is_positive")


def _min_samples_thresholds(D: A1Design, p: dict, m: A1Measurement) -> list[Comparison]:
    """min_samples is the exact threshold: the condition holds at it and fails one below (or it is 3)."""
    return [Comparison(name=f"min_samples(r={rr}, d={dd}, beta={bb}): condition at M, not at M-1",
                       predicted="cond(M) and not cond(M-1) (or M = 3)", measured=m0, uncertainty=None,
                       tolerance="exact comparison (sympy adaptive precision)", passed=holds and (m0 == 3 or not prev))
            for (rr, dd, bb), (m0, holds, prev) in zip(D.min_samples_cases, m.min_samples)]


def _equivalence_at_points(D: A1Design, p: dict, m: A1Measurement) -> Comparison:
    n_pts = len(m.points)
    agree = sum(cond == par for cond, par in m.points)
    n_true = sum(cond for cond, _ in m.points)
    return Comparison(
        name="low-rank condition <=> r d log M / M <= M^(-e) (log M)^e (random points + threshold pairs)",
        predicted=f"{n_pts}/{n_pts} agree, both verdicts present", measured=f"{agree}/{n_pts} agree, "
        f"{n_true} true / {n_pts - n_true} false", uncertainty=None,
        tolerance=f"exact comparison at every point (sympy); points: {D.n_random_points} seeded random + "
                  f"{2 * len(D.edge_cases)} at min_samples, -1",
        passed=agree == n_pts and 0 < n_true < n_pts)


def _bspline_exponents(D: A1Design, p: dict, m: A1Measurement) -> list[Comparison]:
    """Rate exponents of the B-spline degrees of the paper's experiments."""
    return [_identity(f"rate exponent for B-spline degree P={P}", m.bspline[P], p["bspline_exponent"][P])
            for P in D.bspline_degrees]


def judge_a1(design: A1Design, prediction: dict, measurement: A1Measurement) -> list[Comparison]:
    """Every statement, decided by sympy (pure), in the report's order: 1 exponent, 2 finite-M slopes, 3 rate in M,
    4 bounds, 5 low-rank monotonicity, 6 thresholds, 7 parametric vs non-parametric term (u^(-2b) = M^(-e)
    (log M)^e, so r d <= u <=> r d log M / M <= u^(-2b); the parametric term is linear in r d, so at r d = u it is
    u log M / M = u^(-2b)), 8 B-spline degrees."""
    D, p, m = design, prediction, measurement
    x, e = measurement.expr, measurement.expr["e"]
    return [
        _limit("rate exponent -> 1 as beta -> oo", e, beta, sp.oo, p["exponent_limit_oo"]),
        _limit("rate exponent -> 0 as beta -> 0+", e, beta, 0, p["exponent_limit_0"]),
        _sign("d exponent / d beta > 0 (exponent increasing in beta)", "> 0", sp.simplify(sp.diff(e, beta)),
              "is_positive"),
        _identity("finite_sample_slope(upper) == -2b/(2b+1) + log_gap_exponent/log M", x["fs"],
                  -e + x["g"] / sp.log(M)),
        _limit("finite_sample_slope(upper) -> -2b/(2b+1) as M -> oo", x["fs"], M, sp.oo, -e),
        _identity("finite_sample_slope(rate) == -2b/(2b+1)", x["fs_rate"], -e),
        _limit("total_error_slope(rate + r d log M / M) -> -2b/(2b+1) as M -> oo", x["total"], M, sp.oo, -e),
        _average_slope_secant(D, m),
        _sign("minimax_rate decreasing in M", "d rate / dM < 0", sp.diff(x["rate"], M), "is_negative",
              _SIGN + ", M > 0"),
        _identity("lower/upper == N^(-e) (log M)^(-g)", x["lower"] / x["upper"], N ** (-e) * sp.log(M) ** (-x["g"])),
        _lower_below_upper(m),
        _low_rank_monotone(m),
        *_min_samples_thresholds(D, p, m),
        _identity("u^(-2b) == M^(-e) (log M)^e, u = (M/log M)^(1/(2b+1))", _U ** (-2 * beta),
                  M ** (-e) * sp.log(M) ** e, m_gt_1=True),
        _identity("parametric_term / (r d) * u == u^(-2b)  (the two sides meet at r d = u)",
                  x["parametric"] / (r * d) * _U, _U ** (-2 * beta), m_gt_1=True),
        _sign("log factor of the equivalence is below the upper bound's (g - e > 0)", "> 0",
              sp.simplify(x["g"] - e), "is_positive"),
        _equivalence_at_points(D, p, m),
        *_bspline_exponents(D, p, m),
    ]


# ------------------------------------------------------------------------------------- describe / figure
def describe_a1(design: A1Design, prediction: dict, measurement: A1Measurement,
                comparisons: list[Comparison]) -> tuple[str, dict]:
    """Conventions, the derived equivalence and the finite-M numbers (notes); thresholds and numbers (data)."""
    fin = prediction["finite_M"]
    f2, f7 = fin["beta=2"], fin["beta=7"]
    ms = {f"r={rr},d={dd},beta={bb}": m0
          for (rr, dd, bb), (m0, _, _) in zip(design.min_samples_cases, measurement.min_samples)}
    notes = (
        "Conventions: constants dropped; upper bound = M^(-e) (log M)^g with g = e + 4 max(2b, 1) as printed; "
        "lower bound c0 N^(-e) M^(-e) with c0 = 1; K_M = max(1, floor((M/log M)^(1/(2b+1)))) is a reconstruction. "
        "Derived: with u = (M/log M)^(1/(2b+1)), u^(-2b) = M^(-e)(log M)^e, so the low-rank condition r d <= u is "
        "exactly 'r d log M/M <= rate x (log M)^(2b/(2b+1))', a log factor below the upper bound's log gap (g > e). "
        f"The upper bound's local slope at M = 1e4 is {f2['upper_slope_at_M=1e4']:+.3f} (beta = 2) and "
        f"{f7['upper_slope_at_M=1e4']:+.3f} (beta = 7): it decreases only for M > exp(g/e) "
        f"({f2['M_where_upper_slope_turns_negative']:.2g}, {f7['M_where_upper_slope_turns_negative']:.2g}), so "
        "measured slopes are compared with the rate -2b/(2b+1), not with the bound. The rate + parametric model "
        f"(constants 1) has local slope {f2['total_slope_at_M=1e4_r=1_d=30']:.3f} (beta = 2) and "
        f"{f7['total_slope_at_M=1e4_r=1_d=30']:.3f} (beta = 7) at M = 1e4 for r = 1, d = 30 (outside the "
        f"condition: min_samples(1, 30, 2) = {ms['r=1,d=30,beta=2']:.2g}). K_M at M = 1e4: {f2['K_M_at_1e4']} "
        f"(beta = 2), {f7['K_M_at_1e4']} (beta = 7), C = 1."
    )
    return notes, {"min_samples": ms, "finite_M": fin}


def _plot_exponent(ax) -> None:
    """The rate exponent 2b/(2b+1) (dense curve) with the B-spline degrees of the paper's experiments."""
    F.theory_curve(ax, [0.02, 12.0], lambda b: 2 * b / (2 * b + 1), grid=np.linspace(0.02, 12.0, 400),
                   label=r"rate exponent $2\beta/(2\beta+1)$")
    for k, P in enumerate((3, 8)):
        b = float(beta_from_bspline_degree(P))
        ax.plot([b], [2 * b / (2 * b + 1)], "o", color=F.COLORS[k], ms=6,
                label=f"B-spline degree P = {P}: β = {b:g}, exponent {2 * b / (2 * b + 1):.4f}")
    ax.set(xlabel="smoothness β", ylabel=r"rate exponent $2\beta/(2\beta+1)$", title="rate exponent")
    F.legend(ax, loc="lower right")


def _plot_slopes(ax) -> None:
    """Local slopes d log(bound) / d log M of the upper bound and of the rate + parametric model (dense in M)."""
    Ms = np.logspace(1, 32, 400)
    for k, bb in enumerate((2, 7)):
        col = F.COLORS[k]
        f_up = sp.lambdify(M, finite_sample_slope(M, bb), "numpy")
        f_tot = sp.lambdify(M, total_error_slope(M, bb, 1, 30), "numpy")
        eb = 2 * bb / (2 * bb + 1)
        ax.plot(Ms, f_up(Ms), color=col, label=f"upper bound with its log gap, β = {bb}")
        ax.plot(Ms, f_tot(Ms), "--", color=col, label=f"rate + parametric term r d log M / M, β = {bb}")
        ax.axhline(-eb, color=col, lw=0.8, ls=":", label=f"rate −2β/(2β+1) = −{eb:.4f}")
    ax.set_xscale("log")
    ax.set_ylim(-1.2, 6)
    ax.axvline(1e4, color="#777777", lw=0.6, label="M = 10⁴ (quoted in the notes)")
    ax.set(xlabel="sample size M", ylabel="local slope  d log(bound) / d log M", title="finite-M local slopes")
    F.legend(ax, loc="upper right", fontsize=F.FONT["legend"] - 0.5)


@F.paper_figure
def figure_a1(design: A1Design, prediction: dict, measurement: A1Measurement, judgement: Judgement) -> Any:
    """The rate exponent in beta and the finite-M local slopes of the bounds; the verdict of the exact statements."""
    verdict, comps = judgement.verdict, list(judgement.comparisons)
    fig, axes = F.subplots(1, 2, panel=(5.0, 3.8), extra=0.7)
    _plot_exponent(axes[0, 0])
    _plot_slopes(axes[0, 1])
    F.key_numbers(axes[0, 0], [f"{F.outcome_text(comps)} (exact, sympy)"], verdict=verdict, loc="center right")
    F.suptitle(fig, "A1", "the symbolic layer of paper A", "constants 1; parametric model at r = 1, d = 30", verdict)
    return fig


A1_CLAIM = register(Claim(id="A1", paper="A", design=design_a1, predict=predict_a1, simulate=simulate_a1,
                          judge=judge_a1, describe=describe_a1, figure=figure_a1, figure_name="exponent_and_slopes",
                          statement="Rate exponent 2b/(2b+1), minimax rate, upper/lower bounds, low-rank "
                                    "condition: symbolic identities, limits and monotonicity"))
