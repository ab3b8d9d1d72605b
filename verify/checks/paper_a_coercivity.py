"""Paper A, claims A5 (coercivity, Lemma 3.4) and A6 (the low-rank condition / parametric term).

A5: normalisation and the identity used (derived here)
------------------------------------------------------
``E_inf(g) = E[ 1/N sum_i |Y_i - R_g[X]_i|^2 ]`` (mean over the N tokens of one sample; the noise
is independent of ``X`` with mean zero). With ``h = g - g*`` the cross term vanishes and

    RHS := E_inf(g) - E_inf(g*) = E[ 1/N sum_i (R_h[X]_i)^2 ]                      (exact)
         = 1/(N-1) ||h||^2_{L2(rho)} + (N-2)/(N-1) E[ h(X_1, X_2) h(X_1, X_3) ]   (exchangeability)

so ``RHS - LHS = (N-2)/(N-1) E[h(X_1,X_2) h(X_1,X_3)]`` with ``LHS = ||h||^2/(N-1)``.
If the tokens are conditionally i.i.d. given a latent variable (de Finetti mixtures: independent
tokens, and the shared-factor "exchangeable" law of :class:`numerics.IPSModel`), then
``E[h12 h13] = E[ (E[h(X_1, X_2) | X_1, W])^2 ] >= 0`` and the lemma holds, with equality iff
``E[h(x, X_2) | W] = 0``: e.g. ``h(x, y) = x^T B y`` with independent centred tokens (the tight case,
ratio RHS/LHS = 1). The constant function is the loosest direction (ratio ``N - 1``).
For *finitely* exchangeable laws with negative correlation the inequality can FAIL: with
``X_i = Z_i - t mean(Z)`` (Gaussian, ``d = 1``, equicorrelation ``c/v < 0``) and ``h(x, y) = x y``,
``E[h12 h13] = v c + 2 c^2`` which is negative for ``-1/2 < c/v < 0``. The check measures this
derived counterexample too and compares it with the closed form.

Both sides are estimated by Monte Carlo over ``M`` independent samples, per sample
(``RHS_m = 1/N sum_i R_h[X^m]_i^2``, ``LHS_m`` = the mean of ``h^2`` over the ``N (N-1)`` ordered
pairs of sample ``m`` divided by ``N-1``), so the standard errors are those of i.i.d. means and
``RHS - LHS`` is estimated paired (common random numbers). The exact identity above (no noise)
is used for the verdict; the naive noisy estimate ``mean(1/N |Y - R_g|^2 - 1/N |Y - R_g*|^2)`` is
reported for a subset of cases and must agree with it within 3 combined SE.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Sequence

import numpy as np

from numerics.ips import IPSModel
from verify.checks.paper_a_numerics import _plt, size_of
from verify.registry import CheckContext, Comparison, Outcome, check

__all__ = ["check_a5", "check_a6", "coercivity_sides", "robust_trend", "A6_REPLICATES"]

#: replicates per (d, r) configuration of A6 by size (paper: 20, the paper-scale minimum)
A6_REPLICATES = {"smoke": 2, "quick": 8, "paper": 20}


# ----------------------------------------------------------------------------------------- A5
def coercivity_sides(H: np.ndarray) -> dict[str, float]:
    """Monte Carlo estimates of both sides of Lemma 3.4 from pair values ``H[m, i, j] = h(X_i, X_j)``.

    Parameters
    ----------
    H : ndarray, shape (M, N, N)
        Values of ``h = g - g*`` on all ordered pairs of each of ``M`` independent samples
        (the diagonal is ignored).

    Returns
    -------
    dict
        ``lhs, lhs_se`` (``||h||^2/(N-1)``), ``rhs, rhs_se`` (``E 1/N sum_i R_h[X]_i^2``),
        ``diff, diff_se`` (``rhs - lhs``, paired), ``ratio, ratio_se`` (delta method).
    """
    H = np.asarray(H, dtype=np.float64)
    if H.ndim != 3 or H.shape[1] != H.shape[2] or H.shape[1] < 2 or H.shape[0] < 2:
        raise ValueError(f"H must have shape (M>=2, N>=2, N), got {H.shape}")
    M, N, _ = H.shape
    off = ~np.eye(N, dtype=bool)
    Hz = np.where(off, H, 0.0)
    R = Hz.sum(axis=2) / (N - 1)  # R_h[X]_i
    rhs_m = (R**2).mean(axis=1)
    lhs_m = (Hz**2).sum(axis=(1, 2)) / (N * (N - 1)) / (N - 1)
    d_m = rhs_m - lhs_m
    se = lambda v: float(v.std(ddof=1) / math.sqrt(v.size))  # noqa: E731
    lhs, rhs = float(lhs_m.mean()), float(rhs_m.mean())
    ratio = rhs / lhs if lhs > 0 else float("inf")
    # delta method for the ratio of two correlated means
    cov = np.cov(np.vstack([rhs_m, lhs_m]), ddof=1) / M
    ratio_se = (math.sqrt(max(cov[0, 0] / lhs**2 - 2 * rhs * cov[0, 1] / lhs**3 + rhs**2 * cov[1, 1] / lhs**4, 0.0))
                if lhs > 0 else float("nan"))
    return {"lhs": lhs, "lhs_se": se(lhs_m), "rhs": rhs, "rhs_se": se(rhs_m),
            "diff": float(d_m.mean()), "diff_se": se(d_m), "ratio": ratio, "ratio_se": ratio_se}


def _naive_diff(model: IPSModel, X: np.ndarray, G: np.ndarray, Gs: np.ndarray, rng: np.random.Generator):
    """``mean_m [1/N |Y - R_g|^2 - 1/N |Y - R_g*|^2]`` with fresh noise; returns (value, se)."""
    N = X.shape[1]
    off = ~np.eye(N, dtype=bool)
    Rg = np.where(off, G, 0.0).sum(axis=2) / (N - 1)
    Rs = np.where(off, Gs, 0.0).sum(axis=2) / (N - 1)
    Y = Rs + model.sample_noise(Rs.shape, rng)
    v = ((Y - Rg) ** 2).mean(axis=1) - ((Y - Rs) ** 2).mean(axis=1)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))


def _neg_equicorrelated(M: int, N: int, t: float, rng: np.random.Generator) -> np.ndarray:
    """``X_i = Z_i - t mean(Z)`` (d = 1): finitely exchangeable, negatively equicorrelated."""
    Z = rng.standard_normal((M, N, 1))
    return Z - t * Z.mean(axis=1, keepdims=True)


@check("A5")
def check_a5(ctx: CheckContext) -> Outcome:
    """Coercivity ``||g-g*||^2/(N-1) <= E_inf(g) - E_inf(g*)`` for independent and dependent tokens."""
    t0 = time.perf_counter()
    size = size_of(ctx)
    quick = size != "paper"
    M = {"smoke": 2000, "quick": 20000, "paper": 200000}[size]
    d, N = (3, 5) if quick else (5, 5)
    laws = ["uniform", "exchangeable"] if quick else ["uniform", "gaussian", "anisotropic", "exchangeable"]
    eps_list = [0.05, 0.3, 1.0]
    B_seed = ctx.design_seed("direction-B")
    comps: list[Comparison] = []
    rows: list[dict[str, Any]] = []

    def phi_dirs(model: IPSModel) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
        return {
            "psi(u)=u (tight for centred independent tokens)": lambda u: u,
            "psi(u)=cos(3u)": lambda u: np.cos(3 * u),
            "psi=1 (constant, loosest)": lambda u: np.ones_like(u),
        }

    n_tasks = len(laws) * (3 * 1 + len(eps_list)) + 1
    with ctx.progress("coercivity cases", total=n_tasks) as bar:
        for law in laws:
            model = IPSModel(d=d, N=N, rank=1, degree=3, token_law=law, noise=0.5, seed=ctx.design_seed("model", law))
            rng = np.random.default_rng(ctx.seed_for("tokens", law))
            X = model.sample_tokens(M, rng)
            U = model.pair_values(X)
            Gs = model.phi_star(U)
            # (a) function perturbations g = g* + eps psi(u): h is linear in eps, the ratio does not depend on eps
            for name, psi in phi_dirs(model).items():
                H = psi(U)
                res = coercivity_sides(H)
                row = {"law": law, "direction": name, "eps": "any (h linear in eps)", **res}
                if name.startswith("psi(u)=cos"):
                    eps = 0.3
                    nv, nse = _naive_diff(model, X, Gs + eps * H, Gs, np.random.default_rng(ctx.seed_for("noise", law)))
                    row["naive_diff"], row["naive_se"] = nv / eps**2, nse / eps**2
                    comps.append(Comparison.consistency(
                        f"{law}: naive noisy E_inf difference vs exact identity ({name}, eps={eps})",
                        res["rhs"], row["naive_diff"], math.hypot(row["naive_se"], res["rhs_se"]),
                        rule="both scaled by 1/eps^2, combined SE"))
                rows.append(row)
                comps.append(_coercivity_comparison(f"{law}: {name}", res))
                if law in ("uniform", "gaussian", "anisotropic") and name.startswith("psi(u)=u"):
                    comps.append(Comparison.consistency(
                        f"{law}: tight case psi(u)=u, ratio RHS/LHS (derived: exactly 1, E[h12 h13] = 0)",
                        1.0, res["ratio"], res["ratio_se"],
                        rule="delta-method SE: the constant 1/(N-1) is attained"))
                bar.advance()
            # (b) matrix perturbations g = phi*(x^T (A* + eps B) y): nonlinear in eps
            gB = np.random.default_rng(B_seed)
            Bm = gB.standard_normal((d, d))
            Bm *= np.linalg.norm(model.A_star) / np.linalg.norm(Bm)
            for eps in eps_list:
                Ue = model.pair_values(X, model.A_star + eps * Bm)
                res = coercivity_sides(model.phi_star(Ue) - Gs)
                rows.append({"law": law, "direction": "A* -> A* + eps B", "eps": eps, **res})
                comps.append(_coercivity_comparison(f"{law}: A* + {eps} B", res))
                bar.advance()
        # (c) derived counterexample: finitely exchangeable, negative equicorrelation, h = x y
        N3, t = 3, 1.0 - math.sqrt(0.4)  # equicorrelation -1/4 for N = 3 (5 t^2 - 10 t + 3 = 0)
        v = 1 - 2 * t / N3 + t**2 / N3
        c = (t**2 - 2 * t) / N3
        pred_diff = (N3 - 2) / (N3 - 1) * (v * c + 2 * c**2)
        pred_lhs = (v**2 + 2 * c**2) / (N3 - 1)
        Xn = _neg_equicorrelated(M, N3, t, np.random.default_rng(ctx.seed_for("neg-equicorrelated")))
        Hn = Xn[:, :, None, 0] * Xn[:, None, :, 0]
        res = coercivity_sides(Hn)
        rows.append({"law": "finitely exchangeable, corr -1/4 (N=3, d=1)", "direction": "h(x,y)=xy", "eps": "any",
                     **res, "predicted_diff": pred_diff, "predicted_ratio": 1 + pred_diff / pred_lhs})
        comps.append(Comparison.consistency(
            "derived counterexample (finitely exchangeable, corr -1/4, N=3, h=xy): RHS-LHS", pred_diff, res["diff"],
            res["diff_se"], rule="closed form (N-2)/(N-1)(v c + 2 c^2) (verifies the derived identity; the lemma "
                                 "itself FAILS here, see notes)"))
        comps.append(Comparison.direction(
            "derived counterexample: the lemma is violated (RHS - LHS < 0)", "< 0 (predicted violation)", res["diff"],
            res["diff_se"], -1, rule="the predicted violation must be significant"))
        bar.advance()

    fig = _plot_a5(rows)
    path = ctx.save_figure(fig, "coercivity")
    tight = [r for r in rows if r["direction"].startswith("psi(u)=u") and r["law"] == "uniform"]
    naive = [c for c in comps if "naive" in c.name]
    from verify.verdicts import judge

    judge(comps)  # outcomes for the notes (pure; the registry judges the same comparisons again)
    n_naive_ok = sum(c.outcome == "PASS" for c in naive)
    exch = [r for r in rows if r["law"] == "exchangeable"]
    exch_min = min(exch, key=lambda r: r["ratio"] + 0.0) if exch else None
    exch_ok = all(r["diff"] > -3 * r["diff_se"] for r in exch)
    notes = (
        f"Normalisation: E_inf(g) = E[1/N sum_i |Y_i - R_g[X]_i|^2]; LHS = ||g-g*||^2_rho/(N-1). "
        f"RHS estimated by the exact identity E[1/N sum_i R_(g-g*)[X]_i^2] (noise-free, low variance; derived: "
        f"RHS-LHS = (N-2)/(N-1) E[h12 h13]); the naive noisy estimate agrees with it within 3 combined SE in "
        f"{n_naive_ok}/{len(naive)} cases (comparisons 'naive'). "
        f"M = {M} samples per case, d = {d}, N = {N}, laws {laws}. "
        f"Tight case (independent centred tokens, psi(u)=u): ratio RHS/LHS = "
        f"{tight[0]['ratio']:.4f} +- {tight[0]['ratio_se']:.4f} (theory: exactly 1). "
        f"Constant direction: measured ratios "
        f"{[round(r['ratio'], 3) for r in rows if r['direction'].startswith('psi=1')]} (derived for independent "
        f"tokens: N-1 = {N - 1}). The shared-factor exchangeable law is a de Finetti "
        f"mixture, so E[h12 h13] >= 0 and the lemma should hold: measured "
        + (f"smallest ratio {exch_min['ratio']:.4f} +- {exch_min['ratio_se']:.4f} ({exch_min['direction']}, "
           f"eps={exch_min['eps']}); RHS - LHS > -3 SE in {'all' if exch_ok else 'NOT all'} {len(exch)} "
           f"exchangeable-law cases. " if exch_min else "(exchangeable law not run in this profile). ")
        + f"FINDING (derived here; numerically "
        f"{'confirmed: ratio + 3 SE < 1' if res['ratio'] + 3 * res['ratio_se'] < 1 else 'NOT confirmed: ratio + 3 SE >= 1'}): for a finitely exchangeable law with negative "
        f"correlation the inequality fails: measured RHS/LHS = {res['ratio']:.4f} +- {res['ratio_se']:.4f} "
        f"(closed form {1 + pred_diff / pred_lhs:.4f}); Lemma 3.4 therefore needs more than finite exchangeability "
        f"(e.g. infinite exchangeability / conditionally i.i.d. tokens, or E[h12 h13] >= 0). This case is "
        f"a comparison of the derived identity, not of the lemma. Runtime {time.perf_counter() - t0:.1f}s."
    )
    return Outcome(comparisons=comps, notes=notes, figures=[p for p in [path] if p],
                   data={"cases": rows, "M": M, "d": d, "N": N})


def _coercivity_comparison(name: str, res: dict[str, float]) -> Comparison:
    """RHS - LHS >= 0 as a one-sided bound: it holds exactly for conditionally i.i.d. tokens (module
    docstring), so it can only fail through Monte Carlo noise (at the stated rate) or a sampler bug."""
    return Comparison.bound(
        f"{name}: RHS - LHS (ratio RHS/LHS = {res['ratio']:.3f} +- {res['ratio_se']:.3f})", ">= 0", res["diff"],
        res["diff_se"], -res["diff"],
        rule="RHS - LHS >= 0 (paired Monte Carlo SE over independent samples; exact for conditionally i.i.d. "
             "tokens, so this tests the sampler and the identity)")


def _plot_a5(rows: list[dict[str, Any]]):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    labels = [f"{r['law'][:14]} | {r['direction'][:18]} | eps={r['eps'] if not isinstance(r['eps'], str) else '*'}"
              for r in rows]
    y = np.arange(len(rows))
    ratios = np.array([r["ratio"] for r in rows])
    errs = np.array([r["ratio_se"] for r in rows])
    ax.errorbar(ratios, y, xerr=3 * errs, fmt="o", ms=4, capsize=2)
    ax.axvline(1.0, color="r", ls="--", label="RHS/LHS = 1 (coercivity boundary)")
    ax.set_yticks(y, labels, fontsize=6)
    ax.set_xscale("log")
    ax.set_xlabel("RHS / LHS  (error bars: 3 SE)")
    ax.set_title("A5: coercivity, (E_inf(g)-E_inf(g*)) / (||g-g*||^2/(N-1))")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------------------- A6
def robust_trend(x_levels: Sequence[float], errors: Sequence[Sequence[float]], n_boot: int = 2000,
                 rng: int = 0) -> tuple[float, float, float]:
    """Slope ``b`` of the per-configuration MEDIAN error against ``x`` (OLS), with a replicate-bootstrap SE.

    The median of each configuration's replicates cannot be moved far by one outlier replicate (an estimator
    fit in a bad basin), unlike the mean or an OLS fit through every replicate point; the bootstrap resamples
    replicates within each configuration and refits, and the SE is the interquartile range of the bootstrap
    slopes over 1.349 (the replicate-level variability of ``b``, robust to resamples that repeat an outlier).

    Returns
    -------
    (b, se, intercept)
    """
    x = np.asarray(x_levels, dtype=float)
    xc = x - x.mean()
    sxx = float(np.sum(xc**2))
    med = np.array([np.median(e) for e in errors])
    b = float(xc @ med / sxx)
    gen = np.random.default_rng(rng)
    boots = np.empty((n_boot, len(errors)))
    for j, e in enumerate(errors):
        e = np.asarray(e, dtype=float)
        boots[:, j] = np.median(e[gen.integers(0, e.size, size=(n_boot, e.size))], axis=1)
    bb = (boots - boots.mean(axis=1, keepdims=True)) @ xc / sxx
    q25, q75 = np.quantile(bb, [0.25, 0.75])
    # robust scale of the bootstrap distribution (IQR / 1.349, the SD for a normal law): a resample that
    # repeats the outlier replicate must not inflate the SE either
    return b, float((q75 - q25) / 1.3489795), float(med.mean() - b * x.mean())


@check("A6")
def check_a6(ctx: CheckContext) -> Outcome:
    """Crossing the low-rank condition at fixed M: the parametric term is dominated inside, shows outside.

    At fixed ``M`` the token dimension ``d`` and rank ``r`` are varied across the condition of
    :func:`theory.low_rank_condition` with the constant :data:`verify.checks.paper_a_numerics.LOW_RANK_CONSTANT`
    (shared with A3 and A4).  Tested (verdict): (i) the error grows with the parametric term ``r d log M / M``:
    ``b > 0`` for the per-configuration medians (robust to one outlier replicate; replicate-bootstrap SE);
    (ii) inside the condition the excess error over ``(d, r) = (1, 1)`` is below the non-parametric error itself
    (``2 mean(1,1) - mean_i > 0``: the parametric term is dominated); (iii) outside the condition the excess over
    ``(1, 1)`` is positive.  All are direction tests (PASS when significant at 5%, FAIL when the opposite is
    significant at the check's Holm level, INCONCLUSIVE otherwise).
    """
    from scipy import stats

    from theory.minimax import low_rank_condition, num_intervals, parametric_term
    from verify.checks.paper_a_numerics import (
        LOW_RANK_CONSTANT, STARTS_NOTE, _pred_sizes, _run_groups_fixed_M, balanced_sigma, cache_text, predictions)

    t0 = time.perf_counter()
    size = size_of(ctx)
    M = {"smoke": 500, "quick": 2000, "paper": 10000}[size]
    beta = 2
    C_K = 4
    K = int(num_intervals(M, beta, constant=C_K))  # K_M = floor(C (M/log M)^(1/(2b+1))), C = 4
    combos = {"smoke": [(1, 1), (4, 1), (4, 2)],
              "quick": [(1, 1), (2, 1), (4, 1), (8, 1), (4, 2), (8, 2), (16, 1), (16, 2)],
              "paper": [(1, 1), (2, 1), (4, 1), (8, 1), (4, 2), (8, 2), (16, 1), (16, 2), (30, 1), (30, 2)]}[size]
    reps = A6_REPLICATES[size]
    psz = _pred_sizes(size)
    base = {"d": 1, "N": 5, "r": 1, "P": 3, "n_knots": 6, "truth_seed": ctx.design_seed("truth", 3), "law": "uniform"}
    base["sigma"] = balanced_sigma(base, K, M, 1, ctx.design_seed("sigma"), **psz)
    configs = [{**base, "d": d, "r": r} for d, r in combos]
    preds, shares = [], []
    pseed = ctx.design_seed("predict")
    info: dict = {}
    for c, q in zip(configs, predictions(ctx, [(c, K, pseed) for c in configs], "A6", info)):
        n = M * c["N"]
        preds.append(q["B"] + (q["V_np"] + q["V_par"]) / M * n / (n - q["p"]))
        shares.append(q["V_par"] / M * n / (n - q["p"]) / preds[-1])
    errs, refits = _run_groups_fixed_M(ctx, configs, K, M, reps, "A6", info)
    x_levels = [float(parametric_term(r, d, M)) for d, r in combos]
    b, b_se, b_icpt = robust_trend(x_levels, errs, rng=ctx.seed_for("bootstrap"))
    ols = stats.linregress(np.repeat(x_levels, reps), np.concatenate(errs))
    pred_fit = stats.linregress(x_levels, preds)
    inside = [bool(low_rank_condition(r, d, M, beta, constant=LOW_RANK_CONSTANT)) for d, r in combos]
    means = [float(np.mean(e)) for e in errs]
    comps = [Comparison.direction(
        "error = a + b * r d log M / M at fixed M: b > 0 (per-configuration medians)", "> 0", b, b_se, +1,
        headline=True, rule=f"replicate-bootstrap SE; OLS through every replicate point gives {ols.slope:.3g} +- "
                            f"{ols.stderr:.2g}")]
    e0 = np.asarray(errs[0])
    v0 = float(e0.var(ddof=1) / e0.size)
    excess = []
    for (d, r), e, ins in zip(combos[1:], errs[1:], inside[1:]):
        e = np.asarray(e)
        vi = float(e.var(ddof=1) / e.size)
        exc, exc_se = float(e.mean() - e0.mean()), math.sqrt(vi + v0)
        dfw = (vi + v0) ** 2 / (vi**2 / (e.size - 1) + v0**2 / (e0.size - 1)) if vi + v0 > 0 else None
        excess.append({"combo": (d, r), "inside": ins, "excess": exc, "se": exc_se, "rel": exc / float(e0.mean())})
        cond = f"r d = {r * d} {'<=' if ins else '>'} {LOW_RANK_CONSTANT} (M/log M)^(1/5)"
        if ins:  # dominated: mean_0 - (mean_i - mean_0) = 2 mean_0 - mean_i > 0
            dd, dv = float(2 * e0.mean() - e.mean()), vi + 4 * v0
            dfd = dv**2 / (vi**2 / (e.size - 1) + (4 * v0) ** 2 / (e0.size - 1)) if dv > 0 else None
            comps.append(Comparison.direction(
                f"inside ({cond}): excess of (d, r) = ({d}, {r}) over (1, 1) below the non-parametric error",
                "excess < err(1,1)", dd, math.sqrt(dv), +1, df=dfd,
                rule=f"2 mean(1,1) - mean({d},{r}) > 0, Welch; relative excess {exc / float(e0.mean()):.2f}"))
        else:
            comps.append(Comparison.direction(
                f"outside ({cond}): excess of (d, r) = ({d}, {r}) over (1, 1)", "> 0 (parametric term shows)",
                exc, exc_se, +1, df=dfw, rule="independent replicates, Welch"))
    npar = [r * (2 * d - r) for d, r in combos]
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for xi, e, (d, r), ins in zip(x_levels, errs, combos, inside):
        ax.scatter([xi] * len(e), e, s=10, color="C0" if ins else "C3", alpha=0.6)
    ax.plot(x_levels, preds, "k^", ms=5, label="a-priori prediction B + (V_np + V_par)/M")
    xs = np.linspace(0, max(x_levels), 50)
    ax.plot(xs, b_icpt + b * xs, "C0-", label=f"median fit: b = {b:.3g} +- {b_se:.2g}")
    for xi, (d, r), mval in zip(x_levels, combos, means):
        ax.annotate(f"d={d},r={r}", (xi, mval), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("parametric term r d log M / M")
    ax.set_ylabel("||g_hat - g*||^2")
    ax.set_title(f"A6: fixed M={M}, K_M={K} (blue: inside r d <= {LOW_RANK_CONSTANT} (M/log M)^(1/5), red: outside)",
                 fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = ctx.save_figure(fig, "parametric_term")
    ratio = [mv / pv for mv, pv in zip(means, preds)]
    rho_sp = stats.spearmanr(npar, ratio) if len(set(npar)) > 2 else None
    notes = (
        f"Fixed M = {M}, P = 3 (beta = 2), s = 1, K = K_M = floor({C_K} (M/log M)^(1/5)) = {K} (the estimator's "
        f"interval constant {C_K}: with 1, K_M = {int(num_intervals(M, beta))} would be very coarse), sigma = "
        f"{base['sigma']:.4g} (balanced for d = 1), N = 5, {reps} replicates; (d, r) in {combos}. Low-rank condition "
        f"(theory.low_rank_condition, constant {LOW_RANK_CONSTANT}, the one A3 and A4 use): inside "
        f"{[c for c, i in zip(combos, inside) if i]}; predicted parametric share of the error "
        f"{[round(v, 2) for v in shares]}. "
        f"Measured mean errors {[f'{m:.3g}' for m in means]}; a-priori predictions (B + (V_np + V_par(d, r))/M, "
        f"V_par from the Fisher information of the A-tangent directions) {[f'{p:.3g}' for p in preds]}; "
        f"ratios {[round(q, 3) for q in ratio]}. Median fit error = a + b x, x = r d log M / M: a = {b_icpt:.3g}, "
        f"b = {b:.3g} +- {b_se:.2g} (replicate bootstrap; predicted {pred_fit.slope:.3g}). The parametric term grows "
        f"like r (2d - r) (manifold dimension) rather than r d; the linear fit in r d is the paper's form. "
        f"Refitted stalled fits: {refits}. "
        + (STARTS_NOTE + " " if size == "paper" else "") +
        "Excesses over (1, 1) (value, SE, relative): "
        + "; ".join(f"{x['combo']} {'in' if x['inside'] else 'OUT'}: {x['excess']:.3g} +- {x['se']:.2g} "
                    f"({x['rel']:.2f})" for x in excess)
        + ". Reported, not part of the verdict: measured/predicted ratio vs the number r (2d - r) of matrix "
        "parameters: "
        + (f"Spearman rho = {rho_sp.statistic:.2f} (p = {rho_sp.pvalue:.2g})" if rho_sp is not None else "n/a")
        + f". Runtime {time.perf_counter() - t0:.1f}s. " + cache_text(info) + "."
    )
    return Outcome(comparisons=comps, notes=notes, figures=[p for p in [path] if p],
                   data={"sweep": info, "M": M, "K": K, "combos": combos, "x": x_levels, "errors": [list(e) for e in errs],
                         "pred": preds, "inside": inside, "parametric_share": shares, "b": b, "b_se": b_se,
                         "b_ols": ols.slope, "b_pred": pred_fit.slope, "sigma": base["sigma"], "excess": excess})
