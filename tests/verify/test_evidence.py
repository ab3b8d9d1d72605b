"""A check's evidence as the reports show it (:mod:`verify.evidence`): the rule said once per group of rows, the
numbers that differ from row to row elided there and kept per row (folded in report.md / report.html, whole in
report.json), a short test statistic per row, FAIL / INCONCLUSIVE / near misses first."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from verify.evidence import evidence, near_miss, rule_template, statistic_text
from verify.report import markdown_report, to_json
from verify.report_html import html_report
from verify.results import CheckResult, Comparison, Verdict
from verify.verdicts import judged

META = {"profile": "quick", "seed": 0, "strict": False, "started_utc": "now", "python": "3", "platform": "p"}
#: a finite-size rule as paper B's checks write it (verify/checks/_finite_size.py): per-row numbers in a fixed text
FINITE_SIZE = ("|gap at n=256| = {gap:.3g} <= q |gap at n=128| + t hypot(SE_l, q SE_s) = {a:.3g} + {b:.3g} = {c:.3g}, "
               "q = (n=128/n=256)^0.5 = 0.707 (t = {t:.3g}, the Student-t quantile at the Welch df {df:.1f})")


def _bound_rows(n: int = 30, worst: float = 0.0) -> list[Comparison]:
    rows = []
    for k in range(n):
        excess = worst if k == n - 1 else -0.001 * (k + 1)
        rule = FINITE_SIZE.format(gap=1e-3 * (k + 1), a=2e-4 * (k + 1), b=3e-3, c=3.2e-3 + 2e-4 * k, t=3.1 + k / 100,
                                  df=70 + k)
        rows.append(Comparison.bound(f"gamma={k}", 0.01 * k, 0.01 * k + 0.001, 0.002, excess, excess_se=0.002,
                                     df=70.0 + k, rule=rule))
    return list(judged(rows).comparisons)


def test_rows_of_one_rule_share_one_text_with_their_varying_numbers_elided():
    rows = _bound_rows()
    groups, table = evidence(rows)
    assert len(groups) == 1 and groups[0].label == "R1" and len(groups[0].rows) == 30
    text = groups[0].text
    assert text.startswith("|gap at n=256| <= q |gap at n=128| + t hypot(SE_l, q SE_s), q = (n=128/n=256)^0.5 = 0.707")
    # the varying numbers elided, the chains of per-row arithmetic ("= 2e-4 + 0.003 = 3.2e-3") left out
    assert "(t, the Student-t quantile at the Welch df …)" in text and "0.003" not in text
    assert "Test (bound): FAIL iff the excess" in text and "Student's t" in text
    assert all(r.rule == "R1" and r.statistic.startswith("z = ") for r in table)
    assert {rule_template(c.tolerance) for c in rows} == {rule_template(rows[0].tolerance)}


def test_doubtful_rows_come_first():
    base = _bound_rows(5)
    fail = judged([Comparison.bound("violated", 0.0, 1.0, 0.01, 0.5, excess_se=0.01)]).comparisons[0]
    near = judged([Comparison.bound("close", 0.0, 1.0, 0.01, 0.02, excess_se=0.01)]).comparisons[0]
    undecided = judged([Comparison.direction("undecided", 0.0, 0.001, 0.01, +1)]).comparisons[0]
    assert (fail.outcome, near.outcome, undecided.outcome) == ("FAIL", "PASS", "INCONCLUSIVE")
    assert near_miss(near) and not near_miss(base[0]) and not near_miss(fail)
    rows = [base[0], near, base[1], undecided, fail, base[2]]
    _, table = evidence(rows)
    assert [r.comparison.name for r in table] == ["violated", "undecided", "close", "gamma=0", "gamma=1", "gamma=2"]
    assert [r.outcome for r in table[:3]] == ["FAIL", "INCONCLUSIVE", "PASS (near)"]


def test_statistic_per_kind():
    eq = Comparison.equivalence("slope", -0.8, -0.79, 0.005, 0.03)
    assert statistic_text(eq) == "|d| 0.01 vs ±0.03"
    assert statistic_text(Comparison.direction("sign", 0.0, 0.3, 0.1, +1)) == "z = +3.00"
    assert statistic_text(Comparison.consistency("id", 1.0, 0.8, 0.1)) == "z = -2.00"
    assert statistic_text(Comparison.bound("b", 0.0, 1.0, 0.1, -0.05, excess_se=0.01)) == "z = -5.00"
    assert statistic_text(Comparison("exact", 1, 1, None, "exact limit", True)) == "exact"


def test_stored_rows_group_as_the_live_ones():
    rows = _bound_rows(6) + list(judged([Comparison.equivalence("slope", -0.8, -0.79, 0.005, 0.03)]).comparisons)
    stored = [dataclasses.replace(Comparison.from_json(json.loads(json.dumps(c.to_json()))), outcome=c.outcome)
              for c in rows]
    live, back = evidence(rows), evidence(stored)
    assert [(g.label, g.text, g.rows) for g in live[0]] == [(g.label, g.text, g.rows) for g in back[0]]
    assert [(r.index, r.statistic, r.outcome) for r in live[1]] == [(r.index, r.statistic, r.outcome) for r in back[1]]


def _visible(page: str) -> str:
    """The page without its folded parts (``<details>``)."""
    return re.sub(r"<details>.*?</details>", "", page, flags=re.S)


def test_the_reports_say_the_rule_once_and_keep_every_row_number(tmp_path):
    rows = _bound_rows(worst=0.05)
    r = CheckResult("B1", "B", "a claim", Verdict(judged(rows).verdict), rows, 1.0)
    page = html_report([r], META, 1, tmp_path)
    md = markdown_report([r], META, 1, tmp_path)
    for text in (page, md):
        shown = _visible(text)
        assert shown.count("hypot(SE_l, q SE_s)") == 1  # the rule once, not once per row
        assert all(c.tolerance.replace("|", "\\|") in text or c.tolerance in text.replace("&lt;", "<")
                   for c in rows)  # each row's numbers, folded
        # the FAIL row (the last one built) leads the table
        first_row = shown.index("gamma=29")
        assert all(shown.index(f"gamma={k}") > first_row for k in (0, 1, 28))
    assert page.count('<table class="evidence">') == 1 and "<th>z / margin</th>" in page
    stored = to_json([r], dict(META))["results"][0]["comparisons"]
    assert [c["tolerance"] for c in stored] == [c.tolerance for c in rows]  # report.json keeps every field
    assert set(stored[0]) == {f.name for f in dataclasses.fields(Comparison)}


def test_exact_rows_whose_rule_is_said_whole_fold_nothing(tmp_path):
    rows = [Comparison(f"limit {k}", "1", "1", None, "exact limit", True) for k in range(3)]
    r = CheckResult("A1", "A", "a claim", Verdict.PASS, rows, 1.0)
    page = html_report([r], META, 0, Path(tmp_path))
    assert "<details>" not in page and page.count("exact limit") == 1
