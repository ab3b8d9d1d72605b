"""Multi-head attention (claim B11): the interpolation error of ``H`` heads on paper B's data.

*Derived by the project*; the derivation, step by step with its checks, is ``docs/multi_head.md``.

Model
-----
``X = mu y^T + Z`` (``p x n``, ``mu = sqrt(snr) e_1``, ``y_i = +-1``, ``n = p / c``).  Head ``h`` has a centred
activation ``f_h`` and a key-query matrix ``W_h``; ``K_h = f_h(X^T W_h X / sqrt p) / sqrt p`` with its diagonal
removed.

* ``heads="shared"``: ``W_h = I`` (the heads differ by ``f_h`` only);
* ``heads="random"``: ``W_h = sqrt(p / d) Q_h R_h^T``, ``Q_h, R_h`` ``p x d`` with i.i.d. ``N(0, 1/p)`` entries,
  independent across heads, ``d = key_ratio p`` (default ``p / H``);
* ``readout="sum"``: ``Phi = X K``, ``K = H^(-1/2) sum_h K_h``;
* ``readout="concat"``: ``Phi = [X K_1; ...; X K_H]``; with ``value_ratio = v`` head ``h``'s block is ``P_h X K_h``,
  ``P_h`` a Haar ``v p x p`` partial isometry, independent across heads.

The error is paper B's interpolation error ``E(gamma) = gamma^2 / n  y^T Q^2 y``, ``Q = (Phi^T Phi / n + gamma)^-1``.

Derivation (summary)
--------------------
1. *Gaussian equivalence, head by head.*  ``K_h ~ a_h (X^T W_h X / p - diag) + s_h N_h``, ``a_h = E[xi f_h(xi)]``,
   ``N_h = Xi_h / sqrt p`` independent of the data.  Shared heads take the same argument ``A = X^T X / sqrt p``,
   so their nonlinear parts are one family of symmetric (GOE-like) matrices with the covariance
   ``Sigma_hg = E[f_h(xi) f_g(xi)] - a_h a_g`` across heads (Hermite orders ``>= 2``); random heads have
   independent, non-symmetric ones (``s_h^2 = Sigma_hh``).
2. *A linear pencil.*  ``-(Phi^T Phi / n + gamma)`` is the Schur complement of a symmetric block matrix ``L``
   that is *linear* in the Gaussian matrices ``Y = X / sqrt p``, ``Q_h``, ``R_h``, ``N_h`` and, for a budget,
   ``G_h`` (a Gaussian ``(1 - v) p x p`` matrix: ``I - G^T (G G^T)^-1 G`` is a Haar projection of rank ``v p``):
   the Hessian of a Lagrangian whose multipliers impose ``u = Y x``, ``k_h = K_h x``, ``v_h = Y k_h``, ...
   (:func:`build_pencil`).  ``(L^-1)_xx = -Q``.
3. *Matrix Dyson equation.*  With the signal left out (``Y = Z / sqrt p``), every block of ``L^-1`` is close to
   a multiple of the identity in normalised trace, ``M = (L0 - S[M])^-1`` with ``S`` the covariance map of the
   Gaussian blocks (``E[G B G^T] = sigma^2 tr(B) I``; for the GOE-like ``N_h`` also ``E[W B W]``, which gives the
   ``kappa`` term of the one-head null system).  Solved by Newton's method on the entries that ``S`` reads,
   continued from the noiseless pencil (``M = L0^-1``) and then in ``gamma``.
4. *Signal.*  ``X / sqrt p = Y + sqrt(snr / c) e_1 yhat^T`` (``yhat = y / sqrt n``) is a finite-rank change of
   ``L`` at every place ``Y`` sits; Woodbury's identity and the isotropy of ``e_1`` and ``yhat`` against the null
   pencil turn ``y^T Q y / n`` into a small matrix expression in the entries of ``M``.
5. ``E = -gamma^2 d/dgamma (y^T Q y / n)`` by implicit differentiation of the Dyson equation.

With one head this reproduces :meth:`theory.AttentionModel.error` to solver precision (null model and signal);
``shared`` + ``sum`` is exactly one head with ``g = H^(-1/2) sum_h f_h`` (:meth:`MultiHeadModel.equivalent_model`,
the route :meth:`MultiHeadModel.error` takes there).  The sum of ``H`` random heads of key dimension ``d`` is
one random head of key dimension ``H d`` (their linear parts add to ``sqrt(p / (H d)) [Q_1 .. Q_H][R_1 .. R_H]^T``).

>>> m = MultiHeadModel(2.0, ("tanh", "gelu"), snr=1.0, readout="concat")
>>> round(m.error(0.1), 4), round(m.ridge_error(0.1), 4)
(0.0949, 0.007)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from ._solver_domain import C_RANGE, GAMMA_RANGE, check_grid
from ._spikes import SNR_MAX
from .activations import activation as _registry_activation
from .activations import check_activation, hermite_moments
from .ridge import ridge_error_values
from .symbolic import NumericSpec, is_symbolic, numeric_function, symbolic_arguments
from .validation import ArgumentTypeError, as_array, as_float, check_choice, describe

__all__ = ["MultiHeadModel", "MultiHeadSolution", "MultiHeadConvergenceError", "shared_budget_limit", "HEADS",
           "READOUTS", "MAX_HEADS"]

HEADS = ("shared", "random")
READOUTS = ("sum", "concat")
#: the most heads a model takes: the Newton system of the pencil has about (2 H + 1)^2 unknowns (1100 at H = 16,
#: a minute or two; its cost grows like H^6)
MAX_HEADS = 16
#: ``key_ratio`` and ``value_ratio`` ranges: ``d = key_ratio p`` in ``[1e-3, 1e3] p``; ``v`` in ``[1e-3, 1]``
KEY_RATIO_RANGE = (1e-3, 1e3)
VALUE_RATIO_RANGE = (1e-3, 1.0)


class MultiHeadConvergenceError(RuntimeError):
    """The Dyson equation of the multi-head pencil did not converge (the message gives ``gamma`` and the residual)."""


# ============================================================================ the model
@dataclass(frozen=True)
class MultiHeadModel:
    """Multi-head attention on paper B's data, frozen: ``H = len(activations)`` heads (module docstring).

    Parameters
    ----------
    c : float
        ``p / n``, in ``[1e-4, 1e4]`` (stored as a float).
    activations : sequence of str or sympy expressions
        One activation per head (registry names stored as their keys, expressions in ``x`` centred internally);
        ``1 <= H <= MAX_HEADS``.  Stored as a tuple.
    snr : float
        ``||mu||^2``, in ``[0, 1e8]``.
    heads : ``"shared"`` (``W_h = I``) or ``"random"`` (``W_h = sqrt(p/d) Q_h R_h^T``).
    readout : ``"sum"`` (``X H^(-1/2) sum_h K_h``) or ``"concat"`` (the ``H`` blocks ``X K_h`` stacked).
    key_ratio : float, optional
        ``d / p`` of random heads, in ``[1e-3, 1e3]``; ``None`` (default) is ``1 / H``.  Shared heads take none.
    value_ratio : float, optional
        ``v``: each head's block of the concatenation projected to ``v p`` coordinates by a Haar partial isometry,
        ``v`` in ``[1e-3, 1]`` (``v = 1/H``: ``p`` features in all); ``None``: no projection.  Concatenation only.

    Raises
    ------
    ValueError
        A parameter out of its domain (``ArgumentTypeError``, also a ``TypeError``, for a wrong type).

    Examples
    --------
    >>> m = MultiHeadModel(0.5, ("tanh", "gelu"), snr=1.0)
    >>> m.H, m.d_ratio
    (2, None)
    >>> bool(abs(m.error(1e-3) - m.equivalent_model().error(1e-3)) == 0)
    True
    >>> MultiHeadModel(2.0, ["erf"] * 4, heads="random").d_ratio
    0.25
    """

    c: Any
    activations: Any
    snr: float = 0.0
    heads: str = "shared"
    readout: str = "sum"
    key_ratio: Any = None
    value_ratio: Any = None

    def __post_init__(self) -> None:
        set_ = functools.partial(object.__setattr__, self)
        set_("c", as_float("c", self.c, low=C_RANGE[0], high=C_RANGE[1]))
        acts = self.activations
        if isinstance(acts, (str, sp.Basic)) or not isinstance(acts, (list, tuple)):
            raise ArgumentTypeError(f"activations must be a list or tuple of activations (one per head), got "
                                    f"{describe(acts)}")
        if not 1 <= len(acts) <= MAX_HEADS:
            raise ValueError(f"activations must name between 1 and {MAX_HEADS} heads, got {len(acts)}")
        set_("activations", tuple(check_activation(a, f"activations[{i}]") for i, a in enumerate(acts)))
        set_("snr", as_float("snr", self.snr, low=0, high=SNR_MAX))
        set_("heads", check_choice("heads", self.heads, HEADS))
        set_("readout", check_choice("readout", self.readout, READOUTS))
        if self.key_ratio is not None:
            if self.heads != "random":
                raise ValueError("key_ratio applies to random heads only (shared heads have W_h = I); got "
                                 f"key_ratio={self.key_ratio!r} with heads='shared'")
            set_("key_ratio", as_float("key_ratio", self.key_ratio, low=KEY_RATIO_RANGE[0], high=KEY_RATIO_RANGE[1]))
        if self.value_ratio is not None:
            if self.readout != "concat":
                raise ValueError("value_ratio applies to the concatenation only (readout='concat'); got "
                                 f"value_ratio={self.value_ratio!r} with readout='sum'")
            set_("value_ratio", as_float("value_ratio", self.value_ratio, low=VALUE_RATIO_RANGE[0],
                                         high=VALUE_RATIO_RANGE[1]))

    # ------------------------------------------------------------------ properties
    @property
    def H(self) -> int:
        """The number of heads."""
        return len(self.activations)

    @property
    def d_ratio(self) -> float | None:
        """``d / p`` of random heads (``key_ratio`` or ``1 / H``); ``None`` for shared heads."""
        if self.heads != "random":
            return None
        return float(self.key_ratio) if self.key_ratio is not None else 1.0 / self.H

    @property
    def n_features_ratio(self) -> float:
        """Features per token dimension ``p``: ``1`` (sum), ``H`` (concatenation) or ``H v`` (with a budget)."""
        if self.readout == "sum":
            return 1.0
        return self.H * (1.0 if self.value_ratio is None else float(self.value_ratio))

    def kernel_constants(self) -> tuple[np.ndarray, np.ndarray]:
        """``(a, Sigma)``: the heads' linear coefficients ``a_h = E[xi f_h(xi)]`` and the covariance
        ``Sigma_hg = E[f_h f_g] - a_h a_g`` of their nonlinear parts (``xi ~ N(0, 1)``, ``f`` centred).  Shared heads
        use all of ``Sigma``; random heads its diagonal (their nonlinear parts are independent: the off-diagonal
        entries are returned as 0)."""
        return _kernel_constants(self.activations, self.heads == "shared")

    def equivalent_model(self) -> Any:
        """Shared heads with the sum readout: the one-head :class:`theory.AttentionModel` with
        ``g = H^(-1/2) sum_h f_h`` (the exact reduction); other cases raise ``ValueError``."""
        if (self.heads, self.readout) != ("shared", "sum"):
            raise ValueError(f"only shared heads with the sum readout reduce to one head; this model has heads="
                             f"{self.heads!r}, readout={self.readout!r}")
        from .settings import AttentionModel

        return AttentionModel(self.c, summed_activation(self.activations), self.snr)

    # ------------------------------------------------------------------ predictions
    def error(self, gamma: Any, **solver_options: Any) -> Any:
        """Limiting interpolation error ``E(gamma)`` of the multi-head features (module docstring).

        Parameters
        ----------
        gamma : float, 1-d array or sympy expression
            Ridge parameter(s) in ``[1e-30, 1e30]``; a sympy expression with free symbols gives a sympy function
            of ``gamma`` (:mod:`theory.symbolic`: ``evalf``, ``subs``, ``lambdify``, the first derivative).
        **solver_options
            ``tol`` (Newton's tolerance, in ``(0, 1e-6]``, default ``1e-12``) and ``maxiter`` (Newton steps per
            continuation point, default 60).  Shared heads with the sum readout take
            :meth:`theory.AttentionModel.error`'s options instead (the exact reduction).

        Returns
        -------
        float, numpy.ndarray or theory.symbolic.NumericFunction

        Raises
        ------
        MultiHeadConvergenceError
            The Dyson equation did not converge.
        """
        if (self.heads, self.readout) == ("shared", "sum"):
            return self.equivalent_model().error(gamma, **solver_options)
        if is_symbolic(gamma) and not isinstance(gamma, (list, tuple, np.ndarray)):
            return self._symbolic_error(gamma, solver_options)
        sol = self.solve(gamma, **solver_options)
        return float(sol.error[0]) if np.ndim(gamma) == 0 else sol.error

    def solve(self, gamma: Any, **solver_options: Any) -> MultiHeadSolution:
        """The deterministic equivalent on a ``gamma`` grid with its diagnostics (:class:`MultiHeadSolution`), by the
        pencil and its Dyson equation (every case, shared + sum included: the route the tests compare with the
        exact reduction)."""
        tol, maxiter = _solver_options(solver_options)
        gam = np.atleast_1d(as_array("gamma", gamma, ndim=(0, 1), low=GAMMA_RANGE[0], high=GAMMA_RANGE[1]))
        check_grid("gamma", gam.size)
        return _solve_cached(self, tuple(float(g) for g in gam), tol, maxiter)

    def ridge_error(self, gamma: Any) -> Any:
        """Ridge regression's error on the same data ``(c, snr)`` (:func:`theory.ridge_error_values`)."""
        out = ridge_error_values(gamma, self.c, self.snr)
        return float(out) if np.ndim(out) == 0 else out

    def _symbolic_error(self, gamma: Any, options: dict[str, Any]) -> Any:
        g, cc = symbolic_arguments(gamma, sp.Float(self.c), C_RANGE)
        tol, maxiter = _solver_options(dict(options))
        fields = (("activations", self.activations), ("snr", self.snr), ("heads", self.heads),
                  ("readout", self.readout), ("key_ratio", self.key_ratio), ("value_ratio", self.value_ratio))
        model = self

        def values(gv: np.ndarray, cv: float) -> np.ndarray:
            return _with_c(model, cv).solve(gv, tol=tol, maxiter=maxiter).error

        def taylor(g0: float, cv: float, order: int) -> np.ndarray:
            return _taylor(_with_c(model, cv), g0, order, tol, maxiter)

        spec = NumericSpec("multi_head_error", fields + (("tol", tol), ("maxiter", maxiter)), values=values,
                           taylor=taylor)
        return numeric_function(spec)(g, cc)


def _with_c(model: MultiHeadModel, c: float) -> MultiHeadModel:
    from dataclasses import replace

    return model if float(c) == model.c else replace(model, c=float(c))


def _solver_options(options: dict[str, Any]) -> tuple[float, int]:
    unknown = sorted(set(options) - {"tol", "maxiter"})
    if unknown:
        raise ArgumentTypeError(f"{unknown[0]} is not an option of MultiHeadModel.error; the options are tol, maxiter")
    tol = as_float("tol", options.get("tol", 1e-12), low=0, high=1e-6, low_open=True)
    maxiter = options.get("maxiter", 60)
    if not isinstance(maxiter, (int, np.integer)) or isinstance(maxiter, bool) or not 1 <= maxiter <= 10_000:
        raise ArgumentTypeError(f"maxiter must be an integer in [1, 10000], got {describe(maxiter)}")
    return tol, int(maxiter)


def summed_activation(activations: tuple) -> sp.Expr:
    """``H^(-1/2) sum_h f_h`` as one sympy expression (each ``f_h`` centred)."""
    exprs = [_registry_activation(a) if isinstance(a, str) else a for a in activations]
    return sp.Add(*exprs) / sp.sqrt(len(exprs))


@functools.lru_cache(maxsize=512)
def _pair_moment(f: Any, g: Any) -> float:
    """``E[f(xi) g(xi)]`` of two centred activations, ``xi ~ N(0, 1)``: adaptive quadrature in double precision on
    each half-line (``f = g``: the activation's ``nu``)."""
    if f == g:
        return float(hermite_moments(f).nu)
    from scipy import integrate

    from .activations import numpy_activation

    ff, gg = numpy_activation(f, centered=True), numpy_activation(g, centered=True)

    def integrand(t: float) -> float:
        v = np.array([t])
        return float(ff(v)[0] * gg(v)[0]) * math.exp(-0.5 * t * t) / math.sqrt(2.0 * math.pi)

    parts = [integrate.quad(integrand, lo, hi, epsabs=1e-14, epsrel=1e-12, limit=200)[0]
             for lo, hi in ((-np.inf, 0.0), (0.0, np.inf))]
    return float(sum(parts))


@functools.lru_cache(maxsize=256)
def _kernel_constants(activations: tuple, cross: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(a, Sigma)``; ``cross=False``: the diagonal of ``Sigma`` only (the off-diagonal entries set to 0)."""
    a = np.array([float(hermite_moments(f).a1) for f in activations])
    H = len(activations)
    S = np.zeros((H, H))
    for i in range(H):
        for j in range(i, H):
            if i == j or cross:
                S[i, j] = S[j, i] = _pair_moment(*sorted((activations[i], activations[j]), key=str)) - a[i] * a[j]
    a.setflags(write=False)
    S.setflags(write=False)
    return a, S


# ============================================================================ the pencil
class Pencil:
    """A symmetric linear pencil ``L = L0 + sum_G (coefficients (x) G)``, built as the Hessian of a Lagrangian.

    Blocks (variables) have a *type* whose dimension is ``ratio * n``; ``L0`` has scalar entries (multiples of the
    identity) between blocks of one type; a Gaussian matrix ``G`` of type ``(a, b)`` (i.i.d. entries of variance
    ``var_n / n``, or a symmetric GOE-like ``n x n`` matrix with off-diagonal variance ``var_n / n``) sits at a list
    of positions ``(i, j, coefficient)``, meaning the term ``coefficient * w_i^T G w_j`` of the Lagrangian.
    """

    def __init__(self, ratios: dict[str, float]) -> None:
        self.ratios = dict(ratios)
        self.names: list[str] = []
        self.types: list[str] = []
        self.entries: dict[tuple[int, int], float] = {}
        self.gaussians: dict[str, dict[str, Any]] = {}
        self.regularised: list[int] = []  # blocks of the budget's projections: regularised along the homotopy

    def var(self, name: str, kind: str) -> int:
        self.names.append(name)
        self.types.append(kind)
        return len(self.names) - 1

    def quad(self, i: int, j: int, coef: float) -> None:
        """The term ``coef w_i^T w_j`` (``i != j``) or ``coef |w_i|^2 / 2`` (``i == j``)."""
        self.entries[(i, j)] = self.entries.get((i, j), 0.0) + coef
        if i != j:
            self.entries[(j, i)] = self.entries.get((j, i), 0.0) + coef

    def matrix(self, name: str, rows: str, cols: str, var_n: float, symmetric: bool = False) -> None:
        self.gaussians[name] = dict(shape=(rows, cols), var_n=float(var_n), symmetric=symmetric, pos=[])

    def couple(self, name: str, i: int, j: int, coef: float) -> None:
        """The term ``coef w_i^T G w_j``."""
        g = self.gaussians[name]
        if (self.types[i], self.types[j]) != g["shape"]:
            raise AssertionError(f"{name} of type {g['shape']} between {self.names[i]} and {self.names[j]}")
        g["pos"].append((i, j, float(coef)))

    def define(self, name: str, kind: str, terms: list[tuple[float, int, str | None, bool]]) -> int:
        """A new block ``w = sum coef * (G or G^T or I) w_src`` and its multiplier: ``lam^T (w - sum ...)``."""
        w = self.var(name, kind)
        lam = self.var("lam_" + name, kind)
        self.quad(lam, w, 1.0)
        for coef, src, mat, transposed in terms:
            if mat is None:
                self.quad(lam, src, -coef)
            elif transposed:
                self.couple(mat, src, lam, -coef)
            else:
                self.couple(mat, lam, src, -coef)
        return w

    def compile(self) -> CompiledPencil:
        N = len(self.names)
        L0 = np.zeros((N, N))
        for (i, j), v in self.entries.items():
            L0[i, j] += v
        terms = []
        for g in self.gaussians.values():
            A = np.zeros((N, N))
            for i, j, cf in g["pos"]:
                A[i, j] += cf
                if g["symmetric"] and i != j:
                    A[j, i] += cf
            rows, cols = g["shape"]
            if g["symmetric"]:
                terms.append((g["var_n"] * self.ratios[rows], A))
            else:
                terms.append((g["var_n"] * self.ratios[cols], A))
                terms.append((g["var_n"] * self.ratios[rows], A.T.copy()))
        return CompiledPencil(L0, terms, list(self.regularised), list(self.names))


class CompiledPencil:
    """The pencil as arrays: ``L0`` and the covariance map ``S[M] = sum_t omega_t P_t M P_t^T`` on the entries of
    ``M`` it reads (``active``, pairs ``a <= b``).  Each ``P_t`` is kept as its non-zero rows and columns."""

    def __init__(self, L0: np.ndarray, terms: list[tuple[float, np.ndarray]], regularised: list[int],
                 names: list[str]) -> None:
        self.L0, self.names, self.regularised = L0, names, regularised
        self.N = L0.shape[0]
        active: set[tuple[int, int]] = set()
        parts = []
        for om, P in terms:
            rows = np.flatnonzero(np.any(P != 0, axis=1))
            cols = np.flatnonzero(np.any(P != 0, axis=0))
            parts.append((om, np.ix_(rows, rows), np.ix_(cols, cols), rows, cols, P[np.ix_(rows, cols)]))
            active.update((int(a), int(b)) for a in cols for b in cols if a <= b)
        self.active = sorted(active)
        self.ai = np.array([a for a, _ in self.active], dtype=int)
        self.bi = np.array([b for _, b in self.active], dtype=int)
        index = {ab: k for k, ab in enumerate(self.active)}
        # per term: its active entries (indices into m) and their positions among the term's columns
        self.terms = []
        for om, rr, cc, rows, cols, Psub in parts:
            where = {int(cc): k for k, cc in enumerate(cols)}
            pairs = [(int(a), int(b)) for a in cols for b in cols if a <= b]
            ks = np.array([index[ab] for ab in pairs], dtype=int)
            pa = np.array([where[a] for a, _ in pairs], dtype=int)
            pb = np.array([where[b] for _, b in pairs], dtype=int)
            self.terms.append((om, rr, cc, rows, Psub, ks, pa, pb))

    def S(self, M: np.ndarray) -> np.ndarray:
        out = np.zeros_like(M)
        for om, rr, cc, _, Psub, *_ in self.terms:
            out[rr] += om * (Psub @ M[cc] @ Psub.T)
        return out

    def M_of(self, m: np.ndarray) -> np.ndarray:
        M = np.zeros((self.N, self.N), dtype=m.dtype)
        M[self.ai, self.bi] = m
        M[self.bi, self.ai] = m
        return M

    def jacobian(self, R: np.ndarray, scale: float = 1.0) -> np.ndarray:
        """``d/dm`` of ``[(L0 - S[M])^-1]_active`` at ``R = (L0 - S)^-1``: ``R S[E_ab] R`` for each active ``(a, b)``."""
        n = len(self.active)
        J = np.zeros((n, n), dtype=R.dtype)
        Ra, Rb = R[self.ai], R[self.bi]
        for om, _, _, rows, Psub, ks, pa, pb in self.terms:
            Va = Ra[:, rows] @ Psub  # rows ai of R P, at the term's columns
            Vb = Rb[:, rows] @ Psub
            block = Va[:, pa] * Vb[:, pb] + np.where(pa == pb, 0.0, 1.0)[None, :] * Va[:, pb] * Vb[:, pa]
            J[:, ks] += (scale * om) * block
        return J


def build_pencil(model: MultiHeadModel) -> tuple[Pencil, int]:
    """The Lagrangian pencil of ``model`` (module docstring, step 2) and the index of the token block ``x``.

    Blocks: ``x`` (``n``: the quadratic form ``-(gamma |x|^2 + |Phi x|^2 / n) / 2``), ``u = Y x``; per head ``k_h =
    K_h x`` (shared: ``a_h (Y^T u - x) + s-noise x``; random: ``r_h = R_h^T u``, ``q_h = Q_h r_h``, ``t_h = Y^T q_h``,
    ``k_h = a_h t_h / sqrt(key_ratio) + s_h N_h x``); readout ``v = Y H^(-1/2) sum k_h`` or ``v_h = Y k_h``, with the
    term ``-c |v|^2 / 2`` (a budget: ``-c |v_h - w_h|^2 / 2 + xi_h^T (w_h - G_h^T z_h)``, stationary at
    ``-c v_h^T (I - Pi_h) v_h / 2``).  Each defined block comes with its multiplier (:meth:`Pencil.define`).
    """
    c, H = model.c, model.H
    a, Sig = model.kernel_constants()
    v = model.value_ratio
    ratios = {"n": 1.0, "p": c}
    if model.heads == "random":
        ratios["d"] = model.d_ratio * c
    if v is not None and v < 1.0:
        ratios["m"] = (1.0 - v) * c
    pen = Pencil(ratios)
    x = pen.var("x", "n")
    pen.matrix("Y", "p", "n", 1.0 / c)
    u = pen.define("u", "p", [(1.0, x, "Y", False)])
    ks = []
    if model.heads == "shared":
        w, V = np.linalg.eigh(np.asarray(Sig))
        keep = w > 1e-13 * max(float(w.max()), 1e-300)
        load = V[:, keep] * np.sqrt(w[keep])  # Sigma = load load^T: one GOE per column
        for k in range(load.shape[1]):
            pen.matrix(f"W{k}", "n", "n", 1.0 / c, symmetric=True)
        for h in range(H):
            k_h = pen.var(f"k{h}", "n")
            th = pen.var(f"lam_k{h}", "n")
            pen.quad(th, k_h, 1.0)
            pen.couple("Y", u, th, -a[h])  # -a_h th^T Y^T u
            pen.quad(th, x, a[h])  # + a_h th^T x (the diagonal removed)
            for k in range(load.shape[1]):
                if load[h, k] != 0.0:
                    pen.couple(f"W{k}", th, x, -load[h, k])
            ks.append(k_h)
    else:
        kr = model.d_ratio
        for h in range(H):
            pen.matrix(f"Q{h}", "p", "d", 1.0 / c)
            pen.matrix(f"R{h}", "p", "d", 1.0 / c)
            pen.matrix(f"N{h}", "n", "n", 1.0 / c)
            r = pen.define(f"r{h}", "d", [(1.0, u, f"R{h}", True)])
            q = pen.define(f"q{h}", "p", [(1.0, r, f"Q{h}", False)])
            t = pen.define(f"t{h}", "n", [(1.0, q, "Y", True)])
            ks.append(pen.define(f"k{h}", "n", [(a[h] / math.sqrt(kr), t, None, False),
                                                (math.sqrt(max(Sig[h, h], 0.0)), x, f"N{h}", False)]))
    if model.readout == "sum":
        k = pen.define("ksum", "n", [(1.0 / math.sqrt(H), k_h, None, False) for k_h in ks])
        out = pen.define("v", "p", [(1.0, k, "Y", False)])
        pen.quad(out, out, -c)
    else:
        for h, k_h in enumerate(ks):
            out = pen.define(f"v{h}", "p", [(1.0, k_h, "Y", False)])
            pen.quad(out, out, -c)
            if v is not None and v < 1.0:
                pen.matrix(f"G{h}", "m", "p", 1.0 / c)
                w_h = pen.var(f"w{h}", "p")
                xi = pen.var(f"xi{h}", "p")
                z = pen.var(f"z{h}", "m")
                pen.quad(out, w_h, c)
                pen.quad(w_h, w_h, -c)
                pen.quad(xi, w_h, 1.0)
                pen.couple(f"G{h}", z, xi, -1.0)
                pen.regularised.append(z)
    return pen, x


# ============================================================================ the Dyson equation
@dataclass(frozen=True)
class MultiHeadSolution:
    """Result of :meth:`MultiHeadModel.solve` (arrays indexed like ``gamma``).

    Attributes
    ----------
    gamma, error : ridge parameters and ``E(gamma)``.
    yQy : ``y^T Q y / n``.
    null_error : ``E`` without the signal (``snr = 0``) at the same ``gamma``.
    residual : ``max |m - Psi(m)|`` of the Dyson equation at the solution.
    blocks, unknowns : size of the pencil (blocks) and of the Newton system (entries of ``M`` that ``S`` reads).
    """

    gamma: np.ndarray
    error: np.ndarray
    yQy: np.ndarray
    null_error: np.ndarray
    residual: np.ndarray
    blocks: int
    unknowns: int


def _newton(cp: CompiledPencil, L0: np.ndarray, m: np.ndarray, scale: float, tol: float,
            maxiter: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """Newton's method on ``m = [(L0 - scale S[M(m)])^-1]_active``; ``None`` when it does not converge."""
    eye = np.eye(len(m))
    for _ in range(maxiter):
        try:
            R = np.linalg.inv(L0 - scale * cp.S(cp.M_of(m)))
            J = cp.jacobian(R, scale)
            step = np.linalg.solve(eye - J, m - R[cp.ai, cp.bi])
        except np.linalg.LinAlgError:
            return None
        if not np.all(np.isfinite(step)):
            return None
        m = m - step
        size = float(np.max(np.abs(step))) if step.size else 0.0
        if size <= tol * max(1.0, float(np.max(np.abs(m)))):
            R = np.linalg.inv(L0 - scale * cp.S(cp.M_of(m)))
            res = float(np.max(np.abs(m - R[cp.ai, cp.bi]))) if m.size else 0.0
            return m, R, cp.jacobian(R, scale), res
    return None


def _continue(step_fn: Any, m: np.ndarray, what: str) -> tuple[np.ndarray, tuple]:
    """Follow a path ``s in [0, 1]`` from the solution ``m`` at ``s = 0``: ``step_fn(s, guess) -> result or None``
    (``None``: no convergence, or an unphysical solution).  The guess is the secant predictor through the last two
    solutions; a step halves on failure and doubles (up to the whole path) on success."""
    s, ds, out = 0.0, 1.0, None
    prev: tuple[float, np.ndarray] | None = None
    while s < 1.0:
        target = min(1.0, s + ds)
        guess = m if prev is None else m + (m - prev[1]) * ((target - s) / (s - prev[0]))
        res = step_fn(target, guess)
        if res is None:
            ds /= 2
            if ds < 1e-7:
                raise MultiHeadConvergenceError(f"the multi-head Dyson equation did not converge ({what}, stuck at "
                                                f"{s:.6g} of the path)")
            continue
        prev = (s, m)
        s, m, out = target, res[0], res
        ds = min(1.0, 2 * ds)
    return m, out


#: Newton steps above which a continuation step is refused (from a good guess Newton takes 3 to 6)
_MAX_CONTINUATION_STEPS = 12


class _Solver:
    """The Dyson equation of one model's pencil on a ``gamma`` grid (homotopy, continuation, derivatives)."""

    def __init__(self, pen: Pencil, x: int, c: float, snr: float, tol: float, maxiter: int) -> None:
        self.x = x
        self.cp = pen.compile()
        self.tol, self.maxiter = tol, maxiter
        # the signal: Y -> Y + s0 e yhat^T at every position of Y (p-type rows P, n-type columns Nn)
        pos = pen.gaussians["Y"]["pos"]
        self.P = sorted({i for i, _, _ in pos})
        self.Nn = sorted({j for _, j, _ in pos})
        B = np.zeros((len(self.P), len(self.Nn)))
        for i, j, cf in pos:
            B[self.P.index(i), self.Nn.index(j)] += cf
        s0 = math.sqrt(snr / c)
        zP, zN = np.zeros((len(self.P),) * 2), np.zeros((len(self.Nn),) * 2)
        self.C = s0 * np.block([[zP, B], [B.T, zN]])

    def L0(self, gamma: complex, eps: float = 0.0) -> np.ndarray:
        L = self.cp.L0.astype(complex if isinstance(gamma, complex) else float)
        L[self.x, self.x] = -gamma
        for z in self.cp.regularised:
            L[z, z] = -eps
        return L

    def _step(self, gamma: float, m: np.ndarray, scale: float = 1.0, eps: float = 0.0,
              maxiter: int | None = None) -> Any:
        """Newton at one point of a path, refused (``None``) unless ``-1/gamma <= (L^-1)_xx = -tau(Q) < 0``."""
        res = _newton(self.cp, self.L0(gamma, eps), m, scale, self.tol,
                      _MAX_CONTINUATION_STEPS if maxiter is None else maxiter)
        if res is None:
            return None
        rxx = float(res[1][self.x, self.x])
        return res if -(1.0 + 1e-8) / gamma <= rxx < 0.0 else None

    def start(self, gamma0: float) -> np.ndarray:
        """The solution at ``gamma0``: from the noiseless pencil (``M = L0^-1``; the budget's blocks regularised by
        ``eps = 1``), the noise and the regularisation switched on together along ``s in [0, 1]``."""
        cp = self.cp
        reg = 1.0 if cp.regularised else 0.0
        m0 = np.linalg.inv(self.L0(gamma0, reg))[cp.ai, cp.bi]
        m, _ = _continue(lambda s, m: self._step(gamma0, m, s * s, reg * (1.0 - s)), m0,
                         f"homotopy at gamma={gamma0:g}")
        return m

    def at(self, gamma: float, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        res = self._step(gamma, m, maxiter=self.maxiter)
        if res is None:
            raise MultiHeadConvergenceError(f"the multi-head Dyson equation did not converge at gamma={gamma:g}")
        return res

    def descend(self, g_from: float, g_to: float, m: np.ndarray) -> np.ndarray:
        """Continuation in ``log gamma`` from ``g_from`` to ``g_to`` (steps of at most a factor 4)."""
        if g_to == g_from:
            return m
        l0, l1 = math.log(g_from), math.log(g_to)
        n_min = max(1, math.ceil(abs(l1 - l0) / math.log(4.0)))
        for k in range(n_min):
            a, b = l0 + (l1 - l0) * k / n_min, l0 + (l1 - l0) * (k + 1) / n_min
            m, _ = _continue(lambda s, mm, a=a, b=b: self._step(math.exp(a + s * (b - a)), mm), m,
                             f"continuation to gamma={math.exp(b):g}")
        return m

    def quantities(self, gamma: complex, m: np.ndarray, R: np.ndarray, J: np.ndarray) -> tuple:
        """``(f, df/dgamma, d(R_xx)/dgamma)`` with ``f = yhat^T (L + Delta L)^-1_xx yhat`` (Woodbury, step 4)."""
        cp, x, P, Nn = self.cp, self.x, self.P, self.Nn
        dpsi = R[cp.ai, x] * R[x, cp.bi]
        dm = np.linalg.solve(np.eye(len(m)) - J, dpsi)
        Exx = np.zeros_like(R)
        Exx[x, x] = 1.0
        dR = R @ (Exx + cp.S(cp.M_of(dm))) @ R
        k = len(P) + len(Nn)
        w = np.concatenate([np.zeros(len(P), dtype=R.dtype), R[x, Nn]])
        dw = np.concatenate([np.zeros(len(P), dtype=R.dtype), dR[x, Nn]])
        Om = np.zeros((k, k), dtype=R.dtype)
        dOm = np.zeros((k, k), dtype=R.dtype)
        Om[: len(P), : len(P)] = R[np.ix_(P, P)]
        Om[len(P):, len(P):] = R[np.ix_(Nn, Nn)]
        dOm[: len(P), : len(P)] = dR[np.ix_(P, P)]
        dOm[len(P):, len(P):] = dR[np.ix_(Nn, Nn)]
        CS = self.C @ np.linalg.inv(np.eye(k) + Om @ self.C)
        f = R[x, x] - w @ CS @ w
        df = dR[x, x] - 2 * dw @ CS @ w + w @ CS @ dOm @ CS @ w
        return f, df, dR[x, x]


def _gamma_path(gam: np.ndarray) -> tuple[float, list[float]]:
    g0 = max(1.0, float(np.max(gam)))
    return g0, sorted(set(float(g) for g in gam), reverse=True)


@functools.lru_cache(maxsize=128)
def _solve_cached(model: MultiHeadModel, gam: tuple[float, ...], tol: float, maxiter: int) -> MultiHeadSolution:
    pen, x = build_pencil(model)
    return _solve_pencil(pen, x, model.c, model.snr, np.array(gam), tol, maxiter)


def _solve_pencil(pen: Pencil, x: int, c: float, snr: float, gam_arr: np.ndarray, tol: float,
                  maxiter: int) -> MultiHeadSolution:
    """The Dyson equation of a pencil (``x``: the token block; the signal at every position of ``Y``) on a grid."""
    gam = tuple(float(g) for g in gam_arr)
    solver = _Solver(pen, x, c, snr, tol, maxiter)
    g0, order = _gamma_path(gam_arr)
    m = solver.start(g0)
    g_prev, vals = g0, {}
    for g in order:
        m = solver.descend(g_prev, g, m)
        m, R, J, res = solver.at(g, m)
        f, df, dRxx = solver.quantities(g, m, R, J)
        vals[g] = (g * g * df, -f, g * g * dRxx, res)
        g_prev = g
    E, yqy, E0, res = (np.array([vals[g][i] for g in gam]) for i in range(4))
    if not np.all(np.isfinite(E)):
        raise MultiHeadConvergenceError(f"non-finite error at gamma={gam_arr[~np.isfinite(E)]}")
    for arr in (E, yqy, E0, res):
        arr.setflags(write=False)
    return MultiHeadSolution(gamma=np.array(gam), error=E, yQy=yqy, null_error=E0, residual=res, blocks=solver.cp.N,
                             unknowns=len(solver.cp.active))


def shared_budget_limit(c: Any, activation: Any, snr: Any, gamma: Any, *, tol: float = 1e-12,
                        maxiter: int = 60) -> Any:
    """``H -> infinity`` of ``H`` identical shared heads concatenated with the value budget ``v = 1/H``.

    The features are ``[P_1 X K; ...; P_H X K]`` with one kernel ``K``, so ``Phi^T Phi = K X^T (sum_h Pi_h) X K``; the
    ``H`` independent Haar projections of rank ``p / H`` are asymptotically free and their sum tends to the free
    Poisson law of rate 1, the law of ``V V^T`` for a ``p x p`` Gaussian ``V`` with ``N(0, 1/p)`` entries.  The limit
    is one head with the Gaussian value map: features ``V X K`` (the pencil of :func:`build_pencil` with ``v = V Y k``).

    Parameters
    ----------
    c : float in ``[1e-4, 1e4]``; activation : a registry name or sympy expression; snr : float in ``[0, 1e8]``;
    gamma : float or 1-d array in ``[1e-30, 1e30]``.

    Returns
    -------
    float or numpy.ndarray
    """
    model = MultiHeadModel(c, (check_activation(activation, "activation"),), snr, readout="concat")
    _solver_options({"tol": tol, "maxiter": maxiter})
    gam = np.atleast_1d(as_array("gamma", gamma, ndim=(0, 1), low=GAMMA_RANGE[0], high=GAMMA_RANGE[1]))
    check_grid("gamma", gam.size)
    a, Sig = model.kernel_constants()
    cc = model.c
    pen = Pencil({"n": 1.0, "p": cc})
    x = pen.var("x", "n")
    pen.matrix("Y", "p", "n", 1.0 / cc)
    pen.matrix("W0", "n", "n", 1.0 / cc, symmetric=True)
    pen.matrix("V", "p", "p", 1.0 / cc)
    u = pen.define("u", "p", [(1.0, x, "Y", False)])
    k = pen.var("k0", "n")
    th = pen.var("lam_k0", "n")
    pen.quad(th, k, 1.0)
    pen.couple("Y", u, th, -a[0])
    pen.quad(th, x, a[0])
    pen.couple("W0", th, x, -math.sqrt(max(Sig[0, 0], 0.0)))
    t = pen.define("t", "p", [(1.0, k, "Y", False)])
    out = pen.define("v", "p", [(1.0, t, "V", False)])
    pen.quad(out, out, -cc)
    sol = _solve_pencil(pen, x, cc, model.snr, gam, tol, maxiter)
    return float(sol.error[0]) if np.ndim(gamma) == 0 else sol.error


def _taylor(model: MultiHeadModel, gamma0: float, order: int, tol: float, maxiter: int) -> np.ndarray:
    """``[E(gamma0), E'(gamma0)]`` up to ``order <= 1`` (the derivative by a complex step through the solver)."""
    if order > 1:
        raise NotImplementedError("MultiHeadModel.error gives E and its first derivative in gamma; higher "
                                  "derivatives are not implemented")
    sol = _solve_cached(model, (float(gamma0),), tol, maxiter)
    out = [float(sol.error[0])]
    if order == 1:
        pen, x = build_pencil(model)
        solver = _Solver(pen, x, model.c, model.snr, tol, maxiter)
        g0, _ = _gamma_path(np.array([gamma0]))
        m = solver.descend(g0, gamma0, solver.start(g0))
        h = 1e-20 * gamma0
        gc = complex(gamma0, h)
        res = _newton(solver.cp, solver.L0(gc), m.astype(complex), 1.0, tol, maxiter)
        if res is None:
            raise MultiHeadConvergenceError(f"the complex step did not converge at gamma={gamma0:g}")
        mc, R, J, _ = res
        _, df, _ = solver.quantities(gc, mc, R, J)
        out.append(float((gc * gc * df).imag / h))
    return np.array(out)
