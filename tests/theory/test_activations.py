"""Tests of theory.activations: Hermite data against SPEC's table and independent quadrature."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from theory.activations import (
    ACTIVATIONS,
    activation,
    activation_asymptotic_slope,
    hermite_coefficients,
    hermite_moments,
    numpy_activation,
)
from theory.activations import _numeric_gauss  # independent quadrature route
from theory.symbols import x

# the Hermite data of the centred activations as docs/claims.md states them (4 decimals); the full-precision
# values come from tests/reference/make_hermite_reference.py (see test_hermite_moments_match_generated_...)
SPEC_TABLE = {
    "tanh": {"a1": 0.6057, "nu": 0.3943},
    "erf": {"a1": 0.6515, "nu": 0.4646},
    "relu": {"a0": 0.3989, "a1": 0.5, "nu": 0.5 - 1 / (2 * math.pi)},
    "sign": {"a1": 0.7979, "nu": 1.0},
    "cos": {"a1": 0.0},
}


@pytest.mark.parametrize("name", sorted(SPEC_TABLE))
def test_spec_hermite_table(name):
    hm = hermite_moments(name)
    for field, value in SPEC_TABLE[name].items():
        assert abs(getattr(hm, field) - value) < 5e-5, (name, field, getattr(hm, field), value)


def test_erf_convention_is_erf_of_x_not_x_over_sqrt2():
    # erf(x): a1 = 2/sqrt(3 pi), nu = (2/pi) asin(2/3) -- SPEC's numbers
    assert hermite_coefficients("erf", 1)[1] == 2 / sp.sqrt(3 * sp.pi)
    # erf(x / sqrt 2) would give a1 = 1/sqrt(pi) = 0.5642 and nu = 1/3, not SPEC's values
    hm = hermite_moments(sp.erf(x / sp.sqrt(2)))
    assert abs(hm.a1 - 1 / math.sqrt(math.pi)) < 1e-12
    assert abs(hm.nu - 1 / 3) < 1e-12


@pytest.mark.parametrize("name", ["identity", "linear"])
def test_linear_hermite_exact(name):
    assert hermite_coefficients(name, 5) == [0, 1, 0, 0, 0, 0]


def test_quadratic_hermite_exact():
    # x^2 = He_2 + 1 -> a0 = 1, a2 = sqrt(2)
    assert hermite_coefficients("quadratic", 3) == [1, 0, sp.sqrt(2), 0]


@pytest.mark.parametrize("name", ["relu", "sign", "cos", "sin", "erf", "gelu"])
def test_closed_forms_match_quadrature(name):
    raw = activation(name, centered=False)
    exact = hermite_coefficients(name, 3)
    for k, a in enumerate(exact):
        num = float(_numeric_gauss(raw, k)) / math.sqrt(math.factorial(k))
        assert abs(float(a) - num) < 1e-12, (name, k, a, num)
    hm = hermite_moments(name)
    second = float(_numeric_gauss(raw, None, power=2))
    assert abs(hm.nu + hm.a0**2 - second) < 1e-12


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_moments_consistent(name):
    hm = hermite_moments(name)
    assert hm.nu >= hm.a1**2 - 1e-12  # Cauchy-Schwarz / Parseval
    assert abs(hm.sf2 - (hm.nu - hm.a1**2)) < 1e-12
    # Parseval partial sum never exceeds the total energy
    coeffs = [float(a) for a in hermite_coefficients(name, 4)]
    assert sum(a * a for a in coeffs[1:]) <= hm.nu + 1e-10


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_centred_activation_has_zero_gaussian_mean(name):
    f = activation(name, centered=True)
    assert abs(float(_numeric_gauss(f))) < 1e-12


@pytest.mark.parametrize("name", ACTIVATIONS)
@settings(max_examples=8, deadline=None)
@given(t=st.floats(-8, 8, allow_nan=False))
def test_numpy_activation_matches_sympy(name, t):
    g = numpy_activation(name)
    expr = activation(name, centered=True)
    ref = float(expr.subs(x, t).evalf())
    assert abs(float(g(np.array([t]))[0]) - ref) < 1e-10 * (1 + abs(ref))


def test_numpy_activation_of_expression_uses_scipy_erf():
    g = numpy_activation(sp.erf(x) + x**2)  # centred: subtract E[x^2] = 1
    t = np.linspace(-3, 3, 7)
    from scipy.special import erf

    np.testing.assert_allclose(g(t), erf(t) + t**2 - 1, atol=1e-12)


def test_expression_and_name_agree():
    assert hermite_moments(sp.tanh(x)) == hermite_moments("tanh")
    y = sp.Symbol("y")
    assert abs(hermite_moments(sp.sin(y)).a1 - math.exp(-0.5)) < 1e-12


def test_asymptotic_slope():
    assert activation_asymptotic_slope("tanh") == 0.0
    assert activation_asymptotic_slope("relu") == 1.0
    assert activation_asymptotic_slope("softplus") == 1.0
    with pytest.raises(ValueError, match="diverges"):
        activation_asymptotic_slope("quadratic")


def test_invalid_input():
    with pytest.raises(ValueError, match="activation"):
        activation("swishy")
    with pytest.raises(ValueError, match="activation"):
        hermite_moments("nope")
    with pytest.raises(ValueError, match="order"):
        hermite_coefficients("tanh", -1)
    with pytest.raises(ValueError, match="activation"):
        numpy_activation(3.5j)


def _generated_reference() -> dict:
    import json
    from pathlib import Path

    path = Path(__file__).parent.parent / "reference" / "hermite_reference.json"
    return json.loads(path.read_text())["moments"]


@pytest.mark.parametrize("name", sorted(_generated_reference()))
def test_hermite_moments_match_generated_mpmath_reference(name):
    """Against ``tests/reference/hermite_reference.json`` (mpmath, 30 digits; its generator sits next to it)."""
    ref = _generated_reference()[name]
    hm = hermite_moments(name)
    for field in ("a0", "a1", "a2", "nu"):
        assert abs(getattr(hm, field) - float(ref[field])) < 1e-10, (name, field, getattr(hm, field), ref[field])


# ----------------------------------------------------------------------------- bad inputs refused
def test_activation_inputs_checked():
    from theory import check_activation

    assert check_activation("TANH") == "tanh"
    for bad, word in [(np.nan, "f"), (True, "f"), (sp.I * x, "real"), (sp.log(x), "real"),
                      (x + sp.Symbol("y"), "one variable"), ("__import__('os')", "activation")]:
        with pytest.raises(ValueError, match=word):
            hermite_moments(bad)
    with pytest.raises(ValueError, match="max_hermite_order"):
        hermite_coefficients("tanh", 10**5)  # was a hang
    with pytest.raises(TypeError, match="centered"):
        activation("tanh", centered=1)
    with pytest.raises(TypeError, match="complex"):
        numpy_activation("tanh")(np.array([1j]))  # was silently truncated to the real part
