"""Activation registry and Gaussian Hermite data of paper B.

Conventions
-----------
* ``xi ~ N(0, 1)``; ``He_k`` are the probabilists' Hermite polynomials (``He_1 = x``,
  ``He_2 = x^2 - 1``, ...), orthogonal with ``E[He_j(xi) He_k(xi)] = k! [j = k]``.
* Normalised Hermite coefficients: ``a_k = E[f(xi) He_k(xi)] / sqrt(k!)`` so that
  ``E[f(xi)^2] = sum_k a_k^2`` (Parseval).
* ``a0 = E f(xi)`` (mean of the *raw* activation), ``a1 = E[xi f(xi)]``, ``nu = E[(f(xi) - a0)^2]`` (second moment of
  the centred activation) and ``sf2 = nu - a1^2`` (the "nonlinear" energy, ``s_f^2`` of docs/claims.md).
* ``erf`` means ``erf(x)`` (not ``erf(x / sqrt 2)``): it is the one that reproduces the first reconstruction's
  ``a1 = 2 / sqrt(3 pi) = 0.6515`` and ``nu = (2/pi) arcsin(2/3) = 0.4646``.  (For
  ``erf(x/sqrt 2)`` one would get ``a1 = sqrt(1/pi) = 0.5642`` and ``nu = 1/3``.)

Exactness
---------
Coefficients are exact sympy numbers where a closed form exists: polynomials and ``relu, sign, cos, sin`` by direct
sympy integration against the Gaussian, ``erf, gelu`` through Stein's identity ``E[f He_k] = E[f^(k)]`` (after ``k``
derivatives the integrand is a polynomial times a Gaussian, which sympy integrates at once).  ``tanh``, ``silu``,
``softplus`` and arbitrary user expressions use mpmath quadrature (30 digits, split at 0) and return ``sympy.Float``.

>>> hm = hermite_moments("tanh")
>>> round(hm.a1, 4), round(hm.nu, 4)
(0.6057, 0.3943)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable, Union

import mpmath
import numpy as np
import scipy.special
import sympy as sp

from .validation import ArgumentTypeError, as_float, check_choice, check_flag, check_real, check_size, describe
from .symbols import x

__all__ = ["ACTIVATIONS", "ActivationSpec", "HermiteMoments", "activation", "hermite_coefficients", "hermite_moments",
           "numpy_activation", "activation_asymptotic_slope", "check_activation"]

ActivationLike = Union[str, sp.Basic]

_SQRT2 = sp.sqrt(2)

#: how the Gaussian moments of an activation are computed (:class:`ActivationSpec`)
METHODS = ("integrate", "stein", "piecewise", "trig", "numeric")


@dataclass(frozen=True)
class ActivationSpec:
    """Everything the toolkit needs of one named activation, in one entry of :data:`_SPECS`.

    Parameters
    ----------
    name : str, the name users pass (``activation="tanh"``).
    expr : sympy expression in ``theory.symbols.x``, ``f(x)``, uncentred.
    method : one of :data:`METHODS`
        How ``E[f(xi) He_k(xi)]`` is computed: ``"integrate"`` (sympy integrates ``f He_k phi``), ``"stein"``
        (sympy integrates ``f^(k) phi``), ``"piecewise"`` (``pieces`` on their half-lines), ``"trig"``
        (``f = cos(x + phase)``: ``E f^(k)(xi) = exp(-1/2) cos(phase + k pi/2)``), ``"numeric"`` (mpmath).
    numpy : callable, the vectorised ``f`` on float arrays (what the simulations evaluate).
    second_moment : sympy expression, optional
        A closed form of ``E f(xi)^2`` that sympy's integrator does not find (checked against quadrature in
        ``tests/theory/test_activations.py``).
    phase : sympy expression, optional, ``"trig"`` only: the phase of ``cos(x + phase)``.
    pieces : tuple of (lower, upper, polynomial), optional, ``"piecewise"`` only: ``f`` on each interval.
    """

    name: str
    expr: sp.Expr
    method: str
    numpy: Callable[[np.ndarray], np.ndarray]
    second_moment: sp.Expr | None = None
    phase: sp.Expr | None = None
    pieces: tuple | None = None

    def __post_init__(self) -> None:
        check_choice("method", self.method, METHODS)


# The named activations.  Adding one is one entry here (docs/architecture.md says what else to run).
#   erf:  E erf(xi)^2 = (2/pi) arcsin(2/3)             (Price / arcsine law of the erf kernel)
#   gelu: E[xi^2 Phi(xi)^2] = 1/3 + 1/(2 pi sqrt 3)    (Stein twice: E Phi^2 = 1/3, E[xi Phi phi] = 1/(4 pi sqrt 3))
_SPECS: tuple[ActivationSpec, ...] = (
    ActivationSpec("identity", x, "integrate", lambda t: t),
    ActivationSpec("linear", x, "integrate", lambda t: t),
    ActivationSpec("quadratic", x**2, "integrate", lambda t: t * t),
    ActivationSpec("tanh", sp.tanh(x), "numeric", np.tanh),
    ActivationSpec("erf", sp.erf(x), "stein", scipy.special.erf,
                   second_moment=2 / sp.pi * sp.asin(sp.Rational(2, 3))),
    ActivationSpec("relu", sp.Max(x, 0), "piecewise", lambda t: np.maximum(t, 0.0),
                   pieces=((sp.Integer(0), sp.oo, x),)),
    ActivationSpec("sign", sp.sign(x), "piecewise", np.sign,
                   pieces=((-sp.oo, sp.Integer(0), sp.Integer(-1)), (sp.Integer(0), sp.oo, sp.Integer(1)))),
    ActivationSpec("cos", sp.cos(x), "trig", np.cos, phase=sp.Integer(0)),
    ActivationSpec("sin", sp.sin(x), "trig", np.sin, phase=-sp.pi / 2),
    ActivationSpec("gelu", x * (1 + sp.erf(x / _SQRT2)) / 2, "stein", lambda t: t * scipy.special.ndtr(t),
                   second_moment=sp.Rational(1, 3) + 1 / (2 * sp.pi * sp.sqrt(3))),
    ActivationSpec("silu", x / (1 + sp.exp(-x)), "numeric", lambda t: t * scipy.special.expit(t)),
    ActivationSpec("softplus", sp.log(1 + sp.exp(x)), "numeric", lambda t: np.logaddexp(0.0, t)),
)

_REGISTRY: dict[str, ActivationSpec] = {s.name: s for s in _SPECS}
ACTIVATIONS: tuple[str, ...] = tuple(_REGISTRY)

_PHI = sp.exp(-(x**2) / 2) / sp.sqrt(2 * sp.pi)


def _check_name(name: str, argname: str = "activation") -> str:
    """Registry key (lower case) of an activation name; ``argname`` names the argument in the message."""
    if not isinstance(name, str):
        raise ArgumentTypeError(f"{argname} must be an activation name, one of {ACTIVATIONS}, got {describe(name)}")
    try:
        return check_choice(argname, name, ACTIVATIONS, ignore_case=True)
    except ValueError:
        raise ValueError(f"{argname} must be an activation: one of {ACTIVATIONS} or a sympy expression in x, "
                         f"got {describe(name)}") from None


#: points where a user expression must evaluate to a finite real number (a cheap test of "real-valued on R")
_PROBES = (0.3, -0.7, 1.9)


def _as_expr(f: ActivationLike, centered: bool = False, argname: str = "f") -> sp.Expr:
    """Sympy expression in ``theory.symbols.x`` of a name or an expression (validated: :func:`check_activation`)."""
    if isinstance(f, str):
        return activation(_check_name(f, argname), centered=centered)
    what = f"an activation: one of {ACTIVATIONS} or a real sympy expression in one variable"
    if isinstance(f, (int, float, np.integer, np.floating)) and not isinstance(f, (bool, np.bool_)):
        check_real(argname, f)  # a finite constant activation
        f = sp.sympify(f.item() if isinstance(f, np.generic) else f, strict=True)
    if not isinstance(f, sp.Expr):
        raise ArgumentTypeError(f"{argname} must be {what}, got {describe(f)} of type {type(f).__name__}")
    if f.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        raise ValueError(f"{argname} must be {what}, got {describe(f)}")
    free = f.free_symbols
    if free - {x}:
        if len(free) == 1:
            (other,) = free
            f = f.subs(other, x)
        else:
            raise ValueError(f"{argname} must depend on one variable only, got free symbols {free}")
    _check_real_valued(f, argname)
    if centered:
        f = f - _gauss_mean(f)
    return f


def _check_real_valued(f: sp.Expr, argname: str) -> None:
    """Refuse an expression that is not a finite real number at the probe points (complex, log of negatives...)."""
    for t in _PROBES:
        try:
            val = complex(f.subs(x, t).evalf(20))
        except (TypeError, ValueError):
            raise ValueError(f"{argname} must be a real function of x, got {describe(f)}") from None
        if val.imag != 0 or not np.isfinite(val.real):
            raise ValueError(f"{argname} must be a real function of x (finite and real at x = {t}), "
                             f"got {describe(f)}")


def check_activation(f: Any, argname: str = "activation") -> str | sp.Expr:
    """Validated activation: the registry key of a name, or the expression in ``x`` of a sympy expression.

    Names are looked up in the registry (case-insensitive) and never parsed; an expression must be a real sympy
    expression in at most one variable without NaN or infinities, finite and real at a few probe points (a finite
    number is a constant activation).

    Parameters
    ----------
    f : registry name or sympy expression.
    argname : the argument's name in the caller, the first word of the error message.

    Returns
    -------
    str (registry key, lower case) or sympy.Expr (in ``theory.symbols.x``).

    Examples
    --------
    >>> check_activation("TanH")
    'tanh'
    """
    if isinstance(f, str):
        return _check_name(f, argname)
    return _as_expr(f, argname=argname)


def _registry_match(expr: sp.Expr) -> tuple[str, sp.Expr] | None:
    """``(name, shift)`` when ``expr = raw registry activation + constant shift`` (e.g. a centred one)."""
    for name, spec in _REGISTRY.items():
        shift = sp.expand(expr - spec.expr)
        if shift.is_number:
            return name, shift
    return None


# ----------------------------------------------------------------------------- quadrature
def _he_mp(k: int, t):
    """Probabilists' Hermite polynomial He_k(t) by recurrence (mpmath numbers)."""
    h0, h1 = mpmath.mpf(1), t
    if k == 0:
        return h0
    for j in range(1, k):
        h0, h1 = h1, t * h1 - j * h0
    return h1


def _numeric_gauss(expr: sp.Expr, k: int | None = None, power: int = 1) -> sp.Float:
    """``E[expr(xi)^power He_k(xi)]`` by mpmath quadrature (split at 0), as a sympy Float."""
    fn = sp.lambdify(x, expr, modules="mpmath")
    with mpmath.workdps(30):
        norm = 1 / mpmath.sqrt(2 * mpmath.pi)

        def integrand(t):
            val = fn(t) ** power * mpmath.exp(-t * t / 2) * norm
            return val if k is None else val * _he_mp(k, t)

        val = mpmath.quad(integrand, [-mpmath.inf, -6, 0, 6, mpmath.inf])
        return sp.Float(val, 25)


def _exact_gauss(expr: sp.Expr) -> sp.Expr:
    """``E[expr(xi)]`` by sympy integration (only called where it is known to terminate)."""
    return sp.simplify(sp.integrate(expr * _PHI, (x, -sp.oo, sp.oo)))


def _piecewise_gauss(name: str, weight: sp.Expr, power: int = 1) -> sp.Expr:
    """``E[f(xi)^power weight(xi)]`` for a piecewise-polynomial registry activation."""
    total = sp.Integer(0)
    for lo, hi, piece in _REGISTRY[name].pieces:
        total += sp.integrate(sp.expand(piece**power * weight) * _PHI, (x, lo, hi))
    return sp.simplify(total)


@functools.lru_cache(maxsize=None)
def _gauss_mean(expr: sp.Expr) -> sp.Expr:
    """``E f(xi)`` exact where possible, else quadrature."""
    if expr.is_polynomial(x):
        return _exact_gauss(sp.expand(expr))
    match = _registry_match(expr)
    if match is not None:
        return _registry_coefficient(match[0], 0) + match[1]
    if _is_odd(expr):
        return sp.Integer(0)
    return _numeric_gauss(expr)


def _is_odd(expr: sp.Expr) -> bool:
    try:
        return sp.simplify(expr.subs(x, -x) + expr) == 0
    except Exception:  # pragma: no cover - defensive
        return False


@functools.lru_cache(maxsize=None)
def _registry_coefficient(name: str, k: int) -> sp.Expr:
    """``a_k`` of the raw registry activation ``name`` (exact or Float)."""
    raw, method = _REGISTRY[name].expr, _REGISTRY[name].method
    if k % 2 == 0 and _is_odd(raw):
        return sp.Integer(0)
    if method == "numeric":
        return sp.Float(_numeric_gauss(raw, k) / math.sqrt(math.factorial(k)), 20)
    if method == "stein" and k >= 1:
        val = _exact_gauss(sp.diff(raw, x, k))
    elif method == "piecewise":
        val = _piecewise_gauss(name, sp.hermite_prob(k, x))
    elif method == "trig":
        val = sp.exp(-sp.Rational(1, 2)) * sp.cos(_REGISTRY[name].phase + k * sp.pi / 2)
    else:
        val = _exact_gauss(raw * sp.hermite_prob(k, x))
    return sp.simplify(val / sp.sqrt(sp.factorial(k)))


@functools.lru_cache(maxsize=None)
def _second_moment(expr: sp.Expr) -> sp.Expr:
    """``E f(xi)^2`` exact where possible, else quadrature."""
    if expr.is_polynomial(x):
        return _exact_gauss(sp.expand(expr**2))
    match = _registry_match(expr)
    if match is not None and match[1] != 0:  # E (f + s)^2 = E f^2 + 2 s E f + s^2
        name, shift = match
        return _second_moment(_REGISTRY[name].expr) + 2 * shift * _registry_coefficient(name, 0) + shift**2
    if match is not None:
        name = match[0]
        spec = _REGISTRY[name]
        if spec.second_moment is not None:
            return spec.second_moment
        if spec.method == "piecewise":
            return _piecewise_gauss(name, sp.Integer(1), power=2)
        if spec.method == "trig":  # cos^2(x + t) = (1 + cos(2x + 2t)) / 2
            return (1 + sp.exp(-2) * sp.cos(2 * spec.phase)) / 2
        if spec.method in ("integrate", "stein"):
            return _exact_gauss(spec.expr**2)
    return _numeric_gauss(expr, None, power=2)


# ----------------------------------------------------------------------------- public API
def activation(name: str, centered: bool = True) -> sp.Expr:
    """Sympy expression of a registry activation in ``theory.symbols.x``.

    Parameters
    ----------
    name : one of :data:`ACTIVATIONS` (case-insensitive).
    centered : subtract the Gaussian mean ``E f(xi)`` (exact where a closed form exists).

    Returns
    -------
    sympy.Expr

    Examples
    --------
    >>> activation("relu")
    Max(0, x) - sqrt(2)/(2*sqrt(pi))
    """
    key = _check_name(name, "name")
    check_flag("centered", centered)
    raw = _REGISTRY[key].expr
    if not centered:
        return raw
    a0 = _registry_coefficient(key, 0)
    return raw - a0 if a0 != 0 else raw


def hermite_coefficients(f: ActivationLike, order: int, centered: bool = False) -> list[sp.Expr]:
    """Normalised Hermite coefficients ``[a_0, ..., a_order]``, ``a_k = E[f(xi) He_k(xi)] / sqrt(k!)``.

    Parameters
    ----------
    f : registry name or sympy expression in ``theory.symbols.x`` (any single free symbol is taken as the variable).
    order : highest index ``k`` (``>= 0``).
    centered : for a registry name, use the centred activation (``a_0 = 0``); default raw.

    Returns
    -------
    list of sympy numbers: exact where a closed form exists, ``sympy.Float`` (25 digits) else.

    Raises
    ------
    ValueError
        ``order`` above ``theory.get_limits().max_hermite_order`` (20 by default), or an invalid activation.

    Examples
    --------
    >>> hermite_coefficients("relu", 2)
    [sqrt(2)/(2*sqrt(pi)), 1/2, 1/(2*sqrt(pi))]
    """
    order = check_size("order", order, 0, "max_hermite_order")
    check_flag("centered", centered)
    if isinstance(f, str):
        key = _check_name(f, "f")
        coeffs = [_registry_coefficient(key, k) for k in range(order + 1)]
        if centered:
            coeffs[0] = sp.Integer(0)
        return coeffs
    expr = _as_expr(f)
    match = _registry_match(expr)
    if match is not None:  # a registry activation up to a constant (e.g. its centred version)
        coeffs = [_registry_coefficient(match[0], k) for k in range(order + 1)]
        coeffs[0] = sp.simplify(coeffs[0] + match[1])
        return coeffs
    if expr.is_polynomial(x):
        return [
            sp.simplify(_exact_gauss(sp.expand(expr * sp.hermite_prob(k, x))) / sp.sqrt(sp.factorial(k)))
            for k in range(order + 1)
        ]
    return [sp.Float(_numeric_gauss(expr, k) / math.sqrt(math.factorial(k)), 20) for k in range(order + 1)]


@dataclass(frozen=True)
class HermiteMoments:
    """Gaussian moments of an activation (floats).

    Attributes
    ----------
    a0 : ``E f(xi)`` of the raw activation (the centring constant).
    a1 : ``E[xi f(xi)]``.
    a2 : ``E[f(xi) He_2(xi)] / sqrt 2``.
    nu : ``E[(f(xi) - a0)^2]``, second moment of the centred activation.
    sf2 : ``nu - a1^2`` (``s_f^2``), energy of the nonlinear part.
    """

    a0: float
    a1: float
    a2: float
    nu: float
    sf2: float

    def __post_init__(self) -> None:
        for name in ("a0", "a1", "a2"):
            as_float(name, getattr(self, name))
        for name in ("nu", "sf2"):
            as_float(name, getattr(self, name), low=0)


@functools.lru_cache(maxsize=None)
def _moments_of_expr(expr: sp.Expr) -> HermiteMoments:
    a0, a1, a2 = (float(v) for v in hermite_coefficients(expr, 2))
    nu = float(_second_moment(expr)) - a0**2
    if nu < 0 and nu > -1e-12:
        nu = 0.0
    sf2 = nu - a1**2
    if -1e-12 < sf2 < 0:  # rounding of an exactly linear activation
        sf2 = 0.0
    return HermiteMoments(a0=a0, a1=a1, a2=a2, nu=nu, sf2=sf2)


def hermite_moments(f: ActivationLike) -> HermiteMoments:
    """``a0, a1, a2, nu, sf2`` of an activation (see :class:`HermiteMoments`).

    Parameters
    ----------
    f : registry name (raw activation; ``a0`` is its mean) or sympy expression in ``x``.

    Examples
    --------
    >>> m = hermite_moments("erf")
    >>> round(m.a1, 4), round(m.nu, 4)
    (0.6515, 0.4646)
    """
    expr = _REGISTRY[_check_name(f, "f")].expr if isinstance(f, str) else _as_expr(f)
    return _moments_of_expr(expr)


def numpy_activation(f: ActivationLike, centered: bool = True) -> Callable[[np.ndarray], np.ndarray]:
    """Vectorised numpy function of the (centred) activation.

    Parameters
    ----------
    f : registry name or sympy expression in ``x`` (lambdified with ``scipy.special.erf``).
    centered : subtract the Gaussian mean ``a0`` (default, the paper's convention).

    Returns
    -------
    callable ``ndarray -> ndarray`` (float64); it refuses complex, string, bool and object input (NaN in, NaN
    out: it is elementwise IEEE arithmetic, kept free of per-call scans for the simulations).

    Examples
    --------
    >>> g = numpy_activation("relu")
    >>> round(float(g(np.array([0.0]))[0]), 6)
    -0.398942
    """
    check_flag("centered", centered)
    if isinstance(f, str):
        key = _check_name(f, "f")
        base = _REGISTRY[key].numpy
        a0 = float(_registry_coefficient(key, 0)) if centered else 0.0
    else:
        expr = _as_expr(f)
        base = sp.lambdify(x, expr, modules=[{"erf": scipy.special.erf, "erfc": scipy.special.erfc}, "numpy"])
        a0 = float(_gauss_mean(expr)) if centered else 0.0

    def fn(t: np.ndarray) -> np.ndarray:
        if isinstance(t, (str, bytes)) or np.asarray(t).dtype.kind not in "iuf":
            raise ArgumentTypeError(f"t must be real numbers (an int or float array), got {describe(t)}")
        t = np.asarray(t, dtype=np.float64)
        out = np.asarray(base(t), dtype=np.float64)
        if out.shape != t.shape:
            out = np.broadcast_to(out, t.shape).copy()
        return out - a0 if a0 != 0.0 else out

    return fn


def activation_asymptotic_slope(f: ActivationLike) -> float:
    """``lim_{t -> +inf} f(t) / t`` of the centred activation.

    This is the value ``d0`` of the kernel diagonal ``f(||x_i||^2 / sqrt p) / sqrt p`` when the
    diagonal is kept (``||x_i||^2 / sqrt p = sqrt p (1 + O(p^{-1/2}))``): 0 for bounded ``f``
    (tanh, erf, sign, cos), 1 for relu, gelu, silu, softplus, identity.

    Raises
    ------
    ValueError
        If the limit is infinite or does not exist (e.g. ``quadratic``): the kept diagonal then diverges with ``p``.
    """
    expr = _as_expr(f, centered=False)
    if isinstance(f, str) and _check_name(f, "f") == "softplus":
        lim = sp.Integer(1)
    else:
        lim = sp.limit(expr / x, x, sp.oo)
    if not lim.is_finite or lim.has(sp.AccumBounds):
        raise ValueError(f"f(t)/t has no finite limit at +inf for activation {f!r}: the kept diagonal diverges")
    return float(lim)
