"""The frozen records of paper A's rate claims (A2-A4): what each step hands to the next, per group.

``design`` builds :class:`RateDesign` (a :class:`GroupDesign` per curve), ``predict`` a :class:`RatePrediction`
(a :class:`GroupPrediction` per group: the models *and every number derived from them*, computed once, here),
``simulate`` a :class:`RateMeasurement` (a :class:`GroupMeasurement` per group); :func:`evidence` pairs a group's
three records by label (no copies).  What a step cost (wall time, cache counts) is a :class:`SweepCost`, apart."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

from numerics.slopes import SlopeFit, design_slope, level_weights
from theory.minimax import rate_exponent

#: windows of the a-priori model beyond the design (part (b) of A2-A4): K levels times 2^k for these k
LIMIT_WINDOWS = (1, 2)


@dataclass(frozen=True)
class GroupDesign:
    """One curve of a rate experiment: a configuration (the truth's and the noise's; read-only), its ``K`` and ``M``
    levels and, where a pilot allocated them, the replicates per level; ``rep_factor``: without an allocation, the
    group runs this many times the check's equal count per level; ``finite_se``: the Monte Carlo SE target per
    level of its finite-M model (None: the profile's)."""

    label: str
    config: Mapping[str, Any]
    K: tuple[int, ...]
    M: tuple[int, ...]
    reps: tuple[int, ...] | None = None
    rep_factor: int = 1
    finite_se: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "config", dict(self.config))  # a private copy: the caller's dict may change
        object.__setattr__(self, "K", tuple(self.K))
        object.__setattr__(self, "M", tuple(self.M))

    @property
    def theory_slope(self) -> float:
        """``-2 beta / (2 beta + 1)`` from :func:`theory.rate_exponent`."""
        return -float(rate_exponent(int(self.config["P"]) - 1))

    def replicates(self, equal: int) -> list[int]:
        """Replicates per ``M`` level: the allocation, or ``rep_factor * equal`` at every level."""
        return list(self.reps) if self.reps is not None else [equal * self.rep_factor] * len(self.M)


def limit_window(g: GroupDesign, k: int) -> tuple[list[int], list[int]]:
    """K and M levels of window ``k``: three design K levels x ``2^k``, ``M`` x ``2^(k (2b+1))`` (the law continued)."""
    idx = sorted({0, len(g.K) // 2, len(g.K) - 1})
    f = 2 ** k
    beta = float(g.config["P"] - 1)
    return ([g.K[i] * f for i in idx], [int(round(g.M[i] * f ** (2 * beta + 1))) for i in idx])


def apriori_curve(preds: Sequence[dict], Ms: Sequence[int], N: int, parametric: bool = True,
                  variance_scale: float = 1.0) -> np.ndarray:
    """``B + s V n / (n - p) / M`` (``n = M N``, ``s = variance_scale``) of :func:`numerics.error_model.predict_error`
    results: the a-priori model with the first-order finite-sample factor."""
    out = []
    for q, m in zip(preds, Ms):
        n = m * N
        v = q["V_np"] + (q["V_par"] if parametric else 0.0)
        out.append(q["B"] + variance_scale * v / m * n / max(n - q["p"], 1.0))
    return np.array(out)


def weighted_slope(M: Sequence[int], levels: Sequence[dict]) -> tuple[float, float]:
    """``sum_k w_k L_k`` with the per-level OLS weights of :func:`numerics.slopes.fit_slope` (``L_k``: a level's
    ``log_error``) and its SE from the levels' ``se``."""
    w = level_weights(np.log(np.asarray(M, dtype=float)))
    L = np.array([q["log_error"] for q in levels])
    se = np.array([q["se"] for q in levels])
    return float(w @ L), float(math.sqrt(np.sum((w * se) ** 2)))


@dataclass(frozen=True)
class GroupPrediction:
    """The models of one group and the numbers derived from them (built by :func:`group_prediction`).
    ``apriori``: :func:`~numerics.error_model.predict_error` per K level; ``curve`` / ``curve_np`` the a-priori model
    at the design's ``(K, M)`` with / without the parametric term, ``slope`` / ``slope_np`` their slopes;
    ``finite`` (``finite_known``): the finite-M model per level with the matrix estimated (with ``A = A*`` known),
    ``finite_slope`` and ``finite_shift`` its slope and the estimated-minus-known slope, each with its Monte Carlo
    SE; ``limit``: the a-priori model on each window of :data:`LIMIT_WINDOWS` (at ``sigma = 1``), ``window_slopes``
    the model's slope on the design and on each window."""

    apriori: tuple[dict, ...]
    curve: tuple[float, ...]
    curve_np: tuple[float, ...]
    slope: float
    slope_np: float
    window_slopes: tuple[float, ...]
    finite: tuple[dict, ...] = ()
    finite_slope: tuple[float, float] | None = None
    finite_known: tuple[dict, ...] = ()
    finite_shift: tuple[float, float] | None = None
    limit: tuple[tuple[dict, ...], ...] = ()


def group_prediction(g: GroupDesign, apriori: Sequence[dict], finite: Sequence[dict] = (),
                     finite_known: Sequence[dict] = (), limit: Sequence[Sequence[dict]] = ()) -> GroupPrediction:
    """The :class:`GroupPrediction` of ``g`` from its models: every derived number computed here, once."""
    N = int(g.config["N"])
    curve = apriori_curve(apriori, g.M, N)
    curve_np = apriori_curve(apriori, g.M, N, parametric=False)
    slope = design_slope(list(g.M), curve)
    s2 = float(g.config["sigma"]) ** 2
    windows = [slope]
    for k, preds in zip(LIMIT_WINDOWS, limit):  # predicted at sigma = 1: the variance scales with sigma^2
        Ms = limit_window(g, k)[1]
        windows.append(design_slope(Ms, apriori_curve(preds, Ms, N, variance_scale=s2)))
    fs = weighted_slope(g.M, finite) if finite else None
    shift = None
    if finite and finite_known:
        ks = weighted_slope(g.M, finite_known)
        shift = (fs[0] - ks[0], math.hypot(fs[1], ks[1]))
    return GroupPrediction(apriori=tuple(apriori), curve=tuple(map(float, curve)), curve_np=tuple(map(float, curve_np)),
                           slope=float(slope), slope_np=float(design_slope(list(g.M), curve_np)),
                           window_slopes=tuple(float(w) for w in windows), finite=tuple(finite), finite_slope=fs,
                           finite_known=tuple(finite_known), finite_shift=shift,
                           limit=tuple(tuple(w) for w in limit))


@dataclass(frozen=True)
class GroupMeasurement:
    """What a rate sweep measured for one group: errors per M, the slope fit, refits; with A*-known companion fits,
    their errors and the paired slope of ``err / err_known``."""

    errors: Mapping[int, list[float]]
    fit: SlopeFit
    refits: int = 0
    errors_known: Mapping[int, list[float]] = field(default_factory=dict)
    shift_fit: SlopeFit | None = None


@dataclass(frozen=True)
class SweepCost:
    """What a step cost: wall seconds and, per sweep, ``{"n_computed", "n_cached"}`` (the notes' cache phrase)."""

    runtime: float = 0.0
    counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    def __add__(self, other: "SweepCost") -> "SweepCost":
        return SweepCost(self.runtime + other.runtime, {**self.counts, **other.counts})


@dataclass(frozen=True)
class RateDesign:
    """A rate experiment: its groups, replicates per level, the trials' options, and the groups (``known``) whose
    fits are repeated with ``A = A*`` known on the same data (A3's part (b))."""

    check_id: str
    size: str
    groups: tuple[GroupDesign, ...]
    reps: int
    trial_extra: Mapping[str, Any]
    known: tuple[str, ...] = ()


@dataclass(frozen=True)
class RatePrediction:
    """The :class:`GroupPrediction` of every group by label, and what computing them cost."""

    groups: Mapping[str, GroupPrediction]
    cost: SweepCost = SweepCost()


@dataclass(frozen=True)
class RateMeasurement:
    """The :class:`GroupMeasurement` of every group by label, and what the sweep cost."""

    groups: Mapping[str, GroupMeasurement]
    cost: SweepCost = SweepCost()


class GroupEvidence(NamedTuple):
    """A group's design, prediction and measurement side by side (references, no copies)."""

    design: GroupDesign
    prediction: GroupPrediction
    measurement: GroupMeasurement

    @property
    def label(self) -> str:
        return self.design.label

    def to_data(self) -> dict:
        """The group's part of the check's JSON data."""
        g, p, m = self
        out = {"M": list(g.M), "K": list(g.K), "errors": dict(m.errors), "fit": m.fit.to_dict(),
               "pred_curve": list(p.curve), "pred_slope": p.slope, "pred_slope_np": p.slope_np,
               "theory": g.theory_slope, "config": dict(g.config), "pred": list(p.apriori)}
        if m.shift_fit is not None:
            out.update(errors_known=dict(m.errors_known), shift_fit=m.shift_fit.to_dict())
        if g.reps is not None:
            out["reps"] = list(g.reps)
        if p.finite:
            out.update(finite=list(p.finite), finite_slope=list(p.finite_slope), window_slopes=list(p.window_slopes))
        if p.finite_known:
            out.update(finite_known=list(p.finite_known), finite_shift=list(p.finite_shift))
        return out


def evidence(design: RateDesign, prediction: RatePrediction, measurement: RateMeasurement) -> list[GroupEvidence]:
    return [GroupEvidence(g, prediction.groups[g.label], measurement.groups[g.label]) for g in design.groups]
