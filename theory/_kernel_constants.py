"""The kernel constants ``(a1, s_f^2, d0)`` of an activation and the hashable form of an activation given by them.

Private: :class:`theory.AttentionModel` validates its activation and diagonal with :func:`kernel_constants` and
stores a dict of constants as a :class:`FrozenDict`; the structured solver (:mod:`theory.structured`) reads them.
"""

from __future__ import annotations

from typing import Any

from ._solver_domain import KERNEL_CONSTANT_MAX
from .validation import as_float
from .activations import hermite_moments
from .null_system import _null_kernel_diagonal, diagonal_constant


def kernel_constants(activation: Any, diagonal: Any) -> tuple[float, float, float]:
    """``(a1, s_f^2, d0)``; ``diagonal`` is ``"removed"``, ``"kept"`` or an explicit number ``d0``."""
    if isinstance(activation, dict):  # explicit constants {"a1":..., "sf2":..., "d0":...}
        return _dict_constants(activation, diagonal)
    d0 = _null_kernel_diagonal(activation, diagonal)
    hm = hermite_moments(activation)
    return float(hm.a1), float(hm.sf2), float(d0)


def _dict_constants(activation: dict, diagonal: Any) -> tuple[float, float, float]:
    """``(a1, s_f^2, d0)`` of an activation given by its constants ``{"a1": .., "sf2": .., "d0": ..}``."""
    unknown = sorted(set(activation) - {"a1", "sf2", "d0"}, key=str)
    if unknown or not {"a1", "sf2"} <= set(activation):
        raise ValueError("activation given as a dict needs keys 'a1' and 'sf2' (and optionally 'd0'), got keys "
                         f"{sorted(map(str, activation))}")
    k = KERNEL_CONSTANT_MAX
    a1 = as_float("activation['a1']", activation["a1"], low=-k, high=k)
    sf2 = as_float("activation['sf2']", activation["sf2"], low=0, high=k * k)
    if "d0" not in activation:
        return a1, sf2, diagonal_constant(diagonal, _refuse_kept)
    diagonal_constant(diagonal, lambda: 0.0)  # checked; the dict's d0 is used whatever the diagonal
    return a1, sf2, as_float("activation['d0']", activation["d0"], low=-k, high=k)


def _refuse_kept() -> float:
    raise ValueError("diagonal='kept' with an activation dict needs the key 'd0'")


class FrozenDict(tuple):
    """A dict argument as a hashable, sorted tuple of pairs that prints as the dict."""

    def __repr__(self) -> str:
        return repr(dict(self))
