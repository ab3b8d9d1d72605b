"""A-priori error model of paper A's estimator (least-squares asymptotics), before any fit.

For the least-squares estimator in the linear space spanned by the piecewise-polynomial basis ``b`` of
:class:`numerics.PairwiseInteractionEstimator` (and, for ``d > 1``, the tangent directions of the rank-``r``
matrix manifold at ``A*``, scale removed), the usual asymptotics give

    E ||g_hat - g*||^2  ~  B(K) + (V_np(K) + V_par(K, d, r)) / M,

- ``B(K) = ||g* - g_F||^2_rho`` with ``g_F`` the population least-squares fit in the *forward* metric
  (``c_F = argmin E |R_{g*} - R_{g_c}|^2``), the limit of the estimator at fixed ``K``;
- ``V = sigma^2 tr(G Sigma^+) / N`` with ``G = E_rho[f f^T]`` (pairs) and ``Sigma = E[F_i F_i^T]``,
  ``F_i = 1/(N-1) sum_{j != i} f(X_i, X_j)`` (rows of the design), where ``f`` are the basis functions
  (``V_np``) or the basis functions plus the ``A``-tangent features ``phi*'(u) (x^T dA y)`` (``V_np + V_par``).
  ``V_par`` is the parametric term of the paper (it grows like ``r (2d - r)``).

All expectations are Monte Carlo over a large fixed population sample (seeded).  The estimator's range is the
central ``1 - 2 RANGE_Q`` quantile range of ``u = x^T A* y`` (:func:`_population_range`).  Derived by the project;
the checks A2-A4 and A6 test it against simulation (their "finite-M prediction" comparisons).

:func:`predict_error` and :func:`predict_log_error` validate their inputs (:mod:`theory.validation`; arrays against
the memory budget before they are drawn); :func:`predict_error_grid`, :func:`predict_log_errors` (verify's sweeps),
:class:`EvalSet` and :func:`conditional_parts` (studies) trust theirs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
from scipy import sparse
from scipy.linalg import null_space

from theory.validation import (ArgumentTypeError, as_float, as_int, check_array_memory, check_flag, check_seed,
                               describe, finite_result)

from .ips import IPSModel, bilinear_forms
from .threads import torch_numeric_errors

__all__ = ["RANGE_Q", "DesignStopping", "predict_error", "predict_log_error"]

#: range quantile of the estimator in the designs (``range_quantile`` of the fits): the central 99.9%
RANGE_Q = 5e-4
#: most design draws of :func:`predict_log_error`
MAX_DESIGNS = 10**5


def _check_model(model: object) -> IPSModel:
    if not isinstance(model, IPSModel):
        raise ArgumentTypeError(f"model must be a numerics.IPSModel, got {describe(model)} of type "
                                f"{type(model).__name__}")
    return model


def _basis(u: np.ndarray, lo: float, hi: float, K: int, s: int, rows: np.ndarray | None = None,
           n_rows: int | None = None) -> sparse.csr_matrix:
    """Sparse piecewise-Legendre basis; pair ``n`` goes to row ``rows[n]`` (duplicates are summed)."""
    z = np.clip((u - lo) / (hi - lo) * K, 0.0, float(K))
    idx = np.clip(np.floor(z), 0, K - 1).astype(np.int64)
    t = 2.0 * (z - idx) - 1.0
    V = np.polynomial.legendre.legvander(t, s) * np.sqrt(2 * np.arange(s + 1) + 1.0)
    cols = idx[:, None] * (s + 1) + np.arange(s + 1)[None, :]
    r = np.arange(u.size) if rows is None else rows
    shape = (u.size if n_rows is None else n_rows, K * (s + 1))
    return sparse.coo_matrix((V.ravel(), (np.repeat(r, s + 1), cols.ravel())), shape=shape).tocsr()


def _fixed_directions(A: np.ndarray, U: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Directions of ``(W, Z)`` (``dA = U W^T + Z V^T``, the layout of :class:`_Features`) that do not move ``u`` to
    first order or are fixed by the estimator: the scale of ``A*`` (removed by the normalisation) and the ``r^2`` gauge
    directions ``W = V E^T, Z = -U E`` (``dA = 0``); the ``2 d r - r^2 - 1`` left are the unit-norm rank-``r`` ones."""
    r = U.shape[1]
    rows = [np.concatenate([(A.T @ U).ravel(), (A @ V).ravel()])]
    for a in range(r):
        for b in range(r):
            E = np.zeros((r, r))
            E[a, b] = 1.0
            rows.append(np.concatenate([(V @ E.T).ravel(), (-U @ E).ravel()]))
    return np.array(rows)


class _Features:
    """Per-pair features: sparse piecewise-polynomial basis and (optionally) dense A-tangent directions."""

    def __init__(self, model: IPSModel, lo: float, hi: float, K: int, s: int, with_A: bool) -> None:
        self.model, self.lo, self.hi, self.K, self.s = model, lo, hi, K, s
        self.p = K * (s + 1)
        A = model.A_star
        self.with_A = with_A and model.d > 1
        if self.with_A:
            Uf, _, Vt = np.linalg.svd(A)
            r = model.rank
            self.U, self.V = Uf[:, :r], Vt[:r].T
            self.Q = null_space(_fixed_directions(A, self.U, self.V))  # the tangent directions that move u

    def rows(self, X: np.ndarray, u: np.ndarray | None = None) -> tuple[sparse.csr_matrix, np.ndarray | None]:
        """Design rows of the samples ``X`` ``(M, N, d)``: row ``(m, i)`` sums the features of the pairs
        ``(X_mi, X_mj)``, ``j != i`` (divide by ``N - 1`` for the forward operator); ``u`` their pair values
        ``(M, N, N)`` if known. The tangent part is summed without per-pair features:
        ``sum_j phi*'(u_ij) (y_j (x_i^T U))`` and ``sum_j phi*'(u_ij) (x_i (x_j^T V))`` cost ``O(M N^2 (d + r))``."""
        M, N, d = X.shape
        ii, jj = np.nonzero(~np.eye(N, dtype=bool))
        u = _pair_values(self.model, X) if u is None else u
        up = u[:, ii, jj].reshape(-1)
        rows = (np.arange(M)[:, None] * N + ii[None, :]).ravel()
        fb = _basis(up, self.lo, self.hi, self.K, self.s, rows, M * N)
        if not self.with_A:
            return fb, None
        dp = np.zeros_like(u)
        dp[:, ii, jj] = self.model.phi_star_derivative(u[:, ii, jj])
        XU, XV = X @ self.U, X @ self.V
        fW = (np.matmul(dp, X)[..., :, None] * XU[..., None, :]).reshape(M * N, -1)
        fZ = (X[..., :, None] * np.matmul(dp, XV)[..., None, :]).reshape(M * N, -1)
        return fb, np.hstack([fW, fZ]) @ self.Q

    def __call__(self, x: np.ndarray, y: np.ndarray, rows: np.ndarray | None = None,
                 n_rows: int | None = None) -> tuple[sparse.csr_matrix, np.ndarray | None]:
        u = bilinear_forms(x, self.model.A_star, y)
        fb = _basis(u, self.lo, self.hi, self.K, self.s, rows, n_rows)
        if not self.with_A:
            return fb, None
        fa = self.tangent(x, y, u)
        return fb, fa if rows is None else _sum_rows(fa, rows, n_rows)

    def tangent(self, x: np.ndarray, y: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The A-tangent features ``(n, q)`` of the pairs ``(x, y)`` whose values are ``u`` (truth only: not ``K``,
        ``s`` or the range, so computed once for several partitions)."""
        dp = self.model.phi_star_derivative(u)
        fW = np.einsum("n,nb,na->nba", dp, y, x @ self.U).reshape(u.size, -1)
        fZ = np.einsum("n,nb,na->nba", dp, x, y @ self.V).reshape(u.size, -1)
        return np.hstack([fW, fZ]) @ self.Q


def _sum_rows(fa: np.ndarray, rows: np.ndarray, n_rows: int) -> np.ndarray:
    """Per-pair features summed into the rows ``rows`` (``n_rows`` of them)."""
    out = np.zeros((n_rows, fa.shape[1]))
    np.add.at(out, rows, fa)
    return out


def _gram(fb: sparse.csr_matrix, fa: np.ndarray | None, n: int, aa: np.ndarray | None = None) -> np.ndarray:
    """The Gram matrix of ``[fb, fa]`` over ``n``; ``aa``: ``fa^T fa`` if known.  numpy runs ``fa.T @ fa`` as BLAS
    ``syrk`` (exactly symmetric; a quarter of torch's time on these tall, narrow blocks)."""
    Gbb = (fb.T @ fb).toarray()
    if fa is None:
        return Gbb / n
    Gba = np.asarray(fb.T @ fa)
    return np.block([[Gbb, Gba], [Gba.T, fa.T @ fa if aa is None else aa]]) / n


def _basis_block(G: np.ndarray, p: int) -> np.ndarray:
    """The basis block ``G[:p, :p]`` of a Gram matrix with tangent directions, in the memory layout of
    ``_gram(fb, None, n)`` (the layout of a sparse Gram's ``toarray``): BLAS products of a matrix in another layout
    round differently, and the block must give the numbers of the fit without the directions bit for bit."""
    return np.array(G[:p, :p], order=_SPARSE_GRAM_ORDER)


_probe = sparse.csr_matrix(np.eye(2))
#: memory layout of a basis Gram ``(fb.T @ fb).toarray()`` (scipy's: Fortran for the CSC product)
_SPARSE_GRAM_ORDER = "F" if (_probe.T @ _probe).toarray().flags.f_contiguous else "C"
del _probe


def _solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least-squares solve with torch (numpy's threaded OpenBLAS is very slow on a contended machine)."""
    return torch.linalg.lstsq(torch.from_numpy(A), torch.from_numpy(np.asarray(b))[:, None],
                              driver="gelsd").solution[:, 0].numpy()


def _tr_pinv(G: np.ndarray, S: np.ndarray, rcond: float) -> float:
    """``tr(G S^+)`` for symmetric PSD ``S``."""
    Sp = torch.linalg.pinv(torch.from_numpy(S), rtol=rcond, hermitian=True)
    return float(torch.trace(torch.from_numpy(G) @ Sp))


def _population_range(model: IPSModel, seed: int, n: int = 2**19) -> tuple[float, float]:
    """The ``[q, 1-q]`` quantiles of ``u = x^T A* y`` under ``rho`` (``q = RANGE_Q``), ``n`` pairs by ``2**16``."""
    u = []
    rng = np.random.default_rng([seed, 7])
    for _ in range(max(1, n // 2**16)):
        x, y = model.sample_pairs(2**16, rng)
        u.append(bilinear_forms(x, model.A_star, y))
    lo, hi = np.quantile(np.concatenate(u), [RANGE_Q, 1 - RANGE_Q])
    return float(lo), float(hi)


def predict_error(model: IPSModel, K: int, s: int, *, n_pop: int = 16000, n_pairs: int = 2**18,
                  seed: int = 0, with_A: bool = True) -> dict[str, float]:
    """A-priori error model ``B + (V_np + V_par) / M`` of the design (module docstring).

    Parameters
    ----------
    model : IPSModel
        Truth, token law and noise level ``sigma = model.noise``.
    K, s : int
        Intervals and polynomial degree of the estimator.
    n_pop : int
        Population samples for ``Sigma`` and the forward-metric projection.
    n_pairs : int
        Pairs for ``G`` and the L2 norms.
    seed : int
    with_A : bool
        Include the A-tangent features (``V_par``); ignored for ``d = 1``.

    Returns
    -------
    dict with ``B`` (forward-metric projection bias), ``B_l2`` (L2(rho) projection bias, <= B), ``V_np``, ``V_par``
    (noise-variance constants: error contribution ``V / M``), ``p`` (number of basis functions), ``lo``, ``hi``.

    Raises
    ------
    ValueError
        Sizes that are not integers ``>= 1`` (``s >= 0``), a seed outside ``[0, MAX_SEED]``, arrays over the memory
        budget (checked before anything is drawn), a prediction that is not finite.
    theory.ArgumentTypeError
        ``model`` not an :class:`IPSModel`, ``with_A`` not a bool, a size of the wrong type.
    """
    _check_model(model)
    K, s = as_int("K", K, 1), as_int("s", s, 0)
    n_pop, n_pairs = as_int("n_pop", n_pop, 1), as_int("n_pairs", n_pairs, 1)
    check_seed("seed", seed)
    with_A = check_flag("with_A", with_A)
    d, N, r = model.d, model.N, model.rank  # pair and population arrays and Gram matrices, before any draw
    q = 2 * d * r - 1 if (with_A and d > 1) else 0
    elements = (n_pop * N * (N - 1) + n_pairs) * (2 * d + (s + 1) + q + 1) + 3 * (K * (s + 1) + q) ** 2
    check_array_memory(f"K, s, n_pop, n_pairs ({n_pop * N} population rows of {N - 1} pairs, {n_pairs} pairs, "
                       f"{K * (s + 1) + q} features)", elements, 8)
    return predict_error_grid(model, [K], s, n_pop=n_pop, n_pairs=n_pairs, seed=seed, with_A=with_A)[0][0]


def predict_error_grid(model: IPSModel, Ks: Sequence[int], s: int, *, noises: Sequence[float] | None = None,
                       n_pop: int = 16000, n_pairs: int = 2**18, seed: int = 0,
                       with_A: bool = True) -> list[list[dict[str, float]]]:
    """:func:`predict_error` at every ``K`` of ``Ks`` and every noise level of ``noises`` (default ``[model.noise]``):
    ``out[k][j]`` is ``predict_error`` of ``Ks[k]`` with ``sigma = noises[j]``, bit for bit.

    The Monte Carlo population (range, pairs, design rows, truth on them, A-tangent features) does not depend on ``K``
    or ``sigma``, so it is drawn once; the basis, its Gram blocks and the solves are per ``K``, and ``sigma`` only
    scales ``V = sigma^2 tr(G Sigma^+) / N``. Arguments trusted (integers, floats, a non-empty ``Ks``).
    """
    noises = [float(model.noise)] if noises is None else [float(x) for x in noises]
    with torch_numeric_errors("predict_error", K=Ks if len(Ks) > 1 else Ks[0], s=s, n_pop=n_pop, n_pairs=n_pairs,
                              seed=seed):
        out = _predict(model, Ks, s, n_pop, n_pairs, seed, with_A, noises)
    for K, row in zip(Ks, out):
        for q in row:
            finite_result("predict_error", list(q.values()), K=K, s=s, n_pop=n_pop, n_pairs=n_pairs, seed=seed)
    return out


def _predict(model: IPSModel, Ks: list[int], s: int, n_pop: int, n_pairs: int, seed: int, with_A: bool,
             noises: list[float]) -> list[list[dict[str, float]]]:
    """The computation of :func:`predict_error_grid`."""
    rng = np.random.default_rng(seed)
    lo, hi = _population_range(model, seed)
    x, y = model.sample_pairs(n_pairs, rng)
    u = bilinear_forms(x, model.A_star, y)
    N, d = model.N, model.d
    fstar = model.phi_star(u)
    # Sigma over the design rows of a population sample (row (m, i) sums the N-1 pairs (i, j))
    X = model.sample_tokens(n_pop, rng)
    Rstar = model.forward(None, X).reshape(-1)
    ii, jj = np.nonzero(~np.eye(N, dtype=bool))
    rows = (np.arange(n_pop)[:, None] * N + ii[None, :]).ravel()
    n_rows = n_pop * N
    xp, yp = X[:, ii, :].reshape(-1, d), X[:, jj, :].reshape(-1, d)
    up = bilinear_forms(xp, model.A_star, yp)
    feats = _Features(model, lo, hi, Ks[0], s, with_A)
    fa = Fa = aa = Aa = None
    if feats.with_A:  # the K-free parts: tangent features of the pairs and of the rows, their Gram blocks
        fa = feats.tangent(x, y, u)
        Fa = _sum_rows(feats.tangent(xp, yp, up), rows, n_rows)
        aa, Aa = fa.T @ fa, Fa.T @ Fa
    out = []
    for K in Ks:
        p = K * (s + 1)
        fb = _basis(u, lo, hi, K, s)
        G = _gram(fb, fa, n_pairs, aa)
        c_l2 = _solve(G[:p, :p], fb.T @ fstar / n_pairs)
        B_l2 = float(np.mean((fb @ c_l2 - fstar) ** 2))
        Fb = _basis(up, lo, hi, K, s, rows, n_rows)
        S = _gram(Fb, Fa, n_rows, Aa) / (N - 1) ** 2
        c_F = _solve(S[:p, :p], Fb.T @ Rstar / (n_rows * (N - 1)))
        B_F = float(np.mean((fb @ c_F - fstar) ** 2))
        tr_np = _tr_pinv(G[:p, :p], S[:p, :p], 1e-12)
        tr_tot = _tr_pinv(G, S, 1e-10) if feats.with_A else None
        row = []
        for noise in noises:
            sigma2 = noise ** 2
            V_np = sigma2 * tr_np / N
            V_tot = V_np if tr_tot is None else sigma2 * tr_tot / N
            row.append({"B": B_F, "B_l2": B_l2, "V_np": V_np, "V_par": max(V_tot - V_np, 0.0), "p": p, "lo": lo,
                        "hi": hi})
        out.append(row)
    return out


# ------------------------------------------------------------------------------------------ finite-M model
#: the log grid of ``t`` of the Frullani quadrature of :func:`expected_log_quadratic` (tested against sampling)
_LOG_GRID = np.linspace(-14.0, 12.0, 4001) * np.log(10.0)


def expected_log_quadratic(b0: float, lam: np.ndarray, mu2: np.ndarray) -> tuple[float, float]:
    """``E log Q`` and ``E Q`` of ``Q = b0 + sum_k lam_k (w_k + mu_k)^2``, ``w ~ N(0, I)`` (``b0, lam >= 0``), by
    Frullani's integral ``log q = int_0^oo (e^-t - e^-tq) dt / t`` with the Laplace transform of ``Q``
    (a generalised non-central chi-square: ``E e^-tQ = e^-t b0 prod_k (1 + 2 t lam_k)^-1/2
    exp(-t lam_k mu_k^2 / (1 + 2 t lam_k))``), on a log grid after scaling ``Q`` by its mean."""
    lam, mu2 = np.asarray(lam, dtype=float), np.asarray(mu2, dtype=float)
    mean = float(b0 + np.sum(lam * (1.0 + mu2)))
    if mean <= 0.0:
        return -math.inf, 0.0
    b, lm = b0 / mean, lam / mean
    t = np.exp(_LOG_GRID)
    one = 1.0 + 2.0 * t[:, None] * lm[None, :]
    log_laplace = -t * b - 0.5 * np.log(one).sum(1) - (t[:, None] * (lm * mu2)[None, :] / one).sum(1)
    integrand = np.exp(-t) - np.exp(log_laplace)  # (e^-t - E e^-tQ) / t, times dt = t ds
    return math.log(mean) + float(np.trapezoid(integrand, _LOG_GRID)), mean


def empirical_range(u: np.ndarray, q: float = RANGE_Q) -> tuple[float, float]:
    """The estimator's range: the ``k``-th smallest and largest of the pair values, ``k = max(1, floor(q n))``."""
    n = u.size
    k = max(1, int(math.floor(q * n)))
    part = np.partition(u, [k - 1, n - k])
    return float(part[k - 1]), float(max(part[n - k], part[k - 1] + 1e-12))


class EvalSet:
    """Pairs of the ``L2(rho)`` error (as :meth:`~numerics.PairwiseInteractionEstimator.l2_error`): ``n`` pairs ``x, y``
    of ``model`` drawn from ``seed``, their values ``u`` under ``A*`` and the truth ``g`` there."""

    def __init__(self, model: IPSModel, n: int, seed: int | tuple[int, ...]) -> None:
        key = list(seed) if isinstance(seed, tuple) else [seed]
        self.x, self.y = model.sample_pairs(n, np.random.default_rng([*key, 11]))
        self.u = bilinear_forms(self.x, model.A_star, self.y)
        self.g = model.phi_star(self.u)

    def features(self, feats: "_Features") -> tuple[sparse.csr_matrix, np.ndarray | None, np.ndarray]:
        """Basis values on ``feats``' range, A-tangent features (or None) and the Gram of all of them (mean)."""
        eb = _basis(self.u, feats.lo, feats.hi, feats.K, feats.s)
        ea = feats.tangent(self.x, self.y, self.u) if feats.with_A else None
        return eb, ea, _gram(eb, ea, self.u.size)


#: samples per block of the design rows in :func:`conditional_parts` (bounds its memory)
_ROW_BLOCK = 4096


def _pair_values(model: IPSModel, X: np.ndarray) -> np.ndarray:
    """``u_mij = X_mi^T A* X_mj`` ``(M, N, N)`` (two BLAS products)."""
    return np.matmul(X @ model.A_star, X.transpose(0, 2, 1))


def _normal_equations(model: IPSModel, feats: "_Features", X: np.ndarray, Y: np.ndarray | None = None,
                      u: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``S = F^T F`` and ``F^T Y`` (default ``Y = R_{g*}[X]``, noiseless) of the design rows ``F`` (forward-operator
    scale), by blocks of samples; ``u`` the pair values of ``X`` if known."""
    N = X.shape[1]
    ii, jj = np.nonzero(~np.eye(N, dtype=bool))
    S, b = 0.0, 0.0
    for start in range(0, X.shape[0], _ROW_BLOCK):
        Xb = X[start:start + _ROW_BLOCK]
        ub = _pair_values(model, Xb) if u is None else u[start:start + _ROW_BLOCK]
        fb, fa = feats.rows(Xb, ub)
        if Y is None:  # R_{g*}[X]_i = 1/(N-1) sum_{j != i} phi*(u_ij): rows (m, i) in the order of ii
            Yb = model.phi_star(ub[:, ii, jj]).reshape(-1, N, N - 1).sum(axis=2) / (N - 1)
        else:
            Yb = Y[start:start + _ROW_BLOCK]
        S = S + _gram(fb, fa, (N - 1) ** 2)
        b = b + _rmatvec(fb, fa, np.asarray(Yb).reshape(-1)) / (N - 1)
    return S, b


def _rmatvec(fb: sparse.csr_matrix, fa: np.ndarray | None, y: np.ndarray) -> np.ndarray:
    """``[fb, fa]^T y``."""
    out = fb.T @ y
    return out if fa is None else np.concatenate([out, fa.T @ y])


def conditional_parts(model: IPSModel, K: int, s: int, X: np.ndarray, ridge: float, with_A: bool,
                       ev: EvalSet) -> dict[str, Any]:
    """The law of the least-squares fit's error on the design ``X``: ``elog`` (``E[log err | X]``), ``mean``
    (``E[err | X]``), ``bias`` (the noiseless error), ``b0`` (its part outside the noise directions), ``var_tr`` (the
    trace of the noise part), and the normal equations ``S``, ``Fy``, the noiseless fit ``c`` and the basis size ``p``.
    The fit ``c = (S + lam)^+ F^T Y`` with ``F`` the design rows (basis and, with ``with_A``, the A-tangent
    directions), ``S = F^T F``, ``lam = ridge * mean(diag S_bb)`` on the basis block (the estimator's relative
    ridge); ``Y = R_{g*}[X] + sigma xi``.  The error ``||f c - g*||^2`` on the pairs of ``ev`` is a quadratic form
    in the Gaussian coefficient noise ``delta ~ N(0, sigma^2 Sr^+ S Sr^+)``, so its law given ``X`` is a
    generalised non-central chi-square (:func:`expected_log_quadratic`)."""
    return _variant_parts(model, K, s, X, ridge, [(with_A, float(model.noise))], ev)[0]


def _variant_parts(model: IPSModel, K: int, s: int, X: np.ndarray, ridge: float,
                   variants: Sequence[tuple[bool, float]], ev: EvalSet) -> list[dict[str, Any]]:
    """:func:`conditional_parts` of every ``(with_A, sigma)`` of ``variants`` on one design ``X``, bit for bit: the
    range, design rows, normal equations and evaluation features are computed once, with the A-tangent directions if
    any variant has them; a variant without them takes the basis blocks (``S_bb``, ``(F^T Y)_b``, ``H_bb``: the numbers
    of a fit without the directions); the noiseless fit and ``Sr^+ S Sr^+`` are shared by the variants with the same
    ``with_A``, and ``sigma`` only scales the covariance."""
    N = X.shape[1]
    ii, jj = np.nonzero(~np.eye(N, dtype=bool))
    u = _pair_values(model, X)
    lo, hi = empirical_range(u[:, ii, jj].reshape(-1))
    feats = _Features(model, lo, hi, K, s, any(a for a, _ in variants))
    S_all, Fy_all = _normal_equations(model, feats, X, u=u)
    p = feats.p
    eb, ea_all, H_all = ev.features(feats)
    n = ev.g.size
    out: list[dict[str, Any] | None] = [None] * len(variants)
    for tangent in dict.fromkeys(bool(a) and feats.with_A for a, _ in variants):
        if tangent or not feats.with_A:
            S, Fy, H, ea = S_all, Fy_all, H_all, ea_all
        else:  # the basis blocks of the fit with the directions: the fit without them
            S, Fy = _basis_block(S_all, p), Fy_all[:p].copy()
            H, ea = _basis_block(H_all, p), None
        Sr = S.copy()
        if ridge > 0.0:
            Sr[np.arange(p), np.arange(p)] += ridge * float(np.mean(np.diag(S)[:p]))
        w, V = np.linalg.eigh(Sr)
        keep = w > 1e-12 * w.max()
        Sp = (V[:, keep] / w[keep]) @ V[:, keep].T  # (S + lam)^+
        c = Sp @ Fy
        r0 = (eb @ c[:p] if ea is None else eb @ c[:p] + ea @ c[p:]) - ev.g  # [eb, ea] c - g*
        bias = float(r0 @ r0) / n
        h = _rmatvec(eb, ea, r0) / n
        SpSSp = Sp @ S @ Sp
        for k, (with_A, sigma) in enumerate(variants):
            if (bool(with_A) and feats.with_A) != tangent:
                continue
            cov = float(sigma) ** 2 * SpSSp
            cw, cV = np.linalg.eigh((cov + cov.T) / 2)
            L = cV * np.sqrt(np.clip(cw, 0.0, None))
            lam, Q = np.linalg.eigh(L.T @ H @ L)
            a = Q.T @ (L.T @ h)
            on = lam > 1e-13 * max(float(lam.max()), 1e-300)
            b0 = max(bias - float(np.sum(a[on] ** 2 / lam[on])), 0.0)
            elog, mean = expected_log_quadratic(b0, lam[on], (a[on] / lam[on]) ** 2)
            out[k] = {"elog": elog, "mean": mean, "bias": bias, "b0": b0, "var_tr": float(lam[on].sum()), "S": S,
                      "Fy": Fy, "c": c, "p": p}
    return out  # type: ignore[return-value]


@dataclass(frozen=True)
class DesignStopping:
    """When :func:`predict_log_error` stops drawing designs: once the Monte Carlo SE of its mean is at most
    ``se_target``, after at least ``min_designs`` and at most ``max_designs`` draws."""

    se_target: float = 2e-3
    min_designs: int = 4
    max_designs: int = 200

    def __post_init__(self) -> None:
        as_float("se_target", self.se_target, low=0, low_open=True)
        as_int("min_designs", self.min_designs, 2, MAX_DESIGNS)
        as_int("max_designs", self.max_designs, 2, MAX_DESIGNS)
        if self.min_designs > self.max_designs:
            raise ValueError(f"min_designs must be <= max_designs, got min_designs={self.min_designs}, "
                             f"max_designs={self.max_designs}")


def predict_log_error(model: IPSModel, K: int, s: int, M: int, *, ridge: float = 0.0, with_A: bool = True,
                      seed: int = 0, n_eval: int = 2**14,
                      stopping: DesignStopping = DesignStopping()) -> dict[str, float]:
    """Finite-``M`` error model: ``E log ||g_hat - g*||^2`` of the least-squares estimator at sample size ``M``.

    Conditional on the design (the tokens ``X``: the empirical range, the occupancy of every interval, the
    token pairs of each sample) the least-squares fit is linear in the Gaussian noise, so the law of its ``L2(rho)``
    error is a generalised non-central chi-square whose ``E log`` is one quadrature (:func:`expected_log_quadratic`).
    Designs are drawn until the Monte Carlo SE of the mean meets ``stopping``.  For ``d = 1`` this is the law of the
    estimator's error exactly (its fit is this least-squares fit); for ``d > 1`` the matrix enters through its tangent
    directions at ``A*`` (linearisation, as the a-priori model).  Derived by the project; tested against the estimator
    in ``tests/numerics/test_error_model_finite_m.py``.

    Parameters
    ----------
    model : IPSModel
        Truth, token law and noise level (the noise law must be Gaussian).
    K, s : int
        Intervals and polynomial degree of the estimator.
    M : int
    ridge : float
        The estimator's relative ridge (``>= 0``).
    with_A : bool
        Estimate the matrix too (``d > 1``); ``False``: the fit with ``A = A*`` known.
    seed : int
        Seed of the designs and of the evaluation pairs.
    n_eval : int
        Pairs of the ``L2(rho)`` error, drawn afresh with every design.
    stopping : DesignStopping

    Returns
    -------
    dict with ``log_error`` (``E log err``), ``se`` (its Monte Carlo SE over designs), ``sd`` (SD of
    ``E[log err | X]`` over designs), ``mean_error`` (``E err``), ``bias`` (mean noiseless error), ``n_designs``.
    """
    _check_model(model)
    with_A = check_flag("with_A", with_A)
    K, s, M = as_int("K", K, 1), as_int("s", s, 0), as_int("M", M, 1)
    if not isinstance(stopping, DesignStopping):
        raise ArgumentTypeError(f"stopping must be a numerics.error_model.DesignStopping, got {describe(stopping)}")
    ridge = as_float("ridge", ridge, low=0)
    check_seed("seed", seed)
    n_eval = as_int("n_eval", n_eval, 2)
    if model.noise_law != "gaussian":
        raise ValueError(f"predict_log_error needs Gaussian noise, the model has noise_law={model.noise_law!r}")
    q = 2 * model.d * model.rank if (with_A and model.d > 1) else 0
    rows = min(M, _ROW_BLOCK) * model.N
    check_array_memory(f"M, K, s, n_eval ({M} samples, {K * (s + 1) + q} features, {n_eval} pairs)",
                       M * model.N * (model.N + model.d) + (rows + n_eval) * (K * (s + 1) + q + model.d), 8)
    return predict_log_errors(model, K, s, M, [(with_A, float(model.noise))], ridge=ridge, seed=seed, n_eval=n_eval,
                              stopping=stopping)[0]


def predict_log_errors(model: IPSModel, K: int, s: int, M: int, variants: Sequence[tuple], *, ridge: float = 0.0,
                       seed: int = 0, n_eval: int = 2**14,
                       stopping: DesignStopping = DesignStopping()) -> list[dict[str, float]]:
    """:func:`predict_log_error` of several variants ``(with_A, sigma)`` or ``(with_A, sigma, se_target)`` on the same
    designs: ``out[k]`` is ``predict_log_error`` with ``with_A = variants[k][0]``, noise level ``variants[k][1]`` and SE
    target ``variants[k][2]`` where given, bit for bit.

    The designs and evaluation pairs depend on ``seed`` only: each design's normal equations and evaluation features are
    computed once for the variants still drawing (:func:`_variant_parts`), and each variant stops where it would stop
    alone. Arguments trusted.
    """
    targets = [float(v[2]) if len(v) == 3 else stopping.se_target for v in variants]
    variants = [(bool(v[0]), float(v[1])) for v in variants]
    min_designs, max_designs = stopping.min_designs, stopping.max_designs
    draws: list[list[tuple[float, float, float]]] = [[] for _ in variants]
    active = list(range(len(variants)))
    n = 0
    with torch_numeric_errors("predict_log_error", K=K, s=s, M=M, seed=seed):
        while active and n < max_designs:
            X = model.sample_tokens(M, np.random.default_rng([seed, 13, n]))
            # fresh evaluation pairs with every design: their Monte Carlo error is then part of the draws' spread (a
            # set shared by all draws would shift the slopes by an error the SE does not see)
            ev = EvalSet(model, n_eval, (seed, n))
            parts = _variant_parts(model, K, s, X, ridge, [variants[k] for k in active], ev)
            n += 1
            for k, q_ in zip(active, parts):
                draws[k].append((q_["elog"], q_["mean"], q_["bias"]))
            active = [k for k in active if not (
                n >= min_designs and np.std([d[0] for d in draws[k]], ddof=1) / math.sqrt(n) <= targets[k])]
    out = []
    for d_ in draws:
        arr = np.array(d_)
        sd = float(np.std(arr[:, 0], ddof=1))
        res = {"log_error": float(arr[:, 0].mean()), "se": sd / math.sqrt(len(arr)), "sd": sd,
               "mean_error": float(arr[:, 1].mean()), "bias": float(arr[:, 2].mean()), "n_designs": len(arr)}
        finite_result("predict_log_error", list(res.values()), K=K, s=s, M=M, seed=seed)
        out.append(res)
    return out
