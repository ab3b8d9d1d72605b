"""Input validation shared by the theory layer (and reused by numerics).

Each helper accepts a Python/NumPy number or a sympy expression. Symbolic values whose sign
cannot be decided are accepted (the caller is doing algebra); numeric values outside the
allowed range, NaN and +-inf raise ``ValueError`` naming the argument and the range.
"""

from __future__ import annotations

import math
from typing import Any

import sympy as sp


def _numeric(value: Any) -> float | None:
    """Float value of ``value`` if it is a number (or a sympy number), else None."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    try:
        import numpy as np

        if isinstance(value, np.generic):
            return float(value)
    except ImportError:  # pragma: no cover
        pass
    if isinstance(value, sp.Basic):
        if value.free_symbols:
            return None
        try:
            return float(value.evalf())
        except (TypeError, ValueError):
            return None
    return None


def _check(name: str, value: Any, ok, rule: str) -> Any:
    if isinstance(value, sp.Basic) and value.free_symbols:
        return value
    x = _numeric(value)
    if x is None:
        raise ValueError(f"{name} must be a real number or a sympy expression, got {value!r}")
    if not math.isfinite(x) or not ok(x):
        raise ValueError(f"{name} must be a finite number {rule}, got {value!r}")
    return value


def require_positive(name: str, value: Any) -> Any:
    """``value > 0``."""
    return _check(name, value, lambda x: x > 0, "> 0")


def require_nonnegative(name: str, value: Any) -> Any:
    """``value >= 0``."""
    return _check(name, value, lambda x: x >= 0, ">= 0")


def require_at_least(name: str, value: Any, lower: float) -> Any:
    """``value >= lower``."""
    return _check(name, value, lambda x: x >= lower, f">= {lower}")


def require_greater(name: str, value: Any, lower: float) -> Any:
    """``value > lower``."""
    return _check(name, value, lambda x: x > lower, f"> {lower}")


def require_integer(name: str, value: Any, lower: int | None = None) -> Any:
    """``value`` an integer (``>= lower`` when given)."""
    if isinstance(value, sp.Basic) and value.free_symbols:
        return value
    x = _numeric(value)
    if x is None or not math.isfinite(x) or x != int(x):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if lower is not None and x < lower:
        raise ValueError(f"{name} must be an integer >= {lower}, got {value!r}")
    return value
