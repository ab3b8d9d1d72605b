"""Sequential verdicts: a check adds replicates of its design until its verdict is decided, at stated error rates.

Replicates and rounds
    Replicate ``r`` of a check is its whole base design (the profile's sizes) drawn at the seed
    :func:`replicate_seed` ``(seed, r)``; replicate 0 is the run's own seed, i.e. the fixed-design run.  Round
    0 is replicate 0, round ``j >= 1`` adds replicates ``2^(j-1) .. 2^j - 1``, so that after round ``j`` the check
    holds ``n = 2^j`` replicates.  A round's data depend only on the seed, the check and the round's index (each
    replicate is cached under its own seed like any run), so a run that continues another gives the verdicts and
    values of one run that completed the same rounds.
Pooling (:func:`pooled`)
    Each stochastic comparison is rebuilt from the replicates' estimates: the equal-weight mean of ``measured -
    predicted`` (of ``measured - reference`` for a direction, of the excess for a bound), standard error
    ``sqrt(sum se_r^2) / n``, degrees of freedom ``sum df_r`` (normal when any replicate's is).  The replicates
    share one design, so equal weights are the "more replicates / more trials" estimator, unbiased whatever the
    noise of the SEs.  An exact comparison holds when it holds in every replicate.
Looks and error rates (:func:`look_levels`)
    The pooled table is judged after every round ``j`` (a look) with Holm at ``ALPHA_CHECK w_j`` for FAIL and the
    evidence tests at ``ALPHA_PASS w_j`` for PASS, ``w_j = 1 / ((j + 1)(j + 2))`` (``sum_j w_j = 1``).  By the union
    bound over looks, whatever stops the sequence (a decided verdict, a budget, an interrupt, any rule that looks
    at the data), a check whose claim holds FAILS with probability at most ``ALPHA_CHECK`` and one whose claim is
    false PASSES with probability at most ``ALPHA_PASS``; the report's family-wise bound (Bonferroni over checks)
    stays.  The price: round 0 alone decides at half the fixed design's levels (FAIL at ``z > 3.36`` instead of
    ``3.17``, PASS at ``1.96`` instead of ``1.64``), round 3 (8 replicates) at ``w_3 = 1/20``.
Cost to decide (:func:`replicates_to_decide`)
    Taking the current pooled estimates as the truth, the first look at which every undecided comparison would be
    decided (SE shrinking like ``1 / sqrt(n)``); :mod:`verify.budget` spends its time where that comes cheapest."""

from __future__ import annotations

import hashlib
import math
import numbers
from collections import Counter
from dataclasses import replace
from typing import Any, Sequence

from .results import Comparison
from .validation import MAX_SEED
from .verdicts import ALPHA_CHECK, ALPHA_PASS, Judgement, judged, z_quantile


#: the last round a sequence may reach (2^20 replicates: beyond any budget)
MAX_ROUND = 20


def spend(j: int) -> float:
    """The share ``w_j = 1 / ((j + 1)(j + 2))`` of the error rates that look ``j`` spends (``sum_j w_j = 1``).

    Examples
    --------
    >>> [round(spend(j), 4) for j in range(4)]
    [0.5, 0.1667, 0.0833, 0.05]
    """
    return 1.0 / ((j + 1) * (j + 2))


def look_levels(j: int) -> tuple[float, float]:
    """``(FAIL level, PASS level)`` of look ``j``: ``ALPHA_CHECK w_j`` (Holm within the check), ``ALPHA_PASS w_j``."""
    return ALPHA_CHECK * spend(j), ALPHA_PASS * spend(j)


def replicates_after(j: int) -> int:
    """Replicates a check holds after round ``j``: ``2^j``."""
    return 2**j


def round_of(n: int) -> int | None:
    """The round after which a check holds ``n`` replicates (``n = 2^j``), or ``None`` between two looks."""
    j = n.bit_length() - 1
    return j if n == 1 << j and j <= MAX_ROUND else None


def replicate_seed(seed: int, r: int) -> int:
    """Base seed of replicate ``r`` of a run at ``seed``: ``seed`` itself for ``r = 0``, else a hash of both
    (integers only: the same data on every machine and in every run).

    Examples
    --------
    >>> replicate_seed(7, 0)
    7
    >>> replicate_seed(7, 1) == replicate_seed(7, 1) != replicate_seed(8, 1)
    True
    """
    if r == 0:
        return seed
    digest = hashlib.sha256(f"replicate|{seed}|{r}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & MAX_SEED


# ------------------------------------------------------------------------------------------ pooling
def _num(x: Any) -> float | None:
    """A real number (Python or NumPy, not a bool) as a float, else ``None``."""
    return float(x) if isinstance(x, numbers.Real) and not isinstance(x, bool) else None


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


def _pooled_se(ses: list[float]) -> float:
    """The standard error of the mean of ``len(ses)`` independent estimates: ``sqrt(sum se^2) / n``."""
    return math.sqrt(math.fsum(s * s for s in ses)) / len(ses)


def _pool_row(rows: list[Comparison]) -> Comparison:
    """One comparison from its replicates (module docstring); a row without ``args`` is replicate 0's."""
    first = rows[0]
    if first.kind == "exact":
        return replace(first, passed=all(c.passed for c in rows), outcome="")
    args = [dict(c.args) for c in rows]
    if len(rows) == 1 or not args[0] or any(a.keys() != args[0].keys() for a in args):
        return replace(first, outcome="", passed=False)
    out = dict(args[0], se=_pooled_se([_num(a["se"]) for a in args]))
    if first.kind == "bound":  # the excess (with its own SE when given, else ``se``) and the statistic, each averaged
        out["excess"] = _mean([_num(a["excess"]) for a in args])
        if out["excess_se"] is not None:
            out["excess_se"] = _pooled_se([_num(a["excess_se"]) for a in args])
        measured = [_num(a["measured"]) for a in args]
        if None not in measured:
            out["measured"] = _mean(measured)
    else:  # the mean difference from the prediction (from the reference of a direction)
        centres = [_num(a["reference"]) if first.kind == "direction" else _num(c.predicted) for c, a in zip(rows, args)]
        out["measured"] = centres[0] + _mean([_num(a["measured"]) - c for a, c in zip(args, centres)])
    dfs = [a["df"] for a in args]
    out["df"] = None if any(d is None or not math.isfinite(float(d)) for d in dfs) else float(sum(dfs))
    return getattr(Comparison, first.kind)(first.name, first.predicted, headline=first.headline, key=first.key, **out)


def pooled(replicates: Sequence[Sequence[Comparison]]) -> list[Comparison]:
    """The evidence table of ``n`` replicates of one check, unjudged (rules: module docstring).

    Rows are matched by key, name and occurrence, in replicate 0's order, and pooled over the replicates that have
    them; where a row is not a finite measurement, the pooled row is the first failed one (never averaged away).

    Examples
    --------
    >>> a = Comparison.direction("gap", "> 0", 0.02, 0.02, +1)
    >>> b = Comparison.direction("gap", "> 0", 0.04, 0.02, +1)
    >>> row = pooled([[a], [b]])[0]
    >>> round(row.measured, 4), round(row.uncertainty, 4)
    (0.03, 0.0141)
    """
    keyed: dict[tuple[tuple, str, int], list[Comparison]] = {}
    for rows in replicates:
        seen: Counter = Counter()
        for c in rows:
            ident = (c.key, c.name)
            keyed.setdefault((*ident, seen[ident]), []).append(c)
            seen[ident] += 1
    out = []
    for rows in keyed.values():
        bad = [c for c in rows if c.kind != "exact" and c.args and not _numeric_ok(c)]
        out.append(replace(bad[0], outcome="", passed=False) if bad else _pool_row(rows))
    return out


def _numeric_ok(c: Comparison) -> bool:
    """Whether a stochastic row's inputs are finite numbers (a failed measurement keeps its FAIL unpooled)."""
    a = dict(c.args)
    values = [_num(a.get(k)) for k in (("measured", "se") if c.kind != "bound" else ("excess",))]
    return all(v is not None and math.isfinite(v) for v in values)


def judge_look(comparisons: Sequence[Comparison], j: int) -> Judgement:
    """Judge the pooled table at look (round) ``j``: :func:`verify.verdicts.judged` at :func:`look_levels`."""
    return judged(comparisons, *look_levels(j))


# ------------------------------------------------------------------------------------------ cost to decide
def _decided_at(c: Comparison, scale: float, fail_level: float, pass_level: float) -> bool:
    """Whether ``c``'s current estimate, with its SE divided by ``sqrt(scale)``, decides at the given levels."""
    a = dict(c.args)
    se = _num(a.get("se"))
    if se is None or not se > 0:
        return True
    se = se / math.sqrt(scale)
    z_pass, z_fail = z_quantile(pass_level), z_quantile(fail_level)
    if c.kind == "equivalence":
        d, m = abs(_num(a["measured"]) - _num(c.predicted)), _num(a["margin"])
        return d + z_pass * se < m or d - m > z_fail * se
    if c.kind == "direction":
        z = a["sign"] * (_num(a["measured"]) - _num(a["reference"])) / se
        return z > z_pass or -z > z_fail
    return True


def boundaries(c: Comparison, j: int, n_stochastic: int = 1) -> str:
    """The decision boundaries of ``c`` at look ``j``, in the units of its estimate (progress lines); ``""`` for a
    comparison that cannot be undecided (exact, bound, consistency) or without its inputs.

    The FAIL boundary is Bonferroni's over the check's ``n_stochastic`` stochastic rows (Holm's first step).

    Examples
    --------
    >>> boundaries(Comparison.direction("gap", "> 0", 0.01, 0.01, +1), 0)
    'PASS if > +0.0196, FAIL if < -0.0342'
    """
    fail_level, pass_level = look_levels(j)
    a = dict(c.args)
    se = _num(a.get("se"))
    if c.kind not in ("equivalence", "direction") or se is None or not math.isfinite(se):
        return ""
    z_pass, z_fail = z_quantile(pass_level), z_quantile(fail_level / n_stochastic)
    if c.kind == "direction":
        sign, ref = a["sign"], _num(a["reference"])
        cmp_pass, cmp_fail = (">", "<") if sign > 0 else ("<", ">")
        return (f"PASS if {cmp_pass} {ref + sign * z_pass * se:+.3g}, "
                f"FAIL if {cmp_fail} {ref - sign * z_fail * se:+.3g}")
    m = _num(a["margin"])
    inner = m - z_pass * se
    return (f"PASS if |measured - predicted| < {inner:.3g}" if inner > 0 else "PASS out of reach at this SE") + \
        f", FAIL if > {m + z_fail * se:.3g}"


def replicates_to_decide(judgement: Judgement, n: int) -> int | None:
    """Replicates at which the current estimates would decide every undecided comparison (``None``: none within
    :data:`MAX_ROUND` rounds); ``n`` when nothing is undecided.

    ``judgement``: the pooled table judged at the look of ``n`` replicates; a later look's FAIL level is Bonferroni's
    over the stochastic rows (Holm decides as soon).
    """
    open_rows = [c for c in judgement.comparisons if c.outcome == "INCONCLUSIVE" and c.args]
    if not open_rows:
        return n
    m = max(1, sum(c.kind != "exact" for c in judgement.comparisons))
    for j in range(n.bit_length(), MAX_ROUND + 1):
        fail_level, pass_level = look_levels(j)
        if all(_decided_at(c, 2 ** j / n, fail_level / m, pass_level) for c in open_rows):
            return 2 ** j
    return None
