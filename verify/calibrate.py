"""``python -m verify calibrate``: measure the error rates of the verdicts over many seeds.

Each selected check runs at base seeds ``0 .. N-1`` (same profile, same design: a base seed redraws the data
only).  Per check the table gives the counts of PASS / FAIL / INCONCLUSIVE with Clopper-Pearson 95% intervals
next to the check's stated false-FAIL rate ``alpha`` (:data:`verify.verdicts.ALPHA_CHECK`), and for its
headline comparison

- ``mean z``: the mean over seeds of ``(measured - predicted) / SE`` (a finite-size or design bias shows here);
- ``SD/SE``: the seed-to-seed standard deviation of ``measured`` over the mean reported SE (1 when the reported
  uncertainty is right), with its chi-square 95% interval;

and the median SD/SE over all its stochastic comparisons.  A check is flagged MISCALIBRATED when the lower end
of its false-FAIL interval lies above ``alpha`` (more FAILs than its stated rate allows, if the claim is true), or,
with ``N >= 30``, when the headline SD/SE lies outside ``[0.8, 1.25]`` (under a correct SE that band holds with
probability about 0.92 at N = 30, so a flag from it alone is a prompt to look, not proof).

Every (check, seed) result is stored as ``<out>/records/<id>_seed<k>.json`` as soon as it finishes, and the
simulation cells are cached as in the report, so an interrupted calibration resumes where it stopped.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from scipy import stats

from .catalog import select
from .registry import CheckContext, CheckResult, rejudge_stored, run_check
from .verdicts import ALPHA_CHECK

__all__ = ["CheckCalibration", "calibrate", "clopper_pearson", "rejudge", "summarise", "main", "markdown_table"]

#: SD/SE band outside which a check with N >= 30 seeds is flagged
SD_SE_BAND = (0.8, 1.25)


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact binomial interval for ``k`` successes in ``n`` trials.

    Examples
    --------
    >>> lo, hi = clopper_pearson(0, 30)
    >>> lo, round(hi, 4)
    (0.0, 0.1157)
    """
    a = 1 - level
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi


@dataclass
class CheckCalibration:
    """Calibration summary of one check over ``n`` seeds (see the module docstring)."""

    id: str
    n: int
    counts: dict[str, int]
    fail_ci: tuple[float, float]
    inconclusive_ci: tuple[float, float]
    alpha: float
    headline: str
    mean_z: float | None
    sd_se: float | None
    sd_se_ci: tuple[float, float] | None
    median_sd_se: float | None
    flags: list[str]

    @property
    def miscalibrated(self) -> bool:
        return bool(self.flags)

    def to_json(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()} | {
            "miscalibrated": self.miscalibrated}


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _record(res: CheckResult, seed: int) -> dict:
    return {"id": res.id, "seed": seed, "verdict": res.verdict.value, "runtime_s": res.runtime_s,
            "error": res.error, "comparisons": [c.to_json() for c in res.comparisons]}


def rejudge(record: dict) -> str:
    """Judge a stored record again with the current rules (no simulation): its verdict as a string."""
    return rejudge_stored(record)[0].value


def summarise(check_id: str, records: Sequence[dict], alpha: float = ALPHA_CHECK) -> CheckCalibration:
    """The calibration row of one check from its per-seed records."""
    n = len(records)
    verdicts = [r["verdict"] for r in records]
    counts = {v: verdicts.count(v) for v in ("PASS", "FAIL", "INCONCLUSIVE", "ERROR", "INFO")}
    n_fail = counts["FAIL"] + counts["ERROR"]
    fail_ci = clopper_pearson(n_fail, n)
    inc_ci = clopper_pearson(counts["INCONCLUSIVE"], n)
    # headline: the declared one (same position in every seed's list), else the first stochastic one
    lens = {len(r["comparisons"]) for r in records}
    head_idx, head_name = None, ""
    if records and records[0]["comparisons"] and len(lens) == 1:
        cs = records[0]["comparisons"]
        head_idx = next((i for i, c in enumerate(cs) if c.get("headline")), None)
        if head_idx is None:
            head_idx = next((i for i, c in enumerate(cs) if c.get("kind", "exact") != "exact"), 0)
        head_name = cs[head_idx]["name"]
    ratios: list[float] = []
    mean_z = sd_se = None
    sd_ci = None
    if head_idx is not None and len(lens) == 1:
        for i in range(next(iter(lens))):
            rows = [r["comparisons"][i] for r in records]
            if rows[0].get("kind", "exact") == "exact":
                continue
            m = [_num(c["measured"]) for c in rows]
            p = [_num(c["predicted"]) for c in rows]
            s = [_num(c["uncertainty"]) for c in rows]
            if any(v is None for v in m + s) or n < 3:
                continue
            d = np.array(m) - np.array([0.0 if v is None else v for v in p])
            se = np.array(s)
            if not np.all(se > 0):
                continue
            ratio = float(np.std(d, ddof=1) / np.mean(se))
            ratios.append(ratio)
            if i == head_idx:
                mean_z = float(np.mean(d / se))
                sd_se = ratio
                # chi-square interval of an SD from n values (SE taken as known)
                lo = math.sqrt(stats.chi2.ppf(0.025, n - 1) / (n - 1))
                hi = math.sqrt(stats.chi2.ppf(0.975, n - 1) / (n - 1))
                sd_ci = (ratio / hi, ratio / lo)
    flags = []
    if fail_ci[0] > alpha:
        flags.append(f"false-FAIL interval [{fail_ci[0]:.3g}, {fail_ci[1]:.3g}] above alpha {alpha:.2g}")
    if n >= 30 and sd_se is not None and not SD_SE_BAND[0] <= sd_se <= SD_SE_BAND[1]:
        flags.append(f"headline SD/SE {sd_se:.2f} outside [{SD_SE_BAND[0]}, {SD_SE_BAND[1]}]")
    return CheckCalibration(check_id, n, counts, fail_ci, inc_ci, alpha, head_name, mean_z, sd_se, sd_ci,
                            float(np.median(ratios)) if ratios else None, flags)


def calibrate(specs, seeds: Sequence[int], profile: str, out_dir: Path, cache_dir: Path | None, n_jobs: int,
              executor: str = "local", scheduler: str | None = None, progress=None) -> dict[str, list[dict]]:
    """Run every spec at every seed (records stored as they finish; existing records are reused)."""
    rec_dir = out_dir / "records"
    rec_dir.mkdir(parents=True, exist_ok=True)
    out: dict[str, list[dict]] = {s.id: [] for s in specs}
    for seed in seeds:
        for spec in specs:
            path = rec_dir / f"{spec.id}_seed{seed}.json"
            rec = None
            if path.exists():
                try:
                    rec = json.loads(path.read_text())
                    if rec.get("profile") != profile:
                        rec = None
                except (OSError, ValueError):
                    rec = None
            if rec is None:
                ctx = CheckContext(profile=profile, seed=seed, cache_dir=cache_dir, n_jobs=n_jobs,
                                   executor=executor, scheduler=scheduler)
                res = run_check(spec, ctx)
                rec = {**_record(res, seed), "profile": profile}
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps(rec, default=str))
                tmp.replace(path)
            out[spec.id].append(rec)
            if progress is not None:
                progress(spec.id, seed, rec)
    return out


def markdown_table(rows: Sequence[CheckCalibration], meta: dict) -> str:
    """The calibration table as markdown (``docs/calibration.md``)."""
    lines = [
        "# Calibration of the verdicts",
        "",
        f"Generated by `{meta['command']}` on {meta['machine']} ({meta['date']}); profile `{meta['profile']}`, "
        f"base seeds 0..{meta['n_seeds'] - 1}; the checks ran {meta['check_s'] / 60:.1f} min in all (records are "
        f"stored per check and seed and reused by a rerun; this invocation took {meta['wall_s'] / 60:.1f} min). "
        "Mean time per seed: " + ", ".join(f"{k} {v:.1f} s" for k, v in meta.get("per_check_s", {}).items()) + ".",
        "",
        "Each check ran once per base seed (the design is fixed; a seed redraws the data). `FAIL` counts are false "
        "FAILs if the claim is true; their Clopper-Pearson 95% interval stands next to the stated rate alpha. "
        "`mean z` is the mean over seeds of (measured - predicted)/SE of the headline comparison, `SD/SE` the "
        "seed-to-seed SD of its measured value over its mean reported SE (95% chi-square interval), `median SD/SE` "
        "the median over all the check's stochastic comparisons.",
        "",
        "| check | PASS | FAIL | INCONCLUSIVE | ERROR | false-FAIL 95% CI | alpha | INCONCLUSIVE 95% CI | headline | "
        "mean z | SD/SE | median SD/SE | flag |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        c = r.counts
        sd = "" if r.sd_se is None else f"{r.sd_se:.2f} [{r.sd_se_ci[0]:.2f}, {r.sd_se_ci[1]:.2f}]"
        lines.append(
            f"| {r.id} | {c['PASS']} | {c['FAIL']} | {c['INCONCLUSIVE']} | {c['ERROR']} | "
            f"[{r.fail_ci[0]:.3f}, {r.fail_ci[1]:.3f}] | {r.alpha:.2g} | [{r.inconclusive_ci[0]:.2f}, "
            f"{r.inconclusive_ci[1]:.2f}] | {r.headline.replace('|', '/')} | "
            f"{'' if r.mean_z is None else f'{r.mean_z:+.2f}'} | {sd} | "
            f"{'' if r.median_sd_se is None else f'{r.median_sd_se:.2f}'} | "
            f"{'**MISCALIBRATED**: ' + '; '.join(r.flags) if r.flags else 'ok'} |")
    return "\n".join(lines) + "\n"


def _figure(rows: Sequence[CheckCalibration], path: Path) -> None:
    from .figures import pyplot

    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
    ids = [r.id for r in rows]
    x = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    for key, col in (("PASS", "C2"), ("INCONCLUSIVE", "C1"), ("FAIL", "C3"), ("ERROR", "k")):
        v = np.array([r.counts[key] / max(r.n, 1) for r in rows])
        ax1.bar(x, v, bottom=bottom, color=col, label=key)
        bottom += v
    ax1.set_xticks(x, ids, fontsize=8)
    ax1.set_ylabel("fraction of seeds")
    ax1.set_title(f"verdicts over {rows[0].n if rows else 0} seeds", fontsize=9)
    ax1.legend(fontsize=7)
    for i, r in enumerate(rows):
        if r.sd_se is not None:
            ax2.errorbar(i, r.sd_se, yerr=[[r.sd_se - r.sd_se_ci[0]], [r.sd_se_ci[1] - r.sd_se]], fmt="o", color="C0")
        if r.median_sd_se is not None:
            ax2.plot(i, r.median_sd_se, "x", color="C1")
    ax2.axhspan(*SD_SE_BAND, color="C2", alpha=0.15, label=f"accepted band {SD_SE_BAND}")
    ax2.axhline(1.0, color="k", lw=0.8)
    ax2.set_xticks(x, ids, fontsize=8)
    ax2.set_ylabel("seed-to-seed SD / mean SE")
    ax2.set_title("headline (o, 95% CI) and median over comparisons (x)", fontsize=9)
    ax2.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m verify calibrate",
                                description="Run checks on many seeds and measure their verdicts' error rates.")
    p.add_argument("--only", nargs="+", metavar="ID", help="calibrate only these claim ids")
    p.add_argument("--seeds", type=int, default=30, metavar="N", help="base seeds 0..N-1 (default 30)")
    p.add_argument("--profile", choices=("quick", "paper"), default="quick")
    p.add_argument("--jobs", type=int, default=None, metavar="N", help="worker processes for the sweeps")
    p.add_argument("--executor", choices=("local", "dask"), default="local")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS")
    p.add_argument("--cache-dir", type=Path, metavar="DIR",
                   help="simulation cache (default .cache/verify/<profile>; 'none' disables)")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="records, calibration.json, calibration.md and calibration.png (default .cache/calibrate/<profile>)")
    p.add_argument("--markdown", type=Path, metavar="PATH", help="also write the markdown table to PATH")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m verify calibrate``; exit status 1 when a check is MISCALIBRATED."""
    import os
    import platform
    from datetime import datetime, timezone

    from rich.console import Console
    from rich.table import Table


    import warnings

    warnings.filterwarnings("ignore", message="A worker stopped while some jobs were given to the executor")
    args = build_parser().parse_args(argv)
    if args.seeds < 2:
        raise SystemExit("error: --seeds must be >= 2")
    specs = [s for s in select(args.only) if s.implemented and s.id[0] in "AB" and "-" not in s.id]
    out = args.out or Path(".cache") / "calibrate" / args.profile
    if args.cache_dir is not None and str(args.cache_dir).lower() == "none":
        cache_dir = None
    else:
        cache_dir = args.cache_dir or Path(".cache") / "verify" / args.profile
    console = Console()
    t0 = time.perf_counter()
    total = len(specs) * args.seeds
    done = [0]

    def progress(cid: str, seed: int, rec: dict) -> None:
        done[0] += 1
        console.print(f"[{done[0]}/{total}] seed {seed} {cid}: {rec['verdict']} ({rec['runtime_s']:.1f} s)")

    records = calibrate(specs, range(args.seeds), args.profile, out, cache_dir, args.jobs or os.cpu_count() or 1,
                        args.executor, args.scheduler, progress)
    wall = time.perf_counter() - t0
    rows = [summarise(cid, recs) for cid, recs in records.items()]
    check_s = sum(float(r.get("runtime_s", 0.0)) for recs in records.values() for r in recs)
    meta = {"command": "python -m verify calibrate " + " ".join(argv if argv is not None else []),
            "machine": f"{platform.platform()}, {os.cpu_count()} cores",
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "profile": args.profile,
            "n_seeds": args.seeds, "wall_s": wall, "check_s": check_s,
            "per_check_s": {cid: sum(float(r.get("runtime_s", 0.0)) for r in recs) / max(len(recs), 1)
                            for cid, recs in records.items()}}
    t = Table(title=f"Calibration ({args.profile}, {args.seeds} seeds, {wall / 60:.1f} min)")
    for col in ("check", "PASS", "FAIL", "INCONCL.", "false-FAIL 95% CI", "alpha", "mean z", "SD/SE", "flag"):
        t.add_column(col)
    for r in rows:
        t.add_row(r.id, str(r.counts["PASS"]), str(r.counts["FAIL"] + r.counts["ERROR"]), str(r.counts["INCONCLUSIVE"]),
                  f"[{r.fail_ci[0]:.3f}, {r.fail_ci[1]:.3f}]", f"{r.alpha:.2g}",
                  "" if r.mean_z is None else f"{r.mean_z:+.2f}", "" if r.sd_se is None else f"{r.sd_se:.2f}",
                  "[red]MISCALIBRATED[/]" if r.flags else "ok")
    console.print(t)
    doc = {"meta": meta, "checks": [r.to_json() for r in rows]}
    (out / "calibration.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    md = markdown_table(rows, meta)
    (out / "calibration.md").write_text(md)
    _figure(rows, out / "calibration.png")
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        fig_path = args.markdown.with_suffix(".png")
        _figure(rows, fig_path)
        args.markdown.write_text(md + f"\n![verdicts and SD/SE per check]({fig_path.name})\n")
    console.print(f"written: {out / 'calibration.json'}, {out / 'calibration.md'}, {out / 'calibration.png'}")
    return 1 if any(r.flags for r in rows) else 0
