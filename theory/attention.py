"""Deterministic equivalent of the interpolation error of nonlinear attention (paper B).

``attention_error`` solves the null model (``mu = 0``, ``W = I``) with the corrected null system of
:mod:`theory.null_system` (derivation there) and hands signal or attention spikes to
:mod:`theory.structured` (the project's own finite-rank derivation).  The null system's public names are
re-exported here, where earlier releases defined them.

The parameters of the model are an :class:`theory.AttentionModel` (:mod:`theory.settings`): ``attention_error(gamma,
model)`` or ``model.error(gamma)``; the long signature ``attention_error(gamma, c, activation, snr=...)`` still works
for one release and warns (``DeprecationWarning``).

A symbolic ``gamma`` (or ``c``) gives a sympy function of them, evaluated, differentiated and plotted by sympy:

>>> import sympy as sp
>>> from theory import AttentionModel
>>> from theory.symbols import gamma
>>> model = AttentionModel(2, "tanh")
>>> E = model.error(gamma)
>>> E
attention_error(gamma, 2, 'tanh')
>>> E.subs(gamma, 0.01) == attention_error(0.01, model)
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
from .validation import ArgumentTypeError, as_array, as_float, as_int, check_flag, finite_result
from .activations import ActivationLike, check_activation, hermite_moments
from .implicit import MAX_TAYLOR_ORDER, null_system_taylor
from .null_system import (  # noqa: F401  (re-exported: public names of this module since the first release)
    NULL_SYSTEMS,
    NullSolution,
    gram_law_quadrature,
    gram_stieltjes,
    kept_diagonal,
    null_kernel_diagonal,
    null_system_derivative,
    null_system_equations,
    solve_null_system,
    solve_null_system_full,
)

from . import null_system as _null_system  # noqa: E402
from ._solver_domain import C_RANGE, GAMMA_RANGE, check_grid, checked_solver_options  # noqa: E402
from .symbolic import NumericSpec, is_symbolic, numeric_function, symbolic_arguments  # noqa: E402
from ._attention_model import takes_model  # noqa: E402

#: the options of the solvers (:func:`solve_null_system_full`, :func:`theory.structured_attention_solve`)
_SOLVER_OPTIONS = ("system", "method", "n_nodes", "tol", "maxiter", "max_iter", "check_quadrature")
#: largest ``snr`` of the structured solver (checked there; the same bound for spike strengths)
_SNR_MAX = 1e8

__all__ = ["attention_error", "attention_error_taylor", "attention_small_gamma_law", *_null_system.__all__]


# --------------------------------------------------------------------------- public error
def attention_error_core(gamma: Any, c: float, activation: ActivationLike, snr: float = 0.0, w_k: Any = None,
                    w_q: Any = None, diagonal: Any = "removed", spike: Any = None, **solver_options: Any) -> Any:
    """Limiting interpolation error ``E_A(gamma)`` of nonlinear attention.

    Parameters
    ----------
    gamma : ridge parameter ``> 0`` (scalar -> float, array -> ndarray), or a sympy expression (see below).
    model : theory.AttentionModel
        ``c = p / n`` (a number or a sympy expression), the activation (registry name or sympy expression, centred
        internally), ``snr = ||mu||^2`` (``0`` and no spike: the null model solved here), the spike
        ``W = I + w_k w_q^T`` (``spike=(strength, "aligned" | "orthogonal")``: ``w_k = w_q = sqrt(strength) e`` with
        ``e`` along ``mu`` or orthogonal to it, the convention of :mod:`theory.structured`) and the diagonal
        (``"removed"``, ``"kept"``, ``d0 = lim f(t)/t``, or an explicit ``d0``, e.g. :func:`kept_diagonal` at a
        finite ``p``).  Deprecated: the long signature ``attention_error(gamma, c, activation, snr=0.0, w_k=None,
        w_q=None, diagonal="removed", spike=None, **solver_options)`` (a ``DeprecationWarning``).
    **solver_options : ``system`` (``"symmetric"`` default, alias ``"corrected"``, or ``"spec"``), ``method``,
        ``n_nodes``, ``tol``, ``maxiter`` / ``max_iter`` (see :func:`solve_null_system_full`), checked by the same
        rules on both paths and passed on to the structured solver when signal or spikes are present;
        ``check_quadrature`` (a bool) only acts there (the null path has no trace integrals).

    Domain: ``gamma`` in ``[1e-30, 1e30]`` (at most ``Limits.max_grid_size`` values), ``c`` in ``[1e-4, 1e4]``,
    ``snr`` in ``[0, 1e8]``.

    Returns
    -------
    float, numpy.ndarray or theory.symbolic.NumericFunction
        A float (an array) for numeric ``gamma`` and ``c``; when either is a sympy expression with free symbols, a
        sympy function of ``(gamma, c)`` (:class:`theory.symbolic.NumericFunction`) with the activation and the
        options fixed: ``evalf`` and ``subs`` with a float call this function with numbers; ``sympy.diff`` in
        ``gamma`` gives the implicit-function derivatives (:func:`attention_error_taylor`); ``sympy.series`` at a
        number ``gamma0`` is the Taylor polynomial from those derivatives; ``sympy.lambdify`` prints it as a
        vectorised call of the solver (the ``_numpycode`` printer hook), so ``sympy.plot`` works.  With signal or
        spikes the result is that of :func:`theory.structured_attention_error`.

    Raises
    ------
    ValueError
        Invalid arguments.
    RuntimeError
        The system did not converge (the message gives ``gamma`` and the residual reached).
    NotImplementedError
        Structured case requested but :mod:`theory.structured` does not provide it.

    Examples
    --------
    >>> from theory import AttentionModel
    >>> model = AttentionModel(2.0, "tanh")
    >>> round(attention_error(1e-2, model), 4)
    0.0856
    >>> round(attention_error(1e-2, model, system="spec"), 4)
    0.0839
    >>> spiked = AttentionModel(2.0, "tanh", snr=1.0, spike=(4.0, "aligned"))
    >>> bool(attention_error(0.1, spiked) < attention_error(0.1, AttentionModel(2.0, "tanh", snr=1.0)))
    True

    A symbolic ``gamma``: the module docstring.
    """
    if (is_symbolic(gamma) or is_symbolic(c)) and not isinstance(gamma, (list, tuple, np.ndarray)):
        return _symbolic_attention_error(gamma, c, activation, snr, w_k, w_q, diagonal, spike, solver_options)
    g = as_array("gamma", gamma, low=GAMMA_RANGE[0], high=GAMMA_RANGE[1])
    check_grid("gamma", g.size)
    as_float("c", c, low=C_RANGE[0], high=C_RANGE[1])
    if _structured_case(snr, w_k, w_q, spike, solver_options):
        try:
            from .structured import structured_attention_error_core  # lazy: written by another module
        except ImportError:
            raise NotImplementedError(
                "attention_error with signal (snr != 0) or attention spikes (w_k, w_q) needs "
                "theory.structured.structured_attention_error, which is not available"
            ) from None
        return structured_attention_error_core(gamma, c, activation, snr, w_k, w_q, diagonal, **solver_options)
    check_activation(activation, "activation")
    d0 = null_kernel_diagonal(activation, diagonal)
    hm = hermite_moments(activation)
    solver_options.pop("check_quadrature", None)
    _, ddt = null_system_derivative(-g, c, hm.a1, hm.sf2, d0, **solver_options)
    err = finite_result("attention_error", g**2 * np.asarray(ddt), gamma=gamma, c=c)
    return float(err) if np.ndim(err) == 0 else err


attention_error = takes_model("AttentionModel(c, activation, snr=..., spike=..., diagonal=...).error(gamma) or "
                              "attention_error(gamma, model)", name="attention_error")(attention_error_core)


def _structured_case(snr: Any, w_k: Any, w_q: Any, spike: Any, solver_options: dict[str, Any]) -> bool:
    """Check ``snr``, the solver keywords and the spike arguments; whether the structured solver applies.

    ``spike`` (if given) is moved into ``solver_options``, where the structured solver takes it.
    """
    as_float("snr", snr, low=0, high=_SNR_MAX)
    _check_solver_keywords(solver_options)
    if spike is not None and (w_k is not None or w_q is not None):
        raise ValueError("give either spike=(strength, kind) or the vectors w_k, w_q, not both")
    if spike is not None:
        solver_options["spike"] = spike
    return float(snr) != 0.0 or w_k is not None or w_q is not None or spike is not None

def _symbolic_attention_error(gamma: Any, c: Any, activation: ActivationLike, snr: Any, w_k: Any, w_q: Any,
                              diagonal: Any, spike: Any, solver_options: dict[str, Any]) -> Any:
    """:func:`attention_error` of a symbolic ``gamma`` or ``c``: the arguments checked as on the numeric path,
    then the :class:`theory.symbolic.NumericFunction` of the null model (or the structured one)."""
    g, cc = symbolic_arguments(gamma, c, C_RANGE)
    if _structured_case(snr, w_k, w_q, spike, solver_options):
        from .structured import structured_attention_error_core

        return structured_attention_error_core(g, cc, activation, snr, w_k, w_q, diagonal, **solver_options)
    check_activation(activation, "activation")
    null_kernel_diagonal(activation, diagonal)
    options = dict(solver_options)
    if not (isinstance(diagonal, str) and diagonal.lower() == "removed"):
        options["diagonal"] = diagonal
    spec = NumericSpec(
        "attention_error", ((None, activation), *sorted(options.items())),
        values=lambda gv, cv: attention_error_core(gv, cv, activation, **options),
        taylor=lambda g0, cv, order: attention_error_taylor_core(g0, cv, activation, order=order, **options),
    )
    return numeric_function(spec)(g, cc)


def attention_error_taylor_core(
    gamma: float,
    c: float,
    activation: ActivationLike,
    snr: float = 0.0,
    w_k: Any = None,
    w_q: Any = None,
    diagonal: Any = "removed",
    spike: Any = None,
    *,
    order: int = 2,
    rtol: float = 1e-8,
    **solver_options: Any,
) -> np.ndarray:
    """Taylor coefficients of :func:`attention_error` in ``gamma``: ``E(gamma + s) = sum_k e[k] s^k + O(s^{order+1})``.

    Implicit-function derivatives of the fixed-point system (no finite differences): the null unknowns'
    coefficients come from :func:`theory.null_system_taylor` (order ``order + 1``), and
    ``E(gamma) = -gamma^2 d delta~/d gamma`` is expanded with them; with signal or spikes,
    :func:`theory.structured_attention_error_taylor`.  ``e[k] = E^(k)(gamma) / k!``.  ``e[0]`` is
    :func:`attention_error` itself (the solver's value and exact first derivative); ``e[k]``, ``k >= 1``, involve
    the unknowns' coefficients of order ``>= 2``, integrated by quadrature to the agreement ``rtol`` of two
    successive rules (see :func:`theory.null_system_taylor`).

    Parameters
    ----------
    gamma : float
        Expansion point, in ``[1e-30, 1e30]``.
    model : theory.AttentionModel
        As in :func:`attention_error` (numbers only; the long signature is deprecated as there).
    **solver_options
        As in :func:`attention_error`.
    order : int
        Highest coefficient, in ``[0, 19]``.
    rtol : float
        Agreement required of two successive quadrature rules for the coefficients of order ``>= 1``, in
        ``[1e-14, 1e-3]``.

    Returns
    -------
    numpy.ndarray
        ``order + 1`` coefficients.

    Raises
    ------
    ValueError
        Invalid arguments.
    RuntimeError
        No convergence of the solver, or of the quadrature of the higher orders.

    Examples
    --------
    >>> from theory import AttentionModel
    >>> model = AttentionModel(2.0, "tanh")
    >>> e = attention_error_taylor(0.1, model, order=2)
    >>> bool(e[0] == attention_error(0.1, model))
    True
    >>> round(float(e[1]), 4)
    1.6232
    """
    g0 = as_float("gamma", gamma, low=GAMMA_RANGE[0], high=GAMMA_RANGE[1])
    as_float("c", c, low=C_RANGE[0], high=C_RANGE[1])
    if _structured_case(snr, w_k, w_q, spike, solver_options):
        from .structured import structured_attention_error_taylor_core

        return structured_attention_error_taylor_core(g0, c, activation, snr, w_k, w_q, diagonal, order=order,
                                                             rtol=rtol, **solver_options)
    check_activation(activation, "activation")
    d0 = null_kernel_diagonal(activation, diagonal)
    hm = hermite_moments(activation)
    solver_options.pop("check_quadrature", None)
    order = _taylor_order(order)
    t = null_system_taylor(g0, c, hm.a1, hm.sf2, d0, order + 1, rtol=rtol, **solver_options)
    gam = Jet.variable(g0, order)
    err = -(gam * gam) * Jet(t.delta_tilde).derivative()
    return finite_result("attention_error_taylor", err.coefficients, gamma=gamma, c=c)


attention_error_taylor = takes_model(
    "AttentionModel(c, activation, ...).error_taylor(gamma) or attention_error_taylor(gamma, model)",
    name="attention_error_taylor")(attention_error_taylor_core)


def _taylor_order(order: Any) -> int:
    """An ``order`` of the error's Taylor coefficients: the unknowns need one more (at most 20)."""
    return as_int("order", order, low=0, high=MAX_TAYLOR_ORDER - 1)


def _check_solver_keywords(options: dict[str, Any]) -> None:
    """The solver options of :func:`attention_error`: known names, each checked as on the structured path."""
    unknown = sorted(set(options) - set(_SOLVER_OPTIONS))
    if unknown:
        raise ArgumentTypeError(f"{unknown[0]} is not a solver option of attention_error; the options are "
                                f"{_SOLVER_OPTIONS}")
    if "maxiter" in options and "max_iter" in options:
        raise ValueError("give maxiter or max_iter (the same option), not both")
    name = "maxiter" if "maxiter" in options else "max_iter"
    checked_solver_options(options.get("system", "symmetric"), options.get("method", "exact"), options.get("n_nodes", 160),
                    options.get("tol", 1e-12), options.get(name, 100), names=(name, name))
    if "check_quadrature" in options:
        check_flag("check_quadrature", options["check_quadrature"])


def attention_small_gamma_law_core(
    c: float, activation: ActivationLike, diagonal: Any = "removed", gammas: tuple[float, float] = (1e-13, 1e-11), **solver_options: Any
) -> tuple[float, float]:
    """Small-``gamma`` law ``E_A ~ C gamma^e`` of the null model, read off the deterministic equivalent.

    Returns ``(e, C)`` with ``e`` the log-log slope between the two ``gammas`` and
    ``C = E_A(gamma_0) / gamma_0^e`` at the smaller one.  Expected: ``e = 1/2`` for ``c > 1`` whenever
    ``A(l) - kappa`` vanishes inside the support of ``mu_G`` (e.g. tanh with the diagonal removed;
    the first reconstruction's ``C_f sqrt(gamma)``), ``e = 2`` when it does not (interpolation, like ridge), ``e = 0``
    for ``c < 1`` (``E_A -> 1 - c``).  A numerical reading, not a closed form.

    ``model``: an :class:`theory.AttentionModel` of the null model (``snr = 0``, no spike); its ``c``, activation
    and diagonal are used.  Deprecated: the long signature ``attention_small_gamma_law(c, activation,
    diagonal="removed", gammas=..., **solver_options)``.

    Examples
    --------
    >>> from theory import AttentionModel
    >>> e, C = attention_small_gamma_law(AttentionModel(2.0, "tanh"))
    >>> round(e, 3)
    0.5
    """
    g = as_array("gammas", gammas, low=0, low_open=True)
    if g.shape != (2,) or g[0] >= g[1]:
        raise ValueError(f"gammas must be two increasing positive numbers, got {gammas!r}")
    e = attention_error_core(g, c, activation, diagonal=diagonal, **solver_options)
    if not np.all(e > 0):
        raise ValueError(f"attention_small_gamma_law needs E_A > 0 at both gammas, got {e} (c={c!r}, "
                         f"activation={activation!r}): no power law to read")
    slope = float(np.log(e[1] / e[0]) / np.log(g[1] / g[0]))
    return finite_result("attention_small_gamma_law", (slope, float(e[0] / g[0] ** slope)), c=c, gammas=gammas)


attention_small_gamma_law = takes_model(
    "AttentionModel(c, activation, diagonal=...).small_gamma_law() or attention_small_gamma_law(model)",
    position=0, name="attention_small_gamma_law")(attention_small_gamma_law_core)
