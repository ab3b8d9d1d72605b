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
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from theory._validation import ArgumentTypeError, as_array, as_float, check_flag

from . import _piecewise as pw
from ._estimator_base import (DEPRECATED, ConvergenceWarning, InteractionEstimator, check_count, check_nonnegative,
                              check_positive, check_random_state_param, resolve_seed_alias, warn_seed_alias)
from ._estimator_base import _check_XY as _check_XY_base
from .ips import check_random_state
from .threads import check_device, check_n_jobs, torch_threads

__all__ = ["PairwiseInteractionEstimator", "ConvergenceWarning"]


def _check_XY(X: Any, Y: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(X, Y)`` checked for a fit: ``M >= 2`` samples (see :func:`numerics._estimator_base._check_XY`)."""
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
        L-BFGS iterations of the winning start.
    restart_objectives_ : list of float
        Final objective of every start that was run (consistent starts first).
    n_starts_ : int
        Number of starts actually run (``<= restarts``).
    converged_ : bool
        Whether the winning start met its tolerance (else a :class:`ConvergenceWarning` was issued).
    fit_time_ : float
        Wall-clock seconds of :meth:`fit`.

    Notes
    -----
    Memory: about ``8 (M N (2 d r + 2 p) + 12 M N (N-1) (s+2))`` bytes at the peak of a Gauss-Newton
    iteration (the Jacobian and the design are formed whole).

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
        """Tensors of the data and the pair indices."""
        M, N, d = X.shape
        dev = self._cfg.device
        self._X = torch.as_tensor(X, dtype=torch.float64, device=dev)
        self._Y = torch.as_tensor(Y, dtype=torch.float64, device=dev).reshape(-1)
        ii, jj = np.nonzero(~np.eye(N, dtype=bool))
        self._ii = torch.as_tensor(ii, device=dev)
        self._jj = torch.as_tensor(jj, device=dev)
        K = self._cfg.n_intervals
        m = torch.arange(M, device=dev)[:, None]
        self._row_base = ((m * N + self._ii[None, :]) * K)  # (M, N(N-1))
        self._bufs: dict = {}

    def _buffer(self, name: str, shape: tuple) -> torch.Tensor:
        """A work array reused across evaluations of one fit (contents undefined)."""
        buf = self._bufs.get(name)
        if buf is None or tuple(buf.shape) != tuple(shape):
            buf = torch.empty(shape, dtype=torch.float64, device=self._cfg.device)
            self._bufs[name] = buf
        return buf

    def _range(self, u: torch.Tensor):
        """``(lo, hi, flat index of lo, flat index of hi)`` of the pair values ``u``."""
        flat = u.reshape(-1)
        if self._cfg.range_quantile == 0.0:
            ilo, ihi = torch.argmin(flat), torch.argmax(flat)
        else:
            n = flat.numel()
            k_lo = max(1, int(math.floor(self._cfg.range_quantile * n)))
            # the k_lo-th smallest and the k_lo-th largest: two partial selections of k_lo << n values
            # (torch.topk) are ~5x cheaper than two full torch.kthvalue passes and give the same pairs
            fd = flat.detach()
            ilo = torch.topk(fd, k_lo, largest=False, sorted=True).indices[-1]
            ihi = torch.topk(fd, k_lo, largest=True, sorted=True).indices[-1]
        return flat[ilo], flat[ihi], ilo, ihi

    def _pairs(self, U: torch.Tensor, V: torch.Tensor):
        """``P = X U``, ``Q = X V`` and ``u_{m,(i,j)} = P_i . Q_j / ||U V^T||_F`` (``(M, N(N-1))``)."""
        X = self._X
        norm = torch.sqrt(torch.clamp(((U.T @ U) * (V.T @ V)).sum(), min=1e-300))
        P = X @ U  # (M, N, r)
        Q = X @ V
        u = (P[:, self._ii, :] * Q[:, self._jj, :]).sum(-1) / norm
        return P, Q, u

    def _design(self, U: torch.Tensor, V: torch.Tensor, full: bool = False):
        """Design matrix ``B(A)`` (``(M N, p)``) and the range (and intermediate values if ``full``)."""
        X = self._X
        M, N, _ = X.shape
        K, s = self._cfg.n_intervals, self._cfg.degree
        P, Q, u = self._pairs(U, V)
        lo, hi, ilo, ihi = self._range(u)
        hi = torch.maximum(hi, lo + 1e-12)
        clamp = self._cfg.extrapolation == "constant"  # the same extension as phi() (fit = prediction)
        idx, t = pw.locate(u, lo, hi, K, clamp=clamp)
        # basis values of every pair, already divided by N - 1 (the average over j != i)
        flat = (self._row_base + idx).reshape(-1)
        if t.requires_grad:
            B = torch.zeros(M * N * K, s + 1, dtype=X.dtype, device=X.device)
            vals = torch.stack(pw.legendre_values(t, s), dim=-1) / (N - 1)  # (M, N(N-1), s+1)
            B = B.index_add(0, flat, vals.reshape(-1, s + 1))
        else:
            # a reused buffer (no page faults on a fresh 8 M N K (s+1)-byte allocation per evaluation);
            # callers never hold B across two evaluations
            B = self._buffer("B", (M * N * K, s + 1)).zero_()
            vals = torch.empty(t.shape + (s + 1,), dtype=X.dtype, device=X.device)
            for l, v in enumerate(pw.legendre_values(t, s)):
                torch.mul(v, 1.0 / (N - 1), out=vals[..., l])
            # element-wise scatter on the flat buffer (~1.5x faster than a row-wise index_add_; same sums
            # in the same order)
            elem = (flat * (s + 1)).unsqueeze(-1) + torch.arange(s + 1, device=X.device)
            B.view(-1).scatter_add_(0, elem.reshape(-1), vals.reshape(-1))
        B = B.reshape(M * N, K * (s + 1))
        if full:
            return B, lo, hi, dict(P=P, Q=Q, u=u, idx=idx, t=t, ilo=ilo, ihi=ihi, clamp=clamp)
        return B, lo, hi

    def _solve(self, B: torch.Tensor, full: bool = False):
        Y = self._Y
        G = B.T @ B
        b = B.T @ Y
        p = G.shape[0]
        lam = self._cfg.ridge * torch.clamp(torch.diagonal(G).mean(), min=1e-300)
        if self._cfg.ridge == 0.0:
            lam = lam * 0.0
        Greg = G + lam * torch.eye(p, dtype=G.dtype, device=G.device)
        L, info = torch.linalg.cholesky_ex(Greg)
        if int(info) != 0:
            c = torch.linalg.lstsq(Greg, b[:, None]).solution[:, 0]
        else:
            c = torch.cholesky_solve(b[:, None], L)[:, 0]
        resid = Y - B @ c
        loss = (resid @ resid + lam * (c @ c)) / Y.numel()
        if full:
            # B^T resid = b - G c (= lam c up to rounding): p^2 flops instead of a pass over B
            return loss, c, dict(G=G, Greg=Greg, L=L if int(info) == 0 else None, resid=resid,
                                 Bt_resid=b - G @ c)
        return loss, c

    def _objective(self, U: torch.Tensor, V: torch.Tensor):
        B, lo, hi = self._design(U, V)
        loss, c = self._solve(B)
        return loss, c, lo, hi

    def _moment_starts(self, X: np.ndarray, Y: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Two consistent starts from moments (a linearisation and a second-order expansion of phi).

        First order: ``C1 = mean (Y_i - mean Y) X_i S_i^T`` (``S_i`` the mean of the other tokens) is
        ``~ phi'(0) Sigma A Sigma / (N-1)`` for independent centred tokens, so ``Sigma^{-1} C1 Sigma^{-1}``
        truncated to rank ``r`` estimates ``A`` up to scale. Second order (useful when ``phi'`` averages
        to ~0, e.g. even ``phi``): ``Cov(Y_i, X_i X_i^T) ~ Sigma A Sigma A^T Sigma`` and
        ``Cov(Y_i, mean_{j!=i} X_j X_j^T) ~ Sigma A^T Sigma A Sigma`` (Gaussian-Stein heuristics), whose
        top-``r`` eigenvectors (after whitening) span the column and row spaces of ``A``; the start is
        ``U = E_u``, ``V = E_v`` with the signs/rotation left to the optimiser.
        """
        Xt, Yt = self._X, self._Y.reshape(X.shape[:2])
        M, N, d = Xt.shape
        r = self._cfg.rank
        Xf = Xt.reshape(-1, d)
        n = Xf.shape[0]
        Yc = Yt - Yt.mean()
        w = Yc.sum(dim=1)  # sum_i Yc_i, paired with every token j of the sample
        # three weighted second moments sum_{m,i} weight_{m,i} X_i X_i^T (weights 1, Yc_i and w_m); no
        # centred or averaged copies of the tokens (three d x d products; measured faster than one 3d x d)
        mean = Xf.mean(0)
        Sigma = (Xf.T @ Xf - n * torch.outer(mean, mean)) / (n - 1) + 1e-10 * torch.eye(d, dtype=Xt.dtype, device=Xt.device)
        Sinv = torch.linalg.inv(Sigma)
        C2 = (Xf * Yc.reshape(-1, 1)).T @ Xf / (M * N)
        # C1 = mean_{m,i} Yc_i X_i S_i^T with S_i = (sum_j X_j - X_i) / (N - 1):
        #    = (sum_m (sum_i Yc_i X_i) (sum_j X_j)^T - sum_{m,i} Yc_i X_i X_i^T) / ((N - 1) M N)
        Z = torch.einsum("mi,mik->mk", Yc, Xt)
        C1 = (Z.T @ Xt.sum(dim=1) / (M * N) - C2) / (N - 1)
        Uu, sv, Vt = torch.linalg.svd(Sinv @ C1 @ Sinv)
        rs = torch.sqrt(sv[:r] + 1e-300)
        first = ((Uu[:, :r] * rs).cpu().numpy(), (Vt[:r].T * rs).cpu().numpy())
        C3 = (Xt * w[:, None, None]).reshape(-1, d).T @ Xf / (M * N)
        C3 = (C3 - C2) / (N - 1)  # all j minus j = i -> mean over the other tokens
        ev_u = torch.linalg.eigh(Sinv @ (0.5 * (C2 + C2.T)) @ Sinv)
        ev_v = torch.linalg.eigh(Sinv @ (0.5 * (C3 + C3.T)) @ Sinv)
        order_u = torch.argsort(-ev_u[0].abs())[:r]
        order_v = torch.argsort(-ev_v[0].abs())[:r]
        second = (ev_u[1][:, order_u].cpu().numpy(), ev_v[1][:, order_v].cpu().numpy())
        return [first, second]

    def _balance(self, U: torch.Tensor, V: torch.Tensor):
        """Balanced factors of ``U V^T / ||U V^T||_F`` (top-``r`` SVD)."""
        # U V^T = Qu (Ru Rv^T) Qv^T: an r x r SVD instead of a d x d one
        Qu, Ru = torch.linalg.qr(U)
        Qv, Rv = torch.linalg.qr(V)
        a, sv, bt = torch.linalg.svd(Ru @ Rv.T)
        sv = sv / torch.clamp(torch.linalg.norm(sv), min=1e-300)
        return (Qu @ a) * torch.sqrt(sv), (Qv @ bt.T) * torch.sqrt(sv)

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

    def _gn_state(self, U: torch.Tensor, V: torch.Tensor, jacobian: bool):
        """Objective, coefficients and (optionally) the Gauss-Newton matrix and gradient at ``(U, V)``.

        ``(U, V)`` must be balanced with ``||U V^T||_F = 1``. ``J`` is the exact Jacobian of the fitted
        values ``B(A) c`` (``c`` held fixed; the partition moves with the observed range, whose end
        points are the values of two particular pairs) w.r.t. ``vec(U), vec(V)``, projected on the
        orthogonal complement of the columns of ``B`` (Kaufman's variable projection). Returns
        ``H = Jp^T Jp`` and ``grad = Jp^T resid`` without forming ``Jp``; ``-2 grad / (M N)`` is the
        gradient of the reduced objective (up to the derivative of the tiny relative ridge).
        """
        X = self._X
        M, N, d = X.shape
        K, s = self._cfg.n_intervals, self._cfg.degree
        with torch.no_grad():
            if not jacobian:
                B, lo, hi = self._design(U, V)
                loss, c = self._solve(B)
                return loss, c, lo, hi, None, None
            B, lo, hi, aux = self._design(U, V, full=True)
            loss, c, sol = self._solve(B, full=True)
            P, Q, u, idx, t = aux["P"], aux["Q"], aux["u"], aux["idx"], aux["t"]
            C = c.reshape(K, s + 1)
            dphi = 0.0
            for l, v in enumerate(pw.legendre_derivatives(t, s)):
                dphi = dphi + C[idx, l] * v
            # phi_hat'(u) on each pair, with the 1/(N-1) of the row average folded in (J is linear in it)
            dphi = dphi * (2.0 * K / ((hi - lo) * (N - 1)))
            if aux["clamp"]:
                dphi = torch.where((u < lo) | (u > hi), torch.zeros_like(dphi), dphi)
            # the range: lo = u of one pair, hi = u of another; t depends on (u - lo) / (hi - lo)
            a = (u - lo) / (hi - lo)
            # the pairs are ordered by i (N - 1 consecutive j's each): a row sum is a reshape-sum
            da = dphi * a
            rows_hi = da.reshape(M, N, N - 1).sum(-1)
            rows_lo = (dphi - da).reshape(M, N, N - 1).sum(-1)
            D = self._buffer("D", (M, N, N)).zero_()
            D[:, self._ii, self._jj] = dphi
            r = P.shape[-1]
            QX = self._buffer("QX", (M, N, r + d))
            QX[:, :, :r] = Q
            QX[:, :, r:] = X
            DQX = torch.bmm(D, QX)  # one batched product for D Q (M, N, r) and D X (M, N, d)
            DQ, DX = DQX[:, :, :r], DQX[:, :, r:]
            J = self._buffer("J", (M, N, 2, d, r))
            torch.mul(X[:, :, :, None], DQ[:, :, None, :], out=J[:, :, 0])  # d u / d U
            torch.mul(DX[:, :, :, None], P[:, :, None, :], out=J[:, :, 1])  # d u / d V
            J = J.reshape(M * N, 2 * d * r)

            def du(flat_index):
                m = flat_index // self._ii.numel()
                k = flat_index % self._ii.numel()
                i, j = self._ii[k], self._jj[k]
                return torch.cat([torch.outer(X[m, i], Q[m, j]).reshape(-1),
                                  torch.outer(X[m, j], P[m, i]).reshape(-1)])

            # both rank-one range terms in one pass over J: J -= [rows_lo rows_hi] [du_lo; du_hi]
            J.addmm_(torch.stack([rows_lo.reshape(-1), rows_hi.reshape(-1)], dim=1),
                     torch.stack([du(aux["ilo"]), du(aux["ihi"])]), alpha=-1.0)
            G, Greg, resid = sol["G"], sol["Greg"], sol["resid"]  # reused from the inner solve
            # Kaufman: Jp = (I - B Greg^{-1} B^T) J, never formed:
            # Jp^T Jp = J^T J - 2 W^T Greg^{-1} W + W^T Greg^{-1} G Greg^{-1} W  (W = B^T J),
            # Jp^T resid = J^T resid - W^T Greg^{-1} B^T resid.
            W = B.T @ J
            Z = torch.cholesky_solve(W, sol["L"]) if sol["L"] is not None else torch.linalg.solve(Greg, W)
            H = J.T @ J - 2.0 * (W.T @ Z) + Z.T @ (G @ Z)
            grad = J.T @ resid - Z.T @ sol["Bt_resid"]
            return loss, c, lo, hi, H, grad

    @staticmethod
    def _alignment(U: torch.Tensor, V: torch.Tensor, Ub: torch.Tensor, Vb: torch.Tensor) -> float:
        """``|<U V^T, Ub Vb^T>_F|`` for unit-norm factorisations (1: the same ``A`` up to sign)."""
        return abs(float(torch.trace((V.T @ Vb) @ (Ub.T @ U))))

    def _run_gn(self, U0: np.ndarray, V0: np.ndarray, best: float = math.inf, incumbent=None):
        """Levenberg-Marquardt on the variable-projection residual (Kaufman's Jacobian).

        ``best`` is the incumbent objective (a start still above ``1.1 best`` after ``patience`` iterations
        is dropped) and ``incumbent`` its balanced ``(U, V)``: a start whose ``A`` comes within
        ``1 - |<A, A_best>| < join_tol`` of it, with an objective not below ``best``, has joined the
        incumbent's basin and is stopped (``self._last_joined``).
        """
        dev = self._cfg.device
        U = torch.as_tensor(U0, dtype=torch.float64, device=dev)
        V = torch.as_tensor(V0, dtype=torch.float64, device=dev)
        U, V = self._balance(U, V)
        d, r = U.shape
        loss, c, lo, hi, J, res = self._gn_state(U, V, jacobian=True)
        mu = 1e-3
        n_iter = 0
        # the model-predicted relative decrease below which a step is not worth an evaluation: tol, or
        # stat_tol x the objective's statistical resolution in A, q / (M N) with q = r (2 d - r) (see stat_tol)
        pred_tol = max(self._cfg.tol, self._cfg.stat_tol * r * (2 * d - r) / self._Y.numel())
        converged = False
        self._last_joined = False
        while n_iter < self._cfg.max_iter:
            n_iter += 1
            H, g = J, res
            H = 0.5 * (H + H.T)
            Hd = torch.clamp(torch.diagonal(H), min=torch.diagonal(H).max() * 1e-12)
            accepted = False
            for attempt in range(3):
                try:
                    step = torch.linalg.solve(H + mu * torch.diag(Hd), g)
                except RuntimeError:
                    mu *= 10.0
                    continue
                pred = float((2.0 * (g @ step) - step @ (H @ step)) / self._Y.numel())
                # the statistical rule judges the least-damped step of the iteration only: after a rejected
                # trial the damping grows 10x and the predicted decrease shrinks with it, which says nothing
                # about the decrease still available (later attempts keep the plain `tol` rule)
                if pred <= (pred_tol if attempt == 0 else self._cfg.tol) * float(loss):
                    break  # the Gauss-Newton model predicts no useful decrease
                U1 = U + step[: d * r].reshape(d, r)
                V1 = V + step[d * r:].reshape(d, r)
                U1, V1 = self._balance(U1, V1)
                joining = incumbent is not None and 1.0 - self._alignment(U1, V1, *incumbent) < self._cfg.join_tol
                # the full state (with Jacobian) at the trial point: most steps are accepted, and then it
                # is the next iteration's state (one evaluation per iteration instead of two); a point that
                # joins the incumbent's basin is first evaluated without it (it ends the start if no better)
                state1 = self._gn_state(U1, V1, jacobian=not joining)
                loss1 = state1[0]
                if torch.isfinite(loss1) and loss1 <= loss:
                    if joining and float(loss1) < best:
                        state1 = self._gn_state(U1, V1, jacobian=True)  # better than the incumbent: go on
                    accepted = True
                    break
                mu *= 10.0
            if not accepted:
                converged = True  # no descent direction at any damping: a (local) minimum
                break
            rel = float((loss - loss1) / torch.clamp(loss, min=1e-300))
            U, V = U1, V1
            loss, c, lo, hi, J, res = state1
            mu = max(mu / 3.0, 1e-9)
            if rel < self._cfg.tol:
                converged = True
                break
            if joining and float(loss) >= best:
                converged = True  # joined the incumbent's basin: it would converge to the same minimum
                self._last_joined = True
                break
            if n_iter >= self._cfg.patience and float(loss) > 1.1 * best:
                converged = True  # abandoned on purpose (not a convergence failure)
                break  # a start that is far behind the best one after `patience` steps is dropped
        self._last_converged = converged
        return float(loss), U, V, c, float(lo), float(hi), n_iter

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
            return self._fit(X, Y, A, A_init)

    def _factor(self, A: Any, d: int, name: str) -> tuple[np.ndarray, np.ndarray]:
        A = np.asarray(A, dtype=np.float64)
        if A.shape != (d, d) or not np.all(np.isfinite(A)) or not np.any(A != 0):
            raise ValueError(f"{name} must be a finite nonzero ({d}, {d}) matrix, got shape {A.shape}")
        Uu, sv, Vt = np.linalg.svd(A)
        r = self._cfg.rank
        return Uu[:, :r] * np.sqrt(sv[:r]), Vt[:r].T * np.sqrt(sv[:r])

    def _fit(self, X: Any, Y: Any, A: Any = None, A_init: Any = None) -> "PairwiseInteractionEstimator":
        t0 = time.perf_counter()
        X, Y = _check_XY(X, Y)
        M, N, d = X.shape
        if self._cfg.rank > d:
            raise ValueError(f"rank must be an integer in [1, d={d}], got {self._cfg.rank}")
        self._setup(X, Y)
        if d == 1 or A is not None:
            # d == 1: A = +-1 after normalisation and both signs give the same class: no optimisation
            if A is None:
                U = V = torch.ones(1, 1, dtype=torch.float64, device=self._cfg.device)
            else:
                U0, V0 = self._factor(A, d, "A")
                U, V = self._balance(torch.as_tensor(U0, device=self._cfg.device), torch.as_tensor(V0, device=self._cfg.device))
            loss, c, lo, hi, _, _ = self._gn_state(U, V, jacobian=False)
            self.restart_objectives_ = [float(loss)]
            self.n_starts_ = 1
            self.converged_ = True
            return self._finish((float(loss), U, V, c, float(lo), float(hi), 0), d, t0)
        gen = check_random_state(self._cfg.random_state)
        starts = [] if A_init is None else [self._factor(A_init, d, "A_init")]
        starts = (starts + self._moment_starts(X, Y))[: self._cfg.restarts]
        n_consistent = len(starts)  # A_init and the moment starts (consistent estimates of A)
        while len(starts) < self._cfg.restarts:
            starts.append((gen.standard_normal((d, self._cfg.rank)), gen.standard_normal((d, self._cfg.rank))))
        best = None
        self.restart_objectives_ = []
        agree = False  # two consistent starts reached the same minimum
        for k, (U0, V0) in enumerate(starts):
            if k >= n_consistent and agree and self._cfg.adaptive_restarts:
                break  # random starts only when the consistent starts disagree
            if self._cfg.optimizer == "gauss-newton":
                inc = None if best is None or not self._cfg.adaptive_restarts else (best[1], best[2])
                res = self._run_gn(U0, V0, best=math.inf if best is None else best[0], incumbent=inc)
                conv, joined = self._last_converged, self._last_joined
            else:
                res = self._run_lbfgs(U0, V0)
                conv, joined = res[-1] < self._cfg.max_iter, False
            self.restart_objectives_.append(res[0])
            if not np.isfinite(res[0]):
                continue
            if best is not None and k < n_consistent:
                same = joined or (abs(res[0] - best[0]) <= 1e-3 * best[0]
                                  and 1.0 - self._alignment(res[1], res[2], best[1], best[2]) < self._cfg.join_tol)
                agree = agree or same
            if best is None or res[0] < best[0]:
                best, self.converged_ = res, conv
        self.n_starts_ = len(self.restart_objectives_)
        if best is None:
            raise RuntimeError("PairwiseInteractionEstimator.fit: every start gave a non-finite objective")
        if not self.converged_:
            warnings.warn(f"PairwiseInteractionEstimator: the best start stopped at max_iter={self._cfg.max_iter} "
                          "before the relative objective change fell below tol", ConvergenceWarning, stacklevel=3)
        return self._finish(best, d, t0)

    def _finish(self, best, d: int, t0: float) -> "PairwiseInteractionEstimator":
        loss, U, V, c, lo, hi, n_iter = best
        self.objective_ = loss
        self.U_ = U.cpu().numpy()
        self.V_ = V.cpu().numpy()
        self.A_ = self.U_ @ self.V_.T
        self.coef_ = c.detach().cpu().numpy().reshape(self._cfg.n_intervals, self._cfg.degree + 1)
        self.range_ = (lo, hi)
        self.n_iter_ = n_iter
        self.d_ = d
        del self._X, self._Y, self._row_base, self._bufs
        self.fit_time_ = time.perf_counter() - t0
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
