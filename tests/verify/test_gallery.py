"""``docs/make_gallery.py``: the figure gallery written from a report directory.

A real report directory is made by the command line at the smoke profile (two checks, a claim of paper A and
one of paper B; seconds), and the committed command ``python docs/make_gallery.py REPORT_DIR --out DIR`` runs on it:
every figure of ``report.json`` must appear in its claim's section of ``gallery.md`` through a relative link that
resolves to a PNG in ``DIR/figures``, next to the claim's verdict, its headline numbers and the command that draws
it again.  The size limit is tested on a PNG drawn too large: it comes back under the limit, still a readable
image of at least :data:`make_gallery.MIN_WIDTH` pixels; a PNG under the limit is copied byte for byte.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from verify.claim import claim_of  # noqa: E402
from verify.cli import main  # noqa: E402
from verify.report import fmt_value  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "make_gallery.py"
#: cheap checks with a figure each: a claim of paper A and one of paper B
IDS = ["A5", "B6"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _gallery_module():
    spec = importlib.util.spec_from_file_location("make_gallery", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def smoke_report(tmp_path_factory) -> Path:
    """A report directory written by ``python -m verify --profile smoke --only A5 B6 --report-dir DIR``."""
    rep = tmp_path_factory.mktemp("smoke_report")
    main(["--profile", "smoke", "--only", *IDS, "--report-dir", str(rep), "--cache-dir", "none", "--jobs", "1"])
    return rep


def _run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def _sections(md: str) -> dict[str, str]:
    """The gallery's sections by heading (``ID: VERDICT``)."""
    parts = re.split(r"^## ", md, flags=re.M)[1:]
    return {p.splitlines()[0]: p for p in parts}


def _shown(comparisons: list[dict]) -> dict:
    """The stored comparison a summary shows: the first FAIL, else the first INCONCLUSIVE, else the headline,
    else the first (:func:`verify.report.shown_comparison`)."""
    for want in ("FAIL", "INCONCLUSIVE"):
        hit = [c for c in comparisons if c["outcome"] == want]
        if hit:
            return hit[0]
    return ([c for c in comparisons if c["headline"]] or comparisons)[0]


def test_every_figure_is_linked_with_its_verdict(smoke_report, tmp_path):
    out = tmp_path / "docs"
    (out / "figures").mkdir(parents=True)
    (out / "figures" / "B9_stale_figure.png").write_bytes(PNG_MAGIC)  # the old gallery's, not the report's
    (out / "gallery.md").write_text("# Figure gallery\n\n![old](figures/B9_stale_figure.png)\n")
    (out / "figures" / "B10_leverage_profile.png").write_bytes(PNG_MAGIC)  # drawn by another script of docs/
    proc = _run_script(str(smoke_report), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((smoke_report / "report.json").read_text())
    md = (out / "gallery.md").read_text()
    sections = _sections(md)
    assert [r["id"] for r in doc["results"]] == IDS
    assert sum(len(r["figures"]) for r in doc["results"]) >= len(IDS)
    for r in doc["results"]:
        sec = sections[f"{r['id']}: {r['verdict']}"]
        assert f"**{r['verdict']}**" in sec
        assert claim_of(r["id"]).statement in sec
        shown = _shown(r["comparisons"])
        assert f"*{shown['name']}*: {fmt_value(shown['measured'])}" in sec  # the headline numbers, as stored
        assert f"--profile smoke --seed 0 --only {r['id']}" in sec and doc["platform"] in sec
        links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", sec)
        assert [Path(f).name for f in r["figures"]] == [Path(link).name for link in links]
        for link, fig in zip(links, r["figures"]):
            target = (out / link).resolve()
            assert not Path(link).is_absolute() and target.parent == (out / "figures").resolve()
            data = target.read_bytes()
            assert data[:8] == PNG_MAGIC
            assert len(data) <= 150_000
            if Path(fig).stat().st_size <= 150_000:
                assert data == Path(fig).read_bytes()  # under the limit: the run's own file
    for target in re.findall(r"^- \[[^\]]+\]\(#([^)]+)\)", md, flags=re.M):  # contents -> headings
        assert any(target == h.lower().replace(": ", "-").replace(" ", "-") for h in sections), target
    assert not (out / "figures" / "B9_stale_figure.png").exists()
    assert (out / "figures" / "B10_leverage_profile.png").read_bytes() == PNG_MAGIC


def test_large_png_is_reduced_below_the_limit(tmp_path):
    """A figure drawn at 300 dpi with many antialiased lines (far over the limit) comes back under it."""
    gallery = _gallery_module()
    plt = matplotlib.pyplot
    fig, ax = plt.subplots(figsize=(8, 6))
    rng = np.random.default_rng(0)
    for _ in range(40):
        ax.plot(np.cumsum(rng.standard_normal(400)), lw=0.7)
    big = tmp_path / "big.png"
    fig.savefig(big, dpi=300)
    plt.close(fig)
    limit = 150_000
    assert big.stat().st_size > 2 * limit
    size = gallery.write_png(big, tmp_path / "small.png", limit)
    assert size == (tmp_path / "small.png").stat().st_size <= limit
    from PIL import Image

    with Image.open(tmp_path / "small.png") as im:
        im.load()
        assert im.width >= gallery.MIN_WIDTH
    small_src = tmp_path / "fits.png"
    small_src.write_bytes((tmp_path / "small.png").read_bytes())
    gallery.write_png(small_src, tmp_path / "copy.png", limit)
    assert (tmp_path / "copy.png").read_bytes() == small_src.read_bytes()


def test_bad_arguments_are_refused(tmp_path, capsys):
    gallery = _gallery_module()
    with pytest.raises(SystemExit) as exc:
        gallery.main([str(tmp_path), "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "REPORT_DIR" in err and "report.json" in err
    (tmp_path / "report.json").write_text("{}")
    with pytest.raises(SystemExit) as exc:
        gallery.main([str(tmp_path), "--out", str(tmp_path), "--max-kb", "0"])
    assert exc.value.code == 2 and "--max-kb" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        gallery.main(["--out", str(tmp_path)])
    assert exc.value.code == 2 and "--report-page" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        gallery.main(["--report-page", str(tmp_path / "nowhere"), "--out", str(tmp_path)])
    assert exc.value.code == 2 and "--report-page" in capsys.readouterr().err
    assert not (tmp_path / "gallery.md").exists()


def test_regenerating_the_gallery_keeps_the_report_page_section(smoke_report, tmp_path):
    """The figures' command (REPORT_DIR) leaves the report page's section (written by --report-page) as it is."""
    gallery = _gallery_module()
    doc = json.loads((smoke_report / "report.json").read_text())
    section = gallery.page_section(doc)
    assert section.startswith(gallery.PAGE_BEGIN) and section.endswith(gallery.PAGE_END)
    assert "--report-page DIR" in section and f"]({gallery.PAGE_PNG})" in section
    (tmp_path / "gallery.md").write_text(f"# Figure gallery\n\nold\n\n{section}\n\n## A5: PASS\n\nold\n")
    proc = _run_script(str(smoke_report), "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "gallery.md").read_text()
    assert md.count(section) == 1 and md.index(section) < md.index("\n## A5: ")


@pytest.mark.browser
def test_the_report_page_screenshot(smoke_report, tmp_path):
    """--report-page renders report.html in headless Chromium: a PNG of the page's top, and its section."""
    gallery = _gallery_module()
    if shutil.which("chromium") is None and shutil.which("chromium-browser") is None:
        pytest.skip("no Chromium on PATH (apt-get install chromium)")
    (tmp_path / "gallery.md").write_text("# Figure gallery\n\nintro\n\n## A5: PASS\n\ntext\n")
    proc = _run_script("--report-page", str(smoke_report), "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    png = tmp_path / gallery.PAGE_PNG
    from PIL import Image

    with Image.open(png) as im:
        assert im.size == gallery.PAGE_SIZE and len(np.unique(np.asarray(im.convert("L")))) > 10  # drawn
    md = (tmp_path / "gallery.md").read_text()
    assert md.count(gallery.PAGE_BEGIN) == 1 and md.index(gallery.PAGE_END) < md.index("## A5: PASS")
