"""Fits of a finite-size decay for the study of the reversal (:mod:`studies.reversal`): a power law
``A p^{-beta}`` with the profile-likelihood interval of ``beta``, where it crosses a limit, and ``C kappa^2``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np


#: z of the 95 % interval of the decay exponent
Z95 = 1.959963984540054
#: search range of the decay exponent (the interval is clipped to it; ``bounded`` says so)
BETA_RANGE = (-1.0, 4.0)


@dataclass(frozen=True)
class PowerFit:
    """Weighted power-law fit ``y(p) = A p^{-beta}`` (:func:`fit_power_law`).

    Attributes
    ----------
    amplitude : ``A`` at the best ``beta`` (``y`` at ``p = 1``).
    exponent : best ``beta``; ``lo, hi``: its 95 % profile-likelihood interval (clipped to ``BETA_RANGE``).
    chi2, dof : minimum chi-square and its degrees of freedom (points - 2).
    bounded : whether the interval lies inside ``BETA_RANGE`` (otherwise ``lo``/``hi`` are range edges).
    """

    amplitude: float
    exponent: float
    lo: float
    hi: float
    chi2: float
    dof: int
    bounded: bool

    def se_towards(self, value: float) -> float:
        """Half-width of the interval on the side of ``value``, over 1.96 (the SE of a z-test of ``beta = value``)."""
        half = (self.exponent - self.lo) if value < self.exponent else (self.hi - self.exponent)
        return max(half, 1e-12) / Z95

    def at(self, p: Any) -> np.ndarray:
        """The fitted curve at ``p``."""
        return self.amplitude * np.asarray(p, float) ** (-self.exponent)


def _profile_chi2(beta: np.ndarray, logp: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(chi2, A)`` of the best amplitude at each exponent of ``beta`` (the model is linear in ``A``)."""
    x = np.exp(-np.outer(np.atleast_1d(beta), logp))  # (B, P)
    amp = (w * x * y).sum(1) / (w * x * x).sum(1)
    return (w * (y - amp[:, None] * x) ** 2).sum(1), amp


def fit_power_law(ps: Sequence[float], y: Sequence[float], se: Sequence[float]) -> PowerFit:
    """Fit ``y = A p^{-beta}`` by weighted least squares, ``beta`` with its 95 % profile-likelihood interval.

    ``A`` is profiled out (linear); ``chi2(beta)`` is evaluated on a grid of 2001 points over :data:`BETA_RANGE`
    and refined by a bounded scalar search around the grid minimum; the interval is
    ``{beta : chi2(beta) <= chi2_min + 1.96^2}`` on the grid (the points are independent, their SEs taken as
    known).

    Parameters
    ----------
    ps, y, se : sizes, measured values (any sign; e.g. ``E_att - E_RR`` minus its limit) and standard errors.

    Returns
    -------
    PowerFit

    Examples
    --------
    >>> f = fit_power_law([100, 200, 400, 800], [-0.01, -0.005, -0.0025, -0.00125], [1e-4] * 4)
    >>> round(f.exponent, 3), round(f.amplitude, 3)
    (1.0, -1.0)
    """
    from scipy.optimize import minimize_scalar

    logp, yy = np.log(np.asarray(ps, float)), np.asarray(y, float)
    w = 1.0 / np.maximum(np.asarray(se, float), 1e-300) ** 2
    if logp.size < 3:
        raise ValueError(f"a power-law fit with its interval needs at least 3 sizes, got {logp.size}")
    grid = np.linspace(*BETA_RANGE, 2001)
    chi = _profile_chi2(grid, logp, yy, w)[0]
    i = int(np.argmin(chi))
    res = minimize_scalar(lambda b: float(_profile_chi2(b, logp, yy, w)[0][0]), method="bounded",
                          bounds=(grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]), options={"xatol": 1e-7})
    beta = float(res.x) if res.fun <= chi[i] else float(grid[i])
    chi2, amp = (float(v[0]) for v in _profile_chi2(beta, logp, yy, w))
    inside = grid[chi <= chi2 + Z95**2]
    lo, hi = float(min(inside.min(), beta)), float(max(inside.max(), beta))
    bounded = bool(chi[0] > chi2 + Z95**2 and chi[-1] > chi2 + Z95**2)
    return PowerFit(amplitude=amp, exponent=beta, lo=lo, hi=hi, chi2=chi2, dof=int(logp.size - 2), bounded=bounded)


def crossing_size(fit: PowerFit, limit: float) -> float | None:
    """Size ``p*`` where ``limit + A p^{-beta}`` crosses zero (``None``: no crossing for ``p > 1``).

    ``limit > 0, A < 0, beta > 0``: the reversal (curve below zero) holds for ``p < p*`` only;
    ``limit <= 0``: the reversal survives the limit (``inf``).
    """
    if limit <= 0:
        return math.inf if fit.amplitude < 0 or limit < 0 else None
    if fit.amplitude >= 0 or fit.exponent <= 0:
        return None
    p_star = (-fit.amplitude / limit) ** (1.0 / fit.exponent)
    return float(p_star) if p_star > 1 else None


@dataclass(frozen=True)
class KappaFit:
    """One-parameter weighted fit ``y = C kappa^2`` over the sizes with ``kappa <= kappa_max`` (:func:`fit_kappa2`).

    Attributes
    ----------
    coef, se : ``C`` and its standard error; n_points : sizes used; chi2 : residual chi-square (``n_points - 1`` dof).
    """

    coef: float
    se: float
    n_points: int
    chi2: float


def fit_kappa2(kappa: Sequence[float], y: Sequence[float], se: Sequence[float],
               kappa_max: float = 0.5) -> KappaFit | None:
    """Fit ``y = C kappa^2`` (weighted least squares) on the points with ``kappa <= kappa_max``; ``None`` if none.

    ``kappa_max`` defaults to the linearised kernel's declared regime (``KAPPA_MAX``).  ``C`` is the
    linearisation-error coefficient in the units of ``y``: if the finite-``p`` effect is the
    ``O(kappa^2)`` error of the linearised kernel, ``y / kappa^2`` is the same at every size (and every strength).

    Examples
    --------
    >>> f = fit_kappa2([0.4, 0.2, 0.1], [-0.016, -0.004, -0.001], [1e-3] * 3)
    >>> round(f.coef, 6), f.n_points
    (-0.1, 3)
    """
    k, yy, s = (np.asarray(v, float) for v in (kappa, y, se))
    m = k <= kappa_max
    if not m.any():
        return None
    x, w = k[m] ** 2, 1.0 / np.maximum(s[m], 1e-300) ** 2
    coef = float((w * x * yy[m]).sum() / (w * x * x).sum())
    return KappaFit(coef=coef, se=float(1.0 / math.sqrt((w * x * x).sum())), n_points=int(m.sum()),
                    chi2=float((w * (yy[m] - coef * x) ** 2).sum()))
