"""The machinery shared by the fuzz suites (``tests/theory/test_fuzz_theory.py``,
``tests/numerics/test_fuzz_numerics.py``, ``tests/verify/test_fuzz_verify.py``): argument domains, the generic table
of bad values, and the classification of one call.

Protocol: start from one valid call per public callable, make *one* argument bad at a time and classify the
outcome (:func:`classify`):

* ``refused``  -- ``ValueError`` or ``TypeError`` whose message names the argument (as a word), within
  :data:`TIME_LIMIT_S`;
* ``silent``   -- returned NaN or inf (anywhere in the result);  ``accepted`` -- returned a finite result;
* ``unnamed``  -- ``ValueError`` / ``TypeError`` whose message does not name the argument;
* ``memory``   -- ``MemoryError``: an allocation over the (capped, :func:`capped_memory`) address space;
* ``other``    -- any other exception (``SystemExit`` included);  ``hang`` -- still running after the limit.

The bad values of a number, a choice or a flag come from :func:`generic_bad_values` (NaN, +-inf, complex, bool,
None, strings including :data:`EVIL`, which would create :data:`MARKER` if it were evaluated, huge integers,
wrong shapes, out-of-range values) and from hypothesis (:func:`bad_strategy`); each suite adds its own kinds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import re
import resource
import signal
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import sympy as sp

try:  # hypothesis is a test dependency; the tables alone still run without it
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    st = None

#: per-call time limit of the protocol (seconds)
TIME_LIMIT_S = 2.0
MARKER = Path(tempfile.gettempdir()) / f"theory_fuzz_pwned_{os.getpid()}"
EVIL = f"__import__('os').system('touch {MARKER}')"
NAN, INF = float("nan"), float("inf")
#: the outcomes of :func:`classify`, in report order
OUTCOMES = ("refused", "silent", "accepted", "unnamed", "memory", "other", "hang")


# ---------------------------------------------------------------------------------------------- argument kinds
@dataclass(frozen=True)
class Arg:
    """Domain of one argument, from which its bad values are generated.

    kind: ``real`` / ``int`` / ``complex`` numbers (``array``: arrays allowed too, ``ndim``: their dimension),
    ``choice`` (strings of ``choices``), ``flag``, or a kind of one suite's own table.
    """

    kind: str
    low: Any = None
    high: Any = None
    low_open: bool = False
    high_open: bool = False
    symbolic: bool = False
    array: bool = False
    ndim: int | None = None
    choices: tuple = ()
    ignore_case: bool = False
    extra: tuple = ()  # argument-specific bad values
    none_ok: bool = False  # None is valid (a default)

    def valid_number(self, v: Any) -> bool:
        """Is the real number ``v`` inside this argument's domain (integrality included)?"""
        if not math.isfinite(v):
            return False
        if self.kind == "int" and v != int(v):
            return False
        if self.low is not None and (v <= self.low if self.low_open else v < self.low):
            return False
        if self.high is not None and (v >= self.high if self.high_open else v > self.high):
            return False
        return True


def real(low=None, high=None, low_open=False, high_open=False, **kw) -> Arg:
    return Arg("real", low, high, low_open, high_open, **kw)


def pos(**kw) -> Arg:
    return real(0, low_open=True, **kw)


def nonneg(**kw) -> Arg:
    return real(0, **kw)


def integer(low=None, high=None, **kw) -> Arg:
    return Arg("int", low, high, **kw)


def choice(*options: str, ignore_case: bool = False, **kw) -> Arg:
    return Arg("choice", choices=options, ignore_case=ignore_case, **kw)


JUNK = [("None", None), ("str", "abc"), ("evil str", EVIL), ("object", object()), ("bool", True),
        ("np.bool_", np.bool_(False)), ("dict", {"v": 1}), ("bytes", b"1")]


def _below(low: Any) -> Any:
    """A number clearly below ``low`` (``low - 1`` would round to ``low`` for ``|low| >= 2**53``)."""
    return low - 1 if isinstance(low, int) else low - max(1.0, abs(low))


def _above(high: Any) -> float:
    return high + max(1.0, abs(high))


def _number_bad(a: Arg) -> list[tuple[str, Any]]:
    out = JUNK + [("nan", NAN), ("inf", INF), ("-inf", -INF), ("np.nan", np.float64(NAN)),
                  ("sp.nan", sp.nan), ("sp.zoo", sp.zoo), ("sp.oo", sp.oo)]
    if a.kind == "complex":
        out += [("complex nan", complex(NAN, 1.0)), ("complex inf", complex(1.0, INF))]
    else:
        out += [("complex", 1.0 + 1.0j), ("np.complex", np.complex128(2j)), ("sp.I", sp.I)]
    if not a.symbolic:
        out += [("symbol", sp.Symbol("t")), ("huge int", 10**400)]
    if not a.array:
        out += [("wrong shape", np.array([1.0, 2.0])), ("list", [1.0, 2.0])]
    if a.kind == "int":
        base = a.low if a.low is not None else 0
        out += [("non-integral", base + 0.5)]
        if a.symbolic:
            out += [("sp non-integral", sp.Rational(2 * base + 1, 2))]
    if a.low is not None:
        out += [("below range", _below(a.low))] + ([("at open bound", a.low)] if a.low_open else [])
    if a.high is not None:
        out += [("above range", a.high + 1 if a.kind == "int" else _above(a.high))]
        out += [("at open upper bound", a.high)] if a.high_open else []
        if a.kind == "int":
            out += ([("10**13", 10**13)] if a.high < 10**13 else []) + [("huge int", 10**400)]
    if a.array:
        out += _array_bad(a)
    return out


def _array_bad(a: Arg) -> list[tuple[str, Any]]:
    good = 1.0 if a.low is None else (a.low + 1.0)
    if a.high is not None and good >= a.high:
        good = a.high - 1.0
    out = [("array nan", np.array([good, NAN])), ("array inf", np.array([INF])), ("array str", np.array(["a"])),
           ("array object", np.array([good, None], dtype=object)), ("empty", np.array([])),
           ("array bool", np.array([True])), ("ragged", [[good], [good, good]])]
    if a.kind != "complex":
        out += [("array complex", np.array([good + 1j]))]
    if a.low is not None:
        out += [("array below range", np.array([good, _below(a.low)]))]
    if a.high is not None:
        out += [("array above range", np.array([good, _above(a.high)]))]
    if a.ndim == 1:
        out += [("2-d array", np.full((2, 2), good))]
    return out


GENERIC_KINDS = ("real", "int", "complex", "choice", "flag")


def generic_bad_values(a: Arg) -> list[tuple[str, Any]]:
    """The bad values of a number, a choice or a flag (``a.kind`` in :data:`GENERIC_KINDS`); ``None`` left out when
    it is valid, ``a.extra`` added."""
    if a.kind in ("real", "int", "complex"):
        out = _number_bad(a)
    elif a.kind == "choice":
        out = JUNK + [("unknown", "no-such-option"), ("int", 1), ("nan", NAN), ("list", list(a.choices[:1]))]
        if not a.ignore_case and a.choices[0].upper() != a.choices[0]:
            out += [("upper case", a.choices[0].upper())]
    elif a.kind == "flag":
        out = [("None", None), ("str", "yes"), ("evil str", EVIL), ("int", 1), ("float", 0.0), ("nan", NAN),
               ("array", np.array([True]))]
    else:  # pragma: no cover
        raise AssertionError(a.kind)
    if a.none_ok:
        out = [(k, v) for k, v in out if v is not None]
    return out + list(a.extra)


# ---------------------------------------------------------------------------------------------- running a call
class Timeout(BaseException):
    """Raised by SIGALRM inside a call that runs past the time limit (a BaseException: not swallowed)."""


def _alarm(signum, frame):  # pragma: no cover - only on a hang
    raise Timeout


def nonfinite(result: Any, depth: int = 0) -> bool:
    """Is there a NaN or an infinity anywhere in ``result`` (containers, dataclasses, sympy, numpy)?"""
    if depth > 4:
        return False
    if isinstance(result, (tuple, list)):
        return any(nonfinite(r, depth + 1) for r in result)
    if isinstance(result, dict):
        return any(nonfinite(r, depth + 1) for r in result.values())
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return any(nonfinite(getattr(result, f.name), depth + 1) for f in dataclasses.fields(result))
    if isinstance(result, sp.Basic):
        return bool(result.has(sp.nan, sp.zoo, sp.oo, -sp.oo))
    if isinstance(result, (int, np.integer)):
        return False
    if isinstance(result, (float, complex, np.number)):
        return not np.isfinite(result)
    if isinstance(result, np.ndarray) and result.dtype.kind in "fc":
        return not bool(np.all(np.isfinite(result)))
    return False


def names(message: str, name: str) -> bool:
    """Does ``message`` name the argument ``name`` as a word (``c`` is not named by "complex", ``n`` not by "an")?"""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message) is not None


def _one_line(text: str, limit: int) -> str:
    return " ".join(str(text).split())[:limit]


def classify(func: Callable[..., Any], kwargs: dict[str, Any], name: str) -> tuple[str, str]:
    """``(outcome, detail)`` of ``func(**kwargs)`` whose argument ``name`` is bad (see the module docstring)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT_S)
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = func(**kwargs)
        outcome = "silent" if nonfinite(result) else "accepted"
        detail = _one_line(repr(result), 80)
    except Timeout:
        outcome, detail = "hang", f"> {TIME_LIMIT_S} s"
    except (ValueError, TypeError) as exc:
        outcome = "refused" if names(str(exc), name) else "unnamed"
        detail = f"{type(exc).__name__}: {_one_line(exc, 150)}"
    except MemoryError as exc:
        outcome, detail = "memory", f"MemoryError: {str(exc)[:150]}"
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - classified, not hidden
        outcome, detail = "other", f"{type(exc).__name__}: {_one_line(exc, 150)}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    if outcome == "refused" and time.perf_counter() - t0 > TIME_LIMIT_S:
        outcome = "hang"
    return outcome, detail


def restore_limits() -> None:
    """Undo a ``theory.set_limits`` made by a fuzzed call."""
    import theory

    if hasattr(theory, "set_limits"):
        theory.set_limits(**dataclasses.asdict(theory.Limits()))


@contextlib.contextmanager
def capped_memory(extra_gib: float = 6.0) -> Iterator[None]:
    """Cap the address space at its current size + ``extra_gib`` inside the block (a huge allocation then fails at
    once with ``MemoryError`` instead of swapping a shared machine); restored afterwards.  Not where CUDA is
    available (a CUDA context reserves far more address space than it uses)."""
    old = resource.getrlimit(resource.RLIMIT_AS)
    import torch

    if torch.cuda.is_available():
        yield
        return
    try:
        vm = int(Path("/proc/self/status").read_text().split("VmSize:")[1].split()[0]) * 1024
    except (OSError, IndexError, ValueError):
        yield
        return
    cap = vm + int(extra_gib * 2**30)
    if old[1] != resource.RLIM_INFINITY:
        cap = min(cap, old[1])
    resource.setrlimit(resource.RLIMIT_AS, (cap, old[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, old)


def report_line(title: str, counts: Counter) -> str:
    """``"<title>: N bad calls: refused .., silent .., ...; strings evaluated: 0|1"``."""
    parts = ", ".join(f"{k} {counts.get(k, 0)}" for k in OUTCOMES)
    return f"{title}: {sum(counts.values())} bad calls: {parts}; strings evaluated: {int(MARKER.exists())}"


# ---------------------------------------------------------------------------------------------- hypothesis
def bad_numbers(a: Arg):
    """A hypothesis strategy of values outside the domain of a number argument ``a``."""
    parts = [st.sampled_from([NAN, INF, -INF]), st.text(max_size=20), st.none(), st.booleans()]
    if a.kind != "complex":
        parts.append(st.complex_numbers(allow_nan=False, allow_infinity=False).filter(lambda v: v.imag != 0))
    floats = st.floats(allow_nan=False, allow_infinity=False)
    parts.append(floats.filter(lambda v: not a.valid_number(v)) if (a.low, a.high) != (None, None)
                 or a.kind == "int" else st.just(NAN))
    if a.kind == "int":
        lo = st.integers(max_value=a.low - 1) if a.low is not None else st.nothing()
        hi = st.integers(min_value=a.high + 1) if a.high is not None else st.nothing()
        parts += [lo, hi]
    if a.kind == "real" and a.low is not None:
        parts.append(st.integers(max_value=int(math.floor(a.low)) - (0 if a.low_open else 1)))
    return st.one_of(*parts)


def bad_strategy(a: Arg):
    """A hypothesis strategy of bad values of a number, a choice or a flag (:data:`GENERIC_KINDS`)."""
    if a.kind in ("real", "int", "complex"):
        return bad_numbers(a)
    text = st.text(max_size=30)
    if a.kind == "choice":
        valid = {s.lower() for s in a.choices} if a.ignore_case else set(a.choices)
        return st.one_of(text.filter(lambda s: (s.lower() if a.ignore_case else s) not in valid),
                         st.integers(), st.floats(), st.none())
    if a.kind == "flag":
        return st.one_of(text, st.integers(), st.floats(), st.none())
    raise AssertionError(a.kind)  # pragma: no cover


@dataclass
class Case:
    """One valid call ``func(**kwargs)`` of module ``module`` and the domains of the arguments to fuzz."""

    label: str
    module: str
    func: Callable[..., Any]
    kwargs: dict[str, Any]
    args: dict[str, Arg]
    bad_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> extra kwargs with the bad one
    drop: dict[str, frozenset] = field(default_factory=dict)  # labels of the generic table that are valid here
    named: dict[str, str] = field(default_factory=dict)  # the name messages use for an argument, when not its own
