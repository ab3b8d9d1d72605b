"""simulate_model of theory.MultiHeadModel s (numerics/multi_head.py): the same draws as the one-head path, exact
identities on every draw, reproducibility, and a loose theory check at a small size."""

from __future__ import annotations

import numpy as np
import pytest

from numerics import MonteCarloSettings, simulate_model
from theory import AttentionModel, MultiHeadModel
from theory.multi_head import summed_activation

G = [0.01, 0.1, 1.0]
S = MonteCarloSettings(4, seed=3)


def test_shapes_and_one_model_returns():
    m = MultiHeadModel(2.0, ("tanh", "gelu"), 1.0, heads="random", readout="concat", value_ratio=0.5)
    mean, se, trials = simulate_model(m, 32, G, S, return_trials=True)
    assert mean.shape == se.shape == (3,) and trials.shape == (4, 3)
    out = simulate_model([m, MultiHeadModel(2.0, ("erf",), 1.0)], 32, G, S, kind=("true", "linearised", "ridge"))
    assert out["true"].shape == out["linearised"].shape == (2, 4, 3) and out["ridge"].shape == (4, 3)
    with pytest.raises(ValueError, match="share c and snr"):
        simulate_model([m, MultiHeadModel(0.5, ("erf",), 1.0)], 32, G, S)
    with pytest.raises(ValueError, match="whole number"):
        simulate_model(m, 33, G, S)


def test_same_draws_as_the_one_head_path():
    """Ridge is bit for bit the one-head simulation's ridge (the same X, y per trial); shared + sum is the one head
    with the summed activation on the same draws (to rounding)."""
    m = MultiHeadModel(0.5, ("tanh", "gelu"), 1.0)
    out = simulate_model([m], 32, G, S, kind=("true", "ridge"))
    one = simulate_model([AttentionModel(0.5, summed_activation(m.activations), 1.0)], 32, G, S, kind=("true", "ridge"))
    assert np.array_equal(out["ridge"], one["ridge"])
    assert np.max(np.abs(out["true"] - one["true"])) < 1e-10


def test_identical_concatenated_heads_duplicate_features():
    """[X K; X K] on every draw: E_2(gamma) = E_1(gamma / 2) with the same kernel."""
    two = simulate_model(MultiHeadModel(2.0, ("tanh", "tanh"), 1.0, readout="concat"), 64, G, S,
                         return_trials=True)[2]
    one = simulate_model(AttentionModel(2.0, "tanh", 1.0), 64, np.array(G) / 2, S, return_trials=True)[2]
    assert np.max(np.abs(two - one)) < 1e-10


def test_reproducible_across_batches_and_threads():
    m = [MultiHeadModel(2.0, ("tanh", "erf"), 1.0, heads="random", readout="concat", value_ratio=0.5),
         MultiHeadModel(2.0, ("tanh", "erf"), 1.0, heads="random")]
    a = simulate_model(m, 32, G, MonteCarloSettings(5, seed=1), kind=("true", "ridge"))
    b = simulate_model(m, 32, G, MonteCarloSettings(5, seed=1, batch_size=2, n_jobs=2), kind=("true", "ridge"))
    for k in a:
        assert np.array_equal(a[k], b[k])


def test_equal_heads_share_their_draws():
    """Two models with the same random heads (sum and concatenation) draw the same W_h: alone or together, the same
    numbers; a budget of v = 1 is no budget."""
    s = MultiHeadModel(2.0, ("tanh", "erf"), 1.0, heads="random")
    c = MultiHeadModel(2.0, ("tanh", "erf"), 1.0, heads="random", readout="concat")
    c1 = MultiHeadModel(2.0, ("tanh", "erf"), 1.0, heads="random", readout="concat", value_ratio=1.0)
    both = simulate_model([s, c, c1], 32, G, S)["true"]
    assert np.array_equal(both[0], simulate_model([s], 32, G, S)["true"][0])
    assert np.array_equal(both[1], simulate_model([c], 32, G, S)["true"][0])
    assert np.array_equal(both[1], both[2])


@pytest.mark.parametrize("kw", [dict(readout="concat"), dict(readout="concat", value_ratio=0.5),
                                dict(heads="random"), dict(heads="random", readout="concat", value_ratio=0.5)])
def test_theory_within_a_loose_band(kw):
    """Paired gap to ridge at p = 128 (n = 64), 24 trials: within 4 SE + 0.03 of the limit theory (a sanity check;
    B11 is the judged comparison)."""
    m = MultiHeadModel(2.0, ("tanh", "erf"), 1.0, **kw)
    out = simulate_model([m], 128, G, MonteCarloSettings(24, seed=0), kind=("true", "ridge"))
    d = out["true"][0] - out["ridge"]
    gap, se = d.mean(0), d.std(0, ddof=1) / np.sqrt(24)
    theory = m.error(np.array(G)) - m.ridge_error(np.array(G))
    assert np.all(np.abs(gap - theory) < 4 * se + 0.03)


def test_label_average_and_linearised():
    m = MultiHeadModel(2.0, ("tanh", "erf"), 0.0, readout="concat")
    mean, se = simulate_model(m, 32, G, S, label_average=True)
    assert np.all((mean > 0) & (mean < 1))
    with pytest.raises(ValueError, match="label_average"):
        simulate_model(MultiHeadModel(2.0, ("tanh",), 1.0), 32, G, S, label_average=True)
    lin = simulate_model(MultiHeadModel(2.0, ("tanh", "erf"), 1.0, readout="concat"), 32, G, S, kind="linearised")[0]
    assert np.all((lin > 0) & (lin < 1))
