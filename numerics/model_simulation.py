"""Monte Carlo of a :class:`theory.AttentionModel`: the simulation twin of ``model.error``.

``simulate_model(model, p, gammas, settings)`` draws ``X = mu y^T + Z`` at ``n = p / c`` with the model's
``snr``, activation, spike (padded with zeros to ``p`` coordinates) and diagonal, the trials of a
:class:`numerics.MonteCarloSettings`, and returns what :func:`numerics.interpolation_error_mc` returns for those
arguments (the same numbers, bit for bit), so that theory and simulation take one object:

>>> from theory import AttentionModel
>>> from numerics import MonteCarloSettings
>>> model = AttentionModel(c=2.0, activation="tanh")
>>> mean, se = simulate_model(model, 64, [0.1], MonteCarloSettings(n_trials=4, seed=0))
>>> bool(abs(mean[0] - float(model.error(0.1))) < 5 * se[0] + 0.05)
True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from theory import AttentionModel
from theory.validation import ArgumentTypeError, as_int, check_choice, describe

from ._mc import Draws
from .mc_settings import MonteCarloSettings
from .rmt import error_mc, single_model

__all__ = ["simulate_model", "model_sizes"]

#: the largest dimension taken (the Monte Carlo's memory check refuses far smaller ones)
P_MAX = 2**31 - 1


def model_sizes(model: AttentionModel, p: Any) -> tuple[int, int]:
    """``(n, p)`` of a simulation of ``model`` at dimension ``p``: ``n = p / c``, which must be a whole number."""
    if not isinstance(model, AttentionModel):
        raise ArgumentTypeError(f"model must be a theory.AttentionModel, got {describe(model)}")
    pv = as_int("p", p, 1, P_MAX)
    c = float(model.c)
    n = pv / c
    if not math.isclose(n, round(n), rel_tol=0, abs_tol=1e-9 * max(1.0, n)) or round(n) < 1:
        raise ValueError(f"the model's c={model.c} and p={pv} give n = p/c = {n:g} tokens, not a whole number; choose "
                         "p as a multiple of the numerator of c")
    return int(round(n)), pv


def _padded(w: np.ndarray, p: int, name: str) -> np.ndarray:
    if w.size > p:
        nonzero = int(np.flatnonzero(w)[-1]) + 1 if np.any(w) else 0
        if nonzero > p:
            raise ValueError(f"the model's {name} has {nonzero} coordinates, more than p={p}")
        w = w[:p]
    out = np.zeros(p)
    out[: w.size] = w
    return out


def simulate_model(model: AttentionModel, p: Any, gammas: Any, settings: MonteCarloSettings, *, kind: str = "attention",
                   return_trials: bool = False, label_average: bool = False) -> Any:
    """:func:`numerics.interpolation_error_mc` with the model's ``snr``, activation, spike and diagonal at ``n = p/c``.

    Parameters
    ----------
    model : theory.AttentionModel
        Its activation must be a named or sympy activation (a dict of kernel constants has no function to simulate).
    p : int
        Dimension; ``p / model.c`` must be a whole number.
    gammas : array (G,), ``>= 0``.
    settings : numerics.MonteCarloSettings
        Trials (``>= 2``), seed, threads, batching, device and labels.
    kind : {"attention", "ridge"}
        ``"ridge"`` simulates ridge regression on the model's data (activation and spike unused).
    return_trials, label_average : bool
        As :func:`numerics.interpolation_error_mc`.

    Returns
    -------
    What :func:`numerics.interpolation_error_mc` returns.
    """
    n, pv = model_sizes(model, p)
    if not isinstance(settings, MonteCarloSettings):
        raise ArgumentTypeError(f"settings must be a numerics.MonteCarloSettings, got {describe(settings)}")
    check_choice("kind", kind, ("ridge", "attention"))
    if isinstance(model.activation, tuple):  # a FrozenDict of kernel constants
        raise ValueError("the model's activation is given by its kernel constants; a simulation needs the function")
    if not isinstance(model.diagonal, str):
        raise ValueError(f"the model's diagonal is the number {model.diagonal}; a simulation takes 'removed' or 'kept'")
    if settings.n_trials < 2:
        raise ValueError(f"settings.n_trials must be >= 2 (a standard error), got {settings.n_trials}")
    draws = Draws(n, pv, float(model.snr), settings.labels, settings.device)
    w_k = w_q = None
    if kind == "attention" and model.spike is not None:
        spike_k, spike_q = model.spike.vectors()
        w_k, w_q = _padded(spike_k, pv, "w_k"), _padded(spike_q, pv, "w_q")
    kernel = single_model(kind, model.activation if kind == "attention" else None, w_k, w_q, model.diagonal, draws)
    return error_mc(draws, gammas, kernel, settings, return_trials=return_trials, label_average=label_average)
