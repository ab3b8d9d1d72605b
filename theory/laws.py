"""Spectral laws of paper B as ``scipy.stats``-style objects: the Marchenko–Pastur law and the kernel's law.

Each law has ``pdf``, ``cdf``, ``ppf``, ``rvs(size, random_state)``, ``stieltjes``, ``support``, ``moment``,
``mean``, ``var`` and ``std``.  The public methods check their arguments (:mod:`theory.validation`) and return a
float for a scalar, an array for an array; the private ``_pdf``, ``_cdf``, ... compute on checked float arrays.  The
densities and Stieltjes transforms are those of :mod:`theory.marchenko_pastur` and :mod:`theory.kernel_spectrum`.

Conventions of the Marchenko–Pastur law
---------------------------------------
``Z in R^{p x n}`` standard Gaussian, ``c = p / n``.  Two matrices share their nonzero eigenvalues:

* ``matrix="n"``: ``Z^T Z / n`` (``n x n``), the law ``mu_c`` of :mod:`theory.marchenko_pastur`
  (:func:`theory.mp_density`, :func:`theory.mp_stieltjes`): continuous part of mass ``min(c, 1)`` on
  ``[(1 - sqrt c)^2, (1 + sqrt c)^2]`` and an atom ``max(1 - c, 0)`` at 0 (``n - p`` zero eigenvalues out of
  ``n`` when ``p < n``); mean ``c``, variance ``c``.
* ``matrix="p"``: ``Z Z^T / n`` (``p x p``), the convention of freealg (``MarchenkoPastur(lam=c)``) and scikit-rmt
  (``ratio = p / n``): ``Z Z^T / n = c (Z Z^T / p)`` and ``Z Z^T / p`` is ``Z'^T Z' / n'`` for ``Z' = Z^T`` (``n' = p``,
  ratio ``1 / c``), so this law is ``c`` times ``mu_{1/c}``.  Same continuous support; density ``mp_density(x, c) / c``
  (freealg's ``sqrt((lam_+ - x)(x - lam_-)) / (2 pi c x)``), continuous mass ``min(1, 1/c)``, atom ``max(1 - 1/c, 0)``
  at 0; mean 1, variance ``c``.

In both conventions ``pdf`` is the density of the continuous part (an atom has no density); ``cdf`` includes the atom (a
jump at 0) and ``ppf`` is the left-continuous inverse ``inf {x : cdf(x) >= q}`` (0 for ``q <= atom``).

The kernel's law
----------------
:class:`KernelSpectralLaw` is the limiting spectral law of ``K = f(X^T X / sqrt p) / sqrt p`` (``n x n``, diagonal
removed) of :mod:`theory.kernel_spectrum`: a free convolution of a scaled, shifted Marchenko–Pastur law with a
semicircle of variance ``(nu - a1^2) / c``.  Its ``cdf`` is ``(1/pi) Im`` of the integral of the Stieltjes transform
:func:`theory.kernel_stieltjes` along a half circle in the upper half-plane from a point left of the support to ``x``
(Cauchy: the same as integrating the density ``Im m / pi`` along the real axis, without its square-root edges), by
Gauss–Legendre quadrature in ``t`` with ``theta = pi t^2`` (nodes clustered at ``x``). For ``nu = a1^2`` (a linear
``f``) the law is the affine image ``a1 (lambda / c - 1)`` of ``mu_c`` and is computed from :class:`MarchenkoPastur`.

Samples
-------
``rvs(size)`` returns the eigenvalues of *one* sampled matrix with ``size`` eigenvalues (in random order; the
aspect ratio is rounded: ``p = round(c n)`` or ``n = round(p / c)``, at least 1).  Their empirical law converges to
the law, faster than that of an i.i.d. sample (eigenvalues repel), but they are not independent draws.

>>> mp = MarchenkoPastur(0.5, matrix="p")
>>> round(mp.pdf(1.0), 4), round(MarchenkoPastur(0.5).pdf(1.0), 4)
(0.4211, 0.2105)
>>> round(mp.cdf(1.0), 4)
0.576
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .validation import (as_array, as_float, check_array_memory, check_choice, check_random_state, check_size,
                         finite_result, numeric_errors)
from .activations import check_activation, hermite_moments, numpy_activation
from .kernel_spectrum import _density as _kernel_density
from .kernel_spectrum import _stieltjes_core, _validate
from .marchenko_pastur import _density, _support, mp_atom, mp_moment, mp_stieltjes

__all__ = ["MarchenkoPastur", "KernelSpectralLaw"]

_MATRICES = ("n", "p")
#: bytes per input point of the vectorised methods (for the memory budget)
_BYTES_PER_POINT = 256
#: Gauss-Legendre nodes of the kernel cdf's contour integral (theta = pi t^2); see KernelSpectralLaw.cdf
_ARC_NODES = 160
#: highest moment order of the kernel law (the free moment-cumulant recursion costs k^3 / 6 operations)
_MAX_KERNEL_MOMENT = 100
#: most bisection steps of ppf (it stops when the brackets are adjacent floats: about 60 steps, more near 0)
_BISECTION_STEPS = 1100


# ============================================================================ shared helpers
def _check_sample_size(size: Any) -> tuple[int, ...]:
    """``size`` of ``rvs``: a positive integer or a tuple of them (the eigenvalue count is their product)."""
    shape = size if isinstance(size, tuple) else (size,)
    if not shape:
        raise ValueError("size must be a positive integer or a non-empty tuple of them, got ()")
    return tuple(check_size("size", s, 1, "max_dimension") for s in shape)


def _out(values: np.ndarray, like: np.ndarray) -> Any:
    """A float for a 0-d input, else the array (scipy's convention)."""
    values = np.asarray(values, dtype=float).reshape(like.shape)
    return float(values) if values.ndim == 0 else values


def _gram_eigenvalues(rows: int, cols: int, side: str, rng: Any) -> np.ndarray:
    """Eigenvalues of ``Z^T Z / cols`` (``side="n"``, ``cols`` of them) or ``Z Z^T / cols`` (``side="p"``, ``rows``)
    for a standard Gaussian ``Z`` (``rows x cols``): those of the smaller Gram matrix padded with exact zeros."""
    small = min(rows, cols)
    check_array_memory("size", rows * cols + 2 * small * small, 8)
    Z = rng.standard_normal((rows, cols))
    G = (Z @ Z.T if rows <= cols else Z.T @ Z) / cols
    eig = np.maximum(np.linalg.eigvalsh(G), 0.0)  # a Gram matrix is >= 0: negative values are roundoff
    total = cols if side == "n" else rows
    return np.concatenate([eig, np.zeros(total - small)])


def _bisect_increasing(func: Any, target: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Smallest ``x`` in ``[lo, hi]`` with ``func(x) >= target`` (``func`` non-decreasing), by bisection until the
    brackets are adjacent floats (at most :data:`_BISECTION_STEPS` halvings)."""
    lo, hi = np.array(lo, dtype=float), np.array(hi, dtype=float)
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        done = (mid <= lo) | (mid >= hi)
        if np.all(done):
            break
        up = func(mid) >= target
        hi = np.where(up & ~done, mid, hi)
        lo = np.where(up | done, lo, mid)
    return hi


class _SpectralLaw:
    """The public, validating methods shared by the laws; subclasses implement the private ``_`` methods."""

    def pdf(self, x: Any) -> Any:
        """Density of the continuous part at ``x`` (a number or an array of finite reals)."""
        xa = as_array("x", x, bytes_per_element=_BYTES_PER_POINT)
        with numeric_errors(f"{self!r}.pdf", x=x):
            return _out(self._pdf(xa.ravel()), xa)

    def cdf(self, x: Any) -> Any:
        """``P(X <= x)`` (atoms included) at ``x`` (a number or an array of finite reals)."""
        xa = as_array("x", x, bytes_per_element=_BYTES_PER_POINT)
        with numeric_errors(f"{self!r}.cdf", x=x):
            return _out(np.clip(self._cdf(xa.ravel()), 0.0, 1.0), xa)

    def ppf(self, q: Any) -> Any:
        """Quantile ``inf {x : cdf(x) >= q}`` of ``q`` in ``[0, 1]`` (a number or an array)."""
        qa = as_array("q", q, low=0, high=1, bytes_per_element=_BYTES_PER_POINT)
        with numeric_errors(f"{self!r}.ppf", q=q):
            return _out(self._ppf(qa.ravel()), qa)

    def rvs(self, size: Any = 1, random_state: Any = None) -> Any:
        """Eigenvalues of one sampled matrix with ``prod(size)`` eigenvalues, shuffled, in an array of shape
        ``size`` (see the module docstring, "Samples").

        Parameters
        ----------
        size : int or tuple of int, shape of the output; its product (``>= 1``) is the matrix size.
        random_state : None, int or numpy.random.Generator
            ``None`` (fresh entropy), a seed ``>= 0`` (``numpy.random.default_rng``) or a generator, used and advanced.
        """
        shape = _check_sample_size(size)
        rng = check_random_state("random_state", random_state)
        total = math.prod(shape)
        if total > 2**40:
            raise ValueError(f"size must have a product of at most 2**40 eigenvalues, got {total}")
        sample = self._sample(total, rng)
        return rng.permutation(sample).reshape(shape)

    def stieltjes(self, z: Any) -> Any:
        """Stieltjes transform ``m(z) = int dP(x) / (x - z)`` at ``z`` (real or complex number or array)."""
        za = as_array("z", z, complex_ok=True, bytes_per_element=_BYTES_PER_POINT)
        with numeric_errors(f"{self!r}.stieltjes", z=z):
            m = np.asarray(self._stieltjes(za.ravel())).reshape(za.shape)
        return m.item() if m.ndim == 0 else m

    def moment(self, k: Any) -> float:
        """``E X^k`` for an integer ``k >= 0``."""
        k = check_size("k", k, 0, "max_moment_order")
        return finite_result(f"{type(self).__name__}.moment", float(self._moment(k)), k=k)

    def mean(self) -> float:
        """``E X``."""
        return self.moment(1)

    def var(self) -> float:
        """``Var X``."""
        return self.moment(2) - self.moment(1) ** 2

    def std(self) -> float:
        """Standard deviation."""
        return math.sqrt(max(self.var(), 0.0))


# ============================================================================ Marchenko-Pastur
class MarchenkoPastur(_SpectralLaw):
    """Marchenko–Pastur law of ``Z^T Z / n`` (``matrix="n"``) or ``Z Z^T / n`` (``matrix="p"``), ``c = p / n``.

    Parameters
    ----------
    c : float, aspect ratio ``p / n > 0`` (finite).
    matrix : {"n", "p"}
        ``"n"`` (default): the ``n x n`` matrix, the law of :func:`theory.mp_density` (atom ``max(1 - c, 0)`` at 0);
        ``"p"``: the ``p x p`` matrix of freealg and scikit-rmt (atom ``max(1 - 1/c, 0)``).  See the module docstring.

    Attributes
    ----------
    c, matrix : the parameters.
    atom : mass at 0.
    edges : ``(lam_-, lam_+)``, the support of the continuous part.

    Examples
    --------
    >>> mp = MarchenkoPastur(0.5)
    >>> mp.atom, mp.mean(), mp.var()
    (0.5, 0.5, 0.5)
    >>> round(mp.cdf(0.0), 12), round(float(mp.ppf(0.75)), 4)
    (0.5, 0.8305)
    >>> x = mp.rvs(200, random_state=0)
    >>> x.shape, int((x == 0).sum())
    ((200,), 100)
    """

    def __init__(self, c: float, matrix: str = "n"):
        self.c = as_float("c", c, low=0, low_open=True)
        self.matrix = check_choice("matrix", matrix, _MATRICES)
        # the law is scale * mu_ratio (module docstring): ratio c, scale 1 ("n"); ratio 1/c, scale c ("p")
        self._ratio, self._scale = (self.c, 1.0) if self.matrix == "n" else (1.0 / self.c, self.c)
        self.atom = mp_atom(self._ratio)
        lo, hi = _support(self._ratio)
        self.edges = (self._scale * lo, self._scale * hi)

    def __repr__(self) -> str:
        return f"MarchenkoPastur(c={self.c!r}, matrix={self.matrix!r})"

    def support(self) -> tuple[float, float]:
        """Smallest interval holding the law: ``(0, lam_+)`` with an atom at 0, else ``(lam_-, lam_+)``."""
        return (0.0 if self.atom > 0 else self.edges[0], self.edges[1])

    # ------------------------------------------------------------------ private: checked float arrays
    def _pdf(self, x: np.ndarray) -> np.ndarray:
        return _density(x / self._scale, self._ratio) / self._scale

    def _cdf(self, x: np.ndarray) -> np.ndarray:
        return self.atom * (x >= 0) + _mp_continuous_cdf(x / self._scale, self._ratio)

    def _ppf(self, q: np.ndarray) -> np.ndarray:
        lo, hi = _support(self._ratio)
        target = q - self.atom
        t = np.where(target <= 0, 0.0 if self.atom > 0 else lo, self._continuous_quantile(np.maximum(target, 0.0)))
        return self._scale * np.where(q >= 1, hi, t)  # the cdf rounds to 1 just below lam_+ (a 3/2-power edge)

    def _continuous_quantile(self, mass: np.ndarray) -> np.ndarray:
        """``t`` in the support of ``mu_ratio``'s continuous part with ``int_{lam_-}^t mp_density = mass``."""
        lo, hi = _support(self._ratio)
        return _bisect_increasing(lambda u: _mp_continuous_cdf(u, self._ratio), mass, np.full(mass.shape, lo),
                                  np.full(mass.shape, hi))

    def _stieltjes(self, z: np.ndarray) -> Any:
        return np.asarray(mp_stieltjes(z / self._scale, self._ratio)) / self._scale

    def _moment(self, k: int) -> float:
        return self._scale**k * float(mp_moment(k, self._ratio))

    def _sample(self, total: int, rng: Any) -> np.ndarray:
        if self.matrix == "n":  # Z^T Z / n with n = total
            return _gram_eigenvalues(max(1, round(self.c * total)), total, "n", rng)
        return _gram_eigenvalues(total, max(1, round(total / self.c)), "p", rng)  # Z Z^T / n with p = total


def _mp_continuous_cdf(t: np.ndarray, r: float) -> np.ndarray:
    """``int_{lam_-}^t mp_density(u, r) du`` (closed form; ``min(r, 1)`` beyond the support).

    With ``a, b = lam_-, lam_+``, ``m = (a + b) / 2 = 1 + r`` and ``sqrt(a b) = |1 - r|``, the substitution
    ``u = m - h cos(phi)`` (``h = (b - a) / 2``) gives ``int_a^t sqrt((b - u)(u - a)) / u du =
    sqrt((b - t)(t - a)) + m theta - 2 sqrt(a b) arctan(sqrt(b (t - a) / (a (b - t))))`` with
    ``theta = 2 arctan(sqrt((t - a) / (b - t)))``; at ``t = b`` it is ``pi (m - sqrt(a b)) = 2 pi min(r, 1)``.
    """
    a, b = _support(r)
    inside = (t > a) & (t < b)
    u = np.where(inside, t, 0.5 * (a + b))
    left, right = np.sqrt(u - a), np.sqrt(b - u)
    theta = 2.0 * np.arctan2(left, right)
    phi = np.arctan2(np.sqrt(b) * left, np.sqrt(a) * right)
    g = (left * right + (1.0 + r) * theta - 2.0 * abs(1.0 - r) * phi) / (2.0 * np.pi)
    return np.where(inside, g, np.where(t >= b, min(r, 1.0), 0.0))


# ============================================================================ the kernel's law
class KernelSpectralLaw(_SpectralLaw):
    """Limiting spectral law of the kernel ``K = f(X^T X / sqrt p) / sqrt p`` of :mod:`theory.kernel_spectrum`.

    Parameters
    ----------
    c : float, ``p / n > 0`` (finite).
    activation : str or sympy expression, optional
        Registry name or expression of ``f`` (centred internally); ``rvs`` then samples the kernel matrix itself.
    a1, nu : float, optional
        ``E[xi f(xi)]`` and ``E f(xi)^2 > 0`` (``nu >= a1^2``), instead of ``activation``; ``rvs`` then samples
        the Gaussian equivalent ``a1 (X^T X / p - diag) + sqrt((nu - a1^2) / p) W`` (``W`` symmetric, standard
        Gaussian off the diagonal, zero diagonal), which has the same limiting law.

    Attributes
    ----------
    c, a1, nu, sf2 (``nu - a1^2``), activation (or ``None``).

    Notes
    -----
    ``pdf`` is :func:`theory.kernel_density` at its boundary value (``eta = 0``), ``stieltjes``
    :func:`theory.kernel_stieltjes` (upper half-plane), ``cdf`` the contour integral of the module docstring (absolute
    error about ``1e-12`` away from the edges, measured against quadrature of the density), ``ppf`` its bisection,
    ``support`` the edges where the density exceeds ``1e-6`` on a grid, refined by bisection on the density, and
    ``moment`` the free moment-cumulant recursion with the free cumulants ``kappa_1 = 0``, ``kappa_2 = nu / c``,
    ``kappa_j = a1^j / c^(j-1)`` (``j >= 3``; the R-transform of the module docstring of :mod:`theory.kernel_spectrum`),
    for ``k <= 100``.  With ``nu = a1^2`` every method goes through :class:`MarchenkoPastur` (module docstring).

    Examples
    --------
    >>> law = KernelSpectralLaw(2.0, "tanh")
    >>> round(law.mean(), 12), round(law.var(), 4)
    (0.0, 0.1971)
    >>> round(law.cdf(0.0), 4)
    0.5686
    """

    def __init__(self, c: float, activation: Any = None, *, a1: Any = None, nu: Any = None):
        self.c = as_float("c", c, low=0, low_open=True)
        if activation is not None:
            if a1 is not None or nu is not None:
                raise ValueError("give either activation or the constants a1, nu, not both")
            check_activation(activation, "activation")
            hm = hermite_moments(activation)
            a1, nu = float(hm.a1), float(hm.nu)
        elif a1 is None or nu is None:
            raise ValueError("give activation, or both constants a1 and nu")
        self.activation = activation
        _, self.a1, self.sf2 = _validate(self.c, a1, nu)
        self.nu = float(nu)
        # nu = a1^2: the affine Marchenko-Pastur law (kernel_stieltjes treats sf2 < 1e-14 a1^2 as 0 the same way)
        self._mp = MarchenkoPastur(self.c) if self.sf2 <= 1e-14 * self.a1**2 else None

    def __repr__(self) -> str:
        if self.activation is not None:
            return f"KernelSpectralLaw(c={self.c!r}, activation={self.activation!r})"
        return f"KernelSpectralLaw(c={self.c!r}, a1={self.a1!r}, nu={self.nu!r})"

    def support(self) -> tuple[float, float]:
        """Smallest interval holding the law (its outer edges; the law may have gaps inside)."""
        if self._mp is not None:
            ends = [self._to_kernel(np.array(e)) for e in self._mp.support()]
            return float(min(ends)), float(max(ends))
        return self._edges

    # ------------------------------------------------------------------ the affine Marchenko-Pastur case
    def _to_kernel(self, lam: np.ndarray) -> np.ndarray:
        """``a1 (lambda / c - 1)``."""
        return self.a1 * (lam / self.c - 1.0)

    def _to_mp(self, x: np.ndarray) -> np.ndarray:
        """The inverse map ``lambda = c (x / a1 + 1)``."""
        return self.c * (x / self.a1 + 1.0)

    def _affine_cdf(self, x: np.ndarray) -> np.ndarray:
        lam = self._to_mp(x)
        if self.a1 > 0:
            return self._mp._cdf(lam)
        # decreasing map: P(X <= x) = P(lambda >= lam) = 1 - cdf(lam) + P(lambda = lam); the atom sits at 0
        return 1.0 - self._mp._cdf(lam) + self._mp.atom * (lam == 0)

    def _affine_ppf(self, q: np.ndarray) -> np.ndarray:
        if self.a1 > 0:
            return self._to_kernel(self._mp._ppf(q))
        # decreasing map: ppf(q) = g(sup {t : P(lambda < t) <= 1 - q}); the atom at lambda = 0 is the top x = -a1
        w = self._mp.atom
        cont = self._to_kernel(self._mp._continuous_quantile(np.clip(1.0 - q - w, 0.0, None)))
        return np.where(1.0 - q < w, -self.a1, cont)

    # ------------------------------------------------------------------ private: checked float arrays
    def _pdf(self, x: np.ndarray) -> np.ndarray:
        if self._mp is not None:
            return self.c / abs(self.a1) * self._mp._pdf(self._to_mp(x))
        return _kernel_density(x, self.c, self.a1, self.sf2, 0.0)

    def _stieltjes(self, z: np.ndarray) -> Any:
        if self._mp is not None:  # m(z) = int dmu(lam) / (a1 (lam/c - 1) - z) = (c / a1) m_MP(c (z / a1 + 1))
            return self.c / self.a1 * np.asarray(self._mp._stieltjes(self._to_mp(z)))
        if np.any(z.imag < 0):
            raise ValueError("z must have Im z >= 0 (the branch is defined on the upper half-plane)")
        return _stieltjes_core(np.asarray(z, dtype=np.complex128), self.c, self.a1, self.sf2)

    def _cdf(self, x: np.ndarray) -> np.ndarray:
        if self._mp is not None:
            return self._affine_cdf(x)
        left, right = self._bounds()
        out = np.where(x >= right, 1.0, 0.0)
        mid = (x > left) & (x < right)
        if np.any(mid):
            out[mid] = _contour_cdf(x[mid], left, lambda z: _stieltjes_core(z, self.c, self.a1, self.sf2))
        return out

    def _ppf(self, q: np.ndarray) -> np.ndarray:
        if self._mp is not None:
            return self._affine_ppf(q)
        lo, hi = self._edges
        x = _bisect_increasing(self._cdf, q, np.full(q.shape, lo), np.full(q.shape, hi))
        return np.where(q <= 0, lo, np.where(q >= 1, hi, x))

    def _moment(self, k: int) -> float:
        if k > _MAX_KERNEL_MOMENT:
            raise ValueError(f"k must be in [0, {_MAX_KERNEL_MOMENT}] for the kernel law (an integer), got {k}")
        return _free_moments(_kernel_free_cumulants(k, self.c, self.a1, self.nu))[k]

    def _sample(self, total: int, rng: Any) -> np.ndarray:
        n, p = total, max(1, round(self.c * total))
        check_array_memory("size", p * n + 3 * n * n, 8)
        X = rng.standard_normal((p, n))
        if self.activation is not None:
            K = numpy_activation(self.activation, centered=True)(X.T @ X / math.sqrt(p)) / math.sqrt(p)
        else:
            W = np.triu(rng.standard_normal((n, n)), 1)
            K = self.a1 * (X.T @ X / p) + math.sqrt(self.sf2 / p) * (W + W.T)
        np.fill_diagonal(K, 0.0)
        return np.linalg.eigvalsh(K)

    # ------------------------------------------------------------------ support
    def _bounds(self) -> tuple[float, float]:
        """An interval ``[-r, r]`` strictly containing the law: ``r = |a1| (1 + 1/sqrt c)^2 + 2 sqrt(sf2 / c) + 1``."""
        r = abs(self.a1) * (1 + 1 / math.sqrt(self.c)) ** 2 + 2 * math.sqrt(self.sf2 / self.c) + 1.0
        return -r, r

    @functools.cached_property
    def _edges(self) -> tuple[float, float]:
        """The outer grid points of :meth:`_bounds` (4001 of them) where the density exceeds 1e-6, refined by
        bisection on the density."""
        left, right = self._bounds()
        xs = np.linspace(left, right, 4001)
        inside = xs[_kernel_density(xs, self.c, self.a1, self.sf2, 1e-9) > 1e-6]
        if inside.size == 0:
            raise RuntimeError("KernelSpectralLaw: no mass found on the grid of its support")
        lo, hi, step = float(inside.min()), float(inside.max()), 2 * right / 4000  # the edge is within one step
        return (_refine_edge(self._pdf, lo - step, lo), _refine_edge(self._pdf, hi + step, hi))


def _refine_edge(pdf: Any, outside: float, inside: float, threshold: float = 1e-6) -> float:
    """Bisection between a point outside the law and one inside for where the density crosses ``threshold``.  Near a
    square-root edge the density is ``C sqrt(d)`` inside (it crosses ``threshold`` at ``d = (threshold / C)^2``) and, at
    the boundary value ``Im z = eta = 1e-12``, about ``eta / (pi sqrt(d))`` outside (it crosses at
    ``d = (eta / (pi threshold))^2``): ``threshold = 1e-6 ~ sqrt(eta)`` puts both within about ``1e-12`` of the edge for
    ``C ~ 1``."""
    a, b = outside, inside
    for _ in range(_BISECTION_STEPS):
        m = 0.5 * (a + b)
        if m in (a, b):  # adjacent floats
            break
        if float(pdf(np.array([m]))[0]) > threshold:
            b = m
        else:
            a = m
    return float(a)


@functools.lru_cache(maxsize=1)
def _arc_rule() -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``theta = pi t^2`` and weights ``2 pi t w`` of Gauss–Legendre in ``t`` on ``[0, 1]``."""
    t, w = np.polynomial.legendre.leggauss(_ARC_NODES)
    t, w = 0.5 * (t + 1.0), 0.5 * w
    return np.pi * t**2, 2.0 * np.pi * t * w


def _contour_cdf(x: np.ndarray, left: float, stieltjes: Any, chunk: int = 256) -> np.ndarray:
    """``(1/pi) Im int_Gamma m(z) dz``, ``Gamma`` the upper half circle from ``left`` (left of the law) to ``x``.
    ``z(theta) = (left + x)/2 + R e^{i theta}``, ``R = (x - left)/2``, ``theta`` from ``pi`` to 0:
    ``int_Gamma m dz = -int_0^pi m(z(theta)) i R e^{i theta} d theta``."""
    theta, weight = _arc_rule()
    out = np.empty(x.size)
    e = np.exp(1j * theta)
    for s in range(0, x.size, chunk):
        xs = x[s:s + chunk, None]
        R = 0.5 * (xs - left)
        z = 0.5 * (xs + left) + R * e
        m = np.asarray(stieltjes(z))
        out[s:s + chunk] = np.imag(-(m * 1j * R * e) @ weight) / np.pi
    return out


def _kernel_free_cumulants(k: int, c: float, a1: float, nu: float) -> list[float]:
    """``kappa_0 .. kappa_k`` of the kernel law: ``0, 0, nu / c, a1^3 / c^2, ..., a1^j / c^(j-1)``."""
    return [0.0, 0.0, nu / c] + [a1**j / c ** (j - 1) for j in range(3, k + 1)] if k >= 2 else [0.0] * (k + 1)


def _free_moments(kappa: list[float]) -> list[float]:
    """Moments ``m_0 .. m_k`` from free cumulants: ``M(z) = 1 + sum_s kappa_s z^s M(z)^s`` order by order.
    ``P[s][d] = [z^d] M^s`` is filled as the moments become known: ``m_n = sum_{s=1}^n kappa_s P[s][n - s]``."""
    k = len(kappa) - 1
    m = [1.0] + [0.0] * k
    P = [[1.0] + [0.0] * k] + [[0.0] * (k + 1) for _ in range(k)]  # P[0] = M^0 = 1
    for n in range(1, k + 1):
        for s in range(1, n + 1):  # [z^(n-s)] M^s needs m_0 .. m_(n-s), all known
            d = n - s
            P[s][d] = sum(m[j] * P[s - 1][d - j] for j in range(d + 1))
        m[n] = sum(kappa[s] * P[s][n - s] for s in range(1, n + 1))
    return m
