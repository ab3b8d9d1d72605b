"""Tests of numerics.estimator.PairwiseInteractionEstimator and the piecewise bases."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics import IPSModel, PairwiseInteractionEstimator
from numerics import _piecewise as pw


# ------------------------------------------------------------------ bases
def _basis_matrix(u, lo, hi, K, s):
    """Dense basis matrix ``(len(u), K (s+1))``: column ``k (s+1) + l`` is ``1{u in I_k} L_l(t)``."""
    idx, t = pw.locate(u, lo, hi, K)
    out = np.zeros((u.size, K * (s + 1)))
    for l, v in enumerate(pw.legendre_values(t, s)):
        out[np.arange(u.size), idx * (s + 1) + l] = v
    return out


@pytest.mark.parametrize("K, s", [(1, 0), (3, 2), (7, 4)])
def test_partition_of_unity_and_polynomial_reproduction(K, s):
    u = np.random.default_rng(0).uniform(-2.0, 3.0, 500)
    B = _basis_matrix(u, -2.0, 3.0, K, s)
    # the degree-0 columns are the interval indicators: a partition of unity
    np.testing.assert_allclose(B[:, :: s + 1].sum(axis=1), 1.0, atol=1e-15)
    # each row has exactly s+1 nonzeros (one interval)
    assert np.all((B != 0).sum(axis=1) == s + 1)
    for deg in range(s + 1):  # polynomials of degree <= s are represented exactly
        f = (u - 0.3) ** deg + 0.5 * u
        if deg == 0 and s == 0:
            f = np.full_like(u, 2.0)
        coef, *_ = np.linalg.lstsq(B, f, rcond=None)
        np.testing.assert_allclose(B @ coef, f, atol=1e-9 * max(1, np.abs(f).max()))
    # degree s+1 is not (on a single interval at least)
    f = u ** (s + 1)
    coef, *_ = np.linalg.lstsq(B, f, rcond=None)
    assert np.abs(B @ coef - f).max() > 1e-6


@settings(max_examples=15, deadline=None)
@given(K=st.integers(1, 12), s=st.integers(0, 6), lo=st.floats(-5, 5), width=st.floats(0.1, 10),
       seed=st.integers(0, 2**16))
def test_piecewise_class_contains_polynomials_of_degree_s(K, s, lo, width, seed):
    """Any polynomial of degree <= s on [lo, hi] lies in the span of the basis (least squares is exact)."""
    rng = np.random.default_rng(seed)
    hi = lo + width
    u = rng.uniform(lo, hi, 8 * K * (s + 1))
    B = _basis_matrix(u, lo, hi, K, s)
    f = np.polynomial.polynomial.polyval((u - lo) / width, rng.standard_normal(s + 1))
    coef, *_ = np.linalg.lstsq(B, f, rcond=None)
    assert np.abs(B @ coef - f).max() < 1e-8 * (1 + np.abs(f).max())
    np.testing.assert_allclose(pw.evaluate(u, coef.reshape(K, s + 1), lo, hi), B @ coef, atol=1e-12)


def test_legendre_orthonormal_and_derivatives():
    t, w = np.polynomial.legendre.leggauss(20)
    L = np.array(pw.legendre_values(t, 6))
    np.testing.assert_allclose((L * w) @ L.T / 2, np.eye(7), atol=1e-13)
    h = 1e-6
    for a, b, c in zip(pw.legendre_derivatives(t, 6), pw.legendre_values(t + h, 6), pw.legendre_values(t - h, 6)):
        np.testing.assert_allclose(a, (b - c) / (2 * h), atol=1e-6)


def test_locate_and_evaluate():
    u = np.array([-1.0, -0.5, 0.0, 0.999, 1.0, 2.0, -3.0])
    idx, t = pw.locate(u, -1.0, 1.0, 4)
    np.testing.assert_array_equal(idx, [0, 1, 2, 3, 3, 3, 0])
    assert np.all(np.abs(t) <= 1)
    coef = np.zeros((4, 2))
    coef[:, 0] = [1, 2, 3, 4]
    np.testing.assert_allclose(pw.evaluate(u, coef, -1.0, 1.0), [1, 2, 3, 4, 4, 4, 1])
    idx_t, t_t = pw.locate(torch.tensor(u), -1.0, 1.0, 4)
    np.testing.assert_array_equal(idx_t.numpy(), idx)
    np.testing.assert_allclose(t_t.numpy(), t)


# ------------------------------------------------------------- estimator
def _setup(M=40, N=4, d=3, r=2, K=3, s=2, q=0.0, ridge=0.0, seed=0):
    m = IPSModel(d=d, N=N, rank=min(r, d), degree=3, noise=0.1, seed=seed)
    X, Y = m.sample(M, seed + 1)
    e = PairwiseInteractionEstimator(rank=r, degree=s, n_intervals=K, ridge=ridge, range_quantile=q)
    e._setup(X, Y)
    g = torch.Generator().manual_seed(seed)
    U = torch.randn(d, r, generator=g, dtype=torch.float64)
    V = torch.randn(d, r, generator=g, dtype=torch.float64)
    U, V = e._balance(U, V)
    return m, X, Y, e, U, V


def test_design_matrix_against_naive_average():
    m, X, Y, e, U, V = _setup()
    B, lo, hi = e._design(U, V)
    A = (U @ V.T).numpy()
    M, N, _ = X.shape
    ref = np.zeros((M * N, e.n_basis))
    for mm in range(M):
        for i in range(N):
            for j in range(N):
                if j != i:
                    ref[mm * N + i] += _basis_matrix(np.array([X[mm, i] @ A @ X[mm, j]]), float(lo),
                                                    float(hi), e.n_intervals, e.degree)[0] / (N - 1)
    np.testing.assert_allclose(B.numpy(), ref, atol=1e-12)


def test_closed_form_inner_solve_matches_lstsq():
    m, X, Y, e, U, V = _setup(M=60)
    B, lo, hi = e._design(U, V)
    loss, c = e._solve(B)
    ref, *_ = np.linalg.lstsq(B.numpy(), Y.reshape(-1), rcond=None)
    np.testing.assert_allclose(c.numpy(), ref, rtol=1e-8, atol=1e-10)
    resid = Y.reshape(-1) - B.numpy() @ ref
    assert abs(float(loss) - resid @ resid / resid.size) < 1e-14


@pytest.mark.parametrize("q", [0.0, 0.05])
def test_reduced_objective_gradient(q):
    m, X, Y, e, U, V = _setup(q=q)
    Ur = U.clone().requires_grad_(True)
    Vr = V.clone().requires_grad_(True)
    loss, *_ = e._objective(Ur, Vr)
    loss.backward()
    grad = torch.cat([Ur.grad.reshape(-1), Vr.grad.reshape(-1)])
    # central finite differences of the reduced objective (it is smooth away from knot crossings)
    theta = torch.cat([U.reshape(-1), V.reshape(-1)])
    h = 1e-6
    fd = torch.zeros_like(theta)
    n = U.numel()
    for k in range(theta.numel()):
        vals = []
        for sgn in (1, -1):
            th = theta.clone()
            th[k] += sgn * h
            vals.append(float(e._objective(th[:n].reshape(U.shape), th[n:].reshape(V.shape))[0]))
        fd[k] = (vals[0] - vals[1]) / (2 * h)
    np.testing.assert_allclose(grad.numpy(), fd.numpy(), rtol=1e-5, atol=1e-9)
    # the Gauss-Newton (Kaufman) gradient is the same derivative, computed in closed form
    *_, H, g = e._gn_state(U, V, jacobian=True)
    np.testing.assert_allclose((-2 * g / Y.size).numpy(), grad.numpy(), rtol=1e-9, atol=1e-14)
    assert torch.all(torch.linalg.eigvalsh(0.5 * (H + H.T)) > -1e-10)


def test_gradcheck_small():
    m, X, Y, e, U, V = _setup(M=12, N=3, d=2, r=1, K=2, s=1)
    f = lambda a, b: e._objective(a, b)[0]  # noqa: E731
    assert torch.autograd.gradcheck(f, (U.clone().requires_grad_(True), V.clone().requires_grad_(True)),
                                    eps=1e-7, atol=1e-7)


class _PiecewiseTruth(IPSModel):
    """A truth that lies in the estimator's class: phi* is a spline of degree s with knots at the K
    equal intervals of the range of u over the training pairs (set after sampling), i.e. piecewise
    polynomial of degree s on the same K intervals (and C^{s-1}, so that the objective is continuous
    in A near A*; a discontinuous phi* makes the landscape too rough for any local optimiser)."""

    def set_truth(self, K, s, lo, hi, rng):
        from scipy.interpolate import BSpline

        inner = np.linspace(lo, hi, K + 1)
        knots = np.r_[[lo] * s, inner, [hi] * s]
        self._spl = BSpline(knots, rng.standard_normal(len(knots) - s - 1), s, extrapolate=True)
        self._lo, self._hi = lo, hi

    def phi_star(self, u):
        return self._spl(np.clip(np.asarray(u, dtype=np.float64), self._lo, self._hi))


@pytest.mark.parametrize("optimizer", ["gauss-newton", "lbfgs"])
def test_recovers_exactly_representable_truth(optimizer):
    K, s = 3, 2
    m = _PiecewiseTruth(d=4, N=4, rank=1, noise=0.0, seed=3)
    X = m.sample_tokens(400, 5)
    u = m.pair_values(X)
    off = ~np.eye(4, dtype=bool)
    lo, hi = u[:, off].min(), u[:, off].max()
    m.set_truth(K, s, lo, hi, np.random.default_rng(1))
    Y = m.forward(None, X)
    # range_quantile=0: the truth is piecewise polynomial on the K intervals of [min u, max u]
    est = PairwiseInteractionEstimator(rank=1, degree=s, n_intervals=K, restarts=2, ridge=1e-14,
                                       tol=1e-14, max_iter=200, optimizer=optimizer,
                                       range_quantile=0.0).fit(X, Y)
    err, se = est.l2_error(m, n_pairs=20000, rng=0)
    assert err < 1e-10
    assert est.objective_ < 1e-12
    np.testing.assert_allclose(est.predict(X), Y, atol=1e-5)
    assert est.n_iter_ >= 1 and est.coef_.shape == (K, s + 1) and est.A_.shape == (4, 4)
    assert abs(np.linalg.norm(est.A_) - 1) < 1e-12


def test_fit_predict_interaction_consistent():
    m = IPSModel(d=5, N=3, degree=3, noise=0.1, seed=0)
    X, Y = m.sample(600, 1)
    est = PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=4, restarts=2)
    assert est.fit(X, Y) is est
    Xn = m.sample_tokens(5, 2)
    pred = est.predict(Xn)
    np.testing.assert_allclose(pred, m.forward(est.interaction, Xn), atol=1e-13)
    err, se = est.l2_error(m, n_pairs=4000, rng=3)
    x, y = m.sample_pairs(4000, 3)
    assert err == pytest.approx(np.mean((est.interaction(x, y) - m.interaction(x, y)) ** 2))
    assert 0 < se < err
    # clearly better than the best constant
    assert err < 0.5 * np.var(m.interaction(x, y))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    m = IPSModel(d=5, N=3, degree=3, noise=0.1, seed=0)
    X, Y = m.sample(600, 1)
    a = PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=4, restarts=1).fit(X, Y)
    b = PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=4, restarts=1, device="cuda").fit(X, Y)
    assert abs(a.objective_ - b.objective_) < 1e-8 * a.objective_


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(rank=0), "rank"),
        (dict(degree=-1), "degree"),
        (dict(n_intervals=0), "n_intervals"),
        (dict(restarts=0), "restarts"),
        (dict(ridge=-1.0), "ridge"),
        (dict(extrapolation="linear"), "extrapolation"),
        (dict(range_quantile=0.3), "range_quantile"),
        (dict(optimizer="adam"), "optimizer"),
    ],
)
def test_invalid_parameters(kwargs, word):
    with pytest.raises(ValueError, match=word):
        PairwiseInteractionEstimator(**kwargs)


def test_invalid_data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 3, 2))
    Y = rng.standard_normal((10, 3))
    est = PairwiseInteractionEstimator(rank=1)
    with pytest.raises(ValueError, match="rank"):
        PairwiseInteractionEstimator(rank=3).fit(X, Y)
    with pytest.raises(ValueError, match="Y"):
        est.fit(X, Y[:, :2])
    with pytest.raises(ValueError, match="N >= 2"):
        est.fit(X[:, :1], Y[:, :1])
    with pytest.raises(ValueError, match="M >= 2"):
        est.fit(X[:1], Y[:1])
    Xn = X.copy()
    Xn[1, 1, 1] = np.nan
    with pytest.raises(ValueError, match="X"):
        est.fit(Xn, Y)
    Yn = Y.copy()
    Yn[2, 0] = np.inf
    with pytest.raises(ValueError, match="Y"):
        est.fit(X, Yn)
    with pytest.raises(RuntimeError, match="not fitted"):
        est.predict(X)


def test_d1_is_a_single_solve_and_options():
    m = IPSModel(d=1, N=4, degree=3, noise=0.05, n_knots=6, support=1.0, seed=0)
    X, Y = m.sample(3000, 1)
    e = PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=8).fit(X, Y)
    assert e.n_iter_ == 0 and e.converged_ and abs(abs(float(e.A_[0, 0])) - 1) < 1e-12
    err, se = e.l2_error(m, n_pairs=20000, rng=1)
    assert err < 0.05 * np.var(m.phi_star(np.linspace(-1, 1, 1001)))
    # polynomial extension continues the end pieces; constant extension is flat beyond the range
    ep = PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=8, extrapolation="polynomial").fit(X, Y)
    lo, hi = e.range_
    far = np.array([hi + 0.5 * (hi - lo)])
    assert e.phi(far) == pytest.approx(e.phi(np.array([hi])))
    assert ep.phi(far) != pytest.approx(ep.phi(np.array([hi])))
    # range_quantile: the partition spans the inner quantiles
    eq = PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=8, range_quantile=0.01).fit(X, Y)
    assert eq.range_[0] > lo and eq.range_[1] < hi


def test_convergence_warning():
    from numerics.estimator import ConvergenceWarning

    m = IPSModel(d=4, N=3, degree=3, noise=0.1, seed=0)
    X, Y = m.sample(500, 1)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=4, restarts=1, max_iter=1, tol=1e-15).fit(X, Y)


def test_fixed_A_oracle_and_A_init():
    m = IPSModel(d=6, N=4, degree=3, noise=0.1, n_knots=6, support=1.0, seed=1)
    X, Y = m.sample(1500, 2)
    orc = PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=6).fit(X, Y, A=3.0 * m.A_star)
    assert orc.n_iter_ == 0
    np.testing.assert_allclose(orc.A_, m.A_star / np.linalg.norm(m.A_star), atol=1e-12)
    # the oracle is the phi-only least squares: its objective is the minimum over coefficients at A*
    ref = PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=6)
    ref._setup(X, Y)
    U, V = ref._balance(torch.tensor(orc.U_), torch.tensor(orc.V_))
    assert orc.objective_ == pytest.approx(float(ref._objective(U, V)[0]), rel=1e-12)
    full = PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=6, restarts=1).fit(X, Y, A_init=m.A_star)
    assert full.objective_ <= orc.objective_ * (1 + 1e-9)  # ERM over A can only do better in-sample
    with pytest.raises(ValueError, match="A must be"):
        PairwiseInteractionEstimator().fit(X, Y, A=np.ones((5, 5)))
    with pytest.raises(ValueError, match="A_init must be"):
        PairwiseInteractionEstimator().fit(X, Y, A_init=np.zeros((6, 6)))


def test_default_range_does_not_blow_up_on_heavy_tailed_scores():
    """Regression: the benchmark case (dense A*, d = 30, N = 5, K = 32, s = 1, M = 2^14, seed 0).

    With the old default (partition on the full observed range, ``range_quantile=0``) the end intervals
    held a handful of pairs and ``phi_hat`` was off by ~170 there: squared error 3e4 on one evaluation pair in
    2^17, L2 error 0.24, worse than predicting zero (0.167). The default now partitions the
    ``[1e-3, 1 - 1e-3]`` quantile range (constant beyond): L2 error 1.4e-4, worst pair 1.6e-2.
    """
    m = IPSModel(d=30, N=5, rank=1, truth="bspline", degree=3, token_law="uniform", noise=0.1, seed=0)
    X, Y = m.sample(2**14, np.random.default_rng([0, 2**14, 1]))
    x, y = m.sample_pairs(2**17, np.random.default_rng(10_000))
    g = m.interaction(x, y)
    est = PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=32).fit(X, Y)
    e2 = (est.interaction(x, y) - g) ** 2
    assert e2.mean() < 2e-3 * np.mean(g**2)  # measured 8e-4 of the zero predictor's error
    assert e2.max() < 1.0  # measured 1.6e-2 (3e4 with the old default)
    # the partition spans the inner quantiles of the training scores, phi_hat is bounded by its fit
    u = m.pair_values(X) / np.linalg.norm(m.A_star)
    assert np.max(np.abs(est.phi(np.linspace(-10, 10, 2001)))) < 10 * np.max(np.abs(Y))
    assert est.range_[1] - est.range_[0] < np.ptp(u[:, ~np.eye(5, dtype=bool)])
    # adaptive restarts: the two moment starts agree, so the random third start is not run
    assert est.n_starts_ == 2 and len(est.restart_objectives_) == 2


def test_adaptive_restarts_option():
    m = IPSModel(d=6, N=4, degree=3, noise=0.1, n_knots=6, support=1.0, seed=1)
    X, Y = m.sample(1500, 2)
    a = PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=6, restarts=4).fit(X, Y)
    b = PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=6, restarts=4, adaptive_restarts=False).fit(X, Y)
    assert b.n_starts_ == 4 and 1 <= a.n_starts_ <= 4
    assert a.objective_ <= b.objective_ * (1 + 1e-4)
    with pytest.raises(ValueError, match="join_tol"):
        PairwiseInteractionEstimator(join_tol=1.5)


# ------------------------------------------------------------------ the shared estimator shape
def test_both_estimators_share_one_base_class_and_argument_names():
    import inspect

    from benchmarks import paper_style as baseline
    from numerics import estimator
    from numerics._estimator_base import InteractionEstimator

    for cls in (estimator.PairwiseInteractionEstimator, baseline.PaperStyleEstimator):
        assert issubclass(cls, InteractionEstimator)
        names = list(inspect.signature(cls.l2_error).parameters)[:4]
        assert names == ["self", "model", "n_pairs", "rng"], (cls, names)
        for method in ("fit", "predict", "interaction"):
            assert list(inspect.signature(getattr(cls, method)).parameters)[:2] in (["self", "X"], ["self", "x"])
    assert estimator.ConvergenceWarning is baseline.ConvergenceWarning
    with pytest.raises(TypeError):
        InteractionEstimator()  # abstract


def test_shared_data_check():
    from numerics._estimator_base import check_XY

    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((3, 4, 2)), rng.standard_normal((3, 4))
    Xc, Yc = check_XY(X, Y)
    assert Xc.dtype == np.float64 and Yc.shape == (3, 4)
    assert check_XY(X)[1] is None
    assert check_XY(X[:1], Y[:1])[0].shape == (1, 4, 2)  # M = 1 is enough to predict
    for bad_X, bad_Y, word in [(X[0], Y, "X must have shape"), (X[:, :1], Y[:, :1], "N >= 2"),
                               (X, Y[:, :3], "Y must have shape"), (X[:0], Y[:0], "M >= 1")]:
        with pytest.raises(ValueError, match=word):
            check_XY(bad_X, bad_Y)
    with pytest.raises(ValueError, match="M >= 2"):
        check_XY(X[:1], Y[:1], min_samples=2)
    Yn = Y.copy()
    Yn[0, 0] = np.nan
    with pytest.raises(ValueError, match="Y must be a finite"):
        check_XY(X, Yn)


def test_l2_error_is_the_monte_carlo_mean_with_its_standard_error():
    m = IPSModel(d=2, N=3, degree=3, noise=0.05, n_knots=4, support=1.0, seed=1)
    X, Y = m.sample(400, 0)
    est = PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=4).fit(X, Y)
    value, se = est.l2_error(m, n_pairs=1000, rng=4)
    x, y = m.sample_pairs(1000, np.random.default_rng(4))
    e2 = (est.interaction(x, y) - m.interaction(x, y)) ** 2
    assert value == float(e2.mean()) and se == float(e2.std(ddof=1) / np.sqrt(e2.size))
    with pytest.raises(ValueError, match="rng"):
        est.l2_error(m, n_pairs=1000, rng=None)
    with pytest.raises(ValueError, match="n_pairs"):
        est.l2_error(m, n_pairs=1)
