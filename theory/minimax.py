"""Paper A: minimax rates for learning pairwise interactions (symbolic layer).

Every public function accepts Python/NumPy numbers or sympy expressions (the standard symbols live
in :mod:`theory.symbols`) and returns a sympy expression or relational; ``float(...)`` / ``bool(...)``
give the numeric value / verdict when all inputs are numbers.

Conventions (constants are dropped everywhere unless a keyword sets them)
-------------------------------------------------------------------------
- rate exponent ``e(beta) = 2 beta / (2 beta + 1)``; minimax rate ``M^(-e)``.
- upper bound (Theorem 3.1, as printed in the paper notes): ``M^(-e) * (log M)^g``, the rate times the full log factor
  between upper and lower bound (log-gap exponent ``g(beta) = e(beta) + 4 max(2 beta, 1)``), constant 1.
- lower bound (Theorem 4.4): ``c0 N^(-e) M^(-e)``, ``c0 = 1`` unless given.
- low-rank condition: ``r d <= (M / log M)^(1/(2 beta + 1))``.
- ``K_M = max(1, floor(C (M / log M)^(1/(2 beta + 1))))``: a *reconstruction* (the project's), not a printed
  formula; ``C = 1`` by default.
- parametric term ``r d log M / M`` (the price of estimating ``A*``), constant 1.

Derived here (project's own algebra, checked by claim A1): with ``u = (M / log M)^(1/(2 beta + 1))``
one has ``u^(-2 beta) = M^(-e) (log M)^e``, hence

    r d <= u   <=>   r d log M / M <= M^(-e) * (log M)^e .

So the low-rank condition says *exactly* that the parametric term is below the non-parametric rate
times the factor ``(log M)^(2 beta / (2 beta + 1))`` (a log factor, not a constant; it is smaller
than the log gap of the upper bound, so the condition implies ``parametric <= upper_bound``).

``M`` must be ``>= 2`` (so that ``log M > 0``); monotonicity statements in ``M`` that involve
``M / log M`` hold for ``M >= e`` (the minimum of ``M / log M``), in particular for integers ``M >= 3``.
"""

from __future__ import annotations

import functools
from typing import Any

import mpmath
import sympy as sp
from sympy.core.evalf import PrecisionExhausted

from .validation import check_choice, describe, get_limits, to_sympy
from .validation import rank_and_dimension as _rank_dim

__all__ = ["rate_exponent", "minimax_rate", "upper_bound", "lower_bound", "log_gap_exponent", "low_rank_condition",
           "low_rank_rhs", "num_intervals", "beta_from_bspline_degree", "parametric_term", "finite_sample_slope",
           "average_slope", "total_error_slope", "min_samples"]

_BOUNDS = ("upper", "rate", "lower")


# --------------------------------------------------------------------------------------------- helpers
def _beta(beta: Any) -> sp.Expr:
    return to_sympy("beta", beta, low=0, low_open=True)


def _M(M: Any, name: str = "M") -> sp.Expr:
    return to_sympy(name, M, low=2)


def _is_numeric(*values: sp.Expr) -> bool:
    return all(not v.free_symbols for v in values)


# --------------------------------------------------------------------------------------------- rates
def rate_exponent(beta: Any) -> sp.Expr:
    """Minimax rate exponent ``2 beta / (2 beta + 1)``.

    Parameters
    ----------
    beta : number or sympy expression, Hölder smoothness of ``phi*``, ``> 0``.

    Returns
    -------
    sympy.Expr

    Examples
    --------
    >>> rate_exponent(2)
    4/5
    >>> from theory.symbols import beta
    >>> rate_exponent(beta)
    2*beta/(2*beta + 1)
    """
    b = _beta(beta)
    return 2 * b / (2 * b + 1)


def minimax_rate(M: Any, beta: Any) -> sp.Expr:
    """Minimax rate ``M^(-2 beta / (2 beta + 1))`` (constants dropped).

    Parameters
    ----------
    M, beta : number or sympy expression, number of samples ``M >= 2``; smoothness ``beta > 0``.

    Returns
    -------
    sympy.Expr

    Examples
    --------
    >>> minimax_rate(32, sp.Rational(1, 2))
    sqrt(2)/8
    >>> float(minimax_rate(10**5, 2))
    0.0001
    """
    return _M(M) ** (-rate_exponent(beta))


def log_gap_exponent(beta: Any) -> sp.Expr:
    """Exponent of the log factor between upper and lower bound: ``2b/(2b+1) + 4 max(2b, 1)``.

    As printed in the paper notes (Theorem 3.1 vs Theorem 4.4).

    Parameters
    ----------
    beta : number or sympy expression, smoothness, ``> 0``.

    Returns
    -------
    sympy.Expr

    Examples
    --------
    >>> log_gap_exponent(2)
    84/5
    >>> log_gap_exponent(sp.Rational(1, 4))
    13/3
    """
    b = _beta(beta)
    return rate_exponent(b) + 4 * sp.Max(2 * b, 1)


def upper_bound(M: Any, beta: Any) -> sp.Expr:
    """Upper bound of Theorem 3.1: ``M^(-2b/(2b+1)) * (log M)^log_gap_exponent(beta)``.

    Constants dropped (module docstring); valid under the low-rank condition (:func:`low_rank_condition`).

    Parameters
    ----------
    M, beta : number or sympy expression, number of samples ``M >= 2``; smoothness ``beta > 0``.

    Returns
    -------
    sympy.Expr

    Examples
    --------
    >>> upper_bound(sp.E, sp.Rational(1, 2))
    exp(-1/2)
    >>> from theory.symbols import M
    >>> upper_bound(M, 2)
    log(M)**(84/5)/M**(4/5)
    """
    M = _M(M)
    return minimax_rate(M, beta) * sp.log(M) ** log_gap_exponent(beta)


def lower_bound(M: Any, N: Any, beta: Any, *, c0: Any = 1) -> sp.Expr:
    """Lower bound of Theorem 4.4: ``c0 N^(-2b/(2b+1)) M^(-2b/(2b+1))``.

    Parameters
    ----------
    M, N, beta : number or sympy expression
        Number of samples ``M >= 2``; tokens per sample ``N``, an integer ``>= 2``; smoothness ``beta > 0``.
    c0 : number or sympy expression, keyword-only, constant of the theorem, ``> 0`` (default 1).

    Returns
    -------
    sympy.Expr

    Examples
    --------
    >>> lower_bound(100, 4, 1)
    50**(1/3)/200
    >>> from theory.symbols import M, N
    >>> lower_bound(M, N, 2, c0=3)
    3/(M**(4/5)*N**(4/5))
    """
    M = _M(M)
    N = to_sympy("N", N, low=2, integer=True)
    c0 = to_sympy("c0", c0, low=0, low_open=True)
    e = rate_exponent(beta)
    return c0 * N ** (-e) * M ** (-e)


def parametric_term(r: Any, d: Any, M: Any) -> sp.Expr:
    """Parametric error term ``r d log M / M`` (estimating the rank-``r`` matrix ``A*``), constant 1.

    Parameters
    ----------
    r, d : int or sympy expression, rank and token dimension, integers with ``1 <= r <= d``.
    M : number or sympy expression, number of samples, ``>= 2``.

    Returns
    -------
    sympy.Expr

    Examples
    --------
    >>> parametric_term(1, 30, sp.E**2)
    60*exp(-2)
    """
    r, d = _rank_dim(r, d)
    M = _M(M)
    return r * d * sp.log(M) / M


# --------------------------------------------------------------------------------------------- conditions
def low_rank_condition(r: Any, d: Any, M: Any, beta: Any, constant: Any = 1) -> sp.Basic:
    """Low-rank condition of Theorem 3.1: ``r d <= C (M / log M)^(1/(2 beta + 1))``, ``C = constant`` (default 1,
    the condition as printed; the paper leaves the constant unspecified).

    Equivalent (exactly, module docstring) to ``r d log M / M <= M^(-2b/(2b+1)) (log M)^(2b/(2b+1))``.

    Parameters
    ----------
    r, d : int or sympy expression, rank and dimension, integers with ``1 <= r <= d``.
    M, beta : number or sympy expression, number of samples ``M >= 2``; smoothness ``beta > 0``.
    constant : number or sympy expression, ``C > 0`` (default 1).

    Returns
    -------
    sympy relational (``sympy.true`` / ``sympy.false`` when every input is a number).

    Examples
    --------
    >>> bool(low_rank_condition(1, 5, 10**6, 2))
    True
    >>> bool(low_rank_condition(1, 30, 10**6, 2))
    False
    """
    r, d = _rank_dim(r, d)
    M = _M(M)
    return sp.Le(r * d, low_rank_rhs(M, beta, constant))


def low_rank_rhs(M: Any, beta: Any, constant: Any = 1) -> sp.Expr:
    """Right-hand side ``C (M / log M)^(1/(2 beta + 1))`` of :func:`low_rank_condition`.

    Examples
    --------
    >>> low_rank_rhs(sp.E, 2)
    exp(1/5)
    """
    M = _M(M)
    b = _beta(beta)
    C = to_sympy("constant", constant, low=0, low_open=True)
    return C * (M / sp.log(M)) ** (1 / (2 * b + 1))


def num_intervals(M: Any, beta: Any, constant: Any = 1) -> sp.Expr:
    """Number of intervals ``K_M = max(1, floor(C (M / log M)^(1/(2 beta + 1))))``.

    A reconstruction (the project's): the usual bias/variance balance for a piecewise polynomial of
    ``K`` pieces in dimension one, ``K^(-2 beta) ~ K log M / M``. Nondecreasing in ``M`` for
    ``M >= e`` (``M / log M`` has its minimum at ``e``).

    Parameters
    ----------
    M, beta : number or sympy expression, number of samples ``M >= 2``; smoothness ``beta > 0``.
    constant : number or sympy expression, ``C > 0`` (default 1).

    Returns
    -------
    sympy.Expr (an ``Integer`` when every input is a number).

    Examples
    --------
    >>> num_intervals(10**6, 2)
    9
    >>> num_intervals(10**6, 2, constant=3)
    28
    >>> num_intervals(3, 7)
    1
    """
    M = _M(M)
    b = _beta(beta)
    C = to_sympy("constant", constant, low=0, low_open=True)
    return sp.Max(1, sp.floor(C * (M / sp.log(M)) ** (1 / (2 * b + 1))))


def beta_from_bspline_degree(P: Any) -> sp.Expr:
    """Smoothness of a degree-``P`` B-spline truth as used by the paper: ``beta = P - 1``.

    A degree-``P`` B-spline is ``C^(P-1)``; ``P >= 2`` so that ``beta > 0``.

    Parameters
    ----------
    P : int or sympy expression, B-spline degree, integer ``>= 2``.

    Returns
    -------
    sympy.Expr

    Examples
    --------
    >>> beta_from_bspline_degree(3), rate_exponent(beta_from_bspline_degree(8))
    (2, 14/15)
    """
    P = to_sympy("P", P, low=2, integer=True)
    return P - 1


# --------------------------------------------------------------------------------------------- slopes
def _bound_expr(M: sp.Expr, beta: sp.Expr, bound: str) -> sp.Expr:
    """The bound of a checked ``bound``; "lower" has the rate's slope (N and c0 enter as constant factors)."""
    return upper_bound(M, beta) if bound == "upper" else minimax_rate(M, beta)


def _log_slope(f_of_M, M: sp.Expr) -> sp.Expr:
    """``d log f / d log M`` evaluated at ``M``: differentiate in ``t = log M`` (``t > 0``)."""
    t = sp.Dummy("t", positive=True)
    logf = sp.expand_log(sp.log(f_of_M(sp.exp(t))), force=True)
    return sp.diff(logf, t).subs(t, sp.log(M))


def finite_sample_slope(M: Any, beta: Any, bound: str = "upper") -> sp.Expr:
    """Local log-log slope ``d log(bound) / d log M`` at finite ``M``, log factors included.

    ``bound="upper"``: ``-2b/(2b+1) + log_gap_exponent(beta) / log M`` (tends to the rate exponent
    only as ``M -> oo``; positive for ``M < exp(g/e)``). ``bound="rate"`` and ``bound="lower"``:
    exactly ``-2b/(2b+1)`` (N and c0 are constant factors).

    Parameters
    ----------
    M, beta : number or sympy expression, number of samples ``M >= 2``; smoothness ``beta > 0``.
    bound : {"upper", "rate", "lower"}

    Returns
    -------
    sympy.Expr

    Examples
    --------
    >>> finite_sample_slope(sp.E**2, 2)
    38/5
    >>> finite_sample_slope(10**4, 2, bound="rate")
    -4/5
    """
    M = _M(M)
    b = _beta(beta)
    check_choice("bound", bound, _BOUNDS)
    return _log_slope(lambda m: _bound_expr(m, b, bound), M)


def average_slope(M_lo: Any, M_hi: Any, beta: Any, bound: str = "upper") -> sp.Expr:
    """Secant slope ``(log B(M_hi) - log B(M_lo)) / (log M_hi - log M_lo)`` over a sweep range.

    Useful to compare a slope *fitted* over ``[M_lo, M_hi]`` with what the bound predicts there.

    Parameters
    ----------
    M_lo, M_hi, beta : number or sympy expression, ends of the sweep, ``2 <= M_lo < M_hi``; smoothness ``beta > 0``.
    bound : {"upper", "rate", "lower"}

    Returns
    -------
    sympy.Expr

    Examples
    --------
    >>> average_slope(100, 10**4, 2, bound="rate")
    -4/5
    >>> round(float(average_slope(sp.E, sp.E**2, sp.Rational(1, 2))), 6)
    2.619162
    """
    M_lo = _M(M_lo, "M_lo")
    M_hi = _M(M_hi, "M_hi")
    if _is_numeric(M_lo, M_hi) and not bool(M_hi > M_lo):
        raise ValueError(f"M_hi must be > M_lo (the sweep is M_lo < M_hi), got M_lo={M_lo}, M_hi={M_hi}")
    b = _beta(beta)
    check_choice("bound", bound, _BOUNDS)
    e = rate_exponent(b)
    if bound != "upper":  # pure power law: the secant slope is the exponent itself
        return -e
    # log B(M) = -e log M + g log log M (exact for M >= 2, where log M > 0)
    g = log_gap_exponent(b)
    lm_hi, lm_lo = sp.log(M_hi), sp.log(M_lo)
    return -e + g * (sp.log(lm_hi) - sp.log(lm_lo)) / (lm_hi - lm_lo)


def total_error_slope(M: Any, beta: Any, r: Any, d: Any, c_np: Any = 1, c_p: Any = 1) -> sp.Expr:
    """Local slope ``d log(c_np M^(-2b/(2b+1)) + c_p r d log M / M) / d log M``.

    The error model "non-parametric rate + parametric term"; its slope moves from about ``-1``
    (parametric term dominant, small ``M``) to ``-2b/(2b+1)`` (large ``M``).

    Parameters
    ----------
    M, beta : number or sympy expression, number of samples ``M >= 2``; smoothness ``beta > 0``.
    r, d : int or sympy expression, rank and dimension, ``1 <= r <= d``.
    c_np, c_p : number or sympy expression, constants of the two terms, ``> 0`` (default 1).

    Returns
    -------
    sympy.Expr

    Examples
    --------
    >>> round(float(total_error_slope(10**4, 2, 1, 30)), 4)
    -0.8894
    >>> round(float(total_error_slope(10**40, 2, 1, 30)), 4)
    -0.8
    """
    M = _M(M)
    b = _beta(beta)
    r, d = _rank_dim(r, d)
    c_np = to_sympy("c_np", c_np, low=0, low_open=True)
    c_p = to_sympy("c_p", c_p, low=0, low_open=True)
    e = rate_exponent(b)
    m = sp.Dummy("m", positive=True)
    total = c_np * m ** (-e) + c_p * r * d * sp.log(m) / m
    slope = sp.together(m * sp.diff(total, m) / total)  # d log f / d log M = M f'(M) / f(M)
    return slope.subs(m, M)


# --------------------------------------------------------------------------------------------- sample size
def min_samples(r: Any, d: Any, beta: Any) -> int:
    """Smallest integer ``M >= 3`` satisfying the low-rank condition.

    The right-hand side ``(M / log M)^(1/(2 beta + 1))`` increases for ``M >= e``, so the integers ``M >= 3`` satisfying
    the condition form a ray; it is found by doubling and bisection on the integers (comparisons ``k log M <= M``,
    ``k = (r d)^(2 beta + 1)``, in mpmath with 50 guard digits, sympy for close calls), and the result is certified with
    exact sympy comparisons at ``M`` and ``M - 1``. A float ``beta`` is taken as its exact binary fraction.

    Parameters
    ----------
    r, d : int, rank and dimension, ``1 <= r <= d``.
    beta : number, smoothness, ``> 0`` (numbers only).

    Returns
    -------
    int

    Raises
    ------
    ValueError
        Invalid ``r, d, beta``, or ``k = (r d)^(2 beta + 1)`` with more than
        ``theory.get_limits().max_min_samples_digits`` (200) decimal digits: the answer, about ``k log k``,
        would take that many digits (and the search about ``3.3`` times as many steps).

    Examples
    --------
    >>> min_samples(1, 30, 2)
    486043975
    >>> m = min_samples(1, 5, 2)
    >>> bool(low_rank_condition(1, 5, m, 2)), bool(low_rank_condition(1, 5, m - 1, 2))
    (True, False)
    """
    r, d = _rank_dim(r, d)
    b = _beta(beta)
    for name, v in (("r", r), ("d", d), ("beta", b)):
        if v.free_symbols:
            raise ValueError(f"{name} must be a number for min_samples, got {v!r}")
    if isinstance(b, sp.Float):
        b = sp.Rational(b)
    _check_answer_size(r, d, b)

    # equivalent form (both sides positive, x -> x^(2 beta + 1) increasing): k log M <= M, k = (r d)^(2 beta + 1)
    k_expr = (r * d) ** (2 * b + 1)

    try:
        k_digits = len(str(int(sp.ceiling(k_expr))))
    except PrecisionExhausted:  # k within ~1e-15 relative of an integer it cannot resolve: estimate the digits
        k_digits = int(float((2 * b + 1) * sp.log(r * d, 10))) + 2

    exact = functools.partial(_exact_condition, k_expr)

    def fast(m: int) -> bool:  # mpmath with 50 guard digits; sympy decides the (never seen) close calls
        dps = len(str(m)) + k_digits + 50
        with mpmath.workdps(dps):
            k = mpmath.mpf(str(sp.N(k_expr, dps)))
            gap = mpmath.mpf(m) - k * mpmath.log(m)
            if abs(gap) > mpmath.mpf(m) * mpmath.mpf(10) ** (-30):
                return bool(gap >= 0)
        return exact(m)

    m0 = _first_true(fast)
    if exact(m0) and (m0 == 3 or not exact(m0 - 1)):  # certify minimality with sympy
        return m0
    return _first_true(exact)  # pragma: no cover - only if mpmath and sympy disagreed


def _exact_condition(k_expr: sp.Expr, m: int) -> bool:
    """``k log m <= m`` decided by sympy (adaptive precision; explicit digits when its default cannot decide)."""
    try:
        return bool(sp.Le(k_expr * sp.log(sp.Integer(m)), sp.Integer(m)))
    except (TypeError, PrecisionExhausted):  # too close for sympy's default precision (answers of ~100 digits)
        dps = len(str(m)) + 60
        gap = (sp.Integer(m) - k_expr * sp.log(sp.Integer(m))).evalf(dps, strict=True, maxn=8 * dps)
        return bool(gap >= 0)


def _first_true(ok) -> int:
    """Smallest integer ``m >= 3`` with ``ok(m)`` for a predicate true on a ray: doubling, then bisection."""
    if ok(3):
        return 3
    lo, hi = 3, 6  # invariant: not ok(lo)
    while not ok(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:  # invariant: not ok(lo), ok(hi)
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _check_answer_size(r: sp.Expr, d: sp.Expr, b: sp.Expr) -> None:
    """Refuse ``r, d, beta`` whose ``k = (r d)^(2 beta + 1)`` has more digits than the limit (before any search)."""
    limit = get_limits().max_min_samples_digits
    digits = float((2 * b + 1) * sp.log(r * d, 10)) if r * d > 1 else 0.0
    if digits > limit:
        raise ValueError(
            f"beta, r and d give k = (r d)^(2 beta + 1) of about {digits:.4g} digits (beta={describe(b)}, "
            f"r d={describe(int(r * d))}): over "
            f"the limit of {limit} digits (Limits.max_min_samples_digits; raise it with "
            f"theory.set_limits(max_min_samples_digits=...))")
