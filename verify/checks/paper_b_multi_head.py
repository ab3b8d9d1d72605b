"""Check B11 (beyond the papers): multi-head attention on paper B's data, theory against simulation.

Setting: ``H`` heads ``K_h = f_h(X^T W_h X / sqrt p) / sqrt p`` (diagonal removed) on ``X = mu y^T + Z``, shared
(``W_h = I``) or random (``W_h = sqrt(p/d) Q_h R_h^T``, ``d = p / H``) key-query matrices, read out by the sum
``X H^(-1/2) sum_h K_h`` or the concatenation ``[X K_1; ...; X K_H]``, optionally with a value budget (each head's
block projected to ``v p`` coordinates by a Haar partial isometry).

Prediction (*derived by the project*, :class:`theory.MultiHeadModel`, ``docs/multi_head.md``): a linear pencil
of the Gaussian-equivalent kernels, its matrix Dyson equation, and Woodbury's identity for the signal.  Judged:
``E_att(gamma) - E_RR(gamma)``, the gap to ridge regression on the same draws.  The gap, not the error itself:
ridge's own finite-size offset (``+0.006`` at ``p = 1024``, ``c = 1/2``) is common to both and leaves the gap, and
the pairing removes most of the draw-to-draw variance (the per-trial SD of the gap is a third to a half of that
of ``E_att``).

Measurement (:func:`numerics.simulate_model` of every model of one ``c`` on the same draws, with ridge): per
trial, ``X, y`` once for all the models of that ``c``; random heads and value maps from the trial's seed.

Comparisons: per ``(setting, gamma)`` the finite-size rule of :mod:`verify.checks._finite_size` on the paired gap
minus the theory, at ``p`` and ``4 p`` (``q = 1/2``; Student-t on the estimated SEs), Holm within the check at
``ALPHA_CHECK``.  The rule allows what the limit leaves out at finite ``p`` to decay like ``p^(-1/2)``.  Power: a
theory off by ``D`` at both sizes FAILs with probability about 1/2 once ``D (1 - q)`` reaches the Student-t quantile
at Holm's first level times the statistic's SD (``data["rows"]``, ``detectable``).

The headline is random heads, concatenated with the budget ``v = 1/2`` (two tanh heads, ``c = 2``,
``gamma = 0.1``): the transformer's fixed feature budget.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..claim import Claim, register
from ..context import CheckContext
from ..figures import paper_figure
from ..results import Comparison, with_key
from ..statistics import scalar_mean_se
from ..verdicts import Judgement
from ._finite_size import DECAY, FiniteSizeTest, comparison_detectable_error, finite_size_test
from ._paper_b import mc_settings, mc_version, settings_key

#: one setting: ``(c, activations, heads, readout, value_ratio)`` (``value_ratio`` None: no budget)
Setting = tuple[float, tuple[str, ...], str, str, Any]


@dataclass(frozen=True)
class B11Profile:
    """B11's design at one profile.

    Attributes
    ----------
    sizes : ``c -> (p, 4p)``, the finite-size pair of each aspect ratio (``n = p / c``).
    trials : Monte Carlo trials at each size.
    settings : the judged settings (all the settings of one ``c`` run on the same draws).
    gammas : the ridge parameters judged at every setting.
    snr : ``||mu||^2``.
    figure_heads : the ``H`` grid of the figure's theory curves (computed only where figures are drawn).
    """

    sizes: tuple[tuple[float, tuple[int, int]], ...]
    trials: tuple[int, int]
    settings: tuple[Setting, ...]
    gammas: tuple[float, ...]
    snr: float = 1.0
    figure_heads: tuple[int, ...] = (1, 2, 3, 4, 6, 8)

    def ps(self, c: float) -> tuple[int, int]:
        return dict(self.sizes)[c]

    @property
    def cs(self) -> list[float]:
        return [c for c, _ in self.sizes]


#: the headline setting (judged at gamma = HEADLINE_GAMMA)
HEADLINE: Setting = (2.0, ("tanh", "tanh"), "random", "concat", 0.5)
HEADLINE_GAMMA = 0.1

_SETTINGS = (
    # c = 2 (n = p / 2): shared concatenation (correlated nonlinear parts: tanh and erf), with and without a budget,
    # random heads summed, concatenated, and concatenated with the budget v = 1/H (the headline)
    (2.0, ("tanh", "erf"), "shared", "concat", None),
    (2.0, ("tanh", "erf"), "shared", "concat", 0.5),
    (2.0, ("tanh", "gelu"), "random", "concat", None),
    HEADLINE,
    # c = 1/2 (n = 2p): shared sum (the exact reduction; the measured case), three shared heads
    # concatenated, four random erf heads summed (the issue's), three random heads with the budget v = 1/3
    (0.5, ("tanh", "gelu"), "shared", "sum", None),
    (0.5, ("tanh", "erf", "gelu"), "shared", "concat", None),
    (0.5, ("erf", "erf", "erf", "erf"), "random", "sum", None),
    (0.5, ("tanh", "gelu", "erf"), "random", "concat", 1 / 3),
)

B11_PROFILES = {
    # smoke (tests only): tiny sizes, verdicts meaningless
    "smoke": B11Profile(sizes=((2.0, (16, 64)), (0.5, (8, 32))), trials=(3, 3),
                        settings=(HEADLINE, (0.5, ("tanh", "gelu"), "shared", "sum", None)), gammas=(0.1,),
                        figure_heads=(1, 2)),
    # quick: 8 settings x 2 gammas; c = 2 at p = 128 and 512 (n = 64, 256), c = 1/2 at p = 64 and 256 (n = 128, 512);
    # 96 trials at the small size (cheap: they shrink the q SE_s part of the statistic), 32 at the large one
    "quick": B11Profile(sizes=((2.0, (128, 512)), (0.5, (64, 256))), trials=(96, 32), settings=_SETTINGS,
                        gammas=(0.01, 0.1)),
    # paper: the same settings at p = 256 and 1024 (c = 2; n = 128, 512) and 128 and 512 (c = 1/2; n = 256, 1024),
    # four gammas
    "paper": B11Profile(sizes=((2.0, (256, 1024)), (0.5, (128, 512))), trials=(96, 32), settings=_SETTINGS,
                        gammas=(1e-3, 1e-2, 0.1, 1.0)),
}


def model_of(setting: Setting, snr: float) -> Any:
    """The :class:`theory.MultiHeadModel` of a setting."""
    from theory import MultiHeadModel

    c, acts, heads, readout, v = setting
    return MultiHeadModel(c, acts, snr, heads=heads, readout=readout, value_ratio=v)


@dataclass(frozen=True)
class B11Prediction:
    """Theory by ``(setting, gamma)``: the gap ``E_att - E_RR`` (judged), attention's and ridge's errors; by
    ``(c, heads, readout, budget)``: the figure's gap against ``H`` (computed only where figures are drawn)."""

    gap: dict
    attention: dict
    ridge: dict
    curve: dict = field(default_factory=dict)


def design_b11(ctx: CheckContext) -> B11Profile:
    """B11's design for ``ctx.profile`` (:data:`B11_PROFILES`)."""
    return B11_PROFILES[ctx.profile]


@functools.lru_cache(maxsize=512)
def theory_error(setting: Setting, snr: float, gammas: tuple[float, ...]) -> tuple[tuple[float, ...],
                                                                                  tuple[float, ...]]:
    """``(E_att, E_RR)`` of a setting on ``gammas`` (memoised in the process: a calibration judges many seeds)."""
    m = model_of(setting, snr)
    g = np.array(gammas, dtype=float)
    return tuple(float(v) for v in np.atleast_1d(m.error(g))), tuple(float(v) for v in m.ridge_error(g))


#: the figure's curves: (c, heads, readout, budget) with tanh heads; budget True is v = 1/H
CURVES = tuple((c, heads, readout, budget) for c in (2.0, 0.5)
               for heads, readout, budget in (("random", "sum", False), ("random", "concat", False),
                                              ("random", "concat", True), ("shared", "concat", True)))


def curve_setting(c: float, heads: str, readout: str, budget: bool, H: int) -> Setting:
    return (c, ("tanh",) * H, heads, readout, (1.0 / H if H > 1 else None) if budget else None)


def predict_b11(ctx: CheckContext, design: B11Profile) -> B11Prediction:
    """The gap at every judged point; the figure's curves (tanh heads, ``gamma = 0.1``) where figures are drawn."""
    gap, att, rr = {}, {}, {}
    for s in design.settings:
        ea, er = theory_error(s, design.snr, tuple(design.gammas))
        for g, a, r in zip(design.gammas, ea, er):
            gap[(s, g)], att[(s, g)], rr[(s, g)] = a - r, a, r
    curve = {}
    if ctx.report_dir is not None:
        for key in CURVES:
            if key[0] in design.cs:
                curve[key] = tuple(
                    (lambda e: e[0][0] - e[1][0])(theory_error(curve_setting(*key, H), design.snr, (HEADLINE_GAMMA,)))
                    for H in design.figure_heads)
    return B11Prediction(gap, att, rr, curve)


def _setting_key(s: Setting) -> dict:
    c, acts, heads, readout, v = s
    return {"c": float(c), "activations": "+".join(acts), "heads": heads, "readout": readout,
            "v": None if v is None else float(v)}


def cell(ctx: CheckContext, design: B11Profile, c: float, p: int, trials: int) -> dict[str, np.ndarray]:
    """Every setting of one ``c`` at ``p`` on the same draws, with ridge: ``"true"`` ``(settings, trials, G)`` and
    ``"ridge"`` ``(trials, G)`` (cached)."""
    from numerics import simulate_model

    import numerics.multi_head

    settings = [s for s in design.settings if s[0] == c]
    mc = mc_settings(ctx, trials, ctx.seed_for("cell", f"c={c:g}", p))
    key = dict(c=float(c), p=int(p), gammas=[float(g) for g in design.gammas], snr=float(design.snr),
               settings=[_setting_key(s) for s in settings], **settings_key(mc))

    def compute() -> dict[str, np.ndarray]:
        return simulate_model([model_of(s, design.snr) for s in settings], p, list(design.gammas), mc,
                              kind=("true", "ridge"))

    return ctx.cached("multi_head_mc", key, compute, version=mc_version(numerics.multi_head))


def simulate_b11(ctx: CheckContext, design: B11Profile) -> dict:
    """``(setting, p) -> paired gaps E_att - E_RR`` ``(trials, G)`` at both sizes of every setting's ``c``."""
    cells: dict = {}
    with ctx.progress("multi-head attention and ridge on the same draws", total=2 * len(design.cs)) as bar:
        for c in design.cs:
            settings = [s for s in design.settings if s[0] == c]
            for p, trials in zip(design.ps(c), design.trials):
                out = cell(ctx, design, c, p, trials)
                for j, s in enumerate(settings):
                    cells[(s, p)] = np.asarray(out["true"][j]) - np.asarray(out["ridge"])
                bar.advance()
    return cells


def _name(s: Setting) -> str:
    c, acts, heads, readout, v = s
    budget = "" if v is None else f", v={v:.3g}"
    return f"{heads} {readout}{budget} [{'+'.join(acts)}] c={c:g}"


def _key(s: Setting, gamma: float) -> dict:
    return {**_setting_key(s), "gamma": float(gamma)}


def points(design: B11Profile) -> list[tuple[Setting, float]]:
    """The judged points, headline first."""
    pts = [(s, g) for s in design.settings for g in design.gammas]
    return sorted(pts, key=lambda pt: pt != (HEADLINE, HEADLINE_GAMMA))


def gap_test(design: B11Profile, prediction: B11Prediction, cells: dict, point: tuple[Setting, float]
             ) -> FiniteSizeTest:
    """The finite-size rule of one point: the paired gap minus the theory at ``p`` and ``4 p``."""
    s, g = point
    j = list(design.gammas).index(g)
    ps, pl = design.ps(s[0])
    ms, ses = scalar_mean_se(cells[(s, ps)][:, j])
    ml, sel = scalar_mean_se(cells[(s, pl)][:, j])
    pred = prediction.gap[point]
    return finite_size_test(pred, ms, ses, ml, sel, ps / pl, tuple(design.trials))


def judge_b11(design: B11Profile, prediction: B11Prediction, cells: dict) -> list[Comparison]:
    """One finite-size comparison per ``(setting, gamma)`` (module docstring); pure."""
    comps = []
    for s, g in points(design):
        test = gap_test(design, prediction, cells, (s, g))
        ps, pl = design.ps(s[0])
        ml, sel = scalar_mean_se(cells[(s, pl)][:, list(design.gammas).index(g)])
        comps.append(test.comparison(f"gap {_name(s)} gamma={g:g}: E_att - E_RR", prediction.gap[(s, g)], ml, sel,
                                     f"p={ps}", f"p={pl}", headline=(s, g) == (HEADLINE, HEADLINE_GAMMA),
                                     key=_key(s, g)))
    return comps


def detectable_error(comparison: Comparison, n_comparisons: int, design: B11Profile, c: float) -> float:
    """The theory's error ``D`` (the same at both sizes) detected with probability about 1/2 from a judged row."""
    ps, pl = design.ps(c)
    return comparison_detectable_error(comparison, n_comparisons, (ps / pl) ** DECAY)


def _rows(design: B11Profile, prediction: B11Prediction, cells: dict, comparisons: list[Comparison]) -> list[dict]:
    rows = []
    for s, g in points(design):
        comp = with_key(comparisons, **_key(s, g))[0]
        j = list(design.gammas).index(g)
        ps = design.ps(s[0])
        stats = [scalar_mean_se(cells[(s, p)][:, j]) for p in ps]
        rows.append(dict(**_setting_key(s), gamma=g, theory=prediction.gap[(s, g)],
                         attention=prediction.attention[(s, g)], ridge=prediction.ridge[(s, g)], p=list(ps),
                         measured=[m for m, _ in stats], se=[e for _, e in stats], outcome=comp.outcome,
                         detectable=detectable_error(comp, len(comparisons), design, s[0])))
    return rows


def describe_b11(design: B11Profile, prediction: B11Prediction, cells: dict,
                 comparisons: list[Comparison]) -> tuple[str, dict]:
    """Notes (what is judged, the offsets at both sizes, the power) and data (one row per judged point)."""
    rows = _rows(design, prediction, cells, comparisons)
    offsets = "; ".join(f"{r['heads']} {r['readout']}{'' if r['v'] is None else ' v=%.3g' % r['v']} "
                        f"[{r['activations']}] c={r['c']:g} gamma={r['gamma']:g}: "
                        f"{r['measured'][0] - r['theory']:+.4f} / {r['measured'][1] - r['theory']:+.4f}" for r in rows)
    detect = float(np.median([r["detectable"] for r in rows]))
    n_fail = sum(c.outcome == "FAIL" for c in comparisons)
    sizes = "; ".join(f"c={c:g}: p={p[0]} and {p[1]}" for c, p in design.sizes)
    notes = (
        "Theory: theory.MultiHeadModel, derived by the project (docs/multi_head.md): Gaussian equivalence head by "
        "head (shared heads' nonlinear parts correlated across heads by Sigma_hg = E[f_h f_g] - a_h a_g), a linear "
        "pencil of the features' Gram matrix, its matrix Dyson equation and Woodbury's identity for the signal. "
        f"Judged: E_att - E_RR (ridge on the same draws), {design.trials[0]} and {design.trials[1]} trials at the "
        f"two sizes ({sizes}), snr="
        f"{design.snr:g}, by the finite-size rule (q = 1/2). Offsets (measured - theory) at the two sizes: {offsets}. "
        f"Power of the rule: a theory off by {detect:.4f} at both sizes (median over points) FAILs with probability "
        f"about 1/2 (Holm's first level). {n_fail} of {len(comparisons)} comparisons FAIL."
    )
    data = dict(rows=rows, sizes={str(c): list(p) for c, p in design.sizes}, trials=list(design.trials),
                gammas=list(design.gammas), snr=design.snr,
                curves={f"c={k[0]:g} {k[1]} {k[2]}{' v=1/H' if k[3] else ''}": list(v)
                        for k, v in prediction.curve.items()}, figure_heads=list(design.figure_heads))
    return notes, data


@paper_figure
def figure_b11(design: B11Profile, prediction: B11Prediction, cells: dict, judgement: Judgement) -> Any:
    """Per ``c``: the paired gap at both sizes (±3 SE) against the theory, by setting and gamma; and the theory's
    gap against ``H`` (tanh heads, ``gamma = 0.1``) with and without the budget ``v = 1/H``."""
    from .. import figures as F

    comps = list(judgement.comparisons)
    fig, axes = F.subplots(1, len(design.cs) + 1, panel=(4.2, 3.2), extra=1.3)
    for ax, c in zip(axes[0], design.cs):
        pts = [(s, g) for s, g in points(design) if s[0] == c]
        pts.sort(key=lambda pt: (design.settings.index(pt[0]), pt[1]))
        x = np.arange(len(pts))
        ax.plot(x, [prediction.gap[pt] for pt in pts], "_", color=F.THEORY, ms=14, mew=2)
        for k, p in enumerate(design.ps(c)):
            stats = np.array([scalar_mean_se(cells[(s, p)][:, list(design.gammas).index(g)]) for s, g in pts])
            F.mc_points(ax, x + 0.15 * (2 * k - 1), stats[:, 0], stats[:, 1], label=f"_p{k}", color=F.COLORS[k],
                        marker="os"[k], filled=k == 1)
        ax.set_xticks(x, [f"{s[2][0]}{s[3][0]}{'' if s[4] is None else 'v'}{len(s[1])} γ={g:g}" for s, g in pts],
                      rotation=60, fontsize=6)
        ax.set(xlabel="setting and γ", ylabel="E_att − E_RR", title=f"p/n = {c:g}")
        here = with_key(comps, c=float(c))
        F.key_numbers(ax, [F.outcome_text(here)], verdict=F.worst_outcome(here))
    ax = axes[0, -1]
    ax.axhline(0.0, color="#999999", lw=0.8)
    styles = {("random", "sum", False): ("-", "random, sum"), ("random", "concat", False): ("--", "random, concat"),
              ("random", "concat", True): ("-.", "random, concat, v = 1/H"),
              ("shared", "concat", True): (":", "shared, concat, v = 1/H")}
    for key, vals in prediction.curve.items():
        ls, lab = styles[key[1:]]
        ax.plot(design.figure_heads, vals, ls, color=F.COLORS[design.cs.index(key[0]) + 2], lw=1.3,
                label=f"{lab}, p/n = {key[0]:g}")
    ax.set(xlabel="heads H (tanh)", ylabel=f"E_att − E_RR at γ = {HEADLINE_GAMMA:g} (theory)",
           title="the gap against H")
    if prediction.curve:
        ax.legend(fontsize=6)
    F.legend(axes[0, 0], outside=True, ncol=3, axes=list(axes[0, :-1]), extra=[
        F.proxy("theory (limit)", color=F.THEORY, marker="_", ls="none"),
        *(F.proxy(f"Monte Carlo at the {'smaller' if k == 0 else 'larger'} size, ±3 SE (paired with ridge)",
                  color=F.COLORS[k], marker="os"[k], mfc=None if k else "white") for k in range(2))])
    F.suptitle(fig, "B11", "multi-head attention: theory against simulation",
               "labels: s/r = shared/random heads, s/c = sum/concatenation, v = value budget, then H; "
               f"‖μ‖² = {design.snr:g}, diagonal removed ({F.outcome_text(comps)})", judgement.verdict)
    return fig


#: claim B11 in words (the report, --list and docs/claims.md show it)
STATEMENT_B11 = (
    "Multi-head attention (H heads, shared W_h = I or random W_h = sqrt(p/d) Q_h R_h^T; features summed or "
    "concatenated, optionally with a value budget v p per head): the project's deterministic equivalent "
    "(theory.MultiHeadModel: a Gaussian-equivalent kernel per head, a linear pencil and its matrix Dyson equation) "
    "predicts the interpolation error; judged on the gap E_att - E_RR to ridge on the same draws, at two sizes by "
    "the finite-size rule"
)

CLAIM_B11 = register(Claim(id="B11", paper="B", statement=STATEMENT_B11, design=design_b11, predict=predict_b11,
                           simulate=simulate_b11, judge=judge_b11, describe=describe_b11, figure=figure_b11,
                           figure_name="multi_head"))
