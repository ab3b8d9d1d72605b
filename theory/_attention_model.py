"""The data of paper B's attention model as one validated, frozen record, and the deprecation of the long signatures.

Private: :mod:`theory.settings` defines the public :class:`theory.AttentionModel` (this record with the solvers as
methods) and re-exports :class:`Spike`.  The solvers' modules (:mod:`theory.attention`, :mod:`theory.structured`)
import this module, not :mod:`theory.settings`, so that the model's methods can call them without an import cycle:
their public functions take a model through :func:`takes_model`, which recognises :class:`AttentionModelFields`.

The kernel constants of an activation (:func:`kernel_constants`) live here as well: the model validates its
activation and diagonal with them, and :func:`theory.structured_attention_solve` reads them.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from dataclasses import MISSING, dataclass, fields
from typing import Any, Callable

import numpy as np
import sympy as sp

from ._solver_domain import C_RANGE, KERNEL_CONSTANT_MAX
from ._spikes import SNR_MAX, resolve_spike, spike_arrays
from .validation import ArgumentTypeError, as_float, check_real, describe
from .activations import ActivationLike, check_activation, hermite_moments
from .null_system import diagonal_constant, null_kernel_diagonal
from .symbolic import is_symbolic


# ============================================================================ kernel constants of an activation
def kernel_constants(activation: Any, diagonal: Any) -> tuple[float, float, float]:
    """``(a1, s_f^2, d0)``; ``diagonal`` is ``"removed"``, ``"kept"`` or an explicit number ``d0``."""
    if isinstance(activation, dict):  # explicit constants {"a1":..., "sf2":..., "d0":...}
        return _dict_constants(activation, diagonal)
    check_activation(activation, "activation")
    d0 = null_kernel_diagonal(activation, diagonal)
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


# ============================================================================ the spike
@dataclass(frozen=True)
class Spike:
    """A spike of the attention weights, ``W = I + w_k w_q^T``, in coordinates where ``mu`` points along ``e_1``.

    The one form the model stores: the two vectors, as tuples of floats, padded to a common length with the
    trailing coordinates that are zero in both removed (at least one coordinate is kept), so that equal spikes
    compare equal however they were spelt.  :meth:`named` builds the symmetric spikes of the papers
    (``spike=(strength, kind)`` of the functions).

    Parameters
    ----------
    w_k, w_q : sequences of finite reals (a scalar is one coordinate), non-empty, ``||w||^2 <= 1e8``.

    Examples
    --------
    >>> Spike.named(4.0, "aligned")
    Spike(w_k=(2.0,), w_q=(2.0,))
    >>> Spike.named(4.0, "aligned") == Spike([2.0, 0.0], [2.0, 0.0])
    True
    """

    w_k: tuple[float, ...]
    w_q: tuple[float, ...]

    def __post_init__(self) -> None:
        wk, wq = spike_arrays(self.w_k, self.w_q)
        if wk is None:
            raise ValueError("a Spike needs the two vectors w_k and w_q, got None")
        dim = max(wk.size, wq.size)
        wk, wq = np.pad(wk, (0, dim - wk.size)), np.pad(wq, (0, dim - wq.size))
        nonzero = np.flatnonzero((wk != 0) | (wq != 0))
        keep = int(nonzero[-1]) + 1 if nonzero.size else 1
        object.__setattr__(self, "w_k", tuple(float(v) for v in wk[:keep]))
        object.__setattr__(self, "w_q", tuple(float(v) for v in wq[:keep]))

    @classmethod
    def named(cls, strength: float, kind: str) -> Spike:
        """The symmetric spike ``w_k = w_q = sqrt(strength) u`` (:func:`theory.structured.spike_vectors`).

        Parameters
        ----------
        strength : float in ``[0, 1e8]``.
        kind : ``"aligned"`` (``u = e_1``, along ``mu``) or ``"orthogonal"`` (``u = e_2``).
        """
        return cls(*resolve_spike((strength, kind), None, None))

    @classmethod
    def of(cls, spike: Any) -> Spike | None:
        """A spike from any spelling the model accepts: ``None``, a :class:`Spike` or ``(strength, kind)``."""
        if spike is None or isinstance(spike, Spike):
            return spike
        return cls(*resolve_spike(spike, None, None))  # refuses a bad pair with the functions' message

    def vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """``(w_k, w_q)`` as float arrays (the form the solvers take)."""
        return np.array(self.w_k, dtype=float), np.array(self.w_q, dtype=float)


# ============================================================================ the model's data
#: the arguments of the long signatures that the model holds, with their defaults (``None``: required)
MODEL_ARGUMENTS = {"c": None, "activation": None, "snr": 0.0, "w_k": None, "w_q": None, "diagonal": "removed",
                   "spike": None}


@dataclass(frozen=True)
class AttentionModelFields:
    """The validated, frozen data of paper B's model; :class:`theory.AttentionModel` adds the solvers.

    Every field is checked by the validators of the functions that take it (the same errors and messages).
    """

    c: Any
    activation: Any
    snr: float = 0.0
    spike: Spike | None = None
    diagonal: Any = "removed"

    def __post_init__(self) -> None:
        set_ = functools.partial(object.__setattr__, self)
        if is_symbolic(self.c):
            check_real("c", self.c, low=C_RANGE[0], high=C_RANGE[1], symbolic=True)
        else:  # exact numbers stay exact (a sympy function of gamma keeps them unevaluated, as the functions do)
            c = as_float("c", self.c, low=C_RANGE[0], high=C_RANGE[1])
            exact = isinstance(self.c, (int, np.integer, sp.Rational))
            set_("c", (int(self.c) if isinstance(self.c, (int, np.integer)) else self.c) if exact else c)
        activation = self.activation
        if isinstance(activation, FrozenDict):
            activation = dict(activation)
        if not isinstance(activation, dict):
            set_("activation", check_activation(activation, "activation"))
        kernel_constants(activation, self.diagonal)  # activation (a dict of constants too) and diagonal
        if isinstance(activation, dict):
            set_("activation", FrozenDict(sorted((str(k), float(v)) for k, v in activation.items())))
        if isinstance(self.diagonal, str):
            set_("diagonal", self.diagonal.lower())
        else:
            set_("diagonal", float(self.diagonal))
        set_("snr", as_float("snr", self.snr, low=0, high=SNR_MAX))
        set_("spike", Spike.of(self.spike))

    @classmethod
    def from_arguments(cls, c: Any, activation: ActivationLike, snr: float = 0.0, w_k: Any = None, w_q: Any = None,
                       diagonal: Any = "removed", spike: Any = None) -> Any:
        """The model of the long signatures' arguments (``spike=(strength, kind)`` or the vectors ``w_k, w_q``).

        Examples
        --------
        >>> from theory import AttentionModel
        >>> AttentionModel.from_arguments(2.0, "tanh", 1.0, w_k=[2.0], w_q=[2.0]) == AttentionModel(
        ...     2.0, "tanh", 1.0, spike=(4.0, "aligned"))
        True
        """
        if spike is not None and (w_k is not None or w_q is not None):
            raise ValueError("give either spike=(strength, kind) or the vectors w_k, w_q, not both")
        if spike is None and (w_k is not None or w_q is not None):
            spike_arrays(w_k, w_q)  # both or neither, with the functions' messages
            spike = Spike(w_k, w_q)
        return cls(c, activation, snr, spike, diagonal)

    def arguments(self) -> dict[str, Any]:
        """The model as the keyword arguments of the long signatures (``c, activation, snr, w_k, w_q, diagonal``)."""
        w_k, w_q = self.spike.vectors() if self.spike is not None else (None, None)
        activation = dict(self.activation) if isinstance(self.activation, FrozenDict) else self.activation
        return {"c": self.c, "activation": activation, "snr": self.snr, "w_k": w_k, "w_q": w_q,
                "diagonal": self.diagonal}

    def _for(self, name: str, accepted: set[str], unused: tuple[str, ...]) -> dict[str, Any]:
        """:meth:`arguments` restricted to those ``name`` takes; the model's other fields must be their defaults
        unless ``name`` does not depend on them (``unused``)."""
        for f in fields(AttentionModelFields):
            taken = f.name in accepted or (f.name == "spike" and "w_k" in accepted)
            if taken or f.name in unused or f.default is MISSING:  # c and activation: always meaningful
                continue
            if getattr(self, f.name) != f.default:
                raise ValueError(f"{name} does not take {f.name}: it needs a model with {f.name}={f.default!r}, "
                                 f"got {f.name}={getattr(self, f.name)!r}")
        return {k: v for k, v in self.arguments().items() if k in accepted}


# ============================================================================ the long signatures, deprecated
def takes_model(replacement: str, *, position: int = 1, unused: tuple[str, ...] = (), name: str | None = None) -> Callable:
    """Decorator: a function of the long signature also takes a model, and warns when it does not get one.

    ``func(..., model, **options)`` with an :class:`AttentionModelFields` at ``position`` (or as ``model=``) calls
    ``func`` with the model's :meth:`~AttentionModelFields.arguments` (those ``func`` takes) and no warning.  Any
    other call is the long signature: a :class:`DeprecationWarning` naming ``replacement`` (one per call), then
    ``func`` exactly as before.  ``unused``: fields of the model that ``func`` does not depend on; any other field
    ``func`` does not take must have its default.  ``name``: the public function's name (default ``func``'s); the
    module keeps ``func``, the long-signature core, for its own calls, and the wrapper takes over the docstring.
    """

    def decorate(func: Callable) -> Callable:
        sig = inspect.signature(func)
        accepted = set(sig.parameters) & set(MODEL_ARGUMENTS)
        public = name or func.__name__

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            model = kwargs.pop("model", None)
            if model is None and len(args) > position and isinstance(args[position], AttentionModelFields):
                model, args = args[position], args[:position] + args[position + 1:]
            if model is None:
                warnings.warn(f"{public} with the model's parameters as arguments is deprecated and will be removed in "
                              f"the next release; pass an AttentionModel instead: {replacement}",
                              DeprecationWarning, stacklevel=2)
                return func(*args, **kwargs)
            if not isinstance(model, AttentionModelFields):
                raise ArgumentTypeError(f"model must be an AttentionModel, got {describe(model)}")
            if len(args) != position:
                raise ArgumentTypeError(f"{public} takes {position} argument(s) before the model and keyword options "
                                        f"after it, got {len(args) + 1} positional arguments")
            clash = sorted(set(kwargs) & set(MODEL_ARGUMENTS))
            if clash:
                raise ArgumentTypeError(f"{clash[0]} is part of the model: give it to AttentionModel, not to {public}")
            return func(*args, **model._for(public, accepted, unused), **kwargs)

        wrapper.__signature__ = _model_signature(sig, position)
        wrapper.__name__ = public
        wrapper.__qualname__ = public
        if public != func.__name__:  # the core keeps one line, so its docstring's examples run once (the wrapper's)
            func.__doc__ = f"The long-signature core of :func:`{public}` (no model, no warning)."
        return wrapper

    return decorate


def _model_signature(sig: inspect.Signature, position: int) -> inspect.Signature:
    """The signature with a model: the first ``position`` parameters, ``model``, the options keyword-only."""
    params = list(sig.parameters.values())
    lead = params[:position]
    model = inspect.Parameter("model", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation="AttentionModel")
    rest = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params[position:]
            if p.name not in MODEL_ARGUMENTS and p.kind is not inspect.Parameter.VAR_KEYWORD]
    var = [p for p in params if p.kind is inspect.Parameter.VAR_KEYWORD]
    return sig.replace(parameters=[*lead, model, *rest, *var])


__all__: list[str] = []  # private module: theory.settings exports the public names
