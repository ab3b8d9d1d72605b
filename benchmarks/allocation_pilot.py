"""The pilot of paper A's replicate allocation: per-level noise from reports, per-level cost measured here.

``python -m benchmarks.allocation_pilot --profile paper REPORT.json [REPORT.json ...] [--out PATH]``

For each rate check (A2, A3, A4) and each of its groups, writes the inputs of
:func:`numerics.allocation.allocate_replicates`:

- ``sd``: the replicate standard deviation of the judged quantity at each ``M`` level, the root mean square
  over the reports given (``log(error)``; for A3's balanced groups, which part (b) judges through the paired
  shift, ``log(error / error_known)``);
- ``cost``: the CPU seconds of one replicate at each level (``time.process_time`` of the check's own
  ``trial``, one torch thread, the mean of ``--repeats`` replicates with seeds outside every sweep's).

The checks read the file (``verify/checks/allocation_pilot.json``) and refuse a pilot whose ``M`` levels are
not their design's (regenerate it after a design change). The costs are this machine's; only their ratios
across levels matter to the allocation.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

PILOT_PATH = Path(__file__).resolve().parents[1] / "verify" / "checks" / "allocation_pilot.json"
CHECKS = ("A2", "A3", "A4")


def _judged_logs(check: str, label: str, group: dict, m: str) -> np.ndarray:
    err = np.asarray(group["errors"][m], dtype=float)
    if check == "A3" and "balanced" in label:
        return np.log(err / np.asarray(group["errors_known"][m], dtype=float))
    return np.log(err)


def pooled_sd(reports: list[dict], check: str) -> dict[str, dict]:
    """``label -> {"M": [...], "sd": [...]}`` of one check, the RMS over the reports of the per-level SDs."""
    out: dict[str, dict] = {}
    for rep in reports:
        res = next(r for r in rep["results"] if r["id"] == check)
        for label, g in res["data"].items():
            if not isinstance(g, dict) or "errors" not in g:
                continue
            ms = [str(m) for m in g["M"]]
            var = [float(np.var(_judged_logs(check, label, g, m), ddof=1)) for m in ms]
            slot = out.setdefault(label, {"M": [int(m) for m in ms], "var": []})
            if slot["M"] != [int(m) for m in ms]:
                raise ValueError(f"{check} {label}: the reports have different M levels")
            slot["var"].append(var)
    return {lab: {"M": s["M"], "sd": np.sqrt(np.mean(s["var"], axis=0)).round(5).tolist()}
            for lab, s in out.items()}


def level_costs(check: str, profile: str, repeats: int) -> dict[str, list[float]]:
    """CPU seconds of one replicate of ``check``'s trial at each level of each group (one torch thread)."""
    import torch

    from verify.checks import paper_a_rates as rates
    from verify.checks._paper_a_numerics import trial
    from verify.context import CheckContext

    torch.set_num_threads(1)
    design = {"A2": rates.design_a2, "A3": rates.design_a3, "A4": rates.design_a4}[check](
        CheckContext(profile=profile, seed=0))
    out = {}
    for g in design.groups:
        row = []
        for K, M in zip(g.K, g.M):
            cell = {**g.config, **design.trial_extra, "K": K, "M": M}
            t = []
            for r in range(repeats):
                t0 = time.process_time()
                trial(cell, 10**12 + r)  # no sweep draws these seeds (cell_seed is 32-bit)
                t.append(time.process_time() - t0)
            row.append(round(float(np.mean(t)), 4))
        out[g.label] = row
        print(f"  {check} {g.label}: CPU s per replicate {row}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.allocation_pilot", description=__doc__.split("\n")[0])
    ap.add_argument("reports", nargs="+", type=Path, help="report JSONs of the profile (python -m verify --json)")
    ap.add_argument("--profile", default="paper", choices=("quick", "paper"))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=PILOT_PATH)
    args = ap.parse_args(argv)
    reports = [json.loads(p.read_text()) for p in args.reports]
    if any(r.get("profile") != args.profile for r in reports):
        ap.error(f"every report must be of the {args.profile} profile")
    pilot = json.loads(args.out.read_text()) if args.out.exists() else {}
    for check in CHECKS:
        sds = pooled_sd(reports, check)
        costs = level_costs(check, args.profile, args.repeats)
        pilot.setdefault(check, {})[args.profile] = {
            lab: {**sds[lab], "cost": costs[lab]} for lab in costs}
    pilot.setdefault("_source", {})[args.profile] = {
        "command": "python -m benchmarks.allocation_pilot --profile " + args.profile + " "
                   + " ".join(p.name for p in args.reports), "seeds": [r.get("seed") for r in reports]}
    args.out.write_text(json.dumps(pilot, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
