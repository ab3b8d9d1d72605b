"""Shared machinery of the paper-A rate checks (A2, A3, A4, A6): design, one sweep trial, predictions.

Experimental design (the project's choices, from theory; stated in every check's notes)
----------------------------------------------------------------------------------------
- Truth: :class:`numerics.IPSModel` B-spline of degree ``P`` (``beta = P - 1``), support ``[-1, 1]``
  (``support=1``) so that ``phi*`` vanishes, ``C^{P-1}``, beyond the ``0.999`` quantile of ``|u|``
  (``A*`` is normalised that way), few interior knots (the truth is smooth at the scale of the
  estimator's intervals, so the bias is in its asymptotic regime ``~ K^{-2 beta}``).
- Estimator: :class:`numerics.PairwiseInteractionEstimator` with ``s = P - 2 = beta - 1``
  (``s >= ceil(beta) - 1`` of the paper, the smallest allowed: bias ``~ K^{-2(s+1)} = K^{-2 beta}``)
  on ``K`` equal intervals of the central ``1 - 2 q`` quantile range of the observed ``u``
  (``range_quantile = q = 5e-4``: a range that does not drift with ``M``; the clamped tails carry
  ``phi* ~ 0``); ``ridge = 0`` for ``d = 1`` (A2: biases down to 1e-20 must not be shrunk) and a relative
  ridge ``1e-4`` for ``d > 1`` (the ``u``-density vanishes at the ends of the range, so the two end
  intervals hold a handful of pairs and, unregularised, occasionally produce errors 100-2000x the
  typical one; ``phi* ~ 0`` there, so shrinking them costs nothing measurable); ``2`` estimator starts
  for ``d > 1`` (one moment start occasionally stalls, objective 100x too large; the paper profile
  used 3 until measured, see ``STARTS_NOTE``).
- ``K_M``: integer ``K`` levels are chosen first and ``M_K = round(M_lo (K / K_lo)^(2 beta + 1))``,
  i.e. ``K_M = K_lo (M / M_lo)^(1/(2 beta + 1))`` EXACTLY (up to rounding of ``M``): no log factor and
  no integer steps (design choice; SPEC's reconstruction ``(M / log M)^(1/(2 beta+1))`` would add a
  finite-``M`` slope offset ``~ (2b/(2b+1)) / log M``).
- Noise level ``sigma``: chosen a priori so that the predicted variance equals the predicted bias at
  the geometric centre of the ``M`` range (balanced, the minimax regime), from :func:`predict_error`.

Finite-``M`` prediction of the design
-------------------------------------
The a-priori error model ``B(K) + (V_np + V_par) / M`` of the estimator lives in :mod:`numerics.error_model`
(derivation there); the checks evaluate it along their designs (:meth:`Group.predicted`, with the first-order
finite-sample factor ``n / (n - p)``) and compare the measured slopes with it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from numerics.error_model import RANGE_Q, predict_error, predicted_curve  # noqa: F401  (re-exported)
from numerics.estimator import PairwiseInteractionEstimator
from numerics.ips import IPSModel
from numerics.slopes import SlopeFit, compare_slopes, fit_slope
from numerics.sweep import run_sweep, source_version
from numerics.threads import torch_threads
from verify.registry import CheckContext, Comparison, Outcome, check
from verify.verdicts import SLOPE_MARGIN

__all__ = ["Group", "check_a2", "check_a3", "check_a4", "k_levels_to_M", "model_for", "predict_error",
           "predict_task", "predictions", "cache_text",
           "predicted_curve", "balanced_sigma", "trial"]

SUPPORT = 1.0
RIDGE_D = 1e-4  # relative ridge for d > 1 sweeps: tames near-empty end intervals (phi* ~ 0 there)


def model_for(cell: dict) -> IPSModel:
    """The ground truth of a sweep cell."""
    return IPSModel(d=int(cell["d"]), N=int(cell["N"]), rank=int(cell["r"]), truth="bspline",
                    degree=int(cell["P"]), token_law=cell.get("law", "uniform"), noise=float(cell["sigma"]),
                    n_knots=int(cell["n_knots"]), support=SUPPORT, seed=int(cell["truth_seed"]))


def trial(cell: dict, seed: int) -> dict:
    """One replicate: sample ``M`` samples, fit, Monte Carlo L2(rho) error (top-level: picklable).

    With ``cell["known_A"]`` the same data are also fitted with the matrix fixed at ``A*`` (result keys
    ``err_known``, ``err_known_se``, ``objective_known``): the estimated-A minus A*-known comparison of A3 on
    paired data; the stall threshold becomes ``max(2 sigma^2, 1.5 objective_known)``.

    The ERM is the *global* minimiser; the estimator's optimiser occasionally stalls in a wrong basin
    for ``d > 1`` (objective ~100x the noise level). Protocol: if the final mean squared residual exceeds
    ``2 sigma^2`` (it is ``~ sigma^2 (1 - p/(M N)) + bias`` at the global minimum, and the bias is far
    below ``sigma^2`` in every design here), refit with 4 more starts and another seed, at most twice;
    the number of refits is recorded. Refits run every start (``adaptive_restarts=False``): with adaptive
    restarts the random starts run only when the two moment starts disagree, and a stalled fit is exactly
    the case where both moment starts sit in the same wrong basin (they "agree"), so a refit would repeat
    the stalled fit (measured: d = 2, N = 3, M = 500, objective 8.5 sigma^2 with 2, 6 and 10 adaptive
    starts; 1.02 sigma^2 once the random starts run).

    ``cell["device"]`` (optional, default ``"cpu"``) is the torch device of the estimator's fit; the
    checks add the key only for a non-CPU device (``--device cuda``), so CPU cells keep their cache keys.
    The data, the seeds and the Monte Carlo error evaluation stay on the CPU (NumPy) either way.
    """
    model = model_for(cell)
    rng = np.random.default_rng(seed)
    X, Y = model.sample(int(cell["M"]), rng)
    device = str(cell.get("device", "cpu"))  # absent for "cpu": CPU cells (and cache keys) are unchanged
    sigma2 = float(cell["sigma"]) ** 2
    restarts = int(cell.get("restarts", 1))
    refits = 0
    extra: dict = {}
    threshold = 2 * sigma2
    if cell.get("known_A") and int(cell["d"]) > 1:
        # companion fit on the same data with the matrix fixed at A* (phi only): the parametric term removed.
        # Its objective is a reference for the stall protocol: A* lies in the estimator's class, so the global
        # minimum of the full fit is at most this objective; at low noise the bias, not sigma^2, sets the level.
        known = PairwiseInteractionEstimator(
            rank=int(cell["r"]), degree=int(cell["P"]) - 2, n_intervals=int(cell["K"]), restarts=1,
            max_iter=int(cell.get("max_iter", 100)), ridge=float(cell.get("ridge", 1e-12)),
            range_quantile=RANGE_Q, device=device, seed=int(seed % (2**31)))
        known.fit(X, Y, A=model.A_star)
        ek, ek_se = known.l2_error(model, n_pairs=int(cell.get("n_pairs", 2**16)), rng=int(seed) + 1)
        extra = {"err_known": ek, "err_known_se": ek_se, "objective_known": float(known.objective_)}
        threshold = max(threshold, 1.5 * float(known.objective_))
    while True:
        est = PairwiseInteractionEstimator(
            rank=int(cell["r"]), degree=int(cell["P"]) - 2, n_intervals=int(cell["K"]),
            restarts=restarts, max_iter=int(cell.get("max_iter", 100)),
            ridge=float(cell.get("ridge", 1e-12)), range_quantile=RANGE_Q, device=device,
            seed=int((seed + 7919 * refits) % (2**31)), adaptive_restarts=refits == 0)
        est.fit(X, Y)
        if int(cell["d"]) == 1 or est.objective_ <= threshold or refits >= 2:
            break
        refits += 1
        restarts += 4
    err, err_se = est.l2_error(model, n_pairs=int(cell.get("n_pairs", 2**16)), rng=int(seed) + 1)
    if cell.get("known_A") and int(cell["d"]) == 1:  # d = 1: the matrix is a scale, fixed by normalisation
        extra = {"err_known": err, "err_known_se": err_se, "objective_known": float(est.objective_)}
    return {"err": err, "err_se": err_se, "fit_time": float(est.fit_time_), "n_iter": int(est.n_iter_),
            "objective": float(est.objective_), "refits": refits, **extra}


def k_levels_to_M(K_levels: list[int], M_lo: int, beta: float) -> list[int]:
    """``M_K = round(M_lo (K / K_lo)^(2 beta + 1))``: ``K_M`` exactly proportional to ``M^(1/(2b+1))``."""
    K0 = K_levels[0]
    return [int(round(M_lo * (K / K0) ** (2 * beta + 1))) for K in K_levels]


def balanced_sigma(model_kwargs: dict, K: int, M: float, s: int, seed: int, **sizes: int) -> float:
    """``sigma`` such that the predicted variance equals the predicted bias at ``(K, M)``.

    Computed with torch pinned to :data:`SIGMA_THREADS` intra-op threads: ``sigma`` is part of every
    sweep cell, hence of its replicate seeds and cache key, which must not depend on the thread count of
    the calling process (multi-threaded reductions change the last bits; measured: ``1.5174933749508514e-3``
    at one thread vs ``...508377e-3`` at two). Two is the count the reference runs used (torch's default
    on the 2-core machine), so pinning it keeps their seeds and cache entries.
    """
    m = model_for({**model_kwargs, "sigma": 1.0})
    with torch_threads(SIGMA_THREADS):
        q = predict_error(m, K, s, seed=seed, with_A=False, **sizes)
    return round_design(math.sqrt(q["B"] * M / q["V_np"]))


def round_design(x: float, digits: int = 4) -> float:
    """A computed design constant rounded to ``digits`` significant digits: a number the notes can state and
    another machine reproduces (the pilot's last bits depend on the BLAS path; seeds never hash it anyway)."""
    return float(f"{x:.{digits - 1}e}")


#: torch threads of :func:`balanced_sigma` (fixed: sigma's last bits must not depend on the caller)
SIGMA_THREADS = 2


def predict_task(cell: dict, seed: int) -> dict:
    """Sweep task: :func:`predict_error` of one ``(configuration, K)`` (top-level: picklable, cacheable).

    ``cell`` holds the configuration of :func:`model_for` and ``K``, ``s``, ``n_pop``, ``n_pairs``; the
    Monte Carlo seed is ``seed``. Returns ``{"pred": predict_error(...)}``.
    """
    q = predict_error(model_for(cell), int(cell["K"]), int(cell["s"]), n_pop=int(cell["n_pop"]),
                      n_pairs=int(cell["n_pairs"]), seed=int(seed), with_A=bool(cell.get("with_A", True)))
    return {"pred": q}


#: the constant of the low-rank condition used by A3, A4 and A6 (``theory.low_rank_condition``): the paper's
#: condition as printed, ``r d <= (M / log M)^(1/(2 beta + 1))``
LOW_RANK_CONSTANT = 1


def low_rank_status(r: int, d: int, M: float, beta: float) -> dict[str, Any]:
    """:func:`theory.low_rank_condition` at ``M`` (constant :data:`LOW_RANK_CONSTANT`), with its right-hand side."""
    from theory.minimax import low_rank_condition, low_rank_rhs

    return {"rd": r * d, "rhs": float(low_rank_rhs(M, beta, constant=LOW_RANK_CONSTANT)),
            "inside": bool(low_rank_condition(r, d, M, beta, constant=LOW_RANK_CONSTANT))}


# ============================================================================================ checks

def _code_version() -> str:
    """Cache version of the trials: the sampler, the estimator, the trial function and its constants."""
    import sys

    import numerics._piecewise as _pw
    import numerics.estimator as _est
    import numerics.ips as _ips

    me = sys.modules[__name__]
    return source_version("a-rates", _ips, _est, _pw, me.trial, me.model_for, (SUPPORT, RANGE_Q))


def _pred_version() -> str:
    """Cache version of the a-priori predictions: the sampler and the prediction code."""
    import sys

    import numerics.error_model as _em
    import numerics.ips as _ips

    me = sys.modules[__name__]
    return source_version("a-pred", _ips, _em, me.model_for, me.predict_task, (SUPPORT, RANGE_Q))


SWEEP_VERSION = _code_version()
PRED_VERSION = _pred_version()


def size_of(ctx: CheckContext) -> str:
    """``"smoke"`` (tests only: tiny, verdicts meaningless), ``"quick"`` or ``"paper"``."""
    if ctx.profile == "smoke":
        return "smoke"
    return "quick" if ctx.quick else "paper"


def _pred_sizes(size: str) -> dict:
    return {"n_pop": 1500, "n_pairs": 2**14} if size == "smoke" else {"n_pop": 16000, "n_pairs": 2**18}


@dataclass
class Group:
    """One curve of a rate experiment: a configuration and its ``K`` / ``M`` levels."""

    label: str
    config: dict
    K: list[int]
    M: list[int]
    pred: list[dict] = field(default_factory=list)
    fit: SlopeFit | None = None
    errors: dict = field(default_factory=dict)  # M -> list of errors
    errors_known: dict = field(default_factory=dict)  # M -> errors of the A*-known fit on the same data
    shift_fit: SlopeFit | None = None  # slope of err / err_known: estimated-A minus A*-known slope (paired)
    refits: int = 0  # replicates refitted because the first fit stalled

    @property
    def beta(self) -> float:
        return float(self.config["P"] - 1)

    @property
    def theory_slope(self) -> float:
        """``-2 beta / (2 beta + 1)`` from :func:`theory.rate_exponent`."""
        from theory.minimax import rate_exponent

        return -float(rate_exponent(int(self.config["P"]) - 1))

    def predicted(self, parametric: bool = True) -> np.ndarray:
        """Finite-M prediction with the first-order finite-sample factor ``n / (n - p)``, ``n = M N``."""
        out = []
        for q, m in zip(self.pred, self.M):
            n = m * self.config["N"]
            v = q["V_np"] + (q["V_par"] if parametric else 0.0)
            out.append(q["B"] + v / m * n / max(n - q["p"], 1.0))
        return np.array(out)

    def predicted_slope(self, parametric: bool = True) -> float:
        from numerics.slopes import design_slope

        return design_slope(self.M, self.predicted(parametric))

    def to_data(self) -> dict:
        out = {"M": self.M, "K": self.K, "errors": self.errors, "fit": self.fit.to_dict(),
               "pred_curve": self.predicted().tolist(), "pred_slope": self.predicted_slope(),
               "pred_slope_np": self.predicted_slope(False), "theory": self.theory_slope, "config": self.config,
               "pred": self.pred}
        if self.shift_fit is not None:
            out.update(errors_known=self.errors_known, shift_fit=self.shift_fit.to_dict())
        return out


def _device_extra(ctx: CheckContext) -> dict:
    """``{"device": ...}`` for a non-CPU device, else ``{}`` (CPU cells and their cache keys unchanged)."""
    dev = str(getattr(ctx, "device", "cpu") or "cpu")
    return {} if dev == "cpu" else {"device": dev}


def _sweep(ctx: CheckContext, func, cells: list[dict], desc: str, info: dict | None, key: str, *,
           version: str, n_replicates: int | None = None, base_seed: int = 0, seeds=None):
    """One :func:`run_sweep` with the context's cache, executor and workers; counts go to ``info[key]``."""
    total = len(cells) * (n_replicates if n_replicates is not None else 1)
    with ctx.progress(desc, total=total) as bar:
        res = run_sweep(func, cells, seeds=seeds, n_replicates=n_replicates, base_seed=base_seed,
                        cache_dir=None if ctx.cache_dir is None else Path(ctx.cache_dir) / "paper_a_rates",
                        version=version, n_jobs=ctx.n_jobs, executor=getattr(ctx, "executor", "local"),
                        scheduler=getattr(ctx, "scheduler", None), progress=lambda rec: bar.advance())
    if info is not None:
        info[key] = {"n_computed": res.n_computed, "n_cached": res.n_cached}
    return res


def predictions(ctx: CheckContext, items: list[tuple[dict, int, int]], name: str,
                info: dict | None = None) -> list[dict]:
    """A-priori :func:`predict_error` of ``(configuration, K, seed)`` items, as one cached, parallel sweep.

    Each item is predicted with ``s = P - 2`` and the profile's Monte Carlo sizes; the results are
    cached like the trials (key: configuration, ``K``, sizes, seed and the prediction code's version),
    so an interrupted check does not recompute them, and they run on ``ctx.n_jobs`` workers with torch
    at one thread (deterministic).  The seeds are design seeds (:meth:`CheckContext.design_seed`): the
    predictions are the same for every base seed and computed once per cache.
    """
    sizes = _pred_sizes(size_of(ctx))
    cells = [{**cfg, "K": int(K), "s": int(cfg["P"]) - 2, **sizes} for cfg, K, _ in items]
    seed_of = [int(sd) for _, _, sd in items]
    res = _sweep(ctx, predict_task, cells, f"{name} predictions", info, "predictions", version=PRED_VERSION,
                 seeds=lambda i, c: [seed_of[i]])
    return [r["pred"] for r in res]


def _run_groups(ctx: CheckContext, groups: list[Group], reps: int, name: str, trial_extra: dict,
                info: dict | None = None) -> float:
    """Predictions (a priori) and the sweep (all groups in one run_sweep call); fills the groups.

    ``info`` (optional) receives the sweep's counts: ``info["predictions"]`` and ``info["trials"]`` =
    ``{"n_computed", "n_cached"}`` (pairs computed now / read back from the cache).  Groups whose
    configuration differs only in float values (a noise level) get the same replicate seeds
    (:func:`numerics.sweep.cell_seed`): paired data.
    """
    t0 = time.perf_counter()
    items = []
    for g in groups:
        # common random numbers across K (a smooth predicted curve); the same for every base seed
        pseed = ctx.design_seed("predict", g.config["d"], g.config["N"], g.config["r"], g.config["P"])
        items += [(g.config, K, pseed) for K in g.K]
    preds = predictions(ctx, items, name, info)
    for g in groups:
        g.pred, preds = preds[:len(g.K)], preds[len(g.K):]
    cells = [{**g.config, **trial_extra, **_device_extra(ctx), "K": K, "M": M, "group": g.label}
             for g in groups for K, M in zip(g.K, g.M)]
    res = _sweep(ctx, trial, cells, f"{name} sweep", info, "trials", version=SWEEP_VERSION,
                 n_replicates=reps, base_seed=ctx.seed_for(name, "sweep"))
    for g in groups:
        sub = res.filter(group=g.label)
        M = sub.column("M")
        E = sub.column("err")
        g.errors = {int(m): E[M == m].tolist() for m in g.M}
        g.refits = int(np.sum(sub.column("refits")))
        g.fit = fit_slope(M, E, n_boot=1000, rng=ctx.seed_for("boot", g.label))
        if trial_extra.get("known_A"):
            Ek = sub.column("err_known")
            g.errors_known = {int(m): Ek[M == m].tolist() for m in g.M}
            g.shift_fit = fit_slope(M, E / Ek, n_boot=0)
    return time.perf_counter() - t0


def _run_groups_fixed_M(ctx: CheckContext, configs: list[dict], K: int, M: int, reps: int,
                        name: str, info: dict | None = None) -> tuple[list[list[float]], int]:
    """Sweep of several configurations at one ``(K, M)``; the errors per configuration (A6)."""
    cells = [{**c, "restarts": _restarts(size_of(ctx)), "max_iter": 50, "n_pairs": 2**16, "ridge": RIDGE_D,
              **_device_extra(ctx), "K": K, "M": M, "group": f"cfg{i}"}
             for i, c in enumerate(configs)]
    res = _sweep(ctx, trial, cells, f"{name} sweep", info, "trials", version=SWEEP_VERSION,
                 n_replicates=reps, base_seed=ctx.seed_for(name, "sweep"))
    errs = [res.filter(group=f"cfg{i}").column("err").tolist() for i in range(len(configs))]
    return errs, int(np.sum(res.column("refits")))


def cache_text(info: dict) -> str:
    """Notes phrase: how many sweep pairs were computed now and how many came from the cache."""
    parts = [f"{k}: {v['n_computed']} computed, {v['n_cached']} from the cache" for k, v in info.items()]
    return "Sweep pairs (" + "; ".join(parts) + ")" if parts else ""


def _plot_groups(groups: list[Group], title: str):
    """One log-log panel per group: replicates (dots), OLS fit (solid), a-priori prediction (dashed),
    theory slope through the fit at the geometric centre (dotted)."""
    plt = _plt()
    n = len(groups)
    fig, axes = plt.subplots(1, n, figsize=(3.2 * n + 0.6, 3.6), squeeze=False)
    for i, (g, ax) in enumerate(zip(groups, axes[0])):
        col = f"C{i}"
        Ms = np.array(g.M, dtype=float)
        for m in g.M:
            ax.scatter([m] * len(g.errors[m]), g.errors[m], s=9, alpha=0.45, color=col)
        se, _ = g.fit.se_replicate
        ax.plot(Ms, np.exp(g.fit.intercept) * Ms**g.fit.slope, "-", color=col,
                label=f"fit {g.fit.slope:.3f} +- {se:.3f} (replicate SE)")
        ax.plot(Ms, g.predicted(), "k--", alpha=0.8, label=f"a-priori prediction {g.predicted_slope():.3f}")
        mc = math.exp(np.mean(np.log(Ms)))
        ec = math.exp(g.fit.intercept) * mc**g.fit.slope
        th = g.theory_slope
        ax.plot(Ms, ec * (Ms / mc) ** th, "r:", label=f"theory {th:.3f}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("M (samples)")
        ax.set_title(g.label, fontsize=9)
        ax.legend(fontsize=6)
    axes[0][0].set_ylabel("||g_hat - g*||^2 in L2(rho)")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def _plt():
    """pyplot, imported where figures are drawn (:func:`verify.figures.pyplot`; no backend switch)."""
    from verify.figures import pyplot

    return pyplot()


def _design_text(g: Group) -> str:
    c = g.config
    return (f"{g.label}: d={c['d']}, N={c['N']}, r={c['r']}, P={c['P']} (beta={c['P'] - 1}, s={c['P'] - 2}), "
            f"n_knots={c['n_knots']}, sigma={c['sigma']:.4g}, K={g.K}, M={g.M}")


def _slope_vs_theory(g: Group, headline: bool = False) -> Comparison:
    """Equivalence of the measured slope with ``-2b/(2b+1)`` (margin :data:`SLOPE_MARGIN`, replicate SE)."""
    se, df = g.fit.se_replicate
    return Comparison.equivalence(
        f"{g.label}: slope vs theory -2b/(2b+1)", round(g.theory_slope, 4), round(g.fit.slope, 4), se,
        SLOPE_MARGIN, df=df, headline=headline,
        rule=f"replicate-level SE ({sum(len(v) for v in g.errors.values())} fits); the design's finite-M "
             f"prediction is {g.predicted_slope():.4f}")


def _slope_vs_design(g: Group) -> Comparison:
    """Consistency of the measured slope with the design's a-priori finite-M prediction (the error model)."""
    se, df = g.fit.se_replicate
    return Comparison.consistency(
        f"{g.label}: slope vs finite-M prediction of the design", round(g.predicted_slope(), 4),
        round(g.fit.slope, 4), se, df=df,
        rule="a-priori error model B(K) + V n/(n-p) / M of numerics' least-squares asymptotics, same OLS weights")


def _a2_design(ctx: CheckContext) -> tuple[list[Group], int]:
    size = size_of(ctx)
    groups = []
    specs = {  # P: (n_knots, K levels, M_lo)
        "smoke": {3: (6, [8, 10, 12], 60), 8: (8, [10, 11, 12], 80)},
        # P = 3: K_M = 5.77 M^(1/5) from M = 500 (the paper grid's constant; the former quick grid, 10.2 M^(1/5)
        # from M = 300, held 3x fewer pairs per interval at its smallest M, where the near-empty end intervals
        # made the error exceed the a-priori prediction and steepened the slope)
        # P = 8: from M = 997 (K = 13); at M = 300 (K = 12) the log error had 4x the replicate SD of the other
        # levels (0.31 vs 0.06-0.09 over 96 replicates) and its mean fell 1.2 per log M, steepening the slope
        # from -0.918 (levels 997..55736) to -0.964 (with 300), against the design's -0.940
        "quick": {3: (6, [20, 23, 26, 30, 35, 40], 500), 8: (8, [13, 14, 15, 16, 17], 997)},
        "paper": {3: (6, [32, 36, 40, 46, 54, 64, 76], 1400), 8: (8, [12, 13, 14, 15, 16, 17], 550)},
    }[size]
    for P, (nk, Ks, M_lo) in specs.items():
        beta = P - 1
        Ms = k_levels_to_M(Ks, M_lo, beta)
        cfg = {"d": 1, "N": 5, "r": 1, "P": P, "n_knots": nk, "truth_seed": ctx.design_seed("truth", P),
               "law": "uniform"}
        ic = len(Ks) // 2
        cfg["sigma"] = balanced_sigma(cfg, Ks[ic], Ms[ic], P - 2, ctx.design_seed("sigma", P), **_pred_sizes(size))
        groups.append(Group(label=f"P={P}", config=cfg, K=Ks, M=Ms))
    return groups, REPLICATES[size] * (A2_REPLICATE_FACTOR if size != "smoke" else 1)


#: A2 runs this many times the replicates of A3/A4 (d = 1 fits are cheap; the equivalence test needs the power)
A2_REPLICATE_FACTOR = 3


@check("A2")
def check_a2(ctx: CheckContext) -> Outcome:
    """Convergence slopes for B-spline truths of degree P=3 and P=8 (d = 1: the non-parametric part)."""
    groups, reps = _a2_design(ctx)
    extra = {"restarts": 1, "max_iter": 50, "n_pairs": 2**16, "ridge": 0.0}
    if size_of(ctx) == "smoke":  # tiny M: some intervals are nearly empty, keep the estimator's tiny ridge
        extra.update(ridge=1e-10, n_pairs=2**13)
    info: dict = {}
    runtime = _run_groups(ctx, groups, reps, "A2", extra, info)
    paper = {"P=3": (-0.81, 0.01), "P=8": (-0.899, 0.034)}
    comps = []
    lines = []
    for g in groups:
        comps += [_slope_vs_theory(g, headline=g.label == "P=3"), _slope_vs_design(g)]
        f = g.fit
        ps, pg = paper[g.label]
        se, df = f.se_replicate
        lines.append(f"{g.label}: slope {f.slope:.4f} +- {se:.4f} (replicate SE, df {df:.0f}; per-level fit SE "
                     f"{f.se:.4f}, bootstrap [{f.ci_boot[0]:.4f}, {f.ci_boot[1]:.4f}], lack-of-fit p="
                     f"{f.lack_of_fit_p if f.lack_of_fit_p is None else round(f.lack_of_fit_p, 3)}); "
                     f"|slope-theory| = {abs(f.slope - g.theory_slope):.4f} vs the paper's gap {pg} (paper slope {ps}, "
                     f"theory {g.theory_slope:.4f}); finite-M prediction {g.predicted_slope():.4f}")
    fig = _plot_groups(groups, "A2: error vs M, d=1")
    path = ctx.save_figure(fig, "slopes_P")
    notes = (
        "Design (project's choice, from theory): " + "; ".join(_design_text(g) for g in groups) + ". "
        "The truth and sigma are part of the design (design seeds: the same for every base seed; a base seed "
        "redraws the data only). "
        "K_M = K_lo (M/M_lo)^(1/(2b+1)) exactly (integer K levels chosen first, M_K rounded), no log factor; "
        "estimator degree s = P-2 (bias ~ K^-2b with b = P-1), range = central 99.9% quantile range of u, "
        "ridge 0, d = 1 so the matrix part is trivial (only the scale, fixed by normalisation); "
        "sigma balanced a priori (predicted bias = predicted variance at the middle K), rounded to 4 digits. "
        "Finite-M prediction = OLS slope (same per-M weighting) of B_F(K) + V(K) n/(n-p) / M over the design, "
        "B_F = forward-metric projection bias of the truth on the estimator class, V = sigma^2 tr(G Sigma^-1)/N "
        "(least-squares asymptotics; both by Monte Carlo on a population sample, before any fit). "
        f"Verdict: for both P, the slope is equivalent to theory within {SLOPE_MARGIN} (TOST, replicate-level SE) "
        "and consistent with the design's prediction (two-sided test); Holm within the check. "
        + " | ".join(lines) + ". " + _ratio_text(groups) + f". Low-rank condition (r d = 1): satisfied for all M. "
        f"Runtime {runtime:.1f}s, {reps} replicates per M. " + cache_text(info) + "."
    )
    data = {g.label: g.to_data() for g in groups}
    data["sweep"] = info
    return Outcome(comparisons=comps, notes=notes, figures=[p for p in [path] if p], data=data)


#: replicates per M level of the rate sweeps (A3, A4; A6 per configuration) by size
REPLICATES = {"smoke": 2, "quick": 4, "paper": 20}

#: K levels and M_lo of the P = 3 (beta = 2) sweeps: M_K = M_lo (K / K_lo)^5 (see :func:`k_levels_to_M`)
RATE_LEVELS = {
    ("A3", "smoke"): ([8, 10, 12], 60),
    # quick: M 500 .. 16000 (1.5 decades), K_M = 5.77 M^(1/5), the paper grid's constant (see A2's design: the
    # former 10.2 M^(1/5) from M = 300 left the end intervals nearly empty at the smallest M)
    ("A3", "quick"): ([20, 23, 26, 30, 35, 40], 500),
    # paper: M 500 .. 102556 (2.3 decades), 7 geometric levels (ratio ~2.4), K_M = 5.77 M^(1/5). The cost of
    # a d > 1 trial grows with M (and with p = 2 K: K = 93 at M = 1e5, the quick constant, costs 1.7-2.3x
    # K = 58), so the top level dominates; the bias is in its K^-4 regime from K = 12 on (measured, d = 1,
    # local slopes -3.90..-4.13 for K = 12..93), so the smaller constant keeps the design's asymptotics.
    ("A3", "paper"): ([20, 24, 28, 33, 40, 48, 58], 500),
    ("A4", "smoke"): ([8, 10, 12], 60),
    # quick: the paper grid's constant and start (M 500 .. 9448, 5 levels). The former quick grid started at M = 150
    # (K_M = 5.82 M^(1/5)); over 30 seeds its N = 3 slope difference varied 1.34x more than its replicate SE said
    # (heavy-tailed fits with 6 pairs per sample at M = 150..460) and N = 10 vs N = 5 differed by +0.049 +- 0.007
    # where the a-priori model predicts +0.005: pre-asymptotic levels
    ("A4", "quick"): ([20, 23, 27, 31, 36], 500),
    # paper: M 500 .. 20421 (1.6 decades), 6 levels, K_M = 5.77 M^(1/5) (A3's paper constant; the quick A4
    # one is 5.82). N = 10 costs ~3x N = 5 per trial (N (N-1) pairs per sample): the range stops at 2e4.
    # It starts at 500, not 150: at M <= 270 (N = 5, d = 2) the first fit stalls often (6 of 16 replicates
    # needed a refit, vs 2 of 48 at M = 500..20421), i.e. the smallest levels are the most pre-asymptotic.
    ("A4", "paper"): ([20, 23, 27, 31, 36, 42], 500),
}


def _rate_levels(size: str, check_id: str = "A3") -> tuple[list[int], int]:
    """K levels and M_lo of the P = 3 (beta = 2) sweeps of A3/A4 (see :data:`RATE_LEVELS`)."""
    Ks, M_lo = RATE_LEVELS[("A4" if check_id == "A4" else "A3", size)]
    return list(Ks), M_lo


def _restarts(size: str) -> int:
    """Starts of the estimator for d > 1: the two consistent (moment) starts (smoke: one).

    A single moment start occasionally stalls (objective 100x larger); two starts plus the stall protocol
    of :func:`trial` (refit with 4 more starts when the objective exceeds ``2 sigma^2``) handle that. The
    paper profile used 3 starts until measured otherwise (:data:`STARTS_NOTE`): the third (random) start
    runs only when the two moment starts disagree, which at d = 2 (N = 3, 10) is every fit, at no benefit.
    """
    return {"smoke": 1, "quick": 2, "paper": 2}[size]


#: why the paper grids of A3/A4 look as they do (stated in their notes)
PAPER_GRID_NOTE = (
    "Paper grid (sized for the 30-minute paper profile on 2 cores): K_M = 5.77 M^(1/5): a d > 1 fit at M = 1e5 "
    "costs 1.7-2.3x more with K = 93 than with K = 58, and the bias of the "
    "truth is in its K^-4 regime from K = 12 on (measured local slopes -3.90..-4.13 for K = 12..93), so the "
    "smaller constant keeps the asymptotics; with fewer basis functions the parametric share V_par / V of the "
    "error is larger for d > 1 (the finite-M prediction includes it). "
)

#: measured basis of the paper profile's 2 starts (stated in the notes of A3, A4, A6)
STARTS_NOTE = (
    "Estimator starts: 2 (the two moment starts; paper used 3 before). Measured with 3 starts on 15 cells x 8 "
    "replicates (d = 5, 30 with N = 5; d = 2 with (N, r) = (10, 1), (5, 2), (3, 1); M = 500, 3068, 16000): the "
    "third (random) start ran in 75/120 fits (every d = 2 fit with N = 3 or 10, d = 30 at M = 500) and gave a "
    "lower objective in 1/120 (d = 2, N = 10, M = 500: objective -0.03%, L2 error 4.54e-6 vs 4.36e-6 with 2 "
    "starts); stalls (objective > 2 sigma^2) with the 2 moment starts alone: 0/120. At M = 20421 (d = 2) the "
    "third start costs +34% (N = 10) and +37% (N = 3) for bitwise identical fits."
)


def _base_p3(ctx: CheckContext, check_id: str = "A3", N: int = 5) -> dict:
    cfg = {"d": 1, "N": N, "r": 1, "P": 3, "n_knots": 6, "truth_seed": ctx.design_seed("truth", 3), "law": "uniform"}
    Ks, M_lo = _rate_levels(size_of(ctx), check_id)
    Ms = k_levels_to_M(Ks, M_lo, 2)
    ic = len(Ks) // 2
    cfg["sigma"] = balanced_sigma(cfg, Ks[ic], Ms[ic], 1, ctx.design_seed("sigma", 3), **_pred_sizes(size_of(ctx)))
    return cfg


def _slope_difference(g: Group, ref: Group, headline: bool = False, rule: str = "") -> Comparison:
    """Equivalence of two independent slopes (margin :data:`SLOPE_MARGIN`, Welch on replicate-level SEs)."""
    c = compare_slopes(g.fit, ref.fit, se="rep")
    return Comparison.equivalence(f"slope({g.label}) - slope({ref.label})", 0.0, round(c.diff, 4), c.se,
                                  SLOPE_MARGIN, df=c.df, headline=headline, rule=rule)


def _inside_share(g: Group) -> tuple[int, int]:
    """M levels of the group at which the low-rank condition (constant :data:`LOW_RANK_CONSTANT`) holds."""
    c = g.config
    ins = [low_rank_status(c["r"], c["d"], m, c["P"] - 1)["inside"] for m in g.M]
    return sum(ins), len(ins)


def _ratio_text(groups: list[Group]) -> str:
    """Measured mean error / a-priori prediction at each M (>1 at small M: pre-asymptotic excess)."""
    parts = []
    for g in groups:
        r = [float(np.mean(g.errors[m])) / p for m, p in zip(g.M, g.predicted())]
        parts.append(f"{g.label}: " + ", ".join(f"{x:.2f}" for x in r))
    refits = ", ".join(f"{g.label}: {g.refits}" for g in groups)
    return "measured/predicted mean error along M: " + "; ".join(parts) + f" (refitted stalled fits: {refits})"


def _condition_text(groups: list[Group]) -> str:
    parts = []
    for g in groups:
        c = g.config
        k, n = _inside_share(g)
        share = [q["V_par"] / m / p for q, m, p in zip(g.pred, g.M, g.predicted())]
        parts.append(f"{g.label}: r d = {c['r'] * c['d']}, low-rank condition (constant {LOW_RANK_CONSTANT}) holds at "
                     f"{k}/{n} M levels; predicted parametric share of the error "
                     f"{min(share):.0%}..{max(share):.0%}; slope without the parametric term "
                     f"{g.predicted_slope(False):.3f}, with it {g.predicted_slope():.3f}")
    return "; ".join(parts)


#: A3 part (a): noise level relative to the balanced one (the parametric term, ~ sigma^2, is 100x smaller)
A3_LOW_NOISE = 0.1


@check("A3")
def check_a3(ctx: CheckContext) -> Outcome:
    """Dimension-free slopes, in two parts (both required).

    (a) Where the paper's claim applies: at a tenth of the balanced noise level (the parametric term
    ``V_par / M ~ sigma^2`` is then negligible by the a-priori prediction) the slopes for several ``d`` are
    parallel: each difference with ``d = 1`` is equivalent to 0 within the margin.
    (b) Outside the low-rank condition at the balanced noise level, estimating ``A`` changes the slope by the
    predicted parametric shift: the slope of ``err / err_known`` (estimated-A fit over the A*-known fit on the
    same data) is equivalent to ``predicted_slope(with V_par) - predicted_slope(without)``.
    """
    size = size_of(ctx)
    base = _base_p3(ctx, "A3")
    Ks, M_lo = _rate_levels(size, "A3")
    Ms = k_levels_to_M(Ks, M_lo, 2)
    ds = {"smoke": [1, 2], "quick": [1, 5, 10], "paper": [1, 5, 30]}[size]
    low = {**base, "sigma": round_design(base["sigma"] * A3_LOW_NOISE)}
    groups_a = [Group(label=f"d={d}, sigma/10", config={**low, "d": d}, K=Ks, M=Ms) for d in ds]
    groups_b = [Group(label=f"d={d}, balanced", config={**base, "d": d}, K=Ks, M=Ms) for d in ds[1:]]
    reps = REPLICATES[size]
    info: dict = {}
    runtime = _run_groups(ctx, groups_a + groups_b, reps, "A3",
                          {"restarts": _restarts(size), "max_iter": 50, "n_pairs": 2**16, "ridge": RIDGE_D,
                           "known_A": True}, info)
    comps = []
    for k, g in enumerate(groups_a[1:]):
        comps.append(_slope_difference(g, groups_a[0], headline=k == len(groups_a) - 2,
                                       rule="part (a): parametric term negligible (predicted share "
                                            f"{max(q['V_par'] / m / p for q, m, p in zip(g.pred, g.M, g.predicted())):.1%} at most)"))
    outside_b = []
    for g in groups_b:
        k, n = _inside_share(g)
        pred_shift = g.predicted_slope(True) - g.predicted_slope(False)
        se, df = g.shift_fit.se_replicate
        cmp_ = Comparison.equivalence(
            f"{g.label}: slope shift from estimating A (estimated-A minus A*-known, same data)",
            round(pred_shift, 4), round(g.shift_fit.slope, 4), se, SLOPE_MARGIN, df=df,
            rule=f"part (b): low-rank condition holds at {k}/{n} M levels; predicted shift = a-priori slope with "
                 "V_par minus without; paired replicate-level SE")
        if 2 * k < n:  # outside the condition at most levels: the claim (b) applies
            comps.append(cmp_)
        else:
            outside_b.append(f"{cmp_.name}: {cmp_.measured} +- {se:.3g} vs {cmp_.predicted} (inside the condition at "
                             f"{k}/{n} levels: reported, not judged)")
    fig = _plot_groups(groups_a + groups_b, "A3: error vs M (P=3): (a) sigma/10 for several d, (b) balanced sigma")
    path = ctx.save_figure(fig, "slopes_d")
    all_g = groups_a + groups_b
    notes = (
        f"d in {ds}" + (" (quick profile: d=10 instead of 30 for time)" if size == "quick" else "") + ". "
        + "N = 5. Design as A2 (P=3, s=1, K_M = K_lo (M/M_lo)^(1/5) exactly, K levels " + str(Ks) + ", M levels "
        + str(Ms) + f", sigma balanced for d=1 ({base['sigma']:.4g}) and kept for all d; part (a) at sigma x "
        f"{A3_LOW_NOISE} = {low['sigma']:.4g}; rank-1 A* estimated by the project's estimator with "
        f"{_restarts(size)} starts, relative ridge {RIDGE_D}; every replicate also fitted with A = A* on the same "
        "data (same replicate seeds at both noise levels: cell seeds hash no float)). "
        + (PAPER_GRID_NOTE + STARTS_NOTE + " " if size == "paper" else "")
        + f"Verdict: (a) every slope difference with d=1 at sigma/10 equivalent to 0 within {SLOPE_MARGIN}; (b) for "
        "every d outside the low-rank condition at the balanced sigma, the paired slope shift caused by estimating A "
        f"equivalent to the predicted parametric shift within {SLOPE_MARGIN}; Holm within the check. "
        + " | ".join(f"{g.label}: slope {g.fit.slope:.4f} +- {g.fit.se_replicate[0]:.4f}" for g in all_g)
        + " | " + " | ".join(f"{g.label}: A*-known slope {g.fit.slope - g.shift_fit.slope:.4f}, shift "
                             f"{g.shift_fit.slope:+.4f} +- {g.shift_fit.se_replicate[0]:.4f} (predicted "
                             f"{g.predicted_slope() - g.predicted_slope(False):+.4f})" for g in all_g if g.shift_fit)
        + ". " + ("Not judged: " + "; ".join(outside_b) + ". " if outside_b else "")
        + "Parametric term: " + _condition_text(all_g) + ". " + _ratio_text(all_g)
        + f". Runtime {runtime:.1f}s, {reps} replicates per M. " + cache_text(info) + "."
    )
    data = {g.label: g.to_data() for g in all_g}
    data["sweep"] = info
    return Outcome(comparisons=comps, notes=notes, figures=[p for p in [path] if p], data=data)


#: A4 paper profile: this many times the replicates of A3. Power of the TOST (margin 0.03, 5%) for a slope
#: difference of 0.005: 74% at the SE of 20 replicates per level (0.010-0.012, paper seeds 0 and 1 on the
#: pairs-matched grid), 94% at twice as many (SE / sqrt 2); the quick profile cannot reach it (SE 0.03-0.04 with 4)
A4_PAPER_REPLICATE_FACTOR = 2

#: A4's reference number of tokens: its M levels are the grid's; groups with fewer tokens get as many pairs
A4_REFERENCE_N = 5


def pairs_matched_M(M_levels: list[int], N: int, N_ref: int = A4_REFERENCE_N) -> list[int]:
    """M levels holding as many token pairs ``M N (N - 1)`` as ``N_ref`` tokens at ``M_levels`` (rounded up).

    The pre-asymptotic excess of the estimator's error (near-empty end intervals, a noisy range quantile)
    is governed by the number of pairs, not of samples. On one common M grid (paper profile, seeds 0 and 1)
    the measured error of N = 3 (6 pairs per sample) was 1.11-1.23x its a-priori prediction at M = 500 and
    0.97-0.98x at M = 20421, which steepened its slope by 0.03-0.05 against N = 5 (20 pairs); N = 5 itself was
    1.01-1.06x at M = 500, N = 10 (90 pairs) 1.00-1.01x. At equal pairs the ratios agree level by level, so
    groups compared on equal pairs share the finite-sample excess and their slope difference isolates the
    claim (the rate in M does not depend on N). Same K levels for every group: K_M stays an exact power of M.
    """
    f = N_ref * (N_ref - 1) / (N * (N - 1))
    return [int(math.ceil(m * f - 1e-9)) for m in M_levels]


@check("A4")
def check_a4(ctx: CheckContext) -> Outcome:
    """The slope does not depend on N or r, tested between groups inside the low-rank condition (d = 2).

    A group counts as inside when :func:`theory.low_rank_condition` (constant :data:`LOW_RANK_CONSTANT`,
    shared with A3 and A6) holds at at least half of its ``M`` levels.  Each slope difference with the
    reference ``(N=5, r=1)`` between two groups inside is an equivalence test (margin :data:`SLOPE_MARGIN`,
    Welch on replicate-level SEs); the others are reported, not judged.
    """
    from theory.minimax import min_samples

    size = size_of(ctx)
    base = {**_base_p3(ctx, "A4"), "d": 2}
    Ks, M_lo = _rate_levels(size, "A4")
    Ms = k_levels_to_M(Ks, M_lo, 2)
    combos = [(3, 1), (5, 1)] if size == "smoke" else [(3, 1), (5, 1), (10, 1), (5, 2)]
    groups = [Group(label=f"N={N},r={r}", config={**base, "N": N, "r": r}, K=Ks, M=pairs_matched_M(Ms, N))
              for N, r in combos]
    reps = REPLICATES[size] * (A4_PAPER_REPLICATE_FACTOR if size == "paper" else 1)
    sweep_info: dict = {}
    runtime = _run_groups(ctx, groups, reps, "A4", {"restarts": _restarts(size), "max_iter": 50, "n_pairs": 2**16,
                                                     "ridge": RIDGE_D}, sweep_info)
    ref = groups[1]
    share = {g.label: _inside_share(g) for g in groups}
    is_in = {lab: 2 * k >= n for lab, (k, n) in share.items()}
    comps, outside = [], []
    for g in groups:
        if g is ref:
            continue
        cmp_ = _slope_difference(g, ref, headline=not comps)
        (comps if is_in[g.label] and is_in[ref.label] else outside).append(cmp_)
    need = {g.label: int(min_samples(g.config["r"], g.config["d"], 2)) for g in groups}
    status = "; ".join(f"{g.label} (r d = {g.config['r'] * g.config['d']}): inside at {share[g.label][0]}/"
                       f"{share[g.label][1]} M levels ({'INSIDE' if is_in[g.label] else 'OUTSIDE'}; "
                       f"condition holds for M >= {need[g.label]})" for g in groups)
    out_text = " | ".join(f"{c.name}: {c.measured} +- {c.uncertainty:.3g}" for c in outside)
    fig = _plot_groups(groups, "A4: error vs M for several N and r (P=3, d=2)")
    path = ctx.save_figure(fig, "slopes_N_r")
    notes = (
        f"(N, r) in {combos}, d = 2, P = 3, K levels {Ks}, M levels {Ms} (K_M exact power of M) for N = "
        f"{A4_REFERENCE_N}; " + "; ".join(f"{g.label}: M levels {g.M}" for g in groups if g.M != Ms)
        + f" (equal numbers of token pairs M N (N-1) in every group: the pre-asymptotic excess of the error is "
        "governed by pairs; on one common M grid N = 3 was 1.1-1.2x its a-priori prediction at the smallest M and "
        "steepened its slope by 0.03-0.05), sigma "
        f"{base['sigma']:.4g} (balanced for d=1, N=5), {_restarts(size)} estimator starts, relative ridge {RIDGE_D}. "
        + (PAPER_GRID_NOTE + "The A4 paper range stops at M = 2e4 (an N = 10 trial costs ~3x an N = 5 one: "
           "N (N-1) pairs per sample) and starts at 500 (at M <= 270 the first fit stalls often: 6 of 16 N = 5 "
           "replicates needed a refit, vs 2 of 48 at M = 500..20421 in a 2-replicate run). " + STARTS_NOTE + " "
           if size == "paper" else "") +
        f"Verdict (the claim is independence of N and r inside the low-rank condition): every slope difference "
        f"with (N=5, r=1) between two groups inside the condition (constant {LOW_RANK_CONSTANT}, at >= half of the "
        f"M levels) is equivalent to 0 within {SLOPE_MARGIN} (TOST; FAIL only when it is significantly beyond the "
        "margin). Condition per group (computed): " + status + ". "
        + ("Comparisons with a group OUTSIDE the condition, reported, not part of the verdict: " + out_text + ". "
           if outside else "")
        + ("Independence of r is NOT tested inside the condition in this profile (no group with r > 1 is inside). "
           if not any(is_in[g.label] for g in groups if g.config["r"] > 1) else "")
        + " | ".join(f"{g.label}: slope {g.fit.slope:.4f} +- {g.fit.se_replicate[0]:.4f} (a-priori "
                     f"{g.predicted_slope():.4f})" for g in groups)
        + ". " + _condition_text(groups) + ". " + _ratio_text(groups) + f". Runtime {runtime:.1f}s, {reps} replicates "
        "per M. " + cache_text(sweep_info) + "."
    )
    data = {g.label: g.to_data() for g in groups}
    data["sweep"] = sweep_info
    data["inside_levels"] = {lab: list(v) for lab, v in share.items()}
    if not comps:  # no pair of groups inside the condition (M levels too small): nothing of the claim is tested
        return Outcome(comparisons=outside, notes="NO pair of groups inside the low-rank condition: the claim is "
                       "not tested (INFO). " + notes, figures=[p for p in [path] if p], data=data, informational=True)
    return Outcome(comparisons=comps, notes=notes, figures=[p for p in [path] if p], data=data)
