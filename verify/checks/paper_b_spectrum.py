"""Claim B6 of paper B: the eigenvalue distribution of the attention kernel converges to its limit law (Kolmogorov
distance at ``n`` and ``2n``).  Shared machinery and the rules: :mod:`verify.checks._paper_b`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

import theory
from numerics.threads import thread_map as _map_threads
from numerics.rmt import kernel_eigenvalues, sample_signal_plus_noise

from ..claim import Claim, register
from ..context import CheckContext
from ..results import Comparison, with_key
from ..statistics import scalar_mean_se
from .. import figures as F
from ..verdicts import Judgement
from ._paper_b import mc_version, p_of, Rec


def _ks(ev: np.ndarray, x: np.ndarray, cdf: np.ndarray) -> float:
    """Kolmogorov distance between the ECDF of ``ev`` and the CDF tabulated as ``(x, cdf)``."""
    ev = np.sort(ev)
    F = np.interp(ev, x, cdf)
    k = np.arange(1, ev.size + 1) / ev.size
    return float(max(np.max(np.abs(k - F)), np.max(np.abs(k - 1.0 / ev.size - F))))


def _kernel_spectra(seed: int, n: int, p: int, trials: int, act: str, n_jobs: int) -> np.ndarray:
    """Eigenvalues ``(trials, n)`` of ``trials`` null kernels: the draws come in order from one stream, the
    eigendecompositions run in ``n_jobs`` threads (single-threaded torch each): results do not depend on ``n_jobs``."""
    rng = np.random.default_rng(seed)
    draws = (sample_signal_plus_noise(n, p, 0.0, rng)[0] for _ in range(trials))
    return np.stack(_map_threads(lambda X: kernel_eigenvalues(X, act, "removed"), draws, n_jobs))


@dataclass(frozen=True)
class KernelLaw:
    """B6's predicted eigenvalue law: :func:`theory.kernel_density` at ``p/n = c``, Hermite moments ``a1, nu``."""

    c: float
    a1: float
    nu: float

    def cdf(self, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray, float]:
        """``(x, CDF(x), mass)`` on ``[lo, hi]`` (trapezoid integral of the density; ``mass`` its total)."""
        from scipy.integrate import cumulative_trapezoid

        x = np.linspace(lo, hi, 4001)
        cdf = cumulative_trapezoid(np.asarray(self.density(x), dtype=float), x, initial=0.0)
        return x, cdf, float(cdf[-1])

    def density(self, x: np.ndarray) -> np.ndarray:
        return theory.kernel_density(x, self.c, self.a1, self.nu)


@dataclass(frozen=True)
class B6Sizes:
    """B6's design at one profile: the size ``n`` (spectra at ``n`` and ``2 n``) and the trials at each."""

    n: int
    trials: tuple[int, int]


B6_SIZES = {"paper": B6Sizes(1024, (8, 4)), "quick": B6Sizes(256, (8, 4)), "smoke": B6Sizes(32, (3, 2))}


def _design_b6(ctx: CheckContext) -> Rec:
    """Configurations ``(activation, p/n)``, the size ``n`` (spectra at ``n`` and ``2n``), trials at each."""
    cfg = B6_SIZES[ctx.profile]
    return dict(n=cfg.n, trials=cfg.trials, configs=[("tanh", 2.0), ("relu", 2.0), ("tanh", 0.5)])


def _predict_b6(ctx: CheckContext, design: Rec) -> dict[str, dict[str, KernelLaw]]:
    """By configuration key: ``law`` (the theory) and ``wrong`` (nu x 1.03: the negative control)."""
    out = {}
    for act, cval in design["configs"]:
        mom = theory.hermite_moments(theory.activation(act, centered=True))
        out[f"{act}_c{cval}"] = dict(law=KernelLaw(cval, mom.a1, mom.nu), wrong=KernelLaw(cval, mom.a1, 1.03 * mom.nu))
    return out


def _simulate_b6(ctx: CheckContext, design: Rec) -> Rec:
    """``spectra``: by configuration key, eigenvalues ``(trials, size)`` at ``n`` and at ``2n``."""
    n, (t1, t2) = design["n"], design["trials"]
    version = mc_version(_kernel_spectra)
    spectra = {}
    with ctx.progress("kernel spectra", total=len(design["configs"])) as bar:
        for act, cval in design["configs"]:
            cells = []
            for nn, trials in ((n, t1), (2 * n, t2)):
                sd, p = ctx.seed_for("B6", act, cval, nn), p_of(nn, cval)
                key = dict(act=act, c=cval, n=nn, p=p, trials=trials, seed=sd)
                cell = ctx.cached("kernel_eigenvalues", key, version=version,  # computed here, if at all
                                  compute=lambda: {"eigenvalues": _kernel_spectra(sd, nn, p, trials, act, ctx.n_jobs)})
                cells.append(cell["eigenvalues"])
            spectra[f"{act}_c{cval}"] = tuple(cells)
            bar.advance()
    return dict(spectra=spectra)


def b6_reading(law: Any, spectra: tuple[np.ndarray, np.ndarray]) -> Rec:
    """Per-trial KS distances of the spectra at ``n`` and ``2n`` against ``law.cdf`` on the eigenvalue window
    (widened by 0.5), their means ``m1, m2`` and the ratio ``m2 / m1`` with its delta-method SE (pure)."""
    allev = np.concatenate([np.ravel(ev) for ev in spectra])
    lo, hi = float(allev.min()) - 0.5, float(allev.max()) + 0.5
    x, cdf, mass = law.cdf(lo, hi)
    ks_n, ks_2n = (np.array([_ks(e, x, cdf) for e in ev]) for ev in spectra)
    (m1, s1), (m2, s2) = scalar_mean_se(ks_n), scalar_mean_se(ks_2n)
    ratio = m2 / m1
    se_ratio = ratio * math.sqrt((s1 / m1) ** 2 + (s2 / m2) ** 2)
    return dict(lo=lo, hi=hi, mass=mass, ks_n=ks_n, ks_2n=ks_2n, m1=m1, m2=m2, ratio=ratio, se_ratio=se_ratio)


def read_b6(design: Rec, prediction: Rec, measurement: Rec) -> Rec:
    """The measurement with ``readings``: by configuration, :func:`b6_reading` of its spectra against the predicted
    law, and ``control``, the KS ratio of the same eigenvalues against the wrong law where the prediction has one
    (the negative control: the power of the rule); pure, computed once for judge, describe and figure."""
    readings = {}
    for key, spectra in measurement["spectra"].items():
        r = readings[key] = b6_reading(prediction[key]["law"], spectra)
        wrong = prediction[key].get("wrong")  # the same window: b6_reading reads it from the same spectra
        r["control"] = None if wrong is None else float(b6_reading(wrong, spectra)["ratio"])
    return dict(measurement, readings=readings)


def judge_b6(design: Rec, prediction: Rec, evidence: Rec) -> list[Comparison]:
    """Per configuration: the KS ratio bound and the law's quadrature mass, from :func:`read_b6`'s readings (pure)."""
    comps = []
    for act, cval in design["configs"]:
        key, name = f"{act}_c{cval}", f"{act} p/n={cval}"
        r = evidence["readings"][key]
        ratio, mass = r["ratio"], r["mass"]
        comps += [
            Comparison.bound(
                f"{name}: KS(2n)/KS(n), n={design['n']} (KS {r['m1']:.3g} -> {r['m2']:.3g})", 0.5, float(ratio),
                float(r["se_ratio"]), float(ratio - 2**-0.5), key={"config": key, "quantity": "KS ratio"},
                rule=("ratio <= 2^-1/2 = 0.707 (KS must decay at least like n^-1/2; O(1/n) predicts 0.5; "
                      "a wrong law gives ratio -> 1; delta-method SE)")),
            Comparison(
                name=f"{name}: mass of theory.kernel_density on [{r['lo']:.2f}, {r['hi']:.2f}]", predicted=1.0,
                measured=float(mass), uncertainty=None, passed=bool(abs(mass - 1) < 0.01),
                key={"config": key, "quantity": "mass"},
                tolerance=("|mass - 1| < 0.01 (quadrature mass check: the KS distances above use this trapezoid CDF, "
                           "so a density missing > 1% of its mass would bias every KS value by about that much)")),
        ]
    return comps


def _describe_b6(design: Rec, prediction: Rec, evidence: Rec, comparisons: list[Comparison]) -> tuple[str, Rec]:
    data: Rec = {}
    controls: list[str] = []
    for act, cval in design["configs"]:
        key = f"{act}_c{cval}"
        law, r = prediction[key]["law"], evidence["readings"][key]
        controls.append(f"{act} p/n={cval}: {r['control']:.2f}")
        data[key] = dict(ks_n=r["ks_n"], ks_2n=r["ks_2n"], mass=r["mass"], a1=law.a1, nu=law.nu,
                         ratio_control_nu_x1_03=r["control"])
    notes = ("K = f(X^T X / sqrt p) / sqrt p, diagonal removed, X standard Gaussian. Negative control (not a "
             f"comparison): the law with nu x 1.03 gives KS ratios {', '.join(controls)} (a wrong law does not "
             "shrink).")
    return notes, data


def _b6_ecdf_gap(ax: Any, ev: np.ndarray, x: np.ndarray, cdf: np.ndarray, color: str, label: str) -> None:
    """ECDF minus the law's CDF of one spectrum (a step curve) and its Kolmogorov distance (dotted level)."""
    ev, ks = np.sort(ev), _ks(ev, x, cdf)
    ax.step(ev, np.arange(1, ev.size + 1) / ev.size - np.interp(ev, x, cdf), where="post", color=color, lw=1.0,
            label=f"{label} (KS {ks:.3f})")
    for level in (ks, -ks):
        ax.axhline(level, color=color, ls=":", lw=0.9)


def _b6_column(ax: Any, rax: Any, design: Rec, prediction: Rec, evidence: Rec,
               comps: list[Comparison], act: str, cval: float) -> None:
    """One configuration: histogram at 2n and the density; below, ECDF - CDF of one trial at n and at 2n."""
    n, key = design["n"], f"{act}_c{cval}"
    law, spectra, r = prediction[key]["law"], evidence["spectra"][key], evidence["readings"][key]
    ax.hist(np.ravel(spectra[1]), bins=60, density=True, color=F.OKABE_ITO["sky"], alpha=0.7,
            label=f"eigenvalues at 2n (histogram, {spectra[1].shape[0]} trials)")
    xx = np.linspace(r["lo"], r["hi"], 800)
    ax.plot(xx, law.density(xx), "-", color=F.THEORY, lw=1.4, label="theory: free-convolution law")
    x, cdf, _ = law.cdf(r["lo"], r["hi"])
    _b6_ecdf_gap(rax, spectra[0][0], x, cdf, F.COLORS[0], "one trial at n")
    _b6_ecdf_gap(rax, spectra[1][0], x, cdf, F.COLORS[1], "one trial at 2n")
    rax.axhline(0.0, color="#777777", lw=0.8)
    ax.set(ylabel="density", title=f"f = {act}, p/n = {cval:g}: n = {n}, 2n = {2 * n}")
    rax.set(xlabel="eigenvalue λ of K", ylabel="ECDF − CDF")
    F.key_numbers(ax, [f"mean KS: {r['m1']:.4f} (n) → {r['m2']:.4f} (2n)",
                       f"ratio {r['ratio']:.3f} ± {r['se_ratio']:.3f} (≤ 0.707)", f"mass of the law {r['mass']:.4f}",
                       f"negative control (ν × 1.03): ratio {r['control']:.2f}"],
                  verdict=F.worst_outcome(with_key(comps, config=key)))
    F.legend(rax, loc="lower right", fontsize=F.FONT["legend"] - 0.5,
             extra=[F.proxy("dotted: ± the trial's KS distance", marker=None, ls=":")])


@F.paper_figure
def _figure_b6(design: Rec, prediction: Rec, evidence: Rec, judgement: Judgement) -> Any:
    """Kernel spectra against the free-convolution law: densities (top), ECDF - CDF with the KS distance (bottom)."""
    verdict, comps = judgement.verdict, list(judgement.comparisons)
    configs = design["configs"]
    fig, axes = F.subplots(2, len(configs), panel=(3.9, 2.3), extra=1.1, sharex="col", height_ratios=(2.3, 1.5))
    for j, (act, cval) in enumerate(configs):
        _b6_column(axes[0, j], axes[1, j], design, prediction, evidence, comps, act, cval)
    F.legend(axes[0, 0], outside=True, ncol=2, axes=[axes[0, 0]])
    t1, t2 = design["trials"]
    F.suptitle(fig, "B6", "eigenvalues of the null kernel f(XᵀX/√p)/√p (diagonal removed) vs theory",
               f"X standard Gaussian; {t1} trials at n, {t2} at 2n; claim: KS(2n)/KS(n) ≤ $2^{{-1/2}}$ "
               "(O(1/n) gives 0.5)",
               verdict)
    return fig


STATEMENT_B6 = "The kernel's eigenvalue histogram follows the free-convolution law"

CLAIM_B6 = register(Claim(id="B6", paper="B", statement=STATEMENT_B6, design=_design_b6, predict=_predict_b6,
                          simulate=_simulate_b6, read=read_b6, judge=judge_b6, describe=_describe_b6,
                          figure=_figure_b6, figure_name="kernel_spectrum"))
