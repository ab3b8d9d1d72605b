"""Every check's figure, drawn at the smoke profile and inspected through matplotlib.

What is tested: each claim's ``figure(design, prediction, measurement, judgement)``, drawn by the claim's own
run at the smoke profile (``tests/verify/test_claim_conformance.py``), gives figures that
:func:`figure_lint.figure_problems` finds nothing wrong with: every axis that shows numbers is labelled,
a panel with more than one series has a legend naming quantities (no function names), no tick labels
overlap (their bounding boxes after ``fig.canvas.draw()``), no text runs into a neighbouring panel, every
colour is on the colour-blind-safe palette, and the figure has a title naming the check.  The inspector
itself is tested on figures built to fail each rule, and the shared helpers (log-axis labels, dense grids,
the style) on known inputs.  So a figure cannot silently degrade.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pytest

from conftest import run_smoke
from figure_lint import figure_problems  # noqa: E402
from verify import figures as F


def test_figures_are_written_by_the_run(tmp_path):
    """Through the registry (``run_smoke`` with a report directory) the figure is a PNG file."""
    res = run_smoke("B6", tmp_path)
    assert res.figures and all(Path(p).exists() and Path(p).stat().st_size > 10_000 for p in res.figures)


# ---------------------------------------------------------------------------------------------- the inspector
def _draw(build) -> list[str]:
    with F.style():
        fig, axes = F.subplots(1, 2, panel=(2.5, 2.0))
        build(fig, axes[0])
    try:
        return figure_problems(fig)
    finally:
        F.pyplot().close(fig)


def _good(fig, axes) -> None:
    for ax in axes:
        ax.plot([1, 2, 3], [1, 4, 9], color=F.COLORS[0], label="measured E")
        ax.plot([1, 2, 3], [1, 3, 8], color=F.THEORY, label="theory")
        ax.set(xlabel="γ", ylabel="E", title="panel")
        F.legend(ax)


def test_inspector_passes_a_good_figure():
    assert _draw(_good) == []


@pytest.mark.parametrize("spoil, expected", [
    (lambda ax: ax.set_ylabel(""), "y axis without a label"),
    (lambda ax: ax.get_legend().remove(), "no legend"),
    (lambda ax: ax.plot([1, 2], [2, 3], color="#1f77b4"), "not on the colour-blind-safe palette"),
    (lambda ax: ax.legend(["kernel_density", "theory"]), "names a function"),
    (lambda ax: ax.set_xticks(np.linspace(1, 1.02, 9), [f"{v:.6f}" for v in np.linspace(1, 1.02, 9)]),
     "tick labels"),
    (lambda ax: (ax.figure.set_layout_engine("none"), ax.set_position([0.25, 0.2, 0.7, 0.7])),
     "runs into the other panel"),
    (lambda ax: [a.set_title("a long panel title " * 4) for a in ax.figure.axes], "runs into the other panel"),
])
def test_inspector_finds_each_problem(spoil, expected):
    def build(fig, axes):
        _good(fig, axes)
        spoil(axes[1])

    problems = _draw(build)
    assert any(expected in p for p in problems), problems


# ---------------------------------------------------------------------------------------------- helpers
@pytest.mark.parametrize("lo, hi", [(0.75, 0.82), (500.0, 16000.0), (2e-6, 6e-5), (1e-11, 1.0), (120.0, 2000.0)])
def test_log_axis_labels_fit(lo, hi):
    """Short log ranges get a few plain labels, long ones decades: never colliding minor labels."""
    def build(fig, axes):
        for ax in axes:
            ax.plot([lo, hi], [lo, hi], color=F.THEORY)
            ax.set(xscale="log", yscale="log", xlabel="x", ylabel="y", title="t")
            F.tidy_log_axis(ax)

    assert _draw(build) == []


def test_dense_grid_covers_the_points():
    x = np.array([1e-3, 1e-2, 0.3, 1.0])
    g = F.dense_grid(x, per_decade=20)
    assert g[0] == x[0] and g[-1] == x[-1] and np.all(np.diff(g) > 0)
    assert set(x) <= set(g) and g.size >= 60
    gl = F.dense_grid([0.0, 8.0], log=False, n_min=50, pad=0.1)
    assert gl[0] == pytest.approx(-0.8) and gl[-1] == pytest.approx(8.8)


def test_style_is_local():
    """Drawing in the report's style leaves the caller's matplotlib settings alone."""
    before = dict(matplotlib.rcParams)

    @F.paper_figure
    def draw():
        assert matplotlib.rcParams["font.size"] == F.FONT["base"]
        return F.subplots()[0]

    F.pyplot().close(draw())
    assert dict(matplotlib.rcParams) == before


def test_palette_is_the_okabe_ito_one():
    assert len(set(F.COLORS)) == len(F.COLORS) == len(F.OKABE_ITO)
    assert F.THEORY == "#000000" and set(F.VERDICT_COLORS) >= {"PASS", "FAIL", "INCONCLUSIVE"}
