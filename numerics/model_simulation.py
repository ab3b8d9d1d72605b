"""Monte Carlo of a :class:`theory.AttentionModel`: the simulation twin of ``model.error``.

``simulate_model(model, p, gammas, n_trials, seed)`` draws ``X = mu y^T + Z`` at ``n = p / c`` with the model's
``snr``, activation, spike (padded with zeros to ``p`` coordinates) and diagonal, and returns what
:func:`numerics.interpolation_error_mc` returns for those arguments (the same numbers, bit for bit), so that theory
and simulation take one object:

>>> from theory import AttentionModel
>>> model = AttentionModel(c=2.0, activation="tanh")
>>> mean, se = simulate_model(model, 64, [0.1], 4, seed=0)
>>> bool(abs(mean[0] - float(model.error(0.1))) < 5 * se[0] + 0.05)
True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from theory import AttentionModel
from theory.validation import ArgumentTypeError, as_int, describe

from .rmt import interpolation_error_mc

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


def simulate_model(model: AttentionModel, p: Any, gammas: Any, n_trials: Any, seed: Any, *, kind: str = "attention",
                   **options: Any) -> Any:
    """:func:`numerics.interpolation_error_mc` with the model's ``snr``, activation, spike and diagonal at ``n = p/c``.

    Parameters
    ----------
    model : theory.AttentionModel
        Its activation must be a named or sympy activation (a dict of kernel constants has no function to simulate).
    p : int
        Dimension; ``p / model.c`` must be a whole number.
    gammas, n_trials, seed : as :func:`numerics.interpolation_error_mc`.
    kind : {"attention", "ridge"}
        ``"ridge"`` simulates ridge regression on the model's data (activation and spike unused).
    **options
        The Monte Carlo's other keywords (``n_jobs``, ``labels``, ``batch_size``, ``device``, ``return_trials``,
        ``label_average``); the model's own fields are refused here.

    Returns
    -------
    What :func:`numerics.interpolation_error_mc` returns.
    """
    n, pv = model_sizes(model, p)
    held = {"snr", "activation", "w_k", "w_q", "diagonal"} & set(options)
    if held:
        raise TypeError(f"simulate_model takes {sorted(held)} from the model; got them as keywords too")
    if isinstance(model.activation, tuple):  # a FrozenDict of kernel constants
        raise ValueError("the model's activation is given by its kernel constants; a simulation needs the function")
    if not isinstance(model.diagonal, str):
        raise ValueError(f"the model's diagonal is the number {model.diagonal}; a simulation takes 'removed' or 'kept'")
    args = model.arguments()
    w_k = w_q = None
    if args["w_k"] is not None:
        w_k, w_q = _padded(args["w_k"], pv, "w_k"), _padded(args["w_q"], pv, "w_q")
    if kind == "attention":
        return interpolation_error_mc(kind, n, pv, args["snr"], gammas, n_trials, seed, activation=args["activation"],
                                      w_k=w_k, w_q=w_q, diagonal=args["diagonal"], **options)
    return interpolation_error_mc(kind, n, pv, args["snr"], gammas, n_trials, seed, **options)
