"""The limits docs/architecture.md states hold: modules <= 800 lines, functions <= 80, no private module or name
imported from another package, README <= 200 lines.  Each rule is also tried on a text that breaks it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("theory", "numerics", "verify")
MAX_MODULE_LINES, MAX_FUNCTION_LINES, MAX_README_LINES = 800, 80, 200


def _problems(package: str, name: str, text: str) -> list[str]:
    """What breaks the limits in one module of ``package``."""
    out = []
    if text.count("\n") > MAX_MODULE_LINES:
        out.append(f"{name}: {text.count(chr(10))} lines > {MAX_MODULE_LINES}")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                out.append(f"{name}:{node.lineno} {node.name}: {length} lines > {MAX_FUNCTION_LINES}")
        modules = ([(a.name, []) for a in node.names] if isinstance(node, ast.Import) else
                   [(node.module, [a.name for a in node.names])] if isinstance(node, ast.ImportFrom) and node.module
                   and node.level == 0 else [])
        for module, names in modules:
            parts = module.split(".")
            if parts[0] in PACKAGES and parts[0] != package and (
                    any(p.startswith("_") for p in parts) or any(n.startswith("_") and n != "__version__"
                                                                   for n in names)):
                out.append(f"{name}:{node.lineno} imports a private part of another package: {module} {names}")
    return out


def test_modules_functions_and_imports_keep_the_limits():
    found = [msg for pkg in PACKAGES for f in sorted((ROOT / pkg).rglob("*.py"))
             for msg in _problems(pkg, str(f.relative_to(ROOT)), f.read_text())]
    assert not found, "\n".join(found)


def test_readme_keeps_its_length():
    n = len((ROOT / "README.md").read_text().splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines > {MAX_README_LINES}"


@pytest.mark.parametrize("text, what", [
    ("x = 1\n" * (MAX_MODULE_LINES + 1), "lines >"),
    ("def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES, "f: 81 lines"),
    ("from theory._leverage_dyson import solve\n", "private part"),
    ("import numerics._mc\n", "private part"),
    ("from theory.strong_alignment import _gap\n", "private part"),
])
def test_each_limit_can_fail(text, what):
    problems = _problems("verify", "m.py", text)
    assert problems and what in problems[0]


def test_a_package_may_import_its_own_private_modules():
    assert _problems("theory", "m.py", "from theory._leverage_dyson import solve\n") == []


#: the tests at the top of tests/: the project's own (layout, packaging, docs, examples); the rest live in the
#: folder of the package they test
PROJECT_TESTS = {"test_architecture.py", "test_benchmarks.py", "test_doctests.py", "test_examples.py",
                 "test_limits.py", "test_notebooks.py", "test_packaging.py", "test_readme.py",
                 "test_paper_style_estimator.py"}  # benchmarks/paper_style.py, the ERM benchmark's baseline


def test_tests_live_by_package():
    top = {p.name for p in (ROOT / "tests").glob("test_*.py")}
    assert top == PROJECT_TESTS, f"tests at the top of tests/ that belong in a package folder: {top - PROJECT_TESTS}"
    for pkg in PACKAGES:
        names = [p.name for p in (ROOT / "tests" / pkg).glob("*.py")]
        assert names and all(n.startswith("test_") for n in names), (pkg, names)
    every = [p.name for p in (ROOT / "tests").rglob("test_*.py")]
    assert len(every) == len(set(every)), "two test files share a name (pytest imports them by basename)"
