"""The layers are enforced: import-linter contracts of pyproject.toml (verify -> numerics -> theory, no cycles)."""

from __future__ import annotations

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
