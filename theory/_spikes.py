"""The spike and signal directions of the structured attention model: the named spike kinds and their vectors,
the finite-dimensional arrays the solver takes, and the linearisation control of the spike's size.

Private: :mod:`theory.structured` re-exports :func:`spike_vectors`; :meth:`theory.AttentionModel.linearisation_control`
calls :func:`linearisation_control`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .validation import ArgumentTypeError, as_array, as_float, check_choice, check_size, describe

SPIKE_KINDS = ("aligned", "orthogonal")
#: largest ``snr = ||mu||^2`` and spike strength ``||w||^2`` (far beyond the linearised regime already)
SNR_MAX = STRENGTH_MAX = 1e8


# ============================================================================ spikes
def spike_vectors(strength: float, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """``(w_K, w_Q)`` for a symmetric rank-one spike ``W = I + strength * u u^T``.

    Coordinates: ``mu`` points along ``e_1`` (the convention of :func:`numerics.sample_signal_plus_noise`).

    Parameters
    ----------
    strength : float in ``[0, 1e8]``; ``||w_K||^2 = ||w_Q||^2 = strength``.
    kind : ``"aligned"`` (``u = e_1 = mu/||mu||``) or ``"orthogonal"`` (``u = e_2``).

    Returns
    -------
    w_k, w_q : arrays of length 2 (pad with zeros to length ``p`` for simulation).

    Examples
    --------
    >>> spike_vectors(4.0, "aligned")[0]
    array([2., 0.])
    """
    strength = as_float("strength", strength, low=0, high=STRENGTH_MAX)
    check_choice("spike kind", kind, SPIKE_KINDS)
    w = np.zeros(2)
    w[0 if kind == "aligned" else 1] = math.sqrt(strength)
    return w, w.copy()


def finite_dims(snr: float, spike: Any) -> tuple[np.ndarray, np.ndarray]:
    """``m = E^T mu`` and ``A / a1 = I + k_K k_Q^T`` in an orthonormal basis of span(e1, w_K, w_Q); ``spike``: the
    vectors ``(w_K, w_Q)`` of a :class:`theory.Spike` (same length) or None."""
    if spike is None:
        return np.array([math.sqrt(snr)]), np.eye(1)
    wk, wq = (np.asarray(w, dtype=float) for w in spike)
    e1 = np.zeros(wk.size)
    e1[0] = 1.0
    basis = [e1]
    for v in (wk, wq):  # Gram-Schmidt in the order e1, w_K, w_Q
        r = v - sum((b @ v) * b for b in basis)
        r = r - sum((b @ r) * b for b in basis)
        nr = float(np.linalg.norm(r))
        if nr > 1e-12 * max(1.0, float(np.linalg.norm(v))):
            basis.append(r / nr)
    E = np.stack(basis, axis=1)
    m = math.sqrt(snr) * (E.T @ e1)
    return m, np.eye(E.shape[1]) + np.outer(E.T @ wk, E.T @ wq)


def spike_arrays(w_k: Any, w_q: Any) -> tuple[np.ndarray, np.ndarray]:
    """Checked ``(w_k, w_q)``: both or neither, non-empty finite real 1-d arrays (a scalar is one coordinate) with
    ``||w||^2 <= 1e8``; ``(None, None)`` when neither is given."""
    if (w_k is None) != (w_q is None):
        raise ValueError("w_k and w_q must be given together (W = I + w_k w_q^T) or both be None")
    if w_k is None:
        return None, None
    out = []
    for name, w in (("w_k", w_k), ("w_q", w_q)):
        arr = np.atleast_1d(as_array(name, w, ndim=(0, 1), bytes_per_element=64))
        with np.errstate(over="ignore"):
            norm2 = float(arr @ arr)
        if norm2 > STRENGTH_MAX:
            raise ValueError(f"{name} must have ||{name}||^2 <= {STRENGTH_MAX:g}, got {norm2:g}")
        out.append(arr)
    return out[0], out[1]


#: the declared regime of validity of the linearised (structured) kernel: ``kappa <= LINEARISATION_REGIME``
#: (:func:`linearisation_control`)
LINEARISATION_REGIME = 0.5


def linearisation_control(p: int, snr: float, w_k: Any = None, w_q: Any = None) -> float:
    """Size of the signal/spike correction to a kernel entry: ``kappa = (snr + sqrt(v_K v_Q)) / sqrt p``.

    ``v_K = E (w_K^T x)^2 = ||w_K||^2 + snr (w_K)_1^2`` (``mu = sqrt(snr) e_1``), likewise ``v_Q``.  The structured
    equivalent linearises ``f`` around ``z_i^T z_j / sqrt p``; the correction to its argument is
    ``(snr y_i y_j + (w_K^T x_i)(w_Q^T x_j) + ...) / sqrt p``, of typical size ``kappa``.  The linearisation error of
    ``E`` is ``O(kappa^2)`` (measured in check B7: about ``0.4 kappa^2`` relative for tanh); the project declares the
    regime of validity as ``kappa <= 0.5`` (:data:`LINEARISATION_REGIME`).  (This ``kappa`` -- called ``kappa_lin`` in
    ``docs/structured_attention.md`` -- is unrelated to the unknown ``kappa`` of the corrected null system.)

    Public as :meth:`theory.AttentionModel.linearisation_control` (``p`` an integer in
    ``[1, Limits.max_dimension]``; the model's checked ``snr`` and spike vectors).

    Examples
    --------
    >>> from theory import AttentionModel
    >>> round(AttentionModel(1.0, "tanh", 2.0, spike=(4.0, "aligned")).linearisation_control(256), 3)
    0.875
    """
    check_size("p", p, 1, "max_dimension")
    if w_k is None:
        return float(snr) / math.sqrt(p)
    vk = float(w_k @ w_k + snr * w_k[0] ** 2)
    vq = float(w_q @ w_q + snr * w_q[0] ** 2)
    return (float(snr) + math.sqrt(vk * vq)) / math.sqrt(p)


def resolve_spike(spike: tuple[float, str] | None, w_k: Any, w_q: Any) -> tuple[Any, Any]:
    """``(w_k, w_q)``, from ``spike=(strength, kind)`` when given (exclusive with ``w_k, w_q``)."""
    if spike is None:
        return w_k, w_q
    if w_k is not None or w_q is not None:
        raise ValueError("give either spike=(strength, kind) or w_k, w_q, not both")
    if not (isinstance(spike, (tuple, list)) and len(spike) == 2):
        raise ValueError(f"spike must be a pair (strength >= 0, 'aligned' | 'orthogonal'), got {describe(spike)}")
    try:
        return spike_vectors(spike[0], spike[1])
    except ArgumentTypeError as exc:
        raise ArgumentTypeError(f"spike=(strength, kind): {exc}") from None
    except ValueError as exc:
        raise ValueError(f"spike=(strength, kind): {exc}") from None
