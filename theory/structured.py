"""Paper B, structured case: attention interpolation error with signal and spiked weights.

The computation behind :meth:`theory.AttentionModel.solve` (and :meth:`~theory.AttentionModel.error`,
:meth:`~theory.AttentionModel.error_taylor` with signal or a spike); its functions take the model's fields as
plain arguments.  *Derived by the project* (the paper's 9x9 system was not recovered); the derivation, step by
step, is ``docs/structured_attention.md``, whose step numbers the docstrings here use:

1. linearised kernel ``K ~ a1 (X^T W X / p - diag) + (s_f / sqrt p) Xi + d0 I`` (``Xi`` symmetric Gaussian);
2. finite-rank split over span(mu, w_K, w_Q): ``Phi^T Phi / n = c K0 G K0 + U C U^T / n``
   (``low_rank_matrix`` of :mod:`theory._structured_symbolic`);
3. Woodbury: ``y^T Q y / n = y^T Q0 y / n - b^T C (I + Omega C)^{-1} b`` with ``b -> T[0] (x) m`` and
   ``Omega -> T (x) Gamma``, ``T`` the 3x3 matrix of null traces;
4. the null traces from the corrected null system (unknowns ``delta, delta~, kappa``; :func:`null_trace_expressions`);
5. ``E = -gamma^2 d/dgamma (y^T Q y / n)`` by implicit differentiation of the null system.

Numerics: the null unknowns and their derivatives come from :func:`theory.solve_null_system_full` (so ``snr = 0``
reduces *exactly* to :meth:`theory.AttentionModel.error`); the trace integrals ``int l^k / D`` are exact partial
fractions against the Stieltjes transform of ``mu_G`` (Gauss-Chebyshev fallback where they cancel; quadrature
cross-check).  An orthogonal spike decouples and leaves ``E`` unchanged; with ``a1 = 0, d0 = 1, s_f = 0``
(``K = I``) the system reduces to the ridge formula (tested).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from .validation import ArgumentTypeError, as_array, as_float, as_int, check_flag, finite_result
from ._jets import Jet
from .implicit import MAX_TAYLOR_ORDER, null_system_taylor, refine_quadrature
from ._solver_domain import C_RANGE, GAMMA_RANGE, SolverOptions, check_grid, checked_solver_options
from .null_system import NullConstants, _gram_law_quadrature
from .symbolic import NumericSpec, is_symbolic, numeric_function, symbolic_arguments
from .symbols import a1 as _a1, c as _c, delta as _delta, gamma as _gamma
from ._structured_symbolic import (d0_sym, delta_t, kappa_sym, l_sym, low_rank_matrix, null_trace_expressions,
                                   sf2_sym)
from ._spikes import LINEARISATION_REGIME, finite_dims, spike_vectors
from ._kernel_constants import FrozenDict as _FrozenDict, kernel_constants as _kernel_constants
from ._structured_traces import (GramQuadratureIntegrals, GramRationalIntegrals, StructuredConvergenceError,
                                 error_on_grid)

__all__ = ["StructuredSolution", "StructuredConvergenceError", "spike_vectors", "null_trace_expressions",
           "LINEARISATION_REGIME"]

# ============================================================================ numeric solve
@dataclass
class StructuredSolution:
    """Result of :meth:`theory.AttentionModel.solve` (arrays indexed like ``gamma``).

    Attributes
    ----------
    gamma, error : ridge parameters and the interpolation error ``E``.
    yQy : ``y^T Q y / n`` (deterministic equivalent).
    null_error : ``E`` of the null model at the same ``gamma`` (``= -gamma^2 d delta~/d gamma``).
    delta, delta_t, kappa : solution of the null system (``kappa = 0`` for ``system="spec"``).
    traces : (G, 3, 3) trace matrices ``T``.
    residual : residual of the null system per gamma (from :func:`theory.solve_null_system_full`).
    quadrature_change : |E(exact traces) - E(quadrature traces, n_nodes)| per gamma (cross-check of the
        trace integrals; zeros when ``check_quadrature=False``).
    a1, sf2, d0 : kernel constants used. m, A : finite-rank data (``A`` includes ``a1``).
    system : null system used (``"symmetric"``: corrected, default; ``"spec"``: the first reconstruction's).
    """

    gamma: np.ndarray
    error: np.ndarray
    yQy: np.ndarray
    null_error: np.ndarray
    delta: np.ndarray
    delta_t: np.ndarray
    kappa: np.ndarray
    traces: np.ndarray
    residual: np.ndarray
    quadrature_change: np.ndarray
    a1: float
    sf2: float
    d0: float
    m: np.ndarray
    A: np.ndarray
    system: str = "symmetric"


def _null_solutions(gam: np.ndarray, consts: NullConstants, options: SolverOptions) -> np.ndarray:
    """Null unknowns and their ``gamma``-derivatives, rows ``(delta, delta~, kappa, d/dgamma of each, residual)``, by
    :func:`theory.solve_null_system_full` (module docstring; ``d/dgamma = -d/dz``).  The null system does not involve
    the signal or the spike, so every ``snr`` and spike on one ``(gamma grid, c, activation, solver)`` shares one solve
    (memoised; a fresh copy per call)."""
    gam = np.ascontiguousarray(gam, dtype=float)
    system, method, n_nodes, tol, maxiter = options
    key = SolverOptions(str(system), str(method), int(n_nodes), float(tol), int(maxiter))
    return _null_solutions_memo(gam.tobytes(), gam.shape, NullConstants(*map(float, consts)), key).copy()


@functools.lru_cache(maxsize=256)
def _null_solutions_memo(gam_bytes: bytes, shape: tuple, consts: NullConstants, options: SolverOptions) -> np.ndarray:
    """:func:`_null_solutions` on hashable arguments (``gam`` as its bytes and shape)."""
    from .null_system import solve_null_system_full

    gam = np.frombuffer(gam_bytes, dtype=float).reshape(shape)
    try:
        sols = solve_null_system_full(-gam, *consts, system=options.system, method=options.method,
                                      n_nodes=max(options.n_nodes, 16), tol=options.tol, max_iter=options.maxiter)
    except RuntimeError as exc:
        raise StructuredConvergenceError(f"null system did not converge: {exc}") from exc
    return np.array([[s.delta, s.delta_tilde, s.kappa, -s.ddelta_dz, -s.ddelta_tilde_dz, -s.dkappa_dz, s.residual]
                     for s in sols], dtype=float)  # finite: the null solver refuses anything else


def _structured_solve(gamma: Any, c: float, activation: Any, snr: float, spike: Any = None,
                      diagonal: str = "removed", **solver_options: Any) -> StructuredSolution:
    """:meth:`theory.AttentionModel.solve` of the model ``(c, activation, snr, spike, diagonal)`` (``spike``: the
    vectors ``(w_k, w_q)`` or None).  The options (:func:`_structured_options`, ``check_quadrature=True`` unless given)
    follow the rules of the null solver (:func:`theory.solve_null_system_full`), so that
    :meth:`theory.AttentionModel.error` checks them the same way with and without signal."""
    c, snr = as_float("c", c, low=C_RANGE[0], high=C_RANGE[1]), float(snr)  # c of a symbolic function: checked here
    options, check_quadrature = _structured_options(solver_options, check_quadrature=True)
    gam = np.atleast_1d(as_array("gamma", gamma, ndim=(0, 1), low=GAMMA_RANGE[0], high=GAMMA_RANGE[1]))
    check_grid("gamma", gam.size)
    a1, sf2, d0 = _kernel_constants(activation, diagonal)
    m, Aunit = finite_dims(snr, spike)
    A = a1 * Aunit

    consts = NullConstants(c, a1, sf2, d0)
    nul = _null_solutions(gam, consts, options)
    quad = GramQuadratureIntegrals(c, options.n_nodes)
    exact = GramRationalIntegrals(c) if options.method == "exact" else None
    out, Ts = error_on_grid(gam, consts, nul, m, A, exact, quad)
    qchange = np.zeros(gam.size)
    if check_quadrature:
        alt, _ = error_on_grid(gam, consts, nul, m, A, None, quad)
        qchange = np.abs(out["E"] - alt["E"])
    if not np.all(np.isfinite(out["E"])):
        bad = ~np.isfinite(out["E"])
        raise StructuredConvergenceError(f"non-finite error at gamma={gam[bad]} (null-system residual reached: "
                                         f"{nul[bad, 6]})")
    return StructuredSolution(
        gamma=gam, error=out["E"], yQy=out["yQy"], null_error=out["E0"], delta=nul[:, 0], delta_t=nul[:, 1],
        kappa=nul[:, 2], traces=Ts, residual=nul[:, 6], quadrature_change=qchange, a1=a1, sf2=sf2, d0=d0, m=m, A=A,
        system=options.system,
    )


#: the solver options of the structured solver and their defaults
_STRUCTURED_OPTIONS = {"system": "symmetric", "method": "exact", "n_nodes": 800, "tol": 1e-12, "maxiter": 100,
                       "max_iter": None, "check_quadrature": False}


def _structured_options(solver_options: dict[str, Any], check_quadrature: bool = False) -> tuple[SolverOptions, bool]:
    """Checked options of the structured solver (defaults :data:`_STRUCTURED_OPTIONS`, ``check_quadrature`` as
    given): ``max_iter``, when given, replaces ``maxiter``; the rules are those of the null solver."""
    opts = dict(_STRUCTURED_OPTIONS, check_quadrature=check_quadrature)
    unknown = sorted(set(solver_options) - set(opts))
    if unknown:
        raise ArgumentTypeError(f"{unknown[0]} is not a solver option of AttentionModel.error; the options are "
                                f"{tuple(opts)}")
    opts.update(solver_options)
    options = checked_solver_options(opts["system"], opts["method"], opts["n_nodes"], opts["tol"], opts["maxiter"],
                                     opts["max_iter"])
    return options, check_flag("check_quadrature", opts["check_quadrature"])


def _structured_error(gamma: Any, c: float, activation: Any, snr: float, spike: Any = None, diagonal: str = "removed",
                      **solver_options: Any) -> Any:
    """The error of :func:`_structured_solve` (``check_quadrature=False`` unless given): a float for a scalar ``gamma``,
    an array for an array, a :class:`theory.symbolic.NumericFunction` printed ``structured_attention_error(...)`` for a
    sympy ``gamma`` or ``c`` with free symbols.  :meth:`theory.AttentionModel.error` with signal or a spike, and
    :func:`theory.softmax.softmax_attention_error`."""
    if (is_symbolic(gamma) or is_symbolic(c)) and not isinstance(gamma, (list, tuple, np.ndarray)):
        return _symbolic_structured_error(gamma, c, activation, snr, spike, diagonal, solver_options)
    solver_options.setdefault("check_quadrature", False)
    sol = _structured_solve(gamma, c, activation, snr, spike, diagonal, **solver_options)
    if np.ndim(gamma) == 0:
        return float(sol.error[0])
    return sol.error


# ============================================================================ symbolic input and Taylor coefficients
def _symbolic_structured_error(gamma: Any, c: Any, activation: Any, snr: Any, spike: Any, diagonal: Any,
                               solver_options: dict[str, Any]) -> Any:
    """:func:`_structured_error` of a symbolic ``gamma`` or ``c``: the solver options checked as on the numeric path
    (:func:`_structured_solve`), then the :class:`theory.symbolic.NumericFunction`."""
    g, cc = symbolic_arguments(gamma, c, C_RANGE)
    _structured_options(solver_options)
    act, options = _hashable(activation), {k: _hashable(v) for k, v in sorted(solver_options.items())}
    fixed = [(None, act), (None, snr)]
    if spike is not None:
        spike = _hashable(tuple(spike))
        fixed += [("w_k", spike[0]), ("w_q", spike[1])]
    if not (isinstance(diagonal, str) and diagonal == "removed"):
        fixed.append(("diagonal", diagonal))
    fixed += list(options.items())
    act = dict(act) if isinstance(act, _FrozenDict) else act  # the numeric path takes the frozen forms
    spec = NumericSpec(
        "structured_attention_error", tuple(fixed),
        values=lambda gv, cv: _structured_error(gv, cv, act, snr, spike, diagonal, **options),
        taylor=lambda g0, cv, order: _structured_error_taylor(g0, cv, act, snr, spike, diagonal, order=order,
                                                              **options),
    )
    return numeric_function(spec)(g, cc)


def _hashable(value: Any) -> Any:
    """A hashable stand-in of an argument for the identity of a symbolic function: a dict as a
    :class:`_FrozenDict`, an array or list as a tuple of floats (both accepted by the numeric path)."""
    if isinstance(value, dict):
        return _FrozenDict(sorted((str(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, np.ndarray)):
        return tuple(np.asarray(value, dtype=float).ravel().tolist())
    if isinstance(value, tuple):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _structured_error_taylor(gamma: float, c: float, activation: Any, snr: float, spike: Any = None,
                             diagonal: str = "removed", *, order: int = 2, rtol: float = 1e-8,
                             **solver_options: Any) -> np.ndarray:
    """Taylor coefficients of :func:`_structured_error` in ``gamma``: ``E(gamma + s) = sum_k e[k] s^k``
    (:meth:`theory.AttentionModel.error_taylor` with signal or a spike).  Implicit derivatives, no finite differences:
    the null unknowns' coefficients of order ``order + 1`` (:func:`theory.null_system_taylor`), the trace integrals of
    Step 4 (the integrands of :func:`null_trace_expressions`) evaluated on those truncated series at the nodes of the
    Gauss-Jacobi rule of ``mu_G``, the Woodbury formula of Step 3 in series arithmetic, and
    ``E = -gamma^2 d/dgamma (y^T Q y / n)``; the rule is refined to ``rtol``
    (:func:`theory.implicit.refine_quadrature`).  ``e[0]`` agrees with :func:`_structured_error` (which integrates the
    traces exactly) to the quadrature's accuracy.  ``n_nodes`` and ``method`` act on the null solve of orders 0 and 1
    only; ``check_quadrature`` is accepted for symmetry with :func:`_structured_error` (refinement checks here)."""
    c, snr = as_float("c", c, low=C_RANGE[0], high=C_RANGE[1]), float(snr)
    g0 = as_float("gamma", gamma, low=GAMMA_RANGE[0], high=GAMMA_RANGE[1])
    options, _ = _structured_options(solver_options)
    order = as_int("order", order, low=0, high=MAX_TAYLOR_ORDER - 1)
    a1, sf2, d0 = _kernel_constants(activation, diagonal)
    m, Aunit = finite_dims(snr, spike)
    try:
        nul = null_system_taylor(g0, c, a1, sf2, d0, order + 1, rtol=rtol, system=options.system,
                                 method=options.method, n_nodes=max(int(options.n_nodes), 16), tol=options.tol,
                                 max_iter=options.maxiter)
    except RuntimeError as exc:
        raise StructuredConvergenceError(f"null system did not converge: {exc}") from exc
    consts = (c, a1, sf2, d0)
    out, _, _ = refine_quadrature(lambda n: _error_series(nul, consts, m, a1 * Aunit, n).coefficients[:, None],
                                  rtol, f"structured_attention_error_taylor at gamma={g0:g}")
    return finite_result("structured_attention_error_taylor", out[:, 0], gamma=gamma, c=c, snr=snr)


@functools.lru_cache(maxsize=1)
def _trace_integrand_series():
    """The trace integrands ``T12, T13, T22, L`` of :func:`null_trace_expressions` as a function of series."""
    e = null_trace_expressions()
    args = (l_sym, _delta, delta_t, kappa_sym, _gamma, _c, _a1, sf2_sym, d0_sym)
    return sp.lambdify(args, [e["T12"], e["T13"], e["T22"], e["L"]], modules=[{}])


def _error_series(nul: Any, consts: tuple[float, float, float, float], m: np.ndarray, A: np.ndarray,
                  n_nodes: int) -> Jet:
    """Series of ``E`` (order ``len(nul.delta) - 2``) from the null unknowns' series, on an ``n_nodes`` rule."""
    c, a1, sf2, d0 = consts
    nodes, weights = _gram_law_quadrature(c, n_nodes)
    dl, dt, kp = Jet(nul.delta), Jet(nul.delta_tilde), Jet(nul.kappa)
    gam = Jet.variable(nul.gamma, dl.order)
    T12, T13, T22, L = (v.integrate(weights) for v in _trace_integrand_series()(nodes, dl, dt, kp, gam, *consts))
    T23, T33 = (1 - gam * dt) / c, (1 - gam * (1 + dl) * L) / c
    rows = [[dt, T12, T13], [T12, T22, T23], [T13, T23, T33]]
    T = Jet(np.stack([np.stack([e.coefficients for e in row], axis=-1) for row in rows], axis=-2))
    k = m.size
    Gam = np.outer(m, m) + np.eye(k)
    C = low_rank_matrix(A, Gam, c)
    Om = Jet(np.stack([np.kron(Tk, Gam) for Tk in T.coefficients]))
    b = Jet(np.stack([np.kron(Tk[0], m) for Tk in T.coefficients]))
    S = (np.eye(3 * k) + Om @ C).inverse()
    yqy = dt - b @ ((C @ S) @ b)
    return -(gam * gam).truncate(dl.order - 1) * yqy.derivative()
