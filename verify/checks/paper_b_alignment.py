"""Claim B4 of paper B: an aligned spike in the attention weights lowers attention's interpolation error and can
reverse its comparison with ridge regression; the theory's statements, reversal scans and phase diagram, and the
Monte Carlo read from B7's grid of cells (:mod:`verify.checks._structured`)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
from theory import ridge_error_values

from ..claim import Claim, register
from ..figures import pyplot
from ..statistics import mean_se
from ..verdicts import Judgement
from ..context import CheckContext
from ..results import Comparison
from ._finite_size import finite_size_test
from ._structured import (ACTIVATION, attention_model, gamma_columns, grid_cells, KAPPA_MAX, sizes_at, sizes_text,
                          SPIKE_NONE, STRUCTURED_PROFILES, structured_theory, StructuredProfile)


# ============================================================================ B4
#: the (c, snr) grid of B4's theory statements, reversal scans and figure (whatever the profile)
B4_THEORY_CS = (0.5, 2.0)
B4_THEORY_SNRS = (0.5, 1.0, 2.0)
#: aligned strengths of the reversal scans
REVERSAL_STRENGTHS = (0.0, 1.0, 4.0, 16.0)
#: spikes of B4's simulation cells, in the order of the cell arrays, and their keys in the measurement
B4_SPIKES = (SPIKE_NONE, (4.0, "aligned"), (4.0, "orthogonal"))
B4_MODELS = ("none", "al4", "or4")
#: theory curves of B4's statements, on the theory grid
_STATEMENT_SPIKES = (("none", SPIKE_NONE), ("aligned1", (1.0, "aligned")), ("aligned4", (4.0, "aligned")),
                     ("orthogonal4", (4.0, "orthogonal")))
#: theory curves of B4's figure
_FIGURE_SPIKES = (("none", SPIKE_NONE), ("aligned 1", (1.0, "aligned")), ("aligned 4", (4.0, "aligned")),
                  ("aligned 16", (16.0, "aligned")), ("orthogonal 4", (4.0, "orthogonal")))


def _reversal_scan(c: float, snr: float, strength: float, grid: np.ndarray) -> dict:
    """Theory: where ``E_att <= E_RR`` on a log grid of gamma (aligned spike of ``strength``)."""
    spike = (strength, "aligned") if strength > 0 else SPIKE_NONE
    ratio = structured_theory(grid, c, snr, spike) / ridge_error_values(grid, c, snr)
    below = np.nonzero(ratio <= 1.0)[0]
    i = int(below[0]) if below.size else None
    if i:  # log-linear interpolation of the crossing
        t = (ratio[i - 1] - 1.0) / (ratio[i - 1] - ratio[i])
        gstar = float(np.exp(np.log(grid[i - 1]) + t * (np.log(grid[i]) - np.log(grid[i - 1]))))
    else:  # no crossing, or attention better from the first gamma
        gstar = None if i is None else float(grid[0])
    k = int(np.argmin(ratio))
    return dict(c=c, snr=snr, strength=strength, gamma_star=gstar, min_ratio=float(ratio[k]),
                gamma_at_min_ratio=float(grid[k]), ratio_small_gamma=float(ratio[0]), gamma_small=float(grid[0]))


@dataclass(frozen=True)
class B4Design:
    """B4: the profile, the log grids of gamma of the theory statements, reversal scans and figure, the simulated
    ``gammas`` and ``sizes`` (``c -> ((p, 2p), trials)``, :func:`sizes_at`)."""

    prof: StructuredProfile
    theory_grid: np.ndarray
    reversal_grid: np.ndarray
    figure_grid: np.ndarray
    gammas: np.ndarray
    sizes: dict

    @property
    def theory_keys(self) -> list[tuple[float, float]]:
        """The ``(c, snr)`` of the theory statements and reversal scans."""
        return [(c, snr) for c in B4_THEORY_CS for snr in B4_THEORY_SNRS]

    @property
    def cells(self) -> list[tuple[float, float]]:
        return [(c, snr) for c in self.prof.cs for snr in self.prof.b4_snrs]


@dataclass(frozen=True)
class B4Prediction:
    """B4's theory by ``(c, snr)``: ``statements`` ``{"none", "aligned1", "aligned4", "orthogonal4", "ridge"}`` curves
    on ``theory_grid``; ``reversal``, a :func:`_reversal_scan` per strength of ``REVERSAL_STRENGTHS``; ``simulation``
    ``{"none", "al4", "or4", "ridge"}`` curves on ``gammas``; ``kappa``, ``kappa(2p)`` of the aligned spike 4 (regime of
    the attention-vs-ridge comparisons).

    ``figure``: by ``c``, ``"ridge"`` and the :data:`_FIGURE_SPIKES` curves on ``figure_grid`` at the figure's snr;
    ``phase``: by ``(c, strength)``, the scan at ``prof.phase_snr`` on ``prof.phase_grid`` (the phase diagram: figure
    and notes only, judged nowhere).
    """

    statements: dict
    reversal: dict
    simulation: dict
    kappa: dict
    figure: dict
    phase: dict


def design_b4(ctx: CheckContext) -> B4Design:
    prof = STRUCTURED_PROFILES[ctx.profile]
    return B4Design(prof=prof, theory_grid=np.logspace(*prof.b4_theory_grid),
                    reversal_grid=np.logspace(*prof.reversal_grid), figure_grid=np.logspace(*prof.figure_grid),
                    gammas=np.array(prof.b4_gammas), sizes={c: sizes_at(prof, c) for c in prof.cs})


def _curves(grid: np.ndarray, c: float, snr: float, spikes) -> dict[str, np.ndarray]:
    """Attention theory for each ``(key, spike)`` of ``spikes`` and ridge's (``"ridge"``) on ``grid``."""
    return {**{key: structured_theory(grid, c, snr, spike) for key, spike in spikes},
            "ridge": ridge_error_values(grid, c, snr)}


def predict_b4(ctx: CheckContext, design: B4Design) -> B4Prediction:
    """Theory statements' curves, reversal scans, theory of the simulated cells and of the figure."""
    keys = design.theory_keys
    fsnr = design.prof.b4_snrs[-1]
    return B4Prediction(
        statements={k: _curves(design.theory_grid, *k, _STATEMENT_SPIKES) for k in keys},
        reversal={k: [_reversal_scan(*k, s, design.reversal_grid) for s in REVERSAL_STRENGTHS] for k in keys},
        simulation={k: _curves(design.gammas, *k, tuple(zip(B4_MODELS, B4_SPIKES))) for k in design.cells},
        kappa={(c, snr): attention_model(c, snr, (4.0, "aligned")).linearisation_control(design.sizes[c][0][1])
               for c, snr in design.cells},
        figure={c: _curves(design.figure_grid, c, fsnr, _FIGURE_SPIKES) for c in B4_THEORY_CS},
        phase=_phase_scans(design.prof))


def _phase_scans(prof: StructuredProfile) -> dict:
    """Theory's phase diagram: the reversal scan of every ``(c, aligned strength)`` at ``prof.phase_snr``."""
    grid = np.logspace(*prof.phase_grid)
    return {(c, st): _reversal_scan(c, prof.phase_snr, st, grid) for c in prof.phase_cs for st in prof.phase_strengths}


def simulate_b4(ctx: CheckContext, design: B4Design) -> dict:
    """The cells ``(c, snr, p) -> {"none", "al4", "or4", "ridge": (trials, gammas)}`` on paired draws (same X):
    B7's cells (:func:`grid_cell`), so B4's and B7's verdicts are correlated, not their false-FAIL rates."""
    rows = [list(design.prof.spikes).index(s) for s in B4_SPIKES]
    cols = gamma_columns(design.prof, design.gammas)
    label = "B4 simulations (B7's draws: none / aligned 4 / orthogonal 4 / ridge per cell)"
    return grid_cells(ctx, design.cells, label,
                      lambda cell: {**{k: cell["true"][i][..., cols] for k, i in zip(B4_MODELS, rows)},
                                    "ridge": cell["ridge"][..., cols]})


def _b4_theory_comparisons(design: B4Design, prediction: B4Prediction) -> list[Comparison]:
    """Per theory key: aligned spikes lower E_att and its gap to ridge, an orthogonal spike changes nothing;
    then per theory key: the aligned spike 4 moves the reversal point gamma* down (or creates one)."""
    comps, rg = [], design.reversal_grid
    for c, snr in design.theory_keys:
        e0, e1, e4, eo, er = (prediction.statements[(c, snr)][k]
                              for k in ("none", "aligned1", "aligned4", "orthogonal4", "ridge"))
        worst_inc = float(max(np.max(e1 - e0), np.max(e4 - e1)))
        dev = float(np.max(np.abs(eo - e0)))
        comps += [
            Comparison(name=f"theory c={c:g} snr={snr:g}: aligned spikes 0 -> 1 -> 4 lower E_att and the gap to ridge",
                       predicted="E_att strictly decreasing in strength at every gamma", uncertainty=None,
                       measured=f"max increase {worst_inc:.3g}; gap to ridge at gamma=1e-2: {e0[2] - er[2]:.4g} -> "
                                f"{e4[2] - er[2]:.4g}", passed=worst_inc < 0,
                       tolerance=f"max_gamma [E(s_k+1) - E(s_k)] < 0 on gamma in logspace{design.prof.b4_theory_grid}"),
            Comparison(name=f"theory c={c:g} snr={snr:g}: orthogonal spike 4 leaves E_att unchanged", predicted=0.0,
                       measured=dev, uncertainty=None, passed=dev <= 1e-9,
                       tolerance="max_gamma |E(orth 4) - E(none)| <= 1e-9 (solver accuracy)")]
    for c, snr in design.theory_keys:
        scans = prediction.reversal[(c, snr)]
        g0, g4 = scans[0]["gamma_star"], scans[2]["gamma_star"]
        comps.append(Comparison(
            name=f"theory c={c:g} snr={snr:g}: alignment moves the reversal point gamma* down",
            predicted=f"gamma*(aligned 4) <= gamma*(no spike), reversal exists on [{rg[0]:g}, {rg[-1]:g}]",
            measured=f"gamma*: none {g0}, aligned 4 {g4}", uncertainty=None,
            tolerance=f"crossing located on a {rg.size}-point log grid over [{rg[0]:g}, {rg[-1]:g}] "
                      "(log-linear interpolation)", passed=bool(g4 is not None and (g0 is None or g4 <= g0))))
    return comps


def _b4_mc(design: B4Design, prediction: B4Prediction, cells: dict) -> tuple[list[Comparison], list[str]]:
    """Per simulated ``(c, snr, gamma)``: alignment helps (direction), an orthogonal spike does not (bound),
    attention vs ridge (judged inside the regime ``kappa(2p) <= KAPPA_MAX``).  Returns the judged comparisons
    and the attention-vs-ridge readings outside the regime (for the notes)."""
    comps, outside = [], []
    for c, snr in design.cells:
        (p1, p2), trials = design.sizes[c]
        th, kappa = prediction.simulation[(c, snr)], prediction.kappa[(c, snr)]
        lo, hi = cells[(c, snr, p1)], cells[(c, snr, p2)]
        da, sa = mean_se(hi["al4"] - hi["none"])  # paired differences (same X), per gamma
        (do1, so1), (do2, so2) = mean_se(lo["or4"] - lo["none"]), mean_se(hi["or4"] - hi["none"])
        (dr1, sr1), (dr2, sr2) = mean_se(lo["al4"] - lo["ridge"]), mean_se(hi["al4"] - hi["ridge"])
        for j, g in enumerate(design.gammas):
            # (1) alignment lowers E (paired difference significantly < 0)
            comps.append(Comparison.direction(
                f"MC c={c:g} snr={snr:g} gamma={g:g}: E(aligned 4) - E(none)",
                float(th["al4"][j] - th["none"][j]), float(da[j]), float(sa[j]), -1, df=trials - 1,
                rule=f"paired difference at p={p2} over {trials} draws (alignment helps: < 0)"))
            # (2) orthogonal spike does not help: paired difference not significantly < 0 (its limit 0: B7)
            t = finite_size_test(0.0, do1[j], so1[j], do2[j], so2[j], p1 / p2, (trials, trials))
            comps.append(Comparison.bound(
                f"MC c={c:g} snr={snr:g} gamma={g:g}: E(orthogonal 4) - E(none) (does not help)",
                0.0, float(do2[j]), float(so2[j]), float(-do2[j] - t.allowance), excess_se=t.sd, df=t.df,
                rule=(f"paired difference at p={p2} >= -q |d at p={p1}| = -{t.allowance:.3g} up to noise, "
                      f"q = {t.q:.3g} (finite-size rule, one-sided); at p={p1}: {do1[j]:.4g}")))
            # (3) attention vs ridge (paired): the theory's sign where clear (outside the finite-size band), else the
            #     finite-size rule; judged only where kappa <= KAPPA_MAX, the 3-sigma reading reported outside
            thd = float(th["al4"][j] - th["ridge"][j])
            name = f"MC c={c:g} snr={snr:g} gamma={g:g}: E_att(aligned 4) - E_ridge (kappa={kappa:.2f})"
            t = finite_size_test(thd, dr1[j], sr1[j], dr2[j], sr2[j], p1 / p2, (trials, trials))
            if abs(thd) > t.bound:
                vs_ridge = Comparison.direction(
                    name, thd, float(dr2[j]), float(sr2[j]), int(np.sign(thd)), df=trials - 1,
                    rule=(f"theory's sign is clear (|theory| > finite-size band {t.bound:.3g} = q |gap at p={p1}| "
                          f"+ t hypot(SE_2p, q SE_p)); the paired difference at p={p2} must have that sign"))
                ok = bool(np.sign(dr2[j]) == np.sign(thd) and abs(dr2[j]) > 3 * sr2[j])
            else:
                vs_ridge, ok = t.comparison(name, thd, dr2[j], sr2[j], f"p={p1}", f"p={p2}"), t.passed
                vs_ridge = dataclasses.replace(vs_ridge, tolerance="near a crossing: " + vs_ridge.tolerance)
            if kappa <= KAPPA_MAX:
                comps.append(vs_ridge)
            else:
                outside.append(f"{name}: theory {thd:.4f}, measured {dr2[j]:.4f}+-{sr2[j]:.4f}, "
                               f"rule {'holds' if ok else 'fails'}")
    return comps, outside


def judge_b4(design: B4Design, prediction: B4Prediction, cells: dict) -> list[Comparison]:
    """Theory statements (exact), reversal points (exact), then per simulated point: alignment helps (direction), an
    orthogonal spike does not (bound), attention vs ridge inside the regime.

    Pure.
    """
    return _b4_theory_comparisons(design, prediction) + _b4_mc(design, prediction, cells)[0]


def _b4_simulation_rows(design: B4Design, prediction: B4Prediction, cells: dict) -> list[dict]:
    """``data["simulation"]``: MC means and SEs at ``2p`` and theory, per simulated ``(c, snr, gamma)``."""
    rows = []
    for c, snr in design.cells:
        (_, p2), trials = design.sizes[c]
        res, th = cells[(c, snr, p2)], prediction.simulation[(c, snr)]
        for j, g in enumerate(design.gammas):
            rows.append(dict(
                c=c, snr=snr, gamma=float(g),
                **{f"mc_{k}": float(res[k][:, j].mean()) for k in res},
                **{f"se_{k}": float(res[k][:, j].std(ddof=1) / math.sqrt(trials)) for k in res},
                **{f"theory_{k}": float(th[k][j]) for k in th}))
    return rows


def _reversal_text(reversal: dict) -> str:
    """Per theory key and aligned strength: gamma*, E_att/E_RR at the smallest gamma and the best ratio; then the
    range of that small-gamma ratio per ``c`` and whether it falls with the strength (measured, not asserted)."""
    join = "/".join
    lines = [f"c={c:g} snr={snr:g}: {join(_gamma_star_text(s) for s in scans)}; "
             + join(f"{s['ratio_small_gamma']:.3g}" for s in scans) + "; "
             + join(f"{s['min_ratio']:.3g}@{s['gamma_at_min_ratio']:.3g}" for s in scans)
             for (c, snr), scans in reversal.items()]
    per_c = []
    for c in B4_THEORY_CS:
        ratios = [[s["ratio_small_gamma"] for s in scans] for (cc, _), scans in reversal.items() if cc == c]
        flat = [x for r in ratios for x in r]
        monotone = all(a >= b for r in ratios for a, b in pairwise(r))
        per_c.append(f"c={c:g}: {min(flat):.3g}..{max(flat):.3g}, {'non-increasing' if monotone else 'not monotone'}"
                     " in the strength")
    rev = [s for scans in reversal.values() for s in scans]
    g0, strengths = rev[0]["gamma_small"], join(f"{s:g}" for s in REVERSAL_STRENGTHS)
    return (f"Reversal (theory): gamma* (E_att <= E_RR for gamma >= gamma*); E_att/E_RR at gamma={g0:g}; best "
            f"ratio@gamma, at aligned strength {strengths}: " + " | ".join(lines) + f". E_att <= E_RR at gamma={g0:g} "
            f"in {sum(r['ratio_small_gamma'] <= 1.0 for r in rev)} of {len(rev)} (c, snr, strength); ratio there "
            + "; ".join(per_c) + ". ")


def _gamma_star_text(scan: dict) -> str:
    return "none" if scan["gamma_star"] is None else f"{scan['gamma_star']:.3g}"


def _phase_text(prof: StructuredProfile, phase: dict) -> str:
    """The answer of the phase diagram (theory)."""
    g = np.logspace(*prof.phase_grid)
    rows = "; ".join(f"c={c:.3g}: " + "/".join(_gamma_star_text(phase[(c, st)]) for st in prof.phase_strengths)
                     for c in prof.phase_cs)
    worse = sum(r["ratio_small_gamma"] > 1.0 for r in phase.values())
    none_no_spike = [c for c in prof.phase_cs if (c, 0.0) in phase and phase[(c, 0.0)]["gamma_star"] is None]
    return (
        f" Phase diagram (theory, p -> oo, {ACTIVATION}, snr={prof.phase_snr:g}, gamma* on logspace{prof.phase_grid})"
        " at aligned strength " + "/".join(f"{st:g}" for st in prof.phase_strengths) + f": {rows}. At gamma="
        f"{g[0]:g} attention is worse than ridge in {worse} of {len(phase)} (c, strength) cells: no reversal as "
        f"gamma -> 0 in the limit. No gamma* up to gamma={g[-1]:g} without a spike at c = "
        f"{[round(c, 3) for c in none_no_spike]}. Finite-p wins at small gamma: study B4-rev."
    )


def describe_b4(design: B4Design, prediction: B4Prediction, cells: dict,
                comparisons: list[Comparison]) -> tuple[str, dict]:
    """Notes (reversal points, small-gamma ratios, simulation design, unjudged points), data."""
    prof = design.prof
    outside = _b4_mc(design, prediction, cells)[1]
    notes = (
        _reversal_text(prediction.reversal)
        + f"Simulation: {sizes_text(prof)} (B7's draws), gammas {list(prof.b4_gammas)}, snr {list(prof.b4_snrs)}; "
        f"attention vs ridge judged inside kappa(2p) <= {KAPPA_MAX}, outside it (reported, not judged): "
        f"{'; '.join(outside) if outside else 'none'}." + _phase_text(prof, prediction.phase)
    )
    theory = [dict(c=c, snr=snr, gammas=design.theory_grid.tolist(), **{k: v.tolist() for k, v in curves.items()})
              for (c, snr), curves in prediction.statements.items()]
    return notes, {"theory": theory, "reversal": [s for scans in prediction.reversal.values() for s in scans],
                   "simulation": _b4_simulation_rows(design, prediction, cells)}


def figure_b4(design: B4Design, prediction: B4Prediction, cells: dict, judgement: Judgement) -> dict[str, Any]:
    """``alignment_vs_ridge`` (:func:`_figure_b4_ratio`) and ``phase_diagram`` (:func:`_figure_b4_phase`)."""
    return {"alignment_vs_ridge": _figure_b4_ratio(design, prediction, cells),
            "phase_diagram": _figure_b4_phase(design.prof, prediction.phase)}


def _figure_b4_phase(prof: StructuredProfile, phase: dict) -> Any:
    """Theory's phase diagram. Left: c x aligned strength, coloured by the sign of E_att - E_RR at the smallest
    gamma of ``prof.phase_grid``, each cell labelled with gamma*; right: gamma*(c) per strength (the gamma* lines:
    attention beats ridge above them)."""
    from matplotlib.colors import ListedColormap

    plt = pyplot()
    cs, sts = prof.phase_cs, prof.phase_strengths
    g0 = 10.0 ** prof.phase_grid[0]
    sign = np.array([[np.sign(phase[(c, st)]["ratio_small_gamma"] - 1.0) for c in cs] for st in sts])
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    ax.pcolormesh(np.arange(len(cs) + 1), np.arange(len(sts) + 1), sign, vmin=-1, vmax=1,
                  cmap=ListedColormap(["#4c72b0", "#dddddd", "#dd8452"]), edgecolors="white", linewidth=1)
    for i, st in enumerate(sts):
        for j, c in enumerate(cs):
            ax.text(j + 0.5, i + 0.5, _gamma_star_text(phase[(c, st)]), ha="center", va="center", fontsize=7)
    ax.set_xticks(np.arange(len(cs)) + 0.5, [f"{c:.3g}" for c in cs])
    ax.set_yticks(np.arange(len(sts)) + 0.5, [f"{st:g}" for st in sts])
    ax.set(xlabel="c = p/n", ylabel="aligned strength ||w_K|| ||w_Q||")
    ax.set_title(f"sign of E_att - E_RR at gamma={g0:g} (orange: attention worse, blue: better);\n"
                 f"text: gamma* (attention better for gamma >= gamma*); {ACTIVATION}, snr={prof.phase_snr:g}, "
                 "limit p -> oo", fontsize=8)
    ax.axvline(float(np.searchsorted(cs, 1.0)), color="k", lw=1.2)
    for st in sts:
        gs = [phase[(c, st)]["gamma_star"] for c in cs]
        ax2.plot(cs, [np.nan if v is None else v for v in gs], "o-", ms=3, label=f"aligned {st:g}")
    ax2.axvline(1.0, color="gray", lw=0.8, ls=":")
    ax2.set(xscale="log", yscale="log", xlabel="c = p/n", ylabel="gamma*")
    ax2.set_xticks(list(cs), [f"{c:.3g}" for c in cs])
    ax2.minorticks_off()
    ax2.set_title(f"gamma* lines (missing point: no crossing up to gamma={10.0 ** prof.phase_grid[1]:g})", fontsize=8)
    ax2.legend(fontsize=7)
    return fig


def _figure_b4_ratio(design: B4Design, prediction: B4Prediction, cells: dict) -> Any:
    """E_att / E_RR in theory (lines) and MC at 2p (x: aligned 4, +: none), one panel per aspect ratio."""
    rows = _b4_simulation_rows(design, prediction, cells)
    fsnr = design.prof.b4_snrs[-1]
    p2_of_c = {c: design.sizes[c][0][1] for c in design.prof.cs}
    fig, axes = pyplot().subplots(1, 2, figsize=(11, 4.2))
    for ax, c in zip(axes, B4_THEORY_CS):
        curves = prediction.figure[c]
        for lab, _ in _FIGURE_SPIKES:
            ax.plot(design.figure_grid, curves[lab] / curves["ridge"], "--" if "orth" in lab else "-",
                    label=f"attention, {lab}")
        for r in [r for r in rows if r["c"] == c and r["snr"] == fsnr]:
            ax.plot(r["gamma"], r["mc_al4"] / r["mc_ridge"], "kx")
            ax.plot(r["gamma"], r["mc_none"] / r["mc_ridge"], "k+")
        ax.axhline(1.0, color="gray", lw=0.8)
        ax.set(xscale="log", yscale="log", xlabel="gamma", ylabel="E_attention / E_ridge")
        ax.set_title(f"c={c:g}, snr={fsnr:g}; x: MC aligned 4, +: MC none (p={p2_of_c.get(c)})", fontsize=9)
    axes[0].legend(fontsize=7)
    return fig


STATEMENT_B4 = ("With signal, attention weights aligned with mu lower attention's error and its gap to ridge, "
                "orthogonal ones do not; attention beats ridge only for gamma >= gamma* (at c >= 2 only with "
                "alignment), never as gamma -> 0 (finite-p wins there are the linearisation error: study B4-rev)")

CLAIM_B4 = register(Claim(id="B4", paper="B", statement=STATEMENT_B4, design=design_b4, predict=predict_b4,
                          simulate=simulate_b4, judge=judge_b4, describe=describe_b4, figure=figure_b4,
                          figure_name="alignment_vs_ridge"))
