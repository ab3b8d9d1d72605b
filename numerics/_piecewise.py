"""Piecewise-polynomial bases on ``K`` equal-length intervals (private helpers of paper A).

A function of the class ``Phi^s_K`` of the paper is a polynomial of degree ``<= s`` on each of ``K`` equal-length
intervals of a range ``[lo, hi]``. On interval ``k`` (of length ``h = (hi-lo)/K``) we use the *orthonormal Legendre*
basis in the local coordinate ``t = 2 (u - lo)/h - 2k - 1`` in ``[-1, 1]``: ``L_l(t) = sqrt(2l+1) P_l(t)``,
``l = 0..s``. Column ``k (s+1) + l`` of a design matrix is ``1{u in I_k} L_l(t)``. Within one interval the Gram matrix
under the uniform law is the identity, so the least-squares problems are well conditioned whatever ``K`` and ``s``.

The helpers use plain arithmetic, so they work on NumPy arrays and on torch tensors (autograd flows through ``t``; the
interval index is piecewise constant), and check nothing: their callers pass checked values.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from theory.validation import finite_result

__all__: list[str] = []  # private module

def _legendre(t: Any, degree: int) -> list:
    """``P_0 .. P_degree`` at ``t`` (Bonnet's recursion)."""
    p = [t * 0 + 1.0]
    if degree >= 1:
        p.append(t * 1.0)
        for n in range(1, degree):
            p.append(((2 * n + 1) * t * p[n] - n * p[n - 1]) / (n + 1))
    return p


def legendre_values(t: Any, degree: int) -> list:
    """Orthonormal Legendre polynomials ``sqrt(2l+1) P_l(t)``, ``l = 0..degree``, at ``t`` (array or tensor, any
    shape): ``degree + 1`` arrays/tensors of the shape of ``t``."""
    return [p * math.sqrt(2 * l + 1) for l, p in enumerate(_legendre(t, degree))]


def legendre_derivatives(t: Any, degree: int) -> list:
    """Derivatives ``d/dt sqrt(2l+1) P_l(t)``, ``l = 0..degree`` (``P'_{n+1} = P'_{n-1} + (2n+1) P_n``)."""
    p = _legendre(t, degree)
    dp = [t * 0.0]
    if degree >= 1:
        dp.append(t * 0 + 1.0)
        for n in range(1, degree):
            dp.append(dp[n - 1] + (2 * n + 1) * p[n])
    return [q * math.sqrt(2 * l + 1) for l, q in enumerate(dp)]


def locate(u: Any, lo: Any, hi: Any, n_intervals: int, clamp: bool = True):
    """``(index, t)`` of ``u`` (array or tensor) for ``K = n_intervals`` equal intervals of ``[lo, hi]``: the interval
    in ``0..K-1`` (same library as ``u``) and ``t`` in ``[-1, 1]``.  ``clamp``: points outside ``[lo, hi]`` move to the
    nearest end (constant extension); else they keep ``|t| > 1`` on the end interval (polynomial extension)."""
    h = (hi - lo) / n_intervals
    z = (u - lo) / h  # in [0, K] inside the range
    if type(u).__module__.startswith("torch"):
        import torch

        if clamp:
            z = torch.clamp(z, 0.0, float(n_intervals))
        idx = torch.clamp(torch.floor(z.detach()), 0, n_intervals - 1).to(torch.long)
    else:
        if clamp:
            z = np.clip(z, 0.0, float(n_intervals))
        idx = np.clip(np.floor(z), 0, n_intervals - 1).astype(np.int64)
    t = 2.0 * (z - idx) - 1.0
    return idx, t


def evaluate(u: Any, coef: Any, lo: Any, hi: Any, clamp: bool = True):
    """Evaluate the piecewise polynomial with coefficient array ``coef`` of shape ``(K, s+1)`` (finite reals)."""
    n_intervals, n_local = coef.shape
    idx, t = locate(u, lo, hi, n_intervals, clamp=clamp)
    vals = legendre_values(t, n_local - 1)
    out = 0.0
    for l, v in enumerate(vals):
        out = out + coef[idx, l] * v
    return finite_result("evaluate", out, u=u, coef=coef) if isinstance(out, np.ndarray) else out
