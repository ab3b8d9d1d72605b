"""Check B9 (beyond the papers): under strong alignment attention beats ridge as ``gamma -> 0``.

Setting: paper B's model with aligned spikes ``w_K = w_Q = sqrt(t sqrt p) e_1`` along ``mu = sqrt(snr) e_1``,
diagonal removed, ``t = ||w_K|| ||w_Q|| / sqrt p`` held fixed as ``p`` grows (docs/strong_alignment.md).

Prediction (*derived by the project*, :func:`theory.strong_alignment_gap`): for ``c < 1`` the limit of
``E_att(0) - E_RR(0)`` at fixed ``t > 0`` is a Bayes-predictor part plus a leverage part from a matrix Dyson
equation: negative for erf and tanh at every ``t > 0`` (attention wins), positive for gelu at ``c = 1/2``
(docs/strong_alignment.md, the sign diagram).  For ``c >= 1`` both errors vanish as ``gamma -> 0`` and attention's
decays more slowly (``sqrt(gamma)`` against ``gamma^2``, B3), so it does not win.

Measurement (:func:`numerics.strong_alignment_mc`): attention and ridge on the same draws, the labels integrated
out given the data, at ``p`` and ``4p``; the settings of one ``c`` share their draws (their comparisons are then
dependent, which Holm's procedure allows).

Comparisons (Holm within the check, family-wise false-FAIL rate ``ALPHA_CHECK``):

1. *gap*, per ``(f, c < 1, t)``: the finite-size rule of :mod:`verify.checks._finite_size` on the paired gap
   ``E_att(0) - E_RR(0)`` minus the theory at each size, at ``p`` and ``4p`` (``q = 1/2``; Student-t on the
   estimated SEs).  The theory at size ``p`` is the same equation at finite ``p`` (the spike's coefficient
   ``t + 1/sqrt p`` and the kernel's mean part at ``n = p/c`` tokens); the rule allows what it leaves out to decay
   like ``p^(-1/2)``.  The design takes ``t >= 1/2`` (the capture of the Bayes predictor is partial while
   ``sqrt(p) t^3`` is small).  Power: :func:`detectable_error` (``data["rows"]``, ``detectable``).
2. *sign*, per ``(f, c < 1, t)``: the paired gap at ``4p`` has the prediction's sign (one-sided, PASS at 5 %).
3. *c > 1*, per ``(f, c, t)`` of ``wide`` (:func:`theory.strong_spike_attention_error`, the same theory at
   ``gamma > 0``, minus ridge's error): the gap at ``gamma_wide[1]`` by the same rule against the theory at each
   size, and no win, ``E_att - E_RR > 0``, at the smaller ``gamma_wide[0]`` at ``4p``.

The headline is the gap comparison of erf, ``c = 1/2``, ``t = 1``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..claim import Claim, register
from .. import figures as F
from ..statistics import scalar_mean_se
from ..context import CheckContext
from ..results import Comparison, with_key
from ..verdicts import Judgement
from ._finite_size import DECAY
from ._strong_alignment import (B9_PROFILES, B9Profile, HEADLINE, Point, Setting, cell_gammas, detectable_error,
                                draw_groups, finite_parts, gap_at, gap_comparison, limit_gap, prefetch, setting_name,
                                sign_comparison, strong_alignment_cells)


@dataclass(frozen=True)
class B9Prediction:
    """Theory by point ``(setting, gamma)``: the limit (the claim; its sign is judged); by setting of ``c < 1``: the
    limit's two parts; by ``(point, p)``: the same theory at size ``p`` (the finite-size equation; judged); by
    ``(activation, c)``: the limit on the figure's ``t`` grid (computed only where figures are drawn)."""

    limit: dict
    t1: dict
    t2: dict
    at_p: dict
    curve: dict = field(default_factory=dict)


def design_b9(ctx: CheckContext) -> B9Profile:
    return B9_PROFILES[ctx.profile]


def points(design: B9Profile) -> list[Point]:
    return [(s, g) for s, gammas in cell_gammas(design) for g in gammas]


def predict_b9(ctx: CheckContext, design: B9Profile) -> B9Prediction:
    """The limit at every point (for ``c < 1`` its two parts) and the theory at both sizes at every judged point
    (:func:`limit_points`), every solve in one :func:`prefetch`."""
    snr, wide_gamma = design.snr, design.gamma_wide[1]
    curves = list(dict.fromkeys((a, c) for a, c, _ in design.settings)) if ctx.report_dir is not None else []
    prefetch(ctx, [(limit_gap, (c, act, snr, t)) for act, c, t in design.settings]
             + [(finite_parts, (c, act, snr, t, p)) for act, c, t in design.settings for p in design.ps]
             + [(gap_at, (g, c, act, snr, t)) for act, c, t in design.wide for g in design.gamma_wide]
             + [(gap_at, (wide_gamma, c, act, snr, t, p)) for act, c, t in design.wide for p in design.ps]
             + [(limit_gap, (c, act, snr, t, 20)) for act, c in curves for t in design.curve_ts])
    limit, t1, t2, at_p = {}, {}, {}, {}
    for s in design.settings:
        act, c, t = s
        gap = limit_gap(c, act, snr, t)
        limit[(s, 0.0)], t1[s], t2[s] = gap.total, gap.t1, gap.t2
        for p in design.ps:
            sol = finite_parts(c, act, snr, t, p)
            at_p[((s, 0.0), p)] = sol.t1 + sol.t2
    for s in design.wide:
        act, c, t = s
        for g in design.gamma_wide:
            limit[(s, g)] = gap_at(g, c, act, snr, t)
        for p in design.ps:
            at_p[((s, wide_gamma), p)] = gap_at(wide_gamma, c, act, snr, t, p)
    # the figure's theory curves (seconds; only where figures are written)
    curve = {(act, c): tuple(limit_gap(c, act, snr, t, 20).total for t in design.curve_ts) for act, c in curves}
    return B9Prediction(limit, t1, t2, at_p, curve)


def simulate_b9(ctx: CheckContext, design: B9Profile) -> dict:
    """``(point, p) -> paired differences (trials,)`` for every point of :func:`points` at both sizes."""
    cells: dict = {}
    groups = draw_groups(design)
    with ctx.progress("attention - ridge under strong alignment, paired, label-averaged",
                      total=len(design.ps) * len(groups)) as bar:
        for p, trials in zip(design.ps, design.trials):
            for settings, gammas in groups:
                for s, out in strong_alignment_cells(ctx, settings, p, trials, gammas, design.snr).items():
                    diffs = out["attention"] - out["ridge"]
                    for j, g in enumerate(gammas):
                        cells[((s, g), p)] = diffs[:, j]
                bar.advance()
    return cells


def _key(setting: Setting, quantity: str, gamma: float = 0.0) -> dict:
    """A comparison's key: the setting, ``gamma`` and the quantity (``"gap"``, ``"sign"``, ``"no win"``)."""
    act, c, t = setting
    return {"activation": act, "c": float(c), "t": float(t), "gamma": float(gamma), "quantity": quantity}


def limit_points(design: B9Profile) -> list[Point]:
    """Points judged against the theory at each size: ``c < 1`` at 0 (headline first), ``wide`` at ``gamma_wide[1]``."""
    return ([(s, 0.0) for s in sorted(design.settings, key=lambda s: s != HEADLINE)]
            + [(s, design.gamma_wide[1]) for s in design.wide])


def judge_b9(design: B9Profile, prediction: B9Prediction, cells: dict) -> list[Comparison]:
    """Gap (finite-size rule against the theory at each size), sign and no-win comparisons (module docstring); pure."""
    pl = design.ps[1]
    comps: list[Comparison] = []
    for s, g in limit_points(design):
        what = "E_att(0) - E_RR(0)" if g == 0 else f"E_att - E_RR at gamma={g:g}"
        comps.append(gap_comparison(f"gap {setting_name(s)}: {what}",
                                    [scalar_mean_se(cells[((s, g), p)]) for p in design.ps],
                                    [prediction.at_p[((s, g), p)] for p in design.ps], design,
                                    headline=(s, g) == (HEADLINE, 0.0), key=_key(s, "gap", g)))
    for s in design.settings:
        pred = prediction.limit[(s, 0.0)]
        words = "attention beats ridge" if pred < 0 else "ridge beats attention"
        comps.append(sign_comparison(f"sign {setting_name(s)}: {words} as gamma -> 0", pred,
                                     scalar_mean_se(cells[((s, 0.0), pl)]), -1 if pred < 0 else 1, design,
                                     _key(s, "sign")))
    g0 = design.gamma_wide[0]
    for s in design.wide:
        comps.append(sign_comparison(f"no win {setting_name(s)}: E_att - E_RR at gamma={g0:g}",
                                     prediction.limit[(s, g0)], scalar_mean_se(cells[((s, g0), pl)]), +1, design,
                                     _key(s, "no win", g0)))
    return comps


def describe_b9(design: B9Profile, prediction: B9Prediction, cells: dict,
                comparisons: list[Comparison]) -> tuple[str, dict]:
    """Notes (what is judged, the offsets at both sizes, the power) and data (rows, the no-win cells)."""
    rows = []
    for s, g in limit_points(design):  # one row per judged gap, with its power read from the judged row
        comp = with_key(comparisons, **_key(s, "gap", g))[0]
        (ms, ses), (ml, sel) = (scalar_mean_se(cells[((s, g), p)]) for p in design.ps)
        rows.append(dict(activation=s[0], c=s[1], t=s[2], gamma=g, limit=prediction.limit[(s, g)],
                         theory=[prediction.at_p[((s, g), p)] for p in design.ps],
                         t1=prediction.t1.get(s), t2=prediction.t2.get(s),
                         p=list(design.ps), measured=[ms, ml], se=[ses, sel], outcome=comp.outcome,
                         detectable=detectable_error(comp, len(comparisons), (design.ps[0] / design.ps[1]) ** DECAY)))
    offsets = "; ".join(setting_name((r["activation"], r["c"], r["t"]))
                        + (f" gamma={r['gamma']:g}" if r["gamma"] else "")
                        + f": {r['measured'][0] - r['theory'][0]:+.4f} / {r['measured'][1] - r['theory'][1]:+.4f}"
                        for r in rows)
    detect = float(np.median([r["detectable"] for r in rows]))
    g0 = design.gamma_wide[0]
    wide = {setting_name(s): dict(zip(("mean", "se"), scalar_mean_se(cells[((s, g0), design.ps[1])])),
                                  theory=prediction.limit[(s, g0)]) for s in design.wide}
    n_fail = sum(c.outcome == "FAIL" for c in comparisons)
    notes = (
        "Theory: theory.strong_alignment_gap at each size p (the project's derivation, docs/strong_alignment.md; the "
        "continuation to spectral parameter 0 is assumed); at c > 1 theory.strong_spike_attention_error minus ridge's "
        f"error. Simulation: snr={design.snr:g}, labels integrated out given X, paired, {design.trials[0]} trials at "
        f"p={design.ps[0]} and {design.trials[1]} at p={design.ps[1]}. Offsets (measured - theory at p) at "
        f"p={design.ps[0]} / p={design.ps[1]}: {offsets}. Power of the rule: a theory off by {detect:.4f} at both "
        f"sizes (median over settings) FAILs with probability about 1/2 (Holm's first level). {n_fail} of "
        f"{len(comparisons)} comparisons FAIL."
    )
    data = dict(rows=rows, no_win=wide, gamma_wide=list(design.gamma_wide), snr=design.snr, ps=list(design.ps),
                trials=list(design.trials))
    return notes, data


@F.paper_figure
def figure_b9(design: B9Profile, prediction: B9Prediction, cells: dict, judgement: Judgement) -> Any:
    """Per ``(activation, c)``: the limit against ``t``, the theory at ``p`` and ``4p`` (bars), the paired gaps."""
    comps = list(judgement.comparisons)
    panels = list(dict.fromkeys((a, c) for a, c, _ in design.settings))
    fig, axes = F.subplots(1, len(panels) + 1, panel=(3.4, 3.0), extra=1.2)
    for ax in axes[0]:
        ax.axhline(0.0, color="#999999", lw=0.8)
    for ax, (act, c) in zip(axes[0], panels):
        if (act, c) in prediction.curve:
            ax.plot(design.curve_ts, prediction.curve[(act, c)], "-", color=F.THEORY, lw=1.3)
        _points(ax, design, prediction, cells, [(s, 0.0) for s in design.settings if s[:2] == (act, c)])
        judged_here = with_key(comps, activation=act, c=float(c))
        ax.set(xlabel="alignment t = ‖w_K‖‖w_Q‖/√p", ylabel="E_att(0) − E_RR(0)", title=f"{act}, p/n = {c:.3g}")
        F.key_numbers(ax, [F.outcome_text(judged_here)], verdict=F.worst_outcome(judged_here))
    ax = axes[0, -1]
    for g in design.gamma_wide:
        ax.plot([s[2] for s in design.wide], [prediction.limit[(s, g)] for s in design.wide], "-", color=F.THEORY,
                lw=1.3)
        _points(ax, design, prediction, cells, [(s, g) for s in design.wide])
    wide = [cp for s in design.wide for cp in with_key(comps, activation=s[0], c=float(s[1]), t=float(s[2]))]
    ax.set(xlabel="alignment t", ylabel="E_att − E_RR",
           title="p/n > 1 (" + ", ".join(sorted({a for a, _, _ in design.wide})) + "), γ = "
                 + " and ".join(f"{g:g}" for g in design.gamma_wide))
    F.key_numbers(ax, [f"claim: > 0 (no win), limit at γ = {design.gamma_wide[1]:g}", F.outcome_text(wide)],
                  verdict=F.worst_outcome(wide))
    F.legend(axes[0, 0], outside=True, ncol=3, extra=[
        F.proxy("limit theory (p/n < 1: γ → 0; p/n > 1: γ > 0)", color=F.THEORY, marker=None, ls="-"),
        F.proxy("theory at the simulated p (bars)", color=F.THEORY, marker="_", ls="none"),
        *(F.proxy(f"Monte Carlo p = {p}, ±3 SE (paired, label-averaged)", color=F.COLORS[k], marker="os"[k])
          for k, p in enumerate(design.ps))])
    F.suptitle(fig, "B9", "strong alignment: attention against ridge as γ → 0",
               f"aligned spikes of strength t√p, ‖μ‖² = {design.snr:g}, diagonal removed; judged: the gap against "
               f"the theory at p = {design.ps[0]} and {design.ps[1]} (finite-size rule), the limit's sign, no win "
               f"at p/n > 1 ({F.outcome_text(comps)})", judgement.verdict)
    return fig


def _points(ax: Any, design: B9Profile, prediction: B9Prediction, cells: dict, pts: list[Point]) -> None:
    """The paired gap (±3 SE) of ``pts`` against ``t`` at both sizes, dodged, with the judged theory (a bar)."""
    for k, p in enumerate(design.ps):
        ts = np.array([s[2] for s, _ in pts]) * (1 + 0.04 * (2 * k - 1))
        at = [(t, prediction.at_p[(pt, p)]) for t, pt in zip(ts, pts) if (pt, p) in prediction.at_p]
        if at:
            ax.plot(*zip(*at), "_", color=F.COLORS[k], ms=12, mew=1.6)
        stats = np.array([scalar_mean_se(cells[(pt, p)]) for pt in pts])
        F.mc_points(ax, ts, stats[:, 0], stats[:, 1], label="_nolegend_", color=F.COLORS[k], marker="os"[k])


STATEMENT_B9 = (
    "Strong alignment (||w_K|| ||w_Q|| = t sqrt p): as gamma -> 0 with c < 1, E_att - E_RR tends to the project's"
    " limit theory, negative for erf and tanh at every t > 0 (attention beats ridge), positive for gelu at c = "
    "1/2; at c > 1 attention does not win. Judged against the same theory at each simulated p (t + 1/sqrt p and "
    "the kernel's mean part at n = p/c tokens) by the finite-size rule, and the limit's sign"
)

CLAIM_B9 = register(Claim(id="B9", paper="B", statement=STATEMENT_B9, design=design_b9, predict=predict_b9,
                          simulate=simulate_b9, judge=judge_b9, describe=describe_b9, figure=figure_b9,
                          figure_name="strong_alignment"))
