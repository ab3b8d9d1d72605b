"""Write the figure gallery (``docs/gallery.md`` and ``docs/figures/``) from a report directory.

Usage (from the repository root)::

    python -m verify --profile paper --seed 0 --report-dir reports/paper_seed0
    python docs/make_gallery.py reports/paper_seed0

    python -m verify --only A1 B1 B3 B6 B9 --seed 0 --report-dir reports/quick_page
    python docs/make_gallery.py --report-page reports/quick_page

The report directory is what ``--report-dir`` writes: ``report.json`` and ``figures/<ID>_<name>.png``.  The
figures are copied to ``docs/figures/`` (a PNG larger than ``--max-kb`` is reduced to a 256-colour palette,
then scaled down until it fits; the old gallery's PNGs that the report no longer has are removed, the figures
of other scripts of docs/ kept) and ``docs/gallery.md`` gets one section per claim: the claim
(``verify.claims``), its verdict, how many comparisons hold and its headline comparison (measured +- SE vs
predicted), its figures, and the command that draws them again, with the profile, seed and machine of the run.
``--out DIR`` writes ``DIR/gallery.md`` and ``DIR/figures/`` instead.

``--report-page DIR`` (a quick run's report directory) renders its ``report.html`` in headless Chromium (Debian's
package ``chromium``) and puts the top of the page, :data:`PAGE_SIZE` CSS pixels, in ``report_page.png`` next to
gallery.md, with a section saying which run it shows; without it, the section already in gallery.md is kept (each
of the two commands regenerates its own part).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from verify.results import CheckResult, Comparison, Verdict
from verify.report import section_anchor, summary_cells

DOCS = Path(__file__).resolve().parent
#: the largest PNG copied unchanged (kilobytes); larger ones are reduced (:func:`write_png`)
MAX_KB = 150
#: a reduced figure is never scaled below this width (pixels): the labels would no longer read
MIN_WIDTH = 500
#: the screenshot of report.html: width and height of the window (CSS pixels), its file next to gallery.md, and the
#: largest PNG kept (kilobytes: a page of text needs more than a figure)
PAGE_SIZE = (1100, 2300)
PAGE_PNG = "report_page.png"
PAGE_MAX_KB = 400
#: the lines that enclose the report page's section in gallery.md
PAGE_BEGIN, PAGE_END = "<!-- report page: begin -->", "<!-- report page: end -->"


def load_report(report_dir: Path) -> tuple[dict, list[CheckResult]]:
    """``report_dir/report.json``: the run's metadata and its results, with the outcomes the run stored."""
    doc = json.loads((report_dir / "report.json").read_text())
    return doc, [_result(r) for r in doc["results"]]


def _result(stored: dict) -> CheckResult:
    """A stored check result; each comparison keeps the outcome of the run (not re-judged alone)."""
    comps = [dataclasses.replace(Comparison.from_json(c), outcome=c.get("outcome", "")) for c in stored["comparisons"]]
    return CheckResult(id=stored["id"], paper=stored["paper"], claim=stored["claim"],
                       verdict=Verdict(stored["verdict"]), comparisons=comps, runtime_s=stored["runtime_s"],
                       seeds=stored["seeds"], figures=stored["figures"], notes=stored["notes"],
                       error=stored["error"])


def write_png(src: Path, dst: Path, max_bytes: int) -> int:
    """Copy the PNG ``src`` to ``dst``, at most ``max_bytes`` long where possible; the size written.

    A file that fits is copied unchanged.  A larger one is reduced to a 256-colour palette (no dithering: the
    figures are line art, and a palette of 256 keeps their antialiasing), then scaled down by steps of the
    square root of the size ratio, never below :data:`MIN_WIDTH` pixels (so it may stay larger).
    """
    if src.stat().st_size <= max_bytes:
        shutil.copyfile(src, dst)
        return dst.stat().st_size
    from PIL import Image  # matplotlib's own dependency

    with Image.open(src) as opened:
        image = opened.convert("RGB")
    data = _palette_png(image)
    while len(data) > max_bytes and image.width > MIN_WIDTH:
        scale = max(0.9 * (max_bytes / len(data)) ** 0.5, MIN_WIDTH / image.width)
        image = image.resize((round(image.width * scale), round(image.height * scale)), Image.LANCZOS)
        data = _palette_png(image)
    dst.write_bytes(data)
    return len(data)


def _palette_png(image) -> bytes:
    """``image`` (RGB) as an optimised 256-colour PNG."""
    buf = io.BytesIO()
    image.quantize(256, dither=0).save(buf, "PNG", optimize=True)
    return buf.getvalue()


def linked_figures(gallery: Path) -> set[str]:
    """The names of the PNGs in ``figures/`` that an existing gallery.md shows (empty if there is none)."""
    return set(re.findall(r"\]\(figures/([^)/]+\.png)\)", gallery.read_text())) if gallery.is_file() else set()


def copy_figures(results: list[CheckResult], report_dir: Path, figures_dir: Path, max_bytes: int,
                 previous: Iterable[str] = ()) -> dict[str, int]:
    """Write every figure of ``results`` (found by name in ``report_dir/figures``) to ``figures_dir``; remove the
    PNGs of ``previous`` (the old gallery's, :func:`linked_figures`) that no result has.  Other PNGs there, drawn by
    other scripts of docs/, stay.  Returns the size written per file name."""
    figures_dir.mkdir(parents=True, exist_ok=True)
    names = [Path(f).name for r in results for f in r.figures]
    for name in sorted(set(previous) - set(names)):
        (figures_dir / name).unlink(missing_ok=True)
    return {name: write_png(report_dir / "figures" / name, figures_dir / name, max_bytes) for name in names}


def _machine(doc: dict) -> str:
    """The machine and software of the run, as recorded in ``report.json``."""
    versions = ", ".join(f"{k} {v}" for k, v in doc.get("versions", {}).items() if v)
    return f"{doc['platform']}, {doc['cpu_count']} CPU cores, python {doc['python']} ({versions})"


def _rerun_command(doc: dict, check_id: str) -> str:
    """The command that draws ``check_id``'s figures again (same profile and seed, one check)."""
    return shlex.join(["python", "-m", "verify", "--profile", doc["profile"], "--seed", str(doc["seed"]),
                       "--only", check_id, "--report-dir", "DIR"])


def _section(r: CheckResult, doc: dict, figures_rel: str) -> list[str]:
    """One claim's section of the gallery."""
    held, headline, numbers = summary_cells(r)
    if r.comparisons:
        verdict = (f"**{r.verdict.value}**: {held} comparisons hold; headline *{headline}*: {numbers} "
                   "(measured ± SE vs predicted).")
    else:
        verdict = f"**{r.verdict.value}**" + (f": {headline}." if headline else ".")
    lines = [f"## {r.id}: {r.verdict.value}", "", f"*Claim (paper {r.paper}).* {r.claim}", "", verdict, ""]
    for f in r.figures:
        name = Path(f).name
        lines += [f"![{Path(f).stem}]({figures_rel}/{name})", ""]
    if not r.figures:
        lines += ["(no figure)", ""]
    lines += [f"Drawn by `{_rerun_command(doc, r.id)}` (profile `{doc['profile']}`, seed {doc['seed']}) on "
              f"{doc['platform']}, {doc['cpu_count']} CPU cores.", ""]
    return lines


def gallery_markdown(doc: dict, results: list[CheckResult], figures_rel: str = "figures", page: str = "") -> str:
    """The gallery page: the run it shows, then the report page's section (``page``, :func:`page_section`), then one
    section per claim (figures linked under ``figures_rel``)."""
    run = shlex.join(["python", "-m", "verify", *doc.get("argv", [])])
    lines = [
        "# Figure gallery",
        "",
        f"Every check's figure from one run at the `{doc['profile']}` profile, seed {doc['seed']}: `{run}`, "
        f"dated {doc['started_utc']} (UTC), on {_machine(doc)}; exit status {doc.get('exit_code', '?')}. "
        "Regenerated (never edited by hand) with `python docs/make_gallery.py REPORT_DIR`.",
        "",
        *(f"- [{r.id}: {r.verdict.value}](#{section_anchor(r)})" for r in results),
        "",
        *([page, ""] if page else []),
    ]
    for r in results:
        lines += _section(r, doc, figures_rel)
    return "\n".join(lines)


def page_section(doc: dict, png: str = PAGE_PNG) -> str:
    """The gallery's section on the report page: which run the screenshot ``png`` shows and how it was made."""
    run = shlex.join(["python", "-m", "verify", *doc.get("argv", [])])
    checks = ", ".join(r["id"] for r in doc["results"])
    return "\n".join([
        PAGE_BEGIN, "## The report page", "",
        f"The top of `report.html` ({PAGE_SIZE[0]} x {PAGE_SIZE[1]} CSS pixels in headless Chromium) of the "
        f"`{doc['profile']}` run `{run}` ({checks}), dated {doc['started_utc']} (UTC), on {_machine(doc)}: the "
        "summary table and the run's facts, then each check with its verdict, headline and figure first, its "
        "rules said once, and its compact table, doubtful rows first, formulas typeset (MathML). Regenerated with "
        "`python docs/make_gallery.py --report-page DIR`.", "",
        f"![report.html of the {doc['profile']} run, top of the page]({png})", "", PAGE_END])


def kept_page_section(gallery: Path) -> str:
    """The report page's section of an existing gallery.md (``""`` if it has none)."""
    if not gallery.is_file():
        return ""
    m = re.search(re.escape(PAGE_BEGIN) + ".*?" + re.escape(PAGE_END), gallery.read_text(), flags=re.S)
    return m.group(0) if m else ""


def screenshot(html: Path, out: Path, max_bytes: int, chromium: str | None = None) -> int:
    """The top of the page ``html`` (:data:`PAGE_SIZE`) rendered by headless Chromium, written to ``out`` as a PNG of
    at most ``max_bytes`` where possible (:func:`write_png`); the size written."""
    exe = chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise SystemExit("error: --report-page needs Chromium (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        shot = Path(tmp) / "page.png"
        subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        "--hide-scrollbars", f"--user-data-dir={Path(tmp) / 'profile'}", f"--screenshot={shot}",
                        f"--window-size={PAGE_SIZE[0]},{PAGE_SIZE[1]}", html.resolve().as_uri()],
                       capture_output=True, timeout=120, check=True)
        return write_png(shot, out, max_bytes)


def _report_page(page_dir: Path, out: Path) -> str:
    """``--report-page``: the screenshot of ``page_dir/report.html`` in ``out`` and its section."""
    doc = json.loads((page_dir / "report.json").read_text())
    size = screenshot(page_dir / "report.html", out / PAGE_PNG, int(PAGE_MAX_KB * 1000))
    print(f"{out / PAGE_PNG}: the top of {page_dir / 'report.html'}, {size / 1000:.0f} kB")
    return page_section(doc)


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python docs/make_gallery.py [REPORT_DIR] [--report-page DIR] [--out DIR] [--max-kb KB]``."""
    p = argparse.ArgumentParser(prog="python docs/make_gallery.py", description=__doc__.split("\n\n")[0])
    p.add_argument("report_dir", type=Path, nargs="?", metavar="REPORT_DIR",
                   help="a directory written by --report-dir: the gallery's figures")
    p.add_argument("--report-page", type=Path, metavar="DIR",
                   help="a directory written by --report-dir: its report.html, screenshot for the gallery")
    p.add_argument("--out", type=Path, default=DOCS, help="where gallery.md and figures/ go (default: docs/)")
    p.add_argument("--max-kb", type=float, default=MAX_KB, help=f"largest PNG in kB (default {MAX_KB})")
    args = p.parse_args(argv)
    if args.report_dir is None and args.report_page is None:
        p.error("give REPORT_DIR (the gallery's figures), --report-page DIR (the page's screenshot), or both")
    for what, d in (("REPORT_DIR", args.report_dir), ("--report-page", args.report_page)):
        if d is not None and not (d / "report.json").is_file():
            p.error(f"{what} {d}: no report.json (write one with python -m verify --report-dir DIR)")
    if args.max_kb <= 0:
        p.error(f"--max-kb must be > 0, got {args.max_kb:g}")
    gallery = args.out / "gallery.md"
    page = _report_page(args.report_page, args.out) if args.report_page else kept_page_section(gallery)
    if args.report_dir is None:  # the page's section alone, in the gallery as it is
        text = gallery.read_text() if gallery.is_file() else ""
        old = kept_page_section(gallery)
        text = text.replace(old, page) if old else re.sub(r"\n## ", lambda m: f"\n{page}\n\n## ", text, count=1)
        gallery.write_text(text)
        return 0
    doc, results = load_report(args.report_dir)
    sizes = copy_figures(results, args.report_dir, args.out / "figures", int(args.max_kb * 1000),
                         previous=linked_figures(gallery))
    gallery.write_text(gallery_markdown(doc, results, page=page))
    print(f"{gallery}: {len(results)} checks, {len(sizes)} figures, "
          f"{sum(sizes.values()) / 1000:.0f} kB (largest {max(sizes.values(), default=0) / 1000:.0f} kB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
