"""Whole checks side by side: ``n_jobs`` worker processes (lanes), each running checks one at a time at one thread.

A check spreads only its theory solves and sweeps over the cores, so a run of checks in turn leaves cores idle in
every check's serial parts, and the workers' start-up and idle threads cost CPU (docs/performance.md).  A lane runs
a check as ``--jobs 1`` does: every solve and sweep in its process, torch and BLAS at one thread
(:func:`verify.claim.run_check`, in lanes or in turn), so the numbers do not depend on how the checks are spread.

Checks that read another check's draws (:meth:`CheckContext.borrowing`) run in the lender's lane (:data:`SHARED`),
so that the draws are made once.  Groups are queued longest first (:data:`COST`), and a free lane takes the next."""

from __future__ import annotations

import dataclasses
import pickle
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterable

from .claim import Claim, claim_of, run_check
from .context import CheckContext
from .results import CheckResult

#: checks run in one task of a lane, in report order: a check and those that read its draws
SHARED = (("B7", "B4"), ("B9", "B10"))

#: seconds of each check in turn at seed 0, no cache, 2 cores: the queue's order, not a prediction of times
COST = {
    "quick": {"A2": 21, "A3": 17, "A4": 16, "A6": 6, "B1": 3, "B2": 7, "B4": 4, "B7": 2, "B8": 2,
              "B9": 25, "B10": 8, "B11": 7},
    "paper": {"A2": 41, "A3": 146, "A4": 59, "A5": 6, "A6": 29, "B1": 57, "B2": 37, "B3": 8, "B4": 128, "B5": 15,
              "B6": 9, "B8": 71, "B9": 88, "B10": 30, "B11": 25},
}


def groups(claims: Iterable[Claim], profile: str) -> list[list[Claim]]:
    """``claims`` as lanes' tasks: the checks of a :data:`SHARED` group together (in report order), longest first."""
    out: dict[tuple, list[Claim]] = {}
    for c in claims:
        out.setdefault(next((g for g in SHARED if c.id in g), (c.id,)), []).append(c)
    costs = COST.get(profile, COST["quick"])
    return sorted(out.values(), key=lambda g: -sum(costs.get(c.id, 1) for c in g))  # stable: equals in report order


def use_lanes(claims: list[Claim], base: CheckContext, copies: int = 1) -> bool:
    """Whether ``claims`` (``copies`` times: the seeds of a calibration) run in lanes: several jobs, local processes
    and the CPU (a GPU or a Dask cluster runs checks in turn), more than one task, and the claims a fresh process
    registers, those of :mod:`verify.checks` (a claim that a notebook or a test registered runs in this process)."""
    fields = ("design", "predict", "simulate", "read", "judge", "describe", "figure")
    return (base.n_jobs > 1 and base.executor == "local" and base.device == "cpu"
            and len(groups(claims, base.profile)) * copies > 1
            and all(claim_of(c.id) is c and all(getattr(c, f).__module__.startswith(f"{__package__}.")
                                                 for f in fields) for c in claims))


def _run_group(index: int, ids: list[str], ctx: CheckContext, marks: str) -> tuple[int, list[CheckResult]]:
    """Task ``index``: the checks ``ids`` in turn in this worker (:func:`verify.claim.run_check`: one thread); in
    ``marks`` a file ``ID@SEED`` as each starts and ``ID@SEED.done`` (its pickled result) as each finishes."""
    import matplotlib
    from numerics.malloc import apply_inherited

    matplotlib.use("Agg")
    apply_inherited()
    out = []
    for cid in ids:
        mark = Path(marks) / f"{cid}@{ctx.seed}"
        mark.touch()
        out.append(run_check(claim_of(cid), dataclasses.replace(ctx, seeds_used=[])))
        Path(f"{mark}.done").write_bytes(pickle.dumps(out[-1]))
    return index, out


class LanesInterrupted(KeyboardInterrupt):
    """A ``KeyboardInterrupt`` during :func:`lane_map`, the lanes stopped: ``running`` holds ``(check id, seed,
    seconds since it started)`` of each check that had started and not finished."""

    def __init__(self, running: list[tuple[str, int, float]]) -> None:
        super().__init__(running)
        self.running = running


def lane_map(tasks: list[tuple[CheckContext, list[Claim]]], n_jobs: int,
             on_result: Callable[[CheckResult, CheckContext], None]) -> None:
    """Each task ``(context, claims)`` run in a lane (the claims in turn), ``n_jobs`` lanes, tasks in the order given;
    ``on_result(result, context)`` sees each result as its task finishes.

    On ``KeyboardInterrupt`` the lanes are stopped, ``on_result`` sees the checks that finished in a task that did not,
    and :class:`LanesInterrupted` is raised; on another exception (a worker that died) the same, and the exception is
    raised again.
    """
    from joblib import Parallel, delayed

    if not tasks:
        return
    seen: set[tuple[str, int]] = set()
    with tempfile.TemporaryDirectory(prefix="verify-lanes-") as marks:
        try:
            par = Parallel(n_jobs=min(n_jobs, len(tasks)), backend="loky", return_as="generator_unordered")
            calls = (delayed(_run_group)(i, [c.id for c in claims], dataclasses.replace(
                ctx, n_jobs=1, _progress_factory=None, seeds_used=[]), marks)
                for i, (ctx, claims) in enumerate(tasks))
            for index, results in par(calls):
                for res in results:
                    seen.add((res.id, tasks[index][0].seed))
                    on_result(res, tasks[index][0])
        except BaseException as exc:  # an interrupt, or a lane's worker that died: keep what finished
            contexts = {ctx.seed: ctx for ctx, _ in tasks}
            running = []
            for mark in sorted(Path(marks).glob("*@*[0-9]")):
                cid, seed = mark.name.rsplit("@", 1)
                done = Path(f"{mark}.done")
                if done.exists() and (cid, int(seed)) not in seen:
                    on_result(pickle.loads(done.read_bytes()), contexts[int(seed)])
                elif not done.exists():
                    running.append((cid, int(seed), time.time() - mark.stat().st_mtime))
            if isinstance(exc, KeyboardInterrupt):
                raise LanesInterrupted(running) from exc
            raise
