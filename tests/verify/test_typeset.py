"""Formulas typeset by sympy's printers (:mod:`verify.typeset`): MathML in report.html, LaTeX in report.md, the plain
text kept in report.json; a text that is not a formula stays text, and no text reaches more than sympy's parser on
a namespace of symbols and a few functions."""

from __future__ import annotations

import time

import pytest
import sympy as sp

from verify.report import markdown_report, to_json
from verify.report_html import html_report
from verify.results import CheckResult, Comparison, Verdict
from verify.typeset import formula, latex_text, mathml_html

META = {"profile": "quick", "seed": 0, "strict": False, "started_utc": "now", "python": "3", "platform": "p"}
#: texts as paper A's A1 stores them (str of sympy expressions)
A1_TEXTS = ["-2*beta/(2*beta + 1)",
            "2*(-beta*log(M) + beta + 2*(2*beta + 1)*Max(1, 2*beta))/((2*beta + 1)*log(M))",
            "log(M)**(-2*beta/(2*beta + 1) - 4*Max(1, 2*beta))/N**(2*beta/(2*beta + 1))",
            "(M/log(M))**(1/(2*beta + 1))*log(M)/M", "4/5"]


@pytest.mark.parametrize("text", A1_TEXTS)
def test_a1_formulas_read_back_as_the_same_expression(text):
    expr, rest = formula(text)
    beta, M, N = sp.symbols("beta M N")
    assert rest == "" and sp.simplify(expr - sp.sympify(text, locals={"beta": beta, "M": M, "N": N})) == 0
    html = mathml_html(text, text)
    assert html.startswith(f'<math alttext="{text}">') and html.endswith("</math>")
    assert "<mfrac>" in html and "*" not in html.split(">", 1)[1]  # typeset: a fraction, no "*" of the text
    assert latex_text(text, text).startswith("$") and "\\frac" in latex_text(text, text)


def test_a_formula_then_text_keeps_the_text():
    html = mathml_html("2/(2*beta + 1)**2; is_positive=True", "plain")
    assert html.endswith("</math>; is_positive=True") and "<mi>&#946;</mi>" in html
    assert latex_text("2/(2*beta + 1)**2; is_positive=True", "x") == "$\\frac{2}{\\left(2 \\beta + 1\\right)^{2}}$; " \
                                                                       "is_positive=True"


@pytest.mark.parametrize("text", ["> 0", "log(lower/upper) <= 0", "cond(M) and not cond(M-1) (or M = 3)",
                                  "68/68 agree, 17 true / 51 false", "1", "-0.25", "1.5e-05", "E_att < E_RR",
                                  "d rate / dM < 0"])
def test_text_that_is_not_a_formula_stays_text(text):
    assert formula(text) == (None, "")
    assert mathml_html(text, text) == text.replace("<", "&lt;").replace(">", "&gt;")
    assert latex_text(text, text) == text


@pytest.mark.parametrize("text", ["__import__(os).system(ls)", "open(x)", "x.__class__", "exec(x)", "eval(x)",
                                  "9**9**9**9", "x**(10**10**10)", "(" * 300 + "x" + ")" * 300, "x" * 2000,
                                  "lambda: x", "[x for x in y]", "'a'"])
def test_hostile_text_stays_text_at_once(text):
    t0 = time.perf_counter()
    assert formula(text) == (None, "")
    assert time.perf_counter() - t0 < 1.0


def test_sympy_values_are_typeset_as_made_and_stored_as_text(tmp_path):
    beta = sp.Symbol("beta", positive=True)
    value = -2 * beta / (2 * beta + 1)
    c = Comparison("slope limit", value, value, None, "exact limit", True)
    r = CheckResult("A1", "A", "claim", Verdict.PASS, [c], 1.0)
    page = html_report([r], META, 0, tmp_path)
    # summary table, headline and the table of comparisons: predicted and measured each
    assert page.count("<math") == 6 and "2*beta" not in page.replace('alttext="-2*beta/(2*beta + 1)"', "")
    md = markdown_report([r], META, 0, tmp_path)
    assert "$- \\frac{2 \\beta}{2 \\beta + 1}$" in md
    stored = to_json([r], dict(META))["results"][0]["comparisons"][0]
    assert stored["predicted"] == stored["measured"] == "-2*beta/(2*beta + 1)"  # report.json: the plain text
