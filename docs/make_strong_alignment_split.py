"""Where attention's win over ridge comes from under strong alignment (docs/strong_alignment.md, "Mechanism").

Usage (from the repository root)::

    python docs/make_strong_alignment_split.py [--seed 0] [--figure docs/figures/strong_alignment_leverage.png]

Setting: ``X = mu y^T + Z`` (``mu = sqrt(snr) e_1``), aligned spikes ``w_K = w_Q = sqrt(t sqrt p) e_1``, diagonal
removed, ``c = p / n < 1``, the interpolation limit ``gamma -> 0``.  There the error is the in-sample residual of the
labels on the ``p``-dimensional column space of the features (``Phi^T``: attention ``K X^T``, ridge ``X^T``):
``E(0) = y^T (I - P) y / n``.  Given ``a = X[0]`` (the labelled coordinate) and the other rows of ``X``, ``P`` is
fixed and the labels are independent with ``E[y_i | a_i] = g(a_i) = tanh(sqrt(snr) a_i)`` and variance
``v(a_i) = 1 - g(a_i)^2``, so, exactly,

    E[E(0) | a, X_perp] = T1 + T2,   T1 = g^T (I - P) g / n,   T2 = sum_i (1 - P_ii) v(a_i) / n.

T1 is the part of the Bayes predictor the features miss, T2 the label noise left after fitting, weighted by one
minus each token's leverage.  The script measures both for attention and ridge on the same draws (the toolkit's
own sampler and attention features), the leverage profile against ``|a|``, and the theory of the leverage
(:func:`theory.strong_alignment_leverage`, at ``t_eff = t + 1/sqrt p``, :func:`effective_t`), also against a
simulation of the exact model its equation describes (:func:`dyson_model_t2`).  It prints markdown tables; the
figure shows the leverage profile.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (activation, c, t, p, trials); c < 1 throughout (at c >= 1, P = I and E(0) = 0 for both)
GRID = (
    [("erf", 0.5, t, p, tr) for t in (0.18, 0.35, 0.5, 1.0, 2.0) for p, tr in ((256, 16), (512, 8), (1024, 4))]
    + [("tanh", 0.5, 0.5, 512, 8), ("gelu", 0.5, 0.5, 512, 8), ("erf", 1 / 3, 0.5, 512, 8)]
)
SNR = 1.0
BINS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.5)
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def effective_t(t: float, p: int) -> float:
    """The spike's coefficient in the kernel's argument: ``x_i^T W x_j / sqrt p = g_ij + (t + 1/sqrt p) a_i a_j``."""
    return t + 1 / np.sqrt(p)


def split(features: np.ndarray, y: np.ndarray, a: np.ndarray, snr: float) -> tuple[float, float, float, np.ndarray]:
    """``E(0)``, ``T1``, ``T2`` and the leverages of one draw; ``features`` is ``p x n`` (``Phi``)."""
    basis, _ = np.linalg.qr(features.T)  # n x p, orthonormal basis of the row space of Phi
    leverage = (basis**2).sum(axis=1)
    g = np.tanh(np.sqrt(snr) * a)
    n = y.size

    def residual(u: np.ndarray) -> float:
        r = u - basis @ (basis.T @ u)
        return float(r @ r / n)

    return residual(y), residual(g), float(((1 - leverage) * (1 - g * g)).sum() / n), leverage


def measure(activation: str, c: float, t: float, p: int, trials: int, seed: int) -> dict:
    """Paired attention / ridge split over ``trials`` draws of one setting."""
    from numerics import (attention_features, interpolation_error_label_average, label_posterior_mean,
                          sample_signal_plus_noise)

    n = int(round(p / c))
    w = np.zeros(p)
    w[0] = np.sqrt(t * np.sqrt(p))
    rows, a_all, lev_all = [], [], []
    for trial in range(trials):
        rng = np.random.default_rng([seed, p, n, int(round(1000 * t)), sum(map(ord, activation)), trial])
        X, y, mu = sample_signal_plus_noise(n, p, SNR, rng, labels="iid")
        a = X[0]
        features = attention_features(X, activation, w, w)
        att = split(features, y, a, SNR)
        rr = split(X, y, a, SNR)
        # the toolkit's label average at gamma = 0 is T1 + T2 (same identity, computed from the eigenpairs)
        mean = label_posterior_mean(X, mu)
        for phi, parts in ((features, att), (X, rr)):
            assert abs(interpolation_error_label_average(phi, [0.0], mean)[0] - parts[1] - parts[2]) < 1e-8
        rows.append([att[0], att[1], att[2], rr[0], rr[1], rr[2]])
        a_all.append(a)
        lev_all.append(att[3])
    r = np.array(rows)
    diff = np.stack([r[:, 0] - r[:, 3], r[:, 1] - r[:, 4], r[:, 2] - r[:, 5],
                     r[:, 1] + r[:, 2] - r[:, 4] - r[:, 5]], axis=1)
    return {"mean": r.mean(0), "diff": diff.mean(0), "diff_se": diff.std(0, ddof=1) / np.sqrt(trials),
            "a": np.concatenate(a_all), "leverage": np.concatenate(lev_all)}


def theory_t2(activation: str, c: float, t: float, nodes: int = 40) -> float:
    """``T2`` of :func:`theory.strong_alignment_leverage` (the limit at ``t``)."""
    from theory import strong_alignment_leverage

    return strong_alignment_leverage(c, activation, SNR, t, nodes=nodes).t2


def dyson_model_t2(c: float, t: float, n: int, trials: int, seed: int) -> tuple[float, float, np.ndarray, np.ndarray]:
    """T2 (mean, SE) and the pooled ``(a, leverage)`` of the model the Dyson equation describes, erf.

    ``K = h1(t a a') o (Xi Xi^T / p) + r(t a a') o W / sqrt p`` (zero diagonal, ``W`` symmetric Gaussian), ``F = K Xi``,
    ``a`` independent of ``Xi``: the kernel's slope and remainder parts without its mean part.
    """
    p = int(round(c * n))
    rng = np.random.default_rng([seed, n, p, int(round(1000 * t)), 2])
    out, a_all, lev_all = [], [], []
    for _ in range(trials):
        a = rng.choice([-1.0, 1.0], n) * np.sqrt(SNR) + rng.standard_normal(n)
        xi = rng.standard_normal((n, p))
        _, h1, rest = _hermite_parts("erf", t * np.outer(a, a))
        noise = rng.standard_normal((n, n))
        K = h1 * (xi @ xi.T / p) + rest * (noise + noise.T) / np.sqrt(2 * p)
        np.fill_diagonal(K, 0.0)
        basis, _ = np.linalg.qr(K @ xi)
        lev = (basis**2).sum(axis=1)
        v = 1 - np.tanh(np.sqrt(SNR) * a) ** 2
        out.append(float(((1 - lev) * v).mean() - (1 - c) * v.mean()))
        a_all.append(a)
        lev_all.append(lev)
    return float(np.mean(out)), float(np.std(out, ddof=1) / np.sqrt(trials)), np.concatenate(a_all), np.concatenate(lev_all)


def _hermite_parts(activation: str, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``E f(xi + m)``, ``E[xi f(xi + m)]`` and the remaining standard deviation, entrywise in ``m``."""
    from numerics import resolve_activation

    fu = resolve_activation(activation)(_NODES[None, :] + m.ravel()[:, None])
    h0, h1 = (fu * _WEIGHTS).sum(1), (fu * _NODES * _WEIGHTS).sum(1)
    rest = np.sqrt(np.maximum((fu**2 * _WEIGHTS).sum(1) - h0**2 - h1**2, 0.0))
    return h0.reshape(m.shape), h1.reshape(m.shape), rest.reshape(m.shape)


def equivalence(activation: str, c: float, t: float, p: int, trials: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Attention's ``T2`` minus ridge's with the true kernel and three conditional Gaussian equivalents.

    Given ``a``, ``sqrt(p) K_ij = f(g_ij + m_ij)`` with ``m_ij = t_eff a_i a_j`` (:func:`effective_t`) and ``g_ij = x_i_perp . x_j_perp / sqrt p``
    is replaced by ``h0(m) + h1(m) g + r(m) W`` (Hermite expansion in ``g``; ``W`` symmetric Gaussian), then without
    the mean ``h0``, then with a non-symmetric ``W``.  Returns the means and SEs over ``trials``.
    """
    from numerics import attention_features, sample_signal_plus_noise

    n = int(round(p / c))
    w = np.zeros(p)
    w[0] = np.sqrt(t * np.sqrt(p))
    rows = []
    for trial in range(trials):
        rng = np.random.default_rng([seed, p, n, int(round(1000 * t)), sum(map(ord, activation)), trial, 1])
        X, y, _ = sample_signal_plus_noise(n, p, SNR, rng)
        a = X[0]
        h0, h1, rest = _hermite_parts(activation, effective_t(t, p) * np.outer(a, a))
        gram = X[1:].T @ X[1:] / np.sqrt(p)
        sym = rng.standard_normal((n, n))
        sym = (sym + sym.T) / np.sqrt(2)
        kernels = [h0 + h1 * gram + rest * sym, h1 * gram + rest * sym, h0 + h1 * gram + rest * rng.standard_normal((n, n))]
        t2 = [split(attention_features(X, activation, w, w), y, a, SNR)[2]]
        for K in kernels:
            np.fill_diagonal(K, 0.0)
            t2.append(split(X @ K / np.sqrt(p), y, a, SNR)[2])
        rows.append(np.array(t2) - split(X, y, a, SNR)[2])
    r = np.array(rows)
    return r.mean(0), r.std(0, ddof=1) / np.sqrt(trials)


def theory_binned(prof) -> list[float]:
    """Bin means of a theory profile: ``h`` interpolated from its nodes onto a fine grid, weighted by the law of ``a``."""
    order = np.argsort(prof.a)
    grid = np.linspace(-BINS[-1], BINS[-1], 1401)
    s = np.sqrt(SNR)
    density = np.exp(-((grid - s) ** 2) / 2) + np.exp(-((grid + s) ** 2) / 2)
    return binned(grid, np.interp(grid, prof.a[order], prof.leverage[order]), density)


def binned(a: np.ndarray, values: np.ndarray, weights: np.ndarray | None = None) -> list[float]:
    """Mean of ``values`` over the bins of ``|a|`` in :data:`BINS`."""
    out = []
    for lo, hi in zip(BINS[:-1], BINS[1:]):
        sel = (np.abs(a) >= lo) & (np.abs(a) < hi)
        out.append(float(np.average(values[sel], weights=None if weights is None else weights[sel])))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--figure", type=Path, default=ROOT / "docs" / "figures" / "strong_alignment_leverage.png")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    print("| f | c | t | p | trials | E_att - E_RR | T1 + T2 part | T1 part | T2 part | T1 att / RR | T2 att / RR | "
          "T2 theory |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    profiles = {}
    for act, c, t, p, trials in GRID:
        m = measure(act, c, t, p, trials, args.seed)
        d, se, mean = m["diff"], m["diff_se"], m["mean"]
        print(f"| {act} | {c:.3g} | {t} | {p} | {trials} | {d[0]:+.4f} ± {se[0]:.4f} | {d[3]:+.4f} ± {se[3]:.4f} | "
              f"{d[1]:+.4f} ± {se[1]:.4f} | "
              f"{d[2]:+.4f} ± {se[2]:.4f} | {mean[1]:.4f} / {mean[4]:.4f} | {mean[2]:.4f} / {mean[5]:.4f} | "
              f"{theory_t2(act, c, effective_t(t, p)):+.4f} |", flush=True)
        if act == "erf" and c == 0.5 and p == 512:
            profiles[t] = m
    from theory import strong_alignment_leverage

    print("\nLeverage of attention's features by |a| (erf, c = 1/2, p = 512), measured / theory at t_eff:\n")
    print("| t | " + " | ".join(f"[{lo}, {hi})" for lo, hi in zip(BINS[:-1], BINS[1:])) + " |")
    print("|---" * len(BINS) + "|")
    for t, m in profiles.items():
        prof = strong_alignment_leverage(0.5, "erf", SNR, effective_t(t, 512), nodes=100)
        cells = [f"{e:.3f} / {mo:.3f}" for e, mo in zip(binned(m["a"], m["leverage"]), theory_binned(prof))]
        print(f"| {t} | " + " | ".join(cells) + " |")
    print("\nT2 part (attention - ridge), true kernel and its conditional Gaussian equivalents (erf, c = 1/2):\n")
    print("| t | p | trials | true kernel | equivalent | without the mean h0 | non-symmetric noise |")
    print("|---|---|---|---|---|---|---|")
    for t, p, trials in ((0.5, 256, 8), (0.5, 512, 4), (2.0, 256, 8)):
        mean, se = equivalence("erf", 0.5, t, p, trials, args.seed)
        print(f"| {t} | {p} | {trials} | " + " | ".join(f"{m:+.4f} ± {e:.4f}" for m, e in zip(mean, se)) + " |", flush=True)
    print("\nThe Dyson equation's model (slope and remainder parts of the kernel, erf, n = 1024, 4 trials): T2 by "
          "simulation and by theory; leverage by |a| at c = 1/2, simulation / theory:\n")
    print("| c | t | T2 simulated | T2 theory | " + " | ".join(f"[{lo}, {hi})" for lo, hi in zip(BINS[:-1], BINS[1:])) + " |")
    print("|---|---|---|---|" + "---|" * (len(BINS) - 1))
    for c, t in ((0.5, 0.18), (0.5, 0.5), (0.5, 1.0), (0.5, 2.0), (1 / 3, 0.5)):
        mean, se, a, lev = dyson_model_t2(c, t, 1024, 4, args.seed)
        prof = strong_alignment_leverage(c, "erf", SNR, t, nodes=100)
        cells = [f"{e:.3f} / {mo:.3f}" for e, mo in zip(binned(a, lev), theory_binned(prof))]
        print(f"| {c:.3g} | {t} | {mean:+.4f} ± {se:.4f} | {prof.t2:+.4f} | " + " | ".join(cells) + " |", flush=True)
    _figure(profiles, args.figure)
    print(f"\n{time.perf_counter() - start:.0f} s, seed {args.seed}")
    return 0


def _figure(profiles: dict, path: Path) -> None:
    import matplotlib

    from theory import strong_alignment_leverage

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    centres = 0.5 * (np.array(BINS[:-1]) + np.array(BINS[1:]))
    for k, (t, m) in enumerate(sorted(profiles.items())):
        colour = f"C{k}"
        ax.plot(centres, binned(m["a"], m["leverage"]), "o", color=colour, label=f"t = {t}, measured")
        prof = strong_alignment_leverage(0.5, "erf", SNR, effective_t(t, 512), nodes=100)
        ax.plot(centres, theory_binned(prof), "-", color=colour, alpha=0.6)
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("|a| (the token's labelled coordinate)")
    ax.set_ylabel("leverage of the token in attention's features")
    ax.set_title("erf, c = 1/2, p = 512: points measured, lines the theory at t + 1/sqrt p", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
