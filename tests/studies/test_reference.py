"""The studies keep the seeds and numbers they had as verify's informational checks B4-rev and B7-lin: their smoke
runs at base seed 0 against the values those checks gave (seeds, first reading), and the fits' doctests."""

from __future__ import annotations

import doctest
import json

import pytest

import studies.decay_fits
from studies import linearisation, reversal

#: ``(seeds, first reading's measured value)`` of the smoke design at base seed 0, as verify's B4-rev / B7-lin gave
REFERENCE = {
    "reversal": ([2409541597, 3352137570, 400613392], -0.03860610172717299),
    "linearisation": ([4274359526, 50038081], 0.10385709837655316),
}


@pytest.mark.parametrize("name, module", [("reversal", reversal), ("linearisation", linearisation)])
def test_smoke_run_matches_the_former_check(tmp_path, name, module):
    args = ["--base", "smoke", "--jobs", "1", "--cache-dir", "none", "--json", str(tmp_path / "o.json")]
    assert module.main(args) == 0
    out = json.loads((tmp_path / "o.json").read_text())
    seeds, first = REFERENCE[name]
    assert out["seeds"] == seeds
    assert out["readings"][0]["measured"] == pytest.approx(first, rel=1e-12)


def test_decay_fits_doctests():
    res = doctest.testmod(studies.decay_fits)
    assert res.attempted >= 2 and res.failed == 0
