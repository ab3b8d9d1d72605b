"""The figures of paper A's rate claims (A2-A4): one log-log panel per group, its key numbers and outcome."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from verify import figures as F

from ._paper_a_records import GroupEvidence


@dataclass(frozen=True)
class PanelText:
    """What one panel of :func:`plot_groups` states: its key numbers, and its outcome (a verdict or
    ``"NOT JUDGED"``; ``None``: no comparison of its own, e.g. a reference group)."""

    lines: tuple[str, ...] = ()
    status: str | None = None


#: the y label of the rate figures
ERROR_LABEL = r"$\|\hat g - g^*\|^2_{L^2(\rho)}$"


def plot_group(ax, e: GroupEvidence, color: str, text: PanelText) -> None:
    """One panel: replicates (faint), level geometric means (3-SE bars), OLS fit, a-priori model, theory rate."""
    g, p, meas = e

    Ms = np.array(g.M, dtype=float)
    judged_ = text.status != "NOT JUDGED"
    for m in g.M:
        ax.scatter([m] * len(meas.errors[m]), meas.errors[m], s=7, alpha=0.3, color=color, lw=0, zorder=2)
    # per M level: the geometric mean of the replicate errors and its 3-SE bars (log scale)
    logs = [np.log(np.asarray(meas.errors[m], dtype=float)) for m in g.M]
    mu = np.array([v.mean() for v in logs])
    sem = np.array([v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else 0.0 for v in logs])
    centre = np.exp(mu)
    lo, hi = centre - np.exp(mu - F.ERRORBAR_SE * sem), np.exp(mu + F.ERRORBAR_SE * sem) - centre
    ax.errorbar(Ms, centre, yerr=[lo, hi], fmt="o", color=color, mfc=color if judged_ else "white", mec=color,
                ms=4.5, zorder=4, label="simulation: geometric mean per M, ±3 SE (faint: replicates)")
    if meas.errors_known and g.config["d"] > 1:
        known = np.array([math.exp(np.mean(np.log(meas.errors_known[m]))) for m in g.M])
        ax.plot(Ms, known, "s", color="#777777", mfc="white", ms=4, zorder=3, label=r"same data, $A = A^*$ known")
    xs = F.dense_grid(Ms, per_decade=20)
    fit = meas.fit
    ax.plot(xs, np.exp(fit.intercept) * xs**fit.slope, "-", color=color, lw=1.4, label="OLS fit")
    ax.plot(Ms, p.curve, "+--", color=F.THEORY, lw=0.9, ms=6, label="a-priori error model at the design's (K, M)")
    mc = math.exp(np.mean(np.log(Ms)))
    ec = math.exp(fit.intercept) * mc**fit.slope
    ax.plot(xs, ec * (xs / mc) ** g.theory_slope, ":", color=F.THEORY, lw=1.4,
            label=r"theory rate $M^{-2\beta/(2\beta+1)}$ (through the fit's centre)")
    ax.set(xscale="log", yscale="log", xlabel="sample size M", ylabel=ERROR_LABEL)
    ax.set_title(f"{g.label.replace('sigma', 'σ')}\nσ = {g.config['sigma']:.3g}, K = {g.K[0]}…{g.K[-1]}",
                 fontsize=F.FONT["note"] + 0.5)
    se, _ = fit.se_replicate
    lines = (f"slope {fit.slope:.3f} ± {se:.3f} (SE)",
             f"theory {g.theory_slope:.3f}, a-priori {p.slope:.3f}", *text.lines)
    F.headroom(ax, 0.075 * (len(lines) + bool(text.status)))
    F.key_numbers(ax, lines, verdict=text.status, loc="upper right")
    F.tidy_log_axis(ax)


def plot_groups(groups: list[GroupEvidence], title: str, texts: dict[str, PanelText] | None = None, *,
                 check_id: str = "", verdict: str | None = None, setting: str = "", ncols: int | None = None):
    """One log-log panel per group (:func:`plot_group`), ``ncols`` a row; a shared legend under the panels.

    ``texts``: the key numbers and outcome of each panel by group label; ``verdict``: the check's, in the title.
    """
    n, texts = len(groups), texts or {}
    ncols = ncols or n
    fig, axes = F.subplots(int(math.ceil(n / ncols)), ncols, panel=(3.6, 3.1), extra=1.3)
    panels = list(axes.flat)
    for i, (g, ax) in enumerate(zip(groups, panels)):
        plot_group(ax, g, F.COLORS[i % len(F.COLORS)], texts.get(g.label, PanelText()))
    for ax in panels[n:]:
        ax.set_visible(False)
    extra = [F.not_judged_handle("open markers: reported, not judged")] if any(
        t.status == "NOT JUDGED" for t in texts.values()) else []
    F.legend(panels[0], extra=extra, outside=True, axes=panels[:n], ncol=2 if ncols <= 2 else 3)  # >= 4 entries
    configs = [e.design.config for e in groups]  # the settings line: the keys every group shares
    common = F.settings(**{k: configs[0][k] for k in ("d", "N", "r", "P") if len({c[k] for c in configs}) == 1})
    F.suptitle(fig, check_id, title, "; ".join(x for x in (common, setting) if x), verdict)
    return fig
