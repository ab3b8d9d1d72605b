"""The Gauss-Newton path's products with the design matrix ``B`` from its nonzeros (``PairDesign``) against the
dense products (``DenseDesign``): the same sums in another order, so equal to rounding.

Two levels:

- the products themselves (``B^T B``, ``B^T y``, ``B c``, ``B^T J``) on the full grid of configurations, against
  the worst-case bound of a reordered sum (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
  eq. (4.4)): a sum of ``n`` rounded products computed in any order is within ``gamma_{n+1} sum |terms|`` of the
  exact sum (``gamma_k = k u / (1 - k u)``, ``u = 2^-53``), so two orders differ by at most twice that;
- whole fits (``objective_``, ``A_``, ``coef_``) on configurations covering every level of every factor, against
  each configuration's measured sensitivity to summation order (see :func:`test_fits_agree_with_the_dense_path`).
"""

from __future__ import annotations

import functools
import itertools
import warnings

import numpy as np
import pytest
import torch

from numerics import IPSModel, PairwiseInteractionEstimator
from numerics.estimator import DenseDesign, PairDesign, pair_design_pays
from numerics.threads import torch_threads

U_ROUND = np.finfo(np.float64).eps / 2

#: the factors of the grid: d, N, r, s, ridge, range_quantile, extrapolation
GRID = [c for c in itertools.product((1, 2, 5, 30), (3, 5), (1, 2), (0, 1, 3), (0.0, 1e-4), (0.0, 1e-3),
                                     ("constant", "polynomial")) if c[2] <= c[0]]


def _gamma(n: int) -> float:
    return n * U_ROUND / (1 - n * U_ROUND)


def _estimator(d, N, r, s, ridge, q, ext, mode="auto", K=5):
    est = PairwiseInteractionEstimator(rank=r, degree=s, n_intervals=K, ridge=ridge, range_quantile=q,
                                       extrapolation=ext, restarts=2, random_state=0)
    est._design_mode = mode
    return est


@functools.lru_cache(maxsize=None)
def _model(d, N, r):
    return IPSModel(d=d, N=N, rank=r, degree=3, noise=0.1, seed=d * 100 + N * 10 + r)


def _data(d, N, r, M, seed=1):
    return _model(d, N, r).sample(M, seed)


def test_products_within_the_reordered_sum_bound():
    """Every product of the pair design within ``2 gamma_m`` (terms in absolute value) of the dense product's, on
    the full grid. ``m = 2 n_rows N^2`` bounds the number of rounded terms of any entry in either order (the
    Gram matrix's entries are sums over the rows and their ``(N-1)^2`` slot pairs, each entry of ``B`` a sum of at
    most ``N - 1`` pair values)."""
    with torch_threads(1):  # as the fits run (one intra-op thread: many small products)
        _check_products_on_the_grid()


def _check_products_on_the_grid() -> None:
    M = 60
    seen = set()
    for d, N, r, s, ridge, q, ext in GRID:
        key = (d, N, r, s, q, ext)  # ridge does not enter the products
        if key in seen:
            continue
        seen.add(key)
        rng = np.random.default_rng([d, N, r, s])  # any data: the products are compared, not the fit
        X, Y = rng.standard_normal((M, N, d)), rng.standard_normal((M, N))
        e = _estimator(d, N, r, s, ridge, q, ext)
        e._cfg = e._checked_params()
        e._setup(X, Y)
        g = torch.Generator().manual_seed(d + N + r + s)
        U, V = e._balance(torch.randn(d, r, generator=g, dtype=torch.float64),
                          torch.randn(d, r, generator=g, dtype=torch.float64))
        with torch.no_grad():
            basis = e._pair_basis(U[None], V[None], e._X)
            pairs = e._pair_design(basis)
            dense = DenseDesign(pairs.dense())
            absolute = DenseDesign(PairDesign(pairs.idx, pairs.vals.abs(), pairs.K, e._buffer).dense())
            c = torch.randn(1, pairs.p, generator=g, dtype=torch.float64)
            J = e._jacobian(basis, c, e._X, pairs).clone() if d > 1 else torch.randn(1, M * N, 3, dtype=torch.float64)
        bound = 2 * _gamma(2 * M * N * N * N)
        checks = {
            "gram": (pairs.gram(), dense.gram(), absolute.gram()),
            "rmatvec": (pairs.rmatvec(e._Y), dense.rmatvec(e._Y), absolute.rmatvec(e._Y.abs())),
            "matvec": (pairs.matvec(c), dense.matvec(c), absolute.matvec(c.abs())),
            "rmatmat": (pairs.rmatmat(J), dense.rmatmat(J), absolute.rmatmat(J.abs())),
        }
        for name, (got, want, scale) in checks.items():
            excess = (got - want).abs() - bound * scale
            assert float(excess.max()) <= 0.0, (name, key, float((got - want).abs().max()))


def test_pair_gram_is_symmetric_and_matches_a_naive_sum():
    """``B^T B`` from the slot pairs, against the explicit sum of the rows' outer products (two replicates, so the
    replicate offsets of the scatter are exercised too)."""
    g = torch.Generator().manual_seed(3)
    R, n_rows, n1, K, S = 2, 7, 3, 4, 2
    idx = torch.randint(0, K, (R, n_rows, n1), generator=g)
    vals = torch.randn(S, R, n_rows, n1, generator=g, dtype=torch.float64)  # basis function first
    G = PairDesign(idx, vals, K, lambda name, shape: torch.empty(shape, dtype=torch.float64)).gram()
    ref = torch.zeros(R, K * S, K * S, dtype=torch.float64)
    for rep, row in itertools.product(range(R), range(n_rows)):
        b = torch.zeros(K * S, dtype=torch.float64)
        for j in range(n1):
            b[idx[rep, row, j] * S: idx[rep, row, j] * S + S] += vals[:, rep, row, j]
        ref[rep] += torch.outer(b, b)
    torch.testing.assert_close(G, ref, rtol=0, atol=2 * _gamma(4 * n_rows * n1 * n1) * float(ref.abs().max()))
    assert torch.equal(G, G.mT)


def test_pair_gram_of_many_rows():
    """Beyond 2^17 rows the Gram matrix is summed from contiguous copies of the slots: the same sums."""
    g = torch.Generator().manual_seed(4)
    R, n_rows, n1, K, S = 2, 2**16 + 3, 3, 5, 2
    idx = torch.randint(0, K, (R, n_rows, n1), generator=g)
    vals = torch.randn(S, R, n_rows, n1, generator=g, dtype=torch.float64)
    pairs = PairDesign(idx, vals, K, lambda name, shape: torch.empty(shape, dtype=torch.float64))
    dense = DenseDesign(pairs.dense()).gram()
    scale = DenseDesign(PairDesign(idx, vals.abs(), K, pairs._buffer).dense()).gram()
    assert float(((pairs.gram() - dense).abs() - 2 * _gamma(2 * n_rows * n1 * n1) * scale).max()) <= 0.0


#: configurations covering every level of every factor of GRID (and most pairs of levels), well posed at M = 400
COVER = [
    (1, 3, 1, 0, 0.0, 0.0, "constant"), (1, 5, 1, 3, 1e-4, 1e-3, "polynomial"),
    (2, 3, 2, 1, 1e-4, 0.0, "polynomial"), (2, 5, 1, 3, 0.0, 1e-3, "constant"),
    (5, 3, 1, 1, 0.0, 1e-3, "polynomial"), (5, 5, 2, 0, 1e-4, 0.0, "constant"),
    (5, 3, 2, 3, 1e-4, 1e-3, "constant"), (30, 5, 1, 1, 1e-4, 1e-3, "constant"),
    (30, 3, 1, 0, 0.0, 0.0, "polynomial"), (30, 5, 2, 1, 0.0, 1e-3, "polynomial"),
    (30, 3, 2, 3, 1e-4, 0.0, "constant"),
]


def _fit(X, Y, config, mode):
    est = _estimator(*config, mode=mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a ConvergenceWarning is the same in both paths (compared below)
        return est.fit(X, Y)


def _differences(a, b) -> np.ndarray:
    sign = 1.0 if np.sum(a.A_ * b.A_) >= 0 else -1.0
    return np.array([abs(a.objective_ - b.objective_) / a.objective_, np.linalg.norm(a.A_ - sign * b.A_),
                     np.linalg.norm(a.coef_ - b.coef_) / np.linalg.norm(a.coef_)])


@pytest.mark.parametrize("config", COVER, ids=lambda c: "-".join(map(str, c)))
def test_fits_agree_with_the_dense_path(config):
    """Same starts, same iterations; ``objective_`` (relative), ``A_`` (Frobenius, up to sign) and ``coef_``
    (relative) within ``32 x`` the configuration's sensitivity to summation order.

    The sensitivity is measured, not assumed: the dense path refitted on the samples in reverse order (the
    objective is a sum over samples: the same sums in another order), with the floor ``sqrt(M N) u`` (the
    random-walk rounding of one sum over the ``M N`` rows; a reversal may happen to round alike). The factor:
    the pair path reorders more terms per sum than a reversal, the ``(N-1)^2`` slot pairs times the
    ``(s+1)^2`` basis pairs of each row (up to 64 here) -- with random-walk rounding ``sqrt(64) = 8`` -- times 4
    for one realisation of a random quantity against another (measured on the 336 configurations of GRID at
    ``M = 400``: at most 17x, median 1.5x)."""
    d, N, r = config[:3]
    M = 400
    X, Y = _data(d, N, r, M)
    dense, pairs = _fit(X, Y, config, "dense"), _fit(X, Y, config, "pairs")
    reversed_ = _fit(X[::-1].copy(), Y[::-1].copy(), config, "dense")
    assert (pairs.n_iter_, pairs.n_starts_, pairs.converged_) == (dense.n_iter_, dense.n_starts_, dense.converged_)
    yardstick = np.maximum(_differences(dense, reversed_), np.sqrt(M * N) * U_ROUND)
    diff = _differences(dense, pairs)
    assert np.all(diff <= 32 * yardstick), (diff, yardstick)


def test_size_rule_and_auto_choice():
    """The pair design from ``n_rows p^2 >= 1e7`` on and only for sparse rows; "auto" follows the rule."""
    assert not pair_design_pays(2500, 5, 40, 2)  # M = 500, K = 20, s = 1: dense (measured faster)
    assert pair_design_pays(13445, 5, 56, 2)  # M = 2689, K = 28
    assert not pair_design_pays(10**6, 5, 12, 2)  # rows 2/3 nonzero: no sparsity to use
    X, Y = _data(5, 5, 1, 2689)
    e = _estimator(5, 5, 1, 1, 1e-4, 1e-3, "constant", K=28)
    e._cfg = e._checked_params()
    e._setup(X, Y)
    U, V = e._balance(torch.ones(5, 1, dtype=torch.float64), torch.ones(5, 1, dtype=torch.float64))
    assert isinstance(e._design_of(e._pair_basis(U[None], V[None], e._X)), PairDesign)
    e._setup(X[:500], Y[:500])
    assert isinstance(e._design_of(e._pair_basis(U[None], V[None], e._X)), DenseDesign)


def test_singular_gram_does_not_stop_the_fit():
    """Ridge 0 with a nearly empty interval (full range, d = 30, 450 rows): the Cholesky factorisation of
    ``B^T B`` fails and the projected Jacobian falls back to a least-squares solve (it used to raise)."""
    X, Y = _data(30, 3, 1, 150)
    for mode in ("dense", "pairs"):
        est = _fit(X, Y, (30, 3, 1, 1, 0.0, 0.0, "polynomial"), mode)
        assert np.isfinite(est.objective_) and est.objective_ < np.var(Y)
