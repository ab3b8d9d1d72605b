"""Tests of the paper-style baseline (B-spline least squares + MLP surrogate + back-propagation to A)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.paper_style import BaselineRound, PaperStyleEstimator
from numerics.ips import IPSModel

# small, smooth problem: cubic B-spline truth with 4 interior knots, 3-dimensional tokens
SMALL = dict(hidden=16, surrogate_points=128, surrogate_steps=150, rounds=60, lr=0.05, batch_size=128)


@pytest.fixture(scope="module")
def problem():
    model = IPSModel(d=3, N=4, rank=1, degree=3, n_knots=4, noise=0.05, seed=3)
    X, Y = model.sample(1500, np.random.default_rng(11))
    return model, X, Y


@pytest.fixture(scope="module")
def fitted(problem):
    model, X, Y = problem
    return PaperStyleEstimator(rank=1, n_intervals=8, random_state=0, **SMALL).fit(X, Y)


def _pairs(model, n=2**14, seed=7):
    x, y = model.sample_pairs(n, np.random.default_rng(seed))
    return x, y, model.interaction(x, y)


def test_fits_smooth_truth_far_better_than_trivial_predictors(problem, fitted):
    model, X, Y = problem
    x, y, g = _pairs(model)
    err = float(np.mean((fitted.interaction(x, y) - g) ** 2))
    zero = float(np.mean(g**2))  # predict 0
    const = float(np.var(g))  # best constant predictor
    # the trivial predictors leave the whole signal; a working fit removes at least 90% of it
    assert err < 0.1 * const < 0.1 * zero + 1e-15, (err, const, zero)
    value, se = fitted.l2_error(model, n_pairs=2**14, rng=7)
    assert value == pytest.approx(err, rel=1e-12) and 0 < se < value


def test_spline_part_recovers_truth_at_true_A(problem):
    """With A fixed at A* (no back-propagation) the B-spline least squares alone is accurate."""
    model, X, Y = problem
    est = PaperStyleEstimator(rank=1, n_intervals=8, A_init=model.A_star, epochs=0, rounds=1).fit(X, Y)
    x, y, g = _pairs(model)
    err = float(np.mean((est.interaction(x, y) - g) ** 2))
    assert err < 0.01 * float(np.var(g)), err
    # noise level sets the data loss: residual mean square ~ sigma^2
    assert est.loss_ == pytest.approx(model.noise**2, rel=0.2)


def test_predict_is_the_forward_operator_of_interaction(problem, fitted):
    model, X, Y = problem
    P = fitted.predict(X[:50])
    assert P.shape == (50, X.shape[1])
    ref = model.forward(lambda a, b: fitted.interaction(a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])).reshape(a.shape[:-1]), X[:50])
    np.testing.assert_allclose(P, ref, rtol=1e-10, atol=1e-12)


def test_shapes_history_and_attributes(problem, fitted):
    model, X, Y = problem
    d = X.shape[2]
    assert fitted.A_.shape == (d, d) and np.linalg.matrix_rank(fitted.A_) == 1
    assert fitted.interaction(np.zeros((5, d)), np.ones((5, d))).shape == (5,)
    assert fitted.n_rounds_ == len(fitted.history_) >= 1
    assert all(isinstance(r, BaselineRound) for r in fitted.history_)
    times = [r.fit_time_s for r in fitted.history_]
    assert all(np.diff(times) >= 0)
    assert fitted.loss_ == pytest.approx(min(r.loss for r in fitted.history_))


def test_deterministic_given_seed(problem):
    model, X, Y = problem
    kw = dict(rank=1, n_intervals=6, rounds=3, random_state=5, **{k: v for k, v in SMALL.items() if k != "rounds"})
    a = PaperStyleEstimator(**kw).fit(X[:300], Y[:300])
    b = PaperStyleEstimator(**kw).fit(X[:300], Y[:300])
    np.testing.assert_array_equal(a.A_, b.A_)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_callback_can_stop_and_is_called_per_round(problem):
    model, X, Y = problem
    seen = []

    def cb(est, rec):
        seen.append(rec.round)
        assert est.interaction(X[0, :2], X[0, 1:3]).shape == (2,)
        return rec.round == 1

    est = PaperStyleEstimator(rank=1, n_intervals=6, random_state=0, **SMALL).fit(X[:200], Y[:200], callback=cb)
    assert seen == [0, 1] and est.n_rounds_ == 2 and not est.converged_


def test_stuck_random_start_is_replaced_by_a_new_one():
    """Truth seed 4: the first random start ends near A*^T (a spurious stationary point, loss ~0.0051
    vs ~0.0025 at the truth); the restart rule must draw a new start, which then fits."""
    model = IPSModel(d=3, N=4, rank=1, degree=3, n_knots=4, noise=0.05, seed=4)
    X, Y = model.sample(1500, np.random.default_rng(11))
    x, y, g = _pairs(model)
    est = PaperStyleEstimator(rank=1, n_intervals=8, random_state=0, **SMALL).fit(X, Y)
    starts = [r.start for r in est.history_]
    assert max(starts) >= 2 and starts == sorted(starts)
    first = [r.loss for r in est.history_ if r.start == 1]
    assert est.loss_ < 0.9 * min(first)  # the new start did better than the stuck one
    assert float(np.mean((est.interaction(x, y) - g) ** 2)) < 0.1 * float(np.var(g))
    # without restarts the same fit stays stuck
    stuck = PaperStyleEstimator(rank=1, n_intervals=8, random_state=0, restarts=0, **SMALL).fit(X, Y)
    assert float(np.mean((stuck.interaction(x, y) - g) ** 2)) > 0.5 * float(np.var(g))


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(rank=0), "rank"),
        (dict(rank=1.5), "rank"),
        (dict(rank=1, spline_degree=-1), "spline_degree"),
        (dict(rank=1, n_intervals=0), "n_intervals"),
        (dict(rank=1, hidden=0), "hidden"),
        (dict(rank=1, lr=0.0), "lr"),
        (dict(rank=1, lr=float("nan")), "lr"),
        (dict(rank=1, batch_size=0), "batch_size"),
        (dict(rank=1, rounds=0), "rounds"),
        (dict(rank=1, lr_decay=1.5), "lr_decay"),
        (dict(rank=1, max_time_s=-1.0), "max_time_s"),
        (dict(rank=1, device="tpu"), "device"),
        (dict(rank=1, range_quantile=0.5), "range_quantile"),
        (dict(rank=1, restarts=-1), "restarts"),
        (dict(rank=1, restart_gain=1.0), "restart_gain"),
    ],
)
def test_invalid_parameters_raise_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        PaperStyleEstimator(**kwargs)


def test_invalid_data_raise_naming_the_argument(problem):
    model, X, Y = problem
    est = PaperStyleEstimator(rank=1, rounds=1)
    with pytest.raises(ValueError, match="X"):
        est.fit(X[:, :, 0], Y)
    with pytest.raises(ValueError, match="Y"):
        est.fit(X, Y[:, :2])
    Xn = X.copy()
    Xn[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="X"):
        est.fit(Xn, Y)
    with pytest.raises(ValueError, match="rank"):
        PaperStyleEstimator(rank=4, rounds=1).fit(X, Y)  # d = 3
    with pytest.raises(ValueError, match="A_init"):
        PaperStyleEstimator(rank=1, rounds=1, A_init=np.eye(2)).fit(X, Y)
    with pytest.raises(RuntimeError, match="not fitted"):
        PaperStyleEstimator(rank=1).predict(X)


def test_interaction_and_predict_check_dimensions(fitted):
    with pytest.raises(ValueError, match="x and y"):
        fitted.interaction(np.zeros((3, 2)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="X"):
        fitted.predict(np.zeros((4, 3, 5)))


def test_l2_error_takes_rng(problem, fitted):
    """The argument name is ``rng`` (as the project's estimator): an integer or a generator, default 12345."""
    model, X, Y = problem
    new = fitted.l2_error(model, n_pairs=4096, rng=7)
    assert fitted.l2_error(model, 4096, 7) == new  # positional
    assert fitted.l2_error(model, 4096, rng=np.random.default_rng(7)) == new
    assert fitted.l2_error(model, 4096) == fitted.l2_error(model, 4096, rng=12345)


def test_round_bookkeeping_stops_restarts_and_decays_lr():
    """The early-stopping / restart / learning-rate rule of a round, on a hand-made loss sequence."""
    from benchmarks.paper_style import _FitProgress

    est = PaperStyleEstimator(rank=1, rounds=50, patience=2, tol=1e-4, restarts=1, restart_gain=0.1, lr=0.1,
                              lr_decay=0.5)
    st = _FitProgress(lr=est.lr)
    z = np.zeros(1)
    # a flat start (no 10% gain): stalls at rounds 1 and 2 -> stop, but a restart is left -> restart
    out = [est._track(st, rnd, loss, z, z, z) for rnd, loss in enumerate([1.0, 1.0, 0.99999])]
    assert out == [(False, False), (False, False), (False, True)]
    assert st.best[0] == 0.99999 and st.lr == 0.1  # no loss increase: lr kept
    st.n_starts, st.start_first, st.start_best, st.start_round, st.stall, st.prev_loss = 2, None, np.inf, 3, 0, None
    # second start: improves by > 10%, then rises (lr halves), then stalls -> stop, no restarts left
    out = [est._track(st, rnd, loss, z, z, z) for rnd, loss in zip(range(3, 7), [0.8, 0.5, 0.6, 0.55])]
    assert out == [(False, False), (False, False), (False, False), (True, False)]
    assert st.lr == 0.05 and st.best[0] == 0.5 and st.start_best == 0.5
