"""Packaging: one version everywhere, ``--version``, the licence, the citation file, the changelog, and docs that
cite nothing outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import numerics
import theory
import verify
from theory import _version

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = (ROOT / "pyproject.toml").read_text()


def _pyproject_version() -> str:
    return re.search(r'^version\s*=\s*"([^"]+)"', PYPROJECT, flags=re.M).group(1)


def test_one_version_for_the_three_packages():
    assert theory.__version__ == numerics.__version__ == verify.__version__ == _pyproject_version()


def test_version_falls_back_to_pyproject_when_not_installed(monkeypatch):
    def missing(name):
        raise _version.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(_version.metadata, "version", missing)
    assert _version._version() == _pyproject_version()


def test_cli_version(capsys):
    from verify.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"python -m verify {verify.__version__}"


def test_license_is_the_mit_licence_pyproject_names():
    assert 'license = { text = "MIT" }' in PYPROJECT
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text


def test_citation_file_names_the_toolkit_and_both_papers():
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert str(cff["version"]) == verify.__version__ and cff["license"] == "MIT"
    ids = {ref["identifiers"][0]["value"] for ref in cff["references"]}
    assert ids == {"arXiv:2510.11789", "arXiv:2506.18656"}
    families = [[a["family-names"] for a in ref["authors"]] for ref in cff["references"]]
    assert ["Zucker", "Wang", "Lu", "Seroussi"] in families and ["Liao", "Liu", "Hou", "Zou", "Ling"] in families


def test_changelog_has_the_current_version():
    assert f"## [{verify.__version__}]" in (ROOT / "CHANGELOG.md").read_text()


DOC_PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
#: citations of files that are not in the repository, and development notes (owners, engineers' notes)
OUTSIDE = re.compile(r"SPEC\.md|DESIGN\.md|\bSPEC\b|Owner:|\bH\d+'s\b|\(H\d+\b")


@pytest.mark.parametrize("page", DOC_PAGES, ids=[p.name for p in DOC_PAGES])
def test_docs_cite_nothing_outside_the_repository(page):
    text = page.read_text()
    assert not OUTSIDE.findall(text), f"{page.name} cites outside files or development notes"
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):  # relative links point to files here
        if not re.match(r"[a-z]+:", target):
            assert (page.parent / target).exists(), f"{page.name}: dead link {target}"


def test_claims_page_states_the_claims_in_the_reports_words():
    """docs/claims.md's one-line list is generated from the claims' statements (``python docs/make_claims_list.py``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_claims_list", ROOT / "docs" / "make_claims_list.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    page = (ROOT / "docs" / "claims.md").read_text()
    assert mod.rewritten(page) == page, "docs/claims.md is stale: run python docs/make_claims_list.py"
    assert "- **A2** (paper A): " in page  # the block holds the list
