"""Step 2 table: deterministic equivalent (finite_rank.py, finite-rank tilt) against the step-1 simulation (sim.py, seed 0).
Usage: OMP_NUM_THREADS=1 python studies/crossover/compare.py
Columns: signal part of E_att - E_RR (true kernel; the finite-rank surrogate xsurinf; the DE), the noise part (true;
strong-alignment T2 at t = (1+s)/sqrt p with the finite-p equation, theory.strong_alignment_gap(..., p=p).t2), and the
total (true; DE signal + T2)."""
import os as _os
HERE = _os.path.dirname(_os.path.abspath(__file__))
ROOT = _os.path.normpath(_os.path.join(HERE, "..", ".."))
OUT = _os.path.join(ROOT, ".cache", "crossover")  # the simulations' arrays (ignored by git)
import glob, math, os, sys
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np
sys.path.insert(0, ROOT)
import importlib.util
import theory as pt  # the project's package
spec = importlib.util.spec_from_file_location("crossover_theory", _os.path.join(HERE, "finite_rank.py"))
ct = importlib.util.module_from_spec(spec); spec.loader.exec_module(ct)
finite_rank_gap = ct.finite_rank_gap
def ms(x): return f"{x.mean():+.4f} ± {x.std(ddof=1) / math.sqrt(x.size):.4f}"
print("| c | s | p | (1+s)^3/p | signal: true | signal: xsurinf | signal: DE | DE - true | noise: true | noise: T2 at (1+s)/sqrt p | total: true | total: DE + T2 | DE + T2 - true | DE rank-1 part only |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
files = glob.glob(_os.path.join(OUT, "sim_c*_seed0.npz"))
rows = []
for f in files:
    d = np.load(f); c, p = float(d["meta"][0]), int(d["meta"][1])
    for j, s in enumerate(d["strengths"]):
        tsig = d["true_signal"][:, j] - d["ridge_signal"]; tnoi = d["true_noise"][:, j] - d["ridge_noise"]
        xsig = d["xsurinf_signal"][:, j] - d["ridge_signal"]
        th = finite_rank_gap(c, float(s), p)
        lin = finite_rank_gap(c, float(s), p, linear=True)
        t2 = pt.strong_alignment_gap(c, "erf", 1.0, (1 + s) / math.sqrt(p), p=p).t2
        rows.append((-c, s, p, f"| {c:.3g} | {s:g} | {p} | {(1+s)**3/p:.3g} | {ms(tsig)} | {ms(xsig)} | {th['signal_gap']:+.4f} | "
                     f"{ms(th['signal_gap'] - tsig)} | {ms(tnoi)} | {t2:+.4f} | {ms(tsig + tnoi)} | {th['signal_gap'] + t2:+.4f} | "
                     f"{ms(th['signal_gap'] + t2 - tsig - tnoi)} | {lin['gap']:+.4f} |"))
for r in sorted(rows): print(r[3])
