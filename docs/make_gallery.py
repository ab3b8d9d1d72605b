"""Write the figure gallery (``docs/gallery.md`` and ``docs/figures/``) from a report directory.

Usage (from the repository root)::

    python -m verify --profile paper --seed 0 --report-dir reports/paper_seed0
    python docs/make_gallery.py reports/paper_seed0

The report directory is what ``--report-dir`` writes: ``report.json`` and ``figures/<ID>_<name>.png``.  The
figures are copied to ``docs/figures/`` (a PNG larger than ``--max-kb`` is reduced to a 256-colour palette,
then scaled down until it fits; PNGs there that the report no longer has are removed) and ``docs/gallery.md``
gets one section per claim: the claim (``verify.claims``), its verdict, how many comparisons hold and its
headline comparison (measured +- SE vs predicted), its figures, and the command that draws them again, with the
profile, seed and machine of the run.  ``--out DIR`` writes ``DIR/gallery.md`` and ``DIR/figures/`` instead.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import shlex
import shutil
import sys
from pathlib import Path

from verify.results import CheckResult, Comparison, Verdict
from verify.report import section_anchor, summary_cells

DOCS = Path(__file__).resolve().parent
#: the largest PNG copied unchanged (kilobytes); larger ones are reduced (:func:`write_png`)
MAX_KB = 150
#: a reduced figure is never scaled below this width (pixels): the labels would no longer read
MIN_WIDTH = 500


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


def copy_figures(results: list[CheckResult], report_dir: Path, figures_dir: Path, max_bytes: int) -> dict[str, int]:
    """Write every figure of ``results`` (found by name in ``report_dir/figures``) to ``figures_dir``; remove the
    PNGs there that no result has.  Returns the size written per file name."""
    figures_dir.mkdir(parents=True, exist_ok=True)
    names = [Path(f).name for r in results for f in r.figures]
    for old in figures_dir.glob("*.png"):
        if old.name not in names:
            old.unlink()
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


def gallery_markdown(doc: dict, results: list[CheckResult], figures_rel: str = "figures") -> str:
    """The gallery page: the run it shows, then one section per claim (figures linked under ``figures_rel``)."""
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
    ]
    for r in results:
        lines += _section(r, doc, figures_rel)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python docs/make_gallery.py REPORT_DIR [--out DIR] [--max-kb KB]``."""
    p = argparse.ArgumentParser(prog="python docs/make_gallery.py", description=__doc__.split("\n\n")[0])
    p.add_argument("report_dir", type=Path, metavar="REPORT_DIR", help="a directory written by --report-dir")
    p.add_argument("--out", type=Path, default=DOCS, help="where gallery.md and figures/ go (default: docs/)")
    p.add_argument("--max-kb", type=float, default=MAX_KB, help=f"largest PNG in kB (default {MAX_KB})")
    args = p.parse_args(argv)
    if not (args.report_dir / "report.json").is_file():
        p.error(f"REPORT_DIR {args.report_dir}: no report.json (write one with python -m verify --report-dir DIR)")
    if args.max_kb <= 0:
        p.error(f"--max-kb must be > 0, got {args.max_kb:g}")
    doc, results = load_report(args.report_dir)
    sizes = copy_figures(results, args.report_dir, args.out / "figures", int(args.max_kb * 1000))
    (args.out / "gallery.md").write_text(gallery_markdown(doc, results))
    print(f"{args.out / 'gallery.md'}: {len(results)} checks, {len(sizes)} figures, "
          f"{sum(sizes.values()) / 1000:.0f} kB (largest {max(sizes.values(), default=0) / 1000:.0f} kB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
