"""Diagnostic beyond step 1: the token-space spikes plus the spike's modulation of the kernel's bulk.

Usage: OMP_NUM_THREADS=1 python studies/crossover/sim2.py --c 0.5 --p 256 --trials 64 [--strengths 2 4 8] [--seed 0]
Writes OUT/sim2_c{c:.4f}_p{p}_T{trials}_seed{seed}.npz.  Same draws as sim.py at the same (c, p,
trials, seed) (same seed_of and SeedSequence spawning), so 'true' and 'ridge' are identical to sim.py's.

Split the argument of the true kernel exactly: x_i^T W x_j / sqrt p = xi_ij + v_ij, with xi_ij = x_perp,i^T x_perp,j /
sqrt p (coordinates 2..p: independent of a = x_1, variance sigma2 = (p - 1)/p) and v_ij = (1 + s) a_i a_j / sqrt p
(the signal coordinate, through W = I + s e1 e1^T).  Conditionally on a, expand in Hermite polynomials of xi:
    f(xi + v) = sum_m  E f^(m)(G + v) sigma^m He_m(xi / sigma) / m!,   G ~ N(0, sigma2).
Surrogate 'hM' keeps the exact a-free kernel f(xi) and gives its first M Hermite components (m = 0..M) their
v-dependent coefficients:
    hM = f(xi) + sum_{m=0}^{M} [E f^(m)(G + v) - E f^(m)(G)] sigma^m He_m(xi/sigma) / m!
h0 = f(xi) + fbar(v): the a-free null kernel plus token-space 'spikes' (the function fbar(v) = erf(v / r), r =
sqrt(1 + 2 sigma2), of a_i a_j: step 1's surinf, but with the identity's own a_i a_j included in v).  h1 adds the
modulation of the linear bulk  [E f'(G + v) - E f'(G)] xi  (full rank, not a token spike).  'bulk1' = h1 without
the m = 0 term (modulation only, no spike).  All divided by sqrt p, diagonal removed.
"""
from __future__ import annotations
import os as _os
HERE = _os.path.dirname(_os.path.abspath(__file__))
ROOT = _os.path.normpath(_os.path.join(HERE, "..", ".."))
OUT = _os.path.join(ROOT, ".cache", "crossover")  # the simulations' arrays (ignored by git)
import argparse, math, os, sys, time
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np
import torch
torch.set_num_threads(1)
sys.path.insert(0, ROOT); sys.path.insert(0, HERE)
from numerics import label_posterior_mean, sample_signal_plus_noise  # noqa: E402
from numerics.rmt import gram  # noqa: E402
from sim import SNR, errors, seed_of  # noqa: E402

MMAX = 5
METHODS = ("true", "bulk1") + tuple(f"h{M}" for M in range(MMAX + 1))
C0 = 2 / math.sqrt(math.pi)


def erf_derivs(x: torch.Tensor, mmax: int) -> list[torch.Tensor]:
    """erf^(m)(x), m = 0..mmax: erf^(m) = C0 (-1)^(m-1) H_{m-1}(x) e^{-x^2} (physicists' Hermite)."""
    e = C0 * torch.exp(-x * x)
    H = [torch.ones_like(x), 2 * x]
    for k in range(2, mmax):
        H.append(2 * x * H[k - 1] - 2 * (k - 1) * H[k - 2])
    return [torch.special.erf(x)] + [(-1) ** (m - 1) * H[m - 1] * e for m in range(1, mmax + 1)]


def hermite_e(y: torch.Tensor, mmax: int) -> list[torch.Tensor]:
    He = [torch.ones_like(y), y]
    for k in range(2, mmax + 1):
        He.append(y * He[k - 1] - (k - 1) * He[k - 2])
    return He


def run(c, p, trials, strengths, base):
    n = max(1, int(round(p / c)))
    sigma2 = (p - 1) / p
    sg, r = math.sqrt(sigma2), math.sqrt(1 + 2 * sigma2)
    sp_ = math.sqrt(p)
    out = {f"{m}_{part}": np.empty((trials, len(strengths))) for m in METHODS for part in ("signal", "noise")}
    out["ridge_signal"], out["ridge_noise"] = np.empty(trials), np.empty(trials)
    d0 = [dv / r**i for i, dv in enumerate(erf_derivs(torch.zeros((), dtype=torch.float64), MMAX))]
    for k, child in enumerate(np.random.SeedSequence(seed_of(base, c, p)).spawn(trials)):
        X, _, mu = sample_signal_plus_noise(n, p, SNR, np.random.default_rng(child), labels="iid")
        m = torch.from_numpy(label_posterior_mean(X, mu)).unsqueeze(0)
        Xt = torch.from_numpy(X); a = Xt[0]
        aa = torch.outer(a, a)
        Xi = gram(Xt[1:].T.unsqueeze(0))[0] / sp_
        He = hermite_e(Xi / sg, MMAX)
        base_k = torch.special.erf(Xi)
        out["ridge_signal"][k], out["ridge_noise"][k] = errors(Xt, m)
        for j, s in enumerate(strengths):
            v = (1 + s) * aa / sp_
            d = [dv / r**i for i, dv in enumerate(erf_derivs(v / r, MMAX))]  # E f^(i)(G + v)
            terms = [(d[i] - d0[i]) * (sg**i / math.factorial(i)) * He[i] for i in range(MMAX + 1)]
            kers = {"true": torch.special.erf(Xi + v), "bulk1": base_k + terms[1]}
            acc = base_k
            for M in range(MMAX + 1):
                acc = acc + terms[M]
                kers[f"h{M}"] = acc
            for name in METHODS:
                K = kers[name] / sp_
                K.fill_diagonal_(0)
                out[f"{name}_signal"][k, j], out[f"{name}_noise"][k, j] = errors(Xt @ K, m)
    out["strengths"] = np.asarray(strengths)
    out["meta"] = np.array([c, p, trials, base, seed_of(base, c, p), n, sigma2])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--c", type=float, required=True); ap.add_argument("--p", type=int, required=True)
    ap.add_argument("--trials", type=int, required=True)
    ap.add_argument("--strengths", type=float, nargs="+", default=[2.0, 4.0, 8.0])
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(); t0 = time.time()
    out = run(a.c, a.p, a.trials, a.strengths, a.seed)
    os.makedirs(OUT, exist_ok=True)
    path = _os.path.join(OUT, f"sim2_c{a.c:.4f}_p{a.p}_T{a.trials}_seed{a.seed}.npz")
    np.savez(path, **out)
    for j, s in enumerate(a.strengths):
        E = {mm: out[f"{mm}_signal"][:, j] + out[f"{mm}_noise"][:, j] for mm in METHODS}
        msg = " ".join(f"{mm}:{np.mean(E[mm] - E['true']):+.4f}" for mm in METHODS[1:])
        print(f"c={a.c:.4f} p={a.p} s={s:g}: minus true: {msg}")
    print(f"wrote {path} in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
