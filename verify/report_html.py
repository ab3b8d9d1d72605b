"""The report as one HTML page (``report.html``, :func:`html_report`) and its sections for a notebook
(:func:`html_sections`): what report.md says (:func:`verify.report.markdown_report`), from the same data.

A check's section opens with what a reader wants first: its verdict, its headline comparison (how many hold, the
one shown, measured ± SE vs predicted) and its figures; then its notes, its rules, each said once
(:func:`verify.evidence.evidence`), and its compact table of comparisons, FAIL / INCONCLUSIVE / near misses first;
each row's rule with its numbers and its p-values folded below (``<details>``).  Formulas are typeset as MathML
(:mod:`verify.typeset`), which browsers render without a script; the page has no script, its style is inline, and
a print style keeps it short on paper.
"""

from __future__ import annotations

import base64
import os
from html import escape
from pathlib import Path
from typing import Iterable
from urllib.parse import quote

from .evidence import evidence, folds, rows_word
from .report import (COMPARISON_COLUMNS, ROW_RULE_COLUMNS, SUMMARY_COLUMNS, fmt_value, measured_text, notes_parts,
                     page_args, section_anchor, shown_comparison, summary_cells, summary_counts, test_text)
from .results import CheckResult, Comparison
from .typeset import mathml_html
from .validation import check_dir, check_items
from .verdicts import rates_text

__all__ = ["html_report", "html_sections"]

#: the page's style: readable widths, ruled tables, one colour per verdict (the figures' palette)
_HTML_CSS = """
body { font: 15px/1.45 system-ui, sans-serif; max-width: 1150px; margin: 1.5em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 13px; width: 100%; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
th { background: #f2f2f2; }
td.num { text-align: right; } td.key, th, .v { white-space: nowrap; overflow-wrap: normal; }
table.evidence td { vertical-align: middle; overflow-wrap: break-word; } table.evidence td:first-child { width: 38%; }
.PASS { color: #009E73; font-weight: bold; } .FAIL, .ERROR { color: #D55E00; font-weight: bold; }
.INCONCLUSIVE, .NOT-IMPLEMENTED { color: #B07800; font-weight: bold; } .INFO { color: #555; font-weight: bold; }
.near { color: #0072B2; font-weight: bold; } .nw { white-space: nowrap; } math { font-size: 1.1em; math-style: normal; }
figure { margin: 0.6em 0; } figure img { max-width: 100%; max-height: 520px; border: 1px solid #eee; }
figcaption, .run { color: #555; font-size: 13px; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 12px; }
details { margin: 0.4em 0 0.8em; } summary { cursor: pointer; color: #0072B2; }
section { border-top: 1px solid #ddd; margin-top: 1.2em; } h2 { margin: 0.6em 0 0.2em; }
p.headline { font-size: 16px; margin: 0.2em 0 0.4em; } .rules { font-size: 13px; } .rules ul { margin: 0; }
@media print {
  body { font-size: 12px; max-width: none; margin: 0; padding: 0; } table { font-size: 10.5px; }
  h2, .rules { break-after: avoid; } tr, figure { break-inside: avoid; } figure img { max-height: 330px; }
}
""".strip()


def html_report(results: list[CheckResult], meta: dict, exit_code: int, report_dir: Path) -> str:
    """The report as one HTML page (what :func:`markdown_report` says, from the same data).

    The summary table comes first (one row per check, linking to its section), then the run's facts, then a
    section per check: its claim, comparisons, notes (long ones folded in ``<details>``), error, figures and
    seeds.  Figures are embedded as ``data:`` URIs (the page is self-contained: it can be mailed or moved alone;
    a figure that cannot be read is linked relative to ``report_dir`` instead); the style is inline, and the page
    needs no script.

    Parameters
    ----------
    results : list of CheckResult
        The checks, in report order.
    meta : dict
        The run's metadata (:func:`run_metadata`, plus ``"interrupted"`` after a signal).
    exit_code : int
        The run's exit status.
    report_dir : Path
        The directory the page is written to.

    Returns
    -------
    str
        The page, ``<!DOCTYPE html>`` to ``</html>``.
    """
    results = check_items("results", results, CheckResult, "CheckResult objects")
    meta, exit_code, report_dir = page_args(meta, exit_code, report_dir)
    body = ["<h1>Verification report</h1>", *_html_summary(results), *_html_run_facts(results, meta, exit_code)]
    for r in results:
        body += _html_section(r, report_dir)
    title = escape(f"Verification report (profile {meta['profile']}, seed {meta['seed']})")
    return "\n".join(["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
                      '<meta name="viewport" content="width=device-width, initial-scale=1">',
                      f"<title>{title}</title>", f"<style>\n{_HTML_CSS}\n</style>", "</head>", "<body>",
                      *body, "</body>", "</html>", ""])


def html_sections(results: list[CheckResult], report_dir: Path) -> list[str]:
    """The HTML lines of the results without a page around it: the summary table, then one section per check (its
    claim, judged comparisons, notes, figures embedded as ``data:`` URIs, seeds); a notebook shows it as it is."""
    results = check_items("results", results, CheckResult, "CheckResult objects")
    report_dir = check_dir("report_dir", report_dir) or Path(".")
    lines = _html_summary(results)
    for r in results:
        lines += _html_section(r, report_dir)
    return lines


def _verdict_span(value: str) -> str:
    return f'<span class="v {value.replace(" ", "-")}">{escape(value)}</span>'


def _html_table(header: Iterable[str], rows: Iterable[Iterable[str]], classes: dict[int, str],
                table_class: str = "") -> list[str]:
    """A table of already-escaped cells; column ``k`` gets the CSS class ``classes[k]`` (``num``: right-aligned,
    ``key``: never wrapped), the table ``table_class``."""
    lines = [f'<table class="{table_class}">' if table_class else "<table>",
             "<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr></thead>", "<tbody>"]
    for row in rows:
        tds = (f'<td class="{classes[k]}">{x}</td>' if k in classes else f"<td>{x}</td>" for k, x in enumerate(row))
        lines.append("<tr>" + "".join(tds) + "</tr>")
    return lines + ["</tbody>", "</table>"]


def _html_summary(results: list[CheckResult]) -> list[str]:
    """The opening table: per check a link to its section, its verdict and its headline comparison."""
    rows = [[f'<a href="#{section_anchor(r)}">{escape(r.id)}</a>', _verdict_span(r.verdict.value),
             *map(escape, summary_cells(r)[:2]),
             _html_numbers(shown_comparison(r.comparisons)) if r.comparisons else ""]
            for r in results]
    return _html_table(SUMMARY_COLUMNS, rows, {0: "key", 1: "key", 2: "num key"})


def _html_run_facts(results: list[CheckResult], meta: dict, exit_code: int) -> list[str]:
    """The run's profile, seed, start, machine, exit status, verdict counts, error rates (and interruption)."""
    counts = ", ".join(f"{k}: {n}" for k, n in summary_counts(results).items() if n)
    finished = f", finished {meta['finished_utc']}" if meta.get("finished_utc") else ""
    facts = [f"profile <code>{escape(str(meta['profile']))}</code>, base seed <code>{escape(str(meta['seed']))}"
             f"</code>, strict <code>{escape(str(meta['strict']))}</code>",
             f"started (UTC) {escape(str(meta['started_utc']) + finished)}; python {escape(str(meta['python']))}; "
             f"{escape(str(meta['platform']))}",
             f"exit status {exit_code}; {escape(counts)}", f"error rates: {escape(rates_text())}"]
    stop = meta.get("interrupted")
    if stop:
        not_run = ", ".join(stop.get("not_run", [])) or "none"
        facts.append(f"<strong>interrupted</strong> by {escape(stop['signal'])} during "
                     f"{escape(stop.get('check') or 'the run')}; not run: {escape(not_run)}; resume with "
                     f"<code>{escape(stop['resume'])}</code> (the cache keeps the finished cells)")
    return ['<ul class="run">', *(f"<li>{f}</li>" for f in facts), "</ul>"]


def _embedded_png(path: Path) -> str | None:
    """``path`` as a ``data:image/png;base64`` URI (the page then stands alone), or ``None`` if it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _html_section(r: CheckResult, report_dir: Path) -> list[str]:
    """One check's section: heading (the summary's link target) with the verdict, the headline, claim, error,
    figures and notes; then its rules (each once), its compact table and the folded per-row rules; seeds."""
    lines = [f'<section id="{section_anchor(r)}">', f"<h2>{escape(r.id)}: {_verdict_span(r.verdict.value)}</h2>",
             f'<p class="headline">{_html_headline(r)}</p>',
             f'<p class="claim"><em>Claim (paper {escape(r.paper)}).</em> {escape(r.claim)}</p>']
    if r.error:
        lines.append(f"<pre>{escape(r.error.rstrip())}</pre>")
    for f in r.figures:
        src = _embedded_png(Path(f)) or quote(Path(os.path.relpath(f, report_dir)).as_posix())
        lines.append(f'<figure><img src="{src}" alt="{escape(r.id)} figure {escape(Path(f).stem)}">'
                     f"<figcaption>{escape(Path(f).name)}</figcaption></figure>")
    if r.notes:
        opening, folded = notes_parts(r.notes)
        lines.append(f'<p class="notes">{escape(opening)}</p>')
        if folded:
            lines += ["<details><summary>Full notes</summary>", *(f"<p>{escape(p)}</p>" for p in folded),
                      "</details>"]
    if r.comparisons:
        lines += _html_evidence(r.comparisons)
    seeds = ", ".join(map(str, r.seeds)) or "none"
    return lines + [f'<p class="run">runtime {r.runtime_s:.2f} s; seeds: {escape(seeds)}</p>', "</section>"]


def _html_headline(r: CheckResult) -> str:
    """The line under a check's heading: its verdict, how many comparisons hold and the one shown, typeset."""
    held, headline, _ = summary_cells(r)
    if not r.comparisons:
        return _verdict_span(r.verdict.value) + (f": {escape(headline)}" if headline else "")
    return (f"{_verdict_span(r.verdict.value)}: {escape(held)} comparisons hold; headline <em>{escape(headline)}"
            f"</em>: {_html_numbers(shown_comparison(r.comparisons))} "
            '<span class="run">(measured ± SE vs predicted)</span>')


def _html_evidence(comparisons: list[Comparison]) -> list[str]:
    """A check's rules, each once, its compact table (doubtful rows first) and the folded per-row rules."""
    groups, rows = evidence(comparisons)
    several = len(groups) > 1
    cols = COMPARISON_COLUMNS if several else COMPARISON_COLUMNS[:-1]
    said = [f'<li><strong>{g.label}</strong> ({rows_word(len(g.rows))}): {escape(g.text)}</li>'
            for g in groups]
    lines = ['<div class="rules"><p><strong>How each row is judged</strong></p>',
             *(["<ul>", *said, "</ul>"] if several else [f"<p>{escape(groups[0].text)}</p>"]), "</div>"]
    body = []
    for row in rows:
        c = row.comparison
        cls = "near" if row.near else c.outcome
        body.append([escape(c.name), mathml_html(c.predicted, fmt_value(c.predicted)), _html_measured(c),
                     escape(row.statistic), f'<span class="v {cls}">{escape(row.outcome)}</span>',
                     escape(row.rule)][:len(cols)])
    lines += _html_table(cols, body, {1: "num", 2: "num", 3: "num key", 4: "key", 5: "key"}, "evidence")
    if folds(groups, rows):
        per_row = [[escape(r.comparison.name), escape(r.comparison.tolerance), escape(test_text(r.comparison))]
                   for r in rows]
        lines += [f"<details><summary>Each row's rule with its numbers, and its test ({rows_word(len(rows))})"
                  "</summary>", *_html_table(ROW_RULE_COLUMNS, per_row, {}), "</details>"]
    return lines


def _html_numbers(c: Comparison) -> str:
    """``measured ± SE vs predicted`` of ``c`` for report.html, formulas in MathML."""
    return f"{_html_measured(c)} vs {mathml_html(c.predicted, fmt_value(c.predicted))}"


def _html_measured(c: Comparison) -> str:
    m, u = mathml_html(c.measured, fmt_value(c.measured)), fmt_value(c.uncertainty)
    text = f"{m} ± {escape(u)}" if u else m
    return f'<span class="nw">{text}</span>' if len(measured_text(c)) <= _NOWRAP_CHARS else text


#: a measured ± SE text up to this long stays on one line in the HTML table (longer text wraps)
_NOWRAP_CHARS = 30
