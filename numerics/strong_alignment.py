"""Monte Carlo of attention against ridge under strong alignment, averaged over the labels given the data.

Paper B's model ``X = mu y^T + Z`` (``mu = sqrt(snr) e_1``, i.i.d. labels ``y_i = +-1``) at ``n = p / c`` tokens, with
aligned spikes ``w_K = w_Q = sqrt(t sqrt p) e_1``: ``t = ||w_K|| ||w_Q|| / sqrt p`` is held fixed as ``p`` grows (the
scaling of :func:`theory.strong_alignment_gap`).  Each trial draws one ``X`` and evaluates, on it, attention (the true
kernel ``f(X^T W X / sqrt p) / sqrt p``, diagonal removed) and ridge (``Phi = X``); the labels are integrated out
given ``X`` (their posterior means :func:`numerics.label_posterior_mean`, as in
:func:`numerics.interpolation_error_label_average`), which estimates the same expectation as drawn labels with far
less variance.  One eigendecomposition per draw and method gives the error, its parts and the prediction risk.

>>> from numerics import MonteCarloSettings
>>> out = strong_alignment_mc("erf", 0.5, 1.0, 16, [0.0], MonteCarloSettings(2, seed=0, labels="iid"))
>>> out["attention"].shape, out["ridge"].shape
((2, 1), (2, 1))
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from theory.validation import ArgumentTypeError, as_float, as_int, describe

from ._mc import check_gammas, check_kernel_memory, draw_sample
from ._ridge_solvers import gram, smoother_parts
from .mc_settings import MonteCarloSettings
from .rmt import kernel_batch, resolve_activation

__all__ = ["strong_alignment_mc"]


def strong_alignment_mc(activation: Any, c: Any, t: Any, p: Any, gammas: Any, settings: MonteCarloSettings, *,
                        snr: Any = 1.0, bins: Any = None) -> dict[str, np.ndarray]:
    """Per-trial label-averaged ``E(gamma)`` of attention and ridge on the same draws, aligned spike at fixed ``t``,
    with its parts, the prediction risk on fresh labels and attention's leverage by bins of ``|a|``.

    Parameters
    ----------
    activation : str or sympy expression, or a list / tuple of them
        The kernel's ``f`` (see :func:`numerics.resolve_activation`).  A list: every activation on the same draws.
    c : float
        ``p / n``, ``> 0``; ``p / c`` is rounded to the nearest whole number of tokens.
    t : float, or a list / tuple of them
        ``||w_K|| ||w_Q|| / sqrt p``, ``>= 0`` (spike strength ``t sqrt p``).  A list: every strength on the same draws.
    p : int, ``>= 2``
    gammas : array (G,), ``>= 0`` (``0``: the interpolation limit, the in-sample residual for ``c < 1``).
    settings : numerics.MonteCarloSettings
        ``n_trials`` (at most ``2**31 - 1``); trial ``k`` draws from ``SeedSequence(seed).spawn(n_trials)[k]``;
        ``labels`` must be ``"iid"`` (for which the posterior means are exact); ``device``: that of the kernel and
        the eigendecompositions (the draws are the same).  Trials run one at a time in the calling thread (``n_jobs``
        and ``batch_size`` are not used).
    snr : float
        ``||mu||^2``, ``>= 0``.
    bins : array (B + 1,), optional
        Increasing edges of ``|a|`` (``a = x_1``, the token's coordinate along ``mu``; e.g.
        :func:`theory.label_coordinate_bins`): the mean leverage of attention's tokens in each bin is returned.

    Returns
    -------
    dict
        For ``name`` in ``"attention"``, ``"ridge"``, arrays ``(n_trials, G)`` paired trial by trial:
        ``name``: ``E(gamma)``; ``name_signal``: ``g^T R^2 g / n``, the part of the Bayes predictor
        ``g = tanh(mu^T x)`` left in the residual; ``name_noise``: ``sum_i v_i (R^2)_ii / n``, the label noise left
        (``v = 1 - g^2``; the two add up to ``E``); ``name_risk``: the risk on fresh labels at the same tokens,
        ``E + 2 sum_i v_i S_ii / n`` (``S = I - R``).  With ``bins``: ``"attention_leverage"``, ``(n_trials, G, B)``
        (NaN for a bin without tokens).  A list of activations adds a leading axis to every array, then a list of
        strengths another (ridge's arrays repeated along them): one draw, its ``X^T X`` and ridge's solve serve
        every pair, and a single activation and strength give the numbers of a call with that pair alone.

    Examples
    --------
    >>> from numerics import MonteCarloSettings
    >>> settings = MonteCarloSettings(2, seed=0, labels="iid")
    >>> out = strong_alignment_mc(["erf", "tanh"], 0.5, [0.5, 1.0], 16, [0.0], settings)
    >>> out["attention"].shape, out["ridge"].shape
    ((2, 2, 2, 1), (2, 2, 2, 1))
    """
    acts = _as_list("activation", activation)
    tv = [as_float("t", x, low=0) for x in _as_list("t", t)]
    cv = as_float("c", c, low=0, low_open=True)
    pv = as_int("p", p, 2, 2**31 - 1)
    trials = _check_settings(settings)
    s = as_float("snr", snr, low=0)
    g = check_gammas(gammas)
    edges = None if bins is None else _check_bins(bins)
    n = max(1, int(round(pv / cv)))
    lead = (len(acts), len(tv))
    out = {f"{name}{part}": np.empty(lead + (trials, g.size)) for name in _NAMES for part in ("", *_PARTS)}
    if edges is not None:
        out["attention_leverage"] = np.full(lead + (trials, g.size, edges.size - 1), np.nan)
    dev = settings.device
    check_kernel_memory("X", pv, n)
    fs = [resolve_activation(a) for a in acts]
    gt = torch.from_numpy(g).to(dev)
    spikes = [torch.from_numpy(np.eye(1, pv)[0] * math.sqrt(x * math.sqrt(pv))).to(dev) for x in tv]
    for k, child in enumerate(np.random.SeedSequence(settings.seed).spawn(trials)):
        X, _, mu = draw_sample(n, pv, s, np.random.default_rng(child), "iid")
        m = torch.from_numpy(np.tanh(mu @ X)).unsqueeze(0).to(dev)  # numerics.label_posterior_mean
        Xt = torch.from_numpy(X).unsqueeze(0).to(dev)
        S0 = gram(Xt.transpose(-1, -2))  # X^T X, shared by every kernel of the draw
        which = np.digitize(np.abs(X[0]), edges) - 1 if edges is not None else None
        _store(out, "ridge", (slice(None), slice(None), k), smoother_parts(Xt, m, gt), None)
        for i, f in enumerate(fs):
            for j, spike in enumerate(spikes):
                phi = Xt @ kernel_batch(Xt, f, spike, spike, "removed", S0)
                _store(out, "attention", (i, j, k), smoother_parts(phi, m, gt), which)
    index = tuple(slice(None) if isinstance(x, (list, tuple)) else 0 for x in (activation, t))
    return {key: v[index] for key, v in out.items()}


def _as_list(name: str, value: Any) -> list:
    """``value`` as a non-empty list: a list or tuple as given, anything else as its one entry."""
    out = list(value) if isinstance(value, (list, tuple)) else [value]
    if not out:
        raise ValueError(f"{name} must not be an empty list")
    return out


def _store(out: dict[str, np.ndarray], name: str, at: tuple, parts: tuple, which: np.ndarray | None) -> None:
    """One trial's :func:`smoother_parts` of ``name`` into ``out`` at ``at``; attention's leverage by bin of ``|a|``
    where ``which`` (each token's bin) is given."""
    signal, noise, absorbed, leverage = (x[0].cpu().numpy() for x in parts)
    out[name][at], out[f"{name}_signal"][at], out[f"{name}_noise"][at] = signal + noise, signal, noise
    out[f"{name}_risk"][at] = signal + noise + 2.0 * absorbed
    if which is not None:
        for b in range(out["attention_leverage"].shape[-1]):
            if np.any(which == b):
                out["attention_leverage"][at][:, b] = leverage[which == b].mean(axis=0)


#: the two methods, paired on every draw
_NAMES = ("attention", "ridge")
#: the parts returned beside ``E`` for each method
_PARTS = ("_signal", "_noise", "_risk")


def _check_settings(settings: Any) -> int:
    """``settings.n_trials``, of a :class:`MonteCarloSettings` with i.i.d. labels and at most ``2**31 - 1`` trials."""
    if not isinstance(settings, MonteCarloSettings):
        raise ArgumentTypeError(f"settings must be a numerics.MonteCarloSettings, got {describe(settings)}")
    if settings.labels != "iid":
        raise ValueError(f"settings.labels must be 'iid' (the labels are integrated out given X with their posterior "
                         f"means), got {settings.labels!r}")
    return as_int("settings.n_trials", settings.n_trials, 1, 2**31 - 1)


def _check_bins(bins: Any) -> np.ndarray:
    message = f"bins must be an increasing 1-d array of at least 2 edges >= 0, got {bins!r}"
    try:
        edges = np.asarray(bins, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(message) from None
    if edges.ndim != 1 or edges.size < 2 or np.any(np.isnan(edges)) or edges[0] < 0 or not np.all(edges[1:] > edges[:-1]):
        raise ValueError(message)
    return edges
