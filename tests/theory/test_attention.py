"""Tests of theory.attention: the null-model deterministic equivalent."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theory import AttentionModel
from theory.activations import hermite_moments
from theory.null_system import (
    _gram_law_quadrature,
    _null_kernel_diagonal,
    kept_diagonal,
    solve_null_system_full,
    null_system_equations,
    solve_null_system,
)
from theory.marchenko_pastur import mp_stieltjes
from theory.ridge import ridge_error_values


def _exact_integrals(z, dl, dt, kp, c, a1, sf2, d0):
    """I1 = sf2 int l (1+dl)/D, I2 = int (1 + dt sf2 l)/D, I3 = sf2 int l (A - kp)/D against mu_G by
    partial fractions and the exact Stieltjes transform of mu_G (independent of the solver's code).

    D(l) = -z (1+dl)(1 + dt sf2 l) + c l (A(l) - kp)^2.
    """
    Ae = np.polynomial.Polynomial([d0 - a1 - kp, a1])
    lpoly = np.polynomial.Polynomial([0.0, 1.0])
    D = (-z * (1 + dl) * np.polynomial.Polynomial([1.0, dt * sf2]) + c * lpoly * Ae**2).trim()
    nums = [sf2 * (1 + dl) * lpoly, np.polynomial.Polynomial([1.0, dt * sf2]), sf2 * lpoly * Ae]
    roots = D.roots()
    dD = D.deriv()
    mG = lambda w: c * mp_stieltjes(c * np.asarray(w, dtype=complex), c)  # int dmu_G / (l - w)
    out = []
    for N in nums:
        q, r = divmod(N, D)  # N/D = q + r/D; int q dmu_G with E l = 1
        qc = np.pad(q.coef, (0, 2))
        val = qc[0] + qc[1] * 1.0 + sum(r(x) / dD(x) * mG(x) for x in roots)
        out.append(complex(val).real)
    return out


def test_equations_are_sympy():
    eq = null_system_equations()
    assert {"A", "t", "t_tilde", "g1", "g2"} <= set(eq)
    assert all(hasattr(e, "free_symbols") for e in eq.values())


@pytest.mark.parametrize("c", [0.25, 0.6, 2.0, 5.0])
def test_quadrature_integrates_rational_functions_exactly(c):
    nodes, weights = _gram_law_quadrature(float(c), 160)
    assert abs(weights.sum() - 1) < 1e-12
    for w in (-0.3, -2.0, 0.5 + 1j):
        quad = np.sum(weights / (nodes - w))
        assert abs(quad - c * mp_stieltjes(c * w, c)) < 1e-10
    assert abs(np.sum(weights * nodes) - 1) < 1e-12  # E l = 1 (tr G / n)
    assert abs(np.sum(weights * nodes**2) - (1 + 1 / c)) < 1e-10  # second moment of MP(1/c)


def test_exact_integrator_repeated_root_is_a_runtime_error(monkeypatch):
    """The shared integrator's RepeatedRootError reaches the null solver's callers as its RuntimeError."""
    import theory.null_system as att
    from theory._mp_integrals import RepeatedRootError

    def repeated(*args, **kwargs):
        raise RepeatedRootError("denominator has a repeated root")

    monkeypatch.setattr(att, "gram_rational_integral", repeated)
    with pytest.raises(RuntimeError, match="repeated root in the partial fractions"):
        att._ExactIntegrator(2.0)(-0.1, 0.1, 0.1, 0.0, 2.0, 0.5, 0.3, 0.0)


@pytest.mark.parametrize("name", ["tanh", "relu", "sign", "cos", "erf"])
@pytest.mark.parametrize("c", [0.25, 2.0])
@pytest.mark.parametrize("system", ["symmetric", "spec"])
def test_solution_satisfies_exact_system(name, c, system):
    hm = hermite_moments(name)
    zs = -np.array([1e-3, 0.1, 2.0])
    for sol in solve_null_system_full(zs, c, hm.a1, hm.sf2, system=system):
        I1, I2, I3 = _exact_integrals(sol.z, sol.delta, sol.delta_tilde, sol.kappa, c, hm.a1, hm.sf2, 0.0)
        assert abs(I1 - sol.delta) < 1e-9 * sol.delta and abs(I2 - sol.delta_tilde) < 1e-9 * sol.delta_tilde
        if system == "symmetric":
            assert abs(I3 - sol.kappa) < 1e-10
        else:
            assert sol.kappa == 0.0


def test_kappa_vanishes_without_linear_part_or_noise():
    cos = hermite_moments("cos")
    zs = -np.array([1e-2, 1.0])
    assert all(s.kappa == 0.0 or abs(s.kappa) < 1e-14 for s in solve_null_system_full(zs, 2.0, cos.a1, cos.sf2))
    m_cos = AttentionModel(2.0, "cos")
    np.testing.assert_allclose(m_cos.error(zs * -1), m_cos.error(-zs, system="spec"), rtol=1e-12)
    np.testing.assert_allclose(
        AttentionModel(2.0, "identity", diagonal="kept").error(-zs),
        AttentionModel(2.0, "identity", diagonal="kept").error(-zs, system="spec")
    )
    # with both a linear part and noise the symmetric correction is present
    tanh = hermite_moments("tanh")
    assert abs(solve_null_system_full(-1e-2, 2.0, tanh.a1, tanh.sf2)[0].kappa) > 1e-4


@pytest.mark.parametrize("name", ["tanh", "cos", "relu"])
@pytest.mark.parametrize("c", [0.3, 2.0])
def test_quadrature_and_exact_methods_agree(name, c):
    g = np.array([1e-3, 0.1, 3.0])
    q = AttentionModel(c, name).error(g, method="quadrature", n_nodes=640)
    e = AttentionModel(c, name).error(g, method="exact")
    np.testing.assert_allclose(q, e, rtol=1e-9)


def test_hard_edge_at_c_equal_one():
    # at c = 1 mu_G has density ~ l^{-1/2} at 0; quadrature converges slowly, exact does not care
    e = AttentionModel(1.0, "tanh").error(1e-6)
    q = AttentionModel(1.0, "tanh").error(1e-6, method="quadrature", n_nodes=4000)
    assert abs(q - e) < 1e-6 * e
    # continuity across c = 1
    assert abs(AttentionModel(1.0 + 1e-6, "tanh").error(1e-3)
               - AttentionModel(1.0 - 1e-6, "tanh").error(1e-3)) < 1e-5


@pytest.mark.parametrize("c", [0.3, 3.0])
def test_implicit_derivative_matches_finite_difference(c):
    hm = hermite_moments("tanh")
    z = -0.05
    for system in ("symmetric", "spec"):
        (sol,) = solve_null_system_full(z, c, hm.a1, hm.sf2, system=system)
        d1, d2 = sol.ddelta_dz, sol.ddelta_tilde_dz
        h = 1e-5 * abs(z)
        (p1, p2) = solve_null_system(z + h, c, hm.a1, hm.sf2, system=system)
        (m1, m2) = solve_null_system(z - h, c, hm.a1, hm.sf2, system=system)
        assert abs(d1 - (p1 - m1) / (2 * h)) < 1e-5 * abs(d1)
        assert abs(d2 - (p2 - m2) / (2 * h)) < 1e-5 * abs(d2)


def test_linear_activation_is_spectral_integral():
    # f = identity, diagonal kept (d0 = 1): Phi^T Phi / n = c G^3, E = gamma^2 int dmu_G / (gamma + c l^3)^2
    from scipy import integrate

    for c in (0.5, 2.0):
        lo, hi = (1 - 1 / np.sqrt(c)) ** 2, (1 + 1 / np.sqrt(c)) ** 2
        dens = lambda l: c * np.sqrt(max((hi - l) * (l - lo), 0.0)) / (2 * np.pi * l)  # MP of ratio 1/c
        for g in (1e-2, 0.5):
            val = integrate.quad(lambda l: g**2 / (g + c * l**3) ** 2 * dens(l), lo, hi, limit=200)[0]
            val += max(1 - c, 0.0)
            assert abs(AttentionModel(c, "identity", diagonal="kept").error(g) - val) < 1e-8


def test_scalar_and_array():
    e = AttentionModel(2.0, "tanh").error(0.1)
    assert isinstance(e, float)
    arr = AttentionModel(2.0, "tanh").error(np.array([0.1, 1.0]))
    assert isinstance(arr, np.ndarray) and arr.shape == (2,)
    assert abs(arr[0] - e) < 1e-9 * e  # Newton tolerance 1e-12 on the (log) unknowns; paths differ
    # order of the gamma grid does not matter (continuation is internal)
    rev = AttentionModel(2.0, "tanh").error(np.array([1.0, 0.1]))
    np.testing.assert_allclose(rev[::-1], arr, rtol=1e-10)


@settings(max_examples=6, deadline=None)
@given(c=st.floats(0.1, 0.9), name=st.sampled_from(["tanh", "relu", "sign", "erf"]))
def test_small_gamma_limit_below_one(c, name):
    # the atom 1 - c of mu_G: Phi^T Phi has n - p zero eigenvalues and E -> 1 - c
    assert abs(AttentionModel(c, name).error(1e-9) - (1 - c)) < 1e-4


@settings(max_examples=6, deadline=None)
@given(c=st.floats(1.2, 6.0), name=st.sampled_from(["tanh", "relu", "sign", "erf"]))
def test_sqrt_gamma_law_above_one(c, name):
    # attention interpolates only like C_f sqrt(gamma) (ridge: O(gamma^2))
    g = np.array([1e-10, 1e-9])
    e = AttentionModel(c, name).error(g)
    slope = np.log(e[1] / e[0]) / np.log(10)
    assert abs(slope - 0.5) < 0.01
    assert np.all(e > ridge_error_values(g, c, 0.0))


def test_small_gamma_law_helper():
    e, C = AttentionModel(2.0, "tanh").small_gamma_law()
    assert abs(e - 0.5) < 1e-3 and C > 0
    # A(l) = (l + 1)/2 > 0: interpolation
    e, _ = AttentionModel(2.0, "relu", diagonal="kept").small_gamma_law()
    assert abs(e - 2.0) < 1e-2
    e, C = AttentionModel(0.5, "tanh").small_gamma_law()
    assert abs(e) < 1e-3 and abs(C - 0.5) < 1e-6
    with pytest.raises(ValueError, match="gammas"):
        AttentionModel(2.0, "tanh").small_gamma_law(gammas=(1e-3, 1e-4))


def test_large_gamma_tends_to_one():
    e = AttentionModel(0.5, "tanh").error(np.array([1e4]))[0]
    assert 0.99 < e < 1


def test_cos_has_large_error():
    # a1 = 0: no linear part, worse memorisation than tanh at the same c, gamma (claim B5)
    g = np.array([1e-3, 1e-2])
    assert np.all(AttentionModel(2.0, "cos").error(g) > AttentionModel(2.0, "tanh").error(g))


def test_kept_diagonal_finite_p():
    a0 = hermite_moments("relu").a0
    for p in (100, 1600):
        # relu: E(chi2_p/sqrt p - a0)^+ / sqrt p = 1 - a0/sqrt p (the chi2 mass below a0 sqrt p is negligible)
        assert abs(kept_diagonal("relu", p) - (1 - a0 / np.sqrt(p))) < 1e-8
    assert abs(kept_diagonal("tanh", 400) - np.tanh(20.0) / 20.0) < 1e-4
    assert abs(kept_diagonal("tanh", 10**6)) < 2e-3


def test_diagonal_options():
    assert _null_kernel_diagonal("tanh", "removed") == 0.0
    assert _null_kernel_diagonal("tanh", "kept") == 0.0
    assert _null_kernel_diagonal("relu", "kept") == 1.0
    assert _null_kernel_diagonal("relu", 0.3) == 0.3
    with pytest.raises(ValueError, match="diagonal"):
        AttentionModel(2.0, "relu", diagonal="sometimes")
    with pytest.raises(ValueError, match="diverges"):
        AttentionModel(2.0, "quadratic", diagonal="kept")


def test_structured_delegation():
    model = AttentionModel(2.0, "tanh", snr=1.0)
    assert model.error(0.1) == model.solve(0.1, check_quadrature=False).error[0]


def test_invalid_input():
    with pytest.raises(ValueError, match="gamma"):
        AttentionModel(2.0, "tanh").error(-0.1)
    with pytest.raises(ValueError, match="gamma"):
        AttentionModel(2.0, "tanh").error(np.array([0.1, 0.0]))
    with pytest.raises(ValueError, match="c must be"):
        AttentionModel(0.0, "tanh")
    with pytest.raises(ValueError, match="activation"):
        AttentionModel(2.0, "foo")
    with pytest.raises(ValueError, match="z must be"):
        solve_null_system(0.5, 2.0, 0.6, 0.03)
    with pytest.raises(ValueError, match="sf2"):
        solve_null_system(-0.5, 2.0, 0.6, -0.03)
    with pytest.raises(ValueError, match="method"):
        AttentionModel(2.0, "tanh").error(0.1, method="simpson")


@pytest.mark.slow
def test_gaussian_equivalent_models_select_the_system():
    """GOE noise -> corrected system; non-symmetric noise -> SPEC's system (a1 = 0.6, sf2 = 0.4, c = 2)."""
    rng = np.random.default_rng(9)
    a1, sf2, c, n = 0.6, 0.4, 2.0, 600
    p = int(c * n)
    gam = np.array([1e-2, 1e-1])
    res = {"goe": [], "gin": []}
    for _ in range(4):
        X = rng.standard_normal((p, n))
        G = X.T @ X / p
        for kind in res:
            M = rng.standard_normal((n, n))
            W = (M + M.T) / np.sqrt(2) if kind == "goe" else M
            np.fill_diagonal(W, 0.0)
            K = a1 * (G - np.diag(np.diag(G))) + np.sqrt(sf2 / p) * W
            ev = np.linalg.svd(X @ K, compute_uv=False) ** 2 / n
            res[kind].append([np.mean(g**2 / (ev + g) ** 2) for g in gam])
    th = {k: gam**2 * np.array([sol.ddelta_tilde_dz for sol in solve_null_system_full(-gam, c, a1, sf2, system=s)])
          for k, s in (("goe", "symmetric"), ("gin", "spec"))}
    for kind, vals in res.items():
        vals = np.array(vals)
        se = vals.std(0, ddof=1) / 2
        assert np.all(np.abs(vals.mean(0) - th[kind]) <= 4 * se + 0.005 * th[kind]), (kind, vals.mean(0), th[kind])
    assert abs(th["goe"][0] - th["gin"][0]) > 0.02 * th["gin"][0]  # the two systems differ there


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tanh", "cos"])
@pytest.mark.parametrize("p,n", [(200, 800), (800, 400)])
def test_matches_simulation(name, p, n):
    """tr-based Monte Carlo (y uniform on the sphere in expectation): |mean - theory| <= 4 SE + 3%."""
    from theory.activations import numpy_activation

    rng = np.random.default_rng(5)
    f = numpy_activation(name)
    gam = np.array([1e-3, 1e-1, 1.0])
    errs = []
    for _ in range(3):
        X = rng.standard_normal((p, n))
        K = f(X.T @ X / np.sqrt(p)) / np.sqrt(p)
        np.fill_diagonal(K, 0.0)
        Phi = X @ K
        ev = np.linalg.eigvalsh(Phi.T @ Phi / n)
        errs.append([np.mean(g**2 / (ev + g) ** 2) for g in gam])
    errs = np.array(errs)
    se = errs.std(0, ddof=1) / np.sqrt(len(errs))
    th = AttentionModel(p / n, name).error(gam)
    assert np.all(np.abs(errs.mean(0) - th) <= 4 * se + 0.03 * th)


# ----------------------------------------------------------------------------- solver options and domain
def test_solver_options_same_rules_on_both_paths():
    """tol=inf returned the unconverged start (0.0807 for 0.0856); maxiter was a TypeError on the null path."""
    base = AttentionModel(2.0, "tanh").error(1e-2)
    model = AttentionModel(2.0, "tanh")
    assert model.error(1e-2, maxiter=50) == base == model.error(1e-2, max_iter=50)
    for snr in (0.0, 1.0):
        for bad, word in [(dict(tol=float("inf")), "tol"), (dict(tol=0.1), "tol"), (dict(maxiter=0), "maxiter"),
                          (dict(max_iter=10**9), "max_iter"), (dict(n_nodes=8), "n_nodes"),
                          (dict(system="iid"), "system"), (dict(check_quadrature="yes"), "check_quadrature")]:
            with pytest.raises(ValueError, match=word):
                AttentionModel(2.0, "tanh", snr=snr).error(1e-2, **bad)
    with pytest.raises(TypeError, match="tol_x"):
        model.error(1e-2, tol_x=1e-9)
    with pytest.raises(ValueError, match="not both"):
        model.error(1e-2, maxiter=50, max_iter=60)


def test_domain_refused_with_a_message_not_a_library_error():
    for args, word in [((float("inf"), "tanh"), "c"), ((1e-300, "tanh"), "c"), ((2.0, "tanh", 1e300), "snr")]:
        with pytest.raises(ValueError, match=word):
            AttentionModel(*args)
    with pytest.raises(ValueError, match="gamma"):
        AttentionModel(2.0, "tanh").error(1e300)
    with pytest.raises(TypeError, match="diagonal"):
        AttentionModel(2.0, "tanh", diagonal=True)


def test_non_convergence_reports_the_residual(monkeypatch):
    import theory.null_system as ns

    monkeypatch.setattr(ns, "_newton", lambda *a, **k: (0.3, 0.3, 0.0, 7, 0.25))
    with pytest.raises(RuntimeError, match=r"residual 2\.50e-01 after 7 Newton steps"):
        AttentionModel(2.0, "tanh").error(1e-2)
