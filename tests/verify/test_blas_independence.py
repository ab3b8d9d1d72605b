"""The same data on every machine: a paper-A check under another BLAS code path gives the same numbers.

The check runs twice in fresh subprocesses at the smoke profile: once as the machine is, once with the MKL and
OpenBLAS kernels forced to an old instruction set (``MKL_ENABLE_INSTRUCTIONS=SSE4_2``,
``OPENBLAS_CORETYPE=Prescott``) and torch at one thread instead of two.  Every measured value must agree to a
relative 1e-6: the draws are seeded from the design's integers and strings only (a computed float such as a
balanced noise level never enters a seed), so what differs is rounding, not data.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_SCRIPT = r"""
import json, sys, torch
torch.set_num_threads(int(sys.argv[2]))
from verify.claim import claim_of
from verify.context import CheckContext
from verify.claim import run_check
spec = claim_of(sys.argv[1])
res = run_check(spec, CheckContext(profile="smoke", cache_dir=None, n_jobs=1))
assert res.error is None, res.error
print(json.dumps({"comparisons": [c.to_json() for c in res.comparisons], "data": res.to_json()["data"]}))
"""


def _run(check_id: str, env_extra: dict, threads: int) -> dict:
    env = {**os.environ, **env_extra}
    out = subprocess.run([sys.executable, "-c", _SCRIPT, check_id, str(threads)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _numbers(obj, path=""):
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return
    if isinstance(obj, (int, float)):
        yield path, float(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("fit_time", "runtime_s", "sweep"):  # timings and cache counts are not data
                continue
            yield from _numbers(v, f"{path}/{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _numbers(v, f"{path}[{i}]")


@pytest.mark.parametrize("check_id", ["A3"])
def test_measured_values_do_not_depend_on_the_blas_path(check_id):
    a = _run(check_id, {}, 2)
    b = _run(check_id, {"MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "OPENBLAS_CORETYPE": "Prescott"}, 1)
    na, nb = dict(_numbers(a)), dict(_numbers(b))
    assert na.keys() == nb.keys()
    assert len(na) > 50
    bad = [(k, na[k], nb[k]) for k in na
           if not (na[k] == nb[k] or (math.isfinite(na[k]) and abs(na[k] - nb[k]) <= 1e-6 * max(abs(na[k]), abs(nb[k]))))]
    assert not bad, f"{len(bad)} values differ beyond 1e-6 relative, e.g. {bad[:5]}"
