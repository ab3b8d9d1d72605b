"""The design matrices of paper A's estimator: the piecewise-polynomial basis of every pair's projected tokens, as a
dense matrix or as a sparse pair design (a few nonzero basis values per pair, summed per row on the fly), with the
products the least-squares and Gauss-Newton steps need.  Private: the estimator builds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class PairBasis:
    """Everything one evaluation of ``B(A)`` computes per pair, for ``R`` replicates: ``P, Q``: ``X U``, ``X V``
    ``(R, M, N, r)``; ``u``: the pair values ``(R, M, N(N-1))`` (pair ``k`` of a sample is ``(i, j) = (ii[k], jj[k])``,
    the ``N - 1`` pairs of a row ``i`` consecutive); ``a = (u - lo) / (hi - lo)``; ``idx, t``: interval and local
    coordinate; ``vals``: the ``s + 1`` basis values ``(R, M, N(N-1), s+1)`` already divided by ``N - 1``; ``lo, hi``
    ``(R,)`` the range, the values of the pairs at flat indices ``ilo, ihi``; ``clamp``: constant extension."""

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


#: bytes of one dense block of rows of ``B`` in :meth:`PairDesign.rmatmat` (cache-sized)
BLOCK_BYTES = 2**21
#: pair values of the replicates evaluated together by one pass of the batched Gauss-Newton state: more per pass mean
#: fewer tensor operations per fit, but per-pair arrays beyond the cache make element-wise operations memory-bound
PAIRS_PER_GROUP = 2**17


def transposed_product(A: torch.Tensor, C: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``A^T C`` ``(R, a, c)`` for ``A`` ``(R, n, a)``, ``C`` ``(R, n, c)`` (added to ``out`` if given), computed as
    ``(C^T A)^T`` when ``c < 48``: with ``n >> a, c`` the BLAS product is faster in that orientation for narrow
    ``C`` and slower for wide ones (here ``c = 2 d r``, ``a = p``)."""
    if C.shape[-1] < 48:
        if out is None:
            return torch.bmm(C.mT, A).mT
        out.mT.baddbmm_(C.mT, A)
        return out
    return torch.bmm(A.mT, C) if out is None else out.baddbmm_(A.mT, C)


def pair_design_pays(n_rows: int, N: int, p: int, n_local: int) -> bool:
    """Whether the products with ``B`` (``n_rows x p``, ``(N-1) n_local`` nonzeros a row) are cheaper from its nonzeros
    (:class:`PairDesign`) than dense (:class:`DenseDesign`): when the dense Gram matrix costs ``n_rows p^2 >= 1e7``
    multiply-adds and at most half of a row is nonzero (below that size the ~100 small tensor operations of the
    structured Gram matrix cost what the dense products save)."""
    return n_rows * p * p >= 1e7 and 2 * (N - 1) * n_local <= p


class DenseDesign:
    """The design matrices of ``R`` replicates as one dense tensor ``B`` ``(R, M N, p)``: matrix products."""

    def __init__(self, B: torch.Tensor, pairs: "PairDesign | None" = None) -> None:
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
        return transposed_product(self.B, J)


class PairDesign:
    """The design matrices of ``R`` replicates from their nonzeros, ``B`` never formed whole.  Row ``rho`` of replicate
    ``r`` holds, for each of its ``n1 = N - 1`` pairs ``j``, the ``S = s + 1`` values ``vals[:, r, rho, j]`` in the
    columns ``idx[r, rho, j] S + l`` (its interval's). The products cost ``O(M N n1^2 S^2)`` (``B^T B``: the outer
    products within each row, scatter-added), ``O(M N n1 S)`` (``B^T y``, ``B c``) instead of ``O(M N p^2)`` and
    ``O(M N p)``; ``B^T J`` multiplies cache-sized dense blocks of rows (the dense product's flops, without the
    ``8 M N p``-byte matrix). The values are stored basis-function-major (``vals`` ``(S, R, n_rows, n1)``): every
    operation below runs on long contiguous runs."""

    def __init__(self, idx: torch.Tensor, vals: torch.Tensor, n_intervals: int, buffer: Any) -> None:
        self.idx, self.vals = idx, vals  # (R, n_rows, n1) long, (S, R, n_rows, n1)
        self.K, self.S = n_intervals, vals.shape[0]
        self.p = self.K * self.S
        self._buffer = buffer  # buffer(name, shape): a reusable float64 work array
        self.pairs = self  # the design of the pairs (a DenseDesign holds the one it was built from)
        R, dev = idx.shape[0], idx.device
        local = torch.arange(self.S, device=dev).view(-1, 1, 1, 1)
        self.cols = idx * self.S + local  # (S, R, n_rows, n1): column of every nonzero in its replicate's p
        # ... and in the R p columns of all replicates; int32 for the gathers (faster than int64)
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
        # per slot j: the rows' values as length-n vectors (faster than gathering the slot pairs with advanced
        # indexing), strided views or, beyond ~2^17 rows (where they pay), contiguous copies
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
        return (self.coefficients(c) * self.vals).sum(0).sum(-1)  # (faster than one reduction over (0, 3))

    def rmatmat(self, J: torch.Tensor) -> torch.Tensor:
        """``B^T J`` ``(R, p, q)`` for ``J`` ``(R, n_rows, q)``, from dense blocks of rows of ``B``."""
        R, n_rows, q = J.shape
        block = max(1, min(n_rows, BLOCK_BYTES // (8 * R * self.p)))
        flat = self._buffer("B_block", (R * block * self.p,))
        W = torch.zeros(R, self.p, q, dtype=J.dtype, device=J.device)
        if q < 48:  # accumulated as W^T (see transposed_product)
            W = torch.zeros(R, q, self.p, dtype=J.dtype, device=J.device).mT
        for a in range(0, n_rows, block):
            b = min(a + block, n_rows)
            rows = torch.arange(R * (b - a), device=J.device).view(1, R, b - a, 1)
            Bb = flat[: R * (b - a) * self.p]
            Bb.zero_().scatter_add_(0, (rows * self.p + self.cols[:, :, a:b]).reshape(-1),
                                    self.vals[:, :, a:b].reshape(-1))
            transposed_product(Bb.view(R, b - a, self.p), J[:, a:b], out=W)
        return W
