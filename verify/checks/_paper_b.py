"""The machinery shared by the checks B1, B2, B3, B5 and B6 of paper B: Monte Carlo cells memoised on disk, panels
at two sizes, the finite-size, shrinkage and paired comparisons.  The claims: :mod:`~verify.checks.paper_b_ridge`
(B1), :mod:`~verify.checks.paper_b_null` (B2), :mod:`~verify.checks.paper_b_attention_vs_ridge` (B3),
:mod:`~verify.checks.paper_b_cosine` (B5), :mod:`~verify.checks.paper_b_spectrum` (B6).

Tolerance rules (derived, never tuned)
--------------------------------------
*Finite-size rule* (B1, B2, B3 slopes; :mod:`verify.checks._finite_size`) on the gaps ``MC - theory`` at
``n_s = n/2`` and ``n_l = n``, same ``c = p/n``, ``q = sqrt(n_s / n_l)``.  Each panel also has a *shrinkage*
comparison: the mean relative gap at ``n_l`` must not exceed the one at ``n_s`` times ``q`` by more than the RMS
relative noise.

*Estimator.* With labels independent of ``X`` (the null model: B2, B3 at ``p/n = 2``, B5 at ``snr = 0``) the Monte
Carlo uses the exact label average ``gamma^2/n tr Q^2`` of each draw of ``X``
(:func:`numerics.interpolation_error_label_average`); with signal (B1, B5 at ``snr = 4``) labels are sampled.

*B3/B5 sign claims*: paired differences (the same draws feed both models) must exceed 3 standard errors.

*B6*: per-trial Kolmogorov distance between the eigenvalue ECDF and the CDF of ``kernel_density`` at ``n`` and
``2n``; passes iff ``KS(2n) / KS(n) <= 2^{-1/2}`` (``O(1/n)`` convergence predicts 0.5, a wrong law 1), and the
trapezoid mass of the density on the eigenvalue window is within 0.01 of 1.

Every Monte Carlo cell is memoised on disk by ``ctx.cached``: an interrupted run resumes with the same numbers.
Every ``judge`` and ``describe`` is pure (``tests/verify/test_judges_b_core.py`` measures the judges' error rates).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from numerics import MonteCarloSettings, simulate_model
from numerics.model_simulation import model_sizes
import theory
from theory import AttentionModel

from ..context import CheckContext
from ..results import Comparison
from .. import figures as F
from ._finite_size import finite_size_test

#: the records the steps of B1, B2, B3, B5 and B6 pass on (design, prediction, measurement, data)
Rec = dict[str, Any]

# Monte Carlo cells memoised on disk ("n" is always the larger of the two sizes of the finite-size rule)
def model_key(model: AttentionModel) -> dict[str, Any]:
    """The fields of ``model`` that decide a simulation's numbers besides ``c`` (the cell's ``n`` and ``p``), for
    a cache key: a sympy activation as its ``srepr``."""
    act = model.activation
    spike = None if model.spike is None else [list(model.spike.w_k), list(model.spike.w_q)]
    return dict(activation=act if isinstance(act, str) else sp.srepr(act), snr=float(model.snr), spike=spike,
                diagonal=model.diagonal)


@functools.lru_cache(maxsize=None)
def mc_version(*extra: Any) -> str:
    """Cache version of the paper-B Monte Carlo cells: the source of the simulation modules, the activations, the
    spike vectors and ``extra`` (check-local cell functions), so that an edit never returns a stale cell."""
    import theory.activations
    from numerics.sweep import simulation_modules, source_version
    from theory.structured import spike_vectors

    return source_version("b-mc", *simulation_modules("paper-b-mc"), theory.activations, spike_vectors, *extra)


def mc_settings(ctx: CheckContext, n_trials: int, seed: int, labels: str = "balanced") -> MonteCarloSettings:
    """A Monte Carlo cell's settings: its trials and seed, ``ctx``'s threads and device (not changing the numbers)."""
    return MonteCarloSettings(int(n_trials), int(seed), n_jobs=max(1, int(ctx.n_jobs)), device=ctx.device,
                              labels=labels)


def settings_key(settings: MonteCarloSettings) -> dict[str, Any]:
    """The fields of ``settings`` that decide the numbers (not ``n_jobs``, ``batch_size`` or ``device``)."""
    return dict(trials=settings.n_trials, seed=settings.seed, labels=settings.labels)


def cell_model(n: int, p: int, snr: float, activation: Any = None, spike: Any = None) -> AttentionModel:
    """The model of a Monte Carlo cell of ``n`` tokens in dimension ``p`` (``c = p / n``, exact); a cell without an
    activation (ridge, softmax attention) takes the identity, which those simulations do not use."""
    return AttentionModel(sp.Rational(int(p), int(n)), "identity" if activation is None else activation, snr,
                          spike=spike)


def mc_cached(ctx: CheckContext, model: AttentionModel, p: int, gammas: Any, settings: MonteCarloSettings, *,
              kind: str = "true", label_average: bool = False,
              wishart: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`numerics.simulate_model` of one model and one kind memoised by ``ctx.cached``: ``(mean, se, trials)``;
    the key holds everything that changes the numbers (ridge: not the activation or the spike)."""
    g = np.atleast_1d(np.asarray(gammas, dtype=np.float64))
    fields = dict(model_key(model), **(dict(activation=None, spike=None) if kind == "ridge" else {}))
    key = dict(kind=kind, n=model_sizes(model, p)[0], p=int(p), gammas=g, **fields, **settings_key(settings),
               label_average=bool(label_average), **(dict(wishart=True) if wishart else {}))

    def compute() -> dict[str, np.ndarray]:
        m, s, t = simulate_model(model, p, g, settings, kind=kind, return_trials=True, label_average=label_average,
                                 wishart=wishart)
        return {"mean": m, "se": s, "trials": t}

    out = ctx.cached("simulate_model", key, compute, version=mc_version())
    return out["mean"], out["se"], out["trials"]


def p_of(n: int, c: float) -> int:
    return max(1, int(round(c * n)))


def ridge_theory(gammas: np.ndarray, c: float, snr: float) -> np.ndarray:
    return np.asarray(theory.ridge_error_values(np.asarray(gammas, dtype=float), c, snr), dtype=float)


def attention_theory(gammas: np.ndarray, c: float, activation: Any, system: str | None = None) -> np.ndarray:
    """``theory.attention_error`` (null model, diagonal removed); ``system="spec"``: SPEC's reconstruction."""
    g = np.asarray(gammas, dtype=float)
    kw = {} if system is None else {"system": system}
    out = AttentionModel(c, activation, snr=0, diagonal="removed").error(g, **kw)
    return np.asarray(out, dtype=float).reshape(g.shape)


# tolerance rules
def fs_comparison(name: str, pred: float, small: tuple[float, float], large: tuple[float, float],
                  sizes: tuple[int, int], trials: tuple[int, int] | None = None,
                  key: Any = ()) -> tuple[Comparison, dict[str, float]]:
    """Finite-size rule (:mod:`verify.checks._finite_size`) for one point measured ``(mean, SE)`` at the sizes
    ``ns < nl`` (``small``, ``large``); ``trials`` (at ``ns`` and ``nl``) switches to the Student-t quantile.
    Returns the comparison and the point's numbers (for :func:`shrink_comparison`)."""
    (ms, ss), (ml, sl), (ns, nl) = small, large, sizes
    t = finite_size_test(pred, ms, ss, ml, sl, ns / nl, trials)
    point = dict(pred=float(pred), m_s=float(ms), se_s=float(ss), m_l=float(ml), se_l=float(sl), allowance=t.allowance)
    return t.comparison(name, pred, ml, sl, f"n={ns}", f"n={nl}", key=key), point


def shrink_comparison(name: str, pts: list[dict[str, float]], ns: int, nl: int, key: Any = ()) -> Comparison:
    """The mean relative gap at ``nl`` must not exceed the one at ``ns`` times ``sqrt(ns / nl)`` by more than the
    RMS relative noise of the points ``pts`` (:func:`fs_comparison`'s numbers)."""
    th, m_s, m_l, se_s, se_l = (np.array([q[k] for q in pts]) for k in ("pred", "m_s", "m_l", "se_s", "se_l"))
    pred = np.maximum(np.abs(th), 1e-300)
    rs, rl = float(np.mean(np.abs(m_s - th) / pred)), float(np.mean(np.abs(m_l - th) / pred))
    noise = float(np.sqrt(np.mean((np.sqrt(se_s**2 + se_l**2) / pred) ** 2)))
    target = rs * math.sqrt(ns / nl)
    # SD of rl - q rs: at most one point's RMS relative noise (both sizes; points share draws: no averaging credit)
    return Comparison.bound(
        name, f"mean rel. gap at n={nl} <= that at n={ns} ({rs:.3g}) x sqrt({ns}/{nl}) = {target:.3g}", rl, noise,
        rl - target, excess_se=noise, key=key,
        rule=(f"rel. gap(n={nl}) <= rel. gap(n={ns}) x sqrt({ns}/{nl}): the gap must decay at least like n^-1/2, "
              f"the rate the per-point allowance assumes (noise: RMS relative SE {noise:.3g}, not divided by the "
              "number of points, which share draws)"))


def paired_positive(name: str, pred: Any, diff: np.ndarray, key: Any = ()) -> Comparison:
    """The paired mean difference of ``diff`` (one value per draw) is > 0 (a direction comparison)."""
    return Comparison.direction(name, pred, float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(diff.size)), +1,
                                df=diff.size - 1, key=key,
                                rule=f"paired mean difference over {diff.size} draws must be > 0")


def edge_flag(c: float, gamma: float, n: int) -> str:
    """Flag points where the MP hard/soft lower edge is within finite-size reach (near c = 1)."""
    edge = (1 - math.sqrt(c)) ** 2
    scale = n ** (-2.0 / 3.0)
    if not (edge < scale and gamma < scale):
        return ""
    return (f" [NEAR c=1: lower MP edge (1-sqrt c)^2={edge:.2g} < n^-2/3={scale:.2g} and n^2 gamma="
            f"{n * n * gamma:.2g}; deterministic equivalent not uniform here, large finite-size effects expected]")


# the finite-size sweeps of B1 and B2: cells, panels, means at two sizes (one loop for every panel)
#: stands for the simulated size in :attr:`Cell.seed_keys`
SIZE = object()


@dataclass(frozen=True, eq=False)
class Cell:
    """One Monte Carlo cell of a finite-size sweep (one :func:`mc_cached` call at each size): aspect ratio ``c``,
    ``snr``, its ``gammas`` (one point each), the keys of ``ctx.seed_for`` (:data:`SIZE` for the size), the
    activation (``None``: ridge) and ``label_average`` (:func:`numerics.simulate_model`)."""

    c: float
    snr: float
    gammas: np.ndarray
    seed_keys: tuple
    activation: Any = None
    label_average: bool = False


@dataclass(frozen=True, eq=False)
class Panel:
    """A sweep judged by the finite-size rule at the sizes ``n // 2`` and ``n``: its ``key`` (in the prediction,
    measurement and data), the ``label`` that starts its shrinkage comparison's name, the ``trials`` at each size,
    its ``cells`` (their gammas, in order, are its points) and the ``names`` of the points' comparisons.  ``x_name``
    (``"c"``, ``"snr"``) is the parameter swept over the cells, with values ``xs`` (data as rows); ``None``: one
    cell swept over gamma (data as arrays)."""

    key: str
    label: str
    n: int
    trials: tuple[int, int]
    cells: tuple[Cell, ...]
    names: tuple[str, ...]
    x_name: str | None = None
    xs: tuple[float, ...] = ()

    @property
    def ns(self) -> int:
        return self.n // 2


@dataclass(frozen=True)
class TwoSizes:
    """The measurement of a :class:`Panel`: means and SEs of its points at ``n // 2`` (``_s``) and ``n`` (``_l``)."""

    m_s: np.ndarray
    se_s: np.ndarray
    m_l: np.ndarray
    se_l: np.ndarray


def simulate_panels(ctx: CheckContext, panels: tuple[Panel, ...], what: str,
                    wishart: bool = False) -> dict[str, TwoSizes]:
    """Every cell of every panel at both sizes (small first: the order of the seeds), by panel key (``wishart``: ridge
    cells draw ``X^T X`` in law, :func:`numerics.simulate_model`; nothing pairs with them)."""
    out = {}
    with ctx.progress(what, total=sum(len(p.cells) for p in panels)) as bar:
        for panel in panels:
            small, large = [], []
            for cell in panel.cells:
                for res, n, trials in ((small, panel.ns, panel.trials[0]), (large, panel.n, panel.trials[1])):
                    p, seed = p_of(n, cell.c), ctx.seed_for(*(n if k is SIZE else k for k in cell.seed_keys))
                    res.append(mc_cached(ctx, cell_model(n, p, cell.snr, cell.activation), p, cell.gammas,
                                         mc_settings(ctx, trials, seed), label_average=cell.label_average,
                                         kind="ridge" if cell.activation is None else "true",
                                         wishart=wishart and cell.activation is None))
                bar.advance()
            out[panel.key] = TwoSizes(*(np.concatenate([r[k] for r in rs]) for rs in (small, large) for k in (0, 1)))
    return out


def panel_theory(panel: Panel, system: str | None = None) -> np.ndarray:
    """The prediction at every point of ``panel`` (attention: ``system`` of :func:`theory.attention_error`)."""
    return np.concatenate([ridge_theory(c.gammas, c.c, c.snr) if c.activation is None
                           else attention_theory(c.gammas, c.c, c.activation, system) for c in panel.cells])


def judge_panels(design: Rec, prediction: Rec, measurement: Rec) -> list[Comparison]:
    """The judge of B1 and B2 (pure): per panel, the finite-size comparison of each point (``prediction["theory"]``
    against ``measurement["panels"]``, by :attr:`Panel.key`), then the panel's shrinkage comparison."""
    comps: list[Comparison] = []
    for p in design["panels"]:
        pred, m = prediction["theory"][p.key], measurement["panels"][p.key]
        pts = [fs_comparison(name, pred[i], (m.m_s[i], m.se_s[i]), (m.m_l[i], m.se_l[i]), (p.ns, p.n), p.trials,
                             key={"panel": p.key, "quantity": "point", "index": i}) for i, name in enumerate(p.names)]
        comps += [c for c, _ in pts]
        comps.append(shrink_comparison(f"{p.label} finite-size gap shrinks", [q for _, q in pts], p.ns, p.n,
                                       key={"panel": p.key, "quantity": "shrink"}))
    return comps


def panels_data(design: Rec, prediction: Rec, measurement: Rec) -> Rec:
    """The report data of every panel, by key: arrays over gamma, or rows of the swept parameter (one per cell)."""
    out = {}
    for p in design["panels"]:
        pred, m, n = prediction["theory"][p.key], measurement["panels"][p.key], (p.ns, p.n)
        if p.x_name is None:
            out[p.key] = dict(gammas=p.cells[0].gammas, theory=pred, n=n, mc_small=m.m_s, se_small=m.se_s,
                              mc_large=m.m_l, se_large=m.se_l)
        else:
            rows = np.column_stack([np.asarray(p.xs, dtype=float), pred, m.m_s, m.se_s, m.m_l, m.se_l])
            out[p.key] = dict(rows=rows, columns=[p.x_name, "theory", "mc_small", "se_small", "mc_large", "se_large"],
                              n=n)
    return out


def plot_two_sizes(ax: Any, rax: Any, x: np.ndarray, pred: np.ndarray, m: TwoSizes, color: str,
                   labelled: bool = True) -> None:
    """Monte Carlo at both sizes (``n/2`` open, ``n`` filled) and its relative gaps; ``labelled=False``: no labels."""
    small, large = ("Monte Carlo, smaller size n/2", "Monte Carlo, larger size n") if labelled else ("_nolegend_",) * 2
    for mean, se, label, kw in ((m.m_s, m.se_s, small, dict(marker="s", filled=False)), (m.m_l, m.se_l, large, {})):
        F.mc_points(ax, x, mean, se, label=label, color=color, **kw)
        F.mc_points(rax, x, (mean - pred) / pred, se / np.abs(pred), label="_nolegend_", color=color, **kw)
    rax.axhline(0.0, color=F.THEORY, lw=0.9)
    rax.set_ylabel("(MC − theory) / theory")
