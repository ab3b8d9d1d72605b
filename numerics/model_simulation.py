"""Paper B's Monte Carlo: :func:`simulate_model`, the simulation twin of ``theory.AttentionModel.error``.

``simulate_model(model, p, gammas, settings)`` returns the mean and standard error over the trials of the interpolation
error ``E(gamma)`` of the model's kernel, or of ridge on the same data.  Models that differ only in their spike run on
the same draws (common random numbers): each trial forms ``X^T X`` once for every model's true and linearised
(Gaussian-equivalent) kernels and ridge, so paired differences have a small variance.  Trials run in batches (stacked
``(T, p, n)`` samples, batched float64 linear algebra) in ``n_jobs`` threads; the numbers depend on neither.

>>> from theory import AttentionModel
>>> from numerics import MonteCarloSettings
>>> model = AttentionModel(c=2.0, activation="tanh")
>>> mean, se = simulate_model(model, 64, [0.1], MonteCarloSettings(n_trials=4, seed=0))
>>> bool(abs(mean[0] - float(model.error(0.1))) < 5 * se[0] + 0.05)
True
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
import torch

from theory import AttentionModel, hermite_moments
from theory.validation import ArgumentTypeError, as_int, check_choice, check_flag, describe, finite_result

from .multi_head import KINDS as MULTI_HEAD_KINDS, is_multi_head, multi_head_trials
from ._mc import Draws, check_gammas, check_label_average, mc_batch_size, run_trials, spike_projections
from ._ridge_solvers import errors_batch, feature_basis, gram
from .mc_settings import MonteCarloSettings
from .rmt import kernel_batch, resolve_activation
from .threads import torch_numeric_errors as _numeric

__all__ = ["simulate_model"]

#: the largest dimension taken (the Monte Carlo's memory check refuses far smaller ones)
P_MAX = 2**31 - 1
#: what a simulation evaluates on each draw: the model's own kernel, its linearised kernel, ridge on its data
KINDS = ("true", "linearised", "ridge")

Spikes = list[tuple[torch.Tensor | None, torch.Tensor | None]]


# --------------------------------- the checks of the entry points (numerics.softmax takes the same models and settings)
def model_sizes(model: AttentionModel, p: Any) -> tuple[int, int]:
    """``(n, p)`` of a simulation of ``model`` (checked) at dimension ``p``: ``n = p / c``, a whole number."""
    pv = as_int("p", p, 1, P_MAX)
    c = float(model.c)
    n = pv / c
    if not math.isclose(n, round(n), rel_tol=0, abs_tol=1e-9 * max(1.0, n)) or round(n) < 1:
        raise ValueError(f"the model's c={model.c} and p={pv} give n = p/c = {n:g} tokens, not a whole number; choose "
                         "p as a multiple of the numerator of c")
    return int(round(n)), pv


def model_list(model: Any) -> list[AttentionModel]:
    """``model`` as a non-empty list of models that share ``c``, ``activation``, ``snr`` and ``diagonal`` (one draw
    and one kernel for all; they may differ in their spike)."""
    if isinstance(model, AttentionModel):
        return [model]
    if not isinstance(model, (list, tuple)) or not model:
        raise ArgumentTypeError(f"model must be a theory.AttentionModel or a non-empty list or tuple of them, got "
                                f"{describe(model)}")
    for i, m in enumerate(model):
        if not isinstance(m, AttentionModel):
            raise ArgumentTypeError(f"model[{i}] must be a theory.AttentionModel, got {describe(m)}")
    for i, m in enumerate(model[1:], 1):
        for field in ("c", "activation", "snr", "diagonal"):
            if getattr(m, field) != getattr(model[0], field):
                raise ValueError(f"the models run on one draw with one kernel and may differ only in their spike; "
                                 f"model[{i}].{field}={getattr(m, field)!r}, model[0].{field}="
                                 f"{getattr(model[0], field)!r}")
    return list(model)


def check_settings(settings: Any) -> MonteCarloSettings:
    """``settings``, a :class:`MonteCarloSettings` with ``n_trials >= 2`` (a standard error)."""
    if not isinstance(settings, MonteCarloSettings):
        raise ArgumentTypeError(f"settings must be a numerics.MonteCarloSettings, got {describe(settings)}")
    if settings.n_trials < 2:
        raise ValueError(f"settings.n_trials must be >= 2 (a standard error), got {settings.n_trials}")
    return settings


def check_kinds(kind: Any, allowed: tuple[str, ...] = KINDS) -> tuple[str, ...]:
    """``kind``, one of ``allowed`` or a non-empty tuple of distinct ones, as a tuple."""
    kinds = (kind,) if isinstance(kind, str) else kind
    if not isinstance(kinds, tuple) or not kinds:
        raise ArgumentTypeError(f"kind must be one of {allowed} or a non-empty tuple of them, got {describe(kind)}")
    for k in kinds:
        check_choice("kind", k, allowed)
    if len(set(kinds)) != len(kinds):
        raise ValueError(f"kind must name each of {allowed} at most once, got {kinds!r}")
    return kinds


def check_simulated_kernel(model: AttentionModel, kinds: tuple[str, ...]) -> None:
    """The kernels of ``kinds`` can be evaluated: ``"true"`` needs a named or sympy activation (kernel constants have
    no function), ``"true"`` and ``"linearised"`` a named diagonal."""
    if "true" in kinds and isinstance(model.activation, tuple):  # a FrozenDict of kernel constants
        raise ValueError("the model's activation is given by its kernel constants; a simulation needs the function")
    if "true" in kinds or "linearised" in kinds:
        check_diagonal_named(model)


def check_diagonal_named(model: AttentionModel) -> str:
    if not isinstance(model.diagonal, str):
        raise ValueError(f"the model's diagonal is the number {model.diagonal}; a simulation takes 'removed' or 'kept'")
    return model.diagonal


def _padded(w: np.ndarray, p: int, name: str) -> np.ndarray:
    if w.size > p:
        nonzero = int(np.flatnonzero(w)[-1]) + 1 if np.any(w) else 0
        if nonzero > p:
            raise ValueError(f"the model's {name} has {nonzero} coordinates, more than p={p}")
        w = w[:p]
    out = np.zeros(p)
    out[: w.size] = w
    return out


def spike_tensors(model: AttentionModel, p: int, device: str) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """The model's spike ``(w_k, w_q)`` padded to ``p`` coordinates, as tensors on ``device`` (``None``: ``W = I``)."""
    if model.spike is None:
        return None, None
    w_k, w_q = model.spike.vectors()
    return tuple(torch.from_numpy(_padded(w, p, name)).to(device) for w, name in ((w_k, "w_k"), (w_q, "w_q")))


def mean_se(trials: Any) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error (sample SD, ``ddof = 1``, over ``sqrt(n)``) over the first axis (the trials).

    >>> m, se = mean_se([[1.0, 2.0], [3.0, 6.0]])
    >>> m.tolist(), se.tolist()
    ([2.0, 4.0], [1.0, 2.0])
    """
    x = np.asarray(trials, dtype=float)
    return x.mean(axis=0), x.std(axis=0, ddof=1) / math.sqrt(x.shape[0])


# ---------------------------------------------------------------- one model (its true kernel or ridge) on its own draws
class _OneModel(NamedTuple):
    """The true kernel's ``f``, spike and diagonal, or ridge (``f = None``)."""

    f: Callable | None
    w_k: torch.Tensor | None
    w_q: torch.Tensor | None
    diagonal: str


def _one_model_batch(seeds: Sequence[np.random.SeedSequence], draws: Draws, gammas: torch.Tensor, model: _OneModel,
                     label_average: bool, wishart: bool = False) -> np.ndarray:
    """Per-trial errors ``(T, G)`` of one model (ridge or its true kernel) on a batch of trials (``wishart``: ridge
    at ``p >= n`` from :meth:`Draws.sample_gram`)."""
    if wishart and draws.p >= draws.n:
        S, yb = draws.sample_gram(seeds)
        return errors_batch(None, None if label_average else yb, gammas.to(draws.device), S).cpu().numpy()
    if model.f is None:
        Phi, yb = draws.sample(seeds)
    else:
        Xb, yb = draws.sample(seeds)
        S0 = gram(Xb.transpose(-1, -2))  # X^T X: the kernel's scores and (p > n) the basis
        K = kernel_batch(Xb, model.f, model.w_k, model.w_q, model.diagonal, S0)
        Phi = feature_basis(Xb, S0) @ K  # p > n: the n x n stand-in for X (same errors, fewer flops)
    return errors_batch(Phi, None if label_average else yb, gammas.to(draws.device)).cpu().numpy()


def _one_model_trials(draws: Draws, gammas: torch.Tensor, model: _OneModel, settings: MonteCarloSettings,
                      label_average: bool, args: dict[str, Any], wishart: bool = False) -> np.ndarray:
    size = mc_batch_size(draws, settings, gammas.numel(), 3, 1)

    def batch(seeds: list[np.random.SeedSequence], ids: list[int]) -> np.ndarray:
        return _one_model_batch(seeds, draws, gammas, model, label_average, wishart)

    with _numeric("simulate_model", **args):
        return np.concatenate(run_trials(batch, settings, size), axis=0)


# ------------------------------------------------------------- several models on the same draws (common random numbers)
class _SharedModels(NamedTuple):
    """The true kernel's ``f`` (or ``None``), the spikes (as tensors), ridge, the linearised kernel's ``(a1, sf2)``
    (or ``None``), the true kernel's diagonal, whether the labels are averaged."""

    f: Callable | None
    spikes: Spikes
    ridge: bool
    linearised: tuple[float, float] | None
    diagonal: str
    label_average: bool

    @property
    def count(self) -> int:
        return len(self.spikes) * ((self.f is not None) + (self.linearised is not None)) + self.ridge


def _symmetric_noise_batch(trial_ids: Sequence[int], seed: int, n: int, device: str) -> torch.Tensor:
    """``Xi`` (T, n, n) of the linearised kernel: trial ``t`` from ``SeedSequence([seed, t, 7])``, symmetrised."""
    Xis = []
    for t in trial_ids:
        Xi = np.random.default_rng(np.random.SeedSequence([int(seed), int(t), 7])).standard_normal((n, n))
        Xis.append((Xi + Xi.T) / math.sqrt(2.0))
    return torch.from_numpy(np.stack(Xis)).to(device)


def _shared_batch(seeds: Sequence[np.random.SeedSequence], trial_ids: Sequence[int], seed: int, draws: Draws,
                  gammas: torch.Tensor, models: _SharedModels) -> dict[str, np.ndarray]:
    """Per-trial errors of every model on one batch of shared draws."""
    n, p, device = draws.n, draws.p, draws.device
    f, spikes, ridge, linearised, diagonal, label_average = models
    Xb, yb = draws.sample(seeds)
    y = None if label_average else yb
    g = gammas.to(device)
    out: dict[str, np.ndarray] = {}
    if ridge:
        out["ridge"] = errors_batch(Xb, y, g).cpu().numpy()
    if not spikes:
        return out
    S0 = gram(Xb.transpose(-1, -2))  # X^T X, shared by every spike and both kernels
    R = feature_basis(Xb, S0)  # features X M as R M: the same errors (p > n: n x n, fewer flops)
    phi_lin0 = None
    if linearised is not None:
        # the linearised kernel without a spike, diagonal removed (it has no diagonal term), and its features X K_lin0:
        # the p n^2 product once per batch; a spike adds (a1 / p) (uv - diag uv), uv = a b^T, whose features
        # X uv - X diag(a * b) = (X a) b^T - X diag(a * b) cost O(p n) (not another p n^2 product)
        Xi = _symmetric_noise_batch(trial_ids, seed, n, device)
        K = linearised[0] * S0 / p + math.sqrt(linearised[1]) * Xi / math.sqrt(p)
        del Xi
        K.diagonal(dim1=-2, dim2=-1).zero_()
        phi_lin0 = R @ K
        del K
    true_rows, lin_rows = [], []
    for wk, wq in spikes:
        if f is not None:
            K = kernel_batch(Xb, f, wk, wq, diagonal, S0)
            true_rows.append(errors_batch(R @ K, y, g).cpu().numpy())
            del K
        if phi_lin0 is not None:
            phi = phi_lin0 if wk is None else phi_lin0 + _spike_features(Xb, wk, wq, linearised[0] / p, R)
            lin_rows.append(errors_batch(phi, y, g).cpu().numpy())
            del phi
    if true_rows:
        out["true"] = np.stack(true_rows)
    if lin_rows:
        out["linearised"] = np.stack(lin_rows)
    return out


def _spike_features(Xb: torch.Tensor, wk: torch.Tensor, wq: torch.Tensor, scale: float,
                    basis: torch.Tensor) -> torch.Tensor:
    """``scale B (uv - diag uv)``, ``uv = a b^T``, ``a = X^T w_k``, ``b = X^T w_q``, in O(p n); ``B`` is ``basis``
    (:func:`numerics._ridge_solvers.feature_basis`)."""
    a, b = spike_projections(Xb, wk, wq)
    xa = basis @ a.unsqueeze(-1)  # (T, p, 1)
    return scale * (xa * b.unsqueeze(-2) - basis * (a * b).unsqueeze(-2))


def _linearised_constants(model: AttentionModel) -> tuple[float, float]:
    """``(a1, s_f^2)`` of the model's activation (its Hermite moments, or its kernel constants)."""
    if isinstance(model.activation, tuple):  # a FrozenDict of kernel constants
        constants = dict(model.activation)
        return float(constants["a1"]), float(constants["sf2"])
    hm = hermite_moments(model.activation)
    return float(hm.a1), float(hm.sf2)


def _shared_trials(draws: Draws, gammas: torch.Tensor, models: list[AttentionModel], kinds: tuple[str, ...],
                   settings: MonteCarloSettings, label_average: bool, args: dict[str, Any]) -> dict[str, np.ndarray]:
    kernels = "true" in kinds or "linearised" in kinds
    shared = _SharedModels(resolve_activation(models[0].activation) if "true" in kinds else None,
                           [spike_tensors(m, draws.p, draws.device) for m in models] if kernels else [],
                           "ridge" in kinds, _linearised_constants(models[0]) if "linearised" in kinds else None,
                           models[0].diagonal, label_average)
    size = mc_batch_size(draws, settings, gammas.numel(), 5, shared.count)

    def batch(seeds: list[np.random.SeedSequence], ids: list[int]) -> dict[str, np.ndarray]:
        return _shared_batch(seeds, ids, settings.seed, draws, gammas, shared)

    with _numeric("simulate_model", **args):
        parts = run_trials(batch, settings, size)
    return {k: np.concatenate([pt[k] for pt in parts], axis=-2) for k in parts[0]}


def _one_model(model: AttentionModel, kind: str, draws: Draws) -> _OneModel:
    """The record of one model's true kernel (``kind="true"``) or of ridge on its data."""
    if kind == "ridge":
        return _OneModel(None, None, None, model.diagonal)
    return _OneModel(resolve_activation(model.activation), *spike_tensors(model, draws.p, draws.device), model.diagonal)


def _check_one_only(return_trials: Any, wishart: Any, one: bool, ridge: bool) -> None:
    """``return_trials`` only with one model and one kind; ``wishart`` only with one model and ridge."""
    if check_flag("return_trials", return_trials) and not one:
        raise ValueError("return_trials applies to one model and one kind (the others return their per-trial errors)")
    if check_flag("wishart", wishart) and not (one and ridge):
        raise ValueError("wishart applies to one model with kind='ridge'")


# ----------------------------------------------------------------------------------------- the door
def simulate_model(model: AttentionModel | Sequence[AttentionModel], p: Any, gammas: Any, settings: MonteCarloSettings,
                   *, kind: str | Sequence[str] = "true", return_trials: bool = False,
                   label_average: bool = False, wishart: bool = False) -> Any:
    """Monte Carlo of ``E(gamma)`` over draws of ``X = mu y^T + Z`` at ``n = p / c``: one model, or several per draw.

    Parameters
    ----------
    model : theory.AttentionModel or sequence of them, or theory.MultiHeadModel or sequence of them
        One model, or models that differ only in their spike (the same ``c``, activation, ``snr`` and diagonal,
        ``"removed"`` or ``"kept"``), all on the same draws ``X, y``; spikes are padded with zeros to ``p`` coordinates.
        Multi-head models (:mod:`numerics.multi_head`) may differ in all but ``c`` and ``snr``.
    p : int
        Dimension; ``p / c`` must be a whole number.
    gammas : array (G,), ``>= 0``.
    settings : numerics.MonteCarloSettings
        Trials (``>= 2``), seed, threads, batching, device and labels.
    kind : {"true", "linearised", "ridge"} or tuple of them
        ``"true"``: the model's kernel ``f(X^T W X / sqrt p) / sqrt p``; ``"linearised"``: its Gaussian equivalent
        ``a1 (X^T W X / p - diag) + s_f Xi / sqrt p`` (``Xi`` symmetric, zero diagonal, from
        ``SeedSequence([seed, t, 7])`` for every spike); ``"ridge"``: ridge on the same data (``Phi = X``).
    return_trials : bool
        With one model and one kind: also return the ``(n_trials, G)`` per-trial errors.
    label_average : bool
        Only for ``snr = 0``: for each draw of ``X``, the exact average of ``E`` over i.i.d. Rademacher labels (the mean
        of ``labels="iid"``, a much smaller variance).
    wishart : bool
        Only for one model with ``kind="ridge"``, at ``p >= n`` (else ignored): ``X^T X`` drawn in law, not ``X``
        (``Draws.sample_gram``, about ``3 p / n`` times cheaper); not the draws a kernel's run on the seed pairs with.

    Returns
    -------
    mean, se : ndarray (G,)  [, trials : ndarray (n_trials, G)]
        With one model and one kind (``se``: sample standard deviation / sqrt(n_trials)).
    dict
        With a sequence of models or a tuple of kinds, the per-trial errors of each kind: ``"true"`` and
        ``"linearised"`` arrays ``(len(models), n_trials, G)``, ``"ridge"`` ``(n_trials, G)``.

    Raises
    ------
    ValueError
        Invalid arguments; a batch or the per-trial errors over the memory budget (before any draw); non-finite errors.

    Examples
    --------
    >>> from theory import AttentionModel
    >>> from numerics import MonteCarloSettings
    >>> models = [AttentionModel(2.0, "tanh", snr=1.0), AttentionModel(2.0, "tanh", snr=1.0, spike=(4.0, "aligned"))]
    >>> out = simulate_model(models, 32, [0.1, 1.0], MonteCarloSettings(3, seed=0), kind=("true", "ridge"))
    >>> out["true"].shape, out["ridge"].shape
    ((2, 3, 2), (3, 2))
    """
    heads = is_multi_head(model)  # a theory.MultiHeadModel: the same draws, batches and error paths
    if not heads:
        models = model_list(model)
        n, pv = model_sizes(models[0], p)
    settings = check_settings(settings)
    kinds = check_kinds(kind, MULTI_HEAD_KINDS if heads else KINDS)
    one = not isinstance(model, (list, tuple)) and isinstance(kind, str)
    _check_one_only(return_trials, wishart, one, not heads and kind == "ridge")
    if heads:
        args = dict(kind=kind, p=p, gammas=gammas)
        out = multi_head_trials(model, p, gammas, settings, kinds, label_average)
    else:
        check_simulated_kernel(models[0], kinds)
        label_average = check_label_average(label_average, models[0].snr)
        g = torch.from_numpy(check_gammas(gammas))
        draws = Draws(n, pv, float(models[0].snr), settings.labels, settings.device)
        args = dict(kind=kind, n=n, p=pv, snr=draws.snr, gammas=gammas, activation=models[0].activation)
        if one and kind != "linearised":  # one model's kernel, or ridge, on batches of its own size
            errors = _one_model_trials(draws, g, _one_model(models[0], kind, draws), settings, label_average, args,
                                       wishart)
            out = {kind: errors if kind == "ridge" else errors[None]}
        else:
            out = _shared_trials(draws, g, models, kinds, settings, label_average, args)
            finite_result("simulate_model", list(out.values()), **args)
    if not one:
        return out
    trials = out[kind] if kind == "ridge" else out[kind][0]
    mean, se = finite_result("simulate_model", mean_se(trials), **args)
    return (mean, se, trials) if return_trials else (mean, se)
