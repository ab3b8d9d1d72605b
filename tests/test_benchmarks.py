"""Smoke tests of the benchmark runner at tiny sizes (no timing is asserted: timings are not testable)."""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest

import benchmarks
from benchmarks import __main__ as runner
from benchmarks.erm import erm_config


def test_tiny_mode_switch(monkeypatch):
    monkeypatch.delenv("BENCHMARKS_TINY", raising=False)
    assert benchmarks.tiny_mode() is False
    monkeypatch.setenv("BENCHMARKS_TINY", "1")
    assert benchmarks.tiny_mode() is True
    assert benchmarks.tiny_mode(False) is False
    assert erm_config(quick=True, tiny=True)["mode"] == "tiny"
    assert erm_config(quick=True, tiny=False)["Ms"] == [2**14]
    assert erm_config(quick=False, tiny=False)["Ms"] == [2**12, 2**14, 2**16]
    assert erm_config(quick=True, tiny=False)["project_repeats"] == 3


@pytest.fixture(scope="module")
def tiny_summary(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "summary.json"
    code = runner.main(["--tiny", "--only", "erm", "interpolation", "--json", str(path), "--threads", "1"])
    return code, json.loads(path.read_text())


def test_runner_tiny_produces_table_and_json(tiny_summary, capsys):
    code, doc = tiny_summary
    assert code == 0, doc
    assert doc["profile"] == "tiny"
    mm = doc["matmul"]
    assert mm["numpy_gflops"] > 0 and mm["torch_gflops"] > 0
    erm = doc["workloads"]["erm"]
    res = erm["results"][0]
    # the ratio is what the two measured times say, and a lower bound is flagged with its reason
    assert res["ratio"] == pytest.approx(res["baseline_s"] / res["project_s"])
    assert res["project_s"] > 0 and res["baseline_s"] > 0
    # the project's time is the median of its repeated (identical) fits
    assert res["project_s"] == pytest.approx(sorted(res["project_fit_times_s"])[len(res["project_fit_times_s"]) // 2])
    assert isinstance(res["ratio_is_lower_bound"], bool) and res["reason"]
    assert 0 <= res["project_l2"] and math.isfinite(res["project_l2"])
    assert res["trace"] and all("l2" in t for t in res["trace"])
    # the reported time to target is the time of the first round whose error passed the test
    if not res["ratio_is_lower_bound"]:
        first = next(t for t in res["trace"] if t["reached"])
        assert res["baseline_s"] == pytest.approx(first["time_s"], abs=1e-3)
    scal = erm["scaling"]
    assert len(scal["Ms"]) == len(scal["fit_s"]) >= 3 and "exponent" in scal
    assert any(r["workload"].startswith("ERM time-to-same-L2") for r in erm["rows"])
    # the variant that gives the baseline the moment start is reported next to it
    rm = res["baseline_from_moment_start"]
    assert rm["baseline_init"] == "given A_init" and rm["ratio"] > 0
    assert any("moment start" in r["workload"] for r in erm["rows"])
    inter = doc["workloads"]["interpolation"]
    assert not inter.get("skipped"), inter.get("note")  # benchmarks.interpolation exists: it must run
    assert inter["rows"]


def test_interpolation_absent_is_skipped_with_a_note(monkeypatch):
    monkeypatch.setitem(sys.modules, "benchmarks.interpolation", None)  # import fails
    out = runner.run_interpolation(quick=True, tiny=True)
    assert out["skipped"] and "not available" in out["note"] and out["rows"] == []


def test_verify_failure_is_skipped_with_a_note():
    out = runner.run_verify(timeout_s=0.01)  # cannot finish: the runner notes it and goes on
    assert out["skipped"] and "verify" in out["note"]


def test_ratio_and_target_formatting():
    assert runner._fmt_ratio(dict(ratio=25.0, lower_bound=True)) == ">= 25.0x"
    assert runner._fmt_ratio(dict(ratio=0.05, lower_bound=False)) == "0.05x"
    assert runner._target(dict(ratio=25.0, target=20)) == ">= 20x (met)"
    assert runner._target(dict(ratio=5.0, target=20, lower_bound=True)) == ">= 20x (not shown)"
    assert runner._target(dict(ratio=5.0, target=20)) == ">= 20x (missed)"


def test_bad_workload_name_is_refused():
    with pytest.raises(SystemExit):
        runner.main(["--tiny", "--only", "nonsense"])


def test_moment_start_recovers_a_rank_one_matrix_direction():
    import numpy as np

    from benchmarks.erm import moment_start
    from numerics.ips import IPSModel

    model = IPSModel(d=4, N=4, rank=1, degree=3, noise=0.01, seed=1)
    X, Y = model.sample(20000, np.random.default_rng(0))
    A0 = moment_start(X, Y, 1)
    assert np.linalg.matrix_rank(A0) == 1
    cos = abs(np.sum(A0 * model.A_star)) / (np.linalg.norm(A0) * np.linalg.norm(model.A_star))
    assert cos > 0.5  # a useful start (it is a linearisation, not a consistent estimator of A*)


# ------------------------------------------------- interpolation: GFLOP/s row and time vs n
def test_tiny_interpolation_has_gflops_and_scaling_rows(tiny_summary):
    code, doc = tiny_summary
    inter = doc["workloads"]["interpolation"]
    res, mm = inter["result"], doc["matmul"]
    g = next(r for r in inter["rows"] if "GFLOP/s" in r["workload"])
    # the row is the products' achieved rate over the machine's torch matmul rate of the same run (the
    # larger of the run-start measurement and the one right before the products)
    assert g["unit"] == "fraction" and g["target"] == runner.GFLOPS_TARGET == 0.5
    ref = max(mm["torch_gflops"], inter["matmul_adjacent"]["torch_gflops"])
    assert g["ratio"] == pytest.approx(res["gflops_products"] / ref)
    sc = inter["scaling"]
    assert len(sc["ns"]) == len(sc["ps"]) == len(sc["trial_s"]) >= 3
    assert all(n // p == sc["ratio"] for n, p in zip(sc["ns"], sc["ps"]))
    assert sc["expected_exponent"] == 3.0 and math.isfinite(sc["exponent"]) and sc["exponent_se"] >= 0
    assert any(r["workload"].startswith("attention MC trial time vs n") for r in inter["rows"])
    naive = next(r for r in inter["rows"] if r["workload"] == "interpolation grid vs naive per-gamma solves")
    assert naive["target"] == 20.0 and naive["ratio"] == pytest.approx(res["speedup_vs_naive"])


def test_time_vs_n_fits_the_exponent_of_its_own_times():
    import numpy as np

    from benchmarks.interpolation import time_vs_n

    import torch

    before = torch.get_num_threads()
    sc = time_vs_n(ns=(16, 32, 64), ratio=4, n_gammas=4, repeats=1)
    assert sc["torch_threads"] == 1 and torch.get_num_threads() == before  # timed on 1 thread, restored
    slope = np.polyfit(np.log(sc["ns"]), np.log(sc["trial_s"]), 1)[0]
    assert sc["exponent"] == pytest.approx(slope)
    assert sc["exponent_top"] == pytest.approx(math.log(sc["trial_s"][2] / sc["trial_s"][1]) / math.log(2))
    with pytest.raises(ValueError, match="ratio"):
        time_vs_n(ns=(4, 8, 16), ratio=4)


def test_gflops_row_and_fraction_formatting():
    res = dict(gflops_products=30.0, gflops_XtX=20.0, gflops_XK=40.0, gflops_gram=25.0,
               gflops_plain_matmul_products_shapes=40.0)
    mm = dict(n=2048, torch_gflops=50.0, torch_threads=1)
    row = runner._gflops_row(res, mm)
    assert row["ratio"] == pytest.approx(0.6) and row["target"] == 0.5
    assert runner._fmt_ratio(row) == "60%" and runner._target(row) == ">= 50% (met)"
    assert runner._target(dict(row, ratio=0.3)) == ">= 50% (missed)"
    assert runner._gflops_row({}, mm) is None and runner._gflops_row(res, None) is None
    near = runner._gflops_row(res, mm, dict(n=2048, torch_gflops=100.0, torch_threads=1))
    assert near["ratio"] == pytest.approx(0.3)  # the larger reference is used (conservative)


# ----------------------------------------------------------------- verify: profile option
def _fake_verify(monkeypatch, calls, exit_code=0):
    """Replace the verify subprocess by a fake that writes a JSON report where --json says."""
    import subprocess
    from pathlib import Path

    real_run = subprocess.run

    def fake_run(cmd, **kw):
        if not (isinstance(cmd, list) and cmd[1:3] == ["-m", "verify"]):
            return real_run(cmd, **kw)  # anything else (e.g. platform probes) runs for real
        calls.append(dict(cmd=list(cmd), **kw))
        path = Path(cmd[cmd.index("--json") + 1])
        path.write_text(json.dumps({"results": [
            {"id": "A3", "verdict": "FAIL", "runtime_s": 300.0},
            {"id": "B1", "verdict": "PASS", "runtime_s": 100.0}]}))
        return subprocess.CompletedProcess(cmd, exit_code, stdout="", stderr="")

    monkeypatch.setattr(runner.subprocess, "run", fake_run)


def test_verify_paper_profile_is_timed_with_its_per_check_split(monkeypatch):
    calls: list = []
    _fake_verify(monkeypatch, calls, exit_code=1)
    out = runner.run_verify(profile="paper")
    cmd = calls[0]["cmd"]
    assert cmd[cmd.index("--profile") + 1] == "paper"
    assert calls[0]["timeout"] == runner.VERIFY_TIMEOUT_S["paper"]
    cache = cmd[cmd.index("--cache-dir") + 1]  # a fresh cache: a cold run, not a read of an old cache
    assert ".cache" not in cache
    assert out["profile"] == "paper" and out["exit_code"] == 1
    assert out["per_check_s"] == {"A3": 300.0, "B1": 100.0} and out["checks_s"] == 400.0
    assert out["verdicts"] == {"A3": "FAIL", "B1": "PASS"}
    work = [r["workload"] for r in out["rows"]]
    assert work[0] == "python -m verify --profile paper"
    assert work[1:] == ["  verify paper: A3", "  verify paper: B1"]  # slowest first
    assert out["rows"][1]["baseline"] == "75% of checks"


def test_verify_profile_option_reaches_the_subprocess(monkeypatch, tmp_path):
    calls: list = []
    _fake_verify(monkeypatch, calls)
    path = tmp_path / "s.json"
    code = runner.main(["--tiny", "--only", "verify", "--verify-profile", "paper", "--json", str(path)])
    assert code == 0
    doc = json.loads(path.read_text())
    assert doc["workloads"]["verify"]["profile"] == "paper"
    assert calls[0]["cmd"][calls[0]["cmd"].index("--profile") + 1] == "paper"
    calls.clear()
    runner.main(["--tiny", "--only", "verify", "--json", str(path)])  # default: quick
    assert calls[0]["cmd"][calls[0]["cmd"].index("--profile") + 1] == "quick"
    assert calls[0]["timeout"] == runner.VERIFY_TIMEOUT_S["quick"]


def test_verify_profile_is_validated():
    with pytest.raises(ValueError, match="profile"):
        runner.run_verify(profile="huge")
    with pytest.raises(SystemExit):
        runner.main(["--tiny", "--only", "verify", "--verify-profile", "huge"])


# ------------------------------------------------------------------------------ precision per CPU-second
def test_headline_quantities_prefer_headline_then_least_precise():
    from benchmarks.precision import headline_quantities

    comps = [dict(name="a", uncertainty=0.01, margin=0.03, predicted=0.0, headline=False),
             dict(name="b", uncertainty=0.002, margin=None, predicted=0.5, headline=False),
             dict(name="c", uncertainty=None, margin=None, predicted="1", headline=False)]
    # no headline: the largest SE relative to its margin (0.33) or |predicted| (0.004)
    assert [c["name"] for c in headline_quantities({"comparisons": comps})] == ["a"]
    comps[1]["headline"] = True
    assert [c["name"] for c in headline_quantities({"comparisons": comps})] == ["b"]
    # exact comparisons (no SE) are never chosen
    assert headline_quantities({"comparisons": comps[2:]}) == []


def test_precision_rows_merit_is_se_times_root_cpu():
    from benchmarks.precision import _check_rows

    doc = {"results": [{"id": "X", "verdict": "PASS", "comparisons": [
        dict(name="q", uncertainty=0.02, margin=0.03, predicted=0.0, headline=True, outcome="PASS")]}]}
    (row,) = _check_rows("X", "current", doc, cpu=9.0, wall=5.0)
    assert row["merit"] == pytest.approx(0.02 * 3.0)
    (missing,) = _check_rows("Y", "current", doc, cpu=1.0, wall=1.0)
    assert missing["se"] is None and missing["merit"] is None


def test_slope_designs_tiny_reports_both_designs():
    from benchmarks.precision import slope_designs

    res = slope_designs(("d=1, sigma/10",), reps=3, profile="smoke", seed=0)
    designs = [r["design"] for r in res["rows"]]
    assert designs == ["independent", "nested"]
    for r in res["rows"]:
        assert r["sd_slope"] > 0 and r["cpu_per_replicate_s"] > 0
        assert r["merit"] == pytest.approx(r["sd_slope"] * math.sqrt(r["cpu_per_replicate_s"]))
        lo, hi = r["variance_ratio_ci95"]
        assert lo < r["variance_ratio_indep_over_nested"] < hi


# ------------------------------------------------------------------------------ allocation pilot
def test_allocation_pilot_pools_the_judged_quantity_over_reports():
    """RMS of the per-level SDs over the reports; A3's balanced groups use log(err / err_known)."""
    from benchmarks.allocation_pilot import pooled_sd

    def report(scale):
        errs = {"500": [1.0, np.exp(scale)], "1000": [1.0, np.exp(2 * scale)]}
        known = {"500": [1.0, 1.0], "1000": [1.0, np.exp(2 * scale)]}
        group = {"M": [500, 1000], "errors": errs, "errors_known": known}
        return {"results": [{"id": "A3", "data": {"d=5, balanced": group, "d=5, sigma/10": group, "sweep": {}}}]}

    out = pooled_sd([report(0.1), report(0.3)], "A3")
    sd = lambda s: np.std([0.0, s], ddof=1)  # noqa: E731
    assert out["d=5, sigma/10"]["M"] == [500, 1000]
    assert out["d=5, sigma/10"]["sd"] == pytest.approx([np.sqrt((sd(0.1) ** 2 + sd(0.3) ** 2) / 2),
                                                        np.sqrt((sd(0.2) ** 2 + sd(0.6) ** 2) / 2)], abs=1e-5)
    assert out["d=5, balanced"]["sd"] == pytest.approx([np.sqrt((sd(0.1) ** 2 + sd(0.3) ** 2) / 2), 0.0], abs=1e-5)


# ------------------------------------------------------------------------------ device check (CPU dry run)
@pytest.fixture(scope="module")
def device_dry_run(tmp_path_factory):
    """``python -m benchmarks --only device --device cpu --tiny``: the CUDA path's CPU twin, verify runs included."""
    path = tmp_path_factory.mktemp("device") / "device.json"
    code = runner.main(["--only", "device", "--device", "cpu", "--tiny", "--json", str(path), "--threads", "1"])
    return code, json.loads(path.read_text()), path


def test_device_dry_run_checks_every_section(device_dry_run):
    code, doc, path = device_dry_run
    dev = doc["workloads"]["device"]
    assert code == 0 and "error" not in dev and "partial" not in doc, dev.get("error")
    assert list(dev["sections"]) == ["correctness: fits", "correctness: Monte Carlo", "correctness: verdicts",
                                     "speed: matmul", "speed: fits", "speed: Monte Carlo", "speed: profile"]
    assert not any("error" in s for s in dev["sections"].values())
    rows = dev["rows"]
    correct = [r for r in rows if r["section"] == "correctness"]
    assert correct and all(r["ok"] for r in correct)
    names = " ".join(r["workload"] for r in correct)
    for what in ("A fixed at A*", "fit_many", "B2 Monte Carlo", "B7 Monte Carlo", "B8 Monte Carlo", "B9 Monte Carlo",
                 "--only B2: verdict", "--only B8: verdict"):
        assert what in names
    speed = [r for r in rows if r["section"] == "speed"]
    assert sum("fits/s" in r["workload"] for r in speed) == 2 and sum("trials/s" in r["workload"] for r in speed) == 2
    assert all(r["ratio"] > 0 for r in speed if "/s" in r["workload"] or "matmul" in r["workload"])
    assert speed[-1]["workload"].startswith("python -m verify --profile smoke --device cpu") and speed[-1]["wall_s"] > 0
    assert dev["machine"]["missing"] == [] and dev["tolerances"]["fit"] == 1e-6
    md = path.with_suffix(".md").read_text()  # the markdown table, next to the JSON
    assert md == dev["markdown"] and "| section | check | device | CPU |" in md and md.count("\n| ") == len(rows) + 1


def test_device_check_writes_as_it_goes_and_flags_a_mismatch(monkeypatch):
    """A checkpoint after every section; a verdict that differs between the devices is an error of the check."""
    from benchmarks import device

    import threading

    calls, docs, lock = [], [], threading.Lock()

    def fake_verify(timeout_s, profile, *, device, jobs, only):
        with lock:  # the two verdict runs go side by side: the first to arrive gives B2 another verdict
            calls.append((profile, device, jobs, tuple(only or ())))
            first = len(calls) == 1
        ids = only or ("B8",)
        return dict(wall_s=1.0, exit_code=0, per_check_s={i: 0.5 for i in ids}, measured={i: [1.0] for i in ids},
                    verdicts={i: ("FAIL" if i == "B2" and first else "PASS") for i in ids})

    from theory import get_limits

    before = get_limits()
    out = device.run("cpu", tiny=True, jobs=4, run_verify=fake_verify, checkpoint=lambda d: docs.append(len(d["rows"])),
                     log=lambda s: None)
    assert get_limits() == before  # the memory budget raised for the check is restored
    assert len(docs) == 7 and docs == sorted(docs) and docs[-1] == len(out["rows"])
    assert calls.count(("smoke", "cpu", 2, ("B2", "B8"))) == 2 and calls[-1] == ("smoke", "cpu", 4, ("B8",))
    bad = [r for r in out["rows"] if r["ok"] is False]
    assert [r["workload"] for r in bad] == ["python -m verify --profile smoke --only B2: verdict"]
    assert "B2: verdict" in out["error"]


def test_device_check_pieces():
    from benchmarks import device

    assert device.peak_fp64_tflops("NVIDIA H100 80GB HBM3") == 67.0
    assert device.peak_fp64_tflops("NVIDIA H100 PCIe") == 51.0
    assert device.peak_fp64_tflops("NVIDIA H200") == 67.0 and device.peak_fp64_tflops("Xeon") is None
    assert device.mc_diff({"a": np.array([1.0, np.nan])}, {"a": np.array([1.0 + 1e-12, np.nan])})[1]
    assert not device.mc_diff({"a": np.array([1.0])}, {"a": np.array([1.0 + 1e-6])})[1]
    assert not device.mc_diff({"a": np.array([1.0, 2.0])}, {"a": np.array([1.0, np.nan])})[1]
    import time

    def measure(a, b):
        time.sleep(0.06)
        return device.row("speed", f"n={a}", "", "")

    # 5 s of the budget for the rows: the second, predicted 100x the first (6 s), is skipped, the third (2x) runs
    rows = device.speed_series(((1, 1), (100, 1), (2, 1)), lambda a, b: a * b, measure, device.Budget(10.0, 5.0),
                               lambda a, b: f"n={a}")
    assert [r.get("skipped", False) for r in rows] == [False, True, False]
    assert rows[1]["workload"] == "n=100" and rows[1]["note"].startswith("predicted 6 s")


def test_device_option_is_checked():
    import torch

    with pytest.raises(SystemExit):
        runner.main(["--tiny", "--only", "device", "--device", "tpu"])
    with pytest.raises(SystemExit):
        runner.main(["--tiny", "--only", "device", "--jobs", "0"])
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit):
            runner.main(["--tiny", "--only", "device", "--device", "cuda"])


def test_check_times_summarises_and_tables_two_reports(tmp_path):
    """``python -m benchmarks.check_times``: a report's compact record and the before / after table."""
    from benchmarks.check_times import main, summarise, table

    def report(seconds: float, se: float) -> dict:
        row = {"name": "headline", "uncertainty": se, "headline": True}
        return {"profile": "quick", "seed": 0, "platform": "test", "cpu_count": 2,
                "started_utc": "2026-12-06T10:00:00+00:00", "finished_utc": "2026-12-06T10:01:40+00:00",
                "results": [{"id": "A2", "runtime_s": seconds, "verdict": "PASS", "comparisons": [row]},
                            {"id": "B11", "runtime_s": 1.0, "verdict": "PASS", "comparisons": []}]}

    before, after = summarise(report(16.0, 0.01), "abc"), summarise(report(4.0, 0.01))
    assert before["wall_s"] == 100.0 and before["checks"]["A2"]["headline"]["uncertainty"] == 0.01
    assert summarise(before) is before  # a summary is its own summary
    text = table(before, after)
    assert "| A2 | 16.0 | 4.0 | 0.25 | 0.04 | 0.02 | 0.50 | PASS |" in text  # SE x sqrt(s): 0.01 x 4 -> 0.01 x 2
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report(16.0, 0.01)))
    assert main(["table", str(path), str(path)]) == 0


def test_work_profile_splits_a_check_by_stage_and_kind(tmp_path, capsys):
    """``python -m benchmarks.work_profile``: a smoke check profiled as a lane runs it, its CPU split by stage and by
    kind of work, and the table of the record."""
    from benchmarks.work_profile import KINDS, OTHER, _profile_group, kind_of, kinds_of, main, table

    assert kind_of("/x/numerics/_ridge_solvers.py", "gram") == "products"
    assert kind_of("~", "<built-in method torch._C._linalg.linalg_cholesky_ex>") == "factorisations"
    assert kind_of("~", "<built-in method torch.cholesky_solve>") == "solves"
    assert kind_of("/x/numerics/_mc.py", "draw_sample") == "draws"
    assert kind_of("/x/theory/null_system.py", "solve_null_system") == "solves"  # the first rule that matches
    assert kind_of("/x/theory/_jets.py", "taylor") == "theory (Python)"
    assert kind_of("~", "<built-in method builtins.isinstance>") == OTHER
    (rec,) = _profile_group(["B5"], "smoke", 0)
    assert rec["id"] == "B5" and rec["verdict"] in {"PASS", "FAIL", "INCONCLUSIVE"}
    assert set(rec["stages"]) <= {"design", "prediction", "simulation", "judging"} and rec["stages"]["simulation"] > 0
    assert 0 < sum(rec["stages"].values()) <= rec["cpu_s"] + 0.05
    assert rec["functions"] and set(kinds_of(rec)) <= {k for k, _, _ in KINDS} | {OTHER}
    assert sum(kinds_of(rec).values()) == pytest.approx(sum(r[3] for r in rec["functions"])
                                                        + sum(rec["unlisted_s"].values()))
    doc = {"profile": "smoke", "seed": 0, "started_utc": "t", "platform": "test", "checks": [rec]}
    assert "| B5 |" in table(doc) and "| all |" in table(doc)
    path = tmp_path / "wp.json"
    path.write_text(json.dumps(doc))
    assert main(["--table", str(path)]) == 0 and "| B5 |" in capsys.readouterr().out
    for bad in (["--only", "Z9"], ["--jobs", "0"]):
        with pytest.raises(SystemExit):
            main(bad)
