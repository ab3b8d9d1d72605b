"""The claims: one :class:`Claim` per id, registered by its own module of :mod:`verify.checks`, found by discovery.

A claim is its statement and small functions with one job each (docs/architecture.md), composed by
:meth:`Claim.run`: ``design(ctx)`` (no simulation), ``predict(ctx, design)`` (theory; no data), ``simulate(ctx,
design)`` (the only step that draws data), an optional pure ``read(design, prediction, measurement)``, the pure
``judge(...)`` (the evidence table, not yet judged), ``describe(..., comparisons)`` (notes and data, from the judged
rows) and ``figure(..., judgement)`` (drawn only where figures are written).  Adding a claim is one new module in
``verify/checks/`` that calls :func:`register`, and its entry in docs/claims.md."""

from __future__ import annotations

import importlib
import pkgutil
import re
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from numerics.threads import torch_threads
from theory.validation import ArgumentTypeError, describe

from .context import CheckContext
from .results import CheckResult, Comparison, Outcome, Verdict
from .verdicts import Judgement, judged

__all__ = ["Claim", "all_claims", "claim_of", "exit_status", "register", "rejudge_stored", "run_check", "select"]


@dataclass(frozen=True)
class Claim:
    """One claim: its statement and the parts that decide it (see the module docstring).

    Parameters
    ----------
    id : str
        ``A1``..``A6``, ``B1``.. for the papers' claims.
    paper : str
        ``"A"`` or ``"B"`` (or another label for a claim of your own).
    statement : str
        The claim in words, as the report, ``--list`` and docs/claims.md show it.
    design, simulate, judge, describe, predict, read, figure : callable
        The parts; ``predict``, ``read`` and ``figure`` are optional.
    figure_name : str
        File stem of the figure (``ctx.save_figure``).
    """

    id: str
    paper: str
    statement: str
    design: Callable[[CheckContext], Any]
    simulate: Callable[[CheckContext, Any], Any]
    judge: Callable[[Any, Any, Any], list[Comparison]]
    describe: Callable[[Any, Any, Any, list[Comparison]], tuple[str, dict]]
    predict: Callable[[CheckContext, Any], Any] = lambda ctx, design: None
    figure: Callable[[Any, Any, Any, Judgement], Any] = lambda design, prediction, measurement, judgement: None
    read: Callable[[Any, Any, Any], Any] = lambda design, prediction, measurement: measurement
    figure_name: str = "figure"

    def run(self, ctx: CheckContext) -> Outcome:
        """design -> predict -> simulate -> read -> judge (once) -> describe (+ figure): the claim's :class:`Outcome`."""
        design = self.design(ctx)
        prediction = self.predict(ctx, design)
        measurement = self.read(design, prediction, self.simulate(ctx, design))
        judgement = judged(list(self.judge(design, prediction, measurement)))
        comparisons = list(judgement.comparisons)
        notes, data = self.describe(design, prediction, measurement, comparisons)
        # figures are drawn only where they are written (drawing costs seconds; it changes no number)
        figs = self.figure(design, prediction, measurement, judgement) if ctx.report_dir is not None else None
        if figs is not None and not isinstance(figs, dict):
            figs = {self.figure_name: figs}
        paths = [ctx.save_figure(f, name) for name, f in (figs or {}).items()]
        return Outcome(comparisons=comparisons, notes=notes, figures=[p for p in paths if p], data=data,
                       verdict=judgement.verdict)


_CLAIMS: dict[str, Claim] = {}


def register(claim: Claim) -> Claim:
    """Make ``claim`` the check of its id (one claim per id) and return it."""
    if not isinstance(claim, Claim):
        raise TypeError(f"claim must be a Claim, got {type(claim).__name__}")
    if _CLAIMS.get(claim.id, claim) is not claim:
        raise ValueError(f"a claim {claim.id} is already registered")
    _CLAIMS[claim.id] = claim
    return claim


def all_claims() -> list[Claim]:
    """Every registered claim, by paper and number, after importing each module of :mod:`verify.checks` (plugins)."""
    checks = importlib.import_module(f"{__package__}.checks")  # plugins, found at run time
    for module in pkgutil.iter_modules(checks.__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"{checks.__name__}.{module.name}")
    # by paper and number (B2 before B10)
    return sorted(_CLAIMS.values(), key=lambda c: (c.paper, int(re.match(r"[A-Za-z]*(\d*)", c.id)[1] or 0), c.id))


def claim_of(claim_id: str) -> Claim:
    """The claim of ``claim_id`` (case-insensitive).

    Raises
    ------
    ValueError
        Unknown id (the message lists the known ones).
    """
    try:
        return select([claim_id])[0]
    except ValueError as exc:
        raise ValueError(f"claim_id: {exc}") from None


def select(ids: str | Sequence[str] | None) -> list[Claim]:
    """The claims of ``ids`` (one id or several, case-insensitive) in report order; all of them for ``None`` or an
    empty list.

    Raises
    ------
    ValueError
        An unknown id (the message lists the known ones).
    """
    ids = [ids] if isinstance(ids, str) else ids
    if ids is not None and not isinstance(ids, (list, tuple)):
        raise ArgumentTypeError(f"ids must be a claim id, a list of them or None, got {describe(ids)}")
    for i, cid in enumerate(ids or ()):
        if not isinstance(cid, str):
            raise ArgumentTypeError(f"ids[{i}] must be a claim id (a string), got {describe(cid)}")
    claims = all_claims()
    if not ids:
        return claims
    known = {c.id.upper() for c in claims}
    unknown = [i for i in ids if i.upper() not in known]
    if unknown:
        raise ValueError(f"ids must be known claim ids; unknown: {', '.join(unknown)}; known: "
                         f"{', '.join(c.id for c in claims)}")
    wanted = {i.upper() for i in ids}
    return [c for c in claims if c.id.upper() in wanted]


def run_check(claim: Claim, ctx: CheckContext) -> CheckResult:
    """Run one claim into its :class:`CheckResult`; an exception becomes an ERROR verdict with its traceback."""
    if not isinstance(claim, Claim):
        raise TypeError(f"claim must be a Claim, got {type(claim).__name__}")
    if not isinstance(ctx, CheckContext):
        raise TypeError(f"ctx must be a CheckContext, got {type(ctx).__name__}")
    res = CheckResult(id=claim.id, paper=claim.paper, claim=claim.statement, verdict=Verdict.ERROR)
    ctx.check_id = claim.id
    ctx.seeds_used = []
    t0 = time.perf_counter()
    try:
        with torch_threads(1):  # the numbers of one thread, however the run spreads its checks (verify.lanes)
            out = claim.run(ctx)
        res.comparisons, res.notes, res.figures, res.data = out.comparisons, out.notes, out.figures, dict(out.data)
        res.verdict = Verdict(out.verdict) if out.comparisons else Verdict.FAIL
        if not out.comparisons:
            res.error = "the check produced no comparison"
    except Exception:  # noqa: BLE001 - reported, not hidden
        res.error = traceback.format_exc()
    res.runtime_s = time.perf_counter() - t0
    res.seeds = list(dict.fromkeys(ctx.seeds_used))
    return res


def rejudge_stored(result: Mapping[str, Any]) -> tuple[Verdict, list[Comparison]]:
    """Verdict and comparisons of a stored result (``CheckResult.to_json`` or a calibration record), judged again
    with the current rules: no simulation.  ERROR stays ERROR; INFO (a stored study) stays INFO."""
    missing = [k for k in ("id", "verdict", "comparisons") if k not in result]
    if missing:
        raise ValueError(f"result must be a stored result (CheckResult.to_json or a calibration record), got one "
                         f"without {missing}")
    stored = Verdict(result["verdict"])
    comps = [Comparison.from_json(c) for c in result["comparisons"]]
    if stored is Verdict.ERROR:
        return stored, comps
    if not comps:
        return (Verdict.INFO if stored is Verdict.INFO else Verdict.FAIL), []
    judgement = judged(comps)
    verdict = Verdict.INFO if stored is Verdict.INFO else Verdict(judgement.verdict)
    return verdict, list(judgement.comparisons)


def exit_status(results: Sequence[CheckResult], strict: bool = False) -> int:
    """0 iff no check FAILED or raised; INCONCLUSIVE fails it only with ``strict``."""
    bad = {Verdict.FAIL, Verdict.ERROR} | ({Verdict.INCONCLUSIVE} if strict else set())
    return 1 if any(r.verdict in bad for r in results) else 0
