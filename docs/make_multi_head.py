"""Regenerate the numbers, the table and the figure of docs/multi_head.md (multi-head attention, claim B11).

Usage (from the repository root)::

    python docs/make_multi_head.py            # everything (about 15 minutes on 2 busy cores)
    python docs/make_multi_head.py --part figure
    python docs/make_multi_head.py --part table
    python docs/make_multi_head.py --part scan
    python docs/make_multi_head.py --part linearised

``table``: theory (:class:`theory.MultiHeadModel`) against :func:`numerics.simulate_model` at ``p = 512`` and
``1024`` (paired with ridge on the same draws), at settings that B11 does not judge, with the finite-size rule of
``verify/checks/_finite_size.py`` (the gap at 512 propagated to 1024 at the rate ``p^(-1/2)``, plus 3 SD); seeds are
integers written here.  ``figure``: ``E_att - E_RR`` against the number of heads ``H`` (tanh heads, ``gamma = 0.1``,
``snr = 1``), with and without the value budget ``v = 1/H``, theory and simulation, and the ``H -> infinity``
limits; ``docs/figures/multi_head_heads.png``.  ``scan``: theory only, the smallest gap with the budget
``v = 1/H`` over activations, snr, ``c``, ``H`` and ``gamma``.  ``linearised``: step 1's check, the true and the
Gaussian-equivalent kernels on the same draws against the theory.  Each part rewrites its block of docs/multi_head.md (between
``<!-- multi-head-<part>:start -->`` and ``<!-- multi-head-<part>:end -->``).
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from numerics import MonteCarloSettings, simulate_model  # noqa: E402
from theory import MultiHeadModel  # noqa: E402
from theory.multi_head import shared_budget_limit  # noqa: E402

PAGE = ROOT / "docs" / "multi_head.md"
FIGURE = ROOT / "docs" / "figures" / "multi_head_heads.png"
SNR = 1.0
GAMMAS = (1e-3, 1e-2, 0.1, 1.0)

#: the table's settings: (c, activations, heads, readout, v); none of them is judged by B11 but the issue's three
TABLE = (
    (0.5, ("tanh", "gelu"), "shared", "sum", None),  # issue 49's first measurement
    (0.5, ("tanh", "erf"), "shared", "concat", 0.5),
    (0.5, ("erf", "erf", "erf", "erf"), "random", "sum", None),  # issue 49's second measurement
    (2.0, ("relu", "gelu"), "shared", "concat", None),
    (2.0, ("tanh", "gelu", "relu"), "shared", "concat", 1 / 3),
    (2.0, ("tanh", "relu"), "random", "concat", None),
    (2.0, ("tanh", "tanh"), "random", "concat", 0.5),  # issue 49's third measurement
)
#: (p small, p large) and (trials small, trials large) by c; the seed of each cell is 4900 + p
TABLE_SIZES = {0.5: ((512, 1024), (16, 8)), 2.0: ((512, 1024), (32, 32))}

#: the figure: heads H, the simulation's p by c, trials, seed
HEADS = (1, 2, 3, 4, 6, 8)
FIG_P = {2.0: 256, 0.5: 128}
FIG_TRIALS = 24
FIG_GAMMA = 0.1
CURVES = (("random", "sum", False), ("random", "concat", False), ("random", "concat", True),
          ("shared", "concat", True))
LABELS = {("random", "sum", False): "random heads, sum", ("random", "concat", False): "random heads, concatenated",
          ("random", "concat", True): "random heads, concatenated, budget v = 1/H",
          ("shared", "concat", True): "shared heads, concatenated, budget v = 1/H"}


def model(c, acts, heads, readout, v):
    return MultiHeadModel(c, acts, SNR, heads=heads, readout=readout, value_ratio=v)


def name(setting) -> str:
    c, acts, heads, readout, v = setting
    return f"{heads}, {readout}{'' if v is None else f', v = {v:.3g}'}, {' + '.join(acts)}, c = {c:g}"


def write_block(part: str, text: str) -> None:
    start, end = f"<!-- multi-head-{part}:start -->", f"<!-- multi-head-{part}:end -->"
    page = PAGE.read_text()
    i, j = page.index(start) + len(start), page.index(end)
    PAGE.write_text(page[:i] + "\n" + text.rstrip() + "\n" + page[j:])


def machine() -> str:
    import os

    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


# ------------------------------------------------------------------------------------------ table
def table() -> str:
    rows = []
    t0 = time.time()
    for c in sorted({s[0] for s in TABLE}):
        settings = [s for s in TABLE if s[0] == c]
        models = [model(*s) for s in settings]
        (ps, pl), (ts, tl) = TABLE_SIZES[c]
        cells = {}
        for p, trials in ((ps, ts), (pl, tl)):
            out = simulate_model(models, p, list(GAMMAS), MonteCarloSettings(trials, seed=4900 + p, n_jobs=2),
                                 kind=("true", "ridge"))
            cells[p] = out["true"] - out["ridge"][None]
            print(f"  table: c = {c:g}, p = {p}: {time.time() - t0:.0f} s", flush=True)
        for j, (s, m) in enumerate(zip(settings, models)):
            th = np.asarray(m.error(np.array(GAMMAS))) - m.ridge_error(np.array(GAMMAS))
            for k, g in enumerate(GAMMAS):
                stats = {}
                for p, trials in ((ps, ts), (pl, tl)):
                    d = cells[p][j, :, k]
                    stats[p] = (d.mean(), d.std(ddof=1) / math.sqrt(trials))
                q = math.sqrt(ps / pl)
                gs, gl = stats[ps][0] - th[k], stats[pl][0] - th[k]
                bound = q * abs(gs) + 3 * math.hypot(stats[pl][1], q * stats[ps][1])
                rows.append((name(s), g, th[k], stats[ps], stats[pl], gl / stats[pl][1], abs(gl) <= bound, bound))
    lines = [f"Generated by `python docs/make_multi_head.py --part table` ({machine()}; {time.time() - t0:.0f} s; "
             f"seeds 4900 + p; snr = {SNR:g}; trials at p = 512 / 1024: c = 1/2: "
             f"{TABLE_SIZES[0.5][1][0]} / {TABLE_SIZES[0.5][1][1]}, c = 2: {TABLE_SIZES[2.0][1][0]} / "
             f"{TABLE_SIZES[2.0][1][1]}).", "",
             "| setting | gamma | theory E_att - E_RR | MC p = 512 | MC p = 1024 | z at 1024 | within 3 SE + allowance |",
             "|---|---|---|---|---|---|---|"]
    for nm, g, th, s1, s2, z, ok, bound in rows:
        lines.append(f"| {nm} | {g:g} | {th:.4f} | {s1[0]:.4f} ± {s1[1]:.4f} | {s2[0]:.4f} ± {s2[1]:.4f} | "
                     f"{z:+.1f} | {'yes' if ok else '**no**'} (bound {bound:.4f}) |")
    n_ok = sum(r[6] for r in rows)
    lines += ["", f"{n_ok} of {len(rows)} points within the bound (|gap at 1024| <= q |gap at 512| + 3 hypot(SE_1024, "
                  f"q SE_512), q = 2^(-1/2)); the four gammas of a setting share their draws."]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ figure
def curve_model(c, heads, readout, budget, H):
    v = (1.0 / H if H > 1 else None) if budget else None
    return model(c, ("tanh",) * H, heads, readout, v)


def figure() -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = time.time()
    theory, mc = {}, {}
    for c in (2.0, 0.5):
        for key in CURVES:
            theory[(c, key)] = [float(curve_model(c, *key, H).error(FIG_GAMMA) - curve_model(c, *key, H).ridge_error(
                FIG_GAMMA)) for H in HEADS]
        models = [curve_model(c, *key, H) for key in CURVES for H in HEADS]
        out = simulate_model(models, FIG_P[c], [FIG_GAMMA], MonteCarloSettings(FIG_TRIALS, seed=4911, n_jobs=2),
                             kind=("true", "ridge"))
        d = out["true"][:, :, 0] - out["ridge"][None, :, 0]
        for i, key in enumerate(CURVES):
            block = d[i * len(HEADS):(i + 1) * len(HEADS)]
            mc[(c, key)] = (block.mean(1), block.std(1, ddof=1) / math.sqrt(FIG_TRIALS))
    limits = {c: float(shared_budget_limit(c, "tanh", SNR, FIG_GAMMA)
                       - MultiHeadModel(c, ("tanh",), SNR).ridge_error(FIG_GAMMA)) for c in (2.0, 0.5)}
    colors = {("random", "sum", False): "#0072B2", ("random", "concat", False): "#D55E00",
              ("random", "concat", True): "#009E73", ("shared", "concat", True): "#CC79A7"}
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.2), layout="constrained")
    for ax, c in zip(axes, (0.5, 2.0)):
        ax.axhline(0.0, color="#999999", lw=0.8)
        for key in CURVES:
            ax.plot(HEADS, theory[(c, key)], "-", color=colors[key], lw=1.4, label=LABELS[key])
            m, se = mc[(c, key)]
            ax.errorbar(np.array(HEADS) + 0.08 * (CURVES.index(key) - 1.5), m, 3 * se, fmt="o", ms=4, color=colors[key])
        ax.axhline(limits[c], color=colors[("shared", "concat", True)], ls=":", lw=1.2,
                   label="shared, v = 1/H: H -> infinity (free Poisson)")
        ax.set(xlabel="heads H (all tanh)", ylabel=f"E_att - E_RR at gamma = {FIG_GAMMA:g}",
               title=f"p/n = {c:g}: Monte Carlo at p = {FIG_P[c]} (n = {int(FIG_P[c] / c)}), ±3 SE")
        ax.grid(True, color="#dddddd", lw=0.5)
    axes[0].legend(fontsize=7, loc="lower left")
    fig.suptitle("Multi-head attention against ridge: lines theory (theory.MultiHeadModel), points simulation "
                 f"(snr = {SNR:g}, {FIG_TRIALS} trials)", fontsize=10)
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, dpi=130)
    lines = [f"Generated by `python docs/make_multi_head.py --part figure` ({machine()}; {time.time() - t0:.0f} s; "
             f"seed 4911, {FIG_TRIALS} trials, gamma = {FIG_GAMMA:g}, snr = {SNR:g}).", "",
             "![E_att - E_RR against the number of heads](figures/multi_head_heads.png)", "",
             "| p/n | curve | " + " | ".join(f"H = {H}" for H in HEADS) + " |",
             "|---|---|" + "---|" * len(HEADS)]
    for c in (0.5, 2.0):
        for key in CURVES:
            m, se = mc[(c, key)]
            cells = " | ".join(f"{t:+.4f} ({mm:+.4f} ± {s:.4f})" for t, mm, s in zip(theory[(c, key)], m, se))
            lines.append(f"| {c:g} | {LABELS[key]} | {cells} |")
    lines += ["", "Each cell: theory (simulation ± SE).  H -> infinity of shared heads with v = 1/H "
                  "(`theory.multi_head.shared_budget_limit`): " + ", ".join(f"{limits[c]:+.4f} at p/n = {c:g}"
                                                                           for c in (0.5, 2.0)) + "."]
    return "\n".join(lines)


#: step 1's check: the true and the Gaussian-equivalent kernels on the same draws (c = 2, p = 512)
LINEARISED = (("shared", "sum", None), ("shared", "concat", None), ("shared", "concat", 0.5), ("random", "sum", None),
              ("random", "concat", None), ("random", "concat", 0.5))


def linearised() -> str:
    """True and linearised kernels of tanh + gelu heads on the same draws, against the theory (step 1's check)."""
    t0 = time.time()
    c, p, trials, g = 2.0, 512, 48, (0.01, 0.1, 1.0)
    models = [model(c, ("tanh", "gelu"), h, r, v) for h, r, v in LINEARISED]
    out = simulate_model(models, p, list(g), MonteCarloSettings(trials, seed=4921, n_jobs=2),
                         kind=("true", "linearised", "ridge"))
    lines = [f"Generated by `python docs/make_multi_head.py --part linearised` ({machine()}; {time.time() - t0:.0f} s; "
             f"tanh + gelu heads, c = {c:g}, p = {p} (n = {int(p / c)}), {trials} trials, seed 4921, snr = {SNR:g}; "
             "every model on the same draws).", "",
             "| heads, readout | gamma | theory E_att - E_RR | true kernel | linearised kernel | true - linearised "
             "(paired) | z |", "|---|---|---|---|---|---|---|"]
    zs = []
    se_of = lambda d: d.std(ddof=1) / math.sqrt(trials)  # noqa: E731
    for j, (m, (h, r, v)) in enumerate(zip(models, LINEARISED)):
        th = np.asarray(m.error(np.array(g))) - m.ridge_error(np.array(g))
        for k, gk in enumerate(g):
            tr = out["true"][j, :, k] - out["ridge"][:, k]
            li = out["linearised"][j, :, k] - out["ridge"][:, k]
            diff = out["true"][j, :, k] - out["linearised"][j, :, k]
            z = diff.mean() / se_of(diff)
            zs.append(z)
            lines.append(f"| {h}, {r}{'' if v is None else f', v = {v:g}'} | {gk:g} | {th[k]:.4f} | "
                         f"{tr.mean():.4f} ± {se_of(tr):.4f} | {li.mean():.4f} ± {se_of(li):.4f} | "
                         f"{diff.mean():+.4f} ± {se_of(diff):.4f} | {z:+.1f} |")
    lines += ["", f"Largest |z| of true - linearised: {max(abs(z) for z in zs):.1f} (the three gammas of a row, and the "
                  "shared rows among themselves, share their draws)."]
    return "\n".join(lines)


def scan() -> str:
    """Theory only: the smallest E_att - E_RR with the budget v = 1/H over activations, snr, c, H and gamma."""
    t0 = time.time()
    g = np.array(GAMMAS)
    rows = []
    for snr in (1.0, 4.0):
        for c in (0.5, 2.0):
            for heads in ("random", "shared"):
                for act in ("tanh", "erf", "gelu"):
                    for H in (2, 4, 8):
                        m = MultiHeadModel(c, (act,) * H, snr, heads=heads, readout="concat", value_ratio=1 / H)
                        gap = np.asarray(m.error(g)) - m.ridge_error(g)
                        k = int(np.argmin(gap))
                        rows.append((float(gap[k]), snr, c, heads, act, H, float(g[k])))
    rows.sort()
    control = independent_noise_control()
    lines = [f"Generated by `python docs/make_multi_head.py --part scan` (theory only; {machine()}; "
             f"{time.time() - t0:.0f} s): `E_att - E_RR` of H identical heads concatenated with the budget v = 1/H, "
             f"over activation (tanh, erf, gelu), snr (1, 4), c (1/2, 2), heads (shared, random), H (2, 4, 8) and "
             f"gamma ({', '.join(f'{x:g}' for x in GAMMAS)}): {len(rows) * len(GAMMAS)} values, the smallest "
             f"{rows[0][0]:+.2e} ({rows[0][3]} {rows[0][4]} heads, H = {rows[0][5]}, snr = {rows[0][1]:g}, "
             f"c = {rows[0][2]:g}, gamma = {rows[0][6]:g}); {sum(r[0] <= 0 for r in rows)} settings where attention "
             "is at or below ridge.", "", control]
    return "\n".join(lines)


def independent_noise_control() -> str:
    """Negative control: the shared heads' pencil with Sigma's off-diagonal entries set to 0 (nonlinear parts taken
    independent across heads, as they are for random heads) against the derived, correlated one."""
    import theory.multi_head as mh

    g = np.array(GAMMAS)
    out = []
    for c, acts, v in ((2.0, ("tanh", "erf"), None), (2.0, ("tanh", "erf"), 0.5), (0.5, ("tanh", "erf", "gelu"), None)):
        m = model(c, acts, "shared", "concat", v)
        right = np.asarray(m.error(g)) - m.ridge_error(g)
        real = mh._kernel_constants
        try:  # the same pencil, the correlations dropped
            mh._kernel_constants = lambda a, cross=True: real(a, False)
            mh._solve_cached.cache_clear()
            wrong = np.asarray(m.solve(g).error) - m.ridge_error(g)
        finally:
            mh._kernel_constants = real
            mh._solve_cached.cache_clear()
        out.append(f"{name((c, acts, 'shared', 'concat', v))}: correlated "
                   + ", ".join(f"{x:.4f}" for x in right) + "; independent " + ", ".join(f"{x:.4f}" for x in wrong))
    return ("Negative control, `E_att - E_RR` at gamma = " + ", ".join(f"{x:g}" for x in GAMMAS) + " with the shared "
            "heads' nonlinear parts correlated (the derivation) and taken independent (Sigma diagonal): "
            + "; ".join(out) + ".")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("all", "table", "figure", "scan", "linearised"), default="all")
    args = parser.parse_args(argv)
    parts = {"figure": figure, "linearised": linearised, "scan": scan, "table": table}
    for part, make in parts.items():
        if args.part in ("all", part):
            write_block(part, make())
            print(f"written the {part} block of {PAGE}" + (f" and {FIGURE}" if part == "figure" else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
