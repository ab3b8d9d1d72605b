"""CheckContext.map: a check's theory solves on the run's workers give the numbers of a serial loop at one thread."""

from __future__ import annotations

import numpy as np

from theory import binned_leverage, label_coordinate_bins
from verify.context import CheckContext


def _leverage(c: float, activation: str, p: int):
    return binned_leverage(label_coordinate_bins(1.0, 3), c, activation, 1.0, 1.0, per_bin=8, p=p)


def test_map_gives_the_same_numbers_for_every_worker_count():
    # p = 512 with 48 nodes: large enough that BLAS at two threads rounds differently from one
    calls = [(0.5, "erf", 512), (0.9, "relu", 256)]
    serial = CheckContext(n_jobs=1).map(_leverage, calls)
    parallel = CheckContext(n_jobs=2).map(_leverage, calls)
    for a, b in zip(serial, parallel):
        assert (a.t1, a.t2) == (b.t1, b.t2)
        assert np.array_equal(a.bin_means, b.bin_means)


def test_map_keeps_the_order_and_runs_one_call_in_process():
    assert CheckContext(n_jobs=2).map(pow, [(2, 3), (3, 2), (5, 1)]) == [8, 9, 5]
    assert CheckContext(n_jobs=2).map(pow, [(2, 10)]) == [1024]
