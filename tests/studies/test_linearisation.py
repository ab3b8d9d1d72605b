"""Study B7-lin (studies/linearisation.py): the readings on synthetic trials, and the command line at tiny size."""

from __future__ import annotations

import json

import numpy as np

from studies.linearisation import LinDesign, LinPrediction, judge_b7_lin, main


def test_reads_3_se_per_size_and_kernel():
    """Per p the 3-SE reading of the true and the linearised kernel."""
    rng = np.random.default_rng(4)
    gam = np.array([1e-2, 1e-1])
    design = LinDesign(gammas=gam, ps=(64, 128), trials=16)
    theory = np.array([0.2, 0.3])
    pred = LinPrediction(theory=theory, kappa={64: 1.75, 128: 1.24})
    # the true kernel saturates (far below theory), the linearised one follows it within noise
    cells = {p: {"true": (0.1 + 0.005 * rng.standard_normal((1, 16, 2))),
                 "linearised": (theory + 0.001 * rng.standard_normal((1, 16, 2)))} for p in design.ps}
    comps = judge_b7_lin(design, pred, cells)
    assert [c.name.split(": ")[-1] for c in comps] == ["true kernel", "linearised kernel"] * 2
    assert [c.passed for c in comps] == [False, True, False, True]


def test_command_line_at_tiny_size(tmp_path, capsys):
    """``python -m studies.linearisation --base smoke``: one reading per size and kernel, figure and JSON written."""
    args = ["--base", "smoke", "--jobs", "1", "--json", str(tmp_path / "out.json"), "--figure", str(tmp_path / "f.png")]
    assert main(args) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert len(out["readings"]) == 4 and out["seeds"] and len(out["data"]["rows"]) == 2
    assert (tmp_path / "f.png").stat().st_size > 0
    assert "Study B7-lin" in capsys.readouterr().out
