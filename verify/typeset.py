"""Formulas in the reports, typeset by sympy's own printers: MathML for report.html, LaTeX for report.md.

A comparison's ``predicted`` / ``measured`` value may be a formula: a sympy expression, or the text sympy printed for
one (A1 stores ``str(expr)``, e.g. ``"-2*beta/(2*beta + 1)"``; report.json keeps that text).  A text is read back as
a formula only when every character is a letter, digit, space or one of ``+ - * / ( ) , .`` and every name a single
letter, a Greek letter's name or one of :data:`FUNCTIONS`.  The parse runs on a namespace of those names only,
without Python's builtins (no text, whatever its origin, reaches anything else), and a power of numbers alone must
be small (no ``9**9**9``); the formula is sympy's own reading (possibly its canonical form, not the text's grouping).
Anything else (``"> 0"``, ``"68/68 agree"``, a number) stays text; ``"FORMULA; more"`` (A1's sign rows:
``"2/(2*beta + 1)**2; is_positive=True"``) typesets its formula and keeps the rest as text."""

from __future__ import annotations

import functools
import re
from html import escape
from typing import Any

import sympy as sp
from sympy.core.alphabets import greeks
from sympy.parsing.sympy_parser import parse_expr


#: the functions and constants a formula may name (besides single letters and Greek letters' names)
FUNCTIONS = ("log", "exp", "sqrt", "Max", "Min", "Abs", "oo", "pi", "E")
_CHARS = re.compile(r"[A-Za-z0-9_ .+\-*/(),]+")
_NAME = re.compile(r"(?<![\w.])[A-Za-z_][A-Za-z0-9_]*")  # not the "e" of 1e-25
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?")
#: longest text read as a formula (characters); longer ones stay text
MAX_CHARS = 400


def md_table(header: Any, rows: Any) -> list[str]:
    """A markdown table's lines: the ``header`` cells, the separator, one line per row of cells."""
    return ["| " + " | ".join(header) + " |", "|---" * len(header) + "|", *("| " + " | ".join(r) + " |" for r in rows)]


def _allowed(name: str) -> bool:
    """Whether a formula may name ``name``: one of :data:`FUNCTIONS`, a single letter or a Greek letter's name."""
    return name in FUNCTIONS or name in greeks or (len(name) == 1 and name.isascii() and name.isalpha())


@functools.lru_cache(maxsize=512)
def _parsed(text: str) -> Any:
    """The sympy expression that ``text`` prints (module docstring), or ``None``."""
    if len(text) > MAX_CHARS or not _CHARS.fullmatch(text) or not re.search(r"[A-Za-z*/]", text) \
            or _NUMBER.fullmatch(text.strip()) or "__" in text or not all(map(_allowed, _NAME.findall(text))):
        return None
    local = {n: getattr(sp, n) if n in FUNCTIONS else sp.Symbol(n) for n in _NAME.findall(text)}
    glob = {"Integer": sp.Integer, "Float": sp.Float, "Rational": sp.Rational, "Symbol": sp.Symbol, "Add": sp.Add,
            "Mul": sp.Mul, "Pow": sp.Pow, "__builtins__": {}}
    try:  # first unevaluated (builds the tree, computes nothing), then sympy's own reading
        if not _small_powers(parse_expr(text, local_dict=dict(local), global_dict=dict(glob), evaluate=False)):
            return None
        expr = parse_expr(text, local_dict=dict(local), global_dict=dict(glob))
    except Exception:  # noqa: BLE001 - any text sympy cannot read stays text
        return None
    return expr if isinstance(expr, sp.Expr) and not (expr.is_Integer or expr.is_Float) else None


def _small_powers(tree: Any) -> bool:
    """Whether every power of numbers alone in ``tree`` is a small integer power (``9**9**9`` would take minutes)."""
    for node in sp.preorder_traversal(tree):
        if isinstance(node, sp.Pow) and not node.free_symbols:
            base, exp = node.args
            if not (base.is_Integer and exp.is_Integer and abs(int(exp)) <= 64 and abs(int(base)) < 10**6):
                return False
    return True


def formula(value: Any) -> tuple[Any, str]:
    """``(expression, rest)``: the formula ``value`` shows (a sympy expression, or ``None`` when it shows none) and
    the text after it (``"; is_positive=True"``, else ``""``).

    >>> expr, rest = formula("2/(2*beta + 1)**2; is_positive=True")
    >>> str(expr), rest
    ('2/(2*beta + 1)**2', '; is_positive=True')
    >>> formula("> 0")
    (None, '')
    """
    if isinstance(value, sp.Basic):  # carried from where it was made: typeset as it is (a plain number stays text)
        return (value, "") if isinstance(value, sp.Expr) and not (value.is_Integer or value.is_Float) else (None, "")
    if not isinstance(value, str):
        return None, ""
    head, sep, tail = value.partition("; ")
    expr = _parsed(head)
    return (expr, sep + tail) if expr is not None else (None, "")


def mathml_html(value: Any, plain: str) -> str:
    """``value`` as HTML: its formula as a ``<math>`` element (presentation MathML: browsers render it without a
    script), ``plain`` as its ``alttext``, then any rest as text; without a formula: ``plain``, escaped."""
    expr, rest = formula(value)
    if expr is None:
        return escape(plain)
    body = sp.printing.mathml(expr, printer="presentation")
    alt = escape(plain if not rest else plain[: len(plain) - len(rest)], quote=True)
    return f'<math alttext="{alt}">{body}</math>' + escape(rest)


def latex_text(value: Any, plain: str) -> str:
    """``value`` for markdown: its formula as inline LaTeX (:func:`sympy.latex`), then any rest; else ``plain``."""
    expr, rest = formula(value)
    if expr is None:
        return plain
    return f"${sp.latex(expr)}$" + rest
