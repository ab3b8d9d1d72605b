"""A check's evidence table as the reports show it: the rule said once, the rows compact, the doubtful ones first.

Rows built by one rule differ only in the numbers of their ``Comparison.tolerance``: :func:`evidence` groups a
check's rows by their rule's *template* (every number replaced) and says each rule once (:class:`RuleGroup`), with
the numbers common to its rows and ``…`` where they differ (a chain ``= … + … = …`` of per-row arithmetic left
out).  A stochastic constructor's rule is said as the check's own rule (``args["rule"]``) and the test in words
(:data:`TESTS`); any other tolerance is its template.

Each row (:class:`Row`) keeps its full tolerance (report.json has it, report.html and report.md fold it) and gets one
short test statistic: ``z = ...`` (direction, bound, identity), the distance and its margin (equivalence), or
``exact``.  Reading order: FAIL, INCONCLUSIVE, near misses (:func:`near_miss`), then the rest in the check's order."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

from .results import Comparison
from .verdicts import ALPHA_PASS, z_score


#: a PASS row whose FAIL test has p below this is a near miss (it would fail a single test at 5%)
NEAR_P_FAIL = 0.05
#: a PASS row whose evidence test has p above this (and at most ALPHA_PASS) is a near miss (weak evidence)
NEAR_P_PASS = ALPHA_PASS / 5

#: the tests of the stochastic kinds in words, with their symbols (``{op}``, ``{diff}``: a direction's claim)
TESTS = {
    "equivalence": (f"PASS iff the {1 - 2 * ALPHA_PASS:.0%} interval of d = measured − predicted lies "
                    f"inside ±m (TOST at {ALPHA_PASS:.0%}); FAIL iff |d| > m is significant (Holm within the check)"),
    "direction": ("PASS iff z = {diff} / SE is significantly {op} 0 "
                  f"(one-sided, {ALPHA_PASS:.0%}); FAIL iff the opposite sign is significant (Holm within the check)"),
    "bound": ("FAIL iff the excess (the statistic minus its allowed maximum) is significantly above 0, "
              "z = excess / SE (one-sided, Holm within the check); PASS otherwise"),
    "consistency": ("FAIL iff d = measured − predicted is significantly non-zero, z = d / SE (two-sided, "
                    "Holm within the check); PASS otherwise"),
}
#: how a stochastic constructor's tolerance starts once the check's own rule is taken off
_PREFIX = {"equivalence": "equivalence, margin", "direction": "direction: claim", "bound": "bound: FAIL iff",
           "consistency": "identity: FAIL iff"}

#: a number in a rule's text: not part of a name (``SE_l``, ``KS(2n)``) nor an exponent after ``^``
_NUMBER = re.compile(r"(?<![\w.^])[-+]?(?:\d*\.\d+|\d+)(?:e[-+]?\d+)?(?!\w|\.\d)")
_ELIDED = "…"
#: a chain of per-row arithmetic, "= … + 0.003 = …" (left out when a number in it is elided)
_TERM = r"(?:…|[-+]?(?:\d*\.\d+|\d+)(?:e[-+]?\d+)?)"
_CHAIN = re.compile(rf"(?:\s+=\s+{_TERM}(?:\s+[-+*/]\s+{_TERM})*)+")


@dataclass(frozen=True)
class RuleGroup:
    """One rule of a check: ``label`` (``"R1"``, ...), the rule in words (``text``) and the indices of its rows."""

    label: str
    text: str
    rows: tuple


@dataclass(frozen=True)
class Row:
    """One comparison as the compact table shows it: its index in the check, the comparison, its rule's label,
    its test statistic (:func:`statistic_text`) and whether it is a near miss (:func:`near_miss`)."""

    index: int
    comparison: Comparison
    rule: str
    statistic: str
    near: bool

    @property
    def outcome(self) -> str:
        """The outcome, ``"PASS (near)"`` for a near miss."""
        return self.comparison.outcome + (" (near)" if self.near else "")


def rule_template(text: str) -> str:
    """``text`` with every number replaced by ``#``: the key that groups rows of one rule.

    >>> rule_template("t = 3.15 at the Welch df 76.8 of n=256")
    't = # at the Welch df # of n=#'
    """
    return _NUMBER.sub("#", text)


def _said_once(texts: Sequence[str]) -> str:
    """The rule of texts that share a template: numbers common to all kept, the others ``…``, chains dropped."""
    words, numbers = _NUMBER.split(texts[0]), [_NUMBER.findall(t) for t in texts]
    out = [words[0]]
    for k, first in enumerate(numbers[0]):
        out += [first if all(n[k] == first for n in numbers) else _ELIDED, words[k + 1]]
    said = _CHAIN.sub(lambda m: "" if _ELIDED in m.group(0) else m.group(0), "".join(out))
    return re.sub(r"\s+([,;)])", r"\1", said)


def _rule(c: Comparison) -> str:
    """The check's own rule (``args["rule"]``) of a stochastic constructor's row, ``""`` for any other row."""
    rule, tol, prefix = dict(c.args).get("rule"), c.tolerance, _PREFIX.get(c.kind)
    if not rule or not isinstance(rule, str) or prefix is None:
        return ""
    if c.kind in ("equivalence", "direction"):  # the rule follows the test, else it precedes it
        test = tol.removesuffix("; " + rule)
    else:
        test = tol.removeprefix(rule + "; ")
    return rule if test != tol and test.startswith(prefix) else ""


def _test_words(c: Comparison) -> str:
    """The test of a stochastic constructor's row in words (:data:`TESTS`), with its degrees of freedom."""
    words, kind = TESTS[c.kind], {"consistency": "identity"}.get(c.kind, c.kind)
    if c.kind == "direction":
        a = dict(c.args)
        op, ref = ">" if _real(a.get("sign", 1)) > 0 else "<", _real(a.get("reference", 0.0))
        words = words.format(op=op, diff=f"(measured − {ref:g})" if ref else "measured")
        kind = f"direction, claim {op} {ref:g}"
    return f"Test ({kind}): {words}" + ("; z referred to Student's t with the row's df" if c.df is not None else "")


def _key(c: Comparison) -> tuple:
    rule = _rule(c)
    return ("kind", _test_words(c), rule_template(rule)) if rule else ("text", rule_template(c.tolerance))


def rule_groups(comparisons: Sequence[Comparison]) -> list[RuleGroup]:
    """The rules of a check's comparisons, each once, in the order of their first row."""
    keys = [_key(c) for c in comparisons]
    groups = []
    for k, key in enumerate(dict.fromkeys(keys)):
        rows = tuple(i for i, x in enumerate(keys) if x == key)
        if key[0] == "kind":
            rule = _said_once([_rule(comparisons[i]) for i in rows])
            text = f"{rule.rstrip('. ')}. {key[1]}" if rule else key[1]
        else:
            text = _said_once([comparisons[i].tolerance for i in rows])
        groups.append(RuleGroup(f"R{k + 1}", text, rows))
    return groups


def _real(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def statistic_text(c: Comparison) -> str:
    """The row's test statistic in a few characters: ``z = ...`` (direction, bound, identity), ``|d| ... vs ±m``
    (equivalence) or ``exact``; from ``args``, else the FAIL test's p-value."""
    a = dict(c.args)
    if c.kind == "exact":
        return "exact"
    if c.kind == "equivalence" and "measured" in a and "margin" in a:
        d = _real(a["measured"]) - _real(c.predicted)
        return f"|d| {abs(d):.2g} vs ±{_real(a['margin']):.2g}"
    if c.kind == "bound" and "excess" in a:
        se = a.get("excess_se")
        se = _real(a.get("se") if se is None else se)
        return _z(_real(a["excess"]), se)
    if c.kind in ("direction", "consistency") and "measured" in a and "se" in a:
        ref = a.get("reference", 0.0) if c.kind == "direction" else c.predicted
        return _z(_real(a["measured"]) - _real(ref), _real(a["se"]))
    return "" if c.p_fail is None else f"p = {_real(c.p_fail):.2g}"


def _z(delta: float, se: float) -> str:
    if not (math.isfinite(delta) and math.isfinite(se)):
        return "z = nan"
    z = z_score(delta, se)
    return f"z = {z:+.2f}" if abs(z) < 1e4 else f"z = {z:+.1e}"


def near_miss(c: Comparison) -> bool:
    """Whether a PASS row nearly failed (its FAIL test at p < :data:`NEAR_P_FAIL`) or nearly stayed undecided
    (its evidence test at p_pass > :data:`NEAR_P_PASS`)."""
    if c.outcome != "PASS" or c.kind == "exact":
        return False
    p_fail, p_pass = _real(c.p_fail), _real(c.p_pass)
    return (math.isfinite(p_fail) and p_fail < NEAR_P_FAIL) or (math.isfinite(p_pass) and p_pass > NEAR_P_PASS)


def folds(groups: Sequence[RuleGroup], rows: Sequence[Row]) -> bool:
    """Whether a compact table of ``rows`` leaves something out that a folded per-row table shows: a rule's
    per-row numbers (a row whose tolerance is not its rule's text), or a test's p-values (a stochastic row)."""
    said = {g.label: g.text for g in groups}
    return any(r.comparison.kind != "exact" or r.comparison.tolerance != said[r.rule] for r in rows)


def rows_word(n: int) -> str:
    """``"1 row"``, ``"n rows"``."""
    return f"{n} row" + ("s" if n != 1 else "")


_RANK = {"FAIL": 0, "INCONCLUSIVE": 1}


def evidence(comparisons: Sequence[Comparison]) -> tuple[list[RuleGroup], list[Row]]:
    """A check's rules (each once, :func:`rule_groups`) and its rows in reading order (module docstring).

    >>> rows = [Comparison.direction(f"gap {g}", 0.1, m, 0.01, +1, rule="paired mean over 8 draws must be > 0")
    ...         for g, m in (("a", 0.2), ("b", 0.02))]
    >>> from verify.verdicts import judged
    >>> groups, table = evidence(list(judged(rows).comparisons))
    >>> len(groups), [r.comparison.name for r in table], table[0].statistic
    (1, ['gap b', 'gap a'], 'z = +2.00')
    """
    groups = rule_groups(comparisons)
    label = {i: g.label for g in groups for i in g.rows}
    rows = [Row(i, c, label[i], statistic_text(c), near_miss(c)) for i, c in enumerate(comparisons)]
    return groups, sorted(rows, key=lambda r: (_RANK.get(r.comparison.outcome, 3 if not r.near else 2), r.index))
