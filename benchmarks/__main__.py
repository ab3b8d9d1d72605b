"""``python -m benchmarks [--quick] [--json PATH] [--only erm interpolation verify precision device] [--tiny] [--verify-profile P] [--precision-claims ID ...] [--device cpu|cuda] [--jobs N] [--budget S]``.

Measures, in ONE process and one run, each workload against its baseline, and prints a table of ratios
plus a JSON summary (stdout, or ``--json PATH``):

- ``matmul``: the machine's float64 ``2048 x 2048`` matmul rate (GFLOP/s, numpy and torch, best of 3),
  always measured first so that every timing of the run can be read against it;
- ``erm`` (:mod:`benchmarks.erm`): paper A, the project's ERM vs the paper's pipeline;
- ``interpolation`` (:mod:`benchmarks.interpolation`, paper B), skipped with a note when absent: the
  50-gamma grid from one eigendecomposition vs per-gamma solves; the achieved GFLOP/s of the feature and
  Gram products as a fraction of the machine's matmul rate above (target >= 50 %); and the time of one
  attention Monte Carlo trial against ``n`` at fixed ``n / p`` with its fitted exponent (expected 3);
- ``precision`` (:mod:`benchmarks.precision`, only when named in ``--only``): ``SE x sqrt(CPU s)`` of every
  claim's headline quantity, and paper A's slope precision under independent vs nested samples across ``M``;
- ``verify``: the wall time of ``python -m verify --profile P`` (a subprocess; ``P = --verify-profile``,
  ``quick`` by default, ``paper`` takes ~19 min on 2 cores) on a fresh, empty sweep cache (a cold run:
  the default cache of an earlier run would make it a measurement of cache reads), with the cost split per
  check read from its ``--json`` output (``results[].id``, ``results[].runtime_s``); skipped with a note
  when it fails to produce its JSON;
- ``device`` (:mod:`benchmarks.device`, only when named in ``--only``): the estimators and paper B's Monte Carlo on
  ``--device`` (default ``cuda`` when present) against the CPU in the same process, correctness to stated
  tolerances and speed, the verdicts of ``python -m verify --only A2 B2 B8`` on both, the quick profile's wall time
  on the device (``--jobs``, default all cores), within ``--budget`` seconds (default 270); ``--json PATH`` is
  written after every section, and the markdown table to ``PATH`` with the suffix ``.md``. ``--device cpu --tiny``
  is its dry run (seconds).

No number here is asserted: a benchmark reports, the reader judges (targets are printed next to the
ratios). ``--tiny`` (or ``BENCHMARKS_TINY=1``) runs everything at smoke-test sizes and skips
``verify`` unless it is named in ``--only``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from . import tiny_mode

WORKLOADS = ("erm", "interpolation", "verify", "precision", "device")
#: run only when named in ``--only``
ON_REQUEST = ("precision", "device")


def matmul_rate(n: int = 2048, repeats: int = 3) -> dict:
    """GFLOP/s of a float64 ``n x n`` matmul (numpy and torch, best of ``repeats``)."""
    import torch

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    flops = 2.0 * n**3

    def best(fn) -> float:
        t_best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            t_best = min(t_best, time.perf_counter() - t0)
        return t_best

    a[:64, :64] @ b[:64, :64]  # warm up the BLAS thread pool
    t_np = best(lambda: a @ b)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    t_t = best(lambda: ta @ tb)
    return dict(n=n, numpy_s=t_np, numpy_gflops=flops / t_np / 1e9, torch_s=t_t,
                torch_gflops=flops / t_t / 1e9, torch_threads=torch.get_num_threads())


INTERPOLATION_TARGET = 20.0  # one eigendecomposition for the 50-gamma grid vs per-gamma solves


def _interpolation_rows(res: dict) -> list[dict]:
    """Table rows from the interpolation benchmark's dict (its own ``rows`` if it has them)."""
    if isinstance(res.get("rows"), list):
        return res["rows"]
    rows = []
    fast = res.get("time_errors_given_features_s")
    for key, base_key, label in (
        ("speedup_vs_naive", "time_naive_s", "interpolation grid vs naive per-gamma solves"),  # target 20x
        ("speedup_vs_cached_cholesky", "time_cached_cholesky_s", "interpolation grid vs cached Gram + Cholesky"),
        ("speedup_vs_eigh", "time_eigh_s", "interpolation grid vs Gram + one eigendecomposition"),
        ("speedup_vs_naive_incl_features", None, "interpolation incl. features vs naive"),
    ):
        if key in res:
            rows.append(dict(
                workload=label,
                project=(f"{fast:.3f} s" if fast is not None and base_key else
                         f"{res.get('time_fast_total_s', float('nan')):.3f} s"),
                baseline=(f"{res[base_key]:.3f} s" if base_key and base_key in res else ""),
                ratio=float(res[key]), lower_bound=False,
                target=INTERPOLATION_TARGET if key == "speedup_vs_naive" else None,
                note=f"n={res.get('n')}, p={res.get('p')}, {res.get('n_gammas')} gammas",
            ))
    cg = res.get("check_grid")
    if isinstance(cg, dict):
        rows.append(dict(workload="interpolation error at B7's largest cell: the checks' path vs per-gamma Cholesky",
                         project=f"{cg['time_checks_path_s']:.3f} s", baseline=f"{cg['time_cholesky_s']:.3f} s",
                         ratio=float(cg["speedup_vs_cholesky"]), lower_bound=False, target=None,
                         note=f"n={cg['n']}, p={cg['p']}, {cg['n_gammas']} gammas"))
    bt = res.get("b4_theory")
    if isinstance(bt, dict):
        rows.append(dict(workload=f"B4 theory ({bt['profile']} profile): one null-system solve per (gamma grid, c)",
                         project=f"{bt['cpu_memo_s']:.2f} s CPU", baseline=f"{bt['cpu_per_call_s']:.2f} s CPU",
                         ratio=float(bt["speedup"]), lower_bound=False, target=None,
                         note=f"{bt['null_solves']} solves for {bt['null_reads']} reads; bitwise identical: "
                              f"{bt['identical']}"))
    fb = res.get("feature_basis")
    if isinstance(fb, dict):
        rows.append(dict(workload=f"{fb['models']} kernels on one p > n draw: features R K (n x n, R^T R = X^T X) "
                                  "vs X K",
                         project=f"{fb['time_basis_s']:.3f} s", baseline=f"{fb['time_features_s']:.3f} s",
                         ratio=float(fb["speedup"]), lower_bound=False, target=None,
                         note=f"n={fb['n']}, p={fb['p']}, 3 gammas; max rel diff {fb['max_rel_diff']:.1e}"))
    for key, val in res.items():  # anything else that looks like a ratio
        if key.startswith("speedup_") and not any(r["ratio"] == val for r in rows):
            rows.append(dict(workload=f"interpolation {key}", project="", baseline="", ratio=float(val),
                             lower_bound=False, target=None, note=""))
    return rows


GFLOPS_TARGET = 0.5  # achieved GFLOP/s of the feature and Gram products >= 50 % of the machine's matmul rate


def _gflops_row(res: dict, mm: dict | None, mm_near: dict | None = None) -> dict | None:
    """Achieved GFLOP/s of the feature and Gram products vs the machine's matmul rate (same run, torch).

    The reference is the larger of the run's first matmul measurement (``mm``) and one taken right before
    the products (``mm_near``): on a shared machine the load changes within a run, and the larger
    reference is the conservative one.
    """
    if mm is None or "gflops_products" not in res:
        return None
    refs = [float(m["torch_gflops"]) for m in (mm, mm_near) if m is not None]
    ach, ref = float(res["gflops_products"]), max(refs)
    parts = ", ".join(f"{k} {res['gflops_' + k]:.1f}" for k in ("XtX", "XK", "gram") if f"gflops_{k}" in res)
    same = res.get("gflops_plain_matmul_products_shapes")
    meas = " and ".join(f"{r:.1f}" for r in refs)
    note = (f"X^T X, X K, Phi Phi^T together (each: {parts} GFLOP/s; best of 3); reference: torch "
            f"{mm['n']}x{mm['n']} float64 matmul, {mm.get('torch_threads')} threads, same run, the larger of "
            f"{meas} GFLOP/s (run start{', right before the products' if mm_near is not None else ''})")
    if same:
        note += f"; plain matmuls of the same shapes {float(same):.1f} GFLOP/s ({ach / float(same):.0%})"
    return dict(workload="interpolation feature + Gram products, achieved GFLOP/s",
                project=f"{ach:.1f} GFLOP/s", baseline=f"{ref:.1f} GFLOP/s (machine matmul)",
                ratio=ach / ref if ref > 0 else None, lower_bound=False, target=GFLOPS_TARGET,
                unit="fraction", note=note)


def _time_vs_n_row(sc: dict) -> dict | None:
    if "exponent" not in sc:
        return None
    times = ", ".join(f"{n}: {t * 1e3:.0f} ms" for n, t in zip(sc["ns"], sc["trial_s"]))
    return dict(workload="attention MC trial time vs n (exponent)",
                project=f"{sc['exponent']:.2f} +- {sc['exponent_se']:.2f}",
                baseline=f"expected {sc['expected_exponent']:g}", ratio=None, lower_bound=False, target=None,
                note=(f"n/p = {sc['ratio']}, {sc['n_gammas']} gammas, features + Gram + 1 tridiagonalisation, best of "
                      f"{sc['repeats']}, {sc.get('torch_threads')} torch thread(s); {times}; two largest n alone: {sc.get('exponent_top', float('nan')):.2f} "
                      "(small n flattens the slope: per-call overheads and the O(n^2) activation)"))


def run_interpolation(quick: bool, tiny: bool, mm: dict | None = None) -> dict:
    try:
        from .interpolation import run as interp_run
    except ImportError as exc:
        return dict(name="interpolation", skipped=True, note=f"benchmarks.interpolation not available: {exc}", rows=[])
    kwargs: dict[str, Any] = {"quick": quick}
    if tiny:
        params = inspect.signature(interp_run).parameters
        for k, v in (("n", 256), ("p", 64), ("n_gammas", 8)):
            if k in params:
                kwargs[k] = v
    mm_near = matmul_rate(mm["n"]) if mm is not None else None  # the reference again, next to the products
    res = interp_run(**kwargs)
    rows = list(_interpolation_rows(res))
    out = dict(name="interpolation", result=res, rows=rows, matmul_adjacent=mm_near)
    g = _gflops_row(res, mm, mm_near)
    if g is not None:
        rows.append(g)
    try:
        from .interpolation import time_vs_n
    except ImportError:
        return out
    ns = (32, 64, 128) if tiny else ((256, 512, 1024, 2048) if quick else (256, 512, 1024, 2048, 4096))
    sc = time_vs_n(ns=ns, n_gammas=8 if tiny else 50, repeats=1 if tiny else 3)
    out["scaling"] = sc
    r = _time_vs_n_row(sc)
    if r is not None:
        rows.append(r)
    return out


VERIFY_PROFILES = ("quick", "paper")
VERIFY_TIMEOUT_S = {"smoke": 600.0, "quick": 1800.0, "paper": 5400.0}


def run_verify(timeout_s: float | None = None, profile: str = "quick", *, device: str | None = None,
               jobs: int | None = None, only: list[str] | tuple[str, ...] | None = None) -> dict:
    """Wall time of ``python -m verify --profile PROFILE`` (cold: a fresh sweep cache) and its per-check cost.

    Parameters
    ----------
    timeout_s : float or None
        Kill the run after this many seconds (default: 1800 for ``quick``, 5400 for ``paper``).
    profile : {"quick", "paper", "smoke"}
        The verify profile to time (``paper``: the papers' scale, ~19 min on 2 cores; ``smoke``: the tests' sizes).
    device, jobs, only : optional
        ``--device``, ``--jobs`` and ``--only`` of the run (default: verify's).

    Returns
    -------
    dict
        ``wall_s``, ``exit_code``, ``checks_s``, ``per_check_s``, ``verdicts`` and ``measured`` (each check's
        ``comparisons[].measured``) by claim id, the table ``rows``; or ``skipped`` with a ``note``.
    """
    if profile not in VERIFY_PROFILES + ("smoke",):
        raise ValueError(f"profile must be one of {VERIFY_PROFILES}, got {profile!r}")
    if timeout_s is None:
        timeout_s = VERIFY_TIMEOUT_S[profile]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "verify.json"
        cmd = [sys.executable, "-m", "verify", "--profile", profile, "--json", str(path),
               "--cache-dir", str(Path(tmp) / "cache")]
        cmd += (["--device", str(device)] if device is not None else []) + (
            ["--jobs", str(int(jobs))] if jobs is not None else []) + (["--only", *only] if only else [])
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                                  cwd=Path(__file__).resolve().parent.parent)
        except subprocess.TimeoutExpired:
            return dict(name="verify", profile=profile, skipped=True,
                        note=f"python -m verify --profile {profile} timed out after {timeout_s:.0f} s", rows=[])
        wall = time.perf_counter() - t0
        if not path.exists():
            tail = (proc.stderr or proc.stdout or "")[-400:]
            return dict(name="verify", profile=profile, skipped=True, wall_s=wall,
                        note=f"python -m verify --profile {profile} produced no JSON (exit {proc.returncode}): {tail}",
                        rows=[])
        doc = json.loads(path.read_text())
    per_check = {r["id"]: float(r.get("runtime_s", 0.0)) for r in doc.get("results", [])}
    verdicts = {r["id"]: r.get("verdict") for r in doc.get("results", [])}
    measured = {r["id"]: [c.get("measured") for c in r.get("comparisons", [])] for r in doc.get("results", [])}
    top = sorted(per_check.items(), key=lambda kv: -kv[1])
    in_checks = sum(per_check.values())
    note = ", ".join(f"{k} {v:.1f}s" for k, v in top[:6])
    rows = [dict(workload=f"python -m verify --profile {profile}", project=f"{wall:.1f} s wall",
                 baseline=f"{in_checks:.1f} s in checks", ratio=None, lower_bound=False, target=None,
                 note=f"exit {proc.returncode}; cold cache; slowest: {note}")]
    for cid, sec in top:  # the per-check split, one row each
        rows.append(dict(workload=f"  verify {profile}: {cid}", project=f"{sec:.1f} s",
                         baseline=f"{sec / in_checks:.0%} of checks" if in_checks > 0 else "", ratio=None,
                         lower_bound=False, target=None, note=str(verdicts.get(cid, ""))))
    return dict(name="verify", profile=profile, wall_s=wall, exit_code=proc.returncode, checks_s=in_checks,
                per_check_s=per_check, verdicts=verdicts, measured=measured, rows=rows)


def _fmt_ratio(row: dict) -> str:
    r = row.get("ratio")
    if r is None:
        return ""
    if row.get("unit") == "fraction":
        txt = f"{r:.0%}"
    else:
        txt = f"{r:.1f}x" if r >= 1 else f"{r:.2g}x"
    return (">= " if row.get("lower_bound") else "") + txt


def _target(row: dict) -> str:
    t = row.get("target")
    if t is None:
        return ""
    r = row.get("ratio")
    met = r is not None and r >= t
    verdict = "met" if met else ("not shown" if row.get("lower_bound") else "missed")
    return f">= {t:.0%} ({verdict})" if row.get("unit") == "fraction" else f">= {t:g}x ({verdict})"


def print_table(summary: dict) -> None:
    """The ratios as a rich table (plain text if rich is missing)."""
    rows = [r for w in summary["workloads"].values() for r in w.get("rows", [])]
    notes = [f"{k}: {w['note']}" for k, w in summary["workloads"].items() if w.get("note")]
    m = summary["matmul"]
    header = (f"machine: {m['n']}x{m['n']} float64 matmul {m['numpy_gflops']:.1f} GFLOP/s (numpy), "
              f"{m['torch_gflops']:.1f} GFLOP/s (torch, {m['torch_threads']} threads); "
              f"profile {summary['profile']}; total {summary['total_s']:.1f} s")
    try:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="Benchmarks: project vs baseline", caption=header)
        for col in ("workload", "project", "baseline", "ratio", "target", "note"):
            table.add_column(col, overflow="fold")
        for r in rows:
            table.add_row(str(r.get("workload", "")), str(r.get("project", "")), str(r.get("baseline", "")),
                          _fmt_ratio(r), _target(r), str(r.get("note", "")))
        con = Console(stderr=False)
        if not con.is_terminal:
            con = Console(stderr=False, width=160)
        con.print(table)
        for n in notes:
            con.print(f"[yellow]note[/] {n}")
    except ImportError:  # pragma: no cover
        print(header)
        for r in rows:
            print(" | ".join([str(r.get("workload")), str(r.get("project")), str(r.get("baseline")),
                              _fmt_ratio(r), _target(r), str(r.get("note"))]))
        for n in notes:
            print("note", n)


def _jsonable(x: Any) -> Any:
    """The summary's JSON form of ``x``: NaN / infinities as ``None``, unknown values kept for ``json.dumps``'s
    ``default=str`` (:func:`numerics.sweep.to_jsonable`)."""
    from numerics.sweep import to_jsonable

    return to_jsonable(x, nonfinite="null", unknown="keep")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="quick sizes (default: full sizes)")
    ap.add_argument("--tiny", action="store_true", help="smoke-test sizes (also BENCHMARKS_TINY=1)")
    ap.add_argument("--json", type=Path, metavar="PATH", help="write the JSON summary to PATH (else to stdout)")
    ap.add_argument("--only", nargs="+", choices=WORKLOADS, metavar="NAME",
                    help=f"run only these workloads ({', '.join(WORKLOADS)})")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's default)")
    ap.add_argument("--verify-timeout", type=float, default=None, metavar="S",
                    help="kill the verify run after S seconds (default 1800 quick, 5400 paper)")
    ap.add_argument("--verify-profile", choices=VERIFY_PROFILES, default="quick",
                    help="profile of the timed verify run (paper: ~19 min on 2 cores); default quick")
    ap.add_argument("--precision-baseline", type=Path, default=None, metavar="DIR",
                    help="precision: also run the claims from this checkout (e.g. `git worktree add DIR COMMIT`), "
                         "as the baseline of the ratios")
    ap.add_argument("--precision-claims", nargs="+", default=None, metavar="ID",
                    help="precision: only these claims, and no sampling-design comparison (e.g. A2 A3 A4)")
    ap.add_argument("--device", default=None, metavar="DEV",
                    help="device: the torch device checked against the CPU (cpu, cuda, cuda:K; default cuda when "
                         "present, else cpu)")
    ap.add_argument("--jobs", type=int, default=None, metavar="N",
                    help="device: --jobs of its verify runs (default: all cores)")
    ap.add_argument("--budget", type=float, default=None, metavar="S",
                    help="device: seconds for the whole check (default 270; speed rows that would overrun are "
                         "skipped, the timed profile gets what is left)")
    args = ap.parse_args(argv)
    args.command = "python -m benchmarks " + " ".join(sys.argv[1:] if argv is None else argv)
    _check_device_options(ap, args)

    import torch

    threads_before = torch.get_num_threads()
    if args.threads is not None:
        if args.threads < 1:
            ap.error("--threads must be >= 1")
        torch.set_num_threads(args.threads)
    try:
        return _run(args, torch)
    finally:
        torch.set_num_threads(threads_before)


def _check_device_options(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--device`` (format, and a CUDA device present: :func:`numerics.check_device`), ``--jobs >= 1`` and
    ``--budget > 0``; the device's default (``cuda`` when present)."""
    import torch

    from numerics import check_device

    if args.device is None:
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        args.device = check_device("--device", args.device)
    except (TypeError, ValueError) as exc:
        ap.error(str(exc))
    if args.jobs is not None and args.jobs < 1:
        ap.error("--jobs must be >= 1")
    if args.budget is not None and not args.budget > 0:
        ap.error("--budget must be > 0")


def _write_json(path: Path, summary: dict) -> None:
    """``summary`` as JSON at ``path``, replaced whole (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(_jsonable(summary), indent=2, default=str))
    os.replace(tmp, path)


def _run_device(args: argparse.Namespace, tiny: bool, log: Any, partial: dict) -> dict:
    """The ``device`` workload; with ``--json`` the summary so far is written after every section."""
    from .device import run as device_run

    def checkpoint(doc: dict) -> None:
        if args.json:
            _write_json(args.json, dict(partial, partial=True, workloads={**partial["workloads"], "device": doc}))

    return device_run(args.device, tiny=tiny, jobs=args.jobs, budget_s=args.budget, run_verify=run_verify,
                      checkpoint=checkpoint, log=log)


def _run(args: argparse.Namespace, torch: Any) -> int:
    tiny = tiny_mode(True if args.tiny else None)
    quick = args.quick or tiny
    # precision runs every claim once more per variant (~5 min CPU at quick): only when named
    selected = list(args.only) if args.only else [w for w in WORKLOADS
                                                  if w not in ON_REQUEST and not (tiny and w == "verify")]

    try:
        from rich.console import Console

        log = Console(stderr=True).log
    except ImportError:  # pragma: no cover
        log = lambda s: print(s, file=sys.stderr)  # noqa: E731

    t_start = time.perf_counter()
    mm = matmul_rate(256 if tiny else 2048)
    workloads: dict[str, dict] = {}
    machine = dict(python=platform.python_version(), platform=platform.platform(), cpu_count=os.cpu_count(),
                   torch=torch.__version__, numpy=np.__version__)
    profile = "tiny" if tiny else ("quick" if quick else "full")
    for name in selected:
        log(f"benchmark: {name}")
        t0 = time.perf_counter()
        try:
            if name == "erm":
                from .erm import run as erm_run

                workloads[name] = erm_run(quick=quick, tiny=tiny, seed=args.seed, log=log)
            elif name == "interpolation":
                workloads[name] = run_interpolation(quick, tiny, mm)
            elif name == "verify":
                workloads[name] = run_verify(args.verify_timeout, args.verify_profile)
            elif name == "precision":
                from .precision import run as precision_run

                from .precision import DEFAULT_VARIANTS, ROOT_KEY

                variants = list(DEFAULT_VARIANTS)
                if args.precision_baseline is not None:  # the checkout before a change first: the ratios' base
                    variants.insert(0, ("baseline", {ROOT_KEY: str(args.precision_baseline.resolve())}))
                workloads[name] = precision_run(quick=quick, tiny=tiny, seed=args.seed, variants=variants, log=log,
                                                claims=args.precision_claims,
                                                designs=not args.precision_claims)
            elif name == "device":
                workloads[name] = _run_device(args, tiny, log, dict(profile=profile, seed=args.seed, machine=machine,
                                                                    matmul=mm, workloads=workloads))
        except Exception as exc:  # a failing workload is reported, the others still run
            workloads[name] = dict(name=name, error=f"{type(exc).__name__}: {exc}",
                                   traceback=traceback.format_exc(), note=f"ERROR {type(exc).__name__}: {exc}",
                                   rows=[])
        workloads[name]["wall_s"] = workloads[name].get("wall_s", time.perf_counter() - t0)
    summary = dict(profile=profile, seed=args.seed, machine=machine, matmul=mm, workloads=workloads,
                   total_s=time.perf_counter() - t_start)
    print_table(summary)
    if "rows" in workloads.get("device", {}) and "machine" in workloads["device"]:  # the device check's table
        from datetime import datetime, timezone

        from .device import markdown

        md = markdown(workloads["device"], args.command, datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
        workloads["device"]["markdown"] = md
        print(md)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.with_suffix(".md").write_text(md)
    if args.json:
        _write_json(args.json, summary)
    else:
        print(json.dumps(_jsonable(summary), indent=2, default=str))
    return 1 if any("error" in w for w in workloads.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
