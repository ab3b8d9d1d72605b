"""Study B7-lin (informational): where the linearised kernel behind B4 and B7 stops describing the true kernel.

True and linearised kernel on the same draws against the structured theory, over ``p``; reported with the
verdict INFO, never judged into the exit status.  Shared machinery: :mod:`verify.checks._structured`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..statistics import mean_se
from ..claim import Claim, register
from ..figures import paper_figure
from ..verdicts import Judgement
from ..context import CheckContext
from ..results import Comparison
from ._paper_b import mc_settings
from ._structured import ACTIVATION, attention_model, shared_mc, STRUCTURED_PROFILES, structured_theory


# ============================================================================ B7-lin (informational)
@dataclass(frozen=True)
class LinDesign:
    """B7-lin: one strong aligned spike at ``c = 1/2``, ``snr = 2``, simulated at every ``p`` of ``ps``."""

    gammas: np.ndarray
    ps: tuple[int, ...]
    trials: int
    c: float = 0.5
    snr: float = 2.0
    spike: tuple[float, str] = (4.0, "aligned")


@dataclass(frozen=True)
class LinPrediction:
    """Theory on ``LinDesign.gammas`` and the linearisation control ``kappa_lin`` per ``p``."""

    theory: np.ndarray
    kappa: dict


def design_b7_lin(ctx: CheckContext) -> LinDesign:
    """The breakdown sizes and trials of ``ctx.profile``."""
    prof = STRUCTURED_PROFILES[ctx.profile]
    return LinDesign(gammas=np.array(prof.gammas), ps=tuple(prof.breakdown_p), trials=prof.breakdown_trials)


def predict_b7_lin(ctx: CheckContext, design: LinDesign) -> LinPrediction:
    """Structured theory of the design's configuration and ``kappa_lin(p)``."""
    model = attention_model(design.c, design.snr, design.spike)
    return LinPrediction(theory=structured_theory(design.gammas, design.c, design.snr, design.spike),
                         kappa={p: model.linearisation_control(p) for p in design.ps})


def simulate_b7_lin(ctx: CheckContext, design: LinDesign) -> dict:
    """The cells ``p -> {"true", "linearised": (1, trials, gammas)}``, both kernels on the same X."""
    cells = {}
    with ctx.progress("linearisation breakdown", total=len(design.ps)) as bar:
        for p in design.ps:
            settings = mc_settings(ctx, design.trials, ctx.seed_for("breakdown", p))
            cells[p] = shared_mc(ctx, [attention_model(design.c, design.snr, design.spike)], p, design.gammas,
                                 settings, ("true", "linearised"))  # true and linearised kernel on the same X
            bar.advance()
    return cells


def _lin_rows(design: LinDesign, prediction: LinPrediction, cells: dict) -> list[dict]:
    """``data["rows"]``: per ``p``, the mean and SE of both kernels on every gamma, and the theory."""
    rows = []
    for p in design.ps:
        (mt, st), (ml, sl) = mean_se(cells[p]["true"][0]), mean_se(cells[p]["linearised"][0])
        rows.append(dict(p=p, n=int(round(p / design.c)), kappa=prediction.kappa[p], true=mt.tolist(),
                         se_true=st.tolist(), linearised=ml.tolist(), se_linearised=sl.tolist(),
                         theory=prediction.theory.tolist()))
    return rows


def judge_b7_lin(design: LinDesign, prediction: LinPrediction, cells: dict) -> list[Comparison]:
    """Informational ``|MC - theory| <= 3 SE`` at the smallest gamma, true then linearised kernel, per ``p``."""
    comps: list[Comparison] = []
    pred0 = float(prediction.theory[0])
    for r in _lin_rows(design, prediction, cells):
        for label, kern in (("true kernel", "true"), ("linearised kernel", "linearised")):
            m, se = r[kern][0], r[f"se_{kern}"][0]
            comps.append(Comparison(
                name=f"p={r['p']} (kappa_lin={r['kappa']:.2f}) gamma={design.gammas[0]:g}: {label}",
                predicted=pred0, measured=m, uncertainty=se,
                tolerance=f"informational: |MC - theory| = {abs(m - pred0):.3g} vs 3 SE = {3 * se:.3g}",
                passed=bool(abs(m - pred0) <= 3 * se)))
    return comps


def describe_b7_lin(design: LinDesign, prediction: LinPrediction, cells: dict,
                    comparisons: list[Comparison]) -> tuple[str, dict]:
    """Notes (linearised-kernel z and true-kernel relative error per ``p``) and data (``rows``)."""
    rows = _lin_rows(design, prediction, cells)
    lin_z = [max(abs(lv - tv) / max(se, 1e-12) for lv, tv, se in zip(r["linearised"], r["theory"], r["se_linearised"]))
             for r in rows]
    true_rel = [max(abs(mv - tv) / abs(tv) for mv, tv in zip(r["true"], r["theory"])) for r in rows]
    notes = (
        f"INFORMATIONAL (never decides the exit status). c=1/2, snr=2, aligned spike strength 4, tanh, "
        f"{design.trials} trials per p, true and linearised kernel on the same X. "
        "Max over gamma of |linearised MC - theory|/SE per p: "
        + ", ".join(f"p={r['p']}: {z:.1f}" for r, z in zip(rows, lin_z))
        + "; max relative error of the true kernel |MC - theory|/theory (and that / kappa_lin^2) per p: "
        + ", ".join(f"p={r['p']}: {e:.3f} ({e / r['kappa'] ** 2:.2f})" for r, e in zip(rows, true_rel))
        + (f"; the true-kernel departure {'shrinks' if true_rel[-1] < true_rel[0] else 'does not shrink'} "
           f"from p={rows[0]['p']} to p={rows[-1]['p']}." if len(rows) > 1 else ".")
    )
    data = {"c": design.c, "snr": design.snr, "spike": list(design.spike), "gammas": design.gammas.tolist(),
            "rows": rows}
    return notes, data


@paper_figure
def figure_b7_lin(design: LinDesign, prediction: LinPrediction, cells: dict, judgement: Judgement) -> Any:
    """True and linearised kernel vs p per gamma against the theory (informational: where the linearisation breaks):
    left E vs p per gamma (true kernel filled, linearised open, theory a line), right the relative gaps to theory."""
    from matplotlib import ticker

    from .. import figures as F

    comps = list(judgement.comparisons)
    rows = _lin_rows(design, prediction, cells)
    fig, axes = F.subplots(1, 2, panel=(4.5, 3.4), extra=1.2)
    ax, rax = axes[0, 0], axes[0, 1]
    ps = np.array([r["p"] for r in rows], dtype=float)
    for j, g in enumerate(design.gammas):
        col, th = F.COLORS[j % len(F.COLORS)], float(prediction.theory[j])
        ax.axhline(th, color=col, lw=1.2, label=f"theory, γ = {g:g}")
        for key, filled, mk, dx in (("true", True, "o", 0.97), ("linearised", False, "s", 1.03)):
            m, se = np.array([r[key][j] for r in rows]), np.array([r[f"se_{key}"][j] for r in rows])
            x = ps * dx * (1.0 + 0.05 * (j - (len(design.gammas) - 1) / 2))
            F.mc_points(ax, x, m, se, label="_nolegend_", color=col, marker=mk, filled=filled)
            F.mc_points(rax, x, (m - th) / th, se / th, label="_nolegend_", color=col, marker=mk, filled=filled)
    rax.axhline(0.0, color=F.THEORY, lw=0.9)
    for a in (ax, rax):
        a.set_xscale("log", base=2)
        a.set_xticks(ps, [f"{int(p)}" for p in ps])
        a.xaxis.set_minor_locator(ticker.NullLocator())
        a.set_xlabel(f"number of features p (n = p / {design.c:g})")
    ax.set(ylabel="interpolation error E", title="error vs p")
    rax.set(ylabel="(MC − theory) / theory", title="relative gap to theory")
    top = rax.secondary_xaxis("top")
    top.set_xticks(ps, [f"{prediction.kappa[int(p)]:.2f}" for p in ps])
    top.xaxis.set_minor_locator(ticker.NullLocator())
    top.set_xlabel("κ_lin(p)")
    top.tick_params(labelsize=F.FONT["tick"])
    F.key_numbers(rax, [f"|MC − theory| ≤ 3 SE at γ = {design.gammas[0]:g}: {sum(c.passed for c in comps)}/"
                        f"{len(comps)}", "(informational, never judged)"], verdict="INFO")
    F.legend(ax, outside=True, ncol=3, extra=[F.proxy("true kernel, ±3 SE", color=F.THEORY),
                                              F.proxy("linearised kernel, same draws", color=F.THEORY, marker="s",
                                                      mfc="white")])
    F.suptitle(fig, "B7-lin", "linearisation breakdown for a strong aligned spike (informational)",
               f"p/n = {design.c:g}, ‖μ‖² = {design.snr:g}, aligned spike strength {design.spike[0]:g}, f = "
               f"{ACTIVATION}, {design.trials} trials per p", "INFO")
    return fig


#: claim B7-lin in words (the report, --list and docs/claims.md show it)
STATEMENT_B7_LIN = ("Informational: where the linearised kernel behind B4/B7 stops describing the true kernel (strong "
                    "aligned spikes, small p)")

CLAIM_B7_LIN = register(Claim(id="B7-lin", paper="B", statement=STATEMENT_B7_LIN, design=design_b7_lin,
                              predict=predict_b7_lin, simulate=simulate_b7_lin, judge=judge_b7_lin,
                              describe=describe_b7_lin, figure=figure_b7_lin, figure_name="linearisation_breakdown",
                              informational=True))
