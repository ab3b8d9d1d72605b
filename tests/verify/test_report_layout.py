"""Layout of the terminal table and of report.md: the compact table fits 100 columns, a row
takes at most 3 lines, the rule only under ``-v`` (a label per row, each rule said once below the table); in a log
(not a terminal) one plain line per check, never wrapped; report.md opens with a summary table and contents, and
folds long notes."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from rich.console import Console

from verify.results import CheckResult, Comparison, Verdict
from verify.report import markdown_report, print_results, print_summary, results_table, rules_lines

ROOT = Path(__file__).resolve().parents[2]
STORED = ROOT / "reports" / "quick_seed0.json"


def _results_from(path: Path) -> list[CheckResult]:
    doc = json.loads(path.read_text())
    return [CheckResult(id=r["id"], paper=r["paper"], claim=r["claim"], verdict=Verdict(r["verdict"]),
                        comparisons=[Comparison.from_json(c) for c in r["comparisons"]], runtime_s=r["runtime_s"],
                        seeds=r["seeds"], notes=r["notes"], error=r["error"]) for r in doc["results"]]


def _hand_made() -> list[CheckResult]:
    long = "a very long comparison name " * 12
    c1 = Comparison("slope P=3", -0.8, -0.8150123, 0.0095834, "equivalence within 0.03", True, outcome="PASS",
                    headline=True)
    c2 = Comparison(long, "E_att strictly decreasing in strength at every gamma " * 3,
                    "max increase -0.00297; gap to ridge at gamma=1e-2: 0.03271 -> 0.01595 " * 3, None,
                    "rule " * 40, False, outcome="FAIL")
    return [
        CheckResult("A1", "A", "claim one", Verdict.PASS, [c1], 1.0, notes="short notes."),
        CheckResult("B4-rev", "B", "claim two", Verdict.FAIL, [c1, c2], 2.0, notes="Sentence. " * 300),
        CheckResult("B9", "B", "claim three", Verdict.INCONCLUSIVE),
        CheckResult("B8", "B", "claim four", Verdict.ERROR, error="Traceback\nValueError: " + "x " * 200),
    ]


def _render(results: list[CheckResult], verbose: bool = False, width: int = 100) -> list[str]:
    console = Console(width=width, record=True, file=open(os.devnull, "w"))
    console.print(results_table(results, title="t", verbose=verbose))
    return console.export_text().splitlines()


def _row_heights(lines: list[str]) -> list[int]:
    """Lines per body row: a row starts where the id cell (first column) is not blank."""
    body = [ln for ln in lines if ln.startswith("│")]
    starts = [k for k, ln in enumerate(body) if ln[1:].split("│")[0].strip()]
    return [b - a for a, b in zip(starts, starts[1:] + [len(body)])]


@pytest.mark.parametrize("source", ["stored", "hand"])
@pytest.mark.parametrize("width", [100, 180])
def test_compact_table_fits_100_columns(source, width):
    if source == "stored" and not STORED.exists():
        pytest.skip("no stored report")
    results = _results_from(STORED) if source == "stored" else _hand_made()
    lines = _render(results, width=width)
    assert max(len(ln) for ln in lines) <= 100
    heights = _row_heights(lines)
    assert len(heights) == len(results) and max(heights) <= 3, heights
    header = "\n".join(lines[:4])
    for name in ("id", "verdict", "held", "headline", "predicted", "measured ± unc."):
        assert name in header
    assert "tolerance rule" not in header


def test_verbose_table_labels_each_row_with_its_rule_said_once():
    results = _hand_made()
    lines = _render(results, verbose=True, width=300)
    header = "\n".join(lines[:4])
    assert "z / margin" in header and "rule" in header and "tolerance rule" not in header
    assert "equivalence within 0.03" not in "\n".join(lines)  # the rule is said below the table, once
    b4 = [ln for ln in lines if "a very long comparison name" in ln or "slope P=3" in ln][-2:]
    assert "a very long comparison name" in b4[0] and "slope P=3" in b4[1]  # B4-rev: its FAIL row first
    rules = rules_lines(results)
    assert rules[:2] == ["A1 R1 (1 row): equivalence within 0.03", "B4-rev R1 (1 row): equivalence within 0.03"]
    assert rules[2].startswith("B4-rev R2 (1 row): rule rule")


def test_a_log_gets_one_whole_line_per_check():
    """stdout not a terminal (CI, ``| tee``): one line per check, the headline whole, no line wrapped."""
    buf = io.StringIO()
    console = Console(file=buf, width=80)
    assert not console.is_terminal
    results = _hand_made()
    print_results(console, results, "Verification report (profile quick, seed 0)")
    print_summary(console, results, 1, False)
    lines = buf.getvalue().splitlines()
    assert lines[0] == "Verification report (profile quick, seed 0)"
    assert [ln.split()[:2] for ln in lines[1:5]] == [["A1", "PASS"], ["B4-rev", "FAIL"], ["B9", "INCONCLUSIVE"],
                                                     ["B8", "ERROR"]]
    assert "a very long comparison name " * 12 in lines[2]  # the FAIL row shown whole, on one line
    assert lines[1].endswith("slope P=3: -0.815 ± 0.009583 vs -0.8")
    assert any(len(ln) > 80 and ln.startswith("False-FAIL rate per check") for ln in lines)  # not wrapped
    assert not any("│" in ln for ln in lines)


def test_markdown_opens_with_summary_contents_and_folds_notes(tmp_path):
    results = _hand_made()
    md = markdown_report(results, {"profile": "quick", "seed": 0, "strict": False, "started_utc": "now",
                                   "python": "3", "platform": "p"}, 1, tmp_path)
    first_section = md.index("\n## A1: PASS")
    head = md[:first_section]
    assert "| id | verdict | held | headline | measured vs predicted |" in head
    assert "[A1](#a1-pass)" in head and "[B4-rev](#b4-rev-fail)" in head and "(#b9-inconclusive)" in head
    assert "## Contents" in head and "- [B8: ERROR](#b8-error)" in head
    assert "-0.815 ± 0.009583 vs -0.8" in head
    for r in results:
        assert f"\n## {r.id}: {r.verdict.value}\n" in md
    b4 = md[md.index("## B4-rev: FAIL"):md.index("## B9")]
    assert "<details><summary>Full notes</summary>" in b4 and "</details>" in b4
    opening = b4.split("<details>")[0].split("\n\n")
    assert all(len(p) <= 400 for p in opening if not p.startswith(("|", "**")))  # notes (not the headline line)
    folded = b4[b4.index("<details>"):b4.index("</details>")]
    assert all(len(p) <= 400 for p in folded.split("\n\n"))
    assert folded.count("Sentence.") == 300  # the full notes, nothing lost
    assert "short notes." in md and "<details>" not in md[md.index("## A1"):md.index("## B4-rev")]
    assert "equivalence within 0.03" in md  # the rule stays in the report
