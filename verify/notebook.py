"""Run claims from Python or Jupyter: ``verify.run("A2")`` returns the judged results, shown as HTML in a notebook.

The keywords are the command line's (``profile``, ``seed``, ``cache_dir``, ``jobs``, ``device``, ``executor``,
``scheduler``), checked as the command line checks them before anything runs (a bad value, a CUDA device that
is not there, a scheduler without ``executor="dask"``: a ``ValueError`` / ``TypeError`` naming it); the results
are the ones ``python -m verify --only ...`` reports for the same seed and profile.  The cache is the command
line's too: ``.cache/verify/<profile>`` under the working directory (``cache_dir=None`` or ``"none"``: none).

>>> from verify import run
>>> r = run("A1", profile="smoke", cache_dir=None, figures=False, progress=False)
>>> r.verdicts
{'A1': 'PASS'}
"""

from __future__ import annotations

import dataclasses
from importlib import resources
import os
import tempfile
import time
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Iterator, Sequence

from numerics import check_device
from theory.validation import as_float, check_choice, check_flag, check_int

from ._preflight import cache_dir_option, check_executor
from .budget import look_line, run_sequential
from .claim import exit_status, run_check, select
from .context import CheckContext, PROFILES
from .results import CheckResult
from .report import counts_text
from .report_html import html_sections
from .sequential import MAX_ROUND
from .validation import check_n_jobs, path_or_none

__all__ = ["Run", "run"]

#: ``cache_dir="default"``: the command line's default, ``.cache/verify/<profile>`` under the working directory
DEFAULT_CACHE = "default"


@dataclass(frozen=True)
class Run:
    """The results of :func:`run`, in report order; ``run["A2"]`` is one :class:`~verify.results.CheckResult`.

    In Jupyter it shows as HTML: a summary row per claim, then per claim its judged comparisons, notes and figures."""

    results: tuple[CheckResult, ...]
    profile: str
    seed: int
    figure_dir: Path | None = None

    def __getitem__(self, key: str | int) -> CheckResult:
        """``run["A2"]`` (any case, as ``--only``) or ``run[0]`` (report order)."""
        if isinstance(key, int) and not isinstance(key, bool):
            return self.results[key]
        for r in self.results:
            if isinstance(key, str) and r.id.upper() == key.upper():
                return r
        raise KeyError(f"{key!r} is not in this run (it holds {', '.join(r.id for r in self.results)})")

    def __iter__(self) -> Iterator[CheckResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    @property
    def verdicts(self) -> dict[str, str]:
        """``{claim id: verdict}``."""
        return {r.id: r.verdict.value for r in self.results}

    @property
    def exit_status(self) -> int:
        """What ``python -m verify`` would exit with (:func:`verify.claim.exit_status`)."""
        return exit_status(list(self.results))

    def __repr__(self) -> str:
        verdicts = ", ".join(f"{k} {v}" for k, v in self.verdicts.items())
        return f"Run(profile={self.profile!r}, seed={self.seed}: {verdicts})"

    def _repr_html_(self) -> str:
        head = (f"<p><strong>Verification</strong> (profile <code>{escape(self.profile)}</code>, seed "
                f"<code>{self.seed}</code>): {escape(counts_text(list(self.results)))}</p>")
        body = html_sections(list(self.results), self.figure_dir or Path("."))
        return "\n".join(['<div class="verify-run">', f"<style>{_CSS}</style>", head, *body, "</div>"])


#: the notebook view's style, scoped to its own block (the notebook's other cells keep theirs)
_CSS = resources.files(__package__).joinpath("notebook.css").read_text()


def run(ids: str | Sequence[str] | None = None, *, profile: str = "quick", seed: int = 0,
        cache_dir: str | os.PathLike | None = DEFAULT_CACHE, jobs: int | None = None, device: str = "cpu",
        executor: str = "local", scheduler: str | None = None, figures: bool = True, progress: bool = True,
        budget: float | None = None, rounds: int | None = None) -> Run:
    """Run the checks of ``ids`` (``None``: every claim) and return their judged results.

    Parameters
    ----------
    ids : str, sequence of str or None
        A claim id (``"A2"``), several (``["A2", "B4"]``) or ``None`` for all (``verify.all_claims()``).
    profile : {"quick", "paper", "smoke"}
        The sizes (``smoke``: tiny, for tests; verdicts meaningless).
    seed : int
        Base seed of the data (the design does not change with it).
    cache_dir : path, ``"default"`` or None
        Where cells are cached (``"default"``: ``.cache/verify/<profile>``; ``None``: no cache).
    jobs : int or None
        Worker processes (``None``: every core; ``-1`` too).
    device, executor, scheduler
        As ``--device``, ``--executor``, ``--scheduler`` of the command line.
    figures : bool
        Draw each claim's figure into a new temporary directory (``Run.figure_dir``, kept: the notebook view reads it).
    progress : bool
        Print one line per check as it finishes (per round with ``budget`` / ``rounds``).
    budget, rounds : float or None, int or None
        Sequential verdicts, as ``--budget MINUTES`` and ``--rounds N`` (:mod:`verify.budget`).

    Returns
    -------
    Run
    """
    figures, progress = check_flag("figures", figures), check_flag("progress", progress)
    jobs = (os.cpu_count() or 1) if jobs is None else check_n_jobs(jobs, name="jobs")
    budget_s = None if budget is None else 60.0 * as_float("budget", budget, low=0, low_open=True)
    rounds = None if rounds is None else check_int("rounds", rounds, 0, MAX_ROUND)
    check_choice("profile", profile, PROFILES)
    cache_dir = cache_dir_option(None, profile) if cache_dir == DEFAULT_CACHE else path_or_none(cache_dir)
    base = CheckContext(profile=profile, seed=seed, cache_dir=cache_dir, device=device, n_jobs=jobs, executor=executor,
                        scheduler=scheduler, memo={})  # every option checked before anything runs
    check_device("device", base.device)  # a CUDA device this machine has
    try:
        check_executor(base.executor, base.scheduler)
    except SystemExit as exc:  # the command line's refusal, as an error of this call's keyword
        message = str(exc).removeprefix("error: ")
        for option in ("executor", "scheduler"):
            message = message.replace(f"--{option}", option)
        raise ValueError(message) from None
    if ids is not None and not ids:
        raise ValueError("ids must name at least one claim (None: all of them), got []")
    specs = select(ids)
    figure_dir = Path(tempfile.mkdtemp(prefix="verify-figures-")) if figures else None
    base = dataclasses.replace(base, report_dir=figure_dir)
    if budget_s is not None or rounds is not None:
        seqs = run_sequential(specs, base, budget_s=budget_s, rounds=rounds,
                              on_look=(lambda s: print(look_line(s), flush=True)) if progress else None)
        return Run(tuple(s.result() for s in seqs), profile, base.seed, figure_dir)
    results = []
    for spec in specs:
        t0 = time.perf_counter()
        results.append(run_check(spec, dataclasses.replace(base, seeds_used=[])))
        if progress:
            print(f"{results[-1].verdict.value:>12} {spec.id}  ({time.perf_counter() - t0:.1f} s)", flush=True)
    return Run(tuple(results), profile, base.seed, figure_dir)
