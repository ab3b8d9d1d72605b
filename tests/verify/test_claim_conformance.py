"""Every registered claim, run once at the smoke profile, obeys the shape of :class:`verify.claim.Claim`.

One run per claim (figures drawn, so every part runs) checks:

- the evidence is judged exactly once: the claim's ``judge`` is called once, :func:`verify.verdicts.judged` once,
  and ``describe`` and ``figure`` receive the judged comparisons (never judging again);
- judging changes none of its inputs (the rows are frozen; their JSON is the same after the run);
- the outcome's verdict is the judgement of the rows and ``run_check`` keeps it;
- the stored result judged again (:func:`verify.claim.rejudge_stored`, the JSON round trip) gives the same
  verdict and the same outcome on every row;
- every figure reads at a glance (:func:`figure_lint.figure_problems` finds nothing; the title names the claim
  and its verdict).

Smoke sizes make the verdicts meaningless; the false-FAIL rate of each judge is measured on synthetic data in the
``test_judges_*`` files with :func:`conftest.max_false_fails`.
"""

from __future__ import annotations

import dataclasses
import json

import matplotlib
import pytest

matplotlib.use("Agg")

import verify.claim as claim_module  # noqa: E402
from figure_lint import figure_problems  # noqa: E402
from verify import verdicts  # noqa: E402
from verify import figures as F  # noqa: E402
from verify.claim import all_claims, claim_of  # noqa: E402
from verify.context import CheckContext  # noqa: E402
from verify.results import CheckResult, Verdict  # noqa: E402
from verify.claim import rejudge_stored  # noqa: E402
from verify.verdicts import judged  # noqa: E402

#: every registered claim
IDS = [c.id for c in all_claims()]
#: the claims whose figures follow :mod:`verify.figures`' conventions and are inspected (B4's two figures are drawn,
#: not inspected)
FIGURE_IDS = {"A1", "A2", "A3", "A4", "A5", "A6", "B1", "B2", "B3", "B5", "B6", "B7", "B8", "B9", "B10", "B11"}
#: the claims whose describe or figure select rows (by :attr:`verify.results.Comparison.key`): every row keyed, no two
#: rows with the same key
KEYED_IDS = {"A2", "A3", "A4", "A5", "B1", "B2", "B3", "B5", "B6", "B7", "B8", "B9", "B10", "B11"}


def _spy(claim, calls: dict, seen: dict):
    """A copy of ``claim`` whose parts count their calls and keep what they were given (figures inspected)."""

    def judge(design, prediction, measurement):
        calls["judge"] += 1
        rows = list(claim.judge(design, prediction, measurement))
        seen["rows"], seen["rows_json"] = rows, [c.to_json() for c in rows]
        return rows

    def describe(design, prediction, measurement, comparisons):
        seen["described"] = list(comparisons)
        return claim.describe(design, prediction, measurement, comparisons)

    def figure(design, prediction, measurement, judgement):
        seen["figure_judgement"] = judgement
        figs = claim.figure(design, prediction, measurement, judgement)
        if figs is not None:
            seen["problems"] = {name: (figure_problems(fig), fig._suptitle.get_text() if fig._suptitle else "")
                                for name, fig in (figs if isinstance(figs, dict) else {claim.figure_name: figs}).items()}
        return figs

    return dataclasses.replace(claim, judge=judge, describe=describe, figure=figure)


@pytest.mark.parametrize("cid", IDS)
def test_claim_is_judged_once_purely_and_round_trips(cid, tmp_path, monkeypatch):
    claim = claim_of(cid)
    calls, seen = {"judge": 0, "judged": 0}, {}

    def counting_judged(comparisons, *args, **kw):
        calls["judged"] += 1
        return judged(comparisons, *args, **kw)

    # every route to a verdict goes through verify.verdicts.judged (verdicts.judge and run_check call it too)
    monkeypatch.setattr(claim_module, "judged", counting_judged)
    monkeypatch.setattr(verdicts, "judged", counting_judged)
    ctx = CheckContext(profile="smoke", report_dir=tmp_path, cache_dir=None, n_jobs=1, check_id=cid)
    out = _spy(claim, calls, seen).run(ctx)

    assert calls == {"judge": 1, "judged": 1}
    assert [c.to_json() for c in seen["rows"]] == seen["rows_json"]  # judging changed none of its inputs
    expected = judged(seen["rows"])
    assert out.verdict == expected.verdict
    assert tuple(out.comparisons) == expected.comparisons == tuple(seen["described"])
    assert all(c.outcome for c in out.comparisons)
    if "figure_judgement" in seen:
        assert seen["figure_judgement"].comparisons == expected.comparisons
        assert seen["figure_judgement"].verdict == out.verdict
    for name, (problems, title) in seen.get("problems", {}).items() if cid in FIGURE_IDS else ():
        assert not problems, f"{cid} {name}: " + "; ".join(problems)
        assert title.startswith(f"{cid}:") and out.verdict in title, title  # the claim and its verdict
    assert out.figures or claim.figure is claim_module.Claim.__dataclass_fields__["figure"].default
    _words_match_the_judge(claim.statement, out.comparisons, cid)
    if cid in KEYED_IDS:
        keys = [c.key for c in out.comparisons]
        assert all(keys) and len(set(keys)) == len(keys), f"{cid}: rows without a key or sharing one"

    result = CheckResult(id=cid, paper=cid[0], claim="", verdict=out.verdict, comparisons=out.comparisons)
    stored = json.loads(json.dumps(result.to_json()))
    verdict, rows = rejudge_stored(stored)
    assert verdict is Verdict(out.verdict)
    assert [c.outcome for c in rows] == [c.outcome for c in out.comparisons]


#: words of a claim's statement that name a kind of test, and the kind they name
RULE_WORDS = {"equivalence": "equivalence", "within 0.0": "equivalence", "margin": "equivalence"}


def _words_match_the_judge(statement: str, comparisons, cid: str = "") -> None:
    """The claim's statement (which the report, ``--list`` and docs/claims.md print) names no kind of test that its
    judge does not use: an "equivalence within 0.03" over a consistency judge fails here."""
    text = statement.lower()
    kinds = {c.kind for c in comparisons}
    for word, kind in RULE_WORDS.items():
        assert word not in text or kind in kinds, f"{cid}'s statement says {word!r}; its judge has no {kind} test"


def test_rule_words_are_caught():
    """The check above can fail: a statement with "equivalence within 0.03" over consistency rows is refused."""
    from verify.results import Comparison

    rows = [Comparison.consistency("slope", -0.8, -0.79, 0.01)]
    with pytest.raises(AssertionError, match="equivalence"):
        _words_match_the_judge("slope matches -4/5 (equivalence within 0.03)", rows, "A2")
    _words_match_the_judge(claim_of("A2").statement, rows, "A2")


def test_run_check_keeps_a_claims_judgement(monkeypatch):
    """Through ``run_check`` (what the report and ``calibrate`` call) a claim is still judged once."""
    from verify.claim import run_check

    calls = []

    def counting_judged(comparisons, *args, **kw):
        calls.append(len(comparisons))
        return judged(comparisons, *args, **kw)

    monkeypatch.setattr(claim_module, "judged", counting_judged)
    monkeypatch.setattr(verdicts, "judged", counting_judged)
    res = run_check(claim_of("B5"), CheckContext(profile="smoke", cache_dir=None, n_jobs=1))
    assert res.error is None and len(calls) == 1 and calls[0] == len(res.comparisons)
