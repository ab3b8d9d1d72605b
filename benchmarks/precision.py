"""Precision per CPU-second: how much certainty each check's headline quantity buys per second of compute.

A verdict is a statistical test, so its power is set by the standard error of what it judges; statistical
power costs compute. The figure of merit of a design is ``SE x sqrt(CPU s)`` (lower is better): for a Monte
Carlo estimate the SE falls like ``1 / sqrt(replicates)`` while the CPU time grows like ``replicates``, so the
product does not depend on how many replicates were run, only on how much each one is worth. Halving it is
worth four times the compute.

Two measurements, in one process:

1. :func:`check_precision`: every claim of a ``verify`` profile run alone in a subprocess,
   ``python -m verify --profile P --only ID --jobs 1`` on a fresh cache (one worker: the CPU time is the
   child's user + system time from ``resource.getrusage(RUSAGE_CHILDREN)``, all its threads included, minus
   the CPU time of a subprocess that only imports the checks). For each claim, its headline comparisons (or,
   when it flags none, its least precise one: the largest SE relative to the margin, or to ``|predicted|``)
   give ``SE``; the row prints ``SE``, ``CPU s`` and ``SE x sqrt(CPU s)``. Every *variant* (a label and
   environment variables; :data:`ROOT_KEY` names another checkout, e.g. the commit before a change:
   ``python -m benchmarks --only precision --precision-baseline DIR``) runs the same claims, so that the
   before / after columns come from one run on one machine.
2. :func:`slope_designs`: paper A's slopes under two sampling designs of the same replicate count:
   independent samples at every ``M`` level (the design the checks use) and nested samples (the sample at
   a smaller ``M`` is a prefix of the sample at the largest ``M`` of the same replicate, a common suggestion
   for variance reduction). Each replicate gives its own OLS slope over the levels, so its slope SD is the
   precision of one replicate; ``SE x sqrt(CPU s) = SD(slope) x sqrt(CPU s per replicate)`` for any number
   of replicates. The groups are those of the ``A3`` design at the quick profile.

Nothing is asserted: the reader judges (``python -m benchmarks --only precision``).
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from . import tiny_mode

__all__ = ["run", "check_precision", "slope_designs", "headline_quantities", "DEFAULT_VARIANTS", "ROOT_KEY"]

REPO = Path(__file__).resolve().parent.parent

#: the variants measured by default: the code as it is
DEFAULT_VARIANTS: tuple[tuple[str, dict[str, str]], ...] = (("current", {}),)


def _child_cpu() -> float:
    """User + system CPU seconds of every terminated, waited-for child of this process so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


#: a variant's environment key naming another checkout of the project (e.g. ``git worktree add DIR COMMIT``):
#: its commands run there, with that checkout first on ``PYTHONPATH`` (the code before a change, in the same run)
ROOT_KEY = "PRECISION_ROOT"


def _run_child(cmd: list[str], env: dict[str, str], timeout_s: float) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run ``cmd``; return the process, its wall time and its CPU time (its threads and reaped children)."""
    env = dict(env)
    root = env.pop(ROOT_KEY, None)
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(root)] + [x for x in [os.environ.get("PYTHONPATH")] if x])
    cpu0, t0 = _child_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=root or REPO,
                          env={**os.environ, **env})
    return proc, time.perf_counter() - t0, _child_cpu() - cpu0


def startup_cpu(env: dict[str, str] | None = None) -> float:
    """CPU seconds of a subprocess that only imports every check (subtracted from each check's CPU time)."""
    _, _, cpu = _run_child([sys.executable, "-c", "import verify.checks"], env or {}, 300.0)
    return cpu


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def headline_quantities(result: dict) -> list[dict]:
    """The comparisons of one report result whose SE the row reports.

    The claim's headline comparisons when it flags any (with a numeric SE); otherwise the single least
    precise comparison: the largest SE relative to its equivalence margin, or to ``|predicted|`` when there
    is none. Comparisons without a numeric SE (exact checks) are never chosen; a claim with none gives ``[]``.
    """
    comps = [c for c in result.get("comparisons", []) if _number(c.get("uncertainty")) is not None]
    heads = [c for c in comps if c.get("headline")]
    if heads:
        return heads

    def relative_se(c: dict) -> float:
        scale = _number(c.get("margin")) or abs(_number(c.get("predicted")) or 0.0)
        return float(c["uncertainty"]) / scale if scale > 0 else 0.0

    return [max(comps, key=relative_se)] if comps else []


def _check_rows(cid: str, variant: str, doc: dict, cpu: float, wall: float) -> list[dict]:
    res = next((r for r in doc.get("results", []) if r.get("id") == cid), None)
    if res is None:
        return [dict(check=cid, variant=variant, quantity="(no result)", se=None, cpu_s=cpu, wall_s=wall,
                     merit=None, verdict=None)]
    quantities = headline_quantities(res)
    if not quantities:
        return [dict(check=cid, variant=variant, quantity="(no comparison with an SE)", se=None, cpu_s=cpu,
                     wall_s=wall, merit=None, verdict=res.get("verdict"))]
    return [dict(check=cid, variant=variant, quantity=str(c.get("name")), se=float(c["uncertainty"]),
                 cpu_s=cpu, wall_s=wall, merit=float(c["uncertainty"]) * math.sqrt(max(cpu, 0.0)),
                 verdict=res.get("verdict"), outcome=c.get("outcome"))
            for c in quantities]


def check_precision(ids: Sequence[str], profile: str = "quick", seed: int = 0,
                    variants: Sequence[tuple[str, dict[str, str]]] = DEFAULT_VARIANTS,
                    timeout_s: float = 1800.0, log: Callable[[str], None] | None = None) -> dict:
    """``SE``, ``CPU s`` and ``SE x sqrt(CPU s)`` of each claim's headline quantity, per variant.

    Parameters
    ----------
    ids : sequence of str
        Claim ids (``python -m verify --list``).
    profile : str
        ``verify`` profile.
    seed : int
        Base seed of the runs (the same for every variant: the variants then see the same draws).
    variants : sequence of (label, env)
        Each runs every claim with these environment variables set.
    timeout_s : float
        Per-claim limit; a claim that exceeds it gives a row saying so.
    log : callable, optional
        Progress messages.
    """
    rows: list[dict] = []
    startup = {label: startup_cpu(env) for label, env in variants}
    for label, env in variants:
        for cid in ids:
            if log:
                log(f"precision: {cid} ({label})")
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "r.json"
                cmd = [sys.executable, "-m", "verify", "--profile", profile, "--seed", str(seed), "--only", cid,
                       "--jobs", "1", "--json", str(out), "--cache-dir", str(Path(tmp) / "cache")]
                try:
                    proc, wall, cpu = _run_child(cmd, env, timeout_s)
                except subprocess.TimeoutExpired:
                    rows.append(dict(check=cid, variant=label, quantity=f"(timed out after {timeout_s:.0f} s)",
                                     se=None, cpu_s=None, wall_s=None, merit=None, verdict=None))
                    continue
                if not out.exists():
                    tail = (proc.stderr or proc.stdout or "")[-300:]
                    rows.append(dict(check=cid, variant=label, quantity=f"(no JSON, exit {proc.returncode}: {tail})",
                                     se=None, cpu_s=cpu, wall_s=wall, merit=None, verdict=None))
                    continue
                doc = json.loads(out.read_text())
            rows.extend(_check_rows(cid, label, doc, max(cpu - startup[label], 0.0), wall))
    return dict(profile=profile, seed=seed, startup_cpu_s=startup, variants=[v[0] for v in variants], rows=rows)


# --------------------------------------------------------------------------------------- sampling designs
def _fit_error(model: Any, X: np.ndarray, Y: np.ndarray, K: int, cfg: dict, rep: int) -> float:
    """One fit of the A3 trial's estimator on ``(X, Y)`` and its Monte Carlo ``L2(rho)`` error."""
    from numerics.estimator import PairwiseInteractionEstimator
    from verify.checks import _paper_a_numerics as pan

    d = int(cfg["d"])
    est = PairwiseInteractionEstimator(
        rank=int(cfg["r"]), degree=int(cfg["P"]) - 2, n_intervals=int(K), restarts=int(cfg["restarts"]),
        max_iter=int(cfg["max_iter"]), ridge=float(cfg["ridge"]) if d > 1 else 1e-12, range_quantile=pan.RANGE_Q,
        random_state=rep)
    est.fit(X, Y)
    return est.l2_error(model, n_pairs=int(cfg["n_pairs"]), rng=rep + 1)[0]


def _design_errors(model: Any, Ms: Sequence[int], Ks: Sequence[int], cfg: dict, reps: int,
                   nested: bool, seed: int) -> tuple[np.ndarray, float]:
    """Errors ``(reps, levels)`` of one design and its CPU seconds (this process, ``time.process_time``)."""
    errors = np.empty((reps, len(Ms)))
    t0 = time.process_time()
    for rep in range(reps):
        gen = np.random.default_rng([seed, rep, int(nested)])
        parent = model.sample(int(Ms[-1]), gen) if nested else None
        for j, (M, K) in enumerate(zip(Ms, Ks)):
            X, Y = (parent[0][:M], parent[1][:M]) if nested else model.sample(int(M), gen)
            errors[rep, j] = _fit_error(model, X, Y, K, cfg, rep)
    return errors, time.process_time() - t0


def _replicate_slopes(Ms: Sequence[int], errors: np.ndarray) -> np.ndarray:
    """Each replicate's OLS slope of ``log error`` on ``log M`` (their mean is the slope of the level means)."""
    x = np.log(np.asarray(Ms, dtype=float))
    xc = x - x.mean()
    return np.log(errors) @ xc / float(xc @ xc)


def slope_designs(labels: Sequence[str] = ("d=1, sigma/10", "d=5, balanced"), reps: int = 30,
                  profile: str = "quick", seed: int = 0, log: Callable[[str], None] | None = None) -> dict:
    """Independent vs nested samples across ``M``: slope SD per replicate and ``SE x sqrt(CPU s)``.

    Parameters
    ----------
    labels : sequence of str
        Groups of the ``A3`` design (their labels in the report).
    reps : int
        Replicates per design (the slope SDs have ``reps - 1`` degrees of freedom).
    profile : str
        ``verify`` profile whose ``A3`` design gives the groups (``M`` and ``K`` levels, noise, options).
    seed : int
        Base of the replicate seeds (``numpy.random.default_rng([seed, replicate, nested])``).
    log : callable, optional
        Progress messages.
    """
    from scipy import stats

    from numerics.threads import torch_threads
    from verify.checks import _paper_a_numerics as pan
    from verify.checks.paper_a_rates import design_a3
    from verify.context import CheckContext

    design = design_a3(CheckContext(profile=profile, seed=seed))
    rows = []
    with torch_threads(1):  # the checks' sweeps pin one intra-op thread per worker too
        for g in design.groups:
            if g.label not in labels:
                continue
            cfg = {**g.config, **design.trial_extra}
            model = pan.model_for({**cfg, "M": g.M[-1], "K": g.K[-1]})
            per = {}
            for nested in (False, True):
                if log:
                    log(f"precision: slope designs {g.label} ({'nested' if nested else 'independent'})")
                errors, cpu = _design_errors(model, g.M, g.K, cfg, reps, nested, seed)
                slopes = _replicate_slopes(g.M, errors)
                sd = float(slopes.std(ddof=1))
                corr = np.corrcoef(np.log(errors).T)
                per[nested] = dict(group=g.label, design="nested" if nested else "independent", reps=reps,
                                   mean_slope=float(slopes.mean()), sd_slope=sd, se_slope=sd / math.sqrt(reps),
                                   cpu_s=cpu, cpu_per_replicate_s=cpu / reps,
                                   merit=sd * math.sqrt(cpu / reps),
                                   adjacent_log_error_corr=float(np.mean(np.diag(corr, 1))))
            ratio = per[False]["sd_slope"] ** 2 / per[True]["sd_slope"] ** 2
            lo, hi = (ratio / stats.f.ppf(q, reps - 1, reps - 1) for q in (0.975, 0.025))
            for nested in (False, True):
                per[nested]["variance_ratio_indep_over_nested"] = ratio
                per[nested]["variance_ratio_ci95"] = (float(lo), float(hi))
                rows.append(per[nested])
    return dict(profile=profile, seed=seed, levels={g.label: list(g.M) for g in design.groups if g.label in labels},
                rows=rows)


# --------------------------------------------------------------------------------------------- runner
#: claims measured by default (every claim with a statistical verdict; the exact A1 has no SE)
CHECK_IDS = ("A2", "A3", "A4", "A5", "A6", "B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8")


def _fmt(x: float | None, spec: str) -> str:
    return "" if x is None else format(x, spec)


def _check_table_rows(res: dict) -> list[dict]:
    base = {}
    out = []
    for r in res["rows"]:
        key = (r["check"], r["quantity"])
        if r["variant"] == res["variants"][0]:
            base[key] = r.get("merit")
        b = base.get(key)
        ratio = b / r["merit"] if (b and r.get("merit") and r["variant"] != res["variants"][0]) else None
        out.append(dict(workload=f"precision {r['check']} ({r['variant']})",
                        project=f"SE {_fmt(r.get('se'), '.3g')} x sqrt({_fmt(r.get('cpu_s'), '.1f')} CPU s)",
                        baseline=f"= {_fmt(r.get('merit'), '.3g')}", ratio=ratio, lower_bound=False, target=None,
                        note=f"{r['quantity'][:70]}; {r.get('verdict')}"))
    return out


def _design_table_rows(res: dict) -> list[dict]:
    out = []
    for r in res["rows"]:
        lo, hi = r["variance_ratio_ci95"]
        out.append(dict(workload=f"precision A3 slope, {r['design']} samples ({r['group']})",
                        project=f"SD {r['sd_slope']:.4f} x sqrt({r['cpu_per_replicate_s']:.2f} CPU s)",
                        baseline=f"= {r['merit']:.4f}", ratio=None, lower_bound=False, target=None,
                        note=(f"{r['reps']} replicates, mean slope {r['mean_slope']:.4f}; variance indep/nested "
                              f"{r['variance_ratio_indep_over_nested']:.2f} [95% {lo:.2f}, {hi:.2f}]; adjacent "
                              f"log-error correlation {r['adjacent_log_error_corr']:.2f}")))
    return out


def run(quick: bool = True, tiny: bool | None = None, seed: int = 0,
        variants: Sequence[tuple[str, dict[str, str]]] = DEFAULT_VARIANTS,
        log: Callable[[str], None] | None = None, claims: Sequence[str] | None = None,
        designs: bool = True) -> dict:
    """Both measurements; ``tiny``: the smoke profile and two claims (numbers meaningless).

    ``claims``: only these claims (default :data:`CHECK_IDS`); ``designs=False`` skips :func:`slope_designs`
    (e.g. the paper profile's A2-A4 before / after a design change: ``--precision-claims A2 A3 A4``).
    """
    if tiny_mode(tiny):
        checks = check_precision(("A2", "B3"), profile="smoke", seed=seed, variants=variants, log=log)
        designs = slope_designs(("d=1, sigma/10",), reps=3, profile="smoke", seed=seed, log=log)
    else:
        checks = check_precision(tuple(claims) if claims else CHECK_IDS, profile="quick" if quick else "paper",
                                 seed=seed, variants=variants, log=log)
        designs = (slope_designs(reps=30 if quick else 60, profile="quick", seed=seed, log=log) if designs
                   else None)
    return dict(name="precision", checks=checks, designs=designs,
                rows=_check_table_rows(checks) + (_design_table_rows(designs) if designs else []))
