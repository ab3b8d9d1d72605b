"""``numerics.malloc``: argument checks; glibc takes the settings (Linux only), here and in the sweep's workers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from numerics import malloc
from numerics.malloc import INHERIT_ENV, keep_freed_memory


#: a task that counts the page faults of ten reallocations of a 64 MB tensor (after one to warm up)
_FAULTS_FUNC = (
    "import resource, sys, torch\n"
    "def faults(cell, seed):\n"
    "    a = torch.ones(2**23, dtype=torch.float64); del a\n"
    "    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
    "    for _ in range(10):\n"
    "        a = torch.ones(2**23, dtype=torch.float64); del a\n"
    "    return {'faults': resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0}\n"
)


@pytest.mark.parametrize("bad", [0, -1, 2**31, 1.5, True, "1"])
def test_refuses_thresholds_outside_the_int_range(bad):
    with pytest.raises(ValueError, match="threshold"):
        keep_freed_memory(mmap_threshold=bad)
    with pytest.raises(ValueError, match="threshold"):
        keep_freed_memory(trim_threshold=bad)


def test_glibc_takes_the_settings_and_large_blocks_stop_faulting():
    """In a fresh process: with the settings, reallocating a 64 MB tensor costs far fewer page faults (torch's CPU
    allocator is glibc's malloc; numpy asks for transparent huge pages, which hides the effect)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc only")
    code = (
        _FAULTS_FUNC
        + "from numerics.malloc import keep_freed_memory\n"
        "ok = keep_freed_memory() if sys.argv[1] == 'on' else True\n"
        "print(ok, faults(None, 0)['faults'])\n"
    )
    out = {}
    for mode in ("off", "on"):
        res = subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True, check=True)
        ok, faults = res.stdout.split()
        if ok != "True":
            pytest.skip("the C library is not glibc")
        out[mode] = int(faults)
    # default: each 64 MB block is a fresh mmap (16384 pages faulted per allocation); kept: the heap's pages reused
    assert out["off"] > 10 * 16384 * 0.9
    assert out["on"] < out["off"] / 10


_FAULTS_CODE = (
    _FAULTS_FUNC
    + "if __name__ == '__main__':\n"
    "    from numerics.malloc import keep_freed_memory\n"
    "    from numerics.sweep import Workers, run_sweep\n"
    "    ok = keep_freed_memory(children=True) if sys.argv[1] == 'on' else True\n"
    "    res = run_sweep(faults, [{'x': 0}, {'x': 1}], seeds=[0], workers=Workers(n_jobs=2))\n"
    "    print(ok, *[r['faults'] for r in res])\n"
)


def _run_script(tmp_path: Path, code: str, modes: tuple[str, ...]) -> dict[str, list[int]]:
    """Run ``code`` as a script (a sweep needs its functions importable by the workers) once per mode, without an
    inherited :data:`INHERIT_ENV`; it prints whether glibc took the settings, then integers. Skips off glibc."""
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc only")
    script = tmp_path / "sweep_script.py"
    script.write_text(code)
    env = {k: v for k, v in os.environ.items() if k != INHERIT_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
    out = {}
    for mode in modes:
        res = subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True, check=True,
                             env=env, cwd=tmp_path)
        ok, *values = res.stdout.split()
        if ok != "True":
            pytest.skip("the C library is not glibc")
        out[mode] = [int(v) for v in values]
    return out


def test_sweep_workers_take_the_parents_settings(tmp_path):
    """``children=True``: the sweep's worker processes (loky) keep freed blocks too; without it they do not."""
    out = _run_script(tmp_path, _FAULTS_CODE, ("off", "on"))
    # default: each of the 10 reallocations faults its 16384 pages in; kept: measured 1 of 10 (the first)
    assert min(out["off"]) > 10 * 16384 * 0.9
    assert max(out["on"]) < 3 * 16384


def test_apply_inherited_ignores_a_malformed_value(monkeypatch):
    monkeypatch.setattr(malloc, "_APPLIED", {})
    monkeypatch.setenv(INHERIT_ENV, "not,numbers")
    assert malloc.apply_inherited() is False
    monkeypatch.setattr(malloc, "_APPLIED", {})
    monkeypatch.delenv(INHERIT_ENV)
    assert malloc.apply_inherited() is False


_KEPT_HEAP_CODE = (
    "import os, sys, time, torch\n"
    "def hold(cell, seed):\n"
    "    if os.environ.get('HOLD_SEEN'):  # loky measures its reference after a worker's first task: grow after it\n"
    "        a = torch.ones(2**26, dtype=torch.float64); del a  # 512 MB, kept in the heap once freed\n"
    "    os.environ['HOLD_SEEN'] = '1'\n"
    "    if cell['control']:  # loky's own limit again: a worker holding a kept heap is then restarted\n"
    "        import joblib.externals.loky.process_executor as pe\n"
    "        pe._MAX_MEMORY_LEAK_SIZE = int(3e8)\n"
    "    time.sleep(1.1)  # loky measures a worker's memory at most once a second\n"
    "    return {'pid': os.getpid()}\n"
    "if __name__ == '__main__':\n"
    "    from numerics.malloc import keep_freed_memory\n"
    "    from numerics.sweep import Workers, run_sweep\n"
    "    ok = keep_freed_memory(children=True)\n"
    "    cells = [{'control': sys.argv[1] == 'control', 'x': x} for x in range(6)]\n"
    "    res = run_sweep(hold, cells, seeds=[0], workers=Workers(n_jobs=2))\n"
    "    print(ok, len({r['pid'] for r in res}))\n"
)


def test_workers_that_keep_freed_memory_are_not_restarted(tmp_path):
    """loky restarts a worker whose memory grew by 300 MB, taking the kept heap for a leak (a fresh interpreter and
    torch's import each time); the workers keep their heap and their process. Control: loky's limit restored in the
    task, the same sweep restarts its workers."""
    pids = _run_script(tmp_path, _KEPT_HEAP_CODE, ("kept", "control"))
    assert pids["kept"] == [2]
    assert pids["control"][0] > 2
