"""The tables and the figure of docs/strong_alignment.md, "Prediction risk": theory against paired Monte Carlo.

Each table is one command (Monte Carlo seeded by ``--seed`` and the setting's integers and strings; labels
integrated out given the data, attention and ridge on the same draws, ``gamma -> 0``, ``snr = 1``):

    python docs/make_strong_alignment_risk.py risk --ps 2048 --trials 8            # T1, T2, training and risk gaps
    python docs/make_strong_alignment_risk.py risk --ps 512 --trials 10 --activations erf --cs 0.5 --gamma 1e-3
    python docs/make_strong_alignment_risk.py offsets --ps 512 1024 2048 4096     # erf c=1/2 t=2 against p
    python docs/make_strong_alignment_risk.py crossings                           # theory only: where risk reverses
    python docs/make_strong_alignment_risk.py profile --ps 256 512 1024           # docs/figures/B10_leverage_profile.png
    python docs/make_strong_alignment_risk.py meanpart --ps 256 512               # gelu: the kernel's mean part
    python docs/make_strong_alignment_risk.py wide --ps 128 512 2048              # c = 2 at gamma = 1e-3, 1e-2

``--device cuda`` runs the kernels and eigendecompositions on a GPU (the same draws); ``--json FILE`` also writes the
rows.  "theory at p" is the finite-size equation (``p=``: ``t + 1/sqrt p`` and the kernel's mean part at ``n = p/c``
tokens); "limit at t_eff" the limit equation at ``t + 1/sqrt p`` (the mean part left out).

    python docs/make_strong_alignment_risk.py offsets --activations silu --cs 0.333 --ts 1.5 --ps 1024 2048 4096
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BINS = 6


def _seed(base: int, *keys) -> int:
    import hashlib

    text = "|".join(map(str, (base, "risk-doc", *keys)))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size))


def _cell(act: str, c: float, t: float, p: int, trials: int, seed: int, device: str, gamma: float = 0.0) -> dict:
    from numerics import MonteCarloSettings, strong_alignment_mc
    from theory import label_coordinate_bins

    settings = MonteCarloSettings(trials, _seed(seed, act, f"c={c:.6g}", f"t={t:g}", p), device=device, labels="iid")
    out = strong_alignment_mc(act, c, t, p, [gamma], settings, bins=label_coordinate_bins(1.0, BINS))
    col = {k: np.asarray(v)[:, 0] for k, v in out.items() if k != "attention_leverage"}
    return {"T1": col["attention_signal"] - col["ridge_signal"], "T2": col["attention_noise"] - col["ridge_noise"],
            "train": col["attention"] - col["ridge"], "risk": col["attention_risk"] - col["ridge_risk"],
            "bins": np.asarray(out["attention_leverage"])[:, 0, :]}


def _theory(act: str, c: float, t: float, p: int | None, gamma: float = 0.0, finite: bool = True) -> dict:
    """The theory at size ``p`` (``finite``: the finite-size equation; else the limit at ``t + 1/sqrt p``), or the
    limit at ``t`` (``p = None``)."""
    from theory import (binned_leverage, label_coordinate_bins, ridge_error_values, ridge_prediction_risk,
                        strong_spike_attention_error, strong_spike_prediction_risk)

    te = t if p is None or finite else t + 1 / math.sqrt(p)
    size = p if finite else None
    if gamma > 0:  # the parts are defined at gamma -> 0; at gamma > 0 the training and risk gaps
        return {"T1": math.nan, "T2": math.nan,
                "train": strong_spike_attention_error(gamma, c, act, 1.0, te, p=size)
                - float(ridge_error_values(gamma, c, 1.0)),
                "risk": strong_spike_prediction_risk(gamma, c, act, 1.0, te, p=size) - ridge_prediction_risk(gamma, c, 1.0)}
    b = binned_leverage(label_coordinate_bins(1.0, BINS), c, act, 1.0, te, p=size)
    return {"T1": b.t1, "T2": b.t2, "train": b.t1 + b.t2, "risk": b.t1 - b.t2, "bins": b.bin_means}


def table_risk(args) -> list[dict]:
    rows = []
    print(f"gamma = {args.gamma:g}")
    print("| f | c | t | p | trials | quantity | theory at p | measured | z |")
    print("|---|---|---|---|---|---|---|---|---|")
    for act in args.activations:
        for c in args.cs:
            for t in args.ts:
                for p in args.ps:
                    t0 = time.time()
                    cell = _cell(act, c, t, p, args.trials, args.seed, args.device, args.gamma)
                    th = _theory(act, c, t, p, args.gamma)
                    for q in ("T1", "T2", "train", "risk") if args.gamma == 0 else ("train", "risk"):
                        m, se = _mean_se(cell[q])
                        rows.append(dict(activation=act, c=c, t=t, p=p, trials=args.trials, quantity=q,
                                         theory=th[q], mean=m, se=se, seconds=time.time() - t0))
                        print(f"| {act} | {c:.3g} | {t:g} | {p} | {args.trials} | {q} | {th[q]:+.4f} | "
                              f"{m:+.4f} ± {se:.4f} | {(m - th[q]) / se:+.1f} |", flush=True)
    return rows


def table_offsets(args) -> list[dict]:
    """Per setting and ``p``: measured minus the limit at ``t_eff`` and minus the theory at ``p`` (``T1``, ``T2``,
    the training and risk gaps, and the largest deviation over the bins of the leverage profile)."""
    rows = []
    print("| f | c | t | p | trials | quantity | theory at p | measured | minus limit at t_eff | minus theory at p |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for act in args.activations:
        for c in args.cs:
            for t in args.ts:
                for p, trials in zip(args.ps, args.trials_per_p or [args.trials] * len(args.ps)):
                    cell = _cell(act, c, t, p, trials, args.seed, args.device)
                    th, eff = _theory(act, c, t, p), _theory(act, c, t, p, finite=False)
                    for q in ("T1", "T2", "train", "risk", "bins"):
                        if q == "bins":
                            stats = [_mean_se(cell["bins"][:, b]) for b in range(BINS)]
                            k = int(np.argmax([abs(mm - tv) / se for (mm, se), tv in zip(stats, th["bins"])]))
                            (m, se), want, lim = stats[k], th["bins"][k], eff["bins"][k]
                            q = f"bin {k + 1} (largest z)"
                        else:
                            (m, se), want, lim = _mean_se(cell[q]), th[q], eff[q]
                        rows.append(dict(activation=act, c=c, t=t, p=p, trials=trials, quantity=q, theory=want,
                                         limit_t_eff=lim, mean=m, se=se))
                        print(f"| {act} | {c:.3g} | {t:g} | {p} | {trials} | {q} | {want:+.4f} | {m:+.4f} ± {se:.4f} | "
                              f"{m - lim:+.4f} | {m - want:+.4f} |", flush=True)
    return rows


def table_wide(args) -> list[dict]:
    """``c > 1`` at ``gamma > 0``: the paired training gap against :func:`theory.strong_spike_attention_error` minus
    ridge's error, at ``t_eff`` and at ``p``, for each ``p`` (B9's worst case is ``c = 2``, ``t = 2``, ``gamma = 1e-3``)."""
    from numerics import MonteCarloSettings, strong_alignment_mc
    from theory import ridge_error_values, strong_spike_attention_error

    rows = []
    gammas = args.gammas
    print("| f | c | t | gamma | p | trials | limit at t_eff | theory at p | measured | minus limit at t_eff | "
          "minus theory at p |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for act in args.activations:
        for c in args.cs:
            for t in args.ts:
                ridge = ridge_error_values(gammas, c, 1.0)
                for p, trials in zip(args.ps, args.trials_per_p or [args.trials] * len(args.ps)):
                    seed = _seed(args.seed, "wide", act, f"c={c:.6g}", f"t={t:g}", p)
                    out = strong_alignment_mc(act, c, t, p, gammas,
                                              MonteCarloSettings(trials, seed, device=args.device, labels="iid"))
                    diff = np.asarray(out["attention"]) - np.asarray(out["ridge"])
                    at_eff = strong_spike_attention_error(gammas, c, act, 1.0, t + 1 / math.sqrt(p)) - ridge
                    at_p = strong_spike_attention_error(gammas, c, act, 1.0, t, p=p) - ridge
                    for j, g in enumerate(gammas):
                        m, se = _mean_se(diff[:, j])
                        rows.append(dict(activation=act, c=c, t=t, gamma=g, p=p, trials=trials, limit_t_eff=at_eff[j],
                                         theory=at_p[j], mean=m, se=se))
                        print(f"| {act} | {c:g} | {t:g} | {g:g} | {p} | {trials} | {at_eff[j]:+.4f} | {at_p[j]:+.4f} | "
                              f"{m:+.4f} ± {se:.4f} | {m - at_eff[j]:+.4f} | {m - at_p[j]:+.4f} |", flush=True)
    return rows


def table_crossings(args) -> list[dict]:
    """Theory only: the risk gap ``T1 - T2`` against ``t``; where it crosses 0 and its smallest value on the grid."""
    from scipy import optimize

    from theory import strong_alignment_gap

    grid = np.array([0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.75, 1.0, 1.5, 2.0, 3.0])
    rows = []
    print("| f | c | risk gap T1 - T2 at t = " + ", ".join(f"{t:g}" for t in grid) + " | crossing t | training gap at crossing |")
    print("|---|---|---|---|---|")
    for act in args.activations:
        for c in args.cs:
            def risk(t: float) -> float:
                g = strong_alignment_gap(c, act, 1.0, t)
                return g.t1 - g.t2

            values = np.array([risk(t) for t in grid])
            change = np.nonzero(np.diff(np.sign(values)))[0]
            cross = (optimize.brentq(risk, grid[change[0]], grid[change[0] + 1], xtol=1e-4) if change.size
                     else math.nan)
            train = strong_alignment_gap(c, act, 1.0, cross).total if math.isfinite(cross) else math.nan
            rows.append(dict(activation=act, c=c, ts=grid.tolist(), risk=values.tolist(), crossing=cross,
                             train_at_crossing=train))
            print(f"| {act} | {c:.3g} | " + ", ".join(f"{v:+.4f}" for v in values)
                  + f" | {cross:.3f} | {train:+.4f} |", flush=True)
    return rows


def figure_profile(args) -> list[dict]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from theory import label_coordinate_bins

    edges = label_coordinate_bins(1.0, BINS)
    mids = [(edges[k] + min(edges[k + 1], edges[k] + 1.0)) / 2 for k in range(BINS)]
    rows = []
    fig, axes = plt.subplots(1, len(args.ts), figsize=(4.0 * len(args.ts), 3.4), sharey=True, squeeze=False)
    act, c = args.activations[0], args.cs[0]
    for ax, t in zip(axes[0], args.ts):
        th = _theory(act, c, t, args.ps[-1])
        ax.plot(mids, th["bins"], "-", color="black", lw=1.4, label=f"theory at p = {args.ps[-1]}")
        for k, p in enumerate(args.ps):
            cell = _cell(act, c, t, p, args.trials, args.seed, args.device)
            stats = np.array([_mean_se(cell["bins"][:, b]) for b in range(BINS)])
            ax.errorbar(np.array(mids) + 0.03 * (k - 1), stats[:, 0], 3 * stats[:, 1], fmt="os^v"[k], ms=4,
                        capsize=2, label=f"Monte Carlo p = {p} (±3 SE)")
            rows.append(dict(activation=act, c=c, t=t, p=p, bins=stats.tolist(),
                             theory=_theory(act, c, t, p)["bins"].tolist()))
        ax.axhline(c, color="#999999", lw=0.8)
        ax.set(title=f"{act}, p/n = {c:g}, t = {t:g}", xlabel="|a| (bin: equal probability)")
    axes[0, 0].set_ylabel("attention's mean leverage h")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("B10: attention's leverage by |a| under strong alignment (ridge: p/n everywhere), γ → 0")
    fig.tight_layout()
    out = ROOT / "docs" / "figures" / "B10_leverage_profile.png"
    fig.savefig(out, dpi=110)
    print(f"wrote {out.relative_to(ROOT)}")
    for r in rows:
        print(f"t={r['t']:g} p={r['p']}: MC " + " ".join(f"{m:.4f}±{s:.4f}" for m, s in r["bins"])
              + " | theory " + " ".join(f"{v:.4f}" for v in r["theory"]))
    return rows


def table_meanpart(args) -> list[dict]:
    """Measured minus theory of attention's leverage by bin, ``T2`` and the risk gap, with the kernel's mean part
    ``E f(xi + t_eff a_i a_j) / sqrt p`` subtracted (against the limit at ``t_eff``, which leaves it out) and without
    (against the limit at ``t_eff`` and against the theory at ``p``, which puts it in)."""
    import torch

    from numerics import label_posterior_mean, resolve_activation, sample_signal_plus_noise
    from numerics._ridge_solvers import smoother_parts
    from numerics.rmt import kernel_batch
    from theory import label_coordinate_bins

    edges = label_coordinate_bins(1.0, BINS)
    x, w = np.polynomial.hermite_e.hermegauss(60)
    w = w / w.sum()
    rows = []
    for act in args.activations:
        f = resolve_activation(act)
        for c in args.cs:
            for t in args.ts:
                for p in args.ps:
                    n, te = int(round(p / c)), t + 1 / math.sqrt(p)
                    res = {"full": [], "mean removed": []}
                    seeds = np.random.SeedSequence(_seed(args.seed, "meanpart", act, f"c={c:.6g}", f"t={t:g}", p))
                    for child in seeds.spawn(args.trials):
                        X, _, mu = sample_signal_plus_noise(n, p, 1.0, np.random.default_rng(child), labels="iid")
                        m = torch.from_numpy(label_posterior_mean(X, mu)).unsqueeze(0)
                        Xt = torch.from_numpy(X).unsqueeze(0)
                        spike = torch.zeros(p, dtype=torch.float64)
                        spike[0] = math.sqrt(t * math.sqrt(p))
                        K = kernel_batch(Xt, f, spike, spike, "removed")
                        M = sum(wk * f(te * np.outer(X[0], X[0]) + xk) for xk, wk in zip(x, w)) / math.sqrt(p)
                        np.fill_diagonal(M, 0.0)
                        which = np.digitize(np.abs(X[0]), edges) - 1
                        zero = torch.zeros(1, dtype=torch.float64)
                        r_signal, r_noise, r_absorbed, _ = smoother_parts(Xt, m, zero)
                        for name, KK in (("full", K), ("mean removed", K - torch.from_numpy(M).unsqueeze(0))):
                            signal, noise, absorbed, lev = smoother_parts(Xt @ KK, m, zero)
                            lev = lev[0, :, 0].numpy()
                            t2 = float(noise - r_noise)
                            risk = float(signal + noise + 2 * absorbed - r_signal - r_noise - 2 * r_absorbed)
                            res[name].append([lev[which == b].mean() for b in range(BINS)] + [t2, risk])
                    theories = {"limit at t_eff": _theory(act, c, t, p, finite=False), "theory at p": _theory(act, c, t, p)}
                    for name, vals in res.items():
                        stats = [_mean_se(np.array(vals)[:, b]) for b in range(BINS + 2)]
                        for against, th in theories.items():
                            if name == "mean removed" and against == "theory at p":
                                continue
                            want = [*th["bins"], th["T2"], th["risk"]]
                            rows.append(dict(activation=act, c=c, t=t, p=p, kernel=name, against=against,
                                             measured=stats, theory=want))
                            print(f"| {act} | {c:.3g} | {t:g} | {p} | {name} | {against} | "
                                  + " | ".join(f"{mm - tv:+.4f} ± {s:.4f}" for (mm, s), tv in zip(stats, want))
                                  + " |", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", choices=("risk", "offsets", "crossings", "profile", "meanpart", "wide"))
    ap.add_argument("--gammas", nargs="+", type=float, default=[1e-3, 1e-2], help="wide: the ridge parameters")
    ap.add_argument("--gamma", type=float, default=0.0, help="risk: the ridge parameter (0: the parts too)")
    ap.add_argument("--activations", nargs="+", default=None)
    ap.add_argument("--cs", nargs="+", type=float, default=None)
    ap.add_argument("--ts", nargs="+", type=float, default=None)
    ap.add_argument("--ps", nargs="+", type=int, default=[512])
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--trials-per-p", nargs="+", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--memory-gib", type=float, default=None,
                    help="raise theory.Limits.memory_budget_bytes (2 GiB by default; p = 8192 at c = 1/2 needs ~9)")
    args = ap.parse_args(argv)
    if args.memory_gib:
        from theory import set_limits

        set_limits(memory_budget_bytes=int(args.memory_gib * 2**30))
    defaults = {"risk": (["erf", "tanh"], [1 / 3, 0.5], [0.5, 1.0, 2.0]),
                "offsets": (["erf"], [0.5], [2.0]),
                "crossings": (["erf", "tanh", "gelu"], [0.25, 1 / 3, 0.5, 0.75, 0.9], []),
                "profile": (["erf"], [0.5], [0.5, 1.0, 2.0]),
                "meanpart": (["gelu", "erf", "tanh"], [0.25, 0.5], [1.0, 2.0]),
                "wide": (["erf"], [2.0], [1.0, 2.0])}[args.table]
    args.activations = args.activations or defaults[0]
    args.cs = args.cs or defaults[1]
    args.ts = args.ts or defaults[2]
    t0 = time.time()
    rows = {"risk": table_risk, "offsets": table_offsets, "crossings": table_crossings, "profile": figure_profile,
            "meanpart": table_meanpart, "wide": table_wide}[args.table](args)
    print(f"({time.time() - t0:.0f} s, device {args.device}, seed {args.seed})")
    if args.json:
        args.json.write_text(json.dumps(dict(table=args.table, argv=sys.argv[1:], rows=rows), indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
