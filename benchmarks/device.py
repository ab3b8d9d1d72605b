"""The device check: the estimators and paper B's Monte Carlo on a torch device against the CPU, in one process.

    python -m benchmarks --only device [--device cpu|cuda] [--json PATH] [--tiny] [--jobs N] [--budget S]

One command for a GPU machine (under 5 minutes at the default ``--budget 270``); ``--device cpu --tiny`` is its dry
run (seconds; run by the tests and CI, so that the CUDA code path's CPU twin cannot rot).  The sections, in order,
each written to ``PATH`` (JSON) as soon as it is done; at the end a markdown table (printed, and ``PATH`` with the
suffix ``.md``):

correctness (the device against the CPU on the same inputs; a row beyond its tolerance is an error: exit status 1)
  - ``fit``: :class:`numerics.PairwiseInteractionEstimator` with ``A`` fixed at ``A*`` (one least-squares solve:
    ``|objective_dev - objective_cpu| <= TOL_FIXED_A objective_cpu``), a free fit and ``fit_many`` (the same objective
    within the estimator's own ``tol``, :data:`TOL_FIT`: the device sums in another order, and the stopping rule
    decides at relative changes of ``tol``, so the two runs may stop one iteration apart);
  - ``mc``: one cell of each of B2 (null model, label-averaged), B7 (spiked models; true, linearised and ridge
    kernels), B8 (softmax, entrywise and ridge) and B9 (:func:`numerics.strong_alignment_mc`).  The draws are the
    SAME on every device (each trial is drawn by numpy on the CPU from ``SeedSequence(seed).spawn(n_trials)[t]`` and
    moved to the device; the kernels, products and eigendecompositions run there), so every per-trial output is
    compared entry by entry: ``|dev - cpu| <= MC_RTOL |cpu| + MC_ATOL`` (float64 rounding of the products and the
    eigendecompositions, far inside any Monte Carlo error);
  - ``verdicts``: ``python -m verify --device DEV --only A2 B2 B8`` (quick profile; cold caches) gives the CPU
    run's verdicts (the two runs at once, ``--jobs N/2`` each).

speed (the device against the same process's CPU run on the same inputs; reported, never asserted)
  - ``matmul``: float64 ``n x n`` GFLOP/s against the device's published peak (:data:`PEAK_FP64_TFLOPS`);
  - ``fits``: fits per second at ``M = 1e4`` (``fit_many``, 8 data sets), ``1e5`` (2) and ``1e6`` (``fit``); the
    CPU runs the estimator's default ``num_threads=1`` (a sweep runs one fit per core);
  - ``mc``: Monte Carlo trials per second of ``simulate_model`` (tanh, ``c = 1/2``, 7 gammas) at ``n = 1024, 4096,
    8192``; the CPU with torch's threads (all cores); ``theory``'s memory budget is raised to
    :data:`MEMORY_BUDGET_BYTES` during the check (one trial at ``n = 8192``: 2.4 GiB);
  - ``profile``: the wall time of ``python -m verify --profile quick --device DEV --jobs N`` on a cold cache.

A speed row whose time, extrapolated from the row before (fits ``~ M R``, Monte Carlo ``~ n^3 trials``), would leave
less than the profile's reserve (100 s) of the budget is skipped with a note; the verdicts' runs are stopped after
what is left of the budget less the reserve (at least 60 s), and the profile after what is left (at least 30 s):
without imports, the whole check stays within the budget plus 30 s.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import importlib.metadata
import os
import platform
import time
import traceback
import warnings
from typing import Any, Callable

import numpy as np
import torch

#: fit with ``A`` fixed: one Cholesky solve; the two devices differ by float64 summation order only
TOL_FIXED_A = 1e-10
#: free fits: the estimator's default ``tol`` (its stopping rule's resolution)
TOL_FIT = 1e-6
#: Monte Carlo on the same draws: relative and absolute tolerance of every per-trial output
MC_RTOL, MC_ATOL = 1e-8, 1e-12
#: the claims whose verdicts the device run must give as the CPU run does (the quick profile)
VERIFY_IDS = ("A2", "B2", "B8")
#: published float64 peak (TFLOP/s, dense, tensor cores where the chip has them; NVIDIA's data sheets), matched in
#: this order against ``torch.cuda.get_device_name``
PEAK_FP64_TFLOPS = (("H100 PCIe", 51.0), ("H100 NVL", 60.0), ("H200 NVL", 60.0), ("GH200", 67.0), ("H100", 67.0),
                    ("H200", 67.0), ("B200", 40.0), ("A100", 19.5), ("V100", 7.8))
#: ``theory``'s memory budget during the check (default 2 GiB): one Monte Carlo trial at ``n = 8192`` needs 2.4 GiB
MEMORY_BUDGET_BYTES = 16 * 2**30
RUNTIME_DEPENDENCIES = ("numpy", "scipy", "sympy", "mpmath", "torch", "matplotlib", "joblib", "rich", "filelock",
                        "threadpoolctl")


@dataclasses.dataclass(frozen=True)
class Sizes:
    """What the device check runs at one size (``tiny``: the dry run; ``full``: the GPU run)."""

    matmul_n: int
    fit_M: int  # correctness fits: samples per data set
    fit_R: int  # correctness fit_many: data sets
    mc_n: int  # correctness Monte Carlo cells: tokens
    mc_trials: int
    fit_speed: tuple[tuple[int, int], ...]  # (M, R): R == 1 -> fit, else fit_many of R data sets
    mc_speed: tuple[tuple[int, int], ...]  # (n, trials)
    verify_profile: str
    verify_ids: tuple[str, ...]
    profile: str  # the timed profile
    profile_ids: tuple[str, ...] | None
    budget_s: float
    reserve_s: float  # of the budget, kept for the timed profile


SIZES = {
    "tiny": Sizes(256, 300, 3, 32, 3, ((300, 3), (600, 1)), ((32, 3), (64, 2)), "smoke", ("B2", "B8"), "smoke",
                  ("B8",), 600.0, 0.0),
    "full": Sizes(8192, 4000, 8, 256, 4, ((10_000, 8), (100_000, 2), (1_000_000, 1)),
                  ((1024, 16), (4096, 4), (8192, 2)), "quick", VERIFY_IDS, "quick", None, 270.0, 100.0),
}


class Budget:
    """Wall-clock seconds of the whole check, ``reserve_s`` of them kept for the timed profile."""

    def __init__(self, total_s: float, reserve_s: float) -> None:
        self.t0, self.total_s, self.reserve_s = time.perf_counter(), float(total_s), float(reserve_s)

    def left(self) -> float:
        return self.total_s - (time.perf_counter() - self.t0)

    def allows(self, predicted_s: float) -> bool:
        return predicted_s <= self.left() - self.reserve_s


def peak_fp64_tflops(name: str) -> float | None:
    """The published float64 peak of a device named ``name`` (``None``: not in :data:`PEAK_FP64_TFLOPS`)."""
    return next((peak for key, peak in PEAK_FP64_TFLOPS if key in name), None)


def threads(n: int) -> str:
    return f"{n} thread" + ("" if n == 1 else "s")


def sync(device: str) -> None:
    if str(device).startswith("cuda"):
        torch.cuda.synchronize(device)


def device_name(device: str) -> str:
    if str(device).startswith("cuda"):
        return torch.cuda.get_device_name(device)
    return platform.processor() or platform.machine() or "cpu"


def machine(device: str) -> dict:
    """The device, the CPU, torch / CUDA and which of the project's runtime dependencies are installed."""
    deps = {}
    for name in RUNTIME_DEPENDENCIES:
        try:
            deps[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            deps[name] = None
    out = dict(device=device, device_name=device_name(device), cpu_count=os.cpu_count(),
               torch_threads=torch.get_num_threads(), torch=torch.__version__, cuda=torch.version.cuda,
               python=platform.python_version(), platform=platform.platform(), dependencies=deps,
               missing=[k for k, v in deps.items() if v is None])
    if str(device).startswith("cuda"):
        out["device_memory_gib"] = torch.cuda.get_device_properties(device).total_memory / 2**30
    return out


# ----------------------------------------------------------------------------------------------- rows
def row(section: str, workload: str, device: str, cpu: str, *, ratio: float | None = None, ok: bool | None = None,
        tolerance: str = "", note: str = "", **data: Any) -> dict:
    """A table row: the runner's fields (``project`` = the device, ``baseline`` = the CPU) and the check's."""
    verdict = "" if ok is None else ("ok" if ok else "BEYOND TOLERANCE")
    return dict(section=section, workload=workload, project=device, baseline=cpu, ratio=ratio, lower_bound=False,
                target=None, ok=ok, tolerance=tolerance, detail=note,
                note="; ".join(s for s in (tolerance, verdict, note) if s), **data)


def rel_diff(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), 1e-300)


def mc_diff(cpu: dict, dev: dict) -> tuple[float, bool]:
    """Largest relative difference over every output entry (denominator at least ``MC_ATOL / MC_RTOL``) and whether
    every entry is within ``MC_RTOL |cpu| + MC_ATOL`` (NaN where the other is NaN)."""
    worst, ok = 0.0, cpu.keys() == dev.keys()
    for key in cpu:
        x, y = np.asarray(cpu[key], dtype=float), np.asarray(dev[key], dtype=float)
        nan = np.isnan(x)
        ok = ok and x.shape == y.shape and bool(np.array_equal(nan, np.isnan(y)))
        if x.shape != y.shape:
            continue
        d = np.abs(x[~nan] - y[~nan])
        ok = ok and bool(np.all(d <= MC_RTOL * np.abs(x[~nan]) + MC_ATOL))
        worst = max(worst, float(np.max(d / np.maximum(np.abs(x[~nan]), MC_ATOL / MC_RTOL), initial=0.0)))
    return worst, ok


def timed(fn: Callable[[str], Any], device: str) -> tuple[Any, float]:
    sync(device)
    t0 = time.perf_counter()
    out = fn(device)
    sync(device)
    return out, time.perf_counter() - t0


# ----------------------------------------------------------------------------------------------- correctness
def ips_model():
    from numerics import IPSModel

    return IPSModel(d=5, N=4, degree=3, noise=0.1, n_knots=6, support=1.0, seed=0)


def estimator(device: str):
    from numerics import PairwiseInteractionEstimator

    return PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=8, device=device)


def stacked(model: Any, M: int, R: int, first_seed: int) -> tuple[np.ndarray, np.ndarray]:
    data = [model.sample(M, rng=first_seed + i) for i in range(R)]
    return np.stack([x for x, _ in data]), np.stack([y for _, y in data])


def fit_correctness(device: str, sizes: Sizes) -> list[dict]:
    """Fixed-``A``, free and ``fit_many`` fits on the device and the CPU, on the same data."""
    from numerics import ConvergenceWarning

    model = ips_model()
    X, Y = model.sample(sizes.fit_M, rng=1)
    Xs, Ys = stacked(model, sizes.fit_M, sizes.fit_R, 10)
    runs = (("fit, A fixed at A* (one least-squares solve)", TOL_FIXED_A,
             lambda d: [estimator(d).fit(X, Y, A=model.A_star)]),
            ("fit (moment starts, Gauss-Newton)", TOL_FIT, lambda d: [estimator(d).fit(X, Y)]),
            (f"fit_many of {sizes.fit_R} data sets", TOL_FIT, lambda d: estimator(d).fit_many(Xs, Ys)))
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name, tol, fn in runs:
            (cpu, t_cpu), (dev, t_dev) = timed(fn, "cpu"), timed(fn, device)
            diffs = [rel_diff(a.objective_, b.objective_) for a, b in zip(cpu, dev)]
            align = [1.0 - abs(float(np.sum(a.A_ * b.A_))) for a, b in zip(cpu, dev)]
            rows.append(row("correctness", f"{name}, M={sizes.fit_M}: objective_", f"max rel diff {max(diffs):.1e}",
                            f"objective {cpu[0].objective_:.6g}", ok=max(diffs) <= tol,
                            tolerance=f"rel <= {tol:g}", note=f"1 - |<A_cpu, A_dev>| <= {max(align):.1e}",
                            measured=max(diffs), cpu_s=t_cpu, device_s=t_dev,
                            n_iter=[[a.n_iter_, b.n_iter_] for a, b in zip(cpu, dev)]))
    return rows


def mc_cells(n: int, trials: int, seed: int = 0) -> dict[str, Callable[[str], dict]]:
    """One Monte Carlo cell of each of B2, B7, B8, B9 at ``n`` tokens: ``device -> every per-trial output``."""
    from numerics import MonteCarloSettings, simulate_model, strong_alignment_mc
    from numerics.softmax import softmax_error_mc
    from theory import AttentionModel, label_coordinate_bins

    g = np.logspace(-3, 0, 4)

    def settings(device: str, labels: str = "balanced") -> Any:
        return MonteCarloSettings(trials, seed, device=device, labels=labels)

    def b2(device: str) -> dict:
        *_, per_trial = simulate_model(AttentionModel(0.25, "tanh"), n // 4, g, settings(device), return_trials=True,
                                       label_average=True)
        return {"true": per_trial}

    def b7(device: str) -> dict:
        models = [AttentionModel(0.5, "tanh", snr=0.5, spike=s) for s in (None, (4.0, "aligned"), (4.0, "orthogonal"))]
        return simulate_model(models, n // 2, g, settings(device), kind=("true", "linearised", "ridge"))

    def b8(device: str) -> dict:
        models = [AttentionModel(0.5, "identity", snr=1.0, spike=s) for s in (None, (4.0, "aligned"))]
        return softmax_error_mc(models, n // 2, g, [0.25, 1.0, 2.0], settings(device))

    def b9(device: str) -> dict:
        return strong_alignment_mc("erf", 0.5, 1.0, n // 2, [0.0, 1e-3, 1e-2], settings(device, "iid"), snr=1.0,
                                   bins=label_coordinate_bins(1.0, 6))

    return {"B2": b2, "B7": b7, "B8": b8, "B9": b9}


MC_CELLS = {"B2": "null model tanh c=1/4, label-averaged",
            "B7": "tanh c=1/2 snr=1/2, 3 spikes, true/linearised/ridge",
            "B8": "softmax + entrywise beta 1/4, 1, 2, 2 spikes, ridge",
            "B9": "strong_alignment_mc erf c=1/2 t=1, bins"}


def mc_correctness(device: str, sizes: Sizes) -> list[dict]:
    rows = []
    for cid, fn in mc_cells(sizes.mc_n, sizes.mc_trials).items():
        (cpu, t_cpu), (dev, t_dev) = timed(fn, "cpu"), timed(fn, device)
        worst, ok = mc_diff(cpu, dev)
        name = f"{cid} Monte Carlo cell, n={sizes.mc_n}, {sizes.mc_trials} trials (same draws)"
        rows.append(row("correctness", name,
                        f"max rel diff {worst:.1e}", f"{sum(np.size(v) for v in cpu.values())} outputs", ok=ok,
                        tolerance=f"|dev - cpu| <= {MC_RTOL:g} |cpu| + {MC_ATOL:g}", note=MC_CELLS[cid],
                        measured=worst, cpu_s=t_cpu, device_s=t_dev, outputs=sorted(cpu)))
    return rows


def verdict_rows(device: str, sizes: Sizes, jobs: int, run_verify: Callable, timeout_s: float) -> list[dict]:
    """``python -m verify --only ...`` on the CPU and on the device at once: the same verdict per claim."""
    each = max(1, jobs // 2)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # two runs, also when the device is the CPU
        futures = [pool.submit(run_verify, timeout_s, sizes.verify_profile, device=d, jobs=each,
                               only=sizes.verify_ids) for d in ("cpu", device)]
        cpu, dev = (f.result() for f in futures)
    if cpu.get("skipped") or dev.get("skipped"):
        raise RuntimeError(f"verify did not finish: {cpu.get('note') or dev.get('note')}")
    rows = []
    for cid in sizes.verify_ids:
        a, b = cpu["measured"].get(cid, []), dev["measured"].get(cid, [])
        diffs = [rel_diff(x, y) for x, y in zip(a, b) if isinstance(x, (int, float)) and isinstance(y, (int, float))]
        rows.append(row("correctness", f"python -m verify --profile {sizes.verify_profile} --only {cid}: verdict",
                        str(dev["verdicts"].get(cid)), str(cpu["verdicts"].get(cid)),
                        ok=cid in cpu["verdicts"] and cpu["verdicts"].get(cid) == dev["verdicts"].get(cid),
                        tolerance="the same verdict",
                        note=(f"{len(diffs)} measured values, max rel diff {max(diffs, default=0.0):.1e}; "
                              f"{dev['per_check_s'].get(cid, float('nan')):.1f} s vs "
                              f"{cpu['per_check_s'].get(cid, float('nan')):.1f} s (run side by side, --jobs {each})"),
                        measured=max(diffs, default=0.0)))
    return rows


# ----------------------------------------------------------------------------------------------- speed
def matmul_gflops(device: str, n: int, repeats: int = 3) -> float:
    """Best-of-``repeats`` GFLOP/s of a float64 ``n x n`` matmul on ``device`` (after one warm-up product)."""
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, dtype=torch.float64, generator=gen).to(device)
    b = torch.randn(n, n, dtype=torch.float64, generator=gen).to(device)
    best = min(timed(lambda _d: a @ b, device)[1] for _ in range(repeats + 1))
    return 2.0 * n**3 / best / 1e9


def matmul_rows(device: str, sizes: Sizes) -> list[dict]:
    n_cpu = min(sizes.matmul_n, 4096)
    cpu, dev = matmul_gflops("cpu", n_cpu), matmul_gflops(device, sizes.matmul_n)
    peak = peak_fp64_tflops(device_name(device)) if str(device).startswith("cuda") else None
    ref = f"published peak {peak:g} TFLOP/s: {dev / 1e3 / peak:.0%}" if peak else "no published peak in the table"
    return [row("speed", f"float64 matmul (device {sizes.matmul_n}^2, CPU {n_cpu}^2)", f"{dev:.1f} GFLOP/s",
                f"{cpu:.1f} GFLOP/s ({threads(torch.get_num_threads())})", ratio=dev / cpu, tolerance=ref,
                device_gflops=dev, cpu_gflops=cpu, peak_tflops=peak,
                fraction_of_peak=None if not peak else dev / 1e3 / peak)]


def speed_series(items: tuple[tuple[int, int], ...], cost: Callable[[int, int], float], measure: Callable,
                 budget: Budget, label: Callable[[int, int], str]) -> list[dict]:
    """``measure(a, b)`` for each item unless the time extrapolated from the item before would overrun ``budget``."""
    rows, last = [], None
    for a, b in items:
        if last is not None:
            predicted = last[1] * cost(a, b) / last[0]
            if not budget.allows(predicted):
                rows.append(row("speed", label(a, b), "skipped", "", note=f"predicted {predicted:.0f} s, "
                                f"{budget.left() - budget.reserve_s:.0f} s of the budget left", skipped=True))
                continue
        t0 = time.perf_counter()
        rows.append(measure(a, b))
        last = (cost(a, b), time.perf_counter() - t0)
    return rows


def fit_speed(device: str, sizes: Sizes, budget: Budget) -> list[dict]:
    from numerics import ConvergenceWarning

    model = ips_model()

    def label(M: int, R: int) -> str:
        return f"fits/s, M={M:.0e}: " + ("fit" if R == 1 else f"fit_many of {R} data sets")

    def measure(M: int, R: int) -> dict:
        X, Y = stacked(model, M, R, 100)

        def fits(d: str) -> list:
            return [estimator(d).fit(X[0], Y[0])] if R == 1 else estimator(d).fit_many(X, Y)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            (cpu, t_cpu), (dev, t_dev) = timed(fits, "cpu"), timed(fits, device)
        diff = max(rel_diff(a.objective_, b.objective_) for a, b in zip(cpu, dev))
        return row("speed", label(M, R), f"{R / t_dev:.3g} fits/s", f"{R / t_cpu:.3g} fits/s (1 thread per fit)",
                   ratio=t_cpu / t_dev, ok=diff <= TOL_FIT, tolerance=f"objective rel diff {diff:.1e} <= {TOL_FIT:g}",
                   cpu_s=t_cpu, device_s=t_dev, measured=diff)

    return speed_series(sizes.fit_speed, lambda M, R: M * R, measure, budget, label)


def mc_speed(device: str, sizes: Sizes, budget: Budget) -> list[dict]:
    from numerics import MonteCarloSettings, simulate_model
    from theory import AttentionModel

    model, g = AttentionModel(0.5, "tanh", snr=1.0), np.logspace(-3, 0, 7)

    def label(n: int, trials: int) -> str:
        return f"Monte Carlo trials/s, n={n}, p={n // 2}, {trials} trials"

    def measure(n: int, trials: int) -> dict:
        def run(d: str) -> dict:
            return {"true": simulate_model(model, n // 2, g, MonteCarloSettings(trials, 0, device=d),
                                           return_trials=True)[2]}

        (cpu, t_cpu), (dev, t_dev) = timed(run, "cpu"), timed(run, device)
        worst, ok = mc_diff(cpu, dev)
        return row("speed", label(n, trials), f"{trials / t_dev:.3g} trials/s",
                   f"{trials / t_cpu:.3g} trials/s ({threads(torch.get_num_threads())})", ratio=t_cpu / t_dev, ok=ok,
                   tolerance=f"max rel diff {worst:.1e} (<= {MC_RTOL:g})", cpu_s=t_cpu, device_s=t_dev,
                   measured=worst)

    return speed_series(sizes.mc_speed, lambda n, trials: float(n) ** 3 * trials, measure, budget, label)


def profile_rows(device: str, sizes: Sizes, jobs: int, run_verify: Callable, budget: Budget) -> list[dict]:
    timeout = max(budget.left(), 30.0)
    res = run_verify(timeout, sizes.profile, device=device, jobs=jobs, only=sizes.profile_ids)
    only = "" if sizes.profile_ids is None else " --only " + " ".join(sizes.profile_ids)
    cmd = f"python -m verify --profile {sizes.profile} --device {device} --jobs {jobs}{only}"
    if res.get("skipped"):
        return [row("speed", cmd, "not finished", "", note=res.get("note", ""), ok=None, wall_s=res.get("wall_s"))]
    counts: dict[str, int] = {}
    for v in res["verdicts"].values():
        counts[str(v)] = counts.get(str(v), 0) + 1
    slow = ", ".join(f"{k} {v:.1f} s" for k, v in sorted(res["per_check_s"].items(), key=lambda kv: -kv[1])[:5])
    return [row("speed", f"{cmd} (cold cache)", f"{res['wall_s']:.1f} s wall", "",
                note=f"exit {res['exit_code']}; " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) +
                f"; slowest: {slow}", wall_s=res["wall_s"], verdicts=res["verdicts"], per_check_s=res["per_check_s"])]


# ----------------------------------------------------------------------------------------------- the check
def run(device: str, *, tiny: bool, jobs: int | None = None, budget_s: float | None = None,
        run_verify: Callable, checkpoint: Callable[[dict], None] = lambda doc: None,
        log: Callable[[str], None] = print) -> dict:
    """The device check (module docstring); ``checkpoint(doc)`` after every section, ``doc`` the result so far.

    ``run_verify(timeout_s, profile, *, device, jobs, only)`` is the runner's :func:`benchmarks.__main__.run_verify`.
    """
    sizes = SIZES["tiny" if tiny else "full"]
    jobs = int(jobs or os.cpu_count() or 1)
    budget = Budget(sizes.budget_s if budget_s is None else budget_s, sizes.reserve_s)
    doc: dict[str, Any] = dict(name="device", device=device, sizes=dataclasses.asdict(sizes), jobs=jobs,
                               budget_s=budget.total_s, machine=machine(device), rows=[], sections={},
                               tolerances=dict(fixed_A=TOL_FIXED_A, fit=TOL_FIT, mc_rtol=MC_RTOL, mc_atol=MC_ATOL),
                               draws="same: drawn by numpy on the CPU from the seed, moved to the device")
    steps = (("correctness: fits", lambda: fit_correctness(device, sizes)),
             ("correctness: Monte Carlo", lambda: mc_correctness(device, sizes)),
             ("correctness: verdicts", lambda: verdict_rows(device, sizes, jobs, run_verify,
                                                            max(budget.left() - sizes.reserve_s, 60.0))),
             ("speed: matmul", lambda: matmul_rows(device, sizes)),
             ("speed: fits", lambda: fit_speed(device, sizes, budget)),
             ("speed: Monte Carlo", lambda: mc_speed(device, sizes, budget)),
             ("speed: profile", lambda: profile_rows(device, sizes, jobs, run_verify, budget)))
    from theory import get_limits, set_limits

    limits = set_limits(memory_budget_bytes=max(get_limits().memory_budget_bytes, MEMORY_BUDGET_BYTES))
    try:
        for name, step in steps:
            log(f"device check ({device}): {name}")
            t0 = time.perf_counter()
            try:
                rows = step()
                doc["sections"][name] = dict(wall_s=time.perf_counter() - t0)
            except Exception as exc:  # a failing section is reported, the others still run
                rows = [row(name.split(":")[0], name, "ERROR", "", ok=False, note=f"{type(exc).__name__}: {exc}")]
                doc["sections"][name] = dict(wall_s=time.perf_counter() - t0, error=f"{type(exc).__name__}: {exc}",
                                             traceback=traceback.format_exc())
            doc["rows"].extend(rows)
            doc["elapsed_s"] = budget.total_s - budget.left()
            checkpoint(doc)
    finally:
        set_limits(**dataclasses.asdict(limits))
    failed = [r["workload"] for r in doc["rows"] if r.get("ok") is False]
    if failed:
        doc["error"] = f"{len(failed)} row(s) beyond tolerance or failed: " + "; ".join(failed)
        doc["note"] = "ERROR " + doc["error"]
    return doc


def markdown(doc: dict, command: str, date: str) -> str:
    """The device check as a markdown table, with the machine, the date and the command above it."""
    m = doc["machine"]
    lines = [f"Device check: `{command}`, {date}.",
             f"Device {doc['device']} ({m['device_name']}), {m['cpu_count']} CPU cores, torch {m['torch']}"
             + (f", CUDA {m['cuda']}" if m.get("cuda") else "") + f", Python {m['python']}; "
             f"{doc.get('elapsed_s', float('nan')):.0f} s of a {doc['budget_s']:.0f} s budget. Draws: {doc['draws']}.",
             "", "| section | check | device | CPU | CPU time / device time | tolerance or reference | result |",
             "|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        ratio = "" if r.get("ratio") is None else f"{r['ratio']:.3g}x"
        result = "skipped" if r.get("skipped") else {True: "ok", False: "**FAIL**", None: ""}[r.get("ok")]
        cells = [r["section"], r["workload"], r["project"], r["baseline"], ratio, r.get("tolerance", ""),
                 "; ".join(s for s in (result, r.get("detail", "")) if s)]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"
