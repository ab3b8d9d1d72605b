"""The example notebooks run from top to bottom (small sizes), so they never rot.

Each notebook in ``examples/`` is executed with nbclient in a fresh kernel, in a temporary working directory
(nothing is written to the repository) with the non-interactive matplotlib backend; a cell that raises fails the
test with the cell's traceback. The notebooks carry their own small sizes (seconds each) and a few assertions on
their results.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "examples").glob("*.ipynb"))
TIMEOUT_S = 120  # per cell


def test_the_three_notebooks_are_there():
    assert {p.name for p in NOTEBOOKS} >= {"paper_b_figure1.ipynb", "paper_a_rates.ipynb", "sympy_derivation.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    nb = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code"), \
        f"{path.name} is stored with outputs; clear them (the test run executes it)"
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    # the kernel imports this checkout's packages even when run from the temporary directory
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    client = nbclient.NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs if o.output_type == "error"]
    assert not errors
    assert not any(tmp_path.iterdir()), "a notebook wrote files"
    assert sys.executable  # the kernel is ipykernel's python3 (this interpreter when installed here)
