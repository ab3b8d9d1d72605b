"""Print the simulated error rates of the sequential rule (docs/sequential.md's table).

    python docs/make_sequential_rates.py [--sequences 2000] [--last-round 4]

Each row: 2000 sequences of one kind of comparison with its claim on the boundary, judged after every round up to
16 replicates at levels alpha = 0.05 (simulate_optional_stopping below, seed 0).
"""

from __future__ import annotations

import argparse

from scipy import stats

import math
from typing import Any

import numpy as np

from verify.results import Comparison
from verify.sequential import pooled, replicates_after, spend
from verify.verdicts import KINDS, judged

CASES = [("equivalence", None), ("equivalence", 9), ("direction", None), ("direction", 9), ("bound", None),
         ("consistency", None)]


# ------------------------------------------------------------------------------------------ error rates, simulated
def _boundary_replicate(kind: str, rng: Any, t_df: int | None) -> Comparison:
    """One replicate's comparison with the claim on its boundary (the least favourable truth of its kind), SE 0.01:
    normal, or the mean of ``t_df + 1`` draws with its estimated SE (``t_df`` degrees of freedom)."""
    if t_df is None:
        noise, se, df = float(rng.standard_normal()) * 0.01, 0.01, None
    else:
        x = rng.standard_normal(t_df + 1) * 0.01 * math.sqrt(t_df + 1)
        noise, se, df = float(x.mean()), float(x.std(ddof=1)) / math.sqrt(t_df + 1), float(t_df)
    if kind == "equivalence":  # true |delta| = margin
        return Comparison.equivalence("e", 0.0, 0.03 + noise, se, 0.03, df=df)
    if kind == "direction":  # true delta = 0
        return Comparison.direction("d", "> 0", noise, se, +1, df=df)
    if kind == "bound":  # true excess = 0
        return Comparison.bound("b", "<= 0", noise, se, noise, df=df)
    return Comparison.consistency("c", 0.0, noise, se, df=df)


def simulate_optional_stopping(kind: str, *, t_df: int | None = None, n_sequences: int = 2000, last_round: int = 4,
                               alpha: float = 0.05, seed: int = 0) -> dict[str, int]:
    """Error counts of the sequential rule under optional stopping, simulated with the real pooling and judging.

    ``n_sequences`` sequences of one ``kind`` of comparison with the claim on its boundary are judged after every
    round up to ``last_round`` (``2^last_round`` replicates) at FAIL and PASS levels ``alpha`` (spent over the
    rounds).  Returns how many sequences reach ``"FAIL"`` at some look (the outcome of "continue until FAIL", the
    adversary of the false-FAIL rate), ``"PASS"`` (of "continue until PASS": a false PASS, for equivalence and
    direction claims on their boundary), and ``"naive FAIL"``: a FAIL when every look is judged at the fixed
    design's level ``alpha`` (what optional stopping inflates).  Each count over ``n_sequences`` estimates a rate.
    """
    rng = np.random.default_rng([seed, KINDS.index(kind), t_df or 0])
    counts = {"FAIL": 0, "PASS": 0, "naive FAIL": 0}
    for _ in range(n_sequences):
        reps: list = []
        seen: set[str] = set()
        for j in range(last_round + 1):
            while len(reps) < replicates_after(j):
                reps.append([_boundary_replicate(kind, rng, t_df)])
            rows = pooled(reps)
            seen.add(judged(rows, alpha * spend(j), alpha * spend(j)).verdict)
            if judged(rows, alpha, alpha).verdict == "FAIL":
                seen.add("naive FAIL")
        for k in counts:
            counts[k] += k in seen
    return counts


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sequences", type=int, default=2000)
    p.add_argument("--last-round", type=int, default=4)
    args = p.parse_args()
    n, alpha = args.sequences, 0.05

    def rate(k: int) -> str:
        lo, hi = stats.beta.ppf(0.025, k, n - k + 1) if k else 0.0, stats.beta.ppf(0.975, k + 1, n - k)
        return f"{k / n:.3f} [{lo:.3f}, {hi:.3f}]"

    print(f"| comparison | SE | false FAIL, sequential | false PASS, sequential | false FAIL, fixed level at "
          f"every look |\n|---|---|---|---|---|")
    for kind, df in CASES:
        c = simulate_optional_stopping(kind, t_df=df, n_sequences=n, last_round=args.last_round, alpha=alpha)
        passes = rate(c["PASS"]) if kind in ("equivalence", "direction") else "(passes unless violated)"
        print(f"| {kind} | {'normal' if df is None else f'Student t, {df} df per replicate'} | {rate(c['FAIL'])} | "
              f"{passes} | {rate(c['naive FAIL'])} |")


if __name__ == "__main__":
    main()
