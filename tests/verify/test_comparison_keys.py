"""``Comparison.key``: what a row is about, as data (describe, figures and pooling select rows by it, not by name)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from verify.results import Comparison, with_key
from verify.sequential import pooled


def _row(measured: float, **key) -> Comparison:
    return Comparison.consistency("slope", -0.8, measured, 0.01, key=key)


def test_key_round_trips_through_json_and_numpy_scalars_become_python():
    c = _row(-0.79, group="d=5", c=np.float64(0.5), index=np.int64(3), part=None)
    assert c.key == (("group", "d=5"), ("c", 0.5), ("index", 3), ("part", None))
    assert type(dict(c.key)["index"]) is int
    back = Comparison.from_json(json.loads(json.dumps(c.to_json())))
    assert back.key == c.key and back == c


def test_select_and_matches():
    rows = [_row(-0.79, group="a", quantity="finite-M"), _row(-0.78, group="b", quantity="finite-M"),
            _row(-0.77, group="a", quantity="limit")]
    assert with_key(rows, group="a") == [rows[0], rows[2]]
    assert with_key(rows, quantity=("limit", "shift")) == [rows[2]]
    assert with_key(rows, group="c") == [] and with_key(rows, missing=1) == []
    assert with_key(rows) == rows


@pytest.mark.parametrize("bad, error", [({"x": [1, 2]}, TypeError), ("group", TypeError),
                                        ((("a", 1), ("a", 2)), ValueError), (((1, 2),), TypeError)])
def test_a_malformed_key_is_refused(bad, error):
    with pytest.raises(error, match="key"):
        Comparison("x", 1.0, 1.0, None, "", True, key=bad)


def test_pooling_keeps_the_key_and_matches_rows_by_it():
    a = [_row(-0.79, group="a"), _row(-0.70, group="b")]
    b = [_row(-0.81, group="b"), _row(-0.77, group="a")]  # the same rows in another order: matched by key
    out = pooled([a, b])
    assert [dict(c.key)["group"] for c in out] == ["a", "b"]
    assert out[0].measured == pytest.approx(-0.78) and out[1].measured == pytest.approx(-0.755)
