"""sim2 (Hermite-bulk diagnostic) table: each surrogate minus the true kernel, total and parts, paired.
Usage: python studies/crossover/table2.py [--seed 0]"""
import os as _os
HERE = _os.path.dirname(_os.path.abspath(__file__))
ROOT = _os.path.normpath(_os.path.join(HERE, "..", ".."))
OUT = _os.path.join(ROOT, ".cache", "crossover")  # the simulations' arrays (ignored by git)
import argparse, glob, math
import numpy as np
ap = argparse.ArgumentParser(); ap.add_argument("--seed", type=int, default=0); args = ap.parse_args()
def ms(x): return f"{x.mean():+.4f} ± {x.std(ddof=1) / math.sqrt(x.size):.4f}"
M = ("h0", "h1", "h2", "h3", "h5")
print("| c | s | p | trials | part | true - ridge | " + " | ".join(f"{m} - true" for m in M) + " |")
print("|---|---|---|---|---|---|" + "---|" * len(M))
rows = []
for f in glob.glob(_os.path.join(OUT, f"sim2_c*_seed{args.seed}.npz")):
    d = np.load(f); c, p, T = float(d["meta"][0]), int(d["meta"][1]), int(d["meta"][2])
    for j, s in enumerate(d["strengths"]):
        for part in ("total", "signal", "noise"):
            get = (lambda k: d[f"{k}_signal"][:, j] + d[f"{k}_noise"][:, j]) if part == "total" else (lambda k: d[f"{k}_{part}"][:, j])
            rr = d["ridge_signal"] + d["ridge_noise"] if part == "total" else d[f"ridge_{part}"]
            rows.append(((-c, s, p, part), f"| {c:.3g} | {s:g} | {p} | {T} | {part} | {ms(get('true') - rr)} | " + " | ".join(ms(get(m) - get("true")) for m in M) + " |"))
for _, r in sorted(rows): print(r)
