"""The domain and options shared by theory's fixed-point solvers (the null system, the structured and the
attention equivalents): ranges of ``c``, ``gamma`` and the kernel constants, the system / method / tolerance
options, and the grid size, checked before any work.  Private: the solver modules import it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .validation import check_choice, check_real, check_size, get_limits

# Domain of the solvers (this null solver and theory.structured's), checked before any work:
#: ``c = p / n``: outside it the moments of mu_G overflow float64 (c**-15) or the support degenerates
C_RANGE = (1e-4, 1e4)
#: ``gamma = -z``: the continuation starts at max(10, 4 gamma) and steps by factors <= 4 down to gamma
GAMMA_RANGE = (1e-30, 1e30)
#: ``|a1|``, ``|d0|`` at most this, ``s_f^2`` at most its square (kernel constants of an activation of O(1) scale)
KERNEL_CONSTANT_MAX = 1e6
#: accepted names of the null systems (``"corrected"`` is an alias of ``"symmetric"``)
SYSTEM_ALIASES = {"symmetric": "symmetric", "corrected": "symmetric", "spec": "spec"}
METHODS = ("exact", "quadrature")
#: largest ``tol`` (a residual above it is not a solution of the system)
TOL_MAX = 1e-3
#: fewest quadrature nodes of the solvers
N_NODES_MIN = 16


class SolverOptions(NamedTuple):
    """The checked options of the fixed-point solvers: the null system (canonical name), the integration method,
    the quadrature nodes, the residual tolerance and the Newton steps per continuation point."""

    system: str
    method: str
    n_nodes: int
    tol: float
    maxiter: int


def checked_solver_options(system: Any, method: Any, n_nodes: Any, tol: Any, maxiter: Any, alias: Any = None,
                           names: tuple[str, str] = ("maxiter", "max_iter")) -> SolverOptions:
    """Checked :class:`SolverOptions` ``(system, method, n_nodes, tol, maxiter)``, the same rules on every path.
    ``system``: ``"symmetric"`` (alias ``"corrected"``) or ``"spec"`` (canonical name returned); ``method``: ``"exact"``
    or ``"quadrature"``; ``n_nodes``: an integer in ``[16, Limits.max_quadrature_nodes]``; ``tol``: in ``(0, 1e-3]``;
    ``maxiter``: an integer in ``[1, Limits.max_iterations]``, replaced by ``alias`` (the other spelling, ``max_iter`` /
    ``maxiter``) when that is not None; ``names`` are the names of ``maxiter`` and ``alias`` in the caller's signature
    (for the messages).  ``tol`` and ``n_nodes`` come back as given (numbers unchanged)."""
    system = SYSTEM_ALIASES[check_choice("system", system, tuple(SYSTEM_ALIASES))]
    method = check_choice("method", method, METHODS)
    check_size("n_nodes", n_nodes, N_NODES_MIN, "max_quadrature_nodes")
    check_real("tol", tol, low=0, high=TOL_MAX, low_open=True)
    if alias is not None:
        maxiter = alias
    maxiter = check_size(names[0] if alias is None else names[1], maxiter, 1, "max_iterations")
    return SolverOptions(system, method, n_nodes, tol, maxiter)


def check_grid(name: str, size: int) -> None:
    """A solver grid of ``size`` points (one continuation solve each) within ``Limits.max_grid_size``."""
    high = get_limits().max_grid_size
    if size > high:
        raise ValueError(f"{name} must have at most {high} points (Limits.max_grid_size; raise it with "
                         f"theory.set_limits(max_grid_size=...)), got {size}")
