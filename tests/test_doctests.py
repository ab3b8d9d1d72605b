"""Every example in the docstrings of ``theory``, ``numerics``, ``verify`` and ``benchmarks`` runs as printed.

One test per module that has examples (stdlib :mod:`doctest`, ``ELLIPSIS`` and ``NORMALIZE_WHITESPACE``), so an
example that rots fails by name; a count per package keeps "every module passes" from hiding "no module has any".
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import matplotlib
import pytest

matplotlib.use("Agg")

PACKAGES = ("theory", "numerics", "verify", "benchmarks")
#: entry points that run on import
SKIP = {"verify.__main__", "benchmarks.__main__"}


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        pkg = importlib.import_module(package)
        names.append(package)
        names += [m.name for m in pkgutil.walk_packages(pkg.__path__, package + ".") if m.name not in SKIP]
    return sorted(names)


FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _examples(name: str) -> list[doctest.DocTest]:
    return [t for t in doctest.DocTestFinder().find(importlib.import_module(name)) if t.examples]


MODULES = _modules()
WITH_EXAMPLES = [m for m in MODULES if _examples(m)]


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    tests = _examples(name)
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for t in tests:
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed (output above)"


def test_examples_exist_in_each_package():
    counts = {p: sum(len(t.examples) for m in MODULES if m.split(".")[0] == p for t in _examples(m))
              for p in PACKAGES}
    assert all(counts[p] > 0 for p in ("theory", "numerics", "verify")), counts
