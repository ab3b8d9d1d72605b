"""Noise (leverage) part of E_att - E_RR: simulation (sim.py, seed 0) against theory.strong_alignment_gap(...).t2 in
three conventions.  Usage: OMP_NUM_THREADS=1 python studies/crossover/t2_conventions.py"""
import os as _os
HERE = _os.path.dirname(_os.path.abspath(__file__))
ROOT = _os.path.normpath(_os.path.join(HERE, "..", ".."))
OUT = _os.path.join(ROOT, ".cache", "crossover")  # the simulations' arrays (ignored by git)
import glob, math, sys, warnings
warnings.filterwarnings("ignore")
import numpy as np
sys.path.insert(0, ROOT)
import theory
print("| c | s | p | noise: true | T2((1+s)/sqrt p, p) | T2((1+s)/sqrt p, limit eq.) | T2(s/sqrt p, p) |")
print("|---|---|---|---|---|---|---|")
rows = []
for f in glob.glob(_os.path.join(OUT, "sim_c*_seed0.npz")):
    d = np.load(f); c, p = float(d["meta"][0]), int(d["meta"][1])
    for j, s in enumerate(d["strengths"]):
        x = d["true_noise"][:, j] - d["ridge_noise"]
        t2 = lambda t, **k: theory.strong_alignment_gap(c, "erf", 1.0, t, **k).t2
        rows.append(((-c, s, p), f"| {c:.3g} | {s:g} | {p} | {x.mean():+.4f} ± {x.std(ddof=1)/math.sqrt(x.size):.4f} | "
                     f"{t2((1+s)/math.sqrt(p), p=p):+.4f} | {t2((1+s)/math.sqrt(p)):+.4f} | {t2(s/math.sqrt(p), p=p):+.4f} |"))
for _, r in sorted(rows): print(r)
