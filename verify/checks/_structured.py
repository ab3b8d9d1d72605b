"""The structured grid that B7 and B4 share: the profiles, the models of a configuration ``(c, snr, spike)``, their
theory (:mod:`theory.structured`) and their Monte Carlo cells on shared draws.

Conventions: ``mu = sqrt(snr) e_1``; a spike ``(strength, "aligned")`` is ``w_K = w_Q = sqrt(strength) e_1``,
``(strength, "orthogonal")`` is ``w_K = w_Q = sqrt(strength) e_2``.  Spike configurations of one ``(c, snr, p)``
share their seeds, hence their ``X`` (paired differences, common random numbers).  B7 and B4 share one grid of
cells (:func:`grid_cell`, B7's seeds and entries): B4 reads B7's draws instead of drawing its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from theory.structured import LINEARISATION_REGIME

from ..context import CheckContext
from ._paper_b import mc_settings, mc_version, model_key, settings_key


ACTIVATION = "tanh"
#: declared regime of validity of the linearised kernel
KAPPA_MAX = LINEARISATION_REGIME

#: one configuration of B7: ``(c, snr, spike)``
Config = tuple[float, float, tuple[float, str]]

# ============================================================================ configuration
@dataclass(frozen=True)
class StructuredProfile:
    p_sizes: tuple[int, int]
    trials: int
    gammas: tuple[float, ...]
    snrs: tuple[float, ...]
    spikes: tuple[tuple[float, str], ...]
    cs: tuple[float, ...]
    b4_snrs: tuple[float, ...]
    b4_gammas: tuple[float, ...]
    # per-c overrides of (p_sizes, trials) of the structured grid (B7, and B4 on its draws): ((c, (p, 2p), trials), ...)
    b7_sizes_by_c: tuple = ()
    # theory-only grids of B4 (log10 range and number of points): statements, reversal scan, figure
    b4_theory_grid: tuple[float, float, int] = (-3.0, 1.0, 9)
    reversal_grid: tuple[float, float, int] = (-4.0, 2.0, 31)
    figure_grid: tuple[float, float, int] = (-4.0, 1.0, 41)
    # B4's phase diagram (theory only): aspect ratios x aligned strengths at phase_snr, gamma* on phase_grid
    phase_cs: tuple[float, ...] = (1 / 3, 0.5, 0.9, 1.5, 3.0)
    phase_strengths: tuple[float, ...] = (0.0, 2.0, 8.0)
    phase_grid: tuple[float, float, int] = (-4.0, 2.0, 13)
    phase_snr: float = 1.0


SPIKE_NONE = (0.0, "none")

STRUCTURED_PROFILES = {
    "smoke": StructuredProfile(
        p_sizes=(16, 32), trials=3, gammas=(0.1, 1.0), snrs=(1.0,),
        spikes=(SPIKE_NONE, (4.0, "aligned"), (4.0, "orthogonal")), cs=(0.5, 2.0),
        b4_snrs=(1.0,), b4_gammas=(0.1, 10.0),
        b4_theory_grid=(-2.0, 1.0, 4), reversal_grid=(-3.0, 2.0, 11), figure_grid=(-3.0, 1.0, 9),
        phase_cs=(0.5, 2.0), phase_strengths=(0.0, 4.0), phase_grid=(-3.0, 2.0, 6),
    ),
    "quick": StructuredProfile(
        p_sizes=(128, 256), trials=24, gammas=(1e-2, 1e-1, 1.0), snrs=(0.5, 2.0),
        spikes=(SPIKE_NONE, (1.0, "aligned"), (4.0, "aligned"), (4.0, "orthogonal")), cs=(0.5, 2.0),
        b4_snrs=(0.5,), b4_gammas=(1e-2, 1e-1, 1.0, 10.0),
    ),
    # paper: budget B7 <= 300 s, B4 <= 150 s (2 cores); c = 1/2 runs 24 trials (its cells cost 9x those at c = 2);
    # no orthogonal spike 1 (every orthogonal spike equals no spike in theory; strength 4 is the stronger test)
    "paper": StructuredProfile(
        p_sizes=(512, 1024), trials=32, gammas=(1e-3, 1e-2, 1e-1, 1.0, 10.0), snrs=(0.5, 1.0, 2.0),
        spikes=(SPIKE_NONE, (1.0, "aligned"), (4.0, "aligned"), (4.0, "orthogonal")),
        cs=(0.5, 2.0),
        b4_snrs=(0.5, 1.0, 2.0), b4_gammas=(1e-3, 1e-2, 1e-1, 1.0, 10.0),
        b7_sizes_by_c=((0.5, (512, 1024), 24),),
        phase_cs=(0.2, 1 / 3, 0.5, 0.9, 1.2, 2.0, 3.0, 5.0), phase_strengths=(0.0, 1.0, 2.0, 4.0, 8.0, 16.0),
        phase_grid=(-4.0, 2.0, 19),
    ),
}


def sizes_at(prof: StructuredProfile, c: float) -> tuple[tuple[int, int], int]:
    """``((p, 2p), trials)`` of the finite-size pair at aspect ratio ``c`` (per-c override or the default)."""
    return {cc: (ps, tr) for cc, ps, tr in prof.b7_sizes_by_c}.get(c, (prof.p_sizes, prof.trials))


def sizes_text(prof: StructuredProfile) -> str:
    return "; ".join(f"c={c:g}: {tr} trials at p={ps[0]} and p={ps[1]}"
                     for c in prof.cs for ps, tr in [sizes_at(prof, c)])


def spike_label(spike: tuple[float, str]) -> str:
    return "none" if spike[1] == "none" or spike[0] == 0 else f"{spike[1]} {spike[0]:g}"


def attention_model(c: float, snr: float, spike: tuple[float, str], activation: str = ACTIVATION) -> Any:
    """The :class:`theory.AttentionModel` of a configuration (``spike=(strength, "none")``: no spike)."""
    from theory import AttentionModel

    return AttentionModel(c, activation, snr, spike=None if spike[1] == "none" else spike)


def structured_theory(gammas, c, snr, spike, activation: str = ACTIVATION, **kw) -> np.ndarray:
    model = attention_model(c, snr, spike, activation)
    return np.asarray(model.solve(np.asarray(gammas, float), check_quadrature=False, **kw).error)


def shared_mc(ctx: CheckContext, models: list[Any], p: int, gammas, settings: Any,
              kind: tuple[str, ...]) -> dict[str, np.ndarray]:
    """One Monte Carlo cell on shared draws, memoised by ``ctx.cached``: :func:`numerics.simulate_model` of ``models``
    (differing in their spike), one ``X, y`` per trial feeding every model's ``kind`` among ``"true"`` kernel,
    ``"linearised"`` kernel and ``"ridge"``.  Returns ``"true"`` / ``"linearised"`` ``(len(models), trials, G)`` and
    ``"ridge"`` ``(trials, G)``."""
    from numerics import simulate_model
    from numerics.model_simulation import model_sizes

    g = np.asarray(gammas, float)
    key = dict(n=model_sizes(models[0], p)[0], p=int(p), gammas=g, models=[model_key(m) for m in models],
               kind=list(kind), **settings_key(settings))
    return ctx.cached("shared_mc", key, lambda: simulate_model(models, p, g, settings, kind=tuple(kind)),
                      version=mc_version())


def grid_gammas(prof: StructuredProfile) -> np.ndarray:
    """The gammas of the structured grid's cells: B7's and B4's together (a gamma costs an O(m) solve)."""
    return np.array(sorted(set(prof.gammas) | set(prof.b4_gammas)), dtype=float)


def grid_cell(ctx: CheckContext, c: float, snr: float, p: int) -> dict[str, np.ndarray]:
    """One ``(c, snr, p)`` of the structured grid: every spike of the profile, both kernels and ridge on one draw per
    trial at :func:`grid_gammas`, with B7's seeds and cache entry whichever check asks (B4 borrows them).  Returns
    ``"true"``, ``"linearised"`` ``(spikes, trials, G)`` and ``"ridge"`` ``(trials, G)``."""
    prof = STRUCTURED_PROFILES[ctx.profile]
    owner = ctx if ctx.check_id == "B7" else ctx.borrowing("B7")
    sd = owner.seed_for("grid", c, snr, p)  # shared by every spike, both kernels and ridge: paired X
    return shared_mc(owner, [attention_model(c, snr, s) for s in prof.spikes], p, grid_gammas(prof),
                     mc_settings(owner, sizes_at(prof, c)[1], sd), ("true", "linearised", "ridge"))


def grid_cells(ctx: CheckContext, keys: list[tuple[float, float]], label: str, pick: Any) -> dict:
    """``(c, snr, p) -> pick(grid_cell(ctx, c, snr, p))`` for every ``(c, snr)`` of ``keys`` at both sizes of its
    ``c`` (a check's view of the grid: its spikes, kernels and gammas), with a progress bar ``label``."""
    cells = {}
    with ctx.progress(label, total=len(keys) * 2) as bar:
        for c, snr in keys:
            for p in sizes_at(STRUCTURED_PROFILES[ctx.profile], c)[0]:
                cells[(c, snr, p)] = pick(grid_cell(ctx, c, snr, p))
                bar.advance()
    return cells


def gamma_columns(prof: StructuredProfile, gammas) -> np.ndarray:
    grid = list(grid_gammas(prof))
    return np.array([grid.index(float(g)) for g in gammas])
