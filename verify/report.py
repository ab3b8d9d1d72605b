"""Rendering of check results: a rich terminal table (plain lines in a log), a markdown report, a JSON document;
the HTML page is :mod:`verify.report_html`.  A check's comparisons are shown as :mod:`verify.evidence` groups them
(each rule said once, the doubtful rows first), formulas typeset by :mod:`verify.typeset`.  The command line
passes checked values: these functions do not check their arguments again."""

from __future__ import annotations

import json
import math
import os
import platform
import re
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import numpy
import sympy
from rich.console import Console
from rich.markup import escape as escape_markup
from rich.table import Table
from rich.text import Text

from .results import CheckResult, Comparison, Verdict
from .evidence import evidence, folds, rows_word
from .typeset import latex_text, md_table
from .verdicts import describe, rates_text

JSON_SCHEMA_VERSION = 3  # the --json layout (docs/usage.md); bump when its fields change

#: the rich style of each verdict in the terminal
VERDICT_STYLE = {Verdict.PASS: "bold green", Verdict.FAIL: "bold red", Verdict.INCONCLUSIVE: "bold yellow",
                 Verdict.ERROR: "bold red", Verdict.INFO: "cyan"}
_MARK = {"PASS": "", "FAIL": "[red]✗[/] ", "INCONCLUSIVE": "[yellow]?[/] "}

#: widest compact terminal table (characters); ``-v`` adds the statistic, rule and time columns and no cap
TABLE_WIDTH = 100
#: longest headline name / predicted value in the compact table; longer ones end in "…" (full text: -v, report.md)
_HEADLINE_CHARS = 60
_VALUE_CHARS = 24
_MEASURED_CHARS = 38  # "measured ± unc." text: two lines of its 21-character column
#: notes up to this many characters are shown whole, longer ones folded (:func:`notes_parts`)
NOTES_SHORT_CHARS = 400

#: the columns of the report's opening summary table (markdown and HTML)
SUMMARY_COLUMNS = ("id", "verdict", "held", "headline", "measured vs predicted")
#: the columns of a check's compact table of comparisons (markdown and HTML); "rule" only where it has several
COMPARISON_COLUMNS = ("comparison", "predicted", "measured ± SE", "z / margin", "outcome", "rule")
#: the columns of the folded table of each row's rule with its numbers (markdown and HTML)
ROW_RULE_COLUMNS = ("comparison", "rule with its numbers", "test")


def fmt_value(v: Any) -> str:
    """Short text for a predicted/measured/uncertainty value."""
    if v is None:
        return ""
    if isinstance(v, float) and math.isfinite(v) and v != 0:
        return f"{v:.4g}" if 1e-3 <= abs(v) < 1e4 else f"{v:.3e}"
    if isinstance(v, float) and v == 0:
        return "0"
    if isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(t, (int, float)) for t in v):
        return f"[{fmt_value(float(v[0]))}, {fmt_value(float(v[1]))}]"
    return str(v)


def measured_text(c: Comparison) -> str:
    """``"measured ± uncertainty"`` of a comparison (only the measured value when it has no uncertainty)."""
    m, u = fmt_value(c.measured), fmt_value(c.uncertainty)
    return f"{m} ± {u}" if u else m


def shown_comparison(comparisons: list[Comparison]) -> Comparison:
    """The comparison shown for a check in compact tables: the first FAILING one, else the first INCONCLUSIVE
    one, else the check's declared headline (``Comparison.headline``), else the first one."""
    doubtful = (c for want in ("FAIL", "INCONCLUSIVE") for c in comparisons if c.outcome == want)
    return next(doubtful, None) or headline_comparison(comparisons)


def headline_comparison(comparisons: list[Comparison]) -> Comparison:
    """The declared headline comparison of a check (``headline=True``), else its first comparison."""
    return next((c for c in comparisons if c.headline), comparisons[0])


def _held(r: CheckResult) -> str:
    return f"{sum(c.outcome == 'PASS' for c in r.comparisons)}/{len(r.comparisons)}"


def _short(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, ending in "…" when cut."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2:]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"


def results_table(results: list[CheckResult], title: str = "Verification report", verbose: bool = False) -> Table:
    """A rich table of the results.

    Compact (default): one row per check, with the count of comparisons that hold and the headline comparison
    (:func:`shown_comparison`), within :data:`TABLE_WIDTH` columns. ``verbose``: one row per comparison in reading order
    (:func:`verify.evidence.evidence`), with its test statistic, the label of its rule (:func:`rules_lines`) and the
    check's runtime.
    """
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
    if verbose:
        return t
    natural = [max([Text.from_markup(row[k]).cell_len for row in rows] + [len(str(col.header))])
               for k, col in enumerate(t.columns)]
    frame = 3 * len(t.columns) + 1  # "│ " before each cell, " " after it, and the closing "│"
    if sum(natural) + frame > TABLE_WIDTH:
        # predicted / measured get at most 12 / 21 characters, the headline the rest
        widths = natural[:3] + [0, min(natural[4], 12), min(natural[5], 21)]
        widths[3] = max(12, TABLE_WIDTH - frame - sum(widths))
        for col, w in zip(t.columns, widths):
            col.width = w
    return t


def _table_rows(r: CheckResult, verbose: bool) -> list[list[str]]:
    """The table rows of one check: one (compact) or one per comparison in reading order (``verbose``)."""
    verdict = f"[{VERDICT_STYLE[r.verdict]}]{r.verdict.value}[/]"
    if not r.comparisons:
        note = _last_line(r.error) or r.notes
        if verbose:
            return [[r.id, verdict, "", escape_markup(note), "", "", "", "", f"{r.runtime_s:.1f}s"]]
        return [[r.id, verdict, "", escape_markup(_short(note, _HEADLINE_CHARS)), "", ""]]
    if not verbose:
        c = shown_comparison(r.comparisons)
        return [[r.id, verdict, _held(r), _MARK.get(c.outcome, "") + escape_markup(_short(c.name, _HEADLINE_CHARS)),
                 escape_markup(_short(fmt_value(c.predicted), _VALUE_CHARS)),
                 escape_markup(_short(measured_text(c), _MEASURED_CHARS))]]
    rows = []
    for k, row in enumerate(evidence(r.comparisons)[1]):
        c = row.comparison
        first = [r.id, verdict, _held(r)] if k == 0 else ["", "", ""]
        mark = "[blue]~[/] " if row.near else _MARK.get(c.outcome, "")
        rows.append([*first, mark + escape_markup(c.name), escape_markup(fmt_value(c.predicted)),
                     escape_markup(measured_text(c)), row.statistic, row.rule, f"{r.runtime_s:.1f}s" if k == 0 else ""])
    return rows


def rules_lines(results: list[CheckResult]) -> list[str]:
    """The verbose table's rules, each once: ``"ID R1 (n rows): the rule in words"`` (the rows carry the labels)."""
    return [f"{r.id} {g.label} ({rows_word(len(g.rows))}): {g.text}" for r in results if r.comparisons
            for g in evidence(r.comparisons)[0]]


def plain_lines(results: list[CheckResult], title: str = "Verification report") -> list[str]:
    """The compact table as plain lines, one per check (for a log: stdout not a terminal): id, verdict, how many
    comparisons hold, and the headline comparison with ``measured ± SE vs predicted``, unshortened."""
    wid = max([len(r.id) for r in results] + [2])
    lines = [title]
    for r in results:
        held, headline, numbers = summary_cells(r)
        what = f"{headline}: {numbers}" if numbers else headline
        lines.append(f"{r.id:<{wid}}  {r.verdict.value:<12}  {held:>7}  {what}".rstrip())
    return lines


def summary_counts(results: list[CheckResult]) -> dict[str, int]:
    """The number of results of each verdict (every :class:`Verdict` value, zeros included)."""
    return {v.value: sum(r.verdict == v for r in results) for v in Verdict}


def counts_text(results: list[CheckResult], sep: str = ", ") -> str:
    """``"PASS: 12, FAIL: 1"``: the verdicts that occur, with their counts."""
    return sep.join(f"{k}: {n}" for k, n in summary_counts(results).items() if n)


def print_results(console: Console, results: list[CheckResult], title: str, verbose: bool = False) -> None:
    """The results on ``console``: on a terminal the compact table (:func:`results_table`); in a log (the console is
    not a terminal: CI, ``| tee``) one plain line per check (:func:`plain_lines`), never wrapped; with ``verbose``
    the table of every comparison, then its rules, each once (:func:`rules_lines`)."""
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
    the exit status; in a log (the console is not a terminal) each line whole, never wrapped."""
    soft = not console.is_terminal
    console.print(counts_text(results, " | "), soft_wrap=soft)
    inc = [r.id for r in results if r.verdict is Verdict.INCONCLUSIVE]
    if inc:
        how = ("counted as failures (--strict)" if strict
               else "not counted in the exit status (use --strict to count them)")
        console.print(f"[bold yellow]INCONCLUSIVE[/]: {', '.join(inc)} - the data decide neither way at the stated "
                      f"levels (the comparison says how much more data would); {how}", soft_wrap=soft)
    console.print(f"[dim]{rates_text()}[/]", soft_wrap=soft)
    for r in results:
        if r.verdict is Verdict.ERROR:
            console.print(f"[red]{r.id} raised:[/]\n{escape_markup(r.error or '')}", soft_wrap=soft)
    console.print(f"exit status {exit_code}", soft_wrap=soft)


def to_json(results: list[CheckResult], meta: dict) -> dict:
    """The JSON document written by ``--json`` (schema version :data:`JSON_SCHEMA_VERSION`): ``meta``
    (:func:`run_metadata`, plus ``"interrupted": {"signal", "check", "not_run", "resume"}`` after
    SIGINT / SIGTERM) comes first, then ``summary`` and ``results``."""
    return {"schema_version": JSON_SCHEMA_VERSION, **meta, "summary": summary_counts(results),
            "results": [r.to_json() for r in results]}


def write_json(path: Path, doc: dict) -> None:
    """Write ``doc`` (JSON values: no NaN or infinities) to the file ``path`` (its directory is created)."""
    text = json.dumps(doc, indent=2, allow_nan=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def run_metadata(profile: str, seed: int, strict: bool, argv: list[str], started: datetime | None = None) -> dict:
    """The run's facts for the reports: profile, base seed, strict, the command line (``argv``, a list of strings),
    start time (``started``, a timezone-aware datetime; default: now) and finish time (now), Python, platform, CPU
    count and library versions."""
    import torch

    now = datetime.now(timezone.utc)
    return {"profile": profile, "seed": seed, "strict": strict, "argv": list(argv),
            "started_utc": (started or now).astimezone(timezone.utc).isoformat(timespec="seconds"),
            "finished_utc": now.isoformat(timespec="seconds"), "python": platform.python_version(),
            "platform": platform.platform(), "cpu_count": os.cpu_count(),
            "versions": {"numpy": numpy.__version__, "sympy": sympy.__version__, "torch": torch.__version__}}


def markdown_report(results: list[CheckResult], meta: dict, exit_code: int, report_dir: Path) -> str:
    """A self-contained markdown report; figures are linked relative to ``report_dir``."""
    facts = run_facts(results, meta, exit_code, str, "`{}`", "**{}**")
    lines = ["# Verification report", "", *(f"- {f}" for f in facts)]
    lines += ["", *summary_table(results, MD), "", "## Contents", ""]
    lines += [f"- [{r.id}: {r.verdict.value}](#{section_anchor(r)}) - {_md(_short(r.claim, 110))}" for r in results]
    lines.append("")
    for r in results:
        lines += section_lines(r, report_dir, MD)
    return "\n".join(lines)


def summary_table(results: list[CheckResult], page: SimpleNamespace) -> list[str]:
    """The opening table in ``page``'s markup: per check a link to its section, its verdict, its headline comparison."""
    rows = [[page.link(r), page.verdict(r.verdict.value), *map(page.esc, summary_cells(r)[:2]),
             " vs ".join(page.cell_numbers(shown_comparison(r.comparisons))) if r.comparisons else ""] for r in results]
    return page.table(SUMMARY_COLUMNS, rows, {0: "key", 1: "key", 2: "num key"}, "")


def run_facts(results: list[CheckResult], meta: dict, exit_code: int, esc: Callable[[str], str], code: str,
              strong: str) -> list[str]:
    """The run's facts at the top of a report, one item each: ``esc`` escapes a text, ``code`` and ``strong`` are
    the markup (``"`{}`"``, ``"<code>{}</code>"``) of code and of emphasis."""
    def c(v: Any) -> str:
        return code.format(esc(str(v)))

    finished = f", finished {meta['finished_utc']}" if meta.get("finished_utc") else ""
    facts = [f"profile: {c(meta['profile'])}, base seed: {c(meta['seed'])}, strict: {c(meta['strict'])}",
             esc(f"started (UTC): {meta['started_utc']}{finished}; python {meta['python']}; {meta['platform']}"),
             esc(f"exit status: {exit_code}; {counts_text(results)}"), esc(f"error rates: {rates_text()}")]
    stop = meta.get("interrupted")
    if stop:  # a run stopped by a signal (set by the CLI)
        not_run = ", ".join(stop.get("not_run", [])) or "none"
        facts.append(f"{strong.format('interrupted')} by {esc(stop['signal'])} during "
                     f"{esc(stop.get('check') or 'the run')}; not run: {esc(not_run)}; resume with "
                     f"{c(stop['resume'])} (the cache keeps the finished cells)")
    return facts


def section_lines(r: CheckResult, report_dir: Path, page: SimpleNamespace) -> list[str]:
    """One check's section of a report in ``page``'s markup (report.md: :data:`MD`, report.html:
    :data:`verify.report_html.HTML`): heading with the verdict, the headline, claim, error, figures and notes; then its
    rules (each once), its compact table of comparisons (doubtful rows first) and each row's rule with its numbers,
    folded; runtime and seeds.  The section is a list of blocks, each a list of lines, that ``page.join`` lays out."""
    held, headline, _ = summary_cells(r)
    v, esc = page.verdict(r.verdict.value), page.esc
    if r.comparisons:
        line = (f"{v}: {esc(held)} comparisons hold; headline {page.em(esc(headline))}: "
                f"{' vs '.join(page.headline_numbers(shown_comparison(r.comparisons)))} "
                f"{page.aside('(measured ± SE vs predicted)')}")
    else:
        line = v + (f": {esc(headline)}" if headline else "")
    blocks = [page.heading(r, v), [page.para("headline", line)],
              [page.para("claim", f"{page.em(f'Claim (paper {esc(r.paper)}).')} {esc(r.claim)}")]]
    if r.error:
        blocks.append(page.code(r.error.rstrip()))
    blocks += [[page.figure(r, Path(f), report_dir)] for f in r.figures]
    if r.notes:
        opening, folded = notes_parts(r.notes)
        blocks.append([page.para("notes", page.prose(opening))])
        if folded:
            blocks += [["<details><summary>Full notes</summary>"], *([page.para("", page.prose(p))] for p in folded),
                       ["</details>"]]
    if r.comparisons:  # the rules (each once), the compact table ("rule" only with several), the folded one
        groups, rows = evidence(r.comparisons)
        cols = COMPARISON_COLUMNS[:6 if len(groups) > 1 else 5]
        cells = [[esc(w.comparison.name), *reversed([*page.cell_numbers(w.comparison)]), esc(w.statistic),
                  page.outcome(w), esc(w.rule)][:len(cols)] for w in rows]
        blocks += [page.rules(groups), page.table(cols, cells, {1: "num", 2: "num", 3: "num key", 4: "key", 5: "key"},
                                                  "evidence")]
        if folds(groups, rows):  # each row's rule with its numbers and its test, where it adds something
            per_row = [[esc(w.comparison.name), esc(w.comparison.tolerance),
                        esc("exact" if w.comparison.kind == "exact" else describe(w.comparison))] for w in rows]
            blocks += [[f"<details><summary>{FOLDED.format(rows_word(len(rows)))}</summary>"],
                       page.table(ROW_RULE_COLUMNS, per_row, {}, ""), ["</details>"]]
    seeds = ", ".join(map(str, r.seeds)) or "none"
    return page.join([*blocks, [page.para("run", f"runtime {r.runtime_s:.2f} s; seeds: {page.prose(seeds)}")]])


#: the summary of the folded table of each row's rule with its numbers (``{}``: how many rows)
FOLDED = "Each row's rule with its numbers, and its test ({})"


def numbers(c: Comparison, math: Callable[[Any, str], str], esc: Callable[[str], str] = str) -> tuple[str, str]:
    """``(measured ± SE, predicted)`` of ``c``, formulas typeset by ``math`` (:func:`verify.typeset.latex_text` or
    :func:`verify.typeset.mathml_html`), the standard error escaped by ``esc``."""
    m, u = math(c.measured, fmt_value(c.measured)), fmt_value(c.uncertainty)
    return (f"{m} ± {esc(u)}" if u else m), math(c.predicted, fmt_value(c.predicted))


def section_anchor(r: CheckResult) -> str:
    """The link target of ``r``'s section: the GitHub / pandoc identifier of a heading ``## ID: VERDICT``."""
    text = f"{r.id}: {r.verdict.value}".lower()
    return "".join(ch for ch in text if ch.isalnum() or ch in "-_ ").replace(" ", "-")


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
    if not r.comparisons:
        return "", _last_line(r.error), ""
    c = shown_comparison(r.comparisons)
    return _held(r), c.name, f"{measured_text(c)} vs {fmt_value(c.predicted)}"


def notes_parts(notes: str) -> tuple[str, list[str]]:
    """A check's notes as shown in the reports: ``(opening, folded)``.

    Notes of at most :data:`NOTES_SHORT_CHARS` characters are the opening, nothing folded; longer ones open with their
    first sentences (at most that long) and fold the full text in paragraphs of whole sentences of about that length (a
    longer sentence alone).
    """
    if len(notes) <= NOTES_SHORT_CHARS:
        return notes, []
    paragraphs = []
    for block in notes.split("\n\n"):
        cur = ""
        for sent in re.split(r"(?<=\.) ", " ".join(block.split())):
            if cur and len(cur) + 1 + len(sent) > NOTES_SHORT_CHARS:
                paragraphs.append(cur)
                cur = sent
            else:
                cur = f"{cur} {sent}" if cur else sent
        if cur:
            paragraphs.append(cur)
    return _short(paragraphs[0], NOTES_SHORT_CHARS), paragraphs


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _last_line(text: str | None) -> str:
    return text.strip().splitlines()[-1] if text else ""


#: report.md's markup of a check's section (:func:`section_lines`): blocks apart by a blank line; the notes and the
#: headline's numbers as they are, other texts escaped for a table (:func:`_md`)
MD = SimpleNamespace(
    esc=_md, prose=str, verdict="**{}**".format, em="*{}*".format, aside=str, para=lambda cls, text: text,
    heading=lambda r, v: [f"## {r.id}: {r.verdict.value}"], code=lambda text: ["```", text, "```"],
    link=lambda r: f"[{r.id}](#{section_anchor(r)})",
    figure=lambda r, f, report_dir: f"![{r.id}]({os.path.relpath(f, report_dir)})",
    headline_numbers=lambda c: numbers(c, latex_text), cell_numbers=lambda c: map(_md, numbers(c, latex_text)),
    outcome=lambda row: row.outcome if row.outcome == "PASS" else f"**{row.outcome}**",
    rules=lambda groups: ["**How each row is judged**", "", *(
        f"- **{g.label}** ({rows_word(len(g.rows))}): {_md(g.text)}" if len(groups) > 1 else _md(g.text)
        for g in groups)],
    table=lambda cols, cells, classes, table_class: md_table(cols, cells),
    join=lambda blocks: [x for b in blocks for x in (*b, "")])
