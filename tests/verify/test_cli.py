"""The command line of ``verify``: listing, exit codes, JSON schema, report directory, strict mode."""

from __future__ import annotations

import json
from datetime import datetime
import subprocess
import sys

import pytest

from conftest import fake_claims
from verify.claim import all_claims, claim_of
from verify.cli import main
from verify.context import CheckContext
from verify.results import CheckResult, Comparison, Outcome, Verdict
from verify.claim import exit_status, run_check


def _cmp(passed: bool) -> Comparison:
    return Comparison("x", 1.0, 1.0 if passed else 2.0, 0.1, "|m-p| <= 3 SE", passed)


@pytest.fixture
def fake_checks(monkeypatch):
    """Replace the registry with controlled checks: A1 passes, A2 fails, A3 raises."""
    fake = {
        "A1": lambda ctx: Outcome([_cmp(True)]),
        "A2": lambda ctx: Outcome([_cmp(True), _cmp(False)]),
        "A3": lambda ctx: 1 / 0,
    }
    fake_claims(monkeypatch, fake)
    return fake


def test_list_shows_all_17_claims(capsys):
    assert main(["--list"]) == 0
    out = capsys.readouterr().out
    claims = [c.id for c in all_claims()]
    for cid in claims:
        assert cid in out
    assert len(claims) == 17


def test_report_dir_none_writes_no_directory(fake_checks, tmp_path, monkeypatch):
    """``--report-dir none``, as ``--cache-dir none``: no report, and no directory named "none"."""
    monkeypatch.chdir(tmp_path)
    assert main(["--only", "A1", "--cache-dir", "none", "--report-dir", "none"]) == 0
    assert not (tmp_path / "none").exists() and not any(tmp_path.iterdir())


def test_unknown_id_is_an_error():
    with pytest.raises(SystemExit) as e:
        main(["--only", "Z9"])
    assert "Z9" in str(e.value)


def test_exit_codes(fake_checks, tmp_path):
    assert main(["--only", "A1", "--cache-dir", "none"]) == 0
    assert main(["--only", "A2", "--cache-dir", "none"]) == 1
    assert main(["--only", "A3", "--cache-dir", "none"]) == 1  # ERROR counts as failure


def test_verdict_logic(fake_checks):
    specs = {s.id: s for s in all_claims()}
    assert run_check(specs["A1"], CheckContext()).verdict is Verdict.PASS
    assert run_check(specs["A2"], CheckContext()).verdict is Verdict.FAIL
    res = run_check(specs["A3"], CheckContext())
    assert res.verdict is Verdict.ERROR and "ZeroDivisionError" in res.error
    inconclusive = CheckResult("A5", "A", "claim", Verdict.INCONCLUSIVE)
    assert exit_status([inconclusive]) == 0 and exit_status([inconclusive], strict=True) == 1


def test_no_comparison_is_not_a_pass(monkeypatch):
    fake_claims(monkeypatch, {"A1": lambda ctx: Outcome([])})
    assert run_check(claim_of("A1"), CheckContext()).verdict is Verdict.FAIL


def test_json_schema_and_report_dir(fake_checks, tmp_path):
    path = tmp_path / "out.json"
    rep = tmp_path / "rep"
    code = main(["--only", "A1", "A2", "--json", str(path), "--report-dir", str(rep), "--seed", "7",
                 "--cache-dir", "none"])
    assert code == 1
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == 3
    assert doc["seed"] == 7 and doc["profile"] == "quick" and doc["exit_code"] == 1
    assert set(doc["summary"]) == {v.value for v in Verdict}
    ids = [r["id"] for r in doc["results"]]
    assert ids == ["A1", "A2"]
    for r in doc["results"]:
        assert set(r) >= {"id", "paper", "claim", "verdict", "comparisons", "runtime_s", "seeds", "figures", "notes"}
        for c in r["comparisons"]:
            assert set(c) == {"name", "predicted", "measured", "uncertainty", "tolerance", "passed", "kind", "p_fail",
                              "p_pass", "margin", "df", "decide_factor", "outcome", "headline", "args", "key"}
            assert c["outcome"] in ("PASS", "FAIL", "INCONCLUSIVE")
    assert [r["verdict"] for r in doc["results"]] == ["PASS", "FAIL"]
    md = (rep / "report.md").read_text()
    assert "## A1: PASS" in md and "## A2: FAIL" in md
    assert json.loads((rep / "report.json").read_text())["results"][0]["id"] == "A1"


def test_seed_for_is_reproducible_and_recorded():
    a, b = CheckContext(seed=3, check_id="B1"), CheckContext(seed=3, check_id="B1")
    assert a.seed_for("x", 1) == b.seed_for("x", 1)
    assert a.seed_for("x", 2) != a.seed_for("x", 1)
    assert CheckContext(seed=4, check_id="B1").seed_for("x", 1) != b.seed_for("x", 1)
    assert len(set(a.seeds_used)) == 2


def test_module_entry_point_lists():
    out = subprocess.run([sys.executable, "-m", "verify", "--list"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    assert all(c.id in out.stdout for c in all_claims())


def test_comparison_passed_is_a_plain_bool():
    import numpy as np
    import sympy as sp

    for flag in (sp.true, np.bool_(True), True):
        c = Comparison("x", 1, 1, None, "exact", flag)
        assert c.passed is True and c.to_json()["passed"] is True
    assert Comparison("x", 1, 2, None, "exact", sp.false).to_json()["passed"] is False
    for bad in ("no", 1, float("nan"), None):  # a bad value never becomes a PASS
        with pytest.raises(TypeError, match="passed must be True or False"):
            Comparison("x", 1, 1, None, "exact", bad)


def test_json_records_when_the_checks_started_and_when_the_report_was_written(monkeypatch, tmp_path):
    import time

    import verify.checks  # noqa: F401  (the real checks registered first, as the other tests find them)

    def slow(ctx):
        time.sleep(1.1)  # the start and the finish fall in different seconds
        return Outcome([_cmp(True)])

    fake_claims(monkeypatch, {"A1": slow})
    path = tmp_path / "out.json"
    before = datetime.now().astimezone().replace(microsecond=0)
    assert main(["--only", "A1", "--json", str(path), "--cache-dir", "none"]) == 0
    doc = json.loads(path.read_text())
    started, finished = (datetime.fromisoformat(doc[k]) for k in ("started_utc", "finished_utc"))
    assert before <= started < finished


def test_rejudge_reproduces_verdicts_without_simulating(fake_checks, tmp_path):
    path = tmp_path / "out.json"
    code = main(["--only", "A1", "A2", "--json", str(path), "--cache-dir", "none"])
    assert main(["--rejudge", str(path)]) == code == 1


def test_calibrate_command_on_fake_checks(fake_checks, tmp_path):
    out = tmp_path / "cal"
    code = main(["calibrate", "--only", "A1", "A2", "--seeds", "3", "--out", str(out), "--cache-dir", "none"])
    doc = json.loads((out / "calibration.json").read_text())
    rows = {r["id"]: r for r in doc["checks"]}
    assert rows["A2"]["counts"]["FAIL"] == 3 and rows["A2"]["miscalibrated"]  # a check that always fails is flagged
    assert rows["A1"]["counts"]["PASS"] == 3 and not rows["A1"]["miscalibrated"]
    assert code == 1
    assert (out / "calibration.md").exists() and (out / "calibration.png").exists()
    assert len(list((out / "records").glob("*.json"))) == 6
    # resumable: a second run reads the stored records
    assert main(["calibrate", "--only", "A1", "A2", "--seeds", "3", "--out", str(out), "--cache-dir", "none"]) == 1


# ----------------------------------------------------------------------------------------- validation
@pytest.fixture
def recording_checks(monkeypatch):
    """A1 and B1 record the context they get (no check may run when an option is refused)."""
    all_claims()
    seen = []

    def rec(ctx):
        seen.append(ctx)
        return Outcome([_cmp(True)])

    fake_claims(monkeypatch, {"A1": rec, "B1": rec})
    return seen


@pytest.mark.parametrize("args, match", [
    (["--jobs", "0"], "--jobs must be an integer >= 1, or -1"),
    (["--jobs", "-2"], "--jobs must be an integer >= 1, or -1"),
    (["--seed", "-1"], "--seed: seed must be an integer >= 0"),
    (["--device", "bogus"], "--device: device must be 'cpu', 'cuda' or 'cuda:<k>'"),
    (["--device", "cuda:99"], "cuda"),
    (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler needs --executor dask"),
])
def test_bad_options_are_refused_before_any_check(recording_checks, tmp_path, args, match):
    with pytest.raises(SystemExit) as e:
        main(["--only", "A1", "B1", "--cache-dir", "none", *args])
    assert str(e.value).startswith("error: ") and match in str(e.value)
    assert recording_checks == []


def test_jobs_minus_one_means_all_cores_for_every_check(recording_checks):
    import os

    assert main(["--only", "A1", "B1", "--cache-dir", "none", "--jobs", "-1"]) == 0
    assert [c.n_jobs for c in recording_checks] == [os.cpu_count()] * 2  # paper A and paper B alike


@pytest.mark.parametrize("opt", ["--json", "--report-dir", "--cache-dir"])
def test_unwritable_output_paths_are_refused_before_any_work(recording_checks, tmp_path, opt):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    target = blocker / ("out.json" if opt == "--json" else "dir")  # below a regular file: cannot be created
    argv = ["--only", "A1", "B1", opt, str(target)] + ([] if opt == "--cache-dir" else ["--cache-dir", "none"])
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert opt in str(e.value) and "not a writable directory" in str(e.value)
    assert recording_checks == []


def test_json_that_is_a_directory_is_refused(recording_checks, tmp_path):
    with pytest.raises(SystemExit, match="is a directory"):
        main(["--only", "A1", "--json", str(tmp_path), "--cache-dir", "none"])
    assert recording_checks == []


def test_unreachable_scheduler_is_one_error_within_10_s(recording_checks, monkeypatch):
    """A refused port, and a port that accepts but never answers (the Dask handshake times out)."""
    import socket
    import time

    pytest.importorskip("distributed")
    from verify import _preflight

    monkeypatch.setattr(_preflight, "SCHEDULER_TIMEOUT_S", 1.0)
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        silent = f"tcp://127.0.0.1:{srv.getsockname()[1]}"
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            refused = f"tcp://127.0.0.1:{probe.getsockname()[1]}"  # bound, not listening: refused
            for address, match in ((refused, "cannot reach the Dask scheduler"), (silent, "no Dask scheduler answered")):
                t0 = time.monotonic()
                with pytest.raises(SystemExit, match=match):
                    main(["--only", "A1", "--cache-dir", "none", "--executor", "dask", "--scheduler", address])
                assert time.monotonic() - t0 < 10
    assert recording_checks == []


@pytest.mark.parametrize("field, value, exc", [
    ("n_jobs", "abc", TypeError), ("n_jobs", 0, ValueError), ("n_jobs", -2, ValueError), ("n_jobs", 2.0, TypeError),
    ("n_jobs", True, TypeError), ("seed", float("nan"), TypeError), ("seed", 1.5, TypeError), ("seed", -1, ValueError),
    ("seed", True, TypeError), ("seed", "0", TypeError), ("profile", "Quick", ValueError),
    ("device", "bogus", ValueError), ("device", "cuda:x", ValueError), ("device", 0, TypeError),
    ("executor", "spark", ValueError), ("scheduler", 3, TypeError), ("cache_dir", 3, TypeError),
    ("report_dir", 1.0, TypeError), ("check_id", None, TypeError),
])
def test_context_fields_are_validated(field, value, exc):
    with pytest.raises(exc, match=field):
        CheckContext(**{field: value})


def test_context_normalises_valid_fields(tmp_path):
    import os

    import numpy as np

    ctx = CheckContext(n_jobs=-1, seed=np.int64(3), device="cuda:1", cache_dir=str(tmp_path), executor="dask")
    assert ctx.n_jobs == os.cpu_count() and ctx.seed == 3 and type(ctx.seed) is int
    assert ctx.cache_dir == tmp_path and ctx.device == "cuda:1"


@pytest.mark.parametrize("kw, exc", [
    ({"headline": "yes"}, TypeError), ({"p_fail": 2.0, "kind": "exact"}, ValueError), ({"p_fail": "0.1"}, TypeError),
    ({"df": -1.0}, ValueError), ({"margin": True}, TypeError), ({"outcome": "MAYBE"}, ValueError),
    ({"kind": "approx"}, ValueError),
])
def test_comparison_fields_are_validated(kw, exc):
    with pytest.raises(exc):
        Comparison("x", 1.0, 1.0, 0.1, "exact", True, **kw)
    with pytest.raises(TypeError, match="name"):
        Comparison(None, 1.0, 1.0, 0.1, "exact", True)
