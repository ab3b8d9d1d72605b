"""The checks' disk memo (``CheckContext.cached``): hits, keys, corruption, resume of real checks."""

from __future__ import annotations

import numpy as np
import pytest

from verify.claim import claim_of
from verify.context import CheckContext
from verify.results import Verdict
from verify.claim import run_check


def _ctx(tmp_path, **kw):
    kw.setdefault("check_id", "B9")
    return CheckContext(cache_dir=tmp_path, **kw)


def test_second_call_hits_the_cache(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"mean": np.array([0.1, 0.2]), "trials": np.arange(6.0).reshape(3, 2)}

    a = _ctx(tmp_path).cached("mc", {"n": 8, "seed": 3}, compute)
    b = _ctx(tmp_path).cached("mc", {"n": 8, "seed": 3}, compute)  # a fresh context: a rerun
    assert len(calls) == 1
    assert set(b) == {"mean", "trials"}
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
        assert b[k].dtype == a[k].dtype
    assert len(list((tmp_path / "B9").glob("*.npz"))) == 1
    assert not list((tmp_path / "B9").glob(".*tmp"))  # the temporary file was renamed
    _ctx(tmp_path).cached("mc", {"n": 16, "seed": 3}, compute)  # another cell: computed
    assert len(calls) == 2


def test_disabled_without_cache_dir():
    calls = []
    ctx = CheckContext(cache_dir=None)
    for _ in range(2):
        ctx.cached("mc", {"n": 1}, lambda: calls.append(1) or {"x": np.ones(2)})
    assert len(calls) == 2


def test_key_depends_on_seed_profile_and_everything_else(tmp_path):
    base = _ctx(tmp_path, seed=0, profile="quick")
    k0 = base.cache_key("mc", {"n": 8})
    assert k0 == _ctx(tmp_path, seed=0, profile="quick").cache_key("mc", {"n": 8})  # stable
    others = [
        _ctx(tmp_path, seed=1, profile="quick").cache_key("mc", {"n": 8}),
        _ctx(tmp_path, seed=0, profile="paper").cache_key("mc", {"n": 8}),
        _ctx(tmp_path, seed=0, profile="quick", check_id="B8").cache_key("mc", {"n": 8}),
        _ctx(tmp_path, seed=0, profile="quick", device="cuda").cache_key("mc", {"n": 8}),
        base.cache_key("other", {"n": 8}),
        base.cache_key("mc", {"n": 9}),
        base.cache_key("mc", {"n": 8}, version="2"),
    ]
    assert len({k0, *others}) == len(others) + 1


def test_corrupt_entry_is_recomputed(tmp_path):
    ctx = _ctx(tmp_path)
    ctx.cached("mc", {"n": 8}, lambda: {"x": np.ones(3)})
    (path,) = (tmp_path / "B9").glob("*.npz")
    path.write_bytes(b"not a zip file")
    calls = []
    out = ctx.cached("mc", {"n": 8}, lambda: calls.append(1) or {"x": np.full(3, 2.0)})
    assert calls and np.all(out["x"] == 2.0)
    np.testing.assert_array_equal(ctx.cached("mc", {"n": 8}, lambda: {"x": np.zeros(3)})["x"], np.full(3, 2.0))


def test_rejects_object_values(tmp_path):
    with pytest.raises(ValueError, match="numeric"):
        _ctx(tmp_path).cached("mc", {"n": 8}, lambda: {"x": np.array([{"a": 1}], dtype=object)})


_spec = claim_of


def _measured(res):
    return [(c.name, c.measured, c.uncertainty, c.passed) for c in res.comparisons]


def test_core_check_resumes_from_cache(tmp_path, monkeypatch):
    """A paper-B core check run twice: the second run computes nothing and reports the same numbers."""
    from verify.checks import _paper_b as core

    first = run_check(_spec("B5"), CheckContext(profile="smoke", cache_dir=tmp_path, n_jobs=1, seed=4))
    assert first.verdict in (Verdict.PASS, Verdict.FAIL), first.error

    def boom(*a, **k):
        raise AssertionError("the Monte Carlo ran although every cell is cached")

    monkeypatch.setattr(core, "simulate_model", boom)
    second = run_check(_spec("B5"), CheckContext(profile="smoke", cache_dir=tmp_path, n_jobs=1, seed=4))
    assert second.verdict is first.verdict, second.error
    assert _measured(second) == _measured(first)
    assert second.seeds == first.seeds
    # another base seed is another key: it must compute (and here it cannot)
    third = run_check(_spec("B5"), CheckContext(profile="smoke", cache_dir=tmp_path, n_jobs=1, seed=5))
    assert third.verdict is Verdict.ERROR and "cached" in third.error


def test_interrupted_structured_check_recomputes_only_missing_cells(tmp_path, monkeypatch):
    import numerics

    from verify.checks import paper_b_structured as mod
    from verify.checks import _structured as grid

    tiny = mod.StructuredProfile(
        p_sizes=(16, 32), trials=3, gammas=(0.1, 1.0), snrs=(1.0,),
        spikes=(grid.SPIKE_NONE, (4.0, "aligned")), cs=(0.5, 2.0),
        b4_snrs=(0.5,), b4_gammas=(0.1, 10.0),
        b4_theory_grid=(-2.0, 1.0, 4), reversal_grid=(-3.0, 2.0, 11), figure_grid=(-3.0, 1.0, 9),
    )
    monkeypatch.setitem(grid.STRUCTURED_PROFILES, "quick", tiny)
    real = numerics.simulate_model
    calls = []

    def counting(*a, **k):
        calls.append(a[:2])
        if len(calls) == 3:
            raise KeyboardInterrupt  # interrupted in the third of four cells
        return real(*a, **k)

    monkeypatch.setattr(numerics, "simulate_model", counting)
    ctx = lambda: CheckContext(profile="quick", cache_dir=tmp_path, n_jobs=1)  # noqa: E731
    with pytest.raises(KeyboardInterrupt):
        run_check(_spec("B7"), ctx())
    assert len(list((tmp_path / "B7").glob("*.npz"))) == 2
    calls.clear()
    resumed = run_check(_spec("B7"), ctx())
    assert len(calls) == 2  # only the two missing cells
    monkeypatch.setattr(numerics, "simulate_model", real)
    fresh = run_check(_spec("B7"), CheckContext(profile="quick", cache_dir=None, n_jobs=1))
    assert _measured(resumed) == _measured(fresh)


# ------------------------------------------------------------------- borrowed cells and the run's memo
def test_run_memo_computes_a_cell_once_and_hands_out_copies():
    calls, memo = [], {}
    ctx = CheckContext(cache_dir=None, check_id="B9", memo=memo)
    a = ctx.cached("mc", {"n": 1}, lambda: calls.append(1) or {"x": np.ones(2)})
    a["x"][0] = 5.0  # a caller's change does not reach the next reader
    b = CheckContext(cache_dir=None, check_id="B9", memo=memo).cached("mc", {"n": 1}, lambda: calls.append(1) or {})
    assert len(calls) == 1 and b["x"].tolist() == [1.0, 1.0]


def test_borrowing_uses_the_lenders_seeds_and_entries_and_records_the_seeds(tmp_path):
    lender = _ctx(tmp_path, check_id="B7", seed=3)
    borrower = _ctx(tmp_path, check_id="B4", seed=3)
    view = borrower.borrowing("B7")
    assert view.seed_for("grid", 1) == lender.seed_for("grid", 1)
    assert borrower.seeds_used == [lender.seeds_used[0]]  # recorded in the borrower's report
    calls = []
    lender.cached("mc", {"n": 2}, lambda: calls.append(1) or {"x": np.ones(3)})
    got = view.cached("mc", {"n": 2}, lambda: calls.append(1) or {"x": np.zeros(3)})
    assert len(calls) == 1 and got["x"].tolist() == [1.0, 1.0, 1.0]
    assert not (tmp_path / "B4").exists()


@pytest.mark.parametrize("cache", ["disk", "memo"])
def test_b4_reads_b7s_draws_and_measures_what_it_measures_alone(tmp_path, monkeypatch, cache):
    """B7 then B4 at the smoke profile: B4 draws no Monte Carlo cell of its own, and its measured values equal
    those of B4 run alone (which draws the shared cells itself)."""
    import numerics

    real = numerics.simulate_model
    calls = []
    monkeypatch.setattr(numerics, "simulate_model", lambda *a, **k: calls.append(a[:2]) or real(*a, **k))
    make = (lambda: CheckContext(profile="smoke", cache_dir=tmp_path, n_jobs=1)) if cache == "disk" else None
    memo: dict = {}
    if make is None:
        make = lambda: CheckContext(profile="smoke", cache_dir=None, n_jobs=1, memo=memo)  # noqa: E731
    b7 = run_check(_spec("B7"), make())
    n_b7 = len(calls)
    b4 = run_check(_spec("B4"), make())
    assert b7.error is None and b4.error is None
    assert n_b7 > 0 and len(calls) == n_b7  # B4 borrowed every cell
    alone = run_check(_spec("B4"), CheckContext(profile="smoke", cache_dir=None, n_jobs=1))
    assert _measured(b4) == _measured(alone)
    assert set(b4.seeds) <= set(b7.seeds)
