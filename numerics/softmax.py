"""Softmax attention on paper B's data model: the kernel, its features and its interpolation error (Monte Carlo).

Model (paper B's, :mod:`numerics.rmt`): ``X = mu y^T + Z`` in ``R^{p x n}``, scores ``S = X^T W X / sqrt p``
(``W = I + w_k w_q^T``; ``S_ij`` pairs key ``i``, the factor carrying ``w_k``, with query ``j``), features
``Phi = X K``.  Softmax attention normalises each query's weights over the keys::

    K_ij = exp(beta S_ij) / sum_k exp(beta S_kj)      (every column of K sums to one),

so that ``Phi_j = sum_i K_ij x_i`` is a convex combination of tokens: the row-softmax of the usual layout
``softmax(Q K^T) V`` (rows are queries there; here the query is the column index of ``K``).  For ``W = I``,
``S`` is symmetric and this ``K`` is the transpose of the row-softmax of ``S``; ``normalise="rows"`` gives that
row-softmax itself (the same limit, :mod:`theory.softmax`).

The diagonal (a token attending to itself) is masked by default, ``diagonal="removed"`` (``K_jj = 0``, the normaliser
runs over the ``n - 1`` other keys).  Why: the self score ``S_jj = ||W^{1/2} x_j||^2 / sqrt p`` is about ``sqrt p``
while the other scores are ``O(1)``, so with the diagonal kept (``diagonal="kept"``) the self weight is
``exp(beta sqrt p) / (exp(beta sqrt p) + (n - 1) exp(beta^2 / 2))`` (:func:`theory.softmax.softmax_self_weight`), which
tends to one as ``p`` grows for every ``beta > 0``: each token attends to itself only, ``K -> I``, ``Phi -> X`` and the
error becomes ridge's (the *extreme-token effect*).  At intermediate sizes the self weight is random from token to token
(the self score fluctuates by ``beta sqrt 2`` around ``beta sqrt p``, a log-normal weight), which no constant diagonal
of paper B's kernel describes.  Paper B's own kernel removes its diagonal for the same reason.

Interpolation error: :func:`softmax_error_mc` runs paper B's Monte Carlo machinery: trial ``t`` draws ``X, y`` as
:func:`numerics.simulate_model` does with the same settings, forms ``X^T X`` once and evaluates on it softmax attention
and paper B's kernel ``f_beta(S) / sqrt p``, ``f_beta(x) = exp(beta x - beta^2 / 2) - 1`` (diagonal removed), for every
``beta`` and spike, and ridge (``Phi = X``).

Gammas are given in paper B's units.  The softmax kernel is about ``sqrt(p) / (n - 1)`` times paper B's kernel of
``f_beta`` (:mod:`theory.softmax`), so its features are evaluated at ``gamma * p / (n - 1)^2``
(:func:`theory.softmax.softmax_gamma_scale`): ``E(gamma * s^2; Phi) = E(gamma; Phi / s)`` exactly, the error of the
softmax features rescaled to paper B's kernel scale (the same scale with the diagonal kept, where the normaliser has
``n`` keys: a factor ``(1 - 1/n)^2`` on ``gamma``).  The entrywise kernel and ridge use ``gamma``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence

import numpy as np
import torch

from theory.validation import as_array, check_choice, finite_result
from theory.softmax import BETA_MAX, softmax_gamma_scale

from ._mc import Draws, check_gammas, check_label_average, mc_batch_size, run_trials, spike_outer
from ._ridge_solvers import errors_batch, feature_basis, gram
from .mc_settings import MonteCarloSettings
from .model_simulation import (check_diagonal_named, check_kinds, check_settings, model_list, model_sizes,
                               spike_tensors)
from .threads import torch_numeric_errors as _numeric

__all__ = ["softmax_error_mc"]

ArrayLike = Any
_NORMALISE = ("keys", "rows")


# ---------------------------------------------------------- kernels on a batch of scores S (T, n, n) = X^T W X / sqrt p
def _softmax_of_scores(S: torch.Tensor, beta: float, diagonal: str, normalise: str) -> torch.Tensor:
    """Softmax of ``beta S`` over the keys (dim -2, every column sums to one) or the rows (dim -1); the masked diagonal
    is ``-inf`` before the softmax (zero weight, the normaliser over the other keys)."""
    logits = beta * S  # a new tensor: S is shared by the other models
    if diagonal == "removed":
        logits.diagonal(dim1=-2, dim2=-1).fill_(-math.inf)
    return torch.softmax(logits, dim=-2 if normalise == "keys" else -1)


def _exponential_of_scores(S: torch.Tensor, beta: float, p: int) -> torch.Tensor:
    """Paper B's kernel ``f_beta(S) / sqrt p``, ``f_beta(x) = exp(beta x - beta^2/2) - 1``, diagonal removed."""
    K = torch.expm1(beta * S - 0.5 * beta * beta) / math.sqrt(p)
    K.diagonal(dim1=-2, dim2=-1).zero_()
    return K


# --------------------------------------------------- Monte Carlo on paper B's machinery (run_trials and its error path)
class _SoftmaxModels(NamedTuple):
    """The models of :func:`softmax_error_mc`: inverse temperatures, spikes (tensors), the softmax kernel's diagonal and
    normalisation, which kinds run, and whether labels are averaged."""

    betas: list[float]
    spikes: list[tuple[torch.Tensor | None, torch.Tensor | None]]
    diagonal: str
    normalise: str
    kinds: tuple[str, ...]
    label_average: bool

    @property
    def count(self) -> int:
        kernels = ("softmax" in self.kinds) + ("entrywise" in self.kinds)
        return len(self.betas) * len(self.spikes) * kernels + ("ridge" in self.kinds)


def _softmax_batch(seeds: Sequence[np.random.SeedSequence], draws: Draws, gammas: torch.Tensor,
                   models: _SoftmaxModels) -> dict[str, np.ndarray]:
    """Per-trial errors of every model of :func:`softmax_error_mc` on one batch of shared draws."""
    n, p, device = draws.n, draws.p, draws.device
    betas, spikes, diagonal, normalise, kinds, label_average = models
    Xb, yb = draws.sample(seeds)
    y = None if label_average else yb
    g = gammas.to(device)
    g_soft = g * softmax_gamma_scale(n, p)
    T, G = Xb.shape[0], g.numel()
    kernels = [k for k in ("softmax", "entrywise") if k in kinds]
    out: dict[str, np.ndarray] = {k: np.empty((len(betas), len(spikes), T, G)) for k in kernels}
    if "ridge" in kinds:
        out["ridge"] = errors_batch(Xb, y, g).cpu().numpy()
    if not kernels:
        return out
    S0 = gram(Xb.transpose(-1, -2))  # X^T X, shared by every spike, beta and kernel
    R = feature_basis(Xb, S0)  # features X K as R K: the same errors (p > n: n x n, fewer flops)
    for s, (wk, wq) in enumerate(spikes):
        uv = spike_outer(Xb, wk, wq)
        S = (S0 if uv is None else S0 + uv) / math.sqrt(p)
        for b, beta in enumerate(betas):
            if "softmax" in kinds:
                K = _softmax_of_scores(S, beta, diagonal, normalise)
                out["softmax"][b, s] = errors_batch(R @ K, y, g_soft).cpu().numpy()
                del K
            if "entrywise" in kinds:
                K = _exponential_of_scores(S, beta, p)
                out["entrywise"][b, s] = errors_batch(R @ K, y, g).cpu().numpy()
                del K
    return out


#: what :func:`softmax_error_mc` evaluates on each draw
KINDS = ("softmax", "entrywise", "ridge")


def softmax_error_mc(model: Any, p: Any, gammas: ArrayLike, betas: ArrayLike, settings: MonteCarloSettings, *,
                     kind: Any = KINDS, normalise: str = "keys", label_average: bool = False) -> dict[str, np.ndarray]:
    """Per-trial ``E(gamma)`` of softmax attention, paper B's entrywise exponential kernel and ridge, paired draws.

    Parameters
    ----------
    model : theory.AttentionModel or sequence of them
        The data and the weights: ``c`` (``n = p / c`` tokens, ``>= 2`` with the diagonal removed), ``snr``, the spike
        of ``W`` and the softmax kernel's diagonal (``"removed"`` masks the self score, ``"kept"`` keeps it); several
        models may differ only in their spike.  The activation is not used: ``betas`` set the kernels.
    p : int
        Dimension; ``p / c`` must be a whole number.
    gammas : array (G,), ``>= 0``
        In paper B's units (softmax: evaluated at ``gammas * p / (n - 1)^2``, see the module docstring).
    betas : float or array (B,) in ``[0, BETA_MAX]``
        Inverse temperatures (all on the same draws).
    settings : numerics.MonteCarloSettings
        Trials (``>= 2``), seed, threads, batching, device and labels.
    kind : {"softmax", "entrywise", "ridge"} or tuple of them
        What runs: softmax attention (``K`` of the module docstring), paper B's kernel of ``f_beta`` (diagonal removed,
        whatever the model's diagonal), ridge (``Phi = X``).
    normalise : {"keys", "rows"}
    label_average : bool
        Only for ``snr = 0``: the exact average over i.i.d. Rademacher labels of each draw of ``X``,
        ``gamma^2/n tr Q^2`` (as :func:`numerics.simulate_model`).

    Returns
    -------
    dict
        Per kind: ``"softmax"``, ``"entrywise"``: ``(B, len(models), n_trials, G)``; ``"ridge"``: ``(n_trials, G)``.

    Raises
    ------
    ValueError
        As :func:`numerics.simulate_model` (arguments, device, memory budget checked before the first draw).

    Examples
    --------
    >>> from theory import AttentionModel
    >>> from numerics import MonteCarloSettings
    >>> out = softmax_error_mc(AttentionModel(0.5, "identity"), 8, [0.1], [1.0], MonteCarloSettings(2, seed=0))
    >>> out["softmax"].shape, out["ridge"].shape
    ((1, 1, 2, 1), (2, 1))
    """
    models = model_list(model)
    n, pv = model_sizes(models[0], p)
    settings = check_settings(settings)
    diagonal = check_diagonal_named(models[0])
    if diagonal == "removed" and n < 2:  # a masked softmax needs another key for every query
        raise ValueError(f"n must be >= 2 with diagonal='removed' (each query needs another key), got n = {n}")
    kinds = check_kinds(kind, KINDS)
    normalise = check_choice("normalise", normalise, _NORMALISE)
    snr = models[0].snr
    label_average = check_label_average(label_average, snr)
    g = torch.from_numpy(check_gammas(gammas))
    b = [float(v) for v in np.atleast_1d(as_array("betas", betas, ndim=(0, 1), low=0, high=BETA_MAX))]
    draws = Draws(n, pv, float(snr), settings.labels, settings.device)
    spikes = [spike_tensors(m, pv, draws.device) for m in models]
    shared = _SoftmaxModels(b, spikes, diagonal, normalise, kinds, label_average)
    size = mc_batch_size(draws, settings, g.numel(), 6, shared.count)

    def batch(seeds: list[np.random.SeedSequence], ids: list[int]) -> dict[str, np.ndarray]:
        return _softmax_batch(seeds, draws, g, shared)

    args = dict(n=n, p=pv, snr=snr, gammas=gammas, betas=betas)
    with _numeric("softmax_error_mc", **args):
        parts = run_trials(batch, settings, size)
    out = {k: np.concatenate([pt[k] for pt in parts], axis=-2) for k in parts[0]}
    finite_result("softmax_error_mc", list(out.values()), **args)
    return out
