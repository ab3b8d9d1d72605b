"""numerics.allocation: the cost-optimal replicate counts of a log-log slope."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.allocation import allocate_replicates, slope_variance

M5 = np.array([500.0, 1200.0, 2900.0, 7000.0, 17000.0])


@settings(max_examples=60, deadline=None)
@given(sd=st.lists(st.floats(0.01, 1.0), min_size=5, max_size=5),
       cost=st.lists(st.floats(0.01, 100.0), min_size=5, max_size=5),
       n_equal=st.integers(4, 60), n_min=st.integers(2, 4))
def test_allocation_meets_the_target_variance_above_the_floor_at_no_more_cost(sd, cost, n_equal, n_min):
    n = allocate_replicates(M5, sd, cost, n_equal, n_min)
    assert n.dtype.kind == "i" and np.all(n >= n_min)
    assert slope_variance(M5, sd, n) <= slope_variance(M5, sd, [n_equal] * 5) * (1 + 1e-9)
    # the continuous optimum costs at most the equal allocation; rounding up adds < one replicate per level
    assert float(np.dot(n, cost)) <= n_equal * sum(cost) + sum(cost) + 1e-9


def test_replicates_go_where_noise_is_large_and_cost_small():
    """Equal noise and cost: the ends (largest |w|) get the most, the centre the floor; cost below equal."""
    n = allocate_replicates(10.0 ** np.arange(2, 7), [0.1] * 5, [1.0] * 5, n_equal=20, n_min=2)
    assert n[0] == n[-1] > n[1] == n[3] > n[2] == 2
    n2 = allocate_replicates(M5, [0.4, 0.2, 0.12, 0.08, 0.05], [1, 2, 4, 9, 20], n_equal=20)
    assert n2[0] > 20 and n2[-1] < 20
    cost = np.array([1, 2, 4, 9, 20])
    assert np.dot(n2, cost) < 0.6 * 20 * cost.sum()


def test_the_continuous_optimum_is_neyman():
    """Without a binding floor, n_k is proportional to |w_k| sd_k / sqrt(c_k) (up to rounding)."""
    M = np.array([100.0, 1000.0, 10000.0, 100000.0])
    sd, cost = np.array([0.5, 0.3, 0.2, 0.1]), np.array([1.0, 4.0, 9.0, 16.0])
    n = allocate_replicates(M, sd, cost, n_equal=400, n_min=2)
    x = np.log(M)
    shape = np.abs(x - x.mean()) * sd / np.sqrt(cost)
    assert n / n.sum() == pytest.approx(shape / shape.sum(), rel=0.02)


@pytest.mark.parametrize("kw, msg", [
    (dict(M=[1.0, 2.0], sd=[1, 1], cost=[1, 1]), "at least 3"),
    (dict(M=[1.0, 2.0, 2.0], sd=[1, 1, 1], cost=[1, 1, 1]), "at least 3"),
    (dict(M=[1.0, 2.0, 3.0], sd=[1, 0, 1], cost=[1, 1, 1]), "sd"),
    (dict(M=[1.0, 2.0, 3.0], sd=[1, 1, 1], cost=[1, 1]), "one length"),
])
def test_bad_inputs_are_refused(kw, msg):
    with pytest.raises(ValueError, match=msg):
        allocate_replicates(n_equal=4, **kw)


def test_n_equal_below_the_floor_is_refused():
    with pytest.raises(ValueError, match="n_equal"):
        allocate_replicates(M5, [0.1] * 5, [1.0] * 5, n_equal=3, n_min=4)
