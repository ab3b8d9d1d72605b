"""Checks B1, B2, B3, B5, B6 of paper B (ridge and null-model attention; kernel spectrum).

Tolerance rules (derived, never tuned)
--------------------------------------
*Finite-size rule* (B1, B2, B3 slopes; shared with B4/B7, :mod:`verify.checks._finite_size`). A
deterministic equivalent is an ``n -> infinity`` statement, so every Monte Carlo point is simulated at two
sizes with the same aspect ratio ``c = p/n``: ``n_s = n/2`` and ``n_l = n``.  With ``d_s, d_l`` the gaps
``MC - theory`` and ``SE_s, SE_l`` the Monte Carlo standard errors, a point passes iff

    ``|d_l| <= a + 3 hypot(SE_l, q SE_s)``,   ``a = q |d_s|``,   ``q = sqrt(n_s / n_l)``,

i.e. the finite-size allowance is the gap *measured* at the smaller size, propagated to the larger
size under the conservative assumption that it decays at least like ``n^{-1/2}`` (deterministic
equivalents of this kind usually converge like ``1/n``), and ``3 hypot(SE_l, q SE_s)`` is three standard
deviations of ``|d_l| - a`` (the allowance is itself measured: its noise ``q SE_s`` counts).  A theory that
is off by a constant ``D`` gives ``|d_l| ~ |d_s| ~ D`` and fails as soon as
``D (1 - 2^{-1/2}) > 3 hypot(SE_l, q SE_s)``.  Each panel also has a
*shrinkage* comparison: the mean relative gap at ``n_l`` must not exceed the one at ``n_s`` times
``sqrt(n_s / n_l)`` (the ``n^{-1/2}`` decay the per-point allowance assumes) by more than twice the RMS
relative noise of the two.

*Estimator.* With labels independent of ``X`` (the null model ``snr = 0``: B2, B3 at ``p/n = 2``, B5 at
``snr = 0``) the Monte Carlo uses the exact label average ``gamma^2/n tr Q^2`` of each draw of ``X``
(:func:`numerics.interpolation_error_label_average`): same mean as i.i.d. Rademacher labels, far smaller
variance, so the finite-size rule above becomes sharp.  With signal (B1, B5 at ``snr = 4``) labels are
sampled (balanced).

*B3/B5 sign claims*: paired differences (the same draws of ``X, y`` feed both models) must exceed
3 standard errors of the paired difference.

*B6*: per-trial Kolmogorov distance between the eigenvalue ECDF and the CDF of ``kernel_density``, at
``n`` and ``2n``.  Eigenvalue CDFs of such matrices converge like ``1/n`` (up to logs), so the ratio
``KS(2n) / KS(n)`` is predicted ``~0.5``; the check passes iff the measured ratio is at most
``2^{-1/2}`` (a decay at least like ``n^{-1/2}``), which a wrong limit law (ratio -> 1) cannot meet.
A separate comparison requires the trapezoid mass of ``kernel_density`` on the eigenvalue window to be
within 0.01 of 1 (the KS distances use that CDF).

Every Monte Carlo cell (one :func:`numerics.interpolation_error_mc` call, one set of kernel spectra, the
Gaussian-equivalent diagnostic of one ``c``) is memoised on disk by ``ctx.cached``: an interrupted run
resumes from the finished cells, with the same seeds and the same numbers.

Profiles: ``quick`` (all five under ~2 minutes on 2 cores: reduced ``n`` with the paper's ratios),
``paper`` (the paper's sizes), ``smoke`` (for smoke tests only).

Shape (:mod:`verify.claim`): every check is a :class:`~verify.claim.Claim` whose parts pass plain objects.
B1 and B2 are sweeps of :class:`Panel` s (Monte Carlo :class:`Cell` s at two sizes, measured as
:class:`TwoSizes`), judged by one loop; B3, B5 and B6 pass dicts of per-trial arrays (documented at their
``simulate``).  Every ``judge`` and ``describe`` is pure, so ``tests/test_judges_b_core.py`` measures the
judges' error rates on synthetic measurements built by hand.  The runtime in the notes is the wall time of
``simulate``.
"""

from __future__ import annotations

import functools
import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np  # noqa: E402
import torch  # noqa: E402

from numerics.threads import thread_map as _map_threads  # noqa: E402
from numerics.rmt import (  # noqa: E402
    gaussian_equivalent_kernel,
    interpolation_error_label_average,
    interpolation_error_mc,
    kernel_eigenvalues,
    sample_signal_plus_noise,
)

from ..claim import Claim, register  # noqa: E402
from ..registry import CheckContext, Comparison  # noqa: E402
from ..figures import THEORY as THEORY_COLOR, paper_figure  # noqa: E402
from ..verdicts import Judgement  # noqa: E402
from ._finite_size import finite_size_test  # noqa: E402
# ---------------------------------------------------------------------------------------------
# sizes per profile ("n" is always the larger of the two sizes of the finite-size rule)
# ---------------------------------------------------------------------------------------------
PROFILES: dict[str, dict[str, dict[str, Any]]] = {
    "paper": {
        "B1": dict(
            a=dict(n=512, c=4.0, snr=1.0, gammas=np.logspace(-5, 1, 13), trials=(200, 100)),
            b=dict(n=4096, cs=[0.25, 0.5, 1.0, 1.5, 2.0], gamma=1e-5, snr=1.0, trials=(8, 4)),
            c=dict(n=2048, c=0.25, snrs=[0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0], gamma=1e-5, trials=(100, 50)),
        ),
        "B2": dict(ns={0.25: 2048, 2.0: 1024}, gammas=np.logspace(-3, 0, 7), trials=(40, 20)),
        "B3": dict(n=1024, gammas=np.logspace(-4, 0, 9), fit=np.logspace(-4, -2.5, 4), trials=(20, 10)),
        "B5": dict(n=1024, gammas=np.array([1e-3, 1e-2]), trials=20),
        "B6": dict(n=1024, trials=(8, 4)),
    },
    "quick": {
        "B1": dict(
            a=dict(n=256, c=4.0, snr=1.0, gammas=np.logspace(-5, 1, 13), trials=(80, 40)),
            b=dict(n=256, cs=[0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0], gamma=1e-5, snr=1.0, trials=(60, 30)),
            c=dict(n=512, c=0.25, snrs=[0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0], gamma=1e-5, trials=(60, 30)),
        ),
        "B2": dict(ns={0.25: 1024, 2.0: 256}, gammas=np.logspace(-3, 0, 7), trials={0.25: (48, 24), 2.0: (80, 40)}, ge_cs=[0.25]),
        "B3": dict(n=512, gammas=np.logspace(-4, 0, 9), fit=np.logspace(-4, -2.5, 4), trials=(16, 8)),
        "B5": dict(n=256, gammas=np.array([1e-3, 1e-2]), trials=16),
        "B6": dict(n=256, trials=(8, 4)),
    },
    "smoke": {
        "B1": dict(
            a=dict(n=32, c=4.0, snr=1.0, gammas=np.logspace(-3, 0, 3), trials=(4, 3)),
            b=dict(n=32, cs=[0.5, 2.0], gamma=1e-5, snr=1.0, trials=(4, 3)),
            c=dict(n=64, c=0.25, snrs=[0.0, 1.0], gamma=1e-5, trials=(4, 3)),
        ),
        "B2": dict(ns={0.25: 64, 2.0: 32}, gammas=np.logspace(-2, 0, 2), trials=(4, 3), activations=["tanh"], ge_cs=[0.25]),
        "B3": dict(n=48, gammas=np.logspace(-2, 0, 3), fit=np.logspace(-2, -1, 3), trials=(4, 3)),
        "B5": dict(n=32, gammas=np.array([1e-2]), trials=4),
        "B6": dict(n=32, trials=(3, 2)),
    },
}

B2_ACTIVATIONS = ["tanh", "erf", "relu"]
B2_CS = [0.25, 2.0]


def _array_digest(a: Any) -> str | None:
    if a is None:
        return None
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(np.asarray(a, dtype=np.float64)).tobytes()).hexdigest()[:16]


def _activation_key(activation: Any) -> str | None:
    import sympy as sp

    if activation is None or isinstance(activation, str):
        return activation
    if isinstance(activation, sp.Basic):
        return sp.srepr(activation)
    raise ValueError(f"a cached Monte Carlo cell needs a named or sympy activation, got {type(activation).__name__}")


@functools.lru_cache(maxsize=None)
def mc_version(*extra: Any) -> str:
    """Cache version of the paper-B Monte Carlo cells: the source of :mod:`numerics.rmt` (samplers, kernels,
    errors), of :mod:`theory.activations` (the activations it evaluates), of the spike vectors, and of
    ``extra`` (check-local cell functions), so that an edit of that code never returns a stale cell."""
    import numerics.rmt
    import theory.activations
    from numerics.sweep import source_version
    from theory.structured import spike_vectors

    return source_version("b-mc", numerics.rmt, theory.activations, spike_vectors, *extra)


def _mc_cached(
    ctx: CheckContext,
    kind: str,
    n: int,
    p: int,
    snr: float,
    gammas: Any,
    n_trials: int,
    seed: int,
    activation: Any = None,
    w_k: Any = None,
    w_q: Any = None,
    label_average: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`numerics.interpolation_error_mc` (``return_trials=True``) memoised on disk by ``ctx.cached``.

    The key holds every argument that changes the numbers (not ``n_jobs``, which does not); returns
    ``(mean, se, trials)``.
    """
    g = np.atleast_1d(np.asarray(gammas, dtype=np.float64))
    key = dict(kind=kind, n=int(n), p=int(p), snr=float(snr), gammas=g, trials=int(n_trials), seed=int(seed),
               activation=_activation_key(activation), w_k=_array_digest(w_k), w_q=_array_digest(w_q),
               label_average=bool(label_average))

    def compute() -> dict[str, np.ndarray]:
        m, s, t = interpolation_error_mc(
            kind, n, p, snr, g, n_trials, seed, activation=activation, w_k=w_k, w_q=w_q, n_jobs=max(1, int(ctx.n_jobs)),
            device=ctx.device, return_trials=True, label_average=label_average,
        )
        return {"mean": m, "se": s, "trials": t}

    out = ctx.cached("interpolation_error_mc", key, compute, version=mc_version())
    return out["mean"], out["se"], out["trials"]


def _profile(ctx: CheckContext) -> str:
    return ctx.profile  # validated by CheckContext (verify.registry.PROFILES); every one has a table here


def _cfg(ctx: CheckContext, cid: str) -> dict[str, Any]:
    return PROFILES[_profile(ctx)][cid]


def _p_of(n: int, c: float) -> int:
    return max(1, int(round(c * n)))


# ---------------------------------------------------------------------------------------------
# theory access (H2's layer)
# ---------------------------------------------------------------------------------------------
def _ridge_theory(gammas: np.ndarray, c: float, snr: float) -> np.ndarray:
    import theory

    return np.asarray(theory.ridge_error_values(np.asarray(gammas, dtype=float), c, snr), dtype=float)


def _attention_theory(gammas: np.ndarray, c: float, activation: Any, system: str | None = None) -> np.ndarray:
    """``theory.attention_error`` (null model, diagonal removed); ``system="spec"``: SPEC's reconstruction."""
    import theory

    g = np.asarray(gammas, dtype=float)
    kw = {} if system is None else {"system": system}
    out = theory.attention_error(g, c, activation, snr=0, diagonal="removed", **kw)
    return np.asarray(out, dtype=float).reshape(g.shape)


# ---------------------------------------------------------------------------------------------
# tolerance rules
# ---------------------------------------------------------------------------------------------
def _fs_comparison(
    name: str, pred: float, ms: float, ss: float, ns: int, ml: float, sl: float, nl: int,
    trials: tuple[int, int] | None = None,
) -> tuple[Comparison, dict[str, float]]:
    """Finite-size rule (:mod:`verify.checks._finite_size`) for one point at sizes ``ns < nl``; ``trials``
    (Monte Carlo trials at ``ns`` and ``nl``) switches the critical value to the Student-t quantile."""
    t = finite_size_test(pred, ms, ss, ml, sl, ns / nl, trials)
    return (
        t.comparison(name, pred, ml, sl, f"n={ns}", f"n={nl}"),
        dict(pred=float(pred), m_s=float(ms), se_s=float(ss), m_l=float(ml), se_l=float(sl), allowance=t.allowance),
    )


def _shrink_comparison(name: str, pts: list[dict[str, float]], ns: int, nl: int) -> Comparison:
    pred = np.array([max(abs(q["pred"]), 1e-300) for q in pts])
    ds = np.array([q["m_s"] - q["pred"] for q in pts])
    dl = np.array([q["m_l"] - q["pred"] for q in pts])
    se = np.sqrt(np.array([q["se_s"] ** 2 + q["se_l"] ** 2 for q in pts]))
    rs, rl = float(np.mean(np.abs(ds) / pred)), float(np.mean(np.abs(dl) / pred))
    noise = float(np.sqrt(np.mean((se / pred) ** 2)))
    q = math.sqrt(ns / nl)
    target = rs * q
    # SD of rl - q rs: at most the RMS relative noise of one point (the points share draws, so averaging over
    # them is not credited); se above already combines both sizes
    return Comparison.bound(
        name, f"mean rel. gap at n={nl} <= that at n={ns} ({rs:.3g}) x sqrt({ns}/{nl}) = {target:.3g}", rl, noise,
        rl - target, excess_se=noise,
        rule=(f"rel. gap(n={nl}) <= rel. gap(n={ns}) x sqrt({ns}/{nl}): the gap must decay at least like n^-1/2, "
              f"the rate the per-point allowance assumes (noise: RMS relative SE {noise:.3g}, not divided by the "
              "number of points, which share draws)"))


def _paired_positive(name: str, pred: Any, diff: np.ndarray) -> tuple[Comparison, float, float]:
    m = float(diff.mean())
    se = float(diff.std(ddof=1) / math.sqrt(diff.size))
    return (
        Comparison.direction(name, pred, m, se, +1, df=diff.size - 1,
                             rule=f"paired mean difference over {diff.size} draws must be > 0"),
        m,
        se,
    )


def _edge_flag(c: float, gamma: float, n: int) -> str:
    """Flag points where the MP hard/soft lower edge is within finite-size reach (near c = 1)."""
    edge = (1 - math.sqrt(c)) ** 2
    scale = n ** (-2.0 / 3.0)
    if edge < scale and gamma < scale:
        return (
            f" [NEAR c=1: lower MP edge (1-sqrt c)^2={edge:.2g} < n^-2/3={scale:.2g} and n^2 gamma={n * n * gamma:.2g}; "
            "deterministic equivalent not uniform here, large finite-size effects expected]"
        )
    return ""


# ---------------------------------------------------------------------------------------------
# the finite-size sweeps of B1 and B2: cells, panels, means at two sizes (one loop for every panel)
# ---------------------------------------------------------------------------------------------
class _SizeKey:
    """Placeholder for the simulated size among the seed keys of a :class:`Cell`."""

    def __repr__(self) -> str:
        return "SIZE"


#: stands for the simulated size in :attr:`Cell.seed_keys`
SIZE = _SizeKey()


@dataclass(frozen=True, eq=False)
class Cell:
    """One Monte Carlo cell of a finite-size sweep: one :func:`_mc_cached` call at each of the two sizes.

    Parameters
    ----------
    c, snr : float
        Aspect ratio ``p/n`` and signal strength ``||mu||^2`` (attention cells: ``snr = 0``, the null model).
    gammas : ndarray
        The ridge parameters of the cell, one point of the panel each.
    seed_keys : tuple
        Keys of ``ctx.seed_for``, :data:`SIZE` standing for the simulated size.
    kind, activation, label_average
        As :func:`numerics.interpolation_error_mc`.
    """

    c: float
    snr: float
    gammas: np.ndarray
    seed_keys: tuple
    kind: str = "ridge"
    activation: Any = None
    label_average: bool = False

    def seed(self, ctx: CheckContext, n: int) -> int:
        """The data seed of this cell at size ``n`` (recorded by ``ctx``)."""
        return ctx.seed_for(*(n if k is SIZE else k for k in self.seed_keys))


@dataclass(frozen=True, eq=False)
class Panel:
    """A sweep judged by the finite-size rule: its cells at the sizes ``n // 2`` and ``n``.

    Parameters
    ----------
    key : str
        Key of the panel in the prediction, the measurement and the data.
    label : str
        Start of the name of its shrinkage comparison (``"<label> finite-size gap shrinks"``).
    n : int
        The larger size (the smaller is ``n // 2``, :attr:`ns`).
    trials : (int, int)
        Monte Carlo trials at ``n // 2`` and ``n``.
    cells : tuple of Cell
        Its cells; their gammas, in order, are the panel's points.
    names : tuple of str
        The name of each point's comparison.
    progress : str
        Progress-bar text.
    x_name : str or None
        The swept parameter (``"c"``, ``"snr"``: data as rows, one per cell); ``None``: one cell swept over
        gamma (data as arrays).
    xs : tuple of float
        The values of ``x_name``, one per cell.
    """

    key: str
    label: str
    n: int
    trials: tuple[int, int]
    cells: tuple[Cell, ...]
    names: tuple[str, ...]
    progress: str = ""
    x_name: str | None = None
    xs: tuple[float, ...] = ()

    @property
    def ns(self) -> int:
        """The smaller size."""
        return self.n // 2


@dataclass(frozen=True)
class TwoSizes:
    """Monte Carlo means and standard errors of a panel's points at its two sizes (``_s``: ``n // 2``, ``_l``: ``n``).

    The measurement of a :class:`Panel` (one entry per point, in the order of its cells and their gammas).
    """

    m_s: np.ndarray
    se_s: np.ndarray
    m_l: np.ndarray
    se_l: np.ndarray


def _simulate_cell(ctx: CheckContext, cell: Cell, n: int, trials: int) -> tuple[np.ndarray, np.ndarray]:
    seed = cell.seed(ctx, n)
    return _mc_cached(ctx, cell.kind, n, _p_of(n, cell.c), cell.snr, cell.gammas, trials, seed,
                      activation=cell.activation, label_average=cell.label_average)[:2]


def _simulate_panel(ctx: CheckContext, panel: Panel, advance: Callable[[], Any] | None = None) -> TwoSizes:
    """Every cell of ``panel`` at both sizes (small first: the order of the seeds); ``advance()`` after each cell."""
    parts = []
    for cell in panel.cells:
        parts.append((*_simulate_cell(ctx, cell, panel.ns, panel.trials[0]),
                      *_simulate_cell(ctx, cell, panel.n, panel.trials[1])))
        if advance is not None:
            advance()
    return TwoSizes(*(np.concatenate([p[k] for p in parts]) for k in range(4)))


def _cell_theory(cell: Cell, system: str | None = None) -> np.ndarray:
    if cell.kind == "ridge":
        return _ridge_theory(cell.gammas, cell.c, cell.snr)
    return _attention_theory(cell.gammas, cell.c, cell.activation, system)


def _panel_theory(panel: Panel, system: str | None = None) -> np.ndarray:
    """The prediction at every point of ``panel`` (attention: ``system`` of :func:`theory.attention_error`)."""
    return np.concatenate([_cell_theory(cell, system) for cell in panel.cells])


def _panel_points(panel: Panel, pred: np.ndarray, m: TwoSizes) -> tuple[list[Comparison], list[dict[str, float]]]:
    """The finite-size comparison of every point of ``panel`` and the points' numbers (for the shrinkage rule)."""
    out = [_fs_comparison(name, pred[i], m.m_s[i], m.se_s[i], panel.ns, m.m_l[i], m.se_l[i], panel.n, panel.trials)
           for i, name in enumerate(panel.names)]
    return [c for c, _ in out], [q for _, q in out]


def judge_panels(panels: tuple[Panel, ...], preds: dict[str, np.ndarray],
                 meas: dict[str, TwoSizes]) -> list[Comparison]:
    """Per panel: the finite-size comparison of each point, then its shrinkage comparison (pure).

    Parameters
    ----------
    panels : the design's panels, in order.
    preds : the prediction of each panel (by :attr:`Panel.key`), one value per point.
    meas : the measurement of each panel (by key).
    """
    comps: list[Comparison] = []
    for p in panels:
        cs, pts = _panel_points(p, preds[p.key], meas[p.key])
        comps += cs
        comps.append(_shrink_comparison(f"{p.label} finite-size gap shrinks", pts, p.ns, p.n))
    return comps


def _panel_data(panel: Panel, pred: np.ndarray, m: TwoSizes) -> dict[str, Any]:
    n = (panel.ns, panel.n)
    if panel.x_name is None:
        return dict(gammas=panel.cells[0].gammas, theory=pred, n=n, mc_small=m.m_s, se_small=m.se_s, mc_large=m.m_l,
                    se_large=m.se_l)
    rows = np.column_stack([np.asarray(panel.xs, dtype=float), pred, m.m_s, m.se_s, m.m_l, m.se_l])
    return dict(rows=rows, columns=[panel.x_name, "theory", "mc_small", "se_small", "mc_large", "se_large"], n=n)


def _runtime(measurement: dict[str, Any]) -> float:
    return float(measurement.get("runtime_s", 0.0))


# ---------------------------------------------------------------------------------------------
# B1: ridge, the three Figure-1 sweeps
# ---------------------------------------------------------------------------------------------
def _sweep_panel(key: str, spec: dict[str, Any], x_name: str, xs: list[float],
                 point: Callable[[float], tuple[float, float]], name: Callable[[float], str], progress: str) -> Panel:
    """A B1 panel sweeping ``x_name`` at fixed gamma: one single-gamma cell per ``x``, ``point(x) = (c, snr)``."""
    g = np.array([spec["gamma"]])
    cells = tuple(Cell(*point(x), g, (key, SIZE, x)) for x in xs)
    return Panel(key, key, spec["n"], spec["trials"], cells, tuple(name(x) for x in xs), progress, x_name, tuple(xs))


def _design_b1(ctx: CheckContext) -> dict[str, Any]:
    """Panels 1a (gamma sweep), 1b (p/n sweep), 1c (snr sweep) of the profile; points near c = 1 flagged."""
    cfg = _cfg(ctx, "B1")
    a, b, cc = cfg["a"], cfg["b"], cfg["c"]
    names_a = tuple(f"1a gamma={g:.3g} (c={a['c']}, snr={a['snr']})" for g in a["gammas"])
    panel_a = Panel("1a", "1a", a["n"], a["trials"], (Cell(a["c"], a["snr"], a["gammas"], ("1a", SIZE)),), names_a,
                    "panel 1a (gamma sweep)")
    flag = {x: _edge_flag(x, b["gamma"], b["n"]) for x in b["cs"]}
    panel_b = _sweep_panel("1b", b, "c", b["cs"], lambda x: (x, b["snr"]),
                           lambda x: f"1b p/n={x} (n={b['n']}, gamma={b['gamma']:g}){flag[x]}", "panel 1b (p sweep)")
    panel_c = _sweep_panel("1c", cc, "snr", cc["snrs"], lambda x: (cc["c"], x),
                           lambda x: f"1c ||mu||^2={x} (c={cc['c']}, gamma={cc['gamma']:g})", "panel 1c (snr sweep)")
    return dict(panels=(panel_a, panel_b, panel_c), flags=[f"1b c={x}:{f}" for x, f in flag.items() if f],
                profile=_profile(ctx), a=a)


def _predict_b1(ctx: CheckContext, design: dict[str, Any]) -> dict[str, Any]:
    """``theory``: E_RR at every point, by panel; ``curve``: ``(gammas, E_RR)`` on a fine grid of panel 1a."""
    a = design["a"]
    gg = np.logspace(np.log10(a["gammas"][0]), np.log10(a["gammas"][-1]), 200)
    return dict(theory={p.key: _panel_theory(p) for p in design["panels"]},
                curve=(gg, _ridge_theory(gg, a["c"], a["snr"])))


def _simulate_b1(ctx: CheckContext, design: dict[str, Any]) -> dict[str, Any]:
    """``panels``: :class:`TwoSizes` by panel key; ``runtime_s``."""
    t0 = time.perf_counter()
    panels = {}
    for p in design["panels"]:
        with ctx.progress(p.progress, total=len(p.cells)) as bar:
            panels[p.key] = _simulate_panel(ctx, p, bar.advance)
    return dict(panels=panels, runtime_s=time.perf_counter() - t0)


def judge_b1(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any]) -> list[Comparison]:
    """Finite-size rule at every point and the shrinkage rule of every panel (pure)."""
    return judge_panels(design["panels"], prediction["theory"], measurement["panels"])


def _describe_b1(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any],
                 comparisons: list[Comparison]) -> tuple[str, dict[str, Any]]:
    data = {p.key: _panel_data(p, prediction["theory"][p.key], measurement["panels"][p.key]) for p in design["panels"]}
    notes = (
        f"Ridge E_RR (theory.ridge_error_values) vs Monte Carlo, balanced labels, mu = sqrt(snr) e_1; sizes "
        f"n/2 and n with equal p/n (profile {design['profile']}; the paper's sizes in profile 'paper'). "
        f"Runtime {_runtime(measurement):.1f} s."
    )
    if design["flags"]:
        notes += " Flagged points near c = 1 (same rule applied, see their names): " + "; ".join(design["flags"])
    return notes, data


def _b1_dense(p: Panel) -> tuple[np.ndarray, np.ndarray]:
    """E_RR of a B1 panel on a dense grid of its swept parameter (gamma, p/n clustered at 1, or snr)."""
    from ..figures import dense_grid

    cell = p.cells[0]
    if p.x_name is None:
        g = dense_grid(cell.gammas, per_decade=30)
        return g, _ridge_theory(g, cell.c, cell.snr)
    xs = np.asarray(p.xs, dtype=float)
    if p.x_name == "c":  # the 8-decade cliff at p/n = 1: points clustered there
        near = np.geomspace(1e-4, 0.25, 80)
        grid = np.unique(np.concatenate([np.linspace(xs.min(), xs.max(), 300), 1 - near, 1 + near, xs]))
        grid = grid[(grid >= xs.min()) & (grid <= xs.max())]
        return grid, np.array([_ridge_theory(cell.gammas, c, cell.snr)[0] for c in grid])
    grid = dense_grid(xs, log=False, n_min=200)
    return grid, np.array([_ridge_theory(cell.gammas, cell.c, x)[0] for x in grid])


def _b1_x(p: Panel) -> tuple[np.ndarray, float]:
    """The simulated abscissae of a panel and the factor to the plotted axis (p = (p/n) n for panel 1b)."""
    if p.x_name is None:
        return np.asarray(p.cells[0].gammas, dtype=float), 1.0
    return np.asarray(p.xs, dtype=float), float(p.n) if p.x_name == "c" else 1.0


def _panel_key_numbers(ax: Any, p: Panel, pred: np.ndarray, m: TwoSizes, comps: list[Comparison], loc: str) -> None:
    """The outcomes of a panel's comparisons (finite-size rule per point, shrinkage) and its largest gap."""
    from ..figures import key_numbers, outcome_text, worst_outcome

    mine = [c for c in comps if c.name.startswith(p.label + " ")]
    points = [c for c in mine if "finite-size gap shrinks" not in c.name]
    shrink = [c.outcome for c in mine if "finite-size gap shrinks" in c.name]
    rel = float(np.max(np.abs(m.m_l - pred) / np.abs(pred)))
    key_numbers(ax, [f"finite-size rule: {outcome_text(points)}", f"gap shrinks ~ n^-1/2: {', '.join(shrink)}",
                     f"max |rel. gap| at n = {p.n}: {rel:.2%}"], verdict=worst_outcome(mine), loc=loc)


def _plot_two_sizes(ax: Any, rax: Any, x: np.ndarray, p: Panel, pred: np.ndarray, m: TwoSizes, color: str,
                    labelled: bool = True) -> None:
    """Monte Carlo at both sizes (``n/2`` open squares, ``n`` filled circles) and their relative gaps to theory;
    ``labelled`` False: no legend labels (the caller explains the markers)."""
    from ..figures import mc_points

    small, large = ("Monte Carlo, smaller size n/2", "Monte Carlo, larger size n") if labelled else ("_nolegend_",) * 2
    mc_points(ax, x, m.m_s, m.se_s, label=small, color=color, marker="s", open_=True)
    mc_points(ax, x, m.m_l, m.se_l, label=large, color=color)
    mc_points(rax, x, (m.m_s - pred) / pred, m.se_s / np.abs(pred), label="_nolegend_", color=color, marker="s",
              open_=True)
    mc_points(rax, x, (m.m_l - pred) / pred, m.se_l / np.abs(pred), label="_nolegend_", color=color)
    rax.axhline(0.0, color=THEORY_COLOR, lw=0.9)
    rax.set_ylabel("(MC − theory) / theory")


def _b1_titles(design: dict[str, Any]) -> dict[str, str]:
    a, (pa, pb, pc) = design["a"], design["panels"]
    g_b, g_c = pb.cells[0].gammas[0], pc.cells[0].gammas[0]
    return {"1a": f"(a) γ sweep: p/n = {a['c']:g}, ‖μ‖² = {a['snr']:g}\nn = {pa.ns} and {pa.n}",
            "1b": f"(b) p sweep: γ = {g_b:g}, ‖μ‖² = {pb.cells[0].snr:g}\nn = {pb.n} (open: n = {pb.ns}, same p/n)",
            "1c": f"(c) ‖μ‖² sweep: p/n = {pc.cells[0].c:g}, γ = {g_c:g}\nn = {pc.ns} and {pc.n}"}


def _b1_panel(ax: Any, rax: Any, p: Panel, pred: np.ndarray, m: TwoSizes, comps: list[Comparison],
              title: str) -> None:
    """One panel of paper B's Figure 1 (dense theory, Monte Carlo at two sizes) over its residuals."""
    from .. import figures as F

    x, scale = _b1_x(p)
    xd, yd = _b1_dense(p)
    ax.plot(xd * scale, yd, "-", color=F.THEORY, lw=1.4, label="theory (deterministic equivalent)", zorder=2)
    _plot_two_sizes(ax, rax, x * scale, p, pred, m, F.COLORS[0])
    xlabel = {None: "ridge parameter γ", "c": f"number of features p (n = {p.n})", "snr": "signal strength ‖μ‖²"}
    rax.set_xlabel(xlabel[p.x_name])
    ax.set_ylabel("interpolation error E")
    ax.set_title(title, fontsize=F.FONT["title"] - 0.5)
    if p.x_name == "c":
        _b1_threshold(ax, rax, p, x)
    if p.x_name != "snr":
        ax.set_yscale("log")
    if p.x_name is None:
        ax.set_xscale("log")
    _panel_key_numbers(ax, p, pred, m, comps, {None: "lower right", "c": "lower left"}.get(p.x_name, "upper right"))
    F.tidy_log_axis(ax)
    F.tidy_log_axis(rax)


def _b1_threshold(ax: Any, rax: Any, p: Panel, x: np.ndarray) -> None:
    """Panel 1b: the interpolation threshold p = n, the points flagged near it, p/n on the top axis."""
    flagged = [c for c in x if _edge_flag(c, float(p.cells[0].gammas[0]), p.n)]
    for a in (ax, rax):
        a.axvline(p.n, color="#777777", ls=":", lw=1.0, label="interpolation threshold p = n" if a is ax else None)
        if flagged:
            a.axvspan(min(flagged) * p.n, max(flagged) * p.n, color="#999999", alpha=0.15, lw=0,
                      label="flagged: lower MP edge within finite-size reach" if a is ax else None)
    top = ax.secondary_xaxis("top", functions=(lambda v: v / p.n, lambda c: c * p.n))
    top.set_xlabel("p/n")
    top.tick_params(labelsize=8)
    if np.max(np.abs(rax.get_ylim())) > 0.5:
        rax.set_yscale("symlog", linthresh=0.1)


@paper_figure
def _figure_b1(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any],
               judgement: Judgement) -> Any:
    """Paper B's Figure 1 (axes gamma, p, ||mu||^2): dense theory, Monte Carlo at n/2 and n, relative residuals."""
    from .. import figures as F

    verdict, comps = judgement.verdict, list(judgement.comparisons)
    panels = design["panels"]
    fig, axes = F.subplots(2, 3, panel=(3.9, 2.2), extra=1.0, sharex="col", height_ratios=(2.6, 1.2))
    titles = _b1_titles(design)
    for k, p in enumerate(panels):
        _b1_panel(axes[0, k], axes[1, k], p, prediction["theory"][p.key], measurement["panels"][p.key], comps,
                  titles[p.key])
    F.legend(axes[0, 1], outside=True, ncol=3)
    trials = ", ".join(f"{p.key}: {p.trials[0]}/{p.trials[1]}" for p in panels)
    F.suptitle(fig, "B1", "ridge interpolation error, theory vs Monte Carlo (paper B, Figure 1)",
               f"balanced labels, μ = √‖μ‖² e₁; bars ±3 SE; trials at n/2 / n: {trials}; bottom row: relative gap",
               verdict)
    return fig


CLAIM_B1 = register(Claim(id="B1", design=_design_b1, predict=_predict_b1, simulate=_simulate_b1, judge=judge_b1,
                          describe=_describe_b1, figure=_figure_b1, figure_name="figure1"))
check_b1 = CLAIM_B1.run


# ---------------------------------------------------------------------------------------------
# B2: null-model attention vs theory.attention_error
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class GECell:
    """The Gaussian-equivalent diagnostic of B2 at one ``c``: kernels ``a1 (X^T X/p - diag) + s_f Xi/sqrt p``."""

    c: float
    n: int
    act: str
    a1: float
    nu: float
    gammas: np.ndarray
    trials: int

    @property
    def p(self) -> int:
        return _p_of(self.n, self.c)


def _b2_trials(cfg: dict[str, Any], cval: float) -> tuple[int, int]:
    return cfg["trials"][cval] if isinstance(cfg["trials"], dict) else cfg["trials"]


def _b2_panel(cfg: dict[str, Any], cval: float, act: str) -> Panel:
    """One activation at one ``c``: a label-averaged null-attention cell over the gamma grid."""
    g = cfg["gammas"]
    cell = Cell(cval, 0.0, g, ("B2", act, cval, SIZE), kind="attention", activation=act, label_average=True)
    names = tuple(f"{act} c={cval} gamma={x:.3g}" for x in g)
    return Panel(f"{act}_c{cval}", f"{act} c={cval}", cfg["ns"][cval], _b2_trials(cfg, cval), (cell,), names)


def _b2_ge_cell(cfg: dict[str, Any], cval: float, act: str) -> GECell:
    import theory

    mom = theory.hermite_moments(act)
    g_d = np.array([0.01, 0.1]) if cval > 1 else np.array([0.1, 0.316])
    return GECell(cval, cfg["ns"][cval], act, mom.a1, mom.nu, g_d, _b2_trials(cfg, cval)[1] // 2 + 2)


def _design_b2(ctx: CheckContext) -> dict[str, Any]:
    """One panel per (c, activation), c outermost; the Gaussian-equivalent cells (first activation)."""
    cfg = _cfg(ctx, "B2")
    acts = cfg.get("activations", B2_ACTIVATIONS)
    return dict(panels=tuple(_b2_panel(cfg, cval, act) for cval in B2_CS for act in acts),
                ge=tuple(_b2_ge_cell(cfg, cval, acts[0]) for cval in cfg.get("ge_cs", B2_CS)))


def _predict_b2(ctx: CheckContext, design: dict[str, Any]) -> dict[str, Any]:
    """``theory`` and ``spec`` (SPEC's reconstructed system, the negative control) by panel key; ``ge``: both at
    the diagnostic's gammas, by ``c``."""
    panels = design["panels"]
    ge = {cell.c: tuple(_attention_theory(cell.gammas, cell.c, cell.act, system) for system in (None, "spec"))
          for cell in design["ge"]}
    return dict(theory={p.key: _panel_theory(p) for p in panels},
                spec={p.key: _panel_theory(p, "spec") for p in panels}, ge=ge)


def _ge_label_average(seed: int, n: int, p: int, a1: float, nu: float, gammas: np.ndarray, trials: int,
                      n_jobs: int) -> dict[str, np.ndarray]:
    """Label-averaged errors ``(trials, len(gammas))`` of Gaussian-equivalent kernels, symmetric (GOE) noise
    then independent-entry noise, drawn in that order from one stream (the threads keep the stream order)."""
    rng = np.random.default_rng(seed)  # one stream for both noise models, in this order

    def draws(sym: bool):  # consumed in order by the dispatcher: the stream order never changes
        for _ in range(trials):
            X = rng.standard_normal((p, n))
            yield X, gaussian_equivalent_kernel(X, a1, nu, rng, symmetric=sym)

    def error(XK: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        return interpolation_error_label_average((torch.from_numpy(XK[0]) @ torch.from_numpy(XK[1])).numpy(), gammas)

    return {("symmetric" if sym else "independent"): np.array(_map_threads(error, draws(sym), n_jobs))
            for sym in (True, False)}


def _ge_cached(ctx: CheckContext, cell: GECell) -> dict[str, np.ndarray]:
    seed = ctx.seed_for("B2-GE", cell.c, cell.n)
    key = dict(c=cell.c, n=cell.n, p=cell.p, act=cell.act, gammas=cell.gammas, trials=cell.trials, seed=seed)
    compute = functools.partial(_ge_label_average, seed, cell.n, cell.p, cell.a1, cell.nu, cell.gammas, cell.trials,
                                ctx.n_jobs)
    return ctx.cached("gaussian_equivalent", key, compute, version=mc_version(_ge_label_average))


def _simulate_b2(ctx: CheckContext, design: dict[str, Any]) -> dict[str, Any]:
    """``panels``: :class:`TwoSizes` by panel key; ``ge``: ``{"symmetric", "independent"}`` per-trial errors by
    ``c``; ``runtime_s``."""
    t0 = time.perf_counter()
    panels = {}
    with ctx.progress("null attention sweeps", total=len(design["panels"])) as bar:
        for p in design["panels"]:
            panels[p.key] = _simulate_panel(ctx, p)
            bar.advance()
    ge = {}
    with ctx.progress("Gaussian-equivalent diagnostic", total=len(design["ge"])) as bar:
        for cell in design["ge"]:
            ge[cell.c] = _ge_cached(ctx, cell)
            bar.advance()
    return dict(panels=panels, ge=ge, runtime_s=time.perf_counter() - t0)


def judge_b2(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any]) -> list[Comparison]:
    """Finite-size rule at every point and the shrinkage rule of every panel (pure)."""
    return judge_panels(design["panels"], prediction["theory"], measurement["panels"])


def _worst_gap(panels: tuple[Panel, ...], preds: dict[str, np.ndarray], meas: dict[str, TwoSizes]) -> tuple[float, str]:
    """The largest relative gap at the larger size and the name of its point."""
    worst = (0.0, "")
    for p in panels:
        m, pred = meas[p.key], preds[p.key]
        for i, name in enumerate(p.names):
            rel = abs(float(m.m_l[i]) - float(pred[i])) / max(abs(float(pred[i])), 1e-300)
            if rel > worst[0]:
                worst = (rel, name)
    return worst


def _spec_control(p: Panel, pred_spec: np.ndarray, m: TwoSizes) -> str:
    """Negative control (not a comparison): the same rule against SPEC's reconstructed system."""
    n_bad = sum(
        not finite_size_test(pred_spec[i], m.m_s[i], m.se_s[i], m.m_l[i], m.se_l[i], p.ns / p.n, p.trials).passed
        for i in range(len(p.names))
    )
    rel_spec = float(np.max(np.abs(m.m_l - pred_spec) / pred_spec))
    cell = p.cells[0]
    return f"{cell.activation} p/n={cell.c}: {n_bad}/{len(p.names)} points fail, max rel. gap {rel_spec:.2g}"


def _ge_gaps(cell: GECell, preds: tuple[np.ndarray, np.ndarray], ge: dict[str, np.ndarray]) -> dict[str, Any]:
    """Relative gaps (and their SEs) of both noise models against the theory and against SPEC's system."""
    pred, pred_spec = preds
    out = {}
    for name in ("symmetric", "independent"):
        v = ge[name]
        rel = (v.mean(0) - pred) / pred
        rse = v.std(0, ddof=1) / math.sqrt(v.shape[0]) / pred
        rel_spec = (v.mean(0) - pred_spec) / pred_spec
        out[name] = dict(gammas=cell.gammas, rel_gap=rel, rel_se=rse, rel_gap_spec_system=rel_spec)
    return out


def _ge_text(cell: GECell, out: dict[str, Any]) -> str:
    def fmt(key: str, k: str) -> str:
        return ", ".join(f"{r:+.2e}+-{e:.1e}" for r, e in zip(out[key][k], out[key]["rel_se"]))

    return (
        f"{cell.act} p/n={cell.c}, n={cell.n}, gamma={[float(x) for x in cell.gammas]}: relative gap (MC - theory)/theory; "
        f"symmetric GOE noise vs theory {fmt('symmetric', 'rel_gap')}, vs SPEC system "
        f"{fmt('symmetric', 'rel_gap_spec_system')}; independent-entry noise vs theory "
        f"{fmt('independent', 'rel_gap')}, vs SPEC system {fmt('independent', 'rel_gap_spec_system')}"
    )


def _b2_notes(worst: tuple[float, str], n_failed: int, n_comps: int, control: list[str], diag_txt: list[str],
              runtime: float) -> str:
    return (
        "Null model (mu = 0, W = I), diagonal of K removed, centred activations; theory = theory.attention_error "
        "(default system: the project's corrected deterministic equivalent with the GOE term kappa; SPEC's "
        "reconstruction is system='spec'). Monte Carlo: label-averaged estimator gamma^2/n tr Q^2 (exact mean over "
        "i.i.d. Rademacher labels given X; labels are independent of X in the null model), which removes the label "
        f"noise and makes the rule sharp. Largest relative gap at n_l: {worst[0]:.3g} ({worst[1]}). "
        f"{n_failed} of {n_comps} comparisons fail. "
        "NEGATIVE CONTROL (same Monte Carlo, same rule, SPEC's reconstructed system as the prediction): "
        + "; ".join(control)
        + ". Gaussian-equivalent diagnostic (a1 (X^T X/p - diag) + s_f Xi/sqrt p at the larger size): "
        + " | ".join(diag_txt)
        + ". Background (H3, measured during development against SPEC's system, label-averaged, not re-run here): "
        "SPEC's system matches the independent-entry noise model but leaves a gap with the real (symmetric) kernel "
        "that does not shrink with n: tanh p/n=1/4, gamma=0.1: +1.2e-3, 1.0e-3, 1.0e-3, 0.8e-3, 1.0e-3 relative at "
        "n = 256..4096; tanh p/n=2, gamma=0.01: +2.5%, +1.9%, +2.0% at n = 512, 1024, 2048; relu p/n=2, gamma=0.01: "
        "+4.7%, +4.3%, +3.9%. That is the symmetry (kappa) term of the corrected system. "
        f"Runtime {runtime:.1f} s."
    )


def _describe_b2(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any],
                 comparisons: list[Comparison]) -> tuple[str, dict[str, Any]]:
    panels, meas = design["panels"], measurement["panels"]
    data: dict[str, Any] = {p.key: _panel_data(p, prediction["theory"][p.key], meas[p.key]) for p in panels}
    diag_txt = []
    for cell in design["ge"]:
        out = _ge_gaps(cell, prediction["ge"][cell.c], measurement["ge"][cell.c])
        data[f"GE_diagnostic_{cell.act}_c{cell.c}"] = out
        diag_txt.append(_ge_text(cell, out))
    n_failed = sum(c.outcome == "FAIL" for c in comparisons)
    control = [_spec_control(p, prediction["spec"][p.key], meas[p.key]) for p in panels]
    notes = _b2_notes(_worst_gap(panels, prediction["theory"], meas), n_failed, len(comparisons), control, diag_txt,
                      _runtime(measurement))
    return notes, data


def _b2_spec_fails(p: Panel, pred_spec: np.ndarray, m: TwoSizes) -> int:
    """Points of ``p`` the finite-size rule rejects against SPEC's reconstructed system (the negative control)."""
    return sum(not finite_size_test(pred_spec[i], m.m_s[i], m.se_s[i], m.m_l[i], m.se_l[i], p.ns / p.n,
                                    p.trials).passed for i in range(len(p.names)))


def _plot_b2_panel(ax: Any, rax: Any, p: Panel, pred: np.ndarray, m: TwoSizes, color: str, shift: float) -> None:
    """One activation: dense theory (and SPEC's system in the residuals, dashed), Monte Carlo at both sizes."""
    from ..figures import dense_grid

    cell = p.cells[0]
    gd = dense_grid(cell.gammas, per_decade=7, n_min=16)
    th = _attention_theory(gd, cell.c, cell.activation)
    ax.plot(gd, th, "-", color=color, lw=1.3, zorder=2)
    rax.plot(gd, (_attention_theory(gd, cell.c, cell.activation, "spec") - th) / th, "--", color=color, lw=1.1)
    _plot_two_sizes(ax, rax, cell.gammas * shift, p, pred, m, color, labelled=False)


def _b2_legend_entries(acts: list[str]) -> list[Any]:
    from .. import figures as F

    return ([F.proxy(f"f = {a}", color=F.COLORS[k], marker=None, ls="-", lw=4) for k, a in enumerate(acts)]
            + [F.proxy("theory: corrected deterministic equivalent", color=F.THEORY, marker=None, ls="-"),
               F.proxy("SPEC's reconstructed system, relative to theory (negative control)", color=F.THEORY,
                       marker=None, ls="--"),
               F.proxy("Monte Carlo, larger size n", color=F.THEORY),
               F.proxy("Monte Carlo, smaller size n/2", color=F.THEORY, marker="s", mfc="white")])


def _b2_column(ax: Any, rax: Any, design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any],
               comps: list[Comparison], cval: float) -> None:
    """The activations at one p/n: theory and Monte Carlo, the relative gaps, each activation's outcomes."""
    from .. import figures as F

    panels = [p for p in design["panels"] if p.cells[0].c == cval]
    lines, outs = [], []
    for k, p in enumerate(panels):
        pred, m = prediction["theory"][p.key], measurement["panels"][p.key]
        _plot_b2_panel(ax, rax, p, pred, m, F.COLORS[k], 1.0 + 0.04 * (k - 1))
        mine = [c for c in comps if c.name.startswith(p.label + " ")]
        outs += mine
        lines.append(f"{p.cells[0].activation}: {F.outcome_text(mine)}; SPEC: "
                     f"{_b2_spec_fails(p, prediction['spec'][p.key], m)}/{len(p.names)} fail")
    p0 = panels[0]
    ax.set(xscale="log", ylabel="interpolation error E",
           title=f"p/n = {cval:g}: n = {p0.n} ({p0.trials[1]} trials), n/2 = {p0.ns} ({p0.trials[0]} trials)")
    lo, hi = ax.get_ylim()
    if hi / max(lo, 1e-300) > 10:
        ax.set_yscale("log")
    rax.set(xlabel="ridge parameter γ")
    F.key_numbers(ax, lines, verdict=F.worst_outcome(outs), loc="upper left")
    F.headroom(ax, 0.3)
    F.tidy_log_axis(ax)
    F.tidy_log_axis(rax)


@paper_figure
def _figure_b2(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any],
               judgement: Judgement) -> Any:
    """Per p/n: null-model attention error vs gamma (dense theory, Monte Carlo at n/2 and n), relative gaps below
    with SPEC's system (the negative control) drawn as the gap it predicts."""
    from .. import figures as F

    verdict, comps = judgement.verdict, list(judgement.comparisons)
    fig, axes = F.subplots(2, len(B2_CS), panel=(4.6, 2.4), extra=1.2, sharex="col", height_ratios=(2.4, 1.6))
    for j, cval in enumerate(B2_CS):
        _b2_column(axes[0, j], axes[1, j], design, prediction, measurement, comps, cval)
    acts = [p.cells[0].activation for p in design["panels"] if p.cells[0].c == B2_CS[0]]
    F.legend(axes[0, 0], extra=_b2_legend_entries(acts), outside=True, ncol=3)
    F.suptitle(fig, "B2", "null-model attention (diagonal removed) vs the deterministic equivalent",
               "μ = 0, W = I, centred f, label-averaged Monte Carlo; bars ±3 SE; bottom: gap to theory, "
               "dashed: SPEC's system", verdict)
    return fig


CLAIM_B2 = register(Claim(id="B2", design=_design_b2, predict=_predict_b2, simulate=_simulate_b2, judge=judge_b2,
                          describe=_describe_b2, figure=_figure_b2, figure_name="null_attention"))
check_b2 = CLAIM_B2.run


# ---------------------------------------------------------------------------------------------
# B3: attention vs ridge on random inputs; small-gamma exponents
# ---------------------------------------------------------------------------------------------
def _per_trial_slopes(gammas: np.ndarray, trials: np.ndarray) -> np.ndarray:
    lx = np.log(gammas)
    ly = np.log(np.maximum(trials, 1e-300))
    xc = lx - lx.mean()
    return (ly - ly.mean(axis=1, keepdims=True)) @ xc / (xc @ xc)


def _ols_slope(gammas: np.ndarray, values: np.ndarray) -> float:
    return float(_per_trial_slopes(gammas, np.asarray(values)[None, :])[0])


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size))


#: B3's small-gamma laws at p/n = 2: (measurement key, label, exponent)
B3_LAWS = (("att", "attention", 0.5), ("rr", "ridge", 2.0))


def _design_b3(ctx: CheckContext) -> dict[str, Any]:
    """Grids (``allg``: the gamma grid and the slope-fit range merged; ``idx``/``fidx`` their places), sizes
    ``ns = n // 2``, ``n`` at p/n = 2 and ``n4 = 2 n`` at p/n = 1/4, trials, activation."""
    cfg = _cfg(ctx, "B3")
    gammas, fit = cfg["gammas"], cfg["fit"]
    allg = np.unique(np.concatenate([gammas, fit]))
    return dict(gammas=gammas, fit=fit, allg=allg, idx=np.searchsorted(allg, gammas), fidx=np.searchsorted(allg, fit),
                n=cfg["n"], ns=cfg["n"] // 2, n4=2 * cfg["n"], trials=cfg["trials"], act="tanh")


def _predict_b3(ctx: CheckContext, design: dict[str, Any]) -> dict[str, np.ndarray]:
    """``att``, ``rr``: attention and ridge errors at p/n = 2 on ``allg``; ``att4``, ``rr4``: at p/n = 1/4 on
    ``gammas``."""
    allg, g, act = design["allg"], design["gammas"], design["act"]
    return dict(att=_attention_theory(allg, 2.0, act), rr=_ridge_theory(allg, 2.0, 0.0),
                att4=_attention_theory(g, 0.25, act), rr4=_ridge_theory(g, 0.25, 0.0))


def _simulate_b3_quarter(ctx: CheckContext, design: dict[str, Any]) -> dict[str, np.ndarray]:
    cval, n4, g, act, tr = 0.25, design["n4"], design["gammas"], design["act"], design["trials"][1]
    p = _p_of(n4, cval)
    seed = ctx.seed_for("B3", cval, n4)
    with ctx.progress("c=1/4 attention and ridge", total=2) as bar:
        att = _mc_cached(ctx, "attention", n4, p, 0.0, g, tr, seed, activation=act)[2]
        bar.advance()
        rr = _mc_cached(ctx, "ridge", n4, p, 0.0, g, tr, seed)[2]
        bar.advance()
    att_la = _mc_cached(ctx, "attention", n4, p, 0.0, g, tr, seed, activation=act, label_average=True)[2]
    rr_la = _mc_cached(ctx, "ridge", n4, p, 0.0, g, tr, seed, label_average=True)[2]
    return dict(att=att, rr=rr, diff=att_la - rr_la)


def _simulate_b3(ctx: CheckContext, design: dict[str, Any]) -> dict[str, Any]:
    """Per-trial errors ``(trials, gammas)`` on paired draws. ``c2``: ``{"att", "rr"}`` -> (at ``ns``, at ``n``),
    label-averaged, on ``allg``; ``c4``: ``att``, ``rr`` (sampled labels) and ``diff`` (label-averaged
    attention minus ridge) at ``n4`` on ``gammas``; ``runtime_s``."""
    t0 = time.perf_counter()
    cval, act, allg = 2.0, design["act"], design["allg"]
    c2: dict[str, list[np.ndarray]] = {"att": [], "rr": []}
    with ctx.progress("c=2 attention and ridge", total=4) as bar:
        for nn, tr in ((design["ns"], design["trials"][0]), (design["n"], design["trials"][1])):
            seed = ctx.seed_for("B3", cval, nn)  # same seed: paired draws
            c2["att"].append(_mc_cached(ctx, "attention", nn, _p_of(nn, cval), 0.0, allg, tr, seed, activation=act,
                                        label_average=True)[2])
            bar.advance()
            c2["rr"].append(_mc_cached(ctx, "ridge", nn, _p_of(nn, cval), 0.0, allg, tr, seed, label_average=True)[2])
            bar.advance()
    c4 = _simulate_b3_quarter(ctx, design)
    return dict(c2={k: tuple(v) for k, v in c2.items()}, c4=c4, runtime_s=time.perf_counter() - t0)


def _b3_slopes(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any]) -> dict[str, Any]:
    """Per law: the theory's OLS log-log slope on the fit range, and the MC per-trial slopes' (mean, SE) at both
    sizes."""
    fit, fidx = design["fit"], design["fidx"]
    out = {}
    for kind, label, _ in B3_LAWS:
        small, large = (_per_trial_slopes(fit, t[:, fidx]) for t in measurement["c2"][kind])
        out[label] = dict(theory_slope=_ols_slope(fit, prediction[kind][fidx]), mc_small=_mean_se(small),
                          mc_large=_mean_se(large))
    return out


def _b3_law_bound(label: str, target: float, th_slope: float, ml_: float, sel_: float, df: int,
                  allowance: float) -> Comparison:
    curv = abs(th_slope - target)
    band = allowance + curv
    return Comparison.bound(
        f"c=2 {label} small-gamma exponent vs the law gamma^{target:g}", target, ml_, sel_,
        abs(ml_ - target) - band, df=df,
        rule=(
            f"|slope - {target:g}| <= finite-size allowance {allowance:.3g} + curvature "
            f"|theory local slope ({th_slope:.4g}) - {target:g}| = {curv:.3g} (band {band:.3g}) up to noise. "
            f"The allowance contains |theory local slope - law|, so this re-tests the MC slope against "
            f"the theory's local slope on the fit range; the law {target:g} is reported beside it, "
            f"not tested independently"
        ),
    )


def _b3_slope_comparisons(design: dict[str, Any], prediction: dict[str, Any],
                          measurement: dict[str, Any]) -> list[Comparison]:
    """Per law: the finite-size rule on the MC slope vs the theory's slope, then the exponent vs the law."""
    fit, slopes = design["fit"], _b3_slopes(design, prediction, measurement)
    comps = []
    for kind, label, target in B3_LAWS:
        s = slopes[label]
        (ms_, ss_), (ml_, sel_) = s["mc_small"], s["mc_large"]
        trials = tuple(t.shape[0] for t in measurement["c2"][kind])
        cmp_, q = _fs_comparison(
            f"c=2 {label} small-gamma slope vs theory's own OLS slope on gamma in [{fit[0]:.2g}, {fit[-1]:.2g}]",
            s["theory_slope"], ms_, ss_, design["ns"], ml_, sel_, design["n"], trials,
        )
        comps += [cmp_, _b3_law_bound(label, target, s["theory_slope"], ml_, sel_, trials[1] - 1, q["allowance"])]
    return comps


def _b3_sign_tests(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any]) -> list[Comparison]:
    """p/n = 1/4: the sign of E_att - E_ridge as the theory says, where it says one (gamma >= 0.05, |diff| >= 1e-3)."""
    d4 = measurement["c4"]["diff"]
    comps = []
    for i, g in enumerate(design["gammas"]):
        tdiff = float(prediction["att4"][i] - prediction["rr4"][i])
        if g < 0.05 or abs(tdiff) < 1e-3:
            continue  # theory difference too small to state a sign
        sign = 1.0 if tdiff > 0 else -1.0
        cmp_, m_, se_ = _paired_positive(
            f"c=1/4 gamma={g:.3g}: sign of E_att - E_ridge as theory ({'+' if sign > 0 else '-'})", tdiff, sign * d4[:, i]
        )
        comps.append(dataclasses.replace(
            cmp_, measured=sign * m_,
            tolerance=f"(theory's sign) x paired mean difference > 3 SE ({3 * se_:.3g}) over {d4.shape[0]} draws"))
    return comps


def judge_b3(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any]) -> list[Comparison]:
    """p/n = 2: attention > ridge at every gamma (paired), the slopes and exponents; p/n = 1/4: signs (pure)."""
    act, allg = design["act"], design["allg"]
    att_l, rr_l = measurement["c2"]["att"][1], measurement["c2"]["rr"][1]
    comps = [
        _paired_positive(f"c=2 gamma={allg[i]:.3g}: E_att({act}) - E_ridge > 0",
                         float(prediction["att"][i] - prediction["rr"][i]), att_l[:, i] - rr_l[:, i])[0]
        for i in design["idx"]
    ]
    return (comps + _b3_slope_comparisons(design, prediction, measurement)
            + _b3_sign_tests(design, prediction, measurement))


def _b3_identity(design: dict[str, Any], c4: dict[str, np.ndarray]) -> dict[str, float]:
    """Diagnostic (data + notes, not a comparison): at gamma -> 0 both errors equal (n-p)/n by an algebraic
    identity (projection of y on the (n-p)-dimensional null space), so this cannot test the theory."""
    ta, tr_, n4 = c4["att"], c4["rr"], design["n4"]
    diff = ta[:, 0] - tr_[:, 0]
    m, se = float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(diff.size))
    return dict(gamma=float(design["gammas"][0]), diff_mean=m, diff_se=se, identity_value=(n4 - _p_of(n4, 0.25)) / n4,
                att_mean=float(ta[:, 0].mean()), rr_mean=float(tr_[:, 0].mean()))


def _b3_data(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any]) -> dict[str, Any]:
    c2, c4 = measurement["c2"], measurement["c4"]
    d4 = c4["diff"]
    return {
        "c2": dict(gammas=design["allg"], theory_att=prediction["att"], theory_rr=prediction["rr"],
                   att_mean=c2["att"][1].mean(0), rr_mean=c2["rr"][1].mean(0),
                   slopes=_b3_slopes(design, prediction, measurement)),
        "c0.25": dict(gammas=design["gammas"], theory_att=prediction["att4"], theory_rr=prediction["rr4"],
                      diff_mean=d4.mean(0), diff_se=d4.std(0, ddof=1) / math.sqrt(d4.shape[0]),
                      small_gamma_identity=_b3_identity(design, c4)),
    }


def _describe_b3(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any],
                 comparisons: list[Comparison]) -> tuple[str, dict[str, Any]]:
    data = _b3_data(design, prediction, measurement)
    act, sg = design["act"], data["c0.25"]["small_gamma_identity"]
    sa, sr = data["c2"]["slopes"]["attention"], data["c2"]["slopes"]["ridge"]
    notes = (
        f"Random inputs (snr = 0), f = {act} (centred), diagonal removed. Stated regime: p/n > 1, where ridge "
        f"interpolates (E ~ gamma^2) and attention does not (E ~ sqrt(gamma)); for p/n < 1 both tend to 1 - c as "
        f"gamma -> 0 (the null space of Phi has dimension n - p in both models and y is independent of it), so the "
        f"claim is not made there; at p/n = 1/4 the sign of the difference at gamma >= 0.05 is tested against the "
        f"sign the theory gives (attention larger at moderate gamma, smaller at gamma = 1: a scale-dependent "
        f"reversal, since the features' norm sets where gamma stops mattering). Slopes: attention {sa['mc_large'][0]:.3f} +- {sa['mc_large'][1]:.3f} "
        f"(theory local {sa['theory_slope']:.3f}), ridge {sr['mc_large'][0]:.3f} +- {sr['mc_large'][1]:.3f} "
        f"(theory local {sr['theory_slope']:.3f}); per-trial log-log OLS, SE over trials. At p/n = 2 the Monte Carlo "
        "uses the label-averaged estimator gamma^2/n tr Q^2 (exact mean over i.i.d. labels given X); the p/n = 1/4 "
        "sign tests are label-averaged. Not judged (identity, true by construction): at p/n = 1/4, "
        f"gamma = {sg['gamma']:.2g}, sampled balanced labels, E_att - E_ridge = "
        f"{sg['diff_mean']:.3g} +- {sg['diff_se']:.2g} (E_att {sg['att_mean']:.4f}, "
        f"E_ridge {sg['rr_mean']:.4f}; both -> (n-p)/n = {sg['identity_value']:.4f} as gamma -> 0). "
        f"Runtime {_runtime(measurement):.1f} s."
    )
    return notes, data


def _b3_guides(ax: Any, design: dict[str, Any]) -> None:
    """The claimed small-gamma laws gamma^(1/2) (attention) and gamma^2 (ridge) through the theory at the centre of
    the slope-fit range."""
    from .. import figures as F

    fit, act = design["fit"], design["act"]
    gc = math.sqrt(fit[0] * fit[-1])
    gg = np.geomspace(fit[0] / 3, fit[-1] * 3, 20)
    for k, (kind_theory, expo, word) in enumerate(((lambda g: _attention_theory(g, 2.0, act), 0.5, "1/2"),
                                                   (lambda g: _ridge_theory(g, 2.0, 0.0), 2.0, "2"))):
        ec = float(np.asarray(kind_theory(np.array([gc]))).ravel()[0])
        ax.plot(gg, 0.25 * ec * (gg / gc) ** expo, ":", color=F.COLORS[k], lw=2.0,
                label=rf"claimed law $\propto\gamma^{{{word}}}$ ({'attention' if k == 0 else 'ridge'}; offset ×1/4)")
    ax.axvspan(fit[0], fit[-1], color="#999999", alpha=0.15, lw=0, label="slope-fit range")


def _b3_left(ax: Any, rax: Any, design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any],
             comps: list[Comparison]) -> None:
    """p/n = 2: dense theory of both models, Monte Carlo at n/2 and n, the claimed laws; relative gaps below."""
    from .. import figures as F

    allg, act = design["allg"], design["act"]
    for k, (kind, name, f) in enumerate((("att", f"attention (f = {act})", lambda g: _attention_theory(g, 2.0, act)),
                                         ("rr", "ridge", lambda g: _ridge_theory(g, 2.0, 0.0)))):
        col = F.COLORS[k]
        F.theory_curve(ax, allg, f, label=f"{name}: theory", color=col, per_decade=10)
        pred = prediction[kind]
        for t, open_, mk, size in zip(measurement["c2"][kind], (True, False), ("s", "o"), ("n/2", "n")):
            mean, se = t.mean(0), t.std(0, ddof=1) / math.sqrt(t.shape[0])
            F.mc_points(ax, allg, mean, se, label=f"{name}: Monte Carlo, {size}", color=col, marker=mk, open_=open_)
            F.mc_points(rax, allg * (1.0 + 0.06 * k), (mean - pred) / pred, se / pred, label="_nolegend_", color=col,
                        marker=mk, open_=open_)
    _b3_guides(ax, design)
    rax.axhline(0.0, color=F.THEORY, lw=0.9)
    ax.set(xscale="log", yscale="log", ylabel="interpolation error E",
           title=f"p/n = 2 (ridge interpolates): n = {design['n']} and n/2 = {design['ns']}")
    rax.set(xlabel="ridge parameter γ", ylabel="(MC − theory) / theory")
    slopes = [c for c in comps if "small-gamma" in c.name]
    lines = [f"{c.name.split()[1]} slope {c.measured:.3f} ± {c.uncertainty:.3f} vs law {c.predicted:g}: {c.outcome}"
             for c in slopes if "law" in c.name]
    paired = [c for c in comps if c.name.startswith("c=2 gamma=")]
    F.key_numbers(ax, lines + [f"E_att > E_ridge (paired): {F.outcome_text(paired)}"],
                  verdict=F.worst_outcome(slopes + paired), loc="lower right")
    F.tidy_log_axis(ax)
    F.tidy_log_axis(rax)


def _b3_right(ax: Any, rax: Any, design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any],
              comps: list[Comparison]) -> None:
    """p/n = 1/4: the theory's E_att - E_ridge (dense) and the paired Monte Carlo; open: no sign stated."""
    from .. import figures as F

    g, act, d4 = design["gammas"], design["act"], measurement["c4"]["diff"]
    F.theory_curve(ax, g, lambda x: _attention_theory(x, 0.25, act) - _ridge_theory(x, 0.25, 0.0),
                   label=r"theory $E_{\rm att} - E_{\rm ridge}$", per_decade=14)
    th = prediction["att4"] - prediction["rr4"]
    stated = (g >= 0.05) & (np.abs(th) >= 1e-3)
    mean, se = d4.mean(0), d4.std(0, ddof=1) / math.sqrt(d4.shape[0])
    F.mc_points(ax, g, mean, se, label=f"Monte Carlo, paired, n = {design['n4']}", color=F.COLORS[2], judged=stated)
    F.mc_points(rax, g, mean - th, se, label="_nolegend_", color=F.COLORS[2], judged=stated)
    for a in (ax, rax):
        a.axhline(0.0, color="#777777", lw=0.8)
        a.axvspan(g[0] / 1.5, 0.05, color="#999999", alpha=0.12, lw=0,
                  label="γ < 0.05: no sign stated (not judged)" if a is ax else None)
    ax.set(xscale="log", ylabel=r"$E_{\rm att} - E_{\rm ridge}$",
           title="p/n = 1/4 (no interpolation): the sign of the difference")
    rax.set(xlabel="ridge parameter γ", ylabel="MC − theory")
    signs = [c for c in comps if c.name.startswith("c=1/4")]
    F.key_numbers(ax, [f"sign as theory: {F.outcome_text(signs)}"], verdict=F.worst_outcome(signs), loc="upper left")
    F.tidy_log_axis(ax)
    F.tidy_log_axis(rax)


@paper_figure
def _figure_b3(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any],
               judgement: Judgement) -> Any:
    """Attention vs ridge on random inputs: p/n = 2 with the claimed laws, p/n = 1/4 the sign; residuals below."""
    from .. import figures as F

    verdict, comps = judgement.verdict, list(judgement.comparisons)
    fig, axes = F.subplots(2, 2, panel=(4.8, 2.3), extra=1.3, sharex="col", height_ratios=(2.5, 1.3))
    _b3_left(axes[0, 0], axes[1, 0], design, prediction, measurement, comps)
    _b3_right(axes[0, 1], axes[1, 1], design, prediction, measurement, comps)
    F.legend(axes[0, 0], outside=True, ncol=3, extra=[F.not_judged_handle("open circles (right): not judged")])
    F.suptitle(fig, "B3", "attention vs ridge on random inputs (‖μ‖² = 0, diagonal removed)",
               f"f = {design['act']}; bars ±3 SE; trials {design['trials'][0]} (n/2), {design['trials'][1]} (n); "
               "p/n = 2 label-averaged", verdict)
    return fig


CLAIM_B3 = register(Claim(id="B3", design=_design_b3, predict=_predict_b3, simulate=_simulate_b3, judge=judge_b3,
                          describe=_describe_b3, figure=_figure_b3, figure_name="attention_vs_ridge"))
check_b3 = CLAIM_B3.run


# ---------------------------------------------------------------------------------------------
# B5: cos (a1 = 0) vs a linear-component activation at equal nu
# ---------------------------------------------------------------------------------------------
def _b5_key(cval: float, snr: float) -> str:
    return f"c{cval}_snr{snr}"


def _design_b5(ctx: CheckContext) -> dict[str, Any]:
    """cos (centred) vs ``scale * tanh`` with the scale that equalises nu; configurations ``(p/n, snr)``."""
    import sympy as sp

    import theory
    from theory.symbols import x as xs

    cfg = _cfg(ctx, "B5")
    m_cos = theory.hermite_moments(theory.activation("cos", centered=True))
    m_tanh = theory.hermite_moments(theory.activation("tanh", centered=True))
    scale = math.sqrt(m_cos.nu / m_tanh.nu)
    lin = sp.Float(scale) * sp.tanh(xs)
    return dict(n=cfg["n"], gammas=cfg["gammas"], trials=cfg["trials"], configs=[(2.0, 0.0), (2.0, 4.0), (0.5, 4.0)],
                m_cos=m_cos, m_lin=theory.hermite_moments(lin), scale=scale, lin=lin)


def _predict_b5(ctx: CheckContext, design: dict[str, Any]) -> dict[str, Any]:
    """By configuration key: ``(E_cos, E_lin)`` on the gammas for ``snr = 0`` (null theory); ``None`` with signal."""
    g, lin = design["gammas"], design["lin"]
    return {_b5_key(c, snr): (_attention_theory(g, c, "cos"), _attention_theory(g, c, lin)) if snr == 0.0 else None
            for c, snr in design["configs"]}


def _simulate_b5(ctx: CheckContext, design: dict[str, Any]) -> dict[str, Any]:
    """``configs``: by key, ``{"cos", "lin"}`` per-trial errors ``(trials, gammas)`` on paired draws (snr = 0:
    label-averaged); ``runtime_s``."""
    t0 = time.perf_counter()
    n, g, tr = design["n"], design["gammas"], design["trials"]
    out = {}
    with ctx.progress("cos vs scaled tanh", total=len(design["configs"])) as bar:
        for cval, snr in design["configs"]:
            seed = ctx.seed_for("B5", cval, snr, n)
            la = snr == 0.0  # null model: exact label average (see B2)
            out[_b5_key(cval, snr)] = {
                name: _mc_cached(ctx, "attention", n, _p_of(n, cval), snr, g, tr, seed, activation=act,
                                 label_average=la)[2]
                for name, act in (("cos", "cos"), ("lin", design["lin"]))
            }
            bar.advance()
    return dict(configs=out, runtime_s=time.perf_counter() - t0)


def judge_b5(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any]) -> list[Comparison]:
    """E_cos - E_scaled_tanh > 0 at every configuration and gamma, paired (pure)."""
    comps = []
    for cval, snr in design["configs"]:
        key = _b5_key(cval, snr)
        th, m = prediction[key], measurement["configs"][key]
        for i, g in enumerate(design["gammas"]):
            pred = float(th[0][i] - th[1][i]) if th is not None else "E_cos > E_lin"
            comps.append(_paired_positive(f"p/n={cval} snr={snr} gamma={g:.2g}: E_cos - E_scaled_tanh > 0", pred,
                                          m["cos"][:, i] - m["lin"][:, i])[0])
    return comps


def _b5_data(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any]) -> dict[str, Any]:
    m_cos, m_lin = design["m_cos"], design["m_lin"]
    data: dict[str, Any] = dict(
        cos=dict(a1=m_cos.a1, nu=m_cos.nu), scaled_tanh=dict(scale=design["scale"], a1=m_lin.a1, nu=m_lin.nu)
    )
    # equal nu holds by construction (the scale is chosen from the two nu's): recorded in data/notes, not judged
    data["equal_nu_rel_diff"] = abs(m_lin.nu - m_cos.nu) / m_cos.nu
    for cval, snr in design["configs"]:
        key = _b5_key(cval, snr)
        th, m = prediction[key], measurement["configs"][key]
        tc, tl = m["cos"], m["lin"]
        data[key] = dict(
            gammas=design["gammas"], cos=tc.mean(0), cos_se=tc.std(0, ddof=1) / math.sqrt(tc.shape[0]),
            lin=tl.mean(0), lin_se=tl.std(0, ddof=1) / math.sqrt(tl.shape[0]),
            theory_cos=None if th is None else th[0], theory_lin=None if th is None else th[1],
        )
    return data


def _describe_b5(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any],
                 comparisons: list[Comparison]) -> tuple[str, dict[str, Any]]:
    data = _b5_data(design, prediction, measurement)
    m_cos, m_lin = design["m_cos"], design["m_lin"]
    notes = (
        f"cos centred (a1 = {m_cos.a1:.2g}, nu = {m_cos.nu:.4f}) vs {design['scale']:.4f} * tanh (a1 = {m_lin.a1:.4f}, same nu "
        f"by construction of the scale; quadrature relative difference {data['equal_nu_rel_diff']:.2g}, not judged). "
        "Paired draws (snr = 0: label-averaged estimator). With signal (snr = 4) cos cannot use the label direction (a1 = 0): its error stays near the "
        "no-signal value, while the linear component lets the scaled tanh use it. With random inputs (snr = 0) the gap "
        "exists only for p/n > 1 and small gamma (for p/n < 1 both tend to 1 - c). "
        f"Runtime {_runtime(measurement):.1f} s."
    )
    return notes, data


def _b5_theory(design: dict[str, Any], cval: float, snr: float, act: Any, gammas: np.ndarray) -> np.ndarray:
    """The null theory (``snr = 0``: the claim's prediction) or, with signal, the structured theory of
    :mod:`theory.structured` (the project's derivation, judged in B7; drawn here for reference only)."""
    if snr == 0.0:
        return _attention_theory(gammas, cval, act)
    from theory.structured import structured_attention_error

    return np.asarray(structured_attention_error(gammas, cval, act, snr), dtype=float).reshape(np.shape(gammas))


def _b5_panel(ax: Any, design: dict[str, Any], data: dict[str, Any], comps: list[Comparison], cval: float,
              snr: float) -> None:
    """One (p/n, snr): dense theory of both activations, paired Monte Carlo, the paired differences' outcomes."""
    from .. import figures as F

    g = design["gammas"]
    dd = data[_b5_key(cval, snr)]
    style = "-" if snr == 0.0 else "--"
    for k, (key, act, name) in enumerate((("cos", "cos", "cos"), ("lin", design["lin"], "scaled tanh"))):
        F.theory_curve(ax, g, lambda x, a=act: _b5_theory(design, cval, snr, a, x), color=F.COLORS[k], pad=0.5,
                       per_decade=10, ls=style, label="_nolegend_")
        F.mc_points(ax, g, dd[key], dd[f"{key}_se"], label="_nolegend_", color=F.COLORS[k], marker="os"[k])
    mine = [c for c in comps if c.name.startswith(f"p/n={cval} snr={snr} ")]
    lines = ["Δ = E_cos − E_tanh (paired)"] + [f"γ = {gv:g}: Δ = {c.measured:.3g} ± {c.uncertainty:.2g}"
                                                for gv, c in zip(g, mine)]
    ax.set(xscale="log", yscale="log", xlabel="ridge parameter γ", ylabel="interpolation error E",
           title=f"p/n = {cval:g}, ‖μ‖² = {snr:g}" + (" (null model)" if snr == 0.0 else " (with signal)"))
    F.tidy_log_axis(ax)
    F.key_numbers(ax, lines, verdict=F.worst_outcome(mine))


def _b5_legend_entries(design: dict[str, Any]) -> list[Any]:
    from .. import figures as F

    return [F.proxy(r"cos, centred ($a_1 = 0$)", color=F.COLORS[0], marker="o"),
            F.proxy(f"{design['scale']:.3f} tanh ($a_1$ = {design['m_lin'].a1:.3f}), same ν", color=F.COLORS[1],
                    marker="s"),
            F.proxy("theory, null model (the prediction)", color=F.THEORY, marker=None, ls="-"),
            F.proxy("structured theory with signal (project's derivation, judged in B7; reference only)",
                    color=F.THEORY, marker=None, ls="--"),
            F.proxy("Monte Carlo, paired draws, ±3 SE", color=F.THEORY, marker="o")]


@paper_figure
def _figure_b5(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any],
               judgement: Judgement) -> Any:
    """Per configuration: cos vs the scaled tanh of equal nu (dense theory, paired Monte Carlo, the differences)."""
    from .. import figures as F

    verdict, comps = judgement.verdict, list(judgement.comparisons)
    configs = design["configs"]
    fig, axes = F.subplots(1, len(configs), panel=(3.9, 3.3), extra=1.2)
    data = _b5_data(design, prediction, measurement)
    for ax, (cval, snr) in zip(axes[0], configs):
        _b5_panel(ax, design, data, comps, cval, snr)
    F.legend(axes[0, 0], extra=_b5_legend_entries(design), outside=True, ncol=3)
    F.suptitle(fig, "B5", "cos (no linear Hermite component) vs a linear-component activation at equal ν",
               f"n = {design['n']}, {design['trials']} paired trials (‖μ‖² = 0: label-averaged), ν = "
               f"{design['m_cos'].nu:.4f}; claim: E_cos − E_tanh > 0 (paired, > 3 SE)", verdict)
    return fig


CLAIM_B5 = register(Claim(id="B5", design=_design_b5, predict=_predict_b5, simulate=_simulate_b5, judge=judge_b5,
                          describe=_describe_b5, figure=_figure_b5, figure_name="cos_vs_linear"))
check_b5 = CLAIM_B5.run


# ---------------------------------------------------------------------------------------------
# B6: kernel eigenvalue distribution vs the free-convolution law
# ---------------------------------------------------------------------------------------------
def _theory_cdf(c: float, a1: float, nu: float, lo: float, hi: float, m: int = 4001) -> tuple[np.ndarray, np.ndarray, float]:
    import theory
    from scipy.integrate import cumulative_trapezoid

    x = np.linspace(lo, hi, m)
    dens = np.asarray(theory.kernel_density(x, c, a1, nu), dtype=float)
    cdf = cumulative_trapezoid(dens, x, initial=0.0)
    return x, cdf, float(cdf[-1])


def _ks(ev: np.ndarray, x: np.ndarray, cdf: np.ndarray) -> float:
    ev = np.sort(ev)
    F = np.interp(ev, x, cdf)
    k = np.arange(1, ev.size + 1) / ev.size
    return float(max(np.max(np.abs(k - F)), np.max(np.abs(k - 1.0 / ev.size - F))))


def _kernel_spectra(seed: int, n: int, p: int, trials: int, act: str, n_jobs: int) -> np.ndarray:
    """Eigenvalues ``(trials, n)`` of ``trials`` null kernels: the draws come in order from one stream, the
    eigendecompositions run in ``n_jobs`` threads (single-threaded torch each): results do not depend on ``n_jobs``."""
    rng = np.random.default_rng(seed)
    draws = (sample_signal_plus_noise(n, p, 0.0, rng)[0] for _ in range(trials))
    return np.stack(_map_threads(lambda X: kernel_eigenvalues(X, act, "removed"), draws, n_jobs))


@dataclass(frozen=True)
class KernelLaw:
    """B6's predicted eigenvalue law: :func:`theory.kernel_density` at ``p/n = c`` and Hermite moments ``a1, nu``.

    A judge only calls :meth:`cdf`; a synthetic law for tests needs that method only.
    """

    c: float
    a1: float
    nu: float

    def cdf(self, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray, float]:
        """``(x, CDF(x), mass)`` on ``[lo, hi]`` (trapezoid integral of the density; ``mass`` its total)."""
        return _theory_cdf(self.c, self.a1, self.nu, lo, hi)

    def density(self, x: np.ndarray) -> np.ndarray:
        import theory

        return theory.kernel_density(x, self.c, self.a1, self.nu)


def _b6_key(act: str, cval: float) -> str:
    return f"{act}_c{cval}"


def _design_b6(ctx: CheckContext) -> dict[str, Any]:
    """Configurations ``(activation, p/n)``, the size ``n`` (spectra at ``n`` and ``2n``), trials at each."""
    cfg = _cfg(ctx, "B6")
    return dict(n=cfg["n"], trials=cfg["trials"], configs=[("tanh", 2.0), ("relu", 2.0), ("tanh", 0.5)])


def _predict_b6(ctx: CheckContext, design: dict[str, Any]) -> dict[str, dict[str, KernelLaw]]:
    """By configuration key: ``law`` (the theory) and ``wrong`` (nu x 1.03: the negative control)."""
    import theory

    out = {}
    for act, cval in design["configs"]:
        mom = theory.hermite_moments(theory.activation(act, centered=True))
        out[_b6_key(act, cval)] = dict(law=KernelLaw(cval, mom.a1, mom.nu),
                                       wrong=KernelLaw(cval, mom.a1, 1.03 * mom.nu))
    return out


def _spectra_cached(ctx: CheckContext, act: str, cval: float, n: int, trials: int) -> np.ndarray:
    sd = ctx.seed_for("B6", act, cval, n)
    p = _p_of(n, cval)

    def eig_cell() -> dict[str, np.ndarray]:
        return {"eigenvalues": _kernel_spectra(sd, n, p, trials, act, ctx.n_jobs)}

    key = dict(act=act, c=cval, n=n, p=p, trials=trials, seed=sd)
    return ctx.cached("kernel_eigenvalues", key, eig_cell, version=mc_version(_kernel_spectra))["eigenvalues"]


def _simulate_b6(ctx: CheckContext, design: dict[str, Any]) -> dict[str, Any]:
    """``spectra``: by configuration key, eigenvalues ``(trials, size)`` at ``n`` and at ``2n``; ``runtime_s``."""
    t0 = time.perf_counter()
    n, (t1, t2) = design["n"], design["trials"]
    spectra = {}
    with ctx.progress("kernel spectra", total=len(design["configs"])) as bar:
        for act, cval in design["configs"]:
            sizes = ((n, t1), (2 * n, t2))
            spectra[_b6_key(act, cval)] = tuple(_spectra_cached(ctx, act, cval, nn, tr) for nn, tr in sizes)
            bar.advance()
    return dict(spectra=spectra, runtime_s=time.perf_counter() - t0)


def b6_reading(law: Any, spectra: tuple[np.ndarray, np.ndarray]) -> dict[str, Any]:
    """Per-trial KS distances of the spectra at ``n`` and ``2n`` against ``law.cdf`` on the eigenvalue window
    (widened by 0.5), their means ``m1, m2`` and the ratio ``m2 / m1`` with its delta-method SE (pure)."""
    ev_n, ev_2n = spectra
    allev = np.concatenate([np.ravel(ev_n), np.ravel(ev_2n)])
    lo, hi = float(allev.min()) - 0.5, float(allev.max()) + 0.5
    x, cdf, mass = law.cdf(lo, hi)
    ks_n = np.array([_ks(e, x, cdf) for e in ev_n])
    ks_2n = np.array([_ks(e, x, cdf) for e in ev_2n])
    m1, m2 = ks_n.mean(), ks_2n.mean()
    s1 = ks_n.std(ddof=1) / math.sqrt(ks_n.size)
    s2 = ks_2n.std(ddof=1) / math.sqrt(ks_2n.size)
    ratio = m2 / m1
    se_ratio = ratio * math.sqrt((s1 / m1) ** 2 + (s2 / m2) ** 2)
    return dict(lo=lo, hi=hi, mass=mass, ks_n=ks_n, ks_2n=ks_2n, m1=m1, m2=m2, ratio=ratio, se_ratio=se_ratio)


def _b6_comparisons(name: str, n: int, r: dict[str, Any]) -> list[Comparison]:
    ratio, mass = r["ratio"], r["mass"]
    return [
        Comparison.bound(
            f"{name}: KS(2n)/KS(n), n={n} (KS {r['m1']:.3g} -> {r['m2']:.3g})", 0.5, float(ratio),
            float(r["se_ratio"]), float(ratio - 2**-0.5),
            rule=(
                "ratio <= 2^-1/2 = 0.707 (KS must decay at least like n^-1/2; O(1/n) predicts 0.5; "
                "a wrong law gives ratio -> 1; delta-method SE)"
            ),
        ),
        Comparison(
            name=f"{name}: mass of theory.kernel_density on [{r['lo']:.2f}, {r['hi']:.2f}]",
            predicted=1.0,
            measured=float(mass),
            uncertainty=None,
            tolerance=(
                "|mass - 1| < 0.01 (quadrature mass check: the KS distances above use this trapezoid CDF, "
                "so a density missing > 1% of its mass would bias every KS value by about that much)"
            ),
            passed=bool(abs(mass - 1) < 0.01),
        ),
    ]


def judge_b6(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any]) -> list[Comparison]:
    """Per configuration: the KS ratio bound and the quadrature mass of the law (pure)."""
    comps = []
    for act, cval in design["configs"]:
        key = _b6_key(act, cval)
        r = b6_reading(prediction[key]["law"], measurement["spectra"][key])
        comps += _b6_comparisons(f"{act} p/n={cval}", design["n"], r)
    return comps


def _ks_control(wrong: Any, spectra: tuple[np.ndarray, np.ndarray], lo: float, hi: float) -> float:
    """Negative control (power of the rule): the KS ratio of the same eigenvalues against the wrong law."""
    xw, cdfw, _ = wrong.cdf(lo, hi)
    ev_n, ev_2n = spectra
    return float(np.mean([_ks(e, xw, cdfw) for e in ev_2n]) / np.mean([_ks(e, xw, cdfw) for e in ev_n]))


def _describe_b6(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any],
                 comparisons: list[Comparison]) -> tuple[str, dict[str, Any]]:
    data: dict[str, Any] = {}
    controls: list[str] = []
    for act, cval in design["configs"]:
        key = _b6_key(act, cval)
        law, spectra = prediction[key]["law"], measurement["spectra"][key]
        r = b6_reading(law, spectra)
        ratio_wrong = _ks_control(prediction[key]["wrong"], spectra, r["lo"], r["hi"])
        controls.append(f"{act} p/n={cval}: {ratio_wrong:.2f}")
        data[key] = dict(ks_n=r["ks_n"], ks_2n=r["ks_2n"], mass=r["mass"], a1=law.a1, nu=law.nu,
                         ratio_control_nu_x1_03=ratio_wrong)
    notes = (
        "K = f(X^T X / sqrt p) / sqrt p, diagonal removed, X standard Gaussian; per-trial Kolmogorov distance between "
        "the eigenvalue ECDF and the CDF of theory.kernel_density (trapezoid integral, its mass reported). "
        "Negative control (not a comparison): the same eigenvalues against the law with nu multiplied by 1.03 give "
        f"KS ratios {', '.join(controls)} (a wrong law does not shrink, so the rule has power at this size). "
        f"Runtime {_runtime(measurement):.1f} s."
    )
    return notes, data


def _b6_ecdf_gap(ax: Any, ev: np.ndarray, x: np.ndarray, cdf: np.ndarray, color: str, label: str) -> None:
    """ECDF minus the law's CDF of one spectrum (a step curve) and its Kolmogorov distance (dotted level)."""
    ev = np.sort(ev)
    F = np.interp(ev, x, cdf)
    k = np.arange(1, ev.size + 1) / ev.size
    ax.step(ev, k - F, where="post", color=color, lw=1.0, label=f"{label} (KS {_ks(ev, x, cdf):.3f})")
    ax.axhline(_ks(ev, x, cdf), color=color, ls=":", lw=0.9)
    ax.axhline(-_ks(ev, x, cdf), color=color, ls=":", lw=0.9)


def _b6_column(ax: Any, rax: Any, design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any],
               comps: list[Comparison], act: str, cval: float) -> None:
    """One configuration: histogram at 2n and the density; below, ECDF - CDF of one trial at n and at 2n."""
    from .. import figures as F

    n, key = design["n"], _b6_key(act, cval)
    law, spectra = prediction[key]["law"], measurement["spectra"][key]
    r = b6_reading(law, spectra)
    ax.hist(np.ravel(spectra[1]), bins=60, density=True, color=F.OKABE_ITO["sky"], alpha=0.7,
            label=f"eigenvalues at 2n (histogram, {spectra[1].shape[0]} trials)")
    xx = np.linspace(r["lo"], r["hi"], 800)
    ax.plot(xx, law.density(xx), "-", color=F.THEORY, lw=1.4, label="theory: free-convolution law")
    x, cdf, _ = law.cdf(r["lo"], r["hi"])
    _b6_ecdf_gap(rax, spectra[0][0], x, cdf, F.COLORS[0], "one trial at n")
    _b6_ecdf_gap(rax, spectra[1][0], x, cdf, F.COLORS[1], "one trial at 2n")
    rax.axhline(0.0, color="#777777", lw=0.8)
    ax.set(ylabel="density", title=f"f = {act}, p/n = {cval:g}: n = {n}, 2n = {2 * n}")
    rax.set(xlabel="eigenvalue λ of K", ylabel="ECDF − CDF")
    mine = [c for c in comps if c.name.startswith(f"{act} p/n={cval}:")]
    control = _ks_control(prediction[key]["wrong"], spectra, r["lo"], r["hi"])
    F.key_numbers(ax, [f"mean KS: {r['m1']:.4f} (n) → {r['m2']:.4f} (2n)",
                       f"ratio {r['ratio']:.3f} ± {r['se_ratio']:.3f} (≤ 0.707)", f"mass of the law {r['mass']:.4f}",
                       f"negative control (ν × 1.03): ratio {control:.2f}"], verdict=F.worst_outcome(mine))
    F.legend(rax, loc="lower right", fontsize=F.FONT["legend"] - 0.5,
             extra=[F.proxy("dotted: ± the trial's KS distance", marker=None, ls=":")])


@paper_figure
def _figure_b6(design: dict[str, Any], prediction: dict[str, Any], measurement: dict[str, Any],
               judgement: Judgement) -> Any:
    """Kernel spectra against the free-convolution law: densities (top), ECDF - CDF with the KS distance (bottom)."""
    from .. import figures as F

    verdict, comps = judgement.verdict, list(judgement.comparisons)
    configs = design["configs"]
    fig, axes = F.subplots(2, len(configs), panel=(3.9, 2.3), extra=1.1, sharex="col", height_ratios=(2.3, 1.5))
    for j, (act, cval) in enumerate(configs):
        _b6_column(axes[0, j], axes[1, j], design, prediction, measurement, comps, act, cval)
    F.legend(axes[0, 0], outside=True, ncol=2, axes=[axes[0, 0]])
    t1, t2 = design["trials"]
    F.suptitle(fig, "B6", "eigenvalues of the null kernel f(XᵀX/√p)/√p (diagonal removed) vs theory",
               f"X standard Gaussian; {t1} trials at n, {t2} at 2n; claim: KS(2n)/KS(n) ≤ $2^{{-1/2}}$ "
               "(O(1/n) gives 0.5)",
               verdict)
    return fig


CLAIM_B6 = register(Claim(id="B6", design=_design_b6, predict=_predict_b6, simulate=_simulate_b6, judge=judge_b6,
                          describe=_describe_b6, figure=_figure_b6, figure_name="kernel_spectrum"))
check_b6 = CLAIM_B6.run
