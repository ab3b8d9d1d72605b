"""The frozen settings of :mod:`theory.settings`: validation, immutability, equality, the rules of the methods'
options, and the methods that are not solvers."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest
import sympy as sp

import theory
from theory import AttentionModel, ArgumentTypeError, RateSetting, Spike
from theory.symbols import gamma as g_sym

try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is a test dependency
    given = None


def _same(a, b):
    """Bit-for-bit equal numbers (floats, arrays, tuples of floats)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape and a.tobytes() == b.tobytes(), (a, b)


# ============================================================================ validation
@pytest.mark.parametrize("c", [0.0, -1.0, float("nan"), float("inf"), 1e5, True, "2", 1j])
def test_bad_c_refused(c):
    with pytest.raises(ValueError, match="^c "):
        AttentionModel(c, "tanh")


@pytest.mark.parametrize("activation", ["swishy", None, 1j, sp.Symbol("x") + sp.Symbol("y"), {"a1": 0.5}])
def test_unknown_or_bad_activation_refused(activation):
    with pytest.raises(ValueError, match="activation"):
        AttentionModel(2.0, activation)


@pytest.mark.parametrize("spike", [(-1.0, "aligned"), (1.0, "diagonal"), (float("nan"), "aligned"), "aligned", 1.0,
                                   (1.0, "aligned", 3), (1e300, "aligned")])
def test_bad_spike_refused(spike):
    with pytest.raises(ValueError, match="spike"):
        AttentionModel(2.0, "tanh", 1.0, spike=spike)


def test_bad_spike_vectors_and_other_fields_refused():
    with pytest.raises(ValueError, match="w_k"):
        Spike([float("nan")], [1.0])
    with pytest.raises(ValueError, match="together"):
        AttentionModel(2.0, "tanh", 1.0, spike=Spike([1.0], None))
    with pytest.raises(ValueError, match="^snr "):
        AttentionModel(2.0, "tanh", -1.0)
    with pytest.raises(ValueError, match="^diagonal "):
        AttentionModel(2.0, "tanh", diagonal="sometimes")
    with pytest.raises(ArgumentTypeError, match="^diagonal "):
        AttentionModel(2.0, "tanh", diagonal=True)


def test_rate_setting_validation():
    with pytest.raises(ValueError, match="beta"):
        RateSetting(beta=0)
    with pytest.raises(ValueError, match="r must be <= d"):
        RateSetting(2, r=3, d=2)
    with pytest.raises(ValueError, match="together"):
        RateSetting(2, r=1)
    with pytest.raises(ValueError, match="constant"):
        RateSetting(2, 1, 5, constant=-1)
    with pytest.raises(ValueError, match="needs the rank r"):
        RateSetting(2).low_rank_condition(10**6)


# ============================================================================ frozen, hashable, canonical
def test_frozen():
    m = AttentionModel(2.0, "tanh", 1.0, spike=(4.0, "aligned"))
    for name, value in (("c", 3.0), ("snr", 0.0), ("spike", None)):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(m, name, value)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.spike.w_k = (1.0,)
    with pytest.raises(dataclasses.FrozenInstanceError):
        RateSetting(2, 1, 5).beta = 3


def test_equal_and_hashable_whatever_the_spelling():
    a = AttentionModel(2, "TanH", 1, spike=(4.0, "aligned"))
    b = AttentionModel(2.0, "tanh", 1.0, spike=Spike([2.0, 0.0], [2.0]))
    c = AttentionModel(2.0, "tanh", 1.0, spike=Spike(np.array([2.0, 0.0, 0.0]), [2.0]))
    assert a == b == c and hash(a) == hash(b) == hash(c) and len({a, b, c}) == 1
    assert a.spike == Spike.named(4.0, "aligned") and a.activation == "tanh" and a.c == 2.0
    assert AttentionModel(2.0, "tanh", 1.0, spike=(4.0, "orthogonal")) != a
    assert AttentionModel(2.0, "tanh", 1.0) != a
    d = AttentionModel(2.0, {"sf2": 0.03, "a1": 0.6})
    assert d == AttentionModel(2.0, {"a1": 0.6, "sf2": 0.03})
    assert hash(d) == hash(AttentionModel(2.0, dict(d.activation)))
    assert repr(a).startswith("AttentionModel(c=2, ")
    assert repr(b) == ("AttentionModel(c=2.0, activation='tanh', snr=1.0, spike=Spike(w_k=(2.0,), w_q=(2.0,)), "
                       "diagonal='removed')")
    assert RateSetting(2, 1, 5) == RateSetting(beta=2, r=1, d=5)
    assert len({RateSetting(2, 1, 5), RateSetting(2, 1, 5)}) == 1
    for obj in (a, d, RateSetting(2, 1, 5)):  # settings travel to worker processes
        assert pickle.loads(pickle.dumps(obj)) == obj
    assert repr(RateSetting(2, 1, 5)) == "RateSetting(beta=2, r=1, d=5, constant=1)"


# ============================================================================ the solvers' options
def test_symbolic_gamma_and_c():
    E = AttentionModel(2.0, "tanh").error(g_sym)
    assert E == AttentionModel(2.0, "tanh").error(g_sym) and str(E) == "attention_error(gamma, 2.0, 'tanh')"
    c = sp.Symbol("c", positive=True)
    f = AttentionModel(c, "tanh").error(0.1)
    _same(float(f.subs(c, 2.0)), AttentionModel(2.0, "tanh").error(0.1))


def test_option_rules():
    m = AttentionModel(2.0, "tanh", 1.0)
    with pytest.raises(ArgumentTypeError, match="snr is part of the model"):
        m.error(0.1, snr=2.0)
    with pytest.raises(ArgumentTypeError, match="spike is part of the model"):
        m.solve(0.1, spike=(1.0, "aligned"))
    with pytest.raises(ArgumentTypeError, match="w_k is part of the model"):
        m.error_taylor(0.1, w_k=[1.0], w_q=[1.0])
    with pytest.raises(ValueError, match="does not take snr"):
        m.small_gamma_law()
    with pytest.raises(ValueError, match="does not take spike"):
        AttentionModel(2.0, "tanh", spike=(1.0, "aligned")).small_gamma_law()
    with pytest.raises(TypeError, match="bogus"):
        m.error(0.1, bogus=1)


# ============================================================================ the other methods
def test_ridge_hermite_and_rate_methods():
    m = AttentionModel(2.0, "tanh", 1.0)
    _same(m.ridge_error(np.array([0.01, 0.1])), theory.ridge_error_values([0.01, 0.1], 2.0, 1.0))
    assert isinstance(m.ridge_error(0.1), float)
    assert m.hermite == theory.hermite_moments("tanh")
    with pytest.raises(ValueError, match="kernel constants"):
        AttentionModel(2.0, {"a1": 0.6, "sf2": 0.03}).hermite
    s = RateSetting(beta=2, r=1, d=30, constant=1)
    assert s.rate(10**5) == theory.minimax_rate(10**5, 2) and s.rate_exponent == theory.rate_exponent(2)
    assert bool(s.low_rank_condition(10**6)) == bool(theory.low_rank_condition(1, 30, 10**6, 2))
    assert s.min_samples() == theory.min_samples(1, 30, 2)
    assert s.parametric_term(100) == theory.parametric_term(1, 30, 100)
    assert s.num_intervals(10**6) == theory.num_intervals(10**6, 2)
    assert s.upper_bound(100) == theory.upper_bound(100, 2) and s.low_rank_rhs(100) == theory.low_rank_rhs(100, 2)
    beta = sp.Symbol("beta", positive=True)
    assert RateSetting(beta).rate_exponent == theory.rate_exponent(beta)


if given is not None:

    @settings(max_examples=12, deadline=None, derandomize=True, database=None)
    @given(c=st.floats(0.2, 5.0), snr=st.sampled_from([0.0, 0.5, 2.0]),
           activation=st.sampled_from(["tanh", "erf", "relu"]),
           spike=st.tuples(st.floats(0.0, 8.0), st.sampled_from(["aligned", "orthogonal"])))
    def test_hypothesis_named_spike_equals_its_vectors(c, snr, activation, spike):
        model = AttentionModel(c, activation, snr, spike=spike)
        vectors = AttentionModel(c, activation, snr, spike=Spike(*theory.spike_vectors(*spike)))
        assert vectors == model and hash(vectors) == hash(model)
