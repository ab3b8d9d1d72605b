"""What a cached cell is called: canonical JSON, the SHA-256 cache keys (with the code they follow), source versions and
the seeds derived from a cell (numerics.sweep's keys, shared with verify's context cache).

Private: :mod:`numerics.sweep` re-exports ``cache_key``, ``cell_seed``, ``source_version`` and ``to_jsonable``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import weakref
from typing import Any, Callable, Mapping

import numpy as np

from theory.validation import check_choice, check_seed


# ----------------------------------------------------------------------------------------- helpers
#: what :func:`to_jsonable` does with a NaN or an infinity: keep the float, write ``str(v)``, write ``None``
NONFINITE_POLICIES = ("keep", "str", "null")
#: what :func:`to_jsonable` does with a value of any other type: raise ``ValueError``, write ``str(v)``, keep it
UNKNOWN_POLICIES = ("raise", "str", "keep")


def to_jsonable(v: Any, nonfinite: str = "keep", unknown: str = "raise") -> Any:
    """Convert numpy scalars / arrays, mappings and tuples to plain JSON values (recursively).

    The project's one JSON conversion: the sweep cache and its keys (the defaults), the verify report
    (``nonfinite="str", unknown="str"``) and the benchmark summary (``nonfinite="null", unknown="keep"``).

    Parameters
    ----------
    v : any
        numpy scalars become Python scalars, arrays nested lists, mappings dicts with ``str`` keys, tuples lists;
        ``str``, ``int``, ``float``, ``bool`` and ``None`` stay as they are.
    nonfinite : {"keep", "str", "null"}
        A NaN or infinite float (numpy ones included): kept (``json.dumps`` writes ``NaN`` / ``Infinity``),
        written as ``str(v)`` (``"nan"``, ``"inf"``, ``"-inf"``) or as ``None``.
    unknown : {"raise", "str", "keep"}
        Any other value: ``ValueError``, ``str(v)``, or kept as it is (for a later ``json.dumps(default=...)``).

    Returns
    -------
    any
        A value made of dicts, lists, strings, numbers, booleans and ``None`` (and the kept values).

    Raises
    ------
    ValueError
        A bad policy, or (``unknown="raise"``) a value that is not JSON-serialisable.

    Examples
    --------
    >>> import numpy as np
    >>> to_jsonable({"a": np.float64(0.5), 1: (np.int64(2), np.array([1.0, np.nan]))})
    {'a': 0.5, '1': [2, [1.0, nan]]}
    >>> to_jsonable([float("inf"), np.nan], nonfinite="str"), to_jsonable([float("inf")], nonfinite="null")
    (['inf', 'nan'], [None])
    """
    check_choice("nonfinite", nonfinite, NONFINITE_POLICIES)
    return to_json(v, nonfinite, check_choice("unknown", unknown, UNKNOWN_POLICIES))


def to_json(v: Any, nonfinite: str, unknown: str) -> Any:
    """:func:`to_jsonable` without the policy checks."""
    if isinstance(v, np.ndarray):
        return array_to_json(v, nonfinite, unknown)
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return v if nonfinite == "keep" else (str(v) if nonfinite == "str" else None)
    if isinstance(v, Mapping):
        return {str(k): to_json(x, nonfinite, unknown) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [to_json(x, nonfinite, unknown) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if unknown == "raise":
        raise ValueError(f"value {v!r} of type {type(v).__name__} is not JSON-serialisable")
    return str(v) if unknown == "str" else v


def array_to_json(a: np.ndarray, nonfinite: str, unknown: str) -> Any:
    """An array as nested lists; element by element only where a policy can change an element."""
    out = a.tolist()
    if a.dtype.kind in "biu" or (a.dtype.kind == "f" and (nonfinite == "keep" or bool(np.isfinite(a).all()))):
        return out  # already plain bools / ints / floats, and no element to rewrite
    return to_json(out, nonfinite, unknown)


def canonical(obj: Any) -> str:
    return json.dumps(to_jsonable(obj), sort_keys=True, separators=(",", ":"), allow_nan=True)


def qualname(func: Callable) -> str:
    mod = getattr(func, "__module__", None)
    qn = getattr(func, "__qualname__", None)
    if mod is None or qn is None or "<lambda>" in qn or "<locals>" in qn:
        raise ValueError(f"func must be a top-level (picklable) function, got {func!r}")
    return f"{mod}.{qn}"


def cache_key(func: Callable, cell: Mapping[str, Any], seed: int, version: str = "1", *,
              source: bool = True) -> str:
    """Stable SHA-256 key of ``(qualified name of func, its code, cell, seed, version)``.

    Parameters
    ----------
    func : callable
        Top-level function.
    cell : mapping
        JSON-serialisable configuration.
    seed : int
    version : str
        Bump it when ``func``'s meaning changes in a way its code does not show (data files, other libraries).
    source : bool
        Hash the code of ``func`` and of the project functions it calls into the key (:func:`code_digest`), so that a
        function redefined with another body (an edited notebook cell) gets new keys instead of the old cached values.
        ``False``: only the qualified name (``version`` already hashes the code, or ``func`` only names a kind of cell).

    Returns
    -------
    str
        64 hex digits.

    Examples
    --------
    >>> def f(cell, seed):
    ...     return {"x": cell["a"] + seed}
    >>> k = cache_key(f, {"a": 1}, 0)
    >>> def f(cell, seed):  # the same name, another body
    ...     return {"x": 2 * cell["a"] + seed}
    >>> cache_key(f, {"a": 1}, 0) != k
    True
    """
    fields = {"func": qualname(func), "cell": dict(cell), "seed": check_seed("seed", seed),
              "version": str(version)}
    if source:
        fields["code"] = code_digest(func)
    text = canonical(fields)
    return hashlib.sha256(text.encode()).hexdigest()


#: top-level packages whose functions count as "the project" for :func:`code_digest` (with ``func``'s module)
PROJECT_PACKAGES = ("theory", "numerics", "verify")
#: most functions :func:`code_digest` hashes for one ``func`` (itself and the project functions it reaches)
MAX_CODE_FUNCTIONS = 500


def code_digest(func: Callable) -> str:
    """SHA-256 of the code of ``func`` and of the project functions it calls (by global name, recursively).

    Each function contributes its source, parsed and dumped by :mod:`ast` without docstrings (so comments, layout and
    docstrings do not matter; :func:`inspect.getsource` finds the source of files and of IPython / Jupyter cells), or,
    when no source is available (``exec``'d code), its code object: bytecode, constants and names.  The functions it
    calls are the globals its code names that resolve to Python functions of its own module, of ``__main__`` or of
    :data:`PROJECT_PACKAGES` (attribute calls such as ``module.f`` and library functions are not followed).

    Parameters
    ----------
    func : callable
        A function (or a bound method: its function); any other callable contributes nothing.

    Returns
    -------
    str
        64 hex digits, the same in every process running the same code.

    Notes
    -----
    The source is read from the file when the key is made: a file edited after its module was imported gives the
    digest of the edited text while the imported code still runs (restart, or reload the module).
    """
    h = hashlib.sha256()
    for name, digest in sorted(reachable_digests(func)):
        h.update(f"{name}|{digest}|".encode())
    return h.hexdigest()


def python_function(obj: Any) -> Any:
    """The plain Python function behind ``obj`` (itself, a method's ``__func__``, a wrapper's ``__wrapped__``)."""
    import inspect
    import types

    obj = getattr(obj, "__func__", obj)
    with contextlib.suppress(ValueError):  # a cycle of __wrapped__
        obj = inspect.unwrap(obj)
    return obj if isinstance(obj, types.FunctionType) else None


def reachable_digests(func: Callable) -> set[tuple[str, str]]:
    """``(qualified name, own digest)`` of ``func`` and of the project functions it reaches (:func:`code_digest`)."""
    root = python_function(func)
    if root is None:
        return set()
    seen: dict[int, Any] = {}
    stack = [root]
    out: set[tuple[str, str]] = set()
    while stack and len(seen) < MAX_CODE_FUNCTIONS:
        f = stack.pop()
        if id(f) in seen:
            continue
        seen[id(f)] = f
        out.add((f"{f.__module__}.{f.__qualname__}", own_digest(f)))
        stack.extend(called_project_functions(f, root.__module__))
    return out


def called_project_functions(f: Any, home: str) -> list[Any]:
    """The project's Python functions (``home``, ``__main__``, :data:`PROJECT_PACKAGES`) ``f`` names or closes over."""
    names: list[str] = []
    codes = [f.__code__]
    while codes:  # the code of f and the code objects nested in its constants (inner functions, comprehensions)
        code = codes.pop()  # depth first, constants in order
        names.extend(code.co_names)
        codes.extend(reversed([c for c in code.co_consts if hasattr(c, "co_code")]))
    candidates = [f.__globals__.get(n) for n in dict.fromkeys(names)]
    for cell in f.__closure__ or ():
        with contextlib.suppress(ValueError):  # an empty closure cell
            candidates.append(cell.cell_contents)
    out = []
    for obj in candidates:
        g = python_function(obj) if callable(obj) else None
        module = getattr(g, "__module__", None)
        if g is not None and isinstance(module, str) and (
                module in (home, "__main__") or module.split(".")[0] in PROJECT_PACKAGES):
            out.append(g)
    return out


#: memo of :func:`own_digest`: function -> (its code object when hashed, digest)
OWN_DIGESTS: "weakref.WeakKeyDictionary[Any, tuple[Any, str]]" = weakref.WeakKeyDictionary()


def own_digest(f: Any) -> str:
    """Digest of one function's own code: its source without docstrings through :mod:`ast`, else its code object."""
    memo = OWN_DIGESTS.get(f)
    if memo is not None and memo[0] is f.__code__:
        return memo[1]
    text = source_text(f)
    digest = hashlib.sha256((text if text is not None else code_text(f.__code__)).encode()).hexdigest()
    OWN_DIGESTS[f] = (f.__code__, digest)
    return digest


def source_text(f: Any) -> str | None:
    """``ast.dump`` of the source of ``f`` without docstrings, or ``None`` when its source is not available."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(f)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return "source:" + ast.dump(tree, annotate_fields=False, include_attributes=False)


def code_text(code: Any) -> str:
    """A process-independent text of a code object: bytecode, names and constants (nested code recursively)."""
    consts = [code_text(c) if hasattr(c, "co_code") else repr(c) for c in code.co_consts]
    return "code:" + "|".join([code.co_code.hex(), ",".join(code.co_names), ",".join(code.co_varnames), *consts])


def source_version(prefix: str, *objects: Any) -> str:
    """A cache version that changes whenever the source of any of ``objects`` changes.

    Parameters
    ----------
    prefix : str
        Readable prefix (``"a-rates"``, ``"b-mc"``, ...).
    *objects : modules, classes or functions (hashed through :func:`inspect.getsource`), or plain values
        (module constants: hashed through ``repr``).

    Returns
    -------
    str
        ``"<prefix>-<12 hex digits>"``: the ``version`` of :func:`cache_key` / :func:`run_sweep`, so that an edit of
        the simulation code never returns a stale cache entry.
    """
    import inspect

    h = hashlib.sha256()
    for obj in objects:
        try:
            text = inspect.getsource(obj)
        except TypeError:  # a plain value
            text = repr(obj)
        h.update(text.encode())
    return f"{prefix}-{h.hexdigest()[:12]}"


#: cell keys that say WHERE a cell runs, not WHAT it simulates: left out of the replicate seeds (a GPU run fits the
#: same data as a CPU run, pair by pair), kept in the cache key
EXECUTION_KEYS = ("device",)
#: cell keys that only LABEL a cell (to find it in the results): left out of the replicate seeds as well
LABEL_KEYS = ("group",)


def seed_part(v: Any) -> Any:
    """The part of a cell value that enters a seed: integers, strings, booleans (recursively); floats never."""
    if isinstance(v, (bool, str, int, np.integer)) or v is None:
        return v.item() if isinstance(v, np.generic) else v
    if isinstance(v, (list, tuple)):
        parts = [seed_part(x) for x in v]
        return [x for x in parts if x is not DROP]
    if isinstance(v, dict):
        parts = {str(k): seed_part(x) for k, x in v.items()}
        return {k: x for k, x in parts.items() if x is not DROP}
    return DROP  # floats (computed values: their last bits depend on the BLAS code path) and anything else


DROP = object()


def cell_seed(base_seed: int, cell: Mapping[str, Any], replicate: int) -> int:
    """Independent 32-bit seed for replicate ``replicate`` of ``cell`` (hash of all three).

    Only the integers, strings and booleans of the cell enter the seed: a float (a noise level from a pilot, a ridge
    constant) never does, because its last bits can depend on the machine's BLAS code path and a seed that hashed
    them would redraw every data set on another CPU.  Cells that differ only in floats get the same replicate seeds
    (common random numbers, e.g. one design at two noise levels).  Neither do the keys of :data:`EXECUTION_KEYS` and
    :data:`LABEL_KEYS` (they do not change the data); the cache key (:func:`cache_key`) hashes the whole cell.

    Examples
    --------
    >>> cell_seed(0, {"M": 100}, 0)  # pinned: a change of the seed derivation shows here
    1446433724
    >>> cell_seed(0, {"M": 100}, 0) != cell_seed(0, {"M": 100}, 1)
    True
    >>> cell_seed(0, {"M": 100, "sigma": 0.1}, 0) == cell_seed(0, {"M": 100, "sigma": 0.2}, 0)
    True
    """
    data_cell = seed_part({k: v for k, v in cell.items() if k not in EXECUTION_KEYS + LABEL_KEYS})
    base_seed = check_seed("base_seed", base_seed)
    replicate = check_seed("replicate", replicate)
    text = canonical({"base": base_seed, "cell": data_cell, "rep": replicate})
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
