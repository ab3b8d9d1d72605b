"""Derive the ridge interpolation error of paper B in sympy, step by step, and plot it.

Run::

    python examples/derive_ridge_error.py [OUTPUT.png]

The derivation itself lives in :func:`theory.ridge.derive_ridge_error`; this script walks through
it interactively: the Marchenko-Pastur fixed point, the rank-two Woodbury reduction of
``y^T Q y / n`` for ``X = mu y^T + Z``, implicit differentiation in ``gamma``, the comparison with
the first reconstruction's formula (docs/claims.md), the ``gamma -> 0`` limits on both sides of ``c = 1``, and a small
Monte Carlo check.  The figure (Agg backend) goes to the path given on the command line, or to a
temporary directory.
"""

from __future__ import annotations

import os
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
try:  # run from a checkout without installing the package
    import theory  # noqa: F401
except ImportError:  # pragma: no cover - depends on how the script is launched
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import sympy as sp  # noqa: E402

from theory.ridge import derive_ridge_error, ridge_error, ridge_error_limit, ridge_error_values  # noqa: E402
from theory.symbols import snr  # noqa: E402


def banner(text: str) -> None:
    print("\n" + text + "\n" + "-" * len(text))


def monte_carlo(p: int, n: int, s: float, gammas: np.ndarray, draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error of gamma^2/n y^T Q^2 y over ``draws`` samples of X = mu y^T + Z."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(draws):
        y = rng.choice([-1.0, 1.0], n)
        mu = rng.standard_normal(p)
        mu *= np.sqrt(s) / np.linalg.norm(mu)
        X = np.outer(mu, y) + rng.standard_normal((p, n))
        ev, V = np.linalg.eigh(X.T @ X / n)  # one eigendecomposition serves the whole gamma grid
        w = (V.T @ y) ** 2 / n
        out.append((gammas[:, None] ** 2 * w[None, :] / (ev[None, :] + gammas[:, None]) ** 2).sum(1))
    out = np.array(out)
    return out.mean(0), out.std(0, ddof=1) / np.sqrt(draws)


def main(argv: list[str]) -> str:
    der = derive_ridge_error()

    banner("Derivation (each step is a sympy computation in theory.ridge.derive_ridge_error)")
    for i, (what, expr) in enumerate(der.steps, 1):
        if "closed form" in what:
            print(f"[{i}] {what}: (long expression, {sp.count_ops(expr)} operations)")
            continue
        print(f"[{i}] {what}:")
        print("      " + sp.sstr(expr))

    banner("Result in terms of delta = delta(gamma)")
    sp.pprint(der.error_in_delta)
    print("identical to the first reconstruction:", der.matches_spec)

    banner("Limits as gamma -> 0")
    print("c < 1 :", ridge_error_limit(sp.Rational(1, 4), snr), "(at c = 1/4)")
    print("c > 1 :", ridge_error_limit(2, snr), "(interpolation; E = O(gamma^2))")

    banner("Values")
    for cv, sv in [(sp.Rational(1, 4), 1), (2, 1), (1, 0)]:
        for gv in (sp.Rational(1, 1000), sp.Rational(1, 10), 1):
            val = ridge_error(gv, cv, sv)
            print(f"  c = {str(cv):>4}, snr = {sv}, gamma = {str(gv):>6}:  E_RR = {float(val):.6f}")

    banner("Monte Carlo check (p, n small: a few seconds)")
    gammas = np.logspace(-3, 1, 9)
    sims = {}
    for cv, (p, n) in [(0.25, (75, 300)), (2.0, (400, 200))]:
        mean, se = monte_carlo(p, n, 1.0, gammas, draws=4, seed=1)
        sims[cv] = (mean, se)
        th = ridge_error_values(gammas, cv, 1.0)
        for g, m, e, t in zip(gammas, mean, se, th):
            print(f"  c = {cv}: gamma = {g:8.4f}  simulated {m:.4f} +- {e:.4f}   theory {t:.4f}")

    fig, ax = plt.subplots(figsize=(6, 4))
    grid = np.logspace(-4, 2, 200)
    for cv, col in [(0.25, "C0"), (1.0, "C1"), (2.0, "C2")]:
        for sv, ls in [(0.0, "--"), (1.0, "-")]:
            ax.loglog(grid, ridge_error_values(grid, cv, sv), ls, color=col, label=f"c={cv}, snr={sv}")
        if cv in sims:
            ax.errorbar(gammas, sims[cv][0], yerr=sims[cv][1], fmt="o", color=col, ms=4)
    ax.set_xlabel(r"$\gamma$")
    ax.set_ylabel(r"$E_{RR}$")
    ax.set_title("Ridge interpolation error (lines: theory; dots: simulation, snr=1)")
    ax.legend(fontsize=7)
    out = argv[1] if len(argv) > 1 else os.path.join(tempfile.mkdtemp(prefix="ridge_"), "ridge_error.png")
    fig.savefig(out, dpi=100, bbox_inches="tight")
    plt.close(fig)
    print("\nfigure saved to", out)
    return out


if __name__ == "__main__":
    main(sys.argv)
