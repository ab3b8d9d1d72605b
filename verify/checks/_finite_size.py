"""The finite-size rule of the paper-B checks: an ``n -> infinity`` prediction against Monte Carlo at two sizes.

Each Monte Carlo point is simulated at a small and a large size with the same aspect ratio (``n_s < n_l``).  With
``g_s, g_l`` the gaps ``MC - prediction`` and ``SE_s, SE_l`` their standard errors, the hypothesis under test is

    H0: the prediction is the limit, and the gap decays at least like ``n^{-1/2}``,
        i.e. ``|G_l| <= q |G_s|`` for the true gaps, ``q = (n_s / n_l)^{1/2}``

(``n^{-1/2}`` is the slowest rate declared: deterministic equivalents of this kind usually converge like ``1/n``;
the linearisation error of the structured checks decays like ``p^{-1/2}``).  The statistic is
``T = |g_l| - q |g_s|``, whose standard deviation under the least favourable null is ``hypot(SE_l, q SE_s)``.  The
per-point reading (``FiniteSizeTest.passed``, the tables) is the 3-sigma rule

    ``|g_l| <= q |g_s| + 3 hypot(SE_l, q SE_s)``;

the verdict of a check uses the one-sided p-value of ``T / hypot(SE_l, q SE_s)`` (the ``p_fail`` of
``FiniteSizeTest.comparison``) with Holm's procedure over all the points of the check (:mod:`verify.verdicts`).

Power: a prediction off by a constant ``D`` (a gap that does not decay) fails with probability > 1/2 once
``D (1 - q) > 3 hypot(SE_l, q SE_s)``, i.e. ``D > 14.5 SE_l`` for ``q = 2^{-1/2}`` and ``SE_s = 2^{1/2} SE_l``
(``tests/verify/test_finite_size_rule.py`` simulates both error rates).  Equivalently, with ``delta = m_l - m_s``
the rule accepts every limit in (about) ``[m_l - 0.41 delta, m_l + 2.41 delta]`` widened by the noise term.  With
SEs estimated from few trials the critical value is the matching Student-t quantile (``trials``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats

from ..results import Comparison
from ..verdicts import ALPHA_CHECK, t_quantile

#: slowest finite-size decay allowed by the rule: gap ~ n^(-DECAY)
DECAY = 0.5


@dataclass(frozen=True)
class FiniteSizeTest:
    """Outcome of :func:`finite_size_test` for one point (fields in the units of the measured quantity)."""

    gap_small: float
    gap_large: float
    allowance: float  # q |g_s|: the small-size gap propagated to the large size
    noise: float  # crit hypot(SE_l, q SE_s): `crit` standard deviations of the statistic
    q: float
    passed: bool
    crit: float = 3.0  # 3, or the Student-t quantile of the same level when the SEs are estimated
    df: float | None = None  # Welch-Satterthwaite degrees of freedom of the statistic (trial counts given)

    @property
    def bound(self) -> float:
        return self.allowance + self.noise

    @property
    def statistic(self) -> float:
        """``T = |g_l| - q |g_s|``: positive when the large-size gap exceeds the propagated small-size gap."""
        return abs(self.gap_large) - self.allowance

    @property
    def sd(self) -> float:
        """Standard deviation of ``T`` under the least favourable null: ``hypot(SE_l, q SE_s)``."""
        return self.noise / self.crit

    def comparison(self, name: str, predicted: float, measured: float, se: float,
                   small: str = "n_s", large: str = "n_l", **kw):
        """The point as a ``bound`` :class:`verify.results.Comparison` (PASS unless ``T`` is significant)."""
        return Comparison.bound(name, float(predicted), float(measured), float(se), self.statistic,
                                excess_se=self.sd, df=self.df, rule=self.rule(small, large), **kw)

    def rule(self, small: str = "n_s", large: str = "n_l") -> str:
        """The rule with its numbers, for ``Comparison.tolerance``."""
        k = "3" if self.df is None else "t"
        crit = "" if self.df is None else (f"; t = {self.crit:.3g}, the Student-t quantile of the 3-sigma level "
                                           f"(0.99865) at the Welch df {self.df:.1f} of the estimated SEs")
        return (f"|gap at {large}| = {abs(self.gap_large):.3g} <= q |gap at {small}| + {k} hypot(SE_l, q SE_s) = "
                f"{self.allowance:.3g} + {self.noise:.3g} = {self.bound:.3g}, q = ({small}/{large})^{DECAY:g} = "
                f"{self.q:.3g} (the small-size gap {abs(self.gap_small):.3g} decaying at least like size^-{DECAY:g}; "
                f"{k} SD of the test statistic{crit})")


def finite_size_test(pred: float, m_small: float, se_small: float, m_large: float, se_large: float,
                     size_ratio: float, trials: tuple[int, int] | None = None) -> FiniteSizeTest:
    """Test the limit ``pred`` against Monte Carlo means and SEs at two sizes (rule of the module docstring);
    ``size_ratio``: small / large size, in ``(0, 1)``.  ``trials`` (at the small and the large size): the SEs are
    estimated, so the critical value 3 becomes the Student-t quantile of the same one-sided level (``Phi(3)``) at the
    Welch-Satterthwaite df of ``hypot(SE_l, q SE_s)`` (with 4 trials a 3-sigma rule would reject a correct
    prediction about 7 times too often).  ``passed`` is False when any input is not finite."""
    q = size_ratio**DECAY
    gs, gl = m_small - pred, m_large - pred
    allowance = abs(gs) * q
    crit, df = 3.0, None
    if trials is not None:
        t_s, t_l = trials
        a, b = se_large**2, (q * se_small) ** 2
        den = a**2 / (t_l - 1) + b**2 / (t_s - 1)
        df = (a + b) ** 2 / den if den > 0 else float(t_s + t_l - 2)
        crit = float(stats.t.ppf(stats.norm.cdf(3.0), df))
    noise = crit * math.hypot(se_large, q * se_small)
    finite = all(math.isfinite(float(v)) for v in (pred, m_small, se_small, m_large, se_large))
    passed = bool(finite and abs(gl) <= allowance + noise)
    return FiniteSizeTest(float(gs), float(gl), float(allowance), float(noise), float(q), passed, crit,
                          None if df is None else float(df))


def comparison_detectable_error(comparison, n_comparisons: int, q: float) -> float:
    """The limit error ``D`` (the same at both sizes) that the rule detects with probability about 1/2 in a check of
    ``n_comparisons`` comparisons, for a judged finite-size comparison (:meth:`FiniteSizeTest.comparison`): ``T = D (1 -
    q)`` must reach the one-sided quantile at Holm's first level (``ALPHA_CHECK / n_comparisons``, where the smallest
    p-value is compared) in units of the statistic's SD, read from the SD and df the row carries."""
    args = dict(comparison.args)
    return t_quantile(ALPHA_CHECK / n_comparisons, args["df"]) * args["excess_se"] / (1 - q)
