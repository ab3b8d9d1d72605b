"""Piecewise-polynomial bases on ``K`` equal-length intervals (private helpers of paper A).

A function of the class ``Phi^s_K`` of the paper is a polynomial of degree ``<= s`` on each of
``K`` equal-length intervals of a range ``[lo, hi]``. On interval ``k`` (of length ``h = (hi-lo)/K``)
we use the *orthonormal Legendre* basis in the local coordinate ``t = 2 (u - lo)/h - 2k - 1`` in
``[-1, 1]``: ``L_l(t) = sqrt(2l+1) P_l(t)``, ``l = 0..s``. Column ``k (s+1) + l`` of a design matrix
is ``1{u in I_k} L_l(t)``. Within one interval the Gram matrix under the uniform law is the identity,
so the least-squares problems are well conditioned whatever ``K`` and ``s``.

The helpers are written with plain arithmetic so that they work on NumPy arrays and on torch tensors
(autograd flows through the local coordinate ``t``; the interval index is piecewise constant).

Inputs are validated by :mod:`theory.validation` (the project's one layer) without changing their type or
dtype: points are real floating arrays or tensors of finite values (NumPy integer arrays and numbers are read
as float64), ``degree`` an integer in ``[0, MAX_DEGREE]``, ``n_intervals`` an integer in ``[1, MAX_INTERVALS]``,
``lo < hi`` finite, and the ``degree + 1`` value arrays (and the dense basis matrix) within the memory budget
``theory.get_limits().memory_budget_bytes``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from theory.validation import (
    ArgumentTypeError,
    as_array,
    as_float,
    as_int,
    check_array_memory,
    check_flag,
    describe,
    finite_result,
)

__all__: list[str] = []  # private module

#: highest polynomial degree ``s`` of the local basis (Bonnet's recursion runs ``s`` Python steps per call)
MAX_DEGREE = 1000
#: most intervals ``K`` (far more than any estimator uses; interval indices are int64)
MAX_INTERVALS = 2**31 - 1


def _points(name: str, u: Any) -> tuple[Any, float]:
    """``(u, max |u|)``: ``u`` itself when it is a real floating NumPy array or torch tensor of finite values; other
    numbers and array-likes as a float64 array (:func:`theory.validation.as_array`).  One pass over the values
    (the maximum is NaN or inf exactly when a value is)."""
    if _is_torch(u):
        if not u.dtype.is_floating_point:
            raise ArgumentTypeError(f"{name} must be a tensor of finite real floating values, got dtype {u.dtype}")
        top = float(u.detach().abs().max()) if u.numel() else 0.0
        if not math.isfinite(top):
            raise ValueError(f"{name} must contain finite values only (no NaN or inf)")
        return u, top
    if not (isinstance(u, np.ndarray) and u.dtype.kind == "f"):
        u = as_array(name, u, allow_empty=True)
    top = float(np.max(np.abs(u))) if u.size else 0.0
    if not math.isfinite(top):
        raise ValueError(f"{name} must contain finite values only (no NaN or inf), got {describe(u)}")
    return u, top


def _check_growth(t_max: float, degree: int) -> None:
    """Refuse local coordinates so far outside ``[-1, 1]`` that the degree-``degree`` polynomials (``|P_l(t)| <=
    (2 |t|)^l``) or their derivatives would overflow float64."""
    if degree and degree * math.log(2.0 * max(t_max, 1.0)) + math.log(degree + 1.0) > 650.0:
        raise ValueError(f"t has values up to {t_max:.3g} in magnitude: polynomials of degree {degree} overflow "
                         f"float64 there (t is a local coordinate, in [-1, 1] inside the range)")


def _size(u: Any) -> int:
    return int(u.numel()) if _is_torch(u) else int(np.size(u))


def _check_degree(degree: Any, n_points: int) -> int:
    """``degree`` in ``[0, MAX_DEGREE]``, its ``degree + 1`` arrays of ``n_points`` values within the budget."""
    degree = as_int("degree", degree, 0, MAX_DEGREE)
    check_array_memory(f"degree, t (degree + 1 = {degree + 1} arrays of {n_points} values)", n_points,
                       8 * 2 * (degree + 1))
    return degree


def _bound(name: str, value: Any) -> float:
    """A range end: a finite real number or a 0-d tensor of one."""
    if _is_torch(value):
        if value.numel() != 1:
            raise ValueError(f"{name} must be a number or a 0-d tensor, got a tensor of shape {tuple(value.shape)}")
        return as_float(name, float(value.detach()))
    return as_float(name, value)


def _check_reach(u_max: float, a: float, b: float, n_intervals: int) -> None:
    """Refuse points whose interval coordinate ``(u - lo) / h`` (``[lo, hi] = [a, b]``) would overflow float64."""
    if (u_max + abs(a)) / ((b - a) / n_intervals) > 1e300:
        raise ValueError(f"u has values up to {u_max:.3g} in magnitude, too far from [lo, hi] = [{a:g}, {b:g}] with "
                         f"{n_intervals} intervals (the interval coordinate overflows float64)")


def _check_range(lo: Any, hi: Any, n_intervals: Any) -> tuple[int, float, float]:
    """``lo < hi`` finite (numbers or 0-d tensors) and ``n_intervals`` in ``[1, MAX_INTERVALS]``; returns
    ``(n_intervals, float(lo), float(hi))``."""
    a, b = _bound("lo", lo), _bound("hi", hi)
    if not b > a:
        raise ValueError(f"hi must be > lo, got lo={a!r}, hi={b!r}")
    if not math.isfinite((b - a) / 1.0):
        raise ValueError(f"hi - lo must be finite, got lo={a!r}, hi={b!r}")
    return as_int("n_intervals", n_intervals, 1, MAX_INTERVALS), a, b


def legendre_values(t: Any, degree: int) -> list:
    """Orthonormal Legendre polynomials ``sqrt(2l+1) P_l(t)``, ``l = 0..degree``.

    Parameters
    ----------
    t : ndarray or torch.Tensor
        Local coordinates (any shape).
    degree : int
        Highest degree ``s >= 0``.

    Returns
    -------
    list
        ``degree + 1`` arrays/tensors of the shape of ``t`` (Bonnet's recursion).
    """
    t, t_max = _points("t", t)
    degree = _check_degree(degree, _size(t))
    _check_growth(t_max, degree)
    p_prev = t * 0 + 1.0
    out = [p_prev]
    if degree >= 1:
        p_cur = t * 1.0
        out.append(p_cur)
        for n in range(1, degree):
            p_next = ((2 * n + 1) * t * p_cur - n * p_prev) / (n + 1)
            out.append(p_next)
            p_prev, p_cur = p_cur, p_next
    return [p * math.sqrt(2 * l + 1) for l, p in enumerate(out)]


def legendre_derivatives(t: Any, degree: int) -> list:
    """Derivatives ``d/dt sqrt(2l+1) P_l(t)``, ``l = 0..degree`` (``P'_{n+1} = P'_{n-1} + (2n+1) P_n``)."""
    t, t_max = _points("t", t)
    degree = _check_degree(degree, 2 * _size(t))  # values and derivatives
    _check_growth(t_max, degree)
    p = [t * 0 + 1.0]
    if degree >= 1:
        p.append(t * 1.0)
        for n in range(1, degree):
            p.append(((2 * n + 1) * t * p[n] - n * p[n - 1]) / (n + 1))
    dp = [t * 0.0]
    if degree >= 1:
        dp.append(t * 0 + 1.0)
        for n in range(1, degree):
            dp.append(dp[n - 1] + (2 * n + 1) * p[n])
    return [q * math.sqrt(2 * l + 1) for l, q in enumerate(dp)]


def locate(u: Any, lo: Any, hi: Any, n_intervals: int, clamp: bool = True):
    """Interval index and local coordinate of ``u`` for ``K`` equal intervals of ``[lo, hi]``.

    Parameters
    ----------
    u : ndarray or torch.Tensor
        Points.
    lo, hi : float or 0-d tensor
        The range (``hi > lo``).
    n_intervals : int
        ``K``.
    clamp : bool
        If True points outside ``[lo, hi]`` are moved to the nearest end (constant extension);
        if False they keep their coordinate ``|t| > 1`` on the end interval (polynomial extension).

    Returns
    -------
    (index, t)
        Integer interval index in ``0..K-1`` (same library as ``u``) and ``t`` in ``[-1, 1]``
        (outside only for ``clamp=False``).
    """
    u, u_max = _points("u", u)
    n_intervals, a, b = _check_range(lo, hi, n_intervals)
    clamp = check_flag("clamp", clamp)
    if not clamp:  # clamped points far away are simply at an end
        _check_reach(u_max, a, b, n_intervals)
    h = (hi - lo) / n_intervals
    z = (u - lo) / h  # in [0, K] inside the range
    if _is_torch(u):
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
    coef = _coefficients(coef)
    n_intervals, n_local = coef.shape
    idx, t = locate(u, lo, hi, n_intervals, clamp=clamp)
    vals = legendre_values(t, n_local - 1)
    out = 0.0
    for l, v in enumerate(vals):
        out = out + coef[idx, l] * v
    return finite_result("evaluate", out, u=u, coef=coef) if isinstance(out, np.ndarray) else out


def basis_matrix(u: np.ndarray, lo: float, hi: float, n_intervals: int, degree: int,
                 clamp: bool = True) -> np.ndarray:
    """Dense basis matrix ``(len(u), K (s+1))`` (NumPy; small problems and tests; within the memory budget)."""
    u = as_array("u", u, allow_empty=True).ravel()
    n_intervals = _check_range(lo, hi, n_intervals)[0]
    degree = as_int("degree", degree, 0, MAX_DEGREE)
    check_array_memory(f"u, n_intervals, degree ({u.size} x {n_intervals * (degree + 1)} basis matrix)", u.size,
                       8 * (n_intervals * (degree + 1) + 2 * (degree + 1)))
    idx, t = locate(u, lo, hi, n_intervals, clamp=clamp)
    vals = legendre_values(t, degree)
    out = np.zeros((u.size, n_intervals * (degree + 1)))
    rows = np.arange(u.size)
    for l, v in enumerate(vals):
        out[rows, idx * (degree + 1) + l] = v
    return out


def _coefficients(coef: Any) -> Any:
    """``coef``: a 2-d real floating array or tensor ``(K, s+1)`` of finite values (``K >= 1``, ``s <= MAX_DEGREE``)."""
    if not (_is_torch(coef) or isinstance(coef, np.ndarray)):
        coef = as_array("coef", coef)
    if coef.ndim != 2 or coef.shape[0] < 1 or not 1 <= coef.shape[1] <= MAX_DEGREE + 1:
        raise ValueError(f"coef must be a 2-d array of shape (K, s + 1) with K >= 1 and 0 <= s <= {MAX_DEGREE}, got "
                         f"shape {tuple(coef.shape)}")
    return _points("coef", coef)[0] if _is_torch(coef) or coef.dtype.kind == "f" else as_array("coef", coef)


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")
