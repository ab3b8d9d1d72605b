"""Generate ``fingerprints.json``: the seed and the first random draw of every paper-A and paper-B cell.

Run from the repository root (it takes about a minute on 2 cores)::

    python tests/reference/make_fingerprints.py

Every check of paper A and paper B runs at the ``smoke`` profile (tiny sizes), base seed 0, no cache, while two
hooks record each simulation cell: paper A's sweep cells (``run_sweep``: the cell's integers and strings, its
first replicate seed, and the first values of ``X`` and ``Y`` that :func:`verify.checks._paper_a_numerics.model_for`
draws from that seed) and paper B's Monte Carlo cells (``CheckContext.cached``: the cell's name, key and the first
normal draws of a generator seeded like the cell).  ``tests/verify/test_reproducible_draws.py`` recomputes them and
compares: a change of any seed derivation, of the design's integers, or of the samplers shows up there.  Regenerate
(and commit) only when such a change is intended.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "fingerprints.json"


def _seed_key(d: dict) -> dict:
    from numerics._cache_keys import EXECUTION_KEYS, seed_part

    return seed_part({k: v for k, v in d.items() if k not in EXECUTION_KEYS})


def collect() -> dict[str, Any]:
    """Run the smoke checks with recording hooks; return ``{check id: [cell fingerprints]}``."""
    import numpy as np

    import verify.checks._paper_a_numerics as pa
    from verify.claim import all_claims
    from verify.context import CheckContext
    from verify.claim import run_check

    records: dict[str, list] = {}
    current = {"id": ""}
    real_sweep = pa.run_sweep
    real_cached = CheckContext.cached

    def sweep(func, cells, *a, **kw):
        res = real_sweep(func, cells, *a, **kw)
        for c in cells:
            rec = next(r for r in res if all(r.get(k) == v for k, v in c.items()))
            fp: dict[str, Any] = {"kind": func.__name__, "cell": _seed_key(c), "seed": int(rec["seed"])}
            if "sigma" in c:  # a computed design value, stated to 4 significant digits
                fp["sigma"] = float(f"{float(c['sigma']):.4g}")
            if func is pa.trial:
                X, Y = pa.model_for(c).sample(2, np.random.default_rng(int(rec["seed"])))
                fp["first_X"] = [round(float(v), 12) for v in np.ravel(X)[:3]]
                fp["first_Y"] = [round(float(v), 12) for v in np.ravel(Y)[:3]]
            records.setdefault(current["id"], []).append(fp)
        return res

    def cached(self, name, key, compute, version=""):
        k = _seed_key(dict(key))
        fp = {"kind": name, "key": k}
        seed = dict(key).get("seed")
        if isinstance(seed, (int, np.integer)):
            fp["first_normals"] = [round(float(v), 12) for v in np.random.default_rng(int(seed)).standard_normal(3)]
        records.setdefault(current["id"], []).append(fp)
        return real_cached(self, name, key, compute, version)

    pa.run_sweep = sweep
    CheckContext.cached = cached
    try:
        for spec in all_claims():
            if spec.id == "A1":
                continue
            current["id"] = spec.id
            ctx = CheckContext(profile="smoke", seed=0, cache_dir=None, n_jobs=1)  # no cache: every cell computed
            res = run_check(spec, ctx)
            if res.error:
                raise RuntimeError(f"{spec.id} raised:\n{res.error}")
            records.setdefault(spec.id, [])
            records[spec.id + ":seeds"] = list(res.seeds)
    finally:
        pa.run_sweep = real_sweep
        CheckContext.cached = real_cached
    return records


def main() -> int:
    sys.path.insert(0, str(HERE.parents[1]))
    OUT.write_text(json.dumps(collect(), indent=1, sort_keys=True) + "\n")
    print(f"written {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
