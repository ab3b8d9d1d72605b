"""Tests of theory.marchenko_pastur and theory.kernel_spectrum."""

from __future__ import annotations

import numpy as np
import numpy.polynomial.polynomial as P_
import pytest
import sympy as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import integrate

from theory._mp_integrals import RepeatedRootError, gram_rational_integral, gram_support
from theory.kernel_spectrum import kernel_density, kernel_stieltjes
from theory.marchenko_pastur import (
    mp_atom,
    mp_delta,
    mp_delta_expr,
    mp_density,
    mp_equation,
    mp_moment,
    mp_stieltjes,
    mp_stieltjes_expr,
    mp_support,
)

cs = st.floats(0.05, 6.0).filter(lambda v: abs(v - 1) > 1e-3)
reals = st.floats(-5.0, 5.0)


def _integral(fun, c):
    """int fun dmu_c: continuous part by quadrature (sqrt edges handled by the 'alg' weight) + atom."""
    lo, hi = mp_support(c)
    # density sqrt((hi-t)(t-lo))/(2 pi t) = (t-lo)^(-1/2) (hi-t)^(1/2) * (t-lo)/(2 pi t): QAWS weight
    g = lambda t: fun(t) * (t - lo) / (2 * np.pi * t) if t > 0 else fun(t) / (2 * np.pi)
    val = integrate.quad(g, lo, hi, weight="alg", wvar=(-0.5, 0.5), limit=200, epsabs=1e-13, epsrel=1e-12)[0]
    return val + mp_atom(c) * fun(0.0)


@settings(max_examples=60, deadline=None)
@given(c=cs, re=reals, im=st.floats(1e-3, 5.0))
def test_stieltjes_solves_equation_and_branch_upper_half_plane(c, re, im):
    z = complex(re, im)
    m = mp_stieltjes(z, c)
    assert abs(mp_equation(m, z, c)) < 1e-9 * (1 + abs(m))
    assert m.imag > 0
    assert m.imag >= im * abs(m) ** 2 * (1 - 1e-9)  # Cauchy-Schwarz: |m|^2 <= Im m / Im z


@settings(max_examples=60, deadline=None)
@given(c=cs, gamma=st.floats(1e-6, 1e3))
def test_stieltjes_negative_axis_positive_root(c, gamma):
    m = mp_stieltjes(-gamma, c)
    assert isinstance(m, float) and m > 0
    assert abs(m - 1 / (gamma + c / (1 + m))) < 1e-9 * m
    assert abs(m - mp_delta(gamma, c)) < 1e-9 * m


@settings(max_examples=30, deadline=None)
@given(c=cs, x=st.floats(1.0, 100.0))
def test_stieltjes_right_of_support_and_infinity(c, x):
    z = mp_support(c)[1] + x
    m = mp_stieltjes(z, c)
    assert isinstance(m, float) and m < 0
    assert abs(mp_equation(m, z, c)) < 1e-9
    big = mp_stieltjes(1e8 + 0j, c)
    assert abs(big * 1e8 + 1) < 1e-6  # m ~ -1/z


def test_array_in_array_out_and_values():
    z = np.array([-1.0, -0.1, 10.0])
    m = mp_stieltjes(z, 0.5)
    assert isinstance(m, np.ndarray) and m.dtype == np.float64 and m.shape == (3,)
    np.testing.assert_allclose(m[:2], mp_delta(np.array([1.0, 0.1]), 0.5))


@pytest.mark.parametrize("c", [0.2, 0.7, 1.5, 4.0])
@pytest.mark.parametrize("z", [-0.7, 0.4 + 0.3j, 2.0 + 1.0j])
def test_stieltjes_is_transform_of_density(c, z):
    re = _integral(lambda t: (1 / (t - z)).real, c)
    im = _integral(lambda t: (1 / (t - z)).imag, c)
    assert abs(complex(re, im) - mp_stieltjes(z, c)) < 1e-8


@pytest.mark.parametrize("c", [0.3, 1.0, 2.5])
def test_moments_match_density(c):
    assert abs(_integral(lambda t: 1.0, c) - 1.0) < 1e-9
    for k in range(1, 6):
        assert abs(_integral(lambda t: t**k, c) - float(mp_moment(k, c))) < 1e-8 * float(mp_moment(k, c))


def test_moments_symbolic_narayana():
    c = sp.Symbol("c", positive=True)
    assert mp_moment(0, c) == 1
    assert mp_moment(1, c) == c
    assert sp.expand(mp_moment(3, c) - (c**3 + 3 * c**2 + c)) == 0


@pytest.mark.parametrize("z", [-0.5, 0.3 + 0.8j, 5.0 + 0.1j])
def test_symbolic_matches_numeric(z):
    for c in (0.4, 2.0):
        assert abs(complex(mp_stieltjes_expr(z, c).evalf()) - mp_stieltjes(z, c)) < 1e-12
    for g in (1e-3, 0.5, 7.0):
        assert abs(float(mp_delta_expr(g, 0.4)) - mp_delta(g, 0.4)) < 1e-12
        assert abs(float(mp_stieltjes_expr(-g, 0.4)) - mp_delta(g, 0.4)) < 1e-12


def test_delta_small_gamma_limits():
    assert abs(mp_delta(0.0, 3.0) - 0.5) < 1e-15  # 1/(c-1)
    assert abs(mp_delta(1e-12, 0.25) * 1e-12 - 0.75) < 1e-9  # gamma delta -> 1 - c


def test_density_zero_outside_and_atom():
    assert mp_density(0.001, 0.5) == 0.0 and mp_density(10.0, 0.5) == 0.0
    assert mp_atom(0.25) == 0.75 and mp_atom(2.0) == 0.0


@pytest.mark.parametrize("bad", [0, -1.0, float("nan")])
def test_invalid_c(bad):
    for fn in (lambda: mp_stieltjes(-1.0, bad), lambda: mp_density(1.0, bad), lambda: mp_support(bad), lambda: mp_moment(2, bad)):
        with pytest.raises(ValueError, match="c must be"):
            fn()
    with pytest.raises(ValueError, match="gamma"):
        mp_delta(-1.0, 0.5)
    with pytest.raises(ValueError, match="k must"):
        mp_moment(-1, 0.5)


# ----------------------------------------------------------------------------- rational integrals against mu_G
def _gram_quad(fun, c):
    """``int fun dmu_G`` (``mu_G``: law of ``Z^T Z / p``, the density ``c mp_density(c l, c)`` plus the atom
    ``1 - c`` at 0) by QUADPACK's algebraic-weight rule; returns ``(value, abserr)``, abserr from quad."""
    lo, hi = gram_support(c)
    # density sqrt((hi-t)(t-lo)) / (2 pi t / c) = (t-lo)^(-1/2) (hi-t)^(1/2) * c (t-lo) / (2 pi t)
    g = lambda t: fun(t) * c * (t - lo) / (2 * np.pi * t) if t > 0 else fun(t) * c / (2 * np.pi)
    val, err = integrate.quad(g, lo, hi, weight="alg", wvar=(-0.5, 0.5), limit=500, epsabs=0.0, epsrel=1e-13)
    return val + mp_atom(c) * fun(0.0), err


@pytest.mark.parametrize("c", [0.4, 1.0, 3.0])
def test_gram_quad_density_is_rescaled_mp_density(c):
    """The density used by _gram_quad is the MP density of theory.marchenko_pastur, rescaled by 1/c."""
    lo, hi = gram_support(c)
    t = np.linspace(lo, hi, 7)[1:-1]
    np.testing.assert_allclose(np.sqrt((hi - t) * (t - lo)) * c / (2 * np.pi * t), c * mp_density(c * t, c), rtol=1e-13)
    assert gram_support(c) == pytest.approx(tuple(v / c for v in mp_support(c)), rel=1e-14)
    assert abs(_gram_quad(lambda t: 1.0, c)[0] - 1.0) < 1e-12


_edge_gap = st.one_of(st.floats(1e-3, 1e-2), st.floats(1e-2, 3.0))  # near the edge, or not


@st.composite
def _rational_case(draw):
    """``(c, P, D, power)``: ``D`` with simple poles off the support of ``mu_G`` -- real poles left/right of
    ``[l_-, l_+]`` (down to 1e-3 from an edge) and complex-conjugate pairs over or beside the support."""
    c = draw(st.one_of(st.just(1.0), st.floats(0.2, 0.9), st.floats(1.1, 5.0)))
    lo, hi = gram_support(c)
    roots = []
    for _ in range(draw(st.integers(0, 2))):
        gap = draw(_edge_gap)
        roots.append(hi + gap if draw(st.booleans()) else lo - gap)
    for _ in range(draw(st.integers(0 if roots else 1, 1))):
        u, v = draw(st.floats(lo - 1.0, hi + 1.0)), draw(st.floats(0.05, 2.0))
        roots += [complex(u, v), complex(u, -v)]
    r = np.array(roots, dtype=complex)
    gaps = np.abs(r[:, None] - r[None, :])[~np.eye(r.size, dtype=bool)]
    assume(gaps.size == 0 or gaps.min() > 0.05)  # simple poles, not numerically repeated
    assume(not (c < 1 and np.any(np.abs(r) < 1e-3)))  # keep clear of the atom at 0
    lead = draw(st.floats(0.5, 2.0)) * draw(st.sampled_from([-1.0, 1.0]))
    D = lead * np.real(np.poly(r)[::-1])  # ascending coefficients, real (conjugate pairs)
    power = draw(st.sampled_from([1, 2]))
    deg = draw(st.integers(0, power * (D.size - 1) + 2))  # up to a quadratic polynomial part
    P = np.array(draw(st.lists(st.floats(-2.0, 2.0, allow_subnormal=False), min_size=deg + 1, max_size=deg + 1)))
    return c, P, D, power


def _root_rounding(P, D, c, power):
    """First-order forward error of the partial-fraction sum caused by the rounding of the roots of ``D``.

    A computed (polished) root ``r_i`` is off by at most ``rho_i = 2 gamma_{2n} sum_j |D_j| |r_i|^j / |D'(r_i)|``
    (Horner's rounding bound on ``D(r_i)``, ``gamma_{2n} = 2 n u / (1 - 2 n u)``, ``n = deg D``, doubled for
    complex arithmetic, over the slope).  Its residue term -- ``R/D' m_G``, or ``R/D'^2 m_G' + (R'/D'^2 -
    R D''/D'^3) m_G`` for ``power = 2``, ``R`` the remainder of ``P`` mod ``D^power``, ``D`` held fixed -- then
    moves by ``|d term_i / dr| rho_i`` (central differences; ``m_G(w) = c mp_stieltjes(c w, c)``).
    """
    n, u = D.size - 1, 2.0**-53
    g2n = 2 * n * u / (1 - 2 * n * u)
    R = P_.polydiv(P, D if power == 1 else P_.polymul(D, D))[1]
    dR, dD, ddD = P_.polyder(R), P_.polyder(D), P_.polyder(D, 2)
    lo, hi = gram_support(c)
    m = lambda w: complex(c * np.asarray(mp_stieltjes(c * w, c)))

    def term(w, h):
        a, b = P_.polyval(w, R), P_.polyval(w, dD)
        if power == 1:
            return a / b * m(w)
        dm = (m(w + h) - m(w - h)) / (2 * h)
        return a / b**2 * dm + (P_.polyval(w, dR) / b**2 - a * P_.polyval(w, ddD) / b**3) * m(w)

    total = 0.0
    for r in P_.polyroots(D).astype(complex):
        dist = abs(r - min(max(r.real, lo), hi))  # distance to the support (and to the atom at 0)
        dist = min(dist, abs(r)) if c < 1 else dist
        H = 1e-3 * dist
        slope = abs(term(r + H, 1e-2 * H) - term(r - H, 1e-2 * H)) / (2 * H)
        rho = 2 * g2n * float(np.sum(np.abs(D) * np.abs(r) ** np.arange(D.size))) / abs(P_.polyval(r, dD))
        total += slope * rho
    return total


@settings(max_examples=80, deadline=None)
@given(case=_rational_case())
def test_gram_rational_integral_matches_quadrature(case):
    """Partial fractions against quad of the MP density.

    Tolerance: 10 x quad's error estimate (quad is the reference) plus the exact method's rounding: its own
    estimate (cancellation between the partial fractions, ``precision``) and the first-order effect of the
    rounding of the roots (:func:`_root_rounding`), which ``precision`` does not model and which dominates
    for a polynomial with large coefficients or roots clustered next to an edge (there ``precision`` alone
    was seen 3x to 80x optimistic).  Typically the tolerance is ~1e-12 relative, set by quad; the root
    term is a worst-case bound, loose (up to ~1e6x) only for such clustered roots.
    """
    c, P, D, power = case
    val, prec = gram_rational_integral(P, D, c, power)
    fun = lambda t: P_.polyval(t, P) / P_.polyval(t, D) ** power
    ref, err = _gram_quad(fun, c)
    roots_err = _root_rounding(P, D, c, power)
    atom = mp_atom(c) * abs(fun(0.0))
    tol = 10 * err + prec * abs(val) + roots_err + 4 * 2.0**-53 * atom
    assert abs(val - ref) <= tol, (c, P.tolist(), D.tolist(), power, val, ref, err, prec, roots_err)


def test_gram_rational_integral_closed_forms():
    c = 2.5
    # constant denominator: moments of mu_G (mean 1, second moment 1 + 1/c)
    val, prec = gram_rational_integral([1.0, -2.0, 3.0], [4.0], c, 2)
    assert val == pytest.approx((1 - 2 + 3 * (1 + 1 / c)) / 16, rel=1e-15) and prec <= 1e-15
    assert gram_rational_integral([0.0, 0.0], [1.0, 1.0], c) == (0.0, 0.0)
    # int dmu_G / (l + g) = m_G(-g) = c mp_stieltjes(-c g, c) = c delta(c g)
    for g in (1e-3, 0.5, 20.0):
        val, _ = gram_rational_integral([1.0], [g, 1.0], c)
        assert val == pytest.approx(c * mp_delta(c * g, c), rel=1e-13)
        # int dmu_G / (l + g)^2 = d/dg of -int dmu_G / (l + g): central difference of the closed form
        h = 1e-5 * g
        fd = -(c * mp_delta(c * (g + h), c) - c * mp_delta(c * (g - h), c)) / (2 * h)
        assert gram_rational_integral([1.0], [g, 1.0], c, 2)[0] == pytest.approx(fd, rel=1e-8)


def test_gram_rational_integral_invalid():
    with pytest.raises(RepeatedRootError, match="repeated root"):
        gram_rational_integral([1.0], [0.0, 0.0, 1.0], 2.0)  # l^2: double root at 0 (off the support for c > 1)
    assert issubclass(RepeatedRootError, ValueError)
    with pytest.raises(ValueError, match="no root on the support"):
        gram_rational_integral([1.0], [-1.0, 1.0], 2.0)  # pole at l = 1, inside [0.086, 2.91]
    with pytest.raises(ValueError, match="atom at 0"):
        gram_rational_integral([1.0], [0.0, 1.0], 0.5)  # pole at the atom
    with pytest.raises(ValueError, match="power must be 1 or 2"):
        gram_rational_integral([1.0], [1.0, 1.0], 2.0, 3)
    with pytest.raises(ValueError, match="c must be > 0"):
        gram_rational_integral([1.0], [1.0, 1.0], 0.0)
    with pytest.raises(ValueError, match="zero polynomial"):
        gram_rational_integral([1.0], [0.0, 0.0], 2.0)


# ----------------------------------------------------------------------------- kernel spectrum
def kernel_equation(m: complex, z: complex, c: float, a1: float, nu: float) -> complex:
    """Residual ``m + 1 / (z + a1^2 m/(c + a1 m) + (nu - a1^2) m / c)`` of the kernel law's equation
    (:mod:`theory.kernel_spectrum`)."""
    return m + 1.0 / (z + a1**2 * m / (c + a1 * m) + (nu - a1**2) * m / c)


kern_params = st.tuples(st.floats(0.1, 5.0), st.floats(-1.5, 1.5), st.floats(0.01, 2.0))


@settings(max_examples=60, deadline=None)
@given(par=kern_params, re=st.floats(-6, 6), im=st.floats(1e-4, 3.0))
def test_kernel_stieltjes_equation_and_branch(par, re, im):
    c, a1, sf2 = par
    nu = a1**2 + sf2
    z = complex(re, im)
    m = kernel_stieltjes(z, c, a1, nu)
    assert abs(kernel_equation(m, z, c, a1, nu)) < 1e-8 * (1 + abs(m))
    assert m.imag > 0
    assert m.imag >= im * abs(m) ** 2 * (1 - 1e-6)


def test_kernel_semicircle_and_mp_limits():
    z = np.array([0.3 + 0.5j, -2.0 + 0.01j, 1.5 + 1e-6j])
    # a1 = 0: semicircle of variance nu / c
    c, nu = 2.0, 0.7
    v = nu / c
    semi = (-z + np.sqrt(z - 2 * np.sqrt(v)) * np.sqrt(z + 2 * np.sqrt(v))) / (2 * v)
    np.testing.assert_allclose(kernel_stieltjes(z, c, 0.0, nu), semi, atol=1e-9)
    # sf2 = 0: law of a1 (G - 1), G = Z^T Z/p ~ mu_c / c, so m(z) = c/a1 * m_MP(c (z/a1 + 1))
    for c in (0.5, 3.0):
        a1 = 0.8
        ref = c / a1 * mp_stieltjes(c * (z / a1 + 1), c)
        np.testing.assert_allclose(kernel_stieltjes(z, c, a1, a1**2), ref, atol=1e-8)


@pytest.mark.parametrize("par", [(2.0, 0.6057, 0.3943), (0.25, 0.5, 0.3408), (0.5, 0.0, 0.2), (1.0, 0.7979, 1.0)])
def test_kernel_density_is_probability(par):
    c, a1, nu = par
    r = abs(a1) * (1 + 1 / np.sqrt(c)) ** 2 + 2 * np.sqrt((nu - a1**2) / c) + 1
    xs = np.linspace(-r, r, 20001)
    d = kernel_density(xs, c, a1, nu)
    assert np.all(d >= 0)
    mass = np.trapezoid(d, xs)
    first = np.trapezoid(xs * d, xs)
    second = np.trapezoid(xs**2 * d, xs)
    assert abs(mass - 1) < 2e-3
    assert abs(first) < 2e-3  # trace of K is 0 (diagonal removed)
    assert abs(second - nu / c) < 5e-3  # 1/n tr K^2 -> (n-1) nu / p -> nu / c


def test_kernel_invalid():
    with pytest.raises(ValueError, match="c must be"):
        kernel_stieltjes(1j, 0.0, 0.5, 0.5)
    with pytest.raises(ValueError, match="nu must be"):
        kernel_stieltjes(1j, 1.0, 0.9, 0.5)
    with pytest.raises(ValueError, match="Im z"):
        kernel_stieltjes(-1j, 1.0, 0.5, 0.5)


@pytest.mark.slow
@pytest.mark.parametrize("name,c", [("tanh", 2.0), ("sign", 0.5)])
def test_kernel_law_matches_simulation(name, c):
    from theory.activations import hermite_moments, numpy_activation

    rng = np.random.default_rng(7)
    n = 800
    p = int(c * n)
    X = rng.standard_normal((p, n))
    K = numpy_activation(name)(X.T @ X / np.sqrt(p)) / np.sqrt(p)
    np.fill_diagonal(K, 0.0)
    ev = np.linalg.eigvalsh(K)
    hm = hermite_moments(name)
    for z in (0.3 + 0.5j, -0.5 + 0.3j, 1.0 + 0.2j):
        emp = np.mean(1 / (ev - z))
        assert abs(emp - kernel_stieltjes(z, c, hm.a1, hm.nu)) < 0.01


# ----------------------------------------------------------------------------- parts of kernel_stieltjes
def test_polished_roots_are_the_roots_of_each_polynomial():
    from theory.kernel_spectrum import _equation_coefficients, _polished_roots

    zz = np.array([0.3 + 0.5j, -1.0 + 0.2j, 2.0 + 1e-3j])
    for a1, sf2 in ((0.8, 0.4), (0.0, 0.5), (0.7, 0.0)):
        coeffs = _equation_coefficients(zz, 0.5, a1, sf2)
        assert coeffs.shape == (zz.size, 4 if a1 and sf2 else 3)
        roots = _polished_roots(coeffs)
        for k in range(zz.size):
            ref = np.roots(coeffs[k])
            assert np.allclose(np.sort_complex(roots[k]), np.sort_complex(ref), atol=1e-10)


def test_branch_selection_takes_the_stieltjes_root():
    from theory.kernel_spectrum import _select_branch

    zz = np.array([0.3 + 0.5j])
    m = kernel_stieltjes(zz, 1.0, 0.0, 1.0)  # semicircle of variance 1
    other = -1.0 / m  # the second root of m^2 + z m + 1 = 0: |m| > 1, fails the Cauchy-Schwarz bound
    out = _select_branch(np.array([[other[0], m[0]]]), zz, 1.0, 0.0, 1.0)
    assert out[0] == m[0]
    assert np.ndim(kernel_stieltjes(0.3 + 0.5j, 1.0, 0.0, 1.0)) == 0  # a scalar in, a scalar out


def test_partial_fraction_part_is_the_integral_for_a_nonconstant_denominator():
    from theory._mp_integrals import _partial_fraction_integral

    for c, num, den, power in ((0.5, [1.0, 2.0], [-1.0, 0.1], 1), (2.0, [1.0, 0.0, 1.0], [5.0, -0.3, 0.01], 2)):
        P = P_.polytrim(np.asarray(num, dtype=float), 0.0)
        D = P_.polytrim(np.asarray(den, dtype=float), 0.0)
        assert _partial_fraction_integral(P, D, c, power) == gram_rational_integral(num, den, c, power)


# ----------------------------------------------------------------------------- bad inputs refused
def test_nan_none_and_complex_are_refused():
    """mp_density(nan) was 0.0, kernel_stieltjes(nan) a LinAlgError, kernel_density(eta=1j) accepted."""
    for call, word in [(lambda: mp_density(np.nan, 0.5), "x"), (lambda: mp_stieltjes(None, 0.5), "z"),
                       (lambda: kernel_stieltjes(np.nan, 2.0, 0.5, 0.5), "z"),
                       (lambda: kernel_density(0.3, 2.0, 0.5, 0.5, eta=1j), "eta"),
                       (lambda: kernel_stieltjes(0.3 + 0.5j, 2.0, 0.5, np.inf), "nu"),
                       (lambda: mp_support(np.inf), "c"), (lambda: mp_delta([0.1, 1j], 2.0), "gamma"),
                       (lambda: mp_equation(-1.0, 1.0, 1.0), "m")]:
        with pytest.raises(ValueError, match=word):
            call()


def test_overflow_is_a_message_about_the_arguments():
    with pytest.raises(ValueError, match="kernel_stieltjes cannot be evaluated at .*c=1e\\+300"):
        kernel_stieltjes(0.3 + 0.5j, 1e300, 0.5, 0.5)


def test_sizes_bounded_and_limits_configurable():
    import theory

    with pytest.raises(ValueError, match="max_moment_order"):
        mp_moment(10**5, 0.5)
    with pytest.raises(ValueError, match="k must"):
        mp_moment(10**400, 0.5)  # was an OverflowError
    old = theory.set_limits(max_moment_order=5000, memory_budget_bytes=2**20)
    try:
        assert theory.get_limits().max_moment_order == 5000
        with pytest.raises(ValueError, match="memory budget"):
            mp_stieltjes(np.full(10**4, -1.0), 0.5)
    finally:
        theory.set_limits(**{k: getattr(old, k) for k in ("max_moment_order", "memory_budget_bytes")})
    assert theory.get_limits() == theory.Limits()


def test_expressions_never_parse_strings(tmp_path):
    marker = tmp_path / "pwned"
    evil = f"__import__('os').system('touch {marker}')"
    for call in (lambda: mp_delta_expr(evil, 1), lambda: mp_stieltjes_expr(evil, 1), lambda: mp_moment(2, evil)):
        with pytest.raises(TypeError, match="string"):
            call()
    assert not marker.exists()
    assert float(mp_delta_expr(0.5, 2)) == pytest.approx(mp_delta(0.5, 2), rel=1e-14)  # numbers still work
    with pytest.raises(ValueError, match="z must be nonzero"):
        mp_stieltjes_expr(0, 2)
