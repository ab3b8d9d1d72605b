"""Rendering of check results: a rich terminal table (plain lines in a log), a markdown report, a JSON document;
the HTML page is :mod:`verify.report_html`.  A check's comparisons are shown as :mod:`verify.evidence` groups them
(each rule said once, the doubtful rows first), formulas typeset by :mod:`verify.typeset`."""

from __future__ import annotations

import json
import math
import os
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from rich.console import Console
from rich.markup import escape as escape_markup
from rich.table import Table

from theory.validation import ArgumentTypeError, as_int, check_choice, check_flag
from theory.validation import describe as describe_value

from .validation import MAX_SEED
from .context import PROFILES
from .results import CheckResult, Comparison, Verdict
from .validation import check_dir, check_items, check_mapping, check_text
from .evidence import evidence, folds, rows_word
from .typeset import latex_text
from .verdicts import describe, rates_text

JSON_SCHEMA_VERSION = 3  # 2: comparisons carry kind, p_fail, p_pass, outcome; verdict INCONCLUSIVE; 3: key

_STYLE = {
    Verdict.PASS: "bold green",
    Verdict.FAIL: "bold red",
    Verdict.INCONCLUSIVE: "bold yellow",
    Verdict.ERROR: "bold red",
    Verdict.INFO: "cyan",
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


def measured_text(c: Comparison) -> str:
    """``"measured ± uncertainty"`` of a comparison (only the measured value when it has no uncertainty)."""
    _comparison("c", c)
    m = fmt_value(c.measured)
    u = fmt_value(c.uncertainty)
    return f"{m} ± {u}" if u else m


def _headline(r: CheckResult) -> Comparison:
    return shown_comparison(r.comparisons)


def shown_comparison(comparisons: list[Comparison]) -> Comparison:
    """The comparison shown for a check in compact tables: the first FAILING one, else the first INCONCLUSIVE
    one, else the check's declared headline (``Comparison.headline``), else the first one."""
    comparisons = _comparisons("comparisons", comparisons)
    for want in ("FAIL", "INCONCLUSIVE"):
        c = next((c for c in comparisons if c.outcome == want), None)
        if c is not None:
            return c
    return headline_comparison(comparisons)


def headline_comparison(comparisons: list[Comparison]) -> Comparison:
    """The declared headline comparison of a check (``headline=True``), else its first comparison."""
    comparisons = _comparisons("comparisons", comparisons)
    return next((c for c in comparisons if c.headline), comparisons[0])


_MARK = {"PASS": "", "FAIL": "[red]✗[/] ", "INCONCLUSIVE": "[yellow]?[/] "}

#: the widest the compact terminal table gets (characters); ``-v`` adds the statistic, rule and time columns and no
#: cap
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
    ``verbose``: one row per comparison in reading order (FAIL, INCONCLUSIVE and near misses first,
    :func:`verify.evidence.evidence`), with its test statistic, the label of its rule (the rules, each said once:
    :func:`rules_lines`) and the check's runtime.
    """
    results = _results("results", results)
    check_text("title", title)
    verbose = check_flag("verbose", verbose)
    t = Table(title=title, show_lines=False, expand=False)
    t.add_column("id", style="bold", no_wrap=True)
    t.add_column("verdict", no_wrap=not verbose)
    t.add_column("held", justify="right", no_wrap=True)
    t.add_column("comparison" if verbose else "headline")
    t.add_column("predicted", justify="right")
    t.add_column("measured ± unc.", justify="right")
    if verbose:
        t.add_column("z / margin", justify="right", no_wrap=True)
        t.add_column("rule", no_wrap=True)
        t.add_column("time", justify="right")
    rows = [row for r in results for row in _table_rows(r, verbose)]
    for row in rows:
        t.add_row(*row)
    if not verbose:
        _fit_columns(t, rows, TABLE_WIDTH)
    return t


def _table_rows(r: CheckResult, verbose: bool) -> list[list[str]]:
    """The table rows of one check: one (compact) or one per comparison in reading order (``verbose``)."""
    verdict = f"[{_STYLE[r.verdict]}]{r.verdict.value}[/]"
    time_txt = [f"{r.runtime_s:.1f}s"] if verbose else []
    if not r.comparisons:
        note = _last_line(r.error) or r.notes
        note = escape_markup(note if verbose else _short(note, _HEADLINE_CHARS))
        return [[r.id, verdict, "", note, "", "", *(["", ""] if verbose else []), *time_txt]]
    held = f"{sum(c.outcome == 'PASS' for c in r.comparisons)}/{len(r.comparisons)}"
    if not verbose:
        c = _headline(r)
        return [[r.id, verdict, held, _MARK.get(c.outcome, "") + escape_markup(_short(c.name, _HEADLINE_CHARS)),
                 escape_markup(_short(fmt_value(c.predicted), _VALUE_CHARS)),
                 escape_markup(_short(measured_text(c), _MEASURED_CHARS))]]
    rows = []
    for k, row in enumerate(evidence(r.comparisons)[1]):
        c, first = row.comparison, k == 0
        mark = "[blue]~[/] " if row.near else _MARK.get(c.outcome, "")
        rows.append([r.id if first else "", verdict if first else "", held if first else "",
                     mark + escape_markup(c.name), escape_markup(fmt_value(c.predicted)),
                     escape_markup(measured_text(c)), row.statistic, row.rule, time_txt[0] if first else ""])
    return rows


def rules_lines(results: Iterable[CheckResult]) -> list[str]:
    """The rules of the verbose table, each once: ``"ID R1 (n rows): the rule in words"`` per rule of each check
    (plain text; the table's rows carry the labels)."""
    results = _results("results", results)
    return [f"{r.id} {g.label} ({rows_word(len(g.rows))}): {g.text}" for r in results if r.comparisons
            for g in evidence(r.comparisons)[0]]


def plain_lines(results: Iterable[CheckResult], title: str = "Verification report") -> list[str]:
    """The compact table as plain lines, one per check (for a log: stdout not a terminal): id, verdict, how many
    comparisons hold, and the headline comparison with ``measured ± SE vs predicted``, unshortened."""
    results = _results("results", results)
    check_text("title", title)
    wid = max([len(r.id) for r in results] + [2])
    lines = [title]
    for r in results:
        held, headline, numbers = summary_cells(r)
        what = f"{headline}: {numbers}" if numbers else headline
        lines.append(f"{r.id:<{wid}}  {r.verdict.value:<12}  {held:>7}  {what}".rstrip())
    return lines


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
    """The number of results of each verdict (every :class:`Verdict` value, zeros included)."""
    results = _results("results", results)
    counts = {v.value: 0 for v in Verdict}
    for r in results:
        counts[r.verdict.value] += 1
    return counts


def print_results(console: Console, results: list[CheckResult], title: str, verbose: bool = False) -> None:
    """The results on ``console``: on a terminal the compact table (:func:`results_table`); in a log (the console is
    not a terminal: CI, ``| tee``) one plain line per check (:func:`plain_lines`), never wrapped; with ``verbose``
    the table of every comparison, then its rules, each once (:func:`rules_lines`)."""
    if not isinstance(console, Console):
        raise ArgumentTypeError(f"console must be a rich Console, got {describe_value(console)}")
    results, verbose = _results("results", results), check_flag("verbose", verbose)
    check_text("title", title)
    if not verbose and not console.is_terminal:
        for line in plain_lines(results, title):
            console.print(line, soft_wrap=True, markup=False, highlight=False)
        return
    console.print(results_table(results, title=title, verbose=verbose))
    if verbose:
        for line in rules_lines(results):
            console.print(line, soft_wrap=not console.is_terminal, markup=False, highlight=False)


def print_summary(console: Console, results: list[CheckResult], exit_code: int, strict: bool) -> None:
    """The lines after the table: verdict counts, INCONCLUSIVE and NOT IMPLEMENTED checks, error rates, errors and
    the exit status (``console``: a rich Console; ``exit_code``: an integer in ``[0, 255]``); in a log (the console
    is not a terminal) each line whole, never wrapped."""
    if not isinstance(console, Console):
        raise ArgumentTypeError(f"console must be a rich Console, got {describe_value(console)}")
    results = _results("results", results)
    exit_code, strict = as_int("exit_code", exit_code, 0, 255), check_flag("strict", strict)
    soft = not console.is_terminal
    counts = summary_counts(results)
    parts = [f"{k}: {n}" for k, n in counts.items() if n]
    console.print(" | ".join(parts), soft_wrap=soft)
    inc = [r.id for r in results if r.verdict is Verdict.INCONCLUSIVE]
    if inc:
        how = "counted as failures (--strict)" if strict else "not counted in the exit status (use --strict to count them)"
        console.print(f"[bold yellow]INCONCLUSIVE[/]: {', '.join(inc)} - the data decide neither way at the stated "
                      f"levels (the comparison says how much more data would); {how}", soft_wrap=soft)
    console.print(f"[dim]{rates_text()}[/]", soft_wrap=soft)
    for r in results:
        if r.verdict is Verdict.ERROR:
            console.print(f"[red]{r.id} raised:[/]\n{escape_markup(r.error or '')}", soft_wrap=soft)
    console.print(f"exit status {exit_code}", soft_wrap=soft)


def to_json(results: list[CheckResult], meta: dict) -> dict:
    """The JSON document written by ``--json`` (schema version :data:`JSON_SCHEMA_VERSION`).

    ``meta`` (:func:`run_metadata`, plus ``"interrupted": {"signal", "check", "not_run", "resume"}`` after
    SIGINT / SIGTERM) comes first, then ``summary`` and ``results``."""
    results = _results("results", results)
    meta = check_mapping("meta", meta)
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        **meta,
        "summary": summary_counts(results),
        "results": [r.to_json() for r in results],
    }


def write_json(path: Path, doc: dict) -> None:
    """Write ``doc`` (a mapping of JSON values: no NaN, infinities or objects) to the file ``path`` (its directory
    is created)."""
    path = check_dir("path", path)
    if path is None or path.is_dir():
        raise ValueError(f"path must be the path of a file, got {describe_value(path)}")
    doc = check_mapping("doc", doc)
    try:
        text = json.dumps(doc, indent=2, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"doc must hold JSON values only (numbers, strings, lists, dicts; no NaN): {exc}") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def run_metadata(profile: str, seed: int, strict: bool, argv: list[str], started: datetime | None = None) -> dict:
    """The run's facts for the reports: profile, base seed, strict, the command line (``argv``, a list of strings),
    start time (``started``, a timezone-aware datetime; default: now) and finish time (now), Python, platform, CPU
    count and library versions."""
    check_choice("profile", profile, PROFILES)
    now = datetime.now(timezone.utc)
    if started is None:
        started = now
    elif not isinstance(started, datetime) or started.tzinfo is None:
        raise ArgumentTypeError(f"started must be None or a timezone-aware datetime, got {describe_value(started)}")
    seed, strict = as_int("seed", seed, 0, MAX_SEED), check_flag("strict", strict)
    argv = check_items("argv", argv, str, "strings (command-line words)")
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
        "started_utc": started.astimezone(timezone.utc).isoformat(timespec="seconds"),
        "finished_utc": now.isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "versions": {"numpy": numpy.__version__, "sympy": sympy.__version__, "torch": torch_version},
    }


def markdown_report(results: list[CheckResult], meta: dict, exit_code: int, report_dir: Path) -> str:
    """A self-contained markdown report; figures are linked relative to ``report_dir``."""
    results = _results("results", results)
    meta, exit_code, report_dir = page_args(meta, exit_code, report_dir)
    lines = [
        "# Verification report",
        "",
        f"- profile: `{meta['profile']}`, base seed: `{meta['seed']}`, strict: `{meta['strict']}`",
        f"- started (UTC): {meta['started_utc']}{_finished(meta)}; python {meta['python']}; {meta['platform']}",
        f"- exit status: {exit_code}; " + ", ".join(f"{k}: {n}" for k, n in summary_counts(results).items() if n),
        f"- error rates: {rates_text()}",
        *_interrupted_lines(meta),
        "",
        *_summary_lines(results),
        *_contents_lines(results),
    ]
    for r in results:
        lines += _md_section(r, report_dir)
    return "\n".join(lines)


def _md_section(r: CheckResult, report_dir: Path) -> list[str]:
    """One check's section of report.md: verdict and headline, claim, error, figures, notes, then its rules (each
    once) and its compact table of comparisons (each row's rule with its numbers folded below it)."""
    lines = [f"## {r.id}: {r.verdict.value}", "", _md_headline(r), "", f"*Claim (paper {r.paper}).* {_md(r.claim)}", ""]
    if r.error:
        lines += ["```", r.error.rstrip(), "```", ""]
    for f in r.figures:
        lines += [f"![{r.id}]({os.path.relpath(f, report_dir)})", ""]
    lines += _notes_lines(r.notes)
    if r.comparisons:
        lines += _md_evidence(r.comparisons)
    return lines + [f"runtime {r.runtime_s:.2f} s; seeds: {', '.join(map(str, r.seeds)) or 'none'}", ""]


def _md_headline(r: CheckResult) -> str:
    """The line under a check's heading in report.md: its verdict, how many comparisons hold, the one shown."""
    held, headline, _ = summary_cells(r)
    if not r.comparisons:
        return f"**{r.verdict.value}**" + (f": {_md(headline)}" if headline else "")
    return (f"**{r.verdict.value}**: {held} comparisons hold; headline *{_md(headline)}*: "
            f"{_md_numbers(_headline(r))} (measured ± SE vs predicted)")


def _md_evidence(comparisons: list[Comparison]) -> list[str]:
    """A check's rules, each once, then its compact table (doubtful rows first) and the folded per-row rules."""
    groups, rows = evidence(comparisons)
    cols = COMPARISON_COLUMNS if len(groups) > 1 else COMPARISON_COLUMNS[:-1]
    lines = ["**How each row is judged**", ""]
    lines += [f"- **{g.label}** ({rows_word(len(g.rows))}): {_md(g.text)}" if len(groups) > 1 else _md(g.text)
              for g in groups]
    lines += ["", "| " + " | ".join(cols) + " |", "|---" * len(cols) + "|"]
    for row in rows:
        c = row.comparison
        out = row.outcome if row.outcome == "PASS" else f"**{row.outcome}**"
        cells = [_md(c.name), _md(latex_text(c.predicted, fmt_value(c.predicted))), _md(_md_measured(c)),
                 row.statistic, out, row.rule][:len(cols)]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if folds(groups, rows):
        lines += [f"<details><summary>Each row's rule with its numbers, and its test ({rows_word(len(rows))})"
                  "</summary>", "", "| " + " | ".join(ROW_RULE_COLUMNS) + " |", "|---" * len(ROW_RULE_COLUMNS) + "|",
                  *(f"| {_md(r.comparison.name)} | {_md(r.comparison.tolerance)} | {_md(test_text(r.comparison))} |"
                    for r in rows), "", "</details>", ""]
    return lines


def test_text(c: Comparison) -> str:
    """The test column of the folded per-row table: the test and its p-values (:func:`verify.verdicts.describe`);
    ``exact`` for an exact row (its rule is the tolerance, shown beside it)."""
    _comparison("c", c)
    return "exact" if c.kind == "exact" else describe(c)


def _md_numbers(c: Comparison) -> str:
    """``measured ± SE vs predicted`` of ``c`` for report.md, formulas in LaTeX."""
    return f"{_md_measured(c)} vs {latex_text(c.predicted, fmt_value(c.predicted))}"


def _md_measured(c: Comparison) -> str:
    m, u = latex_text(c.measured, fmt_value(c.measured)), fmt_value(c.uncertainty)
    return f"{m} ± {u}" if u else m


#: notes up to this many characters are shown whole; longer ones open with their first sentences this long at
#: most, the full text folded below (``<details>``) in paragraphs of about the same length
NOTES_SHORT_CHARS = 400


def section_anchor(r: CheckResult) -> str:
    """The link target of ``r``'s section: the GitHub / pandoc identifier of a heading ``## ID: VERDICT``."""
    _result("r", r)
    text = f"{r.id}: {r.verdict.value}".lower()
    return "".join(ch for ch in text if ch.isalnum() or ch in "-_ ").replace(" ", "-")


def _summary_lines(results: list[CheckResult]) -> list[str]:
    """The report's opening table: per check its verdict, headline comparison and measured vs predicted."""
    lines = ["| " + " | ".join(SUMMARY_COLUMNS) + " |", "|---" * len(SUMMARY_COLUMNS) + "|"]
    for r in results:
        held, headline, _ = summary_cells(r)
        numbers = _md_numbers(_headline(r)) if r.comparisons else ""
        lines.append(f"| [{r.id}](#{section_anchor(r)}) | **{r.verdict.value}** | {held} | {_md(headline)} | "
                     f"{_md(numbers)} |")
    return lines + [""]


#: the columns of the report's opening summary table (markdown and HTML)
SUMMARY_COLUMNS = ("id", "verdict", "held", "headline", "measured vs predicted")
#: the columns of a check's compact table of comparisons (markdown and HTML); "rule" only where it has several
COMPARISON_COLUMNS = ("comparison", "predicted", "measured ± SE", "z / margin", "outcome", "rule")
#: the columns of the folded table of each row's rule with its numbers (markdown and HTML)
ROW_RULE_COLUMNS = ("comparison", "rule with its numbers", "test")


def summary_cells(r: CheckResult) -> tuple[str, str, str]:
    """The summary-table cells of ``r`` after its id and verdict (plain text).

    Returns
    -------
    held : str
        ``"k/n"``: how many of its ``n`` comparisons hold (``""`` without comparisons).
    headline : str
        The name of the comparison shown for the check (:func:`shown_comparison`); without comparisons, why not
        (no check yet, or the last line of the error).
    numbers : str
        ``"measured ± unc. vs predicted"`` of that comparison (``""`` without comparisons).
    """
    _result("r", r)
    if not r.comparisons:
        return "", _last_line(r.error), ""
    c = _headline(r)
    held = f"{sum(x.outcome == 'PASS' for x in r.comparisons)}/{len(r.comparisons)}"
    return held, c.name, f"{measured_text(c)} vs {fmt_value(c.predicted)}"


def _contents_lines(results: list[CheckResult]) -> list[str]:
    """The report's table of contents: a link to each check's section, with its claim."""
    lines = ["## Contents", ""]
    for r in results:
        lines.append(f"- [{r.id}: {r.verdict.value}](#{section_anchor(r)}) - {_md(_short(r.claim, 110))}")
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
    opening, folded = notes_parts(notes)
    if not folded:
        return [opening, ""]
    full = [line for p in folded for line in (p, "")]
    return [opening, "", "<details><summary>Full notes</summary>", "", *full, "</details>", ""]


def notes_parts(notes: str) -> tuple[str, list[str]]:
    """A check's notes as shown in the reports: ``(opening, folded)``.

    Notes of at most :data:`NOTES_SHORT_CHARS` characters are the opening, nothing folded; longer ones open with
    their first sentences (at most that long) and fold the full text in paragraphs of about the same length.
    """
    check_text("notes", notes)
    if len(notes) <= NOTES_SHORT_CHARS:
        return notes, []
    paragraphs = _paragraphs(notes, NOTES_SHORT_CHARS)
    opening = paragraphs[0]
    if len(opening) > NOTES_SHORT_CHARS:
        opening = _short(opening, NOTES_SHORT_CHARS)
    return opening, paragraphs


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


# ----------------------------------------------------------------------------------------- argument checks
def _results(name: str, results: Any) -> list[CheckResult]:
    return check_items(name, results, CheckResult, "CheckResult objects")


def _result(name: str, r: Any) -> CheckResult:
    if not isinstance(r, CheckResult):
        raise ArgumentTypeError(f"{name} must be a CheckResult, got {describe_value(r)} ({type(r).__name__})")
    return r


def _comparison(name: str, c: Any) -> Comparison:
    if not isinstance(c, Comparison):
        raise ArgumentTypeError(f"{name} must be a Comparison, got {describe_value(c)} ({type(c).__name__})")
    return c


def _comparisons(name: str, comparisons: Any) -> list[Comparison]:
    return check_items(name, comparisons, Comparison, "Comparison objects", nonempty=True)


#: the keys of a run's metadata that the markdown and HTML reports show (:func:`run_metadata`)
_META_KEYS = ("profile", "seed", "strict", "started_utc", "python", "platform")


def _finished(meta: dict) -> str:
    return f", finished {meta['finished_utc']}" if meta.get("finished_utc") else ""


def page_args(meta: Any, exit_code: Any, report_dir: Any) -> tuple[dict, int, Path]:
    """Checked ``(meta, exit_code, report_dir)`` of :func:`markdown_report` and
    :func:`verify.report_html.html_report`: ``meta`` a run's metadata with :data:`_META_KEYS`, an exit status in
    ``[0, 255]``, a directory path."""
    meta = check_mapping("meta", meta)
    missing = [k for k in _META_KEYS if k not in meta]
    if missing:
        raise ValueError(f"meta must be a run's metadata (run_metadata) with {', '.join(_META_KEYS)}, got one without "
                         f"{missing}")
    stop = meta.get("interrupted")
    if stop is not None:
        stop = check_mapping("meta['interrupted']", stop)
        for k in ("signal", "resume"):
            check_text(f"meta['interrupted'][{k!r}]", stop.get(k))
    report_dir = check_dir("report_dir", report_dir)
    if report_dir is None:
        raise ArgumentTypeError("report_dir must be a path, got None")
    return meta, as_int("exit_code", exit_code, 0, 255), report_dir
