"""Paper A's estimator: ERM over ``g(x, y) = phi(x^T A y)``, ``phi`` piecewise polynomial, ``rank A <= r``.

Variable projection: for a fixed ``A`` the model is linear in the coefficients of ``phi`` (orthonormal Legendre
polynomials on ``K`` equal intervals of a robust range of the pair values ``u_{m,i,j} = X_i^T A X_j``, by default
their ``[1e-3, 1 - 1e-3]`` quantiles), so the design matrix is

    B(A)[(m, i), q] = 1/(N-1) sum_{j != i} b_q(u_{m,i,j}),

the coefficients solve a tiny-ridge least-squares problem in closed form, and the reduced objective

    F(U, V) = (||Y - B(A) c(A)||^2 + lam ||c(A)||^2) / (M N),    A = U V^T / ||U V^T||_F,

is minimised by Levenberg-Marquardt on the variable-projection residual (Kaufman's Jacobian; default) or by L-BFGS
(autograd through the solve).  Products with ``B`` use its nonzeros above a size rule
(:func:`numerics._pair_design.pair_design_pays`), dense products below; :meth:`PairwiseInteractionEstimator.fit_many`
fits ``R`` data sets in one batched Gauss-Newton loop.  Starts: ``A_init``, the first- and second-order moment
estimates, then random starts only when the consistent ones disagree (``adaptive_restarts``).

The derivations (moment starts, the range rule, the adaptive starts, the expected error decomposition
``bias(K) + sigma^2 [(N-1)/N kappa p + c_A q] / M``) and their measurements: ``docs/paper_a_estimator.md``.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from theory.validation import (ArgumentTypeError, as_array, as_float, as_int, check_choice, check_flag,
                               check_random_state)

from . import _piecewise as pw
from ._estimator_base import ConvergenceWarning, InteractionEstimator
from ._estimator_base import check_XY as _check_XY_base
from .ips import MAX_COUNT
from .threads import check_device, check_n_jobs, torch_threads
from ._gauss_newton import GaussNewtonFits
from ._pair_design import PAIRS_PER_GROUP, DenseDesign, PairBasis, PairDesign, pair_design_pays
from ._fit_state import FitResult

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


def _check_XY_many(X: Any, Y: Any) -> tuple[np.ndarray, np.ndarray]:
    """``X`` ``(R, M, N, d)`` and ``Y`` ``(R, M, N)`` of :meth:`PairwiseInteractionEstimator.fit_many`, checked."""
    if Y is None:
        raise ArgumentTypeError("Y must be an array of finite real numbers of shape (R, M, N), got None")
    X, Y = as_array("X", X, allow_empty=True), as_array("Y", Y, allow_empty=True)
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
    A = as_array("A", A, allow_empty=True)
    if A.ndim == 2:
        return [A] * R
    if A.ndim == 3 and A.shape[0] == R:
        return list(A)
    raise ValueError(f"A must be one (d, d) matrix or one per data set, (R = {R}, d, d), got shape {A.shape}")


class PairwiseInteractionEstimator(GaussNewtonFits, InteractionEstimator):
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
        Maximum number of starts (``A_init``, the two moment starts, then random ones), ``>= 1``.
    max_iter : int
        Iterations per start (either optimiser).
    ridge : float
        Relative ridge: ``lam = ridge * trace(B^T B) / p`` (``>= 0``; keeps empty intervals defined).
    extrapolation : {"constant", "polynomial"}
        Extension of ``phi_hat`` outside the observed range.
    range_quantile : float
        ``q in (0, 0.1]`` (default ``1e-3``): the partition spans the ``[q, 1-q]`` quantiles of the observed ``u``
        (constant or polynomial extension beyond, per ``extrapolation``, in the fit and in prediction). ``0``: it
        spans ``[min u, max u]`` (the paper; fragile for heavy-tailed ``u``).
    device : str
        Torch device of the optimisation (``"cpu"`` or ``"cuda"``; a ``torch.device`` in :meth:`fit`).
    random_state : None, int or numpy.random.Generator
        Randomness of the random restarts: an integer seed (default ``0``: reproducible fits), a generator
        (consumed by each fit) or ``None`` (fresh entropy from the operating system).
    tol : float
        Relative tolerance. Gauss-Newton stops when an accepted step lowers the objective by less than ``tol``
        (relative) or when its model predicts less (see also ``stat_tol``); L-BFGS uses it as ``tolerance_change``
        and ``tol / 100`` as ``tolerance_grad``. The excess risk left is at most ``~ (N-1) tol objective_``.
    optimizer : {"gauss-newton", "lbfgs"}
        Levenberg-Marquardt on the variable-projection residual (Kaufman's projected Jacobian in closed form;
        default) or ``torch.optim.LBFGS`` with strong Wolfe line search and autograd through the linear solve.
    num_threads : int or None
        Torch intra-op threads during :meth:`fit` (restored afterwards); ``None`` leaves them alone. One thread is
        much faster on a shared/contended CPU and is right for process-parallel sweeps.
    patience : int
        A start whose objective is above 1.1 x the best one after ``patience`` iterations is dropped.
    adaptive_restarts : bool
        If True (default) a start that joins the incumbent's basin is stopped, and random starts run only when the
        consistent (``A_init``/moment) starts disagree. False: every start runs to the end (or to ``patience``).
    join_tol : float
        ``1 - |<A, A_best>_F|`` below which two unit-norm iterates count as the same basin (``(0, 1)``).
    stat_tol : float
        Gauss-Newton also stops when its model predicts a relative decrease below ``stat_tol * q / (M N)``,
        ``q = r (2 d - r)`` (``>= 0``; ``0``: ``tol`` alone). Why (a heuristic, not a bound): ``sigma^2 q / (M N)`` is
        the objective's statistical resolution in ``A``, so stopping leaves an excess ``L2`` error of
        ``~ stat_tol sigma^2 q / M``, 1-2 % of the statistical error ``~ c_A sigma^2 q / M`` (``c_A ~ 0.5-0.8``). Only
        the least-damped step of each iteration is judged by it.

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
        Wall-clock seconds of :meth:`fit` (of :meth:`fit_many`: the call's divided by the number of data sets).

    Notes
    -----
    Memory: about ``8 (M N (2 d r + 2 p) + 12 M N (N-1) (s+2))`` bytes at the peak of a Gauss-Newton iteration (the
    Jacobian is formed whole, and the design too below the size rule); :meth:`fit_many` holds the data of all ``R``
    data sets and evaluates them in groups of ``~2^17 / (M N (N-1))``.

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

    #: how the Gauss-Newton path multiplies by ``B``: "auto" (the size rule of :func:`pair_design_pays`), "dense"
    #: or "pairs" (private: the tests and the benchmark compare the two on the same fits)
    _design_mode = "auto"

    def __init__(self, rank: int = 1, degree: int = 1, n_intervals: int = 4, restarts: int = 3,
                 max_iter: int = 200, ridge: float = 1e-10, extrapolation: str = "constant",
                 range_quantile: float = 1e-3, device: str = "cpu", random_state: Any = 0,
                 tol: float = 1e-6, optimizer: str = "gauss-newton",
                 num_threads: int | None = 1, patience: int = 5, adaptive_restarts: bool = True,
                 join_tol: float = 1e-4, stat_tol: float = 0.01) -> None:
        # scikit-learn's rule: every parameter stored as given (clone, get_params); checked here for an early
        # error and again by fit (after set_params), where the conversions happen (_checked_params)
        self.rank, self.degree, self.n_intervals, self.restarts = rank, degree, n_intervals, restarts
        self.max_iter, self.ridge, self.extrapolation = max_iter, ridge, extrapolation
        self.range_quantile, self.device, self.random_state, self.tol = range_quantile, device, random_state, tol
        self.optimizer, self.num_threads, self.patience = optimizer, num_threads, patience
        self.adaptive_restarts, self.join_tol, self.stat_tol = adaptive_restarts, join_tol, stat_tol
        self._cfg = self._checked_params()  # refreshed by every fit

    def _checked_params(self) -> _Config:
        """The parameters checked and converted (``int``, ``float``, ``torch.device``) for a fit."""
        counts = dict(rank=1, degree=0, n_intervals=1, restarts=1, max_iter=1, patience=1)
        for name, low in counts.items():
            as_int(name, getattr(self, name), low, MAX_COUNT)
        as_float("ridge", self.ridge, low=0)
        check_choice("extrapolation", self.extrapolation, ("constant", "polynomial"))
        as_float("range_quantile", self.range_quantile, low=0, high=0.1)
        as_float("tol", self.tol, low=0, low_open=True)
        check_choice("optimizer", self.optimizer, ("gauss-newton", "lbfgs"))
        if self.num_threads is not None:
            check_n_jobs("num_threads", self.num_threads)
        as_float("join_tol", self.join_tol, low=0, high=1, low_open=True, high_open=True)
        as_float("stat_tol", self.stat_tol, low=0)
        check_flag("adaptive_restarts", self.adaptive_restarts)
        check_device("device", self.device)
        random_state = self.random_state  # None (fresh entropy), a seed or a generator (consumed by the fits)
        check_random_state("random_state", random_state)
        if not (isinstance(random_state, np.random.Generator) or random_state is None):
            random_state = int(random_state)
        return _Config(**{name: int(getattr(self, name)) for name in counts}, ridge=float(self.ridge),
                       extrapolation=self.extrapolation, range_quantile=float(self.range_quantile),
                       device=torch.device(self.device), random_state=random_state, tol=float(self.tol),
                       optimizer=self.optimizer, adaptive_restarts=bool(self.adaptive_restarts),
                       num_threads=None if self.num_threads is None else int(self.num_threads),
                       join_tol=float(self.join_tol), stat_tol=float(self.stat_tol))

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
        self._group = max(1, PAIRS_PER_GROUP // (M * N * (N - 1)))  # replicates evaluated together

    def _buffer(self, name: str, shape: tuple) -> torch.Tensor:
        """A work array reused across the evaluations of one fit (contents undefined; the largest shape's storage)."""
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

    def _pair_basis(self, U: torch.Tensor, V: torch.Tensor, X: torch.Tensor) -> PairBasis:
        """The pair values, the range and the basis values of every pair (see :class:`PairBasis`)."""
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
        return PairBasis(P=P, Q=Q, u=u, a=a, idx=idx, t=t, vals=vals, lo=lo, hi=hi, ilo=ilo, ihi=ihi, clamp=clamp)

    def _use_pair_design(self, n_rows: int) -> bool:
        """Whether the products with ``B`` use its nonzeros (:class:`PairDesign`) or a dense ``B``."""
        if self._design_mode != "auto":
            return self._design_mode == "pairs"
        N, p = self._X.shape[2], self.n_basis
        return pair_design_pays(n_rows, N, p, int(self._cfg.degree) + 1)

    def _pair_design(self, basis: PairBasis) -> PairDesign:
        """The design of the pairs ``basis`` from its nonzeros."""
        R, M, _ = basis.idx.shape
        N = self._X.shape[2]
        return PairDesign(basis.idx.reshape(R, M * N, N - 1), basis.vals.reshape(-1, R, M * N, N - 1),
                           self._cfg.n_intervals, self._buffer)

    def _design_of(self, basis: PairBasis):
        """The design of the pairs ``basis`` for the Gauss-Newton path: from its nonzeros or dense (by size)."""
        pairs = self._pair_design(basis)
        R, n_rows, _ = pairs.idx.shape
        if self._use_pair_design(R * n_rows):
            return pairs
        # a reused buffer (no page faults on a fresh 8 R M N p-byte array per evaluation; no caller keeps a design)
        return DenseDesign(pairs.dense(self._buffer("B", (R, n_rows, pairs.p))), pairs)

    def _design(self, U: torch.Tensor, V: torch.Tensor):
        """Dense ``B(A)`` ``(M N, p)`` and range of the first replicate at ``U, V`` ``(d, r)`` (L-BFGS: autograd)."""
        basis = self._pair_basis(U[None], V[None], self._X[:1])
        pairs = self._pair_design(basis)
        n_rows = pairs.idx.shape[1]
        B = pairs.dense(None if basis.vals.requires_grad else self._buffer("B", (1, n_rows, pairs.p)))
        return B[0], basis.lo[0], basis.hi[0]

    def _solve(self, B: Any, full: bool = False, Y: torch.Tensor | None = None):
        """Ridge least squares ``c = (B^T B + lam I)^{-1} B^T Y`` and the objective, for every replicate of ``B``, a
        design (:class:`DenseDesign`, :class:`PairDesign`) of ``R`` replicates or a dense ``(M N, p)`` tensor of one
        (then the results are that replicate's); ``Y`` defaults to the data's."""
        single = isinstance(B, torch.Tensor)
        design = DenseDesign(B[None] if B.dim() == 2 else B) if single else B
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
        one = single and B.dim() == 2  # the results of the one replicate
        out = (loss[0], c[0]) if one else (loss, c)
        if full:
            # B^T resid = b - G c (= lam c up to rounding): p^2 flops instead of a pass over B
            sol = dict(G=G, Greg=Greg, L=L, ok=ok, resid=resid, Bt_resid=b - torch.bmm(G, c[..., None])[..., 0])
            out += ({k: v[0] for k, v in sol.items()} if one else sol,)
        return out

    def _objective(self, U: torch.Tensor, V: torch.Tensor):
        B, lo, hi = self._design(U, V)
        loss, c = self._solve(B)
        return loss, c, lo, hi

    def _moment_starts_all(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Two consistent starts from moments (a linearisation and a second-order expansion of phi).

        First order: ``C1 = mean (Y_i - mean Y) X_i S_i^T`` (``S_i`` the mean of the other tokens) is
        ``~ phi'(0) Sigma A Sigma / (N-1)`` for independent centred tokens, so ``Sigma^{-1} C1 Sigma^{-1}`` truncated to
        rank ``r`` estimates ``A`` up to scale. Second order (useful when ``phi'`` averages to ~0, e.g. even ``phi``):
        ``Cov(Y_i, X_i X_i^T) ~ Sigma A Sigma A^T Sigma`` and
        ``Cov(Y_i, mean_{j!=i} X_j X_j^T) ~ Sigma A^T Sigma A Sigma`` (Gaussian-Stein heuristics), whose top-``r``
        eigenvectors (after whitening) span the column and row spaces of ``A``; the start is ``U = E_u``, ``V = E_v``
        with the signs/rotation left to the optimiser. For every data set: two ``(U, V)`` pairs ``(R, d, r)``.
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

    # ---------------------------------------------------------------- public
    def fit(self, X: Any, Y: Any, *, A: Any = None, A_init: Any = None) -> "PairwiseInteractionEstimator":
        """Fit on ``X`` of shape ``(M, N, d)`` and ``Y`` of shape ``(M, N)``; returns ``self``.

        Parameters
        ----------
        X, Y : arrays
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

    def fit_many(self, X: Any, Y: Any, *, A: Any = None) -> list["PairwiseInteractionEstimator"]:
        """Fit ``R`` independent data sets in one call; returns ``R`` fitted clones of this estimator.

        The Gauss-Newton iterations of all replicates run together (one batched evaluation of the objective, its
        Jacobian and the linear solves for every replicate still iterating; each keeps its own damping, acceptance,
        stopping, patience and basin-joining decisions, its own moment starts, and its random starts when its consistent
        starts disagree). Every clone holds what :meth:`fit` on its data set gives, up to rounding (the batched products
        sum in another order). With ``optimizer="lbfgs"`` the replicates are fitted one after the other.

        Parameters
        ----------
        X : array (R, M, N, d)
            ``R >= 1`` data sets of ``M >= 2`` samples each.
        Y : array (R, M, N)
        A : array (d, d) or (R, d, d), optional
            Fixed matrix (one for all or one per data set): fit ``phi`` only, as ``fit(..., A=...)``.

        Returns
        -------
        list of PairwiseInteractionEstimator
            ``R`` clones (the parameters of this one, ``random_state`` included: a generator is consumed by the data
            sets in order, as by ``R`` calls of :meth:`fit`) with the fitted attributes of :meth:`fit` (``fit_time_``:
            the call's time divided by ``R``). This estimator itself is left as it was.

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
        matrices = _replicate_matrices(A, R)
        clones = [type(self)(**self.get_params(deep=False)) for _ in range(R)]
        with torch_threads(self._cfg.num_threads):
            if self._cfg.optimizer == "lbfgs":  # one fit after the other (torch.optim state is per parameter set)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    for i, est in enumerate(clones):
                        est.fit(X[i], Y[i], A=None if matrices is None else matrices[i])
            else:
                results = self._fit_batch(X, Y, matrices, None, [self._cfg.random_state] * R)
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

    def _factor(self, A: Any, d: int, name: str) -> tuple[np.ndarray, np.ndarray]:
        A = np.asarray(A, dtype=np.float64)
        if A.shape != (d, d) or not np.all(np.isfinite(A)) or not np.any(A != 0):
            raise ValueError(f"{name} must be a finite nonzero ({d}, {d}) matrix, got shape {A.shape}")
        Uu, sv, Vt = np.linalg.svd(A)
        r = self._cfg.rank
        return Uu[:, :r] * np.sqrt(sv[:r]), Vt[:r].T * np.sqrt(sv[:r])

    def _fit_batch(self, X: np.ndarray, Y: np.ndarray, A: list | None, A_init: Any,
                   random_states: list) -> list[FitResult]:
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

    def _fixed_fits(self, A: list | None, d: int) -> list[FitResult]:
        """``phi`` only, at ``A`` (one matrix per data set) or, for ``d = 1``, at ``A = 1`` (``A = +-1`` after
        normalisation, both signs the same class: nothing to optimise)."""
        R, dev = self._X.shape[0], self._cfg.device
        if A is None:
            U = V = torch.ones(R, 1, 1, dtype=torch.float64, device=dev)
        else:
            factors = [self._factor(a, d, "A") for a in A]
            U, V = self._balance(torch.as_tensor(np.stack([f[0] for f in factors]), device=dev),
                                 torch.as_tensor(np.stack([f[1] for f in factors]), device=dev))
        loss, c, lo, hi, _, _ = self._gn_state(U, V, jacobian=False)
        return [FitResult(objective=float(loss[i]), U=U[i], V=V[i], c=c[i], lo=float(lo[i]), hi=float(hi[i]),
                           n_iter=0, restart_objectives=[float(loss[i])], converged=True) for i in range(R)]

    def _starts(self, A_init: Any, random_states: list, d: int) -> tuple[list, int]:
        """The starts ``[(U0, V0)]`` (``(R, d, r)`` each) and the number of consistent ones (``A_init``, the moment
        starts) before the random ones (from each data set's random state in turn, ``U`` then ``V``, as :meth:`fit`)."""
        r, dev = self._cfg.rank, self._cfg.device
        consistent = []
        if A_init is not None:
            consistent.append(tuple(torch.as_tensor(f, device=dev)[None] for f in self._factor(A_init, d, "A_init")))
        consistent = (consistent + self._moment_starts_all())[: self._cfg.restarts]
        n_random = self._cfg.restarts - len(consistent)
        draws = []
        for random_state in random_states:
            gen = np.random.default_rng(random_state)  # a generator as is
            draws.append([(gen.standard_normal((d, r)), gen.standard_normal((d, r))) for _ in range(n_random)])
        randoms = [tuple(torch.as_tensor(np.stack([dr[k][i] for dr in draws]), device=dev) for i in (0, 1))
                   for k in range(n_random)]
        return consistent + randoms, len(consistent)

    def _apply(self, result: FitResult, fit_time: float) -> "PairwiseInteractionEstimator":
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
