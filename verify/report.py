"""Rendering of check results: a rich terminal table, a markdown report, a JSON document."""

from __future__ import annotations

import json
import math
import os
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from rich.console import Console
from rich.table import Table

from .registry import CheckResult, Comparison, Verdict
from .verdicts import describe, rates_text

JSON_SCHEMA_VERSION = 2  # 2: comparisons carry kind, p_fail, p_pass, outcome; verdict INCONCLUSIVE

_STYLE = {
    Verdict.PASS: "bold green",
    Verdict.FAIL: "bold red",
    Verdict.INCONCLUSIVE: "bold yellow",
    Verdict.ERROR: "bold red",
    Verdict.INFO: "cyan",
    Verdict.NOT_IMPLEMENTED: "yellow",
}


def fmt_value(v: Any) -> str:
    """Short text for a predicted/measured/uncertainty value."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if v == 0:
            return "0"
        a = abs(v)
        if 1e-3 <= a < 1e4:
            return f"{v:.4g}"
        return f"{v:.3e}"
    if isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(t, (int, float)) for t in v):
        return f"[{fmt_value(float(v[0]))}, {fmt_value(float(v[1]))}]"
    return str(v)


def _measured_text(c: Comparison) -> str:
    m = fmt_value(c.measured)
    u = fmt_value(c.uncertainty)
    return f"{m} ± {u}" if u else m


def _headline(r: CheckResult) -> Comparison:
    return shown_comparison(r.comparisons)


def shown_comparison(comparisons: list[Comparison]) -> Comparison:
    """The comparison shown for a check in compact tables: the first FAILING one, else the first INCONCLUSIVE
    one, else the check's declared headline (``Comparison.headline``), else the first one."""
    for want in ("FAIL", "INCONCLUSIVE"):
        c = next((c for c in comparisons if c.outcome == want), None)
        if c is not None:
            return c
    return headline_comparison(comparisons)


def headline_comparison(comparisons: list[Comparison]) -> Comparison:
    """The declared headline comparison of a check (``headline=True``), else its first comparison."""
    return next((c for c in comparisons if c.headline), comparisons[0])


_MARK = {"PASS": "", "FAIL": "[red]✗[/] ", "INCONCLUSIVE": "[yellow]?[/] "}


def results_table(results: Iterable[CheckResult], title: str = "Verification report", verbose: bool = False) -> Table:
    """A rich table of the results.

    Compact (default): one row per check, with the count of comparisons that hold and the headline comparison
    (the first failing one, else the first). ``verbose``: one row per comparison.
    """
    t = Table(title=title, show_lines=False, expand=False)
    t.add_column("id", style="bold")
    t.add_column("verdict")
    t.add_column("held", justify="right")
    t.add_column("comparison" if verbose else "headline comparison")
    t.add_column("predicted", justify="right")
    t.add_column("measured ± unc.", justify="right")
    t.add_column("tolerance rule")
    t.add_column("time", justify="right")
    for r in results:
        verdict = f"[{_STYLE[r.verdict]}]{r.verdict.value}[/]"
        time_txt = f"{r.runtime_s:.1f}s" if r.verdict is not Verdict.NOT_IMPLEMENTED else ""
        if not r.comparisons:
            note = "(no check yet)" if r.verdict is Verdict.NOT_IMPLEMENTED else (_last_line(r.error) or r.notes)
            t.add_row(r.id, verdict, "", note, "", "", "", time_txt)
            continue
        held = f"{sum(c.outcome == 'PASS' for c in r.comparisons)}/{len(r.comparisons)}"
        shown = r.comparisons if verbose else [_headline(r)]
        for k, c in enumerate(shown):
            mark = _MARK.get(c.outcome, "")
            t.add_row(
                r.id if k == 0 else "",
                verdict if k == 0 else "",
                held if k == 0 else "",
                mark + c.name,
                fmt_value(c.predicted),
                _measured_text(c),
                c.tolerance if verbose else describe(c),
                time_txt if k == 0 else "",
            )
    return t


def summary_counts(results: Iterable[CheckResult]) -> dict[str, int]:
    counts = {v.value: 0 for v in Verdict}
    for r in results:
        counts[r.verdict.value] += 1
    return counts


def print_summary(console: Console, results: list[CheckResult], exit_code: int, strict: bool) -> None:
    counts = summary_counts(results)
    parts = [f"{k}: {n}" for k, n in counts.items() if n]
    console.print(" | ".join(parts))
    inc = [r.id for r in results if r.verdict is Verdict.INCONCLUSIVE]
    if inc:
        how = "counted as failures (--strict)" if strict else "not counted in the exit status (use --strict to count them)"
        console.print(f"[bold yellow]INCONCLUSIVE[/]: {', '.join(inc)} - the data decide neither way at the stated "
                      f"levels (the comparison says how much more data would); {how}")
    console.print(f"[dim]{rates_text()}[/]")
    ni = [r.id for r in results if r.verdict is Verdict.NOT_IMPLEMENTED]
    if ni:
        how = "counted as failures (--strict)" if strict else "not counted in the exit status (use --strict to count them)"
        console.print(f"[yellow]NOT IMPLEMENTED[/]: {', '.join(ni)} - {how}")
    for r in results:
        if r.verdict is Verdict.ERROR:
            console.print(f"[red]{r.id} raised:[/]\n{r.error}")
    console.print(f"exit status {exit_code}")


def to_json(results: list[CheckResult], meta: dict) -> dict:
    """The JSON document written by ``--json`` (schema version :data:`JSON_SCHEMA_VERSION`).

    ``meta`` (:func:`run_metadata`, plus ``"interrupted": {"signal", "check", "not_run", "resume"}`` after
    SIGINT / SIGTERM) comes first, then ``summary`` and ``results``."""
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        **meta,
        "summary": summary_counts(results),
        "results": [r.to_json() for r in results],
    }


def write_json(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")


def run_metadata(profile: str, seed: int, strict: bool, argv: list[str]) -> dict:
    import numpy
    import sympy

    try:
        import torch

        torch_version = torch.__version__
    except ImportError:  # pragma: no cover
        torch_version = None
    return {
        "profile": profile,
        "seed": seed,
        "strict": strict,
        "argv": argv,
        "started_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "versions": {"numpy": numpy.__version__, "sympy": sympy.__version__, "torch": torch_version},
    }


def markdown_report(results: list[CheckResult], meta: dict, exit_code: int, report_dir: Path) -> str:
    """A self-contained markdown report; figures are linked relative to ``report_dir``."""
    lines = [
        "# Verification report",
        "",
        f"- profile: `{meta['profile']}`, base seed: `{meta['seed']}`, strict: `{meta['strict']}`",
        f"- started (UTC): {meta['started_utc']}; python {meta['python']}; {meta['platform']}",
        f"- exit status: {exit_code}; " + ", ".join(f"{k}: {n}" for k, n in summary_counts(results).items() if n),
        f"- error rates: {rates_text()}",
        *_interrupted_lines(meta),
        "",
        "| id | verdict | claim | time (s) |",
        "|---|---|---|---|",
    ]
    for r in results:
        t = f"{r.runtime_s:.1f}" if r.verdict is not Verdict.NOT_IMPLEMENTED else ""
        lines.append(f"| {r.id} | **{r.verdict.value}** | {_md(r.claim)} | {t} |")
    lines.append("")
    for r in results:
        lines += [f"## {r.id}: {r.verdict.value}", "", f"*Claim (paper {r.paper}).* {_md(r.claim)}", ""]
        if r.verdict is Verdict.NOT_IMPLEMENTED:
            lines += ["No check exists for this claim yet.", ""]
            continue
        if r.comparisons:
            lines += ["| comparison | predicted | measured | uncertainty | tolerance rule | test | outcome |",
                      "|---|---|---|---|---|---|---|"]
            for c in r.comparisons:
                out = c.outcome if c.outcome == "PASS" else f"**{c.outcome}**"
                lines.append(
                    f"| {_md(c.name)} | {_md(fmt_value(c.predicted))} | {_md(fmt_value(c.measured))} | "
                    f"{_md(fmt_value(c.uncertainty))} | {_md(c.tolerance)} | {_md(describe(c))} | {out} |"
                )
            lines.append("")
        if r.notes:
            lines += [r.notes, ""]
        if r.error:
            lines += ["```", r.error.rstrip(), "```", ""]
        for f in r.figures:
            rel = os.path.relpath(f, report_dir)
            lines += [f"![{r.id}]({rel})", ""]
        lines += [f"runtime {r.runtime_s:.2f} s; seeds: {', '.join(map(str, r.seeds)) or 'none'}", ""]
    return "\n".join(lines)


def _interrupted_lines(meta: dict) -> list[str]:
    """The report's line about an interrupted run (``meta["interrupted"]``, set by the CLI), else none."""
    stop = meta.get("interrupted")
    if not stop:
        return []
    not_run = ", ".join(stop.get("not_run", [])) or "none"
    return [f"- **interrupted** by {stop['signal']} during {stop.get('check') or 'the run'}; not run: {not_run}; "
            f"resume with `{stop['resume']}` (the cache keeps the finished cells)"]


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _last_line(text: str | None) -> str:
    if not text:
        return ""
    return text.strip().splitlines()[-1]
