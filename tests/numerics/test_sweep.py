"""Tests of numerics.sweep: grid x seeds, cache reuse/resume, executor equality."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from numerics.sweep import SweepResults, Workers, cache_key, cell_seed, run_sweep

CALLS: list[tuple] = []


def task(cell: dict, seed: int) -> dict:
    """Deterministic given (cell, seed); uses numpy and torch so that both are exercised."""
    import torch

    CALLS.append((cell["M"], seed))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((cell["M"], 3))
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(3, 3, generator=g, dtype=torch.float64)
    y = torch.from_numpy(x) @ w
    return {"err": float(np.mean(x**2)) * cell.get("scale", 1.0), "t": float(y.square().mean()),
            "vec": x[0].tolist()}


def failing_task(cell: dict, seed: int) -> dict:
    if cell["M"] == 30:
        raise RuntimeError("boom")
    return task(cell, seed)


def clash_task(cell: dict, seed: int) -> dict:
    return {"M": 1}


CELLS = [{"M": m, "scale": 2.0} for m in (10, 20, 30)]


def test_grid_order_and_records():
    res = run_sweep(task, CELLS, seeds=[1, 2], workers=Workers(n_jobs=1))
    assert isinstance(res, SweepResults) and len(res) == 6
    assert [(r["M"], r["seed"]) for r in res] == [(10, 1), (10, 2), (20, 1), (20, 2), (30, 1), (30, 2)]
    assert res.n_computed == 6 and res.n_cached == 0
    assert res.column("err").shape == (6,)
    assert len(res.filter(M=20)) == 2


def test_n_replicates_gives_independent_seeds_per_cell():
    res = run_sweep(task, CELLS, n_replicates=3, base_seed=5, workers=Workers(n_jobs=1))
    seeds = [r["seed"] for r in res]
    assert len(set(seeds)) == 9
    assert seeds[:3] == [cell_seed(5, CELLS[0], i) for i in range(3)]


def test_cache_reuse_and_resume(tmp_path):
    CALLS.clear()
    first = run_sweep(task, CELLS[:2], seeds=[1, 2], cache_dir=tmp_path, workers=Workers(n_jobs=1))
    assert len(CALLS) == 4
    CALLS.clear()
    seen = []
    second = run_sweep(task, CELLS, seeds=[1, 2], cache_dir=tmp_path, workers=Workers(n_jobs=1), progress=seen.append)
    assert len(CALLS) == 2  # only the new cell (M=30) is computed: the sweep resumed
    assert second.n_cached == 4 and second.n_computed == 2 and len(seen) == 6
    assert list(second)[:4] == list(first)
    CALLS.clear()
    third = run_sweep(task, CELLS, seeds=[1, 2], cache_dir=tmp_path, workers=Workers(n_jobs=1))
    assert CALLS == [] and third.n_computed == 0  # second run calls func zero times
    assert list(third) == list(second)
    # a new version string invalidates the cache
    run_sweep(task, CELLS[:1], seeds=[1], cache_dir=tmp_path, workers=Workers(n_jobs=1), version="2")
    assert len(CALLS) == 1


def test_interrupted_sweep_keeps_finished_cells(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        run_sweep(failing_task, CELLS, seeds=[1], cache_dir=tmp_path, workers=Workers(n_jobs=1))
    files = list(tmp_path.rglob("*.json"))
    assert len(files) == 2  # M=10 and M=20 finished before the failure
    blob = json.loads(files[0].read_text())
    assert set(blob) == {"func", "cell", "seed", "version", "result", "sha256"}
    CALLS.clear()
    run_sweep(failing_task, CELLS[:2], seeds=[1], cache_dir=tmp_path, workers=Workers(n_jobs=1))
    assert CALLS == []


def test_corrupt_cache_entry_is_recomputed(tmp_path):
    run_sweep(task, CELLS[:1], seeds=[1], cache_dir=tmp_path, workers=Workers(n_jobs=1))
    (f,) = tmp_path.rglob("*.json")
    f.write_text("{not json")
    CALLS.clear()
    res = run_sweep(task, CELLS[:1], seeds=[1], cache_dir=tmp_path, workers=Workers(n_jobs=1))
    assert len(CALLS) == 1 and res.n_computed == 1


def test_cache_key_stable_and_sensitive():
    k = cache_key(task, {"M": 10, "scale": 2.0}, 1)
    assert k == cache_key(task, {"scale": 2.0, "M": 10}, 1)  # key order does not matter
    assert k != cache_key(task, {"M": 10, "scale": 2.0}, 2)
    assert k != cache_key(task, {"M": 11, "scale": 2.0}, 1)
    assert k != cache_key(failing_task, {"M": 10, "scale": 2.0}, 1)
    assert k != cache_key(task, {"M": 10, "scale": 2.0}, 1, version="2")


def test_local_processes_equal_in_process():
    serial = list(run_sweep(task, CELLS, seeds=[3, 4], workers=Workers(n_jobs=1)))
    parallel = list(run_sweep(task, CELLS, seeds=[3, 4], workers=Workers(n_jobs=2)))
    assert parallel == serial  # bitwise identical, grid order


def test_dask_in_process_cluster_equals_local():
    pytest.importorskip("distributed")
    serial = list(run_sweep(task, CELLS, seeds=[3, 4], workers=Workers(n_jobs=1)))
    dask_res = list(run_sweep(task, CELLS, seeds=[3, 4], workers=Workers(n_jobs=2, executor="dask")))
    assert dask_res == serial


def test_dask_local_cluster_on_loopback_equals_local():
    """A real LocalCluster with worker processes on 127.0.0.1, addressed by its scheduler address
    (runs in CI: ~4 s on an idle machine, worker start-up imports torch)."""
    distributed = pytest.importorskip("distributed")
    serial = list(run_sweep(task, CELLS, seeds=[3, 4], workers=Workers(n_jobs=1)))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        got = run_sweep(task, CELLS, seeds=[3, 4], workers=Workers(executor="dask", scheduler=cluster.scheduler_address))
        with distributed.Client(cluster) as client:
            got2 = run_sweep(task, CELLS, seeds=[3, 4], workers=Workers(executor="dask", scheduler=client))
    assert list(got) == serial and list(got2) == serial


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({}, "n_replicates"),
        ({"seeds": [1], "n_replicates": 2}, "either"),
        ({"seeds": [-1]}, "seeds"),
        ({"seeds": []}, "seeds"),
        ({"seeds": [1], "workers": Workers(executor="dask", scheduler=3.5)}, "scheduler"),
    ],
)
def test_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        run_sweep(task, CELLS[:1], **kwargs)


@pytest.mark.parametrize("kwargs, match", [({"executor": "spark"}, "executor"), ({"n_jobs": 0}, "n_jobs"),
                                           ({"torch_threads": 0}, "torch_threads")])
def test_invalid_workers(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Workers(**kwargs)


def test_invalid_func_and_cells():
    with pytest.raises(ValueError, match="top-level"):
        run_sweep(lambda c, s: {}, CELLS, seeds=[1])
    with pytest.raises(ValueError, match="cells"):
        run_sweep(task, [], seeds=[1])
    with pytest.raises(ValueError, match="seed"):
        run_sweep(task, [{"M": 3, "seed": 1}], seeds=[1])
    with pytest.raises(ValueError, match="collide"):
        run_sweep(clash_task, CELLS[:1], seeds=[1], workers=Workers(n_jobs=1))


def test_cache_is_shared_across_n_jobs(tmp_path):
    """The key is (func, cell, seed, version): a sweep written with 2 workers is read back by 1 (resume)."""
    first = run_sweep(task, CELLS, seeds=[5, 6], cache_dir=tmp_path, workers=Workers(n_jobs=2))
    CALLS.clear()
    again = run_sweep(task, CELLS, seeds=[5, 6], cache_dir=tmp_path, workers=Workers(n_jobs=1))
    assert CALLS == [] and again.n_computed == 0 and again.n_cached == 6
    assert list(again) == list(first)


def test_device_key_changes_the_cache_key_but_not_the_seeds():
    from numerics.sweep import cache_key, cell_seed

    cpu = {"M": 100, "d": 2}
    gpu = {**cpu, "device": "cuda"}
    assert [cell_seed(3, cpu, i) for i in range(4)] == [cell_seed(3, gpu, i) for i in range(4)]
    assert cell_seed(3, cpu, 0) != cell_seed(3, {**cpu, "M": 101}, 0)
    assert cache_key(cell_seed, cpu, 1) != cache_key(cell_seed, gpu, 1)


# ---------------------------------------------------------------------------------------------
# to_jsonable: the one JSON conversion (sweep cache, verify report, benchmark summary)
# ---------------------------------------------------------------------------------------------
MIXED = {"M": np.int64(100), "sigma": np.float64(0.1), "grid": np.array([0.5, 1.0, np.nan]), "pair": (1, "a"),
         "opts": {"b": np.bool_(True), 3: None, "inf": float("inf")}, "name": np.str_("x"), "m": np.arange(4).reshape(2, 2)}


def test_cache_key_and_cell_seed_are_pinned():
    """Golden values written by the implementation before the one JSON conversion: a changed key would invalidate users' caches.

    The key hashes the function's qualified name; the stand-in keeps the name the golden value was written with
    (``numerics.sweep.cell_seed``, before the function moved to ``numerics._cache_keys``)."""

    def stand_in():
        return None

    stand_in.__module__, stand_in.__qualname__ = "numerics.sweep", "cell_seed"
    assert cache_key(stand_in, MIXED, 7, version="v3", source=False) == "df56cab305f40deb00e93b9600aa4738abc8a332c53c2984e607d80e4dde68f8"
    assert cell_seed(11, MIXED, 2) == 3013721384


def test_to_jsonable_default_policy_keeps_nan_and_raises_on_unknown():
    from numerics.sweep import to_jsonable

    out = to_jsonable(MIXED)
    assert json.dumps(out, sort_keys=True, allow_nan=True) == (
        '{"M": 100, "grid": [0.5, 1.0, NaN], "m": [[0, 1], [2, 3]], "name": "x", '
        '"opts": {"3": null, "b": true, "inf": Infinity}, "pair": [1, "a"], "sigma": 0.1}')
    assert type(out["M"]) is int and type(out["sigma"]) is float and type(out["opts"]["b"]) is bool
    for bad in (object(), {1, 2}, np.complex128(1j), b"x"):
        with pytest.raises(ValueError, match="not JSON-serialisable"):
            to_jsonable({"a": [bad]})


@pytest.mark.parametrize("nonfinite, expected", [("keep", "[NaN, Infinity, -Infinity, NaN, [1.0, NaN]]"),
                                                  ("str", '["nan", "inf", "-inf", "nan", [1.0, "nan"]]'),
                                                  ("null", "[null, null, null, null, [1.0, null]]")])
def test_to_jsonable_nonfinite_policies(nonfinite, expected):
    from numerics.sweep import to_jsonable

    v = [float("nan"), np.float32("inf"), -np.inf, np.array(np.nan), np.array([1.0, np.nan])]
    assert json.dumps(to_jsonable(v, nonfinite=nonfinite)) == expected
    finite = np.linspace(0, 1, 7)  # the fast path of arrays equals the element-wise one
    assert to_jsonable(finite, nonfinite=nonfinite) == [float(x) for x in finite]


def test_to_jsonable_unknown_policies_and_bad_policies():
    from numerics.sweep import to_jsonable

    class Thing:
        def __str__(self):
            return "thing"

    t = Thing()
    assert to_jsonable({"t": (t,)}, unknown="str") == {"t": ["thing"]}
    assert to_jsonable({"t": (t,)}, unknown="keep")["t"][0] is t
    with pytest.raises(ValueError, match="nonfinite"):
        to_jsonable(1.0, nonfinite="drop")
    with pytest.raises(ValueError, match="unknown"):
        to_jsonable(1.0, unknown="ignore")


def test_report_and_benchmark_conversions_keep_their_bytes():
    """verify's report (non-finite -> strings, unknown -> str) and the benchmark summary (non-finite -> null, unknown
    kept for default=str) write what their own implementations wrote before the one JSON conversion."""
    from benchmarks.__main__ import _jsonable as bench_jsonable
    from verify.validation import jsonable as report_jsonable

    v = {"a": [1.5, float("nan"), float("-inf")], "n": np.float64(2.0), "k": np.int32(3), 4: (None, True, "s"),
         "arr": np.array([[1.0, np.inf]]), "obj": Path("p")}
    assert json.dumps(report_jsonable(v)) == (
        '{"a": [1.5, "nan", "-inf"], "n": 2.0, "k": 3, "4": [null, true, "s"], "arr": [[1.0, "inf"]], "obj": "p"}')
    w = {"a": [1.5, float("nan"), float("inf")], "n": np.float64(2.0), "k": np.int64(3), 4: (None, True, "s"),
         "obj": Path("p")}
    assert json.dumps(bench_jsonable(w), default=str) == (
        '{"a": [1.5, null, null], "n": 2.0, "k": 3, "4": [null, true, "s"], "obj": "p"}')
