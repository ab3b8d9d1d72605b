"""Paper B's Monte Carlo plumbing: argument checks, samples, trial seeds and batches.

Every trial has its own seed spawned from one ``numpy.random.SeedSequence``, and trials run in batches sized to the
memory budget, so results do not depend on the batch size or on ``n_jobs``.  Private (paper B's simulations use it);
:func:`sample_signal_plus_noise` is public as ``numerics.rmt.sample_signal_plus_noise``.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch

from theory.validation import (as_array, as_float, as_int, check_array_memory, check_choice, check_flag,
                               check_random_state)

from .mc_settings import LABEL_LAWS, MonteCarloSettings
from .threads import in_parallel, thread_map, torch_threads


ArrayLike = Any
DIAGONAL_MODES = ("removed", "kept")
#: memory of one trial's seed (a spawned ``numpy.random.SeedSequence``, measured: about 380 bytes)
SEED_BYTES = 512


# ------------------------------ validation helpers (theory.validation's rules; memory checked before any allocation)
def as_float_array(name: str, a: ArrayLike, ndim: int | None = None) -> np.ndarray:
    """Checked float64 array (a torch tensor is read as its numpy array): real, finite, not empty."""
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().numpy()
    return as_array(name, a, ndim=ndim)


def check_vector(name: str, v: ArrayLike, size: int, what: str) -> np.ndarray:
    """``v`` as a finite float64 vector of ``size`` entries (``what`` names that size in the message: ``"p"``, ...)."""
    out = as_float_array(name, v, ndim=1)
    if out.shape[0] != size:
        raise ValueError(f"{name} must have length {what} = {size}, got {out.shape[0]}")
    return out


def check_gammas(gammas: ArrayLike) -> np.ndarray:
    """``gammas`` as a non-empty 1-d float64 array of finite values ``>= 0`` (a scalar is one value)."""
    return np.atleast_1d(as_array("gammas", gammas, ndim=(0, 1), low=0))


def check_diagonal(diagonal: str) -> str:
    return check_choice("diagonal", diagonal, DIAGONAL_MODES)


def check_memory(what: str, n_bytes: int) -> None:
    """Refuse work whose intermediate arrays (``n_bytes``, float64) exceed the memory budget; ``what`` (the message's
    first words) names the arguments that set the size."""
    check_array_memory(what, -(-int(n_bytes) // 8), 8)


def check_kernel_memory(name: str, p: int, n: int) -> None:
    """Budget of an ``n x n`` kernel of ``(p, n)`` samples (``X^T X``, the kernel, the activation's copies)."""
    check_memory(f"{name} (n = {n} tokens: {n} x {n} kernels)", 8 * (4 * n * n + 2 * p * n))


# ----------------------------------------------------------------------------------------- sampling and features
def sample_signal_plus_noise(n: int, p: int, snr: float, rng: np.random.Generator | int, mu: ArrayLike | None = None,
                             labels: str = "balanced") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw ``X = mu y^T + Z`` (``p x n``), labels ``y`` and the mean ``mu``.

    Parameters
    ----------
    n, p : int
        Number of tokens (columns) and dimension (rows), both ``>= 1``.
    snr : float
        ``||mu||^2``, a finite real number ``>= 0`` (checked, then ignored when ``mu`` is given).
    rng : numpy.random.Generator or int
        Source of randomness (an int is a seed in ``[0, MAX_SEED]``).
    mu : array of shape (p,), optional
        Overrides ``snr`` (default ``mu = sqrt(snr) e_1``).
    labels : {"balanced", "iid"}
        ``"balanced"``: ``ceil(n/2)`` labels ``+1``, ``floor(n/2)`` labels ``-1``, random order; ``"iid"``: Rademacher.

    Returns
    -------
    X : ndarray (p, n), y : ndarray (n,), mu : ndarray (p,)

    Raises
    ------
    ValueError
        An argument outside its range, or ``X`` (with its temporaries, ``24 p n`` bytes) over the memory budget
        ``theory.get_limits().memory_budget_bytes`` (checked before anything is allocated).

    Examples
    --------
    >>> X, y, mu = sample_signal_plus_noise(8, 4, 1.0, 0)
    >>> X.shape, y.shape, float(mu @ mu)
    ((4, 8), (8,), 1.0)
    """
    n, p = as_int("n", n, 1), as_int("p", p, 1)
    check_memory(f"n, p (X of shape ({p}, {n}))", 8 * 3 * p * n)  # Z, mu y^T and X
    check_choice("labels", labels, LABEL_LAWS)
    snr = as_float("snr", snr, low=0)
    mu_v = None if mu is None else check_vector("mu", mu, p, "p")
    return draw_sample(n, p, snr, check_random_state("rng", rng, none_ok=False), labels, mu_v)


def draw_sample(n: int, p: int, snr: float, g: np.random.Generator, labels: str, mu_v: np.ndarray | None = None,
                out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`sample_signal_plus_noise` on checked arguments (the Monte Carlo's draw; ``mu_v`` overrides ``snr``);
    ``out``: a float64 array ``(p, n)`` that receives ``X`` (the same numbers)."""
    y = draw_labels(g, n, labels)
    X = g.standard_normal((p, n)) if out is None else g.standard_normal(out=out)
    if mu_v is None:  # mu y^T has one nonzero row: add it in place (the same sums as the full outer product)
        mu_v = np.zeros(p)
        mu_v[0] = math.sqrt(snr)
        X[0] += mu_v[0] * y
    else:
        X += np.outer(mu_v, y)
    return X, y, mu_v


def label_posterior_mean(X: ArrayLike, mu: ArrayLike) -> np.ndarray:
    """``E[y_i | X] = tanh(mu^T x_i)``: the labels' posterior means under :func:`sample_signal_plus_noise`'s model.

    With ``x_i = mu y_i + z_i`` and ``y_i = +-1`` equally likely a priori, ``P(y_i | x_i) ~ exp(y_i mu^T x_i)``: exact
    for ``labels="iid"``, up to ``O(1/n)`` for ``labels="balanced"`` (weakly dependent labels).  Pass it as
    ``label_mean`` of :func:`numerics.interpolation_error_label_average`.

    Parameters
    ----------
    X : array (p, n), finite.
    mu : array (p,), finite.

    Returns
    -------
    ndarray (n,), in ``[-1, 1]``

    Examples
    --------
    >>> X, y, mu = sample_signal_plus_noise(6, 3, 4.0, 0)
    >>> bool(np.all(np.sign(label_posterior_mean(X, mu)) == np.sign(X[0])))
    True
    """
    Xa = as_float_array("X", X, ndim=2)
    return np.tanh(check_vector("mu", mu, Xa.shape[0], "p") @ Xa)


def draw_labels(g: np.random.Generator, n: int, labels: str) -> np.ndarray:
    if labels == "balanced":
        y = np.ones(n)
        y[n // 2 + (n % 2):] = -1.0  # floor(n/2) minus ones, ceil(n/2) plus ones
        return g.permutation(y)
    return g.choice(np.array([-1.0, 1.0]), size=n)  # "iid"


def check_spikes(w_k: ArrayLike | None, w_q: ArrayLike | None, p: int,
                  names: tuple[str, str] = ("w_k", "w_q")) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The spike ``(w_k, w_q)`` (``names`` in messages): finite float64 vectors of length ``p``, or ``(None, None)``."""
    if (w_k is None) != (w_q is None):
        raise ValueError(f"{names[0]} and {names[1]} must be given together (W = I + w_k w_q^T) or both be None")
    if w_k is None:
        return None, None
    wk, wq = (check_vector(name, w, p, "p") for name, w in zip(names, (w_k, w_q)))
    return wk, wq


# ----------------------------------------------------------------------------------------- Monte Carlo
@dataclass(frozen=True)
class Draws:
    """What every trial draws: ``X = mu y^T + Z`` of shape ``(p, n)``, ``mu = sqrt(snr) e_1``, labels by ``labels``,
    stacked on ``device`` (checked by the simulation that builds it)."""

    n: int
    p: int
    snr: float
    labels: str
    device: str

    def sample(self, seeds: Sequence[np.random.SeedSequence]) -> tuple[torch.Tensor, torch.Tensor]:
        """Samples ``X`` (T, p, n) and labels ``y`` (T, n) of a batch of trials, trial ``t`` from its own seed (drawn
        in place into the batch: no copy)."""
        X, ys = np.empty((len(seeds), self.p, self.n)), np.empty((len(seeds), self.n))
        for t, ss in enumerate(seeds):
            _, ys[t], _ = draw_sample(self.n, self.p, self.snr, np.random.default_rng(ss), self.labels, out=X[t])
        return torch.from_numpy(X).to(self.device), torch.from_numpy(ys).to(self.device)

    def sample_gram(self, seeds: Sequence[np.random.SeedSequence]) -> tuple[torch.Tensor, torch.Tensor]:
        """``S`` (T, n, n) with the law of :meth:`sample`'s ``X^T X`` jointly with the labels ``y`` (T, n), drawn
        without ``X`` (``p >= n``): ``S = x x^T + U U^T``, ``x = sqrt(snr) y + z`` the first row of ``X`` and ``U U^T``
        the other ``p - 1`` rows' ``Wishart_n(p - 1, I)`` sum, from its upper triangular Bartlett factor (``U_ii^2 ~
        chi^2_{p-n+i}``, ``U_ij ~ N(0, 1)`` for ``j > i``; Bartlett's lower factor with both axes reversed).  It
        costs ``n^2 / 2`` normal draws and an ``n^3 / 3`` triangular product (LAPACK ``lauum``) instead of ``p n``
        draws and a ``p n^2`` Gram matrix."""
        from scipy.linalg import lapack

        n, p = self.n, self.p
        if p < n:
            raise ValueError(f"drawing X^T X needs p >= n, got p={p}, n={n}")
        S, ys = np.empty((len(seeds), n, n)), np.empty((len(seeds), n))
        dof = (p - n + np.arange(n)) / 2.0
        with contextlib.nullcontext() if in_parallel() else torch_threads(1):
            for t, ss in enumerate(seeds):
                g = np.random.default_rng(ss)
                ys[t] = draw_labels(g, n, self.labels)
                x = math.sqrt(self.snr) * ys[t] + g.standard_normal(n)
                ut = np.zeros((n, n))  # U^T, row by row; its transpose is U in Fortran order (no copy)
                diag = np.sqrt(2.0 * g.standard_gamma(dof))
                for i in range(n):
                    ut[i, :i] = g.standard_normal(i)
                    ut[i, i] = diag[i]
                uu, info = lapack.dlauum(ut.T, lower=0, overwrite_c=1)  # U U^T's upper triangle
                if info != 0:
                    raise RuntimeError(f"LAPACK dlauum failed (info={info})")
                S[t] = uu + np.triu(uu, 1).T + np.outer(x, x)  # uu is zero below its diagonal (U's zeros)
        return torch.from_numpy(S).to(self.device), torch.from_numpy(ys).to(self.device)


def check_label_average(label_average: Any, snr: Any) -> bool:
    """``label_average``, a bool, only with ``snr = 0``."""
    if check_flag("label_average", label_average) and float(snr) != 0.0:
        raise ValueError(f"label_average requires snr = 0 (labels independent of the features), got snr={snr!r}")
    return bool(label_average)


def mc_batch_size(draws: Draws, settings: MonteCarloSettings, n_gammas: int, gram_buffers: int,
                  n_models: int) -> int:
    """Trials per batch (``batch_size``, or memory-based), after refusing, before any draw, one trial, a batch or the
    table of per-trial errors over the memory budget (a trial works in ``trial_bytes`` plus its shrinkage arrays and
    keeps a spawned seed and ``n_models x G`` errors)."""
    n, p, n_trials, batch_size = draws.n, draws.p, settings.n_trials, settings.batch_size
    per_trial = trial_bytes(n, p, gram_buffers) + 8 * 4 * min(p, n) * n_gammas
    check_memory(f"n, p (one trial of {p} x {n} samples and {n_gammas} gammas)", per_trial)
    size = batch_size
    if size is None:  # about 200 MB of float64 working memory a batch, at most 64 trials
        size = int(max(1, min(64, 2.0e8 // float(trial_bytes(n, p, gram_buffers)))))
    batch = min(size, n_trials)
    check_memory(f"batch_size (a batch of {batch} trials of {p} x {n} samples)", batch * per_trial)
    check_memory(f"n_trials ({n_trials} trials of {n_models} x {n_gammas} errors)",
                  n_trials * (SEED_BYTES + 8 * 3 * n_models * n_gammas))
    return size


def trial_bytes(n: int, p: int, gram_buffers: int) -> int:
    """Float64 working memory of one trial: samples and features, ``gram_buffers`` ``n x n`` arrays, the Gram."""
    return 8 * (3 * p * n + gram_buffers * n * n + min(p, n) ** 2)


def run_trials(batch: Callable[[list[np.random.SeedSequence], list[int]], Any], settings: MonteCarloSettings,
               batch_size: int) -> list:
    """The Monte Carlo core: ``batch(seeds, trial_ids)`` over consecutive batches of ``batch_size`` trials, in
    ``settings.n_jobs`` threads; trial ``t`` always gets ``SeedSequence(settings.seed).spawn(settings.n_trials)[t]``,
    and the parts come back in trial order."""
    n_trials, n_jobs = settings.n_trials, settings.n_jobs
    seeds = np.random.SeedSequence(settings.seed).spawn(n_trials)

    def run(ids: list[int]) -> Any:
        return batch([seeds[i] for i in ids], ids)

    if n_jobs > 1 and -(-n_trials // batch_size) < n_jobs <= n_trials:  # fewer batches than workers: re-split
        batch_size = -(-n_trials // n_jobs)
    chunks = [list(range(s0, min(n_trials, s0 + batch_size))) for s0 in range(0, n_trials, batch_size)]
    return thread_map(run, chunks, n_jobs)


def spike_outer(Xb: torch.Tensor, wk: torch.Tensor | None, wq: torch.Tensor | None) -> torch.Tensor | None:
    """``(X^T w_k)(w_q^T X)`` (T, n, n) of a spike, ``None`` for ``W = I``."""
    if wk is None:
        return None
    a, b = spike_projections(Xb, wk, wq)
    return a.unsqueeze(-1) * b.unsqueeze(-2)


def spike_projections(Xb: torch.Tensor, wk: torch.Tensor, wq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(X^T w_k, X^T w_q)``, each (T, n): the two factors of a spike's ``uv = a b^T``."""
    return torch.einsum("p,tpn->tn", wk, Xb), torch.einsum("p,tpn->tn", wq, Xb)
