"""``python -m verify calibrate``: the error rates of the verdicts over many seeds (rules: docs/verdicts.md).

Each selected check runs at base seeds ``K .. K+N-1`` (same profile and design: a base seed redraws the data only).
Per check the table gives the PASS / FAIL / INCONCLUSIVE counts with Clopper-Pearson 95% intervals next to the
stated false-FAIL rate ``alpha``, and for its headline comparison the mean z and SD/SE (the seed-to-seed SD of the
measured value over its mean reported SE, with its chi-square 95% interval).  A check is MISCALIBRATED when its
false-FAIL interval lies above ``alpha``, or, with ``N >= 30``, when the headline SD/SE lies outside
:data:`SD_SE_BAND`.  Every (check, seed) record is stored as ``<out>/records/<id>_seed<k>.json`` as it finishes and
reused by a rerun.  The command line (options checked first, SIGINT / SIGTERM, the terminal table) is
:func:`verify.cli.calibrate_main`; :func:`write_outputs` writes the files of a calibration."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from scipy import stats

from .budget import run_sequential
from .context import CheckContext
from .figures import pyplot
from .lanes import groups, lane_map, use_lanes
from .results import CheckResult
from .claim import Claim, run_check
from .verdicts import ALPHA_CHECK

__all__ = ["CheckCalibration", "calibrate", "clopper_pearson", "summarise", "markdown_table"]


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

    def to_json(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()} | {
            "miscalibrated": bool(self.flags)}


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _birge_ratio(d: np.ndarray, se: np.ndarray) -> float:
    """SD/SE of estimates with different standard errors (a sequential calibration's seeds pool different numbers
    of replicates): ``sqrt(sum ((d - d_w) / se)^2 / (n - 1))`` about the inverse-variance mean ``d_w``; the plain
    ratio when the SEs are equal."""
    w = 1.0 / se**2
    centre = float(np.sum(w * d) / np.sum(w))
    return float(np.sqrt(np.sum(((d - centre) / se) ** 2) / (d.size - 1)))


def sequential_table(records: dict[str, list[dict]]) -> str:
    """Markdown: per check of a sequential calibration, the share of decided verdicts, the replicates pooled and
    when the run decided it (seconds from the start of its seed's run); ``""`` for a fixed-design calibration."""
    if not any(r.get("sequential") for recs in records.values() for r in recs):
        return ""
    lines = ["| check | decided | decided share (95% CI) | replicates: mean / max | decided at: median / max (s) |",
             "|---|---|---|---|---|"]
    for cid, recs in records.items():
        seq = [r.get("sequential") or {} for r in recs]
        decided = sum(r["verdict"] in ("PASS", "FAIL") for r in recs)
        lo, hi = clopper_pearson(decided, len(recs))
        reps = [s.get("replicates", 1) for s in seq]
        times = [s["decided_at_s"] for s in seq if s.get("decided_at_s") is not None]
        when = f"{np.median(times):.0f} / {max(times):.0f}" if times else ""
        lines.append(f"| {cid} | {decided}/{len(recs)} | {decided / len(recs):.2f} ({lo:.2f}, {hi:.2f}) | "
                     f"{np.mean(reps):.1f} / {max(reps)} | {when} |")
    return "\n".join(lines) + "\n"


def summarise(check_id: str, records: Sequence[dict], alpha: float = ALPHA_CHECK) -> CheckCalibration:
    """The calibration row of one check from its per-seed records (a non-empty list of stored records)."""
    n = len(records)
    verdicts = [r["verdict"] for r in records]
    counts = {v: verdicts.count(v) for v in ("PASS", "FAIL", "INCONCLUSIVE", "ERROR")}
    fail_ci = clopper_pearson(counts["FAIL"] + counts["ERROR"], n)
    ratios: list[float] = []
    head_name, mean_z, sd_se, sd_ci = "", None, None, None
    cs = records[0]["comparisons"]
    if cs and all(len(r["comparisons"]) == len(cs) for r in records):
        stochastic = [i for i, c in enumerate(cs) if c.get("kind", "exact") != "exact"]
        # headline: the declared one (same position in every seed's list), else the first stochastic one
        head_idx = next((i for i, c in enumerate(cs) if c.get("headline")), stochastic[0] if stochastic else 0)
        head_name = cs[head_idx]["name"]
        # a sequential calibration's seeds may pool different numbers of replicates: Birge's ratio
        mixed = len({(r.get("sequential") or {}).get("replicates", 1) for r in records}) > 1
        for i in stochastic if n >= 3 else []:
            rows = [r["comparisons"][i] for r in records]
            m, p, s = ([_num(c[k]) for c in rows] for k in ("measured", "predicted", "uncertainty"))
            if None in m + s:
                continue
            d = np.array(m) - np.array([0.0 if v is None else v for v in p])
            se = np.array(s)
            if not np.all(se > 0):
                continue
            ratios.append(_birge_ratio(d, se) if mixed else float(np.std(d, ddof=1) / np.mean(se)))
            if i == head_idx:
                mean_z, sd_se = float(np.mean(d / se)), ratios[-1]
                # chi-square interval of an SD from n values (SE taken as known)
                lo, hi = (math.sqrt(stats.chi2.ppf(q, n - 1) / (n - 1)) for q in (0.025, 0.975))
                sd_ci = (sd_se / hi, sd_se / lo)
    flags = []
    if fail_ci[0] > alpha:
        flags.append(f"false-FAIL interval [{fail_ci[0]:.3g}, {fail_ci[1]:.3g}] above alpha {alpha:.2g}")
    if n >= 30 and sd_se is not None and not SD_SE_BAND[0] <= sd_se <= SD_SE_BAND[1]:
        flags.append(f"headline SD/SE {sd_se:.2f} outside [{SD_SE_BAND[0]}, {SD_SE_BAND[1]}]")
    return CheckCalibration(check_id, n, counts, fail_ci, clopper_pearson(counts["INCONCLUSIVE"], n), alpha,
                            head_name, mean_z, sd_se, sd_ci, float(np.median(ratios)) if ratios else None, flags)


def calibrate(specs: Sequence[Claim], seeds: Sequence[int], base: CheckContext, out_dir: Path,
              progress=lambda cid, seed, rec: None, *, budget_s: float | None = None,
              rounds: int | None = None) -> dict[str, list[dict]]:
    """Run every claim of ``specs`` at every seed (records stored as they finish; existing records are reused).

    ``base``: the run's context (its seed replaced by each of ``seeds``); ``progress``: called with
    ``(check id, seed, record)``.  A record is written atomically as soon as its check finishes, so an interrupt
    (``KeyboardInterrupt``, raised by :func:`verify._preflight.interrupts` on SIGINT / SIGTERM) loses only the
    (check, seed) runs it stopped (one per lane, :mod:`verify.lanes`).  With ``budget_s`` (seconds per seed) and / or
    ``rounds``, each seed is a sequential run (:func:`verify.budget.run_sequential`) of the checks without a stored
    record; a record then also holds its ``sequential`` entry (rounds, replicates, when it was decided) and is reused
    only under the same budget."""
    rec_dir = out_dir / "records"
    rec_dir.mkdir(parents=True, exist_ok=True)
    mode = None if budget_s is None and rounds is None else {"budget_s": budget_s, "rounds": rounds}
    stored = {(s.id, seed): _stored_record(rec_dir / f"{s.id}_seed{seed}.json", base.profile, mode)
              for s in specs for seed in seeds}

    def record(res: CheckResult, ctx: CheckContext) -> dict:
        stored[(res.id, ctx.seed)] = _write_record(rec_dir / f"{res.id}_seed{ctx.seed}.json", res, ctx, mode)
        return stored[(res.id, ctx.seed)]

    if mode is None and use_lanes(list(specs), base, copies=len(seeds)):
        # every (seed, group of checks) a task of verify.lanes.lane_map: the numbers of --jobs 1
        for (cid, seed), rec in stored.items():
            if rec is not None:
                progress(cid, seed, rec)
        ctxs = {seed: dataclasses.replace(base, seed=seed, seeds_used=[], memo={}) for seed in seeds}
        tasks = [(ctxs[seed], [c for c in g if stored[(c.id, seed)] is None])
                 for g in groups(specs, base.profile) for seed in seeds]
        lane_map([t for t in tasks if t[1]], base.n_jobs, lambda res, ctx: progress(res.id, ctx.seed, record(res, ctx)))
    else:
        for seed in seeds:
            # memo: one run's in-memory cells (without a cache directory): B4 reads B7's draws
            ctx = dataclasses.replace(base, seed=seed, seeds_used=[], memo={})
            if mode is not None:  # one sequential run of the checks without a record
                todo = [s for s in specs if stored[(s.id, seed)] is None]
                for seq in run_sequential(todo, ctx, budget_s=budget_s, rounds=rounds):
                    record(seq.result(), ctx)
            for spec in specs:
                progress(spec.id, seed, stored[(spec.id, seed)] or record(run_check(spec, ctx), ctx))
    return {s.id: [stored[(s.id, seed)] for seed in seeds] for s in specs}


def _write_record(path: Path, res: CheckResult, ctx: CheckContext, mode: dict | None) -> dict:
    """The record of ``res`` (with its ``sequential`` entry under a sequential ``mode``), written atomically."""
    rec = {"id": res.id, "seed": ctx.seed, "verdict": res.verdict.value, "runtime_s": res.runtime_s,
           "error": res.error, "comparisons": [c.to_json() for c in res.comparisons], "profile": ctx.profile}
    if mode is not None:
        rec.update(mode=mode, sequential=res.data.get("sequential"))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec, default=str))
    tmp.replace(path)
    return rec


def _stored_record(path: Path, profile: str, mode: dict | None) -> dict | None:
    """The record stored at ``path`` when it is readable, of ``profile`` and of the run ``mode`` (``None``: the
    fixed design; else the sequential budget), else ``None`` (run it again)."""
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(rec, dict) and rec.get("profile") == profile and rec.get("mode") == mode
    return rec if ok else None


def markdown_table(rows: Sequence[CheckCalibration], meta: dict) -> str:
    """The calibration table as markdown (``docs/calibration.md``): ``rows`` a list of :class:`CheckCalibration`,
    ``meta`` a mapping with ``command``, ``machine``, ``date``, ``profile`` (strings), ``n_seeds`` (an integer
    ``>= 1``), ``check_s`` and ``wall_s`` (seconds) and optionally ``per_check_s`` (check id -> seconds)."""
    lines = [
        "# Calibration of the verdicts",
        "",
        f"Generated by `{meta['command']}` on {meta['machine']} ({meta['date']}); profile `{meta['profile']}`, "
        f"base seeds {meta.get('first_seed', 0)}..{meta.get('first_seed', 0) + meta['n_seeds'] - 1}; the checks "
        f"ran {meta['check_s'] / 60:.1f} min in all (records are "
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
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
    x = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    for key, col in (("PASS", "C2"), ("INCONCLUSIVE", "C1"), ("FAIL", "C3"), ("ERROR", "k")):
        v = np.array([r.counts[key] / max(r.n, 1) for r in rows])
        ax1.bar(x, v, bottom=bottom, color=col, label=key)
        bottom += v
    for i, r in enumerate(rows):
        if r.sd_se is not None:
            ax2.errorbar(i, r.sd_se, yerr=[[r.sd_se - r.sd_se_ci[0]], [r.sd_se_ci[1] - r.sd_se]], fmt="o", color="C0")
        if r.median_sd_se is not None:
            ax2.plot(i, r.median_sd_se, "x", color="C1")
    ax2.axhspan(*SD_SE_BAND, color="C2", alpha=0.15, label=f"accepted band {SD_SE_BAND}")
    ax2.axhline(1.0, color="k", lw=0.8)
    titles = (f"verdicts over {rows[0].n if rows else 0} seeds", "headline (o, 95% CI) and median over comparisons (x)")
    for ax, ylabel, title in zip((ax1, ax2), ("fraction of seeds", "seed-to-seed SD / mean SE"), titles):
        ax.set_xticks(x, [r.id for r in rows], fontsize=8)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(records: dict[str, list[dict]], meta: dict, out: Path, markdown: Path | None = None
                  ) -> list[CheckCalibration]:
    """Summarise ``records`` (check id -> per-seed records) and write ``calibration.json``, ``calibration.md`` and
    ``calibration.png`` to ``out`` (and the markdown, with a copy of the figure next to it, to ``markdown``); returns
    the rows.  ``meta``: the run's description (command, machine, date, profile, seeds, times, budget, rounds)."""
    rows = [summarise(cid, recs) for cid, recs in records.items()]
    (out / "calibration.json").write_text(json.dumps({"meta": meta, "checks": [r.to_json() for r in rows]}, indent=2,
                                                     default=str) + "\n")
    md = markdown_table(rows, meta)
    seq = sequential_table(records)
    if seq:
        limits = ([f"budget {meta['budget_min']:g} min per seed"] if meta.get("budget_min") is not None else []) + \
            ([f"at most {meta['rounds']} rounds"] if meta.get("rounds") is not None else [])
        md += ("\n## Sequential verdicts\n\nEach seed ran every check at its base design, then rounds of replicates "
               f"on the undecided ones (verify.sequential; {', '.join(limits)}). The table above judges the pooled "
               "replicates at the levels of the round reached.\n\n" + seq)
    (out / "calibration.md").write_text(md)
    _figure(rows, out / "calibration.png")
    if markdown:
        fig_path = markdown.with_suffix(".png")
        shutil.copyfile(out / "calibration.png", fig_path)
        markdown.write_text(md + f"\n![verdicts and SD/SE per check]({fig_path.name})\n")
    return rows
