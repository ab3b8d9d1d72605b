"""B4's phase diagram (theory only): the text that states the answer, the figure, and the scans it rests on."""

from __future__ import annotations

from verify.checks import _structured as b4
from verify.checks import paper_b_alignment as alignment


def _phase(prof) -> dict:
    """Hand-made scans: gamma* falls with the strength at c < 1; none without a spike at c > 1."""
    out = {}
    for c in prof.phase_cs:
        for st in prof.phase_strengths:
            gs = None if (c > 1 and st == 0) else (1.0 + c) / (1.0 + st)
            out[(c, st)] = dict(c=c, snr=prof.phase_snr, strength=st, gamma_star=gs, ratio_small_gamma=1.01,
                                min_ratio=0.9, gamma_at_min_ratio=10.0, gamma_small=10.0 ** prof.phase_grid[0])
    return out


def test_b4_phase_text_states_the_answer():
    prof = b4.STRUCTURED_PROFILES["smoke"]
    text = alignment._phase_text(prof, _phase(prof))
    assert "worse than ridge in 4 of 4" in text and "no reversal as gamma -> 0" in text
    assert "without a spike at c = [2.0]" in text and "B4-rev" in text


def test_b4_phase_figure(tmp_path):
    prof = b4.STRUCTURED_PROFILES["smoke"]
    fig = alignment._figure_b4_phase(prof, _phase(prof))
    assert len(fig.axes) == 2
    fig.savefig(tmp_path / "phase.png")


def test_b4_phase_scans_match_the_reversal_scan():
    """The phase diagram is B4's own reversal scan on the phase grid (theory; the smoke grid, 4 cells)."""
    prof = b4.STRUCTURED_PROFILES["smoke"]
    ph = alignment._phase_scans(prof)
    assert set(ph) == {(c, st) for c in prof.phase_cs for st in prof.phase_strengths}
    assert ph[(2.0, 0.0)]["gamma_star"] is None  # c > 1 without a spike: no crossing up to gamma = 100
    assert ph[(2.0, 4.0)]["gamma_star"] is not None and ph[(0.5, 4.0)]["gamma_star"] < ph[(0.5, 0.0)]["gamma_star"]
    assert all(r["ratio_small_gamma"] > 1.0 for r in ph.values())  # attention worse as gamma -> 0 (the limit)
