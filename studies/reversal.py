"""Study B4-rev: does attention's finite-``p`` win over ridge at small ``gamma`` survive ``p -> oo``?

``python -m studies.reversal --help`` (defaults: the paper design; docs/reversal.md lists the commands).

The structured theory (``||w_K||, ||w_Q||, ||mu|| = O(1)``) says that at ``c < 1`` and ``gamma -> 0`` attention
with an aligned spike approaches ridge from above, while true-kernel simulations at ``p <= 512`` show it below.
The study measures ``d(p) = E_att - E_RR`` at growing ``p``: one cell per ``(activation, c, snr, p)``, one draw
``X, y`` per trial feeding the true kernel (diagonal removed) and the linearised kernel of every aligned strength
and ridge (:func:`studies.structured_mc.shared_cell`; paired: ridge is the control variate with coefficient 1,
the optimal ``b* = cov(E_att, E_RR) / var(E_RR)`` is reported).

Fits (:mod:`studies.decay_fits`): ``d(p) - d_theory = A p^{-beta}`` by weighted least squares with the 95 %
profile-likelihood interval of ``beta`` (``beta = 1`` is the rate of the linearisation error ``kappa^2``); ``p*`` is
where the fit crosses zero; ``d - d_theory = C kappa^2`` per strength and pooled over the strengths of a cell
(sizes with ``kappa <= KAPPA_MAX``).  Finding (docs/reversal.md): the reversal is the linearisation error and does
not survive ``p -> oo``.

Readings (:func:`judge_reversal`), per aligned setting at ``gamma_ref``: the finite-``p`` reversal at the largest
``p`` (``direction``, ``E_att - E_RR < 0``) and the decay exponent against ``beta = 1`` (``consistency``, SE = the
profile interval's half-width on the side of 1 / 1.96).  Seeds: those of a :class:`verify.CheckContext` with
check id ``B4-rev``.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Sequence

import numpy as np

from numerics.model_simulation import mean_se
from verify import CheckContext, Comparison
from verify.figures import pyplot
from verify.typeset import md_table

from .decay_fits import KappaFit, PowerFit, crossing_size, fit_kappa2, fit_power_law
from .structured_mc import KAPPA_MAX, attention_model, shared_cell, structured_theory

#: one aligned setting: ``(activation, c, snr, strength)``
Setting = tuple[str, float, float, float]
#: one Monte Carlo cell: ``(activation, c, snr)`` (all strengths of the design on the same draws)
CellKey = tuple[str, float, float]


# ============================================================================ design
@dataclass(frozen=True)
class RevDesign:
    """The grid of the study: every ``(activation, c, snr, aligned strength)`` at the sizes ``ps`` (``n = p / c``)
    with ``trials`` each, on ``gammas`` (``gamma_ref`` is compared and fitted); ``linearised``: also simulate the
    linearised kernel on the same draws."""

    activations: tuple[str, ...]
    cs: tuple[float, ...]
    snrs: tuple[float, ...]
    strengths: tuple[float, ...]
    gammas: tuple[float, ...]
    ps: tuple[int, ...]
    trials: tuple[int, ...]
    linearised: bool = True
    gamma_ref: float = 1e-3

    def __post_init__(self) -> None:
        if len(self.ps) != len(self.trials):
            raise ValueError(f"ps and trials must have the same length, got {self.ps} and {self.trials}")
        if self.gamma_ref not in self.gammas:
            raise ValueError(f"gamma_ref={self.gamma_ref} must be one of gammas {self.gammas}")

    @property
    def cells(self) -> list[CellKey]:
        """The ``(activation, c, snr)`` of the Monte Carlo cells, in report order."""
        return [(a, c, s) for a in self.activations for c in self.cs for s in self.snrs]

    @property
    def settings(self) -> list[Setting]:
        """Every ``(activation, c, snr, strength)``, in report order."""
        return [(*cell, st) for cell in self.cells for st in self.strengths]

    @property
    def j_ref(self) -> int:
        """Index of ``gamma_ref`` in ``gammas``."""
        return self.gammas.index(self.gamma_ref)


_GAMMAS = (1e-4, 1e-3, 1e-2)

REVERSAL_DESIGNS = {
    # smoke (tests only): tiny sizes, readings meaningless
    "smoke": RevDesign(activations=("erf",), cs=(1 / 3,), snrs=(1.0,), strengths=(2.0,), gammas=(1e-3, 1e-2),
                       ps=(16, 32, 64), trials=(4, 4, 3)),
    # quick: the shape of the answer at small p
    "quick": RevDesign(activations=("erf", "gelu"), cs=(1 / 3,), snrs=(1.0,), strengths=(2.0, 8.0), gammas=_GAMMAS,
                       ps=(64, 128, 256), trials=(64, 32, 16)),
    # paper: trials chosen for SE ~ 0.0012-0.0015 at every p (the paired difference's SD falls with p)
    "paper": RevDesign(activations=("erf", "gelu"), cs=(1 / 3,), snrs=(1.0,), strengths=(2.0, 8.0), gammas=_GAMMAS,
                       ps=(128, 256, 512, 1024), trials=(96, 48, 24, 12)),
}


# ============================================================================ prediction
@dataclass(frozen=True)
class RevPrediction:
    """Theory of the limit: ``att`` (``setting -> E_att``) and ``ridge`` (``(c, snr) -> E_RR``) on ``gammas``,
    ``kappa`` (``(snr, strength, p) -> kappa_lin``)."""

    att: dict
    ridge: dict
    kappa: dict

    def diff(self, setting: Setting) -> np.ndarray:
        """``E_att - E_RR`` of the theory on ``gammas``."""
        return self.att[setting] - self.ridge[(setting[1], setting[2])]


def predict_reversal(design: RevDesign) -> RevPrediction:
    """Structured theory and ridge on the design's gammas, and ``kappa_lin`` at every size."""
    from theory import ridge_error_values

    g = np.asarray(design.gammas, float)
    att = {s: structured_theory(g, s[1], s[2], (s[3], "aligned"), s[0]) for s in design.settings}
    ridge = {(c, snr): np.asarray(ridge_error_values(g, c, snr), float) for c in design.cs for snr in design.snrs}
    # kappa_lin depends on snr and the spike only: the model of the first activation and c carries them
    kappa = {(snr, st, p): float(attention_model(design.cs[0], snr, (st, "aligned"), design.activations[0])
                                 .linearisation_control(p))
             for snr in design.snrs for st in design.strengths for p in design.ps}
    return RevPrediction(att=att, ridge=ridge, kappa=kappa)


# ============================================================================ simulation
def simulate_reversal(ctx: CheckContext, design: RevDesign) -> dict:
    """The cells ``(activation, c, snr, p) -> {"true", "linearised"?: (strengths, trials, gammas), "ridge":
    (trials, gammas)}``: one draw ``X`` per cell and trial for every strength, both kernels and ridge (paired),
    memoised on disk (:func:`shared_cell`)."""
    cells = {}
    kind = ("true", "linearised", "ridge") if design.linearised else ("true", "ridge")
    with ctx.progress("attention vs ridge at small gamma, true kernel, growing p",
                      total=len(design.cells) * len(design.ps)) as bar:
        for act, c, snr in design.cells:
            models = [attention_model(c, snr, (s, "aligned"), act) for s in design.strengths]
            for p, trials in zip(design.ps, design.trials):
                seed = ctx.seed_for("b4-rev", act, f"c={c:.6g}", f"snr={snr:g}", p)  # one X per cell: paired draws
                cells[(act, c, snr, p)] = shared_cell(ctx, models, p, design.gammas, trials, seed, kind)
                bar.advance()
    return cells


# ============================================================================ statistics
def paired_stats(cell: dict, k: int) -> dict[str, np.ndarray]:
    """Per-gamma statistics of strength number ``k`` of a cell: paired ``d = E_att - E_RR`` and its SE, both errors,
    ``b_opt = cov(E_att, E_RR) / var(E_RR)``, ``var_gain`` (variance saved by pairing) and, with the linearised
    kernel, ``d_lin = E_lin - E_RR`` and ``lin_err = E_att - E_lin`` (paired)."""
    att, rr = np.asarray(cell["true"][k], float), np.asarray(cell["ridge"], float)
    d, se_d = mean_se(att - rr)
    (ma, sa), (mr, sr) = mean_se(att), mean_se(rr)
    va, vr, vd = att.var(0, ddof=1), rr.var(0, ddof=1), (att - rr).var(0, ddof=1)
    cov = ((att - att.mean(0)) * (rr - rr.mean(0))).sum(0) / (att.shape[0] - 1)
    out = dict(d=d, se_d=se_d, att=ma, se_att=sa, ridge=mr, se_ridge=sr, b_opt=cov / np.maximum(vr, 1e-300),
               var_gain=(va + vr) / np.maximum(vd, 1e-300))
    if "linearised" in cell:
        lin = np.asarray(cell["linearised"][k], float)
        (out["d_lin"], out["se_lin"]), (out["lin_err"], out["se_lin_err"]) = mean_se(lin - rr), mean_se(att - lin)
    return out


# ============================================================================ judge
@dataclass(frozen=True)
class SettingReading:
    """What the study reads for one setting at ``gamma_ref`` (index ``j``): the limit ``theory``, ``stats`` and
    ``kappa`` per ``p``, the power-law fits of ``d - theory``, ``d_lin - theory`` and ``E_att - E_lin`` (``None``
    without the linearised kernel), ``p*`` (when a reversal is measured) and the ``C kappa^2`` fit."""

    setting: Setting
    theory: float
    stats: dict
    kappa: dict
    fit: PowerFit
    fit_lin: PowerFit | None
    fit_linerr: PowerFit | None
    p_star: float | None
    kappa_fit: KappaFit | None = None
    j: int = 0

    @property
    def reversal_seen(self) -> bool:
        """Whether some measured ``E_att - E_RR`` (at ``gamma_ref``) is below zero by more than 2 SE."""
        return any(float(s["d"][self.j] + 2 * s["se_d"][self.j]) < 0 for s in self.stats.values())

    def p_star_for(self, kf: KappaFit | None) -> float | None:
        """Where ``theory + C kappa(p)^2`` crosses zero: the ``kappa^2`` reading of ``p*`` (valid once
        ``kappa <= KAPPA_MAX``); ``None`` unless a reversal is measured, ``C`` is negative by more than 2 SE and
        the limit is positive."""
        if kf is None or not self.reversal_seen or kf.coef + 2 * kf.se >= 0 or self.theory <= 0:
            return None
        p0 = min(self.kappa)
        return float(p0 * self.kappa[p0] ** 2 * (-kf.coef) / self.theory)  # kappa^2 = kappa(p0)^2 p0 / p

    @property
    def name(self) -> str:
        a, c, snr, st = self.setting
        return f"{a} c={c:.3g} snr={snr:g} aligned {st:g}"


def _at(stats: dict, key: str, j: int) -> list[float]:
    """``stats[p][key][j]`` per ``p`` (``stats``: ``p -> paired_stats``): one statistic at ``gamma_ref``."""
    return [s[key][j] for s in stats.values()]


def read_setting(design: RevDesign, prediction: RevPrediction, cells: dict, setting: Setting) -> SettingReading:
    """The paired statistics, the decay fits and ``p*`` of one setting (pure)."""
    act, c, snr, st = setting
    j, k, ps = design.j_ref, design.strengths.index(st), list(design.ps)
    th = float(prediction.diff(setting)[j])
    stats = {p: paired_stats(cells[(act, c, snr, p)], k) for p in ps}
    d, se = [v - th for v in _at(stats, "d", j)], _at(stats, "se_d", j)
    kappa = {p: prediction.kappa[(snr, st, p)] for p in ps}
    fit_lin = fit_linerr = None
    if design.linearised:
        fit_lin = fit_power_law(ps, [v - th for v in _at(stats, "d_lin", j)], _at(stats, "se_lin", j))
        fit_linerr = fit_power_law(ps, _at(stats, "lin_err", j), _at(stats, "se_lin_err", j))
    r = SettingReading(setting, th, stats, kappa, fit_power_law(ps, d, se), fit_lin, fit_linerr, None,
                       fit_kappa2([kappa[p] for p in ps], d, se, KAPPA_MAX), j)
    return replace(r, p_star=crossing_size(r.fit, th)) if r.reversal_seen else r


def pooled_kappa_fit(design: RevDesign, rs: list[SettingReading], cell: CellKey) -> KappaFit | None:
    """:func:`fit_kappa2` over every strength of ``cell`` at once: one ``C`` per ``(activation, c, snr)`` if the
    finite-``p`` effect is a function of ``kappa`` alone (the linearisation error); ``None`` if no size qualifies."""
    j = design.j_ref
    pts = [(r.kappa[p], r.stats[p]["d"][j] - r.theory, r.stats[p]["se_d"][j]) for r in rs if r.setting[:3] == cell
           for p in design.ps]
    return fit_kappa2(*zip(*pts), KAPPA_MAX) if pts else None


def readings(design: RevDesign, prediction: RevPrediction, cells: dict) -> list[SettingReading]:
    """:func:`read_setting` of every setting, in report order."""
    return [read_setting(design, prediction, cells, s) for s in design.settings]


def judge_reversal(design: RevDesign, prediction: RevPrediction, cells: dict) -> list[Comparison]:
    """Per setting (report order): the finite-p reversal at the largest ``p``, then the decay exponent vs 1.

    Pure: reads the theory of ``prediction`` and the trial arrays of ``cells`` (:func:`simulate_reversal`).
    """
    p_max, n, g = design.ps[-1], design.trials[-1], design.gamma_ref
    comps: list[Comparison] = []
    for r in readings(design, prediction, cells):
        s, f = r.stats[p_max], r.fit
        clipped = "" if f.bounded else " (clipped to the search range)"
        comps += [
            Comparison.direction(
                f"{r.name} gamma={g:g}: finite-p reversal E_att - E_RR < 0 at p={p_max} (kappa={r.kappa[p_max]:.2f})",
                float(r.theory), float(s["d"][r.j]), float(s["se_d"][r.j]), -1, df=n - 1,
                rule=(f"paired difference over {n} draws at p={p_max}; predicted = the limit "
                      f"(theory {r.theory:+.4f}); PASS = attention significantly below ridge at this size")),
            Comparison.consistency(
                f"{r.name} gamma={g:g}: decay exponent of (E_att - E_RR) - limit vs the linearisation rate "
                "kappa^2 ~ p^-1", 1.0, float(f.exponent), float(f.se_towards(1.0)),
                rule=(f"weighted fit A p^-beta over p={list(design.ps)}, A={f.amplitude:.3g}, "
                      f"95% profile interval [{f.lo:.2f}, {f.hi:.2f}]{clipped}, chi2={f.chi2:.2f} on {f.dof} dof; "
                      "SE = half-width on the side of 1 / 1.96"))]
    return comps


# ============================================================================ describe
def _fmt_p(p_star: float | None) -> str:
    return "none" if p_star is None else "inf" if math.isinf(p_star) else f"{p_star:.3g}"


def _fit_text(f: PowerFit | None) -> str:
    if f is None:
        return "-"
    return f"{f.amplitude:+.3g} p^-{f.exponent:.2f} [{f.lo:.2f}, {f.hi:.2f}]" + ("" if f.bounded else "*")


def _as_dict(fit: PowerFit | KappaFit | None) -> dict | None:
    return None if fit is None else vars(fit)


def table_markdown(design: RevDesign, rs: list[SettingReading]) -> str:
    """The measured table: settings x p (``E_att - E_RR +- SE`` at ``gamma_ref``), theory, fit, ``p*``."""
    head = (["setting", "theory"] + [f"p={p}" for p in design.ps]
            + ["fit of d - theory: A p^-beta [95% beta]", "p*", "kappa at p=" + str(design.ps[-1]),
               f"C = (d - theory)/kappa^2 (kappa <= {KAPPA_MAX:g}): this strength / all strengths", "p* from C"])
    pooled = {cell: pooled_kappa_fit(design, rs, cell) for cell in design.cells}
    rows = []
    for r in rs:
        kf, kp = r.kappa_fit, pooled[r.setting[:3]]
        ktext = ("-" if kf is None else f"{kf.coef:+.3f} +- {kf.se:.3f} ({kf.n_points})") + " / " + (
            "-" if kp is None else f"{kp.coef:+.3f} +- {kp.se:.3f} ({kp.n_points}, chi2 {kp.chi2:.1f})")
        measured = [f"{d:+.4f} +- {se:.4f}" for d, se in zip(_at(r.stats, "d", r.j), _at(r.stats, "se_d", r.j))]
        rows.append([r.name, f"{r.theory:+.4f}", *measured, _fit_text(r.fit), _fmt_p(r.p_star),
                     f"{r.kappa[design.ps[-1]]:.2f}", ktext, _fmt_p(r.p_star_for(kp))])
    return "\n".join(md_table(head, rows))


def table_linearisation_markdown(design: RevDesign, rs: list[SettingReading]) -> str:
    """Where the finite-p effect comes from: ``E_att - E_lin`` (linearisation error) and ``E_lin - E_RR`` per p,
    and ``(d - theory) / kappa^2`` (constant if the effect decays like the linearisation error)."""
    j = design.j_ref
    head = ["setting"] + [f"p={p}: att-lin / lin-RR-theory / (d-theory)/kappa^2" for p in design.ps] + [
        "fit of att-lin", "fit of lin-RR-theory"]
    rows = []
    for r in rs:
        row = [r.name]
        for p, s in r.stats.items():
            ratio = (s["d"][j] - r.theory) / r.kappa[p] ** 2
            row.append(f"- / - / {ratio:+.3f}" if "lin_err" not in s else
                       f"{s['lin_err'][j]:+.4f}({s['se_lin_err'][j]:.4f}) / {s['d_lin'][j] - r.theory:+.4f}"
                       f"({s['se_lin'][j]:.4f}) / {ratio:+.3f}")
        rows.append(row + [_fit_text(r.fit_linerr), _fit_text(r.fit_lin)])
    return "\n".join(md_table(head, rows))


def _setting_line(r: SettingReading, ps: tuple[int, ...]) -> str:
    vals = ", ".join(f"p={p}: {d:+.4f}({se:.4f})"
                     for p, d, se in zip(ps, _at(r.stats, "d", r.j), _at(r.stats, "se_d", r.j)))
    kf = r.kappa_fit
    ktext = "" if kf is None else f"; (d - theory)/kappa^2 = {kf.coef:+.3f}+-{kf.se:.3f} ({kf.n_points} sizes)"
    return (f"{r.name}: theory {r.theory:+.4f}; measured {vals}; d - theory = {_fit_text(r.fit)}; "
            f"reversal extrapolated to vanish at p* = {_fmt_p(r.p_star)}{ktext}")


def describe_reversal(design: RevDesign, prediction: RevPrediction, cells: dict,
                      comparisons: list[Comparison]) -> tuple[str, dict]:
    """Notes (design, one line per setting) and data (``rows``, ``fits``, markdown tables)."""
    rs = readings(design, prediction, cells)
    gains = [float(np.median(r.stats[p]["var_gain"])) for r in rs for p in design.ps]
    b_opt = [float(r.stats[p]["b_opt"][design.j_ref]) for r in rs for p in design.ps]
    notes = (
        f"Study B4-rev. p = {list(design.ps)} with {list(design.trials)} trials, "
        f"gammas {list(design.gammas)}, compared and fitted at gamma = {design.gamma_ref:g}"
        f"{'' if design.linearised else ' (linearised kernel not simulated)'}; d - theory = A p^-beta [95% interval "
        "of beta] (* = clipped to the search range). " + " | ".join(_setting_line(r, design.ps) for r in rs)
        + f". Pairing divides the variance by {min(gains):.1f}-{max(gains):.1f} (median over gammas); b* = "
        f"{min(b_opt):.2f}-{max(b_opt):.2f}."
    )
    rows = []  # one per (setting, p), every gamma
    for r in rs:
        a, c, snr, st = r.setting
        rows += [dict(activation=a, c=c, snr=snr, strength=st, p=p, n=int(round(p / c)), trials=n, kappa=r.kappa[p],
                      gammas=list(design.gammas), **{k: v.tolist() for k, v in r.stats[p].items()},
                      theory_d=prediction.diff(r.setting).tolist(), theory_att=prediction.att[r.setting].tolist(),
                      theory_ridge=prediction.ridge[(c, snr)].tolist()) for p, n in zip(design.ps, design.trials)]
    data = {
        "design": asdict(design),
        "rows": rows,
        "fits": [dict(activation=r.setting[0], c=r.setting[1], snr=r.setting[2], strength=r.setting[3],
                      theory=r.theory, fit=_as_dict(r.fit), fit_lin=_as_dict(r.fit_lin),
                      fit_linerr=_as_dict(r.fit_linerr), p_star=r.p_star, kappa_fit=_as_dict(r.kappa_fit),
                      p_star_kappa=r.p_star_for(r.kappa_fit))
                 for r in rs],
        "pooled_kappa_fits": [dict(activation=cell[0], c=cell[1], snr=cell[2], **vars(kp)) for cell in design.cells
                              if (kp := pooled_kappa_fit(design, rs, cell)) is not None],
        "table_md": table_markdown(design, rs),
        "table_linearisation_md": table_linearisation_markdown(design, rs),
    }
    return notes, data


# ============================================================================ figure
def figure_reversal(design: RevDesign, prediction: RevPrediction, cells: dict) -> Any:
    """One column per cell. Top: ``E_att - E_RR`` vs ``p`` (2 SE bars; theory limit dashed, fit solid); middle:
    ``|d - theory|`` on log-log axes with the fit and a ``p^-1`` (``kappa^2``) reference; bottom: ``d - theory``
    against ``kappa`` with the ``C kappa^2`` fit (every strength on one curve if the effect is the linearisation
    error)."""
    rs = readings(design, prediction, cells)
    ps = np.array(design.ps, float)
    pf = np.geomspace(ps[0], ps[-1] * 4, 60)
    fig, axes = pyplot().subplots(3, len(design.cells), figsize=(5.2 * len(design.cells), 11), squeeze=False)
    for col, cell in enumerate(design.cells):
        top, mid, bot = axes[:, col]
        for r in [r for r in rs if r.setting[:3] == cell]:
            d, err = np.array(_at(r.stats, "d", r.j)), 2 * np.array(_at(r.stats, "se_d", r.j))
            lab = f"aligned {r.setting[3]:g}"
            (ln,) = top.plot(pf, r.theory + r.fit.at(pf), "-", lw=1)
            colour = ln.get_color()
            top.errorbar(ps, d, yerr=err, fmt="o", ms=4, color=colour, label=lab)
            top.axhline(r.theory, color=colour, ls="--", lw=0.8)
            mid.errorbar(ps, np.abs(d - r.theory), yerr=err, fmt="o", ms=4, color=colour)
            mid.plot(pf, np.abs(r.fit.at(pf)), "-", color=colour, lw=1,
                     label=f"{lab}: beta={r.fit.exponent:.2f} [{r.fit.lo:.2f}, {r.fit.hi:.2f}]")
            bot.errorbar([r.kappa[p] for p in design.ps], d - r.theory, yerr=err, fmt="o", ms=4, color=colour,
                         label=lab)
            if r.kappa_fit is not None:
                kk = np.linspace(0.0, KAPPA_MAX, 50)  # the fit's range (sizes with kappa <= KAPPA_MAX)
                bot.plot(kk, r.kappa_fit.coef * kk**2, "-", color=colour, lw=0.8,
                         label=f"C kappa^2, C={r.kappa_fit.coef:+.3f}")
        top.axhline(0.0, color="gray", lw=0.8)
        mid.plot(pf, 2.0 / pf, ":", color="gray", label="p^-1 (kappa^2 rate)")
        bot.axhline(0.0, color="gray", lw=0.8)
        bot.axvline(KAPPA_MAX, color="gray", lw=0.8, ls=":")
        for ax in (top, mid):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("p (n = p/c)")
        top.set_ylabel(f"E_att - E_RR at gamma={design.gamma_ref:g}")
        top.set_title(f"{cell[0]}, c={cell[1]:.3g}, snr={cell[2]:g} (dashed: theory limit)", fontsize=9)
        mid.set(yscale="log", ylabel="|(E_att - E_RR) - limit|")
        bot.set(xlabel="kappa_lin (dotted: declared regime KAPPA_MAX)", ylabel="(E_att - E_RR) - limit")
        for ax in (top, mid, bot):
            ax.legend(fontsize=7)
    return fig


# ============================================================================ command line
def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m studies.reversal",
                                 description="Study B4-rev on a design (default: paper), or a grid built on it.")
    ap.add_argument("--base", choices=sorted(REVERSAL_DESIGNS), default="paper", help="design to start from")
    for name, kind in (("activations", str), ("cs", float), ("snrs", float), ("strengths", float), ("ps", int),
                       ("trials", int)):
        ap.add_argument(f"--{name}", nargs="+", type=kind, help=f"replace the design's {name}")
    ap.add_argument("--no-linearised", action="store_true", help="do not simulate the linearised kernel")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache-dir", default=".cache/verify/B4-rev-cli", help="where cells are cached ('none': no cache)")
    ap.add_argument("--figure", help="write the study's figure to this PNG path")
    ap.add_argument("--json", help="write notes, readings and data to this JSON path")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run the study on the design of the command line; print its tables and readings (``--help``)."""
    from verify.validation import jsonable, path_or_none
    from verify.verdicts import judged

    args = _parser().parse_args(argv)
    over: dict[str, Any] = {k: tuple(v) for k in ("activations", "cs", "snrs", "strengths", "ps", "trials")
                            if (v := getattr(args, k)) is not None}
    if args.no_linearised:
        over["linearised"] = False
    design = replace(REVERSAL_DESIGNS[args.base], **over)
    ctx = CheckContext(profile="paper", seed=args.seed, cache_dir=path_or_none(args.cache_dir), n_jobs=args.jobs,
                       check_id="B4-rev")
    prediction = predict_reversal(design)
    cells = simulate_reversal(ctx, design)
    judgement = judged(judge_reversal(design, prediction, cells))
    notes, data = describe_reversal(design, prediction, cells, list(judgement.comparisons))
    readings_md = md_table(["reading", "predicted", "measured +- SE", "outcome"],
                           [[c.name, f"{c.predicted:.4g}", f"{c.measured:.4g} +- {c.uncertainty:.2g}", c.outcome]
                            for c in judgement.comparisons])
    print(data["table_md"], data["table_linearisation_md"], "\n".join(readings_md), sep="\n\n")
    if args.figure:
        figure_reversal(design, prediction, cells).savefig(args.figure, dpi=120, bbox_inches="tight")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(jsonable({"notes": notes, "data": data, "readings": [c.to_json() for c in judgement.comparisons],
                                "seeds": ctx.seeds_used}), fh, indent=1)
    return 0


if __name__ == "__main__":  # pragma: no cover - command line
    raise SystemExit(main())
