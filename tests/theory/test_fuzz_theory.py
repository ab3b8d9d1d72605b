"""Fuzz suite of ``theory``'s public callables: every bad input is refused clearly, no string is run as code.

Protocol and outcomes: :mod:`fuzz_support` (``tests/fuzz_support.py``).  One valid call per public callable
(``theory.__all__`` and each module's ``__all__``) and per solver method of ``AttentionModel`` (the model built and
the method called from one set of keywords), *one* argument made bad at a time, each call classified as
``refused`` (``ValueError`` / ``TypeError`` naming the argument within 2 s), ``silent`` (NaN or inf returned),
``accepted``, ``unnamed``, ``memory``, ``other`` or ``hang``.

The bad values come from a table (NaN, +-inf, complex, bool, None, strings including a malicious one that
would create a marker file if it were evaluated, huge integers, negative and oversized sizes, wrong shapes and
dtypes, out-of-range values; the generic part is :func:`fuzz_support.generic_bad_values`, the kinds of theory's
arguments are below) and from hypothesis (random values outside each argument's domain).  The tests
assert 100 % ``refused`` and that the marker file never appears; ``pytest -s`` prints the counts.

Callables without arguments (``derive_ridge_error``, ``null_system_equations``, ...) are only called validly;
exception classes (``StructuredConvergenceError``, ``ArgumentTypeError``) take any message and are not fuzzed.
``python tests/theory/test_fuzz_theory.py`` prints the counts without asserting (for a before/after comparison).
"""

from __future__ import annotations

import math

import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest
import sympy as sp

import theory
from fuzz_support import (EVIL, GENERIC_KINDS, INF, JUNK, MARKER, NAN, TIME_LIMIT_S, Arg, bad_strategy,  # noqa: F401
                          choice, classify, generic_bad_values, integer, nonfinite, nonneg, pos, real, report_line,
                          restore_limits, st)

X, Y = sp.Symbol("x", real=True), sp.Symbol("y")


# ---------------------------------------------------------------------------------------------- argument kinds
def bad_values(a: Arg) -> list[tuple[str, Any]]:
    """The table of bad values for an argument of domain ``a``: :func:`fuzz_support.generic_bad_values` for
    numbers, choices and flags, theory's own kinds below."""
    if a.kind in GENERIC_KINDS:
        return generic_bad_values(a)
    if a.kind == "activation":
        out = [(k, v) for k, v in JUNK if k != "dict"] + [
            ("unknown name", "swishy"), ("nan", NAN), ("inf", INF), ("complex", 1j), ("sp.nan", sp.nan),
            ("sp.zoo", sp.zoo), ("two symbols", X + Y), ("relational", sp.Eq(X, 1)), ("complex expr", sp.I * X),
            ("list", [1.0]), ("array", np.array([1.0]))]
    elif a.kind == "diagonal":
        out = [(k, v) for k, v in JUNK if k != "str"] + [
            ("unknown", "sometimes"), ("nan", NAN), ("inf", INF), ("complex", 1j), ("list", [0.0]), ("huge", 10**400)]
    elif a.kind == "spike":
        out = JUNK + [("number", 1.0), ("nan strength", (NAN, "aligned")), ("inf strength", (INF, "aligned")),
                      ("negative", (-1.0, "aligned")), ("unknown kind", (1.0, "diagonal")), ("evil kind", (1.0, EVIL)),
                      ("bool strength", (True, "aligned")), ("complex strength", (1j, "aligned")),
                      ("str strength", ("abc", "aligned")), ("triple", (1.0, "aligned", 3)), ("huge", (1e300, "aligned"))]
    elif a.kind == "vector":
        out = [(k, v) for k, v in JUNK if k != "None"] + [
            ("nan", np.array([NAN])), ("inf", np.array([1.0, INF])), ("complex", np.array([1j])), ("empty", np.array([])),
            ("2-d", np.ones((2, 2))), ("bools", [True]), ("array str", np.array(["a"])), ("huge", np.array([1e300]))]
    elif a.kind == "constants":
        out = [(k, v) for k, v in JUNK if k != "str"] + [
            ("nan a1", {"a1": NAN, "sf2": 0.03}), ("inf sf2", {"a1": 0.6, "sf2": INF}),
            ("negative sf2", {"a1": 0.6, "sf2": -1.0}), ("str a1", {"a1": "0.6", "sf2": 0.03}),
            ("evil a1", {"a1": EVIL, "sf2": 0.03}), ("bool a1", {"a1": True, "sf2": 0.03}),
            ("missing sf2", {"a1": 0.6}), ("unknown key", {"a1": 0.6, "sf2": 0.03, "nu": 1.0}),
            ("inf d0", {"a1": 0.6, "sf2": 0.03, "d0": INF}), ("complex a1", {"a1": 1j, "sf2": 0.03}),
            ("unknown name", "swishy")]
    else:  # pragma: no cover
        raise AssertionError(a.kind)
    if a.none_ok:
        out = [(k, v) for k, v in out if v is not None]
    return out + list(a.extra)


# ---------------------------------------------------------------------------------------------- the table
@dataclass
class Case:
    """One valid call (``func(**kwargs)``) and the domains of the arguments to fuzz."""

    label: str
    func: Callable[..., Any]
    kwargs: dict[str, Any]
    args: dict[str, Arg]
    bad_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> extra kwargs with the bad one


def _fn(path: str) -> Callable[..., Any] | None:
    obj: Any = theory
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


TANH = dict(a1=0.6057, sf2=0.0274)
SOLVER_ARGS = dict(tol=real(0, 1e-3, low_open=True), max_iter=integer(1, 10_000),
                   method=choice("exact", "quadrature"), system=choice("symmetric", "spec", "corrected"),
                   n_nodes=integer(16, 10_000))


# Shared argument domains of the table
SYM_POS, SYM_NONNEG, ACT = pos(symbolic=True), nonneg(symbolic=True), Arg("activation")
# the solvers' domain (theory.null_system): gamma in [1e-30, 1e30], c in [1e-4, 1e4], snr in [0, 1e8]
GAMMA_GRID = real(1e-30, 1e30, array=True, ndim=1)
GAMMA_GRID_SYM = real(1e-30, 1e30, array=True, ndim=1, symbolic=True)  # a symbol: the sympy function (theory.symbolic)
C_SOLVER, SNR_SOLVER = real(1e-4, 1e4), real(0, 1e8)


def _adder(cases: list[Case]) -> Callable[..., None]:
    """``add(label, kwargs, args, path=None, func=None, **kw)``: append a :class:`Case` if ``theory`` has the
    callable (``func``, or the one at ``path``, or at ``label``)."""

    def add(label, kwargs, args, path=None, func=None, **kw):
        f = func or _fn(path or label)
        if f is not None:
            cases.append(Case(label, f, kwargs, args, **kw))

    return add


MODEL_FIELDS = ("c", "activation", "snr", "spike", "diagonal")


def _on_model(method: str, lead: tuple[str, ...] = ("gamma",)) -> Callable[..., Any]:
    """``AttentionModel(**fields).method(*lead, **options)`` from one set of keywords (the spike also as its vectors
    ``w_k, w_q``): each keyword is fuzzed where it is checked, by the model or by the method."""

    def call(**kwargs: Any) -> Any:
        fields = {k: kwargs.pop(k) for k in MODEL_FIELDS if k in kwargs}
        if "w_k" in kwargs or "w_q" in kwargs:
            fields["spike"] = theory.Spike(kwargs.pop("w_k", None), kwargs.pop("w_q", None))
        args = [kwargs.pop(k) for k in lead]
        return getattr(theory.AttentionModel(**fields), method)(*args, **kwargs)

    return call


STRONG_FIELDS = ("c", "activation", "snr", "t")


def _on_strong(method: str, lead: tuple[str, ...] = ("gamma",)) -> Callable[..., Any]:
    """``StrongAlignment(**fields).method(*lead, **options)`` from one set of keywords (a property when ``method``
    starts with ``.``)."""

    def call(**kwargs: Any) -> Any:
        setting = theory.StrongAlignment(**{k: kwargs.pop(k) for k in STRONG_FIELDS})
        if method.startswith("."):
            return getattr(setting, method[1:])
        return getattr(setting, method)(*[kwargs.pop(k) for k in lead], **kwargs)

    return call


def _cases() -> list[Case]:
    """The table: one valid call per public callable of theory (several for the paths of AttentionModel.error)."""
    cases: list[Case] = []
    add = _adder(cases)
    for part in (_limits_and_activations, _mp_kernel_and_ridge, _attention_and_null, _structured, _minimax, _settings):
        part(add)
    return cases


def _limits_and_activations(add: Callable[..., None]) -> None:
    """Limits, set_limits and theory.activations."""
    # ---- limits
    add("Limits", {}, {n: integer(1, 2**62) for n in ("max_grid_size", "max_hermite_order", "memory_budget_bytes")})
    add("set_limits", {"max_grid_size": 10_000}, {"max_grid_size": integer(1, 2**62),
                                                  "max_hermite_order": integer(1, 2**62)})
    # ---- activations
    add("activation", dict(name="tanh", centered=True), dict(name=Arg("activation"), centered=Arg("flag")))
    add("hermite_coefficients", dict(f="tanh", order=3, centered=False),
        dict(f=ACT, order=integer(0, 20), centered=Arg("flag")))
    add("hermite_moments", dict(f="tanh"), dict(f=ACT))
    add("check_activation", dict(f="tanh", argname="f"), dict(f=ACT))
    add("numpy_activation", dict(f="tanh", centered=True), dict(f=ACT, centered=Arg("flag")))
    add("activation_asymptotic_slope", dict(f="relu"), dict(f=ACT))
    add("HermiteMoments", dict(a0=0.0, a1=0.6, a2=0.0, nu=0.4, sf2=0.04),
        dict(a0=real(), a1=real(), a2=real(), nu=nonneg(), sf2=nonneg()))
    add("ActivationSpec", dict(name="abs", expr=sp.Abs(sp.Symbol("x", real=True)), method="numeric", numpy=np.abs),
        dict(method=choice(*theory.activations.METHODS)))


def _mp_kernel_and_ridge(add: Callable[..., None]) -> None:
    """theory.marchenko_pastur, theory.kernel_spectrum, theory.ridge."""
    # ---- Marchenko-Pastur
    add("mp_stieltjes", dict(z=-1.0, c=0.5),
        dict(z=Arg("complex", array=True, symbolic=True, extra=(("pole", 0.0),)), c=pos(symbolic=True)))
    add("mp_stieltjes_expr", dict(z=-1, c=0.5), dict(z=Arg("complex", symbolic=True), c=SYM_POS))
    add("mp_delta", dict(gamma=0.1, c=0.5), dict(gamma=real(0, array=True, extra=(("zero for c<1", 0.0),)), c=pos()))
    add("mp_delta_expr", dict(gamma=0.1, c=0.5), dict(gamma=SYM_POS, c=SYM_POS))
    add("mp_equation", dict(m=0.5, z=-1.0, c=0.5),
        dict(m=Arg("complex", array=True, symbolic=True, extra=(("pole", -1.0),)),
             z=Arg("complex", array=True, symbolic=True), c=pos(symbolic=True, array=True)))
    add("mp_density", dict(x=1.0, c=0.5), dict(x=real(array=True, symbolic=True), c=pos(symbolic=True)))
    add("mp_atom", dict(c=0.5), dict(c=SYM_POS))
    add("mp_support", dict(c=0.5), dict(c=SYM_POS))
    add("mp_moment", dict(k=3, c=0.5), dict(k=integer(0, 1000), c=SYM_POS))
    # ---- kernel spectrum
    kern = dict(c=pos(), a1=real(), nu=pos(extra=(("nu < a1^2", 0.1),)))
    add("kernel_stieltjes", dict(z=0.3 + 0.5j, c=0.5, a1=0.6, nu=0.4, eta=0.0),
        dict(z=Arg("complex", array=True, extra=(("Im z < 0", 0.3 - 0.5j),)), eta=nonneg(), **kern))
    add("kernel_density", dict(x=0.3, c=0.5, a1=0.6, nu=0.4, eta=1e-9), dict(x=real(array=True), eta=nonneg(), **kern))
    # ---- ridge
    add("ridge_error", dict(gamma=1e-3, c=0.25, snr=1.0), dict(gamma=SYM_NONNEG, c=SYM_POS, snr=SYM_NONNEG))
    add("ridge_error_values", dict(gammas=[1e-3, 1e-2], c=0.25, snr=1.0),
        dict(gammas=real(0, array=True), c=pos(), snr=nonneg()))
    add("ridge_error_limit", dict(c=0.25, snr=1.0), dict(c=SYM_POS, snr=SYM_NONNEG))
    add("label_mmse", dict(snr=1.0), dict(snr=nonneg()))
    for name in ("bayes_feature_limit", "strong_alignment_margin"):
        add(name, dict(c=0.5, snr=1.0), dict(c=pos(), snr=nonneg()))
    add("strong_alignment_leverage", dict(t=0.5, c=0.5, activation="erf", snr=1.0, nodes=8),
        dict(t=nonneg(), c=real(0, 1, low_open=True, high_open=True), activation=ACT, snr=nonneg(),
             nodes=Arg("int", 8, 200)))
    add("strong_alignment_gap", dict(t=0.5, c=0.5, activation="erf", snr=1.0, nodes=8),
        dict(t=pos(), c=real(0, 1, low_open=True, high_open=True), activation=ACT, snr=nonneg()))
    add("captures_bayes_predictor", dict(activation="tanh"), dict(activation=ACT))
    add("strong_spike_attention_error", dict(gamma=0.1, c=0.5, activation="erf", snr=1.0, t=0.5, nodes=8),
        dict(gamma=real(0, array=True), c=pos(), activation=ACT, snr=nonneg(), t=pos(), nodes=Arg("int", 8, 200)))
    add("strong_spike_prediction_risk", dict(gamma=0.1, c=0.5, activation="erf", snr=1.0, t=0.5, nodes=8),
        dict(gamma=real(0, array=True), c=pos(), activation=ACT, snr=nonneg(), t=pos(), nodes=Arg("int", 8, 200)))
    add("ridge_prediction_risk", dict(gamma=0.1, c=0.5, snr=1.0), dict(gamma=real(0, array=True), c=pos(),
                                                                     snr=nonneg()))
    add("label_coordinate_bins", dict(snr=1.0, n_bins=3), dict(snr=nonneg(), n_bins=Arg("int", 1, 50)))
    add("binned_leverage", dict(t=0.5, c=0.5, activation="erf", snr=1.0, edges=[0.0, 1.0, math.inf], per_bin=4),
        dict(t=pos(), c=real(0, 1, low_open=True, high_open=True), activation=ACT, snr=nonneg(),
             per_bin=Arg("int", 4, 40)))
    add("ridge_error_small_gamma_coefficient", dict(c=2.0, snr=1.0), dict(c=real(1, low_open=True, symbolic=True),
                                                                          snr=SYM_NONNEG))
    # ---- laws
    add("MarchenkoPastur", dict(c=0.5, matrix="n"), dict(c=pos(), matrix=choice("n", "p")))
    add("KernelSpectralLaw", dict(c=2.0, activation="tanh"), dict(c=pos(), activation=ACT))
    add("KernelSpectralLaw[constants]", dict(c=2.0, a1=0.6, nu=0.4), dict(a1=real(), nu=pos(extra=(("nu < a1^2", 0.1),))),
        path="KernelSpectralLaw")


def _attention_and_null(add: Callable[..., None]) -> None:
    """AttentionModel.error (null and structured paths), error_taylor, small_gamma_law and theory.null_system."""
    # ---- null system and attention
    att = dict(gamma=1e-2, c=2.0, activation="tanh", snr=0.0, diagonal="removed", tol=1e-12, max_iter=100,
               method="exact", system="symmetric", n_nodes=160)
    error = _on_model("error")
    add("AttentionModel.error", att, dict(gamma=real(1e-30, 1e30, array=True, symbolic=True),
                                          c=real(1e-4, 1e4, symbolic=True), activation=ACT, snr=SNR_SOLVER,
                                          diagonal=Arg("diagonal"),
                                          check_quadrature=Arg("flag"), **SOLVER_ARGS),
        func=error, bad_overrides={"check_quadrature": {}})
    add("AttentionModel.error[maxiter]", dict(gamma=1e-2, c=2.0, activation="tanh", maxiter=100),
        dict(maxiter=integer(1, 10_000)), func=error)
    add("AttentionModel.error[structured]", dict(gamma=0.1, c=2.0, activation="tanh", snr=1.0,
                                                 spike=(4.0, "aligned"), tol=1e-12, maxiter=100, n_nodes=64),
        dict(gamma=GAMMA_GRID_SYM, snr=SNR_SOLVER, spike=Arg("spike", none_ok=True), tol=SOLVER_ARGS["tol"],
             maxiter=integer(1, 10_000),
             n_nodes=integer(16, 10_000)), func=error)
    add("AttentionModel.error_taylor", dict(gamma=0.1, c=2.0, activation="tanh", order=2),
        dict(gamma=real(1e-30, 1e30), c=C_SOLVER, activation=ACT, snr=SNR_SOLVER, diagonal=Arg("diagonal"),
             order=integer(0, 19), rtol=real(1e-14, 1e-3)), func=_on_model("error_taylor"))
    add("AttentionModel.error[w_k]", dict(gamma=0.1, c=2.0, activation="tanh", snr=1.0, w_k=[1.0, 0.5],
                                          w_q=[1.0, 0.0]),
        dict(w_k=Arg("vector"), w_q=Arg("vector")), func=error)
    add("AttentionModel.small_gamma_law", dict(c=2.0, activation="tanh", diagonal="removed", gammas=(1e-13, 1e-11)),
        dict(c=C_SOLVER, activation=ACT, diagonal=Arg("diagonal"), tol=SOLVER_ARGS["tol"],
             gammas=Arg("real", 0, low_open=True, array=True, ndim=1,
                        extra=(("decreasing", (1e-11, 1e-13)), ("three", (1e-13, 1e-12, 1e-11))))),
        func=_on_model("small_gamma_law", lead=()))
    null = dict(z=-0.01, c=2.0, d0=0.0, **TANH)
    null_args = dict(z=real(-1e30, -1e-30, array=True), c=C_SOLVER, a1=real(-1e6, 1e6), sf2=real(0, 1e12),
                     d0=real(-1e6, 1e6),
                     **SOLVER_ARGS)
    for name in ("solve_null_system", "solve_null_system_full"):
        add(name, null, null_args)
    add("kept_diagonal", dict(activation="relu", p=100), dict(activation=ACT, p=integer(1, 10**12)))
    add("null_system_taylor", dict(gamma=0.1, c=2.0, d0=0.0, order=2, **TANH),
        dict(gamma=real(1e-30, 1e30), c=C_SOLVER, a1=real(-1e6, 1e6), sf2=real(0, 1e12), d0=real(-1e6, 1e6),
             order=integer(0, 20), rtol=real(1e-14, 1e-3)))


def _structured(add: Callable[..., None]) -> None:
    """theory.structured: AttentionModel.error, error_taylor and solve with signal, linearisation_control."""
    # ---- structured
    st_kw = dict(gamma=0.1, c=2.0, activation="tanh", snr=1.0, diagonal="removed", tol=1e-12, maxiter=100,
                 n_nodes=64, method="exact", system="symmetric")
    st_args = dict(gamma=GAMMA_GRID, c=C_SOLVER, activation=ACT, snr=SNR_SOLVER, diagonal=Arg("diagonal"),
                   tol=SOLVER_ARGS["tol"], maxiter=integer(1, 10_000), n_nodes=integer(16, 10_000),
                   method=SOLVER_ARGS["method"], system=SOLVER_ARGS["system"])
    error = _on_model("error")
    add("AttentionModel.error[signal]", st_kw, dict(st_args, gamma=GAMMA_GRID_SYM, c=real(1e-4, 1e4, symbolic=True)),
        func=error)
    add("AttentionModel.error_taylor[signal]", dict(gamma=0.1, c=2.0, activation="tanh", snr=1.0, order=1),
        dict(gamma=real(1e-30, 1e30), c=C_SOLVER, activation=ACT, snr=SNR_SOLVER, order=integer(0, 19),
             rtol=real(1e-14, 1e-3), spike=Arg("spike", none_ok=True)), func=_on_model("error_taylor"))
    add("AttentionModel.solve", dict(st_kw, check_quadrature=True),
        dict(st_args, check_quadrature=Arg("flag"), max_iter=integer(1, 10_000, none_ok=True)),
        func=_on_model("solve"))
    add("AttentionModel.error[constants]", dict(gamma=0.1, c=2.0, activation=dict(TANH), snr=1.0),
        dict(activation=Arg("constants")), func=error)
    add("AttentionModel.error[spike]", dict(gamma=0.1, c=2.0, activation="tanh", snr=1.0, spike=(4.0, "aligned")),
        dict(spike=Arg("spike", none_ok=True)), func=error)
    add("spike_vectors", dict(strength=4.0, kind="aligned"), dict(strength=real(0, 1e8),
                                                                  kind=choice("aligned", "orthogonal")))
    control = _on_model("linearisation_control", lead=("p",))
    add("AttentionModel.linearisation_control", dict(p=256, c=2.0, activation="tanh", snr=2.0, spike=(4.0, "aligned")),
        dict(p=integer(1, 10**12), snr=real(0, 1e8), spike=Arg("spike", none_ok=True)), func=control)
    add("AttentionModel.linearisation_control[w_k]", dict(p=256, c=2.0, activation="tanh", snr=2.0, w_k=[1.0, 0.5],
                                                          w_q=[1.0, 0.0]),
        dict(w_k=Arg("vector"), w_q=Arg("vector")), func=control)


def _minimax(add: Callable[..., None]) -> None:
    """theory.minimax (paper A)."""
    # ---- minimax (paper A)
    M, beta = real(2, symbolic=True), SYM_POS
    rd = dict(r=integer(1, 5, symbolic=True), d=integer(1, symbolic=True))
    bound = choice("upper", "rate", "lower")
    add("rate_exponent", dict(beta=2), dict(beta=beta))
    add("minimax_rate", dict(M=100, beta=2), dict(M=M, beta=beta))
    add("upper_bound", dict(M=100, beta=2), dict(M=M, beta=beta))
    add("lower_bound", dict(M=100, N=4, beta=2, c0=1), dict(M=M, N=integer(2, symbolic=True), beta=beta, c0=SYM_POS))
    add("log_gap_exponent", dict(beta=2), dict(beta=beta))
    add("low_rank_condition", dict(r=1, d=5, M=10**6, beta=2, constant=1), dict(M=M, beta=beta, constant=SYM_POS, **rd))
    add("low_rank_rhs", dict(M=100, beta=2, constant=1), dict(M=M, beta=beta, constant=SYM_POS))
    add("num_intervals", dict(M=100, beta=2, constant=1), dict(M=M, beta=beta, constant=SYM_POS))
    add("beta_from_bspline_degree", dict(P=3), dict(P=integer(2, symbolic=True)))
    add("parametric_term", dict(r=1, d=5, M=100), dict(M=M, **rd))
    add("finite_sample_slope", dict(M=100, beta=2, bound="upper"), dict(M=M, beta=beta, bound=bound))
    add("average_slope", dict(M_lo=100, M_hi=10**4, beta=2, bound="upper"),
        dict(M_lo=real(2, 10**4, high_open=True, symbolic=True), M_hi=real(100, low_open=True, symbolic=True),
             beta=beta, bound=bound))
    add("total_error_slope", dict(M=100, beta=2, r=1, d=5, c_np=1, c_p=1),
        dict(M=M, beta=beta, c_np=SYM_POS, c_p=SYM_POS, **rd))
    add("min_samples", dict(r=1, d=5, beta=2), dict(r=integer(1, 5), d=integer(1), beta=pos(
        extra=(("answer too large", 1e6), ("answer too large (int)", 10**6)))))


def _settings(add: Callable[..., None]) -> None:
    """theory.settings: the frozen settings refuse what the functions refuse."""
    add("AttentionModel", dict(c=2.0, activation="tanh", snr=1.0, spike=(4.0, "aligned"), diagonal="removed"),
        dict(c=real(1e-4, 1e4, symbolic=True), activation=ACT, snr=SNR_SOLVER, spike=Arg("spike", none_ok=True),
             diagonal=Arg("diagonal")))
    add("AttentionModel[constants]", dict(c=2.0, activation=dict(TANH), snr=1.0),
        dict(activation=Arg("constants")), path="AttentionModel")
    add("Spike", dict(w_k=[1.0, 0.5], w_q=[1.0, 0.0]), dict(w_k=Arg("vector"), w_q=Arg("vector")))
    heads = dict(c=2.0, activations=("tanh", "gelu"), snr=1.0, heads="shared", readout="concat", value_ratio=0.5)
    add("MultiHeadModel", heads, dict(c=real(1e-4, 1e4), snr=SNR_SOLVER, heads=choice("shared", "random"),
                                      readout=choice("concat"), value_ratio=real(0, 1, low_open=True, none_ok=True)))
    add("MultiHeadModel.error", dict(gamma=0.1), dict(gamma=GAMMA_GRID_SYM),
        func=lambda gamma: theory.MultiHeadModel(**heads).error(gamma))
    add("shared_budget_limit", dict(c=2.0, activation="tanh", snr=1.0, gamma=0.1),
        dict(c=real(1e-4, 1e4), activation=ACT, snr=SNR_SOLVER, gamma=GAMMA_GRID))
    strong = dict(c=0.5, activation="erf", snr=1.0, t=0.5)
    add("StrongAlignment", strong, dict(c=pos(), activation=ACT, snr=nonneg(), t=nonneg()))
    below_one, positive_t = real(0, 1, low_open=True, high_open=True), pos()
    add("StrongAlignment.leverage", dict(strong, nodes=8), dict(c=below_one, nodes=Arg("int", 8, 200)),
        func=_on_strong("leverage", lead=()))
    add("StrongAlignment.gap", dict(strong, nodes=8), dict(c=below_one, t=positive_t), func=_on_strong("gap", lead=()))
    for method in ("error", "prediction_risk"):
        add(f"StrongAlignment.{method}", dict(strong, gamma=0.1, nodes=8),
            dict(gamma=real(0, array=True), t=positive_t, nodes=Arg("int", 8, 200)), func=_on_strong(method))
    add("StrongAlignment.ridge_prediction_risk", dict(strong, gamma=0.1), dict(gamma=real(0, array=True)),
        func=_on_strong("ridge_prediction_risk"))
    add("StrongAlignment.binned_leverage", dict(strong, edges=[0.0, 1.0, math.inf], per_bin=4),
        dict(c=below_one, t=positive_t, per_bin=Arg("int", 4, 40)), func=_on_strong("binned_leverage", lead=("edges",)))
    add("StrongAlignment.label_coordinate_bins", dict(strong, n_bins=3), dict(n_bins=Arg("int", 1, 50)),
        func=_on_strong("label_coordinate_bins", lead=("n_bins",)))
    for prop in ("label_mmse", "bayes_feature_limit", "margin", "captures_bayes_predictor"):
        add(f"StrongAlignment.{prop}", strong, {}, func=_on_strong("." + prop))
    add("RateSetting", dict(beta=2, r=1, d=5, constant=1),
        dict(beta=SYM_POS, r=integer(1, 5, symbolic=True), d=integer(1, symbolic=True), constant=SYM_POS))


# ---------------------------------------------------------------------------------------------- running
def run_table(cases: list[Case]) -> tuple[Counter, list[str]]:
    """Outcome counts over the table of bad values, and a description of every non-refused call."""
    counts: Counter = Counter()
    problems: list[str] = []
    for case in cases:
        for name, arg in case.args.items():
            for label, value in bad_values(arg):
                kwargs = dict(case.kwargs, **case.bad_overrides.get(name, {}))
                kwargs[name] = value
                try:
                    outcome, detail = classify(case.func, kwargs, name)
                finally:
                    restore_limits()
                counts[outcome] += 1
                if outcome != "refused":
                    problems.append(f"{case.label}({name}={label}): {outcome} {detail}")
    return counts, problems


# ---------------------------------------------------------------------------------------------- tests
CASES = _cases()


def _public_callables() -> set[str]:
    """Names of every public callable of theory (package and module ``__all__``), exceptions left out."""
    names = set()
    mods = [theory] + [getattr(theory, m) for m in ("activations", "attention", "kernel_spectrum", "marchenko_pastur",
                                                      "minimax", "ridge", "structured", "null_system")]
    for mod in mods:
        for n in getattr(mod, "__all__", []):
            obj = getattr(mod, n)
            if callable(obj) and not (isinstance(obj, type) and issubclass(obj, BaseException)):
                names.add(n)
    return names


#: results the library builds (not fuzzed: their fields come from checked values)
RESULTS = {"MultiHeadSolution", "NullTaylor", "NullSolution", "StructuredSolution", "RidgeDerivation"}
NO_ARGUMENTS = RESULTS | {"derive_ridge_error", "null_system_equations",
                          "null_trace_expressions", "get_limits"}


def test_every_public_callable_is_in_the_table():
    covered = {case.label.split("[")[0] for case in CASES}
    missing = _public_callables() - covered - NO_ARGUMENTS
    assert not missing, f"public callables without a fuzz entry: {sorted(missing)}"
    for name in (NO_ARGUMENTS - RESULTS) & _public_callables():
        assert _fn(name)() is not None


def test_valid_calls_succeed():
    """The starting points are valid: each returns a finite result."""
    for case in CASES:
        try:
            out = case.func(**case.kwargs)
        finally:
            restore_limits()
        assert not nonfinite(out), case.label


def test_table_of_bad_values_all_refused():
    MARKER.unlink(missing_ok=True)
    counts, problems = run_table(CASES)
    print("\n" + report_line("theory fuzz table", counts))
    assert not MARKER.exists(), "a string argument was evaluated as code"
    assert counts["refused"] == sum(counts.values()), "\n".join(problems[:40])


if st is not None:
    from hypothesis import HealthCheck, given, settings

    _FUZZ = [(case, name, arg) for case in CASES for name, arg in case.args.items()
             if arg.kind in ("real", "int", "complex", "choice", "flag", "activation", "diagonal")]
    _HYP_COUNTS: Counter = Counter()

    def _bad_strategy(a: Arg):
        """:func:`fuzz_support.bad_strategy`, and theory's activations and diagonals."""
        if a.kind in GENERIC_KINDS:
            return bad_strategy(a)
        text = st.text(max_size=30)
        names = {n.lower() for n in getattr(theory, "ACTIVATIONS", ())}
        if a.kind == "diagonal":
            return st.one_of(text.filter(lambda s: s.lower() not in ("removed", "kept")),
                             st.sampled_from([NAN, INF, -INF]), st.none(), st.booleans())
        return st.one_of(text.filter(lambda s: s.lower() not in names), st.sampled_from([NAN, INF, -INF, 1j]),
                         st.none(), st.booleans())

    @settings(max_examples=600, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def test_hypothesis_bad_values_refused(data):
        case, name, arg = data.draw(st.sampled_from(_FUZZ), label="argument")
        value = data.draw(_bad_strategy(arg), label="bad value")
        if arg.none_ok and value is None:  # a valid default, not a bad value
            return
        kwargs = dict(case.kwargs, **case.bad_overrides.get(name, {}))
        kwargs[name] = value
        try:
            outcome, detail = classify(case.func, kwargs, name)
        finally:
            restore_limits()
        _HYP_COUNTS[outcome] += 1
        assert outcome == "refused", f"{case.label}({name}={value!r}): {outcome} {detail}"

    def test_hypothesis_counts_printed():
        """Runs after the hypothesis test (file order): prints its counts."""
        print("\n" + report_line("theory fuzz hypothesis", _HYP_COUNTS))
        assert not MARKER.exists()


def test_no_string_reaches_sympify():
    """The functions that used to sympify their arguments refuse the malicious string, which is never run."""
    MARKER.unlink(missing_ok=True)
    calls = [lambda: theory.mp_delta_expr(EVIL, 0.5), lambda: theory.mp_delta_expr(0.1, EVIL),
             lambda: theory.mp_stieltjes_expr(EVIL, 0.5), lambda: theory.mp_stieltjes_expr(-1, EVIL),
             lambda: theory.ridge_error_small_gamma_coefficient(EVIL, 1.0),
             lambda: theory.ridge_error_small_gamma_coefficient(2.0, EVIL), lambda: theory.ridge_error(EVIL, 2.0, 1.0),
             lambda: theory.mp_moment(2, EVIL), lambda: theory.hermite_coefficients(EVIL, 2),
             lambda: theory.rate_exponent(EVIL), lambda: theory.ridge_error_limit(EVIL, 1.0)]
    for call in calls:
        try:
            call()
        except (ValueError, TypeError):
            pass
    assert not MARKER.exists()


if __name__ == "__main__":  # before/after counts without asserting
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (8 * 2**30, 8 * 2**30))
    MARKER.unlink(missing_ok=True)
    counts, problems = run_table(CASES)
    if "-v" in sys.argv:
        print("\n".join(problems))
    print(report_line(f"theory fuzz table ({theory.__file__})", counts))
    MARKER.unlink(missing_ok=True)
