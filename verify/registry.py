"""Registry of checks: one per claim id (docs/claims.md), and running one into its :class:`CheckResult`.

A check is a function ``f(ctx: CheckContext) -> Outcome``, registered with :func:`check` (a
:class:`verify.claim.Claim` registers its ``run``). Claims without a registered function are reported as
``NOT IMPLEMENTED`` (never PASS).  The results (:mod:`verify.results`) and the context (:mod:`verify.context`)
are importable from here too.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from theory.validation import ArgumentTypeError, check_flag, describe

from .claims import CLAIMS, STUDIES
from .context import CACHE_VERSION, EXECUTORS, PROFILES, CheckContext
from .results import CheckResult, Comparison, Outcome, Verdict, check_verdict, with_key
from .validation import MAX_JOBS, MAX_SEED, check_callable, check_items, check_mapping, check_text

__all__ = ["CACHE_VERSION", "EXECUTORS", "MAX_JOBS", "MAX_SEED", "PROFILES", "CheckContext", "CheckResult",
           "CheckSpec", "Comparison", "Outcome", "Verdict", "check", "exit_status", "judge_outcome", "rejudge_stored",
           "run_check", "with_key"]


@dataclass(frozen=True)
class CheckSpec:
    id: str
    paper: str
    claim: str
    func: Callable[[CheckContext], Outcome] | None

    def __post_init__(self) -> None:
        check_text("id", self.id, empty=False)
        check_text("paper", self.paper)
        check_text("claim", self.claim)
        check_callable("func", self.func, none_ok=True)

    @property
    def implemented(self) -> bool:
        return self.func is not None


_REGISTRY: dict[str, Callable[[CheckContext], Outcome]] = {}


def check(claim_id: str) -> Callable[[Callable[[CheckContext], Outcome]], Callable[[CheckContext], Outcome]]:
    """Decorator registering ``func`` as the check of ``claim_id`` (an id of :data:`CLAIMS` or :data:`STUDIES`)."""
    check_text("claim_id", claim_id)
    if claim_id not in CLAIMS and claim_id not in STUDIES:
        raise ValueError(f"claim_id must be one of {sorted(CLAIMS) + sorted(STUDIES)}, got {claim_id!r}")

    def deco(func: Callable[[CheckContext], Outcome]) -> Callable[[CheckContext], Outcome]:
        check_callable("func", func)
        if claim_id in _REGISTRY and _REGISTRY[claim_id] is not func:
            raise ValueError(f"a check for {claim_id} is already registered")
        _REGISTRY[claim_id] = func
        return func

    return deco


def run_check(spec: CheckSpec, ctx: CheckContext) -> CheckResult:
    """Run one check; exceptions become an ERROR verdict with the traceback in ``error``."""
    if not isinstance(spec, CheckSpec):
        raise ArgumentTypeError(f"spec must be a CheckSpec, got {describe(spec)} ({type(spec).__name__})")
    if not isinstance(ctx, CheckContext):
        raise ArgumentTypeError(f"ctx must be a CheckContext, got {describe(ctx)} ({type(ctx).__name__})")
    res = CheckResult(id=spec.id, paper=spec.paper, claim=spec.claim, verdict=Verdict.NOT_IMPLEMENTED)
    if spec.func is None:
        return res
    ctx.check_id = spec.id
    ctx.seeds_used = []
    t0 = time.perf_counter()
    try:
        out = spec.func(ctx)
        res.comparisons = list(out.comparisons)
        res.notes = out.notes
        res.figures = list(out.figures)
        res.data = dict(out.data)
        if out.verdict is None:  # a plain check function: judged here, once
            res.verdict, res.comparisons = _judge_table(spec.id, res.comparisons, out.informational)
        elif out.informational or spec.id in STUDIES:
            res.verdict = Verdict.INFO
        else:
            res.verdict = Verdict(out.verdict) if res.comparisons else Verdict.FAIL
        if not res.comparisons and res.verdict is Verdict.FAIL:
            res.error = "the check produced no comparison"
    except Exception:  # noqa: BLE001 - reported, not hidden
        res.verdict = Verdict.ERROR
        res.error = traceback.format_exc()
    res.runtime_s = time.perf_counter() - t0
    res.seeds = list(dict.fromkeys(ctx.seeds_used))
    return res


def judge_outcome(check_id: str, comparisons: list[Comparison], informational: bool = False) -> Verdict:
    """The verdict of a check from its comparisons (:func:`verify.verdicts.judged`); pure, no simulation, the
    comparisons unchanged.

    Informational studies (:data:`STUDIES`, or ``informational``) are judged too but their verdict is ``INFO``;
    a check without comparisons FAILS.
    """
    check_text("check_id", check_id, empty=False)
    comparisons = check_items("comparisons", comparisons, Comparison, "Comparison objects")
    return _judge_table(check_id, comparisons, check_flag("informational", informational))[0]


def _judge_table(check_id: str, comparisons: list[Comparison], informational: bool) -> tuple[Verdict, list[Comparison]]:
    """One judging of a check's comparisons: its verdict (``INFO`` for a study) and the judged copies."""
    from .verdicts import judged

    if not comparisons:
        return (Verdict.INFO if informational or check_id in STUDIES else Verdict.FAIL), []
    judgement = judged(comparisons)
    informational = informational or check_id in STUDIES
    return (Verdict.INFO if informational else Verdict(judgement.verdict)), list(judgement.comparisons)


def rejudge_stored(result: Mapping[str, Any]) -> tuple[Verdict, list[Comparison]]:
    """Verdict and comparisons of a stored result (``CheckResult.to_json`` or a calibration record), judged
    again with the current rules: no simulation.  ERROR and NOT IMPLEMENTED stay what they were.

    ``result`` must hold ``id`` (a string), ``verdict`` (a :class:`Verdict` value) and ``comparisons`` (a list of
    stored comparisons, :meth:`Comparison.from_json`)."""
    result = check_mapping("result", result)
    missing = [k for k in ("id", "verdict", "comparisons") if k not in result]
    if missing:
        raise ValueError(f"result must be a stored result (CheckResult.to_json or a calibration record), got one "
                         f"without {missing}")
    check_text("result['id']", result["id"], empty=False)
    stored = check_verdict("result['verdict']", result["verdict"]).value
    try:
        comps = [Comparison.from_json(c) for c in check_items("result['comparisons']", result["comparisons"],
                                                                Mapping, "stored comparisons (dicts)")]
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"result['comparisons']: {exc}") from None
    verdict, judged_comps = _judge_table(result["id"], comps, stored == Verdict.INFO.value)
    kept = stored in (Verdict.ERROR.value, Verdict.NOT_IMPLEMENTED.value)
    return (Verdict(stored) if kept else verdict), judged_comps


def exit_status(results: list[CheckResult], strict: bool = False) -> int:
    """0 iff no selected check FAILED or raised (INFO and INCONCLUSIVE do not fail it);
    with ``strict`` INCONCLUSIVE and NOT IMPLEMENTED fail it too."""
    results = check_items("results", results, CheckResult, "CheckResult objects")
    strict = check_flag("strict", strict)
    bad = {Verdict.FAIL, Verdict.ERROR}
    if strict:
        bad |= {Verdict.NOT_IMPLEMENTED, Verdict.INCONCLUSIVE}
    return 1 if any(r.verdict in bad for r in results) else 0


