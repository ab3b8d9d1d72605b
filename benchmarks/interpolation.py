"""Benchmark: interpolation error on a 50-point gamma grid, one factorisation vs per-gamma solves.

One draw of null-model attention features (``n = 2048`` tokens, ``p = 512``, centred tanh, diagonal
removed).  The fast path (what :func:`numerics.interpolation_error` does) forms ``Phi Phi^T / n`` once,
reduces it to tridiagonal form once (Householder, LAPACK ``sytrd``) and evaluates every gamma by an ``O(p)``
tridiagonal solve.  Three baselines run in the same process on the same features (float64, same thread settings):

* ``naive``: per gamma, form ``Phi Phi^T + n gamma I``, solve for ``w``, residual ``y - Phi^T w``
  (the defining formula written directly);
* ``cached_cholesky``: the Gram matrix formed once, then one Cholesky solve per gamma (a strong baseline);
* ``eigh``: the Gram matrix and one symmetric eigendecomposition (the project's path before the tridiagonal one).

The check-sized case (``check_grid``: B7's largest cell, ``p = 1024``, ``n = 2048``, its 5 gammas) times the
path the checks take (tridiagonal from 3 gammas on at this size) against the per-gamma Cholesky path.
``b4_theory``: B4's theory at the quick profile (smoke with a reduced ``n``) with one null-system solve per
``(gamma grid, c)`` shared by every ``snr`` and spike (:mod:`theory.structured`'s memo) against a solve per call.

The baselines' LAPACK calls (solve, Cholesky, eigh) use the same thread policy as the fast path's
(single-threaded, see ``numerics._ridge_solvers.SINGLE_THREAD_EIGH_MAX``); matrix products use torch's default threads
everywhere.  Also reported: achieved GFLOP/s of the feature products (``X^T X``, ``X K``) and of the Gram product,
against a plain matmul of the same shapes timed in the same run.

Cost growth (:func:`time_vs_n`): the wall time of one Monte Carlo trial of the fast path (features + Gram +
one tridiagonalisation + a 50-point gamma grid) against ``n`` at a fixed ratio ``n / p``, with the fitted
log-log exponent next to the algorithm's: 3 (``X^T X`` and ``X K`` cost ``2 n^2 p``, the Gram ``2 p^2 n``, the
reduction ``O(p^3)``: all ``O(n^3)`` at fixed ``n / p``). Fixed per-call overheads and the
``O(n^2)`` activation flatten the slope at small ``n``.

Usage: ``python benchmarks/interpolation.py [--full]``; ``run(quick=True) -> dict`` and
``time_vs_n(...) -> dict`` for a runner.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from typing import Any, Callable

import numpy as np
import torch

from numerics.threads import torch_threads

N, P, G = 2048, 512, 50


def _best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, out = math.inf, None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _fast_trial(n: int, p: int, n_gammas: int, seed: int) -> Callable[[], torch.Tensor]:
    """One Monte Carlo trial of the fast path on a fixed draw: features + Gram + one eigh + the whole grid."""
    from numerics.rmt import resolve_activation, sample_signal_plus_noise

    X_np, y_np, _ = sample_signal_plus_noise(n, p, 0.0, np.random.default_rng(seed))
    X = torch.from_numpy(X_np)
    y = torch.from_numpy(y_np)
    gammas = torch.from_numpy(np.logspace(-5, 1, n_gammas))
    return _fast_path(X, y, gammas, resolve_activation("tanh"))


def _fast_path(X: torch.Tensor, y: torch.Tensor, gammas: torch.Tensor, f: Any) -> Callable[[], torch.Tensor]:
    """The fast path on a fixed draw: features + one Gram + one factorisation + all gammas (a closure to time)."""
    from numerics._ridge_solvers import errors_batch
    from numerics.rmt import kernel_batch

    def fast() -> torch.Tensor:
        Kb = kernel_batch(X.unsqueeze(0), f, None, None, "removed")
        Ph = X.unsqueeze(0) @ Kb
        return errors_batch(Ph, y.unsqueeze(0), gammas)[0]

    return fast


def time_vs_n(ns: tuple[int, ...] = (256, 512, 1024, 2048), ratio: int = N // P, n_gammas: int = G,
              repeats: int = 3, seed: int = 0, threads: int | None = 1) -> dict[str, Any]:
    """Time of one attention Monte Carlo trial against ``n`` at fixed ``n / p``, with the log-log exponent.

    Parameters
    ----------
    ns : tuple of int
        Token counts (at least 3 distinct values for an exponent).
    ratio : int
        ``n / p`` (default 4, the benchmark's ``2048 / 512``).
    n_gammas : int
        Size of the gamma grid.
    repeats : int
        Best of ``repeats`` timings per ``n`` (the first call at each size is a warm-up).
    seed : int
        Seed of the draws.
    threads : int or None
        Torch intra-op threads during the timings (restored afterwards; ``None``: leave them). Default 1:
        on a shared machine the threads' synchronisation adds a cost that does not grow with ``n``
        (measured on the loaded 2-core machine, 2 threads: 92, 96, 152, 534 ms for n = 256..2048, exponent
        0.8; 1 thread: 1.4, 13, 61, 444 ms, exponent 2.7), which would hide the algorithm's growth.

    Returns
    -------
    dict
        ``ns``, ``ps``, ``trial_s``, ``expected_exponent`` (3) and, with >= 3 sizes, ``exponent`` and
        ``exponent_se`` (OLS on ``log t`` vs ``log n``, :func:`numerics.slopes.fit_slope`) and the
        exponent of the two largest sizes alone (``exponent_top``; the asymptotic regime is approached from
        below).
    """
    from numerics.slopes import fit_slope

    ns = [int(n) for n in ns]
    if ratio < 1 or any(n // ratio < 2 for n in ns):
        raise ValueError(f"ratio must be >= 1 with n / ratio >= 2 for every n, got ratio={ratio}, ns={ns}")
    ps, times = [], []
    with torch_threads(threads):
        used_threads = torch.get_num_threads()
        for n in ns:
            p = n // ratio
            fast = _fast_trial(n, p, n_gammas, seed)
            fast()  # warm-up (allocations, thread pools)
            t, _ = _best_time(fast, max(1, int(repeats)))
            ps.append(p)
            times.append(t)
    out: dict[str, Any] = dict(ns=ns, ps=ps, ratio=ratio, n_gammas=n_gammas, trial_s=times, expected_exponent=3.0,
                               repeats=int(repeats), torch_threads=used_threads)
    if len(set(ns)) >= 3:
        f = fit_slope(ns, times, n_boot=0)
        out.update(exponent=float(f.slope), exponent_se=float(f.se))
    if len(ns) >= 2:
        out["exponent_top"] = float(math.log(times[-1] / times[-2]) / math.log(ns[-1] / ns[-2]))
    return out


def _naive_errors(Phi: torch.Tensor, y: torch.Tensor, gammas: torch.Tensor,
                  lapack_threads: int | None) -> torch.Tensor:
    """Per gamma: form ``Phi Phi^T + n gamma I``, solve for ``w``, residual ``y - Phi^T w`` (the defining formula)."""
    p, n = Phi.shape
    out = torch.empty(gammas.numel(), dtype=torch.float64)
    Py = Phi @ y
    eye = torch.eye(p, dtype=torch.float64)
    for i, g in enumerate(gammas.tolist()):
        A = Phi @ Phi.T + n * g * eye
        with torch_threads(lapack_threads):
            w = torch.linalg.solve(A, Py)
        r = y - Phi.T @ w
        out[i] = r @ r / n
    return out


def _cached_cholesky_errors(Phi: torch.Tensor, y: torch.Tensor, gammas: torch.Tensor,
                            lapack_threads: int | None) -> torch.Tensor:
    """The Gram matrix formed once, then one Cholesky solve per gamma (a strong baseline)."""
    p, n = Phi.shape
    out = torch.empty(gammas.numel(), dtype=torch.float64)
    Py = Phi @ y
    A0 = Phi @ Phi.T
    eye = torch.eye(p, dtype=torch.float64)
    for i, g in enumerate(gammas.tolist()):
        with torch_threads(lapack_threads):
            L = torch.linalg.cholesky(A0 + n * g * eye)
            w = torch.cholesky_solve(Py.unsqueeze(1), L)[:, 0]
        r = y - Phi.T @ w
        out[i] = r @ r / n
    return out


def _plain_matmul_times(n: int, p: int, reps: int) -> tuple[float, float, float]:
    """Best times of plain matmuls of the shapes of ``X^T X``, ``X K`` and the Gram product (same run)."""
    A1 = torch.randn(n, p, dtype=torch.float64)
    B1 = torch.randn(p, n, dtype=torch.float64)
    A2 = torch.randn(p, n, dtype=torch.float64)
    B2 = torch.randn(n, n, dtype=torch.float64)
    t_mm_s, _ = _best_time(lambda: A1 @ B1, reps)
    t_mm_k, _ = _best_time(lambda: A2 @ B2, reps)
    t_mm_g, _ = _best_time(lambda: A2 @ A2.T, reps)
    return t_mm_s, t_mm_k, t_mm_g


def _gflops(n: int, p: int, t_products: tuple[float, float, float],
            t_plain: tuple[float, float, float]) -> dict[str, float]:
    """GFLOP/s of the three products (``X^T X``, ``X K``, Gram) and of plain matmuls of the same shapes."""
    (t_s, t_k, t_g), (t_mm_s, t_mm_k, t_mm_g) = t_products, t_plain
    fl_s, fl_k, fl_g = 2.0 * n * n * p, 2.0 * p * n * n, 2.0 * p * p * n
    return {
        "gflops_XtX": fl_s / t_s / 1e9,
        "gflops_XK": fl_k / t_k / 1e9,
        "gflops_gram": fl_g / t_g / 1e9,
        "gflops_products": (fl_s + fl_k + fl_g) / (t_s + t_k + t_g) / 1e9,  # the three together
        "gflops_plain_matmul_products_shapes": (fl_s + fl_k + fl_g) / (t_mm_s + t_mm_k + t_mm_g) / 1e9,
        "gflops_plain_matmul_XtX_shape": fl_s / t_mm_s / 1e9,
        "gflops_plain_matmul_XK_shape": fl_k / t_mm_k / 1e9,
        "gflops_plain_matmul_gram_shape": fl_g / t_mm_g / 1e9,
    }


def _max_rel_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.max(torch.abs(a - b) / torch.abs(b).clamp_min(1e-300)))


def run(quick: bool = True, seed: int = 0, n: int = N, p: int = P, n_gammas: int = G) -> dict[str, Any]:
    """Run the benchmark; returns timings (s), speed-up ratios, GFLOP/s and the agreement of the paths.

    Parameters
    ----------
    quick : bool
        Best of 2 repetitions of each end-to-end timing, both paths alike (``False``: best of 3); the
        product timings behind the GFLOP/s figures are always best of 3 (they are short).
    seed : int
        Seed of the single draw.
    n, p, n_gammas : int
        Sizes (defaults: the benchmark's 2048, 512, 50).
    """
    from numerics._ridge_solvers import SINGLE_THREAD_EIGH_MAX, errors_batch, errors_eigh
    from numerics.rmt import kernel_batch, resolve_activation, sample_signal_plus_noise

    # the baselines' LAPACK calls follow the fast path's thread policy (single-threaded up to this size)
    lapack_threads = 1 if p <= SINGLE_THREAD_EIGH_MAX else None

    reps = 2 if quick else 3
    reps_products = 3
    X_np, y_np, _ = sample_signal_plus_noise(n, p, 0.0, np.random.default_rng(seed))
    X = torch.from_numpy(X_np)
    y = torch.from_numpy(y_np)
    gammas = torch.from_numpy(np.logspace(-5, 1, n_gammas))
    f = resolve_activation("tanh")

    # feature products, timed separately for GFLOP/s
    t_s, S = _best_time(lambda: X.T @ X, reps_products)
    t_f, K = _best_time(lambda: kernel_batch(X.unsqueeze(0), f, None, None, "removed")[0], reps)
    t_k, Phi = _best_time(lambda: X @ K, reps_products)
    t_g, Gp = _best_time(lambda: Phi @ Phi.T, reps_products)

    # fast path: features + one Gram + one eigh + all gammas
    t_fast, e_fast = _best_time(_fast_path(X, y, gammas, f), reps)
    t_err_only, _ = _best_time(lambda: errors_batch(Phi.unsqueeze(0), y.unsqueeze(0), gammas)[0], reps)
    t_naive, e_naive = _best_time(lambda: _naive_errors(Phi, y, gammas, lapack_threads), reps)
    t_cached, e_cached = _best_time(lambda: _cached_cholesky_errors(Phi, y, gammas, lapack_threads), reps)
    t_eigh, e_eigh = _best_time(lambda: errors_eigh(Phi.unsqueeze(0), y.unsqueeze(0), gammas)[0], reps)
    t_plain = _plain_matmul_times(n, p, reps_products)  # same run, same threads
    return {
        "n": n,
        "p": p,
        "n_gammas": n_gammas,
        "torch_threads": torch.get_num_threads(),
        "time_fast_total_s": t_fast,
        "time_errors_given_features_s": t_err_only,
        "time_naive_s": t_naive,
        "time_cached_cholesky_s": t_cached,
        "speedup_vs_naive": t_naive / t_err_only,
        "speedup_vs_naive_incl_features": (t_naive + t_s + t_f + t_k) / t_fast,
        "speedup_vs_cached_cholesky": t_cached / t_err_only,
        "time_eigh_s": t_eigh,
        "speedup_vs_eigh": t_eigh / t_err_only,
        "check_grid": _check_grid(seed, reps) if n >= N else _check_grid(seed, reps, n=n, p=n // 2),
        "b4_theory": b4_theory("quick" if n >= N else "smoke"),
        "feature_basis": feature_basis() if n >= N else feature_basis(n=64, p=128, models=2, reps=1),
        **_gflops(n, p, (t_s, t_k, t_g), t_plain),
        "time_activation_s": t_f,
        "max_rel_diff_vs_naive": _max_rel_diff(e_fast, e_naive),
        "max_rel_diff_vs_cached": _max_rel_diff(e_fast, e_cached),
        "max_rel_diff_vs_eigh": _max_rel_diff(e_fast, e_eigh),
    }


def _check_grid(seed: int, reps: int, n: int = 2048, p: int = 1024) -> dict[str, Any]:
    """B7's largest cell (``p = 1024``, ``n = 2048``, 5 gammas): the checks' path vs per-gamma Cholesky solves."""
    from numerics._ridge_solvers import errors_batch, errors_cholesky
    from numerics.rmt import attention_features, sample_signal_plus_noise

    X, y_np, _ = sample_signal_plus_noise(n, p, 1.0, np.random.default_rng(seed))
    Phi = torch.from_numpy(attention_features(X, "tanh")).unsqueeze(0)
    y = torch.from_numpy(y_np).unsqueeze(0)
    gammas = torch.tensor([1e-3, 1e-2, 1e-1, 1.0, 10.0], dtype=torch.float64)
    t_path, e_path = _best_time(lambda: errors_batch(Phi, y, gammas), reps)
    t_chol, e_chol = _best_time(lambda: errors_cholesky(Phi, y, gammas), reps)
    return {"n": n, "p": p, "n_gammas": 5, "time_checks_path_s": t_path, "time_cholesky_s": t_chol,
            "speedup_vs_cholesky": t_chol / t_path, "max_rel_diff": _max_rel_diff(e_path, e_chol)}


def feature_basis(n: int = 1024, p: int = 2048, models: int = 6, reps: int = 2, seed: int = 0) -> dict[str, Any]:
    """Errors of ``models`` kernels on one draw with ``p > n`` (B8's ``c = 2`` cells: two betas x two spikes,
    entrywise and softmax, use six): features ``X K`` (p x n) against ``R K`` (n x n, ``R^T R = X^T X``, one
    Cholesky factorisation for the draw; :func:`numerics._ridge_solvers.feature_basis`), same process, best of ``reps``;
    and the largest relative difference of the errors."""
    from numerics._ridge_solvers import errors_batch, feature_basis, gram
    from numerics.rmt import kernel_batch, resolve_activation
    from numerics.rmt import sample_signal_plus_noise

    X_np, y_np, _ = sample_signal_plus_noise(n, p, 1.0, np.random.default_rng(seed))
    X, y = torch.from_numpy(X_np).unsqueeze(0), torch.from_numpy(y_np).unsqueeze(0)
    gammas = torch.tensor([1e-2, 1e-1, 1.0], dtype=torch.float64)
    K = kernel_batch(X, resolve_activation("tanh"), None, None, "removed")
    S0 = gram(X.transpose(-1, -2))

    def errors(basis: bool) -> torch.Tensor:
        B = feature_basis(X, S0) if basis else X
        return torch.stack([errors_batch(B @ (K * (1 + 0.1 * m)), y, gammas) for m in range(models)])

    t_plain, e_plain = _best_time(lambda: errors(False), reps)
    t_basis, e_basis = _best_time(lambda: errors(True), reps)
    return {"n": n, "p": p, "models": models, "time_features_s": t_plain, "time_basis_s": t_basis,
            "speedup": t_plain / t_basis, "max_rel_diff": _max_rel_diff(e_basis, e_plain)}


def b4_theory(profile: str = "quick") -> dict[str, Any]:
    """B4's theory (``predict_b4`` at ``profile``) with the null-system memo of :mod:`theory.structured` against
    one null solve per call (the memo bypassed), same process, memo emptied first; and whether the two agree
    bit for bit.  CPU seconds (the theory runs in one thread)."""
    import pickle

    import theory.structured as ts
    from verify.checks.paper_b_alignment import design_b4, predict_b4
    from verify.context import CheckContext

    ctx = CheckContext(profile=profile, seed=0, cache_dir=None, n_jobs=1, check_id="B4")
    design = design_b4(ctx)
    memo = ts._null_solutions_memo
    try:
        ts._null_solutions_memo = memo.__wrapped__
        t0 = time.process_time()
        plain = predict_b4(ctx, design)
        t_plain = time.process_time() - t0
    finally:
        ts._null_solutions_memo = memo
    memo.cache_clear()
    t0 = time.process_time()
    shared = predict_b4(ctx, design)
    t_memo = time.process_time() - t0
    info = memo.cache_info()
    return {"profile": profile, "cpu_memo_s": t_memo, "cpu_per_call_s": t_plain, "speedup": t_plain / t_memo,
            "null_solves": info.misses, "null_reads": info.hits + info.misses,
            "identical": pickle.dumps(plain) == pickle.dumps(shared)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="best of 3 repetitions")
    ap.add_argument("--json", default=None, help="write the result dict to this path")
    args = ap.parse_args()
    r = run(quick=not args.full)
    print(f"interpolation error, n={r['n']}, p={r['p']}, {r['n_gammas']} gammas, torch threads {r['torch_threads']}")
    print(f"  fast path (features + Gram + 1 sytrd + grid): {r['time_fast_total_s']:.3f} s")
    print(f"  grid from given features (1 sytrd):           {r['time_errors_given_features_s']:.3f} s")
    print(f"  Gram + one eigendecomposition:               {r['time_eigh_s']:.3f} s  -> x{r['speedup_vs_eigh']:.1f}")
    print(f"  naive per-gamma solves:                      {r['time_naive_s']:.3f} s  -> x{r['speedup_vs_naive']:.1f}")
    print(f"  cached Gram + per-gamma Cholesky:            {r['time_cached_cholesky_s']:.3f} s  -> x{r['speedup_vs_cached_cholesky']:.1f}")
    print(f"  naive incl. features vs fast total:          x{r['speedup_vs_naive_incl_features']:.1f}")
    for k in ("XtX", "XK", "gram"):
        sh = {"XtX": "XtX", "XK": "XK", "gram": "gram"}[k]
        print(f"  GFLOP/s {k:5s}: {r['gflops_' + k]:7.1f}   plain matmul same shape: {r['gflops_plain_matmul_' + sh + '_shape']:7.1f}")
    print(f"  agreement: max rel diff vs naive {r['max_rel_diff_vs_naive']:.2e}, vs cached {r['max_rel_diff_vs_cached']:.2e}, "
          f"vs eigh {r['max_rel_diff_vs_eigh']:.2e}")
    c = r["check_grid"]
    print(f"  B7-sized cell (p={c['p']}, n={c['n']}, {c['n_gammas']} gammas): checks' path {c['time_checks_path_s']:.3f} s, "
          f"per-gamma Cholesky {c['time_cholesky_s']:.3f} s -> x{c['speedup_vs_cholesky']:.2f}")
    b = r["b4_theory"]
    print(f"  B4 theory ({b['profile']}): {b['null_reads']} null-system reads, {b['null_solves']} solves: "
          f"{b['cpu_memo_s']:.2f} s CPU vs {b['cpu_per_call_s']:.2f} s solving each -> x{b['speedup']:.1f} "
          f"(bitwise identical: {b['identical']})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(r, fh, indent=2)


if __name__ == "__main__":
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
