"""The leverage profile of attention's features under strong alignment: a matrix Dyson equation on a grid in ``a``.

Private: :func:`theory.strong_alignment_leverage` validates and calls :func:`solve_leverage`.  Derivation in
docs/strong_alignment.md ("Step 5"): given the labelled coordinates ``a_i``, the kernel's slope and remainder parts,
``K = h1(t a_i a_j) S_ij + r(t a_i a_j) W_ij / sqrt p`` (``S = X X^T``, ``W`` Gaussian), and ``F = K X``; then
``1 - h_i`` is the ``(1, i)`` diagonal entry of the inverse of a symmetric linear pencil in ``X``, ``W`` and diagonal
matrices of ``a``, whose block diagonal solves the Dyson equation below.  On quadrature nodes ``a_k`` (weights
``w_k``) the unknowns are the 3 x 3 matrices ``G(a_k)`` (blocks ``1, u, v`` of the token side); the feature side is
eliminated exactly, a Woodbury correction over the slope kernel's low rank per iteration.

At finite ``p`` (:func:`solve_leverage` with ``p``) the kernel's mean part ``h0(t a_i a_j) / sqrt p`` (diagonal
removed) enters the pencil's ``(1, u)`` block as a deterministic matrix of low rank: ``h0(t a a') = sum_k lambda_k
phi_k(a) phi_k(a')`` on the nodes, and the token side's inverse is the block-diagonal one corrected by Woodbury's
identity over the ``n = round(p / c)`` tokens.  The correction is ``O(rank / n)`` per token, the size of the offsets
it explains (docs/strong_alignment.md, "The kernel's mean part at finite p").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

#: Gauss-Hermite nodes of the Gaussian expectations over ``xi`` (the kernel's Hermite data at each ``m``)
XI_NODES = 120
#: spectral parameter of the Dyson equation (the solution is continued to 0; 1e-5 and 1e-8 agree to 1e-8)
EPS = 1e-8


class DysonOptions(NamedTuple):
    """Gauss-Hermite nodes of ``a`` per label, tolerance and iteration cap of :func:`solve_leverage`."""

    nodes: int
    tol: float
    maxiter: int


@dataclass(frozen=True)
class DysonSolution:
    """Nodes ``a``, weights, the leverage ``h(a)``, iterations used and whether the iteration converged.  At
    ``delta > 0`` the pencil's feature block carries ``-delta``, ``1 - leverage`` is the diagonal of
    ``delta (delta + F F^T)^{-1}`` (``gamma Q`` of the ridge probe at ``gamma = c delta``), not of ``I - P``."""

    a: np.ndarray
    weights: np.ndarray
    leverage: np.ndarray
    iterations: int
    converged: bool


#: mean-kernel ``h0(t a a')`` eigenvalues below this fraction of the largest are dropped (a leverage moves < 1e-12)
MEAN_PART_RANK_TOL = 1e-12


@dataclass(frozen=True)
class MeanPart:
    """The kernel's mean part at ``n`` tokens as a low-rank block: ``V`` (nodes x 3 x 2L) places ``phi_k(a)`` in the
    token blocks ``1`` and ``u``, ``C`` (2L x 2L) couples them with ``lambda_k / sqrt p``; ``diagonal``: the mean
    kernel's own diagonal ``h0(t a^2) / sqrt p``, which the model removes; ``n weights``: the tokens at each node."""

    V: np.ndarray
    C: np.ndarray
    diagonal: np.ndarray
    tokens: np.ndarray


def mean_part(f: Callable[[np.ndarray], np.ndarray], t: float, a: np.ndarray, w: np.ndarray, p: int,
              n: int) -> MeanPart:
    """Factor ``h0(t a a') = E f(xi + t a a')`` on the nodes (eigenpairs of the ``w``-weighted kernel matrix, so
    ``sum_k w_k phi_i(a_k) phi_j(a_k) = delta_ij``) into the block that :func:`solve_leverage` adds at ``n`` tokens."""
    h0 = kernel_mean(f, t * np.outer(a, a))
    root = np.sqrt(w)
    lam, U = np.linalg.eigh(root[:, None] * h0 * root[None, :])
    keep = np.abs(lam) > MEAN_PART_RANK_TOL * np.abs(lam).max() if np.any(lam) else np.zeros(lam.shape, bool)
    lam, phi = lam[keep], U[:, keep] / root[:, None]
    k = lam.size
    V = np.zeros((a.size, 3, 2 * k))
    V[:, 0, :k] = phi
    V[:, 1, k:] = phi
    C = np.zeros((2 * k, 2 * k))
    C[:k, k:] = C[k:, :k] = np.diag(lam) / np.sqrt(p)
    return MeanPart(V, C, kernel_mean(f, t * a * a) / np.sqrt(p), n * w)


def kernel_mean(f: Callable[[np.ndarray], np.ndarray], m: np.ndarray) -> np.ndarray:
    """``h0(m) = E f(xi + m)``, entrywise, by Gauss-Hermite."""
    values, x, w = _gaussian_shifts(f, m)
    return (values @ w).reshape(m.shape)


def _gaussian_shifts(f: Callable[[np.ndarray], np.ndarray],
                     m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``f(xi + m)`` on :data:`XI_NODES` Gauss-Hermite nodes ``xi`` (rows: the entries of ``m``), nodes, weights."""
    x, w = np.polynomial.hermite_e.hermegauss(XI_NODES)
    return f(x[None, :] + m.reshape(-1, 1)), x, w / w.sum()


def finite_size(t: float, c: float, p: int) -> tuple[float, int]:
    """The spike's strength and the token count that the equation uses at dimension ``p``: ``t + 1/sqrt p`` (the
    labelled coordinate's own product ``a_i a_j / sqrt p`` adds to the spike's) and ``n = round(p / c)`` (as the
    simulation draws them)."""
    return t + 1.0 / math.sqrt(p), max(1, int(round(p / c)))


def _token_resolvent(D: np.ndarray, mean: MeanPart | None) -> np.ndarray:
    """The token side's diagonal blocks: ``D^{-1}`` per node, minus Woodbury's low-rank term when the mean part is
    in (``sum_j`` over tokens as ``n sum_k w_k``)."""
    Dinv = np.linalg.inv(D)
    if mean is None or mean.C.size == 0:
        return Dinv
    DV = Dinv @ mean.V
    Q = (mean.V * mean.tokens[:, None, None]).reshape(-1, mean.V.shape[2]).T @ DV.reshape(-1, mean.V.shape[2])
    core = mean.C @ np.linalg.inv(np.eye(mean.C.shape[0]) + Q @ mean.C)
    return Dinv - DV @ core @ np.transpose(mean.V, (0, 2, 1)) @ Dinv


def label_coordinate_nodes(snr: float, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite quadrature of ``a = sqrt(snr) y + z`` (``y = +-1`` equally likely): ``2 nodes`` points."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    s = np.sqrt(snr)
    return np.concatenate([x + s, x - s]), np.concatenate([w, w]) / 2


def kernel_parts(f: Callable[[np.ndarray], np.ndarray], m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``h1(m) = E[xi f(xi + m)]`` and ``r(m)^2 = Var f(xi + m) - h1(m)^2``, entrywise, by Gauss-Hermite."""
    values, x, w = _gaussian_shifts(f, m)
    h0 = values @ w
    h1 = values @ (w * x)
    r2 = np.maximum(values**2 @ w - h0**2 - h1**2, 0.0)
    return h1.reshape(m.shape), r2.reshape(m.shape)


#: eigenvalues of the slope kernel ``h1(t a a')`` on the nodes below this fraction of the largest are dropped in
#: :func:`_self_energy` (the feature side's solve is then low-rank; 20-30 of ~100 kept, the result unchanged to 1e-13)
SLOPE_RANK_TOL = 1e-13


@dataclass(frozen=True)
class SlopeKernel:
    """``h1(t a_k a_l) = sum_j lam_j Phi_kj Phi_lj`` on the nodes (eigenpairs kept by :data:`SLOPE_RANK_TOL`)."""

    Phi: np.ndarray
    lam: np.ndarray

    @classmethod
    def of(cls, H: np.ndarray) -> "SlopeKernel":
        lam, U = np.linalg.eigh(H)
        keep = np.abs(lam) >= SLOPE_RANK_TOL * np.abs(lam).max()
        return cls(U[:, keep], lam[keep])

    def times(self, X: np.ndarray) -> np.ndarray:
        """``(I_2 kron H) X`` for ``X`` of ``2m`` rows."""
        m = self.Phi.shape[0]
        return np.concatenate([self.Phi @ (self.lam[:, None] * (self.Phi.T @ X[:m])),
                               self.Phi @ (self.lam[:, None] * (self.Phi.T @ X[m:]))])


def _swap(X: np.ndarray) -> np.ndarray:
    """``J X`` with ``J = [[0, -I], [-I, 0]]`` (``J^{-1} = J``)."""
    m = X.shape[0] // 2
    return -np.concatenate([X[m:], X[:m]])


def _self_energy(G: np.ndarray, w: np.ndarray, H: SlopeKernel, R: np.ndarray, c: float,
                 delta: float = 0.0) -> np.ndarray:
    """``Sigma(a_k)``: the feature side eliminated plus the kernel noise's part; ``delta``: the ridge term of the
    feature block.  The feature side is the matrix ``Z = [[z, -y^T (I kron H)], [-y, A]]`` of size ``1 + 2m`` with
    ``A = J + D (I kron H)`` (``D`` holds ``-w G_ab / c`` for the blocks ``a, b`` in ``1, u``, ``y`` holds
    ``w G_a3 / c``, ``z = -delta - sum w G_33 / c``); the self-energy needs ``Z^{-1}`` with its rows ``1..2m``
    multiplied by ``I kron H``, through the scalar border and the diagonals of the blocks.  ``H`` of low rank makes
    ``A^{-1}`` a Woodbury correction of ``J`` (the dense inverse is the test's reference)."""
    m, r = H.Phi.shape
    x00, x11, x01 = (w * G[:, 0, 0]) / c, (w * G[:, 1, 1]) / c, (w * G[:, 0, 1]) / c
    y = np.concatenate([w * G[:, 0, 2], w * G[:, 1, 2]]) / c
    z = -delta - (w @ G[:, 2, 2]) / c + 1j * EPS
    W = np.empty((2 * m, 2 * r), complex)  # D (I kron Phi)
    W[:m, :r], W[:m, r:] = -x00[:, None] * H.Phi, -x01[:, None] * H.Phi
    W[m:, :r], W[m:, r:] = -x01[:, None] * H.Phi, -x11[:, None] * H.Phi
    lam2 = np.concatenate([H.lam, H.lam])
    JW = _swap(W)
    PtJW = np.concatenate([H.Phi.T @ JW[:m], H.Phi.T @ JW[m:]])
    K = np.linalg.inv(np.eye(2 * r) + PtJW * lam2[None, :])  # A^{-1} = J - JW L K P^T J

    Jy = _swap(y[:, None])
    u = (Jy - JW @ (lam2[:, None] * (K @ np.concatenate([H.Phi.T @ Jy[:m], H.Phi.T @ Jy[m:]]))))[:, 0]  # A^{-1} y
    Hy = H.times(y[:, None])
    s = 1.0 / (z - Hy[:, 0] @ u)  # the border's Schur complement: Z^{-1}_00
    JHy = _swap(Hy)  # A^{-T} = J - J P K^T L W^T J
    inner = K.T @ (lam2[:, None] * (W.T @ JHy))
    v = (JHy - _swap(np.concatenate([H.Phi @ inner[:r], H.Phi @ inner[r:]])))[:, 0]  # A^{-T} (I kron H) y
    Hu = H.times(u[:, None])[:, 0]
    left = (H.times(JW) * lam2[None, :]) @ K  # (I kron H) J W L K, against P^T J on the right
    h_diag = H.Phi**2 @ H.lam

    def block_diagonal(i: int, j: int) -> np.ndarray:
        """``diag`` of block ``(i, j)`` of ``(I kron H) Z^{-1}`` on ``1..2m`` (``0``: ``1``, ``1``: ``u``)."""
        rows, cols = slice(i * m, (i + 1) * m), slice(j * m, (j + 1) * m)
        lowrank = np.einsum("ik,ik->i", left[rows][:, (1 - j) * r:(2 - j) * r], -H.Phi)  # P^T J: block (1-j, j)
        return (-h_diag if i != j else 0.0) - lowrank + s * Hu[rows] * v[cols]

    S = np.zeros((m, 3, 3), complex)
    S[:, 2, 2] = s
    S[:, 0, 2] = S[:, 2, 0] = s * Hu[:m]
    S[:, 1, 2] = S[:, 2, 1] = s * Hu[m:]
    S[:, 0, 0] = block_diagonal(0, 0) + R @ G[:, 1, 1]
    S[:, 1, 1] = block_diagonal(1, 1) + R @ G[:, 0, 0]
    S[:, 0, 1] = S[:, 1, 0] = block_diagonal(0, 1) + R @ G[:, 0, 1]  # symmetric kernel noise
    return S


#: :func:`binned_coordinate_nodes` stops at ``|a| = sqrt(snr) + COORDINATE_REACH`` (the mass beyond is below 1e-18)
COORDINATE_REACH = 9.0


def binned_coordinate_nodes(snr: float, edges: np.ndarray, per_bin: int,
                            reach: float = COORDINATE_REACH) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Quadrature of ``a = sqrt(snr) y + z`` whose nodes fall inside bins of ``|a|``: Gauss-Legendre with
    ``per_bin`` nodes on each bin and sign (the last bin cut at ``sqrt(snr) + reach``), weighted by the density of
    ``a`` and normalised.  Returns nodes, weights and each node's bin."""
    x, gw = np.polynomial.legendre.leggauss(per_bin)
    root = np.sqrt(snr)
    nodes, weights, which = [], [], []
    for k in range(len(edges) - 1):
        lo, hi = edges[k], min(edges[k + 1], root + reach)
        u = lo + (hi - lo) * (x + 1) / 2
        for sign in (1.0, -1.0):
            a = sign * u
            dens = 0.5 * (np.exp(-0.5 * (a - root) ** 2) + np.exp(-0.5 * (a + root) ** 2)) / np.sqrt(2 * np.pi)
            nodes.append(a)
            weights.append(gw * (hi - lo) / 2 * dens)
            which.append(np.full(per_bin, k))
    w = np.concatenate(weights)
    return np.concatenate(nodes), w / w.sum(), np.concatenate(which)


def solve_leverage(f: Callable[[np.ndarray], np.ndarray], c: float, snr: float, t: float, options: DysonOptions,
                   delta: float = 0.0, grid: tuple[np.ndarray, np.ndarray] | None = None,
                   p: int | None = None) -> DysonSolution:
    """Fixed-point iteration of ``G(a) = (Lambda(a) - Sigma(G)(a))^{-1}`` from ``G = -i I`` (damped by 1/2, with
    Anderson mixing of the iterates); ``h = 1 - G_11``;
    ``delta > 0``: the ridge-regularised pencil (:class:`DysonSolution`).  ``grid``: nodes and weights of ``a`` to
    use instead of :func:`label_coordinate_nodes` (``options.nodes`` is then ignored).  ``p``: the finite-size
    equation, at :func:`finite_size`'s ``t`` and ``n`` with the kernel's mean part (``t`` is then the limit's)."""
    a, w = label_coordinate_nodes(snr, options.nodes) if grid is None else grid
    mean = None
    if p is not None:
        t, n = finite_size(t, c, p)
        mean = mean_part(f, t, a, w, p, n)
    m = len(a)
    h1, r2 = kernel_parts(f, t * np.outer(a, a))
    H = SlopeKernel.of(h1)
    R = r2 * w[None, :] / c
    diag_slope = kernel_parts(f, t * a * a)[0]
    Lam = np.zeros((m, 3, 3), complex)
    Lam[:, 0, 0] = 1.0
    Lam[:, 0, 1] = Lam[:, 1, 0] = -diag_slope
    Lam[:, 1, 2] = Lam[:, 2, 1] = -1.0
    if mean is not None:  # the model removes the mean kernel's diagonal, which the low-rank block holds
        Lam[:, 0, 1] -= mean.diagonal
        Lam[:, 1, 0] -= mean.diagonal
    Lam += 1j * EPS * np.eye(3)
    G, it, converged = _iterate(-1j * np.tile(np.eye(3), (m, 1, 1)), _Pencil(Lam, w, H, R, c, delta, mean),
                                options.tol, options.maxiter)
    return DysonSolution(a, w, 1.0 - G[:, 0, 0].real, it, converged)


class _Pencil(NamedTuple):
    """The fixed data of the Dyson equation: ``Lambda(a)`` per node, the weights, the slope kernel, the kernel
    noise's profile ``R``, ``c``, the ridge term ``delta`` and the kernel's mean part (or None)."""

    Lam: np.ndarray
    w: np.ndarray
    H: SlopeKernel
    R: np.ndarray
    c: float
    delta: float
    mean: MeanPart | None


def _iterate(G: np.ndarray, pencil: _Pencil, tol: float, maxiter: int) -> tuple[np.ndarray, int, bool]:
    """The damped, Anderson-mixed fixed-point iteration from ``G``: the iterate, iterations used, converged."""
    Lam, w, H, R, c, delta, mean = pencil
    mixer = _Anderson(ANDERSON_DEPTH)
    it = 0
    for it in range(1, maxiter + 1):
        G_new = _token_resolvent(Lam - _self_energy(G, w, H, R, c, delta), mean)
        if np.abs(G_new - G).max() < tol * (1 + np.abs(G_new).max()):
            return 0.5 * G_new + 0.5 * G, it, True
        G = mixer.next(G, G_new)
    return G, it, False


#: iterates that the Anderson mixing of :func:`solve_leverage` remembers (0: plain damped iteration)
ANDERSON_DEPTH = 6
#: relative step below which the mixing starts (farther out, extrapolating can throw the iterate away near ``c = 1``)
ANDERSON_START = 1e-5


class _Anderson:
    """Anderson acceleration of the damped map ``x -> (x + F(x)) / 2``: the next iterate is the damped step of the
    combination of the last ``depth`` iterates whose residuals ``F(x) - x`` have the least norm (least squares),
    once the relative step is below :data:`ANDERSON_START` (plain damped steps before).
    When the residual grows, the history is dropped and the next step is the plain damped one (a safeguard, not a
    guarantee of monotone progress; convergence is checked on the plain residual either way)."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.xs: list[np.ndarray] = []
        self.rs: list[np.ndarray] = []
        self.last = np.inf

    def next(self, x: np.ndarray, fx: np.ndarray) -> np.ndarray:
        damped = 0.5 * fx + 0.5 * x
        if np.abs(fx - x).max() > ANDERSON_START * (1 + np.abs(fx).max()):  # far out: plain damped steps
            self.xs, self.rs, self.last = [], [], np.inf
            return damped
        r = (fx - x).ravel()
        norm = float(np.linalg.norm(r))
        if norm > self.last:  # the residual grew: forget the history
            self.xs, self.rs = [], []
        self.last = norm
        self.xs = (self.xs + [x.ravel()])[-(self.depth + 1):]
        self.rs = (self.rs + [r])[-(self.depth + 1):]
        if len(self.rs) < 2:
            return damped
        dR = np.stack([self.rs[k + 1] - self.rs[k] for k in range(len(self.rs) - 1)], axis=1)
        dX = np.stack([self.xs[k + 1] - self.xs[k] for k in range(len(self.xs) - 1)], axis=1)
        coef = np.linalg.lstsq(dR, r, rcond=None)[0]
        out = x.ravel() - dX @ coef + 0.5 * (r - dR @ coef)
        return out.reshape(x.shape) if np.all(np.isfinite(out)) else damped
