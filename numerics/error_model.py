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
central ``1 - 2 RANGE_Q`` quantile range of ``u = x^T A* y`` (:func:`population_range`).  Derived by the project;
the checks A2-A4 and A6 test it against simulation (their "finite-M prediction" comparisons).

Inputs are validated by :mod:`theory._validation` (the project's one layer): ``model`` an :class:`IPSModel`,
exact integer sizes and seeds, flags that are real booleans, and the population arrays checked against the
memory budget ``theory.get_limits().memory_budget_bytes`` before they are drawn.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy import sparse
from scipy.linalg import null_space

from theory._validation import (
    ArgumentTypeError,
    as_float,
    as_int,
    check_array_memory,
    check_flag,
    describe,
    finite_result,
)

from .ips import IPSModel, _bilinear
from .threads import _torch_numeric_errors

__all__ = ["RANGE_Q", "predict_error", "predicted_curve", "population_range"]

#: range quantile of the estimator in the designs (``range_quantile`` of the fits): the central 99.9%
RANGE_Q = 5e-4
#: seeds are integers in ``[0, MAX_SEED]``
MAX_SEED = 2**63 - 1


def _check_model(model: object) -> IPSModel:
    if not isinstance(model, IPSModel):
        raise ArgumentTypeError(f"model must be a numerics.IPSModel, got {describe(model)} of type "
                                f"{type(model).__name__}")
    return model


def _check_prediction_memory(model: IPSModel, K: int, s: int, n_pop: int, n_pairs: int, with_A: bool) -> None:
    """Refuse, before anything is drawn, pair and population arrays (tokens, basis values, A-tangent features)
    and Gram matrices over the memory budget (their float64 elements, temporaries left out)."""
    d, N, r = model.d, model.N, model.rank
    q = 2 * d * r - 1 if (with_A and d > 1) else 0
    per_pair = 2 * d + (s + 1) + q + 1
    n_rows = n_pop * N * (N - 1)
    elements = (n_rows + n_pairs) * per_pair + 3 * (K * (s + 1) + q) ** 2
    check_array_memory(f"K, s, n_pop, n_pairs ({n_pop * N} population rows of {N - 1} pairs, {n_pairs} pairs, "
                       f"{K * (s + 1) + q} features)", elements, 8)


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


def _dphi(model: IPSModel, u: np.ndarray, h: float = 1e-6) -> np.ndarray:
    return (model.phi_star(u + h) - model.phi_star(u - h)) / (2 * h)


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
            a = np.concatenate([(A.T @ self.U).ravel(), (A @ self.V).ravel()])
            self.Q = null_space(a[None, :])  # tangent directions orthogonal to the scale direction A*

    def __call__(self, x: np.ndarray, y: np.ndarray, rows: np.ndarray | None = None,
                 n_rows: int | None = None) -> tuple[sparse.csr_matrix, np.ndarray | None]:
        u = _bilinear(x, self.model.A_star, y)
        fb = _basis(u, self.lo, self.hi, self.K, self.s, rows, n_rows)
        if not self.with_A:
            return fb, None
        dp = _dphi(self.model, u)
        fW = np.einsum("n,nb,na->nba", dp, y, x @ self.U).reshape(u.size, -1)
        fZ = np.einsum("n,nb,na->nba", dp, x, y @ self.V).reshape(u.size, -1)
        fa = np.hstack([fW, fZ]) @ self.Q
        if rows is not None:
            out = np.zeros((n_rows, fa.shape[1]))
            np.add.at(out, rows, fa)
            fa = out
        return fb, fa


def _gram(fb: sparse.csr_matrix, fa: np.ndarray | None, n: int) -> np.ndarray:
    Gbb = (fb.T @ fb).toarray()
    if fa is None:
        return Gbb / n
    Gba = np.asarray(fb.T @ fa)
    ta = torch.from_numpy(np.ascontiguousarray(fa))
    return np.block([[Gbb, Gba], [Gba.T, (ta.T @ ta).numpy()]]) / n


def _solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least-squares solve with torch (numpy's threaded OpenBLAS is very slow on a contended machine)."""
    return torch.linalg.lstsq(torch.from_numpy(A), torch.from_numpy(np.asarray(b))[:, None],
                              driver="gelsd").solution[:, 0].numpy()


def _tr_pinv(G: np.ndarray, S: np.ndarray, rcond: float) -> float:
    """``tr(G S^+)`` for symmetric PSD ``S``."""
    Sp = torch.linalg.pinv(torch.from_numpy(S), rtol=rcond, hermitian=True)
    return float(torch.trace(torch.from_numpy(G) @ Sp))


def population_range(model: IPSModel, seed: int, n: int = 2**19) -> tuple[float, float]:
    """The ``[q, 1-q]`` quantiles of ``u = x^T A* y`` under ``rho`` (``q = RANGE_Q``), ``n`` pairs.

    ``model`` an :class:`IPSModel`; ``seed`` an integer in ``[0, MAX_SEED]``; ``n >= 1`` pairs, drawn in blocks
    of ``2**16`` (at least one block), whose values must fit the memory budget.
    """
    _check_model(model)
    as_int("seed", seed, 0, MAX_SEED)
    n = as_int("n", n, 1)
    check_array_memory("n", max(n, 2**16), 8 * 2 * (model.d + 1))
    u = []
    rng = np.random.default_rng([seed, 7])
    for _ in range(max(1, n // 2**16)):
        x, y = model.sample_pairs(2**16, rng)
        u.append(_bilinear(x, model.A_star, y))
    lo, hi = np.quantile(np.concatenate(u), [RANGE_Q, 1 - RANGE_Q])
    return float(lo), float(hi)


def predict_error(model: IPSModel, K: int, s: int, *, n_pop: int = 16000, n_pairs: int = 2**18,
                  seed: int = 0, with_A: bool = True) -> dict[str, float]:
    """A-priori error model ``B + (V_np + V_par) / M`` of the design (see module docstring).

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
        Seed of the Monte Carlo.
    with_A : bool
        Include the A-tangent features (``V_par``); ignored for ``d = 1``.

    Returns
    -------
    dict with ``B`` (forward-metric projection bias), ``B_l2`` (L2(rho) projection bias, <= B),
    ``V_np``, ``V_par`` (noise-variance constants: error contribution ``V / M``), ``p`` (number of
    basis functions), ``lo``, ``hi``.

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
    as_int("seed", seed, 0, MAX_SEED)
    with_A = check_flag("with_A", with_A)
    _check_prediction_memory(model, K, s, n_pop, n_pairs, with_A)
    with _torch_numeric_errors("predict_error", K=K, s=s, n_pop=n_pop, n_pairs=n_pairs, seed=seed):
        out = _predict(model, K, s, n_pop, n_pairs, seed, with_A)
    finite_result("predict_error", list(out.values()), K=K, s=s, n_pop=n_pop, n_pairs=n_pairs, seed=seed)
    return out


def _predict(model: IPSModel, K: int, s: int, n_pop: int, n_pairs: int, seed: int, with_A: bool) -> dict[str, float]:
    """The computation of :func:`predict_error` (arguments checked)."""
    rng = np.random.default_rng(seed)
    lo, hi = population_range(model, seed)
    x, y = model.sample_pairs(n_pairs, rng)
    u = _bilinear(x, model.A_star, y)
    feats = _Features(model, lo, hi, K, s, with_A)
    p = feats.p
    N = model.N
    fstar = model.phi_star(u)
    fb, fa = feats(x, y)
    G = _gram(fb, fa, n_pairs)
    c_l2 = _solve(G[:p, :p], fb.T @ fstar / n_pairs)
    B_l2 = float(np.mean((fb @ c_l2 - fstar) ** 2))
    # Sigma over the design rows of a population sample (row (m, i) sums the N-1 pairs (i, j))
    X = model.sample_tokens(n_pop, rng)
    Rstar = model.forward(None, X).reshape(-1)
    ii, jj = np.nonzero(~np.eye(N, dtype=bool))
    rows = (np.arange(n_pop)[:, None] * N + ii[None, :]).ravel()
    Fb, Fa = feats(X[:, ii, :].reshape(-1, model.d), X[:, jj, :].reshape(-1, model.d), rows, n_pop * N)
    n_rows = n_pop * N
    S = _gram(Fb, Fa, n_rows) / (N - 1) ** 2
    c_F = _solve(S[:p, :p], Fb.T @ Rstar / (n_rows * (N - 1)))
    B_F = float(np.mean((fb @ c_F - fstar) ** 2))
    sigma2 = float(model.noise) ** 2
    V_np = sigma2 * _tr_pinv(G[:p, :p], S[:p, :p], 1e-12) / N
    V_tot = V_np
    if feats.with_A:
        V_tot = sigma2 * _tr_pinv(G, S, 1e-10) / N
    return {"B": B_F, "B_l2": B_l2, "V_np": V_np, "V_par": max(V_tot - V_np, 0.0), "p": p, "lo": lo, "hi": hi}


def predicted_curve(pred: list[dict[str, float]], M: list[int], parametric: bool = True) -> np.ndarray:
    """``B_K + (V_np + V_par) / M_K`` along the design.

    Parameters
    ----------
    pred : list of dict
        One :func:`predict_error` result per design point (``B``, ``V_np`` and, when ``parametric``, ``V_par``:
        finite real numbers).
    M : list of int
        Sample sizes ``> 0``, as many as ``pred``.
    parametric : bool
        Include ``V_par``.
    """
    parametric = check_flag("parametric", parametric)
    if not isinstance(pred, (list, tuple)):
        raise ArgumentTypeError(f"pred must be a list of predict_error dicts, got {describe(pred)}")
    if isinstance(M, (str, bytes, dict)) or not hasattr(M, "__len__"):
        raise ArgumentTypeError(f"M must be a list of sample sizes > 0, got {describe(M)}")
    if len(M) != len(pred):
        raise ValueError(f"M must have one sample size per prediction: len(M) = {len(M)}, len(pred) = {len(pred)}")
    keys = ("B", "V_np", "V_par") if parametric else ("B", "V_np")
    for i, q in enumerate(pred):
        if not isinstance(q, dict) or any(k not in q for k in keys):
            raise ArgumentTypeError(f"pred[{i}] must be a dict with the keys {keys} (a predict_error result), got "
                                    f"{describe(q)}")
        for k in keys:
            as_float(f"pred[{i}][{k!r}]", q[k])
        as_float(f"M[{i}]", M[i], low=0, low_open=True)
    out = np.array([q["B"] + (q["V_np"] + (q["V_par"] if parametric else 0.0)) / m for q, m in zip(pred, M)])
    return finite_result("predicted_curve", out, pred=pred, M=M)
