"""The finite-M model against the mean of many seeds, per configuration of A2-A4 (docs/paper_a_finite_m.md).

Usage (from the repository root; the trials come from the sweep cache when a calibration ran first)::

    python docs/make_finite_m_table.py --seeds 30 [--profile quick] [--se 0.002] [--validation-reps 200]

For each group of A2, A3 and A4 at the profile's design: the measured slope at every base seed (the checks' own
simulate step, cached cells reused), their mean and its SE (SD / sqrt(seeds)), the finite-M model's slope
(:func:`numerics.error_model.predict_log_error` at a per-level Monte Carlo SE ``--se``) and the a-priori
population model's slope (the former prediction), and the same for A3's paired shift.  A row passes when
``|mean - model| <= 2 hypot(SE_mean, SE_model)``.  Then the model out of sample (configurations no check uses)
against the estimator, and the numerical precision of part (b)'s window slopes.
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


def _rows(check: str, profile: str, seeds: int, se: float, cache: Path) -> list[dict]:
    from verify.checks import paper_a_rates as R
    from verify.checks.paper_a_rates import predict_groups
    from verify.context import CheckContext

    ctx = CheckContext(profile=profile, seed=0, cache_dir=cache, check_id=check)
    design = getattr(R, f"design_{check.lower()}")(ctx)
    pred = predict_groups(ctx, design.groups, check, design.trial_extra, known=design.known, finite_se=se)
    slopes: dict[str, list[float]] = {g.label: [] for g in design.groups}
    shifts: dict[str, list[float]] = {g.label: [] for g in design.groups}
    for s in range(seeds):
        ctx_s = CheckContext(profile=profile, seed=s, cache_dir=cache, check_id=check)
        for label, m in R._simulate(ctx_s, design).groups.items():
            slopes[label].append(m.fit.slope)
            if m.shift_fit is not None:
                shifts[label].append(m.shift_fit.slope)
    rows = []
    for g in design.groups:
        p = pred.groups[g.label]
        model, model_se = p.finite_slope
        rows.append(_row(check, g.label, "slope", slopes[g.label], model, model_se, p.slope))
        if p.finite_known:
            m, mse = p.finite_shift
            rows.append(_row(check, g.label, "shift", shifts[g.label], m, mse, p.slope - p.slope_np))
    return rows


def _row(check: str, label: str, what: str, values: list[float], model: float, model_se: float, apriori: float) -> dict:
    v = np.asarray(values)
    mean, se = float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))
    z = (mean - model) / math.hypot(se, model_se)
    return dict(check=check, label=label, what=what, mean=mean, se=se, model=model, model_se=model_se,
                apriori=apriori, z=z, z_apriori=(mean - apriori) / se, ok=abs(z) <= 2)


#: configurations no check uses (truth seed 123, 5 knots, N = 4): the model tested out of sample
VALIDATION = [({"d": d, "N": 4, "r": 1, "P": 3, "n_knots": 5, "truth_seed": 123, "law": "uniform", "sigma": 0.01},
               K, M) for d in (1, 2) for K, M in ((8, 200), (10, 600), (13, 2000))]


def _validation(reps: int) -> list[str]:
    """Model vs the estimator's mean log error over ``reps`` replicates (trial protocol) out of sample."""
    from numerics.error_model import DesignStopping, predict_log_error
    from verify.checks.paper_a_rates import model_for, trial

    out = ["", "## Out of sample: the model against the estimator", "",
           f"Mean log error over {reps} replicates (`verify.checks._paper_a_numerics.trial`, 2 starts, relative ridge "
           "1e-4, replicate seeds 1000..) against `predict_log_error` (designs to SE 0.005; seed 5); "
           "`sd` is the replicate SD of the log error.", "",
           "| d | K | M | simulation | model | difference (SE) | replicate sd |", "|---|---|---|---|---|---|---|"]
    for cfg, K, M in VALIDATION:
        q = predict_log_error(model_for(cfg), K, 1, M, ridge=1e-4, seed=5, stopping=DesignStopping(se_target=0.005))
        cell = {**cfg, "K": K, "M": M, "restarts": 2, "max_iter": 50, "n_pairs": 2**16, "ridge": 1e-4}
        le = np.log([trial(cell, 1000 + i)["err"] for i in range(reps)])
        se = le.std(ddof=1) / math.sqrt(reps)
        diff = le.mean() - q["log_error"]
        out.append(f"| {cfg['d']} | {K} | {M} | {le.mean():.4f} +- {se:.4f} | {q['log_error']:.4f} +- {q['se']:.4f} "
                   f"| {diff:+.4f} ({diff / math.hypot(se, q['se']):+.1f}) | {le.std(ddof=1):.3f} |")
    return out


def _window_precision(seeds: int = 4) -> list[str]:
    """SD over prediction seeds of the a-priori model's slope on a window beyond the design (WINDOW_SD's basis)."""
    from numerics.error_model import predict_error
    from numerics.slopes import design_slope
    from verify.checks.paper_a_rates import k_levels_to_M, model_for
    from verify.checks.paper_a_rates import GroupDesign, limit_window

    Ks = [20, 23, 26, 30, 35, 40]
    cases = [(2, 10, [20, 23, 27, 31, 36], [112, 224, 499, 994, 2100]), (10, 5, Ks, k_levels_to_M(Ks, 500, 2)),
             (1, 5, Ks, k_levels_to_M(Ks, 500, 2))]
    out = ["", "## Numerical precision of the window slopes (part (b))", "",
           f"The a-priori model's slope on the window `K x 4` of a design at {seeds} prediction seeds (sigma "
           "balanced at the window's middle level; truth seed 1, P = 3, 6 knots).", "",
           "| d | N | K | slopes | SD |", "|---|---|---|---|---|"]
    for d, N, K, M in cases:
        cfg = {"d": d, "N": N, "r": 1, "P": 3, "n_knots": 6, "truth_seed": 1, "law": "uniform", "sigma": 1.0}
        Kw, Mw = limit_window(GroupDesign(label="w", config=cfg, K=K, M=M), 2)
        model, slopes, s2 = model_for(cfg), [], None
        for seed in range(seeds):
            preds = [predict_error(model, k, 1, seed=1000 + seed) for k in Kw]
            s2 = s2 or preds[1]["B"] * Mw[1] / preds[1]["V_np"]
            slopes.append(design_slope(Mw, [q["B"] + s2 * (q["V_np"] + q["V_par"]) / m for q, m in zip(preds, Mw)]))
        out.append(f"| {d} | {N} | {Kw} | {', '.join(f'{x:.4f}' for x in slopes)} | {np.std(slopes, ddof=1):.4f} |")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=30)
    p.add_argument("--profile", default="quick", choices=("quick", "paper"))
    p.add_argument("--se", type=float, default=0.002, help="per-level Monte Carlo SE of the finite-M model")
    p.add_argument("--checks", nargs="+", default=["A2", "A3", "A4"])
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "paper_a_finite_m.md")
    p.add_argument("--validation-reps", type=int, default=200,
                   help="replicates per out-of-sample configuration (0: rewrite the table only, keep the page's "
                        "sections after it)")
    args = p.parse_args(argv)
    cache = ROOT / ".cache" / "verify" / args.profile
    t0 = time.perf_counter()
    rows = [r for c in args.checks for r in _rows(c, args.profile, args.seeds, args.se, cache)]
    lines = [
        "# The finite-M model of paper A's estimator against many seeds",
        "",
        f"Generated by `python docs/make_finite_m_table.py --seeds {args.seeds} --profile {args.profile} --se "
        f"{args.se}` on {platform.platform()} ({time.strftime('%Y-%m-%d')}, {time.perf_counter() - t0:.0f} s with "
        f"the trials cached by `python -m verify calibrate --seeds {args.seeds} --only A2 A3 A4 --profile "
        f"{args.profile}`). Base seeds 0..{args.seeds - 1}; the model is evaluated once (its designs at base seed 0, "
        f"to SE {args.se} per level) against the mean of every seed's measured slope.",
        "",
        "`mean` is the mean over seeds of the measured log-log slope (A3's `shift`: the paired slope of estimated-A "
        "over A*-known errors) with its SE (seed SD / sqrt(seeds)); `finite-M model` is the slope of the model's "
        "E log err at the design's levels (`predict_log_error`) with its Monte Carlo SE; `a-priori` is the population "
        "model B + V n/(n-p) / M that the checks used before. `z` = (mean - model) / hypot(SEs); a row is `ok` when "
        "|z| <= 2.",
        "",
        "| check | group | what | mean +- SE | finite-M model | z | a-priori model | z (a-priori) | ok |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['check']} | {r['label']} | {r['what']} | {r['mean']:.4f} +- {r['se']:.4f} | "
                     f"{r['model']:.4f} +- {r['model_se']:.4f} | {r['z']:+.1f} | {r['apriori']:.4f} | "
                     f"{r['z_apriori']:+.1f} | {'ok' if r['ok'] else '**no**'} |")
    n_ok = sum(r["ok"] for r in rows)
    lines += ["", f"{n_ok} of {len(rows)} rows within 2 SE."]
    if args.validation_reps:
        lines += _validation(args.validation_reps) + _window_precision()
    elif args.out.exists():  # the table only: the page's sections after it (from the first "## ") are kept
        old = args.out.read_text()
        cut = old.find("\n## ")
        if cut >= 0:
            lines += ["", old[cut + 1:].rstrip("\n")]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
