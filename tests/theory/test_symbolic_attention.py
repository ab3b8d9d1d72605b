"""The solvers as sympy functions: symbolic gamma / c in AttentionModel.error, null and structured (evalf,
diff by implicit derivatives, series at a number, lambdify, plot), the closed forms of mp_density, mp_stieltjes and
kernel_density for symbolic input, and the Taylor machinery behind them (theory._jets, theory.implicit).

Tolerances
----------
* Numeric paths are compared with ``==``: a symbolic object evaluated at a float calls the numeric function itself.
* Derivatives against central differences with step ``h``: the truncation error of ``(E(g+h) - E(g-h)) / 2h`` is
  ``h^2 E'''/6 = h^2 |e_3|`` (``e_k`` the Taylor coefficients, from the code under test, so the bound scales with
  the function) and the rounding error ``2 eps_E |E| / 2h`` with ``eps_E = 1e-11``, the solver's relative accuracy
  (Newton tolerance 1e-12, exact integrals; ``AttentionModel.error`` agrees with its quadrature variant to ~1e-13).
  The tolerance is twice their sum.  Second differences likewise: ``h^2 E''''/12 = 2 h^2 |e_4|`` and
  ``4 eps_E |E| / h^2``.
* A Taylor polynomial of order ``K`` at ``g0``, evaluated at ``g0 + s``: the remainder is bounded by
  ``2 |e_{K+1}| |s|^{K+1}`` when the coefficients fall at least geometrically by ``|s|`` / 2 (checked in the test).
"""

from __future__ import annotations

import doctest
import inspect

import matplotlib
import numpy as np
import pytest
import sympy as sp

matplotlib.use("Agg")

import theory  # noqa: E402
from theory import AttentionModel, Spike  # noqa: E402
from theory import (  # noqa: E402
    kernel_density,
    mp_density,
    mp_stieltjes,
    mp_stieltjes_expr,
    null_system_taylor,
    solve_null_system_full,
)
from theory._jets import Jet  # noqa: E402
from theory.symbolic import NumericFunction  # noqa: E402
from theory.symbols import c, gamma  # noqa: E402

EPS_E = 1e-11  # relative accuracy of the solver's values (module docstring)


def _fd_tolerance(e: np.ndarray, h: float) -> float:
    """Twice the truncation plus rounding error of a central difference (module docstring)."""
    return 2 * (h * h * abs(e[3]) + EPS_E * abs(e[0]) / h)


# ----------------------------------------------------------------------------------------------- construction
def test_symbolic_gamma_gives_a_sympy_function_and_numbers_stay_floats():
    E = AttentionModel(2, "tanh").error(gamma)
    assert isinstance(E, NumericFunction) and isinstance(E, sp.Expr)
    assert E.free_symbols == {gamma}
    assert str(E) == "attention_error(gamma, 2, 'tanh')"
    assert E == AttentionModel(2, "tanh").error(gamma)  # equal calls, equal objects
    assert E != AttentionModel(2, "erf").error(gamma)
    assert E != AttentionModel(2, "tanh").error(gamma, system="spec")
    assert type(AttentionModel(2.0, "tanh").error(0.01)) is float  # numbers: the numeric path, unchanged
    assert type(AttentionModel(2, "tanh").error(sp.Rational(1, 100))) is float  # a sympy number is a number
    assert isinstance(AttentionModel(2.0, "tanh").error(np.array([0.01, 0.1])), np.ndarray)


def test_evaluation_calls_the_numeric_function():
    E = AttentionModel(2, "tanh").error(gamma)
    for g in (0.01, 0.3):
        assert float(E.subs(gamma, g)) == AttentionModel(2, "tanh").error(g)
    exact = E.subs(gamma, sp.Rational(1, 100))
    assert isinstance(exact, NumericFunction)  # exact numbers stay unevaluated (as sin(1) does)
    assert float(sp.N(exact)) == AttentionModel(2, "tanh").error(0.01)
    assert E.evalf() == E  # free symbols: nothing to evaluate
    Ec = AttentionModel(c, "tanh", diagonal="kept").error(0.01)
    assert float(Ec.subs(c, 0.5)) == AttentionModel(0.5, "tanh", diagonal="kept").error(0.01)


def test_structured_symbolic_path_matches_the_numeric_one():
    model = AttentionModel(2, "tanh", snr=1.0, spike=(4.0, "aligned"))
    E = model.error(gamma)
    assert str(E) == "structured_attention_error(gamma, 2, 'tanh', 1.0, w_k=(2.0,), w_q=(2.0,))"
    assert float(E.subs(gamma, 0.1)) == model.error(0.1)
    spike = Spike(np.array([1.0, 0.5]), [0.3, 0.2])
    E2 = AttentionModel(c, {"a1": 0.5, "sf2": 0.1}, 1.0, spike=spike).error(gamma)
    assert float(E2.subs({c: 2, gamma: 0.2})) == AttentionModel(2, {"a1": 0.5, "sf2": 0.1}, 1.0, spike=spike).error(0.2)


# ----------------------------------------------------------------------------------------------- derivatives
@pytest.mark.parametrize("g0, model, options", [
    (0.1, AttentionModel(2.0, "tanh"), {}),
    (0.5, AttentionModel(0.5, "erf"), {"system": "spec"}),
    (0.05, AttentionModel(4.0, "relu", diagonal="kept"), {}),
    (0.2, AttentionModel(2.0, "tanh", snr=1.0, spike=(4.0, "aligned")), {}),
])
def test_first_derivative_is_the_implicit_derivative(g0, model, options):
    E = model.error(gamma, **options)
    d = float(sp.diff(E, gamma).subs(gamma, g0))
    assert d == model.error_taylor(g0, order=1, **options)[1]  # what the derivative evaluates
    e = model.error_taylor(g0, order=3, **options)
    h = 1e-4 * g0
    fd = (model.error(g0 + h, **options) - model.error(g0 - h, **options)) / (2 * h)
    assert abs(d - fd) <= _fd_tolerance(e, h)


def test_second_derivative_against_second_differences():
    g0, h = 0.1, 2e-3
    E = AttentionModel(2, "tanh").error(gamma)
    d2 = float(sp.diff(E, gamma, 2).subs(gamma, g0))
    e = AttentionModel(2, "tanh").error_taylor(g0, order=4)
    vals = [AttentionModel(2, "tanh").error(g0 + s * h) for s in (-1, 0, 1)]
    fd2 = (vals[0] - 2 * vals[1] + vals[2]) / h**2
    assert abs(d2 - fd2) <= 2 * (2 * h * h * abs(e[4]) + 4 * EPS_E * abs(e[0]) / h**2)


def test_derivative_in_c_stays_unevaluated():
    d = sp.diff(AttentionModel(c, "tanh").error(gamma), c)
    assert isinstance(d, sp.Derivative)
    printed = str(sp.diff(AttentionModel(c, "tanh").error(gamma), gamma))
    assert printed == "Derivative(attention_error(gamma, c, 'tanh'), gamma)"


def test_series_is_the_taylor_polynomial_from_the_implicit_derivatives():
    g0, K = 0.1, 3
    poly = sp.series(AttentionModel(2, "tanh").error(gamma), gamma, g0, K + 1).removeO()
    e = AttentionModel(2, "tanh").error_taylor(g0, order=K + 2)
    coeffs = sp.Poly(sp.expand(poly.subs(gamma, gamma + g0)), gamma).all_coeffs()[::-1]
    # each order is its own computation, refined to rtol = 1e-8 (null_system_taylor): two of them agree to 2e-8
    assert np.allclose([float(v) for v in coeffs], e[: K + 1], rtol=2e-8, atol=0)
    for s in (-0.01, 0.02):
        assert abs(e[K + 2] * s) <= abs(e[K + 1]) / 2  # geometric decay: the remainder bound applies
        err = abs(float(poly.subs(gamma, g0 + s)) - AttentionModel(2, "tanh").error(g0 + s))
        assert err <= 2 * abs(e[K + 1]) * abs(s) ** (K + 1) + EPS_E


def test_structured_derivative_matches_differences():
    g0, h = 0.2, 2e-5
    model = AttentionModel(2, "tanh", 1.0, spike=Spike([1.0, 0.5, 0.2], [0.3, -1.0, 0.7]))
    d = float(sp.diff(model.error(gamma), gamma).subs(gamma, g0))
    e = model.error_taylor(g0, order=3)
    # the traces by quadrature refined to rtol = 1e-8, against the exact traces of the numeric path
    assert abs(e[0] - model.error(g0)) <= 2e-8 * e[0]
    up, down = (model.error(g0 + s * h) for s in (1, -1))
    fd = (up - down) / (2 * h)
    assert abs(d - fd) <= _fd_tolerance(e, h)


# ----------------------------------------------------------------------------------------------- lambdify and plot
def test_lambdify_is_one_vectorised_solver_call():
    E = AttentionModel(2, "tanh").error(gamma)
    f = sp.lambdify(gamma, E)
    assert "numeric_function_values" in inspect.getsource(f)  # the _numpycode printer hook, no modules mapping
    grid = np.logspace(-3, 0, 7)
    assert np.array_equal(f(grid), AttentionModel(2, "tanh").error(grid))
    assert sp.lambdify(gamma, E, modules="math")(0.1) == AttentionModel(2, "tanh").error(0.1)
    f2 = sp.lambdify((gamma, c), AttentionModel(c, "tanh").error(gamma) + gamma)
    G, C = np.meshgrid([0.1, 0.3], [0.5, 2.0])
    assert np.array_equal(f2(G, C),
                          np.array([AttentionModel(C[i, 0], "tanh").error(G[i]) for i in range(2)]) + G)
    df = sp.lambdify(gamma, sp.diff(E, gamma))
    assert df(0.1) == AttentionModel(2, "tanh").error_taylor(0.1, order=1)[1]


def test_sympy_plot_draws_the_solver_values():
    p = sp.plot(AttentionModel(2, "tanh").error(gamma), (gamma, 1e-3, 1), adaptive=False, nb_of_points=4,
                show=False)
    x, y = p[0].get_points()  # sympy's plotting evaluates point by point: one solve per point
    assert np.array_equal(np.asarray(y, dtype=float), [AttentionModel(2, "tanh").error(float(v)) for v in x])


# ----------------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize("call, name", [
    (lambda: AttentionModel(2, "tanh").error(sp.Symbol("g", negative=True)), "gamma"),
    (lambda: AttentionModel(1e5, "tanh").error(gamma), "c"),
    (lambda: AttentionModel(sp.Symbol("t", negative=True), "tanh").error(gamma), "c"),
    (lambda: AttentionModel(2, "swishy").error(gamma), "activation"),
    (lambda: AttentionModel(2, "tanh").error(gamma, system="other"), "system"),
    (lambda: AttentionModel(2, "tanh", 1.0).error(gamma, system="other"), "system"),
    (lambda: AttentionModel(2, "tanh", snr=-1.0).error(gamma), "snr"),
    (lambda: AttentionModel(2, "tanh", diagonal="sometimes").error(gamma), "diagonal"),
    (lambda: AttentionModel(2, "tanh").error(gamma, bogus=1), "bogus"),
    (lambda: AttentionModel(2, "tanh", 1.0).error(gamma, bogus=1), "bogus"),
    (lambda: AttentionModel(2, "tanh", 1.0, spike=(1.0, "sideways")).error(gamma), "spike"),
    (lambda: AttentionModel(2, "tanh", 1.0, spike=Spike([1.0], None)).error(gamma), "w_k"),
    (lambda: AttentionModel(2, "tanh").error_taylor(0.1, order=25), "order"),
    (lambda: null_system_taylor(0.1, 2.0, 0.6, 0.03, rtol=0.5), "rtol"),
    (lambda: AttentionModel(c, "tanh").error(np.array([0.1, 0.2])), "c"),  # a grid of gamma needs a number c
])
def test_symbolic_calls_check_their_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# ----------------------------------------------------------------------------------------------- closed forms
def test_mp_closed_forms_for_symbolic_input():
    x, z, cs = sp.Symbol("x", positive=True), sp.Symbol("z"), sp.Symbol("c", positive=True)
    dens = mp_density(x, cs)
    assert isinstance(dens, sp.Piecewise)
    for xv, cv in ((1.0, 0.5), (0.5, 2.0), (3.0, 1.0), (5.0, 0.5)):  # inside and outside the support
        assert float(dens.subs({x: xv, cs: cv})) == pytest.approx(mp_density(xv, cv), rel=1e-14, abs=1e-300)
    assert mp_stieltjes(z, cs) == mp_stieltjes_expr(z, cs)
    for zv in (-1.0, 0.3 + 0.5j, 5.0 + 0.1j):
        got = complex(mp_stieltjes(z, 0.5).subs(z, zv))
        assert got == pytest.approx(mp_stieltjes(zv, 0.5), rel=1e-13)


def test_kernel_density_closed_forms_and_the_general_case():
    x = sp.Symbol("x", real=True)
    for xv in (0.3, -0.9):  # semicircle (a1 = 0) and shifted Marchenko-Pastur (nu = a1^2)
        assert float(kernel_density(x, 2, 0, 1).subs(x, xv)) == pytest.approx(kernel_density(xv, 2, 0, 1), abs=1e-9)
    sym_a = sp.Symbol("a", positive=True)
    mp_form = kernel_density(x, sp.Rational(1, 2), sym_a, sym_a**2)
    assert float(mp_form.subs({sym_a: 0.7, x: 0.3})) == pytest.approx(kernel_density(0.3, 0.5, 0.7, 0.49), abs=1e-8)
    with pytest.raises(theory.ArgumentTypeError, match="^x must be numbers here: kernel_density has no closed form"):
        kernel_density(x, 2, 0.6, 0.4)


# ----------------------------------------------------------------------------------------------- the machinery
def test_jets_are_truncated_power_series():
    s = sp.Symbol("s")
    expr = (1 + 2 * s) ** 2 / (3 - s + s**2) - 1 / (2 + s) ** 3
    want = sp.Poly(sp.series(expr, s, 0, 6).removeO(), s).all_coeffs()[::-1]
    v = Jet.variable(0.0, 5)
    got = (1 + 2 * v) ** 2 / (3 - v + v * v) - 1 / (2 + v) ** 3
    assert np.allclose(got.coefficients, [float(w) for w in want], rtol=1e-14, atol=1e-15)
    M = Jet(np.stack([np.array([[2.0, 1.0], [0.0, 3.0]]), np.eye(2), np.zeros((2, 2))]))
    prod = M @ M.inverse()
    assert np.allclose(prod.coefficients[0], np.eye(2)) and np.allclose(prod.coefficients[1:], 0.0, atol=1e-15)


def test_null_taylor_orders_0_and_1_are_the_solver_and_order_2_its_derivative():
    a1, sf2 = 0.6057, 0.0274
    t = null_system_taylor(0.1, 1.0, a1, sf2, order=4)  # c = 1: the hard edge of mu_G
    sol = solve_null_system_full(-0.1, 1.0, a1, sf2)[0]
    assert (t.delta_tilde[0], t.delta_tilde[1]) == (sol.delta_tilde, -sol.ddelta_tilde_dz)
    assert t.quadrature_error <= 1e-8 and t.n_nodes >= 800
    h = 1e-4
    s = solve_null_system_full([-(0.1 + h), -(0.1 - h)], 1.0, a1, sf2)
    fd = (-s[0].ddelta_tilde_dz + s[1].ddelta_tilde_dz) / (2 * h)  # d/dgamma of the solver's exact derivative
    # central difference of the first derivative: truncation 4 h^2 |t_4|, rounding EPS_E |t_1| / h
    assert abs(2 * t.delta_tilde[2] - fd) <= 2 * (4 * h * h * abs(t.delta_tilde[4]) + EPS_E * abs(t.delta_tilde[1]) / h)
    old = theory.set_limits(max_quadrature_nodes=800)  # two rules only (400, 800): the failure path, quickly
    try:
        with pytest.raises(RuntimeError, match="rtol"):
            null_system_taylor(0.1, 1.0, a1, sf2, order=2, rtol=1e-14)  # beyond the Gauss-Jacobi weights' accuracy
    finally:
        theory.set_limits(max_quadrature_nodes=old.max_quadrature_nodes)


def _run_examples(module, names=None):
    """The docstring examples of ``module`` (or of its ``names`` only); returns the number of failures."""
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    objs = [(module.__name__, module)] if names is None else [(n, getattr(module, n)) for n in names]
    for name, obj in objs:
        for test in finder.find(obj, name, module=module, globs=vars(module).copy()):
            runner.run(test)
    return runner.failures


def test_doctests_of_the_symbolic_paths():
    import theory._jets
    import theory.implicit
    import theory.kernel_spectrum
    import theory.marchenko_pastur
    import theory.settings
    import theory.symbolic

    for mod in (theory._jets, theory.implicit, theory.symbolic, theory.marchenko_pastur, theory.kernel_spectrum,
                theory.attention):
        assert _run_examples(mod) == 0, mod.__name__
    assert _run_examples(theory.settings, ["AttentionModel"]) == 0


def test_readme_library_example_runs(tmp_path, monkeypatch):
    """The README's example of the sympy functions and the laws ("Using it as a library") runs as printed."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S) if "MarchenkoPastur" in b]
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), ns)  # noqa: S102 - our own README
    assert round(float(sp.diff(ns["E"], gamma).subs(gamma, 0.1)), 3) == 1.623
    assert round(ns["mp"].cdf(1.0), 4) == 0.576
