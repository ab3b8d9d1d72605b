"""Input validation, public and shared by theory, numerics and verify: one set of rules for every argument.

Rules
-----
* **Numbers** are finite real numbers: Python ``int`` / ``float`` / ``fractions.Fraction``, NumPy integer and
  floating scalars, or sympy numbers.  NaN and +-inf are refused, complex numbers are refused unless the
  parameter documents that it allows them, ``bool`` is not a number, and neither is a string (strings are
  never parsed: nothing reaches ``sympy.sympify`` except numbers and sympy objects, and then with
  ``strict=True``).  Symbolic functions also take sympy expressions; a symbolic value whose sign cannot be
  decided is accepted (the caller is doing algebra), one whose assumptions contradict the range is refused.
* **Integers** are checked as integers (an integral float such as ``3.0`` is accepted; huge Python ints are
  compared exactly, never converted to float first).
* **Ranges** are named in the message: ``"gamma must be a finite real number > 0, got -1.0"``.  Every message
  starts with the argument's name.
* **Sizes** (orders, counts, grid lengths, iteration budgets) are bounded by the documented limits of
  :class:`Limits` (see :func:`get_limits` / :func:`set_limits`), so that no call hangs or allocates a huge
  amount of memory before it starts; arrays are checked against the memory budget
  ``Limits.memory_budget_bytes`` *before* any intermediate array is allocated.
* **Raw library errors** (overflow, singular matrices) are turned into a ``ValueError`` that lists the
  arguments (:func:`numeric_errors`), and numeric results are checked to be finite (:func:`finite_result`):
  no NaN or inf is returned silently.

Errors: a wrong *type* raises :class:`ArgumentTypeError`, which is both a ``TypeError`` and a ``ValueError``;
a wrong *value* raises ``ValueError``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterator, Sequence

import numpy as np
import sympy as sp

__all__ = ["ArgumentTypeError", "Limits", "get_limits", "set_limits", "describe", "check_real", "check_complex",
           "as_float", "as_int", "MAX_SEED", "check_seed", "check_random_state", "check_size", "as_array",
           "check_array_memory", "check_choice", "check_flag", "check_text", "to_sympy", "finite_result",
           "numeric_errors", "rank_and_dimension"]


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type (a string, ``None``, a ``bool`` or a complex number where a real number is
    meant, an array where a scalar is meant, ...).  Both a ``TypeError`` and a ``ValueError``."""


# ----------------------------------------------------------------------------------------------- limits
@dataclass(frozen=True)
class Limits:
    """Documented bounds on sizes and memory (defaults below; change them with :func:`set_limits`).

    Every field is an integer in ``[1, 2**62]``.

    Attributes
    ----------
    max_grid_size : points of a solver's ``gamma`` (or ``z``) grid: each one is a continuation solve of the
        null system (``AttentionModel.error``, ``.solve``, ``solve_null_system*``). 10 000.
    max_hermite_order : ``order`` of :func:`theory.hermite_coefficients` (sympy integration or 30-digit
        quadrature per coefficient; order 20 takes up to ~10 s for ``gelu``). 20.
    max_moment_order : ``k`` of :func:`theory.mp_moment` (``k`` binomial products; 1000 takes ~0.3 s). 1000.
    max_quadrature_nodes : ``n_nodes`` of the Gauss quadratures (the Gauss-Jacobi weights of SciPy turn NaN
        above about 15 000 nodes). 10 000.
    max_iterations : ``maxiter`` / ``max_iter`` of the Newton solvers (per continuation point). 10 000.
    max_dimension : a dimension ``p`` (:func:`theory.kept_diagonal`,
        :meth:`theory.AttentionModel.linearisation_control`). 10**12.
    max_min_samples_digits : decimal digits of ``k = (r d)^(2 beta + 1)`` in :func:`theory.min_samples`
        (the answer is about ``k log k``; each bisection step works with that many digits; 2-5 s at the limit). 200.
    memory_budget_bytes : intermediate arrays of a vectorised call (``mp_stieltjes``, ``kernel_stieltjes``,
        ``kernel_density``, ``ridge_error_values``, ...), estimated from the number of input elements
        before anything is allocated. 2 GiB.
    """

    max_grid_size: int = 10_000
    max_hermite_order: int = 20
    max_moment_order: int = 1000
    max_quadrature_nodes: int = 10_000
    max_iterations: int = 10_000
    max_dimension: int = 10**12
    max_min_samples_digits: int = 200
    memory_budget_bytes: int = 2 * 2**30

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            check_real(f.name, getattr(self, f.name), low=1, high=2**62, integer=True)


def get_limits() -> Limits:
    """The limits in force (a frozen :class:`Limits`)."""
    return _LIMITS


def set_limits(**changes: int) -> Limits:
    """Change some limits (keyword names of :class:`Limits`); returns the previous :class:`Limits`.

    Examples
    --------
    >>> old = set_limits(max_hermite_order=30)
    >>> get_limits().max_hermite_order
    30
    >>> _ = set_limits(**dataclasses.asdict(old))
    """
    global _LIMITS
    unknown = set(changes) - {f.name for f in dataclasses.fields(Limits)}
    if unknown:
        raise ArgumentTypeError(f"{sorted(unknown)[0]} is not a limit; the limits are "
                                f"{[f.name for f in dataclasses.fields(Limits)]}")
    old = _LIMITS
    _LIMITS = dataclasses.replace(old, **changes)
    return old


# ----------------------------------------------------------------------------------------------- messages
def describe(value: Any) -> str:
    """Short, always printable description of ``value`` for an error message (huge ints, long arrays)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and abs(int(value)).bit_length() > 200:
        return f"an integer of about {int(abs(int(value)).bit_length() * 0.30103) + 1} digits"
    if isinstance(value, np.ndarray):
        body = np.array2string(value.ravel()[:6], threshold=6, precision=4)
        return f"array of shape {value.shape} and dtype {value.dtype} {body}" + ("..." if value.size > 6 else "")
    try:
        text = repr(value)
    except Exception:  # e.g. a sympy Integer too long for str()
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 100 else text[:97] + "..."


def _type_phrase(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return f"the bool {value!r} (booleans are not numbers)"
    if isinstance(value, str):
        return f"the string {describe(value)} (strings are not parsed)"
    if value is None:
        return "None"
    if isinstance(value, (complex, np.complexfloating)):
        return f"the complex number {describe(value)}"
    return f"{describe(value)} of type {type(value).__name__}"


def _fmt(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _range_text(low: Any = None, high: Any = None, low_open: bool = False, high_open: bool = False) -> str:
    """``"> 0"``, ``">= 2"``, ``"in (0, 0.001]"`` or ``""``."""
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{_fmt(low)}, {_fmt(high)}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {_fmt(low)}"
    if high is not None:
        return f"{'<' if high_open else '<='} {_fmt(high)}"
    return ""


def _what(integer: bool, symbolic: bool, rule: str) -> str:
    """``"> 0 (a finite real number)"``: the range first, so that messages read ``"c must be > 0 (...)"``."""
    base = "an integer" if integer else "a finite real number"
    if symbolic:
        base += " or a sympy expression"
    return f"{rule} ({base})" if rule else base


# ----------------------------------------------------------------------------------------------- scalars
_NONFINITE = (sp.nan, sp.zoo, sp.oo, -sp.oo)


def _sympy_symbolic(name: str, value: sp.Basic, what: str, symbolic: bool) -> bool:
    """Refuse a sympy argument that is not an expression, holds NaN or an infinity, or (unless ``symbolic``) has
    free symbols; whether it has free symbols."""
    if not isinstance(value, sp.Expr):
        raise ArgumentTypeError(f"{name} must be {what}, got {_type_phrase(value)}")
    if value.has(*_NONFINITE):
        raise ValueError(f"{name} must be {what}, got {describe(value)}")
    if value.free_symbols and not symbolic:
        raise ArgumentTypeError(f"{name} must be {what} (a number, not a symbolic expression), got {describe(value)}")
    return bool(value.free_symbols)


def _real_value(name: str, value: Any, what: str, symbolic: bool) -> Any:
    """Type-checked comparable value (exact for integers; ``None`` for a symbolic expression)."""
    if isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be {what}, got {_type_phrase(value)}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        x = float(value)
        if not math.isfinite(x):
            raise ValueError(f"{name} must be {what}, got {describe(value)}")
        return x
    if isinstance(value, Fraction):
        return value
    if isinstance(value, sp.Basic):  # checked; None for a symbolic one
        if _sympy_symbolic(name, value, what, symbolic):
            if value.is_extended_real is False:
                raise ValueError(f"{name} must be {what} (real), got the non-real expression {describe(value)}")
            return None
        try:
            num = complex(value.evalf(30))
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be {what}, got {describe(value)}") from None
        if num.imag != 0 or value.is_extended_real is False:
            raise ValueError(f"{name} must be {what} (real), got the complex number {describe(value)}")
        if not math.isfinite(num.real) and not value.is_Integer and not value.is_Rational:
            raise ValueError(f"{name} must be {what} (representable as a float), got {describe(value)}")
        return value
    if isinstance(value, np.ndarray):
        raise ArgumentTypeError(f"{name} must be {what} (a scalar), got an {describe(value)}")
    raise ArgumentTypeError(f"{name} must be {what}, got {_type_phrase(value)}")


def _symbolic_contradicts(value: sp.Expr, low: Any, high: Any, low_open: bool, high_open: bool) -> bool:
    """True when the assumptions of a symbolic ``value`` decide that it lies outside the range."""
    if low is not None:
        d = value - low
        if (d.is_positive if low_open else d.is_nonnegative) is False:
            return True
    if high is not None:
        d = high - value
        if (d.is_positive if high_open else d.is_nonnegative) is False:
            return True
    return False


def check_real(name: str, value: Any, *, low: Any = None, high: Any = None, low_open: bool = False,
               high_open: bool = False, symbolic: bool = False, integer: bool = False) -> Any:
    """Check that ``value`` is a finite real number (an integer when ``integer``) in the range; return it unchanged.

    Parameters
    ----------
    name : argument name, the first word of any error message.
    value : the argument.
    low, high : bounds (``None``: unbounded); ``low_open`` / ``high_open`` make them strict.
    symbolic : also accept sympy expressions with free symbols (refused only when their assumptions
        contradict the range, or they are not real).
    integer : require an integer value (``3``, ``3.0``, ``sympy.Integer(3)``; a symbol with ``integer=False``
        assumptions is refused).

    Raises
    ------
    ArgumentTypeError
        Wrong type (string, None, bool, complex, array, symbolic where numbers are meant, ...).
    ValueError
        NaN, inf, a non-integer where an integer is meant, or a value outside the range.
    """
    rule = _range_text(low, high, low_open, high_open)
    what = _what(integer, symbolic, rule)
    v = _real_value(name, value, what, symbolic)
    if v is None:  # symbolic
        if (integer and value.is_integer is False) or _symbolic_contradicts(value, low, high, low_open, high_open):
            raise ValueError(f"{name} must be {what}, got {describe(value)}, which its assumptions exclude")
        return value
    if integer and not _is_integral(v):
        raise ValueError(f"{name} must be {what}, got {describe(value)}")
    if (low is not None and not (v > low if low_open else v >= low)) or (
            high is not None and not (v < high if high_open else v <= high)):
        raise ValueError(f"{name} must be {what}, got {describe(value)}")
    return value


def _is_integral(v: Any) -> bool:
    if isinstance(v, int):
        return True
    if isinstance(v, float):
        return v == int(v)
    if isinstance(v, Fraction):
        return v.denominator == 1
    return bool((v - sp.floor(v)).is_zero)  # sympy number


def check_complex(name: str, value: Any, *, symbolic: bool = False) -> Any:
    """Check that ``value`` is a finite real or complex number (or, when ``symbolic``, a sympy expression without
    NaN / infinities); return it unchanged."""
    what = "a finite real or complex number" + (" (or a sympy expression)" if symbolic else "")
    if isinstance(value, (complex, np.complexfloating)):
        if not (math.isfinite(value.real) and math.isfinite(value.imag)):
            raise ValueError(f"{name} must be {what}, got {describe(value)}")
    elif isinstance(value, sp.Basic):
        _sympy_symbolic(name, value, what, symbolic)
    else:
        _real_value(name, value, what, symbolic)
    return value


def as_float(name: str, value: Any, **bounds: Any) -> float:
    """:func:`check_real` (numbers only) then ``float(value)``; refuses values beyond the float64 range."""
    check_real(name, value, **bounds)
    try:
        x = float(value)
    except OverflowError:
        x = math.inf
    if not math.isfinite(x):
        rule = _what(False, False, _range_text(**bounds))
        raise ValueError(f"{name} must be {rule} within the float64 range, got {describe(value)}")
    return x


def as_int(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """:func:`check_real` with ``integer=True`` (numbers only) then ``int(value)``."""
    check_real(name, value, low=low, high=high, integer=True)
    return int(value)


#: largest seed: a non-negative 63-bit integer
MAX_SEED = 2**63 - 1


def check_seed(name: str, value: Any) -> int:
    """A seed: an integer in ``[0, MAX_SEED]`` (not a bool); returns ``int(value)``."""
    return as_int(name, value, 0, MAX_SEED)


def check_random_state(name: str, value: Any, *, none_ok: bool = True) -> np.random.Generator:
    """The one random-state rule: a ``numpy.random.Generator`` (returned as is, the caller consumes it), a seed
    (:func:`check_seed`; ``numpy.random.default_rng(seed)``) or, with ``none_ok``, ``None`` (fresh entropy from the
    operating system); returns the generator.

    Examples
    --------
    >>> check_random_state("rng", 3).integers(1000, size=3).tolist()  # numpy.random.default_rng(3)
    [811, 85, 179]
    """
    if not (isinstance(value, np.random.Generator) or (value is None and none_ok)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer, float)):
            raise ArgumentTypeError(f"{name} must be {'None, ' if none_ok else ''}an integer seed >= 0 or a "
                                    f"numpy.random.Generator, got {_type_phrase(value)}")
        value = check_seed(name, value)
    return np.random.default_rng(value)


def check_size(name: str, value: Any, low: int, limit: str) -> int:
    """An integer count ``low <= value <= get_limits().<limit>``; returns ``int(value)``.

    The message of a too large value names the limit and how to raise it.
    """
    high = getattr(get_limits(), limit)
    check_real(name, value, low=low, integer=True)
    n = int(value)
    if n > high:
        raise ValueError(f"{name} must be in [{low}, {high}] (an integer; {high} is the limit Limits.{limit}, raise "
                         f"it with theory.set_limits({limit}=...)), got {describe(value)}")
    return n


# ----------------------------------------------------------------------------------------------- arrays
def as_array(name: str, value: Any, *, complex_ok: bool = False, ndim: int | Sequence[int] | None = None,
             allow_empty: bool = False, bytes_per_element: int | None = None, **bounds: Any) -> np.ndarray:
    """Checked float64 (or, with ``complex_ok``, complex128) array of a number or array-like.

    Refuses strings, None, booleans, object and string dtypes, complex values unless ``complex_ok``, NaN and inf, an
    empty array unless ``allow_empty``, dimensions other than ``ndim``, values outside the range ``bounds`` (``low``,
    ``high``, ``low_open``, ``high_open`` as in :func:`check_real`; real arrays), and, when ``bytes_per_element`` is
    given, sizes whose intermediate arrays would exceed the memory budget (:func:`check_array_memory`). The result
    equals ``np.asarray(value, dtype=float64)`` (or ``complex128``) for every valid input.
    """
    low, high = bounds.get("low"), bounds.get("high")
    kind = "real or complex numbers" if complex_ok else "real numbers"
    what = f"a finite {'real or complex' if complex_ok else 'real'} number or an array of finite {kind}"
    rule = _range_text(**bounds)
    if rule:
        what = f"{rule} ({what})"
    if value is None or isinstance(value, (str, bytes, bool, np.bool_, dict, set)):
        raise ArgumentTypeError(f"{name} must be {what}, got {_type_phrase(value)}")
    if isinstance(value, sp.Basic):
        check_complex(name, value)  # sympy numbers only
        value = complex(value) if (value.is_extended_real is False) else float(value)
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as exc:  # ragged nested sequences
        raise ArgumentTypeError(f"{name} must be {what}, got {describe(value)} ({exc})") from None
    if arr.dtype.kind not in "iuf" + ("c" if complex_ok else ""):
        raise ArgumentTypeError(f"{name} must be {what}, got {describe(value)} (dtype {arr.dtype})")
    if ndim is not None and arr.ndim not in ((ndim,) if isinstance(ndim, int) else tuple(ndim)):
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty, got {describe(value)}")
    if bytes_per_element is not None:
        check_array_memory(name, arr.size, bytes_per_element)
    out = arr.astype(np.complex128 if arr.dtype.kind == "c" else np.float64, copy=False)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} must be {what}, got {describe(value)}")
    if arr.dtype.kind != "c" and (low is not None or high is not None):
        bad = np.zeros(out.shape, dtype=bool)
        if low is not None:
            bad |= ~(out > low) if bounds.get("low_open") else ~(out >= low)
        if high is not None:
            bad |= ~(out < high) if bounds.get("high_open") else ~(out <= high)
        if np.any(bad):
            raise ValueError(f"{name} must be {what}, got {describe(value)} (e.g. {float(out[bad].flat[0])!r})")
    return out


def check_array_memory(name: str, n_elements: int, bytes_per_element: int) -> None:
    """Refuse ``n_elements`` inputs whose intermediate arrays (``bytes_per_element`` each) exceed the budget."""
    need = int(n_elements) * int(bytes_per_element)
    budget = get_limits().memory_budget_bytes
    if need > budget:
        gib = need / 2**30 if need.bit_length() < 1000 else math.inf
        raise ValueError(
            f"{name} has {describe(int(n_elements))} elements: about {gib:.3g} GiB of intermediate arrays, over the "
            f"memory budget of {budget / 2**30:.3g} GiB (Limits.memory_budget_bytes; raise it with "
            f"theory.set_limits(memory_budget_bytes=...))")


# ----------------------------------------------------------------------------------------------- options
def check_choice(name: str, value: Any, options: Sequence[str], *, ignore_case: bool = False) -> str:
    """``value`` one of the strings ``options`` (compared in lower case with ``ignore_case``); returns the
    matched option key (``value.lower()`` with ``ignore_case``, else ``value``)."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be one of {tuple(options)}, got {_type_phrase(value)}")
    key = value.lower() if ignore_case else value
    if key not in options:
        raise ValueError(f"{name} must be one of {tuple(options)}, got {describe(value)}")
    return key


def check_flag(name: str, value: Any) -> bool:
    """``value`` a real boolean (``True`` / ``False`` / ``numpy.bool_`` / sympy's ``true`` and ``false``), never a
    string or a number read as truthy; returns ``bool(value)``."""
    if not isinstance(value, (bool, np.bool_, sp.logic.boolalg.BooleanAtom)):
        raise ArgumentTypeError(f"{name} must be True or False, got {_type_phrase(value)}")
    return bool(value)


def check_text(name: str, v: Any, *, empty: bool = True, none_ok: bool = False) -> str | None:
    """A string (non-empty unless ``empty``; ``None`` passes with ``none_ok``)."""
    if v is None and none_ok:
        return None
    if not isinstance(v, str):
        raise ArgumentTypeError(f"{name} must be a string{' or None' if none_ok else ''}, got {describe(v)} "
                                f"({type(v).__name__})")
    if not empty and not v:
        raise ValueError(f"{name} must be a non-empty string, got ''")
    return v


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    """An integer in ``[low, high]``, strictly typed (Python or NumPy integers; not a bool, not a float such as
    ``3.0``: counts and seeds that a float reached are refused, where :func:`as_int` converts integral numbers)."""
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be an integer, got {describe(value)} ({type(value).__name__})")
    if int(value) < low or (high is not None and int(value) > high):
        rule = f">= {low}" if high is None else f">= {low} and <= {high}"
        raise ValueError(f"{name} must be an integer {rule}, got {describe(value)}")
    return int(value)


def to_sympy(name: str, value: Any, *, complex_ok: bool = False, **bounds: Any) -> sp.Expr:
    """Checked sympy version of a number or sympy expression: ``sympify(value, strict=True)``, never of a string.

    Real unless ``complex_ok``; ``bounds`` as in :func:`check_real` (``symbolic=True`` is implied).
    """
    if complex_ok:
        check_complex(name, value, symbolic=True)
    else:
        check_real(name, value, symbolic=True, **bounds)
    if isinstance(value, np.generic):
        value = value.item()
    return sp.sympify(value, strict=True)


# ----------------------------------------------------------------------------------------------- results
def _all_finite(result: Any) -> bool:
    if isinstance(result, (tuple, list)):
        return all(_all_finite(r) for r in result)
    if isinstance(result, sp.Basic):
        return not result.has(*_NONFINITE)
    if isinstance(result, (int, float, complex, np.number, np.ndarray)):
        return bool(np.all(np.isfinite(result)))
    return True


def finite_result(func: str, result: Any, **args: Any) -> Any:
    """Return ``result`` if every number in it is finite, else raise ``ValueError`` listing the arguments.

    The safety net behind the explicit checks: a combination of valid-looking arguments whose value overflows float64 is
    refused rather than returned as NaN or inf.
    """
    if not _all_finite(result):
        shown = ", ".join(f"{k}={describe(v)}" for k, v in args.items())
        raise ValueError(f"{func} has no finite value at {shown}: these arguments are outside the range where it "
                         f"can be evaluated in float64")
    return result


@contextlib.contextmanager
def numeric_errors(func: str, **args: Any) -> Iterator[None]:
    """Turn raw numeric library errors (overflow, division by zero, singular or non-finite matrices, index errors
    of degenerate input) raised inside the block into a ``ValueError`` that lists the arguments."""
    try:
        yield
    except (OverflowError, ZeroDivisionError, FloatingPointError, np.linalg.LinAlgError, IndexError) as exc:
        shown = ", ".join(f"{k}={describe(v)}" for k, v in args.items())
        raise ValueError(f"{func} cannot be evaluated at {shown} ({type(exc).__name__}: {exc})") from exc


_LIMITS = Limits()  # the limits in force (replaced by set_limits); defined last: Limits validates with check_real


def rank_and_dimension(r: Any, d: Any) -> tuple[sp.Expr, sp.Expr]:
    """Paper A's rank ``r`` and token dimension ``d``: integers ``>= 1`` (or symbols) with ``r <= d``, as sympy."""
    r = to_sympy("r", r, low=1, integer=True)
    d = to_sympy("d", d, low=1, integer=True)
    if not r.free_symbols and not d.free_symbols and r > d:
        raise ValueError(f"r must be <= d (rank of a d x d matrix), got r={r}, d={d}")
    return r, d
