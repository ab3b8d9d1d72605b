"""``python -m verify compare``: two reports comparison by comparison."""

import json

import pytest

from verify.cli import main as cli_main
from verify.compare import compare_reports, load_report
from verify.results import CheckResult, Comparison, Verdict


def _result(measured: float = 1.0, verdict: Verdict = Verdict.PASS, extra: bool = False) -> dict:
    comps = [Comparison("slope", -0.5, measured, 0.1, "within 3 SE", True, key={"quantity": "slope"}),
             Comparison("slope", -0.5, 2.0, 0.1, "within 3 SE", True),  # a repeated name is matched by its order
             Comparison("sign", 1, 1, None, "exact", True)]
    if extra:
        comps.append(Comparison("extra", 0, 0, None, "exact", True))
    return CheckResult("A9", "A", "a claim", verdict, comps, runtime_s=1.0).to_json()


def _write(path, results, **meta) -> str:
    path.write_text(json.dumps({"schema_version": 3, **meta, "results": results}))
    return str(path)


def test_identical_reports_agree_whatever_their_runtimes_and_notes(tmp_path):
    a, b = _result(), _result()
    b["runtime_s"], b["notes"] = 99.0, "other notes"
    diff = compare_reports([a], [b])
    assert diff.identical and (diff.n_checks, diff.n_comparisons) == (1, 3)
    assert cli_main(["compare", _write(tmp_path / "a.json", [a]), _write(tmp_path / "b.json", [b])]) == 0


def test_a_changed_number_a_verdict_and_a_missing_comparison_are_listed(tmp_path, capsys):
    a, b = _result(), _result(measured=1.25, verdict=Verdict.FAIL, extra=True)
    diff = compare_reports([a], [b])
    assert not diff.identical
    assert diff.verdicts == (("A9", "PASS", "FAIL"),)
    assert diff.fields == (("A9", "slope", "measured", 1.0, 1.25),)
    assert diff.only_new == ("A9: extra",) and diff.only_old == ()
    assert compare_reports([a], [b], rtol=0.5).fields == ()  # within the relative tolerance
    assert cli_main(["compare", _write(tmp_path / "a.json", [a]), _write(tmp_path / "b.json", [b])]) == 1
    out = capsys.readouterr().out
    assert "verdict A9: PASS -> FAIL" in out and "only in NEW: A9: extra" in out and "1 comparisons changed" in out


def test_second_comparison_of_a_repeated_name_is_matched_by_order():
    a, b = _result(), _result()
    b["comparisons"][1]["measured"] = 3.0
    assert compare_reports([a], [b]).fields == (("A9", "slope [#2]", "measured", 2.0, 3.0),)


def test_checks_present_in_one_report_and_only_filter(tmp_path):
    a, b = _result(), dict(_result(), id="B1")
    diff = compare_reports([a], [b])
    assert diff.only_old == ("A9",) and diff.only_new == ("B1",) and diff.n_checks == 0
    pa, pb = _write(tmp_path / "a.json", [a, b]), _write(tmp_path / "b.json", [b])
    assert cli_main(["compare", pa, pb]) == 1
    assert cli_main(["compare", pa, pb, "--only", "B1"]) == 0


def test_a_stored_record_loads_as_one_result_and_bad_files_exit_2(tmp_path, capsys):
    rec = tmp_path / "A9_seed0.json"
    rec.write_text(json.dumps(_result()))
    assert [r["id"] for r in load_report(rec)] == ["A9"]
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(SystemExit) as exc:
        cli_main(["compare", str(bad), str(rec)])
    assert exc.value.code == 2 and "neither a report" in capsys.readouterr().err
    with pytest.raises(ValueError, match="not a readable JSON"):
        load_report(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="rtol"):
        compare_reports([], [], rtol=-1)
