"""Claim B5 of paper B: the cosine activation (``a1 = 0``) against a scaled tanh of equal ``nu``, the sign of the
paired difference of their errors with and without signal.  With signal cos cannot use the label direction (its
error stays near the no-signal value) while the linear component lets the scaled tanh use it; with random inputs the
gap exists only for ``p/n > 1`` and small gamma (for ``p/n < 1`` both tend to ``1 - c``).  Shared machinery and the
rules: :mod:`verify.checks._paper_b`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp
import theory
from theory.symbols import x as xs

from ..claim import Claim, register
from ..context import CheckContext
from ..results import Comparison, with_key
from ..statistics import mean_se
from .. import figures as F
from ..verdicts import Judgement
from ._paper_b import attention_theory, cell_model, mc_cached, mc_settings, p_of, paired_positive, Rec
from ._structured import structured_theory


def _b5_key(cval: float, snr: float) -> str:
    return f"c{cval}_snr{snr}"


@dataclass(frozen=True)
class B5Sizes:
    """B5's design at one profile: the size ``n``, the gammas and the Monte Carlo trials (paired draws)."""

    n: int
    gammas: np.ndarray
    trials: int


B5_SIZES = {
    "paper": B5Sizes(1024, np.array([1e-3, 1e-2]), 20),
    "quick": B5Sizes(256, np.array([1e-3, 1e-2]), 16),
    "smoke": B5Sizes(32, np.array([1e-2]), 4),
}


def _design_b5(ctx: CheckContext) -> Rec:
    """cos (centred) vs ``scale * tanh`` with the scale that equalises nu; configurations ``(p/n, snr)``."""
    cfg = B5_SIZES[ctx.profile]
    m_cos = theory.hermite_moments(theory.activation("cos", centered=True))
    m_tanh = theory.hermite_moments(theory.activation("tanh", centered=True))
    scale = math.sqrt(m_cos.nu / m_tanh.nu)
    lin = sp.Float(scale) * sp.tanh(xs)
    return dict(n=cfg.n, gammas=cfg.gammas, trials=cfg.trials, configs=[(2.0, 0.0), (2.0, 4.0), (0.5, 4.0)],
                m_cos=m_cos, m_lin=theory.hermite_moments(lin), scale=scale, lin=lin)


def _predict_b5(ctx: CheckContext, design: Rec) -> Rec:
    """By configuration key: ``(E_cos, E_lin)`` on the gammas for ``snr = 0`` (null theory); ``None`` with signal."""
    g, lin = design["gammas"], design["lin"]
    return {_b5_key(c, snr): (attention_theory(g, c, "cos"), attention_theory(g, c, lin)) if snr == 0.0 else None
            for c, snr in design["configs"]}


def _simulate_b5(ctx: CheckContext, design: Rec) -> Rec:
    """``configs``: by key, paired trial errors ``{"cos", "lin"}`` ``(trials, gammas)`` (snr = 0: label-averaged)."""
    n, g, tr = design["n"], design["gammas"], design["trials"]
    out = {}
    with ctx.progress("cos vs scaled tanh", total=len(design["configs"])) as bar:
        for cval, snr in design["configs"]:
            p, settings = p_of(n, cval), mc_settings(ctx, tr, ctx.seed_for("B5", cval, snr, n))
            la = snr == 0.0  # null model: exact label average (see B2)
            out[_b5_key(cval, snr)] = {
                name: mc_cached(ctx, cell_model(n, p, snr, act), p, g, settings, label_average=la)[2]
                for name, act in (("cos", "cos"), ("lin", design["lin"]))
            }
            bar.advance()
    return dict(configs=out)


def judge_b5(design: Rec, prediction: Rec, measurement: Rec) -> list[Comparison]:
    """E_cos - E_scaled_tanh > 0 at every configuration and gamma, paired (pure)."""
    comps = []
    for cval, snr in design["configs"]:
        key = _b5_key(cval, snr)
        th, m = prediction[key], measurement["configs"][key]
        for i, g in enumerate(design["gammas"]):
            pred = float(th[0][i] - th[1][i]) if th is not None else "E_cos > E_lin"
            comps.append(paired_positive(f"p/n={cval} snr={snr} gamma={g:.2g}: E_cos - E_scaled_tanh > 0", pred,
                                         m["cos"][:, i] - m["lin"][:, i],
                                         key={"config": key, "gamma": float(g)}))
    return comps


def _b5_data(design: Rec, prediction: Rec, measurement: Rec) -> Rec:
    m_cos, m_lin = design["m_cos"], design["m_lin"]
    # equal nu holds by construction (the scale is chosen from the two nu's): recorded in data/notes, not judged
    data: Rec = dict(cos=dict(a1=m_cos.a1, nu=m_cos.nu),
                     scaled_tanh=dict(scale=design["scale"], a1=m_lin.a1, nu=m_lin.nu),
                     equal_nu_rel_diff=abs(m_lin.nu - m_cos.nu) / m_cos.nu)
    for cval, snr in design["configs"]:
        key = _b5_key(cval, snr)
        th, m = prediction[key], measurement["configs"][key]
        (cos, cos_se), (lin, lin_se) = mean_se(m["cos"]), mean_se(m["lin"])
        data[key] = dict(gammas=design["gammas"], cos=cos, cos_se=cos_se, lin=lin, lin_se=lin_se,
                         theory_cos=None if th is None else th[0], theory_lin=None if th is None else th[1])
    return data


def _describe_b5(design: Rec, prediction: Rec, measurement: Rec, comparisons: list[Comparison]) -> tuple[str, Rec]:
    data = _b5_data(design, prediction, measurement)
    m_cos, m_lin = design["m_cos"], design["m_lin"]
    notes = (f"cos centred (a1 = {m_cos.a1:.2g}, nu = {m_cos.nu:.4f}) vs {design['scale']:.4f} * tanh (a1 = "
             f"{m_lin.a1:.4f}, same nu by construction of the scale; quadrature relative difference "
             f"{data['equal_nu_rel_diff']:.2g}, not judged). Paired draws (snr = 0: label-averaged).")
    return notes, data


def _b5_theory(cval: float, snr: float, act: Any, gammas: np.ndarray) -> np.ndarray:
    """The null theory (``snr = 0``: the claim's prediction) or, with signal, the structured theory of
    :mod:`theory.structured` (the project's derivation, judged in B7; drawn here for reference only)."""
    if snr == 0.0:
        return attention_theory(gammas, cval, act)
    return structured_theory(gammas, cval, snr, (0.0, "none"), act)


def _b5_panel(ax: Any, design: Rec, data: Rec, comps: list[Comparison], cval: float, snr: float) -> None:
    """One (p/n, snr): dense theory of both activations, paired Monte Carlo, the paired differences' outcomes."""
    g = design["gammas"]
    dd = data[_b5_key(cval, snr)]
    style = "-" if snr == 0.0 else "--"
    for k, (key, act) in enumerate((("cos", "cos"), ("lin", design["lin"]))):
        F.theory_curve(ax, g, lambda x, a=act: _b5_theory(cval, snr, a, x), color=F.COLORS[k],
                       grid=F.dense_grid(g, per_decade=10, n_min=30, pad=0.5), ls=style, label="_nolegend_")
        F.mc_points(ax, g, dd[key], dd[f"{key}_se"], label="_nolegend_", color=F.COLORS[k], marker="os"[k])
    mine = with_key(comps, config=_b5_key(cval, snr))
    lines = ["Δ = E_cos − E_tanh (paired)"] + [f"γ = {gv:g}: Δ = {c.measured:.3g} ± {c.uncertainty:.2g}"
                                                for gv, c in zip(g, mine)]
    ax.set(xscale="log", yscale="log", xlabel="ridge parameter γ", ylabel="interpolation error E",
           title=f"p/n = {cval:g}, ‖μ‖² = {snr:g}" + (" (null model)" if snr == 0.0 else " (with signal)"))
    F.key_numbers(ax, lines, verdict=F.worst_outcome(mine))


@F.paper_figure
def _figure_b5(design: Rec, prediction: Rec, measurement: Rec, judgement: Judgement) -> Any:
    """Per configuration: cos vs the scaled tanh of equal nu (dense theory, paired Monte Carlo, the differences)."""
    verdict, comps = judgement.verdict, list(judgement.comparisons)
    configs = design["configs"]
    fig, axes = F.subplots(1, len(configs), panel=(3.9, 3.3), extra=1.2)
    data = _b5_data(design, prediction, measurement)
    for ax, (cval, snr) in zip(axes[0], configs):
        _b5_panel(ax, design, data, comps, cval, snr)
    F.legend(axes[0, 0], outside=True, ncol=3, extra=[
        F.proxy(r"cos, centred ($a_1 = 0$)", color=F.COLORS[0], marker="o"),
        F.proxy(f"{design['scale']:.3f} tanh ($a_1$ = {design['m_lin'].a1:.3f}), same ν", color=F.COLORS[1],
                marker="s"),
        F.proxy("theory, null model (the prediction)", color=F.THEORY, marker=None, ls="-"),
        F.proxy("structured theory with signal (project's derivation, judged in B7; reference only)", color=F.THEORY,
                marker=None, ls="--"),
        F.proxy("Monte Carlo, paired draws, ±3 SE", color=F.THEORY, marker="o")])
    F.suptitle(fig, "B5", "cos (no linear Hermite component) vs a linear-component activation at equal ν",
               f"n = {design['n']}, {design['trials']} paired trials (‖μ‖² = 0: label-averaged), ν = "
               f"{design['m_cos'].nu:.4f}; claim: E_cos − E_tanh > 0 (paired, > 3 SE)", verdict)
    return fig


STATEMENT_B5 = "a1 = 0 (e.g. cos) memorises poorly: a linear component of f is needed"

CLAIM_B5 = register(Claim(id="B5", paper="B", statement=STATEMENT_B5, design=_design_b5, predict=_predict_b5,
                          simulate=_simulate_b5, judge=judge_b5, describe=_describe_b5, figure=_figure_b5,
                          figure_name="cos_vs_linear"))
