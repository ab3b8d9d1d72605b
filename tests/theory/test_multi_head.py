"""theory.MultiHeadModel: the pencil's Dyson equation against the exact reductions (docs/multi_head.md).

Each test is an identity that holds for every finite ``p`` (so in the limit too), checked to solver precision:
one head is :class:`theory.AttentionModel`; shared heads with the sum readout are one head with ``g = H^(-1/2) sum
f_h``; ``H`` identical shared heads concatenated duplicate one head's features (``E_H(gamma) = E_1(gamma / H)``);
the sum of ``H`` random heads of key dimension ``d`` is one random head of key dimension ``H d`` (their linear parts
add up, their noises too); a budget ``v = 1`` is no budget.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from theory import AttentionModel, MultiHeadModel
from theory.multi_head import MultiHeadConvergenceError, summed_activation
from theory.symbols import gamma as g_sym

GAMMAS = np.array([1e-3, 1e-2, 0.1, 1.0])


@pytest.mark.parametrize("c,snr", [(2.0, 0.0), (0.5, 0.0), (0.5, 1.0), (2.0, 1.0), (1 / 3, 2.0)])
def test_one_head_is_attention_model(c, snr):
    """The pencil of one shared head (either readout) reproduces the one-head structured/null theory."""
    ref = AttentionModel(c, "tanh", snr).error(GAMMAS)
    for readout in ("sum", "concat"):
        out = MultiHeadModel(c, ("tanh",), snr, readout=readout).solve(GAMMAS).error
        assert np.max(np.abs(out - ref)) < 1e-10


@pytest.mark.parametrize("acts", [("tanh", "gelu"), ("tanh", "erf"), ("gelu", "relu", "tanh")])
@pytest.mark.parametrize("c", [0.5, 2.0])
def test_shared_sum_is_one_head_with_the_summed_activation(acts, c):
    """shared + sum: error() is AttentionModel(c, H^(-1/2) sum f_h) (exact), and the pencil with the heads'
    correlated nonlinear parts (Sigma's off-diagonal entries, non-zero for tanh/erf and gelu/relu) agrees."""
    m = MultiHeadModel(c, acts, snr=1.0)
    ref = AttentionModel(c, summed_activation(m.activations), 1.0).error(GAMMAS)
    assert np.array_equal(m.error(GAMMAS), ref)
    assert np.max(np.abs(m.solve(GAMMAS).error - ref)) < 1e-10


def test_issue_numbers():
    """The numbers issue 49 measured by simulation (p = 1024, gamma = 1e-3), as regression values of the theory:
    shared tanh + gelu sum 0.2649 (ridge 0.2500); random 4 x erf sum 0.3048 (measured 0.3054 +- 0.0075); random
    2 x tanh concatenated with v = 1/2 at c = 2: 0.00190 (measured 0.00176 +- 0.00006 on 4 trials, 0.00194 +- 0.00007
    on 32)."""
    assert MultiHeadModel(0.5, ("tanh", "gelu"), 1.0).error(1e-3) == pytest.approx(0.264851, abs=1e-6)
    assert MultiHeadModel(0.5, ("erf",) * 4, 1.0, heads="random").error(1e-3) == pytest.approx(0.304805, abs=1e-6)
    m = MultiHeadModel(2.0, ("tanh", "tanh"), 1.0, heads="random", readout="concat", value_ratio=0.5)
    assert m.error(1e-3) == pytest.approx(0.0019011, abs=1e-7)


@pytest.mark.parametrize("H", [2, 3, 5])
def test_identical_shared_heads_concatenated_duplicate_one_head(H):
    """[X K; ...; X K]: Phi^T Phi = H K X^T X K, so E_H(gamma) = E_1(gamma / H)."""
    out = MultiHeadModel(2.0, ("tanh",) * H, 1.0, readout="concat").solve(GAMMAS).error
    assert np.max(np.abs(out - AttentionModel(2.0, "tanh", 1.0).error(GAMMAS / H))) < 1e-10


@pytest.mark.parametrize("c", [0.5, 2.0])
def test_random_sum_is_one_random_head_of_the_summed_key_dimension(c):
    """sqrt(p/d) sum_h Q_h R_h^T / sqrt(H) = sqrt(p/(H d)) [Q_1..Q_H][R_1..R_H]^T: H heads of key ratio k summed
    are one head of key ratio H k (the independent noises add to one of the same variance)."""
    many = MultiHeadModel(c, ("erf",) * 3, 1.0, heads="random", key_ratio=0.2).solve(GAMMAS).error
    one = MultiHeadModel(c, ("erf",), 1.0, heads="random", key_ratio=0.6).solve(GAMMAS).error
    assert np.max(np.abs(many - one)) < 1e-10


def test_full_value_ratio_is_no_budget():
    a = MultiHeadModel(2.0, ("tanh", "erf"), 1.0, readout="concat").error(GAMMAS)
    b = MultiHeadModel(2.0, ("tanh", "erf"), 1.0, readout="concat", value_ratio=1.0).error(GAMMAS)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("kw", [dict(readout="concat", value_ratio=0.5), dict(heads="random", readout="concat"),
                                dict(heads="random", readout="concat", value_ratio=1 / 3)])
@pytest.mark.parametrize("c", [0.5, 2.0])
def test_errors_are_errors(kw, c):
    """0 <= E <= 1, the null model's error is the solution's null part, E increases with gamma, Newton converged."""
    m = MultiHeadModel(c, ("tanh", "gelu", "erf"), 1.0, **kw)
    sol = m.solve(GAMMAS)
    assert np.all((sol.error > 0) & (sol.error < 1)) and np.all(np.diff(sol.error) > 0)
    assert np.max(sol.residual) < 1e-10
    null = MultiHeadModel(c, ("tanh", "gelu", "erf"), 0.0, **kw).solve(GAMMAS)
    assert np.max(np.abs(null.error - sol.null_error)) < 1e-10 and np.max(np.abs(null.error - null.null_error)) < 1e-12


def test_symbolic_gamma_and_its_derivative():
    m = MultiHeadModel(2.0, ("tanh", "tanh"), 1.0, heads="random", readout="concat", value_ratio=0.5)
    E = m.error(g_sym)
    assert float(E.subs(g_sym, 0.1)) == m.error(0.1)
    d = float(sp.diff(E, g_sym).subs(g_sym, 0.1).evalf())
    fd = (m.error(0.1 * (1 + 1e-6)) - m.error(0.1 * (1 - 1e-6))) / 2e-7
    assert d == pytest.approx(fd, rel=1e-6)
    with pytest.raises(NotImplementedError):
        sp.diff(E, g_sym, 2).subs(g_sym, 0.1).evalf()
    # shared + sum: the one-head model's own symbolic function
    assert "attention_error" in str(MultiHeadModel(2.0, ("tanh", "gelu")).error(g_sym))


def test_validation():
    with pytest.raises(ValueError, match="key_ratio"):
        MultiHeadModel(2.0, ("tanh",), key_ratio=0.5)
    with pytest.raises(ValueError, match="value_ratio"):
        MultiHeadModel(2.0, ("tanh",), value_ratio=0.5)
    with pytest.raises(TypeError, match="activations"):
        MultiHeadModel(2.0, "tanh")
    with pytest.raises(ValueError, match="activations"):
        MultiHeadModel(2.0, ())
    with pytest.raises(ValueError, match="between 1 and 16"):
        MultiHeadModel(2.0, ("tanh",) * 17)
    with pytest.raises(ValueError, match="heads"):
        MultiHeadModel(2.0, ("tanh",), heads="tied")
    with pytest.raises(ValueError, match="value_ratio"):
        MultiHeadModel(2.0, ("tanh",), readout="concat", value_ratio=1.5)
    with pytest.raises(ValueError, match="activations\\[1\\]"):
        MultiHeadModel(2.0, ("tanh", "nope"))
    with pytest.raises(TypeError, match="not an option"):
        MultiHeadModel(2.0, ("tanh", "erf"), readout="concat").error(0.1, system="spec")
    m = MultiHeadModel(2, ["TanH", "erf"], readout="concat")
    assert m.activations == ("tanh", "erf") and m.c == 2.0 and hash(m) == hash(MultiHeadModel(2.0, ("tanh", "erf"),
                                                                                              readout="concat"))
    assert m.n_features_ratio == 2.0 and MultiHeadModel(2.0, ("erf",) * 4, heads="random").d_ratio == 0.25
    assert issubclass(MultiHeadConvergenceError, RuntimeError)


def test_kernel_constants():
    """a_h and Sigma_hg = E[f_h f_g] - a_h a_g: tanh and gelu's nonlinear parts are uncorrelated (odd and even),
    tanh and erf's are not; random heads keep the diagonal only."""
    a, S = MultiHeadModel(2.0, ("tanh", "gelu", "erf")).kernel_constants()
    assert a[0] == pytest.approx(0.605706, abs=1e-6) and abs(S[0, 1]) < 1e-12 and S[0, 2] > 0.01
    assert np.all(np.linalg.eigvalsh(S) > -1e-12)
    _, Sr = MultiHeadModel(2.0, ("tanh", "gelu", "erf"), heads="random").kernel_constants()
    assert np.array_equal(Sr, np.diag(np.diag(S)))


def _block_system_null_error(c, a, S, gamma, h=1e-6):
    """-gamma^2 d delta~/d gamma of the explicit H x H system of docs/multi_head.md, step 3 (shared heads,
    concatenated, null model), by quadrature over mu_G and a central difference in gamma."""
    from scipy.optimize import fsolve

    from theory.null_system import _gram_law_quadrature

    ll, ww = _gram_law_quadrature(float(c), 4000)
    ev, V = np.linalg.eigh(S)

    def F(x, g):
        dt, beta, kap = x[0], x[1], x[2:]
        wr = (a[None, :] * (ll[:, None] - 1) - kap[None, :]) @ V
        Jd = 1.0 / (1 + ll[:, None] * dt * ev[None, :])
        D = beta + c * ll * np.sum(wr**2 * Jd, 1)
        e_beta = (g + np.sum(ww * ll * np.sum(ev[None, :] * Jd, 1))
                  - c * np.sum(ww * ll**2 * np.sum(wr**2 * Jd**2 * ev[None, :], 1) / D))
        e_kap = S @ np.sum(ww[:, None] * ll[:, None] * ((wr * Jd) @ V.T) / D[:, None], 0)
        return np.concatenate([[dt - np.sum(ww / D), beta - e_beta], kap - e_kap])

    x = np.concatenate([[0.5, 1.0], np.zeros(len(a))])
    for g in np.geomspace(1.0, gamma, 8):  # continuation from gamma = 1
        x = fsolve(F, x, args=(g,), xtol=1e-14)
    lo, hi = (fsolve(F, x, args=(gg,), xtol=1e-14)[0] for gg in (gamma * (1 - h), gamma * (1 + h)))
    return -gamma**2 * (hi - lo) / (2 * gamma * h)


def test_block_system_of_shared_heads():
    """The readable H x H deterministic equivalent of shared concatenated heads (unknowns delta~, beta, kappa in R^H;
    Sigma couples the heads) equals the pencil's Dyson equation."""
    m = MultiHeadModel(2.0, ("tanh", "erf", "gelu"), 0.0, readout="concat")
    a, S = (np.array(v) for v in m.kernel_constants())
    for g in (0.1, 0.3, 1.0):
        assert _block_system_null_error(2.0, a, S, g) == pytest.approx(m.error(g), abs=1e-8)


def test_shared_budget_limit_is_the_large_H_limit():
    """H identical shared heads concatenated with v = 1/H approach the free-Poisson limit (a Gaussian p x p value
    map) from below, the distance halving as H doubles (a 1/H rate)."""
    from theory.multi_head import shared_budget_limit

    lim = shared_budget_limit(2.0, "tanh", 1.0, 0.1)
    gaps = [lim - MultiHeadModel(2.0, ("tanh",) * H, 1.0, readout="concat", value_ratio=1 / H).error(0.1)
            for H in (2, 4, 8)]
    assert all(g > 0 for g in gaps) and gaps[0] > gaps[1] > gaps[2]
    assert gaps[1] / gaps[0] == pytest.approx(0.5, abs=0.1) and gaps[2] / gaps[1] == pytest.approx(0.5, abs=0.1)
