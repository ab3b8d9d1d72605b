"""Paper A's data model: an interacting particle system (IPS) read as one attention layer.

A sample is ``N`` tokens ``X = (X_1..X_N)``, ``X_i in R^d``, and

    Y_i = R_{g*}[X]_i + eta_i,   R_g[X]_i = 1/(N-1) sum_{j != i} g(X_i, X_j),
    g*(x, y) = phi*(x^T A* y),

with ``A*`` of rank ``r`` and ``phi*`` beta-Hölder. :class:`IPSModel` fixes one such ground truth (all structural
randomness comes from ``seed``) and samples ``(X, Y)`` from it.  The project's conventions (the paper does not state
them: the scale of ``A*``, the B-spline and lacunary truths, the token and noise laws) are in
``docs/paper_a_estimator.md`` ("Data model").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from scipy.interpolate import BSpline

from theory.validation import (ArgumentTypeError, as_array, as_float, as_int, check_array_memory, check_choice,
                               check_random_state, check_seed)


def _uniform_pm1(gen: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """``gen.uniform(-1, 1, shape)`` bit for bit (numpy's is ``-1 + 2 r``, ``r = gen.random()``; ``2 r`` is exact), in
    0.6x its time (the tokens of paper A's designs and trials)."""
    r = gen.random(shape)
    r *= 2.0
    r -= 1.0
    return r


def bilinear_forms(x: np.ndarray, A: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x^T A y`` over the leading axes of ``x, y`` (..., d): one BLAS product ``x A``, then a row-wise dot (not the
    three-operand ``einsum("...k,kl,...l->...")``, numpy's unblocked loop, several times slower:
    ``benchmarks.erm.bilinear_forms``; the two agree to rounding)."""
    return np.einsum("...l,...l->...", x @ A, y)


#: largest count field of :class:`IPSModel` (``d``, ``N``, ``degree``, ``n_knots``, ...)
MAX_COUNT = 2**31 - 1

__all__ = ["IPSModel", "TOKEN_LAWS", "TRUTHS"]

TOKEN_LAWS = ("uniform", "gaussian", "anisotropic", "exchangeable")
TRUTHS = ("bspline", "hard")
NOISE_LAWS = ("gaussian", "rademacher")


class _PiecewiseTable:
    """A spline of degree ``k`` on ``n`` equal intervals of ``[-L, L]``, zero outside, as one polynomial per interval
    in the local coordinate ``t in [0, 1]`` (its Taylor coefficients at the interval's left end): an evaluation is
    one division and ``k`` multiply-adds, about 3x faster than scipy's de Boor recursion; the two agree to rounding."""

    def __init__(self, spline: BSpline, L: float, n: int) -> None:
        h, k = 2.0 * L / n, int(spline.k)
        left = np.linspace(-L, L, n + 1)[:-1]
        c = np.array([spline(left, nu=m) * h**m / math.factorial(m) for m in range(k, -1, -1)])  # highest first
        dc = c[:-1] * np.arange(k, 0, -1.0)[:, None] / h  # d/du = (1/h) d/dt
        zero = np.zeros((k + 1, 1))  # column n: outside [-L, L]
        self.coef, self.dcoef = np.hstack([c, zero]), np.hstack([dc, zero[:-1]])
        self.L, self.n, self.inv_h = float(L), int(n), 1.0 / h

    def __call__(self, u: np.ndarray, derivative: bool = False) -> np.ndarray:
        x = u.reshape(-1)
        s = np.clip((x + self.L) * self.inv_h, 0.0, float(self.n))
        i = np.minimum(s.astype(np.intp), self.n - 1)
        t = s - i
        i[(x < -self.L) | (x > self.L)] = self.n
        table = self.dcoef if derivative else self.coef
        out = table[0].take(i)
        for row in table[1:]:
            out *= t
            out += row.take(i)
        return out.reshape(u.shape)


@dataclass(eq=False)
class IPSModel:
    """Ground truth and sampler of paper A's model ``Y_i = 1/(N-1) sum_{j!=i} phi*(X_i^T A* X_j) + eta_i``.

    Parameters
    ----------
    d : int
        Token dimension, ``>= 1``.
    N : int
        Tokens per sample, ``>= 2``.
    rank : int
        Rank ``r`` of ``A*``, ``1 <= r <= d``.
    truth : {"bspline", "hard"}
        The activation ``phi*`` (see module docstring).
    degree : int
        B-spline degree ``P >= 1`` (``beta = P - 1``; for ``"hard"`` it sets the default ``beta``).
    token_law : {"uniform", "gaussian", "anisotropic", "exchangeable"}
        Law of the tokens of one sample.
    noise : float
        Noise level ``sigma >= 0``.
    noise_law : {"gaussian", "rademacher"}
        Law of ``eta / sigma``.
    n_knots : int
        Interior knots of the B-spline truth on ``[-L, L]`` (``>= degree``), default 16; few knots make ``phi*``
        smooth at the estimator's scale (the bias ``K^{-2 beta}`` regime starts earlier).
    beta : float or None
        Smoothness of the ``"hard"`` truth (default ``degree - 1``; must be ``> 0``). For ``"bspline"`` it is
        ``degree - 1`` and may not be given otherwise.
    rho : float
        Shared-factor weight of the exchangeable law, ``0 <= rho < 1``.
    support : float
        Half-width ``L`` of the B-spline support ``[-L, L]``.
    u_quantile : float
        ``A*`` is scaled so that this quantile of ``|u|`` is 1.
    seed : int
        Seed of all structural randomness (``A*``, spline coefficients, phases, covariance).
    A_structure : {"dense", "sparse"}
        ``"dense"``: random orthonormal frames (generic ``A*``; for large ``d`` the law of ``u`` is close to a product
        of two Gaussians, heavy-tailed relative to its bulk). ``"sparse"``: ``A* = c sum_k s_k e_{a_k} e_{b_k}^T`` on
        distinct random coordinates, so the law of ``u`` does not depend on ``d`` (for the cube: a product of
        uniforms, ``|u| <= 1`` exactly, ``c`` set by the supremum, not the quantile). The estimator is not told it.

    Examples
    --------
    >>> m = IPSModel(d=5, N=4, rank=1, degree=3, seed=1)
    >>> X, Y = m.sample(100, rng=0)
    >>> X.shape, Y.shape
    ((100, 4, 5), (100, 4))
    """

    d: int
    N: int
    rank: int = 1
    truth: str = "bspline"
    degree: int = 3
    token_law: str = "uniform"
    noise: float = 0.1
    noise_law: str = "gaussian"
    n_knots: int = 16
    beta: float | None = None
    rho: float = 0.5
    support: float = 1.25
    u_quantile: float = 0.999
    seed: int = 0
    A_structure: str = "dense"
    # derived (filled in __post_init__)
    A_star: np.ndarray = field(init=False, repr=False)
    scale: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._validate()
        self.d, self.N, self.rank = int(self.d), int(self.N), int(self.rank)
        ss = np.random.SeedSequence([int(self.seed), 20260511])
        g_a, g_phi, g_cov, g_scale = (np.random.default_rng(s) for s in ss.spawn(4))
        self._init_covariance(g_cov)
        self._init_A_star(g_a, g_scale)
        self._init_truth(g_phi)

    def _validate(self) -> None:
        """Check the fields and resolve ``beta`` (the defaults of the two truths)."""
        as_int("d", self.d, 1, MAX_COUNT)
        check_array_memory("d", int(self.d) ** 2, 8)
        as_int("N", self.N, 2, MAX_COUNT)
        as_int("rank", self.rank, 1, MAX_COUNT)
        if self.rank > self.d:
            raise ValueError(f"rank must be an integer in [1, d={self.d}], got {self.rank!r}")
        check_choice("truth", self.truth, TRUTHS)
        as_int("degree", self.degree, 1, MAX_COUNT)
        check_choice("token_law", self.token_law, TOKEN_LAWS)
        as_float("noise", self.noise, low=0)
        check_choice("noise_law", self.noise_law, NOISE_LAWS)
        as_int("n_knots", self.n_knots, int(self.degree), MAX_COUNT)
        check_array_memory("n_knots", int(self.n_knots) + int(self.degree) + 1, 8)
        as_float("rho", self.rho, low=0, high=1, high_open=True)
        as_float("support", self.support, low=0, low_open=True)
        as_float("u_quantile", self.u_quantile, low=0, high=1, low_open=True, high_open=True)
        check_seed("seed", self.seed)
        if self.beta is not None:
            as_float("beta", self.beta, low=0, low_open=True)
        check_choice("A_structure", self.A_structure, ("dense", "sparse"))
        self._resolve_beta()

    def _resolve_beta(self) -> None:
        """``beta``: ``degree - 1`` for the B-spline truth (the only value allowed), else as given."""
        if self.truth == "bspline":
            if self.beta is not None and float(self.beta) != float(self.degree - 1):
                raise ValueError(
                    f"beta must be degree - 1 = {self.degree - 1} for truth='bspline', got {self.beta!r}")
            self.beta = float(self.degree - 1)
            if self.beta <= 0:
                raise ValueError("degree must be >= 2 for truth='bspline' (beta = degree - 1 > 0)")
        else:
            self.beta = float(self.degree - 1) if self.beta is None else float(self.beta)
            as_float("beta", self.beta, low=0, low_open=True)

    def _init_covariance(self, g_cov: np.random.Generator) -> None:
        """Token covariance of the anisotropic law (``_cov_sqrt``, ``_lambda``)."""
        if self.d > 1:
            lam = 10.0 ** (-2.0 * np.arange(self.d) / (self.d - 1))
        else:
            lam = np.ones(1)
        lam *= self.d / lam.sum()
        q, _ = np.linalg.qr(g_cov.standard_normal((self.d, self.d)))
        self._cov_sqrt = q * np.sqrt(lam)  # X = Z @ cov_sqrt^T  -> Cov = q diag(lam) q^T
        self._lambda = lam

    def _init_A_star(self, g_a: np.random.Generator, g_scale: np.random.Generator) -> None:
        """``A* = U0 diag(s) V0^T``, then scaled (``A_star``, ``scale``); needs the covariance."""
        svals = np.linspace(1.0, 0.5, self.rank)
        if self.A_structure == "dense":
            u0, _ = np.linalg.qr(g_a.standard_normal((self.d, self.rank)))
            v0, _ = np.linalg.qr(g_a.standard_normal((self.d, self.rank)))
        else:  # sparse: distinct coordinate axes (random), u = sum_k s_k x_{a_k} y_{b_k}
            u0 = np.eye(self.d)[:, g_a.permutation(self.d)[: self.rank]]
            v0 = np.eye(self.d)[:, g_a.permutation(self.d)[: self.rank]]
        a0 = (u0 * svals) @ v0.T
        if self.A_structure == "sparse" and self.token_law == "uniform":
            self.scale = 1.0 / float(svals.sum())  # sup over the cube of |x^T A0 y| is sum(s)
        else:
            x, y = self.sample_pairs(2**17, g_scale)
            u = bilinear_forms(x, a0, y)
            self.scale = 1.0 / float(np.quantile(np.abs(u), self.u_quantile))
        self.A_star = self.scale * a0

    def _init_truth(self, g_phi: np.random.Generator) -> None:
        """The activation: the padded B-spline, or the phases of the lacunary sum."""
        if self.truth == "bspline":
            k = self.degree
            knots = np.linspace(-self.support, self.support, self.n_knots + 2)
            n_coef = len(knots) - k - 1
            coef = g_phi.standard_normal(n_coef)
            # pad k knots and k zero coefficients on each side so that scipy's base interval is [-L, L] and the
            # spline is the full sum sum_i c_i B_i (vanishing C^{k-1} at +-L)
            h = knots[1] - knots[0]
            pad = h * np.arange(1, k + 1)
            knots = np.r_[knots[0] - pad[::-1], knots, knots[-1] + pad]
            coef = np.r_[np.zeros(k), coef, np.zeros(k)]
            self._spline = BSpline(knots, coef, k, extrapolate=False)
            self._spline_coef = coef
            self._table = _PiecewiseTable(self._spline, self.support, self.n_knots + 1)
        else:
            self._kmax = 24
            self._phases = g_phi.uniform(0.0, 2 * np.pi, self._kmax + 1)

    # ------------------------------------------------------------------ truth
    @property
    def smoothness_degree(self) -> int:
        """``s = ceil(beta) - 1``: the polynomial degree the paper's estimator uses."""
        return int(np.ceil(self.beta)) - 1

    def phi_star(self, u: Any) -> np.ndarray:
        """The activation ``phi*(u)`` (vectorised, float64, any shape; finite real ``u`` only)."""
        u = as_array("u", u, allow_empty=True)
        if self.truth == "bspline":
            return self._table(u)  # zero extension outside [-L, L] (C^{P-1})
        out = np.zeros_like(u)
        for k in range(self._kmax + 1):
            out += 2.0 ** (-k * self.beta) * np.cos(np.pi * 2.0**k * u + self._phases[k])
        return out

    def phi_star_derivative(self, u: Any) -> np.ndarray:
        """``phi*'(u)``: exact for the B-spline truth; for the lacunary one (not differentiable where ``beta <= 1``)
        the central difference of step ``1e-6``."""
        u = as_array("u", u, allow_empty=True)
        if self.truth == "bspline":
            return self._table(u, derivative=True)
        h = 1e-6
        return (self.phi_star(u + h) - self.phi_star(u - h)) / (2 * h)

    def interaction(self, x: Any, y: Any) -> np.ndarray:
        """``g*(x, y) = phi*(x^T A* y)`` for arrays ``x, y`` of shape ``(..., d)``."""
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if x.shape[-1] != self.d or y.shape[-1] != self.d:
            raise ValueError(f"x and y must have last dimension d={self.d}, got {x.shape}, {y.shape}")
        return self.phi_star(bilinear_forms(x, self.A_star, y))

    def pair_values(self, X: Any, A: np.ndarray | None = None) -> np.ndarray:
        """``u_{m,i,j} = X^m_i^T A X^m_j`` for all ``i, j`` (diagonal included), shape ``(M, N, N)``."""
        X = self._check_X(X)
        A = self.A_star if A is None else np.asarray(A, dtype=np.float64)
        return np.einsum("mik,kl,mjl->mij", X, A, X, optimize=True)

    def forward(self, g: Callable[[np.ndarray, np.ndarray], np.ndarray] | None, X: Any,
                chunk: int = 2**22) -> np.ndarray:
        """The forward operator ``R_g[X]_i = 1/(N-1) sum_{j != i} g(X_i, X_j)``, shape ``(M, N)``.

        Parameters
        ----------
        g : callable or None
            Vectorised interaction ``g(x, y)`` on arrays of shape ``(..., d)`` (``None``: ``g*``, from
            :meth:`pair_values` without forming the pairs).
        X : array ``(M, N, d)``
        chunk : int
            Maximal number of pair coordinates (``pairs * d``) formed at once.
        """
        X = self._check_X(X)
        chunk = as_int("chunk", chunk, 1, 2**62)
        if g is not None and not callable(g):
            raise ArgumentTypeError(f"g must be a callable g(x, y) or None, got {type(g).__name__}")
        M, N, d = X.shape
        ii, jj = np.nonzero(~np.eye(N, dtype=bool))
        if g is None:  # phi* on the N (N - 1) pairs only (its evaluation dominates; the diagonal stays 0)
            U = self.pair_values(X)
            G = np.zeros_like(U)
            G[:, ii, jj] = self.phi_star(U[:, ii, jj])
            return G.sum(axis=2) / (N - 1)
        out = np.empty((M, N))
        step = max(1, chunk // (len(ii) * d))
        for a in range(0, M, step):
            Xb = X[a:a + step]
            vals = np.asarray(g(Xb[:, ii, :], Xb[:, jj, :]), dtype=np.float64)
            if vals.shape != (Xb.shape[0], len(ii)):
                raise ValueError(f"g must return one value per pair, got shape {vals.shape}")
            acc = np.zeros((Xb.shape[0], N))
            for i in range(N):  # N is small: a loop over token positions, not over samples
                acc[:, i] = vals[:, ii == i].sum(axis=1)
            out[a:a + step] = acc / (N - 1)
        return out

    # --------------------------------------------------------------- sampling
    def sample_tokens(self, M: int, rng: Any = None, n_tokens: int | None = None) -> np.ndarray:
        """``M`` samples of ``n_tokens`` (default ``N``) tokens, shape ``(M, n, d)`` (``rng`` as in :meth:`sample`)."""
        M = as_int("M", M, 1)
        n = self.N if n_tokens is None else as_int("n_tokens", n_tokens, 1)
        check_array_memory("M * n_tokens" if n_tokens is not None else "M", M * n * self.d, 8)
        gen = check_random_state("rng", rng)
        shape = (M, n, self.d)
        law = self.token_law
        if law == "uniform":
            return _uniform_pm1(gen, shape)
        if law == "gaussian":
            return gen.standard_normal(shape)
        if law == "anisotropic":
            return gen.standard_normal(shape) @ self._cov_sqrt.T
        # exchangeable: shared factor W per sample
        U = _uniform_pm1(gen, shape)
        W = _uniform_pm1(gen, (int(M), 1, self.d))
        return np.sqrt(1.0 - self.rho) * U + np.sqrt(self.rho) * W

    def sample_noise(self, shape: tuple, rng: Any = None) -> np.ndarray:
        """``noise * xi`` with ``xi`` standard Gaussian or Rademacher (``rng`` as in :meth:`sample`)."""
        gen = check_random_state("rng", rng)
        if self.noise_law == "gaussian":
            xi = gen.standard_normal(shape)
        else:
            xi = gen.choice(np.array([-1.0, 1.0]), size=shape)
        return self.noise * xi

    def sample(self, M: int, rng: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``M`` i.i.d. samples ``(X, Y)``: ``X`` of shape ``(M, N, d)``, ``Y`` of shape ``(M, N)``.

        Parameters
        ----------
        M : int, ``>= 1``
        rng : None, int or numpy.random.Generator
            Source of randomness: an integer is a seed (reproducible), a generator is consumed, ``None``
            draws fresh entropy from the operating system (see :func:`theory.validation.check_random_state`).

        Returns
        -------
        (X, Y) : tuple of ndarray
        """
        gen = check_random_state("rng", rng)
        X = self.sample_tokens(M, gen)
        Y = self.forward(None, X) + self.sample_noise((int(M), self.N), gen)
        return X, Y

    def sample_pairs(self, n: int, rng: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """``n`` independent pairs ``(x, y)`` of distinct tokens of one sample (the law ``rho``), two arrays ``(n, d)``
        (``rng`` as in :meth:`sample`).

        For every token law here the law of a pair of distinct tokens does not depend on ``N`` (exchangeable laws
        included), so a pair is the two tokens of a 2-token sample.
        """
        n = as_int("n", n, 1)
        check_array_memory("n", 2 * n * self.d, 8)
        T = self.sample_tokens(int(n), rng, n_tokens=2)
        return T[:, 0, :], T[:, 1, :]

    # ----------------------------------------------------------------- helpers
    def _check_X(self, X: Any) -> np.ndarray:
        X = as_array("X", X)
        if X.ndim != 3 or X.shape[2] != self.d or X.shape[1] < 2:
            raise ValueError(f"X must have shape (M, N>=2, d={self.d}), got {X.shape}")
        if not np.all(np.isfinite(X)):
            raise ValueError("X must be finite (no NaN or inf)")
        return X
