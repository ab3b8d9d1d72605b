"""``python -m benchmarks.work_profile [--profile quick|paper] [--seed S] [--only ID ...] [--jobs N] [--json PATH]``:
where a report's CPU time goes, per check and per kind of work.

Each check runs as in a lane of ``python -m verify`` (one process, one thread, no cache, the checks that share draws
in one process in report order), under :mod:`cProfile`.  Two splits of its CPU seconds:

- by **stage** of :meth:`verify.claim.Claim.run`, timed around each part: ``design``, ``prediction`` (``predict``:
  theory, and paper A's finite-M model), ``simulation`` (``simulate`` and ``read``), ``judging`` (``judge`` and
  ``describe``); figures are not drawn (the default run draws none);
- by **kind of work**, in percent of the profiled time: each function's own time (cProfile's ``tottime``) goes to
  the first kind in :data:`KINDS` whose pattern matches its name (or, for the last kinds, its file).  A Python
  function that runs tensor algebra inline (``A @ B`` is no call cProfile sees) counts as the kind its name says, so
  the split is approximate; ``other`` is what no rule matched.

cProfile adds its own overhead to Python-heavy code, so a check's seconds here exceed the report's ``runtime_s``;
the table gives both.  The JSON (``--json``) holds the own time of each function above :data:`LISTED_S` (the rest
summed by kind), so that ``--table`` classifies a record again with the rules of the day.  ``--jobs N`` runs N
checks (or shared groups) at a time, like the lanes.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import platform
import pstats
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

#: kinds of work, first match wins: (name, what the pattern reads: a profiled function's "function" name or its
#: "file" path, pattern)
KINDS = (
    ("draws", "function", r"standard_normal|\bnormal\b|permutation|\bchoice\b|\bintegers\b|default_rng|spawn"
                          r"|draw_sample|draw_labels|sample_tokens|sample_pairs|_symmetric_noise_batch|SeedSequence"),
    ("factorisations", "function", r"cholesky(?!_solve)|eigh|eigvalsh|eigvals|\bsvd\b|lstsq|\bqr\b|sytrd"
                                   r"|tridiagonal_rows|pinv|null_space|_positive_eigenpairs"),
    ("solves", "function", r"solve|ptsv|trtrs"),
    ("products", "function", r"gram|matmul|bmm|\bmm\b|addmm|einsum|\bdot\b|csr_matmat|matvec|_shared_batch"
                             r"|_one_model_batch|_softmax_batch|strong_alignment_mc|^rows$|^tangent$|feature|_scores"
                             r"|spike_outer|spike_projections|bilinear|tensordot|_pair_values|kernel_batch"
                             r"|gaussian_equivalent_kernel"),
    ("special functions and bases", "function", r"\berf|tanh|expm1|\bexp\b|softmax|evaluate_spline"
                                                r"|_apply_activation|legvander|_legendre|_basis|^fn$|phi_star"),
    ("elementwise and indexing", "function", r"TensorBase|torch\.(mul|add|sub|div|where|clamp|pow|abs|sum|stack"
                                             r"|cat)\b|ufunc|_multiarray_umath"),
    ("theory (Python)", "file", r"(^|/)theory/"),
    ("numpy and scipy (Python level)", "file", r"(^|/)(numpy|scipy)/"),
    ("sympy and mpmath", "file", r"(^|/)(sympy|mpmath)/"),
    ("judging and reporting", "file", r"(^|/)verify/"),
)
#: functions with less own time than this (seconds) are summed by kind in a record ("unlisted_s")
LISTED_S = 0.01
OTHER = "other"
STAGES = {"design": "design", "predict": "prediction", "simulate": "simulation", "read": "simulation",
          "judge": "judging", "describe": "judging"}


def kind_of(path: str, function: str) -> str:
    """The kind of work of a profiled function (its file ``path`` and ``function`` name, :data:`KINDS`)."""
    for kind, field, pattern in KINDS:
        if re.search(pattern, function if field == "function" else path):
            return kind
    return OTHER


def _timed(fn: Callable, stage: str, spent: dict[str, float]) -> Callable:
    def wrapper(*args: Any) -> Any:
        t0 = time.process_time()
        try:
            return fn(*args)
        finally:
            spent[stage] = spent.get(stage, 0.0) + time.process_time() - t0
    return wrapper


def _short(path: str) -> str:
    """A profiled file as a path inside its package's folder (the repository or ``site-packages``)."""
    for root in (str(Path(__file__).resolve().parents[1]) + "/", "site-packages/"):
        if root in path:
            return path.split(root, 1)[1]
    return path


def _functions(profile: cProfile.Profile) -> tuple[list[list], dict[str, float]]:
    """``[file, function, line, own seconds]`` of the functions with at least :data:`LISTED_S` of own time, largest
    first, and the own time of the others by kind of work."""
    rows, unlisted = [], {}
    for (path, line, func), (_, _, tottime, _, _) in pstats.Stats(profile).stats.items():
        if tottime >= LISTED_S:
            rows.append([_short(path), func, line, round(tottime, 3)])
        else:
            kind = kind_of(path, func)
            unlisted[kind] = unlisted.get(kind, 0.0) + tottime
    return sorted(rows, key=lambda r: -r[3]), {k: round(v, 3) for k, v in unlisted.items()}


def kinds_of(check: dict) -> dict[str, float]:
    """Own seconds of a check's record by kind of work: its listed functions by today's rules, plus the others."""
    out = dict(check["unlisted_s"])
    for path, func, _, seconds in check["functions"]:
        kind = kind_of(path, func)
        out[kind] = out.get(kind, 0.0) + seconds
    return out


def _profile_group(ids: list[str], profile: str, seed: int) -> list[dict]:
    """The checks ``ids`` in turn in this process, as a lane runs them, each under cProfile."""
    import matplotlib
    from threadpoolctl import threadpool_limits

    from verify.claim import claim_of, run_check
    from verify.context import CheckContext

    matplotlib.use("Agg")
    base = CheckContext(profile=profile, seed=seed, cache_dir=None, n_jobs=1, memo={})
    out = []
    for cid in ids:
        claim, spent = claim_of(cid), {}
        wrapped = dataclasses.replace(claim, **{f: _timed(getattr(claim, f), stage, spent)
                                                for f, stage in STAGES.items()})
        prof = cProfile.Profile()
        t0 = time.process_time()
        with threadpool_limits(1):
            prof.enable()
            res = run_check(wrapped, dataclasses.replace(base, seeds_used=[]))
            prof.disable()
        functions, unlisted = _functions(prof)
        out.append({"id": cid, "verdict": str(res.verdict.value), "runtime_s": round(res.runtime_s, 2),
                    "cpu_s": round(time.process_time() - t0, 2),
                    "stages": {k: round(v, 2) for k, v in spent.items()}, "functions": functions,
                    "unlisted_s": unlisted})
    return out


def profile_checks(profile: str = "quick", seed: int = 0, only: list[str] | None = None, jobs: int = 2) -> dict:
    """Per check: verdict, ``runtime_s`` (under the profiler), CPU seconds, the stage and kind splits."""
    from joblib import Parallel, delayed

    from verify.claim import select
    from verify.lanes import groups

    tasks = [[c.id for c in g] for g in groups(select(only), profile)]
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    results = Parallel(n_jobs=min(jobs, len(tasks)), backend="loky")(
        delayed(_profile_group)(ids, profile, seed) for ids in tasks)
    order = [c.id for c in select(only)]
    checks = sorted((r for rs in results for r in rs), key=lambda r: order.index(r["id"]))
    return {"profile": profile, "seed": seed, "started_utc": started, "platform": platform.platform(),
            "checks": checks}


def table(doc: dict) -> str:
    """Markdown: per check its CPU seconds, their split by stage (percent of them) and by kind of work (percent of the
    profiled time)."""
    kinds = [k for k, _, _ in KINDS] + [OTHER]
    stages = list(dict.fromkeys(STAGES.values()))
    head = (f"Profile `{doc['profile']}`, seed {doc['seed']}, " + (f"commit {doc['commit']}, " if doc.get("commit")
                                                                     else "")
            + f"{doc['started_utc']}, {doc['platform']}; "
            "one thread per check. Stages in percent of the check's CPU seconds, kinds of work in percent of its "
            "profiled time (cProfile).")
    cols = ["check", "CPU s", "report s", *stages, *kinds]
    lines = [head, "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    total = {"cpu": 0.0, "profiled": 0.0, **{k: 0.0 for k in stages + kinds}}
    for c in doc["checks"]:
        own = kinds_of(c)
        cpu, prof = c["cpu_s"] or 1e-9, sum(own.values()) or 1e-9
        total["cpu"] += c["cpu_s"]
        total["profiled"] += prof
        row = [c["id"], f"{c['cpu_s']:.1f}", f"{c['runtime_s']:.1f}"]
        for s in stages:
            total[s] += c["stages"].get(s, 0.0)
            row.append(f"{100 * c['stages'].get(s, 0.0) / cpu:.0f}")
        for k in kinds:
            total[k] += own.get(k, 0.0)
            row.append(f"{100 * own.get(k, 0.0) / prof:.0f}")
        lines.append("| " + " | ".join(row) + " |")
    cpu, prof = total["cpu"] or 1e-9, total["profiled"] or 1e-9
    lines.append("| all | " + f"{total['cpu']:.1f} | | " + " | ".join(
        [f"{100 * total[s] / cpu:.0f}" for s in stages] + [f"{100 * total[k] / prof:.0f}" for k in kinds]) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.work_profile", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="quick", choices=("smoke", "quick", "paper"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="+", metavar="ID")
    ap.add_argument("--jobs", type=int, default=2, help="checks (or shared groups) profiled at a time (default 2)")
    ap.add_argument("--json", type=Path, metavar="PATH", help="also write the per-check record as JSON")
    ap.add_argument("--table", type=Path, metavar="JSON", help="print the table of a record written by --json")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs must be >= 1, got {args.jobs}")
    if args.only and not args.table:
        from verify.claim import select

        try:
            select(args.only)
        except ValueError as exc:
            ap.error(f"--only: {exc}")
    doc = json.loads(args.table.read_text()) if args.table else profile_checks(args.profile, args.seed, args.only,
                                                                              args.jobs)
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1))
    print(table(doc), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
