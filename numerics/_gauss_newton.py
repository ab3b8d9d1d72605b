"""The optimiser of paper A's estimator: Gauss-Newton / Levenberg-Marquardt on the factors of ``A`` with the linear
part (the coefficients of ``phi``) solved in closed form at every step (variable projection, Kaufman's Jacobian),
batched over replicates and starts, and L-BFGS for the cases it cannot take.

Private: :class:`numerics.estimator.PairwiseInteractionEstimator` inherits :class:`GaussNewtonFits`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from . import _piecewise as pw
from ._fit_state import (FitResult, GNState, Incumbent, StartBook, StartResult, alignment, assign_rows, pick_rows,
                         row_index)
from ._pair_design import PairBasis, PairDesign


class GaussNewtonFits:
    """The fitting steps of :class:`numerics.estimator.PairwiseInteractionEstimator` (a mixin: the estimator's design
    matrices (``_design``, ``_solve``, ``_pair_basis``), data and settings are its attributes)."""

    def _balance(self, U: torch.Tensor, V: torch.Tensor):
        """Balanced factors of ``U V^T / ||U V^T||_F`` (top-``r`` SVD), for ``(d, r)`` or ``(R, d, r)`` factors."""
        # U V^T = Qu (Ru Rv^T) Qv^T: an r x r SVD instead of a d x d one
        Qu, Ru = torch.linalg.qr(U)
        Qv, Rv = torch.linalg.qr(V)
        a, sv, bt = torch.linalg.svd(Ru @ Rv.mT)
        sv = sv / torch.clamp(torch.linalg.norm(sv, dim=-1, keepdim=True), min=1e-300)
        root = torch.sqrt(sv).unsqueeze(-2)
        return (Qu @ a) * root, (Qv @ bt.mT) * root

    def _run_lbfgs(self, U0: np.ndarray, V0: np.ndarray) -> StartResult:
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
        loss, lo, hi = (torch.tensor([float(v)], dtype=torch.float64) for v in (loss, lo, hi))
        state = GNState(U=U1[None], V=V1[None], loss=loss, c=c[None].detach(), lo=lo, hi=hi)
        return StartResult(state=state, n_iter=torch.tensor([n_iter]),
                           converged=torch.tensor([n_iter < self._cfg.max_iter]),
                           joined=torch.zeros(1, dtype=torch.bool))

    def _jacobian(self, basis: PairBasis, c: torch.Tensor, X: torch.Tensor, pairs: PairDesign) -> torch.Tensor:
        """Jacobian ``(R, M N, 2 d r)`` of the fitted values ``B(A) c`` (``c`` fixed) w.r.t. ``vec(U), vec(V)``, with
        the two rank-one terms of the range (the partition moves with it; its ends are the values of two pairs)."""
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

    def _range_gradients(self, basis: PairBasis, X: torch.Tensor) -> torch.Tensor:
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
        """``(loss, c, lo, hi, H, grad)`` at balanced ``(U, V)`` ``(R', d, r)`` (``||U V^T||_F = 1``; ``(d, r)``: one
        replicate, unbatched results) of the replicates ``reps`` (default: all): ``H = Jp^T Jp`` and
        ``grad = Jp^T resid`` (:meth:`_kaufman`; ``None`` without ``jacobian``); ``-2 grad / (M N)`` is the gradient of
        the reduced objective (up to the derivative of the tiny relative ridge)."""
        single = U.dim() == 2
        if single:
            U, V = U[None], V[None]
        if reps is None:
            reps = torch.arange(self._X.shape[0])
        # replicates in groups of at most `_group` (cache-sized per-pair arrays; see PAIRS_PER_GROUP)
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

    def _evaluate(self, U: torch.Tensor, V: torch.Tensor, reps: torch.Tensor, jacobian: torch.Tensor) -> GNState:
        """The states at ``(U, V)`` of the replicates ``reps``; with the Gauss-Newton matrix where ``jacobian``
        (a mask; ``H, g`` are zero elsewhere)."""
        n, d, r = U.shape
        if bool(jacobian.all()) or not bool(jacobian.any()):  # one evaluation (the usual case)
            loss, c, lo, hi, H, g = self._gn_state(U, V, bool(jacobian[0]), reps)
            return GNState(U=U, V=V, loss=loss, c=c, lo=lo, hi=hi, H=H, g=g)
        q, p = 2 * d * r, self.n_basis
        dt, dev = U.dtype, U.device
        st = GNState(U=U, V=V, loss=torch.empty(n, dtype=dt, device=dev), c=torch.empty(n, p, dtype=dt, device=dev),
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

    def _run_gn(self, U0: torch.Tensor, V0: torch.Tensor, reps: torch.Tensor, best: torch.Tensor,
                incumbent: Incumbent) -> StartResult:
        """Levenberg-Marquardt on the variable-projection residual (Kaufman's Jacobian), one start of each of the
        replicates ``reps`` at once (``U0, V0`` ``(R', d, r)``; each has its own damping, acceptance and stopping, the
        iterations of those still running are evaluated together).  ``best`` ``(R',)`` is each replicate's incumbent
        objective (``inf``: none; a start still above ``1.1 best`` after ``patience`` iterations is dropped) and
        ``incumbent`` its balanced ``(U, V)``: a start whose ``A`` comes within ``1 - |<A, A_best>| < join_tol`` of it,
        with an objective not below ``best``, has joined the incumbent's basin and is stopped (``joined``)."""
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
            a = row_index(running)  # the starts still running (None: all of them, no copies: the usual case)
            if a is not None and a.numel() == 0:
                break
            assign_rows(n_iter, a, it)
            accepted, trial, joining, mu_a = self._lm_step(st.take(a), pick_rows(mu, a), pick_rows(reps, a),
                                                           pick_rows(best, a),
                                                           incumbent.take(a), pred_tol)
            assign_rows(mu, a, mu_a)
            acc = a
            if not bool(accepted.all()):  # no descent direction at any damping: a (local) minimum
                ids = torch.arange(n) if a is None else a
                converged[ids[~accepted]] = True
                running[ids[~accepted]] = False
                acc = ids[accepted]
                if acc.numel() == 0:
                    continue
                trial, joining = trial.take(accepted), joining[accepted]
            before = pick_rows(st.loss, acc)
            if acc is None:
                st = trial
            else:
                st.put(acc, trial)
            loss, behind_of = pick_rows(st.loss, acc), pick_rows(best, acc)
            assign_rows(mu, acc, torch.clamp(pick_rows(mu, acc) / 3.0, min=1e-9))
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
        return StartResult(state=st, n_iter=n_iter, converged=converged, joined=joined)

    def _lm_step(self, st: GNState, mu: torch.Tensor, reps: torch.Tensor, best: torch.Tensor,
                 incumbent: Incumbent, pred_tol: float):
        """One Levenberg-Marquardt iteration of every replicate of ``st``: up to 3 trial steps with 10x more damping
        after each failure. Returns ``(accepted, trial, joining, mu)``: which replicates found a step, the states at
        their accepted trial points (others undefined), whether that point joined the incumbent's basin, the damping."""
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
            sub = row_index(pending)  # None: every replicate (no copies: the usual case)
            if sub is not None and sub.numel() == 0:
                break
            Hs, g, loss = pick_rows(H, sub), pick_rows(st.g, sub), pick_rows(st.loss, sub)
            damped = Hs + pick_rows(mu, sub)[:, None, None] * torch.diag_embed(pick_rows(Hd, sub))
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
            U1, V1 = self._balance(pick_rows(st.U, t) + step[:, : d * r].reshape(-1, d, r),
                                   pick_rows(st.V, t) + step[:, d * r:].reshape(-1, d, r))
            near = torch.zeros(U1.shape[0], dtype=torch.bool)
            if bool(incumbent.has.any()):
                near = pick_rows(incumbent.has, t) & (1.0 - alignment(U1, V1, pick_rows(incumbent.U, t),
                                                                        pick_rows(incumbent.V, t)) < cfg.join_tol)
            # the full state (with Jacobian) at the trial point: most steps are accepted, and then it is the next
            # iteration's state (one evaluation per iteration instead of two); a point that joins the incumbent's
            # basin is first evaluated without it (it ends the start if no better)
            new = self._evaluate(U1, V1, pick_rows(reps, t), ~near)
            ok = torch.isfinite(new.loss) & (new.loss <= pick_rows(st.loss, t))
            again = (near & ok & (new.loss < pick_rows(best, t))).nonzero()[:, 0]
            if again.numel():  # better than the incumbent: go on, with the Jacobian
                new.put(again, self._evaluate(U1[again], V1[again], pick_rows(reps, t)[again],
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

    def _run_starts(self, starts: list, n_consistent: int) -> list[FitResult]:
        """Run the starts of every data set and keep each one's best (see ``adaptive_restarts``): start ``k`` of
        all the data sets that still run it at once."""
        cfg = self._cfg
        R = self._X.shape[0]
        book = StartBook(R, self._X.shape[3], cfg.rank, cfg.adaptive_restarts, cfg.join_tol, self._X.device)
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
                   incumbent: Incumbent) -> StartResult:
        """One start of the data sets ``reps``: Gauss-Newton (batched) or L-BFGS (one data set)."""
        if self._cfg.optimizer == "gauss-newton":
            return self._run_gn(U0, V0, reps, best, incumbent)
        return self._run_lbfgs(U0[0].cpu().numpy(), V0[0].cpu().numpy())  # one data set
