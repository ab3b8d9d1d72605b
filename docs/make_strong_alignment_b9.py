"""Claim B9's sign diagram and its finite-size offsets beyond the check's sizes (docs/strong_alignment.md, "Claim B9").

Usage (from the repository root)::

    python docs/make_strong_alignment_b9.py [--seed 0] [--skip-offsets]

Prints four markdown tables:

1. the limit ``E_att(0) - E_RR(0)`` of :func:`theory.strong_alignment_gap` on a grid of ``(c, t)`` for erf, tanh and
   gelu (``snr = 1``): its sign is the phase diagram of the claim (``c >= 1``: both errors vanish, not tabulated);
2. the paired, label-averaged gap (:func:`numerics.strong_alignment_mc`) at ``p = 256 ... 2048`` for four settings
   of B9, with its offset to the limit and to the limit evaluated at ``t + 1/sqrt p`` (the spike's coefficient in the
   kernel at finite ``p``);
3. the bridge to a fixed order-one strength ``s``: the measured ``E_att - E_RR`` at ``gamma = 1e-3`` of the tables
   "Fixed strengths" and "Other activations" of docs/strong_alignment.md (quoted in :data:`MEASURED_FIXED_STRENGTH`
   with their standard errors; the commands that produce them are printed there) against the linearised theory
   (``AttentionModel.error - ridge_error``) and the strong-alignment limit at ``t = (s + 1)/sqrt p``;
4. the theory at ``gamma > 0`` (:func:`theory.strong_spike_attention_error` at ``t + 1/sqrt p``) against the paired,
   label-averaged Monte Carlo of attention at ``p = 512``, with ridge's theory and Monte Carlo beside it.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SNR = 1.0
PHASE_CS = (0.2, 1 / 3, 0.5, 0.8, 0.95)
PHASE_TS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0)
OFFSET_SETTINGS = (("erf", 0.5, 0.5), ("erf", 0.5, 1.0), ("erf", 0.5, 2.0), ("tanh", 0.5, 2.0))
OFFSET_SIZES = ((256, 32), (512, 16), (1024, 16), (2048, 8))


#: ``(c, s) -> [(p, E_att - E_RR, SE), ...]``, erf, ``snr = 1``, ``gamma = 1e-3``: quoted from the tables of
#: docs/strong_alignment.md ("Fixed strengths 2 and 4", and strength 8 of "Other activations"), whose commands
#: regenerate them
MEASURED_FIXED_STRENGTH = {
    (0.5, 2.0): [(128, -0.0139, 0.0028), (256, -0.0072, 0.0020), (512, -0.0051, 0.0014), (1024, -0.0008, 0.0013)],
    (0.5, 4.0): [(128, -0.0307, 0.0030), (256, -0.0230, 0.0021), (512, -0.0160, 0.0014), (1024, -0.0076, 0.0011)],
    (1 / 3, 2.0): [(128, -0.0206, 0.0021), (256, -0.0084, 0.0012), (512, -0.0024, 0.0011), (1024, -0.0018, 0.0009)],
    (1 / 3, 4.0): [(128, -0.0413, 0.0022), (256, -0.0261, 0.0014), (512, -0.0149, 0.0012), (1024, -0.0077, 0.0010)],
    (0.5, 8.0): [(128, -0.0547, 0.0030), (256, -0.0415, 0.0022), (512, -0.0350, 0.0014)],
}


def bridge_table() -> str:
    from theory import AttentionModel, strong_alignment_gap

    lines = ["| c | s | p | s^3/p | measured | linearised theory | strong limit at (s + 1)/sqrt p | closer |",
             "|---|---|---|---|---|---|---|---|"]
    for (c, s), points in MEASURED_FIXED_STRENGTH.items():
        model = AttentionModel(c, "erf", SNR, spike=(s, "aligned"))
        lin = float(model.error(1e-3)) - float(model.ridge_error(1e-3))
        for p, m, se in points:
            strong = strong_alignment_gap(c, "erf", SNR, (s + 1) / math.sqrt(p)).total
            closer = "strong" if abs(m - strong) < abs(m - lin) else "linearised"
            lines.append(f"| {c:.3g} | {s:g} | {p} | {s**3 / p:.2g} | {m:+.4f} ± {se:.4f} | {lin:+.4f} | {strong:+.4f} "
                         f"| {closer} |")
    return "\n".join(lines)


GAMMA_SETTINGS = (("erf", 0.5, 1.0), ("tanh", 1 / 3, 0.5), ("gelu", 0.5, 1.0), ("erf", 2.0, 1.0), ("erf", 2.0, 2.0))
GAMMAS = (1e-3, 1e-2, 1e-1, 1.0)
GAMMA_P, GAMMA_TRIALS = 512, 8


def gamma_table(base: int) -> str:
    from numerics import MonteCarloSettings, strong_alignment_mc
    from theory import AttentionModel, strong_spike_attention_error

    lines = ["| f | c | t | gamma | attention: theory | attention: Monte Carlo | ridge: theory | ridge: Monte Carlo |",
             "|---|---|---|---|---|---|---|---|"]
    for act, c, t in GAMMA_SETTINGS:
        theory = strong_spike_attention_error(list(GAMMAS), c, act, SNR, t + 1 / math.sqrt(GAMMA_P))
        settings = MonteCarloSettings(GAMMA_TRIALS, seed_of(base, act, c, t, GAMMA_P) + 1, labels="iid")
        out = strong_alignment_mc(act, c, t, GAMMA_P, list(GAMMAS), settings, snr=SNR)
        model = AttentionModel(c, act, SNR)
        for j, g in enumerate(GAMMAS):
            att, rr = out["attention"][:, j], out["ridge"][:, j]
            se = math.sqrt(GAMMA_TRIALS)
            lines.append(f"| {act} | {c:.3g} | {t:g} | {g:g} | {theory[j]:.4f} | {att.mean():.4f} ± "
                         f"{att.std(ddof=1) / se:.4f} | {float(model.ridge_error(g)):.4f} | {rr.mean():.4f} ± "
                         f"{rr.std(ddof=1) / se:.4f} |")
    return "\n".join(lines)


def seed_of(base: int, activation: str, c: float, t: float, p: int) -> int:
    """A data seed from integers and strings of the design only."""
    text = f"b9-offsets|{base}|{activation}|c={c:.6g}|t={t:g}|{p}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")


def phase_table() -> str:
    from theory import strong_alignment_gap

    lines = ["| f | c | " + " | ".join(f"t = {t:g}" for t in PHASE_TS) + " |",
             "|---|---|" + "---|" * len(PHASE_TS)]
    for act in ("erf", "tanh", "gelu"):
        for c in PHASE_CS:
            gaps = [strong_alignment_gap(c, act, SNR, t, nodes=24).total for t in PHASE_TS]
            lines.append(f"| {act} | {c:.3g} | " + " | ".join(f"{g:+.4f}" for g in gaps) + " |")
    return "\n".join(lines)


def offsets_table(base: int) -> str:
    from numerics import MonteCarloSettings, strong_alignment_mc
    from theory import strong_alignment_gap

    lines = ["| f | c | t | limit | p | trials | measured | measured - limit | measured - theory at t + 1/sqrt p |",
             "|---|---|---|---|---|---|---|---|---|"]
    for act, c, t in OFFSET_SETTINGS:
        limit = strong_alignment_gap(c, act, SNR, t).total
        for p, trials in OFFSET_SIZES:
            settings = MonteCarloSettings(trials, seed_of(base, act, c, t, p), labels="iid")
            out = strong_alignment_mc(act, c, t, p, [0.0], settings, snr=SNR)
            d = out["attention"][:, 0] - out["ridge"][:, 0]
            m, se = float(d.mean()), float(d.std(ddof=1) / math.sqrt(trials))
            eff = strong_alignment_gap(c, act, SNR, t + 1 / math.sqrt(p)).total
            lines.append(f"| {act} | {c:.3g} | {t:g} | {limit:+.4f} | {p} | {trials} | {m:+.4f} ± {se:.4f} | "
                         f"{m - limit:+.4f} | {m - eff:+.4f} |")
            print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="base seed of the offsets' data (default 0)")
    parser.add_argument("--skip-offsets", action="store_true", help="skip the offsets to p = 2048 (about 2 min instead of 8)")
    args = parser.parse_args(argv)
    t0 = time.time()
    print(phase_table())
    print()
    print(bridge_table())
    print()
    print(gamma_table(args.seed))
    if not args.skip_offsets:
        print()
        print(offsets_table(args.seed))
    print(f"\n({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
