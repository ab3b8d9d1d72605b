"""Paper A's estimator: ERM over ``g(x, y) = phi(x^T A y)``, ``phi`` piecewise polynomial, ``rank A <= r``.

Variable projection
-------------------
For a fixed ``A`` the model is linear in the coefficients of ``phi``: with ``u_{m,i,j} = X_i^T A X_j``
and a basis ``b_1..b_p`` of ``Phi^s_K`` (``p = K (s+1)``; orthonormal Legendre polynomials on each of
the ``K`` equal-length intervals of a robust range of the observed ``u``, by default its
``[1e-3, 1 - 1e-3]`` quantiles, see "Range" below), the design matrix is

    B(A)[(m, i), q] = 1/(N-1) sum_{j != i} b_q(u_{m,i,j}),

and the coefficients solve the (tiny-ridge) least-squares problem ``c(A) = (B^T B + lam I)^{-1} B^T Y``
in closed form (Cholesky). The *reduced* objective

    F(U, V) = (||Y - B(A) c(A)||^2 + lam ||c(A)||^2) / (M N),    A = U V^T / ||U V^T||_F,

is minimised over ``U, V in R^{d x r}`` by Levenberg-Marquardt on the variable-projection residual
(Kaufman's projected Jacobian in closed form; default) or by L-BFGS (strong Wolfe line search) with
torch autograd through the linear solve. ``F`` is exactly invariant under ``A -> t A`` (``t != 0``) because the
partition is recomputed from the observed range, so ``A`` is normalised to ``||A||_F = 1`` inside
``F``; the interval index of a pair is piecewise constant in ``A``, so ``F`` is piecewise smooth
(small jumps when a pair crosses a knot; harmless at the sample sizes used).

Products with ``B`` (derived here): a row of ``B`` has at most ``(N-1)(s+1)`` nonzeros of its ``p``. The
Gauss-Newton path forms ``B^T B`` from the outer products within each row (``O(M N (N-1)^2 (s+1)^2)``
scatter-adds instead of ``O(M N p^2)`` multiply-adds), ``B^T Y`` and ``B c`` from the pair values, and ``B^T J``
from cache-sized dense blocks of rows, never the whole ``8 M N p``-byte ``B``; below a size rule
(``_pair_design_pays``: ``M N p^2 < 1e7``, measured crossover ``M ~ 1000`` for ``N = 5, s = 1``) dense matrix
products are faster and are used. The L-BFGS path (autograd) uses the dense ``B``.

Batched fits: :meth:`PairwiseInteractionEstimator.fit_many` fits ``R`` data sets of one shape with one
Gauss-Newton loop whose every tensor has a leading replicate axis (``fit`` is that loop with ``R = 1``): each
replicate has its own damping, acceptance, stopping, patience and joining decisions (masks), the replicates
still iterating are evaluated together (in groups whose per-pair arrays stay cache-sized).

Initialisation: the *moment* estimate ``Sigma^{-1} C Sigma^{-1}`` with
``C = mean_{m,i} (Y_i - mean Y) X_i S_i^T``, ``S_i = 1/(N-1) sum_{j != i} X_j``, ``Sigma`` the token
covariance (a linearisation ``phi(u) ~ phi(0) + phi'(0) u``: ``C ~ phi'(0) Sigma A Sigma / (N-1)`` for
independent centred tokens), truncated to its top-``r`` SVD; then a second-order moment estimate (for
even ``phi``), then random starts up to ``restarts`` in all; the best objective wins.

Starts (adaptive, ``restarts`` is the maximum): ``A_init`` if given, then the first- and second-order
moment estimates (consistent starts), then random ones. A later start whose ``A`` comes within
``1 - |<A, A_best>_F| < join_tol`` of the incumbent's with an objective not below it has joined the
incumbent's basin and is stopped; random starts are run only if the consistent starts *disagree* (no
two of them reached the same minimum: same ``A`` up to ``join_tol`` and objectives within 0.1 %). Two
independent consistent estimates converging to one minimum is the evidence that random starts (which in
``d = 30`` sit on the no-signal plateau ``objective ~ Var Y`` and were dropped after ``patience``
iterations in every configuration measured) would only cost time. ``adaptive_restarts=False`` runs all.

Range (derived here): by default the partition spans the ``[q, 1 - q]`` quantiles of the observed
``u`` (``range_quantile = q = 1e-3``) and ``phi_hat`` is constant beyond (``u`` clamped to ``[lo, hi]``
in the fit and in prediction). With the full range ``[min u, max u]`` (``q = 0``, the paper's choice) and
heavy-tailed ``u`` (dense ``A*`` at ``d = 30``: ``u`` is nearly a product of two Gaussians) the end
intervals hold a handful of pairs, each entering a row averaged with ``N - 2`` others, and the local
polynomial there is barely identified: measured ``|phi_hat - phi*| ~ 170`` on one evaluation pair in
``2^17`` (L2 error 0.24, worse than predicting zero, at ``M = 2^14, K = 32``). With ``q = 1e-3`` each end
interval holds at least a fraction ``q`` of the pairs; the price is a constant ``phi_hat`` on the outer
``2 q`` of the mass of ``u``: an added bias ``int_tails (phi*(u) - phi*(end))^2 drho <= ~2 q
sup_tails |phi*(u) - phi*(end)|^2`` (and zero where ``phi*`` is flat in the tails), far below the variance
at the sizes used. ``extrapolation="polynomial"`` instead continues the end polynomials
beyond ``[lo, hi]`` (in the fit and in prediction alike). ``range_quantile=0`` restores the full range.

Expected error decomposition (derived here, not in the paper; measured in ``docs/paper_a_estimator.md``)
--------------------------------------------------------------------------------------------------------
With ``p = K (s+1)`` linear coefficients and ``q = r (2 d - r)`` free parameters in ``A`` (mod scale), the
least-squares heuristic (Fisher information of the averaged design) gives

    E ||g_hat - g*||^2_{L2(rho)} ~ bias(K) + sigma^2 [ (N-1)/N * kappa * p + c_A * q ] / M,

- ``bias(K) ~ C_phi K^{-2 beta}`` (measured: local slopes -4.0 for the degree-3 B-spline with ``s = 1``,
  -12..-14 for degree 8 with ``s = 6``, once the intervals are shorter than the truth's knot spacing);
- the factor ``(N-1)/N``: a row averages ``N - 1`` pair values, which divides the information per pair by
  ``N - 1`` and cancels the gain of having ``N (N-1)`` pairs (coercivity, Lemma 3.4). With
  ``H = E[b_bar b_bar^T] >= Sigma_rho / (N-1)`` one gets ``kappa <= 1``; computed exactly (given ``X``,
  linearised): ``kappa = 1.00, 0.85, 0.78`` for ``N = 2, 5, 10``;
- ``c_A ~ 0.5-0.8`` (same computation, ``d = 5, 10, 30``): the ``A``-part is the parametric term
  ``r d / M`` of the paper, dominated by ``p / M`` only when ``r d << K (s+1)`` (the low-rank condition).

With ``K ~ M^{1/(2 beta + 1)}`` both ``bias`` and ``sigma^2 p / M`` scale like ``M^{-2 beta/(2 beta+1)}``;
the parametric term (slope -1) must be kept small (small ``r d``, or ``d = 1``) for the slope experiments.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, fields
from typing import Any, Sequence

import numpy as np
import torch

from theory._validation import ArgumentTypeError, as_array, as_float, check_flag

from . import _piecewise as pw
from ._estimator_base import (DEPRECATED, ConvergenceWarning, InteractionEstimator, check_count, check_nonnegative,
                              check_positive, check_random_state_param, resolve_seed_alias, warn_seed_alias)
from ._estimator_base import check_XY as _check_XY_base
from ._estimator_base import numeric_array
from .ips import check_random_state
from .threads import check_device, check_n_jobs, torch_threads

__all__ = ["PairwiseInteractionEstimator", "ConvergenceWarning"]


def check_XY(X: Any, Y: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(X, Y)`` checked for a fit: ``M >= 2`` samples (see :func:`numerics._estimator_base.check_XY`)."""
    if Y is None:
        raise ArgumentTypeError("Y must be an array of finite real numbers of shape (M, N), got None")
    return _check_XY_base(X, Y, min_samples=2)


@dataclass(frozen=True)
class _Config:
    """The parameters of :class:`PairwiseInteractionEstimator` as one fit uses them (checked, converted)."""

    rank: int
    degree: int
    n_intervals: int
    restarts: int
    max_iter: int
    ridge: float
    extrapolation: str
    range_quantile: float
    device: torch.device
    random_state: Any
    tol: float
    optimizer: str
    num_threads: int | None
    patience: int
    adaptive_restarts: bool
    join_tol: float
    stat_tol: float


@dataclass
class _PairBasis:
    """Everything one evaluation of ``B(A)`` computes per pair, for ``R`` replicates.

    ``P, Q``: ``X U``, ``X V`` ``(R, M, N, r)``; ``u``: the pair values ``(R, M, N(N-1))`` (pair ``k`` of a sample
    is ``(i, j) = (ii[k], jj[k])``, the ``N - 1`` pairs of a row ``i`` consecutive); ``a = (u - lo) / (hi - lo)``;
    ``idx, t``: interval and local coordinate; ``vals``: the ``s + 1`` basis values ``(R, M, N(N-1), s+1)``
    already divided by ``N - 1``; ``lo, hi`` ``(R,)`` the range, the values of the pairs at flat indices
    ``ilo, ihi``; ``clamp``: constant extension.
    """

    P: torch.Tensor
    Q: torch.Tensor
    u: torch.Tensor
    a: torch.Tensor
    idx: torch.Tensor
    t: torch.Tensor
    vals: torch.Tensor
    lo: torch.Tensor
    hi: torch.Tensor
    ilo: torch.Tensor
    ihi: torch.Tensor
    clamp: bool


#: bytes of one dense block of rows of ``B`` in :meth:`_PairDesign.rmatmat` (cache-sized: measured 5-10 % faster
#: than 4x smaller or larger blocks)
_BLOCK_BYTES = 2**21


#: pair values of the replicates evaluated together by one pass of the batched Gauss-Newton state: more replicates
#: per pass mean fewer tensor operations per fit, but per-pair arrays beyond the cache make every element-wise
#: operation memory-bound (measured, one thread: a batch of 20 data sets of M = 10000 evaluated at once was 1.6x
#: slower per data set than one at a time)
_PAIRS_PER_GROUP = 2**17


def _transposed_product(A: torch.Tensor, C: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``A^T C`` ``(R, a, c)`` for ``A`` ``(R, n, a)``, ``C`` ``(R, n, c)`` (added to ``out`` if given), computed as
    ``(C^T A)^T`` when ``c < 48``: with ``n >> a, c`` the BLAS product is measured 1.3-3x faster in that
    orientation for ``c <= 40`` and ``a = 40..232``, 1.1-1.4x slower from ``c = 60`` (here ``c = 2 d r``, ``a = p``)."""
    if C.shape[-1] < 48:
        if out is None:
            return torch.bmm(C.mT, A).mT
        out.mT.baddbmm_(C.mT, A)
        return out
    return torch.bmm(A.mT, C) if out is None else out.baddbmm_(A.mT, C)


def _pair_design_pays(n_rows: int, N: int, p: int, n_local: int) -> bool:
    """Whether the products with ``B`` (``n_rows x p``, ``(N-1) n_local`` nonzeros a row) are cheaper from
    its nonzeros (:class:`_PairDesign`) than as dense matrix products (:class:`_DenseDesign`).

    The size rule: from its nonzeros when the dense Gram matrix costs ``n_rows p^2 >= 1e7`` multiply-adds and
    at most half of a row is nonzero. Measured (one thread, ``N = 5, s = 1``, whole Gauss-Newton fits, ``d = 5``
    and ``30``): the two are even at ``M ~ 1000`` (``n_rows p^2 ~ 1e7``; the ~100 small tensor operations of
    the structured Gram matrix cost what the dense products save), the dense path is 10-20 % faster at
    ``M = 500`` and 1.2-1.4x slower at ``M = 2689``, 1.6-2.6x at ``M = 16000``.
    """
    return n_rows * p * p >= 1e7 and 2 * (N - 1) * n_local <= p


class _DenseDesign:
    """The design matrices of ``R`` replicates as one dense tensor ``B`` ``(R, M N, p)``: matrix products."""

    def __init__(self, B: torch.Tensor, pairs: "_PairDesign | None" = None) -> None:
        self.B = B
        self.pairs = pairs  # the pair design it was built from (the Jacobian reads its coefficient gather)

    def gram(self) -> torch.Tensor:
        """``B^T B`` ``(R, p, p)``."""
        return torch.bmm(self.B.mT, self.B)

    def rmatvec(self, y: torch.Tensor) -> torch.Tensor:
        """``B^T y`` ``(R, p)`` for ``y`` ``(R, M N)``."""
        return torch.bmm(self.B.mT, y[..., None])[..., 0]

    def matvec(self, c: torch.Tensor) -> torch.Tensor:
        """``B c`` ``(R, M N)`` for ``c`` ``(R, p)``."""
        return torch.bmm(self.B, c[..., None])[..., 0]

    def rmatmat(self, J: torch.Tensor) -> torch.Tensor:
        """``B^T J`` ``(R, p, q)`` for ``J`` ``(R, M N, q)``."""
        return _transposed_product(self.B, J)


class _PairDesign:
    """The design matrices of ``R`` replicates from their nonzeros, ``B`` never formed whole.

    Row ``rho`` of replicate ``r`` holds, for each of its ``n1 = N - 1`` pairs ``j``, the ``S = s + 1`` values
    ``vals[:, r, rho, j]`` in the columns ``idx[r, rho, j] S + l`` (its interval's). The products cost
    ``O(M N n1^2 S^2)`` (``B^T B``: the outer products within each row, scatter-added), ``O(M N n1 S)``
    (``B^T y``, ``B c``) instead of ``O(M N p^2)`` and ``O(M N p)``; ``B^T J`` multiplies cache-sized dense
    blocks of rows (the dense product's flops, without the ``8 M N p``-byte matrix). The values are stored
    basis-function-major (``vals`` ``(S, R, n_rows, n1)``): every operation below runs on long contiguous runs.
    """

    def __init__(self, idx: torch.Tensor, vals: torch.Tensor, n_intervals: int, buffer: Any) -> None:
        self.idx, self.vals = idx, vals  # (R, n_rows, n1) long, (S, R, n_rows, n1)
        self.K, self.S = n_intervals, vals.shape[0]
        self.p = self.K * self.S
        self._buffer = buffer  # buffer(name, shape): a reusable float64 work array
        self.pairs = self  # the design of the pairs (a _DenseDesign holds the one it was built from)
        R, dev = idx.shape[0], idx.device
        local = torch.arange(self.S, device=dev).view(-1, 1, 1, 1)
        self.cols = idx * self.S + local  # (S, R, n_rows, n1): column of every nonzero in its replicate's p
        # ... and in the R p columns of all replicates; int32 for the gathers (measured 5x faster than int64)
        self.flat_cols = self.cols + (torch.arange(R, device=dev) * self.p).view(1, R, 1, 1)
        self.flat_cols32 = self.flat_cols.to(torch.int32)

    def dense(self, out: torch.Tensor | None = None) -> torch.Tensor:
        """``B`` ``(R, n_rows, p)``: into ``out`` (overwritten), or a new differentiable tensor if ``None``."""
        R, n_rows, _ = self.idx.shape
        rows = torch.arange(R * n_rows, device=self.idx.device).view(1, R, n_rows, 1)
        elem = (rows * self.p + self.cols).reshape(-1)
        if out is None:
            flat = torch.zeros(R * n_rows * self.p, dtype=self.vals.dtype, device=self.vals.device)
            return flat.scatter_add(0, elem, self.vals.reshape(-1)).view(R, n_rows, self.p)
        out.view(-1).zero_().scatter_add_(0, elem, self.vals.reshape(-1))
        return out

    def gram(self) -> torch.Tensor:
        """``B^T B`` ``(R, p, p)``: ``sum_rows sum_{j, j'} (e_{k_j} e_{k_j'}^T) (x) v_j v_j'^T``, by symmetry from the
        slot pairs ``j <= j'`` only (``T`` below, the ``j = j'`` terms halved; ``B^T B = T + T^T``)."""
        R, n_rows, n1 = self.idx.shape
        K, S, p = self.K, self.S, self.p
        n = R * n_rows
        dev = self.idx.device
        # per slot j: the rows' values as length-n vectors (measured 3-5x faster than gathering the slot pairs
        # with advanced indexing), strided views or, beyond ~2^17 rows, contiguous copies (measured: 25 % faster
        # at 5e5 rows, 5-35 % slower at 1e4-6e4)
        def split(a: torch.Tensor) -> tuple:
            return a.view(n, n1).T.contiguous().unbind(0) if n > 2**17 else a.view(n, n1).unbind(1)

        kj = split(self.idx)
        vj = [split(v) for v in self.vals]  # vj[l][j]
        rep_key = (torch.arange(n, device=dev) // n_rows) * (K * K)  # each replicate's own K x K blocks
        T = torch.zeros(S, S, R * K * K, dtype=self.vals.dtype, device=dev)
        key = torch.empty(n, dtype=torch.long, device=dev)
        w = torch.empty(n, dtype=self.vals.dtype, device=dev)
        for j in range(n1):
            for j2 in range(j, n1):
                torch.mul(kj[j], K, out=key).add_(kj[j2]).add_(rep_key)
                for l in range(S):
                    for l2 in range(S):
                        torch.mul(vj[l][j], vj[l2][j2], out=w)
                        if j == j2:
                            w.mul_(0.5)  # exact: the diagonal slot pair enters T + T^T twice
                        T[l, l2].scatter_add_(0, key, w)
        T = T.view(S, S, R, K, K).permute(2, 3, 0, 4, 1).reshape(R, p, p)
        return T + T.mT

    def rmatvec(self, y: torch.Tensor) -> torch.Tensor:
        """``B^T y`` ``(R, p)`` for ``y`` ``(R, n_rows)``."""
        R = y.shape[0]
        out = torch.zeros(R * self.p, dtype=y.dtype, device=y.device)
        out.scatter_add_(0, self.flat_cols.reshape(-1), (self.vals * y[None, :, :, None]).reshape(-1))
        return out.view(R, self.p)

    def coefficients(self, c: torch.Tensor) -> torch.Tensor:
        """``c`` ``(R, p)`` at every nonzero: ``(S, R, n_rows, n1)``."""
        return c.reshape(-1).index_select(0, self.flat_cols32.reshape(-1)).view(self.vals.shape)

    def matvec(self, c: torch.Tensor) -> torch.Tensor:
        """``B c`` ``(R, n_rows)`` for ``c`` ``(R, p)``."""
        return (self.coefficients(c) * self.vals).sum(0).sum(-1)  # (one reduction over (0, 3): measured 2x slower)

    def rmatmat(self, J: torch.Tensor) -> torch.Tensor:
        """``B^T J`` ``(R, p, q)`` for ``J`` ``(R, n_rows, q)``, from dense blocks of rows of ``B``."""
        R, n_rows, q = J.shape
        block = max(1, min(n_rows, _BLOCK_BYTES // (8 * R * self.p)))
        flat = self._buffer("B_block", (R * block * self.p,))
        W = torch.zeros(R, self.p, q, dtype=J.dtype, device=J.device)
        if q < 48:  # accumulated as W^T (see _transposed_product)
            W = torch.zeros(R, q, self.p, dtype=J.dtype, device=J.device).mT
        for a in range(0, n_rows, block):
            b = min(a + block, n_rows)
            rows = torch.arange(R * (b - a), device=J.device).view(1, R, b - a, 1)
            Bb = flat[: R * (b - a) * self.p]
            Bb.zero_().scatter_add_(0, (rows * self.p + self.cols[:, :, a:b]).reshape(-1),
                                    self.vals[:, :, a:b].reshape(-1))
            _transposed_product(Bb.view(R, b - a, self.p), J[:, a:b], out=W)
        return W


class _Rows:
    """A dataclass of tensors sharing a leading replicate axis: rows taken (copied) and put back by index."""

    def take(self, index: torch.Tensor | None):
        """The rows ``index`` (a copy; ``None``: all, ``self`` itself)."""
        if index is None:
            return self
        return type(self)(**{f.name: None if (v := getattr(self, f.name)) is None else v[index] for f in fields(self)})

    def put(self, index: torch.Tensor, other: Any) -> None:
        """Overwrite the rows ``index`` with ``other``'s (a field ``other`` lacks is left alone; one this lacks is
        created, zero in the other rows)."""
        n_rows = getattr(self, fields(self)[0].name).shape[0]
        for f in fields(self):
            value = getattr(other, f.name)
            if value is None:
                continue
            if getattr(self, f.name) is None:
                setattr(self, f.name, value.new_zeros((n_rows,) + tuple(value.shape[1:])))
            getattr(self, f.name)[index] = value


@dataclass
class _GNState(_Rows):
    """Gauss-Newton states of several replicates: the balanced point ``U, V`` ``(R, d, r)``, its objective,
    coefficients and range, and (if evaluated with the Jacobian) the Gauss-Newton matrix ``H`` and gradient ``g``."""

    U: torch.Tensor
    V: torch.Tensor
    loss: torch.Tensor
    c: torch.Tensor
    lo: torch.Tensor
    hi: torch.Tensor
    H: torch.Tensor | None = None
    g: torch.Tensor | None = None


@dataclass
class _Incumbent(_Rows):
    """Each replicate's best point so far (``has``: whether there is one to join)."""

    U: torch.Tensor
    V: torch.Tensor
    has: torch.Tensor

    @classmethod
    def empty(cls, n: int, d: int, r: int, device: Any) -> "_Incumbent":
        zeros = torch.zeros(n, d, r, dtype=torch.float64, device=device)
        return cls(U=zeros, V=zeros.clone(), has=torch.zeros(n, dtype=torch.bool))


@dataclass
class _StartResult:
    """One start of several replicates: the final states, iterations, whether each met its tolerance (or was
    stopped on purpose) and whether it joined the incumbent's basin."""

    state: _GNState
    n_iter: torch.Tensor
    converged: torch.Tensor
    joined: torch.Tensor


@dataclass
class _FitResult:
    """What a fit of one data set found: its best start's point, objective, coefficients, range and iterations,
    every start's objective and whether the best start converged."""

    objective: float
    U: torch.Tensor
    V: torch.Tensor
    c: torch.Tensor
    lo: float
    hi: float
    n_iter: int
    restart_objectives: list
    converged: bool


class _StartBook:
    """Each data set's best start so far, every start's objective, and whether two consistent starts agreed."""

    def __init__(self, R: int, d: int, r: int, adaptive: bool, join_tol: float, device: Any) -> None:
        self.best: list = [None] * R  # per data set: (its state, n_iter, converged)
        self.best_loss = torch.full((R,), math.inf, dtype=torch.float64)
        self.incumbent = _Incumbent.empty(R, d, r, device)  # joinable only with adaptive restarts
        self.agree = torch.zeros(R, dtype=torch.bool)
        self.objectives: list = [[] for _ in range(R)]
        self.adaptive, self.join_tol = adaptive, join_tol

    def record(self, run: torch.Tensor, res: _StartResult, consistent: bool) -> None:
        """Book one start of the data sets ``run``."""
        for j, i in enumerate(run.tolist()):
            loss = float(res.state.loss[j])
            self.objectives[i].append(loss)
            if not math.isfinite(loss):
                continue
            point = res.state.take(torch.tensor([j]))
            best = self.best[i]
            if best is not None and consistent:
                ref = float(best[0].loss[0])
                same = bool(res.joined[j]) or (abs(loss - ref) <= 1e-3 * ref and 1.0 - float(
                    PairwiseInteractionEstimator._alignment(point.U, point.V, best[0].U, best[0].V)) < self.join_tol)
                self.agree[i] |= same
            if best is None or loss < self.best_loss[i]:
                self.best[i] = (point, int(res.n_iter[j]), bool(res.converged[j]))
                self.best_loss[i] = loss
                if self.adaptive:
                    self.incumbent.put(torch.tensor([i]), _Incumbent(U=point.U, V=point.V,
                                                                     has=torch.ones(1, dtype=torch.bool)))

    def results(self) -> list[_FitResult]:
        missing = [i for i, b in enumerate(self.best) if b is None]
        if missing:
            raise RuntimeError(f"PairwiseInteractionEstimator.fit: every start gave a non-finite objective (data sets "
                               f"{missing})")
        return [_FitResult(objective=float(st.loss[0]), U=st.U[0], V=st.V[0], c=st.c[0], lo=float(st.lo[0]),
                           hi=float(st.hi[0]), n_iter=n_iter, restart_objectives=self.objectives[i], converged=conv)
                for i, (st, n_iter, conv) in enumerate(self.best)]


def _check_XY_many(X: Any, Y: Any) -> tuple[np.ndarray, np.ndarray]:
    """``X`` ``(R, M, N, d)`` and ``Y`` ``(R, M, N)`` for :meth:`PairwiseInteractionEstimator.fit_many`: ``R >= 1``
    data sets of ``M >= 2`` samples, each as :func:`check_XY` wants it."""
    if Y is None:
        raise ArgumentTypeError("Y must be an array of finite real numbers of shape (R, M, N), got None")
    X, Y = numeric_array("X", X), numeric_array("Y", Y)
    if X.ndim != 4 or X.shape[0] < 1 or X.shape[1] < 2:
        raise ValueError(f"X must have shape (R, M, N, d) with R >= 1 data sets of M >= 2 samples, got shape "
                         f"{X.shape}")
    R, M, N, d = X.shape
    if Y.shape != (R, M, N):
        raise ValueError(f"Y must have shape (R, M, N) = {(R, M, N)} matching X, got {Y.shape}")
    X, Y = check_XY(X.reshape(R * M, N, d), Y.reshape(R * M, N))
    return X.reshape(R, M, N, d), Y.reshape(R, M, N)


def _replicate_matrices(A: Any, R: int) -> list | None:
    """``A`` of :meth:`PairwiseInteractionEstimator.fit_many` as ``R`` matrices (each checked by the fit)."""
    if A is None:
        return None
    A = numeric_array("A", A)
    if A.ndim == 2:
        return [A] * R
    if A.ndim == 3 and A.shape[0] == R:
        return list(A)
    raise ValueError(f"A must be one (d, d) matrix or one per data set, (R = {R}, d, d), got shape {A.shape}")


def _rows(mask: torch.Tensor) -> torch.Tensor | None:
    """The indices where ``mask`` holds, or ``None`` if it holds everywhere (then callers index nothing)."""
    return None if bool(mask.all()) else mask.nonzero()[:, 0]


def _pick(x: torch.Tensor, index: torch.Tensor | None) -> torch.Tensor:
    """``x[index]`` (``x`` itself for ``index=None``: all rows)."""
    return x if index is None else x[index]


def _assign(x: torch.Tensor, index: torch.Tensor | None, value: Any) -> None:
    """``x[index] = value`` in place (all rows for ``index=None``)."""
    if index is None:
        x.copy_(value) if isinstance(value, torch.Tensor) else x.fill_(value)
    else:
        x[index] = value


def _first(sol: dict) -> dict:
    """The first replicate's entries of a dict of batched tensors."""
    return {k: v[0] if isinstance(v, torch.Tensor) else v for k, v in sol.items()}


class PairwiseInteractionEstimator(InteractionEstimator):
    """Least-squares estimator of ``g*(x, y) = phi*(x^T A* y)`` from ``(X, Y)`` (paper A, Thm 3.1).

    Parameters
    ----------
    rank : int
        Rank bound ``r >= 1`` of ``A`` (``<= d`` at fit time).
    degree : int
        Polynomial degree ``s >= 0`` of ``phi`` on each interval.
    n_intervals : int
        Number ``K >= 1`` of equal-length intervals of the (quantile) range of the observed ``u``.
    restarts : int
        Maximum number of starts (``A_init``, the two moment starts, then random ones), ``>= 1``; see
        ``adaptive_restarts``.
    max_iter : int
        L-BFGS iterations per start.
    ridge : float
        Relative ridge: ``lam = ridge * trace(B^T B) / p`` (``>= 0``; keeps empty intervals defined).
    extrapolation : {"constant", "polynomial"}
        Extension of ``phi_hat`` outside the observed range.
    range_quantile : float
        ``q in (0, 0.1]`` (default ``1e-3``): the partition spans the ``[q, 1-q]`` quantiles of the
        observed ``u`` (constant or polynomial extension beyond, per ``extrapolation``, in the fit and in
        prediction). ``0``: it spans ``[min u, max u]`` (the paper; fragile for heavy-tailed ``u``).
    device : str
        Torch device of the optimisation (``"cpu"`` or ``"cuda"``; converted to a ``torch.device`` by
        :meth:`fit`).
    random_state : None, int or numpy.random.Generator
        Randomness of the random restarts: an integer seed (default ``0``: reproducible fits), a generator
        (consumed by each fit) or ``None`` (fresh entropy from the operating system).
    tol : float
        Relative tolerance. Gauss-Newton stops when an accepted step lowers the objective by less than
        ``tol`` (relative) or when its model predicts less (see also ``stat_tol``); L-BFGS uses it as
        ``tolerance_change`` and ``tol / 100`` as ``tolerance_grad``. The excess risk left is at most
        ``~ (N-1) tol objective_``.
    optimizer : {"gauss-newton", "lbfgs"}
        Levenberg-Marquardt on the variable-projection residual (Kaufman's projected Jacobian, computed in
        closed form; default) or ``torch.optim.LBFGS`` with strong Wolfe line search and autograd through
        the linear solve.
    num_threads : int or None
        Torch intra-op threads during :meth:`fit` (restored afterwards); ``None`` leaves them alone. One
        thread is much faster on a shared/contended CPU and is right for process-parallel sweeps.
    patience : int
        A start whose objective is above 1.1 x the best one after ``patience`` iterations is dropped.
    adaptive_restarts : bool
        If True (default) a start that joins the incumbent's basin is stopped, and random starts are run
        only when the consistent (``A_init``/moment) starts disagree. False: every start runs to the end
        (or to ``patience``), the behaviour before.
    join_tol : float
        ``1 - |<A, A_best>_F|`` below which two unit-norm iterates count as the same basin (``(0, 1)``).
    stat_tol : float
        Gauss-Newton also stops when its model predicts a relative decrease below
        ``stat_tol * q / (M N)``, ``q = r (2 d - r)`` (``>= 0``; ``0``: ``tol`` alone, the behaviour before).
        Why (a heuristic, derived here, with its limits measured): ``sigma^2 q / (M N)`` is the objective's
        statistical resolution in ``A`` (the expected excess objective of the best ``A`` over the fitted
        one). If the Gauss-Newton model were exact, the excess ``L2`` error left by stopping would be
        ``~ (N-1)`` times the predicted decrease, at most ``~ stat_tol sigma^2 q / M`` against a statistical
        error ``~ c_A sigma^2 q / M`` (``c_A ~ 0.5-0.8``, module docstring): 1-2 % of it. The model is NOT
        exact near the end: at ``M = 2^14, d = 30, K = 32`` (the benchmark) the last steps lowered the
        objective 3-30x more than predicted (pairs crossing knots, the moving quantile range), so the bound
        is not rigorous; what was measured instead is the ``L2`` error over those steps, which moved by
        +-2 % at random (no systematic loss: with the rule 1.337e-4 vs 1.357e-4 without at ``2^14``,
        8.935e-5 vs 8.949e-5 at ``2^16``, identical at ``2^12`` and on 5 other seeds, where it did not fire).
        Only the least-damped step of each iteration is judged by this rule.
    seed : int, optional
        Deprecated alias of ``random_state`` (a :class:`DeprecationWarning`); given, it replaces the default
        ``random_state``; giving both is an error.

    Attributes
    ----------
    A_ : ndarray (d, d)
        Estimated matrix, ``||A_||_F = 1`` (only ``g`` is identifiable).
    U_, V_ : ndarray (d, r)
        Its factors, ``A_ = U_ V_^T``.
    coef_ : ndarray (K, s+1)
        Legendre coefficients of ``phi_hat`` on each interval.
    range_ : tuple
        ``(lo, hi)``, the partitioned range of ``u``.
    objective_ : float
        Final reduced objective (mean squared residual + ridge term).
    n_iter_ : int
        Optimiser iterations of the winning start.
    restart_objectives_ : list of float
        Final objective of every start that was run (consistent starts first).
    n_starts_ : int
        Number of starts actually run (``<= restarts``).
    converged_ : bool
        Whether the winning start met its tolerance (else a :class:`ConvergenceWarning` was issued).
    fit_time_ : float
        Wall-clock seconds of :meth:`fit` (of :meth:`fit_many`: the whole call's divided by the number of data
        sets).

    Notes
    -----
    Memory: about ``8 (M N (2 d r + 2 p) + 12 M N (N-1) (s+2))`` bytes at the peak of a Gauss-Newton
    iteration (the Jacobian is formed whole, and the design too below the size rule); :meth:`fit_many` holds the
    data of all ``R`` data sets and evaluates them in groups of ``~2^17 / (M N (N-1))``.

    Examples
    --------
    >>> from numerics import IPSModel, PairwiseInteractionEstimator
    >>> model = IPSModel(d=5, N=4, degree=3, noise=0.1, n_knots=6, support=1.0, seed=0)
    >>> X, Y = model.sample(2000, rng=1)
    >>> est = PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=6).fit(X, Y)
    >>> err, se = est.l2_error(model, n_pairs=10000, rng=2)
    >>> bool(err < 0.1 * model.interaction(*model.sample_pairs(10000, 3)).var())
    True

    The parameters follow scikit-learn's conventions (``get_params``, ``set_params``, ``clone``, ``score``),
    so model selection works on the 3-D ``X`` (scikit-learn installed):

    >>> from sklearn.model_selection import GridSearchCV                     # doctest: +SKIP
    >>> grid = {"n_intervals": [2, 4, 8]}
    >>> search = GridSearchCV(PairwiseInteractionEstimator(degree=1), grid, cv=3)  # doctest: +SKIP
    >>> search.fit(X, Y).best_params_                                        # doctest: +SKIP
    {'n_intervals': 8}
    """

    #: how the Gauss-Newton path multiplies by ``B``: "auto" (the size rule of :func:`_pair_design_pays`), "dense"
    #: or "pairs" (private: the tests and the benchmark compare the two on the same fits)
    _design_mode = "auto"

    def __init__(self, rank: int = 1, degree: int = 1, n_intervals: int = 4, restarts: int = 3,
                 max_iter: int = 200, ridge: float = 1e-10, extrapolation: str = "constant",
                 range_quantile: float = 1e-3, device: str = "cpu", random_state: Any = 0,
                 tol: float = 1e-6, optimizer: str = "gauss-newton",
                 num_threads: int | None = 1, patience: int = 5, adaptive_restarts: bool = True,
                 join_tol: float = 1e-4, stat_tol: float = 0.01, seed: Any = DEPRECATED) -> None:
        # scikit-learn's rule: every parameter stored as given (clone, get_params); checked here for an early
        # error and again by fit (after set_params), where the conversions happen (_checked_params)
        self.rank, self.degree, self.n_intervals, self.restarts = rank, degree, n_intervals, restarts
        self.max_iter, self.ridge, self.extrapolation = max_iter, ridge, extrapolation
        self.range_quantile, self.device, self.random_state, self.tol = range_quantile, device, random_state, tol
        self.optimizer, self.num_threads, self.patience = optimizer, num_threads, patience
        self.adaptive_restarts, self.join_tol, self.stat_tol, self.seed = adaptive_restarts, join_tol, stat_tol, seed
        warn_seed_alias(type(self).__name__, seed)
        self._cfg = self._checked_params()  # refreshed by every fit

    def _checked_params(self) -> _Config:
        """The parameters checked and converted (``int``, ``float``, ``torch.device``) for a fit."""
        check_count("rank", self.rank, 1)
        check_count("degree", self.degree, 0)
        check_count("n_intervals", self.n_intervals, 1)
        check_count("restarts", self.restarts, 1)
        check_count("max_iter", self.max_iter, 1)
        check_nonnegative("ridge", self.ridge)
        if self.extrapolation not in ("constant", "polynomial"):
            raise ValueError(f"extrapolation must be 'constant' or 'polynomial', got {self.extrapolation!r}")
        as_float("range_quantile", self.range_quantile, low=0, high=0.1)
        if self.range_quantile > 0.1:
            raise ValueError(f"range_quantile must be in [0, 0.1], got {self.range_quantile!r}")
        random_state = resolve_seed_alias(type(self).__name__, self.random_state, self.seed)
        check_random_state_param(random_state)
        check_positive("tol", self.tol)
        if self.optimizer not in ("gauss-newton", "lbfgs"):
            raise ValueError(f"optimizer must be 'gauss-newton' or 'lbfgs', got {self.optimizer!r}")
        if self.num_threads is not None:
            check_n_jobs("num_threads", self.num_threads)
        check_count("patience", self.patience, 1)
        check_positive("join_tol", self.join_tol)
        if self.join_tol >= 1:
            raise ValueError(f"join_tol must be in (0, 1), got {self.join_tol!r}")
        check_nonnegative("stat_tol", self.stat_tol)
        check_flag("adaptive_restarts", self.adaptive_restarts)
        check_device("device", self.device)
        if str(self.device).startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device must be 'cpu' (CUDA is not available here), got {self.device!r}")
        return _Config(
            rank=int(self.rank), degree=int(self.degree), n_intervals=int(self.n_intervals),
            restarts=int(self.restarts), max_iter=int(self.max_iter), ridge=float(self.ridge),
            extrapolation=self.extrapolation, range_quantile=float(self.range_quantile),
            device=torch.device(self.device),
            random_state=random_state if isinstance(random_state, np.random.Generator) or random_state is None
            else int(random_state),
            tol=float(self.tol), optimizer=self.optimizer,
            num_threads=None if self.num_threads is None else int(self.num_threads), patience=int(self.patience),
            adaptive_restarts=bool(self.adaptive_restarts), join_tol=float(self.join_tol),
            stat_tol=float(self.stat_tol))

    # ------------------------------------------------------------ internals
    @property
    def n_basis(self) -> int:
        """``p = K (s + 1)`` (from the parameters as set)."""
        return int(self.n_intervals) * (int(self.degree) + 1)

    def _setup(self, X: np.ndarray, Y: np.ndarray) -> None:
        """Tensors of the data (``(R, M, N, d)`` and ``(R, M N)``; a 3-d ``X`` is one replicate) and the pairs."""
        dev = self._cfg.device
        X = torch.as_tensor(X, dtype=torch.float64, device=dev)
        self._X = X if X.dim() == 4 else X[None]
        R, M, N, _ = self._X.shape
        self._Y = torch.as_tensor(Y, dtype=torch.float64, device=dev).reshape(R, M * N)
        ii, jj = np.nonzero(~np.eye(N, dtype=bool))  # pair k = (ii[k], jj[k]): N - 1 consecutive j's per i
        self._ii = torch.as_tensor(ii, device=dev)
        self._jj = torch.as_tensor(jj, device=dev)
        self._bufs: dict = {}
        self._group = max(1, _PAIRS_PER_GROUP // (M * N * (N - 1)))  # replicates evaluated together

    def _buffer(self, name: str, shape: tuple) -> torch.Tensor:
        """A work array reused across evaluations of one fit (contents undefined; the storage of the largest
        shape asked so far, so that evaluations of fewer replicates reuse it)."""
        size = math.prod(shape)
        buf = self._bufs.get(name)
        if buf is None or buf.numel() < size:
            buf = torch.empty(size, dtype=torch.float64, device=self._cfg.device)
            self._bufs[name] = buf
        return buf[:size].view(shape)

    def _ranges(self, flat: torch.Tensor):
        """``(lo, hi, index of lo, index of hi)``, each ``(R,)``, of the pair values ``flat`` ``(R, n)`` (by row)."""
        if self._cfg.range_quantile == 0.0:
            ilo, ihi = torch.argmin(flat, dim=1), torch.argmax(flat, dim=1)
        else:
            k_lo = max(1, int(math.floor(self._cfg.range_quantile * flat.shape[1])))
            # the k_lo-th smallest and the k_lo-th largest: two partial selections of k_lo << n values
            # (torch.topk) are ~5x cheaper than two full torch.kthvalue passes and give the same pairs
            fd = flat.detach()
            ilo = torch.topk(fd, k_lo, dim=1, largest=False, sorted=True).indices[:, -1]
            ihi = torch.topk(fd, k_lo, dim=1, largest=True, sorted=True).indices[:, -1]
        return flat.gather(1, ilo[:, None])[:, 0], flat.gather(1, ihi[:, None])[:, 0], ilo, ihi

    def _range(self, u: torch.Tensor):
        """``(lo, hi, flat index of lo, flat index of hi)`` of the pair values ``u`` (one replicate, any shape)."""
        return tuple(v[0] for v in self._ranges(u.reshape(1, -1)))

    def _pairs(self, U: torch.Tensor, V: torch.Tensor, X: torch.Tensor):
        """``P = X U``, ``Q = X V`` (``(R, M, N, r)``) and ``u_{m,(i,j)} = P_i . Q_j / ||U V^T||_F``
        (``(R, M, N(N-1))``) for ``U, V`` of shape ``(R, d, r)``."""
        R, M, N, d = X.shape
        norm = torch.sqrt(torch.clamp((torch.bmm(U.mT, U) * torch.bmm(V.mT, V)).sum((1, 2)), min=1e-300))
        Xf = X.reshape(R, M * N, d)
        P = torch.bmm(Xf, U).view(R, M, N, -1)
        Q = torch.bmm(Xf, V).view(R, M, N, -1)
        u = P.index_select(2, self._ii) * (Q / norm[:, None, None, None]).index_select(2, self._jj)
        return P, Q, u[..., 0] if u.shape[-1] == 1 else u.sum(-1)

    def _pair_basis(self, U: torch.Tensor, V: torch.Tensor, X: torch.Tensor) -> _PairBasis:
        """The pair values, the range and the basis values of every pair (see :class:`_PairBasis`)."""
        R, M, N, _ = X.shape
        K, s = self._cfg.n_intervals, self._cfg.degree
        P, Q, u = self._pairs(U, V, X)
        lo, hi, ilo, ihi = self._ranges(u.reshape(R, -1))
        hi = torch.maximum(hi, lo + 1e-12)
        clamp = self._cfg.extrapolation == "constant"  # the same extension as phi() (fit = prediction)
        # each replicate's range mapped to [0, 1] (then one pw.locate for all): a = (u - lo) / (hi - lo)
        a = (u - lo[:, None, None]) / (hi - lo)[:, None, None]
        idx, t = pw.locate(a, 0.0, 1.0, K, clamp=clamp)
        if t.requires_grad:
            vals = torch.stack(pw.legendre_values(t, s)) / (N - 1)
        else:
            vals = torch.empty((s + 1,) + t.shape, dtype=X.dtype, device=X.device)
            for l, v in enumerate(pw.legendre_values(t, s)):
                torch.mul(v, 1.0 / (N - 1), out=vals[l])
        return _PairBasis(P=P, Q=Q, u=u, a=a, idx=idx, t=t, vals=vals, lo=lo, hi=hi, ilo=ilo, ihi=ihi, clamp=clamp)

    def _use_pair_design(self, n_rows: int) -> bool:
        """Whether the products with ``B`` use its nonzeros (:class:`_PairDesign`) or a dense ``B``."""
        if self._design_mode != "auto":
            return self._design_mode == "pairs"
        N, p = self._X.shape[2], self.n_basis
        return _pair_design_pays(n_rows, N, p, int(self._cfg.degree) + 1)

    def _pair_design(self, basis: _PairBasis) -> _PairDesign:
        """The design of the pairs ``basis`` from its nonzeros."""
        R, M, _ = basis.idx.shape
        N = self._X.shape[2]
        return _PairDesign(basis.idx.reshape(R, M * N, N - 1), basis.vals.reshape(-1, R, M * N, N - 1),
                           self._cfg.n_intervals, self._buffer)

    def _design_of(self, basis: _PairBasis):
        """The design of the pairs ``basis`` for the Gauss-Newton path: from its nonzeros or dense (by size)."""
        pairs = self._pair_design(basis)
        R, n_rows, _ = pairs.idx.shape
        if self._use_pair_design(R * n_rows):
            return pairs
        # a reused buffer (no page faults on a fresh 8 R M N p-byte allocation per evaluation); callers never
        # hold a design across two evaluations
        return _DenseDesign(pairs.dense(self._buffer("B", (R, n_rows, pairs.p))), pairs)

    def _design(self, U: torch.Tensor, V: torch.Tensor):
        """Dense design matrix ``B(A)`` (``(M N, p)``) and the range of the first replicate at ``U, V`` ``(d, r)``
        (differentiable: the L-BFGS path)."""
        basis = self._pair_basis(U[None], V[None], self._X[:1])
        pairs = self._pair_design(basis)
        n_rows = pairs.idx.shape[1]
        B = pairs.dense(None if basis.vals.requires_grad else self._buffer("B", (1, n_rows, pairs.p)))
        return B[0], basis.lo[0], basis.hi[0]

    def _solve(self, B: Any, full: bool = False, Y: torch.Tensor | None = None):
        """Ridge least squares ``c = (B^T B + lam I)^{-1} B^T Y`` and the objective, for every replicate.

        ``B`` is a design (:class:`_DenseDesign`, :class:`_PairDesign`) of ``R`` replicates, or a dense tensor
        ``(M N, p)`` of one (then the results are of that one replicate); ``Y`` defaults to the data's.
        """
        single = isinstance(B, torch.Tensor)
        design = _DenseDesign(B[None] if B.dim() == 2 else B) if single else B
        Y = self._Y if Y is None else Y
        G = design.gram()
        b = design.rmatvec(Y)
        p = G.shape[-1]
        lam = self._cfg.ridge * torch.clamp(torch.diagonal(G, dim1=1, dim2=2).mean(-1), min=1e-300)
        if self._cfg.ridge == 0.0:
            lam = lam * 0.0
        Greg = G + lam[:, None, None] * torch.eye(p, dtype=G.dtype, device=G.device)
        L, info = torch.linalg.cholesky_ex(Greg)
        ok = info == 0
        c = torch.cholesky_solve(b[..., None], L)[..., 0]
        if not bool(ok.all()):
            c = torch.where(ok[:, None], c, torch.linalg.lstsq(Greg, b[..., None]).solution[..., 0])
        resid = Y - design.matvec(c)
        loss = ((resid * resid).sum(-1) + lam * (c * c).sum(-1)) / Y.shape[-1]
        out = (loss, c)
        if full:
            # B^T resid = b - G c (= lam c up to rounding): p^2 flops instead of a pass over B
            out += (dict(G=G, Greg=Greg, L=L, ok=ok, resid=resid, Bt_resid=b - torch.bmm(G, c[..., None])[..., 0]),)
        if single and B.dim() == 2:
            out = (loss[0], c[0]) + ((_first(out[2]),) if full else ())
        return out

    def _objective(self, U: torch.Tensor, V: torch.Tensor):
        B, lo, hi = self._design(U, V)
        loss, c = self._solve(B)
        return loss, c, lo, hi

    def _moment_starts_all(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Two consistent starts from moments (a linearisation and a second-order expansion of phi).

        First order: ``C1 = mean (Y_i - mean Y) X_i S_i^T`` (``S_i`` the mean of the other tokens) is
        ``~ phi'(0) Sigma A Sigma / (N-1)`` for independent centred tokens, so ``Sigma^{-1} C1 Sigma^{-1}``
        truncated to rank ``r`` estimates ``A`` up to scale. Second order (useful when ``phi'`` averages
        to ~0, e.g. even ``phi``): ``Cov(Y_i, X_i X_i^T) ~ Sigma A Sigma A^T Sigma`` and
        ``Cov(Y_i, mean_{j!=i} X_j X_j^T) ~ Sigma A^T Sigma A Sigma`` (Gaussian-Stein heuristics), whose
        top-``r`` eigenvectors (after whitening) span the column and row spaces of ``A``; the start is
        ``U = E_u``, ``V = E_v`` with the signs/rotation left to the optimiser.

        Computed for every data set of :meth:`_setup`: two ``(U, V)`` pairs of tensors ``(R, d, r)``.
        """
        Xt = self._X
        R, M, N, d = Xt.shape
        Yt = self._Y.reshape(R, M, N)
        r = self._cfg.rank
        Xf = Xt.reshape(R, M * N, d)
        n = M * N
        Yc = Yt - Yt.mean((1, 2), keepdim=True)
        w = Yc.sum(dim=2)  # sum_i Yc_i, paired with every token j of the sample
        # three weighted second moments sum_{m,i} weight_{m,i} X_i X_i^T (weights 1, Yc_i and w_m); no
        # centred or averaged copies of the tokens (three d x d products; measured faster than one 3d x d)
        mean = Xf.mean(1)
        eye = torch.eye(d, dtype=Xt.dtype, device=Xt.device)
        Sigma = (Xf.mT @ Xf - n * mean[:, :, None] * mean[:, None, :]) / (n - 1) + 1e-10 * eye
        Sinv = torch.linalg.inv(Sigma)
        C2 = (Xf * Yc.reshape(R, -1, 1)).mT @ Xf / (M * N)
        # C1 = mean_{m,i} Yc_i X_i S_i^T with S_i = (sum_j X_j - X_i) / (N - 1):
        #    = (sum_m (sum_i Yc_i X_i) (sum_j X_j)^T - sum_{m,i} Yc_i X_i X_i^T) / ((N - 1) M N)
        Z = torch.einsum("smi,smik->smk", Yc, Xt)
        C1 = (Z.mT @ Xt.sum(dim=2) / (M * N) - C2) / (N - 1)
        Uu, sv, Vt = torch.linalg.svd(Sinv @ C1 @ Sinv)
        rs = torch.sqrt(sv[:, None, :r] + 1e-300)
        first = (Uu[..., :r] * rs, Vt[:, :r].mT * rs)
        C3 = (Xt * w[..., None, None]).reshape(R, -1, d).mT @ Xf / (M * N)
        C3 = (C3 - C2) / (N - 1)  # all j minus j = i -> mean over the other tokens
        second = []
        for C in (C2, C3):
            ev, vec = torch.linalg.eigh(Sinv @ (0.5 * (C + C.mT)) @ Sinv)
            order = torch.argsort(-ev.abs(), dim=1)[:, :r]
            second.append(vec.gather(2, order[:, None, :].expand(R, d, r)))
        return [first, tuple(second)]

    def _moment_starts(self, X: Any = None, Y: Any = None) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`_moment_starts_all` of the first data set, as arrays ``(d, r)`` (``X, Y`` are not read)."""
        return [(U[0].cpu().numpy(), V[0].cpu().numpy()) for U, V in self._moment_starts_all()]

    def _balance(self, U: torch.Tensor, V: torch.Tensor):
        """Balanced factors of ``U V^T / ||U V^T||_F`` (top-``r`` SVD), for ``(d, r)`` or ``(R, d, r)`` factors."""
        # U V^T = Qu (Ru Rv^T) Qv^T: an r x r SVD instead of a d x d one
        Qu, Ru = torch.linalg.qr(U)
        Qv, Rv = torch.linalg.qr(V)
        a, sv, bt = torch.linalg.svd(Ru @ Rv.mT)
        sv = sv / torch.clamp(torch.linalg.norm(sv, dim=-1, keepdim=True), min=1e-300)
        root = torch.sqrt(sv).unsqueeze(-2)
        return (Qu @ a) * root, (Qv @ bt.mT) * root

    def _run_lbfgs(self, U0: np.ndarray, V0: np.ndarray):
        dev = self._cfg.device
        U = torch.tensor(U0, dtype=torch.float64, device=dev, requires_grad=True)
        V = torch.tensor(V0, dtype=torch.float64, device=dev, requires_grad=True)
        opt = torch.optim.LBFGS([U, V], lr=1.0, max_iter=self._cfg.max_iter, history_size=20,
                                tolerance_grad=self._cfg.tol * 1e-2, tolerance_change=self._cfg.tol,
                                line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss, _, _, _ = self._objective(U, V)
            loss.backward()
            return loss

        opt.step(closure)
        n_iter = int(opt.state[opt._params[0]].get("n_iter", 0))
        with torch.no_grad():
            U1, V1 = self._balance(U, V)
            loss, c, lo, hi = self._objective(U1, V1)
        return float(loss), U1, V1, c, float(lo), float(hi), n_iter

    def _jacobian(self, basis: _PairBasis, c: torch.Tensor, X: torch.Tensor, pairs: _PairDesign) -> torch.Tensor:
        """Jacobian ``(R, M N, 2 d r)`` of the fitted values ``B(A) c`` (``c`` fixed) w.r.t. ``vec(U), vec(V)``.

        The partition moves with the observed range, whose end points are the values of two particular pairs:
        its two rank-one terms are included.
        """
        R, M, N, d = X.shape
        K, s = self._cfg.n_intervals, self._cfg.degree
        C = pairs.coefficients(c).view((s + 1,) + basis.idx.shape)  # the coefficients at every pair
        derivatives = pw.legendre_derivatives(basis.t, s)
        dphi = torch.zeros_like(basis.t)  # the constant (l = 0) has derivative 0
        for l in range(1, s + 1):
            dphi.addcmul_(C[l], derivatives[l])
        lo, hi = basis.lo.view(R, 1, 1), basis.hi.view(R, 1, 1)
        # phi_hat'(u) on each pair, with the 1/(N-1) of the row average folded in (J is linear in it)
        dphi.mul_(2.0 * K / ((hi - lo) * (N - 1)))
        if basis.clamp:
            dphi.masked_fill_((basis.u < lo) | (basis.u > hi), 0.0)
        # the range: lo = u of one pair, hi = u of another; t depends on a = (u - lo) / (hi - lo)
        # the pairs are ordered by i (N - 1 consecutive j's each): a row sum is a reshape-sum
        rows_hi = (dphi * basis.a).reshape(R, M * N, N - 1).sum(-1)
        rows_lo = dphi.reshape(R, M * N, N - 1).sum(-1) - rows_hi
        D = self._buffer("D", (R, M, N, N)).zero_()
        D.view(R, M, N * N).index_copy_(2, self._ii * N + self._jj, dphi)
        P, Q = basis.P, basis.Q
        r = P.shape[-1]
        QX = self._buffer("QX", (R, M, N, r + d))
        QX[..., :r] = Q
        QX[..., r:] = X
        # one batched product for D Q (M, N, r) and D X (M, N, d)
        DQX = torch.bmm(D.view(R * M, N, N), QX.view(R * M, N, r + d)).view(R, M, N, r + d)
        DQ, DX = DQX[..., :r], DQX[..., r:]
        J = self._buffer("J", (R, M, N, 2, d, r))
        torch.mul(X[..., :, None], DQ[..., None, :], out=J[:, :, :, 0])  # d u / d U
        torch.mul(DX[..., :, None], P[..., None, :], out=J[:, :, :, 1])  # d u / d V
        J = J.view(R, M * N, 2 * d * r)
        # both rank-one range terms in one pass over J: J -= [rows_lo rows_hi] [du_lo; du_hi]
        J.baddbmm_(torch.stack([rows_lo, rows_hi], dim=2), self._range_gradients(basis, X), alpha=-1.0)
        return J

    def _range_gradients(self, basis: _PairBasis, X: torch.Tensor) -> torch.Tensor:
        """``d u / d(vec U, vec V)`` ``(R, 2, 2 d r)`` of the two pairs whose values are the range ends ``lo, hi``."""
        R, M, N, d = X.shape
        r = basis.P.shape[-1]
        n_pairs = self._ii.numel()
        flat_index = torch.stack([basis.ilo, basis.ihi], dim=1)  # (R, 2) in each replicate's u
        sample = torch.arange(R, device=X.device)[:, None] * M + flat_index // n_pairs
        k = flat_index % n_pairs
        row_i = (sample * N + self._ii[k]).reshape(-1)  # rows (replicate, m, i) of the flat token arrays
        row_j = (sample * N + self._jj[k]).reshape(-1)
        Xi = X.reshape(-1, d).index_select(0, row_i).view(R, 2, d, 1)
        Xj = X.reshape(-1, d).index_select(0, row_j).view(R, 2, d, 1)
        Pi = basis.P.reshape(-1, r).index_select(0, row_i).view(R, 2, 1, r)
        Qj = basis.Q.reshape(-1, r).index_select(0, row_j).view(R, 2, 1, r)
        return torch.cat([(Xi * Qj).reshape(R, 2, d * r), (Xj * Pi).reshape(R, 2, d * r)], dim=2)

    @staticmethod
    def _kaufman(J: torch.Tensor, design: Any, sol: dict) -> tuple[torch.Tensor, torch.Tensor]:
        """``H = Jp^T Jp`` and ``grad = Jp^T resid`` of the projected Jacobian ``Jp = (I - B Greg^{-1} B^T) J``
        (Kaufman's variable projection), never forming ``Jp``:
        ``Jp^T Jp = J^T J - 2 W^T Greg^{-1} W + W^T Greg^{-1} G Greg^{-1} W`` (``W = B^T J``),
        ``Jp^T resid = J^T resid - W^T Greg^{-1} B^T resid``."""
        G, Greg, resid, ok = sol["G"], sol["Greg"], sol["resid"], sol["ok"]
        W = design.rmatmat(J)
        Z = torch.cholesky_solve(W, sol["L"])
        if not bool(ok.all()):
            # a singular Greg (ridge 0 with an empty interval): any least-squares solution gives the same B Z, the
            # projection of J on the columns of B (W = B^T J lies in the range of Greg = B^T B)
            Z = torch.where(ok[:, None, None], Z, torch.linalg.lstsq(Greg, W).solution)
        Zt = Z.mT
        H = torch.bmm(J.mT, J) - 2.0 * torch.bmm(W.mT, Z) + torch.bmm(Zt, torch.bmm(G, Z))
        grad = torch.bmm(J.mT, resid[..., None])[..., 0] - torch.bmm(Zt, sol["Bt_resid"][..., None])[..., 0]
        return H, grad

    def _gn_state(self, U: torch.Tensor, V: torch.Tensor, jacobian: bool, reps: torch.Tensor | None = None):
        """Objective, coefficients, range and (optionally) the Gauss-Newton matrix and gradient at ``(U, V)``.

        ``(U, V)`` ``(R', d, r)`` (or ``(d, r)``: one replicate, unbatched results) must be balanced with
        ``||U V^T||_F = 1``; ``reps`` are the replicates they belong to (default: all). Returns
        ``(loss, c, lo, hi, H, grad)``: ``H = Jp^T Jp`` and ``grad = Jp^T resid`` (:meth:`_kaufman`; ``None``
        without ``jacobian``); ``-2 grad / (M N)`` is the gradient of the reduced objective (up to the derivative
        of the tiny relative ridge).
        """
        single = U.dim() == 2
        if single:
            U, V = U[None], V[None]
        if reps is None:
            reps = torch.arange(self._X.shape[0])
        # replicates in groups of at most `_group` (cache-sized per-pair arrays; see _PAIRS_PER_GROUP)
        g = self._group
        parts = [self._state(U[a: a + g], V[a: a + g], *self._data(reps[a: a + g]), jacobian)
                 for a in range(0, U.shape[0], g)]
        out = tuple(None if part[0] is None else torch.cat(part) if len(parts) > 1 else part[0]
                    for part in zip(*parts))
        return tuple(None if v is None else v[0] for v in out) if single else out

    def _state(self, U: torch.Tensor, V: torch.Tensor, X: torch.Tensor, Y: torch.Tensor, jacobian: bool):
        """:meth:`_gn_state` of the data ``X, Y`` of as many replicates as ``U, V``."""
        with torch.no_grad():
            basis = self._pair_basis(U, V, X)
            design = self._design_of(basis)
            if not jacobian:
                loss, c = self._solve(design, Y=Y)
                return loss, c, basis.lo, basis.hi, None, None
            loss, c, sol = self._solve(design, full=True, Y=Y)
            H, grad = self._kaufman(self._jacobian(basis, c, X, design.pairs), design, sol)
            return loss, c, basis.lo, basis.hi, H, grad

    def _data(self, reps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``X, Y`` of the replicates ``reps`` (increasing): a view if they are consecutive, else a copy."""
        first, last = int(reps[0]), int(reps[-1])
        if last - first + 1 == reps.numel():
            return self._X[first: last + 1], self._Y[first: last + 1]
        return self._X.index_select(0, reps), self._Y.index_select(0, reps)

    def _evaluate(self, U: torch.Tensor, V: torch.Tensor, reps: torch.Tensor, jacobian: torch.Tensor) -> _GNState:
        """The states at ``(U, V)`` of the replicates ``reps``; with the Gauss-Newton matrix where ``jacobian``
        (a mask; ``H, g`` are zero elsewhere)."""
        n, d, r = U.shape
        if bool(jacobian.all()) or not bool(jacobian.any()):  # one evaluation (the usual case)
            loss, c, lo, hi, H, g = self._gn_state(U, V, bool(jacobian[0]), reps)
            return _GNState(U=U, V=V, loss=loss, c=c, lo=lo, hi=hi, H=H, g=g)
        q, p = 2 * d * r, self.n_basis
        dt, dev = U.dtype, U.device
        st = _GNState(U=U, V=V, loss=torch.empty(n, dtype=dt, device=dev), c=torch.empty(n, p, dtype=dt, device=dev),
                      lo=torch.empty(n, dtype=dt, device=dev), hi=torch.empty(n, dtype=dt, device=dev),
                      H=torch.zeros(n, q, q, dtype=dt, device=dev), g=torch.zeros(n, q, dtype=dt, device=dev))
        for with_jacobian in (True, False):
            part = (jacobian if with_jacobian else ~jacobian).nonzero()[:, 0]
            if part.numel() == 0:
                continue
            loss, c, lo, hi, H, g = self._gn_state(U[part], V[part], with_jacobian, reps[part])
            st.loss[part], st.c[part], st.lo[part], st.hi[part] = loss, c, lo, hi
            if with_jacobian:
                st.H[part], st.g[part] = H, g
        return st

    @staticmethod
    def _alignment(U: torch.Tensor, V: torch.Tensor, Ub: torch.Tensor, Vb: torch.Tensor) -> torch.Tensor:
        """``|<U V^T, Ub Vb^T>_F|`` of unit-norm factorisations ``(R, d, r)`` (1: the same ``A`` up to sign)."""
        return torch.bmm(torch.bmm(V.mT, Vb), torch.bmm(Ub.mT, U)).diagonal(dim1=-2, dim2=-1).sum(-1).abs()

    def _run_gn(self, U0: torch.Tensor, V0: torch.Tensor, reps: torch.Tensor, best: torch.Tensor,
                incumbent: _Incumbent) -> _StartResult:
        """Levenberg-Marquardt on the variable-projection residual (Kaufman's Jacobian), one start of each of the
        replicates ``reps`` at once (``U0, V0`` ``(R', d, r)``; every replicate has its own damping, acceptance
        and stopping, the iterations of the replicates still running are evaluated together).

        ``best`` ``(R',)`` is each replicate's incumbent objective (``inf``: none; a start still above
        ``1.1 best`` after ``patience`` iterations is dropped) and ``incumbent`` its balanced ``(U, V)``: a start
        whose ``A`` comes within ``1 - |<A, A_best>| < join_tol`` of it, with an objective not below ``best``, has
        joined the incumbent's basin and is stopped (``joined``).
        """
        cfg = self._cfg
        U, V = self._balance(U0, V0)
        n, d, r = U.shape
        st = self._evaluate(U, V, reps, torch.ones(n, dtype=torch.bool))
        mu = torch.full((n,), 1e-3, dtype=torch.float64)
        n_iter = torch.zeros(n, dtype=torch.long)
        running = torch.ones(n, dtype=torch.bool)
        converged = torch.zeros(n, dtype=torch.bool)
        joined = torch.zeros(n, dtype=torch.bool)
        # the model-predicted relative decrease below which a step is not worth an evaluation: tol, or
        # stat_tol x the objective's statistical resolution in A, q / (M N) with q = r (2 d - r) (see stat_tol)
        pred_tol = max(cfg.tol, cfg.stat_tol * r * (2 * d - r) / self._Y.shape[-1])
        for it in range(1, cfg.max_iter + 1):
            a = _rows(running)  # the starts still running (None: all of them, no copies: the usual case)
            if a is not None and a.numel() == 0:
                break
            _assign(n_iter, a, it)
            accepted, trial, joining, mu_a = self._lm_step(st.take(a), _pick(mu, a), _pick(reps, a), _pick(best, a),
                                                           incumbent.take(a), pred_tol)
            _assign(mu, a, mu_a)
            acc = a
            if not bool(accepted.all()):  # no descent direction at any damping: a (local) minimum
                ids = torch.arange(n) if a is None else a
                converged[ids[~accepted]] = True
                running[ids[~accepted]] = False
                acc = ids[accepted]
                if acc.numel() == 0:
                    continue
                trial, joining = trial.take(accepted), joining[accepted]
            before = _pick(st.loss, acc)
            if acc is None:
                st = trial
            else:
                st.put(acc, trial)
            loss, behind_of = _pick(st.loss, acc), _pick(best, acc)
            _assign(mu, acc, torch.clamp(_pick(mu, acc) / 3.0, min=1e-9))
            small = (before - loss) / torch.clamp(before, min=1e-300) < cfg.tol
            # joined the incumbent's basin: it would converge to the same minimum
            join = joining & (loss >= behind_of) & ~small
            # a start that is far behind the best one after `patience` steps is dropped (on purpose: "converged")
            stop = small | join | ((it >= cfg.patience) & (loss > 1.1 * behind_of))
            if bool(stop.any()):
                ids = torch.arange(n) if acc is None else acc
                joined[ids[join]] = True
                converged[ids[stop]] = True
                running[ids[stop]] = False
        return _StartResult(state=st, n_iter=n_iter, converged=converged, joined=joined)

    def _lm_step(self, st: _GNState, mu: torch.Tensor, reps: torch.Tensor, best: torch.Tensor,
                 incumbent: _Incumbent, pred_tol: float):
        """One Levenberg-Marquardt iteration of every replicate of ``st``: up to 3 trial steps with 10x more damping
        after each failure. Returns ``(accepted, trial, joining, mu)``: which replicates found a step, the states
        at their accepted trial points (entries of the others undefined), whether that point joined the
        incumbent's basin, and the damping."""
        cfg = self._cfg
        n, d, r = st.U.shape
        H = 0.5 * (st.H + st.H.mT)
        diag = torch.diagonal(H, dim1=1, dim2=2)
        Hd = torch.maximum(diag, diag.max(dim=1, keepdim=True).values * 1e-12)
        mu = mu.clone()
        accepted = torch.zeros(n, dtype=torch.bool)
        pending = torch.ones(n, dtype=torch.bool)
        joining = torch.zeros(n, dtype=torch.bool)
        trial = None  # the states at the accepted trial points (a copy of st, filled in)
        for attempt in range(3):
            sub = _rows(pending)  # None: every replicate (no copies: the usual case)
            if sub is not None and sub.numel() == 0:
                break
            Hs, g, loss = _pick(H, sub), _pick(st.g, sub), _pick(st.loss, sub)
            damped = Hs + _pick(mu, sub)[:, None, None] * torch.diag_embed(_pick(Hd, sub))
            step, info = torch.linalg.solve_ex(damped, g)
            solved = (info == 0) & torch.isfinite(step).all(dim=1)
            Hstep = torch.bmm(Hs, step[:, :, None])[:, :, 0]
            pred = (2.0 * (g * step).sum(1) - (step * Hstep).sum(1)) / self._Y.shape[-1]
            # the statistical rule judges the least-damped step of the iteration only: after a rejected trial the
            # damping grows 10x and the predicted decrease shrinks with it, which says nothing about the decrease
            # still available (later attempts keep the plain `tol` rule)
            no_gain = solved & (pred <= (pred_tol if attempt == 0 else cfg.tol) * loss)
            go = solved & ~no_gain
            t = sub
            if not bool(go.all()):
                ids = torch.arange(n) if sub is None else sub
                mu[ids[~solved]] *= 10.0
                pending[ids[no_gain]] = False  # the Gauss-Newton model predicts no useful decrease
                t, step = ids[go], step[go]
                if t.numel() == 0:
                    continue
            U1, V1 = self._balance(_pick(st.U, t) + step[:, : d * r].reshape(-1, d, r),
                                   _pick(st.V, t) + step[:, d * r:].reshape(-1, d, r))
            near = torch.zeros(U1.shape[0], dtype=torch.bool)
            if bool(incumbent.has.any()):
                near = _pick(incumbent.has, t) & (1.0 - self._alignment(U1, V1, _pick(incumbent.U, t),
                                                                        _pick(incumbent.V, t)) < cfg.join_tol)
            # the full state (with Jacobian) at the trial point: most steps are accepted, and then it is the next
            # iteration's state (one evaluation per iteration instead of two); a point that joins the incumbent's
            # basin is first evaluated without it (it ends the start if no better)
            new = self._evaluate(U1, V1, _pick(reps, t), ~near)
            ok = torch.isfinite(new.loss) & (new.loss <= _pick(st.loss, t))
            again = (near & ok & (new.loss < _pick(best, t))).nonzero()[:, 0]
            if again.numel():  # better than the incumbent: go on, with the Jacobian
                new.put(again, self._evaluate(U1[again], V1[again], _pick(reps, t)[again],
                                              torch.ones(again.numel(), dtype=torch.bool)))
            if t is None and bool(ok.all()):  # every replicate's first trial accepted (the usual case)
                return ok, new, near, mu
            t = torch.arange(n) if t is None else t
            if trial is None:
                trial = st.take(torch.arange(n))
            trial.put(t[ok], new.take(ok))
            accepted[t[ok]] = True
            pending[t[ok]] = False
            joining[t[ok]] = near[ok]
            mu[t[~ok]] *= 10.0
        return accepted, trial, joining, mu

    # ---------------------------------------------------------------- public
    def fit(self, X: Any, Y: Any, *, A: Any = None, A_init: Any = None) -> "PairwiseInteractionEstimator":
        """Fit on ``X`` of shape ``(M, N, d)`` and ``Y`` of shape ``(M, N)``; returns ``self``.

        Parameters
        ----------
        X, Y : arrays
            Data.
        A : array (d, d), optional
            Keep the matrix fixed at (the best rank-``r`` approximation of) ``A`` and fit ``phi`` only:
            the "oracle" least squares when ``A = A*`` (no optimisation, ``n_iter_ = 0``).
        A_init : array (d, d), optional
            An extra first start (before the moment starts); ``restarts`` counts it.
        """
        self._cfg = self._checked_params()  # the parameters as set now (set_params), converted
        with torch_threads(self._cfg.num_threads):
            t0 = time.perf_counter()
            X, Y = check_XY(X, Y)
            (result,) = self._fit_batch(X[None], Y[None], None if A is None else [A], A_init,
                                        [self._cfg.random_state])
            if not result.converged:
                warnings.warn(f"PairwiseInteractionEstimator: the best start stopped at max_iter={self._cfg.max_iter} "
                              "before the relative objective change fell below tol", ConvergenceWarning, stacklevel=2)
            return self._apply(result, time.perf_counter() - t0)

    def fit_many(self, X: Any, Y: Any, *, A: Any = None,
                 random_states: Sequence[Any] | None = None) -> list["PairwiseInteractionEstimator"]:
        """Fit ``R`` independent data sets in one call; returns ``R`` fitted clones of this estimator.

        The Gauss-Newton iterations of all replicates run together (one batched evaluation of the objective, its
        Jacobian and the linear solves for every replicate still iterating; each replicate keeps its own damping,
        acceptance, stopping, patience and basin-joining decisions, its own moment starts, and its random starts
        when its consistent starts disagree). Every clone holds what :meth:`fit` on its data set gives, up to
        rounding (the batched products sum in another order). With ``optimizer="lbfgs"`` the replicates are fitted
        one after the other.

        Parameters
        ----------
        X : array (R, M, N, d)
            ``R >= 1`` data sets of ``M >= 2`` samples each.
        Y : array (R, M, N)
            Their outputs.
        A : array (d, d) or (R, d, d), optional
            Fixed matrix (one for all or one per data set): fit ``phi`` only, as ``fit(..., A=...)``.
        random_states : sequence of length R, optional
            The ``random_state`` of each clone (``None``, an integer or a ``numpy.random.Generator``; default: this
            estimator's for all, a generator then being consumed by the data sets in order, as by ``R`` calls of
            :meth:`fit`).

        Returns
        -------
        list of PairwiseInteractionEstimator
            ``R`` clones (the parameters of this one; ``random_state`` from ``random_states`` if given) with the
            fitted attributes of :meth:`fit`. ``fit_time_`` is the wall-clock time of the whole call divided by
            ``R``. This estimator itself is left as it was.

        Warns
        -----
        ConvergenceWarning
            Once, naming the data sets whose best start stopped at ``max_iter``.

        Examples
        --------
        >>> from numerics import IPSModel, PairwiseInteractionEstimator
        >>> model = IPSModel(d=3, N=4, degree=3, noise=0.1, seed=0)
        >>> data = [model.sample(300, rng=i) for i in range(4)]
        >>> X, Y = np.stack([x for x, _ in data]), np.stack([y for _, y in data])
        >>> fits = PairwiseInteractionEstimator(n_intervals=4).fit_many(X, Y)
        >>> one = PairwiseInteractionEstimator(n_intervals=4).fit(X[2], Y[2])
        >>> len(fits), bool(abs(fits[2].objective_ - one.objective_) <= 1e-6 * one.objective_)
        (4, True)
        """
        self._cfg = self._checked_params()
        t0 = time.perf_counter()
        X, Y = _check_XY_many(X, Y)
        R, M, N, d = X.shape
        states = self._replicate_random_states(random_states, R)
        matrices = _replicate_matrices(A, R)
        clones = [self._clone(None if random_states is None else rs) for rs in states]
        with torch_threads(self._cfg.num_threads):
            if self._cfg.optimizer == "lbfgs":  # one fit after the other (torch.optim state is per parameter set)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    for i, est in enumerate(clones):
                        est.fit(X[i], Y[i], A=None if matrices is None else matrices[i])
            else:
                results = self._fit_batch(X, Y, matrices, None, states)
                for est, res in zip(clones, results):
                    est._apply(res, 0.0)
        late = [i for i, est in enumerate(clones) if not est.converged_]
        if late:
            warnings.warn(f"PairwiseInteractionEstimator.fit_many: the best start of data sets {late} stopped at "
                          f"max_iter={self._cfg.max_iter} before the relative objective change fell below tol",
                          ConvergenceWarning, stacklevel=2)
        per_fit = (time.perf_counter() - t0) / R
        for est in clones:
            est.fit_time_ = per_fit
        return clones

    def _replicate_random_states(self, random_states: Any, R: int) -> list:
        """The random state of each of ``R`` data sets (checked): ``random_states`` or this estimator's."""
        if random_states is None:
            return [self._cfg.random_state] * R
        if isinstance(random_states, (str, bytes, dict, np.random.Generator)) or not hasattr(random_states, "__len__"):
            raise ArgumentTypeError(f"random_states must be a sequence of {R} random states, got "
                                    f"{type(random_states).__name__}")
        if len(random_states) != R:
            raise ValueError(f"random_states must hold one random state per data set (R = {R}), got "
                             f"{len(random_states)}")
        for i, value in enumerate(random_states):
            try:
                check_random_state_param(value)
            except (ValueError, TypeError) as exc:
                raise type(exc)(f"random_states[{i}]: {exc}") from None
        return [v if isinstance(v, np.random.Generator) or v is None else int(v) for v in random_states]

    def _clone(self, random_state: Any = None) -> "PairwiseInteractionEstimator":
        """An unfitted estimator with this one's parameters (and ``random_state`` if given)."""
        params = self.get_params(deep=False)
        if random_state is not None:
            params.update(random_state=random_state, seed=DEPRECATED)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # the seed alias warned once, at construction
            return type(self)(**params)

    def _factor(self, A: Any, d: int, name: str) -> tuple[np.ndarray, np.ndarray]:
        A = np.asarray(A, dtype=np.float64)
        if A.shape != (d, d) or not np.all(np.isfinite(A)) or not np.any(A != 0):
            raise ValueError(f"{name} must be a finite nonzero ({d}, {d}) matrix, got shape {A.shape}")
        Uu, sv, Vt = np.linalg.svd(A)
        r = self._cfg.rank
        return Uu[:, :r] * np.sqrt(sv[:r]), Vt[:r].T * np.sqrt(sv[:r])

    def _fit_batch(self, X: np.ndarray, Y: np.ndarray, A: list | None, A_init: Any,
                   random_states: list) -> list[_FitResult]:
        """Fit every data set of ``X`` ``(R, M, N, d)``, ``Y`` ``(R, M, N)`` (checked): ``A`` (``R`` fixed
        matrices) or the starts (``A_init``, the moment starts, random ones from ``random_states``)."""
        R, M, N, d = X.shape
        if self._cfg.rank > d:
            raise ValueError(f"rank must be an integer in [1, d={d}], got {self._cfg.rank}")
        self._setup(X, Y)
        try:
            if d == 1 or A is not None:
                return self._fixed_fits(A, d)
            starts, n_consistent = self._starts(A_init, random_states, d)
            return self._run_starts(starts, n_consistent)
        finally:
            del self._X, self._Y, self._bufs

    def _fixed_fits(self, A: list | None, d: int) -> list[_FitResult]:
        """``phi`` only, at ``A`` (one matrix per data set) or, for ``d = 1``, at ``A = 1``: ``A = +-1`` after
        normalisation and both signs give the same class, so there is nothing to optimise."""
        R, dev = self._X.shape[0], self._cfg.device
        if A is None:
            U = V = torch.ones(R, 1, 1, dtype=torch.float64, device=dev)
        else:
            factors = [self._factor(a, d, "A") for a in A]
            U, V = self._balance(torch.as_tensor(np.stack([f[0] for f in factors]), device=dev),
                                 torch.as_tensor(np.stack([f[1] for f in factors]), device=dev))
        loss, c, lo, hi, _, _ = self._gn_state(U, V, jacobian=False)
        return [_FitResult(objective=float(loss[i]), U=U[i], V=V[i], c=c[i], lo=float(lo[i]), hi=float(hi[i]),
                           n_iter=0, restart_objectives=[float(loss[i])], converged=True) for i in range(R)]

    def _starts(self, A_init: Any, random_states: list, d: int) -> tuple[list, int]:
        """The starts ``[(U0, V0)]`` (``(R, d, r)`` each): ``A_init`` and the moment starts (the consistent ones,
        their number second), then random ones (drawn from each data set's random state in turn, ``U`` then ``V``,
        as :meth:`fit` draws them)."""
        r, dev = self._cfg.rank, self._cfg.device
        consistent = []
        if A_init is not None:
            consistent.append(tuple(torch.as_tensor(f, device=dev)[None] for f in self._factor(A_init, d, "A_init")))
        consistent = (consistent + self._moment_starts_all())[: self._cfg.restarts]
        n_random = self._cfg.restarts - len(consistent)
        draws = []
        for random_state in random_states:
            gen = check_random_state(random_state)
            draws.append([(gen.standard_normal((d, r)), gen.standard_normal((d, r))) for _ in range(n_random)])
        randoms = [tuple(torch.as_tensor(np.stack([dr[k][i] for dr in draws]), device=dev) for i in (0, 1))
                   for k in range(n_random)]
        return consistent + randoms, len(consistent)

    def _run_starts(self, starts: list, n_consistent: int) -> list[_FitResult]:
        """Run the starts of every data set and keep each one's best (see ``adaptive_restarts``): start ``k`` of
        all the data sets that still run it at once."""
        cfg = self._cfg
        R = self._X.shape[0]
        book = _StartBook(R, self._X.shape[3], cfg.rank, cfg.adaptive_restarts, cfg.join_tol, self._X.device)
        for k, (U0, V0) in enumerate(starts):
            if k >= n_consistent and cfg.adaptive_restarts:
                run = (~book.agree).nonzero()[:, 0]  # random starts only when the consistent starts disagree
            else:
                run = torch.arange(R)
            if run.numel() == 0:
                break
            if U0.shape[0] == R:  # (an A_init start is one data set's)
                U0, V0 = U0.index_select(0, run), V0.index_select(0, run)
            res = self._run_start(U0, V0, run, book.best_loss[run], book.incumbent.take(run))
            book.record(run, res, consistent=k < n_consistent)
        return book.results()

    def _run_start(self, U0: torch.Tensor, V0: torch.Tensor, reps: torch.Tensor, best: torch.Tensor,
                   incumbent: _Incumbent) -> _StartResult:
        """One start of the data sets ``reps``: Gauss-Newton (batched) or L-BFGS (one data set)."""
        if self._cfg.optimizer == "gauss-newton":
            return self._run_gn(U0, V0, reps, best, incumbent)
        loss, U, V, c, lo, hi, n_iter = self._run_lbfgs(U0[0].cpu().numpy(), V0[0].cpu().numpy())
        loss, lo, hi = (torch.tensor([v], dtype=torch.float64) for v in (loss, lo, hi))
        state = _GNState(U=U[None], V=V[None], loss=loss, c=c[None].detach(), lo=lo, hi=hi)
        converged = torch.tensor([n_iter < self._cfg.max_iter])
        return _StartResult(state=state, n_iter=torch.tensor([n_iter]), converged=converged,
                            joined=torch.zeros(1, dtype=torch.bool))

    def _apply(self, result: _FitResult, fit_time: float) -> "PairwiseInteractionEstimator":
        """Set the fitted attributes from ``result``; returns ``self``."""
        self.objective_ = result.objective
        self.U_ = result.U.cpu().numpy()
        self.V_ = result.V.cpu().numpy()
        self.A_ = self.U_ @ self.V_.T
        self.coef_ = result.c.detach().cpu().numpy().reshape(self._cfg.n_intervals, self._cfg.degree + 1)
        self.range_ = (result.lo, result.hi)
        self.n_iter_ = result.n_iter
        self.d_ = self.U_.shape[0]
        self.restart_objectives_ = list(result.restart_objectives)
        self.n_starts_ = len(self.restart_objectives_)
        self.converged_ = result.converged
        self.fit_time_ = fit_time
        return self

    def phi(self, u: Any) -> np.ndarray:
        """The fitted activation ``phi_hat(u)`` (NumPy, any shape)."""
        self._check_fitted()
        u = as_array("u", u, allow_empty=True)
        lo, hi = self.range_
        clamp = self._cfg.extrapolation == "constant"
        return pw.evaluate(u, self.coef_, lo, hi, clamp=clamp)

    def interaction(self, x: Any, y: Any) -> np.ndarray:
        """``g_hat(x, y) = phi_hat(x^T A_ y)`` for arrays of shape ``(..., d)``."""
        self._check_fitted()
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if x.shape[-1] != self.d_ or y.shape[-1] != self.d_:
            raise ValueError(f"x and y must have last dimension d={self.d_}, got {x.shape}, {y.shape}")
        return self.phi(np.einsum("...k,...k->...", x @ self.A_, y))

    def predict(self, X: Any) -> np.ndarray:
        """``R_{g_hat}[X]_i = 1/(N-1) sum_{j != i} g_hat(X_i, X_j)``, shape ``(M, N)``."""
        self._check_fitted()
        X = as_array("X", X)
        if X.ndim != 3 or X.shape[2] != self.d_ or X.shape[1] < 2:
            raise ValueError(f"X must have shape (M, N>=2, d={self.d_}), got {X.shape}")
        N = X.shape[1]
        u = np.einsum("mik,mjk->mij", X @ self.A_, X)
        G = self.phi(u)
        G[:, np.arange(N), np.arange(N)] = 0.0
        return G.sum(axis=2) / (N - 1)
