"""Check B7 (and the machinery B4 and B7-lin share): attention with signal (``mu != 0``) and spiked weights
``W = I + w_K w_Q^T``.  B4 is :mod:`verify.checks.paper_b_alignment`, the B7-lin study
:mod:`verify.checks.paper_b_linearisation`.

The theory is the project's own derivation (:mod:`theory.structured`, ``docs/structured_attention.md``):
a finite-rank perturbation of the null resolvent of the *linearised* kernel, built on the corrected
(symmetric-noise) null system of :mod:`theory.attention`; SPEC's null system is evaluated alongside for an
informational comparison (``data["null_systems"]``, not judged).  Simulations use the TRUE
kernel ``f(X^T W X / sqrt p) / sqrt p`` (tanh, diagonal removed) and the LINEARISED kernel on the same
``X`` draws, both through :func:`numerics.simulate_model` (a sequence of models: one draw per trial for every
spike, both kernels and ridge), so that the error of the derivation and the error of the linearisation separate.

B7 has two families of comparisons: theory vs TRUE-kernel MC for the configurations inside the declared
regime ``kappa(2p) <= KAPPA_MAX`` (:func:`theory.structured.linearisation_control`; the others are
reported in ``notes``/``data``, not judged), and theory vs LINEARISED-kernel MC (same ``X``) for every
configuration.  The linearisation-breakdown study (true vs linearised vs theory over ``p``) is
informational: its own report entry ``B7-lin`` (INFO verdict, never in the exit status).

Monte Carlo cells: one cell = one ``(c, snr, p)`` and all its models on the SAME draws ``X, y``
(:func:`numerics.simulate_model` of the models of every spike: ``X^T X`` once; true and linearised kernel for
every spike and ridge), memoised on disk by ``ctx.cached`` so that an interrupted run resumes from the finished
cells (``--cache-dir``; same seeds, same numbers).  B7 and B4 share one grid of cells (:func:`grid_cell`, B7's seeds
and entries): B4 reads B7's draws instead of drawing its own (their true-kernel cells were the same models at the
same sizes; B4 cost 121 s of the paper profile, nearly all of it those cells).  B7-lin draws its own.

Conventions: ``mu = sqrt(snr) e_1``; a spike ``(strength, "aligned")`` is ``w_K = w_Q = sqrt(strength) e_1``,
``(strength, "orthogonal")`` is ``w_K = w_Q = sqrt(strength) e_2``.  Spike configurations of one
``(c, snr, p)`` share their seeds, hence their ``X`` (paired differences, common random numbers).

Finite-size rule (B7, B4; shared with B1/B2, :mod:`verify.checks._finite_size`): the Monte Carlo is run
at ``p`` and ``2p`` (``n = p / c``).  With ``g_1, g_2`` the gaps to theory at the two sizes, PASS iff
``|g_2| <= q |g_1| + 3 hypot(SE_2p, q SE_p)``, ``q = 2^{-1/2}``: the gap measured at ``p`` propagated to
``2p`` at the slowest declared rate ``p^{-1/2}`` (the linearisation error, ``kappa``, decays at that rate),
plus three standard deviations of the test statistic (earlier forms: ``docs/design_notes.md``).

Each check is a :class:`verify.claim.Claim` (``CLAIM_B7``, ``CLAIM_B7_LIN``, ``CLAIM_B4``): ``design`` reads
the one profile table ``STRUCTURED_PROFILES``; ``predict`` evaluates :mod:`theory.structured` (and ridge's error for B4:
its theory statements, reversal scans and figure curves are predictions); ``simulate`` returns the cached
cells of :func:`shared_mc` as trial arrays keyed ``(c, snr, p)`` (B7-lin: ``p``); ``judge`` is pure and
builds every comparison from the prediction and those trial arrays (``tests/verify/test_judges_b_structured.py``
measures the false-FAIL rate and power of the B4 and B7 judges on synthetic trials); ``describe`` writes
the notes and data; ``figure`` draws from the same three objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..statistics import mean_se
from ..claim import Claim, register
from ..figures import paper_figure
from ..verdicts import Judgement
from ..context import CheckContext
from ..results import Comparison, with_key
from ._finite_size import FiniteSizeTest, finite_size_test


from ._structured import (ACTIVATION, attention_model, Cells, Config, gamma_columns, grid_cell, KAPPA_MAX, sizes_at,
                          sizes_text, spike_label, structured_profile, structured_theory, StructuredProfile)


def _finite_size_rule(pred: float, m1: float, s1: float, m2: float, s2: float, p1: int, p2: int,
                      trials: tuple[int, int] | None = None):
    """The shared finite-size rule (:mod:`verify.checks._finite_size`) at ``p1 < p2``: (passed, allowance, test);
    ``trials`` (at ``p1``, ``p2``): the standard errors are estimated from that many trials (Student-t).
    ``passed`` is the per-point 3-sigma reading (tables); the verdict uses ``test.p_value`` with Holm."""
    t = finite_size_test(pred, m1, s1, m2, s2, p1 / p2, trials)
    return t.passed, t.allowance, t



# ============================================================================ B7
@dataclass(frozen=True)
class B7Design:
    """The B7 grid: every ``(c, snr, spike)`` of the profile, simulated at the finite-size pair of its ``c``.

    Attributes
    ----------
    prof : the profile (``STRUCTURED_PROFILES``).
    gammas : ridge parameters of every configuration.
    sizes : ``c -> ((p, 2p), trials)`` (:func:`sizes_at`).
    """

    prof: StructuredProfile
    gammas: np.ndarray
    sizes: dict

    @property
    def configs(self) -> list[Config]:
        """Every ``(c, snr, spike)``, in the order of the comparisons (c, then snr, then spike)."""
        return [(c, snr, spike) for c in self.prof.cs for snr in self.prof.snrs for spike in self.prof.spikes]


@dataclass(frozen=True)
class B7Prediction:
    """Theory of every configuration ``(c, snr, spike)`` on ``B7Design.gammas``.

    Attributes
    ----------
    theory : corrected (symmetric-noise) null system: the judged prediction.
    theory_spec : SPEC's null system (informational, ``data["null_systems"]``).
    kappa : linearisation control at the large size; inside the declared regime iff ``<= KAPPA_MAX``.
    """

    theory: dict
    theory_spec: dict
    kappa: dict


@dataclass(frozen=True)
class _Gap:
    """Monte Carlo mean and SE of one point at ``p`` and ``2p``, and the finite-size test against theory."""

    m1: float
    se1: float
    m2: float
    se2: float
    test: FiniteSizeTest


@dataclass(frozen=True)
class _B7Point:
    """One ``(c, snr, spike, gamma)`` of B7: theory, regime, true-kernel and linearised-kernel gaps."""

    c: float
    snr: float
    spike: tuple[float, str]
    gamma: float
    kappa: float
    pred: float
    pred_spec: float
    p1: int
    p2: int
    trials: int
    true: _Gap
    lin: _Gap

    @property
    def inside(self) -> bool:
        return self.kappa <= KAPPA_MAX

    def key(self, kernel: str) -> dict:
        """The comparison key of the point against the ``kernel`` (``"true"`` or ``"linearised"``)."""
        return {"c": self.c, "snr": self.snr, "spike": spike_label(self.spike), "gamma": self.gamma,
                "kernel": kernel}

    @property
    def name(self) -> str:
        return f"c={self.c:g} snr={self.snr:g} spike={spike_label(self.spike)} gamma={self.gamma:g}"


def design_b7(ctx: CheckContext) -> B7Design:
    """B7's grid for ``ctx.profile`` (``STRUCTURED_PROFILES``)."""
    prof = structured_profile(ctx)
    return B7Design(prof=prof, gammas=np.array(prof.gammas), sizes={c: sizes_at(prof, c) for c in prof.cs})


def predict_b7(ctx: CheckContext, design: B7Design) -> B7Prediction:
    """Structured theory (both null systems) and ``kappa(2p)`` of every configuration."""
    theory, spec, kappa = {}, {}, {}
    for cfg in design.configs:
        c, snr, spike = cfg
        theory[cfg] = structured_theory(design.gammas, c, snr, spike)
        spec[cfg] = structured_theory(design.gammas, c, snr, spike, system="spec")  # informational comparison only
        kappa[cfg] = attention_model(c, snr, spike).linearisation_control(design.sizes[c][0][1])
    return B7Prediction(theory=theory, theory_spec=spec, kappa=kappa)


def simulate_b7(ctx: CheckContext, design: B7Design) -> Cells:
    """The cells ``(c, snr, p) -> {"true", "linearised": (spikes, trials, gammas)}``, both kernels on the same X."""
    prof = design.prof
    cells: Cells = {}
    total = len(prof.cs) * len(prof.snrs) * 2
    with ctx.progress("structured MC grid (true + linearised kernel, all spikes per cell)", total=total) as bar:
        cols = gamma_columns(prof, design.gammas)
        for c in prof.cs:
            (p1, p2), trials = design.sizes[c]
            for snr in prof.snrs:
                for p in (p1, p2):
                    cell = grid_cell(ctx, c, snr, p)
                    cells[(c, snr, p)] = {k: cell[k][..., cols] for k in ("true", "linearised")}
                    bar.advance()
    return cells


def _b7_config_points(design: B7Design, prediction: B7Prediction, cells: Cells, cfg: Config) -> list[_B7Point]:
    """The points of one configuration (one per gamma), with both kernels' finite-size tests."""
    c, snr, spike = cfg
    (p1, p2), trials = design.sizes[c]
    k = design.prof.spikes.index(spike)
    pred = prediction.theory[cfg]
    stats = {kern: (*mean_se(cells[(c, snr, p1)][kern][k]), *mean_se(cells[(c, snr, p2)][kern][k]))
             for kern in ("true", "linearised")}
    points = []
    for j, g in enumerate(design.gammas):
        gaps = {}
        for kern, (m1, se1, m2, se2) in stats.items():
            _, _, t = _finite_size_rule(pred[j], m1[j], se1[j], m2[j], se2[j], p1, p2, (trials, trials))
            gaps[kern] = _Gap(m1[j], se1[j], m2[j], se2[j], t)
        points.append(_B7Point(c=c, snr=snr, spike=spike, gamma=g, kappa=prediction.kappa[cfg], pred=pred[j],
                               pred_spec=prediction.theory_spec[cfg][j], p1=p1, p2=p2, trials=trials,
                               true=gaps["true"], lin=gaps["linearised"]))
    return points


def _b7_points(design: B7Design, prediction: B7Prediction, cells: Cells) -> list[_B7Point]:
    return [pt for cfg in design.configs for pt in _b7_config_points(design, prediction, cells, cfg)]


def judge_b7(design: B7Design, prediction: B7Prediction, cells: Cells) -> list[Comparison]:
    """Finite-size rule per point: theory vs true kernel (inside the regime), then vs linearised kernel (all).

    Per configuration the true-kernel comparisons come first, then the linearised-kernel ones; the first
    comparison is the headline.  Pure: ``cells`` holds the trial arrays of :func:`simulate_b7`.
    """
    comps: list[Comparison] = []
    for cfg in design.configs:
        points = _b7_config_points(design, prediction, cells, cfg)
        for pt in points:
            if pt.inside:
                comps.append(pt.true.test.comparison(f"{pt.name} (kappa={pt.kappa:.2f})", pt.pred, pt.true.m2,
                                                     pt.true.se2, f"p={pt.p1}", f"p={pt.p2}", headline=not comps,
                                                     key=pt.key("true")))
        # the derivation itself: theory vs the LINEARISED kernel on the same X (every config)
        comps.extend(pt.lin.test.comparison(f"[linearised kernel] {pt.name}", pt.pred, pt.lin.m2, pt.lin.se2,
                                            f"p={pt.p1}", f"p={pt.p2}", key=pt.key("linearised")) for pt in points)
    return comps


def _b7_row(pt: _B7Point) -> dict:
    """The point as a row of ``data["grid"]``."""
    return dict(c=pt.c, snr=pt.snr, spike=spike_label(pt.spike), gamma=float(pt.gamma), kappa_2p=pt.kappa,
                inside_regime=pt.inside, theory=float(pt.pred), theory_spec=float(pt.pred_spec),
                mc_p=float(pt.true.m1), se_p=float(pt.true.se1), mc_2p=float(pt.true.m2), se_2p=float(pt.true.se2),
                allowance=pt.true.test.allowance, passed=pt.true.test.passed, p=pt.p1, p2=pt.p2, trials=pt.trials,
                lin_p=float(pt.lin.m1), lin_se_p=float(pt.lin.se1), lin_2p=float(pt.lin.m2),
                lin_se_2p=float(pt.lin.se2), lin_passed=pt.lin.test.passed)


def _mean_z(rows: list[dict], key_m: str, key_se: str, key_th: str, sel) -> tuple[float, float]:
    """Mean ``z^2`` and mean ``z`` of ``(row[key_m] - row[key_th]) / row[key_se]`` over the selected rows."""
    z = np.array([(r[key_m] - r[key_th]) / max(r[key_se], 1e-12) for r in rows if sel(r)])
    return (float(np.mean(z**2)), float(np.mean(z))) if z.size else (float("nan"), float("nan"))


def _null_systems(rows: list[dict]) -> dict:
    """Informational: corrected vs SPEC null system, mean z^2 / mean z per kernel family."""
    return {
        "true_inside": {th: _mean_z(rows, "mc_2p", "se_2p", th, lambda r: r["inside_regime"])
                        for th in ("theory", "theory_spec")},
        "linearised_all": {th: _mean_z(rows, "lin_2p", "lin_se_2p", th, lambda r: True)
                           for th in ("theory", "theory_spec")},
    }


def _null_systems_text(systems: dict, rows: list[dict]) -> str:
    ti, la = systems["true_inside"], systems["linearised_all"]
    max_shift = max(abs(r["theory"] - r["theory_spec"]) / max(r["se_2p"], 1e-12) for r in rows)
    return (
        "INFORMATIONAL - null system: the theory uses the corrected (symmetric-noise, kappa) null system of "
        "theory.attention; SPEC's independent-entries system (kappa = 0) is evaluated for comparison. Mean z^2 / "
        "mean z of (MC(2p) - theory)/SE: true kernel inside the regime: corrected "
        f"{ti['theory'][0]:.2f}/{ti['theory'][1]:+.2f}, SPEC "
        f"{ti['theory_spec'][0]:.2f}/{ti['theory_spec'][1]:+.2f}; "
        f"linearised kernel: corrected {la['theory'][0]:.2f}/"
        f"{la['theory'][1]:+.2f}, SPEC {la['theory_spec'][0]:.2f}/"
        f"{la['theory_spec'][1]:+.2f}. The two theories differ by at most "
        f"{max_shift:.2f} SE of this grid (up to ~2 % of E at c = 2, small gamma): this profile cannot separate "
        "them; see docs/structured_attention.md (step 4) for the targeted comparison. "
    )


def _outside_line(pt: _B7Point) -> str:
    return (f"{pt.name}: kappa={pt.kappa:.2f}, theory {pt.pred:.4f}, MC(2p) {pt.true.m2:.4f}+-{pt.true.se2:.4f}, "
            f"rule {'holds' if pt.true.test.passed else 'fails'}")


def describe_b7(design: B7Design, prediction: B7Prediction, cells: Cells,
                comparisons: list[Comparison]) -> tuple[str, dict]:
    """Notes (grid, regime, failures, worst gaps, null systems) and data (``grid`` rows, ``null_systems``, sizes)."""
    prof = design.prof
    points = _b7_points(design, prediction, cells)
    rows = [_b7_row(pt) for pt in points]
    worst = max([0.0] + [abs(pt.true.m2 - pt.pred) / max(pt.true.se2, 1e-12) for pt in points if pt.inside])
    worst_lin = max([0.0] + [abs(pt.lin.m2 - pt.pred) / max(pt.lin.se2, 1e-12) for pt in points])
    outside = [_outside_line(pt) for pt in points if not pt.inside]
    systems = _null_systems(rows)
    n_fail = sum(cp.outcome == "FAIL" for cp in comparisons)
    notes = (
        "Theory: project's own derivation (theory.structured; docs/structured_attention.md), a finite-rank "
        "(Woodbury) perturbation of the null resolvent of the linearised kernel, traces from the corrected "
        "(symmetric kernel noise: delta, delta~, kappa) null system. "
        f"Simulation: true tanh kernel, diagonal removed, {sizes_text(prof)} (n=p/c); "
        f"gammas {list(prof.gammas)}; snr {list(prof.snrs)}; spikes {[spike_label(s) for s in prof.spikes]}. "
        f"Verdict uses the configurations inside the declared regime kappa(2p) <= {KAPPA_MAX} "
        "(kappa = (snr + sqrt(E(w_K^T x)^2 E(w_Q^T x)^2)) / sqrt p, the size of the signal/spike correction to a "
        f"kernel argument). Second family '[linearised kernel]': the same grid simulated with the linearised "
        "kernel a1 (X^T W X/p - diag) + s_f Xi/sqrt p on the same X draws, every configuration (tests the "
        "derivation separately from the linearisation). "
        f"{n_fail} of {len(comparisons)} comparisons fail; worst |gap|/SE at 2p: true kernel {worst:.1f}, "
        f"linearised kernel {worst_lin:.1f}. "
        f"Outside the regime at these sizes (reported, not judged): {'; '.join(outside) if outside else 'none'}. "
        + _null_systems_text(systems, rows)
        + "Where the linearisation itself breaks (strong aligned spikes, small p) is the informational study B7-lin."
    )
    data = {"grid": rows, "kappa_max": KAPPA_MAX, "null_systems": systems, "activation": ACTIVATION,
            "sizes": {str(c): dict(p_sizes=list(design.sizes[c][0]), trials=design.sizes[c][1]) for c in prof.cs}}
    return notes, data


#: B7 figure: the spikes in words, in the order of the palette
_SPIKE_WORDS = {"none": "no spike", "aligned 1": "aligned spike, strength 1", "aligned 4": "aligned spike, strength 4",
                "orthogonal 4": "orthogonal spike, strength 4 (theory = no spike)"}


def _b7_panel(ax: Any, design: B7Design, rows: list[dict], comps: list[Comparison], c: float, snr: float) -> None:
    """One (c, snr): dense theory per spike, true-kernel MC at 2p (open: outside the regime), linearised MC (x)."""
    from .. import figures as F

    (p1, p2), trials = design.sizes[c]
    for k, spike in enumerate(design.prof.spikes):
        lab, col = spike_label(spike), F.COLORS[k % len(F.COLORS)]
        sel = [r for r in rows if r["c"] == c and r["snr"] == snr and r["spike"] == lab]
        gg = np.array([r["gamma"] for r in sel])
        F.theory_curve(ax, gg, lambda g, sp_=spike: structured_theory(g, c, snr, sp_), color=col,
                       grid=F.dense_grid(gg, per_decade=8, n_min=20), ls="--" if spike[1] == "orthogonal" else "-",
                       lw=1.2, label="_nolegend_")
        dodge = 1.0 + 0.045 * (k - (len(design.prof.spikes) - 1) / 2)  # coinciding spikes stay visible
        F.mc_points(ax, gg * dodge, [r["mc_2p"] for r in sel], [r["se_2p"] for r in sel], label="_nolegend_",
                    color=col, filled=[r["inside_regime"] for r in sel])
        ax.plot(gg * dodge * 1.03, [r["lin_2p"] for r in sel], "x", color=col, ms=5, mew=1.2, zorder=4)
    true = with_key(comps, c=c, snr=snr, kernel="true")
    lin = with_key(comps, c=c, snr=snr, kernel="linearised")
    out = sorted({f"{r['spike']} (κ = {r['kappa_2p']:.2f})" for r in rows
                  if r["c"] == c and r["snr"] == snr and not r["inside_regime"]})
    lines = [f"true kernel: {F.outcome_text(true) if true else 'none judged'}",
             f"linearised kernel: {F.outcome_text(lin)}"] + ([f"not judged: {', '.join(out)}"] if out else [])
    ax.set(xscale="log", xlabel="ridge parameter γ", ylabel="interpolation error E",
           title=f"p/n = {c:g}, ‖μ‖² = {snr:g}\np = {p2}, n = {int(round(p2 / c))} (rule: also p = {p1}), "
                 f"{trials} trials")
    lo, hi = ax.get_ylim()
    if hi / max(lo, 1e-300) > 8:
        ax.set_yscale("log")
    F.tidy_log_axis(ax)
    F.key_numbers(ax, lines, verdict=F.worst_outcome(true + lin))


def _b7_legend_entries(design: B7Design) -> list[Any]:
    from .. import figures as F

    spikes = [F.proxy(_SPIKE_WORDS.get(spike_label(s), spike_label(s)), color=F.COLORS[k % len(F.COLORS)],
                      marker=None, ls="--" if s[1] == "orthogonal" else "-", lw=2.5)
              for k, s in enumerate(design.prof.spikes)]
    return spikes + [F.proxy("theory: structured deterministic equivalent (lines)", color=F.THEORY, marker=None,
                             ls="-"),
                     F.proxy("true kernel, Monte Carlo at 2p, ±3 SE", color=F.THEORY),
                     F.not_judged_handle(f"open: outside the regime κ(2p) > {KAPPA_MAX}, reported, not judged"),
                     F.proxy("linearised kernel, same draws (judged everywhere)", color=F.THEORY, marker="x")]


@paper_figure
def figure_b7(design: B7Design, prediction: B7Prediction, cells: Cells, judgement: Judgement) -> Any:
    """Per (c, snr): theory (dense, per spike), true-kernel MC at 2p (3 SE; open outside the regime), linearised MC."""
    from .. import figures as F

    prof = design.prof
    verdict, comps = judgement.verdict, list(judgement.comparisons)
    rows = [_b7_row(pt) for pt in _b7_points(design, prediction, cells)]
    fig, axes = F.subplots(len(prof.snrs), len(prof.cs), panel=(4.6, 3.1), extra=1.3)
    for i, snr in enumerate(prof.snrs):
        for j, c in enumerate(prof.cs):
            _b7_panel(axes[i, j], design, rows, comps, c, snr)
    F.legend(axes[0, 0], extra=_b7_legend_entries(design), outside=True, ncol=3)
    F.suptitle(fig, "B7", "attention with signal and spiked weights: structured theory vs Monte Carlo",
               f"f = {ACTIVATION}, diagonal removed, W = I + w_K w_Qᵀ, μ = √‖μ‖² e₁; judged: finite-size rule at p and "
               f"2p ({F.outcome_text(comps)})", verdict)
    return fig


#: B7: structured deterministic equivalent (project's derivation) vs true- and linearised-kernel Monte Carlo
#: claim B7 in words (the report, --list and docs/claims.md show it)
STATEMENT_B7 = (
    "The structured deterministic equivalent (derived by the project) matches simulation"
)

CLAIM_B7 = register(Claim(id="B7", paper="B", statement=STATEMENT_B7, design=design_b7, predict=predict_b7, simulate=simulate_b7, judge=judge_b7,
                          describe=describe_b7, figure=figure_b7, figure_name="structured_vs_mc"))
