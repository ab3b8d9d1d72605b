"""The report as one HTML page (``report.html``, :func:`html_report`) and its sections for a notebook
(:func:`html_sections`): what report.md says (:func:`verify.report.markdown_report`), from the same data.

A check's section is :func:`verify.report.section_lines`'s.  Formulas are typeset as MathML (:mod:`verify.typeset`),
which browsers render without a script; the page has no script, its style is inline, and a print style keeps it
short on paper."""

from __future__ import annotations

import base64
from importlib import resources
import os
from html import escape
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote

from .evidence import rows_word
from .report import measured_text, numbers, run_facts, section_anchor, section_lines, summary_table
from .results import CheckResult, Comparison
from .typeset import mathml_html


#: the page's style: readable widths, ruled tables, one colour per verdict (the figures' palette)
_HTML_CSS = resources.files(__package__).joinpath("report.css").read_text().strip()


def html_report(results: list[CheckResult], meta: dict, exit_code: int, report_dir: Path) -> str:
    """The report as one self-contained HTML page (what :func:`verify.report.markdown_report` says): the summary
    table, the run's facts (``meta``: :func:`verify.report.run_metadata`), then a section per check; figures are
    embedded as ``data:`` URIs (one that cannot be read is linked relative to ``report_dir``), the style inline."""
    facts = run_facts(results, meta, exit_code, escape, "<code>{}</code>", "<strong>{}</strong>")
    title = escape(f"Verification report (profile {meta['profile']}, seed {meta['seed']})")
    return "\n".join(["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
                      '<meta name="viewport" content="width=device-width, initial-scale=1">',
                      f"<title>{title}</title>", f"<style>\n{_HTML_CSS}\n</style>", "</head>", "<body>",
                      "<h1>Verification report</h1>", *summary_table(results, HTML), '<ul class="run">',
                      *(f"<li>{f}</li>" for f in facts), "</ul>",
                      *(x for r in results for x in section_lines(r, report_dir, HTML)), "</body>", "</html>", ""])


def html_sections(results: list[CheckResult], report_dir: Path) -> list[str]:
    """The HTML lines of the results without a page around it: the summary table, then one section per check (its
    claim, judged comparisons, notes, figures embedded as ``data:`` URIs, seeds); a notebook shows it as it is."""
    return summary_table(results, HTML) + [x for r in results for x in section_lines(r, Path(report_dir), HTML)]


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
    link=lambda r: f'<a href="#{section_anchor(r)}">{escape(r.id)}</a>',
    heading=lambda r, v: [f'<section id="{section_anchor(r)}">', f"<h2>{escape(r.id)}: {v}</h2>"],
    code=lambda text: [f"<pre>{escape(text)}</pre>"], figure=_figure, headline_numbers=_numbers, cell_numbers=_numbers,
    outcome=lambda row: _verdict_span(row.outcome, "near" if row.near else row.comparison.outcome),
    rules=lambda groups: ['<div class="rules"><p><strong>How each row is judged</strong></p>', *([
        "<ul>", *(f"<li><strong>{g.label}</strong> ({rows_word(len(g.rows))}): {escape(g.text)}</li>" for g in groups),
        "</ul>"] if len(groups) > 1 else [f"<p>{escape(groups[0].text)}</p>"]), "</div>"],
    table=_html_table, join=lambda blocks: [*(x for b in blocks for x in b), "</section>"])
