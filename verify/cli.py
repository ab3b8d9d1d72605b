"""Command line: ``python -m verify [--profile quick|paper] [--only ID ...] [--list] [--seed S] [--json PATH]
[--report-dir DIR] [--strict] [--budget MINUTES] [--rounds N]``, ``python -m verify calibrate`` (its statistics and
files: :mod:`verify.calibrate`) and ``compare`` (:mod:`verify.compare`).

Without ``--budget`` / ``--rounds`` every check runs its fixed design once, side by side on the ``--jobs`` workers
(:mod:`verify.lanes`); with either, the verdicts are sequential (:mod:`verify.budget`).  Every option is checked
before the first check runs (:mod:`verify._preflight`): a bad one is one ``error: ...`` line, exit status 1.  SIGINT
or SIGTERM writes the finished checks (those it stopped as ERROR), prints one line saying how to resume and exits
:data:`EXIT_INTERRUPTED` (130), without a traceback."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import time
import traceback
import warnings
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator, Sequence

from rich.console import Console
from rich.table import Table
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from numerics.malloc import keep_freed_memory

from ._preflight import (EXIT_INTERRUPTED, add_run_options, check_writable_dir,
                         check_writable_file, command, interrupts, refuse, resume_line, run_context,
                         select_checks)
from .context import CheckContext
from .results import CheckResult, Verdict
from .budget import look_line, run_sequential, sequence_table
from .calibrate import calibrate, write_outputs
from .claim import claim_of, exit_status, rejudge_stored, run_check
from .compare import load_report, main as compare_main
from .lanes import LanesInterrupted, groups, lane_map, use_lanes
from .report import (TABLE_WIDTH, VERDICT_STYLE, markdown_report, print_results, print_summary, run_metadata,
                     to_json, write_json)
from .report_html import html_report
from .validation import check_items, path_or_none


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m verify",
        description="Check the claims of paper A (minimax rates for pairwise interactions) and paper B "
        "(interpolation error of nonlinear attention vs linear regression): predicted vs measured, "
        "tolerance, verdict.",
    )
    from . import __version__

    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}",
                   help="print the toolkit's version and exit")
    p.add_argument("--list", action="store_true",
                   help="list the claim ids, their papers and the claims in words, then exit")
    p.add_argument("--seed", type=int, default=0, help="base seed; every check derives its seeds from it (default 0)")
    p.add_argument("--json", type=Path, metavar="PATH", help="write the results as JSON to PATH")
    p.add_argument("--report-dir", type=Path, metavar="DIR",
                   help="write report.md, report.html and the checks' figures (PNG) to DIR ('none': no report, the "
                        "default)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show every comparison in the terminal table (default: one headline row per check)")
    p.add_argument("--strict", action="store_true",
                   help="count INCONCLUSIVE and NOT IMPLEMENTED as failures in the exit status")
    add_run_options(p)
    p.add_argument("--rejudge", type=Path, metavar="JSON",
                   help="judge the comparisons of a report written by --json again with the current rules "
                        "(no simulation) and print the verdicts")
    return p


def _progress_factory(progress: Progress):
    @contextlib.contextmanager
    def factory(description: str, total: int) -> Iterator[object]:
        task = progress.add_task(description, total=total)
        try:
            yield SimpleNamespace(advance=lambda n=1: progress.advance(task, n))
        finally:
            progress.remove_task(task)

    return factory


def main(argv: Sequence[str] | None = None) -> int:
    """Entry of ``python -m verify``; the exit status (:func:`verify.claim.exit_status`, :data:`EXIT_INTERRUPTED`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # the Monte Carlo and large fits reallocate tens of MB per trial: keep freed blocks in the heap (numerics.malloc)
    keep_freed_memory(children=True)
    # loky warns when it respawns an idle worker that timed out: nothing is lost (a crashed worker raises instead)
    warnings.filterwarnings("ignore", message="A worker stopped while some jobs were given to the executor")
    if argv[:1] == ["calibrate"]:
        return calibrate_main(argv[1:])
    if argv[:1] == ["compare"]:
        return compare_main(argv[1:])
    args = build_parser().parse_args(argv)
    console = Console(width=None if sys.stdout.isatty() else 180 if args.verbose else TABLE_WIDTH)
    if args.rejudge is not None:
        return _rejudge(args, console)
    specs = select_checks(args.only)
    if args.list:
        _print_list(console, specs)
        return 0
    args.report_dir = path_or_none(args.report_dir)  # "none", as for --cache-dir: no report
    base = run_context(args, seed=args.seed, report_dir=args.report_dir / "figures" if args.report_dir else None,
                       memo={})
    if args.json is not None:
        check_writable_file("--json", args.json)
    if args.report_dir is not None:
        check_writable_dir("--report-dir", args.report_dir)
    started = datetime.now(timezone.utc)
    with interrupts() as signals:
        if args.budget is not None or args.rounds is not None:
            results, stopped, extra = _run_sequential(specs, base, args, console, signals)
        elif use_lanes(specs, base):
            # the JSON says how the checks ran: a check's seconds in lanes are seconds of one core
            (results, stopped), extra = _run_lanes(specs, base, args.profile, console, signals), {"lanes": base.n_jobs}
        else:
            (results, stopped), extra = _run_checks(specs, base, args.profile, console, signals), {}
        signals["armed"] = False  # from here on a signal is noted, never raised: the outputs are written whole
        code = EXIT_INTERRUPTED if stopped is not None else exit_status(results, strict=args.strict)
        print_results(console, results, f"Verification report (profile {args.profile}, seed {args.seed})",
                      args.verbose)
        print_summary(console, results, code, args.strict)
        code = _write_outputs(args, argv, results, code, stopped, console, extra, started)
        if stopped is not None:
            n_done = sum(not str(r.error).startswith("INTERRUPTED") for r in results)
            files = " and ".join(str(p) for p in (args.json, args.report_dir) if p)
            kept = f"{n_done} finished check(s) written to {files or 'no file (no --json / --report-dir)'}"
            print(resume_line(stopped["signal"], stopped["check"] or "the run", kept, argv, base.cache_dir,
                              "a rerun recomputes everything"), file=sys.stderr, flush=True)
        elif signals["signal"] is not None:
            code = EXIT_INTERRUPTED  # arrived while the finished report was written: the report is whole
    return code


def _print_list(console: Console, specs: list) -> None:
    """``--list``: the claim ids, their papers and the claims in words."""
    t = Table("id", "paper", "claim", title="Claims (docs/claims.md)")
    for s in specs:
        t.add_row(s.id, s.paper, s.statement)
    console.print(t)


def _stopped(signals: dict, specs: list, results: list[CheckResult], check: str | None) -> dict:
    """The interrupt's record: its signal, the check it stopped and the checks that did not run."""
    listed = {r.id for r in results}
    return {"signal": signals["signal"] or "SIGINT", "check": check,
            "not_run": [s.id for s in specs if s.id not in listed]}


def _progress_bar(console: Console) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=True)


def _shown(res: CheckResult, progress: Progress, task: int) -> CheckResult:
    """``res``, its line printed above the progress bar and the bar advanced."""
    progress.console.print(f"[{VERDICT_STYLE[res.verdict]}]{res.verdict.value:>5}[/] {res.id}  ({res.runtime_s:.1f} s)")
    progress.advance(task)
    return res


def _run_checks(specs: list, base: CheckContext, profile: str, console: Console,
                signals: dict) -> tuple[list[CheckResult], dict | None]:
    """Run the checks in order with a progress display; ``(results, None)``, or after SIGINT / SIGTERM the
    finished results plus the interrupted check's ERROR result and :func:`_stopped`."""
    results: list[CheckResult] = []
    current, ctx, t0 = None, None, 0.0
    try:
        with _progress_bar(console) as progress:
            overall = progress.add_task(f"verify ({profile})", total=len(specs))
            for current in specs:
                ctx = dataclasses.replace(base, seeds_used=[], _progress_factory=_progress_factory(progress))
                progress.update(overall, description=f"verify ({profile}): {current.id}")
                t0 = time.perf_counter()
                results.append(_shown(run_check(current, ctx), progress, overall))
            current = None
    except KeyboardInterrupt:
        sig, elapsed = signals["signal"] or "SIGINT", time.perf_counter() - t0
        if current is not None and current.id not in {r.id for r in results}:
            # the check that the signal stopped: ERROR, its note says so (its finished cells are cached)
            results.append(_interrupted_result(current, sig, elapsed,
                                               list(dict.fromkeys(ctx.seeds_used)) if ctx is not None else []))
        return results, _stopped(signals, specs, results, None if current is None else current.id)
    return results, None


def _interrupted_result(claim, signal: str, elapsed: float, seeds: list) -> CheckResult:
    """The ERROR result of a check that a signal stopped (its finished cells are cached)."""
    note = (f"INTERRUPTED by {signal} after {elapsed:.1f} s: the check did not finish; the cells it finished "
            "are in the cache, and rerunning the same command resumes it")
    return CheckResult(id=claim.id, paper=claim.paper, claim=claim.statement, verdict=Verdict.ERROR,
                       runtime_s=elapsed, notes=note, seeds=seeds, error=f"INTERRUPTED by {signal}")


def _run_lanes(specs: list, base: CheckContext, profile: str, console: Console,
               signals: dict) -> tuple[list[CheckResult], dict | None]:
    """The checks' :func:`verify.lanes.groups` on ``base.n_jobs`` lanes (:func:`verify.lanes.lane_map`) with a
    progress bar; ``(results, None)`` in report order, or after SIGINT / SIGTERM the finished results, an ERROR
    result per check that had started, and :func:`_stopped`."""
    results: list[CheckResult] = []
    order, stopped = {c.id: i for i, c in enumerate(specs)}, None
    with _progress_bar(console) as progress:
        overall = progress.add_task(f"verify ({profile}, {base.n_jobs} checks at a time)", total=len(specs))
        try:
            lane_map([(base, g) for g in groups(specs, base.profile)], base.n_jobs,
                     lambda res, _: results.append(_shown(res, progress, overall)))
        except KeyboardInterrupt as exc:
            sig = signals["signal"] or "SIGINT"
            running = exc.running if isinstance(exc, LanesInterrupted) else []
            results += [_interrupted_result(claim_of(cid), sig, elapsed, []) for cid, _, elapsed in running]
            first = min((cid for cid, _, _ in running), key=order.get, default=None)
            stopped = _stopped(signals, specs, results, first)
        except Exception:  # noqa: BLE001 - a lane's worker died (out of memory, killed): the rest is ERROR
            error = traceback.format_exc()
            results += [CheckResult(id=c.id, paper=c.paper, claim=c.statement, verdict=Verdict.ERROR, error=error)
                        for c in specs if c.id not in {r.id for r in results}]
    return sorted(results, key=lambda r: order[r.id]), stopped


def _run_sequential(specs: list, base: CheckContext, args: argparse.Namespace, console: Console,
                    signals: dict) -> tuple[list[CheckResult], dict | None, dict]:
    """``--budget`` / ``--rounds``: :func:`verify.budget.run_sequential` with a progress line per look; the
    pooled results, the interrupt (as :func:`_run_checks`) and the run's ``sequential`` metadata."""
    seqs: list = []
    t0 = time.perf_counter()
    interrupted = False
    with Progress(TextColumn("{task.description}"), TimeElapsedColumn(), console=console, transient=True) as progress:
        task = progress.add_task(f"verify ({args.profile}, sequential)", total=None)
        ctx = dataclasses.replace(base, _progress_factory=_progress_factory(progress))

        def run(spec, c):
            progress.update(task, description=f"verify ({args.profile}, sequential): {spec.id} at seed {c.seed}")
            return run_check(spec, c)

        try:
            run_sequential(specs, ctx, budget_s=None if args.budget is None else 60.0 * args.budget,
                           rounds=args.rounds, run=run, on_look=lambda s: progress.console.print(look_line(s)),
                           sequences=seqs)
        except KeyboardInterrupt:
            interrupted = True
    results = [s.result() for s in seqs if s.looks]
    console.print(sequence_table(seqs))
    extra = {"sequential": {"budget_min": args.budget, "rounds": args.rounds,
                            "wall_s": round(time.perf_counter() - t0, 1),
                            "checks": {r.id: r.data.get("sequential") for r in results}}}
    return results, _stopped(signals, specs, results, None) if interrupted else None, extra


def _write_outputs(args: argparse.Namespace, argv: list[str], results: list[CheckResult], code: int,
                   stopped: dict | None, console: Console, extra: dict, started: datetime) -> int:
    """``--json`` and ``--report-dir``; the exit status (2 when an output cannot be written)."""
    meta = {**run_metadata(args.profile, args.seed, args.strict, argv, started), **extra}
    if stopped is not None:
        meta["interrupted"] = {**stopped, "resume": command(argv)}
    doc = {**to_json(results, meta), "exit_code": code}
    try:
        if args.json:
            write_json(args.json, doc)
            console.print(f"JSON written to {args.json}")
        if args.report_dir:
            args.report_dir.mkdir(parents=True, exist_ok=True)
            write_json(args.report_dir / "report.json", doc)
            (args.report_dir / "report.md").write_text(markdown_report(results, meta, code, args.report_dir))
            (args.report_dir / "report.html").write_text(html_report(results, meta, code, args.report_dir))
            console.print(f"report written to {args.report_dir / 'report.md'}")
    except OSError as exc:
        print(f"error: cannot write the report ({exc.strerror or exc}: {exc.filename}); exit status 2",
              file=sys.stderr)
        return 2
    return code


def _rejudge(args: argparse.Namespace, console: Console) -> int:
    """``--rejudge JSON``: verdicts of stored comparisons under the current rules (pure, no simulation)."""
    try:
        stored = load_report(args.rejudge)
    except ValueError as exc:
        refuse(str(exc))
    results = []
    for r in stored:
        verdict, comps = rejudge_stored(r)
        if verdict.value != r.get("verdict"):
            console.print(f"{r['id']}: {r.get('verdict')} -> {verdict.value}")
        results.append(CheckResult(id=r["id"], paper=r.get("paper", ""), claim=r.get("claim", ""), verdict=verdict,
                                   comparisons=comps, runtime_s=float(r.get("runtime_s", 0.0))))
    code = exit_status(results, strict=args.strict)
    print_results(console, results, f"Re-judged {args.rejudge}", args.verbose)
    print_summary(console, results, code, args.strict)
    return code


# ============================================================================ python -m verify calibrate
def calibrate_parser() -> argparse.ArgumentParser:
    """The options of ``python -m verify calibrate``."""
    p = argparse.ArgumentParser(prog="python -m verify calibrate",
                                description="Run checks on many seeds and measure their verdicts' error rates.")
    p.add_argument("--seeds", type=int, default=30, metavar="N", help="base seeds 0..N-1 (default 30)")
    p.add_argument("--first-seed", type=int, default=0, metavar="K",
                   help="start at base seed K: seeds K..K+N-1 (default 0; a further, independent set of experiments)")
    add_run_options(p)
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="records, calibration.json, calibration.md and calibration.png "
                        "(default .cache/calibrate/<profile>)")
    p.add_argument("--markdown", type=Path, metavar="PATH", help="also write the markdown table to PATH")
    return p


def calibrate_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m verify calibrate`` (:func:`verify.calibrate.calibrate`) (``argv``: ``None`` for ``sys.argv[1:]``, or a list of strings);
    exit status 1 when a check is MISCALIBRATED.

    SIGINT (Ctrl-C) or SIGTERM stops the run cleanly: the finished (check, seed) records stay in ``<out>/records``, one
    line says how to resume, and the exit status is :data:`verify._preflight.EXIT_INTERRUPTED` (130); the summary is
    written only by a run that finishes.
    """
    argv = list(sys.argv[1:] if argv is None else check_items("argv", argv, str, "strings (command-line words)"))
    args = calibrate_parser().parse_args(argv)
    specs = select_checks(args.only)
    if args.seeds < 2:
        refuse(f"--seeds must be >= 2, got {args.seeds}")
    if args.first_seed < 0:
        refuse(f"--first-seed must be >= 0, got {args.first_seed}")
    base = run_context(args)
    # the default folder of a sequential calibration says its mode (quick-budget3, quick-rounds2)
    mode = (f"-budget{args.budget:g}" if args.budget is not None else "") + \
        (f"-rounds{args.rounds}" if args.rounds is not None else "")
    out = args.out or Path(".cache") / "calibrate" / (args.profile + mode)
    for d in (out, out / "records"):
        check_writable_dir("--out", d)
    if args.markdown is not None:
        check_writable_file("--markdown", args.markdown)
    console = Console()
    t0 = time.perf_counter()
    done, total = [0], len(specs) * args.seeds

    def progress(cid: str, seed: int, rec: dict) -> None:
        done[0] += 1
        console.print(f"[{done[0]}/{total}] seed {seed} {cid}: {rec['verdict']} "
                      f"({rec['runtime_s']:.1f} s)")

    with interrupts() as signals:
        try:
            seeds = range(args.first_seed, args.first_seed + args.seeds)
            records = calibrate(specs, seeds, base, out, progress,
                                budget_s=None if args.budget is None else 60.0 * args.budget, rounds=args.rounds)
        except KeyboardInterrupt as exc:
            if isinstance(exc, LanesInterrupted):
                where = ", ".join(f"{cid} seed {seed}" for cid, seed, _ in exc.running)
            else:
                where = (f"{specs[done[0] % len(specs)].id} seed {args.first_seed + done[0] // len(specs)}"
                         if done[0] < total else "")
            print(resume_line(signals["signal"] or "SIGINT", where or "the run", f"{done[0]} of {total} (check, seed) "
                              f"runs finished, their records kept in {out / 'records'}", ["calibrate", *argv],
                              base.cache_dir, "unfinished runs restart", "it reuses them, and "),
                  file=sys.stderr, flush=True)
            return EXIT_INTERRUPTED
        signals["armed"] = False  # from here on a signal is noted, never raised: the summary is written whole
        code = _calibration_summary(records, args, argv, out, time.perf_counter() - t0, console)
    return EXIT_INTERRUPTED if signals["signal"] is not None else code


def _calibration_summary(records: dict[str, list[dict]], args: argparse.Namespace, argv: Sequence[str], out: Path,
                         wall: float, console: Console) -> int:
    """The calibration's files (:func:`verify.calibrate.write_outputs`) and its table in the terminal; 1 if a check
    is MISCALIBRATED."""
    import os
    import platform

    meta = {"command": "python -m verify calibrate " + " ".join(argv),
            "machine": f"{platform.platform()}, {os.cpu_count()} cores",
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "profile": args.profile,
            "n_seeds": args.seeds, "first_seed": args.first_seed, "wall_s": wall,
            "check_s": sum(float(r.get("runtime_s", 0.0)) for recs in records.values() for r in recs),
            "budget_min": args.budget, "rounds": args.rounds,
            "per_check_s": {cid: sum(float(r.get("runtime_s", 0.0)) for r in recs) / max(len(recs), 1)
                            for cid, recs in records.items()}}
    rows = write_outputs(records, meta, out, args.markdown)
    t = Table("check", "PASS", "FAIL", "INCONCL.", "false-FAIL 95% CI", "alpha", "mean z", "SD/SE", "flag",
              title=f"Calibration ({args.profile}, {args.seeds} seeds, {wall / 60:.1f} min)")
    for r in rows:
        t.add_row(r.id, str(r.counts["PASS"]), str(r.counts["FAIL"] + r.counts["ERROR"]),
                  str(r.counts["INCONCLUSIVE"]), f"[{r.fail_ci[0]:.3f}, {r.fail_ci[1]:.3f}]", f"{r.alpha:.2g}",
                  "" if r.mean_z is None else f"{r.mean_z:+.2f}", "" if r.sd_se is None else f"{r.sd_se:.2f}",
                  "[red]MISCALIBRATED[/]" if r.flags else "ok")
    console.print(t)
    console.print(f"written: {out / 'calibration.json'}, {out / 'calibration.md'}, {out / 'calibration.png'}")
    return 1 if any(r.flags for r in rows) else 0
