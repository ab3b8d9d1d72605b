"""Step 1: true attention kernel vs Taylor surrogates, paired on the same draws, gamma = 0, erf, snr = 1.

Usage: OMP_NUM_THREADS=1 python studies/crossover/sim.py --c 0.5 --p 256 --trials 64 [--strengths 2 4 8] [--seed 0]
Writes OUT/sim_c{c:.4f}_p{p}_T{trials}_seed{seed}.npz.

Per draw X (numerics.sample_signal_plus_noise, labels iid, exactly as numerics.strong_alignment_mc: trial k draws from
SeedSequence(seed_cfg).spawn(T)[k]) and per strength s (the same X for every s), the label-averaged E at gamma = 0
(numerics.strong_alignment.smoother_parts: signal + noise) for the features Phi = X K with
  true   : K = f((X^T X + s a a^T)/sqrt p)/sqrt p
  null   : K = f(X^T X/sqrt p)/sqrt p                         (s = 0)
  surK   : K = f(Z)/sqrt p + sum_{k<=K} c_k (s a_i a_j)^k/(k! p^{(k+1)/2}),  K = 1, 3, 5
  surinf : K = f(Z)/sqrt p + fbar(s a_i a_j / sqrt p)/sqrt p, fbar(u) = E f(G + u) - E f(G)  (the K -> infinity sum)
  ridge  : Phi = X
  xsurK  : K = f(xi)/sqrt p + sum_{k<=K} cx_k ((1 + s) a_i a_j)^k/(k! p^{(k+1)/2}),  K = 1, 3, 5
  xsurinf: K = f(xi)/sqrt p + fbar_x((1 + s) a_i a_j / sqrt p)/sqrt p
           (the same expansion around the a-free argument xi_ij = x_perp,i^T x_perp,j / sqrt p, coordinates 2..p,
            variance sigma2_x = (p - 1)/p; the signal coordinate's own a_i a_j enters the spike: x^T W x = xi + (1+s) a a)
with Z = X^T X / sqrt p, c_k = E f^(k)(G), G ~ N(0, sigma2), sigma2 = E z_ij^2 = 1 + ((1 + snr)^2 - 1)/p
(the off-diagonal variance of the code's kernel argument), diagonal removed everywhere.
For erf: E f(G + u) = erf(u / sqrt(1 + 2 sigma2)), so c_k = d^k/du^k erf(u/sqrt(1+2 sigma2)) at 0.
"""
from __future__ import annotations
import os as _os
HERE = _os.path.dirname(_os.path.abspath(__file__))
ROOT = _os.path.normpath(_os.path.join(HERE, "..", ".."))
OUT = _os.path.join(ROOT, ".cache", "crossover")  # the simulations' arrays (ignored by git)

import argparse
import hashlib
import math
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np
import torch

torch.set_num_threads(1)
sys.path.insert(0, ROOT)
from numerics import label_posterior_mean, sample_signal_plus_noise  # noqa: E402
from numerics.rmt import gram  # noqa: E402
from numerics.strong_alignment import smoother_parts  # noqa: E402

SNR = 1.0
METHODS = ("true", "null", "sur1", "sur3", "sur5", "surinf", "xsur1", "xsur3", "xsur5", "xsurinf")


def seed_of(base: int, c: float, p: int) -> int:
    text = f"crossover|{base}|c={c:.6g}|{p}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")


def surrogates(base: torch.Tensor, u: torch.Tensor, coeffs: np.ndarray, r: float, sp_: float,
               prefix: str) -> dict[str, torch.Tensor]:
    """The null kernel ``base`` plus the Taylor terms ``coeffs[k] u^k / (k! sqrt p)`` summed to orders 1, 3, 5
    (``prefix1``, ``prefix3``, ``prefix5``) and in full (``prefixinf``: ``erf(u / r) / sqrt p``), diagonal removed."""
    out, acc = {}, base.clone()
    for kk in range(1, 6):
        if coeffs[kk] != 0.0:
            term = coeffs[kk] * u**kk / math.factorial(kk) / sp_
            term.fill_diagonal_(0)
            acc = acc + term
        if kk in (1, 3, 5):
            out[f"{prefix}{kk}"] = acc
    tinf = torch.special.erf(u / r) / sp_
    tinf.fill_diagonal_(0)
    out[f"{prefix}inf"] = base + tinf
    return out


def erf_coeffs(sigma2: float, kmax: int = 5) -> np.ndarray:
    """c_k = E f^(k)(G), G ~ N(0, sigma2), f = erf: derivatives at 0 of erf(u / r), r = sqrt(1 + 2 sigma2)."""
    r = math.sqrt(1 + 2 * sigma2)
    # d^k/dx^k erf(x) at 0 = (2/sqrt pi) * d^{k-1}/dx^{k-1} e^{-x^2} at 0 = (2/sqrt pi) (-1)^{k-1} He*_{k-1}(0)
    # with physicists' Hermite H_{k-1}(0): d^m e^{-x^2} = (-1)^m H_m(x) e^{-x^2}
    out = np.zeros(kmax + 1)
    for k in range(1, kmax + 1):
        m = k - 1
        Hm0 = 0.0 if m % 2 else ((-1) ** (m // 2)) * math.factorial(m) / math.factorial(m // 2)
        out[k] = (2 / math.sqrt(math.pi)) * ((-1) ** m) * Hm0 / r**k
    return out


def errors(phi: torch.Tensor, m: torch.Tensor) -> tuple[float, float]:
    sig, noi, _, _ = smoother_parts(phi.unsqueeze(0), m, torch.zeros(1, dtype=phi.dtype))
    return float(sig[0, 0]), float(noi[0, 0])


def run(c: float, p: int, trials: int, strengths: list[float], base: int) -> dict[str, np.ndarray]:
    n = max(1, int(round(p / c)))
    sigma2 = 1 + ((1 + SNR) ** 2 - 1) / p
    ck = erf_coeffs(sigma2)
    r = math.sqrt(1 + 2 * sigma2)
    sigma2x = (p - 1) / p
    ckx, rx = erf_coeffs(sigma2x), math.sqrt(1 + 2 * sigma2x)
    sp_ = math.sqrt(p)
    S = len(strengths)
    out = {f"{mth}_{part}": np.empty((trials, S)) for mth in METHODS for part in ("signal", "noise")}
    out["ridge_signal"], out["ridge_noise"] = np.empty(trials), np.empty(trials)
    seed = seed_of(base, c, p)
    for k, child in enumerate(np.random.SeedSequence(seed).spawn(trials)):
        X, _, mu = sample_signal_plus_noise(n, p, SNR, np.random.default_rng(child), labels="iid")
        m = torch.from_numpy(label_posterior_mean(X, mu)).unsqueeze(0)
        Xt = torch.from_numpy(X)
        a = Xt[0]
        G0 = gram(Xt.T.unsqueeze(0))[0]  # X^T X
        Z = G0 / sp_
        Knull = torch.special.erf(Z) / sp_
        Knull.fill_diagonal_(0)
        out["ridge_signal"][k], out["ridge_noise"][k] = errors(Xt, m)
        aa = torch.outer(a, a)
        Kxi = torch.special.erf(gram(Xt[1:].T.unsqueeze(0))[0] / sp_) / sp_
        Kxi.fill_diagonal_(0)
        for j, s in enumerate(strengths):
            u = s * aa / sp_  # the spike's shift of the argument
            kers = {"null": Knull}
            Kt = torch.special.erf(Z + u) / sp_
            Kt.fill_diagonal_(0)
            kers["true"] = Kt
            kers.update(surrogates(Knull, u, ck, r, sp_, "sur"))
            kers.update(surrogates(Kxi, (1 + s) * aa / sp_, ckx, rx, sp_, "xsur"))
            for mth in METHODS:
                out[f"{mth}_signal"][k, j], out[f"{mth}_noise"][k, j] = errors(Xt @ kers[mth], m)
    out["strengths"] = np.asarray(strengths)
    out["meta"] = np.array([c, p, trials, base, seed, n, sigma2])
    out["ck"], out["ckx"] = ck, ckx
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--c", type=float, required=True)
    ap.add_argument("--p", type=int, required=True)
    ap.add_argument("--trials", type=int, required=True)
    ap.add_argument("--strengths", type=float, nargs="+", default=[2.0, 4.0, 8.0])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.time()
    out = run(args.c, args.p, args.trials, args.strengths, args.seed)
    os.makedirs(OUT, exist_ok=True)
    path = _os.path.join(OUT, f"sim_c{args.c:.4f}_p{args.p}_T{args.trials}_seed{args.seed}.npz")
    np.savez(path, **out)
    rr = out["ridge_signal"] + out["ridge_noise"]
    for j, s in enumerate(args.strengths):
        tr = out["true_signal"][:, j] + out["true_noise"][:, j] - rr
        print(f"c={args.c:.4f} p={args.p} s={s:g}: true gap {tr.mean():+.4f} ± {tr.std(ddof=1)/math.sqrt(args.trials):.4f}")
    print(f"wrote {path} in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
