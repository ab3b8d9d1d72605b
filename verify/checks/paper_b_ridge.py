"""Claim B1 of paper B: its Figure 1, the interpolation error of ridge regression against the Marchenko-Pastur
deterministic equivalent (panels in gamma, c and snr), judged by the finite-size rule at two sizes.  Shared
machinery and the rules: :mod:`verify.checks._paper_b`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..claim import Claim, register
from ..context import CheckContext
from ..results import Comparison, with_key
from .. import figures as F
from ..verdicts import Judgement
from ._paper_b import (Cell, edge_flag, judge_panels, Panel, panel_theory, panels_data, plot_two_sizes, Rec,
                       ridge_theory, simulate_panels, SIZE, TwoSizes)


@dataclass(frozen=True)
class Sweep:
    """A panel of B1 at size ``n`` (and ``n // 2``): ridge's error at ``(c, snr)`` over ``gammas`` (1a), or at one
    gamma over the values ``xs`` of ``c`` (1b, at ``snr``) or of ``snr`` (1c, at ``c``)."""

    n: int
    trials: tuple[int, int]
    gammas: np.ndarray
    c: float = 0.0
    snr: float = 0.0
    xs: tuple[float, ...] = ()


#: the one gamma of panels 1b and 1c
_G = np.array([1e-5])
B1_SIZES = {
    "paper": (Sweep(512, (200, 100), np.logspace(-5, 1, 13), 4.0, 1.0),
              Sweep(4096, (8, 4), _G, snr=1.0, xs=(0.25, 0.5, 1.0, 1.5, 2.0)),
              Sweep(2048, (100, 50), _G, c=0.25, xs=(0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0))),
    "quick": (Sweep(256, (80, 40), np.logspace(-5, 1, 13), 4.0, 1.0),
              Sweep(256, (60, 30), _G, snr=1.0, xs=(0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)),
              Sweep(512, (60, 30), _G, c=0.25, xs=(0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0))),
    "smoke": (Sweep(32, (4, 3), np.logspace(-3, 0, 3), 4.0, 1.0),
              Sweep(32, (4, 3), _G, snr=1.0, xs=(0.5, 2.0)),
              Sweep(64, (4, 3), _G, c=0.25, xs=(0.0, 1.0))),
}


def _design_b1(ctx: CheckContext) -> Rec:
    """Panels 1a (gamma sweep), 1b (p/n sweep), 1c (snr sweep) of the profile; points near c = 1 flagged."""
    a, b, cc = B1_SIZES[ctx.profile]
    names_a = tuple(f"1a gamma={g:.3g} (c={a.c}, snr={a.snr})" for g in a.gammas)
    panels = [Panel("1a", "1a", a.n, a.trials, (Cell(a.c, a.snr, a.gammas, ("1a", SIZE)),), names_a)]
    flag = {x: edge_flag(x, b.gammas[0], b.n) for x in b.xs}
    # panels 1b and 1c sweep x at one gamma: one single-gamma cell per x, at (c, snr) = point(x)
    for key, s, x_name, point, name in (
            ("1b", b, "c", lambda x: (x, b.snr), lambda x: f"1b p/n={x} (n={b.n}, gamma={b.gammas[0]:g}){flag[x]}"),
            ("1c", cc, "snr", lambda x: (cc.c, x), lambda x: f"1c ||mu||^2={x} (c={cc.c}, gamma={cc.gammas[0]:g})")):
        cells = tuple(Cell(*point(x), s.gammas, (key, SIZE, x)) for x in s.xs)
        panels.append(Panel(key, key, s.n, s.trials, cells, tuple(map(name, s.xs)), x_name, s.xs))
    return dict(panels=tuple(panels), flags=[f"1b c={x}:{f}" for x, f in flag.items() if f], profile=ctx.profile)


def _predict_b1(ctx: CheckContext, design: Rec) -> Rec:
    """``theory``: E_RR at every point, by panel."""
    return dict(theory={p.key: panel_theory(p) for p in design["panels"]})


def _simulate_b1(ctx: CheckContext, design: Rec) -> Rec:
    """``panels``: :class:`TwoSizes` by panel key."""
    return dict(panels=simulate_panels(ctx, design["panels"], "ridge sweeps 1a, 1b, 1c", wishart=True))


def _describe_b1(design: Rec, prediction: Rec, measurement: Rec, comparisons: list[Comparison]) -> tuple[str, Rec]:
    notes = (f"Ridge E_RR (theory.ridge_error_values) vs Monte Carlo, balanced labels, mu = sqrt(snr) e_1; sizes "
             f"n/2 and n with equal p/n (profile {design['profile']}). Where p >= n the Monte Carlo draws X^T X "
             "itself (its Wishart part by Bartlett's decomposition): the law of X^T X formed from X.")
    if design["flags"]:
        notes += " Flagged points near c = 1 (same rule applied, see their names): " + "; ".join(design["flags"])
    return notes, panels_data(design, prediction, measurement)


def _b1_dense(p: Panel) -> tuple[np.ndarray, np.ndarray]:
    """E_RR of a B1 panel on a dense grid of its swept parameter (gamma, p/n clustered at 1, or snr)."""
    cell = p.cells[0]
    if p.x_name is None:
        g = F.dense_grid(cell.gammas, per_decade=30)
        return g, ridge_theory(g, cell.c, cell.snr)
    xs = np.asarray(p.xs, dtype=float)
    if p.x_name == "c":  # the 8-decade cliff at p/n = 1: points clustered there
        near = np.geomspace(1e-4, 0.25, 80)
        grid = np.unique(np.concatenate([np.linspace(xs.min(), xs.max(), 300), 1 - near, 1 + near, xs]))
        grid = grid[(grid >= xs.min()) & (grid <= xs.max())]
        return grid, np.array([ridge_theory(cell.gammas, c, cell.snr)[0] for c in grid])
    grid = F.dense_grid(xs, log=False, n_min=200)
    return grid, np.array([ridge_theory(cell.gammas, cell.c, x)[0] for x in grid])


def _b1_panel(ax: Any, rax: Any, p: Panel, pred: np.ndarray, m: TwoSizes, comps: list[Comparison]) -> None:
    """One panel of Figure 1 (dense theory, Monte Carlo at two sizes) over its residuals, outcomes, largest gap."""
    cell, mine = p.cells[0], with_key(comps, panel=p.key)
    x = np.asarray(cell.gammas if p.x_name is None else p.xs, dtype=float)
    scale = float(p.n) if p.x_name == "c" else 1.0  # panel 1b is plotted over p = (p/n) n
    xd, yd = _b1_dense(p)
    ax.plot(xd * scale, yd, "-", color=F.THEORY, lw=1.4, label="theory (deterministic equivalent)", zorder=2)
    plot_two_sizes(ax, rax, x * scale, pred, m, F.COLORS[0])
    title, xlabel, loc = {
        None: (f"(a) γ sweep: p/n = {cell.c:g}, ‖μ‖² = {cell.snr:g}\nn = {p.ns} and {p.n}", "ridge parameter γ",
               "lower right"),
        "c": (f"(b) p sweep: γ = {cell.gammas[0]:g}, ‖μ‖² = {cell.snr:g}\nn = {p.n} (open: n = {p.ns}, same p/n)",
              f"number of features p (n = {p.n})", "lower left"),
        "snr": (f"(c) ‖μ‖² sweep: p/n = {cell.c:g}, γ = {cell.gammas[0]:g}\nn = {p.ns} and {p.n}",
                "signal strength ‖μ‖²", "upper right")}[p.x_name]
    rax.set_xlabel(xlabel)
    ax.set_ylabel("interpolation error E")
    ax.set_title(title, fontsize=F.FONT["title"] - 0.5)
    if p.x_name == "c":
        _b1_threshold(ax, rax, p, x)
    if p.x_name != "snr":
        ax.set_yscale("log")
    if p.x_name is None:
        ax.set_xscale("log")
    shrink = ", ".join(c.outcome for c in with_key(mine, quantity="shrink"))
    rel = float(np.max(np.abs(m.m_l - pred) / np.abs(pred)))
    F.key_numbers(ax, [f"finite-size rule: {F.outcome_text(with_key(mine, quantity='point'))}",
                       f"gap shrinks ~ n^-1/2: {shrink}", f"max |rel. gap| at n = {p.n}: {rel:.2%}"],
                  verdict=F.worst_outcome(mine), loc=loc)


def _b1_threshold(ax: Any, rax: Any, p: Panel, x: np.ndarray) -> None:
    """Panel 1b: the interpolation threshold p = n, the points flagged near it, p/n on the top axis."""
    flagged = [c for c in x if edge_flag(c, float(p.cells[0].gammas[0]), p.n)]
    for a in (ax, rax):
        a.axvline(p.n, color="#777777", ls=":", lw=1.0, label="interpolation threshold p = n" if a is ax else None)
        if flagged:
            a.axvspan(min(flagged) * p.n, max(flagged) * p.n, color="#999999", alpha=0.15, lw=0,
                      label="flagged: lower MP edge within finite-size reach" if a is ax else None)
    top = ax.secondary_xaxis("top", functions=(lambda v: v / p.n, lambda c: c * p.n))
    top.set_xlabel("p/n")
    top.tick_params(labelsize=8)
    if np.max(np.abs(rax.get_ylim())) > 0.5:
        rax.set_yscale("symlog", linthresh=0.1)


@F.paper_figure
def _figure_b1(design: Rec, prediction: Rec, measurement: Rec, judgement: Judgement) -> Any:
    """Paper B's Figure 1 (axes gamma, p, ||mu||^2): dense theory, Monte Carlo at n/2 and n, relative residuals."""
    verdict, comps = judgement.verdict, list(judgement.comparisons)
    panels = design["panels"]
    fig, axes = F.subplots(2, 3, panel=(3.9, 2.2), extra=1.0, sharex="col", height_ratios=(2.6, 1.2))
    for k, p in enumerate(panels):
        _b1_panel(axes[0, k], axes[1, k], p, prediction["theory"][p.key], measurement["panels"][p.key], comps)
    F.legend(axes[0, 1], outside=True, ncol=3)
    trials = ", ".join(f"{p.key}: {p.trials[0]}/{p.trials[1]}" for p in panels)
    F.suptitle(fig, "B1", "ridge interpolation error, theory vs Monte Carlo (paper B, Figure 1)",
               f"balanced labels, μ = √‖μ‖² e₁; bars ±3 SE; trials at n/2 / n: {trials}; bottom row: relative gap",
               verdict)
    return fig


STATEMENT_B1 = ("Ridge deterministic equivalent matches simulation on the three Figure-1 sweeps: at every point the "
                "gap to it at n is at most 2^-1/2 times the gap at n/2 up to noise (finite-size rule), and each "
                "sweep's mean relative gap shrinks at least like n^-1/2")

CLAIM_B1 = register(Claim(id="B1", paper="B", statement=STATEMENT_B1, design=_design_b1, predict=_predict_b1,
                          simulate=_simulate_b1, judge=judge_panels, describe=_describe_b1, figure=_figure_b1,
                          figure_name="figure1"))
