"""Check B10 (beyond the papers): what attention's win under strong alignment is made of, and its prediction risk.

Setting: B9's (paper B's model, aligned spikes of strength ``t sqrt p`` along ``mu``, diagonal removed, ``c < 1``,
``gamma -> 0``).  B9 judges the training gap ``E_att(0) - E_RR(0) = T1 + T2``; this check judges its parts, the risk
on fresh labels and the leverage profile, each separately.

Prediction (*derived by the project*, docs/strong_alignment.md, "Prediction risk"):

* ``T1``, the part of the Bayes predictor ``g = tanh(mu^T x)`` left in attention's residual minus ridge's
  (:func:`theory.binned_leverage`, as :func:`theory.strong_alignment_gap`);
* ``T2``, the label noise left, attention minus ridge, from the leverage equation;
* the risk gap on fresh labels at the same tokens, ``R_att - R_RR = T1 - T2`` (exact identity
  ``R = E(gamma) + (2/n) sum_i v_i S_ii``; :func:`theory.strong_spike_prediction_risk`): the leverage part that
  lowers attention's training error raises its risk by the same amount;
* attention's mean leverage in each of ``LEVERAGE_BINS`` equal-probability bins of ``|a|``
  (:func:`theory.binned_leverage`).

Each is evaluated by the equation at the simulated size ``p`` (the kernel's coefficient ``t + 1/sqrt p`` and its
mean part at ``n = p/c`` tokens; docs/strong_alignment.md, "The kernel's mean part at finite p").

Measurement: B9's cells (``ctx.borrowing("B9")``: the same draws, labels integrated out given the data) for B9's
settings, and this check's own cells for settings out of sample for the theory's construction (gelu at ``c = 1/4``,
erf at ``c = 0.9``), at B9's two sizes ``p`` and ``4p``.

Comparisons (Holm within the check, family-wise false-FAIL rate ``ALPHA_CHECK``): per setting, the finite-size rule
of :mod:`verify.checks._finite_size` (``q = 1/2``, Student-t on estimated SEs) on the gaps ``measured - theory(p)``
of ``T1``, ``T2``, the risk gap and every bin of the profile; the theory's worst case (erf, ``c = 2``, ``t = 2`` at
``gamma = 1e-3``: :func:`theory.strong_spike_attention_error` minus ridge's error, at each size) by the same rule on
B9's draws of that setting; and, where ``|R_att - R_RR|`` is predicted to be at least ``sign_min``, its sign at ``4p``
(one-sided, PASS at 5 %).  Power: ``data["detectable"]``, per part (:func:`detectable_error`).  The headline is the
risk gap of erf, ``c = 1/2``, ``t = 1``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..claim import Claim, register
from .. import figures as F
from ..statistics import scalar_mean_se
from ..context import CheckContext
from ..results import Comparison
from ..verdicts import Judgement
from ._finite_size import DECAY
from ._strong_alignment import (B9_PROFILES, HEADLINE, LEVERAGE_BINS, Setting, detectable_error, draw_groups,
                                finite_parts, gap_at, gap_comparison, limit_gap, prefetch, setting_name,
                                sign_comparison, strong_alignment_cells)

#: the scalar parts judged per setting (``PARTS``), then the profile's bins; the headline is the risk gap of HEADLINE
PARTS = ("T1", "T2", "risk")
_WORDS = {"T1": "T1 (Bayes predictor left, att - RR)", "T2": "T2 (label noise left, att - RR)",
          "risk": "risk on fresh labels, R_att - R_RR"}
#: the simulated quantity behind each part: attention's minus ridge's
_OUTPUTS = {"T1": "signal", "T2": "noise", "risk": "risk"}


@dataclass(frozen=True)
class B10Profile:
    """B10's design at one profile: B9's sizes ``ps = (p, 4p)``, trials and ``snr``; the settings whose draws are B9's
    (``borrowed``) and this check's ``own``; the theory's worst case (one of B9's ``wide`` at ``worst_gamma``, on B9's
    cells); ``sign_min``, the least ``|R_att - R_RR|`` at ``4p`` whose sign is judged; the figure's ``t`` grid."""

    ps: tuple[int, int]
    trials: tuple[int, int]
    borrowed: tuple[Setting, ...]
    own: tuple[Setting, ...]
    worst: Setting = ("erf", 2.0, 2.0)
    worst_gamma: float = 1e-3
    snr: float = 1.0
    sign_min: float = 0.005
    curve_ts: tuple[float, ...] = (0.15, 0.25, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5)

    @property
    def settings(self) -> tuple[Setting, ...]:
        """Every judged setting, headline first."""
        return tuple(sorted(self.borrowed + self.own, key=lambda s: s != HEADLINE))


_BORROWED = (("erf", 0.5, 0.5), ("erf", 0.5, 1.0), ("erf", 0.5, 2.0), ("erf", 1 / 3, 1.0), ("tanh", 0.5, 1.0),
             ("gelu", 0.5, 1.0))
_OWN = (("gelu", 0.25, 2.0), ("erf", 0.9, 1.0))


def _profile(name: str, borrowed: tuple[Setting, ...], own: tuple[Setting, ...], **kw: Any) -> B10Profile:
    b9 = B9_PROFILES[name]
    return B10Profile(ps=b9.ps, trials=b9.trials, borrowed=borrowed, own=own, snr=b9.snr, **kw)


B10_PROFILES = {
    "smoke": _profile("smoke", (HEADLINE,), (("gelu", 0.25, 2.0),), worst=("erf", 2.0, 1.0)),
    # quick and paper: six of B9's settings (its draws) and two of B10's own, at B9's sizes; the worst case on B9's
    # draws too (the theory at each size predicts its finite-size gap, -0.015 at p = 128: no larger sizes needed)
    "quick": _profile("quick", _BORROWED, _OWN),
    "paper": _profile("paper", _BORROWED, _OWN),
}


def _part(record: dict, part: str | int) -> Any:
    """``part`` of a cell or prediction record: a name of ``PARTS`` or a bin index (last axis of ``"bins"``)."""
    return record["bins"][..., part] if isinstance(part, int) else record[part]


@dataclass(frozen=True)
class B10Prediction:
    """Theory at size ``p``: by ``(setting, p)`` a record shaped like a cell, ``{"T1", "T2", "risk", "bins": (B,)}``
    (the risk gap is ``T1 - T2``); the worst case's training gap by ``p``."""

    parts: dict
    worst: dict

    def of(self, part: str | int, key: tuple) -> float:
        """The prediction of ``part`` (``"T1"``, ``"T2"``, ``"risk"`` or a bin index) at ``(setting, p)``."""
        return float(_part(self.parts[key], part))


def design_b10(ctx: CheckContext) -> B10Profile:
    return B10_PROFILES[ctx.profile]


def predict_b10(ctx: CheckContext, design: B10Profile) -> B10Prediction:
    """One Dyson solve per setting and size (:func:`finite_parts`, shared with B9): parts, risk gap, bin means."""
    (wa, wc, wt), snr = design.worst, design.snr
    prefetch(ctx, [(finite_parts, (c, act, snr, t, p)) for act, c, t in design.settings for p in design.ps]
             + [(gap_at, (design.worst_gamma, wc, wa, snr, wt, p)) for p in design.ps])
    parts = {}
    for s in design.settings:
        act, c, t = s
        for p in design.ps:
            sol = finite_parts(c, act, snr, t, p)
            parts[(s, p)] = {"T1": sol.t1, "T2": sol.t2, "risk": sol.t1 - sol.t2, "bins": np.asarray(sol.bin_means)}
    return B10Prediction(parts, {p: gap_at(design.worst_gamma, wc, wa, snr, wt, p) for p in design.ps})


def simulate_b10(ctx: CheckContext, design: B10Profile) -> dict:
    """``(setting, p) -> {"T1", "T2", "risk": (trials,), "bins": (trials, B)}``, paired attention minus ridge, and
    ``("worst", p) ->`` the worst case's paired training gap ``(trials,)``."""
    cells: dict = {}
    lender = ctx.borrowing("B9")
    group_of = {s: group for group in draw_groups(B9_PROFILES[ctx.profile]) for s in group[0]}
    sizes = list(zip(design.ps, design.trials))
    jobs = [(p, trials, s) for p, trials in sizes for s in design.borrowed + design.own]
    with ctx.progress("parts, risk and leverage under strong alignment (B9's draws and B10's)",
                      total=len(jobs) + len(sizes)) as bar:
        for p, trials, s in jobs + [(p, trials, design.worst) for p, trials in sizes]:
            settings, gammas = group_of.get(s, ((s,), (0.0,)))  # B9's draws, or this check's own at gamma = 0
            source, tag = (lender, "b9") if s in group_of else (ctx, "b10")
            out = strong_alignment_cells(source, settings, p, trials, gammas, design.snr, tag)[s]
            if s == design.worst:
                j = gammas.index(design.worst_gamma)
                cells[("worst", p)] = out["attention"][:, j] - out["ridge"][:, j]
            else:
                cells[(s, p)] = {part: out[f"attention_{q}"][:, 0] - out[f"ridge_{q}"][:, 0]
                                 for part, q in _OUTPUTS.items()}
                cells[(s, p)]["bins"] = out["attention_leverage"][:, 0, :]
            bar.advance()
    return cells


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    """Mean and SE over the finite trials (``nan`` below two)."""
    x = x[np.isfinite(x)]
    if x.size < 2:
        return math.nan, math.nan
    return scalar_mean_se(x)


def _stats(cells: dict, key: tuple, part: str | int) -> tuple[float, float]:
    return _mean_se(_part(cells[key], part))


def _key(setting: Setting, quantity: str, part: str | int | None = None) -> dict:
    """A comparison's key: the setting, the quantity (``"part"``, ``"worst case"``, ``"sign"``) and the part."""
    act, c, t = setting
    return {"activation": act, "c": float(c), "t": float(t), "quantity": quantity, "part": part}


def judged_parts(design: B10Profile) -> list[tuple[Setting, Any]]:
    """The ``(setting, part)`` of every finite-size comparison, in the judge's order: ``PARTS``, then the bins."""
    return [(s, part) for s in design.settings for part in (*PARTS, *range(LEVERAGE_BINS))]


def sign_settings(design: B10Profile, prediction: B10Prediction) -> list[Setting]:
    """The settings whose risk gap's sign is judged (``|theory| >= sign_min`` at ``4p``), in the judge's order."""
    return [s for s in design.settings if abs(prediction.of("risk", (s, design.ps[1]))) >= design.sign_min]


def judge_b10(design: B10Profile, prediction: B10Prediction, cells: dict) -> list[Comparison]:
    """Finite-size rule per part and bin, and the risk gap's sign (module docstring); pure."""
    comps: list[Comparison] = []
    for s, part in judged_parts(design):
        what = _WORDS[part] if isinstance(part, str) else f"attention's mean leverage, bin {part + 1} of |a|"
        comps.append(gap_comparison(f"{setting_name(s)}: {what}", [_stats(cells, (s, p), part) for p in design.ps],
                                    [prediction.of(part, (s, p)) for p in design.ps], design,
                                    headline=(s, part) == (HEADLINE, "risk"), key=_key(s, "part", part)))
    comps.append(gap_comparison(f"worst case {setting_name(design.worst)}: E_att - E_RR at "
                                f"gamma={design.worst_gamma:g}", [_mean_se(cells[("worst", p)]) for p in design.ps],
                                [prediction.worst[p] for p in design.ps], design,
                                key=_key(design.worst, "worst case")))
    for s in sign_settings(design, prediction):
        pred = prediction.of("risk", (s, design.ps[1]))
        words = "attention predicts fresh labels better" if pred < 0 else "ridge predicts fresh labels better"
        comps.append(sign_comparison(f"{setting_name(s)}: sign of the risk gap, {words}", pred,
                                     _mean_se(cells[(s, design.ps[1])]["risk"]), -1 if pred < 0 else 1, design,
                                     _key(s, "sign", "risk")))
    return comps


def describe_b10(design: B10Profile, prediction: B10Prediction, cells: dict,
                 comparisons: list[Comparison]) -> tuple[str, dict]:
    """Notes (what is judged, the offsets, the power per part) and data (one row per setting)."""
    ps, pl = design.ps
    detect: dict[str, list[float]] = {}
    for (s, part), comp in zip(judged_parts(design), comparisons):
        detect.setdefault(part if isinstance(part, str) else "bins", []).append(
            detectable_error(comp, len(comparisons), (ps / pl) ** DECAY))
    rows = []
    for s in design.settings:
        row: dict[str, Any] = dict(activation=s[0], c=s[1], t=s[2], p=[ps, pl], borrowed=s in design.borrowed)
        for part in PARTS:
            row[part] = dict(theory=[prediction.of(part, (s, p)) for p in (ps, pl)],
                             measured=[_stats(cells, (s, p), part) for p in (ps, pl)])
        row["bins"] = dict(theory=[prediction.parts[(s, p)]["bins"].tolist() for p in (ps, pl)],
                           measured=[[_stats(cells, (s, p), b) for b in range(LEVERAGE_BINS)] for p in (ps, pl)])
        rows.append(row)
    medians = {k: float(np.median(v)) for k, v in detect.items()}
    worst = {p: dict(zip(("mean", "se"), _mean_se(cells[("worst", p)])), theory=prediction.worst[p])
             for p in design.ps}
    head = rows[design.settings.index(HEADLINE)]
    n_fail = sum(c.outcome == "FAIL" for c in comparisons)
    notes = (
        f"Theory: one solve of the leverage equation per setting and size ({LEVERAGE_BINS} bins of |a|); the risk gap "
        "is T1 - T2. "
        f"Simulation: B9's draws for {len(design.borrowed)} settings, this check's own for {len(design.own)} "
        f"({', '.join(setting_name(s) for s in design.own)}); {design.trials[0]} trials at p={ps}, "
        f"{design.trials[1]} at p={pl}. Headline {setting_name(HEADLINE)}: training gap T1 + T2 = "
        f"{head['T1']['measured'][1][0] + head['T2']['measured'][1][0]:+.4f}, of which T1 "
        f"{head['T1']['measured'][1][0]:+.4f} (a better predictor) and T2 {head['T2']['measured'][1][0]:+.4f} "
        f"(label noise fitted); on fresh labels R_att - R_RR = {head['risk']['measured'][1][0]:+.4f} "
        f"(theory {head['risk']['theory'][1]:+.4f}) at p={pl}. Power: a part off by "
        + ", ".join(f"{k} {v:.4f}" for k, v in medians.items())
        + " at both sizes (median over settings) FAILs with probability about 1/2 (Holm's first level). "
        f"Worst case {setting_name(design.worst)} at gamma={design.worst_gamma:g}: measured - theory(p) "
        + " / ".join(f"{w['mean'] - w['theory']:+.4f} at p={p}" for p, w in worst.items())
        + f". {n_fail} of {len(comparisons)} comparisons FAIL."
    )
    return notes, dict(rows=rows, detectable=medians, ps=[ps, pl], trials=list(design.trials), snr=design.snr,
                       bins=LEVERAGE_BINS, worst=dict(setting=list(design.worst), gamma=design.worst_gamma,
                                                      by_p={str(p): w for p, w in worst.items()}))


@F.paper_figure
def figure_b10(design: B10Profile, prediction: B10Prediction, cells: dict, judgement: Judgement) -> Any:
    """Left: the training gap and the risk gap of erf at ``c = 1/2`` against ``t`` (theory, Monte Carlo at both
    sizes).  Right: attention's leverage by bin of ``|a|`` (theory at ``4p``, Monte Carlo at both sizes)."""
    ps, pl = design.ps
    fig, axes = F.subplots(1, 2, panel=(4.2, 3.2), extra=1.2)
    ax = axes[0, 0]
    ax.axhline(0.0, color="#999999", lw=0.8)
    family = [s for s in design.settings if s[:2] == HEADLINE[:2]]
    gaps = [limit_gap(0.5, "erf", design.snr, t, 20) for t in design.curve_ts]
    ax.plot(design.curve_ts, [g.total for g in gaps], "--", color=F.THEORY, lw=1.2)
    ax.plot(design.curve_ts, [g.t1 - g.t2 for g in gaps], "-", color=F.THEORY, lw=1.5)
    ts = np.array([s[2] for s in family])
    for k, p in enumerate(design.ps):
        for part, marker in (("risk", "os"[k]), ("train", "^v"[k])):
            stats = np.array([_mean_se(cells[(s, p)]["risk"] if part == "risk"
                                       else cells[(s, p)]["T1"] + cells[(s, p)]["T2"]) for s in family])
            F.mc_points(ax, ts * (1 + 0.04 * (2 * k - 1)), stats[:, 0], stats[:, 1], label="_nolegend_",
                        color=F.COLORS[k], marker=marker)
    ax.set(xlabel="alignment t = ‖w_K‖‖w_Q‖/√p", ylabel="attention − ridge", title="erf, p/n = 0.5, γ → 0")
    F.key_numbers(ax, ["solid: risk on fresh labels (T1 − T2)", "dashed: training error (T1 + T2)"])
    ax = axes[0, 1]
    centres = np.arange(1, LEVERAGE_BINS + 1)
    for j, s in enumerate(family):
        color = F.COLORS[2 + j % 3]
        ax.plot(centres, prediction.parts[(s, pl)]["bins"], "-", color=color, lw=1.3, label=f"t = {s[2]:g}")
        for k, p in enumerate(design.ps):
            stats = np.array([_stats(cells, (s, p), b) for b in range(LEVERAGE_BINS)])
            F.mc_points(ax, centres + 0.08 * (2 * k - 1), stats[:, 0], stats[:, 1], label="_nolegend_", color=color,
                        marker="os"[k])
    ax.axhline(0.5, color="#999999", lw=0.8)
    ax.set(xlabel="bin of |a| (equal probability, small to large)", ylabel="mean leverage h",
           title="attention's leverage by |a| (ridge: c everywhere)")
    comps = list(judgement.comparisons)
    F.key_numbers(ax, [F.outcome_text(comps)], verdict=judgement.verdict)
    F.legend(axes[0, 0], outside=True, ncol=3, extra=[
        F.proxy(f"theory: limit (left), at p = {pl} (right)", color=F.THEORY, marker=None, ls="-"),
        *(F.proxy(f"Monte Carlo p = {p}, ±3 SE", color=F.COLORS[k], marker="os"[k]) for k, p in enumerate(design.ps))])
    F.suptitle(fig, "B10", "what attention's win under strong alignment is made of",
               f"training gap = T1 (better predictor) + T2 (label noise fitted); on fresh labels T1 − T2; judged: "
               f"T1, T2, risk and every bin by the finite-size rule at p = {ps} and {pl} ({F.outcome_text(comps)})",
               judgement.verdict)
    return fig


STATEMENT_B10 = (
    "What B9's win is made of: T1 (the Bayes predictor the features capture), T2 (label noise the features fit, "
    "by their leverage), the risk on fresh labels at the same tokens (T1 - T2: attention predicts better only "
    "while |T2| < |T1|) and the leverage profile by |a|, each consistent with the project's theory at each "
    "simulated p (t + 1/sqrt p and the kernel's mean part) by the finite-size rule (the gap shrinking at least "
    "like p^-1/2 from p to 4p); the risk gap's sign where the theory's is at least 0.005; the theory's worst case"
    " (c = 2, t = 2, gamma = 1e-3) by the same rule on B9's draws"
)

CLAIM_B10 = register(Claim(id="B10", paper="B", statement=STATEMENT_B10, design=design_b10, predict=predict_b10,
                           simulate=simulate_b10, judge=judge_b10, describe=describe_b10, figure=figure_b10,
                           figure_name="strong_alignment_risk"))
