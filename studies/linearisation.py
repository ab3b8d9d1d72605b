"""Study B7-lin: where the linearised kernel behind verify's B4 and B7 stops describing the true kernel.

``python -m studies.linearisation [--base quick|paper] [--figure PNG] [--json PATH]``.  One strong aligned spike
(tanh, ``c = 1/2``, ``snr = 2``, strength 4): the true and the linearised kernel on the same draws against the
structured theory, over ``p`` (``kappa_lin(p)`` falls like ``p^-1/2``); per ``p`` and kernel the reading
``|MC - theory| <= 3 SE`` at the smallest gamma.  Seeds: those of a :class:`verify.CheckContext` with check id
``B7-lin``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from numerics.model_simulation import mean_se
from verify import CheckContext, Comparison
from verify import figures as F

from .structured_mc import attention_model, shared_cell, structured_theory

ACTIVATION = "tanh"


# ============================================================================ design
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


#: the designs: ``kappa_lin`` runs from 1.75 (p = 64) to 0.44 (p = 1024)
LIN_DESIGNS = {
    "smoke": LinDesign(gammas=np.array([0.1, 1.0]), ps=(16, 32), trials=2),  # tests only
    "quick": LinDesign(gammas=np.array([1e-2, 1e-1, 1.0]), ps=(64, 128, 256), trials=8),
    "paper": LinDesign(gammas=np.array([1e-3, 1e-2, 1e-1, 1.0, 10.0]), ps=(64, 128, 256, 512, 1024), trials=16),
}


def predict_b7_lin(design: LinDesign) -> LinPrediction:
    """Structured theory of the design's configuration and ``kappa_lin(p)``."""
    model = attention_model(design.c, design.snr, design.spike, ACTIVATION)
    return LinPrediction(theory=structured_theory(design.gammas, design.c, design.snr, design.spike, ACTIVATION),
                         kappa={p: model.linearisation_control(p) for p in design.ps})


def simulate_b7_lin(ctx: CheckContext, design: LinDesign) -> dict:
    """The cells ``p -> {"true", "linearised": (1, trials, gammas)}``, both kernels on the same X."""
    cells = {}
    with ctx.progress("linearisation breakdown", total=len(design.ps)) as bar:
        for p in design.ps:
            cells[p] = shared_cell(ctx, [attention_model(design.c, design.snr, design.spike, ACTIVATION)], p,
                                   design.gammas, design.trials, ctx.seed_for("breakdown", p),
                                   ("true", "linearised"))  # true and linearised kernel on the same X
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
    """The reading ``|MC - theory| <= 3 SE`` at the smallest gamma, true then linearised kernel, per ``p``."""
    comps: list[Comparison] = []
    pred0 = float(prediction.theory[0])
    for r in _lin_rows(design, prediction, cells):
        for label, kern in (("true kernel", "true"), ("linearised kernel", "linearised")):
            m, se = r[kern][0], r[f"se_{kern}"][0]
            comps.append(Comparison(
                name=f"p={r['p']} (kappa_lin={r['kappa']:.2f}) gamma={design.gammas[0]:g}: {label}",
                predicted=pred0, measured=m, uncertainty=se,
                tolerance=f"reading: |MC - theory| = {abs(m - pred0):.3g} vs 3 SE = {3 * se:.3g}",
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
        f"Study B7-lin. c=1/2, snr=2, aligned spike strength 4, tanh, "
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


@F.paper_figure
def figure_b7_lin(design: LinDesign, prediction: LinPrediction, cells: dict, comps: list[Comparison]) -> Any:
    """True and linearised kernel vs p per gamma against the theory (where the linearisation breaks):
    left E vs p per gamma (true kernel filled, linearised open, theory a line), right the relative gaps to theory."""
    from matplotlib import ticker

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
                        f"{len(comps)}", "(a reading, not a verdict)"])
    F.legend(ax, outside=True, ncol=3, extra=[F.proxy("true kernel, ±3 SE", color=F.THEORY),
                                              F.proxy("linearised kernel, same draws", color=F.THEORY, marker="s",
                                                      mfc="white")])
    F.suptitle(fig, "B7-lin", "linearisation breakdown for a strong aligned spike",
               f"p/n = {design.c:g}, ‖μ‖² = {design.snr:g}, aligned spike strength {design.spike[0]:g}, f = "
               f"{ACTIVATION}, {design.trials} trials per p")
    return fig


def main(argv: Sequence[str] | None = None) -> int:
    """Run the study and print one line per size and kernel (``--help``)."""
    from verify.typeset import md_table
    from verify.validation import jsonable, path_or_none

    ap = argparse.ArgumentParser(prog="python -m studies.linearisation", description=__doc__.split("\n")[0])
    ap.add_argument("--base", choices=sorted(LIN_DESIGNS), default="paper", help="design")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache-dir", default="none", help="where cells are cached ('none': no cache)")
    ap.add_argument("--figure", help="write the study's figure to this PNG path")
    ap.add_argument("--json", help="write notes, readings and data to this JSON path")
    args = ap.parse_args(argv)
    design = LIN_DESIGNS[args.base]
    ctx = CheckContext(profile="paper", seed=args.seed, cache_dir=path_or_none(args.cache_dir), n_jobs=args.jobs,
                       check_id="B7-lin")
    prediction = predict_b7_lin(design)
    cells = simulate_b7_lin(ctx, design)
    comps = judge_b7_lin(design, prediction, cells)
    notes, data = describe_b7_lin(design, prediction, cells, comps)
    print(notes, "", *md_table(["reading", "theory", "MC +- SE", "within 3 SE"],
                               [[c.name, f"{c.predicted:.4g}", f"{c.measured:.4g} +- {c.uncertainty:.2g}",
                                 str(c.passed)] for c in comps]), sep="\n")
    if args.figure:
        figure_b7_lin(design, prediction, cells, comps).savefig(args.figure, dpi=120, bbox_inches="tight")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(jsonable({"notes": notes, "data": data, "readings": [c.to_json() for c in comps],
                                "seeds": ctx.seeds_used}), fh, indent=1)
    return 0


if __name__ == "__main__":  # pragma: no cover - command line
    raise SystemExit(main())
