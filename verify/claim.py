"""The one shape of a claim: design, predict, simulate, (read,) judge, describe, figure.

Every check of the report is a :class:`Claim`: six small functions with one job each, composed by
:meth:`Claim.run`, which judges the evidence once, into the :class:`~verify.registry.Outcome` the report shows.

``design(ctx)``
    The experiment for ``ctx.profile`` (sizes, grids, configurations; truths and pilot constants from
    design seeds only).  No simulation.
``predict(ctx, design)``
    What theory (and ``numerics``' error models) predicts for the design.  May use ``ctx`` for its cache
    and workers, never for data seeds.
``simulate(ctx, design)``
    The measurements: cached cells, seeds from ``ctx.seed_for``.  The only step that draws data.
``read(design, prediction, measurement)`` (optional)
    A *pure* pairing of the measurement with the prediction that judge, describe and figure all need (a statistic
    of the data against a predicted law), computed once; they receive its result in place of the measurement.
    Default: the measurement itself.
``judge(design, prediction, measurement)``
    A *pure* function returning the evidence table: the comparisons (:class:`~verify.registry.Comparison`,
    frozen rows), not yet judged.  No I/O, no randomness, so it can be unit-tested on synthetic measurements
    with a known truth (the ``tests/verify/test_judges_*.py`` files measure each judge's false-FAIL rate that way).
    :meth:`Claim.run` judges the table once (:func:`verify.verdicts.judged`: Holm within the check).
``describe(design, prediction, measurement, comparisons)``
    The notes (prose for the report) and the data (JSON) of the result, given the *judged* comparisons; pure.
``figure(design, prediction, measurement, judgement)``
    A matplotlib figure, or ``None``, given the :class:`~verify.verdicts.Judgement` (verdict and judged
    comparisons); drawn only where figures are written (:func:`verify.figures.pyplot`).  It never judges.

The parts pass plain Python objects between them (dicts, dataclasses, arrays); a claim decides their
type.  :func:`register` makes a claim a check of the registry (``verify.registry.check``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from theory.validation import ArgumentTypeError, check_flag
from theory.validation import describe as _describe

from .claims import STUDIES
from .registry import CheckContext, Comparison, Outcome, check
from .validation import check_callable, check_stem, check_text
from .verdicts import Judgement, judged

__all__ = ["Claim", "register"]


def _no_prediction(ctx: CheckContext, design: Any) -> None:
    return None


def _no_figure(design: Any, prediction: Any, measurement: Any, judgement: Judgement) -> None:
    return None


def _measured(design: Any, prediction: Any, measurement: Any) -> Any:
    return measurement


@dataclass(frozen=True)
class Claim:
    """The parts of one claim (see the module docstring); :meth:`run` composes them.

    Parameters
    ----------
    id : str
        Claim id (a key of :data:`verify.claims.CLAIMS` or :data:`verify.claims.STUDIES`).
    design, predict, simulate, read, judge, describe, figure : callable
        The parts; ``predict``, ``read`` and ``figure`` are optional.
    figure_name : str
        File stem of the figure (``ctx.save_figure``); ``figure`` may also return ``{stem: figure}``.
    informational : bool or callable
        A study: judged, but its verdict is INFO; a callable of ``(design, prediction, measurement)`` decides
        per run (a check whose design leaves nothing of its claim testable).
    """

    id: str
    design: Callable[[CheckContext], Any]
    simulate: Callable[[CheckContext, Any], Any]
    judge: Callable[[Any, Any, Any], list[Comparison]]
    describe: Callable[[Any, Any, Any, list[Comparison]], tuple[str, dict]]
    predict: Callable[[CheckContext, Any], Any] = _no_prediction
    figure: Callable[[Any, Any, Any, Judgement], Any] = _no_figure
    read: Callable[[Any, Any, Any], Any] = _measured
    figure_name: str = "figure"
    informational: bool | Callable[[Any, Any, Any], bool] = False

    def __post_init__(self) -> None:
        """The parts are checked on construction (``TypeError`` / ``ValueError`` naming the field)."""
        check_text("id", self.id, empty=False)
        for part in ("design", "simulate", "judge", "describe", "predict", "figure", "read"):
            check_callable(part, getattr(self, part))
        check_stem("figure_name", self.figure_name)
        if not callable(self.informational):
            check_flag("informational", self.informational)

    def run(self, ctx: CheckContext) -> Outcome:
        """design -> predict -> simulate -> read -> judge (once) -> describe (+ figure): the check's :class:`Outcome`.

        The judge's comparisons are judged once (:func:`verify.verdicts.judged`); ``describe``, ``figure`` and
        the outcome receive the same judged copies and the verdict (``INFO`` for a study).
        """
        if not isinstance(ctx, CheckContext):
            raise ArgumentTypeError(f"ctx must be a CheckContext, got {_describe(ctx)} ({type(ctx).__name__})")
        design = self.design(ctx)
        prediction = self.predict(ctx, design)
        measurement = self.read(design, prediction, self.simulate(ctx, design))
        judgement = judged(list(self.judge(design, prediction, measurement)))
        info = self.informational
        if callable(info):
            info = info(design, prediction, measurement)
        info = bool(info) or self.id in STUDIES
        if info:
            judgement = judgement.as_info()
        comparisons = list(judgement.comparisons)
        notes, data = self.describe(design, prediction, measurement, comparisons)
        # figures are drawn only where they are written (drawing costs seconds; it changes no number)
        figs = self.figure(design, prediction, measurement, judgement) if ctx.report_dir is not None else None
        if figs is not None and not isinstance(figs, dict):
            figs = {self.figure_name: figs}
        paths = [ctx.save_figure(f, name) for name, f in (figs or {}).items()]
        return Outcome(comparisons=list(judgement.comparisons), notes=notes, figures=[p for p in paths if p], data=data,
                       informational=info, verdict=judgement.verdict)


def register(claim: Claim) -> Claim:
    """Register ``claim.run`` as the check of ``claim.id`` and return the claim (see :func:`verify.registry.check`)."""
    if not isinstance(claim, Claim):
        raise ArgumentTypeError(f"claim must be a Claim, got {_describe(claim)} ({type(claim).__name__})")
    check(claim.id)(claim.run)  # the one registry: verify.catalog.claim_of finds the claim behind its run
    return claim

