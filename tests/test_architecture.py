"""The layers are enforced: import-linter contracts of pyproject.toml (verify -> numerics -> theory, no cycles)."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    proc = subprocess.run([exe, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]  # lint-imports exits 1 on a broken contract


def test_no_backend_switch_at_import():
    """Importing a check module does not switch matplotlib's backend (a notebook keeps its own)."""
    code = ("import matplotlib; matplotlib.use('svg'); import verify.checks; "
            "import matplotlib as m; print(m.get_backend())")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().lower() == "svg"


#: reading a comparison's name as data: ``c.name.startswith(...)``, ``"..." in c.name``, ``c.name.split()``, a
#: lookup by name; rows are selected by :attr:`verify.results.Comparison.key` (:func:`verify.results.with_key`)
_ROW = r"(?:c|cp|cmp_?|x|comp|row|head|first)"
NAME_AS_DATA = re.compile(rf"\b{_ROW}\.name\s*(?:\.(?:startswith|endswith|split|find)\b|==|!=)"  # parsed, compared
                          rf"|\bin\s+{_ROW}\.name\b"  # searched
                          rf"|[\[{{(,]\s*{_ROW}\.name\s*[\]:]"  # a key of a mapping
                          rf"|\.get\(\s*{_ROW}\.name\b")


def _name_as_data(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if NAME_AS_DATA.search(line)]


def test_no_comparison_is_selected_by_the_text_of_its_name():
    found = {str(p.relative_to(ROOT)): hits for p in sorted((ROOT / "verify").rglob("*.py"))
             if (hits := _name_as_data(p.read_text()))}
    assert not found, f"comparisons selected by name text (use Comparison.key and verify.results.with_key): {found}"


@pytest.mark.parametrize("line", ['mine = [c for c in comps if c.name.startswith(p.label + " ")]',
                                  'naive = [c for c in comparisons if "naive" in c.name]',
                                  'lines = [f"{c.name.split()[1]}" for c in slopes]',
                                  'outcomes = {cp.name: cp.outcome for cp in comparisons}',
                                  'verdict = outcomes.get(c.name, "not judged")'])
def test_the_name_scan_can_fail(line):
    assert _name_as_data(line) == [line]


def _mutable_dataclasses(path: Path) -> list[str]:
    """Classes of ``path`` decorated ``@dataclass`` without ``frozen=True``."""

    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ClassDef):
            continue
        for dec in node.decorator_list:
            name = dec.func if isinstance(dec, ast.Call) else dec
            if getattr(name, "id", getattr(name, "attr", None)) != "dataclass":
                continue
            frozen = isinstance(dec, ast.Call) and any(
                k.arg == "frozen" and getattr(k.value, "value", False) is True for k in dec.keywords)
            if not frozen:
                out.append(f"{path.name}:{node.lineno} {node.name}")
    return out


def test_what_the_claims_pass_between_their_steps_is_frozen():
    """Every dataclass of the claims (design, prediction, measurement records) is frozen: no step edits another's."""
    found = [m for p in sorted((ROOT / "verify" / "checks").glob("*.py")) for m in _mutable_dataclasses(p)]
    assert not found, "mutable dataclasses in verify/checks: " + ", ".join(found)


def test_the_frozen_scan_can_fail(tmp_path):
    p = tmp_path / "probe.py"
    p.write_text("import dataclasses\nfrom dataclasses import dataclass\n@dataclass\nclass X:\n    a: int = 0\n"
                 "@dataclass(frozen=True)\nclass Y:\n    a: int = 0\n@dataclasses.dataclass(order=True)\nclass Z:\n"
                 "    a: int = 0\n")
    assert [m.split()[-1] for m in _mutable_dataclasses(p)] == ["X", "Z"]


def _claim_imports(text: str) -> list[str]:
    """The check modules (not underscore machinery) that a module of verify/checks imports."""
    import ast

    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module and not node.module.startswith("_"):
            out.append(node.module)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("verify.checks."):
            leaf = node.module.rsplit(".", 1)[1]
            out += [] if leaf.startswith("_") else [leaf]
    return out


def test_claim_modules_are_leaves():
    """No check module imports another: what two claims share lives in an underscore module of verify/checks."""
    found = {f.name: _claim_imports(f.read_text()) for f in sorted((ROOT / "verify" / "checks").glob("*.py"))}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_leaf_scan_can_fail():
    assert _claim_imports("from .paper_b_ridge import X\nfrom ._paper_b import Y\n") == ["paper_b_ridge"]


def _private_uses(text: str) -> list[str]:
    """The private names of ``theory``, ``numerics`` and ``verify`` that ``text`` imports or reads as attributes of
    an imported module (a dotted name with a part that starts with one underscore)."""
    out, aliases = [], set()
    tree = ast.parse(text)
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            child.parent = parent  # an attribute chain is read once, from its outermost node
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            base = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
            for a in node.names:
                full = f"{base}.{a.name}" if base else a.name
                if full.split(".")[0] in ("theory", "numerics", "verify"):
                    aliases.add(a.asname or a.name.split(".")[0])
                    out += [full] if any(p.startswith("_") and not p.startswith("__") for p in full.split(".")) else []
        if isinstance(node, ast.Attribute) and not isinstance(getattr(node, "parent", None), ast.Attribute):
            parts, root = [], node
            while isinstance(root, ast.Attribute):
                parts.insert(0, root.attr)
                root = root.value
            if isinstance(root, ast.Name) and root.id in aliases and any(
                    q.startswith("_") and not q.startswith("__") for q in parts):
                out.append(".".join([root.id, *parts]))
    return out


def test_studies_use_public_names_only():
    """The research scripts of studies/ read the library through its public names (they change with it)."""
    found = {str(f.relative_to(ROOT)): _private_uses(f.read_text()) for f in sorted((ROOT / "studies").rglob("*.py"))}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_private_name_scan_can_fail():
    text = "from numerics import rmt\nfrom verify.checks._structured import grid_cell\nx = rmt._kernel_batch\n"
    assert _private_uses(text) == ["verify.checks._structured.grid_cell", "rmt._kernel_batch"]
    assert _private_uses("import os as _os\nfrom verify import CheckContext\n") == []
    dotted = "import numerics.error_model\nimport verify\na = numerics.error_model._X\nb = verify.checks._s.f\n"
    assert _private_uses(dotted) == ["numerics.error_model._X", "verify.checks._s.f"]
