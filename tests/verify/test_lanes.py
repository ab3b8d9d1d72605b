"""Checks side by side (verify.lanes): the groups that share draws stay together, longest first; a lane gives the
numbers of ``--jobs 1``; a claim a fresh process does not know runs in this process; calibrate reuses its records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import claim_from
from verify.claim import select
from verify.context import CheckContext
from verify.lanes import COST, SHARED, groups, use_lanes
from verify.results import Comparison, Outcome

ROOT = Path(__file__).resolve().parents[2]


def test_checks_that_share_draws_run_in_one_group_in_report_order_and_the_longest_group_goes_first():
    tasks = [[c.id for c in g] for g in groups(select(["B10", "A1", "B9", "B4", "B7", "A3"]), "quick")]
    assert sorted(sum(tasks, [])) == sorted(["B10", "A1", "B9", "B4", "B7", "A3"])
    assert ["B9", "B10"] in tasks and ["B4", "B7"] in tasks  # report order inside a group: B4 reads B7's draws
    costs = [sum(COST["quick"].get(i, 1) for i in g) for g in tasks]
    assert costs == sorted(costs, reverse=True) and tasks[-1] == ["A1"]


def test_every_shared_group_names_registered_checks():
    known = {c.id for c in select(None)}
    assert all(set(g) <= known for g in SHARED)
    assert all(set(table) <= known for table in COST.values())


def test_lanes_need_several_jobs_the_cpu_local_processes_and_checks_a_fresh_process_knows():
    real = select(["A1", "B1"])
    assert use_lanes(real, CheckContext(n_jobs=2))
    assert not use_lanes(real, CheckContext(n_jobs=1))
    assert not use_lanes(select(["B9", "B10"]), CheckContext(n_jobs=2))  # one group: the check's own workers
    assert not use_lanes(real, CheckContext(n_jobs=2, device="cuda"))
    assert not use_lanes(real, CheckContext(n_jobs=2, executor="dask"))
    fake = claim_from("A1", lambda ctx: Outcome([Comparison("x", 1.0, 1.0, 0.1, "exact", True)]))
    assert not use_lanes([fake, *select(["B1"])], CheckContext(n_jobs=2))


def _numbers(path: Path) -> list:
    doc = json.loads(path.read_text())
    return [(r["id"], r["verdict"], [(c["name"], c["predicted"], c["measured"], c["uncertainty"])
                                     for c in r["comparisons"]], r["seeds"]) for r in doc["results"]]


@pytest.mark.slow
def test_lanes_give_the_numbers_of_checks_in_turn_at_one_job(tmp_path):
    ids = ["B7", "B4", "B2", "A1", "B10", "B9"]  # B4 reads B7's draws in B7's lane, B10 B9's
    runs = {}
    for jobs in ("2", "1"):
        out = tmp_path / f"jobs{jobs}.json"
        cmd = [sys.executable, "-m", "verify", "--profile", "smoke", "--only", *ids, "--cache-dir", "none",
               "--json", str(out), "--jobs", jobs]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode in (0, 1), done.stderr
        runs[jobs] = _numbers(out)
    assert [r[0] for r in runs["2"]] == ["A1", "B2", "B4", "B7", "B9", "B10"]  # report order, whatever finished first
    assert runs["2"] == runs["1"]


def test_calibrate_in_lanes_stores_every_record_and_a_rerun_reuses_them(tmp_path):
    from verify.calibrate import calibrate

    specs, seen = select(["A1", "B6"]), []
    base = CheckContext(profile="smoke", cache_dir=None, n_jobs=2)
    first = calibrate(specs, [0, 1], base, tmp_path, lambda cid, seed, rec: seen.append((cid, seed)))
    assert sorted(seen) == [("A1", 0), ("A1", 1), ("B6", 0), ("B6", 1)]
    assert [r["seed"] for r in first["B6"]] == [0, 1] and all(r["verdict"] != "ERROR" for r in first["B6"])
    again = calibrate(specs, [0, 1], base, tmp_path)  # every record stored: nothing runs
    assert again == first


@pytest.mark.slow
def test_every_check_that_borrows_draws_shares_a_group_with_its_lender(monkeypatch):
    from verify.claim import run_check

    borrowed = []
    real = CheckContext.borrowing

    def spy(self, lender):
        borrowed.append((self.check_id, lender))
        return real(self, lender)

    monkeypatch.setattr(CheckContext, "borrowing", spy)
    for claim in select(None):  # every check at the smoke profile, in this process
        run_check(claim, CheckContext(profile="smoke", cache_dir=None, n_jobs=1))
    assert {("B4", "B7"), ("B10", "B9")} <= set(borrowed)
    assert all(any({who, lender} <= set(g) for g in SHARED) for who, lender in borrowed if who != lender)
