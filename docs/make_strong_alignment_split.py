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
own sampler and attention features), the leverage profile against ``|a|``, and the heteroscedastic-row model of
the leverage (:func:`leverage_profile_model`, at ``t_eff = t + 1/sqrt p``, :func:`effective_t`).  It prints markdown tables; the figure shows the leverage profile.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import brentq

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


def _label_coordinate(snr: float) -> tuple[np.ndarray, np.ndarray]:
    """Quadrature of ``a = sqrt(snr) y + z`` (``y = +-1`` equally likely, ``z ~ N(0, 1)``)."""
    s = np.sqrt(snr)
    return np.concatenate([_NODES + s, _NODES - s]), np.concatenate([_WEIGHTS, _WEIGHTS]) / 2


def leverage_profile_model(activation: str, c: float, t: float, snr: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Heteroscedastic-row model of the leverage: nodes ``a``, weights, ``h(a)``.

    Conditional on ``a``, the Hermite expansion of ``f(g + t a a')`` in the Gaussian part ``g`` splits a token's
    features into a low-rank part (functions of ``a``; leverage ``O(1/n)`` per token) and a generic part whose
    energy per coordinate is ``s2(a) = E_a'[Var_xi f(xi + t a a')] / c + (E_a'[E f'(xi + t a a')])^2 / c^2``.
    Treating the generic rows as ``s(a)`` times i.i.d. isotropic vectors gives ``h(a) = s2 d / (1 + s2 d)`` with
    ``E_a h(a) = c``.  An approximation (the rows share neither a covariance nor independence); the script
    measures its error.
    """
    from numerics import resolve_activation

    f = resolve_activation(activation)
    A, WA = _label_coordinate(snr)
    u = _NODES[None, None, :] + t * A[:, None, None] * A[None, :, None]
    h = 1e-5
    fu = f(u)
    mean = (fu * _WEIGHTS).sum(-1)
    var = (fu**2 * _WEIGHTS).sum(-1) - mean**2
    slope = ((f(u + h) - f(u - h)) / (2 * h) * _WEIGHTS).sum(-1)
    s2 = (var * WA).sum(1) / c + ((slope * WA).sum(1)) ** 2 / c**2
    d = brentq(lambda d: (s2 * d / (1 + s2 * d) * WA).sum() - c, 1e-12, 1e12)
    return A, WA, s2 * d / (1 + s2 * d)


def model_t2_gap(activation: str, c: float, t: float, snr: float) -> float:
    """``T2`` of attention minus ridge's ``(1 - c) E v(a)`` under :func:`leverage_profile_model`."""
    A, WA, h = leverage_profile_model(activation, c, t, snr)
    v = 1 - np.tanh(np.sqrt(snr) * A) ** 2
    return float(((1 - h) * v * WA).sum() - (1 - c) * (v * WA).sum())


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
          "T2 model |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    profiles = {}
    for act, c, t, p, trials in GRID:
        m = measure(act, c, t, p, trials, args.seed)
        d, se, mean = m["diff"], m["diff_se"], m["mean"]
        print(f"| {act} | {c:.3g} | {t} | {p} | {trials} | {d[0]:+.4f} ± {se[0]:.4f} | {d[3]:+.4f} ± {se[3]:.4f} | "
              f"{d[1]:+.4f} ± {se[1]:.4f} | "
              f"{d[2]:+.4f} ± {se[2]:.4f} | {mean[1]:.4f} / {mean[4]:.4f} | {mean[2]:.4f} / {mean[5]:.4f} | "
              f"{model_t2_gap(act, c, effective_t(t, p), SNR):+.4f} |", flush=True)
        if act == "erf" and c == 0.5 and p == 512:
            profiles[t] = m
    print("\nLeverage of attention's features by |a| (erf, c = 1/2, p = 512), measured / model:\n")
    print("| t | " + " | ".join(f"[{lo}, {hi})" for lo, hi in zip(BINS[:-1], BINS[1:])) + " |")
    print("|---" * len(BINS) + "|")
    for t, m in profiles.items():
        A, WA, h = leverage_profile_model("erf", 0.5, effective_t(t, 512), SNR)
        cells = [f"{e:.3f} / {mo:.3f}" for e, mo in zip(binned(m["a"], m["leverage"]), binned(A, h, WA))]
        print(f"| {t} | " + " | ".join(cells) + " |")
    print("\nT2 part (attention - ridge), true kernel and its conditional Gaussian equivalents (erf, c = 1/2):\n")
    print("| t | p | trials | true kernel | equivalent | without the mean h0 | non-symmetric noise |")
    print("|---|---|---|---|---|---|---|")
    for t, p, trials in ((0.5, 256, 8), (0.5, 512, 4), (2.0, 256, 8)):
        mean, se = equivalence("erf", 0.5, t, p, trials, args.seed)
        print(f"| {t} | {p} | {trials} | " + " | ".join(f"{m:+.4f} ± {e:.4f}" for m, e in zip(mean, se)) + " |", flush=True)
    _figure(profiles, args.figure)
    print(f"\n{time.perf_counter() - start:.0f} s, seed {args.seed}")
    return 0


def _figure(profiles: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    centres = 0.5 * (np.array(BINS[:-1]) + np.array(BINS[1:]))
    for k, (t, m) in enumerate(sorted(profiles.items())):
        colour = f"C{k}"
        ax.plot(centres, binned(m["a"], m["leverage"]), "o", color=colour, label=f"t = {t}, measured")
        A, WA, h = leverage_profile_model("erf", 0.5, effective_t(t, 512), SNR)
        ax.plot(centres, binned(A, h, WA), "-", color=colour, alpha=0.6)
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("|a| (the token's labelled coordinate)")
    ax.set_ylabel("leverage of the token in attention's features")
    ax.set_title("erf, c = 1/2, p = 512: points measured, lines the heteroscedastic-row model", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    raise SystemExit(main())
