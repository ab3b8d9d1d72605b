"""Shared machinery of the paper-A rate claims (A2-A4 in :mod:`.paper_a_rates`, A6): trial, predictions, sweeps.

Experimental design (stated in every check's notes; the measurements behind it: docs/design_notes.md)
-----------------------------------------------------------------------------------------------------
- Truth: :class:`numerics.IPSModel` B-spline of degree ``P`` (``beta = P - 1``), support ``[-1, 1]`` so that
  ``phi*`` vanishes, ``C^{P-1}``, beyond the ``0.999`` quantile of ``|u|``; few interior knots (the bias is in its
  asymptotic regime ``~ K^{-2 beta}``).
- Estimator: :class:`numerics.PairwiseInteractionEstimator` with ``s = P - 2 = beta - 1`` (the smallest the paper
  allows: bias ``~ K^{-2 beta}``) on ``K`` equal intervals of the central ``1 - 2 q`` quantile range of the observed
  ``u`` (``q = RANGE_Q = 5e-4``: a range that does not drift with ``M``); ``ridge = 0`` for ``d = 1`` (A2: biases
  down to 1e-20 must not be shrunk), a relative ridge :data:`RIDGE_D` for ``d > 1`` (the two end intervals hold few
  pairs and, unregularised, occasionally give errors 100-2000x the typical one; ``phi* ~ 0`` there);
  :data:`ESTIMATOR_STARTS` starts for ``d > 1``.
- ``K_M``: integer ``K`` levels first, ``M_K = round(M_lo (K / K_lo)^(2 beta + 1))``, so that
  ``K_M = K_lo (M / M_lo)^(1/(2 beta + 1))`` exactly: no log factor, no integer steps (SPEC's
  ``(M / log M)^(1/(2 beta+1))`` would add a finite-``M`` slope offset ``~ (2b/(2b+1)) / log M``).
- ``sigma``: the predicted variance equals the predicted bias at the geometric centre of the ``M`` range
  (:func:`balanced_sigma`).

The a-priori error model ``B(K) + (V_np + V_par) / M`` lives in :mod:`numerics.error_model`; the checks evaluate it
along their designs (:func:`._paper_a_records.group_prediction`, with the finite-sample factor ``n / (n - p)``).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

import numerics.ips as _ips
from numerics import InteractionEstimator, error_model
from numerics.allocation import allocate_replicates
from numerics.error_model import RANGE_Q, predict_error, predict_error_grid, predict_log_errors
from numerics.estimator import PairwiseInteractionEstimator
from numerics.ips import IPSModel
from numerics.slopes import fit_slope
from numerics.sweep import Workers, cell_seed, run_sweep, simulation_modules, source_version
from numerics.threads import torch_threads
from theory import RateSetting
from verify.context import CheckContext

from ._paper_a_records import (LIMIT_WINDOWS, GroupDesign, GroupEvidence, GroupMeasurement, RateMeasurement,
                              RatePrediction, SweepCost, group_prediction, limit_window)

SUPPORT = 1.0
RIDGE_D = 1e-4  # relative ridge for d > 1 sweeps: tames near-empty end intervals (phi* ~ 0 there)


def model_for(cell: dict) -> IPSModel:
    """The ground truth of a sweep cell, built once per configuration and process (never modified)."""
    return _model(int(cell["d"]), int(cell["N"]), int(cell["r"]), int(cell["P"]), str(cell.get("law", "uniform")),
                  float(cell["sigma"]), int(cell["n_knots"]), int(cell["truth_seed"]))


@functools.lru_cache(maxsize=64)
def _model(d: int, N: int, r: int, P: int, law: str, sigma: float, n_knots: int, truth_seed: int) -> IPSModel:
    return IPSModel(d=d, N=N, rank=r, truth="bspline", degree=P, token_law=law, noise=sigma, n_knots=n_knots,
                    support=SUPPORT, seed=truth_seed)


def trial(cell: dict, seed: int) -> dict:
    """One replicate: sample ``M`` samples, fit, Monte Carlo L2(rho) error (top-level: picklable).
    ``cell["known_A"]``: the same data are also fitted with the matrix fixed at ``A*`` (``err_known``,
    ``err_known_se``, ``objective_known``: A3's paired comparison). Stall protocol for ``d > 1`` (the ERM is the
    global minimiser, where the mean squared residual is ``~ sigma^2``): a fit whose objective exceeds
    ``max(2 sigma^2, 1.5 objective_known)`` is refitted with 4 more starts and another seed, at most twice, and the
    refits are counted; refits run every start, as a stalled fit is one whose moment starts agree on a wrong basin.
    ``cell["device"]`` (default ``"cpu"``): the torch device of the fit (data, seeds and error stay on the CPU).
    ``cell["estimator"]``: another estimator, ``"module:Class"``, fitted once (:func:`_other_estimator_trial`)."""
    if cell.get("estimator") is not None:
        return _other_estimator_trial(cell, seed)
    model = model_for(cell)
    X, Y = model.sample(int(cell["M"]), np.random.default_rng(seed))
    n_pairs = int(cell.get("n_pairs", 2**16))

    def fit(restarts: int, refits: int, **options) -> PairwiseInteractionEstimator:
        est = PairwiseInteractionEstimator(
            rank=int(cell["r"]), degree=int(cell["P"]) - 2, n_intervals=int(cell["K"]), restarts=restarts,
            max_iter=int(cell.get("max_iter", 100)), ridge=float(cell.get("ridge", 1e-12)), range_quantile=RANGE_Q,
            device=str(cell.get("device", "cpu")), random_state=int((seed + 7919 * refits) % (2**31)),
            adaptive_restarts=refits == 0)
        return est.fit(X, Y, **options)

    extra: dict = {}
    threshold = 2 * float(cell["sigma"]) ** 2
    if cell.get("known_A") and int(cell["d"]) > 1:
        # the same data with the matrix fixed at A* (phi only): the parametric term removed; A* lies in the
        # estimator's class, so the full fit's global minimum is at most this objective (the stall reference)
        known = fit(1, 0, A=model.A_star)
        ek, ek_se = known.l2_error(model, n_pairs=n_pairs, rng=int(seed) + 1)
        extra = {"err_known": ek, "err_known_se": ek_se, "objective_known": float(known.objective_)}
        threshold = max(threshold, 1.5 * float(known.objective_))
    restarts, refits = int(cell.get("restarts", 1)), 0
    est = fit(restarts, refits)
    while int(cell["d"]) > 1 and est.objective_ > threshold and refits < 2:
        refits += 1
        restarts += 4
        est = fit(restarts, refits)
    err, err_se = est.l2_error(model, n_pairs=n_pairs, rng=int(seed) + 1)
    if cell.get("known_A") and int(cell["d"]) == 1:  # d = 1: the matrix is a scale, fixed by normalisation
        extra = {"err_known": err, "err_known_se": err_se, "objective_known": float(est.objective_)}
    return {"err": err, "err_se": err_se, "fit_time": float(est.fit_time_), "n_iter": int(est.n_iter_),
            "objective": float(est.objective_), "refits": refits, **extra}


def estimator_class(name: str) -> type:
    """The :class:`numerics.InteractionEstimator` subclass named ``"module:Class"``."""
    module, _, cls = str(name).partition(":")
    if not module or not cls:
        raise ValueError(f"estimator must be named 'module:Class', got {name!r}")
    obj = getattr(importlib.import_module(module), cls)
    if not (isinstance(obj, type) and issubclass(obj, InteractionEstimator)):
        raise TypeError(f"estimator {name!r} is not a numerics.InteractionEstimator subclass")
    return obj


def _other_estimator_trial(cell: dict, seed: int) -> dict:
    """:func:`trial` with the estimator ``cell["estimator"]``, built with ``rank``, ``degree``, ``n_intervals``,
    ``random_state`` and ``cell["estimator_params"]``: one fit (docs/architecture.md, "Adding an estimator")."""
    model = model_for(cell)
    X, Y = model.sample(int(cell["M"]), np.random.default_rng(seed))
    est = estimator_class(cell["estimator"])(rank=int(cell["r"]), degree=int(cell["P"]) - 2,
                                             n_intervals=int(cell["K"]), random_state=int(seed % (2**31)),
                                             **dict(cell.get("estimator_params") or {}))
    t0 = time.perf_counter()
    est.fit(X, Y)
    err, err_se = est.l2_error(model, n_pairs=int(cell.get("n_pairs", 2**16)), rng=int(seed) + 1)
    return {"err": err, "err_se": err_se, "fit_time": float(getattr(est, "fit_time_", time.perf_counter() - t0)),
            "n_iter": int(getattr(est, "n_iter_", 0)), "objective": float(getattr(est, "objective_", math.nan)),
            "refits": 0}


def k_levels_to_M(K_levels: list[int], M_lo: int, beta: float) -> list[int]:
    """``M_K = round(M_lo (K / K_lo)^(2 beta + 1))``: ``K_M`` exactly proportional to ``M^(1/(2b+1))``."""
    return [int(round(M_lo * (K / K_levels[0]) ** (2 * beta + 1))) for K in K_levels]


def balanced_sigma(model_kwargs: dict, K: int, M: float, s: int, seed: int, **sizes: int) -> float:
    """``sigma`` such that the predicted variance equals the predicted bias at ``(K, M)``, with torch on
    :data:`SIGMA_THREADS` threads: it enters every cell's seeds and cache key (thread counts change the last bits)."""
    m = model_for({**model_kwargs, "sigma": 1.0})
    with torch_threads(SIGMA_THREADS):
        q = predict_error(m, K, s, seed=seed, with_A=False, **sizes)
    return round_design(math.sqrt(q["B"] * M / q["V_np"]))


def round_design(x: float) -> float:
    """A computed design constant rounded to 4 significant digits: a number the notes can state and another machine
    reproduces (the pilot's last bits depend on the BLAS path)."""
    return float(f"{x:.3e}")


#: torch threads of :func:`balanced_sigma` (those of the reference runs: their seeds and cache entries stay valid)
SIGMA_THREADS = 2


def predict_task(cell: dict, seed: int) -> dict:
    """Sweep task: :func:`numerics.error_model.predict_error_grid` of one configuration (``sigma`` aside):
    ``{"preds": out}``, ``out[k][j]`` the prediction at ``cell["Ks"][k]`` and ``cell["sigmas"][j]``."""
    out = predict_error_grid(model_for({**cell, "sigma": 1.0}), [int(K) for K in cell["Ks"]], int(cell["s"]),
                             noises=[float(x) for x in cell["sigmas"]], n_pop=int(cell["n_pop"]),
                             n_pairs=int(cell["n_pairs"]), seed=int(seed), with_A=bool(cell.get("with_A", True)))
    return {"preds": out}


def finite_task(cell: dict, seed: int) -> dict:
    """Sweep task: :func:`predict_log_errors` of one ``(configuration, K, M)`` (``sigma`` aside) for every variant
    ``[with_A, sigma, se_target]`` of ``cell["variants"]``, on shared designs: ``{"finite": [one per variant]}``."""
    variants = [(bool(v[0]), float(v[1]), float(v[2])) for v in cell["variants"]]
    q = predict_log_errors(model_for({**cell, "sigma": 1.0}), int(cell["K"]), int(cell["P"]) - 2, int(cell["M"]),
                           variants, ridge=float(cell["ridge"]), seed=int(seed))
    return {"finite": q}


#: the constant of the low-rank condition used by A3, A4 and A6 (``theory.low_rank_condition``): the paper's
#: condition as printed, ``r d <= (M / log M)^(1/(2 beta + 1))``
LOW_RANK_CONSTANT = 1


# ============================================================================================ checks
#: cache versions of the trials, the a-priori predictions and the finite-M model: their code and constants
SWEEP_VERSION = source_version("a-rates", *simulation_modules("paper-a-estimator"), trial, model_for,
                               _model.__wrapped__, (SUPPORT, RANGE_Q))
PRED_VERSION = source_version("a-pred", _ips, error_model, model_for, _model.__wrapped__, predict_task,
                              (SUPPORT, RANGE_Q))
FINITE_VERSION = source_version("a-finite", _ips, error_model, model_for, _model.__wrapped__, finite_task,
                                (SUPPORT, RANGE_Q))


def prediction_sizes(size: str) -> dict:
    return {"n_pop": 1500, "n_pairs": 2**14} if size == "smoke" else {"n_pop": 16000, "n_pairs": 2**18}


def _device_extra(ctx: CheckContext) -> dict:
    """``{"device": ...}`` for a non-CPU device, else ``{}`` (CPU cells and their cache keys unchanged)."""
    return {} if ctx.device == "cpu" else {"device": ctx.device}


def _sweep(ctx: CheckContext, func, cells: list[dict], seeds, desc: str, info: dict, key: str, version: str):
    """One :func:`run_sweep` with the context's cache, executor and workers; counts go to ``info[key]``."""
    workers = Workers(n_jobs=ctx.n_jobs, executor=ctx.executor, scheduler=ctx.scheduler)
    with ctx.progress(desc, total=sum(len(seeds(i, c)) for i, c in enumerate(cells))) as bar:
        res = run_sweep(func, cells, seeds=seeds, version=version, workers=workers, progress=lambda rec: bar.advance(),
                        cache_dir=None if ctx.cache_dir is None else Path(ctx.cache_dir) / "paper_a_rates")
    info[key] = {"n_computed": res.n_computed, "n_cached": res.n_cached}
    return res


def predictions(ctx: CheckContext, items: list[tuple[dict, int, int]], name: str,
                info: dict) -> list[dict]:
    """A-priori :func:`predict_error` (``s = P - 2``, the profile's sizes) of ``(configuration, K, seed)`` items, one
    :func:`predict_task` per configuration (``sigma`` aside) and seed, with the numbers of one prediction per item."""
    sizes = prediction_sizes(ctx.profile)
    tasks: dict[tuple[str, int], tuple[list[int], list[float]]] = {}
    for cfg, K, sd in items:
        Ks, sigmas = tasks.setdefault((_without_sigma(cfg), int(sd)), ([], []))
        if int(K) not in Ks:
            Ks.append(int(K))
        if float(cfg["sigma"]) not in sigmas:
            sigmas.append(float(cfg["sigma"]))
    keys = list(tasks)
    cells = [{**json.loads(c), "Ks": tasks[(c, sd)][0], "sigmas": tasks[(c, sd)][1],
              "s": int(json.loads(c)["P"]) - 2, **sizes} for c, sd in keys]
    res = _sweep(ctx, predict_task, cells, lambda i, c: [keys[i][1]], f"{name} predictions", info, "predictions",
                 PRED_VERSION)
    found = {key: r["preds"] for key, r in zip(keys, res)}
    out = []
    for cfg, K, sd in items:
        key = (_without_sigma(cfg), int(sd))
        Ks, sigmas = tasks[key]
        out.append(found[key][Ks.index(int(K))][sigmas.index(float(cfg["sigma"]))])
    return out


def _without_sigma(cfg: Mapping) -> str:
    """A configuration's JSON key without its noise level (the truth and the designs do not depend on it)."""
    return json.dumps({k: v for k, v in cfg.items() if k != "sigma"}, sort_keys=True)


#: Monte Carlo SE of the finite-M model's ``E log err`` per level, by size (at most 200 designs a level); its slope
#: SE is ~0.3-0.4x this, adding 6-8 % to a measured slope's SE in quadrature
FINITE_SE = {"smoke": 0.02, "quick": 0.01, "paper": 0.005}


def predict_groups(ctx: CheckContext, groups: Sequence[GroupDesign], name: str, trial_extra: Mapping | None = None,
                   known: tuple[str, ...] = (), finite_se: float | None = None) -> RatePrediction:
    """The a-priori predictions of every ``(group, K)`` and of the windows beyond the design (design seeds), and the
    finite-M model of every ``(group, K, M)`` (base seed), as one :class:`GroupPrediction` per group.
    ``trial_extra`` gives the ``ridge``; groups labelled in ``known`` also get the model with ``A = A*`` known
    (A3's paired shift); ``finite_se`` overrides :data:`FINITE_SE`."""
    t0 = time.perf_counter()
    ridge = float((trial_extra or {}).get("ridge", 0.0))
    items, window_items, finite_items = [], [], []
    for g in groups:
        # common random numbers across K (a smooth predicted curve); the same for every base seed
        pseed = ctx.design_seed("predict", g.config["d"], g.config["N"], g.config["r"], g.config["P"])
        items += [(g.config, K, pseed) for K in g.K]
        # at sigma = 1 (shared by the groups that differ only in sigma; the variance scales with sigma^2)
        window_items += [({**g.config, "sigma": 1.0}, K, pseed) for k in LIMIT_WINDOWS for K in limit_window(g, k)[0]]
        # the finite-M model's designs follow the base seed: its Monte Carlo error is independent between seeds
        fseed = ctx.seed_for("finite", g.config["d"], g.config["N"], g.config["r"], g.config["P"])
        se_target = finite_se or g.finite_se or FINITE_SE[ctx.profile]
        for with_A in ([True, False] if g.label in known and g.config["d"] > 1 else [True]):
            finite_items += [(g.config, int(K), int(M), with_A, fseed, se_target) for K, M in zip(g.K, g.M)]
    info: dict = {}
    preds = iter(predictions(ctx, items + window_items, name, info))  # in the items' order: the groups', then windows
    apriori = {g.label: [next(preds) for _ in g.K] for g in groups}
    limit = {g.label: [[next(preds) for _ in limit_window(g, k)[0]] for k in LIMIT_WINDOWS] for g in groups}
    fin = iter(finite_models(ctx, finite_items, ridge, name, info))
    out = {g.label: group_prediction(g, apriori[g.label], [next(fin) for _ in g.K],
                                     [next(fin) for _ in g.K] if g.label in known and g.config["d"] > 1 else [],
                                     limit[g.label]) for g in groups}
    return RatePrediction(groups=out, cost=SweepCost(time.perf_counter() - t0, info))


def finite_models(ctx: CheckContext, items: Sequence[tuple[Mapping, int, int, bool, int, float]], ridge: float,
                  name: str, info: dict) -> list[dict]:
    """The finite-M model of ``(configuration, K, M, with_A, seed, se_target)`` items, one :func:`finite_task` per
    configuration (``sigma`` aside), ``(K, M)`` and seed: items differing only in ``sigma``, ``with_A`` or ``se_target``
    are its variants, on the same designs (the numbers of one task per item)."""
    tasks: dict[tuple[str, int, int, int], list[tuple[bool, float, float]]] = {}
    for cfg, K, M, with_A, sd, se in items:
        variants = tasks.setdefault((_without_sigma(cfg), int(K), int(M), int(sd)), [])
        if (bool(with_A), float(cfg["sigma"]), float(se)) not in variants:
            variants.append((bool(with_A), float(cfg["sigma"]), float(se)))
    keys = list(tasks)
    cells = [{**json.loads(c), "K": K, "M": M, "ridge": ridge, "variants": [list(v) for v in tasks[(c, K, M, sd)]]}
             for c, K, M, sd in keys]
    res = _sweep(ctx, finite_task, cells, lambda i, c: [keys[i][3]], f"{name} finite-M model", info,
                 "finite-M model", FINITE_VERSION)
    found = {key: r["finite"] for key, r in zip(keys, res)}
    out = []
    for cfg, K, M, with_A, sd, se in items:
        key = (_without_sigma(cfg), int(K), int(M), int(sd))
        out.append(found[key][tasks[key].index((bool(with_A), float(cfg["sigma"]), float(se)))])
    return out


def simulate_groups(ctx: CheckContext, groups: Sequence[GroupDesign], reps: int, name: str,
                    trial_extra: Mapping) -> RateMeasurement:
    """The sweep of every group (:func:`run_trials`) and its slope fits.  Replicate ``r`` of a cell has the seed
    ``cell_seed(base, cell, r)``, so an allocation's first ``n`` replicates are an equal design's, and groups that
    differ only in float values (a noise level) get paired data.  ``trial_extra["known_A"]`` adds the A*-known fits
    and the paired shift slope (``err / err_known``)."""
    t0 = time.perf_counter()
    info: dict = {}
    res = run_trials(ctx, groups, reps, name, trial_extra, info)
    out = {}
    for g in groups:
        sub = res.filter(group=g.label)
        M, E = sub.column("M"), sub.column("err")
        known: dict = {}
        if trial_extra.get("known_A"):
            Ek = sub.column("err_known")
            known = dict(errors_known={int(m): Ek[M == m].tolist() for m in g.M},
                         shift_fit=fit_slope(M, E / Ek, n_boot=0))
        out[g.label] = GroupMeasurement(errors={int(m): E[M == m].tolist() for m in g.M},
                                        fit=fit_slope(M, E, n_boot=1000, rng=ctx.seed_for("boot", g.label)),
                                        refits=int(np.sum(sub.column("refits"))), **known)
    return RateMeasurement(groups=out, cost=SweepCost(time.perf_counter() - t0, info))


def run_trials(ctx: CheckContext, groups: Sequence[GroupDesign], reps: int, name: str, trial_extra: Mapping,
               info: dict):
    """The trials of every group's cells (one :func:`run_sweep`), :meth:`GroupDesign.replicates` per cell."""
    cells, counts = [], []
    for g in groups:
        for K, M, n in zip(g.K, g.M, g.replicates(reps)):
            cells.append({**g.config, **trial_extra, **_device_extra(ctx), "K": K, "M": M, "group": g.label})
            counts.append(n)
    base = ctx.seed_for(name, "sweep")
    return _sweep(ctx, trial, cells, lambda i, cell: [cell_seed(base, cell, r) for r in range(counts[i])],
                  f"{name} sweep", info, "trials", SWEEP_VERSION)


def cache_text(info: dict) -> str:
    """Notes phrase: how many sweep pairs were computed now and how many came from the cache."""
    parts = [f"{k}: {v['n_computed']} computed, {v['n_cached']} from the cache" for k, v in info.items()]
    return "Sweep pairs (" + "; ".join(parts) + ")" if parts else ""


def slopes_text(groups: Sequence[GroupEvidence]) -> str:
    """Per group: the measured slope with its replicate SE and the finite-M model's slope."""
    return " | ".join(f"{g.label}: slope {m.fit.slope:.4f} +- {m.fit.se_replicate[0]:.4f} (finite-M model "
                      f"{p.finite_slope[0]:.4f})" for g, p, m in groups)


def design_text(g: GroupDesign) -> str:
    c = g.config
    return (f"{g.label}: d={c['d']}, N={c['N']}, r={c['r']}, P={c['P']} (beta={c['P'] - 1}, s={c['P'] - 2}), "
            f"n_knots={c['n_knots']}, sigma={c['sigma']:.4g}, K={list(g.K)}, M={list(g.M)}")


#: replicates per M level of the rate sweeps (A3, A4; A6 per configuration) by size
REPLICATES = {"smoke": 2, "quick": 4, "paper": 20}

@dataclass(frozen=True)
class SweepLevels:
    """The K levels of one rate sweep and its smallest sample size, ``M_K = M_lo (K / K_0)^(2 beta + 1)``
    (:func:`k_levels_to_M`), and the knots of its B-spline truth."""

    Ks: tuple[int, ...]
    M_lo: int
    n_knots: int = 6


#: the P = 3 (beta = 2) sweeps of A3 and A4 per profile: K_M = 5.77 M^(1/5) from M = 500 at quick and paper; A3's
#: paper levels reach M = 1e5, A4's stop at 2e4 (N = 10 trials cost ~3x N = 5 ones); why: docs/design_notes.md
RATE_LEVELS = {
    "A3": {"smoke": SweepLevels((8, 10, 12), 60), "quick": SweepLevels((20, 23, 26, 30, 35, 40), 500),
           "paper": SweepLevels((20, 24, 28, 33, 40, 48, 58), 500)},
    "A4": {"smoke": SweepLevels((8, 10, 12), 60), "quick": SweepLevels((20, 23, 27, 31, 36), 500),
           "paper": SweepLevels((20, 23, 27, 31, 36, 42), 500)},
}


#: the pilot of the replicate allocation: per group and M level, the replicate SD of the judged quantity and the
#: CPU cost of a replicate (written by ``python -m benchmarks.allocation_pilot``; see :func:`apply_allocation`)
ALLOCATION_PILOT = Path(__file__).with_name("allocation_pilot.json")

#: floor of an allocation per M level: 3 df for the level's own variance (the replicate SE uses each level's)
ALLOCATION_MIN = 4


@functools.lru_cache(maxsize=1)
def _allocation_pilot() -> dict:
    return json.loads(ALLOCATION_PILOT.read_text()) if ALLOCATION_PILOT.exists() else {}


def apply_allocation(groups: Sequence[GroupDesign], check_id: str, size: str, n_equal: int) -> list[GroupDesign]:
    """The groups with the cheapest replicate counts whose slope variance is at most that of ``n_equal``
    (:func:`numerics.allocation.allocate_replicates` of the pilot's SD and cost for ``(check_id, size)``); without
    a pilot, unchanged; a pilot measured on other ``M`` levels is refused."""
    pilot = _allocation_pilot().get(check_id, {}).get(size)
    if not pilot:
        return list(groups)
    out = []
    for g in groups:
        p = pilot.get(g.label)
        if p is None or [int(m) for m in p["M"]] != [int(m) for m in g.M]:
            raise ValueError(f"the allocation pilot of {check_id}/{size} has no entry for {g.label!r} on its M "
                             f"levels {list(g.M)}: regenerate it (python -m benchmarks.allocation_pilot --profile "
                             f"{size} REPORT.json ...)")
        reps = allocate_replicates(list(g.M), p["sd"], p["cost"], n_equal, min(ALLOCATION_MIN, n_equal)).tolist()
        out.append(dataclasses.replace(g, reps=reps))
    return out


def allocation_text(groups: Sequence[GroupDesign], n_equal: int) -> str:
    """The replicate counts of a design for its notes."""
    if all(g.reps is None for g in groups):
        more = [f"{g.label}: {n_equal * g.rep_factor}" for g in groups if g.rep_factor != 1]
        return f"{n_equal} replicates per M" + (f" ({'; '.join(more)})" if more else "")
    return (f"replicates per M level allocated at the cost-optimal (Neyman) counts with the slope variance of "
            f"{n_equal} per level (pilot: {ALLOCATION_PILOT.name}, floor {ALLOCATION_MIN}): "
            + "; ".join(f"{g.label} {g.replicates(n_equal)}" for g in groups))


#: starts of the estimator for d > 1 by profile: the two moment starts (smoke: one); a single one occasionally
#: stalls (objective 100x larger), the stall protocol of :func:`trial` handles the rest (:data:`STARTS_NOTE`)
ESTIMATOR_STARTS = {"smoke": 1, "quick": 2, "paper": 2}


#: why the paper grids of A3/A4 look as they do (stated in their notes)
PAPER_GRID_NOTE = (
    "Paper grid: K_M = 5.77 M^(1/5) (a d > 1 fit at M = 1e5 costs 1.7-2.3x more with K = 93 than with K = 58; the "
    "bias is in its K^-4 regime from K = 12 on; docs/design_notes.md); with fewer basis functions the parametric "
    "share V_par / V of the error is larger for d > 1 (the finite-M model includes it). "
)

#: measured basis of the paper profile's 2 starts (stated in the notes of A3, A4, A6)
STARTS_NOTE = (
    "Estimator starts: the 2 moment starts. A third (random) start, on 15 cells x 8 replicates (d = 2, 5, 30; "
    "M = 500..16000), lowered the objective in 1/120 fits (by 0.03%), cost +34-37% at M = 20421 (d = 2), and "
    "2 starts stalled in 0/120."
)


def balanced_truth(ctx: CheckContext, P: int, Ks: Sequence[int], Ms: Sequence[int], *sigma_keys: Any,
                   n_knots: int = 6) -> dict:
    """The d = 1, N = 5, r = 1 configuration of a B-spline truth of degree ``P`` (a design seed), ``sigma``
    balanced at the middle ``(K, M)`` level (:func:`balanced_sigma`, design seed of ``sigma_keys``)."""
    cfg = {"d": 1, "N": 5, "r": 1, "P": P, "n_knots": n_knots, "truth_seed": ctx.design_seed("truth", P),
           "law": "uniform"}
    ic = len(Ks) // 2
    cfg["sigma"] = balanced_sigma(cfg, Ks[ic], Ms[ic], P - 2, ctx.design_seed(*sigma_keys),
                                  **prediction_sizes(ctx.profile))
    return cfg


def rate_base(ctx: CheckContext, check_id: str) -> tuple[dict, list[int], list[int]]:
    """The P = 3 (beta = 2) truth of A3 / A4 (sigma balanced for d = 1) and its K and M levels (:data:`RATE_LEVELS`)."""
    levels = RATE_LEVELS[check_id][ctx.profile]
    Ks = list(levels.Ks)
    Ms = k_levels_to_M(Ks, levels.M_lo, 2)
    return balanced_truth(ctx, 3, Ks, Ms, "sigma", 3), Ks, Ms


def inside_condition(r: int, d: int, M: float, beta: float) -> bool:
    """:func:`theory.low_rank_condition` at ``M`` with the constant :data:`LOW_RANK_CONSTANT`."""
    return bool(RateSetting(beta, r, d, constant=LOW_RANK_CONSTANT).low_rank_condition(M))


def inside_share(g: GroupDesign) -> tuple[int, int]:
    """M levels of the group at which the low-rank condition (constant :data:`LOW_RANK_CONSTANT`) holds."""
    c = g.config
    return sum(inside_condition(c["r"], c["d"], m, c["P"] - 1) for m in g.M), len(g.M)


def ratio_text(groups: Sequence[GroupEvidence]) -> str:
    """Measured mean error / a-priori prediction at each M (>1 at small M: pre-asymptotic excess)."""
    parts = [f"{g.label}: " + ", ".join(f"{float(np.mean(m.errors[M])) / c:.2f}" for M, c in zip(g.M, p.curve))
             for g, p, m in groups]
    refits = ", ".join(f"{e.label}: {e.measurement.refits}" for e in groups)
    return "measured/predicted mean error along M: " + "; ".join(parts) + f" (refitted stalled fits: {refits})"


def condition_text(groups: Sequence[GroupEvidence]) -> str:
    """Per group: the low-rank condition along M and the a-priori model's parametric share and slopes."""
    parts = []
    for g, p, _ in groups:
        c = g.config
        k, n = inside_share(g)
        share = [q["V_par"] / m / y for q, m, y in zip(p.apriori, g.M, p.curve)]
        parts.append(f"{g.label}: r d = {c['r'] * c['d']}, low-rank condition (constant {LOW_RANK_CONSTANT}) holds at "
                     f"{k}/{n} M levels; predicted parametric share of the error "
                     f"{min(share):.0%}..{max(share):.0%}; slope without the parametric term "
                     f"{p.slope_np:.3f}, with it {p.slope:.3f}")
    return "; ".join(parts)
