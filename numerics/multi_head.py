"""Multi-head attention's Monte Carlo: :func:`numerics.simulate_model` of a :class:`theory.MultiHeadModel`.

The same trials as every paper-B simulation (:mod:`numerics.model_simulation`): trial ``t`` draws ``X = mu y^T + Z``
and ``y`` from ``SeedSequence(seed).spawn(n_trials)[t]`` (:class:`numerics._mc.Draws`), trials run in batches
(:func:`numerics._mc.run_trials`) and the errors of a whole ``gamma`` grid come from one factorisation per draw
(:func:`numerics._ridge_solvers.errors_batch`); ridge on the same draws is the paired baseline.  What a multi-head
model adds, per trial:

* random heads: ``Q_h, R_h`` (``p x d``, i.i.d. ``N(0, 1/p)``) from ``SeedSequence([seed, t, 11, h])``, ``W_h =
  sqrt(p/d) Q_h R_h^T`` never formed (``X^T W_h X = sqrt(p/d) (Q_h^T X)^T (R_h^T X)``);
* a value budget: head ``h``'s Haar ``v p x p`` partial isometry from ``SeedSequence([seed, t, 13, h])`` (the ``Q``
  factor of a Gaussian ``p x v p`` matrix);
* the linearised kernels (``kind="linearised"``): ``a_h (X^T W_h X / p - diag) + s-noise``, the noise from
  ``SeedSequence([seed, t, 7, k])``: shared heads, one symmetric matrix per column ``k`` of ``L`` with
  ``L L^T = Sigma`` (the covariance of the heads' nonlinear parts), random heads one i.i.d. matrix per head.

Models that share ``c`` and ``snr`` run on the same draws (a sequence of models); two models with the same heads
(``heads``, ``H``, ``d``) draw the same ``W_h`` and projections, so e.g. the sum and the concatenation of the same
random heads are paired too.  The heads of a trial are batched: one ``(T, H, n, n)`` stack of kernels, one batched
product for the features.

>>> from theory import MultiHeadModel
>>> from numerics import MonteCarloSettings, simulate_model
>>> m = MultiHeadModel(2.0, ("tanh", "gelu"), snr=1.0, heads="random", readout="concat")
>>> out = simulate_model([m], 32, [0.1], MonteCarloSettings(4, seed=0), kind=("true", "ridge"))
>>> out["true"].shape, out["ridge"].shape
((1, 4, 1), (4, 1))
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import torch

from theory.multi_head import MultiHeadModel
from theory.validation import ArgumentTypeError, as_int, describe, finite_result

from ._mc import Draws, check_gammas, check_label_average, mc_batch_size, run_trials
from ._ridge_solvers import errors_batch, feature_basis, gram
from .mc_settings import MonteCarloSettings
from .rmt import _apply_activation, resolve_activation
from .threads import torch_numeric_errors as _numeric

__all__ = ["multi_head_trials", "is_multi_head"]

#: what a multi-head simulation evaluates on each draw
KINDS = ("true", "linearised", "ridge")
#: the seed words of the draws a multi-head model adds to a trial (after ``[seed, t]``)
SEED_HEADS, SEED_VALUES, SEED_NOISE = 11, 13, 7


def is_multi_head(model: Any) -> bool:
    """True for a :class:`theory.MultiHeadModel` or a non-empty list or tuple of them."""
    if isinstance(model, MultiHeadModel):
        return True
    return isinstance(model, (list, tuple)) and bool(model) and isinstance(model[0], MultiHeadModel)


def _models(model: Any) -> list[MultiHeadModel]:
    models = [model] if isinstance(model, MultiHeadModel) else list(model)
    for i, m in enumerate(models):
        if not isinstance(m, MultiHeadModel):
            raise ArgumentTypeError(f"model[{i}] must be a theory.MultiHeadModel like model[0], got {describe(m)}")
    for i, m in enumerate(models[1:], 1):
        for field in ("c", "snr"):
            if getattr(m, field) != getattr(models[0], field):
                raise ValueError(f"the models run on one draw and must share c and snr; model[{i}].{field}="
                                 f"{getattr(m, field)!r}, model[0].{field}={getattr(models[0], field)!r}")
    return models


def _sizes(model: MultiHeadModel, p: Any) -> tuple[int, int]:
    pv = as_int("p", p, 1, 2**31 - 1)
    n = pv / model.c
    if not math.isclose(n, round(n), rel_tol=0, abs_tol=1e-9 * max(1.0, n)) or round(n) < 1:
        raise ValueError(f"the model's c={model.c} and p={pv} give n = p/c = {n:g} tokens, not a whole number; choose "
                         "p as a multiple of the numerator of c")
    return int(round(n)), pv


def head_dimension(model: MultiHeadModel, p: int) -> int:
    """``d`` of a random head at dimension ``p``: ``round(key_ratio p)`` (at least 1)."""
    return max(1, int(round(model.d_ratio * p)))


def value_dimension(model: MultiHeadModel, p: int) -> int | None:
    """``v p`` rows of each head's value projection (``None``: no projection), at least 1."""
    if model.value_ratio is None or model.value_ratio >= 1.0:
        return None
    return max(1, int(round(model.value_ratio * p)))


# --------------------------------------------------------------------------------------------
# one batch of trials
# --------------------------------------------------------------------------------------------
def _gaussian(seed: int, t: int, word: int, h: int, shape: tuple[int, ...], scale: float) -> np.ndarray:
    return np.random.default_rng(np.random.SeedSequence([int(seed), int(t), word, int(h)])).standard_normal(shape) * scale


def _random_heads(trial_ids: Sequence[int], seed: int, H: int, p: int, d: int, device: str
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """``Q, R`` (T, H, p, d) of random heads: head ``h`` of trial ``t`` from ``SeedSequence([seed, t, 11, h])``."""
    Qs, Rs = [], []
    for t in trial_ids:
        qr = [_gaussian(seed, t, SEED_HEADS, h, (2, p, d), 1.0 / math.sqrt(p)) for h in range(H)]
        Qs.append(np.stack([a[0] for a in qr]))
        Rs.append(np.stack([a[1] for a in qr]))
    return torch.from_numpy(np.stack(Qs)).to(device), torch.from_numpy(np.stack(Rs)).to(device)


def _value_maps(trial_ids: Sequence[int], seed: int, H: int, p: int, k: int, device: str) -> torch.Tensor:
    """``P`` (T, H, k, p): Haar partial isometries (orthonormal rows), head ``h`` of trial ``t`` from
    ``SeedSequence([seed, t, 13, h])``."""
    out = []
    for t in trial_ids:
        out.append(np.stack([np.linalg.qr(_gaussian(seed, t, SEED_VALUES, h, (p, k), 1.0))[0].T for h in range(H)]))
    return torch.from_numpy(np.stack(out)).to(device)


def _noise(trial_ids: Sequence[int], seed: int, count: int, n: int, symmetric: bool, device: str) -> torch.Tensor:
    """(T, count, n, n) standard Gaussian matrices with zero diagonal (symmetrised: unit off-diagonal variance)."""
    out = []
    for t in trial_ids:
        mats = []
        for k in range(count):
            Xi = _gaussian(seed, t, SEED_NOISE, k, (n, n), 1.0)
            if symmetric:
                Xi = (Xi + Xi.T) / math.sqrt(2.0)
            np.fill_diagonal(Xi, 0.0)
            mats.append(Xi)
        out.append(np.stack(mats))
    return torch.from_numpy(np.stack(out)).to(device)


def _scores(model: MultiHeadModel, Xb: torch.Tensor, S0: torch.Tensor, heads: Any) -> torch.Tensor:
    """``A_h = X^T W_h X / sqrt p`` (T, H, n, n): shared heads ``X^T X / sqrt p`` (one for all), random heads
    ``sqrt(p/d) (Q_h^T X)^T (R_h^T X) / sqrt p``."""
    p = Xb.shape[-2]
    if model.heads == "shared":
        return (S0 / math.sqrt(p)).unsqueeze(1)
    Q, R = heads
    d = Q.shape[-1]
    Xt = Xb.transpose(-1, -2).unsqueeze(1)  # (T, 1, n, p)
    return (Xt @ Q) @ (Xt @ R).transpose(-1, -2) * (math.sqrt(p / d) / math.sqrt(p))


def _kernels(model: MultiHeadModel, A: torch.Tensor, p: int, kind: str, noise: torch.Tensor | None,
             fs: list) -> torch.Tensor:
    """The heads' kernels (T, H, n, n), diagonal removed: ``f_h(A_h) / sqrt p`` (``"true"``; ``fs`` the heads'
    resolved activations) or the Gaussian equivalent ``a_h A_h / sqrt p + s-noise / sqrt p`` (``"linearised"``)."""
    H, sp_ = model.H, math.sqrt(p)
    Ah = [A[:, min(h, A.shape[1] - 1)] for h in range(H)]
    if kind == "true":
        K = torch.stack([_apply_activation(fs[h], Ah[h]) for h in range(H)], dim=1) / sp_
    else:
        a, Sig = model.kernel_constants()
        if model.heads == "shared":
            load = _loadings(Sig)
            mix = torch.from_numpy(load).to(A.dtype).to(A.device)  # (H, k)
            Nz = torch.einsum("hk,tkij->thij", mix, noise)
        else:
            Nz = noise * torch.from_numpy(np.sqrt(np.clip(np.diag(Sig), 0, None))).to(A.device).view(1, H, 1, 1)
        K = (torch.stack([float(a[h]) * Ah[h] for h in range(H)], dim=1) + Nz) / sp_
    K.diagonal(dim1=-2, dim2=-1).zero_()
    return K


def _loadings(Sig: np.ndarray) -> np.ndarray:
    """``L`` with ``L L^T = Sigma`` (the columns of its positive eigenvalues)."""
    w, V = np.linalg.eigh(np.asarray(Sig))
    keep = w > 1e-13 * max(float(w.max()), 1e-300)
    return V[:, keep] * np.sqrt(w[keep])


def _features(model: MultiHeadModel, Xb: torch.Tensor, basis: torch.Tensor, K: torch.Tensor,
              values: torch.Tensor | None) -> torch.Tensor:
    """``Phi`` (T, rows, n): ``basis H^(-1/2) sum_h K_h`` (sum), the stacked ``basis K_h`` (concatenation) or the
    stacked ``P_h X K_h`` (a budget; ``basis`` is any ``B`` with ``B^T B = X^T X``: the errors read ``Phi^T Phi``)."""
    T, H, n, _ = K.shape
    if model.readout == "sum":
        return basis @ (K.sum(dim=1) / math.sqrt(H))
    if values is None:
        F = basis.unsqueeze(1) @ K  # (T, H, m, n): the heads batched
    else:
        F = (values @ Xb.unsqueeze(1)) @ K  # (T, H, k, n)
    return F.reshape(T, -1, n)


def _batch(seeds: Sequence[np.random.SeedSequence], trial_ids: Sequence[int], seed: int, draws: Draws,
           gammas: torch.Tensor, models: list[MultiHeadModel], fs: list[list], kinds: tuple[str, ...],
           label_average: bool) -> dict[str, np.ndarray]:
    Xb, yb = draws.sample(seeds)
    y = None if label_average else yb
    g = gammas.to(draws.device)
    p, n, dev = draws.p, draws.n, draws.device
    out: dict[str, np.ndarray] = {}
    if "ridge" in kinds:
        out["ridge"] = errors_batch(Xb, y, g).cpu().numpy()
    kernel_kinds = [k for k in ("true", "linearised") if k in kinds]
    if not kernel_kinds:
        return out
    S0 = gram(Xb.transpose(-1, -2))
    basis = feature_basis(Xb, S0)
    rows: dict[str, list[np.ndarray]] = {k: [] for k in kernel_kinds}
    drawn: dict[tuple, Any] = {}  # head matrices, projections and noise of this batch, shared by equal heads
    for model, f_heads in zip(models, fs):
        H = model.H
        heads = None
        if model.heads == "random":
            d = head_dimension(model, p)
            key = ("heads", H, d)
            if key not in drawn:
                drawn[key] = _random_heads(trial_ids, seed, H, p, d, dev)
            heads = drawn[key]
        A = _scores(model, Xb, S0, heads)
        k_v = value_dimension(model, p)
        values = None
        if model.readout == "concat" and k_v is not None:
            key = ("values", H, k_v)
            if key not in drawn:
                drawn[key] = _value_maps(trial_ids, seed, H, p, k_v, dev)
            values = drawn[key]
        for kind in kernel_kinds:
            noise = None
            if kind == "linearised":
                symmetric = model.heads == "shared"
                count = _loadings(model.kernel_constants()[1]).shape[1] if symmetric else H
                key = ("noise", symmetric, count)
                if key not in drawn:
                    drawn[key] = _noise(trial_ids, seed, count, n, symmetric, dev)
                noise = drawn[key]
            K = _kernels(model, A, p, kind, noise, f_heads)
            Phi = _features(model, Xb, basis, K, values)
            del K
            rows[kind].append(errors_batch(Phi, y, g).cpu().numpy())
            del Phi
        del A
    for kind in kernel_kinds:
        out[kind] = np.stack(rows[kind])
    return out


# --------------------------------------------------------------------------------------------
# the trials (numerics.simulate_model checks the common arguments, dispatches here and summarises)
# --------------------------------------------------------------------------------------------
def multi_head_trials(model: MultiHeadModel | Sequence[MultiHeadModel], p: Any, gammas: Any,
                      settings: MonteCarloSettings, kinds: tuple[str, ...], label_average: bool) -> dict[str, np.ndarray]:
    """Per-trial errors of one model or several on the same draws: ``"true"`` / ``"linearised"`` arrays
    ``(len(models), n_trials, G)``, ``"ridge"`` ``(n_trials, G)`` (``settings`` and ``kinds`` checked by
    :func:`numerics.simulate_model`)."""
    models = _models(model)
    n, pv = _sizes(models[0], p)
    label_average = check_label_average(label_average, models[0].snr)
    g = torch.from_numpy(check_gammas(gammas))
    draws = Draws(n, pv, float(models[0].snr), settings.labels, settings.device)
    args = dict(kind=kinds, n=n, p=pv, snr=draws.snr, gammas=gammas)
    H_max = max(m.H for m in models)
    size = mc_batch_size(draws, settings, g.numel(), 4 * H_max + 4, len(models) * len(kinds))
    # resolved once, here (in the calling thread: a first resolution builds the numpy function from sympy, pure
    # Python that two busy threads serialise on: measured 73 s instead of 4 s for two models at n = 2048, n_jobs = 2)
    fs = [[resolve_activation(f) for f in m.activations] if "true" in kinds else [] for m in models]

    def batch(seeds: list[np.random.SeedSequence], ids: list[int]) -> dict[str, np.ndarray]:
        return _batch(seeds, ids, settings.seed, draws, g, models, fs, kinds, label_average)

    with _numeric("simulate_model", **args):
        parts = run_trials(batch, settings, size)
    out = {k: np.concatenate([pt[k] for pt in parts], axis=-2) for k in parts[0]}
    finite_result("simulate_model", list(out.values()), **args)
    return out
