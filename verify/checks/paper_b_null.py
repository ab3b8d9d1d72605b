"""Claim B2 of paper B: attention on the null model (labels independent of ``X``) against its deterministic equivalent
for several activations and aspect ratios, with the first reconstruction of the system as a negative control and the
Gaussian-equivalent kernel as a diagnostic.  Shared machinery and the rules: :mod:`verify.checks._paper_b`."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import torch

import theory
from numerics.threads import thread_map as _map_threads
from numerics.rmt import gaussian_equivalent_kernel, interpolation_error_label_average

from ..claim import Claim, register
from ..context import CheckContext
from ..results import Comparison, with_key
from .. import figures as F
from ..verdicts import Judgement
from ._finite_size import finite_size_test
from ._paper_b import (attention_theory, Cell, judge_panels, mc_version, p_of, Panel, panel_theory, panels_data,
                       plot_two_sizes, Rec, simulate_panels, SIZE, TwoSizes)

#: B2's activations and aspect ratios ``p/n``
B2_ACTIVATIONS = ["tanh", "erf", "relu"]
B2_CS = [0.25, 2.0]


@dataclass(frozen=True, eq=False)
class GECell:
    """The Gaussian-equivalent diagnostic of B2 at one ``c``: kernels ``a1 (X^T X/p - diag) + s_f Xi/sqrt p``."""

    c: float
    n: int
    act: str
    a1: float
    nu: float
    gammas: np.ndarray
    trials: int


@dataclass(frozen=True)
class B2Sizes:
    """B2's design at one profile: the size ``n`` and the trials (at ``n // 2``, ``n``) per ``c``, the gammas, the
    activations, and the ``c`` of the Gaussian-equivalent cells."""

    ns: Mapping[float, int]
    gammas: np.ndarray
    trials: Mapping[float, tuple[int, int]]
    activations: tuple[str, ...] = tuple(B2_ACTIVATIONS)
    ge_cs: tuple[float, ...] = tuple(B2_CS)


B2_SIZES = {
    "paper": B2Sizes({0.25: 2048, 2.0: 1024}, np.logspace(-3, 0, 7), {0.25: (40, 20), 2.0: (40, 20)}),
    "quick": B2Sizes({0.25: 1024, 2.0: 256}, np.logspace(-3, 0, 7), {0.25: (48, 24), 2.0: (80, 40)}, ge_cs=(0.25,)),
    "smoke": B2Sizes({0.25: 64, 2.0: 32}, np.logspace(-2, 0, 2), {0.25: (4, 3), 2.0: (4, 3)}, activations=("tanh",),
                     ge_cs=(0.25,)),
}


def _b2_panel(cfg: B2Sizes, cval: float, act: str) -> Panel:
    """One activation at one ``c``: a label-averaged null-attention cell over the gamma grid."""
    g = cfg.gammas
    cell = Cell(cval, 0.0, g, ("B2", act, cval, SIZE), activation=act, label_average=True)
    names = tuple(f"{act} c={cval} gamma={x:.3g}" for x in g)
    return Panel(f"{act}_c{cval}", f"{act} c={cval}", cfg.ns[cval], cfg.trials[cval], (cell,), names)


def _design_b2(ctx: CheckContext) -> Rec:
    """One panel per (c, activation), c outermost; the Gaussian-equivalent cells (first activation)."""
    cfg = B2_SIZES[ctx.profile]
    acts = list(cfg.activations)
    mom = theory.hermite_moments(acts[0])
    ge = tuple(GECell(cval, cfg.ns[cval], acts[0], mom.a1, mom.nu,
                      np.array([0.01, 0.1]) if cval > 1 else np.array([0.1, 0.316]), cfg.trials[cval][1] // 2 + 2)
               for cval in cfg.ge_cs)
    return dict(panels=tuple(_b2_panel(cfg, cval, act) for cval in B2_CS for act in acts), ge=ge)


def _predict_b2(ctx: CheckContext, design: Rec) -> Rec:
    """``theory`` and ``spec`` (SPEC's reconstructed system, the negative control) by panel key; ``ge``: both at
    the diagnostic's gammas, by ``c``."""
    panels = design["panels"]
    ge = {cell.c: tuple(attention_theory(cell.gammas, cell.c, cell.act, system) for system in (None, "spec"))
          for cell in design["ge"]}
    return dict(theory={p.key: panel_theory(p) for p in panels},
                spec={p.key: panel_theory(p, "spec") for p in panels}, ge=ge)


def _ge_label_average(seed: int, n: int, p: int, a1: float, nu: float, gammas: np.ndarray, trials: int,
                      n_jobs: int) -> dict[str, np.ndarray]:
    """Label-averaged errors ``(trials, len(gammas))`` of Gaussian-equivalent kernels, symmetric (GOE) noise
    then independent-entry noise, drawn in that order from one stream (the threads keep the stream order)."""
    rng = np.random.default_rng(seed)  # one stream for both noise models, in this order

    def draws(sym: bool):  # consumed in order by the dispatcher: the stream order never changes
        for _ in range(trials):
            X = rng.standard_normal((p, n))
            yield X, gaussian_equivalent_kernel(X, a1, nu, rng, symmetric=sym)

    def error(XK: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        return interpolation_error_label_average((torch.from_numpy(XK[0]) @ torch.from_numpy(XK[1])).numpy(), gammas)

    return {("symmetric" if sym else "independent"): np.array(_map_threads(error, draws(sym), n_jobs))
            for sym in (True, False)}


def _simulate_b2(ctx: CheckContext, design: Rec) -> Rec:
    """``panels``: :class:`TwoSizes` by panel key; ``ge``: ``{"symmetric", "independent"}`` trial errors by ``c``."""
    panels = simulate_panels(ctx, design["panels"], "null attention sweeps")
    ge = {}
    with ctx.progress("Gaussian-equivalent diagnostic", total=len(design["ge"])) as bar:
        for cell in design["ge"]:
            seed, p = ctx.seed_for("B2-GE", cell.c, cell.n), p_of(cell.n, cell.c)
            key = dict(c=cell.c, n=cell.n, p=p, act=cell.act, gammas=cell.gammas, trials=cell.trials, seed=seed)
            compute = functools.partial(_ge_label_average, seed, cell.n, p, cell.a1, cell.nu, cell.gammas,
                                        cell.trials, ctx.n_jobs)
            ge[cell.c] = ctx.cached("gaussian_equivalent", key, compute, version=mc_version(_ge_label_average))
            bar.advance()
    return dict(panels=panels, ge=ge)


def _spec_fails(p: Panel, pred_spec: np.ndarray, m: TwoSizes) -> int:
    """Points of ``p`` the finite-size rule rejects against SPEC's reconstructed system (the negative control)."""
    return sum(not finite_size_test(pred_spec[i], m.m_s[i], m.se_s[i], m.m_l[i], m.se_l[i], p.ns / p.n,
                                    p.trials).passed for i in range(len(p.names)))


def _ge_diagnostic(cell: GECell, preds: tuple[np.ndarray, np.ndarray], ge: dict[str, np.ndarray]) -> tuple[dict, str]:
    """Relative gaps (and SEs) of both noise models against the theory and SPEC's system, and their notes text."""
    pred, pred_spec = preds
    out = {}
    for name in ("symmetric", "independent"):
        v = ge[name]
        out[name] = dict(gammas=cell.gammas, rel_gap=(v.mean(0) - pred) / pred,
                         rel_se=v.std(0, ddof=1) / math.sqrt(v.shape[0]) / pred,
                         rel_gap_spec_system=(v.mean(0) - pred_spec) / pred_spec)

    def fmt(key: str, k: str) -> str:
        return ", ".join(f"{r:+.2e}+-{e:.1e}" for r, e in zip(out[key][k], out[key]["rel_se"]))

    return out, (
        f"{cell.act} p/n={cell.c}, n={cell.n}, gamma={[float(x) for x in cell.gammas]}: relative gap (MC - theory)"
        f"/theory; symmetric GOE noise vs theory {fmt('symmetric', 'rel_gap')}, vs SPEC system "
        f"{fmt('symmetric', 'rel_gap_spec_system')}; independent-entry noise vs theory "
        f"{fmt('independent', 'rel_gap')}, vs SPEC system {fmt('independent', 'rel_gap_spec_system')}"
    )


def _describe_b2(design: Rec, prediction: Rec, measurement: Rec, comparisons: list[Comparison]) -> tuple[str, Rec]:
    panels, meas, th, spec = design["panels"], measurement["panels"], prediction["theory"], prediction["spec"]
    data = panels_data(design, prediction, measurement)
    diag_txt = []
    for cell in design["ge"]:
        out, text = _ge_diagnostic(cell, prediction["ge"][cell.c], measurement["ge"][cell.c])
        data[f"GE_diagnostic_{cell.act}_c{cell.c}"] = out
        diag_txt.append(text)
    n_failed = sum(c.outcome == "FAIL" for c in comparisons)
    # the largest relative gap at the larger size (first of equals) and the name of its point
    rel = np.concatenate([np.abs(meas[p.key].m_l - th[p.key]) / np.maximum(np.abs(th[p.key]), 1e-300) for p in panels])
    worst = (float(rel.max()), [name for p in panels for name in p.names][int(rel.argmax())])
    control = []
    for p in panels:  # negative control (not a comparison): the same rule against SPEC's reconstructed system
        m, pred_spec = meas[p.key], spec[p.key]
        control.append(f"{p.cells[0].activation} p/n={p.cells[0].c}: {_spec_fails(p, pred_spec, m)}/{len(p.names)} "
                       f"points fail, max rel. gap {float(np.max(np.abs(m.m_l - pred_spec) / pred_spec)):.2g}")
    notes = (
        "Null model (mu = 0, W = I), diagonal removed, centred f; theory.attention_error (the corrected system with "
        "the GOE term kappa; SPEC's reconstruction is system='spec'); label-averaged Monte Carlo. Largest relative "
        f"gap at n_l: {worst[0]:.3g} ({worst[1]}). {n_failed} of {len(comparisons)} comparisons fail. "
        "NEGATIVE CONTROL (same Monte Carlo and rule, SPEC's system as the prediction): " + "; ".join(control)
        + ". Gaussian-equivalent diagnostic (a1 (X^T X/p - diag) + s_f Xi/sqrt p at the larger size): "
        + " | ".join(diag_txt) + "."
    )
    return notes, data


def _b2_column(ax: Any, rax: Any, design: Rec, prediction: Rec, measurement: Rec, comps: list[Comparison],
               cval: float) -> None:
    """The activations at one p/n: dense theory, SPEC's system (residuals, dashed), Monte Carlo, outcomes."""
    panels = [p for p in design["panels"] if p.cells[0].c == cval]
    lines, outs = [], []
    for k, p in enumerate(panels):
        cell, pred, m, color = p.cells[0], prediction["theory"][p.key], measurement["panels"][p.key], F.COLORS[k]
        gd = F.dense_grid(cell.gammas, per_decade=7, n_min=16)
        th = attention_theory(gd, cell.c, cell.activation)
        ax.plot(gd, th, "-", color=color, lw=1.3, zorder=2)
        rax.plot(gd, (attention_theory(gd, cell.c, cell.activation, "spec") - th) / th, "--", color=color, lw=1.1)
        plot_two_sizes(ax, rax, cell.gammas * (1.0 + 0.04 * (k - 1)), pred, m, color, labelled=False)
        mine = with_key(comps, panel=p.key)
        outs += mine
        lines.append(f"{cell.activation}: {F.outcome_text(mine)}; SPEC: "
                     f"{_spec_fails(p, prediction['spec'][p.key], m)}/{len(p.names)} fail")
    p0 = panels[0]
    ax.set(xscale="log", ylabel="interpolation error E",
           title=f"p/n = {cval:g}: n = {p0.n} ({p0.trials[1]} trials), n/2 = {p0.ns} ({p0.trials[0]} trials)")
    lo, hi = ax.get_ylim()
    if hi / max(lo, 1e-300) > 10:
        ax.set_yscale("log")
    rax.set(xlabel="ridge parameter γ")
    F.key_numbers(ax, lines, verdict=F.worst_outcome(outs), loc="upper left")
    F.headroom(ax, 0.3)


@F.paper_figure
def _figure_b2(design: Rec, prediction: Rec, measurement: Rec, judgement: Judgement) -> Any:
    """Per p/n: attention error vs gamma (dense theory, Monte Carlo at n/2 and n); gaps below, SPEC's system dashed."""
    verdict, comps = judgement.verdict, list(judgement.comparisons)
    fig, axes = F.subplots(2, len(B2_CS), panel=(4.6, 2.4), extra=1.2, sharex="col", height_ratios=(2.4, 1.6))
    for j, cval in enumerate(B2_CS):
        _b2_column(axes[0, j], axes[1, j], design, prediction, measurement, comps, cval)
    acts = [p.cells[0].activation for p in design["panels"] if p.cells[0].c == B2_CS[0]]
    F.legend(axes[0, 0], outside=True, ncol=3, extra=(
        [F.proxy(f"f = {a}", color=F.COLORS[k], marker=None, ls="-", lw=4) for k, a in enumerate(acts)]
        + [F.proxy("theory: corrected deterministic equivalent", color=F.THEORY, marker=None, ls="-"),
           F.proxy("SPEC's reconstructed system, relative to theory (negative control)", color=F.THEORY, marker=None,
                   ls="--"),
           F.proxy("Monte Carlo, larger size n", color=F.THEORY),
           F.proxy("Monte Carlo, smaller size n/2", color=F.THEORY, marker="s", mfc="white")]))
    F.suptitle(fig, "B2", "null-model attention (diagonal removed) vs the deterministic equivalent",
               "μ = 0, W = I, centred f, label-averaged Monte Carlo; bars ±3 SE; bottom: gap to theory, "
               "dashed: SPEC's system", verdict)
    return fig


STATEMENT_B2 = "Null-model attention deterministic equivalent matches simulation (several f, c < 1 and c > 1)"

CLAIM_B2 = register(Claim(id="B2", paper="B", statement=STATEMENT_B2, design=_design_b2, predict=_predict_b2,
                          simulate=_simulate_b2, judge=judge_panels, describe=_describe_b2, figure=_figure_b2,
                          figure_name="null_attention"))
