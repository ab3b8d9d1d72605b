"""``PairwiseInteractionEstimator.fit_many`` (R independent data sets in one batched Gauss-Newton run) against a loop
of :meth:`fit` on the same data.

What "the same" means: both run one algorithm (``fit`` is ``fit_many``'s core with R = 1), so every discrete
decision (accepted steps, damping, stopping, patience, joining, random starts) must agree: ``n_iter_``,
``n_starts_`` and ``converged_`` are compared exactly. The numbers differ only where the batched products sum in
another order (with R data sets the design products may switch to the structured path, see
``numerics.estimator.pair_design_pays``): ``objective_`` is compared to a relative ``tol`` (the estimator's own
tolerance, 1e-6, the precision to which a fit's stopping rule determines its objective), ``A_`` up to sign to the
same order (``1 - |<A, A'>_F| <= tol``), ``coef_`` to ``sqrt(tol)`` relative (it moves linearly with ``A``,
whose distance ``||A - A'||_F = sqrt(2 (1 - |<A, A'>|))`` is of order ``sqrt(tol)``). Measured: 1e-14 .. 1e-12.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from numerics import ConvergenceWarning, IPSModel, PairwiseInteractionEstimator

TOL = 1e-6  # the estimator's default tol


@functools.lru_cache(maxsize=None)
def _model(d: int, N: int = 5, seed: int = 0) -> IPSModel:
    return IPSModel(d=d, N=N, rank=1, degree=3, noise=0.01, n_knots=6, support=1.25, token_law="uniform", seed=seed)


def _datasets(R: int, M: int, d: int, N: int = 5, noise: tuple = ()) -> tuple[np.ndarray, np.ndarray]:
    """``R`` samples of one model (seeds 1..R); ``noise[i]`` (if given) extra noise on data set ``i``."""
    X, Y = zip(*(_model(d, N).sample(M, i + 1) for i in range(R)))
    X, Y = np.stack(X), np.stack(Y)
    for i, sd in enumerate(noise):
        Y[i] = Y[i] + sd * np.random.default_rng([7, i]).standard_normal(Y[i].shape)
    return X, Y


def _estimator(**kw) -> PairwiseInteractionEstimator:
    return PairwiseInteractionEstimator(**{**dict(rank=1, degree=1, n_intervals=6, restarts=4), **kw})


def _sequential(est: PairwiseInteractionEstimator, X, Y, A=None) -> list:
    out = []
    for i in range(X.shape[0]):
        one = PairwiseInteractionEstimator(**est.get_params())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            out.append(one.fit(X[i], Y[i], A=None if A is None else (A if np.ndim(A) == 2 else A[i])))
    return out


def _assert_same_fits(batched: list, sequential: list) -> None:
    assert len(batched) == len(sequential)
    for i, (b, s) in enumerate(zip(batched, sequential)):
        assert (b.n_iter_, b.n_starts_, b.converged_) == (s.n_iter_, s.n_starts_, s.converged_), i
        assert b.objective_ == pytest.approx(s.objective_, rel=TOL), i
        np.testing.assert_allclose(b.restart_objectives_, s.restart_objectives_, rtol=TOL)
        assert 1.0 - abs(float(np.sum(b.A_ * s.A_))) <= TOL, i
        sign = 1.0 if np.sum(b.A_ * s.A_) >= 0 else -1.0
        np.testing.assert_allclose(b.A_, sign * s.A_, atol=np.sqrt(2 * TOL))
        assert np.linalg.norm(b.coef_ - s.coef_) <= np.sqrt(TOL) * np.linalg.norm(s.coef_), i
        assert b.range_ == pytest.approx(s.range_, rel=TOL, abs=TOL)


def test_one_data_set_is_fit():
    """R = 1: the same computation as :meth:`fit` (``fit`` is the core with R = 1): bitwise equal."""
    X, Y = _datasets(1, 300, 5)
    est = _estimator()
    (b,) = est.fit_many(X, Y)
    s = _estimator().fit(X[0], Y[0])
    assert (b.objective_, b.n_iter_, b.n_starts_, b.restart_objectives_) == \
        (s.objective_, s.n_iter_, s.n_starts_, s.restart_objectives_)
    np.testing.assert_array_equal(b.A_, s.A_)
    np.testing.assert_array_equal(b.coef_, s.coef_)


def test_heterogeneous_data_sets_equal_sequential_fits():
    """Data sets that need different numbers of iterations, one that stalls (no signal: its two moment starts
    disagree, so its random starts run, batched over the data sets that need them) and one that stops early on
    patience: each equals its own sequential fit."""
    X, Y = _datasets(6, 300, 5, noise=(0.0, 0.3, 0.0, 1.0, 0.05, 0.0))
    Y[2] = np.random.default_rng(3).permutation(Y[2].reshape(-1)).reshape(Y[2].shape)  # no signal at all
    est = _estimator()
    batched = est.fit_many(X, Y)
    _assert_same_fits(batched, _sequential(est, X, Y))
    assert len({b.n_iter_ for b in batched}) > 1  # heterogeneous convergence exercised
    assert {b.n_starts_ for b in batched} == {2, 4}  # random starts for some data sets only


def test_non_adaptive_restarts_and_patience():
    """``adaptive_restarts=False`` (every start runs, dropped only by ``patience``) and a tiny patience."""
    X, Y = _datasets(4, 250, 4, noise=(0.0, 0.5, 0.0, 0.2))
    est = _estimator(adaptive_restarts=False, patience=1, restarts=3)
    batched = est.fit_many(X, Y)
    _assert_same_fits(batched, _sequential(est, X, Y))
    assert all(b.n_starts_ == 3 for b in batched)


def test_fixed_A_shared_and_per_data_set():
    X, Y = _datasets(3, 200, 4)
    est = _estimator()
    A = _model(4).A_star
    _assert_same_fits(est.fit_many(X, Y, A=A), _sequential(est, X, Y, A=A))
    per = np.stack([A, A.T, A + np.eye(4)])
    fits = est.fit_many(X, Y, A=per)
    _assert_same_fits(fits, _sequential(est, X, Y, A=per))
    assert all(f.n_iter_ == 0 and f.n_starts_ == 1 for f in fits)


def test_d1():
    X, Y = _datasets(3, 200, 1)
    est = _estimator(ridge=1e-12)
    fits = est.fit_many(X, Y)
    _assert_same_fits(fits, _sequential(est, X, Y))
    assert all(f.n_iter_ == 0 for f in fits)


def test_a_seed_and_a_shared_generator():
    """An integer seed, the same starts for every data set (random starts forced: ``adaptive_restarts=False``); and a
    shared generator, consumed by the data sets in order as by a loop of fits."""
    X, Y = _datasets(3, 200, 4)
    est = _estimator(adaptive_restarts=False, patience=2, random_state=11)
    fits = est.fit_many(X, Y)
    assert [f.random_state for f in fits] == [11] * 3
    _assert_same_fits(fits, _sequential(est, X, Y))
    shared = _estimator(adaptive_restarts=False, patience=2, random_state=np.random.default_rng(5))
    batched = shared.fit_many(X, Y)
    loop = _estimator(adaptive_restarts=False, patience=2, random_state=np.random.default_rng(5))
    _assert_same_fits(batched, _sequential(loop, X, Y))


def test_lbfgs_runs_the_fits_one_after_the_other():
    X, Y = _datasets(2, 150, 3)
    est = _estimator(optimizer="lbfgs", restarts=1, max_iter=30)
    _assert_same_fits(est.fit_many(X, Y), _sequential(est, X, Y))


def test_clones_attributes_and_warning():
    X, Y = _datasets(3, 150, 4)
    est = _estimator(max_iter=1)
    with pytest.warns(ConvergenceWarning, match=r"data sets \[0, 1, 2\]"):
        fits = est.fit_many(X, Y)
    assert not hasattr(est, "objective_")  # the template itself is left unfitted
    assert len({f.fit_time_ for f in fits}) == 1 and fits[0].fit_time_ > 0  # the batch time / R
    for f in fits:
        assert f is not est and f.get_params() == est.get_params()
        assert f.predict(X[0]).shape == Y[0].shape
        np.testing.assert_allclose(f.A_, f.U_ @ f.V_.T)


@pytest.mark.parametrize("kwargs, match", [
    (dict(X=np.zeros((5, 4, 3)), Y=np.zeros((5, 4))), "X must have shape"),
    (dict(X=np.zeros((2, 5, 4, 3)), Y=np.zeros((2, 5, 3))), "Y must have shape"),
    (dict(X=np.zeros((2, 1, 4, 3)), Y=np.zeros((2, 1, 4))), "X must have shape"),
    (dict(X=np.zeros((2, 5, 4, 3)), Y=None), "Y must be"),
    (dict(X=np.full((2, 5, 4, 3), np.nan), Y=np.zeros((2, 5, 4))), "X must be a finite"),
    (dict(X=np.ones((2, 5, 4, 3)), Y=np.zeros((2, 5, 4)), A=np.ones((3, 3, 3))), "A must be"),
])
def test_bad_input_is_refused_by_name(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        _estimator().fit_many(**kwargs)
