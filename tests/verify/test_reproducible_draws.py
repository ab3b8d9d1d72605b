"""Every random draw comes from integers and strings of the design: recorded seeds and first draws are stable.

``tests/reference/fingerprints.json`` was written by ``python tests/reference/make_fingerprints.py`` (the seed and
first values of every paper-A and paper-B simulation cell at the smoke profile, base seed 0).  This test
recomputes them; a difference means a seed derivation, a design integer or a sampler changed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REF = Path(__file__).resolve().parents[1] / "reference"


@pytest.fixture(scope="module")
def fingerprints():
    sys.path.insert(0, str(REF))
    try:
        import make_fingerprints
    finally:
        sys.path.remove(str(REF))
    return make_fingerprints.collect(), json.loads((REF / "fingerprints.json").read_text())


def test_every_cell_has_a_fingerprint(fingerprints):
    _, ref = fingerprints
    ids = {k for k in ref if ":" not in k}
    assert {"A2", "A3", "A4", "A5", "A6", "B1", "B2", "B3", "B4", "B5", "B6", "B7"} <= ids
    assert sum(len(v) for k, v in ref.items() if ":" not in k) > 50


def test_seeds_and_first_draws_match_the_reference(fingerprints):
    now, ref = fingerprints
    assert sorted(now) == sorted(ref)
    for key in ref:
        assert json.loads(json.dumps(now[key])) == ref[key], f"fingerprints of {key} changed"
