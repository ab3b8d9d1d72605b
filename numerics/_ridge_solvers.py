"""Ridge interpolation errors over a gamma grid from one factorisation per draw (numerics.rmt's linear algebra).

One symmetric eigendecomposition, one Householder tridiagonalisation or per-gamma Cholesky solves of the smaller Gram
matrix serve a whole grid (formulas: :mod:`numerics.rmt`'s module docstring).  Private: paper B's simulations use it.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import torch

from .threads import in_parallel, torch_threads


# ----------------------------------------------------------------------------------------- interpolation error
#: CPU eigendecompositions of matrices up to this size run single-threaded (all sizes by default): threaded
#: LAPACK ``syevd`` collapses on oversubscribed cores.  Lower it on a dedicated many-core machine.
SINGLE_THREAD_EIGH_MAX = 1 << 62


def eigh(G: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.linalg.eigh``; single-threaded on CPU up to ``SINGLE_THREAD_EIGH_MAX`` (batches are parallelised over
    trials instead); inside a :func:`numerics.threads.thread_map` worker the process-wide setting is left alone."""
    if G.device.type != "cpu" or in_parallel() or G.shape[-1] > SINGLE_THREAD_EIGH_MAX:
        return torch.linalg.eigh(G)
    with torch_threads(1):
        return torch.linalg.eigh(G)


#: with at most this many (positive) gammas, per-gamma Cholesky solves (n^3/3 flops each) beat one
#: eigendecomposition with vectors (~9 n^3 flops) on the whole error path
CHOLESKY_MAX_GAMMAS = 8
#: blocks of at least this many rows make a Gram matrix's lower block triangle worth forming (below, one product;
#: the GPU path of :func:`gram`)
GRAM_BLOCK_ROWS = 256
#: at most this many row blocks (k blocks cost (k + 1) / (2 k) of the full product)
GRAM_MAX_BLOCKS = 8


def gram(A: torch.Tensor) -> torch.Tensor:
    """``A A^T`` (..., m, m) of ``A`` (..., m, k), exactly symmetric.

    On the CPU (float32 / float64) each matrix is one numpy product ``a @ a.T``, which numpy runs as BLAS ``syrk``
    (half the flops of a general product; the other triangle copied) with the GIL released: 0.4-0.75x the time of
    the block triangle below at m = 64-2048, one thread.  Elsewhere torch has no ``syrk``: with ``b`` row blocks the
    products ``A_i A_j^T``, ``j <= i``, cost ``(b + 1) / (2 b)`` of the whole, mirrored."""
    if A.device.type == "cpu" and A.dtype in (torch.float64, torch.float32) and A.dim() >= 2:
        An = A.detach().numpy()
        m = An.shape[-2]
        flat = An.reshape((math.prod(An.shape[:-2]),) + An.shape[-2:])
        out = np.empty((flat.shape[0], m, m), dtype=An.dtype)
        for i, a in enumerate(flat):
            np.matmul(a, a.T, out=out[i])
        return torch.from_numpy(out.reshape(An.shape[:-1] + (m,)))
    return _gram_blocks(A)


def _gram_blocks(A: torch.Tensor) -> torch.Tensor:
    """``A A^T`` from its lower block triangle, mirrored (:func:`gram` off the CPU)."""
    m = A.shape[-2]
    blocks = min(GRAM_MAX_BLOCKS, m // GRAM_BLOCK_ROWS)
    if blocks < 2:
        G = A @ A.transpose(-1, -2)
        return G.tril() + G.tril(-1).transpose(-1, -2)
    edges = [round(i * m / blocks) for i in range(blocks + 1)]
    G = torch.empty(A.shape[:-1] + (m,), dtype=A.dtype, device=A.device)
    for i in range(blocks):
        rows = slice(edges[i], edges[i + 1])
        for j in range(i + 1):
            cols = slice(edges[j], edges[j + 1])
            blk = A[..., rows, :] @ A[..., cols, :].transpose(-1, -2)
            if i == j:  # a diagonal block's own upper triangle from its lower one
                blk = blk.tril() + blk.tril(-1).transpose(-1, -2)
            G[..., rows, cols] = blk
            if i != j:
                G[..., cols, rows] = blk.transpose(-1, -2)
    return G


def feature_basis(Xb: torch.Tensor, S0: torch.Tensor) -> torch.Tensor:
    """A stand-in for ``X`` in features ``X M`` when ``p > n``: ``R`` (T, n, n) with ``R^T R = X^T X``, else ``X``.
    For ``p >= n`` every error of :func:`errors_batch` depends on the features ``Phi = X M`` only through
    ``Phi^T Phi / n = M^T X^T X M / n`` (each path forms that Gram matrix and ``y``; the label average its
    eigenvalues), so ``R M`` gives the same errors.  ``R = L^T`` from the Cholesky factor of ``S0 = X^T X``
    (``O(n^3 / 3)`` once per batch, shared by every kernel on the draw); each model then costs ``2 n^3 + 1.1 n^3``
    (``R M`` and its Gram) instead of ``2 p n^2 + 1.1 p n^2``: half at ``p = 2 n``.  ``X`` itself where
    ``p <= n`` (no gain) or ``S0`` is numerically not positive definite."""
    T, p, n = Xb.shape
    if p <= n:
        return Xb
    L, info = torch.linalg.cholesky_ex(S0)
    if bool(torch.any(info != 0)):
        return Xb
    return L.transpose(-1, -2)


def _shape(Phi: torch.Tensor | None, S: torch.Tensor | None) -> tuple[int, int, int]:
    """``(T, p, n)`` of the features ``Phi``, or of features with ``p >= n`` known by ``S = Phi^T Phi`` (``p = n``
    stands for any such ``p``: the errors depend on nothing else)."""
    return tuple(Phi.shape) if S is None else (S.shape[0], S.shape[-1], S.shape[-1])


def _wide_gram(Phi: torch.Tensor | None, S: torch.Tensor | None) -> torch.Tensor:
    """``Phi^T Phi`` (T, n, n) of features with ``p >= n``: ``S`` where given."""
    return gram(Phi.transpose(-1, -2)) if S is None else S


def tridiagonal_min_gammas(m: int) -> int:
    """Fewest gammas at which one ``sytrd`` of an ``m x m`` Gram matrix beats per-gamma Cholesky factorisations: it
    costs about 2 factorisations at m = 512 and 7 at 4096 (its half of level-2 BLAS is memory-bound)."""
    return 3 if m <= 1536 else 5 if m <= 3072 else 8


def errors_tridiagonal(Phi: torch.Tensor | None, y: torch.Tensor, gammas: torch.Tensor,
                       S: torch.Tensor | None = None) -> torch.Tensor | None:
    """E(gamma) of a batch from one Householder tridiagonalisation per trial (CPU, every gamma > 0); ``None`` where a
    tridiagonal system is numerically not positive definite, or where ``p < n`` and the error is so small against
    ``||y||^2 / n`` that its difference form would lose more than eight digits (the caller falls back)."""
    T, p, n = _shape(Phi, S)
    if min(p, n) < 2:  # no off-diagonal: the other paths are as cheap
        return None
    if p >= n:
        G = _wide_gram(Phi, S) / n  # (T, n, n)
        rhs = y
    else:
        G = gram(Phi) / n  # (T, p, p)
        rhs = (Phi @ y.unsqueeze(-1))[..., 0]
    Gn, bn, yn = G.numpy(), rhs.numpy(), y.numpy()
    g = gammas.numpy()
    out = np.empty((T, g.size))
    with contextlib.nullcontext() if in_parallel() else torch_threads(1):  # scipy's BLAS too (numerics.threads)
        ok = tridiagonal_rows(Gn, bn, yn, g, n, p >= n, out)
    return torch.from_numpy(out).to(y.dtype) if ok else None


def tridiagonal_rows(Gn: np.ndarray, bn: np.ndarray, yn: np.ndarray, g: np.ndarray, n: int, wide: bool,
                      out: np.ndarray) -> bool:
    """The per-trial loop of :func:`errors_tridiagonal` (``wide``: ``p >= n``); fills ``out``, False to decline."""
    from scipy.linalg import blas, lapack

    T, m = bn.shape
    sytrd, ptsv = lapack.get_lapack_funcs(("sytrd", "ptsv"), (Gn,))
    (syr2,) = blas.get_blas_funcs(("syr2",), (Gn,))
    lwork = int(lapack.get_lapack_funcs("sytrd_lwork", (Gn,))(m, lower=1)[0])
    e1 = np.zeros(m)
    e1[0] = 1.0
    for t in range(T):
        b = bn[t]
        yy = float(yn[t] @ yn[t])
        beta = float(np.linalg.norm(b))
        if beta == 0.0:  # p < n and Phi y = 0: w = 0 for every gamma
            out[t] = yy / n
            continue
        # reflector H = I - 2 v v^T / (v^T v) with H b = -sign(b_1) beta e_1; H G H = G - v z^T - z v^T. G is
        # symmetric and ours: its transpose is a Fortran-ordered view LAPACK updates in place (C order would be copied)
        v = b.copy()
        v[0] += math.copysign(beta, b[0])
        vv = float(v @ v)
        w = 2.0 * (Gn[t] @ v) / vv
        z = w - (float(v @ w) / vv) * v
        Gh = syr2(-1.0, v, z, a=Gn[t].T, lower=1, overwrite_a=1)
        _, d, e, _, info = sytrd(Gh, lower=1, lwork=lwork, overwrite_a=1)
        if info != 0:
            return False
        for k, gk in enumerate(g):
            *_, u, info = ptsv(d + gk, e, e1)
            if info != 0:
                return False
            uu = float(u @ u)
            if wide:
                out[t, k] = gk * gk * beta * beta * uu / n
            else:
                drop = beta * beta * (float(u[0]) + gk * uu) / n
                if yy - drop < 1e-8 * yy:
                    return False
                out[t, k] = (yy - drop) / n
    return True


def errors_cholesky(Phi: torch.Tensor | None, y: torch.Tensor, gammas: torch.Tensor,
                    S: torch.Tensor | None = None) -> torch.Tensor | None:
    """Per-gamma Cholesky path (gamma > 0; ``None`` if a factorisation fails):
    ``E = gamma^2/n ||(Phi^T Phi/n + gamma)^{-1} y||^2`` (``p >= n``),
    ``E = ||y - Phi^T (Phi Phi^T/n + gamma)^{-1} Phi y / n||^2 / n`` (``p < n``)."""
    T, p, n = _shape(Phi, S)
    if p >= n:
        A = _wide_gram(Phi, S) / n
        rhs = y.unsqueeze(-1)
    else:
        A = gram(Phi) / n
        rhs = Phi @ y.unsqueeze(-1) / n
    eye = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    cols = []
    ctx = torch_threads(1) if A.device.type == "cpu" and not in_parallel() else contextlib.nullcontext()
    with ctx:
        for gv in gammas.tolist():
            L, info = torch.linalg.cholesky_ex(A + gv * eye)
            if bool(torch.any(info != 0)):
                return None
            v = torch.cholesky_solve(rhs, L)
            if p >= n:
                cols.append(gv**2 * (v**2).sum(dim=(-2, -1)) / n)
            else:
                r = y - (Phi.transpose(-1, -2) @ v)[..., 0]
                cols.append((r**2).sum(dim=-1) / n)
    return torch.stack(cols, dim=-1)


def errors_batch(Phi: torch.Tensor | None, y: torch.Tensor | None, gammas: torch.Tensor,
                 S: torch.Tensor | None = None) -> torch.Tensor:
    """E(gamma) for a batch: ``Phi`` (T, p, n), ``y`` (T, n), ``gammas`` (G,) -> (T, G); ``y = None``: the label
    average ``gamma^2/n tr Q^2`` (eigenvalues only).  ``S``: ``Phi^T Phi`` (T, n, n) of features with ``p >= n``, in
    place of ``Phi`` (``None``), which those errors depend on only through it."""
    T, p, n = _shape(Phi, S)
    g = gammas.view(1, 1, -1)
    if y is None:
        small = _wide_gram(Phi, S) if p >= n else gram(Phi)
        if small.device.type == "cpu" and small.shape[-1] <= SINGLE_THREAD_EIGH_MAX and not in_parallel():
            with torch_threads(1):
                lam = torch.linalg.eigvalsh(small / n)
        else:
            lam = torch.linalg.eigvalsh(small / n)
        lam = lam.clamp_min(0.0).unsqueeze(-1)
        gk = shrink(lam, g)
        return ((gk**2).sum(dim=1) + max(n - p, 0)) / n
    positive = bool(torch.all(gammas > 0))
    if positive and y.device.type == "cpu" and gammas.numel() >= tridiagonal_min_gammas(min(p, n)):
        out = errors_tridiagonal(Phi, y, gammas, S)
        if out is not None:
            return out
    if positive and gammas.numel() <= CHOLESKY_MAX_GAMMAS:
        out = errors_cholesky(Phi, y, gammas, S)
        if out is not None:
            return out
    return errors_eigh(Phi, y, gammas, S)


def errors_eigh(Phi: torch.Tensor | None, y: torch.Tensor, gammas: torch.Tensor,
                S: torch.Tensor | None = None) -> torch.Tensor:
    """E(gamma) of a batch from one eigendecomposition per trial (any gamma >= 0; the reference path)."""
    T, p, n = _shape(Phi, S)
    g = gammas.view(1, 1, -1)
    if p >= n:
        G = _wide_gram(Phi, S) / n  # (T, n, n)
        lam, V = eigh(G)
        lam = lam.clamp_min(0.0).unsqueeze(-1)  # (T, n, 1)
        proj2 = (V.transpose(-1, -2) @ y.unsqueeze(-1)) ** 2  # (T, n, 1)
        gk = shrink(lam, g)
        return (gk**2 * proj2).sum(dim=1) / n
    Gp = gram(Phi) / n  # (T, p, p)
    lam, U = eigh(Gp)
    lam = lam.clamp_min(0.0).unsqueeze(-1)  # (T, p, 1)
    b2 = (U.transpose(-1, -2) @ (Phi @ y.unsqueeze(-1))) ** 2  # (T, p, 1)
    gk = shrink(lam, g)
    denom = lam + g
    tol = null_tol(lam)
    with torch.no_grad():
        term = torch.where(denom > tol, b2 * (1.0 + gk) / torch.where(denom > tol, denom, torch.ones_like(denom)), 0.0)
    yy = (y**2).sum(dim=-1, keepdim=True)  # (T, 1)
    return (yy - term.sum(dim=1) / n) / n


def null_tol(lam: torch.Tensor) -> torch.Tensor:
    m = lam.shape[-2]
    return lam.amax(dim=-2, keepdim=True) * (m * torch.finfo(lam.dtype).eps) + torch.finfo(lam.dtype).tiny


def shrink(lam: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """``gamma / (lam + gamma)``; at ``gamma = 0``: 1 on numerically null eigenvalues, else 0."""
    tol = null_tol(lam)
    pos = g > 0
    safe = torch.where(pos, g, torch.ones_like(g))
    shr = safe / (lam + safe)
    null = (lam <= tol).to(lam.dtype)
    return torch.where(pos, shr, null)


def errors_label_mean(Phi: torch.Tensor, m: torch.Tensor, gammas: torch.Tensor) -> torch.Tensor:
    """``E_y[E(gamma)]`` for independent labels in ``{-1, 1}`` with means ``m``: ``Phi`` (T, p, n), ``m`` (T, n).
    ``E[y y^T] = m m^T + diag(1 - m^2) = M`` (trace ``n``), so ``E_y E(gamma) = gamma^2/n tr(Q^2 M)``.  On the
    positive eigenpairs ``(lam_k, v_k)`` of ``Phi^T Phi / n`` (from the smaller Gram matrix), with
    ``s_k = gamma/(lam_k + gamma)`` and ``w_k = (v_k^T m)^2 + sum_i v_ik^2 (1 - m_i^2)``:
    ``(n - sum_k (1 - s_k^2) w_k) / n`` (the null space of ``Phi`` keeps its whole share of ``tr M``)."""
    n = Phi.shape[2]
    lam, V, positive = _positive_eigenpairs(Phi)
    w = (V.transpose(-1, -2) @ m.unsqueeze(-1)) ** 2 + (V**2).transpose(-1, -2) @ (1 - m**2).unsqueeze(-1)
    s = shrink(lam.unsqueeze(-1), gammas.view(1, 1, -1))
    kept = torch.where(positive, (1 - s**2) * w, torch.zeros_like(s))
    return (n - kept.sum(dim=1)) / n


def _positive_eigenpairs(Phi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Eigenvalues ``lam`` (T, k) of ``Phi^T Phi / n`` (from the smaller Gram matrix), unit eigenvectors ``V``
    (T, n, k) and the mask (T, k, 1) of the positive ones."""
    T, p, n = Phi.shape
    if p >= n:
        lam, V = eigh(gram(Phi.transpose(-1, -2)) / n)  # V (T, n, n)
    else:
        lam, U = eigh(gram(Phi) / n)  # U (T, p, p)
        scale = torch.sqrt((n * lam).clamp_min(torch.finfo(lam.dtype).tiny))
        V = (Phi.transpose(-1, -2) @ U) / scale.unsqueeze(-2)  # (T, n, p): unit vectors for the positive lam
    lam = lam.clamp_min(0.0)
    positive = (lam > null_tol(lam.unsqueeze(-1)).squeeze(-1)).unsqueeze(-1)  # (T, k, 1)
    return lam, V, positive


def smoother_parts(Phi: torch.Tensor, m: torch.Tensor,
                   gammas: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The label-averaged training error split by what it holds, and the smoother's diagonal, per gamma.
    ``S = I - gamma Q = sum_k (1 - s_k) v_k v_k^T`` (positive eigenpairs), labels with means ``m`` and variances
    ``v = 1 - m^2``.  Returns ``signal = m^T R^2 m / n`` (T, G), ``noise = sum_i v_i (R^2)_ii / n`` (T, G) (their sum is
    :func:`errors_label_mean`), ``absorbed = sum_i v_i S_ii / n`` (T, G) (the label noise the fit takes in: on fresh
    labels at the same tokens the risk is exactly ``signal + noise + 2 absorbed``), leverages ``S_ii`` (T, n, G)."""
    n = Phi.shape[2]
    v = 1 - m**2
    if Phi.shape[1] < n and bool((gammas == 0).all()):
        parts = _projection_parts(Phi, m, v, gammas.numel())
        if parts is not None:
            return parts
    lam, V, positive = _positive_eigenpairs(Phi)
    s = shrink(lam.unsqueeze(-1), gammas.view(1, 1, -1))  # (T, k, G)
    zero = torch.zeros_like(s)
    kept2 = torch.where(positive, 1 - s**2, zero)
    kept1 = torch.where(positive, 1 - s, zero)
    proj = (V.transpose(-1, -2) @ m.unsqueeze(-1)) ** 2  # (T, k, 1)
    V2 = V**2  # (T, n, k)
    signal = ((m**2).sum(dim=1, keepdim=True) - (kept2 * proj).sum(dim=1)) / n
    diag_r2 = 1 - V2 @ kept2  # (T, n, G)
    leverage = V2 @ kept1  # (T, n, G)
    noise = (v.unsqueeze(-1) * diag_r2).sum(dim=1) / n
    absorbed = (v.unsqueeze(-1) * leverage).sum(dim=1) / n
    return signal, noise, absorbed, leverage


def _projection_parts(Phi: torch.Tensor, m: torch.Tensor, v: torch.Tensor,
                      n_gammas: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """:func:`smoother_parts` at ``gamma = 0`` for ``p < n`` features of full rank: ``S`` is the projection onto the
    row space of ``Phi``, whose orthonormal basis ``L^{-1} Phi`` (``L L^T = Phi Phi^T``, Cholesky) costs about a third
    of the eigendecomposition; ``None`` (left to the eigendecomposition) when a Gram matrix is numerically singular."""
    L, info = torch.linalg.cholesky_ex(gram(Phi))
    if bool((info != 0).any()):
        return None
    diag = torch.diagonal(L, dim1=-2, dim2=-1)
    if bool((diag.amin(dim=-1) <= diag.amax(dim=-1) * 1e-7).any()):  # condition above 1e14: leave it to eigh
        return None
    B = torch.linalg.solve_triangular(L, Phi, upper=False)  # (T, p, n), orthonormal rows
    n = Phi.shape[2]
    leverage = (B**2).sum(dim=1)  # (T, n)
    signal = ((m**2).sum(dim=1) - ((B @ m.unsqueeze(-1)) ** 2).sum(dim=(1, 2))) / n
    noise = (v * (1 - leverage)).sum(dim=1) / n
    absorbed = (v * leverage).sum(dim=1) / n
    expand = (-1, n_gammas)
    return (signal.unsqueeze(-1).expand(expand), noise.unsqueeze(-1).expand(expand),
            absorbed.unsqueeze(-1).expand(expand), leverage.unsqueeze(-1).expand(-1, -1, n_gammas))
