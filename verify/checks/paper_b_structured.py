"""Check B7: attention with signal (``mu != 0``) and spiked weights ``W = I + w_K w_Q^T`` against the structured
theory (:mod:`theory.structured`, ``docs/structured_attention.md``), the project's finite-rank perturbation of the
corrected null system; SPEC's null system is evaluated alongside, informational (``data["null_systems"]``).

Each ``(c, snr, p)`` is one Monte Carlo cell of the structured grid (:func:`verify.checks._structured.grid_cell`,
shared with B4): one draw ``X, y`` per trial feeds the TRUE kernel ``f(X^T W X / sqrt p) / sqrt p`` (tanh, diagonal
removed) and the LINEARISED kernel of every spike, so that the error of the derivation and that of the
linearisation separate.  Two families: theory vs TRUE kernel inside the declared regime ``kappa(2p) <= KAPPA_MAX``
(:func:`theory.structured.linearisation_control`; the others reported, not judged), and theory vs LINEARISED kernel
everywhere.  Where the linearisation breaks is the study B7-lin (``python -m studies.linearisation``).

Finite-size rule (:mod:`verify.checks._finite_size`) on the gaps to theory at ``p`` and ``2p`` (``n = p / c``),
``q = 2^{-1/2}`` (the slowest declared rate ``p^{-1/2}``, that of ``kappa``).
``tests/verify/test_judges_b_structured.py`` measures the judge's false-FAIL rate and power on synthetic trials."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..statistics import mean_se
from ..claim import Claim, register
from .. import figures as F
from ..verdicts import Judgement
from ..context import CheckContext
from ..results import Comparison, with_key
from ._finite_size import finite_size_test
from ._structured import (ACTIVATION, attention_model, Config, gamma_columns, grid_cells, KAPPA_MAX, sizes_at,
                          sizes_text, spike_label, STRUCTURED_PROFILES, structured_theory, StructuredProfile)


# ============================================================================ B7
@dataclass(frozen=True)
class B7Design:
    """The B7 grid: every ``(c, snr, spike)`` on ``gammas``, at the finite-size pair of its ``c`` (:func:`sizes_at`)."""

    prof: StructuredProfile
    gammas: np.ndarray
    sizes: dict

    @property
    def configs(self) -> list[Config]:
        """Every ``(c, snr, spike)``, in the order of the comparisons (c, then snr, then spike)."""
        return [(c, snr, spike) for c in self.prof.cs for snr in self.prof.snrs for spike in self.prof.spikes]


@dataclass(frozen=True)
class B7Prediction:
    """Per configuration: ``theory`` (corrected null system, judged), ``theory_spec`` (SPEC's, informational) and
    ``kappa`` at ``2p`` (inside the declared regime iff ``<= KAPPA_MAX``)."""

    theory: dict
    theory_spec: dict
    kappa: dict


def design_b7(ctx: CheckContext) -> B7Design:
    prof = STRUCTURED_PROFILES[ctx.profile]
    return B7Design(prof=prof, gammas=np.array(prof.gammas), sizes={c: sizes_at(prof, c) for c in prof.cs})


def predict_b7(ctx: CheckContext, design: B7Design) -> B7Prediction:
    """Structured theory (both null systems) and ``kappa(2p)`` of every configuration."""
    g, cfgs = design.gammas, design.configs
    return B7Prediction(theory={cfg: structured_theory(g, *cfg) for cfg in cfgs},
                        theory_spec={cfg: structured_theory(g, *cfg, system="spec") for cfg in cfgs},
                        kappa={cfg: attention_model(*cfg).linearisation_control(design.sizes[cfg[0]][0][1])
                               for cfg in cfgs})


def simulate_b7(ctx: CheckContext, design: B7Design) -> dict:
    """The cells ``(c, snr, p) -> {"true", "linearised": (spikes, trials, gammas)}``, both kernels on the same X."""
    prof = design.prof
    cols = gamma_columns(prof, design.gammas)
    return grid_cells(ctx, [(c, snr) for c in prof.cs for snr in prof.snrs],
                      "structured MC grid (true + linearised kernel, all spikes per cell)",
                      lambda cell: {k: cell[k][..., cols] for k in ("true", "linearised")})


def _b7_points(design: B7Design, prediction: B7Prediction, cells: dict) -> list[list[tuple]]:
    """Per configuration, per gamma: ``(name, row of data["grid"], true-kernel test, linearised-kernel test)``."""
    out = []
    for cfg in design.configs:
        c, snr, spike = cfg
        (p1, p2), trials = design.sizes[c]
        k, kappa = design.prof.spikes.index(spike), prediction.kappa[cfg]
        pred, spec = prediction.theory[cfg], prediction.theory_spec[cfg]
        (m1, s1), (m2, s2), (l1, sl1), (l2, sl2) = (mean_se(cells[(c, snr, p)][kern][k])
                                                    for kern in ("true", "linearised") for p in (p1, p2))
        points = []
        for j, g in enumerate(design.gammas):
            tt = finite_size_test(pred[j], m1[j], s1[j], m2[j], s2[j], p1 / p2, (trials, trials))
            tl = finite_size_test(pred[j], l1[j], sl1[j], l2[j], sl2[j], p1 / p2, (trials, trials))
            row = dict(c=c, snr=snr, spike=spike_label(spike), gamma=float(g), kappa_2p=kappa,
                       inside_regime=kappa <= KAPPA_MAX, theory=float(pred[j]), theory_spec=float(spec[j]),
                       mc_p=float(m1[j]), se_p=float(s1[j]), mc_2p=float(m2[j]), se_2p=float(s2[j]),
                       allowance=tt.allowance, passed=tt.passed, p=p1, p2=p2, trials=trials, lin_p=float(l1[j]),
                       lin_se_p=float(sl1[j]), lin_2p=float(l2[j]), lin_se_2p=float(sl2[j]), lin_passed=tl.passed)
            points.append((f"c={c:g} snr={snr:g} spike={row['spike']} gamma={g:g}", row, tt, tl))
        out.append(points)
    return out


def _key(row: dict, kernel: str) -> dict:
    """The comparison key of a point against the ``kernel`` (``"true"`` or ``"linearised"``)."""
    return dict(c=row["c"], snr=row["snr"], spike=row["spike"], gamma=row["gamma"], kernel=kernel)


def judge_b7(design: B7Design, prediction: B7Prediction, cells: dict) -> list[Comparison]:
    """Finite-size rule per point: theory vs true kernel (inside the regime), then vs linearised kernel (all), per
    configuration; the first comparison is the headline.

    Pure.
    """
    comps: list[Comparison] = []
    for points in _b7_points(design, prediction, cells):
        for name, r, tt, _ in points:
            if r["inside_regime"]:
                comps.append(tt.comparison(f"{name} (kappa={r['kappa_2p']:.2f})", r["theory"], r["mc_2p"], r["se_2p"],
                                           f"p={r['p']}", f"p={r['p2']}", headline=not comps, key=_key(r, "true")))
        # the derivation itself: theory vs the LINEARISED kernel on the same X (every config)
        comps.extend(tl.comparison(f"[linearised kernel] {name}", r["theory"], r["lin_2p"], r["lin_se_2p"],
                                   f"p={r['p']}", f"p={r['p2']}", key=_key(r, "linearised"))
                     for name, r, _, tl in points)
    return comps


def _z(r: dict, m: str = "mc_2p", se: str = "se_2p", th: str = "theory") -> float:
    return (r[m] - r[th]) / max(r[se], 1e-12)


def _null_systems(rows: list[dict]) -> dict:
    """Informational: corrected vs SPEC null system, mean z^2 / mean z of ``(MC(2p) - theory) / SE`` per kernel
    family (true kernel inside the regime, linearised kernel everywhere)."""
    def mean_z(m: str, se: str, th: str, inside_only: bool) -> tuple[float, float]:
        z = np.array([_z(r, m, se, th) for r in rows if r["inside_regime"] or not inside_only])
        return (float(np.mean(z**2)), float(np.mean(z))) if z.size else (float("nan"), float("nan"))

    return {"true_inside": {th: mean_z("mc_2p", "se_2p", th, True) for th in ("theory", "theory_spec")},
            "linearised_all": {th: mean_z("lin_2p", "lin_se_2p", th, False) for th in ("theory", "theory_spec")}}


def describe_b7(design: B7Design, prediction: B7Prediction, cells: dict,
                comparisons: list[Comparison]) -> tuple[str, dict]:
    """Notes (grid, regime, failures, worst gaps, null systems) and data (``grid`` rows, ``null_systems``, sizes)."""
    prof = design.prof
    points = [pt for pts in _b7_points(design, prediction, cells) for pt in pts]
    rows = [r for _, r, _, _ in points]
    worst = max([0.0] + [abs(_z(r)) for r in rows if r["inside_regime"]])
    worst_lin = max([0.0] + [abs(_z(r, "lin_2p", "lin_se_2p")) for r in rows])
    outside = [f"{name}: kappa={r['kappa_2p']:.2f}, theory {r['theory']:.4f}, MC(2p) {r['mc_2p']:.4f}+-"
               f"{r['se_2p']:.4f}, rule {'holds' if r['passed'] else 'fails'}"
               for name, r, _, _ in points if not r["inside_regime"]]
    systems = _null_systems(rows)
    z = {fam: [f"{v[th][0]:.2f}/{v[th][1]:+.2f}" for th in ("theory", "theory_spec")] for fam, v in systems.items()}
    max_shift = max(abs(_z(r, "theory_spec")) for r in rows)
    n_fail = sum(cp.outcome == "FAIL" for cp in comparisons)
    notes = (
        f"Simulation: true {ACTIVATION} kernel, diagonal removed, {sizes_text(prof)} (n=p/c); gammas "
        f"{list(prof.gammas)}; snr {list(prof.snrs)}; spikes {[spike_label(s) for s in prof.spikes]}; true kernel "
        f"judged inside kappa(2p) <= {KAPPA_MAX}, '[linearised kernel]' (same X) everywhere. {n_fail} of "
        f"{len(comparisons)} comparisons fail; worst |gap|/SE at 2p: true kernel {worst:.1f}, linearised kernel "
        f"{worst_lin:.1f}. Outside the regime (reported, not judged): {'; '.join(outside) if outside else 'none'}. "
        "INFORMATIONAL - mean z^2 / mean z of (MC(2p) - theory)/SE, corrected vs SPEC null system: true kernel "
        f"inside the regime {z['true_inside'][0]} vs {z['true_inside'][1]}, linearised kernel "
        f"{z['linearised_all'][0]} vs {z['linearised_all'][1]}; they differ by at most {max_shift:.2f} SE."
    )
    data = {"grid": rows, "kappa_max": KAPPA_MAX, "null_systems": systems, "activation": ACTIVATION,
            "sizes": {str(c): dict(p_sizes=list(design.sizes[c][0]), trials=design.sizes[c][1]) for c in prof.cs}}
    return notes, data


#: B7 figure: the spikes in words, in the order of the palette
_SPIKE_WORDS = {"none": "no spike", "aligned 1": "aligned spike, strength 1", "aligned 4": "aligned spike, strength 4",
                "orthogonal 4": "orthogonal spike, strength 4 (theory = no spike)"}


def _b7_panel(ax: Any, design: B7Design, rows: list[dict], comps: list[Comparison], c: float, snr: float) -> None:
    """One (c, snr): dense theory per spike, true-kernel MC at 2p (open: outside the regime), linearised MC (x)."""
    (p1, p2), trials = design.sizes[c]
    for k, spike in enumerate(design.prof.spikes):
        lab, col = spike_label(spike), F.COLORS[k % len(F.COLORS)]
        sel = [r for r in rows if r["c"] == c and r["snr"] == snr and r["spike"] == lab]
        gg = np.array([r["gamma"] for r in sel])
        F.theory_curve(ax, gg, lambda g, sp_=spike: structured_theory(g, c, snr, sp_), color=col,
                       grid=F.dense_grid(gg, per_decade=8, n_min=20), ls="--" if spike[1] == "orthogonal" else "-",
                       lw=1.2, label="_nolegend_")
        dodge = 1.0 + 0.045 * (k - (len(design.prof.spikes) - 1) / 2)  # coinciding spikes stay visible
        F.mc_points(ax, gg * dodge, [r["mc_2p"] for r in sel], [r["se_2p"] for r in sel], label="_nolegend_",
                    color=col, filled=[r["inside_regime"] for r in sel])
        ax.plot(gg * dodge * 1.03, [r["lin_2p"] for r in sel], "x", color=col, ms=5, mew=1.2, zorder=4)
    true = with_key(comps, c=c, snr=snr, kernel="true")
    lin = with_key(comps, c=c, snr=snr, kernel="linearised")
    out = sorted({f"{r['spike']} (κ = {r['kappa_2p']:.2f})" for r in rows
                  if r["c"] == c and r["snr"] == snr and not r["inside_regime"]})
    lines = [f"true kernel: {F.outcome_text(true) if true else 'none judged'}",
             f"linearised kernel: {F.outcome_text(lin)}"] + ([f"not judged: {', '.join(out)}"] if out else [])
    ax.set(xscale="log", xlabel="ridge parameter γ", ylabel="interpolation error E",
           title=f"p/n = {c:g}, ‖μ‖² = {snr:g}\np = {p2}, n = {int(round(p2 / c))} (rule: also p = {p1}), "
                 f"{trials} trials")
    lo, hi = ax.get_ylim()
    if hi / max(lo, 1e-300) > 8:
        ax.set_yscale("log")
    F.key_numbers(ax, lines, verdict=F.worst_outcome(true + lin))


@F.paper_figure
def figure_b7(design: B7Design, prediction: B7Prediction, cells: dict, judgement: Judgement) -> Any:
    """Per (c, snr): theory (dense, per spike), true-kernel MC at 2p (3 SE; open outside the regime), linearised MC."""
    prof = design.prof
    verdict, comps = judgement.verdict, list(judgement.comparisons)
    rows = [r for pts in _b7_points(design, prediction, cells) for _, r, _, _ in pts]
    fig, axes = F.subplots(len(prof.snrs), len(prof.cs), panel=(4.6, 3.1), extra=1.3)
    for i, snr in enumerate(prof.snrs):
        for j, c in enumerate(prof.cs):
            _b7_panel(axes[i, j], design, rows, comps, c, snr)
    spikes = [F.proxy(_SPIKE_WORDS.get(spike_label(s), spike_label(s)), color=F.COLORS[k % len(F.COLORS)],
                      marker=None, ls="--" if s[1] == "orthogonal" else "-", lw=2.5) for k, s in enumerate(prof.spikes)]
    F.legend(axes[0, 0], outside=True, ncol=3, extra=spikes + [
        F.proxy("theory: structured deterministic equivalent (lines)", color=F.THEORY, marker=None, ls="-"),
        F.proxy("true kernel, Monte Carlo at 2p, ±3 SE", color=F.THEORY),
        F.not_judged_handle(f"open: outside the regime κ(2p) > {KAPPA_MAX}, reported, not judged"),
        F.proxy("linearised kernel, same draws (judged everywhere)", color=F.THEORY, marker="x")])
    F.suptitle(fig, "B7", "attention with signal and spiked weights: structured theory vs Monte Carlo",
               f"f = {ACTIVATION}, diagonal removed, W = I + w_K w_Qᵀ, μ = √‖μ‖² e₁; judged: finite-size rule at p "
               f"and 2p ({F.outcome_text(comps)})", verdict)
    return fig


STATEMENT_B7 = "The structured deterministic equivalent (derived by the project) matches simulation"

CLAIM_B7 = register(Claim(id="B7", paper="B", statement=STATEMENT_B7, design=design_b7, predict=predict_b7,
                          simulate=simulate_b7, judge=judge_b7, describe=describe_b7, figure=figure_b7,
                          figure_name="structured_vs_mc"))
