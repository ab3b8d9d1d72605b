"""Budgeted sequential runs (verify.budget): the schedule, the budget, runs that continue, and the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import claim_from, fake_claims
from verify.claim import all_claims, claim_of
from verify.budget import replicate_context, run_sequential
from verify.cli import main
from verify.context import CheckContext
from verify.claim import Claim, run_check
from verify.results import Comparison, Outcome
from verify.sequential import replicate_seed


def _draw_check(truth: float, calls: list | None = None):
    """A check whose one direction comparison measures ``truth`` with SE 0.1 from a cached draw at its seed."""

    def func(ctx: CheckContext) -> Outcome:
        def compute():
            if calls is not None:
                calls.append(ctx.seed)
            return {"x": np.random.default_rng(ctx.seed_for("x")).normal(truth, 0.1, size=1)}

        x = float(ctx.cached("draw", {"truth": truth}, compute)["x"][0])
        return Outcome([Comparison.direction("gap", "> 0", x, 0.1, +1, headline=True)])

    return func


def _spec(cid: str, func) -> Claim:
    return claim_from(cid, func)


class _Clock:
    """A clock that each run of a check advances by its cost (seconds)."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_replicate_zero_is_the_fixed_run_and_later_ones_their_own_seeds(tmp_path):
    base = CheckContext(profile="smoke", seed=3, cache_dir=tmp_path, report_dir=tmp_path / "fig")
    assert replicate_context(base, 0).seed == 3 and replicate_context(base, 0).report_dir == tmp_path / "fig"
    assert replicate_context(base, 2).seed == replicate_seed(3, 2) and replicate_context(base, 2).report_dir is None


def test_decided_checks_stop_and_undecided_ones_get_rounds():
    specs = [_spec("A1", _draw_check(1.0)), _spec("A2", _draw_check(0.0))]  # z ~ 10: PASS; z ~ 0: undecided
    seqs = run_sequential(specs, CheckContext(profile="smoke", seed=0), rounds=3)
    assert seqs[0].judgement.verdict == "PASS" and seqs[0].n == 1
    assert seqs[1].round == 3 and seqs[1].n == 8
    assert [look["replicates"] for look in seqs[1].looks] == [1, 2, 4, 8]
    res = seqs[1].result()
    assert res.data["sequential"]["replicates"] == 8 and "Sequential verdict after round 3" in res.notes
    assert res.comparisons[0].uncertainty == pytest.approx(0.1 / 8 ** 0.5)


def test_the_budget_goes_to_the_cheapest_decision_and_stops_in_time():
    clock = _Clock()
    cost = {"A1": 10.0, "A2": 1.0}

    def run(spec, ctx):
        res = run_check(spec, ctx)
        clock.t += cost[spec.id]
        res.runtime_s = cost[spec.id]
        return res

    specs = [_spec("A1", _draw_check(0.12)), _spec("A2", _draw_check(0.12))]  # same evidence, different cost
    seqs = run_sequential(specs, CheckContext(profile="smoke", seed=1), budget_s=40.0, run=run, clock=clock)
    assert clock.t <= 40.0
    assert seqs[1].n > seqs[0].n  # the cheap check got the rounds
    assert all(s.n >= 1 for s in seqs)


def test_a_continued_run_equals_one_run_of_the_same_rounds(tmp_path):
    """Rounds 0-1 in a first run, rounds 2-3 in a second on the same cache: the values and verdict of one run that
    completed rounds 0-3, and the second run draws only the new replicates."""
    calls: list = []
    spec = [_spec("A1", _draw_check(0.0, calls))]
    one = run_sequential(spec, CheckContext(profile="smoke", seed=4, cache_dir=tmp_path / "a"), rounds=3)[0]
    calls.clear()
    run_sequential(spec, CheckContext(profile="smoke", seed=4, cache_dir=tmp_path / "b"), rounds=1)
    assert len(calls) == 2
    calls.clear()
    two = run_sequential(spec, CheckContext(profile="smoke", seed=4, cache_dir=tmp_path / "b"), rounds=3)[0]
    assert len(calls) == 6  # replicates 2..7; 0 and 1 come from the cache
    assert two.result().comparisons == one.result().comparisons
    assert two.result().verdict == one.result().verdict


def test_a_real_check_continued_at_smoke_size(tmp_path):
    """The mechanism on a real check (B3 at the smoke profile, undecided at round 0 at seed 0: seconds): two runs
    = one run."""
    spec = [claim_of("B3")]

    def pooled_rows(seqs):
        return [c.to_json() for c in seqs[0].result().comparisons]

    ctx = dict(profile="smoke", seed=0, n_jobs=1)
    one = run_sequential(spec, CheckContext(cache_dir=tmp_path / "a", **ctx), rounds=1)
    assert one[0].round == 1
    run_sequential(spec, CheckContext(cache_dir=tmp_path / "b", **ctx), rounds=0)
    two = run_sequential(spec, CheckContext(cache_dir=tmp_path / "b", **ctx), rounds=1)
    assert pooled_rows(two) == pooled_rows(one)


def test_a_sequential_run_needs_a_budget_or_rounds():
    spec = [_spec("A1", _draw_check(0.0))]
    with pytest.raises(ValueError, match="budget_s or rounds"):
        run_sequential(spec, CheckContext(profile="smoke"))


@pytest.mark.parametrize("args, match", [(["--budget", "0"], "--budget must be"), (["--budget", "nan"], "--budget"),
                                         (["--rounds", "-1"], "--rounds must be")])
def test_the_command_line_refuses_bad_budgets(args, match):
    with pytest.raises(SystemExit) as e:
        main(["--only", "A1", "--cache-dir", "none", *args])
    assert match in str(e.value)


def test_the_command_line_writes_the_sequential_record(monkeypatch, tmp_path, capsys):
    all_claims()
    fake_claims(monkeypatch, {"A1": _draw_check(1.0), "A2": _draw_check(0.0)})
    out = tmp_path / "r.json"
    assert main(["--only", "A1", "A2", "--rounds", "2", "--cache-dir", "none", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    seq = doc["sequential"]
    assert seq["rounds"] == 2 and seq["checks"]["A2"]["replicates"] == 4
    assert [r["verdict"] for r in doc["results"]] == ["PASS", "INCONCLUSIVE"]
    printed = capsys.readouterr().out
    assert "A2 round 2" in printed and "Sequential verdicts" in printed


def test_calibrate_with_rounds_records_the_sequential_runs(monkeypatch, tmp_path):
    all_claims()
    fake_claims(monkeypatch, {"A1": _draw_check(1.0), "A2": _draw_check(0.0)})
    out = tmp_path / "cal"
    main(["calibrate", "--only", "A1", "A2", "--seeds", "3", "--rounds", "1", "--out", str(out), "--cache-dir", "none"])
    rec = json.loads((out / "records" / "A2_seed1.json").read_text())
    assert rec["mode"] == {"budget_s": None, "rounds": 1} and rec["sequential"]["replicates"] in (1, 2)
    md = (out / "calibration.md").read_text()
    assert "## Sequential verdicts" in md and "| A1 | 3/3 |" in md


def test_sd_se_of_seeds_with_different_replicates_is_about_one():
    """A sequential calibration pools 1 or 2 replicates per seed: the SD/SE ratio (Birge's) stays about 1 for a
    large true effect, where the SD of z = d / SE would mix the two sample sizes."""
    from verify.calibrate import _birge_ratio

    rng = np.random.default_rng(5)
    se = np.where(rng.random(3000) < 0.2, 0.01 / np.sqrt(2), 0.01)
    d = 0.15 + se * rng.standard_normal(se.size)
    assert 0.95 < _birge_ratio(d, se) < 1.05
    assert np.std(d / se, ddof=1) > 2  # the SD of z mixes the two sample sizes (about 2.7 here)
