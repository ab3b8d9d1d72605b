"""Paper B numerics: signal-plus-noise samples, ridge / attention features, interpolation error.

Model (SPEC, paper B): ``X = mu y^T + Z`` in ``R^{p x n}``, ``Z`` standard Gaussian, ``y in {+1,-1}^n``. Attention
features ``Phi = X K_X`` with ``K_X = f(X^T W X / sqrt p) / sqrt p``, ``W = I_p + w_k w_q^T``; ridge features
``Phi = X``.  The interpolation (memorisation) error of the ridge probe ``w = (Phi Phi^T + n gamma I_p)^{-1} Phi y`` is

``E(gamma) = 1/n ||y - Phi^T w||^2 = gamma^2 / n  y^T Q^2 y``,  ``Q = (Phi^T Phi / n + gamma I_n)^{-1}``

(exact algebra: ``y - Phi^T w = n gamma (Phi^T Phi + n gamma I)^{-1} y = gamma Q y`` by the push-through
identity).  :func:`interpolation_error` evaluates a whole ``gamma`` grid from ONE symmetric
eigendecomposition of the smaller Gram matrix (``n x n`` when ``p >= n``, ``p x p`` otherwise):

* ``p >= n``: ``Phi^T Phi / n = V diag(lam) V^T`` and
  ``E = 1/n sum_k g_k^2 (v_k^T y)^2``, ``g_k = gamma / (lam_k + gamma)``;
* ``p < n``: ``Phi Phi^T / n = U diag(lam) U^T``, ``b = U^T Phi y``; the null space of ``Phi`` keeps ``g = 1``, so
  ``E = 1/n (||y||^2 - 1/n sum_k b_k^2 (1 + g_k) / (lam_k + gamma))`` (uses ``1 - g^2 = lam (1 + g) / (lam + gamma)``
  and ``(v_k^T y)^2 = b_k^2 / (n lam_k)``; no division by a small eigenvalue when ``gamma > 0``).

When every gamma is positive (CPU), one Householder tridiagonalisation serves the whole grid: a reflector ``H`` maps the
right-hand side (``y``, or ``Phi y`` when ``p < n``) to ``beta e_1``, LAPACK ``sytrd`` reduces ``H G H = Q T Q^T`` with
``Q e_1 = e_1``, so every quadratic form of the resolvent is one of the tridiagonal ``T``: with
``u = (T + gamma)^{-1} e_1`` (one O(m) ``ptsv`` solve per gamma), ``E = gamma^2 beta^2 ||u||^2 / n`` (``p >= n``) and
``E = (||y||^2 - beta^2 (u_1 + gamma ||u||^2) / n) / n`` (``p < n``).  It is used from a measured number of gammas on
(``tridiagonal_min_gammas``); below it, per-gamma Cholesky solves of the same Gram matrix; a failed factorisation
(numerically not positive definite) falls back to ``eigh``. Gram matrices ``A A^T`` are formed from their lower block
triangle (``gram``).  At ``gamma = 0`` eigenvalues below ``n * eps * max(lam)`` count as null directions (``g = 1``).

The Monte Carlo over draws of ``X`` is :func:`numerics.simulate_model`, on the kernels and error paths of this module.
For the null model (labels independent of ``Phi``) :func:`interpolation_error_label_average` and
``simulate_model(..., label_average=True)`` return the exact average over i.i.d. Rademacher labels,
``gamma^2/n tr Q^2`` (Rao-Blackwellised: a much smaller variance); :func:`gaussian_equivalent_kernel` is the linearised
null kernel, a diagnostic of the null-model theory.

Labels are *balanced* by default (``ceil(n/2)`` of ``+1``, ``floor(n/2)`` of ``-1``, random order), Rademacher with
``labels="iid"``.  The signal direction is ``e_1`` (``mu = sqrt(snr) e_1``; ``mu=`` overrides it): ``Z`` is rotation
invariant, so the direction does not change the law of the error when ``W = I``.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import torch

from theory.validation import (ArgumentTypeError, as_float, check_flag, check_random_state, describe,
                               finite_result)

from .threads import torch_numeric_errors as _numeric, torch_threads
from ._ridge_solvers import SINGLE_THREAD_EIGH_MAX, errors_batch, errors_label_mean, gram
from ._mc import (ArrayLike, as_float_array, check_diagonal, check_gammas, check_kernel_memory, check_memory,
                  check_spikes, check_vector, label_posterior_mean, sample_signal_plus_noise, spike_outer)

__all__ = ["sample_signal_plus_noise", "label_posterior_mean", "ridge_features", "attention_features",
           "interpolation_error", "interpolation_error_label_average",
           "gaussian_equivalent_kernel", "kernel_eigenvalues", "resolve_activation"]

def _check_features_memory(name: str, p: int, n: int, n_gammas: int) -> None:
    """Budget of the error path on ``(p, n)`` features: smaller Gram, eigenvectors, ``(min(p, n), G)`` arrays."""
    m = min(p, n)
    check_memory(f"{name}, gammas ({p} x {n} features, {n_gammas} gammas)", 8 * (3 * m * m + 4 * m * n_gammas + p * n))


# ----------------------------------------------------------------------------------------- activation
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


def ridge_features(X: ArrayLike) -> np.ndarray:
    """Linear-regression features: ``Phi = X`` (validated float64, not copied).

    Parameters
    ----------
    X : array (p, n) of finite real numbers (complex arrays are refused, not truncated to their real part).
    """
    return as_float_array("X", X, ndim=2)


def kernel_batch(Xb: torch.Tensor, f: Callable[[np.ndarray], np.ndarray], w_k: torch.Tensor | None,
                 w_q: torch.Tensor | None, diagonal: str, S0: torch.Tensor | None = None) -> torch.Tensor:
    """``K_X`` for a batch ``Xb`` of shape (T, p, n); W is never formed.  ``S0``: ``X^T X`` if known (not modified)."""
    p = Xb.shape[-2]
    S = gram(Xb.transpose(-1, -2)) if S0 is None else S0  # X^T X, (T, n, n)
    if w_k is not None:
        S = S + spike_outer(Xb, w_k, w_q)  # (X^T w_k)(w_q^T X)
    sp_ = math.sqrt(p)
    K = _apply_activation(f, S / sp_) / sp_
    if diagonal == "removed":
        K.diagonal(dim1=-2, dim2=-1).zero_()
    return K


def attention_features(X: ArrayLike, activation: Any, w_k: ArrayLike | None = None, w_q: ArrayLike | None = None,
                       diagonal: str = "removed") -> np.ndarray:
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
    Xa = as_float_array("X", X, ndim=2)
    check_diagonal(diagonal)
    p = Xa.shape[0]
    check_kernel_memory("X", p, Xa.shape[1])
    wk, wq = check_spikes(w_k, w_q, p)
    f = resolve_activation(activation)
    Xt = torch.from_numpy(Xa).unsqueeze(0)
    K = kernel_batch(Xt, f, None if wk is None else torch.from_numpy(wk), None if wq is None else torch.from_numpy(wq),
                     diagonal)
    return (Xt @ K)[0].numpy()


def kernel_eigenvalues(X: ArrayLike, activation: Any, diagonal: str = "removed") -> np.ndarray:
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
    Xa = as_float_array("X", X, ndim=2)
    check_diagonal(diagonal)
    check_kernel_memory("X", *Xa.shape)
    f = resolve_activation(activation)
    K = kernel_batch(torch.from_numpy(Xa).unsqueeze(0), f, None, None, diagonal)[0]
    with torch_threads(1 if K.shape[-1] <= SINGLE_THREAD_EIGH_MAX else None), _numeric("kernel_eigenvalues", X=X):
        lam = torch.linalg.eigvalsh(K).numpy()
    return finite_result("kernel_eigenvalues", lam, X=X, activation=activation)


def interpolation_error(features: ArrayLike, y: ArrayLike, gammas: ArrayLike) -> np.ndarray:
    """Interpolation error ``E(gamma) = gamma^2/n y^T Q^2 y`` on a whole grid from ONE factorisation.

    Parameters
    ----------
    features : array (p, n)
        ``Phi`` (columns = tokens), finite real numbers (complex arrays are refused, not truncated).
    y : array (n,), finite.
    gammas : float or array (G,), ``>= 0``.

    Returns
    -------
    ndarray (G,)
        Equal to ``1/n ||y - Phi^T w||^2`` with ``w = (Phi Phi^T + n gamma I_p)^{-1} Phi y``.

    Raises
    ------
    ValueError
        Invalid arguments; the Gram matrix and its eigenvectors (about ``24 min(p, n)^2 + 32 min(p, n) G``
        bytes) over the memory budget; features or gammas so large that the errors are not finite in float64.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Phi, y = rng.standard_normal((5, 8)), np.sign(rng.standard_normal(8))
    >>> w = np.linalg.solve(Phi @ Phi.T + 8 * 0.1 * np.eye(5), Phi @ y)  # n gamma = 8 x 0.1
    >>> bool(np.isclose(interpolation_error(Phi, y, [0.1, 1.0])[0], np.mean((y - Phi.T @ w) ** 2)))
    True
    """
    Phi = as_float_array("features", features, ndim=2)
    yv = check_vector("y", y, Phi.shape[1], "n")
    g = check_gammas(gammas)
    _check_features_memory("features", *Phi.shape, g.size)
    with _numeric("interpolation_error", features=features, y=y, gammas=gammas):
        out = errors_batch(torch.from_numpy(Phi).unsqueeze(0), torch.from_numpy(yv).unsqueeze(0), torch.from_numpy(g))
    return finite_result("interpolation_error", out[0].numpy(), features=features, y=y, gammas=gammas)


def interpolation_error_label_average(features: ArrayLike, gammas: ArrayLike,
                                      label_mean: ArrayLike | None = None) -> np.ndarray:
    """Average of ``E(gamma)`` over the labels given the features: ``gamma^2/n tr(Q^2 E[y y^T])``.

    Labels in ``{-1, 1}``, independent given the features, with means ``label_mean`` (``E[y y^T] = m m^T +
    diag(1 - m^2)``).  Without ``label_mean`` they are i.i.d. Rademacher (the null model: ``gamma^2/n tr Q^2``,
    eigenvalues only).  With the signal-plus-noise model's labels, ``label_mean`` is their posterior mean given the
    data (:func:`numerics.label_posterior_mean`), and the result is the conditional mean of ``E(gamma)`` given ``X``:
    the same expectation as :func:`interpolation_error` with the drawn labels, with less variance (Rao-Blackwell;
    measured in docs/strong_alignment.md).

    Parameters
    ----------
    features : array (p, n), finite.
    gammas : float or array, ``>= 0``.
    label_mean : array (n,), optional
        ``E[y_i | features]``, in ``[-1, 1]``.

    Returns
    -------
    ndarray (G,)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Phi, m = rng.standard_normal((3, 6)), np.tanh(rng.standard_normal(6))
    >>> float(interpolation_error_label_average(Phi, [0.0], m)[0]) <= 1.0
    True
    """
    Phi = as_float_array("features", features, ndim=2)
    g = check_gammas(gammas)
    _check_features_memory("features", *Phi.shape, g.size)
    m = None if label_mean is None else check_vector("label_mean", label_mean, Phi.shape[1], "n")
    if m is not None and np.any(np.abs(m) > 1.0):
        raise ValueError("label_mean holds means of labels in {-1, 1}: every entry must lie in [-1, 1]")
    with _numeric("interpolation_error_label_average", features=features, gammas=gammas):
        if m is None:
            out = errors_batch(torch.from_numpy(Phi).unsqueeze(0), None, torch.from_numpy(g))[0].numpy()
        else:
            out = errors_label_mean(torch.from_numpy(Phi).unsqueeze(0), torch.from_numpy(m).unsqueeze(0),
                                    torch.from_numpy(g))[0].numpy()
    return finite_result("interpolation_error_label_average", out, features=features, gammas=gammas)


def gaussian_equivalent_kernel(X: ArrayLike, a1: float, nu: float, rng: np.random.Generator | int,
                               symmetric: bool = True, d0: float = 0.0) -> np.ndarray:
    """Linearised (Gaussian-equivalent) null kernel ``a1 (X^T X / p - diag) + d0 I + s_f / sqrt(p) Xi``.

    ``s_f^2 = nu - a1^2``; ``Xi`` has zero diagonal and standard Gaussian off-diagonal entries, symmetric (GOE-like,
    as the kernel's nonlinear part is) when ``symmetric=True``, independent otherwise (the "information-plus-noise"
    model's deterministic equivalent).  A diagnostic for the null-model theory; ``W = I``.

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
    Xa = as_float_array("X", X, ndim=2)
    a1, nu, d0 = as_float("a1", a1), as_float("nu", nu), as_float("d0", d0)
    check_flag("symmetric", symmetric)
    with _numeric("gaussian_equivalent_kernel", a1=a1, nu=nu):
        sf2 = nu - a1**2
    if not np.isfinite(sf2) or sf2 < -1e-12:
        raise ValueError(f"nu must be >= a1^2, got nu={nu!r}, a1={a1!r}")
    sf = math.sqrt(max(sf2, 0.0))
    p, n = Xa.shape
    check_kernel_memory("X", p, n)
    g = check_random_state("rng", rng, none_ok=False)
    Xt = torch.from_numpy(Xa)
    K = (float(a1) * (Xt.T @ Xt) / p).numpy()
    Xi = g.standard_normal((n, n))
    if symmetric:
        Xi = (Xi + Xi.T) / math.sqrt(2.0)
    K = K + sf * Xi / math.sqrt(p)
    np.fill_diagonal(K, d0)
    return finite_result("gaussian_equivalent_kernel", K, X=X, a1=a1, nu=nu)
