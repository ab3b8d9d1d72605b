"""``report.html`` (:func:`verify.report.html_report`): the report as one page that a browser opens.

Its structure is read back with the standard library's :class:`html.parser.HTMLParser`: every tag closed in
order (void elements aside), the summary table first with one row per check, each row linking to an existing
section, every ``<img>`` a file relative to the report directory, long notes folded in ``<details>``, text
escaped (a claim with ``<`` and ``&`` adds no tag).  The command line writes the page next to ``report.md``.
Where Chromium is installed, the page is rendered headless to a PNG, which must show the figure (a colour no
style uses, at its size) and the verdict colour of the summary (marked ``browser``: ``python -m pytest -m browser``,
with tests/verify/test_report_browser.py).
"""

from __future__ import annotations

import base64

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from verify.cli import main  # noqa: E402
from verify.results import CheckResult, Comparison, Verdict  # noqa: E402
from verify.report_html import html_report  # noqa: E402

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
META = {"profile": "quick", "seed": 0, "strict": False, "started_utc": "now", "python": "3", "platform": "p"}
#: the test figure's colour (pure magenta: neither the style nor the palette uses it) and size in pixels
FIG_RGB, FIG_PX = (255, 0, 255), (240, 160)


class _Page(HTMLParser):
    """Reads a page: nesting problems, images, links, element ids, and the summary table's rows."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.images: list[str] = []
        self.links: list[str] = []
        self.ids: list[str] = []
        self.order: list[str] = []  # tables and headings, in order
        self.table_rows: list[int] = []  # <tr> in each table's <tbody>
        self.details_text: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        self.tags.append(tag)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "img":
            self.images.append(a.get("src", ""))
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
        if tag in ("table", "h1", "h2", "ul"):
            self.order.append(tag)
        if tag == "table":
            self.table_rows.append(0)
        if tag == "tr" and "tbody" in self.stack:
            self.table_rows[-1] += 1
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes <{self.stack[-1] if self.stack else 'nothing'}>")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if "details" in self.stack:
            self.details_text.append(data)


def _read(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    parser.close()
    if parser.stack:
        parser.problems.append(f"unclosed: {parser.stack}")
    return parser


def _figure(path: Path) -> str:
    """A PNG of one flat colour, :data:`FIG_PX` pixels (what the headless render must show)."""
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", FIG_PX, FIG_RGB).save(path)
    return str(path)


def _results(report_dir: Path) -> list[CheckResult]:
    fig = _figure(report_dir / "figures" / "A2_slopes.png")
    c1 = Comparison("slope P=3", -0.8, -0.8150123, 0.0095834, "equivalence within 0.03", True, outcome="PASS",
                    headline=True)
    c2 = Comparison("gap < ridge & more", "E_att < E_RR", "0.03 -> 0.016", None, "rule <b>", False, outcome="FAIL")
    return [
        CheckResult("A2", "A", "slope <= -4/5 & more", Verdict.PASS, [c1], 1.0, seeds=[1, 2], figures=[fig],
                    notes="short notes."),
        CheckResult("B4-rev", "B", "claim two", Verdict.FAIL, [c1, c2], 2.0, notes="Sentence. " * 300),
        CheckResult("B9", "B", "claim three", Verdict.INCONCLUSIVE),
        CheckResult("B8", "B", "claim four", Verdict.ERROR, error="Traceback\nValueError: <bad> & worse"),
    ]


def test_page_structure(tmp_path):
    results = _results(tmp_path)
    page = _read(html_report(results, {**META, "interrupted": {"signal": "SIGINT", "check": "B8", "not_run": [],
                                                               "resume": "python -m verify --only B8"}}, 1, tmp_path))
    assert not page.problems, page.problems
    assert page.order[:2] == ["h1", "table"]  # the summary table first
    assert page.table_rows[0] == len(results)
    summary_links = [h for h in page.links if h.startswith("#")]
    assert len(summary_links) == len(results) and all(h[1:] in page.ids for h in summary_links)
    # the figure is embedded (a self-contained page): its bytes are the file's
    (src,) = page.images
    assert src.startswith("data:image/png;base64,")
    assert base64.b64decode(src.split(",", 1)[1]) == (tmp_path / "figures" / "A2_slopes.png").read_bytes()
    assert "".join(page.details_text).count("Sentence.") == 300  # the long notes, folded, nothing lost
    assert "b" not in page.tags  # "<b>" in a rule, "<bad>" in an error: text, not tags


def test_cli_writes_the_page_next_to_report_md(tmp_path):
    code = main(["--profile", "smoke", "--only", "B6", "--report-dir", str(tmp_path), "--cache-dir", "none",
                 "--jobs", "1"])
    assert code == 0
    page = _read((tmp_path / "report.html").read_text())
    assert not page.problems, page.problems
    assert page.table_rows[0] == 1 and page.images
    assert all(src.startswith("data:image/png;base64,") for src in page.images)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)")
def test_page_renders_in_headless_chromium(tmp_path):
    rep = tmp_path / "report"
    (rep / "report.html").parent.mkdir(parents=True)
    (rep / "report.html").write_text(html_report(_results(rep), META, 1, rep))
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1200,2000",
                    (rep / "report.html").as_uri()], capture_output=True, timeout=120, check=True)
    from PIL import Image

    with Image.open(shot) as im:
        rgb = np.asarray(im.convert("RGB")).astype(int)
    assert (rgb < 200).any(axis=2).mean() > 0.01  # text and rules drawn: not a blank page
    figure = (np.abs(rgb - FIG_RGB).sum(axis=2) == 0).sum()
    assert figure >= 0.9 * FIG_PX[0] * FIG_PX[1]  # the figure, loaded through its relative path, at its size
    green = (np.abs(rgb - (0x00, 0x9E, 0x73)).sum(axis=2) < 60).sum()
    assert green > 20  # the PASS verdict in its colour
