"""Truncated Taylor series ("jets") in one variable, for implicit derivatives of the solvers (private helper).

A :class:`Jet` of order ``K`` holds the coefficients ``a_0 .. a_K`` of ``a(s) = sum_k a_k s^k + O(s^{K+1})``;
each coefficient may be a number or an array (all coefficients share one shape), so one jet carries a whole
quadrature grid or a matrix.  Sums, products, quotients, integer powers, matrix products and matrix inverses
follow the rules of power series (Cauchy products; the reciprocal and the inverse order by order), so a
rational expression evaluated on jets returns the Taylor coefficients of its value.  ``sympy.lambdify`` of a
rational expression (operators only) runs on jets unchanged.

The coefficients are the derivatives divided by factorials: ``a_k = a^(k)(0) / k!``.

>>> s = Jet.variable(2.0, 3)          # s -> 2 + s
>>> (1 / s).coefficients.round(4)     # 1/(2 + s) = 1/2 - s/4 + s^2/8 - s^3/16
array([ 0.5   , -0.25  ,  0.125 , -0.0625])
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Jet"]


class Jet:
    """Truncated power series ``sum_{k <= order} a_k s^k`` with number or array coefficients.

    Parameters
    ----------
    coefficients : array_like, shape ``(order + 1, *shape)``, ``a_0 .. a_order`` (``a_0`` the value).
    """

    __array_ufunc__ = None  # numpy operands defer to the Jet's reflected operators

    def __init__(self, coefficients: Any):
        self.coefficients = np.asarray(coefficients)

    # ------------------------------------------------------------------ construction
    @classmethod
    def constant(cls, value: Any, order: int) -> Jet:
        """The constant ``value`` (number or array) as a jet of ``order``."""
        v = np.asarray(value)
        out = np.zeros((order + 1, *v.shape), dtype=np.result_type(v, float))
        out[0] = v
        return cls(out)

    @classmethod
    def variable(cls, value: float, order: int) -> Jet:
        """``value + s``: the expansion variable around ``value``."""
        out = cls.constant(value, order)
        if order >= 1:
            out.coefficients[1] = 1.0
        return out

    @property
    def order(self) -> int:
        """Highest power kept."""
        return self.coefficients.shape[0] - 1

    # ------------------------------------------------------------------ helpers
    def _lift(self, other: Any) -> Jet:
        if isinstance(other, Jet):
            if other.order != self.order:
                raise ValueError(f"jets of orders {self.order} and {other.order} do not combine")
            return other
        return Jet.constant(other, self.order)

    def _aligned(self, other: Jet) -> tuple[np.ndarray, np.ndarray]:
        """Both coefficient arrays with their coefficient shapes aligned on the right (numpy broadcasting)."""
        a, b = self.coefficients, other.coefficients
        nd = max(a.ndim, b.ndim)
        return (a.reshape(a.shape[:1] + (1,) * (nd - a.ndim) + a.shape[1:]),
                b.reshape(b.shape[:1] + (1,) * (nd - b.ndim) + b.shape[1:]))

    def _cauchy(self, other: Jet, op: Any) -> np.ndarray:
        """Coefficients of the product, ``op`` the coefficient product (``np.multiply`` or ``np.matmul``)."""
        a, b = self._aligned(other) if op is np.multiply else (self.coefficients, other.coefficients)
        return np.stack([sum(op(a[j], b[k - j]) for j in range(k + 1)) for k in range(self.order + 1)])

    # ------------------------------------------------------------------ arithmetic
    def __add__(self, other: Any) -> Jet:
        a, b = self._aligned(self._lift(other))
        return Jet(a + b)

    __radd__ = __add__

    def __neg__(self) -> Jet:
        return Jet(-self.coefficients)

    def __sub__(self, other: Any) -> Jet:
        return self + (-self._lift(other))

    def __rsub__(self, other: Any) -> Jet:
        return self._lift(other) - self

    def __mul__(self, other: Any) -> Jet:
        if not isinstance(other, Jet):  # a constant scales every coefficient
            a, b = self._aligned(Jet(np.asarray(other)[None]))
            return Jet(a * b)
        return Jet(self._cauchy(other if other.order == self.order else self._lift(other), np.multiply))

    __rmul__ = __mul__

    def reciprocal(self) -> Jet:
        """``1 / a``: ``r_0 = 1 / a_0``, ``r_k = -(sum_{j=1}^k a_j r_{k-j}) / a_0``."""
        a = self.coefficients
        r = [1.0 / a[0]]
        for k in range(1, self.order + 1):
            r.append(-sum(a[j] * r[k - j] for j in range(1, k + 1)) * r[0])
        return Jet(np.stack(r))

    def __truediv__(self, other: Any) -> Jet:
        if not isinstance(other, Jet):
            a, b = self._aligned(Jet(np.asarray(other)[None]))
            return Jet(a / b)
        return self * other.reciprocal()

    def __rtruediv__(self, other: Any) -> Jet:
        return self.reciprocal() * other

    def __pow__(self, exponent: Any) -> Jet:
        e = int(exponent)
        if e != exponent:
            raise ValueError(f"jets take integer powers only, got {exponent!r}")
        if e < 0:
            return (self ** (-e)).reciprocal()
        out = Jet.constant(np.ones_like(self.coefficients[0]), self.order)
        for _ in range(e):
            out = out * self
        return out

    # ------------------------------------------------------------------ matrices
    def __matmul__(self, other: Any) -> Jet:
        return Jet(self._cauchy(self._lift(other), np.matmul))

    def __rmatmul__(self, other: Any) -> Jet:
        return self._lift(other) @ self

    def inverse(self) -> Jet:
        """Matrix inverse: ``S_0 = M_0^{-1}``, ``S_k = -S_0 sum_{j=1}^k M_j S_{k-j}``."""
        m = self.coefficients
        s0 = np.linalg.inv(m[0])
        s = [s0]
        for k in range(1, self.order + 1):
            s.append(-s0 @ sum(m[j] @ s[k - j] for j in range(1, k + 1)))
        return Jet(np.stack(s))

    def integrate(self, weights: np.ndarray) -> Jet:
        """``sum_i w_i a(s; node_i)`` for coefficients of shape ``(order + 1, n_nodes)``."""
        return Jet(self.coefficients @ weights)

    def derivative(self) -> Jet:
        """``d/ds``, a jet of one order less."""
        k = np.arange(1, self.order + 1).reshape((-1,) + (1,) * (self.coefficients.ndim - 1))
        return Jet(k * self.coefficients[1:])

    def truncate(self, order: int) -> Jet:
        """The same series kept to ``order`` (at most the jet's own order)."""
        return Jet(self.coefficients[: order + 1])
