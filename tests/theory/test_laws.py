"""The scipy.stats-style spectral laws (theory.laws): conventions, cross-checks against freealg on the p x p
convention, internal consistency, samples, validation.

Tolerances
----------
* freealg's ``MarchenkoPastur(lam).density`` evaluates the same closed form as ``mp_density(x, c) / c`` in float64
  (about ten operations): the test points lie at least a tenth of the support's width inside the edges, where the
  factors ``x - lam_-`` and ``lam_+ - x`` lose at most a factor 10 of relative precision, so a relative 1e-13
  (~500 ulp) is ample.  Their Stieltjes transform is the root of the same quadratic, off the support: 1e-13 absolute.
* freealg has no cdf: the cdf is checked against ``scipy.integrate.quad`` of freealg's density, to quad's reported
  error bound plus 1e-14 (rounding of the closed form, a sum of O(1) terms).
* ``ppf`` is 64 bisection steps (a bracket of 2^-64 times the support's width), so ``cdf(ppf(q)) = q`` holds to
  the cdf's rounding: 1e-14; the kernel law's cdf is a 160-node contour quadrature, measured here against quad.
* Samples: the Kolmogorov-Smirnov distance of the eigenvalues of one matrix against ``cdf`` (computed with left
  limits at atoms) is compared with the level-1e-3 critical value of ``n`` i.i.d. draws.  For i.i.d. draws that
  is a false-fail rate of at most 1e-3 (conservative for a law with atoms); eigenvalues of one matrix repel and
  fluctuate much less (measured distances 0.006-0.011 at n = 400 over seeds 0-4, against a critical value of
  0.097), so the margin also absorbs the O(1/n) finite-size bias.
"""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from scipy import integrate, stats

import theory.laws
from theory import KernelSpectralLaw, MarchenkoPastur, hermite_moments, mp_density

ALPHA = 1e-3  # level of the sample tests (module docstring)


def _quad(f, a, b):
    """``(value, error bound)`` of scipy's adaptive quadrature at tight tolerances."""
    return integrate.quad(f, a, b, epsabs=1e-13, epsrel=1e-13, limit=400)


def _ks_distance(sample: np.ndarray, cdf, atoms=()) -> float:
    """``sup_x |ECDF(x) - F(x)|`` over right and left limits at the sample points (exact with atoms)."""
    vals, counts = np.unique(sample, return_counts=True)
    right = np.cumsum(counts) / sample.size
    left = right - counts / sample.size
    F = cdf(vals)
    F_left = F - sum(w * (vals == a) for a, w in atoms)
    return float(max(np.max(np.abs(right - F)), np.max(np.abs(left - F_left))))


def _interior(lo: float, hi: float, k: int = 7) -> np.ndarray:
    """``k`` points at least a tenth of the width inside ``[lo, hi]``."""
    return lo + (hi - lo) * np.linspace(0.1, 0.9, k)


# ----------------------------------------------------------------------------------------------- conventions
def test_the_two_conventions_of_the_issue():
    assert round(MarchenkoPastur(0.5).pdf(1.0), 4) == 0.2105  # Z^T Z / n, the law of mp_density
    assert round(MarchenkoPastur(0.5, matrix="p").pdf(1.0), 4) == 0.4211  # Z Z^T / n, freealg / scikit-rmt
    for cc in (0.25, 0.5, 2.0, 4.0):
        n, p = MarchenkoPastur(cc), MarchenkoPastur(cc, "p")
        assert n.atom == max(1 - cc, 0.0) and p.atom == pytest.approx(max(1 - 1 / cc, 0.0), abs=1e-15)
        assert n.edges == pytest.approx(p.edges, rel=1e-15)
        x = _interior(*n.edges)
        assert np.allclose(p.pdf(x), mp_density(x, cc) / cc, rtol=1e-14)
        assert (n.mean(), n.var()) == pytest.approx((cc, cc), rel=1e-13)
        assert (p.mean(), p.var()) == pytest.approx((1.0, cc), rel=1e-13)


@pytest.mark.parametrize("cc, matrix", [(0.5, "n"), (2.0, "n"), (0.5, "p"), (2.0, "p"), (1.0, "n")])
def test_samples_are_eigenvalues_with_the_stated_atom(cc, matrix):
    law = MarchenkoPastur(cc, matrix)
    x = law.rvs(400, random_state=0)
    assert x.shape == (400,) and np.all(x >= 0)
    zeros = int((x == 0).sum())  # exact zeros: rank min(p, n) of the Gram matrix
    assert zeros == round(400 * law.atom)
    assert _ks_distance(x, law.cdf, [(0.0, law.atom)]) <= stats.kstwo.ppf(1 - ALPHA, x.size)


# ----------------------------------------------------------------------------------------------- freealg, p x p
@pytest.mark.parametrize("cc", [0.25, 0.5, 1.0, 2.0, 4.0])
def test_pdf_stieltjes_cdf_match_freealg_on_the_p_convention(cc):
    fa_dist = pytest.importorskip("freealg.distributions")
    ours, theirs = MarchenkoPastur(cc, "p"), fa_dist.MarchenkoPastur(cc)
    assert ours.edges == pytest.approx(tuple(map(float, theirs.supp)), rel=1e-15, abs=1e-15)
    x = _interior(*ours.edges)
    assert np.allclose(ours.pdf(x), theirs.density(x), rtol=1e-13, atol=0)
    outside = np.array([ours.edges[0] - 0.05, ours.edges[1] + 0.05])
    assert np.all(ours.pdf(outside) == 0) and np.all(theirs.density(outside) == 0)
    z = np.array([0.3 + 0.5j, -1.0 + 0.1j, 2.0 + 1.0j, 5.0 + 0.01j])
    assert np.max(np.abs(ours.stieltjes(z) - theirs.stieltjes(z=z, alt_branch=False))) <= 1e-13
    for xv in x:
        value, err = _quad(lambda t: theirs.density(np.array([t]))[0], ours.edges[0], xv)
        assert abs(ours.cdf(xv) - ours.atom - value) <= err + 1e-14


# ----------------------------------------------------------------------------------------------- consistency
@pytest.mark.parametrize("cc, matrix", [(0.5, "n"), (2.0, "n"), (0.5, "p"), (2.0, "p"), (1.0, "n")])
def test_cdf_ppf_moments_stieltjes_are_consistent(cc, matrix):
    law = MarchenkoPastur(cc, matrix)
    lo, hi = law.edges
    x = _interior(lo, hi)
    for xv in x:  # the closed-form cdf against quadrature of the density
        value, err = _quad(law.pdf, lo, xv)
        assert abs(law.cdf(xv) - law.atom - value) <= err + 1e-14
    q = law.atom + (1 - law.atom) * np.array([1e-6, 0.1, 0.5, 0.9, 1 - 1e-9])
    assert np.max(np.abs(law.cdf(law.ppf(q)) - q)) <= 1e-14
    assert np.allclose(law.ppf(law.cdf(x)), x, rtol=1e-12)
    if law.atom:
        assert np.all(law.ppf([0.0, law.atom / 2, law.atom]) == 0.0) and law.cdf(-1e-300) == 0.0
    assert law.cdf(hi) == 1.0 and law.ppf(1.0) == pytest.approx(hi, rel=1e-15)
    # moments: Narayana, sum_j N(k, j) c^j for Z^T Z / n and c^(j - 1) for Z Z^T / n; against quadrature too
    for k in range(1, 6):
        nar = sum(math.comb(k, j) * math.comb(k, j - 1) / k * cc ** (j - (matrix == "p")) for j in range(1, k + 1))
        assert law.moment(k) == pytest.approx(nar, rel=1e-13)
        value, err = _quad(lambda t: t**k * law.pdf(t), lo, hi)
        assert abs(law.moment(k) - value) <= err + 1e-13 * nar
    for z in (-0.7, 1.5 + 0.3j, 6.0 + 2.0j):  # int dP / (x - z), the atom included
        re, e1 = _quad(lambda t: (law.pdf(t) / (t - z)).real, lo, hi)
        im, e2 = _quad(lambda t: (law.pdf(t) / (t - z)).imag, lo, hi)
        assert abs(law.stieltjes(z) - (re + 1j * im - law.atom / z)) <= e1 + e2 + 1e-13


# ----------------------------------------------------------------------------------------------- the kernel law
def test_kernel_law_of_a1_zero_is_freealgs_semicircle():
    fa_dist = pytest.importorskip("freealg.distributions")
    cc, nu = 2.0, 0.5
    law, r = KernelSpectralLaw(cc, a1=0.0, nu=nu), 2 * math.sqrt(nu / cc)  # variance nu / c, radius r
    x = np.linspace(-0.9 * r, 0.9 * r, 7)
    # boundary value at Im z = 1e-12: |Im m(x + i eta) / pi - rho(x)| <= eta |m'| / pi, below 1e-10 here
    assert np.allclose(law.pdf(x), fa_dist.Wigner(r).density(x), rtol=0, atol=1e-10)
    semicircle_cdf = 0.5 + x * np.sqrt(r * r - x * x) / (np.pi * r * r) + np.arcsin(x / r) / np.pi
    assert np.max(np.abs(law.cdf(x) - semicircle_cdf)) <= 1e-11  # the contour quadrature's accuracy
    assert law.support() == pytest.approx((-r, r), abs=1e-9)
    assert [law.moment(k) for k in range(5)] == pytest.approx([1, 0, r * r / 4, 0, 2 * (r * r / 4) ** 2], abs=1e-15)


@pytest.mark.parametrize("a1", [0.7, -0.7])
def test_kernel_law_of_a_linear_f_is_affine_marchenko_pastur(a1):
    cc = 0.5  # an atom 1 - c at lambda = 0, i.e. at x = -a1
    law, mp = KernelSpectralLaw(cc, a1=a1, nu=a1 * a1), MarchenkoPastur(cc)
    to_x = lambda lam: a1 * (lam / cc - 1)  # noqa: E731
    lam = _interior(*mp.edges)
    assert np.allclose(law.pdf(to_x(lam)), cc / abs(a1) * mp.pdf(lam), rtol=1e-14)
    F = law.cdf(to_x(lam))
    assert np.allclose(F, mp.cdf(lam) if a1 > 0 else 1 - mp.cdf(lam), rtol=0, atol=1e-15)
    # the atom: the bottom of the law for a1 > 0 (cdf jumps from 0 to 1 - c at -a1), the top for a1 < 0
    below, at = law.cdf(-a1 - 1e-12), law.cdf(-a1)
    assert (below, at) == ((0.0, pytest.approx(1 - cc)) if a1 > 0 else (pytest.approx(cc), 1.0))
    q = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    xq = law.ppf(q)
    assert np.all(law.cdf(xq) >= q - 1e-14) and np.all(law.cdf(xq - 1e-9) < q)  # the left-continuous inverse
    cont = (q > 1 - cc) if a1 > 0 else (q <= cc)  # q in the range of the continuous part
    assert np.max(np.abs(law.cdf(xq[cont]) - q[cont])) <= 1e-14
    assert np.all(xq[~cont] == -a1)
    assert law.mean() == pytest.approx(0.0, abs=1e-15) and law.var() == pytest.approx(a1**2 / cc, rel=1e-13)


@pytest.mark.parametrize("cc", [0.5, 2.0])
def test_kernel_law_of_tanh_is_consistent(cc):
    law = KernelSpectralLaw(cc, "tanh")
    hm = hermite_moments("tanh")
    a1, nu = float(hm.a1), float(hm.nu)
    lo, hi = law.support()
    x = _interior(lo, hi, 5)
    for xv in x:  # the contour cdf against quadrature of the density
        value, err = _quad(law.pdf, lo, xv)
        assert abs(law.cdf(xv) - value) <= err + 1e-11
    q = np.array([1e-3, 0.25, 0.5, 0.75, 0.999])
    assert np.max(np.abs(law.cdf(law.ppf(q)) - q)) <= 1e-13
    # free cumulants 0, nu/c, a1^3/c^2, a1^4/c^3: m2 = k2, m3 = k3, m4 = k4 + 2 k2^2
    want = [1.0, 0.0, nu / cc, a1**3 / cc**2, a1**4 / cc**3 + 2 * (nu / cc) ** 2]
    assert [law.moment(k) for k in range(5)] == pytest.approx(want, rel=1e-13, abs=1e-15)
    for k in (2, 3):
        value, err = _quad(lambda t: t**k * law.pdf(t), lo, hi)
        assert abs(law.moment(k) - value) <= err + 1e-9  # the density's mass beyond the refined edges
    z = 0.3 + 0.5j
    re, e1 = _quad(lambda t: (law.pdf(t) / (t - z)).real, lo, hi)
    im, e2 = _quad(lambda t: (law.pdf(t) / (t - z)).imag, lo, hi)
    assert abs(law.stieltjes(z) - (re + 1j * im)) <= e1 + e2 + 1e-9


@pytest.mark.parametrize("kind", ["activation", "constants"])
def test_kernel_samples_follow_the_law(kind):
    hm = hermite_moments("tanh")
    law = (KernelSpectralLaw(2.0, "tanh") if kind == "activation"
           else KernelSpectralLaw(2.0, a1=float(hm.a1), nu=float(hm.nu)))
    x = law.rvs(400, random_state=1)
    assert _ks_distance(x, law.cdf) <= stats.kstwo.ppf(1 - ALPHA, x.size)


# ----------------------------------------------------------------------------------------------- scipy conventions
def test_shapes_and_random_state_follow_scipy():
    law = MarchenkoPastur(2.0)
    assert isinstance(law.pdf(1.0), float) and law.pdf([1.0, 2.0]).shape == (2,)
    assert law.cdf(np.ones((2, 3))).shape == (2, 3) and isinstance(law.ppf(0.5), float)
    assert isinstance(law.stieltjes(-1.0), float) and isinstance(law.stieltjes(1.0 + 1j), complex)
    assert law.rvs((3, 4), random_state=0).shape == (3, 4)
    assert np.array_equal(law.rvs(50, random_state=7), law.rvs(50, random_state=7))
    g = np.random.default_rng(3)
    a, b = law.rvs(50, random_state=g), law.rvs(50, random_state=g)  # a generator is advanced
    assert not np.array_equal(a, b)
    assert law.rvs(5).shape == (5,)  # None: fresh entropy
    assert law.support() == law.edges and MarchenkoPastur(0.5).support() == (0.0, MarchenkoPastur(0.5).edges[1])


@pytest.mark.parametrize("call, name", [
    (lambda: MarchenkoPastur(0.0), "c"),
    (lambda: MarchenkoPastur(float("nan")), "c"),
    (lambda: MarchenkoPastur("0.5"), "c"),
    (lambda: MarchenkoPastur(0.5, matrix="N"), "matrix"),
    (lambda: MarchenkoPastur(0.5).pdf("1"), "x"),
    (lambda: MarchenkoPastur(0.5).cdf([1.0, float("nan")]), "x"),
    (lambda: MarchenkoPastur(0.5).ppf(1.5), "q"),
    (lambda: MarchenkoPastur(0.5).ppf(-0.1), "q"),
    (lambda: MarchenkoPastur(0.5).stieltjes(0.0), "z"),
    (lambda: MarchenkoPastur(0.5).moment(-1), "k"),
    (lambda: MarchenkoPastur(0.5).moment(1.5), "k"),
    (lambda: MarchenkoPastur(0.5).rvs(0), "size"),
    (lambda: MarchenkoPastur(0.5).rvs((2, "3")), "size"),
    (lambda: MarchenkoPastur(0.5).rvs(10**9), "size"),
    (lambda: MarchenkoPastur(0.5).rvs(3, random_state="seed"), "random_state"),
    (lambda: MarchenkoPastur(0.5).rvs(3, random_state=-1), "random_state"),
    (lambda: MarchenkoPastur(0.5).rvs(3, random_state=True), "random_state"),
    (lambda: KernelSpectralLaw(2.0), "activation"),
    (lambda: KernelSpectralLaw(2.0, "tanh", a1=0.5, nu=1.0), "activation"),
    (lambda: KernelSpectralLaw(2.0, "swishy"), "activation"),
    (lambda: KernelSpectralLaw(2.0, a1=1.0, nu=0.5), "nu"),
    (lambda: KernelSpectralLaw(-2.0, "tanh"), "c"),
    (lambda: KernelSpectralLaw(2.0, "tanh").moment(101), "k"),
])
def test_public_methods_check_their_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_doctests():
    assert doctest.testmod(theory.laws).failed == 0
