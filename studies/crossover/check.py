"""Consistency checks of sim.py: (1) its 'true' E and ridge E equal numerics.strong_alignment_mc on the same seed;
(2) erf_coeffs against Gauss-Hermite quadrature of E f^(k)(G).  Usage: OMP_NUM_THREADS=1 python studies/crossover/check.py"""
import os as _os
HERE = _os.path.dirname(_os.path.abspath(__file__))
ROOT = _os.path.normpath(_os.path.join(HERE, "..", ".."))
OUT = _os.path.join(ROOT, ".cache", "crossover")  # the simulations' arrays (ignored by git)
import math, sys, os
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np, torch
torch.set_num_threads(1)
sys.path.insert(0, ROOT); sys.path.insert(0, HERE)
from numerics import MonteCarloSettings, strong_alignment_mc
import sim
c, p, T = 0.5, 64, 3
out = sim.run(c, p, T, [2.0, 8.0], 0)
seed = sim.seed_of(0, c, p)
for j, s in enumerate((2.0, 8.0)):
    ref = strong_alignment_mc("erf", c, s / math.sqrt(p), p, [0.0], MonteCarloSettings(T, seed, labels="iid"), snr=1.0)
    mine = out["true_signal"][:, j] + out["true_noise"][:, j]
    print("s", s, "max|true - strong_alignment_mc|", np.abs(mine - ref["attention"][:, 0]).max(),
          "ridge", np.abs(out["ridge_signal"] + out["ridge_noise"] - ref["ridge"][:, 0]).max())
# coefficients by quadrature: E f^(k)(G) = sigma^-k E[f(G) He_k(G/sigma)]
from numpy.polynomial.hermite_e import hermegauss, hermeval
from scipy.special import erf
x, w = hermegauss(120); w = w / w.sum()
sig2 = 1 + 3 / p; sg = math.sqrt(sig2)
quad = [sg**-k * np.sum(w * erf(sg * x) * hermeval(x, [0] * k + [1])) for k in range(6)]
print("ck closed form", np.round(sim.erf_coeffs(sig2), 6)); print("ck quadrature ", np.round(quad, 6))
