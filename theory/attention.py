"""Deterministic equivalent of the interpolation error of nonlinear attention (paper B), the computation behind
:meth:`theory.AttentionModel.error`, :meth:`~theory.AttentionModel.error_taylor` and
:meth:`~theory.AttentionModel.small_gamma_law`.

The null model (``mu = 0``, ``W = I``) is solved with the corrected null system of :mod:`theory.null_system`
(derivation there); signal or attention spikes go to :mod:`theory.structured` (the project's own finite-rank
derivation).  Private: the functions take the model's fields as plain arguments.

A symbolic ``gamma`` (or ``c``) gives a sympy function of them, evaluated, differentiated and plotted by sympy:

>>> import sympy as sp
>>> from theory import AttentionModel
>>> from theory.symbols import gamma
>>> model = AttentionModel(2, "tanh")
>>> E = model.error(gamma)
>>> E
attention_error(gamma, 2, 'tanh')
>>> E.subs(gamma, 0.01) == model.error(0.01)
True
>>> round(float(sp.diff(E, gamma).subs(gamma, 0.1)), 4)
1.6232
>>> sp.lambdify(gamma, E)([0.01, 0.1]).round(4)
array([0.0856, 0.3147])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._jets import Jet
from .validation import as_array, as_float, as_int, finite_result
from .activations import ActivationLike, hermite_moments
from .implicit import MAX_TAYLOR_ORDER, null_system_taylor
from .null_system import _null_kernel_diagonal, _solution_fields
from ._solver_domain import C_RANGE, GAMMA_RANGE, check_grid
from .structured import _structured_error, _structured_error_taylor, _structured_options
from .symbolic import NumericSpec, is_symbolic, numeric_function, symbolic_arguments

__all__: list[str] = []  # the model's methods are the public door (theory.settings)


def _attention_error(gamma: Any, c: float, activation: ActivationLike, snr: float = 0.0, spike: Any = None,
                     diagonal: Any = "removed", **solver_options: Any) -> Any:
    """:meth:`theory.AttentionModel.error` of the model ``(c, activation, snr, spike, diagonal)`` (``spike``: the
    vectors ``(w_k, w_q)`` or None).  The null model: ``E = gamma^2 d delta~ / dz`` at ``z = -gamma``
    (:func:`theory.solve_null_system_full`); with ``snr != 0`` or a spike,
    :func:`theory.structured._structured_error`."""
    if (is_symbolic(gamma) or is_symbolic(c)) and not isinstance(gamma, (list, tuple, np.ndarray)):
        return _symbolic_attention_error(gamma, c, activation, snr, spike, diagonal, solver_options)
    g = as_array("gamma", gamma, low=GAMMA_RANGE[0], high=GAMMA_RANGE[1])
    check_grid("gamma", g.size)
    if _structured_case(snr, spike, solver_options):
        return _structured_error(gamma, c, activation, snr, spike, diagonal, **solver_options)
    d0 = _null_kernel_diagonal(activation, diagonal)
    hm = hermite_moments(activation)
    solver_options.pop("check_quadrature", None)
    _, ddt = _solution_fields(-g, c, hm.a1, hm.sf2, d0, ("ddelta_dz", "ddelta_tilde_dz"), solver_options)
    err = finite_result("attention_error", g**2 * np.asarray(ddt), gamma=gamma, c=c)
    return float(err) if np.ndim(err) == 0 else err


def _structured_case(snr: Any, spike: Any, solver_options: dict[str, Any]) -> bool:
    """Whether the structured solver applies (signal or a spike), after checking the solver options of
    :meth:`theory.AttentionModel.error`: the structured solver's names and rules
    (:func:`theory.structured._structured_options`; ``n_nodes`` 160 unless given, the null solver's default), and
    not both spellings of ``maxiter``."""
    if "maxiter" in solver_options and "max_iter" in solver_options:
        raise ValueError("give maxiter or max_iter (the same option), not both")
    _structured_options(dict(solver_options, n_nodes=solver_options.get("n_nodes", 160)))
    return float(snr) != 0.0 or spike is not None


def _symbolic_attention_error(gamma: Any, c: Any, activation: ActivationLike, snr: Any, spike: Any, diagonal: Any,
                              solver_options: dict[str, Any]) -> Any:
    """:func:`_attention_error` of a symbolic ``gamma`` or ``c``: the arguments checked as on the numeric path,
    then the :class:`theory.symbolic.NumericFunction` of the null model (or the structured one)."""
    g, cc = symbolic_arguments(gamma, c, C_RANGE)
    if _structured_case(snr, spike, solver_options):
        return _structured_error(g, cc, activation, snr, spike, diagonal, **solver_options)
    options = dict(solver_options)
    if not (isinstance(diagonal, str) and diagonal.lower() == "removed"):
        options["diagonal"] = diagonal
    spec = NumericSpec(
        "attention_error", ((None, activation), *sorted(options.items())),
        values=lambda gv, cv: _attention_error(gv, cv, activation, **options),
        taylor=lambda g0, cv, order: _attention_error_taylor(g0, cv, activation, order=order, **options),
    )
    return numeric_function(spec)(g, cc)


def _attention_error_taylor(gamma: float, c: float, activation: ActivationLike, snr: float = 0.0, spike: Any = None,
                            diagonal: Any = "removed", *, order: int = 2, rtol: float = 1e-8,
                            **solver_options: Any) -> np.ndarray:
    """:meth:`theory.AttentionModel.error_taylor` of the model ``(c, activation, snr, spike, diagonal)``.
    Implicit-function derivatives of the fixed-point system (no finite differences): the null unknowns' coefficients
    come from :func:`theory.null_system_taylor` (order ``order + 1``), and ``E(gamma) = -gamma^2 d delta~/d gamma`` is
    expanded with them; with signal or spikes, :func:`theory.structured._structured_error_taylor`."""
    g0 = as_float("gamma", gamma, low=GAMMA_RANGE[0], high=GAMMA_RANGE[1])
    if _structured_case(snr, spike, solver_options):
        return _structured_error_taylor(g0, c, activation, snr, spike, diagonal, order=order, rtol=rtol,
                                        **solver_options)
    d0 = _null_kernel_diagonal(activation, diagonal)
    hm = hermite_moments(activation)
    solver_options.pop("check_quadrature", None)
    order = as_int("order", order, low=0, high=MAX_TAYLOR_ORDER - 1)  # the unknowns need one more (at most 20)
    t = null_system_taylor(g0, c, hm.a1, hm.sf2, d0, order + 1, rtol=rtol, **solver_options)
    gam = Jet.variable(g0, order)
    err = -(gam * gam) * Jet(t.delta_tilde).derivative()
    return finite_result("attention_error_taylor", err.coefficients, gamma=gamma, c=c)


def _small_gamma_law(c: float, activation: ActivationLike, diagonal: Any = "removed",
                     gammas: tuple[float, float] = (1e-13, 1e-11), **solver_options: Any) -> tuple[float, float]:
    """:meth:`theory.AttentionModel.small_gamma_law` of the null model ``(c, activation, diagonal)``."""
    g = as_array("gammas", gammas, low=0, low_open=True)
    if g.shape != (2,) or g[0] >= g[1]:
        raise ValueError(f"gammas must be two increasing positive numbers, got {gammas!r}")
    e = _attention_error(g, c, activation, diagonal=diagonal, **solver_options)
    if not np.all(e > 0):
        raise ValueError(f"small_gamma_law needs E_A > 0 at both gammas, got {e} (c={c!r}, "
                         f"activation={activation!r}): no power law to read")
    slope = float(np.log(e[1] / e[0]) / np.log(g[1] / g[0]))
    return finite_result("attention_small_gamma_law", (slope, float(e[0] / g[0] ** slope)), c=c, gammas=gammas)
