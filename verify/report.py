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

#: the widest the compact terminal table gets (characters); ``-v`` adds the rule and time columns and no cap
TABLE_WIDTH = 100
#: longest headline name / predicted value in the compact table; longer ones end in "…" (full text: -v, report.md)
_HEADLINE_CHARS = 60
_VALUE_CHARS = 24
_MEASURED_CHARS = 38  # "measured ± unc." text: two lines of its 21-character column


def _short(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, ending in "…" when cut."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2:]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"


def results_table(results: Iterable[CheckResult], title: str = "Verification report", verbose: bool = False) -> Table:
    """A rich table of the results.

    Compact (default): one row per check, with the count of comparisons that hold and the headline comparison
    (:func:`shown_comparison`); it fits :data:`TABLE_WIDTH` columns, a row taking at most three lines.
    ``verbose``: one row per comparison, with its tolerance rule and the check's runtime.
    """
    t = Table(title=title, show_lines=False, expand=False)
    t.add_column("id", style="bold", no_wrap=True)
    t.add_column("verdict", no_wrap=not verbose)
    t.add_column("held", justify="right", no_wrap=True)
    t.add_column("comparison" if verbose else "headline")
    t.add_column("predicted", justify="right")
    t.add_column("measured ± unc.", justify="right")
    if verbose:
        t.add_column("tolerance rule")
        t.add_column("time", justify="right")
    rows = [row for r in results for row in _table_rows(r, verbose)]
    for row in rows:
        t.add_row(*row)
    if not verbose:
        _fit_columns(t, rows, TABLE_WIDTH)
    return t


def _table_rows(r: CheckResult, verbose: bool) -> list[list[str]]:
    """The table rows of one check: one (compact) or one per comparison (``verbose``)."""
    verdict = f"[{_STYLE[r.verdict]}]{r.verdict.value}[/]"
    time_txt = [f"{r.runtime_s:.1f}s" if r.verdict is not Verdict.NOT_IMPLEMENTED else ""] if verbose else []
    if not r.comparisons:
        note = "(no check yet)" if r.verdict is Verdict.NOT_IMPLEMENTED else (_last_line(r.error) or r.notes)
        note = note if verbose else _short(note, _HEADLINE_CHARS)
        return [[r.id, verdict, "", note, "", "", *([""] if verbose else []), *time_txt]]
    held = f"{sum(c.outcome == 'PASS' for c in r.comparisons)}/{len(r.comparisons)}"
    rows = []
    for k, c in enumerate(r.comparisons if verbose else [_headline(r)]):
        first = k == 0
        name = c.name if verbose else _short(c.name, _HEADLINE_CHARS)
        predicted = fmt_value(c.predicted) if verbose else _short(fmt_value(c.predicted), _VALUE_CHARS)
        rows.append([r.id if first else "", verdict if first else "", held if first else "",
                     _MARK.get(c.outcome, "") + name, predicted,
                     _measured_text(c) if verbose else _short(_measured_text(c), _MEASURED_CHARS),
                     *([c.tolerance] if verbose else []), *(time_txt if first else [""] * len(time_txt))])
    return rows


def _fit_columns(t: Table, rows: list[list[str]], width: int) -> None:
    """Fix the widths of the compact table ``t`` (columns id, verdict, held, headline, predicted, measured) so that
    it is at most ``width`` characters wide: predicted / measured get at most 12 / 21 characters, the headline the
    rest; a table that fits as it is keeps its natural widths."""
    from rich.text import Text

    natural = [max([Text.from_markup(row[k]).cell_len for row in rows] + [len(str(col.header))])
               for k, col in enumerate(t.columns)]
    frame = 3 * len(t.columns) + 1  # "│ " before each cell, " " after it, and the closing "│"
    if sum(natural) + frame <= width:
        return
    widths = natural[:3] + [0, min(natural[4], 12), min(natural[5], 21)]
    widths[3] = max(12, width - frame - sum(widths))
    for col, w in zip(t.columns, widths):
        col.width = w


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
        *_summary_lines(results),
        *_contents_lines(results),
    ]
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
        lines += _notes_lines(r.notes)
        if r.error:
            lines += ["```", r.error.rstrip(), "```", ""]
        for f in r.figures:
            rel = os.path.relpath(f, report_dir)
            lines += [f"![{r.id}]({rel})", ""]
        lines += [f"runtime {r.runtime_s:.2f} s; seeds: {', '.join(map(str, r.seeds)) or 'none'}", ""]
    return "\n".join(lines)


#: notes up to this many characters are shown whole; longer ones open with their first sentences this long at
#: most, the full text folded below (``<details>``) in paragraphs of about the same length
NOTES_SHORT_CHARS = 400


def _anchor(r: CheckResult) -> str:
    """The link target of ``r``'s section: the GitHub / pandoc identifier of its heading ``## ID: VERDICT``."""
    text = f"{r.id}: {r.verdict.value}".lower()
    return "".join(ch for ch in text if ch.isalnum() or ch in "-_ ").replace(" ", "-")


def _summary_lines(results: list[CheckResult]) -> list[str]:
    """The report's opening table: per check its verdict, headline comparison and measured vs predicted."""
    lines = ["| id | verdict | held | headline | measured vs predicted |", "|---|---|---|---|---|"]
    for r in results:
        link = f"[{r.id}](#{_anchor(r)})"
        if not r.comparisons:
            note = "no check yet" if r.verdict is Verdict.NOT_IMPLEMENTED else _last_line(r.error)
            lines.append(f"| {link} | **{r.verdict.value}** | | {_md(note)} | |")
            continue
        c = _headline(r)
        held = f"{sum(x.outcome == 'PASS' for x in r.comparisons)}/{len(r.comparisons)}"
        lines.append(f"| {link} | **{r.verdict.value}** | {held} | {_md(c.name)} | "
                     f"{_md(_measured_text(c))} vs {_md(fmt_value(c.predicted))} |")
    return lines + [""]


def _contents_lines(results: list[CheckResult]) -> list[str]:
    """The report's table of contents: a link to each check's section, with its claim."""
    lines = ["## Contents", ""]
    for r in results:
        lines.append(f"- [{r.id}: {r.verdict.value}](#{_anchor(r)}) - {_md(_short(r.claim, 110))}")
    return lines + [""]


def _sentences(text: str) -> list[str]:
    """``text`` split after each ". " (whitespace kept inside a sentence; the pieces rejoin to ``text``)."""
    out, start = [], 0
    for k in range(len(text) - 1):
        if text[k] == "." and text[k + 1] == " ":
            out.append(text[start:k + 1])
            start = k + 2
    return out + ([text[start:]] if text[start:] else [])


def _paragraphs(text: str, limit: int) -> list[str]:
    """``text`` (one or more blank-line separated blocks) in paragraphs of whole sentences of about ``limit``
    characters each (a longer sentence is its own paragraph)."""
    paras = []
    for block in (b.strip() for b in text.split("\n\n")):
        cur = ""
        for sent in _sentences(" ".join(block.split())):
            if cur and len(cur) + 1 + len(sent) > limit:
                paras.append(cur)
                cur = sent
            else:
                cur = f"{cur} {sent}" if cur else sent
        if cur:
            paras.append(cur)
    return paras


def _notes_lines(notes: str) -> list[str]:
    """A check's notes for the report: whole when short; else a short opening paragraph (its first sentences)
    and the full notes, in short paragraphs, folded below."""
    if not notes:
        return []
    if len(notes) <= NOTES_SHORT_CHARS:
        return [notes, ""]
    opening = _paragraphs(notes, NOTES_SHORT_CHARS)[0]
    if len(opening) > NOTES_SHORT_CHARS:
        opening = _short(opening, NOTES_SHORT_CHARS)
    full = [line for p in _paragraphs(notes, NOTES_SHORT_CHARS) for line in (p, "")]
    return [opening, "", "<details><summary>Full notes</summary>", "", *full, "</details>", ""]


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
