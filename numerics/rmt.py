"""Paper B numerics: signal-plus-noise samples, ridge / attention features, interpolation error.

Model (SPEC, paper B): ``X = mu y^T + Z`` in ``R^{p x n}``, ``Z`` standard Gaussian, ``y in {+1,-1}^n``.
Attention features ``Phi = X K_X`` with ``K_X = f(X^T W X / sqrt p) / sqrt p``, ``W = I_p + w_k w_q^T``;
ridge features ``Phi = X``.  The interpolation (memorisation) error of the ridge probe
``w = (Phi Phi^T + n gamma I_p)^{-1} Phi y`` is

``E(gamma) = 1/n ||y - Phi^T w||^2 = gamma^2 / n  y^T Q^2 y``,  ``Q = (Phi^T Phi / n + gamma I_n)^{-1}``

(exact algebra: ``y - Phi^T w = n gamma (Phi^T Phi + n gamma I)^{-1} y = gamma Q y`` by the push-through
identity).  :func:`interpolation_error` evaluates a whole ``gamma`` grid from ONE symmetric
eigendecomposition of the smaller Gram matrix (``n x n`` when ``p >= n``, ``p x p`` otherwise):

* ``p >= n``: ``Phi^T Phi / n = V diag(lam) V^T`` and
  ``E = 1/n sum_k g_k^2 (v_k^T y)^2``, ``g_k = gamma / (lam_k + gamma)``;
* ``p < n``: ``Phi Phi^T / n = U diag(lam) U^T``, ``b = U^T Phi y``; the null space of ``Phi`` keeps
  ``g = 1``, so ``E = 1/n (||y||^2 - 1/n sum_k b_k^2 (1 + g_k) / (lam_k + gamma))``
  (uses ``1 - g^2 = lam (1 + g) / (lam + gamma)`` and ``(v_k^T y)^2 = b_k^2 / (n lam_k)``; no division by a
  small eigenvalue when ``gamma > 0``).

When every gamma is positive (CPU), one Householder tridiagonalisation serves the whole grid: a reflector
``H`` maps the right-hand side (``y``, or ``Phi y`` when ``p < n``) to ``beta e_1``, LAPACK ``sytrd`` reduces
``H G H = Q T Q^T`` with ``Q e_1 = e_1``, so every quadratic form of the resolvent is one of the tridiagonal
``T``: with ``u = (T + gamma)^{-1} e_1`` (one O(m) ``ptsv`` solve per gamma),
``E = gamma^2 beta^2 ||u||^2 / n`` (``p >= n``) and ``E = (||y||^2 - beta^2 (u_1 + gamma ||u||^2) / n) / n``
(``p < n``).  It is used from a measured number of gammas on (``_tridiagonal_min_gammas``: ``sytrd`` costs
2-7 Cholesky factorisations); below it, per-gamma Cholesky solves of the same Gram matrix; a failed
factorisation (numerically not positive definite) falls back to ``eigh``.  Gram matrices ``A A^T`` are
formed from their lower block triangle (``_gram``).

At ``gamma = 0`` eigenvalues below ``n * eps * max(lam)`` count as null directions (``g = 1``).

Monte Carlo (:func:`interpolation_error_mc`) batches trials: stacked ``(T, p, n)`` samples, batched
products and ``torch.linalg.eigh`` in float64; every trial has its own seed spawned from one
``numpy.random.SeedSequence``, so results do not depend on the batch size or on ``n_jobs``.

For the null model (labels independent of ``Phi``) :func:`interpolation_error_label_average` and
``interpolation_error_mc(..., label_average=True)`` return the exact average over i.i.d. Rademacher labels,
``gamma^2/n tr Q^2`` (eigenvalues only), a Rao-Blackwellised estimator with a much smaller variance.
:func:`gaussian_equivalent_kernel` builds the linearised null kernel (symmetric or independent-entry
noise) as a diagnostic of the null-model theory.

Labels: ``y`` is *balanced* by default (``ceil(n/2)`` entries ``+1`` and ``floor(n/2)`` entries ``-1``, in random order);
``labels="iid"`` draws Rademacher labels.  The signal direction is ``e_1`` by default
(``mu = sqrt(snr) e_1``); ``mu_direction="random"`` draws a uniform direction; ``mu=`` overrides both.
Because ``Z`` is rotation invariant the direction does not change the law of the error when
``W = I``.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Callable, Sequence

import numpy as np
import torch

from theory._validation import (
    ArgumentTypeError,
    as_array,
    as_float,
    as_int,
    check_array_memory,
    check_choice,
    check_flag,
    describe,
    finite_result,
)

from .threads import _torch_numeric_errors as _numeric
from .threads import check_device, check_n_jobs, in_parallel, thread_map, torch_threads

__all__ = [
    "sample_signal_plus_noise",
    "ridge_features",
    "attention_features",
    "interpolation_error",
    "interpolation_error_direct",
    "interpolation_error_mc",
    "interpolation_error_mc_shared",
    "interpolation_error_label_average",
    "gaussian_equivalent_kernel",
    "kernel_eigenvalues",
    "resolve_activation",
]

ArrayLike = Any
_DIAGONAL_MODES = ("removed", "kept")
#: seeds are integers in ``[0, MAX_SEED]``
MAX_SEED = 2**63 - 1
#: memory of one trial's seed (a spawned ``numpy.random.SeedSequence``, measured: about 380 bytes)
_SEED_BYTES = 512
#: largest ``batch_size`` of the Monte Carlo (a larger batch than ``n_trials`` is one batch)
_MAX_BATCH = 2**31 - 1


# --------------------------------------------------------------------------------------------
# validation helpers (the rules are theory._validation's: finite real numbers, exact integers, the memory
# budget theory.get_limits().memory_budget_bytes checked before any allocation)
# --------------------------------------------------------------------------------------------
def _as_float_array(name: str, a: ArrayLike, ndim: int | None = None) -> np.ndarray:
    """Checked float64 array (a torch tensor is read as its numpy array): real, finite, not empty."""
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().numpy()
    return as_array(name, a, ndim=ndim)


def _check_gammas(gammas: ArrayLike) -> np.ndarray:
    """``gammas`` as a non-empty 1-d float64 array of finite values ``>= 0`` (a scalar is one value)."""
    return np.atleast_1d(as_array("gammas", gammas, ndim=(0, 1), low=0))


def _check_diagonal(diagonal: str) -> str:
    return check_choice("diagonal", diagonal, _DIAGONAL_MODES)


def _check_labels(name: str, y: np.ndarray, n: int) -> np.ndarray:
    y = _as_float_array(name, y, ndim=1)
    if y.shape[0] != n:
        raise ValueError(f"{name} must have length n = {n} (the number of columns of features), got {y.shape[0]}")
    return y


def _check_seed(name: str, seed: Any) -> int:
    return as_int(name, seed, 0, MAX_SEED)


def _check_memory(what: str, n_bytes: int) -> None:
    """Refuse work whose intermediate arrays (``n_bytes``, float64) exceed the memory budget; ``what`` names the
    arguments that set the size (the first words of the message)."""
    check_array_memory(what, -(-int(n_bytes) // 8), 8)


def _check_features_memory(name: str, p: int, n: int, n_gammas: int) -> None:
    """Budget of the error path on ``(p, n)`` features: the smaller Gram matrix, its eigenvectors and the
    ``(min(p, n), G)`` shrinkage arrays."""
    m = min(p, n)
    _check_memory(f"{name}, gammas ({p} x {n} features, {n_gammas} gammas)", 8 * (3 * m * m + 4 * m * n_gammas + p * n))


def _check_kernel_memory(name: str, p: int, n: int) -> None:
    """Budget of an ``n x n`` kernel of ``(p, n)`` samples (``X^T X``, the kernel, the activation's copies)."""
    _check_memory(f"{name} (n = {n} tokens: {n} x {n} kernels)", 8 * (4 * n * n + 2 * p * n))


# --------------------------------------------------------------------------------------------
# activation
# --------------------------------------------------------------------------------------------
def resolve_activation(activation: Any) -> Callable[[np.ndarray], np.ndarray]:
    """Turn an activation spec into a vectorised numpy callable (the CENTRED activation).

    Parameters
    ----------
    activation : str, sympy expression or callable
        A registry name of :func:`theory.activation` or a sympy expression in ``theory.symbols.x``
        (both centred by :func:`theory.numpy_activation`: the Gaussian mean ``a0`` is subtracted), or a
        numpy callable (used AS GIVEN: centring is then the caller's job).

    Returns
    -------
    callable
        ``f(ndarray) -> ndarray``.
    """
    import sympy as sp

    if isinstance(activation, (str, sp.Basic)):
        import theory

        theory.check_activation(activation, argname="activation")  # messages name "activation"
        return theory.numpy_activation(activation, centered=True)
    if callable(activation) and not isinstance(activation, type):
        return activation
    raise ArgumentTypeError(f"activation must be a registry name, a sympy expression or a callable, got "
                            f"{describe(activation)} of type {type(activation).__name__}")


def _apply_activation(f: Callable[[np.ndarray], np.ndarray], t: torch.Tensor) -> torch.Tensor:
    """``f`` on the entries of ``t`` (finite); its values must be finite real numbers of a shape that broadcasts."""
    arr = t.detach().cpu().numpy()
    if not np.all(np.isfinite(arr)):
        raise ValueError("X (with w_k, w_q, or snr) is too large: the kernel's argument X^T W X / sqrt(p) is not "
                         "finite in float64")
    out = np.asarray(f(arr))
    if out.dtype.kind not in "iuf" or not np.all(np.isfinite(out)):
        raise ValueError(f"activation must return finite real values; {describe(f)} returned {describe(out)}")
    out = np.asarray(out, dtype=np.float64)
    if out.shape != arr.shape:
        try:
            out = np.broadcast_to(out, arr.shape).copy()
        except ValueError:
            raise ValueError(f"activation must return an array of the shape of its argument {arr.shape} (or one "
                             f"that broadcasts to it), got shape {out.shape}") from None
    return torch.from_numpy(out).to(t.device)


# --------------------------------------------------------------------------------------------
# sampling and features
# --------------------------------------------------------------------------------------------
def _rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    """``rng`` itself (a ``numpy.random.Generator``) or the generator of the integer seed ``rng``."""
    if isinstance(rng, np.random.Generator):
        return rng
    if not isinstance(rng, (int, np.integer)) or isinstance(rng, bool):
        raise ArgumentTypeError(f"rng must be a numpy.random.Generator or an integer seed in [0, {MAX_SEED}], got "
                                f"{describe(rng)} of type {type(rng).__name__}")
    return np.random.default_rng(_check_seed("rng", rng))


def sample_signal_plus_noise(
    n: int,
    p: int,
    snr: float,
    rng: np.random.Generator | int,
    mu: ArrayLike | None = None,
    labels: str = "balanced",
    mu_direction: str = "e1",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        Overrides ``snr`` and ``mu_direction``.
    labels : {"balanced", "iid"}
        ``"balanced"``: ``ceil(n/2)`` labels ``+1``, ``floor(n/2)`` labels ``-1``, random order; ``"iid"``: Rademacher.
    mu_direction : {"e1", "random"}
        Direction of ``mu`` when it is built from ``snr``.

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
    _check_memory(f"n, p (X of shape ({p}, {n}))", 8 * 3 * p * n)  # Z, mu y^T and X
    check_choice("labels", labels, ("balanced", "iid"))
    check_choice("mu_direction", mu_direction, ("e1", "random"))
    snr = as_float("snr", snr, low=0)
    mu_v = None if mu is None else _check_mean(mu, p)
    g = _rng(rng)
    if mu_v is None:
        if mu_direction == "e1":
            mu_v = np.zeros(p)
            mu_v[0] = math.sqrt(snr)
        else:
            v = g.standard_normal(p)
            mu_v = math.sqrt(snr) * v / np.linalg.norm(v)
    y = _draw_labels(g, n, labels)
    Z = g.standard_normal((p, n))
    X = np.outer(mu_v, y) + Z
    return X, y, mu_v


def _check_mean(mu: ArrayLike, p: int) -> np.ndarray:
    """``mu`` as a finite float64 vector of length ``p``."""
    mu_v = _as_float_array("mu", mu, ndim=1)
    if mu_v.shape[0] != p:
        raise ValueError(f"mu must have length p = {p}, got {mu_v.shape[0]}")
    return mu_v


def _draw_labels(g: np.random.Generator, n: int, labels: str) -> np.ndarray:
    if labels == "balanced":
        y = np.ones(n)
        y[n // 2 + (n % 2):] = -1.0  # floor(n/2) minus ones, ceil(n/2) plus ones
        return g.permutation(y)
    if labels == "iid":
        return g.choice(np.array([-1.0, 1.0]), size=n)
    raise ValueError(f"labels must be 'balanced' or 'iid', got {labels!r}")


def ridge_features(X: ArrayLike) -> np.ndarray:
    """Linear-regression features: ``Phi = X`` (validated float64 copy-free view).

    Parameters
    ----------
    X : array (p, n) of finite real numbers (complex arrays are refused, not truncated to their real part).
    """
    return _as_float_array("X", X, ndim=2)


def _check_spikes(w_k: ArrayLike | None, w_q: ArrayLike | None, p: int,
                  names: tuple[str, str] = ("w_k", "w_q")) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The spike ``(w_k, w_q)`` (``names`` in messages): finite float64 vectors of length ``p``, or ``(None, None)``."""
    if (w_k is None) != (w_q is None):
        raise ValueError(f"{names[0]} and {names[1]} must be given together (W = I + w_k w_q^T) or both be None")
    if w_k is None:
        return None, None
    wk = _as_float_array(names[0], w_k, ndim=1)
    wq = _as_float_array(names[1], w_q, ndim=1)
    if wk.shape[0] != p:
        raise ValueError(f"{names[0]} must have length p = {p}, got {wk.shape[0]}")
    if wq.shape[0] != p:
        raise ValueError(f"{names[1]} must have length p = {p}, got {wq.shape[0]}")
    return wk, wq


def _kernel_batch(
    Xb: torch.Tensor,
    f: Callable[[np.ndarray], np.ndarray],
    w_k: torch.Tensor | None,
    w_q: torch.Tensor | None,
    diagonal: str,
    S0: torch.Tensor | None = None,
) -> torch.Tensor:
    """``K_X`` for a batch ``Xb`` of shape (T, p, n); W is never formed.  ``S0``: ``X^T X`` if the caller has it
    (read, not modified)."""
    p = Xb.shape[-2]
    S = _gram(Xb.transpose(-1, -2)) if S0 is None else S0  # X^T X, (T, n, n)
    if w_k is not None:
        a = torch.einsum("p,tpn->tn", w_k, Xb)  # X^T w_k
        b = torch.einsum("p,tpn->tn", w_q, Xb)  # X^T w_q
        S = S + a.unsqueeze(-1) * b.unsqueeze(-2)
    sp_ = math.sqrt(p)
    K = _apply_activation(f, S / sp_) / sp_
    if diagonal == "removed":
        K.diagonal(dim1=-2, dim2=-1).zero_()
    return K


def attention_features(
    X: ArrayLike,
    activation: Any,
    w_k: ArrayLike | None = None,
    w_q: ArrayLike | None = None,
    diagonal: str = "removed",
) -> np.ndarray:
    """Attention output ``Phi = X K_X``, ``K_X = f(X^T W X / sqrt p) / sqrt p``, ``W = I + w_k w_q^T``.

    ``W`` is never formed: ``X^T W X = X^T X + (X^T w_k)(w_q^T X)``.

    Parameters
    ----------
    X : array (p, n), finite.
    activation : str, sympy expression or callable
        See :func:`resolve_activation` (registry names and sympy expressions are centred).
    w_k, w_q : arrays (p,), optional
        Rank-one spike of ``W``; both or neither.
    diagonal : {"removed", "kept"}
        ``"removed"`` sets ``K_ii = 0``; ``"kept"`` keeps ``f(||x_i||^2 / sqrt p) / sqrt p``.

    Returns
    -------
    ndarray (p, n)
    """
    Xa = _as_float_array("X", X, ndim=2)
    _check_diagonal(diagonal)
    p = Xa.shape[0]
    _check_kernel_memory("X", p, Xa.shape[1])
    wk, wq = _check_spikes(w_k, w_q, p)
    f = resolve_activation(activation)
    Xt = torch.from_numpy(Xa).unsqueeze(0)
    K = _kernel_batch(
        Xt,
        f,
        None if wk is None else torch.from_numpy(wk),
        None if wq is None else torch.from_numpy(wq),
        diagonal,
    )
    return (Xt @ K)[0].numpy()


def kernel_eigenvalues(
    X: ArrayLike,
    activation: Any,
    diagonal: str = "removed",
) -> np.ndarray:
    """Eigenvalues (ascending) of the symmetric kernel ``K_X = f(X^T X / sqrt p) / sqrt p`` (``W = I``).

    Parameters
    ----------
    X : array (p, n), finite.
    activation : see :func:`resolve_activation`.
    diagonal : {"removed", "kept"}

    Returns
    -------
    ndarray (n,)
    """
    Xa = _as_float_array("X", X, ndim=2)
    _check_diagonal(diagonal)
    _check_kernel_memory("X", *Xa.shape)
    f = resolve_activation(activation)
    K = _kernel_batch(torch.from_numpy(Xa).unsqueeze(0), f, None, None, diagonal)[0]
    with _torch_threads(1 if K.shape[-1] <= _SINGLE_THREAD_EIGH_MAX else None), _numeric("kernel_eigenvalues", X=X):
        lam = torch.linalg.eigvalsh(K).numpy()
    return finite_result("kernel_eigenvalues", lam, X=X, activation=activation)


# --------------------------------------------------------------------------------------------
# interpolation error
# --------------------------------------------------------------------------------------------
#: CPU eigendecompositions of matrices up to this size run single-threaded (all sizes by default).
#: Threaded LAPACK ``syevd`` collapses when the cores are oversubscribed: measured on a loaded 2-core
#: machine, eight 200 x 200 ``eigh``: 0.09 s (1 thread) vs 6 s (2 threads); one 2048 x 2048 ``eigh``:
#: 6 s (1 thread) vs 56 s (2 threads).  Lower it on a dedicated many-core machine.
_SINGLE_THREAD_EIGH_MAX = 1 << 62


_torch_threads = torch_threads  # the project's one thread-pinning mechanism (numerics.threads)


def _eigh(G: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.linalg.eigh``; single-threaded on CPU up to ``_SINGLE_THREAD_EIGH_MAX`` (see there).

    Batches are parallelised over trials instead (``n_jobs`` of :func:`interpolation_error_mc`); inside a worker of
    :func:`numerics.threads.thread_map` (torch already at one thread) the process-wide setting is left alone.
    """
    if G.device.type != "cpu" or in_parallel() or G.shape[-1] > _SINGLE_THREAD_EIGH_MAX:
        return torch.linalg.eigh(G)
    with _torch_threads(1):
        return torch.linalg.eigh(G)


#: with at most this many (positive) gammas, per-gamma Cholesky solves (n^3/3 flops each) beat one
#: eigendecomposition with vectors (~9 n^3 flops).  Measured (one core, float64, whole error path
#: including the Gram product; Gram size m = min(p, n)): m = 1024 (p=1024, n=2048): 5 gammas 0.21 s
#: Cholesky vs 0.34 s eigh, 8: 0.29 vs 0.33, 12: 0.48 vs 0.34; m = 1024 (p=2048, n=1024): 8: 0.34 vs 0.49,
#: 12: 0.34 vs 0.32; m = 512: 8: 0.047 vs 0.050, 12: 0.065 vs 0.050.  Crossover between 8 and 12.
_CHOLESKY_MAX_GAMMAS = 8

#: blocks of at least this many rows make a Gram matrix's lower block triangle worth forming (below, one product)
_GRAM_BLOCK_ROWS = 256
#: at most this many row blocks (k blocks cost (k + 1) / (2 k) of the full product)
_GRAM_MAX_BLOCKS = 8


def _gram(A: torch.Tensor) -> torch.Tensor:
    """``A A^T`` (..., m, m) of ``A`` (..., m, k) from its lower block triangle, mirrored (exactly symmetric).

    torch has no ``syrk``; with ``b`` row blocks the products ``A_i A_j^T``, ``j <= i``, cost ``(b + 1) / (2 b)``
    of the full product.  Measured (one core, float64, MKL): m = 1024, k = 2048: 0.092 s -> 0.067 s
    (8 blocks); m = 4096, k = 8192: 5.5 s -> 3.3 s.
    """
    m = A.shape[-2]
    blocks = min(_GRAM_MAX_BLOCKS, m // _GRAM_BLOCK_ROWS)
    if blocks < 2:
        G = A @ A.transpose(-1, -2)
        return G.tril() + G.tril(-1).transpose(-1, -2)
    edges = [round(i * m / blocks) for i in range(blocks + 1)]
    G = torch.empty(A.shape[:-1] + (m,), dtype=A.dtype, device=A.device)
    for i in range(blocks):
        rows = slice(edges[i], edges[i + 1])
        for j in range(i + 1):
            cols = slice(edges[j], edges[j + 1])
            blk = A[..., rows, :] @ A[..., cols, :].transpose(-1, -2)
            if i == j:  # a diagonal block's own upper triangle from its lower one
                blk = blk.tril() + blk.tril(-1).transpose(-1, -2)
            G[..., rows, cols] = blk
            if i != j:
                G[..., cols, rows] = blk.transpose(-1, -2)
    return G


def _feature_basis(Xb: torch.Tensor, S0: torch.Tensor) -> torch.Tensor:
    """A stand-in for ``X`` in features ``X M`` when ``p > n``: ``R`` (T, n, n) with ``R^T R = X^T X``, else ``X``.

    For ``p >= n`` every error of :func:`_errors_batch` depends on the features ``Phi = X M`` only through
    ``Phi^T Phi / n = M^T X^T X M / n`` (each path forms that Gram matrix and ``y``; the label average its
    eigenvalues), so ``R M`` gives the same errors.  ``R = L^T`` from the Cholesky factor of ``S0 = X^T X``
    (``O(n^3 / 3)`` once per batch, shared by every kernel on the draw); each model then costs ``2 n^3 + 1.1 n^3``
    (``R M`` and its Gram) instead of ``2 p n^2 + 1.1 p n^2``: half at ``p = 2 n``.  ``X`` itself where
    ``p <= n`` (no gain) or ``S0`` is numerically not positive definite.
    """
    T, p, n = Xb.shape
    if p <= n:
        return Xb
    L, info = torch.linalg.cholesky_ex(S0)
    if bool(torch.any(info != 0)):
        return Xb
    return L.transpose(-1, -2)


def _tridiagonal_min_gammas(m: int) -> int:
    """Fewest gammas at which one ``sytrd`` of an ``m x m`` Gram matrix beats per-gamma Cholesky factorisations.

    Measured (one core, float64; scipy's LAPACK ``dsytrd`` vs torch ``cholesky_ex``): the reduction costs
    2.2 factorisations at m = 512, 2.7 at 1024, 3.9 at 2048, 7.3 at 4096 (its half of level-2 BLAS is
    memory-bound).  Whole error path at m = 1024, five gammas: 0.24 s (Cholesky) vs 0.12 s (tridiagonal).
    """
    return 3 if m <= 1536 else 5 if m <= 3072 else 8


def _errors_tridiagonal(Phi: torch.Tensor, y: torch.Tensor, gammas: torch.Tensor) -> torch.Tensor | None:
    """E(gamma) of a batch from one Householder tridiagonalisation per trial (CPU, every gamma > 0).

    See the module docstring for the algebra.  Returns ``None`` where a tridiagonal system is numerically not
    positive definite, or where ``p < n`` and the error is so small against ``||y||^2 / n`` that its
    difference form would lose more than eight digits (the caller falls back to the Cholesky / ``eigh`` paths).
    """
    T, p, n = Phi.shape
    if min(p, n) < 2:  # no off-diagonal: the other paths are as cheap
        return None
    if p >= n:
        G = _gram(Phi.transpose(-1, -2)) / n  # (T, n, n)
        rhs = y
    else:
        G = _gram(Phi) / n  # (T, p, p)
        rhs = (Phi @ y.unsqueeze(-1))[..., 0]
    Gn, bn, yn = G.numpy(), rhs.numpy(), y.numpy()
    g = gammas.numpy()
    out = np.empty((T, g.size))
    with contextlib.nullcontext() if in_parallel() else _torch_threads(1):  # scipy's BLAS too (numerics.threads)
        ok = _tridiagonal_rows(Gn, bn, yn, g, n, p >= n, out)
    return torch.from_numpy(out).to(Phi.dtype) if ok else None


def _tridiagonal_rows(Gn: np.ndarray, bn: np.ndarray, yn: np.ndarray, g: np.ndarray, n: int, wide: bool,
                      out: np.ndarray) -> bool:
    """The per-trial loop of :func:`_errors_tridiagonal` (``wide``: ``p >= n``); fills ``out``, False to decline."""
    from scipy.linalg import blas, lapack

    T, m = bn.shape
    sytrd, ptsv = lapack.get_lapack_funcs(("sytrd", "ptsv"), (Gn,))
    (syr2,) = blas.get_blas_funcs(("syr2",), (Gn,))
    lwork = int(lapack.get_lapack_funcs("sytrd_lwork", (Gn,))(m, lower=1)[0])
    e1 = np.zeros(m)
    e1[0] = 1.0
    for t in range(T):
        b = bn[t]
        yy = float(yn[t] @ yn[t])
        beta = float(np.linalg.norm(b))
        if beta == 0.0:  # p < n and Phi y = 0: w = 0 for every gamma
            out[t] = yy / n
            continue
        # reflector H = I - 2 v v^T / (v^T v) with H b = -sign(b_1) beta e_1; H G H = G - v z^T - z v^T.
        # G is symmetric and ours: its transpose is a Fortran-ordered view that LAPACK updates in place
        # (a C-ordered argument would be copied; measured m = 1024: sytrd 0.07-0.11 s -> 0.03 s)
        v = b.copy()
        v[0] += math.copysign(beta, b[0])
        vv = float(v @ v)
        w = 2.0 * (Gn[t] @ v) / vv
        z = w - (float(v @ w) / vv) * v
        Gh = syr2(-1.0, v, z, a=Gn[t].T, lower=1, overwrite_a=1)
        _, d, e, _, info = sytrd(Gh, lower=1, lwork=lwork, overwrite_a=1)
        if info != 0:
            return False
        for k, gk in enumerate(g):
            *_, u, info = ptsv(d + gk, e, e1)
            if info != 0:
                return False
            uu = float(u @ u)
            if wide:
                out[t, k] = gk * gk * beta * beta * uu / n
            else:
                drop = beta * beta * (float(u[0]) + gk * uu) / n
                if yy - drop < 1e-8 * yy:
                    return False
                out[t, k] = (yy - drop) / n
    return True


def _errors_cholesky(Phi: torch.Tensor, y: torch.Tensor, gammas: torch.Tensor) -> torch.Tensor | None:
    """Per-gamma Cholesky path (gamma > 0); ``None`` if a factorisation fails (caller falls back to eigh).

    ``p >= n``: ``E = gamma^2/n ||(Phi^T Phi/n + gamma)^{-1} y||^2``;
    ``p < n``: ``w = (Phi Phi^T/n + gamma)^{-1} Phi y / n``, ``E = ||y - Phi^T w||^2 / n``.
    """
    T, p, n = Phi.shape
    if p >= n:
        A = _gram(Phi.transpose(-1, -2)) / n
        rhs = y.unsqueeze(-1)
    else:
        A = _gram(Phi) / n
        rhs = Phi @ y.unsqueeze(-1) / n
    eye = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    cols = []
    ctx = _torch_threads(1) if A.device.type == "cpu" and not in_parallel() else contextlib.nullcontext()
    with ctx:
        for gv in gammas.tolist():
            L, info = torch.linalg.cholesky_ex(A + gv * eye)
            if bool(torch.any(info != 0)):
                return None
            v = torch.cholesky_solve(rhs, L)
            if p >= n:
                cols.append(gv**2 * (v**2).sum(dim=(-2, -1)) / n)
            else:
                r = y - (Phi.transpose(-1, -2) @ v)[..., 0]
                cols.append((r**2).sum(dim=-1) / n)
    return torch.stack(cols, dim=-1)


def _errors_batch(Phi: torch.Tensor, y: torch.Tensor | None, gammas: torch.Tensor) -> torch.Tensor:
    """E(gamma) for a batch: ``Phi`` (T, p, n), ``y`` (T, n), ``gammas`` (G,) -> (T, G).

    ``y = None``: the label average ``gamma^2/n tr Q^2`` (eigenvalues only).
    """
    T, p, n = Phi.shape
    g = gammas.view(1, 1, -1)
    if y is None:
        small = _gram(Phi.transpose(-1, -2)) if p >= n else _gram(Phi)
        if small.device.type == "cpu" and small.shape[-1] <= _SINGLE_THREAD_EIGH_MAX and not in_parallel():
            with _torch_threads(1):
                lam = torch.linalg.eigvalsh(small / n)
        else:
            lam = torch.linalg.eigvalsh(small / n)
        lam = lam.clamp_min(0.0).unsqueeze(-1)
        gk = _shrink(lam, g)
        return ((gk**2).sum(dim=1) + max(n - p, 0)) / n
    positive = bool(torch.all(gammas > 0))
    if positive and Phi.device.type == "cpu" and gammas.numel() >= _tridiagonal_min_gammas(min(p, n)):
        out = _errors_tridiagonal(Phi, y, gammas)
        if out is not None:
            return out
    if positive and gammas.numel() <= _CHOLESKY_MAX_GAMMAS:
        out = _errors_cholesky(Phi, y, gammas)
        if out is not None:
            return out
    return _errors_eigh(Phi, y, gammas)


def _errors_eigh(Phi: torch.Tensor, y: torch.Tensor, gammas: torch.Tensor) -> torch.Tensor:
    """E(gamma) of a batch from one eigendecomposition per trial (any gamma >= 0; the reference path)."""
    T, p, n = Phi.shape
    g = gammas.view(1, 1, -1)
    if p >= n:
        G = _gram(Phi.transpose(-1, -2)) / n  # (T, n, n)
        lam, V = _eigh(G)
        lam = lam.clamp_min(0.0).unsqueeze(-1)  # (T, n, 1)
        proj2 = (V.transpose(-1, -2) @ y.unsqueeze(-1)) ** 2  # (T, n, 1)
        gk = _shrink(lam, g)
        return (gk**2 * proj2).sum(dim=1) / n
    Gp = _gram(Phi) / n  # (T, p, p)
    lam, U = _eigh(Gp)
    lam = lam.clamp_min(0.0).unsqueeze(-1)  # (T, p, 1)
    b2 = (U.transpose(-1, -2) @ (Phi @ y.unsqueeze(-1))) ** 2  # (T, p, 1)
    gk = _shrink(lam, g)
    denom = lam + g
    tol = _null_tol(lam)
    with torch.no_grad():
        term = torch.where(denom > tol, b2 * (1.0 + gk) / torch.where(denom > tol, denom, torch.ones_like(denom)), 0.0)
    yy = (y**2).sum(dim=-1, keepdim=True)  # (T, 1)
    return (yy - term.sum(dim=1) / n) / n


def _null_tol(lam: torch.Tensor) -> torch.Tensor:
    m = lam.shape[-2]
    return lam.amax(dim=-2, keepdim=True) * (m * torch.finfo(lam.dtype).eps) + torch.finfo(lam.dtype).tiny


def _shrink(lam: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """``gamma / (lam + gamma)``; at ``gamma = 0``: 1 on numerically null eigenvalues, else 0."""
    tol = _null_tol(lam)
    pos = g > 0
    safe = torch.where(pos, g, torch.ones_like(g))
    shr = safe / (lam + safe)
    null = (lam <= tol).to(lam.dtype)
    return torch.where(pos, shr, null)


def interpolation_error(features: ArrayLike, y: ArrayLike, gammas: ArrayLike) -> np.ndarray:
    """Interpolation error ``E(gamma) = gamma^2/n y^T Q^2 y`` on a whole grid from ONE factorisation.

    Parameters
    ----------
    features : array (p, n)
        ``Phi`` (columns = tokens), finite real numbers (complex arrays are refused, not truncated).
    y : array (n,)
        Targets, finite.
    gammas : float or array (G,)
        Ridge parameters, ``>= 0``.

    Returns
    -------
    ndarray (G,)
        Equal to ``1/n ||y - Phi^T w||^2`` with ``w = (Phi Phi^T + n gamma I_p)^{-1} Phi y``
        (see :func:`interpolation_error_direct`).

    Raises
    ------
    ValueError
        Invalid arguments; the Gram matrix and its eigenvectors (about ``24 min(p, n)^2 + 32 min(p, n) G``
        bytes) over the memory budget; features or gammas so large that the errors are not finite in float64.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Phi, y = rng.standard_normal((5, 8)), np.sign(rng.standard_normal(8))
    >>> bool(np.allclose(interpolation_error(Phi, y, [0.1, 1.0]), interpolation_error_direct(Phi, y, [0.1, 1.0])))
    True
    """
    Phi = _as_float_array("features", features, ndim=2)
    yv = _check_labels("y", y, Phi.shape[1])
    g = _check_gammas(gammas)
    _check_features_memory("features", *Phi.shape, g.size)
    with _numeric("interpolation_error", features=features, y=y, gammas=gammas):
        out = _errors_batch(torch.from_numpy(Phi).unsqueeze(0), torch.from_numpy(yv).unsqueeze(0), torch.from_numpy(g))
    return finite_result("interpolation_error", out[0].numpy(), features=features, y=y, gammas=gammas)


def interpolation_error_label_average(features: ArrayLike, gammas: ArrayLike) -> np.ndarray:
    """Average of ``E(gamma)`` over i.i.d. Rademacher labels independent of ``Phi``: ``gamma^2/n tr Q^2``.

    ``E_y[y^T A y] = tr A`` for such labels, so this is the exact conditional mean given the features
    (eigenvalues only).  Valid for the null model (labels independent of ``X``).

    Parameters
    ----------
    features : array (p, n), finite.
    gammas : float or array, ``>= 0``.

    Returns
    -------
    ndarray (G,)
    """
    Phi = _as_float_array("features", features, ndim=2)
    g = _check_gammas(gammas)
    _check_features_memory("features", *Phi.shape, g.size)
    with _numeric("interpolation_error_label_average", features=features, gammas=gammas):
        out = _errors_batch(torch.from_numpy(Phi).unsqueeze(0), None, torch.from_numpy(g))[0].numpy()
    return finite_result("interpolation_error_label_average", out, features=features, gammas=gammas)


def gaussian_equivalent_kernel(
    X: ArrayLike,
    a1: float,
    nu: float,
    rng: np.random.Generator | int,
    symmetric: bool = True,
    d0: float = 0.0,
) -> np.ndarray:
    """Linearised (Gaussian-equivalent) null kernel ``a1 (X^T X / p - diag) + d0 I + s_f / sqrt(p) Xi``.

    ``s_f^2 = nu - a1^2``; ``Xi`` has zero diagonal and standard Gaussian off-diagonal entries, symmetric
    (GOE-like, as the kernel's nonlinear part is) when ``symmetric=True``, with independent entries
    otherwise (the "information-plus-noise" model whose deterministic equivalent has independent
    noise entries).  A diagnostic for the null-model theory; ``W = I``.

    Parameters
    ----------
    X : array (p, n), finite.
    a1, nu : Hermite data of the centred activation (finite reals, ``nu >= a1^2``).
    rng : numpy Generator or int seed.
    symmetric : bool
    d0 : diagonal constant (a finite real).

    Returns
    -------
    ndarray (n, n)
    """
    Xa = _as_float_array("X", X, ndim=2)
    a1, nu, d0 = as_float("a1", a1), as_float("nu", nu), as_float("d0", d0)
    check_flag("symmetric", symmetric)
    with _numeric("gaussian_equivalent_kernel", a1=a1, nu=nu):
        sf2 = nu - a1**2
    if not np.isfinite(sf2) or sf2 < -1e-12:
        raise ValueError(f"nu must be >= a1^2, got nu={nu!r}, a1={a1!r}")
    sf = math.sqrt(max(sf2, 0.0))
    p, n = Xa.shape
    _check_kernel_memory("X", p, n)
    g = _rng(rng)
    Xt = torch.from_numpy(Xa)
    K = (float(a1) * (Xt.T @ Xt) / p).numpy()
    Xi = g.standard_normal((n, n))
    if symmetric:
        Xi = (Xi + Xi.T) / math.sqrt(2.0)
    K = K + sf * Xi / math.sqrt(p)
    np.fill_diagonal(K, d0)
    return finite_result("gaussian_equivalent_kernel", K, X=X, a1=a1, nu=nu)


def interpolation_error_direct(features: ArrayLike, y: ArrayLike, gammas: ArrayLike) -> np.ndarray:
    """Reference implementation: one linear solve per ``gamma`` (SPEC normalisation).

    ``w = (Phi Phi^T + n gamma I_p)^{-1} Phi y``, ``E = 1/n ||y - Phi^T w||^2``. Requires ``gamma > 0``
    when ``Phi Phi^T`` is singular. Slow; used by tests and the benchmark baseline.
    """
    Phi = _as_float_array("features", features, ndim=2)
    yv = _check_labels("y", y, Phi.shape[1])
    g = _check_gammas(gammas)
    p, n = Phi.shape
    _check_memory(f"features ({p} x {n}: {p} x {p} systems)", 8 * (3 * p * p + p * n + g.size))
    out = np.empty(g.size)
    with _numeric("interpolation_error_direct", features=features, y=y, gammas=gammas):
        for i, gi in enumerate(g):
            A = Phi @ Phi.T + n * gi * np.eye(p)
            w = np.linalg.solve(A, Phi @ yv)
            r = yv - Phi.T @ w
            out[i] = r @ r / n
    return finite_result("interpolation_error_direct", out, features=features, y=y, gammas=gammas)


# --------------------------------------------------------------------------------------------
# Monte Carlo
# --------------------------------------------------------------------------------------------
def _draw_batch(
    seeds: Sequence[np.random.SeedSequence], n: int, p: int, snr: float, labels: str, device: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """Samples ``X`` (T, p, n) and labels ``y`` (T, n) of a batch of trials, trial ``t`` from its own seed."""
    Xs, ys = [], []
    for ss in seeds:
        X, y, _ = sample_signal_plus_noise(n, p, snr, np.random.default_rng(ss), labels=labels)
        Xs.append(X)
        ys.append(y)
    return torch.from_numpy(np.stack(Xs)).to(device), torch.from_numpy(np.stack(ys)).to(device)


def _trial_batch(
    seeds: Sequence[np.random.SeedSequence],
    kind: str,
    n: int,
    p: int,
    snr: float,
    gammas: torch.Tensor,
    f: Callable | None,
    w_k: torch.Tensor | None,
    w_q: torch.Tensor | None,
    diagonal: str,
    labels: str,
    device: str,
    label_average: bool = False,
) -> np.ndarray:
    """Per-trial errors ``(T, G)`` of one model (ridge or attention) on a batch of trials."""
    Xb, yb = _draw_batch(seeds, n, p, snr, labels, device)
    if kind == "ridge":
        Phi = Xb
    else:
        S0 = _gram(Xb.transpose(-1, -2))  # X^T X: the kernel's scores and (p > n) the basis
        K = _kernel_batch(Xb, f, w_k, w_q, diagonal, S0)
        Phi = _feature_basis(Xb, S0) @ K  # p > n: the n x n stand-in for X (same errors, fewer flops)
    return _errors_batch(Phi, None if label_average else yb, gammas.to(device)).cpu().numpy()


def _check_mc_arguments(n: Any, p: Any, n_trials: Any, seed: Any, n_jobs: Any, snr: Any, labels: Any, diagonal: Any,
                        device: Any, batch_size: Any) -> tuple[int, int, int]:
    """Validate the arguments both Monte Carlo entry points share; return ``(n, p, n_trials)`` as ints."""
    n, p = as_int("n", n, 1), as_int("p", p, 1)
    n_trials = as_int("n_trials", n_trials, 2)
    _check_seed("seed", seed)
    check_n_jobs("n_jobs", n_jobs)
    as_float("snr", snr, low=0)
    check_choice("labels", labels, ("balanced", "iid"))
    _check_diagonal(diagonal)
    check_device("device", device)
    if batch_size is not None:
        as_int("batch_size", batch_size, 1, _MAX_BATCH)
    return n, p, n_trials


def _check_label_average(label_average: Any, snr: Any) -> bool:
    """``label_average``, a bool, only with ``snr = 0``."""
    if check_flag("label_average", label_average) and float(snr) != 0.0:
        raise ValueError(f"label_average requires snr = 0 (labels independent of the features), got snr={snr!r}")
    return bool(label_average)


def _mc_batch_size(n: int, p: int, n_trials: int, n_gammas: int, batch_size: int | None, gram_buffers: int,
                   n_models: int) -> int:
    """Trials per batch (``batch_size``, or memory-based), after refusing, before any draw, one trial, a batch of
    trials or the table of per-trial errors over the memory budget.

    One trial works in ``_trial_bytes`` plus its shrinkage arrays; every trial keeps a spawned seed and
    ``n_models x G`` errors (stored, concatenated, averaged).
    """
    per_trial = _trial_bytes(n, p, gram_buffers) + 8 * 4 * min(p, n) * n_gammas
    _check_memory(f"n, p (one trial of {p} x {n} samples and {n_gammas} gammas)", per_trial)
    size = _default_batch_size(n, p, gram_buffers) if batch_size is None else int(batch_size)
    batch = min(size, n_trials)
    _check_memory(f"batch_size (a batch of {batch} trials of {p} x {n} samples)", batch * per_trial)
    _check_memory(f"n_trials ({n_trials} trials of {n_models} x {n_gammas} errors)",
                  n_trials * (_SEED_BYTES + 8 * 3 * n_models * n_gammas))
    return size


def _trial_bytes(n: int, p: int, gram_buffers: int) -> int:
    """Float64 working memory of one trial: samples and features, ``gram_buffers`` ``n x n`` arrays, the Gram."""
    return 8 * (3 * p * n + gram_buffers * n * n + min(p, n) ** 2)


def _spike_tensors(
    w_k: ArrayLike | None, w_q: ArrayLike | None, p: int, device: str, names: tuple[str, str] = ("w_k", "w_q")
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Validated spike ``(w_k, w_q)`` as tensors on ``device``, or ``(None, None)`` for ``W = I``."""
    wk_np, wq_np = _check_spikes(w_k, w_q, p, names)
    if wk_np is None:
        return None, None
    return torch.from_numpy(wk_np).to(device), torch.from_numpy(wq_np).to(device)


def _default_batch_size(n: int, p: int, gram_buffers: int) -> int:
    """Trials per batch: about 200 MB of float64 working memory a batch (``gram_buffers`` ``n x n`` arrays a
    trial besides the samples and features), at most 64."""
    per_trial = float(_trial_bytes(n, p, gram_buffers))
    return int(max(1, min(64, 2.0e8 // per_trial)))


def _trial_chunks(n_trials: int, batch_size: int, n_jobs: int) -> list[list[int]]:
    """Trial indices in consecutive batches of ``batch_size``; fewer batches than workers are re-split so
    that every worker gets one (results never depend on the split: every trial has its own seed)."""
    if n_jobs > 1 and -(-n_trials // batch_size) < n_jobs <= n_trials:
        batch_size = -(-n_trials // n_jobs)
    return [list(range(s0, min(n_trials, s0 + batch_size))) for s0 in range(0, n_trials, batch_size)]


def _run_trials(
    batch: Callable[[list[np.random.SeedSequence], list[int]], Any],
    n_trials: int,
    seed: int,
    batch_size: int,
    n_jobs: int,
) -> list:
    """The Monte Carlo core: ``batch(seeds, trial_ids)`` over consecutive batches of trials, in ``n_jobs`` threads.

    Trial ``t`` always gets ``SeedSequence(seed).spawn(n_trials)[t]``, so the draws do not depend on
    ``batch_size`` or ``n_jobs``; the parts come back in trial order (see :func:`numerics.threads.thread_map`).
    """
    as_int("batch_size", batch_size, 1)
    seeds = np.random.SeedSequence(int(seed)).spawn(n_trials)

    def run(ids: list[int]) -> Any:
        return batch([seeds[i] for i in ids], ids)

    return thread_map(run, _trial_chunks(n_trials, batch_size, n_jobs), n_jobs)


def _mean_se(trials: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error (sample standard deviation / sqrt(n_trials)) over the trials (axis 0)."""
    return trials.mean(axis=0), trials.std(axis=0, ddof=1) / math.sqrt(trials.shape[0])


def _single_model(
    kind: str, activation: Any, w_k: ArrayLike | None, w_q: ArrayLike | None, p: int, device: str
) -> tuple[Callable | None, torch.Tensor | None, torch.Tensor | None]:
    """Activation and spike tensors of :func:`interpolation_error_mc` (``None`` for ridge / ``W = I``)."""
    if kind == "attention":
        return (resolve_activation(activation), *_spike_tensors(w_k, w_q, p, device))
    if w_k is not None or w_q is not None:
        raise ValueError("w_k and w_q apply to kind='attention' only")
    return None, None, None


def interpolation_error_mc(
    kind: str,
    n: int,
    p: int,
    snr: float,
    gammas: ArrayLike,
    n_trials: int,
    seed: int,
    activation: Any = None,
    w_k: ArrayLike | None = None,
    w_q: ArrayLike | None = None,
    diagonal: str = "removed",
    n_jobs: int = 1,
    labels: str = "balanced",
    batch_size: int | None = None,
    device: str = "cpu",
    return_trials: bool = False,
    label_average: bool = False,
) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Monte Carlo mean and standard error of ``E(gamma)`` over independent draws of ``X = mu y^T + Z``.

    Parameters
    ----------
    kind : {"ridge", "attention"}
    n, p : int
        Tokens and dimension.
    snr : float
        ``||mu||^2`` (direction ``e_1``).
    gammas : array (G,), ``>= 0``.
    n_trials : int ``>= 2``.
    seed : int ``>= 0``
        Trial ``t`` uses ``SeedSequence(seed).spawn(n_trials)[t]``: independent of batching and ``n_jobs``.
    activation : see :func:`resolve_activation` (required for ``kind="attention"``).
    w_k, w_q : arrays (p,), optional (attention only).
    diagonal : {"removed", "kept"}
    n_jobs : int
        Threads over trial batches (torch releases the GIL).
    labels : {"balanced", "iid"}
    batch_size : int, optional
        Trials stacked per batched product / ``eigh`` call, in ``[1, 2**31 - 1]`` (default: memory-based, at
        most 64).
    device : str
        torch device for products and eigendecompositions.
    return_trials : bool
        Also return the (n_trials, G) array of per-trial errors.
    label_average : bool
        Only for ``snr = 0`` (labels independent of ``Phi``): return, for each draw of ``X``, the exact
        average of ``E`` over i.i.d. Rademacher labels, ``gamma^2/n tr Q^2 = 1/n sum_k g_k^2`` (plus the
        ``n - p`` null directions when ``p < n``), i.e. a Rao-Blackwellised estimator with the same mean
        as ``labels="iid"`` and a much smaller variance (eigenvalues only, no eigenvectors).

    Returns
    -------
    mean, se : ndarray (G,)  [, trials : ndarray (n_trials, G)]
        ``se`` = sample standard deviation / sqrt(n_trials).

    Raises
    ------
    ValueError
        Invalid arguments (``device`` a CUDA device this machine lacks included); a batch of trials or the
        table of per-trial errors over the memory budget ``theory.get_limits().memory_budget_bytes`` (checked
        before the first draw, so ``n_trials=10**12`` is refused at once); errors that are not finite.
    """
    check_choice("kind", kind, ("ridge", "attention"))
    n, p, n_trials = _check_mc_arguments(n, p, n_trials, seed, n_jobs, snr, labels, diagonal, device, batch_size)
    return_trials, label_average = check_flag("return_trials", return_trials), _check_label_average(label_average, snr)
    g = torch.from_numpy(_check_gammas(gammas))
    size = _mc_batch_size(n, p, n_trials, g.numel(), batch_size, 3, 1)
    f, wk, wq = _single_model(kind, activation, w_k, w_q, p, device)

    def batch(seeds: list[np.random.SeedSequence], ids: list[int]) -> np.ndarray:
        return _trial_batch(seeds, kind, n, p, float(snr), g, f, wk, wq, diagonal, labels, device, label_average)

    args = dict(kind=kind, n=n, p=p, snr=snr, gammas=gammas, activation=activation)
    with _numeric("interpolation_error_mc", **args):
        trials = np.concatenate(_run_trials(batch, n_trials, seed, size, n_jobs), axis=0)
    mean, se = finite_result("interpolation_error_mc", _mean_se(trials), **args)
    if return_trials:
        return mean, se, trials
    return mean, se


# --------------------------------------------------------------------------------------------
# several models on the same draws (common random numbers)
# --------------------------------------------------------------------------------------------
def _symmetric_noise_batch(trial_ids: Sequence[int], seed: int, n: int, device: str) -> torch.Tensor:
    """``Xi`` (T, n, n) of the linearised kernel: trial ``t`` from ``SeedSequence([seed, t, 7])``, symmetrised."""
    Xis = []
    for t in trial_ids:
        Xi = np.random.default_rng(np.random.SeedSequence([int(seed), int(t), 7])).standard_normal((n, n))
        Xis.append((Xi + Xi.T) / math.sqrt(2.0))
    return torch.from_numpy(np.stack(Xis)).to(device)


def _spike_outer(Xb: torch.Tensor, wk: torch.Tensor | None, wq: torch.Tensor | None) -> torch.Tensor | None:
    """``(X^T w_k)(w_q^T X)`` (T, n, n) of a spike, ``None`` for ``W = I``."""
    if wk is None:
        return None
    a, b = _spike_projections(Xb, wk, wq)
    return a.unsqueeze(-1) * b.unsqueeze(-2)


def _spike_projections(Xb: torch.Tensor, wk: torch.Tensor, wq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(X^T w_k, X^T w_q)``, each (T, n): the two factors of a spike's ``uv = a b^T``."""
    return torch.einsum("p,tpn->tn", wk, Xb), torch.einsum("p,tpn->tn", wq, Xb)


def _shared_batch(
    seeds: Sequence[np.random.SeedSequence],
    trial_ids: Sequence[int],
    seed: int,
    n: int,
    p: int,
    snr: float,
    gammas: torch.Tensor,
    f: Callable | None,
    spikes: Sequence[tuple[torch.Tensor | None, torch.Tensor | None]],
    ridge: bool,
    linearised: tuple[float, float] | None,
    diagonal: str,
    labels: str,
    device: str,
) -> dict[str, np.ndarray]:
    """Per-trial errors of every model of :func:`interpolation_error_mc_shared` on one batch of shared draws."""
    Xb, yb = _draw_batch(seeds, n, p, snr, labels, device)
    g = gammas.to(device)
    out: dict[str, np.ndarray] = {}
    if ridge:
        out["ridge"] = _errors_batch(Xb, yb, g).cpu().numpy()
    S0 = _gram(Xb.transpose(-1, -2))  # X^T X, shared by every spike and both kernels
    R = _feature_basis(Xb, S0)  # features X M as R M: the same errors (p > n: n x n, fewer flops)
    phi_lin0 = None
    if linearised is not None:
        # the linearised kernel without a spike, diagonal removed (it has no diagonal term), and its features
        # X K_lin0: the p n^2 product once per batch; a spike adds (a1 / p) (uv - diag uv), uv = a b^T, whose
        # features X uv - X diag(a * b) = (X a) b^T - X diag(a * b) cost O(p n) (not another p n^2 product)
        Xi = _symmetric_noise_batch(trial_ids, seed, n, device)
        K = linearised[0] * S0 / p + math.sqrt(linearised[1]) * Xi / math.sqrt(p)
        del Xi
        K.diagonal(dim1=-2, dim2=-1).zero_()
        phi_lin0 = R @ K
        del K
    sp_ = math.sqrt(p)
    true_rows, lin_rows = [], []
    for wk, wq in spikes:
        uv = _spike_outer(Xb, wk, wq)
        if f is not None:
            S = S0 if uv is None else S0 + uv
            K = _apply_activation(f, S / sp_) / sp_
            if diagonal == "removed":
                K.diagonal(dim1=-2, dim2=-1).zero_()
            true_rows.append(_errors_batch(R @ K, yb, g).cpu().numpy())
            del K, S
        if phi_lin0 is not None:
            phi = phi_lin0 if wk is None else phi_lin0 + _spike_features(Xb, wk, wq, linearised[0] / p, R)
            lin_rows.append(_errors_batch(phi, yb, g).cpu().numpy())
            del phi
    if true_rows:
        out["true"] = np.stack(true_rows)
    if lin_rows:
        out["linearised"] = np.stack(lin_rows)
    return out


def _spike_features(Xb: torch.Tensor, wk: torch.Tensor, wq: torch.Tensor, scale: float,
                    basis: torch.Tensor | None = None) -> torch.Tensor:
    """``scale B (uv - diag uv)``, ``uv = a b^T``, ``a = X^T w_k``, ``b = X^T w_q``, in O(p n); ``B`` is ``basis``
    (:func:`_feature_basis`) or ``X``."""
    a, b = _spike_projections(Xb, wk, wq)
    B = Xb if basis is None else basis
    xa = B @ a.unsqueeze(-1)  # (T, p, 1)
    return scale * (xa * b.unsqueeze(-2) - B * (a * b).unsqueeze(-2))


def _check_linearised(linearised: tuple[float, float] | None) -> tuple[float, float] | None:
    """``linearised=(a1, sf2)`` as floats (finite, ``sf2 >= 0``), or ``None``."""
    if linearised is None:
        return None
    if not isinstance(linearised, (tuple, list, np.ndarray)) or len(linearised) != 2:
        raise ArgumentTypeError(f"linearised must be None or a pair (a1, sf2) of finite real numbers, got "
                                f"{describe(linearised)} of type {type(linearised).__name__}")
    return as_float("linearised[0] (a1)", linearised[0]), as_float("linearised[1] (sf2)", linearised[1], low=0)


def _check_spike_list(spikes: Any, p: int, device: str) -> list[tuple[torch.Tensor | None, torch.Tensor | None]]:
    """``spikes``: a list or tuple of ``(w_k, w_q)`` pairs, as tensors on ``device`` (``(None, None)`` for W = I)."""
    if not isinstance(spikes, (list, tuple)):
        raise ArgumentTypeError(f"spikes must be a list or tuple of (w_k, w_q) pairs, got {describe(spikes)} of type "
                                f"{type(spikes).__name__}")
    out = []
    for i, pair in enumerate(spikes):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ArgumentTypeError(f"spikes[{i}] must be a pair (w_k, w_q) of arrays of length p = {p} or "
                                    f"(None, None), got {describe(pair)}")
        out.append(_spike_tensors(pair[0], pair[1], p, device, (f"spikes[{i}][0] (w_k)", f"spikes[{i}][1] (w_q)")))
    return out


def _shared_models(activation: Any, linearised: Any, ridge: bool, spikes: Any, p: int, device: str
                   ) -> tuple[Callable | None, tuple[float, float] | None, list, int]:
    """The models of :func:`interpolation_error_mc_shared`: ``(f, linearised, spike tensors, number of models)``."""
    f = None if activation is None else resolve_activation(activation)
    linearised = _check_linearised(linearised)
    if f is None and linearised is None and not ridge:
        raise ValueError("nothing to simulate: give an activation, linearised=(a1, sf2) or ridge=True")
    sp_t = _check_spike_list(spikes, p, device)
    if (f is not None or linearised is not None) and len(sp_t) == 0:
        raise ValueError("spikes must contain at least one (w_k, w_q) pair (use (None, None) for W = I)")
    return f, linearised, sp_t, len(sp_t) * ((f is not None) + (linearised is not None)) + ridge


def interpolation_error_mc_shared(
    n: int,
    p: int,
    snr: float,
    gammas: ArrayLike,
    n_trials: int,
    seed: int,
    activation: Any = None,
    spikes: Sequence[tuple[ArrayLike | None, ArrayLike | None]] = ((None, None),),
    ridge: bool = False,
    linearised: tuple[float, float] | None = None,
    diagonal: str = "removed",
    n_jobs: int = 1,
    labels: str = "balanced",
    batch_size: int | None = None,
    device: str = "cpu",
) -> dict[str, np.ndarray]:
    """Per-trial ``E(gamma)`` of several models on the SAME draws ``X = mu y^T + Z`` (common random numbers).

    Trial ``t`` draws ``X, y`` exactly as :func:`interpolation_error_mc` does with the same ``seed``
    (``SeedSequence(seed).spawn(n_trials)[t]``), forms ``X^T X`` once and evaluates, on that draw:
    the true attention kernel ``f(X^T W X / sqrt p) / sqrt p`` for every spike ``W = I + w_k w_q^T`` of
    ``spikes`` (``activation`` given), the LINEARISED kernel ``a1 (X^T W X / p - diag) + s_f Xi / sqrt p``
    for every spike (``linearised=(a1, s_f^2)``; ``Xi`` symmetric with unit off-diagonal variance and zero
    diagonal, drawn for trial ``t`` from ``SeedSequence([seed, t, 7])``, the same ``Xi`` for every spike),
    and ridge (``Phi = X``, ``ridge=True``).  Sharing the draw saves the sampling and the ``X^T X``
    product per extra model, and makes paired differences low-variance.

    Parameters
    ----------
    n, p : int
        Tokens and dimension.
    snr : float
        ``||mu||^2`` (direction ``e_1``).
    gammas : array (G,), ``>= 0``.
    n_trials : int ``>= 2``.
    seed : int ``>= 0``.
    activation : see :func:`resolve_activation`; ``None``: no true-kernel model.
    spikes : sequence of ``(w_k, w_q)`` pairs (arrays of length ``p``, or ``(None, None)`` for ``W = I``).
    ridge : bool
    linearised : ``(a1, sf2)``, finite reals with ``sf2 >= 0``, optional.
    diagonal : {"removed", "kept"} (true kernel; the linearised kernel always has a zero diagonal).
    n_jobs : int
        Threads over trial batches; results do not depend on it.
    labels : {"balanced", "iid"}
    batch_size : int, optional
        Trials per batched product, in ``[1, 2**31 - 1]`` (default: memory-based, at most 64).
    device : str

    Returns
    -------
    dict
        ``"true"`` and/or ``"linearised"``: arrays ``(len(spikes), n_trials, G)``; ``"ridge"``: ``(n_trials, G)``.

    Raises
    ------
    ValueError
        As :func:`interpolation_error_mc` (arguments, device, memory budget checked before the first draw).
    """
    n, p, n_trials = _check_mc_arguments(n, p, n_trials, seed, n_jobs, snr, labels, diagonal, device, batch_size)
    ridge = check_flag("ridge", ridge)
    g = torch.from_numpy(_check_gammas(gammas))
    f, linearised, sp_t, n_models = _shared_models(activation, linearised, ridge, spikes, p, device)
    size = _mc_batch_size(n, p, n_trials, g.numel(), batch_size, 5, n_models)

    def batch(seeds: list[np.random.SeedSequence], ids: list[int]) -> dict[str, np.ndarray]:
        return _shared_batch(seeds, ids, int(seed), n, p, float(snr), g, f, sp_t, ridge, linearised, diagonal,
                             labels, device)

    args = dict(n=n, p=p, snr=snr, gammas=gammas, activation=activation, linearised=linearised)
    with _numeric("interpolation_error_mc_shared", **args):
        parts = _run_trials(batch, n_trials, seed, size, n_jobs)
    out = {k: np.concatenate([pt[k] for pt in parts], axis=-2) for k in parts[0]}
    finite_result("interpolation_error_mc_shared", list(out.values()), **args)
    return out
