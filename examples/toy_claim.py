"""Adding a claim, end to end, on a toy: the first Marchenko-Pastur moment.

The claim ``T1``: the mean eigenvalue of ``Z^T Z / n`` (``Z`` is ``p x n`` standard Gaussian) equals
``theory.mp_moment(1, c) = c``, ``c = p / n``.  The steps are those of ``docs/architecture.md``:

1. the claim in words (``verify.claims.CLAIMS``),
2. a check function: design (sizes), prediction (``theory``), simulation (seeded from the design), and
   comparisons built with the statistical constructors of ``verify.registry.Comparison``,
3. the registry judges it (``verify.verdicts.judge``); ``verify.calibrate.summarise`` measures its error rates.

Run ``python examples/toy_claim.py``: it prints the verdict at seed 0 and a 20-seed calibration row.
"""

from __future__ import annotations

import numpy as np

import theory
from verify.calibrate import summarise
from verify.claims import CLAIMS
from verify.catalog import check_spec
from verify.registry import CheckContext, Comparison, Outcome, check, run_check

CLAIMS["T1"] = ("toy", "The mean eigenvalue of Z^T Z / n is c = p / n (first Marchenko-Pastur moment)")


@check("T1")
def check_t1(ctx: CheckContext) -> Outcome:
    # design: sizes per profile, one aspect ratio per comparison
    n, trials = {"smoke": (32, 8), "quick": (128, 32), "paper": (512, 64)}[ctx.profile]
    comps = []
    for c in (0.5, 2.0):
        predicted = float(theory.mp_moment(1, c))  # prediction: theory only
        p = int(round(c * n))
        rng = np.random.default_rng(ctx.seed_for("mp-mean", c))  # simulation: seeded from the design
        means = []
        for _ in range(trials):
            Z = rng.standard_normal((p, n))
            means.append(np.trace(Z.T @ Z / n) / n)
        m, se = float(np.mean(means)), float(np.std(means, ddof=1) / np.sqrt(trials))
        # an exact identity in expectation, measured with noise: a consistency test
        comps.append(Comparison.consistency(f"c={c}: mean eigenvalue", predicted, m, se, df=trials - 1,
                                            headline=c == 0.5))
    return Outcome(comparisons=comps, notes=f"n = {n}, {trials} trials per aspect ratio.")


def main() -> None:
    spec = check_spec("T1")
    res = run_check(spec, CheckContext(profile="quick", seed=0, cache_dir=None))
    print(f"T1 at seed 0: {res.verdict.value}; " + "; ".join(
        f"{c.name}: {c.measured:.4f} +- {c.uncertainty:.4f} vs {c.predicted}" for c in res.comparisons))
    records = []
    for seed in range(20):
        r = run_check(spec, CheckContext(profile="quick", seed=seed, cache_dir=None))
        records.append({"id": "T1", "seed": seed, "verdict": r.verdict.value, "runtime_s": r.runtime_s,
                        "comparisons": [c.to_json() for c in r.comparisons]})
    row = summarise("T1", records)
    print(f"20 seeds: {row.counts}; headline SD/SE = {row.sd_se:.2f} (95% CI {row.sd_se_ci[0]:.2f}.."
          f"{row.sd_se_ci[1]:.2f}); mean z = {row.mean_z:+.2f}; flags: {row.flags or 'none'}")


if __name__ == "__main__":
    main()
