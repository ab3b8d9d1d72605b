"""Monte Carlo of attention against ridge under strong alignment, averaged over the labels given the data.

Paper B's model ``X = mu y^T + Z`` (``mu = sqrt(snr) e_1``, i.i.d. labels ``y_i = +-1``) at ``n = p / c`` tokens, with
aligned spikes ``w_K = w_Q = sqrt(t sqrt p) e_1``: ``t = ||w_K|| ||w_Q|| / sqrt p`` is held fixed as ``p`` grows (the
scaling of :func:`theory.strong_alignment_gap`).  Each trial draws one ``X`` and evaluates, on it, attention (the true
kernel ``f(X^T W X / sqrt p) / sqrt p``, diagonal removed) and ridge (``Phi = X``); the labels are integrated out
given ``X`` (:func:`numerics.interpolation_error_label_average` with :func:`numerics.label_posterior_mean`), which
estimates the same expectation as drawn labels with far less variance.

>>> out = strong_alignment_mc("erf", 0.5, 1.0, 16, [0.0], 2, seed=0)
>>> out["attention"].shape, out["ridge"].shape
((2, 1), (2, 1))
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from theory._validation import as_float, as_int

from ._mc import check_gammas, check_seed, label_posterior_mean, sample_signal_plus_noise
from .rmt import attention_features, interpolation_error_label_average

__all__ = ["strong_alignment_mc"]


def strong_alignment_mc(activation: Any, c: Any, t: Any, p: Any, gammas: Any, n_trials: Any, seed: Any, *,
                        snr: Any = 1.0) -> dict[str, np.ndarray]:
    """Per-trial label-averaged ``E(gamma)`` of attention and ridge on the same draws, aligned spike at fixed ``t``.

    Parameters
    ----------
    activation : str or sympy expression
        The kernel's ``f`` (see :func:`numerics.resolve_activation`).
    c : float
        ``p / n``, ``> 0``; ``p / c`` is rounded to the nearest whole number of tokens.
    t : float
        ``||w_K|| ||w_Q|| / sqrt p``, ``>= 0``: the spike strength is ``t sqrt p``.
    p : int
        Dimension, ``>= 2``.
    gammas : array (G,), ``>= 0`` (``0``: the interpolation limit, the in-sample residual for ``c < 1``).
    n_trials : int, ``>= 1``.
    seed : int
        Trial ``k`` draws from ``SeedSequence(seed).spawn(n_trials)[k]``.
    snr : float
        ``||mu||^2``, ``>= 0``.

    Returns
    -------
    dict
        ``"attention"`` and ``"ridge"``: arrays ``(n_trials, G)``, paired trial by trial.
    """
    cv = as_float("c", c, low=0, low_open=True)
    tv = as_float("t", t, low=0)
    pv = as_int("p", p, 2, 2**31 - 1)
    trials = as_int("n_trials", n_trials, 1, 2**31 - 1)
    s = as_float("snr", snr, low=0)
    g = check_gammas(gammas)
    n = max(1, int(round(pv / cv)))
    w = np.zeros(pv)
    w[0] = math.sqrt(tv * math.sqrt(pv))
    out = {"attention": np.empty((trials, g.size)), "ridge": np.empty((trials, g.size))}
    for k, child in enumerate(np.random.SeedSequence(check_seed("seed", seed)).spawn(trials)):
        X, _, mu = sample_signal_plus_noise(n, pv, s, np.random.default_rng(child), labels="iid")
        m = label_posterior_mean(X, mu)
        for name, phi in (("attention", attention_features(X, activation, w, w)), ("ridge", X)):
            out[name][k] = interpolation_error_label_average(phi, g, m)
    return out
