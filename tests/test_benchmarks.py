"""Smoke tests of the benchmark runner at tiny sizes (no timing is asserted: timings are not testable)."""

from __future__ import annotations

import json
import math
import sys

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
