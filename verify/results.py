"""What a check produces: its comparisons (the evidence table's rows, :class:`Comparison`), the :class:`Outcome` a
check function returns and the :class:`CheckResult` the report shows, with its :class:`Verdict`."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from typing import Any, Mapping

from theory.validation import ArgumentTypeError, as_float, check_choice, check_flag, describe

from .validation import (check_df, check_items, check_mapping, check_measurement, check_text, check_value, jsonable,
                         optional_real)

__all__ = ["CheckResult", "Comparison", "Outcome", "Verdict", "with_key"]


class Verdict(str, Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"  # neither the claim nor its violation is established at the stated levels
    ERROR = "ERROR"  # the check raised: counts as a failure
    INFO = "INFO"  # an informational study in a stored report: read, never produced


@dataclass(frozen=True)
class Comparison:
    """One prediction-vs-measurement line of a check, with the statistical test that judges it.

    Parameters
    ----------
    name : what is compared (e.g. ``"slope P=3"``).
    predicted : the theory value (number or short text).
    measured : the measured value (number or short text).
    uncertainty : standard error of ``measured`` (``None`` when exact).
    tolerance : the rule, in words with its numbers.
    passed : for ``kind="exact"``: whether the deterministic statement holds.  For the other kinds it is
        ``outcome == "PASS"`` of a judged copy (:func:`verify.verdicts.judged`).
    kind : one of :data:`verify.verdicts.KINDS` (default ``"exact"``).
    p_fail : p-value of the test whose rejection FAILS the comparison (null hypothesis: the claim holds).
    p_pass : p-value of the evidence test behind PASS (null: the claim fails); ``None`` for ``bound`` and
        ``consistency`` comparisons, which pass unless rejected.
    margin : equivalence margin (``kind="equivalence"``).
    df : degrees of freedom of the test statistic (``None``: normal).
    decide_factor : for an undecided comparison, how many times the current data would decide it.
    outcome : ``PASS`` / ``FAIL`` / ``INCONCLUSIVE`` on the judged copies that :func:`verify.verdicts.judged` returns
        (``""`` on a stochastic comparison not yet judged; an exact one carries its outcome from construction).
    headline : the comparison shown for the check in compact tables and tracked by ``calibrate``.
    args : the stochastic constructor's inputs as ``(name, value)`` pairs (``measured``, ``se``, ``margin``, ...):
        what :func:`verify.sequential.pooled` rebuilds the row from when it pools replicates; ``()`` otherwise.
    key : what the row is about, as ``(name, value)`` pairs of strings, numbers, booleans or ``None`` (a mapping
        is accepted): the setting (``c``, ``activation``, ...) and the ``quantity``.  Describe, figures and tools
        select rows by it (:meth:`matches`, :func:`with_key`), never by the text of ``name``.

    Use the constructors :meth:`equivalence`, :meth:`direction`, :meth:`bound`, :meth:`consistency` for
    stochastic comparisons; the plain constructor builds an exact one.  A comparison is immutable (a row of the
    evidence table): judging returns new comparisons.

    Fields are checked on construction (``TypeError`` / ``ValueError`` naming the field): ``passed`` and
    ``headline`` real booleans; ``predicted`` / ``measured`` numbers, strings, bools, ``None``, sympy expressions
    or lists of those; ``uncertainty`` ``None`` or ``>= 0``; ``p_fail`` / ``p_pass`` in ``[0, 1]``; ``margin`` finite
    ``> 0``; ``df > 0`` (``inf``: normal).  A measurement may be NaN or infinite (``measured``, ``uncertainty``, a
    NaN p-value): it is judged FAIL, never a silent PASS.
    """

    name: str
    predicted: Any
    measured: Any
    uncertainty: Any
    tolerance: str
    passed: bool
    kind: str = "exact"
    p_fail: float | None = None
    p_pass: float | None = None
    margin: float | None = None
    df: float | None = None
    decide_factor: float | None = None
    outcome: str = ""
    headline: bool = False
    args: tuple = ()
    key: tuple = ()

    def __post_init__(self) -> None:
        from .verdicts import KINDS

        def put(name: str, value: Any) -> None:  # normalised fields of a frozen instance
            object.__setattr__(self, name, value)

        put("passed", check_flag("passed", self.passed))  # numpy / sympy booleans -> a plain bool (JSON true/false)
        put("headline", check_flag("headline", self.headline))
        check_choice("kind", self.kind, KINDS)
        check_choice("outcome", self.outcome, ("", "PASS", "FAIL", "INCONCLUSIVE"))
        check_text("name", self.name)
        check_text("tolerance", self.tolerance)
        check_value("predicted", self.predicted)
        check_value("measured", self.measured)
        if self.uncertainty is not None:
            check_measurement("uncertainty", self.uncertainty, low=0.0)
        for fname in ("p_fail", "p_pass"):  # NaN: the test could not be computed (judged FAIL)
            put(fname, optional_real(fname, getattr(self, fname), 0.0, 1.0, nan_ok=True))
        put("margin", optional_real("margin", self.margin, 0.0, math.inf, low_open=True))
        put("df", optional_real("df", self.df, 0.0, math.inf, low_open=True, inf_ok=True))
        put("decide_factor", optional_real("decide_factor", self.decide_factor, 0.0, math.inf))
        if self.kind == "exact" and not self.outcome:
            put("outcome", "PASS" if self.passed else "FAIL")
        put("key", _check_key(self.key))

    def matches(self, **want: Any) -> bool:
        """Whether every ``name=value`` of ``want`` is in :attr:`key` (a value may be a tuple of accepted values).

        >>> c = Comparison("gap", 0.0, 0.0, None, "", True, key={"c": 0.5, "quantity": "gap"})
        >>> c.matches(c=0.5), c.matches(quantity=("gap", "risk")), c.matches(c=2)
        (True, True, False)
        """
        have = dict(self.key)
        return all(k in have and (have[k] in v if isinstance(v, tuple) else have[k] == v) for k, v in want.items())

    def to_json(self) -> dict:
        out = {k: jsonable(v) for k, v in asdict(self).items()}
        out["key"] = {k: jsonable(v) for k, v in self.key}
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Comparison":
        """Rebuild a comparison from its :meth:`to_json` form (to judge stored results again); ``d`` must hold ``name``,
        ``predicted``, ``measured``, ``uncertainty``, ``tolerance`` and ``passed``, checked as by the constructor."""
        d = check_mapping("d", d)
        keys = [f.name for f in fields(cls) if f.name != "outcome"]
        missing = [k for k in keys[:6] if k not in d]
        if missing:
            raise ValueError(f"d must be a stored comparison (Comparison.to_json), got one without {missing}")
        kw = {k: float(d[k]) if k in _REALS and d[k] in ("nan", "inf", "-inf") else d[k] for k in keys if k in d}
        kw.setdefault("kind", "exact")
        kw["args"] = _stored_args(kw.get("args", ()))
        if kw["kind"] == "exact":
            outcome = d["outcome"] if "outcome" in d else ("PASS" if check_flag("d['passed']", d["passed"]) else "FAIL")
            kw["passed"] = check_text("d['outcome']", outcome) == "PASS"
        else:  # a stochastic row comes back unjudged, as its constructors build it (judging sets passed)
            check_flag("d['passed']", d["passed"])
            kw["passed"] = False
        try:
            return cls(**kw)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"d (a stored comparison): {exc}") from None

    # ------------------------------------------------------------------ stochastic constructors
    @classmethod
    def equivalence(cls, name: str, predicted: float, measured: float, se: float, margin: float, *,
                    df: float | None = None, rule: str = "", **kw: Any) -> "Comparison":
        """``|measured - predicted| < margin`` as an equivalence test (TOST for PASS; beyond the margin for FAIL).

        ``predicted``, ``margin > 0`` finite; ``measured``, ``se >= 0`` may be NaN or infinite (NaN p-values, FAIL).
        """
        from .verdicts import ALPHA_PASS, equivalence_p, scale_to_decide, t_quantile

        check_text("rule", rule)
        x_pred, x_meas = as_float("predicted", predicted), check_measurement("measured", measured)
        se, df = check_measurement("se", se, low=0.0), check_df(df)
        margin = as_float("margin", margin, low=0, low_open=True)
        delta = x_meas - x_pred
        measurable = math.isfinite(delta) and math.isfinite(se)
        p_pass, p_fail = equivalence_p(delta, se, margin, df) if measurable else (math.nan, math.nan)
        q = t_quantile(ALPHA_PASS, df)
        lo, hi = delta - q * se, delta + q * se
        tol = (f"equivalence, margin {margin:g}: PASS iff the {1 - 2 * ALPHA_PASS:.0%} interval of measured - "
               f"predicted [{lo:+.4f}, {hi:+.4f}] lies inside +-{margin:g} (TOST p = {p_pass:.2g}); FAIL iff "
               f"|difference| > {margin:g} is significant (p = {p_fail:.2g}, Holm within the check)"
               + (f", df = {df:.1f}" if df is not None else "") + (f"; {rule}" if rule else ""))
        return cls(name=name, predicted=predicted, measured=measured, uncertainty=se, tolerance=tol,
                   passed=False, kind="equivalence", p_fail=p_fail, p_pass=p_pass, margin=margin, df=df,
                   decide_factor=scale_to_decide(delta, se, margin, "equivalence") if measurable else None,
                   args=(("measured", x_meas), ("se", se), ("margin", margin), ("df", df), ("rule", rule)), **kw)

    @classmethod
    def direction(cls, name: str, predicted: Any, measured: float, se: float, sign: int, *,
                  reference: float = 0.0, df: float | None = None, rule: str = "", **kw: Any) -> "Comparison":
        """``sign * (measured - reference) > 0``: PASS when significant at ALPHA_PASS, FAIL when the opposite is.

        ``sign``: ``+1`` or ``-1``; ``reference`` finite; ``measured``, ``se >= 0`` may be NaN or infinite (FAIL).
        """
        from .verdicts import check_sign, direction_p, scale_to_decide

        check_text("rule", rule)
        sign, reference = check_sign(sign), as_float("reference", reference)
        x_meas, se, df = check_measurement("measured", measured), check_measurement("se", se, low=0.0), check_df(df)
        delta = x_meas - reference
        measurable = math.isfinite(delta) and math.isfinite(se)
        p_pass, p_fail = direction_p(delta, se, sign, df) if measurable else (math.nan, math.nan)
        tol = (f"direction: claim {'>' if sign > 0 else '<'} {reference:g}; z = {delta / se if se > 0 else float('inf'):.2f} "
               f"(p_pass = {p_pass:.2g}; FAIL iff the opposite sign is significant, p = {p_fail:.2g}, Holm)"
               + (f", df = {df:.1f}" if df is not None else "") + (f"; {rule}" if rule else ""))
        return cls(name=name, predicted=predicted, measured=measured, uncertainty=se, tolerance=tol,
                   passed=False, kind="direction", p_fail=p_fail, p_pass=p_pass, df=df,
                   decide_factor=scale_to_decide(delta, se, None, "direction") if measurable else None,
                   args=(("measured", x_meas), ("se", se), ("sign", sign), ("reference", reference), ("df", df),
                         ("rule", rule)), **kw)

    @classmethod
    def bound(cls, name: str, predicted: Any, measured: Any, se: float, excess: float, *, excess_se: float | None = None,
              df: float | None = None, rule: str = "", **kw: Any) -> "Comparison":
        """A one-sided bound ``excess <= 0`` (statistic minus its allowed maximum); PASS unless violated significantly.

        ``se``, ``excess`` and ``excess_se`` (``>= 0``) may be NaN or infinite (a failed measurement: FAIL).
        """
        from .verdicts import bound_p

        check_text("rule", rule)
        se, excess = check_measurement("se", se, low=0.0), check_measurement("excess", excess)
        s = se if excess_se is None else check_measurement("excess_se", excess_se, low=0.0)
        df = check_df(df)
        p_fail = bound_p(excess, s, df) if math.isfinite(excess) and math.isfinite(s) else math.nan
        tol = (rule + "; " if rule else "") + f"bound: FAIL iff the excess {excess:+.3g} is significant (z = " \
            f"{excess / s if s > 0 else float('inf'):.2f}, p = {p_fail:.2g}, Holm within the check)"
        return cls(name=name, predicted=predicted, measured=measured, uncertainty=se, tolerance=tol,
                   passed=False, kind="bound", p_fail=p_fail, df=df,
                   args=(("measured", measured), ("se", se), ("excess", excess), ("excess_se", excess_se),
                         ("df", df), ("rule", rule)), **kw)

    @classmethod
    def consistency(cls, name: str, predicted: float, measured: float, se: float, *, df: float | None = None,
                    rule: str = "", **kw: Any) -> "Comparison":
        """An identity measured with noise: two-sided test of ``measured == predicted`` (finite); ``measured``,
        ``se >= 0`` may be NaN or infinite (FAIL)."""
        from .verdicts import consistency_p

        check_text("rule", rule)
        x_pred, x_meas = as_float("predicted", predicted), check_measurement("measured", measured)
        se, df = check_measurement("se", se, low=0.0), check_df(df)
        delta = x_meas - x_pred
        p_fail = consistency_p(delta, se, df) if math.isfinite(delta) and math.isfinite(se) else math.nan
        tol = (rule + "; " if rule else "") + f"identity: FAIL iff |measured - predicted| is significant " \
            f"(z = {delta / se if se > 0 else float('inf'):.2f}, two-sided p = {p_fail:.2g}, Holm within the check)"
        return cls(name=name, predicted=predicted, measured=measured, uncertainty=se, tolerance=tol,
                   passed=False, kind="consistency", p_fail=p_fail, df=df,
                   args=(("measured", x_meas), ("se", se), ("df", df), ("rule", rule)), **kw)


_KEY_VALUE = (str, int, float, bool, type(None))
_REALS = ("p_fail", "p_pass", "margin", "df", "decide_factor")  # non-finite floats are stored as text


def _check_key(v: Any) -> tuple:
    """``Comparison.key`` as a tuple of ``(name, value)`` pairs (from a mapping or such pairs), values scalars."""
    if isinstance(v, Mapping):  # as given by the checks and as stored by to_json
        v = tuple(v.items())
    if not isinstance(v, tuple) or not all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in v):
        raise ArgumentTypeError(f"key must be a mapping or a tuple of (name, value) pairs, got {describe(v)}")
    if len({p[0] for p in v}) != len(v):
        raise ValueError(f"key must name each part once, got {[p[0] for p in v]}")
    v = tuple((k, x.item() if hasattr(x, "dtype") and hasattr(x, "item") else x) for k, x in v)  # numpy scalars
    bad = [p[0] for p in v if not isinstance(p[1], _KEY_VALUE)]
    if bad:
        raise ArgumentTypeError(f"key values must be strings, numbers, booleans or None; not so for {bad}")
    return v


def with_key(comparisons: "list[Comparison]", **want: Any) -> "list[Comparison]":
    """The comparisons whose ``key`` holds every ``name=value`` of ``want`` (:meth:`Comparison.matches`)."""
    comparisons = check_items("comparisons", comparisons, Comparison, "Comparison objects")
    return [c for c in comparisons if c.matches(**want)]


def _stored_args(v: Any) -> tuple:
    """``args`` as :meth:`Comparison.to_json` stores it (a list of ``[name, value]``; non-finite floats as text)."""
    if not isinstance(v, (list, tuple)) or not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in v):
        raise ValueError(f"d['args'] must be a list of [name, value] pairs, got {describe(v)}")
    return tuple((k, float(x) if isinstance(x, str) and x in ("nan", "inf", "-inf") and k != "rule" else x)
                 for k, x in v)


@dataclass
class Outcome:
    """What :meth:`verify.claim.Claim.run` returns: the judged comparisons, notes (text), the paths of the figures,
    data (a mapping with string keys, written to the JSON report) and the verdict."""

    comparisons: list[Comparison]
    notes: str = ""
    figures: list[str] = field(default_factory=list)
    data: dict = field(default_factory=dict)
    verdict: str | None = None


@dataclass
class CheckResult:
    id: str
    paper: str
    claim: str
    verdict: Verdict
    comparisons: list[Comparison] = field(default_factory=list)
    runtime_s: float = 0.0
    seeds: list[int] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    notes: str = ""
    error: str | None = None
    data: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        """``verdict`` may be given as its value (``"PASS"``)."""
        self.verdict = Verdict(self.verdict)

    def to_json(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}  # in field order
        out.update(verdict=self.verdict.value, comparisons=[c.to_json() for c in self.comparisons],
                   runtime_s=round(self.runtime_s, 4), seeds=list(self.seeds), figures=list(self.figures),
                   data=jsonable(self.data))
        return out
