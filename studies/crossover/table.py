"""Step 1 table from OUT/sim_*_seed{seed}.npz.  Usage: python studies/crossover/table.py [--seed 0] [--parts]"""
import os as _os
HERE = _os.path.dirname(_os.path.abspath(__file__))
ROOT = _os.path.normpath(_os.path.join(HERE, "..", ".."))
OUT = _os.path.join(ROOT, ".cache", "crossover")  # the simulations' arrays (ignored by git)
import argparse, glob, math, sys
import numpy as np
sys.path.insert(0, ROOT)
ap = argparse.ArgumentParser(); ap.add_argument("--seed", type=int, default=0); ap.add_argument("--parts", action="store_true")
args = ap.parse_args()
LIN = {}
def lin(c, s):
    if (c, s) not in LIN:
        from theory import AttentionModel
        m = AttentionModel(c, "erf", 1.0, spike=(s, "aligned"))
        LIN[(c, s)] = float(m.error(1e-7)) - float(m.ridge_error(1e-7))
    return LIN[(c, s)]
def ms(x):
    return f"{x.mean():+.4f} ± {x.std(ddof=1) / math.sqrt(x.size):.4f}"
files = sorted(glob.glob(_os.path.join(OUT, f"sim_c*_T*_seed{args.seed}.npz")),
               key=lambda f: (-np.load(f)["meta"][0], np.load(f)["meta"][1]))
rows = []
for f in files:
    d = np.load(f); c, p, T = d["meta"][:3]; p, T = int(p), int(T)
    rr = d["ridge_signal"] + d["ridge_noise"]
    for j, s in enumerate(d["strengths"]):
        E = {k: d[f"{k}_signal"][:, j] + d[f"{k}_noise"][:, j] for k in ("true", "null", "sur1", "sur3", "sur5", "surinf", "xsur1", "xsur3", "xsur5", "xsurinf")}
        if args.parts:
            for part in ("signal", "noise"):
                tr = d[f"true_{part}"][:, j] - d[f"ridge_{part}"]
                rows.append((c, s, p, T, part, ms(tr), *(ms(d[f"{k}_{part}"][:, j] - d[f"true_{part}"][:, j]) for k in ("sur1", "sur3", "sur5", "surinf", "xsur1", "xsur3", "xsur5", "xsurinf"))))
        else:
            rows.append((c, s, p, T, s**3 / p, ms(E["true"] - rr), f"{lin(float(c), float(s)):+.4f}", ms(E["sur1"] - rr),
                         *(ms(E[k] - E["true"]) for k in ("sur1", "sur3", "sur5", "surinf")), ms(E["null"] - rr), ms(E["xsur1"] - rr),
                         *(ms(E[k] - E["true"]) for k in ("xsur1", "xsur3", "xsur5", "xsurinf"))))
rows.sort(key=lambda r: (-r[0], r[1], r[2]))
if args.parts:
    print("| c | s | p | trials | part | true - ridge | sur1 - true | sur3 - true | sur5 - true | surinf - true | xsur1 - true | xsur3 - true | xsur5 - true | xsurinf - true |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows: print(f"| {r[0]:.3g} | {r[1]:g} | {r[2]} | {r[3]} | {r[4]} | " + " | ".join(r[5:]) + " |")
else:
    print("| c | s | p | trials | s^3/p | true gap | lin. theory | sur1 gap | sur1 - true | sur3 - true | sur5 - true | surinf - true | null (s=0) gap | xsur1 gap | xsur1 - true | xsur3 - true | xsur5 - true | xsurinf - true |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows: print(f"| {r[0]:.3g} | {r[1]:g} | {r[2]} | {r[3]} | {r[4]:.3g} | " + " | ".join(r[5:]) + " |")
