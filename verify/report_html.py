"""The report as one HTML page (``report.html``, :func:`html_report`) and its sections for a notebook
(:func:`html_sections`): what report.md says (:func:`verify.report.markdown_report`), from the same data.

A check's section is :func:`verify.report.section_lines`'s.  Formulas are typeset as MathML (:mod:`verify.typeset`),
which browsers render without a script; the page has no script, its style is inline, and a print style keeps it
short on paper."""

from __future__ import annotations

import base64
import os
from html import escape
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote

from .evidence import rows_word
from .report import (SUMMARY_COLUMNS, measured_text, numbers, run_facts, section_anchor, section_lines,
                     shown_comparison, summary_cells)
from .results import CheckResult, Comparison
from .typeset import mathml_html


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
    """The report as one self-contained HTML page (what :func:`verify.report.markdown_report` says): the summary
    table, the run's facts (``meta``: :func:`verify.report.run_metadata`), then a section per check; figures are
    embedded as ``data:`` URIs (one that cannot be read is linked relative to ``report_dir``), the style inline."""
    facts = run_facts(results, meta, exit_code, escape, "<code>{}</code>", "<strong>{}</strong>")
    title = escape(f"Verification report (profile {meta['profile']}, seed {meta['seed']})")
    return "\n".join(["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
                      '<meta name="viewport" content="width=device-width, initial-scale=1">',
                      f"<title>{title}</title>", f"<style>\n{_HTML_CSS}\n</style>", "</head>", "<body>",
                      "<h1>Verification report</h1>", *_html_summary(results), '<ul class="run">',
                      *(f"<li>{f}</li>" for f in facts), "</ul>",
                      *(x for r in results for x in section_lines(r, report_dir, HTML)), "</body>", "</html>", ""])


def html_sections(results: list[CheckResult], report_dir: Path) -> list[str]:
    """The HTML lines of the results without a page around it: the summary table, then one section per check (its
    claim, judged comparisons, notes, figures embedded as ``data:`` URIs, seeds); a notebook shows it as it is."""
    return _html_summary(results) + [x for r in results for x in section_lines(r, Path(report_dir), HTML)]


def _verdict_span(value: str, cls: str | None = None) -> str:
    return f'<span class="v {cls or value.replace(" ", "-")}">{escape(value)}</span>'


def _html_table(header: tuple[str, ...], rows: list[list[str]], classes: dict[int, str],
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
             " vs ".join(_numbers(shown_comparison(r.comparisons))) if r.comparisons else ""]
            for r in results]
    return _html_table(SUMMARY_COLUMNS, rows, {0: "key", 1: "key", 2: "num key"})


def _figure(r: CheckResult, f: Path, report_dir: Path) -> str:
    """A figure embedded as a ``data:`` URI (the page stands alone); one that cannot be read is linked."""
    try:
        src = "data:image/png;base64," + base64.b64encode(f.read_bytes()).decode("ascii")
    except OSError:
        src = quote(Path(os.path.relpath(f, report_dir)).as_posix())
    return (f'<figure><img src="{src}" alt="{escape(r.id)} figure {escape(f.stem)}">'
            f"<figcaption>{escape(f.name)}</figcaption></figure>")


def _numbers(c: Comparison) -> tuple[str, str]:
    """``(measured ± SE, predicted)`` of ``c`` for report.html, formulas in MathML; on one line if <= 30 characters."""
    measured, predicted = numbers(c, mathml_html, escape)
    return (f'<span class="nw">{measured}</span>' if len(measured_text(c)) <= 30 else measured), predicted


#: report.html's markup of a check's section (:func:`verify.report.section_lines`), texts escaped for HTML
HTML = SimpleNamespace(
    esc=escape, prose=escape, verdict=_verdict_span, em="<em>{}</em>".format,
    aside='<span class="run">{}</span>'.format,
    para=lambda cls, text: f'<p class="{cls}">{text}</p>' if cls else f"<p>{text}</p>",
    heading=lambda r, v: [f'<section id="{section_anchor(r)}">', f"<h2>{escape(r.id)}: {v}</h2>"],
    code=lambda text: [f"<pre>{escape(text)}</pre>"], figure=_figure, headline_numbers=_numbers, cell_numbers=_numbers,
    outcome=lambda row: _verdict_span(row.outcome, "near" if row.near else row.comparison.outcome),
    rules=lambda groups: ['<div class="rules"><p><strong>How each row is judged</strong></p>', *([
        "<ul>", *(f"<li><strong>{g.label}</strong> ({rows_word(len(g.rows))}): {escape(g.text)}</li>" for g in groups),
        "</ul>"] if len(groups) > 1 else [f"<p>{escape(groups[0].text)}</p>"]), "</div>"],
    table=_html_table, join=lambda blocks: [*(x for b in blocks for x in b), "</section>"])
