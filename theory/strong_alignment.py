"""Exact pieces of the interpolation limit under strong alignment (docs/strong_alignment.md, "Mechanism").

*Derived by the project.* Model of paper B: ``x_i = mu y_i + z_i`` with balanced labels ``y_i = +-1`` and
``||mu||^2 = snr``; ``c = p/n``.  As ``gamma -> 0`` with ``c < 1`` the interpolation error is the in-sample residual
of the labels on the ``p`` features, and given the data it splits exactly into ``T1`` (the part of the Bayes
predictor ``tanh(mu^T x)`` the features miss) and ``T2`` (the label noise left, weighted by one minus each token's
leverage).  This module holds the closed forms of that split:

* :func:`label_mmse`: the Bayes error of a label from its token, ``E[1 - tanh(sqrt(snr) a)^2]``,
  ``a = sqrt(snr) y + z``;
* :func:`bayes_feature_limit`: the limit ``(1 - c) mmse`` of features that hold the Bayes predictor with uniform
  leverage (``T1 = 0``);
* :func:`strong_alignment_margin`: that limit minus ridge's ``(1 - c)/(1 + snr)``, the part of attention's win
  under strong alignment that comes from the better predictor (``T1``).  It assumes what docs/strong_alignment.md
  argues and measures (attention's features hold ``tanh(a)`` as ``p -> infinity`` at fixed ``t > 0`` for an odd
  activation) and leaves out the leverage part (``T2``), whose theory is not derived.

>>> round(label_mmse(1.0), 4)
0.4496
>>> round(strong_alignment_margin(0.5, 1.0), 4)
-0.0252
"""

from __future__ import annotations

import math
from typing import Any

from scipy import integrate

from ._validation import as_float

__all__ = ["label_mmse", "bayes_feature_limit", "strong_alignment_margin"]


def label_mmse(snr: Any) -> float:
    """Bayes error of a balanced label ``y = +-1`` from ``a = sqrt(snr) y + z``, ``z ~ N(0, 1)``.

    ``E[y | a] = tanh(sqrt(snr) a)``, so the error is ``1 - E tanh(sqrt(snr) a)^2 = 1 - E tanh(snr + sqrt(snr) z)``
    (the second form by the Nishimori identity of this channel); computed by adaptive quadrature of the first form.

    Parameters
    ----------
    snr : float
        ``||mu||^2``, finite, ``>= 0``.

    Returns
    -------
    float
        In ``[0, 1]``; 1 at ``snr = 0``, decreasing in ``snr``, and at most ``1/(1 + snr)`` (the error of the best
        linear predictor).

    Examples
    --------
    >>> label_mmse(0.0)
    1.0
    """
    s = as_float("snr", snr, low=0)
    if s == 0.0:
        return 1.0
    root = math.sqrt(s)

    def integrand(z: float) -> float:
        return math.tanh(root * (root + z)) ** 2 * math.exp(-z * z / 2) / math.sqrt(2 * math.pi)

    # y = +1 and y = -1 give the same integral (tanh^2 is even); split at the mode for accuracy
    lower, _ = integrate.quad(integrand, -math.inf, -root, epsabs=1e-14, epsrel=1e-12, limit=200)
    upper, _ = integrate.quad(integrand, -root, math.inf, epsabs=1e-14, epsrel=1e-12, limit=200)
    return 1.0 - (lower + upper)


def bayes_feature_limit(c: Any, snr: Any) -> float:
    """``E(0)`` of ``p = c n`` features that hold the Bayes predictor and give every token leverage ``c``.

    ``(1 - c) label_mmse(snr)`` for ``c < 1``; 0 for ``c >= 1`` (the features interpolate).

    Parameters
    ----------
    c : float
        ``p / n``, finite, ``> 0``.
    snr : float
        Finite, ``>= 0``.

    Returns
    -------
    float
    """
    cv = as_float("c", c, low=0, low_open=True)
    mmse = label_mmse(snr)
    return (1.0 - cv) * mmse if cv < 1.0 else 0.0


def strong_alignment_margin(c: Any, snr: Any) -> float:
    """Attention minus ridge at ``gamma -> 0`` from the Bayes predictor alone: ``(1 - c)(mmse - 1/(1 + snr))``.

    The ``T1`` part of docs/strong_alignment.md in its limit: ridge's features hold only the linear part of the
    Bayes predictor, leaving ``(1 - c)(1/(1 + snr) - mmse)``; attention's, under strong alignment with an odd
    activation, hold all of it.  Not the whole gap: the leverage part (``T2``, negative for erf and tanh, positive
    for gelu, measured) comes on top.  0 for ``c >= 1``.

    Parameters
    ----------
    c : float
        ``p / n``, finite, ``> 0``.
    snr : float
        Finite, ``>= 0``.

    Returns
    -------
    float
        ``<= 0``.
    """
    cv = as_float("c", c, low=0, low_open=True)
    s = as_float("snr", snr, low=0)
    if cv >= 1.0:
        return 0.0
    return (1.0 - cv) * (label_mmse(s) - 1.0 / (1.0 + s))
