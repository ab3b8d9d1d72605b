"""Claim B8 (beyond the papers; paper B, Remark 5): the entrywise theory predicts softmax attention's error.

:mod:`theory.softmax` (the project's derivation, ``docs/softmax.md``) predicts softmax attention, diagonal masked,
from paper B's theory of the entrywise ``f_beta(x) = exp(beta x - beta^2/2) - 1`` (``a1 = beta``,
``nu = exp(beta^2) - 1``), ``gamma`` rescaled by ``p / (n - 1)^2`` and, at finite ``p``, the diagonal
``d0 = -1 / sqrt p`` of the masked mean term (every constant derived, none fitted; the limit ``d0 = 0`` is reported).

One Monte Carlo cell per ``(c, input, n)``: one draw ``X, y`` per trial feeds softmax attention and the entrywise
kernel for every ``beta`` and spike, and ridge (:func:`numerics.softmax.softmax_error_mc`).  Inputs: the null
model (``snr = 0``, exact average over Rademacher labels) and ``snr = 1`` with balanced labels (at the paper
profile also an aligned spike ``w_K = w_Q = e_1``), at three sizes ``n`` and ``c = p / n`` on both sides of 1.

Rule (``beta`` in ``BETAS``): the finite-size rule of :mod:`verify.checks._finite_size` (Student-t on the estimated
SEs) on the gaps to the prediction at the two largest sizes; ``beta`` in ``BEYOND``: the same rule on the same draws,
reported, not judged.  ``tests/verify/test_judges_b8.py`` measures the judge's false-FAIL rate and power."""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from numerics.slopes import design_slope
from theory.softmax import softmax_attention_error, softmax_normaliser_spread

from ..statistics import mean_se
from ..claim import Claim, register
from .. import figures as F
from ..verdicts import Judgement
from ..context import CheckContext
from ..results import Comparison, with_key
from ..typeset import md_table
from ._finite_size import FiniteSizeTest, finite_size_test
from ._paper_b import cell_model, mc_settings, mc_version, model_key, p_of, settings_key

#: inverse temperatures of the claim (judged)
BETAS = (0.25, 0.5, 1.0)
#: large inverse temperatures read with the same rule, reported and not judged (where the theory stops)
BEYOND = (2.0,)
#: a spike: ``(strength, "aligned" | "orthogonal")``; ``NO_SPIKE`` is ``W = I``
NO_SPIKE = (0.0, "none")
#: solver of the predictions: Gauss-Chebyshev quadrature (5x faster than the exact partial fractions, equal to
#: them within 1e-12 on the profiles' configurations: tests/numerics/test_softmax.py)
SOLVER = dict(method="quadrature", n_nodes=200)

#: one configuration: ``(c, snr, spike, beta)``
Config = tuple[float, float, tuple[float, str], float]


# ============================================================================ design
@dataclass(frozen=True)
class Inputs:
    """One input of the design: ``snr = ||mu||^2`` (``0``: the null model, exact label average) and the spikes
    simulated on its draws (``NO_SPIKE``: ``W = I``)."""

    snr: float
    spikes: tuple[tuple[float, str], ...] = (NO_SPIKE,)

    @property
    def label_average(self) -> bool:
        return self.snr == 0.0


@dataclass(frozen=True)
class B8Design:
    """B8's grid at one profile: token counts ``sizes`` (increasing; the rule uses the last two, :attr:`pair`),
    trials per size of the null model and with signal, ``gammas`` in paper B's units, aspect ratios ``cs``, the
    ``inputs`` and the inverse temperatures judged (``betas``) and reported only (``beyond``), on the same draws."""

    sizes: tuple[int, ...]
    trials_null: tuple[int, ...]
    trials_signal: tuple[int, ...]
    gammas: tuple[float, ...]
    cs: tuple[float, ...] = (0.5, 2.0)
    inputs: tuple[Inputs, ...] = (Inputs(0.0), Inputs(1.0))
    betas: tuple[float, ...] = BETAS
    beyond: tuple[float, ...] = BEYOND

    def trials(self, inputs: Inputs, n: int) -> int:
        table = self.trials_null if inputs.label_average else self.trials_signal
        return int(table[self.sizes.index(n)])

    @property
    def all_betas(self) -> tuple[float, ...]:
        return self.betas + self.beyond

    @property
    def pair(self) -> tuple[int, int]:
        """The sizes of the finite-size rule ``(n_s, n_l)``."""
        return self.sizes[-2], self.sizes[-1]

    def configs(self) -> list[Config]:
        """Every ``(c, snr, spike, beta)``, in report order (c, input, spike, beta)."""
        return [(c, inp.snr, sp, b) for c in self.cs for inp in self.inputs for sp in inp.spikes
                for b in self.all_betas]


_GAMMAS = (1e-2, 1e-1, 1.0)
_ALIGNED = (1.0, "aligned")

_PROFILES = {
    "smoke": B8Design(sizes=(8, 16, 32), trials_null=(3, 3, 3), trials_signal=(3, 3, 3), gammas=(1e-1, 1.0)),
    "quick": B8Design(sizes=(64, 128, 256), trials_null=(32, 16, 8), trials_signal=(48, 32, 16), gammas=_GAMMAS),
    # paper: structured inputs with an aligned spike as well (same draws as W = I)
    "paper": B8Design(sizes=(256, 512, 1024), trials_null=(48, 24, 12), trials_signal=(64, 32, 16), gammas=_GAMMAS,
                      inputs=(Inputs(0.0), Inputs(1.0, (NO_SPIKE, _ALIGNED)))),
}


def _spike_arg(spike: tuple[float, str]) -> tuple[float, str] | None:
    return None if spike[1] == "none" else spike


def _spike_label(spike: tuple[float, str]) -> str:
    return "W = I" if spike[1] == "none" else f"{spike[1]} {spike[0]:g}"


def _input_label(snr: float, spike: tuple[float, str]) -> str:
    return ("null" if snr == 0 else f"snr={snr:g}") + ("" if spike[1] == "none" else f" {_spike_label(spike)}")


def design_b8(ctx: CheckContext) -> B8Design:
    return _PROFILES[ctx.profile]


# ============================================================================ prediction
@dataclass(frozen=True)
class B8Prediction:
    """Theory on the design's gammas: ``finite`` (``(config, n) -> E`` with ``d0 = -1/sqrt p``, judged), ``limit``
    (``config -> E``, ``d0 = 0``) and ``spread`` (``(c, beta, n) ->`` relative SD of the normalisers)."""

    finite: dict
    limit: dict
    spread: dict


def _theory(gammas: Any, cfg: Config, p: int | None = None) -> np.ndarray:
    """:func:`theory.softmax.softmax_attention_error` of a configuration at ``p`` (``None``: the limit)."""
    c, snr, spike, beta = cfg
    return np.asarray(softmax_attention_error(gammas, c, beta, snr, _spike_arg(spike), p=p, **SOLVER), float)


def predict_b8(ctx: CheckContext, design: B8Design) -> B8Prediction:
    """:func:`theory.softmax.softmax_attention_error` at every size (finite ``p``) and in the limit."""
    g, cfgs, sizes = np.asarray(design.gammas, float), design.configs(), design.sizes
    return B8Prediction(finite={(cfg, n): _theory(g, cfg, p_of(n, cfg[0])) for cfg in cfgs for n in sizes},
                        limit={cfg: _theory(g, cfg) for cfg in cfgs},
                        spread={(c, beta, n): softmax_normaliser_spread(beta, n, p_of(n, c))
                                for c, _, _, beta in cfgs for n in sizes})


# ============================================================================ simulation
def _softmax_cell(ctx: CheckContext, design: B8Design, c: float, inputs: Inputs, n: int) -> dict[str, np.ndarray]:
    """One cell on shared draws, memoised on disk (``ctx.cached``; resumable)."""
    import numerics.softmax
    import theory.softmax

    p, g = p_of(n, c), np.asarray(design.gammas, float)
    models = [cell_model(n, p, inputs.snr, spike=_spike_arg(s)) for s in inputs.spikes]
    seed = ctx.seed_for("B8", f"c={c:g}", f"snr={inputs.snr:g}", n)  # one X per cell: paired models
    settings = mc_settings(ctx, design.trials(inputs, n), seed)
    key = dict(n=n, p=p, gammas=g, betas=[float(b) for b in design.all_betas], models=[model_key(m) for m in models],
               label_average=inputs.label_average, normalise="keys", **settings_key(settings))
    compute = functools.partial(numerics.softmax.softmax_error_mc, models, p, g, design.all_betas, settings,
                                label_average=inputs.label_average)
    return ctx.cached("softmax_mc", key, compute, version=mc_version(numerics.softmax, theory.softmax))


def simulate_b8(ctx: CheckContext, design: B8Design) -> dict[str, Any]:
    """``cells``: ``(c, snr, n) -> {"softmax", "entrywise": (betas, spikes, trials, G), "ridge": (trials, G)}``,
    ``runtime_s``."""
    t0 = time.perf_counter()
    grid = [(c, inputs, n) for c in design.cs for inputs in design.inputs for n in design.sizes]
    cells: dict = {}
    with ctx.progress("softmax vs entrywise vs ridge, paired draws", total=len(grid)) as bar:
        for c, inputs, n in grid:
            cells[(c, inputs.snr, n)] = _softmax_cell(ctx, design, c, inputs, n)
            bar.advance()
    return dict(cells=cells, runtime_s=time.perf_counter() - t0)


# ============================================================================ readings (pure)
#: a point's numbers at one size besides ``p``, ``trials``: softmax, entrywise (same draws), their paired difference
#: (mean, SE each), the prediction
_STATS = ("softmax", "se_softmax", "entrywise", "se_entrywise", "softmax_minus_entrywise", "se_diff", "prediction")


@dataclass(frozen=True)
class B8Point:
    """One ``(c, snr, spike, beta, gamma)``: ``sizes`` (``n -> {"p", "trials", *_STATS}``), the rule's ``pair``
    ``(n_s, n_l)``, the ``limit`` (``d0 = 0``) and whether ``beta`` is ``judged``."""

    cfg: Config
    gamma: float
    sizes: dict
    pair: tuple[int, int]
    limit: float
    judged: bool

    def rule(self, against_limit: bool = False) -> FiniteSizeTest:
        """The finite-size rule on the gaps to the prediction at each size (judged) or, ``against_limit``, to the
        limit (``d0 = 0``): what the finite-``p`` term changes."""
        s, l_ = (self.sizes[n] for n in self.pair)
        pred_s, pred_l = (self.limit, self.limit) if against_limit else (s["prediction"], l_["prediction"])
        return finite_size_test(0.0, s["softmax"] - pred_s, s["se_softmax"], l_["softmax"] - pred_l, l_["se_softmax"],
                                self.pair[0] / self.pair[1], (s["trials"], l_["trials"]))

    @property
    def name(self) -> str:
        c, snr, spike, beta = self.cfg
        return f"beta={beta:g} c={c:g} {_input_label(snr, spike)} gamma={self.gamma:g}"

    @property
    def key(self) -> tuple:
        c, snr, spike, beta = self.cfg
        return (("c", float(c)), ("input", _input_label(snr, spike)), ("beta", float(beta)), ("gamma", self.gamma))

    def gap(self, n: int) -> float:
        return self.sizes[n]["softmax"] - self.sizes[n]["prediction"]

    def rel_gap(self, n: int) -> float:
        return abs(self.gap(n)) / max(abs(self.sizes[n]["prediction"]), 1e-300)

    def trend(self) -> float:
        """Least-squares slope of ``log |gap|`` against ``log n`` over every size (``nan`` if a gap is zero)."""
        ns = sorted(self.sizes)
        gaps = np.abs([self.gap(n) for n in ns])
        return float("nan") if np.any(gaps <= 0) else design_slope(ns, gaps)


def b8_points(design: B8Design, prediction: B8Prediction, cells: dict) -> list[B8Point]:
    """Every point of the design, in report order (pure)."""
    out = []
    for cfg in design.configs():
        c, snr, spike, beta = cfg
        b = design.all_betas.index(beta)
        s = next(inp for inp in design.inputs if inp.snr == snr).spikes.index(spike)
        stats = {}  # n -> (trials, arrays over gammas in the order of _STATS)
        for n in design.sizes:
            soft, ew = (np.asarray(cells[(c, snr, n)][k][b, s], float) for k in ("softmax", "entrywise"))
            stats[n] = (int(soft.shape[0]), *mean_se(soft), *mean_se(ew), *mean_se(soft - ew),
                        prediction.finite[(cfg, n)])
        for j, g in enumerate(design.gammas):
            sizes = {n: dict(p=p_of(n, c), trials=trials, **{k: float(v[j]) for k, v in zip(_STATS, arrays)})
                     for n, (trials, *arrays) in stats.items()}
            out.append(B8Point(cfg, float(g), sizes, design.pair, float(prediction.limit[cfg][j]),
                               beta in design.betas))
    return out


# ============================================================================ judge (pure)
def judge_b8(design: B8Design, prediction: B8Prediction, measurement: dict[str, Any]) -> list[Comparison]:
    """The finite-size rule at every judged point (``beta`` in ``design.betas``); the first is the headline; pure."""
    ns, nl = design.pair
    comps: list[Comparison] = []
    for pt in (pt for pt in b8_points(design, prediction, measurement["cells"]) if pt.judged):
        st = pt.sizes[nl]
        cmp_ = pt.rule().comparison(pt.name, st["prediction"], st["softmax"], st["se_softmax"], f"n={ns}", f"n={nl}",
                                    headline=not comps, key=pt.key)
        comps.append(dataclasses.replace(
            cmp_, tolerance="gaps to the finite-size prediction (derived d0 = -1/sqrt p): " + cmp_.tolerance))
    return comps


# ============================================================================ describe (pure)
def _row(pt: B8Point, outcome: str) -> dict[str, Any]:
    c, snr, spike, beta = pt.cfg
    return dict(beta=beta, c=c, snr=snr, spike=_spike_label(spike), gamma=pt.gamma, judged=pt.judged,
                limit=pt.limit, sizes={str(n): s for n, s in pt.sizes.items()}, rule_passed=pt.rule().passed,
                rule_limit_passed=pt.rule(against_limit=True).passed, trend_exponent=pt.trend(), outcome=outcome)


def table_markdown(design: B8Design, points: list[B8Point], outcomes: dict[tuple, str]) -> str:
    """The table: beta, c, input, gamma; per size ``softmax MC +- SE (prediction)``; the limit; the verdict."""
    head = (["beta", "c", "input", "gamma"] + [f"n={n}: softmax +- SE (prediction)" for n in design.sizes]
            + ["limit (d0 = 0)", f"entrywise at n={design.pair[1]}", "gap trend n^k", "verdict"])
    rows, nl = [], design.pair[1]
    for pt in points:
        c, snr, spike, beta = pt.cfg
        cells = [f"{s['softmax']:.4f} +- {s['se_softmax']:.4f} ({s['prediction']:.4f})"
                 for _, s in sorted(pt.sizes.items())]
        verdict = outcomes.get(pt.key, "not judged (" + ("rule holds" if pt.rule().passed else "rule fails") + ")")
        rows.append([f"{beta:g}", f"{c:g}", _input_label(snr, spike), f"{pt.gamma:g}", *cells, f"{pt.limit:.4f}",
                     f"{pt.sizes[nl]['entrywise']:.4f}", f"{pt.trend():+.2f}", verdict])
    return "\n".join(md_table(head, rows))


def _by_beta_text(design: B8Design, points: list[B8Point], spread: dict) -> str:
    """Per beta: the points where the rule fails, the gaps resolved (``> 3 SE`` at ``n_l``) and the largest relative
    one at every size with its trend in ``n``; at ``n_l`` softmax - entrywise (the normalisation) against
    entrywise - limit, and the predicted relative spread of the normalisers (at the first ``c``)."""
    nl = design.pair[1]
    parts = []
    for beta in design.all_betas:
        mine = [pt for pt in points if pt.cfg[3] == beta]
        bad = [pt.name for pt in mine if not pt.rule().passed]
        res = [pt for pt in mine if abs(pt.gap(nl)) > 3 * pt.sizes[nl]["se_softmax"]]
        text = (f"beta={beta:g}{' (not judged)' if beta in design.beyond else ''}: rule fails at {len(bad)} of "
                f"{len(mine)} points" + (f" ({', '.join(bad)})" if bad else "") + f"; {len(res)} gaps > 3 SE")
        if res:
            worst = max(res, key=lambda pt: pt.rel_gap(nl))
            gaps = ", ".join(f"{worst.gap(n):+.4f} ({worst.rel_gap(n):.1%}) at n={n}" for n in design.sizes)
            text += f", the largest relative {worst.name}: MC - prediction {gaps}, trend n^{worst.trend():+.2f}"
        d = max(abs(pt.sizes[nl]["softmax_minus_entrywise"]) for pt in mine)
        e = max(abs(pt.sizes[nl]["entrywise"] - pt.limit) for pt in mine)
        parts.append(text + f"; max |softmax - entrywise| {d:.4f}, max |entrywise - limit| {e:.4f}; normaliser "
                     f"spread {spread[(design.cs[0], beta, nl)]:.3f}")
    return " | ".join(parts)


def describe_b8(design: B8Design, prediction: B8Prediction, measurement: dict[str, Any],
                comparisons: list[Comparison]) -> tuple[str, dict]:
    """Notes (design, failures by beta with the trend in n, where the gap comes from) and data (rows, table)."""
    points = b8_points(design, prediction, measurement["cells"])
    outcomes = {cp.key: cp.outcome for cp in comparisons}
    n_fail = sum(cp.outcome == "FAIL" for cp in comparisons)
    ns, nl = design.pair
    judged = [pt for pt in points if pt.judged]
    lim_bad = sum(not pt.rule(against_limit=True).passed for pt in judged)
    notes = (
        f"Simulation: n = {list(design.sizes)} (rule at n={ns} and n={nl}, p = c n), c = {list(design.cs)}, gammas "
        f"{list(design.gammas)}, inputs " + ", ".join(sorted({_input_label(c[1], c[2]) for c in design.configs()}))
        + f". {n_fail} of {len(comparisons)} judged comparisons fail (beta in {list(design.betas)}). By beta, at "
        f"n={nl} (normaliser spread at c={design.cs[0]:g}): " + _by_beta_text(design, points, prediction.spread)
        + ". Against the limit (d0 = 0), the rule "
        f"fails at {lim_bad} of {len(judged)} judged points. Runtime {float(measurement.get('runtime_s', 0.0)):.1f} s."
    )
    data = {"rows": [_row(pt, outcomes.get(pt.key, "NOT JUDGED")) for pt in points],
            "table_md": table_markdown(design, points, outcomes),
            "design": dict(sizes=list(design.sizes), pair=list(design.pair), cs=list(design.cs),
                           gammas=list(design.gammas), betas=list(design.betas), beyond=list(design.beyond),
                           trials_null=list(design.trials_null), trials_signal=list(design.trials_signal))}
    return notes, data


# ============================================================================ figure
def _panel(ax: Any, design: B8Design, points: list[B8Point], comps: list[Comparison], c: float, snr: float,
           spike: tuple[float, str]) -> None:
    """One (c, input): per beta the prediction at n_l (curve), the limit (dotted), softmax (o) and entrywise (x)."""
    nl = design.pair[1]
    ys: list[float] = []
    for k, beta in enumerate(design.all_betas):
        col = F.COLORS[k % len(F.COLORS)]
        sel = [pt for pt in points if pt.cfg == (c, snr, spike, beta)]
        g = np.array([pt.gamma for pt in sel])
        for p, style in ((p_of(nl, c), {}), (None, dict(ls=":", lw=1.0))):  # at n_l, then the limit
            F.theory_curve(ax, g, lambda x, b=beta, p=p: _theory(x, (c, snr, spike, b), p), color=col,
                           grid=F.dense_grid(g, per_decade=8, n_min=20), label="_nolegend_", **style)
        soft, ew = ([pt.sizes[nl][k] for pt in sel] for k in ("softmax", "entrywise"))
        F.mc_points(ax, g, soft, [pt.sizes[nl]["se_softmax"] for pt in sel], label="_nolegend_", color=col,
                    filled=[pt.judged for pt in sel])
        ax.plot(g * 1.08, ew, "x", color=col, ms=5, mew=1.2, zorder=4)
        ys += soft + ew
    mine = with_key(comps, c=float(c), input=_input_label(snr, spike))
    worst = max((pt.rel_gap(nl) for pt in points if pt.cfg[:3] == (c, snr, spike) and pt.judged), default=0.0)
    wide = min(ys) > 0 and max(ys) / min(ys) > 10  # a log axis where E spans a decade or more
    ax.set(xscale="log", yscale="log" if wide else "linear", xlabel="ridge parameter γ (paper B's units)",
           ylabel="interpolation error E",
           title=f"p/n = {c:g}, {_input_label(snr, spike)}\nn = {nl}, p = {p_of(nl, c)}")
    F.key_numbers(ax, [f"finite-size rule: {F.outcome_text(mine)}", f"max |rel. gap| (judged β): {worst:.1%}"],
                  verdict=F.worst_outcome(mine))


@F.paper_figure
def figure_b8(design: B8Design, prediction: B8Prediction, measurement: dict[str, Any], judgement: Judgement) -> Any:
    """E versus gamma per (c, input): softmax points, entrywise exponential points, the prediction curves."""
    verdict, comps = judgement.verdict, list(judgement.comparisons)
    points = b8_points(design, prediction, measurement["cells"])
    panels = [(inp.snr, s) for inp in design.inputs for s in inp.spikes]
    fig, axes = F.subplots(len(panels), len(design.cs), panel=(4.0, 3.1), extra=1.3)
    for i, (snr, spike) in enumerate(panels):
        for j, c in enumerate(design.cs):
            _panel(axes[i, j], design, points, comps, c, snr, spike)
    entries = [F.proxy(f"β = {b:g}" + (" (reported, not judged: open)" if b in design.beyond else ""),
                       color=F.COLORS[k % len(F.COLORS)], marker="s") for k, b in enumerate(design.all_betas)]
    F.legend(axes[0, 0], outside=True, ncol=3, axes=[axes[0, 0]], extra=[
        *entries, F.proxy("softmax attention, Monte Carlo ±3 SE", marker="o"),
        F.proxy("entrywise exp kernel (paper B's), same draws", marker="x"),
        F.proxy(f"prediction at n = {design.pair[1]} (d0 = −1/√p)", marker=None, ls="-"),
        F.proxy("prediction, limit n → ∞", marker=None, ls=":")])
    F.suptitle(fig, "B8", "softmax attention vs paper B's entrywise theory (f = exp(βx − β²/2) − 1)",
               f"softmax over keys, self score masked; γ of softmax = γ p/(n−1)²; rule at n = {design.pair[0]} and "
               f"{design.pair[1]}; null model label-averaged, signal ‖μ‖² = 1 with balanced labels", verdict)
    return fig


STATEMENT_B8 = "Paper B, Remark 5: the entrywise theory predicts softmax attention's interpolation error"

CLAIM_B8 = register(Claim(id="B8", paper="B", statement=STATEMENT_B8, design=design_b8, predict=predict_b8,
                          simulate=simulate_b8, judge=judge_b8, describe=describe_b8, figure=figure_b8,
                          figure_name="softmax_vs_theory"))
