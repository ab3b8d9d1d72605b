"""Monte Carlo cells of the structured model for the studies: several aligned spikes, the true and the linearised
kernel and ridge on one draw ``X, y`` per trial (:func:`numerics.simulate_model`), memoised on disk.

Conventions as verify's structured checks: ``mu = sqrt(snr) e_1``; a spike ``(strength, "aligned")`` is
``w_K = w_Q = sqrt(strength) e_1``.  Public names of ``theory``, ``numerics`` and ``verify`` only.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from theory.structured import LINEARISATION_REGIME

#: declared regime of validity of the linearised kernel (``theory.AttentionModel.linearisation_control``)
KAPPA_MAX = LINEARISATION_REGIME


def attention_model(c: float, snr: float, spike: tuple[float, str], activation: str) -> Any:
    """The :class:`theory.AttentionModel` of a configuration (``spike=(strength, "none")``: no spike)."""
    from theory import AttentionModel

    return AttentionModel(c, activation, snr, spike=None if spike[1] == "none" else spike)


def structured_theory(gammas: Any, c: float, snr: float, spike: tuple[float, str], activation: str) -> np.ndarray:
    """The structured deterministic equivalent ``E_att`` on ``gammas``."""
    model = attention_model(c, snr, spike, activation)
    return np.asarray(model.solve(np.asarray(gammas, float), check_quadrature=False).error)


@functools.lru_cache(maxsize=None)
def _numerics_version() -> str:
    """SHA-256 of the source of ``numerics`` and ``theory``: a cached cell is recomputed after any edit of them."""
    import numerics
    import theory

    h = hashlib.sha256()
    for pkg in (numerics, theory):
        for path in sorted(Path(pkg.__file__).parent.rglob("*.py")):
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def shared_cell(ctx: Any, models: Sequence[Any], p: int, gammas: Any, trials: int, seed: int,
                kind: tuple[str, ...]) -> dict[str, np.ndarray]:
    """One cell on shared draws: per trial one ``X, y`` feeds, for every model, the kinds of ``kind`` among its true
    kernel (``"true"``), its linearised kernel (``"linearised"``) and ridge (``"ridge"``); memoised by
    ``ctx.cached`` (a :class:`verify.CheckContext`).  Returns ``"true"`` / ``"linearised"`` arrays
    ``(len(models), trials, G)`` and ``"ridge"`` ``(trials, G)``."""
    from numerics import MonteCarloSettings, simulate_model

    g = np.asarray(gammas, float)
    settings = MonteCarloSettings(int(trials), int(seed), n_jobs=max(1, int(ctx.n_jobs)), device=ctx.device,
                                  labels="balanced")
    key = dict(p=int(p), gammas=g, trials=int(trials), seed=int(seed), kind=list(kind),
               models=[[float(m.c), str(m.activation), float(m.snr), None if m.spike is None
                        else [list(map(float, m.spike.w_k)), list(map(float, m.spike.w_q))]] for m in models])
    return ctx.cached("shared_mc", key, lambda: simulate_model(list(models), p, g, settings, kind=tuple(kind)),
                      version=_numerics_version())
