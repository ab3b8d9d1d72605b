"""A3 at paper scale with forced sequential rounds: the verdict and the pooled deviation at every round.

``python -m verify --profile paper --only A3 --rounds 2`` stops at round 0 when A3 is decided there (a consistency
claim PASSes unless rejected), so it never adds data to a PASS.  This script runs the replicates that two rounds
hold (``verify.sequential.replicates_after(2)`` = 4: seeds ``replicate_seed(seed, r)``, r = 0..3) whatever the
verdict, pools them as ``--rounds`` does (:func:`verify.sequential.pooled`) and judges each round at its sequential
levels (:func:`verify.sequential.judge_look`).  Usage, from the repository root (about 6 min per replicate on 2 cores)::

    python studies/paper_a_diagnosis/stress_a3.py --seed 0 --rounds 2 [--cache-dir .cache/verify/paper]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    from verify.budget import replicate_context
    from verify.context import CheckContext
    from verify.claim import run_check
    from verify.claim import select
    from verify.results import with_key
    from verify.sequential import judge_look, pooled, replicates_after

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--cache-dir", type=Path, default=ROOT / ".cache" / "verify" / "paper")
    p.add_argument("--out", type=Path, default=None, help="JSON lines, one per round")
    args = p.parse_args(argv)
    spec = select(["A3"])[0]
    base = CheckContext(profile="paper", seed=args.seed, cache_dir=args.cache_dir)
    results, lines = [], []
    for j in range(args.rounds + 1):
        while len(results) < replicates_after(j):
            r = len(results)
            res = run_check(spec, replicate_context(base, r))
            results.append(res)
            head = with_key(res.comparisons, group="all", quantity="finite-M pooled")[0]
            print(f"replicate {r} (seed {res.seeds}): {res.verdict.value}, pooled deviation {head.measured:+.4f} "
                  f"+- {head.uncertainty:.4f}, {res.runtime_s:.0f} s", flush=True)
        judgement = judge_look(pooled([r.comparisons for r in results]), j)
        head = with_key(judgement.comparisons, group="all", quantity="finite-M pooled")[0]
        n_fail = sum(c.outcome == "FAIL" for c in judgement.comparisons)
        worst = min((c for c in judgement.comparisons if c.p_fail is not None), key=lambda c: c.p_fail)
        row = dict(round=j, replicates=len(results), verdict=judgement.verdict, deviation=head.measured,
                   se=head.uncertainty, z=head.measured / head.uncertainty, p_fail=head.p_fail,
                   n_fail=n_fail, n=len(judgement.comparisons), worst=dict(worst.key), worst_p_fail=worst.p_fail)
        lines.append(row)
        print(f"round {j} ({len(results)} replicates): {judgement.verdict}, pooled deviation {head.measured:+.4f} "
              f"+- {head.uncertainty:.4f} (z {row['z']:+.2f}), {n_fail}/{row['n']} rows FAIL", flush=True)
        if args.out:
            with open(args.out, "a") as fh:
                fh.write(json.dumps(row, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
