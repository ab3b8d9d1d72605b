"""Whole checks side by side: ``n_jobs`` worker processes (lanes), each running checks one at a time at one thread.

A check spreads only its theory solves and sweeps over the cores, so a run of checks in turn leaves cores idle in
every check's serial parts, and the workers' start-up and idle threads cost CPU (docs/performance.md).  A lane runs
a check as ``--jobs 1`` does: every solve and sweep in its process, torch and BLAS at one thread.  The numbers are
those of ``--jobs 1``; they equal those of checks in turn except in last bits, where a check's own BLAS products ran
on several threads.

Checks that read another check's draws (:meth:`CheckContext.borrowing`) run in the lender's lane (:data:`SHARED`),
so that the draws are made once.  Groups are queued longest first (:data:`COST`), and a free lane takes the next.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Callable, Iterable

from .claim import Claim, claim_of, run_check
from .context import CheckContext
from .results import CheckResult

#: checks run in one lane, the lender first: (lender, borrower, ...)
SHARED = (("B7", "B4"), ("B9", "B10"))

#: seconds of each check in a run of checks in turn at seed 0 (``python -m verify [--profile paper] --seed 0
#: --cache-dir none --json R.json``, 2-core machine, 2026-12-07): the queue's order, not a prediction of times
COST = {
    "quick": {"A2": 21, "A3": 17, "A4": 16, "A6": 6, "B1": 3, "B2": 7, "B4": 4, "B4-rev": 3, "B7": 2, "B8": 2,
              "B9": 25, "B10": 8, "B11": 7},
    "paper": {"A2": 41, "A3": 215, "A4": 59, "A5": 6, "A6": 29, "B1": 57, "B2": 37, "B3": 8, "B4": 128, "B4-rev": 60,
              "B5": 15, "B6": 9, "B8": 71, "B9": 88, "B10": 30, "B11": 25, "B7-lin": 10},
}


def groups(claims: Iterable[Claim], profile: str) -> list[list[Claim]]:
    """``claims`` as lanes' tasks: the checks of a :data:`SHARED` group together (in report order), longest first."""
    claims = list(claims)
    ids = [c.id for c in claims]
    out, taken = [], set()
    for c in claims:
        if c.id in taken:
            continue
        together = next((g for g in SHARED if c.id in g), (c.id,))
        group = [d for d in claims if d.id in together]
        taken.update(d.id for d in group)
        out.append(group)
    costs = COST.get(profile, COST["quick"])
    return sorted(out, key=lambda g: (-sum(costs.get(c.id, 1) for c in g), ids.index(g[0].id)))


def use_lanes(claims: list[Claim], base: CheckContext) -> bool:
    """Whether ``claims`` run in lanes: several jobs, local processes and the CPU (a GPU or a Dask cluster runs
    checks in turn), more than one group, and claims that a fresh process knows, those of :mod:`verify.checks`
    (a claim that a notebook or a test registered runs in this process)."""
    return (base.n_jobs > 1 and base.executor == "local" and base.device == "cpu"
            and len(groups(claims, base.profile)) > 1
            and all(c.design.__module__.startswith(f"{__package__}.checks.") for c in claims))


def _run_group(index: int, ids: list[str], ctx: CheckContext, started: str) -> tuple[int, list[CheckResult]]:
    """Task ``index``: the checks ``ids`` in turn in this worker at one thread (a file ``ID@SEED`` in ``started``
    as each starts)."""
    from numerics.malloc import keep_freed_memory
    from numerics.threads import torch_threads

    keep_freed_memory()
    out = []
    with torch_threads(1):
        for cid in ids:
            (Path(started) / f"{cid}@{ctx.seed}").touch()
            out.append(run_check(claim_of(cid), dataclasses.replace(ctx, seeds_used=[])))
    return index, out


class LanesInterrupted(KeyboardInterrupt):
    """A ``KeyboardInterrupt`` during :func:`lane_map`, the lanes stopped: ``results`` (those that finished, in
    task order) and ``running`` (``(check id, seed)`` of the checks that had started and not finished)."""

    def __init__(self, results: list[CheckResult], running: list[tuple[str, int]]) -> None:
        super().__init__(results, running)
        self.results, self.running = results, running


def lane_map(tasks: list[tuple[CheckContext, list[Claim]]], n_jobs: int,
             on_result: Callable[[CheckResult, CheckContext], None]) -> list[CheckResult]:
    """Each task ``(context, claims)`` run in a lane (the claims in turn), ``n_jobs`` lanes, tasks in the order
    given; ``on_result(result, context)`` sees each result as its task finishes.  The results in task order.
    Raises :class:`LanesInterrupted` on ``KeyboardInterrupt``."""
    from joblib import Parallel, delayed

    if not tasks:
        return []
    done: dict[int, list[CheckResult]] = {}
    with tempfile.TemporaryDirectory(prefix="verify-lanes-") as started:
        try:
            par = Parallel(n_jobs=min(n_jobs, len(tasks)), backend="loky", return_as="generator_unordered")
            calls = (delayed(_run_group)(i, [c.id for c in claims], dataclasses.replace(
                ctx, n_jobs=1, _progress_factory=None, seeds_used=[]), started)
                for i, (ctx, claims) in enumerate(tasks))
            for index, results in par(calls):
                done[index] = results
                for res in results:
                    on_result(res, tasks[index][0])
        except KeyboardInterrupt as exc:
            finished = {(r.id, tasks[i][0].seed) for i, rs in done.items() for r in rs}
            marks = [tuple(p.name.rsplit("@", 1)) for p in Path(started).iterdir()]
            running = [(cid, int(seed)) for cid, seed in marks if (cid, int(seed)) not in finished]
            raise LanesInterrupted([r for i in sorted(done) for r in done[i]], running) from exc
    return [r for i in sorted(done) for r in done[i]]


def run_lanes(claims: list[Claim], base: CheckContext,
              on_result: Callable[[CheckResult], None]) -> list[CheckResult]:
    """``claims`` at ``base``'s seed on ``base.n_jobs`` lanes (:func:`groups`); the results in report order
    (``on_result`` sees each as its group finishes).  Raises :class:`LanesInterrupted` (results in report order)."""
    order = {c.id: i for i, c in enumerate(claims)}
    tasks = [(base, g) for g in groups(claims, base.profile)]
    try:
        results = lane_map(tasks, base.n_jobs, lambda res, ctx: on_result(res))
    except LanesInterrupted as exc:
        exc.results.sort(key=lambda r: order[r.id])
        exc.running.sort(key=lambda r: order[r[0]])
        raise
    return sorted(results, key=lambda r: order[r.id])
