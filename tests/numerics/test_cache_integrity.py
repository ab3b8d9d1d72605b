"""Both caches verify what they read: the sweep runner's JSON entries (``numerics.sweep.run_sweep``)
and the report's ``.npz`` cells (``verify.registry.CheckContext.cached``).

Every entry stores its key and the SHA-256 of its payload. A forged entry (right key, altered values), a foreign
one (another cell's file under this key) or a malformed one (``"result": {}``, a truncated file, a result whose
keys collide with the cell's) is recomputed with a ``CacheIntegrityWarning``: never trusted, never a permanent
ERROR. Entries written before checksums (no ``sha256``) are accepted when their key matches, and rewritten with
a checksum. Two processes on one cache directory never compute the same cell twice (file locks).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from numerics._cache_files import result_checksum
from numerics.sweep import CacheIntegrityWarning, Workers, cache_key, run_sweep
from verify.context import CheckContext

HERE = Path(__file__).resolve().parent
CALLS: list[tuple] = []


def task(cell: dict, seed: int) -> dict:
    """Deterministic in (cell, seed); logs its calls in-process (CALLS) and, with H7_LOG set, to that file."""
    CALLS.append((cell["i"], seed))
    log = os.environ.get("H7_LOG")
    if log:
        time.sleep(float(os.environ.get("H7_SLEEP", "0")))
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()} {cell['i']} {seed}\n")
    rng = np.random.default_rng(seed + 100 * cell["i"])
    return {"slope": float(rng.standard_normal()), "errs": rng.random(3).tolist()}


CELLS = [{"i": i, "P": 3 + i} for i in range(3)]


def _entry(tmp_path: Path, cell: dict, seed: int = 1) -> Path:
    key = cache_key(task, cell, seed, "1")
    return tmp_path / key[:2] / f"{key}.json"


def _sweep(tmp_path: Path, cells=CELLS, **kw):
    return run_sweep(task, cells, seeds=[1], cache_dir=tmp_path, workers=Workers(n_jobs=1), **kw)


def _rerun_recomputes(tmp_path: Path, match: str, cells=CELLS) -> None:
    """The rerun warns (``match``), recomputes exactly one pair, and returns the true records."""
    truth = list(run_sweep(task, cells, seeds=[1], workers=Workers(n_jobs=1)))
    CALLS.clear()
    with pytest.warns(CacheIntegrityWarning, match=match):
        res = _sweep(tmp_path, cells)
    assert len(CALLS) == 1 and res.n_computed == 1 and res.n_cached == len(cells) - 1
    assert list(res) == truth
    CALLS.clear()
    again = _sweep(tmp_path, cells)  # the entry was rewritten: trusted again, no warning, nothing computed
    assert CALLS == [] and list(again) == truth


# ----------------------------------------------------------------------------------------- sweep JSON entries
def test_entry_stores_key_and_checksum(tmp_path):
    _sweep(tmp_path)
    blob = json.loads(_entry(tmp_path, CELLS[1]).read_text())
    assert blob["func"] == "test_cache_integrity.task" or blob["func"].endswith(".task")
    assert blob["cell"] == CELLS[1] and blob["seed"] == 1 and blob["version"] == "1"
    assert blob["sha256"] == result_checksum(blob["result"]) and len(blob["sha256"]) == 64


def test_forged_value_with_the_right_key_is_recomputed(tmp_path):
    """The issue's one-digit edit (A2's slope -0.951 -> -1.726): the checksum no longer matches."""
    _sweep(tmp_path)
    path = _entry(tmp_path, CELLS[1])
    blob = json.loads(path.read_text())
    blob["result"]["slope"] = blob["result"]["slope"] - 0.775
    path.write_text(json.dumps(blob))
    _rerun_recomputes(tmp_path, "checksum mismatch")


def test_foreign_entry_under_the_key_is_recomputed(tmp_path):
    """Another cell's (valid, self-consistent) file copied under this cell's key."""
    _sweep(tmp_path)
    _entry(tmp_path, CELLS[1]).write_text(_entry(tmp_path, CELLS[2]).read_text())
    _rerun_recomputes(tmp_path, "foreign entry: its cell differ")


def test_foreign_seed_or_version_is_recomputed(tmp_path):
    _sweep(tmp_path)
    path = _entry(tmp_path, CELLS[0])
    blob = json.loads(path.read_text())
    path.write_text(json.dumps({**blob, "seed": 2}))
    _rerun_recomputes(tmp_path, "foreign entry: its seed")
    blob = json.loads(path.read_text())
    path.write_text(json.dumps({**blob, "version": "0"}))
    _rerun_recomputes(tmp_path, "foreign entry: its version")


@pytest.mark.parametrize("result, match", [
    ({}, "malformed result"),  # the issue: made A2 ERROR on every rerun
    ([1.0, 2.0], "malformed result"),
    ({"P": 9}, "collide"),  # would raise 'collide' in every record
    ("slope", "malformed result"),
])
def test_malformed_result_is_recomputed_even_with_a_matching_checksum(tmp_path, result, match):
    _sweep(tmp_path)
    path = _entry(tmp_path, CELLS[2])
    blob = json.loads(path.read_text())
    blob["result"] = result
    blob["sha256"] = result_checksum(result) if isinstance(result, dict) else "0" * 64
    path.write_text(json.dumps(blob))
    _rerun_recomputes(tmp_path, match)


@pytest.mark.parametrize("damage", ["truncate", "not_json", "not_an_entry", "no_result"])
def test_truncated_or_unparsable_entry_is_recomputed(tmp_path, damage):
    _sweep(tmp_path)
    path = _entry(tmp_path, CELLS[0])
    text = path.read_text()
    blob = json.loads(text)
    new = {"truncate": text[: len(text) // 2], "not_json": "{not json", "not_an_entry": "[1, 2, 3]",
           "no_result": json.dumps({k: v for k, v in blob.items() if k != "result"})}[damage]
    path.write_text(new)
    _rerun_recomputes(tmp_path, "unreadable|malformed")


def test_entry_without_checksum_is_accepted_when_its_key_matches_and_upgraded(tmp_path):
    """Entries written before the cache carried checksums (no ``sha256``): the key is verified, the payload trusted once, and the
    file rewritten with a checksum (so that later edits are caught)."""
    _sweep(tmp_path)
    path = _entry(tmp_path, CELLS[1])
    blob = json.loads(path.read_text())
    legacy = {k: v for k, v in blob.items() if k != "sha256"}
    path.write_text(json.dumps(legacy))
    CALLS.clear()
    res = _sweep(tmp_path)
    assert CALLS == [] and res.n_cached == 3
    assert json.loads(path.read_text())["sha256"] == blob["sha256"]  # upgraded in place
    # a legacy entry with a foreign key or an empty result is still refused
    path.write_text(json.dumps({**legacy, "cell": CELLS[2]}))
    _rerun_recomputes(tmp_path, "foreign")
    path.write_text(json.dumps({**legacy, "result": {}}))
    _rerun_recomputes(tmp_path, "malformed")


def test_the_same_pair_twice_in_one_sweep_is_computed_once(tmp_path):
    CALLS.clear()
    res = run_sweep(task, [CELLS[0], CELLS[0]], seeds=[1, 1], cache_dir=tmp_path, workers=Workers(n_jobs=1))
    assert len(CALLS) == 1 and len(res) == 4 and res.n_computed == 4 and res.n_cached == 0
    assert len({json.dumps(r, sort_keys=True) for r in res}) == 1
    assert len(list(tmp_path.rglob("*.json"))) == 1


_SWEEP_SCRIPT = """
import json, sys
sys.path.insert(0, {here!r})
from numerics.sweep import Workers, run_sweep
import test_cache_integrity as t
res = run_sweep(t.task, [{{"i": i, "P": 3}} for i in range(8)], seeds=[1], cache_dir={cache!r}, workers=Workers(n_jobs={n_jobs}))
print(json.dumps(list(res)))
"""


def _two_processes(scripts: list[str], log: Path, sleep: float) -> list[str]:
    """Run the scripts at the same time (the log records which process computed what); their stdouts."""
    env = {**os.environ, "H7_LOG": str(log), "H7_SLEEP": str(sleep)}
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for script in scripts]
    outs = [p.communicate(timeout=240) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err
    return [o for o, _ in outs]


def test_two_concurrent_sweeps_never_compute_a_pair_twice(tmp_path):
    """One sweep in-process (one job), one with 2 loky workers (claims taken in joblib's dispatch thread)."""
    log = tmp_path / "calls.log"
    scripts = [_SWEEP_SCRIPT.format(here=str(HERE), cache=str(tmp_path / "cache"), n_jobs=n) for n in (1, 2)]
    a, b = _two_processes(scripts, log, sleep=0.3)
    calls = [tuple(line.split()[1:]) for line in log.read_text().splitlines()]
    assert sorted(calls) == sorted({(str(i), "1") for i in range(8)})  # each of the 8 pairs exactly once
    assert json.loads(a) == json.loads(b)


# ----------------------------------------------------------------------------------------- report .npz cells
def _ctx(tmp_path: Path, **kw) -> CheckContext:
    kw.setdefault("check_id", "B9")
    return CheckContext(cache_dir=tmp_path, **kw)


def _values(n: int = 8) -> dict:
    return {"mean": np.linspace(0.0, 1.0, n), "trials": np.arange(2.0 * n).reshape(2, n)}


def _npz(tmp_path: Path, key: dict) -> Path:
    return tmp_path / "B9" / f"{_ctx(tmp_path).cache_key('mc', key)}.npz"


def _cached_recomputes(tmp_path: Path, key: dict, match: str) -> None:
    calls = []
    with pytest.warns(CacheIntegrityWarning, match=match):
        out = _ctx(tmp_path).cached("mc", key, lambda: calls.append(1) or _values(key["n"]))
    assert calls == [1]
    for k, v in _values(key["n"]).items():
        np.testing.assert_array_equal(out[k], v)
    again = _ctx(tmp_path).cached("mc", key, lambda: calls.append(1) or _values(key["n"]))  # rewritten: trusted
    assert calls == [1] and set(again) == {"mean", "trials"}


def _resave(path: Path, **arrays) -> None:
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def _stored(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def test_npz_entry_stores_key_meta_and_checksum(tmp_path):
    _ctx(tmp_path, seed=3).cached("mc", {"n": 8}, lambda: _values())
    (path,) = (tmp_path / "B9").glob("*.npz")
    z = _stored(path)
    assert str(z["__key__"]) == path.stem and len(str(z["__sha256__"])) == 64
    meta = json.loads(str(z["__meta__"]))
    assert meta["check"] == "B9" and meta["name"] == "mc" and meta["key"] == {"n": 8} and meta["seed"] == 3


def test_npz_forged_values_with_the_right_key_are_recomputed(tmp_path):
    _ctx(tmp_path).cached("mc", {"n": 8}, _values)
    path = _npz(tmp_path, {"n": 8})
    z = _stored(path)
    z["mean"] = z["mean"] + 1e-9  # right key, right meta, right checksum field: wrong values
    _resave(path, **z)
    _cached_recomputes(tmp_path, {"n": 8}, "checksum mismatch")


def test_npz_foreign_entry_is_recomputed(tmp_path):
    _ctx(tmp_path).cached("mc", {"n": 8}, _values)
    _ctx(tmp_path).cached("mc", {"n": 4}, lambda: _values(4))
    _npz(tmp_path, {"n": 8}).write_bytes(_npz(tmp_path, {"n": 4}).read_bytes())
    _cached_recomputes(tmp_path, {"n": 8}, "foreign entry")


def test_npz_right_hash_but_other_key_fields_is_recomputed(tmp_path):
    _ctx(tmp_path).cached("mc", {"n": 8}, _values)
    path = _npz(tmp_path, {"n": 8})
    z = _stored(path)
    meta = json.loads(str(z["__meta__"]))
    z["__meta__"] = np.array(json.dumps({**meta, "key": {"n": 9}}, sort_keys=True, separators=(",", ":")))
    _resave(path, **z)
    _cached_recomputes(tmp_path, {"n": 8}, "foreign entry")


@pytest.mark.parametrize("damage", ["truncate", "object_array", "no_arrays", "checksum_without_meta"])
def test_npz_malformed_entry_is_recomputed(tmp_path, damage):
    _ctx(tmp_path).cached("mc", {"n": 8}, _values)
    path = _npz(tmp_path, {"n": 8})
    z = _stored(path)
    if damage == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif damage == "object_array":
        _resave(path, __key__=z["__key__"], __meta__=z["__meta__"], __sha256__=z["__sha256__"],
                mean=np.array([{"a": 1}], dtype=object), trials=z["trials"])
    elif damage == "no_arrays":
        _resave(path, __key__=z["__key__"], __meta__=z["__meta__"], __sha256__=z["__sha256__"])
    else:
        _resave(path, __key__=z["__key__"], __sha256__=z["__sha256__"], mean=z["mean"], trials=z["trials"])
    _cached_recomputes(tmp_path, {"n": 8}, "unreadable|malformed")


def test_npz_entry_without_checksum_is_accepted_when_its_key_matches_and_upgraded(tmp_path):
    """An entry of the code before the cache carried checksums (``__key__`` and the arrays only) is read back and rewritten with
    its key fields and checksum."""
    path = _npz(tmp_path, {"n": 8})
    path.parent.mkdir(parents=True)
    _resave(path, __key__=np.array(path.stem), **_values())
    out = _ctx(tmp_path).cached("mc", {"n": 8}, lambda: pytest.fail("a valid legacy entry was recomputed"))
    np.testing.assert_array_equal(out["mean"], _values()["mean"])
    assert "__sha256__" in _stored(path) and "__meta__" in _stored(path)
    _resave(path, __key__=np.array("0" * 64), **_values())  # a legacy entry of another key: refused
    _cached_recomputes(tmp_path, {"n": 8}, "foreign entry")


_CACHED_SCRIPT = """
import os, sys, time
import numpy as np
from verify.context import CheckContext

def compute(i):
    time.sleep(0.3)
    with open(os.environ["H7_LOG"], "a") as fh:
        fh.write(f"{{os.getpid()}} {{i}}\\n")
    return {{"x": np.full(4, float(i))}}

ctx = CheckContext(cache_dir={cache!r}, check_id="B9", n_jobs=1)
print([float(ctx.cached("mc", {{"i": i}}, lambda: compute(i))["x"][0]) for i in range(6)])
"""


def test_two_concurrent_runs_never_compute_a_cached_cell_twice(tmp_path):
    log = tmp_path / "calls.log"
    a, b = _two_processes([_CACHED_SCRIPT.format(cache=str(tmp_path / "cache"))] * 2, log, sleep=0)
    calls = [line.split()[1] for line in log.read_text().splitlines()]
    assert sorted(calls) == [str(i) for i in range(6)]  # each cell once, whichever process computed it
    assert a == b


def test_warnings_name_the_file_and_the_reason(tmp_path):
    _ctx(tmp_path).cached("mc", {"n": 8}, _values)
    path = _npz(tmp_path, {"n": 8})
    path.write_bytes(b"PK\x03\x04 broken")
    with pytest.warns(CacheIntegrityWarning) as rec:
        _ctx(tmp_path).cached("mc", {"n": 8}, _values)
    (w,) = [r for r in rec if issubclass(r.category, CacheIntegrityWarning)]
    assert str(path) in str(w.message) and "recomputing" in str(w.message)
