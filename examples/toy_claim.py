"""Adding a claim, end to end, on a toy: the first Marchenko-Pastur moment.

The claim ``T1``: the mean eigenvalue of ``Z^T Z / n`` (``Z`` is ``p x n`` standard Gaussian) equals
``theory.mp_moment(1, c) = c``, ``c = p / n``.  The steps are those of ``docs/architecture.md``:

1. the claim in words and its parts (``verify.claim.Claim``): design (sizes per profile), predict (``theory``),
   simulate (seeded from the design), judge (pure: the comparisons, built with the statistical constructors of
   ``verify.results.Comparison``), describe (notes and data),
3. ``register`` makes it a check; its run judges the comparisons once (``verify.verdicts.judged``) and
   ``verify.calibrate.summarise`` measures its error rates; the judge alone runs on synthetic measurements.

Run ``python examples/toy_claim.py``: it prints the verdict at seed 0, a 20-seed calibration row and the
judge's FAIL count on 500 synthetic measurements drawn under the truth.
"""

from __future__ import annotations

import numpy as np

import theory
from verify.calibrate import summarise
from verify.claim import Claim, register, run_check
from verify.context import CheckContext
from verify.results import Comparison
from verify.verdicts import judge

ASPECT_RATIOS = (0.5, 2.0)


def design(ctx: CheckContext) -> dict:
    n, trials = {"smoke": (32, 8), "quick": (128, 32), "paper": (512, 64)}[ctx.profile]
    return {"n": n, "trials": trials, "cs": ASPECT_RATIOS}


def predict(ctx: CheckContext, d: dict) -> dict:
    return {c: float(theory.mp_moment(1, c)) for c in d["cs"]}  # theory only


def simulate(ctx: CheckContext, d: dict) -> dict:
    out = {}
    for c in d["cs"]:
        rng = np.random.default_rng(ctx.seed_for("mp-mean", c))  # seeded from the design
        Z = rng.standard_normal((d["trials"], int(round(c * d["n"])), d["n"]))
        out[c] = np.einsum("tpn,tpn->t", Z, Z) / d["n"] ** 2  # per trial: tr(Z^T Z / n) / n
    return out


def judge_t1(d: dict, pred: dict, meas: dict) -> list[Comparison]:
    # an exact identity in expectation, measured with noise: a consistency test per aspect ratio
    return [Comparison.consistency(f"c={c}: mean eigenvalue", pred[c], float(np.mean(meas[c])),
                                   float(np.std(meas[c], ddof=1) / np.sqrt(len(meas[c]))), df=len(meas[c]) - 1,
                                   headline=c == d["cs"][0]) for c in d["cs"]]


def describe(d: dict, pred: dict, meas: dict, comps: list[Comparison]) -> tuple[str, dict]:
    return f"n = {d['n']}, {d['trials']} trials per aspect ratio.", {"predicted": {str(c): v for c, v in pred.items()}}


T1 = register(Claim(id="T1", paper="toy",
                    statement="The mean eigenvalue of Z^T Z / n is c = p / n (first Marchenko-Pastur moment)", design=design, predict=predict, simulate=simulate, judge=judge_t1, describe=describe))


def main() -> None:
    res = run_check(T1, CheckContext(profile="quick", seed=0, cache_dir=None))
    print(f"T1 at seed 0: {res.verdict.value}; " + "; ".join(
        f"{c.name}: {c.measured:.4f} +- {c.uncertainty:.4f} vs {c.predicted}" for c in res.comparisons))
    records = []
    for seed in range(20):
        r = run_check(T1, CheckContext(profile="quick", seed=seed, cache_dir=None))
        records.append({"id": "T1", "seed": seed, "verdict": r.verdict.value, "runtime_s": r.runtime_s,
                        "comparisons": [c.to_json() for c in r.comparisons]})
    row = summarise("T1", records)
    print(f"20 seeds: {row.counts}; headline SD/SE = {row.sd_se:.2f} (95% CI {row.sd_se_ci[0]:.2f}.."
          f"{row.sd_se_ci[1]:.2f}); mean z = {row.mean_z:+.2f}; flags: {row.flags or 'none'}")
    # the judge alone, on synthetic measurements under the truth (normal trials around c, SD of the real ones)
    rng = np.random.default_rng(1)
    d = design(CheckContext(profile="quick"))
    pred = predict(None, d)
    fails = sum(judge(judge_t1(d, pred, {c: pred[c] + 0.02 * rng.standard_normal(d["trials"]) for c in d["cs"]}))
                == "FAIL" for _ in range(500))
    print(f"judge on 500 synthetic measurements under the truth: {fails} FAIL")


if __name__ == "__main__":
    main()
