"""Checks B1, B2, B3, B5, B6 of paper B (ridge and null-model attention; kernel spectrum).

Tolerance rules (derived, never tuned)
--------------------------------------
*Finite-size rule* (B1, B2, B3 slopes; shared with B4/B7, :mod:`verify.checks._finite_size`). A
deterministic equivalent is an ``n -> infinity`` statement, so every Monte Carlo point is simulated at two
sizes with the same aspect ratio ``c = p/n``: ``n_s = n/2`` and ``n_l = n``.  With ``d_s, d_l`` the gaps
``MC - theory`` and ``SE_s, SE_l`` the Monte Carlo standard errors, a point passes iff

    ``|d_l| <= a + 3 hypot(SE_l, q SE_s)``,   ``a = q |d_s|``,   ``q = sqrt(n_s / n_l)``,

i.e. the finite-size allowance is the gap *measured* at the smaller size, propagated to the larger
size under the conservative assumption that it decays at least like ``n^{-1/2}`` (deterministic
equivalents of this kind usually converge like ``1/n``), and ``3 hypot(SE_l, q SE_s)`` is three standard
deviations of ``|d_l| - a`` (the allowance is itself measured: its noise ``q SE_s`` counts).  A theory that
is off by a constant ``D`` gives ``|d_l| ~ |d_s| ~ D`` and fails as soon as
``D (1 - 2^{-1/2}) > 3 hypot(SE_l, q SE_s)``.  Each panel also has a
*shrinkage* comparison: the mean relative gap at ``n_l`` must not exceed the one at ``n_s`` times
``sqrt(n_s / n_l)`` (the ``n^{-1/2}`` decay the per-point allowance assumes) by more than twice the RMS
relative noise of the two.

*Estimator.* With labels independent of ``X`` (the null model ``snr = 0``: B2, B3 at ``p/n = 2``, B5 at
``snr = 0``) the Monte Carlo uses the exact label average ``gamma^2/n tr Q^2`` of each draw of ``X``
(:func:`numerics.interpolation_error_label_average`): same mean as i.i.d. Rademacher labels, far smaller
variance, so the finite-size rule above becomes sharp.  With signal (B1, B5 at ``snr = 4``) labels are
sampled (balanced).

*B3/B5 sign claims*: paired differences (the same draws of ``X, y`` feed both models) must exceed
3 standard errors of the paired difference.

*B6*: per-trial Kolmogorov distance between the eigenvalue ECDF and the CDF of ``kernel_density``, at
``n`` and ``2n``.  Eigenvalue CDFs of such matrices converge like ``1/n`` (up to logs), so the ratio
``KS(2n) / KS(n)`` is predicted ``~0.5``; the check passes iff the measured ratio is at most
``2^{-1/2}`` (a decay at least like ``n^{-1/2}``), which a wrong limit law (ratio -> 1) cannot meet.
A separate comparison requires the trapezoid mass of ``kernel_density`` on the eigenvalue window to be
within 0.01 of 1 (the KS distances use that CDF).

Every Monte Carlo cell (one :func:`numerics.interpolation_error_mc` call, one set of kernel spectra, the
Gaussian-equivalent diagnostic of one ``c``) is memoised on disk by ``ctx.cached``: an interrupted run
resumes from the finished cells, with the same seeds and the same numbers.

Profiles: ``quick`` (all five under ~2 minutes on 2 cores: reduced ``n`` with the paper's ratios),
``paper`` (the paper's sizes), ``smoke`` (for smoke tests only).
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any

import numpy as np  # noqa: E402
import torch  # noqa: E402

from numerics.threads import torch_threads  # noqa: E402
from numerics.rmt import (  # noqa: E402
    gaussian_equivalent_kernel,
    interpolation_error_label_average,
    interpolation_error_mc,
    kernel_eigenvalues,
    sample_signal_plus_noise,
)

from ..registry import CheckContext, Comparison, Outcome, check  # noqa: E402
from ..figures import pyplot  # noqa: E402
from ..verdicts import judge  # noqa: E402
from ._finite_size import finite_size_test  # noqa: E402

# ---------------------------------------------------------------------------------------------
# sizes per profile ("n" is always the larger of the two sizes of the finite-size rule)
# ---------------------------------------------------------------------------------------------
PROFILES: dict[str, dict[str, dict[str, Any]]] = {
    "paper": {
        "B1": dict(
            a=dict(n=512, c=4.0, snr=1.0, gammas=np.logspace(-5, 1, 13), trials=(200, 100)),
            b=dict(n=4096, cs=[0.25, 0.5, 1.0, 1.5, 2.0], gamma=1e-5, snr=1.0, trials=(8, 4)),
            c=dict(n=2048, c=0.25, snrs=[0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0], gamma=1e-5, trials=(100, 50)),
        ),
        "B2": dict(ns={0.25: 2048, 2.0: 1024}, gammas=np.logspace(-3, 0, 7), trials=(40, 20)),
        "B3": dict(n=1024, gammas=np.logspace(-4, 0, 9), fit=np.logspace(-4, -2.5, 4), trials=(20, 10)),
        "B5": dict(n=1024, gammas=np.array([1e-3, 1e-2]), trials=20),
        "B6": dict(n=1024, trials=(8, 4)),
    },
    "quick": {
        "B1": dict(
            a=dict(n=256, c=4.0, snr=1.0, gammas=np.logspace(-5, 1, 13), trials=(80, 40)),
            b=dict(n=256, cs=[0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0], gamma=1e-5, snr=1.0, trials=(60, 30)),
            c=dict(n=512, c=0.25, snrs=[0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0], gamma=1e-5, trials=(60, 30)),
        ),
        "B2": dict(ns={0.25: 1024, 2.0: 256}, gammas=np.logspace(-3, 0, 7), trials={0.25: (48, 24), 2.0: (80, 40)}, ge_cs=[0.25]),
        "B3": dict(n=512, gammas=np.logspace(-4, 0, 9), fit=np.logspace(-4, -2.5, 4), trials=(16, 8)),
        "B5": dict(n=256, gammas=np.array([1e-3, 1e-2]), trials=16),
        "B6": dict(n=256, trials=(8, 4)),
    },
    "smoke": {
        "B1": dict(
            a=dict(n=32, c=4.0, snr=1.0, gammas=np.logspace(-3, 0, 3), trials=(4, 3)),
            b=dict(n=32, cs=[0.5, 2.0], gamma=1e-5, snr=1.0, trials=(4, 3)),
            c=dict(n=64, c=0.25, snrs=[0.0, 1.0], gamma=1e-5, trials=(4, 3)),
        ),
        "B2": dict(ns={0.25: 64, 2.0: 32}, gammas=np.logspace(-2, 0, 2), trials=(4, 3), activations=["tanh"], ge_cs=[0.25]),
        "B3": dict(n=48, gammas=np.logspace(-2, 0, 3), fit=np.logspace(-2, -1, 3), trials=(4, 3)),
        "B5": dict(n=32, gammas=np.array([1e-2]), trials=4),
        "B6": dict(n=32, trials=(3, 2)),
    },
}

B2_ACTIVATIONS = ["tanh", "erf", "relu"]
B2_CS = [0.25, 2.0]


def _array_digest(a: Any) -> str | None:
    if a is None:
        return None
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(np.asarray(a, dtype=np.float64)).tobytes()).hexdigest()[:16]


def _activation_key(activation: Any) -> str | None:
    import sympy as sp

    if activation is None or isinstance(activation, str):
        return activation
    if isinstance(activation, sp.Basic):
        return sp.srepr(activation)
    raise ValueError(f"a cached Monte Carlo cell needs a named or sympy activation, got {type(activation).__name__}")


@functools.lru_cache(maxsize=None)
def mc_version(*extra: Any) -> str:
    """Cache version of the paper-B Monte Carlo cells: the source of :mod:`numerics.rmt` (samplers, kernels,
    errors), of :mod:`theory.activations` (the activations it evaluates), of the spike vectors, and of
    ``extra`` (check-local cell functions), so that an edit of that code never returns a stale cell."""
    import numerics.rmt
    import theory.activations
    from numerics.sweep import source_version
    from theory.structured import spike_vectors

    return source_version("b-mc", numerics.rmt, theory.activations, spike_vectors, *extra)


def _mc_cached(
    ctx: CheckContext,
    kind: str,
    n: int,
    p: int,
    snr: float,
    gammas: Any,
    n_trials: int,
    seed: int,
    activation: Any = None,
    w_k: Any = None,
    w_q: Any = None,
    label_average: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`numerics.interpolation_error_mc` (``return_trials=True``) memoised on disk by ``ctx.cached``.

    The key holds every argument that changes the numbers (not ``n_jobs``, which does not); returns
    ``(mean, se, trials)``.
    """
    g = np.atleast_1d(np.asarray(gammas, dtype=np.float64))
    key = dict(kind=kind, n=int(n), p=int(p), snr=float(snr), gammas=g, trials=int(n_trials), seed=int(seed),
               activation=_activation_key(activation), w_k=_array_digest(w_k), w_q=_array_digest(w_q),
               label_average=bool(label_average))

    def compute() -> dict[str, np.ndarray]:
        m, s, t = interpolation_error_mc(
            kind, n, p, snr, g, n_trials, seed, activation=activation, w_k=w_k, w_q=w_q, n_jobs=max(1, int(ctx.n_jobs)),
            device=ctx.device, return_trials=True, label_average=label_average,
        )
        return {"mean": m, "se": s, "trials": t}

    out = ctx.cached("interpolation_error_mc", key, compute, version=mc_version())
    return out["mean"], out["se"], out["trials"]


def _profile(ctx: CheckContext) -> str:
    return ctx.profile  # validated by CheckContext (verify.registry.PROFILES); every one has a table here


def _cfg(ctx: CheckContext, cid: str) -> dict[str, Any]:
    return PROFILES[_profile(ctx)][cid]


def _p_of(n: int, c: float) -> int:
    return max(1, int(round(c * n)))


# ---------------------------------------------------------------------------------------------
# theory access (H2's layer)
# ---------------------------------------------------------------------------------------------
def _ridge_theory(gammas: np.ndarray, c: float, snr: float) -> np.ndarray:
    import theory

    return np.asarray(theory.ridge_error_values(np.asarray(gammas, dtype=float), c, snr), dtype=float)


def _attention_theory(gammas: np.ndarray, c: float, activation: Any, system: str | None = None) -> np.ndarray:
    """``theory.attention_error`` (null model, diagonal removed); ``system="spec"``: SPEC's reconstruction."""
    import theory

    g = np.asarray(gammas, dtype=float)
    kw = {} if system is None else {"system": system}
    out = theory.attention_error(g, c, activation, snr=0, diagonal="removed", **kw)
    return np.asarray(out, dtype=float).reshape(g.shape)


# ---------------------------------------------------------------------------------------------
# tolerance rules
# ---------------------------------------------------------------------------------------------
def _fs_comparison(
    name: str, pred: float, ms: float, ss: float, ns: int, ml: float, sl: float, nl: int,
    trials: tuple[int, int] | None = None,
) -> tuple[Comparison, dict[str, float]]:
    """Finite-size rule (:mod:`verify.checks._finite_size`) for one point at sizes ``ns < nl``; ``trials``
    (Monte Carlo trials at ``ns`` and ``nl``) switches the critical value to the Student-t quantile."""
    t = finite_size_test(pred, ms, ss, ml, sl, ns / nl, trials)
    return (
        t.comparison(name, pred, ml, sl, f"n={ns}", f"n={nl}"),
        dict(pred=float(pred), m_s=float(ms), se_s=float(ss), m_l=float(ml), se_l=float(sl), allowance=t.allowance),
    )


def _shrink_comparison(name: str, pts: list[dict[str, float]], ns: int, nl: int) -> Comparison:
    pred = np.array([max(abs(q["pred"]), 1e-300) for q in pts])
    ds = np.array([q["m_s"] - q["pred"] for q in pts])
    dl = np.array([q["m_l"] - q["pred"] for q in pts])
    se = np.sqrt(np.array([q["se_s"] ** 2 + q["se_l"] ** 2 for q in pts]))
    rs, rl = float(np.mean(np.abs(ds) / pred)), float(np.mean(np.abs(dl) / pred))
    noise = float(np.sqrt(np.mean((se / pred) ** 2)))
    q = math.sqrt(ns / nl)
    target = rs * q
    # SD of rl - q rs: at most the RMS relative noise of one point (the points share draws, so averaging over
    # them is not credited); se above already combines both sizes
    return Comparison.bound(
        name, f"mean rel. gap at n={nl} <= that at n={ns} ({rs:.3g}) x sqrt({ns}/{nl}) = {target:.3g}", rl, noise,
        rl - target, excess_se=noise,
        rule=(f"rel. gap(n={nl}) <= rel. gap(n={ns}) x sqrt({ns}/{nl}): the gap must decay at least like n^-1/2, "
              f"the rate the per-point allowance assumes (noise: RMS relative SE {noise:.3g}, not divided by the "
              "number of points, which share draws)"))


def _paired_positive(name: str, pred: Any, diff: np.ndarray) -> tuple[Comparison, float, float]:
    m = float(diff.mean())
    se = float(diff.std(ddof=1) / math.sqrt(diff.size))
    return (
        Comparison.direction(name, pred, m, se, +1, df=diff.size - 1,
                             rule=f"paired mean difference over {diff.size} draws must be > 0"),
        m,
        se,
    )


def _edge_flag(c: float, gamma: float, n: int) -> str:
    """Flag points where the MP hard/soft lower edge is within finite-size reach (near c = 1)."""
    edge = (1 - math.sqrt(c)) ** 2
    scale = n ** (-2.0 / 3.0)
    if edge < scale and gamma < scale:
        return (
            f" [NEAR c=1: lower MP edge (1-sqrt c)^2={edge:.2g} < n^-2/3={scale:.2g} and n^2 gamma={n * n * gamma:.2g}; "
            "deterministic equivalent not uniform here, large finite-size effects expected]"
        )
    return ""


# ---------------------------------------------------------------------------------------------
# B1: ridge, the three Figure-1 sweeps
# ---------------------------------------------------------------------------------------------
@check("B1")
def check_b1(ctx: CheckContext) -> Outcome:
    cfg = _cfg(ctx, "B1")
    comps: list[Comparison] = []
    data: dict[str, Any] = {}
    flags: list[str] = []
    t0 = time.perf_counter()

    def two_sizes(key, n, p_of_n, snr, gammas, trials):
        nl, ns = n, n // 2
        out = []
        for nn, tr in ((ns, trials[0]), (nl, trials[1])):
            seed = ctx.seed_for(key, nn)
            m, s, _ = _mc_cached(ctx, "ridge", nn, p_of_n(nn), snr, gammas, tr, seed)
            out.append((nn, m, s))
        return out

    # panel a: gamma sweep
    a = cfg["a"]
    with ctx.progress("panel 1a (gamma sweep)", total=1) as bar:
        (ns, ms, ss), (nl, ml, sl) = two_sizes("1a", a["n"], lambda nn: _p_of(nn, a["c"]), a["snr"], a["gammas"], a["trials"])
        bar.advance()
    pred = _ridge_theory(a["gammas"], a["c"], a["snr"])
    pts = []
    for i, g in enumerate(a["gammas"]):
        cmp_, q = _fs_comparison(f"1a gamma={g:.3g} (c={a['c']}, snr={a['snr']})", pred[i], ms[i], ss[i], ns, ml[i], sl[i], nl,
                                   a["trials"])
        comps.append(cmp_)
        pts.append(q)
    comps.append(_shrink_comparison("1a finite-size gap shrinks", pts, ns, nl))
    data["1a"] = dict(gammas=a["gammas"], n=(ns, nl), theory=pred, mc_small=ms, se_small=ss, mc_large=ml, se_large=sl)

    # panel b: p sweep at fixed n, gamma
    b = cfg["b"]
    pts = []
    rows = []
    nl, ns = b["n"], b["n"] // 2
    with ctx.progress("panel 1b (p sweep)", total=len(b["cs"])) as bar:
        for cval in b["cs"]:
            res = []
            for nn, tr in ((ns, b["trials"][0]), (nl, b["trials"][1])):
                seed = ctx.seed_for("1b", nn, cval)
                res.append(_mc_cached(ctx, "ridge", nn, _p_of(nn, cval), b["snr"], [b["gamma"]], tr, seed)[:2])
            pr = float(_ridge_theory(np.array([b["gamma"]]), cval, b["snr"])[0])
            flag = _edge_flag(cval, b["gamma"], nl)
            if flag:
                flags.append(f"1b c={cval}:{flag}")
            cmp_, q = _fs_comparison(
                f"1b p/n={cval} (n={nl}, gamma={b['gamma']:g}){flag}",
                pr, res[0][0][0], res[0][1][0], ns, res[1][0][0], res[1][1][0], nl, b["trials"],
            )
            comps.append(cmp_)
            pts.append(q)
            rows.append((cval, pr, res[0][0][0], res[0][1][0], res[1][0][0], res[1][1][0]))
            bar.advance()
    comps.append(_shrink_comparison("1b finite-size gap shrinks", pts, ns, nl))
    data["1b"] = dict(rows=np.array(rows), columns=["c", "theory", "mc_small", "se_small", "mc_large", "se_large"], n=(ns, nl))

    # panel c: snr sweep
    cc = cfg["c"]
    pts = []
    rows = []
    nl, ns = cc["n"], cc["n"] // 2
    with ctx.progress("panel 1c (snr sweep)", total=len(cc["snrs"])) as bar:
        for s in cc["snrs"]:
            res = []
            for nn, tr in ((ns, cc["trials"][0]), (nl, cc["trials"][1])):
                seed = ctx.seed_for("1c", nn, s)
                res.append(_mc_cached(ctx, "ridge", nn, _p_of(nn, cc["c"]), s, [cc["gamma"]], tr, seed)[:2])
            pr = float(_ridge_theory(np.array([cc["gamma"]]), cc["c"], s)[0])
            cmp_, q = _fs_comparison(
                f"1c ||mu||^2={s} (c={cc['c']}, gamma={cc['gamma']:g})",
                pr, res[0][0][0], res[0][1][0], ns, res[1][0][0], res[1][1][0], nl, cc["trials"],
            )
            comps.append(cmp_)
            pts.append(q)
            rows.append((s, pr, res[0][0][0], res[0][1][0], res[1][0][0], res[1][1][0]))
            bar.advance()
    comps.append(_shrink_comparison("1c finite-size gap shrinks", pts, ns, nl))
    data["1c"] = dict(rows=np.array(rows), columns=["snr", "theory", "mc_small", "se_small", "mc_large", "se_large"], n=(ns, nl))

    # figure
    plt = pyplot()
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    d = data["1a"]
    gg = np.logspace(np.log10(a["gammas"][0]), np.log10(a["gammas"][-1]), 200)
    ax[0].loglog(gg, _ridge_theory(gg, a["c"], a["snr"]), "k-", label="theory E_RR")
    ax[0].errorbar(a["gammas"], d["mc_small"], 3 * d["se_small"], fmt="s", mfc="none", label=f"MC n={d['n'][0]}")
    ax[0].errorbar(a["gammas"], d["mc_large"], 3 * d["se_large"], fmt="o", label=f"MC n={d['n'][1]}")
    ax[0].set(xlabel="gamma", ylabel="E", title=f"1a: p/n={a['c']}, ||mu||^2={a['snr']}")
    for k, (key, xl) in enumerate((("1b", "p/n"), ("1c", "||mu||^2")), start=1):
        r = data[key]["rows"]
        ax[k].plot(r[:, 0], r[:, 1], "k-", marker=".", label="theory")
        ax[k].errorbar(r[:, 0], r[:, 2], 3 * r[:, 3], fmt="s", mfc="none", label=f"MC n={data[key]['n'][0]}")
        ax[k].errorbar(r[:, 0], r[:, 4], 3 * r[:, 5], fmt="o", label=f"MC n={data[key]['n'][1]}")
        ax[k].set(xlabel=xl, ylabel="E", title=f"{key}: gamma={(b if key == '1b' else cc)['gamma']:g}")
    ax[1].set_yscale("log")
    for x in ax:
        x.legend(fontsize=8)
    fig.suptitle("B1: ridge interpolation error, theory vs Monte Carlo (error bars 3 SE)")
    path = ctx.save_figure(fig, "figure1")
    notes = (
        f"Ridge E_RR (theory.ridge_error_values) vs Monte Carlo, balanced labels, mu = sqrt(snr) e_1; sizes "
        f"n/2 and n with equal p/n (profile {_profile(ctx)}; the paper's sizes in profile 'paper'). "
        f"Runtime {time.perf_counter() - t0:.1f} s."
    )
    if flags:
        notes += " Flagged points near c = 1 (same rule applied, see their names): " + "; ".join(flags)
    return Outcome(comparisons=comps, notes=notes, figures=[p for p in [path] if p], data=data)


# ---------------------------------------------------------------------------------------------
# B2: null-model attention vs theory.attention_error
# ---------------------------------------------------------------------------------------------
@check("B2")
def check_b2(ctx: CheckContext) -> Outcome:
    cfg = _cfg(ctx, "B2")
    acts = cfg.get("activations", B2_ACTIVATIONS)
    gammas = cfg["gammas"]
    comps: list[Comparison] = []
    data: dict[str, Any] = {}
    t0 = time.perf_counter()
    plt = pyplot()
    fig, axes2 = plt.subplots(2, len(B2_CS), figsize=(6 * len(B2_CS), 8), sharex=True)
    axes, raxes = axes2[0], axes2[1]
    worst = (0.0, "")
    control: list[str] = []
    with ctx.progress("null attention sweeps", total=len(acts) * len(B2_CS)) as bar:
        for j, cval in enumerate(B2_CS):
            nl = cfg["ns"][cval]
            ns = nl // 2
            for act in acts:
                res = []
                trials = cfg["trials"][cval] if isinstance(cfg["trials"], dict) else cfg["trials"]
                for nn, tr in ((ns, trials[0]), (nl, trials[1])):
                    seed = ctx.seed_for("B2", act, cval, nn)
                    res.append(_mc_cached(ctx, "attention", nn, _p_of(nn, cval), 0.0, gammas, tr, seed, activation=act,
                                          label_average=True)[:2])
                pred = _attention_theory(gammas, cval, act)
                pts = []
                for i, g in enumerate(gammas):
                    cmp_, q = _fs_comparison(
                        f"{act} c={cval} gamma={g:.3g}", pred[i], res[0][0][i], res[0][1][i], ns, res[1][0][i], res[1][1][i], nl,
                        trials,
                    )
                    comps.append(cmp_)
                    pts.append(q)
                    rel = abs(q["m_l"] - q["pred"]) / max(abs(q["pred"]), 1e-300)
                    if rel > worst[0]:
                        worst = (rel, cmp_.name)
                comps.append(_shrink_comparison(f"{act} c={cval} finite-size gap shrinks", pts, ns, nl))
                # negative control (not a comparison): the same rule against SPEC's reconstructed system
                pred_spec = _attention_theory(gammas, cval, act, system="spec")
                n_bad = sum(
                    not finite_size_test(pred_spec[i], res[0][0][i], res[0][1][i], res[1][0][i], res[1][1][i],
                                         ns / nl, trials).passed
                    for i in range(len(gammas))
                )
                rel_spec = float(np.max(np.abs(res[1][0] - pred_spec) / pred_spec))
                control.append(f"{act} p/n={cval}: {n_bad}/{len(gammas)} points fail, max rel. gap {rel_spec:.2g}")
                data[f"{act}_c{cval}"] = dict(
                    gammas=gammas, theory=pred, n=(ns, nl), mc_small=res[0][0], se_small=res[0][1], mc_large=res[1][0], se_large=res[1][1]
                )
                ax = axes[j]
                (line,) = ax.loglog(gammas, pred, "-", label=f"{act} theory")
                ax.errorbar(gammas, res[1][0], 3 * res[1][1], fmt="o", color=line.get_color(), label=f"{act} MC n={nl}")
                ax.errorbar(gammas, res[0][0], 3 * res[0][1], fmt="s", mfc="none", color=line.get_color(), alpha=0.6)
                col = line.get_color()
                raxes[j].errorbar(gammas, (res[1][0] - pred) / pred, 3 * res[1][1] / pred, fmt="o-", color=col, label=f"{act} n={nl}")
                raxes[j].errorbar(
                    gammas * 1.05, (res[0][0] - pred) / pred, 3 * res[0][1] / pred, fmt="s--", mfc="none", color=col, alpha=0.6,
                    label=f"{act} n={ns}",
                )
                bar.advance()
            axes[j].set(xlabel="gamma", ylabel="E", title=f"null attention, p/n={cval} (open: n={ns})")
            axes[j].legend(fontsize=7)
            raxes[j].axhline(0, color="k", lw=0.8)
            raxes[j].set(xscale="log", xlabel="gamma", ylabel="(MC - theory) / theory", title="relative gap (bars: 3 SE)")
            raxes[j].legend(fontsize=7)
    fig.suptitle("B2: null-model attention (diagonal removed) vs deterministic equivalent")
    path = ctx.save_figure(fig, "null_attention")

    # diagnostic (data + notes, not a comparison): Gaussian-equivalent kernels with symmetric vs
    # independent-entry noise, against the same theory, at the larger size
    diag_txt = []
    ge_cs = cfg.get("ge_cs", B2_CS)
    with ctx.progress("Gaussian-equivalent diagnostic", total=len(ge_cs)) as bar:
        for cval in ge_cs:
            nl = cfg["ns"][cval]
            act = acts[0]
            mom = __import__("theory").hermite_moments(act)
            g_d = np.array([0.01, 0.1]) if cval > 1 else np.array([0.1, 0.316])
            pred = _attention_theory(g_d, cval, act)
            pred_spec = _attention_theory(g_d, cval, act, system="spec")
            ge_seed = ctx.seed_for("B2-GE", cval, nl)
            trials = cfg["trials"][cval] if isinstance(cfg["trials"], dict) else cfg["trials"]
            n_ge = trials[1] // 2 + 2

            def ge_cell(ge_seed=ge_seed, cval=cval, nl=nl, mom=mom, g_d=g_d, n_ge=n_ge) -> dict[str, np.ndarray]:
                rng = np.random.default_rng(ge_seed)  # one stream for both noise models, in this order

                def draws(sym):  # consumed in order by the dispatcher: the stream order never changes
                    for _ in range(n_ge):
                        X = rng.standard_normal((_p_of(nl, cval), nl))
                        yield X, gaussian_equivalent_kernel(X, mom.a1, mom.nu, rng, symmetric=sym)

                return {("symmetric" if sym else "independent"): np.array(_map_threads(
                    lambda XK: interpolation_error_label_average((torch.from_numpy(XK[0]) @ torch.from_numpy(XK[1])).numpy(), g_d),
                    draws(sym), ctx.n_jobs)) for sym in (True, False)}

            ge = ctx.cached("gaussian_equivalent", dict(c=cval, n=nl, p=_p_of(nl, cval), act=act, gammas=g_d, trials=n_ge,
                                                        seed=ge_seed), ge_cell,
                            version=mc_version(check_b2))
            out = {}
            for sym in (True, False):
                v = ge["symmetric" if sym else "independent"]
                rel = (v.mean(0) - pred) / pred
                rse = v.std(0, ddof=1) / math.sqrt(v.shape[0]) / pred
                rel_spec = (v.mean(0) - pred_spec) / pred_spec
                out["symmetric" if sym else "independent"] = dict(gammas=g_d, rel_gap=rel, rel_se=rse, rel_gap_spec_system=rel_spec)
            data[f"GE_diagnostic_{act}_c{cval}"] = out
            fmt = lambda key, k: ", ".join(  # noqa: E731
                f"{r:+.2e}+-{e:.1e}" for r, e in zip(out[key][k], out[key]["rel_se"])
            )
            diag_txt.append(
                f"{act} p/n={cval}, n={nl}, gamma={[float(x) for x in g_d]}: relative gap (MC - theory)/theory; "
                f"symmetric GOE noise vs theory {fmt('symmetric', 'rel_gap')}, vs SPEC system "
                f"{fmt('symmetric', 'rel_gap_spec_system')}; independent-entry noise vs theory "
                f"{fmt('independent', 'rel_gap')}, vs SPEC system {fmt('independent', 'rel_gap_spec_system')}"
            )
            bar.advance()
    judge(comps)  # outcomes for the notes (the registry judges the same comparisons again: pure, idempotent)
    failed = [c for c in comps if c.outcome == "FAIL"]
    notes = (
        "Null model (mu = 0, W = I), diagonal of K removed, centred activations; theory = theory.attention_error "
        "(default system: the project's corrected deterministic equivalent with the GOE term kappa; SPEC's "
        "reconstruction is system='spec'). Monte Carlo: label-averaged estimator gamma^2/n tr Q^2 (exact mean over "
        "i.i.d. Rademacher labels given X; labels are independent of X in the null model), which removes the label "
        f"noise and makes the rule sharp. Largest relative gap at n_l: {worst[0]:.3g} ({worst[1]}). "
        f"{len(failed)} of {len(comps)} comparisons fail. "
        "NEGATIVE CONTROL (same Monte Carlo, same rule, SPEC's reconstructed system as the prediction): "
        + "; ".join(control)
        + ". Gaussian-equivalent diagnostic (a1 (X^T X/p - diag) + s_f Xi/sqrt p at the larger size): "
        + " | ".join(diag_txt)
        + ". Background (H3, measured during development against SPEC's system, label-averaged, not re-run here): "
        "SPEC's system matches the independent-entry noise model but leaves a gap with the real (symmetric) kernel "
        "that does not shrink with n: tanh p/n=1/4, gamma=0.1: +1.2e-3, 1.0e-3, 1.0e-3, 0.8e-3, 1.0e-3 relative at "
        "n = 256..4096; tanh p/n=2, gamma=0.01: +2.5%, +1.9%, +2.0% at n = 512, 1024, 2048; relu p/n=2, gamma=0.01: "
        "+4.7%, +4.3%, +3.9%. That is the symmetry (kappa) term of the corrected system. "
        f"Runtime {time.perf_counter() - t0:.1f} s."
    )
    return Outcome(comparisons=comps, notes=notes, figures=[p for p in [path] if p], data=data)


# ---------------------------------------------------------------------------------------------
# B3: attention vs ridge on random inputs; small-gamma exponents
# ---------------------------------------------------------------------------------------------
def _per_trial_slopes(gammas: np.ndarray, trials: np.ndarray) -> np.ndarray:
    lx = np.log(gammas)
    ly = np.log(np.maximum(trials, 1e-300))
    xc = lx - lx.mean()
    return (ly - ly.mean(axis=1, keepdims=True)) @ xc / (xc @ xc)


def _ols_slope(gammas: np.ndarray, values: np.ndarray) -> float:
    return float(_per_trial_slopes(gammas, np.asarray(values)[None, :])[0])


@check("B3")
def check_b3(ctx: CheckContext) -> Outcome:
    cfg = _cfg(ctx, "B3")
    comps: list[Comparison] = []
    data: dict[str, Any] = {}
    t0 = time.perf_counter()
    gammas, fit = cfg["gammas"], cfg["fit"]
    nl, ns = cfg["n"], cfg["n"] // 2
    act = "tanh"
    plt = pyplot()
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.2))

    # (1) c = 2: attention > ridge at every gamma (paired draws), and the small-gamma exponents
    cval = 2.0
    res: dict[tuple[str, int], np.ndarray] = {}
    allg = np.unique(np.concatenate([gammas, fit]))
    with ctx.progress("c=2 attention and ridge", total=4) as bar:
        for nn, tr in ((ns, cfg["trials"][0]), (nl, cfg["trials"][1])):
            seed = ctx.seed_for("B3", cval, nn)  # same seed: paired draws
            res[("att", nn)] = _mc_cached(ctx, "attention", nn, _p_of(nn, cval), 0.0, allg, tr, seed, activation=act,
                                          label_average=True)[2]
            bar.advance()
            res[("rr", nn)] = _mc_cached(ctx, "ridge", nn, _p_of(nn, cval), 0.0, allg, tr, seed, label_average=True)[2]
            bar.advance()
    th_att = _attention_theory(allg, cval, act)
    th_rr = _ridge_theory(allg, cval, 0.0)
    idx = np.searchsorted(allg, gammas)
    for i in idx:
        g = allg[i]
        diff = res[("att", nl)][:, i] - res[("rr", nl)][:, i]
        comps.append(
            _paired_positive(f"c=2 gamma={g:.3g}: E_att({act}) - E_ridge > 0", float(th_att[i] - th_rr[i]), diff)[0]
        )
    fidx = np.searchsorted(allg, fit)
    slope_data = {}
    for kind, th, target in (("att", th_att, 0.5), ("rr", th_rr, 2.0)):
        th_slope = _ols_slope(fit, th[fidx])
        sl_s = _per_trial_slopes(fit, res[(kind, ns)][:, fidx])
        sl_l = _per_trial_slopes(fit, res[(kind, nl)][:, fidx])
        ms_, ss_ = float(sl_s.mean()), float(sl_s.std(ddof=1) / math.sqrt(sl_s.size))
        ml_, sel_ = float(sl_l.mean()), float(sl_l.std(ddof=1) / math.sqrt(sl_l.size))
        label = "attention" if kind == "att" else "ridge"
        cmp_, q = _fs_comparison(
            f"c=2 {label} small-gamma slope vs theory's own OLS slope on gamma in [{fit[0]:.2g}, {fit[-1]:.2g}]",
            th_slope, ms_, ss_, ns, ml_, sel_, nl, (sl_s.size, sl_l.size),
        )
        comps.append(cmp_)
        curv = abs(th_slope - target)
        band = q["allowance"] + curv
        comps.append(
            Comparison.bound(
                f"c=2 {label} small-gamma exponent vs the law gamma^{target:g}", target, ml_, sel_,
                abs(ml_ - target) - band, df=sl_l.size - 1,
                rule=(
                    f"|slope - {target:g}| <= finite-size allowance {q['allowance']:.3g} + curvature "
                    f"|theory local slope ({th_slope:.4g}) - {target:g}| = {curv:.3g} (band {band:.3g}) up to noise. "
                    f"The allowance contains |theory local slope - law|, so this re-tests the MC slope against "
                    f"the theory's local slope on the fit range; the law {target:g} is reported beside it, "
                    f"not tested independently"
                ),
            )
        )
        slope_data[label] = dict(theory_slope=th_slope, mc_small=(ms_, ss_), mc_large=(ml_, sel_))
    data["c2"] = dict(
        gammas=allg, theory_att=th_att, theory_rr=th_rr, att_mean=res[("att", nl)].mean(0), rr_mean=res[("rr", nl)].mean(0), slopes=slope_data
    )
    ax[0].loglog(allg, th_att, "C0-", label=f"attention ({act}) theory")
    ax[0].loglog(allg, th_rr, "C1-", label="ridge theory")
    ax[0].loglog(allg, res[("att", nl)].mean(0), "C0o", label=f"attention MC n={nl}")
    ax[0].loglog(allg, res[("rr", nl)].mean(0), "C1s", label=f"ridge MC n={nl}")
    ax[0].axvspan(fit[0], fit[-1], color="grey", alpha=0.15, label="slope fit range")
    ax[0].set(xlabel="gamma", ylabel="E", title="random inputs, p/n = 2")
    ax[0].legend(fontsize=7)

    # (2) c = 1/4: no separation as gamma -> 0 (both -> 1 - c); report the difference over the grid
    cval = 0.25
    n4 = 2 * nl
    seed = ctx.seed_for("B3", cval, n4)
    tr = cfg["trials"][1]
    with ctx.progress("c=1/4 attention and ridge", total=2) as bar:
        ta = _mc_cached(ctx, "attention", n4, _p_of(n4, cval), 0.0, gammas, tr, seed, activation=act)[2]
        bar.advance()
        tr_ = _mc_cached(ctx, "ridge", n4, _p_of(n4, cval), 0.0, gammas, tr, seed)[2]
        bar.advance()
    # diagnostic (data + notes, not a comparison): at gamma -> 0 both errors equal (n-p)/n by an algebraic
    # identity (projection of y on the (n-p)-dimensional null space), so this cannot test the theory
    diff = ta[:, 0] - tr_[:, 0]
    m, se = float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(diff.size))
    small_gamma_diag = dict(gamma=float(gammas[0]), diff_mean=m, diff_se=se, identity_value=(n4 - _p_of(n4, cval)) / n4,
                            att_mean=float(ta[:, 0].mean()), rr_mean=float(tr_[:, 0].mean()))
    th_a4 = _attention_theory(gammas, cval, act)
    th_r4 = _ridge_theory(gammas, cval, 0.0)
    # sign of the difference at larger gamma, label-averaged (sharp): theory says which sign
    la_a = _mc_cached(ctx, "attention", n4, _p_of(n4, cval), 0.0, gammas, tr, seed, activation=act, label_average=True)[2]
    la_r = _mc_cached(ctx, "ridge", n4, _p_of(n4, cval), 0.0, gammas, tr, seed, label_average=True)[2]
    d4 = la_a - la_r
    for i, g in enumerate(gammas):
        tdiff = float(th_a4[i] - th_r4[i])
        if g < 0.05 or abs(tdiff) < 1e-3:
            continue  # theory difference too small to state a sign
        sign = 1.0 if tdiff > 0 else -1.0
        cmp_, m_, se_ = _paired_positive(
            f"c=1/4 gamma={g:.3g}: sign of E_att - E_ridge as theory ({'+' if sign > 0 else '-'})", tdiff, sign * d4[:, i]
        )
        cmp_.measured = sign * m_
        cmp_.tolerance = f"(theory's sign) x paired mean difference > 3 SE ({3 * se_:.3g}) over {d4.shape[0]} draws"
        comps.append(cmp_)
    data["c0.25"] = dict(
        gammas=gammas, theory_att=th_a4, theory_rr=th_r4, diff_mean=d4.mean(0), diff_se=d4.std(0, ddof=1) / math.sqrt(d4.shape[0]),
        small_gamma_identity=small_gamma_diag,
    )
    ax[1].semilogx(gammas, th_a4 - th_r4, "k-", label="theory E_att - E_ridge")
    ax[1].errorbar(gammas, d4.mean(0), 3 * data["c0.25"]["diff_se"], fmt="o", label=f"MC paired (label-averaged), n={n4}")
    ax[1].axhline(0, color="grey", lw=0.8)
    ax[1].set(xlabel="gamma", ylabel="E_att - E_ridge", title="random inputs, p/n = 1/4")
    ax[1].legend(fontsize=7)
    path = ctx.save_figure(fig, "attention_vs_ridge")
    sa, sr = slope_data["attention"], slope_data["ridge"]
    notes = (
        f"Random inputs (snr = 0), f = {act} (centred), diagonal removed. Stated regime: p/n > 1, where ridge "
        f"interpolates (E ~ gamma^2) and attention does not (E ~ sqrt(gamma)); for p/n < 1 both tend to 1 - c as "
        f"gamma -> 0 (the null space of Phi has dimension n - p in both models and y is independent of it), so the "
        f"claim is not made there; at p/n = 1/4 the sign of the difference at gamma >= 0.05 is tested against the "
        f"sign the theory gives (attention larger at moderate gamma, smaller at gamma = 1: a scale-dependent "
        f"reversal, since the features' norm sets where gamma stops mattering). Slopes: attention {sa['mc_large'][0]:.3f} +- {sa['mc_large'][1]:.3f} "
        f"(theory local {sa['theory_slope']:.3f}), ridge {sr['mc_large'][0]:.3f} +- {sr['mc_large'][1]:.3f} "
        f"(theory local {sr['theory_slope']:.3f}); per-trial log-log OLS, SE over trials. At p/n = 2 the Monte Carlo "
        "uses the label-averaged estimator gamma^2/n tr Q^2 (exact mean over i.i.d. labels given X); the p/n = 1/4 "
        "sign tests are label-averaged. Not judged (identity, true by construction): at p/n = 1/4, "
        f"gamma = {small_gamma_diag['gamma']:.2g}, sampled balanced labels, E_att - E_ridge = "
        f"{small_gamma_diag['diff_mean']:.3g} +- {small_gamma_diag['diff_se']:.2g} (E_att {small_gamma_diag['att_mean']:.4f}, "
        f"E_ridge {small_gamma_diag['rr_mean']:.4f}; both -> (n-p)/n = {small_gamma_diag['identity_value']:.4f} as gamma -> 0). "
        f"Runtime {time.perf_counter() - t0:.1f} s."
    )
    return Outcome(comparisons=comps, notes=notes, figures=[p for p in [path] if p], data=data)


# ---------------------------------------------------------------------------------------------
# B5: cos (a1 = 0) vs a linear-component activation at equal nu
# ---------------------------------------------------------------------------------------------
@check("B5")
def check_b5(ctx: CheckContext) -> Outcome:
    import sympy as sp

    import theory
    from theory.symbols import x as xs

    cfg = _cfg(ctx, "B5")
    t0 = time.perf_counter()
    m_cos = theory.hermite_moments(theory.activation("cos", centered=True))
    m_tanh = theory.hermite_moments(theory.activation("tanh", centered=True))
    scale = math.sqrt(m_cos.nu / m_tanh.nu)
    lin = sp.Float(scale) * sp.tanh(xs)
    m_lin = theory.hermite_moments(lin)
    comps: list[Comparison] = []
    data: dict[str, Any] = dict(
        cos=dict(a1=m_cos.a1, nu=m_cos.nu), scaled_tanh=dict(scale=scale, a1=m_lin.a1, nu=m_lin.nu)
    )
    # equal nu holds by construction (the scale is chosen from the two nu's): recorded in data/notes, not judged
    data["equal_nu_rel_diff"] = abs(m_lin.nu - m_cos.nu) / m_cos.nu
    configs = [(2.0, 0.0), (2.0, 4.0), (0.5, 4.0)]
    n = cfg["n"]
    plt = pyplot()
    fig, axes = plt.subplots(1, len(configs), figsize=(5 * len(configs), 4))
    with ctx.progress("cos vs scaled tanh", total=len(configs)) as bar:
        for k, (cval, snr) in enumerate(configs):
            seed = ctx.seed_for("B5", cval, snr, n)
            la = snr == 0.0  # null model: exact label average (see B2)
            tc = _mc_cached(ctx, "attention", n, _p_of(n, cval), snr, cfg["gammas"], cfg["trials"], seed, activation="cos",
                            label_average=la)[2]
            tl = _mc_cached(ctx, "attention", n, _p_of(n, cval), snr, cfg["gammas"], cfg["trials"], seed, activation=lin,
                            label_average=la)[2]
            pred_txt: Any = "E_cos > E_lin"
            th = None
            if snr == 0.0:
                th = (_attention_theory(cfg["gammas"], cval, "cos"), _attention_theory(cfg["gammas"], cval, lin))
            for i, g in enumerate(cfg["gammas"]):
                pred = float(th[0][i] - th[1][i]) if th is not None else pred_txt
                comps.append(
                    _paired_positive(f"p/n={cval} snr={snr} gamma={g:.2g}: E_cos - E_scaled_tanh > 0", pred, tc[:, i] - tl[:, i])[0]
                )
            data[f"c{cval}_snr{snr}"] = dict(
                gammas=cfg["gammas"], cos=tc.mean(0), cos_se=tc.std(0, ddof=1) / math.sqrt(tc.shape[0]),
                lin=tl.mean(0), lin_se=tl.std(0, ddof=1) / math.sqrt(tl.shape[0]),
                theory_cos=None if th is None else th[0], theory_lin=None if th is None else th[1],
            )
            ax = axes[k]
            dd = data[f"c{cval}_snr{snr}"]
            ax.errorbar(cfg["gammas"], dd["cos"], 3 * dd["cos_se"], fmt="o-", label="cos (a1 = 0)")
            ax.errorbar(cfg["gammas"], dd["lin"], 3 * dd["lin_se"], fmt="s-", label=f"{scale:.3f} tanh (a1 = {m_lin.a1:.3f})")
            if th is not None:
                ax.plot(cfg["gammas"], th[0], "C0:", label="cos theory")
                ax.plot(cfg["gammas"], th[1], "C1:", label="scaled tanh theory")
            ax.set(xscale="log", yscale="log", xlabel="gamma", ylabel="E", title=f"p/n={cval}, ||mu||^2={snr}, n={n}")
            ax.legend(fontsize=7)
            bar.advance()
    fig.suptitle(f"B5: equal nu = {m_cos.nu:.4f}; only the linear Hermite component differs")
    path = ctx.save_figure(fig, "cos_vs_linear")
    notes = (
        f"cos centred (a1 = {m_cos.a1:.2g}, nu = {m_cos.nu:.4f}) vs {scale:.4f} * tanh (a1 = {m_lin.a1:.4f}, same nu "
        f"by construction of the scale; quadrature relative difference {data['equal_nu_rel_diff']:.2g}, not judged). "
        "Paired draws (snr = 0: label-averaged estimator). With signal (snr = 4) cos cannot use the label direction (a1 = 0): its error stays near the "
        "no-signal value, while the linear component lets the scaled tanh use it. With random inputs (snr = 0) the gap "
        "exists only for p/n > 1 and small gamma (for p/n < 1 both tend to 1 - c). "
        f"Runtime {time.perf_counter() - t0:.1f} s."
    )
    return Outcome(comparisons=comps, notes=notes, figures=[p for p in [path] if p], data=data)


# ---------------------------------------------------------------------------------------------
# B6: kernel eigenvalue distribution vs the free-convolution law
# ---------------------------------------------------------------------------------------------
def _theory_cdf(c: float, a1: float, nu: float, lo: float, hi: float, m: int = 4001) -> tuple[np.ndarray, np.ndarray, float]:
    import theory
    from scipy.integrate import cumulative_trapezoid

    x = np.linspace(lo, hi, m)
    dens = np.asarray(theory.kernel_density(x, c, a1, nu), dtype=float)
    cdf = cumulative_trapezoid(dens, x, initial=0.0)
    return x, cdf, float(cdf[-1])


def _ks(ev: np.ndarray, x: np.ndarray, cdf: np.ndarray) -> float:
    ev = np.sort(ev)
    F = np.interp(ev, x, cdf)
    k = np.arange(1, ev.size + 1) / ev.size
    return float(max(np.max(np.abs(k - F)), np.max(np.abs(k - 1.0 / ev.size - F))))


def _map_threads(func: Any, items: Any, n_jobs: int) -> list:
    """``[func(x) for x in items]`` in ``n_jobs`` threads (torch single-threaded inside); ``items`` is consumed
    in order (a generator drawing from one random stream keeps its order), at most ``2 n_jobs`` ahead."""
    if n_jobs <= 1:
        return [func(x) for x in items]
    from joblib import Parallel, delayed

    with torch_threads(1):
        return Parallel(n_jobs=int(n_jobs), prefer="threads", pre_dispatch="2*n_jobs")(delayed(func)(x) for x in items)


def _kernel_spectra(seed: int, n: int, p: int, trials: int, act: str, n_jobs: int) -> np.ndarray:
    """Eigenvalues ``(trials, n)`` of ``trials`` null kernels: the draws come in order from one stream, the
    eigendecompositions run in ``n_jobs`` threads (single-threaded torch each): results do not depend on ``n_jobs``."""
    rng = np.random.default_rng(seed)
    draws = (sample_signal_plus_noise(n, p, 0.0, rng)[0] for _ in range(trials))
    return np.stack(_map_threads(lambda X: kernel_eigenvalues(X, act, "removed"), draws, n_jobs))


@check("B6")
def check_b6(ctx: CheckContext) -> Outcome:
    import theory

    cfg = _cfg(ctx, "B6")
    t0 = time.perf_counter()
    comps: list[Comparison] = []
    data: dict[str, Any] = {}
    configs = [("tanh", 2.0), ("relu", 2.0), ("tanh", 0.5)]
    n = cfg["n"]
    controls: list[str] = []
    plt = pyplot()
    fig, axes = plt.subplots(1, len(configs), figsize=(5 * len(configs), 4))
    with ctx.progress("kernel spectra", total=len(configs)) as bar:
        for k, (act, cval) in enumerate(configs):
            mom = theory.hermite_moments(theory.activation(act, centered=True))
            evs = {}
            for nn, tr in ((n, cfg["trials"][0]), (2 * n, cfg["trials"][1])):
                sd = ctx.seed_for("B6", act, cval, nn)

                def eig_cell(sd=sd, nn=nn, tr=tr, act=act, cval=cval) -> dict[str, np.ndarray]:
                    return {"eigenvalues": _kernel_spectra(sd, nn, _p_of(nn, cval), tr, act, ctx.n_jobs)}

                ev = ctx.cached("kernel_eigenvalues", dict(act=act, c=cval, n=nn, p=_p_of(nn, cval), trials=tr, seed=sd),
                                eig_cell, version=mc_version(_kernel_spectra))["eigenvalues"]
                evs[nn] = list(ev)
            allev = np.concatenate([np.concatenate(v) for v in evs.values()])
            lo, hi = float(allev.min()) - 0.5, float(allev.max()) + 0.5
            x, cdf, mass = _theory_cdf(cval, mom.a1, mom.nu, lo, hi)
            ks = {nn: np.array([_ks(e, x, cdf) for e in v]) for nn, v in evs.items()}
            m1, m2 = ks[n].mean(), ks[2 * n].mean()
            s1 = ks[n].std(ddof=1) / math.sqrt(ks[n].size)
            s2 = ks[2 * n].std(ddof=1) / math.sqrt(ks[2 * n].size)
            ratio = m2 / m1
            se_ratio = ratio * math.sqrt((s1 / m1) ** 2 + (s2 / m2) ** 2)
            comps.append(
                Comparison.bound(
                    f"{act} p/n={cval}: KS(2n)/KS(n), n={n} (KS {m1:.3g} -> {m2:.3g})", 0.5, float(ratio),
                    float(se_ratio), float(ratio - 2**-0.5),
                    rule=(
                        "ratio <= 2^-1/2 = 0.707 (KS must decay at least like n^-1/2; O(1/n) predicts 0.5; "
                        "a wrong law gives ratio -> 1; delta-method SE)"
                    ),
                )
            )
            comps.append(
                Comparison(
                    name=f"{act} p/n={cval}: mass of theory.kernel_density on [{lo:.2f}, {hi:.2f}]",
                    predicted=1.0,
                    measured=float(mass),
                    uncertainty=None,
                    tolerance=(
                        "|mass - 1| < 0.01 (quadrature mass check: the KS distances above use this trapezoid CDF, "
                        "so a density missing > 1% of its mass would bias every KS value by about that much)"
                    ),
                    passed=bool(abs(mass - 1) < 0.01),
                )
            )
            # negative control (power of the rule): the same eigenvalues against the law with nu x 1.03
            xw, cdfw, _ = _theory_cdf(cval, mom.a1, 1.03 * mom.nu, lo, hi)
            ratio_wrong = float(np.mean([_ks(e, xw, cdfw) for e in evs[2 * n]]) / np.mean([_ks(e, xw, cdfw) for e in evs[n]]))
            controls.append(f"{act} p/n={cval}: {ratio_wrong:.2f}")
            data[f"{act}_c{cval}"] = dict(
                ks_n=ks[n], ks_2n=ks[2 * n], mass=mass, a1=mom.a1, nu=mom.nu, ratio_control_nu_x1_03=ratio_wrong
            )
            ax = axes[k]
            ev2 = np.concatenate(evs[2 * n])
            ax.hist(ev2, bins=80, density=True, alpha=0.5, label=f"eigenvalues, n={2 * n}")
            xx = np.linspace(lo, hi, 800)
            ax.plot(xx, theory.kernel_density(xx, cval, mom.a1, mom.nu), "k-", label="kernel_density")
            ax.set(xlabel="eigenvalue", title=f"{act}, p/n={cval}: KS {m1:.3f} (n) -> {m2:.3f} (2n)")
            ax.legend(fontsize=7)
            bar.advance()
    path = ctx.save_figure(fig, "kernel_spectrum")
    notes = (
        "K = f(X^T X / sqrt p) / sqrt p, diagonal removed, X standard Gaussian; per-trial Kolmogorov distance between "
        "the eigenvalue ECDF and the CDF of theory.kernel_density (trapezoid integral, its mass reported). "
        "Negative control (not a comparison): the same eigenvalues against the law with nu multiplied by 1.03 give "
        f"KS ratios {', '.join(controls)} (a wrong law does not shrink, so the rule has power at this size). "
        f"Runtime {time.perf_counter() - t0:.1f} s."
    )
    return Outcome(comparisons=comps, notes=notes, figures=[p for p in [path] if p], data=data)
