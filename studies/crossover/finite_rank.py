"""Step 2: deterministic equivalent of attention's interpolation error (gamma -> 0, c < 1) for the linearised null
kernel tilted by a finite-rank token-space kernel (the surrogate 'xsurinf' of sim.py).

Model of the kernel (x^T W x / sqrt p = xi + v, v = (1 + s) a a^T / sqrt p, see sim.py):
    K = K0 + F,   K0 = a1 (G - I) + s_f Xi / sqrt p + d0 I      (linearised a-free null kernel, G = X_perp^T X_perp / p)
    F_ij = phi(a_i a_j) / sqrt p,  phi(u) = E f(G + (1 + s) u / sqrt p) - E f(G)   (= erf(tau u), tau = (1+s)/(sqrt p r))
Mercer expansion of phi on the law of a (a = y + z, snr = 1: the mixture N(+-1, 1)):
    phi(a a') = sum_k lam_k w_k(a) w_k(a'),  E[w_k w_l] = delta_kl   =>   F = W Dm W^T / n,  Dm = diag(lam) n / sqrt p.
The tokens enter only through the vectors a, w_k(a), g = tanh(a), independent of (G, Xi).  With X^T X = p G + a a^T,
    Phi^T Phi / n = c K0 G K0 + U C U^T / n,     U = [W, K0 G W, K0 a],
    C = [[c Dm N Dm + d d^T, c Dm, d], [c Dm, 0, 0], [d^T, 0, 1]],   N = W^T G W / n -> I,  d = Dm W^T a / n -> Dm E[w a],
and Woodbury: g^T Q g / n = g^T Q0 g / n - b^T C (I + Omega C)^{-1} b, b = U^T Q0 g / n, Omega = U^T Q0 U / n, whose
quadratic forms tend to (normalised trace) x (Gram entry over the law of a): Omega_ij -> T[s_i, s_j] E[h_i h_j],
b_i -> T[s_i, 0] E[h_i g], with T the 3x3 null traces of theory.structured (blocks I, K0, K0 G; s = (0, 2, 1) for the
blocks of U).  E_signal = -gamma^2 d/dgamma (g^T Q g / n) (central difference in gamma), then gamma -> 0.
The label-noise part of a finite-rank tilt equals the null's (each token's leverage moves by O(1/n)):
E_noise = E[v] E_null(gamma) -> E[v] (1 - c), the same as ridge's, so the finite-rank gap is the signal part only.
Ridge: E_signal^RR = (1 - c) (E g^2 - E[a g]^2 / E[a^2]) at gamma = 0.

Functions: finite_rank_gap(c, s, p, ...) -> dict with the attention signal part, ridge's, and the gap; `linear=True`
keeps only the linear part of phi (F = a1 (1 + s) a a^T / p): the linearised theory (checked against
theory.AttentionModel in main()).  Usage: python studies/crossover/finite_rank.py   (prints the checks and the table).
"""
from __future__ import annotations
import os as _os
HERE = _os.path.dirname(_os.path.abspath(__file__))
ROOT = _os.path.normpath(_os.path.join(HERE, "..", ".."))
OUT = _os.path.join(ROOT, ".cache", "crossover")  # the simulations' arrays (ignored by git)

import math
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np
from scipy.special import erf

sys.path.insert(0, ROOT)


def a_law(M: int = 80, snr: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of the law of a = y sqrt(snr) + z (mixture of N(+-sqrt snr, 1)), Gauss-Hermite per component."""
    x, w = np.polynomial.hermite_e.hermegauss(M)
    w = w / w.sum()
    m = math.sqrt(snr)
    return np.concatenate([x + m, x - m]), np.concatenate([w, w]) / 2


def mercer(phi, x: np.ndarray, w: np.ndarray, rtol: float = 1e-12):
    """Eigen-expansion of the kernel phi(a a') on the discrete law (x, w): eigenvalues lam (decreasing |lam|) and the
    eigenfunctions' values at the nodes (orthonormal in L2(w))."""
    sw = np.sqrt(w)
    A = sw[:, None] * phi(np.outer(x, x)) * sw[None, :]
    lam, E = np.linalg.eigh(A)
    order = np.argsort(-np.abs(lam))
    lam, E = lam[order], E[:, order]
    keep = np.abs(lam) > rtol * np.abs(lam[0])
    return lam[keep], E[:, keep] / sw[:, None]


def null_traces(gammas: np.ndarray, c: float, a1: float, sf2: float, d0: float) -> np.ndarray:
    from theory import AttentionModel

    model = AttentionModel(c, {"a1": a1, "sf2": sf2, "d0": d0}, snr=0.0)
    sol = model.solve(np.asarray(gammas, float), check_quadrature=False)
    return sol.traces, sol.null_error


def gQg(T: np.ndarray, c: float, Dm: np.ndarray, Gww: np.ndarray, Gwa: np.ndarray, Gwg: np.ndarray,
        Gaa: float, Gag: float, Ggg: float) -> float:
    """Deterministic equivalent of g^T Q g / n at one gamma (T: 3x3 null traces)."""
    r = Dm.shape[0]
    d = Dm @ Gwa
    N = Gww
    k = 2 * r + 1
    C = np.zeros((k, k))
    C[:r, :r] = c * Dm @ N @ Dm + np.outer(d, d)
    C[:r, r:2 * r] = c * Dm
    C[r:2 * r, :r] = c * Dm
    C[:r, 2 * r] = d
    C[2 * r, :r] = d
    C[2 * r, 2 * r] = 1.0
    # blocks of U: W (trace index 0: I), K0 G W (index 2: K0 G), K0 a (index 1: K0)
    Om = np.zeros((k, k))
    Om[:r, :r] = T[0, 0] * Gww
    Om[:r, r:2 * r] = T[0, 2] * Gww
    Om[r:2 * r, :r] = T[2, 0] * Gww
    Om[r:2 * r, r:2 * r] = T[2, 2] * Gww
    Om[:r, 2 * r] = T[0, 1] * Gwa
    Om[2 * r, :r] = T[1, 0] * Gwa
    Om[r:2 * r, 2 * r] = T[2, 1] * Gwa
    Om[2 * r, r:2 * r] = T[1, 2] * Gwa
    Om[2 * r, 2 * r] = T[1, 1] * Gaa
    b = np.concatenate([T[0, 0] * Gwg, T[2, 0] * Gwg, [T[1, 0] * Gag]])
    return T[0, 0] * Ggg - b @ C @ np.linalg.solve(np.eye(k) + Om @ C, b)


def finite_rank_gap(c: float, s: float, p: int, *, gamma: float = 1e-6, eps: float = 1e-4, M: int = 80,
                    linear: bool = False, diag_correction: bool = False, snr: float = 1.0) -> dict:
    from theory import hermite_moments

    hm = hermite_moments("erf")
    a1, sf2 = float(hm.a1), float(hm.sf2)
    x, w = a_law(M, snr)
    g = np.tanh(math.sqrt(snr) * x)
    sigma2 = (p - 1) / p
    r = math.sqrt(1 + 2 * sigma2)
    tau = (1 + s) / (math.sqrt(p) * r)
    if linear:
        lam = np.array([a1 * (1 + s) / math.sqrt(p) * float(w @ x**2)])  # phi(u) = a1 (1+s) u / sqrt p on w = a/||a||
        Wn = (x / math.sqrt(float(w @ x**2)))[:, None]
    else:
        lam, Wn = mercer(lambda u: erf(tau * u), x, w)
    n_over_sqrtp = math.sqrt(p) / c
    Dm = np.diag(lam * n_over_sqrtp)
    Gww = Wn.T @ (w[:, None] * Wn)
    Gwa, Gwg = Wn.T @ (w * x), Wn.T @ (w * g)
    Gaa, Gag, Ggg = float(w @ x**2), float(w @ (x * g)), float(w @ g**2)
    d0 = -float(w @ erf(tau * x**2)) / math.sqrt(p) if diag_correction and not linear else 0.0
    gams = np.array([gamma * (1 - eps), gamma * (1 + eps)])
    Ts, E0 = null_traces(gams, c, a1, sf2, d0)
    h = [gQg(Ts[i], c, Dm, Gww, Gwa, Gwg, Gaa, Gag, Ggg) for i in range(2)]
    Esig = -gamma**2 * (h[1] - h[0]) / (gams[1] - gams[0])
    Ev = 1 - Ggg
    Enoise = Ev * float(E0.mean())
    rr_sig = (1 - c) * (Ggg - Gag**2 / Gaa)
    return {"att_signal": Esig, "att_noise": Enoise, "att": Esig + Enoise, "rr_signal": rr_sig,
            "rr": (1 - c) * (1 - Gag**2 / Gaa), "gap": Esig + Enoise - (1 - c) * (1 - Gag**2 / Gaa),
            "signal_gap": Esig - rr_sig, "rank": lam.size, "lam": lam}


def main() -> None:
    from theory import AttentionModel, strong_alignment_gap

    print("check 1 (linear part only = linearised theory, AttentionModel at gamma):")
    for c in (0.5, 1 / 3):
        for s in (2.0, 8.0):
            for gam in (1e-4, 1e-6):
                mine = finite_rank_gap(c, s, 10**9, gamma=gam, linear=True)  # p huge: sigma2 -> 1
                m = AttentionModel(c, "erf", 1.0, spike=(s, "aligned"))
                ref = float(m.error(gam)) - float(m.ridge_error(gam))
                print(f"  c={c:.3g} s={s:g} gamma={gam:g}: finite-rank {mine['gap']:+.6f}  AttentionModel {ref:+.6f}")
    print("check 2 (gamma -> 0 and quadrature):")
    for gam, M in ((1e-5, 80), (1e-6, 80), (1e-7, 80), (1e-6, 120)):
        out = finite_rank_gap(0.5, 4.0, 256, gamma=gam, M=M)
        print(f"  c=0.5 s=4 p=256 gamma={gam:g} M={M}: signal gap {out['signal_gap']:+.6f} rank {out['rank']}")


if __name__ == "__main__":
    main()
