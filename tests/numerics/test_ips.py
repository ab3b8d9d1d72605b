"""Tests of numerics.ips.IPSModel (paper A's data model)."""

from __future__ import annotations

import numpy as np
import pytest

from numerics import IPSModel


def naive_forward(g, X):
    M, N, _ = X.shape
    out = np.zeros((M, N))
    for m in range(M):
        for i in range(N):
            out[m, i] = sum(g(X[m, i], X[m, j]) for j in range(N) if j != i) / (N - 1)
    return out


@pytest.mark.parametrize("law", ["uniform", "gaussian", "anisotropic", "exchangeable"])
@pytest.mark.parametrize("truth", ["bspline", "hard"])
def test_shapes_dtype_reproducible(law, truth):
    m = IPSModel(d=4, N=3, rank=2, truth=truth, degree=3, token_law=law, seed=3)
    X, Y = m.sample(50, rng=7)
    assert X.shape == (50, 3, 4) and Y.shape == (50, 3)
    assert X.dtype == np.float64 and Y.dtype == np.float64
    X2, Y2 = m.sample(50, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(Y, Y2)
    X3, _ = m.sample(50, rng=8)
    assert not np.allclose(X, X3)
    # the truth is fixed by the model seed, not by the sampling stream
    m2 = IPSModel(d=4, N=3, rank=2, truth=truth, degree=3, token_law=law, seed=3)
    np.testing.assert_array_equal(m.A_star, m2.A_star)
    assert np.linalg.matrix_rank(m.A_star) == 2
    assert not np.allclose(IPSModel(d=4, N=3, rank=2, truth=truth, token_law=law, seed=4).A_star, m.A_star)


def test_beta_and_degree():
    assert IPSModel(d=2, N=2, degree=3).beta == 2.0
    assert IPSModel(d=2, N=2, degree=8).beta == 7.0
    assert IPSModel(d=2, N=2, degree=8).smoothness_degree == 6
    assert IPSModel(d=2, N=2, truth="hard", degree=3).beta == 2.0
    assert IPSModel(d=2, N=2, truth="hard", beta=1.5).beta == 1.5
    assert IPSModel(d=2, N=2, truth="hard", beta=1.5).smoothness_degree == 1


@pytest.mark.parametrize("law", ["uniform", "gaussian", "anisotropic", "exchangeable"])
def test_u_scaling_quantile(law):
    m = IPSModel(d=6, N=3, token_law=law, seed=1)
    x, y = m.sample_pairs(200000, rng=11)
    u = np.einsum("nk,kl,nl->n", x, m.A_star, y)
    frac = np.mean(np.abs(u) > 1.0)
    # 0.001 expected; SE = sqrt(1e-3/2e5) = 7.1e-5 (this test) (+) sqrt(1e-3/2^17) = 8.7e-5 (calibration)
    assert abs(frac - 1e-3) < 4 * np.hypot(7.1e-5, 8.7e-5)


def test_uniform_tokens_are_numpys_uniform_draws_bit_for_bit():
    """The uniform and exchangeable laws draw ``random() * 2 - 1``: numpy's ``uniform(-1, 1)`` bit for bit, stream
    position included (the next draw agrees too)."""
    M, N, d, rho = 3000, 4, 5, 0.3
    g1, g2 = np.random.default_rng(8), np.random.default_rng(8)
    np.testing.assert_array_equal(IPSModel(d=d, N=N, token_law="uniform").sample_tokens(M, g1),
                                  g2.uniform(-1.0, 1.0, (M, N, d)))
    X = IPSModel(d=d, N=N, token_law="exchangeable", rho=rho).sample_tokens(M, g1)
    U, W = g2.uniform(-1.0, 1.0, (M, N, d)), g2.uniform(-1.0, 1.0, (M, 1, d))
    np.testing.assert_array_equal(X, np.sqrt(1.0 - rho) * U + np.sqrt(rho) * W)
    assert g1.random() == g2.random()


def test_token_laws_moments():
    rng = np.random.default_rng(0)
    M = 20000
    X = IPSModel(d=3, N=2, token_law="uniform").sample_tokens(M, rng)
    assert X.min() >= -1 and X.max() <= 1
    np.testing.assert_allclose(X.reshape(-1, 3).var(axis=0), 1 / 3, atol=0.01)
    X = IPSModel(d=3, N=2, token_law="gaussian").sample_tokens(M, rng)
    np.testing.assert_allclose(np.cov(X.reshape(-1, 3), rowvar=False), np.eye(3), atol=0.03)
    m = IPSModel(d=4, N=2, token_law="anisotropic", seed=5)
    X = m.sample_tokens(M, rng).reshape(-1, 4)
    ev = np.sort(np.linalg.eigvalsh(np.cov(X, rowvar=False)))
    lam = np.sort(m._lambda)
    np.testing.assert_allclose(ev, lam, rtol=0.05, atol=0.01)
    assert abs(lam.sum() - 4) < 1e-12 and abs(lam.max() / lam.min() - 100) < 1e-9
    rho = 0.4
    m = IPSModel(d=2, N=3, token_law="exchangeable", rho=rho)
    X = m.sample_tokens(M, rng)
    c = np.corrcoef(X[:, 0, 0], X[:, 1, 0])[0, 1]
    assert abs(c - rho) < 0.03  # Cov = rho Var(W), Var = (1 - rho + rho)/3
    x, y = m.sample_pairs(M, rng)
    assert abs(np.corrcoef(x[:, 1], y[:, 1])[0, 1] - rho) < 0.03


@pytest.mark.parametrize("law", ["uniform", "exchangeable"])
def test_forward_matches_naive_loop(law):
    m = IPSModel(d=3, N=4, rank=2, token_law=law, seed=2)
    X = m.sample_tokens(6, 0)
    ref = naive_forward(lambda a, b: m.phi_star(a @ m.A_star @ b), X)
    np.testing.assert_allclose(m.forward(None, X), ref, atol=1e-13)
    np.testing.assert_allclose(m.forward(m.interaction, X), ref, atol=1e-13)
    g = lambda a, b: np.sin(a[..., 0] - 2 * b[..., 1]) + a[..., 2] * b[..., 2] ** 2  # noqa: E731
    np.testing.assert_allclose(m.forward(g, X, chunk=7), naive_forward(g, X), atol=1e-13)


def test_noise_free_is_forward_and_equivariant():
    m = IPSModel(d=3, N=5, noise=0.0, seed=0)
    X, Y = m.sample(40, 1)
    np.testing.assert_allclose(Y, m.forward(None, X), atol=0)
    perm = np.array([3, 0, 4, 1, 2])
    np.testing.assert_allclose(m.forward(None, X[:, perm]), Y[:, perm], atol=1e-14)


@pytest.mark.parametrize("law", ["uniform", "exchangeable"])
def test_exchangeable_positions_have_equal_means(law):
    m = IPSModel(d=2, N=3, token_law=law, noise=0.1, seed=0)
    X, Y = m.sample(30000, 2)
    means = Y.mean(axis=0)
    se = Y.std(axis=0).max() / np.sqrt(Y.shape[0])
    assert np.ptp(means) < 5 * np.sqrt(2) * se


def test_noise_laws():
    m = IPSModel(d=2, N=2, noise=0.3, noise_law="rademacher")
    e = m.sample_noise((1000,), 0)
    assert set(np.round(np.unique(e), 12)) == {-0.3, 0.3}
    e = IPSModel(d=2, N=2, noise=0.3).sample_noise((40000,), 0)
    assert abs(e.std() - 0.3) < 0.01


def test_truths():
    m = IPSModel(d=2, N=2, degree=3, support=1.25)
    assert np.all(m.phi_star(np.array([-3.0, -1.26, 1.26, 5.0])) == 0.0)
    # C^{P-1} = C^2 at the support end: the spline and two derivatives vanish there
    h = 1e-4
    u = -1.25 + np.array([h, 2 * h])
    assert np.all(np.abs(m.phi_star(u)) < 1e-9)
    hard = IPSModel(d=2, N=2, truth="hard", beta=0.5)
    v = hard.phi_star(np.linspace(-2, 2, 101))
    bound = sum(2.0 ** (-0.5 * k) for k in range(25))
    assert np.all(np.isfinite(v)) and np.abs(v).max() <= bound
    # Hölder 1/2 and no better: the increments at scale 2^-k shrink like 2^{-k/2}
    grid = np.random.default_rng(0).uniform(-1, 1, 4000)
    incr = [np.sqrt(np.mean((hard.phi_star(grid + 2.0**-k) - hard.phi_star(grid)) ** 2)) for k in (6, 10)]
    ratio = np.log2(incr[0] / incr[1]) / 4
    assert 0.4 < ratio < 0.6


def test_sample_pairs_and_interaction():
    m = IPSModel(d=3, N=4, seed=0)
    x, y = m.sample_pairs(10, 0)
    assert x.shape == (10, 3) and y.shape == (10, 3)
    np.testing.assert_allclose(m.interaction(x, y), m.phi_star(np.einsum("nk,kl,nl->n", x, m.A_star, y)))
    u = m.pair_values(np.stack([x, y], axis=1))
    np.testing.assert_allclose(u[:, 0, 1], np.einsum("nk,kl,nl->n", x, m.A_star, y))


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(d=2, N=3, rank=3), "rank"),
        (dict(d=2, N=1), "N"),
        (dict(d=0, N=3), "d"),
        (dict(d=2, N=3, degree=0), "degree"),
        (dict(d=2, N=3, degree=1), "degree"),
        (dict(d=2, N=3, token_law="cauchy"), "token_law"),
        (dict(d=2, N=3, truth="relu"), "truth"),
        (dict(d=2, N=3, noise=-0.1), "noise"),
        (dict(d=2, N=3, noise_law="laplace"), "noise_law"),
        (dict(d=2, N=3, rho=1.0), "rho"),
        (dict(d=2, N=3, beta=3.0), "beta"),
        (dict(d=2, N=3, truth="hard", beta=-1.0), "beta"),
        (dict(d=2, N=3, n_knots=1), "n_knots"),
    ],
)
def test_invalid_parameters(kwargs, word):
    with pytest.raises(ValueError, match=word):
        IPSModel(**kwargs)


def test_invalid_data():
    m = IPSModel(d=2, N=3)
    X = m.sample_tokens(4, 0)
    X[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="X"):
        m.forward(None, X)
    with pytest.raises(ValueError, match="X"):
        m.forward(None, np.zeros((4, 3, 5)))
    with pytest.raises(ValueError, match="rng"):
        m.sample(4, rng="0")  # strings are not seeds
    with pytest.raises(ValueError, match="M"):
        m.sample(0, rng=0)


def test_sparse_structure_law_of_u_is_dimension_free():
    qs = []
    for d in (1, 4, 12):
        m = IPSModel(d=d, N=3, A_structure="sparse", seed=2)
        assert np.count_nonzero(m.A_star) == 1
        x, y = m.sample_pairs(20000, rng=4)  # same stream: the law of (x_a, y_b) is the same for all d
        u = np.einsum("nk,kl,nl->n", x, m.A_star, y)
        assert np.abs(u).max() <= 1.0  # exact bound on the cube
        qs.append(np.quantile(np.abs(u), [0.25, 0.5, 0.9]))
    # |u| = |x_a y_b| for uniform x, y: P(|u| <= t) = t (1 - log t); quantiles agree across d within MC error
    np.testing.assert_allclose(qs[0], qs[1], atol=0.02)
    np.testing.assert_allclose(qs[0], qs[2], atol=0.02)
    assert abs(qs[0][1] - 0.187) < 0.01  # median of |U1 U2|: t (1 - log t) = 1/2 at t = 0.1867
    m = IPSModel(d=6, N=3, rank=3, A_structure="sparse")
    assert np.count_nonzero(m.A_star) == 3 and np.linalg.matrix_rank(m.A_star) == 3


@pytest.mark.parametrize("P", [3, 5, 8])
def test_bspline_truth_is_C_P_minus_1(P):
    """The B-spline truth and its derivatives up to order P-1 are continuous (also at the support ends)."""
    m = IPSModel(d=1, N=2, degree=P, n_knots=P, support=1.0, seed=1)
    spl = m._spline
    eps = 1e-9
    pts = np.r_[spl.t, -1.0, 1.0]
    for k in range(P):
        dk = spl.derivative(k)
        f = lambda v: np.nan_to_num(dk(v), nan=0.0)  # noqa: E731  (zero extension outside)
        scale = np.abs(f(np.linspace(-1, 1, 2001))).max()
        assert np.abs(f(pts + eps) - f(pts - eps)).max() < 1e-4 * scale + 1e-12
    # and the truth is not a polynomial of degree P-2 on an interval longer than the knot spacing
    u = np.linspace(-0.5, 0.5, 400)
    coef = np.polynomial.polynomial.polyfit(u, m.phi_star(u), P - 2)
    assert np.abs(np.polynomial.polynomial.polyval(u, coef) - m.phi_star(u)).max() > 1e-6


def test_construction_is_deterministic_and_the_streams_are_independent():
    """The truth is a function of the seed; the activation's stream does not move A* (separate streams)."""
    a, b = IPSModel(d=4, N=3, seed=2), IPSModel(d=4, N=3, seed=2)
    np.testing.assert_array_equal(a.A_star, b.A_star)
    np.testing.assert_array_equal(a._spline_coef, b._spline_coef)
    hard = IPSModel(d=4, N=3, seed=2, truth="hard", beta=1.5)
    np.testing.assert_array_equal(hard.A_star, a.A_star)  # same g_a / g_scale streams
    assert IPSModel(d=4, N=3, seed=3).A_star.tolist() != a.A_star.tolist()


def test_scale_puts_the_stated_quantile_of_u_at_one():
    m = IPSModel(d=6, N=3, rank=2, token_law="gaussian", seed=1)
    x, y = m.sample_pairs(2**16, np.random.default_rng(9))
    u = np.abs(np.einsum("nk,kl,nl->n", x, m.A_star, y))
    assert np.quantile(u, m.u_quantile) == pytest.approx(1.0, rel=0.05)
    sparse = IPSModel(d=6, N=3, rank=2, A_structure="sparse", seed=1)  # cube: the supremum is 1
    x, y = sparse.sample_pairs(2**14, np.random.default_rng(9))
    assert np.abs(np.einsum("nk,kl,nl->n", x, sparse.A_star, y)).max() <= 1.0 + 1e-12


@pytest.mark.parametrize("kwargs, word", [(dict(truth="bspline", beta=1.5), "beta"), (dict(degree=1), "degree"),
                                          (dict(truth="hard", beta=-1.0), "beta")])
def test_beta_rules(kwargs, word):
    with pytest.raises(ValueError, match=word):
        IPSModel(d=3, N=3, **kwargs)
    assert IPSModel(d=3, N=3, truth="hard", degree=3).beta == 2.0  # default degree - 1


def test_sample_rng_is_none_int_or_generator():
    """``rng``: an integer seed reproduces, a generator is consumed, ``None`` draws fresh entropy."""
    m = IPSModel(d=2, N=3, seed=1)
    X0, Y0 = m.sample(5, rng=3)
    X1, Y1 = m.sample(5, rng=np.random.default_rng(3))
    assert np.array_equal(X0, X1) and np.array_equal(Y0, Y1)
    gen = np.random.default_rng(3)
    assert not np.array_equal(m.sample(5, gen)[0], m.sample(5, gen)[0])  # the generator moved on
    Xa, _ = m.sample(5)
    Xb, _ = m.sample(5, rng=None)
    assert Xa.shape == (5, 3, 2) and not np.array_equal(Xa, Xb)
    x, y = m.sample_pairs(4)
    assert x.shape == y.shape == (4, 2)


@pytest.mark.parametrize("P, n_knots, L", [(2, 2, 1.0), (3, 16, 1.25), (5, 8, 1.0), (8, 8, 1.25)])
def test_bspline_truth_table_equals_the_bspline(P, n_knots, L):
    """phi* and phi*' (the per-interval polynomial table) equal scipy's B-spline and its derivative to rounding: at the
    knots, the support's ends, just outside them (0) and at random points, in any array shape."""
    m = IPSModel(d=1, N=2, degree=P, n_knots=n_knots, support=L, seed=3)
    u = np.r_[np.random.default_rng(0).uniform(-1.3 * L, 1.3 * L, 5000), m._spline.t, -L, L,
              np.nextafter(L, 2.0), np.nextafter(-L, -2.0)]
    for ours, ref in ((m.phi_star, m._spline), (m.phi_star_derivative, m._spline.derivative())):
        want = np.nan_to_num(ref(u), nan=0.0)
        np.testing.assert_allclose(ours(u), want, rtol=0, atol=1e-13 * np.abs(want).max())
        assert ours(u.reshape(-1, 1, 1)).shape == (u.size, 1, 1)
    assert m.phi_star(np.nextafter(L, 2.0)) == 0.0 and m.phi_star_derivative(-1.5 * L) == 0.0
