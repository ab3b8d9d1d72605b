"""The bookkeeping of paper A's estimator across its starts: the Gauss-Newton state of a batch of replicates, the
incumbent (best) factors, the result of one start and of a fit, and the book that joins the starts' results (private).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import torch


class Rows:
    """A dataclass of tensors sharing a leading replicate axis: rows taken (copied) and put back by index."""

    def take(self, index: torch.Tensor | None):
        """The rows ``index`` (a copy; ``None``: all, ``self`` itself)."""
        if index is None:
            return self
        return type(self)(**{f.name: None if (v := getattr(self, f.name)) is None else v[index] for f in fields(self)})

    def put(self, index: torch.Tensor, other: Any) -> None:
        """Overwrite the rows ``index`` with ``other``'s (fields ``other`` lacks kept; ones ``self`` lacks: zeros)."""
        n_rows = getattr(self, fields(self)[0].name).shape[0]
        for f in fields(self):
            value = getattr(other, f.name)
            if value is None:
                continue
            if getattr(self, f.name) is None:
                setattr(self, f.name, value.new_zeros((n_rows,) + tuple(value.shape[1:])))
            getattr(self, f.name)[index] = value


@dataclass
class GNState(Rows):
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
class Incumbent(Rows):
    """Each replicate's best point so far (``has``: whether there is one to join)."""

    U: torch.Tensor
    V: torch.Tensor
    has: torch.Tensor


@dataclass
class StartResult:
    """One start of several replicates: the final states, iterations, whether each met its tolerance (or was
    stopped on purpose) and whether it joined the incumbent's basin."""

    state: GNState
    n_iter: torch.Tensor
    converged: torch.Tensor
    joined: torch.Tensor


@dataclass
class FitResult:
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


class StartBook:
    """Each data set's best start so far, every start's objective, and whether two consistent starts agreed."""

    def __init__(self, R: int, d: int, r: int, adaptive: bool, join_tol: float, device: Any) -> None:
        self.best: list = [None] * R  # per data set: (its state, n_iter, converged)
        self.best_loss = torch.full((R,), math.inf, dtype=torch.float64)
        zeros = torch.zeros(R, d, r, dtype=torch.float64, device=device)
        # joinable only with adaptive restarts
        self.incumbent = Incumbent(U=zeros, V=zeros.clone(), has=torch.zeros(R, dtype=torch.bool))
        self.agree = torch.zeros(R, dtype=torch.bool)
        self.objectives: list = [[] for _ in range(R)]
        self.adaptive, self.join_tol = adaptive, join_tol

    def record(self, run: torch.Tensor, res: StartResult, consistent: bool) -> None:
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
                    alignment(point.U, point.V, best[0].U, best[0].V)) < self.join_tol)
                self.agree[i] |= same
            if best is None or loss < self.best_loss[i]:
                self.best[i] = (point, int(res.n_iter[j]), bool(res.converged[j]))
                self.best_loss[i] = loss
                if self.adaptive:
                    self.incumbent.put(torch.tensor([i]), Incumbent(U=point.U, V=point.V,
                                                                     has=torch.ones(1, dtype=torch.bool)))

    def results(self) -> list[FitResult]:
        missing = [i for i, b in enumerate(self.best) if b is None]
        if missing:
            raise RuntimeError(f"PairwiseInteractionEstimator.fit: every start gave a non-finite objective (data sets "
                               f"{missing})")
        return [FitResult(objective=float(st.loss[0]), U=st.U[0], V=st.V[0], c=st.c[0], lo=float(st.lo[0]),
                           hi=float(st.hi[0]), n_iter=n_iter, restart_objectives=self.objectives[i], converged=conv)
                for i, (st, n_iter, conv) in enumerate(self.best)]


def alignment(U: torch.Tensor, V: torch.Tensor, Ub: torch.Tensor, Vb: torch.Tensor) -> torch.Tensor:
    """``|<U V^T, Ub Vb^T>_F|`` of unit-norm factorisations ``(R, d, r)`` (1: the same ``A`` up to sign)."""
    return torch.bmm(torch.bmm(V.mT, Vb), torch.bmm(Ub.mT, U)).diagonal(dim1=-2, dim2=-1).sum(-1).abs()


def row_index(mask: torch.Tensor) -> torch.Tensor | None:
    """The indices where ``mask`` holds, or ``None`` if it holds everywhere (then callers index nothing)."""
    return None if bool(mask.all()) else mask.nonzero()[:, 0]


def pick_rows(x: torch.Tensor, index: torch.Tensor | None) -> torch.Tensor:
    """``x[index]`` (``x`` itself for ``index=None``: all rows)."""
    return x if index is None else x[index]


def assign_rows(x: torch.Tensor, index: torch.Tensor | None, value: Any) -> None:
    """``x[index] = value`` in place (all rows for ``index=None``)."""
    if index is None:
        x.copy_(value) if isinstance(value, torch.Tensor) else x.fill_(value)
    else:
        x[index] = value
