"""Print the simulated error rates of the sequential rule (docs/sequential.md's table).

    python docs/make_sequential_rates.py [--sequences 2000] [--last-round 4]

Each row: 2000 sequences of one kind of comparison with its claim on the boundary, judged after every round up to
16 replicates at levels alpha = 0.05 (verify.sequential.simulate_optional_stopping, seed 0).
"""

from __future__ import annotations

import argparse

from scipy import stats

from verify.sequential import simulate_optional_stopping

CASES = [("equivalence", None), ("equivalence", 9), ("direction", None), ("direction", 9), ("bound", None),
         ("consistency", None)]


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
