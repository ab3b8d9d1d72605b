"""Argument checks shared by the modules of ``verify``: each returns the value (normalised) or raises a
``TypeError`` / ``ValueError`` whose message starts with the argument's name."""

from __future__ import annotations

import math
import numbers
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import sympy as sp

from numerics.sweep import to_jsonable
from numerics.threads import MAX_THREADS as MAX_JOBS  # most workers of a run
from theory.validation import MAX_SEED, ArgumentTypeError, check_real, check_text, describe  # noqa: F401 (re-exported)


def optional_real(name: str, v: Any, low: float, high: float, *, nan_ok: bool = False, low_open: bool = False,
                   inf_ok: bool = False) -> float | None:
    """``None``, or a real number (not a bool, not text) in ``[low, high]`` (``(low, high]`` with ``low_open``);
    NaN only with ``nan_ok`` (a p-value that could not be computed), infinities only with ``inf_ok``."""
    x = None if v is None else real_number(name, v, "None or a real number")
    if x is not None and not (nan_ok and math.isnan(x) or inf_ok and x == math.inf):
        check_real(name, x, low=low, high=high, low_open=low_open)
    return v


def real_number(name: str, v: Any, what: str = "a real number") -> float:
    """``float(v)`` of a real number (Python, NumPy or sympy; not a bool, not text), NaN and infinities included."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise ArgumentTypeError(f"{name} must be {what}, got {describe(v)} ({type(v).__name__})")
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be {what} within the float64 range, got {describe(v)}") from None


def check_measurement(name: str, v: Any, low: float | None = None) -> float:
    """A measured number (or its standard error, ``low = 0``) as a float: NaN and infinities are valid (a failed
    measurement, judged FAIL), a finite value must be ``>= low``."""
    x = real_number(name, v)
    if low is not None and math.isfinite(x) and x < low:
        raise ValueError(f"{name} must be a real number >= {low:g} (NaN or inf for a failed measurement), got "
                         f"{describe(v)}")
    return x


def check_df(df: Any) -> Any:
    """Degrees of freedom: ``None`` (normal) or a real number ``> 0`` (``inf``: normal)."""
    return optional_real("df", df, 0.0, math.inf, low_open=True, inf_ok=True)


def check_value(name: str, v: Any, depth: int = 0) -> Any:
    """A report value: a real number (NaN, inf too), string, bool, ``None``, sympy expression, or a list of those."""
    if v is None or isinstance(v, (str, bool, np.bool_, sp.Basic, numbers.Real)):
        return v
    if isinstance(v, (list, tuple)) and depth < 2:
        for x in v:
            check_value(name, x, depth + 1)
        return v
    raise ArgumentTypeError(f"{name} must be a real number, a string, None or a list of those, got {describe(v)} "
                            f"({type(v).__name__})")


def check_items(name: str, v: Any, cls: type | tuple, what: str) -> list:
    """A list (or tuple) of instances of ``cls`` as a new list; not a single instance, not a string."""
    if not isinstance(v, (list, tuple)):
        raise ArgumentTypeError(f"{name} must be a list of {what}, got {describe(v)} ({type(v).__name__})")
    bad = [x for x in v if not isinstance(x, cls)]
    if bad:
        raise ArgumentTypeError(f"{name} must be a list of {what}, got an item {describe(bad[0])} "
                                f"({type(bad[0]).__name__})")
    return list(v)


def check_mapping(name: str, v: Any) -> dict:
    """A mapping with string keys, as a new dict."""
    if not isinstance(v, Mapping):
        raise ArgumentTypeError(f"{name} must be a mapping (a dict), got {describe(v)} ({type(v).__name__})")
    bad = [k for k in v if not isinstance(k, str)]
    if bad:
        raise ArgumentTypeError(f"{name} must be a mapping with string keys, got the key {describe(bad[0])}")
    return dict(v)


def seed_text(k: Any) -> str:
    """A seed key as text: an integer, a string, a bool or a literal float constant (12 digits at most)."""
    if isinstance(k, (str, numbers.Integral)):  # bool included, numpy.bool_ not
        return str(k)
    if isinstance(k, float):
        if not math.isfinite(k) or k != round(k, 12):
            raise ValueError(f"seed keys must be integers, strings or literal constants, got the float {k!r}")
        return str(k)
    raise ArgumentTypeError(f"seed keys must be integers, strings or literal constants, got {describe(k)} "
                            f"({type(k).__name__})")


def jsonable(v: Any) -> Any:
    """The report's JSON form of ``v``: NaN / infinities as the strings ``"nan"`` / ``"inf"`` / ``"-inf"``, any
    other unknown value as ``str(v)`` (:func:`numerics.sweep.to_jsonable`)."""
    return to_jsonable(v, nonfinite="str", unknown="str")


# ----------------------------------------------------------------------------------------- field checks
def check_n_jobs(v: Any, name: str = "n_jobs") -> int:
    """``name``: an integer ``>= 1``, or ``-1`` for every core (returned as ``os.cpu_count()``)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= 1 or -1 (all cores), got {v!r} ({type(v).__name__})")
    if int(v) == -1:
        return os.cpu_count() or 1
    if not 1 <= int(v) <= MAX_JOBS:
        raise ValueError(f"{name} must be an integer in [1, {MAX_JOBS}] or -1 (all cores), got {describe(v)}")
    return int(v)


def path_or_none(value: Any) -> Any:
    """``value``, or ``None`` where it is the word ``none`` (any case): how every option and keyword of the toolkit
    spells "no directory" (``--cache-dir none``, ``verify.run(cache_dir="none")``); other values unchanged."""
    if isinstance(value, (str, os.PathLike)) and str(os.fspath(value)).lower() == "none":
        return None
    return value


def check_dir(name: str, v: Any) -> Path | None:
    """``None`` or a path (``str`` / ``os.PathLike``) as a :class:`~pathlib.Path`."""
    if v is None or isinstance(v, Path):
        return v
    if isinstance(v, (str, os.PathLike)):
        return Path(v)
    raise TypeError(f"{name} must be None or a path, got {type(v).__name__}")

