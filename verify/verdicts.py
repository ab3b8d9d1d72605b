"""Verdicts as statistical tests: PASS / FAIL / INCONCLUSIVE with stated error rates (rules: docs/verdicts.md).

Each comparison is of one kind (:data:`KINDS`): ``exact`` (deterministic), ``equivalence`` (TOST within a margin),
``direction`` (a sign), ``bound`` and ``consistency`` (PASS unless a violation is significant).  A check's
``p_fail`` values go through Holm at :data:`ALPHA_CHECK` (``ALPHA_REPORT`` over the stochastic checks, Bonferroni);
it PASSES when every comparison passes (the evidence tests at :data:`ALPHA_PASS`), FAILS when one is rejected or an
exact one does not hold, and is INCONCLUSIVE otherwise (:func:`judged`).  These rates assume the standard errors
are right; ``python -m verify calibrate`` measures them."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, is_dataclass, replace
from typing import Any, Sequence

from scipy import special, stats

from theory.validation import ArgumentTypeError, as_array, as_float, check_choice, check_real, describe as _describe


__all__ = ["ALPHA_CHECK", "ALPHA_PASS", "ALPHA_REPORT", "KINDS", "N_STOCHASTIC_CHECKS", "Judgement", "holm", "judge",
           "judged"]

#: family-wise false-FAIL rate of a whole report (every claim true)
ALPHA_REPORT = 0.01
#: checks with stochastic comparisons (A2-A6, B1-B11; A1 is exact): the Bonferroni divisor
N_STOCHASTIC_CHECKS = 16
#: family-wise false-FAIL rate of one check (Holm inside the check)
ALPHA_CHECK = ALPHA_REPORT / N_STOCHASTIC_CHECKS
#: level of the evidence tests behind PASS (TOST, one-sided direction tests): a false PASS rate
ALPHA_PASS = 0.05

KINDS = ("exact", "equivalence", "direction", "bound", "consistency")
#: a comparison as judged here: a dataclass with the fields of :class:`verify.results.Comparison` (that module
#: imports this one) that :func:`judged` and :func:`describe` read
Comparison = Any
_FIELDS = ("kind", "p_fail", "p_pass", "outcome", "passed")


def _sf(x: float, df: float | None) -> float:
    """Upper tail of Student's t with ``df`` degrees of freedom (``None`` or ``inf``: normal); scipy.special's
    ``stdtr`` / ``ndtr`` without ``scipy.stats``' per-call overhead (judges run thousands of times in calibration)."""
    return float(special.ndtr(-x) if df is None or not math.isfinite(df) else special.stdtr(df, -x))


@functools.lru_cache(maxsize=256)
def z_quantile(alpha: float) -> float:
    """The standard normal's upper ``alpha`` quantile ``z_(1 - alpha)``, ``0 < alpha < 1`` (cached: levels are few).

    Examples
    --------
    >>> round(z_quantile(0.05), 4)
    1.6449
    """
    return float(stats.norm.isf(alpha))


def t_quantile(alpha: float, df: float | None) -> float:
    """The upper ``alpha`` quantile of Student's t with ``df > 0`` degrees of freedom (``None`` or ``inf``: normal);
    ``-stdtrit(df, alpha)``, what ``scipy.stats.t.isf`` evaluates."""
    if df is None or not math.isfinite(df):
        return z_quantile(alpha)
    return float(-special.stdtrit(df, alpha))


def z_score(x: float, se: float) -> float:
    """``x / se``, signed infinity for ``se = 0`` (``0`` when ``x`` is too)."""
    if se > 0:
        return x / se
    return math.copysign(math.inf, x) if x else 0.0


# ------------------------------------------------------------------------------------------ argument checks
def check_sign(sign: Any) -> int:
    """``+1`` or ``-1`` (an integer, not a bool)."""
    check_real("sign", sign, integer=True)
    if int(sign) not in (-1, 1):
        raise ValueError(f"sign must be +1 or -1, got {_describe(sign)}")
    return int(sign)


def _check_alpha(alpha: Any) -> float:
    return as_float("alpha", alpha, low=0, high=1, low_open=True, high_open=True)


def check_comparisons(name: str, comparisons: Any) -> list:
    """A list (or tuple) of comparisons: dataclasses with the fields :data:`_FIELDS` and a known ``kind``."""
    if not isinstance(comparisons, (list, tuple)):
        raise ArgumentTypeError(f"{name} must be a list of comparisons, got {_describe(comparisons)} "
                                f"({type(comparisons).__name__})")
    for c in comparisons:
        if not is_dataclass(c) or isinstance(c, type) or not all(hasattr(c, f) for f in _FIELDS):
            raise ArgumentTypeError(f"{name} item must be a comparison (a dataclass with the fields "
                                    f"{', '.join(_FIELDS)}), got {_describe(c)} ({type(c).__name__})")
        check_choice(f"{name} item.kind", c.kind, KINDS)
    return list(comparisons)


# ------------------------------------------------------------------------------------------ the tests
def equivalence_p(delta: float, se: float, margin: float, df: float | None = None) -> tuple[float, float]:
    """``(p_pass, p_fail)`` of the claim ``|delta| < margin`` from an estimate with standard error ``se``.

    ``p_pass`` is the larger of the two one-sided TOST p-values (``H0: delta <= -m`` and ``H0: delta >= m``);
    ``p_fail`` tests ``H0: |delta| <= m`` (least favourable at ``delta = +-m``): ``P(|D| - m >= obs)``.
    ``delta`` is finite, ``se >= 0`` finite, ``margin > 0`` finite, ``df`` ``None`` (normal) or ``> 0``.

    Examples
    --------
    >>> p_pass, p_fail = equivalence_p(0.0, 0.005, 0.03)
    >>> p_pass < 1e-6, p_fail > 0.99
    (True, True)
    """
    p_lo = _sf(z_score(delta + margin, se), df)  # H0: delta <= -m
    p_hi = _sf(-z_score(delta - margin, se), df)  # H0: delta >= m (lower tail)
    return max(p_lo, p_hi), _sf(z_score(abs(delta) - margin, se), df)


def direction_p(delta: float, se: float, sign: int, df: float | None = None) -> tuple[float, float]:
    """``(p_pass, p_fail)`` of the claim ``sign * delta > 0``: one-sided tests of ``<= 0`` and ``>= 0``."""
    z = z_score(sign * delta, se)
    return _sf(z, df), _sf(-z, df)


def bound_p(excess: float, se: float, df: float | None = None) -> float:
    """``p_fail`` of a one-sided bound claim ``excess <= 0`` (``excess`` = statistic minus its allowed maximum)."""
    return _sf(z_score(excess, se), df)


def consistency_p(delta: float, se: float, df: float | None = None) -> float:
    """Two-sided ``p_fail`` of the identity ``delta = 0``."""
    return float(min(1.0, 2 * _sf(abs(z_score(delta, se)), df)))


def holm(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Holm's step-down rejections at family-wise level ``alpha`` (``True`` = rejected), in input order.

    Examples
    --------
    >>> holm([0.001, 0.2, 0.004], 0.01)
    [True, False, True]
    """
    alpha = _check_alpha(alpha)
    p_values = as_array("p_values", p_values, ndim=1, allow_empty=True, low=0, high=1).tolist()
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    rejected = [False] * m
    for k, i in enumerate(order):
        if p_values[i] <= alpha / (m - k):
            rejected[i] = True
        else:
            break
    return rejected


def scale_to_decide(delta: float, se: float, margin: float | None, kind: str) -> float | None:
    """How many times the current data would decide an undecided comparison: ``(se / se_needed)^2``, ``se_needed``
    the SE at which the observed ``delta`` (taken as the truth) reaches the PASS test (``z_(1-ALPHA_PASS)``) or,
    beyond the margin, the FAIL test at :data:`ALPHA_CHECK`; ``None`` on the boundary (no amount of data decides)."""
    if not se > 0:
        return None
    z_pass, z_fail = z_quantile(ALPHA_PASS), z_quantile(ALPHA_CHECK)
    if kind == "equivalence" and margin is not None:
        room = margin - abs(delta)
        needed = room / z_pass if room > 0 else -room / z_fail
    elif kind == "direction":
        needed = abs(delta) / z_pass
    else:
        return None
    if needed <= 0:
        return None
    return max(1.0, (se / needed) ** 2)


@dataclass(frozen=True)
class Judgement:
    """A check's judged evidence table: its verdict (``PASS``, ``FAIL`` or ``INCONCLUSIVE``, :func:`judged`) and its
    comparisons with their outcomes (new objects, in the order judged)."""

    verdict: str
    comparisons: tuple


def _outcome(c: Comparison, rejected: bool, alpha_pass: float = ALPHA_PASS) -> str:
    if c.kind == "exact":
        return "PASS" if c.passed else "FAIL"
    if rejected or c.p_fail is None or not math.isfinite(float(c.p_fail)):
        return "FAIL"  # a non-finite measurement is a failure, never a silent pass
    return "PASS" if c.p_pass is None or float(c.p_pass) <= alpha_pass else "INCONCLUSIVE"


def judged(comparisons: Sequence[Comparison], alpha: float = ALPHA_CHECK,
           alpha_pass: float = ALPHA_PASS) -> Judgement:
    """Judge a check's comparisons once: the verdict and judged copies (``outcome``, ``passed`` set).

    Rules: module docstring; ``alpha`` is the check's family-wise FAIL level (Holm), ``alpha_pass`` the level of the
    evidence tests behind PASS (a sequential look spends a share of both, :mod:`verify.sequential`).  Pure: no I/O,
    no randomness, the given comparisons unchanged.  An empty table is ``FAIL`` (a check that compared nothing)."""
    comparisons = check_comparisons("comparisons", comparisons)
    alpha, alpha_pass = _check_alpha(alpha), _check_alpha(alpha_pass)
    # a non-finite p-value FAILS its comparison below; it takes no place in Holm's family
    stochastic = [i for i, c in enumerate(comparisons) if c.kind != "exact" and c.p_fail is not None
                  and math.isfinite(float(c.p_fail))]
    rejected = dict(zip(stochastic, holm([float(comparisons[i].p_fail) for i in stochastic], alpha)))
    out = []
    for i, c in enumerate(comparisons):
        outcome = _outcome(c, rejected.get(i, False), alpha_pass)
        out.append(replace(c, outcome=outcome, passed=c.passed if c.kind == "exact" else outcome == "PASS"))
    outs = {c.outcome for c in out}
    verdict = next((v for v in ("FAIL", "INCONCLUSIVE") if v in outs), "PASS" if out else "FAIL")
    return Judgement(verdict, tuple(out))


def judge(comparisons: Sequence[Comparison], alpha: float = ALPHA_CHECK) -> str:
    """The verdict of :func:`judged`; pure.

    An empty list: ``PASS`` (vacuous; a check without comparisons FAILS in :func:`verify.claim.run_check`).
    """
    judgement = judged(comparisons, alpha)
    return judgement.verdict if judgement.comparisons else "PASS"


def rates_text() -> str:
    """One sentence with the stated error rates (report header)."""
    return (f"False-FAIL rate per check <= {ALPHA_CHECK:.2g} (Holm over its comparisons), whole report <= "
            f"{ALPHA_REPORT:.0%} ({N_STOCHASTIC_CHECKS} stochastic checks, Bonferroni); PASS needs evidence "
            f"at {ALPHA_PASS:.0%} for direction and equivalence claims, while consistency and bound claims PASS "
            "unless a violation is significant (their power is stated); INCONCLUSIVE = neither.")


def describe(c: Comparison) -> str:
    """One line: the comparison's test and its p-values (and, when undecided, how much more data would decide it)."""
    def p(x):
        return "" if x is None else f"{x:.2g}"

    decide = f"; ~{c.decide_factor:.1f}x data to decide" if c.outcome == "INCONCLUSIVE" and c.decide_factor else ""
    if c.kind == "equivalence":
        return f"equivalence within ±{c.margin:g}: TOST p={p(c.p_pass)}, beyond-margin p={p(c.p_fail)}{decide}"
    if c.kind == "direction":
        return f"sign test: p={p(c.p_pass)}, opposite-sign p={p(c.p_fail)}{decide}"
    if c.kind == "bound":
        return f"bound (finite-size / inequality): violation p={p(c.p_fail)}"
    if c.kind == "consistency":
        return f"identity: two-sided p={p(c.p_fail)}"
    text = str(c.tolerance)
    return text if len(text) <= 60 else text[:57] + "..."
