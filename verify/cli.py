"""Command line: ``python -m verify [--profile quick|paper] [--only ID ...] [--list] [--seed S] [--json PATH]
[--report-dir DIR] [--strict]``."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from pathlib import Path
from typing import Iterator, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .claims import STUDIES
from .catalog import select
from .registry import CheckContext, CheckResult, Verdict, exit_status, run_check
from .report import markdown_report, print_summary, results_table, run_metadata, to_json, write_json

PROFILES = ("quick", "paper")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m verify",
        description="Check the claims of paper A (minimax rates for pairwise interactions) and paper B "
        "(interpolation error of nonlinear attention vs linear regression): predicted vs measured, "
        "tolerance, verdict.",
    )
    p.add_argument("--profile", choices=PROFILES, default="quick",
                   help="quick: minutes on a laptop (default); paper: the papers' scale")
    p.add_argument("--only", nargs="+", metavar="ID",
                   help="run only these claim ids (e.g. A1 B2) or informational studies (B7-lin)")
    p.add_argument("--list", action="store_true", help="list the claim ids and whether each has a check, then exit")
    p.add_argument("--seed", type=int, default=0, help="base seed; every check derives its seeds from it (default 0)")
    p.add_argument("--json", type=Path, metavar="PATH", help="write the results as JSON to PATH")
    p.add_argument("--report-dir", type=Path, metavar="DIR",
                   help="write report.md and the checks' figures (PNG) to DIR")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show every comparison in the terminal table (default: one headline row per check)")
    p.add_argument("--strict", action="store_true",
                   help="count INCONCLUSIVE and NOT IMPLEMENTED as failures in the exit status")
    p.add_argument("--cache-dir", type=Path, metavar="DIR",
                   help="on-disk cache for sweep cells (default .cache/verify/<profile>; 'none' disables)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="worker processes for sweeps (default: number of CPU cores)")
    p.add_argument("--device", default="cpu", help="torch device for the estimators: cpu (default) or cuda")
    p.add_argument("--executor", choices=("local", "dask"), default="local",
                   help="where sweep cells run: local processes (default) or a Dask cluster")
    p.add_argument("--rejudge", type=Path, metavar="JSON",
                   help="judge the comparisons of a report written by --json again with the current rules "
                        "(no simulation) and print the verdicts")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="Dask scheduler address (tcp://host:port); omitted with --executor dask: an in-process cluster")
    return p


def _progress_factory(progress: Progress):
    @contextlib.contextmanager
    def factory(description: str, total: int) -> Iterator[object]:
        task = progress.add_task(description, total=total)

        class _Bar:
            def advance(self, n: int = 1) -> None:
                progress.advance(task, n)

        try:
            yield _Bar()
        finally:
            progress.remove_task(task)

    return factory


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["calibrate"]:
        from .calibrate import main as calibrate_main

        return calibrate_main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.rejudge is not None:
        return _rejudge(args)
    # loky (joblib's process pool) warns when an idle worker timed out and it respawns one for queued work;
    # nothing is lost (a crashed worker raises instead), so the warning would only clutter the report
    warnings.filterwarnings("ignore", message="A worker stopped while some jobs were given to the executor")
    console = Console(width=None if sys.stdout.isatty() else 180)
    specs = select(args.only)

    if args.list:
        from rich.table import Table

        t = Table(title="Claims (docs/claims.md) and informational studies")
        for col in ("id", "paper", "check", "claim"):
            t.add_column(col)
        for s in specs:
            status = "informational" if s.id in STUDIES else ("implemented" if s.implemented else "[yellow]NOT IMPLEMENTED[/]")
            t.add_row(s.id, s.paper, status, s.claim)
        console.print(t)
        return 0

    if args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("error: --device cuda requested but torch.cuda.is_available() is False")
    if args.scheduler and args.executor != "dask":
        raise SystemExit("error: --scheduler needs --executor dask")

    cache_dir: Path | None
    if args.cache_dir is not None and str(args.cache_dir).lower() == "none":
        cache_dir = None
    else:
        cache_dir = args.cache_dir or Path(".cache") / "verify" / args.profile
    n_jobs = args.jobs or os.cpu_count() or 1
    figure_dir = args.report_dir / "figures" if args.report_dir else None

    results: list[CheckResult] = []
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    ) as progress:
        overall = progress.add_task(f"verify ({args.profile})", total=len(specs))
        for spec in specs:
            ctx = CheckContext(
                profile=args.profile, seed=args.seed, report_dir=figure_dir, cache_dir=cache_dir,
                device=args.device, n_jobs=n_jobs, executor=args.executor, scheduler=args.scheduler,
                _progress_factory=_progress_factory(progress),
            )
            progress.update(overall, description=f"verify ({args.profile}): {spec.id}")
            res = run_check(spec, ctx)
            results.append(res)
            if res.verdict is not Verdict.NOT_IMPLEMENTED:
                style = {"PASS": "green", "FAIL": "red", "ERROR": "red", "INFO": "cyan",
                         "INCONCLUSIVE": "yellow"}[res.verdict.value]
                progress.console.print(f"[{style}]{res.verdict.value:>5}[/] {res.id}  ({res.runtime_s:.1f} s)")
            progress.advance(overall)

    code = exit_status(results, strict=args.strict)
    console.print(results_table(results, title=f"Verification report (profile {args.profile}, seed {args.seed})",
                                verbose=args.verbose))
    print_summary(console, results, code, args.strict)

    meta = run_metadata(args.profile, args.seed, args.strict, argv)
    if args.json:
        write_json(args.json, {**to_json(results, meta), "exit_code": code})
        console.print(f"JSON written to {args.json}")
    if args.report_dir:
        args.report_dir.mkdir(parents=True, exist_ok=True)
        write_json(args.report_dir / "report.json", {**to_json(results, meta), "exit_code": code})
        (args.report_dir / "report.md").write_text(markdown_report(results, meta, code, args.report_dir))
        console.print(f"report written to {args.report_dir / 'report.md'}")
    return code


def _rejudge(args: argparse.Namespace) -> int:
    """``--rejudge JSON``: verdicts of stored comparisons under the current rules (pure, no simulation)."""
    import json

    from .registry import rejudge_stored

    console = Console(width=None if sys.stdout.isatty() else 180)
    try:
        doc = json.loads(Path(args.rejudge).read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"error: cannot read report {args.rejudge}: {exc}") from exc
    results = []
    for r in doc.get("results", []):
        spec_verdict = r.get("verdict")
        verdict, comps = rejudge_stored(r)
        res = CheckResult(id=r["id"], paper=r.get("paper", ""), claim=r.get("claim", ""), verdict=verdict,
                          comparisons=comps, runtime_s=float(r.get("runtime_s", 0.0)))
        if res.verdict.value != spec_verdict:
            console.print(f"{res.id}: {spec_verdict} -> {res.verdict.value}")
        results.append(res)
    code = exit_status(results, strict=args.strict)
    console.print(results_table(results, title=f"Re-judged {args.rejudge}", verbose=args.verbose))
    print_summary(console, results, code, args.strict)
    return code
