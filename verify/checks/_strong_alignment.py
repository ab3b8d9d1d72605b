"""The strong-alignment machinery that B9 and B10 share: B9's design (B10 borrows its draws), the memoised theory
solves and their prefetch on the run's workers, the Monte Carlo cells on shared draws, and the comparisons of both.
B9's claim and its rules: :mod:`verify.checks.paper_b_strong_alignment`; B10's: :mod:`.paper_b_strong_alignment_risk`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import numerics.strong_alignment
from theory import (AttentionModel, binned_leverage, label_coordinate_bins, strong_alignment_gap,
                    strong_spike_attention_error)

from ..context import CheckContext
from ..results import Comparison
from ._finite_size import finite_size_test
from ._finite_size import comparison_detectable_error as detectable_error  # noqa: F401 (re-exported to B9, B10)
from ._paper_b import mc_settings, mc_version, settings_key


#: one setting: ``(activation, c, t)``
Setting = tuple[str, float, float]
#: one measured point: a setting at a ridge parameter (``0`` for ``c < 1``)
Point = tuple[Setting, float]
#: the headline setting (its limit comparison)
HEADLINE: Setting = ("erf", 0.5, 1.0)
#: bins of ``|a|`` (equal probability) in which every strong-alignment cell records attention's leverage (B10)
LEVERAGE_BINS = 6
#: quadrature nodes per bin and sign of :func:`finite_parts` (T2 and the bins to 1e-5 of a finer grid)
THEORY_PER_BIN = 8


@dataclass(frozen=True)
class B9Profile:
    """B9's design at one profile: the finite-size pair ``ps = (p, 4p)`` (``n = p / c``) and the trials at each,
    the ``settings`` (``c < 1``: limit and sign comparisons) and the ``wide`` ones (``c > 1``) with their ``gamma_wide``
    (no-win comparison, limit comparison), ``snr`` and the ``t`` grid of the figure's theory curves."""

    ps: tuple[int, int]
    trials: tuple[int, int]
    settings: tuple[Setting, ...]
    wide: tuple[Setting, ...]
    gamma_wide: tuple[float, float] = (1e-3, 1e-2)
    snr: float = 1.0
    curve_ts: tuple[float, ...] = (0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5)


_TS = (0.5, 1.0, 2.0)
_SETTINGS = tuple((act, c, t) for act, c in (("erf", 0.5), ("erf", 1 / 3), ("tanh", 0.5), ("gelu", 0.5)) for t in _TS)
_WIDE = tuple(("erf", 2.0, t) for t in _TS)

B9_PROFILES = {
    "smoke": B9Profile(ps=(16, 64), trials=(3, 3), settings=(HEADLINE, ("gelu", 0.5, 1.0)), wide=(("erf", 2.0, 1.0),),
                       curve_ts=(0.5, 1.0, 2.0)),
    # quick: 12 settings (erf at c = 1/3 and 1/2, tanh, gelu) x t in {1/2, 1, 2}; 16 trials at p = 512 (the
    # Student-t quantile at Holm's first level falls from about 7 at 8 trials to 5 at 16)
    "quick": B9Profile(ps=(128, 512), trials=(32, 16), settings=_SETTINGS, wide=_WIDE),
    "paper": B9Profile(ps=(256, 1024), trials=(32, 16), settings=_SETTINGS, wide=_WIDE),
}


def _memoised(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` memoised in the process by its positional arguments (a calibration judges many seeds of one design;
    B9 and B10 read the same solves); :func:`prefetch` fills ``memo`` on the run's workers."""
    memo: dict[tuple, Any] = {}

    @functools.wraps(func)
    def cached(*args: Any) -> Any:
        if args not in memo:
            memo[args] = func(*args)
        return memo[args]

    cached.memo = memo
    return cached


def _apply(func: Callable[..., Any], args: tuple) -> Any:
    return func(*args)


def prefetch(ctx: CheckContext, calls: list[tuple[Callable[..., Any], tuple]]) -> None:
    """The ``(memoised function, arguments)`` calls not yet known, solved on the run's workers (the numbers of a
    serial loop), so that the theory does not hold one core."""
    todo = [(f, a) for f, a in dict.fromkeys(calls) if a not in f.memo]
    for (f, a), out in zip(todo, ctx.map(_apply, todo)):
        f.memo[a] = out


@_memoised
def limit_gap(c: float, activation: str, snr: float, t: float, nodes: int = 40) -> Any:
    return strong_alignment_gap(c, activation, snr, t, nodes=nodes)


@_memoised
def gap_at(gamma: float, c: float, activation: str, snr: float, t: float, p: int | None = None,
           nodes: int = 40) -> float:
    """:func:`theory.strong_spike_attention_error` minus ridge's error at ``gamma > 0``, in the limit or at ``p``."""
    ridge = float(AttentionModel(c, activation, snr).ridge_error(gamma))
    return float(strong_spike_attention_error(gamma, c, activation, snr, t, nodes=nodes, p=p)) - ridge


@_memoised
def finite_parts(c: float, activation: str, snr: float, t: float, p: int) -> Any:
    """:func:`theory.binned_leverage` at size ``p`` (the finite-size equation) on :data:`LEVERAGE_BINS` bins: ``T1``,
    ``T2`` and the bin means of one solve, memoised (B9 and B10 read the same solves)."""
    return binned_leverage(label_coordinate_bins(snr, LEVERAGE_BINS), c, activation, snr, t, per_bin=THEORY_PER_BIN,
                           p=p)


def cell_gammas(design: B9Profile) -> list[tuple[Setting, tuple[float, ...]]]:
    """Each simulated setting with its gammas (one draw serves all): ``c < 1`` at 0, ``wide`` at ``gamma_wide``."""
    return [(s, (0.0,)) for s in design.settings] + [(s, tuple(design.gamma_wide)) for s in design.wide]


def strong_alignment_cells(ctx: CheckContext, settings: tuple[Setting, ...], p: int, trials: int,
                           gammas: tuple[float, ...], snr: float,
                           tag: str = "b9") -> dict[Setting, dict[str, np.ndarray]]:
    """Every output of :func:`numerics.strong_alignment_mc` for settings of one ``c`` at ``p``, by setting: one draw
    per trial for every setting and gamma (one cache entry; the grid of their activations and strengths is drawn, so
    settings that do not fill it cost the pairs they leave out), attention's leverage in :data:`LEVERAGE_BINS` bins of
    ``|a|``.  B10 reads B9's groups (:func:`draw_groups`) through ``ctx.borrowing("B9")``: the same seeds and
    entries."""
    c = settings[0][1]
    acts = list(dict.fromkeys(a for a, _, _ in settings))
    ts = list(dict.fromkeys(float(t) for _, _, t in settings))
    mc = mc_settings(ctx, trials, ctx.seed_for(tag, "shared draws", f"c={c:.6g}", p), labels="iid")
    key = dict(activations=acts, c=float(c), ts=ts, p=int(p), gammas=[float(g) for g in gammas], snr=float(snr),
               n_bins=LEVERAGE_BINS, **settings_key(mc))
    compute = functools.partial(numerics.strong_alignment.strong_alignment_mc, acts, c, ts, p, list(gammas), mc,
                                snr=snr, bins=label_coordinate_bins(snr, LEVERAGE_BINS))
    # the bin edges come from theory.label_coordinate_bins: its source is part of the cells' version
    out = ctx.cached("strong_alignment_mc", key, compute,
                     version=mc_version(numerics.strong_alignment, label_coordinate_bins))
    return {s: {k: v[acts.index(s[0]), ts.index(float(s[2]))] for k, v in out.items()} for s in settings}


def draw_groups(design: B9Profile) -> list[tuple[tuple[Setting, ...], tuple[float, ...]]]:
    """The settings that share draws (one ``c``, the same gammas; :func:`strong_alignment_cells`), with the gammas."""
    groups: dict = {}
    for s, gammas in cell_gammas(design):
        groups.setdefault((s[1], gammas), []).append(s)
    return [(tuple(settings), gammas) for (_, gammas), settings in groups.items()]


def setting_name(setting: Setting) -> str:
    """``"erf c=0.5 t=1"``: a setting in the comparisons' names (B9 and B10)."""
    act, c, t = setting
    return f"{act} c={c:.3g} t={t:g}"


def gap_comparison(name: str, stats: Any, theory: Any, design: Any, **kw: Any) -> Comparison:
    """The finite-size rule on ``measured - theory(p)`` at ``p`` and ``4p`` of ``design.ps``: ``stats`` the mean and
    SE at each size, ``theory`` the theory at each size; the row reads the larger size."""
    (ps, pl), ((ms, ses), (ml, sel)), (at_s, at_l) = design.ps, stats, theory
    test = finite_size_test(0.0, ms - at_s, ses, ml - at_l, sel, ps / pl, tuple(design.trials))
    return test.comparison(name, at_l, ml, sel, f"p={ps}", f"p={pl}", **kw)


def sign_comparison(name: str, predicted: float, stats: Any, sign: int, design: Any, key: dict) -> Comparison:
    """One-sided (PASS at 5 %): the paired mean and SE ``stats`` at ``4p`` of ``design.ps`` have the sign ``sign``."""
    trials, pl = design.trials[1], design.ps[1]
    rule = f"paired mean over {trials} draws at p={pl} must be {'< 0' if sign < 0 else '> 0'}"
    return Comparison.direction(name, predicted, *stats, sign, df=trials - 1, key=key, rule=rule)
