"""Numeric solvers as sympy functions: :meth:`theory.AttentionModel.error` of a symbolic ``gamma`` or ``c``.

The deterministic equivalents of paper B's attention have no closed form (they solve a fixed-point system).  With a
sympy symbol in place of ``gamma`` (or of the model's ``c``), :meth:`theory.AttentionModel.error` returns a
:class:`NumericFunction` (a ``sympy.Function`` of ``(gamma, c)``; activation and options fixed in its class) that
behaves like any sympy function:

* **evaluation**: when both arguments are numbers and one is a ``Float`` (as ``sin(0.5)`` does), and on ``evalf`` /
  ``sympy.N``, by the same solver (``model.error(gamma).subs(gamma, 0.01)`` is ``model.error(0.01)``), to the
  solver's double precision (about ``1e-12`` relative) whatever precision ``evalf`` is asked for.  Exact numbers
  (``Rational(1, 100)``) stay unevaluated until ``evalf``.
* **derivatives in gamma** (``sympy.diff``): the ``k``-th derivative is another :class:`NumericFunction`, ``k!``
  times the ``k``-th Taylor coefficient of the implicit-function derivatives (:func:`theory.null_system_taylor`,
  :meth:`theory.AttentionModel.error_taylor`); the derivative in ``c`` stays an unevaluated ``Derivative``.
* **series** (``sympy.series(E, gamma, gamma0, n)`` at a number ``gamma0 > 0``): the Taylor polynomial of order
  ``n - 1`` at ``gamma0`` from these derivatives plus ``O((gamma - gamma0)^n)``, a local expansion whose radius is
  the distance from ``gamma0`` to the nearest complex singularity (at most ``gamma0`` where the small-``gamma`` law is
  ``C sqrt(gamma)``, e.g. tanh at ``c > 1``).
* **lambdify**: a printer hook (``_numpycode``; ``_pythoncode``, ``_mpmathcode`` for ``"math"``, ``"mpmath"``) prints
  a call of :func:`numeric_function_values` (no ``modules`` mapping needed), which solves the ``gamma`` grid of each
  distinct ``c`` in one continuation of the solver.
* **plot** (``sympy.plot``): through lambdify (it passes complex ``x + 0j``, accepted when the imaginary part is 0).

Printing shows the call that built the function (``attention_error(gamma, 2, 'tanh')``); derivatives print as sympy's
``Derivative(...)`` (``Subs(Derivative(...), ...)`` at a point).  The classes are made at run time (one per activation
and options), so these objects do not pickle.

>>> import sympy as sp
>>> from theory import AttentionModel
>>> from theory.symbols import gamma
>>> E = AttentionModel(2, "tanh").error(gamma)
>>> sp.diff(E, gamma, 2)
Derivative(attention_error(gamma, 2, 'tanh'), (gamma, 2))
>>> taylor = sp.series(E, gamma, 0.1, 3).removeO()       # order 2 at gamma0 = 0.1
>>> round(float(taylor.subs(gamma, 0.11)), 4), round(float(E.subs(gamma, 0.11)), 4)
(0.3304, 0.3304)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import sympy as sp
from sympy.core.function import ArgumentIndexError

from .validation import ArgumentTypeError, describe, to_sympy

__all__ = ["NumericFunction", "numeric_function_values", "is_symbolic"]


def is_symbolic(value: Any) -> bool:
    """True for a sympy object with free symbols (a number, sympy or not, is not symbolic)."""
    return isinstance(value, sp.Basic) and bool(value.free_symbols)


@dataclass(frozen=True)
class NumericSpec:
    """What a :class:`NumericFunction` computes: a public numeric function of ``(gamma, c)`` with fixed options.

    ``name`` and ``arguments`` (the fixed trailing arguments as ``(keyword, value)`` pairs, ``keyword`` ``None`` for a
    positional one; hashable values) identify the function and print it; ``values(gamma, c)`` (a 1-d float array and a
    float) and ``taylor(gamma0, c, order)`` (the Taylor coefficients in ``gamma`` at ``gamma0``) compute it. Two specs
    with the same name and arguments are the same function.
    """

    name: str
    arguments: tuple
    values: Callable[[np.ndarray, float], np.ndarray] = field(compare=False, hash=False, repr=False)
    taylor: Callable[[float, float, int], np.ndarray] = field(compare=False, hash=False, repr=False)

    def call_text(self, gamma: str, c: str) -> str:
        """``name(gamma, c, arguments...)`` as text."""
        parts = [gamma, c] + [repr(v) if k is None else f"{k}={v!r}" for k, v in self.arguments]
        return f"{self.name}({', '.join(parts)})"


#: classes by id, for the code that lambdify generates (:func:`numeric_function_values`)
_CLASSES: dict[int, type] = {}


class NumericFunction(sp.Function):
    """A numeric solution ``E(gamma, c)`` as a sympy function (base class; see the module docstring).

    Subclasses are made by :func:`numeric_function` for one :class:`NumericSpec` and one derivative order (``order``
    ``k``: the ``k``-th derivative in ``gamma``); users get instances from the public functions.
    """

    nargs = 2
    spec: NumericSpec
    order: int = 0
    key: int = -1

    @classmethod
    def eval(cls, gamma: sp.Expr, c: sp.Expr) -> Any:
        """The value (a ``Float``) when both arguments are numbers and one is a ``Float``; else unevaluated."""
        if gamma.is_Number and c.is_Number and (gamma.is_Float or c.is_Float):
            return sp.Float(float(cls._values(np.asarray([float(gamma)]), float(c))[0]))
        return None

    @classmethod
    def _values(cls, gamma: np.ndarray, c: float) -> np.ndarray:
        """Values on a 1-d ``gamma`` array at one ``c``: the solver (order 0) or ``k!`` times Taylor coefficients."""
        if cls.order == 0:
            return np.atleast_1d(np.asarray(cls.spec.values(gamma, c), dtype=float))
        k = cls.order
        return np.array([math.factorial(k) * _taylor(cls.spec, float(g), float(c), k)[k] for g in gamma])

    def _eval_evalf(self, prec: int) -> Any:
        gamma, c = (a.evalf(prec) for a in self.args)
        if not (gamma.is_Number and c.is_Number):
            return None
        return sp.Float(float(self._values(np.asarray([float(gamma)]), float(c))[0]))

    def fdiff(self, argindex: int = 1) -> sp.Expr:
        """``d/dgamma`` (``argindex = 1``): the function of the next derivative order; ``d/dc`` is not available."""
        if argindex != 1:
            raise ArgumentIndexError(self, argindex)  # sympy keeps d/dc as an unevaluated Derivative
        return numeric_function(self.spec, self.order + 1)(*self.args)

    def _eval_is_extended_real(self) -> Any:
        return True if (self.args[0].is_positive and self.args[1].is_positive) else None

    # ------------------------------------------------------------------ printing
    def _as_notation(self) -> sp.Expr:
        """The sympy object this prints as: itself, ``Derivative`` of order 0, or ``Subs`` of it at a point."""
        if self.order == 0:
            return self
        gamma, c = self.args
        base = numeric_function(self.spec, 0)
        if isinstance(gamma, sp.Symbol):
            return sp.Derivative(base(gamma, c), (gamma, self.order))
        g = sp.Dummy("gamma")
        return sp.Subs(sp.Derivative(base(g, c), (g, self.order)), g, gamma)

    def _sympystr(self, printer: Any) -> str:
        if self.order:
            return printer._print(self._as_notation())
        return self.spec.call_text(*(printer._print(a) for a in self.args))

    def _latex(self, printer: Any) -> str:
        if self.order:
            return printer._print(self._as_notation())
        gamma, c = (printer._print(a) for a in self.args)
        return rf"\operatorname{{{self.spec.name}}}\left({gamma}, {c}\right)".replace("_", r"\_")

    def _numpycode(self, printer: Any) -> str:
        call = printer._module_format("theory.symbolic.numeric_function_values")
        return f"{call}({self.key}, {printer._print(self.args[0])}, {printer._print(self.args[1])})"

    _pythoncode = _mpmathcode = _numpycode


@functools.lru_cache(maxsize=256)
def _taylor(spec: NumericSpec, gamma0: float, c: float, order: int) -> np.ndarray:
    """``spec.taylor`` (cached: ``sympy.series`` asks for each order at the same point)."""
    return np.asarray(spec.taylor(gamma0, c, order), dtype=float)


@functools.lru_cache(maxsize=None)
def numeric_function(spec: NumericSpec, order: int = 0) -> type:
    """The :class:`NumericFunction` subclass of ``spec`` for the ``order``-th derivative in ``gamma`` (cached:
    equal specs give the same class, so equal calls give equal sympy objects)."""
    key = len(_CLASSES)
    cls = type(f"{spec.name}_d{order}" if order else spec.name, (NumericFunction,),
               {"spec": spec, "order": order, "key": key, "__module__": __name__})
    _CLASSES[key] = cls
    return cls


def numeric_function_values(key: int, gamma: Any, c: Any) -> Any:
    """Vectorised values of the :class:`NumericFunction` class ``key`` (the code ``lambdify`` generates calls this).

    Parameters
    ----------
    key : int, the class's ``key``.
    gamma, c : number or array_like
        Broadcast against each other; complex values are accepted when their imaginary part is zero (sympy's
        plotting passes ``x + 0j``).

    Returns
    -------
    float or numpy.ndarray
        One solver continuation per distinct ``c`` over its ``gamma`` values.
    """
    cls = _CLASSES[key]
    g, cc = np.broadcast_arrays(_real_array("gamma", gamma), _real_array("c", c))
    out = np.empty(g.shape)
    flat_g, flat_c, flat_out = g.ravel(), cc.ravel(), out.reshape(-1)
    for cv in np.unique(flat_c):
        sel = flat_c == cv
        flat_out[sel] = cls._values(flat_g[sel], float(cv))
    return float(out) if out.ndim == 0 else out


def _real_array(name: str, value: Any) -> np.ndarray:
    """A float array of ``value``; a complex ``value`` only with zero imaginary parts."""
    arr = np.asarray(value)
    if arr.dtype.kind == "c":
        if np.any(arr.imag != 0):
            raise ValueError(f"{name} must be real, got {describe(value)}")
        arr = arr.real
    if arr.dtype.kind not in "iuf":
        raise ArgumentTypeError(f"{name} must be a real number or an array of real numbers, got {describe(value)}")
    return arr.astype(float)


def symbolic_arguments(gamma: Any, c: Any, c_range: tuple[float, float]) -> tuple[sp.Expr, sp.Expr]:
    """Checked sympy ``(gamma, c)`` of a symbolic call: ``gamma > 0`` and ``c`` in ``c_range`` (numbers) or sympy
    expressions whose assumptions allow it."""
    return to_sympy("gamma", gamma, low=0, low_open=True), to_sympy("c", c, low=c_range[0], high=c_range[1])
